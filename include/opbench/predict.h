/* predict: latency predictors learned from the database's records, in the
 * manner of nn-Meter (per-kernel predictors) and TenSet (cost models that
 * rank schedules), but aware of threads, core sets, cache pressure and
 * co-runners, plus the game that places concurrent operators.
 *
 *  - features: one fixed-length vector per measured point (workload,
 *    config through the tuner's loop-nest features, resources, the host's
 *    measured limits); OB_PREDICT_SCHEMA versions its layout;
 *  - datasets: the error-free, non-emulated measurements and solo profile
 *    points of a database, each with its features and label;
 *  - predictors: per operator kind, an ensemble of XGBoost regressors of
 *    log(seconds / roofline bound) trained on groups of workloads (each member leaves
 *    a fold of workloads out, which also gives the out-of-fold error the
 *    confidence interval uses); one model file holds the kinds, the co-run
 *    interference model and the schema version;
 *  - evaluation: held-out splits by workload or by model (never by random
 *    rows), TenSet's and nn-Meter's metrics;
 *  - analysis: Pearson / Spearman correlation of latency with features per
 *    operator kind, the thread-count turnaround;
 *  - interference: slowdown of A beside B ("stream": disjoint cores,
 *    "full": the same cores) from co-run profile points;
 *  - placement: k operators as players choosing core counts; pure Nash
 *    equilibria by best-response dynamics and by exhaustive check, the
 *    social optimum (least makespan) and the price of anarchy.
 *
 * Ownership: objects are freed by their _free (NULL accepted). */
#ifndef OPBENCH_PREDICT_H
#define OPBENCH_PREDICT_H

#include "opbench/core.h"
#include "opbench/db.h"
#include "opbench/ops.h"
#include "opbench/profile.h"
#include "opbench/runtime.h"
#include "opbench/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- features (features.c) ---------------------------------------------------------
 * Schema 3 (schema 2's features plus the analytical tiling terms; the label
 * is now relative to the analytical time, see ob_predict_bound), in this
 * order (log2 means log2(1 + x); NAN: unknown, which XGBoost treats as
 * missing):
 *   0..23   the workload's attributes in the operator's order, log2
 *   24..26  log2 FLOPs, log2 bytes of the arguments, log2 arithmetic intensity
 *   27      template index among the operator's templates
 *   28..30  threads, cores in the core set, cache pressure (MiB)
 *   31..32  log2 of the host's measured FMA peak (GFLOP/s) at the thread count
 *           and of its memory bandwidth (GB/s), from the db's host limits
 *   33..34  epilogue steps, the target's ISA (ob_isa)
 *   35      log2 of the analytical seconds (ob_predict_analytic_s; plain log2)
 *   36..38  the tiling's work ratio, lane utilisation, inner-step efficiency
 *   39..41  log2 parallel chunks, load imbalance, log2 chunks of the busiest thread
 *   42..43  log2 reduction length per output, log2 bytes of one chunk's weights
 *   44      log2 bytes all chunks read (ob_predict_tiling.traffic_bytes)
 *   45      log2 bandwidth (GB/s) of the cache level that holds the
 *           arguments (ob_predict_cache_bandwidth), the analytical time's
 *   46..    the tuner's itervar (loop-nest) features of the config, see tune.h */
#define OB_PREDICT_SCHEMA 3
#define OB_PREDICT_BASE_FEATURES 46
#define OB_PREDICT_NFEAT (OB_PREDICT_BASE_FEATURES + OB_FEATURE_ITERVAR_LEN)

/* ---- analytical base (analytic.c) ----------------------------------------------------
 * What a config's tiling makes of the work, for the register-blocked
 * templates (conv2d_NCHWc.x86, dense_pack.x86, batch_matmul_pack.x86):
 * known false elsewhere (the roofline alone). */
