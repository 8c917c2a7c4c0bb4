/* test_schedule: every schedule primitive, end to end. Each case lowers a
 * small compute with and without the primitive, builds both with the kernel
 * API (ob_kernel_build, one batch per case, then ob_kernel_load), runs them
 * on the same random inputs and compares (kernel_check.h)
 * the outputs; it also checks the loop nest the primitive produced
 * (ob_lowered_str) and, where the primitive shows in C, the generated
 * source. The last part applies each primitive wrongly and expects
 * OB_ERR_SCHEDULE with a message naming the stage and the axis.
 * OB_TEST_VERBOSE=1 prints every loop nest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/schedule.h"
#include "kernel_check.h"

#define OK(x) CHECK_MSG((x) == OB_OK, "%s: %s", #x, ob_ctx_errmsg(e->ctx))

/* ---- expression shorthands (a local `te` is in scope) ----------------------- */
#define IV(x) ob_te_var(te, (x))
#define INT(v) ob_te_int(te, (v))
#define FLT(v) ob_te_float(te, OB_F32, (v))
#define BIN(op, a, b) ob_te_bin(te, (op), (a), (b))
#define ADD(a, b) BIN(OB_ADD, a, b)
#define SUB(a, b) BIN(OB_SUB, a, b)
#define MUL(a, b) BIN(OB_MUL, a, b)
#define AND(a, b) BIN(OB_AND, a, b)
#define LD(t, ...) ob_te_load(te, (t), (int)(sizeof((ob_expr *[]){__VA_ARGS__}) / sizeof(ob_expr *)), \
                              (ob_expr *[]){__VA_ARGS__})
#define PH(name, ...) ob_te_placeholder(te, (name), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                                        (int64_t[]){__VA_ARGS__}, OB_F32)
#define COMPUTE(name, body, ...) ob_te_compute(te, (name), (int)(sizeof((ob_ivar *[]){__VA_ARGS__}) / sizeof(ob_ivar *)), \
                                               (ob_ivar *[]){__VA_ARGS__}, (body))

static bool verbose;

/* What a loop of n lanes becomes on the host: vectors of min(n, lanes)
 * lanes (AVX2 splits a 16-lane loop in two), fmt's %s its type's suffix
 * ("f32x16" or "f32x8"), and the result in a static buffer of its own. */
static const char *vec_text(const ku_env *e, int n, const char *fmt) {
  static char buf[4][160];
  static int next;
  char ty[16];
  int l = n < e->lanes ? n : e->lanes;
  snprintf(ty, sizeof ty, "%d", l);
  char *b = buf[next++ % 4];
  snprintf(b, sizeof buf[0], fmt, ty, ty, ty);
  return b;
}

static ob_sched *sched_of(ku_env *e, ob_te *te, int n, ob_tensor *const *outs) {
  ob_sched *s = NULL;
  ob_status st = ob_sched_new(te, n, outs, &s);
  CHECK_MSG(st == OB_OK, "ob_sched_new: %s", ob_ctx_errmsg(e->ctx));
  if (st) abort(); /* nothing below makes sense without it */
  return s;
}

/* Lowers s into k (a failure is a failed CHECK; k then stays unbuildable),
 * then frees s. */
static void prep(ku_env *e, ku_kernel *k, ob_sched *s, const char *name) {
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
  ob_status st = ob_lower(s, &k->low);
  CHECK_MSG(st == OB_OK, "%s: ob_lower: %s: %s", name, ob_status_str(st), ob_ctx_errmsg(e->ctx));
  if (!st) k->nest = ob_lowered_str(k->low);
  ob_sched_free(s);
  const char *empty = k->nest ? ku_empty_block(k->nest) : NULL;
  CHECK_MSG(!empty, "%s: an empty loop or if in the nest at:\n%.80s\n%s", name, empty, k->nest);
  if (verbose && k->nest) printf("--- %s\n%s", name, k->nest);
}

/* The same compute under the default (untransformed) schedule. */
static void prep_default(ku_env *e, ku_kernel *k, ob_te *te, int n, ob_tensor *const *outs,
                         const char *name) {
  prep(e, k, sched_of(e, te, n, outs), name);
}

/* Builds every lowered kernel of k[0..n) not built yet in one
 * ob_kernel_build batch and loads each with ob_kernel_load. */
static bool ku_build(ku_env *e, ku_kernel *k, int n) {
  const ob_lowered *fns[64];
  const char *names[64];
  int idx[64], m = 0;
  OB_ASSERT(n <= 64);
  for (int i = 0; i < n; i++)
    if (k[i].low && !k[i].k) {
      fns[m] = k[i].low;
      names[m] = k[i].name;
      idx[m++] = i;
    }
  if (!m) return true;
  ob_kernel_artifact art[64];
  const char *flags = getenv("OB_TEST_KERNEL_FLAGS"); /* e.g. when cc is not the test's compiler */
  ob_build_opts opts = {.cache_dir = e->cache, .flags = flags && flags[0] ? flags : KU_KERNEL_FLAGS,
                        .timeout_s = OB_TEST_TIMEOUT_S};
  double t0 = ob_now_s();
  ob_status st = ob_kernel_build(e->ctx, NULL, &opts, fns, names, m, art);
  e->build_s += ob_now_s() - t0;
  CHECK_MSG(st == OB_OK, "ob_kernel_build: %s", ob_ctx_errmsg(e->ctx));
  bool ok = st == OB_OK;
  for (int j = 0; j < m; j++) {
    ku_kernel *kk = &k[idx[j]];
    kk->art = art[j];
    kk->src = kk->art.source;
    if (st) continue;
    CHECK_MSG(kk->art.error_no == OB_MERR_NONE, "%s does not build: %s: %s\n--- source ---\n%s",
              kk->name, ob_merr_str(kk->art.error_no), kk->art.message ? kk->art.message : "",
              kk->src ? kk->src : "(none)");
    if (kk->art.error_no != OB_MERR_NONE) {
      ok = false;
      continue;
    }
    CHECK(kk->art.nargs == ob_lowered_num_args(kk->low));
    if (kk->art.cached) e->ncached++;
    else e->nbuilt++;
    ob_status ls = ob_kernel_load(e->ctx, &kk->art, &kk->k);
    CHECK_MSG(ls == OB_OK, "ob_kernel_load %s: %s", kk->name, ob_ctx_errmsg(e->ctx));
    ok &= ls == OB_OK;
  }
  return ok;
}

static void free_all(ku_kernel *k, int n) {
  for (int i = 0; i < n; i++) ku_kernel_free(&k[i]);
}

static ob_ivar *leaf(ob_stage *st, int i) {
  ob_ivar *l[64];
  int n = ob_stage_leaves(st, l, 64);
  OB_ASSERT(i < n);
  return l[i];
}

static ob_te *new_te(ku_env *e) {
  ob_te *te = NULL;
  if (ob_te_new(e->ctx, &te)) abort();
  return te;
}

/* ---- split, split_nparts, tile, reorder ---------------------------------------- */

/* C[i, j] = A[i, j] * 2 + Bt[j, i] over [24, 50]: the transposed read makes a
 * wrong loop order or index visible. */
static ob_tensor *ew_transposed(ob_te *te, int64_t M, int64_t N) {
  ob_tensor *A = PH("A", M, N), *Bt = PH("Bt", N, M);
  ob_ivar *i = ob_te_axis(te, "i", M), *j = ob_te_axis(te, "j", N);
  return COMPUTE("C", ADD(MUL(LD(A, IV(i), IV(j)), FLT(2)), LD(Bt, IV(j), IV(i))), i, j);
}

static void test_split_tile_reorder(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *C = ew_transposed(te, 24, 50);
  enum { REF, DIV, NDIV, NP_DIV, NP_NDIV, BIG, ONE, TILE, REORD, NESTED, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *st;
  ob_ivar *o, *in, *xo, *yo, *xi, *yi;
  prep_default(e, &k[REF], te, 1, &C, "sp_ref");

  s = sched_of(e, te, 1, &C); /* 50 = 5 * 10: no guard */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 10, &o, &in));
  CHECK(strcmp(ob_ivar_name(o), "j.outer") == 0 && ob_ivar_extent(o) == 5);
  CHECK(strcmp(ob_ivar_name(in), "j.inner") == 0 && ob_ivar_extent(in) == 10);
  CHECK(ob_stage_leaves(st, (ob_ivar *[8]){0}, 8) == 3 && leaf(st, 1) == o && leaf(st, 2) == in);
  prep(e, &k[DIV], s, "sp_div");

  s = sched_of(e, te, 1, &C); /* 50 = 4 * 16 - 14: guarded tail */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 16, &o, &in));
  CHECK(ob_ivar_extent(o) == 4 && ob_ivar_extent(in) == 16);
  prep(e, &k[NDIV], s, "sp_ndiv");

  s = sched_of(e, te, 1, &C); /* 4 parts of 24: factor 6 */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split_nparts(s, st, ob_stage_axis(st, 0), 4, &o, &in));
  CHECK(ob_ivar_extent(o) == 4 && ob_ivar_extent(in) == 6);
  prep(e, &k[NP_DIV], s, "sp_np_div");

  s = sched_of(e, te, 1, &C); /* 3 parts of 50: factor 17, 51 > 50 */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split_nparts(s, st, ob_stage_axis(st, 1), 3, &o, &in));
  CHECK(ob_ivar_extent(o) == 3 && ob_ivar_extent(in) == 17);
  prep(e, &k[NP_NDIV], s, "sp_np_ndiv");

  s = sched_of(e, te, 1, &C); /* factor above the extent: one outer trip */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 64, &o, &in));
  CHECK(ob_ivar_extent(o) == 1 && ob_ivar_extent(in) == 50);
  prep(e, &k[BIG], s, "sp_big");

  s = sched_of(e, te, 1, &C); /* factor 1: one inner trip */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 0), 1, &o, &in));
  prep(e, &k[ONE], s, "sp_one");

  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  OK(ob_sched_tile(s, st, ob_stage_axis(st, 0), ob_stage_axis(st, 1), 8, 16, &xo, &yo, &xi, &yi));
  CHECK(leaf(st, 0) == xo && leaf(st, 1) == yo && leaf(st, 2) == xi && leaf(st, 3) == yi);
  prep(e, &k[TILE], s, "sp_tile");

  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  OK(ob_sched_reorder(s, st, 2, (ob_ivar *[]){ob_stage_axis(st, 1), ob_stage_axis(st, 0)}));
  CHECK(leaf(st, 0) == ob_stage_axis(st, 1) && leaf(st, 1) == ob_stage_axis(st, 0));
  prep(e, &k[REORD], s, "sp_reorder");

  /* split of a split, then a reorder over three of the four leaves */
  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  ob_ivar *io, *ii, *jo, *ji, *jio, *jii;
  OK(ob_sched_split(s, st, ob_stage_axis(st, 0), 5, &io, &ii));
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 20, &jo, &ji));
  OK(ob_sched_split(s, st, ji, 8, &jio, &jii));
  OK(ob_sched_reorder(s, st, 3, (ob_ivar *[]){jii, io, jo}));
  CHECK(leaf(st, 0) == jii && leaf(st, 1) == ii && leaf(st, 2) == io && leaf(st, 3) == jio &&
        leaf(st, 4) == jo);
  prep(e, &k[NESTED], s, "sp_nested");

  ku_build(e, k, NK);
  const char *names[NK] = {"ref", "split 10", "split 16", "nparts 4", "nparts 3", "split 64",
                           "split 1", "tile", "reorder", "nested"};
  for (int v = 1; v < NK; v++) ku_compare(e, names[v], &k[v], &k[REF], false);

  KU_ORDER(k[REF].nest, "for i in [0, 24) {", "for j in [0, 50) {", "C[");
  KU_HASNT(k[REF].nest, "if (");
  KU_ORDER(k[DIV].nest, "for i in [0, 24) {", "for j.outer in [0, 5) {", "for j.inner in [0, 10) {",
           "C[(((i * 50) + (j.outer * 10)) + j.inner)] =");
  KU_HASNT(k[DIV].nest, "if (");
  /* the tail is either guarded or peeled off by loop partitioning */
  KU_ORDER(k[NDIV].nest, "for j.outer in [0, ", "for j.inner in [0, 16) {", "C[");
  KU_HAS_ANY(k[NDIV].nest, "if ((((j.outer * 16) + j.inner) < 50)) {", "for j.inner in [0, 2) {");
  KU_ORDER(k[NP_DIV].nest, "for i.outer in [0, 4) {", "for i.inner in [0, 6) {", "for j in [0, 50) {");
  KU_HASNT(k[NP_DIV].nest, "if (");
  KU_ORDER(k[NP_NDIV].nest, "for j.outer in [0, ", "for j.inner in [0, 17) {");
  KU_HAS_ANY(k[NP_NDIV].nest, "< 50)) {", "for j.inner in [0, 16) {");
  KU_HAS(k[BIG].nest, "for j.inner in [0, 50) {");
  KU_HASNT(k[BIG].nest, "j.outer"); /* a one-trip loop is no loop */
  KU_HASNT(k[BIG].nest, "if (");
  KU_HAS(k[ONE].nest, "for i.outer in [0, 24) {");
  KU_HASNT(k[ONE].nest, "i.inner");
  KU_ORDER(k[TILE].nest, "for i.outer in [0, 3) {", "for j.outer in [0, ",
           "for i.inner in [0, 8) {", "for j.inner in [0, 16) {", "C[");
  KU_HAS_ANY(k[TILE].nest, "< 50)) {", "for j.inner in [0, 2) {");
  KU_ORDER(k[REORD].nest, "for j in [0, 50) {", "for i in [0, 24) {", "C[((i * 50) + j)] =");
  KU_ORDER(k[NESTED].nest, "for j.inner.inner in [0, 8) {", "for i.inner in [0, ",
           "for i.outer in [0, ", "for j.inner.outer in [0, ", "for j.outer in [0, ");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- fuse --------------------------------------------------------------------- */
