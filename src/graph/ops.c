/* ops.c: the graph's operator table: arity, shape inference (ONNX opset 17
 * semantics) and the naive reference of every operator. References work in
 * double and store float32; integer tensors (shapes, token ids) are int64,
 * booleans one byte. Nodes that map to an ob_workload of the operator
 * library are run through that workload's reference instead (ref.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph_impl.h"

#define KNOWN(t) ((t) && (t)->ndim >= 0)

static ob_status need_known(ob_ctx *ctx, const gnode *n, const gtensor *t, int i) {
  if (!t) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input %d is missing", i);
  if (t->ndim < 0) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape of input '%s' is unknown", t->name);
  return OB_OK;
}

static ob_status need_float(ob_ctx *ctx, const gnode *n, const gtensor *t) {
  if (t->dtype != OB_F32)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input '%s' is %s, expected float32", t->name, ob_dtype_name(t->dtype));
  return OB_OK;
}

/* Value k of an integer (or float) tensor whose data is known. */
static int64_t ival(const gtensor *t, int64_t k) {
  if (t->dtype == OB_I64) return ((const int64_t *)t->data)[k];
  if (t->dtype == OB_F32) return (int64_t)((const float *)t->data)[k];
  return ((const uint8_t *)t->data)[k];
}

/* The values of an integer input that shape inference must know (Reshape
 * shape, Slice starts...): copied to v[cap]; count to *nv. */
static ob_status known_ints(ob_ctx *ctx, const gnode *n, const gtensor *t, const char *what, int64_t *v,
                            int cap, int *nv) {
  if (!t) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "%s is missing", what);
  if (!t->data || t->ndim < 0)
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "%s ('%s') is not a constant (dynamic shapes are not supported)",
                    what, t->name);
  if (t->dtype != OB_I64)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "%s ('%s') must be int64", what, t->name);
  int64_t c = ob_gt_numel(t);
  if (c > cap) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "%s has %lld values (at most %d)", what, (long long)c, cap);
  for (int64_t i = 0; i < c; i++) v[i] = ival(t, i);
  *nv = (int)c;
  return OB_OK;
}

static ob_status set_out(ob_ctx *ctx, gnode *n, gtensor *y, ob_dtype dt, int nd, const int64_t *d) {
  if (nd < 0 || nd > OB_GRAPH_MAX_DIMS)
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "output has %d dimensions (at most %d)", nd, OB_GRAPH_MAX_DIMS);
  int64_t c = 1;
  for (int i = 0; i < nd; i++) {
    if (d[i] < 0) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "output dimension %d is negative (%lld)", i, (long long)d[i]);
    if (__builtin_mul_overflow(c, d[i], &c) || c > OB_GRAPH_MAX_NUMEL)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "output has more than 2^32 elements");
  }
  if (y->kind == OB_GT_CONST) return OB_OK;
  ob_gt_set(y, dt, nd, d);
  return OB_OK;
}

static int norm_axis(int64_t a, int nd) { return (int)(a < 0 ? a + nd : a); }

static ob_status axis_ok(ob_ctx *ctx, const gnode *n, int64_t a, int nd) {
  if (a < -nd || a >= nd)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)a, nd);
  return OB_OK;
}

/* ---- broadcasting ---------------------------------------------------------------- */
bool ob_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) {
  int nd = na > nb ? na : nb;
  for (int i = 0; i < nd; i++) {
    int64_t x = i - (nd - na) >= 0 ? a[i - (nd - na)] : 1;
    int64_t y = i - (nd - nb) >= 0 ? b[i - (nd - nb)] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out[i] = x == 1 ? y : x;
  }
  *nout = nd;
  return true;
}

/* Iterates the output of a broadcasting operator: off[k] is the element of
 * input k for the current output element. */
typedef struct bcast {
  int nd, nin;
  int64_t dims[OB_GRAPH_MAX_DIMS], idx[OB_GRAPH_MAX_DIMS];
  int64_t str[4][OB_GRAPH_MAX_DIMS];
  int64_t off[4];
} bcast;

static void bc_init(bcast *b, const gtensor *y, const gtensor *const *in, int nin) {
  memset(b, 0, sizeof *b);
  b->nd = y->ndim;
  b->nin = nin;
  for (int i = 0; i < b->nd; i++) b->dims[i] = y->dims[i];
  for (int k = 0; k < nin; k++) {
    int64_t s = 1;
    for (int i = in[k]->ndim - 1; i >= 0; i--) {
      int j = i + (b->nd - in[k]->ndim);
      b->str[k][j] = in[k]->dims[i] == 1 ? 0 : s;
      s *= in[k]->dims[i];
    }
  }
}

static void bc_next(bcast *b) {
  for (int i = b->nd - 1; i >= 0; i--) {
    b->idx[i]++;
    for (int k = 0; k < b->nin; k++) b->off[k] += b->str[k][i];
    if (b->idx[i] < b->dims[i]) return;
    for (int k = 0; k < b->nin; k++) b->off[k] -= b->str[k][i] * b->idx[i];
    b->idx[i] = 0;
  }
}

/* ---- elementwise -------------------------------------------------------------------- */
static ob_status infer_binary(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *a = gin(g, n, 0), *b = gin(g, n, 1);
  ob_status st = need_known(ctx, n, a, 0);
  if (!st) st = need_known(ctx, n, b, 1);
  if (st) return st;
  if (a->dtype != b->dtype)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "inputs '%s' (%s) and '%s' (%s) differ in type", a->name,
                    ob_dtype_name(a->dtype), b->name, ob_dtype_name(b->dtype));
  if (a->dtype == OB_BOOL && n->op != OB_GOP_EQUAL)
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "boolean inputs are not supported");
  if (n->op == OB_GOP_POW && a->dtype != OB_F32) return need_float(ctx, n, a);
  int nd;
  int64_t d[OB_GRAPH_MAX_DIMS];
  if (!ob_broadcast_shape(a->ndim, a->dims, b->ndim, b->dims, &nd, d))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shapes of '%s' and '%s' do not broadcast", a->name, b->name);
  return set_out(ctx, n, gout(g, n, 0), n->op == OB_GOP_EQUAL ? OB_BOOL : a->dtype, nd, d);
}

static double fval(const gtensor *t, const void *p, int64_t k) {
  if (t->dtype == OB_F32) return ((const float *)p)[k];
  if (t->dtype == OB_I64) return (double)((const int64_t *)p)[k];
  return ((const uint8_t *)p)[k];
}

static ob_status ref_binary(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *a = gin(g, n, 0), *b = gin(g, n, 1), *y = gout(g, n, 0);
  const gtensor *ins[2] = {a, b};
  bcast bc;
  bc_init(&bc, y, ins, 2);
  int64_t cnt = ob_gt_numel(y);
  for (int64_t i = 0; i < cnt; i++, bc_next(&bc)) {
    if (a->dtype == OB_I64 && n->op != OB_GOP_EQUAL) {
      int64_t x = ((const int64_t *)in[0])[bc.off[0]], z = ((const int64_t *)in[1])[bc.off[1]], r = 0;
      switch (n->op) {
      case OB_GOP_ADD: r = x + z; break;
      case OB_GOP_SUB: r = x - z; break;
      case OB_GOP_MUL: r = x * z; break;
      case OB_GOP_DIV: r = z ? x / z : 0; break;
      default: break;
      }
      ((int64_t *)out[0])[i] = r;
      continue;
    }
    double x = fval(a, in[0], bc.off[0]), z = fval(b, in[1], bc.off[1]), r = 0;
    switch (n->op) {
    case OB_GOP_ADD: r = x + z; break;
    case OB_GOP_SUB: r = x - z; break;
    case OB_GOP_MUL: r = x * z; break;
    case OB_GOP_DIV: r = x / z; break;
    case OB_GOP_POW: r = pow(x, z); break;
    case OB_GOP_EQUAL: ((uint8_t *)out[0])[i] = x == z; continue;
    default: break;
    }
    ((float *)out[0])[i] = (float)r;
  }
  return OB_OK;
}

static ob_status infer_where(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *c = gin(g, n, 0), *a = gin(g, n, 1), *b = gin(g, n, 2);
  ob_status st = need_known(ctx, n, c, 0);
  if (!st) st = need_known(ctx, n, a, 1);
  if (!st) st = need_known(ctx, n, b, 2);
  if (st) return st;
  if (c->dtype != OB_BOOL) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "condition '%s' is not boolean", c->name);
  if (a->dtype != b->dtype) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "branches differ in type");
  int nd, nd2;
  int64_t d[OB_GRAPH_MAX_DIMS], d2[OB_GRAPH_MAX_DIMS];
  if (!ob_broadcast_shape(a->ndim, a->dims, b->ndim, b->dims, &nd, d) ||
      !ob_broadcast_shape(c->ndim, c->dims, nd, d, &nd2, d2))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shapes of the inputs do not broadcast");
  return set_out(ctx, n, gout(g, n, 0), a->dtype, nd2, d2);
}

static ob_status ref_where(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *ins[3] = {gin(g, n, 0), gin(g, n, 1), gin(g, n, 2)}, *y = gout(g, n, 0);
  bcast bc;
  bc_init(&bc, y, ins, 3);
  size_t es = ob_dtype_size(y->dtype);
  int64_t cnt = ob_gt_numel(y);
  for (int64_t i = 0; i < cnt; i++, bc_next(&bc)) {
    bool c = ((const uint8_t *)in[0])[bc.off[0]];
    const char *src = c ? (const char *)in[1] + bc.off[1] * (int64_t)es : (const char *)in[2] + bc.off[2] * (int64_t)es;
    memcpy((char *)out[0] + i * (int64_t)es, src, es);
  }
  return OB_OK;
}

