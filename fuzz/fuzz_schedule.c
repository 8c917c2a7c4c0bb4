/* fuzz_schedule.c: schedule files (`opbench schedule --schedule FILE`) read
 * by ob_schedule_from_json against the units of a small model (the input's
 * first byte picks the model and the machine's cores; the rest is the JSON
 * text). An accepted schedule must validate, cost to a finite latency with
 * the FLOPs model, print as JSON and read back to the same text. */
#include "fuzz.h"

#include <math.h>

#include "opbench/graph.h"
#include "opbench/sched.h"

static const char *const k_models[2] = {"simple", "squeezenet-1.1"};
static ob_graph *g_graph[2];
static ob_sched_units *g_units[2];
static ob_stage_cost g_cost;
static ob_sched_flops_model g_fm;

static void setup(ob_ctx *ctx) {
  static int done;
  if (done) return;
  done = 1;
  for (int m = 0; m < 2; m++) {
    ob_model_opts o = ob_model_opts_default();
    o.source = m ? "local" : "simple";
    o.name = k_models[m];
    o.zero_weights = true;
    if (ob_model_load(ctx, &o, &g_graph[m]) || ob_graph_optimize(ctx, g_graph[m], 0, NULL) ||
        ob_sched_units_from_graph(ctx, g_graph[m], 0, &g_units[m]))
      abort();
  }
  g_fm = ob_sched_flops_model_default();
  ob_sched_predict_opts po = {.latency = ob_sched_flops_latency, .user = &g_fm, .barrier_s = 1e-6};
  if (ob_stage_cost_predicted(ctx, &po, &g_cost)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  ob_ctx *ctx = ob_fuzz_ctx();
  setup(ctx);
  int m = data[0] & 1, cores = 1 + (data[0] >> 1) % 8;
  const ob_sched_units *u = g_units[m];
  char *json = ob_fuzz_str(data + 1, size - 1);
  ob_schedule *s = NULL;
  if (ob_schedule_from_json(ctx, u, json, "fuzz.json", cores, &s) == OB_OK) {
    OB_FUZZ_REQUIRE(ob_schedule_validate(ctx, u, s, cores) == OB_OK);
    double t = -1;
    OB_FUZZ_REQUIRE(ob_schedule_cost(ctx, u, s, &g_cost, &t) == OB_OK);
    OB_FUZZ_REQUIRE(isfinite(t) && t > 0);
    ob_str a = {0}, b = {0};
    OB_FUZZ_REQUIRE(ob_schedule_to_json(ctx, u, s, &a) == OB_OK);
    ob_schedule *back = NULL;
    OB_FUZZ_REQUIRE(ob_schedule_from_json(ctx, u, a.data, "again.json", cores, &back) == OB_OK);
    OB_FUZZ_REQUIRE(ob_schedule_to_json(ctx, u, back, &b) == OB_OK);
    OB_FUZZ_REQUIRE(!strcmp(a.data, b.data));
    ob_schedule_free(back);
    ob_str_free(&a);
    ob_str_free(&b);
  }
  ob_schedule_free(s);
  free(json);
  return 0;
}
