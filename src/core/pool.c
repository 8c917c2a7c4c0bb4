/* pool.c: the thread pool that runs generated kernels' parallel loops on a
 * caller-chosen core set, plus the parser for core-list text.
 *
 * Dispatch is built for many short back-to-back loops (a kernel timed
 * thousands of times): the caller publishes a job and bumps a generation
 * counter; workers spin on it briefly, then sleep on a futex so an idle pool
 * burns no CPU. Completion is a count of the workers done that the caller
 * spins on (and sleeps on, for long jobs). The pool owns its workers; the calling thread
 * stays pinned to cores[0] until ob_pool_free, which restores its mask.
 *
 * Each thread owns one contiguous part of the iterations, as a static
 * schedule gives it, and takes it from the front in grains; a thread whose
 * part is done takes the back half of what is left of another's. Cores of
 * one machine do not run at one speed: on a shared host two pinned threads
 * doing equal work differed by 1.2-1.5x for seconds at a time (either core
 * the slow one), and a worker still waking from its futex is late too; a
 * static split waits for the slowest. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core_impl.h"

/* Pause iterations before sleeping: tens to a few hundred microseconds, long
 * enough to bridge back-to-back calls, short enough that idling is free. The
 * caller spins longer: its core has nothing else to do while it waits. */
enum { OB_SPIN_WORKER = 1 << 12, OB_SPIN_CALLER = 1 << 15, OB_CACHELINE = 64 };

/* One thread's part of the job's iterations: [front, back) packed in one
 * word (front low, back high) so the owner taking from the front and a thief
 * taking from the back agree through one compare-and-swap. */
typedef struct ob_part {
  _Alignas(OB_CACHELINE) _Atomic uint64_t range;
} ob_part;

typedef struct ob_worker {
  struct ob_pool *pool;
  int index; /* the part this worker owns; 1..size-1 */
} ob_worker;

struct ob_pool {
  /* Written by the caller once per job; workers read it after joining the
   * job, and the caller rewrites it only after those have counted done. */
  _Alignas(OB_CACHELINE) _Atomic uint32_t gen;
  atomic_bool stop;
  ob_task_fn fn;
  void *closure;
  int64_t grain;  /* iterations an owner takes at once */
  bool per_thread; /* ob_pool_per_thread: chunk i on thread i, no stealing */

  /* Admission to the job: its generation (high half), a closed bit and
   * the count of workers that joined (low half); and the count of those
   * that are done. */
  _Alignas(OB_CACHELINE) _Atomic uint64_t admit;
  _Alignas(OB_CACHELINE) _Atomic uint32_t done;
  atomic_int caller_sleeping;

  _Alignas(OB_CACHELINE) atomic_int sleepers; /* workers blocked on `gen` */

  /* Set up once, or touched by the caller only. */
  _Alignas(OB_CACHELINE) atomic_bool busy; /* catches nested/concurrent calls */
  int size;
  int nworkers; /* workers started so far, threads[1..nworkers] */
  pthread_t *threads;
  ob_worker *workers;
  ob_part *parts; /* one per thread */
  pthread_t owner;
  bool restore_mask;
  cpu_set_t owner_mask;
};

