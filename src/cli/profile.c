/* profile.c: `opbench profile`, the collector from the command line: the
 * workloads (an operator, a suite or a model's tasks), the features to
 * sweep, the host's limits (measured once per host, then read from the
 * database), the sweep with its progress line, and a table of the points. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/profile.h"

#define PRINT_MAX 200 /* rows of the table; the rest is in the database */

typedef struct inputs {
  ob_workload *wl;
  int nwl;
  int threads[64];
  int nthreads;
  int *sets[64];
  int set_n[64];
  int nsets;
  ob_workload corun[16];
  int ncorun;
  bool corun_all;
  double pressure[64];
  int npressure;
} inputs;

static void inputs_free(inputs *in) {
  free(in->wl);
  for (int i = 0; i < in->nsets; i++) free(in->sets[i]);
}

static bool add_wl(inputs *in, const ob_workload *wl) {
  ob_workload *n = realloc(in->wl, (size_t)(in->nwl + 1) * sizeof *n);
  if (!n) return false;
  in->wl = n;
  in->wl[in->nwl++] = *wl;
  return true;
}

/* The workloads of the flags; false after printing the error. */
static bool workloads(ob_ctx *ctx, const cli_args *a, inputs *in) {
  if (a->op) {
    ob_workload wl;
    if (cli_workload(ctx, a->op, a->shape, a->stride, a->pad, a->dilation, a->epilogue, true, &wl)) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      return false;
    }
    if (!add_wl(in, &wl)) return cli_error("out of memory"), false;
    return true;
  }
  if (a->suite) {
    cli_suite_entry *e = NULL;
    int n = 0;
    if (!cli_suite_read(ctx, a->suite, &e, &n)) return false;
    for (int i = 0; i < n; i++)
      if (!add_wl(in, &e[i].wl)) {
        free(e);
        return cli_error("out of memory"), false;
      }
    free(e);
    return true;
  }
  ob_graph *g = cli_model_load(ctx, a, true);
  if (!g) return false;
  ob_graph_task *tasks = NULL;
  int nt = 0;
  bool ok = false;
  if (!a->no_passes && ob_graph_optimize(ctx, g, 0, NULL) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
  } else if (ob_graph_tasks(ctx, g, &tasks, &nt) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
  } else {
    int keep = a->key_ops > 0 ? ob_graph_key_tasks(tasks, nt, a->key_ops) : nt;
    ok = true;
    for (int i = 0; i < keep && ok; i++) ok = add_wl(in, &tasks[i].wl);
    if (!ok) cli_error("out of memory");
    if (ok && keep == 0) ok = false, cli_error("model %s has no task to profile", ob_graph_name(g));
    if (ok)
      printf("model      %s: %d tasks%s\n", ob_graph_name(g), keep,
             keep < nt ? " (--key-ops)" : "");
  }
  free(tasks);
  ob_graph_free(g);
  return ok;
}

