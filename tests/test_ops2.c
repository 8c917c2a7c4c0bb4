/* test_ops2.c: the pooling, normalization, softmax, concat and added
 * elementwise operators: every template over a sample of its config space
 * (default config included) on random inputs against the naive reference,
 * with odd shapes (prime channel counts, sizes not divisible by the vector
 * width, stride 2 with odd sizes, padding larger than the window's half),
 * and their bad-input paths. Built into the test_ops executable (see
 * CMakeLists.txt), whose main runs ops2_run and then the registry walk. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/ops.h"
#include "ops_util.h"

typedef struct wcase {
  const char *op, *shape;
  int samples;
} wcase;

static const wcase k_cases[] = {
    /* pool2d: mode 0 max, 1 avg; incl_pad 0 divides by the valid count */
    {"pool2d", "C=5,H=11,W=13,R=3,S=3,stride_h=2,stride_w=2,pad_t=2,pad_l=2,pad_b=2,pad_r=2", 6},
    {"pool2d", "N=2,C=7,H=9,W=17,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=2,pad_r=1,mode=1", 6},
    {"pool2d", "C=3,H=10,W=23,R=3,S=3,pad_t=2,pad_l=2,pad_b=2,pad_r=2,mode=1", 5}, /* pad > half */
    {"pool2d", "C=3,H=10,W=11,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1,mode=1,incl_pad=1", 4},
    {"pool2d", "C=13,H=12,W=37,R=5,S=3", 5},                                 /* no padding, R != S */
    {"pool2d", "C=2,H=7,W=7,R=2,S=2,stride_h=2,stride_w=2,mode=1", 3},        /* odd size, stride 2 */
    {"global_avg_pool", "N=2,C=7,H=7,W=7", 5},
    {"global_avg_pool", "C=11,H=13,W=9", 4},
    {"global_avg_pool", "C=3,H=1,W=3", 2}, /* a row shorter than one vector */
    {"softmax", "M=5,N=37", 6},
    {"softmax", "M=3,N=1000", 4},
    {"softmax", "M=2,N=3", 3},
    {"layer_norm", "M=5,N=37", 6},
    {"layer_norm", "M=3,N=768", 4},
    {"layer_norm", "M=3,N=2", 3},
    {"batch_norm", "N=2,C=5,H=7,W=9", 5},
    {"batch_norm", "C=3,H=17,W=19", 4},
    {"concat", "N=2,C1=3,C2=5,H=7,W=9", 5},
    {"concat", "C1=1,C2=2,H=13,W=13", 4},
    {"mul", "N=2,C=3,H=5,W=7", 3},
    {"sigmoid", "C=3,H=7,W=9", 3},
    {"tanh", "C=5,H=3,W=13", 3},
    {"gelu", "C=7,H=5,W=11", 3},
    {"relu6", "C=3,H=9,W=9", 3},
};

static void run_case(ob_ctx *ctx, ob_runner *runner, const wcase *c) {
  ob_workload wl;
  ob_status st = ob_workload_parse(ctx, c->op, c->shape, &wl);
  CHECK_MSG(st == OB_OK, "%s %s: %s", c->op, c->shape, ob_ctx_errmsg(ctx));
  if (!st) ops_check_all_templates(ctx, runner, NULL, &wl, c->samples, (uint64_t)c->samples * 131 + strlen(c->shape));
}

/* ob_task_new's status for op/shape; the message must name `what`. */
static void expect_refused(ob_ctx *ctx, const char *op, const char *shape, ob_status want, const char *what) {
  ob_workload wl;
  ob_task *t = NULL;
  ob_status st = ob_workload_parse(ctx, op, shape, &wl);
  if (!st) st = ob_task_new(ctx, &wl, NULL, NULL, &t);
  CHECK_MSG(st == want && !t, "%s %s: got %d (%s), want %d", op, shape, st, ob_ctx_errmsg(ctx), want);
  CHECK_MSG(strstr(ob_ctx_errmsg(ctx), what) != NULL, "%s %s: message '%s' does not name '%s'", op, shape,
            ob_ctx_errmsg(ctx), what);
  ob_task_free(t);
}

