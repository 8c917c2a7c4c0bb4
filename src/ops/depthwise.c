/* depthwise.c: depthwise 2-D convolution (groups = C, multiplier 1), float32,
 * weights [C, 1, R, S]. Template depthwise_NCHWc.x86 keeps channels in the
 * vector lanes (NCHW[c_bn]c data, [C/c_bn, R, S, c_bn] weights), so every
 * stride loads contiguous vectors, with a register block of output columns;
 * depthwise_nchw.x86 vectorizes output columns of the plain layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

static const char *const k_attrs[] = {"N",     "C",     "H",     "W",     "R",     "S",    "stride_h",
                                      "stride_w", "pad_t", "pad_l", "pad_b", "pad_r", "dil_h", "dil_w"};
static const int64_t k_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED,
                                     OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, 1, 1, 0, 0, 0, 0, 1, 1};

typedef struct dw_p {
  int64_t n, c, h, w, r, s, sh, sw, pt, pl, pb, pr, dh, dw, oh, ow;
} dw_p;

static dw_p params(const ob_workload *wl) {
  dw_p p;
  int64_t *f[] = {&p.n, &p.c, &p.h, &p.w, &p.r, &p.s, &p.sh, &p.sw, &p.pt, &p.pl, &p.pb, &p.pr, &p.dh, &p.dw};
  for (int i = 0; i < 14; i++) *f[i] = ob_workload_get(wl, k_attrs[i]);
  p.oh = ob_window_out(p.h, p.pt, p.pb, p.dh, p.r, p.sh);
  p.ow = ob_window_out(p.w, p.pl, p.pr, p.dw, p.s, p.sw);
  return p;
}

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  dw_p p = params(wl);
  for (int i = 0; i < 14; i++) {
    int64_t v = ob_workload_get(wl, k_attrs[i]);
    bool is_pad = i >= 8 && i <= 11;
    if (is_pad ? v < 0 : v < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "depthwise_conv2d: %s must be >= %d (got %lld)", k_attrs[i],
                     is_pad ? 0 : 1, (long long)v);
  }
  if (p.oh < 1 || p.ow < 1)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "depthwise_conv2d: empty output: the kernel %lldx%lld (dilation %lld,%lld) is "
                   "larger than the padded input %lldx%lld",
                   (long long)p.r, (long long)p.s, (long long)p.dh, (long long)p.dw,
                   (long long)(p.h + p.pt + p.pb), (long long)(p.w + p.pl + p.pr));
  ob_conv_geom g = {p.n, p.c, p.h, p.w, p.c, p.r, p.s, p.sh, p.sw, p.pt, p.pl, p.pb, p.pr, p.dh, p.dw, p.c, p.oh, p.ow};
  return ob_conv_check_sizes(ctx, "depthwise_conv2d", &g);
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  dw_p p = params(wl);
  snprintf(out, cap, "depthwise_conv2d_nchw/f32/N%lldC%lldH%lldW%lld/R%lldS%lld/s%lld,%lld/p%lld,%lld,%lld,%lld/d%lld,%lld",
           (long long)p.n, (long long)p.c, (long long)p.h, (long long)p.w, (long long)p.r, (long long)p.s,
           (long long)p.sh, (long long)p.sw, (long long)p.pt, (long long)p.pl, (long long)p.pb, (long long)p.pr,
           (long long)p.dh, (long long)p.dw);
}

static double flops(const ob_workload *wl) {
  dw_p p = params(wl);
  return 2.0 * (double)p.n * (double)p.c * (double)p.oh * (double)p.ow * (double)p.r * (double)p.s;
}

static int64_t reduce_len(const ob_workload *wl) {
  dw_p p = params(wl);
  return OB_NUMEL(p.r, p.s);
}

static int args(const ob_workload *wl, ob_arg_info *out) {
  dw_p p = params(wl);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int n = 0;
  int64_t onumel = OB_NUMEL(p.n, p.c, p.oh, p.ow);
  out[n++] = (ob_arg_info){"data", OB_NUMEL(p.n, p.c, p.h, p.w), true};
  out[n++] = (ob_arg_info){"weight", OB_NUMEL(p.c, p.r, p.s), true};
  n += ob_epilogue_args(&e, p.c, onumel, out + n);
  out[n++] = (ob_arg_info){"output", onumel, false};
  return n;
}

/* A depthwise convolution is a grouped one with groups = C = K. */
static void reference(const ob_workload *wl, void *const *bufs) {
  dw_p p = params(wl);
  ob_conv_geom g = {p.n, p.c, p.h, p.w, p.c, p.r, p.s, p.sh, p.sw, p.pt, p.pl, p.pb, p.pr, p.dh, p.dw, p.c, p.oh, p.ow};
  ob_conv_ref(&g, wl->epilogue, bufs);
}

