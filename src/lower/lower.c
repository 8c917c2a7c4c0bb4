/* lower.c: schedule -> loop-nest IR. Inlines, infers the region each
 * attached stage must compute (linear forms over the consumer's inner loop
 * variables, interval arithmetic otherwise), builds each stage's loops from
 * its leaf order and split/fuse relations, guards non-dividing splits and
 * regions that overhang a tensor, and flattens tensor accesses.
 *
 * Out of memory: the IR lives in the lowered function's arena, and once an
 * allocation from it failed every builder returns NULL (arena.c, te.c).
 * The code below only has to survive those NULLs (never dereference one,
 * never assert on facts computed from one) until the next check of the
 * arena, which returns OB_ERR_NOMEM ("lowering: out of memory"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/ir.h"
#include "opbench/lower.h"
#include "opbench/target.h"
#include "schedule/sched_impl.h"

#define OB_REGION_SUBS 4 /* strides one region dimension may have */

typedef struct emit_state emit_state;

typedef struct tinfo {
  const ob_tensor *t;
  ob_stage *stage;   /* NULL for placeholders */
  ob_buffer *buf;    /* NULL until known (attached stages get one when emitted) */
  bool local;        /* indexed relative to base[] over ext[] */
  ob_expr *base[8];
  int64_t ext[8];
  bool guard[8];     /* region may overhang the tensor in this dim */
  /* a compact region (lowering's stride-friendly storage): coordinate
   * base[d] + sum_k sub_coef[d][k] * j_k with j_k over [0, sub_ext[d][k]),
   * outermost first, stored densely over the j's; nsub[d] <= 1 is the
   * plain interval [base, base + ext) */
  int nsub[8];
  int64_t sub_coef[8][OB_REGION_SUBS], sub_ext[8][OB_REGION_SUBS];
  ob_expr *body;     /* stage body with inlined producers expanded */
} tinfo;

typedef struct lctx {
  ob_ctx *ctx;
  ob_sched *s;
  ob_lowered *f;
  ob_arena *a;
  tinfo *ti;
  int nti;
  int next_id;
  int next_buf;
  emit_state *open[16]; /* stages being emitted, outermost first (their loops
                           enclose what is emitted now) */
  int nopen;
} lctx;

static tinfo *info(lctx *lc, const ob_tensor *t) {
  for (int i = 0; i < lc->nti; i++)
    if (lc->ti[i].t == t) return &lc->ti[i];
  return NULL;
}

static ob_status lower_oom(lctx *lc) { return ob_fail(lc->ctx, OB_ERR_NOMEM, "lowering: out of memory"); }

static ob_buffer *new_buffer(lctx *lc, const char *name, ob_dtype dt, int64_t numel, ob_buf_kind k) {
  ob_buffer *b = ob_arena_alloc(lc->a, sizeof *b);
  if (!b || !(b->name = ob_arena_strdup(lc->a, name))) return NULL;
  b->dtype = dt;
  b->numel = numel;
  b->kind = k;
  b->id = lc->next_buf++;
  b->arg_index = -1;
  return b;
}

/* ---- inlining -------------------------------------------------------------- */
static ob_expr *inline_expr(lctx *lc, ob_expr *e) {
  if (!e) return NULL;
  if (e->kind == OB_E_INT || e->kind == OB_E_FLOAT || e->kind == OB_E_VAR) return e;
  ob_expr *c = ob_e_copy(lc->a, e);
  if (!c) return NULL;
  c->a = inline_expr(lc, e->a);
  c->b = inline_expr(lc, e->b);
  c->c = inline_expr(lc, e->c);
  if (e->kind == OB_E_LOAD) {
    c->idx = ob_arena_alloc(lc->a, sizeof(ob_expr *) * (size_t)e->n);
    if (!c->idx) return NULL;
    for (int i = 0; i < e->n; i++) c->idx[i] = inline_expr(lc, e->idx[i]);
    tinfo *ti = info(lc, e->tensor);
    if (ti && ti->stage && ti->stage->attach == OB_ATTACH_INLINE)
      return ob_expr_subst(lc->a, ti->body, ti->stage->ndim, ti->stage->axes, c->idx);
  }
  return c;
}

static bool reads(const ob_expr *e, const ob_tensor *t) {
  if (!e) return false;
  if (e->kind == OB_E_LOAD) {
    if (e->tensor == t) return true;
    for (int i = 0; i < e->n; i++)
      if (reads(e->idx[i], t)) return true;
  }
  return reads(e->a, t) || reads(e->b, t) || reads(e->c, t);
}

/* ---- regions ---------------------------------------------------------------- */
/* The tensor coordinate of region position v along dim d of a local region. */
static ob_expr *region_coord(lctx *lc, const tinfo *ti, int d, ob_expr *v) {
  ob_arena *a = lc->a;
  if (ti->nsub[d] <= 1 && ti->sub_coef[d][0] == 1) return ob_simplify(a, ob_e_bin(a, OB_ADD, ti->base[d], v));
  ob_expr *acc = ti->base[d];
  int64_t inner = 1;
  for (int k = ti->nsub[d] - 1; k >= 0; k--) {
    ob_expr *j = ob_e_bin(a, OB_DIV, v, ob_e_int(a, inner));
    if (k > 0) j = ob_e_bin(a, OB_MOD, j, ob_e_int(a, ti->sub_ext[d][k]));
    acc = ob_e_bin(a, OB_ADD, acc, ob_e_bin(a, OB_MUL, j, ob_e_int(a, ti->sub_coef[d][k])));
    inner *= ti->sub_ext[d][k];
  }
  return ob_simplify(a, acc);
}

/* The region position of tensor coordinate i along dim d (its inverse on
 * the region's points). */
static ob_expr *region_index(lctx *lc, const tinfo *ti, int d, ob_expr *i) {
  ob_arena *a = lc->a;
  ob_expr *off = ob_e_bin(a, OB_SUB, i, ti->base[d]);
  if (ti->nsub[d] <= 1 && ti->sub_coef[d][0] == 1) return off;
  ob_expr *acc = ob_e_int(a, 0);
  int64_t inner = 1;
  for (int k = ti->nsub[d] - 1; k >= 0; k--) {
    ob_expr *j = ob_e_bin(a, OB_DIV, off, ob_e_int(a, ti->sub_coef[d][k]));
    if (k > 0) j = ob_e_bin(a, OB_MOD, j, ob_e_int(a, ti->sub_ext[d][k]));
    acc = ob_e_bin(a, OB_ADD, acc, ob_e_bin(a, OB_MUL, j, ob_e_int(a, inner)));
    inner *= ti->sub_ext[d][k];
  }
  return acc;
}

/* ---- flattening ------------------------------------------------------------ */
static ob_expr *flat_index(lctx *lc, tinfo *ti, ob_expr *const *idx) {
  ob_arena *a = lc->a;
  ob_expr *acc = ob_e_int(a, 0);
  for (int d = 0; d < ti->t->ndim; d++) {
    ob_expr *i = idx[d];
    if (ti->local) i = region_index(lc, ti, d, i);
    acc = ob_e_bin(a, OB_ADD, ob_e_bin(a, OB_MUL, acc, ob_e_int(a, ti->ext[d])), i);
  }
  return ob_simplify(a, acc);
}

static ob_expr *to_bloads(lctx *lc, ob_expr *e) {
  if (!e) return NULL;
  /* constants move into the lowered arena: the te may die before the IR */
  if (e->kind == OB_E_INT || e->kind == OB_E_FLOAT) return ob_e_copy(lc->a, e);
  if (e->kind == OB_E_VAR) return e;
  if (e->kind == OB_E_LOAD) {
    tinfo *ti = info(lc, e->tensor);
    OB_ASSERT(ti && (ti->buf || ob_arena_failed(lc->a)));
    ob_expr **idx = ob_arena_alloc(lc->a, sizeof(ob_expr *) * (size_t)e->n);
    if (!idx) return NULL;
    for (int i = 0; i < e->n; i++) idx[i] = to_bloads(lc, e->idx[i]);
    return ob_buffer_load(lc->a, ti->buf, e->dtype, flat_index(lc, ti, idx));
  }
  ob_expr *c = ob_e_copy(lc->a, e);
  if (!c) return NULL;
  c->a = to_bloads(lc, e->a);
  c->b = to_bloads(lc, e->b);
  c->c = to_bloads(lc, e->c);
  return ob_simplify(lc->a, c);
}