typedef struct ob_predict_tiling {
  bool known;
  double work_ratio;        /* work computed (whole blocks, padded panels, less the
                               padding taps a kernel skips) over the nominal work */
  double lane_util;         /* share of the vector lanes carrying data */
  double step_eff;          /* the inner step's FMA share of its cycles (loads, FMA latency) */
  int64_t chunks;           /* parallel chunks of the outer fused loop */
  double chunks_per_thread; /* of the busiest thread */
  double imbalance;         /* busiest thread's chunks x threads / chunks (1: even) */
  double reduction;         /* multiply-adds per output element */
  double block_bytes;       /* weights one chunk reads */
  double traffic_bytes;     /* bytes all chunks read (weights or panel, input rows) */
} ob_predict_tiling;

OB_API void ob_predict_tiling_of(const ob_workload *wl, const char *tmpl, const ob_config *cfg, int lanes,
                                 int threads, ob_predict_tiling *t);
/* Seconds: the busiest thread's share of the padded work at its share of
 * the peak, times lanes and inner-step efficiency, or the memory time when
 * longer (bytes / bandwidth); the roofline when t is NULL or unknown. peak
 * and bandwidth <= 0 or NAN: a nominal 50 GFLOP/s per thread and 20 GB/s. */
OB_API double ob_predict_analytic_s(const ob_predict_tiling *t, double flops, double bytes, double peak_gflops,
                                    double bandwidth_gbps, int threads);

/* A point to describe. task and cfg give the loop-nest features (task NULL:
 * those are NAN). */
typedef struct ob_predict_point {
  const ob_workload *wl;
  struct ob_task *task; /* of wl; borrowed */
  const ob_config *cfg;
  int threads, ncores;
  double pressure_mib;
  double peak_gflops, bandwidth_gbps; /* NAN: unknown */
  double cache_gbps;  /* bandwidth of the cache level holding the arguments;
                         <= 0 or NAN: unknown (bandwidth_gbps serves) */
} ob_predict_point;

/* Features into out[OB_PREDICT_NFEAT]. A config that does not lower gets
 * NAN loop-nest features (not an error). */
OB_API ob_status ob_predict_features(ob_ctx *ctx, const ob_predict_point *p, float *out);
/* "attr0".."attr23", "log2_flops", ..., "itervar0"...; i in [0, NFEAT). */
OB_API const char *ob_predict_feature_name(int i, char *buf, size_t cap);
/* Bytes of the workload's arguments (float32). */
OB_API double ob_predict_workload_bytes(const ob_workload *wl);
/* The base the label is relative to: the analytical seconds of feature 35
 * when known, else max(FLOPs / peak, bytes / bandwidth) from the features
 * (nominal limits where the db held none). Schema 3 predicts log(seconds /
 * base): a ratio to what the tiling allows extrapolates to new shapes
 * better than seconds, and a ratio to the plain roofline (schema 2) left
 * the trees to learn the tiling waste from the loop-nest features. */
OB_API double ob_predict_bound(const float *x, double flops);

/* The host's limits from the database for the features: the FMA peak of
 * `isa` at `threads` (the nearest thread count at or below, scaled
 * linearly) and the memory bandwidth (mem_triad, nearest at or below); NAN
 * where the db holds none. */
OB_API void ob_predict_host_limits(const ob_db_host_limits *l, const char *host, const char *isa,
                                   int threads, double *peak_gflops, double *bandwidth_gbps);

/* The read bandwidth of the smallest cache level that holds `bytes` (the
 * db's l1_read, l2_read, l3_read limits at the nearest thread count at or
 * below; a level's capacity is 2x (L1, L2) or 4x (L3) the bytes its limit
 * was measured with, as the profiler sizes them); the memory bandwidth
 * beyond them; NAN when the db holds none. */
OB_API double ob_predict_cache_bandwidth(const ob_db_host_limits *l, const char *host, int threads, double bytes);
/* Fills p's peak, memory and cache bandwidths from the db's limits of host
 * (p->wl, p->task (the ISA; NULL: none) and p->threads set). */
