/* kernel_check.h: test helpers around the kernel API (kernel.h), for tests
 * that build many small kernels from schedules and compare them. It builds
 * and loads nothing itself: a test lowers (ob_lower), builds
 * (ob_kernel_build) and loads (ob_kernel_load) through the library and keeps
 * the results in a ku_kernel; these helpers fill random inputs (ob_rng,
 * never 0) with NaN-poisoned outputs and red zones, run a loaded kernel
 * (ob_kernel_run, or its ob_kernel_function with a counting runtime to see
 * the pool used), compare every output with a reference kernel or a
 * hand-written C function, and check texts. Everything a ku_kernel holds
 * is freed by ku_kernel_free. */
#ifndef OB_TESTS_KERNEL_CHECK_H
#define OB_TESTS_KERNEL_CHECK_H

#include <ftw.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opbench/kernel.h"
#include "opbench/lower.h"
#include "opbench/target.h"
#include "check.h"

/* float32 tolerance: relative 1e-4 plus a small absolute term for sums that
 * cancel to near zero. */
#define KU_RTOL 1e-4
#define KU_ATOL 1e-5

/* Kernels of a sanitizer build are instrumented too, so that their
 * out-of-bounds reads and writes are caught where they happen (the ASan
 * runtime of the test resolves their __asan_* calls). $OB_TEST_KERNEL_FLAGS
 * overrides the flags. */
#if defined(__SANITIZE_ADDRESS__)
#define KU_KERNEL_FLAGS "-O3 -march=native -fPIC -shared -fsanitize=address -fno-omit-frame-pointer"
#else
#define KU_KERNEL_FLAGS NULL /* the builder's default */
#endif

typedef struct ku_env {
  ob_ctx *ctx;
  char cache[256];
  bool own_cache; /* a temporary cache directory, removed by ku_env_fini */
  int cores[2];
  int ncores;
  int nbuilt, ncached;
  int npar_calls; /* rt->parallel_for calls made by kernels so far */
  double build_s; /* wall time spent in ob_kernel_build */
  int lanes;      /* float lanes of the host target, which kernels built without one take */
} ku_env;

typedef struct ku_kernel {
  char name[96];
  ob_lowered *low;         /* NULL when lowering failed */
  char *nest;              /* ob_lowered_str */
  ob_kernel_artifact art;  /* what ob_kernel_build made */
  const char *src;         /* the generated C (art.source) once built */
  ob_kernel *k;            /* NULL until built and loaded */
} ku_kernel;

/* A hand-written reference: reads the inputs and writes the outputs of
 * bufs (kernel-argument order). */
typedef void (*ku_ref_fn)(void *const *bufs);

static int ku_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static int ku_env_init(ku_env *e) {
  memset(e, 0, sizeof *e);
  if (ob_ctx_new(&e->ctx)) return -1;
  const char *c = getenv("OPBENCH_CACHE");
  if (c && c[0]) {
    snprintf(e->cache, sizeof e->cache, "%s", c);
  } else {
    snprintf(e->cache, sizeof e->cache, "/tmp/ob-test-kernels-XXXXXX");
    if (!mkdtemp(e->cache)) return -1;
    e->own_cache = true;
  }
  /* The pool pins its threads; take the first two cores we may run on. */
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE && e->ncores < 2; i++)
      if (CPU_ISSET(i, &set)) e->cores[e->ncores++] = i;
  }
  if (e->ncores == 0) e->cores[e->ncores++] = 0;
  ob_target *host = NULL;
  if (ob_target_host(e->ctx, &host)) return -1;
  e->lanes = ob_target_get_facts(host)->lanes_f32;
  ob_target_free(host);
  return 0;
}

