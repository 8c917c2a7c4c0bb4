/* test_graph.c: the graph module on the model zoo. Each model's
 * multiply-adds and parameters against the published figures (within 1%),
 * shape inference and validation of every model, the passes (constant
 * folding of exported-style shape chains, batch-norm folding, epilogue
 * fusion, dead-node elimination, layout planning), task extraction, and the
 * end-to-end numeric agreement of the optimized graph with the graph as
 * built, by naive reference execution at small input sizes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/graph.h"

static ob_ctx *ctx;

static ob_graph *load_w(const char *source, const char *name, int64_t size, int64_t seqlen, int64_t hidden, bool zero) {
  ob_model_opts o = ob_model_opts_default();
  o.zero_weights = zero;
  o.source = source;
  o.name = name;
  o.input_size = size;
  o.seqlen = seqlen;
  o.hidden = hidden;
  ob_graph *g = NULL;
  ob_status st = ob_model_load(ctx, &o, &g);
  CHECK_MSG(st == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  return g;
}

static float **run(ob_graph *g);
static double rel_diff(const float *a, const float *b, int64_t n);

static ob_graph *load(const char *source, const char *name, int64_t size, int64_t seqlen, int64_t hidden) {
  return load_w(source, name, size, seqlen, hidden, false);
}

static int count_op(const ob_graph *g, ob_gop op) {
  int k = 0;
  for (int i = 0; i < ob_graph_node_count(g); i++) k += !ob_graph_node_dead(g, i) && ob_graph_node_op(g, i) == op;
  return k;
}

static bool within(double v, double ref, double tol) { return fabs(v - ref) <= tol * ref; }

/* Published figures: the zoo's own table, checked against the literal
 * numbers of the brief so that neither can drift alone. */
static void test_published(void) {
  static const struct {
    const char *source, *name;
    double macs, params;
  } k[] = {
      {"local", "resnet-18", 1.81e9, 11.69e6},     {"local", "resnet-50", 4.09e9, 25.56e6},
      {"local", "mobilenet-v2", 0.30e9, 3.50e6},   {"local", "vgg-16", 15.47e9, 138.36e6},
      {"local", "squeezenet-1.1", 0.35e9, 1.24e6}, {"local", "inception-v3", 5.71e9, 27.16e6},
      {"local", "bert-base", 0, 85.0e6},           {"transformers", "bert-base-uncased", 0, 110e6},
      {"transformers", "gpt2", 0, 124e6},          {"local", "yolov5s", 16.5e9 / 2, 7.2e6},
      {"local", "nasnet-a", 23.8e9, 88.9e6},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ob_graph *g = load_w(k[i].source, k[i].name, 0, 0, 0, true); /* counted, not run */
    if (!g) continue;
    double macs = ob_graph_macs(g), params = (double)ob_graph_params(g);
    /* inception-v3: the published count includes the AuxLogits head that
     * aux_logits=False drops: BasicConv2d(768,128,1) 98,304 + BN 256,
     * BasicConv2d(128,768,5) 2,457,600 + BN 1,536, Linear(768,1000) 769,000 */
    if (!strcmp(k[i].name, "inception-v3")) params += 98304 + 256 + 2457600 + 1536 + 769000;
    if (k[i].macs > 0) CHECK_MSG(within(macs, k[i].macs, 0.01), "%s: %.4g MACs, published %.4g", k[i].name, macs, k[i].macs);
    CHECK_MSG(within(params, k[i].params, 0.01), "%s: %.6g params, published %.6g", k[i].name, params, k[i].params);
    CHECK(ob_graph_validate(ctx, g) == OB_OK);
    /* every tensor has a shape after loading */
    bool known = true;
    for (int t = 0; t < ob_graph_tensor_count(g); t++) known &= ob_graph_tensor_ndim(g, t) >= 0;
    CHECK_MSG(known, "%s: a tensor without a shape", k[i].name);
    ob_graph_free(g);
  }
  /* batch size scales the work, not the weights */
  ob_model_opts o = ob_model_opts_default();
  o.name = "resnet-18";
  o.batch = 4;
  ob_graph *g = NULL;
  CHECK(ob_model_load(ctx, &o, &g) == OB_OK);
  if (g) {
    CHECK(within(ob_graph_macs(g), 4 * 1.814e9, 0.01));
    CHECK(ob_graph_params(g) == 11689512);
    CHECK(ob_graph_tensor_dims(g, ob_graph_input(g, 0))[0] == 4);
    ob_graph_free(g);
  }
}

/* ---- RandWire: IOS's graph files ----------------------------------------------------------
 * The four stage graphs as IOS's repository publishes them (files
 * ws-16-4-0.75-2.txt, ws-32-4-0.75-3.txt, -4.txt and -5.txt: node count,
 * edge count, then one "u v" edge per line), copied here a second time so
 * that the zoo's table and these files must agree. */
