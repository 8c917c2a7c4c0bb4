/* run.c: the model-running commands of `opbench`: `run` (one model through
 * the graph runtime with what the database holds: checked against the
 * naive reference, timed, optionally profiled per node; or, with
 * --executor vm, a list of requests whose shapes are compiled on first use)
 * and `tune --modelname` (the collector: tune every task, then compare the
 * untuned, tuned and oneDNN-kernel runs end to end). Parsing and printing
 * only: the runtime and the tuning loop do the work. Each command owns the
 * graph, target, database, runtimes and buffers it makes. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/profile.h"
#include "opbench/runtime.h"
#include "opbench/sched.h"

/* ---- a model with its inputs and reference outputs ----------------------------------- */

typedef struct cli_model {
  ob_graph *g;
  int ni, no;
  void **in, **ref;
  double ref_s;
} cli_model;

static void model_free(cli_model *m) {
  for (int i = 0; m->in && i < m->ni; i++) free(m->in[i]);
  for (int i = 0; m->ref && i < m->no; i++) free(m->ref[i]);
  free(m->in);
  free(m->ref);
  ob_graph_free(m->g);
  memset(m, 0, sizeof *m);
}

static int lanes_of(const cli_args *a, const ob_target *t) {
  return a->lanes ? a->lanes : ob_target_get_facts(t)->lanes_f32;
}

/* The graph after the passes, its inputs (random from --seed, the first
 * from --input) and the naive reference's outputs on them. */
static bool model_prepare(ob_ctx *ctx, const cli_args *a, const ob_target *t, ob_graph *g, bool optimize,
                          cli_model *m) {
  memset(m, 0, sizeof *m);
  m->g = g;
  if (optimize && !a->no_passes && ob_graph_optimize(ctx, g, lanes_of(a, t), NULL) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return false;
  }
  m->ni = ob_graph_input_count(g);
  m->no = ob_graph_output_count(g);
  m->in = calloc((size_t)m->ni + 1, sizeof(void *));
  m->ref = calloc((size_t)m->no + 1, sizeof(void *));
  if (!m->in || !m->ref) {
    cli_error("out of memory");
    return false;
  }
  uint64_t seed = a->seed_set ? a->mo.seed : 1;
  for (int i = 0; i < m->ni; i++) {
    int t_in = ob_graph_input(g, i);
    size_t bytes = (size_t)ob_graph_tensor_numel(g, t_in) * ob_dtype_size(ob_graph_tensor_dtype(g, t_in));
    if (!(m->in[i] = malloc(bytes ? bytes : 1))) {
      cli_error("out of memory");
      return false;
    }
    char err[512];
    if (i == 0 && a->input_file) {
      if (!cli_npy_read(a->input_file, g, t_in, m->in[i], err, sizeof err)) {
        cli_error("--input: %s", err);
        return false;
      }
    } else {
      ob_graph_fill_input(g, i, seed, m->in[i]);
    }
  }
  for (int i = 0; i < m->no; i++) {
    int t_out = ob_graph_output(g, i);
    size_t bytes = (size_t)ob_graph_tensor_numel(g, t_out) * ob_dtype_size(ob_graph_tensor_dtype(g, t_out));
    if (!(m->ref[i] = malloc(bytes ? bytes : 1))) {
      cli_error("out of memory");
      return false;
    }
  }
  double t0 = ob_now_s();
  if (ob_graph_run_reference(ctx, g, (const void *const *)m->in, m->ref) != OB_OK) {
    cli_error("reference execution: %s", ob_ctx_errmsg(ctx));
    return false;
  }
  m->ref_s = ob_now_s() - t0;
  return true;
}

/* --db for reading: a missing file is no database (defaults everywhere);
 * a corrupt or foreign one is an error. */
