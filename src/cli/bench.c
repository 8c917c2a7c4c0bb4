/* bench.c: `opbench bench`: reads a suite (suite.c: a list of workloads
 * taken from a real model, refused whole on the first malformed line), then
 * measures the default config of every workload and prints a table plus the
 * geometric mean of GFLOPS and the count-weighted total latency. The
 * suite's entries and their tasks belong to this file and are freed on
 * every path.
 * --search finds each workload's best config over the templates of its
 * operator for the target (ob_search_best), --template / --no-winograd
 * narrowing them; --vs onednn measures oneDNN on the same workloads in the
 * same process, its direct convolution and, where it has one, its Winograd
 * algorithm, and prints speed ratios (oneDNN time / opbench time) against
 * each and against the faster of the two ("vendor best"); --vs cudnn
 * measures cuDNN and cuBLAS on a CUDA GPU the same way (no Winograd column). */
#include "cli.h"

#include "opbench/fleet.h"

#include "opbench/baseline.h"
#include "opbench/kernel.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sched.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_TMPLS 8
#define BENCH_MAX_ROUNDS 64
#define BENCH_DEFAULT_ROUNDS 9 /* --vs: interleaved rounds per workload, at least (--rounds: exactly) */
/* Without --rounds, a workload whose rounds are short gets more of them,
 * up to BENCH_AUTO_ROUNDS while its rounds have taken under
 * BENCH_ROUNDS_BUDGET_S: the fastest of 9 rounds of a 0.1-0.2 ms kernel
 * still read 0.94-1.02 of oneDNN in four runs of the same code, of 27
 * rounds 0.98-1.04 (bench/results/kernels.txt); kernels of milliseconds
 * spend the budget in their 9 rounds and keep them. */
#define BENCH_AUTO_ROUNDS 27
#define BENCH_ROUNDS_BUDGET_S 3.0
#define BENCH_SEARCH_ROUNDS 3  /* --vs with rounds: rounds of the search's re-measurement */

typedef struct bench_entry {
  int line;
  char op[32];
  char shape[128];
  char stride[24], pad[24]; /* "" when the line gives none */
  int64_t count;
  ob_workload wl;
  ob_task *task;
  const char *tmpls[BENCH_MAX_TMPLS]; /* the templates it may use (static names) */
  int ntmpls;
  ob_measure_result res;          /* default config of the first template */
  bool searched;
  ob_measure_result best;         /* best found (res when not searched) */
  char best_tmpl[64];
  char best_cfg[512];
  ob_tolerance best_tol;          /* what the best config was checked with */
  ob_task *best_task;             /* the best config's task when not `task` (owned) */
  ob_config best_c;               /* the best config, of best_task (or task) */
  int nrounds;                    /* interleaved rounds the final figures come from */
  int round_n[4];                 /* round figures taken per side */
  double med_ms[4];               /* the median of each side's rounds */
  double round_ms[4][BENCH_MAX_ROUNDS]; /* per round: best, direct, default, Winograd */
  double search_s;
  int measured;
  int searched_tmpls, dflt_remeasured; /* templates searched; whose default was re-measured */
  bool dflt_kept;                 /* the default beat the search's pick in the final rounds and is the best */
  bool have_base, have_wino;
  ob_baseline_result base;        /* oneDNN direct (or cuDNN/cuBLAS) */
  ob_baseline_result wino;        /* oneDNN Winograd (error 1 where it has none) */
  char base_name[16];             /* "onednn", "cudnn" */
} bench_entry;

static bool is_winograd(const char *tmpl) { return strstr(tmpl, "winograd") != NULL; }

/* Is `name` in the comma list `list`? */
static bool in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return true;
    p = c ? c + 1 : NULL;
  }
  return false;
}

/* Every name of --template must be a template of some operator. */
static bool check_template_list(const char *list) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    bool found = false;
    for (int i = 0; i < ob_op_count() && !found; i++) {
      const char *names[BENCH_MAX_TMPLS];
      int nt = ob_op_templates(ob_op_name(i), names, BENCH_MAX_TMPLS);
      for (int t = 0; t < nt && t < BENCH_MAX_TMPLS; t++) found |= !strcmp(names[t], tok);
    }
    if (!found) {
      cli_error("--template: unknown template '%s' (see opbench ops)", tok);
      return false;
    }
  }
  if (!buf[0] || strstr(list, ",,") || list[strlen(list) - 1] == ',') {
    cli_error("--template: malformed list '%s' (expected NAME[,NAME...])", list);
    return false;
  }
  return true;
}

/* The templates entry e may use: its operator's, narrowed by --template
 * (when the list names one of them; listed order first) and --no-winograd. */
static bool entry_templates(const cli_args *a, const char *file, const ob_target *target, bench_entry *e) {
  const char *names[BENCH_MAX_TMPLS];
  int nt = ob_op_templates_for(e->op, target, names, BENCH_MAX_TMPLS);
  if (nt > BENCH_MAX_TMPLS) nt = BENCH_MAX_TMPLS;
  bool listed = false;
  for (int t = 0; t < nt && a->tmpl; t++) listed |= in_list(a->tmpl, names[t]);
  e->ntmpls = 0;
  if (listed) { /* in the order of the list: its first is the default */
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", a->tmpl);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
      for (int t = 0; t < nt; t++)
        if (!strcmp(names[t], tok) && !(a->no_winograd && is_winograd(names[t]))) e->tmpls[e->ntmpls++] = names[t];
  } else {
    for (int t = 0; t < nt; t++)
      if (!(a->no_winograd && is_winograd(names[t]))) e->tmpls[e->ntmpls++] = names[t];
  }
  if (!e->ntmpls) {
    cli_error("%s:%d: --template/--no-winograd leave no template for %s", file, e->line, e->op);
    return false;
  }
  return true;
}

static void print_header(void) {
  printf("%3s %-8s %-36s %6s %6s %5s %10s %11s %7s %9s %7s %-9s  %s\n", "#", "workload", "shape",
         "stride", "pad", "count", "GFLOPS", "median ms", "CV %", "number", "repeats", "flags",
         "error");
}

