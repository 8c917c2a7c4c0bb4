/* predict.c: the predictors of the predict module on data this benchmark
 * measures itself, on this machine, in one run:
 *   1. measures the operator tasks of resnet-18, mobilenet-v2 and
 *      squeezenet-1.1 (training models) and resnet-50 (held out) at a small
 *      input size: a few configs per task (the default and random ones) at
 *      1 and 2 threads, into a fresh database;
 *   2. trains the latency predictor on the training models' records and
 *      evaluates it on resnet-50's (split by model) and by 5 workload folds;
 *   3. measures co-run slowdowns of pairs of workloads (stream: one core
 *      each; full: both on both cores) and evaluates the interference model
 *      on held-out pairs;
 *   4. plays the placement game on this machine for a few pairs: the
 *      predicted equilibrium, then every profile MEASURED (each operator
 *      timed while the other runs beside it; makespan = the slower), so the
 *      equilibrium's measured makespan is compared with the measured optimum
 *      and with "all threads to everyone"; and on SIMULATED 8/16/64-core
 *      machines.
 * Prints the table and, last, the figures. Timings are noisy on a shared
 * machine: every figure is from this run only.
 *   build/bench_predict [--tasks N] [--configs N] [--input-size N] [--db FILE] [--keep] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/measure.h"
#include "opbench/predict.h"
#include "opbench/runtime.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static ob_host host;
static ob_target *target;

#define MAX_WL 64
#define NPL 8 /* workloads of the co-run pairs */
#define CORUN_ROUNDS 5
#define MODEL_ROUNDS 3
#define NSTACK 3 /* further instances of the calibration model in the miss curve's stack */

typedef struct wl_entry {
  ob_workload wl;
  char key[256];
  char model[32];
  ob_task *task;
  ob_config cfg0; /* the default config */
  char *so, *sym; /* its kernel (co-run and game measurements) */
} wl_entry;

static wl_entry wls[MAX_WL];
static int nwl;

/* What the early exits (--measure-round, --measure-only) free: the tasks,
 * the runner, the db, the target and the context. */
static void release(ob_runner *run, ob_db *db) {
  for (int w = 0; w < nwl; w++) ob_task_free(wls[w].task);
  ob_runner_free(run);
  ob_db_close(db);
  ob_target_free(target);
  ob_ctx_free(ctx);
}

static int die(const char *what) {
  fprintf(stderr, "bench_predict: %s: %s\n", what, ob_ctx_errmsg(ctx));
  return 1;
}

/* The tasks of a model whose operators have templates, largest first. */
static int add_model(const char *name, int64_t input_size, int64_t seqlen, int ntasks) {
  ob_model_opts mo = ob_model_opts_default();
  mo.name = name;
  mo.zero_weights = true;
  /* inception-v3's reductions need at least 75x75 (its own floor) */
  mo.input_size = !strcmp(name, "inception-v3") && input_size < 75 ? 75 : input_size;
  mo.seqlen = seqlen;
  ob_graph *g = NULL;
  ob_graph_task *t = NULL;
  int n = 0, added = 0;
  /* the passes as the runtime runs them (layouts planned for the target's
   * vector width): the tasks measured are the kernels the runtime runs, so
   * that the model latency section predicts the very workloads measured */
  if (ob_model_load(ctx, &mo, &g) || ob_graph_optimize(ctx, g, ob_target_get_facts(target)->lanes_f32, NULL) ||
      ob_graph_tasks(ctx, g, &t, &n)) {
    ob_graph_free(g);
    return -1;
  }
  for (int i = 0; i < n && added < ntasks && nwl < MAX_WL; i++) {
    const char *names[8];
    if (ob_op_templates(t[i].wl.op, names, 8) < 1) continue;
    bool dup = false;
    for (int j = 0; j < nwl; j++) dup |= !strcmp(wls[j].key, t[i].key);
    if (dup) continue;
    wl_entry *e = &wls[nwl];
    memset(e, 0, sizeof *e);
    e->wl = t[i].wl;
    snprintf(e->key, sizeof e->key, "%s", t[i].key);
    snprintf(e->model, sizeof e->model, "%s", name);
    if (ob_task_new(ctx, &e->wl, NULL, target, &e->task)) {
      ob_ctx_clear_error(ctx);
      continue;
    }
    e->cfg0 = ob_task_default_config(e->task);
    nwl++;
    added++;
  }
  free(t);
  ob_graph_free(g);
  return added;
}

static void store(ob_db *db, const wl_entry *e, const ob_config *c, const ob_measure_opts *mo,
                  const ob_measure_result *r) {
  char res[128], cores[32];
  ob_tune_resources(mo, res, sizeof res);
  snprintf(cores, sizeof cores, "%s", mo->nthreads == 1 ? "0" : "0,1");
  ob_db_record rec;
  memset(&rec, 0, sizeof rec);
  rec.host = host.fingerprint;
  rec.workload = e->key;
  rec.target = ob_target_str(target);
  rec.resources = res;
  rec.tmpl = ob_task_template(e->task);
  rec.config_index = c->index;
  rec.nthreads = mo->nthreads;
  rec.cores = cores;
  ob_measure_result_to_record(r, &rec);
  if (ob_db_put_measurement(db, &rec, 0, NULL)) ob_ctx_clear_error(ctx);
}

/* ---- co-run measurements ----------------------------------------------------------- */
/* The placement game's slowdown: the interference model's prediction for
 * player i beside j at the profile's threads and shared cores. */
typedef struct game_user {
  ob_predictor *p;
  const ob_db_host_limits *lim;
  double flops[2], bytes[2], alone[2][2]; /* predicted alone at 1 and 2 threads */
} game_user;

static double game_slowdown(void *u, int i, int j, int ki, int kj, int shared) {
  game_user *gu = u;
  float x[OB_INTERF_NFEAT];
  ob_prediction pr;
  ob_interf_features(gu->flops[i], gu->bytes[i], ki, gu->alone[i][ki - 1], gu->flops[j], gu->bytes[j], kj,
                     gu->alone[j][kj - 1], shared > 0, shared, gu->lim, host.fingerprint, x);
  if (ob_predictor_slowdown(gu->p, x, &pr)) {
    ob_ctx_clear_error(ctx);
    return 1;
  }
  return pr.seconds;
}

typedef struct fill_ctx {
  ob_task *task;
  const ob_config *cfg;
} fill_ctx;

static void fill_cb(void *u, void *const *bufs) {
  fill_ctx *f = u;
  if (ob_task_fill_for(f->task, f->cfg, 1, bufs)) { /* out of memory: the check fails it */
  }
}

static ob_status check_cb(void *u, void *const *bufs, char *msg, size_t cap) {
  fill_ctx *f = u;
  return ob_task_check_for(f->task, f->cfg, 1, bufs, msg, cap);
}

typedef struct req_store {
  size_t bytes[16];
  bool in[16];
  int cores[2];
  fill_ctx fc;
} req_store;

static void make_req(wl_entry *e, int first_core, int k, req_store *s, ob_run_request *r) {
  int n = ob_task_num_args(e->task);
  for (int a = 0; a < n; a++) {
    s->bytes[a] = ob_task_arg_bytes(e->task, a);
    s->in[a] = ob_task_arg_is_input(e->task, a);
  }
  for (int c = 0; c < k; c++) s->cores[c] = (first_core + c) % 2;
  s->fc = (fill_ctx){e->task, &e->cfg0};
  ob_timing_opts t = ob_timing_default();
  t.repeat = 5;
  *r = (ob_run_request){.target = target, .so_path = e->so, .symbol = e->sym, .nbufs = n, .buf_bytes = s->bytes,
                        .buf_is_input = s->in, .cores = s->cores, .nthreads = k, .timing = t,
                        .fill = fill_cb, .check = check_cb, .user = &s->fc};
}

/* Median of A (k_a threads from core a0) while B (k_b from b0) runs beside
 * it (b NULL: alone). NAN on failure. */
static double time_beside(ob_runner *run, wl_entry *a, int a0, int ka, wl_entry *b, int b0, int kb) {
  req_store sa, sb;
  ob_run_request ra, rb;
  make_req(a, a0, ka, &sa, &ra);
  if (b) {
    make_req(b, b0, kb, &sb, &rb);
    rb.check = NULL;
    ra.corun = &rb;
  }
  ob_run_result res;
  if (ob_runner_run(run, &ra, &res) || res.error_no) {
    ob_ctx_clear_error(ctx);
    return NAN;
  }
  return res.timing.median_s;
}

/* A (ka threads from core 0) beside B (kb threads from core b0, wrapping
 * on the 2 cores): mode "stream" (no core in common) or "full" (cores in
 * common: both on both, or, for the placement game's mixed profiles, one;
 * the cores say which, and the resources key keeps A at 2 threads beside
 * B at 1 apart from A beside B at 2) */
static void put_corun(ob_db *db, wl_entry *a, wl_entry *b, int ka, int kb, int b0, const char *mode, double alone,
                      double med) {
  ob_db_profile p;
  memset(&p, 0, sizeof p);
  char res[64], bcores[16];
  snprintf(res, sizeof res, "threads=%d;cores=%s%s", ka, ka == 1 ? "0" : "0,1",
           !strcmp(mode, "full") && kb < ka ? ";partner_threads=1" : "");
  if (kb == 1) snprintf(bcores, sizeof bcores, "%d", b0 % 2);
  else snprintf(bcores, sizeof bcores, "0,1");
  p.key = (ob_db_profile_key){.host = host.fingerprint, .workload = a->key, .target = ob_target_str(target),
                              .tmpl = ob_task_template(a->task), .config_index = a->cfg0.index,
                              .resources = res, .corun_workload = b->key, .corun_mode = mode};
  p.nthreads = ka;
  p.cores = ka == 1 ? "0" : "0,1";
  p.corun_cores = bcores;
  p.sweep = "corun";
  p.timing.ncosts = 1;
  p.timing.costs[0] = p.timing.median_s = p.timing.mean_s = med;
  p.timing.number = 1;
  p.timing.repeat = 5;
  p.timing.min_repeat_ms = 1;
  p.alone_s = alone;
  p.slowdown = med / alone;
  p.flops = ob_workload_flops(&a->wl);
  p.bytes = ob_predict_workload_bytes(&a->wl);
  p.gflops = p.intensity = p.peak_gflops = p.peak_pct = p.bandwidth_gbps = NAN;
  p.corun_partner_s = p.pressure_gbps = p.build_s = NAN;
  for (int c = 0; c < OB_COUNTER_COUNT; c++) p.counters[c] = NAN;
  if (ob_db_put_profile(db, &p, OB_DB_REPLACE, NULL)) ob_ctx_clear_error(ctx);
}

