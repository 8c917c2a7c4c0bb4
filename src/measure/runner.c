/* runner.c: ob_runner, and its native implementation.
 *
 * ob_runner checks a request, lays its buffers out in a memfd it owns (the
 * caller fills and checks them in place), resolves the timing options for
 * the request's target and hands the request to an implementation
 * (measure_impl.h): this file's native worker for targets that run here,
 * emulator.c's for targets that run under an emulator. Implementations are
 * made on first use and kept.
 *
 * The native implementation runs variants in a persistent worker process
 * forked from the caller, so a crashing or hanging kernel costs a worker,
 * never the caller. Parent and worker talk over a SOCK_SEQPACKET
 * socketpair; the memfd is passed with SCM_RIGHTS each request. The worker
 * loads kernels with ob_kernel_load_path, runs them with ob_kernel_run and
 * times them with ob_time_loop (kernel.h), measuring the timer's overhead
 * once when it starts; it owns its loaded kernels and its thread pool. The
 * native implementation owns the worker and the socket.
 *
 * Protocol, per request:
 *   parent -> RUN (layout, path, symbol, cores, timing; the co-runner's
 *             layout, path, symbol and cores; pressure; counters) + memfd
 *   worker -> RAN (kernel's return value, and the co-runner's, from the
 *             discarded warm-ups) | ERR
 *   parent -> TIME | SKIP     (only after RAN with 0; SKIP on a wrong answer)
 *   worker -> COSTS | ERR     (only after TIME)
 * While timing, the worker runs what the request puts beside the kernel on
 * threads of its own: a co-runner kernel over and over on its own pool, or
 * the cache-pressure sweep on its core; both start before the timing (the
 * timing waits until they run) and stop after the counters' pass. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "opbench/kernel.h"
#include "opbench/measure.h"
#include "opbench/target.h"
#include "kernel/kernel_impl.h"
#include "measure/measure_impl.h"

#define OB_RUN_ALIGN 64
#define OB_RUN_REQ_MAX 65536      /* one RUN message, bytes */
#define OB_RUN_MAX_HANDLES 32     /* loaded kernels the worker keeps */
#define OB_RUN_GRACE_S 0.5        /* the worker stops at the deadline itself; the
                                     parent kills it this much later */

/* ---- shared helpers -------------------------------------------------------- */

/* ---- wire format ------------------------------------------------------------ */

enum { W_RUN = 0x6f620001, W_TIME, W_SKIP, W_RAN, W_COSTS, W_ERR };

/* RUN: this header, then uint64 off[nbufs], uint64 bytes[nbufs],
 * int32 cores[nthreads], uint8 is_input[nbufs], path, NUL, symbol, NUL;
 * then the co-runner's uint64 off[co_nbufs], uint64 bytes[co_nbufs],
 * int32 cores[co_nthreads], path, NUL, symbol, NUL (when co_nbufs >= 0). */
typedef struct wire_req {
  uint32_t kind;
  int32_t nbufs, nthreads;
  ob_timing_opts timing; /* normalized; clock NULL (parent and worker are one binary) */
  double deadline;       /* CLOCK_MONOTONIC seconds */
  uint64_t map_bytes;
  uint32_t path_len, sym_len; /* without the NUL */
  uint32_t counters;          /* ob_counter bitmask */
  int32_t pressure_core;
  uint64_t pressure_bytes;    /* 0: none */
  int32_t co_nbufs;           /* -1: no co-runner */
  int32_t co_nthreads;
  uint32_t co_path_len, co_sym_len;
} wire_req;

typedef struct wire_cmd {
  uint32_t kind;
} wire_cmd;

typedef struct wire_rep {
  uint32_t kind;
  int32_t code;     /* RAN: the kernel's return value; COSTS: 0, or
                       OB_TIME_DEADLINE when timing ran out of time */
  int32_t co_code;  /* RAN: the co-runner's warm-up return value; COSTS: a
                       non-zero value it returned while co-running */
  ob_timing timing; /* COSTS */
  ob_counters counters;
  int64_t corun_calls;
  double corun_s, pressure_gbps;
  char msg[400];    /* ERR */
} wire_rep;

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* ---- the worker (a forked child; never returns into the caller) ------------ */

typedef struct worker {
  int sock;
  ob_ctx *ctx;
  ob_pool *pool;
  int *pool_cores;
  int pool_n;
  struct { char *path, *sym; ob_kernel *k; } kernels[OB_RUN_MAX_HANDLES];
  int next_evict;
  double timer_overhead_s; /* measured once, when the worker starts */
  ob_ctx *bg_ctx;          /* the background thread's (co-runner pool errors) */
  unsigned char *big;      /* huge-page block for the timing's copies of big buffers */
  size_t big_cap;
} worker;

static void worker_send(worker *w, const wire_rep *rep) {
  ssize_t k;
  do {
    k = send(w->sock, rep, sizeof *rep, MSG_NOSIGNAL);
  } while (k < 0 && errno == EINTR);
  if (k != (ssize_t)sizeof *rep) _exit(0); /* the parent is gone */
}

static void worker_err(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void worker_err(worker *w, const char *fmt, ...) {
  wire_rep rep;
  memset(&rep, 0, sizeof rep);
  rep.kind = W_ERR;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rep.msg, sizeof rep.msg, fmt, ap);
  va_end(ap);
  worker_send(w, &rep);
}

/* Keeps one pool per core set; re-creates it only when the set changes. */
static bool worker_pool(worker *w, const int32_t *cores, int n) {
  if (w->pool && w->pool_n == n) {
    bool same = true;
    for (int i = 0; i < n; i++) same = same && w->pool_cores[i] == cores[i];
    if (same) return true;
  }
  ob_pool_free(w->pool);
  w->pool = NULL;
  free(w->pool_cores);
  w->pool_cores = malloc((size_t)n * sizeof *w->pool_cores);
  w->pool_n = 0;
  if (!w->pool_cores) return false;
  for (int i = 0; i < n; i++) w->pool_cores[i] = cores[i];
  if (ob_pool_new(w->ctx, w->pool_cores, n, &w->pool) != OB_OK) {
    w->pool = NULL;
    return false;
  }
  w->pool_n = n;
  return true;
}

/* The loaded kernel for (path, sym), from the worker's cache or loaded now
 * (evicting the oldest; no kernel is running). NULL with the message in
 * w->ctx when it cannot be loaded. */
