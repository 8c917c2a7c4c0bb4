/* test_corun: what the runner puts beside a timed kernel, for the profiler:
 * a co-runner kernel on its own cores or on the same ones (the "stream" and
 * "full" co-run modes), a co-runner that computes wrong or crashes (the
 * request fails, the worker comes back), cache pressure on another core
 * (and on the kernel's own core: refused), and hardware counters through
 * perf_event_open: task-clock (a software event) must be counted on every
 * thread of the kernel's pool, hardware events either counted or named as
 * not available. Timings are never asserted (the machine is shared). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opbench/measure.h"
#include "check.h"

#define PRELUDE                                                                      \
  "#include <stdint.h>\n#include <stdlib.h>\n"                                       \
  "typedef void (*ob_krt_task)(void *closure, int64_t begin, int64_t end);\n"        \
  "typedef struct ob_krt {\n  void *pool;\n"                                         \
  "  void (*parallel_for)(void *pool, int64_t n, ob_krt_task fn, void *closure);\n" \
  "} ob_krt;\n#define N 65536\n"
#define N 65536

enum { K_VADD, K_PAR, K_WRONG, K_SEGV, K_COUNT };

static const ob_build_input kernels[K_COUNT] = {
    [K_VADD] = {PRELUDE
                "int cvadd(void *const *bufs, const ob_krt *rt) {\n"
                "  const float *a = bufs[0], *b = bufs[1]; float *c = bufs[2]; (void)rt;\n"
                "  for (int i = 0; i < N; i++) c[i] = a[i] + b[i];\n  return 0;\n}\n",
                "cvadd"},
    [K_PAR] = {PRELUDE
               "struct cl { const float *a, *b; float *c; };\n"
               "static void task(void *p, int64_t begin, int64_t end) {\n"
               "  struct cl *k = p;\n"
               "  for (int64_t i = begin; i < end; i++) k->c[i] = k->a[i] + k->b[i];\n}\n"
               "int cvadd_par(void *const *bufs, const ob_krt *rt) {\n"
               "  struct cl k = {bufs[0], bufs[1], bufs[2]};\n"
               "  if (rt) rt->parallel_for(rt->pool, N, task, &k); else task(&k, 0, N);\n"
               "  return 0;\n}\n",
               "cvadd_par"},
    [K_WRONG] = {PRELUDE
                 "int cvsub(void *const *bufs, const ob_krt *rt) {\n"
                 "  const float *a = bufs[0], *b = bufs[1]; float *c = bufs[2]; (void)rt;\n"
                 "  for (int i = 0; i < N; i++) c[i] = a[i] - b[i];\n  return 0;\n}\n",
                 "cvsub"},
    [K_SEGV] = {PRELUDE
                "int csegv(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)bufs; (void)rt; volatile int *volatile p = 0; *p = 1; return 0;\n}\n",
                "csegv"},
};
static char *so[K_COUNT];

typedef struct vec_user {
  ob_rng rng;
  int checks;
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

typedef struct rcase {
  size_t bytes[3];
  bool is_input[3];
  int cores[2];
  vec_user user;
  ob_run_request req;
} rcase;

static void make(rcase *c, int k, int nthreads, int core0) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 3; i++) {
    c->bytes[i] = N * sizeof(float);
    c->is_input[i] = i < 2;
  }
  for (int i = 0; i < 2; i++) c->cores[i] = core0 + i;
  c->user.rng.s = 7 + (uint64_t)k;
  c->req = (ob_run_request){.so_path = so[k], .symbol = kernels[k].name, .nbufs = 3,
                            .buf_bytes = c->bytes, .buf_is_input = c->is_input,
                            .cores = c->cores, .nthreads = nthreads,
                            .timing = ob_timing_default(), .fill = vec_fill, .check = vec_check,
                            .user = &c->user};
  c->req.timing.repeat = 3;
  c->req.timing.max_cv = 0;
  c->req.timing.timeout_s = OB_TEST_TIMEOUT_S;
}

static void test_corun(ob_runner *r) {
  rcase a, b;
  ob_run_result res;
  /* stream: side by side on disjoint cores */
  make(&a, K_VADD, 1, 0);
  make(&b, K_PAR, 1, 1);
  a.req.corun = &b.req;
  ob_status st = ob_runner_run(r, &a.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == 0, "stream: %d %s", res.error_no, res.message);
  CHECK(res.timing.ncosts == 3 && res.timing.median_s > 0);
  CHECK_MSG(res.corun_calls > 0 && res.corun_s > 0, "co-runner calls %lld in %g s",
            (long long)res.corun_calls, res.corun_s);
  CHECK(a.user.checks == 1 && b.user.checks == 1); /* both checked against their reference */

  /* full: both on the same core, time-sliced */
  make(&a, K_VADD, 1, 0);
  make(&b, K_VADD, 1, 0);
  a.req.corun = &b.req;
  st = ob_runner_run(r, &a.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == 0, "full: %d %s", res.error_no, res.message);
  CHECK(res.corun_calls > 0);

  /* a co-runner with two threads beside a two-thread kernel on the same cores */
  make(&a, K_PAR, 2, 0);
  make(&b, K_PAR, 2, 0);
  a.req.corun = &b.req;
  st = ob_runner_run(r, &a.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == 0, "full, 2 threads: %d %s", res.error_no, res.message);

  /* a co-runner that computes wrong: the request fails (5), naming it */
  make(&a, K_VADD, 1, 0);
  make(&b, K_WRONG, 1, 1);
  a.req.corun = &b.req;
  st = ob_runner_run(r, &a.req, &res);
  CHECK(st == OB_OK);
  CHECK_MSG(res.error_no == OB_MERR_WRONG_ANSWER && strstr(res.message, "co-runner cvsub"),
            "wrong co-runner: %d %s", res.error_no, res.message);

  /* one that crashes: 4, and the worker comes back */
  make(&b, K_SEGV, 1, 1);
  a.req.corun = &b.req;
  st = ob_runner_run(r, &a.req, &res);
  CHECK(st == OB_OK);
  CHECK_MSG(res.error_no == OB_MERR_RUNTIME && strstr(res.message, "SIGSEGV"),
            "crashing co-runner: %d %s", res.error_no, res.message);
  make(&a, K_VADD, 1, 0);
  st = ob_runner_run(r, &a.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == 0, "after a crash: %d %s", res.error_no, res.message);
}

