/* tasks.c: which ob_workload of the operator library computes a node, and
 * the task list of a model (distinct workloads, their counts, FLOPs and
 * estimated share of the time). A node maps only where the library's
 * operator computes exactly what the node does, arguments in the node's
 * input order (the one exception, MatMul's B operand, is said in graph.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph_impl.h"

static bool set(ob_workload *wl, const char *name, int64_t v) { return ob_workload_set(NULL, wl, name, v) == OB_OK; }

/* ob_workload_parse refuses missing required attributes, so workloads are
 * built from text with every attribute given. */
static bool make(ob_workload *wl, const char *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool make(ob_workload *wl, const char *op, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return ob_workload_parse(NULL, op, text, wl) == OB_OK;
}

static void epilogue_text(const ob_graph *g, const gnode *n, char *buf, size_t cap) {
  buf[0] = 0;
  if (gin(g, n, 2)) snprintf(buf, cap, "bias");
  if (gin(g, n, 3)) snprintf(buf + strlen(buf), cap - strlen(buf), "%sadd", buf[0] ? "," : "");
  const char *act = ob_gattr_s(n, "activation", "");
  if (*act) snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? "," : "", act);
}

static bool finish(ob_workload *wl) { return ob_workload_validate(NULL, wl) == OB_OK; }

/* Element view of a tensor as the elementwise operators take it. */
static bool ew_make(ob_workload *wl, const char *op, const gtensor *x) {
  int64_t n = 1, c = 1, h = 1, w = 1;
  if (x->ndim == 4) n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  else w = ob_gt_numel(x);
  return make(wl, op, "N=%lld,C=%lld,H=%lld,W=%lld", (long long)n, (long long)c, (long long)h, (long long)w);
}

static bool same_shape(const gtensor *a, const gtensor *b) {
  return a->ndim == b->ndim && !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim);
}

/* Constant scalar value of an optional input; false when absent or not constant. */
static bool const_scalar(const gtensor *t, double *v) {
  if (!t || !t->data || t->dtype != OB_F32 || ob_gt_numel(t) != 1) return false;
  *v = *(const float *)t->data;
  return true;
}