static ob_kernel *worker_kernel(worker *w, const char *path, const char *sym, const ob_kernel *keep) {
  for (int i = 0; i < OB_RUN_MAX_HANDLES; i++)
    if (w->kernels[i].k && !strcmp(w->kernels[i].path, path) && !strcmp(w->kernels[i].sym, sym))
      return w->kernels[i].k;
  if (keep && w->kernels[w->next_evict].k == keep) /* the other kernel of this request */
    w->next_evict = (w->next_evict + 1) % OB_RUN_MAX_HANDLES;
  ob_kernel *k = NULL;
  if (ob_kernel_load_path(w->ctx, path, sym, &k) != OB_OK) return NULL;
  char *p = strdup(path), *y = strdup(sym);
  if (!p || !y) {
    free(p);
    free(y);
    ob_kernel_free(k);
    ob_fail(w->ctx, OB_ERR_NOMEM, "worker out of memory");
    return NULL;
  }
  int slot = w->next_evict;
  w->next_evict = (slot + 1) % OB_RUN_MAX_HANDLES;
  ob_kernel_free(w->kernels[slot].k);
  free(w->kernels[slot].path);
  free(w->kernels[slot].sym);
  w->kernels[slot].path = p;
  w->kernels[slot].sym = y;
  w->kernels[slot].k = k;
  return k;
}

typedef struct timed_call {
  ob_kernel *k;
  void *const *bufs;
  ob_pool *pool;
  const uint64_t *bytes;
  const uint8_t *is_input;
  int nbufs;
} timed_call;

static int timed_run(void *user) {
  timed_call *c = user;
  return ob_kernel_run(c->k, c->bufs, c->pool);
}

static void timed_flush(void *user) {
  timed_call *c = user;
  for (int b = 0; b < c->nbufs; b++)
    if (c->is_input[b]) ob_cache_flush(c->bufs[b], c->bytes[b]);
}

/* ---- what runs beside the timed kernel ----------------------------------------
 * One background thread: a co-runner kernel called over and over on a pool
 * of its own (made in the thread, so its calling thread is pinned to the
 * co-runner's first core), or the cache-pressure sweep pinned to its core.
 * `progress` counts completed co-runner calls, or bytes swept. */
enum { BG_STARTING = 0, BG_RUNNING, BG_FAILED };

typedef struct bg_job {
  pthread_t th;
  bool started;
  /* co-runner */
  ob_kernel *k;
  void *const *bufs;
  const int32_t *cores;
  int ncores;
  ob_ctx *ctx;
  /* pressure */
  size_t bytes;
  int core;
  unsigned char *buf;
  _Atomic int state;
  atomic_bool stop;
  _Atomic int64_t progress;
  _Atomic int rc; /* a co-runner call's non-zero return */
  char why[200];  /* BG_FAILED: what went wrong */
} bg_job;

static void *bg_corun(void *arg) {
  bg_job *b = arg;
  int *cores = malloc((size_t)b->ncores * sizeof *cores);
  ob_pool *pool = NULL;
  if (cores)
    for (int i = 0; i < b->ncores; i++) cores[i] = b->cores[i];
  if (!cores || ob_pool_new(b->ctx, cores, b->ncores, &pool) != OB_OK) {
    snprintf(b->why, sizeof b->why, "co-runner: cannot create its thread pool: %s",
             cores ? ob_ctx_errmsg(b->ctx) : "out of memory");
    free(cores);
    atomic_store(&b->state, BG_FAILED);
    return NULL;
  }
  atomic_store(&b->state, BG_RUNNING);
  while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
    int rc = ob_kernel_run(b->k, b->bufs, pool);
    if (rc) {
      atomic_store(&b->rc, rc);
      break;
    }
    atomic_fetch_add_explicit(&b->progress, 1, memory_order_relaxed);
  }
  ob_pool_free(pool);
  free(cores);
  return NULL;
}

static void *bg_pressure(void *arg) {
  bg_job *b = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (b->core >= 0 && b->core < CPU_SETSIZE) CPU_SET(b->core, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    snprintf(b->why, sizeof b->why, "cache pressure: cannot pin to core %d", b->core);
    atomic_store(&b->state, BG_FAILED);
    return NULL;
  }
  /* allocated by the thread on its core, so its pages are local to it */
  if (posix_memalign((void **)&b->buf, 64, b->bytes) != 0) {
    b->buf = NULL;
    snprintf(b->why, sizeof b->why, "cache pressure: cannot allocate %zu bytes", b->bytes);
    atomic_store(&b->state, BG_FAILED);
    return NULL;
  }
  memset(b->buf, 1, b->bytes);
  atomic_store(&b->state, BG_RUNNING);
  volatile unsigned char *p = b->buf;
  while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
    /* a read and a write per line: the lines stay in the cache, dirty */
    for (size_t i = 0; i < b->bytes; i += 64) p[i] = (unsigned char)(p[i] + 1);
    atomic_fetch_add_explicit(&b->progress, (int64_t)b->bytes, memory_order_relaxed);
  }
  return NULL;
}

/* Starts b's thread and waits until it runs (or failed: false, why set). */
static bool bg_start(bg_job *b, void *(*fn)(void *)) {
  atomic_store(&b->state, BG_STARTING);
  atomic_store(&b->stop, false);
  atomic_store(&b->progress, 0);
  atomic_store(&b->rc, 0);
  if (pthread_create(&b->th, NULL, fn, b) != 0) {
    snprintf(b->why, sizeof b->why, "cannot start a background thread");
    return false;
  }
  b->started = true;
  while (atomic_load(&b->state) == BG_STARTING) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return atomic_load(&b->state) == BG_RUNNING;
}

static void bg_stop(bg_job *b) {
  if (!b->started) return;
  atomic_store(&b->stop, true);
  pthread_join(b->th, NULL);
  b->started = false;
  free(b->buf);
  b->buf = NULL;
}

/* ---- the counters' pass ------------------------------------------------------- */

typedef struct count_open {
  ob_counter_set *sets;
  unsigned asked;
} count_open;

/* Each pool thread runs one index: it opens the counters of its own thread. */
static void count_open_cb(void *closure, int64_t begin, int64_t end) {
  count_open *c = closure;
  for (int64_t i = begin; i < end; i++) ob_counter_set_open(&c->sets[i], c->asked);
}

