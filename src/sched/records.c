/* records.c: the predicted stage cost as issue 11 asks for it. Per-unit
 * latencies come from the database's per-operator profile records at each
 * thread count (written by `opbench profile`, or by the runtime's own
 * per-step profile through ob_sched_record_runtime), the FLOPs model only
 * for nodes without a record; co-run slowdown factors are measured once per
 * pair of unit kinds on disjoint cores by the stage executor and kept in a
 * small text file; and the best few schedules the predictions give are
 * measured end to end, the fastest kept (ob_sched_pick_measured). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/db.h"
#include "opbench/kernel.h"
#include "opbench/target.h"
#include "opbench/tune.h"
#include "sched/sched_impl.h"

/* "threads=k;cores=0,1,...,k-1": the resources of a run on the first k cores,
 * written as the runtime and the tuner write them. */
static void resources_text(int k, char *buf, size_t cap) {
  ob_measure_opts mo = ob_measure_opts_default();
  mo.nthreads = k;
  ob_tune_resources(&mo, buf, cap);
}

/* ---- latencies from the database's records ------------------------------------------------------ */
static bool node_recorded(void *user, const ob_sched_node_desc *n, int threads, double *out) {
  ob_sched_db_model *m = user;
  if (!n->has_workload) return false;
  ob_ctx *ctx = NULL;
  ob_task *task = NULL;
  bool ok = false;
  if (ob_ctx_new(&ctx) != OB_OK) return false;
  if (ob_task_new(ctx, &n->wl, NULL, m->target, &task) == OB_OK) {
    char key[512], res[600];
    ob_workload_key(&n->wl, key, sizeof key);
    resources_text(threads, res, sizeof res);
    ob_config cfg = ob_task_default_config(task);
    ob_db_profile_key k = {.host = m->host, .workload = key, .target = ob_target_str(m->target),
                           .tmpl = ob_task_template(task), .config_index = cfg.index, .resources = res,
                           .corun_workload = "", .corun_mode = "", .pressure_mib = 0};
    bool found = false;
    double med = NAN;
    ok = ob_db_get_profile(m->db, &k, &found, &med) == OB_OK && found && isfinite(med) && med > 0;
    if (ok) *out = med;
  }
  ob_task_free(task);
  ob_ctx_free(ctx);
  return ok;
}

ob_status ob_sched_db_latency(void *user, const ob_sched_op_desc *op, int threads, double *seconds) {
  ob_sched_db_model *m = user;
  if (threads < 1 || !m->db || !m->host || !m->target) return OB_ERR_INVALID_ARG;
  return ob_sched_sum_nodes(op, threads, node_recorded, m, &m->fallback, &m->recorded, &m->fallbacks,
                            seconds);
}

ob_status ob_sched_record_runtime(ob_ctx *ctx, ob_rt *rt, int threads, ob_db *db, const char *host,
                                  const ob_target *target, int runs, bool replace, int64_t *stored) {
  if (stored) *stored = 0;
  int n = ob_rt_step_count(rt);
  double *step_s = malloc(sizeof(double) * (size_t)(n + 1));
  if (!step_s) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  ob_status st = ob_rt_profile(rt, runs, step_s, NULL);
  char res[600], cores[512];
  resources_text(threads, res, sizeof res);
  snprintf(cores, sizeof cores, "%s", strstr(res, "cores=") + 6);
  for (int i = 0; i < n && !st; i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    if (si.kind != OB_RT_STEP_KERNEL || !si.workload[0] || !(step_s[i] > 0)) continue;
    ob_db_profile p;
    memset(&p, 0, sizeof p);
    p.key = (ob_db_profile_key){.host = host, .workload = si.workload, .target = ob_target_str(target),
                                .tmpl = si.tmpl, .config_index = si.config_index, .resources = res,
                                .corun_workload = "", .corun_mode = "", .pressure_mib = 0};
    p.nthreads = threads;
    p.cores = cores;
    p.sweep = "runtime";
    p.timing.median_s = p.timing.mean_s = step_s[i];
    p.timing.repeat = runs;
    p.timing.min_repeat_ms = NAN; /* not the kernel protocol: whole-model runs */
    p.flops = si.flops > 0 ? si.flops : NAN;
    p.bytes = p.gflops = p.intensity = p.peak_gflops = p.peak_pct = p.bandwidth_gbps = NAN;
    p.alone_s = p.slowdown = p.corun_partner_s = p.pressure_gbps = NAN;
    for (int c = 0; c < OB_COUNTER_COUNT; c++) p.counters[c] = NAN;
    p.counters_note = "not counted: the runtime's per-step profile";
    bool put = false;
    st = ob_db_put_profile(db, &p, replace ? OB_DB_REPLACE : 0, &put);
    if (!st && put && stored) (*stored)++;
  }
  free(step_s);
  if (st) ob_fail_prefix(ctx, "recording the runtime's per-operator profile");
  return st;
}

