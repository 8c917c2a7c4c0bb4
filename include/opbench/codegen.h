/* codegen: turns a lowered loop nest into one C translation unit. Vectorized
 * loops become GCC vector-extension code; parallel loops are outlined into
 * task functions and called through the runtime's thread pool (no OpenMP).
 * Every generated file starts with the kernel ABI (kernel.h: ob_krt,
 * ob_kernel_fn) written out as text, so a kernel compiles on its own; the
 * one definition for callers is kernel.h's (test_kernel checks they agree).
 * GPU targets get CUDA C or OpenCL C instead (codegen_gpu.c). */
#ifndef OPBENCH_CODEGEN_H
#define OPBENCH_CODEGEN_H

#include "opbench/core.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ob_lowered;
struct ob_target; /* target.h */
/* Emits C for `f` as function `name` for `target` (NULL: the default
 * target, ob_target_host): vectorized loops wider than one of its vector
 * registers are cut into register-wide pieces, and register tiles hold at
 * most its register count of vectors. *out is malloc'd (caller frees). */
OB_API ob_status ob_codegen_c(ob_ctx *ctx, const struct ob_target *target,
                              const struct ob_lowered *f, const char *name, char **out);

/* Emits CUDA C (cuda targets: an extern "C" __global__ function, for NVRTC)
 * or OpenCL C (opencl targets: a __kernel) for `f` as kernel `name`. Its
 * arguments are f's, in order, as device pointers; it is launched with
 * f->launch (grid and block). OB_ERR_SCHEDULE for what a GPU kernel cannot
 * do (a root temporary), OB_ERR_UNSUPPORTED for non-float32 arguments.
 * *out is malloc'd. */
OB_API ob_status ob_codegen_gpu(ob_ctx *ctx, const struct ob_target *target,
                                const struct ob_lowered *f, const char *name, char **out);
/* The emitter of the target's kind: ob_codegen_c or ob_codegen_gpu. */
OB_API ob_status ob_codegen(ob_ctx *ctx, const struct ob_target *target, const struct ob_lowered *f,
                            const char *name, char **out);

#ifdef __cplusplus
}
#endif
#endif
