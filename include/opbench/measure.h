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

/* ---- hardware counters ------------------------------------------------------
 * Counted with Linux's perf_event_open on the threads that run a kernel, in
 * a pass after its timing (so counting never perturbs the timed calls), and
 * reported per call. Where the kernel or the virtual machine cannot count an
 * event (no PMU in the VM, kernel.perf_event_paranoid) it is left out and
 * the note says why; nothing fails for want of counters. task-clock is a
 * software event (CPU time of the kernel's threads), countable wherever
 * perf_event_open works. */
typedef enum ob_counter {
  OB_COUNTER_CYCLES = 0,
  OB_COUNTER_INSTRUCTIONS,
  OB_COUNTER_L1D_MISSES,   /* L1 data cache read misses */
  OB_COUNTER_LLC_MISSES,   /* last-level cache read misses */
  OB_COUNTER_TASK_CLOCK,   /* nanoseconds of CPU time, summed over the threads */
  OB_COUNTER_COUNT
} ob_counter;
#define OB_COUNTERS_HW ((1u << OB_COUNTER_CYCLES) | (1u << OB_COUNTER_INSTRUCTIONS) | \
                        (1u << OB_COUNTER_L1D_MISSES) | (1u << OB_COUNTER_LLC_MISSES))
#define OB_COUNTERS_ALL (OB_COUNTERS_HW | (1u << OB_COUNTER_TASK_CLOCK))

/* "cycles", "instructions", "l1d_misses", "llc_misses", "task_clock_ns". */
OB_API const char *ob_counter_name(ob_counter c);

typedef struct ob_counters {
  unsigned asked;                     /* bitmask of 1 << ob_counter */
  unsigned counted;                   /* those that were counted */
  int64_t calls;                      /* kernel calls the counts cover */
  double per_call[OB_COUNTER_COUNT];  /* per call; NAN where not counted */
  char note[192];                     /* why the others were not ("" when all were) */
} ob_counters;

/* Which events of `asked` this process can count (opens and closes each);
 * note (may be NULL) says why the others cannot, e.g. "cycles,
 * instructions, l1d_misses, llc_misses: the CPU or virtual machine exposes
 * no such counter (no PMU)". */
OB_API unsigned ob_counters_probe(unsigned asked, char *note, size_t cap);

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
  /* What runs beside the kernel while it is timed (the profiler's
   * inter-operator and cache features; native targets only, the emulator
   * runner refuses them): */
  const struct ob_run_request *corun; /* NULL, or a second kernel (its own buffers,
                                cores and threads) run over and over on its own thread
                                team from just before this kernel's timing starts until
                                it ends: filled, warmed up and checked like this one
                                first (a wrong answer or crash of it fails the request);
                                its timing, corun, pressure and counters are ignored */
  size_t pressure_bytes;     /* 0, or a buffer of this many bytes that a thread on
                                pressure_core reads and writes line by line, over and
                                over, while the kernel is timed: it keeps that much of
                                the shared cache busy (cache pressure) */
  int pressure_core;
  unsigned counters;         /* events (1 << ob_counter) to count in a pass after the
                                timing, with the co-runner or pressure still running */
  double build_s;            /* GPU targets: how much longer than timing.timeout_s the
                                checked (first) run may take, for the driver's compile
                                at load and first launch; <= 0: 30 s */
} ob_run_request;

typedef struct ob_run_result {
  int error_no;        /* ob_merr */
  char message[512];   /* why, for any error */
  ob_timing timing;    /* when error_no is NONE: the costs, number used, flags */
  double run_s;        /* wall time of the whole request */
  ob_counters counters;/* when counters were asked */
  int64_t corun_calls; /* with a co-runner: its calls completed from its start (the
                          timing waits for its first) to the timing's end, and the
                          seconds they spanned (corun_s / corun_calls: its time per
                          call beside this kernel; always at least one call) */
  double corun_s;
  double pressure_gbps;/* with cache pressure: bytes the pressure thread swept per
                          second (read + write) from its start (the timing waits for
                          its first sweep) to the timing's end */
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
 * of ob_runner_check_memory (OB_ERR_NOMEM), a co-runner or cache pressure
 * for a target that does not run natively (OB_ERR_UNSUPPORTED), a
 * pressure core that is one of the kernel's or the co-runner's cores
 * (OB_ERR_INVALID_ARG).
 *
 * With req->corun: the co-runner starts on its cores (its own thread
 * pool in the worker) and this kernel's timing begins once it is running;
 * it stops when the timing (and the counters' pass) ends. Which cores each
 * holds is the caller's choice: disjoint sets run them side by side
 * ("stream"), the same set makes them share the cores, time-sliced by the
 * OS ("full"). With pressure_bytes the same holds for the pressure
 * thread. */
OB_API ob_status ob_runner_run(ob_runner *r, const ob_run_request *req, ob_run_result *res);
/* OB_OK when `bytes` of buffers for `what` fit in half of the machine's
 * physical memory; OB_ERR_NOMEM naming both sizes otherwise. */
OB_API OB_NODISCARD ob_status ob_runner_check_memory(ob_ctx *ctx, const char *what, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
