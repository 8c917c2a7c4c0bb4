/* gpu_api.h: the GPU driver libraries, loaded with dlopen so that nothing
 * links against them and opbench builds and runs where they are absent:
 *   - the CUDA driver API (libcuda.so.1, present only where an NVIDIA
 *     driver is installed),
 *   - NVRTC (libnvrtc from the CUDA toolkit: $OPBENCH_CUDA_HOME, else
 *     $CUDA_HOME, else /usr/local/cuda; or the loader's path), which compiles
 *     CUDA C to PTX without a GPU,
 *   - the OpenCL ICD loader (libOpenCL.so.1, Debian's ocl-icd), which finds
 *     the installed platforms (PoCL here) through /etc/OpenCL/vendors or
 *     $OCL_ICD_VENDORS.
 * Each table is loaded once per process (pthread_once) and read-only after:
 * the read-only-table exception of the house style. The declarations below
 * are the few entry points opbench calls, written out (the ABI of these C
 * APIs is stable) so the CUDA headers are not needed to build either.
 * Owned by the target module (device facts are read through it); the gpu
 * module launches kernels through the same tables. */
#ifndef OB_TARGET_GPU_API_H
#define OB_TARGET_GPU_API_H

#include <stddef.h>
#include <stdint.h>

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include "opbench/core.h"

/* ---- CUDA driver API ------------------------------------------------------- */
typedef int ob_cu_result; /* CUresult: 0 = CUDA_SUCCESS */
typedef int ob_cu_device;
typedef struct ob_cu_ctx_st *ob_cu_context;
typedef struct ob_cu_mod_st *ob_cu_module;
typedef struct ob_cu_func_st *ob_cu_function;
typedef struct ob_cu_stream_st *ob_cu_stream;
typedef struct ob_cu_event_st *ob_cu_event;
typedef unsigned long long ob_cu_deviceptr;

/* CUdevice_attribute values used here (cuda.h, stable since CUDA 2-6) */
enum {
  OB_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
  OB_CU_ATTR_MAX_BLOCK_DIM_X = 2,
  OB_CU_ATTR_MAX_BLOCK_DIM_Y = 3,
  OB_CU_ATTR_MAX_BLOCK_DIM_Z = 4,
  OB_CU_ATTR_MAX_GRID_DIM_X = 5,
  OB_CU_ATTR_MAX_GRID_DIM_Y = 6,
  OB_CU_ATTR_MAX_GRID_DIM_Z = 7,
  OB_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  OB_CU_ATTR_WARP_SIZE = 10,
  OB_CU_ATTR_MAX_REGISTERS_PER_BLOCK = 12,
  OB_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  OB_CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  OB_CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};
