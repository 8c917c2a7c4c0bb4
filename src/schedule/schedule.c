/* schedule.c: stages and loop primitives. Each primitive checks that its
 * axes are current leaves of the stage and records a relation; lowering
 * derives the loops and index expressions from the relations. Out of
 * memory: a primitive allocates before it edits the stage, returns
 * OB_ERR_NOMEM, and every later primitive (and ob_lower) refuses the
 * schedule with OB_ERR_NOMEM too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/sched_impl.h"

/* Room for one more stage; false when out of memory. */
static bool reserve_stage(ob_sched *s) {
  if (s->nstages < s->capstages) return true;
  int cap = s->capstages ? 2 * s->capstages : 16;
  ob_stage **n = ob_arena_alloc(s->arena, sizeof(*n) * (size_t)cap);
  if (!n) return false;
  if (s->nstages) memcpy(n, s->stages, sizeof(*n) * (size_t)s->nstages);
  s->stages = n;
  s->capstages = cap;
  return true;
}

static void add_stage(ob_sched *s, ob_stage *st, int pos) {
  if (!st || !reserve_stage(s)) return; /* the arena failed: ob_sched_new reports it */
  memmove(s->stages + pos + 1, s->stages + pos, sizeof(ob_stage *) * (size_t)(s->nstages - pos));
  s->stages[pos] = st;
  s->nstages++;
}

/* Room for `more` leaves; false when out of memory. */
static bool reserve_leaves(ob_sched *s, ob_stage *st, int more) {
  if (st->nleaves + more <= st->capleaves) return true;
  int cap = st->capleaves ? 2 * st->capleaves : 16;
  while (cap < st->nleaves + more) cap *= 2;
  ob_ivar **n = ob_arena_alloc(s->arena, sizeof(*n) * (size_t)cap);
  if (!n) return false;
  if (st->nleaves) memcpy(n, st->leaves, sizeof(*n) * (size_t)st->nleaves);
  st->leaves = n;
  st->capleaves = cap;
  return true;
}

static void push_leaf(ob_sched *s, ob_stage *st, ob_ivar *iv) {
  if (reserve_leaves(s, st, 1)) st->leaves[st->nleaves++] = iv;
}

/* Room for one more relation; false when out of memory. */
static bool reserve_rel(ob_sched *s, ob_stage *st) {
  if (st->nrels < st->caprels) return true;
  int cap = st->caprels ? 2 * st->caprels : 8;
  ob_rel *n = ob_arena_alloc(s->arena, sizeof(*n) * (size_t)cap);
  if (!n) return false;
  if (st->nrels) memcpy(n, st->rels, sizeof(*n) * (size_t)st->nrels);
  st->rels = n;
  st->caprels = cap;
  return true;
}

static ob_status sched_oom(ob_sched *s, const char *prim, const ob_stage *st) {
  return ob_fail(s->ctx, OB_ERR_NOMEM, "%s on stage '%s': out of memory", prim, st->tensor->name);
}

static ob_stage *stage_from_tensor(ob_sched *s, const ob_tensor *t) {
  ob_stage *st = ob_arena_alloc(s->arena, sizeof *st);
  if (!st) return NULL;
  st->s = s;
  st->tensor = t;
  st->ndim = t->ndim;
  st->axes = t->axes;
  const ob_expr *b = t->body;
  if (b->kind == OB_E_REDUCE) {
    st->is_reduce = true;
    st->rop = b->rop;
    st->nred = b->n;
    st->raxes = b->axes;
    st->body = b->a;
  } else {
    st->body = t->body;
  }
  for (int i = 0; i < st->ndim; i++) push_leaf(s, st, st->axes[i]);
  for (int i = 0; i < st->nred; i++) push_leaf(s, st, st->raxes[i]);
  st->scope = OB_SCOPE_LOCAL;
  return st;
}

static bool seen_input(ob_sched *s, const ob_tensor *t) {
  for (int i = 0; i < s->ninputs; i++)
    if (s->inputs[i] == t) return true;
  return false;
}

static void visit_expr(ob_sched *s, const ob_expr *e, const ob_tensor ***inputs, int *cap);

