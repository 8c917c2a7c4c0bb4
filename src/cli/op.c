/* op.c: `opbench op` (build, check and time one variant of one operator)
 * and `opbench space` (show a template's config space). Each command owns
 * its task, runner and strings and frees them on every path. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Picks the config that the flags ask for: --config JSON, --config-index,
 * else the template's default. The ctx message names the flag at fault. */
static ob_status pick_config(ob_ctx *ctx, const ob_task *task, const cli_args *a,
                             ob_config *cfg) {
  ob_status st = OB_OK;
  const ob_space *space = ob_task_space(task);
  if (a->config_json) {
    st = ob_config_from_json(ctx, space, a->config_json, cfg);
    if (st) ob_fail_prefix(ctx, "--config");
  } else if (a->has_config_index) {
    st = ob_space_get(ctx, space, a->config_index, cfg);
    if (st) ob_fail_prefix(ctx, "--config-index %llu", (unsigned long long)a->config_index);
  } else {
    *cfg = ob_task_default_config(task);
  }
  return st;
}

/* What a GPU target's timings are: the device, and for an OpenCL CPU
 * device (PoCL) that they are CPU timings. NULL for CPU targets. */
const char *cli_timing_note(const ob_target *t, char *buf, size_t cap) {
  const ob_target_facts *f = ob_target_get_facts(t);
  if (f->kind == OB_TARGET_CPU) return NULL;
  if (f->gpu.cpu_device)
    snprintf(buf, cap, "%s on %s, a CPU device: these are CPU timings through %s, not GPU timings",
             f->gpu.device_name, f->gpu.platform_name[0] ? f->gpu.platform_name : "OpenCL",
             strstr(f->gpu.platform_name, "Portable") ? "PoCL" : "OpenCL");
  else
    snprintf(buf, cap, "%s%s%s (device timings: %s)", f->gpu.device_name, f->gpu.platform_name[0] ? " on " : "",
             f->gpu.platform_name, f->kind == OB_TARGET_CUDA ? "CUDA events" : "OpenCL profiling info");
  return buf;
}

static void print_launch(const ob_launch *l) {
  printf("launch     grid %lldx%lldx%lld, block %lldx%lldx%lld (%lld threads), %lld bytes of shared memory\n",
         (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2], (long long)l->block[0],
         (long long)l->block[1], (long long)l->block[2], (long long)(l->block[0] * l->block[1] * l->block[2]),
         (long long)l->shared_bytes);
}

static void json_launch(cJSON *root, const ob_launch *l) {
  cJSON *o = cJSON_AddObjectToObject(root, "launch");
  cJSON *g = cJSON_AddArrayToObject(o, "grid"), *b = cJSON_AddArrayToObject(o, "block");
  for (int k = 0; k < 3; k++) {
    cJSON_AddItemToArray(g, cJSON_CreateNumber((double)l->grid[k]));
    cJSON_AddItemToArray(b, cJSON_CreateNumber((double)l->block[k]));
  }
  cJSON_AddNumberToObject(o, "shared_bytes", (double)l->shared_bytes);
}

/* opbench op --build-only: instantiate, compile, check the launch; no run. */
static int op_build_only(ob_ctx *ctx, const cli_args *a, const ob_target *target, ob_task *task,
                         const ob_config *cfg, const char *cfg_str) {
  ob_build_report br;
  if (ob_build_configs(ctx, task, &a->mo, cfg, 1, &br) != OB_OK) return cli_error("%s", ob_ctx_errmsg(ctx));
  char key[256];
  ob_workload_key(ob_task_workload(task), key, sizeof key);
  bool gpu = ob_target_is_gpu(target);
  if (a->json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "op", a->op);
    cJSON_AddStringToObject(root, "workload", key);
    cJSON_AddStringToObject(root, "template", ob_task_template(task));
    cJSON_AddStringToObject(root, "target", ob_target_str(target));
    cJSON_AddStringToObject(root, "config_str", cfg_str);
    cJSON_AddNumberToObject(root, "config_index", (double)cfg->index);
    cJSON_AddBoolToObject(root, "build_only", true);
    cJSON_AddNumberToObject(root, "error_no", br.error_no);
    cJSON_AddStringToObject(root, "error", ob_merr_str(br.error_no));
    cJSON_AddStringToObject(root, "message", br.message);
    cJSON_AddNumberToObject(root, "build_s", br.build_s);
    cJSON_AddStringToObject(root, "artifact", br.path);
    if (gpu && !br.error_no) json_launch(root, &br.launch);
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
  } else {
    printf("workload   %s\n", key);
    printf("template   %s\n", ob_task_template(task));
    printf("target     %s\n", ob_target_str(target));
    printf("config     #%llu %s\n", (unsigned long long)cfg->index, cfg_str);
    printf("error      %d (%s)\n", br.error_no, ob_merr_str(br.error_no));
    if (!br.error_no) {
      if (gpu) print_launch(&br.launch);
      printf("artifact   %s%s\n", br.path, br.cached ? " (cached)" : "");
    }
    printf("build      %.3f s, not run (--build-only)\n", br.build_s);
  }
  fflush(stdout);
  if (br.error_no)
    return cli_error("config #%llu of %s failed to build: error %d (%s): %s", (unsigned long long)cfg->index, key,
                     br.error_no, ob_merr_str(br.error_no), br.message[0] ? br.message : "(no message)");
  return 0;
}

