/* test_core.c: tests for the core module: status names, context messages
 * and logging, arena, ob_str, hashing, the PRNG, host detection, core-list
 * parsing and the thread pool (correct partition, pinning, fast dispatch,
 * idle pool costs no CPU); out of memory in arenas and strings (sticky
 * failure, the ctx's allocation limit). Uses only the public API. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "opbench/core.h"

/* ---- helpers ------------------------------------------------------------ */

/* Runs fn with stderr redirected into a buffer; returns what was written. */
static void capture_stderr(void (*fn)(void *), void *arg, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *tmp = tmpfile();
  if (!tmp) return;
  fflush(stderr);
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(buf, 1, cap - 1, tmp);
  buf[n] = '\0';
  fclose(tmp);
}

/* Runs fn in a child with stderr captured; returns the signal that ended it
 * (0 if it exited normally). */
static int run_child(void (*fn)(void), char *err, size_t cap) {
  int fds[2];
  err[0] = '\0';
  if (pipe(fds) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    fn();
    _exit(0);
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t r;
  while (len + 1 < cap && (r = read(fds[0], err + len, cap - 1 - len)) > 0) len += (size_t)r;
  err[len] = '\0';
  close(fds[0]);
  int wst = 0;
  waitpid(pid, &wst, 0);
  return WIFSIGNALED(wst) ? WTERMSIG(wst) : 0;
}

static double cpu_time_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- status, assert, ctx, log ------------------------------------------ */

static void test_status(void) {
  for (int i = 0; i < OB_STATUS_COUNT; i++) {
    const char *s = ob_status_str((ob_status)-i);
    CHECK(s && s[0]);
    CHECK_MSG(strcmp(s, "unknown status") != 0, "code %d has no name", -i);
    for (int j = 0; j < i; j++) CHECK(strcmp(s, ob_status_str((ob_status)-j)) != 0);
  }
  CHECK(strcmp(ob_status_str(OB_OK), "ok") == 0);
  CHECK(strcmp(ob_status_str((ob_status)1), "unknown status") == 0);
  CHECK(strcmp(ob_status_str((ob_status)-OB_STATUS_COUNT), "unknown status") == 0);
}

static void assert_child(void) {
  int two = 2;
  OB_ASSERT(two + two == 5);
}

static void test_assert(void) {
  char err[512];
  int sig = run_child(assert_child, err, sizeof err);
  CHECK(sig == SIGABRT);
  CHECK_MSG(strstr(err, "opbench: assertion failed at ") && strstr(err, "test_core.c:") &&
                strstr(err, "two + two == 5"),
            "got \"%s\"", err);
}

static void test_ctx(void) {
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK && ctx);
  CHECK(strcmp(ob_ctx_errmsg(ctx), "") == 0);

  CHECK(ob_fail(ctx, OB_ERR_PARSE, "bad token '%s' at line %d", "x", 3) == OB_ERR_PARSE);
  CHECK(strcmp(ob_ctx_errmsg(ctx), "bad token 'x' at line 3") == 0);
  ob_fail_prefix(ctx, "file %s", "a.json");
  CHECK(strcmp(ob_ctx_errmsg(ctx), "file a.json: bad token 'x' at line 3") == 0);
  ob_fail_prefix(ctx, "loading");
  CHECK(strcmp(ob_ctx_errmsg(ctx), "loading: file a.json: bad token 'x' at line 3") == 0);

  /* A new failure replaces the old message. */
  ob_fail(ctx, OB_ERR_IO, "second");
  CHECK(strcmp(ob_ctx_errmsg(ctx), "second") == 0);
  ob_ctx_clear_error(ctx);
  CHECK(strcmp(ob_ctx_errmsg(ctx), "") == 0);

  /* Overlong messages and prefixes are truncated, not overflowed. */
  char big[5000];
  memset(big, 'z', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ob_fail(ctx, OB_ERR_INVALID_ARG, "%s", big);
  size_t len = strlen(ob_ctx_errmsg(ctx));
  CHECK(len > 1000 && len < sizeof big);
  ob_fail_prefix(ctx, "%s", big);
  CHECK(strlen(ob_ctx_errmsg(ctx)) < sizeof big);
  ob_fail(ctx, OB_ERR_INVALID_ARG, "short");
  ob_fail_prefix(ctx, "%s", big);
  CHECK(strlen(ob_ctx_errmsg(ctx)) < sizeof big);

  /* A NULL ctx drops messages but still returns the status. */
  CHECK(ob_fail(NULL, OB_ERR_IO, "nobody hears %d", 1) == OB_ERR_IO);
  ob_fail_prefix(NULL, "x");
  CHECK(strcmp(ob_ctx_errmsg(NULL), "") == 0);

  ob_ctx_free(ctx);
  ob_ctx_free(NULL);
}

static void log_some(void *arg) {
  ob_ctx *ctx = arg;
  ob_log(ctx, OB_LOG_ERROR, "e-%d", 1);
  ob_log(ctx, OB_LOG_WARN, "w-%d", 2);
  ob_log(ctx, OB_LOG_INFO, "i-%d", 3);
  ob_log(ctx, OB_LOG_DEBUG, "d-%d", 4);
}

static void test_log(void) {
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  char out[4096];
  capture_stderr(log_some, ctx, out, sizeof out);
  CHECK_MSG(strstr(out, "e-1") && strstr(out, "w-2"), "got \"%s\"", out);
  CHECK(!strstr(out, "i-3") && !strstr(out, "d-4"));
  CHECK(strstr(out, "error") && strstr(out, "warn"));
  CHECK(out[0] && out[strlen(out) - 1] == '\n');

  ob_ctx_set_log_level(ctx, OB_LOG_DEBUG);
  capture_stderr(log_some, ctx, out, sizeof out);
  CHECK(strstr(out, "e-1") && strstr(out, "w-2") && strstr(out, "i-3") && strstr(out, "d-4"));

  ob_ctx_set_log_level(ctx, OB_LOG_ERROR);
  capture_stderr(log_some, ctx, out, sizeof out);
  CHECK(strstr(out, "e-1") && !strstr(out, "w-2"));

  capture_stderr(log_some, NULL, out, sizeof out); /* NULL ctx: default WARN */
  CHECK(strstr(out, "w-2") && !strstr(out, "i-3"));
  ob_ctx_free(ctx);
}

/* ---- arena and ob_str ----------------------------------------------------- */

static void test_arena(void) {
  ob_arena *a = ob_arena_new(NULL, 1024);
  CHECK(a && !ob_arena_failed(a));
  enum { N = 20000 };
  unsigned char **ptrs = malloc(N * sizeof *ptrs);
  size_t *sizes = malloc(N * sizeof *sizes);
  ob_rng rng = {42};
  int misaligned = 0, dirty = 0, clobbered = 0;
  for (int i = 0; i < N; i++) {
    /* Mostly small, sometimes bigger than a chunk. */
    size_t sz = (i % 97 == 0) ? 3000 + ob_rng_next(&rng) % 5000 : ob_rng_next(&rng) % 200;
    unsigned char *p = ob_arena_alloc(a, sz);
    if ((uintptr_t)p % 16) misaligned++;
    for (size_t k = 0; k < sz; k++) dirty += p[k] != 0;
    memset(p, (unsigned char)(i * 31 + 7), sz);
    ptrs[i] = p;
    sizes[i] = sz;
  }
  for (int i = 0; i < N; i++)
    for (size_t k = 0; k < sizes[i]; k++) clobbered += ptrs[i][k] != (unsigned char)(i * 31 + 7);
  CHECK(misaligned == 0);
  CHECK(dirty == 0);
  CHECK(clobbered == 0);

  void *z1 = ob_arena_alloc(a, 0), *z2 = ob_arena_alloc(a, 0);
  CHECK(z1 && z2 && z1 != z2);

  char *s = ob_arena_strdup(a, "conv2d");
  CHECK(strcmp(s, "conv2d") == 0);
  char *f = ob_arena_sprintf(a, "%s_oc%d", "conv2d", 16);
  CHECK(strcmp(f, "conv2d_oc16") == 0);
  char *longf = ob_arena_sprintf(a, "%5000s", "x");
  CHECK(strlen(longf) == 5000 && longf[4999] == 'x');

  free(ptrs);
  free(sizes);
  ob_arena_free(a);
  ob_arena_free(NULL);

  ob_arena *d = ob_arena_new(NULL, 0); /* default chunk size */
  CHECK(ob_arena_alloc(d, 100000) != NULL);
  ob_arena_free(d);
}

static void new_ctx_into(void *arg) {
  if (ob_ctx_new((ob_ctx **)arg) != OB_OK) *(ob_ctx **)arg = NULL;
}

/* Out of memory in an arena: NULL, the arena failed for good (later small
 * requests fail too), and nothing aborts. A request no allocator can serve
 * stands for exhaustion here; the ctx limit below for exhaustion anywhere. */
static void test_arena_oom(void) {
  ob_arena *a = ob_arena_new(NULL, 512);
  CHECK(ob_arena_alloc(a, 64) != NULL && !ob_arena_failed(a));
  CHECK(ob_arena_alloc(a, SIZE_MAX / 2 + 1) == NULL);
  CHECK(ob_arena_failed(a));
  CHECK(ob_arena_alloc(a, 1) == NULL);
  CHECK(ob_arena_strdup(a, "x") == NULL);
  CHECK(ob_arena_strdup(a, NULL) == NULL); /* an earlier failure's NULL passed along */
  CHECK(ob_arena_sprintf(a, "%d", 1) == NULL);
  ob_arena_free(a);
  CHECK(ob_arena_new(NULL, SIZE_MAX - 1) == NULL);
  CHECK(!ob_arena_failed(NULL));

  /* The ctx limit counts arenas and allocations, shared by every arena of
   * the ctx, and is lifted again with -1. */
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  ob_ctx_set_alloc_limit(ctx, 3);
  ob_arena *b = ob_arena_new(ctx, 0); /* 1 */
  CHECK(b != NULL);
  CHECK(b && ob_arena_alloc(b, 8) != NULL);       /* 2 */
  CHECK(b && ob_arena_strdup(b, "kept") != NULL); /* 3 */
  CHECK(b && ob_arena_alloc(b, 8) == NULL && ob_arena_failed(b));
  CHECK(ob_arena_new(ctx, 0) == NULL);
  ob_ctx_set_alloc_limit(ctx, -1);
  CHECK(b && ob_arena_alloc(b, 8) == NULL); /* failed for good, limit or not */
  ob_arena *c = ob_arena_new(ctx, 0);
  CHECK(c && ob_arena_alloc(c, 8) != NULL && !ob_arena_failed(c));
  ob_arena_free(c);
  ob_arena_free(b);
  ob_ctx_set_alloc_limit(ctx, 0);
  CHECK(ob_arena_new(ctx, 0) == NULL);
  ob_arena *free_of_ctx = ob_arena_new(NULL, 0); /* no ctx: no limit */
  CHECK(free_of_ctx && ob_arena_alloc(free_of_ctx, 8) != NULL);
  ob_arena_free(free_of_ctx);
  ob_ctx_free(ctx);

  /* OPBENCH_TEST_ALLOC_LIMIT sets the limit of every new ctx; a value that
   * is not a number is refused with a warning and sets none. */
  CHECK(setenv("OPBENCH_TEST_ALLOC_LIMIT", "1", 1) == 0);
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  ob_arena *e = ob_arena_new(ctx, 0);
  CHECK(e && ob_arena_alloc(e, 8) == NULL);
  ob_arena_free(e);
  ob_ctx_free(ctx);
  CHECK(setenv("OPBENCH_TEST_ALLOC_LIMIT", "lots", 1) == 0);
  char err[512];
  ctx = NULL;
  capture_stderr(new_ctx_into, &ctx, err, sizeof err);
  CHECK_MSG(ctx && strstr(err, "OPBENCH_TEST_ALLOC_LIMIT='lots'"), "got \"%s\"", err);
  ob_arena *f = ob_arena_new(ctx, 0);
  CHECK(f && ob_arena_alloc(f, 8) != NULL);
  ob_arena_free(f);
  ob_ctx_free(ctx);
  unsetenv("OPBENCH_TEST_ALLOC_LIMIT");
}

static void test_str(void) {
  ob_str s = {0};
  ob_str_append(&s, "");
  CHECK(s.data && s.len == 0 && s.data[0] == '\0');
  ob_str_append(&s, "void ");
  ob_str_appendf(&s, "%s_%d(%s)", "kernel", 7, "float *x");
  CHECK(strcmp(s.data, "void kernel_7(float *x)") == 0);
  CHECK(s.len == strlen(s.data));
  for (int i = 0; i < 1000; i++) ob_str_appendf(&s, "%04d", i);
  CHECK(s.len == 23 + 4000 && strlen(s.data) == s.len);
  CHECK(strncmp(s.data + 23 + 4 * 999, "0999", 4) == 0);
  char *owned = ob_str_take(&s);
  CHECK(s.data == NULL && s.len == 0 && s.cap == 0);
  CHECK(strncmp(owned, "void kernel_7", 13) == 0);
  free(owned);

  ob_str e = {0};
  char *empty = ob_str_take(&e);
  CHECK(empty && empty[0] == '\0');
  free(empty);

  ob_str t = {0};
  ob_str_append(&t, "abc");
  ob_str_free(&t);
  CHECK(t.data == NULL && t.len == 0);
  ob_str_free(&t);
  ob_str_free(NULL);

  /* Out of memory is sticky: the text so far stays readable, appends do
   * nothing, ob_str_take gives NULL, a failed part fails the whole. */
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  ob_str u = {.ctx = ctx};
  ob_ctx_set_alloc_limit(ctx, 1);
  ob_str_append(&u, "first");                  /* one allocation: 64 bytes */
  CHECK(!u.failed && !strcmp(u.data, "first"));
  ob_str_appendf(&u, "%0100d", 7);             /* needs to grow: fails */
  CHECK(u.failed && u.data && !strcmp(u.data, "first") && u.len == 5);
  ob_str_append(&u, "x");
  ob_str_appendf(&u, "%s", "y");
  CHECK(u.failed && !strcmp(u.data, "first"));
  ob_str whole = {0};
  ob_str_append(&whole, "a");
  ob_str_append_str(&whole, &u);
  CHECK(whole.failed && ob_str_take(&whole) == NULL);
  CHECK(whole.data == NULL && !whole.failed); /* taken: empty and usable again */
  CHECK(ob_str_take(&u) == NULL);
  CHECK(u.data == NULL && u.len == 0 && !u.failed && u.ctx == ctx);
  ob_str_append(&u, "z"); /* the limit is spent: the first allocation fails */
  CHECK(u.failed && u.data == NULL);
  ob_str_free(&u);
  CHECK(!u.failed);
  ob_ctx_set_alloc_limit(ctx, -1);
  ob_str_append(&u, "again");
  char *again = ob_str_take(&u);
  CHECK(again && !strcmp(again, "again"));
  free(again);
  ob_str ok = {0}, part = {0};
  ob_str_append(&part, "tail");
  ob_str_append(&ok, "head-");
  ob_str_append_str(&ok, &part);
  CHECK(!ok.failed && !strcmp(ok.data, "head-tail"));
  ob_str_free(&ok);
  ob_str_free(&part);
  ob_ctx_free(ctx);
}

/* ---- hashing and PRNG ----------------------------------------------------- */

static void test_hash(void) {
  /* XXH64 reference values, seed 0. */
  CHECK(ob_hash64("", 0, 0) == 0xef46db3751d8e999ull);
  CHECK(ob_hash64(NULL, 0, 0) == 0xef46db3751d8e999ull);
  CHECK(ob_hash64("a", 1, 0) == 0xd24ec4f1a98c6e5bull);
  CHECK(ob_hash64("abc", 3, 0) == 0x44bc2cf5ad770999ull);
  const char *spam = "Nobody inspects the spammish repetition";
  CHECK(ob_hash64(spam, strlen(spam), 0) == 0xfbcea83c8a378bf1ull);

  CHECK(ob_hash64("abc", 3, 0) == ob_hash64("abc", 3, 0));
  CHECK(ob_hash64("abc", 3, 0) != ob_hash64("abd", 3, 0));
  CHECK(ob_hash64("abc", 3, 0) != ob_hash64("abc", 3, 1));
  CHECK(ob_hash64("abc", 3, 0) != ob_hash64("abc", 2, 0));

  /* Avalanche: flipping any one bit of a long source flips about half of
   * the output bits. */
  enum { LEN = 4096 };
  unsigned char *buf = malloc(LEN);
  ob_rng rng = {7};
  for (int i = 0; i < LEN; i++) buf[i] = (unsigned char)ob_rng_next(&rng);
  uint64_t base = ob_hash64(buf, LEN, 0);
  int flips = 0, total = 0, worst = 64;
  for (int i = 0; i < 512; i++) {
    size_t pos = ob_rng_next(&rng) % LEN;
    int bit = (int)(ob_rng_next(&rng) % 8);
    buf[pos] ^= (unsigned char)(1u << bit);
    uint64_t h = ob_hash64(buf, LEN, 0);
    buf[pos] ^= (unsigned char)(1u << bit);
    int d = __builtin_popcountll(h ^ base);
    total += d;
    flips++;
    if (d < worst) worst = d;
  }
  double mean = (double)total / flips;
  CHECK_MSG(mean > 29.0 && mean < 35.0, "mean flipped bits %.2f", mean);
  CHECK_MSG(worst >= 12, "worst flip changed only %d bits", worst);
  CHECK(ob_hash64(buf, LEN, 0) == base);
  /* Every length in 0..64 (all tail paths) gives distinct hashes. */
  uint64_t seen[65];
  int dup = 0;
  for (int n = 0; n <= 64; n++) {
    seen[n] = ob_hash64(buf, (size_t)n, 0);
    for (int j = 0; j < n; j++) dup += seen[j] == seen[n];
  }
  CHECK(dup == 0);
  free(buf);

  char hex[17];
  ob_hash_hex(0x0123456789abcdefull, hex);
  CHECK(strcmp(hex, "0123456789abcdef") == 0);
  ob_hash_hex(0, hex);
  CHECK(strcmp(hex, "0000000000000000") == 0);
  ob_hash_hex(~0ull, hex);
  CHECK(strcmp(hex, "ffffffffffffffff") == 0);
}

static void test_rng(void) {
  ob_rng a = {123}, b = {123}, c = {124};
  int same = 1, differs = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = ob_rng_next(&a);
    same &= x == ob_rng_next(&b);
    differs |= x != ob_rng_next(&c);
  }
  CHECK(same);
  CHECK(differs);

  /* splitmix64 reference: seed 0 starts 0xe220a8397b1dcdaf. */
  ob_rng z = {0};
  CHECK(ob_rng_next(&z) == 0xe220a8397b1dcdafull);

  ob_rng r = {99};
  int zeros = 0, out_of_range = 0, neg = 0, pos = 0;
  double sum = 0;
  enum { N = 1000000 };
  for (int i = 0; i < N; i++) {
    float v = ob_rng_float(&r);
    zeros += v == 0.0f;
    out_of_range += !(v >= -1.0f && v <= 1.0f);
    neg += v < 0;
    pos += v > 0;
    sum += v;
  }
  CHECK(zeros == 0);
  CHECK(out_of_range == 0);
  CHECK(neg > N / 2 - N / 50 && pos > N / 2 - N / 50);
  CHECK_MSG(sum / N > -0.01 && sum / N < 0.01, "mean %g", sum / N);

  ob_rng f1 = {5}, f2 = {5};
  int fsame = 1;
  for (int i = 0; i < 1000; i++) fsame &= ob_rng_float(&f1) == ob_rng_float(&f2);
  CHECK(fsame);

  /* the bulk fill gives the same values and leaves the same state */
  float buf[1001];
  ob_rng g1 = {77}, g2 = {77};
  ob_rng_fill(&g1, buf, 1000);
  buf[1000] = 42.0f;
  int fill_same = 1;
  for (int i = 0; i < 1000; i++) fill_same &= buf[i] == ob_rng_float(&g2);
  CHECK(fill_same && buf[1000] == 42.0f && g1.s == g2.s);
  ob_rng_fill(&g1, buf, 0);
  CHECK(g1.s == g2.s);
}