static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
}

/* The class a held-out point's error is reported under: the operator, and
 * for a convolution its window and stride ("conv 1x1", "conv 3x3/2",
 * "depthwise 3x3"). */
static void class_of(const ob_predict_sample *s, char *buf, size_t cap) {
  if (!strcmp(s->op, "conv2d") && s->wl) {
    int64_t g = ob_workload_get(s->wl, "groups"), st = ob_workload_get(s->wl, "stride_h");
    snprintf(buf, cap, "%s %lldx%lld%s", g > 1 && g == ob_workload_get(s->wl, "C") ? "depthwise" : "conv",
             (long long)ob_workload_get(s->wl, "R"), (long long)ob_workload_get(s->wl, "S"), st > 1 ? "/2" : "");
  } else {
    snprintf(buf, cap, "%s", s->op);
  }
}

typedef struct diag_row {
  int64_t i;
  double err;
} diag_row;

static int by_abs_err(const void *a, const void *b) {
  double x = fabs(((const diag_row *)a)->err), y = fabs(((const diag_row *)b)->err);
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Where the held-out error comes from: per class and thread count (RMSPE,
 * share within 10 %, and the bias: the geometric mean of predicted over
 * measured), then the `worst` points with their analytical terms. */
static void diagnose(const ob_predict_dataset *d, const uint8_t *test, const double *pred, int worst) {
  char cls[64][32];
  int ncls = 0;
  diag_row *rows = malloc(sizeof *rows * ((size_t)d->n + 1));
  if (!rows) return;
  int64_t nr = 0;
  for (int64_t i = 0; i < d->n; i++) {
    if (!test[i] || isnan(pred[i])) continue;
    rows[nr++] = (diag_row){i, (pred[i] - d->s[i].seconds) / d->s[i].seconds};
    char c[32];
    class_of(&d->s[i], c, sizeof c);
    bool have = false;
    for (int k = 0; k < ncls && !have; k++) have = !strcmp(cls[k], c);
    if (!have && ncls < 64) snprintf(cls[ncls++], sizeof cls[0], "%s", c);
  }
  printf("\nheld-out error by class   threads  points   RMSPE%%   +-10%%   pred/meas (geomean)\n");
  for (int k = 0; k < ncls; k++)
    for (int th = 1; th <= 2; th++) {
      double se = 0, lr = 0;
      int64_t n = 0, in10 = 0;
      for (int64_t r = 0; r < nr; r++) {
        char c[32];
        class_of(&d->s[rows[r].i], c, sizeof c);
        if (strcmp(c, cls[k]) || d->s[rows[r].i].threads != th) continue;
        se += rows[r].err * rows[r].err;
        lr += log1p(rows[r].err);
        in10 += fabs(rows[r].err) <= 0.1;
        n++;
      }
      if (n)
        printf("  %-22s %7d %7lld %8.1f %7.1f %10.3f\n", cls[k], th, (long long)n, 100 * sqrt(se / (double)n),
               100.0 * (double)in10 / (double)n, exp(lr / (double)n));
    }
  qsort(rows, (size_t)nr, sizeof *rows, by_abs_err);
  printf("\nworst held-out points: measured and predicted ms, the analytical base and its tiling terms\n");
  printf("  %-58s %2s %6s %9s %9s %7s %9s %5s %5s %5s %6s %5s\n", "workload", "th", "config", "meas ms", "pred ms",
         "err%", "anal ms", "work", "lanes", "step", "chunks", "imbal");
  for (int64_t r = 0; r < nr && r < worst; r++) {
    const ob_predict_sample *s = &d->s[rows[r].i];
    const float *x = s->x;
    printf("  %-58.58s %2d %6llu %9.4f %9.4f %+7.1f %9.4f %5.2f %5.2f %5.2f %6.0f %5.2f\n", s->workload, s->threads,
           (unsigned long long)s->config_index, s->seconds * 1e3, pred[rows[r].i] * 1e3, 100 * rows[r].err,
           exp2((double)x[35]) * 1e3, (double)x[36], (double)x[37], (double)x[38],
           isfinite(x[39]) ? exp2((double)x[39]) - 1 : NAN, (double)x[40]);
  }
  free(rows);
}

/* ---- labels measured in rounds ---------------------------------------------------------
 * The host slows our cores in phases of 0.2 s to seconds, so one measurement
 * of a point (or every point of a workload, taken one after the other) may
 * fall in a slow phase: re-measured hours apart, only about half the points
 * agreed within 10 %. A round (--measure-round) measures every point of the
 * db again into a db of its own, workloads and thread counts in reverse order
 * on alternate rounds; --rounds gives the bench those dbs, and each point's
 * label becomes the mean of its two fastest rounds, kept only when those two
 * agree within --round-agree (a slow phase lengthens a measurement and never
 * shortens it, so the fastest pair that agrees is the calm time; a point
 * with no such pair is left out). Rounds with a CV above --max-cv count as
 * disturbed and are not used. */
#define MAX_ROUNDS 8

typedef struct round_val {
  char *key; /* workload|template|resources|config */
  int src;   /* 0: --db, r: the r-th --rounds db */
  double s, cv;
} round_val;

typedef struct round_set {
  round_val *v;
  int64_t n, cap;
  int nsrc;
} round_set;

static int by_round_key(const void *a, const void *b) {
  const round_val *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : x->src - y->src;
}

static char *point_key(const char *wl, const char *tmpl, const char *res, uint64_t cfg) {
  size_t n = strlen(wl) + strlen(tmpl) + strlen(res) + 32;
  char *k = malloc(n);
  if (k) snprintf(k, n, "%s|%s|%s|%llu", wl, tmpl, res, (unsigned long long)cfg);
  return k;
}

/* The error-free records of one db as round src. */
static int rounds_add_db(round_set *rs, ob_db *rdb) {
  ob_db_filter f;
  memset(&f, 0, sizeof f);
  f.key.host = host.fingerprint;
  f.ok_only = true;
  ob_db_records *recs = NULL;
  if (ob_db_query(rdb, &f, &recs)) return -1;
  for (int64_t i = 0; i < recs->n; i++) {
    const ob_db_record *r = &recs->rec[i];
    if (r->error_no || r->timing.emulated || !(r->timing.median_s > 0)) continue;
    if (rs->n == rs->cap) {
      rs->cap = rs->cap ? 2 * rs->cap : 4096;
      round_val *nv = realloc(rs->v, sizeof *nv * (size_t)rs->cap);
      if (!nv) {
        ob_db_records_free(recs);
        return -1;
      }
      rs->v = nv;
    }
    char *k = point_key(r->workload, r->tmpl, r->resources, r->config_index);
    if (!k) break;
    rs->v[rs->n++] = (round_val){k, rs->nsrc, r->timing.median_s, r->timing.cv};
  }
  rs->nsrc++;
  ob_db_records_free(recs);
  return 0;
}

static void rounds_free(round_set *rs) {
  for (int64_t i = 0; i < rs->n; i++) free(rs->v[i].key);
  free(rs->v);
}

/* The clean rounds of one point from sources [s0, s1): their seconds, fastest first. */
static int rounds_of(const round_set *rs, const char *key, int s0, int s1, double max_cv, double *out) {
  round_val probe = {(char *)key, -1, 0, 0};
  /* lower bound of key */
  int64_t lo = 0, hi = rs->n;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (by_round_key(&rs->v[mid], &probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  int n = 0;
  for (int64_t i = lo; i < rs->n && !strcmp(rs->v[i].key, key); i++)
    if (rs->v[i].src >= s0 && rs->v[i].src < s1 && (max_cv <= 0 || !(rs->v[i].cv > max_cv)) && n < MAX_ROUNDS + 1)
      out[n++] = rs->v[i].s;
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && out[j] < out[j - 1]; j--) {
      double t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

/* The label of rounds sorted fastest first: the mean of the two fastest when
 * they agree within `agree`, else NAN; agree < 0: the fastest round. */
static double round_label(const double *v, int n, double agree) {
  if (agree < 0) return n ? v[0] : NAN;
  if (n < 2 || v[1] > v[0] * (1 + agree)) return NAN;
  return (v[0] + v[1]) / 2;
}

/* Share of points whose two labels agree within 10 %, and the RMSPE of the
 * second against the first. */
static void agreement(const char *what, const double *a, const double *b, int64_t n) {
  int64_t k = 0, in10 = 0;
  double se = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!(a[i] > 0) || !(b[i] > 0)) continue;
    double e = (b[i] - a[i]) / a[i];
    se += e * e;
    in10 += fabs(e) <= 0.1;
    k++;
  }
  printf("  %-62s %6lld points: within +-10%% %5.1f%%, RMSPE %5.1f%%\n", what, (long long)k,
         k ? 100.0 * (double)in10 / (double)k : NAN, k ? 100 * sqrt(se / (double)k) : NAN);
}

/* --measure-round OUT: every point of the db's bench workloads measured once
 * more into OUT (the same configs, both thread counts), workloads and thread
 * counts in reverse order when `reverse`; with rounds given, only the points
 * they do not yet confirm. Returns the points measured, -1 on failure. */
static int64_t measure_round(ob_db *db, const char *out_path, bool reverse, ob_runner *run, const round_set *rs,
                             double max_cv, double agree, double budget_s, bool models, bool profiles_too,
                             double *took) {
  double t0 = ob_now_s();
  ob_db *out = NULL;
  ob_db_records *recs = NULL;
  ob_db_filter f;
  memset(&f, 0, sizeof f);
  f.key.host = host.fingerprint;
  f.ok_only = true;
  f.order = OB_DB_ORDER_KEY;
  if (ob_db_open(ctx, out_path, 0, &out) || ob_db_query(db, &f, &recs)) return -1;
  int64_t measured = 0;
  for (int k = 0; models && k < nwl && (budget_s <= 0 || ob_now_s() - t0 < budget_s); k++) {
    wl_entry *e = &wls[reverse ? nwl - 1 - k : k];
    if (ob_workload_store(out, &e->wl)) ob_ctx_clear_error(ctx);
    for (int tt = 1; tt <= 2; tt++) {
      int th = reverse ? 3 - tt : tt;
      ob_config cfgs[64];
      int nc = 0;
      const ob_space *sp = ob_task_space(e->task);
      for (int64_t i = 0; i < recs->n && nc < 64; i++) {
        const ob_db_record *r = &recs->rec[i];
        if (r->nthreads != th || strcmp(r->workload, e->key) || strcmp(r->tmpl, ob_task_template(e->task))) continue;
        if (rs && rs->nsrc) {
          char *key = point_key(r->workload, r->tmpl, r->resources, r->config_index);
          double v[MAX_ROUNDS + 1];
          int n = key ? rounds_of(rs, key, 0, rs->nsrc, max_cv, v) : 0;
          free(key);
          if (!isnan(round_label(v, n, agree))) continue; /* confirmed */
        }
        if (ob_space_get(ctx, sp, r->config_index, &cfgs[nc])) {
          ob_ctx_clear_error(ctx);
          continue;
        }
        nc++;
      }
      if (!nc) continue;
      ob_measure_opts mo = ob_measure_opts_default();
      mo.nthreads = th;
      mo.timing.repeat = 5;
      mo.build.jobs = 2;
      ob_measure_result r[64];
      if (ob_measure_configs(ctx, e->task, run, &mo, cfgs, nc, r)) {
        ob_db_records_free(recs);
        ob_db_close(out);
        return -1;
      }
      for (int c = 0; c < nc; c++) store(out, e, &cfgs[c], &mo, &r[c]);
      measured += nc;
    }
  }
  /* the sampled kernel points (profiles without pressure or co-runner), with
   * profiles_too: each task's points at one thread count in one call, stored
   * under the profile's own resources so that the labels find them */
  ob_predict_dataset *pd = NULL;
  ob_predict_data_opts po = {0};
  if (profiles_too && ob_predict_dataset_load(ctx, db, &po, &pd) == OB_OK) {
    for (int64_t i = 0; i < pd->n && (budget_s <= 0 || ob_now_s() - t0 < budget_s);) {
      const ob_predict_sample *s0 = &pd->s[i];
      int64_t j = i;
      ob_task *task = NULL;
      ob_config cfgs[64];
      const ob_predict_sample *pts[64];
      int nc = 0;
      bool ok = s0->from_profile && s0->pressure_mib == 0 && s0->wl &&
                ob_task_new(ctx, s0->wl, s0->tmpl, target, &task) == OB_OK;
      for (; j < pd->n && pd->s[j].wl == s0->wl && !strcmp(pd->s[j].tmpl, s0->tmpl) &&
             pd->s[j].threads == s0->threads && !strcmp(pd->s[j].resources, s0->resources) &&
             pd->s[j].from_profile == s0->from_profile && pd->s[j].pressure_mib == s0->pressure_mib;
           j++) {
        if (!ok || nc == 64) continue;
        if (ob_space_get(ctx, ob_task_space(task), pd->s[j].config_index, &cfgs[nc])) continue;
        pts[nc++] = &pd->s[j];
      }
      ob_ctx_clear_error(ctx);
      if (ok && nc) {
        ob_measure_opts mo = ob_measure_opts_default();
        mo.nthreads = s0->threads;
        mo.timing.repeat = 5;
        mo.build.jobs = 2;
        ob_measure_result r[64];
        if (ob_workload_store(out, s0->wl)) ob_ctx_clear_error(ctx);
        if (ob_measure_configs(ctx, task, run, &mo, cfgs, nc, r) == OB_OK) {
          for (int c = 0; c < nc; c++) {
            ob_db_record rec;
            memset(&rec, 0, sizeof rec);
            rec.host = host.fingerprint;
            rec.workload = pts[c]->workload;
            rec.target = ob_target_str(target);
            rec.resources = pts[c]->resources;
            rec.tmpl = pts[c]->tmpl;
            rec.config_index = cfgs[c].index;
            rec.nthreads = mo.nthreads;
            rec.cores = mo.nthreads == 1 ? "0" : "0,1";
            ob_measure_result_to_record(&r[c], &rec);
            if (ob_db_put_measurement(out, &rec, 0, NULL)) ob_ctx_clear_error(ctx);
          }
          measured += nc;
        }
        ob_ctx_clear_error(ctx);
      }
      ob_task_free(task);
      i = j > i ? j : i + 1;
    }
  }
  ob_ctx_clear_error(ctx);
  ob_predict_dataset_free(pd);
  *took = ob_now_s() - t0;
  ob_db_records_free(recs);
  ob_db_close(out);
  return measured;
}

/* --model-steps: where a model's predicted time parts from its run, by
 * kind of step: each step timed inside runs (ob_rt_profile), predicted, the
 * db's time of its config alone, and the MiB of parameters it reads. */
/* A step's config measured alone at th threads, warm (the db's way) or with
 * its inputs flushed before every call (cold, as its weights come in a run
 * of a model larger than the caches). NAN on failure. */
static double alone_s(ob_runner *run, const ob_graph *g, const ob_rt_step_info *si, int th, bool flush) {
  ob_workload wl;
  ob_task *task = NULL;
  ob_config cfg;
  ob_measure_result r;
  double out = NAN;
  if (ob_graph_node_workload(ctx, g, si->node, &wl) == OB_OK && ob_task_new(ctx, &wl, si->tmpl, target, &task) == OB_OK &&
      ob_space_get(ctx, ob_task_space(task), si->config_index, &cfg) == OB_OK) {
    ob_measure_opts mo = ob_measure_opts_default();
    mo.nthreads = th;
    mo.timing.repeat = 5;
    mo.timing.flush = flush;
    if (ob_measure_configs(ctx, task, run, &mo, &cfg, 1, &r) == OB_OK && !r.error_no) out = r.timing.median_s;
  }
  ob_ctx_clear_error(ctx);
  ob_task_free(task);
  return out;
}

/* --steps-csv: every kernel step of the calibration and the held-out
 * models, profiled in the run (5 runs), beside its db time alone and its
 * predicted time alone (no factor, floor or cold cost): the data to fit
 * and check how a kernel's time alone maps to its time in the graph. */
static void steps_dump(FILE *csv, ob_rt *const *rt, const char *const *names, int th, int rd, ob_predictor *p,
                       const ob_target *tg, const ob_db_host_limits *lim, double me_s[][MODEL_ROUNDS]) {
  ob_predict_overhead ov0;
  memset(&ov0, 0, sizeof ov0);
  ov0.kernel_factor = 1;
  for (int m = 0; m < 4; m++) {
    int ns = ob_rt_step_count(rt[m]);
    double *st = calloc((size_t)ns + 1, sizeof *st), total = 0;
    ob_predict_model_step *ps = calloc((size_t)ns + 1, sizeof *ps);
    ob_predict_model_result r;
    if (!st || !ps || ob_rt_profile(rt[m], 5, st, &total) ||
        ob_predict_model(ctx, p, rt[m], tg, th, lim, host.fingerprint, &ov0, ps, &r)) {
      ob_ctx_clear_error(ctx);
      free(st);
      free(ps);
      continue;
    }
    const ob_graph *g = ob_rt_graph(rt[m]);
    double *alone = calloc((size_t)ns + 1, sizeof *alone);
    if (alone && ob_rt_profile_alone(rt[m], 9, alone)) {
      ob_ctx_clear_error(ctx);
      free(alone);
      alone = NULL;
    }
    for (int i = 0; i < ns; i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt[m], i, &si);
      if (si.kind != OB_RT_STEP_KERNEL && si.kind != OB_RT_STEP_ONEDNN) continue;
      double mib = (double)ob_graph_node_param_bytes(g, si.node) / 1048576.0, fl = si.flops;
      double now = alone ? alone[i] : NAN;
      fprintf(csv, "%d,%d,%s,%d,%s,%.4f,%.0f,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f\n", th, rd, names[m], i, si.op, mib, fl,
              si.db_s > 0 ? si.db_s : NAN, ps[i].predicted ? ps[i].seconds : NAN, st[i],
              m ? me_s[m - 1][rd] : NAN, total, now);
    }
    free(alone);
    free(st);
    free(ps);
  }
  fflush(csv);
}

static void steps_breakdown(ob_rt *rt, ob_predictor *p, const ob_target *tg, int th, const ob_db_host_limits *lim,
                            const ob_predict_overhead *ov, ob_runner *run) {
  int ns = ob_rt_step_count(rt);
  double *st = calloc((size_t)ns + 1, sizeof *st), total = 0;
  ob_predict_model_step *ps = calloc((size_t)ns + 1, sizeof *ps);
  ob_predict_model_result r;
  if (!st || !ps || ob_rt_profile(rt, 5, st, &total) ||
      ob_predict_model(ctx, p, rt, tg, th, lim, host.fingerprint, ov, ps, &r)) {
    ob_ctx_clear_error(ctx);
    free(st);
    free(ps);
    return;
  }
  const ob_graph *g = ob_rt_graph(rt);
  char kinds[32][48];
  double in_run[32] = {0}, predd[32] = {0}, dbs[32] = {0}, dbrun[32] = {0}, mib[32] = {0};
  int cnt[32] = {0}, nk = 0;
  for (int i = 0; i < ns; i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    char k[48];
    snprintf(k, sizeof k, "%s %.30s", ob_rt_step_kind_name(si.kind), si.kind == OB_RT_STEP_CONVERT ? "" : si.op);
    int at = 0;
    while (at < nk && strcmp(kinds[at], k)) at++;
    if (at == nk && nk < 32) snprintf(kinds[nk++], sizeof kinds[0], "%s", k);
    if (at >= 32) continue;
    cnt[at]++;
    in_run[at] += st[i];
    predd[at] += ps[i].seconds;
    if (si.db_s > 0) dbs[at] += si.db_s, dbrun[at] += st[i];
    mib[at] += (double)ob_graph_node_param_bytes(g, si.node) / 1048576.0;
  }
  printf("    %-36s %5s %10s %10s %10s %10s %8s\n", "steps (run total, ms)", "n", "in run", "predicted", "db alone",
         "(in run)", "param MiB");
  double sr = 0, sp = 0;
  for (int k = 0; k < nk; k++) {
    printf("    %-36s %5d %10.3f %10.3f %10.3f %10.3f %8.1f\n", kinds[k], cnt[k], in_run[k] * 1e3, predd[k] * 1e3,
           dbs[k] * 1e3, dbrun[k] * 1e3, mib[k]);
    sr += in_run[k];
    sp += predd[k];
  }
  printf("    %-36s %5d %10.3f %10.3f   (whole runs %.3f ms)\n", "sum", ns, sr * 1e3, sp * 1e3, total * 1e3);
  /* the kernel steps that take longest in the run, one by one: the rate at
   * which each read its parameters in the run (GB/s) beside the prediction
   * and, for a config the db holds, its time alone */
  printf("    %-58s %6s %9s %9s %9s %9s %9s %7s %7s\n", "longest kernel steps (ms)", "config", "in run", "predicted",
         "db alone", "warm now", "flushed", "par MiB", "GB/s");
  for (int shown = 0; shown < 12; shown++) {
    int best = -1;
    for (int i = 0; i < ns; i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && st[i] >= 0 && (best < 0 || st[i] > st[best])) best = i;
    }
    if (best < 0) break;
    ob_rt_step_info si;
    ob_rt_step_get(rt, best, &si);
    double w = (double)ob_graph_node_param_bytes(g, si.node) / 1048576.0;
    double warm = alone_s(run, g, &si, th, false), cold = alone_s(run, g, &si, th, true);
    printf("    %-58.58s %6llu %9.4f %9.4f %9.4f %9.4f %9.4f %7.2f %7.1f\n", si.workload,
           (unsigned long long)si.config_index, st[best] * 1e3, ps[best].seconds * 1e3, si.db_s * 1e3, warm * 1e3,
           cold * 1e3, w, w * 1.048576e-3 / st[best]);
    st[best] = -1;
  }
  free(st);
  free(ps);
}