static void print_ms_list(const ob_measure_result *r) {
  for (int i = 0; i < r->timing.ncosts; i++)
    printf("%s%.4g", i ? " " : "", r->timing.costs[i] * 1e3);
}

int cli_cmd_op(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_target *target = NULL;
  ob_task *task = NULL;
  ob_runner *runner = NULL;
  ob_lowered *lowered = NULL;
  char *src = NULL, *kname = NULL, *ir = NULL, *cfg_json = NULL, *cfg_str = NULL;
  cJSON *root = NULL;
  char *text = NULL;
  ob_measure_result res;
  memset(&res, 0, sizeof res);

  if (!cli_target(ctx, a, true, &target)) goto done;
  if (!(task = cli_task(ctx, a, target))) goto done;
  ob_config cfg;
  if (pick_config(ctx, task, a, &cfg) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  cfg_str = ob_config_str(&cfg);
  if (!cfg_str) {
    cli_error("out of memory");
    goto done;
  }
  if (ob_config_to_json(ctx, &cfg, &cfg_json) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (a->print_source && ob_task_source(task, &cfg, &src, &kname) != OB_OK) {
    cli_error("generating C for config %s: %s", cfg_str, ob_ctx_errmsg(ctx));
    goto done;
  }
  if (a->print_ir) {
    if (ob_task_lower(task, &cfg, &lowered) != OB_OK) {
      cli_error("lowering config %s: %s", cfg_str, ob_ctx_errmsg(ctx));
      goto done;
    }
    ir = ob_lowered_str(lowered);
  }
  /* Text mode shows source and IR before measuring, so they are seen even
   * when the variant then crashes or hangs. */
  if (!a->json) {
    if (ir) printf("// ---- lowered loop nest ----\n%s\n", ir);
    if (src) printf("// ---- generated C: %s ----\n%s\n// ---- end of generated C ----\n", kname, src);
    fflush(stdout);
  }

  if (a->build_only) {
    rc = op_build_only(ctx, a, target, task, &cfg, cfg_str);
    goto done;
  }
  ob_launch launch;
  memset(&launch, 0, sizeof launch);
  bool gpu = ob_target_is_gpu(target);
  if (gpu) { /* the launch, for the report (a config that cannot launch fails below) */
    char *s2 = NULL, *n2 = NULL;
    if (ob_task_source_launch(task, &cfg, &s2, &n2, &launch) != OB_OK) ob_ctx_clear_error(ctx);
    free(s2);
    free(n2);
  }
  char note[512];
  const char *tnote = cli_timing_note(target, note, sizeof note);
  if (ob_runner_new(ctx, &runner) != OB_OK) {
    cli_error("cannot start the runner: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (ob_measure_configs(ctx, task, runner, &a->mo, &cfg, 1, &res) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }

  const ob_workload *wl = ob_task_workload(task);
  char key[256];
  ob_workload_key(wl, key, sizeof key);
  const ob_timing_opts asked = ob_timing_resolve(&a->mo.timing, target);
  const ob_timing *tm = &res.timing;
  if (a->json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "op", a->op);
    cJSON_AddStringToObject(root, "workload", key);
    cJSON_AddStringToObject(root, "template", ob_task_template(task));
    cJSON_AddStringToObject(root, "target", ob_target_str(target));
    if (tnote) {
      cJSON_AddStringToObject(root, "device", ob_target_get_facts(target)->gpu.device_name);
      cJSON_AddStringToObject(root, "timing_note", tnote);
      cJSON_AddBoolToObject(root, "cpu_timings", ob_target_get_facts(target)->gpu.cpu_device);
      json_launch(root, &launch);
    }
    cJSON *cj = cJSON_Parse(cfg_json);
    if (cj) cJSON_AddItemToObject(root, "config", cj);
    else cJSON_AddNullToObject(root, "config");
    cJSON_AddStringToObject(root, "config_str", cfg_str);
    cJSON_AddNumberToObject(root, "config_index", (double)cfg.index);
    cJSON_AddNumberToObject(root, "error_no", res.error_no);
    cJSON_AddStringToObject(root, "error", ob_merr_str(res.error_no));
    cJSON_AddStringToObject(root, "message", res.message);
    cJSON_AddNumberToObject(root, "median_ms", tm->median_s * 1e3);
    cJSON_AddNumberToObject(root, "mean_ms", tm->mean_s * 1e3);
    cJSON_AddNumberToObject(root, "cv", tm->cv);
    cJSON_AddNumberToObject(root, "gflops", res.gflops);
    cJSON *costs = cJSON_AddArrayToObject(root, "costs_ms");
    for (int i = 0; i < tm->ncosts; i++)
      cJSON_AddItemToArray(costs, cJSON_CreateNumber(tm->costs[i] * 1e3));
    cJSON_AddNumberToObject(root, "flops", ob_task_flops(task));
    ob_tolerance tol = ob_task_tolerance(task, &cfg);
    cJSON_AddNumberToObject(root, "check_rtol", tol.rtol);
    cJSON_AddNumberToObject(root, "check_atol", tol.atol);
    cJSON_AddNumberToObject(root, "threads", a->mo.nthreads);
    /* what was used (a failed run times nothing: the request then) */
    if (res.error_no == OB_MERR_NONE) {
      cli_timing_json(root, tm);
    } else {
      cJSON_AddNumberToObject(root, "number", asked.number);
      cJSON_AddNumberToObject(root, "repeat", asked.repeat);
      cJSON_AddNumberToObject(root, "min_repeat_ms", asked.min_repeat_ms);
      cJSON_AddBoolToObject(root, "flush", asked.flush);
    }
    cJSON_AddBoolToObject(root, "flush_keep_first", a->mo.flush_keep_first);
    cJSON_AddNumberToObject(root, "max_cv", asked.max_cv);
    cJSON_AddNumberToObject(root, "max_offcpu", asked.max_offcpu);
    cJSON_AddNumberToObject(root, "build_s", res.build_s);
    cJSON_AddNumberToObject(root, "run_s", res.run_s);
    if (src) cJSON_AddStringToObject(root, "source", src);
    if (ir) cJSON_AddStringToObject(root, "ir", ir);
    text = cJSON_Print(root);
    if (!text) {
      cli_error("out of memory printing JSON");
      goto done;
    }
    printf("%s\n", text);
  } else {
    printf("workload   %s\n", key);
    printf("template   %s\n", ob_task_template(task));
    printf("target     %s\n", ob_target_str(target));
    if (tnote) printf("device     %s\n", tnote);
    printf("config     #%llu %s\n", (unsigned long long)cfg.index, cfg_str);
    printf("config json %s\n", cfg_json);
    if (gpu && launch.gpu) print_launch(&launch);
    printf("error      %d (%s)\n", res.error_no, ob_merr_str(res.error_no));
    ob_tolerance tol = ob_task_tolerance(task, &cfg);
    printf("check      |got - ref| <= %.0e * |ref| + %.0e * sqrt(reduction) * max(max|ref|, 1) + 1e-6%s\n",
           tol.rtol, tol.atol, strstr(ob_task_template(task), "winograd") ? " (Winograd's own)" : "");
    if (res.error_no == OB_MERR_NONE) {
      printf("median     %.4g ms\n", tm->median_s * 1e3);
      printf("mean       %.4g ms\n", tm->mean_s * 1e3);
      printf("GFLOPS     %.2f%s\n", res.gflops,
             strstr(ob_task_template(task), "winograd") ? " (the direct convolution's nominal FLOPs)" : "");
      printf("CV         %.2f %%\n", tm->cv * 100.0);
      printf("costs ms   ");
      print_ms_list(&res);
      printf("\n");
      cli_timing_text(tm, &asked, a->mo.nthreads);
    } else {
      printf("timing     threads %d, number %d, repeat %d, min_repeat_ms %g, flush %s\n",
             a->mo.nthreads, asked.number, asked.repeat, asked.min_repeat_ms,
             asked.flush ? "on" : "off");
    }
    if (a->mo.flush_keep_first)
      printf("flush      every input but the first before each call (--flush-weights: the activation warm)\n");
    printf("build      %.3f s, run %.3f s\n", res.build_s, res.run_s);
  }
  fflush(stdout);
  if (res.error_no != OB_MERR_NONE) {
    cli_error("config #%llu of %s failed: error %d (%s): %s", (unsigned long long)cfg.index, key,
              res.error_no, ob_merr_str(res.error_no),
              res.message[0] ? res.message : "(no message)");
    goto done;
  }
  rc = 0;

done:
  cJSON_free(text);
  cJSON_Delete(root);
  free(src);
  free(kname);
  free(ir);
  free(cfg_json);
  free(cfg_str);
  ob_lowered_free(lowered);
  ob_runner_free(runner);
  ob_task_free(task);
  ob_target_free(target);
  return rc;
}

static const char *const kind_names[OB_KNOB_KIND_COUNT] = {"split", "reorder", "annotate",
                                                           "other"};
static const char *const ann_names[OB_ANN_COUNT] = {"none", "unroll", "vec"};

/* One entity as text: [-1,4,8], [0,2,1], [unroll,vec] or 4. */
static void print_entity(const ob_space *s, int k, int choice) {
  int64_t v[16];
  int n = ob_space_entity(s, k, choice, v, 16);
  ob_knob_kind kind = ob_space_knob_kind(s, k);
  if (kind == OB_KNOB_OTHER && n == 1) {
    printf("%lld", (long long)v[0]);
    return;
  }
  printf("[");
  for (int i = 0; i < n && i < 16; i++) {
    if (i) printf(",");
    if (kind == OB_KNOB_ANNOTATE && v[i] >= 0 && v[i] < OB_ANN_COUNT) printf("%s", ann_names[v[i]]);
    else printf("%lld", (long long)v[i]);
  }
  printf("]");
}

int cli_cmd_space(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  char *cfg_str = NULL, *cfg_json = NULL;
  ob_target *target = NULL;
  ob_task *task = NULL;
  if (!cli_target(ctx, a, false, &target) || !(task = cli_task(ctx, a, target))) goto done;
  const ob_space *s = ob_task_space(task);
  ob_config def = ob_task_default_config(task);
  cfg_str = ob_config_str(&def);
  if (!cfg_str) {
    cli_error("out of memory");
    goto done;
  }
  if (ob_config_to_json(ctx, &def, &cfg_json) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  char key[256];
  ob_workload_key(ob_task_workload(task), key, sizeof key);
  printf("workload   %s\n", key);
  printf("template   %s\n", ob_task_template(task));
  const ob_target_facts *tf = ob_target_get_facts(target);
  printf("target     %s (%s: %d float lanes, %d vector registers, %d for accumulators)\n",
         ob_target_str(target), ob_isa_name(tf->isa), tf->lanes_f32, tf->vector_registers,
         tf->accum_budget);
  printf("knobs      %d\n", ob_space_num_knobs(s));
  printf("  %-16s %-9s %9s  %s\n", "name", "kind", "entities", "first entities");
  enum { SHOW = 4 };
  for (int k = 0; k < ob_space_num_knobs(s); k++) {
    int len = ob_space_knob_len(s, k);
    printf("  %-16s %-9s %9d  ", ob_space_knob_name(s, k), kind_names[ob_space_knob_kind(s, k)],
           len);
    for (int c = 0; c < len && c < SHOW; c++) {
      if (c) printf(" ");
      print_entity(s, k, c);
    }
    if (len > SHOW) printf(" ...");
    printf("\n");
  }
  printf("space size %llu configs (the template's filter may reject some)\n",
         (unsigned long long)ob_space_len(s));
  printf("default    #%llu %s\n", (unsigned long long)def.index, cfg_str);
  printf("default json %s\n", cfg_json);
  rc = 0;
done:
  free(cfg_str);
  free(cfg_json);
  ob_task_free(task);
  ob_target_free(target);
  return rc;
}
