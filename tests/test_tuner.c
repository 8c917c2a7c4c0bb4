/* test_tuner.c: the tuners and the tuning loop.
 * Tuners are driven without measuring: a synthetic cost over the config
 * space of a real task (dense for the small cases, a ResNet conv2d layer
 * whose template filter rejects some configs for the large ones) whose
 * optimum is known, fed back through next_batch / update. Checked: each of
 * random, gridsearch and ga finds the optimum; nothing is ever proposed
 * twice, nor a config the filter rejects, nor one reported through update
 * first (resume); random and ga exhaust the space exactly, then has_next
 * is false; gridsearch goes in index order; an unknown name is refused with
 * the known names listed.
 * The loop: trial budget 0, early stopping and the progress line with a
 * synthetic measure_fn; then a real dense task, 12 trials into a temporary
 * database with an AutoTVM log, run twice: the second run measures nothing,
 * resumes all 12 and appends nothing to the log; a larger budget measures
 * only the difference. The search (ob_search_best): a slow window over the
 * fastest config's one re-measurement loses it; three rounds keep it. Last, with a compiler wrapper that logs its CPU set
 * and time span: no compiler ran on the measuring core while a batch was
 * measured, and some ran on the free core meanwhile. */
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "opbench/db.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static char dir[64];

static ob_task *make_task(const char *op, const char *shape, int pad) {
  ob_workload wl;
  ob_task *t = NULL;
  OB_ASSERT(ob_workload_parse(ctx, op, shape, &wl) == OB_OK);
  if (pad) OB_ASSERT(ob_workload_set(ctx, &wl, "pad", pad) == OB_OK);
  OB_ASSERT(ob_task_new(ctx, &wl, NULL, NULL, &t) == OB_OK);
  return t;
}

/* ---- synthetic cost: a unimodal function of the knob choices ---------------- */

typedef struct synth {
  const ob_space *s;
  int32_t target[OB_MAX_KNOBS];
  uint64_t target_index;
} synth;

/* The target is a valid config away from the edges of the space: the
 * valid index nearest to 61.8% of it. */
static synth synth_new(const ob_space *s) {
  synth y = {.s = s};
  uint64_t len = ob_space_len(s), i = (uint64_t)((double)len * 0.618);
  while (!ob_space_is_valid(s, i)) i = (i + 1) % len;
  ob_config c;
  OB_ASSERT(ob_space_get(ctx, s, i, &c) == OB_OK);
  memcpy(y.target, c.choice, sizeof y.target);
  y.target_index = i;
  return y;
}

static double synth_gflops(const synth *y, const ob_config *c) {
  double d = 0;
  for (int k = 0; k < ob_space_num_knobs(y->s); k++) {
    double diff = c->choice[k] - y->target[k];
    d += diff * diff;
  }
  return 100.0 / (1.0 + d);
}

static void synth_results(const synth *y, const ob_config *c, int n, ob_measure_result *r) {
  for (int i = 0; i < n; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].gflops = synth_gflops(y, &c[i]);
    r[i].timing.median_s = r[i].timing.mean_s = 1.0 / r[i].gflops;
  }
}

static int64_t count_valid(const ob_space *s) {
  int64_t n = 0;
  for (uint64_t i = 0; i < ob_space_len(s); i++) n += ob_space_is_valid(s, i);
  return n;
}

typedef struct drive_out {
  int64_t proposed;
  bool repeat, invalid, reported_again, index_order;
  uint64_t best_index;
  int64_t best_at; /* 1-based proposal at which the optimum came */
  bool exhausted;  /* has_next false at the end */
} drive_out;

/* Drives a tuner for at most `budget` proposals in batches of `bs`, feeding
 * results back one batch late (as the loop does). `reported` configs are
 * fed through update first and must never be proposed. */
