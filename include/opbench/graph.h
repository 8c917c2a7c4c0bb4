/* graph: the model layer. A graph IR (nodes with an operator kind and
 * attributes, tensors with shape, dtype and layout, constant tensors for
 * weights), the model zoo (C builders of the reference architectures with
 * random weights), ONNX import and export (protobuf-c), the passes (shape
 * inference, constant folding, batch-norm folding, epilogue fusion, dead-node
 * elimination, layout planning), task extraction (the distinct ob_workloads
 * of a model) and a naive reference execution of a whole graph.
 *
 * Operators follow ONNX (opset 17) semantics and names, so that import and
 * export are one-to-one; the few that ONNX lacks are marked "internal" below
 * and only passes create them. A graph owns everything it holds (one arena,
 * freed by ob_graph_free); ids of tensors and nodes are small integers that
 * stay valid until ob_graph_compact renumbers them. Nodes are always kept in
 * a topological order: a node's inputs are graph inputs, constants or
 * outputs of earlier nodes.
 *
 * For the runtime: walk the live nodes in order (ob_graph_node_count,
 * ob_graph_node_dead), ask ob_graph_node_workload for the ob_workload a
 * kernel can run, and run the others with ob_graph_node_reference; check a
 * whole run against ob_graph_run_reference. Tensor layouts chosen by
 * ob_graph_plan_layout say where data flows in blocked NCHW[x]c form. */
#ifndef OPBENCH_GRAPH_H
#define OPBENCH_GRAPH_H

#include <stdio.h>

#include "opbench/core.h"
#include "opbench/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OB_GRAPH_MAX_DIMS 8
/* Bounds on what a graph may hold, so that hostile files cannot make a size
 * computation overflow: elements of one tensor, bytes of all constants. */
#define OB_GRAPH_MAX_NUMEL (INT64_C(1) << 32)
#define OB_GRAPH_MAX_CONST_BYTES (INT64_C(16) << 30)

typedef enum ob_gop {
  /* compute-heavy */
  OB_GOP_CONV = 0,     /* Conv: x, w, [b]; 2-D; internal attr "epilogue"
                          ("bias,add,relu" as ob_workload) with inputs x, w,
                          [bias], [residual] in that order once fused */
  OB_GOP_GEMM,         /* Gemm: A, B, [C]; transA/transB/alpha/beta */
  OB_GOP_MATMUL,       /* MatMul: numpy-style batched matrix product */
  OB_GOP_DENSE,        /* internal: x [..., K], w [N, K], [bias [N]], [residual],
                          attr "epilogue" -> y [..., N] */
  OB_GOP_LSTM,         /* LSTM: X [T,B,I], W [1,4H,I], R [1,4H,H], [B [1,8H]];
                          forward, gates i,o,f,c; outputs Y [T,1,B,H], [Y_h], [Y_c] */
  /* elementwise (numpy broadcasting) */
  OB_GOP_ADD, OB_GOP_SUB, OB_GOP_MUL, OB_GOP_DIV, OB_GOP_POW,
  OB_GOP_EQUAL, OB_GOP_WHERE,
  OB_GOP_RELU, OB_GOP_CLIP, OB_GOP_SIGMOID, OB_GOP_HARDSIGMOID, OB_GOP_TANH, OB_GOP_ERF,
  OB_GOP_SQRT, OB_GOP_EXP, OB_GOP_NEG, OB_GOP_GELU, /* Gelu: internal, attr approximate "none"|"tanh" */
  /* pooling and normalization */
  OB_GOP_MAXPOOL, OB_GOP_AVGPOOL, OB_GOP_GLOBALAVGPOOL,
  OB_GOP_BATCHNORM, OB_GOP_LAYERNORM, OB_GOP_SOFTMAX, OB_GOP_REDUCEMEAN,
  /* data movement and shapes */
  OB_GOP_CONCAT, OB_GOP_SPLIT, OB_GOP_SLICE, OB_GOP_GATHER, OB_GOP_FLATTEN, OB_GOP_RESHAPE,
  OB_GOP_TRANSPOSE, OB_GOP_UNSQUEEZE, OB_GOP_SQUEEZE, OB_GOP_SHAPE, OB_GOP_CAST,
  OB_GOP_IDENTITY, OB_GOP_RESIZE, OB_GOP_EXPAND, OB_GOP_CONSTANTOFSHAPE, OB_GOP_RANGE,
  OB_GOP_PAD,          /* Pad: data, pads [begins..., ends...], [constant_value]; constant mode */
  OB_GOP_COUNT
} ob_gop;