static ob_status infer_unary(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  if (n->op != OB_GOP_IDENTITY && n->op != OB_GOP_NEG && (st = need_float(ctx, n, x))) return st;
  if (n->op == OB_GOP_NEG && x->dtype == OB_BOOL) return need_float(ctx, n, x);
  if (n->op == OB_GOP_CLIP)
    for (int k = 1; k < 3; k++) {
      gtensor *b = gin(g, n, k);
      if (b && (b->ndim < 0 || ob_gt_numel(b) != 1 || b->dtype != OB_F32))
        return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "%s must be a float scalar", k == 1 ? "min" : "max");
    }
  return set_out(ctx, n, gout(g, n, 0), x->dtype, x->ndim, x->dims);
}

#define GELU_K 0.7978845608028654
static ob_status ref_unary(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0);
  int64_t cnt = ob_gt_numel(x);
  if (n->op == OB_GOP_IDENTITY) {
    memcpy(out[0], in[0], ob_gt_bytes(x));
    return OB_OK;
  }
  if (n->op == OB_GOP_NEG && x->dtype == OB_I64) {
    for (int64_t i = 0; i < cnt; i++) ((int64_t *)out[0])[i] = -((const int64_t *)in[0])[i];
    return OB_OK;
  }
  const float *a = in[0];
  float *o = out[0];
  double lo = -INFINITY, hi = INFINITY;
  if (n->op == OB_GOP_CLIP) {
    if (n->nin > 1 && in[1]) lo = *(const float *)in[1];
    if (n->nin > 2 && in[2]) hi = *(const float *)in[2];
  }
  double alpha = ob_gattr_f(n, "alpha", 0.2), beta = ob_gattr_f(n, "beta", 0.5);
  bool tanh_gelu = !strcmp(ob_gattr_s(n, "approximate", "none"), "tanh");
  for (int64_t i = 0; i < cnt; i++) {
    double v = a[i], r = v;
    switch (n->op) {
    case OB_GOP_RELU: r = v > 0 ? v : 0; break;
    case OB_GOP_CLIP: r = v < lo ? lo : v > hi ? hi : v; break;
    case OB_GOP_SIGMOID: r = 1.0 / (1.0 + exp(-v)); break;
    case OB_GOP_HARDSIGMOID: r = fmax(0.0, fmin(1.0, alpha * v + beta)); break;
    case OB_GOP_TANH: r = tanh(v); break;
    case OB_GOP_ERF: r = erf(v); break;
    case OB_GOP_SQRT: r = sqrt(v); break;
    case OB_GOP_EXP: r = exp(v); break;
    case OB_GOP_NEG: r = -v; break;
    case OB_GOP_GELU:
      r = tanh_gelu ? 0.5 * v * (1.0 + tanh(GELU_K * (v + 0.044715 * v * v * v))) : 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
      break;
    default: break;
    }
    o[i] = (float)r;
  }
  return OB_OK;
}

/* ---- convolution ------------------------------------------------------------------------ */
/* Pads [t, l, b, r] after auto_pad; strides and dilations. */
static void conv_geom(const gnode *n, int64_t h, int64_t w, int64_t r, int64_t s, int64_t st[2], int64_t pad[4],
                      int64_t dil[2]) {
  const int64_t *v;
  st[0] = st[1] = dil[0] = dil[1] = 1;
  pad[0] = pad[1] = pad[2] = pad[3] = 0;
  if (ob_gattr_ints(n, "strides", &v) == 2) st[0] = v[0], st[1] = v[1];
  if (ob_gattr_ints(n, "dilations", &v) == 2) dil[0] = v[0], dil[1] = v[1];
  if (ob_gattr_ints(n, "pads", &v) == 4) pad[0] = v[0], pad[1] = v[1], pad[2] = v[2], pad[3] = v[3];
  const char *ap = ob_gattr_s(n, "auto_pad", "NOTSET");
  if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    int64_t in[2] = {h, w}, k[2] = {r, s};
    for (int i = 0; i < 2; i++) {
      int64_t o = st[i] > 0 ? (in[i] + st[i] - 1) / st[i] : 0;
      int64_t tot = (o - 1) * st[i] + (k[i] - 1) * dil[i] + 1 - in[i];
      if (tot < 0) tot = 0;
      int64_t small = tot / 2, big = tot - small;
      bool upper = !strcmp(ap, "SAME_UPPER");
      pad[i] = upper ? small : big;
      pad[i + 2] = upper ? big : small;
    }
  }
}

static ob_status check_geom(ob_ctx *ctx, const gnode *n, const int64_t st[2], const int64_t pad[4], const int64_t dil[2]) {
  for (int i = 0; i < 2; i++)
    if (st[i] < 1 || st[i] > 1024 || dil[i] < 1 || dil[i] > 1024)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "strides and dilations must be in 1..1024");
  for (int i = 0; i < 4; i++)
    if (pad[i] < 0 || pad[i] > 1 << 20) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "pads must be in 0..2^20");
  return OB_OK;
}

static const char *conv_act(const gnode *n) { return ob_gattr_s(n, "activation", ""); }

static ob_status infer_conv(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0), *w = gin(g, n, 1), *b = gin(g, n, 2), *res = gin(g, n, 3);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_known(ctx, n, w, 1);
  if (!st) st = need_float(ctx, n, x);
  if (!st) st = need_float(ctx, n, w);
  if (st) return st;
  if (x->ndim != 4 || w->ndim != 4)
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "only 2-D convolutions (4-D data and weights) are supported, got %d-D data",
                    x->ndim);
  int64_t grp = ob_gattr_i(n, "group", 1);
  int64_t C = x->dims[1], K = w->dims[0];
  if (grp < 1 || C % grp || K % grp || w->dims[1] * grp != C)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "data has %lld channels but weights '%s' expect %lld x group %lld",
                    (long long)C, w->name, (long long)w->dims[1], (long long)grp);
  const int64_t *ks;
  if (ob_gattr_ints(n, "kernel_shape", &ks) == 2 && (ks[0] != w->dims[2] || ks[1] != w->dims[3]))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "kernel_shape differs from the weights' shape");
  int64_t s[2], p[4], d[2];
  conv_geom(n, x->dims[2], x->dims[3], w->dims[2], w->dims[3], s, p, d);
  if ((st = check_geom(ctx, n, s, p, d))) return st;
  int64_t oh = (x->dims[2] + p[0] + p[2] - d[0] * (w->dims[2] - 1) - 1), ow = (x->dims[3] + p[1] + p[3] - d[1] * (w->dims[3] - 1) - 1);
  if (oh < 0 || ow < 0)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "kernel %lldx%lld is larger than the padded input %lldx%lld",
                    (long long)w->dims[2], (long long)w->dims[3], (long long)(x->dims[2] + p[0] + p[2]),
                    (long long)(x->dims[3] + p[1] + p[3]));
  int64_t od[4] = {x->dims[0], K, oh / s[0] + 1, ow / s[1] + 1};
  if (b && (b->ndim < 0 || ob_gt_numel(b) != K || b->dtype != OB_F32))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "bias '%s' must have %lld elements", b->name, (long long)K);
  if (res && (res->ndim != 4 || memcmp(res->dims, od, sizeof od)))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "residual '%s' must have the output's shape", res->name);
  const char *act = conv_act(n);
  if (*act && strcmp(act, "relu") && strcmp(act, "relu6"))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "unknown fused activation '%s'", act);
  if (strcmp(ob_gattr_s(n, "auto_pad", "NOTSET"), "NOTSET")) {
    /* resolved once: later passes and the export see explicit pads */
    ob_graph_set_attr_ints(g, (int)(gout(g, n, 0)->producer), "pads", 4, p);
    ob_graph_set_attr_s(g, gout(g, n, 0)->producer, "auto_pad", "NOTSET");
  }
  return set_out(ctx, n, gout(g, n, 0), OB_F32, 4, od);
}

/* ---- dense, gemm, matmul ------------------------------------------------------------------ */
static ob_status infer_gemm(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *a = gin(g, n, 0), *b = gin(g, n, 1), *c = gin(g, n, 2);
  ob_status st = need_known(ctx, n, a, 0);
  if (!st) st = need_known(ctx, n, b, 1);
  if (!st) st = need_float(ctx, n, a);
  if (!st) st = need_float(ctx, n, b);
  if (st) return st;
  if (a->ndim != 2 || b->ndim != 2) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "inputs must be 2-D");
  bool ta = ob_gattr_i(n, "transA", 0), tb = ob_gattr_i(n, "transB", 0);
  int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
  int64_t K2 = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
  if (K != K2)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "inner dimensions differ: '%s' has %lld, '%s' has %lld", a->name,
                    (long long)K, b->name, (long long)K2);
  int64_t od[2] = {M, N};
  if (c) {
    int nd;
    int64_t d[OB_GRAPH_MAX_DIMS];
    if (c->ndim < 0 || !ob_broadcast_shape(c->ndim, c->dims, 2, od, &nd, d) || nd != 2 || d[0] != M || d[1] != N)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "C '%s' does not broadcast to [%lld, %lld]", c->name, (long long)M,
                      (long long)N);
  }
  return set_out(ctx, n, gout(g, n, 0), OB_F32, 2, od);
}

