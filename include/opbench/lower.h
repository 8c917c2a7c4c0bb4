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
 * freed after. */
OB_API ob_status ob_lower(ob_sched *s, ob_lowered **out);
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
