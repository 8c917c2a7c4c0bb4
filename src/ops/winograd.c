/* winograd.c: Winograd's minimal filtering for conv2d, template
 * conv2d_winograd.x86 (3x3 windows, stride 1, no dilation, no groups).
 *
 * F(m x m, 3 x 3) computes an m x m tile of outputs from an alpha x alpha
 * tile of inputs (alpha = m + 2) with alpha^2 multiplications per input
 * and output channel instead of 9 m^2: Y = A^T [ (G g G^T) . (B^T d B) ] A.
 * The matrices come from Cook-Toom interpolation on the points 0, 1, -1,
 * 2, -2, 1/2, -1/2 (and infinity), built here in double.
 *
 * Layouts (the template's own, as conv2d_NCHWc.x86's): data NCHW[icb]c,
 * output and residual NCHW[ocb]c, weights transformed once at pack time
 * into U[alpha][alpha][K/ocb][C][ocb] = G g G^T (in double), bias [K].
 *
 * Stages, all tensor expressions scheduled with the ordinary primitives:
 *   T[t][e][j][c]  = sum_i BT[e][i] d[t][i][j][c]   input transform, rows
 *   V[t][e][n][c]  = sum_j BT[n][j] T[t][e][j][c]   input transform, columns
 *   M[t][e][n][k]  = sum_c V[t][e][n][c] U[e][n][k][c]   the batched GEMM
 *   out[y][x][k]   = sum_e AT[a][e] sum_n AT[b][n] M[t][e][n][k]
 * where t = (image, tile row, tile column), d reads the data with zero
 * padding (a select: tiles overhang the image), and the output transform
 * is inlined into the output's loop nest (a, b = y % m, x % m unrolled, so
 * the coefficient chains fold to constants and the compiler shares the
 * inner sums); for F(6x6) its first half is a stage of its own,
 *   Y[t][a][n][k]  = sum_e AT[a][e] M[t][e][n][k],  out = sum_n AT[b][n] Y,
 * computed for the output's block of tiles (0.33-0.6 of the C). The
 * GEMM's accumulators (tile_x tiles x tile_oc channels) stay in registers
 * over its channel loop.
 * Loop order (knob "order"): 0 = per block of tile_x tiles (parallel), the
 * input transform of the block, then the GEMM over all output channels and
 * the output transform per channel block: the transformed input stays in
 * cache, the weights stream once per block; 1 = the input transform of all
 * tiles first (parallel), then per (channel block, tile block) the GEMM and
 * the output transform: a channel block's weights stay in cache across the
 * tile blocks (deep layers, whose weights outweigh their tiles); 2 = the
 * input transform of all tiles first, then per channel block (parallel)
 * the GEMM point by point over every tile of the image, its reduction in
 * chunks whose weights stay in L1 across the tile blocks, then the output
 * transform: each weight is read from L3 once (deep layers on small
 * images, where even one channel block's weights outgrow the L2).
 * Ownership (knob "own", with "parts"): 0 = as the loop order says, where
 * orders 1 and 2 transform the input in one parallel loop and run the GEMM
 * in another, so each thread reads the transformed tiles the other one
 * wrote and waits at the join between the two; 1 = the output channel
 * blocks cut into `parts` parts, one parallel loop over the parts, each
 * part end to end on its thread: the input transform of every tile (a
 * few percent of the GEMM's work, done by each part: cheaper than reading
 * the other core's), then order 2's GEMM over them for each of its channel
 * blocks, then their output transform; the transformed input and the
 * GEMM's results stay in that core's L2, and each weight is read by one
 * part. (Parts that own tile rows instead, each transforming only its
 * own tiles, ran 2x slower at 2 threads on the 28x28 and 14x14 layers:
 * every part streams all the weights from L3; not offered.) "own" = 1
 * takes order 2's GEMM and leaves the order knob at 2. Both knobs came
 * after records of the others were stored: defined last, the old
 * schedule their first value (ob_space_define_knob_added), so old records
 * read as they were.
 * Knobs: tile_m (m: 2, 4, 6), tile_x, tile_oc, tile_ic, order, unroll_c,
 * own, parts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

/* ---- the transforms --------------------------------------------------------- */
#define WINO_MAX_ALPHA 8
/* tiles per GEMM block the space offers at most; the target's accumulator
 * budget limits them further (one accumulator per tile and vector) */
#define WINO_MAX_TX 16
/* the parts of knob "parts" (its first value: the one an "own" of 0 takes) */
#define WINO_PARTS_FIRST 2

typedef struct wino_mat {
  int m, alpha;
  double AT[WINO_MAX_ALPHA][WINO_MAX_ALPHA]; /* m x alpha */
  double G[WINO_MAX_ALPHA][3];              /* alpha x 3 */
  double BT[WINO_MAX_ALPHA][WINO_MAX_ALPHA]; /* alpha x alpha */
} wino_mat;

/* Cook-Toom for F(m, 3) on the first alpha - 1 points and infinity:
 * AT[i][k] = p_k^i; G[k][j] = p_k^j / prod_{l != k} (p_k - p_l); BT's row k
 * the coefficients of prod_{l != k} (x - p_l); the point at infinity adds
 * AT[m-1][alpha-1] = 1, G[alpha-1][2] = 1 and BT's last row, the
 * coefficients of prod_l (x - p_l). Then y_i = sum_j d_{i+j} g_j. */
static void wino_matrices(int m, wino_mat *w) {
  static const double pts[] = {0, 1, -1, 2, -2, 0.5, -0.5};
  memset(w, 0, sizeof *w);
  int a = m + 2, np = a - 1;
  w->m = m;
  w->alpha = a;
  for (int i = 0; i < m; i++) {
    for (int k = 0; k < np; k++) w->AT[i][k] = pow(pts[k], i);
    w->AT[i][np] = i == m - 1 ? 1 : 0;
  }
  for (int k = 0; k < np; k++) {
    double f = 1;
    for (int l = 0; l < np; l++)
      if (l != k) f *= pts[k] - pts[l];
    for (int j = 0; j < 3; j++) w->G[k][j] = pow(pts[k], j) / f;
  }
  w->G[np][2] = 1;
  for (int k = 0; k <= np; k++) {
    double poly[WINO_MAX_ALPHA + 1] = {1}; /* coefficients, lowest degree first */
    int deg = 0;
    for (int l = 0; l < np; l++) {
      if (l == k) continue;
      for (int d = deg + 1; d >= 1; d--) poly[d] = poly[d - 1] - pts[l] * poly[d];
      poly[0] = -pts[l] * poly[0];
      deg++;
    }
    for (int i = 0; i <= deg; i++) w->BT[k][i] = poly[i];
  }
}