/* ---- region inference ----------------------------------------------------- */
static bool in_set(ob_ivar *const *set, int n, const ob_ivar *v) {
  for (int i = 0; i < n; i++)
    if (set[i] == v) return true;
  return false;
}

static bool uses_any(const ob_expr *e, ob_ivar *const *set, int n) {
  for (int i = 0; i < n; i++)
    if (ob_expr_uses_var(e, set[i])) return true;
  return false;
}

/* No variable but those in set[] (and no load) in e. */
static bool only_relaxed(const ob_expr *e, ob_ivar *const *set, int n) {
  if (!e) return true;
  if (e->kind == OB_E_VAR) return in_set(set, n, e->var);
  if (e->kind == OB_E_LOAD || e->kind == OB_E_BLOAD) return false;
  return only_relaxed(e->a, set, n) && only_relaxed(e->b, set, n) && only_relaxed(e->c, set, n);
}

/* The region of one dimension: base + sum_k coef[k] * j_k, j_k < sext[k]
 * (nsub terms, outermost first; nsub 1 with coef 1 is an interval). */
typedef struct region_dim {
  ob_expr *base;
  int64_t ext; /* positions: the product of sext */
  int nsub;
  int64_t coef[OB_REGION_SUBS], sext[OB_REGION_SUBS];
} region_dim;

static void dense_dim(region_dim *r, ob_expr *base, int64_t ext) {
  r->base = base;
  r->ext = ext;
  r->nsub = 1;
  r->coef[0] = 1;
  r->sext[0] = ext;
}

/* The interval a region dimension spans (its first to last point + 1). */
static int64_t dim_span(const region_dim *r) {
  int64_t span = 1;
  for (int k = 0; k < r->nsub; k++) span += r->coef[k] * (r->sext[k] - 1);
  return span;
}

static int cmp_term_desc(const void *x, const void *y) {
  const int64_t *a = x, *b = y; /* {coef, extent} */
  return (a[0] < b[0]) - (a[0] > b[0]);
}

/* Region of index e when the vars in relaxed[] sweep their ranges. Terms
 * of relaxed variables whose steps leave gaps (a coefficient larger than
 * the span of the terms below it) make a compact region: the points only. */
static void infer_dim(lctx *lc, ob_expr *e, ob_ivar *const *relaxed, int nrel, region_dim *out) {
  ob_lin l, b;
  if (ob_lin_of(e, &l)) {
    memset(&b, 0, sizeof b);
    b.c0 = l.c0;
    int64_t extent = 1, terms[OB_LIN_MAX][2];
    int nterms = 0;
    bool ok = true, pos = true;
    for (int i = 0; i < l.n && ok; i++) {
      ob_expr *at = l.atom[i];
      int64_t c = l.coef[i], lo = 0, hi = 0;
      if (at->kind == OB_E_VAR && in_set(relaxed, nrel, at->var)) {
        hi = at->var->extent - 1;
      } else if (uses_any(at, relaxed, nrel)) {
        /* a non-linear term of relaxed variables only (a div or mod of a
         * fused loop): its range, if it has one and no other variable */
        bool only = only_relaxed(at, relaxed, nrel) && ob_range(at, &lo, &hi);
        if (!only) {
          ok = false;
          break;
        }
      } else {
        b.atom[b.n] = at;
        b.coef[b.n++] = c;
        continue;
      }
      b.c0 += c < 0 ? c * hi : c * lo;
      extent += (c < 0 ? -c : c) * (hi - lo);
      if (c < 0) pos = false;
      if (hi > lo) {
        terms[nterms][0] = c < 0 ? -c : c;
        terms[nterms++][1] = hi - lo + 1;
      }
    }
    if (ok) {
      ob_expr *base = ob_simplify(lc->a, ob_lin_to_expr(lc->a, &b));
      dense_dim(out, base, extent);
      /* compact when every term is a positive step over a relaxed range,
       * each step exceeds the span of the smaller ones, and gaps remain */
      if (pos && nterms >= 1 && nterms <= OB_REGION_SUBS) {
        qsort(terms, (size_t)nterms, sizeof terms[0], cmp_term_desc);
        bool disjoint = true;
        int64_t below = 0, points = 1;
        for (int k = nterms - 1; k >= 0; k--) {
          disjoint &= terms[k][0] > below;
          below += terms[k][0] * (terms[k][1] - 1);
          points *= terms[k][1];
        }
        if (disjoint && points < extent) {
          out->nsub = nterms;
          out->ext = points;
          for (int k = 0; k < nterms; k++) {
            out->coef[k] = terms[k][0];
            out->sext[k] = terms[k][1];
          }
        }
      }
      return;
    }
  }
  int64_t lo = 0, hi = 0;
  if (!ob_range(e, &lo, &hi)) { /* affine-with-div/mod indices always have one */
    OB_ASSERT(ob_arena_failed(lc->a));
    dense_dim(out, NULL, 1);
    return;
  }
  dense_dim(out, ob_e_int(lc->a, lo), hi - lo + 1);
}

/* r |= the region r2 (as intervals: a union of compact regions is kept as
 * the interval that holds both). */
static void union_dim(lctx *lc, region_dim *r, const region_dim *r2) {
  int64_t ext = dim_span(r), e2 = dim_span(r2), k;
  ob_expr *b2 = r2->base;
  ob_expr *d = ob_simplify(lc->a, ob_e_bin(lc->a, OB_SUB, b2, r->base));
  if (ob_is_const(d, &k)) {
    int64_t lo = k < 0 ? k : 0, hi = ext > k + e2 ? ext : k + e2;
    dense_dim(r, ob_simplify(lc->a, ob_e_bin(lc->a, OB_ADD, r->base, ob_e_int(lc->a, lo))), hi - lo);
    return;
  }
  int64_t l1, h1, l2, h2;
  if (!ob_range(r->base, &l1, &h1) || !ob_range(b2, &l2, &h2)) {
    OB_ASSERT(ob_arena_failed(lc->a));
    return;
  }
  int64_t lo = l1 < l2 ? l1 : l2, hi = h1 + ext > h2 + e2 ? h1 + ext : h2 + e2;
  dense_dim(r, ob_e_int(lc->a, lo), hi - lo);
}

/* The accesses of a producer in its consumer's body. A body with more
 * (a Winograd output transform reads alpha^2 x m^2 of them before its
 * coefficient chains fold) marks the list full: the region is then the
 * whole tensor, never too small. */
#define OB_ACC_MAX 4096
typedef struct acc_list {
  ob_expr **idx[OB_ACC_MAX];
  int n;
  bool full;
} acc_list;

static void collect_loads(const ob_expr *e, const ob_tensor *t, acc_list *out) {
  if (!e) return;
  if (e->kind == OB_E_LOAD) {
    if (e->tensor == t) {
      if (out->n < OB_ACC_MAX) out->idx[out->n++] = e->idx;
      else out->full = true;
    }
    for (int i = 0; i < e->n; i++) collect_loads(e->idx[i], t, out);
  }
  collect_loads(e->a, t, out);
  collect_loads(e->b, t, out);
  collect_loads(e->c, t, out);
}

/* ---- stage emission ------------------------------------------------------- */
typedef struct ivmap {
  ob_ivar *iv[96];
  int64_t ext[96];
  ob_expr *val[96];
  int n;
  const ob_arena *a; /* where the values live: NULL values once it failed */
} ivmap;

static int ivm_find(ivmap *m, const ob_ivar *iv) {
  for (int i = 0; i < m->n; i++)
    if (m->iv[i] == iv) return i;
  return -1;
}
static int ivm_add(ivmap *m, ob_ivar *iv, int64_t ext) {
  int i = ivm_find(m, iv);
  if (i >= 0) {
    m->ext[i] = ext;
    return i;
  }
  OB_ASSERT(m->n < 96);
  m->iv[m->n] = iv;
  m->ext[m->n] = ext;
  m->val[m->n] = NULL;
  return m->n++;
}
static int64_t ivm_ext(ivmap *m, const ob_ivar *iv) {
  int i = ivm_find(m, iv);
  OB_ASSERT(i >= 0);
  return m->ext[i];
}
static ob_expr *ivm_val(ivmap *m, const ob_ivar *iv) {
  int i = ivm_find(m, iv);
  OB_ASSERT(i >= 0 && (m->val[i] || ob_arena_failed(m->a)));
  return m->val[i];
}

