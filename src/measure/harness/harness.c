/* harness.c: the program the emulator runner (src/measure/emulator.c) runs
 * under a target's emulator (qemu-aarch64 -L <sysroot>) to run one kernel.
 * It is not part of the library: the build embeds its text, flattened after
 * include/opbench/{core,target,kernel}.h and src/kernel/timeloop.c into one
 * translation unit (scripts/embed.cmake), and the runner cross-compiles that
 * unit with the target's compiler once per kernel cache folder (through the
 * builder: content-addressed, so a changed timing loop gets a new harness).
 * So it uses the C library only (dlopen and pthreads are in glibc's libc,
 * sqrt in libm) and the timing loop of the native runner, ob_time_loop.
 *
 * The harness fills nothing and checks nothing: the parent fills the inputs
 * with the operator's random values and judges the outputs against its
 * reference, in the shared buffers.
 *
 * Usage (every number in C's %a or %d form):
 *   harness SO SYMBOL MAP_BYTES NTHREADS DEADLINE NUMBER REPEAT MIN_REPEAT_MS
 *           FLUSH MAX_CV BUDGET TIMEOUT NBUFS OFF:BYTES:IS_INPUT...
 * fd 3: the buffers (a memfd of MAP_BYTES, mapped shared); fd 4: a stream
 * socket to the parent. DEADLINE is CLOCK_MONOTONIC seconds (the emulator
 * passes the host's clock through).
 * Protocol, one line each way:
 *   harness -> "ran CODE"      the kernel's return value after the one
 *                              discarded warm-up call, or
 *              "err MESSAGE"   it could not be loaded (then it exits)
 *   parent  -> "time" | "skip" (skip: a non-zero code or a wrong answer)
 *   harness -> "costs RC NUMBER REPEAT EXTRA MIN_REPEAT_MS FLUSH OVERHEAD N C1 .. CN"
 *              RC 0, OB_TIME_DEADLINE (ran out of time) or a call's
 *              non-zero return value; costs in seconds per call.
 * A crash ends the process with the kernel's signal (the emulator raises
 * the guest's); the parent kills the process group at its deadline. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "opbench/kernel.h"

#define H_BUFS 3
#define H_SOCK 4
#define H_MAX_THREADS 64

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  for (int i = 0; i < n; i++)
    if (line[i] == '\n') line[i] = ' '; /* one line per message */
  line[n++] = '\n';
  for (int done = 0; done < n;) {
    ssize_t k = write(H_SOCK, line + done, (size_t)(n - done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) _exit(0); /* the parent is gone */
    done += (int)k;
  }
}

/* ---- parallel loops: threads made per call (speed is not the point under
 * an emulator; running the kernel's parallel code path is) ---------------- */

typedef struct chunk {
  ob_krt_task fn;
  void *closure;
  int64_t begin, end;
} chunk;

static void *chunk_main(void *p) {
  chunk *c = p;
  c->fn(c->closure, c->begin, c->end);
  return NULL;
}

static void parallel_for(void *pool, int64_t n, ob_krt_task fn, void *closure) {
  int nt = (int)(intptr_t)pool;
  if (nt > n) nt = (int)n;
  if (nt <= 1) {
    if (n > 0) fn(closure, 0, n);
    return;
  }
  chunk c[H_MAX_THREADS];
  pthread_t th[H_MAX_THREADS];
  bool started[H_MAX_THREADS] = {false};
  for (int i = 0; i < nt; i++)
    c[i] = (chunk){fn, closure, n * i / nt, n * (i + 1) / nt};
  for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, chunk_main, &c[i]) == 0;
  chunk_main(&c[0]);
  for (int i = 1; i < nt; i++) {
    if (started[i]) pthread_join(th[i], NULL);
    else chunk_main(&c[i]); /* no thread to spare: this one does it */
  }
}

/* ---- one request ------------------------------------------------------------- */

typedef struct run {
  ob_kernel_fn fn;
  void **bufs;
  const ob_krt *rt;
  const uint64_t *bytes;
  const unsigned char *is_input;
  int nbufs;
} run;

static int call(void *user) {
  run *r = user;
  return r->fn(r->bufs, r->rt);
}

static void flush(void *user) {
  run *r = user;
  for (int b = 0; b < r->nbufs; b++)
    if (r->is_input[b]) ob_cache_flush(r->bufs[b], r->bytes[b]);
}

