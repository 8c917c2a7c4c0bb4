/* elemwise.c: elementwise and broadcast operators on NCHW float32 tensors:
 * relu, add (two tensors), bias_add (bias over C), clip (lo/hi), mul (two
 * tensors), sigmoid, tanh, gelu (the tanh approximation
 * 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), relu6 (clip to [0, 6]).
 * One template, elemwise.x86: tensors viewed as planes [N, C, H*W], (n, c)
 * fused and parallel, the plane split by the vector width, the outer part
 * optionally unrolled. Flops are
 * counted as one per element whatever the function. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/rowred_impl.h"

typedef enum ew_kind {
  EW_RELU = 0, EW_ADD, EW_BIAS_ADD, EW_CLIP, EW_MUL, EW_SIGMOID, EW_TANH, EW_GELU, EW_RELU6,
  EW_KIND_COUNT
} ew_kind;

static const char *const k_attrs[] = {"N", "C", "H", "W"};
static const int64_t k_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};
static const char *const k_clip_attrs[] = {"N", "C", "H", "W", "lo", "hi"};
static const int64_t k_clip_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, 0, 6};
static const char *const k_names[EW_KIND_COUNT] = {"relu", "add",  "bias_add", "clip", "mul",
                                                   "sigmoid", "tanh", "gelu", "relu6"};
/* sqrt(2 / pi) and the cubic coefficient of gelu's tanh approximation */
#define EW_GELU_K 0.7978845608028654
#define EW_GELU_C 0.044715

static ew_kind kind_of(const ob_workload *wl) {
  for (int k = 0; k < EW_KIND_COUNT; k++)
    if (!strcmp(wl->op, k_names[k])) return (ew_kind)k;
  OB_ASSERT(!"not an elementwise operator");
  return EW_RELU;
}

static void dims(const ob_workload *wl, int64_t d[4]) {
  for (int i = 0; i < 4; i++) d[i] = ob_workload_get(wl, k_attrs[i]);
}

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  int64_t d[4];
  dims(wl, d);
  for (int i = 0; i < 4; i++)
    if (d[i] < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: %s must be >= 1 (got %lld)", wl->op, k_attrs[i],
                     (long long)d[i]);
  char what[64];
  snprintf(what, sizeof what, "%s x (N x C x H x W)", wl->op);
  ob_status st = ob_check_numel(ctx, what, 4, d, NULL);
  if (st) return st;
  if (kind_of(wl) == EW_CLIP && ob_workload_get(wl, "lo") > ob_workload_get(wl, "hi"))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "clip: lo > hi");
  return OB_OK;
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  int64_t d[4];
  dims(wl, d);
  int n = snprintf(out, cap, "%s/f32/N%lldC%lldH%lldW%lld", wl->op, (long long)d[0], (long long)d[1],
                   (long long)d[2], (long long)d[3]);
  if (kind_of(wl) == EW_CLIP && n > 0 && (size_t)n < cap)
    snprintf(out + n, cap - (size_t)n, "/lo%lld,hi%lld", (long long)ob_workload_get(wl, "lo"),
             (long long)ob_workload_get(wl, "hi"));
}

static double flops(const ob_workload *wl) {
  int64_t d[4];
  dims(wl, d);
  return (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3];
}

static int args(const ob_workload *wl, ob_arg_info *out) {
  int64_t d[4];
  dims(wl, d);
  int64_t n = ob_numel_valid(4, d);
  int c = 0;
  out[c++] = (ob_arg_info){"x", n, true};
  if (kind_of(wl) == EW_ADD || kind_of(wl) == EW_MUL) out[c++] = (ob_arg_info){"y", n, true};
  if (kind_of(wl) == EW_BIAS_ADD) out[c++] = (ob_arg_info){"bias", d[1], true};
  out[c++] = (ob_arg_info){"out", n, false};
  return c;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  int64_t d[4];
  dims(wl, d);
  int64_t n = d[0] * d[1] * d[2] * d[3], hw = d[2] * d[3];
  const float *x = bufs[0], *y = bufs[1];
  ew_kind k = kind_of(wl);
  float *o = bufs[k == EW_ADD || k == EW_BIAS_ADD || k == EW_MUL ? 2 : 1];
  double lo = k == EW_CLIP ? (double)ob_workload_get(wl, "lo") : 0;
  double hi = k == EW_CLIP ? (double)ob_workload_get(wl, "hi") : 0;
  for (int64_t i = 0; i < n; i++) {
    switch (k) {
    case EW_RELU: o[i] = x[i] > 0 ? x[i] : 0; break;
    case EW_ADD: o[i] = x[i] + y[i]; break;
    case EW_BIAS_ADD: o[i] = x[i] + y[(i / hw) % d[1]]; break;
    case EW_CLIP: o[i] = (float)(x[i] < lo ? lo : x[i] > hi ? hi : x[i]); break;
    case EW_MUL: o[i] = (float)((double)x[i] * y[i]); break;
    case EW_SIGMOID: o[i] = (float)(1.0 / (1.0 + exp(-(double)x[i]))); break;
    case EW_TANH: o[i] = (float)tanh((double)x[i]); break;
    case EW_GELU: {
      double v = x[i];
      o[i] = (float)(0.5 * v * (1.0 + tanh(EW_GELU_K * (v + EW_GELU_C * v * v * v))));
      break;
    }
    case EW_RELU6: o[i] = x[i] < 0 ? 0.0f : x[i] > 6 ? 6.0f : x[i]; break;
    default: break;
    }
  }
}

