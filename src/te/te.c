/* te.c: construction of tensor expressions. Malformed declarations return
 * NULL with the ctx error set. Out of memory: once the te's arena failed,
 * every constructor returns NULL (so a NULL argument is only ever an
 * earlier failure's result), the accessors read NULL as an empty tensor,
 * and ob_sched_new and ob_te_failed report it; the internal builders
 * (ob_e_*) likewise return NULL once their arena failed, so a node they do
 * return is always complete. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/te_impl.h"

static const char *const k_dtype_names[OB_DTYPE_COUNT] = {"float32", "float16", "int8",
                                                          "int32", "int64", "bool"};
static const size_t k_dtype_sizes[OB_DTYPE_COUNT] = {4, 2, 1, 4, 8, 1};

const char *ob_dtype_name(ob_dtype t) { return (unsigned)t < OB_DTYPE_COUNT ? k_dtype_names[t] : "?"; }

const char *ob_iter_ann_name(ob_iter_ann a) {
  static const char *const names[OB_IT_ANN_COUNT] = {
      "serial",     "unroll",     "vectorize",  "parallel",   "blockIdx.x",
      "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z", "no_unroll"};
  return (unsigned)a < OB_IT_ANN_COUNT ? names[a] : "?";
}

const char *ob_mem_scope_name(ob_mem_scope s) {
  static const char *const names[OB_SCOPE_COUNT] = {"global", "shared", "local"};
  return (unsigned)s < OB_SCOPE_COUNT ? names[s] : "?";
}
size_t ob_dtype_size(ob_dtype t) { return (unsigned)t < OB_DTYPE_COUNT ? k_dtype_sizes[t] : 0; }

ob_status ob_te_new(ob_ctx *ctx, ob_te **out) {
  ob_te *te = calloc(1, sizeof *te);
  if (!te) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  te->ctx = ctx;
  te->arena = ob_arena_new(ctx, 64 * 1024);
  if (!te->arena) {
    free(te);
    return ob_fail(ctx, OB_ERR_NOMEM, "tensor expression: out of memory");
  }
  *out = te;
  return OB_OK;
}

bool ob_te_failed(const ob_te *te) { return ob_arena_failed(te->arena); }

void ob_te_free(ob_te *te) {
  if (!te) return;
  ob_arena_free(te->arena);
  free(te);
}

ob_ctx *ob_te_ctx(ob_te *te) { return te->ctx; }

ob_ivar *ob_iv_new(ob_arena *a, const char *name, int64_t extent, ob_ivar_kind kind, int id) {
  ob_ivar *iv = ob_arena_alloc(a, sizeof *iv);
  if (!iv || !(iv->name = ob_arena_strdup(a, name))) return NULL;
  iv->extent = extent;
  iv->kind = kind;
  iv->id = id;
  return iv;
}

ob_tensor *ob_te_placeholder(ob_te *te, const char *name, int ndim, const int64_t *shape,
                             ob_dtype dtype) {
  if (ob_te_failed(te)) return NULL;
  if (ndim < 0 || ndim > 8) {
    ob_fail(te->ctx, OB_ERR_INVALID_ARG, "placeholder '%s': %d dimensions (at most 8)", name, ndim);
    return NULL;
  }
  ob_tensor *t = ob_arena_alloc(te->arena, sizeof *t);
  if (!t || !(t->name = ob_arena_strdup(te->arena, name))) return NULL;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 1) {
      ob_fail(te->ctx, OB_ERR_INVALID_ARG, "placeholder '%s': dimension %d is %lld", name, i,
              (long long)shape[i]);
      return NULL;
    }
    t->shape[i] = shape[i];
  }
  /* ob_tensor_numel and the buffers lowering sizes from it stay in range */
  char what[96];
  snprintf(what, sizeof what, "placeholder '%s'", name);
  if (ob_check_numel(te->ctx, what, ndim, shape, NULL) != OB_OK) return NULL;
  t->dtype = dtype;
  t->placeholder = true;
  t->id = te->ntensors++;
  return t;
}

