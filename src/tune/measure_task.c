/* measure_task.c: measuring configs of a task, AutoTVM's measure_batch
 * without its blind spots: every config is instantiated (lower + codegen),
 * the batch is compiled in parallel, and each variant's output is checked
 * against the reference before its time counts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/db.h"
#include "opbench/gpu.h"
#include "opbench/ops.h"
#include "opbench/tune.h"
#include "tune/tune_impl.h"

ob_measure_opts ob_measure_opts_default(void) {
  ob_measure_opts o;
  memset(&o, 0, sizeof o);
  o.timing = ob_timing_default();
  o.nthreads = 1;
  o.seed = 1;
  return o;
}

void ob_measure_result_to_record(const ob_measure_result *r, ob_db_record *rec) {
  OB_ASSERT(rec && r);
  rec->error_no = r->error_no;
  rec->error_msg = r->message;
  rec->timing = r->timing; /* number is what the runner used (issue 17) */
  if (r->error_no != 0) rec->timing.min_repeat_ms = NAN; /* nothing was timed */
  rec->all_costs = NULL;
  rec->nall_costs = 0;
  rec->build_s = r->build_s;
  rec->run_s = r->run_s;
}

ob_status ob_task_check_measurable(ob_ctx *ctx, struct ob_task *task) {
  /* natively, or under the target's emulator (the runner picks) */
  return ob_target_check_runnable(ctx, ob_task_target(task));
}

typedef struct check_ctx {
  ob_task *task;
  const ob_config *cfg;
  uint64_t seed;
  ob_status fill_st; /* a fill that failed (out of memory): the check reports it */
} check_ctx;

static void fill_cb(void *user, void *const *bufs) {
  check_ctx *c = user;
  c->fill_st = ob_task_fill_for(c->task, c->cfg, c->seed, bufs);
}

static ob_status check_cb(void *user, void *const *bufs, char *msg, size_t cap) {
  check_ctx *c = user;
  if (c->fill_st) { /* the inputs were never made: no answer can be right */
    snprintf(msg, cap, "filling the inputs failed: %s", ob_status_str(c->fill_st));
    return c->fill_st;
  }
  return ob_task_check_for(c->task, c->cfg, c->seed, bufs, msg, cap);
}

/* launch: a GPU kernel's (NULL for C kernels). */
static ob_status run_built(ob_runner *runner, ob_task *task, const ob_measure_opts *mo, const ob_config *cfg,
                           const char *so_path, const char *symbol, const ob_launch *launch,
                           ob_measure_result *r) {
  int nargs = ob_task_num_args(task);
  size_t bytes[16];
  bool is_in[16];
  OB_ASSERT(nargs <= 16);
  for (int a = 0; a < nargs; a++) {
    bytes[a] = ob_task_arg_bytes_for(task, cfg, a); /* the kernel's layout may pad */
    /* buf_is_input says which buffers the flush clears */
    is_in[a] = ob_task_arg_is_input(task, a) && !(a == 0 && mo->flush_keep_first);
  }
  check_ctx cc = {task, cfg, mo->seed, OB_OK};
  ob_run_request req = {
      .target = ob_task_target(task),
      .so_path = so_path,
      .launch = launch,
      .symbol = symbol,
      .nbufs = nargs,
      .buf_bytes = bytes,
      .buf_is_input = is_in,
      .cores = mo->cores,
      .nthreads = mo->nthreads > 0 ? mo->nthreads : 1,
      .timing = mo->timing,
      .fill = fill_cb,
      .check = check_cb,
      .user = &cc,
  };
  ob_run_result rr;
  ob_status st = ob_runner_run(runner, &req, &rr);
  if (st) return st;
  r->error_no = rr.error_no;
  snprintf(r->message, sizeof r->message, "%s", rr.message);
  r->run_s = rr.run_s;
  if (rr.error_no) return OB_OK;
  r->timing = rr.timing;
  r->timing.flush_keep_first = rr.timing.flush && mo->flush_keep_first;
  r->gflops = rr.timing.median_s > 0 ? ob_task_flops(task) / rr.timing.median_s / 1e9 : 0;
  return OB_OK;
}

