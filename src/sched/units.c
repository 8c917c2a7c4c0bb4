/* units.c: scheduling units. From a graph after the passes: cheap nodes
 * that feed a single node join that node's unit (IOS's compound operators:
 * the ReLU and depthwise conv of a separable conv, the Adds that sum a
 * RandWire node's inputs, a Concat read by one conv); every other node ends
 * a unit of its own. Then blocks (IOS: cut where a single tensor crosses)
 * and parts (a block too big for one bitmask is cut again where the fewest
 * tensors cross: NASNet's cells, which IOS cuts by hand). The units object
 * owns its arena: names, op descs, predecessor lists. */
#include <stdio.h>
#include <stdlib.h>

#include "sched/sched_impl.h"

const char *ob_sched_kind_name(ob_sched_kind k) {
  static const char *const names[OB_SCHED_KIND_COUNT] = {"conv", "dwconv", "matmul", "pool", "elemwise"};
  return (unsigned)k < OB_SCHED_KIND_COUNT ? names[k] : "?";
}

ob_status ob_sched_units_new(ob_ctx *ctx, const char *model, ob_sched_units **out) {
  *out = NULL;
  ob_sched_units *u = calloc(1, sizeof *u);
  if (!u) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  u->ctx = ctx;
  u->arena = ob_arena_new(ctx, 1 << 16);
  u->model = u->arena ? ob_arena_strdup(u->arena, model && *model ? model : "model") : NULL;
  if (!u->model) {
    ob_arena_free(u->arena);
    free(u);
    return ob_fail(ctx, OB_ERR_NOMEM, "scheduling units: out of memory");
  }
  smap_init(&u->names, u->arena);
  smap_init(&u->sids, u->arena);
  smap_init(&u->classes, u->arena);
  *out = u;
  return OB_OK;
}

void ob_sched_units_free(ob_sched_units *u) {
  if (!u) return;
  smap_free(&u->names);
  smap_free(&u->sids);
  smap_free(&u->classes);
  free(u->u);
  free(u->part_first);
  free(u->part_n);
  ob_arena_free(u->arena);
  free(u);
}

ob_status ob_sched_units_add_owned(ob_sched_units *u, const char *name, const ob_sched_op_desc *op,
                                   const char *merge_key, int npred, const int *preds, int *id) {
  ob_ctx *ctx = u->ctx;
  if (u->finished) return ob_fail(ctx, OB_ERR_INVALID_ARG, "units of '%s' are finished: no unit can be added", u->model);
  if (!name || !*name) return ob_fail(ctx, OB_ERR_INVALID_ARG, "unit %d has no name", u->n);
  if (smap_find(&u->names, name, strlen(name)))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "unit name '%s' is used twice", name);
  if (!op || !op->key || op->nnodes < 0) return ob_fail(ctx, OB_ERR_INVALID_ARG, "unit '%s' has no op description", name);
  bool merges = merge_key && *merge_key;
  if (merges && (op->nnodes != 1 || !op->nodes[0].has_workload || strcmp(op->nodes[0].wl.op, "conv2d")))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "unit '%s': only a single conv2d merges", name);
  for (int i = 0; i < npred; i++)
    if (preds[i] < 0 || preds[i] >= u->n)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "unit '%s': predecessor %d is not an earlier unit", name, preds[i]);
  if (u->n == u->cap) {
    int cap = u->cap ? u->cap * 2 : 64;
    sunit *nu = realloc(u->u, sizeof *nu * (size_t)cap);
    if (!nu) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    u->u = nu;
    u->cap = cap;
  }
  sunit *s = &u->u[u->n];
  memset(s, 0, sizeof *s);
  s->name = ob_arena_strdup(u->arena, name);
  s->op = *op;
  s->merge_key = merges ? ob_arena_strdup(u->arena, merge_key) : "";
  s->merge_class = -1;
  if (merges) {
    bool added = false;
    int64_t *c = smap_put(&u->classes, merge_key, strlen(merge_key), u->nclasses, &added);
    if (added) u->nclasses++;
    s->merge_class = (int)*c;
  }
  bool added = false;
  int64_t *sid = smap_put(&u->sids, op->key, strlen(op->key), u->nsids, &added);
  if (added) u->nsids++;
  s->sid = (int)*sid;
  /* distinct, ascending */
  s->preds = ob_arena_alloc(u->arena, sizeof(int) * (size_t)(npred ? npred : 1));
  for (int i = 0; i < npred; i++) {
    int p = preds[i], k = s->npred;
    bool dup = false;
    for (int j = 0; j < s->npred && !dup; j++) dup = s->preds[j] == p;
    if (dup) continue;
    while (k > 0 && s->preds[k - 1] > p) {
      s->preds[k] = s->preds[k - 1];
      k--;
    }
    s->preds[k] = p;
    s->npred++;
  }
  smap_put(&u->names, s->name, strlen(s->name), u->n, NULL);
  if (id) *id = u->n;
  u->n++;
  return OB_OK;
}