typedef struct guard {
  ob_expr *cond;
  bool reduce; /* depends on a reduce axis: not for the init nest */
  int depth;   /* > 0: a window guard (skip_padding), placed around the
                  loop at this leaf position (the leaves before it define
                  every variable it reads); 0: at the store */
} guard;

/* Root values from leaf values (the relations, walked backwards). */
static void derive_values(lctx *lc, ob_stage *st, ivmap *m, guard *g, int *ng) {
  ob_arena *a = lc->a;
  for (int r = st->nrels - 1; r >= 0; r--) {
    ob_rel *rel = &st->rels[r];
    if (rel->kind == OB_REL_SPLIT) {
      int64_t ie = ivm_ext(m, rel->inner), pe = ivm_ext(m, rel->parent);
      ob_expr *v = ob_e_bin(a, OB_ADD, ob_e_bin(a, OB_MUL, ivm_val(m, rel->outer), ob_e_int(a, ie)),
                            ivm_val(m, rel->inner));
      v = ob_simplify(a, v);
      m->val[ivm_find(m, rel->parent)] = v;
      if (ivm_ext(m, rel->outer) * ie != pe && g) {
        g[*ng].cond = ob_e_bin(a, OB_LT, v, ob_e_int(a, pe));
        g[*ng].reduce = rel->parent->kind == OB_IV_REDUCE;
        g[*ng].depth = 0;
        (*ng)++;
      }
    } else {
      int64_t ie = ivm_ext(m, rel->inner);
      ob_expr *fv = ivm_val(m, rel->fused);
      m->val[ivm_find(m, rel->outer)] = ob_simplify(a, ob_e_bin(a, OB_DIV, fv, ob_e_int(a, ie)));
      m->val[ivm_find(m, rel->inner)] = ob_simplify(a, ob_e_bin(a, OB_MOD, fv, ob_e_int(a, ie)));
    }
  }
}

static ob_stmt *seq_of(lctx *lc, ob_stmt **items, int n) {
  ob_stmt *s = ob_stmt_new(lc->a, OB_S_SEQ);
  if (!s || !(s->seq = ob_arena_alloc(lc->a, sizeof(ob_stmt *) * (size_t)(n ? n : 1)))) return NULL;
  if (n) memcpy(s->seq, items, sizeof(ob_stmt *) * (size_t)n);
  s->nseq = n;
  return s;
}

static ob_stmt *for_of(lctx *lc, ob_ivar *v, ob_stmt *body) {
  ob_stmt *s = v && body ? ob_stmt_new(lc->a, OB_S_FOR) : NULL;
  if (!s) return NULL;
  s->var = v;
  s->ann = v->ann;
  s->body = body;
  return s;
}

static ob_stmt *guarded(lctx *lc, ob_stmt *body, guard *g, int ng, bool with_reduce) {
  ob_expr *cond = NULL;
  for (int i = 0; i < ng; i++) {
    if ((g[i].reduce && !with_reduce) || g[i].depth) continue;
    ob_expr *c = ob_simplify(lc->a, g[i].cond);
    int64_t v;
    if (ob_is_const(c, &v) && v) continue;
    cond = cond ? ob_e_bin(lc->a, OB_AND, cond, c) : c;
  }
  if (!cond) return body;
  ob_stmt *s = ob_stmt_new(lc->a, OB_S_IF);
  if (!s) return NULL;
  s->cond = cond;
  s->body = body;
  return s;
}

typedef struct emit_state {
  ob_stage *st;
  tinfo *ti;
  ob_expr *body;    /* ti->body, with skip_padding's selects taken out */
  ivmap m;          /* main nest */
  ob_ivar *lv[64];  /* loop var per leaf */
  guard g[32];
  int ng;
  ob_expr *gcoord[8];
  int first_red;
} emit_state;

static ob_status emit_stage(lctx *lc, ob_stage *st, ob_stmt **out);

static ob_expr *store_value(lctx *lc, emit_state *es, ob_expr *const *coords, ob_expr *idx) {
  ob_stage *st = es->st;
  int n = st->ndim + st->nred;
  ob_ivar *from[16];
  ob_expr *to[16];
  for (int d = 0; d < st->ndim; d++) {
    from[d] = st->axes[d];
    to[d] = coords[d];
  }
  for (int r = 0; r < st->nred; r++) {
    from[st->ndim + r] = st->raxes[r];
    to[st->ndim + r] = ivm_val(&es->m, st->raxes[r]);
  }
  ob_expr *v = to_bloads(lc, ob_expr_subst(lc->a, es->body, n, from, to));
  if (!st->is_reduce || !v) return v;
  ob_expr *cur = ob_buffer_load(lc->a, es->ti->buf, v->dtype, idx);
  return ob_e_bin(lc->a, st->rop == OB_REDUCE_SUM ? OB_ADD : OB_MAX, cur, v);
}

static ob_stmt *make_store(lctx *lc, tinfo *ti, ob_expr *idx, ob_expr *value) {
  ob_stmt *s = ob_stmt_new(lc->a, OB_S_STORE);
  if (!s) return NULL;
  s->buf = ti->buf;
  s->index = idx;
  s->value = value;
  return s;
}

/* The init nest of a reduction: the data leaves from position pos inward. */
static ob_stmt *init_nest(lctx *lc, emit_state *es, int pos) {
  ob_stage *st = es->st;
  ivmap m = es->m;
  ob_ivar *loops[64];
  int nl = 0;
  for (int p = pos; p < st->nleaves; p++) {
    ob_ivar *leaf = st->leaves[p];
    if (leaf->kind != OB_IV_DATA || !es->lv[p]) continue;
    ob_ivar *v = ob_iv_new(lc->a, leaf->name, es->lv[p]->extent, OB_IV_DATA, lc->next_id++);
    if (!v) return NULL;
    v->ann = es->lv[p]->ann == OB_IT_PARALLEL ? OB_IT_SERIAL : es->lv[p]->ann;
    m.val[ivm_find(&m, leaf)] = ob_e_var(lc->a, v);
    loops[nl++] = v;
  }
  guard g[32] = {{0}};
  int ng = 0;
  derive_values(lc, st, &m, g, &ng);
  ob_expr *coords[8];
  for (int d = 0; d < st->ndim; d++) {
    ob_expr *v = ivm_val(&m, st->axes[d]);
    coords[d] = es->ti->local ? region_coord(lc, es->ti, d, v) : v;
    if (es->ti->local && es->ti->guard[d]) {
      g[ng].cond = ob_e_bin(lc->a, OB_AND, ob_e_bin(lc->a, OB_GE, coords[d], ob_e_int(lc->a, 0)),
                            ob_e_bin(lc->a, OB_LT, coords[d], ob_e_int(lc->a, st->tensor->shape[d])));
      g[ng++].reduce = false;
    }
  }
  ob_expr *init = ob_arena_alloc(lc->a, sizeof *init);
  if (!init) return NULL;
  init->kind = OB_E_FLOAT;
  init->dtype = st->tensor->dtype;
  init->fval = st->rop == OB_REDUCE_SUM ? 0.0 : -HUGE_VAL;
  ob_stmt *body = guarded(lc, make_store(lc, es->ti, flat_index(lc, es->ti, coords), init), g, ng, false);
  for (int i = nl - 1; i >= 0; i--) body = for_of(lc, loops[i], body);
  return body;
}

/* Region, buffer and nest of each stage attached at (consumer, leaf p).
 * Shared fills at one point share their barriers: one before the first
 * fill, one after the last (or before a fill that reads an earlier one). */