static double monotonic_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ob_now_s is CLOCK_MONOTONIC in seconds: a reading taken between two of
 * its calls lies between them, and a sleep lasts at least as long as asked
 * (no upper bound: a loaded machine may sleep longer). */
static void test_time(void) {
  double t0 = ob_now_s();
  double ref = monotonic_s();
  double t1 = ob_now_s();
  CHECK_MSG(t0 <= ref && ref <= t1, "%.9f %.9f %.9f", t0, ref, t1);
  sleep_ms(20);
  double t2 = ob_now_s();
  CHECK_MSG(t2 - t1 >= 0.020 - 1e-6, "slept %.6f s", t2 - t1);
  CHECK(ob_now_s() >= t2);
}

/* ---- host ----------------------------------------------------------------- */

/* Size in bytes of cpu0's cache of `level` ("Data"/"Unified" for data
 * caches) as the kernel describes it in sysfs ("48K"); 0 if absent. */
static int64_t sysfs_cache_bytes(int level) {
  for (int i = 0; i < 16; i++) {
    char path[96], type[32] = "";
    int lv = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    if (fscanf(f, "%d", &lv) != 1) lv = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if ((f = fopen(path, "r"))) {
      if (fscanf(f, "%31s", type) != 1) type[0] = '\0';
      fclose(f);
    }
    if (lv != level || !strcmp(type, "Instruction")) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!(f = fopen(path, "r"))) continue;
    long long v = 0;
    char unit = 0;
    int got = fscanf(f, "%lld%c", &v, &unit);
    fclose(f);
    if (got < 1) continue;
    return got == 2 && unit == 'K' ? v << 10 : got == 2 && unit == 'M' ? v << 20 : v;
  }
  return 0;
}