ob_status ob_sched_units_add(ob_sched_units *u, const char *name, const ob_sched_op_desc *op, const char *merge_key,
                             int npred, const int *preds, int *id) {
  if (!op || !op->key) return ob_fail(u->ctx, OB_ERR_INVALID_ARG, "unit '%s' has no op description", name ? name : "");
  ob_sched_op_desc c = *op;
  c.key = ob_arena_strdup(u->arena, op->key);
  ob_sched_node_desc *nd = ob_arena_alloc(u->arena, sizeof *nd * (size_t)(op->nnodes > 0 ? op->nnodes : 1));
  for (int i = 0; i < op->nnodes; i++) nd[i] = op->nodes[i];
  c.nodes = nd;
  return ob_sched_units_add_owned(u, name, &c, merge_key, npred, preds, id);
}

/* ---- blocks and parts ---------------------------------------------------------------------- */
/* crossing[p] (1 <= p < n): units before p whose output a unit at or after
 * p reads, and the input while a unit at or after p reads it. */
static int *crossings(const ob_sched_units *u) {
  int n = u->n;
  int *last = malloc(sizeof(int) * (size_t)(n ? n : 1)), *diff = calloc((size_t)n + 2, sizeof(int));
  if (!last || !diff) {
    free(last);
    free(diff);
    return NULL;
  }
  for (int i = 0; i < n; i++) last[i] = -1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < u->u[i].npred; k++) {
      int p = u->u[i].preds[k];
      if (i > last[p]) last[p] = i;
    }
  for (int i = 0; i < n; i++)
    if (last[i] > i) {
      diff[i + 1]++;
      diff[last[i] + 1]--;
    }
  /* the model's input: live until its last reader (a unit without
   * predecessors), so units that read it do not end up in separate blocks */
  int src = -1;
  for (int i = 0; i < n; i++)
    if (!u->u[i].npred) src = i;
  if (src > 0) {
    diff[1]++;
    diff[src + 1]--;
  }
  for (int p = 1; p <= n; p++) diff[p] += diff[p - 1];
  free(last);
  return diff;
}

typedef struct cuts {
  int *first, *len;
  int n, cap;
} cuts;

static bool cuts_add(cuts *c, int first, int len) {
  if (c->n == c->cap) {
    int cap = c->cap ? c->cap * 2 : 32;
    int *f = realloc(c->first, sizeof(int) * (size_t)cap), *l = f ? realloc(c->len, sizeof(int) * (size_t)cap) : NULL;
    if (f) c->first = f;
    if (!f || !l) return false;
    c->len = l;
    c->cap = cap;
  }
  c->first[c->n] = first;
  c->len[c->n++] = len;
  return true;
}

/* Cuts [first, first+len) at every interior position where the fewest
 * tensors cross, again inside pieces still above max. */
