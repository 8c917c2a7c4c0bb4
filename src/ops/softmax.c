/* softmax.c: softmax over the last axis of a 2-D [M, N] float32 tensor,
 * numerically stable: out = exp(x - max) / sum(exp(x - max)) per row.
 * Template softmax.x86: the row max and the row sum are reductions with
 * vector-lane partials (rowred.c); rows are split by tile_m into the
 * parallel loop and the column loops are vectorized by vec. stash_exp = 1
 * writes exp(x - max) once to a temporary [M, N] and normalizes it;
 * stash_exp = 0 recomputes the exponential in the output loop instead of
 * storing it (less memory traffic, twice the exp calls). Flops: 4 per
 * element (max, subtract-exp, sum, divide). */
#include <stdio.h>
#include <math.h>

#include "ops/rowred_impl.h"

static const char *const k_attrs[] = {"M", "N"};
static const int64_t k_defaults[] = {OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  for (int i = 0; i < 2; i++)
    if (ob_workload_get(wl, k_attrs[i]) < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: %s must be >= 1 (got %lld)", wl->op, k_attrs[i],
                     (long long)ob_workload_get(wl, k_attrs[i]));
  return ob_check_numel(ctx, "softmax x (M x N)", 2,
                        (int64_t[]){ob_workload_get(wl, "M"), ob_workload_get(wl, "N")}, NULL);
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  snprintf(out, cap, "softmax/f32/M%lldN%lld", (long long)ob_workload_get(wl, "M"),
           (long long)ob_workload_get(wl, "N"));
}

static double flops(const ob_workload *wl) {
  return 4.0 * (double)ob_workload_get(wl, "M") * (double)ob_workload_get(wl, "N");
}

static int64_t reduce_len(const ob_workload *wl) { return ob_workload_get(wl, "N"); }

static int args(const ob_workload *wl, ob_arg_info *out) {
  int64_t n = OB_NUMEL(ob_workload_get(wl, "M"), ob_workload_get(wl, "N"));
  out[0] = (ob_arg_info){"x", n, true};
  out[1] = (ob_arg_info){"out", n, false};
  return 2;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N");
  const float *x = bufs[0];
  float *o = bufs[1];
  for (int64_t m = 0; m < M; m++) {
    const float *r = x + m * N;
    double mx = -INFINITY, s = 0;
    for (int64_t n = 0; n < N; n++) mx = r[n] > mx ? r[n] : mx;
    for (int64_t n = 0; n < N; n++) s += exp((double)r[n] - mx);
    for (int64_t n = 0; n < N; n++) o[m * N + n] = (float)(exp((double)r[n] - mx) / s);
  }
}

/* ---- template softmax.x86 ------------------------------------------------------ */
static ob_status define_softmax(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N");
  int64_t lanes[8];
  int nl = ob_rowred_lane_choices(tg, N, lanes);
  ob_status st = ob_space_define_knob(sp, "vec", lanes, nl);
  if (!st) st = ob_space_define_split(sp, "tile_m", M, &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = 16});
  if (!st) st = ob_space_define_knob(sp, "stash_exp", (int64_t[]){0, 1}, 2);
  if (st) return st;
  /* fallback: up to two registers of lanes per partial, a row per parallel
   * iteration, exp computed once (it is a libm call per lane) */
  ob_config c = ob_space_first(sp);
  ob_config_set_knob(&c, "vec", ob_rowred_default_lanes(tg, N));
  ob_config_set_split(&c, "tile_m", (int64_t[]){1}, 1);
  ob_config_set_knob(&c, "stash_exp", 1);
  *dflt = c;
  return OB_OK;
}

typedef struct sm_user {
  ob_tensor *x, *mx, *e;
} sm_user;

static ob_expr *sm_x(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user) {
  return ob_te_load(te, ((sm_user *)user)->x, 2, (ob_expr *[]){rows[0], col});
}

static ob_expr *sm_exp(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user) {
  sm_user *u = user;
  return ob_te_call(te, OB_EXP, OB_TE_SUB(te, ob_te_load(te, u->x, 2, (ob_expr *[]){rows[0], col}),
                                          ob_te_load(te, u->mx, 1, rows)));
}

