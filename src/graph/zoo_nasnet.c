/* zoo_nasnet.c: NASNet-A Large (6 @ 4032) at 331x331, the network IOS
 * (MLSys 2021) schedules as nasnet_large (python/models/nasnet.py of
 * mit-han-lab/inter-operator-scheduler: stem_filters 96, filters 168, two
 * stem cells, 3 x (a first cell, 5 normal cells) with two reduction cells
 * between). The cells follow the paper (Zoph et al., "Learning Transferable
 * Architectures for Scalable Image Recognition", 2018) as ported by
 * Cadene's pretrainedmodels NASNetALarge, module names included, so the
 * multiply-adds and parameters are the published ones (23.8 G, 88.9 M).
 * IOS's own file simplifies a few cells (a normal cell's output omits
 * x_left, CellStem1 adds its two strided paths where the paper concatenates
 * them, FirstCell's comb_iter_0_right reads x_right and CellStem0's
 * comb_iter_3 adds comb_iter_0); those are not copied.
 *
 * A separable branch is ReLU, depthwise kxk conv, 1x1 conv, BatchNorm(eps
 * 0.001), twice. The strided "path" of a first cell is a 1x1 stride-2 conv
 * (AvgPool2d(1, 2) then a 1x1 conv computes the same) and, for the second
 * half, the same on the input shifted by one pixel (Slice from 1, then a
 * zero pad at the bottom and right). The first reduction cell pads as
 * TensorFlow's SAME does (the port's ZeroPad2d/slice pairs): the extra row
 * and column go at the bottom and right. Pools are count_include_pad=False. */
#include <stdio.h>

#include "graph/zoo_impl.h"

#define NM(buf, pre, s) (snprintf(buf, sizeof buf, "%.200s.%.90s", pre, s), buf)

/* Conv without bias and with explicit pads [t, l, b, r]. */
static int conv_p(zb *b, const char *name, int x, int64_t cout, int64_t k, int64_t s, const int64_t pads[4],
                  int64_t groups) {
  int o = zb_conv(b, name, x, cout, k, k, s, pads[0], pads[1], groups, false);
  int n = zb_prod(b, o);
  if (n < 0) return -1;
  ob_graph_set_attr_ints(b->g, n, "pads", 4, pads);
  zb_reinfer(b, o);
  return o;
}

/* SeparableConv2d: depthwise kxk (stride s, pads) then pointwise 1x1. */
static int sep_conv(zb *b, const char *pre, int x, int64_t cout, int64_t k, int64_t s, const int64_t pads[4]) {
  char n1[300];
  int64_t cin = zb_dim(b, x, 1);
  int y = conv_p(b, NM(n1, pre, "depthwise_conv2d"), x, cin, k, s, pads, cin);
  return conv_p(b, NM(n1, pre, "pointwise_conv2d"), y, cout, 1, 1, (int64_t[]){0, 0, 0, 0}, 1);
}

/* TensorFlow SAME padding of a kxk window at stride s on n pixels. */
static void same_pads(int64_t n, int64_t k, int64_t s, int64_t out[4]) {
  int64_t o = (n + s - 1) / s, tot = (o - 1) * s + k - n;
  if (tot < 0) tot = 0;
  out[0] = out[1] = tot / 2;
  out[2] = out[3] = tot - tot / 2;
}

/* BranchSeparables (stem: the first separable conv already widens to cout;
 * same: SAME padding for the strided conv, the reduction cell's form). */