/* ONNX operator name ("Conv"...; "Dense" and "Gelu" for the internal ones). */
OB_API const char *ob_gop_name(ob_gop op);
/* OB_GOP_COUNT when unknown. */
OB_API ob_gop ob_gop_find(const char *name);

typedef enum ob_gtensor_kind {
  OB_GT_ACT = 0,   /* produced by a node */
  OB_GT_INPUT,     /* a graph input, fed at run time */
  OB_GT_CONST,     /* a constant (weight, shape), data held by the graph */
  OB_GT_KIND_COUNT
} ob_gtensor_kind;

typedef enum ob_layout {
  OB_LAYOUT_PLAIN = 0, /* row-major in the logical dims (NCHW for 4-D) */
  OB_LAYOUT_NCHWC,     /* N, C/b, H, W, b: blocked by ob_graph_tensor_block */
  OB_LAYOUT_COUNT
} ob_layout;

typedef struct ob_graph ob_graph;

/* ---- building -------------------------------------------------------------- */
OB_API ob_status ob_graph_new(ob_ctx *ctx, const char *name, ob_graph **out);
OB_API void ob_graph_free(ob_graph *g); /* accepts NULL */
OB_API const char *ob_graph_name(const ob_graph *g);
OB_API ob_ctx *ob_graph_ctx(const ob_graph *g);

/* Each returns the new tensor's id through *id. Names must be unique
 * (OB_ERR_INVALID_ARG naming the duplicate); dims may be -1 (unknown) for
 * activations until shape inference. Dtypes: OB_F32, OB_I64, OB_BOOL. */
OB_API ob_status ob_graph_add_input(ob_graph *g, const char *name, ob_dtype dt, int ndim,
                                    const int64_t *dims, int *id);
/* Copies `data` (NULL: zeros) into the graph. is_param: a trained
 * parameter (counted by ob_graph_params) rather than a buffer (batch-norm
 * running statistics, masks, shapes). */
OB_API ob_status ob_graph_add_const(ob_graph *g, const char *name, ob_dtype dt, int ndim,
                                    const int64_t *dims, const void *data, bool is_param, int *id);
/* Adds a node reading `in` (-1: an omitted optional input) and creating
 * nout fresh activation tensors named out_names[i] (NULL: "<node>:i"); ids
 * of the outputs go to out_ids (may be NULL), the node's id to *node. */
OB_API ob_status ob_graph_add_node(ob_graph *g, ob_gop op, const char *name, int nin,
                                   const int *in, int nout, const char *const *out_names,
                                   int *out_ids, int *node);
OB_API ob_status ob_graph_mark_output(ob_graph *g, int tensor);

/* Attributes (ONNX names: strides, pads [t,l,b,r], dilations, group, axis,
 * perm, epsilon, ...). Setting replaces. */
OB_API void ob_graph_set_attr_i(ob_graph *g, int node, const char *name, int64_t v);
OB_API void ob_graph_set_attr_f(ob_graph *g, int node, const char *name, double v);
OB_API void ob_graph_set_attr_s(ob_graph *g, int node, const char *name, const char *v);
OB_API void ob_graph_set_attr_ints(ob_graph *g, int node, const char *name, int n,
                                   const int64_t *v);
OB_API void ob_graph_set_attr_floats(ob_graph *g, int node, const char *name, int n,
                                     const float *v);

/* ---- reading ---------------------------------------------------------------- */
OB_API int ob_graph_tensor_count(const ob_graph *g);
OB_API int ob_graph_tensor_find(const ob_graph *g, const char *name); /* -1 if absent */
OB_API const char *ob_graph_tensor_name(const ob_graph *g, int t);
OB_API ob_dtype ob_graph_tensor_dtype(const ob_graph *g, int t);
OB_API int ob_graph_tensor_ndim(const ob_graph *g, int t);
OB_API const int64_t *ob_graph_tensor_dims(const ob_graph *g, int t);
OB_API int64_t ob_graph_tensor_numel(const ob_graph *g, int t); /* -1 if unknown */
OB_API ob_gtensor_kind ob_graph_tensor_kind(const ob_graph *g, int t);
OB_API bool ob_graph_tensor_is_param(const ob_graph *g, int t);
/* Constant data (row-major, plain layout); NULL for other tensors. */
OB_API const void *ob_graph_tensor_data(const ob_graph *g, int t);
OB_API int ob_graph_tensor_producer(const ob_graph *g, int t); /* node or -1 */
OB_API ob_layout ob_graph_tensor_layout(const ob_graph *g, int t);
OB_API int ob_graph_tensor_block(const ob_graph *g, int t); /* NCHWc block, else 0 */

