/* rowred.c: the row reduction with vector-lane partials and the NCHW
 * elementwise nest that pool.c, norm.c, softmax.c, concat.c and elemwise.c
 * share.
 * Tensors are made in the caller's te and die with it. */
#include <stdint.h>
#include <stdio.h>

#include "ops/rowred_impl.h"

static const char *const k_row_names[4] = {"r0", "r1", "r2", "r3"};

ob_status ob_rowred_declare(ob_te *te, const char *name, ob_reduce_op op, int nrows,
                            const int64_t *rows, int64_t len, int64_t lanes, ob_rowred_fn fn,
                            void *user, ob_rowred *out) {
  OB_ASSERT(nrows >= 1 && nrows <= 3 && lanes >= 1 && lanes <= len);
  char nm[64];
  ob_ivar *ax[4];
  ob_expr *rv[4];
  out->lanes = lanes;
  out->partial = NULL;
  if (lanes == 1) { /* one plain reduction */
    for (int i = 0; i < nrows; i++) {
      ax[i] = ob_te_axis(te, k_row_names[i], rows[i]);
      rv[i] = ob_te_var(te, ax[i]);
    }
    ob_ivar *k = ob_te_reduce_axis(te, "k", len);
    out->total = ob_te_compute(te, name, nrows, ax,
                               ob_te_reduce(te, op, fn(te, rv, ob_te_var(te, k), user), 1, &k));
    return out->total ? OB_OK : OB_ERR_INVALID_ARG;
  }
  int64_t full = len / lanes, rest = len % lanes;
  for (int i = 0; i < nrows; i++) {
    ax[i] = ob_te_axis(te, k_row_names[i], rows[i]);
    rv[i] = ob_te_var(te, ax[i]);
  }
  ob_ivar *l = ob_te_axis(te, "l", lanes), *ko = ob_te_reduce_axis(te, "ko", full);
  ax[nrows] = l;
  ob_expr *col = OB_TE_ADD(te, OB_TE_MUL(te, ob_te_var(te, ko), ob_te_int(te, lanes)), ob_te_var(te, l));
  snprintf(nm, sizeof nm, "%s_part", name);
  out->partial = ob_te_compute(te, nm, nrows + 1, ax, ob_te_reduce(te, op, fn(te, rv, col, user), 1, &ko));
  if (!out->partial) return OB_ERR_INVALID_ARG;

  for (int i = 0; i < nrows; i++) {
    ax[i] = ob_te_axis(te, k_row_names[i], rows[i]);
    rv[i] = ob_te_var(te, ax[i]);
  }
  ob_ivar *t = ob_te_reduce_axis(te, "t", lanes + rest);
  ob_expr *vt = ob_te_var(te, t);
  rv[nrows] = vt;
  ob_expr *body = ob_te_load(te, out->partial, nrows + 1, rv);
  if (rest) {
    /* past the lanes: the columns the partials did not cover */
    ob_expr *tail = fn(te, rv, OB_TE_ADD(te, vt, ob_te_int(te, len - rest - lanes)), user);
    body = ob_te_select(te, ob_te_bin(te, OB_LT, vt, ob_te_int(te, lanes)), body, tail);
  }
  out->total = ob_te_compute(te, name, nrows, ax, ob_te_reduce(te, op, body, 1, &t));
  return out->total ? OB_OK : OB_ERR_INVALID_ARG;
}

ob_status ob_rowred_schedule(ob_sched *s, const ob_rowred *r, ob_ivar *at) {
  if (!r->partial) return OB_OK;
  ob_stage *sp = ob_sched_stage(s, r->partial), *st = ob_sched_stage(s, r->total);
  int nd = ob_stage_num_axes(sp);
  ob_ivar *order[5];
  for (int i = 0; i < nd - 1; i++) order[i] = ob_stage_axis(sp, i);
  order[nd - 1] = ob_stage_reduce_axis(sp, 0);
  order[nd] = ob_stage_axis(sp, nd - 1);
  ob_status rc = ob_sched_compute_at(s, sp, st, at);
  if (!rc) rc = ob_sched_reorder(s, sp, nd + 1, order);
  if (!rc) rc = ob_sched_vectorize(s, sp, ob_stage_axis(sp, nd - 1));
  return rc;
}

int ob_tmpl_vec_choices(const ob_target *tg, int64_t *out) {
  int n = 0;
  for (int64_t v = 4; v <= 4 * ob_tmpl_lanes(tg) && n < 8; v *= 2) out[n++] = v;
  return n;
}

int ob_rowred_lane_choices(const ob_target *tg, int64_t len, int64_t *out) {
  int64_t all[8];
  int na = ob_tmpl_vec_choices(tg, all), n = 0;
  for (int i = 0; i < na && all[i] <= len; i++) out[n++] = all[i];
  if (!n) out[n++] = 1;
  return n;
}

int64_t ob_rowred_default_lanes(const ob_target *tg, int64_t len) {
  int64_t ch[8], best = 1, best_cost = INT64_MAX, cap = 2 * ob_tmpl_lanes(tg);
  int n = ob_rowred_lane_choices(tg, len, ch);
  for (int i = 0; i < n; i++) {
    if (ch[i] > cap && i > 0) break;
    int64_t cost = len / ch[i] + ch[i] + len % ch[i];
    if (cost <= best_cost) {
      best = ch[i];
      best_cost = cost;
    }
  }
  return best;
}

ob_status ob_ew_schedule_planes(ob_sched *s, ob_stage *st, int64_t vec, int64_t unroll,
                                int64_t hw_parts) {
  ob_ivar *nc = NULL, *hwo = NULL, *hwi = ob_stage_axis(st, 2), *f = NULL, *o1, *vi, *uo, *ui;
  ob_status r = ob_sched_fuse(s, st, ob_stage_axis(st, 0), ob_stage_axis(st, 1), &nc);
  f = nc;
  if (!r && hw_parts > 1) r = ob_sched_split_nparts(s, st, hwi, hw_parts, &hwo, &hwi);
  if (!r && hwo) r = ob_sched_fuse(s, st, nc, hwo, &f);
  if (!r) r = ob_sched_split(s, st, hwi, vec, &o1, &vi);
  if (!r) r = ob_sched_split(s, st, o1, unroll, &uo, &ui);
  if (!r) r = ob_sched_parallel(s, st, f);
  if (!r && vec > 1) r = ob_sched_vectorize(s, st, vi);
  if (!r && unroll > 1) r = ob_sched_unroll(s, st, ui);
  return r;
}
