/* norm.c: normalization operators, float32, eps fixed at 1e-5.
 *
 * layer_norm: x [M, N] normalized over N per row, then scaled and shifted
 * per column: out = (x - mean) / sqrt(var + eps) * gamma[n] + beta[n], var
 * the biased (1/N) variance. Arguments x, gamma, beta, out. Template
 * layer_norm.x86: the row sums are reductions with vector-lane partials
 * (rowred.c); a [M, 2] stats stage (mean, 1/sqrt(var + eps)) is computed per
 * row inside the output's row loop. one_pass = 0 takes the mean first (its
 * own parallel pass) and sums (x - mean)^2; one_pass = 1 sums x and x^2 in
 * one pass (var = E[x^2] - mean^2, clamped at 0: less accurate when |mean|
 * >> std). Rows are split by tile_m into the parallel loop. Flops: 8 per
 * element.
 *
 * batch_norm (inference): x [N, C, H, W] with per-channel gamma, beta, mean,
 * var (unfolded, as ONNX BatchNormalization and PyTorch take them):
 * out = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]; a negative
 * var, which real statistics never hold, is read as |var| so that the random
 * inputs of tests and measurements stay finite. Arguments x, gamma, beta,
 * mean, var, out. Template batch_norm.x86 folds the channel
 * parameters into scale/shift tables first, then one multiply-add per
 * element in the elementwise nest over [N, C, H*W] planes (vec, unroll,
 * hw_parts). Flops: 2 per
 * element. */
#include <math.h>
#include <stdio.h>

#include "ops/rowred_impl.h"

#define NORM_EPS 1e-5

/* ---- layer_norm ---------------------------------------------------------------- */
static const char *const k_ln_attrs[] = {"M", "N"};
static const int64_t k_ln_defaults[] = {OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};

static ob_status ln_validate(ob_ctx *ctx, const ob_workload *wl) {
  for (int i = 0; i < 2; i++)
    if (ob_workload_get(wl, k_ln_attrs[i]) < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "layer_norm: %s must be >= 1 (got %lld)", k_ln_attrs[i],
                     (long long)ob_workload_get(wl, k_ln_attrs[i]));
  return ob_check_numel(ctx, "layer_norm x (M x N)", 2,
                        (int64_t[]){ob_workload_get(wl, "M"), ob_workload_get(wl, "N")}, NULL);
}

static void ln_key(const ob_workload *wl, char *out, size_t cap) {
  snprintf(out, cap, "layer_norm/f32/M%lldN%lld/eps1e-5", (long long)ob_workload_get(wl, "M"),
           (long long)ob_workload_get(wl, "N"));
}

static double ln_flops(const ob_workload *wl) {
  return 8.0 * (double)ob_workload_get(wl, "M") * (double)ob_workload_get(wl, "N");
}

static int64_t ln_reduce_len(const ob_workload *wl) { return ob_workload_get(wl, "N"); }

static int ln_args(const ob_workload *wl, ob_arg_info *out) {
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N");
  out[0] = (ob_arg_info){"x", OB_NUMEL(M, N), true};
  out[1] = (ob_arg_info){"gamma", N, true};
  out[2] = (ob_arg_info){"beta", N, true};
  out[3] = (ob_arg_info){"out", OB_NUMEL(M, N), false};
  return 4;
}

static void ln_reference(const ob_workload *wl, void *const *bufs) {
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N");
  const float *x = bufs[0], *g = bufs[1], *b = bufs[2];
  float *o = bufs[3];
  for (int64_t m = 0; m < M; m++) {
    const float *r = x + m * N;
    double mean = 0, var = 0;
    for (int64_t n = 0; n < N; n++) mean += r[n];
    mean /= (double)N;
    for (int64_t n = 0; n < N; n++) var += ((double)r[n] - mean) * ((double)r[n] - mean);
    var /= (double)N;
    double rstd = 1.0 / sqrt(var + NORM_EPS);
    for (int64_t n = 0; n < N; n++) o[m * N + n] = (float)(((double)r[n] - mean) * rstd * g[n] + b[n]);
  }
}