/* The tolerance of each tile size, from measurements of these kernels on
 * random inputs in [-1, 1] (the ResNet-18 layers and the test shapes): the
 * largest error relative to max|ref| * sqrt(reduction) was 1.4e-8 for
 * F(2x2,3x3) (its constants are 0, +-1 and 1/2), 3.3e-7 for F(4x4,3x3)
 * (constants up to 5 and 1/24) and 4.3e-7 for F(6x6,3x3) (up to 21/4 and
 * 32); relative to max|ref| alone 7e-7, 1.4e-5 and 2.3e-5, so F(6x6) stays
 * well within the 1e-3 that makes it worth offering. The bounds below are
 * those errors with a margin of 15 to 35: tighter than the direct sums'
 * default for the small tiles (which are nearly exact), and growing with
 * the tile as Winograd's error does. Any other m (oneDNN's Winograd, whose
 * tile the check does not know): the largest tile's. */
ob_tolerance ob_winograd_tolerance(int m) {
  switch (m) {
  case 2: return (ob_tolerance){1e-4, 5e-7};
  case 4: return (ob_tolerance){1e-4, 5e-6};
  default: return (ob_tolerance){1e-4, 1e-5};
  }
}

/* ---- workload and config -------------------------------------------------- */
typedef struct wino_cfg {
  int64_t m, alpha, tp, ocb, icb, order, uc, own, parts;
  int64_t th, tw, twp; /* tile rows, tile columns, tile columns padded to tp */
} wino_cfg;

static wino_cfg wino_of(const ob_workload *wl, const ob_config *cfg) {
  ob_conv_geom p = ob_conv2d_geom(wl);
  wino_cfg w;
  w.m = ob_config_knob(cfg, "tile_m");
  w.alpha = w.m + 2;
  w.tp = ob_config_knob(cfg, "tile_x");
  w.ocb = ob_config_knob(cfg, "tile_oc");
  w.icb = ob_config_knob(cfg, "tile_ic");
  w.order = ob_config_knob(cfg, "order");
  w.uc = ob_config_knob(cfg, "unroll_c");
  w.own = ob_config_knob(cfg, "own");
  w.parts = ob_config_knob(cfg, "parts");
  w.th = (p.oh + w.m - 1) / w.m;
  w.tw = (p.ow + w.m - 1) / w.m;
  /* order 2 blocks the image's tiles row after row: no row is padded */
  w.twp = w.order == 2 || w.own ? w.tw : (w.tw + w.tp - 1) / w.tp * w.tp;
  return w;
}

bool ob_winograd_applies(const ob_conv_geom *p) {
  return p->r == 3 && p->s == 3 && p->sh == 1 && p->sw == 1 && p->dh == 1 && p->dw == 1 && p->g == 1;
}

/* The GEMM's register block (tile_x tiles x tile_oc channels) fits, and
 * has at least 4 accumulators (fewer leave the multiply-adds waiting on
 * each other's latency: never a good config, only noise for a search). */
static bool wino_ok(const ob_config *cfg, void *user) {
  const ob_target *tg = user;
  /* ownership takes order 2's GEMM; parts mean nothing without it */
  int64_t own = ob_config_knob(cfg, "own");
  if (own ? ob_config_knob(cfg, "order") != 2 : ob_config_knob(cfg, "parts") != WINO_PARTS_FIRST) return false;
  int64_t tp = ob_config_knob(cfg, "tile_x"), vecs = ob_tmpl_vectors(tg, ob_config_knob(cfg, "tile_oc"));
  return tp * vecs >= 4 && ob_tmpl_block_fits(tg, tp, vecs);
}

static int blocks_dividing(int64_t n, const int64_t *cand, int ncand, int64_t *out) {
  int k = 0;
  for (int i = 0; i < ncand; i++)
    if (cand[i] > 0 && n % cand[i] == 0) out[k++] = cand[i];
  if (!k) out[k++] = 1;
  return k;
}

