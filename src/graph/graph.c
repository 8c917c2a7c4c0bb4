/* graph.c: the graph IR itself: building (inputs, constants, nodes,
 * attributes), reading, validation, compaction, printing and the model
 * statistics (multiply-adds, parameters). The graph's arena owns all of it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph_impl.h"

/* ---- creation ----------------------------------------------------------------- */
ob_status ob_graph_new(ob_ctx *ctx, const char *name, ob_graph **out) {
  ob_graph *g = calloc(1, sizeof *g);
  if (!g) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  g->ctx = ctx;
  g->arena = ob_arena_new(ctx, 256 * 1024);
  g->name = g->arena ? ob_arena_strdup(g->arena, name ? name : "graph") : NULL;
  if (!g->name) {
    ob_graph_free(g);
    return ob_fail(ctx, OB_ERR_NOMEM, "graph '%s': out of memory", name ? name : "graph");
  }
  *out = g;
  return OB_OK;
}

void ob_graph_free(ob_graph *g) {
  if (!g) return;
  ob_arena_free(g->arena);
  free(g);
}

const char *ob_graph_name(const ob_graph *g) { return g->name; }
ob_ctx *ob_graph_ctx(const ob_graph *g) { return g->ctx; }

/* Grows an arena array of `size`-byte items to hold one more. */
static void *grow(ob_arena *a, void *arr, int n, int *cap, size_t size) {
  if (n < *cap) return arr;
  int nc = *cap ? *cap * 2 : 16;
  void *p = ob_arena_alloc(a, (size_t)nc * size);
  if (n) memcpy(p, arr, (size_t)n * size);
  *cap = nc;
  return p;
}

int ob_graph_tensor_find(const ob_graph *g, const char *name) {
  for (int i = 0; i < g->nt; i++)
    if (!strcmp(g->t[i]->name, name)) return i;
  return -1;
}

static int add_tensor(ob_graph *g, const char *name) {
  g->t = grow(g->arena, g->t, g->nt, &g->ct, sizeof *g->t);
  gtensor *t = ob_arena_alloc(g->arena, sizeof *t);
  t->name = ob_arena_strdup(g->arena, name);
  t->ndim = -1;
  t->producer = -1;
  t->dtype = OB_F32;
  g->t[g->nt] = t;
  return g->nt++;
}

int ob_graph_new_tensor(ob_graph *g, const char *base) {
  if (ob_graph_tensor_find(g, base) < 0) return add_tensor(g, base);
  for (int k = 1;; k++) {
    char nm[300];
    snprintf(nm, sizeof nm, "%.280s_%d", base, k);
    if (ob_graph_tensor_find(g, nm) < 0) return add_tensor(g, nm);
  }
}

const char *ob_graph_unique_node_name(ob_graph *g, const char *base) {
  for (int k = 0;; k++) {
    char nm[300];
    if (k) snprintf(nm, sizeof nm, "%.280s_%d", base, k);
    else snprintf(nm, sizeof nm, "%.280s", base);
    bool used = false;
    for (int i = 0; i < g->nn && !used; i++) used = !strcmp(g->n[i]->name, nm);
    if (!used) return ob_arena_strdup(g->arena, nm);
  }
}

static bool dtype_ok(ob_dtype dt) { return dt == OB_F32 || dt == OB_I64 || dt == OB_BOOL; }

static ob_status check_shape(ob_ctx *ctx, const char *name, int ndim, const int64_t *dims, bool known) {
  if (ndim < 0 || ndim > OB_GRAPH_MAX_DIMS)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "tensor '%s': %d dimensions (at most %d)", name, ndim,
                   OB_GRAPH_MAX_DIMS);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] < 0 || (known && dims[i] < 0))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "tensor '%s': dimension %d is %lld", name, i, (long long)dims[i]);
    if (__builtin_mul_overflow(n, dims[i], &n) || n > OB_GRAPH_MAX_NUMEL)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "tensor '%s': more than 2^32 elements", name);
  }
  return OB_OK;
}

