/* baseline.c: the library-independent half of the baselines: the problem
 * a workload describes (sizes, epilogue, arguments in kernel order), the
 * checker that reuses opbench's ob_task where one exists, the runner's
 * timing loop in-process, and the ob_baseline handle's dispatch. The
 * handle owns its implementation (vt->free); results are plain structs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "baseline/baseline_impl.h"

#define REQ INT64_MIN /* a required attribute */
#define NUMBER_MAX (1 << 30)

static const char k_supported[] =
    "conv2d, depthwise_conv2d, dense, batch_matmul, pool2d, global_avg_pool";

static int attr_index(const ob_workload *wl, const char *name) {
  for (int i = 0; i < wl->nattr && i < OB_WL_MAX_ATTRS; i++)
    if (!strncmp(wl->attr_name[i], name, sizeof wl->attr_name[i])) return i;
  return -1;
}

/* ---- problems ---------------------------------------------------------- */

typedef struct getter {
  const ob_workload *wl;
  char *msg;
  size_t cap;
  bool bad;
} getter;

/* The attribute, its default when absent (dflt != REQ), or a failure. */
static int64_t get(getter *g, const char *name, int64_t dflt) {
  int i = attr_index(g->wl, name);
  if (i >= 0 && g->wl->attr[i] != REQ) return g->wl->attr[i];
  if (dflt != REQ) return dflt;
  if (!g->bad) snprintf(g->msg, g->cap, "%s: missing attribute '%s'", g->wl->op, name);
  g->bad = true;
  return 1;
}

static ob_status parse_epilogue(const char *list, ob_bl_problem *p, char *msg, size_t cap) {
  static const char *const names[OB_BL_EPI_COUNT] = {"bias", "relu", "relu6", "add"};
  char buf[64];
  p->nepi = 0;
  if (strlen(list) >= sizeof buf) {
    snprintf(msg, cap, "epilogue '%s' is too long", list);
    return OB_ERR_INVALID_ARG;
  }
  strcpy(buf, list);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < OB_BL_EPI_COUNT && strcmp(tok, names[k])) k++;
    if (k == OB_BL_EPI_COUNT) {
      snprintf(msg, cap, "unknown epilogue step '%s' in '%s' (known: bias, relu, relu6, add)", tok, list);
      return OB_ERR_INVALID_ARG;
    }
    if (p->nepi == 8 || ((k == OB_BL_EPI_BIAS || k == OB_BL_EPI_ADD) && ob_bl_problem_has(p, (ob_bl_epi)k))) {
      snprintf(msg, cap, "epilogue '%s' repeats '%s' or has too many steps", list, tok);
      return OB_ERR_INVALID_ARG;
    }
    if (k == OB_BL_EPI_BIAS && p->nepi > 0) {
      /* the libraries add bias before every post-op */
      snprintf(msg, cap, "epilogue '%s': bias after another step is not supported (bias must come first)", list);
      return OB_ERR_UNSUPPORTED;
    }
    p->epi[p->nepi++] = (ob_bl_epi)k;
  }
  return OB_OK;
}

bool ob_bl_problem_has(const ob_bl_problem *p, ob_bl_epi step) {
  for (int i = 0; i < p->nepi; i++)
    if (p->epi[i] == step) return true;
  return false;
}

int ob_bl_problem_arg(const ob_bl_problem *p, ob_bl_role role) {
  for (int i = 0; i < p->nargs; i++)
    if (p->args[i].role == role) return i;
  return -1;
}

static void add_arg(ob_bl_problem *p, const char *name, ob_bl_role role, int64_t numel) {
  OB_ASSERT(p->nargs < OB_BL_MAX_ARGS);
  p->args[p->nargs++] = (ob_bl_arg){name, role, numel, role != OB_BL_OUTPUT};
}