/* Counts `asked` over calls of the kernel after its timing, on every thread
 * of its pool: number x 3 calls (the inputs flushed before each, with the
 * counters off, when the timing flushed), per call into *out. */
static void count_pass(worker *w, timed_call *tc, const ob_timing_opts *t, int number,
                       unsigned asked, ob_counters *out) {
  memset(out, 0, sizeof *out);
  out->asked = asked;
  for (int c = 0; c < OB_COUNTER_COUNT; c++) out->per_call[c] = NAN;
  int n = ob_pool_size(w->pool);
  ob_counter_set *sets = calloc((size_t)n, sizeof *sets);
  if (!sets) {
    snprintf(out->note, sizeof out->note, "not counted: the worker ran out of memory");
    return;
  }
  for (int i = 0; i < n; i++)
    for (int c = 0; c < OB_COUNTER_COUNT; c++) sets[i].fd[c] = -1;
  count_open co = {sets, asked};
  ob_pool_per_thread(w->pool, count_open_cb, &co);
  int64_t calls = (int64_t)(number > 0 ? number : 1) * 3;
  for (int i = 0; i < n; i++) ob_counter_set_enable(&sets[i], false);
  for (int i = 0; i < n; i++) ob_counter_set_reset(&sets[i]);
  int rc = 0;
  /* warm: one span of calls; cold: the flushes left out of the counts */
  if (!t->flush)
    for (int i = 0; i < n; i++) ob_counter_set_enable(&sets[i], true);
  for (int64_t c = 0; c < calls && !rc; c++) {
    if (t->flush) {
      timed_flush(tc);
      for (int i = 0; i < n; i++) ob_counter_set_enable(&sets[i], true);
    }
    rc = timed_run(tc);
    if (t->flush)
      for (int i = 0; i < n; i++) ob_counter_set_enable(&sets[i], false);
  }
  if (!t->flush)
    for (int i = 0; i < n; i++) ob_counter_set_enable(&sets[i], false);
  double sum[OB_COUNTER_COUNT] = {0};
  unsigned open = asked;
  for (int i = 0; i < n; i++) {
    ob_counter_set_add(&sets[i], sum);
    open &= sets[i].open; /* counted on every thread */
  }
  snprintf(out->note, sizeof out->note, "%s", sets[0].note);
  for (int i = 0; i < n; i++) ob_counter_set_close(&sets[i]);
  free(sets);
  if (rc) {
    snprintf(out->note, sizeof out->note, "not counted: the kernel returned %d", rc);
    return;
  }
  out->calls = calls;
  out->counted = open;
  for (int c = 0; c < OB_COUNTER_COUNT; c++)
    if (open & (1u << c)) out->per_call[c] = sum[c] / (double)calls;
}

