/* fuzz.h: what the libFuzzer targets share. Each target is one file
 * fuzz_<name>.c defining LLVMFuzzerTestOneInput and listed once in
 * fuzz/CMakeLists.txt; its seed corpus is fuzz/corpus/<name>/. A target
 * feeds the input to one parser the way the command line does, then checks
 * properties that must hold for any accepted input (round trips); a broken
 * property calls OB_FUZZ_REQUIRE, which aborts so libFuzzer saves the input.
 * Errors are expected results, never crashes. */
#ifndef OB_FUZZ_H
#define OB_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/core.h"

/* The input as a NUL-terminated string (malloc'd; NUL bytes inside stay and
 * end the string early, as they would for a C caller). */
static inline char *ob_fuzz_str(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* One context for the process: the library keeps no state in it between
 * calls other than the last message. */
static inline ob_ctx *ob_fuzz_ctx(void) {
  static ob_ctx *ctx;
  if (!ctx && ob_ctx_new(&ctx) != OB_OK) abort();
  ob_ctx_set_log_level(ctx, OB_LOG_ERROR);
  return ctx;
}

#define OB_FUZZ_REQUIRE(x)                                                            \
  do {                                                                                \
    if (!(x)) {                                                                       \
      fprintf(stderr, "fuzz property failed at %s:%d: %s\n", __FILE__, __LINE__, #x); \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
