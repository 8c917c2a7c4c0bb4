/* pool.c: 2-D max / average pooling and global average pooling, NCHW,
 * float32.
 *
 * pool2d: window R x S, stride, asymmetric padding, output size
 * floor((H + pad_t + pad_b - R) / stride_h) + 1 (no ceil mode). mode 0 is
 * max (padding is -inf, so it never wins), mode 1 is average. incl_pad
 * chooses the average's divisor: 0 (default) divides by the number of
 * window elements inside the input (PyTorch count_include_pad=False, oneDNN
 * avg_exclude_padding), 1 by R*S (count_include_pad=True,
 * avg_include_padding). Every window must overlap the input; one lying
 * entirely in the padding is refused. Template pool2d.x86: output tiles of
 * (tile_oh rows x tile_ow columns) accumulated in a local buffer with the
 * window loops outside the tile, the column block vectorized; (n, c, row
 * tiles) fused into the parallel loop; padding materialized or inlined.
 * The fallback config leaves the column loop to GCC's vectorizer (see
 * define_pool).
 *
 * global_avg_pool: [N, C, H, W] -> [N, C, 1, 1], the mean over H*W.
 * Template global_avg_pool.x86: a row reduction over H*W with vector-lane
 * partials (rowred.c), (n, c) split by tile_nc into the parallel loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/rowred_impl.h"

/* ---- pool2d ---------------------------------------------------------------- */
static const char *const k_attrs[] = {"N",     "C",     "H",     "W",     "R",    "S",       "stride_h",
                                      "stride_w", "pad_t", "pad_l", "pad_b", "pad_r", "mode", "incl_pad"};
static const int64_t k_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED,
                                     OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, 1, 1, 0, 0, 0, 0, 0, 0};

typedef struct pool_p {
  int64_t n, c, h, w, r, s, sh, sw, pt, pl, pb, pr, mode, incl, oh, ow;
} pool_p;

static pool_p params(const ob_workload *wl) {
  pool_p p;
  p.n = ob_workload_get(wl, "N");
  p.c = ob_workload_get(wl, "C");
  p.h = ob_workload_get(wl, "H");
  p.w = ob_workload_get(wl, "W");
  p.r = ob_workload_get(wl, "R");
  p.s = ob_workload_get(wl, "S");
  p.sh = ob_workload_get(wl, "stride_h");
  p.sw = ob_workload_get(wl, "stride_w");
  p.pt = ob_workload_get(wl, "pad_t");
  p.pl = ob_workload_get(wl, "pad_l");
  p.pb = ob_workload_get(wl, "pad_b");
  p.pr = ob_workload_get(wl, "pad_r");
  p.mode = ob_workload_get(wl, "mode");
  p.incl = ob_workload_get(wl, "incl_pad");
  p.oh = ob_window_out(p.h, p.pt, p.pb, 1, p.r, p.sh);
  p.ow = ob_window_out(p.w, p.pl, p.pr, 1, p.s, p.sw);
  return p;
}