static void visit_tensor(ob_sched *s, const ob_tensor *t, const ob_tensor ***inputs, int *cap) {
  if (t->placeholder) {
    if (seen_input(s, t)) return;
    if (s->ninputs == *cap) {
      int ncap = *cap ? 2 * *cap : 8;
      const ob_tensor **n = ob_arena_alloc(s->arena, sizeof(*n) * (size_t)ncap);
      if (!n) return; /* ob_sched_new reports the failed arena */
      if (s->ninputs) memcpy(n, *inputs, sizeof(*n) * (size_t)s->ninputs);
      *inputs = n;
      s->inputs = n;
      *cap = ncap;
    }
    (*inputs)[s->ninputs++] = t;
    return;
  }
  if (ob_sched_stage(s, t)) return;
  visit_expr(s, t->body, inputs, cap);
  add_stage(s, stage_from_tensor(s, t), s->nstages);
}

static void visit_expr(ob_sched *s, const ob_expr *e, const ob_tensor ***inputs, int *cap) {
  if (!e) return;
  if (e->kind == OB_E_LOAD) {
    for (int i = 0; i < e->n; i++) visit_expr(s, e->idx[i], inputs, cap);
    visit_tensor(s, e->tensor, inputs, cap);
    return;
  }
  visit_expr(s, e->a, inputs, cap);
  visit_expr(s, e->b, inputs, cap);
  visit_expr(s, e->c, inputs, cap);
}

static int cmp_tensor_id(const void *x, const void *y) {
  const ob_tensor *a = *(const ob_tensor *const *)x, *b = *(const ob_tensor *const *)y;
  return (a->id > b->id) - (a->id < b->id);
}

ob_status ob_sched_new(ob_te *te, int nout, ob_tensor *const *outs, ob_sched **out) {
  ob_ctx *ctx = te->ctx;
  /* A declaration that ran out of memory is incomplete (its NULLs may be
   * among outs): say so before anything else. */
  if (ob_te_failed(te)) return ob_fail(ctx, OB_ERR_NOMEM, "compute declaration: out of memory");
  if (nout < 1) return ob_fail(ctx, OB_ERR_INVALID_ARG, "schedule needs at least one output");
  ob_sched *s = calloc(1, sizeof *s);
  if (!s) return ob_fail(ctx, OB_ERR_NOMEM, "schedule: out of memory");
  s->te = te;
  s->ctx = ctx;
  s->arena = ob_arena_new(ctx, 32 * 1024);
  s->next_id = 1 << 20; /* ids of schedule-made axes never clash with te's */
  if (s->arena) s->outs = ob_arena_alloc(s->arena, sizeof(ob_tensor *) * (size_t)nout);
  if (!s->outs) {
    ob_sched_free(s);
    return ob_fail(ctx, OB_ERR_NOMEM, "schedule: out of memory");
  }
  s->nout = nout;
  const ob_tensor **inputs = NULL;
  int cap = 0;
  for (int i = 0; i < nout; i++) {
    if (!outs[i] || outs[i]->placeholder) {
      ob_sched_free(s);
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "output %d is not a compute tensor", i);
    }
    s->outs[i] = outs[i];
    visit_tensor(s, outs[i], &inputs, &cap);
  }
  if (ob_arena_failed(s->arena)) {
    ob_sched_free(s);
    return ob_fail(ctx, OB_ERR_NOMEM, "schedule: out of memory");
  }
  for (int i = 0; i < nout; i++) ob_sched_stage(s, outs[i])->is_output = true;
  if (s->ninputs > 1) qsort(s->inputs, (size_t)s->ninputs, sizeof(*s->inputs), cmp_tensor_id);
  *out = s;
  return OB_OK;
}

void ob_sched_free(ob_sched *s) {
  if (!s) return;
  ob_arena_free(s->arena);
  free(s);
}

ob_stage *ob_sched_stage(ob_sched *s, const ob_tensor *t) {
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->tensor == t) return s->stages[i];
  return NULL;
}

