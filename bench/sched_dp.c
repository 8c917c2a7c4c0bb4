/* sched_dp.c: the cost of IOS's dynamic program itself. For inception-v3,
 * randwire and nasnet-a (after the passes) at batch 1, plans for 2 cores
 * (--cores N for others) with a synthetic per-unit latency table (a value
 * per unit structure and thread count drawn from a hash, so nothing is
 * measured) and prints the DP's statistics beside IOS's published state
 * counts (~1.2k / ~15k / ~43k) and the time against the budget
 * (5 s for inception-v3, 60 s for the others); sequential and greedy are
 * planned with the same table for the ratio of predicted latencies. Exits 1
 * when a budget is missed.
 *   build/bench_sched_dp [--cores N] [--r R] [--s S] [--model NAME] [--repeat K] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/graph.h"
#include "opbench/sched.h"

/* Synthetic latencies: roughly FLOPs-bound, with a per-structure factor
 * and thread scaling between k^0.6 and k^0.95. */
static ob_status table_latency(void *user, const ob_sched_op_desc *op, int k, double *s) {
  (void)user;
  uint64_t h = ob_hash64(op->key, strlen(op->key), 7);
  double f = 0.8 + 0.4 * (double)(h & 0xffff) / 65535.0;
  double e = 0.6 + 0.35 * (double)((h >> 16) & 0xffff) / 65535.0;
  *s = (op->flops / 25e9 + op->bytes / 10e9 + 3e-6) * f / pow((double)k, e);
  return OB_OK;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int cores = 2, r = 3, s = 8, repeat = 3;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cores") && i + 1 < argc) cores = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--r") && i + 1 < argc) r = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--s") && i + 1 < argc) s = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--model") && i + 1 < argc) only = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--cores N] [--r R] [--s S] [--model NAME] [--repeat K]\n", argv[0]);
      return 2;
    }
  }
  if (cores < 1 || r < 1 || s < 1 || repeat < 1) {
    fprintf(stderr, "bench_sched_dp: --cores, --r, --s and --repeat must be positive\n");
    return 2;
  }
  static const struct {
    const char *name;
    const char *ios_states;
    double budget_s;
  } models[] = {{"inception-v3", "~1.2k", 5}, {"randwire", "~15k", 60}, {"nasnet-a", "~43k", 60}};
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx)) return 2;
  printf("IOS dynamic program, predicted cost from a synthetic per-unit table, %d cores, r=%d s=%d, median of %d runs\n",
         cores, r, s, repeat);
  printf("%-13s %5s %6s %5s %8s %9s %11s %8s %9s %9s %9s %8s %7s %9s %9s %9s\n", "model", "units", "blocks", "parts",
         "maxpart", "states", "IOS states", "bound", "transit", "stages", "hits", "calls", "time s", "budget s",
         "seq ms", "ios ms");
  double worst = 0;
  int rc = 0;
  for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
    if (only && strcmp(only, models[m].name)) continue;
    ob_model_opts mo = ob_model_opts_default();
    mo.name = models[m].name;
    mo.zero_weights = true;
    ob_graph *g = NULL;
    ob_sched_units *u = NULL;
    if (ob_model_load(ctx, &mo, &g) || ob_graph_optimize(ctx, g, 0, NULL) ||
        ob_sched_units_from_graph(ctx, g, 0, &u)) {
      fprintf(stderr, "bench_sched_dp: %s: %s\n", models[m].name, ob_ctx_errmsg(ctx));
      ob_graph_free(g);
      ob_ctx_free(ctx);
      return 2;
    }
    ob_sched_predict_opts po = {.latency = table_latency, .barrier_s = 1e-6, .name = "synthetic table"};
    for (int a = 0; a < OB_SCHED_KIND_COUNT; a++)
      for (int b = 0; b < OB_SCHED_KIND_COUNT; b++) po.corun[a][b] = 1.05 + 0.05 * ((a + b) % 3);
    ob_sched_opts so = ob_sched_opts_default();
    so.cores = cores;
    so.r = r;
    so.s = s;
    double times[64], seq = 0, ios = 0;
    ob_sched_stats stats = {0};
    int k = 0;
    for (; k < repeat && k < 64; k++) {
      ob_stage_cost cost;
      ob_schedule *sch = NULL;
      /* a fresh cost model each run: its latency cache starts empty */
      if (ob_stage_cost_predicted(ctx, &po, &cost) || ob_sched_ios(ctx, u, &so, &cost, &sch, &stats)) {
        fprintf(stderr, "bench_sched_dp: %s: %s\n", models[m].name, ob_ctx_errmsg(ctx));
        rc = 2;
        ob_stage_cost_free(&cost);
        break;
      }
      times[k] = stats.seconds;
      ios = ob_schedule_seconds(sch);
      ob_schedule_free(sch);
      if (k == 0) {
        ob_sched_stats ss;
        if (ob_sched_sequential(ctx, u, &so, &cost, &sch, &ss) == OB_OK) seq = ob_schedule_seconds(sch);
        ob_schedule_free(sch);
      }
      ob_stage_cost_free(&cost);
    }
    if (rc) {
      ob_sched_units_free(u);
      ob_graph_free(g);
      break;
    }
    qsort(times, (size_t)k, sizeof(double), cmp_d);
    double med = times[k / 2];
    printf("%-13s %5d %6d %5d %8d %9lld %11s %8.3g %9lld %9lld %9lld %8lld %7.3f %9.0f %9.3f %9.3f\n", models[m].name,
           ob_sched_units_count(u), stats.blocks, stats.parts, stats.max_part, (long long)stats.states,
           models[m].ios_states, stats.state_bound, (long long)stats.transitions, (long long)stats.stages_costed,
           (long long)stats.cache_hits, (long long)stats.cost_calls, med, models[m].budget_s, seq * 1e3, ios * 1e3);
    double ratio = med / models[m].budget_s;
    worst = ratio > worst ? ratio : worst;
    ob_sched_units_free(u);
    ob_graph_free(g);
  }
  ob_ctx_free(ctx);
  if (rc) return rc;
  printf("worst optimisation time / budget: %.4f (must be <= 1)\n", worst);
  return worst <= 1 ? 0 : 1;
}
