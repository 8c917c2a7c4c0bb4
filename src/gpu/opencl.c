/* opencl.c: an OpenCL session (context and an in-order queue with
 * profiling on), buffers, kernels built from their OpenCL C at load, and
 * the device clock from the profiling info of markers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_impl.h"

ob_status ob_opencl_open(ob_gpu *g, const ob_target *t) {
  const ob_gpu_facts *gf = &ob_target_get_facts(t)->gpu;
  const char *why = NULL;
  const ob_opencl_api *cl = ob_opencl_api_get(&why);
  if (!cl) return ob_fail(g->ctx, OB_ERR_UNSUPPORTED, "target '%s': %s", g->target, why);
  g->cl = cl;
  cl_uint np = 0, nd = 0;
  cl_int e = cl->clGetPlatformIDs(0, NULL, &np);
  if (e || (cl_uint)gf->platform >= np)
    return ob_fail(g->ctx, OB_ERR_UNSUPPORTED, "target '%s': no OpenCL platform %d (%s)", g->target,
                   gf->platform, ob_cl_errstr(e ? e : CL_INVALID_PLATFORM));
  cl_platform_id pl[16];
  cl->clGetPlatformIDs(np < 16 ? np : 16, pl, NULL);
  cl_platform_id p = pl[gf->platform < 16 ? gf->platform : 0];
  cl_device_id ds[64];
  e = cl->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 64, ds, &nd);
  if (e || (cl_uint)gf->device >= nd || gf->device >= 64)
    return ob_fail(g->ctx, OB_ERR_UNSUPPORTED, "target '%s': no device %d on OpenCL platform %d", g->target,
                   gf->device, gf->platform);
  g->cldev = ds[gf->device];
  g->clctx = cl->clCreateContext(NULL, 1, &g->cldev, NULL, NULL, &e);
  if (!g->clctx) return ob_fail(g->ctx, OB_ERR_RUNTIME, "target '%s': clCreateContext: %s", g->target, ob_cl_errstr(e));
  g->queue = cl->clCreateCommandQueue(g->clctx, g->cldev, CL_QUEUE_PROFILING_ENABLE, &e);
  if (!g->queue)
    return ob_fail(g->ctx, OB_ERR_RUNTIME, "target '%s': clCreateCommandQueue: %s", g->target, ob_cl_errstr(e));
  return OB_OK;
}

void ob_opencl_close(ob_gpu *g) {
  if (!g->cl) return;
  if (g->queue) {
    g->cl->clFinish(g->queue);
    g->cl->clReleaseCommandQueue(g->queue);
  }
  if (g->clctx) g->cl->clReleaseContext(g->clctx);
}

ob_status ob_opencl_alloc(ob_gpu *g, size_t bytes, void **out) {
  cl_int e = 0;
  cl_mem m = g->cl->clCreateBuffer(g->clctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
  if (!m)
    return ob_fail(g->ctx, OB_ERR_NOMEM, "target '%s': clCreateBuffer of %zu bytes: %s", g->target, bytes,
                   ob_cl_errstr(e));
  *out = m;
  return OB_OK;
}

void ob_opencl_free(ob_gpu *g, void *mem) { g->cl->clReleaseMemObject((cl_mem)mem); }

ob_status ob_opencl_copy(ob_gpu *g, void *dst, const void *src, size_t bytes, bool to_device) {
  cl_int e = to_device ? g->cl->clEnqueueWriteBuffer(g->queue, (cl_mem)dst, CL_TRUE, 0, bytes, src, 0, NULL, NULL)
                       : g->cl->clEnqueueReadBuffer(g->queue, (cl_mem)src, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
  if (e)
    return ob_gpu_set_error(g, OB_ERR_RUNTIME, "target '%s': copying %zu bytes %s the device: %s", g->target,
                            bytes, to_device ? "to" : "from", ob_cl_errstr(e));
  return OB_OK;
}

ob_status ob_opencl_load(ob_gpu *g, const char *path, ob_gpu_kernel *k) {
  const ob_opencl_api *cl = g->cl;
  char *src = NULL;
  ob_status st = ob_read_text(g->ctx, path, "OpenCL kernel", NULL, &src, NULL);
  if (st) return st;
  cl_int e = 0;
  const char *srcs[1] = {src};
  k->prog = cl->clCreateProgramWithSource(g->clctx, 1, srcs, NULL, &e);
  free(src);
  if (!k->prog) return ob_fail(g->ctx, OB_ERR_RUNTIME, "clCreateProgramWithSource: %s", ob_cl_errstr(e));
  e = cl->clBuildProgram(k->prog, 1, &g->cldev, "-cl-std=CL1.2 -cl-fast-relaxed-math", NULL, NULL);
  if (e) {
    char log[2048] = "";
    cl->clGetProgramBuildInfo(k->prog, g->cldev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    log[sizeof log - 1] = '\0';
    return ob_fail(g->ctx, OB_ERR_COMPILE, "the OpenCL driver cannot build kernel %s (%s): %s", k->name,
                   ob_cl_errstr(e), log[0] ? log : "no log");
  }
  k->kern = cl->clCreateKernel(k->prog, k->name, &e);
  if (!k->kern) return ob_fail(g->ctx, OB_ERR_RUNTIME, "clCreateKernel(%s): %s", k->name, ob_cl_errstr(e));
  size_t wg = 0;
  int64_t threads = k->launch.block[0] * k->launch.block[1] * k->launch.block[2];
  if (cl->clGetKernelWorkGroupInfo(k->kern, g->cldev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) == 0 &&
      (int64_t)wg < threads)
    return ob_fail(g->ctx, OB_ERR_LAUNCH,
                   "launch over the device's limits: kernel %s can run %zu work-items per work-group, "
                   "the launch asks for %lld",
                   k->name, wg, (long long)threads);
  return OB_OK;
}

void ob_opencl_unload(ob_gpu_kernel *k) {
  const ob_opencl_api *cl = k->g->cl;
  if (k->kern) cl->clReleaseKernel(k->kern);
  if (k->prog) cl->clReleaseProgram(k->prog);
}

int ob_opencl_launch(ob_gpu_kernel *k, void *const *args, int nargs) {
  ob_gpu *g = k->g;
  const ob_opencl_api *cl = g->cl;
  for (int i = 0; i < nargs; i++) {
    cl_mem m = (cl_mem)args[i];
    cl_int e = cl->clSetKernelArg(k->kern, (cl_uint)i, sizeof m, &m);
    if (e) {
      ob_gpu_set_error(g, OB_ERR_RUNTIME, "clSetKernelArg(%s, %d): %s", k->name, i, ob_cl_errstr(e));
      return 1;
    }
  }
  size_t local[3], global[3];
  for (int d = 0; d < 3; d++) {
    local[d] = (size_t)k->launch.block[d];
    global[d] = (size_t)(k->launch.grid[d] * k->launch.block[d]);
  }
  cl_int e = cl->clEnqueueNDRangeKernel(g->queue, k->kern, 3, NULL, global, local, 0, NULL, NULL);
  if (e) {
    ob_gpu_set_error(g, OB_ERR_RUNTIME, "launch of %s (grid %zux%zux%zu, block %zux%zux%zu) failed: %s", k->name,
                     global[0] / local[0], global[1] / local[1], global[2] / local[2], local[0], local[1],
                     local[2], ob_cl_errstr(e));
    return 1;
  }
  return 0;
}

ob_status ob_opencl_sync(ob_gpu *g) {
  cl_int e = g->cl->clFinish(g->queue);
  if (e) return ob_gpu_set_error(g, OB_ERR_RUNTIME, "kernel failed: clFinish: %s", ob_cl_errstr(e));
  return OB_OK;
}

double ob_opencl_clock(ob_gpu *g) {
  const ob_opencl_api *cl = g->cl;
  cl_event ev = NULL;
  cl_int e = cl->clEnqueueMarkerWithWaitList(g->queue, 0, NULL, &ev);
  if (!e) e = cl->clWaitForEvents(1, &ev);
  cl_ulong end = 0;
  if (!e) e = cl->clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
  if (ev) cl->clReleaseEvent(ev);
  if (e) {
    ob_gpu_set_error(g, OB_ERR_RUNTIME, "reading the device clock (a marker's profiling info): %s", ob_cl_errstr(e));
    return g->clock_s;
  }
  g->clock_s = (double)end * 1e-9;
  return g->clock_s;
}