OB_API void ob_predict_point_limits(const ob_db_host_limits *l, const char *host, ob_predict_point *p);

/* ---- datasets (dataset.c) ---------------------------------------------------------- */
typedef struct ob_predict_sample {
  const char *op, *workload, *host, *target, *resources, *tmpl; /* in the dataset's arena */
  uint64_t config_index;
  int threads, ncores;
  double pressure_mib;
  double seconds; /* the measured median */
  double flops;
  bool from_profile;
  const ob_workload *wl; /* in the arena, shared by the points of a task */
  const float *x; /* OB_PREDICT_NFEAT features (into the dataset's x: valid
                     once loading is done) */
} ob_predict_sample;

typedef struct ob_predict_dataset {
  int64_t n;
  ob_predict_sample *s;
  int64_t skipped; /* records that could not be described (workload, target, config) */
  int64_t noisy;   /* points left out for a CV above the options' max_cv */
  ob_arena *arena;
  float *x;        /* n rows */
} ob_predict_dataset;

typedef struct ob_predict_data_opts {
  const char *op;       /* NULL: every operator */
  const char *host;     /* NULL: every host */
  bool no_profiles;     /* measurements only */
  int64_t max_records;  /* <= 0: all; else an even sample of this many */
  double max_cv;        /* > 0: leave out points whose repeats' CV is above it
                           (a measurement disturbed while it ran) */
  bool cv_profiles_only; /* max_cv applies to profile points only: a caller that
                            labels the measurement points from several rounds
                            judges each round's CV itself */
} ob_predict_data_opts;

/* The usable points of db: error-free, not emulated, with a positive
 * median (and a CV within max_cv when set); profile points without a
 * co-runner. Points whose workload,
 * target or config cannot be rebuilt are counted in skipped. */
OB_API ob_status ob_predict_dataset_load(ob_ctx *ctx, ob_db *db, const ob_predict_data_opts *o,
                                         ob_predict_dataset **out);
OB_API void ob_predict_dataset_free(ob_predict_dataset *d);

/* Held-out splits, never by random row. test[i] set for the test points.
 * By workload: fold `fold` of `nfolds` by a hash of the workload key. By
 * model: the points whose workload is a task of one of the named zoo
 * models (after the graph passes, batch 1, input_size 0: the model's own). */
OB_API void ob_predict_split_workload(const ob_predict_dataset *d, int fold, int nfolds,
                                      uint8_t *test);
OB_API ob_status ob_predict_split_models(ob_ctx *ctx, const ob_predict_dataset *d,
                                         const char *const *models, int nmodels,
                                         int64_t input_size, uint8_t *test);

/* ---- predictors (model.c) ------------------------------------------------------------- */
typedef struct ob_predictor ob_predictor;

typedef struct ob_predict_train_opts {
  int members;   /* ensemble members (folds of workloads); <= 0: 5 */
  int rounds;    /* boosting rounds; <= 0: 300 */
  int max_depth; /* <= 0: 6 */
  double eta;    /* <= 0: 0.1 */
  int nthread;   /* <= 0: 1 */
  uint64_t seed;
} ob_predict_train_opts;
OB_API ob_predict_train_opts ob_predict_train_opts_default(void);

/* One ensemble per operator kind of the points with use[i] (NULL: all).
 * OB_ERR_NOT_FOUND when no point is used. */
OB_API ob_status ob_predictor_train(ob_ctx *ctx, const ob_predict_dataset *d, const uint8_t *use,
                                    const ob_predict_train_opts *o, ob_predictor **out);
OB_API void ob_predictor_free(ob_predictor *p);
/* An empty predictor (no kinds), e.g. to hold only an interference model. */
OB_API ob_predictor *ob_predictor_new(ob_ctx *ctx);

typedef struct ob_prediction {
  double seconds;    /* exp of the members' mean */
  double lo, hi;     /* 90% interval: mean -+ 1.645 sqrt(members' variance +
                        out-of-fold variance), in log space */
} ob_prediction;

