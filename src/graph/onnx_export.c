/* onnx_export.c: graph -> ONNX model (opset 17, IR version 8), weights
 * inline as raw data. Operators are written one to one; the internal ones
 * that passes create are written as the ONNX nodes they stand for (a fused
 * Conv as Conv, Add, Relu/Clip; Dense as MatMul by the transposed weight,
 * Add...; Gelu as its Erf or Tanh formula). Every protobuf structure lives
 * in one arena, freed after packing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph_impl.h"
#include "onnx.pb-c.h"

typedef struct exp_ctx {
  const ob_graph *g;
  ob_arena *a;
  Onnx__NodeProto **nodes;
  size_t nnodes, cnodes;
  Onnx__TensorProto **inits;
  size_t ninits, cinits;
  int tmp; /* counter of generated names */
} exp_ctx;

static int onnx_type(ob_dtype dt) { return dt == OB_F32 ? 1 : dt == OB_I64 ? 7 : 9; }

static char *xstr(exp_ctx *e, const char *s) { return ob_arena_strdup(e->a, s); }

static void *grow(exp_ctx *e, void *arr, size_t n, size_t *cap) {
  if (n < *cap) return arr;
  size_t nc = *cap ? *cap * 2 : 64;
  void **p = ob_arena_alloc(e->a, nc * sizeof(void *));
  if (n) memcpy(p, arr, n * sizeof(void *));
  *cap = nc;
  return p;
}