static ob_status define_ln(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N");
  int64_t lanes[8];
  int nl = ob_rowred_lane_choices(tg, N, lanes);
  ob_status st = ob_space_define_knob(sp, "vec", lanes, nl);
  if (!st) st = ob_space_define_split(sp, "tile_m", M, &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = 16});
  if (!st) st = ob_space_define_knob(sp, "one_pass", (int64_t[]){0, 1}, 2);
  if (st) return st;
  /* fallback: up to two registers of lanes per partial sum, a row per parallel
   * iteration, the accurate two-pass variance */
  ob_config c = ob_space_first(sp);
  ob_config_set_knob(&c, "vec", ob_rowred_default_lanes(tg, N));
  ob_config_set_split(&c, "tile_m", (int64_t[]){1}, 1);
  ob_config_set_knob(&c, "one_pass", 0);
  *dflt = c;
  return OB_OK;
}

typedef struct ln_user {
  ob_tensor *x, *mean;
} ln_user;

static ob_expr *ln_x(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user) {
  return ob_te_load(te, ((ln_user *)user)->x, 2, (ob_expr *[]){rows[0], col});
}

static ob_expr *ln_x2(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user) {
  ob_expr *v = ln_x(te, rows, col, user);
  return OB_TE_MUL(te, v, v);
}

static ob_expr *ln_d2(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user) {
  ln_user *u = user;
  ob_expr *d = OB_TE_SUB(te, ln_x(te, rows, col, user), ob_te_load(te, u->mean, 1, rows));
  return OB_TE_MUL(te, d, d);
}

static ob_expr *rstd_of(ob_te *te, ob_expr *var) {
  return ob_te_bin(te, OB_FDIV, ob_te_float(te, OB_F32, 1.0),
                   ob_te_call(te, OB_SQRT, OB_TE_ADD(te, var, ob_te_float(te, OB_F32, NORM_EPS))));
}