ob_status ob_graph_add_input(ob_graph *g, const char *name, ob_dtype dt, int ndim, const int64_t *dims,
                             int *id) {
  if (!dtype_ok(dt)) return ob_fail(g->ctx, OB_ERR_UNSUPPORTED, "input '%s': dtype %s is not supported", name, ob_dtype_name(dt));
  if (ob_graph_tensor_find(g, name) >= 0)
    return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "tensor name '%s' is defined twice", name);
  ob_status st = check_shape(g->ctx, name, ndim, dims, true);
  if (st) return st;
  int t = add_tensor(g, name);
  g->t[t]->kind = OB_GT_INPUT;
  ob_gt_set(g->t[t], dt, ndim, dims);
  g->inputs = grow(g->arena, g->inputs, g->ninputs, &g->cinputs, sizeof(int));
  g->inputs[g->ninputs++] = t;
  if (id) *id = t;
  return OB_OK;
}

ob_status ob_graph_add_const(ob_graph *g, const char *name, ob_dtype dt, int ndim, const int64_t *dims,
                             const void *data, bool is_param, int *id) {
  if (!dtype_ok(dt)) return ob_fail(g->ctx, OB_ERR_UNSUPPORTED, "constant '%s': dtype %s is not supported", name, ob_dtype_name(dt));
  if (ob_graph_tensor_find(g, name) >= 0)
    return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "tensor name '%s' is defined twice", name);
  ob_status st = check_shape(g->ctx, name, ndim, dims, true);
  if (st) return st;
  int t = add_tensor(g, name);
  gtensor *x = g->t[t];
  x->kind = OB_GT_CONST;
  x->is_param = is_param && dt == OB_F32;
  ob_gt_set(x, dt, ndim, dims);
  size_t bytes = ob_gt_bytes(x);
  x->data = ob_arena_alloc(g->arena, bytes ? bytes : 1);
  if (data && bytes) memcpy(x->data, data, bytes);
  if (id) *id = t;
  return OB_OK;
}

int ob_graph_add_node_raw(ob_graph *g, ob_gop op, const char *name, int nin, const int *in, int nout,
                          const int *out) {
  g->n = grow(g->arena, g->n, g->nn, &g->cn, sizeof *g->n);
  gnode *n = ob_arena_alloc(g->arena, sizeof *n);
  n->op = op;
  n->name = ob_graph_unique_node_name(g, name && *name ? name : ob_gop_name(op));
  n->nin = nin;
  n->nout = nout;
  n->in = ob_arena_alloc(g->arena, sizeof(int) * (size_t)(nin ? nin : 1));
  n->out = ob_arena_alloc(g->arena, sizeof(int) * (size_t)(nout ? nout : 1));
  for (int i = 0; i < nin; i++) n->in[i] = in[i];
  for (int i = 0; i < nout; i++) {
    n->out[i] = out[i];
    g->t[out[i]]->producer = g->nn;
  }
  g->n[g->nn] = n;
  return g->nn++;
}

ob_status ob_graph_add_node(ob_graph *g, ob_gop op, const char *name, int nin, const int *in, int nout,
                            const char *const *out_names, int *out_ids, int *node) {
  if ((unsigned)op >= OB_GOP_COUNT) return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "bad operator kind %d", (int)op);
  const gop_def *d = ob_gop_def(op);
  const char *nm = name && *name ? name : d->name;
  if (nin < d->min_in || nin > d->max_in)
    return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "node '%s' (%s): %d inputs (expected %d to %d)", nm, d->name,
                   nin, d->min_in, d->max_in);
  if (nout < d->min_out || nout > d->max_out)
    return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "node '%s' (%s): %d outputs (expected %d to %d)", nm, d->name,
                   nout, d->min_out, d->max_out);
  for (int i = 0; i < nin; i++)
    if (in[i] < -1 || in[i] >= g->nt)
      return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "node '%s' (%s): input %d is not a tensor of the graph", nm,
                     d->name, i);
  int outs[16] = {0};
  OB_ASSERT(nout <= 16);
  for (int i = 0; i < nout; i++) {
    char buf[300];
    const char *on = out_names && out_names[i] ? out_names[i] : NULL;
    if (!on) {
      snprintf(buf, sizeof buf, "%.280s:%d", nm, i);
      on = buf;
    }
    if (ob_graph_tensor_find(g, on) >= 0)
      return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "node '%s' (%s): output name '%s' is defined twice", nm,
                     d->name, on);
    outs[i] = add_tensor(g, on);
  }
  int id = ob_graph_add_node_raw(g, op, nm, nin, in, nout, outs);
  if (out_ids)
    for (int i = 0; i < nout; i++) out_ids[i] = outs[i];
  if (node) *node = id;
  return OB_OK;
}

