/* model.c: the zoo's registry (names, sources, published figures) and
 * ob_model_load, which builds a zoo model or imports an ONNX file (local or
 * downloaded) and infers its shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "graph/zoo_impl.h"

typedef struct zoo_entry {
  ob_zoo_info info;
  int64_t size, seqlen, hidden; /* defaults */
  void (*build)(zb *b, const zoo_args *a);
  int depth;                    /* resnet */
} zoo_entry;

static void build_r18(zb *b, const zoo_args *a) { zoo_resnet(b, a, 18); }
static void build_r50(zb *b, const zoo_args *a) { zoo_resnet(b, a, 50); }

/* Published figures: torchvision's model documentation (GFLOPS there are
 * multiply-adds), the BERT and GPT-2 papers / model cards, and the YOLOv5
 * v6.0 release's model summary (GFLOPs there are 2 x multiply-adds, so
 * 16.5 GFLOPs = 8.25 G multiply-adds). */
static const zoo_entry k_zoo[] = {
    {{"local", "resnet-18", "ResNet-18 (torchvision), 224x224", 1.814e9, 11689512, "torchvision"}, 224, 0, 0, build_r18, 18},
    {{"local", "resnet-50", "ResNet-50 v1.5 (torchvision), 224x224", 4.089e9, 25557032, "torchvision"}, 224, 0, 0, build_r50, 50},
    {{"local", "vgg-16", "VGG-16 (torchvision, configuration D), 224x224", 15.470e9, 138357544, "torchvision"}, 224, 0, 0,
     zoo_vgg16, 0},
    {{"local", "mobilenet-v2", "MobileNetV2 (torchvision), 224x224", 0.301e9, 3504872, "torchvision"}, 224, 0, 0,
     zoo_mobilenet_v2, 0},
    {{"local", "squeezenet-1.1", "SqueezeNet 1.1 (torchvision), 224x224", 0.349e9, 1235496, "torchvision"}, 224, 0, 0,
     zoo_squeezenet11, 0},
    {{"local", "inception-v3", "Inception v3 (torchvision, aux_logits off), 299x299", 5.713e9, 27161264,
      "torchvision; its 27.16 M parameters include the AuxLogits head (3,326,696), which aux_logits=False drops"},
     299, 0, 0, zoo_inception_v3, 0},
    {{"local", "randwire", "RandWire-WS large (IOS's randwire_large: C 154, its 16/32/32/32-node graphs), 224x224", 7.9e9,
      61.5e6,
      "Xie et al. 2019, RandWire-WS C=154: 7.9 G FLOPs (multiply-adds), 61.5 M parameters, for that paper's own random "
      "graphs; IOS's graphs have other numbers of input nodes"},
     224, 0, 0, zoo_randwire, 0},
    {{"local", "nasnet-a", "NASNet-A Large (6 @ 4032), 331x331, the paper's cells", 23.8e9, 88.9e6,
      "Zoph et al. 2018, NASNet-A (6 @ 4032): 23.8 G multiply-adds, 88.9 M parameters"},
     331, 0, 0, zoo_nasnet_large, 0},
    {{"local", "bert-base", "BERT-base encoder (12 layers, 768 hidden, 12 heads) on hidden states, sequence --seqlen (128)",
      0, 85e6, "BERT-base's 110 M (Devlin et al.) less the embeddings (23.8 M) and the pooler (0.6 M)"},
     0, 128, 0, zoo_bert_encoder, 0},
    {{"local", "lstm", "2-layer LSTM (ONNX LSTM), hidden --hidden (512) = input size, sequence --seqlen (32)", 0, 0, ""}, 0, 32,
     512, zoo_lstm, 0},
    {{"local", "yolov5s", "YOLOv5s v6.0 (ultralytics), 640x640, detection decoding included", 8.25e9, 7235389,
      "ultralytics v6.0 summary: 7235389 parameters, 16.5 GFLOPs (= 2 x multiply-adds)"},
     640, 0, 0, zoo_yolov5s, 0},
    {{"transformers", "bert-base-uncased", "Hugging Face BertModel (embeddings, encoder, pooler), sequence --seqlen (128)", 0,
      110e6, "the model card's 110 M"},
     0, 128, 0, zoo_bert_uncased, 0},
    {{"transformers", "gpt2", "Hugging Face GPT-2 (124 M, causal, tied LM head), sequence --seqlen (128)", 0, 124e6,
      "the model card's 124 M"},
     0, 128, 0, zoo_gpt2, 0},
    {{"simple", "simple", "a small CNN for quick runs (3 convs, a residual add), 32x32", 0, 0, ""}, 32, 0, 0, zoo_simple, 0},
};
#define NZOO ((int)(sizeof k_zoo / sizeof k_zoo[0]))

