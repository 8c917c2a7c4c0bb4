/* passes.c: graph passes, each a separate function that changes the graph
 * in place and keeps it valid and in topological order: shape inference
 * (with values of small integer tensors), constant folding, batch-norm
 * folding, fusion into Conv/Dense epilogues, dead-node elimination and
 * layout planning. New constants and rewired nodes live in the graph's
 * arena. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph_impl.h"

/* Values propagated by shape inference: small results of small inputs. */
enum { PROP_MAX_OUT = 4096, PROP_MAX_IN = 1 << 16 };
/* Constant folding does not materialize results larger than this. */
#define FOLD_MAX_NUMEL (INT64_C(1) << 26)

static bool has_value(const gtensor *t) { return t && t->data != NULL; }

/* Evaluates node n into fresh arena buffers; outputs[k] receive them. */
static ob_status eval_node(ob_ctx *ctx, ob_graph *g, gnode *n, void **outs) {
  const void *in[1024];
  void *out[16];
  for (int k = 0; k < n->nin; k++) in[k] = n->in[k] >= 0 ? g->t[n->in[k]]->data : NULL;
  for (int k = 0; k < n->nout; k++) {
    size_t b = ob_gt_bytes(gout(g, n, k));
    out[k] = outs[k] = ob_arena_alloc(g->arena, b ? b : 1);
  }
  return ob_ref_node(ctx, g, n, in, out);
}

ob_status ob_graph_infer_node(ob_ctx *ctx, ob_graph *g, int i) {
  gnode *n = g->n[i];
  if (n->dead) return OB_OK;
  for (int k = 0; k < n->nin; k++)
    if (n->in[k] >= 0 && g->t[n->in[k]]->ndim < 0)
      return ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "shape of input '%s' is unknown", g->t[n->in[k]]->name);
  ob_status st = ob_gop_def(n->op)->infer(ctx, g, n);
  if (st) return st;
  /* propagate values of small tensors (Shape -> Gather -> Concat -> Reshape) */
  bool all = true;
  int64_t insz = 0, outsz = 0;
  for (int k = 0; k < n->nin && all; k++) {
    if (n->in[k] < 0) continue;
    if (!has_value(g->t[n->in[k]]) && n->op != OB_GOP_SHAPE) all = false;
    insz += ob_gt_numel(g->t[n->in[k]]);
  }
  for (int k = 0; k < n->nout; k++) {
    if (has_value(gout(g, n, k))) all = false; /* already known */
    outsz += ob_gt_numel(gout(g, n, k));
  }
  if (n->op == OB_GOP_SHAPE) insz = 0;
  if (all && insz <= PROP_MAX_IN && outsz <= PROP_MAX_OUT) {
    void *outs[16];
    if ((st = eval_node(ctx, g, n, outs))) return st;
    for (int k = 0; k < n->nout; k++) gout(g, n, k)->data = outs[k];
  }
  return OB_OK;
}

ob_status ob_graph_infer_shapes(ob_ctx *ctx, ob_graph *g) {
  for (int i = 0; i < g->nn; i++) {
    ob_status st = ob_graph_infer_node(ctx, g, i);
    if (st) return st;
  }
  return OB_OK;
}

