/* conv2d.c: 2-D convolution, NCHW, float32, with stride, asymmetric
 * padding, dilation and a fused epilogue. Template conv2d_nchw.x86 is a
 * direct convolution register-blocked over (output channels x output rows x
 * output columns), the output-column block vectorized, accumulated in a
 * local tile (cache_write or the conv stage itself under an epilogue) that
 * is computed at the output tile; padding is materialized or inlined. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

static const char *const k_attrs[] = {"N",        "C",        "H",     "W",     "K",     "R",
                                      "S",        "stride_h", "stride_w", "pad_t", "pad_l", "pad_b",
                                      "pad_r",    "dil_h",    "dil_w", "groups"};
static const int64_t k_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED,
                                     OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED,
                                     1, 1, 0, 0, 0, 0, 1, 1, 1};

typedef ob_conv_geom conv_p;

static conv_p params(const ob_workload *wl) { return ob_conv2d_geom(wl); }

ob_conv_geom ob_conv2d_geom(const ob_workload *wl) {
  conv_p p;
  p.n = ob_workload_get(wl, "N");
  p.c = ob_workload_get(wl, "C");
  p.h = ob_workload_get(wl, "H");
  p.w = ob_workload_get(wl, "W");
  p.k = ob_workload_get(wl, "K");
  p.r = ob_workload_get(wl, "R");
  p.s = ob_workload_get(wl, "S");
  p.sh = ob_workload_get(wl, "stride_h");
  p.sw = ob_workload_get(wl, "stride_w");
  p.pt = ob_workload_get(wl, "pad_t");
  p.pl = ob_workload_get(wl, "pad_l");
  p.pb = ob_workload_get(wl, "pad_b");
  p.pr = ob_workload_get(wl, "pad_r");
  p.dh = ob_workload_get(wl, "dil_h");
  p.dw = ob_workload_get(wl, "dil_w");
  p.g = ob_workload_get(wl, "groups");
  p.oh = ob_window_out(p.h, p.pt, p.pb, p.dh, p.r, p.sh);
  p.ow = ob_window_out(p.w, p.pl, p.pr, p.dw, p.s, p.sw);
  return p;
}

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  conv_p p = params(wl);
  const char *pos[] = {"N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "dil_h", "dil_w"};
  for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
    if (ob_workload_get(wl, pos[i]) < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "conv2d: %s must be >= 1 (got %lld)", pos[i],
                     (long long)ob_workload_get(wl, pos[i]));
  const char *pads[] = {"pad_t", "pad_l", "pad_b", "pad_r"};
  for (int i = 0; i < 4; i++)
    if (ob_workload_get(wl, pads[i]) < 0)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "conv2d: %s must be >= 0", pads[i]);
  if (p.g < 1 || p.c % p.g || p.k % p.g)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "conv2d: groups=%lld must divide C=%lld and K=%lld",
                   (long long)p.g, (long long)p.c, (long long)p.k);
  if (p.oh < 1 || p.ow < 1)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "conv2d: empty output: the kernel %lldx%lld (dilation %lld,%lld) is larger than "
                   "the padded input %lldx%lld",
                   (long long)p.r, (long long)p.s, (long long)p.dh, (long long)p.dw,
                   (long long)(p.h + p.pt + p.pb), (long long)(p.w + p.pl + p.pr));
  return ob_conv_check_sizes(ctx, "conv2d", &p);
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  conv_p p = params(wl);
  snprintf(out, cap, "conv2d_nchw/%s/N%lldC%lldH%lldW%lld/K%lldR%lldS%lld/s%lld,%lld/p%lld,%lld,%lld,%lld/d%lld,%lld/g%lld",
           ob_dtype_name(wl->dtype)[0] == 'f' ? "f32" : ob_dtype_name(wl->dtype), (long long)p.n,
           (long long)p.c, (long long)p.h, (long long)p.w, (long long)p.k, (long long)p.r,
           (long long)p.s, (long long)p.sh, (long long)p.sw, (long long)p.pt, (long long)p.pl,
           (long long)p.pb, (long long)p.pr, (long long)p.dh, (long long)p.dw, (long long)p.g);
}

static double flops(const ob_workload *wl) {
  conv_p p = params(wl);
  return 2.0 * (double)p.n * (double)p.k * (double)p.oh * (double)p.ow * (double)(p.c / p.g) *
         (double)p.r * (double)p.s;
}

static int64_t reduce_len(const ob_workload *wl) {
  conv_p p = params(wl);
  return OB_NUMEL(p.c / p.g, p.r, p.s);
}

static int args(const ob_workload *wl, ob_arg_info *out) {
  conv_p p = params(wl);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int n = 0;
  int64_t onumel = OB_NUMEL(p.n, p.k, p.oh, p.ow);
  out[n++] = (ob_arg_info){"data", OB_NUMEL(p.n, p.c, p.h, p.w), true};
  out[n++] = (ob_arg_info){"weight", OB_NUMEL(p.k, p.c / p.g, p.r, p.s), true};
  n += ob_epilogue_args(&e, p.k, onumel, out + n);
  out[n++] = (ob_arg_info){"output", onumel, false};
  return n;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  conv_p p = params(wl);
  ob_conv_ref(&p, wl->epilogue, bufs);
}

/* ---- compute declaration --------------------------------------------------- */
typedef struct conv_t {
  ob_tensor *data, *weight, *pad, *conv, *out;
  ob_tensor *mid[8];
  int nmid;
} conv_t;

static ob_status declare(ob_te *te, const ob_workload *wl, conv_t *c) {
  conv_p p = params(wl);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  memset(c, 0, sizeof *c);
  c->data = ob_te_placeholder(te, "data", 4, (int64_t[]){p.n, p.c, p.h, p.w}, OB_F32);
  int64_t cpg = p.c / p.g, kpg = p.k / p.g;
  c->weight = ob_te_placeholder(te, "weight", 4, (int64_t[]){p.k, cpg, p.r, p.s}, OB_F32);
  ob_tensor *src = ob_pad_spatial(te, c->data, 2, 3, p.pt, p.pl, p.pb, p.pr);
  if (src != c->data) c->pad = src;
  ob_ivar *n = ob_te_axis(te, "n", p.n), *k = ob_te_axis(te, "k", p.k);
  ob_ivar *y = ob_te_axis(te, "y", p.oh), *x = ob_te_axis(te, "x", p.ow);
  ob_ivar *rc = ob_te_reduce_axis(te, "rc", cpg), *ry = ob_te_reduce_axis(te, "ry", p.r);
  ob_ivar *rx = ob_te_reduce_axis(te, "rx", p.s);
  /* input channel of reduction step rc for output channel k (groups) */
  ob_expr *ic = ob_te_var(te, rc);
  if (p.g > 1)
    ic = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_bin(te, OB_DIV, ob_te_var(te, k), ob_te_int(te, kpg)), ob_te_int(te, cpg)), ic);
  ob_expr *iy = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, y), ob_te_int(te, p.sh)),
                          OB_TE_MUL(te, ob_te_var(te, ry), ob_te_int(te, p.dh)));
  ob_expr *ix = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, x), ob_te_int(te, p.sw)),
                          OB_TE_MUL(te, ob_te_var(te, rx), ob_te_int(te, p.dw)));
  ob_expr *a = ob_te_load(te, src, 4, (ob_expr *[]){ob_te_var(te, n), ic, iy, ix});
  ob_expr *b = ob_te_load(te, c->weight, 4,
                          (ob_expr *[]){ob_te_var(te, k), ob_te_var(te, rc), ob_te_var(te, ry),
                                        ob_te_var(te, rx)});
  c->conv = ob_te_compute(te, "conv", 4, (ob_ivar *[]){n, k, y, x},
                          ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, a, b), 3,
                                       (ob_ivar *[]){rc, ry, rx}));
  ob_epi_inputs ein;
  ob_epilogue_placeholders(te, &e, c->conv, 1, &ein);
  c->out = ob_epilogue_apply(te, &e, c->conv, 1, &ein, c->mid, &c->nmid);
  if (!c->data || !c->weight || !c->conv || !c->out) return OB_ERR_INVALID_ARG; /* ctx has why */
  return OB_OK;
}

/* ---- template conv2d_nchw.x86 --------------------------------------------- */
/* At most as many vector accumulators as the target has vector registers
 * (operands come from memory: broadcast weights, unaligned input rows). */
static bool regblock_ok(const ob_config *cfg, void *user) {
  const ob_target *tg = user;
  int64_t oc[2], oh[2], ow[2];
  ob_config_split(cfg, "tile_oc", oc);
  ob_config_split(cfg, "tile_oh", oh);
  ob_config_split(cfg, "tile_ow", ow);
  return oc[1] * oh[1] * ob_tmpl_vectors(tg, ow[1]) <= ob_tmpl_registers(tg);
}

