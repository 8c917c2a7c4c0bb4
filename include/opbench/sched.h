/* sched: inter-operator scheduling, as IOS (Ding et al., MLSys 2021) does
 * it, on the cores of a CPU. A model's operators (after the graph passes)
 * become scheduling units; a schedule is a sequence of stages separated by
 * barriers; a stage either merges convolutions that read the same input
 * into one wider convolution, or runs groups of units concurrently, each
 * group's units in order on its own set of cores (how the cores are split
 * among the groups is part of the schedule). Schedulers: sequential (each
 * unit on all cores), greedy (every ready unit at once, cores split
 * evenly) and IOS's dynamic program over the sets of units not yet
 * scheduled, with its r/s pruning, its merge endings, the fix of its known
 * flaw (units feeding a common consumer may share a group with it) and the
 * core split searched with each parallel ending.
 *
 * Stage costs come through a small vtable (ob_stage_cost_i) keyed, in the
 * scheduler's cache, by the stage's structure (the units' workloads and the
 * core split, not which units they are). Provided here: a predicted model
 * from per-unit latencies at k threads (a callback: tests use tables, the
 * command line a FLOPs model) with a co-run slowdown factor per pair of
 * unit kinds. A measured model (each distinct stage run on the machine)
 * plugs into the same vtable once the graph runtime exists.
 *
 * Ownership: units, schedules and cost models are freed by their _free
 * (NULL accepted). A units object built from a graph keeps pointers into
 * it: the graph must outlive it. */
#ifndef OPBENCH_SCHED_H
#define OPBENCH_SCHED_H

#include "opbench/core.h"
#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/ops.h"
#include "opbench/predict.h"
#include "opbench/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The DP's states are bitmasks of one part's units. */
#define OB_SCHED_MAX_PART 64

/* ---- scheduling units ------------------------------------------------------------ */
/* What a unit mostly does; co-run slowdown factors are given per pair. */
typedef enum ob_sched_kind {
  OB_SCHED_KIND_CONV = 0, /* convolutions (a separable conv's unit too) */
  OB_SCHED_KIND_DWCONV,   /* a depthwise convolution alone */
  OB_SCHED_KIND_MATMUL,   /* Dense, Gemm, MatMul, LSTM */
  OB_SCHED_KIND_POOL,     /* max, average and global pooling */
  OB_SCHED_KIND_ELEMWISE, /* elementwise, data movement and the rest */
  OB_SCHED_KIND_COUNT
} ob_sched_kind;
OB_API const char *ob_sched_kind_name(ob_sched_kind k);

/* One graph node of a unit as a cost model sees it. */
typedef struct ob_sched_node_desc {
  ob_gop op;
  bool has_workload; /* wl is what a kernel of the operator library runs */
  ob_workload wl;
  double flops;      /* ob_workload_flops, else one per output element */
  double bytes;      /* bytes of the inputs, weights and outputs */
} ob_sched_node_desc;

/* A unit (or a merged convolution) as a cost model sees it. Units whose
 * keys are equal do the same work: caches may key on it. */
typedef struct ob_sched_op_desc {
  const char *key;
  ob_sched_kind kind;
  double flops, bytes; /* sums over the nodes */
  int nnodes;
  const ob_sched_node_desc *nodes; /* in execution order */
} ob_sched_op_desc;

typedef struct ob_sched_units ob_sched_units;

/* Units of a graph whose shapes are known (run ob_graph_optimize first:
 * the units are "operators after the passes"). A node that only feeds one
 * other node and is cheap (elementwise, data movement, or a depthwise conv
 * feeding a conv) joins that node's unit, as IOS's compound operators
 * (ReLU + separable conv) do; the rest are units of their own, named by
 * their last node. Blocks are cut where one tensor crosses (IOS's blocks);
 * a block of more than max_part units (1..64; 0: 64) is cut again at the
 * places where the fewest tensors cross, until every part fits. */