static bool num(const char *s, double *out) {
  char *end;
  errno = 0;
  *out = strtod(s, &end);
  return *s && !*end && !errno;
}

static bool inum(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  *out = strtol(s, &end, 10);
  return *s && !*end && !errno && *out >= lo && *out <= hi;
}

/* Waits for the parent's one-word command. */
static bool command_is(const char *word) {
  char buf[16];
  size_t n = 0;
  while (n < sizeof buf - 1) {
    ssize_t k = read(H_SOCK, buf + n, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    if (buf[n] == '\n') break;
    n++;
  }
  buf[n] = '\0';
  return strcmp(buf, word) == 0;
}

int main(int argc, char **argv) {
  enum { NFIXED = 14 };
  if (argc < NFIXED) {
    say("err harness: %d arguments, expected at least %d", argc - 1, NFIXED - 1);
    return 2;
  }
  const char *so = argv[1], *sym = argv[2];
  long nthreads, number, repeat, flush_on, nbufs;
  double map_d, deadline;
  ob_timing_opts o = ob_timing_default();
  if (!num(argv[3], &map_d) || !(map_d > 0) || !inum(argv[4], 1, H_MAX_THREADS, &nthreads) ||
      !num(argv[5], &deadline) || !inum(argv[6], 0, OB_TIMING_NUMBER_MAX, &number) ||
      !inum(argv[7], 1, OB_TIMING_MAX_COSTS, &repeat) || !num(argv[8], &o.min_repeat_ms) ||
      !inum(argv[9], 0, 1, &flush_on) || !num(argv[10], &o.max_cv) ||
      !num(argv[11], &o.stability_budget_s) || !num(argv[12], &o.timeout_s) ||
      !inum(argv[13], 0, 1024, &nbufs) || argc != NFIXED + nbufs) {
    say("err harness: malformed arguments");
    return 2;
  }
  o.number = (int)number;
  o.repeat = (int)repeat;
  o.flush = flush_on != 0;
  size_t map_bytes = (size_t)map_d;
  uint64_t off[1024], bytes[1024];
  unsigned char is_input[1024];
  void *bufs[1024];
  for (long i = 0; i < nbufs; i++) {
    unsigned long long a, b;
    unsigned c;
    int used = 0;
    if (sscanf(argv[NFIXED + i], "%llu:%llu:%u%n", &a, &b, &c, &used) != 3 || argv[NFIXED + i][used] ||
        a > map_bytes || b > map_bytes - a || c > 1) {
      say("err harness: malformed buffer '%s'", argv[NFIXED + i]);
      return 2;
    }
    off[i] = a, bytes[i] = b, is_input[i] = (unsigned char)c;
  }
  void *map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, H_BUFS, 0);
  if (map == MAP_FAILED) {
    say("err harness: cannot map the buffers (%zu bytes): %s", map_bytes, strerror(errno));
    return 2;
  }
  for (long i = 0; i < nbufs; i++) bufs[i] = (char *)map + off[i];

  void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    say("err dlopen failed: %s", e ? e : so);
    return 0;
  }
  void *sp = dlsym(dl, sym);
  if (!sp) {
    const char *e = dlerror();
    say("err dlsym failed: %s", e ? e : sym);
    return 0;
  }
  ob_krt krt = {.pool = (void *)(intptr_t)nthreads, .parallel_for = parallel_for};
  run r = {.bufs = bufs, .rt = nthreads > 1 ? &krt : NULL, .bytes = bytes,
           .is_input = is_input, .nbufs = (int)nbufs};
  *(void **)&r.fn = sp; /* POSIX: object and function pointers convert */

  say("ran %d", call(&r)); /* also the discarded warm-up */
  if (!command_is("time")) return 0;

  ob_timing t;
  memset(&t, 0, sizeof t);
  int rc = ob_time_loop(&o, deadline, call, flush, &r, &t);
  char line[OB_TIMING_MAX_COSTS * 26 + 256];
  int n = snprintf(line, sizeof line, "costs %d %d %d %d %a %d %a %d", rc, t.number, t.repeat,
                   t.extra_repeats, t.min_repeat_ms, t.flush, t.timer_overhead_s,
                   rc ? 0 : t.ncosts);
  for (int i = 0; !rc && i < t.ncosts && n > 0 && (size_t)n < sizeof line; i++)
    n += snprintf(line + n, sizeof line - (size_t)n, " %a", t.costs[i]);
  say("%s", line);
  return 0;
}