static ob_status emit_attached(lctx *lc, emit_state *es, int p, ob_stmt **items, int *n) {
  ob_stage *cons = es->st;
  ob_ivar *leaf = cons->leaves[p];
  bool pending = false; /* a shared fill awaits its closing barrier */
  const ob_tensor *filled[16];
  int nfilled = 0;
  for (int i = 0; i < lc->s->nstages; i++) {
    ob_stage *pr = lc->s->stages[i];
    if (pr->attach != OB_ATTACH_AT || pr->attach_stage != cons || pr->attach_iv != leaf) continue;
    if (pending) {
      bool reads_fill = false;
      for (int k = 0; k < nfilled; k++) reads_fill |= reads(info(lc, pr->tensor)->body, filled[k]);
      if (reads_fill) {
        if (!(items[(*n)++] = ob_stmt_new(lc->a, OB_S_BARRIER))) return lower_oom(lc);
        pending = false;
        nfilled = 0;
      }
    }
    tinfo *pti = info(lc, pr->tensor);
    acc_list *accp = malloc(sizeof *accp); /* 4096 accesses: too big for the stack */
    if (!accp) return lower_oom(lc);
    accp->n = 0;
    accp->full = false;
    collect_loads(es->ti->body, pr->tensor, accp);
    OB_ASSERT(accp->n > 0); /* checked before emission */
    ob_ivar *relaxed[128];
    int nrel = 0;
    for (int q = p + 1; q < cons->nleaves; q++)
      if (es->lv[q]) relaxed[nrel++] = es->lv[q];
    /* a shared region serves every thread of the block: the loops bound to
     * thread indices around the attach point sweep their ranges too */
    if (pr->scope == OB_SCOPE_SHARED)
      for (int k = 0; k < lc->nopen; k++)
        for (int q = 0; q < lc->open[k]->st->nleaves && nrel < 128; q++) {
          ob_ivar *v = lc->open[k]->lv[q];
          if (v && ob_ann_is_thread(v->ann) && !in_set(relaxed, nrel, v)) relaxed[nrel++] = v;
        }
    int nsub = cons->ndim + cons->nred;
    ob_ivar *from[16];
    ob_expr *to[16];
    for (int d = 0; d < cons->ndim; d++) {
      from[d] = cons->axes[d];
      to[d] = es->gcoord[d];
    }
    for (int r = 0; r < cons->nred; r++) {
      from[cons->ndim + r] = cons->raxes[r];
      to[cons->ndim + r] = ivm_val(&es->m, cons->raxes[r]);
    }
    int64_t numel = 1;
    for (int d = 0; d < pr->tensor->ndim; d++) {
      region_dim rd = {0}, r2;
      for (int k = 0; k < accp->n; k++) {
        ob_expr *e = ob_simplify(lc->a, ob_expr_subst(lc->a, accp->idx[k][d], nsub, from, to));
        infer_dim(lc, e, relaxed, nrel, k ? &r2 : &rd);
        if (k) union_dim(lc, &rd, &r2);
      }
      int64_t shape = pr->tensor->shape[d], lo, hi;
      if (accp->full || (dim_span(&rd) >= shape && rd.nsub <= 1 && rd.coef[0] == 1))
        dense_dim(&rd, ob_e_int(lc->a, 0), shape);
      pti->base[d] = rd.base;
      pti->ext[d] = rd.ext;
      pti->nsub[d] = rd.nsub;
      for (int k = 0; k < rd.nsub; k++) {
        pti->sub_coef[d][k] = rd.coef[k];
        pti->sub_ext[d][k] = rd.sext[k];
      }
      pti->guard[d] = !(ob_range(rd.base, &lo, &hi) && lo >= 0 && hi + dim_span(&rd) <= shape);
      numel *= rd.ext;
    }
    free(accp);
    pti->local = true;
    pti->buf = new_buffer(lc, pr->tensor->name, pr->tensor->dtype, numel, OB_BUF_LOCAL);
    ob_stmt *al = ob_stmt_new(lc->a, OB_S_ALLOC);
    if (!pti->buf || !al) return lower_oom(lc);
    pti->buf->scope = pr->scope;
    al->buf = pti->buf;
    /* shared memory is filled by the whole block: every thread waits
     * before (the previous iteration's readers are done) and after (the
     * copy is complete) */
    bool shared = pr->scope == OB_SCOPE_SHARED;
    if (shared && !pending && !(*n && items[*n - 1]->kind == OB_S_BARRIER) &&
        !(items[(*n)++] = ob_stmt_new(lc->a, OB_S_BARRIER)))
      return lower_oom(lc);
    items[(*n)++] = al;
    ob_stmt *nest;
    ob_status r = emit_stage(lc, pr, &nest);
    if (r) return r;
    items[(*n)++] = nest;
    if (shared) {
      pending = true;
      if (nfilled < 16) filled[nfilled++] = pr->tensor;
    }
  }
  if (pending && !(items[(*n)++] = ob_stmt_new(lc->a, OB_S_BARRIER))) return lower_oom(lc);
  return OB_OK;
}

/* body inside the window guards placed at leaf position pos. */
static ob_stmt *window_guarded(lctx *lc, emit_state *es, int pos, ob_stmt *body) {
  ob_expr *cond = NULL;
  for (int i = 0; i < es->ng; i++)
    if (es->g[i].depth > 0 && es->g[i].depth == pos) cond = cond ? ob_e_bin(lc->a, OB_AND, cond, es->g[i].cond) : es->g[i].cond;
  if (!cond) return body;
  ob_stmt *s = ob_stmt_new(lc->a, OB_S_IF);
  if (!s) return NULL;
  s->cond = ob_simplify(lc->a, cond);
  s->body = body;
  s->window = true;
  return s;
}

/* The value and extent of iv in the nests being emitted, innermost first. */
static bool open_value(lctx *lc, const ob_ivar *iv, ob_expr **val, int64_t *ext) {
  for (int i = lc->nopen - 1; i >= 0; i--) {
    ivmap *m = &lc->open[i]->m;
    int k = ivm_find(m, iv);
    if (k >= 0 && m->val[k]) {
      *val = m->val[k];
      *ext = m->ext[k];
      return true;
    }
  }
  return false;
}

/* ob_sched_prefetch's part for this iteration of its `at` loop: part k (the
 * spread ivars' values, numbered outermost first) of the slice that the next
 * value of `outer` reads; at the last value, its own slice again (in cache:
 * a wasted hint). Clamped, not guarded: a guard on `outer` alone, where
 * `outer` is a parallel loop (dense's panels), would have partitioning run
 * the last iteration after the parallel loop, on one thread. */
static ob_status prefetch_stmt(lctx *lc, emit_state *es, ob_stmt **out) {
  ob_stage *st = es->st;
  ob_arena *a = lc->a;
  ob_expr *ov, *k = ob_e_int(a, 0);
  int64_t oext, parts = 1;
  const ob_ivar *missing = open_value(lc, st->pf_outer, &ov, &oext) ? NULL : st->pf_outer;
  for (int i = 0; i < st->pf_nspread && !missing; i++) {
    ob_expr *v;
    int64_t e;
    if (!open_value(lc, st->pf_spread[i], &v, &e)) {
      missing = st->pf_spread[i];
      break;
    }
    k = ob_e_bin(a, OB_ADD, ob_e_bin(a, OB_MUL, k, ob_e_int(a, e)), v);
    parts *= e;
  }
  if (missing)
    return ob_fail(lc->ctx, OB_ERR_SCHEDULE, "prefetch on stage '%s': ivar '%s' has no value at its 'at' loop",
                   st->tensor->name, missing->name);
  tinfo *ti = info(lc, st->pf_tensor);
  if (!ti || !ti->buf)
    return ob_fail(lc->ctx, OB_ERR_SCHEDULE, "prefetch on stage '%s': '%s' is not a buffer of the kernel",
                   st->tensor->name, st->pf_tensor->name);
  int64_t line = 64 / (int64_t)ob_dtype_size(st->pf_tensor->dtype); /* elements per cache line */
  if (line < 1) line = 1;
  int64_t chunk = (st->pf_slice + parts - 1) / parts;
  chunk = (chunk + line - 1) / line * line;
  if (oext < 2) { /* no next slice */
    *out = seq_of(lc, NULL, 0);
    return *out ? OB_OK : lower_oom(lc);
  }
  ob_expr *next = ob_e_bin(a, OB_MIN, ob_e_bin(a, OB_ADD, ov, ob_e_int(a, 1)), ob_e_int(a, oext - 1));
  ob_stmt *p = ob_stmt_new(a, OB_S_PREFETCH);
  if (!p) return lower_oom(lc);
  p->buf = ti->buf;
  p->count = chunk;
  p->index = ob_simplify(a, ob_e_bin(a, OB_ADD, ob_e_bin(a, OB_MUL, next, ob_e_int(a, st->pf_slice)),
                                     ob_e_bin(a, OB_MUL, k, ob_e_int(a, chunk))));
  p->value = ob_simplify(a, ob_e_bin(a, OB_MUL, ob_e_bin(a, OB_ADD, next, ob_e_int(a, 1)), ob_e_int(a, st->pf_slice)));
  *out = p;
  return ob_arena_failed(a) ? lower_oom(lc) : OB_OK;
}

