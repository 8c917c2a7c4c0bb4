/* xgb.c: AutoTVM's model-based tuner on XGBoost's C API. A cost model
 * (gradient-boosted trees over knob / itervar / curve features, loss reg or
 * rank) is fit on every result so far; simulated annealing with persistent
 * chains looks for the configs it scores highest; a diversity filter and a
 * few random picks make the next plan. With a database path, records of the
 * same operator and template (other shapes, earlier runs) train a base
 * model first: it plans the first trials and its margin, discounted by
 * 2^(-n/64), is added to the online model (AutoTVM's transfer). Without
 * one (cold), the first batch is only what the first fit needs and the
 * tuner then waits for its results rather than filling the loop's batch of
 * delay with more random configs.
 *
 * The tuner object owns its feature cache (or borrows the one
 * opts->features shares), training rows, boosters and plan; the task is
 * borrowed and must outlive it. Model failures are not
 * fatal: the tuner logs a warning and proposes random configs instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "opbench/db.h"
#include "space/space_impl.h"
#include "tune/feature.h"
#include "tune/tuner_impl.h"

/* AutoTVM's constants (tvm.autotvm.tuner.XGBTuner / SimulatedAnnealingOptimizer) */
#define PLAN_SIZE 64
#define SA_CHAINS 128
#define SA_ITERS 500
#define SA_EARLY_STOP 50
/* Seconds one annealing may take: its steps score every chain's next
 * config through features of the lowered config, and lowering a Winograd
 * config costs far more than a direct one's (one conv2d_winograd.x86 task
 * of 16 trials ran 442 s under xgb, 23 s under random, all but seconds of it
 * lowering for the annealing; the direct tasks beside it 5-8 s) */
#define SA_BUDGET_S 5.0 /* default of ob_tuner_opts.plan_seconds */
#define EPS_GREEDY 0.05       /* share of proposals drawn at random */
#define DIVERSITY_RATIO 2     /* SA keeps this many plans' worth for the filter */
#define KNOB_WEIGHT 0.5       /* diversity bonus of a config whose every knob value is new */
#define MIN_TRAIN 8           /* results before the first fit (random until then) */
#define MAX_ROUNDS 1000       /* boosting rounds; early stopping ends far sooner */
#define BASE_ROUNDS 400       /* the base model's rounds, as AutoTVM's fit_log */
#define EARLY_ROUNDS 20       /* rounds without a better a-recall@plan */
#define BASE_DISCARD 0.05     /* the base model is dropped below this weight */
#define TRANSFER_MIN 64       /* usable records before a base model is trained */
#define TRANSFER_MAX 4000     /* records used for transfer (an even sample of more) */
#define COUNT_VALID_MAX (UINT64_C(1) << 22) /* spaces up to this are counted exactly */

typedef struct model_data {
  float *x;   /* n rows of flen */
  float *y;
  float *margin; /* NULL or n base margins */
  int n, flen;
} model_data;

typedef struct xgb {
  ob_ctx *ctx;
  struct ob_task *task;
  const ob_space *space;
  ob_feature_kind kind;
  bool rank;
  int plan_size;
  double plan_s; /* seconds one annealing may take */
  ob_rng rng;
  ob_feat_cache *fc;
  bool fc_borrowed; /* opts->features: another's, not freed here */
  int flen;

  ob_idxset visited; /* proposed, or told about through update */
  uint64_t nvalid, nvis_valid;

  /* training rows, one per distinct config */
  ob_idxset trained;
  uint64_t *xidx;
  float *xs, *ys;
  int n, cap;

  /* online model */
  BoosterHandle bst;
  int n_fit;        /* rows at the last fit (or plan from the base model) */
  bool planned;     /* a model made at least one plan */
  double discount;  /* weight of the base margin in bst */
  bool model_broken;

  /* base model (transfer) */
  BoosterHandle base;
  ob_feature_kind base_kind;
  int base_flen, base_n; /* features, records learned from */

  int outstanding; /* proposed, results not reported yet */

  /* plan */
  uint64_t *plan;
  int plan_len, plan_cap, plan_pt;

  /* simulated annealing chains, kept between plans */
  uint64_t chains[SA_CHAINS];
  int nchains;

  /* scratch */
  float *fbuf, *bbuf;
  size_t fbuf_cap, bbuf_cap;
} xgb;

/* ---- small helpers ------------------------------------------------------------ */