void ob_graph_move_last_before(ob_graph *g, int pos) {
  /* ids are positions: moving renumbers, so producer links are redone */
  gnode *last = g->n[g->nn - 1];
  memmove(&g->n[pos + 1], &g->n[pos], sizeof(gnode *) * (size_t)(g->nn - 1 - pos));
  g->n[pos] = last;
  for (int i = pos; i < g->nn; i++)
    for (int k = 0; k < g->n[i]->nout; k++) g->t[g->n[i]->out[k]]->producer = i;
}

ob_status ob_graph_mark_output(ob_graph *g, int t) {
  if (t < 0 || t >= g->nt) return ob_fail(g->ctx, OB_ERR_INVALID_ARG, "output %d is not a tensor of the graph", t);
  g->outputs = grow(g->arena, g->outputs, g->noutputs, &g->coutputs, sizeof(int));
  g->outputs[g->noutputs++] = t;
  return OB_OK;
}

/* ---- attributes ------------------------------------------------------------------ */
const gattr *ob_gnode_attr(const gnode *n, const char *name) {
  for (int i = 0; i < n->nattr; i++)
    if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
  return NULL;
}

static gattr *attr_slot(ob_graph *g, int node, const char *name) {
  gnode *n = g->n[node];
  for (int i = 0; i < n->nattr; i++)
    if (!strcmp(n->attrs[i].name, name)) {
      memset(&n->attrs[i], 0, sizeof n->attrs[i]);
      n->attrs[i].name = ob_arena_strdup(g->arena, name);
      return &n->attrs[i];
    }
  n->attrs = grow(g->arena, n->attrs, n->nattr, &n->cattr, sizeof *n->attrs);
  gattr *a = &n->attrs[n->nattr++];
  memset(a, 0, sizeof *a);
  a->name = ob_arena_strdup(g->arena, name);
  return a;
}

void ob_graph_set_attr_i(ob_graph *g, int node, const char *name, int64_t v) {
  gattr *a = attr_slot(g, node, name);
  a->kind = GA_INT;
  a->i = v;
}
void ob_graph_set_attr_f(ob_graph *g, int node, const char *name, double v) {
  gattr *a = attr_slot(g, node, name);
  a->kind = GA_FLOAT;
  a->f = v;
}
void ob_graph_set_attr_s(ob_graph *g, int node, const char *name, const char *v) {
  gattr *a = attr_slot(g, node, name);
  a->kind = GA_STRING;
  a->s = ob_arena_strdup(g->arena, v ? v : "");
}
void ob_graph_set_attr_ints(ob_graph *g, int node, const char *name, int n, const int64_t *v) {
  gattr *a = attr_slot(g, node, name);
  a->kind = GA_INTS;
  a->n = n;
  a->ints = ob_arena_alloc(g->arena, sizeof(int64_t) * (size_t)(n ? n : 1));
  if (n) memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
}
void ob_graph_set_attr_floats(ob_graph *g, int node, const char *name, int n, const float *v) {
  gattr *a = attr_slot(g, node, name);
  a->kind = GA_FLOATS;
  a->n = n;
  a->floats = ob_arena_alloc(g->arena, sizeof(float) * (size_t)(n ? n : 1));
  if (n) memcpy(a->floats, v, sizeof(float) * (size_t)n);
}

void ob_gnode_del_attr(gnode *n, const char *name) {
  for (int i = 0; i < n->nattr; i++)
    if (!strcmp(n->attrs[i].name, name)) {
      memmove(&n->attrs[i], &n->attrs[i + 1], sizeof *n->attrs * (size_t)(n->nattr - i - 1));
      n->nattr--;
      return;
    }
}

