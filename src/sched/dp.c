/* dp.c: the schedulers. All three cost their stages through one cache
 * keyed by the stage's structure: the interned op keys of each group in
 * order, groups in a canonical order, the core split (or, when the split is
 * searched, the number of cores), so two stages that differ only in which
 * units they hold are costed once.
 *
 * IOS's dynamic program (Ding et al., MLSys 2021, Algorithm 1) runs per
 * part: dp[S] = min over endings E of dp[S - E] + cost(E), S a set of units
 * closed under predecessors (a bitmask), E a last stage: no edge from E to
 * S - E. Parallel endings are built from candidate groups: with the chains
 * of a chain decomposition, a candidate is the descendants in S of one of
 * the last r units of a chain's part in S, when they are at most r units;
 * the fix of IOS's flaw adds unions of overlapping candidates (still at
 * most r), so units feeding a common consumer can share its group; IOS's
 * own form (ios_original) requires candidates of an ending to be disjoint
 * and never merges them. An ending is up to min(s, cores) pairwise
 * disjoint candidates; its core split is searched with it (best_split of
 * the cost model, or every composition of the cores with identical groups
 * taking non-increasing core counts). Merge endings are subsets of two or
 * more sinks of S with one merge key. Memoised top-down; the best ending of
 * each state is kept and the schedule rebuilt from them. */
#include <stdio.h>
#include <stdlib.h>

#include "sched/sched_impl.h"

#define MAX_CAND 8192 /* candidate groups of one state */

ob_sched_opts ob_sched_opts_default(void) {
  return (ob_sched_opts){.cores = 1, .r = 3, .s = 8, .merge = true, .parallel = true, .max_splits = 100000};
}

/* ---- the stage-cost cache ---------------------------------------------------------------------- */
typedef struct cache {
  ob_ctx *ctx;
  const ob_sched_units *u;
  ob_stage_cost *cost;
  int cores;
  int64_t max_splits;
  ob_arena *arena; /* keys, merged descs */
  smap map;        /* key -> entry */
  double *cost_v;
  int *off, *ng;
  size_t n, cap;
  int *cores_pool;   /* per canonical group */
  double *sec_pool;
  size_t npool, cpool;
  int *key;
  size_t nkey, ckey;
  ob_sched_stats *st;
} cache;

static void cache_init(cache *c, ob_ctx *ctx, const ob_sched_units *u, ob_stage_cost *cost, int cores, int64_t max_splits,
                       ob_sched_stats *st) {
  memset(c, 0, sizeof *c);
  c->ctx = ctx;
  c->u = u;
  c->cost = cost;
  c->cores = cores;
  c->max_splits = max_splits;
  c->arena = ob_arena_new(ctx, 1 << 16); /* NULL: the caller checks c->arena */
  smap_init(&c->map, c->arena);
  c->st = st;
}

static void cache_free(cache *c) {
  smap_free(&c->map);
  free(c->cost_v);
  free(c->off);
  free(c->ng);
  free(c->cores_pool);
  free(c->sec_pool);
  free(c->key);
  ob_arena_free(c->arena);
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return p;
  size_t nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  void *q = realloc(p, nc * elem);
  OB_ASSERT(q != NULL);
  *cap = nc;
  return q;
}

static void key_push(cache *c, int v) {
  c->key = grow(c->key, &c->ckey, c->nkey + 1, sizeof(int));
  c->key[c->nkey++] = v;
}

/* A stage to cost: groups of global unit ids (in run order). */
typedef struct squery {
  ob_sched_stage_kind kind;
  int ngroups;
  const int *len;
  const int *const *ops;
  const int *fixed; /* cores per group (input order), NULL: search the split */
} squery;

static int cmp_groups(const squery *q, const sunit *us, int a, int b) {
  if (q->len[a] != q->len[b]) return q->len[a] < q->len[b] ? -1 : 1;
  for (int k = 0; k < q->len[a]; k++) {
    int x = us[q->ops[a][k]].sid, y = us[q->ops[b][k]].sid;
    if (x != y) return x < y ? -1 : 1;
  }
  if (q->fixed && q->fixed[a] != q->fixed[b]) return q->fixed[a] < q->fixed[b] ? -1 : 1;
  return 0;
}

/* Every composition of the cores over the groups (identical neighbours
 * non-increasing), each costed; the best kept in best[]. */
typedef struct splitter {
  cache *c;
  ob_sched_stage_desc *d;
  const bool *same_as_prev;
  int *k, *best;
  double *best_sec;
  double best_v;
  int64_t calls;
  ob_status st;
} splitter;

