/* layout.c: the layout transforms between NCHW and the blocked NCHW[cb]c
 * layout that the conv2d_NCHWc and depthwise_NCHWc templates use:
 * to_nchwc (out[n, c/cb, h, w, c%cb] = in[n, c, h, w]) and from_nchwc (the
 * inverse). Template layout.x86: (n, c-block, h) fused and parallel, one
 * inner axis vectorized (the block, or w) with the other unrolled or not. */
#include <stdio.h>
#include <string.h>

#include "ops/ops_impl.h"

static const char *const k_attrs[] = {"N", "C", "H", "W", "cb"};
static const int64_t k_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, 16};

static bool to_blocked(const ob_workload *wl) { return !strcmp(wl->op, "to_nchwc"); }

static void dims(const ob_workload *wl, int64_t d[5]) {
  for (int i = 0; i < 5; i++) d[i] = ob_workload_get(wl, k_attrs[i]);
}

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  int64_t d[5];
  dims(wl, d);
  for (int i = 0; i < 5; i++)
    if (d[i] < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: %s must be >= 1 (got %lld)", wl->op, k_attrs[i], (long long)d[i]);
  if (d[1] % d[4])
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: block cb=%lld must divide C=%lld", wl->op, (long long)d[4],
                   (long long)d[1]);
  char what[64];
  snprintf(what, sizeof what, "%s x (N x C x H x W)", wl->op);
  return ob_check_numel(ctx, what, 4, d, NULL);
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  int64_t d[5];
  dims(wl, d);
  snprintf(out, cap, "%s/f32/N%lldC%lldH%lldW%lld/c%lld", wl->op, (long long)d[0], (long long)d[1], (long long)d[2],
           (long long)d[3], (long long)d[4]);
}

static double flops(const ob_workload *wl) {
  int64_t d[5];
  dims(wl, d);
  return (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3]; /* one move per element */
}

static int args(const ob_workload *wl, ob_arg_info *out) {
  int64_t d[5];
  dims(wl, d);
  int64_t n = ob_numel_valid(4, d);
  out[0] = (ob_arg_info){"x", n, true};
  out[1] = (ob_arg_info){"out", n, false};
  return 2;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  int64_t d[5];
  dims(wl, d);
  const float *x = bufs[0];
  float *o = bufs[1];
  int64_t C = d[1], HW = d[2] * d[3], cb = d[4];
  for (int64_t n = 0; n < d[0]; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < HW; i++) {
        int64_t plain = (n * C + c) * HW + i, blk = ((n * (C / cb) + c / cb) * HW + i) * cb + c % cb;
        if (to_blocked(wl)) o[blk] = x[plain];
        else o[plain] = x[blk];
      }
}

static ob_status define_layout(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  (void)wl;
  int64_t lanes = ob_tmpl_lanes(tg);
  ob_status st = ob_space_define_knob(sp, "vec_axis", (int64_t[]){0, 1}, 2); /* 0: block, 1: w */
  if (!st) st = ob_space_define_knob(sp, "vec_w", (int64_t[]){lanes / 2, lanes}, 2); /* half, one register */
  if (st) return st;
  ob_config c = ob_space_first(sp);
  ob_config_set_knob(&c, "vec_axis", to_blocked(wl) ? 1 : 0); /* contiguous reads */
  ob_config_set_knob(&c, "vec_w", lanes);
  *dflt = c;
  return OB_OK;
}