/* Predicts one point of operator `op` (features x, flops of one call).
 * OB_ERR_NOT_FOUND naming the operator and the trained kinds when the
 * predictor has none for it. */
OB_API ob_status ob_predictor_predict(ob_predictor *p, const char *op, const float *x, double flops,
                                      ob_prediction *out);
/* Operator kinds, records each was trained on, out-of-fold log RMS. */
OB_API int ob_predictor_kinds(const ob_predictor *p);
OB_API const char *ob_predictor_kind(const ob_predictor *p, int i, int64_t *records, double *sigma);

/* Model file: a header line, a JSON line (format, schema, sections with
 * their sizes, a checksum) and the boosters (XGBoost UBJSON). Loading
 * refuses, before XGBoost sees a byte: a file that is not a predictor
 * model (OB_ERR_PARSE), one of another feature schema (OB_ERR_UNSUPPORTED,
 * naming both versions), a truncated or altered one (OB_ERR_PARSE:
 * checksum). Saving never leaves half a file. */
OB_API ob_status ob_predictor_save(ob_ctx *ctx, const ob_predictor *p, const char *path);
OB_API ob_status ob_predictor_load(ob_ctx *ctx, const char *path, ob_predictor **out);

/* ---- evaluation (eval.c) ---------------------------------------------------------------- */
typedef struct ob_predict_metrics {
  int64_t n;         /* points evaluated */
  double rmspe;      /* sqrt(mean(((pred - true) / true)^2)) */
  double within10;   /* share with |pred - true| <= 10% of true */
  double mdape;      /* median of |pred - true| / true (robust to a few outliers) */
  double pairwise;   /* share of config pairs of a task ordered rightly (NAN: none) */
  double score1, score5; /* mean over tasks of best true throughput among the
                            predicted top-k over the task's best (NAN: none) */
  int64_t npairs, ntasks; /* tasks: (host, workload, target, resources) with >= 2 configs */
} ob_predict_metrics;

/* Metrics over the points with mask[i] (NULL: all), pred[i] their
 * predicted seconds. */
OB_API void ob_predict_metrics_compute(const ob_predict_dataset *d, const uint8_t *mask,
                                       const double *pred, ob_predict_metrics *out);
/* Predictions of every point (OB_ERR_NOT_FOUND when a point's kind is
 * missing and skip_unknown is false; skipped points get NAN). */
OB_API ob_status ob_predictor_predict_dataset(ob_predictor *p, const ob_predict_dataset *d,
                                              const uint8_t *mask, bool skip_unknown, double *pred);

/* ---- analysis (analysis.c) --------------------------------------------------------------- */
/* Pearson and Spearman (average ranks for ties) correlation of x and y;
 * NAN when fewer than 3 pairs or a constant series. NAN pairs are left out. */
OB_API double ob_pearson(const double *x, const double *y, int64_t n);
OB_API double ob_spearman(const double *x, const double *y, int64_t n);

/* Thread-count turnaround: lat[i] the latency at threads[i] (ascending):
 * the first thread count beyond which one more step improves latency by
 * less than `gain` (0.05: 5%); the largest count when every step gains. */
OB_API int ob_turnaround(const int *threads, const double *lat, int n, double gain);

/* ---- co-run interference (interfere.c) ----------------------------------------------------- */
/* Features of "A beside B": per side log2 FLOPs, log2 bytes, log2
 * intensity, threads, log2 latency alone (NAN: unknown); then mode (0
 * stream, 1 full) and cores shared; then the memory traffic of each side
 * (its bytes over its time alone) as a share of the host's measured
 * bandwidth at its thread count, their sum (what the two ask of the
 * memory system together), and log2 of B's latency over A's (how many of
 * B's runs overlap one of A's); last each side's FLOP rate alone over the
 * host's FMA peak at its thread count, and their product (two sides that
 * both keep the FMA units busy halve each other when the two "cores" are
 * SMT siblings of one physical core, as a VM's vCPUs can be). */
