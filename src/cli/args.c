/* args.c: the command line of `opbench`: the flag table, value parsing with
 * messages that name the flag and the value at fault, the help texts, and
 * the translation of shape/stride/pad text into an ob_workload through the
 * library's own setters. Nothing here allocates: cli_args points into argv. */
#include "cli.h"

#include "opbench/fleet.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_error(const char *fmt, ...) {
  /* One line whatever the message holds: a file name with a newline, a
   * library's multi-line text. Control characters become spaces. */
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  fprintf(stderr, "opbench: error: %s\n", msg);
  return OB_CLI_EXIT_ERROR;
}

static const char *const cmd_names[CLI_CMD_COUNT] = {"op",  "bench", "space", "ops", "tune",
                                                     "db",  "models", "export-onnx", "run-reference",
                                                     "schedule", "worker", "fleet", "profile", "report", "predict", "run"};

const char *cli_cmd_name(cli_cmd cmd) { return cmd_names[cmd]; }

/* ---- flag table ------------------------------------------------------------ */

enum {
  M_OP = 1u << CLI_CMD_OP,
  M_BENCH = 1u << CLI_CMD_BENCH,
  M_SPACE = 1u << CLI_CMD_SPACE,
  M_OPS = 1u << CLI_CMD_OPS,
  M_TUNE = 1u << CLI_CMD_TUNE,
  M_DB = 1u << CLI_CMD_DB,
  M_MODELS = 1u << CLI_CMD_MODELS,
  M_EXPORT = 1u << CLI_CMD_EXPORT_ONNX,
  M_RUNREF = 1u << CLI_CMD_RUN_REFERENCE,
  M_SCHED = 1u << CLI_CMD_SCHEDULE,
  M_WORKER = 1u << CLI_CMD_WORKER,
  M_FLEET = 1u << CLI_CMD_FLEET,
  M_FLEET_CLIENT = M_TUNE | M_BENCH, /* measure through a fleet */
  M_PROFILE = 1u << CLI_CMD_PROFILE,
  M_REPORT = 1u << CLI_CMD_REPORT,
  M_PRED = 1u << CLI_CMD_PREDICT,
  M_RUN = 1u << CLI_CMD_RUN,
  M_MODEL = M_MODELS | M_EXPORT | M_RUNREF | M_SPACE | M_SCHED | M_PROFILE | M_RUN | M_TUNE | M_PRED,
  M_ALL = M_OP | M_BENCH | M_SPACE | M_OPS | M_TUNE | M_DB | M_MODELS | M_EXPORT | M_RUNREF | M_SCHED |
          M_WORKER | M_FLEET | M_PROFILE | M_REPORT | M_PRED | M_RUN,
  M_MEASURE = M_OP | M_BENCH | M_TUNE | M_PROFILE,
  M_TIMING = M_MEASURE | M_RUN,
  M_WORKLOAD = M_OP | M_SPACE | M_TUNE | M_DB | M_PROFILE | M_PRED,
};

typedef enum flag_id {
  F_HELP, F_VERBOSE, F_SHAPE, F_STRIDE, F_PAD, F_DILATION, F_EPILOGUE, F_TEMPLATE,
  F_CONFIG, F_CONFIG_INDEX, F_SUITE, F_DRY_RUN, F_THREADS, F_CORES, F_NUMBER, F_REPEAT,
  F_MIN_REPEAT_MS, F_MAX_CV, F_MAX_OFFCPU, F_STABILITY_BUDGET, F_FLUSH, F_FLUSH_WEIGHTS, F_WARM, F_TIMEOUT, F_BUILD_TIMEOUT, F_CC, F_SEED, F_PRINT_SOURCE,
  F_PRINT_IR, F_JSON, F_VS, F_SEARCH, F_OP, F_TUNER, F_TRIALS, F_EARLY_STOPPING, F_BATCH,
  F_DB, F_LOG, F_NO_TRANSFER, F_REMEASURE, F_RECONFIRM, F_WORKLOAD, F_HOST, F_RESOURCES, F_FORMAT, F_OUT,
  F_TOP, F_MODELSOURCE, F_MODELNAME, F_MODELPATH, F_BATCHSIZE, F_SEQLEN, F_INPUT_SIZE, F_HIDDEN,
  F_SHA256, F_MAX_DOWNLOAD, F_PRINT_GRAPH, F_NO_PASSES, F_KEY_OPS, F_LANES, F_INPUT, F_SAVE_OUTPUT,
  F_SAVE_IO, F_TARGET, F_NO_WINOGRAD, F_R, F_S, F_SCHEDULE_OUT, F_SCHEDULE, F_TIMELINE, F_SCHEDULER, F_GFLOPS,
  F_GBPS, F_EFFICIENCY, F_CORUN, F_IOS_ORIGINAL, F_NO_MERGE, F_MAX_PART, F_PRINT_STAGES, F_SHARED,
  F_FLEET, F_BROKER, F_DEVICE_KEY, F_FLEET_KEY, F_PORT, F_MAX_JOBS, F_CLAIM_TIMEOUT, F_BUILD_ONLY, F_SIZES,
  F_KNOBS, F_CORUN_MODE, F_CACHE_PRESSURE, F_LIMITS, F_CORE_TYPES, F_TABLE, F_CACHE_STATE,
  F_PREDICTOR, F_SPLIT, F_FOLDS, F_TEST_MODELS, F_ROUNDS, F_MEMBERS, F_KERNELS,
  F_PROFILE, F_RECORD_STEPS, F_EXECUTOR, F_IFTUNE, F_IFCOMPARE, F_CHECK_TOL, F_SCHED_COST, F_CROSS, F_MEASURE, F_CALIBRATE, F_COUNT
} flag_id;

typedef struct flag_def {
  const char *name;
  bool has_arg;
  unsigned cmds;
} flag_def;

static const flag_def flags[F_COUNT] = {
    [F_HELP] = {"--help", false, M_ALL},
    [F_VERBOSE] = {"--verbose", false, M_ALL},
    [F_SHAPE] = {"--shape", true, M_WORKLOAD},
    [F_STRIDE] = {"--stride", true, M_WORKLOAD},
    [F_PAD] = {"--pad", true, M_WORKLOAD},
    [F_DILATION] = {"--dilation", true, M_WORKLOAD},
    [F_EPILOGUE] = {"--epilogue", true, M_WORKLOAD},
    [F_TEMPLATE] = {"--template", true, M_WORKLOAD | M_BENCH},
    [F_CONFIG] = {"--config", true, M_OP | M_PRED},
    [F_CONFIG_INDEX] = {"--config-index", true, M_OP | M_PRED},
    [F_SUITE] = {"--suite", true, M_BENCH | M_PROFILE | M_PRED},
    [F_DRY_RUN] = {"--dry-run", false, M_BENCH | M_PROFILE},
    [F_THREADS] = {"--threads", true, M_TIMING | M_DB | M_SCHED | M_WORKER | M_PRED},
    [F_CORES] = {"--cores", true, M_TIMING | M_DB | M_SCHED | M_WORKER | M_PRED},
    [F_NUMBER] = {"--number", true, M_TIMING},
    [F_REPEAT] = {"--repeat", true, M_TIMING},
    [F_MIN_REPEAT_MS] = {"--min-repeat-ms", true, M_TIMING},
    [F_MAX_CV] = {"--max-cv", true, M_TIMING},
    [F_MAX_OFFCPU] = {"--max-offcpu", true, M_TIMING},
    [F_STABILITY_BUDGET] = {"--stability-budget", true, M_TIMING},
    [F_FLUSH] = {"--flush", false, M_MEASURE},
    [F_FLUSH_WEIGHTS] = {"--flush-weights", false, M_OP | M_TUNE},
    [F_WARM] = {"--warm", false, M_TUNE},
    [F_TIMEOUT] = {"--timeout", true, M_TIMING},
    [F_BUILD_TIMEOUT] = {"--build-timeout", true, M_TIMING},
    [F_CC] = {"--cc", true, M_TIMING},
    [F_SEED] = {"--seed", true, M_TIMING | M_MODEL | M_PRED},
    [F_PRINT_SOURCE] = {"--print-source", false, M_OP},
    [F_PRINT_IR] = {"--print-ir", false, M_OP},
    [F_JSON] = {"--json", false, M_MEASURE | M_DB | M_MODELS | M_SCHED | M_FLEET | M_PRED},
    [F_VS] = {"--vs", true, M_BENCH},
    [F_SEARCH] = {"--search", true, M_BENCH},
    [F_OP] = {"--op", true, M_TUNE | M_DB | M_PROFILE | M_PRED},
    [F_TUNER] = {"--tuner", true, M_TUNE},
    [F_TRIALS] = {"--trials", true, M_TUNE},
    [F_EARLY_STOPPING] = {"--early-stopping", true, M_TUNE},
    [F_BATCH] = {"--batch", true, M_TUNE},
    [F_DB] = {"--db", true, M_TUNE | M_DB | M_PROFILE | M_REPORT | M_PRED | M_RUN | M_SCHED},
    [F_LOG] = {"--log", true, M_TUNE},
    [F_NO_TRANSFER] = {"--no-transfer", false, M_TUNE},
    [F_REMEASURE] = {"--remeasure", false, M_TUNE | M_DB | M_PROFILE},
    [F_RECONFIRM] = {"--reconfirm", false, M_TUNE},
    [F_WORKLOAD] = {"--workload", true, M_DB},
    [F_HOST] = {"--host", true, M_DB | M_FLEET_CLIENT | M_WORKER | M_FLEET | M_PRED},
    [F_RESOURCES] = {"--resources", true, M_DB},
    [F_FORMAT] = {"--format", true, M_DB},
    [F_OUT] = {"--out", true, M_DB | M_EXPORT | M_SPACE | M_FLEET | M_REPORT | M_PRED},
    [F_TOP] = {"--top", true, M_DB},
    [F_MODELSOURCE] = {"--modelsource", true, M_MODEL},
    [F_MODELNAME] = {"--modelname", true, M_MODEL},
    [F_MODELPATH] = {"--modelpath", true, M_MODEL},
    [F_BATCHSIZE] = {"--batchsize", true, M_MODEL},
    [F_SEQLEN] = {"--seqlen", true, M_MODEL},
    [F_INPUT_SIZE] = {"--input-size", true, M_MODEL | M_PRED},
    [F_HIDDEN] = {"--hidden", true, M_MODEL},
    [F_SHA256] = {"--sha256", true, M_MODEL},
    [F_MAX_DOWNLOAD] = {"--max-download", true, M_MODEL},
    [F_PRINT_GRAPH] = {"--print-graph", false, M_MODELS | M_RUNREF},
    [F_NO_PASSES] = {"--no-passes", false, M_MODEL},
    [F_KEY_OPS] = {"--key-ops", true, M_MODELS | M_SPACE | M_PROFILE | M_TUNE},
    [F_LANES] = {"--lanes", true, M_MODELS | M_RUNREF | M_RUN | M_TUNE},
    [F_INPUT] = {"--input", true, M_RUNREF | M_RUN | M_TUNE},
    [F_SAVE_OUTPUT] = {"--save-output", true, M_RUNREF | M_RUN | M_TUNE},
    [F_SAVE_IO] = {"--save-io", true, M_RUNREF},
    [F_TARGET] = {"--target", true, M_TIMING | M_SPACE | M_DB | M_MODELS | M_PRED},
    [F_NO_WINOGRAD] = {"--no-winograd", false, M_BENCH},
    [F_R] = {"--r", true, M_SCHED},
    [F_S] = {"--s", true, M_SCHED},
    [F_SCHEDULE_OUT] = {"--schedule-out", true, M_SCHED},
    [F_SCHEDULE] = {"--schedule", true, M_SCHED | M_REPORT | M_RUN},
    [F_TIMELINE] = {"--timeline", true, M_SCHED},
    [F_SCHEDULER] = {"--scheduler", true, M_SCHED},
    [F_GFLOPS] = {"--gflops", true, M_SCHED},
    [F_GBPS] = {"--gbps", true, M_SCHED},
    [F_EFFICIENCY] = {"--efficiency", true, M_SCHED},
    [F_CORUN] = {"--corun", true, M_SCHED | M_PROFILE | M_TUNE},
    [F_IOS_ORIGINAL] = {"--ios-original", false, M_SCHED},
    [F_NO_MERGE] = {"--no-merge", false, M_SCHED},
    [F_MAX_PART] = {"--max-part", true, M_SCHED},
    [F_PRINT_STAGES] = {"--print-stages", false, M_SCHED},
    [F_SHARED] = {"--shared", true, M_DB},
    [F_FLEET] = {"--fleet", true, M_FLEET_CLIENT},
    [F_BROKER] = {"--broker", true, M_WORKER | M_FLEET},
    [F_DEVICE_KEY] = {"--device-key", true, M_FLEET_CLIENT | M_WORKER},
    [F_FLEET_KEY] = {"--fleet-key", true, M_FLEET_CLIENT | M_WORKER},
    [F_PORT] = {"--port", true, M_FLEET_CLIENT | M_WORKER | M_FLEET},
    [F_MAX_JOBS] = {"--max-jobs", true, M_WORKER},
    [F_CLAIM_TIMEOUT] = {"--claim-timeout", true, M_WORKER},
    [F_BUILD_ONLY] = {"--build-only", false, M_OP | M_BENCH},
    [F_SIZES] = {"--sizes", true, M_PROFILE},
    [F_KNOBS] = {"--knobs", true, M_PROFILE},
    [F_CORUN_MODE] = {"--corun-mode", true, M_PROFILE},
    [F_CACHE_PRESSURE] = {"--cache-pressure", true, M_PROFILE},
    [F_LIMITS] = {"--limits", true, M_PROFILE},
    [F_CORE_TYPES] = {"--core-types", false, M_PROFILE},
    [F_TABLE] = {"--table", true, M_DB},
    [F_CACHE_STATE] = {"--cache", true, M_DB},
    [F_PREDICTOR] = {"--predictor", true, M_PRED | M_SCHED},
    [F_SPLIT] = {"--split", true, M_PRED},
    [F_FOLDS] = {"--folds", true, M_PRED},
    [F_TEST_MODELS] = {"--test-models", true, M_PRED},
    [F_ROUNDS] = {"--rounds", true, M_PRED | M_BENCH},
    [F_MEMBERS] = {"--members", true, M_PRED},
    [F_SCHED_COST] = {"--cost", true, M_SCHED},
    [F_CROSS] = {"--cross", false, M_SCHED},
    [F_KERNELS] = {"--kernels", true, M_RUN},
    [F_PROFILE] = {"--profile", false, M_RUN | M_TUNE},
    [F_RECORD_STEPS] = {"--record-steps", false, M_RUN | M_TUNE},
    [F_EXECUTOR] = {"--executor", true, M_RUN | M_TUNE},
    [F_IFTUNE] = {"--iftune", true, M_TUNE},
    [F_IFCOMPARE] = {"--ifcompare", true, M_TUNE},
    [F_CHECK_TOL] = {"--check-tol", true, M_RUN | M_TUNE},
    [F_MEASURE] = {"--measure", false, M_PRED},
    [F_CALIBRATE] = {"--calibrate", true, M_PRED},
};