ob_status ob_winograd_define(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp,
                             ob_config *dflt) {
  ob_conv_geom p = ob_conv2d_geom(wl);
  if (!ob_winograd_applies(&p))
    return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "conv2d_winograd.x86 takes 3x3 windows at stride 1 without dilation or groups "
                   "(got %lldx%lld, stride %lld,%lld, dilation %lld,%lld, groups %lld)",
                   (long long)p.r, (long long)p.s, (long long)p.sh, (long long)p.sw, (long long)p.dh,
                   (long long)p.dw, (long long)p.g);
  int64_t lanes = ob_tmpl_lanes(tg), budget = ob_tmpl_budget(tg);
  const int64_t blk[] = {lanes / 2, lanes, 2 * lanes, 4 * lanes};
  int64_t ocs[4], ics[4], tps[WINO_MAX_TX];
  int noc = blocks_dividing(p.k, blk, 4, ocs), nic = blocks_dividing(p.c, blk, 3, ics);
  /* no more tiles in a block than a row of 2x2 tiles has (orders 0 and
   * 1 block a row) or half the image's 2x2 tiles (order 2 blocks the
   * image's tiles row after row: small images), nor than the accumulators
   * allow with one vector of channels */
  int64_t tw2 = (p.ow + 1) / 2, tiles2 = (p.oh + 1) / 2 * tw2, ntp = 0;
  for (int64_t t = 1; t <= WINO_MAX_TX; t++)
    if ((t <= tw2 || t <= tiles2 / 2 || t == 1) && t <= budget) tps[ntp++] = t;
  int64_t ucs[3];
  int nuc = blocks_dividing(p.c, (const int64_t[]){1, 2, 4}, 3, ucs);
  ob_status st = ob_space_define_knob(sp, "tile_m", (int64_t[]){2, 4, 6}, 3);
  if (!st) st = ob_space_define_knob(sp, "tile_x", tps, (int)ntp);
  if (!st) st = ob_space_define_knob(sp, "tile_oc", ocs, noc);
  if (!st) st = ob_space_define_knob(sp, "tile_ic", ics, nic);
  if (!st) st = ob_space_define_knob(sp, "order", (int64_t[]){0, 1, 2}, 3);
  if (!st) st = ob_space_define_knob(sp, "unroll_c", ucs, nuc);
  /* added after records of the six knobs above were stored */
  if (!st) st = ob_space_define_knob_added(sp, "own", (int64_t[]){0, 1}, 2);
  if (!st) st = ob_space_define_knob_added(sp, "parts", (int64_t[]){WINO_PARTS_FIRST, 4}, 2);
  if (st) return st;
  ob_space_set_filter(sp, wino_ok, (void *)tg); /* read only */
  /* fallback: the tile size of least estimated cost, counted in multiply-
   * add operations: the GEMM (tiles x alpha^2 x C x K), the transforms
   * (about alpha x (C + K) per tile element, at a quarter of the GEMM's
   * speed) and the transformed weights (alpha^2 x C x K floats, streamed
   * from memory at about 8 operations' time per byte when they outgrow the
   * L2 cache). Large images take F(4x4): 2.25x fewer multiplications than
   * F(2x2) on tiles that amortise the transforms; deep layers with few
   * tiles take F(2x2): their weights, 1.8x the direct kernel's in F(2x2)
   * and 4x in F(4x4), cost more than the multiplications saved. F(6x6)
   * stays a choice of the search, never the default: its transforms'
   * generated code took GCC more than the 10 s build limit (Inception-v3's
   * 32x149 -> 32), and its error is the largest. */
  const ob_target_facts *f = ob_target_get_facts(tg);
  ob_config c = ob_space_first(sp);
  int64_t m = 2;
  double best = 0;
  for (int64_t mm = 2; mm <= 4; mm += 2) {
    double a2 = (double)((mm + 2) * (mm + 2)), tiles = (double)(((p.oh + mm - 1) / mm) * ((p.ow + mm - 1) / mm));
    double gemm = 2 * tiles * a2 * (double)p.c * (double)p.k;
    double tr = 4 * tiles * a2 * (double)(mm + 2) * 2 * (double)(p.c + p.k);
    double ub = 4 * a2 * (double)p.c * (double)p.k;
    double cost = gemm + tr + (ub > (double)f->l2_bytes ? 8 * ub : 0);
    if (mm == 2 || cost < best) {
      best = cost;
      m = mm;
    }
  }
  int64_t alpha = m + 2, tw = (p.ow + m - 1) / m;
  /* two vectors of output channels where K allows, and the tiles per
   * block that give the most useful accumulators, at most half the vector
   * registers (16 of AVX-512's 32; fuller blocks spill around the
   * broadcasts; a block past the row's end computes padding); four vectors
   * when the row has few tiles */
  /* (with 16 registers, AVX2, 12: 6 tiles x 2 vectors, the 6x16 block of
   * the direct convolution; 64x56 3x3 F(4x4) on a Zen 3 core 160 -> 210
   * GFLOPS of the direct convolution's count, interleaved, fastest of 8) */
  int64_t most_acc = ob_tmpl_registers(tg) <= 16 ? budget - 2 : ob_tmpl_registers(tg) / 2;
  int64_t ocb = ocs[0];
  for (int i = 0; i < noc; i++)
    if (ocs[i] <= 2 * lanes) ocb = ocs[i];
  int64_t tp = 1;
  for (int pass = 0; pass < 2; pass++) {
    int64_t vecs = ob_tmpl_vectors(tg, ocb);
    double score = 0;
    tp = 1;
    for (int64_t t = 1; t <= tw && t <= budget; t++) { /* useful accumulators per block */
      double sc = (double)tw / (double)((tw + t - 1) / t * t) * (double)(t * vecs);
      if (ob_tmpl_block_fits(tg, t, vecs) && t * vecs <= most_acc && sc > score) {
        score = sc;
        tp = t;
      }
    }
    if (pass || tp * vecs >= budget / 2 || p.k % (4 * lanes) || !ob_tmpl_block_fits(tg, tp, 4)) break;
    ocb = 4 * lanes;
  }
  double ubytes = 4.0 * (double)(alpha * alpha) * (double)p.c * (double)p.k;
  int64_t icb = ics[0];
  for (int i = 0; i < nic; i++)
    if (ics[i] == lanes) icb = lanes;
  ob_config_set_knob(&c, "tile_m", m);
  ob_config_set_knob(&c, "tile_x", tp);
  ob_config_set_knob(&c, "tile_oc", ocb);
  ob_config_set_knob(&c, "tile_ic", icb);
  /* the weights of a channel block in cache across the tiles (order 1)
   * once they outgrow half of the L2; when even one channel block's weights
   * outgrow a quarter of it (deep layers on small images), order 1 would stream
   * them from L3 once per tile block, so order 2 takes every tile of the
   * image under each point's weights, if the image's GEMM results (its
   * tiles x alpha^2 x tile_oc floats) fit a quarter of the L2 */
  double l2 = (double)f->l2_bytes, slice = ubytes / (double)p.k * (double)ocb;
  int64_t tiles = (p.oh + m - 1) / m * tw;
  double mbytes = 4.0 * (double)(alpha * alpha) * (double)tiles * (double)ocb;
  /* (a quarter, not half: half already thrashed order 1 beside the tiles'
   * data, 256x14 3x3 F(2x2) on a Zen 3 core with 256 KB slices in 512 KB
   * of L2 84-96 GFLOPS in order 1, 151-168 in order 2) */
  int64_t order = ubytes <= l2 / 2 ? 0 : slice > l2 / 4 && mbytes <= l2 / 4 ? 2 : 1;
  int64_t uc = ucs[nuc - 1] >= 2 ? 2 : 1;
  if (order == 2) {
    /* blocks over the image's tiles: two vectors of channels where K
     * allows, and the most tiles that keep half the registers for
     * accumulators; the reduction unrolled by the chunk loop already */
    for (int i = 0; i < noc; i++)
      if (ocs[i] <= 2 * lanes) ocb = ocs[i];
    int64_t vecs = ob_tmpl_vectors(tg, ocb);
    double score = 0;
    for (int64_t t = 1; t <= tiles && t <= budget && t <= WINO_MAX_TX; t++) {
      double sc = (double)tiles / (double)((tiles + t - 1) / t * t) * (double)(t * vecs);
      if (ob_tmpl_block_fits(tg, t, vecs) && t * vecs <= most_acc && (t <= tw2 || t <= tiles2 / 2) && sc > score) {
        score = sc;
        tp = t;
      }
    }
    uc = 1;
  }
  ob_config_set_knob(&c, "tile_x", tp);
  ob_config_set_knob(&c, "tile_oc", ocb);
  ob_config_set_knob(&c, "order", order);
  ob_config_set_knob(&c, "unroll_c", uc);
  *dflt = c;
  return OB_OK;
}