int64_t ob_gattr_i(const gnode *n, const char *name, int64_t dflt) {
  const gattr *a = ob_gnode_attr(n, name);
  if (!a) return dflt;
  if (a->kind == GA_INT) return a->i;
  if (a->kind == GA_FLOAT) return (int64_t)a->f;
  return dflt;
}
double ob_gattr_f(const gnode *n, const char *name, double dflt) {
  const gattr *a = ob_gnode_attr(n, name);
  if (!a) return dflt;
  if (a->kind == GA_FLOAT) return a->f;
  if (a->kind == GA_INT) return (double)a->i;
  return dflt;
}
const char *ob_gattr_s(const gnode *n, const char *name, const char *dflt) {
  const gattr *a = ob_gnode_attr(n, name);
  return a && a->kind == GA_STRING ? a->s : dflt;
}
int ob_gattr_ints(const gnode *n, const char *name, const int64_t **vals) {
  const gattr *a = ob_gnode_attr(n, name);
  if (!a || a->kind != GA_INTS) return -1;
  *vals = a->ints;
  return a->n;
}

/* ---- reading ------------------------------------------------------------------------ */
int ob_graph_tensor_count(const ob_graph *g) { return g->nt; }
const char *ob_graph_tensor_name(const ob_graph *g, int t) { return g->t[t]->name; }
ob_dtype ob_graph_tensor_dtype(const ob_graph *g, int t) { return g->t[t]->dtype; }
int ob_graph_tensor_ndim(const ob_graph *g, int t) { return g->t[t]->ndim; }
const int64_t *ob_graph_tensor_dims(const ob_graph *g, int t) { return g->t[t]->dims; }
int64_t ob_graph_tensor_numel(const ob_graph *g, int t) { return ob_gt_numel(g->t[t]); }
ob_gtensor_kind ob_graph_tensor_kind(const ob_graph *g, int t) { return g->t[t]->kind; }
bool ob_graph_tensor_is_param(const ob_graph *g, int t) { return g->t[t]->is_param; }
const void *ob_graph_tensor_data(const ob_graph *g, int t) {
  return g->t[t]->kind == OB_GT_CONST ? g->t[t]->data : NULL;
}
int ob_graph_tensor_producer(const ob_graph *g, int t) { return g->t[t]->producer; }
ob_layout ob_graph_tensor_layout(const ob_graph *g, int t) { return g->t[t]->layout; }
int ob_graph_tensor_block(const ob_graph *g, int t) { return g->t[t]->block; }
int ob_graph_input_count(const ob_graph *g) { return g->ninputs; }
int ob_graph_input(const ob_graph *g, int i) { return g->inputs[i]; }
int ob_graph_output_count(const ob_graph *g) { return g->noutputs; }
int ob_graph_output(const ob_graph *g, int i) { return g->outputs[i]; }
int ob_graph_node_count(const ob_graph *g) { return g->nn; }
bool ob_graph_node_dead(const ob_graph *g, int n) { return g->n[n]->dead; }
ob_gop ob_graph_node_op(const ob_graph *g, int n) { return g->n[n]->op; }
const char *ob_graph_node_name(const ob_graph *g, int n) { return g->n[n]->name; }
int ob_graph_node_num_inputs(const ob_graph *g, int n) { return g->n[n]->nin; }
int ob_graph_node_input(const ob_graph *g, int n, int i) { return g->n[n]->in[i]; }
int64_t ob_graph_node_param_bytes(const ob_graph *g, int n) {
  int64_t b = 0;
  for (int i = 0; n >= 0 && i < g->n[n]->nin; i++) {
    int t = g->n[n]->in[i];
    int64_t numel = t >= 0 && g->t[t]->is_param ? ob_graph_tensor_numel(g, t) : 0;
    if (numel > 0) b += numel * (int64_t)ob_dtype_size(g->t[t]->dtype);
  }
  return b;
}
int ob_graph_node_num_outputs(const ob_graph *g, int n) { return g->n[n]->nout; }
int ob_graph_node_output(const ob_graph *g, int n, int i) { return g->n[n]->out[i]; }
bool ob_graph_node_has_attr(const ob_graph *g, int n, const char *name) {
  return ob_gnode_attr(g->n[n], name) != NULL;
}
int64_t ob_graph_node_attr_i(const ob_graph *g, int n, const char *name, int64_t dflt) {
  return ob_gattr_i(g->n[n], name, dflt);
}
double ob_graph_node_attr_f(const ob_graph *g, int n, const char *name, double dflt) {
  return ob_gattr_f(g->n[n], name, dflt);
}
const char *ob_graph_node_attr_s(const ob_graph *g, int n, const char *name, const char *dflt) {
  return ob_gattr_s(g->n[n], name, dflt);
}
int ob_graph_node_attr_ints(const ob_graph *g, int n, const char *name, int64_t *out, int cap) {
  const int64_t *v;
  int k = ob_gattr_ints(g->n[n], name, &v);
  for (int i = 0; i < k && i < cap; i++) out[i] = v[i];
  return k;
}

