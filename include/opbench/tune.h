/* tune: searching config spaces (space.h) of operator tasks (ops.h):
 * measuring configs of a task, a budgeted search, AutoTVM's tuners and
 * XGBoost cost model with its features, and the tuning loop with resume. */
#ifndef OPBENCH_TUNE_H
#define OPBENCH_TUNE_H

#include "opbench/core.h"
#include "opbench/measure.h"
#include "opbench/space.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- measuring configs of a task (measure_task.c) ------------------------ */
struct ob_task; /* ops.h */
typedef struct ob_measure_opts {
  ob_build_opts build;   /* compiler, flags, cache dir, build timeout */
  ob_timing_opts timing; /* number/repeat/min_repeat_ms/flush/timeout */
  int nthreads;          /* >= 1 */
  const int *cores;      /* NULL: 0..nthreads-1 */
  uint64_t seed;         /* random inputs */
  bool flush_keep_first; /* with timing.flush: every input but the first is flushed
                            (AutoTVM's enable_cpu_cache_flush): in a model the first,
                            the activation, comes warm from the layer before, and
                            the weights cold from the layers before that */
} ob_measure_opts;
/* 1 thread, ob_timing_default() (adaptive number, repeat 10, the target's
 * floor, stability rule on), seed 1. */
OB_API ob_measure_opts ob_measure_opts_default(void);

typedef struct ob_measure_result {
  int error_no; /* ob_merr */
  char message[1024];
  ob_timing timing; /* seconds per call, number used, repeats, floor, flags */
  double gflops;    /* flops / timing.median_s / 1e9; 0 on error */
  double build_s, run_s;
  /* Where it was measured, when not by this process (a fleet's worker):
   * that host's fingerprint and the cores it ran on ("0,1"); both empty
   * for a local measurement. */
  char host[17];
  char cores[64];
} ob_measure_result;

/* The database record's result fields from a measurement: error class,
 * message, the timing record and build/run seconds (the message pointer
 * borrows from *r). The key fields of *rec are left as they are. */
struct ob_db_record; /* db.h */
OB_API void ob_measure_result_to_record(const ob_measure_result *r, struct ob_db_record *rec);

/* Builds (in parallel) and measures n configs of a task: instantiation
 * (lower + codegen), build, run, correctness against the reference, timing.
 * Per-config failures are results; the call fails only when nothing can be
 * measured (the compiler is missing: OB_ERR_COMPILE with a message). */
OB_API ob_status ob_measure_configs(ob_ctx *ctx, struct ob_task *task, ob_runner *runner,
                                    const ob_measure_opts *opts, const ob_config *cfgs, int n,
                                    ob_measure_result *out);


/* ---- measurers: where configs are built and measured (measurer.c) --------
 * The tuning loop and the search take a measurer: the local one (this
 * process's builder and an ob_runner) or any other behind struct
 * ob_measurer_i, such as a fleet of remote workers (fleet.h), which builds
 * each config with its own compiler for its own target and measures it
 * there. The vtable is public so that modules above tune implement it. */
typedef struct ob_measurer ob_measurer;

typedef struct ob_measurer_i {
  const char *name; /* "local", "fleet" */
  /* What ob_measure_configs does: builds and measures n configs of task
   * with opts; per-config failures are results in out[i] (which says in
   * host/cores where it ran). Fails only when nothing can be measured;
   * the message names why (no compiler, no worker, a broker down...). */
  ob_status (*measure)(void *self, ob_ctx *ctx, struct ob_task *task, const ob_measure_opts *opts,
                       const ob_config *cfgs, int n, ob_measure_result *out);
  /* OB_OK when the task's target can be measured (natively, under an
   * emulator, by some worker); else the message names the target and what
   * is missing. */
  ob_status (*check)(void *self, ob_ctx *ctx, struct ob_task *task);
  /* The host records are filed under, and its compiler and version for the
   * database's host row ("" when unknown). */
  ob_status (*host)(void *self, ob_ctx *ctx, struct ob_task *task, ob_host *out, char *cc,
                    size_t cc_cap, char *cc_version, size_t version_cap);
  /* The resource setting records are filed under for measurement opts mo. */
  void (*resources)(void *self, const ob_measure_opts *mo, char *buf, size_t cap);
  void (*free)(void *self); /* may be NULL: self is borrowed */
} ob_measurer_i;

