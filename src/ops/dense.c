/* dense.c: C[M,N] = A[M,K] * B[N,K]^T (+ epilogue), float32. Template
 * dense.x86 splits the reduction by the vector width at the compute level
 * (partial[m,n,kl] = sum over ko of A[m,ko*v+kl]*B[n,ko*v+kl], then a sum
 * over kl), so the hot loop is a vector FMA over contiguous rows of A and B
 * into a block of (m x n) vector accumulators computed at the output tile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

static const char *const k_attrs[] = {"M", "N", "K"};
static const int64_t k_defaults[] = {OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  for (int i = 0; i < 3; i++)
    if (ob_workload_get(wl, k_attrs[i]) < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "dense: %s must be >= 1 (got %lld)", k_attrs[i],
                     (long long)ob_workload_get(wl, k_attrs[i]));
  int64_t m = ob_workload_get(wl, "M"), n = ob_workload_get(wl, "N"), k = ob_workload_get(wl, "K");
  ob_status st = ob_check_numel(ctx, "dense A (M x K)", 2, (int64_t[]){m, k}, NULL);
  if (!st) st = ob_check_numel(ctx, "dense B (N x K)", 2, (int64_t[]){n, k}, NULL);
  if (!st) st = ob_check_numel(ctx, "dense C (M x N)", 2, (int64_t[]){m, n}, NULL);
  return st;
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  snprintf(out, cap, "dense/f32/M%lldN%lldK%lld", (long long)ob_workload_get(wl, "M"),
           (long long)ob_workload_get(wl, "N"), (long long)ob_workload_get(wl, "K"));
}

static double flops(const ob_workload *wl) {
  return 2.0 * (double)ob_workload_get(wl, "M") * (double)ob_workload_get(wl, "N") *
         (double)ob_workload_get(wl, "K");
}

static int64_t reduce_len(const ob_workload *wl) { return ob_workload_get(wl, "K"); }

static int args(const ob_workload *wl, ob_arg_info *out) {
  int64_t m = ob_workload_get(wl, "M"), n = ob_workload_get(wl, "N"), k = ob_workload_get(wl, "K");
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int c = 0;
  out[c++] = (ob_arg_info){"A", OB_NUMEL(m, k), true};
  out[c++] = (ob_arg_info){"B", OB_NUMEL(n, k), true};
  c += ob_epilogue_args(&e, n, OB_NUMEL(m, n), out + c);
  out[c++] = (ob_arg_info){"C", OB_NUMEL(m, n), false};
  return c;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N"), K = ob_workload_get(wl, "K");
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  const float *A = bufs[0], *B = bufs[1];
  int a = 2;
  const float *bias = ob_epilogue_has(&e, OB_EPI_BIAS) ? bufs[a++] : NULL;
  const float *res = ob_epilogue_has(&e, OB_EPI_ADD) ? bufs[a++] : NULL;
  float *C = bufs[a];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = 0;
      for (int64_t k = 0; k < K; k++) s += (double)A[i * K + k] * B[j * K + k];
      C[i * N + j] = (float)ob_epilogue_ref_at(&e, s, i * N + j, N, 1, bias, res);
    }
}

/* ---- template dense.x86 ---------------------------------------------------- */
/* A tile of tile_y x tile_x partial sums, each vec_k lanes wide, within the
 * target's accumulator budget. */
static bool regblock_ok(const ob_config *cfg, void *user) {
  const ob_target *tg = user;
  int64_t y[2], x[2];
  ob_config_split(cfg, "tile_y", y);
  ob_config_split(cfg, "tile_x", x);
  return y[1] * x[1] * ob_tmpl_vectors(tg, ob_config_knob(cfg, "vec_k")) <= ob_tmpl_budget(tg);
}

static ob_status define_dense(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N"), K = ob_workload_get(wl, "K");
  int64_t vk[8], all[8];
  int nvk = 0, na = ob_tmpl_vec_choices(tg, all);
  for (int i = 0; i < na && all[i] <= ob_tmpl_lanes(tg); i++) /* up to one vector */
    if (K % all[i] == 0) vk[nvk++] = all[i];
  if (!nvk) vk[nvk++] = 1; /* no vector split of K divides it: scalar reduction */
  ob_status st = ob_space_define_split(sp, "tile_y", M, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 8});
  /* tile_x bounds a count of columns (each its own accumulator), not lanes */
  if (!st) st = ob_space_define_split(sp, "tile_x", N, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 16});
  if (!st) st = ob_space_define_knob(sp, "vec_k", vk, nvk);
  if (!st) st = ob_space_define_knob(sp, "unroll", (int64_t[]){0, 1}, 2);
  if (st) return st;
  ob_space_set_filter(sp, regblock_ok, (void *)tg); /* read only */
  /* fallback: 4 x 4 partial sums of a vector each, fewer columns where the
   * accumulator budget (or the factors of M and N) asks for it */
  ob_config c = ob_space_first(sp);
  ob_config_set_split(&c, "tile_y", (int64_t[]){4}, 1);
  ob_config_set_knob(&c, "vec_k", ob_tmpl_lanes(tg));
  ob_config_set_knob(&c, "unroll", 1);
  int64_t y[2], x[2], per = ob_tmpl_vectors(tg, ob_config_knob(&c, "vec_k"));
  ob_config_split(&c, "tile_y", y);
  for (int64_t want = 4; want >= 1; want--) {
    ob_config_set_split(&c, "tile_x", (int64_t[]){want}, 1);
    ob_config_split(&c, "tile_x", x);
    if (y[1] * x[1] * per <= ob_tmpl_budget(tg)) break;
  }
  *dflt = c;
  return OB_OK;
}