/* ---- helpers ------------------------------------------------------------------------- */
int64_t ob_gt_numel(const gtensor *t) {
  if (t->ndim < 0) return -1;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) {
    if (t->dims[i] < 0) return -1;
    if (__builtin_mul_overflow(n, t->dims[i], &n) || n > OB_GRAPH_MAX_NUMEL) return -1;
  }
  return n;
}

size_t ob_gt_bytes(const gtensor *t) {
  int64_t n = ob_gt_numel(t);
  return n < 0 ? 0 : (size_t)n * ob_dtype_size(t->dtype);
}

void ob_gt_set(gtensor *t, ob_dtype dt, int ndim, const int64_t *dims) {
  OB_ASSERT(ndim >= 0 && ndim <= OB_GRAPH_MAX_DIMS);
  t->dtype = dt;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->dims[i] = dims[i];
}

ob_status ob_gfail(ob_ctx *ctx, const gnode *n, ob_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ob_fail(ctx, st, "node '%s' (%s): %s", n->name, ob_gop_name(n->op), msg);
}

int ob_graph_uses(const ob_graph *g, int t) {
  int u = 0;
  for (int i = 0; i < g->nn; i++) {
    if (g->n[i]->dead) continue;
    for (int k = 0; k < g->n[i]->nin; k++) u += g->n[i]->in[k] == t;
  }
  return u;
}

bool ob_graph_is_output(const ob_graph *g, int t) {
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == t) return true;
  return false;
}

void ob_graph_replace_uses(ob_graph *g, int from, int to) {
  for (int i = 0; i < g->nn; i++)
    for (int k = 0; k < g->n[i]->nin; k++)
      if (g->n[i]->in[k] == from) g->n[i]->in[k] = to;
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
}

void ob_transpose32(const void *src, void *dst, int64_t R, int64_t C) {
  const uint32_t *s = src;
  uint32_t *d = dst;
  enum { T = 32 };
  for (int64_t r0 = 0; r0 < R; r0 += T)
    for (int64_t c0 = 0; c0 < C; c0 += T) {
      int64_t r1 = r0 + T < R ? r0 + T : R, c1 = c0 + T < C ? c0 + T : C;
      for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++) d[c * R + r] = s[r * C + c];
    }
}

void *ob_graph_dup(ob_graph *g, const void *data, size_t bytes) {
  void *p = ob_arena_alloc(g->arena, bytes ? bytes : 1);
  if (bytes) memcpy(p, data, bytes);
  return p;
}

void ob_graph_make_const(ob_graph *g, int t, void *data) {
  gtensor *x = g->t[t];
  x->kind = OB_GT_CONST;
  x->is_param = false;
  x->data = data;
  x->producer = -1;
}

/* ---- validation --------------------------------------------------------------------------- */
ob_status ob_graph_validate(ob_ctx *ctx, const ob_graph *g) {
  bool *defined = calloc((size_t)g->nt + 1, 1);
  if (!defined) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  ob_status st = OB_OK;
  for (int i = 0; i < g->nt; i++) defined[i] = g->t[i]->kind != OB_GT_ACT;
  for (int i = 0; i < g->nn && !st; i++) {
    const gnode *n = g->n[i];
    if (n->dead) continue;
    const gop_def *d = ob_gop_def(n->op);
    if (n->nin < d->min_in || n->nin > d->max_in) {
      st = ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "%d inputs (expected %d to %d)", n->nin, d->min_in, d->max_in);
      break;
    }
    for (int k = 0; k < n->nin && !st; k++) {
      int t = n->in[k];
      if (t < 0) {
        if (k < d->min_in) st = ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "required input %d is missing", k);
        continue;
      }
      if (!defined[t])
        st = ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "input '%s' is used before it is computed", g->t[t]->name);
    }
    for (int k = 0; k < n->nout && !st; k++) {
      if (defined[n->out[k]])
        st = ob_gfail(ctx, n, OB_ERR_INVALID_ARG, "output '%s' is computed twice", g->t[n->out[k]]->name);
      defined[n->out[k]] = true;
    }
  }
  for (int i = 0; i < g->noutputs && !st; i++)
    if (!defined[g->outputs[i]])
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "graph output '%s' is never computed", g->t[g->outputs[i]]->name);
  if (!st && g->noutputs == 0) st = ob_fail(ctx, OB_ERR_INVALID_ARG, "graph '%s' has no outputs", g->name);
  free(defined);
  return st;
}