OB_API int ob_graph_input_count(const ob_graph *g);
OB_API int ob_graph_input(const ob_graph *g, int i);
OB_API int ob_graph_output_count(const ob_graph *g);
OB_API int ob_graph_output(const ob_graph *g, int i);

OB_API int ob_graph_node_count(const ob_graph *g); /* live and dead */
OB_API bool ob_graph_node_dead(const ob_graph *g, int n);
OB_API ob_gop ob_graph_node_op(const ob_graph *g, int n);
OB_API const char *ob_graph_node_name(const ob_graph *g, int n);
OB_API int ob_graph_node_num_inputs(const ob_graph *g, int n);
OB_API int ob_graph_node_input(const ob_graph *g, int n, int i); /* -1: omitted */
/* Bytes of the parameters (ob_graph_tensor_is_param: weights, biases) node
 * n reads; 0 for n < 0. */
OB_API int64_t ob_graph_node_param_bytes(const ob_graph *g, int n);
OB_API int ob_graph_node_num_outputs(const ob_graph *g, int n);
OB_API int ob_graph_node_output(const ob_graph *g, int n, int i);
OB_API bool ob_graph_node_has_attr(const ob_graph *g, int n, const char *name);
OB_API int64_t ob_graph_node_attr_i(const ob_graph *g, int n, const char *name, int64_t dflt);
OB_API double ob_graph_node_attr_f(const ob_graph *g, int n, const char *name, double dflt);
OB_API const char *ob_graph_node_attr_s(const ob_graph *g, int n, const char *name,
                                        const char *dflt);
/* Copies up to cap values; returns how many the attribute has, -1 if absent. */
OB_API int ob_graph_node_attr_ints(const ob_graph *g, int n, const char *name, int64_t *out,
                                   int cap);

/* Structural checks: every input defined before use, arity of each
 * operator, attribute values in range, a node's shapes consistent once
 * known. OB_ERR_INVALID_ARG with the node named ("node 'conv1' (Conv): ..."). */
OB_API ob_status ob_graph_validate(ob_ctx *ctx, const ob_graph *g);
/* Drops dead nodes and unused tensors and renumbers ids (keeps order). */
OB_API void ob_graph_compact(ob_graph *g);

/* Multiply-accumulates of Conv, Gemm, MatMul, Dense and LSTM nodes (the
 * "FLOPs" torchvision publishes), and the element count of parameter
 * constants (batch-norm statistics, masks and shape constants excluded).
 * Needs known shapes. */
OB_API double ob_graph_macs(const ob_graph *g);
OB_API int64_t ob_graph_params(const ob_graph *g);

/* Text dump: one line per live node, "name = Op(inputs) attrs -> shape";
 * tensors in a blocked layout are marked. Appended to *out. */
OB_API void ob_graph_print(const ob_graph *g, ob_str *out);

/* ---- passes -------------------------------------------------------------------
 * Each takes a graph whose shapes may be unknown only where said, changes it
 * in place, and keeps the graph valid and topologically ordered. */
/* Output dtype and shape of every node in order; values of small integer
 * tensors (Shape chains) are propagated so that Reshape/Slice/Expand targets
 * computed from shapes resolve. Inconsistent shapes: OB_ERR_INVALID_ARG
 * naming the node. */
OB_API ob_status ob_graph_infer_shapes(ob_ctx *ctx, ob_graph *g);
/* Nodes whose inputs are all constants (or whose values shape inference
 * knows) become constants; *folded (may be NULL) counts the nodes removed. */
OB_API ob_status ob_graph_fold_constants(ob_ctx *ctx, ob_graph *g, int *folded);
/* BatchNormalization after a Conv (whose output only it reads) is folded
 * into the conv's weights and bias. */
OB_API ob_status ob_graph_fold_batchnorm(ob_ctx *ctx, ob_graph *g, int *folded);
/* Gemm (transB=1, alpha=beta=1, 1-D bias) and MatMul by a constant 2-D
 * matrix (+ an Add of a constant [N] bias) become Dense with a [N, K]
 * weight; a zero Pad of the spatial dims goes into the Conv or
 * AveragePool (count_include_pad) that reads it; then bias, residual add,
 * Relu and Clip(0, 6) that follow a Conv or Dense whose output nothing else
 * reads are fused into its epilogue. */