static ob_status define_nchw(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  conv_p p = params(wl);
  int64_t lanes = ob_tmpl_lanes(tg);
  ob_status st;
  /* a register per output channel of the block at most; rows of up to two
   * vectors */
  st = ob_space_define_split(sp, "tile_oc", p.k, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = ob_tmpl_registers(tg)});
  if (!st) st = ob_space_define_split(sp, "tile_oh", p.oh, &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = 4});
  if (!st) st = ob_space_define_split(sp, "tile_ow", p.ow, &(ob_split_opts){.policy = OB_SPLIT_POWER2, .num_outputs = 2, .max_factor = 2 * lanes});
  if (!st) st = ob_space_define_split(sp, "tile_ic", p.c / p.g, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 64});
  if (!st) st = ob_space_define_knob(sp, "reduce_order", (int64_t[]){0, 1}, 2);
  if (!st) st = ob_space_define_knob(sp, "unroll_kw", (int64_t[]){0, 1}, 2);
  if (!st) st = ob_space_define_knob(sp, "unroll_oc", (int64_t[]){0, 1}, 2);
  bool padded = p.pt || p.pl || p.pb || p.pr;
  if (!st) st = ob_space_define_knob(sp, "pad_inline", (int64_t[]){0, 1, 2}, padded ? 3 : 1);
  if (st) return st;
  ob_space_set_filter(sp, regblock_ok, (void *)tg); /* read only */
  /* fallback: 8 output channels x one vector of columns (8 accumulators),
   * input channels in blocks of up to a vector's lanes, padding
   * materialized */
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_oc", (int64_t[]){8}, 1);
  ob_config_set_split(&c, "tile_oh", (int64_t[]){1}, 1);
  ob_config_set_split(&c, "tile_ow", (int64_t[]){lanes}, 1);
  ob_config_set_split(&c, "tile_ic", (int64_t[]){lanes}, 1);
  ob_config_set_knob(&c, "reduce_order", 0);
  ob_config_set_knob(&c, "unroll_kw", 1);
  ob_config_set_knob(&c, "unroll_oc", 1);
  ob_config_set_knob(&c, "pad_inline", 2);
  *dflt = c;
  return OB_OK;
}

static ob_status build_nchw(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  conv_t c;
  ob_status st = declare(te, wl, &c);
  if (st) return st;
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &c.out, &s);
  if (st) return st;
  int64_t oc[2], oh[2], ow[2], ic[2];
  ob_config_split(cfg, "tile_oc", oc);
  ob_config_split(cfg, "tile_oh", oh);
  ob_config_split(cfg, "tile_ow", ow);
  ob_config_split(cfg, "tile_ic", ic);
  int64_t order = ob_config_knob(cfg, "reduce_order");
  bool ukw = ob_config_knob(cfg, "unroll_kw"), uoc = ob_config_knob(cfg, "unroll_oc");
  int64_t pad_inline = ob_config_knob(cfg, "pad_inline");

  ob_stage *so = ob_sched_stage(s, c.out), *sacc = ob_sched_stage(s, c.conv);
  for (int i = 0; i < c.nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, c.mid[i]));
  if (!st && c.out == c.conv) st = ob_sched_cache_write(s, so, &sacc);
  if (!st && c.pad && pad_inline) st = ob_sched_compute_inline(s, ob_sched_stage(s, c.pad));
  if (!st && c.pad && pad_inline == 2) st = ob_sched_skip_padding(s, sacc);

  ob_ivar *ko, *ki, *yo, *yi, *xo, *xi, *f1, *f2;
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 1), oc[1], &ko, &ki);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 2), oh[1], &yo, &yi);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 3), ow[1], &xo, &xi);
  if (!st) st = ob_sched_reorder(s, so, 7, (ob_ivar *[]){ob_stage_axis(so, 0), ko, yo, xo, ki, yi, xi});
  if (!st) st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), ko, &f1);
  if (!st) st = ob_sched_fuse(s, so, f1, yo, &f2);
  if (!st) st = ob_sched_parallel(s, so, f2);
  if (!st && ow[1] > 1) st = ob_sched_vectorize(s, so, xi);
  if (!st) st = ob_sched_unroll(s, so, ki); /* the tile stays in registers */
  if (!st) st = ob_sched_unroll(s, so, yi);
  if (!st) st = ob_sched_compute_at(s, sacc, so, xo);

  ob_ivar *rco, *rci;
  if (!st) st = ob_sched_split(s, sacc, ob_stage_reduce_axis(sacc, 0), ic[1], &rco, &rci);
  ob_ivar *ry = ob_stage_reduce_axis(sacc, 1), *rx = ob_stage_reduce_axis(sacc, 2);
  ob_ivar *an = ob_stage_axis(sacc, 0), *ak = ob_stage_axis(sacc, 1), *ay = ob_stage_axis(sacc, 2),
          *ax = ob_stage_axis(sacc, 3);
  if (!st) {
    ob_ivar *ord0[] = {an, rco, ry, rx, rci, ak, ay, ax};
    ob_ivar *ord1[] = {an, rco, rci, ry, rx, ak, ay, ax};
    st = ob_sched_reorder(s, sacc, 8, order ? ord1 : ord0);
  }
  if (!st && ow[1] > 1) st = ob_sched_vectorize(s, sacc, ax);
  if (!st && uoc) st = ob_sched_unroll(s, sacc, ak);
  if (!st) st = ob_sched_unroll(s, sacc, ay);
  if (!st && ukw) st = ob_sched_unroll(s, sacc, rx);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

/* ---- template conv2d_NCHWc.x86 ---------------------------------------------
 * AutoTVM's conv2d_NCHWc: data in NCHW[ic_bn]c, weights pre-packed as
 * OIHW[ic_bn]i[oc_bn]o, output in NCHW[oc_bn]c (layout transforms happen
 * outside the kernel, as in a graph kept in the blocked layout). The hot loop
 * broadcasts one input element into an FMA with one weight vector of oc_bn
 * lanes, for a register block of ow_bn (x oh_bn) output columns. */
static void nchwc_blocks(const ob_config *cfg, int64_t *icb, int64_t *ocb) {
  int64_t ic[2], oc[2];
  ob_config_split(cfg, "tile_ic", ic);
  ob_config_split(cfg, "tile_oc", oc);
  *icb = ic[1];
  *ocb = oc[1];
}

/* The register block (columns x rows x vectors of output channels) within
 * the target's accumulator budget, and with the block's weight vectors and
 * the broadcast input in registers too (ob_tmpl_block_fits). */
static bool nchwc_ok(const ob_config *cfg, void *user) {
  const ob_target *tg = user;
  int64_t oc[2], oh[2], ow[2];
  ob_config_split(cfg, "tile_oc", oc);
  ob_config_split(cfg, "tile_oh", oh);
  ob_config_split(cfg, "tile_ow", ow);
  /* a padding inlined as a select (pad_inline 1) costs a test per
   * multiply-add that skipping it (2) does not: never the better one */
  if (ob_config_knob(cfg, "pad_inline") == 1) return false;
  /* weights-stationary needs a whole row per register tile (build_nchwc)
   * and a thread per output-channel block, which rows outside are not */
  if (ob_config_knob(cfg, "stationary") && (ow[0] != 1 || oh[1] != 1 || ob_config_knob(cfg, "rows_outer")))
    return false;
  /* a pixel block is tile_ow pixels of one row-major run: no row block,
   * and the blocks run inside the channel blocks */
  if (ob_config_knob(cfg, "pixels") && (oh[1] != 1 || ob_config_knob(cfg, "rows_outer"))) return false;
  /* a K-chunked order runs over pixel blocks, with its own thread split */
  if (ob_config_knob(cfg, "k_chunk") && (!ob_config_knob(cfg, "pixels") || ob_config_knob(cfg, "stationary")))
    return false;
  /* a group of output-channel blocks in one register tile: whole groups
   * (oc[0] is the blocks per convolution group), not with the orders that
   * own one block per thread or per task */
  int64_t grp = ob_config_knob(cfg, "oc_group");
  if (grp > 1 && (oc[0] % grp || ob_config_knob(cfg, "k_chunk") || ob_config_knob(cfg, "stationary"))) return false;
  return ob_tmpl_block_fits(tg, ow[1] * oh[1], grp * ob_tmpl_vectors(tg, oc[1]));
}

/* The padded weights and output of blocks of b output channels stay within
 * the tensor limits that validate checked for the unpadded ones. */