static ob_status build(lctx *lc, emit_state *es, int pos, ob_stmt **out) {
  ob_stage *st = es->st;
  if (pos == st->nleaves) {
    ob_expr *idx = flat_index(lc, es->ti, es->gcoord);
    *out = guarded(lc, make_store(lc, es->ti, idx, store_value(lc, es, es->gcoord, idx)), es->g,
                   es->ng, true);
    *out = window_guarded(lc, es, pos, *out);
    return ob_arena_failed(lc->a) ? lower_oom(lc) : OB_OK;
  }
  ob_stmt *items[64], *inner[64];
  int n = 0, ni = 0;
  if (st->is_reduce && pos == es->first_red) items[n++] = init_nest(lc, es, pos);
  ob_status r = OB_OK;
  if (st->pf_tensor && st->leaves[pos] == st->pf_at) r = prefetch_stmt(lc, es, &inner[ni++]);
  if (r) return r;
  r = emit_attached(lc, es, pos, inner, &ni);
  if (r) return r;
  r = build(lc, es, pos + 1, &inner[ni]);
  if (r) return r;
  ni++;
  ob_stmt *body = ni == 1 ? inner[0] : seq_of(lc, inner, ni);
  items[n++] = window_guarded(lc, es, pos, es->lv[pos] ? for_of(lc, es->lv[pos], body) : body);
  *out = n == 1 ? items[0] : seq_of(lc, items, n);
  return ob_arena_failed(lc->a) ? lower_oom(lc) : OB_OK;
}

/* ---- skip_padding ------------------------------------------------------------
 * A factor select(c, x, 0) of the reduction body (an inlined zero padding)
 * is replaced by x, and c becomes a guard of the update. Only factors of
 * the top-level product: a select under a sum cannot be skipped whole. */
static bool te_has_load(const ob_expr *e) {
  if (!e) return false;
  if (e->kind == OB_E_LOAD || e->kind == OB_E_BLOAD) return true;
  return te_has_load(e->a) || te_has_load(e->b) || te_has_load(e->c);
}

static ob_expr *strip_zero_selects(lctx *lc, ob_expr *e, ob_expr **cond) {
  if (!e) return NULL;
  if (e->kind == OB_E_SELECT && e->b->kind == OB_E_FLOAT && e->b->fval == 0.0 && !te_has_load(e->c)) {
    *cond = *cond ? ob_e_bin(lc->a, OB_AND, *cond, e->c) : e->c;
    return strip_zero_selects(lc, e->a, cond);
  }
  if (e->kind == OB_E_BIN && e->op == OB_MUL) {
    ob_expr *x = strip_zero_selects(lc, e->a, cond), *y = strip_zero_selects(lc, e->b, cond);
    if (x == e->a && y == e->b) return e;
    ob_expr *c = ob_e_copy(lc->a, e);
    if (!c) return NULL;
    c->a = x;
    c->b = y;
    return c;
  }
  return e;
}

/* Splits a condition into its conjuncts. */
static int conjuncts(ob_expr *c, ob_expr **out, int cap) {
  if (c && c->kind == OB_E_BIN && c->op == OB_AND) {
    int n = conjuncts(c->a, out, cap);
    return n + conjuncts(c->b, out + n, cap - n);
  }
  if (!c || cap < 1) return 0;
  out[0] = c;
  return 1;
}

/* The guards of skip_padding, each conjunct placed at the loop after the
 * last leaf whose variable it reads, never above the reduction's init. */
static void window_guards(lctx *lc, emit_state *es) {
  ob_stage *st = es->st;
  ob_expr *cond = NULL;
  es->body = strip_zero_selects(lc, es->ti->body, &cond);
  if (!cond) return;
  int n = st->ndim + st->nred;
  ob_ivar *from[16];
  ob_expr *to[16];
  for (int d = 0; d < st->ndim; d++) {
    from[d] = st->axes[d];
    to[d] = es->gcoord[d];
  }
  for (int r = 0; r < st->nred; r++) {
    from[st->ndim + r] = st->raxes[r];
    to[st->ndim + r] = ivm_val(&es->m, st->raxes[r]);
  }
  ob_expr *parts[16];
  /* to_bloads copies the te's constants: the te may be freed before the IR */
  int np = conjuncts(to_bloads(lc, ob_expr_subst(lc->a, cond, n, from, to)), parts, 16);
  for (int i = 0; i < np && es->ng < 32; i++) {
    int64_t v;
    if (ob_is_const(parts[i], &v) && v) continue; /* always inside */
    int depth = es->first_red > 0 ? es->first_red : 0;
    for (int p = 0; p < st->nleaves; p++)
      if (es->lv[p] && ob_expr_uses_var(parts[i], es->lv[p]) && p + 1 > depth) depth = p + 1;
    es->g[es->ng].cond = parts[i];
    es->g[es->ng].reduce = true;
    es->g[es->ng++].depth = depth > 0 ? depth : st->nleaves; /* 0 means "at the store" */
  }
}

static ob_status emit_stage(lctx *lc, ob_stage *st, ob_stmt **out) {
  emit_state *es = calloc(1, sizeof *es);
  if (!es) return lower_oom(lc);
  es->m.a = lc->a;
  es->st = st;
  es->ti = info(lc, st->tensor);
  for (int d = 0; d < st->ndim; d++)
    ivm_add(&es->m, st->axes[d], es->ti->local ? es->ti->ext[d] : st->tensor->shape[d]);
  for (int r = 0; r < st->nred; r++) ivm_add(&es->m, st->raxes[r], st->raxes[r]->extent);
  for (int r = 0; r < st->nrels; r++) {
    ob_rel *rel = &st->rels[r];
    if (rel->kind == OB_REL_SPLIT) {
      int64_t pe = ivm_ext(&es->m, rel->parent);
      int64_t ie = rel->factor < pe ? rel->factor : pe;
      ivm_add(&es->m, rel->inner, ie);
      ivm_add(&es->m, rel->outer, (pe + ie - 1) / ie);
    } else {
      ivm_add(&es->m, rel->fused, ivm_ext(&es->m, rel->outer) * ivm_ext(&es->m, rel->inner));
    }
  }
  es->first_red = -1;
  for (int p = 0; p < st->nleaves; p++) {
    ob_ivar *leaf = st->leaves[p];
    if (leaf->kind == OB_IV_REDUCE && es->first_red < 0) es->first_red = p;
    if (ivm_ext(&es->m, leaf) == 1) { /* a one-trip loop is no loop */
      es->lv[p] = NULL;
      es->m.val[ivm_find(&es->m, leaf)] = ob_e_int(lc->a, 0);
      continue;
    }
    ob_ivar *v = ob_iv_new(lc->a, leaf->name, ivm_ext(&es->m, leaf), leaf->kind, lc->next_id++);
    if (!v) break; /* reported below */
    v->ann = ob_stage_ann(st, leaf);
    es->lv[p] = v;
    es->m.val[ivm_find(&es->m, leaf)] = ob_e_var(lc->a, v);
  }
  derive_values(lc, st, &es->m, es->g, &es->ng);
  for (int d = 0; d < st->ndim; d++) {
    ob_expr *v = ivm_val(&es->m, st->axes[d]);
    es->gcoord[d] = es->ti->local ? region_coord(lc, es->ti, d, v) : v;
    if (es->ti->local && es->ti->guard[d]) {
      es->g[es->ng].cond =
          ob_e_bin(lc->a, OB_AND, ob_e_bin(lc->a, OB_GE, es->gcoord[d], ob_e_int(lc->a, 0)),
                   ob_e_bin(lc->a, OB_LT, es->gcoord[d], ob_e_int(lc->a, st->tensor->shape[d])));
      es->g[es->ng++].reduce = false;
    }
  }
  es->body = es->ti->body;
  if (st->skip_padding && st->is_reduce) window_guards(lc, es);
  ob_status r;
  if (ob_arena_failed(lc->a)) {
    r = lower_oom(lc);
  } else if (lc->nopen == (int)(sizeof lc->open / sizeof lc->open[0])) {
    r = ob_fail(lc->ctx, OB_ERR_SCHEDULE, "stage '%s': stages attached more than %d deep",
                st->tensor->name, lc->nopen);
  } else {
    lc->open[lc->nopen++] = es;
    r = build(lc, es, 0, out);
    lc->nopen--;
  }
  free(es);
  return r;
}

