/* fuzz_config_json.c: the config JSON of `opbench op --config` and of the
 * entities stored in the database and AutoTVM logs, read by
 * ob_config_from_json against the space of one of a few fixed tasks (the
 * input's first byte picks it; the rest is the JSON text). An accepted
 * config must print (ob_config_str, ob_config_to_json) and read back to the
 * same index. */
#include "fuzz.h"

#include "opbench/ops.h"

static const struct {
  const char *op, *shape;
} k_wl[] = {
    {"conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1"},
    {"conv2d", "N=1,C=32,H=14,W=14,K=64,R=3,S=3,groups=2,stride_h=2,stride_w=2"},
    {"depthwise_conv2d", "N=1,C=32,H=28,W=28,R=3,S=3"},
    {"dense", "M=16,N=1000,K=512"},
    {"batch_matmul", "B=4,M=32,N=64,K=48"},
    {"pool2d", "N=1,C=64,H=56,W=56,R=3,S=3,stride_h=2,stride_w=2"},
    {"softmax", "M=8,N=1000"},
    {"layer_norm", "M=16,N=768"},
    {"concat", "N=1,C1=32,C2=64,H=14,W=14"},
    {"relu", "N=1,C=64,H=56,W=56"},
};
#define NWL (sizeof k_wl / sizeof k_wl[0])
#define MAXT 4

static ob_task *g_task[NWL][MAXT];
static int g_ntask[NWL];

static void setup(ob_ctx *ctx) {
  static int done;
  if (done) return;
  done = 1;
  for (size_t w = 0; w < NWL; w++) {
    ob_workload wl;
    if (ob_workload_parse(ctx, k_wl[w].op, k_wl[w].shape, &wl) != OB_OK) abort();
    const char *names[MAXT];
    int nt = ob_op_templates(k_wl[w].op, names, MAXT);
    for (int t = 0; t < nt && t < MAXT; t++)
      if (ob_task_new(ctx, &wl, names[t], NULL, &g_task[w][g_ntask[w]]) == OB_OK) g_ntask[w]++;
    if (!g_ntask[w]) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  ob_ctx *ctx = ob_fuzz_ctx();
  setup(ctx);
  size_t w = data[0] % NWL;
  ob_task *task = g_task[w][(data[0] / NWL) % (size_t)g_ntask[w]];
  const ob_space *sp = ob_task_space(task);
  char *json = ob_fuzz_str(data + 1, size - 1);
  ob_config c;
  if (ob_config_from_json(ctx, sp, json, &c) == OB_OK) {
    char *s = ob_config_str(&c);
    OB_FUZZ_REQUIRE(s != NULL);
    free(s);
    char *out = NULL;
    OB_FUZZ_REQUIRE(ob_config_to_json(ctx, &c, &out) == OB_OK);
    ob_config back;
    OB_FUZZ_REQUIRE(ob_config_from_json(ctx, sp, out, &back) == OB_OK);
    OB_FUZZ_REQUIRE(back.index == c.index);
    OB_FUZZ_REQUIRE(c.index < ob_space_len(sp));
    free(out);
  }
  free(json);
  return 0;
}