OB_API ob_status ob_sched_units_from_graph(ob_ctx *ctx, const ob_graph *g, int max_part, ob_sched_units **out);
/* Units by hand (tests, other front ends): add them in a topological order
 * (preds are earlier ids), then finish, which cuts blocks where one tensor
 * crosses (blocks false: one block) and parts of at most max_part. A
 * non-empty merge_key marks a unit that may merge with the others of the
 * same key: its op must be one node with a conv2d workload (merging sums
 * their output channels). op is copied. */
OB_API ob_status ob_sched_units_new(ob_ctx *ctx, const char *model, ob_sched_units **out);
OB_API ob_status ob_sched_units_add(ob_sched_units *u, const char *name, const ob_sched_op_desc *op,
                                    const char *merge_key, int npred, const int *preds, int *id);
OB_API ob_status ob_sched_units_finish(ob_sched_units *u, int max_part, bool blocks);
OB_API void ob_sched_units_free(ob_sched_units *u);

OB_API const char *ob_sched_units_model(const ob_sched_units *u);
OB_API int ob_sched_units_count(const ob_sched_units *u);
OB_API const char *ob_sched_unit_name(const ob_sched_units *u, int i);
OB_API int ob_sched_unit_find(const ob_sched_units *u, const char *name); /* -1 if none */
OB_API const ob_sched_op_desc *ob_sched_unit_op(const ob_sched_units *u, int i);
/* Predecessor units (distinct, ascending); returns their number. */
OB_API int ob_sched_unit_preds(const ob_sched_units *u, int i, const int **preds);
/* Graph nodes of a unit from a graph, in order (the last names it). */
OB_API int ob_sched_unit_nodes(const ob_sched_units *u, int i, const int **nodes);
OB_API const char *ob_sched_unit_merge_key(const ob_sched_units *u, int i); /* "" if none */
OB_API int ob_sched_units_blocks(const ob_sched_units *u);
OB_API int ob_sched_units_parts(const ob_sched_units *u);
/* Units [first, first + n) form part p. */
OB_API void ob_sched_units_part(const ob_sched_units *u, int p, int *first, int *n);

/* ---- stage descriptions and costs ---------------------------------------------------- */
typedef enum ob_sched_stage_kind {
  OB_SCHED_STAGE_PARALLEL = 0, /* groups run concurrently on disjoint core sets */
  OB_SCHED_STAGE_MERGE,        /* one merged convolution on the stage's cores */
  OB_SCHED_STAGE_KIND_COUNT
} ob_sched_stage_kind;

typedef struct ob_sched_group_desc {
  int nops;
  const ob_sched_op_desc *const *ops; /* run in this order */
  int cores;                          /* how many cores the group holds */
  double seconds;                     /* out: the group's time if the model says, else -1 */
} ob_sched_group_desc;

/* A stage as the scheduler hands it to a cost model: groups sorted by
 * structure (so equal stages look the same); a merge stage is one group
 * holding the merged convolution. */
typedef struct ob_sched_stage_desc {
  ob_sched_stage_kind kind;
  int ngroups;
  ob_sched_group_desc *groups;
  int machine_cores; /* the cores planned for */
} ob_sched_stage_desc;

/* A stage-cost model. cost: the seconds of the stage as described (each
 * group on groups[i].cores cores); it may set groups[i].seconds. The cost
 * of a stage must depend only on its structure (each group's op keys in
 * order and core count), never on which units they are: the scheduler
 * caches by structure. best_split (optional, NULL: the scheduler tries
 * every split itself): the split of machine_cores among the groups (each
 * >= 1, all used) with the least cost, written to groups[i].cores, and that
 * cost. free releases self (NULL accepted). */
typedef struct ob_stage_cost_i {
  const char *name;
  bool predicted; /* costs are a model's predictions, not measurements */
  ob_status (*cost)(void *self, ob_sched_stage_desc *stage, double *seconds);
  ob_status (*best_split)(void *self, ob_sched_stage_desc *stage, double *seconds);
  void (*free)(void *self);
  /* optional: what this instance is, for outputs (NULL: name) */
  const char *(*describe)(const void *self);
} ob_stage_cost_i;

