/* test_emulator: the runner's emulator implementation on the target
 * c -isa=neon -triple=aarch64-linux-gnu (aarch64 kernels cross-compiled and
 * run by qemu-aarch64 through the harness): hand-written kernels that are
 * correct, wrong, crash, hang, return non-zero or run parallel loops, each
 * with its AutoTVM error class, every timing marked emulated; a missing
 * kernel file; the same runner still running native kernels between
 * emulated ones; and a real operator (conv2d, its NEON code from codegen)
 * measured through ob_measure_configs and checked against its reference.
 * Skips (exit 77) only when the cross compiler, its C library or the
 * emulator is not installed (scripts/install-deps.sh installs them). Small
 * sizes: qemu runs the aarch64 code some 10x slower than native. */
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "opbench/measure.h"
#include "opbench/ops.h"
#include "opbench/target.h"
#include "opbench/tune.h"

#define NEON "c -isa=neon -triple=aarch64-linux-gnu"
#define N 1024

/* The kernel ABI (kernel.h) as codegen writes it atop every kernel. */
#define PRELUDE                                                                      \
  "#include <stdint.h>\n#include <stdlib.h>\n"                                       \
  "typedef void (*ob_krt_task)(void *closure, int64_t begin, int64_t end);\n"        \
  "typedef struct ob_krt {\n  void *pool;\n"                                         \
  "  void (*parallel_for)(void *pool, int64_t n, ob_krt_task fn, void *closure);\n" \
  "} ob_krt;\n#define N 1024\n"

enum { K_VADD, K_WRONG, K_SEGV, K_HANG, K_RET3, K_PAR, K_COUNT };

static const ob_build_input kernels[K_COUNT] = {
    [K_VADD] = {.source = PRELUDE
                "int vadd(void *const *bufs, const ob_krt *rt) {\n"
                "  const float *a = bufs[0], *b = bufs[1]; float *c = bufs[2]; (void)rt;\n"
                "  for (int i = 0; i < N; i++) c[i] = a[i] + b[i];\n  return 0;\n}\n",
                .name = "vadd"},
    [K_WRONG] = {.source = PRELUDE
                 "int vsub(void *const *bufs, const ob_krt *rt) {\n"
                 "  const float *a = bufs[0], *b = bufs[1]; float *c = bufs[2]; (void)rt;\n"
                 "  for (int i = 0; i < N; i++) c[i] = a[i] - b[i];\n  return 0;\n}\n",
                 .name = "vsub"},
    [K_SEGV] = {.source = PRELUDE
                "int segv(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)bufs; (void)rt; volatile int *volatile p = 0; *p = 1; return 0;\n}\n",
                .name = "segv"},
    [K_HANG] = {.source = PRELUDE
                "int hang(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)bufs; (void)rt; volatile int spin = 1; while (spin) {} return 0;\n}\n",
                .name = "hang"},
    [K_RET3] = {.source = PRELUDE
                "int ret3(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)bufs; (void)rt; return 3;\n}\n",
                .name = "ret3"},
    [K_PAR] = {.source = PRELUDE
               "struct cl { const float *a, *b; float *c; };\n"
               "static void task(void *p, int64_t begin, int64_t end) {\n"
               "  struct cl *k = p;\n"
               "  for (int64_t i = begin; i < end; i++) k->c[i] = k->a[i] + k->b[i];\n}\n"
               "int vadd_par(void *const *bufs, const ob_krt *rt) {\n"
               "  struct cl k = {bufs[0], bufs[1], bufs[2]};\n"
               "  if (!rt) return 9; /* --threads 2 must give it a parallel_for */\n"
               "  rt->parallel_for(rt->pool, N, task, &k);\n  return 0;\n}\n",
               .name = "vadd_par"},
};

static ob_ctx *ctx;
static ob_target *neon;
static char tmpdir[64];
static char *so[K_COUNT];

typedef struct vec_user {
  int checks;
  ob_rng rng;
} vec_user;

static void vec_fill(void *user, void *const *bufs) {
  vec_user *u = user;
  float *a = bufs[0], *b = bufs[1], *c = bufs[2];
  for (int i = 0; i < N; i++) {
    a[i] = ob_rng_float(&u->rng);
    b[i] = ob_rng_float(&u->rng);
    c[i] = NAN;
  }
}

