/* gpu_api.c: loading the CUDA driver, NVRTC and the OpenCL ICD loader with
 * dlopen, once per process (see gpu_api.h). A library that is missing, or
 * lacks an entry point, leaves its table NULL and a reason; nothing else
 * in opbench depends on these libraries being installed. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/gpu_api.h"

/* Loads sym (or its first name among a NULL-terminated list of
 * alternatives, newest ABI first) into *slot; false if none exists. */
static bool load_sym(void *dl, void *slot, const char *const *names) {
  for (; *names; names++) {
    void *p = dlsym(dl, *names);
    if (p) {
      memcpy(slot, &p, sizeof p); /* POSIX: object and function pointers convert */
      return true;
    }
  }
  return false;
}

#define SYM(dl, t, field, ...)                                                             \
  (load_sym((dl), &(t)->field, (const char *const[]){__VA_ARGS__, NULL}) ||                \
   (snprintf(missing, sizeof missing, "%s", #field), false))

/* ---- CUDA driver --------------------------------------------------------------- */
static pthread_once_t g_cuda_once = PTHREAD_ONCE_INIT;
static ob_cuda_api g_cuda;
static bool g_cuda_ok;
static char g_cuda_why[384];

static void cuda_init(void) {
  ob_cuda_api *t = &g_cuda;
  char missing[64] = "";
  t->dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!t->dl) {
    const char *e = dlerror();
    snprintf(g_cuda_why, sizeof g_cuda_why,
             "the CUDA driver (libcuda.so.1) is not installed: no NVIDIA GPU driver on this "
             "machine (%.200s)",
             e ? e : "dlopen failed");
    return;
  }
  bool ok = SYM(t->dl, t, cuInit, "cuInit") && SYM(t->dl, t, cuDriverGetVersion, "cuDriverGetVersion") &&
            SYM(t->dl, t, cuDeviceGetCount, "cuDeviceGetCount") && SYM(t->dl, t, cuDeviceGet, "cuDeviceGet") &&
            SYM(t->dl, t, cuDeviceGetName, "cuDeviceGetName") &&
            SYM(t->dl, t, cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
            SYM(t->dl, t, cuDeviceTotalMem, "cuDeviceTotalMem_v2", "cuDeviceTotalMem") &&
            SYM(t->dl, t, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            SYM(t->dl, t, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease") &&
            SYM(t->dl, t, cuCtxSetCurrent, "cuCtxSetCurrent") &&
            SYM(t->dl, t, cuCtxSynchronize, "cuCtxSynchronize") &&
            SYM(t->dl, t, cuModuleLoadDataEx, "cuModuleLoadDataEx") &&
            SYM(t->dl, t, cuModuleUnload, "cuModuleUnload") &&
            SYM(t->dl, t, cuModuleGetFunction, "cuModuleGetFunction") &&
            SYM(t->dl, t, cuFuncGetAttribute, "cuFuncGetAttribute") &&
            SYM(t->dl, t, cuMemAlloc, "cuMemAlloc_v2") && SYM(t->dl, t, cuMemFree, "cuMemFree_v2") &&
            SYM(t->dl, t, cuMemcpyHtoD, "cuMemcpyHtoD_v2") && SYM(t->dl, t, cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
            SYM(t->dl, t, cuMemsetD8, "cuMemsetD8_v2") && SYM(t->dl, t, cuLaunchKernel, "cuLaunchKernel") &&
            SYM(t->dl, t, cuEventCreate, "cuEventCreate") &&
            SYM(t->dl, t, cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy") &&
            SYM(t->dl, t, cuEventRecord, "cuEventRecord") &&
            SYM(t->dl, t, cuEventSynchronize, "cuEventSynchronize") &&
            SYM(t->dl, t, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime") &&
            SYM(t->dl, t, cuGetErrorString, "cuGetErrorString");
  if (!ok) {
    snprintf(g_cuda_why, sizeof g_cuda_why, "the CUDA driver (libcuda.so.1) lacks %s: too old", missing);
    return;
  }
  ob_cu_result r = t->cuInit(0);
  if (r) {
    snprintf(g_cuda_why, sizeof g_cuda_why, "the CUDA driver cannot start (cuInit: %s): no usable GPU",
             ob_cu_errstr(t, r));
    return;
  }
  g_cuda_ok = true;
}

const ob_cuda_api *ob_cuda_api_get(const char **why) {
  pthread_once(&g_cuda_once, cuda_init);
  if (why) *why = g_cuda_ok ? NULL : g_cuda_why;
  return g_cuda_ok ? &g_cuda : NULL;
}

const char *ob_cu_errstr(const ob_cuda_api *api, ob_cu_result r) {
  const char *s = NULL;
  if (api && api->cuGetErrorString && api->cuGetErrorString(r, &s) == 0 && s) return s;
  switch (r) {
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 101: return "CUDA_ERROR_INVALID_DEVICE";
  case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  default: return "CUDA error";
  }
}

/* ---- NVRTC -------------------------------------------------------------------------- */
static pthread_once_t g_nvrtc_once = PTHREAD_ONCE_INIT;
static ob_nvrtc_api g_nvrtc;
static bool g_nvrtc_ok;
static char g_nvrtc_why[512];

static void nvrtc_init(void) {
  ob_nvrtc_api *t = &g_nvrtc;
  char missing[64] = "";
  const char *home = getenv("OPBENCH_CUDA_HOME");
  if (!home || !*home) home = getenv("CUDA_HOME");
  if (!home || !*home) home = "/usr/local/cuda";
  /* the toolkit's own copy first (its builtins library lies beside it),
   * then whatever the loader finds */
  char cand[4][512];
  snprintf(cand[0], sizeof cand[0], "%.400s/lib64/libnvrtc.so", home);
  snprintf(cand[1], sizeof cand[1], "%.400s/lib/libnvrtc.so", home);
  snprintf(cand[2], sizeof cand[2], "libnvrtc.so");
  snprintf(cand[3], sizeof cand[3], "libnvrtc.so.13");
  const char *err = NULL;
  for (int i = 0; i < 4 && !t->dl; i++) {
    t->dl = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (t->dl) memcpy(t->path, cand[i], sizeof t->path);
    else if (!err) err = dlerror();
  }
  if (!t->dl) {
    snprintf(g_nvrtc_why, sizeof g_nvrtc_why,
             "NVRTC (libnvrtc) is not installed: no CUDA toolkit in %.200s (set $OPBENCH_CUDA_HOME) "
             "or on the loader's path (%.200s)",
             home, err ? err : "dlopen failed");
    return;
  }
  bool ok = SYM(t->dl, t, nvrtcVersion, "nvrtcVersion") &&
            SYM(t->dl, t, nvrtcCreateProgram, "nvrtcCreateProgram") &&
            SYM(t->dl, t, nvrtcCompileProgram, "nvrtcCompileProgram") &&
            SYM(t->dl, t, nvrtcGetPTXSize, "nvrtcGetPTXSize") && SYM(t->dl, t, nvrtcGetPTX, "nvrtcGetPTX") &&
            SYM(t->dl, t, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize") &&
            SYM(t->dl, t, nvrtcGetProgramLog, "nvrtcGetProgramLog") &&
            SYM(t->dl, t, nvrtcDestroyProgram, "nvrtcDestroyProgram") &&
            SYM(t->dl, t, nvrtcGetErrorString, "nvrtcGetErrorString");
  if (!ok) {
    snprintf(g_nvrtc_why, sizeof g_nvrtc_why, "NVRTC (%.400s) lacks %s: too old", t->path, missing);
    return;
  }
  /* optional (CUDA >= 11.2): the architectures it compiles for */
  load_sym(t->dl, &t->nvrtcGetNumSupportedArchs, (const char *const[]){"nvrtcGetNumSupportedArchs", NULL});
  load_sym(t->dl, &t->nvrtcGetSupportedArchs, (const char *const[]){"nvrtcGetSupportedArchs", NULL});
  g_nvrtc_ok = true;
}

const ob_nvrtc_api *ob_nvrtc_api_get(const char **why) {
  pthread_once(&g_nvrtc_once, nvrtc_init);
  if (why) *why = g_nvrtc_ok ? NULL : g_nvrtc_why;
  return g_nvrtc_ok ? &g_nvrtc : NULL;
}

/* ---- OpenCL ------------------------------------------------------------------------ */
static pthread_once_t g_ocl_once = PTHREAD_ONCE_INIT;
static ob_opencl_api g_ocl;
static bool g_ocl_ok;
static char g_ocl_why[384];

static void ocl_init(void) {
  ob_opencl_api *t = &g_ocl;
  char missing[64] = "";
  t->dl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!t->dl) t->dl = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
  if (!t->dl) {
    const char *e = dlerror();
    snprintf(g_ocl_why, sizeof g_ocl_why,
             "the OpenCL ICD loader (libOpenCL.so.1) is not installed (Debian package "
             "ocl-icd-libopencl1; %.200s)",
             e ? e : "dlopen failed");
    return;
  }
  bool ok = SYM(t->dl, t, clGetPlatformIDs, "clGetPlatformIDs") &&
            SYM(t->dl, t, clGetPlatformInfo, "clGetPlatformInfo") &&
            SYM(t->dl, t, clGetDeviceIDs, "clGetDeviceIDs") && SYM(t->dl, t, clGetDeviceInfo, "clGetDeviceInfo") &&
            SYM(t->dl, t, clCreateContext, "clCreateContext") && SYM(t->dl, t, clReleaseContext, "clReleaseContext") &&
            SYM(t->dl, t, clCreateCommandQueue, "clCreateCommandQueue") &&
            SYM(t->dl, t, clReleaseCommandQueue, "clReleaseCommandQueue") &&
            SYM(t->dl, t, clCreateProgramWithSource, "clCreateProgramWithSource") &&
            SYM(t->dl, t, clBuildProgram, "clBuildProgram") &&
            SYM(t->dl, t, clGetProgramBuildInfo, "clGetProgramBuildInfo") &&
            SYM(t->dl, t, clReleaseProgram, "clReleaseProgram") && SYM(t->dl, t, clCreateKernel, "clCreateKernel") &&
            SYM(t->dl, t, clReleaseKernel, "clReleaseKernel") && SYM(t->dl, t, clSetKernelArg, "clSetKernelArg") &&
            SYM(t->dl, t, clGetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo") &&
            SYM(t->dl, t, clCreateBuffer, "clCreateBuffer") &&
            SYM(t->dl, t, clReleaseMemObject, "clReleaseMemObject") &&
            SYM(t->dl, t, clEnqueueWriteBuffer, "clEnqueueWriteBuffer") &&
            SYM(t->dl, t, clEnqueueReadBuffer, "clEnqueueReadBuffer") &&
            SYM(t->dl, t, clEnqueueNDRangeKernel, "clEnqueueNDRangeKernel") &&
            SYM(t->dl, t, clEnqueueMarkerWithWaitList, "clEnqueueMarkerWithWaitList") &&
            SYM(t->dl, t, clFinish, "clFinish") && SYM(t->dl, t, clWaitForEvents, "clWaitForEvents") &&
            SYM(t->dl, t, clGetEventProfilingInfo, "clGetEventProfilingInfo") &&
            SYM(t->dl, t, clReleaseEvent, "clReleaseEvent");
  if (!ok) {
    snprintf(g_ocl_why, sizeof g_ocl_why, "the OpenCL loader lacks %s (OpenCL 1.2 is needed)", missing);
    return;
  }
  g_ocl_ok = true;
}

const ob_opencl_api *ob_opencl_api_get(const char **why) {
  pthread_once(&g_ocl_once, ocl_init);
  if (why) *why = g_ocl_ok ? NULL : g_ocl_why;
  return g_ocl_ok ? &g_ocl : NULL;
}

const char *ob_cl_errstr(cl_int e) {
  static const struct { cl_int code; const char *name; } k[] = {
      {0, "CL_SUCCESS"},
      {-1, "CL_DEVICE_NOT_FOUND"},
      {-2, "CL_DEVICE_NOT_AVAILABLE"},
      {-3, "CL_COMPILER_NOT_AVAILABLE"},
      {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {-5, "CL_OUT_OF_RESOURCES"},
      {-6, "CL_OUT_OF_HOST_MEMORY"},
      {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
      {-11, "CL_BUILD_PROGRAM_FAILURE"},
      {-30, "CL_INVALID_VALUE"},
      {-32, "CL_INVALID_PLATFORM"},
      {-33, "CL_INVALID_DEVICE"},
      {-34, "CL_INVALID_CONTEXT"},
      {-36, "CL_INVALID_COMMAND_QUEUE"},
      {-38, "CL_INVALID_MEM_OBJECT"},
      {-44, "CL_INVALID_PROGRAM"},
      {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {-46, "CL_INVALID_KERNEL_NAME"},
      {-48, "CL_INVALID_KERNEL"},
      {-51, "CL_INVALID_ARG_SIZE"},
      {-52, "CL_INVALID_KERNEL_ARGS"},
      {-53, "CL_INVALID_WORK_DIMENSION"},
      {-54, "CL_INVALID_WORK_GROUP_SIZE"},
      {-55, "CL_INVALID_WORK_ITEM_SIZE"},
      {-56, "CL_INVALID_GLOBAL_OFFSET"},
      {-58, "CL_INVALID_EVENT"},
      {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (k[i].code == e) return k[i].name;
  return "CL error";
}
