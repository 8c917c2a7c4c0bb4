/* kernel: a generated kernel's life, build -> artifact -> load -> run, and
 * the one timing loop every measurement goes through.
 *   - the kernel ABI (what every generated kernel exports; codegen repeats
 *     it textually at the top of each file, test_kernel checks both agree);
 *   - the builder (drives the system compiler, in parallel, with a
 *     content-addressed cache and a timeout) and AutoTVM's error classes;
 *   - artifacts: ob_kernel_build turns lowered functions into shared
 *     objects with their argument layout; ob_kernel_load / _run / _free run
 *     one in this process (measure's runner does it in a worker process);
 *   - timing: ob_timing (one record of a measurement, embedded wherever
 *     timings are kept), ob_timing_opts and ob_time_loop (src/kernel/
 *     timeloop.c, plain C on libc only, so it can also be compiled for
 *     another ISA and run under an emulator).
 * Sits between codegen and measure in the layer order. */
#ifndef OPBENCH_KERNEL_H
#define OPBENCH_KERNEL_H

#include "opbench/core.h"
#include "opbench/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernel ABI ------------------------------------------------------------
 * Every generated kernel exports
 *   int <name>(void *const *bufs, const ob_krt *rt);
 * bufs: one pointer per placeholder (in declaration order), then the outputs.
 * Returns 0. rt->parallel_for runs fn over [0, n) on the caller's pool; rt
 * NULL runs parallel loops serially. codegen.c repeats these three typedefs
 * at the top of every generated file (a kernel is compiled on its own);
 * this is their one definition for callers. */
typedef void (*ob_krt_task)(void *closure, int64_t begin, int64_t end);
typedef struct ob_krt {
  void *pool;
  void (*parallel_for)(void *pool, int64_t n, ob_krt_task fn, void *closure);
} ob_krt;
typedef int (*ob_kernel_fn)(void *const *bufs, const ob_krt *rt);

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
typedef struct ob_build_opts {
  const ob_target *target; /* what the kernels are for; NULL: the default
                            target (ob_target_host). Gives the compiler and
                            flags unless set below. */
  const char *cc;        /* NULL: the target's ($OPBENCH_CC, else "cc", for a
                            native target; e.g. aarch64-linux-gnu-gcc) */
  const char *flags;     /* NULL: the target's, e.g. "-O3 -march=native
                            -mprefer-vector-width=512 -fPIC -shared" */
  const char *cache_dir; /* NULL: $OPBENCH_CACHE, else $XDG_CACHE_HOME/opbench,
                            else $HOME/.cache/opbench, else /tmp/opbench-<uid> */
  double timeout_s;      /* <= 0: 10 s, as AutoTVM */
  int jobs;              /* parallel compilers; <= 0: number of online CPUs */
  bool exact_flags;      /* the flags alone, without $OPBENCH_CFLAGS_APPEND (builder.c):
                            kernels whose instructions are what is measured (the FMA peak) */
} ob_build_opts;

typedef struct ob_build_input {
  const char *source; /* full C translation unit */
  const char *name;   /* kernel name, used in file names and messages */
  bool program;       /* an executable, not a shared object: cached without the
                         .so suffix; the flags say how to link it (the emulator
                         runner's harness) */
} ob_build_input;

