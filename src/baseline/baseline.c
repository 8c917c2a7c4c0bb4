/* baseline.c: the library-independent half of the baselines: the problem
 * a workload describes (sizes, epilogue, arguments in kernel order), the
 * checker (the workload's ob_task: the operators' fill, reference and
 * tolerance), and the ob_baseline handle's dispatch. Nothing here is a copy
 * of what ops or kernel do: workloads are validated by ob_task_new, the
 * epilogue is parsed by ob_epilogue_parse, timing options are normalised by
 * ob_timing_normalize with the target's floor (as ob_timing_resolve does)
 * and timed by ob_time_loop. The handle owns its
 * implementation (vt->free); results are plain structs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline/baseline_impl.h"

static const char k_supported[] =
    "conv2d, depthwise_conv2d, dense, batch_matmul, pool2d, global_avg_pool";

/* ---- problems ---------------------------------------------------------- */
/* The workload was validated by ob_task_new (positive sizes, non-empty
 * output, groups dividing C and K, windows not wholly in the padding...),
 * so these only read sizes and lay out the arguments the way ops does. */

static int64_t get(const ob_workload *wl, const char *name) { return ob_workload_get(wl, name); }

bool ob_bl_problem_has(const ob_bl_problem *p, ob_epi step) { return ob_epilogue_has(&p->epi, step); }

int ob_bl_problem_arg(const ob_bl_problem *p, ob_bl_role role) {
  for (int i = 0; i < p->nargs; i++)
    if (p->args[i].role == role) return i;
  return -1;
}

static void add_arg(ob_bl_problem *p, const char *name, ob_bl_role role, int64_t numel) {
  OB_ASSERT(p->nargs < OB_BL_MAX_ARGS);
  p->args[p->nargs++] = (ob_bl_arg){name, role, numel, role != OB_BL_OUTPUT};
}

/* The epilogue's arguments (bias [chans], residual like the output), then
 * the output, as ob_epilogue_args orders them. */
static void add_tail(ob_bl_problem *p, int64_t chans, int64_t out_numel) {
  if (ob_bl_problem_has(p, OB_EPI_BIAS)) add_arg(p, "bias", OB_BL_BIAS, chans);
  if (ob_bl_problem_has(p, OB_EPI_ADD)) add_arg(p, "residual", OB_BL_RESIDUAL, out_numel);
  add_arg(p, "output", OB_BL_OUTPUT, out_numel);
}

static void init_conv(const ob_workload *wl, ob_bl_problem *p) {
  bool dw = !strcmp(wl->op, "depthwise_conv2d");
  p->kind = OB_BL_CONV2D;
  p->n = get(wl, "N"), p->c = get(wl, "C"), p->h = get(wl, "H"), p->w = get(wl, "W");
  p->k = dw ? p->c : get(wl, "K"), p->r = get(wl, "R"), p->s = get(wl, "S");
  p->sh = get(wl, "stride_h"), p->sw = get(wl, "stride_w");
  p->pt = get(wl, "pad_t"), p->pl = get(wl, "pad_l"), p->pb = get(wl, "pad_b"), p->pr = get(wl, "pad_r");
  p->dh = get(wl, "dil_h"), p->dw = get(wl, "dil_w");
  p->g = dw ? p->c : get(wl, "groups");
  p->oh = (p->h + p->pt + p->pb - p->dh * (p->r - 1) - 1) / p->sh + 1;
  p->ow = (p->w + p->pl + p->pr - p->dw * (p->s - 1) - 1) / p->sw + 1;
  int64_t cg = p->c / p->g;
  p->flops = 2.0 * (double)(p->n * p->k * p->oh * p->ow) * (double)(cg * p->r * p->s);
  add_arg(p, "data", OB_BL_DATA, p->n * p->c * p->h * p->w);
  add_arg(p, "weight", OB_BL_WEIGHT, p->k * cg * p->r * p->s);
  add_tail(p, p->k, p->n * p->k * p->oh * p->ow);
}

