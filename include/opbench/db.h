/* db: the record store. One SQLite file (WAL mode), or the tables of a
 * PostgreSQL schema shared by a team (the same schema), holds hosts, workloads,
 * configs and one row per measured trial, keyed so that nothing is measured
 * twice: (host fingerprint, workload key, target, resource setting,
 * template, config index). Also here: CSV export and AutoTVM v0.2 JSON-lines
 * import/export.
 *
 * The db knows records, not operators or tuners: workloads are a key, an
 * operator name and attributes as JSON; a trial's result is the numbers in
 * ob_db_record. Conversions from the operators' and tuners' types live
 * above it (in ops.h and tune.h), and the AutoTVM task names that are
 * opbench workloads come from the operators through ob_db_autotvm_i
 * (ob_op_autotvm_map in ops.h).
 *
 * Concurrency: several processes may open and write the same file at once;
 * a writer waits up to the busy timeout (5 s by default) for another's
 * transaction, then fails with OB_ERR_BUSY naming the file. One ob_db handle
 * belongs to one thread at a time.
 *
 * Durability: every write is one transaction (synchronous=NORMAL under WAL),
 * so a process killed at any moment loses at most the write in flight and
 * never leaves the file corrupt. */
#ifndef OPBENCH_DB_H
#define OPBENCH_DB_H


#include "opbench/core.h"
#include "opbench/kernel.h"
#include "opbench/measure.h" /* ob_counter: the profiles' counter columns */

