/* onnx_import.c: ONNX model -> graph, with protobuf-c and the schema of
 * Debian's libonnx-dev (compiled at build time). Opsets 7 to 18 of the
 * default domain are read (11 to 17 tested); operators that moved an
 * attribute to an input across opsets (Clip, Split, Slice, Squeeze,
 * Unsqueeze, Resize/Upsample, ReduceMean, Softmax's 2-D coercion) are
 * normalized to opset 17's form. Every node is shape-inferred as it is
 * added, so errors name the node that is inconsistent. Files are untrusted:
 * sizes are bounded and checked before anything is allocated, and external
 * data must lie beside the model. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "graph/graph_impl.h"
#include "onnx.pb-c.h"

/* protobuf-c rejects messages it cannot parse; these bound what a parsed one
 * may ask of us. */
#define MAX_FILE_BYTES (INT64_C(4) << 30)
#define MAX_NODES 200000
#define MAX_ATTR_VALUES (1 << 20)

typedef struct imp {
  ob_ctx *ctx;
  ob_graph *g;
  const char *dir; /* folder of external data; NULL: refused */
  const char *file;
  int64_t opset, batch, seqlen;
  int64_t const_bytes;
} imp;

static ob_status perr(imp *m, const char *fmt, const char *what) {
  return ob_fail(m->ctx, OB_ERR_PARSE, "%s: %s%s", m->file, fmt, what ? what : "");
}

/* Names come from the file: printable and bounded, or refused. */
static bool name_ok(const char *s) {
  if (!s) return false;
  size_t n = 0;
  while (n <= 4096 && s[n]) n++;
  if (n > 4096) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20) return false;
  return true;
}

/* ---- tensors ------------------------------------------------------------------ */
/* Reads `len` bytes at `offset` of external file `loc` (relative, inside the
 * model's folder) into buf. */
static ob_status read_external(imp *m, const char *tname, const char *loc, int64_t offset, size_t len, void *buf) {
  if (!m->dir)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: tensor '%s' keeps its data in external file '%s', which needs a model file",
                   m->file, tname, loc);
  if (!name_ok(loc) || !*loc || loc[0] == '/' || strstr(loc, ".."))
    return ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s': external data location '%s' must be a relative path inside the "
                   "model's folder", m->file, tname, name_ok(loc) ? loc : "?");
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", m->dir, loc);
  FILE *f = fopen(path, "rb");
  if (!f) return ob_fail(m->ctx, OB_ERR_IO, "%s: tensor '%s': cannot open external data '%s': %s", m->file, tname, path, strerror(errno));
  ob_status st = OB_OK;
  struct stat sb;
  if (fstat(fileno(f), &sb) || offset < 0 || (uint64_t)offset > (uint64_t)sb.st_size ||
      (uint64_t)sb.st_size - (uint64_t)offset < len)
    st = ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s': external file '%s' is too short for %zu bytes at offset %lld", m->file,
                 tname, path, len, (long long)offset);
  else if (fseeko(f, (off_t)offset, SEEK_SET) || fread(buf, 1, len, f) != len)
    st = ob_fail(m->ctx, OB_ERR_IO, "%s: tensor '%s': cannot read external data '%s'", m->file, tname, path);
  fclose(f);
  return st;
}

static ob_status tensor_shape(imp *m, const Onnx__TensorProto *t, const char *tname, int *nd, int64_t *dims, int64_t *numel) {
  if (t->n_dims > OB_GRAPH_MAX_DIMS)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: tensor '%s' has %zu dimensions (at most %d)", m->file, tname, t->n_dims,
                   OB_GRAPH_MAX_DIMS);
  int64_t n = 1;
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 0) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s' has a negative dimension", m->file, tname);
    if (__builtin_mul_overflow(n, t->dims[i], &n) || n > OB_GRAPH_MAX_NUMEL)
      return ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s' is too large", m->file, tname);
    dims[i] = t->dims[i];
  }
  *nd = (int)t->n_dims;
  *numel = n;
  return OB_OK;
}