static ob_status build_ln(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  int64_t M = ob_workload_get(wl, "M"), N = ob_workload_get(wl, "N");
  int64_t lanes = ob_config_knob(cfg, "vec"), tm[2];
  bool one_pass = ob_config_knob(cfg, "one_pass");
  ob_config_split(cfg, "tile_m", tm);
  ln_user u = {.x = ob_te_placeholder(te, "x", 2, (int64_t[]){M, N}, OB_F32)};
  ob_tensor *gamma = ob_te_placeholder(te, "gamma", 1, &N, OB_F32);
  ob_tensor *beta = ob_te_placeholder(te, "beta", 1, &N, OB_F32);
  ob_expr *fn = ob_te_float(te, OB_F32, (double)N);
  ob_rowred sum, sq;
  ob_status st = ob_rowred_declare(te, "row_sum", OB_REDUCE_SUM, 1, &M, N, lanes, ln_x, &u, &sum);
  if (st) return st;
  /* stats[m, 0] = mean, stats[m, 1] = 1 / sqrt(var + eps) */
  ob_ivar *sm = ob_te_axis(te, "m", M), *sj = ob_te_axis(te, "j", 2);
  ob_expr *vsm = ob_te_var(te, sm);
  ob_expr *mean_e, *var_e;
  if (one_pass) {
    st = ob_rowred_declare(te, "row_sumsq", OB_REDUCE_SUM, 1, &M, N, lanes, ln_x2, &u, &sq);
    if (st) return st;
    mean_e = ob_te_bin(te, OB_FDIV, ob_te_load(te, sum.total, 1, &vsm), fn);
    ob_expr *ex2 = ob_te_bin(te, OB_FDIV, ob_te_load(te, sq.total, 1, &vsm), fn);
    var_e = ob_te_bin(te, OB_MAX, OB_TE_SUB(te, ex2, OB_TE_MUL(te, mean_e, mean_e)),
                      ob_te_float(te, OB_F32, 0.0));
  } else {
    ob_ivar *mm = ob_te_axis(te, "m", M);
    ob_expr *vmm = ob_te_var(te, mm);
    u.mean = ob_te_compute(te, "mean", 1, &mm, ob_te_bin(te, OB_FDIV, ob_te_load(te, sum.total, 1, &vmm), fn));
    if (!u.mean) return OB_ERR_INVALID_ARG;
    st = ob_rowred_declare(te, "row_sqdev", OB_REDUCE_SUM, 1, &M, N, lanes, ln_d2, &u, &sq);
    if (st) return st;
    mean_e = ob_te_load(te, u.mean, 1, &vsm);
    var_e = ob_te_bin(te, OB_FDIV, ob_te_load(te, sq.total, 1, &vsm), fn);
  }
  ob_tensor *stats = ob_te_compute(
      te, "stats", 2, (ob_ivar *[]){sm, sj},
      ob_te_select(te, ob_te_bin(te, OB_EQ, ob_te_var(te, sj), ob_te_int(te, 0)), mean_e, rstd_of(te, var_e)));
  ob_ivar *om = ob_te_axis(te, "m", M), *on = ob_te_axis(te, "n", N);
  ob_expr *vm = ob_te_var(te, om), *vn = ob_te_var(te, on);
  ob_expr *xn = OB_TE_MUL(te,
                          OB_TE_SUB(te, ob_te_load(te, u.x, 2, (ob_expr *[]){vm, vn}),
                                    ob_te_load(te, stats, 2, (ob_expr *[]){vm, ob_te_int(te, 0)})),
                          ob_te_load(te, stats, 2, (ob_expr *[]){vm, ob_te_int(te, 1)}));
  ob_tensor *o = ob_te_compute(te, "layer_norm", 2, (ob_ivar *[]){om, on},
                               OB_TE_ADD(te, OB_TE_MUL(te, xn, ob_te_load(te, gamma, 1, &vn)),
                                         ob_te_load(te, beta, 1, &vn)));
  if (!gamma || !beta || !stats || !o) return OB_ERR_INVALID_ARG;

  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, o), *sst = ob_sched_stage(s, stats);
  ob_stage *ssum = ob_sched_stage(s, sum.total), *ssq = ob_sched_stage(s, sq.total);
  ob_ivar *mo, *mi, *no, *ni;
  st = ob_sched_split(s, so, ob_stage_axis(so, 0), tm[1], &mo, &mi);
  if (!st) st = ob_sched_parallel(s, so, mo);
  if (!st && lanes > 1) st = ob_sched_split(s, so, ob_stage_axis(so, 1), lanes, &no, &ni);
  if (!st && lanes > 1) st = ob_sched_vectorize(s, so, ni);
  /* per row: the stats, and inside them the sums they read */
  if (!st) st = ob_sched_compute_at(s, sst, so, mi);
  if (!st) st = ob_sched_compute_at(s, ssq, sst, ob_stage_axis(sst, 0));
  if (!st) st = ob_rowred_schedule(s, &sq, ob_stage_axis(ssq, 0));
  if (!st && one_pass) {
    st = ob_sched_compute_at(s, ssum, sst, ob_stage_axis(sst, 0));
    if (!st) st = ob_rowred_schedule(s, &sum, ob_stage_axis(ssum, 0));
  } else if (!st) {
    /* the mean is read by the squared deviations and the stats: its own
     * parallel pass over the rows, the sum computed per row inside it */
    ob_stage *smean = ob_sched_stage(s, u.mean);
    ob_ivar *ao, *ai;
    st = ob_sched_split(s, smean, ob_stage_axis(smean, 0), tm[1], &ao, &ai);
    if (!st) st = ob_sched_parallel(s, smean, ao);
    if (!st) st = ob_sched_compute_at(s, ssum, smean, ai);
    if (!st) st = ob_rowred_schedule(s, &sum, ob_stage_axis(ssum, 0));
  }
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_ln_tmpls[] = {{.name = "layer_norm.x86", .define = define_ln, .build = build_ln}};

