/* test_measure: the builder (compiles, cache hits, compiler errors, build
 * timeouts, missing and failing compilers) and the runner (correct, wrong,
 * crashing, hanging, failing and parallel kernels; the worker comes back
 * after each failure; the timing protocol as the runner applies it: adaptive
 * number, fixed number, AutoTVM's number + floor, cache flush) on
 * hand-written C kernels, plus ob_stats on known samples. */
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opbench/measure.h"
#include "check.h"

/* The kernel ABI (kernel.h), written out as codegen writes it at the top of
 * every kernel: these hand-written kernels are compiled on their own. */
#define PRELUDE                                                                      \
  "#include <stdint.h>\n#include <stdlib.h>\n"                                       \
  "typedef void (*ob_krt_task)(void *closure, int64_t begin, int64_t end);\n"        \
  "typedef struct ob_krt {\n  void *pool;\n"                                         \
  "  void (*parallel_for)(void *pool, int64_t n, ob_krt_task fn, void *closure);\n" \
  "} ob_krt;\n#define N 4096\n"

#define N 4096

enum { K_VADD, K_WRONG, K_SEGV, K_ABORT, K_FPE, K_HANG, K_RET3, K_PAR, K_TINY, K_BAD, K_COUNT };

static const ob_build_input kernels[K_COUNT] = {
    [K_VADD] = {PRELUDE
                "int vadd(void *const *bufs, const ob_krt *rt) {\n"
                "  const float *a = bufs[0], *b = bufs[1]; float *c = bufs[2]; (void)rt;\n"
                "  for (int i = 0; i < N; i++) c[i] = a[i] + b[i];\n  return 0;\n}\n",
                "vadd"},
    [K_WRONG] = {PRELUDE
                 "int vsub(void *const *bufs, const ob_krt *rt) {\n"
                 "  const float *a = bufs[0], *b = bufs[1]; float *c = bufs[2]; (void)rt;\n"
                 "  for (int i = 0; i < N; i++) c[i] = a[i] - b[i];\n  return 0;\n}\n",
                 "vsub"},
    [K_SEGV] = {PRELUDE
                "int segv(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)bufs; (void)rt; volatile int *volatile p = 0; *p = 1; return 0;\n}\n",
                "segv"},
    [K_ABORT] = {PRELUDE
                 "int aborts(void *const *bufs, const ob_krt *rt) {\n"
                 "  (void)bufs; (void)rt; abort();\n}\n",
                 "aborts"},
    [K_FPE] = {PRELUDE
               "int fpe(void *const *bufs, const ob_krt *rt) {\n"
               "  (void)rt; volatile int num = 7, den = 0;\n"
               "  ((float *)bufs[2])[0] = (float)(num / den); return 0;\n}\n",
               "fpe"},
    [K_HANG] = {PRELUDE
                "int hang(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)bufs; (void)rt; volatile int spin = 1; while (spin) {} return 0;\n}\n",
                "hang"},
    [K_RET3] = {PRELUDE
                "int ret3(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)bufs; (void)rt; return 3;\n}\n",
                "ret3"},
    [K_PAR] = {PRELUDE
               "struct cl { const float *a, *b; float *c; };\n"
               "static void task(void *p, int64_t begin, int64_t end) {\n"
               "  struct cl *k = p;\n"
               "  for (int64_t i = begin; i < end; i++) k->c[i] = k->a[i] + k->b[i];\n}\n"
               "int vadd_par(void *const *bufs, const ob_krt *rt) {\n"
               "  struct cl k = {bufs[0], bufs[1], bufs[2]};\n"
               "  rt->parallel_for(rt->pool, N, task, &k);\n  return 0;\n}\n",
               "vadd_par"},
    [K_TINY] = {PRELUDE
                "int tiny(void *const *bufs, const ob_krt *rt) {\n"
                "  (void)rt; ((float *)bufs[2])[0] = ((const float *)bufs[0])[0]"
                " + ((const float *)bufs[1])[0];\n  return 0;\n}\n",
                "tiny"},
    [K_BAD] = {PRELUDE
               "int bad(void *const *bufs, const ob_krt *rt) {\n"
               "  (void)bufs; (void)rt; return undefined_thing;\n}\n",
               "bad-name.v1"},
};

