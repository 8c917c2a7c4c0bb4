/* task.c: one workload bound to one template for one target. Owns the
 * config space, the argument layout and the reference output (computed once
 * per seed), and turns a config into lowered IR or C source through te ->
 * schedule -> lower -> codegen. The target is borrowed from the caller, or
 * owned when the task made the host's default itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"
#include "opbench/codegen.h"

struct ob_task {
  ob_ctx *ctx;
  const ob_target *target;
  ob_target *own_target; /* the default made by ob_task_new, else NULL */
  ob_workload wl;
  const ob_op_def *op;
  const ob_tmpl_def *tmpl;
  ob_space *space;
  ob_config dflt;
  int nargs;
  ob_arg_info args[OB_MAX_ARGS];
  float *scratch; /* one argument in the operator's layout, for pack/unpack */
  /* reference outputs for ref_seed */
  bool have_ref;
  uint64_t ref_seed;
  float *ref[OB_MAX_ARGS];
};

/* A template's fallback can land on a config its own filter rejects
 * (dense.x86 asks for a 4x4 register tile; with M=7 and N=1001 the nearest
 * factors give 7x7, over its 28 accumulators), which --config-index, the
 * database and the tuners would then refuse. The default is made the
 * nearest valid config: one knob moved as few entities as possible (first
 * knob first, the smaller entity first), else the first valid index. */
static ob_status valid_default(ob_task *t) {
  const ob_space *s = t->space;
  if (ob_space_is_valid(s, t->dflt.index)) return OB_OK;
  int nk = ob_space_num_knobs(s);
  for (int dist = 1;; dist++) {
    bool any = false;
    for (int k = 0; k < nk; k++)
      for (int sign = -1; sign <= 1; sign += 2) {
        int j = t->dflt.choice[k] + sign * dist;
        if (j < 0 || j >= ob_space_knob_len(s, k)) continue;
        any = true;
        int32_t ch[OB_MAX_KNOBS];
        memcpy(ch, t->dflt.choice, sizeof ch);
        ch[k] = j;
        uint64_t idx = ob_config_index_of(s, ch);
        if (ob_space_is_valid(s, idx)) return ob_space_get(t->ctx, s, idx, &t->dflt);
      }
    if (!any) break;
  }
  uint64_t len = ob_space_len(s);
  for (uint64_t i = 0; i < len && i < (1u << 20); i++)
    if (ob_space_is_valid(s, i)) return ob_space_get(t->ctx, s, i, &t->dflt);
  return ob_fail(t->ctx, OB_ERR_UNSUPPORTED, "no config of the space passes the template's filter");
}

/* Added after records were stored, so their configs read 0: the
 * compiler's own unrolling, as they were built. */
static ob_status add_unroll_knob(ob_task *t) {
  ob_status st = ob_space_define_knob_added(t->space, "unroll_inner", (int64_t[]){0, 4, 8}, 3);
  if (st) return st;
  t->dflt.choice[ob_space_knob_find(t->space, "unroll_inner")] = 0;
  ob_config_set_knob(&t->dflt, "unroll_inner", t->tmpl->unroll_for ? t->tmpl->unroll_for(&t->dflt) : t->tmpl->unroll_default);
  return OB_OK;
}