#define OB_INTERF_NFEAT 20

typedef struct ob_corun_sample {
  const char *a, *b;   /* workload keys */
  const char *mode;    /* "stream" or "full" */
  float x[OB_INTERF_NFEAT];
  double slowdown;     /* measured: median beside B / median alone */
  double timestamp;    /* when it was measured (unix seconds): the host's state
                          (which vCPUs share a physical core) changes between
                          sessions, and a point describes its own */
} ob_corun_sample;

typedef struct ob_corun_dataset {
  int64_t n;
  ob_corun_sample *s;
  int64_t skipped;     /* points whose co-runner's workload is unknown */
  ob_arena *arena;
} ob_corun_dataset;

OB_API void ob_interf_features(double a_flops, double a_bytes, int a_threads, double a_alone_s,
                               double b_flops, double b_bytes, int b_threads, double b_alone_s,
                               bool full, int shared_cores, const ob_db_host_limits *lim, const char *host,
                               float *out);
/* The co-run profile points of db (corun_mode set, slowdown known). */
OB_API ob_status ob_corun_dataset_load(ob_ctx *ctx, ob_db *db, const char *host,
                                       ob_corun_dataset **out);
OB_API void ob_corun_dataset_free(ob_corun_dataset *d);
/* Trains the interference ensemble into p (replacing one it had) on the
 * points with use[i] (NULL: all). OB_ERR_NOT_FOUND when none. */
OB_API ob_status ob_predictor_train_interference(ob_predictor *p, const ob_corun_dataset *d,
                                                 const uint8_t *use, const ob_predict_train_opts *o);
OB_API bool ob_predictor_has_interference(const ob_predictor *p);
/* Predicted slowdown (median beside B over median alone) with its 90%
 * interval; OB_ERR_NOT_FOUND without an interference model. */
OB_API ob_status ob_predictor_slowdown(ob_predictor *p, const float *x, ob_prediction *out);
/* A held-out split of the pairs: fold of a hash of the unordered pair. */
OB_API void ob_corun_split_pairs(const ob_corun_dataset *d, int fold, int nfolds, uint8_t *test);

/* ---- placement as a game (nash.c) -------------------------------------------------------------
 * k players (operators ready at once), each choosing how many cores it
 * takes (1..cores, or a given list of counts). Players are placed in order on consecutive cores,
 * wrapping around when the machine is full, so a core may hold several
 * players (they share it, time-sliced). A player's latency is its alone
 * latency at its core count, times the largest number of players on any
 * of its cores, times the largest interference factor over the others
 * (full[i][j] when j shares a core with it, stream[i][j] otherwise): a
 * full factor is the slowdown beyond what time-slicing explains.
 *
 * With a slowdown function instead, a player's latency is its alone latency
 * at its core count times the largest slowdown(i, j, k_i, k_j, cores they
 * share) over the others, and no time-slicing multiplier: the slowdown is
 * then the co-run measurement's own quantity (A's median call while B runs
 * beside it at those resources), which already holds whatever sharing a
 * core costs a call, so the game prices a profile as it is measured. */
#define OB_NASH_MAX_PLAYERS 8
#define OB_NASH_MAX_CORES 256

/* Player i's slowdown (>= 0; below 1 is kept: a partner can speed a call
 * up, e.g. by keeping shared data warm) beside player j when i takes ki
 * cores and j kj, `shared` of them common to both. */
typedef double (*ob_nash_slowdown_fn)(void *user, int i, int j, int ki, int kj, int shared);

