/* feature.c: the xgb tuners' features (knob, itervar, curve; tune.h says
 * what each number is) and the per-task cache that keeps them by config
 * index. Itervar and curve walk opbench's own lowered loop nest: the main
 * nest's loops, the arithmetic under each, and the flat index of each
 * buffer access (strides from the linear form ob_lin_of gives). Everything
 * here is deterministic; the cache owns its rows and hands out copies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/ir.h"
#include "te/te_impl.h"
#include "space/space_impl.h"
#include "tune/feature.h"

#define MAX_DEPTH 64 /* loops kept on the walk's stack; deeper ones are ignored */

static float lg(double x) { return (float)log2(1.0 + (x > 0 ? x : 0)); }

const char *ob_feature_kind_name(ob_feature_kind kind) {
  static const char *const names[OB_FEATURE_KIND_COUNT] = {"knob", "itervar", "curve"};
  return kind >= 0 && kind < OB_FEATURE_KIND_COUNT ? names[kind] : "?";
}

int ob_feature_len(const ob_space *s, ob_feature_kind kind) {
  switch (kind) {
  case OB_FEATURE_KNOB: {
    int n = 0;
    for (int k = 0; k < s->nknobs; k++) n += s->knobs[k].width;
    return n;
  }
  case OB_FEATURE_ITERVAR: return OB_FEATURE_ITERVAR_LEN;
  case OB_FEATURE_CURVE: return OB_FEATURE_CURVE_LEN;
  default: OB_ASSERT(!"bad feature kind"); return 0;
  }
}

/* ---- knob ------------------------------------------------------------------ */

void ob_feature_of_knobs(const ob_config *cfg, float *out) {
  const ob_space *s = cfg->space;
  int p = 0;
  for (int k = 0; k < s->nknobs; k++) {
    const ob_knob *kn = &s->knobs[k];
    const int64_t *row = ob_knob_row(kn, cfg->choice[k]);
    if (kn->kind == OB_KNOB_SPLIT) {
      int64_t inner = 1;
      for (int i = 1; i < kn->width; i++) inner *= row[i];
      out[p++] = (float)((kn->extent + inner - 1) / (inner > 0 ? inner : 1));
      for (int i = 1; i < kn->width; i++) out[p++] = (float)row[i];
    } else {
      for (int i = 0; i < kn->width; i++) out[p++] = (float)row[i];
    }
  }
}

/* ---- expression helpers -------------------------------------------------------- */

typedef struct arith {
  double add, mul, fma, div, cmp;
} arith;

static void arith_axpy(arith *y, double a, const arith *x) {
  y->add += a * x->add;
  y->mul += a * x->mul;
  y->fma += a * x->fma;
  y->div += a * x->div;
  y->cmp += a * x->cmp;
}

static bool is_float_mul(const ob_expr *e) {
  return e && e->kind == OB_E_BIN && e->op == OB_MUL && e->dtype != OB_I64;
}

/* Value arithmetic of e; buffer indices are not entered (index arithmetic
 * is strength-reduced by the compiler and says little about the kernel). */
static void expr_arith(const ob_expr *e, arith *c) {
  if (!e) return;
  switch (e->kind) {
  case OB_E_BIN:
    switch (e->op) {
    case OB_ADD:
    case OB_SUB:
      if (e->dtype == OB_I64) break;
      if (is_float_mul(e->a) || is_float_mul(e->b)) c->fma += 1;
      else c->add += 1;
      break;
    case OB_MUL:
      if (e->dtype != OB_I64) c->mul += 1;
      break;
    case OB_DIV:
    case OB_MOD:
    case OB_FDIV: c->div += 1; break;
    default: c->cmp += 1; break; /* min, max, comparisons, and/or */
    }
    expr_arith(e->a, c);
    expr_arith(e->b, c);
    return;
  case OB_E_SELECT:
    c->cmp += 1;
    expr_arith(e->a, c);
    expr_arith(e->b, c);
    expr_arith(e->c, c);
    return;
  case OB_E_CALL:
    c->div += 1;
    expr_arith(e->a, c);
    expr_arith(e->b, c);
    return;
  case OB_E_CAST: expr_arith(e->a, c); return;
  default: return; /* constants, vars, loads */
  }
}