static ob_status ref_gemm(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *a = gin(g, n, 0), *c = gin(g, n, 2), *y = gout(g, n, 0);
  bool ta = ob_gattr_i(n, "transA", 0), tb = ob_gattr_i(n, "transB", 0);
  double alpha = ob_gattr_f(n, "alpha", 1.0), beta = ob_gattr_f(n, "beta", 1.0);
  int64_t M = y->dims[0], N = y->dims[1], K = ta ? a->dims[0] : a->dims[1];
  const float *A = in[0], *B = in[1];
  float *o = out[0];
  bcast bc;
  if (c) bc_init(&bc, y, (const gtensor *const[]){c}, 1);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = 0;
      for (int64_t k = 0; k < K; k++)
        s += (double)(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
      s *= alpha;
      if (c) {
        s += beta * ((const float *)in[2])[bc.off[0]];
        bc_next(&bc);
      }
      o[i * N + j] = (float)s;
    }
  return OB_OK;
}

static ob_status infer_dense(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0), *w = gin(g, n, 1), *b = gin(g, n, 2), *res = gin(g, n, 3);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_known(ctx, n, w, 1);
  if (st) return st;
  if (x->ndim < 1 || w->ndim != 2 || x->dims[x->ndim - 1] != w->dims[1])
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "data '%s' and weight '%s' [N, K] disagree on K", x->name, w->name);
  int64_t d[OB_GRAPH_MAX_DIMS];
  memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->ndim);
  d[x->ndim - 1] = w->dims[0];
  if (b && (b->ndim < 0 || ob_gt_numel(b) != w->dims[0]))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "bias '%s' must have %lld elements", b->name, (long long)w->dims[0]);
  if (res && (res->ndim != x->ndim || memcmp(res->dims, d, sizeof(int64_t) * (size_t)x->ndim)))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "residual '%s' must have the output's shape", res->name);
  return set_out(ctx, n, gout(g, n, 0), OB_F32, x->ndim, d);
}

static void matmul_dims(const gtensor *t, bool is_b, int64_t *rows, int64_t *cols) {
  if (t->ndim == 1) {
    *rows = is_b ? t->dims[0] : 1;
    *cols = is_b ? 1 : t->dims[0];
  } else {
    *rows = t->dims[t->ndim - 2];
    *cols = t->dims[t->ndim - 1];
  }
}

static ob_status infer_matmul(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *a = gin(g, n, 0), *b = gin(g, n, 1);
  ob_status st = need_known(ctx, n, a, 0);
  if (!st) st = need_known(ctx, n, b, 1);
  if (!st) st = need_float(ctx, n, a);
  if (!st) st = need_float(ctx, n, b);
  if (st) return st;
  if (a->ndim < 1 || b->ndim < 1) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "scalar inputs");
  int64_t m, k, k2, nn;
  matmul_dims(a, false, &m, &k);
  matmul_dims(b, true, &k2, &nn);
  if (k != k2)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "inner dimensions differ: '%s' has %lld, '%s' has %lld", a->name,
                    (long long)k, b->name, (long long)k2);
  int nd;
  int64_t d[OB_GRAPH_MAX_DIMS];
  int na = a->ndim > 2 ? a->ndim - 2 : 0, nb = b->ndim > 2 ? b->ndim - 2 : 0;
  if (!ob_broadcast_shape(na, a->dims, nb, b->dims, &nd, d))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "batch dimensions of '%s' and '%s' do not broadcast", a->name, b->name);
  if (a->ndim > 1) d[nd++] = m;
  if (b->ndim > 1) d[nd++] = nn;
  return set_out(ctx, n, gout(g, n, 0), OB_F32, nd, d);
}

static ob_status ref_matmul(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gtensor *a = gin(g, n, 0), *b = gin(g, n, 1);
  int64_t m, k, k2, nn;
  matmul_dims(a, false, &m, &k);
  matmul_dims(b, true, &k2, &nn);
  /* batch dims broadcast: iterate the output batch with a 2-input bcast over
   * fake tensors holding the batch dims only */
  gtensor ta = {0}, tbt = {0}, ty = {0};
  ta.ndim = a->ndim > 2 ? a->ndim - 2 : 0;
  tbt.ndim = b->ndim > 2 ? b->ndim - 2 : 0;
  memcpy(ta.dims, a->dims, sizeof(int64_t) * (size_t)ta.ndim);
  memcpy(tbt.dims, b->dims, sizeof(int64_t) * (size_t)tbt.ndim);
  OB_ASSERT(ob_broadcast_shape(ta.ndim, ta.dims, tbt.ndim, tbt.dims, &ty.ndim, ty.dims));
  int64_t nbatch = 1;
  for (int i = 0; i < ty.ndim; i++) nbatch *= ty.dims[i];
  bcast bc;
  bc_init(&bc, &ty, (const gtensor *const[]){&ta, &tbt}, 2);
  const float *A = in[0], *B = in[1];
  float *o = out[0];
  /* rows of B are contiguous: accumulate a row of C in double, q ascending */
  double *acc = malloc(sizeof(double) * (size_t)(nn > 0 ? nn : 1));
  if (!acc) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  for (int64_t bi = 0; bi < nbatch; bi++, bc_next(&bc)) {
    const float *pa = A + bc.off[0] * m * k, *pb = B + bc.off[1] * k * nn;
    float *po = o + bi * m * nn;
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < nn; j++) acc[j] = 0;
      for (int64_t q = 0; q < k; q++) {
        double av = pa[i * k + q];
        const float *br = pb + q * nn;
        for (int64_t j = 0; j < nn; j++) acc[j] += av * br[j];
      }
      for (int64_t j = 0; j < nn; j++) po[i * nn + j] = (float)acc[j];
    }
  }
  free(acc);
  return OB_OK;
}

/* ---- LSTM ---------------------------------------------------------------------------------- */
static ob_status infer_lstm(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0), *w = gin(g, n, 1), *r = gin(g, n, 2), *b = gin(g, n, 3);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_known(ctx, n, w, 1);
  if (!st) st = need_known(ctx, n, r, 2);
  if (st) return st;
  if (strcmp(ob_gattr_s(n, "direction", "forward"), "forward"))
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "only direction 'forward' is supported");
  if (ob_gattr_i(n, "layout", 0) != 0) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "only layout 0 is supported");
  if (ob_gnode_attr(n, "activations") || ob_gnode_attr(n, "clip") || ob_gattr_i(n, "input_forget", 0))
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "custom activations, clip and input_forget are not supported");
  for (int k = 4; k < n->nin; k++)
    if (n->in[k] >= 0) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "sequence_lens and initial states are not supported");
  int64_t H = ob_gattr_i(n, "hidden_size", w->ndim == 3 ? w->dims[1] / 4 : 0);
  if (H < 1 || H > 1 << 24) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "hidden_size %lld is out of range", (long long)H);
  if (x->ndim != 3 || w->ndim != 3 || r->ndim != 3 || H < 1 || w->dims[0] != 1 || w->dims[1] != 4 * H ||
      w->dims[2] != x->dims[2] || r->dims[0] != 1 || r->dims[1] != 4 * H || r->dims[2] != H)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "X [T,B,I], W [1,4H,I], R [1,4H,H] disagree (hidden_size %lld)",
                    (long long)H);
  if (b && (b->ndim != 2 || b->dims[0] != 1 || b->dims[1] != 8 * H))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "B must be [1, 8H]");
  int64_t T = x->dims[0], B = x->dims[1];
  st = set_out(ctx, n, gout(g, n, 0), OB_F32, 4, (int64_t[]){T, 1, B, H});
  for (int k = 1; k < n->nout && !st; k++) st = set_out(ctx, n, gout(g, n, k), OB_F32, 3, (int64_t[]){1, B, H});
  return st;
}

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

static ob_status ref_lstm(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gtensor *x = gin(g, n, 0), *w = gin(g, n, 1);
  int64_t T = x->dims[0], B = x->dims[1], I = x->dims[2], H = w->dims[1] / 4;
  const float *X = in[0], *W = in[1], *R = in[2], *Bi = n->nin > 3 ? in[3] : NULL;
  double *h = calloc((size_t)(B * H), sizeof(double)), *c = calloc((size_t)(B * H), sizeof(double));
  double *gates = calloc((size_t)(4 * H), sizeof(double));
  if (!h || !c || !gates) {
    free(h), free(c), free(gates);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  float *Y = out[0];
  for (int64_t t = 0; t < T; t++) {
    double *hn = calloc((size_t)(B * H), sizeof(double));
    if (!hn) {
      free(h), free(c), free(gates);
      return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    }
    for (int64_t b = 0; b < B; b++) {
      for (int64_t q = 0; q < 4 * H; q++) {
        double s = Bi ? (double)Bi[q] + Bi[4 * H + q] : 0;
        for (int64_t i = 0; i < I; i++) s += (double)X[(t * B + b) * I + i] * W[q * I + i];
        for (int64_t i = 0; i < H; i++) s += h[b * H + i] * R[q * H + i];
        gates[q] = s;
      }
      for (int64_t j = 0; j < H; j++) { /* ONNX gate order i, o, f, c */
        double ig = sigm(gates[j]), og = sigm(gates[H + j]), fg = sigm(gates[2 * H + j]), cg = tanh(gates[3 * H + j]);
        double cn = fg * c[b * H + j] + ig * cg;
        c[b * H + j] = (float)cn;
        hn[b * H + j] = (float)(og * tanh(cn));
        Y[(t * B + b) * H + j] = (float)hn[b * H + j];
      }
    }
    free(h);
    h = hn;
  }
  if (n->nout > 1 && out[1])
    for (int64_t i = 0; i < B * H; i++) ((float *)out[1])[i] = (float)h[i];
  if (n->nout > 2 && out[2])
    for (int64_t i = 0; i < B * H; i++) ((float *)out[2])[i] = (float)c[i];
  free(h), free(c), free(gates);
  return OB_OK;
}

/* ---- pooling --------------------------------------------------------------------------------- */
/* Output size of a pooling window: floor or ceil mode (the last window must
 * start inside the input or its begin padding, as ONNX Runtime and PyTorch
 * require). */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool ceil_mode) {
  int64_t span = in + pb + pe - k;
  if (span < 0) return 0;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + pb) o--;
  return o;
}

