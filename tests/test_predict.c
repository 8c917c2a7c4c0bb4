/* test_predict: the predict module on a synthetic database (no kernel is
 * built or timed): the dataset from records and profile points, held-out
 * splits, training and predicting, the model file (round trip, corrupt,
 * foreign schema, not a model, a record count out of range), an operator
 * kind without records, the metrics on hand-made predictions,
 * correlations, the turnaround, the interference model and the placement
 * game on a game solved by hand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opbench/predict.h"
#include "opbench/runtime.h"
#include "opbench/sched.h"
#include "check.h"

static char dir[64];
static ob_ctx *ctx;
static const char *TARGET = "c -isa=avx2";

static const char *path_in(const char *name) {
  static char buf[4][160];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

/* synthetic latency: FLOPs at 4 GFLOP/s per thread^0.8, plus 2 us */
static double synth(double flops, int threads) { return flops / (4e9 * pow(threads, 0.8)) + 2e-6; }

static int nworkloads;
static char wkeys[32][256];
static double wflops[32], wbytes[32];

static void make_db(const char *path) {
  ob_db *db = NULL;
  ob_target *t = NULL;
  CHECK(ob_db_open(ctx, path, 0, &db) == OB_OK);
  CHECK(ob_target_parse(ctx, TARGET, &t) == OB_OK);
  if (!db || !t) return;
  const int sizes[] = {32, 64, 128, 256};
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      ob_workload wl;
      char shape[64];
      snprintf(shape, sizeof shape, "M=8,N=%d,K=%d", sizes[a], sizes[b]);
      CHECK(ob_workload_parse(ctx, "dense", shape, &wl) == OB_OK);
      CHECK(ob_workload_store(db, &wl) == OB_OK);
      ob_task *task = NULL;
      CHECK(ob_task_new(ctx, &wl, NULL, t, &task) == OB_OK);
      if (!task) continue;
      int w = nworkloads++;
      ob_workload_key(&wl, wkeys[w], sizeof wkeys[w]);
      wflops[w] = ob_workload_flops(&wl);
      wbytes[w] = ob_predict_workload_bytes(&wl);
      const ob_space *s = ob_task_space(task);
      int got = 0;
      for (uint64_t idx = 0; idx < ob_space_len(s) && got < 4; idx++) {
        if (!ob_space_is_valid(s, idx)) continue;
        got++;
        for (int th = 1; th <= 2; th++) {
          char res[64];
          snprintf(res, sizeof res, "threads=%d;cores=%s", th, th == 1 ? "0" : "0,1");
          ob_db_record r;
          memset(&r, 0, sizeof r);
          r.host = "h1";
          r.workload = wkeys[w];
          r.target = ob_target_str(t);
          r.resources = res;
          r.tmpl = ob_task_template(task);
          r.config_index = idx;
          r.nthreads = th;
          r.cores = th == 1 ? "0" : "0,1";
          double sec = synth(wflops[w], th) * (1 + 0.02 * (double)got);
          r.timing.ncosts = 1;
          r.timing.costs[0] = sec;
          r.timing.median_s = r.timing.mean_s = sec;
          r.timing.cv = got == 4 && th == 2 ? 0.3 : 0.01; /* one disturbed point per workload */
          r.timing.number = 1;
          r.timing.repeat = 1;
          r.timing.min_repeat_ms = 1;
          r.build_s = r.run_s = 0.1;
          CHECK(ob_db_put_measurement(db, &r, 0, NULL) == OB_OK);
        }
      }
      ob_task_free(task);
    }
  /* co-run points: A beside B, stream (disjoint cores) and full (shared) */
  for (int a = 0; a < nworkloads; a += 3)
    for (int b = 1; b < nworkloads; b += 4) {
      if (a == b) continue;
      for (int full = 0; full <= 1; full++) {
        ob_db_profile p;
        memset(&p, 0, sizeof p);
        double alone = synth(wflops[a], 1);
        double slow = full ? 1.9 + 0.1 * (wbytes[b] > 40000) : 1.05 + 0.05 * (wbytes[b] > 40000);
        p.key = (ob_db_profile_key){.host = "h1", .workload = wkeys[a], .target = ob_target_str(t),
                                    .tmpl = "dense_pack.x86", .config_index = 0,
                                    .resources = "threads=1;cores=0", .corun_workload = wkeys[b],
                                    .corun_mode = full ? "full" : "stream"};
        p.nthreads = 1;
        p.cores = "0";
        p.corun_cores = full ? "0" : "1";
        p.sweep = "corun";
        p.timing.ncosts = 1;
        p.timing.costs[0] = p.timing.median_s = p.timing.mean_s = alone * slow;
        p.timing.number = 1;
        p.timing.repeat = 1;
        p.timing.min_repeat_ms = 1;
        p.alone_s = alone;
        p.slowdown = slow;
        p.flops = wflops[a];
        p.bytes = wbytes[a];
        p.gflops = p.intensity = p.peak_gflops = p.peak_pct = p.bandwidth_gbps = NAN;
        p.corun_partner_s = p.pressure_gbps = p.build_s = NAN;
        for (int c = 0; c < OB_COUNTER_COUNT; c++) p.counters[c] = NAN;
        CHECK_MSG(ob_db_put_profile(db, &p, 0, NULL) == OB_OK, "%s", ob_ctx_errmsg(ctx));
      }
    }
  ob_target_free(t);
  ob_db_close(db);
}