ob_status ob_graph_fold_constants(ob_ctx *ctx, ob_graph *g, int *folded) {
  int cnt = 0;
  for (int i = 0; i < g->nn; i++) {
    gnode *n = g->n[i];
    if (n->dead) continue;
    bool all = true, param = false;
    int64_t outsz = 0;
    for (int k = 0; k < n->nin && all; k++) {
      gtensor *t = gin(g, n, k);
      if (!t) continue;
      if (!has_value(t) && n->op != OB_GOP_SHAPE) all = false;
      param |= t->is_param;
    }
    for (int k = 0; k < n->nout; k++) {
      if (gout(g, n, k)->ndim < 0) all = false;
      else outsz += ob_gt_numel(gout(g, n, k));
    }
    if (n->op == OB_GOP_SHAPE && gin(g, n, 0)->ndim >= 0) all = true;
    if (!all || outsz > FOLD_MAX_NUMEL) continue;
    bool known = true;
    for (int k = 0; k < n->nout; k++) known &= has_value(gout(g, n, k));
    if (!known) {
      void *outs[16];
      ob_status st = eval_node(ctx, g, n, outs);
      if (st) return st;
      for (int k = 0; k < n->nout; k++) gout(g, n, k)->data = outs[k];
    }
    for (int k = 0; k < n->nout; k++) {
      gtensor *y = gout(g, n, k);
      ob_graph_make_const(g, n->out[k], y->data);
      y->is_param = param && y->dtype == OB_F32;
    }
    n->dead = true;
    cnt++;
  }
  if (folded) *folded = cnt;
  return OB_OK;
}

/* Gives node n room for `nin` inputs (new ones -1). */
static void widen_inputs(ob_graph *g, gnode *n, int nin) {
  if (n->nin >= nin) return;
  int *in = ob_arena_alloc(g->arena, sizeof(int) * (size_t)nin);
  for (int i = 0; i < nin; i++) in[i] = i < n->nin ? n->in[i] : -1;
  n->in = in;
  n->nin = nin;
}

/* A new float constant named after base. */
static int new_const(ob_graph *g, const char *base, int ndim, const int64_t *dims, const float *data, bool param) {
  int t = ob_graph_new_tensor(g, base);
  gtensor *x = g->t[t];
  ob_gt_set(x, OB_F32, ndim, dims);
  ob_graph_make_const(g, t, ob_graph_dup(g, data, ob_gt_bytes(x)));
  x->is_param = param;
  return t;
}

/* The single live node reading tensor t (NULL if none or several). */
static gnode *sole_reader(const ob_graph *g, int t, int *idx) {
  gnode *r = NULL;
  for (int i = 0; i < g->nn; i++) {
    gnode *n = g->n[i];
    if (n->dead) continue;
    for (int k = 0; k < n->nin; k++)
      if (n->in[k] == t) {
        if (r && r != n) return NULL;
        r = n;
        *idx = i;
      }
  }
  return r;
}

/* Node `from` takes over node `to`'s output 0 (to dies). */
static void take_output(ob_graph *g, gnode *from, int from_idx, gnode *to) {
  from->out[0] = to->out[0];
  g->t[to->out[0]]->producer = from_idx;
  to->dead = true;
}

ob_status ob_graph_fold_batchnorm(ob_ctx *ctx, ob_graph *g, int *folded) {
  (void)ctx;
  int cnt = 0;
  for (int i = 0; i < g->nn; i++) {
    gnode *bn = g->n[i];
    if (bn->dead || bn->op != OB_GOP_BATCHNORM) continue;
    int x = bn->in[0], ci = g->t[x]->producer;
    if (ci < 0) continue;
    gnode *c = g->n[ci];
    if (c->dead || c->op != OB_GOP_CONV || gin(g, c, 3) || *ob_gattr_s(c, "activation", "")) continue;
    if (ob_graph_uses(g, x) != 1 || ob_graph_is_output(g, x)) continue;
    gtensor *w = gin(g, c, 1), *b = gin(g, c, 2);
    if (w->kind != OB_GT_CONST || (b && b->kind != OB_GT_CONST)) continue;
    bool consts = true;
    for (int k = 1; k < 5; k++) consts &= gin(g, bn, k)->kind == OB_GT_CONST;
    if (!consts) continue;
    int64_t K = w->dims[0], per = ob_gt_numel(w) / K;
    const float *sc = gin(g, bn, 1)->data, *be = gin(g, bn, 2)->data, *mu = gin(g, bn, 3)->data, *var = gin(g, bn, 4)->data;
    double eps = ob_gattr_f(bn, "epsilon", 1e-5);
    float *nw = malloc(sizeof(float) * (size_t)(K * per)), *nb = malloc(sizeof(float) * (size_t)K);
    if (!nw || !nb) {
      free(nw), free(nb);
      return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    }
    const float *W = w->data;
    for (int64_t k = 0; k < K; k++) {
      double s = (double)sc[k] / sqrt((double)var[k] + eps);
      for (int64_t j = 0; j < per; j++) nw[k * per + j] = (float)(W[k * per + j] * s);
      double ob = b ? ((const float *)b->data)[k] : 0;
      nb[k] = (float)((ob - mu[k]) * s + be[k]);
    }
    char nm[300];
    snprintf(nm, sizeof nm, "%.250s.bnfold_w", w->name);
    int tw = new_const(g, nm, w->ndim, w->dims, nw, true);
    snprintf(nm, sizeof nm, "%.250s.bnfold_b", c->name);
    int tb = new_const(g, nm, 1, &K, nb, true);
    free(nw), free(nb);
    widen_inputs(g, c, 3);
    c->in[1] = tw;
    c->in[2] = tb;
    take_output(g, c, ci, bn);
    cnt++;
  }
  if (folded) *folded = cnt;
  return OB_OK;
}

