/* zoo_yolo.c: YOLOv5s, release v6.0 (ultralytics/yolov5 models/yolov5s.yaml,
 * depth 0.33, width 0.50): Conv = conv (no bias) + BatchNorm(eps 0.001) +
 * SiLU (exported as Sigmoid and Mul), C3 blocks, SPPF, the PANet head with
 * nearest upsampling (Resize) and Concat, and Detect with its inference
 * decoding (sigmoid, grid and anchor arithmetic) into [B, anchors, 85] as
 * the v6.0 ONNX export writes it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/zoo_impl.h"

static int silu(zb *b, const char *name, int x) {
  char n1[300];
  snprintf(n1, sizeof n1, "%.200s.sigmoid", name);
  int s = zb_node1(b, OB_GOP_SIGMOID, n1, x);
  return zb_node2(b, OB_GOP_MUL, name, x, s);
}

/* models/common.py Conv(c1, c2, k, s, p = k // 2). */
static int yconv_p(zb *b, const char *pre, int x, int64_t c2, int64_t k, int64_t s, int64_t p) {
  char n1[300], n2[300], n3[300];
  snprintf(n1, sizeof n1, "%.200s.conv", pre);
  snprintf(n2, sizeof n2, "%.200s.bn", pre);
  snprintf(n3, sizeof n3, "%.200s.act", pre);
  return silu(b, n3, zb_bn(b, n2, zb_conv(b, n1, x, c2, k, k, s, p, p, 1, false), 1e-3));
}

static int yconv(zb *b, const char *pre, int x, int64_t c2, int64_t k, int64_t s) {
  return yconv_p(b, pre, x, c2, k, s, k / 2);
}

static int bottleneck(zb *b, const char *pre, int x, int64_t c2, bool shortcut) {
  char n1[300];
  snprintf(n1, sizeof n1, "%.200s.cv1", pre);
  int y = yconv(b, n1, x, c2, 1, 1);
  snprintf(n1, sizeof n1, "%.200s.cv2", pre);
  y = yconv(b, n1, y, c2, 3, 1);
  if (shortcut && zb_dim(b, x, 1) == c2) {
    snprintf(n1, sizeof n1, "%.200s.add", pre);
    y = zb_node2(b, OB_GOP_ADD, n1, x, y);
  }
  return y;
}

static int c3(zb *b, int idx, int x, int64_t c2, int n, bool shortcut) {
  char pre[64], n1[128];
  int64_t c_ = c2 / 2;
  snprintf(pre, sizeof pre, "model.%d", idx);
  snprintf(n1, sizeof n1, "%.200s.cv1", pre);
  int a = yconv(b, n1, x, c_, 1, 1);
  for (int i = 0; i < n; i++) {
    snprintf(n1, sizeof n1, "%.200s.m.%d", pre, i);
    a = bottleneck(b, n1, a, c_, shortcut);
  }
  snprintf(n1, sizeof n1, "%.200s.cv2", pre);
  int c = yconv(b, n1, x, c_, 1, 1);
  snprintf(n1, sizeof n1, "%.200s.cat", pre);
  int cat = zb_concat(b, n1, 2, (int[]){a, c}, 1);
  snprintf(n1, sizeof n1, "%.200s.cv3", pre);
  return yconv(b, n1, cat, c2, 1, 1);
}

static int sppf(zb *b, int x, int64_t c2) {
  int64_t c_ = zb_dim(b, x, 1) / 2;
  x = yconv(b, "model.9.cv1", x, c_, 1, 1);
  int y1 = zb_maxpool(b, "model.9.m", x, 5, 1, 2, false);
  int y2 = zb_maxpool(b, "model.9.m_1", y1, 5, 1, 2, false);
  int y3 = zb_maxpool(b, "model.9.m_2", y2, 5, 1, 2, false);
  int cat = zb_concat(b, "model.9.cat", 4, (int[]){x, y1, y2, y3}, 1);
  return yconv(b, "model.9.cv2", cat, c2, 1, 1);
}