int ob_stage_num_axes(const ob_stage *st) { return st->ndim; }
int ob_stage_num_reduce_axes(const ob_stage *st) { return st->nred; }
ob_ivar *ob_stage_axis(ob_stage *st, int i) {
  OB_ASSERT(i >= 0 && i < st->ndim);
  return st->axes[i];
}
ob_ivar *ob_stage_reduce_axis(ob_stage *st, int i) {
  OB_ASSERT(i >= 0 && i < st->nred);
  return st->raxes[i];
}
const ob_tensor *ob_stage_tensor(const ob_stage *st) { return st->tensor; }

int ob_stage_leaves(const ob_stage *st, ob_ivar **out, int cap) {
  int n = st->nleaves < cap ? st->nleaves : cap;
  for (int i = 0; i < n; i++) out[i] = st->leaves[i];
  return st->nleaves;
}

static int leaf_pos(const ob_stage *st, const ob_ivar *iv) {
  for (int i = 0; i < st->nleaves; i++)
    if (st->leaves[i] == iv) return i;
  return -1;
}

static ob_status need_leaf(ob_sched *s, const ob_stage *st, const ob_ivar *iv, const char *prim) {
  if (ob_arena_failed(s->arena)) return sched_oom(s, prim, st); /* iv may be its NULL */
  if (!iv) return ob_fail(s->ctx, OB_ERR_SCHEDULE, "%s on stage '%s': axis is NULL", prim, st->tensor->name);
  if (leaf_pos(st, iv) < 0)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "%s on stage '%s': axis '%s' is not a leaf of this stage",
                   prim, st->tensor->name, iv->name);
  return OB_OK;
}

static ob_ivar *new_iv(ob_sched *s, const char *name, const char *suffix, int64_t extent,
                       ob_ivar_kind kind) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s.%s", name, suffix);
  return ob_iv_new(s->arena, buf, extent, kind, s->next_id++);
}

static ob_status do_split(ob_sched *s, ob_stage *st, ob_ivar *iv, int64_t factor,
                          ob_ivar **outer, ob_ivar **inner) {
  ob_status st_ = need_leaf(s, st, iv, "split");
  if (st_) return st_;
  if (factor < 1)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "split of '%s' on stage '%s': factor %lld < 1", iv->name,
                   st->tensor->name, (long long)factor);
  if (factor > iv->extent) factor = iv->extent; /* an inner loop never exceeds its parent */
  ob_ivar *o = new_iv(s, iv->name, "outer", (iv->extent + factor - 1) / factor, iv->kind);
  ob_ivar *i = new_iv(s, iv->name, "inner", factor, iv->kind);
  if (!o || !i || !reserve_rel(s, st) || !reserve_leaves(s, st, 1)) return sched_oom(s, "split", st);
  ob_rel *r = &st->rels[st->nrels++];
  r->kind = OB_REL_SPLIT;
  r->parent = iv;
  r->outer = o;
  r->inner = i;
  r->factor = factor;
  int p = leaf_pos(st, iv);
  push_leaf(s, st, i); /* grow the array, then shift into place */
  memmove(st->leaves + p + 2, st->leaves + p + 1, sizeof(ob_ivar *) * (size_t)(st->nleaves - p - 2));
  st->leaves[p] = o;
  st->leaves[p + 1] = i;
  st->touched = true;
  if (outer) *outer = o;
  if (inner) *inner = i;
  return OB_OK;
}

ob_status ob_sched_split(ob_sched *s, ob_stage *st, ob_ivar *iv, int64_t factor,
                         ob_ivar **outer, ob_ivar **inner) {
  return do_split(s, st, iv, factor, outer, inner);
}

ob_status ob_sched_split_nparts(ob_sched *s, ob_stage *st, ob_ivar *iv, int64_t nparts,
                                ob_ivar **outer, ob_ivar **inner) {
  ob_status st_ = need_leaf(s, st, iv, "split");
  if (st_) return st_;
  if (nparts < 1)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "split of '%s' on stage '%s': nparts %lld < 1", iv->name,
                   st->tensor->name, (long long)nparts);
  return do_split(s, st, iv, (iv->extent + nparts - 1) / nparts, outer, inner);
}

