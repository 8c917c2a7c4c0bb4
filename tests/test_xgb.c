/* test_xgb.c: the cost-model tuners. Features (knob, itervar, curve) are
 * deterministic, of their documented length and tell apart configs that
 * tile a loop differently; every xgb tuner finds the optimum of a conv2d
 * space under a synthetic cost function (no compiling: GFLOPS derived from
 * the knob values), in fewer trials than uniform random draws on average,
 * never proposing a config twice; transfer from a database of another
 * shape's records gets a second task to a good config sooner.
 * OB_TEST_VERBOSE=1 prints the trial counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opbench/db.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static bool verbose;

static ob_task *conv_task(const char *shape) {
  ob_workload wl;
  ob_task *t = NULL;
  ob_status st = ob_workload_parse(ctx, "conv2d", shape, &wl);
  if (!st) st = ob_task_new(ctx, &wl, "conv2d_NCHWc.x86", NULL, &t);
  CHECK_MSG(st == OB_OK, "%s: %s", shape, ob_ctx_errmsg(ctx));
  return t;
}

#define SMALL "N=1,C=32,H=14,W=14,K=32,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1"
#define OTHER "N=1,C=64,H=28,W=28,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1"

/* ---- features --------------------------------------------------------------- */

static bool all_finite(const float *v, int n) {
  for (int i = 0; i < n; i++)
    if (!isfinite(v[i])) return false;
  return true;
}

static void test_features(void) {
  ob_task *t = conv_task(SMALL), *t2 = conv_task(SMALL);
  if (!t || !t2) return;
  const ob_space *s = ob_task_space(t);
  int knob_len = 0;
  for (int k = 0; k < ob_space_num_knobs(s); k++) {
    int64_t v[OB_MAX_AXES + OB_MAX_SPLIT];
    knob_len += ob_space_entity(s, k, 0, v, (int)(sizeof v / sizeof v[0]));
  }
  CHECK(ob_feature_len(s, OB_FEATURE_KNOB) == knob_len);
  CHECK(ob_feature_len(s, OB_FEATURE_ITERVAR) == OB_FEATURE_ITERVAR_LEN);
  CHECK(ob_feature_len(s, OB_FEATURE_CURVE) == OB_FEATURE_CURVE_LEN);
  CHECK(OB_FEATURE_ITERVAR_LEN == 258 && OB_FEATURE_CURVE_LEN == 157);
  CHECK(!strcmp(ob_feature_kind_name(OB_FEATURE_CURVE), "curve"));

  /* two configs that differ only in the tiling of the output width */
  ob_config a = ob_task_default_config(t), b = a;
  int64_t ow[2];
  ob_config_split(&a, "tile_ow", ow);
  int64_t other = ow[1] == 2 ? 1 : 2; /* fits whatever the vectors */
  ob_config_set_split(&b, "tile_ow", &other, 1);
  CHECK(a.index != b.index);
  for (int kind = 0; kind < OB_FEATURE_KIND_COUNT; kind++) {
    int n = ob_feature_len(s, (ob_feature_kind)kind);
    float *fa = calloc((size_t)n, sizeof *fa), *fa2 = calloc((size_t)n, sizeof *fa2);
    float *fb = calloc((size_t)n, sizeof *fb);
    CHECK(ob_feature_extract(ctx, t, &a, (ob_feature_kind)kind, fa) == OB_OK);
    CHECK(ob_feature_extract(ctx, t, &a, (ob_feature_kind)kind, fa2) == OB_OK);
    CHECK_MSG(!memcmp(fa, fa2, sizeof(float) * (size_t)n), "%s not deterministic",
              ob_feature_kind_name((ob_feature_kind)kind));
    /* the same config through another task object of the same workload */
    ob_config a2;
    CHECK(ob_space_get(ctx, ob_task_space(t2), a.index, &a2) == OB_OK);
    CHECK(ob_feature_extract(ctx, t2, &a2, (ob_feature_kind)kind, fa2) == OB_OK);
    CHECK(!memcmp(fa, fa2, sizeof(float) * (size_t)n));
    CHECK(ob_feature_extract(ctx, t, &b, (ob_feature_kind)kind, fb) == OB_OK);
    CHECK_MSG(memcmp(fa, fb, sizeof(float) * (size_t)n) != 0, "%s blind to tile_ow",
              ob_feature_kind_name((ob_feature_kind)kind));
    CHECK(all_finite(fa, n) && all_finite(fb, n));
    int nonzero = 0;
    for (int i = 0; i < n; i++) nonzero += fa[i] != 0;
    CHECK(nonzero > n / 10);
    free(fa);
    free(fa2);
    free(fb);
  }
  /* knob features are the entity values, the split's outer factor computed */
  float kf[64];
  CHECK(knob_len <= 64);
  CHECK(ob_feature_extract(ctx, t, &a, OB_FEATURE_KNOB, kf) == OB_OK);
  int k_ow = ob_space_knob_find(s, "tile_ow"), p = 0;
  for (int k = 0; k < k_ow; k++) {
    int64_t v[OB_MAX_AXES + OB_MAX_SPLIT];
    p += ob_space_entity(s, k, 0, v, (int)(sizeof v / sizeof v[0]));
  }
  CHECK(kf[p] == (float)((14 + ow[1] - 1) / ow[1]) && kf[p + 1] == (float)ow[1]);

  /* a dense task: same lengths, different values */
  ob_workload wl;
  ob_task *d = NULL;
  CHECK(ob_workload_parse(ctx, "dense", "M=16,N=64,K=64", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, "dense.x86", NULL, &d) == OB_OK);
  if (d) {
    float fi[OB_FEATURE_ITERVAR_LEN], fc[OB_FEATURE_CURVE_LEN];
    ob_config dc = ob_task_default_config(d);
    CHECK(ob_feature_extract(ctx, d, &dc, OB_FEATURE_ITERVAR, fi) == OB_OK);
    CHECK(ob_feature_extract(ctx, d, &dc, OB_FEATURE_CURVE, fc) == OB_OK);
    CHECK(all_finite(fi, OB_FEATURE_ITERVAR_LEN) && all_finite(fc, OB_FEATURE_CURVE_LEN));
    /* a config of another space is refused */
    CHECK(ob_feature_extract(ctx, d, &a, OB_FEATURE_ITERVAR, fi) == OB_ERR_OUT_OF_SPACE);
    CHECK(ob_feature_extract(ctx, d, &a, OB_FEATURE_KNOB, fi) == OB_ERR_OUT_OF_SPACE);
    ob_task_free(d);
  }
  ob_task_free(t);
  ob_task_free(t2);
}