/* Transposed copy of a 2-D float constant [R, C] -> [C, R]. */
static float *transposed(const gtensor *t) {
  int64_t R = t->dims[0], C = t->dims[1];
  float *o = malloc(sizeof(float) * (size_t)(R * C > 0 ? R * C : 1));
  if (!o) return NULL;
  ob_transpose32(t->data, o, R, C);
  return o;
}

static void clear_attrs(gnode *n) { n->nattr = 0; }

/* Gemm / MatMul by a constant -> Dense. */
static ob_status to_dense(ob_ctx *ctx, ob_graph *g, int *count) {
  for (int i = 0; i < g->nn; i++) {
    gnode *n = g->n[i];
    if (n->dead) continue;
    gtensor *x = gin(g, n, 0), *w = gin(g, n, 1);
    if (n->op == OB_GOP_GEMM) {
      gtensor *c = gin(g, n, 2);
      if (ob_gattr_i(n, "transA", 0) || ob_gattr_f(n, "alpha", 1) != 1 || ob_gattr_f(n, "beta", 1) != 1) continue;
      if (w->kind != OB_GT_CONST || (c && c->kind != OB_GT_CONST)) continue;
      bool tb = ob_gattr_i(n, "transB", 0);
      int64_t N = tb ? w->dims[0] : w->dims[1];
      if (c && !(ob_gt_numel(c) == N && c->dims[c->ndim - 1] == N)) continue;
      int tw = n->in[1];
      if (!tb) {
        float *wt = transposed(w);
        if (!wt) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
        char nm[300];
        snprintf(nm, sizeof nm, "%.250s.T", w->name);
        tw = new_const(g, nm, 2, (int64_t[]){w->dims[1], w->dims[0]}, wt, w->is_param);
        free(wt);
      }
      int tbias = -1;
      if (c) {
        char nm[300];
        snprintf(nm, sizeof nm, "%.250s.flat", c->name);
        tbias = c->ndim == 1 ? n->in[2] : new_const(g, nm, 1, &N, c->data, c->is_param);
      }
      widen_inputs(g, n, 3);
      n->in[1] = tw;
      n->in[2] = tbias;
      n->op = OB_GOP_DENSE;
      clear_attrs(n);
      (*count)++;
    } else if (n->op == OB_GOP_MATMUL && w->kind == OB_GT_CONST && w->ndim == 2 && x->ndim >= 2) {
      float *wt = transposed(w);
      if (!wt) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
      char nm[300];
      snprintf(nm, sizeof nm, "%.250s.T", w->name);
      int tw = new_const(g, nm, 2, (int64_t[]){w->dims[1], w->dims[0]}, wt, w->is_param);
      free(wt);
      n->in[1] = tw;
      n->op = OB_GOP_DENSE;
      clear_attrs(n);
      (*count)++;
    }
  }
  return OB_OK;
}