/* A TensorProto as a graph constant named `name`. */
static ob_status add_tensor(imp *m, const Onnx__TensorProto *t, const char *name, int *id) {
  const char *tname = name;
  if (!name_ok(tname) || !*tname) return perr(m, "a tensor has no usable name", NULL);
  int nd = 0;
  int64_t dims[OB_GRAPH_MAX_DIMS], numel = 0;
  ob_status st = tensor_shape(m, t, tname, &nd, dims, &numel);
  if (st) return st;
  bool ok;
  ob_dtype dt = ob_onnx_dtype(t->data_type, &ok);
  if (!ok)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: tensor '%s' has ONNX data type %d (float, double, int32, int64 and bool "
                   "are supported)", m->file, tname, (int)t->data_type);
  /* element size in the file */
  size_t fes = t->data_type == 11 || t->data_type == 7 ? 8 : t->data_type == 9 ? 1 : 4;
  size_t need = (size_t)numel * fes, out_bytes = (size_t)numel * ob_dtype_size(dt);
  if (__builtin_add_overflow(m->const_bytes, (int64_t)out_bytes, &m->const_bytes) || m->const_bytes > OB_GRAPH_MAX_CONST_BYTES)
    return ob_fail(m->ctx, OB_ERR_PARSE, "%s: constants exceed %lld bytes", m->file, (long long)OB_GRAPH_MAX_CONST_BYTES);
  void *raw = NULL;
  const void *src = NULL;
  bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (external) {
    const char *loc = NULL;
    int64_t off = 0, len = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
      const Onnx__StringStringEntryProto *e = t->external_data[i];
      if (!e->key || !e->value) continue;
      char *end;
      if (!strcmp(e->key, "location")) loc = e->value;
      else if (!strcmp(e->key, "offset")) off = strtoll(e->value, &end, 10);
      else if (!strcmp(e->key, "length")) len = strtoll(e->value, &end, 10);
    }
    if (!loc) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s' is external but names no location", m->file, tname);
    if (len >= 0 && (uint64_t)len != need)
      return ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s': external length %lld, expected %zu bytes", m->file, tname,
                     (long long)len, need);
    raw = malloc(need ? need : 1);
    if (!raw) return ob_fail(m->ctx, OB_ERR_NOMEM, "%s: out of memory for tensor '%s'", m->file, tname);
    if ((st = read_external(m, tname, loc, off, need, raw))) {
      free(raw);
      return st;
    }
    src = raw;
  } else if (t->has_raw_data) {
    if (t->raw_data.len != need)
      return ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s' holds %zu bytes of raw data, its shape needs %zu (truncated?)",
                     m->file, tname, t->raw_data.len, need);
    src = t->raw_data.data;
  } else {
    size_t have = t->data_type == 1 ? t->n_float_data : t->data_type == 11 ? t->n_double_data
                  : t->data_type == 7 ? t->n_int64_data : t->n_int32_data;
    if (have != (size_t)numel)
      return ob_fail(m->ctx, OB_ERR_PARSE, "%s: tensor '%s' holds %zu values, its shape needs %lld", m->file, tname, have,
                     (long long)numel);
  }
  bool param = dt == OB_F32 && nd > 0 && !(t->doc_string && !strcmp(t->doc_string, OB_ONNX_BUFFER_DOC));
  st = ob_graph_add_const(m->g, tname, dt, nd, dims, NULL, param, id);
  if (st) {
    free(raw);
    return st;
  }
  void *dst = m->g->t[*id]->data;
  /* raw bytes already in the graph's type (float, int64): one copy rather
   * than a switch per element (vgg-16's 138 M weights) */
  if (src && (t->data_type == 1 || t->data_type == 7)) {
    if (need) memcpy(dst, src, need);
    free(raw);
    return OB_OK;
  }
  for (int64_t i = 0; i < numel; i++) {
    switch (t->data_type) {
    case 1: ((float *)dst)[i] = src ? ((const float *)src)[i] : t->float_data[i]; break;
    case 11: ((float *)dst)[i] = (float)(src ? ((const double *)src)[i] : t->double_data[i]); break;
    case 7: ((int64_t *)dst)[i] = src ? ((const int64_t *)src)[i] : t->int64_data[i]; break;
    case 6: ((int64_t *)dst)[i] = src ? ((const int32_t *)src)[i] : t->int32_data[i]; break;
    case 9: ((uint8_t *)dst)[i] = (src ? ((const uint8_t *)src)[i] : (uint8_t)t->int32_data[i]) != 0; break;
    default: break;
    }
  }
  free(raw);
  return OB_OK;
}