ob_ivar *ob_te_axis(ob_te *te, const char *name, int64_t extent) {
  if (ob_te_failed(te)) return NULL;
  return ob_iv_new(te->arena, name, extent, OB_IV_DATA, te->next_id++);
}

ob_ivar *ob_te_reduce_axis(ob_te *te, const char *name, int64_t extent) {
  if (ob_te_failed(te)) return NULL;
  return ob_iv_new(te->arena, name, extent, OB_IV_REDUCE, te->next_id++);
}

static bool has_reduce_below(const ob_expr *e) {
  if (!e) return false;
  if (e->kind == OB_E_REDUCE) return true;
  if (has_reduce_below(e->a) || has_reduce_below(e->b) || has_reduce_below(e->c)) return true;
  if (e->kind == OB_E_LOAD)
    for (int i = 0; i < e->n; i++)
      if (has_reduce_below(e->idx[i])) return true;
  return false;
}

ob_tensor *ob_te_compute(ob_te *te, const char *name, int ndim, ob_ivar *const *axes,
                         ob_expr *body) {
  if (ob_te_failed(te)) {
    ob_fail(te->ctx, OB_ERR_NOMEM, "compute '%s': out of memory", name);
    return NULL;
  }
  if (!body) {
    ob_fail(te->ctx, OB_ERR_INVALID_ARG, "compute '%s': no body", name);
    return NULL;
  }
  if (ndim < 1 || ndim > 8) {
    ob_fail(te->ctx, OB_ERR_INVALID_ARG, "compute '%s': %d dimensions (1 to 8)", name, ndim);
    return NULL;
  }
  const ob_expr *top = body->kind == OB_E_REDUCE ? body->a : body;
  if (has_reduce_below(top)) {
    ob_fail(te->ctx, OB_ERR_INVALID_ARG, "compute '%s': a reduction must be the whole body", name);
    return NULL;
  }
  ob_tensor *t = ob_arena_alloc(te->arena, sizeof *t);
  if (t) t->name = ob_arena_strdup(te->arena, name);
  if (t) t->axes = ob_arena_alloc(te->arena, sizeof(ob_ivar *) * (size_t)ndim);
  if (ob_te_failed(te)) {
    ob_fail(te->ctx, OB_ERR_NOMEM, "compute '%s': out of memory", name);
    return NULL;
  }
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    if (!axes[i] || axes[i]->kind != OB_IV_DATA || axes[i]->extent < 1) {
      ob_fail(te->ctx, OB_ERR_INVALID_ARG, "compute '%s': axis %d is not a data axis", name, i);
      return NULL;
    }
    t->shape[i] = axes[i]->extent;
    t->axes[i] = axes[i];
  }
  char what[96];
  snprintf(what, sizeof what, "compute '%s'", name);
  if (ob_check_numel(te->ctx, what, ndim, t->shape, NULL) != OB_OK) return NULL;
  t->dtype = body->dtype;
  t->body = body;
  t->id = te->ntensors++;
  return t;
}

static ob_expr *node(ob_arena *a, ob_expr_kind k, ob_dtype t) {
  ob_expr *e = ob_arena_alloc(a, sizeof *e);
  if (!e) return NULL;
  e->kind = k;
  e->dtype = t;
  return e;
}

/* An operand that is NULL is an earlier allocation's failure in the same
 * arena, never a caller's mistake. */
static bool all_there(ob_arena *a, const void *x, const void *y) {
  if (x && y) return true;
  OB_ASSERT(ob_arena_failed(a));
  return false;
}

ob_expr *ob_e_int(ob_arena *a, int64_t v) {
  ob_expr *e = node(a, OB_E_INT, OB_I64);
  if (e) e->ival = v;
  return e;
}

