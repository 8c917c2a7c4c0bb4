/* tuners.c: the model-free tuners of AutoTVM behind struct ob_tuner_i:
 *   random      a uniform random order of the valid configs, no repeats;
 *   gridsearch  the valid configs in index order;
 *   ga          AutoTVM's GATuner: a population (100) of knob-choice genes,
 *               the best few (3) kept as elites, parents drawn by roulette
 *               over FLOPS, single-point crossover, per-knob mutation (0.1),
 *               children already visited re-drawn one knob at a time.
 * All three share a walker: the set of configs proposed or reported (never
 * proposed again), the count of valid configs (so has_next turns false
 * exactly when the space is spent), and the seeded random stream. Configs
 * the space's filter rejects are never proposed. Each tuner owns one
 * malloc'd struct with its arrays, freed by its `free` entry. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tuner_impl.h"

/* Spaces up to this many configs are counted (and, for random, shuffled up
 * front); larger ones are sampled with rejection. */
#define OB_TUNER_COUNT_MAX (UINT64_C(1) << 22)
#define OB_TUNER_DRAW_TRIES 64          /* random draws before a scan */
#define OB_TUNER_SCAN_MAX (INT64_C(1) << 26) /* configs a scan may look at */
#define OB_GA_REDRAW_TRIES 1000         /* one-knob re-draws of a visited child */

/* ---- walker: what has been seen, what is left ---------------------------------- */

typedef struct walker {
  ob_ctx *ctx;
  const ob_space *space;
  uint64_t len;
  int64_t nvalid; /* valid configs; -1: not counted (space too large) */
  ob_idxset seen; /* valid configs proposed or reported */
  bool spent;     /* uncounted spaces: a scan found nothing left */
  ob_rng rng;
} walker;

static void walker_init(walker *w, ob_ctx *ctx, const ob_space *s, uint64_t seed) {
  memset(w, 0, sizeof *w);
  w->ctx = ctx;
  w->space = s;
  w->len = ob_space_len(s);
  /* hashed: splitmix64 states seed * gamma + c would make seed k + 1's
   * stream seed k's shifted by one draw */
  w->rng.s = ob_hash64(&seed, sizeof seed, 0x74756e6572ULL); /* "tuner" */
  w->nvalid = -1;
  if (w->len <= OB_TUNER_COUNT_MAX) {
    w->nvalid = 0;
    for (uint64_t i = 0; i < w->len; i++) w->nvalid += ob_space_is_valid(s, i);
  }
}

static bool walker_left(const walker *w) {
  return w->nvalid >= 0 ? (int64_t)w->seen.n < w->nvalid : !w->spent;
}

static bool walker_seen(const walker *w, uint64_t idx) { return ob_idxset_has(&w->seen, idx); }

/* What every vtable call returns last: out of memory in the seen-set. */
static ob_status walker_check(const walker *w, ob_status st) {
  return st ? st : ob_idxset_check(w->ctx, &w->seen, "tuner");
}

/* Marks a config as seen; false if it was seen already or is not valid
 * (or out of memory: walker_check reports it). */
static bool walker_mark(walker *w, uint64_t idx) {
  return ob_space_is_valid(w->space, idx) && ob_idxset_add(&w->seen, idx);
}

static uint64_t rand_below(ob_rng *r, uint64_t n) { return ob_rng_next(r) % n; }
static double rand_unit(ob_rng *r) { return (double)(ob_rng_next(r) >> 11) * 0x1p-53; }

/* A valid config never seen, drawn at random (a scan from a random start
 * once random draws keep hitting seen or rejected ones). Not marked. */
