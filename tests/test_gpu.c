/* test_gpu.c: the GPU schedule primitives, their lowering and the CUDA and
 * OpenCL emitters, without a device: bind and the launch it makes, shared
 * regions relaxed over the block's threads with barriers around their fill,
 * compact strided regions, what lowering refuses (a barrier some threads
 * miss, a reduction threads would race on, a root temporary), the launch
 * checks against a target's facts (each limit named), and then NVRTC: every
 * GPU template's default and a sample of its configs compile to PTX for
 * sm_80 (or fail as instantiation errors naming a launch limit, never as
 * compile errors), a broken source is a compile error (class 2) with
 * NVRTC's log, and the PTX cache hits. Without NVRTC the NVRTC parts are
 * skips (exit 77). Running GPU kernels is test_opencl's (PoCL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/codegen.h"
#include "opbench/gpu.h"
#include "opbench/kernel.h"
#include "opbench/lower.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static ob_target *cuda, *ocl, *host;

/* C[m, n] = sum_k A[m, k] * B[n, k]: 64 x 48, K 32, scheduled for a GPU:
 * blocks of (tm x tn) outputs, a thread per output, the reduction in a
 * register, A and B tiles in shared memory fetched by the block's threads
 * at each step of ko. */
typedef struct mm {
  ob_te *te;
  ob_sched *s;
  ob_tensor *A, *B, *C;
  ob_stage *sc, *cl, *aa, *bb;
  ob_ivar *bm, *bn, *tm, *tn, *ko, *ki;
} mm;

static ob_status mm_make(mm *g, int64_t tm, int64_t tn, int64_t tk) {
  memset(g, 0, sizeof *g);
  ob_status st = ob_te_new(ctx, &g->te);
  if (st) return st;
  ob_te *te = g->te;
  g->A = ob_te_placeholder(te, "A", 2, (int64_t[]){64, 32}, OB_F32);
  g->B = ob_te_placeholder(te, "B", 2, (int64_t[]){48, 32}, OB_F32);
  ob_ivar *m = ob_te_axis(te, "m", 64), *n = ob_te_axis(te, "n", 48), *k = ob_te_reduce_axis(te, "k", 32);
  ob_expr *p = OB_TE_MUL(te, ob_te_load(te, g->A, 2, (ob_expr *[]){ob_te_var(te, m), ob_te_var(te, k)}),
                         ob_te_load(te, g->B, 2, (ob_expr *[]){ob_te_var(te, n), ob_te_var(te, k)}));
  g->C = ob_te_compute(te, "C", 2, (ob_ivar *[]){m, n}, ob_te_reduce(te, OB_REDUCE_SUM, p, 1, &k));
  st = ob_sched_new(te, 1, &g->C, &g->s);
  if (st) return st;
  ob_sched *s = g->s;
  g->sc = ob_sched_stage(s, g->C);
  st = ob_sched_cache_write(s, g->sc, &g->cl);
  if (!st) st = ob_sched_cache_read(s, g->A, OB_SCOPE_SHARED, 1, &g->cl, &g->aa);
  if (!st) st = ob_sched_cache_read(s, g->B, OB_SCOPE_SHARED, 1, &g->cl, &g->bb);
  if (!st) st = ob_sched_split(s, g->sc, ob_stage_axis(g->sc, 0), tm, &g->bm, &g->tm);
  if (!st) st = ob_sched_split(s, g->sc, ob_stage_axis(g->sc, 1), tn, &g->bn, &g->tn);
  if (!st) st = ob_sched_reorder(s, g->sc, 4, (ob_ivar *[]){g->bm, g->bn, g->tm, g->tn});
  if (!st) st = ob_sched_bind(s, g->sc, g->bm, OB_IT_BLOCK_Y);
  if (!st) st = ob_sched_bind(s, g->sc, g->bn, OB_IT_BLOCK_X);
  if (!st) st = ob_sched_bind(s, g->sc, g->tm, OB_IT_THREAD_Y);
  if (!st) st = ob_sched_bind(s, g->sc, g->tn, OB_IT_THREAD_X);
  if (!st) st = ob_sched_compute_at(s, g->cl, g->sc, g->tn);
  if (!st) st = ob_sched_split(s, g->cl, ob_stage_reduce_axis(g->cl, 0), tk, &g->ko, &g->ki);
  if (!st) st = ob_sched_reorder(s, g->cl, 4, (ob_ivar *[]){g->ko, g->ki, ob_stage_axis(g->cl, 0), ob_stage_axis(g->cl, 1)});
  if (!st) st = ob_sched_compute_at(s, g->aa, g->cl, g->ko);
  if (!st) st = ob_sched_compute_at(s, g->bb, g->cl, g->ko);
  return st;
}

