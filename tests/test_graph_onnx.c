/* test_graph_onnx.c: ONNX import and export. Export then import gives the
 * same graph (printed text, constants byte for byte, reference outputs) for
 * every zoo model at a small size, and for optimized graphs (internal
 * operators written as ONNX) the same numbers. Small ONNX files are built
 * here with the protobuf-c schema to cover the opset differences (11 vs 13:
 * Split, Squeeze/Unsqueeze, Clip, Resize, Upsample), external data, and bad
 * files: truncated, malformed, unsupported operator, inconsistent shapes,
 * undefined inputs, dynamic dimensions, unsupported opsets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "onnx.pb-c.h"
#include "opbench/graph.h"

static ob_ctx *ctx;

/* ---- building ONNX models by hand --------------------------------------------- */
/* Everything the builders allocate is kept in one list and freed by
 * mb_free_all at the end. */
static void **g_keep;
static size_t g_nkeep, g_ckeep;

static void *A(size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (g_nkeep == g_ckeep) g_keep = realloc(g_keep, sizeof(void *) * (g_ckeep = g_ckeep ? 2 * g_ckeep : 256));
  g_keep[g_nkeep++] = p;
  return p;
}

static void mb_free_all(void) {
  for (size_t i = 0; i < g_nkeep; i++) free(g_keep[i]);
  free(g_keep);
  g_keep = NULL;
  g_nkeep = g_ckeep = 0;
}

static char *S(const char *s) { return strcpy(A(strlen(s) + 1), s); }

typedef struct mb {
  Onnx__NodeProto *nodes[32];
  int nn;
  Onnx__TensorProto *inits[32];
  int ni;
  Onnx__ValueInfoProto *in[8], *out[8];
  int nin, nout;
  int64_t opset;
} mb;

static Onnx__NodeProto *node(mb *m, const char *op, const char *name, int nin, const char *const *in, int nout,
                             const char *const *out) {
  Onnx__NodeProto *n = A(sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = S(op);
  n->name = S(name);
  n->n_input = (size_t)nin;
  n->input = A(((size_t)nin + 1) * sizeof(char *));
  for (int i = 0; i < nin; i++) n->input[i] = S(in[i]);
  n->n_output = (size_t)nout;
  n->output = A(((size_t)nout + 1) * sizeof(char *));
  for (int i = 0; i < nout; i++) n->output[i] = S(out[i]);
  m->nodes[m->nn++] = n;
  return n;
}

static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name) {
  Onnx__AttributeProto *a = A(sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = S(name);
  a->has_type = 1;
  Onnx__AttributeProto **arr = A(sizeof(void *) * (n->n_attribute + 1));
  if (n->n_attribute) memcpy(arr, n->attribute, sizeof(void *) * n->n_attribute);
  n->attribute = arr;
  n->attribute[n->n_attribute++] = a;
  return a;
}

static void attr_ints(Onnx__NodeProto *n, const char *name, int k, const int64_t *v) {
  Onnx__AttributeProto *a = attr(n, name);
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  a->n_ints = (size_t)k;
  a->ints = A(sizeof(int64_t) * (size_t)(k + 1));
  memcpy(a->ints, v, sizeof(int64_t) * (size_t)k);
}

static void attr_i(Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = attr(n, name);
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  a->has_i = 1;
  a->i = v;
}

static void attr_f(Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a = attr(n, name);
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  a->has_f = 1;
  a->f = v;
}

static void attr_s(Onnx__NodeProto *n, const char *name, const char *v) {
  Onnx__AttributeProto *a = attr(n, name);
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  a->has_s = 1;
  a->s.data = (uint8_t *)S(v);
  a->s.len = strlen(v);
}

static Onnx__TensorProto *tensor(int type, const char *name, int nd, const int64_t *dims, const void *data, size_t bytes) {
  Onnx__TensorProto *t = A(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = S(name);
  t->has_data_type = 1;
  t->data_type = type;
  t->n_dims = (size_t)nd;
  t->dims = A(sizeof(int64_t) * (size_t)(nd + 1));
  if (nd) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)nd);
  t->has_raw_data = 1;
  t->raw_data.len = bytes;
  t->raw_data.data = A(bytes + 1);
  if (bytes) memcpy(t->raw_data.data, data, bytes);
  return t;
}