static double urand(ob_rng *r) { return (double)(ob_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static uint64_t rand_below(ob_rng *r, uint64_t n) { return n ? ob_rng_next(r) % n : 0; }

/* A reusable buffer of n floats; NULL when out of memory. */
static float *scratch(float **buf, size_t *cap, size_t n) {
  if (n > *cap) {
    float *p = realloc(*buf, n * sizeof(float));
    if (!p) return NULL;
    *buf = p;
    *cap = n;
  }
  return *buf;
}

static ob_status xgb_fail(ob_ctx *ctx, const char *what) {
  return ob_fail(ctx, OB_ERR_RUNTIME, "XGBoost %s: %s", what, XGBGetLastError());
}

/* A valid config not visited yet, uniformly; UINT64_MAX when none is left. */
static uint64_t random_unvisited(xgb *t) {
  uint64_t len = ob_space_len(t->space);
  if (t->nvis_valid >= t->nvalid) return UINT64_MAX;
  for (int tries = 0; tries < 64; tries++) {
    uint64_t i = rand_below(&t->rng, len);
    if (!ob_idxset_has(&t->visited, i) && ob_space_is_valid(t->space, i)) return i;
  }
  /* nearly spent: scan from a random start */
  uint64_t start = rand_below(&t->rng, len);
  for (uint64_t k = 0; k < len; k++) {
    uint64_t i = (start + k) % len;
    if (!ob_idxset_has(&t->visited, i) && ob_space_is_valid(t->space, i)) return i;
  }
  return UINT64_MAX;
}

/* A valid config, visited or not; UINT64_MAX when the filter rejects all. */
static uint64_t random_valid(xgb *t) {
  uint64_t len = ob_space_len(t->space);
  for (int tries = 0; tries < 256; tries++) {
    uint64_t i = rand_below(&t->rng, len);
    if (ob_space_is_valid(t->space, i)) return i;
  }
  uint64_t start = rand_below(&t->rng, len);
  for (uint64_t k = 0; k < len; k++)
    if (ob_space_is_valid(t->space, (start + k) % len)) return (start + k) % len;
  return UINT64_MAX;
}

/* One knob changed to another of its choices (AutoTVM's random_walk);
 * filter-rejected neighbours are retried, then p itself is returned. */
static uint64_t random_walk(xgb *t, uint64_t p) {
  const ob_space *s = t->space;
  int movable[OB_MAX_KNOBS], nm = 0;
  for (int k = 0; k < s->nknobs; k++)
    if (s->knobs[k].n > 1) movable[nm++] = k;
  if (!nm) return p;
  ob_config c;
  ob_space_decode(s, p, &c);
  for (int tries = 0; tries < 8; tries++) {
    int k = movable[rand_below(&t->rng, (uint64_t)nm)];
    int old = c.choice[k];
    int v = (int)rand_below(&t->rng, (uint64_t)(s->knobs[k].n - 1));
    c.choice[k] = v >= old ? v + 1 : v;
    uint64_t q = ob_config_index_of(s, c.choice);
    if (ob_space_is_valid(s, q)) return q;
    c.choice[k] = old;
  }
  return p;
}

/* ---- XGBoost ------------------------------------------------------------------- */

static ob_status booster_params(xgb *t, BoosterHandle b) {
  char seed[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)(ob_rng_next(&t->rng) & 0x7fffffff));
  const char *kv[][2] = {
      {"max_depth", "3"},   {"gamma", "0.0001"}, {"min_child_weight", "1"},
      {"subsample", "1.0"}, {"eta", "0.3"},      {"lambda", "1.00"},
      {"alpha", "0"},       {"objective", t->rank ? "rank:pairwise" : "reg:squarederror"},
      {"nthread", "1"},     {"verbosity", "0"},  {"seed", seed},
  };
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (XGBoosterSetParam(b, kv[i][0], kv[i][1])) return xgb_fail(t->ctx, "setting parameters");
  return OB_OK;
}

/* Margins of `b` on rows x (n x flen), with an optional base margin. */
static ob_status predict(xgb *t, BoosterHandle b, const float *x, int n, int flen,
                         const float *margin, float *out) {
  DMatrixHandle d = NULL;
  ob_status st = OB_OK;
  if (XGDMatrixCreateFromMat_omp(x, (bst_ulong)n, (bst_ulong)flen, NAN, &d, 1)) {
    st = xgb_fail(t->ctx, "making a prediction matrix");
    goto done;
  }
  if (margin && XGDMatrixSetFloatInfo(d, "base_margin", margin, (bst_ulong)n)) {
    st = xgb_fail(t->ctx, "setting base margins");
    goto done;
  }
  bst_ulong len = 0;
  const float *res = NULL;
  if (XGBoosterPredict(b, d, 1 /* output margin */, 0, 0, &len, &res)) {
    st = xgb_fail(t->ctx, "predicting");
    goto done;
  }
  OB_ASSERT(len == (bst_ulong)n);
  memcpy(out, res, sizeof(float) * (size_t)n);
done:
  if (d) XGDMatrixFree(d);
  return st;
}

typedef struct scored {
  float s;
  int i;
} scored;

static int by_score_desc(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->s != y->s) return x->s < y->s ? 1 : -1;
  return x->i - y->i;
}

/* AutoTVM's a-recall@k on the training set: how many of the true top-i are
 * among the predicted top-i, averaged over i <= k. */
static double recall_at(const float *pred, const float *y, int n, int k, scored *tmp, int *rank) {
  for (int i = 0; i < n; i++) tmp[i] = (scored){y[i], i};
  qsort(tmp, (size_t)n, sizeof *tmp, by_score_desc);
  for (int i = 0; i < n; i++) rank[tmp[i].i] = i;
  for (int i = 0; i < n; i++) tmp[i] = (scored){pred[i], i};
  qsort(tmp, (size_t)n, sizeof *tmp, by_score_desc);
  if (k > n) k = n;
  double sum = 0;
  for (int i = 0; i < k; i++) {
    int hit = 0;
    for (int j = 0; j < i; j++) hit += rank[tmp[j].i] <= i;
    sum += (double)hit / (i + 1);
  }
  return k ? sum / k : 0;
}