static const char *const k_ws_files[4] = {
    "16\n32\n0 6\n0 7\n0 9\n1 6\n1 7\n1 15\n2 6\n2 10\n2 11\n3 9\n3 13\n4 6\n4 9\n4 13\n4 14\n4 15\n5 8\n5 10\n5 15\n"
    "6 8\n6 9\n6 12\n7 11\n7 15\n8 11\n9 11\n10 14\n11 14\n12 14\n13 14\n13 15\n14 15\n",
    "32\n64\n0 2\n0 13\n0 25\n0 30\n1 8\n1 20\n1 22\n2 3\n2 16\n2 24\n2 30\n3 6\n3 7\n3 26\n4 12\n4 22\n5 15\n5 21\n"
    "5 27\n6 11\n6 21\n6 31\n7 8\n7 9\n7 15\n8 23\n8 27\n9 10\n9 11\n9 19\n10 12\n10 30\n11 13\n11 15\n11 17\n11 28\n"
    "12 14\n12 26\n12 31\n13 14\n13 16\n13 21\n13 31\n14 16\n14 28\n14 29\n15 19\n15 22\n16 18\n17 18\n17 19\n18 24\n"
    "18 31\n20 21\n20 22\n21 23\n21 26\n22 31\n24 31\n25 26\n26 31\n27 29\n29 30\n29 31\n",
    "32\n64\n0 9\n0 11\n0 14\n0 17\n0 31\n1 2\n1 3\n1 31\n2 4\n2 11\n2 12\n2 14\n2 30\n3 4\n3 25\n4 9\n4 20\n4 29\n"
    "5 6\n5 27\n6 7\n6 21\n6 27\n7 30\n7 31\n8 10\n8 25\n9 10\n9 14\n10 11\n10 16\n10 22\n10 28\n11 16\n11 24\n"
    "12 13\n12 14\n12 15\n12 16\n13 14\n13 22\n13 26\n14 23\n15 29\n16 21\n17 26\n18 19\n18 20\n19 22\n19 27\n"
    "20 22\n22 25\n22 30\n23 27\n24 25\n24 26\n25 28\n26 28\n27 28\n27 29\n28 29\n29 30\n29 31\n30 31\n",
    "32\n64\n0 17\n0 20\n0 24\n1 10\n1 22\n1 26\n1 29\n2 19\n2 22\n2 28\n3 6\n3 7\n3 8\n3 9\n4 5\n4 7\n4 26\n5 6\n"
    "5 23\n5 24\n6 8\n7 8\n7 11\n7 18\n7 23\n8 11\n8 25\n9 11\n9 19\n9 27\n9 29\n10 12\n10 17\n10 30\n11 14\n"
    "11 23\n11 30\n12 13\n12 25\n12 31\n13 16\n13 27\n13 28\n14 24\n15 16\n15 18\n15 21\n16 17\n16 22\n17 21\n"
    "18 24\n19 22\n20 23\n20 28\n20 29\n22 25\n23 30\n24 26\n25 28\n27 28\n27 29\n27 30\n29 31\n30 31\n",
};

typedef struct ws_graph {
  int n, m;
  int e[64][2];
} ws_graph;

static void ws_parse(const char *text, ws_graph *g) {
  const char *p = text;
  char *end;
  g->n = (int)strtol(p, &end, 10);
  g->m = (int)strtol(end, &end, 10);
  for (int i = 0; i < g->m; i++) {
    g->e[i][0] = (int)strtol(end, &end, 10);
    g->e[i][1] = (int)strtol(end, &end, 10);
  }
}

static int node_find(const ob_graph *g, const char *name) {
  for (int i = 0; i < ob_graph_node_count(g); i++)
    if (!ob_graph_node_dead(g, i) && !strcmp(ob_graph_node_name(g, i), name)) return i;
  return -1;
}

/* Adds to *mask the stage nodes whose outputs flow, through Add nodes only,
 * into tensor t; returns false on anything else (the stage input excepted,
 * counted in *from_input). */
static bool rw_sources(const ob_graph *g, int stage, int t, uint64_t *mask, int *from_input) {
  int p = ob_graph_tensor_producer(g, t);
  if (p < 0) return false;
  const char *nm = ob_graph_node_name(g, p);
  int s = -1, v = -1;
  char tail[64] = "";
  if (sscanf(nm, "stage%d.node%d.%63s", &s, &v, tail) == 3 && s == stage && !strcmp(tail, "bn")) {
    *mask |= 1ull << v;
    return true;
  }
  char pre[32];
  snprintf(pre, sizeof pre, "stage%d.", stage);
  if (ob_graph_node_op(g, p) == OB_GOP_ADD && !strncmp(nm, pre, strlen(pre)) && strstr(nm, ".sum"))
    return rw_sources(g, stage, ob_graph_node_input(g, p, 0), mask, from_input) &&
           rw_sources(g, stage, ob_graph_node_input(g, p, 1), mask, from_input);
  (*from_input)++;
  return true;
}