/* ---- graph inputs ------------------------------------------------------------------ */
static ob_status add_input(imp *m, const Onnx__ValueInfoProto *vi) {
  const char *name = vi->name;
  if (!name_ok(name) || !*name) return perr(m, "a graph input has no usable name", NULL);
  if (ob_graph_tensor_find(m->g, name) >= 0) return OB_OK; /* an initializer (IR < 4 lists them as inputs) */
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: input '%s' is not a tensor", m->file, name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  bool ok;
  ob_dtype dt = ob_onnx_dtype(tt->elem_type, &ok);
  if (!ok) return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: input '%s' has ONNX data type %d", m->file, name, (int)tt->elem_type);
  if (!tt->shape) return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: input '%s' has no shape", m->file, name);
  if (tt->shape->n_dim > OB_GRAPH_MAX_DIMS)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: input '%s' has %zu dimensions", m->file, name, tt->shape->n_dim);
  int64_t dims[OB_GRAPH_MAX_DIMS];
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0) {
      dims[i] = d->dim_value;
      continue;
    }
    const char *param = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && name_ok(d->dim_param)
                            ? d->dim_param : "?";
    if (i == 0) dims[i] = m->batch;
    else if (m->seqlen > 0) dims[i] = m->seqlen;
    else
      return ob_fail(m->ctx, OB_ERR_INVALID_ARG, "%s: input '%s' has a dynamic dimension '%s' at position %zu: give its "
                     "size with --seqlen", m->file, name, param, i);
  }
  int id;
  return ob_graph_add_input(m->g, name, dt, (int)tt->shape->n_dim, dims, &id);
}

/* ---- nodes ---------------------------------------------------------------------------- */
static int find_in(imp *m, const char *name) {
  if (!name || !*name) return -1;
  return ob_graph_tensor_find(m->g, name);
}

static ob_status copy_attr(imp *m, int node, const Onnx__AttributeProto *a, const char *nname, const char *op) {
  if (!name_ok(a->name) || !*a->name) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (%s): an attribute has no name", m->file, nname, op);
  switch (a->type) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: ob_graph_set_attr_i(m->g, node, a->name, a->i); break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: ob_graph_set_attr_f(m->g, node, a->name, a->f); break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
    char buf[256];
    size_t n = a->s.len < sizeof buf - 1 ? a->s.len : sizeof buf - 1;
    if (n && !a->s.data) n = 0;
    memcpy(buf, a->s.data ? (const char *)a->s.data : "", n);
    buf[n] = 0;
    if (!name_ok(buf)) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (%s): attribute '%s' is not text", m->file, nname, op, a->name);
    ob_graph_set_attr_s(m->g, node, a->name, buf);
    break;
  }
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    if (a->n_ints > MAX_ATTR_VALUES) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s': attribute '%s' is too long", m->file, nname, a->name);
    ob_graph_set_attr_ints(m->g, node, a->name, (int)a->n_ints, a->ints);
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
    if (a->n_floats > MAX_ATTR_VALUES) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s': attribute '%s' is too long", m->file, nname, a->name);
    ob_graph_set_attr_floats(m->g, node, a->name, (int)a->n_floats, a->floats);
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: break; /* Constant / ConstantOfShape read it themselves */
  default:
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' (%s): attribute '%s' has a type opbench does not read (%d)",
                   m->file, nname, op, a->name, (int)a->type);
  }
  return OB_OK;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i] && n->attribute[i]->name && !strcmp(n->attribute[i]->name, name)) return n->attribute[i];
  return NULL;
}

/* A fresh int64 constant for an attribute that became an input. */
static int const_ints(imp *m, const char *base, int n, const int64_t *v) {
  int id = ob_graph_new_tensor(m->g, base);
  gtensor *t = m->g->t[id];
  int64_t d = n;
  ob_gt_set(t, OB_I64, 1, &d);
  ob_graph_make_const(m->g, id, ob_graph_dup(m->g, v, sizeof(int64_t) * (size_t)n));
  return id;
}