/* Fits a booster on d; rounds until a-recall@plan stops improving. */
static ob_status train(xgb *t, const model_data *d, int max_rounds, BoosterHandle *out) {
  *out = NULL;
  DMatrixHandle m = NULL;
  BoosterHandle b = NULL;
  ob_status st = OB_OK;
  float *pred = malloc(sizeof(float) * (size_t)d->n);
  scored *tmp = malloc(sizeof(scored) * (size_t)d->n);
  int *rank = malloc(sizeof(int) * (size_t)d->n);
  if (!pred || !tmp || !rank) {
    st = ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory training the cost model");
    goto done;
  }
  if (XGDMatrixCreateFromMat_omp(d->x, (bst_ulong)d->n, (bst_ulong)d->flen, NAN, &m, 1) ||
      XGDMatrixSetFloatInfo(m, "label", d->y, (bst_ulong)d->n) ||
      (d->margin && XGDMatrixSetFloatInfo(m, "base_margin", d->margin, (bst_ulong)d->n))) {
    st = xgb_fail(t->ctx, "making the training matrix");
    goto done;
  }
  if (XGBoosterCreate(&m, 1, &b)) {
    st = xgb_fail(t->ctx, "creating a booster");
    goto done;
  }
  st = booster_params(t, b);
  if (st) goto done;
  double best = -1;
  int best_round = 0, rounds = 0;
  for (int r = 0; r < max_rounds; r++) {
    rounds = r + 1;
    if (XGBoosterUpdateOneIter(b, r, m)) {
      st = xgb_fail(t->ctx, "boosting");
      goto done;
    }
    bst_ulong len = 0;
    const float *res = NULL;
    if (XGBoosterPredict(b, m, 1, 0, 0, &len, &res)) {
      st = xgb_fail(t->ctx, "predicting the training set");
      goto done;
    }
    memcpy(pred, res, sizeof(float) * (size_t)d->n);
    double rc = recall_at(pred, d->y, d->n, t->plan_size, tmp, rank);
    if (rc > best) {
      best = rc;
      best_round = r;
    } else if (r - best_round >= EARLY_ROUNDS) {
      break;
    }
  }
  ob_log(t->ctx, OB_LOG_DEBUG, "xgb: fit %d rows in %d rounds (a-recall@%d %.3f at round %d)", d->n,
         rounds, t->plan_size, best, best_round + 1);
  *out = b;
  b = NULL;
done:
  if (b) XGBoosterFree(b);
  if (m) XGDMatrixFree(m);
  free(pred);
  free(tmp);
  free(rank);
  return st;
}

/* ---- scoring configs ------------------------------------------------------------ */

static bool base_active(const xgb *t) { return t->base != NULL; }

/* Model scores of configs idx[0..n): the online model (plus the discounted
 * base margin), or the base model alone before the first fit. */
static ob_status score(xgb *t, const uint64_t *idx, int n, float *out) {
  float *margin = NULL;
  ob_status st = OB_OK;
  ob_config c;
  if (base_active(t)) {
    float *bx = scratch(&t->bbuf, &t->bbuf_cap, (size_t)n * (size_t)t->base_flen + (size_t)n);
    if (!bx) return ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory scoring configs");
    for (int i = 0; i < n; i++) {
      ob_space_decode(t->space, idx[i], &c);
      ob_feat_cache_get(t->fc, &c, t->base_kind, bx + (size_t)i * (size_t)t->base_flen);
    }
    if ((st = ob_feat_cache_check(t->fc))) return st;
    margin = bx + (size_t)n * (size_t)t->base_flen;
    st = predict(t, t->base, bx, n, t->base_flen, NULL, margin);
    if (st) return st;
    if (!t->bst) {
      memcpy(out, margin, sizeof(float) * (size_t)n);
      return OB_OK;
    }
    for (int i = 0; i < n; i++) margin[i] *= (float)t->discount;
  }
  OB_ASSERT(t->bst);
  float *x = scratch(&t->fbuf, &t->fbuf_cap, (size_t)n * (size_t)t->flen);
  if (!x) return ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory scoring configs");
  for (int i = 0; i < n; i++) {
    ob_space_decode(t->space, idx[i], &c);
    ob_feat_cache_get(t->fc, &c, t->kind, x + (size_t)i * (size_t)t->flen);
  }
  if ((st = ob_feat_cache_check(t->fc))) return st;
  return predict(t, t->bst, x, n, t->flen, margin, out);
}

/* ---- search ----------------------------------------------------------------------- */

typedef struct heap {
  float *s;
  uint64_t *p;
  int n, cap;
} heap;

/* Keeps the cap best unvisited points (a small array: cap <= a few hundred). */
static bool heap_push(xgb *t, heap *h, float s, uint64_t p) {
  if (ob_idxset_has(&t->visited, p)) return false;
  for (int i = 0; i < h->n; i++)
    if (h->p[i] == p) return false;
  if (h->n < h->cap) {
    h->s[h->n] = s;
    h->p[h->n++] = p;
    return true;
  }
  int lo = 0;
  for (int i = 1; i < h->n; i++)
    if (h->s[i] < h->s[lo]) lo = i;
  if (!(s > h->s[lo])) return false;
  h->s[lo] = s;
  h->p[lo] = p;
  return true;
}

