/* bench.c: `opbench bench`: reads a suite (suite.c: a list of workloads
 * taken from a real model, refused whole on the first malformed line), then
 * measures the default config of every workload and prints a table plus the
 * geometric mean of GFLOPS and the count-weighted total latency. The
 * suite's entries and their tasks belong to this file and are freed on
 * every path.
 * --search finds each workload's best config over all templates of its
 * operator (ob_search_best); --vs onednn measures oneDNN (--vs cudnn:
 * cuDNN and cuBLAS on a CUDA GPU) on the same workloads in the same run
 * and prints speed ratios (the library's time /
 * opbench time). */
#include "cli.h"

#include "opbench/baseline.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sched.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_entry {
  int line;
  char op[32];
  char shape[128];
  char stride[24], pad[24]; /* "" when the line gives none */
  int64_t count;
  ob_workload wl;
  ob_task *task;
  ob_measure_result res;          /* default config of the default template */
  bool searched;
  ob_measure_result best;         /* best found (res when not searched) */
  char best_tmpl[64];
  char best_cfg[512];
  double search_s;
  int measured;
  bool have_base;
  ob_baseline_result base;
  char base_name[16];             /* "onednn", "cudnn" */
} bench_entry;

static void print_header(void) {
  printf("%3s %-8s %-36s %6s %6s %5s %10s %11s %7s %9s %7s %-9s  %s\n", "#", "workload", "shape",
         "stride", "pad", "count", "GFLOPS", "median ms", "CV %", "number", "repeats", "flags",
         "error");
}

static void print_vs_header(const char *vs) {
  printf("%3s %-16s %-34s %4s %3s %5s %9s %9s %9s %8s %8s %8s  %s\n", "#", "workload", "shape", "str", "pad",
         "count", "best", "default", vs ? vs : "-", vs ? "best/lib" : "-", vs ? "dflt/lib" : "-",
         "search s", "best template / config");
}

/* Speed ratio: baseline time / opbench time (> 1: opbench is faster). */
static double ratio(const ob_measure_result *r, const ob_baseline_result *b) {
  return r->error_no || b->error_no || r->timing.median_s <= 0
             ? 0
             : b->timing.median_s / r->timing.median_s;
}

