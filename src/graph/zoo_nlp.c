/* zoo_nlp.c: the sequence models of the zoo. bert-base (local): the BERT-base
 * encoder of Devlin et al. (12 layers, hidden 768, 12 heads, FFN 3072, GELU,
 * post-LayerNorm with eps 1e-12) on given hidden states; bert-base-uncased
 * and gpt2 (transformers): Hugging Face's BertModel (embeddings, encoder,
 * pooler) and GPT2Model with the tied LM head, written as torch.onnx.export
 * writes them (shape chains Shape/Gather/Unsqueeze/Concat feeding Reshape,
 * the causal mask as a sliced boolean buffer and Where), so that the passes
 * see what real exported files hold; lstm: a 2-layer LSTM (ONNX LSTM). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/zoo_impl.h"

enum { HID = 768, HEADS = 12, HDIM = 64, FFN = 3072, LAYERS = 12 };

static int scalar_i64(zb *b, const char *name, int64_t v) {
  if (b->st) return -1;
  int id = ob_graph_tensor_find(b->g, name);
  if (id >= 0) return id;
  b->st = ob_graph_add_const(b->g, name, OB_I64, 0, NULL, &v, false, &id);
  return id;
}

static int unsqueeze(zb *b, const char *name, int x, int n, const int64_t *axes) {
  char nm[300];
  snprintf(nm, sizeof nm, "%.200s.axes", name);
  return zb_node2(b, OB_GOP_UNSQUEEZE, name, x, zb_ints(b, nm, n, axes));
}

/* Dimension d of x as a 1-element int64 tensor, the way exports compute it. */
static int dyn_dim(zb *b, const char *name, int x, int64_t d) {
  char nm[300];
  snprintf(nm, sizeof nm, "%.200s.shape", name);
  int sh = zb_node1(b, OB_GOP_SHAPE, nm, x);
  snprintf(nm, sizeof nm, "%.200s.gather", name);
  char cn[64];
  snprintf(cn, sizeof cn, "const.i%lld", (long long)d);
  int g = zb_node2(b, OB_GOP_GATHER, nm, sh, scalar_i64(b, cn, d));
  snprintf(nm, sizeof nm, "%.200s.unsqueeze", name);
  return unsqueeze(b, nm, g, 1, (int64_t[]){0});
}

/* Reshape x to [dim0(x), dim1(x), tail...]: dynamic (exported form) or constant. */
static int reshape_bs(zb *b, const char *name, int x, bool dyn, int nt, const int64_t *tail) {
  if (!dyn) {
    int64_t s[4] = {zb_dim(b, x, 0), zb_dim(b, x, 1), 0, 0};
    for (int i = 0; i < nt; i++) s[2 + i] = tail[i];
    return zb_reshape(b, name, x, 2 + nt, s);
  }
  char nm[300];
  int parts[4];
  snprintf(nm, sizeof nm, "%.200s.d0", name);
  parts[0] = dyn_dim(b, nm, x, 0);
  snprintf(nm, sizeof nm, "%.200s.d1", name);
  parts[1] = dyn_dim(b, nm, x, 1);
  for (int i = 0; i < nt; i++) {
    snprintf(nm, sizeof nm, "const.shape%lld", (long long)tail[i]);
    parts[2 + i] = zb_ints(b, nm, 1, &tail[i]);
  }
  snprintf(nm, sizeof nm, "%.200s.concat", name);
  int s = zb_concat(b, nm, 2 + nt, parts, 0);
  return zb_node2(b, OB_GOP_RESHAPE, name, x, s);
}

/* One BERT layer: self-attention (mask added when mask >= 0), output dense,
 * residual, LayerNorm; FFN with exact (erf) GELU, residual, LayerNorm. */