static int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Integer value of e with vars[i] = vals[i] and every other variable 0. */
static int64_t eval(const ob_expr *e, const ob_ivar *const *vars, const int64_t *vals, int n) {
  if (!e) return 0;
  switch (e->kind) {
  case OB_E_INT: return e->ival;
  case OB_E_VAR:
    for (int i = 0; i < n; i++)
      if (vars[i] == e->var) return vals[i];
    return 0;
  case OB_E_CAST: return eval(e->a, vars, vals, n);
  case OB_E_SELECT:
    return eval(e->c, vars, vals, n) ? eval(e->a, vars, vals, n) : eval(e->b, vars, vals, n);
  case OB_E_BIN: {
    int64_t a = eval(e->a, vars, vals, n), b = eval(e->b, vars, vals, n);
    switch (e->op) {
    case OB_ADD: return a + b;
    case OB_SUB: return a - b;
    case OB_MUL: return a * b;
    case OB_DIV:
    case OB_FDIV: return floor_div(a, b);
    case OB_MOD: return b ? a - floor_div(a, b) * b : 0;
    case OB_MIN: return a < b ? a : b;
    case OB_MAX: return a > b ? a : b;
    case OB_LT: return a < b;
    case OB_LE: return a <= b;
    case OB_GT: return a > b;
    case OB_GE: return a >= b;
    case OB_EQ: return a == b;
    case OB_NE: return a != b;
    case OB_AND: return a && b;
    case OB_OR: return a || b;
    default: return 0;
    }
  }
  default: return 0;
  }
}

/* Mean step of a non-linear atom along v over v's range. */
static double mean_step(const ob_expr *atom, const ob_ivar *v) {
  int64_t ext = v->extent;
  if (ext <= 1) return 0;
  int64_t hi = ext - 1, lo = 0;
  return (double)(eval(atom, &v, &hi, 1) - eval(atom, &v, &lo, 1)) / (double)(ext - 1);
}

/* Elements between consecutive iterations of v in a flat index. */
static double stride_of(const ob_expr *idx, const ob_ivar *v) {
  if (!ob_expr_uses_var(idx, v)) return 0;
  ob_lin l;
  if (!ob_lin_of(idx, &l)) return fabs(mean_step(idx, v));
  double s = 0;
  for (int i = 0; i < l.n; i++) {
    const ob_expr *a = l.atom[i];
    if (a->kind == OB_E_VAR) {
      if (a->var == v) s += (double)l.coef[i];
    } else if (ob_expr_uses_var(a, v)) {
      s += (double)l.coef[i] * mean_step(a, v);
    }
  }
  return fabs(s);
}

/* Distinct elements an index touches while the loops vars[0..n) run over
 * their ranges (the others fixed). Variables under the same coefficient
 * slide over each other (x*16 + rx*16 covers ext_x + ext_rx - 1 rows);
 * bounded by the product of the extents used and by the index's span. */
static double footprint(const ob_expr *idx, const ob_ivar *const *vars, int n) {
  double prod = 1;
  for (int i = 0; i < n; i++)
    if (ob_expr_uses_var(idx, vars[i])) prod *= (double)vars[i]->extent;
  ob_lin l;
  if (prod <= 1 || !ob_lin_of(idx, &l)) return prod;
  int64_t gcoef[OB_LIN_MAX];
  double gsum[OB_LIN_MAX];
  int ng = 0;
  double groups = 1, span = 1;
  int64_t hi[MAX_DEPTH], lo[MAX_DEPTH];
  for (int i = 0; i < n; i++) {
    hi[i] = vars[i]->extent - 1;
    lo[i] = 0;
  }
  for (int i = 0; i < l.n; i++) {
    const ob_expr *a = l.atom[i];
    int64_t c = l.coef[i] < 0 ? -l.coef[i] : l.coef[i];
    if (a->kind == OB_E_VAR) {
      int k = -1;
      for (int j = 0; j < n; j++)
        if (vars[j] == a->var) k = j;
      if (k < 0) continue;
      double ext = (double)vars[k]->extent;
      span += (double)c * (ext - 1);
      int g = 0;
      while (g < ng && gcoef[g] != c) g++;
      if (g == ng) {
        gcoef[ng] = c;
        gsum[ng++] = 0;
      }
      gsum[g] += ext - 1;
    } else {
      double pe = 1;
      for (int j = 0; j < n; j++)
        if (ob_expr_uses_var(a, vars[j])) pe *= (double)vars[j]->extent;
      if (pe <= 1) continue;
      groups *= pe;
      span += (double)c * fabs((double)(eval(a, vars, hi, n) - eval(a, vars, lo, n)));
    }
  }
  for (int g = 0; g < ng; g++) groups *= gsum[g] + 1;
  double fp = prod < groups ? prod : groups;
  if (span < fp) fp = span;
  return fp < 1 ? 1 : fp;
}