/* The fetch of a shared stage: its axes fused, split over (x) threads. */
static ob_status mm_fetch(mm *g, ob_stage *ld, int64_t tx) {
  ob_ivar *f, *o, *i;
  ob_status st = ob_sched_fuse(g->s, ld, ob_stage_axis(ld, 0), ob_stage_axis(ld, 1), &f);
  if (!st) st = ob_sched_split(g->s, ld, f, tx, &o, &i);
  if (!st) st = ob_sched_bind(g->s, ld, i, OB_IT_THREAD_X);
  return st;
}

static void mm_free(mm *g) {
  ob_sched_free(g->s);
  ob_te_free(g->te);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

static const ob_buffer *find_alloc(const ob_stmt *s, const char *name) {
  if (!s) return NULL;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) {
      const ob_buffer *b = find_alloc(s->seq[i], name);
      if (b) return b;
    }
    return NULL;
  case OB_S_FOR:
  case OB_S_IF: return find_alloc(s->body, name);
  case OB_S_ALLOC: return !strcmp(s->buf->name, name) ? s->buf : NULL;
  default: return NULL;
  }
}

static void test_lowering(void) {
  mm g;
  ob_status st = mm_make(&g, 8, 16, 8);
  if (!st) st = mm_fetch(&g, g.aa, 16);
  if (!st) st = mm_fetch(&g, g.bb, 16);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  ob_lowered *f = NULL;
  if (!st) st = ob_lower(g.s, &f);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (f) {
    const ob_launch *l = &f->launch;
    CHECK(l->gpu);
    CHECK(l->grid[0] == 3 && l->grid[1] == 8 && l->grid[2] == 1);
    CHECK(l->block[0] == 16 && l->block[1] == 8 && l->block[2] == 1);
    /* the tiles cover the block's threads: A 8 rows x 8 k, B 16 rows x 8 k */
    const ob_buffer *a = find_alloc(f->body, "A.shared"), *b = find_alloc(f->body, "B.shared");
    CHECK(a && a->scope == OB_SCOPE_SHARED && a->numel == 8 * 8);
    CHECK(b && b->scope == OB_SCOPE_SHARED && b->numel == 16 * 8);
    CHECK(l->shared_bytes == (8 * 8 + 16 * 8) * 4);
    const ob_buffer *c = find_alloc(f->body, "C.local");
    CHECK(c && c->scope == OB_SCOPE_LOCAL && c->numel == 1);
    char *ir = ob_lowered_str(f);
    CHECK(ir && count(ir, "barrier") == 2 && strstr(ir, "threadIdx.x") && strstr(ir, "blockIdx.y"));
    free(ir);
    /* CUDA C and OpenCL C of it */
    char *cu = NULL, *cl = NULL, *c_src = NULL;
    CHECK(ob_codegen(ctx, cuda, f, "mm_k", &cu) == OB_OK);
    CHECK(cu && strstr(cu, "extern \"C\" __global__ void __launch_bounds__(128) mm_k(") &&
          strstr(cu, "__shared__ float") && count(cu, "__syncthreads();") == 2 && strstr(cu, "threadIdx.x"));
    CHECK(ob_codegen(ctx, ocl, f, "mm_k", &cl) == OB_OK);
    CHECK(cl && strstr(cl, "__kernel __attribute__((reqd_work_group_size(16, 8, 1))) void mm_k(") &&
          strstr(cl, "__local float") && count(cl, "barrier(CLK_LOCAL_MEM_FENCE);") == 2 &&
          strstr(cl, "get_local_id(0)"));
    /* a kernel with GPU bindings is no C kernel */
    ob_ctx_clear_error(ctx);
    CHECK(ob_codegen_c(ctx, host, f, "mm_k", &c_src) == OB_ERR_SCHEDULE && !c_src);
    CHECK(ob_lower_check_launch(ctx, f, host) == OB_ERR_SCHEDULE);
    CHECK(ob_lower_check_launch(ctx, f, cuda) == OB_OK);
    free(cu);
    free(cl);
  }
  ob_lowered_free(f);
  mm_free(&g);

  /* a fetch with more threads than the consumer's: the consumer's loops run
   * under a guard, and the barriers inside them would be reached by some
   * threads only */
  st = mm_make(&g, 8, 16, 8);
  if (!st) st = mm_fetch(&g, g.aa, 32);
  if (!st) st = mm_fetch(&g, g.bb, 32);
  f = NULL;
  ob_ctx_clear_error(ctx);
  if (!st) st = ob_lower(g.s, &f);
  CHECK_MSG(st == OB_ERR_SCHEDULE && strstr(ob_ctx_errmsg(ctx), "barrier"), "%d %s", st, ob_ctx_errmsg(ctx));
  ob_lowered_free(f);
  mm_free(&g);

  /* a reduction into global memory that a block's threads would race on:
   * the reduction stage (no local copy) bound to blocks only */
  ob_te *te = NULL;
  ob_sched *s = NULL;
  CHECK(ob_te_new(ctx, &te) == OB_OK);
  ob_tensor *A = ob_te_placeholder(te, "A", 2, (int64_t[]){16, 16}, OB_F32);
  ob_ivar *m = ob_te_axis(te, "m", 16), *k = ob_te_reduce_axis(te, "k", 16);
  ob_tensor *R = ob_te_compute(te, "rowsum", 1, &m,
                               ob_te_reduce(te, OB_REDUCE_SUM, ob_te_load(te, A, 2, (ob_expr *[]){ob_te_var(te, m), ob_te_var(te, k)}), 1, &k));
  st = ob_sched_new(te, 1, &R, &s);
  ob_stage *sr = s ? ob_sched_stage(s, R) : NULL;
  ob_ivar *o = NULL, *in = NULL;
  if (!st) st = ob_sched_split(s, sr, ob_stage_axis(sr, 0), 4, &o, &in);
  if (!st) st = ob_sched_bind(s, sr, o, OB_IT_BLOCK_X);
  /* a second stage's threads make the block: 4 threads, none bound here */
  f = NULL;
  if (!st) st = ob_lower(s, &f);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx)); /* blocks alone, one thread each: fine */
  ob_lowered_free(f);
  f = NULL;
  if (!st) st = ob_sched_bind(s, sr, ob_stage_reduce_axis(sr, 0), OB_IT_THREAD_X);
  CHECK(st == OB_ERR_SCHEDULE && strstr(ob_ctx_errmsg(ctx), "reduce axis"));
  st = ob_sched_bind(s, sr, in, OB_IT_THREAD_X);
  CHECK(st == OB_OK);
  st = ob_sched_bind(s, sr, o, OB_IT_THREAD_X); /* the same index twice in one stage */
  CHECK(st == OB_ERR_SCHEDULE && strstr(ob_ctx_errmsg(ctx), "both bound to threadIdx.x"));
  CHECK(ob_sched_bind(s, sr, o, OB_IT_PARALLEL) == OB_ERR_SCHEDULE); /* not a GPU index */
  ob_sched_free(s);
  s = NULL;
  /* racing: the reduction's own stage with a thread index for its rows but
   * accumulating in global memory from a block of 4 x 4 threads, one of
   * whose indices (y) it leaves unbound */
  st = ob_sched_new(te, 1, &R, &s);
  sr = s ? ob_sched_stage(s, R) : NULL;
  ob_stage *loc = NULL;
  if (!st) st = ob_sched_split(s, sr, ob_stage_axis(sr, 0), 4, &o, &in);
  if (!st) st = ob_sched_bind(s, sr, o, OB_IT_THREAD_Y);
  if (!st) st = ob_sched_bind(s, sr, in, OB_IT_THREAD_X);
  ob_lowered *ok = NULL;
  if (!st) st = ob_lower(s, &ok);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx)); /* every index bound: no race */
  ob_lowered_free(ok);
  ob_sched_free(s);
  s = NULL;
  st = ob_sched_new(te, 1, &R, &s);
  sr = s ? ob_sched_stage(s, R) : NULL;
  if (!st) st = ob_sched_cache_write(s, sr, &loc);
  if (!st) st = ob_sched_split(s, sr, ob_stage_axis(sr, 0), 4, &o, &in);
  if (!st) st = ob_sched_bind(s, sr, in, OB_IT_THREAD_X);
  if (!st) st = ob_sched_compute_at(s, loc, sr, in);
  /* a shared copy of A fetched by up to 8 threads of y (its region per k
   * step is the 4 rows the block's x threads read, so 4 of them), while the
   * output's rows use x only */
  ob_stage *sh = NULL;
  if (!st) st = ob_sched_cache_read(s, A, OB_SCOPE_SHARED, 1, &loc, &sh);
  if (!st) st = ob_sched_compute_at(s, sh, loc, ob_stage_reduce_axis(loc, 0));
  ob_ivar *fy, *fo, *fi;
  if (!st) st = ob_sched_fuse(s, sh, ob_stage_axis(sh, 0), ob_stage_axis(sh, 1), &fy);
  if (!st) st = ob_sched_split(s, sh, fy, 8, &fo, &fi);
  if (!st) st = ob_sched_bind(s, sh, fi, OB_IT_THREAD_Y);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  f = NULL;
  if (!st) st = ob_lower(s, &f);
  /* the output's plain store is repeated by the 8 rows of threads (the same
   * value: allowed); the local reduction is per thread: allowed */
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (f) CHECK(f->launch.block[0] == 4 && f->launch.block[1] == 4);
  ob_lowered_free(f);
  ob_sched_free(s);
  s = NULL;
  st = ob_sched_new(te, 1, &R, &s);
  sr = s ? ob_sched_stage(s, R) : NULL;
  if (!st) st = ob_sched_split(s, sr, ob_stage_axis(sr, 0), 4, &o, &in);
  if (!st) st = ob_sched_bind(s, sr, in, OB_IT_THREAD_X);
  ob_stage *sh2 = NULL;
  if (!st) st = ob_sched_cache_read(s, A, OB_SCOPE_SHARED, 1, &sr, &sh2);
  if (!st) st = ob_sched_compute_at(s, sh2, sr, o);
  if (!st) st = ob_sched_fuse(s, sh2, ob_stage_axis(sh2, 0), ob_stage_axis(sh2, 1), &fy);
  if (!st) st = ob_sched_split(s, sh2, fy, 2, &fo, &fi);
  if (!st) st = ob_sched_bind(s, sh2, fi, OB_IT_THREAD_Y);
  f = NULL;
  ob_ctx_clear_error(ctx);
  if (!st) st = ob_lower(s, &f);
  CHECK_MSG(st == OB_ERR_SCHEDULE && strstr(ob_ctx_errmsg(ctx), "several threads") &&
                strstr(ob_ctx_errmsg(ctx), "rowsum"),
            "%d %s", st, ob_ctx_errmsg(ctx));
  ob_lowered_free(f);
  ob_sched_free(s);
  ob_te_free(te);

  /* scopes */
  CHECK(mm_make(&g, 8, 8, 8) == OB_OK);
  CHECK(ob_sched_set_scope(g.s, g.sc, OB_SCOPE_SHARED) == OB_ERR_SCHEDULE); /* an output */
  CHECK(ob_sched_set_scope(g.s, g.cl, OB_SCOPE_GLOBAL) == OB_ERR_SCHEDULE);
  ob_stage *dummy = NULL;
  CHECK(ob_sched_cache_read(g.s, g.A, OB_SCOPE_GLOBAL, 1, &g.cl, &dummy) == OB_ERR_SCHEDULE);
  CHECK(ob_sched_cache_read(g.s, g.A, OB_SCOPE_SHARED, 1, &g.sc, &dummy) == OB_ERR_SCHEDULE); /* C reads C.local */
  CHECK(ob_sched_unroll_pragma(g.s, -1, false) == OB_ERR_SCHEDULE);
  CHECK(ob_sched_unroll_pragma(g.s, 64, true) == OB_OK);
  mm_free(&g);
}

