/* gpu_tmpl.c: the GPU schedule templates, after AutoTVM's CUDA ones (TVM's
 * topi/cuda), for targets cuda and opencl:
 *   - direct convolution (conv2d_nchw.cuda, depthwise_conv2d_nchw.cuda):
 *     knobs tile_f, tile_y, tile_x (4-way: block, virtual thread, thread,
 *     inner), tile_rc, tile_ry, tile_rx (2-way; conv2d only),
 *     auto_unroll_max_step, unroll_explicit. Output tiles per block, each
 *     thread accumulating its outputs in registers (a local stage computed
 *     at the thread), input and weight tiles fetched into shared memory by
 *     all threads of the block at each step of the outer reduction loops.
 *     AutoTVM's virtual threads are the stride-friendly split here: a
 *     thread's outputs along an axis are v groups of i neighbours spaced a
 *     block of threads apart, so consecutive threads touch consecutive
 *     words (no shared-memory bank conflicts, coalesced stores); lowering
 *     stores such a strided register tile compactly.
 *   - dense_small_batch.gpu (knob tile_k): one output per block, the
 *     reduction split over the block's threads (partial sums in shared
 *     memory, each thread reading consecutive words), then summed.
 *   - dense_large_batch.gpu and batch_matmul.cuda (tile_y, tile_x 3-way,
 *     tile_k 2-way, auto_unroll_max_step, unroll_explicit): a tiled GEMM
 *     with shared-memory tiles of A and B and a register tile per thread.
 * Fallback configs are chosen from the target's facts (threads per block,
 * warp size); no config is filtered out: a config over the device's launch
 * limits fails at lowering with its limit named (AutoTVM's instantiation
 * error, class 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

/* The largest divisor of n that is at most m (>= 1). */
static int64_t ldiv_le(int64_t n, int64_t m) {
  for (int64_t d = m < n ? m : n; d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

static ob_status define_unroll(ob_space *sp, const int64_t *steps, int nsteps) {
  ob_status st = ob_space_define_knob(sp, "auto_unroll_max_step", steps, nsteps);
  if (!st) st = ob_space_define_knob(sp, "unroll_explicit", (int64_t[]){0, 1}, 2);
  return st;
}

static ob_status apply_unroll(ob_sched *s, const ob_config *cfg) {
  return ob_sched_unroll_pragma(s, ob_config_knob(cfg, "auto_unroll_max_step"),
                                ob_config_knob(cfg, "unroll_explicit") != 0);
}

/* The factors of a split knob, outermost first, into out[n]. */
static void knob_split(const ob_config *cfg, const char *name, int64_t *out) { ob_config_split(cfg, name, out); }

/* Splits iv into n loops by the inner factors f[1..n-1] (f[0] is the
 * outermost, implied): out[0] outermost ... out[n-1] innermost. */
static ob_status split_n(ob_sched *s, ob_stage *st, ob_ivar *iv, const int64_t *f, int n, ob_ivar **out) {
  ob_ivar *cur = iv;
  for (int k = n - 1; k >= 1; k--) {
    ob_ivar *o, *i;
    ob_status r = ob_sched_split(s, st, cur, f[k], &o, &i);
    if (r) return r;
    out[k] = i;
    cur = o;
  }
  out[0] = cur;
  return OB_OK;
}

/* The cooperative fetch of a shared stage: its axes fused and split over
 * the block's threads (x fastest), so that consecutive threads copy
 * consecutive elements; an outer serial loop repeats it over the region. */
static ob_status coop_fetch(ob_sched *s, ob_stage *ld, const int64_t threads[3]) {
  int n = ob_stage_num_axes(ld);
  ob_ivar *fused = ob_stage_axis(ld, 0);
  ob_status st = OB_OK;
  for (int d = 1; d < n && !st; d++) st = ob_sched_fuse(s, ld, fused, ob_stage_axis(ld, d), &fused);
  ob_ivar *o1, *ix, *o2, *iy, *o3, *iz;
  if (!st) st = ob_sched_split(s, ld, fused, threads[0], &o1, &ix);
  if (!st) st = ob_sched_split(s, ld, o1, threads[1], &o2, &iy);
  if (!st) st = ob_sched_split(s, ld, o2, threads[2], &o3, &iz);
  if (!st && threads[0] > 1) st = ob_sched_bind(s, ld, ix, OB_IT_THREAD_X);
  if (!st && threads[1] > 1) st = ob_sched_bind(s, ld, iy, OB_IT_THREAD_Y);
  if (!st && threads[2] > 1) st = ob_sched_bind(s, ld, iz, OB_IT_THREAD_Z);
  return st;
}

/* ---- direct convolution --------------------------------------------------------- */

ob_status ob_gpu_conv_define(const ob_target *tg, ob_space *sp, ob_config *dflt, int64_t f, int64_t y, int64_t x,
                             int64_t rc, int64_t ry, int64_t rx) {
  const ob_gpu_facts *g = &ob_target_get_facts(tg)->gpu;
  ob_split_opts four = {.policy = OB_SPLIT_FACTORS, .num_outputs = 4};
  ob_split_opts two = {.policy = OB_SPLIT_FACTORS, .num_outputs = 2};
  ob_status st = ob_space_define_split(sp, "tile_f", f, &four);
  if (!st) st = ob_space_define_split(sp, "tile_y", y, &four);
  if (!st) st = ob_space_define_split(sp, "tile_x", x, &four);
  if (!st && rc) st = ob_space_define_split(sp, "tile_rc", rc, &two);
  if (!st && rc) st = ob_space_define_split(sp, "tile_ry", ry, &two);
  if (!st && rc) st = ob_space_define_split(sp, "tile_rx", rx, &two);
  if (!st) st = rc ? define_unroll(sp, (int64_t[]){0, 512, 1500}, 3) : define_unroll(sp, (int64_t[]){0, 256, 1500}, 3);
  if (st) return st;
  /* fallback: up to 8 x 4 x 8 threads (within the device's block), each
   * with up to 4 output channels and 2 columns; input channels 8 at a
   * time, the whole window per step */
  int64_t most = g->max_threads_per_block > 0 ? g->max_threads_per_block : 256;
  int64_t tf = ldiv_le(f, 8), ty = ldiv_le(y, 4), tx = ldiv_le(x, 8);
  while (tf * ty * tx > most && tf > 1) tf = ldiv_le(f, tf - 1);
  while (tf * ty * tx > most && ty > 1) ty = ldiv_le(y, ty - 1);
  int64_t fi = ldiv_le(f / tf, 4), xi = ldiv_le(x / tx, 2);
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_f", (int64_t[]){1, tf, fi}, 3);
  ob_config_set_split(&c, "tile_y", (int64_t[]){1, ty, 1}, 3);
  ob_config_set_split(&c, "tile_x", (int64_t[]){1, tx, xi}, 3);
  if (rc) {
    ob_config_set_split(&c, "tile_rc", (int64_t[]){ldiv_le(rc, 8)}, 1);
    ob_config_set_split(&c, "tile_ry", (int64_t[]){ry}, 1);
    ob_config_set_split(&c, "tile_rx", (int64_t[]){rx}, 1);
  }
  ob_config_set_knob(&c, "auto_unroll_max_step", rc ? 512 : 256);
  ob_config_set_knob(&c, "unroll_explicit", 1);
  *dflt = c;
  return OB_OK;
}

ob_status ob_gpu_conv_schedule(ob_sched *s, ob_stage *so, ob_stage *sacc, const ob_tensor *src,
                               const ob_tensor *pad, const ob_tensor *weight, const ob_config *cfg, bool has_rc) {
  ob_status st = OB_OK;
  if (pad) st = ob_sched_compute_inline(s, ob_sched_stage(s, pad));
  if (!st && so == sacc) st = ob_sched_cache_write(s, so, &sacc);
  ob_stage *aa = NULL, *ww = NULL;
  if (!st) st = ob_sched_cache_read(s, src, OB_SCOPE_SHARED, 1, &sacc, &aa);
  if (!st) st = ob_sched_cache_read(s, weight, OB_SCOPE_SHARED, 1, &sacc, &ww);
  if (st) return st;
  int64_t tf[4], ty[4], tx[4];
  knob_split(cfg, "tile_f", tf);
  knob_split(cfg, "tile_y", ty);
  knob_split(cfg, "tile_x", tx);
  ob_ivar *F[4], *Y[4], *X[4], *nb;
  st = split_n(s, so, ob_stage_axis(so, 1), tf, 4, F);
  if (!st) st = split_n(s, so, ob_stage_axis(so, 2), ty, 4, Y);
  if (!st) st = split_n(s, so, ob_stage_axis(so, 3), tx, 4, X);
  if (!st) st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), F[0], &nb);
  /* blocks, threads, then a thread's own outputs: the virtual-thread parts
   * (stride of a block of threads) outside the inner neighbours */
  if (!st) st = ob_sched_reorder(s, so, 12, (ob_ivar *[]){nb, Y[0], X[0], F[2], Y[2], X[2], F[1], Y[1], X[1], F[3], Y[3], X[3]});
  if (!st) st = ob_sched_bind(s, so, nb, OB_IT_BLOCK_Z);
  if (!st) st = ob_sched_bind(s, so, Y[0], OB_IT_BLOCK_Y);
  if (!st) st = ob_sched_bind(s, so, X[0], OB_IT_BLOCK_X);
  if (!st) st = ob_sched_bind(s, so, F[2], OB_IT_THREAD_Z);
  if (!st) st = ob_sched_bind(s, so, Y[2], OB_IT_THREAD_Y);
  if (!st) st = ob_sched_bind(s, so, X[2], OB_IT_THREAD_X);
  if (!st) st = ob_sched_compute_at(s, sacc, so, X[2]);
  if (st) return st;

  /* the accumulating stage: reduction steps outside, the thread's outputs
   * innermost (unrolled into registers by the pragma) */
  int nred = ob_stage_num_reduce_axes(sacc);
  ob_ivar *an = ob_stage_axis(sacc, 0), *af = ob_stage_axis(sacc, 1), *ay = ob_stage_axis(sacc, 2),
          *ax = ob_stage_axis(sacc, 3);
  ob_ivar *attach_iv = NULL;
  ob_stage *attach_st = sacc;
  if (has_rc) {
    int64_t rc[2], ry[2], rx[2];
    knob_split(cfg, "tile_rc", rc);
    knob_split(cfg, "tile_ry", ry);
    knob_split(cfg, "tile_rx", rx);
    ob_ivar *RC[2], *RY[2], *RX[2];
    st = split_n(s, sacc, ob_stage_reduce_axis(sacc, 0), rc, 2, RC);
    if (!st) st = split_n(s, sacc, ob_stage_reduce_axis(sacc, 1), ry, 2, RY);
    if (!st) st = split_n(s, sacc, ob_stage_reduce_axis(sacc, 2), rx, 2, RX);
    if (!st)
      st = ob_sched_reorder(s, sacc, 10, (ob_ivar *[]){RC[0], RY[0], RX[0], RC[1], RY[1], RX[1], an, af, ay, ax});
    attach_iv = RX[0];
    attach_st = sacc;
  } else {
    /* a one-trip loop around the whole reduction to attach the tiles at:
     * fetched once per thread block, as the window is small */
    ob_ivar *r0 = ob_stage_reduce_axis(sacc, 0), *ro, *ri;
    st = ob_sched_split(s, sacc, r0, ob_ivar_extent(r0), &ro, &ri);
    ob_ivar *order[10];
    int k = 0;
    order[k++] = ro;
    order[k++] = ri;
    for (int r = 1; r < nred; r++) order[k++] = ob_stage_reduce_axis(sacc, r);
    order[k++] = an;
    order[k++] = af;
    order[k++] = ay;
    order[k++] = ax;
    if (!st) st = ob_sched_reorder(s, sacc, k, order);
    attach_iv = ro;
    attach_st = sacc;
  }
  /* tiles fetched by every thread of the block, once per reduction step
   * (conv2d) or once per block (depthwise: the window is small) */
  if (!st) st = ob_sched_compute_at(s, aa, attach_st, attach_iv);
  if (!st) st = ob_sched_compute_at(s, ww, attach_st, attach_iv);
  int64_t threads[3] = {tx[2], ty[2], tf[2]};
  if (!st) st = coop_fetch(s, aa, threads);
  if (!st) st = coop_fetch(s, ww, threads);
  if (!st) st = apply_unroll(s, cfg);
  return st;
}

