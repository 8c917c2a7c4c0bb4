/* profile: the collector. It measures operators under the features the
 * original OpBench profiles them by and files every point in the database
 * (ob_db_put_profile), a dataset for predictors and a report:
 *   - intra-operator: the input size (a grid over a workload's dimensions)
 *     and the schedule knobs (the base config and every one-knob change
 *     around it, or a random sample of the space);
 *   - resources: the thread count and the core set;
 *   - inter-operator: a second operator running at the same time, on
 *     disjoint cores ("stream") or on the same cores, time-sliced ("full"),
 *     each one's slowdown against itself alone;
 *   - cache: a co-runner on another core keeping a buffer of N MiB hot
 *     (Linux resctrl would partition the cache instead; where it is not
 *     mounted, and on these machines it is not, the co-runner is the
 *     means, and every record says how its pressure was made).
 * Every point is measured with the kernel timing protocol in the isolated
 * runner, checked against the operator's reference, with hardware counters
 * where the machine has them; and placed against the host's limits, which
 * are measured once per host (ob_limits_measure: peak FMA throughput per
 * vector ISA from a generated kernel verified to be FMA-bound, STREAM
 * triad and cache read bandwidths at 1 and at all cores): GFLOPS as a
 * percentage of the peak and the arithmetic intensity of a roofline.
 *
 * A run resumes after kill -9: each point is its own transaction, and a
 * point already in the database is not measured again. */
#ifndef OPBENCH_PROFILE_H
#define OPBENCH_PROFILE_H

#include <stdio.h>

#include "opbench/core.h"
#include "opbench/db.h"
#include "opbench/measure.h"
#include "opbench/ops.h"
#include "opbench/target.h"
#include "opbench/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host limits (limits.c) ------------------------------------------------------------ */
#define OB_LIMITS_MAX 48

typedef struct ob_limit {
  char name[16];   /* "fma_peak" (GFLOP/s), "mem_triad", "l1_read", "l2_read", "l3_read",
                      "cv_run16"... (ob_rt_cv_name) (GB/s) */
  char isa[16];    /* fma_peak: "avx512", "avx2", "scalar"; "" for bandwidths */
  int threads;
  double bytes;    /* working set (bandwidths) */
  double value;
  bool verified;   /* passed its own checks (note says which, or what failed) */
  char note[256];
} ob_limit;

typedef struct ob_limits {
  int n;
  ob_limit l[OB_LIMITS_MAX];
} ob_limits;

typedef struct ob_limits_opts {
  ob_build_opts build;   /* compiler, cache folder (the target's flags per ISA) */
  int max_threads;       /* the all-core figures' threads; <= 0: the host's cores */
  size_t stream_bytes;   /* bytes of each STREAM array; 0: 4x the last-level cache, at
                            least 64 MiB and at most 1/16 of the memory */
  bool quick;            /* small working sets and arrays, short repeats: for tests
                            (the figures are then not the host's) */
  bool conversions_only; /* only the runtime's conversion rates (cv_*): for a
                            database whose limits predate them */
  const char *peak_only; /* NULL: every limit; an ISA name ("avx512"): only that ISA's
                            fma_peak at 1 thread, checked as always: a re-measurement
                            to interleave with kernels, whose clock may have moved
                            since the first */
} ob_limits_opts;

/* Measures the host's limits with the runner, each kernel checked against
 * its reference:
 *  - fma_peak, per ISA of the host (avx512, avx2, scalar) at 1 thread and
 *    at max_threads: a generated kernel of independent vector FMA chains
 *    (C source with vector extensions built by the builder with the ISA's
 *    target flags); verified when its disassembly (objdump) holds the
 *    FMA instructions of the ISA's width and none of the separate multiply
 *    or add that would mean the compiler changed it, and when twice the
 *    chains run no faster (the kernel is throughput-, not latency-bound).
 *    SSE2 (scalar) has no FMA: its figure is mulps + addps pairs, said so.
 *  - mem_triad: STREAM's triad a = b + s c over arrays beyond the caches,
 *    at 1 and at max_threads (GB/s counting 3 arrays, as STREAM does);
 *  - l1_read, l2_read, l3_read: vector loads summed over a working set of
 *    half of that level (a quarter of the L3), repeated, per thread;
 *  - cv_run16 ... cv_nodiv: the runtime's layout conversions
 *    (ob_rt_cv_measure, in this process) at 1 and at max_threads, GB/s of
 *    the tensor: the prices of the runtime's layout plan.
 * Each figure comes from the fastest of its repeats (a limit is what the
 * hardware can do; on a shared machine other work only slows repeats).
 * A limit whose kernel fails is left out and the call goes on; it fails
 * only when the runner or the compiler cannot work. */
OB_API ob_status ob_limits_measure(ob_ctx *ctx, ob_runner *runner, const ob_host *host,
                                   const ob_limits_opts *o, ob_limits *out);
