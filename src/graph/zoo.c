/* zoo.c: the builder that zoo models are written with, and the CNNs of the
 * zoo, each exactly torchvision's definition (layer by layer, with its
 * names) in inference form: ResNet-18/50, VGG-16, MobileNetV2,
 * SqueezeNet 1.1, Inception v3 (no auxiliary classifier) and a small CNN.
 * Weights are random from the builder's seeded generator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/zoo_impl.h"

/* ---- builder -------------------------------------------------------------------- */
int64_t zb_dim(const zb *b, int t, int d) {
  if (b->st || t < 0) return 0;
  const gtensor *x = b->g->t[t];
  if (d < 0) d += x->ndim;
  return d >= 0 && d < x->ndim ? x->dims[d] : 0;
}

int zb_input(zb *b, const char *name, ob_dtype dt, int nd, const int64_t *dims) {
  if (b->st) return -1;
  int id = -1;
  b->st = ob_graph_add_input(b->g, name, dt, nd, dims, &id);
  return id;
}

int zb_param(zb *b, const char *name, int nd, const int64_t *dims, double scale, double centre) {
  if (b->st) return -1;
  int id = -1;
  b->st = ob_graph_add_const(b->g, name, OB_F32, nd, dims, NULL, true, &id);
  if (b->st) return -1;
  gtensor *t = b->g->t[id];
  int64_t n = ob_gt_numel(t);
  float *p = t->data;
  if (!b->zero) {
    ob_rng_fill(&b->rng, p, n);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(centre + scale * p[i]);
  }
  return id;
}

int zb_const_f(zb *b, const char *name, int nd, const int64_t *dims, const float *data) {
  if (b->st) return -1;
  int id = -1;
  b->st = ob_graph_add_const(b->g, name, OB_F32, nd, dims, data, false, &id);
  return id;
}

int zb_scalar(zb *b, const char *name, float v) {
  if (b->st) return -1;
  int id = ob_graph_tensor_find(b->g, name);
  if (id >= 0) return id; /* shared scalars */
  b->st = ob_graph_add_const(b->g, name, OB_F32, 0, NULL, &v, false, &id);
  return id;
}

int zb_ints(zb *b, const char *name, int n, const int64_t *v) {
  if (b->st) return -1;
  int id = -1;
  int64_t d = n;
  char nm[300];
  /* shape constants are often repeated: share them by value */
  snprintf(nm, sizeof nm, "%s", name);
  int prev = ob_graph_tensor_find(b->g, nm);
  if (prev >= 0) {
    const gtensor *t = b->g->t[prev];
    if (t->dtype == OB_I64 && t->ndim == 1 && t->dims[0] == n && !memcmp(t->data, v, sizeof(int64_t) * (size_t)n)) return prev;
    for (int k = 1; ob_graph_tensor_find(b->g, nm) >= 0; k++) snprintf(nm, sizeof nm, "%s_%d", name, k);
  }
  b->st = ob_graph_add_const(b->g, nm, OB_I64, 1, &d, v, false, &id);
  return id;
}

int zb_prod(const zb *b, int t) { return b->st || t < 0 ? -1 : b->g->t[t]->producer; }

void zb_reinfer(zb *b, int t) {
  if (b->st || t < 0) return;
  b->st = ob_graph_infer_node(b->ctx, b->g, b->g->t[t]->producer);
}

int zb_node(zb *b, ob_gop op, const char *name, int nin, const int *in) {
  if (b->st) return -1;
  for (int i = 0; i < nin; i++)
    if (in[i] < -1) return -1;
  int out = -1, node = -1;
  char nm[300], tn[320];
  snprintf(nm, sizeof nm, "%s", name ? name : ob_gop_name(op));
  const char *nn = ob_graph_unique_node_name(b->g, nm);
  snprintf(tn, sizeof tn, "%s", nn);
  for (int k = 1; ob_graph_tensor_find(b->g, tn) >= 0; k++) snprintf(tn, sizeof tn, "%s_%d", nn, k);
  b->st = ob_graph_add_node(b->g, op, nn, nin, in, 1, (const char *const[]){tn}, &out, &node);
  return out;
}