static int bert_layer(zb *b, const char *pre, int x, int mask, bool dyn) {
  char n1[300], n2[300];
#define N1(s) (snprintf(n1, sizeof n1, "%.200s.%.90s", pre, s), n1)
#define N2(s) (snprintf(n2, sizeof n2, "%.200s.%.90s", pre, s), n2)
  int q = zb_linear3(b, N1("attention.self.query"), x, HID);
  int k = zb_linear3(b, N1("attention.self.key"), x, HID);
  int v = zb_linear3(b, N1("attention.self.value"), x, HID);
  int64_t hd[2] = {HEADS, HDIM};
  q = zb_transpose(b, N2("attention.self.q_t"), reshape_bs(b, N1("attention.self.q_r"), q, dyn, 2, hd), 4,
                   (int64_t[]){0, 2, 1, 3});
  k = zb_transpose(b, N2("attention.self.k_t"), reshape_bs(b, N1("attention.self.k_r"), k, dyn, 2, hd), 4,
                   (int64_t[]){0, 2, 3, 1});
  v = zb_transpose(b, N2("attention.self.v_t"), reshape_bs(b, N1("attention.self.v_r"), v, dyn, 2, hd), 4,
                   (int64_t[]){0, 2, 1, 3});
  int s = zb_node2(b, OB_GOP_MATMUL, N1("attention.self.scores"), q, k);
  s = zb_node2(b, OB_GOP_DIV, N1("attention.self.scale"), s, zb_scalar(b, "const.sqrt_head_dim", 8.0f));
  if (mask >= 0) s = zb_node2(b, OB_GOP_ADD, N1("attention.self.mask"), s, mask);
  int p = zb_node1(b, OB_GOP_SOFTMAX, N1("attention.self.softmax"), s);
  if (p >= 0) {
    ob_graph_set_attr_i(b->g, zb_prod(b, p), "axis", -1);
    zb_reinfer(b, p);
  }
  int c = zb_node2(b, OB_GOP_MATMUL, N1("attention.self.context"), p, v);
  c = zb_transpose(b, N1("attention.self.c_t"), c, 4, (int64_t[]){0, 2, 1, 3});
  c = reshape_bs(b, N1("attention.self.c_r"), c, dyn, 1, (int64_t[]){HID});
  int o = zb_linear3(b, N1("attention.output.dense"), c, HID);
  o = zb_node2(b, OB_GOP_ADD, N1("attention.output.residual"), o, x);
  int h = zb_layernorm(b, N1("attention.output.LayerNorm"), o, 1e-12);
  int f = zb_linear3(b, N1("intermediate.dense"), h, FFN);
  /* gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))) as exported */
  int e = zb_node2(b, OB_GOP_DIV, N1("intermediate.gelu.div"), f, zb_scalar(b, "const.sqrt2", 1.4142135381698608f));
  e = zb_node1(b, OB_GOP_ERF, N1("intermediate.gelu.erf"), e);
  e = zb_node2(b, OB_GOP_ADD, N1("intermediate.gelu.add"), e, zb_scalar(b, "const.one", 1.0f));
  e = zb_node2(b, OB_GOP_MUL, N1("intermediate.gelu.mul"), f, e);
  e = zb_node2(b, OB_GOP_MUL, N1("intermediate.gelu.half"), e, zb_scalar(b, "const.half", 0.5f));
  int d = zb_linear3(b, N1("output.dense"), e, HID);
  d = zb_node2(b, OB_GOP_ADD, N1("output.residual"), d, h);
  return zb_layernorm(b, N1("output.LayerNorm"), d, 1e-12);
#undef N1
#undef N2
}

void zoo_bert_encoder(zb *b, const zoo_args *a) {
  int x = zb_input(b, "hidden_states", OB_F32, 3, (int64_t[]){a->batch, a->seqlen, HID});
  for (int l = 0; l < LAYERS; l++) {
    char pre[64];
    snprintf(pre, sizeof pre, "encoder.layer.%d", l);
    x = bert_layer(b, pre, x, -1, false);
  }
  if (!b->st) b->st = ob_graph_mark_output(b->g, x);
}

/* A Slice of a buffer by constant starts/ends/axes. */
static int slice(zb *b, const char *name, int x, int n, const int64_t *st, const int64_t *en, const int64_t *ax) {
  char nm[300];
  snprintf(nm, sizeof nm, "%.200s.starts", name);
  int s = zb_ints(b, nm, n, st);
  snprintf(nm, sizeof nm, "%.200s.ends", name);
  int e = zb_ints(b, nm, n, en);
  snprintf(nm, sizeof nm, "%.200s.axes", name);
  int x3 = zb_ints(b, nm, n, ax);
  int o = zb_node(b, OB_GOP_SLICE, name, 4, (int[]){x, s, e, x3});
  zb_reinfer(b, o);
  return o;
}

static int embedding(zb *b, const char *name, int64_t rows, int ids) {
  char nm[300];
  snprintf(nm, sizeof nm, "%.200s.weight", name);
  int w = zb_param(b, nm, 2, (int64_t[]){rows, HID}, 0.02 * sqrt(3.0), 0);
  return zb_node2(b, OB_GOP_GATHER, name, w, ids);
}