/* ---- loop partitioning ------------------------------------------------------
 * A guard c*o + rest < 0 (rest ranging over [lo, hi] with the other
 * variables) holds for every value of rest on one side of a point in o and
 * fails for every value beyond another. A loop is split at those points:
 * re-simplifying each part with its narrower range proves the guards that
 * always hold there (and drops them) and empties the parts where one never
 * holds. Hot loops then run without tail checks and keep their accumulators
 * in registers; a convolution's interior runs without its window guards.
 * Reduce, parallel and vectorized loops split only where the guards of a
 * non-dividing split begin to fail (one point, as tails need); data loops
 * split at every point of every guard, window guards included. */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

typedef struct points {
  int64_t p[16]; /* window guards: every point */
  int n;
  int64_t safe;  /* the other guards: where the first begins to fail */
  int64_t ext;
  bool window;   /* a data loop: split on window guards too */
  bool nested_window; /* a serial reduce loop: on window guards below an inner loop */
} points;

static void add_point(points *pt, int64_t v) {
  if (v <= 0 || v >= pt->ext) return;
  for (int i = 0; i < pt->n; i++)
    if (pt->p[i] == v) return;
  if (pt->n < 16) pt->p[pt->n++] = v;
}

static void cond_points(lctx *lc, const ob_expr *c, ob_ivar *o, points *pt, bool all) {
  if (!c || c->kind != OB_E_BIN) return;
  if (c->op == OB_AND) {
    cond_points(lc, c->a, o, pt, all);
    cond_points(lc, c->b, o, pt, all);
    return;
  }
  ob_expr *d; /* the guard is d < 0 */
  ob_arena *a = lc->a;
  switch (c->op) {
  case OB_LT: d = ob_e_bin(a, OB_SUB, c->a, c->b); break;
  case OB_LE: d = ob_e_bin(a, OB_SUB, ob_e_bin(a, OB_SUB, c->a, c->b), ob_e_int(a, 1)); break;
  case OB_GT: d = ob_e_bin(a, OB_SUB, c->b, c->a); break;
  case OB_GE: d = ob_e_bin(a, OB_SUB, ob_e_bin(a, OB_SUB, c->b, c->a), ob_e_int(a, 1)); break;
  default: return;
  }
  if (!d || c->a->dtype != OB_I64) return;
  ob_lin l;
  if (!ob_lin_of(ob_simplify(a, d), &l)) return;
  int64_t coef = 0;
  ob_lin rest = l;
  rest.n = 0;
  for (int i = 0; i < l.n; i++) {
    if (l.atom[i]->kind == OB_E_VAR && l.atom[i]->var == o) {
      coef += l.coef[i];
    } else {
      if (ob_expr_uses_var(l.atom[i], o)) return;
      rest.atom[rest.n] = l.atom[i];
      rest.coef[rest.n++] = l.coef[i];
    }
  }
  int64_t lo, hi;
  if (coef == 0 || !ob_range(ob_lin_to_expr(a, &rest), &lo, &hi)) return;
  if (!all) {
    int64_t safe = coef > 0 ? floor_div(-1 - hi, coef) + 1 : pt->ext; /* holds below */
    if (safe < pt->safe) pt->safe = safe;
  } else if (coef > 0) {
    add_point(pt, floor_div(-1 - hi, coef) + 1); /* holds below */
    add_point(pt, ceil_div(-lo, coef));          /* fails from here */
  } else {
    add_point(pt, ceil_div(hi + 1, -coef));      /* holds from here */
    add_point(pt, floor_div(lo, -coef) + 1);     /* fails below */
  }
}

/* `nested`: a loop lies between o and s. A window guard directly in a
 * reduce loop's body costs one test per iteration of that loop (a row of
 * taps) and is left there; one below an inner loop (a column guard inside
 * the loop over input channels) splits the reduce loop too, so that the
 * inner loop runs without it. */
static void collect_points(lctx *lc, const ob_stmt *s, ob_ivar *o, points *pt, bool nested) {
  if (!s) return; /* out of memory in the partitioning: reported by ob_lower */
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) collect_points(lc, s->seq[i], o, pt, nested);
    return;
  case OB_S_FOR: collect_points(lc, s->body, o, pt, true); return;
  case OB_S_IF:
    if ((pt->window || (pt->nested_window && nested) || !s->window) && ob_expr_uses_var(s->cond, o))
      cond_points(lc, s->cond, o, pt, s->window);
    collect_points(lc, s->body, o, pt, nested);
    return;
  default: return;
  }
}

/* No store below s (a tail whose guards all turned out false). */
static bool stmt_empty(const ob_stmt *s) {
  if (!s) return false;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++)
      if (!stmt_empty(s->seq[i])) return false;
    return true;
  case OB_S_FOR:
  case OB_S_IF: return stmt_empty(s->body);
  case OB_S_PREFETCH: return true; /* a hint: alone, a loop of it does no work */
  default: return false;
  }
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

static ob_stmt *partition(lctx *lc, ob_stmt *s) {
  if (!s) return NULL; /* out of memory: reported by ob_lower */
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) s->seq[i] = partition(lc, s->seq[i]);
    return s;
  case OB_S_IF: {
    int64_t v;
    s->cond = ob_simplify(lc->a, s->cond);
    if (ob_is_const(s->cond, &v)) return v ? partition(lc, s->body) : seq_of(lc, NULL, 0);
    s->body = partition(lc, s->body);
    return s;
  }
  case OB_S_STORE:
  case OB_S_PREFETCH:
    s->index = ob_simplify(lc->a, s->index);
    s->value = ob_simplify(lc->a, s->value);
    return s;
  case OB_S_FOR: {
    ob_ivar *o = s->var;
    int64_t ext = o->extent;
    /* vector lanes and thread indices run as one: never cut */
    bool uncut = s->ann == OB_IT_VECTORIZE || ob_ann_is_bound(s->ann);
    bool plain = s->ann != OB_IT_PARALLEL && !uncut;
    points pt = {.n = 0, .safe = ext, .ext = ext, .window = o->kind == OB_IV_DATA && plain,
                 .nested_window = o->kind == OB_IV_REDUCE && plain};
    if (!uncut) collect_points(lc, s->body, o, &pt, false);
    add_point(&pt, pt.safe);
    if (pt.n == 0) {
      s->body = partition(lc, s->body);
      return stmt_empty(s->body) ? seq_of(lc, NULL, 0) : s; /* no empty loops */
    }
    qsort(pt.p, (size_t)pt.n, sizeof pt.p[0], cmp_i64);
    ob_stmt *parts[17];
    int np = 0;
    for (int i = 0; i <= pt.n; i++) {
      int64_t b = i ? pt.p[i - 1] : 0, e = i < pt.n ? pt.p[i] : ext;
      ob_stmt *part;
      if (e - b == 1) {
        part = ob_stmt_subst(lc->a, s->body, o, ob_e_int(lc->a, b));
      } else {
        ob_ivar *v = ob_iv_new(lc->a, o->name, e - b, o->kind, lc->next_id++);
        if (!v) return NULL;
        v->ann = o->ann;
        ob_expr *at = b ? ob_e_bin(lc->a, OB_ADD, ob_e_var(lc->a, v), ob_e_int(lc->a, b)) : ob_e_var(lc->a, v);
        part = for_of(lc, v, ob_stmt_subst(lc->a, s->body, o, at));
      }
      parts[np++] = partition(lc, part);
    }
    return seq_of(lc, parts, np);
  }
  default: return s;
  }
}

/* ---- GPU launches -------------------------------------------------------------
 * The launch's extents are the largest loop bound to each index; a smaller
 * loop bound to the same index runs under a guard (codegen), so a barrier
 * inside it would be reached by some threads only: refused. So is a
 * reduction into global or shared memory that several threads (or blocks)
 * would update at once. */
typedef struct gwalk {
  lctx *lc;
  ob_launch *l;
  int64_t bound[6];   /* per index: extent of the innermost enclosing loop bound to it */
  const char *err;    /* first problem found */
  const ob_stmt *at;
} gwalk;

static int tag_slot(ob_iter_ann a) { return ob_ann_is_block(a) ? a - OB_IT_BLOCK_X : 3 + (a - OB_IT_THREAD_X); }

static void launch_dims(ob_launch *l, const ob_stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) launch_dims(l, s->seq[i]);
    return;
  case OB_S_FOR:
    if (ob_ann_is_bound(s->ann)) {
      int k = tag_slot(s->ann);
      int64_t *dim = k < 3 ? &l->grid[k] : &l->block[k - 3];
      if (s->var->extent > *dim) *dim = s->var->extent;
      l->gpu = true;
    }
    launch_dims(l, s->body);
    return;
  case OB_S_IF: launch_dims(l, s->body); return;
  case OB_S_ALLOC: {
    int64_t bytes = s->buf->numel * (int64_t)ob_dtype_size(s->buf->dtype);
    if (s->buf->scope == OB_SCOPE_SHARED) l->shared_bytes += bytes;
    else l->local_bytes += bytes;
    return;
  }
  case OB_S_BARRIER: l->gpu = true; return;
  default: return;
  }
}