static bool walker_draw(walker *w, uint64_t *idx) {
  if (!walker_left(w) || w->len == 0) return false;
  for (int t = 0; t < OB_TUNER_DRAW_TRIES; t++) {
    uint64_t i = rand_below(&w->rng, w->len);
    if (!walker_seen(w, i) && ob_space_is_valid(w->space, i)) {
      *idx = i;
      return true;
    }
  }
  uint64_t start = rand_below(&w->rng, w->len);
  uint64_t lim = w->len < (uint64_t)OB_TUNER_SCAN_MAX ? w->len : (uint64_t)OB_TUNER_SCAN_MAX;
  for (uint64_t k = 0; k < lim; k++) {
    uint64_t i = (start + k) % w->len;
    if (!walker_seen(w, i) && ob_space_is_valid(w->space, i)) {
      *idx = i;
      return true;
    }
  }
  if (w->nvalid < 0) {
    w->spent = true;
    ob_log(w->ctx, OB_LOG_INFO, "tuner: no unvisited config found in %llu scanned; stopping",
           (unsigned long long)lim);
  }
  return false;
}

static ob_status walker_get(walker *w, uint64_t idx, ob_config *out) {
  ob_status st = ob_space_get(w->ctx, w->space, idx, out);
  if (st) ob_fail_prefix(w->ctx, "proposing config %llu", (unsigned long long)idx);
  return st;
}

/* ---- random --------------------------------------------------------------------- */

typedef struct rnd_tuner {
  walker w;
  uint64_t *perm; /* counted spaces: the valid configs, shuffled */
  uint64_t nperm, pos;
} rnd_tuner;

static ob_status rnd_next(void *self, int n, ob_config *out, int *got) {
  rnd_tuner *t = self;
  while (*got < n) {
    uint64_t idx;
    if (t->perm) {
      if (t->pos >= t->nperm) break;
      idx = t->perm[t->pos++];
      if (walker_seen(&t->w, idx)) continue; /* reported by update */
    } else if (!walker_draw(&t->w, &idx)) {
      break;
    }
    ob_status st = walker_get(&t->w, idx, &out[*got]);
    if (st) return st;
    walker_mark(&t->w, idx);
    (*got)++;
  }
  return walker_check(&t->w, OB_OK);
}

static ob_status mark_all(walker *w, const ob_config *cfgs, int n) {
  for (int i = 0; i < n; i++) walker_mark(w, cfgs[i].index);
  return walker_check(w, OB_OK);
}

static ob_status rnd_update(void *self, const ob_config *cfgs, const ob_measure_result *res,
                            int n) {
  (void)res;
  return mark_all(&((rnd_tuner *)self)->w, cfgs, n);
}

static bool rnd_has_next(const void *self) { return walker_left(&((const rnd_tuner *)self)->w); }

static void rnd_free(void *self) {
  rnd_tuner *t = self;
  if (!t) return;
  ob_idxset_free(&t->w.seen);
  free(t->perm);
  free(t);
}

static const struct ob_tuner_i k_random_i = {rnd_next, rnd_update, rnd_has_next, rnd_free, NULL};

static ob_status rnd_create(ob_ctx *ctx, const ob_space *s, const ob_tuner_opts *o, void **self) {
  rnd_tuner *t = calloc(1, sizeof *t);
  if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory creating the random tuner");
  walker_init(&t->w, ctx, s, o->seed);
  if (t->w.nvalid > 0) {
    t->perm = malloc((size_t)t->w.nvalid * sizeof *t->perm);
    if (!t->perm) {
      long long nvalid = (long long)t->w.nvalid;
      rnd_free(t);
      return ob_fail(ctx, OB_ERR_NOMEM, "out of memory shuffling %lld configs", nvalid);
    }
    for (uint64_t i = 0; i < t->w.len; i++)
      if (ob_space_is_valid(s, i)) t->perm[t->nperm++] = i;
    for (uint64_t i = t->nperm; i > 1; i--) { /* Fisher-Yates */
      uint64_t j = rand_below(&t->w.rng, i);
      uint64_t tmp = t->perm[i - 1];
      t->perm[i - 1] = t->perm[j];
      t->perm[j] = tmp;
    }
  }
  *self = t;
  return OB_OK;
}

/* ---- grid search ----------------------------------------------------------------- */

typedef struct grid_tuner {
  walker w;
  uint64_t cursor; /* next index to look at */
} grid_tuner;