static Onnx__TensorProto *tensor_proto(exp_ctx *e, const char *name, ob_dtype dt, int nd, const int64_t *dims, const void *data,
                                       size_t bytes) {
  Onnx__TensorProto *t = ob_arena_alloc(e->a, sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = xstr(e, name);
  t->has_data_type = 1;
  t->data_type = onnx_type(dt);
  t->n_dims = (size_t)nd;
  t->dims = ob_arena_alloc(e->a, sizeof(int64_t) * (size_t)(nd ? nd : 1));
  for (int i = 0; i < nd; i++) t->dims[i] = dims[i];
  t->has_raw_data = 1;
  t->raw_data.len = bytes;
  t->raw_data.data = (uint8_t *)data; /* the graph's memory, alive until packed */
  return t;
}

static void add_init(exp_ctx *e, Onnx__TensorProto *t) {
  e->inits = grow(e, e->inits, e->ninits, &e->cinits);
  e->inits[e->ninits++] = t;
}

static Onnx__NodeProto *node(exp_ctx *e, const char *op, const char *name, int nin, const char *const *in, int nout,
                             const char *const *out) {
  Onnx__NodeProto *n = ob_arena_alloc(e->a, sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = xstr(e, op);
  n->name = xstr(e, name);
  n->domain = xstr(e, "");
  n->n_input = (size_t)nin;
  n->input = ob_arena_alloc(e->a, sizeof(char *) * (size_t)(nin ? nin : 1));
  for (int i = 0; i < nin; i++) n->input[i] = xstr(e, in[i] ? in[i] : "");
  n->n_output = (size_t)nout;
  n->output = ob_arena_alloc(e->a, sizeof(char *) * (size_t)(nout ? nout : 1));
  for (int i = 0; i < nout; i++) n->output[i] = xstr(e, out[i]);
  e->nodes = grow(e, e->nodes, e->nnodes, &e->cnodes);
  e->nodes[e->nnodes++] = n;
  return n;
}

static Onnx__AttributeProto *new_attr(exp_ctx *e, Onnx__NodeProto *n, const char *name) {
  Onnx__AttributeProto *a = ob_arena_alloc(e->a, sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = xstr(e, name);
  a->has_type = 1;
  Onnx__AttributeProto **arr = ob_arena_alloc(e->a, sizeof(void *) * (n->n_attribute + 1));
  if (n->n_attribute) memcpy(arr, n->attribute, sizeof(void *) * n->n_attribute);
  arr[n->n_attribute++] = a;
  n->attribute = arr;
  return a;
}

static void attr_copy(exp_ctx *e, Onnx__NodeProto *n, const gattr *g) {
  Onnx__AttributeProto *a = new_attr(e, n, g->name);
  switch (g->kind) {
  case GA_INT: a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = g->i; break;
  case GA_FLOAT: a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, a->has_f = 1, a->f = (float)g->f; break;
  case GA_STRING:
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.len = strlen(g->s);
    a->s.data = (uint8_t *)g->s;
    break;
  case GA_INTS: a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, a->n_ints = (size_t)g->n, a->ints = g->ints; break;
  case GA_FLOATS: a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, a->n_floats = (size_t)g->n, a->floats = g->floats; break;
  default: break;
  }
}

static const char *tname(exp_ctx *e, int t) { return t >= 0 ? e->g->t[t]->name : ""; }

/* A fresh intermediate name. */
static const char *tmp_name(exp_ctx *e, const char *base, const char *what) {
  return ob_arena_sprintf(e->a, "%s__%s%d", base, what, e->tmp++);
}

static const char *scalar_init(exp_ctx *e, const char *base, float v) {
  const char *nm = tmp_name(e, base, "c");
  float *p = ob_arena_alloc(e->a, sizeof(float));
  *p = v;
  add_init(e, tensor_proto(e, nm, OB_F32, 0, NULL, p, sizeof(float)));
  return nm;
}

/* bias / residual / activation tail of a fused Conv or Dense. */
static void epilogue(exp_ctx *e, const gnode *n, const char *cur, const char *final, bool bias_done) {
  const gtensor *b = gin(e->g, n, 2), *r = gin(e->g, n, 3);
  const char *act = ob_gattr_s(n, "activation", "");
  int steps = (!bias_done && b) + (r != NULL) + (*act != 0), k = 0;
  if (steps == 0) return;
#define NEXT() (++k == steps ? final : tmp_name(e, final, "e"))
  if (!bias_done && b) {
    const char *o = NEXT();
    node(e, "Add", ob_arena_sprintf(e->a, "%s.bias", n->name), 2, (const char *[]){cur, b->name}, 1, &o);
    cur = o;
  }
  if (r) {
    const char *o = NEXT();
    node(e, "Add", ob_arena_sprintf(e->a, "%s.add", n->name), 2, (const char *[]){cur, r->name}, 1, &o);
    cur = o;
  }
  if (!strcmp(act, "relu")) {
    const char *o = NEXT();
    node(e, "Relu", ob_arena_sprintf(e->a, "%s.relu", n->name), 1, &cur, 1, &o);
  } else if (!strcmp(act, "relu6")) {
    const char *o = NEXT();
    const char *lo = scalar_init(e, n->name, 0.0f), *hi = scalar_init(e, n->name, 6.0f);
    node(e, "Clip", ob_arena_sprintf(e->a, "%s.relu6", n->name), 3, (const char *[]){cur, lo, hi}, 1, &o);
  }
#undef NEXT
}

static bool skip_attr(const gattr *a) { return !strcmp(a->name, "activation"); }

static void export_node(exp_ctx *e, const gnode *n) {
  const ob_graph *g = e->g;
  const char *in[1024], *out[16];
  for (int i = 0; i < n->nin; i++) in[i] = tname(e, n->in[i]);
  for (int i = 0; i < n->nout; i++) out[i] = tname(e, n->out[i]);
  if (n->op == OB_GOP_CONV) {
    bool fused = gin(g, n, 3) || *ob_gattr_s(n, "activation", "");
    const char *y = fused ? tmp_name(e, out[0], "conv") : out[0];
    Onnx__NodeProto *p = node(e, "Conv", n->name, gin(g, n, 2) ? 3 : 2, in, 1, &y);
    for (int i = 0; i < n->nattr; i++)
      if (!skip_attr(&n->attrs[i])) attr_copy(e, p, &n->attrs[i]);
    epilogue(e, n, y, out[0], true);
    return;
  }
  if (n->op == OB_GOP_DENSE) {
    /* MatMul by the transposed weight [K, N] */
    const gtensor *w = gin(g, n, 1);
    int64_t N = w->dims[0], K = w->dims[1];
    float *wt = ob_arena_alloc(e->a, sizeof(float) * (size_t)(N * K > 0 ? N * K : 1));
    if (w->data) ob_transpose32(w->data, wt, N, K);
    const char *wn = tmp_name(e, w->name, "T");
    if (w->kind == OB_GT_CONST) {
      add_init(e, tensor_proto(e, wn, OB_F32, 2, (int64_t[]){K, N}, wt, sizeof(float) * (size_t)(N * K)));
    } else {
      Onnx__NodeProto *p = node(e, "Transpose", ob_arena_sprintf(e->a, "%s.T", n->name), 1, &in[1], 1, &wn);
      gattr perm = {.name = "perm", .kind = GA_INTS, .n = 2, .ints = ob_arena_alloc(e->a, 2 * sizeof(int64_t))};
      perm.ints[0] = 1;
      perm.ints[1] = 0;
      attr_copy(e, p, &perm);
    }
    bool more = gin(g, n, 2) || gin(g, n, 3) || *ob_gattr_s(n, "activation", "");
    const char *y = more ? tmp_name(e, out[0], "mm") : out[0];
    node(e, "MatMul", n->name, 2, (const char *[]){in[0], wn}, 1, &y);
    epilogue(e, n, y, out[0], false);
    return;
  }
  if (n->op == OB_GOP_GELU) {
    const char *x = in[0];
    if (!strcmp(ob_gattr_s(n, "approximate", "none"), "tanh")) {
      const char *t1 = tmp_name(e, out[0], "g"), *t2 = tmp_name(e, out[0], "g"), *t3 = tmp_name(e, out[0], "g");
      const char *t4 = tmp_name(e, out[0], "g"), *t5 = tmp_name(e, out[0], "g"), *t6 = tmp_name(e, out[0], "g");
      const char *t7 = tmp_name(e, out[0], "g");
      node(e, "Pow", ob_arena_sprintf(e->a, "%s.pow", n->name), 2, (const char *[]){x, scalar_init(e, n->name, 3.0f)}, 1, &t1);
      node(e, "Mul", ob_arena_sprintf(e->a, "%s.mulc", n->name), 2, (const char *[]){t1, scalar_init(e, n->name, 0.044715f)}, 1, &t2);
      node(e, "Add", ob_arena_sprintf(e->a, "%s.addx", n->name), 2, (const char *[]){x, t2}, 1, &t3);
      node(e, "Mul", ob_arena_sprintf(e->a, "%s.mulk", n->name), 2,
           (const char *[]){t3, scalar_init(e, n->name, 0.7978845608028654f)}, 1, &t4);
      node(e, "Tanh", ob_arena_sprintf(e->a, "%s.tanh", n->name), 1, &t4, 1, &t5);
      node(e, "Add", ob_arena_sprintf(e->a, "%s.add1", n->name), 2, (const char *[]){t5, scalar_init(e, n->name, 1.0f)}, 1, &t6);
      node(e, "Mul", ob_arena_sprintf(e->a, "%s.half", n->name), 2, (const char *[]){x, scalar_init(e, n->name, 0.5f)}, 1, &t7);
      node(e, "Mul", n->name, 2, (const char *[]){t7, t6}, 1, &out[0]);
    } else {
      const char *t1 = tmp_name(e, out[0], "g"), *t2 = tmp_name(e, out[0], "g"), *t3 = tmp_name(e, out[0], "g");
      const char *t4 = tmp_name(e, out[0], "g");
      node(e, "Div", ob_arena_sprintf(e->a, "%s.div", n->name), 2,
           (const char *[]){x, scalar_init(e, n->name, 1.4142135381698608f)}, 1, &t1);
      node(e, "Erf", ob_arena_sprintf(e->a, "%s.erf", n->name), 1, &t1, 1, &t2);
      node(e, "Add", ob_arena_sprintf(e->a, "%s.add", n->name), 2, (const char *[]){t2, scalar_init(e, n->name, 1.0f)}, 1, &t3);
      node(e, "Mul", ob_arena_sprintf(e->a, "%s.mul", n->name), 2, (const char *[]){x, t3}, 1, &t4);
      node(e, "Mul", n->name, 2, (const char *[]){t4, scalar_init(e, n->name, 0.5f)}, 1, &out[0]);
    }
    return;
  }
  Onnx__NodeProto *p = node(e, ob_gop_name(n->op), n->name, n->nin, in, n->nout, out);
  if (n->op == OB_GOP_CONSTANTOFSHAPE) {
    /* value is a one-element tensor attribute */
    bool ok;
    ob_dtype dt = ob_onnx_dtype(ob_gattr_i(n, "dtype", 1), &ok);
    double v = ob_gattr_f(n, "value", 0);
    void *buf = ob_arena_alloc(e->a, 8);
    if (dt == OB_F32) *(float *)buf = (float)v;
    else if (dt == OB_I64) *(int64_t *)buf = (int64_t)v;
    else *(uint8_t *)buf = v != 0;
    Onnx__AttributeProto *a = new_attr(e, p, "value");
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    a->t = tensor_proto(e, "value", dt, 1, (int64_t[]){1}, buf, ob_dtype_size(dt));
    return;
  }
  for (int i = 0; i < n->nattr; i++) attr_copy(e, p, &n->attrs[i]);
}

static Onnx__ValueInfoProto *value_info(exp_ctx *e, const gtensor *t) {
  Onnx__ValueInfoProto *v = ob_arena_alloc(e->a, sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = xstr(e, t->name);
  Onnx__TypeProto *tp = ob_arena_alloc(e->a, sizeof *tp);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = ob_arena_alloc(e->a, sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = onnx_type(t->dtype);
  Onnx__TensorShapeProto *sh = ob_arena_alloc(e->a, sizeof *sh);
  onnx__tensor_shape_proto__init(sh);
  int nd = t->ndim < 0 ? 0 : t->ndim;
  sh->n_dim = (size_t)nd;
  sh->dim = ob_arena_alloc(e->a, sizeof(void *) * (size_t)(nd ? nd : 1));
  for (int i = 0; i < nd; i++) {
    Onnx__TensorShapeProto__Dimension *d = ob_arena_alloc(e->a, sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = t->dims[i];
    sh->dim[i] = d;
  }
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->type = tp;
  return v;
}

ob_status ob_onnx_export_buffer(ob_ctx *ctx, const ob_graph *g, void **out, size_t *len) {
  for (int i = 0; i < g->nt; i++)
    if (g->t[i]->ndim < 0) return ob_fail(ctx, OB_ERR_INVALID_ARG, "export: shape of '%s' is unknown (infer shapes first)", g->t[i]->name);
  exp_ctx e = {.g = g, .a = ob_arena_new(ctx, 1 << 20)};
  if (!e.a) return ob_fail(ctx, OB_ERR_NOMEM, "export: out of memory");
  /* constants that live nodes or outputs read */
  bool *used = calloc((size_t)g->nt + 1, 1);
  if (!used) {
    ob_arena_free(e.a);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < g->nn; i++)
    if (!g->n[i]->dead)
      for (int k = 0; k < g->n[i]->nin; k++)
        if (g->n[i]->in[k] >= 0) used[g->n[i]->in[k]] = true;
  for (int i = 0; i < g->noutputs; i++) used[g->outputs[i]] = true;
  for (int i = 0; i < g->nt; i++) {
    const gtensor *t = g->t[i];
    if (t->kind != OB_GT_CONST || !used[i]) continue;
    Onnx__TensorProto *tp = tensor_proto(&e, t->name, t->dtype, t->ndim, t->dims, t->data, ob_gt_bytes(t));
    /* ONNX has no parameter/buffer distinction: say it, so that a round trip
     * counts the same parameters */
    if (t->dtype == OB_F32 && !t->is_param) tp->doc_string = xstr(&e, OB_ONNX_BUFFER_DOC);
    add_init(&e, tp);
  }
  free(used);
  for (int i = 0; i < g->nn; i++)
    if (!g->n[i]->dead) export_node(&e, g->n[i]);

  Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
  gp.name = xstr(&e, g->name);
  gp.n_node = e.nnodes;
  gp.node = e.nodes;
  gp.n_initializer = e.ninits;
  gp.initializer = e.inits;
  gp.n_input = (size_t)g->ninputs;
  gp.input = ob_arena_alloc(e.a, sizeof(void *) * (size_t)(g->ninputs + 1));
  for (int i = 0; i < g->ninputs; i++) gp.input[i] = value_info(&e, g->t[g->inputs[i]]);
  gp.n_output = (size_t)g->noutputs;
  gp.output = ob_arena_alloc(e.a, sizeof(void *) * (size_t)(g->noutputs + 1));
  for (int i = 0; i < g->noutputs; i++) gp.output[i] = value_info(&e, g->t[g->outputs[i]]);
  Onnx__OperatorSetIdProto ops = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  ops.domain = xstr(&e, "");
  ops.has_version = 1;
  ops.version = 17;
  Onnx__OperatorSetIdProto *opsp = &ops;
  Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
  mp.has_ir_version = 1;
  mp.ir_version = 8;
  mp.producer_name = xstr(&e, "opbench");
  mp.producer_version = xstr(&e, "0.1");
  mp.n_opset_import = 1;
  mp.opset_import = &opsp;
  mp.graph = &gp;
  size_t n = onnx__model_proto__get_packed_size(&mp);
  ob_status st = OB_OK;
  if (n > (size_t)INT32_MAX) {
    /* protobuf's 2 GiB message limit: readers refuse larger files */
    st = ob_fail(ctx, OB_ERR_UNSUPPORTED, "export: the model needs %zu bytes, over protobuf's 2 GiB limit", n);
  } else {
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory (%zu bytes)", n);
    else {
      onnx__model_proto__pack(&mp, buf);
      *out = buf;
      *len = n;
    }
  }
  ob_arena_free(e.a);
  return st;
}

ob_status ob_onnx_export_file(ob_ctx *ctx, const ob_graph *g, const char *path) {
  void *buf = NULL;
  size_t len = 0;
  ob_status st = ob_onnx_export_buffer(ctx, g, &buf, &len);
  if (st) return st;
  /* write beside, then rename: a failed export leaves no partial file */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    free(buf);
    return ob_fail(ctx, OB_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  }
  bool ok = fwrite(buf, 1, len, f) == len;
  ok &= fclose(f) == 0;
  free(buf);
  if (!ok || rename(tmp, path)) {
    remove(tmp);
    return ob_fail(ctx, OB_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  }
  return OB_OK;
}