static bool padded_fits(const conv_p *p, int64_t b) {
  int64_t kp = (p->k + b - 1) / b * b, w, o;
  return ob_mul_i64(kp, p->c / p->g, &w) && ob_mul_i64(w, p->r * p->s, &w) && w <= OB_MAX_TENSOR_ELEMS &&
         ob_mul_i64(p->n, kp, &o) && ob_mul_i64(o, p->oh * p->ow, &o) && o <= OB_MAX_TENSOR_ELEMS &&
         (uint64_t)o * 4 <= OB_MAX_BUFFER_BYTES && (uint64_t)w * 4 <= OB_MAX_BUFFER_BYTES;
}

/* Weights-stationary order (knob "stationary"): windows larger than 1x1
 * whose weights outgrow the L2. In a model the layers before evict them, and
 * the usual order (each row tile reduces over all input channels) then
 * streams an output-channel block's weights from memory once per row tile.
 * Stationary, one thread computes a whole output-channel block: for each
 * input-channel chunk it runs every row while that chunk's weights (a few
 * KB) stay in L1, keeping the partial sums in a block-sized buffer, and
 * fetches the next block's weights in small parts meanwhile. Measured
 * (quiet, 5 rounds): 512x7->512 3x3 flushed 1.93 -> 1.44 ms, warm 1.27 ->
 * 1.29; 256x14->512 3x3/2 flushed 1.08 -> 0.83, warm unchanged. */
static bool stationary_fits(const conv_p *p, const ob_target *tg) {
  const ob_target_facts *f = ob_target_get_facts(tg);
  double bytes = 4.0 * (double)p->k * (double)(p->c / p->g) * (double)(p->r * p->s);
  return p->r * p->s > 1 && p->g == 1 && f->l2_bytes > 0 && bytes > (double)f->l2_bytes;
}

/* Rows outside the output-channel blocks (knob rows_outer): in the usual
 * order a thread runs all rows of one output-channel block, then the next,
 * and reads the whole input once per block; a 1x1 layer with a large image
 * and few weights (ResNet's 64x56 -> 128 1x1 stride 2: 32 KB of weights,
 * 800 KB of input) then streams the input from L3 once per block. Rows
 * outside keep a row's input in L1 while every block's weights pass by. A
 * choice only where there are several blocks and rows. */
static bool occ_rows_useful(const conv_p *p) { return p->k > 16 && p->oh > 1; }

/* Register blocks over pixels (knob pixels): a 1x1 window without padding
 * reads one input pixel per output pixel, so a block of w consecutive
 * output pixels in row-major order may cross a row: the image is one run
 * of OH x OW pixels cut in blocks of w with one tail at its end, instead
 * of OH runs of OW with a tail each (a 7x7 output in blocks of 6: 8 full
 * blocks and 1 pixel, not 7 blocks of 6 and 7 single pixels). The input
 * offsets of a block's pixels are computed once per block, outside the
 * reduction. */
static bool unpadded_1x1(const conv_p *p) { return p->r == 1 && p->s == 1 && !(p->pt || p->pl || p->pb || p->pr); }
static bool pixels_useful(const conv_p *p) { return unpadded_1x1(p) && p->oh > 1; }

/* The strided input gathered once (knob compact): a 1x1 window at stride 2
 * reads every other pixel of every other row, and each output-channel
 * block reads all of them again; the cache lines it loads are half unused
 * and the rows it skips still sit between them. Gathered first into an
 * N x C/icb x OH x OW x icb buffer (a quarter of the input), the blocks
 * read it densely (oneDNN's "reduce to unit stride" for its 1x1 kernels):
 * ResNet-50's 1024x14 -> 2048 1x1/2 reads 200 KB per block instead of
 * 400 KB of lines, which with the block's weights no longer overflows a
 * 512 KB L2. */
static bool compact_useful(const conv_p *p) { return unpadded_1x1(p) && (p->sh > 1 || p->sw > 1); }

/* The values of knob k_chunk: 0 (none), then the powers of two from 64 to
 * 512 that divide C and are less, for 1x1 windows without padding over
 * pixels and without groups; their count. */
static int chunk_values(const conv_p *p, int64_t *out) {
  int n = 0;
  out[n++] = 0;
  if (pixels_useful(p) && p->g == 1)
    for (int64_t kc = 64; kc <= 512; kc *= 2)
      if (p->c % kc == 0 && p->c > kc) out[n++] = kc;
  return n;
}

/* Output-channel blocks per task of the K-chunked order (knob k_chunk):
 * the largest divisor of the block count whose partial sums (the group's
 * blocks over every pixel) take at most an eighth of the L2, leaving at
 * least 4 tasks (two per core of two) where there are that many blocks. */
static int64_t k_group(const conv_p *p, const ob_target *tg, int64_t occ, int64_t ocb) {
  int64_t l2 = ob_target_get_facts(tg)->l2_bytes;
  double cap = (l2 > 0 ? (double)l2 : 512.0 * 1024) / 8;
  double blk = 4.0 * (double)(p->n * p->oh * p->ow * ocb);
  int64_t best = 1;
  for (int64_t g = 1; g <= occ; g++)
    if (occ % g == 0 && (double)g * blk <= cap && (occ / g >= 4 || g == 1)) best = g;
  return best;
}

/* The default input-channel chunk (knob k_chunk) for blocks of ocb output
 * channels, 0 for none: a stride-1 1x1 layer whose input and one block's
 * weights overflow the L2 re-reads the input from L3 once per block (a
 * "reduce" layer: ResNet-50's 2048x7 -> 512 reads 400 KB per block, and
 * a block's 128 KB of weights evict it). In chunks, a chunk's input passes
 * a group of blocks while it stays in the L2. The chunk: the largest
 * offered whose input takes at most a quarter of the L2 and whose weights
 * of a block at most half the L1 (the smallest, 64, if none does). A
 * group of one block gains too: the chunk's weights stay in L1 while the
 * pixels pass (512x28 -> 128, 256x56 -> 64). Measured on a Zen 3 core (512
 * KB L2, 32 KB L1; interleaved, fastest of 3-4), against the defaults
 * before (rows outside, or rows with 6 x 2-vector blocks): 2048x7 -> 512
 * 37-49 -> 68 GFLOPS (chunks of 256), 1024x14 -> 256 51-59 -> 84 (128),
 * 512x28 -> 128 64 -> 84 (64), 256x56 -> 64 62 -> 82 (64); 128x28 -> 512,
 * whose input stays in the L2, 66-68 either way. */
static int64_t chunk_default(const conv_p *p, const ob_target *tg, int64_t ocb) {
  const ob_target_facts *f = ob_target_get_facts(tg);
  int64_t kcs[8];
  int n = chunk_values(p, kcs);
  if (n < 2 || p->sh > 1 || p->sw > 1 || f->l2_bytes <= 0 || f->l1d_bytes <= 0) return 0;
  double px = (double)(p->n * p->oh * p->ow);
  double in = 4.0 * (double)p->c * px, slice = 4.0 * (double)p->c * (double)ocb;
  if (in + slice <= 0.9 * (double)f->l2_bytes) return 0;
  int64_t kc = kcs[1];
  for (int i = 2; i < n; i++)
    if (4.0 * (double)kcs[i] * px <= f->l2_bytes / 4.0 && 4.0 * (double)(kcs[i] * ocb) <= f->l1d_bytes / 2.0)
      kc = kcs[i];
  return kc;
}