static int upsample(zb *b, const char *name, int x) {
  char n1[300];
  snprintf(n1, sizeof n1, "%.200s.scales", name);
  int sc = zb_const_f(b, n1, 1, (int64_t[]){4}, (const float[]){1, 1, 2, 2});
  int o = zb_node(b, OB_GOP_RESIZE, name, 3, (int[]){x, -1, sc});
  int n = zb_prod(b, o);
  if (n < 0) return -1;
  ob_graph_set_attr_s(b->g, n, "mode", "nearest");
  ob_graph_set_attr_s(b->g, n, "coordinate_transformation_mode", "asymmetric");
  ob_graph_set_attr_s(b->g, n, "nearest_mode", "floor");
  zb_reinfer(b, o);
  return o;
}

static int slice5(zb *b, const char *name, int x, int64_t from, int64_t to) {
  char n1[300];
  snprintf(n1, sizeof n1, "const.slice%lld", (long long)from);
  int s = zb_ints(b, n1, 1, &from);
  snprintf(n1, sizeof n1, "const.slice%lld", (long long)to);
  int e = zb_ints(b, n1, 1, &to);
  int ax = zb_ints(b, "const.axis4", 1, (int64_t[]){4});
  int o = zb_node(b, OB_GOP_SLICE, name, 4, (int[]){x, s, e, ax});
  zb_reinfer(b, o);
  return o;
}

/* One Detect level: conv to 3 x 85 channels and the v6.0 decoding. */
static int detect_level(zb *b, int i, int x, int64_t stride, const float anchors[6]) {
  char pre[64], n1[128];
  snprintf(pre, sizeof pre, "model.24.m.%d", i);
  int64_t B = zb_dim(b, x, 0), ny = zb_dim(b, x, 2), nx = zb_dim(b, x, 3);
  x = zb_conv(b, pre, x, 255, 1, 1, 1, 0, 0, 1, true);
  snprintf(n1, sizeof n1, "%.200s.view", pre);
  x = zb_reshape(b, n1, x, 5, (int64_t[]){B, 3, 85, ny, nx});
  snprintf(n1, sizeof n1, "%.200s.permute", pre);
  x = zb_transpose(b, n1, x, 5, (int64_t[]){0, 1, 3, 4, 2});
  snprintf(n1, sizeof n1, "%.200s.sigmoid", pre);
  int y = zb_node1(b, OB_GOP_SIGMOID, n1, x);
  float *grid = malloc(sizeof(float) * (size_t)(ny * nx > 0 ? ny * nx * 2 : 1));
  if (!grid) {
    if (!b->st) b->st = ob_fail(b->ctx, OB_ERR_NOMEM, "out of memory");
    return -1;
  }
  for (int64_t r = 0; r < ny; r++)
    for (int64_t c = 0; c < nx; c++) grid[(r * nx + c) * 2] = (float)c, grid[(r * nx + c) * 2 + 1] = (float)r;
  snprintf(n1, sizeof n1, "model.24.grid.%d", i);
  int g = zb_const_f(b, n1, 5, (int64_t[]){1, 1, ny, nx, 2}, grid);
  free(grid);
  snprintf(n1, sizeof n1, "model.24.anchor_grid.%d", i);
  int ag = zb_const_f(b, n1, 5, (int64_t[]){1, 3, 1, 1, 2}, anchors);
  char cs[64];
  snprintf(cs, sizeof cs, "const.stride%lld", (long long)stride);
  int st = zb_scalar(b, cs, (float)stride);
  int two = zb_scalar(b, "const.two", 2.0f), half = zb_scalar(b, "const.half", 0.5f);
  /* xy = (y[..., 0:2] * 2 - 0.5 + grid) * stride */
  snprintf(n1, sizeof n1, "%.200s.xy", pre);
  int xy = slice5(b, n1, y, 0, 2);
  snprintf(n1, sizeof n1, "%.200s.xy.mul2", pre);
  xy = zb_node2(b, OB_GOP_MUL, n1, xy, two);
  snprintf(n1, sizeof n1, "%.200s.xy.sub", pre);
  xy = zb_node2(b, OB_GOP_SUB, n1, xy, half);
  snprintf(n1, sizeof n1, "%.200s.xy.grid", pre);
  xy = zb_node2(b, OB_GOP_ADD, n1, xy, g);
  snprintf(n1, sizeof n1, "%.200s.xy.stride", pre);
  xy = zb_node2(b, OB_GOP_MUL, n1, xy, st);
  /* wh = (y[..., 2:4] * 2) ** 2 * anchor_grid */
  snprintf(n1, sizeof n1, "%.200s.wh", pre);
  int wh = slice5(b, n1, y, 2, 4);
  snprintf(n1, sizeof n1, "%.200s.wh.mul2", pre);
  wh = zb_node2(b, OB_GOP_MUL, n1, wh, two);
  snprintf(n1, sizeof n1, "%.200s.wh.pow", pre);
  wh = zb_node2(b, OB_GOP_POW, n1, wh, two);
  snprintf(n1, sizeof n1, "%.200s.wh.anchor", pre);
  wh = zb_node2(b, OB_GOP_MUL, n1, wh, ag);
  snprintf(n1, sizeof n1, "%.200s.conf", pre);
  int conf = slice5(b, n1, y, 4, 85);
  snprintf(n1, sizeof n1, "%.200s.cat", pre);
  int cat = zb_concat(b, n1, 3, (int[]){xy, wh, conf}, 4);
  snprintf(n1, sizeof n1, "%.200s.out", pre);
  return zb_reshape(b, n1, cat, 3, (int64_t[]){B, 3 * ny * nx, 85});
}