static void print_vs_row(int i, const bench_entry *e) {
  printf("%3d %-16s %-34s %4s %3s %5lld", i + 1, e->op, e->shape, e->stride[0] ? e->stride : "-",
         e->pad[0] ? e->pad : "-", (long long)e->count);
  printf(" %9.2f %9.2f", e->best.error_no ? 0 : e->best.gflops, e->res.error_no ? 0 : e->res.gflops);
  if (e->have_base && !e->base.error_no)
    printf(" %9.2f %8.3f %8.3f", e->base.gflops, ratio(&e->best, &e->base), ratio(&e->res, &e->base));
  else if (e->have_base)
    printf(" %9s %8s %8s", "err", "-", "-");
  else
    printf(" %9s %8s %8s", "-", "-", "-");
  printf(" %8.1f  %s %s\n", e->search_s, e->best_tmpl, e->best_cfg);
  if (e->have_base && e->base.error_no)
    printf("    %s: error %d %s: %.200s\n", e->base_name, e->base.error_no, ob_merr_str(e->base.error_no), e->base.message);
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
  if (!cli_target(ctx, a, !a->dry_run, &target)) goto done;

  if (a->dry_run) {
    print_header();
    for (int i = 0; i < n; i++) print_row(i, &es[i], false);
    printf("%d workloads (not measured: --dry-run)\n", n);
    rc = 0;
    goto done;
  }

  for (int i = 0; i < n; i++) {
    if (ob_task_new(ctx, &es[i].wl, NULL, target, &es[i].task) != OB_OK) {
      cli_error("%s:%d: %s", file, es[i].line, ob_ctx_errmsg(ctx));
      goto done;
    }
  }
  if (a->build_only) {
    rc = bench_build_only(ctx, a, file, target, es, n);
    goto done;
  }
  char note[512];
  const char *tnote = cli_timing_note(target, note, sizeof note);
  if (ob_runner_new(ctx, &runner) != OB_OK) {
    cli_error("cannot start the runner: %s", ob_ctx_errmsg(ctx));
    goto done;
  }

  /* --vs onednn on the CPU; --vs cudnn (alias cublas) on a CUDA GPU:
   * cuDNN's convolutions and cuBLAS's matrix products */
  bool gpu_vs = a->vs && strcmp(a->vs, "onednn") != 0;
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
  int nok = 0, nfail = 0, nratio = 0, nnoisy = 0, nbelow = 0, nemu = 0;
  const ob_timing_opts asked = ob_timing_resolve(&a->mo.timing, target);
  char number_text[48];
  if (asked.number > 0) snprintf(number_text, sizeof number_text, "%d", asked.number);
  else snprintf(number_text, sizeof number_text, "adaptive (floor %g ms)", asked.min_repeat_ms);
  double logsum = 0, total_ms = 0, log_best = 0, log_dflt = 0;
  for (int i = 0; i < n; i++) {
    bench_entry *e = &es[i];
    ob_config cfg = ob_task_default_config(e->task);
    if (ob_measure_configs(ctx, e->task, runner, &a->mo, &cfg, 1, &e->res) != OB_OK) {
      cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
      goto done;
    }
    e->best = e->res;
    snprintf(e->best_tmpl, sizeof e->best_tmpl, "%s", ob_task_template(e->task));
    char *cs = ob_config_str(&cfg);
    snprintf(e->best_cfg, sizeof e->best_cfg, "%s", cs ? cs : "");
    free(cs);
    if (a->search_budget) {
      const char *names[8];
      int nt = ob_op_templates_for(e->op, target, names, 8);
      for (int t = 0; t < nt && t < 8; t++) {
        ob_task *tk = NULL;
        ob_search_result sr;
        ob_search_opts so = {.budget = a->search_budget, .seed = a->mo.seed + (uint64_t)i};
        if (ob_task_new(ctx, &e->wl, names[t], target, &tk) != OB_OK) {
          cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
          goto done;
        }
        ob_status st = ob_search_best(ctx, tk, runner, &a->mo, &so, &sr);
        if (st == OB_OK) {
          e->search_s += sr.seconds;
          e->measured += sr.measured;
          if (e->best.error_no || sr.best_result.timing.median_s < e->best.timing.median_s) {
            e->best = sr.best_result;
            snprintf(e->best_tmpl, sizeof e->best_tmpl, "%s", names[t]);
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
      double rb = ratio(&e->best, &e->base), rd = ratio(&e->res, &e->base);
      if (rb > 0 && rd > 0) {
        log_best += log(rb);
        log_dflt += log(rd);
        nratio++;
      }
    }
    if (wide && !a->json) {
      if (i == 0) {
        printf("suite %s: %d workloads, target %s, %d thread(s), number %s, repeat %d, %s caches, "
               "search %s, baseline %s%s%s\n",
               strcmp(file, "resnet18") == 0 ? "resnet18 (built in)" : file, n, ob_target_str(target),
               a->mo.nthreads, number_text, asked.repeat, asked.flush ? "cold" : "warm",
               a->search_budget ? "on" : "off",
               base ? ob_baseline_describe(base) : "none", a->search_budget ? "" : "",
               gpu_vs ? "; GFLOPS columns, ratios = cuDNN/cuBLAS time / opbench time"
                      : "; GFLOPS columns, ratios = oneDNN time / opbench time");
        if (tnote) printf("device: %s\n", tnote);
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
        cJSON_AddStringToObject(o, "best_config", e->best_cfg);
        cJSON_AddNumberToObject(o, "search_s", e->search_s);
        cJSON_AddNumberToObject(o, "configs_measured", e->measured);
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
      cJSON_AddNumberToObject(root, "geomean_ratio_best", nratio ? exp(log_best / nratio) : 0);
      cJSON_AddNumberToObject(root, "geomean_ratio_default", nratio ? exp(log_dflt / nratio) : 0);
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
    if (base)
      printf("geomean speed ratio opbench/%s: %.3f (default: %.3f)%s\n", bname,
             nratio ? exp(log_best / nratio) : 0, nratio ? exp(log_dflt / nratio) : 0,
             nratio < n ? " (workloads where either side failed excluded)" : "");
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
  for (int i = 0; i < n; i++) ob_task_free(es[i].task);
  free(es);
  free(se);
  ob_runner_free(runner);
  ob_baseline_free(base);
  ob_target_free(target);
  return rc;
}
