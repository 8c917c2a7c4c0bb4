/* cli.h: what the files of the `opbench` tool share. The tool parses
 * arguments, calls libopbench and prints; it adds no logic of its own. Each
 * subcommand owns the library objects it creates and frees them on every
 * path; errors reach the user as one `opbench: error: ...` line, exit 2. */
#ifndef OB_CLI_H
#define OB_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opbench/core.h"
#include "opbench/measure.h"
#include "opbench/ops.h"
#include "opbench/target.h"
#include "opbench/tune.h"

#define OB_CLI_VERSION "0.1.0"
#define OB_CLI_MAX_CORES 1024
#define OB_CLI_EXIT_ERROR 2

typedef enum cli_cmd {
  CLI_CMD_OP = 0,
  CLI_CMD_BENCH,
  CLI_CMD_SPACE,
  CLI_CMD_OPS,
  CLI_CMD_TUNE,
  CLI_CMD_DB,
  CLI_CMD_MODELS,
  CLI_CMD_EXPORT_ONNX,
  CLI_CMD_RUN_REFERENCE,
  CLI_CMD_SCHEDULE,
  CLI_CMD_WORKER,
  CLI_CMD_FLEET,
  CLI_CMD_PROFILE,
  CLI_CMD_REPORT,
  CLI_CMD_PREDICT,
  CLI_CMD_RUN,
  CLI_CMD_COUNT
} cli_cmd;

/* Everything the command line said. Strings point into argv. */
typedef struct cli_args {
  cli_cmd cmd;
  const char *op;          /* positional operator name (op, space) */
  const char *shape, *stride, *pad, *dilation, *epilogue, *tmpl;
  const char *target;      /* --target TEXT (NULL: the default target) */
  const char *config_json; /* --config */
  bool has_config_index;
  uint64_t config_index;
  const char *suite;
  const char *cores_text;
  int cores[OB_CLI_MAX_CORES];
  int ncores;
  bool threads_set;
  ob_measure_opts mo;      /* ob_measure_opts_default() plus the flags */
  bool print_source, print_ir, json, dry_run, help;
  bool build_only;   /* op, bench: build and check launch limits, do not run */
  const char *vs;    /* bench: baseline to measure beside opbench ("onednn") */
  int search_budget; /* bench: configs per template to search; 0: defaults only */
  bool no_winograd;  /* bench: leave out the Winograd templates */
  int verbose;
  /* tune */
  const char *tuner;       /* --tuner (default xgb) */
  int trials;              /* --trials (default 200) */
  int early_stopping;      /* --early-stopping (0: off) */
  int batch;               /* --batch (0: the loop's default) */
  const char *db_path;     /* --db (default ./opbench.db) */
  const char *log_path;    /* --log */
  bool no_transfer;        /* --no-transfer: xgb tuners ignore the db's records */
  bool reconfirm;          /* --reconfirm: confirm the best stored configs again */
  bool remeasure;          /* --remeasure: tune measures again, import replaces */
  /* db */
  const char *action;      /* best, top, stats, export, import, push, pull */
  const char *file;        /* import: the AutoTVM log */
  const char *workload;    /* --workload KEY */
  const char *host;        /* --host FINGERPRINT|this|any (default this) */
  const char *resources;   /* --resources TEXT|any */
  const char *format;      /* --format csv|autotvm (default csv) */
  const char *out;         /* --out FILE (default -: stdout) */
  const char *shared;      /* --shared URL: push/pull's other store ($OPBENCH_SHARED_DB) */
  int top;                 /* --top N (default 10) */
  /* models (models, export-onnx, run-reference, space --modelname) */
  const char *modelsource; /* --modelsource (default local) */
  const char *modelname;   /* --modelname */
  const char *modelpath;   /* --modelpath (onnx) */
  int64_t batchsize, seqlen, input_size, hidden; /* 0: the model's default (batch 1) */
  const char *sha256;      /* --sha256 (remoteonnx) */
  int64_t max_download;    /* --max-download BYTES (remoteonnx) */
  bool print_graph;        /* --print-graph: the graph after the passes */
  bool no_passes;          /* --no-passes */
  double key_ops;          /* --key-ops P (0: all tasks) */
  int lanes;               /* --lanes N for layout planning (0: from the host) */
  bool seed_set;
  bool timeout_set;        /* --timeout given */
  const char *input_file;  /* --input FILE.npy */
  const char *save_output; /* --save-output FILE.npy */
  const char *save_io;     /* --save-io DIR */
  /* schedule */
  int sched_r, sched_s;    /* --r (3), --s (8) */
  int sched_cores;         /* --cores N (0: this machine's) */
  const char *schedule_out, *schedule_in, *timeline; /* --schedule-out, --schedule, --timeline */
  const char *scheduler;   /* --scheduler: which schedule --schedule-out/--timeline take (ios) */
  double gflops, gbps, efficiency, corun; /* the FLOPs model (0: defaults) */
  bool ios_original, no_merge, print_stages;
  int max_part;            /* --max-part (0: 64) */
  /* fleet (worker, fleet status|keygen, tune/bench --fleet) */
  const char *fleet;       /* --fleet / --broker URL, or made from --host/--port */
  char fleet_url[600];     /* the URL made from --host/--port */
  const char *port;        /* --port */
  const char *device_key;  /* --device-key */
  const char *fleet_key;   /* --fleet-key FILE */
  int max_jobs;            /* worker: --max-jobs N (0: serve until stopped) */
  double claim_timeout;    /* worker: --claim-timeout S (0: the default) */
  /* profile */
  const char *sizes;       /* --sizes GRID */
  const char *threads_list;/* --threads 1,2 (profile: a list) */
  const char *core_sets;   /* --cores 0/1/0-1 (profile: sets separated by '/') */
  const char *knobs;       /* --knobs base|neighbours[:N]|random:N */
  const char *corun_spec[16]; /* --corun OP:SHAPE (repeatable) | tasks */
  int ncorun_spec;
  const char *corun_mode;  /* --corun-mode stream|full|both */
  const char *pressure;    /* --cache-pressure MIB[,MIB...] */
  const char *limits;      /* --limits auto|again|quick|none */
  bool core_types;         /* --core-types */
  /* report */
  const char *schedules[16]; /* --schedule FILE (repeatable) */
  int nschedules;
  const char *table;       /* db export --table measurements|profiles */
  const char *cache_state; /* db best|top|export --cache warm|cold|cold-weights|any */
  /* predict (and schedule --predictor) */
  const char *predictor;   /* --predictor FILE: a model file of opbench predict train */
  const char *split;       /* --split workload|model (default workload) */
  const char *test_models; /* --test-models a,b: the held-out models of --split model */
  int folds;               /* --folds K (default 5) */
  int rounds, members;     /* --rounds, --members (0: the trainer's defaults) */
  bool measure_model;      /* --measure: predict --modelname also runs the model */
  const char *calibrate;   /* --calibrate M: the runtime overhead's calibration model (resnet-18) */
  const char *sched_cost;  /* --cost measured|predicted (NULL: plan only, nothing run) */
  bool cross;              /* --cross: the specialisation matrix */
  int sched_threads[8];    /* --threads T1,T2.. of schedule --cross */
  int nsched_threads;
  /* run, and tune with a model (the collector) */
  const char *kernels;     /* --kernels tuned|default|onednn (run; default tuned) */
  bool profile;            /* --profile: per-node breakdown */
  bool warm;               /* --warm: tune a model with warm caches (its default: --flush-weights) */
  bool record_steps;       /* --record-steps: store in-graph step latencies in --db (run) */
  const char *executor;    /* --executor graph|vm (default graph) */
  int iftune, ifcompare;   /* --iftune/--ifcompare true|false (tune with a model; default true) */
  bool model_tune;         /* tune was given a model, not --op */
  int64_t batchsizes[16];  /* --batchsize N[,N...]: the requests of --executor vm */
  int nbatchsizes;
  int64_t seqlens[16];     /* --seqlen N[,N...] */
  int nseqlens;
  double check_tol;        /* --check-tol (0: 1e-3) */
} cli_args;