ob_status ob_task_new(ob_ctx *ctx, const ob_workload *wl, const char *tmpl, const ob_target *target,
                      ob_task **out) {
  ob_status st = ob_workload_validate(ctx, wl);
  if (st) return st;
  const ob_op_def *op = ob_op_def_find(wl->op);
  ob_task *t = calloc(1, sizeof *t);
  if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  t->ctx = ctx;
  t->wl = *wl;
  t->op = op;
  t->nargs = op->args(wl, t->args);
  t->target = target;
  if (!target) {
    st = ob_target_host(ctx, &t->own_target);
    if (st) {
      ob_task_free(t);
      return st;
    }
    t->target = t->own_target;
  }
  /* templates are for CPU targets or for GPU targets; the default is the
   * first one of the target's kind */
  bool gpu = ob_target_is_gpu(t->target);
  const ob_tmpl_def *td = NULL;
  for (int i = 0; i < op->ntmpls && !td; i++)
    if (tmpl && *tmpl ? !strcmp(op->tmpls[i].name, tmpl) : op->tmpls[i].gpu == gpu) td = &op->tmpls[i];
  if (!td || td->gpu != gpu) {
    ob_str known = {0};
    for (int i = 0; i < op->ntmpls; i++)
      if (op->tmpls[i].gpu == gpu) ob_str_appendf(&known, "%s%s", known.len ? ", " : "", op->tmpls[i].name);
    if (td)
      st = ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "template '%s' of operator '%s' is for %s targets, not for target '%s' (its templates: %s)",
                   td->name, wl->op, td->gpu ? "GPU" : "CPU", ob_target_str(t->target),
                   known.data ? known.data : "none");
    else if (tmpl && *tmpl)
      st = ob_fail(ctx, OB_ERR_NOT_FOUND, "operator '%s' has no template '%s' (templates for target '%s': %s)",
                   wl->op, tmpl, ob_target_str(t->target), known.data ? known.data : "none");
    else
      st = ob_fail(ctx, OB_ERR_UNSUPPORTED, "operator '%s' has no template for %s target '%s'", wl->op,
                   gpu ? "GPU" : "CPU", ob_target_str(t->target));
    ob_str_free(&known);
    ob_task_free(t);
    return st;
  }
  t->tmpl = td;
  st = ob_space_new(ctx, &t->space);
  if (!st) st = td->define(ctx, t->target, wl, t->space, &t->dflt);
  if (!st && td->unroll_inner && !gpu) st = add_unroll_knob(t);
  if (!st) st = valid_default(t);
  if (st) {
    ob_fail_prefix(ctx, "template '%s'", td->name);
    ob_task_free(t);
    return st;
  }
  *out = t;
  return OB_OK;
}

void ob_task_free(ob_task *t) {
  if (!t) return;
  for (int i = 0; i < OB_MAX_ARGS; i++) free(t->ref[i]);
  free(t->scratch);
  ob_space_free(t->space);
  ob_target_free(t->own_target);
  free(t);
}

const ob_workload *ob_task_workload(const ob_task *t) { return &t->wl; }
const char *ob_task_template(const ob_task *t) { return t->tmpl->name; }
const ob_target *ob_task_target(const ob_task *t) { return t->target; }
const ob_space *ob_task_space(const ob_task *t) { return t->space; }
ob_config ob_task_default_config(const ob_task *t) { return t->dflt; }

/* The channel block a config's knob sets: the inner factor of a split
 * (conv2d_NCHWc's tile_ic, the depthwise tile_c), the value of a plain
 * knob (Winograd's tile_ic); set_block sets it to the nearest the knob has. */
static int64_t get_block(const ob_config *c, const char *knob, bool split) {
  int64_t f[2];
  if (!split) return ob_config_knob(c, knob);
  ob_config_split(c, knob, f);
  return f[1];
}
static void set_block(ob_config *c, const char *knob, bool split, int64_t b) {
  if (split) ob_config_set_split(c, knob, &b, 1);
  else ob_config_set_knob(c, knob, b);
}