/* Simulated annealing over the space (AutoTVM's find_maximums): the
 * persistent chains walk one knob at a time for up to SA_ITERS steps,
 * temperature 1 -> 0, and stop after SA_EARLY_STOP steps that found
 * nothing new for the top `num`. Fills h sorted best first. */
static ob_status anneal(xgb *t, heap *h) {
  ob_status st = OB_OK;
  if (!t->nchains) {
    uint64_t want = t->nvalid < SA_CHAINS ? t->nvalid : SA_CHAINS;
    for (uint64_t i = 0; i < want; i++) {
      uint64_t p = random_valid(t);
      if (p == UINT64_MAX) break;
      t->chains[t->nchains++] = p;
    }
  }
  int nc = t->nchains;
  if (!nc) return OB_OK;
  float scores[SA_CHAINS], nscores[SA_CHAINS];
  uint64_t next[SA_CHAINS];
  st = score(t, t->chains, nc, scores);
  if (st) return st;
  for (int i = 0; i < nc; i++) heap_push(t, h, scores[i], t->chains[i]);
  double temp = 1.0, cool = 1.0 / (SA_ITERS + 1), t0 = ob_now_s();
  int k = 0, last = 0;
  bool over = false;
  while (k < SA_ITERS && k < last + SA_EARLY_STOP && !(over = ob_now_s() - t0 > t->plan_s)) {
    for (int i = 0; i < nc; i++) next[i] = random_walk(t, t->chains[i]);
    st = score(t, next, nc, nscores);
    if (st) return st;
    for (int i = 0; i < nc; i++) {
      double d = (nscores[i] - scores[i]) / (temp + 1e-5);
      if (urand(&t->rng) < exp(d < 1 ? d : 1)) {
        t->chains[i] = next[i];
        scores[i] = nscores[i];
      }
    }
    for (int i = 0; i < nc; i++)
      if (heap_push(t, h, nscores[i], next[i])) last = k;
    k++;
    temp -= cool;
  }
  int64_t lowered = 0, hits = 0;
  ob_feat_cache_stats(t->fc, &lowered, &hits);
  ob_log(t->ctx, OB_LOG_DEBUG,
         "xgb: annealing stopped after %d steps%s with %d candidates (features: %lld configs lowered, "
         "%lld from the cache)", k, over ? " (its time budget)" : "", h->n, (long long)lowered, (long long)hits);
  /* sort best first */
  scored *o = malloc(sizeof(scored) * (size_t)(h->n ? h->n : 1));
  uint64_t *p = malloc(sizeof(uint64_t) * (size_t)(h->n ? h->n : 1));
  if (!o || !p) {
    free(o);
    free(p);
    return ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory in the config search");
  }
  for (int i = 0; i < h->n; i++) o[i] = (scored){h->s[i], i};
  qsort(o, (size_t)h->n, sizeof *o, by_score_desc);
  for (int i = 0; i < h->n; i++) p[i] = h->p[o[i].i];
  for (int i = 0; i < h->n; i++) {
    h->s[i] = o[i].s;
    h->p[i] = p[i];
  }
  free(o);
  free(p);
  return OB_OK;
}

static bool has_value(const int32_t *vals, int n, int32_t v) {
  for (int j = 0; j < n; j++)
    if (vals[j] == v) return true;
  return false;
}

/* AutoTVM's submodular pick: greedily takes the candidate with the best
 * normalised score plus KNOB_WEIGHT times the share of its knob values
 * not yet in the picked set. cand is sorted best first; writes the picks
 * in pick order and returns how many (-1: out of memory). */
static int diversity_pick(xgb *t, const heap *cand, int npick, uint64_t *out) {
  int n = cand->n, nk = t->space->nknobs;
  if (npick > n) npick = n;
  if (npick <= 0) return 0;
  size_t kk = (size_t)(nk ? nk : 1);
  float lo = cand->s[n - 1], hi = cand->s[0];
  int32_t *choice = malloc(sizeof(int32_t) * (size_t)n * kk); /* n rows of nk */
  bool *taken = calloc((size_t)n, sizeof *taken);
  int32_t *seen = malloc(sizeof(int32_t) * (size_t)npick * kk); /* per knob, npick slots */
  int *nseen = calloc(kk, sizeof *nseen);
  if (!choice || !taken || !seen || !nseen) {
    npick = -1;
    goto done;
  }
  for (int i = 0; i < n; i++) {
    ob_config c;
    ob_space_decode(t->space, cand->p[i], &c);
    memcpy(choice + (size_t)i * kk, c.choice, sizeof(int32_t) * (size_t)nk);
  }
  for (int m = 0; m < npick; m++) {
    int best = -1;
    double best_d = -1e300;
    for (int i = 0; i < n; i++) {
      if (taken[i]) continue;
      const int32_t *ch = choice + (size_t)i * kk;
      int fresh = 0;
      for (int k = 0; k < nk; k++) fresh += !has_value(seen + (size_t)k * (size_t)npick, nseen[k], ch[k]);
      double d = hi > lo ? (cand->s[i] - lo) / (hi - lo) : 0;
      if (nk) d += KNOB_WEIGHT * fresh / nk;
      if (d > best_d) {
        best_d = d;
        best = i;
      }
    }
    taken[best] = true;
    out[m] = cand->p[best];
    const int32_t *ch = choice + (size_t)best * kk;
    for (int k = 0; k < nk; k++) {
      int32_t *row = seen + (size_t)k * (size_t)npick;
      if (!has_value(row, nseen[k], ch[k])) row[nseen[k]++] = ch[k];
    }
  }
done:
  free(choice);
  free(taken);
  free(seen);
  free(nseen);
  return npick;
}