/* Moves node `from` to position `to` (to > from), shifting the nodes between. */
static void move_node(ob_graph *g, int from, int to) {
  gnode *n = g->n[from];
  memmove(&g->n[from], &g->n[from + 1], sizeof(gnode *) * (size_t)(to - from));
  g->n[to] = n;
  for (int i = from; i <= to; i++)
    for (int k = 0; k < g->n[i]->nout; k++) g->t[g->n[i]->out[k]]->producer = i;
}

/* One fusion step into node c (Conv or Dense) at index ci; true if fused. */
static bool fuse_one(ob_graph *g, gnode *c, int ci) {
  int y = c->out[0];
  if (ob_graph_is_output(g, y) || ob_graph_uses(g, y) != 1) return false;
  int ui = -1;
  gnode *u = sole_reader(g, y, &ui);
  if (!u) return false;
  const char *act = ob_gattr_s(c, "activation", "");
  if (*act) return false;
  gtensor *yt = g->t[y];
  int64_t chans = c->op == OB_GOP_CONV ? yt->dims[1] : yt->dims[yt->ndim - 1];
  if (u->op == OB_GOP_RELU) {
    ob_graph_set_attr_s(g, ci, "activation", "relu");
    take_output(g, c, ci, u);
    return true;
  }
  if (u->op == OB_GOP_CLIP) {
    gtensor *lo = gin(g, u, 1), *hi = gin(g, u, 2);
    if (!lo || !hi || !lo->data || !hi->data || lo->kind != OB_GT_CONST || hi->kind != OB_GT_CONST) return false;
    if (*(const float *)lo->data != 0 || *(const float *)hi->data != 6) return false;
    ob_graph_set_attr_s(g, ci, "activation", "relu6");
    take_output(g, c, ci, u);
    return true;
  }
  if (u->op != OB_GOP_ADD) return false;
  int other = u->in[0] == y ? u->in[1] : u->in[0];
  if (other == y) return false;
  gtensor *o = g->t[other];
  if (o->dtype != OB_F32) return false;
  bool same = o->ndim == yt->ndim && !memcmp(o->dims, yt->dims, sizeof(int64_t) * (size_t)o->ndim);
  if (same) {
    if (gin(g, c, 3)) return false;
    widen_inputs(g, c, 4);
    c->in[3] = other;
    take_output(g, c, ci, u);
    /* the residual must be computed before the fused node runs */
    if (o->producer > ci) move_node(g, ci, ui - 1 > ci ? ui - 1 : ci);
    return true;
  }
  /* a bias: a constant of `chans` elements along the channel dimension */
  if (o->kind != OB_GT_CONST || gin(g, c, 2) || gin(g, c, 3) || ob_gt_numel(o) != chans) return false;
  bool along = false;
  if (c->op == OB_GOP_DENSE) along = o->dims[o->ndim - 1] == chans;
  else along = (o->ndim == 1 && yt->dims[2] * yt->dims[3] == 1) || (o->ndim == 3 && o->dims[0] == chans) ||
               (o->ndim == 4 && o->dims[1] == chans);
  if (!along) return false;
  char nm[300];
  snprintf(nm, sizeof nm, "%.250s.bias", c->name);
  int tb = o->ndim == 1 ? other : new_const(g, nm, 1, &chans, o->data, o->is_param);
  widen_inputs(g, c, 3);
  c->in[2] = tb;
  take_output(g, c, ci, u);
  return true;
}

/* A zero Pad of H and W read only by a Conv (as its data) or by an
 * AveragePool that counts padding: the pads go into the reader. */