static void test_train_and_file(void) {
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, path_in("p.db"), OB_DB_READONLY, &db) == OB_OK);
  ob_predict_dataset *d = NULL;
  CHECK_MSG(ob_predict_dataset_load(ctx, db, NULL, &d) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (!d) return;
  CHECK_MSG(d->n == (int64_t)nworkloads * 4 * 2, "%lld points", (long long)d->n);
  CHECK(d->skipped == 0);
  /* a CV limit leaves the disturbed points out; for profile points only, it
   * keeps every measurement (a caller labelling them from rounds judges
   * each round itself) */
  {
    ob_predict_dataset *dc = NULL, *dp = NULL;
    ob_predict_data_opts co = {.max_cv = 0.1, .no_profiles = true}, po = co;
    po.cv_profiles_only = true;
    CHECK(ob_predict_dataset_load(ctx, db, &co, &dc) == OB_OK && ob_predict_dataset_load(ctx, db, &po, &dp) == OB_OK);
    CHECK(dc && dc->noisy == nworkloads && dc->n == d->n - nworkloads);
    CHECK(dp && dp->noisy == 0 && dp->n == d->n);
    ob_predict_dataset_free(dc);
    ob_predict_dataset_free(dp);
  }
  for (int64_t i = 0; i < d->n; i++) {
    CHECK(d->s[i].x[28] == (float)d->s[i].threads && d->s[i].wl && !strcmp(d->s[i].op, "dense"));
    CHECK(isfinite(d->s[i].x[24]) && isfinite(d->s[i].x[OB_PREDICT_BASE_FEATURES]));
  }
  /* held out by workload: no workload on both sides */
  uint8_t *test = calloc((size_t)d->n, 1), *train = calloc((size_t)d->n, 1);
  ob_predict_split_workload(d, 0, 4, test);
  int64_t nt = 0;
  for (int64_t i = 0; i < d->n; i++) {
    train[i] = !test[i];
    nt += test[i];
    for (int64_t j = 0; j < d->n; j++)
      if (test[i] && !test[j]) CHECK(strcmp(d->s[i].workload, d->s[j].workload) != 0);
  }
  CHECK(nt > 0 && nt < d->n);
  ob_predict_train_opts o = ob_predict_train_opts_default();
  o.rounds = 80;
  o.members = 3;
  ob_predictor *p = NULL;
  CHECK_MSG(ob_predictor_train(ctx, d, train, &o, &p) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (!p) goto out;
  double *pred = malloc(sizeof(double) * (size_t)d->n), *pred2 = malloc(sizeof(double) * (size_t)d->n);
  CHECK(ob_predictor_predict_dataset(p, d, test, false, pred) == OB_OK);
  ob_predict_metrics m;
  ob_predict_metrics_compute(d, test, pred, &m);
  /* the synthetic latency is smooth in the FLOPs: held-out workloads are predicted */
  CHECK_MSG(m.n == nt && m.rmspe < 0.5, "held-out RMSPE %.3f over %lld", m.rmspe, (long long)m.n);
  ob_prediction pr;
  CHECK(ob_predictor_predict(p, "dense", d->s[0].x, d->s[0].flops, &pr) == OB_OK);
  CHECK(pr.lo <= pr.seconds && pr.seconds <= pr.hi && pr.lo > 0);
  /* an operator kind it has no records of */
  CHECK(ob_predictor_predict(p, "conv2d", d->s[0].x, 1e6, &pr) == OB_ERR_NOT_FOUND);
  CHECK(strstr(ob_ctx_errmsg(ctx), "conv2d") && strstr(ob_ctx_errmsg(ctx), "dense"));
  ob_ctx_clear_error(ctx);
  /* the interference model goes into the same file */
  ob_corun_dataset *cd = NULL;
  CHECK(ob_corun_dataset_load(ctx, db, NULL, &cd) == OB_OK);
  CHECK(cd && cd->n > 8 && cd->skipped == 0);
  if (cd) CHECK_MSG(ob_predictor_train_interference(p, cd, NULL, &o) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  CHECK(ob_predictor_has_interference(p));
  /* round trip */
  CHECK_MSG(ob_predictor_save(ctx, p, path_in("m.model")) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  ob_predictor *q = NULL;
  CHECK_MSG(ob_predictor_load(ctx, path_in("m.model"), &q) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (q) {
    CHECK(ob_predictor_predict_dataset(q, d, test, false, pred2) == OB_OK);
    for (int64_t i = 0; i < d->n; i++)
      if (test[i]) CHECK(fabs(pred[i] - pred2[i]) <= 1e-9 * pred[i]);
    CHECK(ob_predictor_kinds(q) == 1 && ob_predictor_has_interference(q));
    ob_prediction a, b;
    CHECK(ob_predictor_slowdown(p, cd->s[0].x, &a) == OB_OK && ob_predictor_slowdown(q, cd->s[0].x, &b) == OB_OK);
    CHECK(a.seconds == b.seconds);
    ob_predictor_free(q);
  }
  /* the scheduler's predicted costs describe a node as the training points
   * were, with the host's measured limits (they set the analytical time
   * the prediction scales): with limits, its latency is the prediction of
   * the point with those limits, and not the one without */
  {
    ob_target *t = NULL;
    CHECK(ob_target_parse(ctx, TARGET, &t) == OB_OK);
    ob_db_host_limit lims[] = {
        {.host = "h1", .name = "fma_peak", .isa = "avx2", .threads = 1, .bytes = 0, .value = 7},
        {.host = "h1", .name = "mem_triad", .isa = "", .threads = 1, .bytes = 1e9, .value = 3}};
    ob_db_host_limits hl = {.n = 2, .l = lims};
    ob_sched_node_desc nd = {.has_workload = true, .wl = *d->s[0].wl, .flops = d->s[0].flops};
    ob_sched_op_desc od = {.key = "n0", .nnodes = 1, .nodes = &nd, .flops = d->s[0].flops};
    ob_sched_predictor_model pm = {.predictor = p, .target = t, .fallback = ob_sched_flops_model_default()};
    double plain = 0, with = 0, direct = NAN;
    CHECK(t && ob_sched_predictor_latency(&pm, &od, 1, &plain) == OB_OK && pm.predicted == 1);
    pm.limits = &hl;
    pm.host = "h1";
    CHECK(t && ob_sched_predictor_latency(&pm, &od, 1, &with) == OB_OK && pm.predicted == 2);
    ob_task *task = NULL;
    if (t && ob_task_new(ctx, &nd.wl, NULL, t, &task) == OB_OK) {
      ob_config c = ob_task_default_config(task);
      ob_predict_point pt = {.wl = &nd.wl, .task = task, .cfg = &c, .threads = 1, .ncores = 1};
      ob_predict_point_limits(&hl, "h1", &pt);
      float x[OB_PREDICT_NFEAT];
      ob_prediction sp;
      if (ob_predict_features(ctx, &pt, x) == OB_OK && ob_predictor_predict(p, "dense", x, nd.flops, &sp) == OB_OK)
        direct = sp.seconds;
    }
    CHECK_MSG(with == direct && fabs(with - plain) > 1e-3 * plain, "with limits %g, direct %g, without %g", with,
              direct, plain);
    ob_task_free(task);
    ob_target_free(t);
  }
  /* a corrupt file: one byte of a booster changed; truncated; another schema; not a model */
  FILE *f = fopen(path_in("m.model"), "rb");
  char *buf = malloc(1 << 24);
  size_t n = f ? fread(buf, 1, (1 << 24) - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0'; /* the header's strstr stops in the file */
  CHECK(n > 200);
  struct {
    const char *name;
    ob_status want;
  } bad[4] = {{"flip.model", OB_ERR_PARSE}, {"trunc.model", OB_ERR_PARSE}, {"schema.model", OB_ERR_UNSUPPORTED},
              {"text.model", OB_ERR_PARSE}};
  for (int k = 0; k < 4; k++) {
    f = fopen(path_in(bad[k].name), "wb");
    if (!f) continue;
    if (k == 0) {
      buf[n - 10] ^= 0x5a;
      fwrite(buf, 1, n, f);
      buf[n - 10] ^= 0x5a;
    } else if (k == 1) {
      fwrite(buf, 1, n - 50, f);
    } else if (k == 2) {
      char key[32];
      snprintf(key, sizeof key, "\"schema\":%d", OB_PREDICT_SCHEMA);
      char *s = strstr(buf, key);
      char was = s ? s[9] : 0;
      if (s) s[9] = '7';
      fwrite(buf, 1, n, f);
      if (s) s[9] = was;
    } else {
      fputs("opbench db export\nN,C,H\n", f);
    }
    fclose(f);
    CHECK_MSG(ob_predictor_load(ctx, path_in(bad[k].name), &q) == bad[k].want && !q, "%s: %s", bad[k].name,
              ob_ctx_errmsg(ctx));
    ob_ctx_clear_error(ctx);
  }
  CHECK(ob_predictor_load(ctx, path_in("missing.model"), &q) == OB_ERR_NOT_FOUND);
  ob_ctx_clear_error(ctx);
  /* a header edited outside the checksum: a record count no int64 holds
   * loads as 0 records (it was cast unchecked: undefined behaviour) */
  char *rec = n > 0 ? strstr(buf, "\"records\":") : NULL;
  CHECK(rec != NULL);
  if (rec && (f = fopen(path_in("records.model"), "wb"))) {
    char *num = rec + strlen("\"records\":"), *end = num + strspn(num, "0123456789.eE+-");
    fwrite(buf, 1, (size_t)(num - buf), f);
    fputs("1e300", f);
    fwrite(end, 1, n - (size_t)(end - buf), f);
    fclose(f);
    CHECK_MSG(ob_predictor_load(ctx, path_in("records.model"), &q) == OB_OK, "%s", ob_ctx_errmsg(ctx));
    int zero = 0; /* the first section edited: whichever kind it is */
    for (int i = 0; q && i < ob_predictor_kinds(q); i++) {
      int64_t nrec = -1;
      CHECK(ob_predictor_kind(q, i, &nrec, NULL) && nrec >= 0);
      zero += nrec == 0;
    }
    CHECK(q && zero == 1);
    ob_predictor_free(q);
    q = NULL;
  }
  /* held-out co-run pairs: stream and full are told apart */
  if (cd) {
    uint8_t *ct = calloc((size_t)cd->n, 1), *cr = calloc((size_t)cd->n, 1);
    ob_corun_split_pairs(cd, 0, 3, ct);
    int64_t ntest = 0;
    for (int64_t i = 0; i < cd->n; i++) {
      cr[i] = !ct[i];
      ntest += ct[i];
    }
    ob_predictor *ip = ob_predictor_new(ctx);
    CHECK(ip && ob_predictor_train_interference(ip, cd, cr, &o) == OB_OK);
    CHECK(ob_predictor_kinds(ip) == 0);
    int64_t ok = 0;
    for (int64_t i = 0; i < cd->n && ip; i++) {
      if (!ct[i]) continue;
      ob_prediction s;
      CHECK(ob_predictor_slowdown(ip, cd->s[i].x, &s) == OB_OK);
      ok += fabs(s.seconds - cd->s[i].slowdown) <= 0.1 * cd->s[i].slowdown;
    }
    CHECK_MSG(ntest > 0 && ok == ntest, "%lld of %lld held-out slowdowns within 10%%", (long long)ok,
              (long long)ntest);
    ob_predictor_free(ip);
    free(ct);
    free(cr);
  }
  ob_corun_dataset_free(cd);
  free(buf);
  free(pred);
  free(pred2);
  ob_predictor_free(p);
out:
  free(test);
  free(train);
  ob_predict_dataset_free(d);
  ob_db_close(db);
}

/* An empty database: nothing to train on. */
static void test_no_records(void) {
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, path_in("empty.db"), 0, &db) == OB_OK);
  ob_predict_dataset *d = NULL;
  CHECK(ob_predict_dataset_load(ctx, db, NULL, &d) == OB_OK && d && d->n == 0);
  ob_predictor *p = NULL;
  if (d) CHECK(ob_predictor_train(ctx, d, NULL, NULL, &p) == OB_ERR_NOT_FOUND && !p);
  ob_ctx_clear_error(ctx);
  ob_predict_dataset_free(d);
  ob_db_close(db);
}

static void test_metrics(void) {
  /* two tasks of 3 configs each, predictions made by hand */
  ob_predict_sample s[6];
  memset(s, 0, sizeof s);
  double truth[6] = {1, 2, 4, 10, 20, 30};
  double pred[6] = {1.05, 1.5, 5, 20, 10, 30}; /* task 2: the two fastest swapped */
  for (int i = 0; i < 6; i++) {
    s[i].host = "h";
    s[i].workload = i < 3 ? "w1" : "w2";
    s[i].target = "t";
    s[i].resources = "r";
    s[i].op = "dense";
    s[i].seconds = truth[i];
  }
  ob_predict_dataset d = {.n = 6, .s = s};
  ob_predict_metrics m;
  ob_predict_metrics_compute(&d, NULL, pred, &m);
  double se = 0.05 * 0.05 + 0.25 * 0.25 + 0.25 * 0.25 + 1 + 0.25 + 0;
  CHECK(m.n == 6 && fabs(m.rmspe - sqrt(se / 6)) < 1e-12);
  CHECK(fabs(m.within10 - 2.0 / 6) < 1e-12);
  CHECK(fabs(m.mdape - 0.25) < 1e-12); /* 0 .05 .25 .25 .5 1 */
  CHECK(m.npairs == 6 && fabs(m.pairwise - 5.0 / 6) < 1e-12);
  /* score@1: task 1 picks the best (1), task 2 picks 20 where 10 is best: (1 + 0.5) / 2 */
  CHECK(m.ntasks == 2 && fabs(m.score1 - 0.75) < 1e-12 && fabs(m.score5 - 1) < 1e-12);
  uint8_t mask[6] = {1, 1, 1, 0, 0, 0};
  ob_predict_metrics_compute(&d, mask, pred, &m);
  CHECK(m.n == 3 && m.npairs == 3 && m.pairwise == 1 && m.score1 == 1);
}

static void test_correlation(void) {
  double x[6] = {1, 2, 3, 4, 5, NAN}, y[6] = {2, 4, 6, 8, 10, 1}, c[6] = {1, 8, 27, 64, 125, 0};
  CHECK(fabs(ob_pearson(x, y, 6) - 1) < 1e-12);
  CHECK(fabs(ob_spearman(x, c, 6) - 1) < 1e-12);
  double pc = ob_pearson(x, c, 6);
  CHECK(pc > 0.9 && pc < 1);
  double neg[6] = {5, 4, 3, 2, 1, 0};
  CHECK(fabs(ob_spearman(x, neg, 6) + 1) < 1e-12);
  double flat[6] = {1, 1, 1, 1, 1, 1};
  CHECK(isnan(ob_pearson(x, flat, 6)));
  /* ties take their average rank: x ranks 1.5 1.5 3, y 1 2 3 */
  double tx[3] = {1, 1, 2}, ty[3] = {1, 2, 3};
  CHECK(fabs(ob_spearman(tx, ty, 3) - ob_pearson((double[]){1.5, 1.5, 3}, (double[]){1, 2, 3}, 3)) < 1e-12);
  int th[4] = {1, 2, 4, 8};
  CHECK(ob_turnaround(th, (double[]){10, 6, 5.9, 5.8}, 4, 0.05) == 2);
  CHECK(ob_turnaround(th, (double[]){10, 6, 3, 1.5}, 4, 0.05) == 8);
  CHECK(ob_turnaround(th, (double[]){10, 11, 5, 1}, 4, 0.05) == 1);
}

/* A co-run slowdown as the measurement takes it: 0.9 on disjoint cores
 * (below 1 is kept), 1.2 per shared core; the shares it was asked about are
 * kept to check the game counts them. */
static int asked_shared[8][8];
static double measured_like(void *u, int i, int j, int ki, int kj, int shared) {
  (void)u;
  asked_shared[ki * 2 + kj][i * 2 + j] = shared + 1;
  return shared ? 1 + 0.2 * shared : 0.9;
}

/* Two players on two cores, each 10 alone on one core and 6 on two
 * (alone: 4 doubles the game points to). */
static ob_nash_game game2(double *alone) {
  ob_nash_game g;
  memset(&g, 0, sizeof g);
  g.players = 2;
  g.cores = 2;
  alone[0] = alone[2] = 10;
  alone[1] = alone[3] = 6;
  g.alone = alone;
  return g;
}

static void test_nash_slowdown(void) {
  double alone[4];
  ob_nash_game g = game2(alone);
  g.slowdown = measured_like;
  double c[2];
  ob_nash_costs(&g, (int[]){1, 1}, c); /* disjoint: no time-slicing multiplier, 0.9 kept */
  CHECK(fabs(c[0] - 9) < 1e-12 && fabs(c[1] - 9) < 1e-12);
  CHECK(asked_shared[1 * 2 + 1][0 * 2 + 1] == 1);
  ob_nash_costs(&g, (int[]){2, 2}, c); /* both cores shared: 6 x 1.4 */
  CHECK(fabs(c[0] - 8.4) < 1e-12 && fabs(c[1] - 8.4) < 1e-12);
  ob_nash_costs(&g, (int[]){1, 2}, c); /* player 1 on cores 1,0: one shared with player 0 */
  CHECK(fabs(c[0] - 12) < 1e-12 && fabs(c[1] - 7.2) < 1e-12);
  CHECK(asked_shared[1 * 2 + 2][0 * 2 + 1] == 2 && asked_shared[2 * 2 + 1][1 * 2 + 0] == 2);
  ob_nash_summary s;
  CHECK(ob_nash_exhaustive(ctx, &g, 100, &s) == OB_OK);
  CHECK(s.opt[0] == 2 && s.opt[1] == 2 && fabs(s.opt_makespan - 8.4) < 1e-12);
  CHECK(ob_nash_is_equilibrium(&g, (int[]){2, 2}) && !ob_nash_is_equilibrium(&g, (int[]){1, 2}));
}

static void test_nash(void) {
  double alone[4];
  ob_nash_game g = game2(alone);
  double c[2];
  ob_nash_costs(&g, (int[]){1, 1}, c);
  CHECK(c[0] == 10 && c[1] == 10);
  ob_nash_costs(&g, (int[]){2, 2}, c); /* both on both cores: time-sliced */
  CHECK(c[0] == 12 && c[1] == 12);
  ob_nash_costs(&g, (int[]){1, 2}, c);
  CHECK(c[0] == 20 && c[1] == 12);
  CHECK(ob_nash_is_equilibrium(&g, (int[]){1, 1}) && ob_nash_is_equilibrium(&g, (int[]){2, 2}));
  CHECK(!ob_nash_is_equilibrium(&g, (int[]){1, 2}));
  ob_nash_summary s;
  CHECK(ob_nash_exhaustive(ctx, &g, 100, &s) == OB_OK);
  CHECK(s.profiles == 4 && s.equilibria == 2 && s.opt[0] == 1 && s.opt[1] == 1 && s.opt_makespan == 10);
  CHECK(fabs(s.price_of_anarchy - 1.2) < 1e-12 && s.price_of_stability == 1);
  int k[2] = {1, 2}, rounds = 0;
  CHECK(ob_nash_best_response(&g, k, 10, &rounds) && ob_nash_is_equilibrium(&g, k));
  /* interference on disjoint cores: 1.5x beside the other makes sharing pay */
  g.stream[0][1] = g.stream[1][0] = 1.5;
  CHECK(!ob_nash_is_equilibrium(&g, (int[]){1, 1}));
  CHECK(ob_nash_exhaustive(ctx, &g, 100, &s) == OB_OK);
  CHECK(s.opt[0] == 2 && s.opt[1] == 2 && s.opt_makespan == 12 && s.equilibria == 1);
  /* too many profiles is refused, not enumerated */
  g.cores = 64;
  double big[128];
  for (int i = 0; i < 128; i++) big[i] = 1;
  g.alone = big;
  CHECK(ob_nash_exhaustive(ctx, &g, 100, &s) == OB_ERR_INVALID_ARG);
  ob_ctx_clear_error(ctx);
  g.nchoices = 3;
  g.choices[0] = 1;
  g.choices[1] = 8;
  g.choices[2] = 64;
  CHECK(ob_nash_exhaustive(ctx, &g, 100, &s) == OB_OK && s.profiles == 9);
}

/* The analytical base: the tiling terms of a config, computed here by hand
 * from the factors the config holds (8 lanes: AVX2), and the time they
 * give against the roofline. */
static void test_analytic(void) {
  ob_target *t = NULL;
  CHECK(ob_target_parse(ctx, TARGET, &t) == OB_OK);
  if (!t) return;
  /* dense 3 x 100 x 64: panels of 16 columns over 100 compute 112, blocks of
   * 2 rows over 3 compute 4 */
  ob_workload wl;
  ob_task *task = NULL;
  CHECK(ob_workload_parse(ctx, "dense", "M=3,N=100,K=64", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, "dense_pack.x86", t, &task) == OB_OK);
  if (task) {
    ob_config c = ob_space_first(ob_task_space(task));
    ob_config_set_split(&c, "tile_x", (int64_t[]){16}, 1);
    ob_config_set_split(&c, "tile_y", (int64_t[]){2}, 1);
    int64_t ty[2], tx[2];
    ob_config_split(&c, "tile_y", ty);
    ob_config_split(&c, "tile_x", tx);
    CHECK(tx[1] == 16 && ty[1] == 2);
    ob_predict_tiling tl;
    ob_predict_tiling_of(&wl, "dense_pack.x86", &c, 8, 2, &tl);
    CHECK(tl.known);
    CHECK(fabs(tl.work_ratio - (4.0 * 112.0) / (3.0 * 100.0)) < 1e-9);
    CHECK(fabs(tl.lane_util - 1.0) < 1e-9);
    CHECK(tl.chunks == 7 * 2);
    CHECK(fabs(tl.imbalance - 1.0) < 1e-9); /* 14 chunks on 2 threads */
    /* 2 rows x 2 vectors: 4 FMAs and 4 loads a step, under the FMA latency */
    CHECK(fabs(tl.step_eff - 0.5) < 1e-9);
    ob_predict_tiling_of(&wl, "dense_pack.x86", &c, 8, 3, &tl); /* 14 chunks on 3 threads: 5 + 5 + 4 */
    CHECK(fabs(tl.imbalance - 15.0 / 14.0) < 1e-9 && tl.chunks_per_thread == 5);
    double f = ob_workload_flops(&wl), b = ob_predict_workload_bytes(&wl);
    double roof = ob_predict_analytic_s(NULL, f, b, 100, 1000, 2);
    double an = ob_predict_analytic_s(&tl, f, b, 100, 1000, 3);
    CHECK(fabs(roof - f / 100e9) < 1e-15);
    CHECK(fabs(an - f * tl.work_ratio * tl.imbalance / 3 / (100e9 / 3 * tl.step_eff)) < 1e-15);
    /* the features carry it, and the label's base is it */
    float x[OB_PREDICT_NFEAT];
    ob_predict_point pt = {.wl = &wl, .task = task, .cfg = &c, .threads = 3, .ncores = 3,
                           .peak_gflops = 100, .bandwidth_gbps = 1000};
    CHECK(ob_predict_features(ctx, &pt, x) == OB_OK);
    CHECK(fabs(ob_predict_bound(x, f) / an - 1) < 1e-5);
    CHECK(fabs(x[36] - tl.work_ratio) < 1e-6 && fabs(x[40] - tl.imbalance) < 1e-6);
  }
  ob_task_free(task);
  task = NULL;
  /* conv2d K = 24 in blocks of 16 output channels: 32 computed; 1 chunk per
   * output row of the 2 blocks */
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=16,H=7,W=7,K=24,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, "conv2d_NCHWc.x86", t, &task) == OB_OK);
  if (task) {
    ob_config c = ob_space_first(ob_task_space(task));
    ob_config_set_split(&c, "tile_oc", (int64_t[]){16}, 1);
    ob_config_set_split(&c, "tile_ow", (int64_t[]){1}, 1);
    ob_config_set_split(&c, "tile_oh", (int64_t[]){1}, 1);
    int64_t oc[2];
    ob_config_split(&c, "tile_oc", oc);
    CHECK(oc[1] == 16);
    ob_predict_tiling tl;
    ob_predict_tiling_of(&wl, "conv2d_NCHWc.x86", &c, 8, 1, &tl);
    CHECK(tl.known && fabs(tl.work_ratio - 32.0 / 24.0) < 1e-9);
    CHECK(tl.chunks == 2 * 5); /* 5 x 5 output rows, unpadded */
    CHECK(fabs(tl.reduction - 16.0 * 9.0) < 1e-9);
  }
  ob_task_free(task);
  /* the cache level holding the arguments: capacity 2x the bytes the L1
   * and L2 limits were measured with, 4x for L3; memory beyond */
  ob_db_host_limit lims[] = {
      {.host = "h", .name = "l1_read", .isa = "", .threads = 1, .bytes = 24576, .value = 300},
      {.host = "h", .name = "l2_read", .isa = "", .threads = 1, .bytes = 1048576, .value = 130},
      {.host = "h", .name = "l2_read", .isa = "", .threads = 2, .bytes = 2097152, .value = 250},
      {.host = "h", .name = "l3_read", .isa = "", .threads = 1, .bytes = 8388608, .value = 30},
      {.host = "h", .name = "mem_triad", .isa = "", .threads = 1, .bytes = 1e9, .value = 15},
      {.host = "other", .name = "l1_read", .isa = "", .threads = 1, .bytes = 1e9, .value = 999}};
  ob_db_host_limits hl = {.n = 6, .l = lims};
  CHECK(ob_predict_cache_bandwidth(&hl, "h", 1, 40000) == 300);
  CHECK(ob_predict_cache_bandwidth(&hl, "h", 1, 1.5 * 1048576) == 130);
  CHECK(ob_predict_cache_bandwidth(&hl, "h", 2, 3.0 * 1048576) == 250); /* the 2-thread L2 entry */
  CHECK(ob_predict_cache_bandwidth(&hl, "h", 1, 3.0 * 1048576) == 30);
  CHECK(ob_predict_cache_bandwidth(&hl, "h", 1, 64.0 * 1048576) == 15);
  CHECK(isnan(ob_predict_cache_bandwidth(NULL, "h", 1, 1000)));
  /* cold parameters: the calibration (40 MiB) lost 0.2 of what an evicted
   * run costs with 16 MiB of other data between runs, 0.6 with 32, all with
   * 64: a model's share by its own MiB, linear between the points */
  ob_predict_overhead ov = {.threads = 1, .kernel_factor = 1, .param_mib = 40, .cold_s_per_mb = 1e-4, .nmiss = 3,
                            .miss_mib = {56, 72, 104}, .miss_share = {0.2, 0.6, 1}};
  CHECK(ob_predict_param_miss(&ov, 40) == 0);                 /* the calibration itself stays */
  CHECK(ob_predict_param_miss(&ov, 20) == 0);                 /* fits */
  CHECK(fabs(ob_predict_param_miss(&ov, 48) - 0.1) < 1e-12);  /* half way to the first point */
  CHECK(fabs(ob_predict_param_miss(&ov, 64) - 0.4) < 1e-12);
  CHECK(ob_predict_param_miss(&ov, 500) == 1);                /* beyond the last point: its share */
  ov.cold_s_per_mb = 0;
  CHECK(ob_predict_param_miss(&ov, 120) == 0);                /* no cold cost measured */
  /* stored as host limits and found again, the curve in order */
  {
    char dbp[256];
    snprintf(dbp, sizeof dbp, "%s", path_in("ov.db"));
    ob_db *db = NULL;
    CHECK(ob_db_open(ctx, dbp, 0, &db) == OB_OK);
    ov.cold_s_per_mb = 1e-4;
    ov.floor_s_per_mb = 7e-5;
    ov.nnative = 3;
    CHECK(db && ob_predict_overhead_store(db, "h", &ov, "test") == OB_OK);
    ob_db_host_limits *got = NULL;
    CHECK(db && ob_db_get_host_limits(db, "h", &got) == OB_OK);
    ob_predict_overhead back;
    CHECK(got && ob_predict_overhead_find(got, "h", 1, &back));
    CHECK(back.nmiss == 3 && fabs(back.miss_mib[0] - 56) < 1e-9 && fabs(back.miss_mib[2] - 104) < 1e-9);
    CHECK(fabs(back.miss_share[1] - 0.6) < 1e-12 && fabs(back.cold_s_per_mb - 1e-4) < 1e-15);
    CHECK(fabs(back.floor_s_per_mb - 7e-5) < 1e-15);
    CHECK(fabs(ob_predict_param_miss(&back, 64) - 0.4) < 1e-12);
    ob_db_host_limits_free(got);
    ob_db_close(db);
  }
  /* co-run features: each side's FLOP rate over the FMA peak at its
   * threads (the 1-thread peak scaled for 2), and their product */
  {
    ob_db_host_limit pk[] = {
        {.host = "h", .name = "fma_peak", .isa = "avx2", .threads = 1, .bytes = 0, .value = 50},
        {.host = "h", .name = "fma_peak", .isa = "avx512", .threads = 1, .bytes = 0, .value = 100}};
    ob_db_host_limits pl = {.n = 2, .l = pk};
    float fx[OB_INTERF_NFEAT];
    ob_interf_features(1e9, 1e6, 1, 0.02, 1e9, 1e6, 2, 0.01, false, 0, &pl, "h", fx);
    CHECK(fabsf(fx[17] - 0.5f) < 1e-6f && fabsf(fx[18] - 0.5f) < 1e-6f && fabsf(fx[19] - 0.25f) < 1e-6f);
    ob_interf_features(1e9, 1e6, 1, 0.02, 1e9, 1e6, 2, 0.01, false, 0, NULL, "h", fx);
    CHECK(isnan(fx[17]) && isnan(fx[19])); /* no peak known */
  }
  /* a template without a tiling model: the roofline */
  CHECK(ob_workload_parse(ctx, "relu", "N=1,C=8,H=4,W=4", &wl) == OB_OK);
  ob_predict_tiling tl;
  ob_predict_tiling_of(&wl, "elemwise.x86", NULL, 8, 1, &tl);
  CHECK(!tl.known && tl.work_ratio == 1);
  ob_target_free(t);
}

/* The in-graph model's fit: steps made as max(f a, k w) give back f and k;
 * weight-bound steps that streamed slower than the fastest (a slow window
 * for memory) move k, not f, so compute-bound steps keep their factor. */
static void test_fit_in_graph(void) {
  /* compute-bound steps (little weight) and weight-bound ones (9 MiB) */
  double a[8] = {2e-4, 1.5e-4, 1e-4, 2.5e-4, 2e-4, 1.8e-4, 1e-4, 3e-4};
  double w[8] = {0.1, 0.2, 0.5, 0.1, 9, 9, 4.5, 2};
  double y[8], f = 0, k = 0;
  for (int i = 0; i < 8; i++) y[i] = fmax(1.2 * a[i], 5e-5 * w[i]);
  ob_predict_fit_in_graph(y, a, w, 8, &f, &k);
  CHECK_MSG(fabs(f - 1.2) < 0.003 && fabs(k - 5e-5) < 1e-9, "f %g k %g", f, k);
  /* the weight-bound steps 30 % and 50 % slower than the rate of the others */
  y[4] *= 1.3;
  y[5] *= 1.5;
  ob_predict_fit_in_graph(y, a, w, 8, &f, &k);
  CHECK_MSG(fabs(f - 1.2) < 0.01 && k >= 5e-5 && k <= 7.5e-5, "f %g k %g", f, k);
  /* what the factor over the steps above 1.25x the fastest rate said */
  double kin = 0, kdb = 0, fastest = INFINITY;
  for (int i = 0; i < 8; i++)
    if (w[i] >= 1) fastest = fmin(fastest, y[i] / w[i]);
  for (int i = 0; i < 8; i++)
    if (y[i] >= 1.25 * fastest * w[i]) kin += y[i], kdb += a[i];
  CHECK_MSG(kin / kdb > 1.5, "the old factor %g", kin / kdb);
  /* no step: f 1, k as it was */
  k = 3e-5;
  ob_predict_fit_in_graph(y, a, w, 0, &f, &k);
  CHECK(f == 1 && k == 3e-5);
  /* nothing held by its weights: k 0 */
  for (int i = 0; i < 8; i++) y[i] = 0.9 * a[i];
  ob_predict_fit_in_graph(y, a, w, 8, &f, &k);
  CHECK_MSG(fabs(f - 0.9) < 0.003 && k == 0, "f %g k %g", f, k);
}

/* The miss curve from a synthetic stack: the calibration run after runs of
 * other instances (parameters of their own); its points sit at the
 * calibration's parameters plus the others', the sweep's points beyond the
 * stack's last are kept, those within it dropped; the shares never fall. */
static void test_overhead_stack(void) {
  ob_graph *g[3] = {0};
  ob_rt *rt[3] = {0};
  bool ok = true;
  for (int i = 0; i < 3 && ok; i++) {
    ob_model_opts mo = ob_model_opts_default();
    mo.name = "simple";
    ob_rt_opts ro = ob_rt_opts_default();
    ro.build.timeout_s = OB_TEST_TIMEOUT_S;
    ok = ob_model_load(ctx, &mo, &g[i]) == OB_OK && ob_graph_optimize(ctx, g[i], 16, NULL) == OB_OK &&
         ob_rt_new(ctx, g[i], &ro, &rt[i]) == OB_OK;
    CHECK_MSG(ok, "%s", ob_ctx_errmsg(ctx));
  }
  if (ok) {
    ob_predict_overhead ov;
    CHECK_MSG(ob_predict_overhead_measure(ctx, rt[0], 1, 3, &ov) == OB_OK, "%s", ob_ctx_errmsg(ctx));
    double p = ov.param_mib;
    CHECK(p > 0);
    /* no cold cost: nothing changes */
    ov.cold_s_per_mb = 0;
    ov.nmiss = 2;
    ov.miss_mib[0] = 2.5 * p, ov.miss_share[0] = 0.3;
    ov.miss_mib[1] = 1e6, ov.miss_share[1] = 0.9;
    CHECK(ob_predict_overhead_stack(ctx, rt[0], rt + 1, 2, &ov) == OB_OK);
    CHECK(ov.nmiss == 2 && ov.miss_mib[0] == 2.5 * p && ov.miss_share[1] == 0.9);
    ov.cold_s_per_mb = 1e-3;
    CHECK(ob_predict_overhead_stack(ctx, rt[0], rt + 1, 2, &ov) == OB_OK);
    CHECK_MSG(ov.nmiss == 3 && fabs(ov.miss_mib[0] - 2 * p) < 1e-9 * p && fabs(ov.miss_mib[1] - 3 * p) < 1e-9 * p &&
                  ov.miss_mib[2] == 1e6,
              "%d points at %g %g %g (calibration %g MiB)", ov.nmiss, ov.miss_mib[0], ov.miss_mib[1], ov.miss_mib[2], p);
    CHECK(ov.miss_share[0] >= 0 && ov.miss_share[0] <= ov.miss_share[1] && ov.miss_share[1] <= 1);
    CHECK(ov.miss_share[2] >= 0.9 && ov.miss_share[2] >= ov.miss_share[1]);
  }
  for (int i = 0; i < 3; i++) {
    ob_rt_free(rt[i]);
    ob_graph_free(g[i]);
  }
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  snprintf(dir, sizeof dir, "/tmp/obpredict-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  make_db(path_in("p.db"));
  test_train_and_file();
  test_no_records();
  test_metrics();
  test_correlation();
  test_nash();
  test_nash_slowdown();
  test_analytic();
  test_fit_in_graph();
  test_overhead_stack();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