static ob_status define_nchwc(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  conv_p p = params(wl);
  int64_t lanes = ob_tmpl_lanes(tg), budget = ob_tmpl_budget(tg);
  /* output-channel blocks of half a vector, one or two vectors; they never
   * straddle groups. Without groups a block need not divide K: the last
   * block is padded (zero weights, its extra outputs dropped by unpack), so
   * odd channel counts keep whole vectors (K = 23: blocks of 8, 16 or 32;
   * the FMAs of one 16-lane block do 23/32 useful work, scalar ones 1/16). */
  int64_t occ[4];
  int nocc = 0;
  for (int64_t b = lanes / 2; b <= 2 * lanes; b *= 2)
    if (b > 1 && ((p.k / p.g) % b == 0 || (p.g == 1 && b < 2 * p.k && padded_fits(&p, b)))) occ[nocc++] = b;
  if (!nocc) occ[nocc++] = 1; /* grouped odd channel counts: still correct, one lane */
  int64_t ocand[8];
  for (int i = 0; i < nocc; i++) {
    ocand[2 * i] = -1;
    ocand[2 * i + 1] = occ[i];
  }
  ob_status st = ob_space_define_split(sp, "tile_ic", p.c / p.g, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 64});
  if (!st) st = ob_space_define_split(sp, "tile_oc", p.k / p.g, &(ob_split_opts){.policy = OB_SPLIT_CANDIDATE, .num_outputs = 2, .candidates = ocand, .ncandidates = nocc});
  /* Added since records were stored: for 1 to 4 vectors of output
   * channels, the widest column block whose accumulators, weight vectors
   * and broadcast fit the registers (AVX2's 6 x 2 vectors: BLIS's 6x16
   * Haswell sgemm block), which the divisors and powers of two can miss. */
  int64_t owadd[8];
  int nowadd = 0;
  for (int64_t v = 1; v <= 4; v++) {
    int64_t w = ob_tmpl_widest_block(tg, v);
    if (w >= 1 && w <= p.ow) {
      owadd[2 * nowadd] = -1;
      owadd[2 * nowadd + 1] = w;
      nowadd++;
    }
  }
  if (!st) st = ob_space_define_split(sp, "tile_ow", p.ow, &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = budget, .added = owadd, .nadded = nowadd});
  if (!st) st = ob_space_define_split(sp, "tile_oh", p.oh, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 2});
  if (!st) st = ob_space_define_knob(sp, "unroll_kw", (int64_t[]){0, 1}, 2);
  if (!st) st = ob_space_define_knob(sp, "reduce_order", (int64_t[]){0, 1}, 2);
  bool padded = p.pt || p.pl || p.pb || p.pr;
  if (!st) st = ob_space_define_knob(sp, "pad_inline", (int64_t[]){0, 1, 2}, padded ? 3 : 1);
  bool big = stationary_fits(&p, tg);
  if (!st) st = ob_space_define_knob_added(sp, "stationary", (int64_t[]){0, 1}, big ? 2 : 1);
  /* rows_outer 1: the parallel loop runs over rows, each row over every
   * output-channel block (see build_nchwc) */
  if (!st) st = ob_space_define_knob_added(sp, "rows_outer", (int64_t[]){0, 1}, occ_rows_useful(&p) ? 2 : 1);
  /* pixels 1: register blocks over the image's pixels in row-major order
   * (1x1 windows; see build_nchwc) */
  if (!st) st = ob_space_define_knob_added(sp, "pixels", (int64_t[]){0, 1}, pixels_useful(&p) ? 2 : 1);
  /* compact 1: a 1x1 strided window's input gathered densely first */
  if (!st) st = ob_space_define_knob_added(sp, "compact", (int64_t[]){0, 1}, compact_useful(&p) ? 2 : 1);
  /* k_chunk C: input channels in chunks of C, each chunk's input passing
   * every output-channel block of a thread's group (see build_nchwc) */
  int64_t kcs[8];
  int nkc = chunk_values(&p, kcs);
  if (!st) st = ob_space_define_knob_added(sp, "k_chunk", kcs, nkc);
  /* oc_group G: the register tile spans G consecutive output-channel
   * blocks (G x tile_oc channels, the output still in NCHW[tile_oc]c), as
   * oneDNN's 1x1 kernels span up to three 8-channel blocks: 24 channels
   * (MobileNet-V2's projections to 24) in 3 x 8 lanes by 4 columns, which
   * no single block width gives */
  if (!st) st = ob_space_define_knob_added(sp, "oc_group", (int64_t[]){1, 2, 3, 4}, 4);
  if (st) return st;
  ob_space_set_filter(sp, nchwc_ok, (void *)tg); /* read only */
  /* fallback as AutoTVM's: a vector of output channels, a register block of
   * up to 14 columns (within the accumulator budget) that divides the output
   * width, ic_bn up to a vector's lanes */
  int64_t owb = 1, most = budget < 14 ? budget : 14;
  /* two vectors of output channels where they divide K, or where the last
   * block's padding wastes at most 1/32 of the work: squeezenet's 1000-way
   * 1x1 classifier (512x13x13) ran in 8-channel blocks at 52-68 GFLOPS, the
   * load ports' pace of 13 x 1 vectors, against 77-80 in padded 16-channel
   * blocks over pixels (a Zen 3 core, interleaved, fastest of 5 and of 6) */
  bool k2 = p.k % (2 * lanes) == 0 ||
            (p.g == 1 && padded_fits(&p, 2 * lanes) && (2 * lanes - p.k % (2 * lanes)) * 32 <= p.k);
  int64_t w2 = ob_tmpl_widest_block(tg, 2); /* the widest 2-vector block: 6 with 16 registers */
  for (int64_t b = most; b >= 1; b--)
    if (p.ow % b == 0) {
      owb = b;
      break;
    }
  if (owb < 4 && p.ow >= 8) owb = most < 8 ? most : 8; /* prime widths: a tail beats 1-wide blocks */
  /* few columns (7x7 outputs): two vectors of output channels, so that
   * the block still has enough independent accumulators to hide the
   * multiply-add's latency */
  int64_t ocb = lanes;
  if (owb * 2 <= most && k2 && ob_tmpl_block_fits(tg, owb, 2)) ocb = 2 * lanes;
  /* few input channels (an image's 3, below a vector): the reduction is
   * the window's taps, each a broadcast of one input; with one vector of
   * output channels every broadcast feeds one multiply-add and the loads,
   * not the FMAs, bound the block (the 7x7 stride-2 stem: 150-165 GFLOPS
   * with 14 x 1 vectors, 176 with 8 x 2 on a 175 GFLOPS core). Two vectors,
   * and the widest block that divides the width within half the registers */
  int64_t half = ob_tmpl_registers(tg) / 2;
  if (p.c / p.g < lanes / 2 && ocb == lanes && k2) {
    for (int64_t b = half / 2; b >= 4; b--)
      if (p.ow % b == 0 && ob_tmpl_block_fits(tg, b, 2)) {
        owb = b;
        ocb = 2 * lanes;
        break;
      }
  }
  /* strided windows (the 3x3 stride-2 layers): two vectors of output
   * channels over half the columns. A block of w columns and v vectors
   * loads w broadcasts and v weight vectors per w*v multiply-adds: 14 x 1
   * is 15 loads per 14, at the two loads a cycle as slow as the FMAs, and
   * under a stride the broadcasts spread over twice the cache lines; 7 x 2
   * is 9 loads per 14. Measured (ResNet-18, one core): 28x28 C=128 K=256
   * stride 2 from 164 to 175-182 GFLOPS, 56x56 C=64 K=128 from 171 to
   * 175-177. */
  if ((p.sh > 1 || p.sw > 1) && p.r * p.s > 1 && p.c / p.g >= lanes && ocb == lanes && p.g == 1 && k2) {
    for (int64_t b = most / 2; b >= 4; b--)
      if (p.ow % b == 0 && ob_tmpl_block_fits(tg, b, 2)) {
        owb = b;
        ocb = 2 * lanes;
        break;
      }
  }
  /* stride-1 windows over a vector of input channels or more (ResNet's 3x3
   * layers): by the same count, 14 x 1 is 15 loads per 14 multiply-adds,
   * and the load ports, not the FMAs, set the pace (168-176 GFLOPS on
   * 56x56, 28x28 and 14x14, one core, quiet). Two rows of the 7-column,
   * 2-vector block (28 accumulators) load 16 per 28: 175-183 on the same
   * layers. An odd number of rows (7x7) keeps one row, with the window's
   * columns unrolled inside the channel loop (reduce_order 1): 7x7x512 from
   * 102-168 to 179-185 GFLOPS in the same runs. */
  int64_t ohb = 1;
  bool row_first = false;
  if (p.sh == 1 && p.sw == 1 && p.r * p.s > 1 && p.c / p.g >= lanes && p.g == 1 && k2) {
    int64_t rows = p.oh % 2 == 0 ? 2 : 1;
    for (int64_t b = most / 2; b >= 4; b--)
      if (p.ow % b == 0 && ob_tmpl_block_fits(tg, b * rows, 2)) {
        owb = b;
        ocb = 2 * lanes;
        ohb = rows;
        row_first = rows == 1;
        break;
      }
  }
  /* 16 registers (AVX2): the rules above fill the accumulator budget, but
   * 14 x 1 vectors loads 15 times per 14 multiply-adds and 7 x 2 does not
   * fit. The 6 x 2-vector block (BLIS's 6x16 Haswell sgemm block: 8 loads
   * per 12) runs at the FMA limit where the output is wide enough for the
   * column tail to matter little. Measured on a Zen 3 core (92 GFLOPS peak;
   * interleaved, fastest of 3): ResNet-18's 3x3 stride-1 layers 76-80 -> 85-88
   * GFLOPS at 56x56 and 28x28, 44 -> 67 at 14x14; stride 2 51 -> 70-81;
   * 1x1 stride 2 40-48 -> 63-67. Below 12 columns (7x7) the rules above
   * stand (the stationary row: 72 against 47 for 6 x 2). */
  if (ob_tmpl_registers(tg) <= 16 && p.ow >= 12 && p.g == 1 && p.c >= lanes && k2) {
    owb = w2;
    ocb = 2 * lanes;
    ohb = 1;
    row_first = false;
  }
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_ic", (int64_t[]){lanes}, 1);
  ob_config_set_split(&c, "tile_oc", (int64_t[]){ocb}, 1);
  ob_config_set_split(&c, "tile_ow", (int64_t[]){owb}, 1);
  ob_config_set_split(&c, "tile_oh", (int64_t[]){ohb}, 1);
  /* few input channels (an image's 3): the window's loops inside the
   * channel loop, unrolled, so the innermost loop is not 3 trips long */
  int64_t icb[2];
  ob_config_split(&c, "tile_ic", icb);
  bool few = icb[1] < 8 && p.r * p.s > icb[1];
  ob_config_set_knob(&c, "unroll_kw", few || row_first);
  ob_config_set_knob(&c, "reduce_order", few || row_first);
  ob_config_set_knob(&c, "pad_inline", 2);
  /* 16 registers, few input channels (an image's 3): the window unrolled
   * inside the channel loop lets GCC share the broadcasts of the columns'
   * overlapping taps across the unrolled body, and with 16 registers it
   * spills the accumulators around them; the plain layout (blocks of one
   * channel), the window's columns a loop, and the 6 x 2-vector block: the
   * 7x7 stride-2 stem on a Zen 3 core 67-71 -> 77-78 GFLOPS (interleaved,
   * fastest of 6) */
  if (ob_tmpl_registers(tg) <= 16 && p.c / p.g < lanes && p.g == 1 && p.ow >= 12 && k2 &&
      p.r * p.s > 1) {
    ob_config_set_split(&c, "tile_ic", (int64_t[]){1}, 1);
    ob_config_set_split(&c, "tile_oc", (int64_t[]){2 * lanes}, 1);
    ob_config_set_split(&c, "tile_ow", (int64_t[]){w2}, 1);
    ob_config_set_split(&c, "tile_oh", (int64_t[]){1}, 1);
    ob_config_set_knob(&c, "unroll_kw", 0);
    ob_config_set_knob(&c, "reduce_order", 1);
  }
  /* a model's large 3x3 layers run with their weights evicted: stationary
   * by default where the register tile is a whole row (7x7 outputs) */
  ob_config_set_knob(&c, "stationary", big && owb == p.ow && ohb == 1);
  /* rows outside the channel blocks where the input outgrows half the L2
   * and the weights do not: each block would stream the input from L3
   * again. Measured on a Zen 3 core (512 KB L2; interleaved, fastest of 3):
   * ResNet-18's 64x56 -> 128 1x1/2 54 -> 79 GFLOPS, 128x28 -> 256 1x1/2
   * 53 -> 78, 64x56 -> 64 3x3 67 -> 71; 256x14 -> 512 1x1/2 (512 KB of
   * weights) 66 -> 43, where it stays off. A one-row window under a
   * vertical stride reads only every sh-th input row: 128x28 -> 256 1x1/2
   * reads 200 of its 400 KB, stays in the L2, and runs 66-78 -> 83 GFLOPS
   * over pixels (below) instead. */
  const ob_target_facts *tf = ob_target_get_facts(tg);
  double wbytes = 4.0 * (double)p.k * (double)(p.c / p.g) * (double)(p.r * p.s);
  double ibytes = 4.0 * (double)p.n * (double)p.c * (double)p.h * (double)p.w;
  if (p.r == 1 && p.sh > 1) ibytes /= (double)p.sh;
  bool rows = occ_rows_useful(&p) && !ob_config_knob(&c, "stationary") && tf->l2_bytes > 0 &&
              wbytes <= tf->l2_bytes / 2.0 && ibytes > tf->l2_bytes / 2.0;
  ob_config_set_knob(&c, "rows_outer", rows);
  /* a strided 1x1 window's input gathered densely first where rows stay
   * inside (with rows outside, a row's input is in L1 already). Measured on
   * a Zen 3 core (interleaved, fastest of 4): ResNet-50's 1024x14 -> 2048
   * 1x1/2 39 -> 70 GFLOPS (over pixels, below), 512x28 -> 1024 56 -> 60;
   * ResNet-18's 128x28 -> 256 55 -> 69, 256x14 -> 512 64 -> 78; 64x56 -> 128,
   * rows outside, 66 against 60-64 gathered */
  bool gather = compact_useful(&p) && !rows;
  ob_config_set_knob(&c, "compact", gather);
  /* 16 registers, a 1x1 window whose rows the 6 x 2-vector block does not
   * divide, rows not outside: blocks over pixels, one tail per image.
   * Measured on a Zen 3 core (interleaved, fastest of 4): ResNet-18's
   * 256x14 -> 512 1x1/2 (7x7 out) 64 GFLOPS with 7 x 1 vector per row,
   * 80-83 over pixels; weights beyond the L2 too (with the prefetch of
   * build_nchwc): ResNet-50's 512x7 -> 2048 68 -> 84 warm, 65 -> 80
   * flushed, 1024x14 -> 2048 1x1/2 gathered 61 -> 70. Where chunk_default
   * chunks the input channels, over pixels even where the rows' block fits
   * (1024x14 -> 256) and instead of rows outside (512x28 -> 128). */
  int64_t kc = chunk_default(&p, tg, 2 * lanes);
  if (ob_tmpl_registers(tg) <= 16 && pixels_useful(&p) && (!rows || kc) && p.g == 1 && p.c >= lanes &&
      k2 && (p.ow % w2 || kc) && p.oh * p.ow >= 2 * w2) {
    ob_config_set_split(&c, "tile_oc", (int64_t[]){2 * lanes}, 1);
    ob_config_set_split(&c, "tile_ow", (int64_t[]){w2}, 1);
    ob_config_set_split(&c, "tile_oh", (int64_t[]){1}, 1);
    ob_config_set_knob(&c, "stationary", 0);
    ob_config_set_knob(&c, "rows_outer", 0);
    ob_config_set_knob(&c, "pixels", 1);
    ob_config_set_knob(&c, "k_chunk", kc);
  }
  /* 16 registers, a 1x1 window, K three vectors' multiple but not two's
   * (MobileNet-V2's projections to 24 channels): one vector alone loads
   * 15 times per 14 multiply-adds, 16-channel blocks pad 24 to 32; oneDNN's
   * 1x1 kernel spans three 8-channel blocks by 4 columns, 7 loads per 12.
   * So does oc_group 3. Measured on a Zen 3 core (interleaved, fastest of
   * 6): 144x56 -> 24 50-56 -> 64-68 GFLOPS, 96x56 -> 24 49-75 -> 66-83 */
  int64_t w3 = ob_tmpl_widest_block(tg, 3);
  if (ob_tmpl_registers(tg) <= 16 && unpadded_1x1(&p) && p.sh == 1 && p.sw == 1 && p.g == 1 && !k2 &&
      p.k % (3 * lanes) == 0 && w3 >= 4 && p.c >= lanes) {
    bool px = p.ow % w3 && pixels_useful(&p);
    ob_config_set_split(&c, "tile_oc", (int64_t[]){lanes}, 1);
    ob_config_set_split(&c, "tile_ow", (int64_t[]){w3}, 1);
    ob_config_set_split(&c, "tile_oh", (int64_t[]){1}, 1);
    ob_config_set_knob(&c, "stationary", 0);
    ob_config_set_knob(&c, "rows_outer", 0);
    ob_config_set_knob(&c, "pixels", px);
    ob_config_set_knob(&c, "k_chunk", 0);
    ob_config_set_knob(&c, "oc_group", 3);
  }
  *dflt = c;
  return OB_OK;
}