/* ---- loop-nest walk ----------------------------------------------------------- */

typedef struct access {
  const ob_buffer *buf;
  const ob_expr *idx;
  int count;
} access;

typedef struct nest {
  /* main nest: its loops, outermost first, and its store */
  const ob_stmt *loops[MAX_DEPTH];
  int depth;
  const ob_stmt *store;
  double score;
  /* the walk's stack */
  const ob_stmt *stack[MAX_DEPTH];
  int sp;
  /* whole function */
  double nstores, iters_all, local_bytes;
} nest;

/* Arithmetic executed by one execution of s. */
static void stmt_arith(const ob_stmt *s, arith *c) {
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) stmt_arith(s->seq[i], c);
    return;
  case OB_S_FOR: {
    arith b = {0};
    stmt_arith(s->body, &b);
    arith_axpy(c, (double)s->var->extent, &b);
    return;
  }
  case OB_S_IF:
    expr_arith(s->cond, c);
    stmt_arith(s->body, c);
    return;
  case OB_S_STORE: expr_arith(s->value, c); return;
  default: return;
  }
}

static void walk(nest *w, const ob_stmt *s) {
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) walk(w, s->seq[i]);
    return;
  case OB_S_FOR:
    if (w->sp < MAX_DEPTH) {
      w->stack[w->sp++] = s;
      walk(w, s->body);
      w->sp--;
    } else {
      walk(w, s->body);
    }
    return;
  case OB_S_IF: walk(w, s->body); return;
  case OB_S_ALLOC:
    w->local_bytes += (double)s->buf->numel * (double)ob_dtype_size(s->buf->dtype);
    return;
  case OB_S_STORE: {
    double iters = 1;
    for (int i = 0; i < w->sp; i++) iters *= (double)w->stack[i]->var->extent;
    arith a = {0};
    expr_arith(s->value, &a);
    double score = iters * (1 + a.add + a.mul + a.fma + a.div + a.cmp);
    w->nstores += 1;
    w->iters_all += iters;
    if (score > w->score) {
      w->score = score;
      w->store = s;
      w->depth = w->sp;
      memcpy(w->loops, w->stack, sizeof(w->stack[0]) * (size_t)w->sp);
    }
    return;
  }
  default: return;
  }
}

static void collect_loads(const ob_expr *e, access *acc, int *nacc) {
  if (!e) return;
  if (e->kind == OB_E_BLOAD) {
    int k = 0;
    while (k < *nacc && acc[k].buf != e->buf) k++;
    if (k < *nacc) {
      acc[k].count++;
    } else if (*nacc < OB_FEATURE_BUFS) {
      acc[k] = (access){e->buf, e->idx[0], 1};
      (*nacc)++;
    }
    return; /* an index reading a buffer is not a value access */
  }
  collect_loads(e->a, acc, nacc);
  collect_loads(e->b, acc, nacc);
  collect_loads(e->c, acc, nacc);
}

static double buf_bytes(const ob_buffer *const *b, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += (double)b[i]->numel * (double)ob_dtype_size(b[i]->dtype);
  return s;
}

/* y at x on the polyline (xs[i], ys[i]), i < n, xs non-decreasing; held
 * flat past both ends. */
static double interp(const double *xs, const double *ys, int n, double x) {
  if (x <= xs[0]) return ys[0];
  for (int i = 1; i < n; i++)
    if (x <= xs[i]) {
      double dx = xs[i] - xs[i - 1];
      if (dx <= 0) return ys[i];
      return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - xs[i - 1]) / dx;
    }
  return ys[n - 1];
}