int ob_task_block_variants(const ob_task *t, const ob_config *base, ob_config *out, int max) {
  const char *tmpl = ob_task_template(t);
  const ob_space *sp = ob_task_space(t);
  bool dw = !strcmp(tmpl, "depthwise_NCHWc.x86");
  const char *knob = dw ? "tile_c" : "tile_ic";
  int k = ob_space_knob_find(sp, knob);
  if ((!dw && strcmp(tmpl, "conv2d_NCHWc.x86") && strcmp(tmpl, "conv2d_winograd.x86")) || k < 0) return 0;
  bool split = ob_space_knob_kind(sp, k) == OB_KNOB_SPLIT;
  int64_t lanes = ob_target_get_facts(ob_task_target(t))->lanes_f32, have = get_block(base, knob, split);
  int64_t ow[2] = {1, 1};
  if (dw) ob_config_split(base, "tile_ow", ow);
  int n = 0;
  for (int64_t b = lanes / 2; b <= 2 * lanes && n < max; b *= 2) {
    if (b == have || b < 2) continue;
    ob_config v = *base;
    set_block(&v, knob, split, b);
    if (get_block(&v, knob, split) != b) continue; /* not a block of the channels */
    for (int64_t w = ow[1]; dw && w > 1 && !ob_space_is_valid(sp, v.index); w--) ob_config_set_split(&v, "tile_ow", &w, 1);
    if (ob_space_is_valid(sp, v.index)) out[n++] = v;
  }
  return n;
}
double ob_task_flops(const ob_task *t) { return t->op->flops(&t->wl); }
int ob_task_num_args(const ob_task *t) { return t->nargs; }
size_t ob_task_arg_bytes(const ob_task *t, int i) {
  return (size_t)t->args[i].numel * ob_dtype_size(t->wl.dtype);
}
bool ob_task_arg_is_input(const ob_task *t, int i) { return t->args[i].is_input; }
const char *ob_task_arg_name(const ob_task *t, int i) { return t->args[i].name; }

static ob_status check_config(ob_task *t, const ob_config *cfg) {
  if (cfg->space != t->space)
    return ob_fail(t->ctx, OB_ERR_OUT_OF_SPACE, "config does not belong to this task's space");
  ob_config tmp;
  return ob_space_get(t->ctx, t->space, cfg->index, &tmp);
}

ob_status ob_task_lower(ob_task *t, const ob_config *cfg, ob_lowered **out) {
  ob_status st = check_config(t, cfg);
  if (st) return st;
  ob_te *te = NULL;
  ob_sched *s = NULL;
  st = ob_te_new(t->ctx, &te);
  if (!st) st = t->tmpl->build(te, t->target, &t->wl, cfg, &s);
  if (!st && ob_space_knob_find(t->space, "unroll_inner") >= 0)
    st = ob_sched_unroll_inner(s, ob_config_knob(cfg, "unroll_inner"));
  /* a declaration cut short by out of memory fails with the template's own
   * status (a NULL tensor is "invalid" to it): say what happened */
  if (st && te && ob_te_failed(te)) st = ob_fail(t->ctx, OB_ERR_NOMEM, "compute declaration: out of memory");
  if (!st) st = ob_lower(s, out);
  /* a GPU kernel over the device's launch limits fails here, named:
   * AutoTVM's instantiation error */
  if (!st && (st = ob_lower_check_launch(t->ctx, *out, t->target)) != OB_OK) {
    ob_lowered_free(*out);
    *out = NULL;
  }
  if (!st && ob_lowered_num_args(*out) != t->nargs) {
    int got = ob_lowered_num_args(*out);
    ob_lowered_free(*out);
    *out = NULL;
    st = ob_fail(t->ctx, OB_ERR_SCHEDULE, "template '%s' made %d kernel arguments, expected %d",
                 t->tmpl->name, got, t->nargs);
  }
  if (st) ob_fail_prefix(t->ctx, "config %llu of template '%s'", (unsigned long long)cfg->index, t->tmpl->name);
  ob_sched_free(s);
  ob_te_free(te);
  return st;
}

void ob_task_kernel_name(const ob_task *t, const ob_config *cfg, char *buf, size_t cap) {
  /* kernel names say what they are: template, dtype, config index */
  snprintf(buf, cap, "%s_%s__i%llu", t->tmpl->name, ob_dtype_name(t->wl.dtype), (unsigned long long)cfg->index);
  for (char *p = buf; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) *p = '_';
}

ob_status ob_task_source(ob_task *t, const ob_config *cfg, char **src, char **name) {
  return ob_task_source_launch(t, cfg, src, name, NULL);
}

