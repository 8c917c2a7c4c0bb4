/* concat.c: concatenation of two NCHW float32 tensors along channels:
 * a [N, C1, H, W] and b [N, C2, H, W] -> out [N, C1 + C2, H, W]. Each output
 * plane is a copy of one input plane, chosen by a select on the channel
 * (uniform over the plane, so the copy stays a vector load and store).
 * Template concat.x86: the elementwise nest over [N, C, H*W] planes
 * (rowred.c) with knobs vec, unroll and hw_parts (planes cut into that many
 * parallel pieces). Flops:
 * one per output element. */
#include <stdio.h>
#include <string.h>

#include "ops/rowred_impl.h"

static const char *const k_attrs[] = {"N", "C1", "C2", "H", "W"};
static const int64_t k_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};

typedef struct cat_p {
  int64_t n, c1, c2, h, w;
} cat_p;

static cat_p params(const ob_workload *wl) {
  return (cat_p){ob_workload_get(wl, "N"), ob_workload_get(wl, "C1"), ob_workload_get(wl, "C2"),
                 ob_workload_get(wl, "H"), ob_workload_get(wl, "W")};
}

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  for (int i = 0; i < 5; i++)
    if (ob_workload_get(wl, k_attrs[i]) < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "concat: %s must be >= 1 (got %lld)", k_attrs[i],
                     (long long)ob_workload_get(wl, k_attrs[i]));
  cat_p p = params(wl);
  /* C1 + C2 cannot overflow: both are within OB_MAX_ATTR */
  return ob_check_numel(ctx, "concat output (N x (C1+C2) x H x W)", 4,
                        (int64_t[]){p.n, p.c1 + p.c2, p.h, p.w}, NULL);
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  cat_p p = params(wl);
  snprintf(out, cap, "concat/f32/N%lldH%lldW%lld/C%lld+%lld", (long long)p.n, (long long)p.h,
           (long long)p.w, (long long)p.c1, (long long)p.c2);
}

static double flops(const ob_workload *wl) {
  cat_p p = params(wl);
  return (double)p.n * ((double)p.c1 + (double)p.c2) * (double)p.h * (double)p.w;
}

static int args(const ob_workload *wl, ob_arg_info *out) {
  cat_p p = params(wl);
  out[0] = (ob_arg_info){"a", OB_NUMEL(p.n, p.c1, p.h, p.w), true};
  out[1] = (ob_arg_info){"b", OB_NUMEL(p.n, p.c2, p.h, p.w), true};
  out[2] = (ob_arg_info){"out", OB_NUMEL(p.n, p.c1 + p.c2, p.h, p.w), false};
  return 3;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  cat_p p = params(wl);
  const float *a = bufs[0], *b = bufs[1];
  float *o = bufs[2];
  int64_t hw = p.h * p.w;
  for (int64_t n = 0; n < p.n; n++) {
    memcpy(o + n * (p.c1 + p.c2) * hw, a + n * p.c1 * hw, sizeof(float) * (size_t)(p.c1 * hw));
    memcpy(o + (n * (p.c1 + p.c2) + p.c1) * hw, b + n * p.c2 * hw, sizeof(float) * (size_t)(p.c2 * hw));
  }
}

static ob_status define_concat(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  cat_p p = params(wl);
  int64_t hw = p.h * p.w, parts[4];
  int np = 0;
  for (int64_t k = 1; k <= 8 && k <= hw; k *= 2) parts[np++] = k;
  int64_t vecs[8], lanes = ob_tmpl_lanes(tg);
  ob_status st = ob_space_define_knob(sp, "vec", vecs, ob_tmpl_vec_choices(tg, vecs));
  if (!st) st = ob_space_define_knob(sp, "unroll", (int64_t[]){1, 2, 4}, 3);
  if (!st) st = ob_space_define_knob(sp, "hw_parts", parts, np);
  if (st) return st;
  ob_config c = ob_space_first(sp);
  ob_config_set_knob(&c, "vec", hw >= 2 * lanes ? 2 * lanes : lanes); /* two registers */
  ob_config_set_knob(&c, "unroll", 1);
  ob_config_set_knob(&c, "hw_parts", p.n * (p.c1 + p.c2) < 8 && hw >= 64 ? 2 : 1);
  *dflt = c;
  return OB_OK;
}

static ob_status build_concat(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  cat_p p = params(wl);
  int64_t hw = p.h * p.w; /* NCHW viewed as planes [N, C, H*W] */
  ob_tensor *a = ob_te_placeholder(te, "a", 3, (int64_t[]){p.n, p.c1, hw}, OB_F32);
  ob_tensor *b = ob_te_placeholder(te, "b", 3, (int64_t[]){p.n, p.c2, hw}, OB_F32);
  ob_ivar *ax[3] = {ob_te_axis(te, "n", p.n), ob_te_axis(te, "c", p.c1 + p.c2), ob_te_axis(te, "hw", hw)};
  ob_expr *vn = ob_te_var(te, ax[0]), *vc = ob_te_var(te, ax[1]), *vhw = ob_te_var(te, ax[2]);
  ob_expr *from_a = ob_te_load(te, a, 3, (ob_expr *[]){vn, vc, vhw});
  ob_expr *from_b = ob_te_load(te, b, 3, (ob_expr *[]){vn, OB_TE_SUB(te, vc, ob_te_int(te, p.c1)), vhw});
  ob_tensor *o = ob_te_compute(te, "concat", 3, ax,
                               ob_te_select(te, ob_te_bin(te, OB_LT, vc, ob_te_int(te, p.c1)), from_a, from_b));
  if (!a || !b || !o) return OB_ERR_INVALID_ARG;
  ob_sched *s = NULL;
  ob_status st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  st = ob_ew_schedule_planes(s, ob_sched_stage(s, o), ob_config_knob(cfg, "vec"), ob_config_knob(cfg, "unroll"),
                           ob_config_knob(cfg, "hw_parts"));
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_tmpls[] = {{.name = "concat.x86", .define = define_concat, .build = build_concat}};

const ob_op_def ob_op_concat = {
    .name = "concat",
    .attrs = k_attrs,
    .defaults = k_defaults,
    .nattrs = 5,
    .validate = validate,
    .key = key,
    .flops = flops,
    .reduce_len = NULL,
    .args = args,
    .reference = reference,
    .tmpls = k_tmpls,
    .ntmpls = 1,
};