/* Output-channel blocks of the blocked layout: K / ocb, or one more padded
 * block when ocb does not divide K (no groups then). */
static int64_t nchwc_occ(const conv_p *p, int64_t ocb) { return (p->k + ocb - 1) / ocb; }

/* Pixels per chunk of the image for the parallel loop of the blocks over
 * pixels (knob pixels), where the tasks of (image, channel blocks) are
 * fewer than OB_CONV_MIN_TASKS; 0: no chunks. A chunk is a whole number
 * of pixel blocks (at least 4), so only the last chunk holds the image's
 * tail, and lowering runs that one after the parallel loop: hence many
 * chunks, 1 of 32 serial (chunks that divided the image would give every
 * chunk a tail block instead). Without chunks mobilenet-v2's
 * 32x112 -> 16 1x1 layer (one block of 16 channels) was one task: 91
 * GFLOPS at 1 thread and 92 at 2. */
#define OB_CONV_MIN_TASKS 32
static int64_t pixel_chunk(const conv_p *p, int64_t tasks, int64_t blk) {
  int64_t px = p->oh * p->ow, nblk = (px + blk - 1) / blk;
  if (tasks >= OB_CONV_MIN_TASKS || tasks < 1) return 0;
  int64_t want = (OB_CONV_MIN_TASKS + tasks - 1) / tasks, per = (nblk + want - 1) / want;
  if (per < 4) per = 4;
  return per < nblk ? per * blk : 0;
}

