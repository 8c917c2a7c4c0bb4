/* test_opencl.c: GPU kernels run for real, on the OpenCL platform this
 * machine has (PoCL runs them on the CPU): every GPU template's default and
 * a sampled config of small workloads pass the reference check through the
 * GPU runner (its worker, device buffers, the device clock); the runner's
 * error classes (an OpenCL build failure 2, a launch over the kernel's
 * work-group limit 1, a crashing kernel 4 with the worker restarted, a
 * wrong answer 5, a hanging kernel 7); the tuning loop on a GPU target; and
 * the in-process gpu API (sessions, buffers, launches, the clock). Without
 * an OpenCL platform every part is a skip (exit 77). PoCL compiles each
 * kernel at its first launch (a second or more each): shapes and samples
 * are kept small. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opbench/gpu.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static ob_target *ocl;
static char tmpdir[] = "/tmp/opbench-ocl-XXXXXX";

typedef struct ocase {
  const char *op, *shape, *epilogue;
  int64_t stride, pad;
} ocase;

/* one or two small workloads per GPU template (the default of each
 * operator's GPU templates is its first; every one is named below) */
static const ocase k_cases[] = {
    {"conv2d", "N=1,C=8,H=9,W=9,K=16,R=3,S=3", "bias,relu", 1, 1},
    {"conv2d", "N=1,C=6,H=11,W=10,K=10,R=3,S=2", "", 2, 1},
    {"depthwise_conv2d", "N=1,C=8,H=10,W=10,R=3,S=3", "relu6", 2, 1},
    {"dense", "M=2,N=24,K=32", "bias", 0, 0},
    {"batch_matmul", "B=2,M=8,N=12,K=16", "", 0, 0},
};

static int g_nchecked;
static char g_checked[32][64];

static void note(const char *op, const char *tmpl) {
  char k[64];
  snprintf(k, sizeof k, "%s/%s", op, tmpl);
  for (int i = 0; i < g_nchecked; i++)
    if (!strcmp(g_checked[i], k)) return;
  if (g_nchecked < 32) snprintf(g_checked[g_nchecked++], 64, "%s", k);
}

static void test_templates(ob_runner *runner) {
  for (size_t c = 0; c < sizeof k_cases / sizeof k_cases[0]; c++) {
    ob_workload wl;
    CHECK(ob_workload_parse(ctx, k_cases[c].op, k_cases[c].shape, &wl) == OB_OK);
    if (k_cases[c].stride) CHECK(ob_workload_set(ctx, &wl, "stride", k_cases[c].stride) == OB_OK);
    if (k_cases[c].pad) CHECK(ob_workload_set(ctx, &wl, "pad", k_cases[c].pad) == OB_OK);
    if (*k_cases[c].epilogue) CHECK(ob_workload_set_epilogue(ctx, &wl, k_cases[c].epilogue) == OB_OK);
    const char *names[8];
    int nt = ob_op_templates_for(wl.op, ocl, names, 8);
    for (int i = 0; i < nt && i < 8; i++) {
      ob_task *t = NULL;
      ob_status st = ob_task_new(ctx, &wl, names[i], ocl, &t);
      CHECK_MSG(st == OB_OK, "%s %s: %s", wl.op, names[i], ob_ctx_errmsg(ctx));
      if (st) continue;
      /* the default and one random config that fits the device */
      ob_config cfgs[2];
      int n = 0;
      cfgs[n++] = ob_task_default_config(t);
      ob_rng r = {c * 97 + (uint64_t)i + 3};
      for (int tries = 0; n < 2 && tries < 200; tries++) {
        if (ob_space_get(ctx, ob_task_space(t), ob_rng_next(&r) % ob_space_len(ob_task_space(t)), &cfgs[n]) != OB_OK)
          continue;
        char *src = NULL, *name = NULL;
        if (ob_task_source(t, &cfgs[n], &src, &name) == OB_OK) n++;
        free(src);
        free(name);
      }
      ob_measure_opts mo = ob_measure_opts_default();
      mo.timing.repeat = 3;
      mo.timing.timeout_s = OB_TEST_TIMEOUT_S;
      ob_measure_result res[2];
      st = ob_measure_configs(ctx, t, runner, &mo, cfgs, n, res);
      CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
      for (int k = 0; st == OB_OK && k < n; k++) {
        char *cs = ob_config_str(&cfgs[k]);
        CHECK_MSG(res[k].error_no == 0 && res[k].gflops > 0 && res[k].timing.ncosts == 3 &&
                      res[k].timing.median_s > 0 && !res[k].timing.flush,
                  "%s %s %s [%s]: error %d: %s", wl.op, k_cases[c].shape, names[i], cs, res[k].error_no,
                  res[k].message);
        free(cs);
      }
      if (st == OB_OK) note(wl.op, names[i]);
      ob_task_free(t);
    }
  }
  for (int i = 0; i < ob_op_count(); i++) {
    const char *names[8];
    int nt = ob_op_templates_for(ob_op_name(i), ocl, names, 8);
    for (int k = 0; k < nt && k < 8; k++) {
      char key[64];
      bool seen = false;
      snprintf(key, sizeof key, "%s/%s", ob_op_name(i), names[k]);
      for (int j = 0; j < g_nchecked; j++) seen |= !strcmp(g_checked[j], key);
      CHECK_MSG(seen, "GPU template %s: no case runs it (add one to tests/test_opencl.c)", key);
    }
  }
}