/* A measurer over vt and self (self owned when vt->free is set). */
OB_API ob_status ob_measurer_new(ob_ctx *ctx, const ob_measurer_i *vt, void *self,
                                 ob_measurer **out);
/* The local measurer: builds here and measures with runner (borrowed). */
OB_API ob_status ob_measurer_local_new(ob_ctx *ctx, ob_runner *runner, ob_measurer **out);
OB_API void ob_measurer_free(ob_measurer *m); /* accepts NULL */
OB_API const char *ob_measurer_name(const ob_measurer *m);
/* The local measurer's runner; NULL for any other. */
OB_API ob_runner *ob_measurer_runner(const ob_measurer *m);
/* The vtable's calls. */
OB_API ob_status ob_measurer_measure(ob_measurer *m, ob_ctx *ctx, struct ob_task *task,
                                     const ob_measure_opts *opts, const ob_config *cfgs, int n,
                                     ob_measure_result *out);
OB_API ob_status ob_measurer_check(ob_measurer *m, ob_ctx *ctx, struct ob_task *task);
OB_API ob_status ob_measurer_host(ob_measurer *m, ob_ctx *ctx, struct ob_task *task, ob_host *out,
                                  char *cc, size_t cc_cap, char *cc_version, size_t version_cap);
OB_API void ob_measurer_resources(ob_measurer *m, const ob_measure_opts *mo, char *buf, size_t cap);

/* Builds n configs without running them (what --build-only reports):
 * instantiation (class 1: a config the template cannot apply, a GPU launch
 * over the target's limits, named), compilation (class 2: the compiler's or
 * NVRTC's message) and, on success, the artifact (shared object, PTX, or
 * OpenCL C) and the GPU launch. Needs only what builds for the target:
 * NVRTC for cuda, no GPU. Fails as a call only when nothing can be built. */
typedef struct ob_build_report {
  int error_no;       /* OB_MERR_NONE, _INSTANTIATION, _COMPILE_HOST, _BUILD_TIMEOUT */
  char message[1024];
  double build_s;
  bool cached;
  ob_launch launch;   /* GPU targets: grid, block, shared memory */
  char path[512];     /* the artifact */
} ob_build_report;
OB_API ob_status ob_build_configs(ob_ctx *ctx, struct ob_task *task, const ob_measure_opts *opts,
                                  const ob_config *cfgs, int n, ob_build_report *out);

/* ---- searching a task's space (search.c) --------------------------------- */
typedef struct ob_search_opts {
  int budget;        /* configs to measure; the space is enumerated if it fits */
  uint64_t seed;     /* random sampling */
  int batch;         /* configs compiled together; <= 0: 16 */
  int search_repeat; /* repeats while searching; <= 0: 3 */
  int top_k;         /* re-measured with the full protocol; <= 0: 3 */
  int rounds;        /* re-measurement rounds, each finalist's fastest kept; <= 1: one */
} ob_search_opts;

typedef struct ob_search_result {
  ob_config best;
  ob_measure_result best_result; /* from the full-protocol re-measurement */
  int measured, failed;
  bool exhaustive;
  bool default_remeasured;          /* the default ran correctly and was re-measured */
  ob_measure_result default_result; /* its full-protocol result (when re-measured) */
  double seconds;
} ob_search_result;