const ob_op_def ob_op_layer_norm = {
    .name = "layer_norm",
    .attrs = k_ln_attrs,
    .defaults = k_ln_defaults,
    .nattrs = 2,
    .validate = ln_validate,
    .key = ln_key,
    .flops = ln_flops,
    .reduce_len = ln_reduce_len,
    .args = ln_args,
    .reference = ln_reference,
    .tmpls = k_ln_tmpls,
    .ntmpls = 1,
};

/* ---- batch_norm ------------------------------------------------------------------ */
static const char *const k_bn_attrs[] = {"N", "C", "H", "W"};
static const int64_t k_bn_defaults[] = {1, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};

static void bn_dims(const ob_workload *wl, int64_t d[4]) {
  for (int i = 0; i < 4; i++) d[i] = ob_workload_get(wl, k_bn_attrs[i]);
}

static ob_status bn_validate(ob_ctx *ctx, const ob_workload *wl) {
  int64_t d[4];
  bn_dims(wl, d);
  for (int i = 0; i < 4; i++)
    if (d[i] < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "batch_norm: %s must be >= 1 (got %lld)", k_bn_attrs[i],
                     (long long)d[i]);
  return ob_check_numel(ctx, "batch_norm x (N x C x H x W)", 4, d, NULL);
}

static void bn_key(const ob_workload *wl, char *out, size_t cap) {
  int64_t d[4];
  bn_dims(wl, d);
  snprintf(out, cap, "batch_norm/f32/N%lldC%lldH%lldW%lld/eps1e-5", (long long)d[0], (long long)d[1],
           (long long)d[2], (long long)d[3]);
}

static double bn_flops(const ob_workload *wl) {
  int64_t d[4];
  bn_dims(wl, d);
  return 2.0 * (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3];
}

static int bn_args(const ob_workload *wl, ob_arg_info *out) {
  int64_t d[4];
  bn_dims(wl, d);
  out[0] = (ob_arg_info){"x", ob_numel_valid(4, d), true};
  out[1] = (ob_arg_info){"gamma", d[1], true};
  out[2] = (ob_arg_info){"beta", d[1], true};
  out[3] = (ob_arg_info){"mean", d[1], true};
  out[4] = (ob_arg_info){"var", d[1], true};
  out[5] = (ob_arg_info){"out", ob_numel_valid(4, d), false};
  return 6;
}

static void bn_reference(const ob_workload *wl, void *const *bufs) {
  int64_t d[4];
  bn_dims(wl, d);
  const float *x = bufs[0], *g = bufs[1], *b = bufs[2], *mu = bufs[3], *var = bufs[4];
  float *o = bufs[5];
  int64_t hw = d[2] * d[3];
  for (int64_t n = 0; n < d[0]; n++)
    for (int64_t c = 0; c < d[1]; c++) {
      /* random inputs lie in [-1, 1]: |var| keeps the square root real */
      double rstd = 1.0 / sqrt(fabs((double)var[c]) + NORM_EPS);
      for (int64_t i = 0; i < hw; i++) {
        int64_t k = (n * d[1] + c) * hw + i;
        o[k] = (float)(((double)x[k] - mu[c]) * rstd * g[c] + b[c]);
      }
    }
}

static ob_status define_bn(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  int64_t d[4];
  bn_dims(wl, d);
  int64_t hw = d[2] * d[3], parts[4];
  int np = 0;
  for (int64_t p = 1; p <= 8 && p <= hw; p *= 2) parts[np++] = p;
  int64_t vecs[8], lanes = ob_tmpl_lanes(tg);
  ob_status st = ob_space_define_knob(sp, "vec", vecs, ob_tmpl_vec_choices(tg, vecs));
  if (!st) st = ob_space_define_knob(sp, "unroll", (int64_t[]){1, 2, 4}, 3);
  if (!st) st = ob_space_define_knob(sp, "hw_parts", parts, np);
  if (st) return st;
  /* fallback: two registers of lanes; planes cut in two when there are fewer planes than
   * a machine has cores, so that two threads share the work evenly */
  ob_config c = ob_space_first(sp);
  ob_config_set_knob(&c, "vec", hw >= 2 * lanes ? 2 * lanes : lanes);
  ob_config_set_knob(&c, "unroll", 1);
  ob_config_set_knob(&c, "hw_parts", d[0] * d[1] < 8 && hw >= 64 ? 2 : 1);
  *dflt = c;
  return OB_OK;
}

