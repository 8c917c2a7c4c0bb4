/* core: status codes, error context, arena allocator, logging, hashing,
 * host description (hwloc) and the thread pool that runs parallel loops on a
 * caller-chosen core set. Everything else in libopbench stands on this. */
#ifndef OPBENCH_CORE_H
#define OPBENCH_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(OB_BUILD)
#define OB_API __attribute__((visibility("default")))
#else
#define OB_API
#endif

/* A result the caller must look at: a status or a "did it fit" flag whose
 * neglect would let bad input through (a field dropped, a size wrapped). */
#define OB_NODISCARD __attribute__((warn_unused_result))

/* Status codes: OB_OK or a negative code by category. */
typedef enum ob_status {
  OB_OK = 0,
  OB_ERR_INVALID_ARG = -1,  /* caller input is malformed (shape text, flag) */
  OB_ERR_NOMEM = -2,
  OB_ERR_IO = -3,           /* file or pipe I/O failed */
  OB_ERR_PARSE = -4,        /* malformed JSON / config / workload text */
  OB_ERR_UNSUPPORTED = -5,  /* well-formed but unknown (operator, template) */
  OB_ERR_NOT_FOUND = -6,    /* named item does not exist (knob, file) */
  OB_ERR_SCHEDULE = -7,     /* a schedule primitive was applied wrongly */
  OB_ERR_OUT_OF_SPACE = -8, /* config index/entity outside the config space */
  OB_ERR_COMPILE = -9,      /* the system compiler failed or is missing */
  OB_ERR_TIMEOUT = -10,     /* build or run exceeded its time limit */
  OB_ERR_RUNTIME = -11,     /* a kernel crashed */
  OB_ERR_WRONG_ANSWER = -12,/* a kernel's output differs from the reference */
  OB_ERR_SYSTEM = -13,      /* fork/mmap/pthread or another OS call failed */
  OB_ERR_BUSY = -14,        /* a resource (database) is locked */
  OB_ERR_LAUNCH = -15,      /* a GPU kernel's launch is over the device's limits */
  OB_STATUS_COUNT = 16      /* number of codes, OB_OK included */
} ob_status;

OB_API const char *ob_status_str(ob_status st);