static bool padded(const pool_p *p) { return p->pt || p->pl || p->pb || p->pr; }

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  pool_p p = params(wl);
  const char *pos[] = {"N", "C", "H", "W", "R", "S", "stride_h", "stride_w"};
  for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
    if (ob_workload_get(wl, pos[i]) < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "pool2d: %s must be >= 1 (got %lld)", pos[i],
                     (long long)ob_workload_get(wl, pos[i]));
  const char *pads[] = {"pad_t", "pad_l", "pad_b", "pad_r"};
  for (int i = 0; i < 4; i++)
    if (ob_workload_get(wl, pads[i]) < 0)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "pool2d: %s must be >= 0 (got %lld)", pads[i],
                     (long long)ob_workload_get(wl, pads[i]));
  if (p.mode != 0 && p.mode != 1)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "pool2d: mode must be 0 (max) or 1 (avg) (got %lld)",
                   (long long)p.mode);
  if (p.incl != 0 && p.incl != 1)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "pool2d: incl_pad must be 0 or 1 (got %lld)", (long long)p.incl);
  if (p.oh < 1 || p.ow < 1)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "pool2d: window %lldx%lld is larger than the padded input %lldx%lld (empty output)",
                   (long long)p.r, (long long)p.s, (long long)(p.h + p.pt + p.pb),
                   (long long)(p.w + p.pl + p.pr));
  /* a window wholly in the padding has no max and no valid elements */
  if (p.pt >= p.r || (p.oh - 1) * p.sh - p.pt >= p.h)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "pool2d: a window lies entirely in the padding (H=%lld, R=%lld, stride_h=%lld, "
                   "pad_t=%lld, pad_b=%lld); padding must be smaller than the window",
                   (long long)p.h, (long long)p.r, (long long)p.sh, (long long)p.pt, (long long)p.pb);
  if (p.pl >= p.s || (p.ow - 1) * p.sw - p.pl >= p.w)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "pool2d: a window lies entirely in the padding (W=%lld, S=%lld, stride_w=%lld, "
                   "pad_l=%lld, pad_r=%lld); padding must be smaller than the window",
                   (long long)p.w, (long long)p.s, (long long)p.sw, (long long)p.pl, (long long)p.pr);
  ob_status st = ob_check_numel(ctx, "pool2d data (N x C x H x W)", 4, (int64_t[]){p.n, p.c, p.h, p.w}, NULL);
  if (!st)
    st = ob_check_numel(ctx, "pool2d output (N x C x OH x OW)", 4, (int64_t[]){p.n, p.c, p.oh, p.ow}, NULL);
  if (!st)
    st = ob_check_numel(ctx, "pool2d padded data (N x C x (H+pads) x (W+pads))", 4,
                        (int64_t[]){p.n, p.c, p.h + p.pt + p.pb, p.w + p.pl + p.pr}, NULL);
  return st;
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  pool_p p = params(wl);
  snprintf(out, cap, "pool2d/f32/N%lldC%lldH%lldW%lld/R%lldS%lld/s%lld,%lld/p%lld,%lld,%lld,%lld/%s",
           (long long)p.n, (long long)p.c, (long long)p.h, (long long)p.w, (long long)p.r,
           (long long)p.s, (long long)p.sh, (long long)p.sw, (long long)p.pt, (long long)p.pl,
           (long long)p.pb, (long long)p.pr,
           p.mode == 0 ? "max" : p.incl ? "avg_incl" : "avg_excl");
}

static double flops(const ob_workload *wl) {
  pool_p p = params(wl);
  return (double)p.n * (double)p.c * (double)p.oh * (double)p.ow * (double)p.r * (double)p.s;
}

static int64_t reduce_len(const ob_workload *wl) {
  pool_p p = params(wl);
  return OB_NUMEL(p.r, p.s);
}

static int args(const ob_workload *wl, ob_arg_info *out) {
  pool_p p = params(wl);
  out[0] = (ob_arg_info){"data", OB_NUMEL(p.n, p.c, p.h, p.w), true};
  out[1] = (ob_arg_info){"output", OB_NUMEL(p.n, p.c, p.oh, p.ow), false};
  return 2;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  pool_p p = params(wl);
  const float *in = bufs[0];
  float *out = bufs[1];
  for (int64_t nc = 0; nc < p.n * p.c; nc++)
    for (int64_t y = 0; y < p.oh; y++)
      for (int64_t x = 0; x < p.ow; x++) {
        double acc = p.mode == 0 ? -INFINITY : 0.0;
        int64_t cnt = 0;
        for (int64_t ry = 0; ry < p.r; ry++) {
          int64_t iy = y * p.sh + ry - p.pt;
          if (iy < 0 || iy >= p.h) continue;
          for (int64_t rx = 0; rx < p.s; rx++) {
            int64_t ix = x * p.sw + rx - p.pl;
            if (ix < 0 || ix >= p.w) continue;
            double v = in[(nc * p.h + iy) * p.w + ix];
            if (p.mode == 0) acc = v > acc ? v : acc;
            else acc += v;
            cnt++;
          }
        }
        if (p.mode == 1) acc /= (double)(p.incl ? p.r * p.s : cnt);
        out[(nc * p.oh + y) * p.ow + x] = (float)acc;
      }
}