static ob_status init_conv(getter *g, const char *op, ob_bl_problem *p) {
  bool dw = !strcmp(op, "depthwise_conv2d");
  p->kind = OB_BL_CONV2D;
  p->n = get(g, "N", REQ), p->c = get(g, "C", REQ), p->h = get(g, "H", REQ), p->w = get(g, "W", REQ);
  p->k = get(g, "K", dw ? 0 : REQ), p->r = get(g, "R", REQ), p->s = get(g, "S", REQ);
  p->sh = get(g, "stride_h", 1), p->sw = get(g, "stride_w", 1);
  p->pt = get(g, "pad_t", 0), p->pl = get(g, "pad_l", 0), p->pb = get(g, "pad_b", 0), p->pr = get(g, "pad_r", 0);
  p->dh = get(g, "dil_h", 1), p->dw = get(g, "dil_w", 1);
  if (dw && p->k == 0) p->k = p->c;
  p->g = dw ? p->c : get(g, "groups", 1);
  if (g->bad) return OB_ERR_INVALID_ARG;
  const int64_t pos[] = {p->n, p->c, p->h, p->w, p->k, p->r, p->s, p->sh, p->sw, p->dh, p->dw, p->g};
  const char *pos_names[] = {"N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "dil_h", "dil_w", "groups"};
  for (int i = 0; i < 12; i++)
    if (pos[i] < 1) {
      snprintf(g->msg, g->cap, "%s: %s must be >= 1 (got %lld)", op, pos_names[i], (long long)pos[i]);
      return OB_ERR_INVALID_ARG;
    }
  if (p->pt < 0 || p->pl < 0 || p->pb < 0 || p->pr < 0) {
    snprintf(g->msg, g->cap, "%s: padding must be >= 0", op);
    return OB_ERR_INVALID_ARG;
  }
  if (p->c % p->g || p->k % p->g) {
    snprintf(g->msg, g->cap, "%s: groups=%lld must divide C=%lld and K=%lld", op, (long long)p->g,
             (long long)p->c, (long long)p->k);
    return OB_ERR_INVALID_ARG;
  }
  p->oh = (p->h + p->pt + p->pb - p->dh * (p->r - 1) - 1) / p->sh + 1;
  p->ow = (p->w + p->pl + p->pr - p->dw * (p->s - 1) - 1) / p->sw + 1;
  if (p->h + p->pt + p->pb - p->dh * (p->r - 1) - 1 < 0 || p->w + p->pl + p->pr - p->dw * (p->s - 1) - 1 < 0) {
    snprintf(g->msg, g->cap, "%s: empty output for input %lldx%lld and kernel %lldx%lld", op,
             (long long)p->h, (long long)p->w, (long long)p->r, (long long)p->s);
    return OB_ERR_INVALID_ARG;
  }
  int64_t cg = p->c / p->g;
  p->flops = 2.0 * (double)(p->n * p->k * p->oh * p->ow) * (double)(cg * p->r * p->s);
  p->red = cg * p->r * p->s;
  add_arg(p, "data", OB_BL_DATA, p->n * p->c * p->h * p->w);
  add_arg(p, "weight", OB_BL_WEIGHT, p->k * cg * p->r * p->s);
  if (ob_bl_problem_has(p, OB_BL_EPI_BIAS)) add_arg(p, "bias", OB_BL_BIAS, p->k);
  if (ob_bl_problem_has(p, OB_BL_EPI_ADD)) add_arg(p, "residual", OB_BL_RESIDUAL, p->n * p->k * p->oh * p->ow);
  add_arg(p, "output", OB_BL_OUTPUT, p->n * p->k * p->oh * p->ow);
  return OB_OK;
}

static ob_status init_matmul(getter *g, const char *op, ob_bl_problem *p) {
  bool dense = !strcmp(op, "dense");
  p->kind = OB_BL_MATMUL;
  p->batch = dense ? 1 : get(g, "B", 1);
  p->m = get(g, "M", REQ), p->nn = get(g, "N", REQ), p->kk = get(g, "K", REQ);
  if (g->bad) return OB_ERR_INVALID_ARG;
  if (p->batch < 1 || p->m < 1 || p->nn < 1 || p->kk < 1) {
    snprintf(g->msg, g->cap, "%s: B, M, N, K must be >= 1", op);
    return OB_ERR_INVALID_ARG;
  }
  p->flops = 2.0 * (double)p->batch * (double)p->m * (double)p->nn * (double)p->kk;
  p->red = p->kk;
  add_arg(p, "A", OB_BL_DATA, p->batch * p->m * p->kk);
  add_arg(p, "B", OB_BL_WEIGHT, p->batch * p->nn * p->kk);
  if (ob_bl_problem_has(p, OB_BL_EPI_BIAS)) add_arg(p, "bias", OB_BL_BIAS, p->nn);
  if (ob_bl_problem_has(p, OB_BL_EPI_ADD)) add_arg(p, "residual", OB_BL_RESIDUAL, p->batch * p->m * p->nn);
  add_arg(p, "C", OB_BL_OUTPUT, p->batch * p->m * p->nn);
  return OB_OK;
}

/* pool2d as src/ops/pool.c defines it: mode 0 max, 1 average; incl_pad
 * picks the average's divisor (0: in-bounds elements, 1: R*S). */
static ob_status init_pool(getter *g, const char *op, ob_bl_problem *p) {
  bool global = !strcmp(op, "global_avg_pool");
  p->kind = OB_BL_POOL2D;
  p->n = get(g, "N", 1), p->c = get(g, "C", REQ), p->h = get(g, "H", REQ), p->w = get(g, "W", REQ);
  if (g->bad) return OB_ERR_INVALID_ARG;
  int64_t mode = 1, incl = 0;
  if (global) {
    p->r = p->h, p->s = p->w, p->sh = p->sw = 1, p->pt = p->pl = p->pb = p->pr = 0;
  } else {
    p->r = get(g, "R", REQ), p->s = get(g, "S", REQ);
    p->sh = get(g, "stride_h", 1), p->sw = get(g, "stride_w", 1);
    p->pt = get(g, "pad_t", 0), p->pl = get(g, "pad_l", 0), p->pb = get(g, "pad_b", 0), p->pr = get(g, "pad_r", 0);
    mode = get(g, "mode", 0), incl = get(g, "incl_pad", 0);
  }
  if (g->bad) return OB_ERR_INVALID_ARG;
  if ((mode != 0 && mode != 1) || (incl != 0 && incl != 1)) {
    snprintf(g->msg, g->cap, "%s: mode must be 0 (max) or 1 (avg) and incl_pad 0 or 1 (got %lld, %lld)", op,
             (long long)mode, (long long)incl);
    return OB_ERR_INVALID_ARG;
  }
  p->pool = mode == 0 ? OB_BL_POOL_MAX : incl ? OB_BL_POOL_AVG_INCLUDE : OB_BL_POOL_AVG_EXCLUDE;
  p->dh = p->dw = 1, p->g = 1, p->k = p->c;
  if (p->n < 1 || p->c < 1 || p->h < 1 || p->w < 1 || p->r < 1 || p->s < 1 || p->sh < 1 || p->sw < 1) {
    snprintf(g->msg, g->cap, "%s: N, C, H, W, R, S and strides must be >= 1", op);
    return OB_ERR_INVALID_ARG;
  }
  if (p->pt < 0 || p->pl < 0 || p->pb < 0 || p->pr < 0) {
    snprintf(g->msg, g->cap, "%s: padding must be >= 0", op);
    return OB_ERR_INVALID_ARG;
  }
  if (p->h + p->pt + p->pb < p->r || p->w + p->pl + p->pr < p->s) {
    snprintf(g->msg, g->cap, "%s: window %lldx%lld larger than the padded input", op, (long long)p->r,
             (long long)p->s);
    return OB_ERR_INVALID_ARG;
  }
  p->oh = (p->h + p->pt + p->pb - p->r) / p->sh + 1;
  p->ow = (p->w + p->pl + p->pr - p->s) / p->sw + 1;
  /* a window wholly in the padding has nothing to pool */
  if (p->pt >= p->r || (p->oh - 1) * p->sh - p->pt >= p->h || p->pl >= p->s ||
      (p->ow - 1) * p->sw - p->pl >= p->w) {
    snprintf(g->msg, g->cap, "%s: a window lies entirely in the padding; padding must be smaller than the window",
             op);
    return OB_ERR_INVALID_ARG;
  }
  p->flops = (double)(p->n * p->c * p->oh * p->ow) * (double)(p->r * p->s);
  p->red = p->r * p->s;
  add_arg(p, "data", OB_BL_DATA, p->n * p->c * p->h * p->w);
  add_arg(p, "output", OB_BL_OUTPUT, p->n * p->c * p->oh * p->ow);
  return OB_OK;
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
  ob_status st = parse_epilogue(epi, p, msg, cap);
  if (st) return st;
  if (kind == OB_BL_POOL2D && p->nepi) {
    snprintf(msg, cap, "%s takes no epilogue (got '%s')", op, epi);
    return OB_ERR_UNSUPPORTED;
  }
  getter g = {wl, msg, cap, false};
  st = kind == OB_BL_CONV2D ? init_conv(&g, op, p) : kind == OB_BL_MATMUL ? init_matmul(&g, op, p) : init_pool(&g, op, p);
  if (st) return st;
  for (int i = 0; i < p->nargs; i++)
    if (p->args[i].numel > (1LL << 31)) {
      snprintf(msg, cap, "%s: tensor '%s' has over 2^31 elements", op, p->args[i].name);
      return OB_ERR_INVALID_ARG;
    }
  return OB_OK;
}

/* ---- checker ----------------------------------------------------------- */

/* A task is used only when it takes exactly the arguments we feed. */
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
  ck->p = p;
  ck->seed = seed;
  if (ob_op_exists(wl->op)) {
    ob_task *t = NULL;
    if (ob_task_new(ctx, wl, NULL, NULL, &t) == OB_OK && task_matches(t, p)) {
      ck->task = t;
      return OB_OK;
    }
    /* opbench cannot run this workload yet (e.g. groups > 1): judge it by
     * the reference here */
    ob_log(ctx, OB_LOG_DEBUG, "baseline: no matching opbench task for %s (%s); own reference",
           wl->op, t ? "different arguments" : ob_ctx_errmsg(ctx));
    ob_task_free(t);
    ob_ctx_clear_error(ctx);
  }
  int o = p->nargs - 1;
  ck->ref = malloc((size_t)p->args[o].numel * sizeof(float));
  if (!ck->ref) return ob_fail(ctx, OB_ERR_NOMEM, "baseline: out of memory for the reference");
  return OB_OK;
}