static bool reads_buf(const ob_expr *e, const ob_buffer *b) {
  if (!e) return false;
  if (e->kind == OB_E_BLOAD && e->buf == b) return true;
  if (e->kind == OB_E_BLOAD && reads_buf(e->idx[0], b)) return true;
  return reads_buf(e->a, b) || reads_buf(e->b, b) || reads_buf(e->c, b);
}

static void gpu_check(gwalk *w, const ob_stmt *s, bool divergent) {
  if (!s || w->err) return;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) gpu_check(w, s->seq[i], divergent);
    return;
  case OB_S_FOR: {
    if (!ob_ann_is_bound(s->ann)) {
      gpu_check(w, s->body, divergent);
      return;
    }
    int k = tag_slot(s->ann);
    int64_t full = k < 3 ? w->l->grid[k] : w->l->block[k - 3], saved = w->bound[k];
    w->bound[k] = s->var->extent;
    gpu_check(w, s->body, divergent || s->var->extent < full);
    w->bound[k] = saved;
    return;
  }
  case OB_S_IF: gpu_check(w, s->body, true); return; /* not every thread may pass */
  case OB_S_BARRIER:
    if (divergent) {
      w->err = "a barrier under a guard or in a loop bound to fewer threads than the block has";
      w->at = s;
    }
    return;
  case OB_S_STORE:
    if (s->buf->scope == OB_SCOPE_LOCAL && s->buf->kind == OB_BUF_LOCAL) return;
    if (!reads_buf(s->value, s->buf)) return;
    for (int k = 0; k < 6; k++) {
      int64_t full = k < 3 ? w->l->grid[k] : w->l->block[k - 3];
      if (k < 3 && s->buf->scope == OB_SCOPE_SHARED) continue; /* per block anyway */
      if (full > 1 && w->bound[k] == 0) {
        w->err = "a reduction that several threads would update at once (bind it to every block and "
                 "thread index of the launch, or accumulate in a local stage)";
        w->at = s;
        return;
      }
    }
    return;
  default: return;
  }
}

static ob_status launch_info(lctx *lc) {
  ob_lowered *f = lc->f;
  ob_launch *l = &f->launch;
  memset(l, 0, sizeof *l);
  for (int k = 0; k < 3; k++) l->grid[k] = l->block[k] = 0;
  launch_dims(l, f->body);
  for (int k = 0; k < 3; k++) {
    if (!l->grid[k]) l->grid[k] = 1;
    if (!l->block[k]) l->block[k] = 1;
  }
  l->unroll_max_step = lc->s->unroll_max_step;
  l->unroll_explicit = lc->s->unroll_explicit;
  f->pressure_sched = lc->s->pressure_sched;
  f->inner_unroll = lc->s->inner_unroll;
  if (!l->gpu) return OB_OK;
  gwalk w = {.lc = lc, .l = l};
  gpu_check(&w, f->body, false);
  if (w.err) {
    const char *name = w.at && w.at->kind == OB_S_STORE ? w.at->buf->name : "";
    return ob_fail(lc->ctx, OB_ERR_SCHEDULE, "GPU kernel: %s%s%s", w.err, *name ? ": buffer " : "", name);
  }
  if (f->ntemps)
    return ob_fail(lc->ctx, OB_ERR_SCHEDULE,
                   "GPU kernel: stage '%s' is a whole-tensor temporary at the root; a GPU kernel "
                   "cannot allocate one (inline it or attach it inside the output's loops)",
                   f->temps[0]->name);
  return OB_OK;
}

ob_status ob_lower_check_launch(ob_ctx *ctx, const ob_lowered *f, const ob_target *t) {
  const ob_target_facts *tf = ob_target_get_facts(t);
  const ob_launch *l = &f->launch;
  if (tf->kind == OB_TARGET_CPU) {
    if (l->gpu)
      return ob_fail(ctx, OB_ERR_SCHEDULE,
                     "target '%s': the kernel binds loops to GPU block or thread indices; it needs "
                     "a GPU target (cuda, opencl)",
                     ob_target_str(t));
    return OB_OK;
  }
  const ob_gpu_facts *g = &tf->gpu;
  static const char xyz[] = "xyz";
  int64_t threads = l->block[0] * l->block[1] * l->block[2];
  if (threads > g->max_threads_per_block)
    return ob_fail(ctx, OB_ERR_LAUNCH,
                   "launch over the device's limits: %lld threads per block (%lld x %lld x %lld) > "
                   "%d, the most %s allows",
                   (long long)threads, (long long)l->block[0], (long long)l->block[1],
                   (long long)l->block[2], g->max_threads_per_block, ob_target_str(t));
  for (int k = 0; k < 3; k++) {
    if (l->block[k] > g->max_block_dim[k])
      return ob_fail(ctx, OB_ERR_LAUNCH,
                     "launch over the device's limits: block dimension %c of %lld threads > %d, "
                     "the most %s allows",
                     xyz[k], (long long)l->block[k], g->max_block_dim[k], ob_target_str(t));
    if (l->grid[k] > g->max_grid_dim[k])
      return ob_fail(ctx, OB_ERR_LAUNCH,
                     "launch over the device's limits: grid dimension %c of %lld blocks > %lld, "
                     "the most %s allows",
                     xyz[k], (long long)l->grid[k], (long long)g->max_grid_dim[k], ob_target_str(t));
  }
  if (l->shared_bytes > g->max_shared_per_block)
    return ob_fail(ctx, OB_ERR_LAUNCH,
                   "launch over the device's limits: %lld bytes of shared memory per block > "
                   "%lld, the most %s allows",
                   (long long)l->shared_bytes, (long long)g->max_shared_per_block, ob_target_str(t));
  /* registers: a thread's local tile beyond what the register file gives a
   * full block spills to slow local memory; far beyond, it cannot compile
   * (a 4-byte register per float: 255 registers a thread at most) */
  if (l->local_bytes > 255 * 4 * 4)
    return ob_fail(ctx, OB_ERR_LAUNCH,
                   "launch over the device's limits: %lld bytes of registers per thread (local "
                   "tiles), more than 4x the 255 registers a thread can have",
                   (long long)l->local_bytes);
  return OB_OK;
}

/* ---- entry ------------------------------------------------------------------ */
static ob_status check_attach(lctx *lc) {
  ob_sched *s = lc->s;
  for (int i = 0; i < s->nstages; i++) {
    ob_stage *p = s->stages[i];
    if (p->attach != OB_ATTACH_AT) continue;
    ob_stage *c = p->attach_stage;
    if (c->attach == OB_ATTACH_INLINE)
      return ob_fail(lc->ctx, OB_ERR_SCHEDULE, "compute_at: stage '%s' is attached to '%s', which is inlined",
                     p->tensor->name, c->tensor->name);
    bool leaf = false;
    for (int k = 0; k < c->nleaves; k++) leaf |= c->leaves[k] == p->attach_iv;
    if (!leaf)
      return ob_fail(lc->ctx, OB_ERR_SCHEDULE,
                     "compute_at: axis '%s' is no longer a loop of stage '%s' (split or fused after compute_at)",
                     p->attach_iv->name, c->tensor->name);
    if (!reads(info(lc, c->tensor)->body, p->tensor))
      return ob_fail(lc->ctx, OB_ERR_SCHEDULE, "compute_at: stage '%s' does not read '%s'",
                     c->tensor->name, p->tensor->name);
    for (int k = 0; k < s->nstages; k++) {
      ob_stage *x = s->stages[k];
      if (x == c || x == p || x->attach == OB_ATTACH_INLINE) continue;
      if (reads(info(lc, x->tensor)->body, p->tensor))
        return ob_fail(lc->ctx, OB_ERR_SCHEDULE,
                       "compute_at: stage '%s' is also read by '%s'; attach it to its only consumer",
                       p->tensor->name, x->tensor->name);
    }
    for (ob_stage *q = c; q; q = q->attach == OB_ATTACH_AT ? q->attach_stage : NULL)
      if (q == p)
        return ob_fail(lc->ctx, OB_ERR_SCHEDULE, "compute_at: stage '%s' is attached in a cycle",
                       p->tensor->name);
  }
  return OB_OK;
}

