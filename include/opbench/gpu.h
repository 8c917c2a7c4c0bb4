/* gpu: GPU kernels after codegen: compiling CUDA C through NVRTC (in this
 * process, no GPU needed) into PTX, and running CUDA (driver API) or
 * OpenCL (ICD loader) kernels on a device: a session (context and stream
 * or queue), device buffers, loading a compiled kernel, launching it, and
 * a clock on the device's own timeline (CUDA events, OpenCL profiling
 * info) for the timing protocol. The driver libraries are loaded with
 * dlopen (src/target/gpu_api.c): nothing links against them.
 *
 * A session is for one process: CUDA and PoCL do not survive a fork, so
 * measurements open sessions in their worker process (measure's GPU
 * runner) and never in a process that forks workers afterwards. */
#ifndef OPBENCH_GPU_H
#define OPBENCH_GPU_H

#include "opbench/core.h"
#include "opbench/ir.h"
#include "opbench/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- compiling ---------------------------------------------------------------
 * CUDA: NVRTC compiles src for compute_XY (the target's -arch) into PTX,
 * which the driver compiles for the device when the kernel is loaded. The
 * result is cached by content (source, architecture, NVRTC version) in the
 * kernel cache folder (cache_dir, else $OPBENCH_CACHE, else
 * $XDG_CACHE_HOME/opbench, else ~/.cache/opbench): <dir>/gpu/<name>__<hash>.ptx.
 * OpenCL: the source is what the device's driver builds when the kernel is
 * loaded (ob_gpu_load); it is stored as <dir>/gpu/<name>__<hash>.cl. */
typedef struct ob_gpu_build {
  int error_no;   /* 0, or 2 (AutoTVM's COMPILE_HOST: NVRTC rejected the source) */
  char *path;     /* malloc'd: the compiled kernel's file; NULL on error */
  char *message;  /* malloc'd: NVRTC's log (the errors), or NULL */
  double build_s; /* seconds compiling (0 when cached) */
  bool cached;
} ob_gpu_build;

/* Per-kernel failures are in out->error_no; the call fails only when
 * nothing could be tried: NVRTC missing (OB_ERR_COMPILE naming what is
 * missing), the cache folder unwritable (OB_ERR_IO). */
OB_API ob_status ob_gpu_compile(ob_ctx *ctx, const ob_target *t, const char *cache_dir,
                                const char *src, const char *name, ob_gpu_build *out);
OB_API void ob_gpu_build_clear(ob_gpu_build *b); /* accepts NULL */
/* The NVRTC library and its version ("libnvrtc ... 13.0"), or why it is
 * missing; for --version-like reports. */
OB_API const char *ob_gpu_nvrtc_version(char *buf, size_t cap);

/* ---- running -------------------------------------------------------------------- */
typedef struct ob_gpu ob_gpu;
typedef struct ob_gpu_kernel ob_gpu_kernel;

/* Opens device t's session in this process (OB_ERR_UNSUPPORTED naming the
 * target and what is missing when there is no device; OB_ERR_RUNTIME when
 * the driver refuses). The caller owns *out (ob_gpu_close). */
OB_API ob_status ob_gpu_open(ob_ctx *ctx, const ob_target *t, ob_gpu **out);
OB_API void ob_gpu_close(ob_gpu *g); /* accepts NULL; frees what it holds */

/* Device memory: *out is a handle (a CUdeviceptr or a cl_mem). */
OB_API ob_status ob_gpu_alloc(ob_gpu *g, size_t bytes, void **out);
OB_API void ob_gpu_free(ob_gpu *g, void *mem);
OB_API ob_status ob_gpu_upload(ob_gpu *g, void *mem, const void *src, size_t bytes);
OB_API ob_status ob_gpu_download(ob_gpu *g, void *dst, const void *mem, size_t bytes);

/* Loads kernel `name` from a compiled file (PTX, or OpenCL C, which is
 * built here: a build failure is OB_ERR_COMPILE with the driver's log,
 * AutoTVM's class 2), to be launched with `launch`. A launch the loaded
 * kernel cannot take (its registers leave fewer threads per block than
 * asked) is OB_ERR_LAUNCH naming both. */
OB_API ob_status ob_gpu_load(ob_gpu *g, const char *path, const char *name, const ob_launch *launch,
                             ob_gpu_kernel **out);
OB_API void ob_gpu_kernel_free(ob_gpu_kernel *k); /* accepts NULL */
/* Enqueues one launch with args[i] the device handle of argument i
 * (nargs of them). Asynchronous: returns 0, or non-zero when the launch
 * was refused at once (the session keeps the driver's message; see
 * ob_gpu_error). */
OB_API int ob_gpu_launch(ob_gpu_kernel *k, void *const *args, int nargs);
/* Waits for everything enqueued. OB_ERR_RUNTIME with the driver's message
 * when a kernel failed (an illegal address, a launch failure): the session
 * is then unusable, as a CUDA context after such an error. */
OB_API ob_status ob_gpu_sync(ob_gpu *g);
/* Seconds on the device's timeline: waits for what was enqueued and reads
 * an event recorded after it (CUDA: elapsed time between events, summed;
 * OpenCL: the end of a marker command from the profiling info). The
 * difference of two readings is the device time of what was enqueued
 * between them. After an error it stops advancing and ob_gpu_error says
 * why. Usable as ob_time_loop's clock (user = the session). */
OB_API double ob_gpu_clock(void *g);
/* OB_OK, or the first error a launch, sync or clock reading met, with its
 * message in the session's context. */
OB_API ob_status ob_gpu_error(const ob_gpu *g);
OB_API const char *ob_gpu_errmsg(const ob_gpu *g);

#ifdef __cplusplus
}
#endif
#endif