void ob_bl_checker_fill(ob_bl_checker *ck, void *const *bufs) {
  if (ck->task) ob_task_fill(ck->task, ck->seed, bufs);
  else ob_bl_fill(ck->p, ck->seed, bufs);
}

ob_status ob_bl_checker_check(ob_bl_checker *ck, void *const *bufs, char *msg, size_t cap) {
  if (ck->task)
    return ob_task_check_tol(ck->task, ck->seed, bufs,
                             ck->p->winograd ? ob_winograd_tolerance(0) : ob_tolerance_default(), msg, cap);
  /* the inputs in bufs are still those of the fill */
  void *rb[OB_BL_MAX_ARGS];
  int o = ck->p->nargs - 1;
  for (int i = 0; i < ck->p->nargs; i++) rb[i] = bufs[i];
  rb[o] = ck->ref;
  ob_bl_reference(ck->p, rb);
  return ob_bl_compare(ck->p, bufs[o], ck->ref, msg, cap);
}

void ob_bl_checker_clear(ob_bl_checker *ck) {
  ob_task_free(ck->task);
  free(ck->ref);
  memset(ck, 0, sizeof *ck);
}

/* ---- timing ------------------------------------------------------------ */

ob_timing_opts ob_bl_timing(const ob_timing_opts *t) {
  ob_timing_opts r = t ? *t : ob_timing_default();
  if (r.number < 1) r.number = 1;
  if (r.repeat < 1) r.repeat = 10; /* a zeroed ob_timing_opts means the defaults */
  if (r.repeat > OB_BL_MAX_COSTS) r.repeat = OB_BL_MAX_COSTS;
  if (r.min_repeat_ms < 0) r.min_repeat_ms = 0;
  if (r.timeout_s <= 0) r.timeout_s = ob_timing_default().timeout_s;
  return r;
}