/* Best config of a task within the budget. The default config is measured
 * first and, when it ran correctly, re-measured with the full protocol
 * beside the top_k best of the short runs, so the best is never a config
 * that measured slower than the default side by side (so->rounds > 1: in
 * that many rounds, order reversed every other one, each finalist judged by
 * its fastest round). OB_ERR_RUNTIME when no config ran correctly. */
OB_API ob_status ob_search_best(ob_ctx *ctx, struct ob_task *task, ob_measurer *measurer,
                                const ob_measure_opts *opts, const ob_search_opts *so,
                                ob_search_result *out);


/* ---- tuners (tuner.c; xgb.c and feature.c for the cost model) ------------
 * AutoTVM's loop: next_batch proposes configs not measured before, update
 * feeds the measured results back. Names: random, gridsearch, ga, xgb
 * (= xgb_itervar, reg loss), xgb-rank, xgb_knob, xgb_itervar, xgb_curve. */
typedef struct ob_tuner ob_tuner;
/* The cost-model features of one task's configs, kept by config index
 * (feature.c). Model tuners of the same task can share one
 * (ob_tuner_opts.features), so that a config is lowered once for all of
 * them: tuners compared on a task, seeds repeated, a task tuned again. */
typedef struct ob_feat_cache ob_feat_cache;

typedef struct ob_tuner_opts {
  uint64_t seed;
  int plan_size;        /* xgb: configs planned per model fit; <= 0: 64 */
  double plan_seconds;  /* xgb: how long one annealing may search before it
                           plans with what it found; <= 0: 5 s. Within it the
                           tuner is deterministic for a seed; past it, how far
                           the search got depends on the machine's speed */
  int pop_size;         /* ga: population; <= 0: 100 */
  int elite_num;        /* ga: <= 0: 3 */
  double mutation_prob; /* ga: <= 0: 0.1 */
  const char *db_path;  /* xgb transfer: records of the same operator kind
                           from this database seed the cost model; NULL: none */
  ob_feat_cache *features; /* xgb: a cache of this task's features (borrowed), used
                              where it keeps every lowered kind the tuner learns
                              from; NULL or not: the tuner's own */
} ob_tuner_opts;

/* OB_ERR_NOT_FOUND naming the known tuners for an unknown name. */
OB_API ob_status ob_tuner_new(ob_ctx *ctx, const char *name, struct ob_task *task,
                              const ob_tuner_opts *opts, ob_tuner **out);
OB_API void ob_tuner_free(ob_tuner *t);
OB_API const char *ob_tuner_name(const ob_tuner *t);
/* Records of the database (opts->db_path) the tuner's transferred model
 * learned from; 0 without transfer (not a model tuner, no usable records). */
OB_API int ob_tuner_transfer_records(const ob_tuner *t);
/* Up to n configs never proposed before (*got < n when the space is spent). */
OB_API ob_status ob_tuner_next_batch(ob_tuner *t, int n, ob_config *out, int *got);
/* Results of configs (proposed by this tuner or not, e.g. when resuming). */
OB_API ob_status ob_tuner_update(ob_tuner *t, const ob_config *cfgs, const ob_measure_result *res,
                                 int n);
OB_API bool ob_tuner_has_next(const ob_tuner *t);