/* The zoo's RandWire against IOS's files: every node's predecessors are the
 * file's, nodes without predecessors read the stage input at stride 2, the
 * stage output sums the nodes without successors; and the multiply-adds and
 * parameters computed from the files alone (per node: 3x3 depthwise + 1x1
 * conv + batch norm) are the graph's, exactly. Beside them the paper's
 * figures for C = 154 (7.9 G, 61.5 M), which were counted on the paper's own
 * random draws: within 2%. */
static void test_randwire(void) {
  ob_graph *g = load_w("local", "randwire", 0, 0, 0, true);
  if (!g) return;
  double macs = 77.0 * 3 * 9 * 112 * 112, params = 77 * 3 * 9 + 2 * 77;
  int64_t h = 112, cin = 77;
  for (int s = 0; s < 4; s++) {
    ws_graph w;
    ws_parse(k_ws_files[s], &w);
    int64_t c = 154 << s, ho = h / 2;
    uint64_t preds[32] = {0}, has_succ = 0;
    for (int i = 0; i < w.m; i++) {
      preds[w.e[i][1]] |= 1ull << w.e[i][0];
      has_succ |= 1ull << w.e[i][0];
    }
    for (int u = 0; u < w.n; u++) {
      char nm[64];
      snprintf(nm, sizeof nm, "stage%d.node%d.relu", s + 1, u);
      int relu = node_find(g, nm);
      CHECK_MSG(relu >= 0, "no node %s", nm);
      if (relu < 0) continue;
      uint64_t got = 0;
      int from_input = 0;
      CHECK(rw_sources(g, s + 1, ob_graph_node_input(g, relu, 0), &got, &from_input));
      CHECK_MSG(got == preds[u], "stage %d node %d: predecessors %#llx, IOS's file %#llx", s + 1, u,
                (unsigned long long)got, (unsigned long long)preds[u]);
      CHECK(from_input == (preds[u] ? 0 : 1));
      snprintf(nm, sizeof nm, "stage%d.node%d.dw", s + 1, u);
      int dw = node_find(g, nm);
      int64_t st[2] = {0, 0};
      CHECK(dw >= 0 && ob_graph_node_attr_ints(g, dw, "strides", st, 2) == 2 && st[0] == (preds[u] ? 1 : 2));
      int64_t ci = preds[u] ? c : cin;
      macs += (double)(9 * ci + ci * c) * (double)(ho * ho);
      params += (double)(9 * ci + ci * c + 2 * c);
    }
    /* the output sums exactly the sinks */
    char nm[64];
    int nsinks = 0;
    for (int u = 0; u < w.n; u++) nsinks += !(has_succ >> u & 1);
    snprintf(nm, sizeof nm, "stage%d.out.sum%d", s + 1, nsinks - 1);
    int last = nsinks > 1 ? node_find(g, nm) : -1;
    if (nsinks > 1) {
      CHECK_MSG(last >= 0, "no node %s", nm);
      uint64_t got = 0;
      int from_input = 0;
      if (last >= 0) CHECK(rw_sources(g, s + 1, ob_graph_node_output(g, last, 0), &got, &from_input));
      uint64_t sinks = ~has_succ & (w.n == 64 ? ~0ull : (1ull << w.n) - 1);
      CHECK(got == sinks && from_input == 0);
    }
    h = ho;
    cin = c;
  }
  macs += 1232.0 * 1280 * 7 * 7 + 1280.0 * 1000;
  params += 1232.0 * 1280 + 2 * 1280 + 1280.0 * 1000 + 1000;
  CHECK_MSG(ob_graph_macs(g) == macs, "randwire: %.0f MACs, from IOS's files %.0f", ob_graph_macs(g), macs);
  CHECK_MSG((double)ob_graph_params(g) == params, "randwire: %lld params, from IOS's files %.0f",
            (long long)ob_graph_params(g), params);
  CHECK_MSG(within(ob_graph_macs(g), 7.9e9, 0.02), "randwire: %.4g MACs, paper 7.9e9", ob_graph_macs(g));
  CHECK_MSG(within((double)ob_graph_params(g), 61.5e6, 0.02), "randwire: %lld params, paper 61.5e6",
            (long long)ob_graph_params(g));
  ob_graph_free(g);
}

/* NASNet-A Large's structure: 2 stem cells, 18 normal cells (3 of them
 * first cells), 2 reduction cells; each normal cell concatenates 6 inputs,
 * the others 4; the final feature map is 11x11 with 4032 channels. */