static char tmpdir[64];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static bool file_exists(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0;
}

/* Counts files in dir whose names start with `prefix`. */
static int count_files(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

static void write_script(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
  chmod(path, 0755);
}

/* ---- builder ----------------------------------------------------------- */

static char *so[K_COUNT];

static void test_builder(ob_ctx *ctx) {
  char cache[128];
  snprintf(cache, sizeof cache, "%s/cache/sub", tmpdir); /* mkdir -p */
  ob_build_opts opts = {.cache_dir = cache, .jobs = 2};
  ob_build_result out[K_COUNT];

  ob_status st = ob_build_batch(ctx, &opts, kernels, K_COUNT, out);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  for (int i = 0; i < K_COUNT; i++) {
    if (i == K_BAD) continue;
    CHECK_MSG(out[i].error_no == OB_MERR_NONE, "%s: %d %s", kernels[i].name, out[i].error_no,
              out[i].message ? out[i].message : "");
    CHECK(file_exists(out[i].so_path));
    CHECK(!out[i].cached && out[i].build_s > 0);
    so[i] = out[i].so_path ? strdup(out[i].so_path) : NULL;
  }
  CHECK(out[K_BAD].error_no == OB_MERR_COMPILE_HOST);
  CHECK(out[K_BAD].so_path == NULL);
  CHECK_MSG(out[K_BAD].message && strstr(out[K_BAD].message, "undefined_thing"), "%s",
            out[K_BAD].message ? out[K_BAD].message : "(null)");
  /* The sanitized name is used in the file names. */
  CHECK(count_files(cache, "bad_name_v1__") == 1); /* the .c only */
  for (int i = 0; i < K_COUNT; i++) ob_build_result_clear(&out[i]);

  /* Second build: cache hits, same paths; the failure is not cached. */
  st = ob_build_batch(ctx, &opts, kernels, K_COUNT, out);
  CHECK(st == OB_OK);
  for (int i = 0; i < K_COUNT; i++) {
    if (i == K_BAD) continue;
    CHECK(out[i].error_no == OB_MERR_NONE && out[i].cached && out[i].build_s == 0);
    CHECK(out[i].so_path && so[i] && strcmp(out[i].so_path, so[i]) == 0);
  }
  CHECK(out[K_BAD].error_no == OB_MERR_COMPILE_HOST && !out[K_BAD].cached);
  for (int i = 0; i < K_COUNT; i++) ob_build_result_clear(&out[i]);

  /* Other flags: another key, so no cache hit. */
  ob_build_opts o2 = opts;
  o2.flags = "-O1 -fPIC -shared";
  st = ob_build_batch(ctx, &o2, &kernels[K_VADD], 1, out);
  CHECK(st == OB_OK && out[0].error_no == OB_MERR_NONE && !out[0].cached);
  CHECK(out[0].so_path && so[K_VADD] && strcmp(out[0].so_path, so[K_VADD]) != 0);
  ob_build_result_clear(&out[0]);

  /* Build timeout with the real compiler: nothing is left in the cache. */
  char src[512];
  snprintf(src, sizeof src, PRELUDE "/* %ld */ int tmo(void *const *b, const ob_krt *rt)"
           " { (void)b; (void)rt; return 0; }\n", (long)getpid());
  ob_build_input tin = {.source = src, .name = "tmo"};
  o2 = opts;
  o2.timeout_s = 0.001;
  st = ob_build_batch(ctx, &o2, &tin, 1, out);
  CHECK(st == OB_OK);
  CHECK_MSG(out[0].error_no == OB_MERR_BUILD_TIMEOUT, "%d", out[0].error_no);
  CHECK(out[0].so_path == NULL);
  CHECK_MSG(out[0].message && strstr(out[0].message, "build timed out after 0.001 s"), "%s",
            out[0].message ? out[0].message : "(null)");
  CHECK(count_files(cache, "tmo__") == 1); /* the .c; no .so, no temp files */
  ob_build_result_clear(&out[0]);

  /* A fake compiler that hangs (with a child of its own) is killed. */
  char fake[128];
  snprintf(fake, sizeof fake, "%s/slowcc", tmpdir);
  write_script(fake, "#!/bin/sh\n"
                     "if [ \"$1\" = --version ]; then echo 'slowcc 1.0'; exit 0; fi\n"
                     "sleep 30\nexit 0\n");
  o2 = opts;
  o2.cc = fake;
  o2.timeout_s = 0.3;
  double t0 = ob_now_s();
  st = ob_build_batch(ctx, &o2, &kernels[K_VADD], 1, out);
  double dt = ob_now_s() - t0;
  CHECK(st == OB_OK && out[0].error_no == OB_MERR_BUILD_TIMEOUT);
  /* Killed at its deadline, not left to finish its 30 s: only the lower
   * bound is tight; the upper one leaves room for a loaded machine. */
  CHECK_MSG(dt >= 0.3 && dt < 20.0, "took %g s", dt);
  ob_build_result_clear(&out[0]);

  /* Missing compilers fail the call, naming the compiler. */
  const char *missing[] = {"opbench-no-such-cc", "/nonexistent/dir/cc"};
  for (int i = 0; i < 2; i++) {
    o2 = opts;
    o2.cc = missing[i];
    st = ob_build_batch(ctx, &o2, &kernels[K_VADD], 1, out);
    CHECK(st == OB_ERR_COMPILE);
    CHECK_MSG(strstr(ob_ctx_errmsg(ctx), missing[i]) && strstr(ob_ctx_errmsg(ctx), "not found"),
              "%s", ob_ctx_errmsg(ctx));
    CHECK(out[0].error_no != OB_MERR_NONE && out[0].so_path == NULL);
    ob_build_result_clear(&out[0]);
  }
  /* ... also when it comes from $OPBENCH_CC. */
  const char *old = getenv("OPBENCH_CC");
  char *saved = old ? strdup(old) : NULL;
  setenv("OPBENCH_CC", "opbench-env-cc", 1);
  st = ob_build_batch(ctx, &opts, &kernels[K_VADD], 1, out);
  CHECK(st == OB_ERR_COMPILE && strstr(ob_ctx_errmsg(ctx), "opbench-env-cc"));
  ob_build_result_clear(&out[0]);
  if (saved) setenv("OPBENCH_CC", saved, 1);
  else unsetenv("OPBENCH_CC");
  free(saved);

  /* A compiler that fails without a word. */
  o2 = opts;
  o2.cc = "/bin/false";
  st = ob_build_batch(ctx, &o2, &kernels[K_VADD], 1, out);
  CHECK(st == OB_OK);
  CHECK(out[0].error_no == OB_MERR_COMPILE_HOST && out[0].so_path == NULL);
  CHECK_MSG(out[0].message && strstr(out[0].message, "exited with status 1"), "%s",
            out[0].message ? out[0].message : "(null)");
  ob_build_result_clear(&out[0]);

  /* A compiler that says it succeeded but wrote nothing. */
  o2.cc = "true";
  st = ob_build_batch(ctx, &o2, &kernels[K_VADD], 1, out);
  CHECK(st == OB_OK && out[0].error_no == OB_MERR_COMPILE_HOST);
  ob_build_result_clear(&out[0]);

  /* Default cache directory: $OPBENCH_CACHE when set. */
  const char *envcache = getenv("OPBENCH_CACHE");
  if (envcache && envcache[0]) {
    st = ob_build_batch(ctx, NULL, &kernels[K_VADD], 1, out);
    CHECK(st == OB_OK && out[0].error_no == OB_MERR_NONE);
    CHECK(out[0].so_path && strncmp(out[0].so_path, envcache, strlen(envcache)) == 0);
    ob_build_result_clear(&out[0]);
  }

  CHECK(ob_build_batch(ctx, &opts, NULL, 0, NULL) == OB_OK);
  ob_build_result_clear(NULL);
}

/* ---- runner ------------------------------------------------------------ */

typedef struct vec_user {
  int n;      /* elements per buffer */
  int checks; /* number of check calls */
  ob_rng rng;
} vec_user;

static void vec_fill(void *user, void *const *bufs) {
  vec_user *u = user;
  float *a = bufs[0], *b = bufs[1], *c = bufs[2];
  for (int i = 0; i < u->n; i++) {
    a[i] = ob_rng_float(&u->rng);
    b[i] = ob_rng_float(&u->rng);
    c[i] = NAN;
  }
}

static ob_status vec_check(void *user, void *const *bufs, char *msg, size_t cap) {
  vec_user *u = user;
  const float *a = bufs[0], *b = bufs[1], *c = bufs[2];
  u->checks++;
  for (int i = 0; i < u->n; i++) {
    float want = a[i] + b[i];
    if (!(fabsf(c[i] - want) <= 1e-6f)) {
      snprintf(msg, cap, "c[%d] = %g, expected %g", i, c[i], want);
      return OB_ERR_WRONG_ANSWER;
    }
  }
  return OB_OK;
}

typedef struct run_case {
  size_t bytes[3];
  bool is_input[3];
  vec_user user;
  ob_run_request req;
} run_case;

static void make_req(run_case *rc, int k, const char *symbol, int n) {
  memset(rc, 0, sizeof *rc);
  for (int i = 0; i < 3; i++) {
    rc->bytes[i] = (size_t)n * sizeof(float);
    rc->is_input[i] = i < 2;
  }
  rc->user.n = n;
  rc->user.rng.s = 42;
  rc->req = (ob_run_request){.so_path = so[k], .symbol = symbol, .nbufs = 3,
                             .buf_bytes = rc->bytes, .buf_is_input = rc->is_input,
                             .nthreads = 1, .timing = ob_timing_default(),
                             .fill = vec_fill, .check = vec_check, .user = &rc->user};
  rc->req.timing.repeat = 5;
}

/* A correct vector add still works (after a failure: on a new worker). */
static void expect_ok(ob_runner *r, const char *after) {
  run_case rc;
  ob_run_result res;
  make_req(&rc, K_VADD, "vadd", N);
  ob_status st = ob_runner_run(r, &rc.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == OB_MERR_NONE, "after %s: %d %s", after,
            res.error_no, res.message);
  CHECK(res.timing.ncosts == 5 && res.timing.median_s > 0);
}

static void expect_fail(ob_runner *r, int k, const char *symbol, int want, const char *text,
                        double timeout) {
  run_case rc;
  ob_run_result res;
  make_req(&rc, k, symbol, N);
  if (timeout > 0) rc.req.timing.timeout_s = timeout;
  double t0 = ob_now_s();
  ob_status st = ob_runner_run(r, &rc.req, &res);
  double dt = ob_now_s() - t0;
  CHECK(st == OB_OK);
  CHECK_MSG(res.error_no == want, "%s: error_no %d (%s), want %d", symbol, res.error_no,
            res.message, want);
  CHECK_MSG(strstr(res.message, text), "%s: message '%s' lacks '%s'", symbol, res.message, text);
  CHECK(res.timing.ncosts == 0);
  CHECK(res.run_s > 0 && res.run_s <= dt + 1e-3);
  /* A hanging kernel is stopped after its timeout, never before; the upper
   * bound only says "not forever" and leaves room for a loaded machine. */
  if (timeout > 0) CHECK_MSG(dt >= timeout && dt < timeout + 20.0, "%s took %g s", symbol, dt);
  expect_ok(r, symbol);
}

/* True once process `pid` (our child) has died: a zombie waiting for its
 * parent's waitpid, or already reaped. */
static bool child_dead(long pid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return true;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *rp = strrchr(buf, ')'); /* "pid (comm) S ..." */
  return !rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X';
}

/* SIGKILLs this thread's children (the worker) and waits until they are
 * dead, so the next request cannot race the signal; returns how many, or -1
 * when /proc has no children file. */
static int kill_children(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/children", (long)gettid());
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0;
  long pid, pids[16];
  while (fscanf(f, "%ld", &pid) == 1)
    if (kill((pid_t)pid, SIGKILL) == 0 && n < 16) pids[n++] = pid;
  fclose(f);
  for (int i = 0; i < n; i++) {
    double t0 = ob_now_s();
    while (!child_dead(pids[i]) && ob_now_s() - t0 < 60) usleep(1000);
    CHECK_MSG(child_dead(pids[i]), "worker %ld still alive a minute after SIGKILL", pids[i]);
  }
  return n;
}

static void test_runner(ob_ctx *ctx) {
  for (int i = 0; i < K_COUNT; i++)
    if (i != K_BAD && !so[i]) {
      CHECK_MSG(0, "no shared object for %s; the runner tests cannot run", kernels[i].name);
      return;
    }
  ob_runner *r = NULL;
  ob_status st = ob_runner_new(ctx, &r);
  CHECK_MSG(st == OB_OK && r, "%s", ob_ctx_errmsg(ctx));
  if (!r) return;

  /* Correct kernel: checked, timed, statistics filled. */
  run_case rc;
  ob_run_result res;
  make_req(&rc, K_VADD, "vadd", N);
  rc.req.timing.repeat = 7;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK(st == OB_OK);
  CHECK_MSG(res.error_no == OB_MERR_NONE, "%d %s", res.error_no, res.message);
  CHECK(rc.user.checks == 1);
  /* The defaults: adaptive number, every kept repeat at least the 1 ms
   * floor, the stability rule's window of 7, the protocol recorded. */
  const ob_timing *tm = &res.timing;
  CHECK(tm->ncosts == 7 && tm->number >= 1 && tm->repeat == 7 + tm->extra_repeats);
  CHECK(tm->repeat <= OB_TIMING_MAX_COSTS && tm->min_repeat_ms == OB_TIMING_DEFAULT_FLOOR_MS);
  CHECK(!tm->flush && tm->timer_overhead_s > 0 && tm->timer_overhead_s < 1e-3);
  CHECK(tm->noisy == (tm->cv > OB_TIMING_DEFAULT_MAX_CV));
  CHECK(tm->median_s > 0 && tm->mean_s > 0 && tm->cv >= 0 && res.run_s > 0);
  for (int i = 0; i < tm->ncosts; i++)
    CHECK_MSG(tm->costs[i] > 0 && tm->costs[i] * tm->number >= 1e-3 * 0.999, "repeat %d: %g s",
              i, tm->costs[i] * tm->number);
  double med, mean, cv;
  ob_stats(tm->costs, tm->ncosts, &med, &mean, &cv);
  CHECK(med == tm->median_s && mean == tm->mean_s && cv == tm->cv);

  /* The old protocol: number 1, no floor, no stability rule. */
  make_req(&rc, K_VADD, "vadd", N);
  rc.req.timing.number = 1;
  rc.req.timing.min_repeat_ms = 0;
  rc.req.timing.max_cv = 0;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK(st == OB_OK && res.error_no == OB_MERR_NONE && tm->number == 1 &&
        tm->repeat == 5 + tm->retaken); /* a repeat preempted by the machine's load is retaken */
  CHECK(tm->ncosts == 5 && tm->min_repeat_ms == 0 && tm->extra_repeats == tm->retaken && !tm->noisy);

  /* No check: timed anyway. repeat > 64 keeps 64. */
  make_req(&rc, K_VADD, "vadd", N);
  rc.req.check = NULL;
  rc.req.timing.repeat = 100;
  rc.req.timing.number = 1;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK(st == OB_OK && res.error_no == OB_MERR_NONE && tm->ncosts == 64 &&
        tm->repeat == 64 + tm->retaken); /* preempted repeats retaken, as above */

  /* Big buffers (2 MiB each): checked in the shared buffers, then timed
   * on huge-page copies. */
  make_req(&rc, K_VADD, "vadd", N); /* adds the first N floats of each */
  for (int i = 0; i < 3; i++) rc.bytes[i] = (size_t)2 << 20;
  rc.req.timing.repeat = 3;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == OB_MERR_NONE, "big buffers: %d %s", res.error_no, res.message);
  CHECK(rc.user.checks == 1 && tm->ncosts == 3 && tm->median_s > 0);

  /* Failures, each followed by a correct run. */
  expect_fail(r, K_WRONG, "vsub", OB_MERR_WRONG_ANSWER, "expected", 0);
  expect_fail(r, K_SEGV, "segv", OB_MERR_RUNTIME, "kernel crashed: SIGSEGV", 0);
  expect_fail(r, K_ABORT, "aborts", OB_MERR_RUNTIME, "kernel crashed: SIGABRT", 0);
  expect_fail(r, K_FPE, "fpe", OB_MERR_RUNTIME, "kernel crashed: SIGFPE", 0);
  expect_fail(r, K_HANG, "hang", OB_MERR_RUN_TIMEOUT, "run timed out after 0.5 s", 0.5);
  expect_fail(r, K_RET3, "ret3", OB_MERR_RUNTIME, "kernel returned 3", 0);
  expect_fail(r, K_VADD, "no_such_symbol", OB_MERR_RUNTIME, "no_such_symbol", 0);
  {
    run_case bad;
    make_req(&bad, K_VADD, "vadd", N);
    bad.req.so_path = "/nonexistent/lib.so";
    st = ob_runner_run(r, &bad.req, &res);
    CHECK(st == OB_OK && res.error_no == OB_MERR_RUNTIME && strstr(res.message, "dlopen"));
  }

  /* parallel_for on two threads. */
  make_req(&rc, K_PAR, "vadd_par", N);
  rc.req.nthreads = 2;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == OB_MERR_NONE, "par: %d %s", res.error_no,
            res.message);
  int cores[2] = {1, 0}; /* another core set: a new pool */
  rc.req.cores = cores;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == OB_MERR_NONE, "par cores: %d %s", res.error_no,
            res.message);
  int nocore = 999; /* a core set the pool cannot use: an error, not a crash */
  rc.req.cores = &nocore;
  rc.req.nthreads = 1;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == OB_MERR_RUNTIME && strstr(res.message, "999"),
            "bad core: %d %s", res.error_no, res.message);
  rc.req.cores = NULL;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK(st == OB_OK && res.error_no == OB_MERR_NONE);

  /* --number 2 --min-repeat-ms 1 (AutoTVM's pair) grows number from 2 for a
   * tiny kernel; every repeat lasts >= 1 ms; the record says what was used. */
  make_req(&rc, K_TINY, "tiny", 1);
  rc.req.timing.number = 2;
  rc.req.timing.min_repeat_ms = 1.0;
  rc.req.timing.repeat = 3;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK(st == OB_OK && res.error_no == OB_MERR_NONE);
  CHECK_MSG(tm->number > 2, "number %d", tm->number);
  CHECK(tm->ncosts == 3 && tm->min_repeat_ms == 1.0);
  for (int i = 0; i < tm->ncosts; i++)
    CHECK_MSG(tm->costs[i] * tm->number >= 1e-3 * 0.999, "group %d: %g s", i,
              tm->costs[i] * tm->number);
  /* a fixed number without a floor is kept as it is */
  rc.req.timing.number = 5;
  rc.req.timing.min_repeat_ms = -1;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK(st == OB_OK && res.error_no == OB_MERR_NONE && tm->number == 5 && tm->min_repeat_ms == 0);

  /* Cache flush on, and a larger buffer set (the memfd grows). */
  make_req(&rc, K_VADD, "vadd", N);
  rc.req.timing.flush = true;
  rc.req.timing.number = 3;
  rc.req.timing.repeat = 4;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK_MSG(st == OB_OK && res.error_no == OB_MERR_NONE, "flush: %d %s", res.error_no,
            res.message);
  CHECK(tm->ncosts == 4 && tm->number == 3 && tm->median_s > 0 && tm->flush);
  make_req(&rc, K_VADD, "vadd", N);
  for (int i = 0; i < 3; i++) rc.bytes[i] = 8u << 20;
  st = ob_runner_run(r, &rc.req, &res);
  CHECK(st == OB_OK && res.error_no == OB_MERR_NONE);

  /* A worker killed from outside between requests is replaced. */
  int killed = kill_children();
  if (killed < 0) CHECK_SKIP("runner: no /proc/self/task/TID/children; the outside-kill case needs it");
  CHECK(killed != 0);
  if (killed > 0) expect_ok(r, "an outside kill");
  ob_runner_free(r);
  r = NULL;
  CHECK(ob_runner_new(ctx, &r) == OB_OK);
  expect_fail(r, K_SEGV, "segv", OB_MERR_RUNTIME, "SIGSEGV", 0);
  ob_runner_free(r);
  ob_runner_free(NULL);
}