static void test_fuse(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *C = ew_transposed(te, 24, 50);
  /* a reduction over two fused reduce axes: S[i] = sum_{r, q} X[i, r, q] */
  ob_tensor *X = PH("X", 6, 5, 7);
  ob_ivar *i = ob_te_axis(te, "i", 6), *r = ob_te_reduce_axis(te, "r", 5),
          *q = ob_te_reduce_axis(te, "q", 7);
  ob_tensor *S = COMPUTE("S", ob_te_reduce(te, OB_REDUCE_SUM, LD(X, IV(i), IV(r), IV(q)), 2,
                                           (ob_ivar *[]){r, q}), i);
  enum { REF, FUSE, SPLIT_FUSE, FUSE_SPLIT, REFUSE, SREF, SFUSE, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *st;
  ob_ivar *f, *o, *in;
  prep_default(e, &k[REF], te, 1, &C, "fu_ref");

  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  OK(ob_sched_fuse(s, st, ob_stage_axis(st, 0), ob_stage_axis(st, 1), &f));
  CHECK(strcmp(ob_ivar_name(f), "i.j.fused") == 0 && ob_ivar_extent(f) == 1200);
  CHECK(ob_stage_leaves(st, (ob_ivar *[8]){0}, 8) == 1);
  prep(e, &k[FUSE], s, "fu_fuse");

  s = sched_of(e, te, 1, &C); /* fuse after split: i with j.outer */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 10, &o, &in));
  OK(ob_sched_fuse(s, st, ob_stage_axis(st, 0), o, &f));
  CHECK(ob_ivar_extent(f) == 120 && leaf(st, 0) == f && leaf(st, 1) == in);
  prep(e, &k[SPLIT_FUSE], s, "fu_split_fuse");

  s = sched_of(e, te, 1, &C); /* split after fuse, non-dividing: 1200 = 172*7 - 4 */
  st = ob_sched_stage(s, C);
  OK(ob_sched_fuse(s, st, ob_stage_axis(st, 0), ob_stage_axis(st, 1), &f));
  OK(ob_sched_split(s, st, f, 7, &o, &in));
  prep(e, &k[FUSE_SPLIT], s, "fu_fuse_split");

  s = sched_of(e, te, 1, &C); /* split then fuse back */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 10, &o, &in));
  OK(ob_sched_fuse(s, st, o, in, &f));
  CHECK(ob_ivar_extent(f) == 50);
  prep(e, &k[REFUSE], s, "fu_refuse");

  prep_default(e, &k[SREF], te, 1, &S, "fu_sref");
  s = sched_of(e, te, 1, &S);
  st = ob_sched_stage(s, S);
  OK(ob_sched_fuse(s, st, ob_stage_reduce_axis(st, 0), ob_stage_reduce_axis(st, 1), &f));
  CHECK(ob_ivar_extent(f) == 35);
  prep(e, &k[SFUSE], s, "fu_sfuse");

  ku_build(e, k, NK);
  ku_compare(e, "fuse", &k[FUSE], &k[REF], false);
  ku_compare(e, "split+fuse", &k[SPLIT_FUSE], &k[REF], false);
  ku_compare(e, "fuse+split", &k[FUSE_SPLIT], &k[REF], false);
  ku_compare(e, "split+refuse", &k[REFUSE], &k[REF], false);
  ku_compare(e, "fused reduce", &k[SFUSE], &k[SREF], false);

  /* the root indices come back as fused / 50 and fused % 50 */
  KU_HAS(k[FUSE].nest, "for i.j.fused in [0, 1200) {");
  KU_HAS(k[FUSE].nest, "(i.j.fused / 50)");
  KU_HAS(k[FUSE].nest, "(i.j.fused % 50)");
  KU_HASNT(k[FUSE].nest, "for i in");
  /* i*50 + j.outer*10 + j.inner with i, j.outer from the fused loop: the
   * simplifier folds (f / 5) * 50 + (f % 5) * 10 back into f * 10 */
  KU_ORDER(k[SPLIT_FUSE].nest, "for i.j.outer.fused in [0, 120) {", "for j.inner in [0, 10) {",
           "(i.j.outer.fused * 10)");
  KU_ORDER(k[FUSE_SPLIT].nest, "for i.j.fused.outer in [0, ", "for i.j.fused.inner in [0, 7) {");
  KU_HAS_ANY(k[FUSE_SPLIT].nest, "< 1200)) {", "for i.j.fused.inner in [0, 3) {");
  KU_HAS(k[REFUSE].nest, "for j.outer.j.inner.fused in [0, 50) {");
  KU_ORDER(k[SFUSE].nest, "for i in [0, 6) {", "S[i] = 0f", "for r.q.fused in [0, 35) {", "r.q.fused");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- reductions: sum (matmul) and max ------------------------------------------ */
static void test_reduce(ku_env *e) {
  ob_te *te = new_te(e);
  const int64_t M = 20, N = 24, K = 36;
  ob_tensor *A = PH("A", M, K), *B = PH("B", N, K);
  ob_ivar *i = ob_te_axis(te, "i", M), *j = ob_te_axis(te, "j", N),
          *kk = ob_te_reduce_axis(te, "k", K);
  ob_tensor *C = COMPUTE("C", ob_te_reduce(te, OB_REDUCE_SUM, MUL(LD(A, IV(i), IV(kk)), LD(B, IV(j), IV(kk))),
                                           1, &kk), i, j);
  ob_ivar *i2 = ob_te_axis(te, "i", M), *k2 = ob_te_reduce_axis(te, "k", K);
  ob_tensor *D = COMPUTE("D", ob_te_reduce(te, OB_REDUCE_MAX, LD(A, IV(i2), IV(k2)), 1, &k2), i2);
  enum { CREF, KSPLIT, KFIRST, KMID, KVEC, KPF, DREF, DSPLIT, DVEC, DVEC_DIV, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *st;
  ob_ivar *o, *in;
  prep_default(e, &k[CREF], te, 1, &C, "rd_cref");

  s = sched_of(e, te, 1, &C); /* k split 8, non-dividing, and the outer part outside j */
  st = ob_sched_stage(s, C);
  CHECK(ob_stage_num_axes(st) == 2 && ob_stage_num_reduce_axes(st) == 1);
  OK(ob_sched_split(s, st, ob_stage_reduce_axis(st, 0), 8, &o, &in));
  OK(ob_sched_reorder(s, st, 3, (ob_ivar *[]){o, ob_stage_axis(st, 1), in}));
  prep(e, &k[KSPLIT], s, "rd_ksplit");

  s = sched_of(e, te, 1, &C); /* reduce axis outermost: init before every loop */
  st = ob_sched_stage(s, C);
  OK(ob_sched_reorder(s, st, 3, (ob_ivar *[]){ob_stage_reduce_axis(st, 0), ob_stage_axis(st, 0),
                                              ob_stage_axis(st, 1)}));
  prep(e, &k[KFIRST], s, "rd_kfirst");

  s = sched_of(e, te, 1, &C); /* i, k, j: init of row i, then k, then j */
  st = ob_sched_stage(s, C);
  OK(ob_sched_reorder(s, st, 2, (ob_ivar *[]){ob_stage_reduce_axis(st, 0), ob_stage_axis(st, 1)}));
  OK(ob_sched_vectorize(s, st, ob_stage_axis(st, 1))); /* 24 lanes: not a power of two */
  prep(e, &k[KMID], s, "rd_kmid");

  s = sched_of(e, te, 1, &C); /* vectorized reduce axis, 36 = 3*16 - 12 */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_reduce_axis(st, 0), 16, &o, &in));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[KVEC], s, "rd_kvec");

  s = sched_of(e, te, 1, &C); /* while row j computes, B's row j + 1 in 3 parts, one per k.outer */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_reduce_axis(st, 0), 12, &o, &in));
  OK(ob_sched_prefetch(s, st, B, ob_stage_axis(st, 1), K, 1, (ob_ivar *[]){o}, o));
  CHECK(ob_sched_prefetch(s, st, C, ob_stage_axis(st, 1), K, 1, (ob_ivar *[]){o}, o) == OB_ERR_SCHEDULE);
  CHECK(ob_sched_prefetch(s, st, B, ob_stage_axis(st, 1), N * K + 1, 1, (ob_ivar *[]){o}, o) == OB_ERR_SCHEDULE);
  prep(e, &k[KPF], s, "rd_kpf");

  prep_default(e, &k[DREF], te, 1, &D, "rd_dref");
  s = sched_of(e, te, 1, &D);
  st = ob_sched_stage(s, D);
  OK(ob_sched_split(s, st, ob_stage_reduce_axis(st, 0), 5, &o, &in));
  OK(ob_sched_reorder(s, st, 3, (ob_ivar *[]){o, ob_stage_axis(st, 0), in}));
  prep(e, &k[DSPLIT], s, "rd_dsplit");

  s = sched_of(e, te, 1, &D);
  st = ob_sched_stage(s, D);
  OK(ob_sched_split(s, st, ob_stage_reduce_axis(st, 0), 8, &o, &in));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[DVEC], s, "rd_dvec");

  s = sched_of(e, te, 1, &D); /* 36 = 9 * 4: no guard, pure vector path */
  st = ob_sched_stage(s, D);
  OK(ob_sched_split(s, st, ob_stage_reduce_axis(st, 0), 4, &o, &in));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[DVEC_DIV], s, "rd_dvec_div");

  ku_build(e, k, NK);
  ku_compare(e, "sum k split", &k[KSPLIT], &k[CREF], false);
  ku_compare(e, "sum k first", &k[KFIRST], &k[CREF], false);
  ku_compare(e, "sum k middle", &k[KMID], &k[CREF], false);
  ku_compare(e, "sum k vectorized", &k[KVEC], &k[CREF], false);
  ku_compare(e, "sum with B's next row prefetched", &k[KPF], &k[CREF], false);
  /* part k.outer of row j + 1: 36 elements in parts of 16 (a cache line); clamped to the last
   * row (which prefetches itself again), not guarded: a guard would partition the j loop */
  KU_ORDER(k[KPF].nest, "for j in [0, 24) {", "for k.outer in [0, 3) {",
           "prefetch B[((min((j + 1), 23) * 36) + (k.outer * 16)) +16, < ((min((j + 1), 23) * 36) + 36)]");
  KU_HAS(k[KPF].src, "ob_prefetch(");
  ku_compare(e, "max k split", &k[DSPLIT], &k[DREF], false);
  ku_compare(e, "max k vectorized", &k[DVEC], &k[DREF], false);
  ku_compare(e, "max k vectorized, dividing", &k[DVEC_DIV], &k[DREF], false);

  KU_ORDER(k[CREF].nest, "for i in [0, 20) {", "for j in [0, 24) {", "C[((i * 24) + j)] = 0f",
           "for k in [0, 36) {", "C[((i * 24) + j)] = (C[((i * 24) + j)] + (A[((i * 36) + k)] * B[((j * 36) + k)]))");
  /* the init nest sits before k.outer and covers j itself */
  KU_ORDER(k[KSPLIT].nest, "for i in [0, 20) {", "for j in [0, 24) {", "= 0f", "for k.outer in [0, ",
           "for j in [0, 24) {", "for k.inner in [0, 8) {");
  KU_HAS_ANY(k[KSPLIT].nest, "< 36)) {", "for k.inner in [0, 4) {");
  KU_ORDER(k[KFIRST].nest, "for i in [0, 20) {", "for j in [0, 24) {", "= 0f", "for k in [0, 36) {",
           "for i in [0, 20) {", "for j in [0, 24) {");
  KU_ORDER(k[KMID].nest, "for i in [0, 20) {", "vectorized j in [0, 24) {", "= 0f", "for k in [0, 36) {",
           "vectorized j in [0, 24) {");
  if (24 % e->lanes) /* 24 lanes: a vector of them or whole host vectors */
    KU_HAS(k[KMID].src, "scalar loop (the lane count is not a power of two");
  else
    KU_HAS(k[KMID].src, vec_text(e, 24, "OB_VLOAD(ob_f32x%s, &"));
  KU_HAS(k[KVEC].nest, "vectorized k.inner in [0, 16) {");
  KU_HAS(k[KVEC].src, "OB_HSUM(");
  KU_HAS(k[KVEC].src, vec_text(e, 16, "OB_VLOAD(ob_f32x%s, &A_"));
  /* the guarded tail: a vector path with a scalar fallback, or the scalar
   * loop alone when no iteration has every lane in range */
  KU_HAS_ANY(k[KVEC].src, "} else {", "for (int64_t k_inner");
  KU_ORDER(k[DREF].nest, "D[i] = -inff", "for k in [0, 36) {", "D[i] = max(D[i], A[((i * 36) + k)])");
  KU_HAS(k[DREF].src, "(-INFINITY)");
  KU_ORDER(k[DSPLIT].nest, "for i in [0, 20) {", "-inff", "for k.outer in [0, ", "for i in [0, 20) {",
           "for k.inner in [0, 5) {");
  /* the tail guard, or the one-trip tail as a constant k = 35 */
  KU_HAS_ANY(k[DSPLIT].nest, "< 36)) {", "A[((i * 36) + 35)]");
  KU_HAS(k[DVEC].src, "OB_HMAX(");
  KU_HAS(k[DVEC].src, "OB_VLOAD(ob_f32x8, &A_");
  KU_HAS(k[DVEC_DIV].src, "OB_HMAX(");
  KU_HAS(k[DVEC_DIV].src, "OB_VLOAD(ob_f32x4, &A_");
  KU_HASNT(k[DVEC_DIV].nest, "if (");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- compute_at ----------------------------------------------------------------- */

/* Hand-written reference of the 1-D stencil: B = A * 2, C[i] = B[i-1] (0
 * outside) + B[i] + B[i+1] (0 outside). */
enum { ST_N = 64 };
static void ref_stencil(void *const *bufs) {
  const float *A = bufs[0];
  float *C = bufs[1];
  for (int i = 0; i < ST_N; i++) {
    float l = i >= 1 ? A[i - 1] * 2.0f : 0.0f, r = i + 1 < ST_N ? A[i + 1] * 2.0f : 0.0f;
    C[i] = l + A[i] * 2.0f + r;
  }
}