static int const_float(imp *m, const char *base, int nd, const int64_t *dims, const float *v) {
  int id = ob_graph_new_tensor(m->g, base);
  gtensor *t = m->g->t[id];
  ob_gt_set(t, OB_F32, nd, dims);
  ob_graph_make_const(m->g, id, ob_graph_dup(m->g, v, ob_gt_bytes(t)));
  return id;
}

/* Constant: its value attribute becomes a graph constant named after the output. */
static ob_status import_constant(imp *m, const Onnx__NodeProto *n, const char *nname) {
  if (n->n_output < 1 || !name_ok(n->output[0]) || !*n->output[0])
    return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (Constant) has no output", m->file, nname);
  const char *out = n->output[0];
  if (ob_graph_tensor_find(m->g, out) >= 0)
    return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (Constant): output '%s' is defined twice", m->file, nname, out);
  const Onnx__AttributeProto *a;
  int id;
  if ((a = attr(n, "value")) && a->t) return add_tensor(m, a->t, out, &id);
  if ((a = attr(n, "value_float"))) return ob_graph_add_const(m->g, out, OB_F32, 0, NULL, &a->f, false, &id);
  if ((a = attr(n, "value_int"))) return ob_graph_add_const(m->g, out, OB_I64, 0, NULL, &a->i, false, &id);
  if ((a = attr(n, "value_floats"))) {
    int64_t d = (int64_t)a->n_floats;
    if (d > MAX_ATTR_VALUES) return perr(m, "a Constant's value_floats is too long", NULL);
    return ob_graph_add_const(m->g, out, OB_F32, 1, &d, a->floats, false, &id);
  }
  if ((a = attr(n, "value_ints"))) {
    int64_t d = (int64_t)a->n_ints;
    if (d > MAX_ATTR_VALUES) return perr(m, "a Constant's value_ints is too long", NULL);
    return ob_graph_add_const(m->g, out, OB_I64, 1, &d, a->ints, false, &id);
  }
  return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' (Constant) has no value opbench reads (value, value_float(s), "
                 "value_int(s))", m->file, nname);
}

/* What an ONNX operator becomes in the IR (the IR kind; aliases included). */
static ob_gop map_op(const char *op) {
  if (!strcmp(op, "Dropout")) return OB_GOP_IDENTITY;
  if (!strcmp(op, "Upsample")) return OB_GOP_RESIZE;
  ob_gop k = ob_gop_find(op);
  if (k == OB_GOP_DENSE || k == OB_GOP_GELU) return OB_GOP_COUNT; /* internal names are not ONNX operators */
  return k;
}