static ob_status infer_pool(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_float(ctx, n, x);
  if (st) return st;
  if (x->ndim != 4) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "only 2-D pooling (4-D data) is supported");
  const int64_t *ks;
  if (ob_gattr_ints(n, "kernel_shape", &ks) != 2) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "kernel_shape must have 2 values");
  if (ks[0] < 1 || ks[1] < 1 || ks[0] > 1 << 16 || ks[1] > 1 << 16)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "kernel_shape must be positive");
  int64_t s[2], p[4], d[2];
  conv_geom(n, x->dims[2], x->dims[3], ks[0], ks[1], s, p, d);
  if ((st = check_geom(ctx, n, s, p, d))) return st;
  if (d[0] != 1 || d[1] != 1) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "dilated pooling is not supported");
  if (p[0] >= ks[0] || p[2] >= ks[0] || p[1] >= ks[1] || p[3] >= ks[1])
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "pads must be smaller than the window");
  if (ob_gattr_i(n, "storage_order", 0)) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "storage_order 1 is not supported");
  bool cm = ob_gattr_i(n, "ceil_mode", 0);
  int64_t oh = pool_out(x->dims[2], ks[0], s[0], p[0], p[2], cm), ow = pool_out(x->dims[3], ks[1], s[1], p[1], p[3], cm);
  if (oh < 1 || ow < 1)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "window %lldx%lld is larger than the padded input", (long long)ks[0],
                    (long long)ks[1]);
  if (strcmp(ob_gattr_s(n, "auto_pad", "NOTSET"), "NOTSET")) {
    ob_graph_set_attr_ints(g, gout(g, n, 0)->producer, "pads", 4, p);
    ob_graph_set_attr_s(g, gout(g, n, 0)->producer, "auto_pad", "NOTSET");
  }
  return set_out(ctx, n, gout(g, n, 0), OB_F32, 4, (int64_t[]){x->dims[0], x->dims[1], oh, ow});
}

static ob_status ref_pool(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  const int64_t *ks;
  ob_gattr_ints(n, "kernel_shape", &ks);
  int64_t s[2], p[4], d[2];
  conv_geom(n, x->dims[2], x->dims[3], ks[0], ks[1], s, p, d);
  bool mx = n->op == OB_GOP_MAXPOOL, incl = ob_gattr_i(n, "count_include_pad", 0);
  int64_t NC = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3], OH = y->dims[2], OW = y->dims[3];
  const float *X = in[0];
  float *o = out[0];
  for (int64_t c = 0; c < NC; c++)
    for (int64_t oy = 0; oy < OH; oy++)
      for (int64_t ox = 0; ox < OW; ox++) {
        double acc = mx ? -INFINITY : 0;
        int64_t cnt = 0, cnt_pad = 0;
        for (int64_t r = 0; r < ks[0]; r++)
          for (int64_t q = 0; q < ks[1]; q++) {
            int64_t iy = oy * s[0] - p[0] + r, ix = ox * s[1] - p[1] + q;
            /* the count with padding stops at the padded input's edge */
            if (iy < H + p[2] && ix < W + p[3]) cnt_pad++;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            double v = X[(c * H + iy) * W + ix];
            if (mx) acc = v > acc ? v : acc;
            else acc += v;
            cnt++;
          }
        o[(c * OH + oy) * OW + ox] = (float)(mx ? acc : acc / (double)(incl ? cnt_pad : cnt ? cnt : 1));
      }
  return OB_OK;
}

static ob_status infer_gap(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_float(ctx, n, x);
  if (st) return st;
  if (x->ndim < 3) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input must have at least 3 dimensions");
  int64_t d[OB_GRAPH_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) d[i] = i < 2 ? x->dims[i] : 1;
  return set_out(ctx, n, gout(g, n, 0), OB_F32, x->ndim, d);
}

static ob_status ref_gap(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0);
  int64_t NC = x->dims[0] * x->dims[1], HW = ob_gt_numel(x) / (NC ? NC : 1);
  for (int64_t c = 0; c < NC; c++) {
    double s = 0;
    for (int64_t i = 0; i < HW; i++) s += ((const float *)in[0])[c * HW + i];
    ((float *)out[0])[c] = (float)(s / (double)HW);
  }
  return OB_OK;
}

/* ---- normalization, softmax, reductions ---------------------------------------------------------- */
static ob_status infer_bn(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_float(ctx, n, x);
  if (st) return st;
  if (x->ndim < 2) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input must have a channel dimension");
  for (int k = 1; k < 5; k++) {
    gtensor *p = gin(g, n, k);
    if (!p || p->ndim < 0 || ob_gt_numel(p) != x->dims[1] || p->dtype != OB_F32)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "parameter %d must have %lld (channels) float elements", k,
                      (long long)x->dims[1]);
  }
  if (ob_gattr_i(n, "training_mode", 0)) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "training_mode is not supported");
  return set_out(ctx, n, gout(g, n, 0), OB_F32, x->ndim, x->dims);
}

static ob_status ref_bn(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0);
  double eps = ob_gattr_f(n, "epsilon", 1e-5);
  int64_t N = x->dims[0], C = x->dims[1], HW = N * C > 0 ? ob_gt_numel(x) / (N * C) : 1;
  const float *X = in[0], *sc = in[1], *b = in[2], *mu = in[3], *var = in[4];
  float *o = out[0];
  for (int64_t i = 0; i < N; i++)
    for (int64_t c = 0; c < C; c++) {
      double rs = 1.0 / sqrt((double)var[c] + eps);
      for (int64_t k = 0; k < HW; k++) {
        int64_t q = (i * C + c) * HW + k;
        o[q] = (float)(((double)X[q] - mu[c]) * rs * sc[c] + b[c]);
      }
    }
  return OB_OK;
}

static ob_status infer_ln(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0), *s = gin(g, n, 1), *b = gin(g, n, 2);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_known(ctx, n, s, 1);
  if (!st) st = need_float(ctx, n, x);
  if (st) return st;
  int64_t ax = ob_gattr_i(n, "axis", -1);
  if ((st = axis_ok(ctx, n, ax, x->ndim))) return st;
  int a = norm_axis(ax, x->ndim);
  int64_t inner = 1;
  for (int i = a; i < x->ndim; i++) inner *= x->dims[i];
  if (ob_gt_numel(s) != inner || (b && (b->ndim < 0 || ob_gt_numel(b) != inner)))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "scale and bias must have %lld elements (the normalized dims)",
                    (long long)inner);
  return set_out(ctx, n, gout(g, n, 0), OB_F32, x->ndim, x->dims);
}

static ob_status ref_ln(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0);
  int a = norm_axis(ob_gattr_i(n, "axis", -1), x->ndim);
  double eps = ob_gattr_f(n, "epsilon", 1e-5);
  int64_t inner = 1;
  for (int i = a; i < x->ndim; i++) inner *= x->dims[i];
  int64_t rows = ob_gt_numel(x) / (inner ? inner : 1);
  const float *X = in[0], *S = in[1], *B = n->nin > 2 ? in[2] : NULL;
  float *o = out[0];
  for (int64_t r = 0; r < rows; r++) {
    const float *p = X + r * inner;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; i++) mean += p[i];
    mean /= (double)inner;
    for (int64_t i = 0; i < inner; i++) var += ((double)p[i] - mean) * ((double)p[i] - mean);
    var /= (double)inner;
    double rs = 1.0 / sqrt(var + eps);
    for (int64_t i = 0; i < inner; i++) o[r * inner + i] = (float)(((double)p[i] - mean) * rs * S[i] + (B ? B[i] : 0));
  }
  return OB_OK;
}

static ob_status infer_softmax(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_float(ctx, n, x);
  if (!st) st = axis_ok(ctx, n, ob_gattr_i(n, "axis", -1), x->ndim);
  if (st) return st;
  return set_out(ctx, n, gout(g, n, 0), OB_F32, x->ndim, x->dims);
}

static ob_status ref_softmax(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0);
  int a = norm_axis(ob_gattr_i(n, "axis", -1), x->ndim);
  int64_t outer = 1, len = x->dims[a], inner = 1;
  for (int i = 0; i < a; i++) outer *= x->dims[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= x->dims[i];
  const float *X = in[0];
  float *o = out[0];
  for (int64_t p = 0; p < outer; p++)
    for (int64_t q = 0; q < inner; q++) {
      const float *r = X + p * len * inner + q;
      double mx = -INFINITY, s = 0;
      for (int64_t i = 0; i < len; i++) mx = r[i * inner] > mx ? r[i * inner] : mx;
      for (int64_t i = 0; i < len; i++) s += exp((double)r[i * inner] - mx);
      for (int64_t i = 0; i < len; i++) o[p * len * inner + q + i * inner] = (float)(exp((double)r[i * inner] - mx) / s);
    }
  return OB_OK;
}

/* Axes of a reduction or squeeze into a mask; false on a bad axis. */
static bool axes_mask(const int64_t *ax, int nax, int nd, bool *mask) {
  memset(mask, 0, sizeof(bool) * OB_GRAPH_MAX_DIMS);
  for (int i = 0; i < nax; i++) {
    if (ax[i] < -nd || ax[i] >= nd) return false;
    int a = norm_axis(ax[i], nd);
    if (mask[a]) return false;
    mask[a] = true;
  }
  return true;
}