void ob_bl_flush_range(const void *p, size_t bytes) {
  const char *c = p;
#if defined(__x86_64__) || defined(__i386__)
  for (size_t o = 0; o < bytes; o += 64) _mm_clflush(c + o);
  _mm_mfence();
#elif defined(__aarch64__)
  for (size_t o = 0; o < bytes; o += 64) __asm__ volatile("dc civac, %0" ::"r"(c + o) : "memory");
  __asm__ volatile("dsb ish" ::: "memory");
#else
  (void)c, (void)bytes;
#endif
}

/* ob_runner's worker_time, in-process, with a deadline between groups. */
int ob_bl_time(const ob_timing_opts *t, double deadline, int (*call)(void *user),
               void (*flush)(void *user), void *user, ob_baseline_result *res) {
  int number = t->number;
  const double min_s = t->min_repeat_ms * 1e-3;
  for (int g = 0; g < t->repeat; g++) {
    for (;;) {
      double el = 0;
      if (t->flush) {
        for (int k = 0; k < number; k++) {
          if (flush) flush(user);
          double t0 = ob_now_s();
          int rc = call(user);
          el += ob_now_s() - t0;
          if (rc) return rc;
        }
      } else {
        double t0 = ob_now_s();
        for (int k = 0; k < number; k++) {
          int rc = call(user);
          if (rc) return rc;
        }
        el = ob_now_s() - t0;
      }
      if (ob_now_s() > deadline) return -1;
      if (el >= min_s || number >= NUMBER_MAX) {
        res->costs[g] = el / number;
        break;
      }
      double grown = ceil(number * 1.618);
      number = grown > NUMBER_MAX ? NUMBER_MAX : (int)grown;
    }
  }
  res->number = number;
  res->ncosts = t->repeat;
  ob_stats(res->costs, res->ncosts, &res->median_s, &res->mean_s, &res->cv);
  return 0;
}