void ob_feature_of_lowered(const ob_lowered *f, float *itervar, float *curve) {
  if (itervar) memset(itervar, 0, sizeof(float) * OB_FEATURE_ITERVAR_LEN);
  if (curve) memset(curve, 0, sizeof(float) * OB_FEATURE_CURVE_LEN);
  nest w;
  memset(&w, 0, sizeof w);
  w.score = -1;
  if (f->body) walk(&w, f->body);
  if (!w.store) return;

  access acc[OB_FEATURE_BUFS];
  int nacc = 1;
  acc[0] = (access){w.store->buf, w.store->index, 1};
  collect_loads(w.store->value, acc, &nacc);

  int d = w.depth;
  /* ivars innermost first, for footprints and reuse */
  const ob_ivar *inner[MAX_DEPTH];
  for (int i = 0; i < d; i++) inner[i] = w.loops[d - 1 - i]->var;
  double vec = 1, unr = 1, par = 1, main_iters = 1;
  for (int i = 0; i < d; i++) {
    double e = (double)w.loops[i]->var->extent;
    main_iters *= e;
    if (w.loops[i]->ann == OB_IT_VECTORIZE) vec *= e;
    if (w.loops[i]->ann == OB_IT_UNROLL) unr *= e;
    if (w.loops[i]->ann == OB_IT_PARALLEL || ob_ann_is_bound(w.loops[i]->ann)) par *= e;
  }

  if (itervar) {
    float *p = itervar;
    double top = 1;
    double down[MAX_DEPTH + 1]; /* down[i]: product of extents of loops i.. (outer index) */
    down[d] = 1;
    for (int i = d - 1; i >= 0; i--) down[i] = down[i + 1] * (double)w.loops[i]->var->extent;
    float *slots = p;
    for (int i = 0; i < d; i++) {
      const ob_stmt *lp = w.loops[i];
      double ext = (double)lp->var->extent;
      top *= ext;
      int slot = d - 1 - i; /* 0 = innermost */
      if (slot >= OB_FEATURE_LOOPS) continue;
      float *q = slots + slot * (13 + 3 * OB_FEATURE_BUFS);
      q[0] = lg(ext);
      q[1] = lg(i + 1);
      q[2] = lg(top);
      q[3] = lg(down[i]);
      /* four slots: serial, unroll, vectorize, parallel; a GPU binding
       * (block or thread index) is parallel */
      q[4 + (lp->ann <= OB_IT_PARALLEL ? lp->ann : ob_ann_is_bound(lp->ann) ? OB_IT_PARALLEL : 0)] = 1;
      arith a = {0};
      stmt_arith(lp->body, &a);
      q[8] = lg(a.add);
      q[9] = lg(a.mul);
      q[10] = lg(a.fma);
      q[11] = lg(a.div);
      q[12] = lg(a.cmp);
      for (int b = 0; b < nacc; b++) {
        float *r = q + 13 + 3 * b;
        double reuse = 1;
        for (int j = i; j < d; j++)
          if (!ob_expr_uses_var(acc[b].idx, w.loops[j]->var)) reuse *= (double)w.loops[j]->var->extent;
        r[0] = lg(stride_of(acc[b].idx, lp->var));
        r[1] = lg((double)acc[b].count * down[i]);
        r[2] = lg(reuse);
      }
    }
    float *g = p + OB_FEATURE_LOOPS * (13 + 3 * OB_FEATURE_BUFS);
    g[0] = lg(w.nstores);
    g[1] = lg(w.iters_all);
    g[2] = lg(main_iters);
    g[3] = lg(d);
    g[4] = lg(w.local_bytes);
    g[5] = lg(buf_bytes((const ob_buffer *const *)f->temps, f->ntemps));
    g[6] = lg(vec);
    g[7] = lg(unr);
  }

  if (curve) {
    /* per level i (loops 0..i-1 innermost, level 0 = one access): log2
     * volume and log2 footprint of each buffer slot */
    double xs[MAX_DEPTH + 1], ys[OB_FEATURE_BUFS][MAX_DEPTH + 1], yt[MAX_DEPTH + 1];
    double vol = 1;
    for (int lev = 0; lev <= d; lev++) {
      if (lev > 0) vol *= (double)inner[lev - 1]->extent;
      xs[lev] = log2(vol);
      double tot = 0;
      for (int b = 0; b < OB_FEATURE_BUFS; b++) {
        double fp = 0;
        if (b < nacc) {
          fp = footprint(acc[b].idx, inner, lev) * (double)ob_dtype_size(acc[b].buf->dtype);
          tot += fp;
        }
        ys[b][lev] = fp > 0 ? log2(fp) : 0;
      }
      yt[lev] = tot > 0 ? log2(tot) : 0;
    }
    float *p = curve;
    for (int j = 0; j < OB_FEATURE_CURVE_POINTS; j++) {
      double x = 1.5 * j;
      for (int b = 0; b < OB_FEATURE_BUFS; b++) {
        if (b >= nacc) {
          p += 2;
          continue;
        }
        double y = interp(xs, ys[b], d + 1, x);
        double esz = log2((double)ob_dtype_size(acc[b].buf->dtype));
        double xv = x < xs[d] ? x : xs[d];
        double reuse = xv - (y - esz);
        *p++ = (float)y;
        *p++ = (float)(reuse > 0 ? reuse : 0);
      }
      *p++ = (float)interp(xs, yt, d + 1, x);
    }
    for (int b = 0; b < OB_FEATURE_BUFS; b++)
      *p++ = b < nacc && d > 0 ? lg(stride_of(acc[b].idx, inner[0])) : 0;
    *p++ = lg(vec);
    *p++ = lg(unr);
    *p++ = lg(par);
    *p++ = lg(w.local_bytes);
    arith a = {0};
    if (d > 0) stmt_arith(w.loops[d - 1]->body, &a);
    else expr_arith(w.store->value, &a);
    *p++ = lg(a.add);
    *p++ = lg(a.mul);
    *p++ = lg(a.fma);
    *p++ = lg(a.div);
    *p++ = lg(a.cmp);
    OB_ASSERT(p - curve == OB_FEATURE_CURVE_LEN);
  }
}