static ob_status infer_reducemean(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_float(ctx, n, x);
  if (st) return st;
  const int64_t *ax;
  int nax = ob_gattr_ints(n, "axes", &ax);
  bool m[OB_GRAPH_MAX_DIMS];
  if (nax < 0) {
    for (int i = 0; i < OB_GRAPH_MAX_DIMS; i++) m[i] = true;
  } else if (!axes_mask(ax, nax, x->ndim, m))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axes are out of range or repeated");
  bool keep = ob_gattr_i(n, "keepdims", 1);
  int64_t d[OB_GRAPH_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (!m[i]) d[nd++] = x->dims[i];
    else if (keep) d[nd++] = 1;
  }
  return set_out(ctx, n, gout(g, n, 0), OB_F32, nd, d);
}

static ob_status ref_reducemean(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  const int64_t *ax;
  int nax = ob_gattr_ints(n, "axes", &ax);
  bool m[OB_GRAPH_MAX_DIMS];
  if (nax < 0) {
    for (int i = 0; i < OB_GRAPH_MAX_DIMS; i++) m[i] = true;
  } else
    axes_mask(ax, nax, x->ndim, m);
  int64_t cnt = ob_gt_numel(x), ny = ob_gt_numel(y), red = ny ? cnt / ny : 1;
  double *acc = calloc((size_t)(ny ? ny : 1), sizeof(double));
  if (!acc) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  int64_t idx[OB_GRAPH_MAX_DIMS] = {0};
  for (int64_t i = 0; i < cnt; i++) {
    int64_t o = 0;
    for (int k = 0; k < x->ndim; k++) o = o * (m[k] ? 1 : x->dims[k]) + (m[k] ? 0 : idx[k]);
    acc[o] += ((const float *)in[0])[i];
    for (int k = x->ndim - 1; k >= 0; k--) {
      if (++idx[k] < x->dims[k]) break;
      idx[k] = 0;
    }
  }
  for (int64_t i = 0; i < ny; i++) ((float *)out[0])[i] = (float)(acc[i] / (double)red);
  free(acc);
  return OB_OK;
}

/* ---- data movement ------------------------------------------------------------------------------ */
static ob_status infer_concat(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x0 = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x0, 0);
  if (st) return st;
  if (x0->ndim < 1) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "scalar inputs cannot be concatenated");
  int64_t ax = ob_gattr_i(n, "axis", 0);
  if ((st = axis_ok(ctx, n, ax, x0->ndim))) return st;
  int a = norm_axis(ax, x0->ndim);
  int64_t d[OB_GRAPH_MAX_DIMS];
  memcpy(d, x0->dims, sizeof d);
  for (int k = 1; k < n->nin; k++) {
    gtensor *x = gin(g, n, k);
    if ((st = need_known(ctx, n, x, k))) return st;
    if (x->ndim != x0->ndim || x->dtype != x0->dtype)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input '%s' differs in rank or type from '%s'", x->name, x0->name);
    for (int i = 0; i < x->ndim; i++)
      if (i != a && x->dims[i] != x0->dims[i])
        return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input '%s' differs from '%s' in dimension %d (%lld vs %lld)",
                        x->name, x0->name, i, (long long)x->dims[i], (long long)x0->dims[i]);
    d[a] += x->dims[a];
  }
  return set_out(ctx, n, gout(g, n, 0), x0->dtype, x0->ndim, d);
}

static ob_status ref_concat(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *y = gout(g, n, 0);
  int a = norm_axis(ob_gattr_i(n, "axis", 0), y->ndim);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; i++) outer *= y->dims[i];
  for (int i = a + 1; i < y->ndim; i++) inner *= y->dims[i];
  size_t es = ob_dtype_size(y->dtype);
  int64_t off = 0;
  for (int k = 0; k < n->nin; k++) {
    const gtensor *x = gin(g, n, k);
    int64_t blk = x->dims[a] * inner;
    for (int64_t p = 0; p < outer; p++)
      memcpy((char *)out[0] + (size_t)((p * y->dims[a] * inner + off) * (int64_t)es),
             (const char *)in[k] + (size_t)(p * blk * (int64_t)es), (size_t)blk * es);
    off += blk;
  }
  return OB_OK;
}

static ob_status infer_split(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  int64_t ax = ob_gattr_i(n, "axis", 0);
  if ((st = axis_ok(ctx, n, ax, x->ndim))) return st;
  int a = norm_axis(ax, x->ndim);
  int64_t sz[16];
  int ns = n->nout;
  if (gin(g, n, 1)) {
    if ((st = known_ints(ctx, n, gin(g, n, 1), "split", sz, 16, &ns))) return st;
    if (ns != n->nout) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "split has %d sizes for %d outputs", ns, n->nout);
  } else {
    if (x->dims[a] % n->nout)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "dimension %lld does not split evenly into %d", (long long)x->dims[a],
                      n->nout);
    for (int i = 0; i < ns; i++) sz[i] = x->dims[a] / n->nout;
  }
  int64_t tot = 0;
  for (int i = 0; i < ns; i++) {
    if (sz[i] < 0 || sz[i] > x->dims[a])
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "split size %lld is out of range for dimension %lld", (long long)sz[i],
                      (long long)x->dims[a]);
    tot += sz[i]; /* at most 16 sizes of at most 2^32: no overflow */
  }
  if (tot != x->dims[a])
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "split sizes add up to %lld, not %lld", (long long)tot, (long long)x->dims[a]);
  for (int i = 0; i < ns && !st; i++) {
    int64_t d[OB_GRAPH_MAX_DIMS];
    memcpy(d, x->dims, sizeof d);
    d[a] = sz[i];
    st = set_out(ctx, n, gout(g, n, i), x->dtype, x->ndim, d);
  }
  return st;
}

static ob_status ref_split(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0);
  int a = norm_axis(ob_gattr_i(n, "axis", 0), x->ndim);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; i++) outer *= x->dims[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= x->dims[i];
  size_t es = ob_dtype_size(x->dtype);
  int64_t off = 0;
  for (int k = 0; k < n->nout; k++) {
    int64_t blk = gout(g, n, k)->dims[a] * inner;
    for (int64_t p = 0; p < outer; p++)
      memcpy((char *)out[k] + (size_t)(p * blk * (int64_t)es),
             (const char *)in[0] + (size_t)((p * x->dims[a] * inner + off) * (int64_t)es), (size_t)blk * es);
    off += blk;
  }
  return OB_OK;
}

/* Slice parameters resolved against the data's shape. */
typedef struct slice_p {
  int64_t start[OB_GRAPH_MAX_DIMS], step[OB_GRAPH_MAX_DIMS], len[OB_GRAPH_MAX_DIMS];
} slice_p;

static ob_status slice_params(ob_ctx *ctx, const ob_graph *g, const gnode *n, slice_p *p) {
  const gtensor *x = gin(g, n, 0);
  int64_t st[OB_GRAPH_MAX_DIMS], en[OB_GRAPH_MAX_DIMS], ax[OB_GRAPH_MAX_DIMS], sp[OB_GRAPH_MAX_DIMS];
  int ns, ne, na, nsp;
  ob_status s = known_ints(ctx, n, gin(g, n, 1), "starts", st, OB_GRAPH_MAX_DIMS, &ns);
  if (!s) s = known_ints(ctx, n, gin(g, n, 2), "ends", en, OB_GRAPH_MAX_DIMS, &ne);
  if (s) return s;
  if (ns != ne) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "starts and ends differ in length");
  na = ns;
  for (int i = 0; i < na; i++) ax[i] = i;
  if (gin(g, n, 3) && (s = known_ints(ctx, n, gin(g, n, 3), "axes", ax, OB_GRAPH_MAX_DIMS, &na))) return s;
  nsp = ns;
  for (int i = 0; i < nsp; i++) sp[i] = 1;
  if (gin(g, n, 4) && (s = known_ints(ctx, n, gin(g, n, 4), "steps", sp, OB_GRAPH_MAX_DIMS, &nsp))) return s;
  if (na != ns || nsp != ns) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axes and steps must match starts in length");
  for (int i = 0; i < x->ndim; i++) p->start[i] = 0, p->step[i] = 1, p->len[i] = x->dims[i];
  bool seen[OB_GRAPH_MAX_DIMS] = {0};
  for (int i = 0; i < ns; i++) {
    if (ax[i] < -x->ndim || ax[i] >= x->ndim) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axis %lld is out of range", (long long)ax[i]);
    int a = norm_axis(ax[i], x->ndim);
    if (seen[a]) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axis %d is repeated", a);
    seen[a] = true;
    int64_t d = x->dims[a], step = sp[i];
    if (step == 0) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "step 0");
    if (step < -(INT64_C(1) << 40) || step > INT64_C(1) << 40) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "step out of range");
    int64_t b = st[i], e = en[i];
    /* clamp as ONNX: negative from the end, then into range */
    if (b < 0) b = b < -d ? -1 : b + d;
    if (e < 0) e = e < -d ? -1 : e + d;
    if (step > 0) {
      b = b < 0 ? 0 : b > d ? d : b;
      e = e < 0 ? 0 : e > d ? d : e;
      p->len[a] = e > b ? (e - b + step - 1) / step : 0;
    } else {
      b = b < -1 ? -1 : b > d - 1 ? d - 1 : b;
      e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
      p->len[a] = b > e ? (b - e - step - 1) / (-step) : 0;
    }
    p->start[a] = b;
    p->step[a] = step;
  }
  return OB_OK;
}

