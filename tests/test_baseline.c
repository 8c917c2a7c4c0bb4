/* test_baseline: the oneDNN baseline runs each supported operator (conv2d in
 * its variants, fused epilogues, grouped/depthwise, dense, batch_matmul,
 * pooling) through its best-format primitive and its output agrees with the
 * operators' naive reference. The baseline has no reference of its own: each
 * workload is judged by its ob_task, so every expect_ok below (all six
 * operators, every epilogue step, groups, dilation, asymmetric padding,
 * every pooling mode) also shows that the workloads the baseline supports
 * have an ops task taking the same arguments. Unsupported workloads and bad
 * handles are clean errors; the timing protocol is the runner's
 * (ob_time_loop). It also prints the GFLOPS oneDNN reaches on two reference
 * layers: a report, not a check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opbench/baseline.h"
#include "check.h"

static ob_ctx *g_ctx;

/* Measures op/shape/epilogue; expects error 0 and a sane result. */
static void expect_ok(ob_baseline *b, const char *op, const char *shape, const char *epi,
                      const ob_timing_opts *t) {
  ob_workload wl;
  ob_status st = ob_workload_parse(g_ctx, op, shape, &wl);
  CHECK_MSG(st == OB_OK, "%s %s: %s", op, shape, ob_ctx_errmsg(g_ctx));
  if (st) return;
  snprintf(wl.epilogue, sizeof wl.epilogue, "%s", epi ? epi : "");
  ob_baseline_result r;
  st = ob_baseline_measure(b, &wl, t, 7, &r);
  CHECK_MSG(st == OB_OK, "%s %s: %s", op, shape, ob_ctx_errmsg(g_ctx));
  CHECK_MSG(r.error_no == OB_MERR_NONE, "%s %s epi '%s': error %d: %s", op, shape, epi ? epi : "",
            r.error_no, r.message);
  CHECK_MSG(r.gflops > 0 && r.timing.median_s > 0 && r.timing.ncosts > 0 && r.impl[0],
            "%s %s: gflops %g impl '%s'", op, shape, r.gflops, r.impl);
  CHECK(r.timing.number >= 1 && r.timing.repeat >= r.timing.ncosts && r.timing.timer_overhead_s > 0);
  if (!strcmp(op, "dense") || (!strcmp(op, "conv2d") && ob_workload_get(&wl, "groups") == 1))
    CHECK_MSG(r.flops == ob_workload_flops(&wl), "%s: flops %g vs %g", op, r.flops, ob_workload_flops(&wl));
  if (getenv("OB_TEST_VERBOSE"))
    printf("  %-16s %-58s %-12s %-22s %8.2f GFLOPS\n", op, shape, epi ? epi : "", r.impl, r.gflops);
}

static void expect_error(ob_baseline *b, const ob_workload *wl, int error_no, const char *needle) {
  ob_baseline_result r;
  ob_status st = ob_baseline_measure(b, wl, NULL, 1, &r);
  CHECK(st == OB_OK);
  CHECK_MSG(r.error_no == error_no && strstr(r.message, needle), "%s: error %d '%s', expected %d '%s'",
            wl->op, r.error_no, r.message, error_no, needle);
  CHECK(r.gflops == 0 && r.timing.ncosts == 0);
}

static double report(ob_baseline *b, const char *op, const char *shape, const char *what) {
  ob_workload wl;
  ob_status st = ob_workload_parse(g_ctx, op, shape, &wl);
  CHECK_MSG(st == OB_OK, "%s %s: %s", op, shape, ob_ctx_errmsg(g_ctx));
  if (st) return 0;
  ob_timing_opts t = ob_timing_default();
  t.timeout_s = OB_TEST_TIMEOUT_S;
  ob_baseline_result r;
  CHECK(ob_baseline_measure(b, &wl, &t, 1, &r) == OB_OK);
  CHECK_MSG(r.error_no == OB_MERR_NONE, "%s: %s", what, r.message);
  printf("onednn %-34s %-18s %7.1f GFLOPS (median %.3f ms, cv %.3f)\n", what, r.impl, r.gflops,
         r.timing.median_s * 1e3, r.timing.cv);
  return r.gflops;
}

