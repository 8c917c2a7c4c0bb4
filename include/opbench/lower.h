/* lower: turns a schedule into the loop-nest IR (ir.h). Infers the regions
 * of attached stages (interval arithmetic over affine indices), guards
 * non-dividing splits, inlines, flattens buffers and simplifies. */
#ifndef OPBENCH_LOWER_H
#define OPBENCH_LOWER_H

#include "opbench/ir.h"
#include "opbench/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The lowered function owns its own arena: the schedule and the te may be
 * freed after. A kernel with loops bound to GPU indices gets its launch
 * (f->launch: grid, block, shared memory); a barrier that some threads of
 * the block would not reach, a reduction that several threads would update
 * at once, or a root temporary in such a kernel is OB_ERR_SCHEDULE. */
OB_API ob_status ob_lower(ob_sched *s, ob_lowered **out);
/* Checks f's launch against target t's facts: threads per block, block
 * and grid dimensions, shared memory per block, registers per thread:
 * OB_ERR_LAUNCH naming the limit, the value and the target. A kernel with
 * GPU bindings for a CPU target is OB_ERR_SCHEDULE. */
struct ob_target;
OB_API ob_status ob_lower_check_launch(ob_ctx *ctx, const ob_lowered *f, const struct ob_target *t);
OB_API void ob_lowered_free(ob_lowered *f);
/* The loop nest as indented pseudo-code, malloc'd. */
OB_API char *ob_lowered_str(const ob_lowered *f);

/* Kernel arguments: placeholders in declaration order, then outputs. */
OB_API int ob_lowered_num_args(const ob_lowered *f);
OB_API const char *ob_lowered_arg_name(const ob_lowered *f, int i);
OB_API int64_t ob_lowered_arg_numel(const ob_lowered *f, int i);
OB_API ob_dtype ob_lowered_arg_dtype(const ob_lowered *f, int i);
OB_API bool ob_lowered_arg_is_output(const ob_lowered *f, int i);

#ifdef __cplusplus
}
#endif
#endif