static ob_status grid_next(void *self, int n, ob_config *out, int *got) {
  grid_tuner *t = self;
  while (*got < n && t->cursor < t->w.len) {
    uint64_t idx = t->cursor++;
    if (walker_seen(&t->w, idx) || !ob_space_is_valid(t->w.space, idx)) continue;
    ob_status st = walker_get(&t->w, idx, &out[*got]);
    if (st) return st;
    walker_mark(&t->w, idx);
    (*got)++;
  }
  return walker_check(&t->w, OB_OK);
}

static ob_status grid_update(void *self, const ob_config *cfgs, const ob_measure_result *res,
                             int n) {
  (void)res;
  return mark_all(&((grid_tuner *)self)->w, cfgs, n);
}

static bool grid_has_next(const void *self) {
  const grid_tuner *t = self;
  return t->cursor < t->w.len && walker_left(&t->w);
}

static void grid_free(void *self) {
  grid_tuner *t = self;
  if (!t) return;
  ob_idxset_free(&t->w.seen);
  free(t);
}

static const struct ob_tuner_i k_grid_i = {grid_next, grid_update, grid_has_next, grid_free, NULL};

static ob_status grid_create(ob_ctx *ctx, const ob_space *s, const ob_tuner_opts *o, void **self) {
  grid_tuner *t = calloc(1, sizeof *t);
  if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory creating the grid-search tuner");
  walker_init(&t->w, ctx, s, o->seed);
  *self = t;
  return OB_OK;
}

/* ---- genetic algorithm -------------------------------------------------------------- */

typedef struct gene {
  int32_t c[OB_MAX_KNOBS]; /* choice per knob */
  uint64_t idx;
  double score;            /* GFLOPS; 0 for a failed trial */
  bool scored;
} gene;

typedef struct ga_tuner {
  walker w;
  int nk;
  int dims[OB_MAX_KNOBS];
  int pop, elite_num;
  double mutation;
  bool started;
  gene *genes;       /* the current generation, pop slots */
  int ngenes, handed, nscored;
  gene *elites;      /* elite_num slots */
  int nelites;
  gene *known;       /* scored configs from outside the generation (resume) */
  int nknown, cknown;
  gene *pool;        /* parents while breeding */
  double *prob;
  int cpool;
} ga_tuner;

static void gene_from_index(const ga_tuner *g, uint64_t idx, gene *out) {
  memset(out, 0, sizeof *out);
  out->idx = idx;
  uint64_t rest = idx;
  for (int k = 0; k < g->nk; k++) {
    out->c[k] = (int32_t)(rest % (uint64_t)g->dims[k]);
    rest /= (uint64_t)g->dims[k];
  }
}

static ob_status ga_grow(ob_ctx *ctx, gene **v, int *cap, int need) {
  if (need <= *cap) return OB_OK;
  int c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  gene *nv = realloc(*v, (size_t)c * sizeof *nv);
  if (!nv) return ob_fail(ctx, OB_ERR_NOMEM, "ga: out of memory");
  *v = nv;
  *cap = c;
  return OB_OK;
}

/* The first generation: random unvisited configs. */
static void ga_seed_population(ga_tuner *g) {
  g->ngenes = g->handed = g->nscored = 0;
  uint64_t idx;
  while (g->ngenes < g->pop && walker_draw(&g->w, &idx)) {
    gene_from_index(g, idx, &g->genes[g->ngenes++]);
    walker_mark(&g->w, idx);
  }
}

static int roulette(ob_rng *r, const double *prob, int n, int skip) {
  double total = 0;
  for (int i = 0; i < n; i++)
    if (i != skip) total += prob[i];
  double x = rand_unit(r) * total;
  int last = -1;
  for (int i = 0; i < n; i++) {
    if (i == skip) continue;
    last = i;
    if (x < prob[i]) return i;
    x -= prob[i];
  }
  return last; /* rounding */
}

static int cmp_score_desc(const void *a, const void *b) {
  const gene *x = a, *y = b;
  return (x->score < y->score) - (x->score > y->score);
}

/* AutoTVM's GATuner.update once a generation is scored: parents = the
 * generation + the elites (+ configs reported from outside); new elites =
 * the best of them; children by roulette selection, single-point crossover
 * and mutation, re-drawn while visited or rejected by the filter. */