ob_expr *ob_e_var(ob_arena *a, ob_ivar *iv) {
  if (!all_there(a, iv, iv)) return NULL;
  ob_expr *e = node(a, OB_E_VAR, OB_I64);
  if (e) e->var = iv;
  return e;
}

bool ob_binop_is_cmp(ob_binop op) { return op >= OB_LT && op <= OB_OR; }

ob_expr *ob_e_bin(ob_arena *a, ob_binop op, ob_expr *x, ob_expr *y) {
  if (!all_there(a, x, y)) return NULL;
  ob_dtype t = x->dtype;
  if (ob_binop_is_cmp(op)) t = OB_BOOL;
  else if (x->kind == OB_E_INT && y->dtype != OB_I64) t = y->dtype; /* literal adopts */
  else if (op == OB_FDIV && t == OB_I64) t = OB_F32;
  ob_expr *e = node(a, OB_E_BIN, t);
  if (!e) return NULL;
  e->op = op;
  e->a = x;
  e->b = y;
  return e;
}

ob_expr *ob_e_copy(ob_arena *a, const ob_expr *e) {
  if (!all_there(a, e, e)) return NULL;
  ob_expr *c = ob_arena_alloc(a, sizeof *c);
  if (c) *c = *e;
  return c;
}

/* The public constructors: nothing once the arena failed (their NULL
 * arguments then are that failure's results), else as before. */
ob_expr *ob_te_int(ob_te *te, int64_t v) { return ob_e_int(te->arena, v); }

ob_expr *ob_te_float(ob_te *te, ob_dtype dtype, double v) {
  ob_expr *e = node(te->arena, OB_E_FLOAT, dtype);
  if (e) e->fval = v;
  return e;
}

ob_expr *ob_te_var(ob_te *te, ob_ivar *iv) {
  if (ob_te_failed(te)) return NULL;
  OB_ASSERT(iv);
  return ob_e_var(te->arena, iv);
}

ob_expr *ob_te_bin(ob_te *te, ob_binop op, ob_expr *a, ob_expr *b) {
  if (ob_te_failed(te)) return NULL;
  OB_ASSERT(a && b);
  return ob_e_bin(te->arena, op, a, b);
}

ob_expr *ob_te_select(ob_te *te, ob_expr *cond, ob_expr *then_v, ob_expr *else_v) {
  if (ob_te_failed(te)) return NULL;
  OB_ASSERT(cond && then_v && else_v);
  ob_expr *e = node(te->arena, OB_E_SELECT, then_v->dtype);
  if (!e) return NULL;
  e->c = cond;
  e->a = then_v;
  e->b = else_v;
  return e;
}

ob_expr *ob_te_cast(ob_te *te, ob_dtype dtype, ob_expr *a) {
  if (ob_te_failed(te)) return NULL;
  OB_ASSERT(a);
  ob_expr *e = node(te->arena, OB_E_CAST, dtype);
  if (e) e->a = a;
  return e;
}

ob_expr *ob_te_call(ob_te *te, ob_intrin fn, ob_expr *a) {
  if (ob_te_failed(te)) return NULL;
  OB_ASSERT(a);
  ob_expr *e = node(te->arena, OB_E_CALL, a->dtype);
  if (!e) return NULL;
  e->fn = fn;
  e->a = a;
  return e;
}

ob_expr *ob_te_load(ob_te *te, const ob_tensor *t, int nidx, ob_expr *const *idx) {
  if (ob_te_failed(te)) return NULL;
  OB_ASSERT(t && nidx == t->ndim);
  ob_expr *e = node(te->arena, OB_E_LOAD, t->dtype);
  ob_expr **ix = ob_arena_alloc(te->arena, sizeof(ob_expr *) * (size_t)(nidx ? nidx : 1));
  if (!e || !ix) return NULL;
  e->tensor = t;
  e->n = nidx;
  e->idx = ix;
  for (int i = 0; i < nidx; i++) {
    OB_ASSERT(idx[i]);
    e->idx[i] = idx[i];
  }
  return e;
}