int main(int argc, char **argv) {
  int ntasks = 8, nconfigs = 5, held_configs = 31;
  bool measure_only = false, model_steps = false;
  const char *steps_csv = NULL; /* every kernel step of every model run, for fitting the in-graph model */
  double measure_budget_s = 0, max_cv = 0.1;
  int64_t input_size = 56;
  const char *db_path = NULL;
  bool keep = false, reuse = false, no_corun = false, no_models = false, no_100k = false, no_folds = false;
  int worst = 12, depth = 0, rounds = 0, corun_depth = 0, corun_rounds = 0;
  double eta = 0;
  int64_t seqlen = 32;
  const char *round_out = NULL, *round_dbs[MAX_ROUNDS];
  int nround_dbs = 0;
  bool reverse = false;
  double round_agree = 0.05;
  bool rounds_only = false, no_profiles = false;
  int round_what = 0; /* 0: the models' points; 1: and the sampled kernel points; 2: those alone */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tasks") && i + 1 < argc) ntasks = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--configs") && i + 1 < argc) nconfigs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--input-size") && i + 1 < argc) input_size = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--db") && i + 1 < argc) db_path = argv[++i];
    else if (!strcmp(argv[i], "--held-configs") && i + 1 < argc) held_configs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--measure-only")) measure_only = true;
    else if (!strcmp(argv[i], "--model-steps")) model_steps = true;
    else if (!strcmp(argv[i], "--steps-csv") && i + 1 < argc) steps_csv = argv[++i];
    else if (!strcmp(argv[i], "--measure-budget") && i + 1 < argc) measure_budget_s = atof(argv[++i]);
    else if (!strcmp(argv[i], "--max-cv") && i + 1 < argc) max_cv = atof(argv[++i]);
    else if (!strcmp(argv[i], "--keep")) keep = true;
    else if (!strcmp(argv[i], "--measure-round") && i + 1 < argc) round_out = argv[++i];
    else if (!strcmp(argv[i], "--reverse")) reverse = true;
    else if (!strcmp(argv[i], "--round-profiles")) round_what = 1;
    else if (!strcmp(argv[i], "--round-profiles-only")) round_what = 2;
    else if (!strcmp(argv[i], "--rounds-only")) rounds_only = true;
    else if (!strcmp(argv[i], "--no-profiles")) no_profiles = true;
    else if (!strcmp(argv[i], "--round-agree") && i + 1 < argc) round_agree = atof(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc && nround_dbs < MAX_ROUNDS) round_dbs[nround_dbs++] = argv[++i];
    else if (!strcmp(argv[i], "--reuse")) reuse = true;
    else if (!strcmp(argv[i], "--seqlen") && i + 1 < argc) seqlen = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--no-corun")) no_corun = true;
    else if (!strcmp(argv[i], "--no-models")) no_models = true;
    else if (!strcmp(argv[i], "--no-100k")) no_100k = true;
    else if (!strcmp(argv[i], "--no-folds")) no_folds = true;
    else if (!strcmp(argv[i], "--worst") && i + 1 < argc) worst = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--depth") && i + 1 < argc) depth = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--eta") && i + 1 < argc) eta = atof(argv[++i]);
    else if (!strcmp(argv[i], "--corun-depth") && i + 1 < argc) corun_depth = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--corun-rounds") && i + 1 < argc) corun_rounds = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--tasks N] [--configs N] [--held-configs N] [--input-size N] [--seqlen N] [--db FILE]\n"
                      "       [--keep] [--reuse] [--measure-only] [--measure-budget S] [--max-cv X] [--model-steps]\n"
                      "       [--no-corun] [--no-models] [--no-100k] [--no-folds] [--worst N] [--depth N] [--rounds N]\n"
                      "       [--eta X] [--measure-round OUT.db [--reverse]] [--rounds ROUND.db]... [--rounds-only]\n"
                      "       [--round-agree X (< 0: the fastest round)] [--no-profiles]\n"
                      "       [--corun-depth N] [--corun-rounds N]\n", argv[0]);
      return 2;
    }
  }
  if (ntasks < 1 || nconfigs < 0 || nconfigs > 63 || held_configs < 0 || held_configs > 63 || input_size < 8) {
    fprintf(stderr, "bench_predict: --tasks >= 1, --configs and --held-configs 0..63, --input-size >= 8\n");
    return 2;
  }
  if (ob_ctx_new(&ctx)) return 2;
  if (ob_host_detect(ctx, &host) || ob_target_host(ctx, &target)) return die("host");
  char tmpdb[64] = "/tmp/obbenchpredict-XXXXXX";
  if (!db_path) {
    if (!mkdtemp(tmpdb)) return 2;
    strcat(tmpdb, "/p.db");
    db_path = tmpdb;
  }
  ob_db *db = NULL;
  if (ob_db_open(ctx, db_path, 0, &db)) return die(db_path);
  ob_runner *run = NULL;
  if (ob_runner_new(ctx, &run)) return die("runner");
  /* the rounds: source 0 is the db, then each --rounds db in the order given */
  round_set rset = {0};
  if (nround_dbs && !rounds_only && rounds_add_db(&rset, db)) return die(db_path);
  for (int r = 0; r < nround_dbs; r++) {
    ob_db *rdb = NULL;
    if (ob_db_open(ctx, round_dbs[r], OB_DB_READONLY, &rdb) || rounds_add_db(&rset, rdb)) return die(round_dbs[r]);
    ob_db_close(rdb);
  }
  if (rset.n) qsort(rset.v, (size_t)rset.n, sizeof *rset.v, by_round_key);
  const char *train_models[] = {"resnet-18", "mobilenet-v2", "squeezenet-1.1"};
  const char *test_models[] = {"resnet-50", "inception-v3", "bert-base"}, *test_model = "resnet-50, inception-v3, bert-base";
  for (int m = 0; m < 3; m++)
    if (add_model(train_models[m], input_size, seqlen, ntasks) < 0) return die(train_models[m]);
  int first_test = nwl, test_start[4];
  for (int m = 0; m < 3; m++) {
    test_start[m] = nwl;
    if (add_model(test_models[m], input_size, seqlen, ntasks) < 0) return die(test_models[m]);
  }
  test_start[3] = nwl;
  if (round_out) {
    double took = 0;
    int64_t n = measure_round(db, round_out, reverse, run, &rset, max_cv, round_agree, measure_budget_s,
                              round_what != 2, round_what >= 1, &took);
    if (n < 0) return die(round_out);
    printf("round: measured %lld points in %.0f s into %s (%s order%s)\n", (long long)n, took, round_out,
           reverse ? "reverse" : "forward", rset.nsrc ? "; only those the rounds given do not confirm" : "");
    rounds_free(&rset);
    release(run, db);
    return 0;
  }
  /* --reuse: the workloads the db already holds enough records of are not
   * measured again (a dataset collected in an earlier quiet run) */
  ob_predict_dataset *have = NULL;
  if (reuse && ob_predict_dataset_load(ctx, db, NULL, &have)) return die("reading the db");
  /* 1. measure */
  double t0 = ob_now_s();
  ob_rng rng = {0x9e3779b97f4a7c15ull};
  int64_t measured = 0, failed = 0;
  int64_t reused = 0;
  bool cut = false;
  for (int w = 0; w < nwl; w++) {
    wl_entry *e = &wls[w];
    /* held-out tasks get more configs: score@k says something only when a
     * task has many more than k */
    int want = 1 + (w >= first_test ? held_configs : nconfigs);
    int64_t held = 0;
    for (int64_t i = 0; have && i < have->n; i++) held += !have->s[i].from_profile && !strcmp(have->s[i].workload, e->key);
    if (have && held >= 2 * want) {
      reused += held;
      continue;
    }
    /* --measure-budget: a collection run split into pieces (each continues
     * with --reuse where the last stopped) */
    if (measure_budget_s > 0 && ob_now_s() - t0 > measure_budget_s) {
      cut = true;
      break;
    }
    if (ob_workload_store(db, &e->wl)) ob_ctx_clear_error(ctx);
    ob_config cfgs[64];
    int nc = 0;
    cfgs[nc++] = e->cfg0;
    const ob_space *s = ob_task_space(e->task);
    for (int tries = 0; nc < want && nc < 64 && tries < 2000; tries++) {
      uint64_t idx = ob_rng_next(&rng) % ob_space_len(s);
      bool dup = false;
      for (int j = 0; j < nc; j++) dup |= cfgs[j].index == idx;
      if (dup || !ob_space_is_valid(s, idx) || ob_space_get(ctx, s, idx, &cfgs[nc])) {
        ob_ctx_clear_error(ctx);
        continue;
      }
      nc++;
    }
    for (int th = 1; th <= 2; th++) {
      ob_measure_opts mo = ob_measure_opts_default();
      mo.nthreads = th;
      mo.timing.repeat = 5;
      mo.build.jobs = 2;
      ob_measure_result r[64];
      if (ob_measure_configs(ctx, e->task, run, &mo, cfgs, nc, r)) return die("measuring");
      for (int c = 0; c < nc; c++) {
        store(db, e, &cfgs[c], &mo, &r[c]);
        measured++;
        failed += r[c].error_no != 0;
      }
    }
  }
  double t_measure = ob_now_s() - t0;
  ob_predict_dataset_free(have);
  if (measure_only) {
    printf("measured %lld points (%lld failed) in %.0f s, %lld reused; %s\n", (long long)measured, (long long)failed,
           t_measure, (long long)reused, cut ? "stopped at the budget: run again with --reuse" : "all workloads held");
    release(run, db);
    return 0;
  }
  /* 2. train on the training models, evaluate on the held-out one and by workload folds */
  ob_predict_dataset *d = NULL;
  /* points whose repeats spread by more than max_cv were disturbed while
   * they ran: neither trained on nor scored */
  ob_predict_data_opts dopt = {.max_cv = max_cv, .cv_profiles_only = rset.nsrc > 0, .no_profiles = no_profiles};
  if (ob_predict_dataset_load(ctx, db, &dopt, &d)) return die("dataset");
  uint8_t *test = calloc((size_t)d->n, 1), *train = calloc((size_t)d->n, 1), *keep_pt = malloc((size_t)d->n);
  memset(keep_pt, 1, (size_t)d->n);
  if (rset.nsrc) {
    /* labels from rounds; and how well labels reproduce: one measurement
     * against another (the db against the first round), then the label of
     * the first half of the sources against that of the second */
    double *a = malloc(sizeof(double) * (size_t)d->n), *b = malloc(sizeof(double) * (size_t)d->n);
    double *ac = malloc(sizeof(double) * (size_t)d->n), *bc = malloc(sizeof(double) * (size_t)d->n);
    double *ha = malloc(sizeof(double) * (size_t)d->n), *hb = malloc(sizeof(double) * (size_t)d->n);
    int64_t nlab = 0, nleft = 0, npts = 0;
    int half = rset.nsrc / 2;
    for (int64_t i = 0; i < d->n; i++) {
      a[i] = b[i] = ac[i] = bc[i] = ha[i] = hb[i] = NAN;
      if (d->s[i].from_profile && d->s[i].pressure_mib != 0) continue;
      char *key = point_key(d->s[i].workload, d->s[i].tmpl, d->s[i].resources, d->s[i].config_index);
      double v[MAX_ROUNDS + 1];
      int n;
      if (!key) return die("out of memory");
      if (rounds_of(&rset, key, 0, 1, 0, v) == 1) a[i] = v[0];
      if (rounds_of(&rset, key, 1, 2, 0, v) == 1) b[i] = v[0];
      if (rounds_of(&rset, key, 0, 1, max_cv, v) == 1) ac[i] = v[0];
      if (rounds_of(&rset, key, 1, 2, max_cv, v) == 1) bc[i] = v[0];
      n = rounds_of(&rset, key, 0, half, max_cv, v);
      ha[i] = round_label(v, n, round_agree);
      n = rounds_of(&rset, key, half, rset.nsrc, max_cv, v);
      hb[i] = round_label(v, n, round_agree);
      n = rounds_of(&rset, key, 0, rset.nsrc, max_cv, v);
      double lab = round_label(v, n, round_agree);
      free(key);
      /* a sampled kernel point no round measured keeps its own label */
      if (d->s[i].from_profile && n == 0) continue;
      npts++;
      if (isnan(lab)) {
        keep_pt[i] = 0;
        nleft++;
      } else {
        d->s[i].seconds = lab;
        nlab++;
      }
    }
    char rule[96];
    if (round_agree < 0) snprintf(rule, sizeof rule, "their fastest round");
    else snprintf(rule, sizeof rule, "the mean of their two fastest rounds agreeing within %.0f%%", 100 * round_agree);
    printf("labels from %d rounds (%s%d --rounds dbs): %lld of %lld measured points labelled by\n"
           "%s (rounds with a CV <= %.2f); %lld left out (no such rounds)\n", rset.nsrc,
           rounds_only ? "" : "the db and ", nround_dbs, (long long)nlab, (long long)npts, rule, max_cv,
           (long long)nleft);
    printf("labels reproduced (the same points measured again):\n");
    agreement("one measurement: source 1 against source 2", a, b, d->n);
    agreement("  both with a CV <= max-cv", ac, bc, d->n);
    if (half >= 2 && rset.nsrc - half >= 2) {
      char what[96];
      snprintf(what, sizeof what, "round labels: sources 1..%d against %d..%d", half, half + 1, rset.nsrc);
      agreement(what, ha, hb, d->n);
    }
    free(a), free(b), free(ac), free(bc), free(ha), free(hb);
  }
  int64_t nsampled = 0;
  double *pred = malloc(sizeof(double) * (size_t)d->n);
  for (int64_t i = 0; i < d->n; i++) {
    for (int w = first_test; w < nwl; w++) test[i] |= !strcmp(d->s[i].workload, wls[w].key);
    bool in_train = false;
    for (int w = 0; w < first_test; w++) in_train |= !strcmp(d->s[i].workload, wls[w].key);
    if (test[i] && in_train) test[i] = 0; /* a shape both models have is not held out */
    test[i] &= keep_pt[i];
    train[i] = !test[i] && keep_pt[i];
    /* sampled kernels (predict_sample.sh) train; a sampled shape that a
     * held-out model has is neither trained on nor scored */
    if (d->s[i].from_profile) test[i] = 0;
    nsampled += d->s[i].from_profile && train[i];
  }
  ob_predict_train_opts to = ob_predict_train_opts_default();
  if (depth > 0) to.max_depth = depth;
  if (rounds > 0) to.rounds = rounds;
  if (eta > 0) to.eta = eta;
  ob_predictor *p = NULL;
  double t1 = ob_now_s();
  if (ob_predictor_train(ctx, d, train, &to, &p)) return die("training");
  double t_train = ob_now_s() - t1;
  if (ob_predictor_predict_dataset(p, d, test, true, pred)) return die("predicting");
  ob_predict_metrics mm, mw;
  int64_t unpredicted = 0;
  char unkinds[128] = "";
  for (int64_t i = 0; i < d->n; i++)
    if (test[i] && isnan(pred[i])) { /* a kind the training data lack */
      test[i] = 0, unpredicted++;
      if (!strstr(unkinds, d->s[i].op) && strlen(unkinds) + strlen(d->s[i].op) + 3 < sizeof unkinds)
        snprintf(unkinds + strlen(unkinds), sizeof unkinds - strlen(unkinds), "%s%s", *unkinds ? ", " : "", d->s[i].op);
    }
  ob_predict_metrics_compute(d, test, pred, &mm);
  printf("dataset: %lld measurements now (%lld failed configs) + %lld reused from the db, of %d workloads (%d held out:\n"
         "        %s), input size %lld, sequence %lld, 1 and 2 threads, %d configs per training and %d per held-out\n"
         "        workload; measured in %.0f s; %lld points left out for a CV above %.2f\n",
         (long long)measured, (long long)failed, (long long)reused, nwl, nwl - first_test, test_model,
         (long long)input_size, (long long)seqlen, 1 + nconfigs, 1 + held_configs, t_measure, (long long)d->noisy,
         max_cv);
  if (unpredicted)
    printf("not predicted: %lld held-out points of operator kinds the training data lack (%s)\n",
           (long long)unpredicted, unkinds);
  if (nsampled) printf("training: + %lld sampled kernel points (opbench profile --sizes grids off the held-out shapes)\n",
                      (long long)nsampled);
  if (worst > 0) diagnose(d, test, pred, worst);
  printf("\n%-34s %7s %8s %8s %8s %9s %8s %8s\n", "operator latency", "points", "RMSPE%", "MdAPE%", "+-10%",
         "pairwise", "score@1", "score@5");
  printf("%-34s %7lld %8.1f %8.1f %8.1f %9.3f %8.3f %8.3f\n", "held-out models", (long long)mm.n,
         100 * mm.rmspe, 100 * mm.mdape, 100 * mm.within10, mm.pairwise, mm.score1, mm.score5);
  ob_predict_metrics mpm[3];
  for (int m = 0; m < 3; m++) {
    uint8_t *tt = calloc((size_t)d->n, 1);
    for (int64_t i = 0; i < d->n; i++)
      for (int w = test_start[m]; w < test_start[m + 1] && test[i] && !tt[i]; w++) tt[i] = !strcmp(d->s[i].workload, wls[w].key);
    ob_predict_metrics_compute(d, tt, pred, &mpm[m]);
    char label[64];
    snprintf(label, sizeof label, "  %s", test_models[m]);
    printf("%-34s %7lld %8.1f %8.1f %8.1f %9.3f %8.3f %8.3f\n", label, (long long)mpm[m].n, 100 * mpm[m].rmspe,
           100 * mpm[m].mdape, 100 * mpm[m].within10, mpm[m].pairwise, mpm[m].score1, mpm[m].score5);
    free(tt);
  }
  ob_predict_metrics mth[3];
  for (int th = 1; th <= 2; th++) {
    uint8_t *tt = calloc((size_t)d->n, 1);
    for (int64_t i = 0; i < d->n; i++) tt[i] = test[i] && d->s[i].threads == th;
    ob_predict_metrics m1;
    ob_predict_metrics_compute(d, tt, pred, &m1);
    mth[th] = m1;
    char label[64];
    snprintf(label, sizeof label, "  at %d thread%s", th, th > 1 ? "s" : "");
    printf("%-34s %7lld %8.1f %8.1f %8.1f %9.3f %8.3f %8.3f\n", label, (long long)m1.n, 100 * m1.rmspe,
           100 * m1.mdape, 100 * m1.within10, m1.pairwise, m1.score1, m1.score5);
    free(tt);
  }
  /* workload folds */
  double *pw = malloc(sizeof(double) * (size_t)d->n);
  uint8_t *all = calloc((size_t)d->n, 1);
  for (int64_t i = 0; i < d->n; i++) pw[i] = NAN;
  for (int f = 0; f < 5 && !no_folds; f++) {
    ob_predict_split_workload(d, f, 5, test);
    for (int64_t i = 0; i < d->n; i++) {
      train[i] = !test[i] && keep_pt[i];
      test[i] &= keep_pt[i];
    }
    ob_predictor *q = NULL;
    double *fp = malloc(sizeof(double) * (size_t)d->n);
    if (ob_predictor_train(ctx, d, train, &to, &q) || ob_predictor_predict_dataset(q, d, test, true, fp))
      return die("workload folds");
    for (int64_t i = 0; i < d->n; i++)
      if (test[i] && !isnan(fp[i]) && !d->s[i].from_profile) {
        pw[i] = fp[i];
        all[i] = 1;
      }
    free(fp);
    ob_predictor_free(q);
  }
  ob_predict_metrics_compute(d, all, pw, &mw);
  printf("%-34s %7lld %8.1f %8.1f %8.1f %9.3f %8.3f %8.3f\n", "held-out workloads (5 folds)", (long long)mw.n,
         100 * mw.rmspe, 100 * mw.mdape, 100 * mw.within10, mw.pairwise, mw.score1, mw.score5);
  /* training time on 100k rows: the measured points' feature rows (real
   * workloads and configs, their measured labels) repeated to 100,000 rows,
   * each repetition a distinct row to XGBoost; the trainer's default options
   * (5 members x 300 rounds, depth 6) with 2 threads (this machine's cores) */
  double t_100k = NAN;
  int64_t n100k = 100000;
  if (!no_100k && d->n > 0) {
    ob_predict_dataset big = {.n = n100k};
    big.s = malloc(sizeof *big.s * (size_t)n100k);
    big.x = ob_mem_alloc_big(sizeof(float) * OB_PREDICT_NFEAT * (size_t)n100k);
    if (!big.s || !big.x) return die("out of memory for 100k rows");
    for (int64_t i = 0; i < n100k; i++) {
      big.s[i] = d->s[i % d->n];
      memcpy(big.x + i * OB_PREDICT_NFEAT, d->s[i % d->n].x, sizeof(float) * OB_PREDICT_NFEAT);
      big.s[i].x = big.x + i * OB_PREDICT_NFEAT;
    }
    ob_predict_train_opts bo = ob_predict_train_opts_default();
    bo.nthread = 2;
    ob_predictor *q = NULL;
    double tb = ob_now_s();
    if (ob_predictor_train(ctx, &big, NULL, &bo, &q)) return die("training on 100k rows");
    t_100k = ob_now_s() - tb;
    ob_predictor_free(q);
    free(big.s);
    ob_mem_free_big(big.x);
    printf("%-34s %7lld rows (%lld measured points repeated), %d members x %d rounds, 2 threads: %.1f s\n",
           "training time", (long long)n100k, (long long)d->n, bo.members, bo.rounds, t_100k);
  }
  /* model latency: each held-out model compiled by the runtime (the db's
   * best configs of the measured tasks, defaults elsewhere), predicted
   * through its step list with the runtime's overhead measured here on
   * resnet-18, then timed end to end; at 1 and 2 threads. The calibration
   * and the models' runs alternate in MODEL_ROUNDS rounds, each model's
   * prediction from its round's calibration, and the figure compares the
   * medians: a calibration taken in a slow window of the host and a model
   * timed in a fast one (or the reverse) moved the error by 20 % between
   * two quiet runs of one round each. */
  double model_err[3][3] = {{NAN, NAN, NAN}, {NAN, NAN, NAN}, {NAN, NAN, NAN}};
  ob_predict_overhead ov;
  memset(&ov, 0, sizeof ov);
  if (!no_models) {
    const char *names[4] = {"resnet-18", "resnet-50", "inception-v3", "bert-base"};
    ob_db_host_limits *lim = NULL;
    if (ob_db_get_host_limits(db, host.fingerprint, &lim)) return die("host limits");
    FILE *csv = steps_csv ? fopen(steps_csv, "w") : NULL;
    if (steps_csv && !csv) return die(steps_csv);
    if (csv)
      fprintf(csv, "threads,round,model,step,op,param_mib,flops,db_s,pred_alone_s,in_run_s,model_meas_s,model_run_s,now_alone_s\n");
    for (int th = 1; th <= 2; th++) {
      char head[64];
      snprintf(head, sizeof head, "model latency (%d thread%s)", th, th > 1 ? "s" : "");
      printf("\n%-34s %12s %12s %9s %s\n", head, "predicted ms", "measured ms", "error%",
             "kernels / other steps (uncovered kinds)");
      /* 4 to 6: further instances of the calibration model (parameters of
       * their own), the synthetic stack of the miss curve */
      ob_graph *g[4 + NSTACK] = {0};
      ob_rt *rt[4 + NSTACK] = {0};
      for (int m = 0; m < 4 + NSTACK; m++) {
        ob_model_opts mo = ob_model_opts_default();
        mo.name = names[m < 4 ? m : 0];
        mo.input_size = !strcmp(mo.name, "inception-v3") && input_size < 75 ? 75 : input_size;
        mo.seqlen = seqlen;
        ob_rt_opts ro = ob_rt_opts_default();
        ro.target = target;
        ro.db = db;
        ro.nthreads = th;
        ro.build.jobs = 2;
        if (ob_model_load(ctx, &mo, &g[m]) ||
            ob_graph_optimize(ctx, g[m], ob_target_get_facts(target)->lanes_f32, NULL) ||
            ob_rt_new(ctx, g[m], &ro, &rt[m]))
          return die(mo.name);
      }
      double pr_s[3][MODEL_ROUNDS], me_s[3][MODEL_ROUNDS], pr_sweep[3][MODEL_ROUNDS];
      ob_predict_model_result r[3];
      for (int rd = 0; rd < MODEL_ROUNDS; rd++) {
        if (ob_predict_overhead_measure(ctx, rt[0], th, 10, &ov)) return die("overhead");
        ob_predict_overhead sweep_ov = ov;
        if (ob_predict_overhead_stack(ctx, rt[0], rt + 4, NSTACK, &ov)) return die("overhead stack");

        printf("%-34s per native step %.4f ms + %.4f ms/MiB, per conversion %.4f ms, per run %.4f ms,\n"
               "%-34s a kernel step the longer of x%.3f its db time alone and %.4f ms per MiB of parameters,\n"
               "%-34s (+ %.4f ms per MiB evicted, of %.1f MiB); share evicted by MiB read between runs:",
               rd == 0 ? "  runtime overhead (resnet-18)" : "    next round", ov.native_fixed_s * 1e3,
               ov.native_s_per_mb * 1e3, ov.convert_s * 1e3, ov.run_s * 1e3, "", ov.kernel_factor,
               ov.floor_s_per_mb * 1e3, "", ov.cold_s_per_mb * 1e3, ov.param_mib);
        for (int k = 0; k < ov.nmiss; k++) printf(" %.0f %.2f", ov.miss_mib[k], ov.miss_share[k]);
        printf("%s\n", ov.nmiss ? " (synthetic stack: 1-3 more resnet-18s)" : " (no cold cost measured)");
        printf("%-34s the sweep's miss curve (predictions with it beside):", "");
        for (int k = 0; k < sweep_ov.nmiss; k++) printf(" %.0f %.2f", sweep_ov.miss_mib[k], sweep_ov.miss_share[k]);
        printf("\n");
        for (int m = 1; m < 4; m++) {
          ob_timing tm;
          ob_timing_opts to2 = ob_timing_default();
          to2.timeout_s = 300;
          ob_predict_model_result rsw;
          if (ob_predict_model(ctx, p, rt[m], target, th, lim, host.fingerprint, &ov, NULL, &r[m - 1]) ||
              ob_predict_model(ctx, p, rt[m], target, th, lim, host.fingerprint, &sweep_ov, NULL, &rsw) ||
              ob_rt_time(rt[m], &to2, &tm))
            return die(names[m]);
          pr_s[m - 1][rd] = r[m - 1].seconds;
          pr_sweep[m - 1][rd] = rsw.seconds;
          me_s[m - 1][rd] = tm.median_s;
        }
        if (csv) steps_dump(csv, rt, names, th, rd, p, target, lim, me_s);
      }
      for (int m = 1; m < 4; m++) {
        char rounds_txt[128] = "";
        for (int rd = 0; rd < MODEL_ROUNDS; rd++)
          snprintf(rounds_txt + strlen(rounds_txt), sizeof rounds_txt - strlen(rounds_txt), "%s%+.1f",
                   rd ? " " : "", 100 * (pr_s[m - 1][rd] - me_s[m - 1][rd]) / me_s[m - 1][rd]);
        double pm = median(pr_s[m - 1], MODEL_ROUNDS), mm2 = median(me_s[m - 1], MODEL_ROUNDS);
        model_err[th][m - 1] = (pm - mm2) / mm2;
        double psw = median(pr_sweep[m - 1], MODEL_ROUNDS);
        if (model_steps) steps_breakdown(rt[m], p, target, th, lim, &ov, run);
        const ob_predict_model_result *rr = &r[m - 1];
        char label[64];
        snprintf(label, sizeof label, "  %s", names[m]);
        printf("%-34s %12.3f %12.3f %+9.1f %d / %d%s%s%s; %.1f MiB of parameters, %.2f evicted; rounds %s;\n"
               "%-34s with the sweep's miss curve %.3f ms (%+.1f%%)\n", label,
               pm * 1e3, mm2 * 1e3, 100 * model_err[th][m - 1], rr->nkernels, rr->nother, rr->nuncovered ? " (" : "",
               rr->uncovered, rr->nuncovered ? ")" : "", rr->param_mib, rr->miss_share, rounds_txt, "", psw * 1e3,
               100 * (psw - mm2) / mm2);
      }
      for (int m = 0; m < 4 + NSTACK; m++) {
        ob_rt_free(rt[m]);
        ob_graph_free(g[m]);
      }
    }
    ob_db_host_limits_free(lim);
    if (csv) fclose(csv);
  }
  /* 3. co-run: pairs of the training workloads' default configs */
  /* 8 workloads: 56 ordered pairs, each in both modes (a held-out fold of
   * pairs then still leaves about 90 points to train on) */
  int npl = nwl < NPL ? nwl : NPL;
  wl_entry *pl[NPL];
  for (int i = 0; i < npl; i++) pl[i] = &wls[i * (first_test > npl ? first_test / npl : 1) % nwl];
  ob_build_input in[NPL];
  ob_build_result br[NPL];
  char *src[NPL] = {0};
  memset(br, 0, sizeof br);
  for (int i = 0; i < npl; i++) {
    if (ob_task_source(pl[i]->task, &pl[i]->cfg0, &src[i], &pl[i]->sym)) return die("source");
    in[i] = (ob_build_input){.source = src[i], .name = pl[i]->sym};
  }
  ob_build_opts bo = {.target = target, .jobs = 2};
  if (ob_build_batch(ctx, &bo, in, npl, br)) return die("building");
  for (int i = 0; i < npl; i++) {
    if (br[i].error_no) {
      fprintf(stderr, "bench_predict: %s does not build\n", pl[i]->key);
      return 1;
    }
    pl[i]->so = br[i].so_path;
  }
  /* each co-run point is paired with an alone run right before it, so that
   * the load others put on the machine at that moment cancels in the ratio */
  int64_t ncorun = 0;
  double t_corun = ob_now_s();
  time_t corun_since = time(NULL) - 1;
  for (int i = 0; i < npl && !no_corun; i++)
    for (int j = 0; j < npl; j++) {
      if (i == j) continue;
      /* CORUN_ROUNDS rounds of (alone, beside) in both modes: the label is
       * the median round's ratio, so one disturbed window does not make it */
      /* and, for the placement game's mixed profiles ("full" points with one
       * core in common), A at 2 threads beside B at 1 on core 0, and A at 1
       * on core 0 beside B at 2 */
      double a1[CORUN_ROUNDS], rs[CORUN_ROUNDS], a2[CORUN_ROUNDS], rf[CORUN_ROUNDS];
      double a3[CORUN_ROUNDS], r21[CORUN_ROUNDS], a4[CORUN_ROUNDS], r12[CORUN_ROUNDS];
      int ns = 0, nf = 0, n21 = 0, n12 = 0;
      for (int r = 0; r < CORUN_ROUNDS; r++) {
        double x1 = time_beside(run, pl[i], 0, 1, NULL, 0, 0);
        double s = time_beside(run, pl[i], 0, 1, pl[j], 1, 1); /* stream: core 0 beside core 1 */
        double x2 = time_beside(run, pl[i], 0, 2, NULL, 0, 0);
        double f = time_beside(run, pl[i], 0, 2, pl[j], 0, 2); /* full: both on both cores */
        double p21 = time_beside(run, pl[i], 0, 2, pl[j], 0, 1), p12 = time_beside(run, pl[i], 0, 1, pl[j], 1, 2);
        if (isfinite(s) && isfinite(x1) && x1 > 0) a1[ns] = x1, rs[ns++] = s / x1;
        if (isfinite(f) && isfinite(x2) && x2 > 0) a2[nf] = x2, rf[nf++] = f / x2;
        if (isfinite(p21) && isfinite(x2) && x2 > 0) a3[n21] = x2, r21[n21++] = p21 / x2;
        if (isfinite(p12) && isfinite(x1) && x1 > 0) a4[n12] = x1, r12[n12++] = p12 / x1;
      }
      /* stream, full, and the two mixed profiles: A's and B's threads, B's
       * first core, the mode, and the rounds' alone times and ratios */
      static const int c_ta[4] = {1, 2, 2, 1}, c_tb[4] = {1, 2, 1, 2}, c_b0[4] = {1, 0, 0, 1};
      static const char *const c_mode[4] = {"stream", "full", "full", "full"};
      double *c_alone[4] = {a1, a2, a3, a4}, *c_ratio[4] = {rs, rf, r21, r12};
      int c_got[4] = {ns, nf, n21, n12};
      for (int c = 0; c < 4; c++)
        if (c_got[c]) {
          double al = median(c_alone[c], c_got[c]);
          put_corun(db, pl[i], pl[j], c_ta[c], c_tb[c], c_b0[c], c_mode[c], al, al * median(c_ratio[c], c_got[c]));
          ncorun++;
        }
    }
  t_corun = ob_now_s() - t_corun;
  ob_predict_train_opts co = to;
  if (corun_depth > 0) co.max_depth = corun_depth;
  if (corun_rounds > 0) co.rounds = corun_rounds;
  ob_corun_dataset *cd = NULL;
  if (ob_corun_dataset_load(ctx, db, host.fingerprint, &cd)) return die("co-run dataset");
  uint8_t *ct = calloc((size_t)cd->n + 1, 1), *cr = calloc((size_t)cd->n + 1, 1);
  uint8_t *fresh = calloc((size_t)cd->n + 1, 1);
  /* the points measured now (all of the db's with --no-corun): older ones
   * describe the host of their own session; one at 00:46 had the two vCPUs
   * halve each other on disjoint cores (stream slowdowns ~1.8x), this
   * morning's do not (~1.0x), and mixing the two made labels no feature
   * can tell apart */
  int64_t nfresh = 0;
  for (int64_t i = 0; i < cd->n; i++) nfresh += fresh[i] = no_corun || cd->s[i].timestamp >= (double)corun_since;
  double cse = 0, cape[1024], mse[3] = {0};
  int64_t cn = 0, cwithin = 0, mwithin[3] = {0}, mn[3] = {0};
  for (int f = 0; f < 5; f++) {
    ob_corun_split_pairs(cd, f, 5, ct);
    int64_t nt = 0, nr = 0;
    for (int64_t i = 0; i < cd->n; i++) {
      ct[i] = ct[i] && fresh[i];
      cr[i] = !ct[i] && fresh[i];
      nt += ct[i];
      nr += cr[i];
    }
    if (!nt || !nr) continue;
    ob_predictor *q = ob_predictor_new(ctx);
    if (!q || ob_predictor_train_interference(q, cd, cr, &co)) return die("interference");
    for (int64_t i = 0; i < cd->n; i++) {
      if (!ct[i]) continue;
      ob_prediction pr;
      if (ob_predictor_slowdown(q, cd->s[i].x, &pr)) return die("slowdown");
      double e = (pr.seconds - cd->s[i].slowdown) / cd->s[i].slowdown;
      /* partial: cores in common, fewer than either side's threads (the
       * game's mixed profiles); the figure of the issue's bar is on its two
       * modes, stream and full, and partial is reported beside it */
      const float *cx = cd->s[i].x;
      int mi = !strcmp(cd->s[i].mode, "stream") ? 0 : cx[11] < fmaxf(cx[3], cx[8]) ? 2 : 1;
      if (worst > 0 && fabs(e) > 0.1)
        printf("  co-run miss: %-7s %.40s beside %.40s: measured %.3f predicted %.3f (%+.1f%%)\n",
               mi == 2 ? "partial" : cd->s[i].mode, cd->s[i].a, cd->s[i].b, cd->s[i].slowdown, pr.seconds, 100 * e);
      mse[mi] += e * e, mwithin[mi] += fabs(e) <= 0.1, mn[mi]++;
      if (mi == 2) continue;
      cse += e * e;
      cwithin += fabs(e) <= 0.1;
      if (cn < 1024) cape[cn] = fabs(e);
      cn++;
    }
    ob_predictor_free(q);
  }
  double c_rmspe = cn ? sqrt(cse / (double)cn) : NAN, c_within = cn ? (double)cwithin / (double)cn : NAN;
  double c_mdape = median(cape, cn < 1024 ? (int)cn : 1024);
  printf("%-34s %7lld %8.1f %8.1f %8.1f\n", "co-run slowdown (held-out pairs; stream and full)", (long long)cn,
         100 * c_rmspe, 100 * c_mdape, 100 * c_within);
  for (int mi = 0; mi < 3; mi++)
    if (mn[mi])
      printf("  %-32s %7lld %8.1f %8s %8.1f\n", mi == 0 ? "stream" : mi == 1 ? "full" : "partial (mixed threads)",
             (long long)mn[mi], 100 * sqrt(mse[mi] / (double)mn[mi]), "", 100.0 * (double)mwithin[mi] / (double)mn[mi]);
  printf("  (co-run points measured in %.0f s; %lld of the db's %lld points are this run's)\n", t_corun,
         (long long)nfresh, (long long)cd->n);
  /* the full predictor: latency + interference, for the game */
  if (nfresh && ob_predictor_train_interference(p, cd, fresh, &co)) return die("interference");
  /* 4. the game on this machine, validated by measuring every profile */
  printf("\nplacement game on this machine (2 cores): predicted equilibrium, then every profile measured (ms)\n");
  printf("%-44s %-8s %-8s %10s %10s %10s %7s\n", "pair", "eq(pred)", "opt(meas)", "eq meas", "opt meas",
         "all-2 meas", "eq/opt");
  double ratios[16], vs_all[16];
  int ngames = 0;
  ob_db_host_limits *clim = NULL;
  if (ob_db_get_host_limits(db, host.fingerprint, &clim)) return die("host limits");
  for (int gi = 0; gi + 1 < npl && ngames < 3 && !no_corun; gi += 2, ngames++) {
    wl_entry *A = pl[gi], *B = pl[gi + 1];
    double al[4];
    ob_nash_game g;
    memset(&g, 0, sizeof g);
    g.players = 2;
    g.cores = 2;
    g.alone = al;
    wl_entry *pp[2] = {A, B};
    double l[2][2];
    for (int i = 0; i < 2; i++)
      for (int k = 1; k <= 2; k++) {
        float x[OB_PREDICT_NFEAT];
        ob_predict_point pt = {.wl = &pp[i]->wl, .task = pp[i]->task, .cfg = &pp[i]->cfg0, .threads = k,
                               .ncores = k};
        /* the host's limits, as the training points had them */
        ob_predict_point_limits(clim, host.fingerprint, &pt);
        ob_prediction pr;
        if (ob_predict_features(ctx, &pt, x) || ob_predictor_predict(p, pp[i]->wl.op, x, ob_workload_flops(&pp[i]->wl), &pr))
          return die("predicting a player");
        al[i * 2 + k - 1] = l[i][k - 1] = pr.seconds;
      }
    /* the game prices a profile as the measurement takes it: each player's
     * predicted slowdown beside the other at exactly the profile's threads
     * and shared cores (the co-run model was trained on stream, full and the
     * mixed profiles: full points with one core in common), with no time-slicing multiplier of its own */
    game_user gu = {.p = p, .lim = clim};
    for (int i = 0; i < 2; i++) {
      gu.flops[i] = ob_workload_flops(&pp[i]->wl);
      gu.bytes[i] = ob_predict_workload_bytes(&pp[i]->wl);
      for (int k = 0; k < 2; k++) gu.alone[i][k] = l[i][k];
    }
    if (ob_predictor_has_interference(p)) {
      g.slowdown = game_slowdown;
      g.user = &gu;
    }
    int k[2] = {2, 2};
    ob_nash_best_response(&g, k, 50, NULL);
    /* measured makespans of the four profiles (A from core 0, B after it,
     * wrapping): the median of 3 interleaved rounds, so that one disturbed
     * window neither makes nor breaks a profile */
    double meas[3][3], mr[3][3][3];
    for (int r = 0; r < 3; r++)
      for (int ka = 1; ka <= 2; ka++)
        for (int kb = 1; kb <= 2; kb++) {
          int b0 = ka % 2;
          double ta = time_beside(run, A, 0, ka, B, b0, kb), tb = time_beside(run, B, b0, kb, A, 0, ka);
          mr[ka][kb][r] = fmax(ta, tb);
        }
    for (int ka = 1; ka <= 2; ka++)
      for (int kb = 1; kb <= 2; kb++) meas[ka][kb] = median(mr[ka][kb], 3);
    if (model_steps) {
      double c[2];
      printf("  predicted alone ms: A %.4f / %.4f, B %.4f / %.4f (1 / 2 threads); profiles predicted / measured "
             "makespan ms:", l[0][0] * 1e3, l[0][1] * 1e3, l[1][0] * 1e3, l[1][1] * 1e3);
      for (int ka = 1; ka <= 2; ka++)
        for (int kb = 1; kb <= 2; kb++) {
          ob_nash_costs(&g, (int[]){ka, kb}, c);
          printf(" [%d,%d] %.4f / %.4f", ka, kb, fmax(c[0], c[1]) * 1e3, meas[ka][kb] * 1e3);
        }
      printf("\n");
    }
    int ok1 = 1, ok2 = 1;
    for (int ka = 1; ka <= 2; ka++)
      for (int kb = 1; kb <= 2; kb++)
        if (meas[ka][kb] < meas[ok1][ok2]) ok1 = ka, ok2 = kb;
    char pair[64];
    snprintf(pair, sizeof pair, "%.20s + %.20s", A->key, B->key);
    char eq[16], opt[16];
    snprintf(eq, sizeof eq, "[%d,%d]", k[0], k[1]);
    snprintf(opt, sizeof opt, "[%d,%d]", ok1, ok2);
    ratios[ngames] = meas[k[0]][k[1]] / meas[ok1][ok2];
    vs_all[ngames] = meas[k[0]][k[1]] / meas[2][2];
    printf("%-44s %-8s %-8s %10.4f %10.4f %10.4f %7.3f\n", pair, eq, opt, meas[k[0]][k[1]] * 1e3,
           meas[ok1][ok2] * 1e3, meas[2][2] * 1e3, ratios[ngames]);
  }
  /* simulated machines for the first pair(s): Amdahl from the predicted 1- and 2-thread latencies */
  printf("\nSIMULATED machines (latencies extrapolated by Amdahl's law from predicted 1- and 2-thread ones; %d players)\n",
         npl < 4 ? npl : 4);
  printf("%-8s %10s %12s %14s %8s %8s\n", "cores", "profiles", "equilibria", "opt makespan", "PoA", "PoS");
  int np = npl < 4 ? npl : 4;
  for (int P = 8; P <= 64; P *= (P == 8 ? 2 : 4)) {
    double *sim = calloc((size_t)np * (size_t)P, sizeof *sim);
    ob_nash_game g;
    memset(&g, 0, sizeof g);
    g.players = np;
    g.cores = P;
    g.alone = sim;
    for (int c = 1; c <= P; c *= 2) g.choices[g.nchoices++] = c;
    for (int i = 0; i < np; i++) {
      double L[2];
      for (int kk = 1; kk <= 2; kk++) {
        float x[OB_PREDICT_NFEAT];
        ob_predict_point pt = {.wl = &pl[i]->wl, .task = pl[i]->task, .cfg = &pl[i]->cfg0, .threads = kk,
                               .ncores = kk};
        ob_predict_point_limits(clim, host.fingerprint, &pt);
        ob_prediction pr;
        if (ob_predict_features(ctx, &pt, x) || ob_predictor_predict(p, pl[i]->wl.op, x, ob_workload_flops(&pl[i]->wl), &pr))
          return die("predicting a player");
        L[kk - 1] = pr.seconds;
      }
      double par = fmin(1, fmax(0, 2 * (1 - L[1] / L[0])));
      for (int kk = 1; kk <= P; kk++) sim[(size_t)i * (size_t)P + (size_t)(kk - 1)] = L[0] * ((1 - par) + par / kk);
      for (int j = 0; j < np; j++) g.stream[i][j] = g.full[i][j] = 1;
    }
    ob_nash_summary s;
    if (ob_nash_exhaustive(ctx, &g, 10000000, &s)) return die("game");
    printf("%-8d %10lld %12lld %14.4f %8.3f %8.3f\n", P, (long long)s.profiles, (long long)s.equilibria,
           s.opt_makespan * 1e3, s.price_of_anarchy, s.price_of_stability);
    free(sim);
  }
  /* the model file */
  char mpath[96];
  snprintf(mpath, sizeof mpath, "%s.model", db_path);
  if (ob_predictor_save(ctx, p, mpath)) return die("saving");
  FILE *mf = fopen(mpath, "rb");
  long msize = 0;
  if (mf) {
    fseek(mf, 0, SEEK_END);
    msize = ftell(mf);
    fclose(mf);
  }
  double med_ratio = median(ratios, ngames), med_all = median(vs_all, ngames);
  printf("\nfigures (this run; bars of issue 13 in brackets):\n");
  printf("  dataset %lld measurements now + %lld reused, %lld co-run points now; training %.1f s on %lld points; model "
         "file %ld bytes\n", (long long)measured, (long long)reused, (long long)ncorun, t_train, (long long)d->n, msize);
  printf("  held-out models (%s): RMSPE %.1f%% [<= 10], MdAPE %.1f%%, within +-10%% %.1f%% [>= 90], pairwise %.3f "
         "[>= 0.85], score@1 %.3f, score@5 %.3f [>= 0.95]\n", test_model, 100 * mm.rmspe, 100 * mm.mdape,
         100 * mm.within10, mm.pairwise, mm.score1, mm.score5);
  for (int th = 1; th <= 2; th++)
    printf("    at %d thread%s: RMSPE %.1f%%, within +-10%% %.1f%%, pairwise %.3f\n", th, th > 1 ? "s" : "",
           100 * mth[th].rmspe, 100 * mth[th].within10, mth[th].pairwise);
  for (int m = 0; m < 3; m++)
    printf("    %s: %lld points, RMSPE %.1f%%, within +-10%% %.1f%%, pairwise %.3f, score@5 %.3f\n", test_models[m],
           (long long)mpm[m].n, 100 * mpm[m].rmspe, 100 * mpm[m].within10, mpm[m].pairwise, mpm[m].score5);
  printf("  held-out workloads: RMSPE %.1f%%, MdAPE %.1f%%, within +-10%% %.1f%%, pairwise %.3f, score@5 %.3f\n",
         100 * mw.rmspe, 100 * mw.mdape, 100 * mw.within10, mw.pairwise, mw.score5);
  for (int th = 1; th <= 2 && !no_models; th++)
    printf("  model latency error at %d thread%s [within +-10 each]: resnet-50 %+.1f%%, inception-v3 %+.1f%%, "
           "bert-base %+.1f%%\n", th, th > 1 ? "s" : "", 100 * model_err[th][0], 100 * model_err[th][1],
           100 * model_err[th][2]);
  if (!no_100k) printf("  training on %lld rows: %.1f s [< 60]\n", (long long)n100k, t_100k);
  printf("  co-run slowdown on held-out pairs (stream and full): RMSPE %.1f%%, MdAPE %.1f%%, within +-10%% %.1f%% (%lld "
         "points) [within 10]; the game's mixed profiles: RMSPE %.1f%% (%lld points)\n",
         100 * c_rmspe, 100 * c_mdape, 100 * c_within, (long long)cn, mn[2] ? 100 * sqrt(mse[2] / (double)mn[2]) : NAN,
         (long long)mn[2]);
  if (ngames)
    printf("  placement (median of %d pairs, measured): equilibrium/optimum makespan %.3f [<= 1.10], "
           "equilibrium/all-threads %.3f\n", ngames, med_ratio, med_all);
  printf("held-out models' operator RMSPE: %.1f%%\n", 100 * mm.rmspe);
  for (int i = 0; i < npl; i++) {
    ob_build_result_clear(&br[i]);
    free(src[i]);
    free(pl[i]->sym);
    pl[i]->so = pl[i]->sym = NULL;
  }
  for (int w = 0; w < nwl; w++) ob_task_free(wls[w].task);
  free(test);
  free(train);
  free(pred);
  free(keep_pt);
  rounds_free(&rset);
  free(pw);
  free(all);
  free(ct);
  free(cr);
  free(fresh);
  ob_corun_dataset_free(cd);
  ob_db_host_limits_free(clim);
  ob_predict_dataset_free(d);
  ob_predictor_free(p);
  ob_runner_free(run);
  ob_db_close(db);
  ob_target_free(target);
  if (!keep && db_path == tmpdb) {
    char cmd[160];
    *strrchr(tmpdb, '/') = 0;
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdb);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdb);
  }
  ob_ctx_free(ctx);
  /* fails when the predictor could not be evaluated at all */
  return mm.n > 0 && (mw.n > 0 || no_folds) ? 0 : 1;
}