/* Programming errors abort; outside failures return a status. */
#define OB_ASSERT(x)                                                        \
  do {                                                                      \
    if (!(x)) ob_assert_fail(__FILE__, __LINE__, #x);                       \
  } while (0)
OB_API _Noreturn void ob_assert_fail(const char *file, int line, const char *expr);

/* ---- context: error message and log level, passed first ---------------- */
typedef enum ob_log_level {
  OB_LOG_ERROR = 0,
  OB_LOG_WARN,
  OB_LOG_INFO,
  OB_LOG_DEBUG,
  OB_LOG_LEVEL_COUNT
} ob_log_level;

typedef struct ob_ctx ob_ctx;

OB_API ob_status ob_ctx_new(ob_ctx **out);
OB_API void ob_ctx_free(ob_ctx *ctx);
/* Records a message for `st` (printf-style) and returns `st`; the message
 * replaces any earlier one. */
OB_API ob_status ob_fail(ob_ctx *ctx, ob_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepends "prefix: " to the current message (adds context on the way up). */
OB_API void ob_fail_prefix(ob_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
OB_API const char *ob_ctx_errmsg(const ob_ctx *ctx);
OB_API void ob_ctx_clear_error(ob_ctx *ctx);
OB_API void ob_ctx_set_log_level(ob_ctx *ctx, ob_log_level lvl);
/* Fault injection for tests (SQLite's way of proving that every failed
 * allocation is handled): after `n` more allocations through the arenas
 * and strings tied to ctx (ob_arena_new(ctx, ...), ob_str's ctx), each one
 * fails as if memory were exhausted; n < 0 (the default) lifts the limit.
 * A new ctx takes n from the environment variable OPBENCH_TEST_ALLOC_LIMIT
 * when it is set (so the command-line tool can be tested the same way). */
OB_API void ob_ctx_set_alloc_limit(ob_ctx *ctx, int64_t n);
OB_API void ob_log(ob_ctx *ctx, ob_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- arena: one lifetime, freed in one call -------------------------------
 * Out of memory never aborts and is never silent. ob_arena_new returns NULL
 * when it cannot make the arena; the caller returns OB_ERR_NOMEM. An
 * allocation that fails returns NULL and marks the arena failed for good:
 * every later allocation from it returns NULL too.
 * Code that builds a structure in an arena may pass such a NULL along (the
 * te, schedule, lower and codegen builders accept one once their arena has
 * failed, and build nothing from it), and checks ob_arena_failed where the
 * structure becomes a result, returning OB_ERR_NOMEM with a message
 * (ob_fail(ctx, OB_ERR_NOMEM, "lowering: out of memory")). Allocations are
 * zeroed and 16-byte aligned. ctx (may be NULL) is where a test's
 * allocation limit (ob_ctx_set_alloc_limit) is counted. */
typedef struct ob_arena ob_arena;
OB_API ob_arena *ob_arena_new(ob_ctx *ctx, size_t chunk_bytes); /* NULL: out of memory */
OB_API void ob_arena_free(ob_arena *a);                         /* accepts NULL */
OB_API void *ob_arena_alloc(ob_arena *a, size_t bytes);         /* NULL: out of memory */
/* Copy of s (NULL: out of memory; s may be NULL once the arena failed). */
OB_API char *ob_arena_strdup(ob_arena *a, const char *s);
OB_API char *ob_arena_sprintf(ob_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* True once an allocation from `a` failed. */
OB_API bool ob_arena_failed(const ob_arena *a);

/* ---- growable string (malloc-backed) ---------------------------------------
 * Zero-initialise to start: {0}, or {.ctx = ctx} to count its growth against
 * ctx's allocation limit. Out of memory makes the string failed for good:
 * `failed` is set, later appends do nothing (data keeps the text so far, so
 * a reader never meets a dangling pointer), and ob_str_take returns NULL.
 * Whoever turns the string into a result checks (ob_str_take's NULL, or
 * `failed` when it reads data in place) and returns OB_ERR_NOMEM. */
typedef struct ob_str {
  char *data; /* NUL-terminated once anything was appended */
  size_t len, cap;
  bool failed; /* an allocation failed: the text is incomplete */
  ob_ctx *ctx; /* NULL, or the ctx whose allocation limit counts */
} ob_str;
OB_API void ob_str_append(ob_str *s, const char *text);
OB_API void ob_str_appendf(ob_str *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends t's text; a failed t fails s (its text is incomplete). */
OB_API void ob_str_append_str(ob_str *s, const ob_str *t);
/* Frees the text and clears the failure; the ctx stays. Accepts NULL. */
OB_API void ob_str_free(ob_str *s);
/* Hands the text over (the caller frees it) and leaves `s` empty; an
 * untouched string gives "". NULL when the string failed (its text is
 * freed) or "" could not be allocated. */
OB_API char *ob_str_take(ob_str *s);

/* ---- plots (plot.c) -------------------------------------------------------- */
/* Runs gnuplot (a program, Debian's gnuplot-nox) on `script`, which sets an
 * SVG terminal, and appends what it prints to svg. Errors name `who` (the
 * caller: "report", "timeline") and `what` (the plot; may be NULL), with
 * gnuplot's own message; a missing gnuplot is OB_ERR_UNSUPPORTED naming the
 * package. */
OB_API ob_status ob_gnuplot_svg(ob_ctx *ctx, const char *who, const char *what, const ob_str *script,
                                ob_str *svg);

/* ---- hashing -------------------------------------------------------------- */
OB_API uint64_t ob_hash64(const void *data, size_t len, uint64_t seed);
/* 16 lowercase hex digits + NUL into out[17]. */
OB_API void ob_hash_hex(uint64_t h, char out[17]);

/* ---- deterministic PRNG (splitmix64) for random inputs ------------------- */
typedef struct ob_rng { uint64_t s; } ob_rng;
OB_API uint64_t ob_rng_next(ob_rng *r);
/* Uniform in [-1, 1] and never exactly 0. */
OB_API float ob_rng_float(ob_rng *r);
/* p[0..n) = n successive ob_rng_float(r), the same values. */
OB_API void ob_rng_fill(ob_rng *r, float *p, int64_t n);

/* ---- big buffers on huge pages --------------------------------------------- */
/* Weights, activations and measurement buffers of 1 MiB or more are placed on
 * transparent huge pages (2 MiB aligned, madvise(MADV_HUGEPAGE); the kernel may
 * still decline). On 4 KiB pages a buffer's physical placement, and with it
 * which L2 sets it maps to, changes from process to process, and a few MiB of
 * weights overflow the TLB: the same kernel then runs up to 1.4x slower in one
 * process than in the next. Smaller buffers are 64-byte aligned. Both kinds
 * are released with ob_mem_free_big (which is free()). */
#define OB_MEM_BIG_MIN ((size_t)1 << 20)
#define OB_MEM_HUGE_PAGE ((size_t)2 << 20)
OB_API void *ob_mem_alloc_big(size_t bytes); /* NULL: out of memory */
OB_API void ob_mem_free_big(void *p);        /* accepts NULL */

/* ---- time ----------------------------------------------------------------- */
OB_API double ob_now_s(void); /* CLOCK_MONOTONIC seconds */

/* ---- host description ----------------------------------------------------- */
typedef struct ob_host {
  char cpu_model[128];
  char isa[256];        /* space-separated flags that matter: avx2 avx512f fma ... */
  int ncores;           /* physical cores */
  int npus;             /* logical processors */
  int64_t l1d_bytes, l2_bytes, l3_bytes;
  int vector_bits;      /* widest usable float SIMD: 128/256/512 */
  char os[128];
  char fingerprint[17]; /* hash of the fields above */
} ob_host;
/* Fills `out` from hwloc and /proc; missing facts stay 0 / empty. */
OB_API ob_status ob_host_detect(ob_ctx *ctx, ob_host *out);

/* The kinds of cores hwloc reports (hybrid CPUs: performance and efficiency
 * cores), in hwloc's order (least performant first), each with its
 * CPUs (the numbers core sets use) up to OB_CPUKIND_MAX_CPUS. A machine
 * whose hwloc reports no kinds (most, and virtual machines) gives one kind
 * holding every online CPU, named "all" (efficiency -1: unknown). */
#define OB_CPUKIND_MAX_CPUS 256
typedef struct ob_cpukind {
  char name[48];   /* hwloc's CoreType or FrequencyMaxMHz info, else "kind N" */
  int efficiency;  /* hwloc's rank (higher: more performant); -1 unknown */
  int ncpus;
  int cpus[OB_CPUKIND_MAX_CPUS];
} ob_cpukind;
OB_API ob_status ob_host_cpukinds(ob_ctx *ctx, ob_cpukind *kinds, int cap, int *n);

/* ---- thread pool on a core set ------------------------------------------- */
typedef void (*ob_task_fn)(void *closure, int64_t begin, int64_t end);
typedef struct ob_pool ob_pool;
/* A pool of ncores threads: the calling thread (pinned to cores[0]) and
 * ncores-1 workers pinned to cores[1..]. cores == NULL means 0..ncores-1. */
OB_API ob_status ob_pool_new(ob_ctx *ctx, const int *cores, int ncores, ob_pool **out);
OB_API void ob_pool_free(ob_pool *p);
OB_API int ob_pool_size(const ob_pool *p);
/* Runs fn over [0, n) and returns when all is done: each thread owns a
 * contiguous part (the static schedule of TVM's CPU runtime) and takes it
 * in grains, and a thread done early takes the back half of what another
 * has left, so fn sees several contiguous sub-ranges, each exactly once. */
OB_API void ob_pool_parallel_for(ob_pool *p, int64_t n, ob_task_fn fn, void *closure);
/* Runs fn(closure, i, i + 1) on thread i, for each of the pool's threads
 * (thread 0 the caller): for per-thread state such as counters. */
OB_API void ob_pool_per_thread(ob_pool *p, ob_task_fn fn, void *closure);
/* Parses "0,1" or "0-3" into cores[cap]; returns count via *n. */
OB_API OB_NODISCARD ob_status ob_parse_cores(ob_ctx *ctx, const char *text, int *cores, int cap, int *n);

/* ---- sizes from user input -------------------------------------------------
 * Shapes and attributes come from the command line, suite files and
 * imported logs. Every size computed from them goes through these checked
 * helpers, so an absurd value becomes a status whose message names what is
 * too big and the limit, never a wrapped integer. The limits: */
#define OB_MAX_ATTR INT64_C(2147483647)          /* |value| of one workload attribute (2^31-1) */
#define OB_MAX_TENSOR_ELEMS (INT64_C(1) << 31)   /* elements of one tensor (2^31) */
#define OB_MAX_BUFFER_BYTES (INT64_C(1) << 33)   /* bytes of one buffer (8 GiB: 2^31 float32) */

/* a * b and a + b into *out; false (and *out unspecified) on overflow. */
OB_NODISCARD static inline bool ob_mul_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
OB_NODISCARD static inline bool ob_add_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
OB_NODISCARD static inline bool ob_add_size(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
/* The element count of a tensor `what` of ndim dims into *numel (which may
 * be NULL). OB_ERR_INVALID_ARG when a dim is below 1 or the product exceeds
 * OB_MAX_TENSOR_ELEMS, e.g. "conv2d output: 4 x 4 x 4294967295 x 4294967295
 * elements, more than the limit of 2147483648 (2^31) elements per tensor". */
OB_API OB_NODISCARD ob_status ob_check_numel(ob_ctx *ctx, const char *what, int ndim,
                                             const int64_t *dims, int64_t *numel);
/* |v| <= OB_MAX_ATTR, else OB_ERR_INVALID_ARG naming `what` and the limit. */
OB_API OB_NODISCARD ob_status ob_check_attr(ob_ctx *ctx, const char *what, int64_t v);

/* ---- files named by the user ------------------------------------------------
 * A path on the command line may name a directory, a pipe, a device, an
 * endless stream, or the database itself. Readers are bounded and say which
 * limit a file broke; writers never replace anything but a regular file and
 * never write over one of their own inputs. */
typedef enum ob_file_kind {
  OB_FILE_MISSING = 0, /* nothing there (or a dangling symbolic link) */
  OB_FILE_REGULAR,
  OB_FILE_DIR,
  OB_FILE_STREAM,      /* a pipe, FIFO or character device: read once, no seeking */
  OB_FILE_OTHER,       /* a block device or socket */
  OB_FILE_KIND_COUNT
} ob_file_kind;
/* The kind of what `path` names, through symbolic links. A stat failure
 * other than "does not exist" is OB_ERR_IO naming the path. */
OB_API OB_NODISCARD ob_status ob_file_kind_of(ob_ctx *ctx, const char *path, ob_file_kind *kind);
OB_API const char *ob_file_kind_name(ob_file_kind k);
/* True when both paths exist and name one file: same device and inode,
 * whatever symbolic or hard links lead there. */
OB_API OB_NODISCARD bool ob_same_file(const char *a, const char *b);

/* Bounds of one reader; a field left 0 takes the default. */
#define OB_READ_MAX_BYTES (INT64_C(1) << 30) /* bytes of a whole input (1 GiB) */
#define OB_READ_MAX_LINE (INT64_C(1) << 20)  /* bytes of one line (1 MiB) */
#define OB_READ_MAX_LINES INT64_C(10000000)  /* lines of one input */
typedef struct ob_read_limits {
  int64_t max_bytes, max_line, max_lines;
} ob_read_limits;

/* A text file read line by line; `what` names it in messages ("AutoTVM
 * log", "suite"; NULL: "file"). Pipes and devices are streams, read once;
 * a directory or a socket is refused (OB_ERR_INVALID_ARG). An input longer
 * than max_bytes or max_lines, and a NUL byte (not a text file) are
 * OB_ERR_INVALID_ARG with a message "PATH[:LINE]: ..." that states the
 * limit; a read error is OB_ERR_IO; the input ends there. A line longer
 * than max_line is OB_ERR_PARSE ("PATH:LINE: line longer than the limit of
 * N bytes"): it counts as a line, and the next call goes on after it, so a
 * caller may skip it as a broken line. */
typedef struct ob_lines ob_lines;
OB_API OB_NODISCARD ob_status ob_lines_open(ob_ctx *ctx, const char *path, const char *what,
                                            const ob_read_limits *lim, ob_lines **out);
/* The next line, without its '\n', NUL-terminated, in *line (owned by the
 * reader, valid until the next call) and its length in *len; *line is NULL
 * at the end of the input. */
OB_API OB_NODISCARD ob_status ob_lines_next(ob_lines *r, char **line, size_t *len);
/* Number (from 1) of the line ob_lines_next returned last. */
OB_API int64_t ob_lines_lineno(const ob_lines *r);
OB_API void ob_lines_close(ob_lines *r); /* accepts NULL */
/* A whole text file, bounded as above, into *out (malloc'd, NUL-terminated;
 * the caller frees it) and its length into *len (may be NULL). */
OB_API OB_NODISCARD ob_status ob_read_text(ob_ctx *ctx, const char *path, const char *what,
                                           const ob_read_limits *lim, char **out, size_t *len);

/* An output file. "-" is stdout. A regular file (or a new one) is written
 * to a temporary file beside it and renamed over it by ob_out_close on
 * success, so a failed write leaves it as it was; a symbolic link is
 * followed (the file it names is replaced, the link kept). A character
 * device or a pipe is written directly; a directory, block device, socket
 * or dangling link is refused. An output that is one of `inputs` (compared
 * by device and inode, so also through links; stdout too when it is
 * redirected to a file) is refused before anything is written. Errors are
 * OB_ERR_INVALID_ARG for a refused path and OB_ERR_IO for a failed open. */
typedef struct ob_out {
  FILE *f;
  char *path, *tmp; /* tmp is NULL when writing directly */
  bool is_stdout;
} ob_out;
OB_API OB_NODISCARD ob_status ob_out_open(ob_ctx *ctx, const char *path,
                                          const char *const *inputs, int ninputs, ob_out *o);
/* Flushes and closes; with ok, renames the temporary file into place (a
 * write error is OB_ERR_IO); without ok, or on error, removes it. */
OB_API OB_NODISCARD ob_status ob_out_close(ob_ctx *ctx, ob_out *o, bool ok);

#ifdef __cplusplus
}
#endif
#endif