/* ---- synthetic cost --------------------------------------------------------------- */

static double bump(double x, double c, double w) { return exp(-(x - c) * (x - c) / (2 * w * w)); }

/* GFLOPS a config "reaches": channel blocks of 16 (output) and 8 (input),
 * about 8 vector accumulators (ow block x oc block / 16), and small
 * preferences among the other knobs. Input block 1 with output-width block
 * 1 "crashes" (error 4), to exercise failed trials. */
static double synth(const ob_config *c, int *error_no) {
  int64_t ic[2], oc[2], ow[2], oh[2];
  ob_config_split(c, "tile_ic", ic);
  ob_config_split(c, "tile_oc", oc);
  ob_config_split(c, "tile_ow", ow);
  ob_config_split(c, "tile_oh", oh);
  *error_no = ic[1] == 1 && ow[1] == 1 ? 4 : 0;
  if (*error_no) return 0;
  double g = 100;
  g *= 0.3 + 0.7 * bump(log2((double)oc[1]), 4, 0.7);
  g *= 0.4 + 0.6 * bump(log2((double)ic[1]), 3, 1.0);
  g *= 0.2 + 0.8 * bump(log2((double)(ow[1] * oc[1]) / 16.0), 3, 1.0);
  g *= ob_config_knob(c, "unroll_kw") ? 1.08 : 1.0;
  g *= oh[1] == 2 ? 1.04 : 1.0;
  g *= ob_config_knob(c, "reduce_order") ? 0.95 : 1.0;
  g *= ob_config_knob(c, "pad_inline") == 0 ? 1.02 : 1.0;
  g *= ob_config_knob(c, "rows_outer") ? 0.97 : 1.0;
  g *= 1.0 + 0.01 * (double)ob_config_knob(c, "unroll_inner") / 4; /* 0, 4 or 8 */
  return g;
}