static void test_compute_at(ku_env *e) {
  ob_te *te = new_te(e);
  /* two-stage pipeline: B = A * 2; C = B + 1 over [16, 40] */
  ob_tensor *A = PH("A", 16, 40);
  ob_ivar *bi = ob_te_axis(te, "i", 16), *bj = ob_te_axis(te, "j", 40);
  ob_tensor *B = COMPUTE("B", MUL(LD(A, IV(bi), IV(bj)), FLT(2)), bi, bj);
  ob_ivar *ci = ob_te_axis(te, "i", 16), *cj = ob_te_axis(te, "j", 40);
  ob_tensor *C = COMPUTE("C", ADD(LD(B, IV(ci), IV(cj)), FLT(1)), ci, cj);
  /* 1-D stencil with zero padding by select */
  ob_tensor *X = PH("X", ST_N);
  ob_ivar *yi = ob_te_axis(te, "i", ST_N);
  ob_tensor *Y = COMPUTE("Y", MUL(LD(X, IV(yi)), FLT(2)), yi);
  ob_ivar *zi = ob_te_axis(te, "i", ST_N);
  ob_expr *left = ob_te_select(te, BIN(OB_GE, IV(zi), INT(1)), LD(Y, SUB(IV(zi), INT(1))), FLT(0));
  ob_expr *right = ob_te_select(te, BIN(OB_LT, ADD(IV(zi), INT(1)), INT(ST_N)),
                                LD(Y, ADD(IV(zi), INT(1))), FLT(0));
  ob_tensor *Z = COMPUTE("Z", ADD(ADD(left, LD(Y, IV(zi))), right), zi);
  /* 2-D stencil: Q[i, j] = P[i, j] + P[i-1, j] (0 at i = 0) + P[i, j+1] (0 at the end) */
  ob_tensor *G = PH("G", 12, 20);
  ob_ivar *pi = ob_te_axis(te, "i", 12), *pj = ob_te_axis(te, "j", 20);
  ob_tensor *P = COMPUTE("P", ADD(MUL(LD(G, IV(pi), IV(pj)), FLT(3)), FLT(0.5)), pi, pj);
  ob_ivar *qi = ob_te_axis(te, "i", 12), *qj = ob_te_axis(te, "j", 20);
  ob_expr *up = ob_te_select(te, BIN(OB_GE, IV(qi), INT(1)), LD(P, SUB(IV(qi), INT(1)), IV(qj)), FLT(0));
  ob_expr *rt = ob_te_select(te, BIN(OB_LT, IV(qj), INT(19)), LD(P, IV(qi), ADD(IV(qj), INT(1))), FLT(0));
  ob_tensor *Q = COMPUTE("Q", ADD(ADD(LD(P, IV(qi), IV(qj)), up), rt), qi, qj);

  enum { REF, AT_I, AT_JO, AT_JO_VEC, ZREF, Z_ROOT_I, Z_SPLIT, Z_PAR, QREF, Q_TILE, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *sb, *sc;
  ob_ivar *o, *in, *xo, *yo, *xi, *yin;
  prep_default(e, &k[REF], te, 1, &C, "ca_ref");

  s = sched_of(e, te, 1, &C); /* B at C's outer loop: one row of B */
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_compute_at(s, sb, sc, ob_stage_axis(sc, 0)));
  prep(e, &k[AT_I], s, "ca_at_i");

  s = sched_of(e, te, 1, &C); /* B at C's j.outer: 8 elements of B */
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 1), 8, &o, &in));
  OK(ob_sched_compute_at(s, sb, sc, o));
  prep(e, &k[AT_JO], s, "ca_at_jo");

  s = sched_of(e, te, 1, &C); /* the same with both stages vectorized */
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 1), 8, &o, &in));
  OK(ob_sched_vectorize(s, sc, in));
  OK(ob_sched_compute_at(s, sb, sc, o));
  OK(ob_sched_vectorize(s, sb, ob_stage_axis(sb, 1)));
  prep(e, &k[AT_JO_VEC], s, "ca_at_jo_vec");

  prep_default(e, &k[ZREF], te, 1, &Z, "ca_zref");
  s = sched_of(e, te, 1, &Z); /* at the only loop of Z: the whole of Y */
  OK(ob_sched_compute_at(s, ob_sched_stage(s, Y), ob_sched_stage(s, Z),
                         ob_stage_axis(ob_sched_stage(s, Z), 0)));
  prep(e, &k[Z_ROOT_I], s, "ca_z_root_i");

  s = sched_of(e, te, 1, &Z); /* at i.outer of 8: Y over [8*io - 1, 8*io + 9) */
  sb = ob_sched_stage(s, Y), sc = ob_sched_stage(s, Z);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 8, &o, &in));
  OK(ob_sched_compute_at(s, sb, sc, o));
  prep(e, &k[Z_SPLIT], s, "ca_z_split");

  s = sched_of(e, te, 1, &Z); /* the same inside a parallel loop, non-dividing 64 = 5*13 - 1 */
  sb = ob_sched_stage(s, Y), sc = ob_sched_stage(s, Z);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 13, &o, &in));
  OK(ob_sched_parallel(s, sc, o));
  OK(ob_sched_compute_at(s, sb, sc, o));
  prep(e, &k[Z_PAR], s, "ca_z_par");

  prep_default(e, &k[QREF], te, 1, &Q, "ca_qref");
  s = sched_of(e, te, 1, &Q); /* P at Q's tile: [4*io - 1, +5) x [8*jo, +9) */
  sb = ob_sched_stage(s, P), sc = ob_sched_stage(s, Q);
  OK(ob_sched_tile(s, sc, ob_stage_axis(sc, 0), ob_stage_axis(sc, 1), 4, 8, &xo, &yo, &xi, &yin));
  OK(ob_sched_compute_at(s, sb, sc, yo));
  prep(e, &k[Q_TILE], s, "ca_q_tile");

  ku_build(e, k, NK);
  ku_compare(e, "compute_at i", &k[AT_I], &k[REF], false);
  ku_compare(e, "compute_at j.outer", &k[AT_JO], &k[REF], false);
  ku_compare(e, "compute_at j.outer vectorized", &k[AT_JO_VEC], &k[REF], false);
  ku_compare_ref(e, "stencil default", &k[ZREF], ref_stencil, false);
  ku_compare(e, "stencil at i", &k[Z_ROOT_I], &k[ZREF], false);
  ku_compare(e, "stencil at i.outer", &k[Z_SPLIT], &k[ZREF], false);
  ku_compare_ref(e, "stencil at i.outer", &k[Z_SPLIT], ref_stencil, false);
  ku_compare(e, "stencil at parallel i.outer (pool)", &k[Z_PAR], &k[ZREF], true);
  ku_compare(e, "stencil at parallel i.outer (serial)", &k[Z_PAR], &k[ZREF], false);
  ku_compare(e, "2-D stencil at tile", &k[Q_TILE], &k[QREF], false);

  KU_HAS(k[REF].nest, "alloc B: float32[640]");
  KU_ORDER(k[AT_I].nest, "for i in [0, 16) {", "alloc B: float32[40]", "for j in [0, 40) {",
           "B[j] = (A[((i * 40) + j)] * 2f)", "for j in [0, 40) {", "C[((i * 40) + j)] = (B[j] + 1f)");
  KU_HASNT(k[AT_I].nest, "alloc B: float32[640]");
  KU_ORDER(k[AT_JO].nest, "for j.outer in [0, 5) {", "alloc B: float32[8]", "for j in [0, 8) {",
           "for j.inner in [0, 8) {");
  KU_HASNT(k[AT_JO].nest, "if (");
  KU_ORDER(k[AT_JO_VEC].nest, "alloc B: float32[8]", "vectorized j in [0, 8) {",
           "vectorized j.inner in [0, 8) {");
  KU_HAS_ANY(k[AT_JO_VEC].src, "float B_", "ob_f32x8 B_"); /* a local array or a vector register */
  KU_HAS(k[AT_JO_VEC].src, "OB_VLOAD(ob_f32x8, &A_");
  KU_HAS(k[AT_JO_VEC].src, "OB_VSTORE(&C_");
  /* at Z's only loop: Y[i-1 .. i+1] per point */
  KU_ORDER(k[Z_ROOT_I].nest, "alloc Y: float32[3]", "for i in [0, 3) {", "if (", ">= 0)");
  KU_HASNT(k[Z_ROOT_I].nest, "float32[64]\n");
  KU_ORDER(k[Z_SPLIT].nest, "for i.outer in [0, ", "alloc Y: float32[10]", "for i in [0, 10) {",
           "if (", ">= 0)", "Y[i] =", "for i.inner in [0, 8) {");
  KU_ORDER(k[Z_PAR].nest, "parallel i.outer in [0, ", "alloc Y: float32[15]");
  KU_HAS(k[Z_PAR].src, "ca_z_par_par0");
  KU_ORDER(k[Q_TILE].nest, "for i.outer in [0, 3) {", "for j.outer in [0, ",
           "alloc P: float32[45]", "for i in [0, 5) {", "for j in [0, 9) {", "if (",
           "for i.inner in [0, 4) {", "for j.inner in [0, 8) {");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- compute_inline ------------------------------------------------------------- */
static void test_compute_inline(ku_env *e) {
  ob_te *te = new_te(e);
  /* B = A * 2; T[i, j] = B[j, i] (a transpose); D = exp(T) * B + 1 */
  ob_tensor *A = PH("A", 16, 16);
  ob_ivar *bi = ob_te_axis(te, "i", 16), *bj = ob_te_axis(te, "j", 16);
  ob_tensor *B = COMPUTE("B", MUL(LD(A, IV(bi), IV(bj)), FLT(2)), bi, bj);
  ob_ivar *ti = ob_te_axis(te, "i", 16), *tj = ob_te_axis(te, "j", 16);
  ob_tensor *T = COMPUTE("T", SUB(LD(B, IV(tj), IV(ti)), FLT(0.25)), ti, tj);
  ob_ivar *di = ob_te_axis(te, "i", 16), *dj = ob_te_axis(te, "j", 16);
  ob_tensor *D = COMPUTE("D", ADD(MUL(ob_te_call(te, OB_EXP, LD(T, IV(di), IV(dj))), LD(B, IV(di), IV(dj))),
                                  FLT(1)), di, dj);
  /* inlined into a reduction: R[i] = sum_k B[i, k] */
  ob_ivar *ri = ob_te_axis(te, "i", 16), *rk = ob_te_reduce_axis(te, "k", 16);
  ob_tensor *R = COMPUTE("R", ob_te_reduce(te, OB_REDUCE_SUM, LD(B, IV(ri), IV(rk)), 1, &rk), ri);
  enum { REF, INL, INL_ONE, INL_VEC, RREF, RINL, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_ivar *o, *in;
  prep_default(e, &k[REF], te, 1, &D, "in_ref");

  s = sched_of(e, te, 1, &D);
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, B)));
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, T)));
  prep(e, &k[INL], s, "in_both");

  s = sched_of(e, te, 1, &D); /* only T inlined: B stays a stage of its own */
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, T)));
  prep(e, &k[INL_ONE], s, "in_one");

  s = sched_of(e, te, 1, &D);
  ob_stage *sd = ob_sched_stage(s, D);
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, B)));
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, T)));
  OK(ob_sched_split(s, sd, ob_stage_axis(sd, 1), 8, &o, &in));
  OK(ob_sched_vectorize(s, sd, in));
  prep(e, &k[INL_VEC], s, "in_vec");

  prep_default(e, &k[RREF], te, 1, &R, "in_rref");
  s = sched_of(e, te, 1, &R);
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, B)));
  prep(e, &k[RINL], s, "in_red");

  ku_build(e, k, NK);
  ku_compare(e, "inline B and T", &k[INL], &k[REF], false);
  ku_compare(e, "inline T", &k[INL_ONE], &k[REF], false);
  ku_compare(e, "inline, vectorized", &k[INL_VEC], &k[REF], false);
  ku_compare(e, "inline into a reduction", &k[RINL], &k[RREF], false);

  KU_HAS(k[REF].nest, "alloc B: float32[256]");
  KU_HAS(k[REF].nest, "alloc T: float32[256]");
  CHECK(ku_count(k[REF].nest, "for ") == 6);
  /* inlined: no buffer, no loop, the loads of A appear in D's body */
  KU_HASNT(k[INL].nest, "alloc");
  KU_HASNT(k[INL].nest, "B[");
  KU_HASNT(k[INL].nest, "T[");
  CHECK_MSG(ku_count(k[INL].nest, "for ") == 2, "%s", k[INL].nest);
  KU_HAS(k[INL].nest, "exp(((A[((j * 16) + i)] * 2f) - 0.25f))");
  KU_HAS(k[INL].nest, "(A[((i * 16) + j)] * 2f)");
  KU_HAS(k[INL_ONE].nest, "alloc B: float32[256]");
  KU_HASNT(k[INL_ONE].nest, "alloc T");
  CHECK(ku_count(k[INL_ONE].nest, "for ") == 4);
  KU_HAS(k[INL_VEC].nest, "vectorized j.inner in [0, 8) {");
  KU_HAS(k[INL_VEC].src, "OB_VSTORE(");
  KU_HASNT(k[RINL].nest, "alloc B");
  KU_HAS(k[RINL].nest, "R[i] = (R[i] + (A[((i * 16) + k)] * 2f))");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- cache_write ---------------------------------------------------------------- */
enum { MM_M = 32, MM_N = 48, MM_K = 24 };
static void ref_matmul(void *const *bufs) {
  const float *A = bufs[0], *B = bufs[1];
  float *C = bufs[2];
  for (int i = 0; i < MM_M; i++)
    for (int j = 0; j < MM_N; j++) {
      float acc = 0;
      for (int k = 0; k < MM_K; k++) acc += A[i * MM_K + k] * B[j * MM_K + k];
      C[i * MM_N + j] = acc;
    }
}