static void print_vs_header(const char *vs) {
  printf("%3s %-16s %-34s %4s %3s %5s %9s %9s %9s %9s %8s %8s %8s %8s %8s  %s\n", "#", "workload", "shape", "str",
         "pad", "count", "best", "default", vs ? vs : "-", vs ? "dnn-wino" : "-", vs ? "best/lib" : "-",
         vs ? "dflt/lib" : "-", vs ? "best/win" : "-", vs ? "best/vb" : "-", "search s", "best template / config");
}

/* Speed ratio: baseline time / opbench time (> 1: opbench is faster). */
static double ratio(const ob_measure_result *r, const ob_baseline_result *b) {
  return r->error_no || b->error_no || r->timing.median_s <= 0
             ? 0
             : b->timing.median_s / r->timing.median_s;
}

/* The faster of oneDNN's direct and Winograd results (NULL: neither ran). */
static const ob_baseline_result *vendor_best(const bench_entry *e) {
  const ob_baseline_result *b = e->have_base && !e->base.error_no ? &e->base : NULL;
  if (e->have_wino && !e->wino.error_no && (!b || e->wino.timing.median_s < b->timing.median_s)) b = &e->wino;
  return b;
}

static bool tol_is_default(ob_tolerance t) {
  ob_tolerance d = ob_tolerance_default();
  return t.rtol == d.rtol && t.atol == d.atol;
}

/* A result's time becomes `s` seconds (its GFLOPS follow: same FLOPs). */
static void set_time(ob_timing *t, double *gflops, double s) {
  if (s <= 0 || t->median_s <= 0) return;
  *gflops *= t->median_s / s;
  t->median_s = s;
}

/* The final figures of entry e, side by side. One measurement of each side
 * after the other lets a slow window of the host (1.3-1.6x for tens of ms
 * to seconds on this VM; other tenants, not our processes) fall on one side
 * only, and a ratio of 0.67 is then the host's, not the kernel's. So
 * `rounds` rounds each time oneDNN's Winograd (where it runs the workload),
 * opbench's best config, the baseline's direct kernel and opbench's default
 * config, in that order and reversed every other round (each opbench
 * figure beside a baseline one). Each side's final time is its fastest
 * round, each round being the median of its repeats: the host's windows
 * only ever slow a round down, and in runs where they covered most of the
 * rounds the medians of the rounds still read 0.68-0.78 for kernels whose
 * fastest rounds agreed within 3 % (bench/results/kernels.txt); both sides
 * get the same rule. The rounds' medians are kept beside (med_ms) and
 * printed as a second geomean. The results keep their other fields (CV,
 * number, flags) from the first measurement. */
static bool interleave(ob_ctx *ctx, const cli_args *a, ob_measurer *m, ob_baseline *base, const char *file,
                       bench_entry *e, int rounds) {
  bool more = !a->rounds; /* the default: more rounds for short kernels */
  ob_task *bt = e->best_task ? e->best_task : e->task;
  ob_config dc = ob_task_default_config(e->task);
  bool same = !e->best_task && e->best_c.index == dc.index; /* the best is the default */
  bool wino = e->have_wino && !e->wino.error_no;
  int *got = e->round_n;
  double t0 = ob_now_s();
  int r = 0;
  for (; r < rounds || (more && r < BENCH_AUTO_ROUNDS && ob_now_s() - t0 < BENCH_ROUNDS_BUDGET_S); r++) {
    for (int k = 0; k < 4; k++) {
      static const int order[4] = {3, 0, 1, 2}; /* Winograd, best, direct, default */
      int side = order[r % 2 ? 3 - k : k];       /* 0 best, 1 direct, 2 default, 3 Winograd */
      ob_measure_result mr;
      ob_baseline_result br;
      double s = 0;
      if (side == 0 || (side == 2 && !same)) {
        if (side == 0 ? e->best.error_no : e->res.error_no) continue;
        ob_config c = side == 0 ? e->best_c : dc;
        if (ob_measurer_measure(m, ctx, side == 0 ? bt : e->task, &a->mo, &c, 1, &mr) != OB_OK) {
          cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
          return false;
        }
        if (!mr.error_no) s = mr.timing.median_s;
      } else if (side == 1 || (side == 3 && wino)) {
        if (side == 1 && (!e->have_base || e->base.error_no)) continue;
        ob_status st = side == 1 ? ob_baseline_measure(base, &e->wl, &a->mo.timing, a->mo.seed, &br)
                                 : ob_baseline_measure_alg(base, &e->wl, OB_BASELINE_ALG_WINOGRAD, &a->mo.timing,
                                                           a->mo.seed, &br);
        if (st != OB_OK) {
          cli_error("%s:%d: %s%s: %s", file, e->line, ob_baseline_name(base), side == 3 ? " winograd" : "",
                    ob_ctx_errmsg(ctx));
          return false;
        }
        if (!br.error_no) s = br.timing.median_s;
      }
      if (s > 0) e->round_ms[side][got[side]++] = s * 1e3;
    }
  }
  double fin[4];
  for (int k = 0; k < 4; k++) {
    double med = 0, fastest = 0;
    if (got[k]) ob_stats(e->round_ms[k], got[k], &med, NULL, NULL);
    for (int q = 0; q < got[k]; q++)
      if (q == 0 || e->round_ms[k][q] < fastest) fastest = e->round_ms[k][q];
    e->med_ms[k] = med;
    fin[k] = fastest * 1e-3;
  }
  /* the rounds are the search's last word: where the default's fastest
   * round beats the pick's, the pick came from fewer, earlier measurements
   * (one slow window over the default during the search is enough) and the
   * default is the better config, so it is kept as the best */
  if (!same && got[0] && got[2] && fin[2] < fin[0]) {
    memcpy(e->round_ms[0], e->round_ms[2], sizeof e->round_ms[0]);
    got[0] = got[2];
    fin[0] = fin[2];
    e->med_ms[0] = e->med_ms[2];
    e->best = e->res;
    e->best_c = dc;
    e->best_tol = ob_task_tolerance(e->task, &dc);
    ob_task_free(e->best_task);
    e->best_task = NULL;
    snprintf(e->best_tmpl, sizeof e->best_tmpl, "%s", ob_task_template(e->task));
    char *cs = ob_config_str(&dc);
    snprintf(e->best_cfg, sizeof e->best_cfg, "%s", cs ? cs : "");
    free(cs);
    e->dflt_kept = true;
  }
  if (same) { /* one config: its rounds are both columns' */
    memcpy(e->round_ms[2], e->round_ms[0], sizeof e->round_ms[0]);
    got[2] = got[0];
    fin[2] = fin[0];
    e->med_ms[2] = e->med_ms[0];
  }
  if (got[0]) set_time(&e->best.timing, &e->best.gflops, fin[0]);
  if (got[2]) set_time(&e->res.timing, &e->res.gflops, fin[2]);
  if (got[1]) set_time(&e->base.timing, &e->base.gflops, fin[1]);
  if (got[3]) set_time(&e->wino.timing, &e->wino.gflops, fin[3]);
  e->nrounds = r;
  return true;
}