/* ---- tiled GEMM: dense_large_batch.gpu, batch_matmul.cuda ---------------------- */
typedef struct gemm_p {
  int64_t b, m, n, k; /* b 0: dense */
} gemm_p;

static gemm_p gemm_params(const ob_workload *wl) {
  gemm_p p = {0, ob_workload_get(wl, "M"), ob_workload_get(wl, "N"), ob_workload_get(wl, "K")};
  if (!strcmp(wl->op, "batch_matmul")) p.b = ob_workload_get(wl, "B");
  return p;
}

ob_status ob_gpu_gemm_define(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp,
                             ob_config *dflt) {
  (void)ctx;
  gemm_p p = gemm_params(wl);
  const ob_gpu_facts *g = &ob_target_get_facts(tg)->gpu;
  ob_split_opts three = {.policy = OB_SPLIT_FACTORS, .num_outputs = 3};
  ob_split_opts two = {.policy = OB_SPLIT_FACTORS, .num_outputs = 2};
  ob_status st = ob_space_define_split(sp, "tile_y", p.m, &three);
  if (!st) st = ob_space_define_split(sp, "tile_x", p.n, &three);
  if (!st) st = ob_space_define_split(sp, "tile_k", p.k, &two);
  if (!st) st = define_unroll(sp, (int64_t[]){0, 16, 64, 512}, 4);
  if (st) return st;
  /* fallback: 8 x 16 threads, 4 x 4 outputs each, K 8 at a time */
  int64_t most = g->max_threads_per_block > 0 ? g->max_threads_per_block : 256;
  int64_t ty = ldiv_le(p.m, 8), tx = ldiv_le(p.n, 16);
  while (ty * tx > most && tx > 1) tx = ldiv_le(p.n, tx - 1);
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_y", (int64_t[]){ty, ldiv_le(p.m / ty, 4)}, 2);
  ob_config_set_split(&c, "tile_x", (int64_t[]){tx, ldiv_le(p.n / tx, 4)}, 2);
  ob_config_set_split(&c, "tile_k", (int64_t[]){ldiv_le(p.k, 8)}, 1);
  ob_config_set_knob(&c, "auto_unroll_max_step", 512);
  ob_config_set_knob(&c, "unroll_explicit", 1);
  *dflt = c;
  return OB_OK;
}