/* Prints "opbench: error: <message>" on stderr; returns OB_CLI_EXIT_ERROR. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses argv[2..] for subcommand `cmd` into `a`. On bad input prints the
 * error and returns false. */
bool cli_parse(ob_ctx *ctx, cli_cmd cmd, int argc, char **argv, cli_args *a);
void cli_usage(FILE *f, cli_cmd cmd);
const char *cli_cmd_name(cli_cmd cmd);

/* Builds a workload from text as the command line or a suite line gives it.
 * stride/pad/dilation/epilogue may be NULL. `flagstyle` names the inputs as
 * flags ("--stride") rather than columns ("stride") in messages. On failure
 * the ctx holds a message naming the input at fault. */
ob_status cli_workload(ob_ctx *ctx, const char *op, const char *shape, const char *stride,
                       const char *pad, const char *dilation, const char *epilogue,
                       bool flagstyle, ob_workload *out);

/* The target of --target (else the default: $OPBENCH_TARGET or the host's
 * best ISA) into *out (caller frees). `measure`: the command builds and
 * runs kernels, so what is missing to build or run them here (compiler,
 * sysroot, emulator, CPU features) is an error now, before anything is
 * measured. Prints the error and returns false on failure. */
bool cli_target(ob_ctx *ctx, const cli_args *a, bool measure, ob_target **out);
/* For a GPU target: the device its timings come from, and for an OpenCL
 * CPU device (PoCL) that they are CPU timings (into buf); NULL for CPU
 * targets. */
const char *cli_timing_note(const ob_target *t, char *buf, size_t cap);

/* The task of the workload flags (--op/--shape/... and --template) for
 * `target` (borrowed); prints the error and returns NULL on failure. */
ob_task *cli_task(ob_ctx *ctx, const cli_args *a, const ob_target *target);