static void test_nasnet(void) {
  ob_graph *g = load_w("local", "nasnet-a", 0, 0, 0, true);
  if (!g) return;
  int cats6 = 0, cats4 = 0;
  for (int i = 0; i < ob_graph_node_count(g); i++) {
    if (ob_graph_node_op(g, i) != OB_GOP_CONCAT || !strstr(ob_graph_node_name(g, i), ".cat")) continue;
    if (strstr(ob_graph_node_name(g, i), "paths")) continue;
    int n = ob_graph_node_num_inputs(g, i);
    cats6 += n == 6;
    cats4 += n == 4;
  }
  CHECK_MSG(cats6 == 18 && cats4 == 4, "nasnet-a: %d six-way and %d four-way cell outputs", cats6, cats4);
  int relu = node_find(g, "relu");
  CHECK(relu >= 0);
  if (relu >= 0) {
    const int64_t *d = ob_graph_tensor_dims(g, ob_graph_node_input(g, relu, 0));
    CHECK(d[1] == 4032 && d[2] == 11 && d[3] == 11);
  }
  /* the first reduction cell pads as TensorFlow's SAME: 42 -> 21 */
  int dw = node_find(g, "reduction_cell_0.comb_iter_0_left.separable_1.depthwise_conv2d");
  int64_t p[4] = {0};
  CHECK(dw >= 0 && ob_graph_node_attr_ints(g, dw, "pads", p, 4) == 4 && p[0] == 1 && p[1] == 1 && p[2] == 2 && p[3] == 2);
  ob_graph_free(g);
}

/* ---- operator merging --------------------------------------------------------------------- */
static int add_conv(ob_graph *g, const char *name, int x, int64_t k, int64_t r, int64_t pad, bool bias, const char *act,
                    ob_rng *rng) {
  (void)ob_graph_infer_shapes(ctx, g); /* the input's channels */
  int64_t c = ob_graph_tensor_dims(g, x)[1];
  int64_t wd[4] = {k, c, r, r};
  float *w = malloc(sizeof(float) * (size_t)(k * c * r * r)), bv[64];
  for (int64_t i = 0; i < k * c * r * r; i++) w[i] = ob_rng_float(rng) * 0.3f;
  for (int i = 0; i < 64; i++) bv[i] = ob_rng_float(rng);
  char nm[64];
  int tw = -1, tb = -1, out = -1, node = -1;
  snprintf(nm, sizeof nm, "%s.w", name);
  CHECK(ob_graph_add_const(g, nm, OB_F32, 4, wd, w, true, &tw) == OB_OK);
  free(w);
  if (bias) {
    snprintf(nm, sizeof nm, "%s.b", name);
    CHECK(ob_graph_add_const(g, nm, OB_F32, 1, &k, bv, true, &tb) == OB_OK);
  }
  CHECK(ob_graph_add_node(g, OB_GOP_CONV, name, bias ? 3 : 2, (int[]){x, tw, tb}, 1, NULL, &out, &node) == OB_OK);
  ob_graph_set_attr_ints(g, node, "kernel_shape", 2, (int64_t[]){r, r});
  ob_graph_set_attr_ints(g, node, "pads", 4, (int64_t[]){pad, pad, pad, pad});
  if (*act) ob_graph_set_attr_s(g, node, "activation", act);
  return out;
}

/* Merged convolutions compute what the separate ones did, read by the same
 * consumers; mismatches are refused naming the node. */