typedef struct ob_stage_cost {
  const ob_stage_cost_i *vt;
  void *self;
} ob_stage_cost;
OB_API void ob_stage_cost_free(ob_stage_cost *c); /* frees self, leaves *c zeroed */

/* Latency of one unit (or merged conv) at `threads` threads, seconds. */
typedef ob_status (*ob_sched_latency_fn)(void *user, const ob_sched_op_desc *op, int threads, double *seconds);

/* The predicted model: a group's time is the sum of its units' latencies
 * at the group's core count, times the largest co-run factor between its
 * units' kinds and those of the other groups of the stage (1 when it runs
 * alone); a stage lasts as long as its slowest group, plus barrier_s. Its
 * best_split is exact for this model (a DP over groups and cores). */
typedef struct ob_sched_predict_opts {
  ob_sched_latency_fn latency;
  void *user;
  /* slowdown of a unit of kind a while a unit of kind b runs on other
   * cores; entries below 1 (0: unset) count as 1 */
  double corun[OB_SCHED_KIND_COUNT][OB_SCHED_KIND_COUNT];
  double barrier_s;
  const char *name; /* describes the model in outputs; NULL: "predicted" */
} ob_sched_predict_opts;
/* Latencies are cached per (unit key, threads): the callback sees each once. */
OB_API ob_status ob_stage_cost_predicted(ob_ctx *ctx, const ob_sched_predict_opts *o, ob_stage_cost *out);

/* A simple per-unit latency model, until measured latencies exist: per
 * node, overhead_s + sync_s * (k - 1) + max(flops / (gflops_per_core *
 * k^efficiency), bytes / (gbps_per_core * k^efficiency)) at k threads (the
 * sync term: a parallel loop's fork and join, which small operators feel). */
typedef struct ob_sched_flops_model {
  double gflops_per_core, gbps_per_core, efficiency, overhead_s, sync_s;
} ob_sched_flops_model;
/* 20 GFLOP/s, 8 GB/s, 0.9, 2 us, 2 us */
OB_API ob_sched_flops_model ob_sched_flops_model_default(void);
/* An ob_sched_latency_fn; user is an ob_sched_flops_model. */
OB_API ob_status ob_sched_flops_latency(void *user, const ob_sched_op_desc *op, int threads, double *seconds);

/* Per-unit latencies from a trained predictor (predict.h): each node with
 * an operator-library workload whose kind the predictor knows is
 * predicted at k threads on k cores with its default config for `target`;
 * any other node (or one the predictor refuses) costs what `fallback`
 * says. The counters tell how many nodes took which way. */
typedef struct ob_sched_predictor_model {
  ob_predictor *predictor; /* borrowed */
  const ob_target *target; /* borrowed; NULL: the host default */
  /* the measured limits of the host the costs are for (borrowed; NULL:
   * none): the predictor was trained with them in its inputs, so a node is
   * described as its training points were (ob_predict_point_limits) */
  const ob_db_host_limits *limits;
  const char *host; /* fingerprint whose limits apply; NULL: any */
  ob_sched_flops_model fallback;
  int64_t predicted, fallbacks; /* out: nodes costed each way */
} ob_sched_predictor_model;
/* An ob_sched_latency_fn; user is an ob_sched_predictor_model. */
OB_API ob_status ob_sched_predictor_latency(void *user, const ob_sched_op_desc *op, int threads, double *seconds);
/* The measured model: each stage the scheduler asks about is run on this
 * machine by the graph runtime's stage executor, its groups' units as a
 * subset of rt (compiled from the graph the units came from, run once in
 * full before, so the stage's inputs hold real values; ob_rt_par_new_subset
 * re-places rt's memory) on consecutive cores of the split, and timed with
 * t (NULL: the defaults); the median is the cost. Merge stages fail
 * (OB_ERR_UNSUPPORTED): plan without merges (ob_sched_opts.merge off). u and
 * rt are borrowed. */
