/* te: tensor expressions. Placeholders, compute declarations over iteration
 * variables, sum/max reductions over reduce axes, affine index arithmetic,
 * min/max, select (for padding), casts and a few math intrinsics. All nodes
 * live in the ob_te arena and die with ob_te_free.
 *
 * Out of memory: once an allocation for the te failed, every constructor
 * returns NULL (and accepts the NULLs made before as arguments), the
 * accessors read NULL as an empty tensor, ob_te_failed says so, and
 * ob_sched_new returns OB_ERR_NOMEM: a declaration runs to its end and
 * the failure is reported once, where it becomes a schedule. */
#ifndef OPBENCH_TE_H
#define OPBENCH_TE_H

#include "opbench/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ob_dtype {
  OB_F32 = 0,
  OB_F16,
  OB_I8,
  OB_I32,
  OB_I64, /* index arithmetic */
  OB_BOOL,
  OB_DTYPE_COUNT
} ob_dtype;
OB_API const char *ob_dtype_name(ob_dtype t);
OB_API size_t ob_dtype_size(ob_dtype t);

typedef enum ob_binop {
  OB_ADD = 0, OB_SUB, OB_MUL, OB_DIV /* floor */, OB_MOD /* floor */, OB_FDIV /* real */,
  OB_MIN, OB_MAX, OB_LT, OB_LE, OB_GT, OB_GE, OB_EQ, OB_NE, OB_AND, OB_OR,
  OB_BINOP_COUNT
} ob_binop;

typedef enum ob_intrin { OB_EXP = 0, OB_TANH, OB_SQRT, OB_LOG, OB_INTRIN_COUNT } ob_intrin;
typedef enum ob_reduce_op { OB_REDUCE_SUM = 0, OB_REDUCE_MAX, OB_REDUCE_OP_COUNT } ob_reduce_op;

/* How a loop runs: what schedule primitives ask of a loop variable, and
 * what a lowered loop (ir.h) carries. */
typedef enum ob_iter_ann {
  OB_IT_SERIAL = 0,
  OB_IT_UNROLL,
  OB_IT_VECTORIZE,
  OB_IT_PARALLEL,
  /* GPU bindings (ob_sched_bind): the loop is the block index (CUDA's
   * blockIdx, OpenCL's group id) or the thread index within a block
   * (threadIdx, local id) along x, y or z */
  OB_IT_BLOCK_X,
  OB_IT_BLOCK_Y,
  OB_IT_BLOCK_Z,
  OB_IT_THREAD_X,
  OB_IT_THREAD_Y,
  OB_IT_THREAD_Z,
  /* serial, and kept a loop: the C compiler does not unroll it either
   * (ob_sched_no_unroll) */
  OB_IT_NO_UNROLL,
  OB_IT_ANN_COUNT
} ob_iter_ann;
static inline bool ob_ann_is_block(ob_iter_ann a) { return a >= OB_IT_BLOCK_X && a <= OB_IT_BLOCK_Z; }
static inline bool ob_ann_is_thread(ob_iter_ann a) { return a >= OB_IT_THREAD_X && a <= OB_IT_THREAD_Z; }
static inline bool ob_ann_is_bound(ob_iter_ann a) { return ob_ann_is_block(a) || ob_ann_is_thread(a); }
OB_API const char *ob_iter_ann_name(ob_iter_ann a); /* "serial", ..., "blockIdx.x", "threadIdx.z" */

/* Where a buffer lives: global (device) memory, shared by the threads of a
 * block (CUDA __shared__, OpenCL __local), or local to each thread
 * (registers; on a CPU the attached stage's stack tile, as before). */
typedef enum ob_mem_scope {
  OB_SCOPE_GLOBAL = 0,
  OB_SCOPE_SHARED,
  OB_SCOPE_LOCAL,
  OB_SCOPE_COUNT
} ob_mem_scope;
OB_API const char *ob_mem_scope_name(ob_mem_scope s); /* "global", "shared", "local" */

typedef struct ob_te ob_te;
typedef struct ob_expr ob_expr;
typedef struct ob_tensor ob_tensor;
typedef struct ob_ivar ob_ivar;

OB_API ob_status ob_te_new(ob_ctx *ctx, ob_te **out);
OB_API void ob_te_free(ob_te *te); /* frees every node made through it */
OB_API ob_ctx *ob_te_ctx(ob_te *te);
/* True once an allocation for te's nodes failed (what was declared since is
 * incomplete; the caller returns OB_ERR_NOMEM). */
OB_API bool ob_te_failed(const ob_te *te);

OB_API ob_tensor *ob_te_placeholder(ob_te *te, const char *name, int ndim,
                                    const int64_t *shape, ob_dtype dtype);
/* Iteration variables: data-parallel axes and reduce axes over [0, extent). */
OB_API ob_ivar *ob_te_axis(ob_te *te, const char *name, int64_t extent);
OB_API ob_ivar *ob_te_reduce_axis(ob_te *te, const char *name, int64_t extent);
/* out[i] = body(axes); axes[i] ranges over shape[i]; body may be a reduction
 * (ob_te_reduce) at the top only. Returns NULL and sets the ctx error on a
 * malformed declaration (reduction not at the top, axis extent mismatch). */
OB_API ob_tensor *ob_te_compute(ob_te *te, const char *name, int ndim, ob_ivar *const *axes,
                                ob_expr *body);

OB_API ob_expr *ob_te_int(ob_te *te, int64_t v);
OB_API ob_expr *ob_te_float(ob_te *te, ob_dtype dtype, double v);
OB_API ob_expr *ob_te_var(ob_te *te, ob_ivar *iv);
OB_API ob_expr *ob_te_bin(ob_te *te, ob_binop op, ob_expr *a, ob_expr *b);
OB_API ob_expr *ob_te_select(ob_te *te, ob_expr *cond, ob_expr *then_v, ob_expr *else_v);
OB_API ob_expr *ob_te_cast(ob_te *te, ob_dtype dtype, ob_expr *a);
OB_API ob_expr *ob_te_call(ob_te *te, ob_intrin fn, ob_expr *a);
OB_API ob_expr *ob_te_load(ob_te *te, const ob_tensor *t, int nidx, ob_expr *const *idx);
OB_API ob_expr *ob_te_reduce(ob_te *te, ob_reduce_op op, ob_expr *body, int naxes,
                             ob_ivar *const *axes);

/* Short forms. */
#define OB_TE_ADD(te, a, b) ob_te_bin((te), OB_ADD, (a), (b))
#define OB_TE_SUB(te, a, b) ob_te_bin((te), OB_SUB, (a), (b))
#define OB_TE_MUL(te, a, b) ob_te_bin((te), OB_MUL, (a), (b))

OB_API const char *ob_tensor_name(const ob_tensor *t);
OB_API int ob_tensor_ndim(const ob_tensor *t);
OB_API int64_t ob_tensor_dim(const ob_tensor *t, int i);
OB_API int64_t ob_tensor_numel(const ob_tensor *t);
OB_API ob_dtype ob_tensor_dtype(const ob_tensor *t);
OB_API bool ob_tensor_is_placeholder(const ob_tensor *t);
OB_API const char *ob_ivar_name(const ob_ivar *iv);
OB_API int64_t ob_ivar_extent(const ob_ivar *iv);

/* Prints an expression in C-like syntax into a malloc'd string (NULL when
 * out of memory). */
OB_API char *ob_expr_str(const ob_expr *e);

#ifdef __cplusplus
}
#endif
#endif
