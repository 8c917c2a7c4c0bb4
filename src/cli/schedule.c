/* schedule.c: `opbench schedule`: a model's operators planned by the
 * sequential, greedy and IOS schedulers of the sched module on core
 * groups, with predicted stage costs from the FLOPs model or (--cost
 * measured) stages measured by the runtime's stage executor, and with
 * --cost the schedules measured end to end, printed side by side; the chosen
 * schedule written as JSON and drawn as a timeline on request. Parsing and
 * printing only. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/runtime.h"
#include "opbench/sched.h"
#include "opbench/target.h"

typedef struct row {
  const char *name;
  ob_schedule *s;
  ob_sched_stats st;
  bool dp;
  int64_t measured; /* stages measured while planning (--cost measured) */
  double e2e_s;     /* measured end to end (--cost), -1 when not */
} row;

/* The schedule compiled end to end on this machine: the model loaded and
 * passed again (the merges rewrite a graph), the schedule carried over by
 * its JSON (units named, not numbered), compiled with default kernel
 * configs, run by stages and checked against the sequential run of the
 * same steps (ob_sched_compiled_new). */
static bool compile_e2e(ob_ctx *ctx, const cli_args *a, const ob_sched_units *u, const ob_schedule *s, int lanes,
                        ob_sched_compiled **out) {
  ob_graph *g = cli_model_load(ctx, a, true);
  if (!g) return false;
  if (!a->no_passes && ob_graph_optimize(ctx, g, lanes, NULL) != OB_OK) {
    ob_graph_free(g);
    cli_error("measuring the %s schedule: %s", ob_schedule_scheduler(s), ob_ctx_errmsg(ctx));
    return false;
  }
  ob_rt_opts o = ob_rt_opts_default();
  o.kernels = OB_RT_DEFAULT;
  o.nthreads = ob_schedule_cores(s);
  o.build = a->mo.build;
  if (ob_sched_compiled_new(ctx, u, s, g, a->max_part, lanes, &o, out) != OB_OK) {
    cli_error("measuring the %s schedule: %s", ob_schedule_scheduler(s), ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

/* ... and timed (median of 5 repeats). */
static bool measure_e2e(ob_ctx *ctx, const cli_args *a, const ob_sched_units *u, const ob_schedule *s, int lanes,
                        double *median) {
  ob_sched_compiled *c = NULL;
  if (!compile_e2e(ctx, a, u, s, lanes, &c)) return false;
  ob_timing_opts t = ob_timing_default();
  t.repeat = 5;
  t.max_cv = 0;
  bool ok = ob_sched_compiled_time(c, &t, median) == OB_OK;
  if (!ok) cli_error("measuring the %s schedule: %s", ob_schedule_scheduler(s), ob_ctx_errmsg(ctx));
  ob_sched_compiled_free(c);
  return ok;
}

/* stages with 1, 2, 3+ groups, and merges */
static void shape_of(const ob_schedule *s, int out[4]) {
  memset(out, 0, sizeof(int) * 4);
  for (int i = 0; i < ob_schedule_stage_count(s); i++) {
    if (ob_schedule_stage_kind(s, i) == OB_SCHED_STAGE_MERGE) out[3]++;
    else {
      int g = ob_schedule_group_count(s, i);
      out[g >= 3 ? 2 : g - 1]++;
    }
  }
}

static void print_stages(const ob_sched_units *u, const ob_schedule *s) {
  printf("stages of the %s schedule (predicted ms; groups: cores, operators in order)\n", ob_schedule_scheduler(s));
  for (int i = 0; i < ob_schedule_stage_count(s); i++) {
    bool merge = ob_schedule_stage_kind(s, i) == OB_SCHED_STAGE_MERGE;
    printf("  %4d %8.4f %s", i + 1, ob_schedule_stage_seconds(s, i) * 1e3, merge ? "merge   " : "parallel");
    for (int g = 0; g < ob_schedule_group_count(s, i); g++) {
      const int *ops, *cores;
      int no = ob_schedule_group_ops(s, i, g, &ops), nc = ob_schedule_group_cores(s, i, g, &cores);
      printf("%s [", g ? " |" : "");
      for (int c = 0; c < nc; c++) printf("%s%d", c ? "," : "", cores[c]);
      printf("]");
      for (int k = 0; k < no; k++) printf(" %s", ob_sched_unit_name(u, ops[k]));
    }
    printf("\n");
  }
}

/* --cross: IOS planned at every setting (batch size x thread count), each
 * plan run end to end at every setting with at least its cores (a plan
 * for more cores than a setting holds cannot run there: "-"). */
static int cross(ob_ctx *ctx, const cli_args *a) {
  enum { MAXS = 64 };
  int nb = a->nbatchsizes ? a->nbatchsizes : 1, nt = a->nsched_threads ? a->nsched_threads : 1;
  int n = nb * nt, rc = OB_CLI_EXIT_ERROR, here = 1;
  ob_host h;
  if (ob_host_detect(ctx, &h) == OB_OK && h.ncores > 0) here = h.ncores;
  if (n > MAXS) {
    cli_error("--cross: %d settings (at most %d)", n, MAXS);
    return rc;
  }
  bool measured = a->sched_cost && !strcmp(a->sched_cost, "measured");
  cli_args set[MAXS];
  int64_t batch[MAXS];
  int threads[MAXS];
  ob_graph *g[MAXS] = {0};
  ob_sched_units *u[MAXS] = {0};
  ob_schedule *s[MAXS] = {0};
  double opt[MAXS] = {0}, *lat = calloc((size_t)n * (size_t)n, sizeof(double));
  ob_target *target = NULL;
  if (!lat) {
    cli_error("out of memory");
    return rc;
  }
  if (!cli_target(ctx, a, true, &target)) goto done;
  int lanes = a->lanes ? a->lanes : ob_target_get_facts(target)->lanes_f32;
  for (int i = 0; i < n; i++) {
    batch[i] = a->nbatchsizes ? a->batchsizes[i / nt] : (a->batchsize ? a->batchsize : 1);
    threads[i] = a->nsched_threads ? a->sched_threads[i % nt] : (a->sched_cores ? a->sched_cores : here);
    if (threads[i] > here) {
      cli_error("--cross runs every plan here: --threads %d is more than this machine's %d cores", threads[i], here);
      goto done;
    }
    set[i] = *a;
    set[i].batchsize = batch[i];
    set[i].nbatchsizes = 0;
  }
  printf("cross      %s: IOS planned for each of %d settings with %s stage costs, then each plan run end to end at "
         "every setting (ms, default kernel configs, median of 5 repeats; noisy on a shared machine)\n",
         a->modelname ? a->modelname : "model", n, measured ? "measured" : "predicted");
  for (int i = 0; i < n; i++) {
    ob_stage_cost cost = {0};
    ob_rt *rt = NULL;
    ob_sched_flops_model fm = ob_sched_flops_model_default();
    ob_sched_predict_opts po = {.latency = ob_sched_flops_latency, .user = &fm, .barrier_s = 1e-6};
    for (int x = 0; x < OB_SCHED_KIND_COUNT; x++)
      for (int y = 0; y < OB_SCHED_KIND_COUNT; y++) po.corun[x][y] = a->corun > 0 ? a->corun : 1.1;
    ob_sched_opts so = ob_sched_opts_default();
    so.cores = threads[i];
    so.r = a->sched_r ? a->sched_r : 3;
    so.s = a->sched_s ? a->sched_s : 8;
    so.merge = !a->no_merge && !measured;
    ob_sched_stats st = {0};
    bool ok = (g[i] = cli_model_load(ctx, &set[i], true)) != NULL;
    if (!ok) goto done; /* cli_model_load said why */
    ok = ob_graph_optimize(ctx, g[i], lanes, NULL) == OB_OK && ob_sched_units_from_graph(ctx, g[i], a->max_part, &u[i]) == OB_OK;
    if (ok && measured) {
      ob_rt_opts ro = ob_rt_opts_default();
      ro.kernels = OB_RT_DEFAULT;
      ro.nthreads = threads[i];
      ro.build = a->mo.build;
      ob_timing_opts t = ob_timing_default();
      t.repeat = 3;
      t.max_cv = 0;
      t.min_repeat_ms = 0.5;
      ok = ob_rt_new(ctx, g[i], &ro, &rt) == OB_OK && ob_rt_run(rt) == OB_OK &&
           ob_stage_cost_measured(ctx, u[i], rt, &t, &cost) == OB_OK;
    } else if (ok) {
      ok = ob_stage_cost_predicted(ctx, &po, &cost) == OB_OK;
    }
    ok = ok && ob_sched_ios(ctx, u[i], &so, &cost, &s[i], &st) == OB_OK;
    ob_stage_cost_free(&cost);
    ob_rt_free(rt);
    if (!ok) {
      cli_error("--cross, batch %lld, %d threads: %s", (long long)batch[i], threads[i], ob_ctx_errmsg(ctx));
      goto done;
    }
    opt[i] = st.seconds;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      lat[i * n + j] = -1;
      if (threads[i] > threads[j]) continue;
      if (!measure_e2e(ctx, &set[j], u[i], s[i], lanes, &lat[i * n + j])) goto done;
    }
  printf("%-24s", "optimised for \\ run at");
  for (int j = 0; j < n; j++) {
    char h2[48];
    snprintf(h2, sizeof h2, "b%lld t%d", (long long)batch[j], threads[j]);
    printf(" %11s", h2);
  }
  printf(" %8s\n", "opt s");
  for (int i = 0; i < n; i++) {
    char h2[48];
    snprintf(h2, sizeof h2, "b%lld t%d (%d stages)", (long long)batch[i], threads[i], ob_schedule_stage_count(s[i]));
    printf("%-24s", h2);
    for (int j = 0; j < n; j++) {
      if (lat[i * n + j] < 0) printf(" %11s", "-");
      else printf(" %11.3f", lat[i * n + j] * 1e3);
    }
    printf(" %8.3f\n", opt[i]);
  }
  /* per setting: its own plan against the best other plan that runs there */
  for (int j = 0; j < n; j++) {
    double other = -1;
    for (int i = 0; i < n; i++)
      if (i != j && lat[i * n + j] >= 0 && (other < 0 || lat[i * n + j] < other)) other = lat[i * n + j];
    if (other > 0)
      printf("at b%lld t%d: its own plan %.3f ms, the best plan for another setting %.3f ms (%.2fx)\n", (long long)batch[j],
             threads[j], lat[j * n + j] * 1e3, other * 1e3, other / lat[j * n + j]);
  }
  printf("a plan for more cores than a setting holds cannot run there (-); a plan for fewer runs on its own cores\n");
  rc = 0;
done:
  for (int i = 0; i < n; i++) {
    ob_schedule_free(s[i]);
    ob_sched_units_free(u[i]);
    ob_graph_free(g[i]);
  }
  free(lat);
  ob_target_free(target);
  return rc;
}

/* What --cost needs from this machine before planning: the per-operator
 * records of the database at 1..cores threads (the runtime's per-step
 * profile stored where a record is missing) and the co-run factors per
 * pair of kinds (measured where <db>.corun lacks them). rts[k]: the model
 * compiled at k threads (kept: candidates are timed on rts[cores]). */
typedef struct cost_prep {
  ob_db *db;
  ob_host host;
  ob_rt *rts[OB_CLI_MAX_CORES + 1];
  ob_sched_corun_table corun;
  char corun_path[1100];
  int64_t stored;
  int pairs;
  double seconds;
} cost_prep;

static bool prep_cost(ob_ctx *ctx, const cli_args *a, ob_graph *g, const ob_sched_units *u, const ob_target *target,
                      int cores, cost_prep *cp) {
  double t0 = ob_now_s();
  const char *path = a->db_path ? a->db_path : "./opbench.db";
  bool found = false;
  if (ob_host_detect(ctx, &cp->host) != OB_OK || ob_db_open(ctx, path, 0, &cp->db) != OB_OK) {
    cli_error("--db: %s", ob_ctx_errmsg(ctx));
    return false;
  }
  snprintf(cp->corun_path, sizeof cp->corun_path, "%s.corun", path);
  if (ob_sched_corun_read(ctx, cp->corun_path, cp->host.fingerprint, &cp->corun, &found) != OB_OK) {
    cli_error("co-run factors: %s", ob_ctx_errmsg(ctx));
    return false;
  }
  for (int k = 1; k <= cores; k++) {
    ob_rt_opts ro = ob_rt_opts_default();
    ro.kernels = OB_RT_DEFAULT;
    ro.nthreads = k;
    ro.build = a->mo.build;
    int64_t n = 0;
    if (ob_rt_new(ctx, g, &ro, &cp->rts[k]) != OB_OK || ob_rt_run(cp->rts[k]) != OB_OK ||
        ob_sched_record_runtime(ctx, cp->rts[k], k, cp->db, cp->host.fingerprint, target, 5, false, &n) != OB_OK) {
      cli_error("--cost %s: %s", a->sched_cost, ob_ctx_errmsg(ctx));
      return false;
    }
    cp->stored += n;
  }
  ob_timing_opts t = ob_timing_default();
  t.repeat = 5;
  t.max_cv = 0;
  t.min_repeat_ms = 1;
  if (cores >= 2 && (ob_sched_corun_measure(ctx, u, cp->rts[cores], &t, &cp->corun, &cp->pairs) != OB_OK ||
                     (cp->pairs && ob_sched_corun_write(ctx, cp->corun_path, cp->host.fingerprint, &cp->corun) != OB_OK))) {
    cli_error("--cost %s: %s", a->sched_cost, ob_ctx_errmsg(ctx));
    return false;
  }
  cp->seconds = ob_now_s() - t0;
  return true;
}

static void prep_free(cost_prep *cp) {
  for (int k = 0; k <= OB_CLI_MAX_CORES; k++) ob_rt_free(cp->rts[k]);
  ob_db_close(cp->db);
}

/* Schedules timed in interleaved rounds (ob_sched_pick_measured), one
 * sample (a fixed number of runs, about 20 ms) per round: merge-free ones started afresh on
 * the model compiled once, others compiled as programs of their own on
 * first use. */
enum { k_pick_rounds = 5, k_max_cands = 12 };
/* how much faster than sequential a candidate must be to replace it */
static const double k_pick_margin = 0.03;

typedef struct cand_ctx {
  ob_ctx *ctx;
  const cli_args *a;
  const ob_sched_units *u;
  int lanes;
  ob_rt *rt; /* the model compiled once: merge-free schedules are started on it */
  int number; /* runs a sample: about 20 ms of them */
  ob_sched_compiled *c[k_max_cands];
  bool reported; /* compile_e2e said why it failed */
} cand_ctx;

static ob_status time_cand(void *user, int i, const ob_schedule *s, double *seconds) {
  cand_ctx *c = user;
  if (i < 0 || i >= k_max_cands) return ob_fail(c->ctx, OB_ERR_INVALID_ARG, "candidate %d of %d", i + 1, k_max_cands);
  ob_timing_opts t = ob_timing_default();
  t.repeat = 1;
  t.max_cv = 0;
  t.number = c->number; /* fixed: an adaptive count calibrates anew every sample */
  t.min_repeat_ms = -1;
  bool merges = false;
  for (int k = 0; k < ob_schedule_stage_count(s); k++) merges |= ob_schedule_stage_kind(s, k) == OB_SCHED_STAGE_MERGE;
  if (!merges) return ob_schedule_time_on(c->ctx, c->u, s, c->rt, &t, seconds); /* started afresh each sample */
  if (!c->c[i] && !compile_e2e(c->ctx, c->a, c->u, s, c->lanes, &c->c[i])) {
    c->reported = true;
    return OB_ERR_INVALID_ARG;
  }
  return ob_sched_compiled_time(c->c[i], &t, seconds);
}

/* A plan's stages timed inside whole runs on the model compiled once
 * (what the in-context model learns). */
typedef struct run_ctx {
  ob_ctx *ctx;
  const ob_sched_units *u;
  ob_rt *rt;
} run_ctx;

static ob_status run_on(void *user, const ob_schedule *s, double *stage_s) {
  run_ctx *r = user;
  return ob_schedule_profile_on(r->ctx, r->u, s, r->rt, 20, stage_s);
}

static void cand_free(cand_ctx *c) {
  for (int i = 0; i < k_max_cands; i++) {
    ob_sched_compiled_free(c->c[i]);
    c->c[i] = NULL;
  }
}

int cli_cmd_schedule(ob_ctx *ctx, const cli_args *a) {
  if (a->cross) return cross(ctx, a);
  int rc = OB_CLI_EXIT_ERROR;
  ob_graph *g = cli_model_load(ctx, a, true); /* weights only counted: planning runs nothing */
  ob_sched_units *u = NULL;
  ob_stage_cost cost = {0};
  ob_schedule *given = NULL;
  row rows[3] = {{"sequential", NULL, {0}, false, 0, -1}, {"greedy", NULL, {0}, false, 0, -1}, {"ios", NULL, {0}, true, 0, -1}};
  ob_target *target = NULL;
  ob_rt *mrt = NULL;
  int lanes = 0;
  bool measured = a->sched_cost && !strcmp(a->sched_cost, "measured");
  cJSON *j = NULL;
  ob_sched_predictor_model pm = {0};
  ob_db_host_limits *plim = NULL;
  cost_prep cp;
  memset(&cp, 0, sizeof cp);
  ob_stage_cost guide = {0}, ctxc = {0};
  ob_schedule *cands[k_max_cands] = {0}, *plans[3] = {0};
  int nplans = 0;
  const char *cand_names[k_max_cands] = {0};
  char cand_buf[7][48];
  double cand_s[k_max_cands] = {0};
  int ncand = 0, picked = -1;
  double pipeline_s = 0;
  ob_sched_db_model dm = {0};
  if (!g) return rc;
  ob_graph_pass_stats ps = {0};
  if (a->sched_cost) { /* the runtime runs it: the layout plan of this machine's vectors */
    if (!cli_target(ctx, a, true, &target)) goto done;
    lanes = a->lanes ? a->lanes : ob_target_get_facts(target)->lanes_f32;
  }
  if (!a->no_passes && ob_graph_optimize(ctx, g, lanes, &ps) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (ob_sched_units_from_graph(ctx, g, a->max_part, &u) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_host h;
  bool have_host = ob_host_detect(ctx, &h) == OB_OK;
  int here = have_host && h.ncores > 0 ? h.ncores : 1;
  int cores = a->sched_cores ? a->sched_cores : here;
  ob_sched_flops_model fm = ob_sched_flops_model_default();
  if (a->gflops > 0) fm.gflops_per_core = a->gflops;
  if (a->gbps > 0) fm.gbps_per_core = a->gbps;
  if (a->efficiency > 0) fm.efficiency = a->efficiency;
  double corun = a->corun > 0 ? a->corun : 1.1;
  char model_text[1600];
  snprintf(model_text, sizeof model_text,
           "predicted by a per-operator model, not measured: per node %g us + %g us x (k-1) + max(FLOPs / (%g GFLOP/s "
           "x k^%g), bytes / (%g GB/s x k^%g)) at k threads, co-run slowdown %g, barrier 1 us",
           fm.overhead_s * 1e6, fm.sync_s * 1e6, fm.gflops_per_core, fm.efficiency, fm.gbps_per_core, fm.efficiency, corun);
  ob_sched_predict_opts po = {.latency = ob_sched_flops_latency, .user = &fm, .barrier_s = 1e-6, .name = model_text};
  pm.fallback = fm;
  if (a->predictor) {
    if (ob_predictor_load(ctx, a->predictor, &pm.predictor) != OB_OK) {
      cli_error("--predictor: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    snprintf(model_text, sizeof model_text,
             "predicted, not measured: per-operator latencies from the predictor %s (default configs), the FLOPs "
             "model for operators it cannot describe, co-run slowdown %g, barrier 1 us",
             a->predictor, corun);
    po.latency = ob_sched_predictor_latency;
    po.user = &pm;
    /* the host's measured limits, as the predictor's training points had
     * them: from --db when it holds them (a db that cannot be read leaves
     * the inputs without limits, as before) */
    ob_db *ldb = NULL;
    if (have_host && ob_db_open(ctx, a->db_path ? a->db_path : "./opbench.db", OB_DB_READONLY, &ldb) == OB_OK &&
        ob_db_get_host_limits(ldb, h.fingerprint, &plim) == OB_OK) {
      pm.limits = plim;
      pm.host = h.fingerprint;
    }
    ob_ctx_clear_error(ctx);
    ob_db_close(ldb);
  }
  for (int x = 0; x < OB_SCHED_KIND_COUNT; x++)
    for (int y = 0; y < OB_SCHED_KIND_COUNT; y++) po.corun[x][y] = corun;
  if (a->sched_cost && cores > here) {
    cli_error("--cost %s measures on this machine: --cores %d is more than its %d", a->sched_cost, cores, here);
    goto done;
  }
  if (a->sched_cost) {
    /* the predicted cost: per-operator records at each thread
     * count and measured co-run factors (a --predictor keeps its own
     * latencies, with the measured factors) */
    if (!prep_cost(ctx, a, g, u, target, cores, &cp)) goto done;
    for (int x = 0; x < OB_SCHED_KIND_COUNT; x++)
      for (int y = 0; y < OB_SCHED_KIND_COUNT; y++) po.corun[x][y] = cp.corun.f[x][y] > 0 ? cp.corun.f[x][y] : 1;
    if (!a->predictor) {
      dm = (ob_sched_db_model){.db = cp.db, .host = cp.host.fingerprint, .target = target, .fallback = fm};
      po.latency = ob_sched_db_latency;
      po.user = &dm;
      snprintf(model_text, sizeof model_text,
               "predicted, not measured: per-operator records of %s at 1..%d threads (default configs; %lld stored "
               "now from the runtime's per-step profile), the FLOPs model for operators without one; co-run factors "
               "per pair of kinds measured on disjoint cores (%s, %d pairs measured now); barrier 1 us",
               a->db_path ? a->db_path : "./opbench.db", cores, (long long)cp.stored, cp.corun_path, cp.pairs);
    }
  }
  if (ob_stage_cost_predicted(ctx, &po, &cost) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (measured) {
    ob_rt_opts ro = ob_rt_opts_default();
    ro.kernels = OB_RT_DEFAULT;
    ro.nthreads = cores;
    ro.build = a->mo.build;
    ob_timing_opts t = ob_timing_default();
    t.repeat = 3;
    t.max_cv = 0;
    t.min_repeat_ms = 0.5;
    t.min_repeat_ms = 0.2;
    guide = cost; /* the predicted model decides which stages are worth measuring */
    memset(&cost, 0, sizeof cost);
    if (ob_rt_new(ctx, g, &ro, &mrt) != OB_OK || ob_rt_run(mrt) != OB_OK ||
        ob_stage_cost_measured(ctx, u, mrt, &t, &cost) != OB_OK) {
      cli_error("--cost measured: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    snprintf(model_text, sizeof model_text,
             "measured on this machine: each distinct stage (by structure and core split) that the predicted cost "
             "(per-operator records, measured co-run factors) finds within 5 %% of a state's best, run by the stage "
             "executor with default kernel configs, median of 3 repeats of at least 0.2 ms; no merge stages");
  }
  ob_sched_opts so = ob_sched_opts_default();
  so.cores = cores;
  so.r = a->sched_r ? a->sched_r : 3;
  so.s = a->sched_s ? a->sched_s : 8;
  so.ios_original = a->ios_original;
  so.merge = !a->no_merge && !measured;
  if (measured) {
    so.guide = &guide;
    so.guide_slack = 0.05;
  }
  run_ctx rcx = {ctx, u, cp.rts[cores]};
  for (int i = 0; i < 3; i++) {
    int64_t before = ob_stage_cost_measured_count(&cost, NULL);
    ob_stage_cost *use = measured ? &ctxc : &cost;
    ob_status st = OB_OK;
    if (measured && !ctxc.vt) st = ob_stage_cost_in_context(ctx, &cost, &ctxc);
    if (!st)
      st = i == 0   ? ob_sched_sequential(ctx, u, &so, use, &rows[i].s, &rows[i].st)
           : i == 1 ? ob_sched_greedy(ctx, u, &so, use, &rows[i].s, &rows[i].st)
           : measured
               /* stages alone corrected by whole runs: the baselines run
                * first, then IOS planned, run and planned again */
               ? ob_sched_ios_in_context(ctx, u, &so, use, 3, run_on, &rcx, plans, &nplans, &rows[i].st)
               : ob_sched_ios(ctx, u, &so, use, &rows[i].s, &rows[i].st);
    if (!st && measured && i < 2) {
      double *x = malloc(sizeof(double) * (size_t)(ob_schedule_stage_count(rows[i].s) + 1));
      st = !x ? ob_fail(ctx, OB_ERR_NOMEM, "out of memory")
              : (st = run_on(&rcx, rows[i].s, x)) ? st : ob_sched_learn_run(ctx, use, u, rows[i].s, x);
      free(x);
    }
    if (!st && measured && i == 2) rows[2].s = plans[--nplans]; /* the final plan; the earlier ones are candidates */
    if (st) {
      cli_error("%s scheduler: %s", rows[i].name, ob_ctx_errmsg(ctx));
      goto done;
    }
    rows[i].measured = ob_stage_cost_measured_count(&cost, NULL) - before;
  }

  if (a->sched_cost) {
    /* the best few, measured as programs of their own in interleaved
     * rounds, the fastest median kept: with predicted costs IOS as asked,
     * without merges, with smaller r; with measured costs the DP's
     * schedule; in both, greedy and sequential (both lie in IOS's space) */
    double t0 = ob_now_s();
    int rs[3] = {so.r, so.r > 2 ? 2 : so.r, 1};
    for (int v = 0; v < 4; v++) {
      ob_sched_opts vo = so;
      if (measured && v > 0) {
        for (int q = nplans - 1; q >= 0 && v < 4; q--, v++) { /* the earlier plans, latest first */
          snprintf(cand_buf[v], sizeof cand_buf[v], "ios plan %d", q + 1);
          cand_names[ncand] = cand_buf[v];
          cands[ncand++] = plans[q];
          plans[q] = NULL;
        }
        break;
      }
      if (v == 1 && !so.merge) continue;
      if (v == 1) vo.merge = false;
      if (v >= 2) vo.r = rs[v - 1];
      if (v >= 2 && vo.r == so.r) continue;
      ob_sched_stats vs;
      if (v == 0) {
        cands[ncand] = rows[2].s; /* planned already */
      } else if (ob_sched_ios(ctx, u, &vo, &cost, &cands[ncand], &vs) != OB_OK) {
        cli_error("ios scheduler: %s", ob_ctx_errmsg(ctx));
        goto done;
      }
      snprintf(cand_buf[v], sizeof cand_buf[v], "ios %s%d%s", measured ? "plan " : "r=", measured ? nplans + 1 : vo.r,
               vo.merge || measured ? "" : " no merge");
      cand_names[ncand++] = cand_buf[v];
    }
    if (!measured && cores > 1) {
      /* the predicted costs corrected by whole runs, as --cost measured
       * corrects its measured ones: sequential and greedy run, then IOS
       * without merges planned, run and planned again; its plans (the
       * last first) join the candidates. No stage is measured alone. The
       * baselines' predicted costs are given back after learning. */
      ob_stage_cost pic = {0};
      ob_schedule *pp[3] = {0};
      int npp = 0;
      ob_sched_opts io = so;
      io.merge = false;
      ob_status st = ob_stage_cost_in_context(ctx, &cost, &pic);
      for (int i = 0; i < 2 && !st; i++) {
        double *x = malloc(sizeof(double) * (size_t)(ob_schedule_stage_count(rows[i].s) + 1));
        st = !x ? ob_fail(ctx, OB_ERR_NOMEM, "out of memory")
                : (st = ob_schedule_cost(ctx, u, rows[i].s, &pic, NULL)) ? st
                : (st = run_on(&rcx, rows[i].s, x))                     ? st
                : (st = ob_sched_learn_run(ctx, &pic, u, rows[i].s, x)) ? st
                                                                        : ob_schedule_cost(ctx, u, rows[i].s, &cost, NULL);
        free(x);
      }
      if (!st) st = ob_sched_ios_in_context(ctx, u, &io, &pic, 3, run_on, &rcx, pp, &npp, NULL);
      ob_stage_cost_free(&pic);
      if (st) {
        cli_error("ios in context: %s", ob_ctx_errmsg(ctx));
        goto done;
      }
      for (int q = npp - 1; q >= 0; q--) {
        snprintf(cand_buf[4 + q], sizeof cand_buf[4 + q], "ios in context %d", q + 1);
        cand_names[ncand] = cand_buf[4 + q];
        cands[ncand++] = pp[q];
      }
    }
    cands[ncand] = rows[1].s;
    cand_names[ncand++] = "greedy";
    cands[ncand] = rows[0].s;
    cand_names[ncand++] = "sequential";
    cand_ctx cc = {.ctx = ctx, .a = a, .u = u, .lanes = lanes, .rt = cp.rts[cores]};
    ob_timing_opts eo = ob_timing_default();
    eo.repeat = 3;
    eo.max_cv = 0;
    ob_timing est;
    if (ob_rt_time(cc.rt, &eo, &est) != OB_OK) {
      cli_error("measuring the model: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    cc.number = (int)ceil(0.020 / (est.median_s > 1e-6 ? est.median_s : 1e-6));
    ob_sched_pick_opts pko = ob_sched_pick_opts_default();
    pko.rounds = k_pick_rounds;
    pko.nprefer = 2; /* the faster of greedy and sequential stays unless clearly beaten */
    pko.prefer[0] = ncand - 2;
    pko.prefer[1] = ncand - 1;
    pko.margin = k_pick_margin;
    ob_status pst = ob_sched_pick_measured(ctx, ncand, cands, &pko, time_cand, &cc, cand_s, &picked, NULL);
    cand_free(&cc);
    if (pst != OB_OK) {
      if (!cc.reported) cli_error("measuring the candidates: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    pipeline_s = ob_now_s() - t0;
    /* the three schedules' latencies, side by side the same way */
    ob_schedule *three[3] = {rows[0].s, rows[1].s, rows[2].s};
    double e2e[3];
    int fastest;
    pko.nprefer = 0;
    pst = ob_sched_pick_measured(ctx, 3, three, &pko, time_cand, &cc, e2e, &fastest, NULL);
    cand_free(&cc);
    if (pst != OB_OK) {
      if (!cc.reported) cli_error("measuring the schedules: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    for (int i = 0; i < 3; i++) rows[i].e2e_s = e2e[i];
  }
  double given_s = -1;
  if (a->schedule_in) {
    if (ob_schedule_read(ctx, u, a->schedule_in, cores, &given) != OB_OK ||
        ob_schedule_cost(ctx, u, given, &cost, &given_s) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      goto done;
    }
  }
  const char *pick = a->scheduler ? a->scheduler : "ios";
  const ob_schedule *chosen = !strcmp(pick, "sequential") ? rows[0].s : !strcmp(pick, "greedy") ? rows[1].s : rows[2].s;
  if (picked >= 0 && !strcmp(pick, "ios")) chosen = cands[picked]; /* the measured fastest of the best few */
  if (a->schedule_out && ob_schedule_write(ctx, u, chosen, a->schedule_out) != OB_OK) {
    cli_error("--schedule-out: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  char title[300];
  snprintf(title, sizeof title, "%s: %s schedule on %d cores, %.3f ms (%s)", ob_sched_units_model(u), pick, cores,
           ob_schedule_seconds(chosen) * 1e3, "predicted");
  if (a->timeline && ob_schedule_timeline(ctx, u, chosen, a->timeline, title) != OB_OK) {
    cli_error("--timeline: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  double seq = ob_schedule_seconds(rows[0].s);
  bool beyond = cores > here;
  if (a->json) {
    j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", ob_sched_units_model(u));
    cJSON_AddNumberToObject(j, "units", ob_sched_units_count(u));
    cJSON_AddNumberToObject(j, "blocks", ob_sched_units_blocks(u));
    cJSON_AddNumberToObject(j, "parts", ob_sched_units_parts(u));
    cJSON_AddNumberToObject(j, "cores", cores);
    cJSON_AddNumberToObject(j, "machine_cores", here);
    cJSON_AddBoolToObject(j, "prediction", !measured);
    cJSON_AddStringToObject(j, "cost", model_text);
    cJSON_AddNumberToObject(j, "r", so.r);
    cJSON_AddNumberToObject(j, "s", so.s);
    cJSON *js = cJSON_AddArrayToObject(j, "schedulers");
    for (int i = 0; i < 3; i++) {
      cJSON *o = cJSON_CreateObject();
      int sh[4];
      shape_of(rows[i].s, sh);
      cJSON_AddStringToObject(o, "scheduler", rows[i].name);
      cJSON_AddNumberToObject(o, "stages", ob_schedule_stage_count(rows[i].s));
      cJSON_AddNumberToObject(o, "stages_1_group", sh[0]);
      cJSON_AddNumberToObject(o, "stages_2_groups", sh[1]);
      cJSON_AddNumberToObject(o, "stages_3plus_groups", sh[2]);
      cJSON_AddNumberToObject(o, "merge_stages", sh[3]);
      cJSON_AddNumberToObject(o, "predicted_s", ob_schedule_seconds(rows[i].s));
      cJSON_AddNumberToObject(o, "speedup", seq / ob_schedule_seconds(rows[i].s));
      cJSON_AddNumberToObject(o, "states", (double)rows[i].st.states);
      cJSON_AddNumberToObject(o, "transitions", (double)rows[i].st.transitions);
      cJSON_AddNumberToObject(o, "stages_costed", (double)rows[i].st.stages_costed);
      cJSON_AddNumberToObject(o, "cache_hits", (double)rows[i].st.cache_hits);
      cJSON_AddNumberToObject(o, "optimisation_s", rows[i].st.seconds);
      cJSON_AddNumberToObject(o, "stages_measured", (double)rows[i].measured);
      if (rows[i].e2e_s >= 0) cJSON_AddNumberToObject(o, "measured_s", rows[i].e2e_s);
      cJSON_AddItemToArray(js, o);
    }
    if (given) cJSON_AddNumberToObject(j, "schedule_file_predicted_s", given_s);
    if (picked >= 0) {
      cJSON_AddStringToObject(j, "picked", cand_names[picked]);
      cJSON_AddNumberToObject(j, "candidates_measured", ncand);
      cJSON_AddNumberToObject(j, "optimisation_s", rows[2].st.seconds + pipeline_s);
    }
    if (measured) cJSON_AddNumberToObject(j, "endings_ruled_out", (double)rows[2].st.pruned);
    char *txt = cJSON_PrintUnformatted(j);
    printf("%s\n", txt);
    free(txt);
    rc = 0;
    goto done;
  }
  printf("model      %s: %d operators to schedule after the passes (%d graph nodes), %d blocks, %d parts (largest %d)\n",
         ob_sched_units_model(u), ob_sched_units_count(u), ob_graph_node_count(g), ob_sched_units_blocks(u),
         ob_sched_units_parts(u), rows[2].st.max_part);
  if (beyond)
    printf("cores      planning for %d cores; this machine has %d: the plan is a PREDICTION for a machine that is not "
           "here, nothing was run\n",
           cores, here);
  else
    printf("cores      %d%s (this machine has %d)\n", cores, cores == here ? "" : " of them", here);
  printf("cost       %s\n", model_text);
  printf("%-22s %6s %21s %12s %8s %8s %11s %8s %9s %9s %9s %11s %8s\n", "scheduler", "stages", "groups 1/2/3+/merge",
         measured ? "stages ms" : "predicted ms", "speedup", "states", "transitions", "costed", "hits", "measured",
         "opt s", "measured ms", "speedup");
  for (int i = 0; i < 3; i++) {
    int sh[4];
    shape_of(rows[i].s, sh);
    char name[64], groups[64], states[32] = "-", trans[32] = "-";
    if (rows[i].dp) {
      snprintf(name, sizeof name, "ios (r=%d, s=%d%s)", so.r, so.s, so.ios_original ? ", orig" : "");
      snprintf(states, sizeof states, "%lld", (long long)rows[i].st.states);
      snprintf(trans, sizeof trans, "%lld", (long long)rows[i].st.transitions);
    } else {
      snprintf(name, sizeof name, "%s", rows[i].name);
    }
    snprintf(groups, sizeof groups, "%d/%d/%d/%d", sh[0], sh[1], sh[2], sh[3]);
    double t = ob_schedule_seconds(rows[i].s);
    char e2e[32] = "-", sp[32] = "-";
    if (rows[i].e2e_s > 0) {
      snprintf(e2e, sizeof e2e, "%.3f", rows[i].e2e_s * 1e3);
      snprintf(sp, sizeof sp, "%.2fx", rows[0].e2e_s / rows[i].e2e_s);
    }
    printf("%-22s %6d %21s %12.3f %7.2fx %8s %11s %8lld %9lld %9lld %9.3f %11s %8s\n", name,
           ob_schedule_stage_count(rows[i].s), groups, t * 1e3, seq / t, states, trans,
           (long long)rows[i].st.stages_costed, (long long)rows[i].st.cache_hits, (long long)rows[i].measured,
           rows[i].st.seconds, e2e, sp);
  }
  if (given) {
    int sh[4];
    shape_of(given, sh);
    char groups[64], name[64];
    snprintf(groups, sizeof groups, "%d/%d/%d/%d", sh[0], sh[1], sh[2], sh[3]);
    snprintf(name, sizeof name, "file (%s)", ob_schedule_scheduler(given));
    printf("%-22s %6d %21s %12.3f %7.2fx %8s %11s %8s %9s %9s %9s %11s %8s\n", name, ob_schedule_stage_count(given),
           groups, given_s * 1e3, seq / given_s, "-", "-", "-", "-", "-", "-", "-", "-");
  }
  printf("ios: %.3g states bounded by %.3g (IOS's product over chains); stages costed by structure (units with the "
         "same workloads share a cost), %lld calls into the cost model\n",
         (double)rows[2].st.states, rows[2].st.state_bound, (long long)rows[2].st.cost_calls);
  if (a->sched_cost)
    printf("measured   end to end on this machine by the stage executor (default kernel configs, %d interleaved "
           "rounds of about 20 ms, medians; merge-free schedules started afresh on one compiled model, others "
           "compiled once)%s\n",
           k_pick_rounds, measured ? ""
                    : "; planning measured no stage alone: the predicted costs were corrected by stage times inside "
                      "whole runs of sequential, greedy and IOS plans (in context), then the candidates below were "
                      "measured");
  if (a->sched_cost)
    printf("prepared   %.2f s once: %lld per-operator records stored now, %d co-run pairs measured now%s\n", cp.seconds,
           (long long)cp.stored, cp.pairs, a->predictor ? "" : "");
  if (dm.db && !a->json)
    printf("records    %lld node latencies from the database's records, %lld from the FLOPs model (no record)\n",
           (long long)dm.recorded, (long long)dm.fallbacks);
  if (measured)
    printf("guided     %lld endings ruled out by the prediction (never measured); %lld distinct stages measured\n",
           (long long)rows[2].st.pruned, (long long)rows[2].measured);
  if (picked >= 0) {
    printf("candidates %d measured on this machine (%d interleaved rounds, medians):", ncand, k_pick_rounds);
    for (int c = 0; c < ncand; c++)
      printf(" %s%s %.3f ms%s", c == picked ? "[" : "", cand_names[c], cand_s[c] * 1e3, c == picked ? "]" : "");
    printf("\npicked     %s, the measured fastest (the faster of sequential and greedy stays unless beaten by "
           "more than 3 %% and in two "
           "thirds of the samples, each against its nearest in time): %.3f of sequential, %.3f of greedy, %.3f of the DP's schedule; "
           "optimisation %.3f s (%lld states, %lld distinct stages costed by %s, %d schedules measured)\n",
           cand_names[picked], cand_s[picked] / cand_s[ncand - 1], cand_s[picked] / cand_s[ncand - 2],
           cand_s[picked] / cand_s[0], rows[2].st.seconds + pipeline_s, (long long)rows[2].st.states,
           (long long)rows[2].st.stages_costed, measured ? "measurement" : "prediction", ncand);
  }
  if (a->print_stages) print_stages(u, chosen);
  if (a->schedule_out) printf("wrote %s: the %s schedule (%d stages)\n", a->schedule_out, pick, ob_schedule_stage_count(chosen));
  if (a->timeline) printf("wrote %s: timeline of the %s schedule (gnuplot)\n", a->timeline, pick);
  if (a->predictor && !a->json)
    printf("predictor  %lld node latencies from %s, %lld from the FLOPs model (kinds it has no records of)\n",
           (long long)pm.predicted, a->predictor, (long long)pm.fallbacks);
  rc = 0;
done:
  ob_predictor_free(pm.predictor);
  ob_db_host_limits_free(plim);
  cJSON_Delete(j);
  for (int i = 0; i < 3; i++) ob_schedule_free(rows[i].s);
  ob_schedule_free(given);
  ob_stage_cost_free(&ctxc);
  ob_stage_cost_free(&cost);
  ob_stage_cost_free(&guide);
  for (int q = 0; q < nplans; q++) ob_schedule_free(plans[q]);
  for (int c = 0; c < ncand; c++)
    if (cands[c] != rows[0].s && cands[c] != rows[1].s && cands[c] != rows[2].s) ob_schedule_free(cands[c]);
  prep_free(&cp);
  ob_rt_free(mrt);
  ob_sched_units_free(u);
  ob_graph_free(g);
  ob_target_free(target);
  return rc;
}