static const char fleet_client_help[] =
    "fleet (measure on remote workers instead of here):\n"
    "  --fleet URL          the broker: redis://USER:PASSWORD@HOST:PORT\n"
    "  --host H, --port P   the same, in the seed collector's spelling (defaults\n"
    "                       $TVM_TRACKER_HOST, $TVM_TRACKER_PORT; the login from\n"
    "                       $OPBENCH_FLEET_USER and $OPBENCH_FLEET_PASSWORD)\n"
    "  --device-key KEY     the workers' device key\n"
    "  --fleet-key FILE     the fleet's signing key (mode 0600; default\n"
    "                       $OPBENCH_FLEET_KEY, else ~/.config/opbench/fleet.key)\n";

/* ---- help ------------------------------------------------------------------ */

static const char measure_help[] =
    "measurement:\n"
    "  --threads N          threads of the kernel's pool (default 1)\n"
    "  --cores LIST         core set, e.g. 0-3 or 0,2 (default 0..N-1)\n"
    "  --number N           calls per repeat, fixed (default: adaptive, calibrated so that\n"
    "                       one repeat lasts at least the floor)\n"
    "  --repeat N           repeats kept, 1..64 (default 5)\n"
    "  --min-repeat-ms MS   the floor: a repeat lasts at least this long; with --number,\n"
    "                       number grows from N until it does (default 2, the target's;\n"
    "                       none with --number)\n"
    "  --max-cv PCT         stability rule: while the CV of the last repeats is above\n"
    "                       PCT %, take more repeats within the budget (default 5; 0: off)\n"
    "  --max-offcpu PCT     retake a repeat whose thread was off its CPU (preempted) for\n"
    "                       more than PCT % of it, at most --repeat times (default 1; 0: off)\n"
    "  --stability-budget S extra seconds the stability rule may spend per measurement\n"
    "                       (default: as long as the repeats before it took)\n"
    "  --flush              cold caches: flush the inputs before every call (default warm;\n"
    "                       every record states which)\n"
    "  --flush-weights      as --flush, but the first input (the activation) stays warm, as\n"
    "                       in a model, where the layer before leaves it in cache while\n"
    "                       the weights come cold (AutoTVM's enable_cpu_cache_flush); the\n"
    "                       records say cold-weights. Tuning a model with warm weights can pick a\n"
    "                       config that re-reads them from a warm L3 and runs 2x slower\n"
    "                       in the graph\n"
    "  --timeout S          run time limit of one variant, seconds (default 10)\n"
    "  --build-timeout S    compile time limit of one variant, seconds (default 10)\n"
    "  --cc CC              C compiler (default $OPBENCH_CC, else cc)\n"
    "  --seed N             seed of the random inputs\n"
    "  --target TEXT        what kernels are built for: llvm (the host's best ISA,\n"
    "                       default; $OPBENCH_TARGET overrides), llvm -mcpu=CPU,\n"
    "                       c -isa=avx512|avx2|scalar, c -isa=neon -triple=aarch64-linux-gnu,\n"
    "                       cuda [-arch=sm_XY] [-device=N] (NVRTC; runs where a GPU is),\n"
    "                       opencl [-platform=P] [-device=N] (PoCL runs it on the CPU)\n"
    "  --build-only         (op, bench) build the kernels and check their launch limits\n"
    "                       without running them: a cuda target needs no GPU for it\n"
    "  --json               print one JSON object instead of text\n";

static const char model_help[] =
    "model:\n"
    "  --modelsource S      local (default), transformers, simple, onnx or remoteonnx\n"
    "  --modelname M        zoo name (see opbench models), or the URL for remoteonnx\n"
    "  --modelpath FILE     the ONNX file for --modelsource onnx\n"
    "  --batchsize N        batch size (default 1)\n"
    "  --seqlen N           sequence length (transformers, bert-base, lstm; ONNX dynamic dims)\n"
    "  --input-size N       input height and width of a CNN (default: the model's own)\n"
    "  --hidden N           hidden size of the lstm (default 512)\n"
    "  --seed N             seed of the random weights (default 1) and inputs\n"
    "  --sha256 HEX         remoteonnx: the expected SHA-256 of the file\n"
    "  --max-download BYTES remoteonnx: size limit (default 2 GiB)\n"
    "  --no-passes          leave the graph as built or imported\n"
    "  --print-graph        print the graph (after the passes)\n";

static const char workload_help[] =
    "workload:\n"
    "  --shape TEXT         e.g. N=1,C=64,H=56,W=56,K=64,R=3,S=3 (conv2d), M=1,N=1000,K=512 (dense)\n"
    "  --stride S|SH,SW     conv2d stride\n"
    "  --pad P|PH,PW|PT,PL,PB,PR  conv2d padding\n"
    "  --dilation D|DH,DW   conv2d dilation\n"
    "  --epilogue LIST      fused elementwise ops, e.g. bias,relu\n"
    "  --template NAME      schedule template (default: the operator's first; see opbench ops)\n";

static const char target_help[] =
    "  --target TEXT        the target whose config space to show (default: the host's\n"
    "                       best ISA; see opbench op --help)\n";