#ifdef __cplusplus
extern "C" {
#endif

/* The schema this build writes and understands; a file with a larger
 * version is refused (OB_ERR_UNSUPPORTED), never modified. A smaller one
 * is upgraded in place when opened for writing (one transaction), and read
 * as it is when opened read-only.
 *   1  the first.
 *   2  measurements (and their history) gain the timing protocol of issue
 *      17: repeat, min_repeat_ms, flush, timer_overhead_s, below_resolution,
 *      noisy, extra_repeats, emulated; `number` is the calls per repeat the runner
 *      used. Upgraded rows keep their number (version 1 stored the requested
 *      count: right unless --min-repeat-ms was given), get repeat from their
 *      cost list and an unknown floor, cache state and overhead; `emulated`
 *      marks trials timed under an emulator (a cross target's kernels run by
 *      qemu-user): their costs are not performance figures.
 *   3  the profiler's tables (profiles.c): profiles (one row per point of a
 *      feature sweep), host_limits (a host's measured peak FLOP rate and
 *      bandwidths) and tuning_runs (which tuner a task's trials came
 *      from). Upgrading adds them empty; nothing else changes. */
#define OB_DB_SCHEMA_VERSION 3
#define OB_DB_DEFAULT_BUSY_MS 5000

typedef struct ob_db ob_db;

/* ---- open / close ----------------------------------------------------------- */
enum ob_db_open_flags {
  OB_DB_READONLY = 1 << 0,  /* never write; the file must exist */
  OB_DB_NO_CREATE = 1 << 1, /* the file must exist (OB_ERR_NOT_FOUND otherwise) */
};

typedef struct ob_db_open_opts {
  unsigned flags;      /* ob_db_open_flags */
  int busy_timeout_ms; /* <= 0: OB_DB_DEFAULT_BUSY_MS */
} ob_db_open_opts;

/* Opens (creating if needed) the database at `path`: an SQLite file, or a
 * PostgreSQL store given as a libpq URL (postgresql://USER:PASSWORD@HOST:PORT/DB,
 * optionally ?options=-csearch_path%3DSCHEMA): the same schema, keys and
 * semantics in the tables of the connection's current schema. "File" below
 * means the store; for PostgreSQL, one without opbench's tables "does not
 * exist", and a server that cannot be reached or refuses the login is
 * OB_ERR_IO naming the URL (never its password). Fails with
 *   OB_ERR_IO          not an SQLite file / corrupt / unreadable (path and
 *                      SQLite's message; the file is left untouched),
 *   OB_ERR_UNSUPPORTED an SQLite file that is not opbench's, or a schema
 *                      version newer than OB_DB_SCHEMA_VERSION,
 *   OB_ERR_BUSY        locked by another process beyond the busy timeout,
 *   OB_ERR_NOT_FOUND   missing file with OB_DB_READONLY / OB_DB_NO_CREATE.
 * *out is NULL on failure; on success the caller owns it (ob_db_close). */
OB_API ob_status ob_db_open(ob_ctx *ctx, const char *path, unsigned flags, ob_db **out);
OB_API ob_status ob_db_open_ex(ob_ctx *ctx, const char *path, const ob_db_open_opts *opts,
                               ob_db **out);
OB_API void ob_db_close(ob_db *db); /* accepts NULL */
/* The file, or the URL without its password. */
OB_API const char *ob_db_path(const ob_db *db);
/* "sqlite" or "postgresql". */
OB_API const char *ob_db_backend_name(const ob_db *db);
/* Whether `path` names a PostgreSQL store (postgresql:// or postgres://)
 * rather than an SQLite file. */
OB_API bool ob_db_is_url(const char *path);
/* `url` with its password (user part, password= parameter) shown as ***;
 * malloc'd, NULL when out of memory. Other text is returned as it is. */
OB_API char *ob_db_url_redact(const char *url);
/* The ctx it was opened with (where its messages go). */
OB_API ob_ctx *ob_db_ctx(const ob_db *db);
OB_API void ob_db_set_busy_timeout(ob_db *db, int ms);

/* PRAGMA integrity_check: OB_OK, or OB_ERR_IO with SQLite's first findings. */
OB_API ob_status ob_db_check(ob_db *db);
/* Runs SQL text (no result rows) on the connection: maintenance, explicit
 * transactions around many puts ("BEGIN IMMEDIATE" ... "COMMIT"). Writes
 * made here bypass every invariant the other calls keep. */
OB_API ob_status ob_db_exec(ob_db *db, const char *sql);

/* ---- hosts and workloads ---------------------------------------------------- */
typedef struct ob_db_host {
  ob_host host;
  char compiler[64];           /* e.g. "gcc" */
  char compiler_version[128];  /* e.g. "12.2.0" */
  double first_seen, last_seen; /* unix seconds */
} ob_db_host;

/* Inserts the host or refreshes its facts and last_seen (first_seen is
 * kept). compiler / compiler_version may be NULL (then left as stored). */
OB_API ob_status ob_db_put_host(ob_db *db, const ob_host *h, const char *compiler,
                                const char *compiler_version);
/* OB_ERR_NOT_FOUND when the fingerprint is unknown. */
OB_API ob_status ob_db_get_host(ob_db *db, const char *fingerprint, ob_db_host *out);

/* Stores a workload under its key with its operator, attributes
 * (attrs_json: a JSON object or NULL) and FLOPs (<= 0: unknown); an
 * existing row is refreshed. OB_ERR_INVALID_ARG for an empty key or
 * operator, OB_ERR_PARSE for attributes that are not a JSON object.
 * (ops.h stores an operator's workload through this.) */
OB_API ob_status ob_db_put_workload(ob_db *db, const char *key, const char *op,
                                    const char *attrs_json, double flops);

/* ---- measurements ----------------------------------------------------------- */
/* One trial. In puts, strings are borrowed; NULL target/resources mean "".
 * Unknown doubles are NAN (stored as NULL). In query results every pointer
 * lives in the result's arena. */
typedef struct ob_db_record {
  const char *host;      /* fingerprint */
  const char *workload;  /* workload key */
  const char *target;    /* "llvm -mcpu=native" */
  const char *resources; /* "threads=2;cores=0,1" */
  const char *tmpl;      /* template name, e.g. "conv2d_nchw.x86" */
  uint64_t config_index;
  const char *entity;    /* config entity JSON (AutoTVM list, or the object
                            ob_config_to_json makes); NULL: none / unknown */
  int error_no;          /* ob_merr */
  const char *error_msg; /* NULL or "" when none */
  ob_timing timing;      /* the measurement (kernel.h): costs of the kept repeats,
                            median/mean/cv, the calls per repeat actually used
                            (0: unknown), repeats taken (0: unknown), the floor
                            (NAN: the protocol is unknown, as for imported
                            records and those of version-1 files; the cache
                            state is then unknown too), cold or warm caches, the
                            timer's overhead (0: unknown), the below-resolution
                            and noisy flags, the stability rule's extra repeats,
                            and whether it ran under an emulator */
  const double *all_costs; /* every cost when there are more than timing holds
                              (AutoTVM logs may carry any number; timing.costs
                              then has the first OB_TIMING_MAX_COSTS), else NULL */
  int nall_costs;
  double build_s, run_s;
  int nthreads;          /* 0: unknown */
  const char *cores;     /* "0,1"; NULL: unknown */
  double timestamp;      /* unix seconds; 0 in a put: now */
  /* query results only: */
  const char *op;        /* the workload's operator */
  const char *attrs;     /* the workload's attributes (JSON object) */
  double flops;          /* the workload's FLOPs; 0: unknown */
  double gflops;         /* flops / median_s / 1e9; 0 on error or unknown */
} ob_db_record;

enum ob_db_put_flags {
  /* Remeasure: the new trial replaces the stored one under the same key;
   * the replaced row is kept in table measurements_history. Without it an
   * existing key keeps its trial and the put stores nothing. */
  OB_DB_REPLACE = 1 << 0,
};

/* Stores one trial (and its config entity, and placeholder host/workload rows if
 * those are missing) in one transaction. *stored (may be NULL) tells
 * whether it was written. OB_ERR_INVALID_ARG for a malformed record (an
 * empty key part, an error-free trial without a positive median). */
OB_API ob_status ob_db_put_measurement(ob_db *db, const ob_db_record *rec, unsigned flags,
                                       bool *stored);

/* Selects the records of one task. In has_measurement and ob_db_measured
 * every field is required; elsewhere NULL means "any". */
typedef struct ob_db_key {
  const char *host, *workload, *target, *resources, *tmpl;
} ob_db_key;

OB_API ob_status ob_db_has_measurement(ob_db *db, const ob_db_key *key, uint64_t config_index,
                                       bool *out);
/* Config indices already measured (errors included: they count as tried)
 * for the key, sorted ascending, for resuming a tuning run. *out is
 * malloc'd (free() it; NULL when *n == 0). */
OB_API ob_status ob_db_measured(ob_db *db, const ob_db_key *key, uint64_t **out, int64_t *n);

typedef enum ob_db_order {
  OB_DB_ORDER_KEY = 0, /* workload, template, host, target, resources, config index */
  OB_DB_ORDER_FASTEST, /* error-free by median ascending, then the failures */
  OB_DB_ORDER_TIME,    /* by timestamp, then insertion */
  OB_DB_ORDER_COUNT
} ob_db_order;

/* The cache state a record was timed in, as stored in the flush column:
 * 0 warm, 1 cold (every input flushed before every call: --flush), 2 the
 * weights cold and the activation warm (--flush-weights, a model's
 * default; files written before it stored 1 for it). NULL: unknown. */
typedef enum ob_db_cache {
  OB_DB_CACHE_ANY = 0, /* a filter that does not look at it */
  OB_DB_CACHE_WARM,
  OB_DB_CACHE_COLD,
  OB_DB_CACHE_COLD_WEIGHTS
} ob_db_cache;
OB_API ob_db_cache ob_db_cache_of(const ob_timing *t);
OB_API const char *ob_db_cache_name(ob_db_cache c); /* "warm", "cold", "cold-weights", "any" */

typedef struct ob_db_filter {
  ob_db_key key;     /* NULL fields match anything */
  ob_db_cache cache; /* records timed in this cache state only; ANY: all */
  const char *op;    /* operator of the workload; NULL: any */
  bool ok_only;      /* error-free trials only */
  ob_db_order order;
  int64_t limit;     /* <= 0: all */
} ob_db_filter;

typedef struct ob_db_records {
  int64_t n;
  ob_db_record *rec;
  ob_arena *arena; /* owns every string and cost array */
} ob_db_records;
OB_API void ob_db_records_free(ob_db_records *r); /* accepts NULL */

/* Records matching the filter (NULL: all). *out owned by the caller. */
OB_API ob_status ob_db_query(ob_db *db, const ob_db_filter *f, ob_db_records **out);
/* The k fastest error-free records for the key (tmpl NULL: any template). */
OB_API ob_status ob_db_top_k(ob_db *db, const ob_db_key *key, int64_t k, ob_db_records **out);
/* The same among the records timed in one cache state (ANY: all). */
OB_API ob_status ob_db_top_k_cache(ob_db *db, const ob_db_key *key, ob_db_cache cache, int64_t k,
                                   ob_db_records **out);
/* The fastest error-free record; OB_ERR_NOT_FOUND (message names the key)
 * when there is none. out->rec[0] is the best. */
OB_API ob_status ob_db_best(ob_db *db, const ob_db_key *key, ob_db_records **out);
/* All records of a workload, ordered by key. */
OB_API ob_status ob_db_workload_records(ob_db *db, const char *workload, ob_db_records **out);

/* ---- statistics ---------------------------------------------------------------- */
typedef struct ob_db_stat_row {
  const char *name;             /* workload key, or operator in by_op */
  const char *op;
  int64_t total;
  int64_t by_error[OB_MERR_COUNT]; /* per error class; unknown codes in UNKNOWN */
  int64_t noisy;                /* error-free trials whose CV stayed above the stability threshold */
  int64_t below_resolution;     /* error-free trials with a median under 10x the timer overhead */
  int64_t emulated;             /* error-free trials timed under an emulator (not performance) */
  double best_s;                /* fastest error-free median; NAN if none */
  double best_gflops;           /* 0 if unknown */
  int64_t nworkloads;           /* in by_op and total */
} ob_db_stat_row;

typedef struct ob_db_stats {
  int64_t nworkloads, nops;
  ob_db_stat_row *workloads; /* sorted by operator, then key */
  ob_db_stat_row *by_op;     /* sorted by operator */
  ob_db_stat_row total;
  int64_t nhosts, nconfigs;  /* rows of those tables */
  int64_t nreplaced;         /* trials superseded by a remeasure (history) */
  ob_arena *arena;
} ob_db_stats;
OB_API ob_status ob_db_stats_get(ob_db *db, const ob_db_filter *f, ob_db_stats **out);
OB_API void ob_db_stats_free(ob_db_stats *s); /* accepts NULL */

/* ---- export / import ------------------------------------------------------------- */
/* Which AutoTVM tasks are opbench workloads, in both directions. The
 * operators know (ops.h: ob_op_autotvm_map, with ctx NULL); the db only
 * calls it. Without one (NULL) import files every task that carries no
 * opbench kwargs under its AutoTVM task key, and export writes the
 * workload key as the only arg with the workload in kwargs. */
typedef struct ob_db_wl_desc {
  char *key, *op, *attrs; /* malloc'd (the db frees them); attrs a JSON object */
  double flops;           /* 0: unknown */
} ob_db_wl_desc;

typedef struct ob_db_autotvm_i {
  /* task: AutoTVM's task name with its target suffix ("conv2d_NCHWc.x86");
   * args_json: its argument list. true with *out filled when the task is an
   * opbench workload (a field left NULL means out of memory); false, *out
   * untouched, otherwise. */
  bool (*from_task)(void *ctx, const char *task, const char *args_json, ob_db_wl_desc *out);
  /* TVM's argument list (JSON text, malloc'd) for a workload of operator op
   * with attributes attrs_json; NULL when it has no AutoTVM form. */
  char *(*to_args)(void *ctx, const char *op, const char *attrs_json);
} ob_db_autotvm_i;

/* Writes the filtered records (NULL: all) as CSV with a header line. `path`
 * "-" is stdout; a file is written next to its destination and renamed into
 * place, so a failed export leaves no half file. *nrows may be NULL. */
OB_API ob_status ob_db_export_csv(ob_db *db, const ob_db_filter *f, const char *path,
                                  int64_t *nrows);

/* Supplies the config entity JSON of a record that has none stored;
 * *entity_json malloc'd (the db frees it) or left NULL. */
typedef ob_status (*ob_db_entity_fn)(void *user, const ob_db_record *rec, char **entity_json);

/* Writes AutoTVM v0.2 JSON lines, one per record, oldest first: input =
 * [target, template, args, kwargs] with args rebuilt from the workload by
 * map->to_args (with the operators' map: conv2d and dense in TVM's x86
 * argument form; imported records exactly as they came), config = {index,
 * code_hash null, entity}, result = [costs (or [1e9] on error), error_no,
 * build_s + run_s, timestamp]. kwargs carry {"opbench": {workload, op,
 * attrs, flops}} where the args alone would not give back the same
 * workload key through map->from_task (TVM ignores kwargs). A record
 * without an entity from the db or entity_fn is written with "entity": []. */
OB_API ob_status ob_db_export_autotvm(ob_db *db, const ob_db_filter *f, const char *path,
                                      const ob_db_autotvm_i *map, void *map_ctx,
                                      ob_db_entity_fn entity_fn, void *user, int64_t *nrows);

typedef struct ob_db_import_opts {
  const char *host;      /* fingerprint to file the records under; NULL: "unknown" */
  const char *resources; /* resource setting; NULL: "" */
  unsigned flags;        /* OB_DB_REPLACE: a record replaces a stored one */
  const ob_db_autotvm_i *map; /* tasks that are opbench workloads; NULL: none */
  void *map_ctx;
} ob_db_import_opts;

typedef struct ob_db_bad_line {
  int64_t line; /* 1-based */
  char why[160];
} ob_db_bad_line;

#define OB_DB_MAX_BAD_LINES 10000 /* lines kept in `bad`; nbroken counts all */

typedef struct ob_db_import_result {
  int64_t nlines;     /* non-blank lines read */
  int64_t nimported;  /* records stored */
  int64_t nduplicate; /* already stored under the same key and kept */
  int64_t nbroken;    /* lines skipped as malformed */
  int64_t nunmapped;  /* stored under their AutoTVM task key (no opbench op) */
  int64_t nbad;       /* entries in bad (min(nbroken, OB_DB_MAX_BAD_LINES)) */
  ob_db_bad_line *bad; /* malloc'd; ob_db_import_result_clear frees it */
} ob_db_import_result;
OB_API void ob_db_import_result_clear(ob_db_import_result *r);

/* Imports an AutoTVM v0.2 log. Tasks with opbench's kwargs, and those that
 * o->map maps (the operators' map: conv2d_NCHWc / conv2d_nchw (NCHW,
 * float32) and dense_nopack / dense_pack (float32)), become opbench
 * workloads; any other task is stored under "autotvm:<task>:<args JSON>". Broken lines
 * are skipped and listed in *res, never aborting the import. Returns an
 * error only when the file cannot be read or the database cannot be written
 * (records committed before that point stay; *res counts them). *res must
 * be cleared by the caller even on failure. */
OB_API ob_status ob_db_import_autotvm(ob_db *db, const char *path, const ob_db_import_opts *o,
                                      ob_db_import_result *res);

/* ---- copying between stores (copy.c) ----------------------------------------------
 * `opbench db push|pull`: the records of `src` that the filter selects
 * (NULL: all) go to `dst` with their hosts, workloads, config entities and
 * the confirmed bests of their tasks (the newer confirmation wins). A key
 * `dst` holds keeps its trial unless flags has OB_DB_REPLACE (then the old
 * one goes to dst's history). Re-measurement history stays where it was
 * made. Written in transactions of a few hundred records: on failure
 * (OB_ERR_IO, OB_ERR_BUSY...) res->ncommitted says how many of the copied
 * records are kept. */
typedef struct ob_db_copy_result {
  int64_t nrecords;   /* records read from src */
  int64_t ncopied;    /* stored in dst */
  int64_t nduplicate; /* dst held the key already and kept its trial */
  int64_t ncommitted; /* copied records committed (all of ncopied on success) */
  int64_t nhosts, nworkloads; /* host and workload rows written */
  int64_t nconfirmed; /* confirmed bests written */
} ob_db_copy_result;
OB_API ob_status ob_db_copy(ob_db *src, ob_db *dst, const ob_db_filter *f, unsigned flags,
                            ob_db_copy_result *res);

/* ---- confirmed bests (confirm.c) ---------------------------------------------------
 * The tuning loop ends by re-measuring a task's best configs with the full
 * protocol; the winner is stored here, one row per task key (host,
 * workload, target, resources, template), a later confirmation replacing an
 * earlier one. The table is created on first use: files made before it
 * keep their schema version and older builds simply ignore it. */
typedef struct ob_db_confirmed {
  uint64_t config_index;
  double median_s, mean_s, cv; /* the full-protocol re-measurement */
  int candidates;              /* configs re-measured to pick it */
  double timestamp;            /* unix seconds; 0 in a put: now */
} ob_db_confirmed;

/* key: every field required. OB_ERR_INVALID_ARG for a missing key part or a
 * median that is not positive. */
OB_API ob_status ob_db_put_confirmed(ob_db *db, const ob_db_key *key, const ob_db_confirmed *c);
/* OB_ERR_NOT_FOUND (message names the key) when the task has none. */
OB_API ob_status ob_db_get_confirmed(ob_db *db, const ob_db_key *key, ob_db_confirmed *out);

/* ---- profiles (profiles.c) ---------------------------------------------------------
 * One row per point of a profiler sweep: a config of a workload measured
 * under a setting of the features (threads and cores, a co-running
 * operator and how it shares the machine, cache pressure). Keyed like
 * measurements plus the features, so a sweep run again skips what it has
 * (resume after kill -9: every point is its own transaction). */
typedef struct ob_db_profile_key {
  const char *host, *workload, *target, *tmpl;
  uint64_t config_index;
  const char *resources;      /* "threads=N;cores=LIST" */
  const char *corun_workload; /* "" or NULL: none; else the co-runner's workload key */
  const char *corun_mode;     /* "" or NULL: none; "stream" (disjoint cores) or "full"
                                 (the same cores, time-sliced) */
  double pressure_mib;        /* cache pressure beside it, MiB; 0: none */
} ob_db_profile_key;

typedef struct ob_db_profile {
  ob_db_profile_key key;
  /* the point (strings borrowed in puts; NULL means "") */
  int nthreads;
  const char *cores;          /* "0,1" */
  const char *sweep;          /* the feature that made the point: base, sizes, threads,
                                 cores, knobs, corun, cache */
  const char *knob, *knob_value; /* knobs: the knob changed from the base config and its
                                 new value; "" for the base config itself */
  const char *entity;         /* the config's entity JSON */
  const char *corun_cores;    /* the co-runner's cores */
  const char *corun_template; /* and template and config */
  uint64_t corun_config;
  const char *pressure_how;   /* how the pressure was made: "co-runner on core 1" or
                                 "resctrl ..." */
  /* the result */
  int error_no;               /* ob_merr */
  const char *error_msg;
  ob_timing timing;
  double build_s, run_s;
  /* derived, stored so that a dataset needs no joins (NAN: unknown) */
  double flops;               /* of one call */
  double bytes;               /* compulsory traffic of one call: its arguments' bytes */
  double gflops;              /* flops / median / 1e9 */
  double intensity;           /* flops / bytes: the roofline's x */
  double peak_gflops;         /* the host's FMA peak for the target's ISA x threads */
  double peak_pct;            /* 100 * gflops / peak_gflops */
  double bandwidth_gbps;      /* the host's memory bandwidth at this thread count */
  double alone_s;             /* co-run / pressure: the median of the same point alone */
  double slowdown;            /* median / alone_s */
  double corun_partner_s;     /* the co-runner's time per call beside it */
  double pressure_gbps;       /* what the pressure thread swept */
  double counters[OB_COUNTER_COUNT]; /* per call; NAN: not counted */
  const char *counters_note;  /* why some were not */
  double timestamp;           /* unix seconds; 0 in a put: now */
  /* query results only */
  const char *op, *attrs;     /* the workload's operator and attributes (JSON) */
} ob_db_profile;

/* Stores one point in one transaction, with placeholder host and workload
 * rows when those are missing. *stored (may be NULL) says whether it was
 * written: without OB_DB_REPLACE a point already stored is kept.
 * OB_ERR_INVALID_ARG for a missing key part, an error-free point without a
 * positive median, a co-run mode without a co-runner or one that is
 * neither stream nor full, or a negative pressure. */
OB_API ob_status ob_db_put_profile(ob_db *db, const ob_db_profile *p, unsigned flags, bool *stored);
/* Whether the point is stored; *median_s (may be NULL) gets its median
 * (NAN when it failed). A file without the profiles table (opened
 * read-only, older schema) holds none. */
OB_API ob_status ob_db_get_profile(ob_db *db, const ob_db_profile_key *key, bool *found,
                                   double *median_s);

typedef struct ob_db_profile_filter {
  const char *host, *workload, *target, *op, *sweep; /* NULL: any */
  bool ok_only;
} ob_db_profile_filter;

typedef struct ob_db_profiles {
  int64_t n;
  ob_db_profile *p;
  ob_arena *arena;
} ob_db_profiles;
OB_API void ob_db_profiles_free(ob_db_profiles *p); /* accepts NULL */
/* The points matching f (NULL: all), oldest first. A file without the
 * profiles table gives none. */
OB_API ob_status ob_db_query_profiles(ob_db *db, const ob_db_profile_filter *f,
                                      ob_db_profiles **out);

/* The dataset: every point matching f, one row each, one column per
 * feature: the key and the point, then each workload attribute in a column
 * of its own (the union over the rows: N, C, H, ... for conv2d; M, N, K for
 * dense; empty where a row's operator has none), then the results, the
 * derived figures and the counters. format "csv" (RFC 4180 with a header)
 * or "jsonl" (one object per line, the same keys, null for unknown).
 * Written as ob_db_export_csv writes (never over the database, never half
 * a file). OB_ERR_INVALID_ARG for another format. */
OB_API ob_status ob_db_export_profiles(ob_db *db, const ob_db_profile_filter *f, const char *format,
                                       const char *path, int64_t *nrows);

/* ---- host limits (profiles.c) --------------------------------------------------------
 * What the profiler measured of a host once: peak FLOP rate per ISA,
 * memory and cache bandwidths, at 1 and at all cores. */
typedef struct ob_db_host_limit {
  const char *host;
  const char *name;   /* "fma_peak", "mem_triad", "l1_read", "l2_read", "l3_read" */
  const char *isa;    /* "avx512", "avx2", "scalar"; "" for bandwidths */
  int threads;
  double bytes;       /* working set of a bandwidth; 0 for a peak */
  double value;       /* GFLOP/s or GB/s */
  const char *unit;   /* "GFLOP/s", "GB/s" */
  bool verified;      /* the measurement passed its own checks (see the note) */
  const char *note;
  double timestamp;   /* 0 in a put: now */
} ob_db_host_limit;

typedef struct ob_db_host_limits {
  int64_t n;
  ob_db_host_limit *l;
  ob_arena *arena;
} ob_db_host_limits;
OB_API void ob_db_host_limits_free(ob_db_host_limits *l); /* accepts NULL */
/* Stores (or replaces) one limit of a host. */
OB_API ob_status ob_db_put_host_limit(ob_db *db, const ob_db_host_limit *l);
/* A host's limits (host NULL: every host's), by host, name, isa, threads. A
 * file without the table gives none. */
OB_API ob_status ob_db_get_host_limits(ob_db *db, const char *host, ob_db_host_limits **out);

/* ---- tuning runs (profiles.c) ---------------------------------------------------------
 * Which tuner measured a task's trials: the tuning loop files a run when
 * it starts and closes it at the end; a trial belongs to the last run of
 * its task that started at or before it. */
typedef struct ob_db_tuning_run {
  ob_db_key key;      /* every field set */
  const char *tuner;
  double started, ended; /* unix seconds; ended NAN while running (or killed) */
  int trials;         /* measured by that run */
} ob_db_tuning_run;

typedef struct ob_db_tuning_runs {
  int64_t n;
  ob_db_tuning_run *r;
  ob_arena *arena;
} ob_db_tuning_runs;
OB_API void ob_db_tuning_runs_free(ob_db_tuning_runs *r); /* accepts NULL */
/* Files a run of `tuner` on the task, started now; *id identifies it for
 * ob_db_end_tuning_run. */
OB_API ob_status ob_db_begin_tuning_run(ob_db *db, const ob_db_key *key, const char *tuner,
                                        int64_t *id);
OB_API ob_status ob_db_end_tuning_run(ob_db *db, int64_t id, int trials);
/* Every run (host NULL: any), by task key and start. */
OB_API ob_status ob_db_get_tuning_runs(ob_db *db, const char *host, ob_db_tuning_runs **out);

#ifdef __cplusplus
}
#endif
#endif