static bool parse_features(ob_ctx *ctx, const cli_args *a, inputs *in, ob_profile_sweep *s) {
  if (a->threads_list) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", a->threads_list);
    for (char *q = buf; q;) {
      char *comma = strchr(q, ',');
      if (comma) *comma = '\0';
      int64_t v;
      if (in->nthreads == 64 || !cli_parse_i64(q, 1, OB_CLI_MAX_CORES, &v)) {
        cli_error("--threads: bad value '%s' in '%s' (expected a list of thread counts, e.g. 1,2)", q,
                  a->threads_list);
        return false;
      }
      in->threads[in->nthreads++] = (int)v;
      q = comma ? comma + 1 : NULL;
    }
  }
  if (a->core_sets) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", a->core_sets);
    for (char *q = buf; q;) {
      char *slash = strchr(q, '/');
      if (slash) *slash = '\0';
      if (in->nsets == 64) return cli_error("--cores: at most 64 sets"), false;
      int *c = malloc(OB_CLI_MAX_CORES * sizeof *c), n = 0;
      if (!c) return cli_error("out of memory"), false;
      if (ob_parse_cores(ctx, q, c, OB_CLI_MAX_CORES, &n) != OB_OK) {
        free(c);
        cli_error("--cores '%s': %s", a->core_sets, ob_ctx_errmsg(ctx));
        return false;
      }
      in->sets[in->nsets] = c;
      in->set_n[in->nsets++] = n;
      q = slash ? slash + 1 : NULL;
    }
  }
  if (a->core_types) {
    ob_cpukind kinds[8];
    int nk = 0;
    if (ob_host_cpukinds(ctx, kinds, 8, &nk) != OB_OK) return cli_error("%s", ob_ctx_errmsg(ctx)), false;
    if (nk < 2) {
      printf("core types hwloc reports one kind of core here (%d CPUs): nothing to sweep\n",
             kinds[0].ncpus);
    } else {
      for (int k = 0; k < nk && in->nsets < 64; k++) {
        int *c = malloc((size_t)kinds[k].ncpus * sizeof *c);
        if (!c) return cli_error("out of memory"), false;
        memcpy(c, kinds[k].cpus, (size_t)kinds[k].ncpus * sizeof *c);
        in->sets[in->nsets] = c;
        in->set_n[in->nsets++] = kinds[k].ncpus;
        printf("core type  %s (efficiency %d): %d CPUs\n", kinds[k].name, kinds[k].efficiency,
               kinds[k].ncpus);
      }
    }
  }
  s->knobs = OB_KNOBS_BASE;
  if (a->knobs) {
    const char *k = a->knobs;
    const char *colon = strchr(k, ':');
    size_t kl = colon ? (size_t)(colon - k) : strlen(k);
    int64_t n = 0;
    if (colon && !cli_parse_i64(colon + 1, 1, 100000, &n)) {
      cli_error("--knobs '%s': the count after ':' must be an integer from 1 to 100000", k);
      return false;
    }
    if (kl == 4 && !strncmp(k, "base", 4) && !colon) s->knobs = OB_KNOBS_BASE;
    else if (kl == 10 && !strncmp(k, "neighbours", 10)) s->knobs = OB_KNOBS_NEIGHBOURS;
    else if (kl == 9 && !strncmp(k, "neighbors", 9)) s->knobs = OB_KNOBS_NEIGHBOURS;
    else if (kl == 6 && !strncmp(k, "random", 6) && colon) s->knobs = OB_KNOBS_RANDOM;
    else {
      cli_error("--knobs: unknown sweep '%s' (expected base, neighbours[:N] or random:N)", k);
      return false;
    }
    s->knob_count = (int)n;
  }
  for (int i = 0; i < a->ncorun_spec; i++) {
    if (!strcmp(a->corun_spec[i], "tasks")) {
      in->corun_all = true;
      continue;
    }
    if (ob_profile_parse_workload(ctx, a->corun_spec[i], &in->corun[in->ncorun]) != OB_OK) {
      cli_error("--corun: %s", ob_ctx_errmsg(ctx));
      return false;
    }
    in->ncorun++;
  }
  if (a->corun_mode && !a->ncorun_spec) {
    cli_error("--corun-mode needs a co-runner (--corun OP:SHAPE or --corun tasks)");
    return false;
  }
  if (a->pressure) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", a->pressure);
    for (char *q = buf; q;) {
      char *comma = strchr(q, ',');
      if (comma) *comma = '\0';
      char *end = NULL;
      errno = 0;
      double v = strtod(q, &end);
      if (in->npressure == 64 || end == q || *end || errno || !isfinite(v) || v < 0) {
        cli_error("--cache-pressure: bad value '%s' in '%s' (expected sizes in MiB, e.g. 0,16,64)", q,
                  a->pressure);
        return false;
      }
      in->pressure[in->npressure++] = v;
      q = comma ? comma + 1 : NULL;
    }
  }
  s->nworkloads = in->nwl;
  s->workloads = in->wl;
  s->tmpl = a->tmpl;
  s->sizes = a->sizes;
  s->nthreads = in->nthreads;
  s->threads = in->threads;
  s->ncore_sets = in->nsets;
  s->core_sets = (const int *const *)in->sets;
  s->core_set_n = in->set_n;
  s->ncorun = in->ncorun;
  s->corun = in->corun;
  s->corun_all = in->corun_all;
  s->corun_modes = !a->corun_mode || !strcmp(a->corun_mode, "both")
                       ? 0
                       : 1u << (!strcmp(a->corun_mode, "stream") ? OB_CORUN_STREAM : OB_CORUN_FULL);
  s->npressure = in->npressure;
  s->pressure_mib = in->pressure;
  s->seed = a->mo.seed;
  return true;
}