static void split_rec(splitter *sp, int i, int left) {
  int g = sp->d->ngroups;
  if (sp->st) return;
  if (i == g) {
    if (left) return;
    if (++sp->calls > sp->c->max_splits) {
      sp->st = ob_fail(sp->c->ctx, OB_ERR_UNSUPPORTED,
                       "a stage of %d groups on %d cores has more than %lld core splits to try; the cost model '%s' must "
                       "choose splits itself (best_split)",
                       g, sp->d->machine_cores, (long long)sp->c->max_splits, sp->c->cost->vt->name);
      return;
    }
    for (int j = 0; j < g; j++) {
      sp->d->groups[j].cores = sp->k[j];
      sp->d->groups[j].seconds = -1;
    }
    double v = 0;
    sp->c->st->cost_calls++;
    sp->st = sp->c->cost->vt->cost(sp->c->cost->self, sp->d, &v);
    if (!sp->st && v < sp->best_v) {
      sp->best_v = v;
      for (int j = 0; j < g; j++) {
        sp->best[j] = sp->k[j];
        sp->best_sec[j] = sp->d->groups[j].seconds;
      }
    }
    return;
  }
  int hi = left - (g - i - 1);
  if (sp->same_as_prev[i] && sp->k[i - 1] < hi) hi = sp->k[i - 1];
  for (int k = 1; k <= hi && !sp->st; k++) {
    sp->k[i] = k;
    split_rec(sp, i + 1, left - k);
  }
}

/* Costs a stage through the cache. order[j]: the input group at canonical
 * position j; cores[j], sec[j]: its cores and time (canonical order). */