void cli_usage(FILE *f, cli_cmd cmd) {
  switch (cmd) {
  case CLI_CMD_OP:
    fprintf(f,
            "usage: opbench op <op> --shape TEXT [workload flags]\n"
            "                  [--config JSON | --config-index I] [measurement flags]\n"
            "                  [--print-source] [--print-ir]\n"
            "Builds one variant (a config of a schedule template), checks it against the\n"
            "operator's reference and times it. Exit status 2 on bad input or when the\n"
            "variant fails (compile error, crash, timeout, wrong answer).\n\n%s"
            "config (default: the template's fallback config):\n"
            "  --config JSON        AutoTVM entity form, e.g. '{\"entity\": [[\"tile_k\",\"sp\",[-1,8]]]}'\n"
            "  --config-index I     index into the config space (see opbench space)\n"
            "  --print-source       print the generated C, then measure\n"
            "  --print-ir           print the lowered loop nest, then measure\n\n%s",
            workload_help, measure_help);
    break;
  case CLI_CMD_BENCH:
    fprintf(f,
            "usage: opbench bench --suite FILE|resnet18 [--vs onednn|cudnn] [--search exhaustive|random:N]\n"
            "                     [--template LIST] [--no-winograd] [--rounds N] [--dry-run] [measurement flags]\n"
            "Measures the default config of every workload of a suite and prints a table,\n"
            "the geometric mean of GFLOPS and the total latency weighted by count.\n"
            "--search finds each workload's best config over every template of its operator\n"
            "  for the target (conv2d on a CPU: the direct templates and conv2d_winograd.x86\n"
            "  where it applies, 3x3 stride 1): all configs (exhaustive, or random:N when the\n"
            "  space has at most N), else N random ones per template, the template's default\n"
            "  config always among them; the best 3 and the default are re-measured in full\n"
            "  and the fastest of that re-measurement wins, so a search never loses the\n"
            "  default (with --vs and rounds: re-measured in 3 rounds, order reversed every\n"
            "  other one, each config judged by its fastest round, as the final figures).\n"
            "--template LIST      a comma list of template names (see opbench ops): an\n"
            "  operator that has a listed template uses only its listed ones (its default\n"
            "  config is that of the first listed); other operators keep all of theirs.\n"
            "  e.g. --template conv2d_NCHWc.x86,conv2d_nchw.x86 (direct convolution only).\n"
            "--no-winograd        leaves out the Winograd templates (the same as naming every\n"
            "  other template of conv2d).\n"
            "--vs onednn measures oneDNN on the same workloads in the same process: its\n"
            "  direct convolution (what frameworks run) and, for conv2d workloads it has a\n"
            "  Winograd kernel for, its Winograd algorithm too, as two columns; ratios are\n"
            "  oneDNN time / opbench time (above 1 opbench is faster) against each and\n"
            "  against the faster of the two ('vendor best'). Ends with the worst layer and\n"
            "  'geomean speed ratio opbench/vendor-best: Z', then\n"
            "  'geomean speed ratio opbench/onednn: X (default: Y)' against oneDNN direct.\n"
            "  With an opencl target whose device is the CPU (PoCL), oneDNN runs on the same\n"
            "  cores, one thread per compute unit.\n"
            "--rounds N           (with --vs; default 9) each workload's final figures come from\n"
            "  N interleaved rounds: oneDNN's Winograd, opbench's best, the baseline's direct\n"
            "  kernel and opbench's default in turn, the order reversed every other round;\n"
            "  each side's figure is its fastest round (a round: the median of its repeats),\n"
            "  as a slow window of the host only slows rounds down; the geomeans on the\n"
            "  rounds' medians are printed too. 1: one measurement per side. At most 64.\n"
            "--vs cudnn (with --target cuda) measures cuDNN (convolutions) and cuBLAS (matrix\n"
            "  products) on the same GPU, FP32, beside opbench's kernels.\n"
            "Winograd GFLOPS (opbench's and oneDNN's) count the direct convolution's nominal\n"
            "  FLOPs; Winograd kernels are checked with a tolerance for Winograd's error,\n"
            "  printed in the output.\n"
            "Suite lines: 'op shape [stride pad] count'; '#' starts a comment. The name\n"
            "resnet18 is the built-in suite of ResNet-18's 11 distinct conv2d workloads\n"
            "(write ./resnet18 for a file of that name). --dry-run only parses and lists.\n\n%s",
            measure_help);
    fprintf(f, "\n%s", fleet_client_help);
    break;
  case CLI_CMD_SPACE:
    fprintf(f,
            "usage: opbench space <op> --shape TEXT [workload flags]\n"
            "       opbench space --modelname M [model flags] [--key-ops P] [--out FILE.json]\n"
            "Prints the knobs of the template's config space, its size and the default config;\n"
            "with a model, the config space of every task of the model (after the passes), as\n"
            "JSON into --out (knobs with all their entities, sizes, default configs).\n"
            "Spaces depend on the target (vector lanes, registers).\n\n%s%s\n%s",
            workload_help, target_help, model_help);
    break;
  case CLI_CMD_OPS:
    fprintf(f, "usage: opbench ops\nLists the operators and their schedule templates.\n");
    break;
  case CLI_CMD_MODELS:
    fprintf(f,
            "usage: opbench models [model flags] [--print-graph] [--no-passes] [--key-ops P] [--lanes N] [--json]\n"
            "Without --modelname (and --modelpath): lists the zoo with each model's multiply-adds\n"
            "and parameters beside the published figures. With a model: its inputs and outputs,\n"
            "multiply-adds and parameters, what the passes did, and its tasks (the distinct\n"
            "workloads with their counts, GFLOPs and share of the estimated time, which is\n"
            "proportional to FLOPs); --key-ops P keeps the tasks that make up P%% of it.\n\n%s",
            model_help);
    break;
  case CLI_CMD_EXPORT_ONNX:
    fprintf(f,
            "usage: opbench export-onnx --modelname M --out FILE [model flags] [--no-passes]\n"
            "Writes the model (weights included) as an ONNX file, opset 17: the graph as built,\n"
            "before any pass (--no-passes is the default; the passes are never applied).\n\n%s",
            model_help);
    break;
  case CLI_CMD_RUN_REFERENCE:
    fprintf(f,
            "usage: opbench run-reference --modelname M [model flags] [--input FILE.npy]\n"
            "                             [--save-output FILE.npy] [--save-io DIR] [--no-passes]\n"
            "Runs the model's naive reference (double accumulation) on random inputs (--seed)\n"
            "or on --input (NumPy .npy of the first input's shape and type), after the passes\n"
            "unless --no-passes, and prints each output's shape and a checksum.\n"
            "  --save-output FILE   the first output as NumPy .npy (float32)\n"
            "  --save-io DIR        every input and output as DIR/input<i>.npy, DIR/output<i>.npy\n"
            "                       and their names in DIR/io.txt\n\n%s",
            model_help);
    break;
  case CLI_CMD_SCHEDULE:
    fprintf(f,
            "usage: opbench schedule --modelname M [model flags] [--r 3] [--s 8] [--cores N]\n"
            "                        [--schedule-out FILE] [--timeline FILE.svg] [--scheduler ios|greedy|sequential]\n"
            "                        [--schedule FILE] [--print-stages] [--json]\n"
            "Plans the model's operators (after the passes) as IOS does, on CPU core groups, with\n"
            "three schedulers: sequential (every operator on all cores), greedy (every ready\n"
            "operator at once, cores split evenly) and IOS's dynamic program (stages that merge\n"
            "convolutions or run groups of operators concurrently, each group on its own cores;\n"
            "the split of the cores is searched with each stage). Prints, for each: stages,\n"
            "groups per stage, predicted latency, the DP's statistics and the optimisation time.\n"
            "Latencies are PREDICTED by a per-operator model (below), not measured, unless --cost\n"
            "is given (then the schedules are also measured end to end on this machine).\n\n"
            "scheduling:\n"
            "  --r R                most operators in a group (default 3)\n"
            "  --s S                most groups in a stage (default 8; never more than the cores)\n"
            "  --cores N            plan for N cores (default: this machine's); beyond this\n"
            "                       machine the plan is a prediction for a machine not at hand\n"
            "  --ios-original       IOS's own endings: no overlapping groups merged (its known flaw)\n"
            "  --no-merge           no merge stages\n"
            "  --cross              specialisation: with --batchsize B1,B2.. and/or --threads T1,T2..,\n"
            "                       IOS plans for each setting, then each plan runs at every setting\n"
            "                       (measured end to end); prints the matrix\n"
            "  --cost MODE          predicted: plan with the per-operator records of --db at 1..N threads\n"
            "                       (stored from the runtime's per-step profile where missing; the\n"
            "                       FLOPs model for operators without one) and co-run factors per pair\n"
            "                       of operator kinds measured once on disjoint cores (kept in DB.corun),\n"
            "                       then measure the best few (IOS as asked, without merges, with r 2\n"
            "                       and 1, greedy, sequential) and keep the fastest; measured: every\n"
            "                       distinct stage the prediction finds within 5 %% of a state's best run\n"
            "                       and timed here by the stage executor while planning (no merges);\n"
            "                       both then measure the three schedules end to end (default configs)\n"
            "  --db FILE            the records of --cost (default ./opbench.db; created if missing)\n"
            "  --max-part P         most operators the DP plans at once (1..64, default 64)\n"
            "  --scheduler NAME     the schedule --schedule-out, --timeline and --print-stages take\n"
            "                       (ios, greedy or sequential; default ios)\n"
            "  --schedule-out FILE  write that schedule as JSON\n"
            "  --schedule FILE      also cost a schedule file (checked against the model: every\n"
            "                       operator once, after its inputs, disjoint cores per stage)\n"
            "  --timeline FILE.svg  draw that schedule as a timeline (gnuplot)\n"
            "  --print-stages       list its stages\n\n"
            "the per-operator model: at k threads, per graph node, 2 us + 2 us x (k-1) + max(FLOPs / (G x k^E),\n"
            "bytes / (B x k^E)); a group's time is the sum over its operators, times a co-run\n"
            "slowdown when other groups run beside it; a stage lasts as long as its slowest group:\n"
            "  --gflops G           GFLOP/s of one core (default 20)\n"
            "  --gbps B             GB/s of one core (default 8)\n"
            "  --efficiency E       thread scaling exponent (default 0.9)\n"
            "  --corun F            co-run slowdown factor (default 1.1)\n"
            "  --predictor FILE     per-operator latencies from a model file of opbench predict\n"
            "                       train instead (default configs, --threads = the group's\n"
            "                       cores; co-run factors from its interference model when it\n"
            "                       has one); operators it cannot describe keep the FLOPs model\n\n%s",
            model_help);
    break;
  case CLI_CMD_PREDICT:
    fprintf(f,
            "usage: opbench predict --op OP --shape TEXT [workload flags] [--threads N] [--cores LIST]\n"
            "                       [--config JSON | --config-index I] [--predictor FILE] [--db FILE] [--json]\n"
            "       opbench predict train --out FILE [--db FILE] [--op OP] [--rounds N] [--members N]\n"
            "       opbench predict eval [--split workload|model] [--folds K] [--test-models M,...] [--db FILE]\n"
            "       opbench predict corr|turnaround [--db FILE] [--predictor FILE] [--op OP]\n"
            "       opbench predict corun [--db FILE] [--folds K]\n"
            "       opbench predict nash --suite FILE --predictor FILE [--cores 8,16,64]\n"
            "       opbench predict --modelsource local --modelname M [--threads N] [--measure]\n"
            "                       [--input-size N] [--calibrate M] [--predictor FILE] [--db FILE] [-v]\n"
            "Latency predictors learned from the database's records (error-free, not emulated\n"
            "measurements and the profiler's solo points): per operator kind an ensemble of\n"
            "XGBoost regressors of log(seconds / roofline bound) on the workload (attributes, FLOPs,\n"
            "bytes, intensity), the config's loop nest (the tuner's itervar features), the\n"
            "resources (threads, cores, cache pressure) and the host's measured limits.\n"
            "  (no action)          predict one workload/config: latency, 90%% interval, and the\n"
            "                       measured median when the db holds one (default config unless\n"
            "                       --config/--config-index)\n"
            "  train                train on every record and write the model file (--out); the\n"
            "                       co-run interference model too when the db has co-run points\n"
            "  eval                 train on one side of a held-out split and print RMSPE, share\n"
            "                       within +-10%%, pairwise ranking accuracy, score@1, score@5:\n"
            "                       --split workload (K folds by workload, default 5) or --split\n"
            "                       model --test-models resnet-50,... (tasks of those models held out)\n"
            "  corr                 per operator kind, Pearson and Spearman correlation of log latency\n"
            "                       with each named feature\n"
            "  turnaround           per workload and config measured at several thread counts: the\n"
            "                       thread count beyond which latency improves < 5%%, measured and\n"
            "                       predicted (--predictor)\n"
            "  corun                the interference model: slowdown of A beside B (stream: disjoint\n"
            "                       cores, full: shared) predicted against measured on held-out pairs\n"
            "  nash                 the suite's workloads (at most 8) as players choosing core counts:\n"
            "                       pure equilibria (best response, exhaustive check), the social\n"
            "                       optimum and the price of anarchy, on this machine (predicted) and\n"
            "                       on --cores N,... (SIMULATED: latencies extrapolated from 1 and 2\n"
            "                       threads by Amdahl's law)\n"
            "  --modelname M        the model's end-to-end latency: each kernel step the runtime\n"
            "                       compiles (its db-best or default config) predicted at --threads,\n"
            "                       plus the runtime's overhead per native step, layout conversion and\n"
            "                       run (measured once per host and thread count on resnet-18, or\n"
            "                       --calibrate M, and stored in the db); --measure also times the\n"
            "                       model; -v per step\n"
            "  --db FILE            the record database (default ./opbench.db; read only, except\n"
            "                       --modelname stores the runtime's overhead)\n"
            "  --predictor FILE     a model file of predict train\n"
            "  --rounds N, --members N   boosting rounds (300) and ensemble members (5)\n"
            "  --input-size N       input size of the held-out models' tasks (default the model's own)\n");
    break;
  case CLI_CMD_TUNE:
    fprintf(f,
            "usage: opbench tune --op OP --shape TEXT [workload flags] [--tuner NAME]\n"
            "       opbench tune --op OP --shape TEXT --corun OP:SHAPE [--threads N] [--trials N]\n"
            "       opbench tune --modelsource S --modelname M [model flags] [--iftune true|false]\n"
            "                    [--ifcompare true|false] [--key-ops P] [--profile] [--record-steps]\n"
            "                    [tuning flags]\n"
            "                    [--trials N] [--early-stopping N] [--batch N] [--db FILE]\n"
            "                    [--log FILE] [--seed N] [--no-transfer] [--remeasure]\n"
            "                    [measurement flags]\n"
            "Searches the template's config space with a tuner, as AutoTVM does, printing\n"
            "AutoTVM's progress line. Every trial is stored in the database as soon as it\n"
            "is measured; run again with the same flags after an interruption (even kill -9)\n"
            "and it resumes: configs already measured are not measured again and count\n"
            "toward --trials. Builds of the next batch overlap the measurement of the\n"
            "current one on the cores the measurement does not use. At the end the 5 best\n"
            "configs are re-measured with the full protocol (--repeat etc.; trials use 3\n"
            "repeats) and the winner is stored as the confirmed best.\n\n"
            "tuning:\n"
            "  --op OP              operator (or give it as the first argument)\n"
            "  --tuner NAME         xgb (default), xgb-rank, xgb_knob, xgb_itervar, xgb_curve,\n"
            "                       ga, random or gridsearch\n"
            "  --trials N           trial budget (default 200)\n"
            "  --early-stopping N   stop after N trials without a better config (default off)\n"
            "  --batch N            configs per batch (default 16)\n"
            "  --db FILE            the record database (default ./opbench.db)\n"
            "  --log FILE           append the task's records as AutoTVM v0.2 JSON lines\n"
            "                       (only those the file does not hold yet)\n"
            "  --seed N             seed of the tuner and of the random inputs\n"
            "  --no-transfer        xgb tuners: start cold; by default the records of the\n"
            "                       same operator and template already in --db (other\n"
            "                       shapes, earlier runs) train a base model first\n"
            "  --remeasure          measure configs again although the db holds them (the\n"
            "                       new trials replace the stored ones, which are kept in\n"
            "                       the db's history); without it a run resumes\n"
            "  --reconfirm          re-measure each task's best stored configs and its default\n"
            "                       (3 rounds, each judged by its fastest) although the db holds\n"
            "                       a confirmed best: records taken on a loaded machine, made\n"
            "                       trustworthy on a quiet one; with --trials at most the stored\n"
            "                       count nothing new is searched\n"
            "  --corun OP:SHAPE     collaboration tuning: tune --op and this partner for running\n"
            "                       together on disjoint cores (A on the first --threads cores of\n"
            "                       --cores, B on the next): each way --trials per operator,\n"
            "                       independently (alone) and jointly (every trial the pair\n"
            "                       measured together); prints both ways' makespan together.\n"
            "                       Nothing is stored in the db\n\n"
            "with a model (the collector, as OpBench's main.py): extracts the tasks, tunes each\n"
            "(AutoTVM's [Task i/n] progress line) unless --iftune false, and with --ifcompare true\n"
            "(default) runs the model untuned (default configs), tuned (the database's best) and with\n"
            "oneDNN primitives for the conv/dense/matmul/pool nodes, each checked against the naive\n"
            "reference, and prints mean and median latency of each and the speedups.\n"
            "  --key-ops P          tune only the tasks that make up P%% of the estimated time\n"
            "  --iftune B, --ifcompare B   true or false\n"
            "  --profile            also the tuned run's per-node breakdown\n"
            "  --record-steps       store the tuned plan's in-graph step latencies in --db (as run\n"
            "                       --record-steps does), in this process between the tuned timing's\n"
            "                       repeats: the db in-graph line then sums records of the same moments\n"
            "  --warm               measure the trials with warm caches; a model's default is\n"
            "                       --flush-weights (its tasks' weights cold, the activation warm, as\n"
            "                       in the graph: AutoTVM's x86 advice)\n"
            "  --input FILE         the first input (.npy or raw float32) instead of random data\n"
            "  --save-output FILE   the tuned run's first output as .npy\n\n%s%s\n%s",
            workload_help, measure_help, model_help);
    fprintf(f, "\n%s", fleet_client_help);
    break;
  case CLI_CMD_WORKER:
    fprintf(f,
            "usage: opbench worker --broker URL --device-key KEY [--fleet-key FILE]\n"
            "                      [--threads N] [--cores LIST] [--max-jobs N] [--claim-timeout S]\n"
            "Serves the jobs of a device key from a Redis broker: registers this device (host\n"
            "facts, the targets it can run, a heartbeat), builds each job's config with its own\n"
            "compiler for its own target, measures it with the normal runner and sends the\n"
            "signed result back. Jobs that are unsigned, forged, replayed, expired or too\n"
            "large are refused and logged (stderr), never run. A job a dead worker left is\n"
            "taken over after the claim timeout (default 10 s). SIGINT/SIGTERM stop it after\n"
            "the job in hand.\n"
            "  --broker URL         redis://USER:PASSWORD@HOST:PORT (or --host H --port P)\n"
            "  --device-key KEY     the key clients send jobs to (A-Z a-z 0-9 . _ -)\n"
            "  --fleet-key FILE     the fleet's signing key (mode 0600)\n"
            "  --threads N          most threads a job may ask for (default: the cores)\n"
            "  --cores LIST         the cores it builds and measures on (default: all allowed)\n"
            "  --max-jobs N         stop after N jobs\n"
            "  --claim-timeout S    take over a dead worker's job after S seconds\n");
    break;
  case CLI_CMD_FLEET:
    fprintf(f,
            "usage: opbench fleet status --broker URL [--json]\n"
            "       opbench fleet keygen --out FILE\n"
            "status lists the device keys, their workers (alive, busy, jobs done, last\n"
            "heartbeat) and queue lengths, as TVM's query_rpc_tracker does. keygen writes a\n"
            "new fleet key (mode 0600; never over an existing file).\n");
    break;
  case CLI_CMD_RUN:
    fprintf(f,
            "usage: opbench run --modelname M [model flags] [--db FILE] [--kernels tuned|default|onednn]\n"
            "                   [--input FILE] [--save-output FILE.npy] [--profile] [--executor graph|vm]\n"
            "                   [--threads N] [--cores LIST] [--schedule FILE] [timing flags]\n"
            "Compiles the model (after the passes) with the graph runtime and runs it: each task with\n"
            "the best config --db holds for this host, target and threads (the default config when it\n"
            "holds none, said once per task), weights packed once, activations blocked between\n"
            "convolutions, memory planned by lifetime. The output is checked against the naive\n"
            "reference execution of the same graph on the same input before the latency is measured\n"
            "with the kernels' timing protocol (median, CV, every repeat kept).\n"
            "  --db FILE            the record database (default ./opbench.db; missing: defaults)\n"
            "  --kernels K          tuned (default), default (every task untuned) or onednn (oneDNN\n"
            "                       primitives for conv/dense/matmul/pool nodes)\n"
            "  --input FILE         the first input: NumPy .npy of its shape and type, or raw float32\n"
            "                       of exactly its size (default: random from --seed)\n"
            "  --save-output FILE   the first output as NumPy .npy\n"
            "  --profile            per-node breakdown; its sum beside the measured latency\n"
            "  --record-steps       store every step's latency inside the deployed graph (kernels,\n"
            "                       the runtime's own steps, conversions; 50 profiled runs) in --db\n"
            "                       as in-graph records of this plan: later runs of the same plan\n"
            "                       print their sum beside the measured latency (db in-graph)\n"
            "  --executor vm        shapes given per request: --batchsize 1,4,8 or --seqlen 32,128;\n"
            "                       each shape is compiled on first use and kept; prints first-call\n"
            "                       and steady-state latency per request\n"
            "  --check-tol T        tolerance of the output check, relative to max |ref| (1e-3)\n"
            "  --lanes N            the layout plan's vector width (default: the target's)\n"
            "  --schedule FILE      run by the stages of a schedule (opbench schedule --schedule-out):\n"
            "                       merges applied, each stage's groups at once on their cores, a\n"
            "                       barrier between stages; its output is checked against the\n"
            "                       sequential run on the schedule's cores, both are timed\n\n%s\n%s",
            model_help, measure_help);
    break;
  case CLI_CMD_DB:
    fprintf(f,
            "usage: opbench db best|top|stats|export|import|push|pull [flags]\n"
            "  opbench db best   [selection]            the fastest record of a task, and its\n"
            "                                           confirmed best if tuning stored one\n"
            "  opbench db top    [selection] [--top N]  the N fastest (default 10)\n"
            "  opbench db stats  [selection]            records, errors by class and best\n"
            "                                           GFLOPS per operator and workload\n"
            "  opbench db export [selection] [--format csv|autotvm] [--out FILE]\n"
            "                    CSV (default) or AutoTVM v0.2 JSON lines, to stdout or FILE\n"
            "  opbench db export --table profiles [--format csv|jsonl] [--out FILE]\n"
            "                    the profiler's dataset: one row per point, one column per\n"
            "                    feature and workload attribute (ready for pandas)\n"
            "  opbench db import FILE [--host FINGERPRINT|this] [--resources TEXT] [--remeasure]\n"
            "                    an AutoTVM v0.2 log; broken lines are skipped and listed by\n"
            "                    number; records are filed under host 'unknown' unless --host\n"
            "                    says otherwise (tuning results of another CPU are not this\n"
            "                    host's); --remeasure lets a record replace a stored one\n"
            "  opbench db push   [selection] --shared URL   copy --db's records to the shared\n"
            "                    store (with their hosts, workloads, configs and confirmed\n"
            "                    bests); records it holds already are kept (--remeasure:\n"
            "                    replaced, the old ones kept in its history)\n"
            "  opbench db pull   [selection] --shared URL   the other way, into --db\n"
            "  --shared URL         the shared store: postgresql://USER:PASSWORD@HOST:PORT/DB\n"
            "                       (or another file); default $OPBENCH_SHARED_DB\n\n"
            "selection:\n"
            "  --db FILE|URL        the record database (default ./opbench.db): an SQLite\n"
            "                       file, or postgresql://USER:PASSWORD@HOST:PORT/DB\n"
            "  --op OP --shape TEXT [workload flags]   the workload (or --workload KEY)\n"
            "  --workload KEY       a workload key as stored (see opbench db stats)\n"
            "  --template NAME      only this template (best/top: default any)\n"
            "  --host FP|this|any   whose records (default this host; stats/export: any)\n"
            "  --threads N, --cores LIST   the resource setting the records were measured\n"
            "                       with, as opbench tune files them (default threads=1;cores=0)\n"
            "  --resources TEXT|any the resource setting as stored, or any\n"
            "  --target TEXT|any    the target the records were built for (best/top: default\n"
            "                       the default target, as opbench tune files them; else any)\n"
            "  --cache warm|cold|cold-weights|any   only records timed in this cache state\n"
            "                       (best, top, export; default any): warm caches, every input\n"
            "                       flushed, or the weights flushed and the activation warm (a\n"
            "                       model's layer, what opbench run and tune --modelname rank by)\n"
            "  --json               print JSON (best, top, stats)\n\n%s",
            workload_help);
    break;
  case CLI_CMD_PROFILE:
    fprintf(f,
            "usage: opbench profile OP --shape TEXT | --suite FILE|resnet18 | --modelname M\n"
            "                       [--sizes GRID] [--threads LIST] [--cores SETS] [--core-types]\n"
            "                       [--knobs base|neighbours[:N]|random:N] [--corun OP:SHAPE|tasks]\n"
            "                       [--corun-mode stream|full|both] [--cache-pressure MIB[,MIB]]\n"
            "                       [--limits auto|again|quick|none] [--db FILE] [--remeasure]\n"
            "                       [--dry-run] [measurement flags]\n"
            "Measures operators under a sweep of features and stores every point in the\n"
            "database's profiles table (a point already there is not measured again: a\n"
            "killed run resumes). Each point is timed with the kernel timing protocol and\n"
            "checked against the reference, with hardware counters where the machine has\n"
            "them, and placed against the host's limits (%% of the FMA peak, arithmetic\n"
            "intensity for the roofline).\n\n"
            "features:\n"
            "  --sizes GRID         a grid over each workload's dimensions, e.g.\n"
            "                       H=7:224:x2,C=16:512:x2 (lo:hi:xF multiplies, lo:hi:+S adds,\n"
            "                       v1/v2/v3 a list, v one value); N is the batch size\n"
            "  --threads LIST       thread counts, e.g. 1,2 (each on cores 0..n-1)\n"
            "  --cores SETS         core sets separated by '/', e.g. 0/1/0-1\n"
            "  --core-types         one set per kind of core hwloc reports (says so when one)\n"
            "  --knobs SWEEP        base (default): the base config (the fastest the database\n"
            "                       holds, else the template's default); neighbours[:N]: and\n"
            "                       every one-knob change around it (at most N); random:N: and\n"
            "                       N random configs\n"
            "  --corun OP:SHAPE     a partner running at the same time (repeatable); 'tasks':\n"
            "                       every pair of the profiled workloads (the co-run matrix)\n"
            "  --corun-mode MODE    stream: partner on disjoint cores; full: both on the same\n"
            "                       cores, time-sliced; both (default)\n"
            "  --cache-pressure MIB a co-runner on a free core keeping MIB hot in the shared\n"
            "                       cache (a list: 0,16,64)\n"
            "  --limits MODE        the host's peak FLOP rate, bandwidths and the runtime's\n"
            "                       conversion rates (opbench run's layout plan prices with them):\n"
            "                       auto (measure once per host, then from the database), again,\n"
            "                       quick (small, for tests: not the host's figures), none\n"
            "  --db FILE            the database (default ./opbench.db)\n"
            "  --remeasure          measure points the database holds again\n"
            "  --dry-run            list the points and stop\n\n%s\n%s\n%s",
            workload_help, model_help, measure_help);
    break;
  case CLI_CMD_REPORT:
    fprintf(f,
            "usage: opbench report --db FILE --out DIR [--schedule FILE.json ...]\n"
            "Writes DIR/index.html, a self-contained page (plots embedded) of the database's\n"
            "tuning runs and profiles, its plots drawn by gnuplot: tuning curves, GFLOPS\n"
            "against threads (turnaround point marked) and input size, knob sensitivity, the\n"
            "roofline, the co-run slowdown heat map, and the timelines of --schedule files.\n"
            "The plots are also left as DIR/*.svg.\n");
    break;
  case CLI_CMD_COUNT:
    break;
  }
}