typedef struct ob_build_result {
  int error_no;       /* OB_MERR_NONE, _COMPILE_HOST or _BUILD_TIMEOUT */
  char *so_path;      /* malloc'd path of the shared object (or program) on success */
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

/* ---- artifacts: build, load, run -------------------------------------------- */
struct ob_lowered; /* lower.h */

#define OB_KERNEL_MAX_ARGS 16

/* What a build produced for one kernel. Owns its strings
 * (ob_kernel_artifact_clear frees them). */
typedef struct ob_kernel_artifact {
  int error_no;          /* OB_MERR_NONE; _INSTANTIATION (codegen failed),
                            _COMPILE_HOST, _BUILD_TIMEOUT */
  char *message;         /* malloc'd: why it failed, or compiler warnings; may be NULL */
  char target[192];      /* the canonical target string it was built for (ob_target_str) */
  char *so_path;         /* malloc'd path of the shared object; NULL on error */
  char *symbol;          /* malloc'd name of the exported kernel function */
  char *source;          /* malloc'd generated C (kept for messages and --print-source) */
  int nargs;             /* kernel arguments: inputs, then outputs */
  size_t arg_bytes[OB_KERNEL_MAX_ARGS];
  bool arg_is_input[OB_KERNEL_MAX_ARGS];
  double build_s;        /* wall seconds compiling (0 when cached) */
  bool cached;           /* the shared object came from the build cache */
  ob_launch launch;      /* GPU targets: grid, block, shared memory (so_path is then
                            the PTX or OpenCL C file the GPU runner loads) */
} ob_kernel_artifact;
OB_API void ob_kernel_artifact_clear(ob_kernel_artifact *a); /* accepts NULL */

/* Emits C for fns[i] as function names[i] (a C identifier) for target t
 * (NULL: the default, ob_target_host) and builds all n in one
 * ob_build_batch (parallel, cached, timeout) with t's compiler and flags:
 * t replaces o->target; o's cc and flags, when set, still override t's.
 * Per-kernel failures are results in out[i].error_no; the call fails only
 * when nothing could be attempted (no compiler: OB_ERR_COMPILE; a cross
 * target's C library missing: OB_ERR_UNSUPPORTED). out[] is cleared first
 * and must be cleared by the caller with ob_kernel_artifact_clear, also on
 * failure.
 * GPU targets (cuda, opencl): each launch is checked against t's limits
 * (over them: class 1, the limit named), CUDA C is compiled by NVRTC into
 * PTX (a rejected source: class 2 with NVRTC's log) and OpenCL C stored for
 * the device's driver, one at a time, cached by content (gpu.h); so_path
 * names that file and launch the grid and block. Such artifacts run in the
 * GPU runner (ob_runner_run with the launch), not through ob_kernel_load. */
OB_API ob_status ob_kernel_build(ob_ctx *ctx, const ob_target *t, const ob_build_opts *o,
                                 const struct ob_lowered *const *fns, const char *const *names,
                                 int n, ob_kernel_artifact *out);

/* A kernel loaded in this process: the shared object's handle and the
 * symbol. ob_kernel_load fails with OB_ERR_RUNTIME naming the file and the
 * loader's message when the object cannot be loaded or lacks the symbol,
 * OB_ERR_INVALID_ARG for an artifact that failed to build or is a GPU
 * kernel. Only the
 * artifact's so_path and symbol are read; the artifact may be cleared
 * afterwards. The caller owns *out (ob_kernel_free). */
typedef struct ob_kernel ob_kernel;
OB_API ob_status ob_kernel_load(ob_ctx *ctx, const ob_kernel_artifact *a, ob_kernel **out);
/* Loads a shared object by path and symbol (what a worker receives). */
OB_API ob_status ob_kernel_load_path(ob_ctx *ctx, const char *so_path, const char *symbol,
                                     ob_kernel **out);
/* Runs the kernel once on bufs (kernel-argument order) with its parallel
 * loops on pool (NULL: serially, in the calling thread; the pool's cores are
 * the core set). Returns the kernel's return value (0 = success). Keeps no
 * state: calls on different buffers may run at once. ob_kernel_function
 * gives the raw function for callers with their own ob_krt. */
OB_API int ob_kernel_run(ob_kernel *k, void *const *bufs, ob_pool *pool);
OB_API ob_kernel_fn ob_kernel_function(const ob_kernel *k);
OB_API void ob_kernel_free(ob_kernel *k); /* accepts NULL; unloads */

/* ---- timing --------------------------------------------------------------------
 * The protocol (issue 17; Google Benchmark's and timeit's adaptive count,
 * AutoTVM's repeat):
 *  1. calibration: the number of calls per repeat grows until one group
 *     lasts at least the floor (min_repeat_ms); the shorter groups are
 *     discarded (more warm-up; the caller made the first call), the one that
 *     lasts the floor is the first repeat. A fixed number (> 0) with no
 *     explicit floor skips it.
 *  2. `repeat` repeats of `number` calls each (warm: one clock read pair
 *     around the group; flush: the inputs are flushed before each call and
 *     each call is timed alone, so flushing is never timed). A repeat that
 *     ends under the floor grows number and is taken again, so every kept
 *     repeat lasted at least the floor.
 *  3. stability: while the CV of the last `repeat` costs exceeds max_cv,
 *     one more repeat is taken, within the stability budget, the deadline
 *     and OB_TIMING_MAX_COSTS repeats in all; the record keeps the last
 *     `repeat` costs and says how many were added and whether it is still
 *     noisy.
 *  4. a median below 10x the timer's overhead (one clock read) is flagged.
 *  Throughout, a repeat during which the calling thread spent more than
 *  max_offcpu of its wall time off its CPU (CLOCK_THREAD_CPUTIME_ID against
 *  the wall clock: preempted by another process, or asleep waiting for a
 *  pool worker that was) is discarded and taken again, at most `repeat`
 *  times per measurement; the record counts them (retaken). A preemption
 *  costs a whole time slice, so such a repeat times the scheduler: these are
 *  the outliers that made CVs of 50-80 % on a loaded machine. */
#define OB_TIMING_MAX_COSTS 64
/* 5 repeats of at least 2 ms (as Python's timeit: 5 repeats, each autoranged)
 * rather than 10 of 1 ms: the same time, but a 1.3 ms convolution then runs
 * twice per repeat, and the per-call jitter of a single call (2-4 % here)
 * no longer sets the CV; median CV on bench_timing's suite 2.4 % -> 1.9 %. */
#define OB_TIMING_DEFAULT_REPEAT 5
#define OB_TIMING_DEFAULT_FLOOR_MS 2.0  /* the host target's min_repeat_ms */
#define OB_TIMING_DEFAULT_MAX_CV 0.05
#define OB_TIMING_DEFAULT_MAX_OFFCPU 0.01 /* a repeat more than 1 % off-CPU is retaken */
#define OB_TIMING_DEFAULT_TIMEOUT_S 10.0
#define OB_TIMING_RESOLUTION_FACTOR 10.0 /* below_resolution: median < this x overhead */
#define OB_TIMING_NUMBER_MAX (1 << 30)

/* One timing record, embedded wherever timings are kept (run result,
 * measure result, baseline result, db record). */
typedef struct ob_timing {
  int ncosts;                        /* repeats kept */
  double costs[OB_TIMING_MAX_COSTS]; /* seconds per call, one per kept repeat */
  double median_s, mean_s, cv;       /* mean without min and max when ncosts > 2; cv = stddev/mean */
  int number;                        /* calls per repeat actually used; 0: unknown */
  int repeat;                        /* repeats taken (after any stability extension); 0: unknown */
  double min_repeat_ms;              /* the floor used (0: none); NAN: unknown */
  bool flush;                        /* cold caches (inputs flushed before every call) vs warm */
  bool flush_keep_first;             /* with flush: the first input (a model's activation) was
                                        left warm, the others (weights) flushed (--flush-weights) */
  double timer_overhead_s;           /* one clock read, measured by the worker; 0: unknown */
  bool below_resolution;             /* median < 10x timer overhead */
  bool noisy;                        /* cv still above the stability threshold at the end */
  int extra_repeats;                 /* repeats taken beyond `repeat`: retaken ones and those
                                        added by the stability rule */
  int retaken;                       /* repeats discarded and taken again because the thread
                                        was off its CPU (0 when not checked or unknown) */
  bool emulated;                     /* timed under an emulator (a cross target run by
                                        qemu-user): the costs say the kernel ran, they are
                                        not performance figures */
} ob_timing;

typedef double (*ob_time_clock_fn)(void *user);

typedef struct ob_timing_opts {
  int number;                /* 0: adaptive (calibrated to the floor); > 0: fixed, or the
                                starting count when min_repeat_ms is also given (>= 0) */
  int repeat;                /* repeats (<= 0: 5), at most OB_TIMING_MAX_COSTS */
  double min_repeat_ms;      /* floor per repeat; < 0: the target's default (2 ms on the
                                host) when number is adaptive, none when it is fixed */
  bool flush;                /* cold caches: flush the inputs before every call */
  double max_cv;             /* stability threshold (default 0.05); <= 0 disables */
  double max_offcpu;         /* share of a repeat the calling thread may spend off its CPU
                                before the repeat is retaken (default 0.01); <= 0: no check
                                (also off with a caller's clock, e.g. a device's) */
  double stability_budget_s; /* extra time the stability rule may spend; < 0: as long as
                                the repeats before it took (at least 10 ms) */
  double timeout_s;          /* limit for a whole measurement; <= 0: 10 s */
  double timer_overhead_s;   /* the caller's measurement (ob_timer_overhead); 0: measured */
  ob_time_clock_fn clock;    /* seconds; NULL: CLOCK_MONOTONIC (tests pass a fake clock) */
  int (*between)(void *user); /* NULL, or called after every kept repeat, outside the timed
                                 calls (the runtime profiles its steps there, so that the
                                 profile meets the host's slow windows as the timing does);
                                 nonzero stops the loop with that code */
  void *between_user;
} ob_timing_opts;

/* number 0 (adaptive), repeat 10, min_repeat_ms -1 (the target's floor),
 * warm, max_cv 0.05, max_offcpu 0.01, stability budget -1 (automatic),
 * timeout 10 s. */
OB_API ob_timing_opts ob_timing_default(void);
/* The options a measurement actually uses (timeloop.c; ob_time_loop
 * applies it too): o NULL gives the defaults; a repeat out of range is
 * clamped; an adaptive number with no floor given (< 0) gets
 * target_floor_ms (< 0: OB_TIMING_DEFAULT_FLOOR_MS) and a fixed number with
 * no floor gets 0; a stability threshold <= 0 is off; the timeout made
 * concrete. Idempotent. */
OB_API ob_timing_opts ob_timing_normalize(const ob_timing_opts *o, double target_floor_ms);
/* The same with the floor of target t (NULL: the host): what the runner,
 * the baseline and the tool call, so all of them time alike. */
OB_API ob_timing_opts ob_timing_resolve(const ob_timing_opts *o, const ob_target *t);

/* THE timing loop (timeloop.c: standard C and libc only). `call` makes one
 * call (non-zero = failure: the loop stops and returns it); `flush` (may be
 * NULL) flushes the inputs, run before every call when o->flush. deadline_s
 * is absolute, on o->clock (CLOCK_MONOTONIC seconds, as ob_now_s); the loop
 * returns OB_TIME_DEADLINE once it has passed. On 0, *out is complete. */
typedef int (*ob_time_call_fn)(void *user);
typedef void (*ob_time_flush_fn)(void *user);
#define OB_TIME_DEADLINE (-2147483647 - 1) /* INT_MIN: no call may return it */
OB_API int ob_time_loop(const ob_timing_opts *o, double deadline_s, ob_time_call_fn call,
                        ob_time_flush_fn flush, void *user, ob_timing *out);
/* Median, trimmed mean (without min and max when n > 2) and CV (population
 * stddev / plain mean; 0 for a zero mean) of n >= 1 samples. */
OB_API void ob_stats(const double *x, int n, double *median, double *trimmed_mean, double *cv);
/* Recomputes median/mean/cv from costs and sets below_resolution (from
 * timer_overhead_s) and noisy (cv > max_cv, max_cv > 0). */
OB_API void ob_timing_finish(ob_timing *t, double max_cv);
/* Seconds one clock read costs (the best of a few runs of 1000 reads). */
OB_API double ob_timer_overhead(void);
/* The calling thread's CPU seconds (NAN where the clock is missing): wall
 * time minus this is time it spent off its CPU, the loop's max_offcpu rule. */
OB_API double ob_thread_cpu_s(void);
/* Flushes [p, p + bytes) from every cache level (x86 clflush, AArch64 dc
 * civac; a no-op elsewhere). The one flush the runner and baseline use. */
OB_API void ob_cache_flush(const void *p, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
