/* test_sched_run: schedules run by the graph runtime's stage executor. On
 * every zoo model at a small size (under ASan all but the three heaviest),
 * the IOS schedule (with merges where the planner finds them) and the
 * greedy one (the most concurrent groups) are compiled with
 * ob_schedule_compile and run by stages: the output equals the sequential
 * run of the same compiled steps (the naive reference is test_runtime's
 * business, merge correctness test_sched's; leaving it out keeps this test
 * fast), and a second run by stages gives the same bits (no buffer reused
 * too early under the stage order). Bad plans are refused naming the
 * stage, group and node. Kernels at their default configs through the
 * shared kernel cache ($OPBENCH_CACHE). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/runtime.h"
#include "opbench/sched.h"
#include "opbench/target.h"

static ob_ctx *ctx;

static ob_graph *load(const char *source, const char *name, int64_t size, int64_t seqlen, int64_t hidden) {
  ob_model_opts o = ob_model_opts_default();
  o.source = source;
  o.name = name;
  o.input_size = size;
  o.seqlen = seqlen;
  o.hidden = hidden;
  ob_graph *g = NULL;
  ob_status st = ob_model_load(ctx, &o, &g);
  CHECK_MSG(st == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  if (st) return NULL;
  st = ob_graph_optimize(ctx, g, 16, NULL);
  CHECK_MSG(st == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  if (st) {
    ob_graph_free(g);
    return NULL;
  }
  return g;
}

static size_t tbytes(const ob_graph *g, int t) {
  return (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
}

static ob_rt_opts opts(int cores) {
  ob_rt_opts o = ob_rt_opts_default();
  o.kernels = OB_RT_DEFAULT;
  o.nthreads = cores;
  return o;
}

/* One schedule of one model (g after the passes; in its inputs):
 * compiled, run both ways, compared. The IOS schedule
 * may merge convolutions, which rewrites g: it comes last. */