/* Serves one RUN message (msg/len, memfd fd). */
static void worker_serve(worker *w, const unsigned char *msg, size_t len, int fd) {
  wire_req q;
  if (len < sizeof q) {
    worker_err(w, "malformed request");
    return;
  }
  memcpy(&q, msg, sizeof q);
  size_t nb = (size_t)q.nbufs, nt = (size_t)q.nthreads;
  bool co = q.co_nbufs >= 0;
  size_t cnb = co ? (size_t)q.co_nbufs : 0, cnt = co ? (size_t)q.co_nthreads : 0;
  size_t need = sizeof q + nb * 16 + nt * 4 + nb + (size_t)q.path_len + 1 + q.sym_len + 1;
  if (co) need += cnb * 16 + cnt * 4 + (size_t)q.co_path_len + 1 + q.co_sym_len + 1;
  if (q.kind != W_RUN || q.nbufs < 0 || q.nthreads < 1 || q.timing.repeat < 1 ||
      q.timing.repeat > OB_TIMING_MAX_COSTS || q.timing.number < 0 || q.timing.clock || q.timing.between ||
      (co && q.co_nthreads < 1) || len != need || fd < 0) {
    worker_err(w, "malformed request");
    return;
  }
  const unsigned char *p = msg + sizeof q;
  uint64_t *off = malloc((nb + cnb + 1) * sizeof *off), *bytes = malloc((nb + cnb + 1) * sizeof *bytes);
  int32_t *cores = malloc((nt + cnt) * sizeof *cores);
  void **bufs = malloc((nb + cnb + 1) * sizeof *bufs);
  void **tbufs = NULL; /* what the timing runs on: bufs, or huge-page copies of the big ones */
  void *map = MAP_FAILED;
  bg_job bg;
  memset(&bg, 0, sizeof bg);
  double tp0 = 0; /* when the co-runner or the cache-pressure sweep started */
  if (!off || !bytes || !cores || !bufs) {
    worker_err(w, "worker out of memory");
    goto out;
  }
  memcpy(off, p, nb * 8), p += nb * 8;
  memcpy(bytes, p, nb * 8), p += nb * 8;
  memcpy(cores, p, nt * 4), p += nt * 4;
  const uint8_t *is_input = p;
  p += nb;
  const char *path = (const char *)p, *sym = path + q.path_len + 1;
  if (path[q.path_len] || sym[q.sym_len]) {
    worker_err(w, "malformed request");
    goto out;
  }
  p = (const unsigned char *)sym + q.sym_len + 1;
  const char *co_path = NULL, *co_sym = NULL;
  if (co) {
    memcpy(off + nb, p, cnb * 8), p += cnb * 8;
    memcpy(bytes + nb, p, cnb * 8), p += cnb * 8;
    memcpy(cores + nt, p, cnt * 4), p += cnt * 4;
    co_path = (const char *)p;
    co_sym = co_path + q.co_path_len + 1;
    if (co_path[q.co_path_len] || co_sym[q.co_sym_len]) {
      worker_err(w, "malformed request");
      goto out;
    }
  }
  map = mmap(NULL, q.map_bytes ? q.map_bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    worker_err(w, "worker cannot map buffers: %s", strerror(errno));
    goto out;
  }
  for (size_t i = 0; i < nb + cnb; i++) bufs[i] = (char *)map + off[i];

  ob_kernel *kern = worker_kernel(w, path, sym, NULL);
  if (!kern) {
    worker_err(w, "%s", ob_ctx_errmsg(w->ctx));
    goto out;
  }
  ob_kernel *co_kern = NULL;
  if (co && !(co_kern = worker_kernel(w, co_path, co_sym, kern))) {
    worker_err(w, "co-runner: %s", ob_ctx_errmsg(w->ctx));
    goto out;
  }
  if (!worker_pool(w, cores, q.nthreads)) {
    worker_err(w, "cannot create a thread pool on the requested cores: %s",
               ob_ctx_errmsg(w->ctx));
    goto out;
  }

  wire_rep rep;
  memset(&rep, 0, sizeof rep);
  rep.kind = W_RAN;
  rep.code = ob_kernel_run(kern, bufs, w->pool); /* also the discarded warm-up */
  /* the co-runner's warm-up and check run serially here: its own pool
   * exists only while it co-runs */
  if (!rep.code && co) rep.co_code = ob_kernel_run(co_kern, bufs + nb, NULL);
  worker_send(w, &rep);
  if (rep.code != 0 || rep.co_code != 0) goto out;

  wire_cmd cmd;
  ssize_t k;
  do {
    k = recv(w->sock, &cmd, sizeof cmd, 0);
  } while (k < 0 && errno == EINTR);
  if (k != (ssize_t)sizeof cmd) _exit(0); /* the parent is gone */
  if (cmd.kind != W_TIME) goto out;

  if (co) {
    bg.k = co_kern;
    bg.bufs = bufs + nb;
    bg.cores = cores + nt;
    bg.ncores = q.co_nthreads;
    bg.ctx = w->bg_ctx;
    if (!bg_start(&bg, bg_corun)) {
      worker_err(w, "%s", bg.why);
      goto out;
    }
    /* the timing starts once the co-runner has finished a call: on shared
     * cores (full) it could otherwise get no slice during a short timing */
    tp0 = ob_now_s();
    while (atomic_load(&bg.progress) == 0 && !atomic_load(&bg.rc) && ob_now_s() - tp0 < 5) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  } else if (q.pressure_bytes) {
    bg.bytes = (size_t)q.pressure_bytes;
    bg.core = q.pressure_core;
    if (!bg_start(&bg, bg_pressure)) {
      worker_err(w, "%s", bg.why);
      goto out;
    }
    /* the timing starts once the buffer has been swept (it is then in the
     * cache, which is what the pressure means), not while the thread may
     * still wait for its core on a loaded machine */
    tp0 = ob_now_s();
    while (atomic_load(&bg.progress) == 0 && ob_now_s() - tp0 < 5) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }

  memset(&rep, 0, sizeof rep);
  rep.kind = W_COSTS;
  q.timing.timer_overhead_s = w->timer_overhead_s;
  /* The timing runs on private copies of the big buffers, on huge pages:
   * the memfd is shared memory, which this kernel's THP setting leaves on
   * 4 KiB pages, and their physical placement, new in every process, moves
   * the L2's conflict misses and the TLB's misses from run to run. The
   * copies hold what the checked warm-up saw; outputs go back after. */
  if (!(tbufs = malloc((nb + 1) * sizeof *tbufs))) {
    worker_err(w, "worker out of memory");
    goto out;
  }
  /* one block, kept across requests: no new pages to fault in per measurement */
  size_t big_need = 0;
  for (size_t i = 0; i < nb; i++)
    if (bytes[i] >= OB_MEM_BIG_MIN) big_need += (bytes[i] + 63) / 64 * 64;
  if (big_need > w->big_cap) {
    ob_mem_free_big(w->big);
    w->big = ob_mem_alloc_big(big_need);
    w->big_cap = w->big ? big_need : 0;
  }
  for (size_t i = 0, at = 0; i < nb; i++) {
    tbufs[i] = bufs[i];
    if (w->big && bytes[i] >= OB_MEM_BIG_MIN) {
      tbufs[i] = w->big + at;
      memcpy(tbufs[i], bufs[i], bytes[i]);
      at += (bytes[i] + 63) / 64 * 64;
    }
  }
  timed_call tc = {kern, tbufs, w->pool, bytes, is_input, q.nbufs};
  int rc = ob_kernel_run(kern, tbufs, w->pool); /* the copies' warm-up */
  if (!rc) rc = ob_time_loop(&q.timing, q.deadline, timed_run, timed_flush, &tc, &rep.timing);
  double t1 = ob_now_s();
  int64_t prog1 = atomic_load(&bg.progress);
  if (co) { /* its calls from its start to the timing's end: at least one */
    rep.corun_calls = prog1;
    rep.corun_s = t1 - tp0;
  } else if (q.pressure_bytes && t1 > tp0) {
    /* over the sweep's whole life up to the timing's end: at least one sweep */
    rep.pressure_gbps = (double)prog1 / (t1 - tp0) * 2 / 1e9; /* read + write */
  }
  if (rc == 0 && q.counters)
    count_pass(w, &tc, &q.timing, rep.timing.number, q.counters, &rep.counters);
  bg_stop(&bg);
  if (co && atomic_load(&bg.rc)) rep.co_code = atomic_load(&bg.rc);
  if (rc == OB_TIME_DEADLINE) {
    rep.code = rc;
  } else if (rc) {
    memset(&rep, 0, sizeof rep);
    rep.kind = W_RAN;
    rep.code = rc;
  }
  for (size_t i = 0; i < nb; i++)
    if (tbufs[i] != bufs[i] && !is_input[i]) memcpy(bufs[i], tbufs[i], bytes[i]);
  worker_send(w, &rep);
out:
  bg_stop(&bg);
  free(tbufs);
  if (map != MAP_FAILED) munmap(map, q.map_bytes ? q.map_bytes : 1);
  free(off);
  free(bytes);
  free(cores);
  free(bufs);
}

static _Noreturn void worker_main(int sock, pid_t parent) {
  /* Die with the parent (even while a kernel hangs). Note: this follows the
   * thread that forked; if that thread exits first, the worker goes and the
   * next request restarts it. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
  /* Crashes are results: default actions (the caller or a sanitizer may have
   * handlers), no core files. */
  static const int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) signal(crash[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);
  prctl(PR_SET_DUMPABLE, 0);
  /* Other runners' sockets must not stay open here, or their parents would
   * miss the EOF of a crashed worker. */
  if (sock > 3) close_range(3, (unsigned)sock - 1, 0);
  close_range((unsigned)sock + 1, ~0U, 0);

  worker w;
  memset(&w, 0, sizeof w);
  w.sock = sock;
  w.timer_overhead_s = ob_timer_overhead();
  if (ob_ctx_new(&w.ctx) != OB_OK || ob_ctx_new(&w.bg_ctx) != OB_OK) _exit(3);
  unsigned char *msg = malloc(OB_RUN_REQ_MAX);
  if (!msg) _exit(3);
  for (;;) {
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(sizeof(int))];
    } cbuf;
    struct iovec iov = {msg, OB_RUN_REQ_MAX};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
                        .msg_controllen = sizeof cbuf.buf};
    ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0); /* the parent closed the socket */
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
      worker_err(&w, "malformed request");
    else
      worker_serve(&w, msg, (size_t)n, fd);
    if (fd >= 0) close(fd);
  }
}