/* Parses a whole decimal integer in [lo, hi]; false if it is not one. */
OB_NODISCARD bool cli_parse_i64(const char *text, int64_t lo, int64_t hi, int64_t *out);

/* Subcommands; each returns the process exit status. */
int cli_cmd_op(ob_ctx *ctx, const cli_args *a);
int cli_cmd_space(ob_ctx *ctx, const cli_args *a);
int cli_cmd_bench(ob_ctx *ctx, const cli_args *a);
int cli_cmd_ops(ob_ctx *ctx, const cli_args *a);
int cli_cmd_tune(ob_ctx *ctx, const cli_args *a);
int cli_cmd_db(ob_ctx *ctx, const cli_args *a);
int cli_cmd_models(ob_ctx *ctx, const cli_args *a);
int cli_cmd_export_onnx(ob_ctx *ctx, const cli_args *a);
int cli_cmd_run_reference(ob_ctx *ctx, const cli_args *a);
int cli_cmd_schedule(ob_ctx *ctx, const cli_args *a);
int cli_cmd_worker(ob_ctx *ctx, const cli_args *a);
int cli_cmd_fleet(ob_ctx *ctx, const cli_args *a);
/* The fleet measurer of --fleet (fleet.c): the client (caller frees with
 * ob_fleet_client_free), or NULL after printing the error. */
struct ob_fleet_client *cli_fleet_client(ob_ctx *ctx, const cli_args *a);
int cli_cmd_profile(ob_ctx *ctx, const cli_args *a);
int cli_cmd_report(ob_ctx *ctx, const cli_args *a);
int cli_cmd_predict(ob_ctx *ctx, const cli_args *a);
int cli_cmd_run(ob_ctx *ctx, const cli_args *a);
/* opbench tune --modelname ...: the collector (tune every task, compare
 * untuned, tuned and oneDNN kernels end to end). */
int cli_cmd_tune_model(ob_ctx *ctx, const cli_args *a);

/* npy.c: model inputs and outputs as files. */
const char *cli_dtype_text(ob_dtype dt);
struct ob_graph;
void cli_shape_text(const struct ob_graph *g, int t, char *buf, size_t cap);
/* NumPy .npy format 1.0 (C order). */
bool cli_npy_write(const char *path, ob_dtype dt, int nd, const int64_t *dims, const void *data, size_t bytes);
/* Graph input t from a .npy of its dtype and shape, or from raw float32 of
 * exactly its size; false with a message naming the file otherwise. */
bool cli_npy_read(const char *path, const struct ob_graph *g, int t, void *out, char *err, size_t cap);
/* Loads the model of the flags (zero_weights: weights left zero, for
 * commands that only count or plan); prints the error and returns NULL. */
struct ob_graph *cli_model_load(ob_ctx *ctx, const cli_args *a, bool zero_weights);
/* opbench space --modelname ...: the config space of every task of a model. */
int cli_cmd_model_space(ob_ctx *ctx, const cli_args *a);

/* ---- suite files (suite.c) ------------------------------------------------ */
#define CLI_SUITE_MAX_BYTES (16 << 20) /* bytes of a suite file */
#define CLI_SUITE_MAX_LINE 65536       /* bytes of one line */
#define CLI_SUITE_MAX_LINES 1000000    /* lines, comments included */
#define CLI_SUITE_MAX_WORKLOADS 10000  /* workload lines */

/* One workload line of a suite: `op shape [stride pad] count`. */
typedef struct cli_suite_entry {
  int line;
  char op[32];
  char shape[128];
  char stride[24], pad[24]; /* "" when the line gives none */
  int64_t count;
  ob_workload wl;
} cli_suite_entry;

/* Parses suite text (modified in place) into *out (malloc'd, *n entries).
 * Prints "opbench: error: FILE:LINE: ..." and returns false on the first
 * malformed line, or when the suite lists nothing or too much. */
bool cli_suite_parse(ob_ctx *ctx, const char *file, char *text, cli_suite_entry **out, int *n);
/* Reads and parses suite `file` ("resnet18": the built-in suite) within the
 * limits above; errors as cli_suite_parse, for unreadable files too. */
bool cli_suite_read(ob_ctx *ctx, const char *file, cli_suite_entry **out, int *n);

/* timing.c: a timing record as --json members of o (number used, repeat,
 * floor, cache state, timer overhead, flags), as text lines under a
 * result (the protocol; the stability rule's verdict, the resolution flag
 * and the emulator's caveat when they apply), and as a short flag list for
 * tables ("noisy", "res", "emu", comma-joined, or ""). */
struct cJSON;
void cli_timing_json(struct cJSON *o, const ob_timing *t);
void cli_timing_text(const ob_timing *t, const ob_timing_opts *asked, int nthreads);
const char *cli_timing_flags(const ob_timing *t);

/* The built-in suite "resnet18" (suite_resnet18.c). */
extern const char cli_suite_resnet18[];

#endif