typedef struct ob_nash_game {
  int players, cores;
  int nchoices;   /* the core counts a player may take: choices[0..nchoices); 0: 1..cores */
  int choices[32];
  double *alone;  /* players x cores: alone[i * cores + (k - 1)], seconds at k cores */
  double stream[OB_NASH_MAX_PLAYERS][OB_NASH_MAX_PLAYERS]; /* < 1 counts as 1 */
  double full[OB_NASH_MAX_PLAYERS][OB_NASH_MAX_PLAYERS];
  ob_nash_slowdown_fn slowdown; /* NULL: the matrices and time-slicing above */
  void *user;                   /* slowdown's */
} ob_nash_game;

/* Each player's latency for the profile k[players] (core counts). */
OB_API void ob_nash_costs(const ob_nash_game *g, const int *k, double *cost);
OB_API double ob_nash_makespan(const ob_nash_game *g, const int *k);
/* Whether no player can lower its own latency by changing its choice alone. */
OB_API bool ob_nash_is_equilibrium(const ob_nash_game *g, const int *k);
/* Best-response dynamics from k (in place), players in turn, until no one
 * moves or max_rounds rounds; returns whether it converged. */
OB_API bool ob_nash_best_response(const ob_nash_game *g, int *k, int max_rounds, int *rounds);

typedef struct ob_nash_summary {
  int64_t profiles;          /* enumerated */
  int64_t equilibria;        /* pure equilibria found */
  int opt[OB_NASH_MAX_PLAYERS];
  double opt_makespan;       /* the social optimum */
  int worst_eq[OB_NASH_MAX_PLAYERS], best_eq[OB_NASH_MAX_PLAYERS];
  double worst_eq_makespan, best_eq_makespan; /* NAN when there is none */
  double price_of_anarchy;   /* worst equilibrium / optimum (NAN: none) */
  double price_of_stability; /* best equilibrium / optimum */
} ob_nash_summary;

/* Enumerates every profile (choices^players of them; more than
 * max_profiles is OB_ERR_INVALID_ARG). */
OB_API ob_status ob_nash_exhaustive(ob_ctx *ctx, const ob_nash_game *g, int64_t max_profiles,
                                    ob_nash_summary *out);

/* ---- model latency (modellat.c) ---------------------------------------------------------
 * nn-Meter's sum over kernels, through the runtime's own step list: every
 * kernel step is predicted at the config the runtime chose for it (the
 * db's best or the default) and the runtime's thread count; every other
 * step (the runtime's C nodes, layout conversions) and the run itself cost
 * what the runtime was measured to spend on such steps on this host. */
typedef struct ob_predict_overhead {
  int threads;
  double native_fixed_s;   /* per native step: fixed part ... */
  double native_s_per_mb;  /* ... plus this per MiB of the node's outputs */
  double convert_s;        /* per layout conversion step */
  double run_s;            /* per run, beyond the steps (barriers, dispatch) */
  double kernel_factor;    /* f: a kernel step not held by its weights takes
                              f x its time measured alone (the db's median of
                              the same config) in the graph, the runs warm:
                              caches its neighbours left cold; fitted with
                              floor_s_per_mb; 1 when the calibration had no
                              kernel step with a db median */
  double cold_s_per_mb;    /* what a run takes beyond its warm time, per MiB of
                              the parameters its kernel steps read, when every
                              cache was evicted before it (the calibration model
                              run after a sweep of twice the last-level cache,
                              against warm runs, interleaved): the cost of a
                              parameter that comes from memory, overlap with the
                              computation included; 0 when it was not measurable */
  double param_mib;        /* the calibration model's parameters read by its
                              kernel steps */
  double floor_s_per_mb;   /* k: seconds per parameter MiB a step held by its
                              weights takes in the run (they stream from
                              memory; measured alone, weights beyond the L2
                              came warm from the L3). A step takes the longer of
                              f x its time alone and k x its parameter MiB, f
                              and k fitted jointly (least relative squares) on
                              the calibration's steps with a db median; without
                              any, the fastest rate a step of at least 1 MiB
                              read its parameters at; 0: none such */
  int nmiss;               /* points of the miss curve, by working set: */
  double miss_mib[8];      /*   MiB through the caches between two runs (the
                                calibration's parameters plus a sweep of other
                                data of increasing size) ... */
  double miss_share[8];    /*   ... and the share of the evicted run's extra time
                                seen then: how much of a model's parameters the
                                caches lose between its runs when it reads that
                                many MiB (nondecreasing) */
  int nnative, nconvert;   /* steps the fit saw */
} ob_predict_overhead;