/* Stores them under the host's fingerprint (ob_db_put_host_limit). */
OB_API ob_status ob_limits_store(ob_db *db, const ob_host *host, const ob_limits *l);
/* Loads a host's limits; out->n == 0 when none are stored. */
OB_API ob_status ob_limits_load(ob_db *db, const ob_host *host, ob_limits *out);
/* Where *l (the host's stored limits, as ob_limits_load gave them) lacks the
 * runtime's conversion rates (limits stored before they were among them, or
 * none at all), measures those alone, stores them and loads *l again;
 * *measured says whether it did. */
OB_API ob_status ob_limits_ensure_conversions(ob_ctx *ctx, ob_db *db, const ob_host *host, ob_limits *l,
                                              bool *measured);
/* The FMA peak of `isa` at nthreads: the 1-thread figure x nthreads, at
 * most the all-core figure when that was measured at nthreads or fewer
 * threads; NAN when unknown. */
OB_API double ob_limits_peak(const ob_limits *l, const char *isa, int nthreads);
/* The memory (triad) bandwidth at nthreads, the same way; NAN when unknown. */
OB_API double ob_limits_bandwidth(const ob_limits *l, int nthreads);
/* The limit called name/isa at threads; NULL when none. */
OB_API const ob_limit *ob_limits_find(const ob_limits *l, const char *name, const char *isa,
                                      int threads);

/* ---- sweeps (plan.c) ------------------------------------------------------------------- */
typedef enum ob_corun_mode {
  OB_CORUN_NONE = 0,
  OB_CORUN_STREAM, /* disjoint cores: the partner gets as many cores as the operator,
                      the next ones not in its set */
  OB_CORUN_FULL,   /* both on the operator's cores, time-sliced by the OS */
  OB_CORUN_MODE_COUNT
} ob_corun_mode;
OB_API const char *ob_corun_mode_name(ob_corun_mode m); /* "", "stream", "full" */

typedef enum ob_knob_sweep {
  OB_KNOBS_BASE = 0,   /* the base config only */
  OB_KNOBS_NEIGHBOURS, /* the base config and every one-knob change around it (nearest
                          entities first, round robin over the knobs, at most `knob_count`
                          when > 0) */
  OB_KNOBS_RANDOM,     /* the base config and `knob_count` random configs of the space */
  OB_KNOB_SWEEP_COUNT
} ob_knob_sweep;

#define OB_PROFILE_MAX_CORES 256

/* What to sweep. Every list may be empty (then that feature is not swept:
 * 1 thread on core 0, no co-run, no pressure). Arrays are borrowed for the
 * call that reads them. */
typedef struct ob_profile_sweep {
  int nworkloads;
  const ob_workload *workloads; /* the operators profiled */
  const char *tmpl;            /* NULL: each operator's default template */
  const char *sizes;           /* a grid over each workload's dimensions, e.g.
                                  "H=7:224:x2,C=16:512:x2" (lo:hi:xF multiplies, lo:hi:+S
                                  or lo:hi:S adds, v1/v2/v3 lists, v a value), applied to
                                  each workload in turn; NULL: none */
  int nthreads;
  const int *threads;          /* thread counts, each on cores 0..n-1 */
  int ncore_sets;
  const int *const *core_sets; /* explicit core sets */
  const int *core_set_n;
  ob_knob_sweep knobs;
  int knob_count;
  int ncorun;
  const ob_workload *corun;    /* partners: each profiled workload co-runs with each */
  bool corun_all;              /* also every pair of the profiled workloads (self included):
                                  the co-run matrix */
  unsigned corun_modes;        /* 1 << ob_corun_mode; 0 with partners: stream and full */
  int npressure;
  const double *pressure_mib;  /* MiB values (0: the point without pressure) */
  uint64_t seed;               /* random configs */
  ob_db *db;                   /* NULL, or where the base config is looked up: the
                                  fastest stored config of the task (any resources)
                                  replaces the template's default */
  const char *host;            /* the records' host fingerprint (base config lookup) */
} ob_profile_sweep;

/* A planned sweep: the workloads after the size grid, their tasks and
 * configs, and the points in the order they are measured (per workload:
 * every config at every resource setting, then cache pressure, then
 * co-run, so that each point's alone time is measured before it). */
typedef struct ob_profile_plan ob_profile_plan;

/* Plans the sweep for target t (borrowed; must outlive the plan). Fails
 * with OB_ERR_INVALID_ARG, naming the input, for: a size grid that is
 * malformed, empty (lo above hi, a factor of 1) or that gives an
 * impossible shape (the first one named with the operator's reason), a
 * thread count or core set this machine does not have, a pressure above
 * the machine's memory (or negative), or a grid with no point left (e.g.
 * stream co-run needs twice the cores, pressure a free core: points that
 * cannot be placed are skipped, and counted). */
OB_API ob_status ob_profile_plan_new(ob_ctx *ctx, const ob_target *t, const ob_profile_sweep *s,
                                     ob_profile_plan **out);