/* ---- statistics -------------------------------------------------------- */

static bool near(double a, double b) { return fabs(a - b) <= 1e-12 * (1 + fabs(b)); }

static void test_stats(void) {
  double med, mean, cv;
  const double odd[] = {3, 1, 2};
  ob_stats(odd, 3, &med, &mean, &cv);
  CHECK(near(med, 2) && near(mean, 2) && near(cv, sqrt(2.0 / 3.0) / 2));
  const double even[] = {4, 1, 3, 2};
  ob_stats(even, 4, &med, &mean, &cv);
  CHECK(near(med, 2.5) && near(mean, 2.5));
  const double outlier[] = {1, 1, 100, 1};
  ob_stats(outlier, 4, &med, &mean, &cv);
  CHECK(near(med, 1) && near(mean, 1) && cv > 1);
  const double two[] = {1, 3};
  ob_stats(two, 2, &med, &mean, &cv);
  CHECK(near(med, 2) && near(mean, 2) && near(cv, 0.5));
  const double one[] = {5};
  ob_stats(one, 1, &med, &mean, &cv);
  CHECK(near(med, 5) && near(mean, 5) && cv == 0);
  ob_stats(even, 4, NULL, NULL, NULL);

  CHECK(strcmp(ob_merr_str(OB_MERR_NONE), "NO_ERROR") == 0);
  CHECK(strcmp(ob_merr_str(OB_MERR_RUN_TIMEOUT), "RUN_TIMEOUT") == 0);
  CHECK(ob_merr_str(99) != NULL && ob_merr_str(-1) != NULL);
  ob_timing_opts t = ob_timing_default();
  CHECK(t.number == 0 && t.repeat == OB_TIMING_DEFAULT_REPEAT && t.min_repeat_ms < 0 && !t.flush &&
        t.timeout_s == 10 && t.max_cv == 0.05);
}

int main(void) {
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/obmeasure-XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  test_stats();
  test_builder(ctx);
  test_runner(ctx);
  for (int i = 0; i < K_COUNT; i++) free(so[i]);
  nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