static void print_vs_row(int i, const bench_entry *e) {
  printf("%3d %-16s %-34s %4s %3s %5lld", i + 1, e->op, e->shape, e->stride[0] ? e->stride : "-",
         e->pad[0] ? e->pad : "-", (long long)e->count);
  printf(" %9.2f %9.2f", e->best.error_no ? 0 : e->best.gflops, e->res.error_no ? 0 : e->res.gflops);
  if (e->have_base && !e->base.error_no) printf(" %9.2f", e->base.gflops);
  else printf(" %9s", e->have_base ? "err" : "-");
  if (e->have_wino && !e->wino.error_no) printf(" %9.2f", e->wino.gflops);
  else printf(" %9s", "-");
  if (e->have_base && !e->base.error_no)
    printf(" %8.3f %8.3f", ratio(&e->best, &e->base), ratio(&e->res, &e->base));
  else
    printf(" %8s %8s", "-", "-");
  if (e->have_wino && !e->wino.error_no) printf(" %8.3f", ratio(&e->best, &e->wino));
  else printf(" %8s", "-");
  const ob_baseline_result *vb = vendor_best(e);
  if (vb) printf(" %8.3f", ratio(&e->best, vb));
  else printf(" %8s", "-");
  printf(" %8.1f  %s %s", e->search_s, e->best_tmpl, e->best_cfg);
  if (is_winograd(e->best_tmpl) || !tol_is_default(e->best_tol)) /* F(6x6) checks at the direct atol */
    printf(" (checked at rtol %.0e, atol %.0e)", e->best_tol.rtol, e->best_tol.atol);
  if (e->dflt_kept) printf(" (the default: faster than the search's pick in the rounds)");
  printf("\n");
  if (e->have_base && e->base.error_no)
    printf("    %s: error %d %s: %.200s\n", e->base_name, e->base.error_no, ob_merr_str(e->base.error_no), e->base.message);
  if (e->have_wino && e->wino.error_no && e->wino.error_no != OB_MERR_INSTANTIATION)
    printf("    onednn winograd: error %d %s: %.200s\n", e->wino.error_no, ob_merr_str(e->wino.error_no),
           e->wino.message);
}

static void print_row(int i, const bench_entry *e, bool measured) {
  printf("%3d %-8s %-36s %6s %6s %5lld", i + 1, e->op, e->shape, e->stride[0] ? e->stride : "-",
         e->pad[0] ? e->pad : "-", (long long)e->count);
  if (!measured) {
    printf("\n");
  } else if (e->res.error_no == OB_MERR_NONE) {
    const ob_timing *t = &e->res.timing;
    char reps[24]; /* "10", or "10+4" when the stability rule added repeats */
    if (t->extra_repeats) snprintf(reps, sizeof reps, "%d+%d", t->repeat - t->extra_repeats, t->extra_repeats);
    else snprintf(reps, sizeof reps, "%d", t->repeat);
    printf(" %10.2f %11.4f %7.2f %9d %7s %-9s  %d\n", e->res.gflops, t->median_s * 1e3, t->cv * 100,
           t->number, reps, cli_timing_flags(t), 0);
  } else {
    printf(" %10s %11s %7s %9s %7s %-9s  %d %s: %.160s\n", "-", "-", "-", "-", "-", "",
           e->res.error_no, ob_merr_str(e->res.error_no), e->res.message);
  }
}

/* bench --build-only: every workload's default config built (NVRTC for
 * cuda), its launch checked against the target's limits, nothing run. */