/* sum over k of coef[k] * x(k) as an expression, zero coefficients left out
 * (+-1 without a multiplication); NULL when every coefficient is zero. */
typedef ob_expr *(*term_fn)(ob_te *te, int k, void *user);

static ob_expr *lin_comb(ob_te *te, const double *coef, int n, term_fn x, void *user) {
  ob_expr *acc = NULL;
  for (int k = 0; k < n; k++) {
    double c = coef[k];
    if (c == 0) continue;
    ob_expr *t = x(te, k, user);
    bool neg = c < 0;
    double a = fabs(c);
    if (a != 1) t = OB_TE_MUL(te, ob_te_float(te, OB_F32, a), t);
    if (!acc) acc = neg ? OB_TE_SUB(te, ob_te_float(te, OB_F32, 0.0), t) : t;
    else acc = neg ? OB_TE_SUB(te, acc, t) : OB_TE_ADD(te, acc, t);
  }
  return acc ? acc : ob_te_float(te, OB_F32, 0.0);
}

/* select(v < 1, rows[0], select(v < 2, rows[1], ...)): folds to one row
 * once v is a constant (the loop over v unrolled). */
static ob_expr *chain(ob_te *te, ob_expr *v, ob_expr *const *rows, int n) {
  ob_expr *e = rows[n - 1];
  for (int i = n - 2; i >= 0; i--) e = ob_te_select(te, ob_te_bin(te, OB_LT, v, ob_te_int(te, i + 1)), rows[i], e);
  return e;
}

typedef struct t_ctx { /* T: d[i] at (nn, ty, tx, i, j, c) */
  const ob_conv_geom *p;
  const wino_cfg *w;
  ob_tensor *data;
  ob_ivar *nn, *ty, *tx, *j, *c;
} t_ctx;

static ob_expr *t_term(ob_te *te, int i, void *user) {
  t_ctx *t = user;
  ob_expr *iy = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, t->ty), ob_te_int(te, t->w->m)), ob_te_int(te, i - t->p->pt));
  ob_expr *ix = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, t->tx), ob_te_int(te, t->w->m)),
                          OB_TE_SUB(te, ob_te_var(te, t->j), ob_te_int(te, t->p->pl)));
  ob_expr *cond = ob_te_bin(te, OB_AND,
                            ob_te_bin(te, OB_AND, ob_te_bin(te, OB_GE, iy, ob_te_int(te, 0)),
                                      ob_te_bin(te, OB_LT, iy, ob_te_int(te, t->p->h))),
                            ob_te_bin(te, OB_AND, ob_te_bin(te, OB_GE, ix, ob_te_int(te, 0)),
                                      ob_te_bin(te, OB_LT, ix, ob_te_int(te, t->p->w))));
  ob_expr *vc = ob_te_var(te, t->c), *icb = ob_te_int(te, t->w->icb);
  ob_expr *ld = ob_te_load(te, t->data, 5,
                           (ob_expr *[]){ob_te_var(te, t->nn), ob_te_bin(te, OB_DIV, vc, icb), iy, ix,
                                         ob_te_bin(te, OB_MOD, vc, icb)});
  return ob_te_select(te, cond, ld, ob_te_float(te, OB_F32, 0.0));
}

typedef struct v_ctx { /* V: T at (nn, ty, tx, e, j, c) */
  ob_tensor *T;
  ob_ivar *nn, *ty, *tx, *e, *c;
} v_ctx;

static ob_expr *v_term(ob_te *te, int j, void *user) {
  v_ctx *v = user;
  return ob_te_load(te, v->T, 6,
                    (ob_expr *[]){ob_te_var(te, v->nn), ob_te_var(te, v->ty), ob_te_var(te, v->tx),
                                  ob_te_var(te, v->e), ob_te_int(te, j), ob_te_var(te, v->c)});
}

/* V and M hold (nn, ty, tx, e, n, c or k) tile-major, or point-major as
 * (e, n, nn, ty, tx, c or k) when parts own channel blocks ("own" = 1):
 * there a part's GEMM sweeps all the tiles under one point's weights, and
 * point-major keeps those tiles next to each other (tile-major puts them
 * alpha^2 x C floats apart, a few L1 sets for all of them). Position of
 * logical dimension d in the storage: */
static int wino_pos(bool pm, int d) {
  static const int pos[6] = {2, 3, 4, 0, 1, 5};
  return pm ? pos[d] : d;
}

/* the six logical coordinates (nn, ty, tx, e, n, c) in storage order */
static void wino_store_order(bool pm, void *const *logical, void **out) {
  for (int d = 0; d < 6; d++) out[wino_pos(pm, d)] = logical[d];
}

static ob_expr *load6(ob_te *te, ob_tensor *t, bool pm, ob_expr *const *logical) {
  ob_expr *idx[6];
  wino_store_order(pm, (void *const *)logical, (void **)idx);
  return ob_te_load(te, t, 6, idx);
}