int ob_zoo_count(void) { return NZOO; }
const ob_zoo_info *ob_zoo_info_at(int i) { return i >= 0 && i < NZOO ? &k_zoo[i].info : NULL; }

ob_model_opts ob_model_opts_default(void) {
  ob_model_opts o;
  memset(&o, 0, sizeof o);
  o.source = "local";
  o.batch = 1;
  o.seed = 1;
  return o;
}

static ob_status unknown_name(ob_ctx *ctx, const char *source, const char *name) {
  ob_str known = {0};
  for (int i = 0; i < NZOO; i++)
    if (!strcmp(k_zoo[i].info.source, source)) ob_str_appendf(&known, "%s%s", known.len ? ", " : "", k_zoo[i].info.name);
  ob_status st = ob_fail(ctx, OB_ERR_NOT_FOUND, "unknown model '%s' for --modelsource %s (known: %s)", name ? name : "",
                         source, known.data ? known.data : "none");
  ob_str_free(&known);
  return st;
}

static ob_status build_zoo(ob_ctx *ctx, const ob_model_opts *o, const char *source, ob_graph **out) {
  const char *name = o->name;
  if (!strcmp(source, "simple") && (!name || !*name)) name = "simple";
  const zoo_entry *e = NULL;
  for (int i = 0; i < NZOO && !e; i++)
    if ((!strcmp(k_zoo[i].info.source, source) || (!strcmp(source, "local") && !strcmp(k_zoo[i].info.source, "simple"))) &&
        name && !strcasecmp(k_zoo[i].info.name, name))
      e = &k_zoo[i];
  if (!e) return unknown_name(ctx, source, name);
  zoo_args a = {o->batch, o->seqlen ? o->seqlen : e->seqlen, o->input_size ? o->input_size : e->size,
                o->hidden ? o->hidden : e->hidden};
  if (a.seqlen < 0 || a.seqlen > 1 << 16) return ob_fail(ctx, OB_ERR_INVALID_ARG, "sequence length %lld is out of range", (long long)a.seqlen);
  if (a.size < 0 || a.size > 1 << 14) return ob_fail(ctx, OB_ERR_INVALID_ARG, "input size %lld is out of range", (long long)a.size);
  if (a.hidden < 0 || a.hidden > 1 << 14) return ob_fail(ctx, OB_ERR_INVALID_ARG, "hidden size %lld is out of range", (long long)a.hidden);
  if ((e->seqlen && a.seqlen < 1) || (e->size && a.size < 1) || (e->hidden && a.hidden < 1))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: sizes must be positive", e->info.name);
  zb b = {0};
  b.ctx = ctx;
  b.rng.s = o->seed * 0x9e3779b97f4a7c15ull + 12345;
  b.zero = o->zero_weights;
  ob_status st = ob_graph_new(ctx, e->info.name, &b.g);
  if (st) return st;
  e->build(&b, &a);
  st = b.st;
  if (!st) st = ob_graph_infer_shapes(ctx, b.g);
  if (!st) st = ob_graph_validate(ctx, b.g);
  if (st) {
    ob_fail_prefix(ctx, "model %s", e->info.name);
    ob_graph_free(b.g);
    return st;
  }
  *out = b.g;
  return OB_OK;
}

ob_status ob_model_load(ob_ctx *ctx, const ob_model_opts *o, ob_graph **out) {
  const char *src = o->source && *o->source ? o->source : "local";
  if (o->batch < 1 || o->batch > 1 << 16)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "batch size %lld is out of range (1..65536)", (long long)o->batch);
  if (!strcmp(src, "local") || !strcmp(src, "transformers") || !strcmp(src, "simple")) return build_zoo(ctx, o, src, out);
  if (!strcmp(src, "onnx")) {
    if (!o->path || !*o->path) return ob_fail(ctx, OB_ERR_INVALID_ARG, "--modelsource onnx needs --modelpath FILE");
    return ob_onnx_import_file(ctx, o->path, o->batch, o->seqlen, out);
  }
  if (!strcmp(src, "remoteonnx")) {
    if (!o->name || !*o->name) return ob_fail(ctx, OB_ERR_INVALID_ARG, "--modelsource remoteonnx needs --modelname URL");
    char *path = NULL;
    ob_status st = ob_model_download(ctx, o->name, o->cache_dir, o->sha256, o->max_bytes, &path);
    if (st) return st;
    st = ob_onnx_import_file(ctx, path, o->batch, o->seqlen, out);
    free(path);
    return st;
  }
  return ob_fail(ctx, OB_ERR_NOT_FOUND, "unknown model source '%s' (known: local, transformers, simple, onnx, remoteonnx)", src);
}