static void test_pressure(ob_ctx *ctx, ob_runner *r) {
  rcase a;
  ob_run_result res;
  make(&a, K_VADD, 1, 0);
  a.req.pressure_bytes = 4u << 20;
  a.req.pressure_core = 1;
  ob_status st = ob_runner_run(r, &a.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == 0, "pressure: %d %s", res.error_no, res.message);
  CHECK_MSG(res.pressure_gbps > 0, "pressure swept %g GB/s", res.pressure_gbps);
  /* the pressure thread on the kernel's own core is a mistake, refused */
  a.req.pressure_core = 0;
  st = ob_runner_run(r, &a.req, &res);
  CHECK(st == OB_ERR_INVALID_ARG);
  CHECK_MSG(strstr(ob_ctx_errmsg(ctx), "core 0 is one of the kernel's cores"), "%s",
            ob_ctx_errmsg(ctx));
  ob_ctx_clear_error(ctx);
}

static void test_counters(ob_runner *r) {
  char note[192];
  unsigned can = ob_counters_probe(OB_COUNTERS_ALL, note, sizeof note);
  printf("counters here: %#x (%s)\n", can, note[0] ? note : "all");
  if (!(can & (1u << OB_COUNTER_TASK_CLOCK))) {
    CHECK_SKIP("perf_event_open cannot count even task-clock here: %s", note);
    return;
  }
  /* hardware events not counted are named */
  for (int c = 0; c < OB_COUNTER_COUNT; c++)
    if (!(can & (1u << c)))
      CHECK_MSG(strstr(note, ob_counter_name((ob_counter)c)), "%s missing from '%s'",
                ob_counter_name((ob_counter)c), note);
  for (int nt = 1; nt <= 2; nt++) {
    rcase a;
    ob_run_result res;
    make(&a, nt == 1 ? K_VADD : K_PAR, nt, 0);
    a.req.counters = OB_COUNTERS_ALL;
    ob_status st = ob_runner_run(r, &a.req, &res);
    CHECK_MSG(st == OB_OK && res.error_no == 0, "counters: %d %s", res.error_no, res.message);
    const ob_counters *k = &res.counters;
    CHECK(k->asked == OB_COUNTERS_ALL);
    CHECK_MSG(k->counted == can, "%d threads: counted %#x, probe %#x (%s)", nt, k->counted, can,
              k->note);
    CHECK(k->calls >= 3 && k->calls == 3 * (int64_t)res.timing.number);
    double tc = k->per_call[OB_COUNTER_TASK_CLOCK];
    /* CPU time of a call over its threads: positive, and not absurd beside
     * the measured median (a generous bound: one call's time on a loaded
     * machine swings) */
    CHECK_MSG(tc > 0 && tc < 1e3 * res.timing.median_s * 1e9 * nt, "task-clock %g ns per call, median %g s",
              tc, res.timing.median_s);
    for (int c = 0; c < OB_COUNTER_COUNT; c++) {
      bool counted = k->counted & (1u << c);
      CHECK(counted ? k->per_call[c] >= 0 : isnan(k->per_call[c]));
    }
    if (can & (1u << OB_COUNTER_INSTRUCTIONS)) /* a 65536-element add is many instructions */
      CHECK(k->per_call[OB_COUNTER_INSTRUCTIONS] > 1000);
  }
  /* not asked: nothing counted */
  rcase a;
  ob_run_result res;
  make(&a, K_VADD, 1, 0);
  CHECK(ob_runner_run(r, &a.req, &res) == OB_OK && res.error_no == 0);
  CHECK(res.counters.asked == 0 && res.counters.counted == 0);
}

int main(void) {
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  char dir[] = "/tmp/obcorun-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  ob_build_opts bo = {.cache_dir = dir, .flags = "-O2 -fPIC -shared", .timeout_s = OB_TEST_TIMEOUT_S};
  ob_build_result br[K_COUNT];
  memset(br, 0, sizeof br);
  ob_status st = ob_build_batch(ctx, &bo, kernels, K_COUNT, br);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  bool built = st == OB_OK;
  for (int i = 0; i < K_COUNT && built; i++) {
    CHECK_MSG(br[i].error_no == 0, "%s: %s", kernels[i].name, br[i].message);
    built = br[i].error_no == 0;
    so[i] = br[i].so_path;
    br[i].so_path = NULL;
  }
  ob_runner *r = NULL;
  if (built && ob_runner_new(ctx, &r) == OB_OK) {
    test_counters(r);
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
      CHECK_SKIP("co-run and cache pressure need 2 cores; this machine has 1");
    } else {
      test_corun(r);
      test_pressure(ctx, r);
    }
  }
  ob_runner_free(r);
  for (int i = 0; i < K_COUNT; i++) {
    ob_build_result_clear(&br[i]);
    free(so[i]);
  }
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
