/* convutil.c: what the convolution operators share: the naive grouped
 * convolution reference (double accumulation, epilogue applied per element:
 * no buffer, so nothing to run out of memory for) and zero
 * padding of the spatial dimensions as a select-based compute stage. */
#include <stdio.h>
#include <stdlib.h>

#include "ops/ops_impl.h"

/* Every tensor of a convolution, padded data included (templates may
 * materialize it); the channel-blocked layouts hold the same counts. */
ob_status ob_conv_check_sizes(ob_ctx *ctx, const char *op, const ob_conv_geom *p) {
  char what[64];
  const struct {
    const char *name;
    int64_t d[4];
  } t[] = {
      {"data (N x C x H x W)", {p->n, p->c, p->h, p->w}},
      {"weight (K x C/groups x R x S)", {p->k, p->c / p->g, p->r, p->s}},
      {"output (N x K x OH x OW)", {p->n, p->k, p->oh, p->ow}},
      {"padded data (N x C x (H+pads) x (W+pads))",
       {p->n, p->c, p->h + p->pt + p->pb, p->w + p->pl + p->pr}},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    snprintf(what, sizeof what, "%s %s", op, t[i].name);
    ob_status st = ob_check_numel(ctx, what, 4, t[i].d, NULL);
    if (st) return st;
  }
  return OB_OK;
}

/* First output position o in [0, out) whose input position o * stride + off
 * is >= 0, and one past the last whose position is < in. */
static void valid_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t *lo, int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int64_t h = in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1;
  *lo = l < out ? l : out;
  *hi = h < out ? h : out;
  if (*hi < *lo) *hi = *lo;
}

/* Each output sums its products in the order (c, ry, rx), taps in the
 * padding skipped, in double. The loops run that reduction outermost and a
 * chunk of one output row innermost, in a stack accumulator (no allocation
 * to fail): every output gets the same sum in the same order as one
 * output at a time would, with the bounds worked out once per tap instead
 * of tested per product (the tests run this reference on every zoo model,
 * under ASan too, where it was half of test_graph's time). */
#define CONV_REF_CHUNK 256
void ob_conv_ref(const ob_conv_geom *p, const char *epilogue, void *const *bufs) {
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, epilogue, &e) == OB_OK);
  const float *in = bufs[0], *wt = bufs[1];
  int a = 2;
  const float *bias = ob_epilogue_has(&e, OB_EPI_BIAS) ? bufs[a++] : NULL;
  const float *res = ob_epilogue_has(&e, OB_EPI_ADD) ? bufs[a++] : NULL;
  float *out = bufs[a];
  int64_t cpg = p->c / p->g, kpg = p->k / p->g;
  double acc[CONV_REF_CHUNK];
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t k = 0; k < p->k; k++) {
      int64_t c0 = k / kpg * cpg;
      for (int64_t y = 0; y < p->oh; y++)
        for (int64_t x0 = 0; x0 < p->ow; x0 += CONV_REF_CHUNK) {
          int64_t len = p->ow - x0 < CONV_REF_CHUNK ? p->ow - x0 : CONV_REF_CHUNK;
          for (int64_t j = 0; j < len; j++) acc[j] = 0;
          for (int64_t c = 0; c < cpg; c++)
            for (int64_t ry = 0; ry < p->r; ry++) {
              int64_t iy = y * p->sh + ry * p->dh - p->pt;
              if (iy < 0 || iy >= p->h) continue;
              const float *row = in + ((n * p->c + c0 + c) * p->h + iy) * p->w;
              const float *wrow = wt + ((k * cpg + c) * p->r + ry) * p->s;
              for (int64_t rx = 0; rx < p->s; rx++) {
                int64_t off = rx * p->dw - p->pl, lo, hi;
                valid_range(off, p->sw, p->w, x0 + len, &lo, &hi);
                if (lo < x0) lo = x0;
                double wv = wrow[rx];
                for (int64_t x = lo; x < hi; x++) acc[x - x0] += (double)row[x * p->sw + off] * wv;
              }
            }
          for (int64_t j = 0; j < len; j++) {
            int64_t i = ((n * p->k + k) * p->oh + y) * p->ow + x0 + j;
            out[i] = (float)ob_epilogue_ref_at(&e, acc[j], i, p->k, p->oh * p->ow, bias, res);
          }
        }
    }
}

int64_t ob_window_out(int64_t in, int64_t pad_a, int64_t pad_b, int64_t dil, int64_t k,
                      int64_t stride) {
  int64_t span, room;
  if (stride < 1 || dil < 1 || k < 1 || in < 1 || pad_a < 0 || pad_b < 0) return 0;
  if (!ob_mul_i64(dil, k - 1, &span) || !ob_add_i64(span, 1, &span)) return 0;
  if (!ob_add_i64(in, pad_a, &room) || !ob_add_i64(room, pad_b, &room)) return 0;
  if (room < span) return 0; /* C division truncates toward 0: test before dividing */
  return (room - span) / stride + 1;
}

ob_tensor *ob_pad_spatial(ob_te *te, ob_tensor *data, int hdim, int wdim, int64_t pt, int64_t pl,
                          int64_t pb, int64_t pr) {
  if (!(pt || pl || pb || pr)) return data;
  static const char *const names[8] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
  int nd = ob_tensor_ndim(data);
  ob_ivar *ax[8];
  ob_expr *idx[8];
  for (int d = 0; d < nd; d++) {
    int64_t ext = ob_tensor_dim(data, d) + (d == hdim ? pt + pb : d == wdim ? pl + pr : 0);
    ax[d] = ob_te_axis(te, names[d], ext);
    idx[d] = ob_te_var(te, ax[d]);
  }
  ob_expr *vh = idx[hdim], *vw = idx[wdim];
  int64_t h = ob_tensor_dim(data, hdim), w = ob_tensor_dim(data, wdim);
  ob_expr *cond = ob_te_bin(te, OB_AND,
                            ob_te_bin(te, OB_AND, ob_te_bin(te, OB_GE, vh, ob_te_int(te, pt)),
                                      ob_te_bin(te, OB_LT, vh, ob_te_int(te, h + pt))),
                            ob_te_bin(te, OB_AND, ob_te_bin(te, OB_GE, vw, ob_te_int(te, pl)),
                                      ob_te_bin(te, OB_LT, vw, ob_te_int(te, w + pl))));
  idx[hdim] = OB_TE_SUB(te, vh, ob_te_int(te, pt));
  idx[wdim] = OB_TE_SUB(te, vw, ob_te_int(te, pl));
  return ob_te_compute(te, "data_pad", nd, ax,
                       ob_te_select(te, cond, ob_te_load(te, data, nd, idx), ob_te_float(te, OB_F32, 0.0)));
}