static ob_status stage_query(cache *c, const squery *q, double *cost, int *order, int *cores, double *sec) {
  const sunit *us = c->u->u;
  int g = q->ngroups;
  for (int j = 0; j < g; j++) order[j] = j;
  for (int j = 1; j < g; j++) /* insertion sort: few groups */
    for (int k = j; k > 0 && cmp_groups(q, us, order[k - 1], order[k]) > 0; k--) {
      int t = order[k];
      order[k] = order[k - 1];
      order[k - 1] = t;
    }
  c->nkey = 0;
  key_push(c, (int)q->kind);
  key_push(c, c->cores);
  key_push(c, q->fixed ? 1 : 0);
  key_push(c, g);
  if (q->kind == OB_SCHED_STAGE_MERGE) {
    /* merged conv: its structure is the set of the merged structures */
    size_t at = c->nkey;
    for (int k = 0; k < q->len[0]; k++) key_push(c, us[q->ops[0][k]].sid);
    for (size_t a = at + 1; a < c->nkey; a++)
      for (size_t b = a; b > at && c->key[b - 1] > c->key[b]; b--) {
        int t = c->key[b];
        c->key[b] = c->key[b - 1];
        c->key[b - 1] = t;
      }
  } else {
    for (int j = 0; j < g; j++) {
      int i = order[j];
      key_push(c, q->len[i]);
      for (int k = 0; k < q->len[i]; k++) key_push(c, us[q->ops[i][k]].sid);
      if (q->fixed) key_push(c, q->fixed[i]);
    }
  }
  int64_t *hit = smap_find(&c->map, c->key, c->nkey * sizeof(int));
  if (hit) {
    c->st->cache_hits++;
    size_t e = (size_t)*hit;
    *cost = c->cost_v[e];
    for (int j = 0; j < g; j++) {
      cores[j] = c->cores_pool[c->off[e] + j];
      sec[j] = c->sec_pool[c->off[e] + j];
    }
    return OB_OK;
  }
  /* a miss: describe the stage in canonical order and ask the model */
  c->st->stages_costed++;
  ob_status st = OB_OK;
  ob_sched_stage_desc d = {.kind = q->kind, .ngroups = g, .machine_cores = c->cores};
  ob_sched_group_desc *gd = calloc((size_t)g, sizeof *gd);
  const ob_sched_op_desc **opp = NULL;
  int total = 0;
  for (int j = 0; j < g; j++) total += q->len[j];
  opp = calloc((size_t)(total ? total : 1), sizeof *opp);
  int *k = calloc((size_t)g, sizeof(int)), *best = calloc((size_t)g, sizeof(int));
  double *best_sec = calloc((size_t)g, sizeof(double));
  bool *same = calloc((size_t)g, sizeof(bool));
  if (!gd || !opp || !k || !best || !best_sec || !same) {
    st = ob_fail(c->ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  d.groups = gd;
  double v = 0;
  if (q->kind == OB_SCHED_STAGE_MERGE) {
    ob_sched_op_desc *m = ob_arena_alloc(c->arena, sizeof *m);
    if ((st = ob_sched_merged_desc(c->ctx, c->u, q->len[0], q->ops[0], c->arena, m))) goto done;
    opp[0] = m;
    gd[0] = (ob_sched_group_desc){.nops = 1, .ops = opp, .cores = c->cores, .seconds = -1};
    c->st->cost_calls++;
    if ((st = c->cost->vt->cost(c->cost->self, &d, &v))) goto done;
    best[0] = c->cores;
    best_sec[0] = gd[0].seconds;
  } else {
    int at = 0;
    for (int j = 0; j < g; j++) {
      int i = order[j];
      for (int t = 0; t < q->len[i]; t++) opp[at + t] = &us[q->ops[i][t]].op;
      gd[j] = (ob_sched_group_desc){.nops = q->len[i], .ops = opp + at, .cores = q->fixed ? q->fixed[i] : 0, .seconds = -1};
      at += q->len[i];
      same[j] = j > 0 && cmp_groups(q, us, order[j - 1], i) == 0;
    }
    if (q->fixed) {
      c->st->cost_calls++;
      if ((st = c->cost->vt->cost(c->cost->self, &d, &v))) goto done;
      for (int j = 0; j < g; j++) {
        best[j] = gd[j].cores;
        best_sec[j] = gd[j].seconds;
      }
    } else if (g > c->cores) {
      st = ob_fail(c->ctx, OB_ERR_INVALID_ARG, "a stage of %d groups cannot run on %d cores", g, c->cores);
      goto done;
    } else if (c->cost->vt->best_split) {
      c->st->cost_calls++;
      if ((st = c->cost->vt->best_split(c->cost->self, &d, &v))) goto done;
      int sum = 0;
      for (int j = 0; j < g; j++) {
        best[j] = gd[j].cores;
        best_sec[j] = gd[j].seconds;
        sum += gd[j].cores < 1 ? c->cores + 1 : gd[j].cores;
      }
      if (sum != c->cores) {
        st = ob_fail(c->ctx, OB_ERR_INVALID_ARG, "cost model '%s' split %d cores into groups holding %d", c->cost->vt->name,
                     c->cores, sum);
        goto done;
      }
    } else {
      splitter sp = {.c = c, .d = &d, .same_as_prev = same, .k = k, .best = best, .best_sec = best_sec, .best_v = 1e300};
      split_rec(&sp, 0, c->cores);
      if ((st = sp.st)) goto done;
      v = sp.best_v;
    }
  }
  /* store */
  size_t e = c->n;
  if (e == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 256;
    c->cost_v = realloc(c->cost_v, sizeof(double) * c->cap);
    c->off = realloc(c->off, sizeof(int) * c->cap);
    c->ng = realloc(c->ng, sizeof(int) * c->cap);
    OB_ASSERT(c->cost_v && c->off && c->ng);
  }
  if (c->npool + (size_t)g > c->cpool) {
    while (c->npool + (size_t)g > c->cpool) c->cpool = c->cpool ? c->cpool * 2 : 1024;
    c->cores_pool = realloc(c->cores_pool, sizeof(int) * c->cpool);
    c->sec_pool = realloc(c->sec_pool, sizeof(double) * c->cpool);
    OB_ASSERT(c->cores_pool && c->sec_pool);
  }
  c->cost_v[e] = v;
  c->off[e] = (int)c->npool;
  c->ng[e] = g;
  for (int j = 0; j < g; j++) {
    c->cores_pool[c->npool + (size_t)j] = best[j];
    c->sec_pool[c->npool + (size_t)j] = best_sec[j];
  }
  c->npool += (size_t)g;
  c->n++;
  smap_put(&c->map, c->key, c->nkey * sizeof(int), (int64_t)e, NULL);
  *cost = v;
  for (int j = 0; j < g; j++) {
    cores[j] = best[j];
    sec[j] = best_sec[j];
  }
done:
  free(gd);
  free(opp);
  free(k);
  free(best);
  free(best_sec);
  free(same);
  return st;
}

/* ---- common -------------------------------------------------------------------------------------- */
static ob_status check_opts(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, const ob_stage_cost *cost) {
  if (!u->finished) return ob_fail(ctx, OB_ERR_INVALID_ARG, "the units of '%s' are not finished", u->model);
  if (!cost || !cost->vt || !cost->vt->cost) return ob_fail(ctx, OB_ERR_INVALID_ARG, "no stage-cost model");
  if (o->cores < 1 || o->cores > 4096) return ob_fail(ctx, OB_ERR_INVALID_ARG, "%d cores (expected 1..4096)", o->cores);
  if (o->r < 1 || o->r > OB_SCHED_MAX_PART) return ob_fail(ctx, OB_ERR_INVALID_ARG, "r = %d (expected 1..%d)", o->r, OB_SCHED_MAX_PART);
  if (o->s < 1 || o->s > OB_SCHED_MAX_PART) return ob_fail(ctx, OB_ERR_INVALID_ARG, "s = %d (expected 1..%d)", o->s, OB_SCHED_MAX_PART);
  if (o->max_splits < 1) return ob_fail(ctx, OB_ERR_INVALID_ARG, "max_splits must be positive");
  if (o->guide && (!o->guide->vt || !o->guide->vt->cost))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "the guide is no stage-cost model");
  if (o->guide && !(o->guide_slack >= 0))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "guide slack %g is negative", o->guide_slack);
  return OB_OK;
}

