/* rowred_impl.h: schedule pieces shared by the pooling, normalization,
 * softmax and concat operators (rowred.c): a row reduction split into
 * vector-lane partials, and the loop nest of an elementwise NCHW stage. */
#ifndef OB_ROWRED_IMPL_H
#define OB_ROWRED_IMPL_H

#include "ops/ops_impl.h"

/* Value of column `col` of the row at `rows` (one index per row dim). */
typedef ob_expr *(*ob_rowred_fn)(ob_te *te, ob_expr *const *rows, ob_expr *col, void *user);

typedef struct ob_rowred {
  ob_tensor *partial; /* [rows..., lanes]; NULL when lanes == 1 */
  ob_tensor *total;   /* [rows...] */
  int64_t lanes;
} ob_rowred;

/* total[rows] = op over col < len of fn(rows, col), declared so that the
 * hot loop is a vector update of `lanes` accumulators (1 <= lanes <= len):
 *   partial[rows, l] = op over ko < len/lanes of fn(rows, ko*lanes + l)
 *   total[rows] = op over t < lanes + len%lanes of
 *                 (t < lanes ? partial[rows, t] : fn(rows, len - len%lanes - lanes + t))
 * i.e. the columns past the last full vector are folded in by the total.
 * Fails (ctx error set) on a malformed declaration. */
OB_NODISCARD ob_status ob_rowred_declare(ob_te *te, const char *name, ob_reduce_op op, int nrows,
                            const int64_t *rows, int64_t len, int64_t lanes, ob_rowred_fn fn,
                            void *user, ob_rowred *out);
/* Computes partial inside total's loop `at` (a leaf of total's stage), the
 * lane axis innermost and vectorized. No-op when there is no partial. */
OB_NODISCARD ob_status ob_rowred_schedule(ob_sched *s, const ob_rowred *r, ob_ivar *at);
/* Lane counts for a row of len: the target's vector widths
 * (ob_tmpl_vec_choices: 4 ... 4 x lanes) up to len, or {1} when len < 4.
 * Returns the count (at most 8). */
int ob_rowred_lane_choices(const ob_target *tg, int64_t len, int64_t *out);
/* Fallback lane count for a row of len, at most two registers' worth: the
 * choice with the fewest vector iterations plus scalar steps of the total
 * (lanes + len % lanes), the larger on a tie. */
int64_t ob_rowred_default_lanes(const ob_target *tg, int64_t len);

/* Elementwise stage over planes [N, C, H*W] (an NCHW tensor with H and W
 * declared as one axis, so that a vector along it never straddles a row
 * boundary in the index arithmetic): the plane cut into hw_parts pieces
 * that join the fused (n, c) axis in one parallel loop; each piece split by
 * vec (vectorized, tail guarded) and the vector loop's outer part split by
 * unroll (unrolled when > 1). */
OB_NODISCARD ob_status ob_ew_schedule_planes(ob_sched *s, ob_stage *st, int64_t vec, int64_t unroll,
                                int64_t hw_parts);

#endif