/* The cache sizes hwloc reported agree with the kernel's own description
 * (hwloc reads the same sysfs files on Linux; a unit or level mix-up shows
 * here), or with sysconf where sysfs says nothing. */
static void check_host_caches(const ob_host *h) {
  const int64_t got[3] = {h->l1d_bytes, h->l2_bytes, h->l3_bytes};
#ifdef _SC_LEVEL1_DCACHE_SIZE
  const int conf[3] = {_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE};
#endif
  int known = 0;
  for (int l = 0; l < 3; l++) {
    int64_t want = sysfs_cache_bytes(l + 1);
#ifdef _SC_LEVEL1_DCACHE_SIZE
    if (want == 0 && sysconf(conf[l]) > 0) want = sysconf(conf[l]);
#endif
    if (want == 0) continue;
    known++;
    CHECK_MSG(got[l] == want, "L%d: host says %lld bytes, the system %lld", l + 1, (long long)got[l],
              (long long)want);
  }
  if (known == 0) CHECK_SKIP("host: neither sysfs nor sysconf describes the caches");
  /* Inclusive sizes grow with the level wherever both are known. */
  if (h->l1d_bytes && h->l2_bytes) CHECK(h->l1d_bytes < h->l2_bytes);
  if (h->l2_bytes && h->l3_bytes) CHECK(h->l2_bytes <= h->l3_bytes);
}