static bool split(cuts *c, const int *cross, int first, int len, int max) {
  if (len <= max) return cuts_add(c, first, len);
  int lo = 1 << 30;
  for (int p = first + 1; p < first + len; p++) lo = cross[p] < lo ? cross[p] : lo;
  int start = first;
  for (int p = first + 1; p <= first + len; p++) {
    if (p < first + len && cross[p] != lo) continue;
    if (!split(c, cross, start, p - start, max)) return false;
    start = p;
  }
  return true;
}

ob_status ob_sched_units_finish(ob_sched_units *u, int max_part, bool blocks) {
  ob_ctx *ctx = u->ctx;
  if (u->finished) return OB_OK;
  if (max_part == 0) max_part = OB_SCHED_MAX_PART;
  if (max_part < 1 || max_part > OB_SCHED_MAX_PART)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "part size %d is out of range (1..%d)", max_part, OB_SCHED_MAX_PART);
  if (u->n == 0) return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s' has no units to schedule", u->model);
  int *cross = crossings(u);
  if (!cross) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  cuts c = {0};
  bool ok = true;
  int start = 0;
  u->nblocks = 0;
  for (int p = 1; p <= u->n && ok; p++) {
    if (p < u->n && (cross[p] > 1 || !blocks)) continue;
    ok = split(&c, cross, start, p - start, max_part);
    u->nblocks++;
    start = p;
  }
  free(cross);
  if (!ok) {
    free(c.first);
    free(c.len);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  u->part_first = c.first;
  u->part_n = c.len;
  u->nparts = c.n;
  for (int p = 0; p < c.n; p++)
    for (int i = c.first[p]; i < c.first[p] + c.len[p]; i++) u->u[i].part = p;
  u->finished = true;
  return OB_OK;
}

/* ---- from a graph ---------------------------------------------------------------------------- */
static bool light_op(ob_gop op) {
  switch (op) {
  case OB_GOP_ADD: case OB_GOP_SUB: case OB_GOP_MUL: case OB_GOP_DIV: case OB_GOP_POW: case OB_GOP_EQUAL:
  case OB_GOP_WHERE: case OB_GOP_RELU: case OB_GOP_CLIP: case OB_GOP_SIGMOID: case OB_GOP_HARDSIGMOID:
  case OB_GOP_TANH: case OB_GOP_ERF: case OB_GOP_SQRT: case OB_GOP_EXP: case OB_GOP_NEG: case OB_GOP_GELU:
  case OB_GOP_CONCAT: case OB_GOP_SLICE: case OB_GOP_FLATTEN: case OB_GOP_RESHAPE: case OB_GOP_TRANSPOSE:
  case OB_GOP_UNSQUEEZE: case OB_GOP_SQUEEZE: case OB_GOP_CAST: case OB_GOP_IDENTITY: case OB_GOP_EXPAND:
  case OB_GOP_PAD:
    return true;
  default:
    return false;
  }
}

static bool depthwise(const ob_graph *g, int n) {
  if (ob_graph_node_op(g, n) != OB_GOP_CONV) return false;
  int64_t grp = ob_graph_node_attr_i(g, n, "group", 1);
  const int64_t *d = ob_graph_tensor_dims(g, ob_graph_node_input(g, n, 0));
  return grp > 1 && ob_graph_tensor_ndim(g, ob_graph_node_input(g, n, 0)) == 4 && grp == d[1];
}

static void dims_text(const ob_graph *g, int t, ob_str *s) {
  ob_str_append(s, "[");
  for (int i = 0; i < ob_graph_tensor_ndim(g, t); i++)
    ob_str_appendf(s, "%s%lld", i ? "," : "", (long long)ob_graph_tensor_dims(g, t)[i]);
  ob_str_append(s, "]");
}

static double tensor_bytes(const ob_graph *g, int t) {
  int64_t n = ob_graph_tensor_numel(g, t);
  return n > 0 ? (double)n * (double)ob_dtype_size(ob_graph_tensor_dtype(g, t)) : 0;
}