OB_API ob_status ob_stage_cost_measured(ob_ctx *ctx, const ob_sched_units *u, ob_rt *rt, const ob_timing_opts *t,
                                        ob_stage_cost *out);
/* Stages measured so far and (seconds, may be NULL) the time spent; 0 for
 * another model. */
OB_API int64_t ob_stage_cost_measured_count(const ob_stage_cost *c, double *seconds);

/* Stage costs corrected by whole runs (context.c). A stage measured alone
 * and repeated is not that stage inside a run: there its inputs were just
 * written by other cores, its weights were evicted since the last run, and
 * it starts on a barrier. This model gives base's cost (cached here by
 * structure, so planning again measures nothing again) unless the stage
 * was seen inside whole runs (ob_sched_learn_run), then the mean of its
 * in-run times. base is borrowed and must outlive *out. */
OB_API ob_status ob_stage_cost_in_context(ob_ctx *ctx, ob_stage_cost *base, ob_stage_cost *out);
/* Distinct stages with in-run times so far (0 for another model). */
OB_API int64_t ob_stage_cost_in_context_learned(const ob_stage_cost *c);
/* Teaches c (an in-context model) the stages of s as they ran inside whole
 * runs: stage_s[i] the seconds of stage i (ob_rt_par_profile of s
 * compiled, its own stages only); s's stage costs become those times. */
typedef struct ob_schedule ob_schedule;
OB_API ob_status ob_sched_learn_run(ob_ctx *ctx, ob_stage_cost *c, const ob_sched_units *u, ob_schedule *s,
                                    const double *stage_s);
/* Runs s on the machine, whole: stage_s gets each of its stages' seconds
 * inside the runs (ob_schedule_stage_count entries). */
typedef ob_status (*ob_sched_run_fn)(void *user, const ob_schedule *s, double *stage_s);
typedef struct ob_sched_opts ob_sched_opts;
typedef struct ob_sched_stats ob_sched_stats;
/* IOS planned in context: plan with c (an in-context model), run the plan
 * (run), learn its stages' in-run times, plan again, until a plan repeats
 * or max_plans plans were made (the last one is not run). plans (at least
 * max_plans entries) gets every distinct plan in order, the last the final
 * one; the caller frees them. stats: the first DP's, with the whole time. */
OB_API ob_status ob_sched_ios_in_context(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o,
                                         ob_stage_cost *c, int max_plans, ob_sched_run_fn run, void *user,
                                         ob_schedule **plans, int *nplans, ob_sched_stats *stats);

/* ---- the predicted cost from the database (records.c) ------------------------------------ */
/* Per-unit latencies from the database's per-operator profile records
 * (ob_db_profile, as `opbench profile` and ob_sched_record_runtime store
 * them): a node with an operator-library workload costs the median of the
 * record of host, target, its workload, its default template and config,
 * at "threads=k;cores=0,..,k-1", alone (no co-runner, no cache pressure);
 * any other node, or one without a record, costs what `fallback` says. The
 * counters tell how many nodes took which way (the predicted model caches
 * per unit and thread count, so each unit is asked once per k). */
typedef struct ob_sched_db_model {
  ob_db *db;               /* borrowed */
  const char *host;        /* fingerprint (ob_host_detect) */
  const ob_target *target; /* borrowed */
  ob_sched_flops_model fallback;
  int64_t recorded, fallbacks; /* out: nodes costed each way */
} ob_sched_db_model;
/* An ob_sched_latency_fn; user is an ob_sched_db_model. */
OB_API ob_status ob_sched_db_latency(void *user, const ob_sched_op_desc *op, int threads, double *seconds);
/* The records ob_sched_db_latency reads, from the runtime itself: rt (a
 * model compiled with `threads` threads on cores 0..threads-1, default
 * kernel configs or the database's) is profiled step by step
 * (ob_rt_profile, `runs` runs) and each kernel step's median stored as a
 * profile record (sweep "runtime") under its workload, template, config and
 * those resources. A record already there is kept unless replace. *stored
 * (may be NULL): how many were written. */