ob_status ob_sched_tile(ob_sched *s, ob_stage *st, ob_ivar *x, ob_ivar *y, int64_t fx,
                        int64_t fy, ob_ivar **xo, ob_ivar **yo, ob_ivar **xi, ob_ivar **yi) {
  ob_ivar *a, *b, *c, *d;
  /* check everything first so that a failed tile leaves the stage as it was */
  ob_status r = need_leaf(s, st, x, "tile");
  if (!r) r = need_leaf(s, st, y, "tile");
  if (r) return r;
  if (x == y)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "tile on stage '%s': axis '%s' given twice",
                   st->tensor->name, x->name);
  if (fx < 1 || fy < 1)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "tile of '%s', '%s' on stage '%s': factor %lld < 1",
                   x->name, y->name, st->tensor->name, (long long)(fx < 1 ? fx : fy));
  r = do_split(s, st, x, fx, &a, &b);
  if (!r) r = do_split(s, st, y, fy, &c, &d);
  if (!r) r = ob_sched_reorder(s, st, 4, (ob_ivar *[]){a, c, b, d});
  if (r) return r;
  *xo = a;
  *yo = c;
  *xi = b;
  *yi = d;
  return OB_OK;
}

ob_status ob_sched_fuse(ob_sched *s, ob_stage *st, ob_ivar *outer, ob_ivar *inner,
                        ob_ivar **fused) {
  ob_status r = need_leaf(s, st, outer, "fuse");
  if (!r) r = need_leaf(s, st, inner, "fuse");
  if (r) return r;
  int po = leaf_pos(st, outer), pi = leaf_pos(st, inner);
  if (pi != po + 1)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE,
                   "fuse on stage '%s': '%s' must be directly outside '%s'", st->tensor->name,
                   outer->name, inner->name);
  if (outer->kind != inner->kind)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "fuse on stage '%s': cannot fuse a data axis with a reduce axis",
                   st->tensor->name);
  char buf[256];
  snprintf(buf, sizeof buf, "%s.%s.fused", outer->name, inner->name);
  ob_ivar *f = ob_iv_new(s->arena, buf, outer->extent * inner->extent, outer->kind, s->next_id++);
  if (!f || !reserve_rel(s, st)) return sched_oom(s, "fuse", st);
  ob_rel *rel = &st->rels[st->nrels++];
  rel->kind = OB_REL_FUSE;
  rel->outer = outer;
  rel->inner = inner;
  rel->fused = f;
  st->leaves[po] = f;
  memmove(st->leaves + pi, st->leaves + pi + 1, sizeof(ob_ivar *) * (size_t)(st->nleaves - pi - 1));
  st->nleaves--;
  st->touched = true;
  *fused = f;
  return OB_OK;
}

ob_status ob_sched_reorder(ob_sched *s, ob_stage *st, int n, ob_ivar *const *order) {
  int pos[64];
  if (n > 64) return ob_fail(s->ctx, OB_ERR_SCHEDULE, "reorder: too many axes");
  for (int i = 0; i < n; i++) {
    ob_status r = need_leaf(s, st, order[i], "reorder");
    if (r) return r;
    pos[i] = leaf_pos(st, order[i]);
    for (int j = 0; j < i; j++)
      if (pos[j] == pos[i])
        return ob_fail(s->ctx, OB_ERR_SCHEDULE, "reorder on stage '%s': axis '%s' given twice",
                       st->tensor->name, order[i]->name);
  }
  /* the positions, sorted, receive the axes in the given order */
  int sorted[64];
  memcpy(sorted, pos, sizeof(int) * (size_t)n);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      int t = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = t;
    }
  for (int i = 0; i < n; i++) st->leaves[sorted[i]] = order[i];
  st->touched = true;
  return OB_OK;
}

ob_status ob_sched_compute_at(ob_sched *s, ob_stage *st, ob_stage *consumer, ob_ivar *iv) {
  if (st->is_output)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "compute_at: stage '%s' is an output and stays at root",
                   st->tensor->name);
  if (consumer == st)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "compute_at: stage '%s' cannot attach to itself",
                   st->tensor->name);
  ob_status r = need_leaf(s, consumer, iv, "compute_at");
  if (r) return r;
  st->attach = OB_ATTACH_AT;
  st->attach_stage = consumer;
  st->attach_iv = iv;
  return OB_OK;
}