static void init_f(mb *m, const char *name, int nd, const int64_t *dims, const float *v, size_t n) {
  m->inits[m->ni++] = tensor(1, name, nd, dims, v, n * 4);
}
static void init_i(mb *m, const char *name, int n, const int64_t *v) {
  int64_t d = n;
  m->inits[m->ni++] = tensor(7, name, 1, &d, v, (size_t)n * 8);
}

static Onnx__ValueInfoProto *vi(const char *name, int type, int nd, const int64_t *dims, const char *param) {
  Onnx__ValueInfoProto *v = A(sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = S(name);
  Onnx__TypeProto *tp = A(sizeof *tp);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = A(sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = type;
  Onnx__TensorShapeProto *sh = A(sizeof *sh);
  onnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)nd;
  sh->dim = A(((size_t)nd + 1) * sizeof(void *));
  for (int i = 0; i < nd; i++) {
    Onnx__TensorShapeProto__Dimension *d = A(sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    if (dims[i] < 0) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = S(param);
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = dims[i];
    }
    sh->dim[i] = d;
  }
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->type = tp;
  return v;
}

static uint8_t *pack(mb *m, size_t *len) {
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  g.name = S("handmade");
  g.n_node = (size_t)m->nn;
  g.node = m->nodes;
  g.n_initializer = (size_t)m->ni;
  g.initializer = m->inits;
  g.n_input = (size_t)m->nin;
  g.input = m->in;
  g.n_output = (size_t)m->nout;
  g.output = m->out;
  Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opp = &op;
  op.domain = S("");
  op.has_version = 1;
  op.version = m->opset;
  Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
  mp.has_ir_version = 1;
  mp.ir_version = 7;
  mp.n_opset_import = 1;
  mp.opset_import = &opp;
  mp.graph = &g;
  *len = onnx__model_proto__get_packed_size(&mp);
  uint8_t *buf = malloc(*len);
  onnx__model_proto__pack(&mp, buf);
  return buf;
}

static ob_status import(mb *m, ob_graph **g) {
  size_t len;
  uint8_t *buf = pack(m, &len);
  ob_status st = ob_onnx_import_buffer(ctx, buf, len, 1, 0, g);
  free(buf);
  return st;
}

/* Runs g on the given float input (one input), returns output i (malloc'd). */
static float *run1(ob_graph *g, const float *x, int out) {
  int no = ob_graph_output_count(g);
  void *outs[8];
  for (int i = 0; i < no; i++) outs[i] = malloc((size_t)ob_graph_tensor_numel(g, ob_graph_output(g, i)) * 8 + 8);
  CHECK_MSG(ob_graph_run_reference(ctx, g, (const void *const[]){x}, outs) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  for (int i = 0; i < no; i++)
    if (i != out) free(outs[i]);
  return outs[out];
}

/* ---- opset forms -------------------------------------------------------------------- */
/* x [1,2,2,4] -> Split(axis 3: 1,3) -> a [1,2,2,1], b [1,2,2,3];
 * a -> Squeeze(3) -> Unsqueeze(0) -> Clip(-0.5, 0.5) -> out0 [1,1,2,2];
 * x -> Resize(scales 1,1,2,2, nearest asymmetric floor) -> out1 [1,2,4,8]. */
static void build_forms(mb *m, int64_t opset) {
  memset(m, 0, sizeof *m);
  m->opset = opset;
  m->in[m->nin++] = vi("x", 1, 4, (int64_t[]){1, 2, 2, 4}, NULL);
  Onnx__NodeProto *n;
  if (opset >= 13) {
    init_i(m, "split", 2, (int64_t[]){1, 3});
    n = node(m, "Split", "split", 2, (const char *[]){"x", "split"}, 2, (const char *[]){"a", "b"});
  } else {
    n = node(m, "Split", "split", 1, (const char *[]){"x"}, 2, (const char *[]){"a", "b"});
    attr_ints(n, "split", 2, (int64_t[]){1, 3});
  }
  attr_i(n, "axis", 3);
  if (opset >= 13) {
    init_i(m, "ax3", 1, (int64_t[]){3});
    init_i(m, "ax0", 1, (int64_t[]){0});
    node(m, "Squeeze", "sq", 2, (const char *[]){"a", "ax3"}, 1, (const char *[]){"s"});
    node(m, "Unsqueeze", "unsq", 2, (const char *[]){"s", "ax0"}, 1, (const char *[]){"u"});
  } else {
    attr_ints(node(m, "Squeeze", "sq", 1, (const char *[]){"a"}, 1, (const char *[]){"s"}), "axes", 1, (int64_t[]){3});
    attr_ints(node(m, "Unsqueeze", "unsq", 1, (const char *[]){"s"}, 1, (const char *[]){"u"}), "axes", 1, (int64_t[]){0});
  }
  if (opset >= 11) {
    init_f(m, "lo", 0, NULL, (float[]){-0.5f}, 1);
    init_f(m, "hi", 0, NULL, (float[]){0.5f}, 1);
    node(m, "Clip", "clip", 3, (const char *[]){"u", "lo", "hi"}, 1, (const char *[]){"out0"});
  } else {
    n = node(m, "Clip", "clip", 1, (const char *[]){"u"}, 1, (const char *[]){"out0"});
    attr_f(n, "min", -0.5f);
    attr_f(n, "max", 0.5f);
  }
  init_f(m, "scales", 1, (int64_t[]){4}, (float[]){1, 1, 2, 2}, 4);
  if (opset >= 11) {
    init_f(m, "roi", 1, (int64_t[]){0}, NULL, 0);
    n = node(m, "Resize", "resize", 3, (const char *[]){"x", opset >= 13 ? "" : "roi", "scales"}, 1, (const char *[]){"out1"});
    attr_s(n, "mode", "nearest");
    attr_s(n, "coordinate_transformation_mode", "asymmetric");
    attr_s(n, "nearest_mode", "floor");
  } else {
    node(m, "Upsample", "resize", 2, (const char *[]){"x", "scales"}, 1, (const char *[]){"out1"});
  }
  m->out[m->nout++] = vi("out0", 1, 4, (int64_t[]){1, 1, 2, 2}, NULL);
  m->out[m->nout++] = vi("out1", 1, 4, (int64_t[]){1, 2, 4, 8}, NULL);
}

static void test_opset_forms(void) {
  float x[16];
  for (int i = 0; i < 16; i++) x[i] = (float)(i - 8) / 8.0f;
  for (int64_t opset = 9; opset <= 17; opset++) {
    mb m;
    build_forms(&m, opset);
    ob_graph *g = NULL;
    ob_status st = import(&m, &g);
    CHECK_MSG(st == OB_OK, "opset %lld: %s", (long long)opset, ob_ctx_errmsg(ctx));
    if (st) continue;
    float *o0 = run1(g, x, 0), *o1 = run1(g, x, 1);
    /* out0 = clip(x[0, c, h, 0]) over c, h */
    for (int c = 0; c < 2; c++)
      for (int h = 0; h < 2; h++) {
        float v = x[(c * 2 + h) * 4];
        v = v < -0.5f ? -0.5f : v > 0.5f ? 0.5f : v;
        CHECK(o0[c * 2 + h] == v);
      }
    /* out1 = nearest 2x upsampling */
    bool ok = true;
    for (int c = 0; c < 2; c++)
      for (int y = 0; y < 4; y++)
        for (int xx = 0; xx < 8; xx++) ok &= o1[(c * 4 + y) * 8 + xx] == x[(c * 2 + y / 2) * 4 + xx / 2];
    CHECK_MSG(ok, "opset %lld: resize", (long long)opset);
    free(o0);
    free(o1);
    ob_graph_free(g);
  }
}

/* Pad (opset 13 and the attribute form of opset 10) before an average
 * pool, as torch.onnx.export writes inception's pools: the pass folds it
 * into the pool without changing the numbers. */
static void test_pad(void) {
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int64_t opset = 10; opset <= 13; opset += 3) {
    mb m;
    memset(&m, 0, sizeof m);
    m.opset = opset;
    m.in[m.nin++] = vi("x", 1, 4, (int64_t[]){1, 1, 3, 3}, NULL);
    Onnx__NodeProto *n;
    if (opset >= 11) {
      init_i(&m, "pads", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1});
      n = node(&m, "Pad", "pad", 2, (const char *[]){"x", "pads"}, 1, (const char *[]){"p"});
    } else {
      n = node(&m, "Pad", "pad", 1, (const char *[]){"x"}, 1, (const char *[]){"p"});
      attr_ints(n, "pads", 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1});
    }
    n = node(&m, "AveragePool", "pool", 1, (const char *[]){"p"}, 1, (const char *[]){"y"});
    attr_ints(n, "kernel_shape", 2, (int64_t[]){3, 3});
    m.out[m.nout++] = vi("y", 1, 4, (int64_t[]){1, 1, 3, 3}, NULL);
    ob_graph *g = NULL;
    CHECK_MSG(import(&m, &g) == OB_OK, "%s", ob_ctx_errmsg(ctx));
    if (!g) continue;
    float *a = run1(g, x, 0);
    CHECK(fabsf(a[0] - 12.0f / 9) < 1e-6f && fabsf(a[4] - 5.0f) < 1e-6f);
    ob_graph_pass_stats ps;
    CHECK(ob_graph_optimize(ctx, g, 8, &ps) == OB_OK);
    int pads = 0;
    for (int i = 0; i < ob_graph_node_count(g); i++) pads += ob_graph_node_op(g, i) == OB_GOP_PAD;
    CHECK(pads == 0);
    float *b = run1(g, x, 0);
    for (int i = 0; i < 9; i++) CHECK(fabsf(a[i] - b[i]) < 1e-6f);
    free(a);
    free(b);
    ob_graph_free(g);
  }
}

