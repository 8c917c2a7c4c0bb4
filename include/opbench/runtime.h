/* runtime: the graph executor. A graph after the passes (ob_graph_optimize,
 * layouts planned) is compiled once into a list of steps over one planned
 * block of memory, then run as often as wanted:
 *   - every node that maps to an operator workload (ob_graph_node_workload)
 *     runs a generated kernel: the best config the database holds for this
 *     host, target and resource setting (threads and cores), or the
 *     template's default config when it holds none (said once per task);
 *     kernels are built in one parallel batch, through the content-addressed
 *     kernel cache, so a model's second compile builds nothing;
 *   - or, with OB_RT_ONEDNN, oneDNN primitives for the conv/dense/matmul/pool
 *     nodes oneDNN supports (everything else as OB_RT_TUNED), in the same
 *     blocked layouts;
 *   - every other node runs a C implementation of the runtime (views for
 *     reshape/flatten/squeeze, strided copies for transpose/slice/concat,
 *     broadcasting elementwise loops, pooling and normalisation in blocked
 *     layouts...), parallel on the same thread pool;
 *   - weights are packed once at load into each kernel's layout (the
 *     templates' pack hooks); activations stay blocked (NCHW[x]c) between
 *     convolutions where the graph's layout plan says so, converted only
 *     where a consumer needs another layout (a layout boundary, or two
 *     configs whose channel blocks differ);
 *   - activations live in one block of memory planned by lifetime: two
 *     buffers share bytes only when no step sees both alive.
 * The whole output is checked against the naive reference execution of the
 * same graph (ob_graph_run_reference) before any time counts (ob_rt_check),
 * and timed with the kernels' protocol (ob_time_loop).
 *
 * The graph is borrowed: it must outlive the runtime (constants are read
 * from it). One run at a time per runtime. The runtime owns its thread pool
 * (the calling thread is pinned to the first core while it exists). */
#ifndef OPBENCH_RUNTIME_H
#define OPBENCH_RUNTIME_H

#include <stdio.h>

#include "opbench/core.h"
#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/kernel.h"
#include "opbench/target.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ob_db; /* db.h */

typedef enum ob_rt_kernels {
  OB_RT_TUNED = 0, /* the database's best config per task; the default on a miss */
  OB_RT_DEFAULT,   /* every task at its template's default config, or the
                      channel-block variant of it the layout plan picks (untuned) */
  OB_RT_ONEDNN,    /* oneDNN for conv/depthwise/dense/batch_matmul/pooling nodes,
                      the rest as OB_RT_TUNED */
  OB_RT_KERNELS_COUNT
} ob_rt_kernels;
OB_API const char *ob_rt_kernels_name(ob_rt_kernels k); /* "tuned", "default", "onednn" */

typedef struct ob_rt_opts {
  ob_rt_kernels kernels;
  const ob_target *target; /* borrowed; NULL: the default target (ob_target_host) */
  ob_build_opts build;     /* compiler, cache folder, build timeout (<= 0: 120 s per
                              kernel: a chosen kernel, not a variant to weed out) */
  int nthreads;            /* >= 1 */
  const int *cores;        /* NULL: 0..nthreads-1 */
  struct ob_db *db;        /* records for OB_RT_TUNED/ONEDNN; NULL: defaults everywhere */
  const char *host;        /* fingerprint whose records apply; NULL: this host's */
  ob_db_cache cache;       /* records timed in this cache state are preferred: a workload
                              that has any takes its config among them only, else among
                              all (default OB_DB_CACHE_COLD_WEIGHTS, the state a model's
                              kernel meets, tune --modelname's default; ANY: all alike) */
  FILE *notes;             /* notices, one line each (a task at its default config,
                              records of another host not applied); NULL: none */
} ob_rt_opts;
/* OB_RT_TUNED, default target and build options, 1 thread, no database. */
OB_API ob_rt_opts ob_rt_opts_default(void);

typedef struct ob_rt ob_rt;

/* Compiles g: its shapes must be known (ob_graph_optimize or
 * ob_graph_infer_shapes); the layout plan is used when present. Fails with
 * OB_ERR_INVALID_ARG (bad options, unknown shapes), OB_ERR_UNSUPPORTED
 * naming the node the runtime cannot run, OB_ERR_COMPILE when the compiler
 * is missing or a kernel does not build (naming the node and config),
 * OB_ERR_NOMEM, OB_ERR_SYSTEM (thread pool, oneDNN engine). *out is owned by
 * the caller (ob_rt_free). */