ob_expr *ob_te_reduce(ob_te *te, ob_reduce_op op, ob_expr *body, int naxes,
                      ob_ivar *const *axes) {
  if (ob_te_failed(te)) return NULL;
  OB_ASSERT(body);
  ob_expr *e = node(te->arena, OB_E_REDUCE, body->dtype);
  ob_ivar **ax = ob_arena_alloc(te->arena, sizeof(ob_ivar *) * (size_t)(naxes ? naxes : 1));
  if (!e || !ax) return NULL;
  e->rop = op;
  e->a = body;
  e->n = naxes;
  e->axes = ax;
  for (int i = 0; i < naxes; i++) {
    OB_ASSERT(axes[i] && axes[i]->kind == OB_IV_REDUCE);
    e->axes[i] = axes[i];
  }
  return e;
}

/* NULL, a constructor's out-of-memory result, reads as an empty tensor or
 * axis, so declarations can run to their end and report once. */
const char *ob_tensor_name(const ob_tensor *t) { return t ? t->name : ""; }
int ob_tensor_ndim(const ob_tensor *t) { return t ? t->ndim : 0; }
int64_t ob_tensor_dim(const ob_tensor *t, int i) { return t && i >= 0 && i < t->ndim ? t->shape[i] : 0; }
int64_t ob_tensor_numel(const ob_tensor *t) {
  int64_t n = 1;
  for (int i = 0; t && i < t->ndim; i++) n *= t->shape[i];
  return t ? n : 0;
}
ob_dtype ob_tensor_dtype(const ob_tensor *t) { return t ? t->dtype : OB_F32; }
bool ob_tensor_is_placeholder(const ob_tensor *t) { return t && t->placeholder; }
const char *ob_ivar_name(const ob_ivar *iv) { return iv ? iv->name : ""; }
int64_t ob_ivar_extent(const ob_ivar *iv) { return iv ? iv->extent : 0; }

bool ob_expr_equal(const ob_expr *x, const ob_expr *y) {
  if (x == y) return true;
  if (!x || !y || x->kind != y->kind) return false;
  switch (x->kind) {
  case OB_E_INT: return x->ival == y->ival;
  case OB_E_FLOAT: return x->fval == y->fval && x->dtype == y->dtype;
  case OB_E_VAR: return x->var == y->var;
  case OB_E_BIN: return x->op == y->op && ob_expr_equal(x->a, y->a) && ob_expr_equal(x->b, y->b);
  case OB_E_SELECT:
    return ob_expr_equal(x->c, y->c) && ob_expr_equal(x->a, y->a) && ob_expr_equal(x->b, y->b);
  case OB_E_CAST: return x->dtype == y->dtype && ob_expr_equal(x->a, y->a);
  case OB_E_CALL: return x->fn == y->fn && ob_expr_equal(x->a, y->a);
  case OB_E_LOAD:
    if (x->tensor != y->tensor || x->n != y->n) return false;
    for (int i = 0; i < x->n; i++)
      if (!ob_expr_equal(x->idx[i], y->idx[i])) return false;
    return true;
  case OB_E_BLOAD: return x->buf == y->buf && ob_expr_equal(x->idx[0], y->idx[0]);
  default: return false;
  }
}

