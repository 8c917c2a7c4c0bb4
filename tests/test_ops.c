/* test_ops.c: every operator template over a sample of its config space
 * (default config included) on random inputs against the naive reference,
 * with odd shapes (prime channel counts, sizes not divisible by the vector
 * width, stride 2 with odd sizes, padding larger than the kernel's half),
 * and the bad-input paths of workloads and configs; then test_ops2.c's
 * cases (built into this executable) and the walk of the operator registry
 * that fails for any (operator, template) pair no case checked. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/ops.h"
#include "ops_util.h"

typedef struct wcase {
  const char *op, *shape, *epi;
  int64_t stride, pad, dil;
  int samples;
} wcase;

static const wcase k_cases[] = {
    {"conv2d", "C=5,H=11,W=13,K=7,R=3,S=3", "", 1, 1, 1, 10},
    {"conv2d", "C=3,H=17,W=17,K=11,R=7,S=7", "", 2, 3, 1, 8},  /* stem-like, odd sizes */
    {"conv2d", "C=3,H=31,W=31,K=32,R=7,S=7", "bias", 2, 3, 1, 4}, /* stem: default 2 vectors x 8 */
    {"conv2d", "C=8,H=9,W=9,K=13,R=3,S=3", "bias,relu", 2, 1, 1, 8},
    {"conv2d", "C=7,H=10,W=23,K=5,R=3,S=3", "", 1, 3, 1, 6},  /* pad > kernel half */
    {"conv2d", "C=4,H=12,W=12,K=8,R=3,S=3", "relu6", 1, 2, 2, 6}, /* dilation 2 */
    {"conv2d", "N=2,C=16,H=7,W=7,K=17,R=1,S=1", "bias,add,relu", 1, 0, 1, 8},
    {"conv2d", "C=6,H=8,W=19,K=4,R=1,S=3", "", 1, 0, 1, 6},   /* non-square kernel */
    {"conv2d", "C=32,H=6,W=9,K=48,R=3,S=3", "bias,add,relu", 1, 1, 1, 8}, /* blocked residual */
    {"conv2d", "C=32,H=7,W=9,K=64,R=3,S=3,groups=2", "bias,relu", 1, 1, 1, 8}, /* grouped */
    {"conv2d", "C=12,H=6,W=7,K=9,R=3,S=3,groups=3", "", 2, 1, 1, 6},          /* odd groups */
    {"conv2d", "C=16,H=6,W=6,K=16,R=3,S=3,groups=16", "", 1, 1, 1, 4},        /* depthwise as conv2d */
    {"depthwise_conv2d", "C=32,H=11,W=13,R=3,S=3", "", 1, 1, 1, 8},
    {"depthwise_conv2d", "C=48,H=15,W=15,R=3,S=3", "bias,relu6", 2, 1, 1, 8},
    {"depthwise_conv2d", "C=13,H=9,W=10,R=3,S=3", "", 2, 2, 1, 6}, /* prime C, pad > half */
    {"depthwise_conv2d", "N=2,C=16,H=8,W=8,R=5,S=5", "add", 1, 2, 1, 6},
    {"dense", "M=5,N=20,K=32", "", 0, 0, 0, 10},
    {"dense", "M=3,N=17,K=13", "bias,relu", 0, 0, 0, 8},     /* K prime: scalar reduction */
    {"dense", "M=1,N=37,K=48", "bias", 0, 0, 0, 8},
    {"dense", "M=9,N=8,K=24", "relu6,add", 0, 0, 0, 6},
    {"dense", "M=7,N=48,K=20", "bias,add", 0, 0, 0, 8}, /* packed: nb 8/16/48 */
    {"batch_matmul", "B=3,M=5,N=32,K=24", "", 0, 0, 0, 8},
    {"batch_matmul", "B=2,M=7,N=13,K=9", "relu", 0, 0, 0, 6},
    {"to_nchwc", "C=32,H=5,W=19,cb=16", "", 0, 0, 0, 4},
    {"from_nchwc", "N=2,C=24,H=3,W=7,cb=8", "", 0, 0, 0, 4},
    {"relu", "C=3,H=7,W=9", "", 0, 0, 0, 8},
    {"add", "N=2,C=5,H=3,W=11", "", 0, 0, 0, 8},
    {"bias_add", "C=13,H=5,W=5", "", 0, 0, 0, 8},
    {"clip", "C=2,H=16,W=17,lo=-1,hi=1", "", 0, 0, 0, 8},
};

static void run_case(ob_ctx *ctx, ob_runner *runner, const wcase *c) {
  ob_workload wl;
  ob_status st = ob_workload_parse(ctx, c->op, c->shape, &wl);
  if (!st && c->stride) st = ob_workload_set(ctx, &wl, "stride", c->stride);
  if (!st && c->pad) st = ob_workload_set(ctx, &wl, "pad", c->pad);
  if (!st && c->dil) st = ob_workload_set(ctx, &wl, "dilation", c->dil);
  if (!st) st = ob_workload_set_epilogue(ctx, &wl, c->epi);
  CHECK_MSG(st == OB_OK, "%s %s: %s", c->op, c->shape, ob_ctx_errmsg(ctx));
  if (!st) ops_check_all_templates(ctx, runner, NULL, &wl, c->samples, (uint64_t)c->samples * 977 + strlen(c->shape));
}