static ob_status build_layout(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  int64_t d[5];
  dims(wl, d);
  int64_t cb = d[4], cc = d[1] / cb;
  bool blk = to_blocked(wl);
  ob_tensor *x = blk ? ob_te_placeholder(te, "x", 4, d, OB_F32)
                     : ob_te_placeholder(te, "x", 5, (int64_t[]){d[0], cc, d[2], d[3], cb}, OB_F32);
  ob_tensor *o;
  ob_ivar *ax[5];
  if (blk) {
    static const char *const nm[5] = {"n", "cc", "h", "w", "cb"};
    int64_t sh[5] = {d[0], cc, d[2], d[3], cb};
    for (int i = 0; i < 5; i++) ax[i] = ob_te_axis(te, nm[i], sh[i]);
    ob_expr *c = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, ax[1]), ob_te_int(te, cb)), ob_te_var(te, ax[4]));
    o = ob_te_compute(te, "to_nchwc", 5, ax,
                      ob_te_load(te, x, 4, (ob_expr *[]){ob_te_var(te, ax[0]), c, ob_te_var(te, ax[2]), ob_te_var(te, ax[3])}));
  } else {
    static const char *const nm[4] = {"n", "c", "h", "w"};
    for (int i = 0; i < 4; i++) ax[i] = ob_te_axis(te, nm[i], d[i]);
    ob_expr *c = ob_te_var(te, ax[1]);
    o = ob_te_compute(te, "from_nchwc", 4, ax,
                      ob_te_load(te, x, 5,
                                 (ob_expr *[]){ob_te_var(te, ax[0]), ob_te_bin(te, OB_DIV, c, ob_te_int(te, cb)),
                                               ob_te_var(te, ax[2]), ob_te_var(te, ax[3]),
                                               ob_te_bin(te, OB_MOD, c, ob_te_int(te, cb))}));
  }
  if (!x || !o) return OB_ERR_INVALID_ARG;
  ob_sched *s = NULL;
  ob_status st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, o);
  bool vec_w = ob_config_knob(cfg, "vec_axis") == 1;
  int64_t vw = ob_config_knob(cfg, "vec_w");
  ob_ivar *f1, *f2, *wo, *wi;
  if (blk) { /* [n, cc, h, w, cb] */
    st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), ob_stage_axis(so, 1), &f1);
    if (!st) st = ob_sched_fuse(s, so, f1, ob_stage_axis(so, 2), &f2);
    if (!st) st = ob_sched_parallel(s, so, f2);
    if (!st && vec_w) {
      st = ob_sched_split(s, so, ob_stage_axis(so, 3), vw, &wo, &wi);
      if (!st) st = ob_sched_reorder(s, so, 3, (ob_ivar *[]){wo, ob_stage_axis(so, 4), wi});
      if (!st) st = ob_sched_vectorize(s, so, wi);
    } else if (!st) {
      st = ob_sched_vectorize(s, so, ob_stage_axis(so, 4));
    }
  } else { /* [n, c, h, w]: split c by cb so the block is its own loop */
    ob_ivar *co, *ci;
    st = ob_sched_split(s, so, ob_stage_axis(so, 1), cb, &co, &ci);
    if (!st) st = ob_sched_reorder(s, so, 5, (ob_ivar *[]){ob_stage_axis(so, 0), co, ob_stage_axis(so, 2), ci, ob_stage_axis(so, 3)});
    if (!st) st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), co, &f1);
    if (!st) st = ob_sched_fuse(s, so, f1, ob_stage_axis(so, 2), &f2);
    if (!st) st = ob_sched_parallel(s, so, f2);
    if (!st && vec_w) {
      st = ob_sched_split(s, so, ob_stage_axis(so, 3), vw, &wo, &wi);
      if (!st) st = ob_sched_vectorize(s, so, wi);
    } else if (!st) {
      st = ob_sched_reorder(s, so, 2, (ob_ivar *[]){ob_stage_axis(so, 3), ci});
      if (!st) st = ob_sched_vectorize(s, so, ci);
    }
  }
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_tmpls[] = {{.name = "layout.x86", .define = define_layout, .build = build_layout}};

#define LAYOUT_DEF(var, nm)                                                                   \
  const ob_op_def var = {.name = nm, .attrs = k_attrs, .defaults = k_defaults, .nattrs = 5,   \
                         .validate = validate, .key = key, .flops = flops, .args = args,      \
                         .reference = reference, .tmpls = k_tmpls, .ntmpls = 1}
LAYOUT_DEF(ob_op_to_nchwc, "to_nchwc");
LAYOUT_DEF(ob_op_from_nchwc, "from_nchwc");