/* ---- bad files ------------------------------------------------------------------------- */
static void simple_add(mb *m, const int64_t *bdims) {
  memset(m, 0, sizeof *m);
  m->opset = 13;
  m->in[m->nin++] = vi("x", 1, 2, (int64_t[]){2, 3}, NULL);
  float w[20] = {0};
  init_f(m, "w", 2, bdims, w, (size_t)(bdims[0] * bdims[1]));
  node(m, "Add", "the_add", 2, (const char *[]){"x", "w"}, 1, (const char *[]){"y"});
  m->out[m->nout++] = vi("y", 1, 2, (int64_t[]){2, 3}, NULL);
}

static void test_bad_files(void) {
  mb m;
  ob_graph *g = NULL;
  /* inconsistent shapes, named by node */
  simple_add(&m, (int64_t[]){4, 5});
  CHECK(import(&m, &g) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "the_add") && strstr(ob_ctx_errmsg(ctx), "broadcast"));
  /* the file declares an output shape that the graph does not compute */
  simple_add(&m, (int64_t[]){1, 3});
  m.out[0] = vi("y", 1, 2, (int64_t[]){3, 2}, NULL);
  CHECK(import(&m, &g) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "inconsistent") && strstr(ob_ctx_errmsg(ctx), "the_add"));
  /* the good version imports */
  simple_add(&m, (int64_t[]){1, 3});
  CHECK(import(&m, &g) == OB_OK);
  ob_graph_free(g);
  /* unsupported operator, named with its node */
  simple_add(&m, (int64_t[]){1, 3});
  m.nodes[0]->op_type = S("NonMaxSuppression");
  CHECK(import(&m, &g) == OB_ERR_UNSUPPORTED);
  CHECK(strstr(ob_ctx_errmsg(ctx), "NonMaxSuppression") && strstr(ob_ctx_errmsg(ctx), "the_add"));
  /* another domain */
  simple_add(&m, (int64_t[]){1, 3});
  m.nodes[0]->domain = S("com.microsoft");
  CHECK(import(&m, &g) == OB_ERR_UNSUPPORTED);
  /* an input nobody defines */
  simple_add(&m, (int64_t[]){1, 3});
  m.nodes[0]->input[1] = S("ghost");
  CHECK(import(&m, &g) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "ghost") != NULL);
  /* raw data shorter than the shape */
  simple_add(&m, (int64_t[]){1, 3});
  m.inits[0]->raw_data.len = 8;
  CHECK(import(&m, &g) == OB_ERR_PARSE);
  CHECK(strstr(ob_ctx_errmsg(ctx), "'w'") != NULL);
  /* opset out of range */
  simple_add(&m, (int64_t[]){1, 3});
  m.opset = 5;
  CHECK(import(&m, &g) == OB_ERR_UNSUPPORTED);
  CHECK(strstr(ob_ctx_errmsg(ctx), "opset 5") != NULL);
  /* a dynamic dimension: the batch takes --batchsize, others need --seqlen */
  simple_add(&m, (int64_t[]){1, 3});
  m.in[0] = vi("x", 1, 2, (int64_t[]){-1, -1}, "seq");
  m.out[0] = vi("y", 1, 2, (int64_t[]){-1, -1}, "seq");
  size_t len;
  uint8_t *buf = pack(&m, &len);
  CHECK(ob_onnx_import_buffer(ctx, buf, len, 2, 0, &g) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "'seq'") && strstr(ob_ctx_errmsg(ctx), "--seqlen"));
  CHECK(ob_onnx_import_buffer(ctx, buf, len, 2, 3, &g) == OB_OK);
  if (g) {
    CHECK(ob_graph_tensor_dims(g, ob_graph_input(g, 0))[0] == 2 && ob_graph_tensor_dims(g, ob_graph_input(g, 0))[1] == 3);
    ob_graph_free(g);
  }
  /* truncated files: every prefix of a valid model is refused or imports a
   * smaller model; none crashes (the fuzz target does this at scale) */
  int refused = 0;
  for (size_t cut = 0; cut < len; cut += 7) {
    g = NULL;
    ob_status st = ob_onnx_import_buffer(ctx, buf, cut, 2, 3, &g);
    refused += st != OB_OK;
    if (st) CHECK(*ob_ctx_errmsg(ctx) != 0);
    ob_graph_free(g);
  }
  CHECK(refused > 0);
  free(buf);
  /* garbage */
  uint8_t junk[64];
  for (int i = 0; i < 64; i++) junk[i] = (uint8_t)(i * 37 + 11);
  CHECK(ob_onnx_import_buffer(ctx, junk, sizeof junk, 1, 0, &g) == OB_ERR_PARSE);
  CHECK(ob_onnx_import_file(ctx, "/nonexistent/model.onnx", 1, 0, &g) == OB_ERR_IO);
  CHECK(strstr(ob_ctx_errmsg(ctx), "/nonexistent/model.onnx") != NULL);
}