typedef struct space_best {
  double best, second;
  uint64_t best_index;
  uint64_t nvalid;
} space_best;

static space_best find_best(const ob_task *t) {
  const ob_space *s = ob_task_space(t);
  space_best r = {0};
  for (uint64_t i = 0; i < ob_space_len(s); i++) {
    ob_config c;
    if (ob_space_get(ctx, s, i, &c)) continue;
    r.nvalid++;
    int e;
    double g = synth(&c, &e);
    if (g > r.best) {
      r.second = r.best;
      r.best = g;
      r.best_index = i;
    } else if (g > r.second) {
      r.second = g;
    }
  }
  ob_ctx_clear_error(ctx);
  return r;
}

typedef struct drive_res {
  int to_best;   /* trials until the best config was measured; budget + 1 if never */
  int to_good;   /* ... until one within 95% of the best */
  int proposed;
  uint64_t trace; /* hash of the proposals in order */
  bool repeated, invalid;
} drive_res;

/* The tuning loop in small: batches of 16, results fed back, until the
 * optimum was measured or the budget is spent. */
static drive_res drive_opts(ob_task *task, const char *name, const ob_tuner_opts *opts, int budget,
                            const space_best *sb) {
  drive_res r = {budget + 1, budget + 1, 0, 0, false, false};
  ob_tuner_opts o = *opts;
  ob_tuner *tu = NULL;
  ob_status st = ob_tuner_new(ctx, name, task, &o, &tu);
  CHECK_MSG(st == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  if (st) return r;
  const ob_space *s = ob_task_space(task);
  bool *seen = calloc(ob_space_len(s), 1);
  ob_config cfg[16];
  ob_measure_result res[16];
  while (r.proposed < budget && r.to_best > budget) {
    int got = 0, want = budget - r.proposed < 16 ? budget - r.proposed : 16;
    st = ob_tuner_next_batch(tu, want, cfg, &got);
    CHECK(st == OB_OK);
    if (st || got == 0) break;
    for (int i = 0; i < got; i++) {
      uint64_t ix = cfg[i].index;
      if (ix >= ob_space_len(s) || !ob_space_is_valid(s, ix) || cfg[i].space != s) {
        r.invalid = true;
        continue;
      }
      if (seen[ix]) r.repeated = true;
      seen[ix] = true;
      r.trace = ob_hash64(&ix, sizeof ix, r.trace);
      memset(&res[i], 0, sizeof res[i]);
      double g = synth(&cfg[i], &res[i].error_no);
      res[i].gflops = g;
      res[i].timing.median_s = g > 0 ? ob_task_flops(task) / (g * 1e9) : 0;
      r.proposed++;
      if (g >= sb->best && r.to_best > budget) r.to_best = r.proposed;
      if (g >= 0.95 * sb->best && r.to_good > budget) r.to_good = r.proposed;
    }
    CHECK(ob_tuner_update(tu, cfg, res, got) == OB_OK);
  }
  free(seen);
  ob_tuner_free(tu);
  return r;
}

static drive_res drive(ob_task *task, const char *name, uint64_t seed, const char *db, int budget,
                       const space_best *sb, ob_feat_cache *fc) {
  ob_tuner_opts o = {.seed = seed, .db_path = db, .features = fc};
  return drive_opts(task, name, &o, budget, sb);
}

/* Trials a uniform random order without repeats needs for the same goals. */
static drive_res random_draw(const ob_task *task, uint64_t seed, const space_best *sb) {
  const ob_space *s = ob_task_space(task);
  uint64_t n = 0, len = ob_space_len(s);
  uint64_t *v = malloc(sizeof(uint64_t) * len);
  for (uint64_t i = 0; i < len; i++)
    if (ob_space_is_valid(s, i)) v[n++] = i;
  ob_rng rng = {seed * 7919 + 17};
  drive_res r = {0};
  for (uint64_t i = 0; i < n; i++) {
    uint64_t j = i + ob_rng_next(&rng) % (n - i), x = v[i];
    v[i] = v[j];
    v[j] = x;
    ob_config c;
    ob_space_get(ctx, s, v[i], &c);
    int e;
    double g = synth(&c, &e);
    if (g >= sb->best && !r.to_best) r.to_best = (int)i + 1;
    if (g >= 0.95 * sb->best && !r.to_good) r.to_good = (int)i + 1;
  }
  free(v);
  return r;
}

/* Under ASan the tuners' code paths run with one seed each and the
 * averages' bars are left to the release build (the same checks there):
 * three seeds took 228 of the sanitizer suite's 455 s from a clean clone. */
#if defined(__SANITIZE_ADDRESS__)
#define NSEEDS 1
#define STAT_BARS false
#else
#define NSEEDS 3
#define STAT_BARS true
#endif
#define BUDGET 400
#define TRACE_TRIALS 40 /* fits at 8, 16 and 32 results */

/* Tuners of one task sharing a feature cache (every kind): each config is
 * lowered once for all the runs below, and a tuner proposes what it would
 * with a cache of its own. */
static ob_feat_cache *shared_cache(ob_task *t) {
  ob_feat_cache *fc = NULL;
  CHECK(ob_feat_cache_new(ctx, t, OB_FEATURE_KINDS_ALL, 0, &fc) == OB_OK);
  return fc;
}

static void test_shared_features(ob_task *t, const space_best *sb, ob_feat_cache *fc) {
  int64_t low0 = 0, low1 = 0, low2 = 0, hits = 0;
  /* no time limit on the annealing: a run that lowers everything itself
   * would otherwise search less far than one served by the cache (under
   * ASan it did) */
  ob_tuner_opts o = {.seed = 4, .plan_seconds = 1e6};
  drive_res own = drive_opts(t, "xgb", &o, TRACE_TRIALS, sb);
  ob_feat_cache_stats(fc, &low0, NULL);
  o.features = fc;
  drive_res a = drive_opts(t, "xgb", &o, TRACE_TRIALS, sb);
  ob_feat_cache_stats(fc, &low1, NULL);
  drive_res b = drive_opts(t, "xgb", &o, TRACE_TRIALS, sb);
  ob_feat_cache_stats(fc, &low2, &hits);
  CHECK_MSG(own.trace == a.trace && a.trace == b.trace && own.proposed == b.proposed,
            "the same tuner and seed proposed differently with a shared cache");
  CHECK_MSG(low1 > low0 && low2 == low1 && hits > 0,
            "shared cache: %lld lowered by the first run, %lld by the second (%lld hits)",
            (long long)(low1 - low0), (long long)(low2 - low1), (long long)hits);
  /* a knob tuner does not lower configs through an all-kinds cache */
  drive(t, "xgb_knob", 4, NULL, 48, sb, fc);
  ob_feat_cache_stats(fc, &low0, NULL);
  CHECK_MSG(low0 == low2, "xgb_knob lowered %lld configs through the shared cache", (long long)(low0 - low2));
}

static void test_tuners_find_optimum(void) {
  ob_task *t = conv_task(SMALL);
  if (!t) return;
  space_best sb = find_best(t);
  ob_feat_cache *fc = shared_cache(t);
  if (fc) test_shared_features(t, &sb, fc);
  CHECK(sb.best > sb.second); /* the optimum is unique */
  double rnd = 0;
  for (int s = 0; s < 32; s++) rnd += random_draw(t, (uint64_t)s + 100, &sb).to_best;
  rnd /= 32;
  if (verbose) printf("random: %.1f trials to the optimum of %llu configs\n", rnd, (unsigned long long)sb.nvalid);
  const char *names[] = {"xgb", "xgb-rank", "xgb_knob", "xgb_itervar", "xgb_curve"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    double sum = 0;
    int found = 0;
    for (int s = 0; s < NSEEDS; s++) {
      drive_res r = drive(t, names[k], (uint64_t)s + 1, NULL, BUDGET, &sb, fc);
      CHECK_MSG(!r.repeated && !r.invalid, "%s seed %d proposed a config twice or an invalid one",
                names[k], s + 1);
      found += r.to_best <= BUDGET;
      sum += r.to_best;
      if (verbose) printf("%-12s seed %d: optimum after %d trials, 95%% after %d\n", names[k], s + 1, r.to_best, r.to_good);
    }
    double mean = sum / NSEEDS;
    CHECK_MSG(!STAT_BARS || found == NSEEDS, "%s found the optimum in %d of %d runs", names[k], found, NSEEDS);
    CHECK_MSG(!STAT_BARS || mean < 0.5 * rnd, "%s: %.1f trials on average, random %.1f", names[k], mean, rnd);
  }
  ob_feat_cache_free(fc);
  ob_task_free(t);
}

static ob_status cold_measure(void *user, ob_task *task, const ob_config *cfgs, int n,
                              ob_measure_result *res) {
  (void)task;
  int *calls = user;
  (*calls)++;
  for (int i = 0; i < n; i++) {
    memset(&res[i], 0, sizeof res[i]);
    res[i].gflops = synth(&cfgs[i], &res[i].error_no);
    res[i].timing.median_s = res[i].gflops > 0 ? 1e-3 / res[i].gflops : 0;
  }
  return OB_OK;
}

/* A cold xgb (no base model) proposes only what its first fit needs, then
 * waits for those results instead of planning a second random batch into
 * the pipeline's delay; the loop asks again after the update. */
static void test_cold_start(void) {
  ob_task *t = conv_task(SMALL);
  if (!t) return;
  ob_tuner_opts o = {.seed = 9};
  ob_tuner *tu = NULL;
  CHECK(ob_tuner_new(ctx, "xgb", t, &o, &tu) == OB_OK);
  if (tu) {
    ob_config cfg[16];
    ob_measure_result res[16];
    int got = -1, again = -1, after = -1;
    CHECK(ob_tuner_next_batch(tu, 16, cfg, &got) == OB_OK);
    CHECK_MSG(got > 0 && got < 16, "first cold batch: %d configs", got);
    CHECK(ob_tuner_next_batch(tu, 16, cfg + got, &again) == OB_OK);
    CHECK_MSG(again == 0, "a cold tuner with results outstanding proposed %d more", again);
    if (got > 0 && got <= 16) {
      for (int i = 0; i < got; i++) {
        memset(&res[i], 0, sizeof res[i]);
        res[i].gflops = synth(&cfg[i], &res[i].error_no);
      }
      CHECK(ob_tuner_update(tu, cfg, res, got) == OB_OK);
    }
    CHECK(ob_tuner_next_batch(tu, 16, cfg, &after) == OB_OK);
    CHECK_MSG(after == 16, "after the first results: %d configs", after);
    ob_tuner_free(tu);
  }
  /* through the loop: every trial of the budget is run, no config twice */
  CHECK(ob_tuner_new(ctx, "xgb", t, &o, &tu) == OB_OK);
  if (tu) {
    int calls = 0;
    ob_tune_opts to = ob_tune_opts_default();
    to.n_trial = 40;
    to.confirm_top = -1;
    to.measure_fn = cold_measure;
    to.user = &calls;
    ob_tune_stats st;
    CHECK(ob_tune_task(ctx, t, tu, NULL, NULL, &to, &st) == OB_OK);
    CHECK_MSG(st.trials == 40 && st.measured == 40, "%d trials, %d measured", st.trials,
              st.measured);
    CHECK(calls >= 3);
    ob_tuner_free(tu);
  }
  ob_task_free(t);
}

/* A space small enough to spend: every valid config exactly once. */
static void test_exhaust(void) {
  ob_workload wl;
  ob_task *t = NULL;
  CHECK(ob_workload_parse(ctx, "dense", "M=16,N=64,K=64", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, "dense.x86", NULL, &t) == OB_OK);
  if (!t) return;
  const ob_space *s = ob_task_space(t);
  uint64_t nvalid = 0;
  for (uint64_t i = 0; i < ob_space_len(s); i++) nvalid += ob_space_is_valid(s, i);
  const char *names[] = {"xgb", "xgb-rank"};
  for (int k = 0; k < 2; k++) {
    ob_tuner_opts o = {.seed = 5};
    ob_tuner *tu = NULL;
    CHECK(ob_tuner_new(ctx, names[k], t, &o, &tu) == OB_OK);
    if (!tu) continue;
    bool *seen = calloc(ob_space_len(s), 1);
    uint64_t total = 0;
    bool repeated = false;
    ob_config cfg[24];
    ob_measure_result res[24];
    while (ob_tuner_has_next(tu)) {
      int got = 0;
      CHECK(ob_tuner_next_batch(tu, 24, cfg, &got) == OB_OK);
      if (got == 0) break;
      for (int i = 0; i < got; i++) {
        repeated |= seen[cfg[i].index];
        seen[cfg[i].index] = true;
        memset(&res[i], 0, sizeof res[i]);
        int64_t ty[2], tx[2];
        ob_config_split(&cfg[i], "tile_y", ty);
        ob_config_split(&cfg[i], "tile_x", tx);
        res[i].gflops = 10.0 + (double)(ty[1] * tx[1] % 13) + (double)ob_config_knob(&cfg[i], "vec_k") / 4;
      }
      total += (uint64_t)got;
      CHECK(ob_tuner_update(tu, cfg, res, got) == OB_OK);
    }
    CHECK(!repeated);
    CHECK_MSG(total == nvalid, "%s proposed %llu of %llu configs", names[k], (unsigned long long)total,
              (unsigned long long)nvalid);
    int got = -1;
    CHECK(ob_tuner_next_batch(tu, 4, cfg, &got) == OB_OK && got == 0);
    CHECK(!ob_tuner_has_next(tu));
    free(seen);
    ob_tuner_free(tu);
  }
  /* results for configs the tuner never proposed (resume) are taken in and
   * those configs are not proposed afterwards */
  ob_tuner *tu = NULL;
  ob_tuner_opts o = {.seed = 9};
  CHECK(ob_tuner_new(ctx, "xgb_knob", t, &o, &tu) == OB_OK);
  if (tu) {
    ob_config cfg[20];
    ob_measure_result res[20];
    memset(res, 0, sizeof res);
    int n = 0;
    for (uint64_t i = 0; i < ob_space_len(s) && n < 20; i += 3)
      if (!ob_space_get(ctx, s, i, &cfg[n])) {
        res[n].gflops = 1.0 + (double)(i % 7);
        n++;
      }
    CHECK(ob_tuner_update(tu, cfg, res, n) == OB_OK);
    bool clash = false;
    for (int round = 0; round < 4; round++) {
      ob_config out[16];
      int got = 0;
      CHECK(ob_tuner_next_batch(tu, 16, out, &got) == OB_OK);
      for (int i = 0; i < got; i++)
        for (int j = 0; j < n; j++) clash |= out[i].index == cfg[j].index;
    }
    CHECK(!clash);
    /* a config of another space is refused */
    ob_task *other = conv_task(SMALL);
    if (other) {
      ob_config oc = ob_task_default_config(other);
      CHECK(ob_tuner_update(tu, &oc, res, 1) == OB_ERR_INVALID_ARG);
      ob_task_free(other);
    }
    ob_tuner_free(tu);
  }
  CHECK(ob_tuner_new(ctx, "xgb_bogus", t, &o, &tu) == OB_ERR_NOT_FOUND);
  ob_task_free(t);
}

/* ---- transfer ------------------------------------------------------------------------ */

/* Stores every other valid config of `task` with its synthetic result, as
 * an earlier tuning run of that workload would have. */
static void fill_db(ob_db *db, ob_task *task) {
  const ob_space *s = ob_task_space(task);
  const ob_workload *wl = ob_task_workload(task);
  char key[512];
  ob_workload_key(wl, key, sizeof key);
  CHECK(ob_workload_store(db, wl) == OB_OK);
  CHECK(ob_db_exec(db, "BEGIN IMMEDIATE") == OB_OK);
  for (uint64_t i = 0; i < ob_space_len(s); i += 2) {
    ob_config c;
    if (ob_space_get(ctx, s, i, &c)) continue;
    char *json = NULL;
    CHECK(ob_config_to_json(ctx, &c, &json) == OB_OK);
    int e;
    double g = synth(&c, &e);
    double cost = e ? NAN : ob_task_flops(task) / (g * 1e9);
    ob_db_record r;
    memset(&r, 0, sizeof r);
    r.host = "testhost";
    r.workload = key;
    r.target = ob_target_str(ob_task_target(task)); /* transfer reads this target's records */
    r.resources = "threads=1";
    r.tmpl = ob_task_template(task);
    r.config_index = i;
    r.entity = json;
    r.error_no = e;
    r.timing.median_s = r.timing.mean_s = cost;
    r.timing.cv = NAN;
    r.timing.ncosts = e ? 0 : 1;
    r.timing.costs[0] = cost;
    r.build_s = r.run_s = NAN;
    CHECK(ob_db_put_measurement(db, &r, 0, NULL) == OB_OK);
    free(json);
  }
  ob_ctx_clear_error(ctx);
  CHECK(ob_db_exec(db, "COMMIT") == OB_OK);
}

static void test_transfer(void) {
  char path[] = "/tmp/opbench_test_xgb_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  unlink(path);
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, path, 0, &db) == OB_OK);
  ob_task *a = conv_task(SMALL), *b = conv_task(OTHER);
  if (!db || !a || !b) goto done;
  fill_db(db, a);
  ob_db_close(db);
  db = NULL;

  space_best sb = find_best(b);
  ob_feat_cache *fc = shared_cache(b);
  /* xgb_knob: the other shape's space differs, so its base model falls
   * back to curve features under the knob-feature online model */
  const char *names[] = {"xgb", "xgb_curve", "xgb_knob"};
  for (int k = 0; k < 3; k++) {
    double with = 0, without = 0, with_best = 0, without_best = 0;
    for (int s = 0; s < NSEEDS; s++) {
      drive_res r1 = drive(b, names[k], (uint64_t)s + 11, NULL, BUDGET, &sb, fc);
      drive_res r2 = drive(b, names[k], (uint64_t)s + 11, path, BUDGET, &sb, fc);
      CHECK(!r2.repeated && !r2.invalid);
      without += r1.to_good;
      with += r2.to_good;
      without_best += r1.to_best;
      with_best += r2.to_best;
      if (verbose)
        printf("%-10s seed %d: 95%% after %d trials without transfer, %d with (optimum %d / %d)\n",
               names[k], s + 11, r1.to_good, r2.to_good, r1.to_best, r2.to_best);
    }
    CHECK_MSG(!STAT_BARS || with < without, "%s: %.1f trials to 95%% with transfer, %.1f without", names[k],
              with / NSEEDS, without / NSEEDS);
    CHECK_MSG(!STAT_BARS || with_best <= without_best, "%s: %.1f trials to the optimum with transfer, %.1f without",
              names[k], with_best / NSEEDS, without_best / NSEEDS);
  }
  /* a database path that does not exist: no transfer, the tuner still works */
  {
    char missing[600];
    snprintf(missing, sizeof missing, "%s.missing", path);
    drive_res r = drive(b, "xgb", 3, missing, 64, &sb, fc);
    CHECK((r.proposed == 64 || r.to_best <= 64) && !r.repeated && !r.invalid);
  }
  ob_feat_cache_free(fc);
done:
  ob_db_close(db);
  ob_task_free(a);
  ob_task_free(b);
  unlink(path);
  char side[600];
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

int main(void) {
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  const char *v = getenv("OB_TEST_VERBOSE");
  verbose = v && *v && *v != '0';
  if (!verbose) ob_ctx_set_log_level(ctx, OB_LOG_ERROR);
  double t0 = ob_now_s();
  test_features();
  double t1 = ob_now_s();
  test_tuners_find_optimum();
  double t2 = ob_now_s();
  test_exhaust();
  test_cold_start();
  double t3 = ob_now_s();
  test_transfer();
  double t4 = ob_now_s();
  if (verbose)
    printf("seconds: features %.2f, optimum %.2f, exhaust %.2f, transfer %.2f\n", t1 - t0, t2 - t1,
           t3 - t2, t4 - t3);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
