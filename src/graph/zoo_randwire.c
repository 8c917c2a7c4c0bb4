/* zoo_randwire.c: RandWire-WS in the "large" form IOS (MLSys 2021)
 * evaluates: python/ios/models/randwire.py randwire_large() of
 * mit-han-lab/inter-operator-scheduler, which is the regular regime of Xie
 * et al., "Exploring Randomly Wired Neural Networks" (ICCV 2019) with
 * C = 154: a 3x3 stride-2 conv to C/2 channels, then four random stages of
 * 16, 32, 32 and 32 nodes with C, 2C, 4C and 8C channels, then a 1x1 conv
 * to 1280, global pooling and the classifier.
 *
 * The four stages are the Watts-Strogatz graphs (k 4, p 0.75) IOS
 * generated once and published as
 *   python/models/randwire_graphs/generated/ws-16-4-0.75-2.txt
 *   python/ios/models/randwire_graphs/generated/ws-32-4-0.75-3.txt
 *   python/models/randwire_graphs/generated/ws-32-4-0.75-4.txt
 *   python/models/randwire_graphs/generated/ws-32-4-0.75-5.txt
 * whose edge lists are copied below as they are (not drawn again), so the
 * graph is the one IOS's DP and measurements ran on.
 *
 * A node sums its predecessors' outputs (a node without predecessors reads
 * the stage input, at stride 2) and applies ReLU, a 3x3 depthwise conv and
 * a 1x1 conv, then BatchNorm: the paper's ReLU-SepConv-BN triplet, which
 * IOS keeps in inference form (the batch norm folded into the conv, as the
 * passes do here). The stage output is the sum of the nodes without
 * successors. Nodes are built in IOS's order: a stack of ready nodes, the
 * last pushed first. Weights are random from the builder's generator. */
#include <stdio.h>

#include "graph/zoo_impl.h"

typedef struct rw_graph {
  int n, m;
  const unsigned char (*e)[2];
} rw_graph;

/* ws-16-4-0.75-2.txt */
static const unsigned char k_ws16_2[][2] = {
    {0, 6},   {0, 7},   {0, 9},   {1, 6},   {1, 7},   {1, 15},  {2, 6},   {2, 10},  {2, 11},  {3, 9},   {3, 13},
    {4, 6},   {4, 9},   {4, 13},  {4, 14},  {4, 15},  {5, 8},   {5, 10},  {5, 15},  {6, 8},   {6, 9},   {6, 12},
    {7, 11},  {7, 15},  {8, 11},  {9, 11},  {10, 14}, {11, 14}, {12, 14}, {13, 14}, {13, 15}, {14, 15}};
/* ws-32-4-0.75-3.txt */
static const unsigned char k_ws32_3[][2] = {
    {0, 2},   {0, 13},  {0, 25},  {0, 30},  {1, 8},   {1, 20},  {1, 22},  {2, 3},   {2, 16},  {2, 24},  {2, 30},
    {3, 6},   {3, 7},   {3, 26},  {4, 12},  {4, 22},  {5, 15},  {5, 21},  {5, 27},  {6, 11},  {6, 21},  {6, 31},
    {7, 8},   {7, 9},   {7, 15},  {8, 23},  {8, 27},  {9, 10},  {9, 11},  {9, 19},  {10, 12}, {10, 30}, {11, 13},
    {11, 15}, {11, 17}, {11, 28}, {12, 14}, {12, 26}, {12, 31}, {13, 14}, {13, 16}, {13, 21}, {13, 31}, {14, 16},
    {14, 28}, {14, 29}, {15, 19}, {15, 22}, {16, 18}, {17, 18}, {17, 19}, {18, 24}, {18, 31}, {20, 21}, {20, 22},
    {21, 23}, {21, 26}, {22, 31}, {24, 31}, {25, 26}, {26, 31}, {27, 29}, {29, 30}, {29, 31}};
/* ws-32-4-0.75-4.txt */
static const unsigned char k_ws32_4[][2] = {
    {0, 9},   {0, 11},  {0, 14},  {0, 17},  {0, 31},  {1, 2},   {1, 3},   {1, 31},  {2, 4},   {2, 11},  {2, 12},
    {2, 14},  {2, 30},  {3, 4},   {3, 25},  {4, 9},   {4, 20},  {4, 29},  {5, 6},   {5, 27},  {6, 7},   {6, 21},
    {6, 27},  {7, 30},  {7, 31},  {8, 10},  {8, 25},  {9, 10},  {9, 14},  {10, 11}, {10, 16}, {10, 22}, {10, 28},
    {11, 16}, {11, 24}, {12, 13}, {12, 14}, {12, 15}, {12, 16}, {13, 14}, {13, 22}, {13, 26}, {14, 23}, {15, 29},
    {16, 21}, {17, 26}, {18, 19}, {18, 20}, {19, 22}, {19, 27}, {20, 22}, {22, 25}, {22, 30}, {23, 27}, {24, 25},
    {24, 26}, {25, 28}, {26, 28}, {27, 28}, {27, 29}, {28, 29}, {29, 30}, {29, 31}, {30, 31}};