static void test_host(void) {
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  ob_host h1, h2;
  CHECK(ob_host_detect(ctx, &h1) == OB_OK);
  CHECK(ob_host_detect(ctx, &h2) == OB_OK);
  CHECK(h1.ncores >= 1);
  CHECK(h1.npus >= h1.ncores);
  CHECK(strlen(h1.fingerprint) == 16);
  CHECK(strcmp(h1.fingerprint, h2.fingerprint) == 0);
  CHECK(memcmp(&h1, &h2, sizeof h1) == 0);
  CHECK(h1.vector_bits == 128 || h1.vector_bits == 256 || h1.vector_bits == 512);
  CHECK(h1.os[0] != '\0');
  check_host_caches(&h1);
  if (strstr(h1.isa, "avx512f")) CHECK(h1.vector_bits == 512);
  printf("host: %s | %s | %d cores %d PUs | L1d %lld L2 %lld L3 %lld | %d-bit | %s | %s\n",
         h1.cpu_model, h1.isa, h1.ncores, h1.npus, (long long)h1.l1d_bytes,
         (long long)h1.l2_bytes, (long long)h1.l3_bytes, h1.vector_bits, h1.os,
         h1.fingerprint);
  ob_ctx_free(ctx);
}

/* ---- core lists ------------------------------------------------------------ */