static void stats_start(const ob_sched_units *u, ob_sched_stats *st) {
  memset(st, 0, sizeof *st);
  st->blocks = u->nblocks;
  st->parts = u->nparts;
  for (int p = 0; p < u->nparts; p++) st->max_part = u->part_n[p] > st->max_part ? u->part_n[p] : st->max_part;
}

/* Appends a stage: groups in canonical order on consecutive cores. */
static ob_status emit_stage(ob_schedule *s, ob_sched_stage_kind kind, int g, const int *len, const int *const *ops,
                            const int *order, const int *cores, const double *sec, double seconds) {
  ob_status st = ob_schedule_add_stage(s, kind);
  int next = 0;
  int cs[4096];
  for (int j = 0; j < g && !st; j++) {
    int i = order[j];
    if (cores[j] > 4096) return ob_fail(s->ctx, OB_ERR_INVALID_ARG, "a group of %d cores", cores[j]);
    for (int k = 0; k < cores[j]; k++) cs[k] = next + k;
    next += cores[j];
    st = ob_schedule_add_group(s, len[i], ops[i], cores[j], cs);
    if (!st) s->st[s->n - 1].groups[j].seconds = sec[j];
  }
  if (!st) s->st[s->n - 1].seconds = seconds;
  return st;
}

/* ---- sequential ------------------------------------------------------------------------------------ */
ob_status ob_sched_sequential(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, ob_stage_cost *cost,
                              ob_schedule **out, ob_sched_stats *stats) {
  *out = NULL;
  ob_status st = check_opts(ctx, u, o, cost);
  if (st) return st;
  ob_sched_stats local;
  if (!stats) stats = &local;
  stats_start(u, stats);
  double t0 = ob_now_s();
  ob_schedule *s = NULL;
  if ((st = ob_schedule_new(ctx, o->cores, &s))) return st;
  cache c;
  cache_init(&c, ctx, u, cost, o->cores, o->max_splits, stats);
  if (!c.arena) st = ob_fail(ctx, OB_ERR_NOMEM, "scheduler: out of memory");
  for (int i = 0; i < u->n && !st; i++) {
    int len = 1, order, cores, fixed = o->cores;
    const int *ops = &i;
    double v, sec;
    squery q = {.kind = OB_SCHED_STAGE_PARALLEL, .ngroups = 1, .len = &len, .ops = &ops, .fixed = &fixed};
    st = stage_query(&c, &q, &v, &order, &cores, &sec);
    if (!st) st = emit_stage(s, OB_SCHED_STAGE_PARALLEL, 1, &len, &ops, &order, &cores, &sec, v);
  }
  cache_free(&c);
  stats->seconds = ob_now_s() - t0;
  if (st) {
    ob_schedule_free(s);
    return st;
  }
  ob_schedule_set_origin(s, "sequential", cost);
  *out = s;
  return OB_OK;
}