/* ---- cost-model features (feature.c) -------------------------------------
 * Fixed-length float vectors that the xgb tuners learn from. Numbers are
 * log2(1 + x) unless said otherwise; one-hot entries are 0 or 1.
 *
 * knob: each knob's entity values in declaration order (split: every
 *   factor, the outer one computed as ceil(extent / inner); reorder: the
 *   permutation; annotate: ob_ann per axis; other: the value), raw. Its
 *   length is the sum of the knobs' widths, so it depends on the space.
 *
 * itervar: from the lowered loop nest. The main nest is the store executed
 *   most often (weighted by 1 + its arithmetic). For its innermost
 *   OB_FEATURE_LOOPS loops (slot 0 = innermost; absent loops zero), 25
 *   numbers each:
 *     extent, nest level (1 = outermost), product of the extents from the
 *     outermost loop down to this one, product from this one inward,
 *     one-hot serial/unroll/vectorize/parallel,
 *     arithmetic executed per iteration of the loop (every store below it,
 *     index arithmetic excluded): add/sub, mul, fma (a mul under an add),
 *     div/mod/intrinsic, compare/min/max/select,
 *     then per buffer slot (OB_FEATURE_BUFS: the stored buffer, then the
 *     loaded ones in order of appearance): stride along this loop
 *     (elements; the coefficient of the loop variable in the flat index,
 *     the mean step where it sits under a div/mod), accesses in one run of
 *     the loop (occurrences x extents of this loop and the inner ones),
 *     reuse (product of the extents, this loop and inner, that the index
 *     does not depend on);
 *   then 8 whole-function numbers: stores, iterations of all stores,
 *   iterations of the main store, depth of the main nest, bytes of local
 *   allocations, bytes of global temporaries, vector lanes (product of
 *   vectorized extents of the main nest), unrolled product of the main nest.
 *
 * curve: loop-structure-free, for transfer across shapes. x_j = 1.5 j
 *   (j < OB_FEATURE_CURVE_POINTS) is the log2 of an iteration volume of the
 *   main nest counted from the innermost loop outward; at each x_j (piecewise
 *   linear between loop boundaries, held past the whole nest):
 *     per buffer slot: log2 footprint bytes, log2 reuse (volume / footprint),
 *     then log2 of all the slots' footprints together;
 *   then per buffer slot the innermost stride, then vector lanes, unrolled
 *   product, parallel extent, local allocation bytes, and the 5 arithmetic
 *   counts per innermost iteration. */
typedef enum ob_feature_kind {
  OB_FEATURE_KNOB = 0,
  OB_FEATURE_ITERVAR,
  OB_FEATURE_CURVE,
  OB_FEATURE_KIND_COUNT
} ob_feature_kind;
/* Every kind as a bit set (ob_feat_cache_new's kinds). */
#define OB_FEATURE_KINDS_ALL ((1u << OB_FEATURE_KIND_COUNT) - 1)

#define OB_FEATURE_LOOPS 10
#define OB_FEATURE_BUFS 4
#define OB_FEATURE_CURVE_POINTS 16
#define OB_FEATURE_ITERVAR_LEN (OB_FEATURE_LOOPS * (13 + 3 * OB_FEATURE_BUFS) + 8)
#define OB_FEATURE_CURVE_LEN                                                       \
  (OB_FEATURE_CURVE_POINTS * (2 * OB_FEATURE_BUFS + 1) + OB_FEATURE_BUFS + 4 + 5)

OB_API const char *ob_feature_kind_name(ob_feature_kind kind); /* "knob", ... */
/* Vector length of `kind` for configs of `s`. */
OB_API int ob_feature_len(const ob_space *s, ob_feature_kind kind);
/* Features of one config into out[ob_feature_len(...)] (itervar and curve
 * lower the config: OB_ERR_OUT_OF_SPACE / OB_ERR_SCHEDULE as ob_task_lower,
 * with out zeroed). Deterministic. */
OB_API ob_status ob_feature_extract(ob_ctx *ctx, struct ob_task *task, const ob_config *cfg,
                                    ob_feature_kind kind, float *out);

/* A feature cache over `task`'s space that keeps the kinds in the bit set
 * `kinds` (1u << OB_FEATURE_ITERVAR | ...; one lowering fills every kind)
 * in about max_bytes of rows (0: 64 MiB); when full it starts over. The
 * task is borrowed and must outlive it. Not thread-safe: the tuners that
 * share it are driven from one thread, and ctx is the one they use. */
OB_API ob_status ob_feat_cache_new(ob_ctx *ctx, struct ob_task *task, unsigned kinds, size_t max_bytes,
                                   ob_feat_cache **out);