/* The node's description and its part of the unit key. */
static void node_desc(ob_ctx *ctx, const ob_graph *g, int n, ob_sched_node_desc *d, ob_str *key) {
  memset(d, 0, sizeof *d);
  d->op = ob_graph_node_op(g, n);
  d->has_workload = ob_graph_node_workload(ctx, g, n, &d->wl) == OB_OK;
  ob_ctx_clear_error(ctx);
  for (int i = 0; i < ob_graph_node_num_inputs(g, n); i++) {
    int t = ob_graph_node_input(g, n, i);
    if (t >= 0) d->bytes += tensor_bytes(g, t);
  }
  int64_t outn = 0;
  for (int i = 0; i < ob_graph_node_num_outputs(g, n); i++) {
    int t = ob_graph_node_output(g, n, i);
    d->bytes += tensor_bytes(g, t);
    int64_t k = ob_graph_tensor_numel(g, t);
    outn += k > 0 ? k : 0;
  }
  if (d->has_workload) {
    d->flops = ob_workload_flops(&d->wl);
    char k[256];
    ob_workload_key(&d->wl, k, sizeof k);
    ob_str_append(key, k);
  } else {
    d->flops = (double)outn;
    ob_str_append(key, ob_gop_name(d->op));
    for (int i = 0; i < ob_graph_node_num_inputs(g, n); i++) {
      int t = ob_graph_node_input(g, n, i);
      if (t < 0) continue;
      ob_str_append(key, i ? "," : "(");
      dims_text(g, t, key);
    }
    ob_str_append(key, ")->");
    for (int i = 0; i < ob_graph_node_num_outputs(g, n); i++) dims_text(g, ob_graph_node_output(g, n, i), key);
    /* what else decides the work of the ops that have no workload */
    int64_t v[8];
    int k = ob_graph_node_attr_ints(g, n, "kernel_shape", v, 8);
    for (int i = 0; i < k && i < 8; i++) ob_str_appendf(key, "%sk%lld", i ? "," : "/", (long long)v[i]);
    k = ob_graph_node_attr_ints(g, n, "strides", v, 8);
    for (int i = 0; i < k && i < 8; i++) ob_str_appendf(key, "%ss%lld", i ? "," : "/", (long long)v[i]);
    const char *act = ob_graph_node_attr_s(g, n, "activation", "");
    if (*act) ob_str_appendf(key, "/%s", act);
  }
}

static ob_sched_kind unit_kind(const ob_graph *g, int root) {
  switch (ob_graph_node_op(g, root)) {
  case OB_GOP_CONV: return depthwise(g, root) ? OB_SCHED_KIND_DWCONV : OB_SCHED_KIND_CONV;
  case OB_GOP_DENSE: case OB_GOP_GEMM: case OB_GOP_MATMUL: case OB_GOP_LSTM: return OB_SCHED_KIND_MATMUL;
  case OB_GOP_MAXPOOL: case OB_GOP_AVGPOOL: case OB_GOP_GLOBALAVGPOOL: return OB_SCHED_KIND_POOL;
  default: return OB_SCHED_KIND_ELEMWISE;
  }
}

/* The merge key of a unit that is one plain convolution: what must agree
 * for convolutions to merge (ob_graph_merge_check's conditions). */