/* ---- co-run factors -------------------------------------------------------------------------------- */
static int kind_of(const char *name) {
  for (int k = 0; k < OB_SCHED_KIND_COUNT; k++)
    if (!strcmp(ob_sched_kind_name((ob_sched_kind)k), name)) return k;
  return -1;
}

ob_status ob_sched_corun_read(ob_ctx *ctx, const char *path, const char *host, ob_sched_corun_table *t, bool *found) {
  memset(t, 0, sizeof *t);
  *found = false;
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT) return OB_OK;
    return ob_fail(ctx, OB_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  }
  char line[256], fh[64] = "";
  int ln = 0;
  ob_status st = OB_OK;
  while (!st && fgets(line, sizeof line, f)) {
    ln++;
    char a[32], b[32];
    double v;
    if (ln == 1) {
      if (strncmp(line, "opbench-corun 1", 15) != 0)
        st = ob_fail(ctx, OB_ERR_PARSE, "%s:1: not an opbench co-run factor file (expected 'opbench-corun 1')", path);
    } else if (ln == 2) {
      if (sscanf(line, "host %63s", fh) != 1)
        st = ob_fail(ctx, OB_ERR_PARSE, "%s:2: expected 'host FINGERPRINT'", path);
    } else if (line[0] != '\n' && line[0] != '#') {
      int ka, kb;
      if (sscanf(line, "%31s %31s %lf", a, b, &v) != 3 || (ka = kind_of(a)) < 0 || (kb = kind_of(b)) < 0 ||
          !(v > 0) || !isfinite(v)) {
        st = ob_fail(ctx, OB_ERR_PARSE, "%s:%d: expected 'KIND KIND FACTOR' with known kinds and a positive factor",
                     path, ln);
      } else {
        t->f[ka][kb] = v;
        t->f[kb][ka] = v;
      }
    }
  }
  fclose(f);
  if (!st && ln < 2) st = ob_fail(ctx, OB_ERR_PARSE, "%s: truncated co-run factor file", path);
  if (st) {
    memset(t, 0, sizeof *t);
    return st;
  }
  if (strcmp(fh, host) != 0) { /* another machine's factors: none for this one */
    memset(t, 0, sizeof *t);
    return OB_OK;
  }
  *found = true;
  return OB_OK;
}