/* ---- template pool2d.x86 ------------------------------------------------------ */
typedef struct pool_t {
  ob_tensor *data, *pad, *red, *out;
  ob_tensor *cnt_h, *cnt_w; /* avg excluding padding: valid rows / columns per window */
} pool_t;

/* Valid input positions of window `o` along one dim: min(o*st - p + k, n) - max(o*st - p, 0). */
static ob_expr *valid_count(ob_te *te, ob_expr *o, int64_t st, int64_t pad, int64_t k, int64_t n) {
  ob_expr *start = OB_TE_SUB(te, OB_TE_MUL(te, o, ob_te_int(te, st)), ob_te_int(te, pad));
  ob_expr *hi = ob_te_bin(te, OB_MIN, OB_TE_ADD(te, start, ob_te_int(te, k)), ob_te_int(te, n));
  ob_expr *lo = ob_te_bin(te, OB_MAX, start, ob_te_int(te, 0));
  return ob_te_cast(te, OB_F32, OB_TE_SUB(te, hi, lo));
}

static ob_status declare(ob_te *te, const pool_p *p, pool_t *c) {
  memset(c, 0, sizeof *c);
  bool is_max = p->mode == 0;
  c->data = ob_te_placeholder(te, "data", 4, (int64_t[]){p->n, p->c, p->h, p->w}, OB_F32);
  ob_tensor *src = c->data;
  if (padded(p)) {
    ob_ivar *n = ob_te_axis(te, "n", p->n), *ch = ob_te_axis(te, "c", p->c);
    ob_ivar *h = ob_te_axis(te, "h", p->h + p->pt + p->pb), *w = ob_te_axis(te, "w", p->w + p->pl + p->pr);
    ob_expr *vh = ob_te_var(te, h), *vw = ob_te_var(te, w);
    ob_expr *cond = ob_te_bin(
        te, OB_AND,
        ob_te_bin(te, OB_AND, ob_te_bin(te, OB_GE, vh, ob_te_int(te, p->pt)),
                  ob_te_bin(te, OB_LT, vh, ob_te_int(te, p->h + p->pt))),
        ob_te_bin(te, OB_AND, ob_te_bin(te, OB_GE, vw, ob_te_int(te, p->pl)),
                  ob_te_bin(te, OB_LT, vw, ob_te_int(te, p->w + p->pl))));
    ob_expr *ld = ob_te_load(te, c->data, 4,
                             (ob_expr *[]){ob_te_var(te, n), ob_te_var(te, ch),
                                           OB_TE_SUB(te, vh, ob_te_int(te, p->pt)),
                                           OB_TE_SUB(te, vw, ob_te_int(te, p->pl))});
    ob_expr *fill = ob_te_float(te, OB_F32, is_max ? -INFINITY : 0.0);
    c->pad = ob_te_compute(te, "data_pad", 4, (ob_ivar *[]){n, ch, h, w}, ob_te_select(te, cond, ld, fill));
    src = c->pad;
  }
  ob_ivar *n = ob_te_axis(te, "n", p->n), *ch = ob_te_axis(te, "c", p->c);
  ob_ivar *y = ob_te_axis(te, "y", p->oh), *x = ob_te_axis(te, "x", p->ow);
  ob_ivar *ry = ob_te_reduce_axis(te, "ry", p->r), *rx = ob_te_reduce_axis(te, "rx", p->s);
  ob_expr *iy = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, y), ob_te_int(te, p->sh)), ob_te_var(te, ry));
  ob_expr *ix = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, x), ob_te_int(te, p->sw)), ob_te_var(te, rx));
  ob_expr *ld = ob_te_load(te, src, 4, (ob_expr *[]){ob_te_var(te, n), ob_te_var(te, ch), iy, ix});
  c->red = ob_te_compute(te, is_max ? "pool_max" : "pool_sum", 4, (ob_ivar *[]){n, ch, y, x},
                         ob_te_reduce(te, is_max ? OB_REDUCE_MAX : OB_REDUCE_SUM, ld, 2,
                                      (ob_ivar *[]){ry, rx}));
  c->out = c->red;
  if (!is_max) {
    ob_ivar *an = ob_te_axis(te, "n", p->n), *ac = ob_te_axis(te, "c", p->c);
    ob_ivar *ay = ob_te_axis(te, "y", p->oh), *ax = ob_te_axis(te, "x", p->ow);
    ob_expr *sum = ob_te_load(te, c->red, 4,
                              (ob_expr *[]){ob_te_var(te, an), ob_te_var(te, ac), ob_te_var(te, ay),
                                            ob_te_var(te, ax)});
    ob_expr *div;
    if (p->incl || !padded(p)) {
      div = ob_te_float(te, OB_F32, (double)(p->r * p->s));
    } else {
      /* the divisor separates into rows x columns: two small tables, the
       * column one loaded as a vector in the output loop */
      ob_ivar *hy = ob_te_axis(te, "y", p->oh), *wx = ob_te_axis(te, "x", p->ow);
      c->cnt_h = ob_te_compute(te, "cnt_h", 1, &hy, valid_count(te, ob_te_var(te, hy), p->sh, p->pt, p->r, p->h));
      c->cnt_w = ob_te_compute(te, "cnt_w", 1, &wx, valid_count(te, ob_te_var(te, wx), p->sw, p->pl, p->s, p->w));
      if (!c->cnt_h || !c->cnt_w) return OB_ERR_INVALID_ARG;
      div = OB_TE_MUL(te, ob_te_load(te, c->cnt_h, 1, (ob_expr *[]){ob_te_var(te, ay)}),
                      ob_te_load(te, c->cnt_w, 1, (ob_expr *[]){ob_te_var(te, ax)}));
    }
    c->out = ob_te_compute(te, "pool_avg", 4, (ob_ivar *[]){an, ac, ay, ax}, ob_te_bin(te, OB_FDIV, sum, div));
  }
  if (!c->data || !c->red || !c->out || (padded(p) && !c->pad)) return OB_ERR_INVALID_ARG;
  return OB_OK;
}