static int branch_sep(zb *b, const char *pre, int x, int64_t cout, int64_t k, int64_t s, bool stem, bool same) {
  char n1[300];
  int64_t cin = zb_dim(b, x, 1), p = k / 2;
  int64_t sym[4] = {p, p, p, p}, pads[4] = {p, p, p, p};
  if (same && s > 1) same_pads(zb_dim(b, x, 2), k, s, pads);
  int y = zb_relu(b, NM(n1, pre, "relu"), x);
  y = sep_conv(b, NM(n1, pre, "separable_1"), y, stem ? cout : cin, k, s, pads);
  y = zb_bn(b, NM(n1, pre, "bn_sep_1"), y, 1e-3);
  y = zb_relu(b, NM(n1, pre, "relu1"), y);
  y = sep_conv(b, NM(n1, pre, "separable_2"), y, cout, k, 1, sym);
  return zb_bn(b, NM(n1, pre, "bn_sep_2"), y, 1e-3);
}

/* ReLU, 1x1 conv, BatchNorm: conv_1x1 and conv_prev_1x1. */
static int relu_conv_bn(zb *b, const char *pre, int x, int64_t cout) {
  char n1[300];
  int y = zb_relu(b, NM(n1, pre, "relu"), x);
  y = zb_conv(b, NM(n1, pre, "conv"), y, cout, 1, 1, 1, 0, 0, 1, false);
  return zb_bn(b, NM(n1, pre, "bn"), y, 1e-3);
}

/* The two strided paths of a first cell (and of CellStem1) over ReLU(x),
 * concatenated and batch-normed: out/2 channels each. */
static int paths(zb *b, const char *pre, int x, int64_t out) {
  char n1[300], n2[300];
  int r = zb_relu(b, NM(n1, pre, "relu"), x);
  int p1 = zb_conv(b, NM(n1, pre, "path_1.conv"), r, out / 2, 1, 1, 2, 0, 0, 1, false);
  int64_t h = zb_dim(b, r, 2), w = zb_dim(b, r, 3);
  snprintf(n2, sizeof n2, "%.200s.path_2.shift", pre);
  int st = zb_ints(b, "const.one_one", 2, (int64_t[]){1, 1});
  int en = zb_ints(b, NM(n1, n2, "ends"), 2, (int64_t[]){h, w});
  int ax = zb_ints(b, "const.axes23", 2, (int64_t[]){2, 3});
  int sh = zb_node(b, OB_GOP_SLICE, n2, 4, (int[]){r, st, en, ax});
  zb_reinfer(b, sh);
  int p2 = conv_p(b, NM(n1, pre, "path_2.conv"), sh, out / 2, 1, 2, (int64_t[]){0, 0, 1, 1}, 1);
  int c = zb_concat(b, NM(n1, pre, "paths.cat"), 2, (int[]){p1, p2}, 1);
  return zb_bn(b, NM(n1, pre, "final_path_bn"), c, 1e-3);
}

static int add2(zb *b, const char *pre, const char *what, int x, int y) {
  char n1[300];
  return zb_node2(b, OB_GOP_ADD, NM(n1, pre, what), x, y);
}

static int pool(zb *b, const char *pre, const char *what, bool max, int x, int64_t s, const int64_t *pads) {
  char n1[300];
  int o = max ? zb_maxpool(b, NM(n1, pre, what), x, 3, s, 1, false) : zb_avgpool(b, NM(n1, pre, what), x, 3, s, 1, false);
  if (pads && o >= 0) {
    ob_graph_set_attr_ints(b->g, zb_prod(b, o), "pads", 4, pads);
    zb_reinfer(b, o);
  }
  return o;
}

static int cat(zb *b, const char *pre, int n, const int *xs) {
  char n1[300];
  return zb_concat(b, NM(n1, pre, "cat"), n, xs, 1);
}

#define BR(what, x, c, k, s) (snprintf(br, sizeof br, "%.200s.%s", pre, what), branch_sep(b, br, x, c, k, s, false, false))