int zb_node1(zb *b, ob_gop op, const char *name, int x) {
  int o = zb_node(b, op, name, 1, &x);
  zb_reinfer(b, o);
  return o;
}

int zb_node2(zb *b, ob_gop op, const char *name, int x, int y) {
  int o = zb_node(b, op, name, 2, (int[]){x, y});
  zb_reinfer(b, o);
  return o;
}

static char *nm2(char *buf, size_t cap, const char *a, const char *b) {
  snprintf(buf, cap, "%s.%s", a, b);
  return buf;
}

int zb_conv(zb *b, const char *name, int x, int64_t cout, int64_t kh, int64_t kw, int64_t stride, int64_t ph, int64_t pw,
            int64_t groups, bool bias) {
  if (b->st) return -1;
  char n1[300];
  int64_t cin = zb_dim(b, x, 1);
  double fan = (double)(cin / groups * kh * kw);
  double sc = sqrt(3.0 / fan); /* variance 1/fan_in */
  int w = zb_param(b, nm2(n1, sizeof n1, name, "weight"), 4, (int64_t[]){cout, cin / groups, kh, kw}, sc, 0);
  int bi = bias ? zb_param(b, nm2(n1, sizeof n1, name, "bias"), 1, &cout, 1.0 / sqrt(fan), 0) : -1;
  int o = zb_node(b, OB_GOP_CONV, name, bias ? 3 : 2, (int[]){x, w, bi});
  int n = zb_prod(b, o);
  if (n < 0) return -1;
  ob_graph_set_attr_ints(b->g, n, "kernel_shape", 2, (int64_t[]){kh, kw});
  ob_graph_set_attr_ints(b->g, n, "strides", 2, (int64_t[]){stride, stride});
  ob_graph_set_attr_ints(b->g, n, "pads", 4, (int64_t[]){ph, pw, ph, pw});
  ob_graph_set_attr_ints(b->g, n, "dilations", 2, (int64_t[]){1, 1});
  ob_graph_set_attr_i(b->g, n, "group", groups);
  zb_reinfer(b, o);
  return o;
}

int zb_bn(zb *b, const char *name, int x, double eps) {
  if (b->st) return -1;
  char n1[300];
  int64_t c = zb_dim(b, x, 1);
  int ga = zb_param(b, nm2(n1, sizeof n1, name, "weight"), 1, &c, 0.25, 1.0);
  int be = zb_param(b, nm2(n1, sizeof n1, name, "bias"), 1, &c, 0.1, 0);
  int mu = zb_param(b, nm2(n1, sizeof n1, name, "running_mean"), 1, &c, 0.1, 0);
  int va = zb_param(b, nm2(n1, sizeof n1, name, "running_var"), 1, &c, 0.25, 1.0);
  if (b->st) return -1;
  b->g->t[mu]->is_param = b->g->t[va]->is_param = false; /* buffers, as in PyTorch */
  int o = zb_node(b, OB_GOP_BATCHNORM, name, 5, (int[]){x, ga, be, mu, va});
  if (o >= 0) ob_graph_set_attr_f(b->g, zb_prod(b, o), "epsilon", eps);
  zb_reinfer(b, o);
  return o;
}

int zb_relu(zb *b, const char *name, int x) { return zb_node1(b, OB_GOP_RELU, name, x); }

int zb_relu6(zb *b, const char *name, int x) {
  int lo = zb_scalar(b, "const.zero", 0.0f), hi = zb_scalar(b, "const.six", 6.0f);
  int o = zb_node(b, OB_GOP_CLIP, name, 3, (int[]){x, lo, hi});
  zb_reinfer(b, o);
  return o;
}