OB_API ob_status ob_graph_fuse(ob_ctx *ctx, ob_graph *g, int *fused);
/* Removes nodes that no graph output depends on, and unused constants. */
OB_API ob_status ob_graph_eliminate_dead(ob_ctx *ctx, ob_graph *g, int *removed);
/* Marks the 4-D float tensors that may flow in NCHW[b]c between
 * convolutions: a tensor is blocked when its producer and every consumer
 * work in the blocked layout (Conv, and between them Relu, Clip, Add,
 * Mul, Sigmoid, pooling, 2-input channel Concat), with b the largest of
 * lanes, lanes/2, ... dividing its channels. Graph inputs and outputs stay
 * plain; *transforms (may be NULL) counts the layout conversions that the
 * plan implies at its boundaries (each blocked tensor read by a plain node,
 * each plain tensor read by a blocked conv with channels >= lanes). */
OB_API ob_status ob_graph_plan_layout(ob_ctx *ctx, ob_graph *g, int lanes, int *transforms);

/* Operator merging (IOS's merge stages). ob_graph_merge_check: OB_OK when
 * the n >= 2 nodes are live Convs (group 1, no fused residual, constant
 * weights, known shapes) that read the same input tensor with the same
 * kernel size, strides, pads, dilations and fused activation; else
 * OB_ERR_INVALID_ARG naming the node that differs and how.
 * ob_graph_merge_convs rewrites them into one Conv with their output
 * channels in the order given (weights and biases concatenated; a missing
 * bias is zeros) placed where the first of them was, followed by one Slice
 * per original conv along the channels that takes over that conv's output
 * tensor, so every reader is unchanged; the originals die. Node ids from
 * the merged conv's position on shift (ids are positions): *merged gets the
 * new conv's id. */
OB_API ob_status ob_graph_merge_check(ob_ctx *ctx, const ob_graph *g, int n, const int *nodes);
OB_API ob_status ob_graph_merge_convs(ob_ctx *ctx, ob_graph *g, int n, const int *nodes, int *merged);

typedef struct ob_graph_pass_stats {
  int folded, bn_folded, fused, removed, transforms;
} ob_graph_pass_stats;
/* infer shapes, fold constants, fold batch norms, fuse, eliminate dead
 * nodes, compact, infer again; then plan layouts when lanes > 0. */
OB_API ob_status ob_graph_optimize(ob_ctx *ctx, ob_graph *g, int lanes, ob_graph_pass_stats *st);

/* ---- workloads and tasks ------------------------------------------------------ */
/* The ob_workload a kernel of the operator library computes for this node
 * (the node's tensors in the argument order of the workload; for MatMul
 * and batch_matmul the workload's B operand is the node's B transposed to
 * [.., N, K]). OB_ERR_UNSUPPORTED when there is none (shape-only nodes,
 * broadcasting the library lacks, an eps other than 1e-5...). */
OB_API ob_status ob_graph_node_workload(ob_ctx *ctx, const ob_graph *g, int node,
                                        ob_workload *out);

typedef struct ob_graph_task {
  ob_workload wl;
  char key[256];
  int count;        /* nodes (or LSTM steps) with this workload */
  double flops;     /* per occurrence, ob_workload_flops */
  double share;     /* count * flops over the sum over all tasks */
  double est_s;     /* estimated seconds of all occurrences (see ob_graph_tasks) */
  int first_node;   /* a node that runs it */
} ob_graph_task;

/* The distinct workloads of the live nodes, by estimated time, most first.
 * The estimate is count * flops / peak with peak = 1 GFLOP/s, i.e. FLOPs:
 * proportional to time where every task reaches the same throughput.
 * *tasks is malloc'd (caller frees with free()). */
OB_API ob_status ob_graph_tasks(ob_ctx *ctx, const ob_graph *g, ob_graph_task **tasks, int *n);
/* How many of the first tasks (as ob_graph_tasks orders them) make up at
 * least `percent` of the estimated time (percent in (0, 100]). */
OB_API int ob_graph_key_tasks(const ob_graph_task *tasks, int n, double percent);

/* ---- reference execution -------------------------------------------------------- */
/* Runs one node naively (double accumulation, ops' references where the
 * node has a workload): in[i] for each input (NULL for an omitted one),
 * out[i] for each output, plain layout, sizes as the tensors' shapes. */
OB_API ob_status ob_graph_node_reference(ob_ctx *ctx, const ob_graph *g, int node,
                                         const void *const *in, void *const *out);
/* Runs the whole graph: inputs[i] for graph input i, outputs[i] (caller's
 * buffers of the output's size) for graph output i. Needs known shapes. */
OB_API ob_status ob_graph_run_reference(ob_ctx *ctx, const ob_graph *g,
                                        const void *const *inputs, void *const *outputs);