OB_API ob_status ob_rt_new(ob_ctx *ctx, const ob_graph *g, const ob_rt_opts *o, ob_rt **out);
OB_API void ob_rt_free(ob_rt *rt); /* accepts NULL */
OB_API const ob_graph *ob_rt_graph(const ob_rt *rt);

/* Copies graph input i (bytes: its size; OB_ERR_INVALID_ARG otherwise). */
OB_API ob_status ob_rt_set_input(ob_rt *rt, int i, const void *data, size_t bytes);
/* Runs the graph once on the inputs set (zeros until set). */
OB_API ob_status ob_rt_run(ob_rt *rt);
/* Graph output i after a run, plain layout; valid until the next run. */
OB_API const void *ob_rt_output(const ob_rt *rt, int i);
OB_API size_t ob_rt_output_bytes(const ob_rt *rt, int i);

/* The outputs of the last run against reference outputs (ref[i] for graph
 * output i, as ob_graph_run_reference writes them): float outputs pass when
 * max |got - ref| <= tol * max(1, max |ref|) (tol <= 0: 1e-3), and every
 * value is finite; integer outputs must be equal. */
typedef struct ob_rt_check_result {
  bool ok;
  double max_abs_err;  /* over all float outputs */
  double max_abs_ref;
  double rel_err;      /* max_abs_err / max(1, max_abs_ref) */
  int worst_output;    /* graph output of the largest error, -1 when none */
  int64_t worst_index; /* element of it */
  char message[256];   /* why it failed, or "" */
} ob_rt_check_result;
OB_API void ob_rt_check(const ob_rt *rt, const void *const *ref, double tol, ob_rt_check_result *out);

/* Whole-model latency: ob_time_loop over ob_rt_run with o (NULL: the
 * defaults) resolved for the runtime's target, after one discarded run. */
OB_API ob_status ob_rt_time(ob_rt *rt, const ob_timing_opts *o, ob_timing *out);

/* Per-step breakdown: runs the graph `runs` times (>= 1, after one warm-up)
 * timing each step alone; step_s[i] (ob_rt_step_count entries) gets the
 * median seconds of step i, *total_s (may be NULL) the median of the whole
 * runs measured at the same time. */
OB_API ob_status ob_rt_profile(ob_rt *rt, int runs, double *step_s, double *total_s);
/* The same over the runs whose totals fall in the middle half (what
 * ob_rt_record_steps stores): step_s[i] is step i's mean over those runs,
 * *total_s their mean total, so the steps add up to it (less the loop's own
 * few ns per step). The sum of the steps' medians falls short of the whole
 * run's (3 % on squeezenet-1.1: a step's latency is skewed to the right),
 * and trimming each step apart keeps different runs per step. */
OB_API ob_status ob_rt_profile_trimmed(ob_rt *rt, int runs, double *step_s, double *total_s);
/* ob_rt_time with a trimmed profile (as ob_rt_profile_trimmed) of
 * runs_per_repeat (>= 1) runs after every kept repeat of the timing, so that
 * the profile and the timing meet the host's slow windows alike (profiled
 * runs taken after a round's timing summed to 9.88 ms against its 8.29 end
 * to end, squeezenet-1.1 at 1 thread). The limit on the whole is the
 * timing's timeout times 1 + runs_per_repeat. *runs (may be NULL) gets the
 * number of profiled runs. */
OB_API ob_status ob_rt_time_profiled(ob_rt *rt, const ob_timing_opts *o, int runs_per_repeat, ob_timing *out,
                                     double *step_s, double *total_s, int *runs);

/* Every kernel and oneDNN step timed alone: one run in order, each such
 * step run again `reps` times (1..OB_TIMING_MAX_COSTS) back to back right
 * after its own call, warm as the kernel's repeats in the db were;
 * alone_s[i] (ob_rt_step_count entries) gets the median, NAN for the other
 * steps. Beside ob_rt_profile's time in the run it shows what the graph
 * costs each kernel (caches its neighbours left cold), both in the host's
 * state of the minute, where the db's medians are of another time. No
 * step writes into its own inputs (the memory plan never shares a buffer
 * between values live at one step), so the outputs are the run's. */