static ob_status import_node(imp *m, const Onnx__NodeProto *n, int index) {
  char defname[64];
  snprintf(defname, sizeof defname, "node_%d", index);
  const char *nname = n->name && *n->name && name_ok(n->name) ? n->name : defname;
  const char *op = n->op_type && name_ok(n->op_type) ? n->op_type : "";
  if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' uses operator '%s' of domain '%s', which opbench does not support",
                   m->file, nname, op, name_ok(n->domain) ? n->domain : "?");
  if (!strcmp(op, "Constant")) return import_constant(m, n, nname);
  ob_gop k = map_op(op);
  if (k == OB_GOP_COUNT)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' uses operator '%s', which opbench does not support", m->file,
                   nname, *op ? op : "(none)");
  const gop_def *d = ob_gop_def(k);
  if (n->n_input > 1024) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' has too many inputs", m->file, nname);
  int in[1024 + 4];
  int nin = (int)n->n_input;
  for (int i = 0; i < nin; i++) {
    if (!n->input[i] || !name_ok(n->input[i])) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' has a bad input name", m->file, nname);
    in[i] = find_in(m, n->input[i]);
    if (*n->input[i] && in[i] < 0)
      return ob_fail(m->ctx, OB_ERR_INVALID_ARG, "%s: node '%s' (%s): input '%s' is not defined before it is used", m->file,
                     nname, op, n->input[i]);
  }
  while (nin > 0 && in[nin - 1] < 0) nin--; /* trailing omitted optionals */
  /* opset differences: attributes that later opsets take as inputs */
  const Onnx__AttributeProto *a;
  char base[300];
  snprintf(base, sizeof base, "%.200s.%s", nname, "attr");
  if (k == OB_GOP_CLIP && m->opset < 11) {
    float lo = (a = attr(n, "min")) ? a->f : -3.4028234663852886e38f, hi = (a = attr(n, "max")) ? a->f : 3.4028234663852886e38f;
    in[1] = const_float(m, base, 0, NULL, &lo);
    in[2] = const_float(m, base, 0, NULL, &hi);
    nin = 3;
  }
  if (k == OB_GOP_SPLIT && m->opset < 13 && (a = attr(n, "split"))) {
    if (a->n_ints > 16) return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' splits into more than 16", m->file, nname);
    in[1] = const_ints(m, base, (int)a->n_ints, a->ints);
    nin = 2;
  }
  if (k == OB_GOP_SLICE && m->opset < 10) {
    const Onnx__AttributeProto *s = attr(n, "starts"), *e = attr(n, "ends"), *x = attr(n, "axes");
    if (!s || !e || s->n_ints > OB_GRAPH_MAX_DIMS || e->n_ints > OB_GRAPH_MAX_DIMS)
      return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (Slice) needs starts and ends", m->file, nname);
    in[1] = const_ints(m, base, (int)s->n_ints, s->ints);
    in[2] = const_ints(m, base, (int)e->n_ints, e->ints);
    nin = 3;
    if (x && x->n_ints <= OB_GRAPH_MAX_DIMS) in[nin++] = const_ints(m, base, (int)x->n_ints, x->ints);
  }
  if (k == OB_GOP_PAD && m->opset < 11) {
    a = attr(n, "pads");
    if (!a || a->n_ints > 2 * OB_GRAPH_MAX_DIMS)
      return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (Pad) needs pads", m->file, nname);
    in[1] = const_ints(m, base, (int)a->n_ints, a->ints);
    const Onnx__AttributeProto *v = attr(n, "value");
    float fv = v ? v->f : 0.0f;
    in[2] = const_float(m, base, 0, NULL, &fv);
    nin = 3;
  }
  if ((k == OB_GOP_SQUEEZE || k == OB_GOP_UNSQUEEZE) && m->opset < 13 && (a = attr(n, "axes"))) {
    if (a->n_ints > OB_GRAPH_MAX_DIMS) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' has too many axes", m->file, nname);
    in[1] = const_ints(m, base, (int)a->n_ints, a->ints);
    nin = 2;
  }
  if (k == OB_GOP_RESIZE) {
    if (!strcmp(op, "Upsample") || m->opset < 11) {
      /* Upsample(X, scales) and Resize-10(X, scales): asymmetric, floor */
      int sc = nin > 1 ? in[1] : -1;
      if ((a = attr(n, "scales")) && a->n_floats <= OB_GRAPH_MAX_DIMS) {
        int64_t dn = (int64_t)a->n_floats;
        sc = const_float(m, base, 1, &dn, a->floats);
      }
      in[1] = -1;
      in[2] = sc;
      nin = 3;
    }
  }
  if (nin < d->min_in || nin > d->max_in)
    return ob_fail(m->ctx, OB_ERR_INVALID_ARG, "%s: node '%s' (%s): %d inputs (expected %d to %d)", m->file, nname, op, nin,
                   d->min_in, d->max_in);
  /* outputs: the IR keeps up to max_out; later optional ones must be unused */
  int nout = (int)n->n_output;
  if (nout < 1) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (%s) has no outputs", m->file, nname, op);
  if (nout > d->max_out) nout = d->max_out;
  const char *onames[16];
  char gen[16][300];
  for (int i = 0; i < nout; i++) {
    if (!n->output[i] || !name_ok(n->output[i])) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' has a bad output name", m->file, nname);
    if (*n->output[i]) onames[i] = n->output[i];
    else {
      snprintf(gen[i], sizeof gen[i], "%.200s:unused%d", nname, i);
      onames[i] = gen[i];
    }
  }
  int node = -1;
  const char *uname = ob_graph_unique_node_name(m->g, nname);
  ob_status st = ob_graph_add_node(m->g, k, uname, nin, in, nout, onames, NULL, &node);
  if (st) {
    ob_fail_prefix(m->ctx, "%s", m->file);
    return st;
  }
  for (size_t i = 0; i < n->n_attribute; i++) {
    if (!n->attribute[i]) continue;
    if ((st = copy_attr(m, node, n->attribute[i], nname, op))) return st;
  }
  gnode *gn = m->g->n[node];
  /* normalizations after the attributes are in */
  if (k == OB_GOP_RESIZE && (!strcmp(op, "Upsample") || m->opset < 11)) {
    ob_graph_set_attr_s(m->g, node, "coordinate_transformation_mode", "asymmetric");
    ob_graph_set_attr_s(m->g, node, "nearest_mode", "floor");
    ob_gnode_del_attr(gn, "scales"); /* moved to an input */
  }
  if (k == OB_GOP_CONSTANTOFSHAPE) {
    const Onnx__AttributeProto *v = attr(n, "value");
    double val = 0;
    int64_t dt = 1;
    if (v && v->t) {
      if (v->t->n_dims > 1 || (v->t->n_dims == 1 && v->t->dims[0] != 1))
        return ob_fail(m->ctx, OB_ERR_PARSE, "%s: node '%s' (ConstantOfShape): value must hold one element", m->file, nname);
      dt = v->t->data_type;
      const Onnx__TensorProto *t = v->t;
      if (t->has_raw_data && t->raw_data.len >= 8 && (dt == 7 || dt == 11))
        val = dt == 7 ? (double)*(const int64_t *)t->raw_data.data : *(const double *)t->raw_data.data;
      else if (t->has_raw_data && t->raw_data.len >= 4 && (dt == 1 || dt == 6))
        val = dt == 1 ? *(const float *)t->raw_data.data : *(const int32_t *)t->raw_data.data;
      else if (t->has_raw_data && t->raw_data.len >= 1 && dt == 9) val = t->raw_data.data[0] != 0;
      else if (t->n_float_data) val = t->float_data[0];
      else if (t->n_int64_data) val = (double)t->int64_data[0];
      else if (t->n_int32_data) val = t->int32_data[0];
      else if (t->n_double_data) val = t->double_data[0];
    }
    ob_graph_set_attr_f(m->g, node, "value", val);
    ob_graph_set_attr_i(m->g, node, "dtype", dt);
  }
  if (k == OB_GOP_REDUCEMEAN && m->opset >= 18 && nin > 1) {
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' (ReduceMean): axes as an input (opset 18) are not supported",
                   m->file, nname);
  }
  if (k == OB_GOP_BATCHNORM && ob_gattr_i(gn, "spatial", 1) != 1)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' (BatchNormalization): spatial=0 is not supported", m->file, nname);
  /* attributes that opset 17 takes as inputs (moved above) */
  if (k == OB_GOP_CLIP) ob_gnode_del_attr(gn, "min"), ob_gnode_del_attr(gn, "max");
  if (k == OB_GOP_SPLIT) ob_gnode_del_attr(gn, "split"), ob_gnode_del_attr(gn, "num_outputs");
  if (k == OB_GOP_SLICE) ob_gnode_del_attr(gn, "starts"), ob_gnode_del_attr(gn, "ends"), ob_gnode_del_attr(gn, "axes");
  if (k == OB_GOP_SQUEEZE || k == OB_GOP_UNSQUEEZE) ob_gnode_del_attr(gn, "axes");
  if (k == OB_GOP_PAD) ob_gnode_del_attr(gn, "pads"), ob_gnode_del_attr(gn, "value");
  if (k == OB_GOP_BATCHNORM) ob_gnode_del_attr(gn, "spatial"), ob_gnode_del_attr(gn, "consumed_inputs");
  if (k == OB_GOP_SOFTMAX && m->opset < 13) {
    /* opset < 13 coerces to 2-D at `axis` (default 1): the same as a
     * softmax over the last axis only when axis is the last one */
    const gtensor *x = gin(m->g, gn, 0);
    int64_t ax = ob_gattr_i(gn, "axis", 1);
    if (x->ndim >= 0 && ax < 0) ax += x->ndim;
    if (x->ndim >= 0 && ax != x->ndim - 1)
      return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: node '%s' (Softmax, opset %lld): axis %lld of a %d-D input flattens "
                     "the trailing dimensions, which is not supported", m->file, nname, (long long)m->opset, (long long)ax,
                     x->ndim);
    ob_graph_set_attr_i(m->g, node, "axis", -1);
  }
  if (k == OB_GOP_IDENTITY && !strcmp(op, "Dropout")) {
    gn->nattr = 0;
    if (gn->nin > 1) gn->nin = 1; /* ratio and training_mode: inference ignores them */
  }
  st = ob_graph_infer_node(m->ctx, m->g, node);
  if (st) ob_fail_prefix(m->ctx, "%s", m->file);
  return st;
}