ob_status ob_run_built(ob_runner *runner, ob_task *task, const ob_measure_opts *mo,
                       const ob_config *cfg, const char *so_path, const char *symbol,
                       ob_measure_result *r) {
  return run_built(runner, task, mo, cfg, so_path, symbol, NULL, r);
}

/* ---- GPU targets ----------------------------------------------------------------
 * Lowering (a config the template cannot apply: class 1), then
 * ob_kernel_build: the launch against the target's limits (class 1, named),
 * CUDA C through NVRTC (class 2 with its log) or OpenCL C for the device's
 * driver; then ob_runner_run with the launch (the GPU runner). */
static ob_status gpu_build_one(ob_ctx *ctx, ob_task *task, const ob_measure_opts *opts, const ob_config *cfg,
                               ob_kernel_artifact *a, int *error_no, char *msg, size_t cap) {
  memset(a, 0, sizeof *a);
  ob_lowered *f = NULL;
  ob_status st = ob_task_lower(task, cfg, &f);
  if (st == OB_ERR_NOMEM) return st;
  if (st) {
    *error_no = OB_MERR_INSTANTIATION;
    snprintf(msg, cap, "%s", ob_ctx_errmsg(ctx));
    return OB_OK;
  }
  char name[160];
  ob_task_kernel_name(task, cfg, name, sizeof name);
  const char *names[1] = {name};
  const ob_lowered *fns[1] = {f};
  st = ob_kernel_build(ctx, ob_task_target(task), &opts->build, fns, names, 1, a);
  ob_lowered_free(f);
  if (st) return st; /* no NVRTC, an unwritable cache: nothing can be built */
  if (a->error_no) {
    *error_no = a->error_no;
    snprintf(msg, cap, "%s%s", a->error_no == OB_MERR_COMPILE_HOST ? "NVRTC: " : "",
             a->message ? a->message : "build failed");
  }
  return OB_OK;
}

static ob_status measure_gpu(ob_ctx *ctx, ob_task *task, ob_runner *runner, const ob_measure_opts *opts,
                             const ob_config *cfgs, int n, ob_measure_result *out) {
  memset(out, 0, sizeof *out * (size_t)n);
  ob_status st = OB_OK;
  for (int i = 0; i < n && !st; i++) {
    ob_measure_result *r = &out[i];
    ob_kernel_artifact g;
    st = gpu_build_one(ctx, task, opts, &cfgs[i], &g, &r->error_no, r->message, sizeof r->message);
    r->build_s = g.build_s;
    if (!st && !r->error_no) st = run_built(runner, task, opts, &cfgs[i], g.so_path, g.symbol, &g.launch, r);
    ob_kernel_artifact_clear(&g);
  }
  return st;
}

ob_status ob_build_configs(ob_ctx *ctx, ob_task *task, const ob_measure_opts *opts, const ob_config *cfgs, int n,
                           ob_build_report *out) {
  memset(out, 0, sizeof *out * (size_t)n);
  const ob_target *t = ob_task_target(task);
  ob_status st = ob_target_check_buildable(ctx, t);
  if (st) return st;
  if (ob_target_is_gpu(t)) {
    for (int i = 0; i < n && !st; i++) {
      ob_kernel_artifact g;
      st = gpu_build_one(ctx, task, opts, &cfgs[i], &g, &out[i].error_no, out[i].message, sizeof out[i].message);
      out[i].launch = g.launch;
      out[i].build_s = g.build_s;
      out[i].cached = g.cached;
      if (g.so_path) snprintf(out[i].path, sizeof out[i].path, "%s", g.so_path);
      ob_kernel_artifact_clear(&g);
    }
    return st;
  }
  /* CPU targets: the same without running, through the builder */
  char **src = calloc((size_t)n + 1, sizeof *src), **names = calloc((size_t)n + 1, sizeof *names);
  ob_build_input *in = calloc((size_t)n + 1, sizeof *in);
  ob_build_result *br = calloc((size_t)n + 1, sizeof *br);
  int *slot = calloc((size_t)n + 1, sizeof *slot), nb = 0;
  if (!src || !names || !in || !br || !slot) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    st = ob_task_source(task, &cfgs[i], &src[i], &names[i]);
    if (st == OB_ERR_NOMEM) goto done;
    if (st) {
      out[i].error_no = OB_MERR_INSTANTIATION;
      snprintf(out[i].message, sizeof out[i].message, "%s", ob_ctx_errmsg(ctx));
      st = OB_OK;
      continue;
    }
    in[nb] = (ob_build_input){.source = src[i], .name = names[i]};
    slot[nb++] = i;
  }
  if (nb) {
    ob_build_opts bo = opts->build;
    bo.target = t;
    st = ob_build_batch(ctx, &bo, in, nb, br);
  }
  for (int b = 0; !st && b < nb; b++) {
    ob_build_report *r = &out[slot[b]];
    r->error_no = br[b].error_no;
    r->build_s = br[b].build_s;
    r->cached = br[b].cached;
    if (br[b].message) snprintf(r->message, sizeof r->message, "%s", br[b].message);
    if (br[b].so_path) snprintf(r->path, sizeof r->path, "%s", br[b].so_path);
  }
