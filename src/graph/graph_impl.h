/* graph_impl.h: the layout of a graph and what the files of src/graph share.
 * The graph owns one arena: tensors, nodes, attributes and constant data
 * live there and die with ob_graph_free. Arrays of pointers grow by copying
 * into the arena (the old copy is left behind; graphs are built once). */
#ifndef OB_GRAPH_IMPL_H
#define OB_GRAPH_IMPL_H

#include <stdint.h>
#include <string.h>

#include "opbench/graph.h"

typedef enum gattr_kind { GA_INT = 0, GA_FLOAT, GA_STRING, GA_INTS, GA_FLOATS, GA_KIND_COUNT } gattr_kind;

typedef struct gattr {
  const char *name;
  gattr_kind kind;
  int64_t i;
  double f;
  const char *s;
  int n;
  int64_t *ints;
  float *floats;
} gattr;

typedef struct gtensor {
  const char *name;
  ob_dtype dtype;
  int ndim;       /* -1: unknown */
  int64_t dims[OB_GRAPH_MAX_DIMS];
  ob_gtensor_kind kind;
  bool is_param;
  void *data;     /* constants; for activations, a value shape inference knows */
  int producer;   /* node, or -1 */
  ob_layout layout;
  int block;
} gtensor;

typedef struct gnode {
  ob_gop op;
  const char *name;
  int nin, nout;
  int *in, *out;
  int nattr, cattr;
  gattr *attrs;
  bool dead;
} gnode;

struct ob_graph {
  ob_ctx *ctx;
  ob_arena *arena;
  const char *name;
  gtensor **t;
  int nt, ct;
  gnode **n;
  int nn, cn;
  int *inputs, ninputs, cinputs;
  int *outputs, noutputs, coutputs;
};

/* ---- operator table (ops.c) ---------------------------------------------------- */
typedef struct gop_def {
  const char *name;
  int min_in, max_in, min_out, max_out;
  /* Sets the outputs' dtype and shape from the inputs'. */
  ob_status (*infer)(ob_ctx *ctx, ob_graph *g, gnode *n);
  /* Computes the outputs from the inputs (plain layout). */
  ob_status (*ref)(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in,
                   void *const *out);
} gop_def;
const gop_def *ob_gop_def(ob_gop op);

/* ---- helpers (graph.c) ------------------------------------------------------------ */
static inline gtensor *gt(const ob_graph *g, int id) { return g->t[id]; }
static inline gtensor *gin(const ob_graph *g, const gnode *n, int i) {
  return i < n->nin && n->in[i] >= 0 ? g->t[n->in[i]] : NULL;
}
static inline gtensor *gout(const ob_graph *g, const gnode *n, int i) { return g->t[n->out[i]]; }
const gattr *ob_gnode_attr(const gnode *n, const char *name);
void ob_gnode_del_attr(gnode *n, const char *name);
int64_t ob_gattr_i(const gnode *n, const char *name, int64_t dflt);
double ob_gattr_f(const gnode *n, const char *name, double dflt);
const char *ob_gattr_s(const gnode *n, const char *name, const char *dflt);
/* Number of values (-1 absent); *vals points into the graph. */
int ob_gattr_ints(const gnode *n, const char *name, const int64_t **vals);
/* Numel with overflow and bound checks: -1 when unknown or too large. */
int64_t ob_gt_numel(const gtensor *t);
size_t ob_gt_bytes(const gtensor *t);
/* "node 'name' (Op)" prefix of messages about a node. */
ob_status ob_gfail(ob_ctx *ctx, const gnode *n, ob_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets a tensor's shape. */
void ob_gt_set(gtensor *t, ob_dtype dt, int ndim, const int64_t *dims);
/* Fresh tensor (activation) with a unique name derived from base. */
int ob_graph_new_tensor(ob_graph *g, const char *base);
/* Adds a node whose outputs are existing tensors (passes rewiring). */
int ob_graph_add_node_raw(ob_graph *g, ob_gop op, const char *name, int nin, const int *in, int nout,
                          const int *out);
/* Inserts node id `node` (the last one added) just before position `pos`
 * in the order, shifting later nodes (ids stay attached to nodes). */
void ob_graph_move_last_before(ob_graph *g, int pos);
/* Number of live nodes that read tensor t, and whether t is a graph output. */
int ob_graph_uses(const ob_graph *g, int t);
bool ob_graph_is_output(const ob_graph *g, int t);
/* Replaces every read of tensor `from` by `to` (graph outputs too). */
void ob_graph_replace_uses(ob_graph *g, int from, int to);
/* dst[c][r] = src[r][c] for a [R, C] matrix of 4-byte elements, in tiles. */
void ob_transpose32(const void *src, void *dst, int64_t R, int64_t C);
/* A copy of data in the graph's arena. */
void *ob_graph_dup(ob_graph *g, const void *data, size_t bytes);
/* Makes tensor t a constant holding data (taken, arena memory). */
void ob_graph_make_const(ob_graph *g, int t, void *data);
/* Unique node name from base. */
const char *ob_graph_unique_node_name(ob_graph *g, const char *base);

/* Shape inference of node i alone (passes.c), values of small tensors
 * propagated; importers and builders call it as they add nodes. */
ob_status ob_graph_infer_node(ob_ctx *ctx, ob_graph *g, int i);

/* ---- reference helpers (ref.c) --------------------------------------------------- */
ob_status ob_ref_node(ob_ctx *ctx, const ob_graph *g, const gnode *n, const void *const *in,
                      void *const *out);
/* Broadcast shape of a and b into out (numpy rules); false if incompatible. */
bool ob_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out);

/* ---- workloads (tasks.c) ---------------------------------------------------------- */
/* Up to cap workloads of a node with their occurrence counts (LSTM has
 * two); returns how many, 0 when none. */
int ob_gnode_workloads(ob_ctx *ctx, const ob_graph *g, const gnode *n, ob_workload *wl, int *count,
                       int cap);

/* ---- ONNX ------------------------------------------------------------------------- */
/* doc_string of initializers that are buffers, not trained parameters. */
#define OB_ONNX_BUFFER_DOC "opbench: buffer"
/* The IR dtype of an ONNX TensorProto data type (ops.c); *ok false if none. */
ob_dtype ob_onnx_dtype(int64_t code, bool *ok);

#endif