/* ---- template depthwise_NCHWc.x86 ----------------------------------------- */
/* The register block within the target's accumulator budget, with the
 * weight vectors and an input vector in registers too. */
static bool nchwc_ok(const ob_config *cfg, void *user) {
  const ob_target *tg = user;
  int64_t cb[2], ow[2], oh[2];
  ob_config_split(cfg, "tile_c", cb);
  ob_config_split(cfg, "tile_ow", ow);
  ob_config_split(cfg, "tile_oh", oh);
  return ob_tmpl_block_fits(tg, ow[1] * oh[1], ob_tmpl_vectors(tg, cb[1]));
}

static ob_status define_nchwc(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  dw_p p = params(wl);
  int64_t lanes = ob_tmpl_lanes(tg);
  int64_t cand[8]; /* channel blocks of half a vector, one or two vectors */
  int nc = 0;
  for (int64_t b = lanes / 2; b <= 2 * lanes; b *= 2)
    if (b > 1 && p.c % b == 0) {
      cand[2 * nc] = -1;
      cand[2 * nc + 1] = b;
      nc++;
    }
  if (!nc) {
    cand[0] = -1;
    cand[1] = 1;
    nc = 1;
  }
  ob_status st = ob_space_define_split(sp, "tile_c", p.c, &(ob_split_opts){.policy = OB_SPLIT_CANDIDATE, .num_outputs = 2, .candidates = cand, .ncandidates = nc});
  if (!st) st = ob_space_define_split(sp, "tile_ow", p.ow, &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = ob_tmpl_budget(tg)});
  if (!st) st = ob_space_define_split(sp, "tile_oh", p.oh, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 4});
  if (!st) st = ob_space_define_knob(sp, "unroll_kw", (int64_t[]){0, 1}, 2);
  bool pd = p.pt || p.pl || p.pb || p.pr;
  if (!st) st = ob_space_define_knob(sp, "pad_inline", (int64_t[]){0, 1, 2}, pd ? 3 : 1);
  if (st) return st;
  ob_space_set_filter(sp, nchwc_ok, (void *)tg); /* read only */
  /* fallback from searches on MobileNetV2's layers: padding inlined (a
   * materialized copy costs a whole extra pass over memory in this
   * memory-bound operator), blocks of up to 8 columns */
  int64_t owb = 1;
  for (int64_t b = 8; b >= 1; b--)
    if (p.ow % b == 0) {
      owb = b;
      break;
    }
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_c", (int64_t[]){lanes}, 1);
  ob_config_set_split(&c, "tile_ow", (int64_t[]){owb}, 1);
  ob_config_set_split(&c, "tile_oh", (int64_t[]){1}, 1);
  ob_config_set_knob(&c, "unroll_kw", 1);
  ob_config_set_knob(&c, "pad_inline", 1);
  *dflt = c;
  return OB_OK;
}