/* ---- external data ------------------------------------------------------------------------ */
static void external(mb *m, const char *loc) {
  memset(m, 0, sizeof *m);
  m->opset = 17;
  m->in[m->nin++] = vi("x", 1, 1, (int64_t[]){4}, NULL);
  Onnx__TensorProto *t = A(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = S("w");
  t->has_data_type = 1;
  t->data_type = 1;
  t->n_dims = 1;
  t->dims = A(sizeof(int64_t));
  t->dims[0] = 4;
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t->n_external_data = 2;
  t->external_data = A(2 * sizeof(void *));
  for (int i = 0; i < 2; i++) {
    t->external_data[i] = A(sizeof(Onnx__StringStringEntryProto));
    onnx__string_string_entry_proto__init(t->external_data[i]);
  }
  t->external_data[0]->key = S("location");
  t->external_data[0]->value = S(loc);
  t->external_data[1]->key = S("offset");
  t->external_data[1]->value = S("8");
  m->inits[m->ni++] = t;
  node(m, "Mul", "mul", 2, (const char *[]){"x", "w"}, 1, (const char *[]){"y"});
  m->out[m->nout++] = vi("y", 1, 1, (int64_t[]){4}, NULL);
}

static void test_external_data(void) {
  char dir[] = "/tmp/ob_onnx_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  char path[512], bin[512];
  snprintf(bin, sizeof bin, "%s/weights.bin", dir);
  FILE *f = fopen(bin, "wb");
  float w[6] = {99, 99, 1, 2, 3, 4}; /* 8 bytes of something else first */
  fwrite(w, 4, 6, f);
  fclose(f);
  mb m;
  external(&m, "weights.bin");
  size_t len;
  uint8_t *buf = pack(&m, &len);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  f = fopen(path, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
  ob_graph *g = NULL;
  CHECK_MSG(ob_onnx_import_file(ctx, path, 1, 0, &g) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (g) {
    float x[4] = {1, 1, 1, 1};
    float *y = run1(g, x, 0);
    CHECK(y[0] == 1 && y[1] == 2 && y[2] == 3 && y[3] == 4);
    free(y);
    ob_graph_free(g);
  }
  /* from memory there is no folder to look in */
  CHECK(ob_onnx_import_buffer(ctx, buf, len, 1, 0, &g) == OB_ERR_UNSUPPORTED);
  free(buf);
  /* outside the model's folder, or missing, or too short */
  const char *bad[] = {"../weights.bin", "/etc/passwd", "missing.bin"};
  ob_status want[] = {OB_ERR_PARSE, OB_ERR_PARSE, OB_ERR_IO};
  for (int i = 0; i < 3; i++) {
    external(&m, bad[i]);
    buf = pack(&m, &len);
    f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
    CHECK_MSG(ob_onnx_import_file(ctx, path, 1, 0, &g) == want[i], "%s: %s", bad[i], ob_ctx_errmsg(ctx));
  }
  f = fopen(bin, "wb");
  fwrite(w, 4, 3, f);
  fclose(f);
  external(&m, "weights.bin");
  buf = pack(&m, &len);
  f = fopen(path, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
  free(buf);
  CHECK(ob_onnx_import_file(ctx, path, 1, 0, &g) == OB_ERR_PARSE);
  CHECK(strstr(ob_ctx_errmsg(ctx), "too short") != NULL);
  unlink(bin);
  unlink(path);
  rmdir(dir);
}

/* ---- round trips ------------------------------------------------------------------------------ */
static ob_graph *load(const char *source, const char *name, int64_t size, int64_t seqlen, int64_t hidden, bool zero) {
  ob_model_opts o = ob_model_opts_default();
  o.zero_weights = zero;
  o.source = source;
  o.name = name;
  o.input_size = size;
  o.seqlen = seqlen;
  o.hidden = hidden;
  ob_graph *g = NULL;
  CHECK_MSG(ob_model_load(ctx, &o, &g) == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  return g;
}

static float **run_all(ob_graph *g) {
  int ni = ob_graph_input_count(g), no = ob_graph_output_count(g);
  void *in[8];
  float **out = calloc((size_t)no, sizeof(float *));
  for (int i = 0; i < ni; i++) {
    in[i] = malloc((size_t)ob_graph_tensor_numel(g, ob_graph_input(g, i)) * 8);
    ob_graph_fill_input(g, i, 3, in[i]);
  }
  for (int i = 0; i < no; i++) out[i] = malloc((size_t)ob_graph_tensor_numel(g, ob_graph_output(g, i)) * 4);
  CHECK_MSG(ob_graph_run_reference(ctx, g, (const void *const *)in, (void *const *)out) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  for (int i = 0; i < ni; i++) free(in[i]);
  return out;
}

static void test_roundtrip(void) {
  /* the models over 30 M parameters go round with zero weights (structure
   * and bytes still compared; their numbers are checked in test_graph) */
  static const struct {
    const char *source, *name;
    int64_t size, seqlen, hidden;
    bool zero;
  } k[] = {
      {"simple", "simple", 0, 0, 0, false},       {"local", "resnet-18", 32, 0, 0, false},
      {"local", "resnet-50", 32, 0, 0, false},    {"local", "vgg-16", 32, 0, 0, true},
      {"local", "mobilenet-v2", 32, 0, 0, false}, {"local", "squeezenet-1.1", 64, 0, 0, false},
      {"local", "inception-v3", 75, 0, 0, false}, {"local", "yolov5s", 64, 0, 0, false},
      {"local", "randwire", 32, 0, 0, true},      {"local", "nasnet-a", 35, 0, 0, true},
      {"local", "lstm", 0, 3, 16, false},         {"local", "bert-base", 0, 2, 0, true},
      {"transformers", "bert-base-uncased", 0, 2, 0, true},
      {"transformers", "gpt2", 0, 2, 0, true},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob_graph *a = load(k[i].source, k[i].name, k[i].size, k[i].seqlen, k[i].hidden, k[i].zero);
    if (!a) continue;
    void *buf = NULL;
    size_t len = 0;
    CHECK_MSG(ob_onnx_export_buffer(ctx, a, &buf, &len) == OB_OK, "%s: %s", k[i].name, ob_ctx_errmsg(ctx));
    ob_graph *b = NULL;
    CHECK_MSG(ob_onnx_import_buffer(ctx, buf, len, 1, 0, &b) == OB_OK, "%s: %s", k[i].name, ob_ctx_errmsg(ctx));
    free(buf);
    if (!b) {
      ob_graph_free(a);
      continue;
    }
    ob_str pa = {0}, pb = {0};
    ob_graph_print(a, &pa);
    ob_graph_print(b, &pb);
    CHECK_MSG(!strcmp(pa.data, pb.data), "%s: the imported graph prints differently", k[i].name);
    ob_str_free(&pa);
    ob_str_free(&pb);
    CHECK(ob_graph_params(a) == ob_graph_params(b));
    CHECK(ob_graph_macs(a) == ob_graph_macs(b));
    /* constants byte for byte */
    bool same = true;
    for (int t = 0; t < ob_graph_tensor_count(a); t++) {
      if (ob_graph_tensor_kind(a, t) != OB_GT_CONST) continue;
      int u = ob_graph_tensor_find(b, ob_graph_tensor_name(a, t));
      if (u < 0) continue; /* unused constants are not exported */
      size_t bytes = (size_t)ob_graph_tensor_numel(a, t) * ob_dtype_size(ob_graph_tensor_dtype(a, t));
      same &= ob_graph_tensor_dtype(a, t) == ob_graph_tensor_dtype(b, u) &&
              !memcmp(ob_graph_tensor_data(a, t), ob_graph_tensor_data(b, u), bytes);
    }
    CHECK_MSG(same, "%s: constants differ after the round trip", k[i].name);
    /* optimized graphs export their internal operators as ONNX ones (the
     * models under 30 M parameters, to keep the suite fast) */
    if (ob_graph_params(a) > 30000000) {
      ob_graph_free(a);
      ob_graph_free(b);
      continue;
    }
    CHECK(ob_graph_optimize(ctx, a, 16, NULL) == OB_OK);
    CHECK_MSG(ob_onnx_export_buffer(ctx, a, &buf, &len) == OB_OK, "%s: %s", k[i].name, ob_ctx_errmsg(ctx));
    ob_graph *c = NULL;
    CHECK_MSG(ob_onnx_import_buffer(ctx, buf, len, 1, 0, &c) == OB_OK, "%s optimized: %s", k[i].name, ob_ctx_errmsg(ctx));
    free(buf);
    if (c) {
      float **ob = run_all(b), **oc = run_all(c);
      for (int o = 0; o < ob_graph_output_count(b); o++) {
        int64_t n = ob_graph_tensor_numel(b, ob_graph_output(b, o));
        double d = 0, mx = 0;
        for (int64_t q = 0; q < n; q++) d = fmax(d, fabs((double)ob[o][q] - oc[o][q])), mx = fmax(mx, fabs((double)ob[o][q]));
        CHECK_MSG(d <= 1e-4 * mx, "%s output %d: %.3g of %.3g", k[i].name, o, d, mx);
        free(ob[o]);
        free(oc[o]);
      }
      free(ob);
      free(oc);
      ob_graph_free(c);
    }
    ob_graph_free(a);
    ob_graph_free(b);
  }
}

static void test_export_file(void) {
  ob_graph *g = load("simple", "simple", 0, 0, 0, false);
  if (!g) return;
  char path[] = "/tmp/ob_export_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  CHECK(ob_onnx_export_file(ctx, g, path) == OB_OK);
  ob_graph *h = NULL;
  CHECK(ob_onnx_import_file(ctx, path, 1, 0, &h) == OB_OK);
  ob_graph_free(h);
  /* a truncated file is refused with its name in the message */
  FILE *f = fopen(path, "r+b");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  CHECK(truncate(path, n / 2) == 0);
  CHECK(ob_onnx_import_file(ctx, path, 1, 0, &h) != OB_OK);
  CHECK(strstr(ob_ctx_errmsg(ctx), path) != NULL);
  unlink(path);
  CHECK(ob_onnx_export_file(ctx, g, "/nonexistent/dir/m.onnx") == OB_ERR_IO);
  ob_graph_free(g);
}

/* The fuzz corpus (seeds and the crashes fuzz_onnx found) goes through
 * what the fuzz target does: import; optimize and export when small. */
static void test_corpus(void) {
  DIR *d = opendir(OB_FUZZ_CORPUS);
  CHECK(d != NULL);
  if (!d) return;
  int files = 0, imported = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", OB_FUZZ_CORPUS, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    files++;
    ob_graph *g = NULL;
    if (ob_onnx_import_buffer(ctx, buf, len, 1, 3, &g) != OB_OK) {
      CHECK_MSG(*ob_ctx_errmsg(ctx), "%s: refused without a message", e->d_name);
      continue;
    }
    imported++;
    bool small = ob_graph_macs(g) < 1e6;
    for (int t = 0; t < ob_graph_tensor_count(g) && small; t++) small = ob_graph_tensor_numel(g, t) <= 1 << 16;
    if (small && ob_graph_optimize(ctx, g, 8, NULL) == OB_OK) {
      void *out = NULL;
      size_t n = 0;
      if (ob_onnx_export_buffer(ctx, g, &out, &n) == OB_OK) {
        ob_graph *h = NULL;
        CHECK_MSG(ob_onnx_import_buffer(ctx, out, n, 1, 3, &h) == OB_OK, "%s: re-import: %s", e->d_name, ob_ctx_errmsg(ctx));
        ob_graph_free(h);
      }
      free(out);
    }
    ob_graph_free(g);
  }
  closedir(d);
  CHECK(files >= 4 && imported >= 1);
}

/* OB_WRITE_CORPUS=DIR: writes the handmade models as fuzzing seeds. */
static void write_corpus(const char *dir) {
  for (int64_t opset = 9; opset <= 17; opset += 2) {
    mb m;
    build_forms(&m, opset);
    size_t len;
    uint8_t *buf = pack(&m, &len);
    char path[1024];
    snprintf(path, sizeof path, "%s/forms_opset%lld.onnx", dir, (long long)opset);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(buf, 1, len, f), fclose(f);
    free(buf);
  }
  mb m;
  simple_add(&m, (int64_t[]){1, 3});
  size_t len;
  uint8_t *buf = pack(&m, &len);
  char path[1024];
  snprintf(path, sizeof path, "%s/add_broadcast.onnx", dir);
  FILE *f = fopen(path, "wb");
  if (f) fwrite(buf, 1, len, f), fclose(f);
  free(buf);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  if (getenv("OB_WRITE_CORPUS")) {
    write_corpus(getenv("OB_WRITE_CORPUS"));
    mb_free_all();
    ob_ctx_free(ctx);
    return 0;
  }
  test_corpus();
  test_opset_forms();
  test_pad();
  test_bad_files();
  test_external_data();
  test_export_file();
  test_roundtrip();
  mb_free_all();
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