/* ---- fitting and planning --------------------------------------------------------- */

/* Results between refits: plan_size, but sooner while the data is thin
 * (refits at 8, 16, 32, 64 results, then every plan_size). */
static int plan_target(const xgb *t) {
  int want = t->n_fit < MIN_TRAIN ? MIN_TRAIN : t->n_fit;
  return want < t->plan_size ? want : t->plan_size;
}

static ob_status fit(xgb *t) {
  ob_status st = OB_OK;
  double ymax = 0;
  for (int i = 0; i < t->n; i++)
    if (t->ys[i] > ymax) ymax = t->ys[i];
  model_data d = {.x = t->xs, .n = t->n, .flen = t->flen};
  d.y = malloc(sizeof(float) * (size_t)t->n);
  if (!d.y) return ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory fitting the cost model");
  for (int i = 0; i < t->n; i++) d.y[i] = ymax > 0 ? (float)(t->ys[i] / ymax) : 0.0f;
  if (t->base) {
    t->discount = 1.0 / pow(2.0, t->n / 64.0);
    if (t->discount < BASE_DISCARD) {
      XGBoosterFree(t->base);
      t->base = NULL;
      ob_log(t->ctx, OB_LOG_DEBUG, "xgb: base model dropped after %d records", t->n);
    }
  }
  if (t->base) {
    float *bx = malloc(sizeof(float) * (size_t)t->n * (size_t)t->base_flen);
    d.margin = malloc(sizeof(float) * (size_t)t->n);
    if (!bx || !d.margin) {
      free(bx);
      st = ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory fitting the cost model");
      goto done;
    }
    for (int i = 0; i < t->n; i++) {
      ob_config c;
      ob_space_decode(t->space, t->xidx[i], &c);
      ob_feat_cache_get(t->fc, &c, t->base_kind, bx + (size_t)i * (size_t)t->base_flen);
    }
    st = ob_feat_cache_check(t->fc);
    if (!st) st = predict(t, t->base, bx, t->n, t->base_flen, NULL, d.margin);
    free(bx);
    if (st) goto done;
    for (int i = 0; i < t->n; i++) d.margin[i] *= (float)t->discount;
  }
  BoosterHandle b = NULL;
  st = train(t, &d, MAX_ROUNDS, &b);
  if (st) goto done;
  if (t->bst) XGBoosterFree(t->bst);
  t->bst = b;
done:
  free(d.y);
  free(d.margin);
  return st;
}

/* Refits when a plan's worth of results came in, then plans the top
 * plan_size configs of the annealing's 2 x plan_size after the diversity
 * filter. Before the first fit, a base model alone makes the first plan. */
static ob_status maybe_replan(xgb *t) {
  if (t->model_broken) return OB_OK;
  bool have_pos = false;
  for (int i = 0; i < t->n && !have_pos; i++) have_pos = t->ys[i] > 0;
  bool refit = have_pos && t->n >= MIN_TRAIN && (!t->bst || t->n - t->n_fit >= plan_target(t));
  bool base_plan = !t->planned && t->base && !refit;
  if (!refit && !base_plan) return OB_OK;
  ob_status st = OB_OK;
  if (refit) {
    st = fit(t);
    if (st) goto fail;
  }
  t->n_fit = t->n;
  t->planned = true;
  int len = t->plan_size;
  heap h = {0};
  h.cap = DIVERSITY_RATIO * len;
  h.s = malloc(sizeof(float) * (size_t)h.cap);
  h.p = malloc(sizeof(uint64_t) * (size_t)h.cap);
  if (!h.s || !h.p) {
    free(h.s);
    free(h.p);
    st = ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory planning");
    goto fail;
  }
  st = anneal(t, &h);
  if (!st) {
    uint64_t *p = t->plan_cap < len ? realloc(t->plan, sizeof(uint64_t) * (size_t)len) : t->plan;
    if (p) {
      t->plan = p;
      t->plan_cap = t->plan_cap < len ? len : t->plan_cap;
    }
    t->plan_len = p ? diversity_pick(t, &h, len, t->plan) : -1;
    t->plan_pt = 0;
    if (t->plan_len < 0) {
      t->plan_len = 0;
      st = ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory planning");
    }
  }
  free(h.s);
  free(h.p);
  if (st) goto fail;
  return OB_OK;
fail:
  if (st == OB_ERR_NOMEM) return st; /* not the model's fault: nothing would go on well */
  /* the model is an aid: say why, and go on with random proposals */
  ob_log(t->ctx, OB_LOG_WARN, "xgb: cost model disabled, proposing random configs: %s",
         ob_ctx_errmsg(t->ctx));
  ob_ctx_clear_error(t->ctx);
  t->model_broken = true;
  t->plan_len = t->plan_pt = 0;
  return OB_OK;
}

/* ---- transfer ------------------------------------------------------------------- */

