/* ab.c (bench_ab): is config B of a task faster than config A? A program,
 * not a test.
 *
 *   bench_ab --op OP --shape TEXT [--template T] [--epilogue LIST]
 *            [--threads N] [--rounds R] [--flush-weights] [--bar X] CONFIG_A CONFIG_B [CONFIG...]
 *
 * CONFIG: AutoTVM entity JSON ('{"entity": [["tile_y","sp",[-1,6]], ...]}';
 * knobs added since records were stored may be left out and take their
 * first value) or "default", either one after an optional "cc=COMPILER:"
 * (that config's kernel built by COMPILER: cc=gcc:default against
 * cc=clang:default). Every config is
 * built once and measured through ob_runner (the product's path: each call
 * checked against the operator's reference, then timed with the default
 * protocol; --flush-weights: every input but the first flushed before each
 * call, as in a model, where the layers before evicted the weights) in R
 * rounds; a round measures every config once, in the given
 * order in even rounds and reversed in odd ones, so that neither side
 * always runs first (on this shared VM the first of a pair read 68-71
 * GFLOPS against 78-91 when the order never changed). A config's figure is
 * its median GFLOPS over the rounds; the comparison is paired: per round,
 * config k's GFLOPS over config 0's, measured seconds apart, so a drift of
 * the host between rounds cancels; the median and quartiles of those
 * ratios are printed. The last line is the ratio of config 1 to config 0;
 * with --bar X the exit status is 1 when that paired median is below X
 * (2 on bad input or a failed measurement). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "opbench/core.h"
#include "opbench/ops.h"
#include "opbench/space.h"
#include "opbench/target.h"
#include "opbench/tune.h"

#define AB_MAX_CONFIGS 8
#define AB_MAX_ROUNDS 64

static int cmp_d(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The q-quantile of x[0..n) by the nearest rank (sorts x). */
static double quant(double *x, int n, double q) {
  qsort(x, (size_t)n, sizeof *x, cmp_d);
  int i = (int)(q * (n - 1) + 0.5);
  return x[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int usage(void) {
  fprintf(stderr, "usage: bench_ab --op OP --shape TEXT [--template T] [--epilogue LIST] [--threads N] "
                  "[--rounds R] [--flush-weights] [--bar X] CONFIG_A CONFIG_B [CONFIG...]\n"
                  "  CONFIG: [cc=COMPILER:]AutoTVM entity JSON, or [cc=COMPILER:]default\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *op = NULL, *shape = NULL, *tmpl = NULL, *epi = NULL, *cfgs[AB_MAX_CONFIGS];
  int threads = 1, rounds = 12, ncfg = 0;
  double bar = NAN;
  bool flush_weights = false;
  for (int i = 1; i < argc; i++) {
    bool val = i + 1 < argc;
    if (!strcmp(argv[i], "--op") && val) op = argv[++i];
    else if (!strcmp(argv[i], "--shape") && val) shape = argv[++i];
    else if (!strcmp(argv[i], "--template") && val) tmpl = argv[++i];
    else if (!strcmp(argv[i], "--epilogue") && val) epi = argv[++i];
    else if (!strcmp(argv[i], "--threads") && val) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && val) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bar") && val) bar = atof(argv[++i]);
    else if (!strcmp(argv[i], "--flush-weights")) flush_weights = true;
    else if (argv[i][0] == '-' && argv[i][1] == '-') return usage();
    else if (ncfg < AB_MAX_CONFIGS) cfgs[ncfg++] = argv[i];
    else {
      fprintf(stderr, "bench_ab: at most %d configs\n", AB_MAX_CONFIGS);
      return 2;
    }
  }
  if (!op || !shape || ncfg < 2) return usage();
  if (threads < 1 || threads > 256 || rounds < 2 || rounds > AB_MAX_ROUNDS) {
    fprintf(stderr, "bench_ab: --threads must be 1..256 and --rounds 2..%d\n", AB_MAX_ROUNDS);
    return 2;
  }
  ob_ctx *ctx = NULL;
  ob_target *t = NULL;
  ob_task *task = NULL;
  ob_runner *runner = NULL;
  ob_workload wl;
  ob_config cfg[AB_MAX_CONFIGS];
  char cc[AB_MAX_CONFIGS][64];
  int rc = 2;
  if (ob_ctx_new(&ctx) != OB_OK) return 2;
  if (ob_target_host(ctx, &t) != OB_OK || ob_workload_parse(ctx, op, shape, &wl) != OB_OK ||
      (epi && ob_workload_set_epilogue(ctx, &wl, epi) != OB_OK) || ob_task_new(ctx, &wl, tmpl, t, &task) != OB_OK) {
    fprintf(stderr, "bench_ab: %s\n", ob_ctx_errmsg(ctx));
    goto done;
  }
  for (int i = 0; i < ncfg; i++) {
    cc[i][0] = '\0';
    if (!strncmp(cfgs[i], "cc=", 3)) {
      const char *colon = strchr(cfgs[i], ':');
      size_t len = colon ? (size_t)(colon - cfgs[i] - 3) : 0;
      if (!len || len >= sizeof cc[i]) {
        fprintf(stderr, "bench_ab: config %d: expected cc=COMPILER:CONFIG\n", i);
        goto done;
      }
      memcpy(cc[i], cfgs[i] + 3, len);
      cc[i][len] = '\0';
      cfgs[i] = colon + 1;
    }
    if (!strcmp(cfgs[i], "default")) {
      cfg[i] = ob_task_default_config(task);
    } else if (ob_config_from_json(ctx, ob_task_space(task), cfgs[i], &cfg[i]) != OB_OK) {
      fprintf(stderr, "bench_ab: config %d: %s\n", i, ob_ctx_errmsg(ctx));
      goto done;
    }
  }
  if (ob_runner_new(ctx, &runner) != OB_OK) {
    fprintf(stderr, "bench_ab: %s\n", ob_ctx_errmsg(ctx));
    goto done;
  }
  char key[256], load[128];
  ob_workload_key(&wl, key, sizeof key);
  bench_loadavg(load, sizeof load);
  printf("bench_ab: %s, template %s, target %s, %d thread(s), %s, %d rounds in alternating order; load average %s",
         key, ob_task_template(task), ob_target_str(t), threads,
         flush_weights ? "weights flushed before every call, the activation warm" : "warm caches", rounds,
         load[0] ? load : "-\n");
  ob_measure_opts mo = ob_measure_opts_default();
  mo.nthreads = threads;
  mo.timing.flush = mo.flush_keep_first = flush_weights;
  static double g[AB_MAX_CONFIGS][AB_MAX_ROUNDS];
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < ncfg; j++) {
      int i = r % 2 ? ncfg - 1 - j : j;
      ob_measure_result mr;
      mo.build.cc = cc[i][0] ? cc[i] : NULL;
      if (ob_measure_configs(ctx, task, runner, &mo, &cfg[i], 1, &mr) != OB_OK || mr.error_no) {
        fprintf(stderr, "bench_ab: config %d, round %d: %s\n", i, r, mr.error_no ? mr.message : ob_ctx_errmsg(ctx));
        goto done;
      }
      g[i][r] = mr.gflops;
    }
  printf("\n%-6s %10s %10s %10s   %s\n", "config", "median", "min", "max", "config");
  double med[AB_MAX_CONFIGS], tmp[AB_MAX_ROUNDS];
  for (int i = 0; i < ncfg; i++) {
    memcpy(tmp, g[i], sizeof(double) * (size_t)rounds);
    med[i] = quant(tmp, rounds, 0.5);
    char *s = ob_config_str(&cfg[i]);
    printf("%-6d %10.2f %10.2f %10.2f   %s%s%s#%llu %s\n", i, med[i], tmp[0], tmp[rounds - 1], cc[i][0] ? "cc " : "",
           cc[i], cc[i][0] ? ", " : "", (unsigned long long)cfg[i].index, s ? s : "?");
    free(s);
  }
  printf("\npaired GFLOPS ratios (per round, config k / config 0): median [quartiles]\n");
  double r1 = NAN;
  for (int k = 1; k < ncfg; k++) {
    int faster = 0;
    for (int r = 0; r < rounds; r++) {
      tmp[r] = g[k][r] / g[0][r];
      faster += g[k][r] > g[0][r];
    }
    double m = quant(tmp, rounds, 0.5);
    printf("  config %d / config 0: %.3f [%.3f, %.3f]; faster in %d of %d rounds\n", k, m, quant(tmp, rounds, 0.25),
           quant(tmp, rounds, 0.75), faster, rounds);
    if (k == 1) r1 = m;
  }
  rc = 0;
  if (isfinite(bar)) {
    rc = r1 >= bar ? 0 : 1;
    printf("ratio config 1 / config 0 (paired median GFLOPS): %.3f (bar >= %.3f: %s)\n", r1, bar,
           rc ? "MISSED" : "met");
  } else {
    printf("ratio config 1 / config 0 (paired median GFLOPS): %.3f\n", r1);
  }
done:
  ob_runner_free(runner);
  ob_task_free(task);
  ob_target_free(t);
  ob_ctx_free(ctx);
  return rc;
}