/* ---- greedy ------------------------------------------------------------------------------------------ */
ob_status ob_sched_greedy(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, ob_stage_cost *cost,
                          ob_schedule **out, ob_sched_stats *stats) {
  *out = NULL;
  ob_status st = check_opts(ctx, u, o, cost);
  if (st) return st;
  ob_sched_stats local;
  if (!stats) stats = &local;
  stats_start(u, stats);
  double t0 = ob_now_s();
  ob_schedule *s = NULL;
  if ((st = ob_schedule_new(ctx, o->cores, &s))) return st;
  int n = u->n;
  int *left = malloc(sizeof(int) * (size_t)n), *ready = malloc(sizeof(int) * (size_t)n);
  int *len = malloc(sizeof(int) * (size_t)n), *fixed = malloc(sizeof(int) * (size_t)n);
  int *order = malloc(sizeof(int) * (size_t)n), *cores = malloc(sizeof(int) * (size_t)n);
  int *flat = malloc(sizeof(int) * (size_t)n);
  const int **ops = malloc(sizeof(int *) * (size_t)n);
  double *sec = malloc(sizeof(double) * (size_t)n);
  bool *done = calloc((size_t)n, sizeof(bool));
  int *soff = NULL, *succ = NULL;
  cache c;
  cache_init(&c, ctx, u, cost, o->cores, o->max_splits, stats);
  if (!c.arena || !left || !ready || !len || !fixed || !order || !cores || !flat || !ops || !sec || !done) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto out;
  }
  /* successor lists, so a finished stage releases its readers */
  soff = calloc((size_t)n + 1, sizeof(int));
  int nedges = 0;
  for (int i = 0; i < n; i++) nedges += u->u[i].npred;
  succ = malloc(sizeof(int) * (size_t)(nedges ? nedges : 1));
  if (!soff || !succ) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < u->u[i].npred; k++) soff[u->u[i].preds[k] + 1]++;
  for (int i = 0; i < n; i++) soff[i + 1] += soff[i];
  for (int i = 0; i < n; i++) left[i] = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < u->u[i].npred; k++) {
      int p = u->u[i].preds[k];
      succ[soff[p] + left[p]++] = i;
    }
  for (int i = 0; i < n; i++) left[i] = u->u[i].npred;
  int ndone = 0;
  while (ndone < n && !st) {
    int nr = 0;
    for (int i = 0; i < n; i++)
      if (!done[i] && !left[i]) ready[nr++] = i;
    /* every ready unit at once: round-robin over min(ready, cores) groups,
     * the cores split evenly (the first groups take the remainder) */
    int g = nr < o->cores ? nr : o->cores, at = 0;
    for (int j = 0; j < g; j++) {
      len[j] = 0;
      fixed[j] = o->cores / g + (j < o->cores % g);
    }
    for (int j = 0; j < g; j++) {
      ops[j] = flat + at;
      for (int i = j; i < nr; i += g) flat[at + len[j]++] = ready[i];
      at += len[j];
    }
    squery q = {.kind = OB_SCHED_STAGE_PARALLEL, .ngroups = g, .len = len, .ops = ops, .fixed = fixed};
    double v;
    st = stage_query(&c, &q, &v, order, cores, sec);
    if (!st) st = emit_stage(s, OB_SCHED_STAGE_PARALLEL, g, len, ops, order, cores, sec, v);
    for (int k = 0; k < nr; k++) {
      done[ready[k]] = true;
      ndone++;
      for (int j = soff[ready[k]]; j < soff[ready[k] + 1]; j++) left[succ[j]]--;
    }
  }
out:
  cache_free(&c);
  free(left);
  free(ready);
  free(len);
  free(fixed);
  free(order);
  free(cores);
  free(flat);
  free(ops);
  free(sec);
  free(done);
  free(soff);
  free(succ);
  stats->seconds = ob_now_s() - t0;
  if (st) {
    ob_schedule_free(s);
    return st;
  }
  ob_schedule_set_origin(s, "greedy", cost);
  *out = s;
  return OB_OK;
}

/* ---- IOS ------------------------------------------------------------------------------------------------ */
typedef struct dentry {
  double val, stage;
  uint8_t kind, ngroups;
  int off; /* into the ending pools: group masks and cores, canonical order */
} dentry;

typedef struct dpart {
  int first, m;
  uint64_t succ[OB_SCHED_MAX_PART], desc[OB_SCHED_MAX_PART];
  int mclass[OB_SCHED_MAX_PART];
  int nchains;
  uint64_t chain_mask[OB_SCHED_MAX_PART];
  int chain_start[OB_SCHED_MAX_PART + 1];
  int chain_elem[OB_SCHED_MAX_PART];
} dpart;

typedef struct dp {
  ob_ctx *ctx;
  const ob_sched_units *u;
  const ob_sched_opts *o;
  cache *c;
  ob_sched_stats *st;
  const dpart *p;
  umap memo;
  dentry *e;
  size_t ne, ce;
  uint64_t *emask;
  int *ecores;
  double *esec;
  size_t npool, cpool;
  int gmax;
  struct dp *guide; /* the guide's DP over the same part (ob_sched_opts.guide), else NULL */
} dp;