ob_status ob_sched_compute_root(ob_sched *s, ob_stage *st) {
  if (ob_arena_failed(s->arena)) return sched_oom(s, "compute_root", st);
  st->attach = OB_ATTACH_ROOT;
  st->attach_stage = NULL;
  st->attach_iv = NULL;
  return OB_OK;
}

ob_status ob_sched_compute_inline(ob_sched *s, ob_stage *st) {
  if (ob_arena_failed(s->arena)) return sched_oom(s, "compute_inline", st);
  if (st->is_output)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "compute_inline: stage '%s' is an output", st->tensor->name);
  if (st->is_reduce)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "compute_inline: stage '%s' is a reduction",
                   st->tensor->name);
  st->attach = OB_ATTACH_INLINE;
  return OB_OK;
}

ob_status ob_sched_cache_write(ob_sched *s, ob_stage *st, ob_stage **local) {
  if (ob_arena_failed(s->arena)) return sched_oom(s, "cache_write", st);
  if (st->touched || st->nrels)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE,
                   "cache_write on stage '%s' must come before its loops are transformed",
                   st->tensor->name);
  if (st->attach == OB_ATTACH_INLINE)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "cache_write on inlined stage '%s'", st->tensor->name);
  /* Everything is allocated and built before `st` changes, so that out of
   * memory leaves it as it was. */
  ob_arena *a = s->arena;
  int n = st->ndim + st->nred;
  ob_tensor *t = ob_arena_alloc(a, sizeof *t);
  ob_ivar **from = ob_arena_alloc(a, sizeof(ob_ivar *) * (size_t)n);
  ob_expr **to = ob_arena_alloc(a, sizeof(ob_expr *) * (size_t)n);
  ob_stage *l = ob_arena_alloc(a, sizeof *l);
  if (!t || !from || !to || !l) return sched_oom(s, "cache_write", st);
  *t = *st->tensor;
  t->name = ob_arena_sprintf(a, "%s.local", st->tensor->name);
  t->placeholder = false;
  t->id = -1;
  l->s = s;
  l->tensor = t;
  l->ndim = st->ndim;
  l->nred = st->nred;
  l->axes = ob_arena_alloc(a, sizeof(ob_ivar *) * (size_t)(st->ndim));
  l->raxes = ob_arena_alloc(a, sizeof(ob_ivar *) * (size_t)(st->nred ? st->nred : 1));
  if (!l->axes || !l->raxes) return sched_oom(s, "cache_write", st);
  for (int i = 0; i < st->ndim; i++) {
    l->axes[i] = ob_iv_new(a, st->axes[i]->name, st->axes[i]->extent, OB_IV_DATA, s->next_id++);
    from[i] = st->axes[i];
    to[i] = ob_e_var(a, l->axes[i]);
  }
  for (int i = 0; i < st->nred; i++) {
    l->raxes[i] = ob_iv_new(a, st->raxes[i]->name, st->raxes[i]->extent, OB_IV_REDUCE, s->next_id++);
    from[st->ndim + i] = st->raxes[i];
    to[st->ndim + i] = ob_e_var(a, l->raxes[i]);
  }
  l->body = ob_expr_subst(a, st->body, n, from, to);
  l->scope = OB_SCOPE_LOCAL;
  l->is_reduce = st->is_reduce;
  l->rop = st->rop;
  t->axes = l->axes;
  for (int i = 0; i < l->ndim; i++) push_leaf(s, l, l->axes[i]);
  for (int i = 0; i < l->nred; i++) push_leaf(s, l, l->raxes[i]);
  /* the original stage becomes a copy out of the local buffer */
  ob_expr **idx = ob_arena_alloc(a, sizeof(ob_expr *) * (size_t)st->ndim);
  for (int i = 0; idx && i < st->ndim; i++) idx[i] = ob_e_var(a, st->axes[i]);
  ob_expr *ld = ob_arena_alloc(a, sizeof *ld);
  if (ob_arena_failed(a) || !reserve_stage(s)) return sched_oom(s, "cache_write", st);
  ld->kind = OB_E_LOAD;
  ld->dtype = t->dtype;
  ld->tensor = t;
  ld->n = st->ndim;
  ld->idx = idx;
  st->body = ld;
  st->is_reduce = false;
  st->nred = 0;
  st->nleaves = 0;
  for (int i = 0; i < st->ndim; i++) push_leaf(s, st, st->axes[i]);
  int pos = 0;
  while (s->stages[pos] != st) pos++;
  add_stage(s, l, pos);
  *local = l;
  return OB_OK;
}