done:
  for (int i = 0; i < n && src && names; i++) {
    free(src[i]);
    free(names[i]);
  }
  for (int b = 0; br && b < nb; b++) ob_build_result_clear(&br[b]);
  free(src);
  free(names);
  free(in);
  free(br);
  free(slot);
  return st;
}

ob_status ob_measure_configs(ob_ctx *ctx, ob_task *task, ob_runner *runner,
                             const ob_measure_opts *opts, const ob_config *cfgs, int n,
                             ob_measure_result *out) {
  ob_status st = ob_task_check_measurable(ctx, task);
  if (st) return st;
  if (ob_target_is_gpu(ob_task_target(task))) return measure_gpu(ctx, task, runner, opts, cfgs, n, out);
  char **src = calloc((size_t)n, sizeof *src), **names = calloc((size_t)n, sizeof *names);
  ob_build_input *in = calloc((size_t)n, sizeof *in);
  ob_build_result *br = calloc((size_t)n, sizeof *br);
  int *slot = calloc((size_t)n, sizeof *slot);
  if (!src || !names || !in || !br || !slot) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  memset(out, 0, sizeof *out * (size_t)n);
  int nb = 0;
  for (int i = 0; i < n; i++) {
    st = ob_task_source(task, &cfgs[i], &src[i], &names[i]);
    if (st == OB_ERR_NOMEM) goto done; /* the machine's failure, not the config's */
    if (st) { /* the config cannot be turned into code: error 1 */
      out[i].error_no = OB_MERR_INSTANTIATION;
      snprintf(out[i].message, sizeof out[i].message, "%s", ob_ctx_errmsg(ctx));
      st = OB_OK;
      continue;
    }
    in[nb] = (ob_build_input){.source = src[i], .name = names[i]};
    slot[nb++] = i;
  }
  if (nb) {
    ob_build_opts bo = opts->build;
    bo.target = ob_task_target(task); /* the code was generated for it */
    st = ob_build_batch(ctx, &bo, in, nb, br);
    if (st) goto done;
  }
  for (int b = 0; b < nb; b++) {
    ob_measure_result *r = &out[slot[b]];
    r->build_s = br[b].build_s;
    if (br[b].error_no) {
      r->error_no = br[b].error_no;
      snprintf(r->message, sizeof r->message, "%s", br[b].message ? br[b].message : "build failed");
      continue;
    }
    st = ob_run_built(runner, task, opts, &cfgs[slot[b]], br[b].so_path, names[slot[b]], r);
    if (st) goto done;
  }
done:
  for (int i = 0; i < n && src && names; i++) {
    free(src[i]);
    free(names[i]);
  }
  for (int b = 0; br && b < n; b++) ob_build_result_clear(&br[b]);
  free(src);
  free(names);
  free(in);
  free(br);
  free(slot);
  return st;
}