void zoo_bert_uncased(zb *b, const zoo_args *a) {
  int64_t B = a->batch, S = a->seqlen;
  if (S > 512) {
    b->st = ob_fail(b->ctx, OB_ERR_INVALID_ARG, "bert-base-uncased: sequence length %lld exceeds 512 positions", (long long)S);
    return;
  }
  int ids = zb_input(b, "input_ids", OB_I64, 2, (int64_t[]){B, S});
  int am = zb_input(b, "attention_mask", OB_I64, 2, (int64_t[]){B, S});
  /* position_ids and token_type_ids: registered buffers, sliced to S */
  int64_t *pos = malloc(sizeof(int64_t) * 512);
  if (!pos) {
    b->st = ob_fail(b->ctx, OB_ERR_NOMEM, "out of memory");
    return;
  }
  for (int i = 0; i < 512; i++) pos[i] = i;
  int pbuf = -1, tbuf = -1;
  if (!b->st) b->st = ob_graph_add_const(b->g, "embeddings.position_ids", OB_I64, 2, (int64_t[]){1, 512}, pos, false, &pbuf);
  memset(pos, 0, sizeof(int64_t) * 512);
  if (!b->st) b->st = ob_graph_add_const(b->g, "embeddings.token_type_ids", OB_I64, 2, (int64_t[]){1, 512}, pos, false, &tbuf);
  free(pos);
  int pid = slice(b, "embeddings.position_ids.slice", pbuf, 1, (int64_t[]){0}, (int64_t[]){S}, (int64_t[]){1});
  int tid = slice(b, "embeddings.token_type_ids.slice", tbuf, 1, (int64_t[]){0}, (int64_t[]){S}, (int64_t[]){1});
  tid = zb_node2(b, OB_GOP_EXPAND, "embeddings.token_type_ids.expand", tid, zb_ints(b, "embeddings.bs", 2, (int64_t[]){B, S}));
  int e = embedding(b, "embeddings.word_embeddings", 30522, ids);
  e = zb_node2(b, OB_GOP_ADD, "embeddings.add_type", e, embedding(b, "embeddings.token_type_embeddings", 2, tid));
  e = zb_node2(b, OB_GOP_ADD, "embeddings.add_pos", e, embedding(b, "embeddings.position_embeddings", 512, pid));
  int x = zb_layernorm(b, "embeddings.LayerNorm", e, 1e-12);
  /* extended mask: (1 - mask[:, None, None, :]) * finfo(float32).min */
  int m = unsqueeze(b, "extended_mask.unsqueeze", am, 2, (int64_t[]){1, 2});
  m = zb_node1(b, OB_GOP_CAST, "extended_mask.cast", m);
  if (m >= 0) {
    ob_graph_set_attr_i(b->g, zb_prod(b, m), "to", 1);
    zb_reinfer(b, m);
  }
  m = zb_node2(b, OB_GOP_SUB, "extended_mask.sub", zb_scalar(b, "const.one", 1.0f), m);
  m = zb_node2(b, OB_GOP_MUL, "extended_mask.mul", m, zb_scalar(b, "const.float_min", -3.4028234663852886e38f));
  for (int l = 0; l < LAYERS; l++) {
    char pre[64];
    snprintf(pre, sizeof pre, "encoder.layer.%d", l);
    x = bert_layer(b, pre, x, m, true);
  }
  if (!b->st) b->st = ob_graph_mark_output(b->g, x);
  /* pooler: tanh(dense(hidden[:, 0])) */
  int f = -1;
  if (!b->st) {
    int idx = scalar_i64(b, "const.i0", 0);
    f = zb_node2(b, OB_GOP_GATHER, "pooler.first", x, idx);
    if (f >= 0) {
      ob_graph_set_attr_i(b->g, zb_prod(b, f), "axis", 1);
      zb_reinfer(b, f);
    }
  }
  f = zb_node1(b, OB_GOP_TANH, "pooler.activation", zb_linear(b, "pooler.dense", f, HID));
  if (!b->st) b->st = ob_graph_mark_output(b->g, f);
}