static void fold_pads(ob_graph *g, int *count) {
  for (int i = 0; i < g->nn; i++) {
    gnode *p = g->n[i];
    if (p->dead || p->op != OB_GOP_PAD || strcmp(ob_gattr_s(p, "mode", "constant"), "constant")) continue;
    gtensor *x = gin(g, p, 0), *pt = gin(g, p, 1), *cv = gin(g, p, 2);
    if (x->ndim != 4 || !pt || !pt->data || pt->dtype != OB_I64 || ob_gt_numel(pt) != 8) continue;
    if (cv && !(cv->data && cv->dtype == OB_F32 && *(const float *)cv->data == 0)) continue;
    const int64_t *pd = pt->data;
    if (pd[0] || pd[1] || pd[4] || pd[5]) continue; /* batch and channel unpadded */
    int y = p->out[0], ui = -1;
    if (ob_graph_is_output(g, y)) continue;
    gnode *u = sole_reader(g, y, &ui);
    if (!u || u->in[0] != y) continue;
    bool conv = u->op == OB_GOP_CONV;
    bool avg = u->op == OB_GOP_AVGPOOL && !ob_gattr_i(u, "ceil_mode", 0);
    if (!conv && !avg) continue;
    const int64_t *up;
    int64_t cur[4] = {0, 0, 0, 0};
    if (ob_gattr_ints(u, "pads", &up) == 4) memcpy(cur, up, sizeof cur);
    if (avg && (cur[0] || cur[1] || cur[2] || cur[3]) && !ob_gattr_i(u, "count_include_pad", 0)) continue;
    int64_t np[4] = {cur[0] + pd[2], cur[1] + pd[3], cur[2] + pd[6], cur[3] + pd[7]};
    ob_graph_set_attr_ints(g, ui, "pads", 4, np);
    if (avg) ob_graph_set_attr_i(g, ui, "count_include_pad", 1);
    u->in[0] = p->in[0];
    p->dead = true;
    (*count)++;
  }
}

/* The float value of scalar constant t (any shape of one element), or NAN. */
static double scalar_of(const ob_graph *g, int t) {
  const gtensor *x = t >= 0 ? g->t[t] : NULL;
  if (!x || x->kind != OB_GT_CONST || !x->data || x->dtype != OB_F32 || ob_gt_numel(x) != 1) return NAN;
  return *(const float *)x->data;
}

static bool near(double v, double want) { return fabs(v - want) <= 1e-6 * fabs(want); }

/* The other input of binary node n than t, -1 if n does not read t. */
static int other_input(const gnode *n, int t) {
  if (n->nin != 2) return -1;
  return n->in[0] == t ? n->in[1] : n->in[1] == t ? n->in[0] : -1;
}

/* The exact GELU as exporters write it (torch.onnx, Hugging Face, the
 * zoo's BERT): y = (x * (erf(x / sqrt 2) + 1)) * 0.5, five nodes and four
 * passes over the tensor, becomes one Gelu node (approximate none), which
 * the runtime computes in one pass. The first node is rewritten in place
 * and takes the last one's output; the other four die. */
static void fuse_gelu(ob_graph *g, int *count) {
  for (int i = 0; i < g->nn; i++) {
    gnode *d = g->n[i];
    if (d->dead || d->nin != 2) continue;
    double k = scalar_of(g, d->in[1]);
    if (!(d->op == OB_GOP_DIV && near(k, sqrt(2.0))) && !(d->op == OB_GOP_MUL && near(k, sqrt(0.5)))) continue;
    int x = d->in[0], di = i, ei, ai, mi, hi;
    if (g->t[x]->dtype != OB_F32 || ob_graph_is_output(g, d->out[0])) continue;
    gnode *e = sole_reader(g, d->out[0], &ei);
    if (!e || e->op != OB_GOP_ERF || ob_graph_is_output(g, e->out[0])) continue;
    gnode *a = sole_reader(g, e->out[0], &ai);
    if (!a || a->op != OB_GOP_ADD || !near(scalar_of(g, other_input(a, e->out[0])), 1.0) ||
        ob_graph_is_output(g, a->out[0]))
      continue;
    gnode *m = sole_reader(g, a->out[0], &mi);
    if (!m || m->op != OB_GOP_MUL || other_input(m, a->out[0]) != x || ob_graph_is_output(g, m->out[0])) continue;
    gnode *h = sole_reader(g, m->out[0], &hi);
    if (!h || h->op != OB_GOP_MUL || !near(scalar_of(g, other_input(h, m->out[0])), 0.5)) continue;
    /* the same shape in and out: no broadcast hides in the chain */
    const gtensor *xt = g->t[x], *yt = g->t[h->out[0]];
    if (xt->ndim != yt->ndim || memcmp(xt->dims, yt->dims, sizeof(int64_t) * (size_t)xt->ndim)) continue;
    d->op = OB_GOP_GELU;
    d->nin = 1;
    clear_attrs(d);
    e->dead = a->dead = m->dead = true;
    take_output(g, d, di, h);
    (*count)++;
  }
}