static ob_status finish(ob_sched *s, ob_status st, ob_sched **out) {
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static ob_status build_nchwc(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  dw_p p = params(wl);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int64_t cbs[2], ow[2], oh[2];
  ob_config_split(cfg, "tile_c", cbs);
  ob_config_split(cfg, "tile_ow", ow);
  ob_config_split(cfg, "tile_oh", oh);
  int64_t cb = cbs[1], cc = p.c / cb;
  bool ukw = ob_config_knob(cfg, "unroll_kw");
  int64_t pad_inline = ob_config_knob(cfg, "pad_inline");
  ob_tensor *data = ob_te_placeholder(te, "data", 5, (int64_t[]){p.n, cc, p.h, p.w, cb}, OB_F32);
  ob_tensor *wt = ob_te_placeholder(te, "weight", 4, (int64_t[]){cc, p.r, p.s, cb}, OB_F32);
  ob_tensor *src = ob_pad_spatial(te, data, 2, 3, p.pt, p.pl, p.pb, p.pr);
  ob_ivar *n = ob_te_axis(te, "n", p.n), *c = ob_te_axis(te, "cc", cc), *y = ob_te_axis(te, "y", p.oh),
          *x = ob_te_axis(te, "x", p.ow), *b = ob_te_axis(te, "cb", cb);
  ob_ivar *ry = ob_te_reduce_axis(te, "ry", p.r), *rx = ob_te_reduce_axis(te, "rx", p.s);
  ob_expr *iy = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, y), ob_te_int(te, p.sh)),
                          OB_TE_MUL(te, ob_te_var(te, ry), ob_te_int(te, p.dh)));
  ob_expr *ix = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, x), ob_te_int(te, p.sw)),
                          OB_TE_MUL(te, ob_te_var(te, rx), ob_te_int(te, p.dw)));
  ob_expr *va = ob_te_load(te, src, 5, (ob_expr *[]){ob_te_var(te, n), ob_te_var(te, c), iy, ix, ob_te_var(te, b)});
  ob_expr *vb = ob_te_load(te, wt, 4, (ob_expr *[]){ob_te_var(te, c), ob_te_var(te, ry), ob_te_var(te, rx), ob_te_var(te, b)});
  ob_tensor *conv = ob_te_compute(te, "dwconv", 5, (ob_ivar *[]){n, c, y, x, b},
                                  ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, va, vb), 2, (ob_ivar *[]){ry, rx}));
  if (!data || !wt || !src || !conv) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders_n(te, &e, conv, p.c, &ein);
  ob_tensor *mid[8];
  int nmid;
  ob_tensor *o = ob_epilogue_apply_blocked(te, &e, conv, 1, 4, p.c, &ein, mid, &nmid);
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, o), *sacc = ob_sched_stage(s, conv);
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  if (!st && o == conv) st = ob_sched_cache_write(s, so, &sacc);
  if (!st && src != data && pad_inline) st = ob_sched_compute_inline(s, ob_sched_stage(s, src));
  if (!st && src != data && pad_inline == 2) st = ob_sched_skip_padding(s, sacc);
  ob_ivar *yo, *yi, *xo, *xi, *f1, *f2;
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 2), oh[1], &yo, &yi);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 3), ow[1], &xo, &xi);
  if (!st)
    st = ob_sched_reorder(s, so, 7, (ob_ivar *[]){ob_stage_axis(so, 0), ob_stage_axis(so, 1), yo, xo, yi, xi,
                                                ob_stage_axis(so, 4)});
  if (!st) st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), ob_stage_axis(so, 1), &f1);
  if (!st) st = ob_sched_fuse(s, so, f1, yo, &f2);
  if (!st) st = ob_sched_parallel(s, so, f2);
  if (!st && cb > 1) st = ob_sched_vectorize(s, so, ob_stage_axis(so, 4));
  if (!st) st = ob_sched_unroll(s, so, xi); /* the tile stays in registers */
  if (!st) st = ob_sched_unroll(s, so, yi);
  if (!st) st = ob_sched_compute_at(s, sacc, so, xo);
  if (!st)
    st = ob_sched_reorder(s, sacc, 7, (ob_ivar *[]){ob_stage_axis(sacc, 0), ob_stage_axis(sacc, 1),
                                                  ob_stage_reduce_axis(sacc, 0), ob_stage_reduce_axis(sacc, 1),
                                                  ob_stage_axis(sacc, 2), ob_stage_axis(sacc, 3),
                                                  ob_stage_axis(sacc, 4)});
  if (!st && cb > 1) st = ob_sched_vectorize(s, sacc, ob_stage_axis(sacc, 4));
  if (!st) st = ob_sched_unroll(s, sacc, ob_stage_axis(sacc, 3));
  if (!st) st = ob_sched_unroll(s, sacc, ob_stage_axis(sacc, 2));
  if (!st && ukw) st = ob_sched_unroll(s, sacc, ob_stage_reduce_axis(sacc, 1));
  return finish(s, st, out);
}