/* ---- the runner's error classes, with kernels written by hand ---------------------- */
typedef struct io {
  int n;
  bool wrong; /* the check expects something else */
} io;

static void fill_io(void *user, void *const *bufs) {
  io *x = user;
  float *a = bufs[0], *b = bufs[1];
  for (int i = 0; i < x->n; i++) {
    a[i] = (float)i;
    b[i] = NAN;
  }
}

static ob_status check_io(void *user, void *const *bufs, char *msg, size_t cap) {
  io *x = user;
  const float *b = bufs[1];
  for (int i = 0; i < x->n; i++) {
    float want = x->wrong ? 3.0f * (float)i : 2.0f * (float)i;
    if (b[i] != want) {
      snprintf(msg, cap, "b[%d] = %g, want %g", i, b[i], want);
      return OB_ERR_WRONG_ANSWER;
    }
  }
  return OB_OK;
}

static void run_cl_build(ob_runner *runner, const char *name, const char *src, int64_t block, double timeout,
                         double build_s, bool wrong, ob_run_result *res) {
  ob_gpu_build b;
  memset(res, 0, sizeof *res);
  res->error_no = -1;
  ob_status st = ob_gpu_compile(ctx, ocl, tmpdir, src, name, &b);
  CHECK_MSG(st == OB_OK && b.path, "%s", ob_ctx_errmsg(ctx));
  if (st || !b.path) return;
  io x = {256, wrong};
  size_t bytes[2] = {256 * 4, 256 * 4};
  bool in[2] = {true, false};
  ob_launch l = {.gpu = true, .grid = {block < 256 ? 256 / block : 1, 1, 1}, .block = {block, 1, 1}};
  ob_run_request req = {.target = ocl, .so_path = b.path, .symbol = name, .launch = &l, .nbufs = 2,
                        .buf_bytes = bytes, .buf_is_input = in, .nthreads = 1, .timing = ob_timing_default(),
                        .fill = fill_io, .check = check_io, .user = &x};
  req.timing.repeat = 3;
  req.timing.timeout_s = timeout;
  req.build_s = build_s;
  st = ob_runner_run(runner, &req, res);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  ob_gpu_build_clear(&b);
}

static void run_cl(ob_runner *runner, const char *name, const char *src, int64_t block, double timeout,
                   bool wrong, ob_run_result *res) {
  run_cl_build(runner, name, src, block, timeout, 0, wrong, res);
}