static void test_cache_write(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *A = PH("A", MM_M, MM_K), *B = PH("B", MM_N, MM_K);
  ob_ivar *i = ob_te_axis(te, "i", MM_M), *j = ob_te_axis(te, "j", MM_N),
          *kk = ob_te_reduce_axis(te, "k", MM_K);
  ob_tensor *C = COMPUTE("C", ob_te_reduce(te, OB_REDUCE_SUM, MUL(LD(A, IV(i), IV(kk)), LD(B, IV(j), IV(kk))),
                                           1, &kk), i, j);
  enum { REF, ROOT, TILE, TILE_VEC, TILE_NDIV, TILE_PAR, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *sc, *cl;
  ob_ivar *xo, *yo, *xi, *yi, *o, *in;
  prep_default(e, &k[REF], te, 1, &C, "cw_ref");

  s = sched_of(e, te, 1, &C); /* local stage at root: a whole-tensor temporary */
  sc = ob_sched_stage(s, C);
  OK(ob_sched_cache_write(s, sc, &cl));
  CHECK(cl && strcmp(ob_tensor_name(ob_stage_tensor(cl)), "C.local") == 0);
  CHECK(ob_stage_num_reduce_axes(cl) == 1 && ob_stage_num_reduce_axes(sc) == 0);
  prep(e, &k[ROOT], s, "cw_root");

  s = sched_of(e, te, 1, &C); /* local tile at the outer tile loop */
  sc = ob_sched_stage(s, C);
  OK(ob_sched_cache_write(s, sc, &cl));
  OK(ob_sched_tile(s, sc, ob_stage_axis(sc, 0), ob_stage_axis(sc, 1), 8, 16, &xo, &yo, &xi, &yi));
  OK(ob_sched_compute_at(s, cl, sc, yo));
  prep(e, &k[TILE], s, "cw_tile");

  s = sched_of(e, te, 1, &C); /* k outside the tile, j vectorized in both */
  sc = ob_sched_stage(s, C);
  OK(ob_sched_cache_write(s, sc, &cl));
  OK(ob_sched_tile(s, sc, ob_stage_axis(sc, 0), ob_stage_axis(sc, 1), 8, 16, &xo, &yo, &xi, &yi));
  OK(ob_sched_vectorize(s, sc, yi));
  OK(ob_sched_compute_at(s, cl, sc, yo));
  OK(ob_sched_reorder(s, cl, 3, (ob_ivar *[]){ob_stage_reduce_axis(cl, 0), ob_stage_axis(cl, 0),
                                              ob_stage_axis(cl, 1)}));
  OK(ob_sched_vectorize(s, cl, ob_stage_axis(cl, 1)));
  OK(ob_sched_unroll(s, cl, ob_stage_axis(cl, 0)));
  prep(e, &k[TILE_VEC], s, "cw_tile_vec");

  s = sched_of(e, te, 1, &C); /* 48 = 3*20 - 12: the local tile overhangs C */
  sc = ob_sched_stage(s, C);
  OK(ob_sched_cache_write(s, sc, &cl));
  OK(ob_sched_tile(s, sc, ob_stage_axis(sc, 0), ob_stage_axis(sc, 1), 8, 20, &xo, &yo, &xi, &yi));
  OK(ob_sched_compute_at(s, cl, sc, yo));
  OK(ob_sched_split(s, cl, ob_stage_reduce_axis(cl, 0), 5, &o, &in));
  prep(e, &k[TILE_NDIV], s, "cw_tile_ndiv");

  s = sched_of(e, te, 1, &C); /* tiles in parallel, each with its local tile */
  sc = ob_sched_stage(s, C);
  OK(ob_sched_cache_write(s, sc, &cl));
  OK(ob_sched_tile(s, sc, ob_stage_axis(sc, 0), ob_stage_axis(sc, 1), 8, 16, &xo, &yo, &xi, &yi));
  OK(ob_sched_parallel(s, sc, xo));
  OK(ob_sched_compute_at(s, cl, sc, yo));
  prep(e, &k[TILE_PAR], s, "cw_tile_par");

  ku_build(e, k, NK);
  ku_compare_ref(e, "matmul default vs C", &k[REF], ref_matmul, false);
  ku_compare(e, "cache_write at root", &k[ROOT], &k[REF], false);
  ku_compare(e, "cache_write at tile", &k[TILE], &k[REF], false);
  ku_compare(e, "cache_write at tile, vectorized", &k[TILE_VEC], &k[REF], false);
  ku_compare(e, "cache_write at non-dividing tile", &k[TILE_NDIV], &k[REF], false);
  ku_compare(e, "cache_write at parallel tile (pool)", &k[TILE_PAR], &k[REF], true);
  ku_compare(e, "cache_write at parallel tile (serial)", &k[TILE_PAR], &k[REF], false);

  KU_ORDER(k[ROOT].nest, "alloc C.local: float32[1536]", "C.local[", "= 0f", "for k in [0, 24) {",
           "C[((i * 48) + j)] = C.local[((i * 48) + j)]");
  KU_ORDER(k[TILE].nest, "for i.outer in [0, 4) {", "for j.outer in [0, 3) {",
           "alloc C.local: float32[128]", "for i in [0, 8) {", "for j in [0, 16) {", "= 0f",
           "for k in [0, 24) {", "for i.inner in [0, 8) {", "for j.inner in [0, 16) {",
           "C.local[((i.inner * 16) + j.inner)]");
  KU_HASNT(k[TILE].nest, "if (");
  KU_ORDER(k[TILE_VEC].nest, "alloc C.local: float32[128]", "unrolled i in [0, 8) {",
           "vectorized j in [0, 16) {", "= 0f", "for k in [0, 24) {", "unrolled i in [0, 8) {",
           "vectorized j in [0, 16) {", "vectorized j.inner in [0, 16) {");
  KU_HAS(k[TILE_VEC].src, vec_text(e, 16, "ob_f32x%s"));
  KU_ORDER(k[TILE_NDIV].nest, "alloc C.local: float32[160]", "for k.outer in [0, ",
           "for k.inner in [0, 5) {");
  KU_HAS_ANY(k[TILE_NDIV].nest, "if (", "for k.inner in [0, 4) {");
  KU_ORDER(k[TILE_PAR].nest, "parallel i.outer in [0, 4) {", "alloc C.local: float32[128]");
  KU_HAS(k[TILE_PAR].src, "rt->parallel_for(rt->pool, 4LL, cw_tile_par_par0, &ob_cl)");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- unroll, vectorize, parallel ------------------------------------------------- */
static void test_unroll_vectorize(ku_env *e) {
  ob_te *te = new_te(e);
  /* C[i, j] = (A[i, j] + 1) * B[i, j] over [8, 64] and the same over [8, 50];
   * the integer literal meets float vectors in the vector path */
  ob_tensor *A = PH("A", 8, 64), *B = PH("B", 8, 64);
  ob_ivar *i = ob_te_axis(te, "i", 8), *j = ob_te_axis(te, "j", 64);
  ob_tensor *C = COMPUTE("C", MUL(ADD(LD(A, IV(i), IV(j)), INT(1)), LD(B, IV(i), IV(j))), i, j);
  ob_tensor *A2 = PH("A2", 8, 50), *B2 = PH("B2", 50, 8);
  ob_ivar *i2 = ob_te_axis(te, "i", 8), *j2 = ob_te_axis(te, "j", 50);
  ob_tensor *C2 = COMPUTE("C2", ADD(BIN(OB_MAX, LD(A2, IV(i2), IV(j2)), FLT(-0.5)),
                                    BIN(OB_MIN, LD(B2, IV(j2), IV(i2)), FLT(0.5))), i2, j2);
  enum { REF, UNR, UNR_BIG, VEC, VEC_WHOLE, REF2, VEC_NDIV, VEC_ODD, VEC_UNR, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *st;
  ob_ivar *o, *in, *io, *ii;
  prep_default(e, &k[REF], te, 1, &C, "uv_ref");

  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 4, &o, &in));
  OK(ob_sched_unroll(s, st, in));
  prep(e, &k[UNR], s, "uv_unroll");

  s = sched_of(e, te, 1, &C); /* 64 trips inside 2: still copied out, 128 times */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 0), 2, &io, &ii));
  OK(ob_sched_unroll(s, st, ob_stage_axis(st, 1)));
  OK(ob_sched_unroll(s, st, ii));
  prep(e, &k[UNR_BIG], s, "uv_unroll_big");

  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 16, &o, &in));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[VEC], s, "uv_vec");

  s = sched_of(e, te, 1, &C); /* the outer axis vectorized: stride-64 gathers */
  st = ob_sched_stage(s, C);
  OK(ob_sched_reorder(s, st, 2, (ob_ivar *[]){ob_stage_axis(st, 1), ob_stage_axis(st, 0)}));
  OK(ob_sched_vectorize(s, st, ob_stage_axis(st, 0)));
  prep(e, &k[VEC_WHOLE], s, "uv_vec_whole");

  prep_default(e, &k[REF2], te, 1, &C2, "uv_ref2");
  s = sched_of(e, te, 1, &C2); /* 50 = 4*16 - 14: vector path plus scalar tail */
  st = ob_sched_stage(s, C2);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 16, &o, &in));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[VEC_NDIV], s, "uv_vec_ndiv");

  s = sched_of(e, te, 1, &C2); /* 10 lanes: not a power of two, scalar loop */
  st = ob_sched_stage(s, C2);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 10, &o, &in));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[VEC_ODD], s, "uv_vec_odd");

  s = sched_of(e, te, 1, &C2); /* unrolled rows around a vectorized, guarded tail */
  st = ob_sched_stage(s, C2);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 0), 2, &io, &ii));
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 8, &o, &in));
  OK(ob_sched_reorder(s, st, 4, (ob_ivar *[]){io, o, ii, in}));
  OK(ob_sched_unroll(s, st, ii));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[VEC_UNR], s, "uv_vec_unroll");

  ku_build(e, k, NK);
  ku_compare(e, "unroll 4", &k[UNR], &k[REF], false);
  ku_compare(e, "unroll 64 x 2", &k[UNR_BIG], &k[REF], false);
  ku_compare(e, "vectorize 16", &k[VEC], &k[REF], false);
  ku_compare(e, "vectorize outer axis", &k[VEC_WHOLE], &k[REF], false);
  ku_compare(e, "vectorize non-dividing", &k[VEC_NDIV], &k[REF2], false);
  ku_compare(e, "vectorize 10 lanes", &k[VEC_ODD], &k[REF2], false);
  ku_compare(e, "unroll + vectorize", &k[VEC_UNR], &k[REF2], false);

  KU_ORDER(k[UNR].nest, "for j.outer in [0, 16) {", "unrolled j.inner in [0, 4) {");
  /* unrolled: no loop over j.inner in C, and four copies of the body */
  KU_HASNT(k[UNR].src, "for (int64_t j_inner");
  CHECK_MSG(ku_count(k[UNR].src, "B_1[") >= 4, "%s", k[UNR].src);
  KU_ORDER(k[UNR_BIG].nest, "for i.outer in [0, 4) {", "unrolled i.inner in [0, 2) {", "unrolled j in [0, 64) {");
  KU_HASNT(k[UNR_BIG].src, "for (int64_t i_inner");
  KU_HASNT(k[UNR_BIG].src, "for (int64_t j_");
  CHECK(ku_count(k[UNR_BIG].src, "B_1[") >= 64 * 2);
  KU_HAS(k[VEC].nest, "vectorized j.inner in [0, 16) {");
  KU_HAS(k[VEC].src, e->lanes >= 16 ? "typedef float ob_f32x16 __attribute__((vector_size(64)));"
                                      : "typedef float ob_f32x8 __attribute__((vector_size(32)));");
  KU_HAS(k[VEC].src, vec_text(e, 16, "OB_VLOAD(ob_f32x%s, &"));
  KU_HAS(k[VEC].src, "OB_VSTORE(&");
  KU_HASNT(k[VEC].src, "} else {");
  KU_HASNT(k[VEC].src, "for (int64_t j_inner");
  KU_HAS(k[VEC_WHOLE].nest, "vectorized i in [0, 8) {");
  KU_HAS(k[VEC_WHOLE].src, "ob_f32x8");
  KU_ORDER(k[VEC_NDIV].nest, "vectorized j.inner in [0, 16) {", "< 50)) {");
  KU_ORDER(k[VEC_NDIV].src, "OB_VSTORE(&", "for (int64_t j_inner");
  KU_HAS(k[VEC_NDIV].src, vec_text(e, 16, "OB_VMAX(ob_f32x%s, ob_i32x%s, "));
  KU_HAS(k[VEC_NDIV].src, vec_text(e, 16, "OB_VMIN(ob_f32x%s, ob_i32x%s, "));
  KU_HAS(k[VEC_ODD].nest, "vectorized j.inner in [0, 10) {");
  KU_HAS(k[VEC_ODD].src, "scalar loop (the lane count is not a power of two");
  KU_HASNT(k[VEC_ODD].src, "OB_VSTORE(&");
  KU_ORDER(k[VEC_UNR].nest, "for i.outer in [0, 4) {", "for j.outer in [0, ",
           "unrolled i.inner in [0, 2) {", "vectorized j.inner in [0, 8) {");
  CHECK(ku_count(k[VEC_UNR].src, "OB_VSTORE(&") >= 2);
  free_all(k, NK);
  ob_te_free(te);
}

static void test_parallel(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *C = ew_transposed(te, 24, 50);
  /* a producer for parallel compute_at: P = exp(X), Y[i, j] = P[i, j] * X[i, j] */
  ob_tensor *X = PH("X", 30, 20);
  ob_ivar *pi = ob_te_axis(te, "i", 30), *pj = ob_te_axis(te, "j", 20);
  ob_tensor *P = COMPUTE("P", ob_te_call(te, OB_EXP, LD(X, IV(pi), IV(pj))), pi, pj);
  ob_ivar *yi = ob_te_axis(te, "i", 30), *yj = ob_te_axis(te, "j", 20);
  ob_tensor *Y = COMPUTE("Y", MUL(LD(P, IV(yi), IV(yj)), LD(X, IV(yi), IV(yj))), yi, yj);
  enum { REF, PAR_I, PAR_SPLIT, PAR_FUSED, PAR_INNER, YREF, Y_AT, Y_INNER_PAR, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *st, *sp;
  ob_ivar *o, *in, *f;
  prep_default(e, &k[REF], te, 1, &C, "pa_ref");

  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  OK(ob_sched_parallel(s, st, ob_stage_axis(st, 0)));
  prep(e, &k[PAR_I], s, "pa_i");

  s = sched_of(e, te, 1, &C); /* parallel tiles of rows, vectorized columns */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 0), 5, &o, &in));
  OK(ob_sched_parallel(s, st, o));
  ob_ivar *jo, *ji;
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 8, &jo, &ji));
  OK(ob_sched_vectorize(s, st, ji));
  prep(e, &k[PAR_SPLIT], s, "pa_split");

  s = sched_of(e, te, 1, &C);
  st = ob_sched_stage(s, C);
  OK(ob_sched_fuse(s, st, ob_stage_axis(st, 0), ob_stage_axis(st, 1), &f));
  OK(ob_sched_parallel(s, st, f));
  prep(e, &k[PAR_FUSED], s, "pa_fused");

  s = sched_of(e, te, 1, &C); /* a parallel loop inside a serial one */
  st = ob_sched_stage(s, C);
  OK(ob_sched_parallel(s, st, ob_stage_axis(st, 1)));
  prep(e, &k[PAR_INNER], s, "pa_inner");

  prep_default(e, &k[YREF], te, 1, &Y, "pa_yref");
  s = sched_of(e, te, 1, &Y); /* producer rows inside the parallel row loop */
  st = ob_sched_stage(s, Y), sp = ob_sched_stage(s, P);
  OK(ob_sched_parallel(s, st, ob_stage_axis(st, 0)));
  OK(ob_sched_compute_at(s, sp, st, ob_stage_axis(st, 0)));
  OK(ob_sched_parallel(s, sp, ob_stage_axis(sp, 1))); /* nested: stays serial */
  prep(e, &k[Y_AT], s, "pa_y_at");

  s = sched_of(e, te, 1, &Y); /* a parallel producer inside a serial consumer loop */
  st = ob_sched_stage(s, Y), sp = ob_sched_stage(s, P);
  OK(ob_sched_compute_at(s, sp, st, ob_stage_axis(st, 0)));
  OK(ob_sched_parallel(s, sp, ob_stage_axis(sp, 1)));
  OK(ob_sched_parallel(s, st, ob_stage_axis(st, 1)));
  prep(e, &k[Y_INNER_PAR], s, "pa_y_inner");

  ku_build(e, k, NK);
  const char *names[NK] = {"ref", "parallel i", "parallel i.outer", "parallel fused",
                           "parallel inner j", "yref", "parallel with compute_at",
                           "parallel producer"};
  for (int v = 1; v < NK; v++) {
    if (v == YREF) continue;
    const ku_kernel *ref = v < YREF ? &k[REF] : &k[YREF];
    char label[128];
    int before = e->npar_calls;
    snprintf(label, sizeof label, "%s (2-thread pool)", names[v]);
    ku_compare(e, label, &k[v], ref, true);
    CHECK_MSG(e->npar_calls > before, "%s: rt->parallel_for was never called", names[v]);
    snprintf(label, sizeof label, "%s (rt NULL)", names[v]);
    ku_compare(e, label, &k[v], ref, false);
  }
  KU_HAS(k[PAR_I].nest, "parallel i in [0, 24) {");
  KU_HAS(k[PAR_I].src, "static void pa_i_par0(void *ob_cl_, int64_t ob_begin, int64_t ob_end)");
  KU_HAS(k[PAR_I].src, "rt->parallel_for(rt->pool, 24LL, pa_i_par0, &ob_cl)");
  KU_HAS(k[PAR_I].src, "else pa_i_par0(&ob_cl, 0, 24LL);");
  KU_HASNT(k[PAR_I].src, "omp");
  KU_ORDER(k[PAR_SPLIT].nest, "parallel i.outer in [0, ", "for i.inner in [0, 5) {", "vectorized j.inner");
  KU_ORDER(k[PAR_SPLIT].src, "pa_split_par0", "OB_VSTORE(&", "rt->parallel_for(rt->pool, ", "pa_split_par0");
  KU_HAS(k[PAR_FUSED].nest, "parallel i.j.fused in [0, 1200) {");
  KU_ORDER(k[PAR_INNER].nest, "for i in [0, 24) {", "parallel j in [0, 50) {");
  KU_HAS(k[PAR_INNER].src, "const int64_t i_"); /* the outer index rides in the closure */
  KU_ORDER(k[Y_AT].nest, "parallel i in [0, 30) {", "alloc P: float32[20]", "parallel j in [0, 20) {");
  CHECK(ku_count(k[Y_AT].src, "rt->parallel_for(rt->pool") == 1);
  KU_ORDER(k[Y_INNER_PAR].nest, "for i in [0, 30) {", "alloc P: float32[20]", "parallel j in [0, 20) {",
           "parallel j in [0, 20) {");
  CHECK(ku_count(k[Y_INNER_PAR].src, "rt->parallel_for(rt->pool") == 2);
  KU_HAS(k[Y_INNER_PAR].src, "float *P_"); /* the local buffer rides in the closure */
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- conv2d-like: padding by select, stride 2 ---------------------------------- */
enum { CV_C = 3, CV_H = 9, CV_W = 9, CV_K = 4, CV_R = 3, CV_S = 3, CV_PAD = 1, CV_STR = 2 };
enum { CV_HP = CV_H + 2 * CV_PAD, CV_WP = CV_W + 2 * CV_PAD };
enum { CV_OH = (CV_HP - CV_R) / CV_STR + 1, CV_OW = (CV_WP - CV_S) / CV_STR + 1 };