ob_status ob_sched_corun_write(ob_ctx *ctx, const char *path, const char *host, const ob_sched_corun_table *t) {
  ob_str s = {0};
  ob_str_appendf(&s, "opbench-corun 1\nhost %s\n# slowdown of a unit of the first kind while one of the second runs "
                 "on other cores (stage executor, median)\n", host);
  for (int a = 0; a < OB_SCHED_KIND_COUNT; a++)
    for (int b = a; b < OB_SCHED_KIND_COUNT; b++)
      if (t->f[a][b] > 0)
        ob_str_appendf(&s, "%s %s %.6g\n", ob_sched_kind_name((ob_sched_kind)a), ob_sched_kind_name((ob_sched_kind)b),
                       t->f[a][b]);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  ob_status st = OB_OK;
  if (!f || fwrite(s.data, 1, s.len, f) != s.len) st = ob_fail(ctx, OB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  if (f && fclose(f) != 0 && !st) st = ob_fail(ctx, OB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  if (!st && rename(tmp, path) != 0) st = ob_fail(ctx, OB_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  if (st) remove(tmp);
  ob_str_free(&s);
  return st;
}

/* The pair of units of kinds a and b that can share a stage (neither
 * reaches the other) whose smaller FLOPs are the largest: a small
 * operator's time is mostly the stage's own overhead, which the factor
 * would then measure instead. reach: n x n, reach[i*n+j] when i is an
 * ancestor of j. false when the model has no such pair. */
static bool representatives(const ob_sched_units *u, const char *reach, int ka, int kb, int *ua, int *ub) {
  int n = ob_sched_units_count(u);
  double best = -1;
  for (int i = 0; i < n; i++) {
    if ((int)ob_sched_unit_op(u, i)->kind != ka) continue;
    for (int j = 0; j < n; j++) {
      if (j == i || (int)ob_sched_unit_op(u, j)->kind != kb || reach[(size_t)i * n + j] || reach[(size_t)j * n + i])
        continue;
      double m = fmin(ob_sched_unit_op(u, i)->flops, ob_sched_unit_op(u, j)->flops);
      if (m > best) {
        best = m;
        *ua = i;
        *ub = j;
      }
    }
  }
  return best >= 0;
}

ob_status ob_sched_corun_measure(ob_ctx *ctx, const ob_sched_units *u, ob_rt *rt, const ob_timing_opts *timing,
                                 ob_sched_corun_table *t, int *measured) {
  *measured = 0;
  int n = ob_sched_units_count(u);
  char *reach = calloc((size_t)n * (size_t)n + 1, 1);
  if (!reach) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  for (int j = 0; j < n; j++) { /* preds come first: their rows are complete */
    const int *p;
    int np = ob_sched_unit_preds(u, j, &p);
    for (int k = 0; k < np; k++) {
      reach[(size_t)p[k] * n + j] = 1;
      for (int i = 0; i < n; i++)
        if (reach[(size_t)i * n + p[k]]) reach[(size_t)i * n + j] = 1;
    }
  }
  ob_stage_cost mc = {0};
  ob_status st = ob_stage_cost_measured(ctx, u, rt, timing, &mc);
  for (int a = 0; a < OB_SCHED_KIND_COUNT && !st; a++)
    for (int b = a; b < OB_SCHED_KIND_COUNT && !st; b++) {
      if (t->f[a][b] > 0) continue;
      int ua = -1, ub = -1;
      if (!representatives(u, reach, a, b, &ua, &ub)) continue; /* no such pair in the model */
      const ob_sched_op_desc *oa = ob_sched_unit_op(u, ua), *ob = ob_sched_unit_op(u, ub);
      ob_sched_group_desc ga = {.nops = 1, .ops = &oa, .cores = 1, .seconds = -1};
      ob_sched_group_desc gb = {.nops = 1, .ops = &ob, .cores = 1, .seconds = -1};
      ob_sched_group_desc both[2] = {ga, gb};
      ob_sched_stage_desc da = {.kind = OB_SCHED_STAGE_PARALLEL, .ngroups = 1, .groups = &ga, .machine_cores = 2};
      ob_sched_stage_desc db = {.kind = OB_SCHED_STAGE_PARALLEL, .ngroups = 1, .groups = &gb, .machine_cores = 2};
      ob_sched_stage_desc dab = {.kind = OB_SCHED_STAGE_PARALLEL, .ngroups = 2, .groups = both, .machine_cores = 2};
      double ta, tb, tab;
      if ((st = mc.vt->cost(mc.self, &da, &ta)) || (st = mc.vt->cost(mc.self, &db, &tb)) ||
          (st = mc.vt->cost(mc.self, &dab, &tab)))
        break;
      double f = tab / fmax(ta, tb);
      t->f[a][b] = t->f[b][a] = f > 0 && isfinite(f) ? f : 1;
      (*measured)++;
    }
  ob_stage_cost_free(&mc);
  free(reach);
  if (st) ob_fail_prefix(ctx, "measuring co-run factors");
  return st;
}

/* ---- measuring the best few -------------------------------------------------------------------------- */
ob_sched_pick_opts ob_sched_pick_opts_default(void) {
  return (ob_sched_pick_opts){.rounds = 5, .max_s = 0, .nprefer = 0, .margin = 0, .drop = 0};
}

/* The sample of b nearest in time to t (the earlier of two as near). */
static int nearest(int nb, const double *b_at, double t) {
  int k = 0;
  for (int j = 1; j < nb; j++)
    if (fabs(b_at[j] - t) < fabs(b_at[k] - t)) k = j;
  return k;
}

/* The median over a's samples of each over b's nearest in time (wins: how
 * many were below it); NAN without samples or memory. */
static double one_way(int na, const double *a_s, const double *a_at, int nb, const double *b_s, const double *b_at,
                      int *wins) {
  if (wins) *wins = 0;
  if (na < 1 || nb < 1) return NAN;
  double *r = malloc(sizeof(double) * (size_t)na);
  if (!r) return NAN;
  int w = 0;
  for (int i = 0; i < na; i++) {
    int k = nearest(nb, b_at, a_at[i]);
    r[i] = a_s[i] / b_s[k];
    w += a_s[i] < b_s[k];
  }
  double m;
  ob_stats(r, na, &m, NULL, NULL);
  free(r);
  if (wins) *wins = w;
  return m;
}

double ob_sched_paired_ratio(int na, const double *a_s, const double *a_at, int nb, const double *b_s,
                             const double *b_at, int *wins) {
  /* both ways, a's samples over b's neighbours and b's over a's, so that
   * every sample of either counts once and the ratio of b to a is the
   * inverse of a's to b (one way, nasnet-a's one-run samples gave 1.059
   * and 1/0.990 for the same two schedules) */
  double ab = one_way(na, a_s, a_at, nb, b_s, b_at, wins), ba = one_way(nb, b_s, b_at, na, a_s, a_at, NULL);
  return sqrt(ab / ba);
}

/* The chance that a fair coin gives at least w heads in n throws: with
 * few samples two thirds are won by chance too often (2 of 3: 1 in 2), so a
 * challenger must also win more than a coin would 1 time in 5 (3 of 3, 4 of
 * 4, 4 of 5; from 15 samples on, two thirds is the stricter). */
static double coin_tail(int w, int n) {
  double p = 0, c = 1; /* c: n choose k */
  for (int k = 0; k <= n; k++) {
    if (k >= w) p += c;
    c = c * (n - k) / (k + 1);
  }
  return p / pow(2, n);
}

static double median_of(const double *x, int n) {
  double m;
  ob_stats(x, n, &m, NULL, NULL);
  return m;
}

ob_status ob_sched_pick_measured(ob_ctx *ctx, int n, ob_schedule *const *cands, const ob_sched_pick_opts *o,
                                 ob_sched_measure_fn fn, void *user, double *seconds, int *best, int *rounds_done) {
  *best = -1;
  if (n < 1 || !fn) return ob_fail(ctx, OB_ERR_INVALID_ARG, "no candidate schedules to measure");
  ob_sched_pick_opts po = o ? *o : ob_sched_pick_opts_default();
  if (po.nprefer < 0 || po.nprefer > OB_SCHED_PICK_MAX_PREFER || !(po.margin >= 0 && po.margin < 1) || !(po.drop >= 0))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "picking: %d incumbents, margin %g, drop %g", po.nprefer, po.margin, po.drop);
  for (int k = 0; k < po.nprefer; k++)
    if (po.prefer[k] < 0 || po.prefer[k] >= n)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "picking: incumbent %d of %d candidates", po.prefer[k] + 1, n);
  int rounds = po.rounds < 1 ? 1 : po.rounds;
  size_t stride = (size_t)rounds;
  /* a candidate equal to an earlier one is the same program: it shares
   * that one's samples instead of drawing its own noise. Each candidate's
   * samples in order (cnt of them), each with its midpoint in time. */
  int *same = malloc(sizeof(int) * (size_t)n), *cnt = calloc((size_t)n, sizeof(int));
  bool *out = calloc((size_t)n, sizeof(bool)); /* dropped */
  double *smp = malloc(sizeof(double) * (size_t)n * stride), *at = malloc(sizeof(double) * (size_t)n * stride);
  double *med = malloc(sizeof(double) * (size_t)n);
  ob_status st = OB_OK;
  if (!same || !cnt || !out || !smp || !at || !med) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    same[i] = i;
    for (int j = 0; j < i && same[i] == i; j++)
      if (same[j] == j && ob_schedule_same(cands[i], cands[j])) same[i] = j;
  }
  /* rounds, each candidate once in turn, the order turned by one each
   * round: a slow episode of the machine lands on one round of every
   * candidate, not on all the repeats of one */
  double t0 = ob_now_s(), last = 0;
  int done_r = 0;
  for (int r = 0; r < rounds && !st; r++) {
    /* within the time given: another round only if one more like the
     * last fits */
    if (r > 0 && po.max_s > 0 && ob_now_s() - t0 + last > po.max_s) break;
    double tr = ob_now_s();
    for (int k = 0; k < n && !st; k++) {
      int i = (k + r) % n;
      if (same[i] != i || out[i]) continue;
      double v = NAN, ts = ob_now_s();
      if ((st = fn(user, i, cands[i], &v))) {
        ob_fail_prefix(ctx, "measuring candidate %d (%s)", i + 1, ob_schedule_scheduler(cands[i]));
      } else if (!(v >= 0) || !isfinite(v)) {
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "candidate %d (%s) measured %g s", i + 1, ob_schedule_scheduler(cands[i]), v);
      }
      smp[(size_t)i * stride + (size_t)cnt[i]] = v;
      at[(size_t)i * stride + (size_t)cnt[i]++] = (ts + ob_now_s()) / 2;
    }
    last = ob_now_s() - tr;
    done_r = r + 1;
    if (st || !(po.drop > 0) || done_r < 2 || done_r == rounds) continue;
    /* the clearly slower ones measured no more: every sample so far
     * slower than the leader's nearest by more than drop */
    for (int i = 0; i < n; i++)
      if (same[i] == i) med[i] = median_of(smp + (size_t)i * stride, cnt[i]);
    int lead = -1;
    for (int k = 0; k < po.nprefer; k++)
      if (lead < 0 || med[same[po.prefer[k]]] < med[lead]) lead = same[po.prefer[k]];
    for (int i = 0; lead < 0 && i < n; i++)
      if (same[i] == i && !out[i] && (lead < 0 || med[i] < med[lead])) lead = i;
    for (int i = 0; i < n; i++) {
      if (same[i] != i || out[i] || i == lead) continue;
      bool slower = true;
      for (int c = 0; c < cnt[i] && slower; c++) {
        int k = nearest(cnt[lead], at + (size_t)lead * stride, at[(size_t)i * stride + (size_t)c]);
        slower = smp[(size_t)i * stride + (size_t)c] > (1 + po.drop) * smp[(size_t)lead * stride + (size_t)k];
      }
      out[i] = slower;
    }
  }
  if (st) goto done;
  if (rounds_done) *rounds_done = done_r;
  for (int i = 0; i < n; i++) {
    med[i] = median_of(smp + (size_t)same[i] * stride, cnt[same[i]]);
    if (seconds) seconds[i] = med[i];
  }
  /* the incumbent: the fastest of those named, by median, then against
   * each other one by pairs of neighbours in time (when the two are near
   * equal, as sequential and greedy are at times on nasnet-a, their
   * medians taken apart can order them either way) */
  int inc = -1;
  for (int k = 0; k < po.nprefer; k++)
    if (inc < 0 || med[po.prefer[k]] < med[inc]) inc = po.prefer[k];
  for (int k = 0; inc >= 0 && k < po.nprefer; k++) {
    int a = same[po.prefer[k]], b = same[inc];
    if (a != b && ob_sched_paired_ratio(cnt[a], smp + (size_t)a * stride, at + (size_t)a * stride, cnt[b],
                                        smp + (size_t)b * stride, at + (size_t)b * stride, NULL) < 1)
      inc = po.prefer[k];
  }
  if (inc < 0) { /* no incumbent: the fastest median */
    double bv = INFINITY;
    for (int i = 0; i < n; i++)
      if (med[i] < bv) {
        bv = med[i];
        *best = i;
      }
  } else {
    /* against an incumbent, each candidate is judged by its samples over
     * the incumbent's nearest in time: the host drifts between modes
     * lasting about a second (squeezenet's samples 0.92 or 1.13 ms, every
     * schedule alike), so medians taken apart can differ by a mode's
     * width when one schedule's samples happened to fall in the fast mode
     * more often; a pair of neighbours almost always shares the mode.
     * A challenger replaces the incumbent only when clearly faster: its
     * paired ratio below 1 - margin and faster than its neighbour in at
     * least two thirds of its samples (a pick among near-equals is won by
     * noise, and the noise is gone when the winner is measured again); of
     * those, the lowest paired ratio (the lowest of all may be one whose
     * wins fell short while another's did not: randwire's plans, about
     * 5 % faster than greedy, win 9 to 12 of 15 pairs) */
    int a = same[inc];
    double bv = INFINITY;
    *best = inc;
    for (int i = 0; i < n; i++) {
      int b = same[i];
      if (b == a) continue;
      int w = 0;
      double q = ob_sched_paired_ratio(cnt[b], smp + (size_t)b * stride, at + (size_t)b * stride, cnt[a],
                                       smp + (size_t)a * stride, at + (size_t)a * stride, &w);
      if (q < bv && q < 1 - po.margin && 3 * w >= 2 * cnt[b] && coin_tail(w, cnt[b]) <= 0.2) {
        bv = q;
        *best = i;
      }
    }
  }
done:
  free(same);
  free(cnt);
  free(out);
  free(smp);
  free(at);
  free(med);
  return st;
}