OB_API ob_status ob_sched_record_runtime(ob_ctx *ctx, ob_rt *rt, int threads, ob_db *db, const char *host,
                                         const ob_target *target, int runs, bool replace, int64_t *stored);

/* Co-run slowdown factors per pair of unit kinds (0: not measured). */
typedef struct ob_sched_corun_table {
  double f[OB_SCHED_KIND_COUNT][OB_SCHED_KIND_COUNT];
} ob_sched_corun_table;
/* Measures the pairs of kinds that u has and t lacks, each once: of the
 * pairs of units of the two kinds that can share a stage (neither reads
 * from the other), the one whose smaller FLOPs are the largest, timed by
 * the stage executor alone on one core and together on two disjoint cores
 * (rt: compiled from u's graph, run once); the factor is the pair's stage
 * time over the longer alone time. A pair of kinds the model has no such
 * units for stays unset (1 in the predicted model). *measured: the pairs
 * measured now. */
OB_API ob_status ob_sched_corun_measure(ob_ctx *ctx, const ob_sched_units *u, ob_rt *rt, const ob_timing_opts *timing,
                                        ob_sched_corun_table *t, int *measured);
/* The cache file: "opbench-corun 1", "host FINGERPRINT", then lines
 * "KIND KIND FACTOR". A missing file or another host's: *found false and
 * an empty table (not an error); a malformed one: OB_ERR_PARSE naming the
 * file and line. Written whole or not at all. */
OB_API ob_status ob_sched_corun_read(ob_ctx *ctx, const char *path, const char *host, ob_sched_corun_table *t,
                                     bool *found);
OB_API ob_status ob_sched_corun_write(ob_ctx *ctx, const char *path, const char *host, const ob_sched_corun_table *t);

/* Measures each candidate with fn (end to end, the caller's way; i is
 * the candidate's index) and gives the index of the fastest in *best (the
 * first of equals), so that a slow episode of the machine cannot favour
 * one: `rounds` rounds, each measuring every candidate once in turn (the
 * order turned by one each round), and each candidate's median over the
 * rounds compared. max_s > 0 bounds the time: after the first round,
 * another only when one more like the last still fits
 * (*rounds_done, may be NULL, says how many ran). prefer names baselines
 * (sequential and greedy: IOS's space holds both); the fastest of them
 * is the incumbent (by median, then by pairs of neighbours in time against
 * each other one). Against it, each other candidate is judged
 * by its samples paired with the incumbent's nearest in time
 * (ob_sched_paired_ratio: the host drifts between modes lasting about a
 * second, so medians taken apart differ by luck); it replaces the
 * incumbent only when clearly faster: that ratio below 1 - margin and
 * faster than its neighbour in at least two thirds of its samples, and in
 * more than a fair coin would win 1 time in 5 (a pick among near-equals is
 * won by noise); of those, the lowest ratio wins. A candidate equal to
 * an earlier one (ob_schedule_same) is not measured: it takes that one's
 * samples. seconds (n entries, may be NULL) gets every candidate's median.
 * A failing measurement fails the call, naming the candidate. */
#define OB_SCHED_PICK_MAX_PREFER 8
typedef struct ob_sched_pick_opts {
  int rounds;    /* (< 1: 1) */
  double max_s;  /* <= 0: no bound */
  int nprefer;   /* baselines named in prefer (0: none) */
  int prefer[OB_SCHED_PICK_MAX_PREFER];
  double margin; /* 0 <= margin < 1 */
  /* > 0: from the third round on, a candidate every one of whose samples
   * so far was slower than the leader's nearest by more than drop (x >
   * (1 + drop) x the leader's) is measured no more; its median and ratios
   * are over the rounds it ran. The leader: the incumbent so far, or
   * without baselines the fastest median so far; a baseline is never
   * dropped while it leads. Time bounded by max_s goes to the candidates
   * still in the running. 0: every candidate in every round. */
  double drop;
} ob_sched_pick_opts;
OB_API ob_sched_pick_opts ob_sched_pick_opts_default(void); /* 5 rounds, no bound, no incumbent */
typedef struct ob_schedule ob_schedule;
typedef ob_status (*ob_sched_measure_fn)(void *user, int i, const ob_schedule *s, double *seconds);