static ob_status vec_check(void *user, void *const *bufs, char *msg, size_t cap) {
  vec_user *u = user;
  const float *a = bufs[0], *b = bufs[1], *c = bufs[2];
  u->checks++;
  for (int i = 0; i < N; i++)
    if (!(fabsf(c[i] - (a[i] + b[i])) <= 1e-6f)) {
      snprintf(msg, cap, "c[%d] = %g, expected %g", i, c[i], a[i] + b[i]);
      return OB_ERR_WRONG_ANSWER;
    }
  return OB_OK;
}

typedef struct run_case {
  size_t bytes[3];
  bool is_input[3];
  vec_user user;
  ob_run_request req;
} run_case;

static void make_req(run_case *rc, const ob_target *t, const char *path, const char *symbol) {
  memset(rc, 0, sizeof *rc);
  for (int i = 0; i < 3; i++) {
    rc->bytes[i] = N * sizeof(float);
    rc->is_input[i] = i < 2;
  }
  rc->user.rng.s = 7;
  rc->req = (ob_run_request){.target = t, .so_path = path, .symbol = symbol, .nbufs = 3,
                             .buf_bytes = rc->bytes, .buf_is_input = rc->is_input,
                             .nthreads = 1, .timing = ob_timing_default(),
                             .fill = vec_fill, .check = vec_check, .user = &rc->user};
  rc->req.timing.repeat = 4;
  rc->req.timing.timeout_s = OB_TEST_TIMEOUT_S;
}

static void expect_ok(ob_runner *r, int k, int nthreads, const char *what) {
  run_case rc;
  ob_run_result res;
  make_req(&rc, neon, so[k], kernels[k].name);
  rc.req.nthreads = nthreads;
  ob_status st = ob_runner_run(r, &rc.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == OB_MERR_NONE, "%s: %s / %d %s", what,
            ob_ctx_errmsg(ctx), res.error_no, res.message);
  const ob_timing *t = &res.timing;
  CHECK_MSG(t->emulated, "%s: not marked emulated", what);
  CHECK(t->ncosts == 4 && t->repeat >= 4 && t->number >= 1 && t->median_s > 0);
  CHECK(t->min_repeat_ms == ob_target_get_facts(neon)->min_repeat_ms);
  /* the floor holds under emulation too: every kept repeat lasted it */
  for (int i = 0; i < t->ncosts; i++)
    CHECK_MSG(t->costs[i] * t->number >= t->min_repeat_ms * 1e-3 * 0.999, "%s: repeat %d: %g s x %d",
              what, i, t->costs[i], t->number);
  CHECK(rc.user.checks == 1); /* the parent checked the emulated process's output */
}

static void expect_fail(ob_runner *r, int k, int want, const char *text, double timeout) {
  run_case rc;
  ob_run_result res;
  make_req(&rc, neon, so[k], kernels[k].name);
  if (timeout > 0) rc.req.timing.timeout_s = timeout;
  double t0 = ob_now_s();
  ob_status st = ob_runner_run(r, &rc.req, &res);
  double dt = ob_now_s() - t0;
  CHECK_MSG(st == OB_OK, "%s: %s", kernels[k].name, ob_ctx_errmsg(ctx));
  CHECK_MSG(res.error_no == want, "%s: error %d (%s), want %d", kernels[k].name, res.error_no,
            res.message, want);
  CHECK_MSG(strstr(res.message, text), "%s: message '%s' lacks '%s'", kernels[k].name,
            res.message, text);
  CHECK(res.timing.ncosts == 0 && !res.timing.emulated);
  if (timeout > 0) CHECK_MSG(dt >= timeout, "%s: stopped after %g s, before its %g s", kernels[k].name, dt, timeout);
}