static ob_expr *sm_e(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user) {
  return ob_te_load(te, ((sm_user *)user)->e, 2, (ob_expr *[]){rows[0], col});
}

/* Rows split by tm (outer parallel), columns by lanes (inner vectorized);
 * *row receives the inner row loop. */
static ob_status row_nest(ob_sched *s, ob_stage *st, int64_t tm, int64_t lanes, ob_ivar **row) {
  ob_ivar *mo, *no, *ni;
  ob_status r = ob_sched_split(s, st, ob_stage_axis(st, 0), tm, &mo, row);
  if (!r) r = ob_sched_parallel(s, st, mo);
  if (!r && ob_stage_num_axes(st) == 2 && lanes > 1) {
    r = ob_sched_split(s, st, ob_stage_axis(st, 1), lanes, &no, &ni);
    if (!r) r = ob_sched_vectorize(s, st, ni);
  }
  return r;
}

static ob_status build_softmax(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N");
  int64_t lanes = ob_config_knob(cfg, "vec"), tm[2];
  bool stash = ob_config_knob(cfg, "stash_exp");
  ob_config_split(cfg, "tile_m", tm);
  sm_user u = {.x = ob_te_placeholder(te, "x", 2, (int64_t[]){M, N}, OB_F32)};
  ob_rowred mx, sum;
  ob_status st = ob_rowred_declare(te, "row_max", OB_REDUCE_MAX, 1, &M, N, lanes, sm_x, &u, &mx);
  if (st) return st;
  u.mx = mx.total;
  ob_ivar *am = ob_te_axis(te, "m", M), *an = ob_te_axis(te, "n", N);
  ob_expr *vm = ob_te_var(te, am), *vn = ob_te_var(te, an);
  if (stash) {
    u.e = ob_te_compute(te, "exp", 2, (ob_ivar *[]){am, an}, sm_exp(te, &vm, vn, &u));
    if (!u.e) return OB_ERR_INVALID_ARG;
    am = ob_te_axis(te, "m", M);
    an = ob_te_axis(te, "n", N);
    vm = ob_te_var(te, am);
    vn = ob_te_var(te, an);
  }
  st = ob_rowred_declare(te, "row_sum", OB_REDUCE_SUM, 1, &M, N, lanes, stash ? sm_e : sm_exp, &u, &sum);
  if (st) return st;
  ob_expr *num = stash ? sm_e(te, &vm, vn, &u) : sm_exp(te, &vm, vn, &u);
  ob_tensor *o = ob_te_compute(te, "softmax", 2, (ob_ivar *[]){am, an},
                               ob_te_bin(te, OB_FDIV, num, ob_te_load(te, sum.total, 1, &vm)));
  if (!o) return OB_ERR_INVALID_ARG;

  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_ivar *row;
  ob_stage *so = ob_sched_stage(s, o), *ssum = ob_sched_stage(s, sum.total), *smx = ob_sched_stage(s, mx.total);
  /* the row sum is read by the output alone: computed per row inside it */
  st = row_nest(s, so, tm[1], lanes, &row);
  if (!st) st = ob_sched_compute_at(s, ssum, so, row);
  if (!st) st = ob_rowred_schedule(s, &sum, ob_stage_axis(ssum, 0));
  if (!st && stash) {
    /* the max feeds the exp pass alone */
    ob_stage *se = ob_sched_stage(s, u.e);
    st = row_nest(s, se, tm[1], lanes, &row);
    if (!st) st = ob_sched_compute_at(s, smx, se, row);
    if (!st) st = ob_rowred_schedule(s, &mx, ob_stage_axis(smx, 0));
  } else if (!st) {
    /* read by the sum and the output: its own pass */
    st = row_nest(s, smx, tm[1], lanes, &row);
    if (!st) st = ob_rowred_schedule(s, &mx, row);
  }
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_tmpls[] = {{.name = "softmax.x86", .define = define_softmax, .build = build_softmax}};

const ob_op_def ob_op_softmax = {
    .name = "softmax",
    .attrs = k_attrs,
    .defaults = k_defaults,
    .nattrs = 2,
    .validate = validate,
    .key = key,
    .flops = flops,
    .reduce_len = reduce_len,
    .args = args,
    .reference = reference,
    .tmpls = k_tmpls,
    .ntmpls = 1,
};