static void ku_env_fini(ku_env *e) {
  if (e->own_cache) nftw(e->cache, ku_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  ob_ctx_free(e->ctx);
}

static void ku_kernel_free(ku_kernel *k) {
  if (!k) return;
  ob_kernel_free(k->k);
  ob_lowered_free(k->low);
  free(k->nest);
  ob_kernel_artifact_clear(&k->art);
  memset(k, 0, sizeof *k);
}

/* ---- buffers ---------------------------------------------------------------- */
/* Bytes of poison on each side of every buffer: a kernel that writes
 * outside its buffers changes them. */
#define KU_RED 256
#define KU_RED_BYTE 0xa5

typedef struct ku_bufs {
  int n;
  unsigned char *raw[16]; /* KU_RED + bytes + KU_RED */
  void *p[16];
  size_t bytes[16];
  ob_dtype dt[16];
  int64_t numel[16];
  bool out[16];
} ku_bufs;

static void ku_bufs_free(ku_bufs *b) {
  for (int i = 0; i < b->n; i++) free(b->raw[i]);
  b->n = 0;
}

/* Buffers shaped like k's arguments: inputs random from `seed` (never 0),
 * outputs poisoned (NaN, or 0x5a bytes for integer outputs). */
static void ku_bufs_new(const ku_kernel *k, uint64_t seed, ku_bufs *b) {
  memset(b, 0, sizeof *b);
  b->n = ob_lowered_num_args(k->low);
  OB_ASSERT(b->n <= 16);
  ob_rng rng = {seed * 0x9e3779b97f4a7c15ULL + 1};
  for (int i = 0; i < b->n; i++) {
    b->dt[i] = ob_lowered_arg_dtype(k->low, i);
    b->numel[i] = ob_lowered_arg_numel(k->low, i);
    b->out[i] = ob_lowered_arg_is_output(k->low, i);
    b->bytes[i] = (size_t)b->numel[i] * ob_dtype_size(b->dt[i]);
    b->raw[i] = malloc(b->bytes[i] + 2 * KU_RED);
    OB_ASSERT(b->raw[i]);
    memset(b->raw[i], KU_RED_BYTE, b->bytes[i] + 2 * KU_RED);
    b->p[i] = b->raw[i] + KU_RED;
    for (int64_t j = 0; j < b->numel[i]; j++) {
      switch (b->dt[i]) {
      case OB_F32: ((float *)b->p[i])[j] = b->out[i] ? NAN : ob_rng_float(&rng); break;
      case OB_I32: {
        int32_t v = (int32_t)(ob_rng_next(&rng) % 199) - 99;
        ((int32_t *)b->p[i])[j] = b->out[i] ? 0x5a5a5a5a : (v ? v : 1);
        break;
      }
      case OB_I8: {
        int8_t v = (int8_t)((int)(ob_rng_next(&rng) % 199) - 99);
        ((int8_t *)b->p[i])[j] = b->out[i] ? (int8_t)0x5a : (v ? v : 1);
        break;
      }
      default: memset(b->p[i], 0x5a, b->bytes[i]); j = b->numel[i]; break;
      }
    }
  }
}

static double ku_val(const ku_bufs *b, int i, int64_t j) {
  switch (b->dt[i]) {
  case OB_F32: return ((const float *)b->p[i])[j];
  case OB_I32: return ((const int32_t *)b->p[i])[j];
  case OB_I8: return ((const int8_t *)b->p[i])[j];
  default: return 0;
  }
}

typedef struct ku_pool {
  ob_pool *pool;
  int calls;
} ku_pool;

/* The runtime's parallel_for, counting calls so tests see the pool used. */
static void ku_parallel_for(void *pool, int64_t n, ob_krt_task fn, void *closure) {
  ku_pool *p = pool;
  p->calls++;
  ob_pool_parallel_for(p->pool, n, fn, closure);
}

/* Runs k serially (ob_kernel_run without a pool), or on 2 pool threads
 * through its ob_kernel_function with a runtime that counts parallel_for
 * calls, so tests see the pool used. */
static int ku_call(ku_env *e, const ku_kernel *k, void *const *bufs, bool parallel) {
  if (!parallel) return ob_kernel_run(k->k, bufs, NULL);
  ob_pool *pool = NULL;
  /* made per call: the pool pins this thread, which would also pin the
   * compilers that later batches fork */
  ob_status st = ob_pool_new(e->ctx, e->cores, e->ncores, &pool);
  CHECK_MSG(st == OB_OK, "ob_pool_new: %s", ob_ctx_errmsg(e->ctx));
  if (st) return -1;
  ku_pool pc = {.pool = pool};
  ob_krt rt = {.pool = &pc, .parallel_for = ku_parallel_for};
  int r = ob_kernel_function(k->k)(bufs, &rt);
  ob_pool_free(pool);
  e->npar_calls += pc.calls;
  return r;
}

/* The red zones of every buffer are intact and the inputs are unchanged
 * (against a fresh copy made from the same seed). */
static bool ku_untouched(const char *label, const ku_bufs *b, const ku_bufs *fresh) {
  bool ok = true;
  for (int i = 0; i < b->n; i++) {
    bool red = true;
    for (size_t j = 0; j < KU_RED; j++)
      red &= b->raw[i][j] == KU_RED_BYTE && b->raw[i][KU_RED + b->bytes[i] + j] == KU_RED_BYTE;
    CHECK_MSG(red, "%s: buffer %d: the kernel wrote outside it", label, i);
    bool same = b->out[i] || memcmp(b->p[i], fresh->p[i], b->bytes[i]) == 0;
    CHECK_MSG(same, "%s: input %d was modified", label, i);
    ok &= red && same;
  }
  return ok;
}

/* Compares every output of got with want; one failed CHECK per output at
 * most, naming the first bad element. */
static bool ku_same_outputs(const char *label, const ku_bufs *got, const ku_bufs *want) {
  bool ok = true;
  for (int i = 0; i < got->n; i++) {
    if (!got->out[i]) continue;
    int64_t bad = -1, nbad = 0;
    for (int64_t j = 0; j < got->numel[i]; j++) {
      double g = ku_val(got, i, j), w = ku_val(want, i, j);
      bool eq = got->dt[i] == OB_F32 ? fabs(g - w) <= KU_RTOL * fabs(w) + KU_ATOL : g == w;
      if (!eq || isnan(g) || isnan(w)) {
        if (bad < 0) bad = j;
        nbad++;
      }
    }
    CHECK_MSG(bad < 0, "%s: output %d: %lld of %lld elements differ; first [%lld]: got %.9g, want %.9g",
              label, i, (long long)nbad, (long long)got->numel[i], (long long)bad,
              bad < 0 ? 0 : ku_val(got, i, bad), bad < 0 ? 0 : ku_val(want, i, bad));
    ok &= bad < 0;
  }
  return ok;
}

/* Runs `test` (in parallel on the pool when `parallel`, else with rt NULL)
 * and `ref` (serially) on the same random inputs, or calls `ref_fn` when
 * ref is NULL, and compares all outputs. */
static bool ku_compare_with(ku_env *e, const char *label, const ku_kernel *test,
                            const ku_kernel *ref, ku_ref_fn ref_fn, bool parallel, uint64_t seed) {
  CHECK_MSG(test->k && (ref_fn || (ref && ref->k)), "%s: kernel not built", label);
  if (!test->k || !(ref_fn || (ref && ref->k))) return false;
  int n = ob_lowered_num_args(test->low);
  if (ref) {
    bool same = ob_lowered_num_args(ref->low) == n;
    for (int i = 0; same && i < n; i++)
      same = ob_lowered_arg_numel(ref->low, i) == ob_lowered_arg_numel(test->low, i) &&
             ob_lowered_arg_dtype(ref->low, i) == ob_lowered_arg_dtype(test->low, i) &&
             strcmp(ob_lowered_arg_name(ref->low, i), ob_lowered_arg_name(test->low, i)) == 0;
    CHECK_MSG(same, "%s: kernel arguments differ from the reference's", label);
    if (!same) return false;
  }
  ku_bufs got, want;
  ku_bufs_new(test, seed, &got);
  ku_bufs_new(test, seed, &want);
  int rc = ku_call(e, test, got.p, parallel);
  CHECK_MSG(rc == 0, "%s: kernel returned %d", label, rc);
  if (ref) ob_kernel_run(ref->k, want.p, NULL);
  else ref_fn(want.p);
  ku_bufs fresh;
  ku_bufs_new(test, seed, &fresh);
  bool ok = rc == 0 && ku_same_outputs(label, &got, &want);
  ok &= ku_untouched(label, &got, &fresh);
  if (ref) ok &= ku_untouched(label, &want, &fresh);
  ku_bufs_free(&got);
  ku_bufs_free(&want);
  ku_bufs_free(&fresh);
  return ok;
}

static bool ku_compare(ku_env *e, const char *label, const ku_kernel *test, const ku_kernel *ref,
                       bool parallel) {
  return ku_compare_with(e, label, test, ref, NULL, parallel, 1);
}

static bool ku_compare_ref(ku_env *e, const char *label, const ku_kernel *test, ku_ref_fn ref,
                           bool parallel) {
  return ku_compare_with(e, label, test, NULL, ref, parallel, 2);
}

/* Prints what a failed structural check looked at. */
#define KU_HAS(text, needle)                                                             \
  CHECK_MSG((text) && strstr((text), (needle)), "'%s' not found in:\n%s", (needle),     \
            (text) ? (text) : "(null)")
#define KU_HASNT(text, needle)                                                           \
  CHECK_MSG((text) && !strstr((text), (needle)), "'%s' unexpectedly found in:\n%s",     \
            (needle), (text) ? (text) : "(null)")

#define KU_HAS_ANY(text, a, b)                                                           \
  CHECK_MSG((text) && (strstr((text), (a)) || strstr((text), (b))),                      \
            "neither '%s' nor '%s' found in:\n%s", (a), (b), (text) ? (text) : "(null)")

/* True when the needles appear in this order in text. */
static bool ku_in_order(const char *text, int n, const char *const *needles) {
  const char *p = text;
  for (int i = 0; i < n && p; i++) {
    p = strstr(p, needles[i]);
    if (p) p += strlen(needles[i]);
  }
  return p != NULL;
}
#define KU_ORDER(text, ...)                                                              \
  CHECK_MSG(ku_in_order((text), (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), \
                        (const char *[]){__VA_ARGS__}),                                  \
            "not in the order %s:\n%s", #__VA_ARGS__, (text) ? (text) : "(null)")

/* A loop or if whose body is empty: a line ending in "{" directly followed
 * by its closing "}". Returns the offending line or NULL. */
static const char *ku_empty_block(const char *nest) {
  for (const char *p = nest; p && *p;) {
    const char *eol = strchr(p, '\n');
    if (!eol) break;
    if (eol > p && eol[-1] == '{') {
      const char *q = eol + 1;
      while (*q == ' ') q++;
      if (*q == '}') return p;
    }
    p = eol + 1;
  }
  return NULL;
}

/* Counts non-overlapping occurrences of needle. */
static int ku_count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

#endif