ob_status ob_feature_extract(ob_ctx *ctx, struct ob_task *task, const ob_config *cfg,
                             ob_feature_kind kind, float *out) {
  OB_ASSERT(task && cfg && out && kind >= 0 && kind < OB_FEATURE_KIND_COUNT);
  const ob_space *s = ob_task_space(task);
  if (kind == OB_FEATURE_KNOB) {
    if (cfg->space != s)
      return ob_fail(ctx, OB_ERR_OUT_OF_SPACE, "config does not belong to this task's space");
    ob_feature_of_knobs(cfg, out);
    return OB_OK;
  }
  memset(out, 0, sizeof(float) * (size_t)ob_feature_len(s, kind));
  ob_lowered *f = NULL;
  ob_status st = ob_task_lower(task, cfg, &f);
  if (st) return st;
  ob_feature_of_lowered(f, kind == OB_FEATURE_ITERVAR ? out : NULL,
                        kind == OB_FEATURE_CURVE ? out : NULL);
  ob_lowered_free(f);
  return OB_OK;
}

/* ---- cache ------------------------------------------------------------------- */

/* the kinds whose features come from the lowered loop nest */
#define LOWERED_KINDS ((1u << OB_FEATURE_ITERVAR) | (1u << OB_FEATURE_CURVE))

struct ob_feat_cache {
  ob_ctx *ctx;
  struct ob_task *task;
  const ob_space *space;
  unsigned kinds;
  int len[OB_FEATURE_KIND_COUNT], off[OB_FEATURE_KIND_COUNT];
  int row;          /* floats per row */
  bool lowers;      /* itervar or curve kept */
  uint64_t *keys;   /* index + 1; 0 = empty */
  int32_t *slots;   /* row of each key */
  size_t cap;       /* power of two, >= 2 * maxrows */
  float *rows;
  bool *ok;
  int nrows, caprows, maxrows;
  int64_t nlowered, nhits;
  bool failed; /* out of memory growing the rows */
};

ob_status ob_feat_cache_new(ob_ctx *ctx, struct ob_task *task, unsigned kinds, size_t max_bytes,
                            ob_feat_cache **out) {
  OB_ASSERT(task && out && kinds && kinds < (1u << OB_FEATURE_KIND_COUNT));
  *out = NULL;
  ob_feat_cache *c = calloc(1, sizeof *c);
  if (!c) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory for the feature cache");
  c->ctx = ctx;
  c->task = task;
  c->space = ob_task_space(task);
  c->kinds = kinds;
  for (int k = 0; k < OB_FEATURE_KIND_COUNT; k++) {
    if (!(kinds & (1u << k))) continue;
    c->len[k] = ob_feature_len(c->space, (ob_feature_kind)k);
    c->off[k] = c->row;
    c->row += c->len[k];
  }
  c->lowers = (kinds & LOWERED_KINDS) != 0;
  if (max_bytes == 0) max_bytes = (size_t)64 << 20;
  size_t m = max_bytes / ((size_t)(c->row > 0 ? c->row : 1) * sizeof(float));
  c->maxrows = m < 256 ? 256 : m > (1u << 18) ? (1 << 18) : (int)m;
  c->cap = 1;
  while (c->cap < 2 * (size_t)c->maxrows) c->cap <<= 1;
  c->keys = calloc(c->cap, sizeof *c->keys);
  c->slots = calloc(c->cap, sizeof *c->slots);
  if (!c->keys || !c->slots) {
    ob_feat_cache_free(c);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory for the feature cache");
  }
  *out = c;
  return OB_OK;
}