/* a's latency over b's by pairs of neighbours in time: the square root of
 * (the median over a's samples of each over b's sample nearest in time) over
 * (the same of b's samples over a's), so that the ratio of b to a is the
 * inverse (a_at, b_at: the samples' midpoints, ob_now_s; the earlier of two
 * as near); *wins (may be NULL): how many of a's samples were below their
 * neighbour. A ratio of two schedules' speeds that a drift of the whole
 * machine, shared by neighbours, does not move. NAN without samples. */
OB_API double ob_sched_paired_ratio(int na, const double *a_s, const double *a_at, int nb, const double *b_s,
                                    const double *b_at, int *wins);

/* ---- schedules ------------------------------------------------------------------------ */
OB_API ob_status ob_sched_pick_measured(ob_ctx *ctx, int n, ob_schedule *const *cands, const ob_sched_pick_opts *o,
                                        ob_sched_measure_fn fn, void *user, double *seconds, int *best,
                                        int *rounds_done);

/* An empty schedule for `cores` cores (builders: schedulers, parsers, tests). */
OB_API ob_status ob_schedule_new(ob_ctx *ctx, int cores, ob_schedule **out);
OB_API void ob_schedule_free(ob_schedule *s);
/* Appends a stage, then groups to the last stage (a merge stage has one
 * group: the merged units in channel order and the stage's cores). */
OB_API ob_status ob_schedule_add_stage(ob_schedule *s, ob_sched_stage_kind kind);
OB_API ob_status ob_schedule_add_group(ob_schedule *s, int nops, const int *ops, int ncores, const int *cores);

OB_API int ob_schedule_cores(const ob_schedule *s);
OB_API int ob_schedule_stage_count(const ob_schedule *s);
OB_API ob_sched_stage_kind ob_schedule_stage_kind(const ob_schedule *s, int stage);
OB_API int ob_schedule_group_count(const ob_schedule *s, int stage);
OB_API int ob_schedule_group_ops(const ob_schedule *s, int stage, int group, const int **ops);
OB_API int ob_schedule_group_cores(const ob_schedule *s, int stage, int group, const int **cores);
/* Costs as the last scheduler or ob_schedule_cost left them; -1 unknown. */
OB_API double ob_schedule_stage_seconds(const ob_schedule *s, int stage);
OB_API double ob_schedule_group_seconds(const ob_schedule *s, int stage, int group);
OB_API double ob_schedule_seconds(const ob_schedule *s);
/* The same program: equal core counts and stages (kinds, groups in
 * order, each group's units in order and cores); costs and names aside. */
OB_API bool ob_schedule_same(const ob_schedule *a, const ob_schedule *b);
/* Who made it ("sequential", "greedy", "ios"; a file's own) and with what cost model. */
OB_API const char *ob_schedule_scheduler(const ob_schedule *s);
OB_API const char *ob_schedule_cost_name(const ob_schedule *s);

/* Every unit exactly once; each unit after its predecessors (an earlier
 * stage, or earlier in its own group); groups of a stage on disjoint core
 * sets of at least one core each, all below machine_cores; a merge stage's
 * units mergeable together (same merge key). OB_ERR_INVALID_ARG naming the
 * stage (from 1), the group and the operator at fault. */
OB_API ob_status ob_schedule_validate(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, int machine_cores);
/* Costs every stage with the model as the schedule splits its cores (no
 * split search), stores stage and group seconds, returns the sum. */