int main(void) {
  CHECK(ob_ctx_new(&g_ctx) == OB_OK);
  ob_baseline *b = NULL;
  ob_status st = ob_baseline_onednn_new(g_ctx, NULL, 1, NULL, &b);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(g_ctx));
  if (st) return CHECK_DONE();
  CHECK(!strcmp(ob_baseline_name(b), "onednn"));
  printf("baseline: %s\n", ob_baseline_describe(b));
  ob_timing_opts t = ob_timing_default();
  t.repeat = 3;
  t.timeout_s = OB_TEST_TIMEOUT_S;

  /* conv2d: checked by opbench's own task (ob_task_fill / ob_task_check) */
  expect_ok(b, "conv2d", "N=1,C=16,H=14,W=14,K=32,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", NULL, &t);
  expect_ok(b, "conv2d", "N=1,C=7,H=15,W=13,K=11,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=0,pad_b=2,pad_r=1", NULL, &t);
  expect_ok(b, "conv2d", "N=2,C=32,H=9,W=9,K=24,R=1,S=1", NULL, &t);
  expect_ok(b, "conv2d", "N=1,C=3,H=33,W=31,K=16,R=7,S=7,stride_h=2,stride_w=2,pad_t=3,pad_l=3,pad_b=3,pad_r=3", NULL, &t);
  expect_ok(b, "conv2d", "N=1,C=16,H=12,W=12,K=16,R=3,S=3,pad_t=2,pad_l=2,pad_b=2,pad_r=2,dil_h=2,dil_w=2", NULL, &t);
  expect_ok(b, "conv2d", "N=1,C=16,H=14,W=14,K=32,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,relu", &t);
  expect_ok(b, "conv2d", "N=1,C=16,H=14,W=14,K=16,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "add", &t);
  expect_ok(b, "conv2d", "N=1,C=16,H=14,W=14,K=16,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,add,relu", &t);
  expect_ok(b, "conv2d", "N=1,C=13,H=10,W=11,K=17,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,relu6", &t);
  /* grouped and depthwise: checked by ops' conv2d / depthwise_conv2d tasks too */
  expect_ok(b, "conv2d", "N=1,C=16,H=10,W=10,K=24,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1,groups=4", "bias", &t);
  expect_ok(b, "depthwise_conv2d", "N=1,C=32,H=15,W=15,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1", NULL, &t);
  expect_ok(b, "depthwise_conv2d", "N=1,C=24,H=14,W=14,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,relu6", &t);
  expect_ok(b, "conv2d", "N=1,C=8,H=9,W=9,K=16,R=5,S=5,pad_t=2,pad_l=2,pad_b=2,pad_r=2,groups=8", NULL, &t); /* multiplier 2 */

  /* dense: C[M,N] = A[M,K] * B[N,K]^T */
  expect_ok(b, "dense", "M=1,N=37,K=64", NULL, &t);
  expect_ok(b, "dense", "M=8,N=101,K=96", NULL, &t);
  expect_ok(b, "dense", "M=8,N=33,K=50", "bias,relu", &t);
  expect_ok(b, "dense", "M=5,N=17,K=31", "add", &t);
  /* batch_matmul: C[b] = A[b] * B[b]^T */
  expect_ok(b, "batch_matmul", "B=3,M=5,N=7,K=9", NULL, &t);
  expect_ok(b, "batch_matmul", "B=2,M=16,N=13,K=64", "relu", &t);
  expect_ok(b, "batch_matmul", "B=1,M=4,N=6,K=8", NULL, &t);
  /* pooling: max, average excluding / including the padding */
  expect_ok(b, "pool2d", "N=1,C=16,H=15,W=15,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1,mode=0", NULL, &t);
  expect_ok(b, "pool2d", "N=1,C=5,H=14,W=13,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1,mode=1", NULL, &t);
  expect_ok(b, "pool2d", "N=1,C=5,H=14,W=13,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1,mode=1,incl_pad=1", NULL, &t);
  expect_ok(b, "pool2d", "N=2,C=20,H=9,W=9,R=2,S=2,stride_h=2,stride_w=2,pad_b=1,pad_r=1,mode=1", NULL, &t);
  expect_ok(b, "pool2d", "N=1,C=64,H=28,W=28,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1", NULL, &t);
  expect_ok(b, "global_avg_pool", "N=1,C=48,H=7,W=7", NULL, &t);

  /* oneDNN's Winograd: a 3x3 stride-1 convolution runs and passes the
   * Winograd tolerance where oneDNN has the kernel (AVX-512), else it is
   * error 1 like any workload without an implementation; what no Winograd
   * computes (stride 2, depthwise, dense) is error 1 too */
  ob_workload wl;
  ob_baseline_result wr;
  CHECK(ob_workload_parse(g_ctx, "conv2d", "N=1,C=64,H=14,W=14,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", &wl) == OB_OK);
  CHECK(ob_baseline_measure_alg(b, &wl, OB_BASELINE_ALG_WINOGRAD, &t, 3, &wr) == OB_OK);
  CHECK_MSG(wr.error_no == OB_MERR_NONE || wr.error_no == OB_MERR_INSTANTIATION, "winograd: error %d: %s",
            wr.error_no, wr.message);
  if (wr.error_no == OB_MERR_NONE) CHECK_MSG(strstr(wr.impl, "wino") != NULL, "winograd impl '%s'", wr.impl);
  if (getenv("OB_TEST_VERBOSE")) printf("  winograd: error %d impl '%s' %.1f GFLOPS\n", wr.error_no, wr.impl, wr.gflops);
  CHECK(ob_workload_parse(g_ctx, "conv2d", "N=1,C=16,H=14,W=14,K=16,R=3,S=3,stride_h=2,stride_w=2", &wl) == OB_OK);
  CHECK(ob_baseline_measure_alg(b, &wl, OB_BASELINE_ALG_WINOGRAD, &t, 3, &wr) == OB_OK);
  CHECK_MSG(wr.error_no == OB_MERR_INSTANTIATION && wr.timing.ncosts == 0, "winograd stride 2: error %d: %s", wr.error_no,
            wr.message);
  CHECK(ob_workload_parse(g_ctx, "dense", "M=4,N=8,K=8", &wl) == OB_OK);
  CHECK(ob_baseline_measure_alg(b, &wl, OB_BASELINE_ALG_WINOGRAD, &t, 3, &wr) == OB_OK);
  CHECK_MSG(wr.error_no == OB_MERR_INSTANTIATION && strstr(wr.message, "no Winograd"), "winograd dense: %s",
            wr.message);
  CHECK(ob_workload_parse(g_ctx, "depthwise_conv2d", "N=1,C=16,H=8,W=8,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_baseline_measure_alg(b, &wl, OB_BASELINE_ALG_WINOGRAD, &t, 3, &wr) == OB_OK);
  CHECK(wr.error_no == OB_MERR_INSTANTIATION);

  /* unsupported and malformed workloads are results, not crashes */
  CHECK(ob_workload_parse(g_ctx, "relu", "N=1,C=4,H=4,W=4", &wl) == OB_OK);
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "'relu' is not supported");
  CHECK(ob_workload_parse(g_ctx, "conv2d", "N=1,C=8,H=8,W=8,K=8,R=3,S=3", &wl) == OB_OK);
  snprintf(wl.epilogue, sizeof wl.epilogue, "relu,bias");
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "bias must come first");
  snprintf(wl.epilogue, sizeof wl.epilogue, "gelu");
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "unknown epilogue step 'gelu'");
  CHECK(ob_workload_parse(g_ctx, "conv2d", "N=1,C=6,H=8,W=8,K=8,R=3,S=3,groups=4", &wl) == OB_OK);
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "must divide");
  CHECK(ob_workload_parse(g_ctx, "conv2d", "N=1,C=8,H=2,W=2,K=8,R=5,S=5", &wl) == OB_OK);
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "empty output");
  CHECK(ob_workload_parse(g_ctx, "pool2d", "N=1,C=8,H=8,W=8,R=3,S=3,pad_t=3", &wl) == OB_OK);
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "smaller than the window");
  CHECK(ob_workload_parse(g_ctx, "pool2d", "N=1,C=8,H=8,W=8,R=3,S=3,mode=2", &wl) == OB_OK);
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "mode must be");
  CHECK(ob_workload_parse(g_ctx, "dense", "M=4,N=4,K=4", &wl) == OB_OK);
  wl.dtype = OB_F16;
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "float32 only");
  memset(&wl, 0, sizeof wl);
  snprintf(wl.op, sizeof wl.op, "batch_matmul"); /* hand-built, attributes missing */
  expect_error(b, &wl, OB_MERR_INSTANTIATION, "missing attribute 'B'");

  /* the timing protocol: the number grows until a repeat lasts the floor */
  {
    ob_timing_opts tg = ob_timing_default();
    tg.repeat = 4;
    tg.timeout_s = OB_TEST_TIMEOUT_S;
    tg.min_repeat_ms = 2;
    CHECK(ob_workload_parse(g_ctx, "dense", "M=1,N=16,K=16", &wl) == OB_OK);
    ob_baseline_result r;
    CHECK(ob_baseline_measure(b, &wl, &tg, 3, &r) == OB_OK);
    CHECK_MSG(r.error_no == 0 && r.timing.ncosts == 4 && r.timing.number > 1,
              "error %d ncosts %d number %d", r.error_no, r.timing.ncosts, r.timing.number);
    for (int i = 0; i < r.timing.ncosts; i++)
      CHECK(r.timing.costs[i] * r.timing.number >= 2e-3 * 0.999);
    CHECK(r.flops == 2.0 * 16 * 16 && r.timing.min_repeat_ms == 2 && !r.timing.flush);
    tg.flush = true;
    tg.number = 1;
    tg.min_repeat_ms = 0;
    CHECK(ob_baseline_measure(b, &wl, &tg, 3, &r) == OB_OK && r.error_no == 0 &&
          r.timing.number == 1 && r.timing.flush);
  }

  /* construction errors; two threads where there are two cores */
  ob_baseline *bad = NULL;
  CHECK(ob_baseline_onednn_new(g_ctx, NULL, 0, NULL, &bad) == OB_ERR_INVALID_ARG && !bad);
  CHECK(ob_baseline_onednn_new(g_ctx, (int[]){100000}, 1, NULL, &bad) == OB_ERR_INVALID_ARG && !bad);
  CHECK(strstr(ob_ctx_errmsg(g_ctx), "core 100000") != NULL);
  ob_baseline_free(NULL);
  if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
    ob_baseline *b2 = NULL;
    st = ob_baseline_onednn_new(g_ctx, NULL, 2, NULL, &b2);
    CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(g_ctx));
    if (b2) {
      printf("baseline: %s\n", ob_baseline_describe(b2));
      expect_ok(b2, "conv2d", "N=1,C=16,H=14,W=14,K=32,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,relu", &t);
      expect_ok(b2, "dense", "M=8,N=101,K=96", NULL, &t);
      report(b2, "conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "conv 64x56x56 3x3 (2 threads)");
      report(b2, "dense", "M=128,N=768,K=768", "dense 128x768x768 (2 threads)");
      ob_baseline_free(b2);
    }
  }

  /* the reference figures at one thread */
  report(b, "conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "conv 64x56x56 3x3 (1 thread)");
  report(b, "dense", "M=128,N=768,K=768", "dense 128x768x768 (1 thread)");

  ob_baseline_free(b);
  ob_ctx_free(g_ctx);
  return CHECK_DONE();
}