static int bench_build_only(ob_ctx *ctx, const cli_args *a, const char *file, const ob_target *target,
                            bench_entry *es, int n) {
  bool gpu = ob_target_is_gpu(target);
  int nfail = 0;
  cJSON *root = a->json ? cJSON_CreateObject() : NULL, *arr = NULL;
  if (root) {
    cJSON_AddStringToObject(root, "suite", file);
    cJSON_AddStringToObject(root, "target", ob_target_str(target));
    cJSON_AddBoolToObject(root, "build_only", true);
    arr = cJSON_AddArrayToObject(root, "workloads");
  } else {
    printf("suite %s: %d workloads, default configs built for %s, not run (--build-only)\n",
           strcmp(file, "resnet18") == 0 ? "resnet18 (built in)" : file, n, ob_target_str(target));
    printf("%3s %-16s %-34s %4s %3s %5s %-22s %-16s %8s  %s\n", "#", "workload", "shape", "str", "pad",
           "count", "template", gpu ? "grid x block" : "", "build s", "error");
  }
  for (int i = 0; i < n; i++) {
    bench_entry *e = &es[i];
    ob_config cfg = ob_task_default_config(e->task);
    ob_build_report br;
    if (ob_build_configs(ctx, e->task, &a->mo, &cfg, 1, &br) != OB_OK) {
      cJSON_Delete(root);
      return cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
    }
    if (br.error_no) nfail++;
    const ob_launch *l = &br.launch;
    char dims[64] = "";
    if (gpu && !br.error_no)
      snprintf(dims, sizeof dims, "%lldx%lldx%lld x %lld", (long long)l->grid[0], (long long)l->grid[1],
               (long long)l->grid[2], (long long)(l->block[0] * l->block[1] * l->block[2]));
    if (root) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "line", e->line);
      cJSON_AddStringToObject(o, "op", e->op);
      cJSON_AddStringToObject(o, "shape", e->shape);
      cJSON_AddStringToObject(o, "template", ob_task_template(e->task));
      cJSON_AddNumberToObject(o, "config_index", (double)cfg.index);
      cJSON_AddNumberToObject(o, "error_no", br.error_no);
      cJSON_AddStringToObject(o, "message", br.message);
      cJSON_AddNumberToObject(o, "build_s", br.build_s);
      if (gpu && !br.error_no) {
        cJSON_AddNumberToObject(o, "threads_per_block", (double)(l->block[0] * l->block[1] * l->block[2]));
        cJSON_AddNumberToObject(o, "shared_bytes", (double)l->shared_bytes);
      }
      cJSON_AddItemToArray(arr, o);
    } else {
      printf("%3d %-16s %-34s %4s %3s %5lld %-22s %-16s %8.3f  %d%s%.160s\n", i + 1, e->op, e->shape,
             e->stride[0] ? e->stride : "-", e->pad[0] ? e->pad : "-", (long long)e->count,
             ob_task_template(e->task), dims, br.build_s, br.error_no, br.error_no ? " " : "",
             br.error_no ? br.message : "");
    }
  }
  if (root) {
    cJSON_AddNumberToObject(root, "failed", nfail);
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
  } else {
    printf("%d of %d built\n", n - nfail, n);
  }
  fflush(stdout);
  if (nfail) return cli_error("%d of %d workloads failed to build", nfail, n);
  return 0;
}

/* --vs onednn with an OpenCL target whose device is the CPU (PoCL): oneDNN
 * runs on the same cores the OpenCL kernels run on, so the ratio compares two
 * codes on one piece of hardware in one run. oneDNN gets as many threads as
 * the device has compute units (PoCL runs a work-group per core on all of
 * them, whatever --threads says), at the host's own ISA. A real GPU is
 * refused: oneDNN's CPU times beside GPU times would be no comparison. */