static void move(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst, bool to_blk) {
  dw_p p = params(wl);
  int64_t cbs[2];
  ob_config_split(cfg, "tile_c", cbs);
  int64_t cb = cbs[1];
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  if (ob_epilogue_has(&e, OB_EPI_BIAS) && arg == 2) {
    memcpy(dst, src, sizeof(float) * (size_t)p.c);
    return;
  }
  int64_t hw = arg == 0 ? p.h * p.w : arg == 1 ? p.r * p.s : p.oh * p.ow;
  int64_t nn = arg == 1 ? 1 : p.n;
  for (int64_t n = 0; n < nn; n++)
    for (int64_t c = 0; c < p.c; c++)
      for (int64_t i = 0; i < hw; i++) {
        int64_t plain = (n * p.c + c) * hw + i;
        int64_t blk = ((n * (p.c / cb) + c / cb) * hw + i) * cb + c % cb;
        if (to_blk) dst[blk] = src[plain];
        else dst[plain] = src[blk];
      }
}
static void pack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  move(wl, cfg, arg, src, dst, true);
}
static void unpack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  move(wl, cfg, arg, src, dst, false);
}
/* data, residual and output NCHW[cb]c; weights packed; bias plain. */
static ob_arg_layout layout(const ob_workload *wl, const ob_config *cfg, int arg) {
  int64_t cbs[2];
  ob_config_split(cfg, "tile_c", cbs);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  if (arg == 1) return (ob_arg_layout){OB_ARGL_OPAQUE, 0};
  if (ob_epilogue_has(&e, OB_EPI_BIAS) && arg == 2) return (ob_arg_layout){OB_ARGL_PLAIN, 0};
  return (ob_arg_layout){OB_ARGL_NCHWC, cbs[1]};
}

/* ---- template depthwise_nchw.x86 ------------------------------------------ */
static ob_status define_nchw(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  dw_p p = params(wl);
  /* columns in vectors of up to four registers' worth */
  ob_status st = ob_space_define_split(sp, "tile_ow", p.ow, &(ob_split_opts){.policy = OB_SPLIT_POWER2, .num_outputs = 2, .max_factor = 4 * ob_tmpl_lanes(tg)});
  if (!st) st = ob_space_define_split(sp, "tile_oh", p.oh, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 4});
  if (!st) st = ob_space_define_knob(sp, "unroll_kw", (int64_t[]){0, 1}, 2);
  bool pd = p.pt || p.pl || p.pb || p.pr;
  if (!st) st = ob_space_define_knob(sp, "pad_inline", (int64_t[]){0, 1, 2}, pd ? 3 : 1);
  if (st) return st;
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_ow", (int64_t[]){ob_tmpl_lanes(tg)}, 1);
  ob_config_set_split(&c, "tile_oh", (int64_t[]){2}, 1);
  ob_config_set_knob(&c, "unroll_kw", 1);
  ob_config_set_knob(&c, "pad_inline", 0);
  *dflt = c;
  return OB_OK;
}