static inline void ob_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void ob_futex_wait(_Atomic uint32_t *addr, uint32_t expected) {
  /* EAGAIN (value already changed) and EINTR are fine: callers re-check. */
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void ob_futex_wake(_Atomic uint32_t *addr, int count) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

/* Chunk i of [0, n) split into nchunks contiguous parts whose sizes differ
 * by at most one; the larger parts come first. */
static void ob_chunk_range(int64_t n, int nchunks, int i, int64_t *begin, int64_t *end) {
  int64_t base = n / nchunks, rem = n % nchunks;
  *begin = i * base + (i < rem ? i : rem);
  *end = *begin + base + (i < rem ? 1 : 0);
}

static uint64_t ob_range_pack(uint32_t front, uint32_t back) { return (uint64_t)back << 32 | front; }

/* Takes up to `want` iterations from the front (thief false) or the back
 * of part q; false when it is empty. */
static bool ob_part_take(ob_part *q, int64_t want, bool thief, int64_t *b, int64_t *e) {
  uint64_t r = atomic_load_explicit(&q->range, memory_order_relaxed);
  for (;;) {
    uint32_t f = (uint32_t)r, k = (uint32_t)(r >> 32);
    if (f >= k) return false;
    uint32_t take = thief ? (k - f + 1) / 2 : (uint32_t)(want < (int64_t)(k - f) ? want : (int64_t)(k - f));
    uint64_t next = thief ? ob_range_pack(f, k - take) : ob_range_pack(f + take, k);
    if (atomic_compare_exchange_weak_explicit(&q->range, &r, next, memory_order_acq_rel, memory_order_relaxed)) {
      *b = thief ? k - take : f;
      *e = thief ? k : f + take;
      return true;
    }
  }
}

/* Thread `self`'s share of the job: its own part in grains, then the back
 * halves of the others' parts, each stolen range made its own part again
 * so that it can be stolen back in turn. */
static void ob_run_parts(ob_pool *p, int self) {
  int64_t b, e;
  if (p->per_thread) {
    p->fn(p->closure, self, self + 1);
    return;
  }
  ob_part *mine = &p->parts[self];
  for (;;) {
    while (ob_part_take(mine, p->grain, false, &b, &e)) p->fn(p->closure, b, e);
    bool stole = false;
    for (int j = 1; j < p->size && !stole; j++) {
      int v = (self + j) % p->size;
      if (ob_part_take(&p->parts[v], 0, true, &b, &e)) {
        /* mine is empty and only its owner refills it */
        atomic_store_explicit(&mine->range, ob_range_pack((uint32_t)b, (uint32_t)e), memory_order_release);
        stole = true;
      }
    }
    if (!stole) return;
  }
}

enum { OB_ADMIT_CLOSED = 1u << 31 };

/* A worker joins job `g` unless the caller has closed it (or moved on). */
static bool ob_join(ob_pool *p, uint32_t g) {
  uint64_t a = atomic_load(&p->admit);
  while ((uint32_t)(a >> 32) == g && !(a & OB_ADMIT_CLOSED))
    if (atomic_compare_exchange_weak(&p->admit, &a, a + 1)) return true;
  return false;
}

static uint32_t ob_wait_new_gen(ob_pool *p, uint32_t seen) {
  uint32_t g;
  for (int i = 0; i < OB_SPIN_WORKER; i++) {
    g = atomic_load_explicit(&p->gen, memory_order_acquire);
    if (g != seen) return g;
    ob_cpu_relax();
  }
  /* Announce the sleep before the last check; the caller bumps gen before
   * reading `sleepers`, so one of the two sees the other (both seq_cst). */
  atomic_fetch_add(&p->sleepers, 1);
  while ((g = atomic_load(&p->gen)) == seen) ob_futex_wait(&p->gen, seen);
  atomic_fetch_sub(&p->sleepers, 1);
  return g;
}

static void *ob_worker_main(void *arg) {
  ob_worker *w = arg;
  ob_pool *p = w->pool;
  uint32_t seen = 0; /* gen starts at 0 and moves only once all workers exist */
  for (;;) {
    seen = ob_wait_new_gen(p, seen);
    if (atomic_load_explicit(&p->stop, memory_order_relaxed)) break;
    /* A worker that wakes after the others have taken every iteration (a
     * futex wake on a virtual machine took 30-40 us here) finds the job
     * closed and goes back to waiting: the caller never waits for it. One
     * that joined counts itself done, so none can still be reading the
     * job's fields when the caller writes the next one. */
    if (!ob_join(p, seen)) continue;
    ob_run_parts(p, w->index);
    atomic_fetch_add(&p->done, 1);
    if (atomic_load(&p->caller_sleeping)) ob_futex_wake(&p->done, 1);
  }
  return NULL;
}

static int ob_pin(pthread_t t, int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(t, sizeof set, &set);
}

ob_status ob_pool_new(ob_ctx *ctx, const int *cores, int ncores, ob_pool **out) {
  OB_ASSERT(out);
  *out = NULL;
  if (ncores < 1)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "thread pool needs at least one core, got %d",
                   ncores);
  for (int i = 0; i < ncores; i++) {
    int c = cores ? cores[i] : i;
    if (c < 0 || c >= CPU_SETSIZE)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "core %d is out of range (0..%d)", c,
                     CPU_SETSIZE - 1);
    for (int j = 0; cores && j < i; j++)
      if (cores[j] == c)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "core %d is listed twice", c);
  }

  ob_status st = OB_OK;
  ob_pool *p = aligned_alloc(OB_CACHELINE, sizeof *p);
  if (!p) return ob_fail(ctx, OB_ERR_NOMEM, "cannot allocate a %d-thread pool", ncores);
  memset(p, 0, sizeof *p);
  p->size = ncores;
  p->owner = pthread_self();
  p->threads = calloc((size_t)ncores, sizeof *p->threads);
  p->workers = calloc((size_t)ncores, sizeof *p->workers);
  p->parts = aligned_alloc(OB_CACHELINE, sizeof *p->parts * (size_t)ncores);
  if (p->parts) memset(p->parts, 0, sizeof *p->parts * (size_t)ncores);
  if (!p->threads || !p->workers || !p->parts) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "cannot allocate a %d-thread pool", ncores);
    goto fail;
  }

  p->restore_mask =
      pthread_getaffinity_np(p->owner, sizeof p->owner_mask, &p->owner_mask) == 0;
  int rc = ob_pin(p->owner, cores ? cores[0] : 0);
  if (rc) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "cannot pin the calling thread to core %d: %s",
                 cores ? cores[0] : 0, strerror(rc));
    goto fail;
  }

  /* Workers only compute: keep asynchronous signals (timeouts, SIGCHLD,
   * SIGINT) on the caller, whose handlers expect them. Faults stay
   * deliverable so a crashing kernel still crashes where it runs. */
  sigset_t block, old;
  sigfillset(&block);
  sigdelset(&block, SIGSEGV);
  sigdelset(&block, SIGBUS);
  sigdelset(&block, SIGFPE);
  sigdelset(&block, SIGILL);
  sigdelset(&block, SIGABRT);
  sigdelset(&block, SIGTRAP);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  for (int i = 1; i < ncores; i++) {
    int core = cores ? cores[i] : i;
    p->workers[i].pool = p;
    p->workers[i].index = i;
    rc = pthread_create(&p->threads[i], NULL, ob_worker_main, &p->workers[i]);
    if (rc) {
      st = ob_fail(ctx, OB_ERR_SYSTEM, "cannot start pool worker for core %d: %s", core,
                   strerror(rc));
      break;
    }
    p->nworkers = i;
    rc = ob_pin(p->threads[i], core);
    if (rc) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "cannot pin pool worker to core %d: %s", core,
                   strerror(rc));
      break;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (st) goto fail;

  *out = p;
  return OB_OK;