static void init_matmul(const ob_workload *wl, ob_bl_problem *p) {
  bool dense = !strcmp(wl->op, "dense");
  p->kind = OB_BL_MATMUL;
  p->batch = dense ? 1 : get(wl, "B");
  p->m = get(wl, "M"), p->nn = get(wl, "N"), p->kk = get(wl, "K");
  p->flops = 2.0 * (double)p->batch * (double)p->m * (double)p->nn * (double)p->kk;
  add_arg(p, "A", OB_BL_DATA, p->batch * p->m * p->kk);
  add_arg(p, "B", OB_BL_WEIGHT, p->batch * p->nn * p->kk);
  add_tail(p, p->nn, p->batch * p->m * p->nn);
}

/* pool2d as src/ops/pool.c defines it: mode 0 max, 1 average; incl_pad
 * picks the average's divisor (0: in-bounds elements, 1: R*S). */
static void init_pool(const ob_workload *wl, ob_bl_problem *p) {
  bool global = !strcmp(wl->op, "global_avg_pool");
  p->kind = OB_BL_POOL2D;
  p->n = get(wl, "N"), p->c = get(wl, "C"), p->h = get(wl, "H"), p->w = get(wl, "W");
  int64_t mode = 1, incl = 0;
  if (global) {
    p->r = p->h, p->s = p->w, p->sh = p->sw = 1, p->pt = p->pl = p->pb = p->pr = 0;
  } else {
    p->r = get(wl, "R"), p->s = get(wl, "S");
    p->sh = get(wl, "stride_h"), p->sw = get(wl, "stride_w");
    p->pt = get(wl, "pad_t"), p->pl = get(wl, "pad_l"), p->pb = get(wl, "pad_b"), p->pr = get(wl, "pad_r");
    mode = get(wl, "mode"), incl = get(wl, "incl_pad");
  }
  p->pool = mode == 0 ? OB_BL_POOL_MAX : incl ? OB_BL_POOL_AVG_INCLUDE : OB_BL_POOL_AVG_EXCLUDE;
  p->dh = p->dw = 1, p->g = 1, p->k = p->c;
  p->oh = (p->h + p->pt + p->pb - p->r) / p->sh + 1;
  p->ow = (p->w + p->pl + p->pr - p->s) / p->sw + 1;
  p->flops = (double)(p->n * p->c * p->oh * p->ow) * (double)(p->r * p->s);
  add_arg(p, "data", OB_BL_DATA, p->n * p->c * p->h * p->w);
  add_arg(p, "output", OB_BL_OUTPUT, p->n * p->c * p->oh * p->ow);
}

ob_status ob_bl_problem_init(const ob_workload *wl, ob_bl_problem *p, char *msg, size_t cap) {
  memset(p, 0, sizeof *p);
  msg[0] = 0;
  const char *op = wl->op;
  int kind = !strcmp(op, "conv2d") || !strcmp(op, "depthwise_conv2d")  ? OB_BL_CONV2D
             : !strcmp(op, "dense") || !strcmp(op, "batch_matmul")    ? OB_BL_MATMUL
             : !strcmp(op, "pool2d") || !strcmp(op, "global_avg_pool") ? OB_BL_POOL2D
                                                                       : -1;
  if (kind < 0) {
    snprintf(msg, cap, "operator '%s' is not supported (supported: %s)", op, k_supported);
    return OB_ERR_UNSUPPORTED;
  }
  if (wl->dtype != OB_F32) {
    snprintf(msg, cap, "%s: dtype %s is not supported (float32 only)", op, ob_dtype_name(wl->dtype));
    return OB_ERR_UNSUPPORTED;
  }
  char epi[sizeof wl->epilogue + 1];
  snprintf(epi, sizeof epi, "%.*s", (int)sizeof wl->epilogue, wl->epilogue);
  if (ob_epilogue_parse(NULL, epi, &p->epi) != OB_OK) { /* ops accepted it: not reached */
    snprintf(msg, cap, "%s: malformed epilogue '%s'", op, epi);
    return OB_ERR_INVALID_ARG;
  }
  for (int i = 1; i < p->epi.n; i++)
    if (p->epi.step[i] == OB_EPI_BIAS) {
      /* the libraries add bias before every post-op */
      snprintf(msg, cap, "epilogue '%s': bias after another step is not supported (bias must come first)", epi);
      return OB_ERR_UNSUPPORTED;
    }
  if (kind == OB_BL_POOL2D && p->epi.n) { /* ops refuses it too */
    snprintf(msg, cap, "%s takes no epilogue (got '%s')", op, epi);
    return OB_ERR_UNSUPPORTED;
  }
  if (kind == OB_BL_CONV2D) init_conv(wl, p);
  else if (kind == OB_BL_MATMUL) init_matmul(wl, p);
  else init_pool(wl, p);
  return OB_OK;
}