static ob_status annotate(ob_sched *s, ob_stage *st, ob_ivar *iv, ob_iter_ann ann, const char *prim) {
  ob_status r = need_leaf(s, st, iv, prim);
  if (r) return r;
  if ((ann == OB_IT_PARALLEL || ob_ann_is_bound(ann)) && iv->kind == OB_IV_REDUCE)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "%s on stage '%s': '%s' is a reduce axis", prim,
                   st->tensor->name, iv->name);
  if (ob_ann_is_bound(ann))
    for (int i = 0; i < st->nann; i++)
      if (st->ann_kind[i] == ann && st->ann_iv[i] != iv && leaf_pos(st, st->ann_iv[i]) >= 0)
        return ob_fail(s->ctx, OB_ERR_SCHEDULE, "bind on stage '%s': '%s' and '%s' both bound to %s",
                       st->tensor->name, st->ann_iv[i]->name, iv->name, ob_iter_ann_name(ann));
  for (int i = 0; i < st->nann; i++)
    if (st->ann_iv[i] == iv) {
      st->ann_kind[i] = ann;
      return OB_OK;
    }
  if (st->nann == 64) return ob_fail(s->ctx, OB_ERR_SCHEDULE, "%s: too many annotations", prim);
  st->ann_iv[st->nann] = iv;
  st->ann_kind[st->nann++] = ann;
  return OB_OK;
}

ob_iter_ann ob_stage_ann(const ob_stage *st, const ob_ivar *iv) {
  for (int i = 0; i < st->nann; i++)
    if (st->ann_iv[i] == iv) return st->ann_kind[i];
  return OB_IT_SERIAL;
}

ob_status ob_sched_unroll(ob_sched *s, ob_stage *st, ob_ivar *iv) {
  return annotate(s, st, iv, OB_IT_UNROLL, "unroll");
}
ob_status ob_sched_no_unroll(ob_sched *s, ob_stage *st, ob_ivar *iv) {
  return annotate(s, st, iv, OB_IT_NO_UNROLL, "no_unroll");
}
ob_status ob_sched_vectorize(ob_sched *s, ob_stage *st, ob_ivar *iv) {
  return annotate(s, st, iv, OB_IT_VECTORIZE, "vectorize");
}
ob_status ob_sched_parallel(ob_sched *s, ob_stage *st, ob_ivar *iv) {
  return annotate(s, st, iv, OB_IT_PARALLEL, "parallel");
}

ob_status ob_sched_skip_padding(ob_sched *s, ob_stage *st) {
  if (ob_arena_failed(s->arena)) return sched_oom(s, "skip_padding", st);
  if (!st->is_reduce || st->rop != OB_REDUCE_SUM)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "skip_padding: stage '%s' is not a sum reduction",
                   st->tensor->name);
  if (st->attach == OB_ATTACH_INLINE)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "skip_padding on inlined stage '%s'", st->tensor->name);
  st->skip_padding = true;
  return OB_OK;
}