static bool db_read(ob_ctx *ctx, const char *path, ob_db **db) {
  *db = NULL;
  ob_status st = ob_db_open(ctx, path, OB_DB_READONLY, db);
  if (st == OB_ERR_NOT_FOUND) {
    ob_ctx_clear_error(ctx);
    printf("db         %s does not exist: every task runs its default config (blocks planned)\n", path);
    return true;
  }
  if (st) {
    cli_error("--db: %s", ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

/* The timing options of a whole model: the kernels' 10 s limit is for one
 * kernel; a model's repeats on a loaded machine take longer, so without
 * --timeout the limit is 10 minutes. */
static ob_timing_opts model_timing(const cli_args *a) {
  ob_timing_opts t = a->mo.timing;
  if (!a->timeout_set) t.timeout_s = 600;
  return t;
}

static void cores_text(const cli_args *a, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < a->mo.nthreads && n + 8 < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? "," : "", a->mo.cores ? a->mo.cores[i] : i);
}

static ob_rt_opts rt_opts(const cli_args *a, const ob_target *t, ob_db *db, ob_rt_kernels k) {
  ob_rt_opts o = ob_rt_opts_default();
  o.kernels = k;
  o.target = t;
  o.build = a->mo.build;
  o.nthreads = a->mo.nthreads;
  o.cores = a->mo.cores;
  o.db = db;
  o.notes = stdout;
  /* tune --modelname prefers the records its own trials make */
  if (a->model_tune)
    o.cache = ob_db_cache_of(&(ob_timing){.flush = a->mo.timing.flush, .flush_keep_first = a->mo.flush_keep_first});
  return o;
}

static void print_compiled(const ob_rt *rt) {
  ob_rt_stats s;
  ob_rt_get_stats(rt, &s);
  printf("compiled   %d steps: %d kernels, %d oneDNN, %d native, %d layout conversions (%d at layout boundaries, "
         "%d between channel blocks), %d views; %d tasks (%d tuned, %d default configs)\n",
         s.nsteps, s.nkernels, s.nonednn, s.nnative, s.nconvert, s.nboundary, s.nreblock, s.nviews, s.ntasks, s.ntuned,
         s.ndefault);
  printf("           %d weights packed at load (%.2f MB); kernels: %d built, %d from the cache; %.2f s\n", s.npacked,
         (double)s.packed_bytes / 1e6, s.nbuilt, s.ncached, s.build_s);
  if (s.nother_cache > 0)
    printf("records    %d tuned task%s had no record timed in the cache state preferred (%s): configs from "
           "records of another state\n", s.nother_cache, s.nother_cache == 1 ? "" : "s", ob_db_cache_name(s.cache));
  if (s.ntuned > 0 && s.cv_threads > 0)
    printf("layout     conversions priced at this host's measured copy rates (its limits at %d thread%s)\n",
           s.cv_threads, s.cv_threads == 1 ? "" : "s");
  else if (s.ntuned > 0)
    printf("layout     conversions priced at built-in copy rates (another host's; opbench profile --db FILE "
           "measures this one's)\n");
  printf("memory     activations: peak %.3f MB in one planned block; %.3f MB for all %d buffers one after "
         "another (%.1f %%)\n",
         (double)s.peak_bytes / 1e6, (double)s.sum_bytes / 1e6, s.nbuffers,
         s.sum_bytes ? 100.0 * (double)s.peak_bytes / (double)s.sum_bytes : 0.0);
}

/* Runs once and compares with the reference; prints the verdict. */
static bool run_check(ob_ctx *ctx, const cli_args *a, ob_rt *rt, const cli_model *m, const char *label) {
  for (int i = 0; i < m->ni; i++) {
    const ob_graph *g = m->g;
    int t = ob_graph_input(g, i);
    size_t bytes = (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
    if (ob_rt_set_input(rt, i, m->in[i], bytes) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      return false;
    }
  }
  if (ob_rt_run(rt) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return false;
  }
  ob_rt_check_result c;
  ob_rt_check(rt, (const void *const *)m->ref, a->check_tol, &c);
  printf("check%-6s max |error| %.3g of max |ref| %.3g (relative %.3g, tolerance %g) against the naive reference: %s\n",
         label, c.max_abs_err, c.max_abs_ref, c.rel_err, a->check_tol > 0 ? a->check_tol : 1e-3, c.ok ? "ok" : "FAILED");
  if (!c.ok) {
    cli_error("the runtime's output differs from the naive reference: %s", c.message);
    return false;
  }
  return true;
}

static void print_timing(const char *label, const ob_timing *t) {
  printf("latency%-4s median %.3f ms, mean %.3f ms, CV %.2f %%, %d repeats of %d call%s%s\n", label, t->median_s * 1e3,
         t->mean_s * 1e3, t->cv * 100, t->ncosts, t->number, t->number == 1 ? "" : "s",
         t->noisy ? " (noisy: CV above the threshold)" : "");
}

static void print_outputs(const ob_rt *rt) {
  const ob_graph *g = ob_rt_graph(rt);
  for (int i = 0; i < ob_graph_output_count(g); i++) {
    int t = ob_graph_output(g, i);
    char sh[256];
    cli_shape_text(g, t, sh, sizeof sh);
    ob_dtype dt = ob_graph_tensor_dtype(g, t);
    double sum = 0, mx = 0;
    int64_t n = ob_graph_tensor_numel(g, t);
    const float *p = ob_rt_output(rt, i);
    for (int64_t k = 0; k < n && dt == OB_F32; k++) {
      sum += p[k];
      mx = fabs(p[k]) > mx ? fabs(p[k]) : mx;
    }
    printf("output     %s %s %s sum %.6g max|x| %.6g\n", ob_graph_tensor_name(g, t), sh, cli_dtype_text(dt), sum, mx);
  }
}

static bool print_profile(ob_ctx *ctx, ob_rt *rt, const ob_timing *e2e) {
  int ns = ob_rt_step_count(rt);
  double *st = calloc((size_t)ns + 1, sizeof(double)), total = 0;
  if (!st) {
    cli_error("out of memory");
    return false;
  }
  if (ob_rt_profile(rt, 20, st, &total) != OB_OK) {
    free(st);
    cli_error("%s", ob_ctx_errmsg(ctx));
    return false;
  }
  /* each kernel alone now, beside its time in the run: what the graph costs
   * it (its weights and inputs cold after its neighbours) */
  double *al = calloc((size_t)ns + 1, sizeof(double));
  if (!al || ob_rt_profile_alone(rt, 9, al) != OB_OK) {
    free(st);
    free(al);
    cli_error("%s", al ? ob_ctx_errmsg(ctx) : "out of memory");
    return false;
  }
  double sum = 0, ksum = 0, kal = 0;
  for (int i = 0; i < ns; i++) {
    sum += st[i];
    if (al[i] > 0) ksum += st[i], kal += al[i];
  }
  printf("profile    per step, median of 20 runs timed step by step; alone: each kernel run 9 more times right after "
         "its own call, median (x: in the run / alone):\n");
  printf("  %4s %-8s %-16s %9s %6s %9s %6s %9s  %s\n", "#", "kind", "op", "ms", "%", "alone ms", "x", "db ms",
         "node / config");
  for (int i = 0; i < ns; i++) {
    ob_rt_step_info s;
    ob_rt_step_get(rt, i, &s);
    char db[32] = "-";
    if (!isnan(s.db_s)) snprintf(db, sizeof db, "%.4f", s.db_s * 1e3);
    char cfg[96] = "";
    if (s.kind == OB_RT_STEP_KERNEL)
      snprintf(cfg, sizeof cfg, " [%s #%llu%s]", s.tmpl, (unsigned long long)s.config_index, s.from_db ? "" : " default");
    else if (s.kind == OB_RT_STEP_ONEDNN)
      snprintf(cfg, sizeof cfg, " [%s]", s.tmpl);
    char alone[32] = "-", x[16] = "-";
    if (al[i] > 0) {
      snprintf(alone, sizeof alone, "%.4f", al[i] * 1e3);
      snprintf(x, sizeof x, "%.2f", st[i] / al[i]);
    }
    printf("  %4d %-8s %-16.16s %9.4f %6.2f %9s %6s %9s  %.60s%s\n", i, ob_rt_step_kind_name(s.kind), s.op,
           st[i] * 1e3, sum > 0 ? 100 * st[i] / sum : 0, alone, x, db, s.name, cfg);
  }
  if (kal > 0)
    printf("profile    kernel steps %.3f ms in the run, %.3f ms alone (x%.2f)\n", ksum * 1e3, kal * 1e3, ksum / kal);
  printf("profile    sum of the steps %.3f ms; measured end to end %.3f ms (median; %.1f %%); the profiled runs "
         "%.3f ms\n",
         sum * 1e3, e2e->median_s * 1e3, e2e->median_s > 0 ? 100 * sum / e2e->median_s : 0, total * 1e3);
  free(st);
  free(al);
  return true;
}

static void print_db_sum(ob_ctx *ctx, const ob_rt *rt, ob_db *db, const ob_timing *e2e) {
  int covered = 0, steps = 0;
  double sum = ob_rt_db_sum(rt, &covered, &steps);
  if (covered)
    printf("db sum     the database's latencies of the configs run by %d of %d kernel steps: %.3f ms = %.1f %% of "
           "the measured %.3f ms\n",
           covered, steps, sum * 1e3, e2e->median_s > 0 ? 100 * sum / e2e->median_s : 0, e2e->median_s * 1e3);
  if (!db) return;
  double in = 0;
  int inc = 0;
  if (ob_rt_ingraph_sum(rt, db, &in, &inc) != OB_OK) {
    printf("db in-graph  cannot read the in-graph records: %s\n", ob_ctx_errmsg(ctx));
    ob_ctx_clear_error(ctx);
    return;
  }
  int ns = ob_rt_step_count(rt);
  if (inc == ns)
    printf("db in-graph  the database's in-graph records of all %d steps of this plan (kernels, natives, "
           "conversions): %.3f ms = %.1f %% of the measured %.3f ms\n",
           ns, in * 1e3, e2e->median_s > 0 ? 100 * in / e2e->median_s : 0, e2e->median_s * 1e3);
  else
    printf("db in-graph  in-graph records of %d of %d steps of this plan (opbench run --record-steps stores "
           "them)\n", inc, ns);
}

/* Profiled runs of --record-steps. */
#define RECORD_RUNS 50

/* ---- opbench run --------------------------------------------------------------------------- */

static int run_graph(ob_ctx *ctx, const cli_args *a, const ob_target *target, ob_db *db, ob_rt_kernels k) {
  int rc = OB_CLI_EXIT_ERROR;
  cli_model m = {0};
  ob_rt *rt = NULL;
  ob_graph *g = cli_model_load(ctx, a, false);
  if (!g) return rc;
  if (!model_prepare(ctx, a, target, g, true, &m)) goto done;
  char cores[256];
  cores_text(a, cores, sizeof cores);
  printf("model      %s, batch %lld, %d input(s), %d output(s); %d thread%s on cores %s; kernels %s, target %s\n",
         ob_graph_name(g), (long long)(a->batchsize ? a->batchsize : 1), m.ni, m.no, a->mo.nthreads,
         a->mo.nthreads == 1 ? "" : "s", cores, ob_rt_kernels_name(k), ob_target_str(target));
  ob_rt_opts o = rt_opts(a, target, db, k);
  if (ob_rt_new(ctx, g, &o, &rt) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  print_compiled(rt);
  printf("reference  naive execution of the same graph on the same input: %.2f s\n", m.ref_s);
  if (!run_check(ctx, a, rt, &m, "")) goto done;
  print_outputs(rt);
  if (a->save_output) {
    const ob_graph *gg = ob_rt_graph(rt);
    int t = ob_graph_output(gg, 0);
    if (!cli_npy_write(a->save_output, ob_graph_tensor_dtype(gg, t), ob_graph_tensor_ndim(gg, t),
                       ob_graph_tensor_dims(gg, t), ob_rt_output(rt, 0), ob_rt_output_bytes(rt, 0))) {
      cli_error("--save-output: cannot write '%s': %s", a->save_output, strerror(errno));
      goto done;
    }
    printf("saved      %s (output '%s')\n", a->save_output, ob_graph_tensor_name(gg, t));
  }
  ob_timing tm;
  ob_timing_opts mt = model_timing(a);
  /* --record-steps: the profiled runs between the timed repeats, so that
   * the records and the latency they are compared with meet the same
   * moments of the host */
  int per = RECORD_RUNS / ob_timing_normalize(&mt, -1).repeat, runs = 0;
  if (per < 1) per = 1;
  double *steps = a->record_steps ? calloc((size_t)ob_rt_step_count(rt) + 1, sizeof(double)) : NULL, tot = 0;
  if (a->record_steps && !steps) {
    cli_error("out of memory");
    goto done;
  }
  if ((a->record_steps ? ob_rt_time_profiled(rt, &mt, per, &tm, steps, &tot, &runs) : ob_rt_time(rt, &mt, &tm)) != OB_OK) {
    cli_error("%s%s", a->record_steps ? "--record-steps: " : "", ob_ctx_errmsg(ctx));
    free(steps);
    goto done;
  }
  print_timing("", &tm);
  if (a->record_steps) {
    double sum = 0;
    ob_status st = ob_rt_store_steps(rt, db, steps, runs, &sum);
    free(steps);
    if (st != OB_OK) {
      cli_error("--record-steps: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    printf("recorded   in-graph latencies of %d steps in %s (%d profiled runs, %d after each timed repeat, the "
           "middle half): sum %.3f ms; the profiled runs %.3f ms\n",
           ob_rt_step_count(rt), ob_db_path(db), runs, per, sum * 1e3, tot * 1e3);
  }
  print_db_sum(ctx, rt, db, &tm);
  if (a->profile && !print_profile(ctx, rt, &tm)) goto done;
  rc = 0;
done:
  ob_rt_free(rt);
  model_free(&m);
  return rc;
}

/* --schedule FILE: the schedule's stages against the sequential run of the
 * same compiled steps on the schedule's cores. */
static int run_schedule(ob_ctx *ctx, const cli_args *a, const ob_target *target, ob_db *db, ob_rt_kernels k) {
  int rc = OB_CLI_EXIT_ERROR;
  cli_model m = {0};
  ob_rt *rt = NULL;
  ob_rt_par *par = NULL;
  ob_sched_units *u = NULL;
  ob_schedule *s = NULL;
  float **seq = NULL;
  ob_graph *g = cli_model_load(ctx, a, false);
  if (!g) return rc;
  if (!model_prepare(ctx, a, target, g, true, &m)) goto done;
  long here = sysconf(_SC_NPROCESSORS_ONLN);
  if (ob_sched_units_from_graph(ctx, g, 0, &u) != OB_OK ||
      ob_schedule_read(ctx, u, a->schedule_in, here > 0 ? (int)here : 1, &s) != OB_OK) {
    cli_error("--schedule: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int ncores = ob_schedule_cores(s), nst = ob_schedule_stage_count(s), merges = 0, groups = 0;
  for (int i = 0; i < nst; i++) {
    merges += ob_schedule_stage_kind(s, i) == OB_SCHED_STAGE_MERGE;
    groups += ob_schedule_group_count(s, i);
  }
  printf("model      %s, batch %lld, %d input(s), %d output(s); kernels %s, target %s\n", ob_graph_name(g),
         (long long)(a->batchsize ? a->batchsize : 1), m.ni, m.no, ob_rt_kernels_name(k), ob_target_str(target));
  printf("schedule   %s: %d stages (%d merges), %d groups, %d units on %d cores (scheduler %s)\n", a->schedule_in, nst,
         merges, groups, ob_sched_units_count(u), ncores, ob_schedule_scheduler(s));
  ob_rt_opts o = rt_opts(a, target, db, k);
  o.nthreads = ncores; /* the sequential run holds every core the schedule does */
  o.cores = NULL;
  if (ob_schedule_compile(ctx, u, s, g, lanes_of(a, target), &o, &rt, &par) != OB_OK) {
    cli_error("--schedule %s: %s", a->schedule_in, ob_ctx_errmsg(ctx));
    goto done;
  }
  print_compiled(rt);
  printf("stages     %d, each group led by a thread pinned to its first core with a pool on its cores%s\n", nst,
         ob_rt_par_stage_count(par) > nst ? "; one more first for conversions of the inputs" : "");
  if (!run_check(ctx, a, rt, &m, "")) goto done; /* sequential, on the merged graph */
  if (!(seq = calloc((size_t)m.no + 1, sizeof *seq))) goto oom;
  for (int i = 0; i < m.no; i++) {
    size_t bytes = ob_rt_output_bytes(rt, i);
    if (!(seq[i] = malloc(bytes ? bytes : 1))) goto oom;
    memcpy(seq[i], ob_rt_output(rt, i), bytes);
    memset((void *)ob_rt_output(rt, i), 0, bytes); /* the stages must write it again */
  }
  if (ob_rt_par_run(par) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_rt_check_result c;
  ob_rt_check(rt, (const void *const *)seq, 1e-5, &c);
  printf("check      by stages against the sequential run: max |difference| %.3g (relative %.3g): %s\n",
         c.max_abs_err, c.rel_err, c.ok ? "ok" : "FAILED");
  if (!c.ok) {
    cli_error("the output by stages differs from the sequential run: %s", c.message);
    goto done;
  }
  ob_rt_check(rt, (const void *const *)m.ref, a->check_tol, &c);
  if (!c.ok) {
    cli_error("the output by stages differs from the naive reference: %s", c.message);
    goto done;
  }
  print_outputs(rt);
  ob_timing ts, tp;
  if (ob_rt_time(rt, &a->mo.timing, &ts) != OB_OK || ob_rt_par_time(par, &a->mo.timing, &tp) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  print_timing("", &ts);
  printf("           (sequential: every step on all %d cores)\n", ncores);
  print_timing("", &tp);
  printf("           (by the schedule's stages)\n");
  printf("speedup    %.3fx over the sequential run (medians, measured in this run)\n",
         tp.median_s > 0 ? ts.median_s / tp.median_s : 0);
  if (a->profile) {
    int n = ob_rt_par_stage_count(par);
    double *st = calloc((size_t)n + 1, sizeof *st);
    if (!st) goto oom;
    if (ob_rt_par_profile(par, 20, st) != OB_OK) {
      free(st);
      cli_error("%s", ob_ctx_errmsg(ctx));
      goto done;
    }
    printf("profile    per stage, median of 20 runs (stage and its barrier):\n");
    for (int i = 0; i < n; i++) {
      const int *steps;
      int nsteps = 0;
      for (int j = 0; j < (i < n - nst ? 1 : ob_schedule_group_count(s, i - (n - nst))); j++)
        nsteps += ob_rt_par_group_steps(par, i, j, &steps);
      printf("  %4d %9.4f ms  %d steps\n", i + 1, st[i] * 1e3, nsteps);
    }
    free(st);
  }
  rc = 0;
  goto done;
oom:
  cli_error("out of memory");
done:
  for (int i = 0; seq && i < m.no; i++) free(seq[i]);
  free(seq);
  ob_rt_par_free(par);
  ob_rt_free(rt);
  ob_schedule_free(s);
  ob_sched_units_free(u);
  model_free(&m);
  return rc;
}

/* --executor vm: requests of the shapes listed, each compiled on first use. */
static int run_vm(ob_ctx *ctx, const cli_args *a, const ob_target *target, ob_db *db, ob_rt_kernels k) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_model_opts mo = ob_model_opts_default();
  mo.source = a->modelsource ? a->modelsource : "local";
  mo.name = a->modelname;
  mo.path = a->modelpath;
  mo.input_size = a->input_size;
  mo.hidden = a->hidden;
  mo.seed = a->seed_set ? a->mo.seed : 1;
  mo.sha256 = a->sha256;
  mo.max_bytes = a->max_download;
  ob_rt_opts o = rt_opts(a, target, db, k);
  ob_rt_vm *vm = NULL;
  if (ob_rt_vm_new(ctx, &mo, &o, lanes_of(a, target), &vm) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return rc;
  }
  int nb = a->nbatchsizes ? a->nbatchsizes : 1, nsq = a->nseqlens ? a->nseqlens : 1;
  printf("vm         %s: %d request(s); a shape is compiled on its first request and kept\n",
         a->modelname ? a->modelname : mo.source, nb * nsq);
  printf("  %3s %6s %6s %9s %12s %12s %8s  %s\n", "#", "batch", "seqlen", "compiled", "first ms", "steady ms", "CV %",
         "check");
  int req = 0;
  for (int bi = 0; bi < nb; bi++)
    for (int si = 0; si < nsq; si++) {
      int64_t batch = a->nbatchsizes ? a->batchsizes[bi] : 1, seqlen = a->nseqlens ? a->seqlens[si] : 0;
      double t0 = ob_now_s();
      ob_rt *rt = NULL;
      bool compiled = false;
      if (ob_rt_vm_get(vm, batch, seqlen, &rt, &compiled) != OB_OK) {
        cli_error("%s", ob_ctx_errmsg(ctx));
        goto done;
      }
      const ob_graph *g = ob_rt_graph(rt);
      uint64_t seed = (a->seed_set ? a->mo.seed : 1) + (uint64_t)req;
      void *ins[16] = {0};
      int ni = ob_graph_input_count(g);
      bool ok = ni <= 16;
      for (int i = 0; i < ni && ok; i++) {
        int t = ob_graph_input(g, i);
        size_t bytes = (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
        ins[i] = malloc(bytes ? bytes : 1);
        ok = ins[i] != NULL;
        if (ok) {
          ob_graph_fill_input(g, i, seed, ins[i]);
          ok = ob_rt_set_input(rt, i, ins[i], bytes) == OB_OK;
        }
      }
      ok = ok && ob_rt_run(rt) == OB_OK;
      double first = ob_now_s() - t0;
      /* the answer is checked before its time counts */
      ob_rt_check_result c = {.ok = false};
      int no = ob_graph_output_count(g);
      void *ref[16] = {0};
      for (int i = 0; i < no && i < 16 && ok; i++) {
        int t = ob_graph_output(g, i);
        size_t bytes = (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
        ok = (ref[i] = malloc(bytes ? bytes : 1)) != NULL;
      }
      ok = ok && no <= 16 && ob_graph_run_reference(ctx, g, (const void *const *)ins, ref) == OB_OK;
      if (ok) ob_rt_check(rt, (const void *const *)ref, a->check_tol, &c);
      ob_timing tm = {0};
      ob_timing_opts mt = model_timing(a);
      if (ok && c.ok) ok = ob_rt_time(rt, &mt, &tm) == OB_OK;
      for (int i = 0; i < 16; i++) {
        free(ins[i]);
        free(ref[i]);
      }
      if (!ok) {
        cli_error("request %d (batch %lld): %s", req + 1, (long long)batch, ob_ctx_errmsg(ctx));
        goto done;
      }
      if (!c.ok) {
        cli_error("request %d (batch %lld): the output differs from the naive reference: %s", req + 1, (long long)batch,
                  c.message);
        goto done;
      }
      char sq[16] = "-";
      if (seqlen) snprintf(sq, sizeof sq, "%lld", (long long)seqlen);
      printf("  %3d %6lld %6s %9s %12.3f %12.3f %8.2f  ok (%.2g)\n", req + 1, (long long)batch, sq,
             compiled ? "yes" : "cached", first * 1e3, tm.median_s * 1e3, tm.cv * 100, c.rel_err);
      req++;
    }
  printf("vm         %d shape(s) compiled for %d request(s); first-call latency includes compiling and loading\n",
         ob_rt_vm_count(vm), req);
  rc = 0;
done:
  ob_rt_vm_free(vm);
  return rc;
}

static ob_rt_kernels kernels_of(const char *k) {
  return !k || !strcmp(k, "tuned") ? OB_RT_TUNED : !strcmp(k, "default") ? OB_RT_DEFAULT : OB_RT_ONEDNN;
}

int cli_cmd_run(ob_ctx *ctx, const cli_args *a) {
  ob_target *target = NULL;
  ob_db *db = NULL;
  int rc = OB_CLI_EXIT_ERROR;
  if (!cli_target(ctx, a, true, &target)) return rc;
  const char *path = a->db_path ? a->db_path : "./opbench.db";
  ob_rt_kernels k = kernels_of(a->kernels);
  if (a->schedule_in && k == OB_RT_ONEDNN) {
    cli_error("--schedule runs generated kernels (--kernels tuned or default), not oneDNN primitives");
    goto done;
  }
  if (a->record_steps && (a->schedule_in || (a->executor && !strcmp(a->executor, "vm")))) {
    cli_error("--record-steps records the steps of the graph executor's plan, not with --schedule or --executor vm");
    goto done;
  }
  if (a->record_steps) {
    ob_status st = ob_db_open(ctx, path, 0, &db);
    if (!st) st = ob_db_check(db);
    if (st) {
      cli_error("--db: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
  } else if (k != OB_RT_DEFAULT && !db_read(ctx, path, &db)) {
    goto done;
  }
  if (a->schedule_in) rc = run_schedule(ctx, a, target, db, k);
  else if (a->executor && !strcmp(a->executor, "vm")) rc = run_vm(ctx, a, target, db, k);
  else rc = run_graph(ctx, a, target, db, k);
done:
  ob_db_close(db);
  ob_target_free(target);
  return rc;
}

/* ---- opbench tune --modelname: the collector ------------------------------------------------------ */

/* Per task (workload) of the comparison: the profiled seconds of its steps
 * under each kernel source, summed over its occurrences. */
typedef struct task_row {
  char *key;
  int count;
  double s[3];
} task_row;

typedef struct task_table {
  task_row *r;
  int n, cap;
} task_table;

static void task_table_free(task_table *t) {
  for (int i = 0; i < t->n; i++) free(t->r[i].key);
  free(t->r);
  memset(t, 0, sizeof *t);
}

/* Profiles rt (5 runs) and adds its kernel and oneDNN steps to column col. */
static bool task_table_add(ob_ctx *ctx, task_table *t, ob_rt *rt, int col) {
  int ns = ob_rt_step_count(rt);
  double *st = calloc((size_t)ns + 1, sizeof(double));
  if (!st) {
    cli_error("out of memory");
    return false;
  }
  if (ob_rt_profile(rt, 5, st, NULL) != OB_OK) {
    free(st);
    cli_error("%s", ob_ctx_errmsg(ctx));
    return false;
  }
  for (int i = 0; i < ns; i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    if (!si.workload || !si.workload[0]) continue;
    int k = 0;
    while (k < t->n && strcmp(t->r[k].key, si.workload)) k++;
    if (k == t->n) {
      if (t->n == t->cap) {
        int nc = t->cap ? 2 * t->cap : 32;
        task_row *nr = realloc(t->r, sizeof *nr * (size_t)nc);
        if (!nr) {
          free(st);
          cli_error("out of memory");
          return false;
        }
        t->r = nr;
        t->cap = nc;
      }
      t->r[k] = (task_row){.key = strdup(si.workload)};
      if (!t->r[k].key) {
        free(st);
        cli_error("out of memory");
        return false;
      }
      t->n++;
    }
    if (col == 0) t->r[k].count++;
    t->r[k].s[col] += st[i];
  }
  free(st);
  return true;
}

static void task_table_print(const task_table *t, const char *const *label) {
  printf("per task   profiled time of each task's steps (median of 5 runs, summed over its occurrences):\n");
  printf("  %3s %5s %10s %10s %10s %8s %8s  %s\n", "#", "count", label[0], label[1], label[2], "tuned/", "onednn/",
         "workload");
  printf("  %3s %5s %10s %10s %10s %8s %8s\n", "", "", "ms", "ms", "ms", "untuned", "tuned");
  for (int i = 0; i < t->n; i++) {
    const task_row *r = &t->r[i];
    char sp1[16] = "-", sp2[16] = "-";
    if (r->s[1] > 0 && r->s[0] > 0) snprintf(sp1, sizeof sp1, "%.2fx", r->s[0] / r->s[1]);
    if (r->s[1] > 0 && r->s[2] > 0) snprintf(sp2, sizeof sp2, "%.2fx", r->s[2] / r->s[1]);
    printf("  %3d %5d %10.4f %10.4f %10.4f %8s %8s  %s\n", i + 1, r->count, r->s[0] * 1e3, r->s[1] * 1e3, r->s[2] * 1e3,
           sp1, sp2, r->key);
  }
  printf("           (speedups: untuned time / tuned time and oneDNN time / tuned time, as the summary's; a task\n"
         "           with 0 under onednn ran inside a oneDNN step of another workload key, or none)\n");
}

/* One tuning job of the collector: task `task` of the model under one
 * template. */
typedef struct tune_job {
  int task;
  ob_task *t;
} tune_job;

static void tune_jobs_free(tune_job *j, int n) {
  for (int i = 0; i < n; i++) ob_task_free(j[i].t);
  free(j);
}

/* The jobs of tasks[0..keep): each task under its default template, then
 * under every other template of its operator for the target that accepts
 * the workload and lays its data input out as the default does (blocked
 * for convolutions: conv2d_winograd.x86 beside conv2d_NCHWc.x86; a
 * template whose activations are plain or only its pack hooks know would
 * cost conversions on every run, and the runtime would rarely pick it). */
static bool tune_jobs(ob_ctx *ctx, const ob_graph_task *tasks, int keep, const ob_target *target, tune_job **out,
                      int *nout) {
  *out = NULL;
  *nout = 0;
  int cap = keep * 8 + 1, n = 0;
  tune_job *j = calloc((size_t)cap, sizeof *j);
  if (!j) {
    cli_error("out of memory");
    return false;
  }
  /* every default first: a run cut short (a time limit, ^C) has tuned
   * every task once before the slower alternatives (Winograd's kernels
   * take seconds to build) */
  for (int i = 0; i < keep; i++) {
    if (ob_task_new(ctx, &tasks[i].wl, NULL, target, &j[n].t) != OB_OK) {
      cli_error("task %d (%s): %s", i + 1, tasks[i].key, ob_ctx_errmsg(ctx));
      tune_jobs_free(j, n);
      return false;
    }
    j[n++].task = i;
  }
  for (int i = 0; i < keep; i++) {
    const char *names[8];
    int nt = ob_op_templates_for(tasks[i].wl.op, target, names, 8);
    if (nt > 8) nt = 8;
    const ob_task *d = j[i].t;
    ob_config c0 = ob_task_default_config(d);
    for (int k = 1; k < nt && n < cap; k++) {
      if (!strcmp(names[k], ob_task_template(d))) continue;
      ob_task *t = NULL;
      if (ob_task_new(ctx, &tasks[i].wl, names[k], target, &t) != OB_OK) {
        ob_ctx_clear_error(ctx); /* the template does not take this workload */
        continue;
      }
      /* the data input laid out as the default template lays it (a plain
       * convolution between blocked ones converts twice per run) */
      ob_config c = ob_task_default_config(t);
      if (ob_task_arg_layout(t, &c, 0).kind != ob_task_arg_layout(d, &c0, 0).kind) {
        ob_task_free(t);
        continue;
      }
      j[n++] = (tune_job){i, t};
    }
  }
  *out = j;
  *nout = n;
  return true;
}

/* Rounds of the comparison: each round times every variant once with the
 * model's protocol, round r starting at variant r, so that each variant
 * takes each place once (a Latin square over 3 rounds and 3 variants).
 * In the same order every round (untuned, tuned, oneDNN), the untuned run
 * always followed the oneDNN primitives' run (whose worker threads spin a
 * while after their last job) and the first place of each round; a fixed
 * place is a bias the comparison need not carry. Each timing starts with
 * a discarded warm-up run as before. */
#define CMP_ROUNDS 3
/* --record-steps: profiled runs of the tuned plan after each of its timed
 * repeats (5 repeats a round by default: 60 runs in all) */
#define RECORD_RUNS_PER_REPEAT 4

/* Times rts[0..n) in CMP_ROUNDS interleaved rounds; tm[i] gets variant i's
 * statistics over the repeats of all its rounds (its costs list: the first
 * OB_TIMING_MAX_COSTS of them), rmed[i][r] each round's median. With rec
 * (one of rts), rec's timing profiles its steps between its repeats:
 * rec_steps[i] gets step i's median over the rounds of its trimmed mean,
 * *rec_tot the same of the whole profiled runs, *rec_runs their count. */
static bool time_interleaved(ob_ctx *ctx, ob_rt **rts, int n, const ob_timing_opts *o, ob_timing *tm,
                             double rmed[][CMP_ROUNDS], ob_rt *rec, double *rec_steps, double *rec_tot,
                             int *rec_runs) {
  double *all = malloc(sizeof(double) * (size_t)n * CMP_ROUNDS * OB_TIMING_MAX_COSTS);
  int *nall = calloc((size_t)n, sizeof(int));
  if (!all || !nall) {
    free(all);
    free(nall);
    cli_error("out of memory");
    return false;
  }
  bool ok = true;
  int ns = rec ? ob_rt_step_count(rec) : 0;
  double *rr = rec ? malloc(sizeof(double) * (size_t)CMP_ROUNDS * (size_t)(ns + 1)) : NULL; /* [round][step] */
  double rtot[CMP_ROUNDS] = {0};
  if (rec && !rr) {
    cli_error("out of memory");
    ok = false;
  }
  for (int r = 0; r < CMP_ROUNDS && ok; r++)
    for (int j = 0; j < n && ok; j++) {
      int i = (j + r) % n;
      ob_timing t;
      /* the tuned plan's step records in the pauses between its timed
       * repeats: a slow window of the host lands in both alike */
      bool prof = rec && rts[i] == rec;
      int runs = 0;
      ob_status st = prof ? ob_rt_time_profiled(rec, o, RECORD_RUNS_PER_REPEAT, &t, rr + (size_t)r * (size_t)(ns + 1),
                                                &rtot[r], &runs)
                          : ob_rt_time(rts[i], o, &t);
      if (st != OB_OK) {
        cli_error("%s%s", prof ? "--record-steps: " : "", ob_ctx_errmsg(ctx));
        ok = false;
        break;
      }
      *rec_runs += runs;
      double *dst = all + (size_t)i * CMP_ROUNDS * OB_TIMING_MAX_COSTS;
      memcpy(dst + nall[i], t.costs, sizeof(double) * (size_t)t.ncosts);
      nall[i] += t.ncosts;
      rmed[i][r] = t.median_s;
      if (r == 0) {
        tm[i] = t;
        tm[i].repeat = tm[i].extra_repeats = tm[i].retaken = 0;
      }
      tm[i].repeat += t.repeat;
      tm[i].extra_repeats += t.extra_repeats;
      tm[i].retaken += t.retaken;
      tm[i].noisy |= t.noisy;
    }
  /* each step's record: its median over the rounds, as the end-to-end
   * figure is the median over the rounds' runs; a mean let one round in a
   * slow window of the host pull every step up (mobilenet-v2 at 1 thread:
   * steps 10.05 ms against 9.15 end to end) */
  for (int k = 0; ok && rec && k <= ns; k++) {
    double v[CMP_ROUNDS];
    for (int r = 0; r < CMP_ROUNDS; r++) v[r] = k < ns ? rr[(size_t)r * (size_t)(ns + 1) + (size_t)k] : rtot[r];
    ob_stats(v, CMP_ROUNDS, k < ns ? &rec_steps[k] : rec_tot, NULL, NULL);
  }
  free(rr);
  for (int i = 0; i < n && ok; i++) {
    const double *src = all + (size_t)i * CMP_ROUNDS * OB_TIMING_MAX_COSTS;
    tm[i].ncosts = nall[i] < OB_TIMING_MAX_COSTS ? nall[i] : OB_TIMING_MAX_COSTS;
    memcpy(tm[i].costs, src, sizeof(double) * (size_t)tm[i].ncosts);
    bool noisy = tm[i].noisy;
    ob_stats(src, nall[i], &tm[i].median_s, &tm[i].mean_s, &tm[i].cv);
    tm[i].noisy = noisy;
  }
  free(all);
  free(nall);
  return ok;
}

/* The tuned plan prices its layout conversions at this host's rates: where
 * the database has none for the host, they are measured (0.09-0.12 s at 1
 * and 2 threads on a Zen 3 VM) and stored with its limits, as opbench
 * profile does. */
static bool conversion_rates(ob_ctx *ctx, ob_db *db) {
  ob_host host;
  ob_limits l;
  bool measured = false;
  if (ob_host_detect(ctx, &host) != OB_OK || ob_limits_load(db, &host, &l) != OB_OK ||
      ob_limits_ensure_conversions(ctx, db, &host, &l, &measured) != OB_OK) {
    cli_error("host limits: %s", ob_ctx_errmsg(ctx));
    return false;
  }
  if (measured)
    printf("limits     the runtime's conversion rates measured and stored with the host (the layout plan's prices)\n");
  return true;
}

int cli_cmd_tune_model(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_target *target = NULL;
  ob_db *db = NULL;
  ob_runner *runner = NULL;
  ob_measurer *measurer = NULL; /* over runner: the tuning loop measures through a measurer */
  ob_graph_task *tasks = NULL;
  cli_model m = {0};
  ob_rt *rts[OB_RT_KERNELS_COUNT] = {0};
  double *rec_steps = NULL; /* --record-steps: the tuned plan's step latencies */
  task_table tt = {0};
  if (!cli_target(ctx, a, true, &target)) return rc;
  ob_graph *g = cli_model_load(ctx, a, false);
  if (!g) goto done;
  m.g = g;
  if (!a->no_passes && ob_graph_optimize(ctx, g, lanes_of(a, target), NULL) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int nt = 0;
  if (ob_graph_tasks(ctx, g, &tasks, &nt) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int keep = a->key_ops > 0 ? ob_graph_key_tasks(tasks, nt, a->key_ops) : nt;
  char cores[256];
  cores_text(a, cores, sizeof cores);
  printf("model      %s, batch %lld; target %s; %d thread%s on cores %s; db %s\n", ob_graph_name(g),
         (long long)(a->batchsize ? a->batchsize : 1), ob_target_str(target), a->mo.nthreads,
         a->mo.nthreads == 1 ? "" : "s", cores, a->db_path);
  printf("tasks      %d distinct workloads; %d to tune%s (tuner %s, %d trials each; %s)\n", nt, keep,
         keep < nt ? " (--key-ops)" : "", a->tuner, a->trials,
         a->mo.flush_keep_first ? "weights flushed before every call, the activation warm (--warm: all warm)"
         : a->mo.timing.flush   ? "every input flushed before every call (--flush)"
                                : "warm caches (--warm)");
  for (int i = 0; i < keep; i++)
    printf("  %3d %6d x %-s\n", i + 1, tasks[i].count, tasks[i].key);
  fflush(stdout);
  ob_status st = ob_db_open(ctx, a->db_path, 0, &db);
  if (!st) st = ob_db_check(db);
  if (st) {
    cli_error("--db: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (a->iftune) {
    ob_host host;
    if (ob_host_detect(ctx, &host) != OB_OK || ob_runner_new(ctx, &runner) != OB_OK ||
        ob_measurer_local_new(ctx, runner, &measurer) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      goto done;
    }
    /* each task under every template whose activations the runtime keeps
     * in their layout between nodes (the default, and Winograd for 3x3
     * stride-1 convolutions): the runtime then takes the faster record */
    tune_job *jobs = NULL;
    int njobs = 0;
    if (!tune_jobs(ctx, tasks, keep, target, &jobs, &njobs)) goto done;
    double t0 = ob_now_s();
    for (int j = 0; j < njobs; j++) {
      int i = jobs[j].task;
      ob_task *task = jobs[j].t;
      jobs[j].t = NULL;
      ob_tuner *tuner = NULL;
      ob_tuner_opts to = {.seed = a->mo.seed, .db_path = a->no_transfer ? NULL : a->db_path};
      if (ob_tuner_new(ctx, a->tuner, task, &to, &tuner) != OB_OK) {
        ob_task_free(task);
        tune_jobs_free(jobs, njobs);
        cli_error("--tuner: %s", ob_ctx_errmsg(ctx));
        goto done;
      }
      ob_tune_opts o = ob_tune_opts_default();
      o.n_trial = a->trials;
      o.early_stopping = a->early_stopping;
      o.batch = a->batch;
      o.measure = a->mo;
      o.host = &host;
      o.progress = stdout;
      o.task_index = j + 1;
      o.ntasks = njobs;
      o.remeasure = a->remeasure;
      o.reconfirm = a->reconfirm;
      o.confirm_rounds = a->reconfirm ? 3 : 1;
      o.log_path = a->log_path;
      ob_tune_stats s;
      st = ob_tune_task(ctx, task, tuner, measurer, db, &o, &s);
      ob_tuner_free(tuner);
      const char *tmpl = ob_task_template(task);
      if (st) {
        fflush(stdout);
        cli_error("task %d (%s, %s): %s (trials stored before the failure are kept in %s)", i + 1, tasks[i].key,
                  tmpl, ob_ctx_errmsg(ctx), a->db_path);
        ob_task_free(task);
        tune_jobs_free(jobs, njobs);
        goto done;
      }
      if (!s.best_trial)
        printf("           task %d (%s): no config ran correctly in %d trials; the runtime will use another "
               "template's record or its default\n", i + 1, tmpl, s.trials);
      ob_task_free(task);
    }
    tune_jobs_free(jobs, njobs);
    printf("tuned      %d tasks (%d task-template pairs) in %.1f s\n", keep, njobs, ob_now_s() - t0);
    fflush(stdout);
  }
  if (!a->ifcompare) {
    rc = 0;
    goto done;
  }
  if (!conversion_rates(ctx, db)) goto done;
  /* the same graph and inputs through three kernel sources */
  ob_graph *g2 = m.g;
  m.g = NULL;
  if (!model_prepare(ctx, a, target, g2, false, &m)) goto done;
  printf("reference  naive execution of the same graph on the same input: %.2f s\n", m.ref_s);
  static const ob_rt_kernels order[3] = {OB_RT_DEFAULT, OB_RT_TUNED, OB_RT_ONEDNN};
  static const char *const label[3] = {"untuned", "tuned", "onednn"};
  ob_timing tm[3];
  ob_timing_opts mt = model_timing(a);
  /* all three compiled and checked first, then timed in interleaved
   * rounds: a slow window of the host (tens of ms to a second) lands in one
   * round of every variant instead of in the whole measurement of one */
  /* oneDNN's first: it checks that its cores are in the calling thread's
   * mask, which the other two runtimes' pools narrow to their first core
   * while they live */
  static const int make[3] = {2, 0, 1};
  for (int mi = 0; mi < 3; mi++) {
    int i = make[mi];
    ob_rt_opts o = rt_opts(a, target, db, order[i]);
    printf("-- %s: %s\n", label[i],
           i == 0 ? "every task at its template's default config"
           : i == 1 ? "every task at the database's best config for this host, target and threads"
                    : "oneDNN primitives for the conv/dense/matmul/pool nodes, the rest as tuned");
    if (ob_rt_new(ctx, m.g, &o, &rts[i]) != OB_OK) {
      cli_error("%s run: %s", label[i], ob_ctx_errmsg(ctx));
      goto done;
    }
    print_compiled(rts[i]);
    if (!run_check(ctx, a, rts[i], &m, "")) goto done;
    if (i == 1 && a->save_output) {
      int t = ob_graph_output(m.g, 0);
      if (!cli_npy_write(a->save_output, ob_graph_tensor_dtype(m.g, t), ob_graph_tensor_ndim(m.g, t),
                         ob_graph_tensor_dims(m.g, t), ob_rt_output(rts[i], 0), ob_rt_output_bytes(rts[i], 0))) {
        cli_error("--save-output: cannot write '%s': %s", a->save_output, strerror(errno));
        goto done;
      }
      printf("saved      %s (the tuned run's output '%s')\n", a->save_output, ob_graph_tensor_name(m.g, t));
    }
    fflush(stdout);
  }
  double rmed[3][CMP_ROUNDS];
  /* --record-steps: the tuned plan's in-graph step records, taken here,
   * between the timed repeats of each round (each step's median over the
   * rounds of its trimmed mean): in another process the same plan ran 13.4 or 16.9 ms
   * end to end (resnet-18 at 2 threads, quiet, 05:33 and 05:58), and in
   * this one a record taken after all rounds met a slow window of the host
   * the rounds had not (resnet-18 at 1 thread: steps 28.2 ms against 22.3
   * end to end, quiet, 06:19), and runs profiled after each round's timing
   * still met windows its repeats had not (squeezenet-1.1 at 1 thread: 9.88
   * against 8.29 ms) */
  double rec_sum = 0, rec_tot = 0;
  int rec_runs = 0;
  rec_steps = a->record_steps ? calloc((size_t)ob_rt_step_count(rts[1]) + 1, sizeof(double)) : NULL;
  if (a->record_steps && !rec_steps) {
    cli_error("out of memory");
    goto done;
  }
  if (!time_interleaved(ctx, rts, 3, &mt, tm, rmed, a->record_steps ? rts[1] : NULL, rec_steps, &rec_tot,
                        &rec_runs))
    goto done;
  if (a->record_steps &&
      ob_rt_store_steps(rts[1], db, rec_steps, rec_runs, &rec_sum) != OB_OK) {
    cli_error("--record-steps: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  for (int i = 0; i < 3; i++) {
    printf("-- %s\n", label[i]);
    print_timing("", &tm[i]);
    printf("           %d interleaved rounds; round medians", CMP_ROUNDS);
    for (int r = 0; r < CMP_ROUNDS; r++) printf("%s %.3f", r ? " /" : "", rmed[i][r] * 1e3);
    printf(" ms\n");
    if (i == 1 && a->record_steps)
      printf("recorded   in-graph latencies of %d steps in %s (%d profiled runs, %d after each timed repeat of the "
             "%d rounds, the middle half of each round's; each step's median over the rounds): sum %.3f ms; the "
             "profiled runs %.3f ms\n",
             ob_rt_step_count(rts[i]), ob_db_path(db), rec_runs, RECORD_RUNS_PER_REPEAT, CMP_ROUNDS, rec_sum * 1e3,
             rec_tot * 1e3);
    if (i == 1) print_db_sum(ctx, rts[i], db, &tm[i]);
    if (i == 1 && a->profile && !print_profile(ctx, rts[i], &tm[i])) goto done;
    if (!task_table_add(ctx, &tt, rts[i], i)) goto done;
    fflush(stdout);
  }
  printf("summary    %s, batch %lld, %d thread%s\n", ob_graph_name(m.g), (long long)(a->batchsize ? a->batchsize : 1),
         a->mo.nthreads, a->mo.nthreads == 1 ? "" : "s");
  printf("  %-8s %12s %12s %8s\n", "kernels", "mean ms", "median ms", "CV %");
  for (int i = 0; i < 3; i++)
    printf("  %-8s %12.3f %12.3f %8.2f\n", label[i], tm[i].mean_s * 1e3, tm[i].median_s * 1e3, tm[i].cv * 100);
  task_table_print(&tt, label);
  printf("speedup    tuned over untuned: %.3fx (median), %.3fx (mean)\n", tm[0].median_s / tm[1].median_s,
         tm[0].mean_s / tm[1].mean_s);
  printf("speedup    tuned over oneDNN kernels: %.3fx (median), %.3fx (mean)\n", tm[2].median_s / tm[1].median_s,
         tm[2].mean_s / tm[1].mean_s);
  rc = 0;
done:
  /* in reverse order of making (tuned, untuned, oneDNN): each runtime's
   * pool restores the thread mask it found */
  ob_rt_free(rts[1]);
  ob_rt_free(rts[0]);
  ob_rt_free(rts[2]);
  free(rec_steps);
  task_table_free(&tt);
  model_free(&m);
  free(tasks);
  ob_measurer_free(measurer);
  ob_runner_free(runner);
  ob_db_close(db);
  ob_target_free(target);
  return rc;
}