static int pool(zb *b, ob_gop op, const char *name, int x, int64_t k, int64_t s, int64_t p) {
  int o = zb_node(b, op, name, 1, &x);
  int n = zb_prod(b, o);
  if (n < 0) return -1;
  ob_graph_set_attr_ints(b->g, n, "kernel_shape", 2, (int64_t[]){k, k});
  ob_graph_set_attr_ints(b->g, n, "strides", 2, (int64_t[]){s, s});
  ob_graph_set_attr_ints(b->g, n, "pads", 4, (int64_t[]){p, p, p, p});
  return o;
}

int zb_maxpool(zb *b, const char *name, int x, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  int o = pool(b, OB_GOP_MAXPOOL, name, x, k, s, p);
  if (o >= 0 && ceil_mode) ob_graph_set_attr_i(b->g, zb_prod(b, o), "ceil_mode", 1);
  zb_reinfer(b, o);
  return o;
}

int zb_avgpool(zb *b, const char *name, int x, int64_t k, int64_t s, int64_t p, bool include_pad) {
  int o = pool(b, OB_GOP_AVGPOOL, name, x, k, s, p);
  if (o >= 0) ob_graph_set_attr_i(b->g, zb_prod(b, o), "count_include_pad", include_pad);
  zb_reinfer(b, o);
  return o;
}

int zb_gap(zb *b, const char *name, int x) { return zb_node1(b, OB_GOP_GLOBALAVGPOOL, name, x); }

int zb_flatten(zb *b, const char *name, int x) {
  int o = zb_node(b, OB_GOP_FLATTEN, name, 1, &x);
  if (o >= 0) ob_graph_set_attr_i(b->g, zb_prod(b, o), "axis", 1);
  zb_reinfer(b, o);
  return o;
}

int zb_linear(zb *b, const char *name, int x, int64_t out) {
  if (b->st) return -1;
  char n1[300];
  int64_t in = zb_dim(b, x, -1);
  double sc = 1.0 / sqrt((double)in);
  int w = zb_param(b, nm2(n1, sizeof n1, name, "weight"), 2, (int64_t[]){out, in}, sc * sqrt(3.0), 0);
  int bi = zb_param(b, nm2(n1, sizeof n1, name, "bias"), 1, &out, sc, 0);
  int o = zb_node(b, OB_GOP_GEMM, name, 3, (int[]){x, w, bi});
  int n = zb_prod(b, o);
  if (n < 0) return -1;
  ob_graph_set_attr_f(b->g, n, "alpha", 1.0);
  ob_graph_set_attr_f(b->g, n, "beta", 1.0);
  ob_graph_set_attr_i(b->g, n, "transB", 1);
  zb_reinfer(b, o);
  return o;
}

int zb_linear3(zb *b, const char *name, int x, int64_t out) {
  if (b->st) return -1;
  char n1[300];
  int64_t in = zb_dim(b, x, -1);
  double sc = 1.0 / sqrt((double)in);
  /* stored [in, out]: what torch.onnx.export writes for x @ W.T */
  int w = zb_param(b, nm2(n1, sizeof n1, name, "weight"), 2, (int64_t[]){in, out}, sc * sqrt(3.0), 0);
  int bi = zb_param(b, nm2(n1, sizeof n1, name, "bias"), 1, &out, sc, 0);
  int m = zb_node2(b, OB_GOP_MATMUL, nm2(n1, sizeof n1, name, "MatMul"), x, w);
  return zb_node2(b, OB_GOP_ADD, nm2(n1, sizeof n1, name, "Add"), m, bi);
}

int zb_concat(zb *b, const char *name, int n, const int *xs, int64_t axis) {
  int o = zb_node(b, OB_GOP_CONCAT, name, n, xs);
  if (o >= 0) ob_graph_set_attr_i(b->g, zb_prod(b, o), "axis", axis);
  zb_reinfer(b, o);
  return o;
}

int zb_reshape(zb *b, const char *name, int x, int nd, const int64_t *shape) {
  char n1[300];
  int s = zb_ints(b, nm2(n1, sizeof n1, name, "shape"), nd, shape);
  return zb_node2(b, OB_GOP_RESHAPE, name, x, s);
}