static int cell_stem0(zb *b, int x, int64_t nf) {
  const char *pre = "cell_stem_0";
  char n1[300], br[300];
  int x1 = relu_conv_bn(b, NM(n1, pre, "conv_1x1"), x, nf);
  int c0l = BR("comb_iter_0_left", x1, nf, 5, 2);
  snprintf(br, sizeof br, "%s.comb_iter_0_right", pre);
  int c0r = branch_sep(b, br, x, nf, 7, 2, true, false);
  int c0 = add2(b, pre, "comb_iter_0", c0l, c0r);
  int c1l = pool(b, pre, "comb_iter_1_left", true, x1, 2, NULL);
  snprintf(br, sizeof br, "%s.comb_iter_1_right", pre);
  int c1 = add2(b, pre, "comb_iter_1", c1l, branch_sep(b, br, x, nf, 7, 2, true, false));
  int c2l = pool(b, pre, "comb_iter_2_left", false, x1, 2, NULL);
  snprintf(br, sizeof br, "%s.comb_iter_2_right", pre);
  int c2 = add2(b, pre, "comb_iter_2", c2l, branch_sep(b, br, x, nf, 5, 2, true, false));
  int c3 = add2(b, pre, "comb_iter_3", pool(b, pre, "comb_iter_3_right", false, c0, 1, NULL), c1);
  int c4 = add2(b, pre, "comb_iter_4", BR("comb_iter_4_left", c0, nf, 3, 1), pool(b, pre, "comb_iter_4_right", true, x1, 2, NULL));
  return cat(b, pre, 4, (int[]){c1, c2, c3, c4});
}

static int cell_stem1(zb *b, int x_conv0, int x_stem0, int64_t nf) {
  const char *pre = "cell_stem_1";
  char n1[300], br[300];
  int xl = relu_conv_bn(b, NM(n1, pre, "conv_1x1"), x_stem0, nf);
  int xr = paths(b, pre, x_conv0, nf);
  int c0 = add2(b, pre, "comb_iter_0", BR("comb_iter_0_left", xl, nf, 5, 2), BR("comb_iter_0_right", xr, nf, 7, 2));
  int c1 = add2(b, pre, "comb_iter_1", pool(b, pre, "comb_iter_1_left", true, xl, 2, NULL), BR("comb_iter_1_right", xr, nf, 7, 2));
  int c2 = add2(b, pre, "comb_iter_2", pool(b, pre, "comb_iter_2_left", false, xl, 2, NULL), BR("comb_iter_2_right", xr, nf, 5, 2));
  int c3 = add2(b, pre, "comb_iter_3", pool(b, pre, "comb_iter_3_right", false, c0, 1, NULL), c1);
  int c4 = add2(b, pre, "comb_iter_4", BR("comb_iter_4_left", c0, nf, 3, 1), pool(b, pre, "comb_iter_4_right", true, xl, 2, NULL));
  return cat(b, pre, 4, (int[]){c1, c2, c3, c4});
}

/* FirstCell (first: x_left from the strided paths of x_prev) and NormalCell. */
static int normal_cell(zb *b, const char *pre, int x, int x_prev, int64_t out_l, int64_t out_r, bool first) {
  char n1[300], br[300];
  int xl = first ? paths(b, pre, x_prev, 2 * out_l) : relu_conv_bn(b, NM(n1, pre, "conv_prev_1x1"), x_prev, out_l);
  int xr = relu_conv_bn(b, NM(n1, pre, "conv_1x1"), x, out_r);
  int64_t cl = first ? out_r : out_l;
  int c0 = add2(b, pre, "comb_iter_0", BR("comb_iter_0_left", xr, out_r, 5, 1), BR("comb_iter_0_right", xl, cl, 3, 1));
  int c1 = add2(b, pre, "comb_iter_1", BR("comb_iter_1_left", xl, cl, 5, 1), BR("comb_iter_1_right", xl, cl, 3, 1));
  int c2 = add2(b, pre, "comb_iter_2", pool(b, pre, "comb_iter_2_left", false, xr, 1, NULL), xl);
  int c3 = add2(b, pre, "comb_iter_3", pool(b, pre, "comb_iter_3_left", false, xl, 1, NULL),
                pool(b, pre, "comb_iter_3_right", false, xl, 1, NULL));
  int c4 = add2(b, pre, "comb_iter_4", BR("comb_iter_4_left", xr, out_r, 3, 1), xr);
  return cat(b, pre, 6, (int[]){xl, c0, c1, c2, c3, c4});
}

