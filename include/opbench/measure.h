/* measure: the runner (an isolated worker process that loads variants,
 * checks them and times them; it is killed and restarted when a kernel
 * crashes or hangs). GPU targets' kernels run in a GPU worker that opens
 * the device itself and times on the device's clock (gpu_runner.c). The builder and the error classes live in kernel.h,
 * included here so callers of either keep compiling. */
#ifndef OPBENCH_MEASURE_H
#define OPBENCH_MEASURE_H

#include "opbench/core.h"
#include "opbench/ir.h" /* ob_launch */
#include "opbench/kernel.h" /* error classes and the builder moved there */
#include "opbench/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- runner ---------------------------------------------------------------- */
/* Fills the input buffers (random, never zero) and poisons outputs with NaN;
 * runs in the calling process on the shared buffers. */
typedef void (*ob_fill_fn)(void *user, void *const *bufs);
/* Compares outputs with the reference; returns OB_OK or OB_ERR_WRONG_ANSWER
 * with a message in msg. Runs in the calling process. */
typedef ob_status (*ob_check_fn)(void *user, void *const *bufs, char *msg, size_t msgcap);

typedef struct ob_run_request {
  const ob_target *target;   /* what the kernel was built for (borrowed); NULL: the
                                host. Gives the timing floor, and the implementation
                                that runs it: native, emulator, GPU */
  const char *so_path;       /* the artifact: a shared object; for a GPU target the
                                compiled kernel (PTX, OpenCL C: ob_gpu_compile's) */
  const ob_launch *launch;   /* GPU targets: grid and block (lower's f->launch) */
  const char *symbol;        /* kernel function name */
  int nbufs;
  const size_t *buf_bytes;   /* size of each buffer, in kernel-argument order */
  const bool *buf_is_input;  /* true: flushed before calls when flush is on */
  const int *cores;          /* core set; NULL: 0..nthreads-1 */
  int nthreads;              /* >= 1 */
  ob_timing_opts timing;
  ob_fill_fn fill;           /* required */
  ob_check_fn check;         /* NULL: no correctness check */
  void *user;
} ob_run_request;

typedef struct ob_run_result {
  int error_no;        /* ob_merr */
  char message[512];   /* why, for any error */
  ob_timing timing;    /* when error_no is NONE: the costs, number used, flags */
  double run_s;        /* wall time of the whole request */
} ob_run_result;

typedef struct ob_runner ob_runner;
OB_API ob_status ob_runner_new(ob_ctx *ctx, ob_runner **out);
OB_API void ob_runner_free(ob_runner *r); /* kills the worker */
/* Loads, checks and times one variant in the worker: one discarded warm-up
 * call, the check, then ob_time_loop with req->timing normalized for
 * req->target (ob_timing_resolve). The worker measures the timer's overhead once when
 * it starts; every result carries it. Kernel failures are
 * results (res->error_no), not call failures; the worker is restarted as
 * needed. Returns an error status only when the runner itself cannot work
 * (fork/memfd failed) or the request cannot be run: a buffer over
 * OB_MAX_BUFFER_BYTES (OB_ERR_INVALID_ARG), buffers over the memory limit
 * of ob_runner_check_memory (OB_ERR_NOMEM). */
OB_API ob_status ob_runner_run(ob_runner *r, const ob_run_request *req, ob_run_result *res);
/* OB_OK when `bytes` of buffers for `what` fit in half of the machine's
 * physical memory; OB_ERR_NOMEM naming both sizes otherwise. */
OB_API OB_NODISCARD ob_status ob_runner_check_memory(ob_ctx *ctx, const char *what, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