static void test_bad_input(ob_ctx *ctx) {
  /* required attributes missing, unknown ones */
  expect_refused(ctx, "pool2d", "C=4,H=8,W=8,R=3", OB_ERR_INVALID_ARG, "'S'");
  expect_refused(ctx, "concat", "C1=4,H=8,W=8", OB_ERR_INVALID_ARG, "'C2'");
  expect_refused(ctx, "softmax", "M=4", OB_ERR_INVALID_ARG, "'N'");
  expect_refused(ctx, "layer_norm", "M=4,N=8,eps=3", OB_ERR_INVALID_ARG, "'eps'");
  expect_refused(ctx, "batch_norm", "C=4,H=8,W=8,K=2", OB_ERR_INVALID_ARG, "'K'");
  /* impossible shapes */
  expect_refused(ctx, "pool2d", "C=4,H=2,W=2,R=5,S=5", OB_ERR_INVALID_ARG, "larger than the padded input");
  expect_refused(ctx, "pool2d", "C=4,H=8,W=8,R=3,S=3,pad_l=3", OB_ERR_INVALID_ARG, "entirely in the padding");
  expect_refused(ctx, "pool2d", "C=4,H=8,W=8,R=2,S=2,pad_b=3,stride_h=2", OB_ERR_INVALID_ARG,
                 "entirely in the padding");
  expect_refused(ctx, "pool2d", "C=4,H=8,W=8,R=3,S=3,stride_w=0", OB_ERR_INVALID_ARG, "stride_w");
  expect_refused(ctx, "pool2d", "C=4,H=8,W=8,R=3,S=3,pad_t=-1", OB_ERR_INVALID_ARG, "pad_t");
  expect_refused(ctx, "pool2d", "C=4,H=8,W=8,R=3,S=3,mode=2", OB_ERR_INVALID_ARG, "mode");
  expect_refused(ctx, "pool2d", "C=4,H=8,W=8,R=3,S=3,mode=1,incl_pad=5", OB_ERR_INVALID_ARG, "incl_pad");
  expect_refused(ctx, "global_avg_pool", "C=0,H=8,W=8", OB_ERR_INVALID_ARG, "C");
  expect_refused(ctx, "softmax", "M=0,N=8", OB_ERR_INVALID_ARG, "M");
  expect_refused(ctx, "layer_norm", "M=2,N=0", OB_ERR_INVALID_ARG, "N");
  expect_refused(ctx, "concat", "C1=4,C2=-1,H=8,W=8", OB_ERR_INVALID_ARG, "C2");
  expect_refused(ctx, "sigmoid", "C=4,H=0,W=8", OB_ERR_INVALID_ARG, "H");
  /* these operators take no epilogue */
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "softmax", "M=2,N=8", &wl) == OB_OK);
  CHECK(ob_workload_set_epilogue(ctx, &wl, "relu") == OB_ERR_INVALID_ARG);
  CHECK(ob_workload_parse(ctx, "pool2d", "C=2,H=8,W=8,R=2,S=2", &wl) == OB_OK);
  CHECK(ob_workload_set_epilogue(ctx, &wl, "bias") == OB_ERR_INVALID_ARG);
  /* "pad" and "stride" set every side */
  CHECK(ob_workload_set(ctx, &wl, "pad", 1) == OB_OK && ob_workload_get(&wl, "pad_r") == 1);
  CHECK(ob_workload_set(ctx, &wl, "stride", 2) == OB_OK && ob_workload_get(&wl, "stride_w") == 2);
  /* unknown template */
  ob_task *t = NULL;
  CHECK(ob_task_new(ctx, &wl, "pool2d.cuda", NULL, &t) == OB_ERR_NOT_FOUND && !t);
  CHECK(strstr(ob_ctx_errmsg(ctx), "pool2d.x86") != NULL);
}

static void test_keys_and_ir(ob_ctx *ctx) {
  ob_workload wl;
  char key[256];
  CHECK(ob_workload_parse(ctx, "pool2d", "C=64,H=112,W=112,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "stride", 2) == OB_OK && ob_workload_set(ctx, &wl, "pad", 1) == OB_OK);
  ob_workload_key(&wl, key, sizeof key);
  CHECK_MSG(!strcmp(key, "pool2d/f32/N1C64H112W112/R3S3/s2,2/p1,1,1,1/max"), "%s", key);
  CHECK(ob_workload_flops(&wl) == 64.0 * 56 * 56 * 9);
  CHECK(ob_workload_set(ctx, &wl, "mode", 1) == OB_OK);
  ob_workload_key(&wl, key, sizeof key);
  CHECK_MSG(strstr(key, "/avg_excl") != NULL, "%s", key);
  CHECK(ob_workload_parse(ctx, "concat", "N=1,C1=3,C2=5,H=7,W=9", &wl) == OB_OK);
  ob_workload_key(&wl, key, sizeof key);
  CHECK_MSG(!strcmp(key, "concat/f32/N1H7W9/C3+5"), "%s", key);

  /* each template's default config is parallel and, but for pool2d's
   * (whose column loop is left to the C compiler's vectorizer), vectorized */
  static const struct { const char *op, *shape; bool vec; } k_ir[] = {
      {"pool2d", "C=8,H=32,W=32,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1,mode=1", false},
      {"global_avg_pool", "C=8,H=14,W=14", true},
      {"softmax", "M=8,N=128", true},
      {"layer_norm", "M=8,N=128", true},
      {"batch_norm", "C=8,H=14,W=14", true},
      {"concat", "C1=8,C2=8,H=14,W=14", true},
  };
  for (size_t i = 0; i < sizeof k_ir / sizeof k_ir[0]; i++) {
    ob_task *t = NULL;
    ob_lowered *f = NULL;
    CHECK(ob_workload_parse(ctx, k_ir[i].op, k_ir[i].shape, &wl) == OB_OK);
    CHECK(ob_task_new(ctx, &wl, NULL, NULL, &t) == OB_OK);
    if (!t) continue;
    ob_config d = ob_task_default_config(t);
    CHECK(ob_task_lower(t, &d, &f) == OB_OK && f);
    char *ir = f ? ob_lowered_str(f) : NULL;
    CHECK_MSG(ir && strstr(ir, "parallel") && (!k_ir[i].vec || strstr(ir, "vectorized")), "%s: %s", k_ir[i].op,
              ir ? ir : "");
    free(ir);
    ob_lowered_free(f);
    ob_task_free(t);
  }
}

void ops2_run(ob_ctx *ctx, ob_runner *runner) {
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) run_case(ctx, runner, &k_cases[i]);
  test_bad_input(ctx);
  test_keys_and_ir(ctx);
}