static void part_build(const ob_sched_units *u, int first, int m, dpart *p) {
  memset(p, 0, sizeof *p);
  p->first = first;
  p->m = m;
  for (int i = 0; i < m; i++) {
    const sunit *x = &u->u[first + i];
    p->mclass[i] = x->merge_class;
    for (int k = 0; k < x->npred; k++) {
      int q = x->preds[k] - first;
      if (q >= 0) p->succ[q] |= 1ull << i;
    }
  }
  for (int i = m - 1; i >= 0; i--) {
    p->desc[i] = 1ull << i;
    for (uint64_t s = p->succ[i]; s; s &= s - 1) p->desc[i] |= p->desc[__builtin_ctzll(s)];
  }
  /* chains: the longest chain of the transitive closure, again and again */
  uint64_t rest = m == 64 ? ~0ull : (1ull << m) - 1;
  int depth[OB_SCHED_MAX_PART], at = 0;
  while (rest) {
    int top = -1;
    for (int i = m - 1; i >= 0; i--) {
      if (!(rest >> i & 1)) continue;
      depth[i] = 1;
      for (uint64_t s = p->desc[i] & rest & ~(1ull << i); s; s &= s - 1) {
        int v = __builtin_ctzll(s);
        if (depth[v] + 1 > depth[i]) depth[i] = depth[v] + 1;
      }
    }
    for (int i = 0; i < m; i++)
      if (rest >> i & 1 && (top < 0 || depth[i] > depth[top])) top = i;
    p->chain_start[p->nchains] = at;
    for (int u0 = top; u0 >= 0;) {
      p->chain_elem[at++] = u0;
      p->chain_mask[p->nchains] |= 1ull << u0;
      rest &= ~(1ull << u0);
      int next = -1;
      for (uint64_t s = p->desc[u0] & rest; s; s &= s - 1) {
        int v = __builtin_ctzll(s);
        if (depth[v] == depth[u0] - 1) {
          next = v;
          break;
        }
      }
      u0 = next;
    }
    p->nchains++;
  }
  p->chain_start[p->nchains] = at;
}

static ob_status dp_state(dp *d, uint64_t S, double *val);

/* The global ids of a local mask, ascending. */
static int mask_ids(const dpart *p, uint64_t m, int *ids) {
  int n = 0;
  for (; m; m &= m - 1) ids[n++] = p->first + __builtin_ctzll(m);
  return n;
}

typedef struct best_end {
  double val, stage;
  int kind, ngroups;
  uint64_t mask[OB_SCHED_MAX_PART];
  int cores[OB_SCHED_MAX_PART];
  double sec[OB_SCHED_MAX_PART];
} best_end;

static ob_status try_ending(dp *d, uint64_t S, int kind, int ng, const uint64_t *groups, best_end *b) {
  const dpart *p = d->p;
  int ids[OB_SCHED_MAX_PART * 2], len[OB_SCHED_MAX_PART], order[OB_SCHED_MAX_PART], cores[OB_SCHED_MAX_PART];
  const int *ops[OB_SCHED_MAX_PART];
  double sec[OB_SCHED_MAX_PART];
  uint64_t E = 0;
  int at = 0;
  for (int j = 0; j < ng; j++) {
    len[j] = mask_ids(p, groups[j], ids + at);
    ops[j] = ids + at;
    at += len[j];
    E |= groups[j];
  }
  squery q = {.kind = (ob_sched_stage_kind)kind, .ngroups = ng, .len = len, .ops = ops, .fixed = NULL};
  double cost, rest;
  ob_status st = OB_OK;
  if (d->guide) {
    /* the guide's view of this ending: not competitive for S (its total
     * beyond the guide's best for S by more than the slack) means it is
     * never costed by the model (not measured) */
    double gcost, grest, gbest;
    if ((st = stage_query(d->guide->c, &q, &gcost, order, cores, sec)) || (st = dp_state(d->guide, S & ~E, &grest)) ||
        (st = dp_state(d->guide, S, &gbest)))
      return st;
    if (gcost + grest > (1 + d->o->guide_slack) * gbest) {
      d->st->pruned++;
      return OB_OK;
    }
  }
  st = stage_query(d->c, &q, &cost, order, cores, sec);
  if (!st) st = dp_state(d, S & ~E, &rest);
  if (st) return st;
  d->st->transitions++;
  if (rest + cost < b->val) {
    b->val = rest + cost;
    b->stage = cost;
    b->kind = kind;
    b->ngroups = ng;
    for (int j = 0; j < ng; j++) {
      b->mask[j] = groups[order[j]];
      b->cores[j] = cores[j];
      b->sec[j] = sec[j];
    }
  }
  return OB_OK;
}

/* Endings of up to gmax pairwise disjoint candidates, from index i on. */
static ob_status choose(dp *d, uint64_t S, const uint64_t *cand, int nc, int i, uint64_t used, uint64_t *chosen, int n,
                        best_end *b) {
  for (; i < nc; i++) {
    if (cand[i] & used) continue;
    chosen[n] = cand[i];
    ob_status st = try_ending(d, S, OB_SCHED_STAGE_PARALLEL, n + 1, chosen, b);
    if (!st && n + 1 < d->gmax) st = choose(d, S, cand, nc, i + 1, used | cand[i], chosen, n + 1, b);
    if (st) return st;
  }
  return OB_OK;
}