/* ---- the native implementation: the parent side ------------------------------ */

typedef struct native {
  ob_ctx *ctx;
  pid_t pid; /* the worker, or -1 (restarted on the next request) */
  int sock;  /* our end of the socketpair, or -1 */
} native;

static pid_t waitpid_eintr(pid_t pid, int *status, int flags) {
  pid_t w;
  do {
    w = waitpid(pid, status, flags);
  } while (w < 0 && errno == EINTR);
  return w;
}

static ob_status start_worker(native *r) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return ob_fail(r->ctx, OB_ERR_SYSTEM, "runner: socketpair: %s", strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    return ob_fail(r->ctx, OB_ERR_SYSTEM, "runner: fork: %s", strerror(e));
  }
  if (pid == 0) {
    close(sv[0]);
    worker_main(sv[1], parent);
  }
  close(sv[1]);
  r->pid = pid;
  r->sock = sv[0];
  return OB_OK;
}

/* Kills and reaps the worker; *status gets its wait status when known. */
static bool stop_worker(native *r, int *status) {
  bool reaped = false;
  if (r->pid > 0) {
    kill(r->pid, SIGKILL);
    reaped = waitpid_eintr(r->pid, status, 0) == r->pid;
  }
  if (r->sock >= 0) close(r->sock);
  r->pid = -1;
  r->sock = -1;
  return reaped;
}

/* The worker's socket closed or failed: it is exiting. Reaps it (killing it
 * after 2 s) and says why it died. Returns the signal that ended it, or 0. */
static int worker_died(native *r, ob_run_result *res) {
  int status = 0;
  pid_t w = 0;
  double until = ob_now_s() + 2.0;
  while (r->pid > 0 && (w = waitpid_eintr(r->pid, &status, WNOHANG)) == 0 &&
         ob_now_s() < until) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (w == r->pid) r->pid = -1; /* already reaped */
  else if (!stop_worker(r, &status)) w = -1;
  if (r->sock >= 0) close(r->sock);
  r->sock = -1;
  r->pid = -1;
  res->error_no = OB_MERR_RUNTIME;
  char sb[32];
  if (w >= 0 && WIFSIGNALED(status))
    snprintf(res->message, sizeof res->message, "kernel crashed: %s",
             ob_kernel_signame(WTERMSIG(status), sb));
  else if (w >= 0 && WIFEXITED(status))
    snprintf(res->message, sizeof res->message,
             "worker exited with status %d (did the kernel call exit?)", WEXITSTATUS(status));
  else
    snprintf(res->message, sizeof res->message, "worker lost");
  return w >= 0 && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

ob_status ob_runner_native_new(ob_ctx *ctx, void **self) {
  *self = NULL;
  native *r = calloc(1, sizeof *r);
  if (!r) return ob_fail(ctx, OB_ERR_NOMEM, "runner: out of memory");
  r->ctx = ctx;
  r->pid = -1;
  r->sock = -1;
  ob_status st = start_worker(r);
  if (st) {
    free(r);
    return st;
  }
  *self = r;
  return OB_OK;
}

static void native_free(void *self) {
  native *r = self;
  if (!r) return;
  int status;
  stop_worker(r, &status);
  free(r);
}

static int send_with_fd(int sock, const void *buf, size_t len, int fd) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } cbuf;
  memset(&cbuf, 0, sizeof cbuf);
  struct iovec iov = {(void *)buf, len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
                      .msg_controllen = sizeof cbuf.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t k;
  do {
    k = sendmsg(sock, &mh, MSG_NOSIGNAL);
  } while (k < 0 && errno == EINTR);
  return k == (ssize_t)len ? 0 : -1;
}

static int send_cmd(native *r, uint32_t kind) {
  wire_cmd cmd = {kind};
  ssize_t k;
  do {
    k = send(r->sock, &cmd, sizeof cmd, MSG_NOSIGNAL);
  } while (k < 0 && errno == EINTR);
  return k == (ssize_t)sizeof cmd ? 0 : -1;
}

enum { WAIT_OK, WAIT_TIMEOUT, WAIT_DEAD };