static ob_status infer_slice(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  slice_p p;
  if (!st) st = slice_params(ctx, g, n, &p);
  if (st) return st;
  return set_out(ctx, n, gout(g, n, 0), x->dtype, x->ndim, p.len);
}

static ob_status ref_slice(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  slice_p p;
  ob_status st = slice_params(ctx, g, n, &p);
  if (st) return st;
  size_t es = ob_dtype_size(x->dtype);
  int64_t cnt = ob_gt_numel(y), idx[OB_GRAPH_MAX_DIMS] = {0};
  for (int64_t i = 0; i < cnt; i++) {
    int64_t off = 0;
    for (int k = 0; k < x->ndim; k++) off = off * x->dims[k] + p.start[k] + idx[k] * p.step[k];
    memcpy((char *)out[0] + (size_t)i * es, (const char *)in[0] + (size_t)off * es, es);
    for (int k = y->ndim - 1; k >= 0; k--) {
      if (++idx[k] < y->dims[k]) break;
      idx[k] = 0;
    }
  }
  return OB_OK;
}

static ob_status infer_gather(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0), *ix = gin(g, n, 1);
  ob_status st = need_known(ctx, n, x, 0);
  if (!st) st = need_known(ctx, n, ix, 1);
  if (st) return st;
  if (ix->dtype != OB_I64) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "indices '%s' must be integers", ix->name);
  if (x->ndim < 1) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "data must have a dimension");
  int64_t ax = ob_gattr_i(n, "axis", 0);
  if ((st = axis_ok(ctx, n, ax, x->ndim))) return st;
  int a = norm_axis(ax, x->ndim);
  if (x->ndim - 1 + ix->ndim > OB_GRAPH_MAX_DIMS) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "output rank too large");
  if (ix->data) {
    int64_t c = ob_gt_numel(ix);
    for (int64_t i = 0; i < c; i++) {
      int64_t v = ival(ix, i);
      if (v < -x->dims[a] || v >= x->dims[a])
        return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "index %lld is out of range for dimension %lld", (long long)v,
                        (long long)x->dims[a]);
    }
  }
  int64_t d[OB_GRAPH_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < a; i++) d[nd++] = x->dims[i];
  for (int i = 0; i < ix->ndim; i++) d[nd++] = ix->dims[i];
  for (int i = a + 1; i < x->ndim; i++) d[nd++] = x->dims[i];
  return set_out(ctx, n, gout(g, n, 0), x->dtype, nd, d);
}

static ob_status ref_gather(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gtensor *x = gin(g, n, 0), *ix = gin(g, n, 1);
  int a = norm_axis(ob_gattr_i(n, "axis", 0), x->ndim);
  int64_t outer = 1, inner = 1, ni = ob_gt_numel(ix), d = x->dims[a];
  for (int i = 0; i < a; i++) outer *= x->dims[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= x->dims[i];
  size_t es = ob_dtype_size(x->dtype);
  const int64_t *I = in[1];
  for (int64_t p = 0; p < outer; p++)
    for (int64_t k = 0; k < ni; k++) {
      int64_t v = I[k] < 0 ? I[k] + d : I[k];
      if (v < 0 || v >= d)
        return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "index %lld is out of range for dimension %lld", (long long)I[k],
                        (long long)d);
      memcpy((char *)out[0] + (size_t)((p * ni + k) * inner) * es, (const char *)in[0] + (size_t)((p * d + v) * inner) * es,
             (size_t)inner * es);
    }
  return OB_OK;
}

/* Flatten, Reshape, Unsqueeze, Squeeze, Identity-like: same data, new shape. */
static ob_status ref_copy(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  memcpy(out[0], in[0], ob_gt_bytes(gout(g, n, 0)));
  return OB_OK;
}

static ob_status infer_flatten(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  int64_t ax = ob_gattr_i(n, "axis", 1);
  if (ax < -x->ndim || ax > x->ndim) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axis %lld is out of range", (long long)ax);
  int a = (int)(ax < 0 ? ax + x->ndim : ax);
  int64_t d[2] = {1, 1};
  for (int i = 0; i < x->ndim; i++) d[i >= a] *= x->dims[i];
  return set_out(ctx, n, gout(g, n, 0), x->dtype, 2, d);
}

static ob_status infer_reshape(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  int64_t s[OB_GRAPH_MAX_DIMS];
  int ns;
  if (!st) st = known_ints(ctx, n, gin(g, n, 1), "shape", s, OB_GRAPH_MAX_DIMS, &ns);
  if (st) return st;
  bool allowzero = ob_gattr_i(n, "allowzero", 0);
  int neg = -1;
  int64_t prod = 1, total = ob_gt_numel(x);
  for (int i = 0; i < ns; i++) {
    if (s[i] == 0 && !allowzero) {
      if (i >= x->ndim) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape value 0 at %d copies a dimension the data lacks", i);
      s[i] = x->dims[i];
    }
    if (s[i] == -1) {
      if (neg >= 0) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape has two -1 entries");
      neg = i;
      continue;
    }
    if (s[i] < 0) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape value %lld", (long long)s[i]);
    if (__builtin_mul_overflow(prod, s[i], &prod) || prod > OB_GRAPH_MAX_NUMEL)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape is too large");
  }
  if (neg >= 0) {
    if (prod == 0 || total % prod)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "cannot reshape %lld elements with a -1 entry", (long long)total);
    s[neg] = total / prod;
    prod = total;
  }
  if (prod != total)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "cannot reshape '%s' (%lld elements) into %lld elements", x->name,
                    (long long)total, (long long)prod);
  return set_out(ctx, n, gout(g, n, 0), x->dtype, ns, s);
}

static ob_status infer_transpose(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  const int64_t *perm;
  int np = ob_gattr_ints(n, "perm", &perm);
  int64_t d[OB_GRAPH_MAX_DIMS];
  bool seen[OB_GRAPH_MAX_DIMS] = {0};
  if (np >= 0 && np != x->ndim) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "perm has %d entries for rank %d", np, x->ndim);
  for (int i = 0; i < x->ndim; i++) {
    int64_t p = np >= 0 ? perm[i] : x->ndim - 1 - i;
    if (p < 0 || p >= x->ndim || seen[p]) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "perm is not a permutation");
    seen[p] = true;
    d[i] = x->dims[p];
  }
  return set_out(ctx, n, gout(g, n, 0), x->dtype, x->ndim, d);
}

static ob_status ref_transpose(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  const int64_t *perm;
  int np = ob_gattr_ints(n, "perm", &perm);
  int64_t xs[OB_GRAPH_MAX_DIMS], str[OB_GRAPH_MAX_DIMS], idx[OB_GRAPH_MAX_DIMS] = {0};
  int64_t s = 1;
  for (int i = x->ndim - 1; i >= 0; i--) xs[i] = s, s *= x->dims[i];
  for (int i = 0; i < x->ndim; i++) str[i] = xs[np >= 0 ? perm[i] : x->ndim - 1 - i];
  size_t es = ob_dtype_size(x->dtype);
  int64_t cnt = ob_gt_numel(y), off = 0;
  if (x->ndim == 2 && es == 4 && (np < 0 || perm[0] == 1)) { /* tied heads: a plain 2-D transpose */
    ob_transpose32(in[0], out[0], x->dims[0], x->dims[1]);
    return OB_OK;
  }
  for (int64_t i = 0; i < cnt; i++) {
    memcpy((char *)out[0] + (size_t)i * es, (const char *)in[0] + (size_t)off * es, es);
    for (int k = y->ndim - 1; k >= 0; k--) {
      off += str[k];
      if (++idx[k] < y->dims[k]) break;
      off -= str[k] * idx[k];
      idx[k] = 0;
    }
  }
  return OB_OK;
}

static ob_status infer_unsqueeze(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  int64_t ax[OB_GRAPH_MAX_DIMS];
  int na;
  if (!st) st = known_ints(ctx, n, gin(g, n, 1), "axes", ax, OB_GRAPH_MAX_DIMS, &na);
  if (st) return st;
  int nd = x->ndim + na;
  if (nd > OB_GRAPH_MAX_DIMS) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "output rank %d is too large", nd);
  bool m[OB_GRAPH_MAX_DIMS];
  if (!axes_mask(ax, na, nd, m)) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axes are out of range or repeated");
  int64_t d[OB_GRAPH_MAX_DIMS];
  for (int i = 0, k = 0; i < nd; i++) d[i] = m[i] ? 1 : x->dims[k++];
  return set_out(ctx, n, gout(g, n, 0), x->dtype, nd, d);
}

static ob_status infer_squeeze(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  int64_t ax[OB_GRAPH_MAX_DIMS];
  int na = 0;
  bool m[OB_GRAPH_MAX_DIMS] = {0};
  if (gin(g, n, 1)) {
    if ((st = known_ints(ctx, n, gin(g, n, 1), "axes", ax, OB_GRAPH_MAX_DIMS, &na))) return st;
    if (!axes_mask(ax, na, x->ndim, m)) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "axes are out of range or repeated");
  } else
    for (int i = 0; i < x->ndim; i++) m[i] = x->dims[i] == 1;
  int64_t d[OB_GRAPH_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (m[i] && x->dims[i] != 1)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "dimension %d has size %lld, not 1", i, (long long)x->dims[i]);
    if (!m[i]) d[nd++] = x->dims[i];
  }
  return set_out(ctx, n, gout(g, n, 0), x->dtype, nd, d);
}

static void shape_range(const gnode *n, int nd, int *b, int *e) {
  int64_t s = ob_gattr_i(n, "start", 0), t = ob_gattr_i(n, "end", nd);
  if (s < 0) s += nd;
  if (t < 0) t += nd;
  s = s < 0 ? 0 : s > nd ? nd : s;
  t = t < 0 ? 0 : t > nd ? nd : t;
  *b = (int)s;
  *e = (int)(t > s ? t : s);
}