static ob_status define_pool(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  pool_p p = params(wl);
  /* column tiles of up to two registers' worth */
  ob_status st = ob_space_define_split(sp, "tile_ow", p.ow, &(ob_split_opts){.policy = OB_SPLIT_POWER2, .num_outputs = 2, .max_factor = 2 * ob_tmpl_lanes(tg)});
  if (!st) st = ob_space_define_split(sp, "tile_oh", p.oh, &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = 4});
  if (!st) st = ob_space_define_knob(sp, "unroll_kw", (int64_t[]){0, 1}, 2);
  if (!st) st = ob_space_define_knob(sp, "pad_inline", (int64_t[]){0, 1}, padded(&p) ? 2 : 1);
  if (st) return st;
  /* fallback: one output per column iteration with the window loops
   * unrolled inside, padding materialized. GCC's own vectorizer then takes
   * the column loop (vmaxps/vaddps on zmm, vpermt2ps for stride 2, a masked
   * tail), which measured faster on ResNet-style layers than the explicit
   * tiles, whose stride-2 loads become lane-by-lane gathers and whose ragged
   * tails run scalar. */
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_ow", (int64_t[]){1}, 1);
  ob_config_set_split(&c, "tile_oh", (int64_t[]){1}, 1);
  ob_config_set_knob(&c, "unroll_kw", 1);
  ob_config_set_knob(&c, "pad_inline", 0);
  *dflt = c;
  return OB_OK;
}