/* Random input data for graph input i: floats uniform in [-1, 1], integer
 * inputs (token ids) uniform in [0, hi) where hi is the size of the table
 * the ids index (found through Gather), else 2. */
OB_API void ob_graph_fill_input(const ob_graph *g, int i, uint64_t seed, void *buf);

/* ---- models ----------------------------------------------------------------------- */
typedef struct ob_model_opts {
  const char *source;     /* local | transformers | simple | onnx | remoteonnx */
  const char *name;       /* zoo name, or the URL for remoteonnx */
  const char *path;       /* onnx: the file */
  int64_t batch;          /* >= 1 */
  int64_t seqlen;         /* transformers, lstm; 0: the model's default */
  int64_t input_size;     /* CNN input height and width; 0: the model's own */
  int64_t hidden;         /* lstm hidden size; 0: default */
  uint64_t seed;          /* random weights */
  const char *cache_dir;  /* remoteonnx: NULL -> $OPBENCH_CACHE or ~/.cache/opbench */
  const char *sha256;     /* remoteonnx: expected digest (hex), NULL: none */
  int64_t max_bytes;      /* remoteonnx: download limit; 0: 2 GiB */
  bool zero_weights;      /* zoo: leave weights zero instead of random (for
                             counting and inspecting: quick, pages untouched) */
} ob_model_opts;
/* source local, batch 1, seed 1, everything else 0/NULL. */
OB_API ob_model_opts ob_model_opts_default(void);

/* Builds or imports the model and infers its shapes (no other pass). Unknown
 * source or name: OB_ERR_NOT_FOUND listing the known ones; batch 0:
 * OB_ERR_INVALID_ARG; import errors as ob_onnx_import_file. */
OB_API ob_status ob_model_load(ob_ctx *ctx, const ob_model_opts *o, ob_graph **out);

/* The zoo: `source` local, transformers or simple. */
typedef struct ob_zoo_info {
  const char *source, *name, *description;
  double pub_macs;      /* published multiply-adds at the default input, 0: none */
  double pub_params;    /* published parameter count, 0: none */
  const char *pub_note; /* what the published figures count */
} ob_zoo_info;
OB_API int ob_zoo_count(void);
OB_API const ob_zoo_info *ob_zoo_info_at(int i);

/* ---- ONNX ------------------------------------------------------------------------- */
/* Imports an ONNX model (opsets 11 to 17 of the default domain): initializers
 * inline or in external data files beside the model. Dynamic dimensions
 * take `batch` (the first) and `seqlen` (others; 0 refuses them).
 * Truncated or malformed files are OB_ERR_PARSE, an operator the IR lacks
 * OB_ERR_UNSUPPORTED naming it and its node, inconsistent shapes
 * OB_ERR_INVALID_ARG naming the node. Shapes are inferred. */
OB_API ob_status ob_onnx_import_file(ob_ctx *ctx, const char *path, int64_t batch,
                                     int64_t seqlen, ob_graph **out);
/* The same from memory; external data is refused (no folder to find it). */
OB_API ob_status ob_onnx_import_buffer(ob_ctx *ctx, const void *data, size_t len, int64_t batch,
                                       int64_t seqlen, ob_graph **out);
/* Writes the graph as an ONNX model, opset 17, weights inline (internal
 * operators written as the ONNX nodes they stand for). */
OB_API ob_status ob_onnx_export_file(ob_ctx *ctx, const ob_graph *g, const char *path);
/* The same into *out (malloc'd, *len bytes). */
OB_API ob_status ob_onnx_export_buffer(ob_ctx *ctx, const ob_graph *g, void **out, size_t *len);

/* Downloads url into cache_dir (NULL: $OPBENCH_CACHE, else
 * $XDG_CACHE_HOME/opbench, else ~/.cache/opbench) under models/, named by a
 * hash of the URL; a file already there whose digest matches (or, without
 * sha256, that exists) is reused. More than max_bytes (0: 2 GiB): OB_ERR_IO;
 * a digest that differs: OB_ERR_INVALID_ARG; no network: OB_ERR_IO saying
 * so. The path (malloc'd) goes to *path. */
OB_API ob_status ob_model_download(ob_ctx *ctx, const char *url, const char *cache_dir,
                                   const char *sha256, int64_t max_bytes, char **path);
/* SHA-256 of a file as 64 lowercase hex digits + NUL. */
OB_API ob_status ob_file_sha256(ob_ctx *ctx, const char *path, char hex[65]);

#ifdef __cplusplus
}
#endif
#endif