OB_API void ob_profile_plan_free(ob_profile_plan *p); /* accepts NULL */
OB_API int ob_profile_plan_count(const ob_profile_plan *p);   /* points */
OB_API int ob_profile_plan_workloads(const ob_profile_plan *p); /* after the size grid */
/* Points skipped while planning and the first reason, e.g. "stream co-run at
 * 2 threads needs 4 cores; this machine has 2". */
OB_API int ob_profile_plan_skipped(const ob_profile_plan *p, const char **why);
/* One line per point into f (the --dry-run listing). */
OB_API void ob_profile_plan_print(const ob_profile_plan *p, FILE *f);

/* "N=1,C=64,H=56" as ob_workload_parse takes it, plus the short forms
 * stride=, pad=, dilation= (ob_workload_set), from "op:shape" text: the
 * co-run partner of the command line. Unknown operator: OB_ERR_UNSUPPORTED
 * naming it and the known ones. */
OB_API ob_status ob_profile_parse_workload(ob_ctx *ctx, const char *text, ob_workload *out);

/* ---- running (run.c) ------------------------------------------------------------------- */
typedef struct ob_profile_progress {
  int done, total;        /* points finished (resumed included), all points */
  int measured, resumed, failed;
  double elapsed_s, eta_s; /* eta < 0: not known yet */
  const char *what;       /* the point just finished, e.g. "conv2d_nchw/... threads=2" */
} ob_profile_progress;

typedef void (*ob_profile_progress_fn)(void *user, const ob_profile_progress *p);

typedef struct ob_profile_opts {
  ob_measure_opts measure; /* timing protocol, builds, seed (threads/cores: the plan's) */
  unsigned counters;       /* events to count per point; OB_COUNTERS_ALL by default */
  const ob_host *host;     /* the records' host (NULL: ob_host_detect) */
  const ob_limits *limits; /* for % of peak and the roofline (NULL or empty: NAN) */
  bool remeasure;          /* measure points the database holds again (replacing them) */
  FILE *progress;          /* "points 12/242 | 1 failed | 35 s elapsed | ~4 min left",
                              redrawn with \r on a terminal, a line per point otherwise */
  ob_profile_progress_fn progress_fn;
  /* after each point: its record as stored (NULL when it was resumed from
   * the database), borrowed for the call */
  void (*point_fn)(void *user, int index, const ob_db_profile *rec);
  void *user;              /* for both callbacks */
} ob_profile_opts;
/* ob_measure_opts_default(), all counters, everything else 0. */
OB_API ob_profile_opts ob_profile_opts_default(void);

typedef struct ob_profile_stats {
  int points, measured, resumed, failed;
  double seconds, build_s, run_s;
  char counters_note[192]; /* why counters were not counted (once; "" when all were) */
  char pressure_how[256];  /* how cache pressure was made, when it was */
} ob_profile_stats;

/* Measures every point of the plan not yet in db (each stored as soon as it
 * is measured, in its own transaction). Kernel failures are records
 * (error_no), never a failed call; the call fails for a database that
 * cannot be written (OB_ERR_BUSY / OB_ERR_IO: every point stored before is
 * kept), a missing compiler or a runner that cannot work. */
OB_API ob_status ob_profile_run(ob_ctx *ctx, ob_profile_plan *plan, ob_runner *runner, ob_db *db,
                                const ob_profile_opts *o, ob_profile_stats *stats);

/* How cache pressure is made on this machine, into buf: "a co-runner
 * thread on core C keeping N MiB hot (Linux resctrl: <why not>)". */
OB_API void ob_profile_pressure_how(char *buf, size_t cap);

/* ---- a pair side by side (corun.c) -------------------------------------------------------
 * The co-run measurement of the sweeps for one pair of configs, for callers
 * that choose the configs themselves (collaboration tuning): A is timed
 * while B runs over and over beside it on its own cores (the runner's
 * co-runner), then B while A runs beside it. Disjoint core sets run them
 * side by side; the same set makes them share the cores. */
typedef struct ob_corun_side {
  struct ob_task *task;  /* borrowed */
  const ob_config *cfg;
  const int *cores;
  int nthreads;
} ob_corun_side;

typedef struct ob_corun_pair {
  int error_no;          /* ob_merr of the pair (either side's build or run) */
  char message[512];
  double a_s, b_s;       /* A's median beside B; B's beside A */
  double makespan_s;     /* the slower of the two: one call of each, together */
} ob_corun_pair;

/* Builds both kernels (through the kernel cache) and measures the pair.
 * Kernel failures are results (out->error_no, naming the side); the call
 * fails only when the runner cannot work or the request is refused. */
OB_API ob_status ob_profile_corun_pair(ob_ctx *ctx, ob_runner *runner, const ob_target *t,
                                       const ob_measure_opts *mo, const ob_corun_side *a,
                                       const ob_corun_side *b, ob_corun_pair *out);

#ifdef __cplusplus
}
#endif
#endif