OB_API ob_status ob_rt_profile_alone(ob_rt *rt, int reps, double *alone_s);

/* ---- conversion rates (native.c) ----------------------------------------------
 * The layout plan prices a conversion between two layouts by the copies it
 * makes: runs of 16, 8, 4 or 2 floats where one channel block divides the
 * other, single floats along pixels between plain and a block, an index per
 * float between blocks that do not divide. ob_rt_cv_measure times the
 * runtime's own conversion routine for each kind on a tensor of 64 (48 for
 * OB_RT_CV_NODIV) channels of 56 x 56, warm, on nthreads threads (cores
 * NULL: 0..nthreads-1; the calling thread pinned to the first meanwhile),
 * each result checked element by element first; bytes per second of the
 * tensor, the median of its repeats (a price, as the kernels' medians). The host's limits store them
 * (ob_limits_measure: "cv_run16"...); a runtime whose database holds them
 * for its host prices with them, and otherwise with built-in rates measured
 * on one host (ob_rt_stats.cv_threads says which). */
typedef enum ob_rt_cv_kind {
  OB_RT_CV_RUN16 = 0, /* NCHW16c <-> NCHW32c and wider */
  OB_RT_CV_RUN8,      /* NCHW8c <-> NCHW16c */
  OB_RT_CV_RUN4,
  OB_RT_CV_RUN2,
  OB_RT_CV_BLOCK,     /* NCHW <-> NCHW8c (the mean of both directions) */
  OB_RT_CV_NODIV,     /* NCHW16c -> NCHW6c */
  OB_RT_CV_KINDS
} ob_rt_cv_kind;
OB_API const char *ob_rt_cv_name(ob_rt_cv_kind k); /* "cv_run16", ... "cv_nodiv": the limits' names */
/* What ob_rt_cv_measure times for k, e.g. "NCHW16c -> NCHW32c of 64 x 56 x 56". */
OB_API const char *ob_rt_cv_what(ob_rt_cv_kind k);
/* The built-in rates (bytes/s). */
OB_API void ob_rt_cv_default(double rates[OB_RT_CV_KINDS]);
/* *bytes: the tensor's (the OB_RT_CV_RUN16 one). OB_ERR_INVALID_ARG for a
 * thread count out of 1..256, the pool's error for cores it cannot pin,
 * OB_ERR_WRONG_ANSWER when a conversion's result is wrong. */
OB_API ob_status ob_rt_cv_measure(ob_ctx *ctx, int nthreads, const int *cores, double rates[OB_RT_CV_KINDS],
                                  double *bytes);

/* ---- what was compiled ------------------------------------------------------- */
typedef enum ob_rt_step_kind {
  OB_RT_STEP_KERNEL = 0, /* a generated kernel */
  OB_RT_STEP_ONEDNN,     /* a oneDNN primitive */
  OB_RT_STEP_NATIVE,     /* the runtime's own C implementation of a node */
  OB_RT_STEP_CONVERT,    /* a layout conversion (no node) */
  OB_RT_STEP_KIND_COUNT
} ob_rt_step_kind;
OB_API const char *ob_rt_step_kind_name(ob_rt_step_kind k); /* "kernel", "onednn", "native", "convert" */

typedef struct ob_rt_step_info {
  ob_rt_step_kind kind;
  int node;             /* graph node; -1 for a conversion */
  const char *name;     /* the node's name, or "a -> b" of a conversion; owned by rt */
  const char *op;       /* ONNX operator, the workload's operator, or the conversion */
  const char *workload; /* workload key of kernel and oneDNN steps, else "" */
  const char *tmpl;     /* kernel: template; oneDNN: its implementation; else "" */
  uint64_t config_index;
  bool from_db;         /* the config is the database's (else the default) */
  double db_s;          /* the database's median for this config on this
                           resource setting, NAN when it has none */
  double flops;         /* of the workload; 0 for other steps */
} ob_rt_step_info;
OB_API int ob_rt_step_count(const ob_rt *rt);
OB_API void ob_rt_step_get(const ob_rt *rt, int i, ob_rt_step_info *out);