OB_API ob_status ob_schedule_cost(ob_ctx *ctx, const ob_sched_units *u, ob_schedule *s, ob_stage_cost *cost,
                                  double *seconds);

/* JSON: {"format":"opbench-schedule","version":1,"model":...,"units":N,
 * "cores":N,"scheduler":...,"cost":...,"predicted":true,"seconds":...,
 * "stages":[{"kind":"parallel","seconds":...,"groups":[{"cores":[0],
 * "ops":["name",...],"seconds":...}]},{"kind":"merge","cores":[0,1],
 * "ops":[...]}]} with units named as ob_sched_unit_name. */
OB_API ob_status ob_schedule_to_json(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_str *out);
/* Parses and validates (as ob_schedule_validate) a schedule for these
 * units; `what` names the input in messages ("FILE: stage 3, group 2:
 * ..."). A file for another graph, an unknown operator, one scheduled
 * twice or never, overlapping or out-of-range core sets: OB_ERR_INVALID_ARG;
 * malformed JSON: OB_ERR_PARSE. */
OB_API ob_status ob_schedule_from_json(ob_ctx *ctx, const ob_sched_units *u, const char *text, const char *what,
                                       int machine_cores, ob_schedule **out);
/* The same from a file (bounded read), and writing one (never over an input). */
OB_API ob_status ob_schedule_read(ob_ctx *ctx, const ob_sched_units *u, const char *path, int machine_cores,
                                  ob_schedule **out);
OB_API ob_status ob_schedule_write(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, const char *path);

/* Rewrites g (the graph the units came from) with the schedule's merge
 * stages applied (ob_graph_merge_convs); the units must not be used with g
 * afterwards (node ids move). */
OB_API ob_status ob_schedule_apply_merges(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_graph *g);

/* Draws the schedule as an SVG timeline with gnuplot (run as a program):
 * time across, cores up, one bar per group over its cores for its time
 * within its stage. Needs stage costs. gnuplot missing or failing:
 * OB_ERR_UNSUPPORTED / OB_ERR_IO saying so; the output is written as
 * ob_out_open writes (never half a file). */
OB_API ob_status ob_schedule_timeline(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, const char *path,
                                      const char *title);

/* ---- running a schedule ------------------------------------------------------------------ */
/* The schedule as the graph runtime runs it: g (the graph the units came
 * from, after the passes) gets the schedule's merges (the units must not
 * be used with it afterwards) and, when there were any and lanes > 0, its
 * layout planned again; it is compiled with o (threads and cores of its
 * sequential run) into *rt, and the stages (each group's units' nodes on
 * its cores; a merge stage runs the merged convolution and its slices) are
 * started on it as *par (ob_rt_par_new). Free *par, then *rt, then g. */
OB_API ob_status ob_schedule_compile(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_graph *g,
                                     int lanes, const ob_rt_opts *o, ob_rt **rt, ob_rt_par **par);

/* Times a schedule without merge stages on rt, compiled from the graph the
 * units came from (node ids as the units hold them): its stages started on
 * rt (ob_rt_par_new: rt's memory is placed again), run once, timed with t
 * (NULL: the defaults), stopped; *seconds gets the median. Merge stages:
 * OB_ERR_UNSUPPORTED (those need ob_schedule_compile). Measuring several
 * candidate schedules this way compiles the model once. */
OB_API ob_status ob_schedule_time_on(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_rt *rt,
                                     const ob_timing_opts *t, double *seconds);

/* The same schedule's stages timed inside `runs` whole runs on rt
 * (ob_rt_par_profile): stage_s[i] the median seconds of stage i
 * (ob_schedule_stage_count entries; a prologue stage the runtime adds for
 * a graph input's conversion is left out). What ob_sched_learn_run takes. */
OB_API ob_status ob_schedule_profile_on(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_rt *rt, int runs,
                                        double *stage_s);

/* The same schedule run by stages on rt against rt's sequential run: the
 * outputs must agree (1e-5), else OB_ERR_WRONG_ANSWER naming it. */