/* Declared shapes (outputs, value_info) against the inferred ones. */
static ob_status check_declared(imp *m, const Onnx__ValueInfoProto *vi) {
  if (!vi || !name_ok(vi->name)) return OB_OK;
  int t = ob_graph_tensor_find(m->g, vi->name);
  if (t < 0 || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type ||
      !vi->type->tensor_type->shape)
    return OB_OK;
  const gtensor *x = m->g->t[t];
  const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
  if (x->ndim < 0) return OB_OK;
  bool bad = (int)s->n_dim != x->ndim;
  for (size_t i = 0; i < s->n_dim && !bad; i++) {
    const Onnx__TensorShapeProto__Dimension *d = s->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0 && d->dim_value != x->dims[i] &&
        !(i == 0 && m->batch != 1))
      bad = true;
  }
  if (!bad) return OB_OK;
  ob_str got = {0};
  for (int i = 0; i < x->ndim; i++) ob_str_appendf(&got, "%s%lld", i ? "," : "", (long long)x->dims[i]);
  const char *prod = x->producer >= 0 ? m->g->n[x->producer]->name : "(input)";
  ob_status st = ob_fail(m->ctx, OB_ERR_INVALID_ARG, "%s: tensor '%s': the file declares %zu dimensions that differ from "
                         "[%s], which node '%s' computes (inconsistent shapes)", m->file, vi->name, s->n_dim,
                         got.data ? got.data : "", prod);
  ob_str_free(&got);
  return st;
}