/* A thread's outputs spaced a block of threads apart (the stride-friendly
 * split): x = (bx * 4 + v) * 8 + t, the thread t owning 4 outputs 8 apart.
 * Its register tile holds those 4, not the 25 an interval would span. */
static void test_strided_region(void) {
  ob_te *te = NULL;
  ob_sched *s = NULL;
  CHECK(ob_te_new(ctx, &te) == OB_OK);
  ob_tensor *A = ob_te_placeholder(te, "A", 2, (int64_t[]){64, 16}, OB_F32);
  ob_ivar *x = ob_te_axis(te, "x", 64), *k = ob_te_reduce_axis(te, "k", 16);
  ob_tensor *R = ob_te_compute(te, "rowsum", 1, &x,
                               ob_te_reduce(te, OB_REDUCE_SUM, ob_te_load(te, A, 2, (ob_expr *[]){ob_te_var(te, x), ob_te_var(te, k)}), 1, &k));
  ob_status st = ob_sched_new(te, 1, &R, &s);
  ob_stage *sr = s ? ob_sched_stage(s, R) : NULL, *loc = NULL;
  ob_ivar *xo, *t, *bx, *v;
  if (!st) st = ob_sched_cache_write(s, sr, &loc);
  if (!st) st = ob_sched_split(s, sr, ob_stage_axis(sr, 0), 8, &xo, &t);
  if (!st) st = ob_sched_split(s, sr, xo, 4, &bx, &v);
  if (!st) st = ob_sched_reorder(s, sr, 3, (ob_ivar *[]){bx, t, v});
  if (!st) st = ob_sched_bind(s, sr, bx, OB_IT_BLOCK_X);
  if (!st) st = ob_sched_bind(s, sr, t, OB_IT_THREAD_X);
  if (!st) st = ob_sched_compute_at(s, loc, sr, t);
  ob_lowered *f = NULL;
  if (!st) st = ob_lower(s, &f);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (f) {
    const ob_buffer *b = find_alloc(f->body, "rowsum.local");
    CHECK_MSG(b && b->numel == 4, "the strided tile holds %lld", b ? (long long)b->numel : -1LL);
    CHECK(f->launch.grid[0] == 2 && f->launch.block[0] == 8);
    char *ir = ob_lowered_str(f);
    /* its index is the tile's own (no division by the stride left) */
    CHECK(ir && strstr(ir, "rowsum.local[") && !strstr(ir, "/ 8"));
    free(ir);
  }
  ob_lowered_free(f);
  ob_sched_free(s);
  ob_te_free(te);
}