static void ref_conv(void *const *bufs) {
  const float *A = bufs[0], *W = bufs[1];
  float *O = bufs[2];
  for (int k = 0; k < CV_K; k++)
    for (int oh = 0; oh < CV_OH; oh++)
      for (int ow = 0; ow < CV_OW; ow++) {
        float acc = 0;
        for (int c = 0; c < CV_C; c++)
          for (int r = 0; r < CV_R; r++)
            for (int s = 0; s < CV_S; s++) {
              int h = oh * CV_STR + r - CV_PAD, w = ow * CV_STR + s - CV_PAD;
              float a = h >= 0 && h < CV_H && w >= 0 && w < CV_W ? A[(c * CV_H + h) * CV_W + w] : 0;
              acc += a * W[((k * CV_C + c) * CV_R + r) * CV_S + s];
            }
        O[(k * CV_OH + oh) * CV_OW + ow] = acc;
      }
}

static void test_conv2d(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *A = PH("A", CV_C, CV_H, CV_W), *W = PH("W", CV_K, CV_C, CV_R, CV_S);
  ob_ivar *c = ob_te_axis(te, "c", CV_C), *h = ob_te_axis(te, "h", CV_HP), *w = ob_te_axis(te, "w", CV_WP);
  ob_expr *inside = AND(AND(BIN(OB_GE, IV(h), INT(CV_PAD)), BIN(OB_LT, IV(h), INT(CV_H + CV_PAD))),
                        AND(BIN(OB_GE, IV(w), INT(CV_PAD)), BIN(OB_LT, IV(w), INT(CV_W + CV_PAD))));
  ob_tensor *Ap = COMPUTE("Apad", ob_te_select(te, inside, LD(A, IV(c), SUB(IV(h), INT(CV_PAD)), SUB(IV(w), INT(CV_PAD))),
                                             FLT(0)), c, h, w);
  ob_ivar *k = ob_te_axis(te, "k", CV_K), *oh = ob_te_axis(te, "oh", CV_OH), *ow = ob_te_axis(te, "ow", CV_OW);
  ob_ivar *rc = ob_te_reduce_axis(te, "rc", CV_C), *rr = ob_te_reduce_axis(te, "rr", CV_R),
          *rs = ob_te_reduce_axis(te, "rs", CV_S);
  ob_expr *prod = MUL(LD(Ap, IV(rc), ADD(MUL(IV(oh), INT(CV_STR)), IV(rr)), ADD(MUL(IV(ow), INT(CV_STR)), IV(rs))),
                      LD(W, IV(k), IV(rc), IV(rr), IV(rs)));
  ob_tensor *O = COMPUTE("O", ob_te_reduce(te, OB_REDUCE_SUM, prod, 3, (ob_ivar *[]){rc, rr, rs}), k, oh, ow);
  enum { REF, INL, AT_OH, PAR, NK };
  ku_kernel kk[NK];
  ob_sched *s;
  ob_stage *so, *sa;
  prep_default(e, &kk[REF], te, 1, &O, "cv_ref");

  s = sched_of(e, te, 1, &O); /* padded input inlined, k split and vectorized */
  so = ob_sched_stage(s, O);
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, Ap)));
  ob_ivar *ko, *ki;
  OK(ob_sched_split(s, so, ob_stage_axis(so, 0), 2, &ko, &ki));
  OK(ob_sched_reorder(s, so, 7, (ob_ivar *[]){ko, ob_stage_axis(so, 1), ob_stage_reduce_axis(so, 0),
                                              ob_stage_reduce_axis(so, 1), ob_stage_reduce_axis(so, 2),
                                              ob_stage_axis(so, 2), ki}));
  OK(ob_sched_vectorize(s, so, ki));
  prep(e, &kk[INL], s, "cv_inline");

  s = sched_of(e, te, 1, &O); /* padded rows computed per output row, for all k */
  so = ob_sched_stage(s, O), sa = ob_sched_stage(s, Ap);
  OK(ob_sched_reorder(s, so, 2, (ob_ivar *[]){ob_stage_axis(so, 1), ob_stage_axis(so, 0)}));
  OK(ob_sched_compute_at(s, sa, so, ob_stage_axis(so, 1)));
  OK(ob_sched_unroll(s, so, ob_stage_reduce_axis(so, 2)));
  prep(e, &kk[AT_OH], s, "cv_at_oh");

  s = sched_of(e, te, 1, &O); /* parallel over k, padded input at root */
  so = ob_sched_stage(s, O);
  OK(ob_sched_parallel(s, so, ob_stage_axis(so, 0)));
  ob_ivar *f;
  OK(ob_sched_fuse(s, so, ob_stage_reduce_axis(so, 1), ob_stage_reduce_axis(so, 2), &f));
  prep(e, &kk[PAR], s, "cv_par");

  ku_build(e, kk, NK);
  ku_compare_ref(e, "conv2d default vs C", &kk[REF], ref_conv, false);
  ku_compare(e, "conv2d inline + vectorize", &kk[INL], &kk[REF], false);
  ku_compare_ref(e, "conv2d inline + vectorize vs C", &kk[INL], ref_conv, false);
  ku_compare(e, "conv2d compute_at oh", &kk[AT_OH], &kk[REF], false);
  ku_compare(e, "conv2d parallel (pool)", &kk[PAR], &kk[REF], true);
  ku_compare(e, "conv2d parallel (serial)", &kk[PAR], &kk[REF], false);

  KU_HAS(kk[REF].nest, "alloc Apad: float32[363]");
  KU_HAS(kk[REF].nest, "select(");
  KU_HASNT(kk[INL].nest, "Apad");
  KU_HAS(kk[INL].nest, "vectorized k.inner in [0, 2) {");
  KU_HAS(kk[INL].src, "ob_f32x2"); /* stride-25 stores: lane-by-lane scatter */
  /* rows 2*oh .. 2*oh+2 of all channels, full padded width: 3 * 3 * 11 */
  KU_ORDER(kk[AT_OH].nest, "for oh in [0, 5) {", "alloc Apad: float32[99]", "for c in [0, 3) {",
           "for h in [0, 3) {", "for w in [0, 11) {", "for k in [0, 4) {", "unrolled rs in [0, 3) {");
  KU_HASNT(kk[AT_OH].nest, "alloc Apad: float32[363]");
  KU_ORDER(kk[PAR].nest, "alloc Apad: float32[363]", "parallel k in [0, 4) {", "rr.rs.fused in [0, 9) {");
  free_all(kk, NK);
  ob_te_free(te);
}

/* ---- casts, min, max, select ------------------------------------------------------ */
enum { CS_N = 64 };
static void ref_casts(void *const *bufs) {
  const float *A = bufs[0], *B = bufs[1];
  float *C = bufs[2];
  int32_t *D = bufs[3];
  for (int i = 0; i < CS_N; i++) {
    float a = A[i], b = B[i];
    float t = a > b ? (float)(int32_t)(a * 8.0f) : (a < b * 0.5f ? a : b * 0.5f);
    C[i] = t + (a > 0.25f ? a : 0.25f);
    D[i] = (int32_t)(a * 100.0f) + (int32_t)(b * 50.0f);
  }
}

static void test_casts(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *A = PH("A", CS_N), *B = PH("B", CS_N);
  ob_ivar *i = ob_te_axis(te, "i", CS_N);
  ob_expr *a = LD(A, IV(i)), *b = LD(B, IV(i));
  ob_expr *t = ob_te_select(te, BIN(OB_GT, a, b), ob_te_cast(te, OB_F32, ob_te_cast(te, OB_I32, MUL(a, FLT(8)))),
                            BIN(OB_MIN, a, MUL(b, FLT(0.5))));
  ob_tensor *C = COMPUTE("C", ADD(t, BIN(OB_MAX, a, FLT(0.25))), i);
  ob_ivar *i2 = ob_te_axis(te, "i", CS_N);
  ob_tensor *D = COMPUTE("D", ADD(ob_te_cast(te, OB_I32, MUL(LD(A, IV(i2)), FLT(100))),
                                  ob_te_cast(te, OB_I32, MUL(LD(B, IV(i2)), FLT(50)))), i2);
  CHECK(ob_tensor_dtype(D) == OB_I32 && ob_tensor_dtype(C) == OB_F32);
  ob_tensor *outs[2] = {C, D};
  enum { REF, VEC, PAR, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *sc, *sd;
  ob_ivar *o, *in;
  prep_default(e, &k[REF], te, 2, outs, "cs_ref");

  s = sched_of(e, te, 2, outs); /* both vectorized: D's int32 path falls back to scalar */
  sc = ob_sched_stage(s, C), sd = ob_sched_stage(s, D);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 16, &o, &in));
  OK(ob_sched_vectorize(s, sc, in));
  OK(ob_sched_split(s, sd, ob_stage_axis(sd, 0), 8, &o, &in));
  OK(ob_sched_vectorize(s, sd, in));
  prep(e, &k[VEC], s, "cs_vec");

  s = sched_of(e, te, 2, outs);
  sc = ob_sched_stage(s, C), sd = ob_sched_stage(s, D);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 7, &o, &in));
  OK(ob_sched_parallel(s, sc, o));
  OK(ob_sched_unroll(s, sd, ob_stage_axis(sd, 0)));
  prep(e, &k[PAR], s, "cs_par");

  ku_build(e, k, NK);
  ku_compare_ref(e, "casts default vs C", &k[REF], ref_casts, false);
  ku_compare(e, "casts vectorized", &k[VEC], &k[REF], false);
  ku_compare_ref(e, "casts vectorized vs C", &k[VEC], ref_casts, false);
  ku_compare(e, "casts parallel", &k[PAR], &k[REF], true);

  KU_HAS(k[REF].nest, "D: int32[64] out");
  KU_HAS(k[REF].nest, "select((A[i] > B[i]), float32(int32((A[i] * 8f))), min(A[i], (B[i] * 0.5f)))");
  KU_HAS(k[REF].nest, "max(A[i], 0.25f)");
  KU_HAS(k[REF].src, "((int32_t)");
  KU_HAS(k[REF].src, "ob_minf(");
  KU_HAS(k[VEC].src, "scalar loop (non-float32 data)");
  KU_HAS(k[VEC].src, "OB_VSTORE(&");
  KU_HAS(k[PAR].src, "cs_par_par0");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- compute_at: more regions ------------------------------------------------------ */
