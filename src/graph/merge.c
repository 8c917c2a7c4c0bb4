/* merge.c: operator merging, the graph rewrite behind IOS's "merge" stages:
 * convolutions that read the same input with the same kernel size, strides,
 * pads, dilations and fused activation become one convolution with all
 * their output channels, and each original output becomes a channel Slice
 * of it. The inter-operator scheduler decides which convolutions merge;
 * this file only rewrites the graph (the runtime runs the merged conv as one
 * kernel). The new constants and nodes belong to the graph's arena. */
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph_impl.h"

static bool same_ints(const gnode *a, const gnode *b, const char *name, int n, const int64_t *dflt) {
  const int64_t *va = NULL, *vb = NULL;
  int na = ob_gattr_ints(a, name, &va), nb = ob_gattr_ints(b, name, &vb);
  for (int i = 0; i < n; i++) {
    int64_t x = na == n ? va[i] : dflt[i], y = nb == n ? vb[i] : dflt[i];
    if (x != y) return false;
  }
  return true;
}

ob_status ob_graph_merge_check(ob_ctx *ctx, const ob_graph *g, int n, const int *nodes) {
  if (n < 2) return ob_fail(ctx, OB_ERR_INVALID_ARG, "a merge needs at least two convolutions (got %d)", n);
  static const int64_t one[4] = {1, 1, 1, 1}, zero[4] = {0, 0, 0, 0};
  const gnode *a = NULL;
  for (int i = 0; i < n; i++) {
    if (nodes[i] < 0 || nodes[i] >= g->nn) return ob_fail(ctx, OB_ERR_INVALID_ARG, "node %d is not in the graph", nodes[i]);
    const gnode *c = g->n[nodes[i]];
    for (int j = 0; j < i; j++)
      if (nodes[j] == nodes[i]) return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "listed twice in one merge");
    if (c->dead || c->op != OB_GOP_CONV) return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "only live convolutions merge");
    const gtensor *w = gin(g, c, 1), *b = gin(g, c, 2);
    if (ob_gattr_i(c, "group", 1) != 1) return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "a grouped convolution does not merge");
    if (gin(g, c, 3)) return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "a convolution with a fused residual does not merge");
    if (w->kind != OB_GT_CONST || !w->data || w->ndim != 4 || (b && (b->kind != OB_GT_CONST || !b->data)))
      return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "weights and bias must be constants to merge");
    if (gout(g, c, 0)->ndim != 4) return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "output shape unknown (infer shapes first)");
    if (strcmp(ob_gattr_s(c, "auto_pad", "NOTSET"), "NOTSET"))
      return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "auto_pad must be resolved (infer shapes first)");
    if (!a) {
      a = c;
      continue;
    }
    const gtensor *wa = gin(g, a, 1);
    if (c->in[0] != a->in[0])
      return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "reads '%s', not '%s' as '%s' does", gin(g, c, 0)->name, gin(g, a, 0)->name,
                      a->name);
    if (w->dims[2] != wa->dims[2] || w->dims[3] != wa->dims[3])
      return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "kernel %lldx%lld differs from '%s''s %lldx%lld", (long long)w->dims[2],
                      (long long)w->dims[3], a->name, (long long)wa->dims[2], (long long)wa->dims[3]);
    if (!same_ints(a, c, "strides", 2, one) || !same_ints(a, c, "pads", 4, zero) || !same_ints(a, c, "dilations", 2, one))
      return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "strides, pads or dilations differ from '%s''s", a->name);
    if (strcmp(ob_gattr_s(a, "activation", ""), ob_gattr_s(c, "activation", "")))
      return ob_gfail(ctx, c, OB_ERR_INVALID_ARG, "fused activation differs from '%s''s", a->name);
  }
  return OB_OK;
}