/* Launch limits of a target, each named: a task's config over them is
 * OB_ERR_LAUNCH, an instantiation error for the measurement. */
static void test_launch_limits(void) {
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "pad", 1) == OB_OK);
  ob_task *t = NULL;
  CHECK(ob_task_new(ctx, &wl, NULL, cuda, &t) == OB_OK);
  if (!t) return;
  CHECK(!strcmp(ob_task_template(t), "conv2d_nchw.cuda"));
  struct {
    const char *json, *what;
  } k[] = {
      {"[[\"tile_f\",\"sp\",[-1,1,64,1]],[\"tile_y\",\"sp\",[-1,1,28,2]],[\"tile_x\",\"sp\",[-1,1,1,56]],"
       "[\"tile_rc\",\"sp\",[-1,8]],[\"tile_ry\",\"sp\",[-1,3]],[\"tile_rx\",\"sp\",[-1,3]],"
       "[\"auto_unroll_max_step\",\"ot\",512],[\"unroll_explicit\",\"ot\",1]]",
       "1792 threads per block (1 x 28 x 64) > 1024"},
      {"[[\"tile_f\",\"sp\",[-1,1,1,64]],[\"tile_y\",\"sp\",[-1,1,1,56]],[\"tile_x\",\"sp\",[-1,1,1,56]],"
       "[\"tile_rc\",\"sp\",[-1,64]],[\"tile_ry\",\"sp\",[-1,3]],[\"tile_rx\",\"sp\",[-1,3]],"
       "[\"auto_unroll_max_step\",\"ot\",0],[\"unroll_explicit\",\"ot\",0]]",
       "bytes of shared memory per block >"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob_config cfg;
    ob_status st = ob_config_from_json(ctx, ob_task_space(t), k[i].json, &cfg);
    CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
    if (st) continue;
    char *src = NULL, *name = NULL;
    ob_ctx_clear_error(ctx);
    st = ob_task_source(t, &cfg, &src, &name);
    CHECK_MSG(st == OB_ERR_LAUNCH && strstr(ob_ctx_errmsg(ctx), k[i].what) &&
                  strstr(ob_ctx_errmsg(ctx), "launch over the device's limits") &&
                  strstr(ob_ctx_errmsg(ctx), "cuda -arch=sm_80"),
              "%d %s", st, ob_ctx_errmsg(ctx));
    free(src);
    free(name);
    /* the build report says class 1 with the same message */
    ob_measure_opts mo = ob_measure_opts_default();
    ob_build_report br;
    if (ob_build_configs(ctx, t, &mo, &cfg, 1, &br) == OB_OK)
      CHECK_MSG(br.error_no == 1 && strstr(br.message, k[i].what), "%d %s", br.error_no, br.message);
    else
      CHECK_SKIP("NVRTC is not installed: %s", ob_ctx_errmsg(ctx));
  }
  /* 128 threads along z, more than the 64 a CUDA block may have there */
  ob_workload w2;
  ob_task *t2 = NULL;
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=8,H=8,W=8,K=128,R=1,S=1", &w2) == OB_OK);
  CHECK(ob_task_new(ctx, &w2, NULL, cuda, &t2) == OB_OK);
  ob_config c2;
  if (t2 && ob_config_from_json(ctx, ob_task_space(t2),
                                "[[\"tile_f\",\"sp\",[-1,1,128,1]],[\"tile_y\",\"sp\",[-1,1,1,1]],"
                                "[\"tile_x\",\"sp\",[-1,1,1,1]],[\"tile_rc\",\"sp\",[-1,8]],"
                                "[\"tile_ry\",\"sp\",[-1,1]],[\"tile_rx\",\"sp\",[-1,1]],"
                                "[\"auto_unroll_max_step\",\"ot\",0],[\"unroll_explicit\",\"ot\",0]]",
                                &c2) == OB_OK) {
    char *src = NULL, *name = NULL;
    ob_ctx_clear_error(ctx);
    CHECK(ob_task_source(t2, &c2, &src, &name) == OB_ERR_LAUNCH &&
          strstr(ob_ctx_errmsg(ctx), "block dimension z of 128 threads > 64"));
    free(src);
    free(name);
  } else {
    CHECK_MSG(false, "%s", ob_ctx_errmsg(ctx));
  }
  ob_task_free(t2);
  /* GPU templates are for GPU targets only, CPU templates for CPU targets */
  ob_task *bad = NULL;
  ob_ctx_clear_error(ctx);
  CHECK(ob_task_new(ctx, &wl, "conv2d_nchw.x86", cuda, &bad) == OB_ERR_UNSUPPORTED && !bad &&
        strstr(ob_ctx_errmsg(ctx), "for CPU targets") && strstr(ob_ctx_errmsg(ctx), "conv2d_nchw.cuda"));
  CHECK(ob_task_new(ctx, &wl, "conv2d_nchw.cuda", host, &bad) == OB_ERR_UNSUPPORTED && !bad &&
        strstr(ob_ctx_errmsg(ctx), "for GPU targets"));
  CHECK(ob_op_template_is_gpu("conv2d", "conv2d_nchw.cuda") && !ob_op_template_is_gpu("conv2d", "conv2d_nchw.x86"));
  ob_task_free(t);
}