/* ---- compaction ---------------------------------------------------------------------------- */
void ob_graph_compact(ob_graph *g) {
  int *tmap = malloc(sizeof(int) * (size_t)(g->nt + 1));
  bool *used = calloc((size_t)g->nt + 1, 1);
  OB_ASSERT(tmap && used);
  int nn = 0;
  for (int i = 0; i < g->nn; i++)
    if (!g->n[i]->dead) g->n[nn++] = g->n[i];
  g->nn = nn;
  for (int i = 0; i < g->nn; i++) {
    for (int k = 0; k < g->n[i]->nin; k++)
      if (g->n[i]->in[k] >= 0) used[g->n[i]->in[k]] = true;
    for (int k = 0; k < g->n[i]->nout; k++) used[g->n[i]->out[k]] = true;
  }
  for (int i = 0; i < g->ninputs; i++) used[g->inputs[i]] = true;
  for (int i = 0; i < g->noutputs; i++) used[g->outputs[i]] = true;
  int nt = 0;
  for (int i = 0; i < g->nt; i++) {
    tmap[i] = used[i] ? nt : -1;
    if (used[i]) g->t[nt++] = g->t[i];
  }
  g->nt = nt;
  for (int i = 0; i < g->nn; i++) {
    for (int k = 0; k < g->n[i]->nin; k++)
      if (g->n[i]->in[k] >= 0) g->n[i]->in[k] = tmap[g->n[i]->in[k]];
    for (int k = 0; k < g->n[i]->nout; k++) g->n[i]->out[k] = tmap[g->n[i]->out[k]];
  }
  for (int i = 0; i < g->ninputs; i++) g->inputs[i] = tmap[g->inputs[i]];
  for (int i = 0; i < g->noutputs; i++) g->outputs[i] = tmap[g->outputs[i]];
  for (int i = 0; i < g->nt; i++) g->t[i]->producer = -1;
  for (int i = 0; i < g->nn; i++)
    for (int k = 0; k < g->n[i]->nout; k++) g->t[g->n[i]->out[k]]->producer = i;
  free(tmap);
  free(used);
}

/* ---- statistics ------------------------------------------------------------------------------ */
static double node_macs(const ob_graph *g, const gnode *n) {
  const gtensor *y = n->nout ? gout(g, n, 0) : NULL;
  if (!y || y->ndim < 0) return 0;
  double out = (double)ob_gt_numel(y);
  switch (n->op) {
  case OB_GOP_CONV: {
    const gtensor *w = gin(g, n, 1);
    if (!w || w->ndim < 2) return 0;
    double per = 1;
    for (int i = 1; i < w->ndim; i++) per *= (double)w->dims[i];
    return out * per;
  }
  case OB_GOP_GEMM: {
    const gtensor *a = gin(g, n, 0);
    if (!a || a->ndim != 2) return 0;
    return out * (double)(ob_gattr_i(n, "transA", 0) ? a->dims[0] : a->dims[1]);
  }
  case OB_GOP_MATMUL: {
    const gtensor *a = gin(g, n, 0);
    if (!a || a->ndim < 1) return 0;
    return out * (double)a->dims[a->ndim - 1];
  }
  case OB_GOP_DENSE: {
    const gtensor *w = gin(g, n, 1);
    return w && w->ndim == 2 ? out * (double)w->dims[1] : 0;
  }
  case OB_GOP_LSTM: {
    const gtensor *x = gin(g, n, 0), *w = gin(g, n, 1), *r = gin(g, n, 2);
    if (!x || !w || !r || x->ndim != 3 || w->ndim != 3 || r->ndim != 3) return 0;
    double tb = (double)(x->dims[0] * x->dims[1]);
    return tb * (double)w->dims[1] * (double)(w->dims[2] + r->dims[2]);
  }
  default: return 0;
  }
}