OB_API void ob_feat_cache_free(ob_feat_cache *c); /* accepts NULL */
/* Lowerings done and lookups answered from the cache. */
OB_API void ob_feat_cache_stats(const ob_feat_cache *c, int64_t *lowered, int64_t *hits);

/* ---- the tuning loop (loop.c) ----------------------------------------------
 * AutoTVM's tune(): the tuner proposes a batch, it is built and measured,
 * every trial is stored, the results go back to the tuner. Beyond AutoTVM:
 *  - resume: trials already in the database under the task's key (host,
 *    workload, target, resources, template) are not measured again; they
 *    count toward n_trial and are fed to the tuner first;
 *  - the builds of batch k+1 (lowering, codegen, compiler processes) run
 *    while batch k is measured, pinned to the allowed cores the
 *    measurement does not use (with none free: build, then measure);
 *  - at the end the top configs and the default are re-measured with the
 *    full protocol (in confirm_rounds rounds), their stored trials replaced
 *    (the old ones kept as history) and the winner stored as the task's
 *    confirmed best (ob_db_put_confirmed); a task confirmed before with
 *    nothing measured since keeps its verdict unless reconfirm.
 * Trials time with `measure` but timing.repeat lowered to search_repeat and
 * no stability rule (timing.max_cv 0); the re-measurement uses `measure` as
 * given. */
#include <stdio.h>

struct ob_db; /* db.h */

typedef struct ob_tune_progress {
  int task_index, ntasks; /* "[Task i/n]" */
  int trials, n_trial;    /* trials so far (resumed included), budget */
  double cur_gflops;      /* last error-free trial of the latest batch; 0: none */
  double best_gflops;     /* best trial so far; 0: none */
  double elapsed_s;       /* since ob_tune_task started */
  bool done;              /* the call's last report */
} ob_tune_progress;

/* After every batch, and once more at the end with done set. */
typedef void (*ob_tune_progress_fn)(void *user, const ob_tune_progress *p);
/* Every trial in order (1-based), resumed ones first. false stops the loop
 * after this trial. */
typedef bool (*ob_tune_trial_fn)(void *user, int trial, const ob_config *cfg,
                                 const ob_measure_result *res, bool resumed);
/* Stands in for building and measuring (replay from a table, tests): fills
 * res[0..n). A failure status stops the loop with it. */
typedef ob_status (*ob_tune_measure_fn)(void *user, struct ob_task *task, const ob_config *cfgs,
                                        int n, ob_measure_result *res);

typedef struct ob_tune_opts {
  int n_trial;             /* trial budget, >= 1; resumed trials count */
  int early_stopping;      /* stop after this many trials without a new best; <= 0: never */
  int batch;               /* configs per batch; <= 0: 16 */
  ob_measure_opts measure; /* the full protocol: threads, cores, timing, builds */
  int search_repeat;       /* timing.repeat of a trial; <= 0: 3 (at most measure's) */
  int confirm_top;         /* configs re-measured at the end; 0: 5; < 0: none */
  const ob_host *host;     /* the records' host; NULL: the measurer's (this
                              machine's for the local one, the workers' for a
                              fleet) */
  const char *target;      /* the records' target; NULL: the task's canonical
                              string (ob_target_str), "llvm -mcpu=native" for
                              the host default */
  const char *resources;   /* NULL: the measurer's setting for measure
                              (local: "threads=N;cores=LIST") */
  const char *log_path;    /* with a db: at the end, append to this file the
                              AutoTVM v0.2 lines of the task's records that
                              it does not hold yet; NULL: none */
  FILE *progress;          /* AutoTVM's progress line, redrawn with \r on a
                              terminal, one line per update otherwise */
  int task_index, ntasks;  /* <= 0: 1 and 1 */
  ob_tune_progress_fn progress_fn;
  ob_tune_trial_fn trial_fn;
  ob_tune_measure_fn measure_fn;
  void *user;              /* for the three callbacks */
  bool no_overlap;         /* build each batch only after the previous one is measured */
  bool remeasure;          /* ignore the task's stored trials (no resume) and
                              replace them as configs are measured again; the
                              replaced rows go to the db's history table */
  bool reconfirm;          /* re-measure the top configs although the db holds
                              a confirmed best and nothing new was measured
                              (records taken on a loaded machine, confirmed
                              again on a quiet one) */
  int confirm_rounds;      /* rounds of the re-measurement, the candidates'
                              order reversed every other round, each judged by
                              its fastest round (a slow phase of the host then
                              costs a candidate one round, not its place);
                              <= 0: 1 */
} ob_tune_opts;