static ob_status ga_breed(ga_tuner *g) {
  int npool = g->ngenes + g->nelites + g->nknown;
  ob_status st = OB_OK;
  if (npool > g->cpool) {
    gene *p = realloc(g->pool, (size_t)npool * sizeof *p);
    double *pr = p ? realloc(g->prob, (size_t)npool * sizeof *pr) : NULL;
    if (p) g->pool = p;
    if (pr) g->prob = pr;
    if (!p || !pr) return ob_fail(g->w.ctx, OB_ERR_NOMEM, "ga: out of memory");
    g->cpool = npool;
  }
  if (npool == 0) {
    ga_seed_population(g);
    return walker_check(&g->w, st);
  }
  memcpy(g->pool, g->genes, (size_t)g->ngenes * sizeof *g->pool);
  memcpy(g->pool + g->ngenes, g->elites, (size_t)g->nelites * sizeof *g->pool);
  if (g->nknown) /* known is NULL until something came from outside */
    memcpy(g->pool + g->ngenes + g->nelites, g->known, (size_t)g->nknown * sizeof *g->pool);
  g->nknown = 0;
  /* elites: the best of the parents (sorting the pool changes nothing else) */
  qsort(g->pool, (size_t)npool, sizeof *g->pool, cmp_score_desc);
  g->nelites = npool < g->elite_num ? npool : g->elite_num;
  memcpy(g->elites, g->pool, (size_t)g->nelites * sizeof *g->elites);

  double mx = 0, sum = 0;
  for (int i = 0; i < npool; i++) {
    g->prob[i] = (g->pool[i].score > 0 ? g->pool[i].score : 0) + 1e-8;
    if (g->prob[i] > mx) mx = g->prob[i];
  }
  for (int i = 0; i < npool; i++) sum += (g->prob[i] /= mx);
  for (int i = 0; i < npool; i++) g->prob[i] /= sum;

  g->ngenes = g->handed = g->nscored = 0;
  ob_rng *r = &g->w.rng;
  while (g->ngenes < g->pop && walker_left(&g->w)) {
    int a = roulette(r, g->prob, npool, -1);
    int b = npool > 1 ? roulette(r, g->prob, npool, a) : a;
    gene child;
    memset(&child, 0, sizeof child);
    int point = (int)rand_below(r, (uint64_t)g->nk);
    for (int k = 0; k < g->nk; k++) child.c[k] = k < point ? g->pool[a].c[k] : g->pool[b].c[k];
    for (int k = 0; k < g->nk; k++)
      if (rand_unit(r) < g->mutation) child.c[k] = (int32_t)rand_below(r, (uint64_t)g->dims[k]);
    child.idx = ob_config_index_of(g->w.space, child.c);
    for (int t = 0; t < OB_GA_REDRAW_TRIES &&
                    (walker_seen(&g->w, child.idx) || !ob_space_is_valid(g->w.space, child.idx));
         t++) {
      int k = (int)rand_below(r, (uint64_t)g->nk);
      child.c[k] = (int32_t)rand_below(r, (uint64_t)g->dims[k]);
      child.idx = ob_config_index_of(g->w.space, child.c);
    }
    if (walker_seen(&g->w, child.idx) || !ob_space_is_valid(g->w.space, child.idx)) {
      uint64_t idx; /* a crowded space: any unvisited config will do */
      if (!walker_draw(&g->w, &idx)) break;
      gene_from_index(g, idx, &child);
    }
    walker_mark(&g->w, child.idx);
    g->genes[g->ngenes++] = child;
  }
  return walker_check(&g->w, st);
}

static ob_status ga_next(void *self, int n, ob_config *out, int *got) {
  ga_tuner *g = self;
  if (!g->started) {
    g->started = true;
    ga_seed_population(g);
    ob_status st = walker_check(&g->w, OB_OK);
    if (st) return st;
  }
  while (*got < n) {
    if (g->handed == g->ngenes) {
      /* everything handed out: a new generation once all are scored */
      if (g->nscored < g->ngenes || !walker_left(&g->w)) break;
      ob_status st = ga_breed(g);
      if (st) return st;
      if (g->ngenes == 0) break;
      continue;
    }
    gene *ge = &g->genes[g->handed++];
    if (ge->scored) continue; /* reported by update before it was proposed */
    ob_status st = walker_get(&g->w, ge->idx, &out[*got]);
    if (st) return st;
    (*got)++;
  }
  return OB_OK;
}