/* ---- checker ----------------------------------------------------------- */

/* The task takes exactly the arguments we feed. */
static bool task_matches(const ob_task *t, const ob_bl_problem *p) {
  if (ob_task_num_args(t) != p->nargs) return false;
  for (int i = 0; i < p->nargs; i++)
    if (ob_task_arg_bytes(t, i) != (size_t)p->args[i].numel * sizeof(float) ||
        ob_task_arg_is_input(t, i) != p->args[i].is_input)
      return false;
  return true;
}

ob_status ob_bl_checker_init(ob_ctx *ctx, const ob_workload *wl, const ob_bl_problem *p,
                             uint64_t seed, ob_bl_checker *ck) {
  memset(ck, 0, sizeof *ck);
  ck->seed = seed;
  ck->winograd = p->winograd;
  /* The reference, fill and check do not depend on the template: any one
   * that can define the workload's space will do (the default first). */
  const char *names[8];
  int nt = ob_op_templates(wl->op, names, 8);
  ob_status st = OB_ERR_UNSUPPORTED;
  for (int i = 0; i < nt && i < 8; i++) {
    ob_task *t = NULL;
    st = ob_task_new(ctx, wl, names[i], NULL, &t);
    if (st == OB_ERR_NOMEM) return st;
    if (st == OB_OK && task_matches(t, p)) {
      ck->task = t;
      return OB_OK;
    }
    ob_task_free(t);
  }
  return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                 "baseline: opbench has no task for %s taking the baseline's arguments%s%s",
                 wl->op, st ? ": " : "", st ? ob_ctx_errmsg(ctx) : "");
}

void ob_bl_checker_fill(ob_bl_checker *ck, void *const *bufs) { ob_task_fill(ck->task, ck->seed, bufs); }

ob_status ob_bl_checker_check(ob_bl_checker *ck, void *const *bufs, char *msg, size_t cap) {
  return ob_task_check_tol(ck->task, ck->seed, bufs, ck->winograd ? ob_winograd_tolerance(0) : ob_tolerance_default(),
                           msg, cap);
}

void ob_bl_checker_clear(ob_bl_checker *ck) {
  ob_task_free(ck->task);
  memset(ck, 0, sizeof *ck);
}

/* ---- the handle -------------------------------------------------------- */

void ob_baseline_free(ob_baseline *b) {
  if (!b) return;
  if (b->vt && b->self) b->vt->free(b->self);
  free(b);
}

const char *ob_baseline_name(const ob_baseline *b) { return b->vt->name; }
const char *ob_baseline_describe(const ob_baseline *b) { return b->vt->describe(b->self); }

/* The Winograd algorithm is asked of plain convolutions only (the library
 * has none for depthwise, grouped or other operators). */
static bool bl_winograd(const ob_workload *wl, ob_bl_problem *p, char *msg, size_t cap) {
  if (p->kind == OB_BL_CONV2D && p->g == 1) {
    p->winograd = true;
    return true;
  }
  snprintf(msg, cap, "%s: no Winograd algorithm (plain convolutions only)", wl->op);
  return false;
}