/* Reorders st as ord[0..n), with g (oc_group's blocks of a group; NULL:
 * none) moved, or put, just before the last axis (the vectorized channel
 * block): the group is the register tile's innermost unrolled loop. */
static ob_status reorder_grouped(ob_sched *s, ob_stage *st, int n, ob_ivar *const *ord, ob_ivar *g) {
  ob_ivar *o[12];
  int k = 0;
  OB_ASSERT(n < 12);
  for (int i = 0; i < n - 1; i++)
    if (ord[i] != g) o[k++] = ord[i];
  if (g) o[k++] = g;
  o[k++] = ord[n - 1];
  return ob_sched_reorder(s, st, k, o);
}

static ob_status build_nchwc(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  conv_p p = params(wl);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int64_t icb, ocb, ow[2], oh[2];
  nchwc_blocks(cfg, &icb, &ocb);
  ob_config_split(cfg, "tile_ow", ow);
  ob_config_split(cfg, "tile_oh", oh);
  bool ukw = ob_config_knob(cfg, "unroll_kw");
  int64_t pad_inline = ob_config_knob(cfg, "pad_inline");
  int64_t order = ob_config_knob(cfg, "reduce_order");
  bool rows = ob_config_knob(cfg, "rows_outer");
  bool pix = ob_config_knob(cfg, "pixels");
  bool stat = ob_config_knob(cfg, "stationary") && ow[1] >= p.ow && oh[1] == 1 && !rows;
  int64_t icc = p.c / icb, occ = nchwc_occ(&p, ocb);
  int64_t kc = pix && !stat ? ob_config_knob(cfg, "k_chunk") : 0, kgrp = 1;
  int64_t grp = kc || stat ? 1 : ob_config_knob(cfg, "oc_group"); /* blocks per register tile */
  if (kc) kgrp = k_group(&p, tg, occ, ocb);
  int64_t cpgb = p.c / p.g / icb, kpgb = p.k / p.g / ocb; /* channel blocks per group */

  ob_tensor *data = ob_te_placeholder(te, "data", 5, (int64_t[]){p.n, icc, p.h, p.w, icb}, OB_F32);
  ob_tensor *wt = ob_te_placeholder(te, "weight", 6, (int64_t[]){occ, cpgb, p.r, p.s, icb, ocb}, OB_F32);
  ob_tensor *src = ob_pad_spatial(te, data, 2, 3, p.pt, p.pl, p.pb, p.pr);
  ob_tensor *pad = src != data ? src : NULL;
  /* compact: the strided pixels gathered once (compact_useful), read at stride 1 */
  bool compact = ob_config_knob(cfg, "compact");
  int64_t sh = p.sh, sw = p.sw;
  ob_tensor *gather = NULL;
  if (compact) {
    ob_ivar *gx[5] = {ob_te_axis(te, "gn", p.n), ob_te_axis(te, "gc", icc), ob_te_axis(te, "gy", p.oh),
                      ob_te_axis(te, "gx", p.ow), ob_te_axis(te, "gb", icb)};
    ob_expr *gi[5] = {ob_te_var(te, gx[0]), ob_te_var(te, gx[1]), OB_TE_MUL(te, ob_te_var(te, gx[2]), ob_te_int(te, sh)),
                      OB_TE_MUL(te, ob_te_var(te, gx[3]), ob_te_int(te, sw)), ob_te_var(te, gx[4])};
    src = gather = ob_te_compute(te, "data_compact", 5, gx, ob_te_load(te, data, 5, gi));
    sh = sw = 1;
  }
  ob_ivar *n = ob_te_axis(te, "n", p.n), *oc = ob_te_axis(te, "occ", occ);
  ob_ivar *y = pix ? ob_te_axis(te, "px", p.oh * p.ow) : ob_te_axis(te, "y", p.oh);
  ob_ivar *x = pix ? NULL : ob_te_axis(te, "x", p.ow), *ob = ob_te_axis(te, "ocb", ocb);
  /* pixels: one axis over the image's pixels, row = px / OW, column = px % OW */
  ob_expr *vy = pix ? ob_te_bin(te, OB_DIV, ob_te_var(te, y), ob_te_int(te, p.ow)) : ob_te_var(te, y);
  ob_expr *vx = pix ? ob_te_bin(te, OB_MOD, ob_te_var(te, y), ob_te_int(te, p.ow)) : ob_te_var(te, x);
  ob_ivar *rco = ob_te_reduce_axis(te, "icc", cpgb), *rci = ob_te_reduce_axis(te, "icb", icb);
  ob_ivar *ry = ob_te_reduce_axis(te, "ry", p.r), *rx = ob_te_reduce_axis(te, "rx", p.s);
  ob_expr *iy = OB_TE_ADD(te, OB_TE_MUL(te, vy, ob_te_int(te, sh)),
                          OB_TE_MUL(te, ob_te_var(te, ry), ob_te_int(te, p.dh)));
  ob_expr *ix = OB_TE_ADD(te, OB_TE_MUL(te, vx, ob_te_int(te, sw)),
                          OB_TE_MUL(te, ob_te_var(te, rx), ob_te_int(te, p.dw)));
  ob_expr *icblk = ob_te_var(te, rco);
  if (p.g > 1)
    icblk = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_bin(te, OB_DIV, ob_te_var(te, oc), ob_te_int(te, kpgb)), ob_te_int(te, cpgb)), icblk);
  ob_expr *a = ob_te_load(te, src, 5, (ob_expr *[]){ob_te_var(te, n), icblk, iy, ix, ob_te_var(te, rci)});
  ob_expr *b = ob_te_load(te, wt, 6,
                          (ob_expr *[]){ob_te_var(te, oc), ob_te_var(te, rco), ob_te_var(te, ry),
                                        ob_te_var(te, rx), ob_te_var(te, rci), ob_te_var(te, ob)});
  ob_expr *red = ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, a, b), 4, (ob_ivar *[]){rco, rci, ry, rx});
  ob_tensor *conv = pix ? ob_te_compute(te, "conv", 4, (ob_ivar *[]){n, oc, y, ob}, red)
                        : ob_te_compute(te, "conv", 5, (ob_ivar *[]){n, oc, y, x, ob}, red);
  if (!data || !wt || !conv || (compact && !gather)) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders_n(te, &e, conv, occ * ocb, &ein); /* bias padded as the blocks */
  ob_tensor *mid[8];
  int nmid;
  int bd = pix ? 3 : 4; /* the channel block's axis */
  ob_tensor *o = ob_epilogue_apply_blocked(te, &e, conv, 1, bd, occ * ocb, &ein, mid, &nmid);

  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, o), *sacc = ob_sched_stage(s, conv);
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  if (!st && o == conv) st = ob_sched_cache_write(s, so, &sacc);
  if (!st && pad && pad_inline) st = ob_sched_compute_inline(s, ob_sched_stage(s, pad));
  if (!st && gather) { /* its own parallel loop over (n, channel blocks), before the convolution's */
    ob_stage *sg = ob_sched_stage(s, gather);
    ob_ivar *gf = NULL;
    st = ob_sched_fuse(s, sg, ob_stage_axis(sg, 0), ob_stage_axis(sg, 1), &gf);
    if (!st) st = ob_sched_parallel(s, sg, gf);
    if (!st && icb > 1) st = ob_sched_vectorize(s, sg, ob_stage_axis(sg, 4));
  }
  if (!st && pad && pad_inline == 2) st = ob_sched_skip_padding(s, sacc);
  ob_ivar *yo = NULL, *yi = NULL, *xo = NULL, *xi = NULL, *f1 = NULL, *f2 = NULL, *oci = NULL; /* oci: the blocks of a group */
  ob_ivar *on = ob_stage_axis(so, 0), *ooc = ob_stage_axis(so, 1), *oblk = ob_stage_axis(so, bd);
  /* k_chunk: a task is a group of output-channel blocks (k_group) over
   * every pixel, its sums in a buffer; for each chunk of input channels,
   * each block of the group, each pixel block: the chunk's reduction */
  if (kc) {
    ob_ivar *ooco = NULL, *ooci = NULL;
    if (!st) st = ob_sched_split(s, so, ooc, kgrp, &ooco, &ooci);
    if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 2), ow[1], &xo, &xi);
    if (!st) st = ob_sched_reorder(s, so, 6, (ob_ivar *[]){on, ooco, ooci, xo, xi, oblk});
    if (!st) st = ob_sched_fuse(s, so, on, ooco, &f1);
    f2 = f1;
  } else if (pix) { /* blocks of tile_ow pixels: xo runs them inside the parallel
              * loop over channel blocks (and chunks of the image where those
              * are few), so lowering peels the last one of each */
    int64_t chunk = pixel_chunk(&p, p.n * (occ / grp), ow[1]);
    ob_ivar *pc = NULL, *px = ob_stage_axis(so, 2), *ord[6];
    if (!st && grp > 1) st = ob_sched_split(s, so, ooc, grp, &ooc, &oci);
    if (!st && chunk) st = ob_sched_split(s, so, px, chunk, &pc, &px);
    if (!st) st = ob_sched_split(s, so, px, ow[1], &xo, &xi);
    int k = 0;
    ord[k++] = on;
    ord[k++] = ooc;
    if (pc) ord[k++] = pc;
    ord[k++] = xo;
    ord[k++] = xi;
    ord[k++] = oblk;
    if (!st) st = reorder_grouped(s, so, k, ord, oci);
    if (!st) st = ob_sched_fuse(s, so, on, ooc, &f1);
    if (!st && pc) st = ob_sched_fuse(s, so, f1, pc, &f1);
    f2 = f1;
  } else {
    if (!st && grp > 1) st = ob_sched_split(s, so, ooc, grp, &ooc, &oci);
    if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 2), oh[1], &yo, &yi);
    if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 3), ow[1], &xo, &xi);
    if (!st) st = reorder_grouped(s, so, 7, (ob_ivar *[]){on, rows ? yo : ooc, rows ? ooc : yo, xo, yi, xi, oblk}, oci);
    if (!st) st = ob_sched_fuse(s, so, on, rows ? yo : ooc, &f1);
    /* stationary: a thread owns whole output-channel blocks (see
     * stationary_fits), the partial sums of the block in a buffer */
    if (!st && !stat) st = ob_sched_fuse(s, so, f1, rows ? ooc : yo, &f2);
  }
  if (!st) st = ob_sched_parallel(s, so, stat ? f1 : f2);
  if (!st && ocb > 1) st = ob_sched_vectorize(s, so, oblk);
  if (!st) st = ob_sched_unroll(s, so, xi); /* the tile stays in registers */
  if (!st && yi) st = ob_sched_unroll(s, so, yi);
  if (!st && oci) st = ob_sched_unroll(s, so, oci);
  if (!st) st = ob_sched_compute_at(s, sacc, so, stat || kc ? f1 : xo);
  ob_ivar *an = ob_stage_axis(sacc, 0), *ak = ob_stage_axis(sacc, 1), *ay = ob_stage_axis(sacc, 2),
          *ax = pix ? NULL : ob_stage_axis(sacc, 3), *ab = ob_stage_axis(sacc, bd);
  ob_ivar *r0 = ob_stage_reduce_axis(sacc, 0), *r1 = ob_stage_reduce_axis(sacc, 1),
          *r2 = ob_stage_reduce_axis(sacc, 2), *r3 = ob_stage_reduce_axis(sacc, 3);
  if (!st && kc) { /* chunk, block of the group, pixel block, the chunk's channels */
    ob_ivar *r0o = NULL, *r0i = NULL, *ayo = NULL, *ayi = NULL;
    st = ob_sched_split(s, sacc, r0, kc / icb, &r0o, &r0i);
    if (!st) st = ob_sched_split(s, sacc, ay, ow[1], &ayo, &ayi);
    if (!st)
      st = ob_sched_reorder(s, sacc, 10, order ? (ob_ivar *[]){an, r0o, ak, ayo, r0i, r1, r2, r3, ayi, ab}
                                               : (ob_ivar *[]){an, r0o, ak, ayo, r0i, r2, r3, r1, ayi, ab});
    ay = ayi;
  } else if (!st && pix) { /* the pixels' axis is the register block's columns */
    st = reorder_grouped(s, sacc, 8, order ? (ob_ivar *[]){an, ak, r0, r1, r2, r3, ay, ab}
                                           : (ob_ivar *[]){an, ak, r0, r2, r3, r1, ay, ab}, grp > 1 ? ak : NULL);
  } else if (!st) {
    ob_ivar *ord0[] = {an, ak, r0, r2, r3, r1, ay, ax, ab}; /* icc, kh, kw, icb */
    ob_ivar *ord1[] = {an, ak, r0, r1, r2, r3, ay, ax, ab}; /* icc, icb, kh, kw */
    ob_ivar *ords[] = {an, ak, r0, ay, r1, r2, r3, ax, ab}; /* icc, rows, icb, kh, kw */
    st = reorder_grouped(s, sacc, 9, stat ? ords : order ? ord1 : ord0, grp > 1 ? ak : NULL);
  }
  if (!st && grp > 1) st = ob_sched_unroll(s, sacc, ak);
  if (grp > 1) ob_sched_pressure_sched(s); /* a group's weight vectors stay in registers */
  if (!st && ocb > 1) st = ob_sched_vectorize(s, sacc, ab);
  if (!st && ax) st = ob_sched_unroll(s, sacc, ax);
  if (!st && !stat) st = ob_sched_unroll(s, sacc, ay);
  if (!st && ukw) st = ob_sched_unroll(s, sacc, r3);
  /* not unrolled, and one input channel per block (an image's channels in
   * the plain layout): a column of the window is one broadcast per block
   * column, and GCC peeled the 3 columns of a 3x3 window whole, shared the
   * overlapping taps' broadcasts across them and spilled the accumulators
   * (MobileNet-V2's 3x3/2 stem, 6 x 2 vectors: 68 of 94 multiply-adds with
   * a memory operand, 53 stack moves). Kept a loop: 48 -> 57 GFLOPS on a
   * Zen 3 core (the kernel alone, interleaved, median of 8) */
  if (!st && !ukw && icb == 1 && p.s > 1) st = ob_sched_no_unroll(s, sacc, r3);
  /* A 1x1 layer whose weights outgrow the L2 (the 2048-channel layers of
   * ResNet-50 and Inception) streams each output-channel block's weights
   * from L3 or memory at its first row and stalls there: in a model, other
   * layers have evicted them. So the next block's weights are prefetched in
   * parts over this block's rows and input-channel chunks. Measured
   * (interleaved A/B, 6 rounds): 2048->512, 512->2048 at 7x7 and
   * 1024->2048/2 at 14x14 ran 26-35 % faster with flushed caches and
   * 5-6 % faster warm. Not for 3x3 windows in this order: there it gained 4 %
   * flushed and lost 6 % warm (512x7->512), and lost warm on 256x14->512/2;
   * those take the stationary order instead. In input-channel chunks
   * (k_chunk) a block's weights are read once per chunk, in parts that
   * pass every pixel block, and the hardware's stream prefetch suffices
   * (2048x7 -> 512 flushed: 36 GFLOPS with rows and the prefetch, 65 in
   * chunks without it). */
  const ob_target_facts *f = ob_target_get_facts(tg);
  int64_t slice = cpgb * p.r * p.s * icb * ocb; /* one output-channel block's weights */
  if (!st && !rows && !kc && grp == 1 && p.r == 1 && p.s == 1 && f->l2_bytes > 0 && 4.0 * (double)(occ * slice) > (double)f->l2_bytes)
    st = pix ? ob_sched_prefetch(s, sacc, wt, ob_stage_axis(so, 1), slice, 2, (ob_ivar *[]){xo, r0}, r0)
             : ob_sched_prefetch(s, sacc, wt, ob_stage_axis(so, 1), slice, 3, (ob_ivar *[]){yo, xo, r0}, r0);
  /* stationary: in parts of a few cache lines, at every input-channel step
   * (bursts of 3-18 KB per row cost more warm than they saved cold) */
  if (!st && stat) st = ob_sched_prefetch(s, sacc, wt, ob_stage_axis(so, 1), slice, 3, (ob_ivar *[]){r0, ay, r1}, r1);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