ob_status ob_lower(ob_sched *s, ob_lowered **out) {
  ob_ctx *ctx = s->ctx;
  /* A schedule that ran out of memory misses some of its primitives. */
  if (ob_arena_failed(s->arena)) return ob_fail(ctx, OB_ERR_NOMEM, "schedule: out of memory");
  ob_lowered *f = calloc(1, sizeof *f);
  if (!f) return ob_fail(ctx, OB_ERR_NOMEM, "lowering: out of memory");
  f->ctx = ctx;
  f->arena = ob_arena_new(ctx, 64 * 1024);
  lctx lc = {.ctx = ctx, .s = s, .f = f, .a = f->arena, .next_id = 1};
  ob_status r = OB_OK;
  if (!lc.a || !(lc.ti = ob_arena_alloc(lc.a, sizeof(tinfo) * (size_t)(s->ninputs + s->nstages)))) {
    r = lower_oom(&lc);
    goto fail;
  }
  for (int i = 0; i < s->ninputs; i++) {
    tinfo *ti = &lc.ti[lc.nti++];
    ti->t = s->inputs[i];
    for (int d = 0; d < ti->t->ndim; d++) ti->ext[d] = ti->t->shape[d];
  }
  for (int i = 0; i < s->nstages; i++) {
    tinfo *ti = &lc.ti[lc.nti++];
    ti->t = s->stages[i]->tensor;
    ti->stage = s->stages[i];
    for (int d = 0; d < ti->t->ndim; d++) ti->ext[d] = ti->t->shape[d];
    ti->body = inline_expr(&lc, s->stages[i]->body);
  }
  if (ob_arena_failed(lc.a)) { /* before check_attach reads the bodies */
    r = lower_oom(&lc);
    goto fail;
  }
  r = check_attach(&lc);
  if (r) goto fail;
  f->args = ob_arena_alloc(lc.a, sizeof(ob_buffer *) * (size_t)(s->ninputs + s->nout));
  f->temps = ob_arena_alloc(lc.a, sizeof(ob_buffer *) * (size_t)s->nstages);
  ob_stmt **items = ob_arena_alloc(lc.a, sizeof(ob_stmt *) * (size_t)s->nstages);
  if (!f->args || !f->temps || !items) {
    r = lower_oom(&lc);
    goto fail;
  }
  for (int i = 0; i < s->ninputs; i++) {
    tinfo *ti = info(&lc, s->inputs[i]);
    ti->buf = new_buffer(&lc, ti->t->name, ti->t->dtype, ob_tensor_numel(ti->t), OB_BUF_ARG);
    if (!ti->buf) {
      r = lower_oom(&lc);
      goto fail;
    }
    ti->buf->arg_index = f->nargs;
    f->args[f->nargs++] = ti->buf;
  }
  for (int i = 0; i < s->nout; i++) {
    tinfo *ti = info(&lc, s->outs[i]);
    ti->buf = new_buffer(&lc, ti->t->name, ti->t->dtype, ob_tensor_numel(ti->t), OB_BUF_ARG);
    if (!ti->buf) {
      r = lower_oom(&lc);
      goto fail;
    }
    ti->buf->arg_index = f->nargs;
    ti->buf->is_output = true;
    f->args[f->nargs++] = ti->buf;
  }
  int n = 0;
  for (int i = 0; i < s->nstages; i++) {
    ob_stage *st = s->stages[i];
    if (st->attach != OB_ATTACH_ROOT) continue;
    tinfo *ti = info(&lc, st->tensor);
    if (!ti->buf) {
      ti->buf = new_buffer(&lc, ti->t->name, ti->t->dtype, ob_tensor_numel(ti->t), OB_BUF_GLOBAL);
      if (!ti->buf) {
        r = lower_oom(&lc);
        goto fail;
      }
      f->temps[f->ntemps++] = ti->buf;
    }
    r = emit_stage(&lc, st, &items[n]);
    if (r) goto fail;
    n++;
  }
  f->body = partition(&lc, seq_of(&lc, items, n));
  if (ob_arena_failed(lc.a)) {
    r = lower_oom(&lc);
    goto fail;
  }
  r = launch_info(&lc);
  if (r) goto fail;
  *out = f;
  return OB_OK;
fail:
  ob_lowered_free(f);
  return r;
}

void ob_lowered_free(ob_lowered *f) {
  if (!f) return;
  ob_arena_free(f->arena);
  free(f);
}

int ob_lowered_num_args(const ob_lowered *f) { return f->nargs; }
const char *ob_lowered_arg_name(const ob_lowered *f, int i) { return f->args[i]->name; }
int64_t ob_lowered_arg_numel(const ob_lowered *f, int i) { return f->args[i]->numel; }
ob_dtype ob_lowered_arg_dtype(const ob_lowered *f, int i) { return f->args[i]->dtype; }
bool ob_lowered_arg_is_output(const ob_lowered *f, int i) { return f->args[i]->is_output; }

/* ---- printing --------------------------------------------------------------- */
static const char *const k_ann_word[OB_IT_ANN_COUNT] = {
    "for", "unrolled", "vectorized", "parallel", "blockIdx.x", "blockIdx.y", "blockIdx.z",
    "threadIdx.x", "threadIdx.y", "threadIdx.z", "for (kept a loop)"};

static void print_stmt(ob_str *o, const ob_stmt *s, int ind) {
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) print_stmt(o, s->seq[i], ind);
    break;
  case OB_S_FOR:
    ob_str_appendf(o, "%*s%s %s in [0, %lld) {\n", ind, "", k_ann_word[s->ann], s->var->name,
                   (long long)s->var->extent);
    print_stmt(o, s->body, ind + 2);
    ob_str_appendf(o, "%*s}\n", ind, "");
    break;
  case OB_S_IF:
    ob_str_appendf(o, "%*sif (", ind, "");
    ob_expr_print(o, s->cond);
    ob_str_append(o, ") {\n");
    print_stmt(o, s->body, ind + 2);
    ob_str_appendf(o, "%*s}\n", ind, "");
    break;
  case OB_S_STORE:
    ob_str_appendf(o, "%*s%s[", ind, "", s->buf->name);
    ob_expr_print(o, s->index);
    ob_str_append(o, "] = ");
    ob_expr_print(o, s->value);
    ob_str_append(o, "\n");
    break;
  case OB_S_ALLOC:
    ob_str_appendf(o, "%*salloc %s: %s[%lld]%s%s\n", ind, "", s->buf->name, ob_dtype_name(s->buf->dtype),
                   (long long)s->buf->numel, s->buf->scope == OB_SCOPE_SHARED ? " shared" : "",
                   s->buf->scope == OB_SCOPE_LOCAL && s->buf->kind == OB_BUF_LOCAL ? " local" : "");
    break;
  case OB_S_BARRIER: ob_str_appendf(o, "%*sbarrier\n", ind, ""); break;
  case OB_S_PREFETCH:
    ob_str_appendf(o, "%*sprefetch %s[", ind, "", s->buf->name);
    ob_expr_print(o, s->index);
    ob_str_appendf(o, " +%lld, < ", (long long)s->count);
    ob_expr_print(o, s->value);
    ob_str_append(o, "]\n");
    break;
  default: break;
  }
}

/* NULL when out of memory. */
char *ob_lowered_str(const ob_lowered *f) {
  ob_str o = {0};
  ob_str_append(&o, "kernel(");
  for (int i = 0; i < f->nargs; i++)
    ob_str_appendf(&o, "%s%s: %s[%lld]%s", i ? ", " : "", f->args[i]->name,
                   ob_dtype_name(f->args[i]->dtype), (long long)f->args[i]->numel,
                   f->args[i]->is_output ? " out" : "");
  ob_str_append(&o, ")");
  if (f->inner_unroll > 0) /* ob_sched_unroll_inner: the C compiler's pragma */
    ob_str_appendf(&o, " unroll_inner %lld", (long long)f->inner_unroll);
  ob_str_append(&o, " {\n");
  for (int i = 0; i < f->ntemps; i++)
    ob_str_appendf(&o, "  alloc %s: %s[%lld]\n", f->temps[i]->name, ob_dtype_name(f->temps[i]->dtype),
                   (long long)f->temps[i]->numel);
  print_stmt(&o, f->body, 2);
  ob_str_append(&o, "}\n");
  return ob_str_take(&o);
}