/* C[(b,) m, n] = sum_k A[(b,) m, k] * B[(b,) n, k], then the epilogue. */
static ob_status gemm_declare(ob_te *te, const ob_workload *wl, ob_tensor **A, ob_tensor **B, ob_tensor **C,
                              ob_tensor **O, ob_tensor **mid, int *nmid) {
  gemm_p p = gemm_params(wl);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int nd = p.b ? 3 : 2;
  *A = p.b ? ob_te_placeholder(te, "A", 3, (int64_t[]){p.b, p.m, p.k}, OB_F32)
           : ob_te_placeholder(te, "A", 2, (int64_t[]){p.m, p.k}, OB_F32);
  *B = p.b ? ob_te_placeholder(te, "B", 3, (int64_t[]){p.b, p.n, p.k}, OB_F32)
           : ob_te_placeholder(te, "B", 2, (int64_t[]){p.n, p.k}, OB_F32);
  ob_ivar *ab = p.b ? ob_te_axis(te, "b", p.b) : NULL;
  ob_ivar *am = ob_te_axis(te, "m", p.m), *an = ob_te_axis(te, "n", p.n), *rk = ob_te_reduce_axis(te, "k", p.k);
  ob_expr *ia[3], *ib[3];
  int k = 0;
  if (ab) {
    ia[k] = ob_te_var(te, ab);
    ib[k++] = ob_te_var(te, ab);
  }
  ia[k] = ob_te_var(te, am);
  ib[k++] = ob_te_var(te, an);
  ia[k] = ob_te_var(te, rk);
  ib[k++] = ob_te_var(te, rk);
  ob_ivar *axes[3];
  int na = 0;
  if (ab) axes[na++] = ab;
  axes[na++] = am;
  axes[na++] = an;
  *C = ob_te_compute(te, p.b ? "batch_matmul" : "dense", nd, axes,
                     ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, ob_te_load(te, *A, k, ia), ob_te_load(te, *B, k, ib)),
                                  1, &rk));
  if (!*A || !*B || !*C) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders(te, &e, *C, nd - 1, &ein);
  *O = ob_epilogue_apply(te, &e, *C, nd - 1, &ein, mid, nmid);
  return OB_OK;
}