int zb_transpose(zb *b, const char *name, int x, int nd, const int64_t *perm) {
  int o = zb_node(b, OB_GOP_TRANSPOSE, name, 1, &x);
  if (o >= 0) ob_graph_set_attr_ints(b->g, zb_prod(b, o), "perm", nd, perm);
  zb_reinfer(b, o);
  return o;
}

int zb_layernorm(zb *b, const char *name, int x, double eps) {
  if (b->st) return -1;
  char n1[300];
  int64_t c = zb_dim(b, x, -1);
  int ga = zb_param(b, nm2(n1, sizeof n1, name, "weight"), 1, &c, 0.1, 1.0);
  int be = zb_param(b, nm2(n1, sizeof n1, name, "bias"), 1, &c, 0.1, 0);
  int o = zb_node(b, OB_GOP_LAYERNORM, name, 3, (int[]){x, ga, be});
  int n = zb_prod(b, o);
  if (n < 0) return -1;
  ob_graph_set_attr_i(b->g, n, "axis", -1);
  ob_graph_set_attr_f(b->g, n, "epsilon", eps);
  zb_reinfer(b, o);
  return o;
}

static void out(zb *b, int t) {
  if (!b->st) b->st = ob_graph_mark_output(b->g, t);
}

static int image_input(zb *b, const zoo_args *a) {
  return zb_input(b, "input", OB_F32, 4, (int64_t[]){a->batch, 3, a->size, a->size});
}

/* ---- ResNet ------------------------------------------------------------------------- */
static int conv_bn(zb *b, const char *conv, const char *bn, int x, int64_t c, int64_t k, int64_t s, int64_t p) {
  return zb_bn(b, bn, zb_conv(b, conv, x, c, k, k, s, p, p, 1, false), 1e-5);
}

static int basic_block(zb *b, const char *pre, int x, int64_t planes, int64_t stride) {
  char a1[300], a2[300];
  int64_t in = zb_dim(b, x, 1);
#define P(s) (snprintf(a1, sizeof a1, "%.200s.%.90s", pre, s), a1)
#define Q(s) (snprintf(a2, sizeof a2, "%.200s.%.90s", pre, s), a2)
  int y = zb_relu(b, P("relu"), conv_bn(b, P("conv1"), Q("bn1"), x, planes, 3, stride, 1));
  y = conv_bn(b, P("conv2"), Q("bn2"), y, planes, 3, 1, 1);
  int idt = x;
  if (stride != 1 || in != planes) idt = conv_bn(b, P("downsample.0"), Q("downsample.1"), x, planes, 1, stride, 0);
  y = zb_node2(b, OB_GOP_ADD, P("add"), y, idt);
  return zb_relu(b, P("relu_1"), y);
}

static int bottleneck(zb *b, const char *pre, int x, int64_t planes, int64_t stride) {
  char a1[300], a2[300];
  int64_t in = zb_dim(b, x, 1);
  int y = zb_relu(b, P("relu"), conv_bn(b, P("conv1"), Q("bn1"), x, planes, 1, 1, 0));
  y = zb_relu(b, P("relu_1"), conv_bn(b, P("conv2"), Q("bn2"), y, planes, 3, stride, 1));
  y = conv_bn(b, P("conv3"), Q("bn3"), y, planes * 4, 1, 1, 0);
  int idt = x;
  if (stride != 1 || in != planes * 4) idt = conv_bn(b, P("downsample.0"), Q("downsample.1"), x, planes * 4, 1, stride, 0);
  y = zb_node2(b, OB_GOP_ADD, P("add"), y, idt);
  return zb_relu(b, P("relu_2"), y);
}