static void print_limits(const ob_limits *l, bool measured) {
  printf("limits     %s\n", measured ? "measured now and stored with the host"
                                     : "the host's, from the database (--limits again measures anew)");
  for (int i = 0; i < l->n; i++) {
    const ob_limit *x = &l->l[i];
    printf("  %-10s %-7s %2d thread%s %9.1f %-7s %s%s\n", x->name, x->isa[0] ? x->isa : "-", x->threads,
           x->threads == 1 ? " " : "s", x->value, strcmp(x->name, "fma_peak") ? "GB/s" : "GFLOP/s",
           x->verified ? "" : "UNVERIFIED: ", x->note);
  }
}

typedef struct table {
  const ob_profile_plan *plan;
  int printed, hidden;
} table;

static void short_key(const char *key, char *buf, size_t cap) {
  /* conv2d_nchw/f32/N1C64H56W56/K64R3S3/s1,1/p1,1,1,1/d1,1/g1 -> conv2d_nchw N1C64H56W56 K64R3S3 s1,1 */
  snprintf(buf, cap, "%s", key);
  for (char *p = buf; *p; p++)
    if (*p == '/') *p = ' ';
}

static void on_point(void *user, int index, const ob_db_profile *r) {
  table *t = user;
  if (!r) return; /* resumed: already in the database */
  if (t->printed >= PRINT_MAX) {
    t->hidden++;
    return;
  }
  if (t->printed++ == 0)
    printf("%-5s %-7s %-52s %-22s %-4s %-26s %9s %6s %6s %8s  %s\n", "#", "sweep", "workload", "knob",
           "thr", "beside", "GFLOPS", "%peak", "CV%", "slowdown", "flags / error");
  char wl[128], knob[64], beside[96] = "-";
  short_key(r->key.workload, wl, sizeof wl);
  snprintf(knob, sizeof knob, "%s%s%s", r->knob && *r->knob ? r->knob : "base",
           r->knob && *r->knob ? "=" : "", r->knob && *r->knob ? r->knob_value : "");
  if (r->key.corun_mode && *r->key.corun_mode) {
    char pk[96];
    short_key(r->key.corun_workload, pk, sizeof pk);
    snprintf(beside, sizeof beside, "%s: %.20s", r->key.corun_mode, pk);
  } else if (r->key.pressure_mib > 0) {
    snprintf(beside, sizeof beside, "%g MiB pressure", r->key.pressure_mib);
  }
  if (r->error_no) {
    printf("%-5d %-7s %-52.52s %-22.22s %-4d %-26.26s %9s %6s %6s %8s  error %d (%s): %.80s\n", index + 1,
           r->sweep, wl, knob, r->nthreads, beside, "-", "-", "-", "-", r->error_no,
           ob_merr_str(r->error_no), r->error_msg);
    return;
  }
  char pct[16] = "-", slow[16] = "-";
  if (isfinite(r->peak_pct)) snprintf(pct, sizeof pct, "%.1f", r->peak_pct);
  if (isfinite(r->slowdown)) snprintf(slow, sizeof slow, "%.2fx", r->slowdown);
  printf("%-5d %-7s %-52.52s %-22.22s %-4d %-26.26s %9.2f %6s %6.2f %8s  %s\n", index + 1, r->sweep, wl,
         knob, r->nthreads, beside, r->gflops, pct, 100 * r->timing.cv, slow, cli_timing_flags(&r->timing));
}