static bool same_space(const ob_space *a, const ob_space *b) {
  if (a->nknobs != b->nknobs) return false;
  for (int k = 0; k < a->nknobs; k++) {
    const ob_knob *x = &a->knobs[k], *y = &b->knobs[k];
    if (strcmp(x->name, y->name) || x->kind != y->kind || x->width != y->width || x->n != y->n ||
        memcmp(x->vals, y->vals, sizeof(int64_t) * (size_t)x->n * (size_t)x->width))
      return false;
  }
  return true;
}

/* The workload of a record of another shape, from its stored attributes. */
static bool workload_of(ob_ctx *ctx, const char *op, const char *attrs, ob_workload *wl) {
  bool ok = ob_workload_from_attrs(ctx, op, attrs, wl) == OB_OK;
  if (!ok) ob_ctx_clear_error(ctx);
  return ok;
}

static bool config_of(ob_ctx *ctx, const ob_space *s, const ob_db_record *r, bool same_wl,
                      ob_config *c) {
  bool ok = false;
  if (r->entity && *r->entity) {
    ok = !ob_config_from_json(ctx, s, r->entity, c);
  } else if (same_wl) {
    ok = !ob_space_get(ctx, s, r->config_index, c);
  }
  if (!ok) ob_ctx_clear_error(ctx);
  return ok;
}

/* Features and labels of one workload's records, rec[lo..hi), labels
 * normalised by the best of the group (per host). */
static void add_group(xgb *t, struct ob_task *task, const ob_db_record *rec, int64_t lo,
                      int64_t hi, int64_t stride, ob_feature_kind kind, model_data *d, int cap) {
  int start = d->n;
  double ymax = 0;
  const ob_space *s = ob_task_space(task);
  bool same_wl = task == t->task;
  for (int64_t i = lo; i < hi && d->n < cap; i++) {
    if (i % stride) continue;
    ob_config c;
    if (!config_of(t->ctx, s, &rec[i], same_wl, &c)) continue;
    float *x = d->x + (size_t)d->n * (size_t)d->flen;
    if (ob_feature_extract(t->ctx, task, &c, kind, x)) {
      ob_ctx_clear_error(t->ctx);
      continue;
    }
    double y = rec[i].error_no == 0 && rec[i].gflops > 0 ? rec[i].gflops : 0;
    d->y[d->n++] = (float)y;
    if (y > ymax) ymax = y;
  }
  for (int i = start; i < d->n; i++) d->y[i] = ymax > 0 ? (float)(d->y[i] / ymax) : 0.0f;
}

/* Features (of `kind`) and labels of the usable records into d: per
 * (workload, host) group, each workload rebuilt from its attributes as a
 * task of this template. Knob features only from groups whose space is
 * this task's. */
static void collect(xgb *t, const ob_db_records *recs, ob_feature_kind kind, int64_t stride,
                    model_data *d, int cap) {
  const ob_workload *own = ob_task_workload(t->task);
  char own_key[512];
  ob_workload_key(own, own_key, sizeof own_key);
  d->n = 0;
  d->flen = ob_feature_len(t->space, kind);
  for (int64_t lo = 0; lo < recs->n;) {
    const ob_db_record *r0 = &recs->rec[lo];
    int64_t hi = lo + 1;
    while (hi < recs->n && !strcmp(recs->rec[hi].workload, r0->workload) &&
           !strcmp(recs->rec[hi].host, r0->host))
      hi++;
    struct ob_task *task = NULL;
    ob_workload wl;
    if (!strcmp(r0->workload, own_key)) {
      task = t->task;
    } else if (workload_of(t->ctx, own->op, r0->attrs, &wl) &&
               ob_task_new(t->ctx, &wl, ob_task_template(t->task), ob_task_target(t->task), &task)) {
      ob_ctx_clear_error(t->ctx);
      task = NULL;
    }
    if (task && (kind != OB_FEATURE_KNOB || same_space(ob_task_space(task), t->space)))
      add_group(t, task, recs->rec, lo, hi, stride, kind, d, cap);
    if (task != t->task) ob_task_free(task);
    lo = hi;
  }
}

/* Trains the base model from the database's records of the same operator
 * and template: on knob features for a knob tuner when enough records
 * come from spaces equal to this one, on curve features otherwise.
 * Transfer is best effort: a database that cannot be read or holds too
 * few records leaves the tuner without a base model (logged). */
