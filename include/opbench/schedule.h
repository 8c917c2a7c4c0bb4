/* schedule: stages of a compute graph and the primitives that transform
 * their loop nests (split, tile, reorder, fuse, compute_at, compute_inline,
 * cache_write, unroll, vectorize, parallel; for GPUs bind, cache_read,
 * memory scopes and the unrolling pragma). Primitives only record the
 * transformation; lowering (lower.h) turns it into loops. */
#ifndef OPBENCH_SCHEDULE_H
#define OPBENCH_SCHEDULE_H

#include "opbench/te.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ob_sched ob_sched;
typedef struct ob_stage ob_stage;

/* One stage per compute tensor reachable from outs. The schedule borrows te
 * (which must outlive it). */
OB_API ob_status ob_sched_new(ob_te *te, int nout, ob_tensor *const *outs, ob_sched **out);
OB_API void ob_sched_free(ob_sched *s);
OB_API ob_stage *ob_sched_stage(ob_sched *s, const ob_tensor *t); /* NULL if none */

OB_API int ob_stage_num_axes(const ob_stage *st);
OB_API int ob_stage_num_reduce_axes(const ob_stage *st);
OB_API ob_ivar *ob_stage_axis(ob_stage *st, int i);        /* root data axis i */
OB_API ob_ivar *ob_stage_reduce_axis(ob_stage *st, int i); /* root reduce axis i */
OB_API const ob_tensor *ob_stage_tensor(const ob_stage *st);

/* Every primitive returns OB_ERR_SCHEDULE with a message naming the stage and
 * axis when misapplied (axis not a leaf of that stage, factor < 1, ...). */
OB_API ob_status ob_sched_split(ob_sched *s, ob_stage *st, ob_ivar *iv, int64_t factor,
                                ob_ivar **outer, ob_ivar **inner);
OB_API ob_status ob_sched_split_nparts(ob_sched *s, ob_stage *st, ob_ivar *iv, int64_t nparts,
                                       ob_ivar **outer, ob_ivar **inner);
OB_API ob_status ob_sched_tile(ob_sched *s, ob_stage *st, ob_ivar *x, ob_ivar *y, int64_t fx,
                               int64_t fy, ob_ivar **xo, ob_ivar **yo, ob_ivar **xi,
                               ob_ivar **yi);
/* outer and inner must be adjacent leaves, outer first. */
OB_API ob_status ob_sched_fuse(ob_sched *s, ob_stage *st, ob_ivar *outer, ob_ivar *inner,
                               ob_ivar **fused);
/* The given leaves take, in this order, the positions they held. */
OB_API ob_status ob_sched_reorder(ob_sched *s, ob_stage *st, int n, ob_ivar *const *order);
/* Computes st inside consumer's loop iv; st's region is inferred at lowering. */
OB_API ob_status ob_sched_compute_at(ob_sched *s, ob_stage *st, ob_stage *consumer,
                                     ob_ivar *iv);
OB_API ob_status ob_sched_compute_root(ob_sched *s, ob_stage *st);
OB_API ob_status ob_sched_compute_inline(ob_sched *s, ob_stage *st);
/* st now copies from a new local stage that does st's computation (with its
 * reductions); returns that stage. Only before any other primitive on st. */
OB_API ob_status ob_sched_cache_write(ob_sched *s, ob_stage *st, ob_stage **local);
OB_API ob_status ob_sched_unroll(ob_sched *s, ob_stage *st, ob_ivar *iv);
/* The loop stays a loop in the C the kernel compiles from: GCC's complete
 * peeling of short constant loops (a 3x3 window's 3 columns) would
 * otherwise unroll it, which is no schedule's choice (#pragma GCC unroll 1) */
OB_API ob_status ob_sched_no_unroll(ob_sched *s, ob_stage *st, ob_ivar *iv);
OB_API ob_status ob_sched_vectorize(ob_sched *s, ob_stage *st, ob_ivar *iv);
OB_API ob_status ob_sched_parallel(ob_sched *s, ob_stage *st, ob_ivar *iv);

/* The sum reduction of st skips the terms that are zero because its body
 * reads select(c, x, 0) (a zero padding inlined into it, as
 * ob_sched_compute_inline of a padding stage makes): lowering turns c into
 * a guard of the update (the term becomes x), places the guard in the
 * outermost loop whose variable it reads (a row of a window is skipped at
 * the loop over the window's rows), and partitions the data loops it
 * depends on into the interior, where it always holds and disappears, and
 * the border strips (ob_lower's loop partitioning). So no padded copy is
 * made and no multiply-add reads the padding. OB_ERR_SCHEDULE if st is not
 * a sum or is inlined. */
OB_API ob_status ob_sched_skip_padding(ob_sched *s, ob_stage *st);