static void test_merge_convs(void) {
  ob_rng rng = {42};
  ob_graph *g = NULL;
  CHECK(ob_graph_new(ctx, "merge", &g) == OB_OK);
  int x = -1, t = -1, node = -1;
  CHECK(ob_graph_add_input(g, "x", OB_F32, 4, (int64_t[]){1, 6, 9, 9}, &x) == OB_OK);
  int pre = -1;
  CHECK(ob_graph_add_node(g, OB_GOP_RELU, "pre", 1, &x, 1, NULL, &pre, &node) == OB_OK);
  int a = add_conv(g, "a", pre, 5, 3, 1, true, "relu", &rng);
  int other = add_conv(g, "other", x, 4, 1, 0, true, "", &rng); /* between them in the order */
  int b = add_conv(g, "b", pre, 3, 3, 1, false, "relu", &rng);
  int c = add_conv(g, "c", pre, 7, 3, 1, true, "relu", &rng);
  int k1 = add_conv(g, "k1", pre, 2, 1, 0, true, "relu", &rng);    /* another kernel size */
  int res = add_conv(g, "nobias", pre, 2, 3, 1, false, "", &rng); /* another activation */
  int cat = -1;
  CHECK(ob_graph_add_node(g, OB_GOP_CONCAT, "cat", 6, (int[]){c, a, other, b, k1, res}, 1, NULL, &cat, &node) == OB_OK);
  ob_graph_set_attr_i(g, node, "axis", 1);
  CHECK(ob_graph_add_node(g, OB_GOP_RELU, "post", 1, &a, 1, NULL, &t, &node) == OB_OK);
  CHECK(ob_graph_mark_output(g, cat) == OB_OK);
  CHECK(ob_graph_mark_output(g, t) == OB_OK);
  CHECK(ob_graph_infer_shapes(ctx, g) == OB_OK);
  float **before = run(g);
  int ia = ob_graph_tensor_producer(g, a), ib = ob_graph_tensor_producer(g, b), ic = ob_graph_tensor_producer(g, c);
  int ik = ob_graph_tensor_producer(g, k1), ir = ob_graph_tensor_producer(g, res), io = ob_graph_tensor_producer(g, other);
  /* refusals name the node and the difference */
  CHECK(ob_graph_merge_check(ctx, g, 2, (int[]){ia, ik}) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "'k1'") && strstr(ob_ctx_errmsg(ctx), "kernel"));
  CHECK(ob_graph_merge_check(ctx, g, 2, (int[]){ia, ir}) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "activation") != NULL);
  CHECK(ob_graph_merge_check(ctx, g, 2, (int[]){ia, io}) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "reads") != NULL);
  CHECK(ob_graph_merge_check(ctx, g, 1, (int[]){ia}) == OB_ERR_INVALID_ARG);
  CHECK(ob_graph_merge_check(ctx, g, 2, (int[]){ia, ia}) == OB_ERR_INVALID_ARG);
  int convs = count_op(g, OB_GOP_CONV), merged = -1;
  CHECK(ob_graph_merge_convs(ctx, g, 3, (int[]){ib, ia, ic}, &merged) == OB_OK);
  CHECK(ob_graph_validate(ctx, g) == OB_OK);
  CHECK(count_op(g, OB_GOP_CONV) == convs - 2);
  CHECK(count_op(g, OB_GOP_SLICE) == 3);
  CHECK(merged >= 0 && ob_graph_node_op(g, merged) == OB_GOP_CONV &&
        ob_graph_tensor_dims(g, ob_graph_node_output(g, merged, 0))[1] == 3 + 5 + 7);
  float **after = run(g);
  for (int o = 0; o < 2; o++) {
    int64_t n = ob_graph_tensor_numel(g, ob_graph_output(g, o));
    CHECK_MSG(rel_diff(after[o], before[o], n) < 1e-6, "output %d: merged differs by %.3g", o,
              rel_diff(after[o], before[o], n));
    free(before[o]);
    free(after[o]);
  }
  free(before);
  free(after);
  ob_graph_free(g);
}

static void test_bad_models(void) {
  ob_model_opts o = ob_model_opts_default();
  ob_graph *g = NULL;
  o.name = "resnet-19";
  CHECK(ob_model_load(ctx, &o, &g) == OB_ERR_NOT_FOUND);
  CHECK(strstr(ob_ctx_errmsg(ctx), "resnet-19") && strstr(ob_ctx_errmsg(ctx), "resnet-18"));
  o.name = "resnet-18";
  o.source = "nowhere";
  CHECK(ob_model_load(ctx, &o, &g) == OB_ERR_NOT_FOUND);
  CHECK(strstr(ob_ctx_errmsg(ctx), "nowhere") != NULL);
  o.source = "local";
  o.batch = 0;
  CHECK(ob_model_load(ctx, &o, &g) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "batch size 0") != NULL);
  o.batch = 1;
  o.name = "yolov5s";
  o.input_size = 100;
  CHECK(ob_model_load(ctx, &o, &g) == OB_ERR_INVALID_ARG);
  o.name = "inception-v3";
  o.input_size = 32; /* Mixed_6a's unpadded stride-2 convolution has nothing left */
  CHECK(ob_model_load(ctx, &o, &g) != OB_OK);
  CHECK(g == NULL);
}

/* Reference outputs of g on seeded inputs (malloc'd, one per output). */
static float **run(ob_graph *g) {
  int ni = ob_graph_input_count(g), no = ob_graph_output_count(g);
  void **in = calloc((size_t)ni, sizeof(void *));
  float **out = calloc((size_t)no, sizeof(float *));
  for (int i = 0; i < ni; i++) {
    int t = ob_graph_input(g, i);
    in[i] = malloc((size_t)ob_graph_tensor_numel(g, t) * 8);
    ob_graph_fill_input(g, i, 7, in[i]);
  }
  for (int i = 0; i < no; i++) out[i] = malloc((size_t)ob_graph_tensor_numel(g, ob_graph_output(g, i)) * 4);
  ob_status st = ob_graph_run_reference(ctx, g, (const void *const *)in, (void *const *)out);
  CHECK_MSG(st == OB_OK, "%s: %s", ob_graph_name(g), ob_ctx_errmsg(ctx));
  for (int i = 0; i < ni; i++) free(in[i]);
  free(in);
  return out;
}