static ob_status ga_update(void *self, const ob_config *cfgs, const ob_measure_result *res,
                           int n) {
  ga_tuner *g = self;
  for (int i = 0; i < n; i++) {
    uint64_t idx = cfgs[i].index;
    double score = res[i].error_no == OB_MERR_NONE && res[i].gflops > 0 ? res[i].gflops : 0;
    int at = -1;
    for (int j = 0; j < g->ngenes && at < 0; j++)
      if (g->genes[j].idx == idx) at = j;
    if (at >= 0) {
      if (!g->genes[at].scored) g->nscored++;
      g->genes[at].scored = true;
      g->genes[at].score = score;
      continue;
    }
    if (!walker_mark(&g->w, idx)) continue; /* rejected, or seen before */
    ob_status st = ga_grow(g->w.ctx, &g->known, &g->cknown, g->nknown + 1);
    if (st) return st;
    gene *k = &g->known[g->nknown++];
    gene_from_index(g, idx, k);
    k->score = score;
    k->scored = true;
  }
  ob_status st = walker_check(&g->w, OB_OK);
  if (st) return st;
  /* AutoTVM breeds in update, as soon as the generation is scored */
  if (g->started && g->ngenes > 0 && g->handed == g->ngenes && g->nscored == g->ngenes &&
      walker_left(&g->w))
    return ga_breed(g);
  return OB_OK;
}

static bool ga_has_next(const void *self) {
  const ga_tuner *g = self;
  return walker_left(&g->w) || g->handed < g->ngenes;
}

static void ga_free(void *self) {
  ga_tuner *g = self;
  if (!g) return;
  ob_idxset_free(&g->w.seen);
  free(g->genes);
  free(g->elites);
  free(g->known);
  free(g->pool);
  free(g->prob);
  free(g);
}

static const struct ob_tuner_i k_ga_i = {ga_next, ga_update, ga_has_next, ga_free, NULL};

static ob_status ga_create(ob_ctx *ctx, const ob_space *s, const ob_tuner_opts *o, void **self) {
  ga_tuner *g = calloc(1, sizeof *g);
  if (!g) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory creating the ga tuner");
  walker_init(&g->w, ctx, s, o->seed);
  g->nk = ob_space_num_knobs(s);
  for (int k = 0; k < g->nk; k++) g->dims[k] = ob_space_knob_len(s, k);
  g->pop = o->pop_size > 0 ? o->pop_size : 100;
  if (g->w.nvalid >= 0 && g->pop > g->w.nvalid) g->pop = (int)g->w.nvalid;
  if (g->pop < 1) g->pop = 1;
  g->elite_num = o->elite_num > 0 ? o->elite_num : 3;
  if (g->elite_num > g->pop) g->elite_num = g->pop;
  g->mutation = o->mutation_prob > 0 ? o->mutation_prob : 0.1;
  g->genes = calloc((size_t)g->pop, sizeof *g->genes);
  g->elites = calloc((size_t)g->elite_num, sizeof *g->elites);
  if (!g->genes || !g->elites) {
    ga_free(g);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory creating the ga tuner");
  }
  *self = g;
  return OB_OK;
}

/* ---- registry entry ---------------------------------------------------------------- */

ob_status ob_basic_tuner_create(ob_ctx *ctx, const char *name, struct ob_task *task,
                                const ob_tuner_opts *opts, const struct ob_tuner_i **vt,
                                void **self) {
  *self = NULL;
  const ob_space *s = ob_task_space(task);
  if (!strcmp(name, "random")) {
    *vt = &k_random_i;
    return rnd_create(ctx, s, opts, self);
  }
  if (!strcmp(name, "gridsearch")) {
    *vt = &k_grid_i;
    return grid_create(ctx, s, opts, self);
  }
  OB_ASSERT(!strcmp(name, "ga"));
  *vt = &k_ga_i;
  return ga_create(ctx, s, opts, self);
}
