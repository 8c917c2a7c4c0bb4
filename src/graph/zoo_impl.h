/* zoo_impl.h: the model builder the zoo files share. A builder wraps a
 * graph with a sticky status (the first failure is kept and later calls do
 * nothing), a random generator for the weights and a name prefix, so that a
 * model reads like its PyTorch definition. Every node is shape-inferred as
 * it is added, so builders can read channel counts off their tensors. */
#ifndef OB_GRAPH_ZOO_IMPL_H
#define OB_GRAPH_ZOO_IMPL_H

#include "graph/graph_impl.h"

typedef struct zb {
  ob_graph *g;
  ob_ctx *ctx;
  ob_status st;
  ob_rng rng;
  bool zero; /* weights stay zero */
} zb;

/* Dimension d of tensor t (0 after a failure). */
int64_t zb_dim(const zb *b, int t, int d);
int zb_input(zb *b, const char *name, ob_dtype dt, int nd, const int64_t *dims);
/* Parameter uniform in [-scale, scale]; centre added (for BN gamma/var). */
int zb_param(zb *b, const char *name, int nd, const int64_t *dims, double scale, double centre);
/* Buffer (not a parameter) with the given data. */
int zb_const_f(zb *b, const char *name, int nd, const int64_t *dims, const float *data);
int zb_scalar(zb *b, const char *name, float v);
int zb_ints(zb *b, const char *name, int n, const int64_t *v);
/* Node with one output; the last argument list holds nin tensors. */
int zb_node(zb *b, ob_gop op, const char *name, int nin, const int *in);
int zb_node1(zb *b, ob_gop op, const char *name, int x);
int zb_node2(zb *b, ob_gop op, const char *name, int x, int y);
/* The node that produced tensor t (to set attributes after creation). */
int zb_prod(const zb *b, int t);
/* Re-infers the node that produced t after its attributes were set. */
void zb_reinfer(zb *b, int t);

/* Conv2d (torch semantics): weights [cout, cin/groups, kh, kw], kaiming-uniform
 * scale, optional bias. Name prefix: "<name>.weight". */
int zb_conv(zb *b, const char *name, int x, int64_t cout, int64_t kh, int64_t kw, int64_t stride, int64_t ph, int64_t pw,
            int64_t groups, bool bias);
int zb_bn(zb *b, const char *name, int x, double eps);
int zb_relu(zb *b, const char *name, int x);
int zb_relu6(zb *b, const char *name, int x);
int zb_maxpool(zb *b, const char *name, int x, int64_t k, int64_t s, int64_t p, bool ceil_mode);
int zb_avgpool(zb *b, const char *name, int x, int64_t k, int64_t s, int64_t p, bool include_pad);
int zb_gap(zb *b, const char *name, int x);
int zb_flatten(zb *b, const char *name, int x);
/* torch.nn.Linear as ONNX Gemm(transB=1): weight [out, in], bias [out]. */
int zb_linear(zb *b, const char *name, int x, int64_t out);
/* torch.nn.Linear on a 3-D input as exported: MatMul by [in, out] + Add. */
int zb_linear3(zb *b, const char *name, int x, int64_t out);
int zb_concat(zb *b, const char *name, int n, const int *xs, int64_t axis);
int zb_reshape(zb *b, const char *name, int x, int nd, const int64_t *shape);
int zb_transpose(zb *b, const char *name, int x, int nd, const int64_t *perm);
int zb_layernorm(zb *b, const char *name, int x, double eps);

/* Model builders (zoo.c, zoo_nlp.c, zoo_yolo.c, zoo_randwire.c, zoo_nasnet.c). */
typedef struct zoo_args {
  int64_t batch, seqlen, size, hidden;
} zoo_args;
void zoo_resnet(zb *b, const zoo_args *a, int depth);
void zoo_vgg16(zb *b, const zoo_args *a);
void zoo_mobilenet_v2(zb *b, const zoo_args *a);
void zoo_squeezenet11(zb *b, const zoo_args *a);
void zoo_inception_v3(zb *b, const zoo_args *a);
void zoo_simple(zb *b, const zoo_args *a);
void zoo_bert_encoder(zb *b, const zoo_args *a);
void zoo_bert_uncased(zb *b, const zoo_args *a);
void zoo_gpt2(zb *b, const zoo_args *a);
void zoo_lstm(zb *b, const zoo_args *a);
void zoo_yolov5s(zb *b, const zoo_args *a);
void zoo_randwire(zb *b, const zoo_args *a);
void zoo_nasnet_large(zb *b, const zoo_args *a);

#endif