typedef struct y_ctx { /* Y: M at (nn, ty, tx, e, n, k) */
  ob_tensor *M;
  ob_ivar *nn, *ty, *tx, *n, *k;
  bool pm;
} y_ctx;

static ob_expr *y_term_e(ob_te *te, int e, void *user) {
  y_ctx *y = user;
  return load6(te, y->M, y->pm,
               (ob_expr *[]){ob_te_var(te, y->nn), ob_te_var(te, y->ty), ob_te_var(te, y->tx), ob_te_int(te, e),
                             ob_te_var(te, y->n), ob_te_var(te, y->k)});
}

typedef struct om_ctx { /* out: M at (nn, y/m, x/m, e, n, k) */
  ob_tensor *M;
  ob_expr *nn, *ty, *tx, *k;
  int e;
  bool pm;
} om_ctx;

static ob_expr *om_term_n(ob_te *te, int n, void *user) {
  om_ctx *o = user;
  return load6(te, o->M, o->pm, (ob_expr *[]){o->nn, o->ty, o->tx, ob_te_int(te, o->e), ob_te_int(te, n), o->k});
}

typedef struct o_ctx { /* out: Y at (nn, y/m, x/m, y%m, n, k) */
  ob_tensor *Y;
  ob_expr *nn, *ty, *tx, *a, *k;
} o_ctx;

static ob_expr *o_term_n(ob_te *te, int n, void *user) {
  o_ctx *o = user;
  return ob_te_load(te, o->Y, 6, (ob_expr *[]){o->nn, o->ty, o->tx, o->a, ob_te_int(te, n), o->k});
}

/* Order 2's chunk of the reduction: the largest multiple of unroll_c
 * dividing C whose weight slice (chunk x tile_oc floats) fits half the L1. */
static int64_t wino_rc_chunk(const ob_target *tg, const ob_conv_geom *p, const wino_cfg *w) {
  const ob_target_facts *f = ob_target_get_facts(tg);
  int64_t l1 = f->l1d_bytes > 0 ? f->l1d_bytes : 32768, chunk = w->uc;
  for (int64_t c = w->uc; c <= p->c; c += w->uc)
    if (p->c % c == 0 && c * w->ocb * 4 <= l1 / 2) chunk = c;
  return chunk;
}

