/* target_impl.h: the layout of an ob_target. A target is one allocation,
 * immutable once ob_target_parse returns it, so handles are shared freely
 * (a task borrows its caller's; nothing but ob_target_free releases one). */
#ifndef OB_TARGET_IMPL_H
#define OB_TARGET_IMPL_H

#include "opbench/target.h"

struct ob_target {
  char str[192];          /* canonical text */
  char cpu[64];           /* llvm -mcpu value ("native" or a CPU name); "" for c */
  ob_target_facts facts;
  /* GPU targets (gpu.c) */
  int device_sm;          /* CUDA: the device's own compute capability; 0 none */
  char gpu_missing[400];  /* why no device was found: the run check's message */
};

/* gpu.c: parses the options of `cuda` / `opencl` (tokens after the kind)
 * into t (zeroed by the caller) and reads the device's facts. */
ob_status ob_target_parse_gpu(ob_ctx *ctx, const char *text, ob_target_kind kind, char *const *opts,
                              int nopts, ob_target *t);
/* The build (run = false) or run check of a GPU target. */
ob_status ob_target_check_gpu(ob_ctx *ctx, const ob_target *t, bool run);

#endif