static void test_parse_cores(void) {
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  int c[16], n = -1;

  CHECK(ob_parse_cores(ctx, "0,1", c, 16, &n) == OB_OK && n == 2 && c[0] == 0 && c[1] == 1);
  CHECK(ob_parse_cores(ctx, "0-3", c, 16, &n) == OB_OK && n == 4 && c[0] == 0 && c[3] == 3);
  CHECK(ob_parse_cores(ctx, "0-1,3", c, 16, &n) == OB_OK && n == 3 && c[0] == 0 &&
        c[1] == 1 && c[2] == 3);
  CHECK(ob_parse_cores(ctx, "5", c, 16, &n) == OB_OK && n == 1 && c[0] == 5);
  CHECK(ob_parse_cores(ctx, " 2 - 3 , 7 ", c, 16, &n) == OB_OK && n == 3 && c[0] == 2 &&
        c[2] == 7);
  CHECK(ob_parse_cores(ctx, "3,1", c, 16, &n) == OB_OK && n == 2 && c[0] == 3 && c[1] == 1);

  static const char *const bad[] = {"",    "a",   "1-",  "-1",  "3-1",     "0,,1",
                                    "1,",  "0;1", "1 2", "0,0", "0-2,1",   "99999",
                                    "0x1", "1-a", ",",   "  ",  "0-100000"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    n = -1;
    ob_status st = ob_parse_cores(ctx, bad[i], c, 16, &n);
    CHECK_MSG(st == OB_ERR_INVALID_ARG, "\"%s\" parsed", bad[i]);
    CHECK(n == 0);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", bad[i]);
    CHECK_MSG(strstr(ob_ctx_errmsg(ctx), quoted), "message \"%s\" does not name %s",
              ob_ctx_errmsg(ctx), quoted);
  }
  /* More cores than fit. */
  CHECK(ob_parse_cores(ctx, "0-3", c, 2, &n) == OB_ERR_INVALID_ARG && n == 0);
  CHECK(strstr(ob_ctx_errmsg(ctx), "0-3"));
  ob_ctx_free(ctx);
}