static ob_status infer_shape(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  int b, e;
  shape_range(n, x->ndim, &b, &e);
  return set_out(ctx, n, gout(g, n, 0), OB_I64, 1, (int64_t[]){e - b});
}

static ob_status ref_shape(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  (void)in;
  const gtensor *x = gin(g, n, 0);
  int b, e;
  shape_range(n, x->ndim, &b, &e);
  for (int i = b; i < e; i++) ((int64_t *)out[0])[i - b] = x->dims[i];
  return OB_OK;
}

/* ONNX TensorProto data types the IR holds (int32 and double are widened or
 * narrowed to int64 and float32). */
ob_dtype ob_onnx_dtype(int64_t code, bool *ok) {
  *ok = true;
  switch (code) {
  case 1: case 11: return OB_F32;
  case 6: case 7: return OB_I64;
  case 9: return OB_BOOL;
  default: *ok = false; return OB_F32;
  }
}

static ob_status infer_cast(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  bool ok;
  ob_dtype dt = ob_onnx_dtype(ob_gattr_i(n, "to", 1), &ok);
  if (!ok) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "cast to ONNX type %lld is not supported", (long long)ob_gattr_i(n, "to", 1));
  return set_out(ctx, n, gout(g, n, 0), dt, x->ndim, x->dims);
}

static ob_status ref_cast(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  int64_t cnt = ob_gt_numel(x);
  for (int64_t i = 0; i < cnt; i++) {
    double v = fval(x, in[0], i);
    if (y->dtype == OB_F32) ((float *)out[0])[i] = (float)v;
    else if (y->dtype == OB_I64) ((int64_t *)out[0])[i] = x->dtype == OB_I64 ? ((const int64_t *)in[0])[i] : (int64_t)(isfinite(v) && fabs(v) < 9e18 ? v : 0);
    else ((uint8_t *)out[0])[i] = v != 0;
  }
  return OB_OK;
}

/* Resize (nearest only): output size from sizes, else from scales. */
static ob_status resize_out(ob_ctx *ctx, const ob_graph *g, const gnode *n, int64_t *d, double *scale) {
  const gtensor *x = gin(g, n, 0), *sc = gin(g, n, 2), *sz = gin(g, n, 3);
  if (sz && ob_gt_numel(sz) > 0) {
    if (!sz->data || sz->dtype != OB_I64 || ob_gt_numel(sz) != x->ndim)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "sizes must be %d constant integers", x->ndim);
    for (int i = 0; i < x->ndim; i++) {
      d[i] = ival(sz, i);
      if (d[i] < 1 || d[i] > 1 << 24) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "size %lld out of range", (long long)d[i]);
      scale[i] = (double)d[i] / (double)x->dims[i];
    }
    return OB_OK;
  }
  if (!sc || !sc->data || sc->dtype != OB_F32 || ob_gt_numel(sc) != x->ndim)
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "scales must be %d constant floats", x->ndim);
  for (int i = 0; i < x->ndim; i++) {
    scale[i] = ((const float *)sc->data)[i];
    if (!(scale[i] > 0 && scale[i] <= 1024)) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "scale %g out of range", scale[i]);
    d[i] = (int64_t)floor((double)x->dims[i] * scale[i]);
  }
  return OB_OK;
}

static ob_status infer_resize(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  const char *mode = ob_gattr_s(n, "mode", "nearest");
  if (strcmp(mode, "nearest")) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "mode '%s' is not supported (only nearest)", mode);
  const char *ct = ob_gattr_s(n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = ob_gattr_s(n, "nearest_mode", "round_prefer_floor");
  if (strcmp(ct, "asymmetric") && strcmp(ct, "half_pixel") && strcmp(ct, "align_corners") && strcmp(ct, "pytorch_half_pixel"))
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "coordinate_transformation_mode '%s' is not supported", ct);
  if (strcmp(nm, "floor") && strcmp(nm, "ceil") && strcmp(nm, "round_prefer_floor") && strcmp(nm, "round_prefer_ceil"))
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "nearest_mode '%s' is not supported", nm);
  int64_t d[OB_GRAPH_MAX_DIMS];
  double sc[OB_GRAPH_MAX_DIMS];
  if ((st = resize_out(ctx, g, n, d, sc))) return st;
  return set_out(ctx, n, gout(g, n, 0), x->dtype, x->ndim, d);
}

static ob_status ref_resize(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  int64_t d[OB_GRAPH_MAX_DIMS];
  double sc[OB_GRAPH_MAX_DIMS];
  ob_status st = resize_out(ctx, g, n, d, sc);
  if (st) return st;
  const char *ct = ob_gattr_s(n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = ob_gattr_s(n, "nearest_mode", "round_prefer_floor");
  int64_t *map[OB_GRAPH_MAX_DIMS] = {0};
  for (int k = 0; k < x->ndim; k++) {
    map[k] = malloc(sizeof(int64_t) * (size_t)y->dims[k]);
    if (!map[k]) {
      for (int j = 0; j < k; j++) free(map[j]);
      return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    }
    for (int64_t o = 0; o < y->dims[k]; o++) {
      double c;
      if (!strcmp(ct, "asymmetric")) c = (double)o / sc[k];
      else if (!strcmp(ct, "align_corners")) c = y->dims[k] > 1 ? (double)o * (double)(x->dims[k] - 1) / (double)(y->dims[k] - 1) : 0;
      else if (!strcmp(ct, "pytorch_half_pixel")) c = y->dims[k] > 1 ? ((double)o + 0.5) / sc[k] - 0.5 : 0;
      else c = ((double)o + 0.5) / sc[k] - 0.5;
      double r;
      if (!strcmp(nm, "floor")) r = floor(c);
      else if (!strcmp(nm, "ceil")) r = ceil(c);
      else if (!strcmp(nm, "round_prefer_ceil")) r = floor(c + 0.5);
      else r = (c - floor(c) == 0.5) ? floor(c) : floor(c + 0.5);
      int64_t i = (int64_t)r;
      map[k][o] = i < 0 ? 0 : i >= x->dims[k] ? x->dims[k] - 1 : i;
    }
  }
  size_t es = ob_dtype_size(x->dtype);
  int64_t cnt = ob_gt_numel(y), idx[OB_GRAPH_MAX_DIMS] = {0};
  for (int64_t i = 0; i < cnt; i++) {
    int64_t off = 0;
    for (int k = 0; k < x->ndim; k++) off = off * x->dims[k] + map[k][idx[k]];
    memcpy((char *)out[0] + (size_t)i * es, (const char *)in[0] + (size_t)off * es, es);
    for (int k = y->ndim - 1; k >= 0; k--) {
      if (++idx[k] < y->dims[k]) break;
      idx[k] = 0;
    }
  }
  for (int k = 0; k < x->ndim; k++) free(map[k]);
  return OB_OK;
}

static ob_status infer_expand(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  int64_t s[OB_GRAPH_MAX_DIMS], d[OB_GRAPH_MAX_DIMS];
  int ns, nd;
  if (!st) st = known_ints(ctx, n, gin(g, n, 1), "shape", s, OB_GRAPH_MAX_DIMS, &ns);
  if (st) return st;
  for (int i = 0; i < ns; i++)
    if (s[i] < 0) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape value %lld", (long long)s[i]);
  if (!ob_broadcast_shape(x->ndim, x->dims, ns, s, &nd, d))
    return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "'%s' does not broadcast to the shape", x->name);
  return set_out(ctx, n, gout(g, n, 0), x->dtype, nd, d);
}

static ob_status ref_expand(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  bcast bc;
  bc_init(&bc, y, (const gtensor *const[]){x}, 1);
  size_t es = ob_dtype_size(x->dtype);
  int64_t cnt = ob_gt_numel(y);
  for (int64_t i = 0; i < cnt; i++, bc_next(&bc))
    memcpy((char *)out[0] + (size_t)i * es, (const char *)in[0] + (size_t)bc.off[0] * es, es);
  return OB_OK;
}

static ob_status infer_cos(ob_ctx *ctx, ob_graph *g, gnode *n) {
  int64_t s[OB_GRAPH_MAX_DIMS];
  int ns;
  ob_status st = known_ints(ctx, n, gin(g, n, 0), "shape", s, OB_GRAPH_MAX_DIMS, &ns);
  if (st) return st;
  bool ok;
  ob_dtype dt = ob_onnx_dtype(ob_gattr_i(n, "dtype", 1), &ok);
  if (!ok) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "value type is not supported");
  return set_out(ctx, n, gout(g, n, 0), dt, ns, s);
}

static ob_status ref_cos(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  (void)in;
  const gtensor *y = gout(g, n, 0);
  double v = ob_gattr_f(n, "value", 0);
  int64_t cnt = ob_gt_numel(y);
  for (int64_t i = 0; i < cnt; i++) {
    if (y->dtype == OB_F32) ((float *)out[0])[i] = (float)v;
    else if (y->dtype == OB_I64) ((int64_t *)out[0])[i] = (int64_t)v;
    else ((uint8_t *)out[0])[i] = v != 0;
  }
  return OB_OK;
}