ob_status ob_sched_prefetch(ob_sched *s, ob_stage *st, const ob_tensor *t, ob_ivar *outer,
                            int64_t slice_elems, int nspread, ob_ivar *const *spread, ob_ivar *at) {
  if (ob_arena_failed(s->arena)) return sched_oom(s, "prefetch", st);
  if (!t || !outer || !at || slice_elems <= 0 || nspread < 0 || nspread > 4 || (nspread && !spread))
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "prefetch on stage '%s': a tensor, an outer and an 'at' ivar, a "
                   "positive slice and at most 4 spread ivars are needed", st->tensor->name);
  if (st->attach == OB_ATTACH_INLINE)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "prefetch on inlined stage '%s'", st->tensor->name);
  bool input = false;
  for (int i = 0; i < s->ninputs; i++) input |= s->inputs[i] == t;
  if (!input || t->dtype != OB_F32 || slice_elems > ob_tensor_numel(t))
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "prefetch on stage '%s': '%s' is not a float32 input of %lld elements "
                   "or more", st->tensor->name, t->name, (long long)slice_elems);
  st->pf_tensor = t;
  st->pf_outer = outer;
  st->pf_at = at;
  st->pf_slice = slice_elems;
  st->pf_nspread = nspread;
  for (int i = 0; i < nspread; i++) st->pf_spread[i] = spread[i];
  return OB_OK;
}

ob_status ob_sched_bind(ob_sched *s, ob_stage *st, ob_ivar *iv, ob_iter_ann tag) {
  if (!ob_ann_is_bound(tag))
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "bind on stage '%s': %s is not a block or thread index",
                   st->tensor->name, ob_iter_ann_name(tag));
  return annotate(s, st, iv, tag, "bind");
}

ob_status ob_sched_set_scope(ob_sched *s, ob_stage *st, ob_mem_scope scope) {
  if (ob_arena_failed(s->arena)) return sched_oom(s, "set_scope", st);
  if ((unsigned)scope >= OB_SCOPE_COUNT || scope == OB_SCOPE_GLOBAL)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE,
                   "set_scope on stage '%s': only an attached stage's scope (shared or local) can be set",
                   st->tensor->name);
  if (st->is_output)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "set_scope: stage '%s' is an output (global memory)",
                   st->tensor->name);
  st->scope = scope;
  return OB_OK;
}

ob_status ob_sched_unroll_pragma(ob_sched *s, int64_t max_step, bool explicit_unroll) {
  if (ob_arena_failed(s->arena)) return ob_fail(s->ctx, OB_ERR_NOMEM, "unroll_pragma: out of memory");
  if (max_step < 0)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "unroll_pragma: max_step %lld < 0", (long long)max_step);
  s->unroll_max_step = max_step;
  s->unroll_explicit = explicit_unroll;
  return OB_OK;
}

void ob_sched_pressure_sched(ob_sched *s) { s->pressure_sched = true; }

ob_status ob_sched_unroll_inner(ob_sched *s, int64_t factor) {
  if (factor < 0 || factor > OB_SCHED_UNROLL_INNER_MAX)
    return ob_fail(s->ctx, OB_ERR_SCHEDULE, "unroll_inner: factor %lld is outside [0, %d]", (long long)factor,
                   OB_SCHED_UNROLL_INNER_MAX);
  s->inner_unroll = factor;
  return OB_OK;
}

/* e with every load of `from` reading `to` instead (same indices); NULL
 * when the arena failed. */
static ob_expr *retarget(ob_arena *a, ob_expr *e, const ob_tensor *from, const ob_tensor *to) {
  if (!e) return NULL;
  if (e->kind == OB_E_INT || e->kind == OB_E_FLOAT || e->kind == OB_E_VAR) return e;
  ob_expr *c = ob_e_copy(a, e);
  if (!c) return NULL;
  c->a = retarget(a, e->a, from, to);
  c->b = retarget(a, e->b, from, to);
  c->c = retarget(a, e->c, from, to);
  if (e->kind == OB_E_LOAD) {
    c->idx = ob_arena_alloc(a, sizeof(ob_expr *) * (size_t)(e->n ? e->n : 1));
    if (!c->idx) return NULL;
    for (int i = 0; i < e->n; i++) c->idx[i] = retarget(a, e->idx[i], from, to);
    if (e->tensor == from) c->tensor = to;
  }
  return c;
}

static bool reads_tensor(const ob_expr *e, const ob_tensor *t) {
  if (!e) return false;
  if (e->kind == OB_E_LOAD) {
    if (e->tensor == t) return true;
    for (int i = 0; i < e->n; i++)
      if (reads_tensor(e->idx[i], t)) return true;
  }
  return reads_tensor(e->a, t) || reads_tensor(e->b, t) || reads_tensor(e->c, t);
}