/* ---- thread pool ------------------------------------------------------------ */

enum { MAX_CALLS = 64, MAX_N = 100000 };

typedef struct visit {
  _Atomic int count[MAX_N];
  _Atomic int64_t sum;
  _Atomic int ncalls;
  int64_t begin[MAX_CALLS], end[MAX_CALLS];
  pthread_t tid[MAX_CALLS];
  int cpu[MAX_CALLS];
  int slow_ms; /* calls off the caller's thread sleep this long */
  pthread_t caller;
} visit;

static void visit_task(void *closure, int64_t begin, int64_t end) {
  visit *v = closure;
  int k = atomic_fetch_add(&v->ncalls, 1);
  if (k < MAX_CALLS) {
    v->begin[k] = begin;
    v->end[k] = end;
    v->tid[k] = pthread_self();
    v->cpu[k] = sched_getcpu();
  }
  if (v->slow_ms && !pthread_equal(pthread_self(), v->caller)) sleep_ms(v->slow_ms);
  int64_t s = 0;
  for (int64_t i = begin; i < end; i++) {
    atomic_fetch_add_explicit(&v->count[i], 1, memory_order_relaxed);
    s += i;
  }
  atomic_fetch_add(&v->sum, s);
}

/* Runs one parallel_for and checks sum, exactly-once visits and where the
 * calls ran: each a non-empty sub-range, on the caller or on a worker
 * pinned to cores[1]. */
static void check_pool_run(ob_pool *p, visit *v, int64_t n, const int *cores) {
  memset(v, 0, sizeof *v);
  ob_pool_parallel_for(p, n, visit_task, v);
  int size = ob_pool_size(p);
  CHECK_MSG(atomic_load(&v->sum) == n * (n - 1) / 2, "n=%lld size=%d sum", (long long)n, size);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) bad += atomic_load(&v->count[i]) != 1;
  CHECK_MSG(bad == 0, "n=%lld size=%d: %d indices not visited exactly once", (long long)n,
            size, bad);
  int calls = atomic_load(&v->ncalls);
  if (n == 0 || size == 1 || n == 1) CHECK_MSG(calls == (n > 0), "n=%lld size=%d: %d calls", (long long)n, size, calls);
  for (int k = 0; k < calls && k < MAX_CALLS; k++) {
    CHECK(0 <= v->begin[k] && v->begin[k] < v->end[k] && v->end[k] <= n);
    bool caller = pthread_equal(v->tid[k], pthread_self());
    if (cores && !caller)
      CHECK_MSG(v->cpu[k] == cores[1], "a worker's call ran on cpu %d, want %d", v->cpu[k], cores[1]);
    if (cores && caller) CHECK_MSG(v->cpu[k] == cores[0], "the caller ran on cpu %d", v->cpu[k]);
  }
}