ob_status ob_winograd_build(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg,
                            ob_sched **out) {
  ob_conv_geom p = ob_conv2d_geom(wl);
  wino_cfg w = wino_of(wl, cfg);
  wino_mat wm;
  wino_matrices((int)w.m, &wm);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int64_t a = w.alpha;
  ob_tensor *data = ob_te_placeholder(te, "data", 5, (int64_t[]){p.n, p.c / w.icb, p.h, p.w, w.icb}, OB_F32);
  ob_tensor *U = ob_te_placeholder(te, "weight", 5, (int64_t[]){a, a, p.k / w.ocb, p.c, w.ocb}, OB_F32);

  /* T[nn, ty, tx, e, j, c] */
  ob_ivar *tn = ob_te_axis(te, "nn", p.n), *tty = ob_te_axis(te, "ty", w.th), *ttx = ob_te_axis(te, "tx", w.twp);
  ob_ivar *te_ = ob_te_axis(te, "e", a), *tj = ob_te_axis(te, "j", a), *tc = ob_te_axis(te, "c", p.c);
  t_ctx tcx = {&p, &w, data, tn, tty, ttx, tj, tc};
  ob_expr *trows[WINO_MAX_ALPHA];
  for (int i = 0; i < a; i++) trows[i] = lin_comb(te, wm.BT[i], (int)a, t_term, &tcx);
  ob_tensor *T = ob_te_compute(te, "wino_t", 6, (ob_ivar *[]){tn, tty, ttx, te_, tj, tc},
                               chain(te, ob_te_var(te, te_), trows, (int)a));
  /* V[nn, ty, tx, e, n, c] */
  ob_ivar *vn = ob_te_axis(te, "nn", p.n), *vty = ob_te_axis(te, "ty", w.th), *vtx = ob_te_axis(te, "tx", w.twp);
  ob_ivar *ve = ob_te_axis(te, "e", a), *vnu = ob_te_axis(te, "n", a), *vc = ob_te_axis(te, "c", p.c);
  v_ctx vcx = {T, vn, vty, vtx, ve, vc};
  ob_expr *vrows[WINO_MAX_ALPHA];
  for (int n = 0; n < a; n++) vrows[n] = lin_comb(te, wm.BT[n], (int)a, v_term, &vcx);
  bool pm = w.own > 0;
  ob_ivar *vax[6], *max_[6];
  wino_store_order(pm, (void *const *)(ob_ivar *[]){vn, vty, vtx, ve, vnu, vc}, (void **)vax);
  ob_tensor *V = ob_te_compute(te, "wino_v", 6, vax, chain(te, ob_te_var(te, vnu), vrows, (int)a));
  /* M[nn, ty, tx, e, n, k] = sum_c V * U */
  ob_ivar *mn = ob_te_axis(te, "nn", p.n), *mty = ob_te_axis(te, "ty", w.th), *mtx = ob_te_axis(te, "tx", w.twp);
  ob_ivar *me = ob_te_axis(te, "e", a), *mnu = ob_te_axis(te, "n", a), *mk = ob_te_axis(te, "k", p.k);
  ob_ivar *rc = ob_te_reduce_axis(te, "rc", p.c);
  ob_expr *ocb = ob_te_int(te, w.ocb);
  ob_expr *mv = load6(te, V, pm,
                      (ob_expr *[]){ob_te_var(te, mn), ob_te_var(te, mty), ob_te_var(te, mtx), ob_te_var(te, me),
                                    ob_te_var(te, mnu), ob_te_var(te, rc)});
  ob_expr *mu = ob_te_load(te, U, 5,
                           (ob_expr *[]){ob_te_var(te, me), ob_te_var(te, mnu), ob_te_bin(te, OB_DIV, ob_te_var(te, mk), ocb),
                                         ob_te_var(te, rc), ob_te_bin(te, OB_MOD, ob_te_var(te, mk), ocb)});
  wino_store_order(pm, (void *const *)(ob_ivar *[]){mn, mty, mtx, me, mnu, mk}, (void **)max_);
  ob_tensor *M = ob_te_compute(te, "wino_m", 6, max_,
                               ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, mv, mu), 1, &rc));
  /* The output transform, out[nn, kc, y, x, kb] with a = y % m, b = x % m:
   * for F(2x2) and F(4x4) inlined into the output's loop nest as one sum
   * of AT[a][e] AT[b][n] M[.., e, n, k] (the compiler shares the inner
   * sums); for F(6x6) in two stages, Y[nn, ty, tx, a, n, k] = sum_e
   * AT[a][e] M[.., e, n, k] for the block's tiles, then out = sum_n
   * AT[b][n] Y[.., a, n, k]: m x alpha x (alpha + m) terms per tile
   * instead of m^2 x alpha^2. On ResNet-18's 3x3 layers F(6x6)'s one-stage
   * kernels were 0.23-0.69 MB of C, 1.6-7.0 s to compile; two stages have
   * 0.33-0.60 of the C and compile in 0.50-0.69 of the time, except 7x7x512
   * (1.03-1.31x; geomean 0.69-0.71, bench/wino_compile.py); at m = 4 the
   * second stage's round trip through memory cost 9 % (56x56, 64
   * channels) for 1.5x less C, so smaller tiles keep one stage. */
  bool two = w.m >= 6;
  ob_ivar *on = ob_te_axis(te, "n", p.n), *okc = ob_te_axis(te, "kc", p.k / w.ocb), *oy = ob_te_axis(te, "y", p.oh),
          *ox = ob_te_axis(te, "x", p.ow), *okb = ob_te_axis(te, "kb", w.ocb);
  ob_expr *mm = ob_te_int(te, w.m);
  ob_expr *ony = ob_te_var(te, on), *oty = ob_te_bin(te, OB_DIV, ob_te_var(te, oy), mm),
          *otx = ob_te_bin(te, OB_DIV, ob_te_var(te, ox), mm),
          *ok = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, okc), ocb), ob_te_var(te, okb));
  ob_expr *xb = ob_te_bin(te, OB_MOD, ob_te_var(te, ox), mm), *ya = ob_te_bin(te, OB_MOD, ob_te_var(te, oy), mm);
  ob_tensor *Y = NULL, *conv = NULL;
  if (two) {
    ob_ivar *yn = ob_te_axis(te, "nn", p.n), *yty = ob_te_axis(te, "ty", w.th), *ytx = ob_te_axis(te, "tx", w.twp);
    ob_ivar *ya_ = ob_te_axis(te, "a", w.m), *ynu = ob_te_axis(te, "n", a), *yk = ob_te_axis(te, "k", p.k);
    y_ctx ycx = {M, yn, yty, ytx, ynu, yk, pm};
    ob_expr *yrows[WINO_MAX_ALPHA];
    for (int ra = 0; ra < w.m; ra++) yrows[ra] = lin_comb(te, wm.AT[ra], (int)a, y_term_e, &ycx);
    Y = ob_te_compute(te, "wino_y", 6, (ob_ivar *[]){yn, yty, ytx, ya_, ynu, yk},
                      chain(te, ob_te_var(te, ya_), yrows, (int)w.m));
    o_ctx ocx = {Y, ony, oty, otx, ya, ok};
    ob_expr *brows[WINO_MAX_ALPHA];
    for (int bb = 0; bb < w.m; bb++) brows[bb] = lin_comb(te, wm.AT[bb], (int)a, o_term_n, &ocx);
    conv = ob_te_compute(te, "conv", 5, (ob_ivar *[]){on, okc, oy, ox, okb}, chain(te, xb, brows, (int)w.m));
  } else {
    om_ctx ocx = {M, ony, oty, otx, ok, 0, pm};
    ob_expr *orows[WINO_MAX_ALPHA];
    for (int ra = 0; ra < w.m; ra++) {
      ob_expr *acc = NULL;
      for (int ee = 0; ee < a; ee++) {
        double c = wm.AT[ra][ee];
        if (c == 0) continue;
        ob_expr *brows[WINO_MAX_ALPHA];
        ocx.e = ee;
        for (int bb = 0; bb < w.m; bb++) brows[bb] = lin_comb(te, wm.AT[bb], (int)a, om_term_n, &ocx);
        ob_expr *t = chain(te, xb, brows, (int)w.m);
        if (fabs(c) != 1) t = OB_TE_MUL(te, ob_te_float(te, OB_F32, fabs(c)), t);
        if (!acc) acc = c < 0 ? OB_TE_SUB(te, ob_te_float(te, OB_F32, 0.0), t) : t;
        else acc = c < 0 ? OB_TE_SUB(te, acc, t) : OB_TE_ADD(te, acc, t);
      }
      orows[ra] = acc ? acc : ob_te_float(te, OB_F32, 0.0);
    }
    conv = ob_te_compute(te, "conv", 5, (ob_ivar *[]){on, okc, oy, ox, okb}, chain(te, ya, orows, (int)w.m));
  }
  if (!data || !U || !T || !V || !M || (two && !Y) || !conv) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders_n(te, &e, conv, p.k, &ein);
  ob_tensor *mid[8];
  int nmid;
  ob_tensor *o = ob_epilogue_apply_blocked(te, &e, conv, 1, 4, p.k, &ein, mid, &nmid);

  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, o), *sT = ob_sched_stage(s, T), *sV = ob_sched_stage(s, V),
           *sM = ob_sched_stage(s, M), *sY = two ? ob_sched_stage(s, Y) : NULL;
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  if (o != conv && !st) st = ob_sched_compute_inline(s, ob_sched_stage(s, conv));
  /* the output: tiles of m x m, tile_x tiles per block */
  ob_ivar *ty, *yi, *tx, *xi, *txo = NULL, *txi = NULL, *f = NULL, *f1;
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 2), w.m, &ty, &yi);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 3), w.m, &tx, &xi);
  if (!st && w.order != 2 && !w.own) st = ob_sched_split(s, so, tx, w.tp, &txo, &txi);
  ob_ivar *onn = ob_stage_axis(so, 0), *okcv = ob_stage_axis(so, 1), *okbv = ob_stage_axis(so, 4);
  if (!st && w.own) { /* parts of the channel blocks */
    ob_ivar *kpo, *kpi;
    int64_t nkb = p.k / w.ocb;
    st = ob_sched_split(s, so, okcv, (nkb + w.parts - 1) / w.parts, &kpo, &kpi);
    if (!st) st = ob_sched_reorder(s, so, 8, (ob_ivar *[]){onn, kpo, kpi, ty, tx, yi, xi, okbv});
    if (!st) st = ob_sched_fuse(s, so, onn, kpo, &f);
  } else if (!st && w.order == 0) {
    st = ob_sched_reorder(s, so, 8, (ob_ivar *[]){onn, ty, txo, okcv, txi, yi, xi, okbv});
    if (!st) st = ob_sched_fuse(s, so, onn, ty, &f1);
    if (!st) st = ob_sched_fuse(s, so, f1, txo, &f);
  } else if (!st && w.order == 2) {
    st = ob_sched_reorder(s, so, 7, (ob_ivar *[]){okcv, onn, ty, tx, yi, xi, okbv});
    if (!st) st = ob_sched_fuse(s, so, okcv, onn, &f);
  } else if (!st) {
    st = ob_sched_reorder(s, so, 8, (ob_ivar *[]){okcv, onn, ty, txo, txi, yi, xi, okbv});
    if (!st) st = ob_sched_fuse(s, so, okcv, onn, &f1);
    if (!st) st = ob_sched_fuse(s, so, f1, ty, &f1);
    if (!st) st = ob_sched_fuse(s, so, f1, txo, &f);
  }
  if (!st) st = ob_sched_parallel(s, so, f);
  if (!st && w.ocb > 1) st = ob_sched_vectorize(s, so, okbv);
  if (!st) st = ob_sched_unroll(s, so, yi);
  if (!st) st = ob_sched_unroll(s, so, xi);
  /* Y of the block's tiles and channels, tile by tile: the first half of
   * the output transform */
  if (!st && two) {
    ob_ivar *yko, *yki;
    st = ob_sched_compute_at(s, sY, so, f);
    if (!st) st = ob_sched_split(s, sY, ob_stage_axis(sY, 5), w.ocb, &yko, &yki);
    if (!st)
      st = ob_sched_reorder(s, sY, 7, (ob_ivar *[]){ob_stage_axis(sY, 0), ob_stage_axis(sY, 1), ob_stage_axis(sY, 2),
                                                 yko, ob_stage_axis(sY, 3), ob_stage_axis(sY, 4), yki});
    if (!st && w.ocb > 1) st = ob_sched_vectorize(s, sY, yki);
    if (!st) st = ob_sched_unroll(s, sY, ob_stage_axis(sY, 3));
    if (!st) st = ob_sched_unroll(s, sY, ob_stage_axis(sY, 4));
  }
  /* the GEMM of a block: its region is the block's tiles and every
   * channel (order 0), or one channel block (order 1), of every tile of
   * the image (order 2), or the part's channel blocks of every tile
   * ("own") */
  if (!st) st = two ? ob_sched_compute_at(s, sM, sY, ob_stage_axis(sY, 0)) : ob_sched_compute_at(s, sM, so, f);
  ob_ivar *kco, *kci, *rco, *rci;
  if (!st) st = ob_sched_split(s, sM, ob_stage_axis(sM, wino_pos(pm, 5)), w.ocb, &kco, &kci);
  if (!st) st = ob_sched_split(s, sM, ob_stage_reduce_axis(sM, 0), w.uc, &rco, &rci);
  ob_ivar *mnn = ob_stage_axis(sM, wino_pos(pm, 0)), *mtyv = ob_stage_axis(sM, wino_pos(pm, 1)),
          *mtxv = ob_stage_axis(sM, wino_pos(pm, 2)), *mev = ob_stage_axis(sM, wino_pos(pm, 3)),
          *mnv = ob_stage_axis(sM, wino_pos(pm, 4));
  if (!st && (w.order == 2 || w.own)) {
    /* point by point, every tile block of the image under one point's
     * weight slice; the slice is cut into chunks of the reduction that fit
     * half the L1 (rc_chunk x tile_oc floats), so that the tile blocks
     * after the first read it from L1, not L2: a weight vector feeds only
     * tile_x multiply-adds, too few for L2's bandwidth. The accumulators
     * go to memory (the block's M) once per chunk. */
    ob_ivar *mt, *mto, *rcc;
    int64_t chunk = wino_rc_chunk(tg, &p, &w);
    st = ob_sched_fuse(s, sM, mtyv, mtxv, &mt); /* the image's tiles, blocks of tile_x */
    if (!st) st = ob_sched_split(s, sM, mt, w.tp, &mto, &mtxv);
    if (!st) st = ob_sched_split(s, sM, rco, chunk / w.uc, &rcc, &rco);
    /* a part's channel blocks one after the other, each as order 2's one */
    if (!st && w.own)
      st = ob_sched_reorder(s, sM, 10, (ob_ivar *[]){mnn, kco, mev, mnv, rcc, mto, rco, rci, mtxv, kci});
    else if (!st)
      st = ob_sched_reorder(s, sM, 10, (ob_ivar *[]){mnn, mev, mnv, kco, rcc, mto, rco, rci, mtxv, kci});
  } else if (!st)
    st = ob_sched_reorder(s, sM, 9, (ob_ivar *[]){mnn, mtyv, mev, mnv, kco, rco, rci, mtxv, kci});
  if (!st && w.ocb > 1) st = ob_sched_vectorize(s, sM, kci);
  if (!st) st = ob_sched_unroll(s, sM, mtxv); /* the block of accumulators */
  if (!st && w.uc > 1) st = ob_sched_unroll(s, sM, rci);
  /* the input transform: per block (order 0) or per part ("own"), in the
   * GEMM's first (one-trip) loop, or for all tiles at the root */
  ob_ivar *vco, *vci, *vf;
  if (!st && (w.order == 0 || w.own)) st = ob_sched_compute_at(s, sV, sM, mnn);
  if (!st) st = ob_sched_split(s, sV, ob_stage_axis(sV, 5), w.icb, &vco, &vci);
  ob_ivar *vnn = ob_stage_axis(sV, wino_pos(pm, 0)), *vtyv = ob_stage_axis(sV, wino_pos(pm, 1)),
          *vtxv = ob_stage_axis(sV, wino_pos(pm, 2)), *vev = ob_stage_axis(sV, wino_pos(pm, 3)),
          *vnv = ob_stage_axis(sV, wino_pos(pm, 4));
  if (!st) st = ob_sched_reorder(s, sV, 7, (ob_ivar *[]){vnn, vtyv, vtxv, vco, vev, vnv, vci});
  if (!st && w.order != 0 && !w.own) {
    st = ob_sched_fuse(s, sV, vnn, vtyv, &vf);
    if (!st) st = ob_sched_fuse(s, sV, vf, vtxv, &vf);
    if (!st) st = ob_sched_parallel(s, sV, vf);
  }
  if (!st && w.icb > 1) st = ob_sched_vectorize(s, sV, vci);
  if (!st) st = ob_sched_unroll(s, sV, vnv);
  if (!st) st = ob_sched_compute_at(s, sT, sV, vco);
  ob_ivar *tco, *tci;
  if (!st) st = ob_sched_split(s, sT, ob_stage_axis(sT, 5), w.icb, &tco, &tci);
  if (!st)
    st = ob_sched_reorder(s, sT, 7, (ob_ivar *[]){ob_stage_axis(sT, 0), ob_stage_axis(sT, 1), ob_stage_axis(sT, 2), tco,
                                               ob_stage_axis(sT, 3), ob_stage_axis(sT, 4), tci});
  if (!st && w.icb > 1) st = ob_sched_vectorize(s, sT, tci);
  if (!st) st = ob_sched_unroll(s, sT, ob_stage_axis(sT, 3));
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