typedef struct ob_rt_stats {
  int nsteps, nkernels, nonednn, nnative, nconvert;
  int nviews;            /* nodes (and NCHW <-> NCHW1c conversions) that became views of their input (no step) */
  int nboundary;         /* conversions at layout boundaries (plain <-> blocked) */
  int nreblock;          /* conversions between two channel blocks */
  int ntasks;            /* distinct workloads run by kernels */
  int ntuned, ndefault;  /* of those: configs from the database / defaults */
  int nother_cache;      /* tuned ones whose workload had no record timed in the
                            preferred cache state (opts.cache): taken from the others */
  ob_db_cache cache;     /* opts.cache */
  int nbuilt, ncached;   /* kernels compiled now / found in the kernel cache */
  double build_s;        /* wall seconds of compiling, loading, packing */
  size_t peak_bytes;     /* the planned block of activations */
  size_t sum_bytes;      /* all activation buffers one after the other */
  int nbuffers;
  size_t packed_bytes;   /* weights packed at load */
  int npacked;
  bool foreign_records;  /* the database held records of the model's
                            workloads from other hosts only: not applied */
  int cv_threads;        /* conversions priced at the host's measured rates
                            (limits "cv_*" at this many threads); 0: the
                            built-in rates */
} ob_rt_stats;
OB_API void ob_rt_get_stats(const ob_rt *rt, ob_rt_stats *out);

/* The memory plan, for inspection and tests: buffer i occupies
 * [offset, offset + bytes) of the block from step `first` (-1: before the
 * first step) to step `last` inclusive (ob_rt_step_count: to the end). */
typedef struct ob_rt_buffer {
  size_t offset, bytes;
  int first, last;
  int tensor; /* graph tensor, -1 for scratch */
} ob_rt_buffer;
OB_API int ob_rt_buffer_count(const ob_rt *rt);
OB_API void ob_rt_buffer_get(const ob_rt *rt, int i, ob_rt_buffer *out);

/* Sum over kernel steps of the database's median for their configs (the
 * tuned latency of the model as the database sees it); *covered (may be
 * NULL) counts the kernel and oneDNN steps that have one, *steps (may be
 * NULL) all of them. */
OB_API double ob_rt_db_sum(const ob_rt *rt, int *covered, int *steps);

/* In-graph step records (ingraph.c): a kernel's database record is its
 * latency alone; these are every step's latency inside the deployed plan
 * (kernels, oneDNN primitives, the runtime's own steps and its layout
 * conversions), stored as profile points of sweep "in-graph" under a key
 * that names the plan (a hash of every step's operator, template and
 * config), this host, target and resource setting.
 * ob_rt_record_steps: runs the graph `runs` times timing each step (after a
 * warm-up), and stores each step's mean over the runs whose totals fall in
 * the middle half (as ob_rt_profile_trimmed), replacing older records of the same plan; *sum_s and *total_s (may
 * be NULL) get their sum and those runs' mean total. db must be open
 * for writing.
 * ob_rt_ingraph_sum: the sum of the records of this plan's steps found in
 * db; *covered (may be NULL) counts the steps that have one
 * (ob_rt_step_count when all do). */
OB_API ob_status ob_rt_record_steps(ob_rt *rt, struct ob_db *db, int runs, double *sum_s, double *total_s);
/* Stores step_s[i] (seconds, ob_rt_step_count entries, measured over `runs`
 * runs of this plan, e.g. averaged from several ob_rt_profile calls) as
 * the in-graph records, as ob_rt_record_steps does; *sum_s (may be NULL)
 * gets their sum. */
OB_API ob_status ob_rt_store_steps(ob_rt *rt, struct ob_db *db, const double *step_s, int runs, double *sum_s);
OB_API ob_status ob_rt_ingraph_sum(const ob_rt *rt, struct ob_db *db, double *sum_s, int *covered);

/* ---- parallel stages (IOS's stage executor) --------------------------------- */
/* A compiled runtime run as a sequence of stages separated by barriers; a
 * stage holds groups that run at the same time, each on its own core set,
 * its graph nodes in order (the steps of the nodes, and the layout
 * conversions their inputs need, in the runtime's step order). One thread
 * team: a thread pinned to each core the plan uses; the thread on a
 * group's first core leads it, with a thread pool on the group's cores for
 * its parallel loops; spin barriers between stages. A conversion read by
 * several groups of a stage runs in its producer's group (or, for a graph
 * input, in a stage of its own before). */