/* Iterations below `slow_below` sleep 1 ms each: the caller's part. */
typedef struct steal {
  int64_t slow_below;
  _Atomic int count[64];
  pthread_t tid[64];
} steal;

static void steal_task(void *closure, int64_t begin, int64_t end) {
  steal *st = closure;
  for (int64_t i = begin; i < end; i++) {
    st->tid[i] = pthread_self();
    atomic_fetch_add(&st->count[i], 1);
    if (i < st->slow_below) sleep_ms(1);
  }
}

static void per_thread_task(void *closure, int64_t begin, int64_t end) {
  visit *v = closure;
  CHECK(end == begin + 1 && begin >= 0 && begin < 2);
  v->tid[begin] = pthread_self();
  v->cpu[begin] = sched_getcpu();
  atomic_fetch_add(&v->ncalls, 1);
}

static void noop_task(void *closure, int64_t begin, int64_t end) {
  _Atomic int64_t *acc = closure;
  atomic_fetch_add_explicit(acc, end - begin, memory_order_relaxed);
}

typedef struct nested {
  ob_pool *pool;
  _Atomic int64_t acc;
} nested;

static void nested_task(void *closure, int64_t begin, int64_t end) {
  (void)begin;
  (void)end;
  nested *ns = closure;
  ob_pool_parallel_for(ns->pool, 10, noop_task, &ns->acc);
}

static void nested_child(void) {
  int cores[2];
  cpu_set_t set;
  sched_getaffinity(0, sizeof set, &set);
  int k = 0;
  for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
    if (CPU_ISSET(c, &set)) cores[k++] = c;
  nested ns = {NULL, 0};
  if (k < 2 || ob_pool_new(NULL, cores, 2, &ns.pool) != OB_OK) return;
  ob_pool_parallel_for(ns.pool, 10, nested_task, &ns);
}