static int conv_wl(const ob_graph *g, const gnode *n, ob_workload *wl) {
  const gtensor *x = gin(g, n, 0), *w = gin(g, n, 1);
  int64_t s[2] = {1, 1}, p[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  const int64_t *v;
  if (ob_gattr_ints(n, "strides", &v) == 2) s[0] = v[0], s[1] = v[1];
  if (ob_gattr_ints(n, "pads", &v) == 4) memcpy(p, v, sizeof p);
  if (ob_gattr_ints(n, "dilations", &v) == 2) d[0] = v[0], d[1] = v[1];
  int64_t grp = ob_gattr_i(n, "group", 1), C = x->dims[1], K = w->dims[0];
  bool dw = grp > 1 && grp == C && K == C;
  bool ok = dw ? make(wl, "depthwise_conv2d", "N=%lld,C=%lld,H=%lld,W=%lld,R=%lld,S=%lld", (long long)x->dims[0],
                      (long long)C, (long long)x->dims[2], (long long)x->dims[3], (long long)w->dims[2], (long long)w->dims[3])
               : make(wl, "conv2d", "N=%lld,C=%lld,H=%lld,W=%lld,K=%lld,R=%lld,S=%lld,groups=%lld", (long long)x->dims[0],
                      (long long)C, (long long)x->dims[2], (long long)x->dims[3], (long long)K, (long long)w->dims[2],
                      (long long)w->dims[3], (long long)grp);
  ok = ok && set(wl, "stride_h", s[0]) && set(wl, "stride_w", s[1]) && set(wl, "pad_t", p[0]) && set(wl, "pad_l", p[1]) &&
       set(wl, "pad_b", p[2]) && set(wl, "pad_r", p[3]) && set(wl, "dil_h", d[0]) && set(wl, "dil_w", d[1]);
  char epi[48];
  epilogue_text(g, n, epi, sizeof epi);
  ok = ok && ob_workload_set_epilogue(NULL, wl, epi) == OB_OK;
  return ok && finish(wl);
}

static int pool_wl(const ob_graph *g, const gnode *n, ob_workload *wl) {
  const gtensor *x = gin(g, n, 0), *y = gout(g, n, 0);
  const int64_t *ks, *v;
  if (ob_gattr_ints(n, "kernel_shape", &ks) != 2) return 0;
  int64_t s[2] = {1, 1}, p[4] = {0, 0, 0, 0};
  if (ob_gattr_ints(n, "strides", &v) == 2) s[0] = v[0], s[1] = v[1];
  if (ob_gattr_ints(n, "pads", &v) == 4) memcpy(p, v, sizeof p);
  /* ceil mode: the extra windows see padding at the bottom and right */
  int64_t eb = (y->dims[2] - 1) * s[0] + ks[0] - x->dims[2] - p[0] - p[2];
  int64_t er = (y->dims[3] - 1) * s[1] + ks[1] - x->dims[3] - p[1] - p[3];
  bool mx = n->op == OB_GOP_MAXPOOL, incl = ob_gattr_i(n, "count_include_pad", 0);
  if (eb < 0) eb = 0;
  if (er < 0) er = 0;
  if (!mx && incl && (eb || er)) return 0; /* ONNX counts only up to the padded edge */
  return make(wl, "pool2d", "N=%lld,C=%lld,H=%lld,W=%lld,R=%lld,S=%lld,stride_h=%lld,stride_w=%lld,pad_t=%lld,pad_l=%lld,"
                            "pad_b=%lld,pad_r=%lld,mode=%d,incl_pad=%d",
              (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2], (long long)x->dims[3], (long long)ks[0],
              (long long)ks[1], (long long)s[0], (long long)s[1], (long long)p[0], (long long)p[1], (long long)(p[2] + eb),
              (long long)(p[3] + er), mx ? 0 : 1, incl ? 1 : 0) &&
         finish(wl);
}

int ob_gnode_workloads(ob_ctx *ctx, const ob_graph *g, const gnode *n, ob_workload *wl, int *count, int cap) {
  (void)ctx;
  if (cap < 1 || n->dead) return 0;
  for (int i = 0; i < n->nin; i++)
    if (n->in[i] >= 0 && g->t[n->in[i]]->ndim < 0) return 0;
  for (int i = 0; i < n->nout; i++)
    if (g->t[n->out[i]]->ndim < 0) return 0;
  const gtensor *x = gin(g, n, 0), *y = n->nout ? gout(g, n, 0) : NULL;
  count[0] = 1;
  if (x && x->dtype != OB_F32) return 0;
  switch (n->op) {
  case OB_GOP_CONV: return conv_wl(g, n, wl);
  case OB_GOP_DENSE: {
    const gtensor *w = gin(g, n, 1);
    int64_t M = ob_gt_numel(x) / w->dims[1];
    char epi[48];
    epilogue_text(g, n, epi, sizeof epi);
    return make(wl, "dense", "M=%lld,N=%lld,K=%lld", (long long)M, (long long)w->dims[0], (long long)w->dims[1]) &&
           ob_workload_set_epilogue(NULL, wl, epi) == OB_OK && finish(wl);
  }
  case OB_GOP_GEMM: {
    const gtensor *w = gin(g, n, 1), *c = gin(g, n, 2);
    if (ob_gattr_i(n, "transA", 0) || !ob_gattr_i(n, "transB", 0) || ob_gattr_f(n, "alpha", 1) != 1 ||
        ob_gattr_f(n, "beta", 1) != 1)
      return 0;
    if (c && !(ob_gt_numel(c) == w->dims[0] && c->dims[c->ndim - 1] == w->dims[0])) return 0;
    return make(wl, "dense", "M=%lld,N=%lld,K=%lld", (long long)x->dims[0], (long long)w->dims[0], (long long)w->dims[1]) &&
           ob_workload_set_epilogue(NULL, wl, c ? "bias" : "") == OB_OK && finish(wl);
  }
  case OB_GOP_MATMUL: {
    const gtensor *b = gin(g, n, 1);
    if (x->ndim < 2 || b->ndim < 2) return 0;
    int64_t K = x->dims[x->ndim - 1], N = b->dims[b->ndim - 1];
    if (b->ndim == 2)
      return make(wl, "dense", "M=%lld,N=%lld,K=%lld", (long long)(ob_gt_numel(x) / K), (long long)N, (long long)K) &&
             finish(wl);
    if (x->ndim != b->ndim || memcmp(x->dims, b->dims, sizeof(int64_t) * (size_t)(x->ndim - 2))) return 0;
    int64_t B = 1, M = x->dims[x->ndim - 2];
    for (int i = 0; i < x->ndim - 2; i++) B *= x->dims[i];
    return make(wl, "batch_matmul", "B=%lld,M=%lld,N=%lld,K=%lld", (long long)B, (long long)M, (long long)N, (long long)K) &&
           finish(wl);
  }
  case OB_GOP_LSTM: {
    if (cap < 2) return 0;
    const gtensor *w = gin(g, n, 1);
    int64_t T = x->dims[0], B = x->dims[1], I = x->dims[2], H4 = w->dims[1];
    if (!make(&wl[0], "dense", "M=%lld,N=%lld,K=%lld", (long long)(T * B), (long long)H4, (long long)I) || !finish(&wl[0]))
      return 0;
    if (!make(&wl[1], "dense", "M=%lld,N=%lld,K=%lld", (long long)B, (long long)H4, (long long)(H4 / 4)) || !finish(&wl[1]))
      return 0;
    count[0] = 1;
    count[1] = (int)T;
    return 2;
  }
  case OB_GOP_MAXPOOL:
  case OB_GOP_AVGPOOL: return pool_wl(g, n, wl);
  case OB_GOP_GLOBALAVGPOOL:
    return x->ndim == 4 && make(wl, "global_avg_pool", "N=%lld,C=%lld,H=%lld,W=%lld", (long long)x->dims[0],
                                (long long)x->dims[1], (long long)x->dims[2], (long long)x->dims[3]) && finish(wl);
  case OB_GOP_BATCHNORM:
    if (fabs(ob_gattr_f(n, "epsilon", 1e-5) - 1e-5) > 1e-12 || (x->ndim != 4 && x->ndim != 2)) return 0;
    return make(wl, "batch_norm", "N=%lld,C=%lld,H=%lld,W=%lld", (long long)x->dims[0], (long long)x->dims[1],
                (long long)(x->ndim == 4 ? x->dims[2] : 1), (long long)(x->ndim == 4 ? x->dims[3] : 1)) && finish(wl);
  case OB_GOP_LAYERNORM: {
    int64_t ax = ob_gattr_i(n, "axis", -1);
    if ((ax != -1 && ax != x->ndim - 1) || fabs(ob_gattr_f(n, "epsilon", 1e-5) - 1e-5) > 1e-12 || !gin(g, n, 2)) return 0;
    if (x->ndim < 1 || x->dims[x->ndim - 1] <= 0) return 0; /* empty rows: no workload */
    int64_t N = x->dims[x->ndim - 1];
    return make(wl, "layer_norm", "M=%lld,N=%lld", (long long)(ob_gt_numel(x) / N), (long long)N) && finish(wl);
  }
  case OB_GOP_SOFTMAX: {
    int64_t ax = ob_gattr_i(n, "axis", -1);
    if (ax != -1 && ax != x->ndim - 1) return 0;
    if (x->ndim < 1 || x->dims[x->ndim - 1] <= 0) return 0; /* empty rows: no workload */
    int64_t N = x->dims[x->ndim - 1];
    return make(wl, "softmax", "M=%lld,N=%lld", (long long)(ob_gt_numel(x) / N), (long long)N) && finish(wl);
  }
  case OB_GOP_RELU: return ew_make(wl, "relu", x) && finish(wl);
  case OB_GOP_SIGMOID: return ew_make(wl, "sigmoid", x) && finish(wl);
  case OB_GOP_TANH: return ew_make(wl, "tanh", x) && finish(wl);
  case OB_GOP_GELU:
    return !strcmp(ob_gattr_s(n, "approximate", "none"), "tanh") && ew_make(wl, "gelu", x) && finish(wl);
  case OB_GOP_CLIP: {
    double lo, hi;
    if (!const_scalar(gin(g, n, 1), &lo) || !const_scalar(gin(g, n, 2), &hi)) return 0;
    if (lo == 0 && hi == 6) return ew_make(wl, "relu6", x) && finish(wl);
    if (lo != floor(lo) || hi != floor(hi) || fabs(lo) > 1e9 || fabs(hi) > 1e9) return 0;
    return ew_make(wl, "clip", x) && set(wl, "lo", (int64_t)lo) && set(wl, "hi", (int64_t)hi) && finish(wl);
  }
  case OB_GOP_ADD:
  case OB_GOP_MUL: {
    const gtensor *b = gin(g, n, 1);
    if (b->dtype != OB_F32) return 0;
    if (same_shape(x, b) && same_shape(x, y)) return ew_make(wl, n->op == OB_GOP_ADD ? "add" : "mul", x) && finish(wl);
    if (n->op != OB_GOP_ADD || !same_shape(x, y)) return 0;
    /* bias over channels: [N, C, H, W] + [C] or [1, C, 1, 1]; [..., C] + [C] */
    int64_t bn = ob_gt_numel(b);
    if (bn <= 0) return 0;
    if (x->ndim == 4 && bn == x->dims[1] && (b->ndim == 1 ? x->dims[2] * x->dims[3] == 1 : b->ndim == 4 && b->dims[1] == bn))
      return make(wl, "bias_add", "N=%lld,C=%lld,H=%lld,W=%lld", (long long)x->dims[0], (long long)x->dims[1],
                  (long long)x->dims[2], (long long)x->dims[3]) && finish(wl);
    if (x->ndim >= 1 && b->ndim == 1 && bn == x->dims[x->ndim - 1])
      return make(wl, "bias_add", "N=%lld,C=%lld,H=1,W=1", (long long)(ob_gt_numel(x) / bn), (long long)bn) && finish(wl);
    return 0;
  }
  case OB_GOP_CONCAT: {
    if (n->nin != 2 || x->ndim != 4) return 0;
    int64_t ax = ob_gattr_i(n, "axis", 0);
    if (ax != 1 && ax != -3) return 0;
    const gtensor *b = gin(g, n, 1);
    return make(wl, "concat", "N=%lld,C1=%lld,C2=%lld,H=%lld,W=%lld", (long long)x->dims[0], (long long)x->dims[1],
                (long long)b->dims[1], (long long)x->dims[2], (long long)x->dims[3]) && finish(wl);
  }
  default: return 0;
  }
}

ob_status ob_graph_node_workload(ob_ctx *ctx, const ob_graph *g, int node, ob_workload *out) {
  if (node < 0 || node >= g->nn) return ob_fail(ctx, OB_ERR_INVALID_ARG, "node %d is not in the graph", node);
  ob_workload wl[2];
  int cnt[2];
  const gnode *n = g->n[node];
  if (ob_gnode_workloads(ctx, g, n, wl, cnt, 2) != 1)
    return ob_gfail(ctx, n, OB_ERR_UNSUPPORTED, "no operator of the library computes this node");
  *out = wl[0];
  return OB_OK;
}

static int cmp_task(const void *a, const void *b) {
  const ob_graph_task *x = a, *y = b;
  if (x->est_s != y->est_s) return x->est_s < y->est_s ? 1 : -1;
  return strcmp(x->key, y->key);
}

ob_status ob_graph_tasks(ob_ctx *ctx, const ob_graph *g, ob_graph_task **tasks, int *ntasks) {
  int cap = 64, nt = 0;
  ob_graph_task *t = malloc(sizeof *t * (size_t)cap);
  if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  for (int i = 0; i < g->nn; i++) {
    ob_workload wl[2];
    int cnt[2];
    int k = ob_gnode_workloads(ctx, g, g->n[i], wl, cnt, 2);
    for (int j = 0; j < k; j++) {
      char key[256];
      ob_workload_key(&wl[j], key, sizeof key);
      int f = -1;
      for (int q = 0; q < nt && f < 0; q++)
        if (!strcmp(t[q].key, key)) f = q;
      if (f < 0) {
        if (nt == cap) {
          ob_graph_task *nw = realloc(t, sizeof *t * (size_t)(cap *= 2));
          if (!nw) {
            free(t);
            return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
          }
          t = nw;
        }
        f = nt++;
        memset(&t[f], 0, sizeof t[f]);
        t[f].wl = wl[j];
        snprintf(t[f].key, sizeof t[f].key, "%s", key);
        t[f].flops = ob_workload_flops(&wl[j]);
        t[f].first_node = i;
      }
      t[f].count += cnt[j];
    }
  }
  double tot = 0;
  for (int q = 0; q < nt; q++) {
    t[q].est_s = (double)t[q].count * t[q].flops / 1e9;
    tot += (double)t[q].count * t[q].flops;
  }
  for (int q = 0; q < nt; q++) t[q].share = tot > 0 ? (double)t[q].count * t[q].flops / tot : 0;
  qsort(t, (size_t)nt, sizeof *t, cmp_task);
  *tasks = t;
  *ntasks = nt;
  return OB_OK;
}

int ob_graph_key_tasks(const ob_graph_task *t, int n, double percent) {
  double tot = 0, acc = 0;
  for (int i = 0; i < n; i++) tot += t[i].est_s;
  if (tot <= 0) return n;
  for (int i = 0; i < n; i++) {
    acc += t[i].est_s;
    if (acc >= tot * percent / 100.0 - 1e-12 * tot) return i + 1;
  }
  return n;
}