static ob_status build_bn(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  (void)tg;
  int64_t d[4];
  bn_dims(wl, d);
  int64_t pl[3] = {d[0], d[1], d[2] * d[3]}; /* NCHW as planes */
  ob_tensor *x = ob_te_placeholder(te, "x", 3, pl, OB_F32);
  ob_tensor *prm[4];
  static const char *const pn[4] = {"gamma", "beta", "mean", "var"};
  for (int i = 0; i < 4; i++) prm[i] = ob_te_placeholder(te, pn[i], 1, &d[1], OB_F32);
  /* scale[c] = gamma / sqrt(|var| + eps), shift[c] = beta - mean * scale */
  ob_ivar *c1 = ob_te_axis(te, "c", d[1]);
  ob_expr *v1 = ob_te_var(te, c1);
  ob_expr *var = ob_te_load(te, prm[3], 1, &v1);
  ob_expr *absvar = ob_te_bin(te, OB_MAX, var, OB_TE_SUB(te, ob_te_float(te, OB_F32, 0.0), var));
  ob_tensor *scale = ob_te_compute(
      te, "bn_scale", 1, &c1,
      ob_te_bin(te, OB_FDIV, ob_te_load(te, prm[0], 1, &v1),
                ob_te_call(te, OB_SQRT, OB_TE_ADD(te, absvar, ob_te_float(te, OB_F32, NORM_EPS)))));
  ob_ivar *c2 = ob_te_axis(te, "c", d[1]);
  ob_expr *v2 = ob_te_var(te, c2);
  ob_tensor *shift = ob_te_compute(te, "bn_shift", 1, &c2,
                                   OB_TE_SUB(te, ob_te_load(te, prm[1], 1, &v2),
                                             OB_TE_MUL(te, ob_te_load(te, prm[2], 1, &v2),
                                                       ob_te_load(te, scale, 1, &v2))));
  ob_ivar *ax[3];
  ob_expr *idx[3];
  static const char *const an[3] = {"n", "c", "hw"};
  for (int i = 0; i < 3; i++) {
    ax[i] = ob_te_axis(te, an[i], pl[i]);
    idx[i] = ob_te_var(te, ax[i]);
  }
  ob_tensor *o = ob_te_compute(te, "batch_norm", 3, ax,
                               OB_TE_ADD(te, OB_TE_MUL(te, ob_te_load(te, x, 3, idx), ob_te_load(te, scale, 1, &idx[1])),
                                         ob_te_load(te, shift, 1, &idx[1])));
  if (!x || !scale || !shift || !o) return OB_ERR_INVALID_ARG;
  ob_sched *s = NULL;
  ob_status st = ob_sched_new(te, 1, &o, &s);
  if (st) return st;
  st = ob_ew_schedule_planes(s, ob_sched_stage(s, o), ob_config_knob(cfg, "vec"), ob_config_knob(cfg, "unroll"),
                           ob_config_knob(cfg, "hw_parts"));
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

static const ob_tmpl_def k_bn_tmpls[] = {{.name = "batch_norm.x86", .define = define_bn, .build = build_bn}};

const ob_op_def ob_op_batch_norm = {
    .name = "batch_norm",
    .attrs = k_bn_attrs,
    .defaults = k_bn_defaults,
    .nattrs = 4,
    .validate = bn_validate,
    .key = bn_key,
    .flops = bn_flops,
    .reduce_len = NULL,
    .args = bn_args,
    .reference = bn_reference,
    .tmpls = k_bn_tmpls,
    .ntmpls = 1,
};