/* Measures the overhead on a compiled runtime (a calibration model): the
 * steps timed alone by ob_rt_profile (`runs` runs), a least-squares line
 * of the native steps' seconds over their output MiB, the mean conversion,
 * the whole run's median beyond the sum of its steps, kernel_factor and
 * floor_s_per_mb fitted on the kernel steps' times in the run against their
 * db medians and parameter MiB, then whole runs
 * after sweeps of other data between them (none, 16 to 256 MiB, twice the
 * last-level cache), interleaved: the cold cost per parameter MiB and the
 * miss curve. Calibrating on a model whose parameters stay cached would
 * otherwise say nothing of one whose parameters do not. */
OB_API ob_status ob_predict_overhead_measure(ob_ctx *ctx, ob_rt *rt, int threads, int runs,
                                             ob_predict_overhead *out);
/* The in-graph model's f (kernel_factor) and k (floor_s_per_mb) fitted on n
 * kernel steps (least relative squares): step i took y[i] seconds in the
 * run, a[i] alone, and reads w[i] MiB of parameters; it is modelled as
 * max(f a[i], k w[i]), f in [0.5, 4] to 0.005. A factor alone over the steps
 * not held by their weights took every step that streamed a little slower
 * than the fastest for a compute-bound one, so a slow window for memory
 * raised f for every step of every model (1.15-1.82 on resnet-18 put
 * bert-base 57 % high at 1 thread and 65 % at 2: bench/results/predict.txt).
 * n = 0: *f_out = 1,
 * *k_out unchanged. */
OB_API void ob_predict_fit_in_graph(const double *y, const double *a, const double *w, int n, double *f_out,
                                    double *k_out);
/* The miss curve again, from a synthetic stack instead of a sweep: rt (the
 * calibration model, out measured on it by ob_predict_overhead_measure) run
 * after runs of others[0..k-1] (further instances of training models, each
 * with parameters of its own), for k = 0..n, in interleaved rounds; the
 * point at k is rt's parameters plus those of the k others (MiB), its share
 * rt's extra time over its warm run per the cold cost of all its
 * parameters. A one-pass sweep of other data leaves parameters that every
 * run reads again in a cache that keeps reused lines (one measured the
 * calibration's 45 MiB at 0.06 evicted by 64 MiB of sweep while a 97 MiB
 * model's layers ran at their flushed time in its runs); parameters read
 * again as a model reads them compete as a larger model's do. The sweep's
 * points beyond the stack's last are kept. Nothing changes without a cold
 * cost measured (out->cold_s_per_mb 0). */
OB_API ob_status ob_predict_overhead_stack(ob_ctx *ctx, ob_rt *rt, ob_rt *const *others, int n,
                                           ob_predict_overhead *out);
/* Stores it as host limits "rt_native_fixed", "rt_native_per_mb",
 * "rt_convert", "rt_run" (unit s), "rt_in_graph_f" (unit x),
 * "rt_cold_per_mb", "rt_stream_per_mb" (s/MiB), "rt_param_mib" (MiB), "rt_miss0".."rt_miss7", one per point
 * of the miss curve (bytes: its working set; value: the share, at least
 * 1e-6; at `threads`; parts measured as 0 left out, as the db keeps positive
 * limits) and "rt_calib_steps" (steps timed) of host; note says how it was measured. */
OB_API ob_status ob_predict_overhead_store(ob_db *db, const char *host, const ob_predict_overhead *o,
                                           const char *note);
/* The stored overhead of host at exactly `threads`: false when the db
 * holds none. */