static bool onednn_beside_opencl_cpu(ob_ctx *ctx, const cli_args *a, const ob_target *target,
                                     ob_baseline **base) {
  const ob_gpu_facts *g = &ob_target_get_facts(target)->gpu;
  if (!g->cpu_device) {
    cli_error("--vs onednn: target '%s' runs on a GPU (%s), oneDNN on the CPU; compare a GPU with "
              "--vs cudnn and a cuda target",
              ob_target_str(target), g->device_name[0] ? g->device_name : "no name");
    return false;
  }
  if (a->mo.cores) {
    cli_error("--vs onednn with target '%s': --cores cannot pin the OpenCL device's threads, so "
              "oneDNN takes the device's compute units instead; leave --cores out",
              ob_target_str(target));
    return false;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  int nthreads = g->compute_units > 0 ? g->compute_units : 1;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) < nthreads)
    nthreads = CPU_COUNT(&allowed);
  if (nthreads < 1) nthreads = 1;
  int cores[CPU_SETSIZE];
  int nc = 0;
  for (int c = 0; c < CPU_SETSIZE && nc < nthreads; c++)
    if (CPU_ISSET(c, &allowed)) cores[nc++] = c;
  if (nc < nthreads) nthreads = nc > 0 ? nc : 1;
  if (ob_baseline_onednn_new(ctx, nc ? cores : NULL, nthreads, NULL, base) != OB_OK) {
    cli_error("--vs onednn: %s", ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

int cli_cmd_bench(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  bench_entry *es = NULL;
  int n = 0;
  ob_runner *runner = NULL;
  ob_measurer *measurer = NULL;
  ob_fleet_client *fleet = NULL;
  ob_baseline *base = NULL;
  ob_target *target = NULL;
  cJSON *root = NULL;
  char *json = NULL;
  const char *file = a->suite;
  cli_suite_entry *se = NULL;

  if (!cli_suite_read(ctx, file, &se, &n)) goto done;
  if (!(es = calloc((size_t)n, sizeof *es))) {
    cli_error("--suite %s: out of memory for %d workloads", file, n);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    bench_entry *e = &es[i];
    e->line = se[i].line;
    memcpy(e->op, se[i].op, sizeof e->op);
    memcpy(e->shape, se[i].shape, sizeof e->shape);
    memcpy(e->stride, se[i].stride, sizeof e->stride);
    memcpy(e->pad, se[i].pad, sizeof e->pad);
    e->count = se[i].count;
    e->wl = se[i].wl;
  }
  if (a->fleet && a->vs) {
    cli_error("--vs measures a baseline here; it does not go with --fleet");
    goto done;
  }
  if (a->tmpl && !check_template_list(a->tmpl)) goto done;
  if (a->rounds && !a->vs) {
    cli_error("--rounds %d: the rounds interleave opbench with a baseline; give --vs too", a->rounds);
    goto done;
  }
  if (a->rounds > BENCH_MAX_ROUNDS) {
    cli_error("--rounds %d: at most %d for bench", a->rounds, BENCH_MAX_ROUNDS);
    goto done;
  }
  /* --vs: the final figures come from interleaved rounds (interleave) */
  int rounds = a->rounds ? a->rounds : a->vs ? BENCH_DEFAULT_ROUNDS : 1;
  /* through a fleet the workers build and run: they say what they can run */
  if (!cli_target(ctx, a, !a->dry_run && !a->fleet, &target)) goto done;
  for (int i = 0; i < n; i++)
    if (!entry_templates(a, file, target, &es[i])) goto done;

  if (a->dry_run) {
    print_header();
    for (int i = 0; i < n; i++) print_row(i, &es[i], false);
    printf("%d workloads (not measured: --dry-run)\n", n);
    rc = 0;
    goto done;
  }

  for (int i = 0; i < n; i++) {
    /* the default: the first of its templates that takes the workload (a
     * Winograd template takes only 3x3 stride-1 convolutions) */
    bench_entry *e = &es[i];
    ob_status st = OB_ERR_UNSUPPORTED;
    for (int t = 0; t < e->ntmpls && st == OB_ERR_UNSUPPORTED; t++) {
      st = ob_task_new(ctx, &e->wl, e->tmpls[t], target, &e->task);
      if (st == OB_ERR_UNSUPPORTED && t + 1 < e->ntmpls) ob_ctx_clear_error(ctx);
    }
    if (st != OB_OK) {
      cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
      goto done;
    }
  }
  if (a->build_only) {
    rc = bench_build_only(ctx, a, file, target, es, n);
    goto done;
  }
  char note[512];
  const char *tnote = cli_timing_note(target, note, sizeof note);
  if (a->fleet) {
    if (!(fleet = cli_fleet_client(ctx, a))) goto done;
    measurer = ob_fleet_client_measurer(fleet);
    if (ob_measurer_check(measurer, ctx, es[0].task) != OB_OK) {
      cli_error("--fleet: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
  } else if (ob_runner_new(ctx, &runner) != OB_OK || ob_measurer_local_new(ctx, runner, &measurer) != OB_OK) {
    cli_error("cannot start the runner: %s", ob_ctx_errmsg(ctx));
    goto done;
  }

  /* --vs onednn on the CPU; --vs cudnn (alias cublas) on a CUDA GPU:
   * cuDNN's convolutions and cuBLAS's matrix products */
  bool gpu_vs = a->vs && strcmp(a->vs, "onednn") != 0;
  char rounds_text[96] = "";
  if (!a->rounds)
    snprintf(rounds_text, sizeof rounds_text, " (up to %d while the workload's rounds take under %.0f s)",
             BENCH_AUTO_ROUNDS, BENCH_ROUNDS_BUDGET_S);
  if (a->vs && !gpu_vs && ob_target_is_gpu(target)) {
    if (!onednn_beside_opencl_cpu(ctx, a, target, &base)) goto done;
  } else if (a->vs && (gpu_vs ? ob_baseline_cudnn_new(ctx, target, &base)
                              : ob_baseline_onednn_new(ctx, a->mo.cores, a->mo.nthreads, target, &base)) != OB_OK) {
    cli_error("--vs %s: %s", a->vs, ob_ctx_errmsg(ctx));
    goto done;
  }
  const char *bname = base ? ob_baseline_name(base) : "-";
  for (int i = 0; i < n; i++) snprintf(es[i].base_name, sizeof es[i].base_name, "%s", bname);
  bool wide = a->vs || a->search_budget;
  int nok = 0, nfail = 0, nratio = 0, nnoisy = 0, nbelow = 0, nemu = 0, nvb = 0, worst_vb = -1, worst_dnn = -1;
  const ob_timing_opts asked = ob_timing_resolve(&a->mo.timing, target);
  /* --vs: the search's finalists are re-measured in rounds too (each its
   * fastest), so that the config the final rounds time was chosen by the
   * rule they judge by, not by one measurement a slow window can hit */
  int search_rounds = rounds > 1 ? BENCH_SEARCH_ROUNDS : 1;
  char search_text[200] = "off", sr_text[48] = "";
  if (search_rounds > 1) snprintf(sr_text, sizeof sr_text, " in %d rounds, each its fastest", search_rounds);
  if (a->search_budget >= 1 << 30)
    snprintf(search_text, sizeof search_text, "exhaustive per template");
  else if (a->search_budget)
    snprintf(search_text, sizeof search_text,
             "random:%d per template (each template's default among them, re-measured beside the best 3%s)",
             a->search_budget, sr_text);
  char number_text[48];
  if (asked.number > 0) snprintf(number_text, sizeof number_text, "%d", asked.number);
  else snprintf(number_text, sizeof number_text, "adaptive (floor %g ms)", asked.min_repeat_ms);
  double logsum = 0, total_ms = 0, log_best = 0, log_dflt = 0, log_vb = 0, log_med = 0, log_med_vb = 0;
  int nmed = 0;
  for (int i = 0; i < n; i++) {
    bench_entry *e = &es[i];
    ob_config cfg = ob_task_default_config(e->task);
    if (ob_measurer_measure(measurer, ctx, e->task, &a->mo, &cfg, 1, &e->res) != OB_OK) {
      cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
      goto done;
    }
    e->best = e->res;
    e->best_c = cfg;
    e->best_tol = ob_task_tolerance(e->task, &cfg);
    snprintf(e->best_tmpl, sizeof e->best_tmpl, "%s", ob_task_template(e->task));
    char *cs = ob_config_str(&cfg);
    snprintf(e->best_cfg, sizeof e->best_cfg, "%s", cs ? cs : "");
    free(cs);
    if (a->search_budget) {
      for (int t = 0; t < e->ntmpls; t++) {
        ob_task *tk = NULL;
        ob_search_result sr;
        ob_search_opts so = {.budget = a->search_budget, .seed = a->mo.seed + (uint64_t)i, .rounds = search_rounds};
        ob_status tst = ob_task_new(ctx, &e->wl, e->tmpls[t], target, &tk);
        if (tst == OB_ERR_UNSUPPORTED) { /* the template does not take this workload */
          ob_ctx_clear_error(ctx);
          continue;
        }
        if (tst != OB_OK) {
          cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
          goto done;
        }
        ob_status st = ob_search_best(ctx, tk, measurer, &a->mo, &so, &sr);
        if (st == OB_OK) {
          e->search_s += sr.seconds;
          e->measured += sr.measured;
          e->searched_tmpls++;
          e->dflt_remeasured += sr.default_remeasured;
          if (e->best.error_no || sr.best_result.timing.median_s < e->best.timing.median_s) {
            e->best = sr.best_result;
            e->best_tol = ob_task_tolerance(tk, &sr.best);
            ob_task_free(e->best_task); /* the task of the config kept, for the final rounds */
            e->best_task = tk;
            e->best_c = sr.best;
            tk = NULL;
            snprintf(e->best_tmpl, sizeof e->best_tmpl, "%s", e->tmpls[t]);
            cs = ob_config_str(&sr.best);
            snprintf(e->best_cfg, sizeof e->best_cfg, "%s", cs ? cs : "");
            free(cs);
          }
        } else if (st != OB_ERR_RUNTIME) { /* no config ran is a result; the rest is not */
          cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
          ob_task_free(tk);
          goto done;
        }
        ob_task_free(tk);
      }
      e->searched = true;
    }
    if (base) {
      if (ob_baseline_measure(base, &e->wl, &a->mo.timing, a->mo.seed, &e->base) != OB_OK) {
        cli_error("%s:%d: %s: %s", file, e->line, bname, ob_ctx_errmsg(ctx));
        goto done;
      }
      e->have_base = true;
      if (!gpu_vs && !strcmp(e->op, "conv2d")) { /* oneDNN's Winograd: CPU only */
        if (ob_baseline_measure_alg(base, &e->wl, OB_BASELINE_ALG_WINOGRAD, &a->mo.timing, a->mo.seed,
                                    &e->wino) != OB_OK) {
          cli_error("%s:%d: onednn winograd: %s", file, e->line, ob_ctx_errmsg(ctx));
          goto done;
        }
        e->have_wino = true;
      }
      if (rounds > 1 && !interleave(ctx, a, measurer, base, file, e, rounds)) goto done;
      double rb = ratio(&e->best, &e->base), rd = ratio(&e->res, &e->base);
      if (rb > 0 && rd > 0) {
        log_best += log(rb);
        log_dflt += log(rd);
        nratio++;
        if (worst_dnn < 0 || rb < ratio(&es[worst_dnn].best, &es[worst_dnn].base)) worst_dnn = i;
      }
      if (e->nrounds && e->med_ms[0] > 0 && e->med_ms[1] > 0) { /* the same on the rounds' medians */
        double vbm = e->med_ms[3] > 0 && e->med_ms[3] < e->med_ms[1] ? e->med_ms[3] : e->med_ms[1];
        log_med += log(e->med_ms[1] / e->med_ms[0]);
        log_med_vb += log(vbm / e->med_ms[0]);
        nmed++;
      }
      const ob_baseline_result *vb = vendor_best(e);
      double rv = vb ? ratio(&e->best, vb) : 0;
      if (rv > 0) {
        log_vb += log(rv);
        nvb++;
        if (worst_vb < 0 || rv < ratio(&es[worst_vb].best, vendor_best(&es[worst_vb]))) worst_vb = i;
      }
    }
    if (wide && !a->json) {
      if (i == 0) {
        printf("suite %s: %d workloads, target %s, %d thread(s), number %s, repeat %d, %s caches, "
               "search %s, templates %s%s, baseline %s; GFLOPS columns, ratios = %s time / opbench time\n",
               strcmp(file, "resnet18") == 0 ? "resnet18 (built in)" : file, n, ob_target_str(target),
               a->mo.nthreads, number_text, asked.repeat, asked.flush ? "cold" : "warm",
               search_text, a->tmpl ? a->tmpl : "all", a->no_winograd ? " (no Winograd)" : "",
               base ? ob_baseline_describe(base) : "none", gpu_vs ? "cuDNN/cuBLAS" : "oneDNN");
        if (tnote) printf("device: %s\n", tnote);
        ob_tolerance dt = ob_tolerance_default(), w2 = ob_winograd_tolerance(2), w4 = ob_winograd_tolerance(4),
                     w6 = ob_winograd_tolerance(6);
        printf("Winograd GFLOPS (opbench's and oneDNN's) count the direct convolution's nominal FLOPs. "
               "Checks: |got-ref| <= rtol*|ref| + atol*sqrt(reduction)*max(max|ref|,1); direct rtol %.0e atol %.0e; "
               "Winograd F(2x2,3x3) rtol %.0e atol %.0e, F(4x4,3x3) rtol %.0e atol %.0e, F(6x6,3x3) rtol %.0e "
               "atol %.0e (oneDNN's Winograd, its tile its own, at the widest: F(6x6,3x3)'s)\n",
               dt.rtol, dt.atol, w2.rtol, w2.atol, w4.rtol, w4.atol, w6.rtol, w6.atol);
        if (base && rounds > 1)
          printf("final figures: %d interleaved rounds per workload%s, each timing %sopbench's best config, %s "
                 "direct and opbench's default in turn (reversed every other round); each side's figure is its "
                 "fastest round (a round: the median of its repeats), since the host's slow windows only slow "
                 "rounds down; where opbench's default is faster than the search's pick in the rounds, the default is "
                 "the best; the geomeans of the rounds' medians are printed too\n",
                 rounds, rounds_text, gpu_vs ? "" : "oneDNN's Winograd, ", bname);
        else if (base)
          printf("final figures: one measurement per side (--rounds 1), not interleaved\n");
        print_vs_header(base ? bname : NULL);
      }
      print_vs_row(i, e);
      fflush(stdout);
    }
    if (e->res.error_no == OB_MERR_NONE && e->res.gflops > 0) {
      nok++;
      logsum += log(e->res.gflops);
      total_ms += (double)e->count * e->res.timing.median_s * 1e3;
      if (e->res.timing.noisy) nnoisy++;
      if (e->res.timing.below_resolution) nbelow++;
      if (e->res.timing.emulated) nemu++;
    } else {
      nfail++;
    }
    if (!a->json && !wide) {
      /* The heading waits for the first result, so that a failure to measure
       * at all (no compiler) leaves stdout empty. */
      if (i == 0) {
        printf("suite %s: %d workloads, default configs, target %s, %d thread(s), number %s, "
               "repeat %d, %s caches, max CV %g %%\n",
               strcmp(file, "resnet18") == 0 ? "resnet18 (built in)" : file, n, ob_target_str(target),
               a->mo.nthreads, number_text, asked.repeat, asked.flush ? "cold" : "warm",
               asked.max_cv * 100);
        if (tnote) printf("device: %s\n", tnote);
        print_header();
      }
      print_row(i, e, true);
      fflush(stdout);
    }
  }
  double geomean = nok ? exp(logsum / nok) : 0;

  if (a->json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "suite", file);
    cJSON_AddStringToObject(root, "target", ob_target_str(target));
    if (tnote) {
      cJSON_AddStringToObject(root, "timing_note", tnote);
      cJSON_AddBoolToObject(root, "cpu_timings", ob_target_get_facts(target)->gpu.cpu_device);
    }
    cJSON_AddNumberToObject(root, "threads", a->mo.nthreads);
    cJSON_AddNumberToObject(root, "number", asked.number); /* 0: adaptive; each workload says what it used */
    cJSON_AddNumberToObject(root, "repeat", asked.repeat);
    cJSON_AddNumberToObject(root, "min_repeat_ms", asked.min_repeat_ms);
    cJSON_AddBoolToObject(root, "flush", asked.flush);
    cJSON_AddNumberToObject(root, "max_cv", asked.max_cv);
    cJSON_AddNumberToObject(root, "max_offcpu", asked.max_offcpu);
    if (base) cJSON_AddNumberToObject(root, "rounds", rounds);
    if (nmed) {
      cJSON_AddNumberToObject(root, "geomean_ratio_best_round_medians", exp(log_med / nmed));
      cJSON_AddNumberToObject(root, "geomean_ratio_vendor_best_round_medians", exp(log_med_vb / nmed));
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "workloads");
    for (int i = 0; i < n; i++) {
      const bench_entry *e = &es[i];
      char key[256];
      ob_workload_key(&e->wl, key, sizeof key);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "line", e->line);
      cJSON_AddStringToObject(o, "op", e->op);
      cJSON_AddStringToObject(o, "shape", e->shape);
      if (e->stride[0]) cJSON_AddNumberToObject(o, "stride", atof(e->stride));
      if (e->pad[0]) cJSON_AddNumberToObject(o, "pad", atof(e->pad));
      cJSON_AddNumberToObject(o, "count", (double)e->count);
      cJSON_AddStringToObject(o, "workload", key);
      cJSON_AddStringToObject(o, "template", ob_task_template(e->task));
      ob_config cfg = ob_task_default_config(e->task);
      char *cj = NULL;
      if (ob_config_to_json(ctx, &cfg, &cj) == OB_OK) {
        cJSON *c = cJSON_Parse(cj);
        if (c) cJSON_AddItemToObject(o, "config", c);
      }
      free(cj);
      cJSON_AddNumberToObject(o, "error_no", e->res.error_no);
      cJSON_AddStringToObject(o, "error", ob_merr_str(e->res.error_no));
      cJSON_AddStringToObject(o, "message", e->res.message);
      cJSON_AddNumberToObject(o, "gflops", e->res.gflops);
      cJSON_AddNumberToObject(o, "median_ms", e->res.timing.median_s * 1e3);
      cJSON_AddNumberToObject(o, "mean_ms", e->res.timing.mean_s * 1e3);
      cJSON_AddNumberToObject(o, "cv", e->res.timing.cv);
      cJSON *costs = cJSON_AddArrayToObject(o, "costs_ms");
      for (int k = 0; k < e->res.timing.ncosts; k++)
        cJSON_AddItemToArray(costs, cJSON_CreateNumber(e->res.timing.costs[k] * 1e3));
      if (e->res.error_no == OB_MERR_NONE) cli_timing_json(o, &e->res.timing);
      cJSON_AddNumberToObject(o, "build_s", e->res.build_s);
      if (e->searched) {
        cJSON_AddNumberToObject(o, "best_gflops", e->best.gflops);
        cJSON_AddNumberToObject(o, "best_median_ms", e->best.timing.median_s * 1e3);
        cJSON_AddStringToObject(o, "best_template", e->best_tmpl);
        cJSON_AddBoolToObject(o, "default_kept", e->dflt_kept);
        cJSON_AddStringToObject(o, "best_config", e->best_cfg);
        cJSON_AddNumberToObject(o, "search_s", e->search_s);
        cJSON_AddNumberToObject(o, "configs_measured", e->measured);
        cJSON_AddNumberToObject(o, "templates_searched", e->searched_tmpls);
        cJSON_AddNumberToObject(o, "defaults_remeasured", e->dflt_remeasured);
      }
      if (e->searched) {
        cJSON_AddNumberToObject(o, "best_rtol", e->best_tol.rtol);
        cJSON_AddNumberToObject(o, "best_atol", e->best_tol.atol);
      }
      if (e->have_base) {
        char k1[64], k2[64], k3[64], k4[64], k5[64];
        snprintf(k1, sizeof k1, "%s_error_no", bname);
        snprintf(k2, sizeof k2, "%s_gflops", bname);
        snprintf(k3, sizeof k3, "%s_median_ms", bname);
        snprintf(k4, sizeof k4, "%s_impl", bname);
        snprintf(k5, sizeof k5, "%s_timing", bname);
        cJSON_AddNumberToObject(o, k1, e->base.error_no);
        cJSON_AddNumberToObject(o, k2, e->base.gflops);
        cJSON_AddNumberToObject(o, k3, e->base.timing.median_s * 1e3);
        if (e->base.error_no == OB_MERR_NONE) {
          cJSON *bt = cJSON_AddObjectToObject(o, k5);
          cli_timing_json(bt, &e->base.timing);
        }
        cJSON_AddStringToObject(o, k4, e->base.impl);
        cJSON_AddNumberToObject(o, "ratio_best", ratio(&e->best, &e->base));
        cJSON_AddNumberToObject(o, "ratio_default", ratio(&e->res, &e->base));
        const ob_baseline_result *vb = vendor_best(e);
        cJSON_AddNumberToObject(o, "ratio_vendor_best", vb ? ratio(&e->best, vb) : 0);
      }
      if (e->have_wino) {
        cJSON_AddNumberToObject(o, "onednn_winograd_error_no", e->wino.error_no);
        cJSON_AddNumberToObject(o, "onednn_winograd_gflops", e->wino.gflops);
        cJSON_AddNumberToObject(o, "onednn_winograd_median_ms", e->wino.timing.median_s * 1e3);
        if (e->wino.error_no == OB_MERR_NONE) {
          cJSON *wt = cJSON_AddObjectToObject(o, "onednn_winograd_timing");
          cli_timing_json(wt, &e->wino.timing);
        }
        cJSON_AddStringToObject(o, "onednn_winograd_impl", e->wino.impl);
        cJSON_AddNumberToObject(o, "ratio_winograd", ratio(&e->best, &e->wino));
      }
      if (e->nrounds) { /* the round figures the final medians come from */
        cJSON_AddNumberToObject(o, "rounds", e->nrounds);
        cJSON *ro = cJSON_AddObjectToObject(o, "round_ms");
        static const char *const side[4] = {"best", "baseline", "default", "baseline_winograd"};
        for (int k = 0; k < 4; k++) {
          if (!e->round_n[k]) continue;
          cJSON *arr2 = cJSON_AddArrayToObject(ro, side[k]);
          for (int r = 0; r < e->round_n[k]; r++) cJSON_AddItemToArray(arr2, cJSON_CreateNumber(e->round_ms[k][r]));
        }
      }
      cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddNumberToObject(root, "geomean_gflops", geomean);
    cJSON_AddNumberToObject(root, "total_weighted_ms", total_ms);
    cJSON_AddNumberToObject(root, "failed", nfail);
    cJSON_AddNumberToObject(root, "noisy", nnoisy);
    cJSON_AddNumberToObject(root, "below_resolution", nbelow);
    cJSON_AddNumberToObject(root, "emulated", nemu); /* workloads timed under an emulator */
    if (base) {
      cJSON_AddNumberToObject(root, "geomean_ratio_vendor_best", nvb ? exp(log_vb / nvb) : 0);
      cJSON_AddNumberToObject(root, "geomean_ratio_best", nratio ? exp(log_best / nratio) : 0);
      cJSON_AddNumberToObject(root, "geomean_ratio_default", nratio ? exp(log_dflt / nratio) : 0);
      if (worst_vb >= 0) cJSON_AddNumberToObject(root, "worst_vendor_best_line", es[worst_vb].line);
    }
    if (!(json = cJSON_Print(root))) {
      cli_error("out of memory printing JSON");
      goto done;
    }
    printf("%s\n", json);
  } else {
    printf("total weighted latency (sum of count x median): %.3f ms%s\n", total_ms,
           nfail ? " (failed workloads excluded)" : "");
    if (nnoisy)
      printf("noisy: %d workload(s) kept a CV above %g %% after the stability rule's extra "
             "repeats (flag 'noisy')\n",
             nnoisy, asked.max_cv * 100);
    if (nbelow)
      printf("resolution: %d workload(s) have a median below 10x the timer overhead (flag "
             "'res')\n",
             nbelow);
    if (nemu)
      printf("emulated: %d workload(s) ran under the target's emulator (flag 'emu'): checked "
             "against the reference, but their times and GFLOPS are not performance figures\n",
             nemu);
    printf("geomean GFLOPS (default configs): %.2f\n", geomean);
    if (base) {
      if (worst_dnn >= 0) {
        const bench_entry *w = &es[worst_dnn];
        printf("worst layer vs %s direct: #%d %s %s stride %s pad %s: %.3f (%s)\n", bname, worst_dnn + 1, w->op,
               w->shape, w->stride[0] ? w->stride : "-", w->pad[0] ? w->pad : "-", ratio(&w->best, &w->base),
               w->best_tmpl);
      }
      if (worst_vb >= 0) {
        const bench_entry *w = &es[worst_vb];
        const ob_baseline_result *vb = vendor_best(w);
        printf("worst layer vs vendor best: #%d %s %s stride %s pad %s: %.3f (%s against %s %s)\n", worst_vb + 1,
               w->op, w->shape, w->stride[0] ? w->stride : "-", w->pad[0] ? w->pad : "-", ratio(&w->best, vb),
               w->best_tmpl, bname, vb == &w->wino ? "winograd" : "direct");
      }
      if (nmed)
        printf("on the rounds' medians instead of their fastest: geomean opbench/vendor-best %.3f, "
               "opbench/%s %.3f\n",
               exp(log_med_vb / nmed), bname, exp(log_med / nmed));
      printf("geomean speed ratio opbench/vendor-best: %.3f%s\n", nvb ? exp(log_vb / nvb) : 0,
             nvb < n ? " (workloads where either side failed excluded)" : "");
      printf("geomean speed ratio opbench/%s: %.3f (default: %.3f)%s\n", bname,
             nratio ? exp(log_best / nratio) : 0, nratio ? exp(log_dflt / nratio) : 0,
             nratio < n ? " (workloads where either side failed excluded)" : "");
    }
  }
  fflush(stdout);
  if (nfail) {
    cli_error("%d of %d workloads failed (see the error column)", nfail, n);
    goto done;
  }
  rc = 0;

done:
  cJSON_free(json);
  cJSON_Delete(root);
  for (int i = 0; i < n; i++) {
    ob_task_free(es[i].task);
    ob_task_free(es[i].best_task);
  }
  free(es);
  free(se);
  if (fleet) ob_fleet_client_free(fleet); /* owns its measurer */
  else ob_measurer_free(measurer);
  ob_runner_free(runner);
  ob_baseline_free(base);
  ob_target_free(target);
  return rc;
}