static ob_status build_dense(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N"), K = ob_workload_get(wl, "K");
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int64_t ty[2], tx[2], v = ob_config_knob(cfg, "vec_k");
  bool unroll = ob_config_knob(cfg, "unroll");
  ob_config_split(cfg, "tile_y", ty);
  ob_config_split(cfg, "tile_x", tx);

  ob_tensor *A = ob_te_placeholder(te, "A", 2, (int64_t[]){M, K}, OB_F32);
  ob_tensor *B = ob_te_placeholder(te, "B", 2, (int64_t[]){N, K}, OB_F32);
  /* partial[m, n, kl] = sum_ko A[m, ko*v + kl] * B[n, ko*v + kl] */
  ob_ivar *pm = ob_te_axis(te, "m", M), *pn = ob_te_axis(te, "n", N), *pk = ob_te_axis(te, "kl", v);
  ob_ivar *ko = ob_te_reduce_axis(te, "ko", K / v);
  ob_expr *kk = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, ko), ob_te_int(te, v)), ob_te_var(te, pk));
  ob_expr *prod = OB_TE_MUL(te, ob_te_load(te, A, 2, (ob_expr *[]){ob_te_var(te, pm), kk}),
                            ob_te_load(te, B, 2, (ob_expr *[]){ob_te_var(te, pn), kk}));
  ob_tensor *P = ob_te_compute(te, "partial", 3, (ob_ivar *[]){pm, pn, pk},
                               ob_te_reduce(te, OB_REDUCE_SUM, prod, 1, &ko));
  ob_ivar *cm = ob_te_axis(te, "m", M), *cn = ob_te_axis(te, "n", N);
  ob_ivar *kl = ob_te_reduce_axis(te, "kl", v);
  ob_tensor *C = ob_te_compute(
      te, "dense", 2, (ob_ivar *[]){cm, cn},
      ob_te_reduce(te, OB_REDUCE_SUM,
                   ob_te_load(te, P, 3, (ob_expr *[]){ob_te_var(te, cm), ob_te_var(te, cn), ob_te_var(te, kl)}),
                   1, &kl));
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
  ob_ivar *yo = NULL, *yi = NULL, *xo = NULL, *xi = NULL, *f = NULL; /* set unless st */
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 0), ty[1], &yo, &yi);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, 1), tx[1], &xo, &xi);
  if (!st) st = ob_sched_reorder(s, so, 4, (ob_ivar *[]){yo, xo, yi, xi});
  if (!st) st = ob_sched_fuse(s, so, yo, xo, &f);
  if (!st) st = ob_sched_parallel(s, so, f);
  ob_stage *pc = so; /* the stage partial attaches to */
  ob_ivar *pat = f;
  if (!st && sc != so) {
    /* C is a tile-sized stage inside the output tile; its one-trip outer
     * loop is where partial's tile is computed */
    ob_ivar *cyo = NULL, *cyi = NULL;
    st = ob_sched_compute_at(s, sc, so, f);
    if (!st) st = ob_sched_split(s, sc, ob_stage_axis(sc, 0), ty[1], &cyo, &cyi);
    pc = sc;
    pat = cyo;
  }
  if (!st && v > 1) st = ob_sched_vectorize(s, sc, ob_stage_reduce_axis(sc, 0));
  if (!st) st = ob_sched_compute_at(s, sp, pc, pat);
  ob_ivar *am = ob_stage_axis(sp, 0), *an = ob_stage_axis(sp, 1), *ak = ob_stage_axis(sp, 2);
  if (!st) st = ob_sched_reorder(s, sp, 4, (ob_ivar *[]){ob_stage_reduce_axis(sp, 0), am, an, ak});
  if (!st && v > 1) st = ob_sched_vectorize(s, sp, ak);
  if (!st && unroll) st = ob_sched_unroll(s, sp, am);
  if (!st && unroll) st = ob_sched_unroll(s, sp, an);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_tmpls[] = {
    {.name = "dense_pack.x86", .define = ob_matmul_define_pack, .build = ob_matmul_build_pack,
     .pack = ob_matmul_pack, .unpack = ob_matmul_unpack, .arg_numel = ob_matmul_arg_numel,
     .layout = ob_matmul_layout, .unroll_inner = true, .unroll_default = 8},
    {.name = "dense.x86", .define = define_dense, .build = build_dense, .unroll_inner = true, .unroll_default = 8},
    /* AutoTVM's CUDA dense templates (gpu_tmpl.c) */
    {.name = "dense_small_batch.gpu", .gpu = true, .define = ob_gpu_dense_small_define, .build = ob_gpu_dense_small_build},
    {.name = "dense_large_batch.gpu", .gpu = true, .define = ob_gpu_gemm_define, .build = ob_gpu_gemm_build},
};

const ob_op_def ob_op_dense = {
    .name = "dense",
    .attrs = k_attrs,
    .defaults = k_defaults,
    .nattrs = 3,
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