ob_status ob_gpu_gemm_build(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg,
                            ob_sched **out) {
  (void)tg;
  gemm_p p = gemm_params(wl);
  ob_tensor *A, *B, *C, *O, *mid[8];
  int nmid = 0;
  ob_status st = gemm_declare(te, wl, &A, &B, &C, &O, mid, &nmid);
  if (st) return st;
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &O, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, O), *sc = ob_sched_stage(s, C);
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  if (!st && so == sc) st = ob_sched_cache_write(s, so, &sc);
  ob_stage *aa = NULL, *bb = NULL;
  if (!st) st = ob_sched_cache_read(s, A, OB_SCOPE_SHARED, 1, &sc, &aa);
  if (!st) st = ob_sched_cache_read(s, B, OB_SCOPE_SHARED, 1, &sc, &bb);
  int64_t ty[3], tx[3], tk[2];
  knob_split(cfg, "tile_y", ty);
  knob_split(cfg, "tile_x", tx);
  knob_split(cfg, "tile_k", tk);
  int off = p.b ? 1 : 0;
  ob_ivar *Y[3], *X[3];
  if (!st) st = split_n(s, so, ob_stage_axis(so, off), ty, 3, Y);
  if (!st) st = split_n(s, so, ob_stage_axis(so, off + 1), tx, 3, X);
  if (!st) {
    ob_ivar *ord[7];
    int k = 0;
    if (p.b) ord[k++] = ob_stage_axis(so, 0);
    ob_ivar *rest[] = {Y[0], X[0], Y[1], X[1], Y[2], X[2]};
    for (int i = 0; i < 6; i++) ord[k++] = rest[i];
    st = ob_sched_reorder(s, so, k, ord);
  }
  if (!st && p.b) st = ob_sched_bind(s, so, ob_stage_axis(so, 0), OB_IT_BLOCK_Z);
  if (!st) st = ob_sched_bind(s, so, Y[0], OB_IT_BLOCK_Y);
  if (!st) st = ob_sched_bind(s, so, X[0], OB_IT_BLOCK_X);
  if (!st) st = ob_sched_bind(s, so, Y[1], OB_IT_THREAD_Y);
  if (!st) st = ob_sched_bind(s, so, X[1], OB_IT_THREAD_X);
  if (!st) st = ob_sched_compute_at(s, sc, so, X[1]);
  ob_ivar *K[2];
  if (!st) st = split_n(s, sc, ob_stage_reduce_axis(sc, 0), tk, 2, K);
  if (!st) {
    ob_ivar *ord[5];
    int k = 0;
    ord[k++] = K[0];
    ord[k++] = K[1];
    for (int d = 0; d < ob_stage_num_axes(sc); d++) ord[k++] = ob_stage_axis(sc, d);
    st = ob_sched_reorder(s, sc, k, ord);
  }
  if (!st) st = ob_sched_compute_at(s, aa, sc, K[0]);
  if (!st) st = ob_sched_compute_at(s, bb, sc, K[0]);
  int64_t threads[3] = {tx[1], ty[1], 1};
  if (!st) st = coop_fetch(s, aa, threads);
  if (!st) st = coop_fetch(s, bb, threads);
  if (!st) st = apply_unroll(s, cfg);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