static void test_compute_at_regions(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *A = PH("A", 16, 40);
  ob_ivar *bi = ob_te_axis(te, "i", 16), *bj = ob_te_axis(te, "j", 40);
  ob_tensor *B = COMPUTE("B", MUL(LD(A, IV(bi), IV(bj)), FLT(2)), bi, bj);
  ob_ivar *ci = ob_te_axis(te, "i", 16), *cj = ob_te_axis(te, "j", 40);
  ob_tensor *C = COMPUTE("C", ADD(LD(B, IV(ci), IV(cj)), FLT(1)), ci, cj);
  /* X -> Y -> Z -> W: stencils at two levels */
  ob_tensor *X = PH("X", 64);
  ob_ivar *yi = ob_te_axis(te, "i", 64);
  ob_tensor *Y = COMPUTE("Y", ADD(MUL(LD(X, IV(yi)), FLT(2)), FLT(0.125)), yi);
  ob_ivar *zi = ob_te_axis(te, "i", 64);
  ob_expr *zr = ob_te_select(te, BIN(OB_LT, IV(zi), INT(63)), LD(Y, ADD(IV(zi), INT(1))), FLT(0));
  ob_expr *zl = ob_te_select(te, BIN(OB_GE, IV(zi), INT(1)), LD(Y, SUB(IV(zi), INT(1))), FLT(0));
  ob_tensor *Z = COMPUTE("Z", ADD(ADD(zl, MUL(LD(Y, IV(zi)), FLT(3))), zr), zi);
  ob_ivar *wi = ob_te_axis(te, "i", 64);
  ob_tensor *W = COMPUTE("W", SUB(LD(Z, IV(wi)), ob_te_select(te, BIN(OB_GE, IV(wi), INT(1)),
                                                              LD(Z, SUB(IV(wi), INT(1))), FLT(0))), wi);
  /* upsampling (index i / 2) and downsampling (2i, 2i + 1) readers of Y */
  ob_ivar *ui = ob_te_axis(te, "i", 128);
  ob_tensor *U = COMPUTE("U", MUL(LD(Y, BIN(OB_DIV, IV(ui), INT(2))), FLT(0.5)), ui);
  ob_ivar *vi = ob_te_axis(te, "i", 32);
  ob_tensor *V = COMPUTE("V", ADD(LD(Y, MUL(IV(vi), INT(2))), LD(Y, ADD(MUL(IV(vi), INT(2)), INT(1)))), vi);
  /* a producer of a reduction attached at reduce and data loops */
  ob_tensor *M = PH("M", 20, 36), *N = PH("N", 24, 36);
  ob_ivar *mi = ob_te_axis(te, "i", 20), *mk = ob_te_axis(te, "k", 36);
  ob_tensor *M2 = COMPUTE("M2", MUL(LD(M, IV(mi), IV(mk)), FLT(2)), mi, mk);
  ob_ivar *ri = ob_te_axis(te, "i", 20), *rj = ob_te_axis(te, "j", 24), *rk = ob_te_reduce_axis(te, "k", 36);
  ob_tensor *R = COMPUTE("R", ob_te_reduce(te, OB_REDUCE_SUM, MUL(LD(M2, IV(ri), IV(rk)), LD(N, IV(rj), IV(rk))),
                                           1, &rk), ri, rj);
  enum { CREF, SPLIT_BIG, SPLIT3, AT_VEC, BOTH_OUT_REF, BOTH_OUT, WREF, CHAIN, ZREF, ZVEC, ZINL_VEC,
         UREF, UP, VREF, DOWN, RREF, R_AT_KO, R_AT_J, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *sb, *sc, *sz, *sw;
  ob_ivar *o, *in, *o2, *in2;
  prep_default(e, &k[CREF], te, 1, &C, "car_cref");

  s = sched_of(e, te, 1, &C); /* B's loop split by more than its region: one trip */
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 1), 8, &o, &in));
  OK(ob_sched_compute_at(s, sb, sc, o));
  OK(ob_sched_split(s, sb, ob_stage_axis(sb, 1), 16, &o2, &in2));
  prep(e, &k[SPLIT_BIG], s, "car_split_big");

  s = sched_of(e, te, 1, &C); /* B's loop split by 3 inside a region of 8 */
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 1), 8, &o, &in));
  OK(ob_sched_compute_at(s, sb, sc, o));
  OK(ob_sched_split(s, sb, ob_stage_axis(sb, 1), 3, &o2, &in2));
  prep(e, &k[SPLIT3], s, "car_split3");

  s = sched_of(e, te, 1, &C); /* attached inside a vectorized loop: scalar fallback */
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 1), 8, &o, &in));
  OK(ob_sched_vectorize(s, sc, in));
  OK(ob_sched_compute_at(s, sb, sc, in));
  prep(e, &k[AT_VEC], s, "car_at_vec");

  ob_tensor *bc[2] = {B, C}; /* B is an output and C's input */
  prep_default(e, &k[BOTH_OUT_REF], te, 2, bc, "car_both_ref");
  s = sched_of(e, te, 2, bc);
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_fuse(s, sb, ob_stage_axis(sb, 0), ob_stage_axis(sb, 1), &o));
  OK(ob_sched_parallel(s, sb, o));
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 1), 16, &o, &in));
  OK(ob_sched_vectorize(s, sc, in));
  prep(e, &k[BOTH_OUT], s, "car_both");

  prep_default(e, &k[WREF], te, 1, &W, "car_wref");
  s = sched_of(e, te, 1, &W); /* Z at W's i.outer, Y at Z's only loop */
  sw = ob_sched_stage(s, W), sz = ob_sched_stage(s, Z);
  OK(ob_sched_split(s, sw, ob_stage_axis(sw, 0), 8, &o, &in));
  OK(ob_sched_compute_at(s, sz, sw, o));
  OK(ob_sched_compute_at(s, ob_sched_stage(s, Y), sz, ob_stage_axis(sz, 0)));
  prep(e, &k[CHAIN], s, "car_chain");

  prep_default(e, &k[ZREF], te, 1, &Z, "car_zref");
  s = sched_of(e, te, 1, &Z); /* a region of 16 (14 + 2), vectorized, overhanging at both ends */
  sz = ob_sched_stage(s, Z), sb = ob_sched_stage(s, Y);
  OK(ob_sched_split(s, sz, ob_stage_axis(sz, 0), 14, &o, &in));
  OK(ob_sched_compute_at(s, sb, sz, o));
  OK(ob_sched_vectorize(s, sb, ob_stage_axis(sb, 0)));
  prep(e, &k[ZVEC], s, "car_zvec");

  s = sched_of(e, te, 1, &Z); /* Y inlined, Z vectorized: lane-dependent selects over loads */
  sz = ob_sched_stage(s, Z);
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, Y)));
  OK(ob_sched_split(s, sz, ob_stage_axis(sz, 0), 16, &o, &in));
  OK(ob_sched_vectorize(s, sz, in));
  prep(e, &k[ZINL_VEC], s, "car_zinl_vec");

  prep_default(e, &k[UREF], te, 1, &U, "car_uref");
  s = sched_of(e, te, 1, &U);
  sc = ob_sched_stage(s, U);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 16, &o, &in));
  OK(ob_sched_compute_at(s, ob_sched_stage(s, Y), sc, o));
  prep(e, &k[UP], s, "car_up");

  prep_default(e, &k[VREF], te, 1, &V, "car_vref");
  s = sched_of(e, te, 1, &V);
  sc = ob_sched_stage(s, V);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 8, &o, &in));
  OK(ob_sched_compute_at(s, ob_sched_stage(s, Y), sc, o));
  prep(e, &k[DOWN], s, "car_down");

  prep_default(e, &k[RREF], te, 1, &R, "car_rref");
  s = sched_of(e, te, 1, &R); /* M2 at R's k.outer: 8 columns of one row, the last overhanging */
  sc = ob_sched_stage(s, R);
  OK(ob_sched_split(s, sc, ob_stage_reduce_axis(sc, 0), 8, &o, &in));
  OK(ob_sched_compute_at(s, ob_sched_stage(s, M2), sc, o));
  prep(e, &k[R_AT_KO], s, "car_r_at_ko");

  s = sched_of(e, te, 1, &R); /* M2 at R's j: one row */
  sc = ob_sched_stage(s, R);
  OK(ob_sched_compute_at(s, ob_sched_stage(s, M2), sc, ob_stage_axis(sc, 1)));
  prep(e, &k[R_AT_J], s, "car_r_at_j");

  ku_build(e, k, NK);
  ku_compare(e, "B split past its region", &k[SPLIT_BIG], &k[CREF], false);
  ku_compare(e, "B split 3 in a region of 8", &k[SPLIT3], &k[CREF], false);
  ku_compare(e, "attached in a vectorized loop", &k[AT_VEC], &k[CREF], false);
  ku_compare(e, "intermediate output (pool)", &k[BOTH_OUT], &k[BOTH_OUT_REF], true);
  ku_compare(e, "intermediate output (serial)", &k[BOTH_OUT], &k[BOTH_OUT_REF], false);
  ku_compare(e, "two-level stencil chain", &k[CHAIN], &k[WREF], false);
  ku_compare(e, "vectorized overhanging region", &k[ZVEC], &k[ZREF], false);
  ku_compare(e, "inlined stencil, vectorized", &k[ZINL_VEC], &k[ZREF], false);
  ku_compare(e, "upsampling reader", &k[UP], &k[UREF], false);
  ku_compare(e, "downsampling reader", &k[DOWN], &k[VREF], false);
  ku_compare(e, "producer at a reduce loop", &k[R_AT_KO], &k[RREF], false);
  ku_compare(e, "producer at a data loop of a reduction", &k[R_AT_J], &k[RREF], false);

  KU_ORDER(k[SPLIT_BIG].nest, "alloc B: float32[8]", "for j.inner in [0, 8) {", "for j.inner in [0, 8) {");
  KU_HASNT(k[SPLIT_BIG].nest, "if (");
  KU_ORDER(k[SPLIT3].nest, "alloc B: float32[8]", "for j.outer in [0, ", "for j.inner in [0, 3) {");
  KU_HAS_ANY(k[SPLIT3].nest, "< 8)) {", "for j.inner in [0, 2) {");
  KU_ORDER(k[AT_VEC].nest, "vectorized j.inner in [0, 8) {", "alloc B: float32[1]");
  KU_HAS(k[AT_VEC].src, "scalar loop (a loop or allocation inside the vectorized loop)");
  KU_ORDER(k[BOTH_OUT].nest, "kernel(A: float32[640], B: float32[640] out, C: float32[640] out)",
           "parallel i.j.fused in [0, 640) {", "vectorized j.inner in [0, 16) {");
  KU_HASNT(k[BOTH_OUT].nest, "alloc");
  /* Z over [8*io - 1, 8*io + 8), Y over [z - 1, z + 2) for each z of it */
  KU_ORDER(k[CHAIN].nest, "alloc Z: float32[9]", "alloc Y: float32[3]", "Y[i] =", "Z[", "for i.inner in [0, 8) {");
  KU_ORDER(k[ZVEC].nest, "alloc Y: float32[16]", "vectorized i in [0, 16) {", ">= 0)");
  KU_HAS(k[ZVEC].src, vec_text(e, 16, "OB_VLOAD(ob_f32x%s, &X_"));
  KU_HAS(k[ZVEC].src, "} else {"); /* lanes outside Y fall back to the scalar loop */
  KU_HAS(k[ZINL_VEC].nest, "vectorized i.inner in [0, 16) {");
  KU_HASNT(k[ZINL_VEC].nest, "alloc");
  KU_HAS(k[ZINL_VEC].src, "OB_VSTORE(&Z_");
  /* i / 2 is not affine: the region falls back to interval bounds, which
   * still must cover [8*io, 8*io + 8) */
  KU_HAS(k[UP].nest, "alloc Y: float32[");
  KU_ORDER(k[DOWN].nest, "for i.outer in [0, 4) {", "alloc Y: float32[16]", "for i in [0, 16) {");
  KU_ORDER(k[R_AT_KO].nest, "for k.outer in [0, ", "alloc M2: float32[8]", "for k in [0, 8) {");
  KU_ORDER(k[R_AT_J].nest, "for j in [0, 24) {", "alloc M2: float32[36]", "for k in [0, 36) {", "= 0f");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- more reductions, unrolls, parallel loops and caches ---------------------------- */