int cli_cmd_profile(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_target *t = NULL;
  ob_profile_plan *plan = NULL;
  ob_db *db = NULL;
  ob_runner *runner = NULL;
  inputs in;
  memset(&in, 0, sizeof in);
  ob_profile_sweep s;
  memset(&s, 0, sizeof s);
  if (!cli_target(ctx, a, !a->dry_run, &t)) goto done;
  if (!workloads(ctx, a, &in)) goto done;
  if (!parse_features(ctx, a, &in, &s)) goto done;
  ob_host host;
  if (ob_host_detect(ctx, &host) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (!a->dry_run) {
    ob_status st = ob_db_open(ctx, a->db_path, 0, &db);
    if (st) {
      cli_error("--db: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    s.db = db;
    s.host = host.fingerprint;
  }
  if (ob_profile_plan_new(ctx, t, &s, &plan) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  const char *why = NULL;
  int skipped = ob_profile_plan_skipped(plan, &why);
  printf("target     %s\n", ob_target_str(t));
  printf("host       %s (%s, %d cores)\n", host.fingerprint, host.cpu_model, host.ncores);
  printf("sweep      %d points over %d workloads%s", ob_profile_plan_count(plan),
         ob_profile_plan_workloads(plan), skipped ? "; " : "\n");
  if (skipped) printf("%d skipped (%s)\n", skipped, why);
  if (a->dry_run) {
    ob_profile_plan_print(plan, stdout);
    rc = 0;
    goto done;
  }
  if (ob_runner_new(ctx, &runner) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_limits limits;
  memset(&limits, 0, sizeof limits);
  const char *lm = a->limits ? a->limits : "auto";
  if (strcmp(lm, "none")) {
    if (ob_limits_load(db, &host, &limits) != OB_OK) {
      cli_error("--db: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    bool measure = !strcmp(lm, "again") || !strcmp(lm, "quick") || limits.n == 0;
    bool cv = false; /* limits stored before the runtime's conversion rates were among them gain them */
    if (!measure && ob_limits_ensure_conversions(ctx, db, &host, &limits, &cv) != OB_OK) {
      cli_error("host limits: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    if (cv) printf("limits     measured the runtime's conversion rates (the database's limits predate them)\n");
    if (measure) {
      printf("limits     measuring the host's peak FLOP rate, bandwidths and conversion rates (once per host)...\n");
      fflush(stdout);
      ob_limits_opts lo;
      memset(&lo, 0, sizeof lo);
      lo.build = a->mo.build;
      lo.build.target = NULL;
      lo.quick = !strcmp(lm, "quick");
      if (ob_limits_measure(ctx, runner, &host, &lo, &limits) != OB_OK ||
          ob_limits_store(db, &host, &limits) != OB_OK) {
        cli_error("host limits: %s", ob_ctx_errmsg(ctx));
        goto done;
      }
    }
    print_limits(&limits, measure);
  }
  char note[192];
  unsigned can = ob_counters_probe(OB_COUNTERS_ALL, note, sizeof note);
  if (can == OB_COUNTERS_ALL) printf("counters   cycles, instructions, L1d and LLC misses, task-clock\n");
  else printf("counters   not available here: %s%s\n", note,
              can & (1u << OB_COUNTER_TASK_CLOCK) ? " (task-clock only)" : "");
  if (in.npressure) {
    char how[256];
    ob_profile_pressure_how(how, sizeof how);
    printf("pressure   %s\n", how);
  }
  fflush(stdout);
  table tb = {plan, 0, 0};
  ob_profile_opts po = ob_profile_opts_default();
  po.measure = a->mo;
  po.measure.nthreads = 1;
  po.measure.cores = NULL;
  po.host = &host;
  po.limits = limits.n ? &limits : NULL;
  po.remeasure = a->remeasure;
  po.progress = stderr;
  po.point_fn = on_point;
  po.user = &tb;
  ob_profile_stats stats;
  ob_status st = ob_profile_run(ctx, plan, runner, db, &po, &stats);
  if (tb.hidden) printf("...        %d more points (opbench db export --table profiles --db %s)\n", tb.hidden,
                        a->db_path);
  if (st) {
    cli_error("profile: %s (%d points measured before it are stored)", ob_ctx_errmsg(ctx), stats.measured);
    goto done;
  }
  printf("done       %d points: %d measured, %d already in %s, %d failed; %.1f s (builds %.1f s)\n",
         stats.points, stats.measured, stats.resumed, a->db_path, stats.failed, stats.seconds, stats.build_s);
  rc = 0;
done:
  ob_runner_free(runner);
  ob_profile_plan_free(plan);
  ob_db_close(db);
  ob_target_free(t);
  inputs_free(&in);
  return rc;
}