/* GPT-2 attention block: ln_1, c_attn, split heads, causal mask, c_proj. */
static int gpt2_block(zb *b, const char *pre, int x, int cmask, bool dyn) {
  char n1[300], n2[300];
#define N1(s) (snprintf(n1, sizeof n1, "%.200s.%.90s", pre, s), n1)
#define N2(s) (snprintf(n2, sizeof n2, "%.200s.%.90s", pre, s), n2)
  int h = zb_layernorm(b, N1("ln_1"), x, 1e-5);
  int qkv = zb_linear3(b, N1("attn.c_attn"), h, 3 * HID);
  int outs[3] = {-1, -1, -1}, node = -1;
  if (!b->st) {
    int sp = zb_ints(b, "const.split_qkv", 3, (int64_t[]){HID, HID, HID});
    char o0[300], o1[300], o2[300];
    snprintf(o0, sizeof o0, "%.200s.attn.q", pre);
    snprintf(o1, sizeof o1, "%.200s.attn.k", pre);
    snprintf(o2, sizeof o2, "%.200s.attn.v", pre);
    b->st = ob_graph_add_node(b->g, OB_GOP_SPLIT, N1("attn.split"), 2, (int[]){qkv, sp}, 3, (const char *const[]){o0, o1, o2},
                              outs, &node);
    if (!b->st) {
      ob_graph_set_attr_i(b->g, node, "axis", 2);
      zb_reinfer(b, outs[0]);
    }
  }
  int64_t hd[2] = {HEADS, HDIM};
  int q = zb_transpose(b, N2("attn.q_t"), reshape_bs(b, N1("attn.q_r"), outs[0], dyn, 2, hd), 4, (int64_t[]){0, 2, 1, 3});
  int k = zb_transpose(b, N2("attn.k_t"), reshape_bs(b, N1("attn.k_r"), outs[1], dyn, 2, hd), 4, (int64_t[]){0, 2, 3, 1});
  int v = zb_transpose(b, N2("attn.v_t"), reshape_bs(b, N1("attn.v_r"), outs[2], dyn, 2, hd), 4, (int64_t[]){0, 2, 1, 3});
  int s = zb_node2(b, OB_GOP_MATMUL, N1("attn.scores"), q, k);
  s = zb_node2(b, OB_GOP_DIV, N1("attn.scale"), s, zb_scalar(b, "const.sqrt_head_dim", 8.0f));
  int w = zb_node(b, OB_GOP_WHERE, N1("attn.causal"), 3, (int[]){cmask, s, zb_scalar(b, "const.float_min", -3.4028234663852886e38f)});
  zb_reinfer(b, w);
  int p = zb_node1(b, OB_GOP_SOFTMAX, N1("attn.softmax"), w);
  if (p >= 0) {
    ob_graph_set_attr_i(b->g, zb_prod(b, p), "axis", -1);
    zb_reinfer(b, p);
  }
  int c = zb_node2(b, OB_GOP_MATMUL, N1("attn.context"), p, v);
  c = zb_transpose(b, N1("attn.c_t"), c, 4, (int64_t[]){0, 2, 1, 3});
  c = reshape_bs(b, N1("attn.c_r"), c, dyn, 1, (int64_t[]){HID});
  int o = zb_linear3(b, N1("attn.c_proj"), c, HID);
  x = zb_node2(b, OB_GOP_ADD, N1("attn.residual"), o, x);
  int m = zb_linear3(b, N1("mlp.c_fc"), zb_layernorm(b, N1("ln_2"), x, 1e-5), FFN);
  /* gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) as exported */
  int t = zb_node2(b, OB_GOP_POW, N1("mlp.gelu.pow"), m, zb_scalar(b, "const.three", 3.0f));
  t = zb_node2(b, OB_GOP_MUL, N1("mlp.gelu.mul_c"), t, zb_scalar(b, "const.gelu_c", 0.044715f));
  t = zb_node2(b, OB_GOP_ADD, N1("mlp.gelu.add_x"), m, t);
  t = zb_node2(b, OB_GOP_MUL, N1("mlp.gelu.mul_k"), t, zb_scalar(b, "const.gelu_k", 0.7978845608028654f));
  t = zb_node1(b, OB_GOP_TANH, N1("mlp.gelu.tanh"), t);
  t = zb_node2(b, OB_GOP_ADD, N1("mlp.gelu.add_1"), t, zb_scalar(b, "const.one", 1.0f));
  int hm = zb_node2(b, OB_GOP_MUL, N1("mlp.gelu.half"), m, zb_scalar(b, "const.half", 0.5f));
  t = zb_node2(b, OB_GOP_MUL, N1("mlp.gelu.mul"), hm, t);
  int d = zb_linear3(b, N1("mlp.c_proj"), t, HID);
  return zb_node2(b, OB_GOP_ADD, N1("mlp.residual"), d, x);
#undef N1
#undef N2
}