void zoo_resnet(zb *b, const zoo_args *a, int depth) {
  static const int k18[4] = {2, 2, 2, 2}, k50[4] = {3, 4, 6, 3};
  const int *blocks = depth == 50 ? k50 : k18;
  int x = image_input(b, a);
  x = zb_relu(b, "relu", conv_bn(b, "conv1", "bn1", x, 64, 7, 2, 3));
  x = zb_maxpool(b, "maxpool", x, 3, 2, 1, false);
  for (int l = 0; l < 4; l++)
    for (int k = 0; k < blocks[l]; k++) {
      char pre[64];
      snprintf(pre, sizeof pre, "layer%d.%d", l + 1, k);
      int64_t planes = 64 << l, stride = (l > 0 && k == 0) ? 2 : 1;
      x = depth == 50 ? bottleneck(b, pre, x, planes, stride) : basic_block(b, pre, x, planes, stride);
    }
  x = zb_flatten(b, "flatten", zb_gap(b, "avgpool", x));
  out(b, zb_linear(b, "fc", x, 1000));
}

/* ---- VGG-16 ---------------------------------------------------------------------------- */
void zoo_vgg16(zb *b, const zoo_args *a) {
  static const int cfg[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  int x = image_input(b, a), idx = 0;
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "features.%d", idx);
    if (!cfg[i]) {
      x = zb_maxpool(b, n1, x, 2, 2, 0, false);
      idx++;
      continue;
    }
    snprintf(n2, sizeof n2, "features.%d", idx + 1);
    x = zb_relu(b, n2, zb_conv(b, n1, x, cfg[i], 3, 3, 1, 1, 1, 1, true));
    idx += 2;
  }
  /* AdaptiveAvgPool2d((7, 7)): the identity at 224x224; a uniform average
   * when the map divides into 7x7; a broadcast of a 1x1 map (small inputs) */
  int64_t h = zb_dim(b, x, 2);
  if (!b->st && h != 7) {
    if (h % 7 == 0) {
      x = zb_avgpool(b, "avgpool", x, h / 7, h / 7, 0, false);
    } else if (h == 1) {
      int s = zb_ints(b, "avgpool.shape", 4, (int64_t[]){1, 1, 7, 7});
      x = zb_node2(b, OB_GOP_EXPAND, "avgpool", x, s);
    } else {
      b->st = ob_fail(b->ctx, OB_ERR_INVALID_ARG,
                      "vgg-16: input size %lld gives a %lldx%lld feature map that AdaptiveAvgPool2d(7) cannot average "
                      "uniformly (use 32, 224 or a multiple of 224)",
                      (long long)a->size, (long long)h, (long long)h);
      return;
    }
  }
  x = zb_flatten(b, "flatten", x);
  x = zb_relu(b, "classifier.1", zb_linear(b, "classifier.0", x, 4096));
  x = zb_relu(b, "classifier.4", zb_linear(b, "classifier.3", x, 4096));
  out(b, zb_linear(b, "classifier.6", x, 1000));
}

/* ---- MobileNetV2 ------------------------------------------------------------------------- */
static int conv_bn_relu6(zb *b, const char *pre, int x, int64_t c, int64_t k, int64_t s, int64_t groups) {
  char n1[300], n2[300], n3[300];
  snprintf(n1, sizeof n1, "%.200s.0", pre);
  snprintf(n2, sizeof n2, "%.200s.1", pre);
  snprintf(n3, sizeof n3, "%.200s.2", pre);
  return zb_relu6(b, n3, zb_bn(b, n2, zb_conv(b, n1, x, c, k, k, s, (k - 1) / 2, (k - 1) / 2, groups, false), 1e-5));
}

