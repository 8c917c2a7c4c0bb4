/* measure: the builder (drives the system compiler, in parallel, with a
 * content-addressed cache and a timeout) and the runner (an isolated worker
 * process that loads variants, checks them and times them; it is killed and
 * restarted when a kernel crashes or hangs). Error classes follow AutoTVM. */
#ifndef OPBENCH_MEASURE_H
#define OPBENCH_MEASURE_H

#include "opbench/core.h"
#include "opbench/ir.h" /* ob_launch */

#ifdef __cplusplus
extern "C" {
#endif

/* AutoTVM's MeasureErrorNo, same numbers. */
typedef enum ob_merr {
  OB_MERR_NONE = 0,
  OB_MERR_INSTANTIATION = 1, /* the config could not be turned into code */
  OB_MERR_COMPILE_HOST = 2,
  OB_MERR_COMPILE_DEVICE = 3,
  OB_MERR_RUNTIME = 4,       /* crash: SIGSEGV, SIGFPE, SIGILL, abort */
  OB_MERR_WRONG_ANSWER = 5,
  OB_MERR_BUILD_TIMEOUT = 6,
  OB_MERR_RUN_TIMEOUT = 7,
  OB_MERR_UNKNOWN = 8,
  OB_MERR_COUNT
} ob_merr;
OB_API const char *ob_merr_str(int error_no);

/* ---- builder --------------------------------------------------------------- */
struct ob_target; /* target.h */
typedef struct ob_build_opts {
  const struct ob_target *target; /* what the kernels are for; NULL: the
                            default target (ob_target_host). Gives the
                            compiler and flags unless set below. */
  const char *cc;        /* NULL: the target's ($OPBENCH_CC, else "cc", for a
                            native target; e.g. aarch64-linux-gnu-gcc) */
  const char *flags;     /* NULL: the target's, e.g. "-O3 -march=native
                            -mprefer-vector-width=512 -fPIC -shared" */
  const char *cache_dir; /* NULL: $OPBENCH_CACHE, else $XDG_CACHE_HOME/opbench,
                            else $HOME/.cache/opbench, else /tmp/opbench-<uid> */
  double timeout_s;      /* <= 0: 10 s, as AutoTVM */
  int jobs;              /* parallel compilers; <= 0: number of online CPUs */
} ob_build_opts;

typedef struct ob_build_input {
  const char *source; /* full C translation unit */
  const char *name;   /* kernel name, used in file names and messages */
} ob_build_input;

typedef struct ob_build_result {
  int error_no;       /* OB_MERR_NONE, _COMPILE_HOST or _BUILD_TIMEOUT */
  char *so_path;      /* malloc'd path of the shared object on success */
  char *message;      /* malloc'd compiler output (stderr), or NULL */
  double build_s;     /* wall seconds spent compiling (0 if cached) */
  bool cached;        /* the shared object came from the cache */
} ob_build_result;

/* Builds n sources, up to opts->jobs compilers at once. Per-variant failures
 * land in out[i].error_no with the compiler's message; the call itself fails
 * only when nothing could be attempted (e.g. the compiler does not exist:
 * OB_ERR_COMPILE with a message naming it). out[] must be cleared by the
 * caller with ob_build_result_clear. */
OB_API ob_status ob_build_batch(ob_ctx *ctx, const ob_build_opts *opts,
                                const ob_build_input *in, int n, ob_build_result *out);
OB_API void ob_build_result_clear(ob_build_result *r);

/* The compiler ob_build_batch would use with these opts: its resolved path
 * and the first line of its `--version` (empty if it prints none). Both
 * truncated to their caps. OB_ERR_COMPILE when it does not exist. */
OB_API ob_status ob_build_compiler(ob_ctx *ctx, const ob_build_opts *opts, char *path,
                                   size_t path_cap, char *version, size_t version_cap);

/* ---- runner ---------------------------------------------------------------- */
typedef struct ob_timing_opts {
  int number;           /* calls per repeat group (grows x1.618, see below) */
  int repeat;           /* groups kept */
  double min_repeat_ms; /* a group shorter than this grows `number` and is redone */
  bool flush;           /* flush every input from the caches before each call */
  double timeout_s;     /* limit for one whole request; <= 0: 10 s */
} ob_timing_opts;
OB_API ob_timing_opts ob_timing_default(void); /* number 1, repeat 10, 0 ms, flush off, 10 s */

/* Fills the input buffers (random, never zero) and poisons outputs with NaN;
 * runs in the calling process on the shared buffers. */
typedef void (*ob_fill_fn)(void *user, void *const *bufs);
/* Compares outputs with the reference; returns OB_OK or OB_ERR_WRONG_ANSWER
 * with a message in msg. Runs in the calling process. */
typedef ob_status (*ob_check_fn)(void *user, void *const *bufs, char *msg, size_t msgcap);

typedef struct ob_run_request {
  const char *so_path;
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
  int ncosts;          /* repeats kept */
  double costs[64];    /* seconds per call, one per repeat group */
  int number;          /* the final calls per group */
  double median_s;     /* median of costs */
  double mean_s;       /* mean without min and max when ncosts > 2 */
  double cv;           /* stddev / mean of costs */
  double run_s;        /* wall time of the whole request */
} ob_run_result;

typedef struct ob_runner ob_runner;
OB_API ob_status ob_runner_new(ob_ctx *ctx, ob_runner **out);
OB_API void ob_runner_free(ob_runner *r); /* kills the worker */
/* Loads, checks and times one variant in the worker. Kernel failures are
 * results (res->error_no), not call failures; the worker is restarted as
 * needed. Returns an error status only when the runner itself cannot work
 * (fork/memfd failed) or the request cannot be run: a buffer over
 * OB_MAX_BUFFER_BYTES (OB_ERR_INVALID_ARG), buffers over the memory limit
 * of ob_runner_check_memory (OB_ERR_NOMEM). */
OB_API ob_status ob_runner_run(ob_runner *r, const ob_run_request *req, ob_run_result *res);
/* OB_OK when `bytes` of buffers for `what` fit in half of the machine's
 * physical memory; OB_ERR_NOMEM naming both sizes otherwise. */
OB_API OB_NODISCARD ob_status ob_runner_check_memory(ob_ctx *ctx, const char *what, size_t bytes);

/* ---- GPU runner (gpu_runner.c) ----------------------------------------------
 * The same isolation for GPU kernels (targets cuda and opencl): a worker
 * process that opens the device session itself (a forked process cannot
 * use the caller's), loads compiled kernels (ob_gpu_compile's files), runs
 * them on device copies of the caller's buffers and times them on the
 * device's clock (CUDA events, OpenCL profiling info) with the same
 * protocol; outputs come back for the caller's check. A kernel the device's
 * compiler rejects (OpenCL) is class 2, a launch the loaded kernel cannot
 * take (its registers) class 1, a failed launch or a lost device class 4;
 * the worker is restarted after them. Flushing caches does not apply. */
struct ob_target;
typedef struct ob_gpu_runner ob_gpu_runner;
typedef struct ob_gpu_run_request {
  const char *path;          /* the compiled kernel (PTX, OpenCL C) */
  const char *symbol;
  ob_launch launch;          /* grid and block (lower's f->launch) */
  int nbufs;                 /* at most 16 */
  const size_t *buf_bytes;
  const bool *buf_is_input;  /* outputs are copied back for the check */
  ob_timing_opts timing;
  ob_fill_fn fill;           /* required */
  ob_check_fn check;         /* NULL: no correctness check */
  void *user;
} ob_gpu_run_request;
/* OB_ERR_UNSUPPORTED (naming target and what is missing) when t cannot run
 * kernels here. */
OB_API ob_status ob_gpu_runner_new(ob_ctx *ctx, const struct ob_target *t, ob_gpu_runner **out);
OB_API void ob_gpu_runner_free(ob_gpu_runner *r);
OB_API const struct ob_target *ob_gpu_runner_target(const ob_gpu_runner *r);
/* As ob_runner_run. The call fails (OB_ERR_UNSUPPORTED) when the worker
 * cannot open the device at all. */
OB_API ob_status ob_gpu_runner_run(ob_gpu_runner *r, const ob_gpu_run_request *req, ob_run_result *res);
/* The GPU runner for target t that runner r keeps beside its CPU worker:
 * made on first use, replaced when asked for another target, freed with
 * r. Lets every caller that holds an ob_runner measure GPU kernels too.
 * *out is borrowed. */
OB_API ob_status ob_runner_gpu(ob_runner *r, const struct ob_target *t, ob_gpu_runner **out);

/* Median / trimmed mean / CV of n samples (n >= 1); exported for tests. */
OB_API void ob_stats(const double *x, int n, double *median, double *trimmed_mean, double *cv);

#ifdef __cplusplus
}
#endif
#endif
