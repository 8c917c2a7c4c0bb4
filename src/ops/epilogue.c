/* epilogue.c: the elementwise tails (bias, relu, relu6, residual add) that
 * conv2d and dense fuse into their output stage by compute_inline. */
#include <string.h>

#include "ops/ops_impl.h"

static const char *const k_epi_names[OB_EPI_COUNT] = {"bias", "relu", "relu6", "add"};

ob_status ob_epilogue_parse(ob_ctx *ctx, const char *list, ob_epilogue *out) {
  memset(out, 0, sizeof *out);
  if (!list || !*list) return OB_OK;
  char buf[64];
  if (strlen(list) >= sizeof buf)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "epilogue '%s' is too long", list);
  strcpy(buf, list);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < OB_EPI_COUNT && strcmp(tok, k_epi_names[k])) k++;
    if (k == OB_EPI_COUNT)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "unknown epilogue step '%s' (known: bias, relu, relu6, add)", tok);
    if (out->n == 8) return ob_fail(ctx, OB_ERR_INVALID_ARG, "epilogue '%s' has too many steps", list);
    for (int i = 0; i < out->n; i++)
      if (out->step[i] == (ob_epi)k && (k == OB_EPI_BIAS || k == OB_EPI_ADD))
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "epilogue '%s' repeats '%s'", list, tok);
    out->step[out->n++] = (ob_epi)k;
  }
  return OB_OK;
}

bool ob_epilogue_has(const ob_epilogue *e, ob_epi step) {
  for (int i = 0; i < e->n; i++)
    if (e->step[i] == step) return true;
  return false;
}

void ob_epilogue_placeholders(ob_te *te, const ob_epilogue *e, const ob_tensor *x, int chan_dim,
                              ob_epi_inputs *in) {
  ob_epilogue_placeholders_n(te, e, x, ob_tensor_dim(x, chan_dim), in);
}

void ob_epilogue_placeholders_n(ob_te *te, const ob_epilogue *e, const ob_tensor *x, int64_t chans,
                                ob_epi_inputs *in) {
  memset(in, 0, sizeof *in);
  if (ob_epilogue_has(e, OB_EPI_BIAS))
    in->bias = ob_te_placeholder(te, "bias", 1, (int64_t[]){chans}, OB_F32);
  if (ob_epilogue_has(e, OB_EPI_ADD)) {
    int64_t shape[8];
    for (int d = 0; d < ob_tensor_ndim(x); d++) shape[d] = ob_tensor_dim(x, d);
    in->residual = ob_te_placeholder(te, "residual", ob_tensor_ndim(x), shape, OB_F32);
  }
}

ob_tensor *ob_epilogue_apply(ob_te *te, const ob_epilogue *e, ob_tensor *x, int chan_dim,
                             const ob_epi_inputs *in, ob_tensor **mid, int *nmid) {
  return ob_epilogue_apply_blocked(te, e, x, chan_dim, -1, ob_tensor_dim(x, chan_dim), in, mid, nmid);
}

ob_tensor *ob_epilogue_apply_blocked(ob_te *te, const ob_epilogue *e, ob_tensor *x, int chan_dim,
                                     int block_dim, int64_t chans, const ob_epi_inputs *in,
                                     ob_tensor **mid, int *nmid) {
  (void)chans;
  *nmid = 0;
  ob_tensor *cur = x;
  int nd = ob_tensor_ndim(x);
  for (int s = 0; s < e->n; s++) {
    static const char *const axn[8] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
    ob_ivar *ax[8];
    ob_expr *idx[8];
    for (int d = 0; d < nd; d++) {
      ax[d] = ob_te_axis(te, axn[d], ob_tensor_dim(x, d));
      idx[d] = ob_te_var(te, ax[d]);
    }
    ob_expr *v = ob_te_load(te, cur, nd, idx), *body = NULL;
    switch (e->step[s]) {
    case OB_EPI_BIAS: {
      ob_expr *ch = idx[chan_dim];
      if (block_dim >= 0)
        ch = OB_TE_ADD(te, OB_TE_MUL(te, ch, ob_te_int(te, ob_tensor_dim(x, block_dim))), idx[block_dim]);
      body = OB_TE_ADD(te, v, ob_te_load(te, in->bias, 1, &ch));
      break;
    }
    case OB_EPI_RELU: body = ob_te_bin(te, OB_MAX, v, ob_te_float(te, OB_F32, 0.0)); break;
    case OB_EPI_RELU6:
      body = ob_te_bin(te, OB_MIN, ob_te_bin(te, OB_MAX, v, ob_te_float(te, OB_F32, 0.0)),
                       ob_te_float(te, OB_F32, 6.0));
      break;
    case OB_EPI_ADD: body = OB_TE_ADD(te, v, ob_te_load(te, in->residual, nd, idx)); break;
    default: OB_ASSERT(!"bad epilogue step");
    }
    if (cur != x) mid[(*nmid)++] = cur;
    cur = ob_te_compute(te, k_epi_names[e->step[s]], nd, ax, body);
    OB_ASSERT(cur || ob_te_failed(te)); /* well-formed by construction; NULL: out of memory */
  }
  return cur;
}

int ob_epilogue_args(const ob_epilogue *e, int64_t chans, int64_t out_numel, ob_arg_info *out) {
  int n = 0;
  if (ob_epilogue_has(e, OB_EPI_BIAS)) out[n++] = (ob_arg_info){"bias", chans, true};
  if (ob_epilogue_has(e, OB_EPI_ADD)) out[n++] = (ob_arg_info){"residual", out_numel, true};
  return n;
}

double ob_epilogue_ref_at(const ob_epilogue *e, double v, int64_t i, int64_t chans, int64_t inner,
                          const float *bias, const float *residual) {
  for (int s = 0; s < e->n; s++) {
    switch (e->step[s]) {
    case OB_EPI_BIAS: v = (float)(v + bias[(i / inner) % chans]); break;
    case OB_EPI_RELU: v = v > 0 ? v : 0; break;
    case OB_EPI_RELU6: v = v < 0 ? 0 : v > 6 ? 6 : v; break;
    case OB_EPI_ADD: v = (float)(v + residual[i]); break;
    default: break;
    }
  }
  return v;
}

void ob_epilogue_ref(const ob_epilogue *e, double *acc, int64_t numel, int64_t chans,
                     int64_t inner, const float *bias, const float *residual) {
  for (int64_t i = 0; i < numel; i++) acc[i] = ob_epilogue_ref_at(e, acc[i], i, chans, inner, bias, residual);
}