ob_status ob_baseline_measure(ob_baseline *b, const ob_workload *wl, const ob_timing_opts *timing,
                              uint64_t seed, ob_baseline_result *out) {
  return ob_baseline_measure_alg(b, wl, OB_BASELINE_ALG_DIRECT, timing, seed, out);
}

ob_status ob_baseline_measure_alg(ob_baseline *b, const ob_workload *wl, ob_baseline_alg alg,
                                  const ob_timing_opts *timing, uint64_t seed, ob_baseline_result *out) {
  OB_ASSERT(b && wl && out && alg >= 0 && alg < OB_BASELINE_ALG_COUNT);
  memset(out, 0, sizeof *out);
  double t0 = ob_now_s();
  ob_timing_opts t = ob_timing_normalize(timing, b->floor_ms);
  if (b->timer_overhead_s <= 0) b->timer_overhead_s = ob_timer_overhead();
  t.timer_overhead_s = b->timer_overhead_s;
  ob_bl_problem p;
  char msg[sizeof out->message];
  ob_status st = OB_OK;
  if (ob_workload_validate(b->ctx, wl) != OB_OK) { /* what ops refuses, the baselines too */
    out->error_no = OB_MERR_INSTANTIATION;
    snprintf(out->message, sizeof out->message, "%s: %.480s", b->vt->name, ob_ctx_errmsg(b->ctx));
    ob_ctx_clear_error(b->ctx);
  } else if (ob_bl_problem_init(wl, &p, msg, sizeof msg) != OB_OK ||
             (alg == OB_BASELINE_ALG_WINOGRAD && !bl_winograd(wl, &p, msg, sizeof msg))) {
    out->error_no = OB_MERR_INSTANTIATION;
    snprintf(out->message, sizeof out->message, "%s: %.480s", b->vt->name, msg);
  } else {
    out->flops = p.flops;
    st = b->vt->measure(b->self, wl, &p, &t, seed, out);
    if (!st && out->error_no == OB_MERR_NONE && out->timing.median_s > 0)
      out->gflops = out->flops / out->timing.median_s * 1e-9;
  }
  out->run_s = ob_now_s() - t0;
  return st;
}

/* ---- primitives ----------------------------------------------------------- */

ob_status ob_baseline_prim_new(ob_baseline *b, const ob_workload *wl, int want_block, bool b_kn,
                               const void *const *consts, ob_baseline_prim **out) {
  OB_ASSERT(b && wl && out);
  *out = NULL;
  ob_status st = ob_workload_validate(b->ctx, wl);
  if (st) return st;
  ob_bl_problem p;
  char msg[512];
  if (ob_bl_problem_init(wl, &p, msg, sizeof msg) != OB_OK)
    return ob_fail(b->ctx, OB_ERR_UNSUPPORTED, "%s: %s", b->vt->name, msg);
  if (b_kn && strcmp(wl->op, "batch_matmul"))
    return ob_fail(b->ctx, OB_ERR_INVALID_ARG, "%s: B as [B, K, N] is for batch_matmul only", b->vt->name);
  if (!b->vt->prim_new)
    return ob_fail(b->ctx, OB_ERR_UNSUPPORTED, "%s: no primitives on caller memory", b->vt->name);
  return b->vt->prim_new(b->self, wl, &p, want_block, b_kn, consts, out);
}

void ob_baseline_prim_free(ob_baseline_prim *p) {
  if (p) p->free(p);
}
int ob_baseline_prim_data_block(const ob_baseline_prim *p) { return p->data_block; }
int ob_baseline_prim_out_block(const ob_baseline_prim *p) { return p->out_block; }
const char *ob_baseline_prim_impl(const ob_baseline_prim *p) { return p->impl; }
int ob_baseline_prim_run(ob_baseline_prim *p, void *const *bufs) { return p->run(p, bufs); }

void ob_baseline_enter(ob_baseline *b) {
  if (b->vt->enter) b->vt->enter(b->self);
}
void ob_baseline_leave(ob_baseline *b) {
  if (b->vt->leave) b->vt->leave(b->self);
}