fail:
  ob_pool_free(p);
  return st;
}

void ob_pool_free(ob_pool *p) {
  if (!p) return;
  if (p->nworkers > 0) {
    atomic_store_explicit(&p->stop, true, memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1); /* publishes `stop` */
    ob_futex_wake(&p->gen, INT_MAX);
    for (int i = 1; i <= p->nworkers; i++) pthread_join(p->threads[i], NULL);
  }
  /* Only the creating thread's mask was changed; another thread's is not
   * ours to touch. */
  if (p->restore_mask && pthread_equal(p->owner, pthread_self()))
    pthread_setaffinity_np(p->owner, sizeof p->owner_mask, &p->owner_mask);
  free(p->threads);
  free(p->workers);
  free(p->parts);
  free(p);
}

int ob_pool_size(const ob_pool *p) {
  OB_ASSERT(p);
  return p->size;
}

/* Runs one job on every thread and waits for all of them. */
static void ob_pool_run(ob_pool *p, int64_t n, ob_task_fn fn, void *closure, bool per_thread) {
  bool nested = atomic_exchange_explicit(&p->busy, true, memory_order_acquire);
  OB_ASSERT(!nested && "ob_pool_parallel_for called from inside a parallel_for");

  int nchunks = n < p->size ? (int)n : p->size;
  p->fn = fn;
  p->closure = closure;
  p->per_thread = per_thread;
  /* grains of a sixteenth of a part: a few compare-and-swaps per part,
   * and at the end a slow thread holds at most one grain nobody can take */
  int64_t part = (n + nchunks - 1) / nchunks;
  p->grain = part / 16 > 1 ? part / 16 : 1;
  for (int i = 0; i < p->size; i++) {
    int64_t b = 0, e = 0;
    if (i < nchunks && !per_thread) ob_chunk_range(n, nchunks, i, &b, &e);
    atomic_store_explicit(&p->parts[i].range, ob_range_pack((uint32_t)b, (uint32_t)e), memory_order_relaxed);
  }
  atomic_store(&p->done, 0);
  uint32_t g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
  atomic_store(&p->admit, (uint64_t)g << 32);
  atomic_store(&p->gen, g); /* publishes the job (seq_cst, see sleepers) */
  if (atomic_load(&p->sleepers) > 0) ob_futex_wake(&p->gen, INT_MAX);

  ob_run_parts(p, 0);

  /* Every iteration is taken: close the job to latecomers and wait for
   * those that joined. Per-thread jobs need every thread: never closed. */
  uint32_t joined = (uint32_t)(p->size - 1);
  if (!per_thread) {
    uint64_t a = atomic_fetch_or(&p->admit, (uint64_t)OB_ADMIT_CLOSED);
    joined = (uint32_t)(a & (OB_ADMIT_CLOSED - 1));
  }
  int spin = 0;
  uint32_t d;
  while ((d = atomic_load(&p->done)) != joined) {
    if (++spin < OB_SPIN_CALLER) {
      ob_cpu_relax();
      continue;
    }
    atomic_store(&p->caller_sleeping, 1);
    while ((d = atomic_load(&p->done)) != joined) ob_futex_wait(&p->done, d);
    atomic_store(&p->caller_sleeping, 0);
    break;
  }
  atomic_store_explicit(&p->busy, false, memory_order_release);
}