static void test_more(ku_env *e) {
  ob_te *te = new_te(e);
  const int64_t M = 20, N = 24, K = 36;
  ob_tensor *A = PH("A", M, K), *B = PH("B", N, K);
  ob_ivar *i = ob_te_axis(te, "i", M), *j = ob_te_axis(te, "j", N), *kk = ob_te_reduce_axis(te, "k", K);
  ob_tensor *C = COMPUTE("C", ob_te_reduce(te, OB_REDUCE_SUM, MUL(LD(A, IV(i), IV(kk)), LD(B, IV(j), IV(kk))),
                                           1, &kk), i, j);
  ob_ivar *i2 = ob_te_axis(te, "i", M), *k2 = ob_te_reduce_axis(te, "k", K);
  ob_tensor *D = COMPUTE("D", ob_te_reduce(te, OB_REDUCE_MAX, LD(A, IV(i2), IV(k2)), 1, &k2), i2);
  ob_tensor *P = PH("P", 16, 40), *Q = PH("Q", 16, 40);
  ob_ivar *ei = ob_te_axis(te, "i", 16), *ej = ob_te_axis(te, "j", 40);
  ob_tensor *E = COMPUTE("E", SUB(MUL(LD(P, IV(ei), IV(ej)), LD(Q, IV(ei), IV(ej))), LD(P, IV(ei), IV(ej))), ei, ej);
  ob_ivar *fi = ob_te_axis(te, "i", 16), *fj = ob_te_axis(te, "j", 40);
  ob_tensor *F = COMPUTE("F", ob_te_call(te, OB_TANH, LD(E, IV(fi), IV(fj))), fi, fj);
  enum { CREF, KFIRST_PAR, VEC_J_KGUARD, C_UNROLL_INNER, DREF, D_INIT_GUARD, EREF, E_CACHE, E_UNROLL_BIG, E_NO_UNROLL,
         FREF, F_PAR_ROOT, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *st, *cl;
  ob_ivar *o, *in, *o2, *in2, *f;
  prep_default(e, &k[CREF], te, 1, &C, "mo_cref");

  s = sched_of(e, te, 1, &C); /* k outermost, rows in parallel under it */
  st = ob_sched_stage(s, C);
  OK(ob_sched_reorder(s, st, 3, (ob_ivar *[]){ob_stage_reduce_axis(st, 0), ob_stage_axis(st, 0), ob_stage_axis(st, 1)}));
  OK(ob_sched_parallel(s, st, ob_stage_axis(st, 0)));
  prep(e, &k[KFIRST_PAR], s, "mo_kfirst_par");

  s = sched_of(e, te, 1, &C); /* j vectorized innermost, a k guard around it */
  st = ob_sched_stage(s, C);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 8, &o, &in));
  OK(ob_sched_split(s, st, ob_stage_reduce_axis(st, 0), 8, &o2, &in2));
  OK(ob_sched_reorder(s, st, 5, (ob_ivar *[]){ob_stage_axis(st, 0), o, o2, in2, in}));
  OK(ob_sched_vectorize(s, st, in));
  prep(e, &k[VEC_J_KGUARD], s, "mo_vec_j_kguard");

  s = sched_of(e, te, 1, &C); /* the compiler unrolls the k loop, the innermost, alone */
  CHECK(ob_sched_unroll_inner(s, -1) == OB_ERR_SCHEDULE && strstr(ob_ctx_errmsg(e->ctx), "outside [0, 64]"));
  CHECK(ob_sched_unroll_inner(s, OB_SCHED_UNROLL_INNER_MAX + 1) == OB_ERR_SCHEDULE);
  OK(ob_sched_unroll_inner(s, 4));
  prep(e, &k[C_UNROLL_INNER], s, "mo_c_unroll_inner");

  prep_default(e, &k[DREF], te, 1, &D, "mo_dref");
  s = sched_of(e, te, 1, &D); /* 20 = 3*8 - 4 rows, under k: the init nest is guarded too */
  st = ob_sched_stage(s, D);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 0), 8, &o, &in));
  OK(ob_sched_reorder(s, st, 3, (ob_ivar *[]){ob_stage_reduce_axis(st, 0), o, in}));
  prep(e, &k[D_INIT_GUARD], s, "mo_d_init_guard");

  prep_default(e, &k[EREF], te, 1, &E, "mo_eref");
  s = sched_of(e, te, 1, &E); /* cache_write of an elementwise stage, local row per i */
  st = ob_sched_stage(s, E);
  OK(ob_sched_cache_write(s, st, &cl));
  OK(ob_sched_compute_at(s, cl, st, ob_stage_axis(st, 0)));
  OK(ob_sched_vectorize(s, cl, ob_stage_axis(cl, 1))); /* 40 lanes: scalar */
  prep(e, &k[E_CACHE], s, "mo_e_cache");

  s = sched_of(e, te, 1, &E); /* 80 trips: too many to copy, left to the compiler */
  st = ob_sched_stage(s, E);
  OK(ob_sched_fuse(s, st, ob_stage_axis(st, 0), ob_stage_axis(st, 1), &f));
  OK(ob_sched_split(s, st, f, 80, &o, &in));
  OK(ob_sched_unroll(s, st, in));
  prep(e, &k[E_UNROLL_BIG], s, "mo_e_unroll_big");

  s = sched_of(e, te, 1, &E); /* 4 trips kept a loop; the kernel scheduled for register pressure */
  st = ob_sched_stage(s, E);
  OK(ob_sched_split(s, st, ob_stage_axis(st, 1), 4, &o, &in));
  OK(ob_sched_no_unroll(s, st, in));
  ob_sched_pressure_sched(s);
  prep(e, &k[E_NO_UNROLL], s, "mo_e_no_unroll");

  prep_default(e, &k[FREF], te, 1, &F, "mo_fref");
  s = sched_of(e, te, 1, &F); /* a whole-tensor temporary used inside parallel loops */
  st = ob_sched_stage(s, F);
  ob_stage *se = ob_sched_stage(s, E);
  OK(ob_sched_parallel(s, st, ob_stage_axis(st, 0)));
  OK(ob_sched_parallel(s, se, ob_stage_axis(se, 0)));
  prep(e, &k[F_PAR_ROOT], s, "mo_f_par_root");

  ku_build(e, k, NK);
  ku_compare(e, "k outermost, parallel rows (pool)", &k[KFIRST_PAR], &k[CREF], true);
  ku_compare(e, "k outermost, parallel rows (serial)", &k[KFIRST_PAR], &k[CREF], false);
  ku_compare(e, "vectorized j under a k guard", &k[VEC_J_KGUARD], &k[CREF], false);
  ku_compare(e, "guarded init nest", &k[D_INIT_GUARD], &k[DREF], false);
  ku_compare(e, "innermost loops unrolled by the compiler", &k[C_UNROLL_INNER], &k[CREF], false);
  ku_compare(e, "cache_write elementwise", &k[E_CACHE], &k[EREF], false);
  ku_compare(e, "unroll 80", &k[E_UNROLL_BIG], &k[EREF], false);
  ku_compare(e, "kept a loop", &k[E_NO_UNROLL], &k[EREF], false);
  ku_compare(e, "parallel over a temporary (pool)", &k[F_PAR_ROOT], &k[FREF], true);
  ku_compare(e, "parallel over a temporary (serial)", &k[F_PAR_ROOT], &k[FREF], false);

  KU_ORDER(k[KFIRST_PAR].nest, "= 0f", "for k in [0, 36) {", "parallel i in [0, 20) {");
  CHECK(ku_count(k[KFIRST_PAR].src, "rt->parallel_for(rt->pool") == 1); /* the init nest stays serial */
  KU_ORDER(k[VEC_J_KGUARD].nest, "for k.inner in [0, 8) {", "vectorized j.inner in [0, 8) {");
  KU_HAS(k[VEC_J_KGUARD].src, "OB_VSTORE(&");
  KU_HAS(k[C_UNROLL_INNER].nest, ") unroll_inner 4 {");
  CHECK(ku_count(k[C_UNROLL_INNER].src, "#pragma GCC unroll 4\n") == 1);
  KU_ORDER(k[C_UNROLL_INNER].src, "for (int64_t j_", "#pragma GCC unroll 4\n", "for (int64_t k_");
  CHECK(!strstr(k[CREF].src, "#pragma GCC unroll") && !strstr(k[CREF].nest, "unroll_inner"));
  KU_ORDER(k[D_INIT_GUARD].nest, "-inff", "for k in [0, 36) {", "for i.outer in [0, ", "for i.inner in [0, 8) {");
  KU_HAS_ANY(k[D_INIT_GUARD].nest, "< 20)) {", "for i.inner in [0, 4) {");
  KU_ORDER(k[E_CACHE].nest, "for i in [0, 16) {", "alloc E.local: float32[40]", "vectorized j in [0, 40) {",
           "for j in [0, 40) {", "E[");
  KU_HAS(k[E_UNROLL_BIG].nest, "unrolled i.j.fused.inner in [0, 80) {");
  KU_HAS(k[E_UNROLL_BIG].src, "#pragma GCC unroll 80");
  KU_HAS(k[E_NO_UNROLL].nest, "for (kept a loop) j.inner in [0, 4) {");
  KU_HAS(k[E_NO_UNROLL].src, "#pragma GCC unroll 1\n");
  KU_HAS(k[E_NO_UNROLL].src, "\"schedule-insns\", \"sched-pressure\"");
  CHECK(!strstr(k[EREF].src, "sched-pressure") && !strstr(k[E_UNROLL_BIG].src, "unroll 1\n"));
  KU_ORDER(k[F_PAR_ROOT].nest, "alloc E: float32[640]", "parallel i in [0, 16) {", "parallel i in [0, 16) {");
  KU_HAS(k[F_PAR_ROOT].src, "mo_f_par_root_par1");
  KU_HAS(k[F_PAR_ROOT].src, "float *E_"); /* the temporary rides in the closure */
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- corner cases: one-trip loops, loops around parallel ones, vector locals ---------- */
static void test_corners(ku_env *e) {
  ob_te *te = new_te(e);
  /* a [1, 40] pipeline: the row loop is a one-trip loop, and B attaches to it */
  ob_tensor *A = PH("A", 1, 40);
  ob_ivar *bi = ob_te_axis(te, "i", 1), *bj = ob_te_axis(te, "j", 40);
  ob_tensor *B = COMPUTE("B", MUL(LD(A, IV(bi), IV(bj)), FLT(2)), bi, bj);
  ob_ivar *ci = ob_te_axis(te, "i", 1), *cj = ob_te_axis(te, "j", 40);
  ob_tensor *C = COMPUTE("C", ADD(LD(B, IV(ci), IV(cj)), LD(A, IV(ci), IV(cj))), ci, cj);
  /* P = X * 3 and Y = P * X over [6, 16]: 16 lanes fit a vector */
  ob_tensor *X = PH("X", 6, 16);
  ob_ivar *pi = ob_te_axis(te, "i", 6), *pj = ob_te_axis(te, "j", 16);
  ob_tensor *P = COMPUTE("P", MUL(LD(X, IV(pi), IV(pj)), FLT(3)), pi, pj);
  ob_ivar *yi = ob_te_axis(te, "i", 6), *yj = ob_te_axis(te, "j", 16);
  ob_tensor *Y = COMPUTE("Y", SUB(LD(P, IV(yi), IV(yj)), LD(X, IV(yi), IV(yj))), yi, yj);
  enum { CREF, ONE_TRIP, YREF, UNROLL_PAR, VEC_LOCAL_PAR, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *sb, *sc;
  ob_ivar *o, *in;
  prep_default(e, &k[CREF], te, 1, &C, "co_cref");

  s = sched_of(e, te, 1, &C);
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_compute_at(s, sb, sc, ob_stage_axis(sc, 0)));
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 1), 16, &o, &in));
  OK(ob_sched_vectorize(s, sc, in));
  OK(ob_sched_parallel(s, sc, ob_stage_axis(sc, 0))); /* one trip: no loop, no task */
  prep(e, &k[ONE_TRIP], s, "co_one_trip");

  prep_default(e, &k[YREF], te, 1, &Y, "co_yref");
  s = sched_of(e, te, 1, &Y); /* an unrolled loop around a parallel one */
  sc = ob_sched_stage(s, Y);
  OK(ob_sched_unroll(s, sc, ob_stage_axis(sc, 0)));
  OK(ob_sched_parallel(s, sc, ob_stage_axis(sc, 1)));
  prep(e, &k[UNROLL_PAR], s, "co_unroll_par");

  s = sched_of(e, te, 1, &Y); /* a vectorized local used by a parallel loop */
  sb = ob_sched_stage(s, P), sc = ob_sched_stage(s, Y);
  OK(ob_sched_compute_at(s, sb, sc, ob_stage_axis(sc, 0)));
  OK(ob_sched_vectorize(s, sb, ob_stage_axis(sb, 1)));
  OK(ob_sched_parallel(s, sc, ob_stage_axis(sc, 1)));
  prep(e, &k[VEC_LOCAL_PAR], s, "co_vec_local_par");

  ku_build(e, k, NK);
  ku_compare(e, "one-trip loop with an attached stage", &k[ONE_TRIP], &k[CREF], true);
  ku_compare(e, "unrolled around parallel (pool)", &k[UNROLL_PAR], &k[YREF], true);
  ku_compare(e, "unrolled around parallel (serial)", &k[UNROLL_PAR], &k[YREF], false);
  ku_compare(e, "vectorized local in a closure (pool)", &k[VEC_LOCAL_PAR], &k[YREF], true);
  ku_compare(e, "vectorized local in a closure (serial)", &k[VEC_LOCAL_PAR], &k[YREF], false);

  KU_HASNT(k[ONE_TRIP].nest, "for i ");
  KU_HASNT(k[ONE_TRIP].nest, "parallel");
  KU_ORDER(k[ONE_TRIP].nest, "alloc B: float32[40]", "for j in [0, 40) {", "vectorized j.inner in [0, 16) {");
  KU_HASNT(k[ONE_TRIP].src, "rt->parallel_for(rt->pool");
  KU_ORDER(k[UNROLL_PAR].nest, "unrolled i in [0, 6) {", "parallel j in [0, 16) {");
  CHECK(ku_count(k[UNROLL_PAR].src, "rt->parallel_for(rt->pool") == 6);
  KU_ORDER(k[VEC_LOCAL_PAR].nest, "for i in [0, 6) {", "alloc P: float32[16]", "vectorized j in [0, 16) {",
           "parallel j in [0, 16) {");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- compute_at: reversed and mixed-stride readers, two producers, through inline ---- */
static void test_compute_at_mixed(ku_env *e) {
  ob_te *te = new_te(e);
  ob_tensor *X = PH("X", 64);
  ob_ivar *yi = ob_te_axis(te, "i", 64);
  ob_tensor *Y = COMPUTE("Y", ADD(MUL(LD(X, IV(yi)), FLT(2)), FLT(0.25)), yi);
  ob_ivar *ri = ob_te_axis(te, "i", 64); /* reversed: R[i] = Y[63 - i] * X[i] */
  ob_tensor *R = COMPUTE("R", MUL(LD(Y, SUB(INT(63), IV(ri))), LD(X, IV(ri))), ri);
  ob_ivar *mi = ob_te_axis(te, "i", 32); /* mixed strides: M[i] = Y[i] + Y[2i] */
  ob_tensor *M = COMPUTE("M", ADD(LD(Y, IV(mi)), LD(Y, MUL(INT(2), IV(mi)))), mi);
  /* B1 = A * 2, B2 = A + 1, T = B1 * B1 (inlined), C = T - B2 over [16, 40] */
  ob_tensor *A = PH("A", 16, 40);
  ob_ivar *b1i = ob_te_axis(te, "i", 16), *b1j = ob_te_axis(te, "j", 40);
  ob_tensor *B1 = COMPUTE("B1", MUL(LD(A, IV(b1i), IV(b1j)), FLT(2)), b1i, b1j);
  ob_ivar *b2i = ob_te_axis(te, "i", 16), *b2j = ob_te_axis(te, "j", 40);
  ob_tensor *B2 = COMPUTE("B2", ADD(LD(A, IV(b2i), IV(b2j)), FLT(1)), b2i, b2j);
  ob_ivar *ti = ob_te_axis(te, "i", 16), *tj = ob_te_axis(te, "j", 40);
  ob_tensor *T = COMPUTE("T", MUL(LD(B1, IV(ti), IV(tj)), LD(B1, IV(ti), IV(tj))), ti, tj);
  ob_ivar *ci = ob_te_axis(te, "i", 16), *cj = ob_te_axis(te, "j", 40);
  ob_tensor *C = COMPUTE("C", SUB(LD(T, IV(ci), IV(cj)), LD(B2, IV(ci), IV(cj))), ci, cj);
  enum { RREF, REV, MREF, MIXED, CREF, TWO, FUSED_LOCAL, NK };
  ku_kernel k[NK];
  ob_sched *s;
  ob_stage *sc, *s1, *s2;
  ob_ivar *o, *in, *f;
  prep_default(e, &k[RREF], te, 1, &R, "cam_rref");
  s = sched_of(e, te, 1, &R);
  sc = ob_sched_stage(s, R);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 8, &o, &in));
  OK(ob_sched_compute_at(s, ob_sched_stage(s, Y), sc, o));
  prep(e, &k[REV], s, "cam_rev");

  prep_default(e, &k[MREF], te, 1, &M, "cam_mref");
  s = sched_of(e, te, 1, &M);
  sc = ob_sched_stage(s, M);
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 8, &o, &in));
  OK(ob_sched_compute_at(s, ob_sched_stage(s, Y), sc, o));
  prep(e, &k[MIXED], s, "cam_mixed");

  prep_default(e, &k[CREF], te, 1, &C, "cam_cref");
  s = sched_of(e, te, 1, &C); /* both producers at C's i; B1 reached through inlined T */
  sc = ob_sched_stage(s, C), s1 = ob_sched_stage(s, B1), s2 = ob_sched_stage(s, B2);
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, T)));
  OK(ob_sched_compute_at(s, s1, sc, ob_stage_axis(sc, 0)));
  OK(ob_sched_compute_at(s, s2, sc, ob_stage_axis(sc, 0)));
  prep(e, &k[TWO], s, "cam_two");

  s = sched_of(e, te, 1, &C); /* B1 over 4 rows at C's i.outer, its loops fused and reordered */
  sc = ob_sched_stage(s, C), s1 = ob_sched_stage(s, B1), s2 = ob_sched_stage(s, B2);
  OK(ob_sched_compute_inline(s, ob_sched_stage(s, T)));
  OK(ob_sched_split(s, sc, ob_stage_axis(sc, 0), 4, &o, &in));
  OK(ob_sched_compute_at(s, s1, sc, o));
  OK(ob_sched_fuse(s, s1, ob_stage_axis(s1, 0), ob_stage_axis(s1, 1), &f));
  OK(ob_sched_compute_at(s, s2, sc, in));
  OK(ob_sched_reorder(s, s2, 2, (ob_ivar *[]){ob_stage_axis(s2, 1), ob_stage_axis(s2, 0)}));
  prep(e, &k[FUSED_LOCAL], s, "cam_fused_local");

  ku_build(e, k, NK);
  ku_compare(e, "reversed reader", &k[REV], &k[RREF], false);
  ku_compare(e, "mixed-stride reader", &k[MIXED], &k[MREF], false);
  ku_compare(e, "two producers through an inlined stage", &k[TWO], &k[CREF], false);
  ku_compare(e, "fused loops of an attached stage", &k[FUSED_LOCAL], &k[CREF], false);

  /* Y[63 - i] for i in [8*io, 8*io + 8): [56 - 8*io, 64 - 8*io) */
  KU_ORDER(k[REV].nest, "for i.outer in [0, 8) {", "alloc Y: float32[8]", "for i in [0, 8) {");
  KU_HASNT(k[REV].nest, "if (");
  /* Y[i] and Y[2i] together: a region that covers both, within Y */
  KU_HAS(k[MIXED].nest, "alloc Y: float32[");
  KU_ORDER(k[TWO].nest, "for i in [0, 16) {", "alloc B1: float32[40]", "alloc B2: float32[40]",
           "for j in [0, 40) {", "C[");
  KU_HASNT(k[TWO].nest, "T[");
  KU_ORDER(k[FUSED_LOCAL].nest, "for i.outer in [0, 4) {", "alloc B1: float32[160]", "for i.j.fused in [0, 160) {",
           "for i.inner in [0, 4) {", "alloc B2: float32[40]", "for j in [0, 40) {");
  free_all(k, NK);
  ob_te_free(te);
}