static drive_out drive(ob_tuner *t, const synth *y, int64_t budget, int bs,
                       const uint64_t *reported, int nreported) {
  drive_out o = {.index_order = true};
  const ob_space *s = y->s;
  uint64_t len = ob_space_len(s);
  unsigned char *seen = calloc(len, 1);
  ob_config *cur = calloc((size_t)bs, sizeof *cur), *prev = calloc((size_t)bs, sizeof *prev);
  ob_measure_result *res = calloc((size_t)bs > (size_t)nreported ? (size_t)bs : (size_t)nreported + 1,
                                  sizeof *res);
  ob_config *rep = calloc((size_t)nreported + 1, sizeof *rep);
  for (int i = 0; i < nreported; i++) {
    OB_ASSERT(ob_space_get(ctx, s, reported[i], &rep[i]) == OB_OK);
    seen[reported[i]] = 2;
  }
  if (nreported) {
    synth_results(y, rep, nreported, res);
    CHECK(ob_tuner_update(t, rep, res, nreported) == OB_OK);
  }
  int nprev = 0;
  double best = -1;
  uint64_t last = 0;
  for (;;) {
    int want = bs;
    if (o.proposed + want > budget) want = (int)(budget - o.proposed);
    int got = 0;
    if (want > 0 && ob_tuner_has_next(t)) CHECK(ob_tuner_next_batch(t, want, cur, &got) == OB_OK);
    for (int i = 0; i < got; i++) {
      uint64_t idx = cur[i].index;
      if (idx >= len || !ob_space_is_valid(s, idx)) {
        o.invalid = true;
        continue;
      }
      if (seen[idx] == 2) o.reported_again = true;
      else if (seen[idx]) o.repeat = true;
      seen[idx] = 1;
      if (o.proposed > 0 && idx <= last) o.index_order = false;
      last = idx;
      o.proposed++;
      double g = synth_gflops(y, &cur[i]);
      if (g > best) {
        best = g;
        o.best_index = idx;
      }
      if (idx == y->target_index && !o.best_at) o.best_at = o.proposed;
    }
    if (nprev) {
      synth_results(y, prev, nprev, res);
      CHECK(ob_tuner_update(t, prev, res, nprev) == OB_OK);
    }
    if (got == 0 && nprev == 0) break;
    memcpy(prev, cur, sizeof *cur * (size_t)got);
    nprev = got;
  }
  o.exhausted = !ob_tuner_has_next(t);
  free(seen);
  free(cur);
  free(prev);
  free(res);
  free(rep);
  return o;
}

