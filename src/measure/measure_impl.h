/* measure_impl.h: the runner's implementations behind ob_runner (not part
 * of the public API; hidden from the shared library's exports).
 *
 * ob_runner (runner.c) owns what every implementation shares: the request's
 * checks, the buffer layout and the memfd that holds the buffers (the
 * caller fills and checks them in place), the timing options resolved for
 * the request's target and the deadline. An implementation runs one
 * request on those buffers: it calls req->fill, makes the kernel's warm-up
 * call, calls req->check, times, and puts kernel failures into res
 * (AutoTVM's classes: 4 crash or load failure, 5 wrong answer, 7 timeout).
 * ob_runner picks one per request by the target's facts:
 *   - native (runner.c): a persistent forked worker process that loads
 *     kernels in itself (ob_kernel_load_path) and times with ob_time_loop;
 *   - emulator (emulator.c): a harness program built for the target
 *     (harness/harness.c, embedded) run under the target's emulator, one
 *     process per request, timing with the same ob_time_loop compiled for
 *     the target; its timings are marked emulated;
 *   - gpu (gpu_runner.c): for cuda and opencl targets, a persistent forked
 *     worker that opens the device itself, copies the buffers to it and
 *     back, and times with ob_time_loop on the device's clock. */
#ifndef OPBENCH_MEASURE_IMPL_H
#define OPBENCH_MEASURE_IMPL_H

#include "opbench/measure.h"

/* The request's buffers, laid out in the runner's memfd. */
typedef struct ob_run_bufs {
  int memfd;              /* shared with the process that runs the kernel */
  size_t map_bytes;       /* bytes of the memfd in use */
  int nbufs;
  const uint64_t *off;    /* each buffer's offset in the memfd */
  const uint64_t *bytes;  /* each buffer's size (at least 1) */
  void *const *ptr;       /* each buffer in the caller's mapping */
} ob_run_bufs;

struct ob_runner_i {
  const char *name; /* "native", "emulator" */
  /* Runs req on b. t: req->timing resolved for req->target (clock NULL);
   * deadline: CLOCK_MONOTONIC seconds by which timing must end (the
   * implementation kills what runs past kill_at). Kernel failures are
   * results in res (error_no, message, timing untouched); the call fails
   * only when the implementation cannot work at all. */
  ob_status (*run)(void *self, const ob_run_request *req, const ob_timing_opts *t,
                   double deadline, double kill_at, const ob_run_bufs *b, ob_run_result *res);
  void (*free)(void *self); /* accepts a half-made self */
};

/* The implementations; *self is freed with the vtable's free. */
ob_status ob_runner_native_new(ob_ctx *ctx, void **self);
extern const struct ob_runner_i ob_runner_native_i;
ob_status ob_runner_emulator_new(ob_ctx *ctx, void **self);
extern const struct ob_runner_i ob_runner_emulator_i;
ob_status ob_runner_gpu_new(ob_ctx *ctx, void **self);
extern const struct ob_runner_i ob_runner_gpu_i;

/* The harness's source, one translation unit (gen/harness_src.c). */
extern const char ob_harness_source[];

#endif