static ob_status build_pool(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  pool_p p = params(wl);
  pool_t c;
  ob_status st = declare(te, &p, &c);
  if (st) return st;
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &c.out, &s);
  if (st) return st;
  int64_t oh[2], ow[2];
  ob_config_split(cfg, "tile_oh", oh);
  ob_config_split(cfg, "tile_ow", ow);
  bool ukw = ob_config_knob(cfg, "unroll_kw"), pad_inline = ob_config_knob(cfg, "pad_inline");

  ob_stage *so = ob_sched_stage(s, c.out), *sacc = ob_sched_stage(s, c.red);
  if (c.out == c.red) st = ob_sched_cache_write(s, so, &sacc);
  if (!st && c.pad && pad_inline) st = ob_sched_compute_inline(s, ob_sched_stage(s, c.pad));
  if (!st && c.pad && !pad_inline) { /* materialized: one parallel pass over the planes */
    ob_stage *spad = ob_sched_stage(s, c.pad);
    ob_ivar *nc;
    st = ob_sched_fuse(s, spad, ob_stage_axis(spad, 0), ob_stage_axis(spad, 1), &nc);
    if (!st) st = ob_sched_parallel(s, spad, nc);
  }
  ob_ivar *yo, *yi, *xo, *xi, *f1, *f2;
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 2), oh[1], &yo, &yi);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 3), ow[1], &xo, &xi);
  if (!st) st = ob_sched_reorder(s, so, 6, (ob_ivar *[]){ob_stage_axis(so, 0), ob_stage_axis(so, 1), yo, xo, yi, xi});
  if (!st) st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), ob_stage_axis(so, 1), &f1);
  if (!st) st = ob_sched_fuse(s, so, f1, yo, &f2);
  if (!st) st = ob_sched_parallel(s, so, f2);
  if (!st && ow[1] > 1) st = ob_sched_vectorize(s, so, xi);
  if (!st) st = ob_sched_compute_at(s, sacc, so, xo);
  ob_ivar *an = ob_stage_axis(sacc, 0), *ac = ob_stage_axis(sacc, 1), *ay = ob_stage_axis(sacc, 2),
          *ax = ob_stage_axis(sacc, 3);
  ob_ivar *ry = ob_stage_reduce_axis(sacc, 0), *rx = ob_stage_reduce_axis(sacc, 1);
  /* window loops outside the tile: every accumulator stays live across them */
  if (!st) st = ob_sched_reorder(s, sacc, 6, (ob_ivar *[]){an, ac, ry, rx, ay, ax});
  if (!st && ow[1] > 1) st = ob_sched_vectorize(s, sacc, ax);
  if (!st) st = ob_sched_unroll(s, sacc, ay);
  if (!st && ukw) st = ob_sched_unroll(s, sacc, rx);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_tmpls[] = {{.name = "pool2d.x86", .define = define_pool, .build = build_pool}};

const ob_op_def ob_op_pool2d = {
    .name = "pool2d",
    .attrs = k_attrs,
    .defaults = k_defaults,
    .nattrs = (int)(sizeof k_attrs / sizeof k_attrs[0]),
    .validate = validate,
    .key = key,
    .flops = flops,
    .reduce_len = reduce_len,
    .args = args,
    .reference = reference,
    .tmpls = k_tmpls,
    .ntmpls = 1,
};

/* ---- global_avg_pool ----------------------------------------------------------- */
static const char *const k_gap_attrs[] = {"N", "C", "H", "W"};
static const int64_t k_gap_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};

static void gap_dims(const ob_workload *wl, int64_t d[4]) {
  for (int i = 0; i < 4; i++) d[i] = ob_workload_get(wl, k_gap_attrs[i]);
}

static ob_status gap_validate(ob_ctx *ctx, const ob_workload *wl) {
  int64_t d[4];
  gap_dims(wl, d);
  for (int i = 0; i < 4; i++)
    if (d[i] < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "global_avg_pool: %s must be >= 1 (got %lld)",
                     k_gap_attrs[i], (long long)d[i]);
  return ob_check_numel(ctx, "global_avg_pool data (N x C x H x W)", 4, d, NULL);
}

static void gap_key(const ob_workload *wl, char *out, size_t cap) {
  int64_t d[4];
  gap_dims(wl, d);
  snprintf(out, cap, "global_avg_pool/f32/N%lldC%lldH%lldW%lld", (long long)d[0], (long long)d[1],
           (long long)d[2], (long long)d[3]);
}

static double gap_flops(const ob_workload *wl) {
  int64_t d[4];
  gap_dims(wl, d);
  return (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3];
}

static int64_t gap_reduce_len(const ob_workload *wl) {
  return OB_NUMEL(ob_workload_get(wl, "H"), ob_workload_get(wl, "W"));
}