/* ReductionCell0 (same: TensorFlow SAME padding) and ReductionCell1. */
static int reduction_cell(zb *b, const char *pre, int x, int x_prev, int64_t out_l, int64_t out_r, bool same) {
  char n1[300], br[300];
  int xl = relu_conv_bn(b, NM(n1, pre, "conv_prev_1x1"), x_prev, out_l);
  int xr = relu_conv_bn(b, NM(n1, pre, "conv_1x1"), x, out_r);
  int64_t pp[4], *pads = NULL;
  if (same) {
    same_pads(zb_dim(b, xr, 2), 3, 2, pp);
    pads = pp;
  }
#define RB(what, x, k, s) (snprintf(br, sizeof br, "%.200s.%s", pre, what), branch_sep(b, br, x, out_r, k, s, false, same))
  int c0 = add2(b, pre, "comb_iter_0", RB("comb_iter_0_left", xr, 5, 2), RB("comb_iter_0_right", xl, 7, 2));
  int c1 = add2(b, pre, "comb_iter_1", pool(b, pre, "comb_iter_1_left", true, xr, 2, pads), RB("comb_iter_1_right", xl, 7, 2));
  int c2 = add2(b, pre, "comb_iter_2", pool(b, pre, "comb_iter_2_left", false, xr, 2, pads), RB("comb_iter_2_right", xl, 5, 2));
  int c3 = add2(b, pre, "comb_iter_3", pool(b, pre, "comb_iter_3_right", false, c0, 1, NULL), c1);
  int c4 = add2(b, pre, "comb_iter_4", RB("comb_iter_4_left", c0, 3, 1), pool(b, pre, "comb_iter_4_right", true, xr, 2, pads));
#undef RB
  return cat(b, pre, 4, (int[]){c1, c2, c3, c4});
}

void zoo_nasnet_large(zb *b, const zoo_args *a) {
  const int64_t stem = 96, f = 168;
  int x = zb_input(b, "input", OB_F32, 4, (int64_t[]){a->batch, 3, a->size, a->size});
  int conv0 = zb_bn(b, "conv0.bn", zb_conv(b, "conv0.conv", x, stem, 3, 3, 2, 0, 0, 1, false), 1e-3);
  int s0 = cell_stem0(b, conv0, f / 4);
  int s1 = cell_stem1(b, conv0, s0, f / 2);
  /* (x, x_prev) of each cell, as NASNetALarge.features wires them */
  int prev = s0, cur = s1, cell = 0;
  for (int blk = 0; blk < 3; blk++) {
    int64_t m = (int64_t)1 << blk; /* channel multiplier of this resolution */
    char pre[64];
    if (blk > 0) {
      snprintf(pre, sizeof pre, "reduction_cell_%d", blk - 1);
      int r = reduction_cell(b, pre, cur, prev, 2 * f * m / 2, 2 * f * m / 2, blk == 1);
      /* the first cell after a reduction reads it and, as x_prev, the
       * cell before the last normal one (prev stays) */
      cur = r;
    }
    for (int k = 0; k < 6; k++, cell++) {
      snprintf(pre, sizeof pre, "cell_%d", cell);
      int y = normal_cell(b, pre, cur, prev, k == 0 ? f * m / 2 : f * m, f * m, k == 0);
      prev = cur;
      cur = y;
    }
  }
  x = zb_relu(b, "relu", cur);
  x = zb_flatten(b, "flatten", zb_gap(b, "avg_pool", x));
  x = zb_linear(b, "last_linear", x, 1000);
  if (!b->st) b->st = ob_graph_mark_output(b->g, x);
}