/* The resource setting the loop files a task's trials under when
 * ob_tune_opts.resources is NULL: "threads=N;cores=LIST" of the measurement
 * (cores 0..N-1 when mo->cores is NULL). Truncated to cap. */
OB_API void ob_tune_resources(const ob_measure_opts *mo, char *buf, size_t cap);

/* n_trial 200, batch 16, ob_measure_opts_default(), everything else 0. */
OB_API ob_tune_opts ob_tune_opts_default(void);

typedef struct ob_tune_stats {
  int trials;      /* counted toward n_trial: resumed + measured */
  int resumed;     /* found in the database, not measured */
  int measured;    /* measured by this call (re-measurements not counted) */
  int failed;      /* trials with an error, resumed included */
  int best_trial;  /* 1-based trial of the best; 0: none ran correctly */
  ob_config best;  /* valid when best_trial > 0 */
  ob_measure_result best_result;
  bool early_stopped; /* early_stopping trials passed without a new best */
  bool exhausted;     /* the tuner had nothing left to propose */
  bool stopped;       /* a trial_fn returned false */
  bool confirmed;     /* confirmed_* hold the best re-measured config (now,
                         or by an earlier run that measured the same trials) */
  int confirm_candidates;
  bool default_confirmed; /* the default config was among them (the loop
                             measures it as its first trial and always
                             re-measures it, once it ran correctly) */
  ob_config confirmed_cfg;
  ob_measure_result confirmed_result;
  double seconds;     /* wall time of the call */
  double build_s;     /* compile seconds of this call's trials */
  double run_s;       /* seconds spent measuring them */
  double wait_s;      /* seconds the measurement waited for builds */
  int64_t log_lines;  /* lines appended to log_path */
} ob_tune_stats;

/* Tunes one task with a tuner made for it, measuring with `measurer` (local
 * or a fleet; the local one overlaps builds with measurement, any other gets
 * each batch whole). measurer may be NULL only with a measure_fn; db may be
 * NULL (then no records, no resume, nothing
 * confirmed in a database). Per-trial failures are results. Fails with
 * OB_ERR_INVALID_ARG for n_trial < 1 ("a trial budget of 0"), OB_ERR_COMPILE
 * when the compiler is missing, OB_ERR_BUSY / OB_ERR_IO when the database
 * cannot be written (every trial stored before stays). *stats holds what
 * was done, on failure too. */
OB_API ob_status ob_tune_task(ob_ctx *ctx, struct ob_task *task, ob_tuner *tuner,
                              ob_measurer *measurer, struct ob_db *db, const ob_tune_opts *opts,
                              ob_tune_stats *stats);

/* "[Task 1/12] Current/Best:   22.37/  52.19 GFLOPS | Progress: (544/1000) | 406.59 s" */
OB_API void ob_tune_progress_format(const ob_tune_progress *p, char *buf, size_t cap);

/* The tuner names ob_tuner_new knows, in a fixed order (i < ob_tuner_count()). */
OB_API int ob_tuner_count(void);
OB_API const char *ob_tuner_name_at(int i);

#ifdef __cplusplus
}
#endif
#endif