static void test_runner(void) {
  ob_build_opts bo = {.target = neon, .cache_dir = tmpdir, .timeout_s = OB_TEST_TIMEOUT_S};
  ob_build_result br[K_COUNT];
  ob_status st = ob_build_batch(ctx, &bo, kernels, K_COUNT, br);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  for (int k = 0; k < K_COUNT; k++) {
    CHECK_MSG(br[k].error_no == OB_MERR_NONE, "%s: %s", kernels[k].name,
              br[k].message ? br[k].message : "");
    so[k] = br[k].so_path;
    br[k].so_path = NULL;
    ob_build_result_clear(&br[k]);
  }
  if (st) return;

  ob_runner *r = NULL;
  CHECK(ob_runner_new(ctx, &r) == OB_OK);
  if (!r) return;
  expect_ok(r, K_VADD, 1, "vadd");
  expect_fail(r, K_WRONG, OB_MERR_WRONG_ANSWER, "expected", 0);
  expect_fail(r, K_SEGV, OB_MERR_RUNTIME, "SIGSEGV", 0);
  expect_ok(r, K_VADD, 1, "vadd after a crash");
  expect_fail(r, K_RET3, OB_MERR_RUNTIME, "kernel returned 3", 0);
  expect_fail(r, K_HANG, OB_MERR_RUN_TIMEOUT, "timed out", 1.0);
  expect_ok(r, K_PAR, 2, "parallel loops on 2 threads");
  expect_fail(r, K_PAR, OB_MERR_RUNTIME, "kernel returned 9", 0); /* 1 thread: no rt */

  /* a kernel file that is gone: a load failure, error 4 */
  run_case rc;
  ob_run_result res;
  char gone[128];
  snprintf(gone, sizeof gone, "%s/gone.so", tmpdir);
  make_req(&rc, neon, gone, "vadd");
  CHECK(ob_runner_run(r, &rc.req, &res) == OB_OK && res.error_no == OB_MERR_RUNTIME);
  /* a symbol the object lacks: the harness's dlsym says so */
  make_req(&rc, neon, so[K_VADD], "no_such_kernel");
  CHECK(ob_runner_run(r, &rc.req, &res) == OB_OK && res.error_no == OB_MERR_RUNTIME);
  CHECK_MSG(strstr(res.message, "no_such_kernel"), "'%s'", res.message);

  /* an aarch64 object given to the native runner (no target): the native
   * worker cannot load it, and the runner goes on */
  make_req(&rc, NULL, so[K_VADD], "vadd");
  CHECK(ob_runner_run(r, &rc.req, &res) == OB_OK && res.error_no == OB_MERR_RUNTIME);
  CHECK_MSG(strstr(res.message, "dlopen"), "'%s'", res.message);
  expect_ok(r, K_VADD, 1, "vadd after a native request");

  /* the harness is built once per cache folder: one program there */
  char cmd[256];
  snprintf(cmd, sizeof cmd, "test $(ls '%s' | grep -c '^opbench_harness__[0-9a-f]*$') -eq 1", tmpdir);
  CHECK_MSG(system(cmd) == 0, "not exactly one harness program in %s", tmpdir);
  ob_runner_free(r);
}

/* A real operator: codegen's NEON code, the task's fill and reference. */
static void test_operator(void) {
  ob_workload wl;
  ob_task *task = NULL;
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=8,H=10,W=10,K=8,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "pad", 1) == OB_OK);
  CHECK_MSG(ob_task_new(ctx, &wl, NULL, neon, &task) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  ob_runner *r = NULL;
  CHECK(ob_runner_new(ctx, &r) == OB_OK);
  if (task && r) {
    ob_measure_opts mo = ob_measure_opts_default();
    mo.build.cache_dir = tmpdir;
    mo.build.timeout_s = mo.timing.timeout_s = OB_TEST_TIMEOUT_S;
    mo.timing.repeat = 3;
    ob_config cfg = ob_task_default_config(task);
    ob_measure_result res;
    CHECK_MSG(ob_measure_configs(ctx, task, r, &mo, &cfg, 1, &res) == OB_OK, "%s", ob_ctx_errmsg(ctx));
    CHECK_MSG(res.error_no == OB_MERR_NONE, "conv2d on %s: %d %s", NEON, res.error_no, res.message);
    CHECK(res.timing.emulated && res.timing.ncosts == 3 && res.gflops > 0);
    /* the code is the target's: 4-lane (16-byte) vectors, built by its compiler */
    char *src = NULL, *name = NULL;
    CHECK(ob_task_source(task, &cfg, &src, &name) == OB_OK && src);
    CHECK_MSG(src && strstr(src, "vector_size(16)") && !strstr(src, "vector_size(32)"), "%.300s",
              src ? src : "");
    free(src);
    free(name);
  }
  ob_runner_free(r);
  ob_task_free(task);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  CHECK(ob_target_parse(ctx, NEON, &neon) == OB_OK);
  if (neon && (ob_target_check_buildable(ctx, neon) || ob_target_check_runnable(ctx, neon))) {
    CHECK_SKIP("%s cannot be built or run here: %s", NEON, ob_ctx_errmsg(ctx));
  } else if (neon) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ob-test-emulator-XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL);
    test_runner();
    test_operator();
    for (int k = 0; k < K_COUNT; k++) free(so[k]);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
  ob_target_free(neon);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