static void test_bad_input(ob_ctx *ctx) {
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "conv3x", "C=1", &wl) == OB_ERR_UNSUPPORTED);
  CHECK(strstr(ob_ctx_errmsg(ctx), "conv3x") && strstr(ob_ctx_errmsg(ctx), "conv2d"));
  CHECK(ob_workload_parse(ctx, "conv2d", "C=1,Q=3", &wl) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "'Q'") != NULL);
  CHECK(ob_workload_parse(ctx, "conv2d", "C=", &wl) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "'C'") != NULL);
  CHECK(ob_workload_parse(ctx, "conv2d", "C=4,H=8,W=8,K=4,R=3", &wl) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "'S'") != NULL);
  CHECK(ob_workload_parse(ctx, "dense", "M=1,N=2,K=3,", &wl) == OB_ERR_INVALID_ARG);
  CHECK(ob_workload_parse(ctx, "dense", "M=1 N=2", &wl) == OB_ERR_INVALID_ARG);
  CHECK(ob_workload_parse(ctx, "dense", "M=1,N=2,K=3", &wl) == OB_OK);
  CHECK(ob_workload_set_epilogue(ctx, &wl, "bias,sigmoidx") == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "sigmoidx") != NULL);
  CHECK(ob_workload_parse(ctx, "relu", "C=2,H=2,W=2", &wl) == OB_OK);
  CHECK(ob_workload_set_epilogue(ctx, &wl, "relu") == OB_ERR_INVALID_ARG);

  /* impossible shapes */
  ob_task *t = NULL;
  CHECK(ob_workload_parse(ctx, "conv2d", "C=4,H=2,W=2,K=4,R=5,S=5", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &t) == OB_ERR_INVALID_ARG && !t);
  CHECK(strstr(ob_ctx_errmsg(ctx), "empty output") != NULL);
  CHECK(ob_workload_parse(ctx, "conv2d", "C=4,H=8,W=8,K=4,R=3,S=3,stride_h=0", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &t) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "stride_h") != NULL);
  CHECK(ob_workload_parse(ctx, "dense", "M=0,N=2,K=3", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &t) == OB_ERR_INVALID_ARG);

  /* unknown template; configs outside the space */
  CHECK(ob_workload_parse(ctx, "dense", "M=64,N=64,K=16", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, "dense.cuda", NULL, &t) == OB_ERR_NOT_FOUND);
  CHECK(strstr(ob_ctx_errmsg(ctx), "dense.x86") != NULL);
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &t) == OB_OK);
  ob_config c;
  CHECK(ob_space_get(ctx, ob_task_space(t), ob_space_len(ob_task_space(t)), &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(ob_config_from_json(ctx, ob_task_space(t), "{\"entity\": [[\"tile_q\", \"sp\", [-1, 4]]]}", &c) ==
        OB_ERR_NOT_FOUND);
  CHECK(strstr(ob_ctx_errmsg(ctx), "tile_q") != NULL);
  CHECK(ob_config_from_json(ctx, ob_task_space(t), "{\"index\": ", &c) == OB_ERR_PARSE);
  /* a config of another task's space is refused, not lowered */
  ob_task *t2 = NULL;
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &t2) == OB_OK);
  ob_config other = ob_task_default_config(t2);
  ob_lowered *f = NULL;
  CHECK(ob_task_lower(t, &other, &f) == OB_ERR_OUT_OF_SPACE && !f);
  ob_config d = ob_task_default_config(t);
  CHECK(ob_task_lower(t, &d, &f) == OB_OK && f);
  char *ir = f ? ob_lowered_str(f) : NULL;
  CHECK(ir && strstr(ir, "parallel") && strstr(ir, "vectorized"));
  free(ir);
  ob_lowered_free(f);
  ob_task_free(t2);
  ob_task_free(t);
}

static void test_keys(ob_ctx *ctx) {
  ob_workload wl;
  char key[256];
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "pad", 1) == OB_OK);
  ob_workload_key(&wl, key, sizeof key);
  CHECK_MSG(!strcmp(key, "conv2d_nchw/f32/N1C64H56W56/K64R3S3/s1,1/p1,1,1,1/d1,1/g1"), "%s", key);
  CHECK(ob_workload_flops(&wl) == 2.0 * 64 * 56 * 56 * 64 * 9);
  CHECK(ob_workload_set_epilogue(ctx, &wl, "bias,relu") == OB_OK);
  ob_workload_key(&wl, key, sizeof key);
  CHECK(strstr(key, "/epi:bias,relu") != NULL);
}

int main(void) {
  ob_ctx *ctx = NULL;
  ob_runner *runner = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  CHECK(ob_runner_new(ctx, &runner) == OB_OK);
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) run_case(ctx, runner, &k_cases[i]);
  test_bad_input(ctx);
  test_keys(ctx);
  ops2_run(ctx, runner);
  ops_check_registry_covered(); /* after every case of both files */
  ob_runner_free(runner);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