static ob_status import_model(imp *m, const uint8_t *data, size_t len, ob_graph **out) {
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
  if (!mp) return ob_fail(m->ctx, OB_ERR_PARSE, "%s: not a valid ONNX model (malformed or truncated protobuf)", m->file);
  ob_status st = OB_OK;
  ob_graph *g = NULL;
  const Onnx__GraphProto *gp = mp->graph;
  if (!gp) {
    st = ob_fail(m->ctx, OB_ERR_PARSE, "%s: the model has no graph (truncated?)", m->file);
    goto done;
  }
  m->opset = -1;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
    if (o && (!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx"))) m->opset = o->version;
  }
  if (m->opset < 0) m->opset = 1; /* ONNX: no import of the default domain means opset 1 */
  if (m->opset < 7 || m->opset > 18) {
    st = ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: opset %lld of the default domain is not supported (7 to 18; 11 to 17 tested)",
                 m->file, (long long)m->opset);
    goto done;
  }
  if (gp->n_node > MAX_NODES) {
    st = ob_fail(m->ctx, OB_ERR_PARSE, "%s: %zu nodes (at most %d)", m->file, gp->n_node, MAX_NODES);
    goto done;
  }
  if ((st = ob_graph_new(m->ctx, gp->name && name_ok(gp->name) && *gp->name ? gp->name : "onnx", &g))) goto done;
  m->g = g;
  for (size_t i = 0; i < gp->n_initializer && !st; i++) {
    int id;
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!t) continue;
    if (t->name && ob_graph_tensor_find(g, t->name) >= 0) {
      st = ob_fail(m->ctx, OB_ERR_PARSE, "%s: initializer '%s' is defined twice", m->file, name_ok(t->name) ? t->name : "?");
      break;
    }
    st = add_tensor(m, t, t->name, &id);
  }
  if (gp->n_sparse_initializer && !st)
    st = ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "%s: sparse initializers are not supported", m->file);
  for (size_t i = 0; i < gp->n_input && !st; i++)
    if (gp->input[i]) st = add_input(m, gp->input[i]);
  for (size_t i = 0; i < gp->n_node && !st; i++)
    if (gp->node[i]) st = import_node(m, gp->node[i], (int)i);
  for (size_t i = 0; i < gp->n_output && !st; i++) {
    const Onnx__ValueInfoProto *vo = gp->output[i];
    int t = vo && name_ok(vo->name) ? ob_graph_tensor_find(g, vo->name) : -1;
    if (t < 0) {
      st = ob_fail(m->ctx, OB_ERR_INVALID_ARG, "%s: graph output '%s' is not computed by any node", m->file,
                   vo && name_ok(vo->name) ? vo->name : "?");
      break;
    }
    st = ob_graph_mark_output(g, t);
    if (!st) st = check_declared(m, vo);
  }
  for (size_t i = 0; i < gp->n_value_info && !st; i++) st = check_declared(m, gp->value_info[i]);
  if (!st && gp->n_output == 0) st = ob_fail(m->ctx, OB_ERR_PARSE, "%s: the graph has no outputs (truncated?)", m->file);
  if (!st) st = ob_graph_validate(m->ctx, g);
  if (!st) st = ob_graph_infer_shapes(m->ctx, g);
  /* batch-norm running statistics are buffers, as PyTorch counts them */
  for (int i = 0; !st && i < g->nn; i++)
    if (g->n[i]->op == OB_GOP_BATCHNORM)
      for (int k = 3; k < 5 && k < g->n[i]->nin; k++)
        if (g->n[i]->in[k] >= 0) g->t[g->n[i]->in[k]]->is_param = false;