static ob_tuner *new_tuner(const char *name, ob_task *task, uint64_t seed) {
  ob_tuner_opts to = {.seed = seed};
  ob_tuner *t = NULL;
  ob_status st = ob_tuner_new(ctx, name, task, &to, &t);
  CHECK_MSG(st == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  return t;
}

static void test_small_space(void) {
  ob_task *task = make_task("dense", "M=8,N=64,K=64", 0);
  const ob_space *s = ob_task_space(task);
  synth y = synth_new(s);
  int64_t nvalid = count_valid(s);
  const char *names[] = {"random", "gridsearch", "ga"};
  for (int k = 0; k < 3; k++) {
    ob_tuner *t = new_tuner(names[k], task, 7);
    if (!t) continue;
    CHECK(!strcmp(ob_tuner_name(t), names[k]));
    CHECK(ob_tuner_has_next(t));
    drive_out o = drive(t, &y, 1 << 20, 5, NULL, 0);
    CHECK_MSG(o.proposed == nvalid, "%s proposed %lld of %lld", names[k], (long long)o.proposed,
              (long long)nvalid);
    CHECK_MSG(!o.repeat && !o.invalid, "%s", names[k]);
    CHECK_MSG(o.best_index == y.target_index, "%s found %llu, optimum %llu", names[k],
              (unsigned long long)o.best_index, (unsigned long long)y.target_index);
    CHECK_MSG(o.exhausted, "%s still has_next after the whole space", names[k]);
    if (!strcmp(names[k], "gridsearch")) CHECK(o.index_order);
    ob_tuner_free(t);
  }
  ob_task_free(task);
}

/* ResNet-18's second conv2d layer: 2688 configs, some rejected by the
 * template's filter. */
static void test_large_space(void) {
  ob_task *task = make_task("conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3", 1);
  const ob_space *s = ob_task_space(task);
  synth y = synth_new(s);
  int64_t nvalid = count_valid(s);
  printf("conv2d space: %llu configs, %lld pass the filter, optimum #%llu\n",
         (unsigned long long)ob_space_len(s), (long long)nvalid,
         (unsigned long long)y.target_index);
  CHECK(nvalid > 0 && nvalid <= (int64_t)ob_space_len(s));

  /* random: exhausts the valid configs exactly, in a seed-dependent order */
  ob_tuner *t = new_tuner("random", task, 1);
  drive_out o = drive(t, &y, 1 << 20, 16, NULL, 0);
  CHECK(o.proposed == nvalid && !o.repeat && !o.invalid && o.exhausted);
  CHECK(o.best_index == y.target_index);
  CHECK(!o.index_order);
  ob_tuner_free(t);
  ob_config a[8], b[8];
  int ga_ = 0, gb = 0;
  ob_tuner *t1 = new_tuner("random", task, 1), *t2 = new_tuner("random", task, 2);
  CHECK(ob_tuner_next_batch(t1, 8, a, &ga_) == OB_OK && ga_ == 8);
  CHECK(ob_tuner_next_batch(t2, 8, b, &gb) == OB_OK && gb == 8);
  bool same = true;
  for (int i = 0; i < 8; i++) same = same && a[i].index == b[i].index;
  CHECK_MSG(!same, "seeds 1 and 2 gave the same random order");
  ob_tuner_free(t1);
  ob_tuner_free(t2);

  /* gridsearch: index order, exactly the valid configs */
  t = new_tuner("gridsearch", task, 1);
  o = drive(t, &y, 1 << 20, 16, NULL, 0);
  CHECK(o.proposed == nvalid && o.index_order && !o.invalid && o.exhausted);
  ob_tuner_free(t);

  /* ga: finds the optimum of a unimodal cost well before a random order
   * would (median over seeds), never repeats, and exhausts the space */
  int64_t at[3];
  for (int seed = 1; seed <= 3; seed++) {
    t = new_tuner("ga", task, (uint64_t)seed);
    o = drive(t, &y, 1 << 20, 16, NULL, 0);
    CHECK_MSG(o.proposed == nvalid && !o.repeat && !o.invalid && o.exhausted,
              "ga seed %d: %lld of %lld, repeat %d, invalid %d", seed, (long long)o.proposed,
              (long long)nvalid, o.repeat, o.invalid);
    CHECK(o.best_index == y.target_index);
    at[seed - 1] = o.best_at;
    ob_tuner_free(t);
  }
  int64_t lo = at[0] < at[1] ? at[0] : at[1], hi = at[0] < at[1] ? at[1] : at[0];
  int64_t med = at[2] < lo ? lo : at[2] > hi ? hi : at[2];
  printf("ga reached the optimum at trials %lld, %lld, %lld (space %lld)\n", (long long)at[0],
         (long long)at[1], (long long)at[2], (long long)nvalid);
  CHECK_MSG(med > 0 && med < nvalid / 4, "ga median %lld trials", (long long)med);

  /* configs reported through update first are never proposed */
  uint64_t rep[40];
  int nrep = 0;
  for (uint64_t i = 0; i < ob_space_len(s) && nrep < 40; i += 61)
    if (ob_space_is_valid(s, i)) rep[nrep++] = i;
  const char *names[] = {"random", "gridsearch", "ga"};
  for (int k = 0; k < 3; k++) {
    t = new_tuner(names[k], task, 3);
    o = drive(t, &y, 1 << 20, 16, rep, nrep);
    CHECK_MSG(!o.reported_again && !o.repeat && o.proposed == nvalid - nrep && o.exhausted,
              "%s after update: reported again %d, proposed %lld of %lld", names[k],
              o.reported_again, (long long)o.proposed, (long long)(nvalid - nrep));
    ob_tuner_free(t);
  }
  ob_task_free(task);
}

static void test_registry(void) {
  ob_task *task = make_task("dense", "M=4,N=32,K=32", 0);
  ob_tuner *t = (ob_tuner *)1;
  ob_status st = ob_tuner_new(ctx, "annealing", task, NULL, &t);
  CHECK(st == OB_ERR_NOT_FOUND && t == NULL);
  const char *msg = ob_ctx_errmsg(ctx);
  CHECK(strstr(msg, "annealing") && strstr(msg, "random") && strstr(msg, "gridsearch") &&
        strstr(msg, "ga") && strstr(msg, "xgb-rank") && strstr(msg, "xgb_curve"));
  CHECK(ob_tuner_count() == 8);
  bool has_ga = false;
  for (int i = 0; i < ob_tuner_count(); i++) has_ga = has_ga || !strcmp(ob_tuner_name_at(i), "ga");
  CHECK(has_ga && ob_tuner_name_at(ob_tuner_count()) == NULL);
  /* ga options: a population larger than the space is cut to it */
  ob_tuner_opts to = {.seed = 1, .pop_size = 1000, .elite_num = 50, .mutation_prob = 0.5};
  CHECK(ob_tuner_new(ctx, "ga", task, &to, &t) == OB_OK);
  ob_config c[256];
  int got = 0;
  CHECK(ob_tuner_next_batch(t, 256, c, &got) == OB_OK);
  CHECK(got == (int)count_valid(ob_task_space(task)) && !ob_tuner_has_next(t));
  ob_tuner_free(t);
  ob_tuner_free(NULL);
  ob_task_free(task);
}

/* ---- the loop with a synthetic measurement ------------------------------------ */

typedef struct synth_run {
  synth y;
  int calls;
  int last_trial;
  bool order_ok;
  uint64_t first_index; /* trial 1's config */
  uint64_t next_index[3]; /* trials 2 to 4 */
} synth_run;

static ob_status synth_measure(void *user, ob_task *task, const ob_config *cfgs, int n,
                               ob_measure_result *res) {
  (void)task;
  synth_run *r = user;
  r->calls++;
  synth_results(&r->y, cfgs, n, res);
  return OB_OK;
}

static bool synth_trial(void *user, int trial, const ob_config *cfg, const ob_measure_result *res,
                        bool resumed) {
  (void)res;
  (void)resumed;
  synth_run *r = user;
  if (trial == 1) r->first_index = cfg->index;
  if (trial >= 2 && trial <= 4) r->next_index[trial - 2] = cfg->index;
  if (trial != r->last_trial + 1) r->order_ok = false;
  r->last_trial = trial;
  return true;
}

static void test_loop_synthetic(void) {
  ob_task *task = make_task("conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3", 1);
  synth_run sr = {.y = synth_new(ob_task_space(task)), .order_ok = true};
  ob_tuner *t = new_tuner("gridsearch", task, 1);
  ob_tune_opts o = ob_tune_opts_default();
  o.measure_fn = synth_measure;
  o.trial_fn = synth_trial;
  o.user = &sr;
  ob_tune_stats s;

  o.n_trial = 0;
  CHECK(ob_tune_task(ctx, task, t, NULL, NULL, &o, &s) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "a trial budget of 0") != NULL);

  /* gridsearch walks away from a first best: early stopping after 40 */
  FILE *prog = tmpfile();
  o.n_trial = 1000;
  o.early_stopping = 40;
  o.batch = 10;
  o.progress = prog;
  o.task_index = 3;
  o.ntasks = 12;
  CHECK(ob_tune_task(ctx, task, t, NULL, NULL, &o, &s) == OB_OK);
  CHECK_MSG(s.early_stopped && s.trials < 1000 && s.trials - s.best_trial >= 40 &&
                s.trials - s.best_trial < 40 + 10,
            "trials %d, best at %d", s.trials, s.best_trial);
  /* the default is trial 1 and re-measured beside the 5 best, whatever
   * gridsearch proposes (it starts at index 0) */
  uint64_t dflt = ob_task_default_config(task).index;
  CHECK_MSG(sr.first_index == dflt && dflt != 0, "trial 1: config %llu, default %llu",
            (unsigned long long)sr.first_index, (unsigned long long)dflt);
  /* then the default's channel-block variants (the blocks of half, one and
   * two vectors but the default's own: a model's plan aligns its nodes on
   * them), same schedule, another tile_ic */
  ob_config dc = ob_task_default_config(task), var[3];
  int nv = ob_task_block_variants(task, &dc, var, 3);
  CHECK_MSG(nv >= 2, "%d block variants of the default", nv);
  for (int i = 0; i < nv; i++) {
    CHECK_MSG(sr.next_index[i] == var[i].index, "trial %d: config %llu, variant %llu", i + 2,
              (unsigned long long)sr.next_index[i], (unsigned long long)var[i].index);
    int64_t fd[2], fv[2];
    ob_config_split(&dc, "tile_ic", fd);
    ob_config_split(&var[i], "tile_ic", fv);
    CHECK(fv[1] != fd[1] && ob_task_arg_layout(task, &var[i], 0).block == fv[1]);
    ob_config_split(&dc, "tile_oc", fd);
    ob_config_split(&var[i], "tile_oc", fv);
    CHECK(fv[1] == fd[1]);
  }
  CHECK(s.measured == s.trials && s.resumed == 0 && s.confirmed && s.default_confirmed);
  CHECK(s.confirm_candidates == 5 || s.confirm_candidates == 6); /* 6: the default ranked lower */
  /* depthwise: tile_c, its block in and out; dense: none (plain data) */
  ob_task *dw = make_task("depthwise_conv2d", "N=1,C=144,H=56,W=56,R=3,S=3", 1);
  ob_task *de = make_task("dense", "M=1,N=1000,K=512", 0);
  if (dw && de) {
    ob_config d0 = ob_task_default_config(dw), dv[3];
    int n = ob_task_block_variants(dw, &d0, dv, 3);
    CHECK_MSG(n >= 1, "%d depthwise block variants", n);
    for (int i = 0; i < n; i++)
      CHECK(ob_space_is_valid(ob_task_space(dw), dv[i].index) &&
            ob_task_arg_layout(dw, &dv[i], 0).block != ob_task_arg_layout(dw, &d0, 0).block &&
            144 % ob_task_arg_layout(dw, &dv[i], 0).block == 0);
    ob_config e0 = ob_task_default_config(de);
    CHECK(ob_task_block_variants(de, &e0, dv, 3) == 0);
  }
  ob_task_free(dw);
  ob_task_free(de);
  CHECK(sr.order_ok && sr.last_trial == s.trials);
  rewind(prog);
  char line[256];
  int nlines = 0, a = 0, b = 0, done = 0, total = 0;
  bool form = true;
  while (fgets(line, sizeof line, prog)) {
    nlines++;
    double cur, best, secs;
    form = form && sscanf(line, "[Task %d/%d] Current/Best: %lf/%lf GFLOPS | Progress: (%d/%d) | %lf s",
                          &a, &b, &cur, &best, &done, &total, &secs) == 7;
  }
  CHECK(form && nlines >= 2 && a == 3 && b == 12 && done == s.trials && total == 1000);
  fclose(prog);
  ob_tune_progress p = {.task_index = 1, .ntasks = 12, .trials = 544, .n_trial = 1000,
                        .cur_gflops = 22.37, .best_gflops = 52.19, .elapsed_s = 406.59};
  ob_tune_progress_format(&p, line, sizeof line);
  CHECK(!strcmp(line, "[Task 1/12] Current/Best:   22.37/  52.19 GFLOPS | Progress: (544/1000) | 406.59 s"));
  ob_tuner_free(t);

  /* the budget counts; a spent space ends the loop */
  ob_task *small = make_task("dense", "M=8,N=64,K=64", 0);
  sr = (synth_run){.y = synth_new(ob_task_space(small)), .order_ok = true};
  t = new_tuner("random", small, 2);
  o = ob_tune_opts_default();
  o.measure_fn = synth_measure;
  o.user = &sr;
  o.n_trial = 1000;
  o.confirm_top = -1;
  CHECK(ob_tune_task(ctx, small, t, NULL, NULL, &o, &s) == OB_OK);
  CHECK(s.exhausted && s.trials == (int)count_valid(ob_task_space(small)) && !s.confirmed);
  CHECK(s.best.index == sr.y.target_index);
  ob_tuner_free(t);
  ob_task_free(small);
  ob_task_free(task);
}