/* ---- dense_small_batch.gpu --------------------------------------------------------- */
ob_status ob_gpu_dense_small_define(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp,
                                    ob_config *dflt) {
  (void)ctx;
  const ob_gpu_facts *g = &ob_target_get_facts(tg)->gpu;
  int64_t k = ob_workload_get(wl, "K");
  ob_status st = ob_space_define_split(sp, "tile_k", k, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2});
  if (st) return st;
  /* fallback: two warps of threads over K (or the most that divide it) */
  int64_t warp = g->warp_size > 1 ? g->warp_size : 32;
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_k", (int64_t[]){ldiv_le(k, 2 * warp)}, 1);
  *dflt = c;
  return OB_OK;
}

/* partial[m, n, t] = sum_ko A[m, ko*T + t] * B[n, ko*T + t] (T threads, each
 * reading consecutive words of the rows), C[m, n] = sum_t partial[m, n, t]. */
ob_status ob_gpu_dense_small_build(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg,
                                   ob_sched **out) {
  (void)tg;
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N"), K = ob_workload_get(wl, "K");
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int64_t tk[2];
  knob_split(cfg, "tile_k", tk);
  int64_t T = tk[1];
  ob_tensor *A = ob_te_placeholder(te, "A", 2, (int64_t[]){M, K}, OB_F32);
  ob_tensor *B = ob_te_placeholder(te, "B", 2, (int64_t[]){N, K}, OB_F32);
  ob_ivar *pm = ob_te_axis(te, "m", M), *pn = ob_te_axis(te, "n", N), *pt = ob_te_axis(te, "t", T);
  ob_ivar *ko = ob_te_reduce_axis(te, "ko", K / T);
  ob_expr *kk = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, ko), ob_te_int(te, T)), ob_te_var(te, pt));
  ob_expr *prod = OB_TE_MUL(te, ob_te_load(te, A, 2, (ob_expr *[]){ob_te_var(te, pm), kk}),
                            ob_te_load(te, B, 2, (ob_expr *[]){ob_te_var(te, pn), kk}));
  ob_tensor *P = ob_te_compute(te, "partial", 3, (ob_ivar *[]){pm, pn, pt},
                               ob_te_reduce(te, OB_REDUCE_SUM, prod, 1, &ko));
  ob_ivar *cm = ob_te_axis(te, "m", M), *cn = ob_te_axis(te, "n", N), *rt = ob_te_reduce_axis(te, "t", T);
  ob_tensor *C = ob_te_compute(
      te, "dense", 2, (ob_ivar *[]){cm, cn},
      ob_te_reduce(te, OB_REDUCE_SUM,
                   ob_te_load(te, P, 3, (ob_expr *[]){ob_te_var(te, cm), ob_te_var(te, cn), ob_te_var(te, rt)}), 1,
                   &rt));
  if (!A || !B || !P || !C) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders(te, &e, C, 1, &ein);
  ob_tensor *mid[8];
  int nmid;
  ob_tensor *O = ob_epilogue_apply(te, &e, C, 1, &ein, mid, &nmid);
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &O, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, O), *sc = ob_sched_stage(s, C), *sp = ob_sched_stage(s, P);
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  /* the final sum in a register of each thread (every thread sums the same
   * partials: no thread updates global memory but with its own result) */
  if (!st && so == sc) st = ob_sched_cache_write(s, so, &sc);
  if (!st) st = ob_sched_bind(s, so, ob_stage_axis(so, 0), OB_IT_BLOCK_Y);
  if (!st) st = ob_sched_bind(s, so, ob_stage_axis(so, 1), OB_IT_BLOCK_X);
  if (!st) st = ob_sched_compute_at(s, sc, so, ob_stage_axis(so, 1));
  if (!st) st = ob_sched_set_scope(s, sp, OB_SCOPE_SHARED);
  /* at the sum's outermost loop (one trip: its region is a block's) */
  if (!st) st = ob_sched_compute_at(s, sp, sc, ob_stage_axis(sc, 0));
  if (!st) st = ob_sched_bind(s, sp, ob_stage_axis(sp, 2), OB_IT_THREAD_X);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}