ob_status ob_task_source_launch(ob_task *t, const ob_config *cfg, char **src, char **name, ob_launch *launch) {
  ob_lowered *f = NULL;
  ob_status st = ob_task_lower(t, cfg, &f);
  if (st) return st;
  if (launch) *launch = f->launch;
  char buf[160];
  ob_task_kernel_name(t, cfg, buf, sizeof buf);
  st = ob_codegen(t->ctx, t->target, f, buf, src);
  ob_lowered_free(f);
  if (st) return st;
  *name = strdup(buf);
  if (!*name) {
    free(*src);
    *src = NULL;
    return ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory");
  }
  return OB_OK;
}

void ob_task_fill(const ob_task *t, uint64_t seed, void *const *bufs) {
  ob_rng r = {seed * 0x9E3779B97F4A7C15ULL + 1};
  for (int i = 0; i < t->nargs; i++) {
    float *p = bufs[i];
    if (t->args[i].is_input)
      ob_rng_fill(&r, p, t->args[i].numel);
    else
      for (int64_t k = 0; k < t->args[i].numel; k++) p[k] = NAN;
  }
}

static ob_status ensure_ref(ob_task *t, uint64_t seed) {
  if (t->have_ref && t->ref_seed == seed) return OB_OK;
  void *bufs[OB_MAX_ARGS] = {0};
  ob_status st = OB_OK;
  for (int i = 0; i < t->nargs; i++) {
    free(t->ref[i]);
    t->ref[i] = malloc(ob_task_arg_bytes(t, i) ? ob_task_arg_bytes(t, i) : 4);
    if (!t->ref[i]) {
      st = ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory for the reference");
      break;
    }
    bufs[i] = t->ref[i];
  }
  t->have_ref = false;
  if (st) return st;
  ob_task_fill(t, seed, bufs);
  t->op->reference(&t->wl, bufs);
  t->have_ref = true;
  t->ref_seed = seed;
  return OB_OK;
}

ob_tolerance ob_tolerance_default(void) { return (ob_tolerance){1e-4, 1e-5}; }

ob_tolerance ob_task_tolerance(const ob_task *t, const ob_config *cfg) {
  return t->tmpl->tolerance ? t->tmpl->tolerance(&t->wl, cfg) : ob_tolerance_default();
}

ob_status ob_task_check(ob_task *t, uint64_t seed, void *const *bufs, char *msg, size_t cap) {
  return ob_task_check_tol(t, seed, bufs, ob_tolerance_default(), msg, cap);
}

ob_status ob_task_check_tol(ob_task *t, uint64_t seed, void *const *bufs, ob_tolerance tol, char *msg,
                            size_t cap) {
  ob_status st = ensure_ref(t, seed);
  if (st) {
    snprintf(msg, cap, "%s", ob_ctx_errmsg(t->ctx));
    return st;
  }
  double red = (double)(t->op->reduce_len ? t->op->reduce_len(&t->wl) : 1);
  for (int i = 0; i < t->nargs; i++) {
    if (t->args[i].is_input) continue;
    const float *got = bufs[i], *ref = t->ref[i];
    double amax = 0;
    for (int64_t k = 0; k < t->args[i].numel; k++)
      if (fabs(ref[k]) > amax) amax = fabs(ref[k]);
    double atol = tol.atol * sqrt(red) * (amax > 1 ? amax : 1) + 1e-6;
    for (int64_t k = 0; k < t->args[i].numel; k++) {
      double d = fabs((double)got[k] - ref[k]);
      if (!(d <= tol.rtol * fabs(ref[k]) + atol)) { /* NaN fails too */
        snprintf(msg, cap, "wrong answer: %s[%lld] = %.7g, reference %.7g (tolerance %.3g)",
                 t->args[i].name, (long long)k, got[k], ref[k], tol.rtol * fabs(ref[k]) + atol);
        return OB_ERR_WRONG_ANSWER;
      }
    }
  }
  return OB_OK;
}

size_t ob_task_arg_bytes_for(const ob_task *t, const ob_config *cfg, int i) {
  if (!t->tmpl->arg_numel) return ob_task_arg_bytes(t, i);
  int64_t n = t->tmpl->arg_numel(&t->wl, cfg, i);
  OB_ASSERT(n >= t->args[i].numel); /* the template's validate bounded it */
  return (size_t)n * ob_dtype_size(t->wl.dtype);
}