done:
  onnx__model_proto__free_unpacked(mp, NULL);
  if (st) {
    ob_graph_free(g);
    return st;
  }
  *out = g;
  return OB_OK;
}

static ob_status check_args(ob_ctx *ctx, int64_t batch, int64_t seqlen) {
  if (batch < 1 || batch > 1 << 16) return ob_fail(ctx, OB_ERR_INVALID_ARG, "batch size %lld is out of range (1..65536)", (long long)batch);
  if (seqlen < 0 || seqlen > 1 << 20) return ob_fail(ctx, OB_ERR_INVALID_ARG, "sequence length %lld is out of range", (long long)seqlen);
  return OB_OK;
}

ob_status ob_onnx_import_buffer(ob_ctx *ctx, const void *data, size_t len, int64_t batch, int64_t seqlen, ob_graph **out) {
  ob_status st = check_args(ctx, batch, seqlen);
  if (st) return st;
  imp m = {.ctx = ctx, .dir = NULL, .file = "(buffer)", .batch = batch, .seqlen = seqlen};
  return import_model(&m, data, len, out);
}

ob_status ob_onnx_import_file(ob_ctx *ctx, const char *path, int64_t batch, int64_t seqlen, ob_graph **out) {
  ob_status st = check_args(ctx, batch, seqlen);
  if (st) return st;
  FILE *f = fopen(path, "rb");
  if (!f) return ob_fail(ctx, OB_ERR_IO, "cannot open ONNX file '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return ob_fail(ctx, OB_ERR_IO, "'%s' is not a regular file", path);
  }
  if (sb.st_size == 0 || sb.st_size > MAX_FILE_BYTES) {
    fclose(f);
    return ob_fail(ctx, OB_ERR_PARSE, "'%s': %lld bytes is not an ONNX model (empty or over 4 GiB)", path, (long long)sb.st_size);
  }
  size_t len = (size_t)sb.st_size;
  uint8_t *buf = malloc(len);
  if (!buf) {
    fclose(f);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory reading '%s'", path);
  }
  size_t got = fread(buf, 1, len, f);
  fclose(f);
  if (got != len) {
    free(buf);
    return ob_fail(ctx, OB_ERR_IO, "cannot read '%s'", path);
  }
  char *dir = strdup(path);
  if (!dir) {
    free(buf);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else strcpy(dir, ".");
  imp m = {.ctx = ctx, .dir = dir, .file = path, .batch = batch, .seqlen = seqlen};
  st = import_model(&m, buf, len, out);
  free(dir);
  free(buf);
  return st;
}