/* ---- the loop on a real task, with a database ------------------------------------ */

/* ---- the search's re-measurement in rounds --------------------------------------
 * A measurer over the synthetic cost whose first full-protocol batch hits a
 * slow window: the fastest config reads 10x its cost there. One round of
 * re-measurement then keeps a slower config; three rounds, each config
 * judged by its fastest, keep the fastest at its true cost. */
typedef struct window_m {
  synth y;
  int full_calls, quick_calls;
  uint64_t slow_index; /* the config the window hits */
} window_m;

static ob_status window_measure(void *self, ob_ctx *c, ob_task *task, const ob_measure_opts *opts,
                                const ob_config *cfgs, int n, ob_measure_result *out) {
  (void)c;
  (void)task;
  window_m *w = self;
  bool quick = opts->timing.max_cv == 0; /* the search's short runs */
  synth_results(&w->y, cfgs, n, out);
  if (quick) {
    w->quick_calls++;
    return OB_OK;
  }
  if (w->full_calls++ == 0)
    for (int i = 0; i < n; i++)
      if (cfgs[i].index == w->slow_index) out[i].timing.median_s *= 10;
  return OB_OK;
}

static ob_status window_check(void *self, ob_ctx *c, ob_task *task) {
  (void)self;
  (void)c;
  (void)task;
  return OB_OK;
}