/* ---- NVRTC -------------------------------------------------------------------------- */
typedef struct gcase {
  const char *op, *shape, *epilogue;
  int64_t stride, pad;
} gcase;

static const gcase k_cases[] = {
    {"conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3", "", 1, 1},
    {"conv2d", "N=1,C=3,H=224,W=224,K=64,R=7,S=7", "bias,relu", 2, 3},
    {"conv2d", "N=1,C=17,H=13,W=11,K=23,R=5,S=3", "add", 1, 2},
    {"conv2d", "N=1,C=12,H=10,W=10,K=18,R=3,S=3,groups=3", "", 2, 1},
    {"depthwise_conv2d", "N=1,C=32,H=112,W=112,R=3,S=3", "relu6", 1, 1},
    {"depthwise_conv2d", "N=1,C=96,H=56,W=56,R=3,S=3", "", 2, 1},
    {"dense", "M=1,N=1000,K=512", "bias", 0, 0},
    {"dense", "M=37,N=1001,K=1024", "", 0, 0},
    {"batch_matmul", "B=12,M=128,N=128,K=64", "", 0, 0},
};

static int g_ntmpl_checked;
static char g_checked[32][64];

static void note_checked(const char *op, const char *tmpl) {
  char k[64];
  snprintf(k, sizeof k, "%s/%s", op, tmpl);
  for (int i = 0; i < g_ntmpl_checked; i++)
    if (!strcmp(g_checked[i], k)) return;
  if (g_ntmpl_checked < 32) snprintf(g_checked[g_ntmpl_checked++], 64, "%s", k);
}