/* Software prefetch of the slice of input t that the next iteration of
 * `outer` reads, while this one computes: slice v is the slice_elems
 * elements from t's start + v * slice_elems (one output-channel block's
 * packed weights, say, which no other block reads), and while the loops run
 * with outer = v the slice v + 1 is fetched into the L2 cache in equal
 * parts, one at the head of each iteration of `at` (a leaf of st, in its
 * nest or attached under the nest of outer's stage), the parts numbered by
 * the values of `spread` (at most 4 ivars of st or of the stages it is
 * attached under, outermost first; their extents' product is the number of
 * parts). A slice that does not fit in the caches then streams from memory
 * beside the computation instead of stalling the first use of every block.
 * A hint: no value changes; CPU code only (GPU code omits it). Lowering
 * fails with OB_ERR_SCHEDULE when outer or a spread ivar has no value where
 * `at` is, or `at` is not a leaf of st. */
OB_API ob_status ob_sched_prefetch(ob_sched *s, ob_stage *st, const ob_tensor *t, ob_ivar *outer,
                                   int64_t slice_elems, int nspread, ob_ivar *const *spread, ob_ivar *at);

/* ---- GPU primitives ------------------------------------------------------
 * bind: the leaf becomes a block index (OB_IT_BLOCK_X/Y/Z) or a thread
 * index within a block (OB_IT_THREAD_X/Y/Z). A reduce axis cannot be bound
 * (no cross-thread reduction: reduce in shared memory through a stage of
 * its own). Lowering takes the launch's extents from the bound loops.
 *
 * cache_read: a new stage copies tensor t into a buffer of `scope` and the
 * given readers (stages that read t) read the copy instead; returns the
 * copy's stage, which is then attached (compute_at) inside the readers'
 * loops. A shared copy's region covers every thread of the block (the
 * thread-bound loops around its attach point are relaxed like the inner
 * loops), and lowering puts a barrier before it is written and after, so
 * its own loops are bound to the block's threads for a cooperative fetch.
 * set_scope: the memory of an attached stage (cache_write's local copy
 * stays in registers: OB_SCOPE_LOCAL, the default).
 *
 * A region whose loops step over it with gaps (a thread's outputs spaced a
 * block of threads apart: the stride-friendly split that TVM's virtual
 * threads make, whose consecutive threads touch consecutive words and so
 * neither conflict in shared-memory banks nor scatter global accesses) is
 * stored compactly: lowering finds the strides and drops the gaps.
 *
 * unroll_pragma: AutoTVM's auto_unroll_max_step and unroll_explicit for the
 * whole kernel (max_step 0 switches automatic unrolling off). */
OB_API ob_status ob_sched_bind(ob_sched *s, ob_stage *st, ob_ivar *iv, ob_iter_ann tag);
OB_API ob_status ob_sched_cache_read(ob_sched *s, const ob_tensor *t, ob_mem_scope scope,
                                     int nreaders, ob_stage *const *readers, ob_stage **out);
OB_API ob_status ob_sched_set_scope(ob_sched *s, ob_stage *st, ob_mem_scope scope);
OB_API ob_status ob_sched_unroll_pragma(ob_sched *s, int64_t max_step, bool explicit_unroll);
/* The C compiler schedules the kernel's instructions for register pressure
 * before allocating registers (GCC's -fschedule-insns -fsched-pressure, for
 * this kernel alone). For register tiles that fill the register file to
 * the last register: without it GCC on x86 hoists the loads, runs out of
 * registers and reads the weight vectors again as memory operands of every
 * multiply-add (AVX2's 3 x 4-vector tile: 16 loads per 12 FMAs, not 7). */
OB_API void ob_sched_pressure_sched(ob_sched *s);
/* The C compiler unrolls every innermost serial loop of the kernel (one
 * that holds no other loop once the unrolled loops are expanded, vectorized
 * loops counting as the vector statements they become: a GEMM's reduction
 * over K, a convolution's loop over an input-channel block)
 * `factor` times (#pragma GCC unroll factor, which clang honours too); 0,
 * the default: the compiler's own choice. GCC at -O3 leaves a loop with
 * an unknown or long trip count rolled: one branch and the index updates
 * per register tile's step. Unrolling the schedule's statements instead
 * (split + unroll) hands GCC the whole tile's loads at once, and it folds
 * them into the multiply-adds as memory operands (load-bound). */
#define OB_SCHED_UNROLL_INNER_MAX 64
OB_API ob_status ob_sched_unroll_inner(ob_sched *s, int64_t factor);

/* Current leaf order of a stage (n leaves into out[cap]). */
OB_API int ob_stage_leaves(const ob_stage *st, ob_ivar **out, int cap);

#ifdef __cplusplus
}
#endif
#endif