/* NCHW (c channels) <-> N (nb blocks) HW b, block by block and pixel by
 * pixel: the blocked side contiguous, the plain side's b rows in step (b
 * lines in L1), no division per element; channels past c (a padded last
 * block) are skipped (to_blocked: zeroed by the caller). The runtime
 * unpacks a padded output every run through this: squeezenet's 1000-way
 * classifier (169 K floats) took 0.30-0.34 ms with a division and a
 * modulo per element, 0.18-0.27 ms so. */
static void blocks_move(const float *restrict src, float *restrict dst, int64_t n, int64_t nb, int64_t b, int64_t c,
                        int64_t hw, bool to_blocked) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t kb = 0; kb < nb; kb++) {
      int64_t cb = c - kb * b < b ? c - kb * b : b, blk = (i * nb + kb) * hw * b, plain = (i * c + kb * b) * hw;
      if (to_blocked)
        for (int64_t x = 0; x < hw; x++)
          for (int64_t j = 0; j < cb; j++) dst[blk + x * b + j] = src[plain + j * hw + x];
      else
        for (int64_t x = 0; x < hw; x++)
          for (int64_t j = 0; j < cb; j++) dst[plain + j * hw + x] = src[blk + x * b + j];
    }
}

/* Layout moves between NCHW / KCRS and the blocked forms; the padding of a
 * last, partial output-channel block is zero (weights, bias, residual). */