static ob_status load_transfer(xgb *t, const char *path) {
  ob_db *db = NULL;
  ob_db_records *recs = NULL;
  model_data d = {0};
  const ob_workload *own = ob_task_workload(t->task);
  const char *tmpl = ob_task_template(t->task);
  ob_status st = ob_db_open(t->ctx, path, OB_DB_READONLY, &db);
  if (st) goto skip;
  ob_db_filter f;
  memset(&f, 0, sizeof f);
  f.op = own->op;
  f.key.tmpl = tmpl;
  f.key.target = ob_target_str(ob_task_target(t->task)); /* configs index this target's spaces */
  f.order = OB_DB_ORDER_KEY;
  st = ob_db_query(db, &f, &recs);
  if (st) goto skip;
  int64_t stride = (recs->n + TRANSFER_MAX - 1) / TRANSFER_MAX;
  if (stride < 1) stride = 1;
  int cap = (int)((recs->n + stride - 1) / stride);
  int most = ob_feature_len(t->space, OB_FEATURE_CURVE);
  if (ob_feature_len(t->space, OB_FEATURE_KNOB) > most) most = ob_feature_len(t->space, OB_FEATURE_KNOB);
  d.x = malloc(sizeof(float) * ((size_t)cap * (size_t)most + 1));
  d.y = malloc(sizeof(float) * ((size_t)cap + 1));
  if (!d.x || !d.y) {
    st = ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory reading transfer records");
    goto skip;
  }
  ob_feature_kind kind = OB_FEATURE_KNOB;
  if (t->kind == OB_FEATURE_KNOB) collect(t, recs, kind, stride, &d, cap);
  if (t->kind != OB_FEATURE_KNOB || d.n < TRANSFER_MIN) {
    kind = OB_FEATURE_CURVE;
    collect(t, recs, kind, stride, &d, cap);
  }
  int npos = 0;
  for (int i = 0; i < d.n; i++) npos += d.y[i] > 0;
  if (d.n < TRANSFER_MIN || !npos) {
    ob_log(t->ctx, OB_LOG_INFO, "xgb: %d usable records of %s/%s in %s, fewer than %d: no transfer",
           d.n, own->op, tmpl, path, TRANSFER_MIN);
    goto out;
  }
  st = train(t, &d, BASE_ROUNDS, &t->base);
  if (st) goto skip;
  t->base_kind = kind;
  t->base_flen = d.flen;
  t->base_n = d.n;
  ob_log(t->ctx, OB_LOG_INFO, "xgb: base model from %d records of %s/%s (%s features)", d.n,
         own->op, tmpl, ob_feature_kind_name(kind));
  goto out;
skip:
  if (st == OB_ERR_NOMEM) goto out; /* an error, not a database to do without */
  /* a database not created yet is the first run's normal case */
  ob_log(t->ctx, st == OB_ERR_NOT_FOUND ? OB_LOG_INFO : OB_LOG_WARN, "xgb: no transfer from '%s': %s",
         path, ob_ctx_errmsg(t->ctx));
  ob_ctx_clear_error(t->ctx);
out:
  free(d.x);
  free(d.y);
  ob_db_records_free(recs);
  ob_db_close(db);
  return st == OB_ERR_NOMEM ? st : OB_OK;
}

/* ---- vtable -------------------------------------------------------------------- */

static void xgb_free(void *self) {
  xgb *t = self;
  if (!t) return;
  if (t->bst) XGBoosterFree(t->bst);
  if (t->base) XGBoosterFree(t->base);
  if (!t->fc_borrowed) ob_feat_cache_free(t->fc);
  ob_idxset_free(&t->visited);
  ob_idxset_free(&t->trained);
  free(t->xidx);
  free(t->xs);
  free(t->ys);
  free(t->plan);
  free(t->fbuf);
  free(t->bbuf);
  free(t);
}

static bool xgb_has_next(const void *self) {
  const xgb *t = self;
  return t->nvis_valid < t->nvalid;
}

static void mark_visited(xgb *t, uint64_t i) {
  if (ob_idxset_add(&t->visited, i) && ob_space_is_valid(t->space, i)) t->nvis_valid++;
}

static ob_status xgb_next_batch(void *self, int n, ob_config *out, int *got) {
  xgb *t = self;
  *got = 0;
  ob_status st = maybe_replan(t);
  if (st) return st;
  /* Cold (no model, no base model): propose only what the first fit needs,
   * then wait for those results rather than fill the pipeline's batch of
   * delay with more random configs; the loop asks again after the update
   * and the next batch comes from a model. Costs one batch of overlap. */
  if (!t->bst && !t->base && !t->model_broken) {
    int need = MIN_TRAIN - t->n - t->outstanding;
    if (need <= 0 && t->outstanding > 0) return OB_OK;
    if (need > 0 && n > need) n = need;
  }
  while (*got < n) {
    uint64_t idx = UINT64_MAX;
    bool greedy = urand(&t->rng) >= EPS_GREEDY;
    while (greedy && t->plan_pt < t->plan_len) {
      uint64_t c = t->plan[t->plan_pt++];
      if (!ob_idxset_has(&t->visited, c) && ob_space_is_valid(t->space, c)) {
        idx = c;
        break;
      }
    }
    if (idx == UINT64_MAX) idx = random_unvisited(t); /* epsilon, or no plan (left) */
    if (idx == UINT64_MAX) break;
    mark_visited(t, idx);
    if ((st = ob_idxset_check(t->ctx, &t->visited, "xgb"))) return st;
    st = ob_space_get(t->ctx, t->space, idx, &out[*got]);
    OB_ASSERT(st == OB_OK); /* proposals are valid by construction */
    (*got)++;
    t->outstanding++;
  }
  return OB_OK;
}