ob_status ob_graph_fuse(ob_ctx *ctx, ob_graph *g, int *fused) {
  int cnt = 0;
  ob_status st = to_dense(ctx, g, &cnt);
  if (st) return st;
  fold_pads(g, &cnt);
  fuse_gelu(g, &cnt);
  bool changed = true;
  while (changed) {
    changed = false;
    for (int i = 0; i < g->nn; i++) {
      gnode *c = g->n[i];
      if (c->dead || (c->op != OB_GOP_CONV && c->op != OB_GOP_DENSE)) continue;
      if (fuse_one(g, c, i)) {
        cnt++;
        changed = true;
      }
    }
  }
  if (fused) *fused = cnt;
  return OB_OK;
}

ob_status ob_graph_eliminate_dead(ob_ctx *ctx, ob_graph *g, int *removed) {
  bool *need = calloc((size_t)g->nt + 1, 1);
  if (!need) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  for (int i = 0; i < g->noutputs; i++) need[g->outputs[i]] = true;
  int cnt = 0;
  for (int i = g->nn - 1; i >= 0; i--) {
    gnode *n = g->n[i];
    if (n->dead) continue;
    bool live = false;
    for (int k = 0; k < n->nout; k++) live |= need[n->out[k]];
    if (!live) {
      n->dead = true;
      cnt++;
      continue;
    }
    for (int k = 0; k < n->nin; k++)
      if (n->in[k] >= 0) need[n->in[k]] = true;
  }
  free(need);
  if (removed) *removed = cnt;
  return OB_OK;
}

/* ---- layout planning -------------------------------------------------------------- */
typedef enum lclass { L_PLAIN = 0, L_BOUNDARY, L_TRANSPARENT } lclass;

static lclass layout_class(const ob_graph *g, const gnode *n) {
  switch (n->op) {
  case OB_GOP_CONV: case OB_GOP_GLOBALAVGPOOL: return L_BOUNDARY;
  case OB_GOP_RELU: case OB_GOP_CLIP: case OB_GOP_SIGMOID: case OB_GOP_MAXPOOL: case OB_GOP_AVGPOOL:
  case OB_GOP_BATCHNORM:
    return L_TRANSPARENT;
  case OB_GOP_ADD: case OB_GOP_MUL: {
    const gtensor *a = gin(g, n, 0), *b = gin(g, n, 1), *y = gout(g, n, 0);
    bool same = a->ndim == b->ndim && !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim) &&
                a->ndim == y->ndim && !memcmp(a->dims, y->dims, sizeof(int64_t) * (size_t)a->ndim);
    return same ? L_TRANSPARENT : L_PLAIN;
  }
  case OB_GOP_CONCAT: {
    int64_t ax = ob_gattr_i(n, "axis", 0);
    return gout(g, n, 0)->ndim == 4 && (ax == 1 || ax == -3) ? L_TRANSPARENT : L_PLAIN;
  }
  default: return L_PLAIN;
  }
}

static int block_for(int64_t c, int lanes) {
  for (int b = lanes; b >= 2; b /= 2)
    if (c % b == 0) return b;
  return 0;
}