double ob_graph_macs(const ob_graph *g) {
  double s = 0;
  for (int i = 0; i < g->nn; i++)
    if (!g->n[i]->dead) s += node_macs(g, g->n[i]);
  return s;
}

int64_t ob_graph_params(const ob_graph *g) {
  int64_t s = 0;
  for (int i = 0; i < g->nt; i++)
    if (g->t[i]->kind == OB_GT_CONST && g->t[i]->is_param && (ob_graph_uses(g, i) || ob_graph_is_output(g, i)))
      s += ob_gt_numel(g->t[i]);
  return s;
}

/* ---- printing ---------------------------------------------------------------------------------- */
static void print_shape(ob_str *s, const gtensor *t) {
  if (t->ndim < 0) {
    ob_str_append(s, "?");
    return;
  }
  ob_str_append(s, "[");
  for (int i = 0; i < t->ndim; i++) ob_str_appendf(s, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  ob_str_append(s, "]");
  if (t->dtype != OB_F32) ob_str_appendf(s, "%s", t->dtype == OB_I64 ? "i64" : "bool");
  if (t->layout == OB_LAYOUT_NCHWC) ob_str_appendf(s, "{NCHW%dc}", t->block);
}

static void print_attr(ob_str *s, const gattr *a) {
  ob_str_appendf(s, " %s=", a->name);
  switch (a->kind) {
  case GA_INT: ob_str_appendf(s, "%lld", (long long)a->i); break;
  case GA_FLOAT: ob_str_appendf(s, "%g", a->f); break;
  case GA_STRING: ob_str_appendf(s, "%s", a->s); break;
  case GA_INTS:
    ob_str_append(s, "[");
    for (int i = 0; i < a->n && i < 16; i++) ob_str_appendf(s, "%s%lld", i ? "," : "", (long long)a->ints[i]);
    ob_str_append(s, a->n > 16 ? ",...]" : "]");
    break;
  case GA_FLOATS:
    ob_str_append(s, "[");
    for (int i = 0; i < a->n && i < 16; i++) ob_str_appendf(s, "%s%g", i ? "," : "", a->floats[i]);
    ob_str_append(s, a->n > 16 ? ",...]" : "]");
    break;
  default: break;
  }
}

void ob_graph_print(const ob_graph *g, ob_str *s) {
  int live = 0;
  for (int i = 0; i < g->nn; i++) live += !g->n[i]->dead;
  ob_str_appendf(s, "graph %s: %d nodes, %d inputs, %d outputs\n", g->name, live, g->ninputs, g->noutputs);
  for (int i = 0; i < g->ninputs; i++) {
    ob_str_appendf(s, "  input %s ", g->t[g->inputs[i]]->name);
    print_shape(s, g->t[g->inputs[i]]);
    ob_str_append(s, "\n");
  }
  for (int i = 0; i < g->nn; i++) {
    const gnode *n = g->n[i];
    if (n->dead) continue;
    ob_str_appendf(s, "  %s = %s(", n->name, ob_gop_name(n->op));
    for (int k = 0; k < n->nin; k++) {
      if (k) ob_str_append(s, ", ");
      if (n->in[k] < 0) {
        ob_str_append(s, "-");
        continue;
      }
      const gtensor *t = g->t[n->in[k]];
      if (t->kind == OB_GT_CONST) {
        ob_str_appendf(s, "%s", t->name);
        print_shape(s, t);
      } else {
        ob_str_appendf(s, "%s", t->name);
        if (t->layout == OB_LAYOUT_NCHWC) ob_str_appendf(s, "{NCHW%dc}", t->block);
      }
    }
    ob_str_append(s, ")");
    for (int k = 0; k < n->nattr; k++) print_attr(s, &n->attrs[k]);
    ob_str_append(s, " ->");
    for (int k = 0; k < n->nout; k++) {
      ob_str_appendf(s, " %s", g->t[n->out[k]]->name);
      print_shape(s, g->t[n->out[k]]);
    }
    ob_str_append(s, "\n");
  }
  for (int i = 0; i < g->noutputs; i++) {
    ob_str_appendf(s, "  output %s ", g->t[g->outputs[i]]->name);
    print_shape(s, g->t[g->outputs[i]]);
    ob_str_append(s, "\n");
  }
}