OB_API bool ob_predict_overhead_find(const ob_db_host_limits *l, const char *host, int threads,
                                     ob_predict_overhead *out);

/* The share of a model's parameters (model_mib, read by its kernel steps)
 * that come from memory in each run: the miss curve at model_mib (linear
 * between its points, 0 up to the calibration's own parameters, the last
 * point's share beyond the last). 0 without a measured cold cost. */
OB_API double ob_predict_param_miss(const ob_predict_overhead *ov, double model_mib);

typedef struct ob_predict_model_step {
  int step;              /* the runtime's step index */
  double seconds, lo, hi;
  bool predicted;        /* a kernel step the predictor covered; false: the
                            overhead's estimate of a step */
} ob_predict_model_step;

typedef struct ob_predict_model_result {
  double seconds, lo, hi;  /* the model, with the sum of the steps' intervals */
  double kernels_s;        /* predicted kernel steps */
  double other_s;          /* native and conversion steps and the run (overhead) */
  int nkernels, nother;
  int nuncovered;          /* kernel steps whose operator the predictor lacks
                              (estimated as native steps; named in `uncovered`) */
  char uncovered[256];
  double param_mib;        /* parameters the kernel steps read */
  double miss_share;       /* of them evicted between runs (ob_predict_param_miss) */
} ob_predict_model_result;

/* Predicts rt's end-to-end latency (rt compiled with `threads` threads on
 * `target`; lim, host: the host's limits for the features). A kernel step
 * costs the longer of kernel_factor x its predicted time alone and its
 * parameter MiB x (floor_s_per_mb + the model's miss share
 * (ob_predict_param_miss) x cold_s_per_mb). steps (may be NULL) gets ob_rt_step_count entries. */
OB_API ob_status ob_predict_model(ob_ctx *ctx, ob_predictor *p, const ob_rt *rt, const ob_target *target,
                                  int threads, const ob_db_host_limits *lim, const char *host,
                                  const ob_predict_overhead *ov, ob_predict_model_step *steps,
                                  ob_predict_model_result *out);

/* ---- collaboration tuning (collab.c) ----------------------------------------------------
 * Two operators that will run at the same time on disjoint core sets,
 * tuned two ways with the same tuner and the same trials per operator:
 *  - independently: each alone on its cores (what the tuning loop does),
 *    then the two bests run together;
 *  - jointly: every trial measures the pair together (the profiler's
 *    co-run request): A's batches beside B's best so far, then B's beside
 *    A's, alternately, each tuner learning its side's time beside the
 *    other.
 * Each way confirms its search: the 3 best configs of each side measured
 * alone again (independent), the 3 best pairs together again (joint); the
 * least wins. Both final pairs are measured again together, alternately, `finals`
 * times each (the median makespan), so that neither keeps a lucky draw of
 * its search. */
typedef struct ob_collab_opts {
  const char *tuner;    /* NULL: "xgb" */
  int trials;           /* per operator and way; <= 0: 32 */
  int batch;            /* <= 0: 8 */
  int finals;           /* <= 0: 5 */
  ob_measure_opts a, b; /* each side's threads, cores (disjoint), timing, build */
  uint64_t seed;
  FILE *log;            /* a line per batch; NULL: none */
} ob_collab_opts;

typedef struct ob_collab_result {
  ob_config indep_a, indep_b, joint_a, joint_b;
  double indep_alone_a_s, indep_alone_b_s; /* the independent bests, alone */
  ob_corun_pair indep, joint;              /* the final pairs: median makespan of the finals */
  int measured, failed;                    /* trials of both ways */
  double seconds;
} ob_collab_result;

/* OB_ERR_RUNTIME when no config of a side ran correctly in a way. */
OB_API ob_status ob_collab_tune(ob_ctx *ctx, struct ob_task *a, struct ob_task *b, ob_runner *runner,
                                const ob_target *t, const ob_collab_opts *o, ob_collab_result *out);

#ifdef __cplusplus
}
#endif
#endif