ob_status ob_graph_merge_convs(ob_ctx *ctx, ob_graph *g, int n, const int *nodes, int *merged) {
  ob_status st = ob_graph_merge_check(ctx, g, n, nodes);
  if (st) return st;
  gnode **cs = malloc(sizeof(gnode *) * (size_t)n);
  if (!cs) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  int first = nodes[0];
  bool bias = false;
  int64_t K = 0;
  for (int i = 0; i < n; i++) {
    cs[i] = g->n[nodes[i]];
    first = nodes[i] < first ? nodes[i] : first;
    bias |= gin(g, cs[i], 2) != NULL;
    K += gin(g, cs[i], 1)->dims[0];
  }
  const gtensor *w0 = gin(g, cs[0], 1);
  int64_t per = w0->dims[1] * w0->dims[2] * w0->dims[3];
  float *w = malloc(sizeof(float) * (size_t)(K * per)), *b = calloc((size_t)K, sizeof(float));
  if (!w || !b) {
    free(cs), free(w), free(b);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  for (int i = 0, k0 = 0; i < n; i++) {
    const gtensor *wi = gin(g, cs[i], 1), *bi = gin(g, cs[i], 2);
    int64_t ki = wi->dims[0];
    memcpy(w + k0 * per, wi->data, sizeof(float) * (size_t)(ki * per));
    if (bi) memcpy(b + k0, bi->data, sizeof(float) * (size_t)ki);
    k0 += (int)ki;
  }
  char nm[300];
  int tw = -1, tb = -1;
  snprintf(nm, sizeof nm, "%.250s.merged.weight", cs[0]->name);
  st = ob_graph_add_const(g, nm, OB_F32, 4, (int64_t[]){K, w0->dims[1], w0->dims[2], w0->dims[3]}, w, true, &tw);
  if (!st && bias) {
    snprintf(nm, sizeof nm, "%.250s.merged.bias", cs[0]->name);
    st = ob_graph_add_const(g, nm, OB_F32, 1, &K, b, true, &tb);
  }
  free(w), free(b);
  if (st) {
    free(cs);
    return st;
  }
  snprintf(nm, sizeof nm, "%.250s.merged", cs[0]->name);
  int y = ob_graph_new_tensor(g, nm);
  int mi = ob_graph_add_node_raw(g, OB_GOP_CONV, nm, bias ? 3 : 2, (int[]){cs[0]->in[0], tw, tb}, 1, &y);
  /* the attributes of the first: the check made them equal */
  const gnode *a = cs[0];
  for (int k = 0; k < a->nattr; k++) {
    const gattr *at = &a->attrs[k];
    switch (at->kind) {
    case GA_INT: ob_graph_set_attr_i(g, mi, at->name, at->i); break;
    case GA_FLOAT: ob_graph_set_attr_f(g, mi, at->name, at->f); break;
    case GA_STRING: ob_graph_set_attr_s(g, mi, at->name, at->s); break;
    case GA_INTS: ob_graph_set_attr_ints(g, mi, at->name, at->n, at->ints); break;
    case GA_FLOATS: ob_graph_set_attr_floats(g, mi, at->name, at->n, at->floats); break;
    case GA_KIND_COUNT: break;
    }
  }
  ob_graph_move_last_before(g, first);
  mi = first;
  st = ob_graph_infer_node(ctx, g, mi);
  /* one Slice per original output, right after the merged conv, taking
   * over the output tensor (so every reader stays as it was) */
  int ax = ob_graph_tensor_find(g, "const.merge_axis1");
  if (!st && ax < 0) st = ob_graph_add_const(g, "const.merge_axis1", OB_I64, 1, (int64_t[]){1}, (int64_t[]){1}, false, &ax);
  for (int i = 0, k0 = 0; i < n && !st; i++) {
    int64_t ki = gin(g, cs[i], 1)->dims[0], s0 = k0, e0 = k0 + ki;
    int ts = -1, te = -1;
    snprintf(nm, sizeof nm, "%.250s.slice.starts", cs[i]->name);
    st = ob_graph_add_const(g, nm, OB_I64, 1, (int64_t[]){1}, &s0, false, &ts);
    snprintf(nm, sizeof nm, "%.250s.slice.ends", cs[i]->name);
    if (!st) st = ob_graph_add_const(g, nm, OB_I64, 1, (int64_t[]){1}, &e0, false, &te);
    if (st) break;
    int out = cs[i]->out[0];
    cs[i]->dead = true;
    snprintf(nm, sizeof nm, "%.250s.slice", cs[i]->name);
    ob_graph_add_node_raw(g, OB_GOP_SLICE, nm, 4, (int[]){y, ts, te, ax}, 1, &out);
    ob_graph_move_last_before(g, mi + 1 + i);
    st = ob_graph_infer_node(ctx, g, mi + 1 + i);
    k0 += (int)ki;
  }
  free(cs);
  if (!st && merged) *merged = mi;
  return st;
}