void ob_pool_parallel_for(ob_pool *p, int64_t n, ob_task_fn fn, void *closure) {
  OB_ASSERT(p && fn);
  if (n <= 0) return;
  if (p->size == 1 || n == 1) {
    fn(closure, 0, n);
    return;
  }
  /* parts hold 32-bit bounds; every loop is over one tensor's elements or
   * fewer, and validation caps those at OB_MAX_TENSOR_ELEMS (2^31) */
  OB_ASSERT(n <= UINT32_MAX && "parallel_for over more than 2^32 iterations");
  ob_pool_run(p, n, fn, closure, false);
}

void ob_pool_per_thread(ob_pool *p, ob_task_fn fn, void *closure) {
  OB_ASSERT(p && fn);
  if (p->size == 1) {
    fn(closure, 0, 1);
    return;
  }
  ob_pool_run(p, p->size, fn, closure, true);
}

/* Reads a decimal core number at *s (leading spaces allowed). */
static bool ob_parse_core_num(const char **s, long *out) {
  const char *p = *s;
  while (*p == ' ' || *p == '\t') p++;
  if (*p < '0' || *p > '9') return false;
  long v = 0;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (*p++ - '0');
    if (v >= CPU_SETSIZE) return false;
  }
  while (*p == ' ' || *p == '\t') p++;
  *s = p;
  *out = v;
  return true;
}

ob_status ob_parse_cores(ob_ctx *ctx, const char *text, int *cores, int cap, int *n) {
  OB_ASSERT(text && n && (cores || cap == 0));
  *n = 0;
  const char *s = text;
  int count = 0;
  for (;;) {
    long lo, hi;
    if (!ob_parse_core_num(&s, &lo))
      return ob_fail(ctx, OB_ERR_INVALID_ARG,
                     "bad core list \"%s\": expected a core number (0..%d) at \"%s\"",
                     text, CPU_SETSIZE - 1, s);
    hi = lo;
    if (*s == '-') {
      s++;
      if (!ob_parse_core_num(&s, &hi))
        return ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "bad core list \"%s\": expected a core number (0..%d) at \"%s\"",
                       text, CPU_SETSIZE - 1, s);
      if (hi < lo)
        return ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "bad core list \"%s\": range %ld-%ld runs backwards", text, lo, hi);
    }
    for (long c = lo; c <= hi; c++) {
      if (count >= cap)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "bad core list \"%s\": more than %d cores",
                       text, cap);
      for (int j = 0; j < count; j++)
        if (cores[j] == c)
          return ob_fail(ctx, OB_ERR_INVALID_ARG,
                         "bad core list \"%s\": core %ld is listed twice", text, c);
      cores[count++] = (int)c;
    }
    if (*s == '\0') break;
    if (*s != ',')
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "bad core list \"%s\": unexpected \"%s\"",
                     text, s);
    s++;
  }
  *n = count;
  return OB_OK;
}