static ob_status window_host(void *self, ob_ctx *c, ob_task *task, ob_host *out, char *cc, size_t cc_cap,
                             char *cc_version, size_t version_cap) {
  (void)self;
  (void)c;
  (void)task;
  memset(out, 0, sizeof *out);
  if (cc_cap) cc[0] = 0;
  if (version_cap) cc_version[0] = 0;
  return OB_OK;
}

static void window_resources(void *self, const ob_measure_opts *mo, char *buf, size_t cap) {
  (void)self;
  (void)mo;
  if (cap) buf[0] = 0;
}

static void test_search_rounds(void) {
  ob_task *task = make_task("conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3", 1);
  const ob_space *sp = ob_task_space(task);
  ob_measure_opts mo = ob_measure_opts_default();
  mo.timing.repeat = 5;
  mo.timing.max_cv = 5;
  for (int rounds = 1; rounds <= 3; rounds += 2) {
    window_m w = {.y = synth_new(sp)};
    /* exhaustive over a budget that holds the whole space is too slow
     * here: a random sample, then the window hits whatever came first */
    ob_search_opts so = {.budget = 24, .seed = 7, .rounds = rounds};
    ob_search_result r0;
    ob_measurer_i vt = {.name = "window", .measure = window_measure, .check = window_check,
                       .host = window_host, .resources = window_resources};
    ob_measurer *m = NULL;
    OB_ASSERT(ob_measurer_new(ctx, &vt, &w, &m) == OB_OK);
    w.slow_index = UINT64_MAX; /* first pass: no window, to learn the fastest */
    CHECK(ob_search_best(ctx, task, m, &mo, &so, &r0) == OB_OK);
    uint64_t fastest = r0.best.index;
    double true_cost = r0.best_result.timing.median_s;
    w.slow_index = fastest;
    w.full_calls = 0;
    ob_search_result r;
    CHECK(ob_search_best(ctx, task, m, &mo, &so, &r) == OB_OK);
    CHECK(w.full_calls == rounds);
    CHECK(r.default_remeasured);
    if (rounds == 1) CHECK(r.best.index != fastest); /* the window decided */
    else CHECK(r.best.index == fastest && r.best_result.timing.median_s == true_cost);
    ob_measurer_free(m);
  }
  ob_task_free(task);
}

