/* test_profile: the collector's library API. Planning: the size grid's
 * forms (xF, +S, lists, a value) and every way it can be wrong (named),
 * threads and core sets the machine lacks, pressure beyond memory, knob
 * neighbours counted and distinct, co-run points that cannot be placed
 * skipped and counted. Running: every point stored, a second run resumes
 * them all, --remeasure measures again; the limits helpers (peak and
 * bandwidth at n threads, capped by the all-core figure) and a quick limits
 * measurement stored and loaded back. Timings are never asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opbench/profile.h"
#include "opbench/runtime.h"
#include "check.h"

static ob_ctx *ctx;
static ob_target *tgt;

static ob_workload wl_of(const char *op, const char *shape) {
  ob_workload wl;
  memset(&wl, 0, sizeof wl);
  ob_status st = ob_workload_parse(ctx, op, shape, &wl);
  CHECK_MSG(st == OB_OK, "%s %s: %s", op, shape, ob_ctx_errmsg(ctx));
  return wl;
}

/* Plans s; returns the status, the plan in *out (NULL on failure). */
static ob_status plan(ob_profile_sweep *s, ob_profile_plan **out) {
  *out = NULL;
  return ob_profile_plan_new(ctx, tgt, s, out);
}

static void expect_refused(ob_profile_sweep *s, const char *needle, const char *what) {
  ob_profile_plan *p = NULL;
  ob_status st = plan(s, &p);
  CHECK_MSG(st == OB_ERR_INVALID_ARG || st == OB_ERR_UNSUPPORTED, "%s: status %d", what, (int)st);
  CHECK_MSG(p == NULL, "%s: a plan was made", what);
  CHECK_MSG(st != OB_OK && strstr(ob_ctx_errmsg(ctx), needle), "%s: message '%s' lacks '%s'", what,
            ob_ctx_errmsg(ctx), needle);
  ob_profile_plan_free(p);
}