/* ---- the handle -------------------------------------------------------- */

void ob_baseline_free(ob_baseline *b) {
  if (!b) return;
  if (b->vt && b->self) b->vt->free(b->self);
  free(b);
}

const char *ob_baseline_name(const ob_baseline *b) { return b->vt->name; }
const char *ob_baseline_describe(const ob_baseline *b) { return b->vt->describe(b->self); }

ob_status ob_baseline_measure(ob_baseline *b, const ob_workload *wl, const ob_timing_opts *timing,
                              uint64_t seed, ob_baseline_result *out) {
  return ob_baseline_measure_alg(b, wl, OB_BASELINE_ALG_DIRECT, timing, seed, out);
}

ob_status ob_baseline_measure_alg(ob_baseline *b, const ob_workload *wl, ob_baseline_alg alg,
                                  const ob_timing_opts *timing, uint64_t seed, ob_baseline_result *out) {
  OB_ASSERT(b && wl && out && alg >= 0 && alg < OB_BASELINE_ALG_COUNT);
  memset(out, 0, sizeof *out);
  double t0 = ob_now_s();
  ob_timing_opts t = ob_bl_timing(timing);
  ob_bl_problem p;
  char msg[sizeof out->message];
  ob_status st = OB_OK;
  ob_status pst = ob_bl_problem_init(wl, &p, msg, sizeof msg);
  if (!pst && alg == OB_BASELINE_ALG_WINOGRAD) {
    if (p.kind == OB_BL_CONV2D && p.g == 1) {
      p.winograd = true;
    } else {
      snprintf(msg, sizeof msg, "%s: no Winograd algorithm (plain convolutions only)", wl->op);
      pst = OB_ERR_UNSUPPORTED;
    }
  }
  if (pst) {
    out->error_no = OB_MERR_INSTANTIATION;
    snprintf(out->message, sizeof out->message, "%s: %.480s", b->vt->name, msg);
  } else {
    out->flops = p.flops;
    st = b->vt->measure(b->self, wl, &p, &t, seed, out);
    if (!st && out->error_no == OB_MERR_NONE && out->median_s > 0)
      out->gflops = out->flops / out->median_s * 1e-9;
  }
  out->run_s = ob_now_s() - t0;
  return st;
}