ob_status ob_sched_cache_read(ob_sched *s, const ob_tensor *t, ob_mem_scope scope, int nreaders,
                              ob_stage *const *readers, ob_stage **out) {
  ob_ctx *ctx = s->ctx;
  if (ob_arena_failed(s->arena)) return ob_fail(ctx, OB_ERR_NOMEM, "cache_read: out of memory");
  if (!t) return ob_fail(ctx, OB_ERR_SCHEDULE, "cache_read: tensor is NULL");
  if (scope != OB_SCOPE_SHARED && scope != OB_SCOPE_LOCAL)
    return ob_fail(ctx, OB_ERR_SCHEDULE, "cache_read of '%s': scope must be shared or local, not %s",
                   t->name, ob_mem_scope_name(scope));
  if (nreaders < 1 || nreaders > 16)
    return ob_fail(ctx, OB_ERR_SCHEDULE, "cache_read of '%s': 1 to 16 readers, not %d", t->name, nreaders);
  int first = s->nstages;
  for (int i = 0; i < nreaders; i++) {
    ob_stage *r = readers[i];
    int pos = 0;
    while (pos < s->nstages && s->stages[pos] != r) pos++;
    if (!r || pos == s->nstages)
      return ob_fail(ctx, OB_ERR_SCHEDULE, "cache_read of '%s': reader %d is not a stage of this schedule",
                     t->name, i);
    if (!reads_tensor(r->body, t))
      return ob_fail(ctx, OB_ERR_SCHEDULE, "cache_read of '%s': stage '%s' does not read it", t->name,
                     r->tensor->name);
    if (pos < first) first = pos;
  }
  /* Everything is built before any reader changes, so that out of memory
   * leaves the schedule as it was. */
  ob_arena *a = s->arena;
  ob_tensor *c = ob_arena_alloc(a, sizeof *c);
  ob_stage *l = ob_arena_alloc(a, sizeof *l);
  ob_expr **idx = ob_arena_alloc(a, sizeof(ob_expr *) * (size_t)(t->ndim ? t->ndim : 1));
  ob_ivar **axes = ob_arena_alloc(a, sizeof(ob_ivar *) * (size_t)(t->ndim ? t->ndim : 1));
  ob_expr *ld = ob_arena_alloc(a, sizeof *ld);
  ob_expr *bodies[16];
  if (!c || !l || !idx || !axes || !ld) return ob_fail(ctx, OB_ERR_NOMEM, "cache_read: out of memory");
  *c = *t;
  c->name = ob_arena_sprintf(a, "%s.%s", t->name, ob_mem_scope_name(scope));
  c->placeholder = false;
  c->id = -1;
  for (int d = 0; d < t->ndim; d++) {
    char nm[16];
    snprintf(nm, sizeof nm, "ax%d", d);
    axes[d] = ob_iv_new(a, nm, t->shape[d], OB_IV_DATA, s->next_id++);
    idx[d] = ob_e_var(a, axes[d]);
  }
  ld->kind = OB_E_LOAD;
  ld->dtype = t->dtype;
  ld->tensor = t;
  ld->n = t->ndim;
  ld->idx = idx;
  c->axes = axes;
  c->body = ld;
  for (int i = 0; i < nreaders; i++) bodies[i] = retarget(a, readers[i]->body, t, c);
  l->s = s;
  l->tensor = c;
  l->ndim = t->ndim;
  l->axes = axes;
  l->body = ld;
  l->scope = scope;
  l->cache_read = true;
  if (ob_arena_failed(a) || !reserve_stage(s) || !reserve_leaves(s, l, t->ndim))
    return ob_fail(ctx, OB_ERR_NOMEM, "cache_read: out of memory");
  for (int d = 0; d < t->ndim; d++) push_leaf(s, l, axes[d]);
  for (int i = 0; i < nreaders; i++) readers[i]->body = bodies[i];
  add_stage(s, l, first);
  *out = l;
  return OB_OK;
}