static ob_status xgb_update(void *self, const ob_config *cfgs, const ob_measure_result *res, int n) {
  xgb *t = self;
  double flops = ob_task_flops(t->task);
  t->outstanding = t->outstanding > n ? t->outstanding - n : 0; /* resumed ones were never out */
  for (int i = 0; i < n; i++) {
    const ob_config *c = &cfgs[i];
    if (c->space != t->space || c->index >= ob_space_len(t->space))
      return ob_fail(t->ctx, OB_ERR_INVALID_ARG,
                     "result %d: config %llu is not in this task's space", i,
                     (unsigned long long)c->index);
    mark_visited(t, c->index);
    double y = 0;
    if (res[i].error_no == 0)
      y = res[i].gflops > 0 ? res[i].gflops
          : res[i].timing.median_s > 0 ? flops / res[i].timing.median_s / 1e9 : 0;
    if (!ob_idxset_add(&t->trained, c->index)) { /* measured again: the latest counts */
      for (int r = 0; r < t->n; r++)
        if (t->xidx[r] == c->index) t->ys[r] = (float)y;
      continue;
    }
    if (t->n == t->cap) {
      int cap = t->cap ? 2 * t->cap : 256;
      uint64_t *xi = realloc(t->xidx, sizeof(uint64_t) * (size_t)cap);
      if (xi) t->xidx = xi;
      float *xs = xi ? realloc(t->xs, sizeof(float) * (size_t)cap * (size_t)t->flen) : NULL;
      if (xs) t->xs = xs;
      float *ys = xs ? realloc(t->ys, sizeof(float) * (size_t)cap) : NULL;
      if (ys) t->ys = ys;
      if (!ys) return ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory storing results");
      t->cap = cap;
    }
    ob_config full;
    ob_space_decode(t->space, c->index, &full);
    ob_feat_cache_get(t->fc, &full, t->kind, t->xs + (size_t)t->n * (size_t)t->flen);
    t->xidx[t->n] = c->index;
    t->ys[t->n++] = (float)y;
  }
  ob_status st = ob_idxset_check(t->ctx, &t->visited, "xgb");
  if (!st) st = ob_idxset_check(t->ctx, &t->trained, "xgb");
  if (!st) st = ob_feat_cache_check(t->fc);
  return st;
}

static int xgb_transfer_records(const void *self) {
  const xgb *t = self;
  return t->base_n;
}

static const struct ob_tuner_i k_xgb_vt = {
    .next_batch = xgb_next_batch,
    .update = xgb_update,
    .has_next = xgb_has_next,
    .free = xgb_free,
    .transfer_records = xgb_transfer_records,
};

/* "xgb[_knob|_itervar|_curve][-rank]"; plain "xgb" is itervar. */
static bool parse_name(const char *name, ob_feature_kind *kind, bool *rank) {
  if (!name || strncmp(name, "xgb", 3)) return false;
  const char *p = name + 3;
  *kind = OB_FEATURE_ITERVAR;
  *rank = false;
  static const struct {
    const char *s;
    ob_feature_kind k;
  } kinds[] = {{"_knob", OB_FEATURE_KNOB}, {"_itervar", OB_FEATURE_ITERVAR}, {"_curve", OB_FEATURE_CURVE}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    size_t l = strlen(kinds[i].s);
    if (!strncmp(p, kinds[i].s, l)) {
      *kind = kinds[i].k;
      p += l;
      break;
    }
  }
  if (!strcmp(p, "-rank")) {
    *rank = true;
    p += 5;
  }
  return *p == 0;
}

ob_status ob_xgb_tuner_create(ob_ctx *ctx, const char *name, struct ob_task *task,
                              const ob_tuner_opts *opts, const struct ob_tuner_i **vt,
                              void **self) {
  OB_ASSERT(task && vt && self);
  *self = NULL;
  ob_feature_kind kind;
  bool rank;
  if (!parse_name(name, &kind, &rank))
    return ob_fail(ctx, OB_ERR_NOT_FOUND,
                   "unknown xgb tuner '%s' (xgb, xgb-rank, xgb_knob, xgb_itervar, xgb_curve)",
                   name ? name : "(null)");
  xgb *t = calloc(1, sizeof *t);
  if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory creating tuner '%s'", name);
  ob_status st = OB_OK;
  t->ctx = ctx;
  t->task = task;
  t->space = ob_task_space(task);
  t->kind = kind;
  t->rank = rank;
  t->plan_size = opts && opts->plan_size > 0 ? opts->plan_size : PLAN_SIZE;
  t->plan_s = opts && opts->plan_seconds > 0 ? opts->plan_seconds : SA_BUDGET_S;
  /* hashed: splitmix states of consecutive seeds would be one step apart */
  uint64_t seed = opts ? opts->seed : 0;
  t->rng.s = ob_hash64(&seed, sizeof seed, 0x78676274756e6572ULL);
  t->flen = ob_feature_len(t->space, kind);

  uint64_t len = ob_space_len(t->space);
  t->nvalid = len;
  if (t->space->filter && len <= COUNT_VALID_MAX) {
    t->nvalid = 0;
    for (uint64_t i = 0; i < len; i++) t->nvalid += ob_space_is_valid(t->space, i);
  }
  if (opts && opts->db_path && *opts->db_path) {
    st = load_transfer(t, opts->db_path);
    if (st) goto fail;
  }
  unsigned kinds = 1u << kind;
  if (t->base) kinds |= 1u << t->base_kind;
  if (opts && ob_feat_cache_serves(opts->features, task, kinds)) {
    t->fc = opts->features;
    t->fc_borrowed = true;
  } else if ((st = ob_feat_cache_new(ctx, task, kinds, 0, &t->fc))) {
    goto fail;
  }
  *vt = &k_xgb_vt;
  *self = t;
  return OB_OK;
fail:
  xgb_free(t);
  return st;
}
