/* ref.c: naive reference execution of nodes and whole graphs. A node that
 * maps to an ob_workload (tasks.c) runs the operator library's reference,
 * the very code that checks kernels, with the node's inputs in order and
 * its output; every other node runs its own reference in ops.c. Whole
 * graphs allocate each activation when computed and free it after its last
 * reader. */
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph_impl.h"

/* Operators whose workload arguments are the node's inputs in order, then
 * the output (MatMul is not: its workload wants B transposed). */
static bool direct_workload(ob_gop op) {
  switch (op) {
  case OB_GOP_CONV: case OB_GOP_DENSE: case OB_GOP_GEMM: case OB_GOP_MAXPOOL: case OB_GOP_AVGPOOL:
  case OB_GOP_GLOBALAVGPOOL: case OB_GOP_BATCHNORM: case OB_GOP_LAYERNORM: case OB_GOP_SOFTMAX:
  case OB_GOP_RELU: case OB_GOP_SIGMOID: case OB_GOP_TANH: case OB_GOP_GELU: case OB_GOP_ADD: case OB_GOP_MUL:
  case OB_GOP_CONCAT:
    return true;
  default: return false;
  }
}

ob_status ob_ref_node(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in, void *const *out) {
  const gop_def *d = ob_gop_def(n->op);
  if (direct_workload(n->op)) {
    ob_workload wl[2];
    int cnt[2];
    if (ob_gnode_workloads(ctx, g, n, wl, cnt, 2) == 1) {
      void *bufs[OB_GRAPH_MAX_DIMS + 8];
      int k = 0;
      for (int i = 0; i < n->nin; i++)
        if (n->in[i] >= 0) bufs[k++] = (void *)in[i];
      bufs[k++] = out[0];
      OB_ASSERT(k == ob_workload_num_args(&wl[0]));
      ob_workload_reference(&wl[0], bufs);
      return OB_OK;
    }
  }
  if (!d->ref)
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "no reference for this configuration (the operator library refuses it)");
  return d->ref(ctx, g, n, in, out);
}

ob_status ob_graph_node_reference(ob_ctx *ctx, const ob_graph *g, int node, const void *const *in, void *const *out) {
  if (node < 0 || node >= g->nn) return ob_fail(ctx, OB_ERR_INVALID_ARG, "node %d is not in the graph", node);
  const gnode *n = g->n[node];
  for (int i = 0; i < n->nout; i++)
    if (g->t[n->out[i]]->ndim < 0) return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shapes are not inferred");
  return ob_ref_node(ctx, g, n, in, out);
}

ob_status ob_graph_run_reference(ob_ctx *ctx, const ob_graph *g, const void *const *inputs, void *const *outputs) {
  ob_status st = OB_OK;
  void **buf = calloc((size_t)g->nt + 1, sizeof(void *));
  bool *owned = calloc((size_t)g->nt + 1, 1);
  int *uses = calloc((size_t)g->nt + 1, sizeof(int));
  if (!buf || !owned || !uses) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int i = 0; i < g->nt; i++)
    if (g->t[i]->kind == OB_GT_CONST) buf[i] = g->t[i]->data;
  for (int i = 0; i < g->ninputs; i++) buf[g->inputs[i]] = (void *)inputs[i];
  for (int i = 0; i < g->nn; i++)
    if (!g->n[i]->dead)
      for (int k = 0; k < g->n[i]->nin; k++)
        if (g->n[i]->in[k] >= 0) uses[g->n[i]->in[k]]++;
  for (int i = 0; i < g->noutputs; i++) uses[g->outputs[i]] += 1 << 20; /* never freed early */
  for (int i = 0; i < g->nn && !st; i++) {
    const gnode *n = g->n[i];
    if (n->dead) continue;
    const void *in[1024];
    void *out[16];
    for (int k = 0; k < n->nin; k++) {
      in[k] = n->in[k] >= 0 ? buf[n->in[k]] : NULL;
      if (n->in[k] >= 0 && !in[k]) {
        st = ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input '%s' has no value", g->t[n->in[k]]->name);
        goto done;
      }
    }
    for (int k = 0; k < n->nout; k++) {
      gtensor *y = g->t[n->out[k]];
      if (y->ndim < 0) {
        st = ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape of '%s' is not inferred", y->name);
        goto done;
      }
      size_t bytes = ob_gt_bytes(y);
      buf[n->out[k]] = malloc(bytes ? bytes : 1);
      if (!buf[n->out[k]]) {
        st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory (%zu bytes for '%s')", bytes, y->name);
        goto done;
      }
      owned[n->out[k]] = true;
      out[k] = buf[n->out[k]];
    }
    st = ob_ref_node(ctx, g, n, in, out);
    for (int k = 0; k < n->nin; k++) {
      int t = n->in[k];
      if (t >= 0 && --uses[t] == 0 && owned[t]) {
        free(buf[t]);
        buf[t] = NULL;
        owned[t] = false;
      }
    }
  }
  for (int i = 0; i < g->noutputs && !st; i++) {
    int t = g->outputs[i];
    if (!buf[t]) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "graph output '%s' has no value", g->t[t]->name);
      break;
    }
    memcpy(outputs[i], buf[t], ob_gt_bytes(g->t[t]));
  }
done:
  if (buf && owned)
    for (int i = 0; i < g->nt; i++)
      if (owned[i]) free(buf[i]);
  free(buf);
  free(owned);
  free(uses);
  return st;
}

void ob_graph_fill_input(const ob_graph *g, int i, uint64_t seed, void *buf) {
  const gtensor *x = g->t[g->inputs[i]];
  ob_rng r = {seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1};
  int64_t cnt = ob_gt_numel(x);
  if (x->dtype == OB_F32) {
    ob_rng_fill(&r, buf, cnt);
    return;
  }
  int64_t hi = 2;
  for (int k = 0; k < g->nn; k++) {
    const gnode *n = g->n[k];
    if (!n->dead && n->op == OB_GOP_GATHER && n->nin > 1 && n->in[1] == g->inputs[i]) {
      const gtensor *d = gin(g, n, 0);
      int a = (int)ob_gattr_i(n, "axis", 0);
      if (d->ndim > 0) hi = d->dims[a < 0 ? a + d->ndim : a];
    }
  }
  for (int64_t k = 0; k < cnt; k++) {
    uint64_t v = ob_rng_next(&r) % (uint64_t)(hi > 0 ? hi : 1);
    if (x->dtype == OB_I64) ((int64_t *)buf)[k] = (int64_t)v;
    else ((uint8_t *)buf)[k] = (uint8_t)(v & 1);
  }
}