/* ---- misuse ------------------------------------------------------------------------ */

/* st is `want` and the message names every word of names[] */
static void expect_err(ku_env *e, const char *what, ob_status st, int n, const char *const *names) {
  CHECK_MSG(st == OB_ERR_SCHEDULE, "%s: got %s (%s), want OB_ERR_SCHEDULE", what, ob_status_str(st),
            ob_ctx_errmsg(e->ctx));
  const char *msg = ob_ctx_errmsg(e->ctx);
  for (int i = 0; i < n; i++)
    CHECK_MSG(msg && strstr(msg, names[i]), "%s: message '%s' does not name '%s'", what,
              msg ? msg : "(null)", names[i]);
  ob_ctx_clear_error(e->ctx);
}
#define EXPECT_ERR(what, call, ...) \
  expect_err(e, (what), (call), (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), \
             (const char *[]){__VA_ARGS__})

/* Lowers s, expecting failure. */
static ob_status lower_status(ob_sched *s) {
  ob_lowered *l = NULL;
  ob_status st = ob_lower(s, &l);
  ob_lowered_free(l);
  return st;
}

static void test_misuse(ku_env *e) {
  ob_te *te = new_te(e);
  /* B = A * 2; C = B + 1 over [8, 12]; R[i] = sum_k A[i, k]; E = A + 3 */
  ob_tensor *A = PH("A", 8, 12);
  ob_ivar *bi = ob_te_axis(te, "bi", 8), *bj = ob_te_axis(te, "bj", 12);
  ob_tensor *B = COMPUTE("B", MUL(LD(A, IV(bi), IV(bj)), FLT(2)), bi, bj);
  ob_ivar *ci = ob_te_axis(te, "ci", 8), *cj = ob_te_axis(te, "cj", 12);
  ob_tensor *C = COMPUTE("C", ADD(LD(B, IV(ci), IV(cj)), FLT(1)), ci, cj);
  ob_ivar *ui = ob_te_axis(te, "ui", 8), *uj = ob_te_axis(te, "uj", 12), *uk = ob_te_axis(te, "uk", 12);
  ob_tensor *C3 = COMPUTE("C3", ADD(LD(B, IV(ui), IV(uj)), LD(A, IV(ui), IV(uk))), ui, uj, uk);
  ob_ivar *ri = ob_te_axis(te, "ri", 8), *rk = ob_te_reduce_axis(te, "rk", 12);
  ob_tensor *R = COMPUTE("R", ob_te_reduce(te, OB_REDUCE_SUM, LD(A, IV(ri), IV(rk)), 1, &rk), ri);
  ob_ivar *si = ob_te_axis(te, "si", 8);
  ob_tensor *S = COMPUTE("S", ADD(LD(R, IV(si)), FLT(1)), si);
  ob_ivar *ei = ob_te_axis(te, "ei", 8), *ej = ob_te_axis(te, "ej", 12);
  ob_tensor *E = COMPUTE("E", ADD(LD(A, IV(ei), IV(ej)), FLT(3)), ei, ej);
  ob_ivar *o, *in, *f;
  ob_sched *s;
  ob_stage *sb, *sc, *sr;

  /* axis not a leaf: split twice, and an axis of another stage */
  s = sched_of(e, te, 1, &C);
  sc = ob_sched_stage(s, C), sb = ob_sched_stage(s, B);
  OK(ob_sched_split(s, sc, cj, 4, &o, &in));
  EXPECT_ERR("split of a split axis", ob_sched_split(s, sc, cj, 2, &o, &in), "stage 'C'", "'cj'", "not a leaf");
  EXPECT_ERR("split of another stage's axis", ob_sched_split(s, sc, bi, 2, &o, &in), "stage 'C'", "'bi'");
  EXPECT_ERR("split_nparts of a split axis", ob_sched_split_nparts(s, sc, cj, 2, &o, &in), "stage 'C'", "'cj'");
  EXPECT_ERR("split factor 0", ob_sched_split(s, sc, ci, 0, &o, &in), "stage 'C'", "'ci'", "factor 0");
  EXPECT_ERR("split nparts 0", ob_sched_split_nparts(s, sc, ci, 0, &o, &in), "stage 'C'", "'ci'", "nparts 0");
  EXPECT_ERR("split of NULL", ob_sched_split(s, sc, NULL, 2, &o, &in), "stage 'C'", "NULL");
  EXPECT_ERR("tile of a split axis", ob_sched_tile(s, sc, ci, cj, 2, 2, &o, &in, &o, &in), "stage 'C'", "'cj'");
  EXPECT_ERR("reorder of a split axis", ob_sched_reorder(s, sc, 2, (ob_ivar *[]){cj, ci}), "stage 'C'", "'cj'");
  EXPECT_ERR("reorder twice the same axis", ob_sched_reorder(s, sc, 2, (ob_ivar *[]){in, in}), "stage 'C'",
             "'cj.inner'", "twice");
  EXPECT_ERR("unroll of a split axis", ob_sched_unroll(s, sc, cj), "unroll", "stage 'C'", "'cj'");
  EXPECT_ERR("vectorize of a split axis", ob_sched_vectorize(s, sc, cj), "vectorize", "stage 'C'", "'cj'");
  EXPECT_ERR("parallel of another stage's axis", ob_sched_parallel(s, sc, bj), "parallel", "stage 'C'", "'bj'");
  EXPECT_ERR("compute_at at a non-leaf", ob_sched_compute_at(s, sb, sc, cj), "stage 'C'", "'cj'");
  /* fuse: not adjacent, wrong order */
  EXPECT_ERR("fuse of non-adjacent axes", ob_sched_fuse(s, sc, ci, in, &f), "stage 'C'", "'ci'", "'cj.inner'");
  EXPECT_ERR("fuse in the wrong order", ob_sched_fuse(s, sc, o, ci, &f), "stage 'C'", "'cj.outer'", "'ci'");
  EXPECT_ERR("fuse of a non-leaf", ob_sched_fuse(s, sc, ci, cj, &f), "stage 'C'", "'cj'");
  EXPECT_ERR("tile of one axis twice", ob_sched_tile(s, sc, ci, ci, 2, 2, &o, &in, &o, &in), "stage 'C'",
             "'ci'", "twice");
  EXPECT_ERR("tile factor 0", ob_sched_tile(s, sc, ci, in, 2, 0, &o, &in, &o, &in), "stage 'C'", "factor 0");
  /* cache_write after a loop primitive */
  ob_stage *local = NULL;
  EXPECT_ERR("cache_write after split", ob_sched_cache_write(s, sc, &local), "cache_write", "stage 'C'");
  /* the failed primitives left the stage as it was: it still lowers and is correct */
  ob_ivar *lv[8];
  CHECK(ob_stage_leaves(sc, lv, 8) == 3 && lv[0] == ci && lv[1] == o && lv[2] == in);
  ob_lowered *l = NULL;
  OK(ob_lower(s, &l));
  ob_lowered_free(l);
  ob_sched_free(s);

  s = sched_of(e, te, 1, &C3); /* fuse of non-adjacent root axes */
  sc = ob_sched_stage(s, C3);
  EXPECT_ERR("fuse of ui and uk", ob_sched_fuse(s, sc, ui, uk, &f), "stage 'C3'", "'ui'", "'uk'");
  ob_sched_free(s);

  /* reduce axes: fuse with a data axis, parallel on one */
  s = sched_of(e, te, 1, &S);
  sr = ob_sched_stage(s, R);
  EXPECT_ERR("fuse of data and reduce axes", ob_sched_fuse(s, sr, ri, rk, &f), "stage 'R'", "reduce");
  EXPECT_ERR("parallel on a reduce axis", ob_sched_parallel(s, sr, rk), "parallel", "stage 'R'", "'rk'", "reduce axis");
  EXPECT_ERR("compute_inline of a reduction", ob_sched_compute_inline(s, sr), "compute_inline", "stage 'R'",
             "reduction");
  EXPECT_ERR("compute_inline of an output", ob_sched_compute_inline(s, ob_sched_stage(s, S)), "compute_inline",
             "stage 'S'", "output");
  ob_sched_free(s);

  /* compute_at misuse */
  s = sched_of(e, te, 1, &C);
  sc = ob_sched_stage(s, C), sb = ob_sched_stage(s, B);
  EXPECT_ERR("compute_at of an output", ob_sched_compute_at(s, sc, sb, bi), "compute_at", "stage 'C'", "output");
  EXPECT_ERR("compute_at to itself", ob_sched_compute_at(s, sb, sb, bi), "compute_at", "stage 'B'", "itself");
  /* attached at cj, which is split afterwards: caught at lowering */
  OK(ob_sched_compute_at(s, sb, sc, cj));
  OK(ob_sched_split(s, sc, cj, 4, &o, &in));
  EXPECT_ERR("compute_at axis split afterwards", lower_status(s), "compute_at", "'cj'", "stage 'C'");
  ob_sched_free(s);

  s = sched_of(e, te, 1, &C); /* the same with fuse */
  sc = ob_sched_stage(s, C), sb = ob_sched_stage(s, B);
  OK(ob_sched_compute_at(s, sb, sc, ci));
  OK(ob_sched_fuse(s, sc, ci, cj, &f));
  EXPECT_ERR("compute_at axis fused afterwards", lower_status(s), "compute_at", "'ci'", "stage 'C'");
  ob_sched_free(s);

  /* compute_at to a stage that does not read it: E reads only A */
  ob_tensor *two[2] = {C, E};
  s = sched_of(e, te, 2, two);
  sb = ob_sched_stage(s, B);
  ob_stage *se = ob_sched_stage(s, E);
  OK(ob_sched_compute_at(s, sb, se, ei));
  EXPECT_ERR("compute_at to a non-consumer", lower_status(s), "compute_at", "'E'", "'B'");
  ob_sched_free(s);

  /* compute_at when another stage reads it too */
  ob_tensor *both[2] = {C, C3};
  s = sched_of(e, te, 2, both);
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_compute_at(s, sb, sc, ci));
  EXPECT_ERR("compute_at with two consumers", lower_status(s), "compute_at", "'B'", "'C3'");
  ob_sched_free(s);

  /* compute_at into an inlined consumer */
  ob_ivar *ti = ob_te_axis(te, "ti", 8), *tj = ob_te_axis(te, "tj", 12);
  ob_tensor *T = COMPUTE("T", MUL(LD(C, IV(ti), IV(tj)), FLT(2)), ti, tj);
  s = sched_of(e, te, 1, &T);
  sb = ob_sched_stage(s, B), sc = ob_sched_stage(s, C);
  OK(ob_sched_compute_at(s, sb, sc, ci));
  OK(ob_sched_compute_inline(s, sc));
  EXPECT_ERR("compute_at into an inlined stage", lower_status(s), "compute_at", "'B'", "'C'", "inlined");
  EXPECT_ERR("cache_write of an inlined stage", ob_sched_cache_write(s, sc, &local), "cache_write", "'C'",
             "inlined");
  ob_sched_free(s);

  /* malformed declarations and schedules */
  ob_ivar *xi = ob_te_axis(te, "xi", 8), *xk = ob_te_reduce_axis(te, "xk", 12);
  ob_expr *red = ob_te_reduce(te, OB_REDUCE_SUM, LD(A, IV(xi), IV(xk)), 1, &xk);
  CHECK(COMPUTE("X", ADD(red, FLT(1)), xi) == NULL);
  CHECK(strstr(ob_ctx_errmsg(e->ctx), "'X'") != NULL);
  ob_ctx_clear_error(e->ctx);
  CHECK(COMPUTE("Y", FLT(1), xk) == NULL); /* a reduce axis as a data axis */
  ob_ctx_clear_error(e->ctx);
  s = NULL;
  CHECK(ob_sched_new(te, 1, &A, &s) == OB_ERR_INVALID_ARG && s == NULL);
  ob_ctx_clear_error(e->ctx);
  ob_te_free(te);
}

int main(void) {
  const char *v = getenv("OB_TEST_VERBOSE");
  verbose = v && v[0] && v[0] != '0';
  ku_env env;
  if (ku_env_init(&env)) {
    fprintf(stderr, "test_schedule: cannot set up the kernel cache\n");
    return 1;
  }
  ku_env *e = &env;
  double t0 = ob_now_s();
  test_split_tile_reorder(e);
  test_fuse(e);
  test_reduce(e);
  test_compute_at(e);
  test_compute_at_regions(e);
  test_compute_at_mixed(e);
  test_compute_inline(e);
  test_cache_write(e);
  test_unroll_vectorize(e);
  test_parallel(e);
  test_conv2d(e);
  test_casts(e);
  test_more(e);
  test_corners(e);
  test_misuse(e);
  printf("test_schedule: %d kernels compiled, %d from the cache, %.1f s (%.1f s building)\n", e->nbuilt,
         e->ncached, ob_now_s() - t0, e->build_s);
  ku_env_fini(e);
  return CHECK_DONE();
}