static ob_status define_ew(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  int64_t d[4];
  dims(wl, d);
  int64_t vecs[8], lanes = ob_tmpl_lanes(tg);
  ob_status st = ob_space_define_knob(sp, "vec", vecs, ob_tmpl_vec_choices(tg, vecs));
  if (!st) st = ob_space_define_knob(sp, "unroll", (int64_t[]){1, 2, 4}, 3);
  if (st) return st;
  ob_config c = ob_space_first(sp);
  ob_config_set_knob(&c, "vec", d[2] * d[3] >= 2 * lanes ? 2 * lanes : lanes); /* two registers */
  ob_config_set_knob(&c, "unroll", 1);
  *dflt = c;
  return OB_OK;
}

static ob_status build_ew(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  int64_t d[4];
  dims(wl, d);
  ew_kind k = kind_of(wl);
  int64_t pl[3] = {d[0], d[1], d[2] * d[3]}; /* the same buffers as planes */
  ob_tensor *x = ob_te_placeholder(te, "x", 3, pl, OB_F32), *y = NULL;
  if (k == EW_ADD || k == EW_MUL) y = ob_te_placeholder(te, "y", 3, pl, OB_F32);
  if (k == EW_BIAS_ADD) y = ob_te_placeholder(te, "bias", 1, &d[1], OB_F32);
  ob_ivar *ax[3];
  ob_expr *idx[3];
  static const char *const an[3] = {"n", "c", "hw"};
  for (int i = 0; i < 3; i++) {
    ax[i] = ob_te_axis(te, an[i], pl[i]);
    idx[i] = ob_te_var(te, ax[i]);
  }
  ob_expr *v = ob_te_load(te, x, 3, idx), *body = NULL;
  switch (k) {
  case EW_RELU: body = ob_te_bin(te, OB_MAX, v, ob_te_float(te, OB_F32, 0)); break;
  case EW_ADD: body = OB_TE_ADD(te, v, ob_te_load(te, y, 3, idx)); break;
  case EW_BIAS_ADD: body = OB_TE_ADD(te, v, ob_te_load(te, y, 1, &idx[1])); break;
  case EW_CLIP:
    body = ob_te_bin(te, OB_MIN,
                     ob_te_bin(te, OB_MAX, v, ob_te_float(te, OB_F32, (double)ob_workload_get(wl, "lo"))),
                     ob_te_float(te, OB_F32, (double)ob_workload_get(wl, "hi")));
    break;
  case EW_MUL: body = OB_TE_MUL(te, v, ob_te_load(te, y, 3, idx)); break;
  case EW_SIGMOID: /* 1 / (1 + exp(-x)) */
    body = ob_te_bin(te, OB_FDIV, ob_te_float(te, OB_F32, 1.0),
                     OB_TE_ADD(te, ob_te_float(te, OB_F32, 1.0),
                               ob_te_call(te, OB_EXP, OB_TE_SUB(te, ob_te_float(te, OB_F32, 0.0), v))));
    break;
  case EW_TANH: body = ob_te_call(te, OB_TANH, v); break;
  case EW_GELU: {
    ob_expr *v3 = OB_TE_MUL(te, OB_TE_MUL(te, v, v), v);
    ob_expr *in = OB_TE_MUL(te, ob_te_float(te, OB_F32, EW_GELU_K),
                            OB_TE_ADD(te, v, OB_TE_MUL(te, ob_te_float(te, OB_F32, EW_GELU_C), v3)));
    body = OB_TE_MUL(te, OB_TE_MUL(te, ob_te_float(te, OB_F32, 0.5), v),
                     OB_TE_ADD(te, ob_te_float(te, OB_F32, 1.0), ob_te_call(te, OB_TANH, in)));
    break;
  }
  case EW_RELU6:
    body = ob_te_bin(te, OB_MIN, ob_te_bin(te, OB_MAX, v, ob_te_float(te, OB_F32, 0.0)),
                     ob_te_float(te, OB_F32, 6.0));
    break;
  default: break;
  }
  ob_tensor *o = ob_te_compute(te, k_names[k], 3, ax, body);
  if (!o) return OB_ERR_INVALID_ARG;
  ob_sched *s = NULL;
  ob_status st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  st = ob_ew_schedule_planes(s, ob_sched_stage(s, o), ob_config_knob(cfg, "vec"),
                             ob_config_knob(cfg, "unroll"), 1);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_tmpls[] = {{.name = "elemwise.x86", .define = define_ew, .build = build_ew}};

#define EW_DEF(var, nm, at, df)                                                     \
  const ob_op_def var = {.name = nm,                                                \
                         .attrs = at,                                               \
                         .defaults = df,                                            \
                         .nattrs = (int)(sizeof at / sizeof at[0]),                 \
                         .validate = validate,                                      \
                         .key = key,                                                \
                         .flops = flops,                                            \
                         .args = args,                                              \
                         .reference = reference,                                    \
                         .tmpls = k_tmpls,                                          \
                         .ntmpls = 1}
EW_DEF(ob_op_relu, "relu", k_attrs, k_defaults);
EW_DEF(ob_op_add, "add", k_attrs, k_defaults);
EW_DEF(ob_op_bias_add, "bias_add", k_attrs, k_defaults);
EW_DEF(ob_op_clip, "clip", k_clip_attrs, k_clip_defaults);
EW_DEF(ob_op_mul, "mul", k_attrs, k_defaults);
EW_DEF(ob_op_sigmoid, "sigmoid", k_attrs, k_defaults);
EW_DEF(ob_op_tanh, "tanh", k_attrs, k_defaults);
EW_DEF(ob_op_gelu, "gelu", k_attrs, k_defaults);
EW_DEF(ob_op_relu6, "relu6", k_attrs, k_defaults);
