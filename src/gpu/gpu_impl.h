/* gpu_impl.h: the layout of a device session and of a loaded kernel, and
 * the per-API halves (cuda.c, opencl.c) that gpu.c dispatches to. */
#ifndef OB_GPU_IMPL_H
#define OB_GPU_IMPL_H

#include "opbench/gpu.h"
#include "target/gpu_api.h"

struct ob_gpu {
  ob_ctx *ctx;
  ob_target_kind kind;
  char target[192];
  ob_status err;     /* first failure (sticky, as a CUDA context's) */
  char errmsg[512];
  double clock_s;    /* ob_gpu_clock's running total (CUDA) */
  /* CUDA */
  const ob_cuda_api *cu;
  ob_cu_device dev;
  ob_cu_context cuctx;
  ob_cu_event last;  /* the event the last clock reading recorded */
  /* OpenCL */
  const ob_opencl_api *cl;
  cl_device_id cldev;
  cl_context clctx;
  cl_command_queue queue;
};

struct ob_gpu_kernel {
  ob_gpu *g;
  ob_launch launch;
  char name[128];
  ob_cu_module mod;
  ob_cu_function fn;
  cl_program prog;
  cl_kernel kern;
};

/* Records the session's first error (OB_ERR_RUNTIME unless st says) and
 * returns it. */
ob_status ob_gpu_set_error(ob_gpu *g, ob_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

ob_status ob_cuda_open(ob_gpu *g, const ob_target *t);
void ob_cuda_close(ob_gpu *g);
ob_status ob_cuda_alloc(ob_gpu *g, size_t bytes, void **out);
void ob_cuda_free(ob_gpu *g, void *mem);
ob_status ob_cuda_copy(ob_gpu *g, void *dst, const void *src, size_t bytes, bool to_device);
ob_status ob_cuda_load(ob_gpu *g, const char *path, ob_gpu_kernel *k);
void ob_cuda_unload(ob_gpu_kernel *k);
int ob_cuda_launch(ob_gpu_kernel *k, void *const *args, int nargs);
ob_status ob_cuda_sync(ob_gpu *g);
double ob_cuda_clock(ob_gpu *g);

ob_status ob_opencl_open(ob_gpu *g, const ob_target *t);
void ob_opencl_close(ob_gpu *g);
ob_status ob_opencl_alloc(ob_gpu *g, size_t bytes, void **out);
void ob_opencl_free(ob_gpu *g, void *mem);
ob_status ob_opencl_copy(ob_gpu *g, void *dst, const void *src, size_t bytes, bool to_device);
ob_status ob_opencl_load(ob_gpu *g, const char *path, ob_gpu_kernel *k);
void ob_opencl_unload(ob_gpu_kernel *k);
int ob_opencl_launch(ob_gpu_kernel *k, void *const *args, int nargs);
ob_status ob_opencl_sync(ob_gpu *g);
double ob_opencl_clock(ob_gpu *g);

#endif