/* Default + `samples` random configs of every GPU template of each case
 * compile through NVRTC; the only failures allowed are instantiation errors
 * (launch limits, named). */
static void test_nvrtc_templates(int samples) {
  int built = 0, over = 0;
  double secs = 0;
  for (size_t c = 0; c < sizeof k_cases / sizeof k_cases[0]; c++) {
    ob_workload wl;
    CHECK(ob_workload_parse(ctx, k_cases[c].op, k_cases[c].shape, &wl) == OB_OK);
    if (k_cases[c].stride) CHECK(ob_workload_set(ctx, &wl, "stride", k_cases[c].stride) == OB_OK);
    if (k_cases[c].pad) CHECK(ob_workload_set(ctx, &wl, "pad", k_cases[c].pad) == OB_OK);
    if (*k_cases[c].epilogue) CHECK(ob_workload_set_epilogue(ctx, &wl, k_cases[c].epilogue) == OB_OK);
    const char *names[8];
    int nt = ob_op_templates_for(wl.op, cuda, names, 8);
    CHECK(nt >= 1);
    for (int i = 0; i < nt && i < 8; i++) {
      ob_task *t = NULL;
      ob_status st = ob_task_new(ctx, &wl, names[i], cuda, &t);
      CHECK_MSG(st == OB_OK, "%s %s: %s", wl.op, names[i], ob_ctx_errmsg(ctx));
      if (st) continue;
      ob_config cfgs[16];
      int n = 0;
      cfgs[n++] = ob_task_default_config(t);
      ob_rng r = {c * 131 + (uint64_t)i + 7};
      for (int tries = 0; n < 1 + samples && tries < 1000; tries++)
        if (ob_space_get(ctx, ob_task_space(t), ob_rng_next(&r) % ob_space_len(ob_task_space(t)), &cfgs[n]) == OB_OK) n++;
      ob_measure_opts mo = ob_measure_opts_default();
      ob_build_report br[16];
      st = ob_build_configs(ctx, t, &mo, cfgs, n, br);
      CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
      for (int k = 0; st == OB_OK && k < n; k++) {
        char *cs = ob_config_str(&cfgs[k]);
        CHECK_MSG(br[k].error_no == 0 || (br[k].error_no == 1 && strstr(br[k].message, "launch over the device's limits")),
                  "%s %s [%s]: error %d: %.400s", k_cases[c].shape, names[i], cs, br[k].error_no, br[k].message);
        if (k == 0) CHECK_MSG(br[k].error_no == 0, "%s %s: the default config does not build", k_cases[c].shape, names[i]);
        if (br[k].error_no == 0) {
          built++;
          secs += br[k].build_s;
          CHECK(strstr(br[k].path, ".ptx") != NULL);
          CHECK(br[k].launch.gpu && br[k].launch.block[0] * br[k].launch.block[1] * br[k].launch.block[2] <= 1024);
        } else {
          over++;
        }
        free(cs);
      }
      if (st == OB_OK) note_checked(wl.op, names[i]);
      ob_task_free(t);
    }
  }
  printf("NVRTC: %d kernels built (%.1f s compiling), %d configs over sm_80's launch limits\n", built, secs, over);
  /* every GPU template of the registry was compiled here */
  for (int i = 0; i < ob_op_count(); i++) {
    const char *names[8];
    int nt = ob_op_templates_for(ob_op_name(i), cuda, names, 8);
    for (int k = 0; k < nt && k < 8; k++) {
      char key[64];
      snprintf(key, sizeof key, "%s/%s", ob_op_name(i), names[k]);
      bool seen = false;
      for (int j = 0; j < g_ntmpl_checked; j++) seen |= !strcmp(g_checked[j], key);
      CHECK_MSG(seen, "GPU template %s: no case compiles it (add one to tests/test_gpu.c)", key);
    }
  }
}