static ob_status dp_state(dp *d, uint64_t S, double *val) {
  if (!S) {
    *val = 0;
    return OB_OK;
  }
  const int32_t *hit = umap_find(&d->memo, S);
  if (hit) {
    *val = d->e[*hit].val;
    return OB_OK;
  }
  const dpart *p = d->p;
  const ob_sched_opts *o = d->o;
  ob_status st = OB_OK;
  best_end *b = malloc(sizeof *b);
  uint64_t *cand = malloc(sizeof(uint64_t) * MAX_CAND);
  if (!b || !cand) {
    free(b);
    free(cand);
    return ob_fail(d->ctx, OB_ERR_NOMEM, "out of memory");
  }
  b->val = 1e300;
  b->ngroups = 0;
  /* merge endings: sinks of S sharing a merge key */
  uint64_t sinks = 0;
  for (uint64_t s = S; s; s &= s - 1) {
    int i = __builtin_ctzll(s);
    if (!(p->succ[i] & S)) sinks |= 1ull << i;
  }
  if (o->merge) {
    uint64_t seen = 0;
    for (uint64_t s = sinks; s && !st; s &= s - 1) {
      int i = __builtin_ctzll(s);
      if (p->mclass[i] < 0 || seen >> i & 1) continue;
      int mem[16], nm = 0;
      for (uint64_t t = sinks; t; t &= t - 1) {
        int j = __builtin_ctzll(t);
        if (p->mclass[j] == p->mclass[i]) {
          seen |= 1ull << j;
          if (nm < 16) mem[nm++] = j; /* wider classes: their first 16 */
        }
      }
      for (uint32_t sub = 1; sub < (1u << nm) && !st; sub++) {
        if (__builtin_popcount(sub) < 2) continue;
        uint64_t E = 0;
        for (int k = 0; k < nm; k++)
          if (sub >> k & 1) E |= 1ull << mem[k];
        st = try_ending(d, S, OB_SCHED_STAGE_MERGE, 1, &E, b);
      }
    }
  }
  /* candidate groups */
  int nc = 0, nsingle;
  for (int c = 0; c < p->nchains && !st; c++) {
    int end = __builtin_popcountll(S & p->chain_mask[c]);
    int from = end - o->r > 0 ? end - o->r : 0;
    for (int k = from; k < end; k++) {
      int x = p->chain_elem[p->chain_start[c] + k];
      uint64_t D = p->desc[x] & S;
      if (__builtin_popcountll(D) <= o->r && (o->parallel || D == (1ull << x))) cand[nc++] = D;
    }
  }
  nsingle = nc;
  if (!o->ios_original && o->parallel) {
    for (int i = 0; i < nc && !st; i++)
      for (int j = 0; j < nsingle; j++) {
        if (!(cand[i] & cand[j]) || (cand[j] & ~cand[i]) == 0) continue;
        uint64_t un = cand[i] | cand[j];
        if (__builtin_popcountll(un) > o->r) continue;
        bool dup = false;
        for (int k = 0; k < nc && !dup; k++) dup = cand[k] == un;
        if (dup) continue;
        if (nc == MAX_CAND) {
          st = ob_fail(d->ctx, OB_ERR_UNSUPPORTED, "more than %d candidate groups in one state (r = %d is too large)",
                       MAX_CAND, o->r);
          break;
        }
        cand[nc++] = un;
      }
  }
  uint64_t chosen[OB_SCHED_MAX_PART];
  if (!st) {
    int save = d->gmax;
    if (!o->parallel) d->gmax = 1;
    st = choose(d, S, cand, nc, 0, 0, chosen, 0, b);
    d->gmax = save;
  }
  if (!st && b->ngroups == 0)
    st = ob_fail(d->ctx, OB_ERR_UNSUPPORTED, "no ending for a state of %d units", __builtin_popcountll(S));
  if (!st) {
    size_t e = d->ne;
    d->e = grow(d->e, &d->ce, e + 1, sizeof *d->e);
    if (d->npool + (size_t)b->ngroups > d->cpool) {
      while (d->npool + (size_t)b->ngroups > d->cpool) d->cpool = d->cpool ? d->cpool * 2 : 4096;
      d->emask = realloc(d->emask, sizeof(uint64_t) * d->cpool);
      d->ecores = realloc(d->ecores, sizeof(int) * d->cpool);
      d->esec = realloc(d->esec, sizeof(double) * d->cpool);
      OB_ASSERT(d->emask && d->ecores && d->esec);
    }
    d->e[e] = (dentry){.val = b->val, .stage = b->stage, .kind = (uint8_t)b->kind, .ngroups = (uint8_t)b->ngroups,
                       .off = (int)d->npool};
    for (int j = 0; j < b->ngroups; j++) {
      d->emask[d->npool + (size_t)j] = b->mask[j];
      d->ecores[d->npool + (size_t)j] = b->cores[j];
      d->esec[d->npool + (size_t)j] = b->sec[j];
    }
    d->npool += (size_t)b->ngroups;
    d->ne++;
    umap_put(&d->memo, S, (int32_t)e, NULL);
    d->st->states++;
    *val = b->val;
  }
  free(b);
  free(cand);
  return st;
}