static void test_error_classes(ob_runner *runner) {
  ob_runner *gr = runner;
  ob_run_result r;
  static const char twice[] =
      "__kernel void twice(__global const float *a, __global float *b) {\n"
      "  int i = get_global_id(0); b[i] = 2.0f * a[i];\n}\n";
  run_cl(gr, "twice", twice, 64, 60, false, &r);
  CHECK_MSG(r.error_no == 0 && r.timing.ncosts == 3 && r.timing.median_s > 0 && r.timing.number >= 1 &&
                r.timing.repeat >= 3 && r.timing.timer_overhead_s > 0 && !r.timing.flush,
            "%d %s", r.error_no, r.message);
  /* the same kernel, an answer the check does not expect: class 5 */
  run_cl(gr, "twice", twice, 64, 60, true, &r);
  CHECK_MSG(r.error_no == OB_MERR_WRONG_ANSWER && strstr(r.message, "want"), "%d %s", r.error_no, r.message);
  /* a source the driver rejects: class 2 with its log */
  run_cl(gr, "broken", "__kernel void broken(__global float *a, __global float *b) { b[0] = undeclared_x; }\n", 64,
         60, false, &r);
  CHECK_MSG(r.error_no == OB_MERR_COMPILE_HOST && strstr(r.message, "broken") && strstr(r.message, "undeclared_x"),
            "%d %s", r.error_no, r.message);
  /* a work-group larger than the kernel may have: class 1, named */
  const ob_gpu_facts *gf = &ob_target_get_facts(ocl)->gpu;
  run_cl(gr, "twice", twice, 2 * (int64_t)gf->max_threads_per_block, 60, false, &r);
  CHECK_MSG(r.error_no == OB_MERR_INSTANTIATION && strstr(r.message, "launch over the device's limits") &&
                strstr(r.message, "twice"),
            "%d %s", r.error_no, r.message);
  /* a kernel that crashes the worker (a write through a null pointer):
   * class 4 naming the signal; the next request gets a fresh worker */
  static const char crash[] =
      "__kernel void crash(__global const float *a, __global float *b) {\n"
      "  __global volatile float *p = (__global volatile float *)0;\n"
      "  p[get_global_id(0) * 1024 + (int)a[0]] = 1.0f; b[get_global_id(0)] = 0.0f;\n}\n";
  run_cl(gr, "crash", crash, 64, 60, false, &r);
  CHECK_MSG(r.error_no == OB_MERR_RUNTIME && strstr(r.message, "SIG"), "%d %s", r.error_no, r.message);
  run_cl(gr, "twice", twice, 64, 60, false, &r);
  CHECK_MSG(r.error_no == 0, "after a crash: %d %s", r.error_no, r.message);
  /* a kernel that never ends: class 7 after the timeout */
  static const char hang[] =
      "__kernel void hang(__global const float *a, __global float *b) {\n"
      "  volatile float s = a[0]; while (s == s) s += 1.0f; b[get_global_id(0)] = s;\n}\n";
  /* (its first run may take 1 + build_s s: PoCL compiles at the first
   * launch; the default 30 s of build_s made this check take 31 s) */
  double t0 = ob_now_s();
  run_cl_build(gr, "hang", hang, 64, 1.0, 5.0, false, &r);
  CHECK_MSG(r.error_no == OB_MERR_RUN_TIMEOUT && ob_now_s() - t0 < 15, "%d %s (%.1f s)", r.error_no, r.message,
            ob_now_s() - t0);
  run_cl(gr, "twice", twice, 64, 60, false, &r);
  CHECK_MSG(r.error_no == 0, "after a hang: %d %s", r.error_no, r.message);
}

/* The tuning loop on a GPU target: trials measured by the GPU runner. */
static void test_tune(ob_runner *runner) {
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=4,H=6,W=6,K=8,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "pad", 1) == OB_OK);
  ob_task *t = NULL;
  ob_tuner *tu = NULL;
  CHECK(ob_task_new(ctx, &wl, NULL, ocl, &t) == OB_OK);
  ob_tuner_opts to = {.seed = 5};
  if (t) CHECK(ob_tuner_new(ctx, "random", t, &to, &tu) == OB_OK);
  if (t && tu) {
    ob_tune_opts o = ob_tune_opts_default();
    o.n_trial = 4;
    o.batch = 2;
    o.confirm_top = 2;
    o.measure.timing.repeat = 3;
    o.measure.timing.timeout_s = OB_TEST_TIMEOUT_S;
    ob_tune_stats s;
    ob_measurer *m = NULL;
    CHECK(ob_measurer_local_new(ctx, runner, &m) == OB_OK);
    ob_status st = m ? ob_tune_task(ctx, t, tu, m, NULL, &o, &s) : OB_ERR_NOMEM;
    ob_measurer_free(m);
    CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
    CHECK(s.trials == 4 && s.measured == 4);
    CHECK_MSG(s.best_trial > 0 && s.best_result.gflops > 0, "best trial %d", s.best_trial);
    CHECK(s.confirmed && s.confirmed_result.timing.median_s > 0);
  }
  ob_tuner_free(tu);
  ob_task_free(t);
}