static void test_pool(void) {
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  visit *v = calloc(1, sizeof *v);

  cpu_set_t orig;
  CHECK(sched_getaffinity(0, sizeof orig, &orig) == 0);
  int cores[2], ncores = 0;
  for (int c = 0; c < CPU_SETSIZE && ncores < 2; c++)
    if (CPU_ISSET(c, &orig)) cores[ncores++] = c;
  CHECK(ncores >= 1);

  static const int64_t ns[] = {0, 1, 2, 7, 1000, MAX_N};

  /* One thread: everything runs inline on the caller. */
  ob_pool *p1 = NULL;
  CHECK(ob_pool_new(ctx, cores, 1, &p1) == OB_OK && p1);
  CHECK(ob_pool_size(p1) == 1);
  CHECK(sched_getcpu() == cores[0]);
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) check_pool_run(p1, v, ns[i], NULL);
  ob_pool_free(p1);
  ob_pool_free(NULL);

  cpu_set_t now;
  sched_getaffinity(0, sizeof now, &now);
  CHECK_MSG(CPU_EQUAL(&now, &orig), "caller affinity not restored by ob_pool_free");

  if (ncores < 2) {
    CHECK_SKIP("pool: only one usable core; the two-thread tests need two");
  } else {
    ob_pool *p2 = NULL;
    ob_status st = ob_pool_new(ctx, cores, 2, &p2);
    CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
    if (st == OB_OK) {
      CHECK(ob_pool_size(p2) == 2);
      CHECK(sched_getcpu() == cores[0]);
      for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        check_pool_run(p2, v, ns[i], cores);

      /* Dispatch cost: many short loops back to back. */
      _Atomic int64_t acc = 0;
      enum { REPS = 10000 };
      double t0 = ob_now_s();
      for (int r = 0; r < REPS; r++) ob_pool_parallel_for(p2, 1000, noop_task, &acc);
      double dt = ob_now_s() - t0;
      /* Every call's work is done once and in full; the time is printed
       * for the reader, not checked (speed is for benchmarks: this machine
       * is shared and a check against a bound fails under load). */
      CHECK(atomic_load(&acc) == (int64_t)REPS * 1000);
      printf("pool: %d parallel_for calls on 2 threads: %.3f s (%.2f us/call)\n", REPS, dt,
             dt / REPS * 1e6);

      /* An idle pool sleeps: almost no CPU while nothing is dispatched. */
      sleep_ms(20); /* let the workers' spin run out */
      double c0 = cpu_time_s(), w0 = ob_now_s();
      sleep_ms(200);
      double cpu = cpu_time_s() - c0, wall = ob_now_s() - w0;
      printf("pool: idle for %.3f s used %.4f s CPU\n", wall, cpu);
      CHECK_MSG(cpu < 0.05, "idle pool used %.3f s CPU in %.3f s", cpu, wall);

      /* Waking sleeping workers, and a worker far slower than the caller
       * (the caller steals what the worker has left, or sleeps and is
       * woken). */
      check_pool_run(p2, v, 1000, cores);
      memset(v, 0, sizeof *v);
      v->slow_ms = 50;
      v->caller = pthread_self();
      ob_pool_parallel_for(p2, 100, visit_task, v);
      CHECK(atomic_load(&v->sum) == 100 * 99 / 2);
      v->slow_ms = 0;
      check_pool_run(p2, v, 7, cores);

      /* Stealing: the caller's half sleeps 1 ms an iteration, the worker's
       * is instant; the worker, done at once, takes over part of the
       * caller's (static halves: none of it). */
      steal *sl = calloc(1, sizeof *sl);
      sl->slow_below = 32;
      ob_pool_parallel_for(p2, 64, steal_task, sl);
      int stolen = 0, twice = 0;
      for (int i = 0; i < 64; i++) {
        twice += atomic_load(&sl->count[i]) != 1;
        stolen += i < 32 && !pthread_equal(sl->tid[i], pthread_self());
      }
      CHECK_MSG(twice == 0, "%d iterations not run exactly once", twice);
      CHECK_MSG(stolen >= 4, "the idle worker ran %d of the caller's 32 slow iterations", stolen);
      printf("pool: the idle worker took %d of the caller's 32 slow iterations\n", stolen);
      free(sl);

      /* Exactly once under contention: uneven iterations, many rounds. */
      for (int r = 0; r < 300; r++) check_pool_run(p2, v, 50 + r * 7 % 900, cores);

      /* Per thread: index i on thread i, on its core. */
      memset(v, 0, sizeof *v);
      ob_pool_per_thread(p2, per_thread_task, v);
      CHECK(atomic_load(&v->ncalls) == 2);
      CHECK(pthread_equal(v->tid[0], pthread_self()) && v->cpu[0] == cores[0]);
      CHECK(!pthread_equal(v->tid[1], pthread_self()) && v->cpu[1] == cores[1]);
      ob_pool_free(p2);
      sched_getaffinity(0, sizeof now, &now);
      CHECK(CPU_EQUAL(&now, &orig));
    }

    /* cores == NULL means 0..ncores-1. */
    if (cores[0] == 0 && cores[1] == 1) {
      ob_pool *pn = NULL;
      CHECK(ob_pool_new(ctx, NULL, 2, &pn) == OB_OK);
      if (pn) check_pool_run(pn, v, 1000, cores);
      ob_pool_free(pn);
    }

    /* Nested use is a programming error and aborts. */
    char err[512];
    int sig = run_child(nested_child, err, sizeof err);
    CHECK_MSG(sig == SIGABRT && strstr(err, "assertion failed"), "sig %d, \"%s\"", sig, err);
  }

  /* Bad core sets fail cleanly, name the core, and leave affinity alone. */
  ob_pool *bad = (ob_pool *)&ctx; /* must be reset to NULL */
  int absent[2] = {cores[0], CPU_SETSIZE - 1};
  CHECK(ob_pool_new(ctx, absent, 2, &bad) == OB_ERR_INVALID_ARG && bad == NULL);
  char last_core[16];
  snprintf(last_core, sizeof last_core, "%d", CPU_SETSIZE - 1);
  CHECK_MSG(strstr(ob_ctx_errmsg(ctx), last_core), "\"%s\"", ob_ctx_errmsg(ctx));
  int huge[2] = {cores[0], 5000};
  CHECK(ob_pool_new(ctx, huge, 2, &bad) == OB_ERR_INVALID_ARG && bad == NULL);
  CHECK_MSG(strstr(ob_ctx_errmsg(ctx), "5000"), "\"%s\"", ob_ctx_errmsg(ctx));
  int first_absent[1] = {CPU_SETSIZE - 1};
  CHECK(ob_pool_new(ctx, first_absent, 1, &bad) == OB_ERR_INVALID_ARG && bad == NULL);
  CHECK(strstr(ob_ctx_errmsg(ctx), last_core));
  int twice[2] = {cores[0], cores[0]};
  CHECK(ob_pool_new(ctx, twice, 2, &bad) == OB_ERR_INVALID_ARG && bad == NULL);
  CHECK(ob_pool_new(ctx, cores, 0, &bad) == OB_ERR_INVALID_ARG && bad == NULL);
  sched_getaffinity(0, sizeof now, &now);
  CHECK_MSG(CPU_EQUAL(&now, &orig), "affinity changed by a failed ob_pool_new");

  free(v);
  ob_ctx_free(ctx);
}

int main(void) {
  test_status();
  test_assert();
  test_ctx();
  test_log();
  test_arena();
  test_arena_oom();
  test_str();
  test_hash();
  test_rng();
  test_time();
  test_host();
  test_parse_cores();
  test_pool();
  return CHECK_DONE();
}