void ob_feat_cache_free(ob_feat_cache *c) {
  if (!c) return;
  free(c->keys);
  free(c->slots);
  free(c->rows);
  free(c->ok);
  free(c);
}

bool ob_feat_cache_serves(const ob_feat_cache *c, const struct ob_task *task, unsigned kinds) {
  return c && c->space == ob_task_space(task) && (c->kinds & kinds) == kinds && (kinds & LOWERED_KINDS);
}

ob_status ob_feat_cache_check(const ob_feat_cache *c) {
  return c->failed ? ob_fail(c->ctx, OB_ERR_NOMEM, "out of memory growing the feature cache") : OB_OK;
}

void ob_feat_cache_stats(const ob_feat_cache *c, int64_t *lowered, int64_t *hits) {
  if (lowered) *lowered = c->nlowered;
  if (hits) *hits = c->nhits;
}

static size_t hash_of(uint64_t v, size_t cap) {
  return (size_t)((v * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
}

/* Computes every kept kind of cfg into row r. */
static bool fill_row(ob_feat_cache *c, const ob_config *cfg, float *r) {
  memset(r, 0, sizeof(float) * (size_t)c->row);
  if (c->kinds & (1u << OB_FEATURE_KNOB)) ob_feature_of_knobs(cfg, r + c->off[OB_FEATURE_KNOB]);
  if (!c->lowers) return true;
  ob_lowered *f = NULL;
  c->nlowered++;
  ob_status st = ob_task_lower(c->task, cfg, &f);
  if (st == OB_ERR_NOMEM) c->failed = true; /* reported by ob_feat_cache_check */
  else if (st) ob_ctx_clear_error(c->ctx); /* a config that does not lower: zeros */
  if (st) return false;
  ob_feature_of_lowered(f,
                        (c->kinds & (1u << OB_FEATURE_ITERVAR)) ? r + c->off[OB_FEATURE_ITERVAR] : NULL,
                        (c->kinds & (1u << OB_FEATURE_CURVE)) ? r + c->off[OB_FEATURE_CURVE] : NULL);
  ob_lowered_free(f);
  return true;
}

bool ob_feat_cache_get(ob_feat_cache *c, const ob_config *cfg, ob_feature_kind kind, float *out) {
  OB_ASSERT(c && cfg && out && (c->kinds & (1u << kind)) && cfg->space == c->space);
  if (!c->lowers) { /* knob only: cheaper to recompute than to look up */
    ob_feature_of_knobs(cfg, out);
    return true;
  }
  size_t h = hash_of(cfg->index, c->cap);
  while (c->keys[h] && c->keys[h] != cfg->index + 1) h = (h + 1) & (c->cap - 1);
  if (c->keys[h]) {
    c->nhits++;
    int r = c->slots[h];
    memcpy(out, c->rows + (size_t)r * (size_t)c->row + c->off[kind], sizeof(float) * (size_t)c->len[kind]);
    return c->ok[r];
  }
  if (c->nrows == c->maxrows) { /* full: start over */
    memset(c->keys, 0, c->cap * sizeof *c->keys);
    c->nrows = 0;
    h = hash_of(cfg->index, c->cap);
  }
  if (c->nrows == c->caprows) { /* grow by doubling up to maxrows */
    int want = c->caprows ? 2 * c->caprows : 64;
    if (want > c->maxrows) want = c->maxrows;
    float *rows = c->failed ? NULL : realloc(c->rows, (size_t)want * (size_t)c->row * sizeof(float));
    if (rows) c->rows = rows;
    bool *ok = rows ? realloc(c->ok, (size_t)want * sizeof(bool)) : NULL;
    if (ok) c->ok = ok;
    if (!rows || !ok) {
      c->failed = true;
      memset(out, 0, sizeof(float) * (size_t)c->len[kind]);
      return false;
    }
    c->caprows = want;
  }
  int r = c->nrows++;
  float *row = c->rows + (size_t)r * (size_t)c->row;
  c->ok[r] = fill_row(c, cfg, row);
  c->keys[h] = cfg->index + 1;
  c->slots[h] = r;
  memcpy(out, row + c->off[kind], sizeof(float) * (size_t)c->len[kind]);
  return c->ok[r];
}