/* max |a - b| / max |b| over n values. */
static double rel_diff(const float *a, const float *b, int64_t n) {
  double d = 0, m = 0;
  for (int64_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    m = fmax(m, fabs((double)b[i]));
  }
  return m > 0 ? d / m : d;
}

static void test_passes_agree(void) {
  static const struct {
    const char *source, *name;
    int64_t size, seqlen, hidden;
  } k[] = {
      {"simple", "simple", 0, 0, 0},
      {"local", "resnet-18", 32, 0, 0},
      {"local", "resnet-50", 32, 0, 0},
      {"local", "vgg-16", 32, 0, 0},
      {"local", "mobilenet-v2", 32, 0, 0},
      {"local", "squeezenet-1.1", 64, 0, 0},
      {"local", "inception-v3", 75, 0, 0},
      {"local", "randwire", 32, 0, 0},
      {"local", "nasnet-a", 35, 0, 0},
      {"local", "yolov5s", 64, 0, 0},
      {"local", "lstm", 0, 5, 24},
      {"local", "bert-base", 0, 3, 0},
      {"transformers", "bert-base-uncased", 0, 3, 0},
      {"transformers", "gpt2", 0, 3, 0},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    /* the graph as built runs first, then the same graph optimized */
    ob_graph *b = load(k[i].source, k[i].name, k[i].size, k[i].seqlen, k[i].hidden);
    if (!b) continue;
    int live_a = 0, live_b = 0, nout = ob_graph_output_count(b);
    for (int n = 0; n < ob_graph_node_count(b); n++) live_a += !ob_graph_node_dead(b, n);
    int64_t numel[8];
    for (int o = 0; o < nout && o < 8; o++) numel[o] = ob_graph_tensor_numel(b, ob_graph_output(b, o));
    /* under ASan the heaviest models' reference runs (35 of this test's
     * 43 s there) are left to the release build; their passes run here */
    bool ref = !ob_test_asan_leaves(k[i].name, true);
    float **oa = ref ? run(b) : NULL;
    ob_graph_pass_stats ps;
    ob_status st = ob_graph_optimize(ctx, b, 16, &ps);
    CHECK_MSG(st == OB_OK, "%s: %s", k[i].name, ob_ctx_errmsg(ctx));
    CHECK(ob_graph_validate(ctx, b) == OB_OK);
    for (int n = 0; n < ob_graph_node_count(b); n++) live_b += !ob_graph_node_dead(b, n);
    if (strcmp(k[i].name, "lstm")) CHECK_MSG(live_b < live_a, "%s: passes left %d of %d nodes", k[i].name, live_b, live_a);
    float **ob = ref ? run(b) : NULL;
    for (int o = 0; ref && o < nout && o < 8; o++) {
      int64_t n = numel[o];
      CHECK(n == ob_graph_tensor_numel(b, ob_graph_output(b, o)));
      double d = rel_diff(ob[o], oa[o], n);
      CHECK_MSG(d < 1e-4, "%s output %d: passes change the result by %.3g (relative to max)", k[i].name, o, d);
      bool finite = true;
      for (int64_t q = 0; q < n; q++) finite &= isfinite(oa[o][q]);
      CHECK_MSG(finite, "%s: non-finite output", k[i].name);
      free(oa[o]);
      free(ob[o]);
    }
    free(oa);
    free(ob);
    ob_graph_free(b);
  }
}