/* CUjit_option values for cuModuleLoadDataEx's log buffers */
enum {
  OB_CU_JIT_INFO_LOG_BUFFER = 3,
  OB_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  OB_CU_JIT_ERROR_LOG_BUFFER = 5,
  OB_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

typedef struct ob_cuda_api {
  void *dl;
  ob_cu_result (*cuInit)(unsigned flags);
  ob_cu_result (*cuDriverGetVersion)(int *v);
  ob_cu_result (*cuDeviceGetCount)(int *n);
  ob_cu_result (*cuDeviceGet)(ob_cu_device *d, int ordinal);
  ob_cu_result (*cuDeviceGetName)(char *name, int len, ob_cu_device d);
  ob_cu_result (*cuDeviceGetAttribute)(int *v, int attr, ob_cu_device d);
  ob_cu_result (*cuDeviceTotalMem)(size_t *bytes, ob_cu_device d);
  ob_cu_result (*cuDevicePrimaryCtxRetain)(ob_cu_context *c, ob_cu_device d);
  ob_cu_result (*cuDevicePrimaryCtxRelease)(ob_cu_device d);
  ob_cu_result (*cuCtxSetCurrent)(ob_cu_context c);
  ob_cu_result (*cuCtxSynchronize)(void);
  ob_cu_result (*cuModuleLoadDataEx)(ob_cu_module *m, const void *image, unsigned n, int *opts,
                                     void **vals);
  ob_cu_result (*cuModuleUnload)(ob_cu_module m);
  ob_cu_result (*cuModuleGetFunction)(ob_cu_function *f, ob_cu_module m, const char *name);
  ob_cu_result (*cuFuncGetAttribute)(int *v, int attr, ob_cu_function f);
  ob_cu_result (*cuMemAlloc)(ob_cu_deviceptr *p, size_t bytes);
  ob_cu_result (*cuMemFree)(ob_cu_deviceptr p);
  ob_cu_result (*cuMemcpyHtoD)(ob_cu_deviceptr dst, const void *src, size_t bytes);
  ob_cu_result (*cuMemcpyDtoH)(void *dst, ob_cu_deviceptr src, size_t bytes);
  ob_cu_result (*cuMemsetD8)(ob_cu_deviceptr dst, unsigned char v, size_t n);
  ob_cu_result (*cuLaunchKernel)(ob_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 ob_cu_stream s, void **params, void **extra);
  ob_cu_result (*cuEventCreate)(ob_cu_event *e, unsigned flags);
  ob_cu_result (*cuEventDestroy)(ob_cu_event e);
  ob_cu_result (*cuEventRecord)(ob_cu_event e, ob_cu_stream s);
  ob_cu_result (*cuEventSynchronize)(ob_cu_event e);
  ob_cu_result (*cuEventElapsedTime)(float *ms, ob_cu_event a, ob_cu_event b);
  ob_cu_result (*cuGetErrorString)(ob_cu_result r, const char **s);
} ob_cuda_api;

/* ---- NVRTC ------------------------------------------------------------------ */
typedef struct ob_nvrtc_prog_st *ob_nvrtc_program;
typedef struct ob_nvrtc_api {
  void *dl;
  char path[512]; /* the library that was loaded */
  int (*nvrtcVersion)(int *major, int *minor);
  int (*nvrtcGetNumSupportedArchs)(int *n);
  int (*nvrtcGetSupportedArchs)(int *archs);
  int (*nvrtcCreateProgram)(ob_nvrtc_program *p, const char *src, const char *name, int nheaders,
                            const char *const *headers, const char *const *names);
  int (*nvrtcCompileProgram)(ob_nvrtc_program p, int nopts, const char *const *opts);
  int (*nvrtcGetPTXSize)(ob_nvrtc_program p, size_t *n);
  int (*nvrtcGetPTX)(ob_nvrtc_program p, char *ptx);
  int (*nvrtcGetProgramLogSize)(ob_nvrtc_program p, size_t *n);
  int (*nvrtcGetProgramLog)(ob_nvrtc_program p, char *log);
  int (*nvrtcDestroyProgram)(ob_nvrtc_program *p);
  const char *(*nvrtcGetErrorString)(int r);
} ob_nvrtc_api;

/* ---- OpenCL (the ICD loader) --------------------------------------------------- */
typedef struct ob_opencl_api {
  void *dl;
  cl_int (*clGetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
  cl_int (*clGetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
  cl_int (*clGetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
  cl_int (*clGetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
  cl_context (*clCreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void(CL_CALLBACK *)(const char *, const void *, size_t, void *),
                                void *, cl_int *);
  cl_int (*clReleaseContext)(cl_context);
  cl_command_queue (*clCreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties,
                                           cl_int *);
  cl_int (*clReleaseCommandQueue)(cl_command_queue);
  cl_program (*clCreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *,
                                          cl_int *);
  cl_int (*clBuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void(CL_CALLBACK *)(cl_program, void *), void *);
  cl_int (*clGetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void *,
                                  size_t *);
  cl_int (*clReleaseProgram)(cl_program);
  cl_kernel (*clCreateKernel)(cl_program, const char *, cl_int *);
  cl_int (*clReleaseKernel)(cl_kernel);
  cl_int (*clSetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
  cl_int (*clGetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t,
                                     void *, size_t *);
  cl_mem (*clCreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
  cl_int (*clReleaseMemObject)(cl_mem);
  cl_int (*clEnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,
                                 cl_uint, const cl_event *, cl_event *);
  cl_int (*clEnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint,
                                const cl_event *, cl_event *);
  cl_int (*clEnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                   const size_t *, const size_t *, cl_uint, const cl_event *,
                                   cl_event *);
  cl_int (*clEnqueueMarkerWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
  cl_int (*clFinish)(cl_command_queue);
  cl_int (*clWaitForEvents)(cl_uint, const cl_event *);
  cl_int (*clGetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void *, size_t *);
  cl_int (*clReleaseEvent)(cl_event);
} ob_opencl_api;

/* The loaded tables, or NULL with *why (static text plus the loader's
 * message, in a per-process buffer) saying what is missing. Thread-safe;
 * the tables live for the whole process. cuInit has been called on the
 * CUDA table (a driver without a device fails it: NULL). */
const ob_cuda_api *ob_cuda_api_get(const char **why);
const ob_nvrtc_api *ob_nvrtc_api_get(const char **why);
const ob_opencl_api *ob_opencl_api_get(const char **why);

/* Names of CUDA driver and OpenCL error codes, for messages. */
const char *ob_cu_errstr(const ob_cuda_api *api, ob_cu_result r);
const char *ob_cl_errstr(cl_int e);

#endif