/* The gpu module in this process (last: no fork may follow a PoCL session
 * opened here). */
static void test_in_process(void) {
  ob_gpu *g = NULL;
  ob_status st = ob_gpu_open(ctx, ocl, &g);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (st) return;
  static const char add1[] =
      "__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void add1(__global const float *a, "
      "__global float *b) { int i = get_global_id(0); b[i] = a[i] + 1.0f; }\n";
  ob_gpu_build b;
  CHECK(ob_gpu_compile(ctx, ocl, tmpdir, add1, "add1", &b) == OB_OK && b.path && !b.error_no);
  CHECK(strstr(b.path, ".cl") != NULL);
  ob_launch l = {.gpu = true, .grid = {4, 1, 1}, .block = {32, 1, 1}};
  ob_gpu_kernel *k = NULL;
  if (b.path) CHECK(ob_gpu_load(g, b.path, "add1", &l, &k) == OB_OK);
  float h[128], out[128];
  for (int i = 0; i < 128; i++) h[i] = (float)i;
  void *da = NULL, *db = NULL;
  CHECK(ob_gpu_alloc(g, sizeof h, &da) == OB_OK && ob_gpu_alloc(g, sizeof h, &db) == OB_OK);
  if (k && da && db) {
    CHECK(ob_gpu_upload(g, da, h, sizeof h) == OB_OK);
    double c0 = ob_gpu_clock(g);
    void *args[2] = {da, db};
    for (int i = 0; i < 5; i++) CHECK(ob_gpu_launch(k, args, 2) == 0);
    double c1 = ob_gpu_clock(g);
    CHECK(c1 > c0 && c1 - c0 < 60);
    CHECK(ob_gpu_sync(g) == OB_OK && ob_gpu_error(g) == OB_OK);
    CHECK(ob_gpu_download(g, out, db, sizeof out) == OB_OK);
    bool okv = true;
    for (int i = 0; i < 128; i++) okv &= out[i] == (float)i + 1.0f;
    CHECK(okv);
  }
  ob_gpu_free(g, da);
  ob_gpu_free(g, db);
  ob_gpu_kernel_free(k);
  ob_gpu_build_clear(&b);
  /* a kernel name the program lacks: refused, named */
  ob_ctx_clear_error(ctx);
  ob_gpu_build b2;
  CHECK(ob_gpu_compile(ctx, ocl, tmpdir, add1, "add1_again", &b2) == OB_OK);
  ob_gpu_kernel *k2 = NULL;
  if (b2.path) CHECK(ob_gpu_load(g, b2.path, "add1_again", &l, &k2) != OB_OK && !k2 && strstr(ob_ctx_errmsg(ctx), "add1_again"));
  ob_gpu_build_clear(&b2);
  ob_gpu_close(g);
}

int main(void) {
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  CHECK(mkdtemp(tmpdir) != NULL);
  CHECK(ob_target_parse(ctx, "opencl", &ocl) == OB_OK);
  if (!ocl || ob_target_check_runnable(ctx, ocl) != OB_OK) {
    CHECK_SKIP("no OpenCL device here: %s", ob_ctx_errmsg(ctx));
  } else {
    const ob_gpu_facts *gf = &ob_target_get_facts(ocl)->gpu;
    printf("OpenCL device: %s on %s (%d compute units, %d work-items per group, %lld bytes local memory)\n",
           gf->device_name, gf->platform_name, gf->compute_units, gf->max_threads_per_block,
           (long long)gf->max_shared_per_block);
    ob_runner *runner = NULL;
    CHECK(ob_runner_new(ctx, &runner) == OB_OK);
    if (runner) {
      test_templates(runner);
      test_error_classes(runner);
      test_tune(runner);
    }
    ob_runner_free(runner);
    test_in_process();
  }
  ob_target_free(ocl);
  ob_ctx_free(ctx);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return CHECK_DONE();
}