static int gap_args(const ob_workload *wl, ob_arg_info *out) {
  int64_t d[4];
  gap_dims(wl, d);
  out[0] = (ob_arg_info){"data", ob_numel_valid(4, d), true};
  out[1] = (ob_arg_info){"output", OB_NUMEL(d[0], d[1]), false};
  return 2;
}

static void gap_reference(const ob_workload *wl, void *const *bufs) {
  int64_t d[4];
  gap_dims(wl, d);
  const float *in = bufs[0];
  float *out = bufs[1];
  int64_t hw = d[2] * d[3];
  for (int64_t nc = 0; nc < d[0] * d[1]; nc++) {
    double s = 0;
    for (int64_t i = 0; i < hw; i++) s += in[nc * hw + i];
    out[nc] = (float)(s / (double)hw);
  }
}

static ob_status define_gap(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  int64_t d[4];
  gap_dims(wl, d);
  int64_t lanes[8];
  int nl = ob_rowred_lane_choices(tg, d[2] * d[3], lanes);
  ob_status st = ob_space_define_knob(sp, "vec", lanes, nl);
  if (!st) st = ob_space_define_split(sp, "tile_nc", d[0] * d[1], &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = 16});
  if (st) return st;
  ob_config c = ob_space_first(sp);
  ob_config_set_knob(&c, "vec", ob_rowred_default_lanes(tg, d[2] * d[3]));
  ob_config_set_split(&c, "tile_nc", (int64_t[]){1}, 1);
  *dflt = c;
  return OB_OK;
}

typedef struct gap_user {
  ob_tensor *x;
} gap_user;

static ob_expr *gap_elem(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user) {
  gap_user *u = user;
  return ob_te_load(te, u->x, 3, (ob_expr *[]){rows[0], rows[1], col});
}

static ob_status build_gap(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  int64_t d[4], tnc[2], hw;
  gap_dims(wl, d);
  hw = d[2] * d[3];
  int64_t lanes = ob_config_knob(cfg, "vec");
  ob_config_split(cfg, "tile_nc", tnc);
  /* the input is read as [N, C, H*W]: the same buffer, one row per plane */
  gap_user u = {.x = ob_te_placeholder(te, "data", 3, (int64_t[]){d[0], d[1], hw}, OB_F32)};
  ob_rowred sum;
  ob_status st = ob_rowred_declare(te, "gap_sum", OB_REDUCE_SUM, 2, d, hw, lanes, gap_elem, &u, &sum);
  if (st) return st;
  ob_ivar *ax[4] = {ob_te_axis(te, "n", d[0]), ob_te_axis(te, "c", d[1]), ob_te_axis(te, "i", 1),
                    ob_te_axis(te, "j", 1)};
  ob_expr *ld = ob_te_load(te, sum.total, 2, (ob_expr *[]){ob_te_var(te, ax[0]), ob_te_var(te, ax[1])});
  ob_tensor *o = ob_te_compute(te, "global_avg_pool", 4, ax,
                               ob_te_bin(te, OB_FDIV, ld, ob_te_float(te, OB_F32, (double)hw)));
  if (!o) return OB_ERR_INVALID_ARG;
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, o), *stot = ob_sched_stage(s, sum.total);
  ob_ivar *nc, *fo, *fi;
  st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), ob_stage_axis(so, 1), &nc);
  if (!st) st = ob_sched_split(s, so, nc, tnc[1], &fo, &fi);
  if (!st) st = ob_sched_parallel(s, so, fo);
  if (!st) st = ob_sched_compute_at(s, stot, so, fi);
  if (!st) st = ob_rowred_schedule(s, &sum, ob_stage_axis(stot, 1));
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_gap_tmpls[] = {
    {.name = "global_avg_pool.x86", .define = define_gap, .build = build_gap}};

const ob_op_def ob_op_global_avg_pool = {
    .name = "global_avg_pool",
    .attrs = k_gap_attrs,
    .defaults = k_gap_defaults,
    .nattrs = 4,
    .validate = gap_validate,
    .key = gap_key,
    .flops = gap_flops,
    .reduce_len = gap_reduce_len,
    .args = gap_args,
    .reference = gap_reference,
    .tmpls = k_gap_tmpls,
    .ntmpls = 1,
};