static void test_resnet_passes(void) {
  ob_graph *g = load("local", "resnet-18", 64, 0, 0);
  if (!g) return;
  CHECK(count_op(g, OB_GOP_BATCHNORM) == 20);
  CHECK(count_op(g, OB_GOP_RELU) == 17);
  ob_graph_pass_stats ps;
  CHECK(ob_graph_optimize(ctx, g, 16, &ps) == OB_OK);
  CHECK(ps.bn_folded == 20);
  CHECK(count_op(g, OB_GOP_BATCHNORM) == 0);
  CHECK(count_op(g, OB_GOP_RELU) == 0);
  CHECK(count_op(g, OB_GOP_ADD) == 0);  /* residual adds fused */
  CHECK(count_op(g, OB_GOP_GEMM) == 0); /* fc became Dense */
  CHECK(count_op(g, OB_GOP_DENSE) == 1);
  CHECK(count_op(g, OB_GOP_CONV) == 20);
  /* every conv has a bias (folded batch norm); 8 took a residual add */
  int with_res = 0, relu = 0;
  for (int n = 0; n < ob_graph_node_count(g); n++) {
    if (ob_graph_node_op(g, n) != OB_GOP_CONV) continue;
    CHECK(ob_graph_node_num_inputs(g, n) >= 3 && ob_graph_node_input(g, n, 2) >= 0);
    with_res += ob_graph_node_num_inputs(g, n) > 3 && ob_graph_node_input(g, n, 3) >= 0;
    relu += !strcmp(ob_graph_node_attr_s(g, n, "activation", ""), "relu");
    ob_workload wl;
    CHECK(ob_graph_node_workload(ctx, g, n, &wl) == OB_OK);
  }
  CHECK(with_res == 8);
  CHECK(relu == 17);
  /* layout: every activation between convolutions is blocked; the network's
   * input (3 channels) needs no transform, the pooled features one */
  CHECK(ps.transforms == 1);
  int blocked = 0, plain4d = 0;
  for (int t = 0; t < ob_graph_tensor_count(g); t++) {
    if (ob_graph_tensor_kind(g, t) != OB_GT_ACT || ob_graph_tensor_ndim(g, t) != 4) continue;
    if (ob_graph_tensor_layout(g, t) == OB_LAYOUT_NCHWC) {
      blocked++;
      CHECK(ob_graph_tensor_dims(g, t)[1] % ob_graph_tensor_block(g, t) == 0);
      CHECK(ob_graph_tensor_block(g, t) == 16);
    } else {
      plain4d++;
    }
  }
  CHECK(plain4d == 1); /* the global-average-pooled features */
  CHECK(blocked == 21);
  /* a narrower machine blocks by 8 */
  CHECK(ob_graph_plan_layout(ctx, g, 8, NULL) == OB_OK);
  for (int t = 0; t < ob_graph_tensor_count(g); t++)
    if (ob_graph_tensor_layout(g, t) == OB_LAYOUT_NCHWC) CHECK(ob_graph_tensor_block(g, t) == 8);
  CHECK(ob_graph_plan_layout(ctx, g, 1, NULL) == OB_ERR_INVALID_ARG);
  ob_str s = {0};
  ob_graph_print(g, &s);
  CHECK(strstr(s.data, "activation=relu") && strstr(s.data, "{NCHW16c}") == NULL);
  ob_str_free(&s);
  ob_graph_free(g);
}

/* The exact GELU as exported (Div by sqrt 2, Erf, Add 1, Mul by x, Mul by
 * 0.5) becomes one Gelu node per layer; test_passes_agree checks the
 * result does not change. */
static void test_gelu_fusion(void) {
  static const char *const src[2][2] = {{"local", "bert-base"}, {"transformers", "bert-base-uncased"}};
  for (int i = 0; i < 2; i++) {
    ob_graph *g = load(src[i][0], src[i][1], 0, 4, 0);
    if (!g) continue;
    CHECK_MSG(count_op(g, OB_GOP_ERF) == 12 && count_op(g, OB_GOP_GELU) == 0, "%s: %d Erf before the passes",
              src[i][1], count_op(g, OB_GOP_ERF));
    ob_graph_pass_stats ps;
    CHECK(ob_graph_optimize(ctx, g, 16, &ps) == OB_OK);
    CHECK_MSG(count_op(g, OB_GOP_ERF) == 0 && count_op(g, OB_GOP_GELU) == 12, "%s: %d Erf, %d Gelu after",
              src[i][1], count_op(g, OB_GOP_ERF), count_op(g, OB_GOP_GELU));
    for (int n = 0; n < ob_graph_node_count(g); n++)
      if (!ob_graph_node_dead(g, n) && ob_graph_node_op(g, n) == OB_GOP_GELU)
        CHECK(ob_graph_node_num_inputs(g, n) == 1 &&
              !strcmp(ob_graph_node_attr_s(g, n, "approximate", "none"), "none"));
    ob_graph_free(g);
  }
}

static void test_fold_transformers(void) {
  ob_graph *g = load("transformers", "bert-base-uncased", 0, 8, 0);
  if (!g) return;
  int shapes = count_op(g, OB_GOP_SHAPE), concats = count_op(g, OB_GOP_CONCAT);
  CHECK(shapes > 0 && concats > 0);
  int folded = 0, removed = 0;
  CHECK(ob_graph_fold_constants(ctx, g, &folded) == OB_OK);
  CHECK(ob_graph_eliminate_dead(ctx, g, &removed) == OB_OK);
  CHECK(folded > 0);
  CHECK(count_op(g, OB_GOP_SHAPE) == 0);
  CHECK(count_op(g, OB_GOP_CONCAT) == 0);
  CHECK(count_op(g, OB_GOP_SLICE) == 0);   /* position/token-type buffers sliced at build time */
  CHECK(count_op(g, OB_GOP_RESHAPE) == 48); /* 4 per layer, now with constant shapes */
  for (int n = 0; n < ob_graph_node_count(g); n++)
    if (!ob_graph_node_dead(g, n) && ob_graph_node_op(g, n) == OB_GOP_RESHAPE)
      CHECK(ob_graph_tensor_kind(g, ob_graph_node_input(g, n, 1)) == OB_GT_CONST);
  ob_graph_free(g);
}