static void test_nvrtc_errors(void) {
  /* a source NVRTC rejects: class 2 with its log, no file */
  ob_gpu_build b;
  const char *bad = "extern \"C\" __global__ void broken(float *a) { a[threadIdx.x] = undeclared_name; }\n";
  ob_status st = ob_gpu_compile(ctx, cuda, NULL, bad, "broken", &b);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  CHECK(b.error_no == 2 && !b.path && b.message && strstr(b.message, "undeclared_name"));
  ob_gpu_build_clear(&b);
  /* the same good source twice: the second from the cache */
  const char *good = "extern \"C\" __global__ void ok_k(float *a) { a[threadIdx.x] *= 2.0f; }\n";
  CHECK(ob_gpu_compile(ctx, cuda, NULL, good, "ok_k", &b) == OB_OK && b.error_no == 0 && b.path);
  ob_gpu_build_clear(&b);
  CHECK(ob_gpu_compile(ctx, cuda, NULL, good, "ok_k", &b) == OB_OK && b.error_no == 0 && b.cached);
  if (b.path) {
    char *ptx = NULL;
    CHECK(ob_read_text(ctx, b.path, "PTX", NULL, &ptx, NULL) == OB_OK && ptx && strstr(ptx, ".entry ok_k") &&
          strstr(ptx, ".target sm_80"));
    free(ptx);
  }
  ob_gpu_build_clear(&b);
  char v[256];
  CHECK(strstr(ob_gpu_nvrtc_version(v, sizeof v), "NVRTC") != NULL);
}

