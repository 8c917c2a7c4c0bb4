/* cuda.c: a CUDA session on the device's primary context (the default
 * stream), buffers, kernels loaded from PTX (the driver compiles it for the
 * device: its log is kept), launches, and the device clock from events. A
 * kernel that fails leaves the context unusable (CUDA's sticky errors): the
 * session records the first error and refuses everything after it; the
 * GPU runner then starts a fresh worker process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_impl.h"

#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 0
#define CU_FUNC_ATTRIBUTE_NUM_REGS 4
#define CU_EVENT_DEFAULT 0

ob_status ob_cuda_open(ob_gpu *g, const ob_target *t) {
  const ob_gpu_facts *gf = &ob_target_get_facts(t)->gpu;
  const char *why = NULL;
  const ob_cuda_api *cu = ob_cuda_api_get(&why);
  if (!cu) return ob_fail(g->ctx, OB_ERR_UNSUPPORTED, "target '%s': %s", g->target, why);
  g->cu = cu;
  ob_cu_result r = cu->cuDeviceGet(&g->dev, gf->device);
  if (!r) r = cu->cuDevicePrimaryCtxRetain(&g->cuctx, g->dev);
  if (!r) r = cu->cuCtxSetCurrent(g->cuctx);
  if (!r) r = cu->cuEventCreate(&g->last, CU_EVENT_DEFAULT);
  if (!r) r = cu->cuEventRecord(g->last, NULL);
  if (r) {
    if (g->cuctx) {
      cu->cuDevicePrimaryCtxRelease(g->dev);
      g->cuctx = NULL;
    }
    return ob_fail(g->ctx, OB_ERR_RUNTIME, "target '%s': cannot open device %d: %s", g->target, gf->device,
                   ob_cu_errstr(cu, r));
  }
  return OB_OK;
}

void ob_cuda_close(ob_gpu *g) {
  if (!g->cu || !g->cuctx) return;
  if (g->last) g->cu->cuEventDestroy(g->last);
  g->cu->cuDevicePrimaryCtxRelease(g->dev);
}

ob_status ob_cuda_alloc(ob_gpu *g, size_t bytes, void **out) {
  ob_cu_deviceptr p = 0;
  ob_cu_result r = g->cu->cuMemAlloc(&p, bytes);
  if (r)
    return ob_fail(g->ctx, OB_ERR_NOMEM, "target '%s': cuMemAlloc of %zu bytes: %s", g->target, bytes,
                   ob_cu_errstr(g->cu, r));
  *out = (void *)(uintptr_t)p;
  return OB_OK;
}

void ob_cuda_free(ob_gpu *g, void *mem) { g->cu->cuMemFree((ob_cu_deviceptr)(uintptr_t)mem); }

ob_status ob_cuda_copy(ob_gpu *g, void *dst, const void *src, size_t bytes, bool to_device) {
  ob_cu_result r = to_device ? g->cu->cuMemcpyHtoD((ob_cu_deviceptr)(uintptr_t)dst, src, bytes)
                             : g->cu->cuMemcpyDtoH(dst, (ob_cu_deviceptr)(uintptr_t)src, bytes);
  if (r)
    return ob_gpu_set_error(g, OB_ERR_RUNTIME, "target '%s': copying %zu bytes %s the device: %s", g->target,
                            bytes, to_device ? "to" : "from", ob_cu_errstr(g->cu, r));
  return OB_OK;
}

ob_status ob_cuda_load(ob_gpu *g, const char *path, ob_gpu_kernel *k) {
  const ob_cuda_api *cu = g->cu;
  char *ptx = NULL;
  ob_status st = ob_read_text(g->ctx, path, "PTX", NULL, &ptx, NULL);
  if (st) return st;
  char log[2048] = "";
  int opts[2] = {OB_CU_JIT_ERROR_LOG_BUFFER, OB_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  ob_cu_result r = cu->cuModuleLoadDataEx(&k->mod, ptx, 2, opts, vals);
  free(ptx);
  if (r) {
    log[sizeof log - 1] = '\0';
    k->mod = NULL;
    return ob_fail(g->ctx, OB_ERR_COMPILE, "the CUDA driver cannot load the PTX of %s (%s)%s%s", k->name,
                   ob_cu_errstr(cu, r), log[0] ? ": " : "", log);
  }
  r = cu->cuModuleGetFunction(&k->fn, k->mod, k->name);
  if (r) return ob_fail(g->ctx, OB_ERR_RUNTIME, "cuModuleGetFunction(%s): %s", k->name, ob_cu_errstr(cu, r));
  int maxt = 0, regs = 0;
  int64_t threads = k->launch.block[0] * k->launch.block[1] * k->launch.block[2];
  if (cu->cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn) == 0 && maxt > 0 &&
      threads > maxt) {
    cu->cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn);
    return ob_fail(g->ctx, OB_ERR_LAUNCH,
                   "launch over the device's limits: kernel %s uses %d registers a thread, which "
                   "leaves %d threads per block; the launch asks for %lld",
                   k->name, regs, maxt, (long long)threads);
  }
  return OB_OK;
}

void ob_cuda_unload(ob_gpu_kernel *k) {
  if (k->mod && !k->g->err) k->g->cu->cuModuleUnload(k->mod);
}

int ob_cuda_launch(ob_gpu_kernel *k, void *const *args, int nargs) {
  ob_gpu *g = k->g;
  ob_cu_deviceptr ptrs[32];
  void *params[32];
  if (nargs > 32) {
    ob_gpu_set_error(g, OB_ERR_RUNTIME, "kernel %s: more than 32 arguments", k->name);
    return 1;
  }
  for (int i = 0; i < nargs; i++) {
    ptrs[i] = (ob_cu_deviceptr)(uintptr_t)args[i];
    params[i] = &ptrs[i];
  }
  const ob_launch *l = &k->launch;
  ob_cu_result r = g->cu->cuLaunchKernel(k->fn, (unsigned)l->grid[0], (unsigned)l->grid[1], (unsigned)l->grid[2],
                                         (unsigned)l->block[0], (unsigned)l->block[1], (unsigned)l->block[2], 0,
                                         NULL, params, NULL);
  if (r) {
    ob_gpu_set_error(g, OB_ERR_RUNTIME, "launch of %s (grid %lldx%lldx%lld, block %lldx%lldx%lld) failed: %s",
                     k->name, (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2],
                     (long long)l->block[0], (long long)l->block[1], (long long)l->block[2],
                     ob_cu_errstr(g->cu, r));
    return 1;
  }
  return 0;
}

ob_status ob_cuda_sync(ob_gpu *g) {
  ob_cu_result r = g->cu->cuCtxSynchronize();
  if (r) return ob_gpu_set_error(g, OB_ERR_RUNTIME, "kernel failed: %s", ob_cu_errstr(g->cu, r));
  return OB_OK;
}

double ob_cuda_clock(ob_gpu *g) {
  const ob_cuda_api *cu = g->cu;
  ob_cu_event ev = NULL;
  float ms = 0;
  ob_cu_result r = cu->cuEventCreate(&ev, CU_EVENT_DEFAULT);
  if (!r) r = cu->cuEventRecord(ev, NULL);
  if (!r) r = cu->cuEventSynchronize(ev);
  if (!r) r = cu->cuEventElapsedTime(&ms, g->last, ev);
  if (r) {
    if (ev) cu->cuEventDestroy(ev);
    ob_gpu_set_error(g, OB_ERR_RUNTIME, "kernel failed (read at the device clock): %s", ob_cu_errstr(cu, r));
    return g->clock_s;
  }
  /* the sum of short intervals keeps a float's precision: an elapsed time
   * of hours in float milliseconds would not */
  g->clock_s += (double)ms * 1e-3;
  cu->cuEventDestroy(g->last);
  g->last = ev;
  return g->clock_s;
}
