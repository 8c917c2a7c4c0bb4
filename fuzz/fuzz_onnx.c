/* fuzz_onnx.c: libFuzzer target for the ONNX importer. Each input is an
 * ONNX file in memory: it is imported (parse, opset normalization, shape
 * inference with value propagation, validation) and, when it imports and is
 * small, optimized (every pass) and exported again, so that the passes and
 * the exporter see what hostile files can make the importer accept.
 * Build and run with `FUZZ_TARGETS=onnx make fuzz` (clang, -fsanitize=fuzzer,address,
 * undefined); crashes it finds go to fuzz/corpus/onnx/ and are replayed by
 * test_graph_onnx. */
#include <stdint.h>
#include <stdlib.h>

#include "opbench/graph.h"

/* Bigger graphs are imported but not optimized: folding materializes
 * tensors, and a fuzzer wants many small runs. */
enum { FUZZ_MAX_NUMEL = 1 << 16 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx) != OB_OK) return 0;
  ob_graph *g = NULL;
  if (ob_onnx_import_buffer(ctx, data, size, 1, 3, &g) == OB_OK) {
    bool small = ob_graph_macs(g) < 1e6;
    for (int t = 0; t < ob_graph_tensor_count(g) && small; t++) small = ob_graph_tensor_numel(g, t) <= FUZZ_MAX_NUMEL;
    if (small && ob_graph_optimize(ctx, g, 8, NULL) == OB_OK) {
      void *buf = NULL;
      size_t len = 0;
      if (ob_onnx_export_buffer(ctx, g, &buf, &len) == OB_OK) {
        ob_graph *h = NULL;
        /* what we write, we read */
        if (ob_onnx_import_buffer(ctx, buf, len, 1, 3, &h) != OB_OK) abort();
        ob_graph_free(h);
      }
      free(buf);
    }
    ob_graph_free(g);
  }
  ob_ctx_free(ctx);
  return 0;
}