static void test_tasks(void) {
  ob_graph *g = load("local", "resnet-18", 0, 0, 0);
  if (!g) return;
  CHECK(ob_graph_optimize(ctx, g, 16, NULL) == OB_OK);
  ob_graph_task *t = NULL;
  int n = 0;
  CHECK(ob_graph_tasks(ctx, g, &t, &n) == OB_OK);
  /* 12 distinct convolutions (11 of the published suite, the 3x3 64->64
   * ones split by their epilogues), max pool, dense, global average pool */
  int convs = 0, total = 0;
  double share = 0, conv_flops = 0;
  for (int i = 0; i < n; i++) {
    total += t[i].count;
    share += t[i].share;
    if (!strcmp(t[i].wl.op, "conv2d")) convs++, conv_flops += t[i].count * t[i].flops;
    if (i) CHECK(t[i].est_s <= t[i - 1].est_s);
    char key[256];
    ob_workload_key(&t[i].wl, key, sizeof key);
    CHECK(!strcmp(key, t[i].key));
  }
  CHECK(n == 18);
  CHECK(convs == 15);
  CHECK(total == 23); /* 20 convs, max pool, global average pool, dense */
  CHECK(fabs(share - 1) < 1e-9);
  CHECK(within(conv_flops, 2 * 1.8135e9, 0.01));
  int k90 = ob_graph_key_tasks(t, n, 90), k100 = ob_graph_key_tasks(t, n, 100);
  CHECK(k90 >= 1 && k90 < n && k100 == n);
  double cum = 0;
  for (int i = 0; i < k90; i++) cum += t[i].share;
  CHECK(cum >= 0.9 && cum - t[k90 - 1].share < 0.9);
  free(t);
  ob_graph_free(g);
  /* LSTM: the input projection once per layer, the recurrent product per
   * step and layer (both layers have the same shapes: input size = hidden) */
  g = load("local", "lstm", 0, 6, 32);
  if (!g) return;
  CHECK(ob_graph_tasks(ctx, g, &t, &n) == OB_OK);
  CHECK(n == 2);
  int proj = 0, steps = 0;
  for (int i = 0; i < n; i++) {
    proj += t[i].count == 2 && ob_workload_get(&t[i].wl, "M") == 6;
    steps += t[i].count == 12 && ob_workload_get(&t[i].wl, "M") == 1;
  }
  CHECK(proj == 1 && steps == 1);
  free(t);
  ob_graph_free(g);
}

/* A graph built through the public API, with errors named by node. */
static void test_builder_errors(void) {
  ob_graph *g = NULL;
  CHECK(ob_graph_new(ctx, "t", &g) == OB_OK);
  int x, y, w, o;
  CHECK(ob_graph_add_input(g, "x", OB_F32, 2, (int64_t[]){2, 3}, &x) == OB_OK);
  CHECK(ob_graph_add_input(g, "x", OB_F32, 1, (int64_t[]){2}, &y) == OB_ERR_INVALID_ARG);
  CHECK(ob_graph_add_const(g, "w", OB_F32, 2, (int64_t[]){4, 5}, NULL, true, &w) == OB_OK);
  int node;
  CHECK(ob_graph_add_node(g, OB_GOP_ADD, "bad_add", 2, (int[]){x, w}, 1, NULL, &o, &node) == OB_OK);
  CHECK(ob_graph_mark_output(g, o) == OB_OK);
  CHECK(ob_graph_infer_shapes(ctx, g) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "bad_add") && strstr(ob_ctx_errmsg(ctx), "broadcast"));
  CHECK(ob_graph_add_node(g, OB_GOP_RELU, "two", 2, (int[]){x, x}, 1, NULL, &o, &node) == OB_ERR_INVALID_ARG);
  CHECK(ob_graph_add_input(g, "big", OB_F32, 3, (int64_t[]){1 << 20, 1 << 20, 1 << 20}, &y) == OB_ERR_INVALID_ARG);
  ob_graph_free(g);
  /* a graph output nobody computes */
  CHECK(ob_graph_new(ctx, "t2", &g) == OB_OK);
  CHECK(ob_graph_add_input(g, "x", OB_F32, 1, (int64_t[]){3}, &x) == OB_OK);
  CHECK(ob_graph_validate(ctx, g) == OB_ERR_INVALID_ARG); /* no outputs */
  ob_graph_free(g);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  test_published();
  test_randwire();
  test_nasnet();
  test_merge_convs();
  test_bad_models();
  test_builder_errors();
  test_resnet_passes();
  test_gelu_fusion();
  test_fold_transformers();
  test_tasks();
  test_passes_agree();
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