/* ws-32-4-0.75-5.txt */
static const unsigned char k_ws32_5[][2] = {
    {0, 17},  {0, 20},  {0, 24},  {1, 10},  {1, 22},  {1, 26},  {1, 29},  {2, 19},  {2, 22},  {2, 28},  {3, 6},
    {3, 7},   {3, 8},   {3, 9},   {4, 5},   {4, 7},   {4, 26},  {5, 6},   {5, 23},  {5, 24},  {6, 8},   {7, 8},
    {7, 11},  {7, 18},  {7, 23},  {8, 11},  {8, 25},  {9, 11},  {9, 19},  {9, 27},  {9, 29},  {10, 12}, {10, 17},
    {10, 30}, {11, 14}, {11, 23}, {11, 30}, {12, 13}, {12, 25}, {12, 31}, {13, 16}, {13, 27}, {13, 28}, {14, 24},
    {15, 16}, {15, 18}, {15, 21}, {16, 17}, {16, 22}, {17, 21}, {18, 24}, {19, 22}, {20, 23}, {20, 28}, {20, 29},
    {22, 25}, {23, 30}, {24, 26}, {25, 28}, {27, 28}, {27, 29}, {27, 30}, {29, 31}, {30, 31}};

#define RW_EDGES(a) ((int)(sizeof(a) / sizeof((a)[0])))
static const rw_graph k_stages[4] = {
    {16, RW_EDGES(k_ws16_2), k_ws16_2},
    {32, RW_EDGES(k_ws32_3), k_ws32_3},
    {32, RW_EDGES(k_ws32_4), k_ws32_4},
    {32, RW_EDGES(k_ws32_5), k_ws32_5},
};

/* ReLU, 3x3 depthwise conv (stride s), 1x1 conv to c channels, BatchNorm. */
static int rw_node(zb *b, const char *pre, int x, int64_t c, int64_t s) {
  char n1[300];
  snprintf(n1, sizeof n1, "%.200s.relu", pre);
  int y = zb_relu(b, n1, x);
  int64_t cin = zb_dim(b, y, 1);
  snprintf(n1, sizeof n1, "%.200s.dw", pre);
  y = zb_conv(b, n1, y, cin, 3, 3, s, 1, 1, cin, false);
  snprintf(n1, sizeof n1, "%.200s.pw", pre);
  y = zb_conv(b, n1, y, c, 1, 1, 1, 0, 0, 1, false);
  snprintf(n1, sizeof n1, "%.200s.bn", pre);
  return zb_bn(b, n1, y, 1e-5);
}

/* Sum of n tensors, left to right, as Add nodes named pre.sum<i>. */
static int rw_sum(zb *b, const char *pre, int n, const int *xs) {
  int acc = xs[0];
  for (int i = 1; i < n; i++) {
    char n1[300];
    snprintf(n1, sizeof n1, "%.200s.sum%d", pre, i);
    acc = zb_node2(b, OB_GOP_ADD, n1, acc, xs[i]);
  }
  return acc;
}

static int rw_stage(zb *b, int idx, int r, int64_t c, const rw_graph *gr) {
  int n = gr->n, indeg[32] = {0}, outdeg[32] = {0}, out[32], stack[32], top = 0;
  int nin[32] = {0}, ins[32][32], nout[32] = {0}, outs[32][32];
  for (int i = 0; i < gr->m; i++) {
    int u = gr->e[i][0], v = gr->e[i][1];
    ins[v][nin[v]++] = u;
    outs[u][nout[u]++] = v;
    indeg[v]++;
    outdeg[u]++;
  }
  for (int u = 0; u < n; u++)
    if (!indeg[u]) stack[top++] = u;
  while (top > 0) {
    int u = stack[--top];
    char pre[64];
    snprintf(pre, sizeof pre, "stage%d.node%d", idx, u);
    if (!nin[u]) {
      out[u] = rw_node(b, pre, r, c, 2);
    } else {
      int xs[32] = {0};
      for (int i = 0; i < nin[u]; i++) xs[i] = out[ins[u][i]];
      out[u] = rw_node(b, pre, rw_sum(b, pre, nin[u], xs), c, 1);
    }
    for (int i = 0; i < nout[u]; i++)
      if (--indeg[outs[u][i]] == 0) stack[top++] = outs[u][i];
  }
  int sinks[32] = {0}, ns = 0;
  for (int u = 0; u < n; u++)
    if (!outdeg[u]) sinks[ns++] = out[u];
  char pre[64];
  snprintf(pre, sizeof pre, "stage%d.out", idx);
  return rw_sum(b, pre, ns, sinks);
}

void zoo_randwire(zb *b, const zoo_args *a) {
  const int64_t ch = 154;
  int x = zb_input(b, "input", OB_F32, 4, (int64_t[]){a->batch, 3, a->size, a->size});
  x = zb_bn(b, "front.bn", zb_conv(b, "front.conv", x, ch / 2, 3, 3, 2, 1, 1, 1, false), 1e-5);
  for (int s = 0; s < 4; s++) x = rw_stage(b, s + 1, x, ch << s, &k_stages[s]);
  x = zb_relu(b, "tail.relu", x);
  x = zb_bn(b, "tail.bn", zb_conv(b, "tail.conv", x, 1280, 1, 1, 1, 0, 0, 1, false), 1e-5);
  x = zb_flatten(b, "flatten", zb_gap(b, "avgpool", x));
  x = zb_linear(b, "fc", x, 1000);
  if (!b->st) b->st = ob_graph_mark_output(b->g, x);
}