/* ---- values ---------------------------------------------------------------- */

bool cli_parse_i64(const char *text, int64_t lo, int64_t hi, int64_t *out) {
  if (!text || !*text) return false;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static OB_NODISCARD bool parse_u64(const char *text, uint64_t *out) {
  if (!text || *text < '0' || *text > '9') return false; /* strtoull takes "-1" */
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

static OB_NODISCARD bool parse_double(const char *text, double lo, double hi, double *out) {
  if (!text || !*text) return false;
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || *end || !isfinite(v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* A flag whose value is one of `known` (NULL-terminated): *out = v, else
 * one error line naming the flag, what was expected and the choices. */
static OB_NODISCARD bool choice_flag(const char *name, const char *v, const char *what,
                                     const char *const *known, const char **out) {
  for (int i = 0; known[i]; i++)
    if (!strcmp(v, known[i])) {
      *out = v;
      return true;
    }
  char list[256] = "";
  for (int i = 0; known[i]; i++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", known[i]);
  }
  cli_error("%s: unknown %s '%s' (known: %s)", name, what, v, list);
  return false;
}

static OB_NODISCARD bool int_flag(const char *flag, const char *text, int64_t lo, int64_t hi, int *out) {
  int64_t v;
  if (!cli_parse_i64(text, lo, hi, &v)) {
    cli_error("%s: bad value '%s' (expected an integer from %lld to %lld)", flag, text,
              (long long)lo, (long long)hi);
    return false;
  }
  *out = (int)v;
  return true;
}

static OB_NODISCARD bool double_flag(const char *flag, const char *text, double lo, double hi,
                        double *out) {
  if (!parse_double(text, lo, hi, out)) {
    cli_error("%s: bad value '%s' (expected a number from %g to %g)", flag, text, lo, hi);
    return false;
  }
  return true;
}

/* ---- argv -------------------------------------------------------------------- */

static int find_flag(const char *name, size_t len) {
  for (int i = 0; i < F_COUNT; i++)
    if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0) return i;
  return -1;
}

static bool apply_flag(ob_ctx *ctx, cli_args *a, int id, const char *v) {
  const char *name = flags[id].name;
  switch ((flag_id)id) {
  case F_HELP: a->help = true; break;
  case F_VERBOSE: a->verbose++; break;
  case F_SHAPE: a->shape = v; break;
  case F_STRIDE: a->stride = v; break;
  case F_PAD: a->pad = v; break;
  case F_DILATION: a->dilation = v; break;
  case F_EPILOGUE: a->epilogue = v; break;
  case F_TEMPLATE: a->tmpl = v; break;
  case F_CONFIG: a->config_json = v; break;
  case F_CONFIG_INDEX:
    if (!parse_u64(v, &a->config_index)) {
      cli_error("%s: bad value '%s' (expected a config index, an integer >= 0)", name, v);
      return false;
    }
    a->has_config_index = true;
    break;
  case F_SUITE: a->suite = v; break;
  case F_TARGET:
    if (!*v) {
      cli_error("--target: empty target (expected e.g. llvm, c -isa=avx2)");
      return false;
    }
    a->target = v;
    break;
  case F_DRY_RUN: a->dry_run = true; break;
  case F_NO_WINOGRAD: a->no_winograd = true; break;
  case F_BUILD_ONLY: a->build_only = true; break;
  case F_NO_TRANSFER: a->no_transfer = true; break;
  case F_REMEASURE: a->remeasure = true; break;
  case F_RECONFIRM: a->reconfirm = true; break;
  case F_WORKLOAD: a->workload = v; break;
  case F_HOST: a->host = v; break;
  case F_RESOURCES: a->resources = v; break;
  case F_FORMAT:
    if (strcmp(v, "csv") != 0 && strcmp(v, "autotvm") != 0 && strcmp(v, "jsonl") != 0) {
      cli_error("--format: unknown format '%s' (known: csv, autotvm; jsonl with --table profiles)", v);
      return false;
    }
    a->format = v;
    break;
  case F_OUT:
    if (!*v) {
      cli_error("--out: empty file name");
      return false;
    }
    a->out = v;
    break;
  case F_TOP:
    if (!int_flag(name, v, 1, 1000000, &a->top)) return false;
    break;
  case F_VS:
    if (strcmp(v, "onednn") != 0 && strcmp(v, "cudnn") != 0 && strcmp(v, "cublas") != 0) {
      cli_error("--vs: unknown baseline '%s' (known: onednn; cudnn or cublas for a cuda target: cuDNN's "
                "convolutions and cuBLAS's matrix products)",
                v);
      return false;
    }
    a->vs = v;
    break;
  case F_SEARCH: {
    int64_t budget = 0;
    if (strcmp(v, "exhaustive") == 0) {
      a->search_budget = 1 << 30; /* the whole space */
    } else if (strncmp(v, "random:", 7) == 0 && cli_parse_i64(v + 7, 1, 1 << 24, &budget)) {
      a->search_budget = (int)budget;
    } else {
      cli_error("--search: bad value '%s' (expected exhaustive or random:N)", v);
      return false;
    }
    break;
  }
  case F_THREADS:
    if (a->cmd == CLI_CMD_PROFILE) { /* a list, parsed by the command */
      a->threads_list = v;
      break;
    }
    if (a->cmd == CLI_CMD_SCHEDULE) { /* thread counts for --cross: N[,N...] */
      char buf[128];
      size_t lv = strlen(v);
      bool ok = lv < sizeof buf && *v;
      if (ok) memcpy(buf, v, lv + 1);
      a->nsched_threads = 0;
      for (char *p = buf; ok && p;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        int64_t t = 0;
        ok = a->nsched_threads < 8 && cli_parse_i64(p, 1, OB_CLI_MAX_CORES, &t);
        if (ok) a->sched_threads[a->nsched_threads++] = (int)t;
        p = comma ? comma + 1 : NULL;
      }
      if (!ok) {
        cli_error("--threads: bad value '%s' (expected up to 8 thread counts, 1..%d, separated by commas)", v,
                  OB_CLI_MAX_CORES);
        return false;
      }
      break;
    }
    if (!int_flag(name, v, 1, OB_CLI_MAX_CORES, &a->mo.nthreads)) return false;
    a->threads_set = true;
    break;
  case F_CORES:
    if (a->cmd == CLI_CMD_PROFILE) { /* sets, parsed by the command */
      a->core_sets = v;
      break;
    }
    if (a->cmd == CLI_CMD_PREDICT) { /* a core set, or machine sizes for nash: read by the action */
      a->cores_text = v;
      break;
    }
    if (a->cmd == CLI_CMD_SCHEDULE) { /* a count: the machine to plan for */
      if (!int_flag(name, v, 1, 4096, &a->sched_cores)) return false;
      break;
    }
    if (ob_parse_cores(ctx, v, a->cores, OB_CLI_MAX_CORES, &a->ncores) != OB_OK) {
      cli_error("--cores: %s", ob_ctx_errmsg(ctx));
      return false;
    }
    a->cores_text = v;
    break;
  case F_NUMBER:
    if (!int_flag(name, v, 1, 1 << 30, &a->mo.timing.number)) return false;
    break;
  case F_REPEAT:
    if (!int_flag(name, v, 1, 64, &a->mo.timing.repeat)) return false;
    break;
  case F_MIN_REPEAT_MS:
    if (!double_flag(name, v, 0, 1e6, &a->mo.timing.min_repeat_ms)) return false;
    break;
  case F_MAX_CV:
  case F_MAX_OFFCPU: {
    double pct;
    size_t n = strlen(v);
    char buf[64];
    double hi = id == F_MAX_CV ? 1000 : 100;
    snprintf(buf, sizeof buf, "%.*s", n && v[n - 1] == '%' ? (int)n - 1 : (int)n, v);
    if (!parse_double(buf, 0, hi, &pct)) {
      cli_error("%s: bad value '%s' (expected a percentage from 0 to %g, e.g. 5 or 5%%)", name, v, hi);
      return false;
    }
    if (id == F_MAX_CV) a->mo.timing.max_cv = pct / 100.0;
    else a->mo.timing.max_offcpu = pct / 100.0;
    break;
  }
  case F_STABILITY_BUDGET:
    if (!double_flag(name, v, 0, 1e5, &a->mo.timing.stability_budget_s)) return false;
    break;
  case F_FLUSH: a->mo.timing.flush = true; break;
  case F_FLUSH_WEIGHTS:
    a->mo.timing.flush = true;
    a->mo.flush_keep_first = true;
    break;
  case F_WARM: a->warm = true; break;
  case F_TIMEOUT:
    if (!double_flag(name, v, 1e-3, 1e5, &a->mo.timing.timeout_s)) return false;
    a->timeout_set = true;
    break;
  case F_BUILD_TIMEOUT:
    if (!double_flag(name, v, 1e-3, 1e5, &a->mo.build.timeout_s)) return false;
    break;
  case F_CC:
    if (!*v) {
      cli_error("--cc: empty compiler name");
      return false;
    }
    a->mo.build.cc = v;
    break;
  case F_SEED: {
    uint64_t s;
    if (!parse_u64(v, &s)) {
      cli_error("%s: bad value '%s' (expected an integer >= 0)", name, v);
      return false;
    }
    a->mo.seed = s;
    a->seed_set = true;
    break;
  }
  case F_OP: a->op = v; break;
  case F_TUNER: a->tuner = v; break;
  case F_TRIALS: {
    int64_t zero;
    if (cli_parse_i64(v, 0, 0, &zero)) {
      cli_error("--trials: a trial budget of 0 tunes nothing (expected an integer >= 1)");
      return false;
    }
    if (!int_flag(name, v, 1, INT32_MAX, &a->trials)) return false;
    break;
  }
  case F_EARLY_STOPPING:
    if (!int_flag(name, v, 0, INT32_MAX, &a->early_stopping)) return false;
    break;
  case F_BATCH:
    if (!int_flag(name, v, 1, 1024, &a->batch)) return false;
    break;
  case F_DB:
    if (!*v) {
      cli_error("--db: empty file name");
      return false;
    }
    a->db_path = v;
    break;
  case F_LOG:
    if (!*v) {
      cli_error("--log: empty file name");
      return false;
    }
    a->log_path = v;
    break;
  case F_PRINT_SOURCE: a->print_source = true; break;
  case F_PRINT_IR: a->print_ir = true; break;
  case F_JSON: a->json = true; break;
  case F_MODELSOURCE: a->modelsource = v; break;
  case F_MODELNAME: a->modelname = v; break;
  case F_MODELPATH: a->modelpath = v; break;
  case F_BATCHSIZE:
  case F_SEQLEN: {
    /* one value, or a list of requests for --executor vm */
    int64_t *list = id == F_BATCHSIZE ? a->batchsizes : a->seqlens;
    int *cnt = id == F_BATCHSIZE ? &a->nbatchsizes : &a->nseqlens;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    *cnt = 0;
    bool ok = strlen(v) < sizeof buf && *v;
    for (char *p = buf; ok && p;) {
      char *comma = strchr(p, ',');
      if (comma) *comma = 0;
      ok = *cnt < 16 && cli_parse_i64(p, 1, 1 << 16, &list[*cnt]);
      if (ok) (*cnt)++;
      p = comma ? comma + 1 : NULL;
    }
    if (!ok) {
      int64_t zero;
      if (cli_parse_i64(v, 0, 0, &zero))
        cli_error("%s: a %s of 0 (expected an integer in 1..65536, or a list of up to 16 such for --executor vm)",
                  name, id == F_BATCHSIZE ? "batch size" : "sequence length");
      else
        cli_error("%s: bad value '%s' (expected an integer in 1..65536, or a list of up to 16 such for --executor vm)",
                  name, v);
      return false;
    }
    if (id == F_BATCHSIZE) a->batchsize = list[0];
    else a->seqlen = list[0];
    break;
  }
  case F_INPUT_SIZE:
    if (!cli_parse_i64(v, 1, 1 << 14, &a->input_size)) {
      cli_error("--input-size: bad value '%s' (expected an integer in 1..16384)", v);
      return false;
    }
    break;
  case F_HIDDEN:
    if (!cli_parse_i64(v, 1, 1 << 14, &a->hidden)) {
      cli_error("--hidden: bad value '%s' (expected an integer in 1..16384)", v);
      return false;
    }
    break;
  case F_SHA256: a->sha256 = v; break;
  case F_MAX_DOWNLOAD:
    if (!cli_parse_i64(v, 1, INT64_C(1) << 40, &a->max_download)) {
      cli_error("--max-download: bad value '%s' (expected a byte count >= 1)", v);
      return false;
    }
    break;
  case F_PRINT_GRAPH: a->print_graph = true; break;
  case F_NO_PASSES: a->no_passes = true; break;
  case F_KEY_OPS:
    if (!double_flag(name, v, 1e-9, 100, &a->key_ops)) return false;
    break;
  case F_LANES:
    if (!int_flag(name, v, 2, 64, &a->lanes)) return false;
    break;
  case F_INPUT: a->input_file = v; break;
  case F_SAVE_OUTPUT: a->save_output = v; break;
  case F_SAVE_IO: a->save_io = v; break;
  case F_R:
    if (!int_flag(name, v, 1, 64, &a->sched_r)) return false;
    break;
  case F_S:
    if (!int_flag(name, v, 1, 64, &a->sched_s)) return false;
    break;
  case F_SCHEDULE_OUT:
  case F_SCHEDULE:
  case F_TIMELINE:
    if (!*v) {
      cli_error("%s: empty file name", name);
      return false;
    }
    if (id == F_SCHEDULE && a->cmd == CLI_CMD_REPORT) {
      if (a->nschedules == (int)(sizeof a->schedules / sizeof a->schedules[0])) {
        cli_error("--schedule: at most %d files", a->nschedules);
        return false;
      }
      a->schedules[a->nschedules++] = v;
      break;
    }
    if (id == F_SCHEDULE_OUT) a->schedule_out = v;
    else if (id == F_SCHEDULE) a->schedule_in = v;
    else a->timeline = v;
    break;
  case F_SCHEDULER: {
    static const char *const known[] = {"ios", "greedy", "sequential", NULL};
    if (!choice_flag(name, v, "scheduler", known, &a->scheduler)) return false;
    break;
  }
  case F_GFLOPS:
    if (!double_flag(name, v, 1e-3, 1e6, &a->gflops)) return false;
    break;
  case F_GBPS:
    if (!double_flag(name, v, 1e-3, 1e6, &a->gbps)) return false;
    break;
  case F_EFFICIENCY:
    if (!double_flag(name, v, 0.01, 1, &a->efficiency)) return false;
    break;
  case F_CORUN:
    if (a->cmd == CLI_CMD_TUNE) {
      if (a->ncorun_spec) {
        cli_error("--corun: collaboration tuning takes one partner (given '%s' and '%s')", a->corun_spec[0], v);
        return false;
      }
      a->corun_spec[a->ncorun_spec++] = v;
      break;
    }
    if (a->cmd == CLI_CMD_PROFILE) {
      if (a->ncorun_spec == (int)(sizeof a->corun_spec / sizeof a->corun_spec[0])) {
        cli_error("--corun: at most %d partners", a->ncorun_spec);
        return false;
      }
      a->corun_spec[a->ncorun_spec++] = v;
      break;
    }
    if (!double_flag(name, v, 1, 100, &a->corun)) return false;
    break;
  case F_SIZES: a->sizes = v; break;
  case F_KNOBS: a->knobs = v; break;
  case F_CORUN_MODE: {
    static const char *const known[] = {"stream", "full", "both", NULL};
    if (!choice_flag(name, v, "mode", known, &a->corun_mode)) return false;
    break;
  }
  case F_CACHE_PRESSURE: a->pressure = v; break;
  case F_LIMITS: {
    static const char *const known[] = {"auto", "again", "quick", "none", NULL};
    if (!choice_flag(name, v, "value", known, &a->limits)) return false;
    break;
  }
  case F_CORE_TYPES: a->core_types = true; break;
  case F_TABLE: {
    static const char *const known[] = {"measurements", "profiles", NULL};
    if (!choice_flag(name, v, "table", known, &a->table)) return false;
    break;
  }
  case F_CACHE_STATE: {
    static const char *const known[] = {"warm", "cold", "cold-weights", "any", NULL};
    if (!choice_flag(name, v, "cache state", known, &a->cache_state)) return false;
    break;
  }
  case F_SCHED_COST: {
    static const char *const known[] = {"measured", "predicted", NULL};
    if (!choice_flag(name, v, "cost mode", known, &a->sched_cost)) return false;
    break;
  }
  case F_CROSS: a->cross = true; break;
  case F_IOS_ORIGINAL: a->ios_original = true; break;
  case F_NO_MERGE: a->no_merge = true; break;
  case F_MAX_PART:
    if (!int_flag(name, v, 1, 64, &a->max_part)) return false;
    break;
  case F_PRINT_STAGES: a->print_stages = true; break;
  case F_SHARED:
    if (!*v) {
      cli_error("--shared: empty store name");
      return false;
    }
    a->shared = v;
    break;
  case F_FLEET: a->fleet = v; break;
  case F_BROKER: a->fleet = v; break;
  case F_DEVICE_KEY: a->device_key = v; break;
  case F_FLEET_KEY: a->fleet_key = v; break;
  case F_PORT: a->port = v; break;
  case F_MAX_JOBS:
    if (!int_flag(name, v, 1, 1000000000, &a->max_jobs)) return false;
    break;
  case F_CLAIM_TIMEOUT:
    if (!double_flag(name, v, 0.5, 86400, &a->claim_timeout)) return false;
    break;
  case F_PREDICTOR:
    if (!*v) {
      cli_error("--predictor: empty file name");
      return false;
    }
    a->predictor = v;
    break;
  case F_SPLIT:
    if (strcmp(v, "workload") && strcmp(v, "model")) {
      cli_error("--split: unknown split '%s' (expected workload or model; never random rows)", v);
      return false;
    }
    a->split = v;
    break;
  case F_FOLDS:
    if (!int_flag(name, v, 2, 100, &a->folds)) return false;
    break;
  case F_TEST_MODELS: a->test_models = v; break;
  case F_ROUNDS:
    if (!int_flag(name, v, 1, 100000, &a->rounds)) return false;
    break;
  case F_MEMBERS:
    if (!int_flag(name, v, 1, 16, &a->members)) return false;
    break;
  case F_KERNELS: {
    static const char *const known[] = {"tuned", "default", "onednn", NULL};
    if (!choice_flag(name, v, "kernel source", known, &a->kernels)) return false;
    break;
  }
  case F_PROFILE: a->profile = true; break;
  case F_RECORD_STEPS: a->record_steps = true; break;
  case F_MEASURE: a->measure_model = true; break;
  case F_CALIBRATE: a->calibrate = v; break;
  case F_EXECUTOR: {
    static const char *const known[] = {"graph", "vm", NULL};
    if (!choice_flag(name, v, "executor", known, &a->executor)) return false;
    break;
  }
  case F_IFTUNE:
  case F_IFCOMPARE: {
    int b = !strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") ? 1
            : !strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no") ? 0
                                                                            : -1;
    if (b < 0) {
      cli_error("%s: bad value '%s' (expected true or false)", name, v);
      return false;
    }
    if (id == F_IFTUNE) a->iftune = b;
    else a->ifcompare = b;
    break;
  }
  case F_CHECK_TOL:
    if (!double_flag(name, v, 1e-9, 1, &a->check_tol)) return false;
    break;
  case F_COUNT: break;
  }
  return true;
}

bool cli_parse(ob_ctx *ctx, cli_cmd cmd, int argc, char **argv, cli_args *a) {
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  a->mo = ob_measure_opts_default();
  if (cmd == CLI_CMD_TUNE || cmd == CLI_CMD_DB || cmd == CLI_CMD_PROFILE || cmd == CLI_CMD_REPORT)
    a->db_path = "./opbench.db";
  if (cmd == CLI_CMD_TUNE) {
    a->tuner = "xgb";
    a->trials = 200;
    a->iftune = a->ifcompare = 1;
  }
  if (cmd == CLI_CMD_DB) {
    a->top = 10;
    a->format = "csv";
    a->out = "-";
  }
  const char *cname = cmd_names[cmd];
  for (int i = 2; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0) arg = "--help";
    if (strcmp(arg, "-v") == 0) arg = "--verbose";
    if (arg[0] != '-' || arg[1] == '\0') {
      if ((cmd == CLI_CMD_OP || cmd == CLI_CMD_SPACE || cmd == CLI_CMD_TUNE || cmd == CLI_CMD_PROFILE) &&
          !a->op) {
        a->op = arg;
        continue;
      }
      if ((cmd == CLI_CMD_DB || cmd == CLI_CMD_FLEET || cmd == CLI_CMD_PREDICT) && !a->action) {
        a->action = arg;
        continue;
      }
      if (cmd == CLI_CMD_DB && a->action && !strcmp(a->action, "import") && !a->file) {
        a->file = arg;
        continue;
      }
      cli_error("unexpected argument '%s' for 'opbench %s' (see opbench %s --help)", arg, cname,
                cname);
      return false;
    }
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    int id = find_flag(arg, len);
    if (id < 0 || !(flags[id].cmds & (1u << cmd))) {
      cli_error("unknown flag '%.*s' for 'opbench %s' (see opbench %s --help)", (int)len, arg,
                cname, cname);
      return false;
    }
    const char *v = NULL;
    if (flags[id].has_arg) {
      if (eq) {
        v = eq + 1;
      } else if (i + 1 < argc) {
        v = argv[++i];
      } else {
        cli_error("flag %s needs a value", flags[id].name);
        return false;
      }
    } else if (eq) {
      cli_error("flag %s takes no value (got '%s')", flags[id].name, arg);
      return false;
    }
    if (!apply_flag(ctx, a, id, v)) return false;
  }
  if (a->help) return true;

  if (cmd == CLI_CMD_DB) {
    static const char *const actions[] = {"best", "top", "stats", "export", "import", "push", "pull"};
    bool known = false;
    for (size_t i = 0; a->action && i < sizeof actions / sizeof actions[0]; i++)
      known |= !strcmp(a->action, actions[i]);
    if (!a->action) {
      cli_error("'opbench db' needs an action: best, top, stats, export, import, push or pull");
      return false;
    }
    if (!known) {
      cli_error("'opbench db': unknown action '%s' (expected best, top, stats, export, import, push or pull)",
                a->action);
      return false;
    }
    if (!strcmp(a->action, "import") && !a->file) {
      cli_error("'opbench db import' needs the AutoTVM log file to read");
      return false;
    }
    bool copy = !strcmp(a->action, "push") || !strcmp(a->action, "pull");
    if (copy && !a->shared) a->shared = getenv("OPBENCH_SHARED_DB");
    if (copy && (!a->shared || !*a->shared)) {
      cli_error("'opbench db %s' needs the shared store: --shared postgresql://USER:PASSWORD@HOST:PORT/DB "
                "(or $OPBENCH_SHARED_DB)", a->action);
      return false;
    }
    if (a->shared && !copy) {
      cli_error("--shared is for 'opbench db push' and 'opbench db pull'");
      return false;
    }
    if ((!strcmp(a->action, "best") || !strcmp(a->action, "top")) && !a->op && !a->workload) {
      cli_error("'opbench db %s' needs the workload: --op OP --shape TEXT, or --workload KEY",
                a->action);
      return false;
    }
    if (a->op && a->workload) {
      cli_error("--op/--shape and --workload exclude each other; give one");
      return false;
    }
    if (a->table && strcmp(a->action, "export")) {
      cli_error("--table is for 'opbench db export'");
      return false;
    }
    if (a->table && !strcmp(a->table, "profiles") && !strcmp(a->format, "autotvm")) {
      cli_error("--format %s: the profiles table exports as csv or jsonl", a->format);
      return false;
    }
    if ((!a->table || strcmp(a->table, "profiles")) && !strcmp(a->format, "jsonl")) {
      cli_error("--format jsonl is for --table profiles (measurements: csv or autotvm)");
      return false;
    }
    if (a->shape && !a->op) {
      cli_error("--shape needs --op OP");
      return false;
    }
  }
  if (cmd == CLI_CMD_FLEET) {
    if (!a->action || (strcmp(a->action, "status") && strcmp(a->action, "keygen"))) {
      cli_error("'opbench fleet' needs an action: status or keygen%s%s%s", a->action ? " (got '" : "",
                a->action ? a->action : "", a->action ? "')" : "");
      return false;
    }
    if (!strcmp(a->action, "keygen") && !a->out) {
      cli_error("'opbench fleet keygen' needs --out FILE");
      return false;
    }
  }
  /* the collector runs the tuned model here, on this host's records: its
   * tuning through a fleet would file them under the workers' host */
  if (cmd == CLI_CMD_TUNE && (a->modelsource || a->modelname || a->modelpath) &&
      (a->fleet || a->host || a->port || a->device_key)) {
    cli_error("'opbench tune --modelname' tunes and runs the model here; --fleet, --host, --port and --device-key go "
              "with --op");
    return false;
  }
  bool fleet_cmd = cmd == CLI_CMD_WORKER || cmd == CLI_CMD_FLEET ||
                   ((cmd == CLI_CMD_TUNE || cmd == CLI_CMD_BENCH) && (a->fleet || a->host || a->port || a->device_key));
  if (fleet_cmd && !(cmd == CLI_CMD_FLEET && !strcmp(a->action, "keygen"))) {
    /* the broker: --fleet/--broker URL, or the original collector's --host/--port
     * (defaults $TVM_TRACKER_HOST / $TVM_TRACKER_PORT) */
    if (a->fleet && (a->host || a->port)) {
      cli_error("--%s URL and --host/--port name the broker twice; give one", cmd == CLI_CMD_TUNE || cmd == CLI_CMD_BENCH ? "fleet" : "broker");
      return false;
    }
    if (!a->fleet) {
      if (ob_fleet_url_from_host(ctx, a->host, a->port, a->fleet_url, sizeof a->fleet_url) != OB_OK) {
        cli_error("%s", ob_ctx_errmsg(ctx));
        return false;
      }
      a->fleet = a->fleet_url;
    }
    if (cmd != CLI_CMD_FLEET && !a->device_key) {
      cli_error("'opbench %s' through a fleet needs --device-key KEY", cname);
      return false;
    }
  }
  if (cmd == CLI_CMD_PREDICT) {
    static const char *const actions[] = {"train", "eval", "corr", "turnaround", "corun", "nash"};
    bool known = !a->action;
    for (size_t i = 0; a->action && i < sizeof actions / sizeof actions[0]; i++)
      known |= !strcmp(a->action, actions[i]);
    if (!known) {
      cli_error("'opbench predict': unknown action '%s' (expected train, eval, corr, turnaround, corun, nash, "
                "or none with --op OP --shape ...)", a->action);
      return false;
    }
    if (!a->db_path) a->db_path = "./opbench.db";
    bool model = a->modelname || a->modelsource || a->modelpath;
    if (model && (a->action || a->op)) {
      cli_error("'opbench predict --modelname' predicts a whole model: it takes no %s%s",
                a->action ? "action " : "--op", a->action ? a->action : "");
      return false;
    }
    if (model && !a->modelname && !a->modelpath) {
      cli_error("'opbench predict --modelsource' needs --modelname M (the model to predict)");
      return false;
    }
    if ((a->measure_model || a->calibrate) && !model) {
      cli_error("%s is for a model's latency: it needs --modelname M", a->measure_model ? "--measure" : "--calibrate");
      return false;
    }
    if (!a->action && !a->op && !model) {
      cli_error("'opbench predict' needs --op OP --shape ..., --modelname M, or an action: train, eval, corr, "
                "turnaround, corun, nash");
      return false;
    }
    if (a->action && !strcmp(a->action, "train") && !a->out) {
      cli_error("'opbench predict train' needs --out FILE (the model file to write)");
      return false;
    }
    if (a->split && !strcmp(a->split, "model") && !a->test_models) {
      cli_error("--split model needs --test-models NAME[,NAME...] (the held-out models)");
      return false;
    }
    return true;
  }
  bool has_model = a->modelsource || a->modelname || a->modelpath;
  if (cmd == CLI_CMD_TUNE && a->op && has_model) {
    cli_error("'opbench tune' takes an operator (--op) or a model (--modelname), not both");
    return false;
  }
  if (cmd == CLI_CMD_TUNE && !a->op && !has_model) {
    cli_error("'opbench tune' needs --op OP (see opbench ops) or a model (--modelname M, see opbench models)");
    return false;
  }
  a->model_tune = cmd == CLI_CMD_TUNE && has_model;
  if (a->warm && (a->mo.timing.flush || !a->model_tune)) {
    cli_error("--warm is for tuning a model, whose default is --flush-weights; not with %s",
              a->mo.timing.flush ? "--flush or --flush-weights" : "--op (warm is its default)");
    return false;
  }
  /* a model's tasks are tuned as they run in it: the weights cold, the
   * activation warm (AutoTVM's x86 advice; see --flush-weights) */
  if (a->model_tune && !a->warm && !a->mo.timing.flush) {
    a->mo.timing.flush = true;
    a->mo.flush_keep_first = true;
  }
  /* the fleet's jobs carry the timing options, not which inputs to flush;
   * collaboration tuning measures through the co-runner, which flushes all
   * (a model is refused both below, with its own message) */
  if (cmd == CLI_CMD_TUNE && !a->model_tune && a->mo.flush_keep_first && (a->fleet || a->ncorun_spec)) {
    cli_error("--flush-weights is measured here, one kernel at a time: not with %s (--flush flushes every input there)",
              a->fleet ? "--fleet" : "--corun");
    return false;
  }
  if (cmd == CLI_CMD_TUNE && a->ncorun_spec && (a->model_tune || a->fleet)) {
    cli_error("--corun (collaboration tuning of two operators) is for 'opbench tune --op', measured here: not with %s",
              a->model_tune ? "a model" : "--fleet");
    return false;
  }
  if (cmd == CLI_CMD_TUNE && !a->model_tune) {
    static const int model_only[] = {F_KEY_OPS, F_EXECUTOR, F_IFTUNE, F_IFCOMPARE, F_PROFILE, F_LANES, F_CHECK_TOL,
                                     F_INPUT, F_SAVE_OUTPUT,
                                     F_BATCHSIZE, F_SEQLEN, F_INPUT_SIZE, F_HIDDEN, F_NO_PASSES};
    for (size_t i = 0; i < sizeof model_only / sizeof model_only[0]; i++)
      for (int k = 2; k < argc; k++)
        if (!strncmp(argv[k], flags[model_only[i]].name, strlen(flags[model_only[i]].name)) &&
            (argv[k][strlen(flags[model_only[i]].name)] == 0 || argv[k][strlen(flags[model_only[i]].name)] == '=')) {
          cli_error("%s is for tuning a model (--modelname), not one operator", flags[model_only[i]].name);
          return false;
        }
  }
  if ((a->nbatchsizes > 1 || a->nseqlens > 1) && !(a->executor && !strcmp(a->executor, "vm")) &&
      !(cmd == CLI_CMD_SCHEDULE && a->cross && a->nseqlens <= 1)) {
    cli_error("a list of %s is a list of requests for --executor vm", a->nbatchsizes > 1 ? "batch sizes" : "sequence lengths");
    return false;
  }
  if (a->executor && !strcmp(a->executor, "vm") && cmd == CLI_CMD_TUNE) {
    cli_error("--executor vm serves requests with 'opbench run'; tune each shape with --batchsize N (--seqlen N)");
    return false;
  }
  if (cmd == CLI_CMD_REPORT && !a->out) {
    cli_error("'opbench report' needs --out DIR (the folder for the page and its plots)");
    return false;
  }
  if (cmd == CLI_CMD_REPORT) return true;
  if (cmd == CLI_CMD_PROFILE) {
    int given = (a->op != NULL) + (a->suite != NULL) + (a->modelname != NULL || a->modelpath != NULL);
    if (given != 1) {
      cli_error("'opbench profile' needs one of: an operator (OP --shape ...), --suite FILE|resnet18, "
                "or a model (--modelname M)");
      return false;
    }
    if (a->shape && !a->op) {
      cli_error("--shape needs an operator");
      return false;
    }
    return true;
  }
  if (a->ncores) {
    if (a->threads_set && a->mo.nthreads != a->ncores) {
      cli_error("--threads %d does not match --cores %s (%d cores)", a->mo.nthreads,
                a->cores_text, a->ncores);
      return false;
    }
    a->mo.nthreads = a->ncores;
    a->mo.cores = a->cores;
  }
  bool model_cmd = cmd == CLI_CMD_MODELS || cmd == CLI_CMD_EXPORT_ONNX || cmd == CLI_CMD_RUN_REFERENCE ||
                   cmd == CLI_CMD_SCHEDULE || cmd == CLI_CMD_RUN || a->model_tune;
  if (cmd == CLI_CMD_SPACE && (a->modelsource || a->modelname || a->modelpath)) {
    if (a->op) {
      cli_error("'opbench space' takes an operator or a model (--modelname), not both");
      return false;
    }
    model_cmd = true;
  }
  if (model_cmd) {
    const char *src = a->modelsource ? a->modelsource : "local";
    bool needs = cmd != CLI_CMD_MODELS;
    if (!strcmp(src, "onnx") && !a->modelpath) {
      cli_error("--modelsource onnx needs --modelpath FILE");
      return false;
    }
    if (needs && strcmp(src, "onnx") && strcmp(src, "simple") && !a->modelname) {
      cli_error("'opbench %s' needs --modelname (see opbench models)", cname);
      return false;
    }
    if (cmd == CLI_CMD_EXPORT_ONNX && !a->out) {
      cli_error("'opbench export-onnx' needs --out FILE");
      return false;
    }
    return true;
  }
  if ((cmd == CLI_CMD_OP || cmd == CLI_CMD_SPACE) && !a->op) {
    cli_error("'opbench %s' needs an operator name (see opbench ops)", cname);
    return false;
  }
  if (cmd == CLI_CMD_BENCH && !a->suite) {
    cli_error("'opbench bench' needs --suite FILE|resnet18");
    return false;
  }
  if (a->config_json && a->has_config_index) {
    cli_error("--config and --config-index exclude each other; give one");
    return false;
  }
  if (a->ncores) {
    if (a->threads_set && a->mo.nthreads != a->ncores) {
      cli_error("--threads %d does not match --cores %s (%d cores)", a->mo.nthreads,
                a->cores_text, a->ncores);
      return false;
    }
    a->mo.nthreads = a->ncores;
    a->mo.cores = a->cores;
  }
  return true;
}

bool cli_target(ob_ctx *ctx, const cli_args *a, bool measure, ob_target **out) {
  *out = NULL;
  ob_status st = a->target ? ob_target_parse(ctx, a->target, out) : ob_target_host(ctx, out);
  if (st) {
    cli_error("%s%s", a->target ? "--target: " : "", ob_ctx_errmsg(ctx));
    return false;
  }
  if (!measure) return true;
  /* with --cc the builder reports a missing compiler itself */
  st = a->mo.build.cc ? OB_OK : ob_target_check_buildable(ctx, *out);
  if (!st && !a->build_only) st = ob_target_check_runnable(ctx, *out);
  if (st) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    ob_target_free(*out);
    *out = NULL;
    return false;
  }
  return true;
}

ob_task *cli_task(ob_ctx *ctx, const cli_args *a, const ob_target *target) {
  ob_workload wl;
  ob_task *task = NULL;
  if (cli_workload(ctx, a->op, a->shape, a->stride, a->pad, a->dilation, a->epilogue, true,
                   &wl) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  if (ob_task_new(ctx, &wl, a->tmpl, target, &task) != OB_OK) {
    if (a->tmpl) cli_error("--template '%s': %s", a->tmpl, ob_ctx_errmsg(ctx));
    else cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  return task;
}

/* ---- workload from text ------------------------------------------------------ */

/* Splits "1,2,3" into at most cap integers. Returns the count, 0 if malformed. */
static OB_NODISCARD int parse_list(const char *text, int64_t *vals, int cap) {
  char buf[128];
  if (!text || strlen(text) >= sizeof buf) return 0;
  strcpy(buf, text);
  int n = 0;
  char *p = buf; /* not strtok: it would skip empty fields as in "1,,2" */
  for (;;) {
    char *comma = strchr(p, ',');
    if (comma) *comma = '\0';
    if (n >= cap || !cli_parse_i64(p, INT32_MIN, INT32_MAX, &vals[n])) return 0;
    n++;
    if (!comma) break;
    p = comma + 1;
  }
  return n;
}

/* Sets one attribute group from "v" or "v1,v2[,v3,v4]". names[k] lists the
 * attributes that a k+1-value form sets (NULL: that form is not allowed). */
static ob_status set_multi(ob_ctx *ctx, ob_workload *wl, const char *label, const char *text,
                           const char *one, const char *const two[2],
                           const char *const four[4], const char *forms) {
  int64_t v[4];
  int n = parse_list(text, v, 4);
  ob_status st = OB_OK;
  if (n == 1) {
    st = ob_workload_set(ctx, wl, one, v[0]);
  } else if (n == 2) {
    for (int i = 0; i < 2 && !st; i++) st = ob_workload_set(ctx, wl, two[i], v[i]);
    if (!st && four) /* two-value padding: (h, w) for top/bottom and left/right */
      for (int i = 0; i < 2 && !st; i++) st = ob_workload_set(ctx, wl, four[i + 2], v[i]);
  } else if (n == 4 && four) {
    for (int i = 0; i < 4 && !st; i++) st = ob_workload_set(ctx, wl, four[i], v[i]);
  } else {
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s '%s': expected %s", label, text, forms);
  }
  if (st) ob_fail_prefix(ctx, "%s '%s'", label, text);
  return st;
}

ob_status cli_workload(ob_ctx *ctx, const char *op, const char *shape, const char *stride,
                       const char *pad, const char *dilation, const char *epilogue,
                       bool flagstyle, ob_workload *out) {
  static const char *const stride2[2] = {"stride_h", "stride_w"};
  static const char *const dil2[2] = {"dil_h", "dil_w"};
  static const char *const pad2[2] = {"pad_t", "pad_l"};
  static const char *const pad4[4] = {"pad_t", "pad_l", "pad_b", "pad_r"};
  const char *sh = shape ? shape : "";
  ob_status st = ob_workload_parse(ctx, op, sh, out);
  if (st) {
    /* An unknown operator is named by the library's message already. */
    if (ob_op_exists(op) && shape)
      ob_fail_prefix(ctx, "%s '%s'", flagstyle ? "--shape" : "shape", sh);
    else if (ob_op_exists(op))
      ob_fail_prefix(ctx, "no %s given", flagstyle ? "--shape" : "shape");
    return st;
  }
  if (stride) {
    st = set_multi(ctx, out, flagstyle ? "--stride" : "stride", stride, "stride", stride2, NULL,
                   "S or SH,SW");
    if (st) return st;
  }
  if (pad) {
    st = set_multi(ctx, out, flagstyle ? "--pad" : "pad", pad, "pad", pad2, pad4,
                   "P, PH,PW or PT,PL,PB,PR");
    if (st) return st;
  }
  if (dilation) {
    st = set_multi(ctx, out, flagstyle ? "--dilation" : "dilation", dilation, "dilation", dil2,
                   NULL, "D or DH,DW");
    if (st) return st;
  }
  if (epilogue) {
    st = ob_workload_set_epilogue(ctx, out, epilogue);
    if (st) {
      ob_fail_prefix(ctx, "%s '%s'", flagstyle ? "--epilogue" : "epilogue", epilogue);
      return st;
    }
  }
  return ob_workload_validate(ctx, out);
}