/* ---- layouts ----------------------------------------------------------------- */
int64_t ob_winograd_arg_numel(const ob_workload *wl, const ob_config *cfg, int arg) {
  ob_conv_geom p = ob_conv2d_geom(wl);
  wino_cfg w = wino_of(wl, cfg);
  if (arg == 1) return OB_NUMEL(w.alpha, w.alpha, p.k, p.c); /* U */
  return ob_workload_arg_numel(wl, arg);
}

static void wino_move(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst,
                      bool to_kernel) {
  ob_conv_geom p = ob_conv2d_geom(wl);
  wino_cfg w = wino_of(wl, cfg);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int bias_arg = ob_epilogue_has(&e, OB_EPI_BIAS) ? 2 : -1;
  if (arg == bias_arg) {
    memcpy(dst, src, sizeof(float) * (size_t)p.k);
    return;
  }
  if (arg == 1) { /* weight [K, C, 3, 3] -> U [alpha][alpha][K/ocb][C][ocb] = G g G^T */
    OB_ASSERT(to_kernel);
    wino_mat wm;
    wino_matrices((int)w.m, &wm);
    int64_t a = w.alpha;
    for (int64_t k = 0; k < p.k; k++)
      for (int64_t c = 0; c < p.c; c++) {
        const float *g = src + (k * p.c + c) * 9;
        double gg[WINO_MAX_ALPHA][3]; /* G g */
        for (int64_t i = 0; i < a; i++)
          for (int s = 0; s < 3; s++)
            gg[i][s] = wm.G[i][0] * g[0 * 3 + s] + wm.G[i][1] * g[1 * 3 + s] + wm.G[i][2] * g[2 * 3 + s];
        for (int64_t i = 0; i < a; i++)
          for (int64_t j = 0; j < a; j++) {
            double u = wm.G[j][0] * gg[i][0] + wm.G[j][1] * gg[i][1] + wm.G[j][2] * gg[i][2];
            dst[(((i * a + j) * (p.k / w.ocb) + k / w.ocb) * p.c + c) * w.ocb + k % w.ocb] = (float)u;
          }
      }
    return;
  }
  /* data NCHW <-> N C/icb H W icb; residual and output NKHW <-> N K/ocb OH OW ocb */
  int64_t ch = arg == 0 ? p.c : p.k, blk = arg == 0 ? w.icb : w.ocb, hw = arg == 0 ? p.h * p.w : p.oh * p.ow;
  for (int64_t n = 0; n < p.n; n++)
    for (int64_t c = 0; c < ch; c++)
      for (int64_t i = 0; i < hw; i++) {
        int64_t plain = (n * ch + c) * hw + i;
        int64_t b = ((n * (ch / blk) + c / blk) * hw + i) * blk + c % blk;
        if (to_kernel) dst[b] = src[plain];
        else dst[plain] = src[b];
      }
}