static int wait_reply(native *r, double deadline, wire_rep *rep) {
  for (;;) {
    double left = deadline - ob_now_s();
    if (left <= 0) return WAIT_TIMEOUT;
    struct pollfd pfd = {.fd = r->sock, .events = POLLIN};
    int ms = (int)ceil(left * 1000);
    int rc = poll(&pfd, 1, ms < 1 ? 1 : ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return WAIT_DEAD;
    if (rc == 0) continue;
    ssize_t k = recv(r->sock, rep, sizeof *rep, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k != (ssize_t)sizeof *rep) return WAIT_DEAD; /* EOF, error or garbage */
    rep->msg[sizeof rep->msg - 1] = '\0';
    return WAIT_OK;
  }
}

/* A reply other than OK: the worker timed out or died; records why. */
static void reply_failed(native *r, int how, double timeout, ob_run_result *res) {
  if (how == WAIT_TIMEOUT) {
    int status;
    stop_worker(r, &status);
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s", timeout);
  } else {
    worker_died(r, res);
  }
}

static ob_status native_run(void *self, const ob_run_request *req, const ob_timing_opts *t,
                            double deadline, double kill_at, const ob_run_bufs *b,
                            ob_run_result *res) {
  native *r = self;
  ob_status st = OB_OK;
  size_t nb = (size_t)b->nbufs;
  int nthreads = req->nthreads > 0 ? req->nthreads : 1;
  const double timeout = t->timeout_s;

  /* The worker resolves paths itself: make relative ones survive a chdir. */
  char *abs = strchr(req->so_path, '/') ? realpath(req->so_path, NULL) : NULL;
  const char *so_path = abs ? abs : req->so_path;
  size_t path_len = strlen(so_path), sym_len = strlen(req->symbol);
  size_t len = sizeof(wire_req) + nb * 16 + (size_t)nthreads * 4 + nb + path_len + 1 + sym_len + 1;
  const ob_run_request *co = req->corun;
  char *co_abs = co && strchr(co->so_path, '/') ? realpath(co->so_path, NULL) : NULL;
  const char *co_path = co ? (co_abs ? co_abs : co->so_path) : NULL;
  size_t cnb = co ? (size_t)b->co_nbufs : 0;
  int co_threads = co ? (co->nthreads > 0 ? co->nthreads : 1) : 0;
  size_t co_path_len = co ? strlen(co_path) : 0, co_sym_len = co ? strlen(co->symbol) : 0;
  if (co) len += cnb * 16 + (size_t)co_threads * 4 + co_path_len + 1 + co_sym_len + 1;
  unsigned char *msg = NULL;
  if (len > OB_RUN_REQ_MAX) {
    st = ob_fail(r->ctx, OB_ERR_INVALID_ARG,
                 "runner: request for %s too large (%zu buffers, %d threads)", req->symbol, nb,
                 nthreads);
    goto out;
  }
  if (!(msg = calloc(1, len))) {
    st = ob_fail(r->ctx, OB_ERR_NOMEM, "runner: out of memory");
    goto out;
  }

  wire_req q;
  memset(&q, 0, sizeof q); /* no stray padding bytes go over the socket */
  q.kind = W_RUN;
  q.nbufs = (int32_t)nb;
  q.nthreads = nthreads;
  q.timing = *t;
  q.timing.between = NULL; /* a hook of this process's timing, not the worker's */
  q.timing.between_user = NULL;
  q.deadline = deadline;
  q.map_bytes = b->map_bytes;
  q.path_len = (uint32_t)path_len;
  q.sym_len = (uint32_t)sym_len;
  q.counters = req->counters;
  q.pressure_bytes = req->pressure_bytes;
  q.pressure_core = req->pressure_core;
  q.co_nbufs = co ? (int32_t)cnb : -1;
  q.co_nthreads = co_threads;
  q.co_path_len = (uint32_t)co_path_len;
  q.co_sym_len = (uint32_t)co_sym_len;
  unsigned char *p = msg;
  memcpy(p, &q, sizeof q), p += sizeof q;
  memcpy(p, b->off, nb * 8), p += nb * 8;
  for (size_t i = 0; i < nb; i++) {
    uint64_t bytes = req->buf_bytes[i];
    memcpy(p, &bytes, 8), p += 8;
  }
  for (int i = 0; i < nthreads; i++) {
    int32_t c = req->cores ? req->cores[i] : i;
    memcpy(p, &c, 4), p += 4;
  }
  for (size_t i = 0; i < nb; i++) *p++ = req->buf_is_input ? req->buf_is_input[i] : 1;
  memcpy(p, so_path, path_len + 1), p += path_len + 1;
  memcpy(p, req->symbol, sym_len + 1), p += sym_len + 1;
  if (co) {
    memcpy(p, b->co_off, cnb * 8), p += cnb * 8;
    for (size_t i = 0; i < cnb; i++) {
      uint64_t bytes = co->buf_bytes[i];
      memcpy(p, &bytes, 8), p += 8;
    }
    for (int i = 0; i < co_threads; i++) {
      int32_t c = co->cores ? co->cores[i] : i;
      memcpy(p, &c, 4), p += 4;
    }
    memcpy(p, co_path, co_path_len + 1), p += co_path_len + 1;
    memcpy(p, co->symbol, co_sym_len + 1);
  }

  req->fill(req->user, b->ptr);
  if (co) co->fill(co->user, b->co_ptr);

  /* Send; a worker that died between requests is restarted once. A
   * SIGKILL from outside (no kernel crash raises it: the OOM killer, a user)
   * can also land just before the request is read, and the message goes
   * down with the worker: that too is sent once more to a new worker. */
  wire_rep rep;
  int how;
  for (int resend = 0;; resend++) {
    for (int attempt = 0;; attempt++) {
      if (r->pid < 0 && (st = start_worker(r)) != OB_OK) goto out;
      if (send_with_fd(r->sock, msg, len, b->memfd) == 0) break;
      int e = errno, status;
      stop_worker(r, &status);
      if (attempt == 1) {
        st = ob_fail(r->ctx, OB_ERR_SYSTEM, "runner: cannot send to the worker: %s", strerror(e));
        goto out;
      }
    }
    how = wait_reply(r, kill_at, &rep);
    if (how != WAIT_DEAD || resend == 1) break;
    if (worker_died(r, res) != SIGKILL) goto out;
    res->error_no = OB_MERR_NONE;
    res->message[0] = '\0';
    req->fill(req->user, b->ptr); /* as the first time */
    if (co) co->fill(co->user, b->co_ptr);
  }
  if (how != WAIT_OK) {
    reply_failed(r, how, timeout, res);
    goto out;
  }
  if (rep.kind == W_ERR) {
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "%s", rep.msg);
    goto out;
  }
  if (rep.kind != W_RAN) {
    (void)worker_died(r, res); /* protocol error: start afresh */
    goto out;
  }
  if (rep.code != 0) {
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "kernel returned %d", rep.code);
    goto out;
  }
  if (rep.co_code != 0) {
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "co-runner %s returned %d", co->symbol, rep.co_code);
    goto out;
  }

  if (co && co->check) { /* the co-runner computes right too, or its time means nothing */
    char cmsg[sizeof res->message - 32];
    cmsg[0] = '\0';
    ob_status cst = co->check(co->user, b->co_ptr, cmsg, sizeof cmsg);
    if (cst != OB_OK) {
      res->error_no = OB_MERR_WRONG_ANSWER;
      cmsg[sizeof cmsg - 1] = '\0';
      snprintf(res->message, sizeof res->message, "co-runner %s: %s", co->symbol,
               cmsg[0] ? cmsg : ob_status_str(cst));
      if (send_cmd(r, W_SKIP) != 0) {
        int status;
        stop_worker(r, &status);
      }
      goto out;
    }
  }
  if (req->check) {
    char cmsg[sizeof res->message];
    cmsg[0] = '\0';
    ob_status cst = req->check(req->user, b->ptr, cmsg, sizeof cmsg);
    if (cst != OB_OK) {
      res->error_no = OB_MERR_WRONG_ANSWER;
      cmsg[sizeof cmsg - 1] = '\0';
      if (cmsg[0]) snprintf(res->message, sizeof res->message, "%s", cmsg);
      else snprintf(res->message, sizeof res->message, "wrong answer (%s)", ob_status_str(cst));
      if (send_cmd(r, W_SKIP) != 0) {
        int status;
        stop_worker(r, &status);
      }
      goto out;
    }
  }
  if (send_cmd(r, W_TIME) != 0) {
    worker_died(r, res);
    goto out;
  }
  how = wait_reply(r, kill_at, &rep);
  if (how != WAIT_OK) {
    reply_failed(r, how, timeout, res);
    goto out;
  }
  if (rep.kind == W_ERR) { /* what runs beside the kernel could not start */
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "%s", rep.msg);
    goto out;
  }
  if (rep.kind == W_RAN) { /* a timed call returned non-zero */
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "kernel returned %d", rep.code);
    goto out;
  }
  if (rep.kind == W_COSTS && rep.code == OB_TIME_DEADLINE) {
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s (while timing)", timeout);
    goto out;
  }
  if (rep.kind != W_COSTS || rep.code != 0 || rep.timing.ncosts < 1 ||
      rep.timing.ncosts > OB_TIMING_MAX_COSTS) {
    worker_died(r, res);
    goto out;
  }
  if (rep.co_code != 0) { /* the co-runner failed while co-running */
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "co-runner %s returned %d while co-running",
             co ? co->symbol : "?", rep.co_code);
    goto out;
  }
  res->error_no = OB_MERR_NONE;
  res->timing = rep.timing;
  res->counters = rep.counters;
  res->counters.note[sizeof res->counters.note - 1] = '\0';
  res->corun_calls = rep.corun_calls;
  res->corun_s = rep.corun_s;
  res->pressure_gbps = rep.pressure_gbps;