typedef struct ob_rt_group_plan {
  int nnodes;
  const int *nodes; /* graph nodes of the runtime's graph */
  int ncores;
  const int *cores;
} ob_rt_group_plan;
typedef struct ob_rt_stage_plan {
  int ngroups;
  const ob_rt_group_plan *groups;
} ob_rt_stage_plan;
typedef struct ob_rt_par ob_rt_par;

/* Checks the plan against rt (every step's node in exactly one group, each
 * step after what it reads: an earlier stage or earlier in its group, core
 * sets disjoint within a stage and on cores this process may use;
 * OB_ERR_INVALID_ARG naming the stage (from 1), group and node otherwise),
 * re-plans rt's activation memory so that two buffers share bytes only
 * when neither the sequential order nor the stages see both alive (inputs
 * must be set again afterwards), and starts the team. The plan is copied;
 * rt must outlive *out and is used by one of ob_rt_run and ob_rt_par_run
 * at a time. Runtimes with oneDNN steps are refused (OB_ERR_UNSUPPORTED):
 * a primitive owns its threads. */
OB_API ob_status ob_rt_par_new(ob_rt *rt, int nstages, const ob_rt_stage_plan *stages, ob_rt_par **out);
/* A part of the graph by stages, for timing it (a measured stage cost):
 * only the plan's nodes run (and the conversions only they read); values
 * they read but do not write hold what an earlier run left there. The
 * first call places every activation in bytes of its own (no sharing, so
 * any subset may run in any order; inputs must be set again), later ones
 * reuse that placement. */
OB_API ob_status ob_rt_par_new_subset(ob_rt *rt, int nstages, const ob_rt_stage_plan *stages, ob_rt_par **out);
OB_API void ob_rt_par_free(ob_rt_par *p); /* accepts NULL; stops the team */
/* Runs the graph once by stages on the inputs set with ob_rt_set_input;
 * outputs through ob_rt_output. A failing step is named. */
OB_API ob_status ob_rt_par_run(ob_rt_par *p);
/* As ob_rt_time, by stages. */
OB_API ob_status ob_rt_par_time(ob_rt_par *p, const ob_timing_opts *o, ob_timing *out);
/* Stages after the plan's (a graph input's conversion may add one), and
 * the steps of stage i, group j. */
OB_API int ob_rt_par_stage_count(const ob_rt_par *p);
OB_API int ob_rt_par_group_steps(const ob_rt_par *p, int stage, int group, const int **steps);
/* Median seconds of each stage alone (after `runs` >= 1 timed runs of the
 * whole plan; stage_s gets ob_rt_par_stage_count entries), what a measured
 * stage cost reads. */
OB_API ob_status ob_rt_par_profile(ob_rt_par *p, int runs, double *stage_s);

/* ---- the vm executor: shapes given per request ------------------------------- */
/* A model whose batch size or sequence length is only known at run time, as
 * TVM's VM serves dynamic shapes: the first request of a shape loads the
 * model at that shape (ob_model_load), runs the passes (lanes: the layout
 * plan's vector width, 0: the target's), compiles it and keeps it; later
 * requests of the shape reuse it. */
typedef struct ob_rt_vm ob_rt_vm;
/* mo and o are copied (their strings and the db, target and cores they
 * point to are borrowed). */
OB_API ob_status ob_rt_vm_new(ob_ctx *ctx, const ob_model_opts *mo, const ob_rt_opts *o, int lanes,
                              ob_rt_vm **out);
OB_API void ob_rt_vm_free(ob_rt_vm *vm); /* accepts NULL */
/* The compiled model for (batch, seqlen) (seqlen 0: the model's default):
 * *rt is owned by the vm; *compiled (may be NULL) tells whether this call
 * compiled it. */
OB_API ob_status ob_rt_vm_get(ob_rt_vm *vm, int64_t batch, int64_t seqlen, ob_rt **rt, bool *compiled);
OB_API int ob_rt_vm_count(const ob_rt_vm *vm); /* shapes compiled so far */

#ifdef __cplusplus
}
#endif
#endif