void zoo_gpt2(zb *b, const zoo_args *a) {
  int64_t B = a->batch, S = a->seqlen, CTX = 1024;
  if (S > CTX) {
    b->st = ob_fail(b->ctx, OB_ERR_INVALID_ARG, "gpt2: sequence length %lld exceeds %lld positions", (long long)S, (long long)CTX);
    return;
  }
  int ids = zb_input(b, "input_ids", OB_I64, 2, (int64_t[]){B, S});
  /* position_ids = arange(seq) from the input's shape */
  int sdim = dyn_dim(b, "position_ids.len", ids, 1);
  int slen = zb_node2(b, OB_GOP_SQUEEZE, "position_ids.scalar", sdim, zb_ints(b, "const.axes0", 1, (int64_t[]){0}));
  int r = zb_node(b, OB_GOP_RANGE, "position_ids", 3, (int[]){scalar_i64(b, "const.i0", 0), slen, scalar_i64(b, "const.i1", 1)});
  zb_reinfer(b, r);
  int pid = unsqueeze(b, "position_ids.unsqueeze", r, 1, (int64_t[]){0});
  int wte = zb_param(b, "wte.weight", 2, (int64_t[]){50257, HID}, 0.02 * sqrt(3.0), 0);
  int wpe = zb_param(b, "wpe.weight", 2, (int64_t[]){CTX, HID}, 0.01 * sqrt(3.0), 0);
  int x = zb_node2(b, OB_GOP_GATHER, "wte", wte, ids);
  x = zb_node2(b, OB_GOP_ADD, "embeddings.add", x, zb_node2(b, OB_GOP_GATHER, "wpe", wpe, pid));
  /* the causal mask: a lower-triangular buffer [1, 1, CTX, CTX] sliced to S */
  uint8_t *tri = malloc((size_t)(CTX * CTX));
  if (!tri) {
    b->st = ob_fail(b->ctx, OB_ERR_NOMEM, "out of memory");
    return;
  }
  for (int64_t i = 0; i < CTX; i++)
    for (int64_t j = 0; j < CTX; j++) tri[i * CTX + j] = j <= i;
  int bias = -1;
  if (!b->st) b->st = ob_graph_add_const(b->g, "attn.bias", OB_BOOL, 4, (int64_t[]){1, 1, CTX, CTX}, tri, false, &bias);
  free(tri);
  int cm = -1;
  if (!b->st) {
    int se = dyn_dim(b, "causal.len", ids, 1);
    int z = zb_ints(b, "const.zeros2", 2, (int64_t[]){0, 0});
    int en = zb_concat(b, "causal.ends", 2, (int[]){se, se}, 0);
    cm = zb_node(b, OB_GOP_SLICE, "causal.slice", 4, (int[]){bias, z, en, zb_ints(b, "const.axes23", 2, (int64_t[]){2, 3})});
    zb_reinfer(b, cm);
  }
  for (int l = 0; l < LAYERS; l++) {
    char pre[64];
    snprintf(pre, sizeof pre, "h.%d", l);
    x = gpt2_block(b, pre, x, cm, true);
  }
  x = zb_layernorm(b, "ln_f", x, 1e-5);
  /* lm_head shares wte: logits = x @ wte^T */
  int wt = zb_transpose(b, "lm_head.transpose", wte, 2, (int64_t[]){1, 0});
  int logits = zb_node2(b, OB_GOP_MATMUL, "lm_head", x, wt);
  if (!b->st) b->st = ob_graph_mark_output(b->g, logits);
}

void zoo_lstm(zb *b, const zoo_args *a) {
  int64_t T = a->seqlen, B = a->batch, H = a->hidden, I = a->hidden;
  int x = zb_input(b, "input", OB_F32, 3, (int64_t[]){T, B, I});
  double sc = sqrt(3.0) / sqrt((double)H);
  for (int l = 0; l < 2 && !b->st; l++) {
    char nw[64], nr[64], nb[64], nn[64], ns[64];
    snprintf(nw, sizeof nw, "lstm.weight_ih_l%d", l);
    snprintf(nr, sizeof nr, "lstm.weight_hh_l%d", l);
    snprintf(nb, sizeof nb, "lstm.bias_l%d", l);
    snprintf(nn, sizeof nn, "lstm.layer%d", l);
    snprintf(ns, sizeof ns, "lstm.layer%d.squeeze", l);
    int64_t in = zb_dim(b, x, 2);
    int w = zb_param(b, nw, 3, (int64_t[]){1, 4 * H, in}, sc, 0);
    int r = zb_param(b, nr, 3, (int64_t[]){1, 4 * H, H}, sc, 0);
    int bi = zb_param(b, nb, 2, (int64_t[]){1, 8 * H}, sc / sqrt(3.0), 0);
    int y = zb_node(b, OB_GOP_LSTM, nn, 4, (int[]){x, w, r, bi});
    if (y >= 0) {
      ob_graph_set_attr_i(b->g, zb_prod(b, y), "hidden_size", H);
      zb_reinfer(b, y);
    }
    x = zb_node2(b, OB_GOP_SQUEEZE, ns, y, zb_ints(b, "const.axes1", 1, (int64_t[]){1}));
  }
  if (!b->st) b->st = ob_graph_mark_output(b->g, x);
}