void ob_winograd_pack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  wino_move(wl, cfg, arg, src, dst, true);
}
void ob_winograd_unpack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  wino_move(wl, cfg, arg, src, dst, false);
}
/* The activations are conv2d_NCHWc.x86's blocked layouts (the blocks divide
 * their channel counts: no padding), so a graph runtime keeps them blocked
 * between this kernel and its neighbours; only the transformed weights U
 * are the template's own (packed once, at load). */
ob_arg_layout ob_winograd_layout(const ob_workload *wl, const ob_config *cfg, int arg) {
  wino_cfg w = wino_of(wl, cfg);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int bias_arg = ob_epilogue_has(&e, OB_EPI_BIAS) ? 2 : -1;
  if (arg == 0) return (ob_arg_layout){OB_ARGL_NCHWC, w.icb};
  if (arg == 1) return (ob_arg_layout){OB_ARGL_OPAQUE, 0};
  if (arg == bias_arg) return (ob_arg_layout){OB_ARGL_PLAIN, 0};
  return (ob_arg_layout){OB_ARGL_NCHWC, w.ocb};
}

ob_tolerance ob_winograd_config_tolerance(const ob_workload *wl, const ob_config *cfg) {
  (void)wl;
  return ob_winograd_tolerance((int)ob_config_knob(cfg, "tile_m"));
}