out:
  free(co_abs);
  free(abs);
  free(msg);
  return st;
}

const struct ob_runner_i ob_runner_native_i = {"native", native_run, native_free};

/* ---- ob_runner ----------------------------------------------------------------- */

enum { IMPL_NATIVE = 0, IMPL_EMULATOR, IMPL_GPU, IMPL_COUNT };

struct ob_runner {
  ob_ctx *ctx;
  struct {
    const struct ob_runner_i *vt;
    void *self; /* NULL until first needed */
  } impl[IMPL_COUNT];
  int memfd;          /* buffers, or -1 */
  unsigned char *map; /* our mapping of memfd */
  size_t map_cap;
};

ob_status ob_runner_new(ob_ctx *ctx, ob_runner **out) {
  OB_ASSERT(ctx && out);
  *out = NULL;
  ob_runner *r = calloc(1, sizeof *r);
  if (!r) return ob_fail(ctx, OB_ERR_NOMEM, "runner: out of memory");
  r->ctx = ctx;
  r->memfd = -1;
  r->impl[IMPL_NATIVE].vt = &ob_runner_native_i;
  r->impl[IMPL_EMULATOR].vt = &ob_runner_emulator_i;
  r->impl[IMPL_GPU].vt = &ob_runner_gpu_i;
  /* the native worker starts now: forking early keeps it small */
  ob_status st = ob_runner_native_new(ctx, &r->impl[IMPL_NATIVE].self);
  if (st) {
    free(r);
    return st;
  }
  *out = r;
  return OB_OK;
}

void ob_runner_free(ob_runner *r) {
  if (!r) return;
  for (int i = 0; i < IMPL_COUNT; i++)
    if (r->impl[i].self) r->impl[i].vt->free(r->impl[i].self);
  if (r->map) munmap(r->map, r->map_cap);
  if (r->memfd >= 0) close(r->memfd);
  free(r);
}

/* Buffers the parent fills and checks against a reference (which needs as
 * much again): more than half of the machine's memory would end in the
 * kernel's OOM killer (which may pick the parent), so they are refused up
 * front with the sizes named. An address-space limit (ulimit -v) lowers the
 * budget the same way. */
ob_status ob_runner_check_memory(ob_ctx *ctx, const char *what, size_t bytes) {
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  double mem = pages > 0 && psz > 0 ? (double)pages * (double)psz : INFINITY;
  const char *whose = "this machine's memory";
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (double)rl.rlim_cur < mem) {
    mem = (double)rl.rlim_cur;
    whose = "the address-space limit (ulimit -v)";
  }
  if (!isfinite(mem) || (double)bytes <= mem / 2) return OB_OK;
  return ob_fail(ctx, OB_ERR_NOMEM,
                 "%s: the buffers need %.2f GiB, more than half of %s (%.2f GiB), the limit for "
                 "one kernel's buffers",
                 what, (double)bytes / 1073741824.0, whose, mem / 1073741824.0);
}

/* Makes the shared buffer area at least `bytes` long. */
static ob_status ensure_map(ob_runner *r, size_t bytes) {
  if (r->map && r->map_cap >= bytes) return OB_OK;
  if (r->map) munmap(r->map, r->map_cap);
  if (r->memfd >= 0) close(r->memfd);
  r->map = NULL;
  r->map_cap = 0;
  r->memfd = memfd_create("opbench-bufs", MFD_CLOEXEC);
  if (r->memfd < 0) return ob_fail(r->ctx, OB_ERR_SYSTEM, "runner: memfd_create: %s", strerror(errno));
  size_t cap = align_up(bytes, (size_t)sysconf(_SC_PAGESIZE));
  if (ftruncate(r->memfd, (off_t)cap) != 0)
    return ob_fail(r->ctx, OB_ERR_SYSTEM, "runner: cannot size buffers to %zu bytes: %s", cap,
                   strerror(errno));
  void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, r->memfd, 0);
  if (m == MAP_FAILED)
    return ob_fail(r->ctx, OB_ERR_SYSTEM, "runner: mmap of %zu bytes: %s", cap, strerror(errno));
  r->map = m;
  r->map_cap = cap;
  return OB_OK;
}

/* The implementation for target t (NULL: the host's, native), made now if
 * needed: GPU targets the GPU worker's. A target that runs neither here nor
 * under an emulator is refused, naming what is missing. */