ob_status ob_sched_ios(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, ob_stage_cost *cost,
                       ob_schedule **out, ob_sched_stats *stats) {
  *out = NULL;
  ob_status st = check_opts(ctx, u, o, cost);
  if (st) return st;
  ob_sched_stats local;
  if (!stats) stats = &local;
  stats_start(u, stats);
  double t0 = ob_now_s();
  ob_schedule *s = NULL;
  if ((st = ob_schedule_new(ctx, o->cores, &s))) return st;
  cache c;
  cache_init(&c, ctx, u, cost, o->cores, o->max_splits, stats);
  dpart *p = c.arena ? malloc(sizeof *p) : NULL;
  dp d = {.ctx = ctx, .u = u, .o = o, .c = &c, .st = stats, .p = p};
  d.gmax = o->s < o->cores ? o->s : o->cores;
  if (!p) st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  /* the guide: its own cache, statistics and memo over the same parts */
  ob_sched_stats gstats;
  memset(&gstats, 0, sizeof gstats);
  cache gc;
  memset(&gc, 0, sizeof gc);
  dp g = {.ctx = ctx, .u = u, .o = o, .c = &gc, .st = &gstats, .p = p, .gmax = d.gmax};
  if (o->guide) {
    cache_init(&gc, ctx, u, o->guide, o->cores, o->max_splits, &gstats);
    if (!gc.arena) st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    d.guide = &g;
  }
  for (int pi = 0; pi < u->nparts && !st; pi++) {
    part_build(u, u->part_first[pi], u->part_n[pi], p);
    double bound = 1;
    for (int k = 0; k < p->nchains; k++) bound *= p->chain_start[k + 1] - p->chain_start[k] + 1;
    stats->state_bound += bound;
    umap_init(&d.memo);
    d.ne = d.npool = 0;
    umap_init(&g.memo);
    g.ne = g.npool = 0;
    uint64_t full = p->m == 64 ? ~0ull : (1ull << p->m) - 1;
    double v;
    st = dp_state(&d, full, &v);
    /* rebuild: the best ending of each state, last stage first */
    int first_stage = s->n;
    for (uint64_t S = full; S && !st;) {
      const dentry *e = &d.e[*umap_find(&d.memo, S)];
      int ids[OB_SCHED_MAX_PART], len[OB_SCHED_MAX_PART], order[OB_SCHED_MAX_PART];
      const int *ops[OB_SCHED_MAX_PART];
      int at = 0;
      uint64_t E = 0;
      for (int j = 0; j < e->ngroups; j++) {
        uint64_t m = d.emask[e->off + j];
        len[j] = mask_ids(p, m, ids + at);
        ops[j] = ids + at;
        at += len[j];
        order[j] = j;
        E |= m;
      }
      st = emit_stage(s, (ob_sched_stage_kind)e->kind, e->ngroups, len, ops, order, d.ecores + e->off, d.esec + e->off,
                      e->stage);
      S &= ~E;
    }
    /* stages came out last first */
    for (int a = first_stage, b2 = s->n - 1; a < b2; a++, b2--) {
      sstage t = s->st[a];
      s->st[a] = s->st[b2];
      s->st[b2] = t;
    }
    umap_free(&d.memo);
    umap_free(&g.memo);
  }
  free(g.e);
  free(g.emask);
  free(g.ecores);
  free(g.esec);
  if (o->guide) cache_free(&gc);
  stats->guide_states = gstats.states;
  stats->guide_stages = gstats.stages_costed;
  free(d.e);
  free(d.emask);
  free(d.ecores);
  free(d.esec);
  free(p);
  cache_free(&c);
  stats->seconds = ob_now_s() - t0;
  if (st) {
    ob_schedule_free(s);
    return st;
  }
  ob_schedule_set_origin(s, "ios", cost);
  *out = s;
  return OB_OK;
}