static void merge_key(const ob_graph *g, int n, const ob_sched_node_desc *d, char *out, size_t cap) {
  out[0] = '\0';
  if (ob_graph_node_op(g, n) != OB_GOP_CONV || !d->has_workload || strcmp(d->wl.op, "conv2d")) return;
  if (ob_graph_node_attr_i(g, n, "group", 1) != 1) return;
  if (ob_graph_node_num_inputs(g, n) > 3 && ob_graph_node_input(g, n, 3) >= 0) return; /* residual */
  int w = ob_graph_node_input(g, n, 1);
  if (ob_graph_tensor_kind(g, w) != OB_GT_CONST || ob_graph_tensor_ndim(g, w) != 4) return;
  int b = ob_graph_node_num_inputs(g, n) > 2 ? ob_graph_node_input(g, n, 2) : -1;
  if (b >= 0 && ob_graph_tensor_kind(g, b) != OB_GT_CONST) return;
  int64_t s[2] = {1, 1}, p[4] = {0, 0, 0, 0}, dl[2] = {1, 1};
  if (ob_graph_node_attr_ints(g, n, "strides", s, 2) < 0) s[0] = s[1] = 1;
  if (ob_graph_node_attr_ints(g, n, "pads", p, 4) < 0) p[0] = p[1] = p[2] = p[3] = 0;
  if (ob_graph_node_attr_ints(g, n, "dilations", dl, 2) < 0) dl[0] = dl[1] = 1;
  const int64_t *wd = ob_graph_tensor_dims(g, w);
  snprintf(out, cap, "in%d/k%lldx%lld/s%lld,%lld/p%lld,%lld,%lld,%lld/d%lld,%lld/%s", ob_graph_node_input(g, n, 0),
           (long long)wd[2], (long long)wd[3], (long long)s[0], (long long)s[1], (long long)p[0], (long long)p[1],
           (long long)p[2], (long long)p[3], (long long)dl[0], (long long)dl[1],
           ob_graph_node_attr_s(g, n, "activation", ""));
}

ob_status ob_sched_units_from_graph(ob_ctx *ctx, const ob_graph *g, int max_part, ob_sched_units **out) {
  *out = NULL;
  int nn = ob_graph_node_count(g), nt = ob_graph_tensor_count(g);
  int *consumer = malloc(sizeof(int) * (size_t)(nt ? nt : 1)); /* sole reader, -2: several */
  int *root = malloc(sizeof(int) * (size_t)(nn ? nn : 1)), *uid = malloc(sizeof(int) * (size_t)(nn ? nn : 1));
  int totin = 1;
  for (int n = 0; n < nn; n++) totin += ob_graph_node_num_inputs(g, n);
  int *preds = malloc(sizeof(int) * (size_t)totin);
  ob_sched_units *u = NULL;
  ob_str key = {0};
  ob_status st = OB_OK;
  if (!consumer || !root || !uid || !preds) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int t = 0; t < nt; t++) consumer[t] = -1;
  for (int i = 0; i < ob_graph_output_count(g); i++) consumer[ob_graph_output(g, i)] = -2;
  for (int n = 0; n < nn; n++) {
    if (ob_graph_node_dead(g, n)) continue;
    for (int i = 0; i < ob_graph_node_num_inputs(g, n); i++) {
      int t = ob_graph_node_input(g, n, i);
      if (t < 0) continue;
      if (ob_graph_tensor_ndim(g, t) < 0) {
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "tensor '%s' has no shape (infer shapes first)", ob_graph_tensor_name(g, t));
        goto done;
      }
      consumer[t] = consumer[t] == -1 || consumer[t] == n ? n : -2;
    }
  }
  /* roots, from the last node back: a cheap node with one reader joins it */
  for (int n = nn - 1; n >= 0; n--) {
    root[n] = n;
    if (ob_graph_node_dead(g, n) || ob_graph_node_num_outputs(g, n) != 1) continue;
    int w = consumer[ob_graph_node_output(g, n, 0)];
    if (w < 0) continue;
    bool joins = light_op(ob_graph_node_op(g, n)) || (depthwise(g, n) && ob_graph_node_op(g, w) == OB_GOP_CONV);
    if (joins) root[n] = root[w];
  }
  int nunits = 0;
  for (int n = 0; n < nn; n++) uid[n] = !ob_graph_node_dead(g, n) && root[n] == n ? nunits++ : -1;
  if (!nunits) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "graph '%s' has no nodes to schedule", ob_graph_name(g));
    goto done;
  }
  if ((st = ob_sched_units_new(ctx, ob_graph_name(g), &u))) goto done;
  /* each unit's nodes (they precede their root) */
  int *cnt = ob_arena_alloc(u->arena, sizeof(int) * (size_t)nunits);
  int **members = ob_arena_alloc(u->arena, sizeof(int *) * (size_t)nunits);
  for (int n = 0; n < nn; n++)
    if (!ob_graph_node_dead(g, n)) cnt[uid[root[n]]]++;
  for (int k = 0; k < nunits; k++) {
    members[k] = ob_arena_alloc(u->arena, sizeof(int) * (size_t)cnt[k]);
    cnt[k] = 0;
  }
  for (int n = 0; n < nn; n++)
    if (!ob_graph_node_dead(g, n)) members[uid[root[n]]][cnt[uid[root[n]]]++] = n;
  for (int n = 0; n < nn && !st; n++) {
    if (uid[n] < 0) continue;
    int k = uid[n], np = 0;
    ob_sched_node_desc *nd = ob_arena_alloc(u->arena, sizeof *nd * (size_t)cnt[k]);
    ob_sched_op_desc op = {0};
    key.len = 0;
    if (key.data) key.data[0] = '\0';
    for (int j = 0; j < cnt[k]; j++) {
      int m = members[k][j];
      if (j) ob_str_append(&key, " ; ");
      node_desc(ctx, g, m, &nd[j], &key);
      op.flops += nd[j].flops;
      op.bytes += nd[j].bytes;
      for (int i = 0; i < ob_graph_node_num_inputs(g, m); i++) {
        int t = ob_graph_node_input(g, m, i);
        int p = t >= 0 ? ob_graph_tensor_producer(g, t) : -1;
        if (p >= 0 && !ob_graph_node_dead(g, p) && uid[root[p]] != k) preds[np++] = uid[root[p]];
      }
    }
    op.key = ob_arena_strdup(u->arena, key.data ? key.data : "");
    op.kind = unit_kind(g, n);
    op.nnodes = cnt[k];
    op.nodes = nd;
    char mk[256] = "";
    if (cnt[k] == 1) merge_key(g, n, &nd[0], mk, sizeof mk);
    st = ob_sched_units_add_owned(u, ob_graph_node_name(g, n), &op, mk, np, preds, NULL);
    if (!st) {
      u->u[k].nodes = members[k];
      u->u[k].nnodes = cnt[k];
    }
  }
  if (!st) st = ob_sched_units_finish(u, max_part, true);