/* The confirmation in rounds: the fastest finalist, made 10x slow in its
 * first re-measurement (a slow phase of the host), loses the pick with one
 * round and keeps it, at its true cost, with three. */
typedef struct confirm_window {
  synth y;
  int n_trial, seen;
  uint64_t slow; /* the config hit once after the trials; UINT64_MAX: none */
  bool hit;
} confirm_window;

static ob_status confirm_window_measure(void *user, ob_task *task, const ob_config *cfgs, int n,
                                        ob_measure_result *res) {
  (void)task;
  confirm_window *w = user;
  synth_results(&w->y, cfgs, n, res);
  for (int i = 0; i < n; i++, w->seen++)
    if (w->seen >= w->n_trial && cfgs[i].index == w->slow && !w->hit) {
      res[i].timing.median_s *= 10;
      res[i].gflops /= 10;
      w->hit = true;
    }
  return OB_OK;
}

static void test_confirm_rounds(void) {
  ob_task *task = make_task("conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3", 1);
  uint64_t fastest = UINT64_MAX;
  double true_cost = 0;
  for (int pass = 0; pass < 3; pass++) {
    int rounds = pass == 2 ? 3 : 1;
    confirm_window w = {.y = synth_new(ob_task_space(task)), .n_trial = 24, .slow = pass ? fastest : UINT64_MAX};
    ob_tuner *t = new_tuner("random", task, 5);
    ob_tune_opts o = ob_tune_opts_default();
    o.measure_fn = confirm_window_measure;
    o.user = &w;
    o.n_trial = w.n_trial;
    o.batch = 8;
    o.confirm_rounds = rounds;
    ob_tune_stats s;
    CHECK(ob_tune_task(ctx, task, t, NULL, NULL, &o, &s) == OB_OK);
    CHECK(s.confirmed && s.confirm_candidates >= 5);
    CHECK_MSG(w.seen == w.n_trial + s.confirm_candidates * rounds, "measured %d", w.seen);
    if (pass == 0) {
      fastest = s.confirmed_cfg.index; /* no window: the true pick */
      true_cost = s.confirmed_result.timing.median_s;
    } else if (pass == 1) {
      CHECK(w.hit && s.confirmed_cfg.index != fastest); /* the window decided */
    } else {
      CHECK(w.hit && s.confirmed_cfg.index == fastest && s.confirmed_result.timing.median_s == true_cost);
    }
    ob_tuner_free(t);
  }
  ob_task_free(task);
}