void zoo_mobilenet_v2(zb *b, const zoo_args *a) {
  static const int set[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int x = image_input(b, a);
  x = conv_bn_relu6(b, "features.0", x, 32, 3, 2, 1);
  int f = 1;
  for (int i = 0; i < 7; i++)
    for (int k = 0; k < set[i][2]; k++, f++) {
      int64_t in = zb_dim(b, x, 1), hid = in * set[i][0], oc = set[i][1], s = k == 0 ? set[i][3] : 1;
      char pre[64], n1[128], n2[128];
      int y = x, l = 0;
      if (set[i][0] != 1) {
        snprintf(n1, sizeof n1, "features.%d.conv.%d", f, l++);
        y = conv_bn_relu6(b, n1, y, hid, 1, 1, 1);
      }
      snprintf(n1, sizeof n1, "features.%d.conv.%d", f, l++);
      y = conv_bn_relu6(b, n1, y, hid, 3, s, hid);
      snprintf(n1, sizeof n1, "features.%d.conv.%d", f, l);
      snprintf(n2, sizeof n2, "features.%d.conv.%d", f, l + 1);
      y = zb_bn(b, n2, zb_conv(b, n1, y, oc, 1, 1, 1, 0, 0, 1, false), 1e-5);
      if (s == 1 && in == oc) {
        snprintf(pre, sizeof pre, "features.%d.add", f);
        y = zb_node2(b, OB_GOP_ADD, pre, x, y);
      }
      x = y;
    }
  x = conv_bn_relu6(b, "features.18", x, 1280, 1, 1, 1);
  x = zb_flatten(b, "flatten", zb_gap(b, "avgpool", x));
  out(b, zb_linear(b, "classifier.1", x, 1000));
}

/* ---- SqueezeNet 1.1 ------------------------------------------------------------------------- */
static int fire(zb *b, int idx, int x, int64_t sq, int64_t e1, int64_t e3) {
  char n1[64], n2[64];
#define F(s) (snprintf(n1, sizeof n1, "features.%d.%s", idx, s), n1)
#define G(s) (snprintf(n2, sizeof n2, "features.%d.%s", idx, s), n2)
  int s = zb_relu(b, G("squeeze_activation"), zb_conv(b, F("squeeze"), x, sq, 1, 1, 1, 0, 0, 1, true));
  int a = zb_relu(b, G("expand1x1_activation"), zb_conv(b, F("expand1x1"), s, e1, 1, 1, 1, 0, 0, 1, true));
  int c = zb_relu(b, G("expand3x3_activation"), zb_conv(b, F("expand3x3"), s, e3, 3, 3, 1, 1, 1, 1, true));
  return zb_concat(b, F("cat"), 2, (int[]){a, c}, 1);
#undef F
#undef G
}

void zoo_squeezenet11(zb *b, const zoo_args *a) {
  int x = image_input(b, a);
  x = zb_relu(b, "features.1", zb_conv(b, "features.0", x, 64, 3, 3, 2, 0, 0, 1, true));
  x = zb_maxpool(b, "features.2", x, 3, 2, 0, true);
  x = fire(b, 3, x, 16, 64, 64);
  x = fire(b, 4, x, 16, 64, 64);
  x = zb_maxpool(b, "features.5", x, 3, 2, 0, true);
  x = fire(b, 6, x, 32, 128, 128);
  x = fire(b, 7, x, 32, 128, 128);
  x = zb_maxpool(b, "features.8", x, 3, 2, 0, true);
  x = fire(b, 9, x, 48, 192, 192);
  x = fire(b, 10, x, 48, 192, 192);
  x = fire(b, 11, x, 64, 256, 256);
  x = fire(b, 12, x, 64, 256, 256);
  x = zb_relu(b, "classifier.2", zb_conv(b, "classifier.1", x, 1000, 1, 1, 1, 0, 0, 1, true));
  out(b, zb_flatten(b, "flatten", zb_gap(b, "classifier.3", x)));
}

/* ---- Inception v3 --------------------------------------------------------------------------- */
/* BasicConv2d: conv (no bias) + BatchNorm(eps 0.001) + ReLU. */
static int bconv(zb *b, const char *pre, const char *nm, int x, int64_t c, int64_t kh, int64_t kw, int64_t s, int64_t ph,
                 int64_t pw) {
  char n1[300], n2[300], n3[300];
  const char *dot = *pre ? "." : "";
  snprintf(n1, sizeof n1, "%s%s%s.conv", pre, dot, nm);
  snprintf(n2, sizeof n2, "%s%s%s.bn", pre, dot, nm);
  snprintf(n3, sizeof n3, "%s%s%s.relu", pre, dot, nm);
  return zb_relu(b, n3, zb_bn(b, n2, zb_conv(b, n1, x, c, kh, kw, s, ph, pw, 1, false), 1e-3));
}
#define BC(pre, nm, x, c, k, s, p) bconv(b, pre, nm, x, c, k, k, s, p, p)

static int pool_branch(zb *b, const char *pre, int x, int64_t pf) {
  char n1[300];
  snprintf(n1, sizeof n1, "%.200s.avg_pool", pre);
  return BC(pre, "branch_pool", zb_avgpool(b, n1, x, 3, 1, 1, true), pf, 1, 1, 0);
}

static int inc_cat(zb *b, const char *pre, int n, const int *xs) {
  char n1[300];
  snprintf(n1, sizeof n1, "%.200s.cat", pre);
  return zb_concat(b, n1, n, xs, 1);
}

static int inception_a(zb *b, const char *pre, int x, int64_t pf) {
  int b1 = BC(pre, "branch1x1", x, 64, 1, 1, 0);
  int b5 = BC(pre, "branch5x5_2", BC(pre, "branch5x5_1", x, 48, 1, 1, 0), 64, 5, 1, 2);
  int b3 = BC(pre, "branch3x3dbl_1", x, 64, 1, 1, 0);
  b3 = BC(pre, "branch3x3dbl_3", BC(pre, "branch3x3dbl_2", b3, 96, 3, 1, 1), 96, 3, 1, 1);
  return inc_cat(b, pre, 4, (int[]){b1, b5, b3, pool_branch(b, pre, x, pf)});
}

static int inception_b(zb *b, const char *pre, int x) {
  char n1[300];
  int b3 = BC(pre, "branch3x3", x, 384, 3, 2, 0);
  int bd = BC(pre, "branch3x3dbl_1", x, 64, 1, 1, 0);
  bd = BC(pre, "branch3x3dbl_3", BC(pre, "branch3x3dbl_2", bd, 96, 3, 1, 1), 96, 3, 2, 0);
  snprintf(n1, sizeof n1, "%.200s.max_pool", pre);
  return inc_cat(b, pre, 3, (int[]){b3, bd, zb_maxpool(b, n1, x, 3, 2, 0, false)});
}

static int inception_c(zb *b, const char *pre, int x, int64_t c7) {
  int b1 = BC(pre, "branch1x1", x, 192, 1, 1, 0);
  int b7 = BC(pre, "branch7x7_1", x, c7, 1, 1, 0);
  b7 = bconv(b, pre, "branch7x7_2", b7, c7, 1, 7, 1, 0, 3);
  b7 = bconv(b, pre, "branch7x7_3", b7, 192, 7, 1, 1, 3, 0);
  int bd = BC(pre, "branch7x7dbl_1", x, c7, 1, 1, 0);
  bd = bconv(b, pre, "branch7x7dbl_2", bd, c7, 7, 1, 1, 3, 0);
  bd = bconv(b, pre, "branch7x7dbl_3", bd, c7, 1, 7, 1, 0, 3);
  bd = bconv(b, pre, "branch7x7dbl_4", bd, c7, 7, 1, 1, 3, 0);
  bd = bconv(b, pre, "branch7x7dbl_5", bd, 192, 1, 7, 1, 0, 3);
  return inc_cat(b, pre, 4, (int[]){b1, b7, bd, pool_branch(b, pre, x, 192)});
}

static int inception_d(zb *b, const char *pre, int x) {
  char n1[300];
  int b3 = BC(pre, "branch3x3_2", BC(pre, "branch3x3_1", x, 192, 1, 1, 0), 320, 3, 2, 0);
  int b7 = BC(pre, "branch7x7x3_1", x, 192, 1, 1, 0);
  b7 = bconv(b, pre, "branch7x7x3_2", b7, 192, 1, 7, 1, 0, 3);
  b7 = bconv(b, pre, "branch7x7x3_3", b7, 192, 7, 1, 1, 3, 0);
  b7 = BC(pre, "branch7x7x3_4", b7, 192, 3, 2, 0);
  snprintf(n1, sizeof n1, "%.200s.max_pool", pre);
  return inc_cat(b, pre, 3, (int[]){b3, b7, zb_maxpool(b, n1, x, 3, 2, 0, false)});
}

static int inception_e(zb *b, const char *pre, int x) {
  char n1[300];
  int b1 = BC(pre, "branch1x1", x, 320, 1, 1, 0);
  int b3 = BC(pre, "branch3x3_1", x, 384, 1, 1, 0);
  int b3a = bconv(b, pre, "branch3x3_2a", b3, 384, 1, 3, 1, 0, 1);
  int b3b = bconv(b, pre, "branch3x3_2b", b3, 384, 3, 1, 1, 1, 0);
  snprintf(n1, sizeof n1, "%.200s.cat_3x3", pre);
  b3 = zb_concat(b, n1, 2, (int[]){b3a, b3b}, 1);
  int bd = BC(pre, "branch3x3dbl_2", BC(pre, "branch3x3dbl_1", x, 448, 1, 1, 0), 384, 3, 1, 1);
  int bda = bconv(b, pre, "branch3x3dbl_3a", bd, 384, 1, 3, 1, 0, 1);
  int bdb = bconv(b, pre, "branch3x3dbl_3b", bd, 384, 3, 1, 1, 1, 0);
  snprintf(n1, sizeof n1, "%.200s.cat_dbl", pre);
  bd = zb_concat(b, n1, 2, (int[]){bda, bdb}, 1);
  return inc_cat(b, pre, 4, (int[]){b1, b3, bd, pool_branch(b, pre, x, 192)});
}

void zoo_inception_v3(zb *b, const zoo_args *a) {
  int x = image_input(b, a);
  x = BC("", "Conv2d_1a_3x3", x, 32, 3, 2, 0);
  x = BC("", "Conv2d_2a_3x3", x, 32, 3, 1, 0);
  x = BC("", "Conv2d_2b_3x3", x, 64, 3, 1, 1);
  x = zb_maxpool(b, "maxpool1", x, 3, 2, 0, false);
  x = BC("", "Conv2d_3b_1x1", x, 80, 1, 1, 0);
  x = BC("", "Conv2d_4a_3x3", x, 192, 3, 1, 0);
  x = zb_maxpool(b, "maxpool2", x, 3, 2, 0, false);
  x = inception_a(b, "Mixed_5b", x, 32);
  x = inception_a(b, "Mixed_5c", x, 64);
  x = inception_a(b, "Mixed_5d", x, 64);
  x = inception_b(b, "Mixed_6a", x);
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  x = inception_d(b, "Mixed_7a", x);
  x = inception_e(b, "Mixed_7b", x);
  x = inception_e(b, "Mixed_7c", x);
  x = zb_flatten(b, "flatten", zb_gap(b, "avgpool", x));
  out(b, zb_linear(b, "fc", x, 1000));
}

/* ---- a small CNN for quick runs ------------------------------------------------------------- */
void zoo_simple(zb *b, const zoo_args *a) {
  int x = image_input(b, a);
  x = zb_relu(b, "relu1", zb_conv(b, "conv1", x, 16, 3, 3, 1, 1, 1, 1, true));
  x = zb_maxpool(b, "pool1", x, 2, 2, 0, false);
  x = zb_relu(b, "relu2", zb_bn(b, "bn2", zb_conv(b, "conv2", x, 32, 3, 3, 1, 1, 1, 1, false), 1e-5));
  int y = zb_relu(b, "relu3", zb_bn(b, "bn3", zb_conv(b, "conv3", x, 32, 3, 3, 1, 1, 1, 1, false), 1e-5));
  x = zb_node2(b, OB_GOP_ADD, "add", x, y);
  x = zb_flatten(b, "flatten", zb_gap(b, "gap", x));
  out(b, zb_linear(b, "fc", x, 10));
}