static const char *const k_binop_sym[OB_BINOP_COUNT] = {
    "+", "-", "*", "/", "%", "/", "min", "max", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
const char *ob_binop_sym(ob_binop op) { return k_binop_sym[op]; }
static const char *const k_intrin[OB_INTRIN_COUNT] = {"exp", "tanh", "sqrt", "log"};
const char *ob_intrin_name(ob_intrin fn) { return k_intrin[fn]; }

ob_expr *ob_expr_subst(ob_arena *a, ob_expr *e, int n, ob_ivar *const *from,
                       ob_expr *const *to) {
  if (!e || ob_arena_failed(a)) return NULL;
  switch (e->kind) {
  case OB_E_INT:
  case OB_E_FLOAT: return e;
  case OB_E_VAR:
    for (int i = 0; i < n; i++)
      if (from[i] == e->var) return to[i];
    return e;
  default: break;
  }
  ob_expr *c = ob_e_copy(a, e);
  if (!c) return NULL;
  c->a = ob_expr_subst(a, e->a, n, from, to);
  c->b = ob_expr_subst(a, e->b, n, from, to);
  c->c = ob_expr_subst(a, e->c, n, from, to);
  if (e->kind == OB_E_LOAD || e->kind == OB_E_BLOAD) {
    int m = e->kind == OB_E_LOAD ? e->n : 1;
    c->idx = ob_arena_alloc(a, sizeof(ob_expr *) * (size_t)m);
    for (int i = 0; c->idx && i < m; i++) c->idx[i] = ob_expr_subst(a, e->idx[i], n, from, to);
  }
  return ob_arena_failed(a) ? NULL : c; /* never a node with a missing operand */
}

void ob_expr_print(ob_str *s, const ob_expr *e) {
  if (!e) { /* only in an IR whose arena failed, which is never a result */
    ob_str_append(s, "<out of memory>");
    return;
  }
  switch (e->kind) {
  case OB_E_INT: ob_str_appendf(s, "%lld", (long long)e->ival); break;
  case OB_E_FLOAT: ob_str_appendf(s, "%.9gf", e->fval); break;
  case OB_E_VAR: ob_str_append(s, e->var->name); break;
  case OB_E_BIN:
    if (e->op == OB_MIN || e->op == OB_MAX) {
      ob_str_appendf(s, "%s(", ob_binop_sym(e->op));
      ob_expr_print(s, e->a);
      ob_str_append(s, ", ");
      ob_expr_print(s, e->b);
      ob_str_append(s, ")");
    } else {
      ob_str_append(s, "(");
      ob_expr_print(s, e->a);
      ob_str_appendf(s, " %s ", ob_binop_sym(e->op));
      ob_expr_print(s, e->b);
      ob_str_append(s, ")");
    }
    break;
  case OB_E_SELECT:
    ob_str_append(s, "select(");
    ob_expr_print(s, e->c);
    ob_str_append(s, ", ");
    ob_expr_print(s, e->a);
    ob_str_append(s, ", ");
    ob_expr_print(s, e->b);
    ob_str_append(s, ")");
    break;
  case OB_E_CAST:
    ob_str_appendf(s, "%s(", ob_dtype_name(e->dtype));
    ob_expr_print(s, e->a);
    ob_str_append(s, ")");
    break;
  case OB_E_CALL:
    ob_str_appendf(s, "%s(", ob_intrin_name(e->fn));
    ob_expr_print(s, e->a);
    ob_str_append(s, ")");
    break;
  case OB_E_LOAD:
    ob_str_appendf(s, "%s[", e->tensor->name);
    for (int i = 0; i < e->n; i++) {
      if (i) ob_str_append(s, ", ");
      ob_expr_print(s, e->idx[i]);
    }
    ob_str_append(s, "]");
    break;
  case OB_E_BLOAD: {
    ob_str_appendf(s, "%s[", e->buf_name);
    ob_expr_print(s, e->idx[0]);
    ob_str_append(s, "]");
    break;
  }
  case OB_E_REDUCE:
    ob_str_appendf(s, "%s(", e->rop == OB_REDUCE_SUM ? "sum" : "max");
    ob_expr_print(s, e->a);
    ob_str_append(s, ", axis=[");
    for (int i = 0; i < e->n; i++) ob_str_appendf(s, "%s%s", i ? ", " : "", e->axes[i]->name);
    ob_str_append(s, "])");
    break;
  default: ob_str_append(s, "?"); break;
  }
}

/* NULL when out of memory. */
char *ob_expr_str(const ob_expr *e) {
  ob_str s = {0};
  ob_expr_print(&s, e);
  return ob_str_take(&s);
}
