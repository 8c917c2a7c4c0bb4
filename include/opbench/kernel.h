/* kernel: build -> artifact -> load -> run for generated kernels. Today it
 * holds the builder (drives the system compiler, in parallel, with a
 * content-addressed cache and a timeout) and the measurement error classes
 * (AutoTVM's); the kernel ABI, artifacts, in-process load/run and the one
 * timing loop follow. Sits between codegen and measure in the layer order. */
#ifndef OPBENCH_KERNEL_H
#define OPBENCH_KERNEL_H

#include "opbench/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* AutoTVM's MeasureErrorNo, same numbers. */
typedef enum ob_merr {
  OB_MERR_NONE = 0,
  OB_MERR_INSTANTIATION = 1, /* the config could not be turned into code */
  OB_MERR_COMPILE_HOST = 2,
  OB_MERR_COMPILE_DEVICE = 3,
  OB_MERR_RUNTIME = 4,       /* crash: SIGSEGV, SIGFPE, SIGILL, abort */
  OB_MERR_WRONG_ANSWER = 5,
  OB_MERR_BUILD_TIMEOUT = 6,
  OB_MERR_RUN_TIMEOUT = 7,
  OB_MERR_UNKNOWN = 8,
  OB_MERR_COUNT
} ob_merr;
OB_API const char *ob_merr_str(int error_no);

/* ---- builder --------------------------------------------------------------- */
typedef struct ob_build_opts {
  const char *cc;        /* NULL: $OPBENCH_CC, else "cc" */
  const char *flags;     /* NULL: "-O3 -march=native -mprefer-vector-width=512
                            -fPIC -shared" */
  const char *cache_dir; /* NULL: $OPBENCH_CACHE, else $XDG_CACHE_HOME/opbench,
                            else $HOME/.cache/opbench, else /tmp/opbench-<uid> */
  double timeout_s;      /* <= 0: 10 s, as AutoTVM */
  int jobs;              /* parallel compilers; <= 0: number of online CPUs */
} ob_build_opts;

typedef struct ob_build_input {
  const char *source; /* full C translation unit */
  const char *name;   /* kernel name, used in file names and messages */
} ob_build_input;

typedef struct ob_build_result {
  int error_no;       /* OB_MERR_NONE, _COMPILE_HOST or _BUILD_TIMEOUT */
  char *so_path;      /* malloc'd path of the shared object on success */
  char *message;      /* malloc'd compiler output (stderr), or NULL */
  double build_s;     /* wall seconds spent compiling (0 if cached) */
  bool cached;        /* the shared object came from the cache */
} ob_build_result;

/* Builds n sources, up to opts->jobs compilers at once. Per-variant failures
 * land in out[i].error_no with the compiler's message; the call itself fails
 * only when nothing could be attempted (e.g. the compiler does not exist:
 * OB_ERR_COMPILE with a message naming it). out[] must be cleared by the
 * caller with ob_build_result_clear. */
OB_API ob_status ob_build_batch(ob_ctx *ctx, const ob_build_opts *opts,
                                const ob_build_input *in, int n, ob_build_result *out);
OB_API void ob_build_result_clear(ob_build_result *r);

/* The compiler ob_build_batch would use with these opts: its resolved path
 * and the first line of its `--version` (empty if it prints none). Both
 * truncated to their caps. OB_ERR_COMPILE when it does not exist. */
OB_API ob_status ob_build_compiler(ob_ctx *ctx, const ob_build_opts *opts, char *path,
                                   size_t path_cap, char *version, size_t version_cap);

#ifdef __cplusplus
}
#endif
#endif