static int64_t db_count(const char *path, const char *table) {
  ob_db *db = NULL;
  int64_t n = -1;
  if (ob_db_open(ctx, path, OB_DB_READONLY, &db) != OB_OK) return -1;
  ob_db_records *r = NULL;
  if (!strcmp(table, "measurements") && ob_db_query(db, NULL, &r) == OB_OK) n = r->n;
  ob_db_records_free(r);
  ob_db_close(db);
  return n;
}

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

static ob_status tune_dense(const char *dbpath, const char *log, const char *tuner, int n_trial,
                            bool reconfirm, ob_tune_stats *s) {
  ob_task *task = make_task("dense", "M=8,N=64,K=64", 0);
  ob_tuner *t = new_tuner(tuner, task, 5);
  ob_runner *r = NULL;
  ob_db *db = NULL;
  ob_measurer *m = NULL;
  ob_status st = ob_runner_new(ctx, &r);
  if (!st) st = ob_measurer_local_new(ctx, r, &m);
  if (!st) st = ob_db_open(ctx, dbpath, 0, &db);
  ob_tune_opts o = ob_tune_opts_default();
  o.measure.build.timeout_s = o.measure.timing.timeout_s = OB_TEST_TIMEOUT_S;
  o.n_trial = n_trial;
  o.batch = 5;
  o.log_path = log;
  o.reconfirm = reconfirm;
  if (!st) st = ob_tune_task(ctx, task, t, m, db, &o, s);
  if (st) fprintf(stderr, "tune_dense: %s\n", ob_ctx_errmsg(ctx));
  ob_db_close(db);
  ob_measurer_free(m);
  ob_runner_free(r);
  ob_tuner_free(t);
  ob_task_free(task);
  return st;
}

static void test_loop_real(void) {
  char dbpath[128], log[128];
  snprintf(dbpath, sizeof dbpath, "%s/t.db", dir);
  snprintf(log, sizeof log, "%s/autotvm.json", dir);
  ob_tune_stats s;
  CHECK(tune_dense(dbpath, log, "random", 12, false, &s) == OB_OK);
  CHECK_MSG(s.trials == 12 && s.measured == 12 && s.resumed == 0, "trials %d measured %d",
            s.trials, s.measured);
  CHECK(s.best_trial > 0 && s.best_result.gflops > 0);
  CHECK(s.confirmed && s.default_confirmed && s.confirm_candidates >= 5 && s.confirm_candidates <= 6 &&
        s.confirmed_result.timing.median_s > 0);
  CHECK(db_count(dbpath, "measurements") == 12);
  CHECK(count_lines(log) == 12);

  /* the same arguments again: nothing is measured, the log is complete */
  ob_tune_stats s2;
  CHECK(tune_dense(dbpath, log, "random", 12, false, &s2) == OB_OK);
  CHECK_MSG(s2.trials == 12 && s2.measured == 0 && s2.resumed == 12, "trials %d measured %d",
            s2.trials, s2.measured);
  CHECK(s2.confirmed && s2.confirmed_cfg.index == s.confirmed_cfg.index);
  CHECK(db_count(dbpath, "measurements") == 12);
  CHECK(count_lines(log) == 12 && s2.log_lines == 0);
  CHECK(s2.confirmed_result.timing.repeat == 0); /* the stored verdict, not measured */

  /* reconfirm: nothing new is searched, the finalists are measured again */
  ob_tune_stats s4;
  CHECK(tune_dense(dbpath, log, "random", 12, true, &s4) == OB_OK);
  CHECK_MSG(s4.trials == 12 && s4.measured == 0 && s4.resumed == 12, "trials %d measured %d", s4.trials,
            s4.measured);
  CHECK(s4.confirmed && s4.default_confirmed && s4.confirm_candidates >= 5 && s4.confirmed_result.timing.repeat > 0);
  CHECK(db_count(dbpath, "measurements") == 12);

  /* a larger budget measures only the difference, with another tuner */
  ob_tune_stats s3;
  CHECK(tune_dense(dbpath, log, "ga", 20, false, &s3) == OB_OK);
  CHECK_MSG(s3.trials == 20 && s3.measured == 8 && s3.resumed == 12, "trials %d measured %d",
            s3.trials, s3.measured);
  CHECK(db_count(dbpath, "measurements") == 20);
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, dbpath, OB_DB_READONLY, &db) == OB_OK);
  CHECK(ob_db_check(db) == OB_OK);
  ob_db_close(db);
}