static ob_status infer_range(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *a = gin(g, n, 0), *b = gin(g, n, 1), *c = gin(g, n, 2);
  for (int k = 0; k < 3; k++) {
    gtensor *t = gin(g, n, k);
    if (!t || !t->data || ob_gt_numel(t) != 1)
      return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "start, limit and delta must be constant scalars");
    if (t->dtype != a->dtype) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "inputs differ in type");
  }
  double s = fval(a, a->data, 0), l = fval(b, b->data, 0), d = fval(c, c->data, 0);
  if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d)) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "bad range");
  double cnt = ceil((l - s) / d);
  if (cnt < 0) cnt = 0;
  if (cnt > (double)OB_GRAPH_MAX_NUMEL) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "range too long");
  return set_out(ctx, n, gout(g, n, 0), a->dtype, 1, (int64_t[]){(int64_t)cnt});
}

static ob_status ref_range(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  (void)ctx;
  const gtensor *a = gin(g, n, 0), *y = gout(g, n, 0);
  double s = fval(a, in[0], 0), d = fval(a, in[2], 0);
  for (int64_t i = 0; i < y->dims[0]; i++) {
    if (y->dtype == OB_I64) ((int64_t *)out[0])[i] = ((const int64_t *)in[0])[0] + i * ((const int64_t *)in[2])[0];
    else ((float *)out[0])[i] = (float)(s + (double)i * d);
  }
  return OB_OK;
}

/* Pad, constant mode: pads [begin per axis..., end per axis...] >= 0. */
static ob_status pad_params(ob_ctx *ctx, const ob_graph *g, const gnode *n, int64_t *pads, double *value) {
  const gtensor *x = gin(g, n, 0), *cv = gin(g, n, 2);
  int np;
  ob_status st = known_ints(ctx, n, gin(g, n, 1), "pads", pads, 2 * OB_GRAPH_MAX_DIMS, &np);
  if (st) return st;
  if (np != 2 * x->ndim) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "pads has %d values for rank %d", np, x->ndim);
  for (int i = 0; i < np; i++)
    if (pads[i] < 0 || pads[i] > 1 << 20)
      return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "pad %lld is not supported (0..2^20; negative pads crop)", (long long)pads[i]);
  *value = 0;
  if (cv) {
    if (!cv->data || ob_gt_numel(cv) != 1) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "constant_value must be a constant scalar");
    *value = fval(cv, cv->data, 0);
  }
  return OB_OK;
}

static ob_status infer_pad(ob_ctx *ctx, ob_graph *g, gnode *n) {
  gtensor *x = gin(g, n, 0);
  ob_status st = need_known(ctx, n, x, 0);
  if (st) return st;
  const char *mode = ob_gattr_s(n, "mode", "constant");
  if (strcmp(mode, "constant")) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "mode '%s' is not supported (only constant)", mode);
  if (gin(g, n, 3)) return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "the axes input is not supported");
  int64_t pads[2 * OB_GRAPH_MAX_DIMS], d[OB_GRAPH_MAX_DIMS];
  double v;
  if ((st = pad_params(ctx, g, n, pads, &v))) return st;
  for (int i = 0; i < x->ndim; i++) d[i] = x->dims[i] + pads[i] + pads[x->ndim + i];
  return set_out(ctx, n, gout(g, n, 0), x->dtype, x->ndim, d);
}

static ob_status ref_pad(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  int64_t pads[2 * OB_GRAPH_MAX_DIMS];
  double v;
  ob_status st = pad_params(ctx, g, n, pads, &v);
  if (st) return st;
  size_t es = ob_dtype_size(x->dtype);
  int64_t cnt = ob_gt_numel(y), idx[OB_GRAPH_MAX_DIMS] = {0};
  for (int64_t i = 0; i < cnt; i++) {
    int64_t off = 0;
    bool inside = true;
    for (int k = 0; k < x->ndim; k++) {
      int64_t c = idx[k] - pads[k];
      inside &= c >= 0 && c < x->dims[k];
      off = off * x->dims[k] + c;
    }
    char *o = (char *)out[0] + (size_t)i * es;
    if (inside) memcpy(o, (const char *)in[0] + (size_t)off * es, es);
    else if (x->dtype == OB_F32) *(float *)o = (float)v;
    else if (x->dtype == OB_I64) *(int64_t *)o = (int64_t)v;
    else *(uint8_t *)o = v != 0;
    for (int k = y->ndim - 1; k >= 0; k--) {
      if (++idx[k] < y->dims[k]) break;
      idx[k] = 0;
    }
  }
  return OB_OK;
}

/* ---- the table ---------------------------------------------------------------------------------- */
static const gop_def k_defs[OB_GOP_COUNT] = {
    [OB_GOP_CONV] = {"Conv", 2, 4, 1, 1, infer_conv, NULL},
    [OB_GOP_GEMM] = {"Gemm", 2, 3, 1, 1, infer_gemm, ref_gemm},
    [OB_GOP_MATMUL] = {"MatMul", 2, 2, 1, 1, infer_matmul, ref_matmul},
    [OB_GOP_DENSE] = {"Dense", 2, 4, 1, 1, infer_dense, NULL},
    [OB_GOP_LSTM] = {"LSTM", 3, 8, 1, 3, infer_lstm, ref_lstm},
    [OB_GOP_ADD] = {"Add", 2, 2, 1, 1, infer_binary, ref_binary},
    [OB_GOP_SUB] = {"Sub", 2, 2, 1, 1, infer_binary, ref_binary},
    [OB_GOP_MUL] = {"Mul", 2, 2, 1, 1, infer_binary, ref_binary},
    [OB_GOP_DIV] = {"Div", 2, 2, 1, 1, infer_binary, ref_binary},
    [OB_GOP_POW] = {"Pow", 2, 2, 1, 1, infer_binary, ref_binary},
    [OB_GOP_EQUAL] = {"Equal", 2, 2, 1, 1, infer_binary, ref_binary},
    [OB_GOP_WHERE] = {"Where", 3, 3, 1, 1, infer_where, ref_where},
    [OB_GOP_RELU] = {"Relu", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_CLIP] = {"Clip", 1, 3, 1, 1, infer_unary, ref_unary},
    [OB_GOP_SIGMOID] = {"Sigmoid", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_HARDSIGMOID] = {"HardSigmoid", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_TANH] = {"Tanh", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_ERF] = {"Erf", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_SQRT] = {"Sqrt", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_EXP] = {"Exp", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_NEG] = {"Neg", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_GELU] = {"Gelu", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_MAXPOOL] = {"MaxPool", 1, 1, 1, 1, infer_pool, ref_pool},
    [OB_GOP_AVGPOOL] = {"AveragePool", 1, 1, 1, 1, infer_pool, ref_pool},
    [OB_GOP_GLOBALAVGPOOL] = {"GlobalAveragePool", 1, 1, 1, 1, infer_gap, ref_gap},
    [OB_GOP_BATCHNORM] = {"BatchNormalization", 5, 5, 1, 1, infer_bn, ref_bn},
    [OB_GOP_LAYERNORM] = {"LayerNormalization", 2, 3, 1, 1, infer_ln, ref_ln},
    [OB_GOP_SOFTMAX] = {"Softmax", 1, 1, 1, 1, infer_softmax, ref_softmax},
    [OB_GOP_REDUCEMEAN] = {"ReduceMean", 1, 1, 1, 1, infer_reducemean, ref_reducemean},
    [OB_GOP_CONCAT] = {"Concat", 1, 1024, 1, 1, infer_concat, ref_concat},
    [OB_GOP_SPLIT] = {"Split", 1, 2, 1, 16, infer_split, ref_split},
    [OB_GOP_SLICE] = {"Slice", 3, 5, 1, 1, infer_slice, ref_slice},
    [OB_GOP_GATHER] = {"Gather", 2, 2, 1, 1, infer_gather, ref_gather},
    [OB_GOP_FLATTEN] = {"Flatten", 1, 1, 1, 1, infer_flatten, ref_copy},
    [OB_GOP_RESHAPE] = {"Reshape", 2, 2, 1, 1, infer_reshape, ref_copy},
    [OB_GOP_TRANSPOSE] = {"Transpose", 1, 1, 1, 1, infer_transpose, ref_transpose},
    [OB_GOP_UNSQUEEZE] = {"Unsqueeze", 2, 2, 1, 1, infer_unsqueeze, ref_copy},
    [OB_GOP_SQUEEZE] = {"Squeeze", 1, 2, 1, 1, infer_squeeze, ref_copy},
    [OB_GOP_SHAPE] = {"Shape", 1, 1, 1, 1, infer_shape, ref_shape},
    [OB_GOP_CAST] = {"Cast", 1, 1, 1, 1, infer_cast, ref_cast},
    [OB_GOP_IDENTITY] = {"Identity", 1, 1, 1, 1, infer_unary, ref_unary},
    [OB_GOP_RESIZE] = {"Resize", 1, 4, 1, 1, infer_resize, ref_resize},
    [OB_GOP_EXPAND] = {"Expand", 2, 2, 1, 1, infer_expand, ref_expand},
    [OB_GOP_CONSTANTOFSHAPE] = {"ConstantOfShape", 1, 1, 1, 1, infer_cos, ref_cos},
    [OB_GOP_RANGE] = {"Range", 3, 3, 1, 1, infer_range, ref_range},
    [OB_GOP_PAD] = {"Pad", 2, 4, 1, 1, infer_pad, ref_pad},
};

const gop_def *ob_gop_def(ob_gop op) {
  OB_ASSERT((unsigned)op < OB_GOP_COUNT);
  return &k_defs[op];
}

const char *ob_gop_name(ob_gop op) { return (unsigned)op < OB_GOP_COUNT ? k_defs[op].name : "?"; }

ob_gop ob_gop_find(const char *name) {
  for (int i = 0; i < OB_GOP_COUNT; i++)
    if (!strcmp(k_defs[i].name, name)) return (ob_gop)i;
  return OB_GOP_COUNT;
}