static ob_status build_nchw(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  dw_p p = params(wl);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int64_t ow[2], oh[2];
  ob_config_split(cfg, "tile_ow", ow);
  ob_config_split(cfg, "tile_oh", oh);
  bool ukw = ob_config_knob(cfg, "unroll_kw");
  int64_t pad_inline = ob_config_knob(cfg, "pad_inline");
  ob_tensor *data = ob_te_placeholder(te, "data", 4, (int64_t[]){p.n, p.c, p.h, p.w}, OB_F32);
  ob_tensor *wt = ob_te_placeholder(te, "weight", 4, (int64_t[]){p.c, 1, p.r, p.s}, OB_F32);
  ob_tensor *src = ob_pad_spatial(te, data, 2, 3, p.pt, p.pl, p.pb, p.pr);
  ob_ivar *n = ob_te_axis(te, "n", p.n), *c = ob_te_axis(te, "c", p.c), *y = ob_te_axis(te, "y", p.oh),
          *x = ob_te_axis(te, "x", p.ow);
  ob_ivar *ry = ob_te_reduce_axis(te, "ry", p.r), *rx = ob_te_reduce_axis(te, "rx", p.s);
  ob_expr *iy = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, y), ob_te_int(te, p.sh)),
                          OB_TE_MUL(te, ob_te_var(te, ry), ob_te_int(te, p.dh)));
  ob_expr *ix = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, x), ob_te_int(te, p.sw)),
                          OB_TE_MUL(te, ob_te_var(te, rx), ob_te_int(te, p.dw)));
  ob_expr *va = ob_te_load(te, src, 4, (ob_expr *[]){ob_te_var(te, n), ob_te_var(te, c), iy, ix});
  ob_expr *vb = ob_te_load(te, wt, 4, (ob_expr *[]){ob_te_var(te, c), ob_te_int(te, 0), ob_te_var(te, ry), ob_te_var(te, rx)});
  ob_tensor *conv = ob_te_compute(te, "dwconv", 4, (ob_ivar *[]){n, c, y, x},
                                  ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, va, vb), 2, (ob_ivar *[]){ry, rx}));
  if (!data || !wt || !src || !conv) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders(te, &e, conv, 1, &ein);
  ob_tensor *mid[8];
  int nmid;
  ob_tensor *o = ob_epilogue_apply(te, &e, conv, 1, &ein, mid, &nmid);
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, o), *sacc = ob_sched_stage(s, conv);
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  if (!st && o == conv) st = ob_sched_cache_write(s, so, &sacc);
  if (!st && src != data && pad_inline) st = ob_sched_compute_inline(s, ob_sched_stage(s, src));
  if (!st && src != data && pad_inline == 2) st = ob_sched_skip_padding(s, sacc);
  ob_ivar *yo, *yi, *xo, *xi, *f1, *f2;
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 2), oh[1], &yo, &yi);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 3), ow[1], &xo, &xi);
  if (!st) st = ob_sched_reorder(s, so, 6, (ob_ivar *[]){ob_stage_axis(so, 0), ob_stage_axis(so, 1), yo, xo, yi, xi});
  if (!st) st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), ob_stage_axis(so, 1), &f1);
  if (!st) st = ob_sched_fuse(s, so, f1, yo, &f2);
  if (!st) st = ob_sched_parallel(s, so, f2);
  if (!st && ow[1] > 1) st = ob_sched_vectorize(s, so, xi);
  if (!st) st = ob_sched_unroll(s, so, yi);
  if (!st) st = ob_sched_compute_at(s, sacc, so, xo);
  if (!st)
    st = ob_sched_reorder(s, sacc, 6, (ob_ivar *[]){ob_stage_axis(sacc, 0), ob_stage_axis(sacc, 1),
                                                  ob_stage_reduce_axis(sacc, 0), ob_stage_reduce_axis(sacc, 1),
                                                  ob_stage_axis(sacc, 2), ob_stage_axis(sacc, 3)});
  if (!st && ow[1] > 1) st = ob_sched_vectorize(s, sacc, ob_stage_axis(sacc, 3));
  if (!st) st = ob_sched_unroll(s, sacc, ob_stage_axis(sacc, 2));
  if (!st && ukw) st = ob_sched_unroll(s, sacc, ob_stage_reduce_axis(sacc, 1));
  return finish(s, st, out);
}