static void nchwc_move(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst,
                       bool to_blocked) {
  conv_p p = params(wl);
  int64_t icb, ocb;
  nchwc_blocks(cfg, &icb, &ocb);
  int64_t kp = nchwc_occ(&p, ocb) * ocb;
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int bias_arg = ob_epilogue_has(&e, OB_EPI_BIAS) ? 2 : -1;
  if (arg == bias_arg) {
    memcpy(dst, src, sizeof(float) * (size_t)p.k);
    if (to_blocked) memset(dst + p.k, 0, sizeof(float) * (size_t)(kp - p.k));
    return;
  }
  if (to_blocked && arg != 0 && kp != p.k) {
    int64_t n = arg == 1 ? OB_NUMEL(kp, p.c / p.g, p.r, p.s) : OB_NUMEL(p.n, kp, p.oh, p.ow);
    memset(dst, 0, sizeof(float) * (size_t)n);
  }
  if (arg == 0) { /* data: NCHW <-> N C/icb H W icb */
    blocks_move(src, dst, p.n, p.c / icb, icb, p.c, p.h * p.w, to_blocked);
    return;
  }
  if (arg == 1) { /* weight: K (C/g) R S <-> K/ocb (C/g)/icb R S icb ocb */
    int64_t cpg = p.c / p.g;
    for (int64_t k = 0; k < p.k; k++)
      for (int64_t c = 0; c < cpg; c++)
        for (int64_t rs = 0; rs < p.r * p.s; rs++) {
          int64_t plain = (k * cpg + c) * p.r * p.s + rs;
          int64_t blk = (((k / ocb) * (cpg / icb) + c / icb) * p.r * p.s + rs) * icb * ocb + (c % icb) * ocb + k % ocb;
          if (to_blocked) dst[blk] = src[plain];
          else dst[plain] = src[blk];
        }
    return;
  }
  /* residual and output: NKHW <-> N K/ocb OH OW ocb */
  blocks_move(src, dst, p.n, kp / ocb, ocb, p.k, p.oh * p.ow, to_blocked);
}

static int64_t nchwc_arg_numel(const ob_workload *wl, const ob_config *cfg, int arg) {
  conv_p p = params(wl);
  int64_t icb, ocb;
  nchwc_blocks(cfg, &icb, &ocb);
  int64_t kp = nchwc_occ(&p, ocb) * ocb;
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  if (arg == 0) return ob_workload_arg_numel(wl, 0);
  if (arg == 1) return OB_NUMEL(kp, p.c / p.g, p.r, p.s);
  if (arg == 2 && ob_epilogue_has(&e, OB_EPI_BIAS)) return kp;
  return OB_NUMEL(p.n, kp, p.oh, p.ow); /* residual, output */
}

static void pack_nchwc(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  nchwc_move(wl, cfg, arg, src, dst, true);
}
static void unpack_nchwc(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  nchwc_move(wl, cfg, arg, src, dst, false);
}

/* data NCHW[icb]c, weights packed, bias plain, residual and output
 * NCHW[ocb]c: what a graph runtime keeps between convolutions. */
static ob_arg_layout layout_nchwc(const ob_workload *wl, const ob_config *cfg, int arg) {
  int64_t icb, ocb;
  nchwc_blocks(cfg, &icb, &ocb);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int bias_arg = ob_epilogue_has(&e, OB_EPI_BIAS) ? 2 : -1;
  if (arg == 0) return (ob_arg_layout){OB_ARGL_NCHWC, icb};
  /* a padded last output-channel block (K % ocb != 0) is not NCHW[ocb]c of K
   * channels: weights, bias, residual and output go through pack/unpack */
  if (arg == 1 || ob_workload_get(wl, "K") % ocb) return (ob_arg_layout){OB_ARGL_OPAQUE, 0};
  if (arg == bias_arg) return (ob_arg_layout){OB_ARGL_PLAIN, 0};
  return (ob_arg_layout){OB_ARGL_NCHWC, ocb};
}

/* ---- template conv2d_nchw.cuda (GPU targets) ----------------------------------
 * AutoTVM's conv2d_nchw.cuda (TVM's schedule_direct_cuda): gpu_tmpl.c. */
static ob_status define_cuda(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  conv_p p = params(wl);
  return ob_gpu_conv_define(tg, sp, dflt, p.k, p.oh, p.ow, p.c / p.g, p.r, p.s);
}

static ob_status build_cuda(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  conv_t c;
  ob_status st = declare(te, wl, &c);
  if (st) return st;
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &c.out, &s);
  if (st) return st;
  for (int i = 0; i < c.nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, c.mid[i]));
  if (!st)
    st = ob_gpu_conv_schedule(s, ob_sched_stage(s, c.out), ob_sched_stage(s, c.conv), c.pad ? c.pad : c.data,
                              c.pad, c.weight, cfg, true);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

/* A register tile over several output-channel blocks fills the register
 * file (the kernel is scheduled for register pressure): unrolled, GCC
 * spills it. mobilenet-v2's 144x56 -> 24 1x1 layer, oc_group 3 (bench_ab,
 * 8 paired rounds, unroll_inner 8 against 0): 0.85 with input blocks of 8,
 * 0.54 with 16 (31 stack accesses in the kernel against 9). */
static int unroll_for_nchwc(const ob_config *dflt) { return ob_config_knob(dflt, "oc_group") > 1 ? 0 : 8; }

static const ob_tmpl_def k_tmpls[] = {
    {.name = "conv2d_NCHWc.x86", .define = define_nchwc, .build = build_nchwc, .pack = pack_nchwc, .unpack = unpack_nchwc,
     .arg_numel = nchwc_arg_numel, .layout = layout_nchwc, .unroll_inner = true, .unroll_for = unroll_for_nchwc},
    {.name = "conv2d_nchw.x86", .define = define_nchw, .build = build_nchw, .unroll_inner = true},
    {.name = "conv2d_winograd.x86", .define = ob_winograd_define, .build = ob_winograd_build,
     .pack = ob_winograd_pack, .unpack = ob_winograd_unpack, .arg_numel = ob_winograd_arg_numel,
     .layout = ob_winograd_layout, .tolerance = ob_winograd_config_tolerance, .unroll_inner = true},
    {.name = "conv2d_nchw.cuda", .gpu = true, .define = define_cuda, .build = build_cuda},
};

/* Untuned, a 3x3 window at stride 1 runs Winograd: its default config ran
 * 1.2-3.3x the direct default's speed on every such layer of ResNet and
 * Inception-v3 on a Zen 3 core (GFLOPS of the direct count, one run each:
 * 64x56 245 against 87, 128x28 161 against 63, 256x14 152 against 61,
 * 512x7 77 against 71, 96x35 -> 96 295 against 94, 384x8 116 against 75,
 * 32x147 -> 64 134 against 88). Not for a few channels (an image's 3),
 * where the transforms cost more than the multiply-adds they save, nor
 * below 8x8 outputs: in a model, ResNet-50's 512x7 -> 512 ran 3.5 ms in
 * Winograd (F(2x2): 17 MB of transformed weights, streamed from memory)
 * against 3.4 direct (9 MB). */
static const char *untuned(const ob_workload *wl, const ob_target *tg) {
  conv_p p = params(wl);
  if (ob_target_is_gpu(tg) || wl->dtype != OB_F32) return NULL;
  return ob_winograd_applies(&p) && p.c >= 16 && p.k >= 16 && p.oh * p.ow >= 64 ? "conv2d_winograd.x86" : NULL;
}

const ob_op_def ob_op_conv2d = {
    .name = "conv2d",
    .attrs = k_attrs,
    .defaults = k_defaults,
    .nattrs = (int)(sizeof k_attrs / sizeof k_attrs[0]),
    .epilogue_ok = true,
    .validate = validate,
    .key = key,
    .flops = flops,
    .reduce_len = reduce_len,
    .args = args,
    .reference = reference,
    .tmpls = k_tmpls,
    .ntmpls = (int)(sizeof k_tmpls / sizeof k_tmpls[0]),
    .untuned = untuned,
};