/* ---- no compiler on a measuring core while it measures ------------------------------ */

typedef struct window_log {
  int n;
  double t[256], run[256]; /* when each trial's result came, its run time */
} window_log;

static double now_real(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool log_trial(void *user, int trial, const ob_config *cfg, const ob_measure_result *res,
                      bool resumed) {
  (void)trial;
  (void)cfg;
  (void)resumed;
  window_log *w = user;
  if (w->n < 256) {
    w->t[w->n] = now_real();
    w->run[w->n++] = res->run_s;
  }
  return true;
}

/* Compiles through a wrapper that logs each compiler's time span and CPU
 * set; then no compiler may have run on core 0 (the measuring core) while
 * a batch was being measured there, and some must have run on a free core
 * meanwhile (the overlap is real). */
static void test_overlap_affinity(void) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) || CPU_COUNT(&allowed) < 2 ||
      !CPU_ISSET(0, &allowed)) {
    CHECK_SKIP("overlap test: needs core 0 and another core");
    return;
  }
  char wrap[128], logp[128], cache[128];
  snprintf(wrap, sizeof wrap, "%s/wrapcc", dir);
  snprintf(logp, sizeof logp, "%s/cc.log", dir);
  snprintf(cache, sizeof cache, "%s/kc-overlap", dir);
  FILE *f = fopen(wrap, "w");
  OB_ASSERT(f);
  fprintf(f,
          "#!/bin/sh\n"
          "s=$(date +%%s.%%N)\n"
          "c=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)\n"
          "cc \"$@\"\n"
          "rc=$?\n"
          "echo \"$s $(date +%%s.%%N) $c\" >> %s\n"
          "exit $rc\n",
          logp);
  fclose(f);
  chmod(wrap, 0755);

  ob_task *task = make_task("conv2d", "N=1,C=32,H=28,W=28,K=32,R=3,S=3", 1);
  ob_tuner *t = new_tuner("random", task, 9);
  ob_runner *r = NULL;
  CHECK(ob_runner_new(ctx, &r) == OB_OK);
  ob_measurer *m = NULL;
  CHECK(ob_measurer_local_new(ctx, r, &m) == OB_OK);
  window_log w = {0};
  ob_tune_opts o = ob_tune_opts_default();
  o.n_trial = 24;
  o.batch = 4;
  o.confirm_top = -1;
  o.search_repeat = 10; /* measurements long enough to overlap */
  o.measure.timing.number = 8;
  o.measure.build.timeout_s = o.measure.timing.timeout_s = OB_TEST_TIMEOUT_S;
  o.measure.build.cc = wrap;
  o.measure.build.cache_dir = cache;
  o.trial_fn = log_trial;
  o.user = &w;
  ob_tune_stats s;
  ob_status st = ob_tune_task(ctx, task, t, m, NULL, &o, &s);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  CHECK(w.n == 24);
  f = fopen(logp, "r");
  CHECK(f != NULL);
  int ncc = 0, on0_during = 0, free_during = 0, wide = 0;
  double a, b;
  char cpus[64];
  while (f && fscanf(f, "%lf %lf %63s", &a, &b, cpus) == 3) {
    ncc++;
    if (strchr(cpus, ',') || strchr(cpus, '-')) wide++;
    for (int k = 0; k < w.n; k += 4) { /* one window per batch of 4 */
      int last = k + 3 < w.n ? k + 3 : w.n - 1;
      double lo = w.t[k] - w.run[k] + 1e-3, hi = w.t[last] - 1e-3;
      if (a < hi && b > lo) {
        if (!strcmp(cpus, "0")) on0_during++;
        else free_during++;
      }
    }
  }
  if (f) fclose(f);
  printf("overlap: %d compiler runs, %d during a measurement on a free core, %d on core 0\n",
         ncc, free_during, on0_during);
  CHECK(ncc >= 24 && wide == 0 && on0_during == 0 && free_during > 0);
  ob_measurer_free(m);
  ob_runner_free(r);
  ob_tuner_free(t);
  ob_task_free(task);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(p);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  snprintf(dir, sizeof dir, "/tmp/obtuner-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  test_registry();
  test_small_space();
  test_large_space();
  test_loop_synthetic();
  test_search_rounds();
  test_confirm_rounds();
  test_loop_real();
  test_overlap_affinity();
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