/* Whether input k of n is data (not a weight, bias or parameter). */
static bool data_input(const ob_graph *g, const gnode *n, int k) {
  if (n->in[k] < 0 || g->t[n->in[k]]->kind == OB_GT_CONST) return false;
  if (n->op == OB_GOP_CONV) return k == 0 || k == 3;
  if (n->op == OB_GOP_CLIP || n->op == OB_GOP_BATCHNORM) return k == 0;
  return true;
}

ob_status ob_graph_plan_layout(ob_ctx *ctx, ob_graph *g, int lanes, int *transforms) {
  if (lanes < 2) return ob_fail(ctx, OB_ERR_INVALID_ARG, "layout planning needs at least 2 lanes (got %d)", lanes);
  int *blk = calloc((size_t)g->nt + 1, sizeof(int));
  if (!blk) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  for (int t = 0; t < g->nt; t++) {
    gtensor *x = g->t[t];
    x->layout = OB_LAYOUT_PLAIN;
    x->block = 0;
    if (x->kind != OB_GT_ACT || x->ndim != 4 || x->dtype != OB_F32 || ob_graph_is_output(g, t) || x->producer < 0) continue;
    if (layout_class(g, g->n[x->producer]) == L_PLAIN) continue;
    int b = block_for(x->dims[1], lanes);
    bool ok = b > 0;
    for (int i = 0; i < g->nn && ok; i++) {
      const gnode *n = g->n[i];
      if (n->dead) continue;
      for (int k = 0; k < n->nin && ok; k++)
        if (n->in[k] == t && (layout_class(g, n) == L_PLAIN || !data_input(g, n, k))) ok = false;
    }
    blk[t] = ok ? b : 0;
  }
  /* transparent nodes need one layout and one block for all their data */
  bool changed = true;
  while (changed) {
    changed = false;
    for (int i = 0; i < g->nn; i++) {
      const gnode *n = g->n[i];
      if (n->dead || layout_class(g, n) != L_TRANSPARENT) continue;
      int b0 = blk[n->out[0]];
      bool agree = true;
      for (int k = 0; k < n->nin; k++)
        if (data_input(g, n, k) && blk[n->in[k]] != b0) agree = false;
      if (agree) continue;
      for (int k = 0; k < n->nin; k++)
        if (data_input(g, n, k) && blk[n->in[k]]) blk[n->in[k]] = 0, changed = true;
      if (blk[n->out[0]]) blk[n->out[0]] = 0, changed = true;
    }
  }
  int tr = 0;
  for (int t = 0; t < g->nt; t++)
    if (blk[t]) g->t[t]->layout = OB_LAYOUT_NCHWC, g->t[t]->block = blk[t];
  for (int i = 0; i < g->nn; i++) {
    const gnode *n = g->n[i];
    if (n->dead || layout_class(g, n) != L_BOUNDARY) continue;
    const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
    bool bin = blk[n->in[0]] != 0, bout = blk[n->out[0]] != 0;
    /* a plain input with fewer channels than a block is NCHW[C]c already */
    if (!bin && bout && x->dims[1] >= lanes) tr++;
    if (bin && !bout) tr++;
    (void)y;
  }
  free(blk);
  if (transforms) *transforms = tr;
  return OB_OK;
}

ob_status ob_graph_optimize(ob_ctx *ctx, ob_graph *g, int lanes, ob_graph_pass_stats *ps) {
  ob_graph_pass_stats s = {0};
  ob_status st = ob_graph_infer_shapes(ctx, g);
  if (!st) st = ob_graph_fold_constants(ctx, g, &s.folded);
  if (!st) st = ob_graph_fold_batchnorm(ctx, g, &s.bn_folded);
  if (!st) st = ob_graph_fuse(ctx, g, &s.fused);
  if (!st) st = ob_graph_eliminate_dead(ctx, g, &s.removed);
  if (!st) {
    ob_graph_compact(g);
    st = ob_graph_infer_shapes(ctx, g);
  }
  if (!st) st = ob_graph_validate(ctx, g);
  if (!st && lanes > 0) st = ob_graph_plan_layout(ctx, g, lanes, &s.transforms);
  if (ps) *ps = s;
  return st;
}