static void run_one(ob_graph *g, const char *name, void **in, int cores, bool ios) {
  int ni = ob_graph_input_count(g), no = ob_graph_output_count(g);
  ob_sched_units *u = NULL;
  ob_schedule *s = NULL;
  ob_stage_cost cost = {0};
  ob_sched_flops_model fm = ob_sched_flops_model_default();
  ob_sched_predict_opts po = {.latency = ob_sched_flops_latency, .user = &fm, .barrier_s = 1e-6};
  ob_sched_opts so = ob_sched_opts_default();
  so.cores = cores;
  ob_status st = ob_sched_units_from_graph(ctx, g, 0, &u);
  if (!st) st = ob_stage_cost_predicted(ctx, &po, &cost);
  if (!st) st = ios ? ob_sched_ios(ctx, u, &so, &cost, &s, NULL) : ob_sched_greedy(ctx, u, &so, &cost, &s, NULL);
  CHECK_MSG(st == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  ob_rt *rt = NULL;
  ob_rt_par *par = NULL;
  int merges = 0, parallel = 0;
  for (int i = 0; s && i < ob_schedule_stage_count(s); i++) {
    merges += ob_schedule_stage_kind(s, i) == OB_SCHED_STAGE_MERGE;
    parallel += ob_schedule_group_count(s, i) > 1;
  }
  ob_rt_opts o = opts(cores);
  if (!st) {
    st = ob_schedule_compile(ctx, u, s, g, 16, &o, &rt, &par);
    CHECK_MSG(st == OB_OK, "%s (%s): %s", name, ios ? "ios" : "greedy", ob_ctx_errmsg(ctx));
  }
  if (!st) {
    for (int i = 0; i < ni; i++) CHECK(ob_rt_set_input(rt, i, in[i], tbytes(g, ob_graph_input(g, i))) == OB_OK);
    CHECK(ob_rt_run(rt) == OB_OK);
    ob_rt_check_result c;
    void **seq = calloc((size_t)no + 1, sizeof *seq), *again = NULL;
    for (int i = 0; i < no; i++) {
      size_t b = ob_rt_output_bytes(rt, i);
      seq[i] = malloc(b + 1);
      memcpy(seq[i], ob_rt_output(rt, i), b);
      memset((void *)ob_rt_output(rt, i), 0, b);
    }
    CHECK_MSG(ob_rt_par_run(par) == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
    ob_rt_check(rt, (const void *const *)seq, 1e-5, &c);
    CHECK_MSG(c.ok, "%s (%s): by stages against the sequential run: %s", name, ios ? "ios" : "greedy", c.message);
    size_t b0 = ob_rt_output_bytes(rt, 0);
    again = malloc(b0 + 1);
    memcpy(again, ob_rt_output(rt, 0), b0);
    CHECK(ob_rt_par_run(par) == OB_OK);
    CHECK_MSG(!memcmp(again, ob_rt_output(rt, 0), b0), "%s: a second run by stages differs", name);
    /* and the sequential order still runs right on the re-planned memory */
    CHECK(ob_rt_run(rt) == OB_OK);
    ob_rt_check(rt, (const void *const *)seq, 1e-5, &c);
    CHECK_MSG(c.ok, "%s: sequential after the re-plan: %s", name, c.message);
    printf("%-18s %-6s %3d stages (%d merges, %d with 2+ groups) on %d cores: equal to the sequential run (max "
           "|diff| %.2g)\n",
           name, ios ? "ios" : "greedy", ob_schedule_stage_count(s), merges, parallel, cores, c.max_abs_err);
    for (int i = 0; i < no; i++) free(seq[i]);
    free(seq);
    free(again);
  }
  ob_rt_par_free(par);
  ob_rt_free(rt);
  ob_schedule_free(s);
  ob_stage_cost_free(&cost);
  ob_sched_units_free(u);
}

static void test_zoo(int cores) {
  static const struct {
    const char *source, *name;
    int64_t size, seqlen, hidden;
  } m[] = {
      {"simple", "simple", 0, 0, 0},           {"local", "resnet-18", 32, 0, 0},
      {"local", "mobilenet-v2", 32, 0, 0},     {"local", "squeezenet-1.1", 64, 0, 0},
      {"local", "inception-v3", 75, 0, 0},     {"local", "randwire", 32, 0, 0},
      {"local", "nasnet-a", 35, 0, 0},         {"local", "resnet-50", 32, 0, 0},
      {"local", "vgg-16", 32, 0, 0},           {"local", "yolov5s", 64, 0, 0},
      {"local", "lstm", 0, 5, 24},             {"local", "bert-base", 0, 3, 0},
      {"transformers", "bert-base-uncased", 0, 3, 0}, {"transformers", "gpt2", 0, 3, 0},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    /* nasnet-a and randwire, the most concurrent, stay under ASan */
    if (ob_test_asan_leaves(m[i].name, false)) {
      printf("%-18s checked by the release build (too heavy under ASan)\n", m[i].name);
      continue;
    }
    double t0 = ob_now_s();
    ob_graph *g = load(m[i].source, m[i].name, m[i].size, m[i].seqlen, m[i].hidden);
    if (!g) continue;
    int ni = ob_graph_input_count(g);
    void **in = calloc((size_t)ni + 1, sizeof *in);
    for (int k = 0; k < ni; k++) {
      in[k] = calloc(1, tbytes(g, ob_graph_input(g, k)) + 1);
      ob_graph_fill_input(g, k, 11, in[k]);
    }
    run_one(g, m[i].name, in, cores, false);
    run_one(g, m[i].name, in, cores, true);
    for (int k = 0; k < ni; k++) free(in[k]);
    free(in);
    ob_graph_free(g);
    printf("%-18s done in %.1f s\n", m[i].name, ob_now_s() - t0);
  }
}

/* Plans the runtime refuses, each naming where. */
static void expect_bad(ob_rt *rt, int nst, const ob_rt_stage_plan *st, const char *want) {
  ob_rt_par *p = NULL;
  ob_status s = ob_rt_par_new(rt, nst, st, &p);
  CHECK_MSG(s == OB_ERR_INVALID_ARG && strstr(ob_ctx_errmsg(ctx), want), "want '%s', got %d: %s", want, s,
            ob_ctx_errmsg(ctx));
  ob_rt_par_free(p);
}

static void test_bad_plans(int cores) {
  ob_graph *g = load("simple", "simple", 0, 0, 0);
  if (!g) return;
  ob_rt_opts o = opts(1);
  ob_rt *rt = NULL;
  CHECK(ob_rt_new(ctx, g, &o, &rt) == OB_OK);
  if (!rt) {
    ob_graph_free(g);
    return;
  }
  /* every live node with a step, in order */
  int nodes[256], n = 0;
  for (int i = 0; i < ob_rt_step_count(rt) && n < 256; i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    if (si.node >= 0 && (n == 0 || nodes[n - 1] != si.node)) nodes[n++] = si.node;
  }
  CHECK(n >= 3);
  int c0[] = {0}, c01[] = {0, 1}, cfar[] = {4096};
  ob_rt_group_plan all = {n, nodes, 1, c0};
  ob_rt_stage_plan one = {1, &all};
  /* the good plan first */
  ob_rt_par *p = NULL;
  CHECK_MSG(ob_rt_par_new(rt, 1, &one, &p) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  CHECK(p && ob_rt_par_run(p) == OB_OK);
  ob_rt_par_free(p);
  /* a node missing */
  ob_rt_group_plan miss = {n - 1, nodes, 1, c0};
  ob_rt_stage_plan s_miss = {1, &miss};
  expect_bad(rt, 1, &s_miss, ob_graph_node_name(g, nodes[n - 1]));
  /* a node twice */
  ob_rt_group_plan twice[2] = {{n, nodes, 1, c0}, {1, &nodes[1], 1, c0}};
  ob_rt_stage_plan s_twice[2] = {{1, &twice[0]}, {1, &twice[1]}};
  expect_bad(rt, 2, s_twice, "is also in stage 1");
  /* a core past the machine */
  ob_rt_group_plan far = {n, nodes, 1, cfar};
  ob_rt_stage_plan s_far = {1, &far};
  expect_bad(rt, 1, &s_far, "core 4096 is past this machine");
  /* overlapping cores in one stage, and a consumer beside its producer */
  ob_rt_group_plan ov[2] = {{1, &nodes[0], 2, c01}, {n - 1, &nodes[1], 1, c0}};
  ob_rt_stage_plan s_ov = {2, ov};
  if (cores >= 2) expect_bad(rt, 1, &s_ov, "core 0 is already held by group 1");
  ob_rt_group_plan ooo[2] = {{1, &nodes[0], 1, c0}, {n - 1, &nodes[1], 1, cores >= 2 ? &c01[1] : c0}};
  ob_rt_stage_plan s_ooo = {2, ooo};
  if (cores >= 2) expect_bad(rt, 1, &s_ooo, "runs them out of order");
  /* the consumer's stage before its producer's */
  ob_rt_group_plan rev[2] = {{n - 1, &nodes[1], 1, c0}, {1, &nodes[0], 1, c0}};
  ob_rt_stage_plan s_rev[2] = {{1, &rev[0]}, {1, &rev[1]}};
  expect_bad(rt, 2, s_rev, "out of order");
  ob_rt_free(rt);
  ob_graph_free(g);
}

/* The predicted cost's inputs from the machine, on squeezenet: the
 * runtime's per-step profile stored as per-operator records (read back by
 * ob_sched_db_latency: the model's convolutions found, the rest by the
 * FLOPs model), co-run factors measured for the kinds it has, candidates
 * timed on one compiled model (ob_schedule_time_on; a merge stage is
 * refused), the fastest picked. */
static void test_cost_inputs(int cores) {
  ob_graph *g = load("local", "squeezenet-1.1", 64, 0, 0);
  if (!g) return;
  char path[] = "/tmp/ob_schedrun_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  remove(path);
  ob_db *db = NULL;
  ob_target *t = NULL;
  ob_rt *rt = NULL;
  ob_sched_units *u = NULL;
  ob_rt_opts o = opts(cores);
  ob_status st = ob_db_open(ctx, path, 0, &db);
  if (!st) st = ob_target_host(ctx, &t);
  if (!st) st = ob_sched_units_from_graph(ctx, g, 0, &u);
  if (!st) st = ob_rt_new(ctx, g, &o, &rt);
  if (!st) st = ob_rt_run(rt);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (!st) {
    int64_t stored = 0, again = -1;
    CHECK(ob_sched_record_runtime(ctx, rt, cores, db, "hostA", t, 2, false, &stored) == OB_OK && stored > 0);
    CHECK(ob_sched_record_runtime(ctx, rt, cores, db, "hostA", t, 2, false, &again) == OB_OK && again == 0);
    ob_sched_db_model dm = {.db = db, .host = "hostA", .target = t, .fallback = ob_sched_flops_model_default()};
    int conv = -1;
    for (int i = 0; i < ob_sched_units_count(u) && conv < 0; i++)
      if (ob_sched_unit_op(u, i)->kind == OB_SCHED_KIND_CONV) conv = i;
    double v = 0;
    CHECK(conv >= 0 && ob_sched_db_latency(&dm, ob_sched_unit_op(u, conv), cores, &v) == OB_OK && v > 0 &&
          dm.recorded >= 1);
    ob_sched_corun_table tab = {0};
    int pairs = 0;
    ob_timing_opts to = ob_timing_default();
    to.repeat = 3;
    to.max_cv = 0;
    CHECK_MSG(ob_sched_corun_measure(ctx, u, rt, &to, &tab, &pairs) == OB_OK, "%s", ob_ctx_errmsg(ctx));
    /* squeezenet's fire modules: two expand convolutions side by side */
    int set = 0;
    for (int x = 0; x < OB_SCHED_KIND_COUNT; x++)
      for (int y = x; y < OB_SCHED_KIND_COUNT; y++) {
        set += tab.f[x][y] > 0;
        CHECK(tab.f[x][y] == tab.f[y][x]);
      }
    CHECK_MSG(pairs >= 1 && set == pairs && tab.f[OB_SCHED_KIND_CONV][OB_SCHED_KIND_CONV] > 0, "%d pairs, %d set", pairs,
              set);
    int again_pairs = -1;
    CHECK(ob_sched_corun_measure(ctx, u, rt, &to, &tab, &again_pairs) == OB_OK && again_pairs == 0);
    ob_sched_opts so = ob_sched_opts_default();
    so.cores = cores;
    ob_sched_predict_opts po = {.latency = ob_sched_db_latency, .user = &dm, .barrier_s = 1e-6};
    ob_stage_cost pc = {0};
    ob_schedule *c[2] = {0}, *merged = NULL;
    so.merge = false;
    CHECK(ob_stage_cost_predicted(ctx, &po, &pc) == OB_OK && ob_sched_sequential(ctx, u, &so, &pc, &c[0], NULL) == OB_OK &&
          ob_sched_greedy(ctx, u, &so, &pc, &c[1], NULL) == OB_OK);
    double secs[2] = {0};
    for (int i = 0; i < 2 && c[i]; i++) {
      CHECK_MSG(ob_schedule_time_on(ctx, u, c[i], rt, &to, &secs[i]) == OB_OK && secs[i] > 0, "%s", ob_ctx_errmsg(ctx));
      /* by stages as the sequential run; its stages inside whole runs,
       * learned by an in-context model: the schedule then costs as it ran */
      CHECK_MSG(ob_schedule_check_on(ctx, u, c[i], rt) == OB_OK, "%s", ob_ctx_errmsg(ctx));
      int ns = ob_schedule_stage_count(c[i]);
      double *stage_s = calloc((size_t)ns + 1, sizeof *stage_s), sum = 0;
      CHECK_MSG(stage_s && ob_schedule_profile_on(ctx, u, c[i], rt, 3, stage_s) == OB_OK, "%s", ob_ctx_errmsg(ctx));
      for (int k = 0; stage_s && k < ns; k++) {
        CHECK(stage_s[k] >= 0);
        sum += stage_s[k];
      }
      ob_stage_cost ic = {0};
      CHECK(sum > 0 && ob_stage_cost_in_context(ctx, &pc, &ic) == OB_OK &&
            ob_sched_learn_run(ctx, &ic, u, c[i], stage_s) == OB_OK && ob_stage_cost_in_context_learned(&ic) > 0);
      /* each stage costs the mean of its structure's in-run times (fire
       * modules of one shape share one) */
      double lo = INFINITY, hi = 0;
      for (int k = 0; stage_s && k < ns; k++) {
        lo = fmin(lo, stage_s[k]);
        hi = fmax(hi, stage_s[k]);
      }
      for (int k = 0; k < ns; k++)
        CHECK_MSG(ob_schedule_stage_seconds(c[i], k) >= lo && ob_schedule_stage_seconds(c[i], k) <= hi,
                  "stage %d: %g as costed, in-run times %g..%g", k + 1, ob_schedule_stage_seconds(c[i], k), lo, hi);
      ob_stage_cost_free(&ic);
      free(stage_s);
    }
    /* compiled as a program of its own from a fresh graph, checked, timed */
    ob_graph *g2 = c[1] ? load("local", "squeezenet-1.1", 64, 0, 0) : NULL;
    ob_sched_compiled *comp = NULL;
    double ct = 0;
    if (g2) {
      CHECK_MSG(ob_sched_compiled_new(ctx, u, c[1], g2, 0, 0, &o, &comp) == OB_OK &&
                    ob_sched_compiled_time(comp, &to, &ct) == OB_OK && ct > 0 && ob_sched_compiled_rt(comp) &&
                    ob_sched_compiled_par(comp),
                "%s", ob_ctx_errmsg(ctx));
      ob_sched_compiled_free(comp);
    }
    /* a merge stage needs a compiled merge */
    int ids[2] = {-1, -1}, n = 0;
    for (int i = 0; i < ob_sched_units_count(u) && n < 2; i++)
      if (*ob_sched_unit_merge_key(u, i) && (n == 0 || !strcmp(ob_sched_unit_merge_key(u, i), ob_sched_unit_merge_key(u, ids[0]))))
        ids[n++] = i;
    if (n == 2) {
      int cs[2] = {0, 1};
      CHECK(ob_schedule_new(ctx, cores, &merged) == OB_OK && ob_schedule_add_stage(merged, OB_SCHED_STAGE_MERGE) == OB_OK &&
            ob_schedule_add_group(merged, 2, ids, cores, cs) == OB_OK);
      double x;
      CHECK(ob_schedule_time_on(ctx, u, merged, rt, &to, &x) == OB_ERR_UNSUPPORTED);
    }
    ob_schedule_free(merged);
    ob_schedule_free(c[0]);
    ob_schedule_free(c[1]);
    ob_stage_cost_free(&pc);
  }
  ob_rt_free(rt);
  ob_sched_units_free(u);
  ob_target_free(t);
  ob_db_close(db);
  remove(path);
  ob_graph_free(g);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int cores = ncpu >= 2 ? 2 : 1;
  if (cores < 2) CHECK_SKIP("one core: stages run one group at a time");
  test_bad_plans(cores);
  test_cost_inputs(cores);
  test_zoo(cores);
  ob_ctx_free(ctx);
  return ob_check_done();
}