/* ---- template depthwise_conv2d_nchw.cuda (GPU targets) -----------------------
 * AutoTVM's depthwise_conv2d_nchw.cuda: the direct convolution of
 * gpu_tmpl.c without input channels to reduce over (tile_f, tile_y, tile_x,
 * auto_unroll_max_step, unroll_explicit), the block's input and weight
 * tiles fetched into shared memory once. */
static ob_status define_cuda(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  dw_p p = params(wl);
  return ob_gpu_conv_define(tg, sp, dflt, p.c, p.oh, p.ow, 0, p.r, p.s);
}

static ob_status build_cuda(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  dw_p p = params(wl);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  ob_tensor *data = ob_te_placeholder(te, "data", 4, (int64_t[]){p.n, p.c, p.h, p.w}, OB_F32);
  ob_tensor *wt = ob_te_placeholder(te, "weight", 4, (int64_t[]){p.c, 1, p.r, p.s}, OB_F32);
  ob_tensor *src = ob_pad_spatial(te, data, 2, 3, p.pt, p.pl, p.pb, p.pr);
  ob_ivar *n = ob_te_axis(te, "n", p.n), *c = ob_te_axis(te, "c", p.c), *y = ob_te_axis(te, "y", p.oh),
          *x = ob_te_axis(te, "x", p.ow);
  ob_ivar *ry = ob_te_reduce_axis(te, "ry", p.r), *rx = ob_te_reduce_axis(te, "rx", p.s);
  ob_expr *iy = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, y), ob_te_int(te, p.sh)),
                          OB_TE_MUL(te, ob_te_var(te, ry), ob_te_int(te, p.dh)));
  ob_expr *ix = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, x), ob_te_int(te, p.sw)),
                          OB_TE_MUL(te, ob_te_var(te, rx), ob_te_int(te, p.dw)));
  ob_expr *va = ob_te_load(te, src, 4, (ob_expr *[]){ob_te_var(te, n), ob_te_var(te, c), iy, ix});
  ob_expr *vb = ob_te_load(te, wt, 4, (ob_expr *[]){ob_te_var(te, c), ob_te_int(te, 0), ob_te_var(te, ry), ob_te_var(te, rx)});
  ob_tensor *conv = ob_te_compute(te, "dwconv", 4, (ob_ivar *[]){n, c, y, x},
                                  ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, va, vb), 2, (ob_ivar *[]){ry, rx}));
  if (!data || !wt || !src || !conv) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders(te, &e, conv, 1, &ein);
  ob_tensor *mid[8];
  int nmid;
  ob_tensor *o = ob_epilogue_apply(te, &e, conv, 1, &ein, mid, &nmid);
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  if (!st)
    st = ob_gpu_conv_schedule(s, ob_sched_stage(s, o), ob_sched_stage(s, conv), src, src != data ? src : NULL,
                              wt, cfg, false);
  return finish(s, st, out);
}

static const ob_tmpl_def k_tmpls[] = {
    {.name = "depthwise_NCHWc.x86", .define = define_nchwc, .build = build_nchwc, .pack = pack, .unpack = unpack, .layout = layout,
     .unroll_inner = true, .unroll_default = 8},
    {.name = "depthwise_nchw.x86", .define = define_nchw, .build = build_nchw, .unroll_inner = true},
    {.name = "depthwise_conv2d_nchw.cuda", .gpu = true, .define = define_cuda, .build = build_cuda},
};

const ob_op_def ob_op_depthwise_conv2d = {
    .name = "depthwise_conv2d",
    .attrs = k_attrs,
    .defaults = k_defaults,
    .nattrs = 14,
    .epilogue_ok = true,
    .validate = validate,
    .key = key,
    .flops = flops,
    .reduce_len = reduce_len,
    .args = args,
    .reference = reference,
    .tmpls = k_tmpls,
    .ntmpls = (int)(sizeof k_tmpls / sizeof k_tmpls[0]),
};