bool ob_task_plain_layout(const ob_task *t, const ob_config *cfg) {
  (void)cfg;
  return t->tmpl->pack == NULL;
}

static ob_status need_scratch(ob_task *t) {
  if (t->scratch) return OB_OK;
  size_t most = 4;
  for (int i = 0; i < t->nargs; i++)
    if (ob_task_arg_bytes(t, i) > most) most = ob_task_arg_bytes(t, i);
  t->scratch = malloc(most);
  return t->scratch ? OB_OK : ob_fail(t->ctx, OB_ERR_NOMEM, "out of memory");
}

ob_status ob_task_fill_for(ob_task *t, const ob_config *cfg, uint64_t seed, void *const *bufs) {
  if (!t->tmpl->pack) {
    ob_task_fill(t, seed, bufs);
    return OB_OK;
  }
  ob_status st = need_scratch(t);
  if (st) return st;
  /* the same values as the plain layout, then moved into the kernel's */
  ob_rng r = {seed * 0x9E3779B97F4A7C15ULL + 1};
  for (int i = 0; i < t->nargs; i++) {
    float *p = bufs[i];
    if (!t->args[i].is_input) {
      int64_t n = (int64_t)(ob_task_arg_bytes_for(t, cfg, i) / sizeof(float));
      for (int64_t k = 0; k < n; k++) p[k] = NAN;
      continue;
    }
    ob_rng_fill(&r, t->scratch, t->args[i].numel);
    t->tmpl->pack(&t->wl, cfg, i, t->scratch, p);
  }
  return OB_OK;
}

ob_status ob_task_check_for(ob_task *t, const ob_config *cfg, uint64_t seed, void *const *bufs,
                            char *msg, size_t cap) {
  ob_tolerance tol = ob_task_tolerance(t, cfg);
  if (!t->tmpl->unpack) return ob_task_check_tol(t, seed, bufs, tol, msg, cap);
  ob_status st = need_scratch(t);
  if (st) {
    snprintf(msg, cap, "%s", ob_ctx_errmsg(t->ctx));
    return st;
  }
  /* outputs one at a time through the scratch buffer; inputs unused */
  void *view[OB_MAX_ARGS];
  for (int i = 0; i < t->nargs; i++) view[i] = bufs[i];
  for (int i = 0; i < t->nargs; i++) {
    if (t->args[i].is_input) continue;
    t->tmpl->unpack(&t->wl, cfg, i, bufs[i], t->scratch);
    view[i] = t->scratch;
    st = ob_task_check_tol(t, seed, view, tol, msg, cap);
    view[i] = bufs[i];
    if (st) return st;
  }
  return OB_OK;
}

ob_arg_layout ob_task_arg_layout(const ob_task *t, const ob_config *cfg, int i) {
  OB_ASSERT(i >= 0 && i < t->nargs);
  if (!t->tmpl->pack) return (ob_arg_layout){OB_ARGL_PLAIN, 0};
  if (!t->tmpl->layout) return (ob_arg_layout){OB_ARGL_OPAQUE, 0};
  return t->tmpl->layout(&t->wl, cfg, i);
}

void ob_task_pack_arg(const ob_task *t, const ob_config *cfg, int i, const float *src, float *dst) {
  OB_ASSERT(i >= 0 && i < t->nargs);
  if (t->tmpl->pack) t->tmpl->pack(&t->wl, cfg, i, src, dst);
  else memcpy(dst, src, ob_task_arg_bytes(t, i));
}

void ob_task_unpack_arg(const ob_task *t, const ob_config *cfg, int i, const float *src, float *dst) {
  OB_ASSERT(i >= 0 && i < t->nargs);
  if (t->tmpl->unpack) t->tmpl->unpack(&t->wl, cfg, i, src, dst);
  else memcpy(dst, src, ob_task_arg_bytes(t, i));
}