OB_API ob_status ob_schedule_check_on(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_rt *rt);

/* A schedule compiled once to be timed many times, as its own program
 * (measuring candidates in interleaved rounds, final latencies): g (taken:
 * freed with the result, even on failure) is the model loaded and passed
 * afresh; its units (max_part as ob_sched_units_from_graph) take the
 * schedule planned on u by its JSON (units named), it is compiled
 * (ob_schedule_compile, merges applied), run sequentially and by stages,
 * and the two outputs compared (1e-5: OB_ERR_WRONG_ANSWER naming the
 * schedule otherwise). time: ob_rt_par_time's median with t (NULL: the
 * defaults). rt: the compiled model (its sequential run, ob_rt_time). */
typedef struct ob_sched_compiled ob_sched_compiled;
OB_API ob_status ob_sched_compiled_new(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_graph *g,
                                       int max_part, int lanes, const ob_rt_opts *o, ob_sched_compiled **out);
OB_API ob_status ob_sched_compiled_time(ob_sched_compiled *c, const ob_timing_opts *t, double *seconds);
OB_API ob_rt *ob_sched_compiled_rt(const ob_sched_compiled *c);
OB_API ob_rt_par *ob_sched_compiled_par(const ob_sched_compiled *c);
OB_API void ob_sched_compiled_free(ob_sched_compiled *c); /* accepts NULL */

/* ---- schedulers ----------------------------------------------------------------------- */
struct ob_sched_opts {
  int cores;         /* cores to plan for (>= 1) */
  int r;             /* IOS: most units in a group (default 3) */
  int s;             /* IOS: most groups in a stage (default 8; never more than cores) */
  bool merge;        /* IOS: merge endings (default on) */
  bool parallel;     /* IOS: parallel endings (default on; off: merges and single units) */
  bool ios_original; /* IOS's own endings: groups are one unit's descendants and never
                        overlap (default off: overlapping groups merge, the fix) */
  int64_t max_splits; /* core splits tried per stage when the cost model has no
                         best_split; more is an error (default 100000) */
  /* IOS: a cheaper model (a predicted one) that decides which endings the
   * cost model is asked about (NULL: every ending is). The guide runs its
   * own DP over the same states; an ending whose guide total (its stage
   * plus the guide's best for the rest) exceeds the guide's best for the
   * state by more than guide_slack (0.1: 10 %) is never costed: with a
   * measured cost model, only the stages the prediction says could be
   * competitive for a state are measured. The guide's best ending of each
   * state is always costed, so a schedule is always found. Borrowed. */
  ob_stage_cost *guide;
  double guide_slack;
};
OB_API ob_sched_opts ob_sched_opts_default(void); /* cores 1, r 3, s 8 */

struct ob_sched_stats {
  int64_t states;        /* DP states (sets of units left), over all parts */
  int64_t transitions;   /* endings evaluated */
  int64_t stages_costed; /* distinct stages (by structure) costed: cache misses */
  int64_t cache_hits;    /* stage costs found in the cache */
  int64_t cost_calls;    /* calls into the cost model (cost or best_split) */
  double state_bound;    /* IOS's bound: sum over parts of the product over chains of (length + 1) */
  int64_t pruned;        /* endings the guide ruled out (never costed) */
  int64_t guide_states, guide_stages; /* the guide DP's states and distinct stages */
  int blocks, parts, max_part;
  double seconds;        /* optimisation time */
};

/* Each fills *out (a new schedule with stage and group costs) and *stats
 * (may be NULL). */
OB_API ob_status ob_sched_sequential(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, ob_stage_cost *cost,
                                     ob_schedule **out, ob_sched_stats *stats);
OB_API ob_status ob_sched_greedy(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, ob_stage_cost *cost,
                                 ob_schedule **out, ob_sched_stats *stats);
OB_API ob_status ob_sched_ios(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, ob_stage_cost *cost,
                              ob_schedule **out, ob_sched_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