static void test_plan(void) {
  ob_workload conv = wl_of("conv2d", "N=1,C=8,H=8,W=8,K=8,R=3,S=3");
  ob_profile_sweep s;
  memset(&s, 0, sizeof s);
  s.nworkloads = 1;
  s.workloads = &conv;
  /* the grid's forms */
  const struct {
    const char *grid;
    int workloads;
  } grids[] = {
      {"H=8:64:x2", 4},        /* 8 16 32 64 */
      {"H=8:32:+8", 4},        /* 8 16 24 32 */
      {"H=8:32:8", 4},         /* the same */
      {"N=1/2/4", 3},          /* a list: the batch */
      {"C=16", 1},             /* one value */
      {"H=8:16:x2,N=1/2", 4},  /* the product */
  };
  for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) {
    s.sizes = grids[i].grid;
    ob_profile_plan *p = NULL;
    ob_status st = plan(&s, &p);
    CHECK_MSG(st == OB_OK, "%s: %s", grids[i].grid, ob_ctx_errmsg(ctx));
    if (p) {
      CHECK_MSG(ob_profile_plan_workloads(p) == grids[i].workloads, "%s: %d workloads, expected %d",
                grids[i].grid, ob_profile_plan_workloads(p), grids[i].workloads);
      CHECK(ob_profile_plan_count(p) == grids[i].workloads);
    }
    ob_profile_plan_free(p);
  }
  /* the grid's faults, each named */
  const struct {
    const char *grid, *needle;
  } bad[] = {
      {"H=64:8:x2", "H=64:8:x2"}, /* empty: lo above hi */
      {"H=8:64:x1", "H=8:64:x1"}, /* a factor of 1 never ends */
      {"H=8:64:+0", "H=8:64:+0"},
      {"H=", "H="},
      {"H=abc", "abc"},
      {"=8", "=8"},
      {"Q=1/2", "Q"},             /* conv2d has no Q */
      {"R=9", "R=9"},             /* a 9x9 kernel on an 8x8 input without padding */
      {"C=0", "C=0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    s.sizes = bad[i].grid;
    expect_refused(&s, bad[i].needle, bad[i].grid);
  }
  s.sizes = NULL;
  /* resources the machine lacks; pressure beyond memory */
  long ncores = sysconf(_SC_NPROCESSORS_ONLN);
  int many[1] = {(int)ncores + 1};
  s.nthreads = 1;
  s.threads = many;
  expect_refused(&s, "thread", "more threads than cores");
  s.nthreads = 0;
  int set[1] = {(int)ncores + 3};
  const int *sets[1] = {set};
  int setn[1] = {1};
  s.ncore_sets = 1;
  s.core_sets = sets;
  s.core_set_n = setn;
  expect_refused(&s, "core", "a core the machine lacks");
  s.ncore_sets = 0;
  double huge[1] = {1e12}, neg[1] = {-1};
  s.npressure = 1;
  s.pressure_mib = huge;
  expect_refused(&s, "memory", "pressure beyond memory");
  s.pressure_mib = neg;
  expect_refused(&s, "-1", "negative pressure");
  s.npressure = 0;
  /* knob neighbours: at most the count asked, each a distinct config */
  s.knobs = OB_KNOBS_NEIGHBOURS;
  s.knob_count = 5;
  ob_profile_plan *p = NULL;
  CHECK_MSG(plan(&s, &p) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (p) CHECK_MSG(ob_profile_plan_count(p) == 6, "%d points for base + 5 neighbours", ob_profile_plan_count(p));
  ob_profile_plan_free(p);
  s.knobs = OB_KNOBS_RANDOM;
  s.knob_count = 4;
  s.seed = 7;
  CHECK_MSG(plan(&s, &p) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (p) CHECK_MSG(ob_profile_plan_count(p) == 5, "%d points for base + 4 random", ob_profile_plan_count(p));
  ob_profile_plan_free(p);
  s.knobs = OB_KNOBS_BASE;
  /* co-run: stream needs twice the cores; points that cannot be placed are skipped and said */
  ob_workload partner = wl_of("relu", "N=1,C=8,H=8,W=8");
  int all[1] = {(int)ncores};
  s.nthreads = 1;
  s.threads = all;
  s.ncorun = 1;
  s.corun = &partner;
  s.corun_modes = 1u << OB_CORUN_STREAM;
  ob_status st = plan(&s, &p);
  const char *why = NULL;
  /* every point stream on all cores: nothing left to measure but the alone points */
  CHECK_MSG(st == OB_OK || st == OB_ERR_INVALID_ARG, "%s", ob_ctx_errmsg(ctx));
  if (p) {
    CHECK(ob_profile_plan_skipped(p, &why) >= 1);
    CHECK(why && strstr(why, "stream"));
  }
  ob_profile_plan_free(p);
  s.ncorun = 0;
  s.nthreads = 0;
  /* the co-run partner of the command line */
  ob_workload w;
  CHECK(ob_profile_parse_workload(ctx, "dense:M=1,N=8,K=8", &w) == OB_OK);
  CHECK(ob_profile_parse_workload(ctx, "nosuch:M=1", &w) != OB_OK && strstr(ob_ctx_errmsg(ctx), "nosuch"));
  CHECK(ob_profile_parse_workload(ctx, "dense", &w) != OB_OK);
}

static void test_limits_math(void) {
  ob_limits l;
  memset(&l, 0, sizeof l);
  l.n = 4;
  l.l[0] = (ob_limit){.name = "fma_peak", .isa = "avx2", .threads = 1, .value = 100};
  l.l[1] = (ob_limit){.name = "fma_peak", .isa = "avx2", .threads = 4, .value = 300};
  l.l[2] = (ob_limit){.name = "mem_triad", .threads = 1, .value = 10};
  l.l[3] = (ob_limit){.name = "mem_triad", .threads = 4, .value = 25};
  CHECK(fabs(ob_limits_peak(&l, "avx2", 1) - 100) < 1e-9);
  CHECK(fabs(ob_limits_peak(&l, "avx2", 2) - 200) < 1e-9); /* 1-thread x 2, under the 4-thread figure */
  CHECK(fabs(ob_limits_peak(&l, "avx2", 4) - 300) < 1e-9); /* capped by the all-core figure */
  CHECK(isnan(ob_limits_peak(&l, "avx512", 1)));
  CHECK(fabs(ob_limits_bandwidth(&l, 1) - 10) < 1e-9);
  CHECK(fabs(ob_limits_bandwidth(&l, 4) - 25) < 1e-9);
  CHECK(ob_limits_find(&l, "mem_triad", "", 4) == &l.l[3]);
  CHECK(ob_limits_find(&l, "l1_read", "", 1) == NULL);
}

typedef struct seen {
  int stored, resumed;
} seen;
static void on_point(void *user, int index, const ob_db_profile *r) {
  (void)index;
  seen *s = user;
  if (r) s->stored++;
  else s->resumed++;
}

static void test_run(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/p.db", dir);
  ob_db *db = NULL;
  ob_runner *runner = NULL;
  ob_host host;
  if (ob_db_open(ctx, path, 0, &db) != OB_OK || ob_runner_new(ctx, &runner) != OB_OK ||
      ob_host_detect(ctx, &host) != OB_OK) {
    CHECK_MSG(false, "setup: %s", ob_ctx_errmsg(ctx));
    ob_db_close(db);
    ob_runner_free(runner);
    return;
  }
  /* limits, quick: measured, stored and loaded back */
  ob_limits lim, back;
  ob_limits_opts lo;
  memset(&lo, 0, sizeof lo);
  lo.quick = true;
  lo.build.cache_dir = dir;
  lo.build.timeout_s = OB_TEST_TIMEOUT_S;
  ob_status st = ob_limits_measure(ctx, runner, &host, &lo, &lim);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (st == OB_OK) {
    CHECK(lim.n >= 3);
    bool peak = false, triad = false;
    int cv1 = 0; /* the runtime's conversion rates at 1 thread, checked */
    for (int i = 0; i < lim.n; i++) {
      CHECK_MSG(lim.l[i].value > 0 && isfinite(lim.l[i].value), "%s %s", lim.l[i].name, lim.l[i].note);
      peak |= !strcmp(lim.l[i].name, "fma_peak");
      triad |= !strcmp(lim.l[i].name, "mem_triad");
      cv1 += !strncmp(lim.l[i].name, "cv_", 3) && lim.l[i].threads == 1 && lim.l[i].verified;
    }
    CHECK(peak && triad);
    CHECK_MSG(cv1 == OB_RT_CV_KINDS, "%d conversion rates at 1 thread", cv1);
    CHECK(ob_limits_store(db, &host, &lim) == OB_OK);
    CHECK(ob_limits_load(db, &host, &back) == OB_OK && back.n == lim.n);
    /* the peak alone, again: one figure, that ISA's at 1 thread, checked */
    const ob_limit *p1 = ob_limits_find(&lim, "fma_peak", "scalar", 1);
    lo.peak_only = "scalar";
    ob_limits again;
    CHECK_MSG(ob_limits_measure(ctx, runner, &host, &lo, &again) == OB_OK, "%s", ob_ctx_errmsg(ctx));
    CHECK_MSG(again.n == 1 && !strcmp(again.l[0].name, "fma_peak") && !strcmp(again.l[0].isa, "scalar") &&
                  again.l[0].threads == 1 && again.l[0].value > 0,
              "%d limits, the first %s %s", again.n, again.l[0].name, again.l[0].isa);
    CHECK(p1 != NULL);
  }
  /* a sweep: stored, resumed, remeasured */
  ob_workload wl = wl_of("dense", "M=2,N=32,K=32");
  ob_profile_sweep s;
  memset(&s, 0, sizeof s);
  s.nworkloads = 1;
  s.workloads = &wl;
  s.knobs = OB_KNOBS_NEIGHBOURS;
  s.knob_count = 2;
  s.db = db;
  s.host = host.fingerprint;
  ob_profile_plan *p = NULL;
  CHECK_MSG(plan(&s, &p) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (p) {
    int n = ob_profile_plan_count(p);
    ob_profile_opts o = ob_profile_opts_default();
    o.measure.build.cache_dir = dir;
    o.measure.build.timeout_s = OB_TEST_TIMEOUT_S;
    o.measure.timing.repeat = 3;
    o.host = &host;
    o.limits = st == OB_OK ? &lim : NULL;
    o.point_fn = on_point;
    seen a = {0, 0}, b = {0, 0}, c = {0, 0};
    o.user = &a;
    ob_profile_stats ps;
    CHECK_MSG(ob_profile_run(ctx, p, runner, db, &o, &ps) == OB_OK, "%s", ob_ctx_errmsg(ctx));
    CHECK_MSG(ps.points == n && ps.measured == n && ps.failed == 0 && a.stored == n, "%d/%d measured, %d failed",
              ps.measured, n, ps.failed);
    o.user = &b;
    CHECK(ob_profile_run(ctx, p, runner, db, &o, &ps) == OB_OK);
    CHECK_MSG(ps.resumed == n && ps.measured == 0 && b.resumed == n, "second run: %d resumed", ps.resumed);
    o.remeasure = true;
    o.user = &c;
    CHECK(ob_profile_run(ctx, p, runner, db, &o, &ps) == OB_OK);
    CHECK(ps.measured == n && c.stored == n);
    ob_db_profiles *rows = NULL;
    CHECK(ob_db_query_profiles(db, NULL, &rows) == OB_OK);
    if (rows) {
      CHECK_MSG(rows->n == n, "%lld rows for %d points", (long long)rows->n, n);
      for (int64_t i = 0; i < rows->n; i++) {
        const ob_db_profile *r = &rows->p[i];
        CHECK(r->error_no == 0 && r->gflops > 0 && r->intensity > 0);
        CHECK(o.limits == NULL || (r->peak_pct > 0 && isfinite(r->peak_pct)));
        /* task-clock is a software event: always counted */
        CHECK(isfinite(r->counters[OB_COUNTER_TASK_CLOCK]) && r->counters[OB_COUNTER_TASK_CLOCK] > 0);
      }
    }
    ob_db_profiles_free(rows);
  }
  ob_profile_plan_free(p);
  ob_runner_free(runner);
  ob_db_close(db);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  if (ob_target_host(ctx, &tgt) != OB_OK) return 1;
  char dir[] = "/tmp/obprofile-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_plan();
  test_limits_math();
  test_run(dir);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "test_profile: could not remove %s\n", dir);
  ob_target_free(tgt);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