/* The kernel API for a GPU target: ob_kernel_build compiles (NVRTC) and
 * says how to launch; loading it in this process is refused, named. */
static void test_kernel_build(void) {
  mm g;
  ob_status st = mm_make(&g, 8, 16, 8);
  if (!st) st = mm_fetch(&g, g.aa, 16);
  if (!st) st = mm_fetch(&g, g.bb, 16);
  ob_lowered *f = NULL;
  if (!st) st = ob_lower(g.s, &f);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (f) {
    const ob_lowered *fns[1] = {f};
    const char *names[1] = {"mm_kb"};
    ob_kernel_artifact a;
    CHECK(ob_kernel_build(ctx, cuda, NULL, fns, names, 1, &a) == OB_OK);
    CHECK_MSG(a.error_no == 0 && a.so_path && strstr(a.so_path, ".ptx") && a.launch.gpu && a.launch.block[0] == 16 &&
                  a.launch.block[1] == 8 && a.launch.grid[1] == 8 && a.nargs == 3 && !a.arg_is_input[2] &&
                  !strcmp(a.target, "cuda -arch=sm_80") && a.source && strstr(a.source, "__global__"),
              "%d %s", a.error_no, a.message ? a.message : "");
    ob_kernel *k = NULL;
    ob_ctx_clear_error(ctx);
    CHECK(ob_kernel_load(ctx, &a, &k) == OB_ERR_INVALID_ARG && !k && strstr(ob_ctx_errmsg(ctx), "GPU runner"));
    ob_kernel_artifact_clear(&a);
  }
  ob_lowered_free(f);
  mm_free(&g);
}

int main(void) {
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  CHECK(ob_target_parse(ctx, "cuda -arch=sm_80", &cuda) == OB_OK);
  CHECK(ob_target_parse(ctx, "opencl", &ocl) == OB_OK);
  CHECK(ob_target_parse(ctx, "c -isa=scalar", &host) == OB_OK);
  if (!cuda || !ocl || !host) return CHECK_DONE();
  test_lowering();
  test_strided_region();
  test_launch_limits();
  if (ob_target_check_buildable(ctx, cuda) == OB_OK) {
    test_nvrtc_errors();
    test_kernel_build();
    test_nvrtc_templates(3);
  } else {
    CHECK_SKIP("NVRTC is not installed, CUDA kernels cannot be compiled here: %s", ob_ctx_errmsg(ctx));
  }
  ob_target_free(cuda);
  ob_target_free(ocl);
  ob_target_free(host);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