done:
  free(consumer);
  free(root);
  free(uid);
  free(preds);
  ob_str_free(&key);
  if (st) {
    ob_sched_units_free(u);
    return st;
  }
  *out = u;
  return OB_OK;
}

/* ---- reading ------------------------------------------------------------------------------------ */
const char *ob_sched_units_model(const ob_sched_units *u) { return u->model; }
int ob_sched_units_count(const ob_sched_units *u) { return u->n; }
const char *ob_sched_unit_name(const ob_sched_units *u, int i) { return u->u[i].name; }
const ob_sched_op_desc *ob_sched_unit_op(const ob_sched_units *u, int i) { return &u->u[i].op; }
const char *ob_sched_unit_merge_key(const ob_sched_units *u, int i) { return u->u[i].merge_key; }

int ob_sched_unit_find(const ob_sched_units *u, const char *name) {
  const int64_t *v = name ? smap_find(&u->names, name, strlen(name)) : NULL;
  return v ? (int)*v : -1;
}

int ob_sched_unit_preds(const ob_sched_units *u, int i, const int **preds) {
  *preds = u->u[i].preds;
  return u->u[i].npred;
}

int ob_sched_unit_nodes(const ob_sched_units *u, int i, const int **nodes) {
  *nodes = u->u[i].nodes;
  return u->u[i].nnodes;
}

int ob_sched_units_blocks(const ob_sched_units *u) { return u->nblocks; }
int ob_sched_units_parts(const ob_sched_units *u) { return u->nparts; }

void ob_sched_units_part(const ob_sched_units *u, int p, int *first, int *n) {
  *first = u->part_first[p];
  *n = u->part_n[p];
}