void zoo_yolov5s(zb *b, const zoo_args *a) {
  if (a->size % 32) {
    b->st = ob_fail(b->ctx, OB_ERR_INVALID_ARG, "yolov5s: input size %lld is not a multiple of 32", (long long)a->size);
    return;
  }
  int x = zb_input(b, "images", OB_F32, 4, (int64_t[]){a->batch, 3, a->size, a->size});
  x = yconv_p(b, "model.0", x, 32, 6, 2, 2); /* the 6x6 stem pads 2 */
  x = yconv(b, "model.1", x, 64, 3, 2);
  x = c3(b, 2, x, 64, 1, true);
  x = yconv(b, "model.3", x, 128, 3, 2);
  int p3 = c3(b, 4, x, 128, 2, true);
  x = yconv(b, "model.5", p3, 256, 3, 2);
  int p4 = c3(b, 6, x, 256, 3, true);
  x = yconv(b, "model.7", p4, 512, 3, 2);
  x = c3(b, 8, x, 512, 1, true);
  x = sppf(b, x, 512);
  int h10 = yconv(b, "model.10", x, 256, 1, 1);
  x = upsample(b, "model.11", h10);
  x = zb_concat(b, "model.12", 2, (int[]){x, p4}, 1);
  x = c3(b, 13, x, 256, 1, false);
  int h14 = yconv(b, "model.14", x, 128, 1, 1);
  x = upsample(b, "model.15", h14);
  x = zb_concat(b, "model.16", 2, (int[]){x, p3}, 1);
  int o17 = c3(b, 17, x, 128, 1, false);
  x = yconv(b, "model.18", o17, 128, 3, 2);
  x = zb_concat(b, "model.19", 2, (int[]){x, h14}, 1);
  int o20 = c3(b, 20, x, 256, 1, false);
  x = yconv(b, "model.21", o20, 256, 3, 2);
  x = zb_concat(b, "model.22", 2, (int[]){x, h10}, 1);
  int o23 = c3(b, 23, x, 512, 1, false);
  static const float anchors[3][6] = {{10, 13, 16, 30, 33, 23}, {30, 61, 62, 45, 59, 119}, {116, 90, 156, 198, 373, 326}};
  int d0 = detect_level(b, 0, o17, 8, anchors[0]);
  int d1 = detect_level(b, 1, o20, 16, anchors[1]);
  int d2 = detect_level(b, 2, o23, 32, anchors[2]);
  int y = zb_concat(b, "model.24.cat", 3, (int[]){d0, d1, d2}, 1);
  if (!b->st) b->st = ob_graph_mark_output(b->g, y);
}