static ob_status pick_impl(ob_runner *r, const ob_target *t, int *which) {
  *which = IMPL_NATIVE;
  if (!t) return OB_OK;
  const ob_target_facts *f = ob_target_get_facts(t);
  if (f->kind != OB_TARGET_CPU) { /* a GPU target: its device must be here */
    ob_status st = ob_target_check_runnable(r->ctx, t);
    if (st) return st;
    *which = IMPL_GPU;
    if (!r->impl[IMPL_GPU].self) return ob_runner_gpu_new(r->ctx, &r->impl[IMPL_GPU].self);
    return OB_OK;
  }
  if (f->native) return OB_OK;
  ob_status st = ob_target_check_runnable(r->ctx, t);
  if (st) return st;
  if (!f->emulated)
    return ob_fail(r->ctx, OB_ERR_UNSUPPORTED, "target '%s': its kernels cannot be run here",
                   ob_target_str(t));
  *which = IMPL_EMULATOR;
  if (!r->impl[IMPL_EMULATOR].self)
    return ob_runner_emulator_new(r->ctx, &r->impl[IMPL_EMULATOR].self);
  return OB_OK;
}

ob_status ob_runner_run(ob_runner *r, const ob_run_request *req, ob_run_result *res) {
  OB_ASSERT(r && req && res && req->so_path && req->symbol && req->fill && req->nbufs >= 0);
  OB_ASSERT(req->nbufs == 0 || req->buf_bytes);
  memset(res, 0, sizeof *res);
  const double t_start = ob_now_s();
  ob_status st = OB_OK;
  size_t nb = (size_t)req->nbufs;
  ob_timing_opts t = ob_timing_resolve(&req->timing, req->target);
  t.clock = NULL; /* the process that times does it on its own clock */
  const double timeout = t.timeout_s;
  const double deadline = t_start + timeout;
  /* The kernel's process gives up at the deadline and says so; the parent
   * waits a little longer before it kills one stuck in a kernel. */
  const double kill_at = deadline + (timeout * 0.1 < OB_RUN_GRACE_S ? timeout * 0.1 : OB_RUN_GRACE_S);
  const ob_run_request *co = req->corun;
  size_t cnb = co ? (size_t)co->nbufs : 0, all = nb + cnb;
  uint64_t *off = calloc(all + 1, sizeof *off), *bytes = calloc(all + 1, sizeof *bytes);
  void **bufs = calloc(all + 1, sizeof *bufs);
  int which = IMPL_NATIVE;
  if (!off || !bytes || !bufs) {
    st = ob_fail(r->ctx, OB_ERR_NOMEM, "runner: out of memory");
    goto out;
  }
  if ((st = pick_impl(r, req->target, &which))) goto out;
  if ((co || req->pressure_bytes) && which != IMPL_NATIVE) {
    st = ob_fail(r->ctx, OB_ERR_UNSUPPORTED,
                 "runner: %s for target '%s': kernels beside a kernel need a target that runs "
                 "natively here",
                 co ? "a co-runner" : "cache pressure", ob_target_str(req->target));
    goto out;
  }
  if (co) {
    OB_ASSERT(co->so_path && co->symbol && co->fill && co->nbufs >= 0 && !co->corun);
    OB_ASSERT(co->nbufs == 0 || co->buf_bytes);
    int cw;
    if ((st = pick_impl(r, co->target, &cw))) goto out;
    if (cw != IMPL_NATIVE) {
      st = ob_fail(r->ctx, OB_ERR_UNSUPPORTED,
                   "runner: co-runner %s for target '%s': it needs a target that runs natively",
                   co->symbol, ob_target_str(co->target));
      goto out;
    }
  }
  if (req->pressure_bytes) {
    int nt = req->nthreads > 0 ? req->nthreads : 1;
    for (int i = 0; i < nt; i++)
      if ((req->cores ? req->cores[i] : i) == req->pressure_core) {
        st = ob_fail(r->ctx, OB_ERR_INVALID_ARG,
                     "runner: the cache-pressure core %d is one of the kernel's cores",
                     req->pressure_core);
        goto out;
      }
    if (req->pressure_core < 0 || req->pressure_core >= CPU_SETSIZE) {
      st = ob_fail(r->ctx, OB_ERR_INVALID_ARG, "runner: cache-pressure core %d does not exist",
                   req->pressure_core);
      goto out;
    }
  }

  /* Layout: every buffer 64-byte aligned, at least one line each; the
   * co-runner's after the kernel's. */
  size_t total = 0;
  for (size_t i = 0; i < all; i++) {
    off[i] = total;
    const ob_run_request *q = i < nb ? req : co;
    size_t qi = i < nb ? i : i - nb;
    size_t b = q->buf_bytes[qi] ? q->buf_bytes[qi] : 1;
    bytes[i] = b;
    if (b > (size_t)OB_MAX_BUFFER_BYTES || !ob_add_size(total, align_up(b, OB_RUN_ALIGN), &total)) {
      st = ob_fail(r->ctx, OB_ERR_INVALID_ARG,
                   "runner: buffer %zu of %s has %zu bytes, more than the limit of %lld bytes per "
                   "buffer",
                   qi, q->symbol, b, (long long)OB_MAX_BUFFER_BYTES);
      goto out;
    }
  }
  if (total == 0) total = OB_RUN_ALIGN;
  if ((st = ob_runner_check_memory(r->ctx, req->symbol, total)) != OB_OK) goto out;
  if ((st = ensure_map(r, total)) != OB_OK) goto out;
  for (size_t i = 0; i < all; i++) bufs[i] = r->map + off[i];

  ob_run_bufs b = {.memfd = r->memfd, .map_bytes = total, .nbufs = (int)nb, .off = off,
                   .bytes = bytes, .ptr = bufs, .co_nbufs = (int)cnb, .co_off = off + nb,
                   .co_bytes = bytes + nb, .co_ptr = bufs + nb};
  st = r->impl[which].vt->run(r->impl[which].self, req, &t, deadline, kill_at, &b, res);
  if (!st && which != IMPL_NATIVE && req->counters) {
    res->counters.asked = req->counters;
    for (int c = 0; c < OB_COUNTER_COUNT; c++) res->counters.per_call[c] = NAN;
    snprintf(res->counters.note, sizeof res->counters.note,
             "not counted: the kernel ran under an emulator");
  }

out:
  res->run_s = ob_now_s() - t_start;
  free(off);
  free(bytes);
  free(bufs);
  return st;
}
