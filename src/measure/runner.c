/* runner.c: ob_runner runs variants in a persistent worker process forked
 * from the caller, so a crashing or hanging kernel costs a worker, never the
 * caller. Parent and worker talk over a SOCK_SEQPACKET socketpair; buffers
 * live in a memfd owned by the runner (passed with SCM_RIGHTS each request)
 * that the caller fills and checks in place. The worker owns its dlopen
 * handles and its thread pool; the runner owns the worker, the socket and the
 * memfd. Also here: ob_merr_str, ob_timing_default, ob_stats.
 *
 * Protocol, per request:
 *   parent -> RUN (layout, path, symbol, cores, timing) + memfd
 *   worker -> RAN (kernel's return value; the discarded warm-up) | ERR
 *   parent -> TIME | SKIP     (only after RAN with 0; SKIP on a wrong answer)
 *   worker -> COSTS | ERR     (only after TIME) */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
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
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "opbench/codegen.h"
#include "opbench/measure.h"
#include "opbench/target.h"
#include "measure/measure_impl.h"

#define OB_RUN_TIMEOUT_S 10.0
#define OB_RUN_MAX_COSTS 64
#define OB_RUN_ALIGN 64
#define OB_RUN_REQ_MAX 65536      /* one RUN message, bytes */
#define OB_RUN_MAX_HANDLES 32     /* dlopen handles the worker keeps */
#define OB_RUN_NUMBER_MAX (1 << 30)

/* ---- shared helpers -------------------------------------------------------- */

const char *ob_measure_signame(int sig, char buf[32]) {
  static const struct { int sig; const char *name; } names[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"},
      {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGINT, "SIGINT"},   {SIGHUP, "SIGHUP"},
      {SIGQUIT, "SIGQUIT"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGALRM, "SIGALRM"},
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig) return names[i].name;
  snprintf(buf, 32, "signal %d", sig);
  return buf;
}

const char *ob_merr_str(int error_no) {
  /* AutoTVM's MeasureErrorNo names. */
  static const char *const names[OB_MERR_COUNT] = {
      "NO_ERROR",     "INSTANTIATION_ERROR", "COMPILE_HOST", "COMPILE_DEVICE", "RUNTIME_DEVICE",
      "WRONG_ANSWER", "BUILD_TIMEOUT",       "RUN_TIMEOUT",  "UNKNOWN_ERROR",
  };
  return error_no >= 0 && error_no < OB_MERR_COUNT ? names[error_no] : "INVALID_ERROR_NO";
}

ob_timing_opts ob_timing_default(void) {
  ob_timing_opts t = {.number = 1, .repeat = 10, .min_repeat_ms = 0, .flush = false,
                      .timeout_s = OB_RUN_TIMEOUT_S};
  return t;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* cv uses the population standard deviation and plain mean of all samples. */
void ob_stats(const double *x, int n, double *median, double *trimmed_mean, double *cv) {
  OB_ASSERT(x && n >= 1);
  double stackbuf[OB_RUN_MAX_COSTS];
  double *s = n <= OB_RUN_MAX_COSTS ? stackbuf : malloc((size_t)n * sizeof *s);
  OB_ASSERT(s);
  memcpy(s, x, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += s[i];
  double mean = sum / n, var = 0;
  for (int i = 0; i < n; i++) var += (s[i] - mean) * (s[i] - mean);
  var /= n;
  if (median) *median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  if (trimmed_mean) *trimmed_mean = n > 2 ? (sum - s[0] - s[n - 1]) / (n - 2) : mean;
  if (cv) *cv = mean != 0 ? sqrt(var) / mean : 0;
  if (s != stackbuf) free(s);
}

/* ---- wire format ------------------------------------------------------------ */

enum { W_RUN = 0x6f620001, W_TIME, W_SKIP, W_RAN, W_COSTS, W_ERR };

/* RUN: this header, then uint64 off[nbufs], uint64 bytes[nbufs],
 * int32 cores[nthreads], uint8 is_input[nbufs], path, NUL, symbol, NUL. */
typedef struct wire_req {
  uint32_t kind;
  int32_t nbufs, nthreads, number, repeat, flush;
  double min_repeat_ms;
  uint64_t map_bytes;
  uint32_t path_len, sym_len; /* without the NUL */
} wire_req;

typedef struct wire_cmd {
  uint32_t kind;
} wire_cmd;

typedef struct wire_rep {
  uint32_t kind;
  int32_t code;   /* RAN: the kernel's return value */
  int32_t number; /* COSTS: final calls per group */
  int32_t ncosts;
  double costs[OB_RUN_MAX_COSTS];
  char msg[400]; /* ERR */
} wire_rep;

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* ---- the worker (a forked child; never returns into the caller) ------------ */

typedef struct worker {
  int sock;
  ob_ctx *ctx;
  ob_pool *pool;
  int *pool_cores;
  int pool_n;
  struct { char *path; void *h; } handles[OB_RUN_MAX_HANDLES];
  int next_evict;
} worker;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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

static void krt_parallel_for(void *pool, int64_t n, ob_krt_task fn, void *closure) {
  ob_pool_parallel_for(pool, n, fn, closure);
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

static void *worker_dlopen(worker *w, const char *path) {
  for (int i = 0; i < OB_RUN_MAX_HANDLES; i++)
    if (w->handles[i].path && strcmp(w->handles[i].path, path) == 0) return w->handles[i].h;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return NULL;
  int slot = w->next_evict;
  w->next_evict = (slot + 1) % OB_RUN_MAX_HANDLES;
  if (w->handles[slot].h) dlclose(w->handles[slot].h); /* no kernel is running */
  free(w->handles[slot].path);
  w->handles[slot].path = strdup(path);
  w->handles[slot].h = w->handles[slot].path ? h : NULL;
  if (!w->handles[slot].path) dlclose(h);
  return w->handles[slot].h;
}

static void flush_buffers(void *const *bufs, const uint64_t *bytes, const uint8_t *is_input,
                          int nbufs) {
#if defined(__x86_64__) || defined(__i386__)
  for (int b = 0; b < nbufs; b++) {
    if (!is_input[b]) continue;
    const char *p = bufs[b];
    for (uint64_t o = 0; o < bytes[b]; o += OB_RUN_ALIGN) _mm_clflush(p + o);
  }
  _mm_mfence();
#elif defined(__aarch64__)
  for (int b = 0; b < nbufs; b++) {
    if (!is_input[b]) continue;
    const char *p = bufs[b];
    for (uint64_t o = 0; o < bytes[b]; o += OB_RUN_ALIGN)
      __asm__ volatile("dc civac, %0" ::"r"(p + o) : "memory");
  }
  __asm__ volatile("dsb ish" ::: "memory");
#else
  (void)bufs, (void)bytes, (void)is_input, (void)nbufs;
#endif
}

/* AutoTVM's timing loop: `repeat` groups of `number` calls; a group shorter
 * than min_repeat_ms grows number by x1.618 (for good) and is redone. With
 * flush, each call is timed alone after flushing the inputs. Returns the
 * first non-zero kernel return value, or 0. */
static int worker_time(ob_kernel_fn fn, void *const *bufs, const ob_krt *rt, const wire_req *q,
                       const uint64_t *bytes, const uint8_t *is_input, wire_rep *rep) {
  int number = q->number;
  const int64_t min_ns = (int64_t)(q->min_repeat_ms * 1e6);
  for (int g = 0; g < q->repeat; g++) {
    for (;;) {
      int64_t ns = 0;
      if (q->flush) {
        for (int k = 0; k < number; k++) {
          flush_buffers(bufs, bytes, is_input, q->nbufs);
          int64_t t0 = now_ns();
          int rc = fn(bufs, rt);
          ns += now_ns() - t0;
          if (rc) return rc;
        }
      } else {
        int64_t t0 = now_ns();
        for (int k = 0; k < number; k++) {
          int rc = fn(bufs, rt);
          if (rc) return rc;
        }
        ns = now_ns() - t0;
      }
      if (ns >= min_ns || number >= OB_RUN_NUMBER_MAX) {
        rep->costs[g] = (double)ns * 1e-9 / number;
        break;
      }
      double grown = ceil(number * 1.618);
      number = grown > OB_RUN_NUMBER_MAX ? OB_RUN_NUMBER_MAX : (int)grown;
    }
  }
  rep->number = number;
  rep->ncosts = q->repeat;
  return 0;
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
  size_t need = sizeof q + nb * 16 + nt * 4 + nb + (size_t)q.path_len + 1 + q.sym_len + 1;
  if (q.kind != W_RUN || q.nbufs < 0 || q.nthreads < 1 || q.repeat < 1 ||
      q.repeat > OB_RUN_MAX_COSTS || q.number < 1 || len != need || fd < 0) {
    worker_err(w, "malformed request");
    return;
  }
  const unsigned char *p = msg + sizeof q;
  uint64_t *off = malloc((nb + 1) * sizeof *off), *bytes = malloc((nb + 1) * sizeof *bytes);
  int32_t *cores = malloc(nt * sizeof *cores);
  void **bufs = malloc((nb + 1) * sizeof *bufs);
  void *map = MAP_FAILED;
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
  map = mmap(NULL, q.map_bytes ? q.map_bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    worker_err(w, "worker cannot map buffers: %s", strerror(errno));
    goto out;
  }
  for (size_t i = 0; i < nb; i++) bufs[i] = (char *)map + off[i];

  void *h = worker_dlopen(w, path);
  if (!h) {
    const char *e = dlerror();
    worker_err(w, "dlopen failed: %s", e ? e : path);
    goto out;
  }
  dlerror();
  void *sp = dlsym(h, sym);
  if (!sp) {
    const char *e = dlerror();
    worker_err(w, "dlsym failed: %s", e ? e : sym);
    goto out;
  }
  if (!worker_pool(w, cores, q.nthreads)) {
    worker_err(w, "cannot create a thread pool on the requested cores: %s",
               ob_ctx_errmsg(w->ctx));
    goto out;
  }
  ob_kernel_fn fn = (ob_kernel_fn)sp;
  ob_krt rt = {.pool = w->pool, .parallel_for = krt_parallel_for};

  wire_rep rep;
  memset(&rep, 0, sizeof rep);
  rep.kind = W_RAN;
  rep.code = fn(bufs, &rt); /* also the discarded warm-up */
  worker_send(w, &rep);
  if (rep.code != 0) goto out;

  wire_cmd cmd;
  ssize_t k;
  do {
    k = recv(w->sock, &cmd, sizeof cmd, 0);
  } while (k < 0 && errno == EINTR);
  if (k != (ssize_t)sizeof cmd) _exit(0); /* the parent is gone */
  if (cmd.kind != W_TIME) goto out;

  memset(&rep, 0, sizeof rep);
  rep.kind = W_COSTS;
  int rc = worker_time(fn, bufs, &rt, &q, bytes, is_input, &rep);
  if (rc) {
    memset(&rep, 0, sizeof rep);
    rep.kind = W_RAN;
    rep.code = rc;
  }
  worker_send(w, &rep);
out:
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
  if (ob_ctx_new(&w.ctx) != OB_OK) _exit(3);
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

/* ---- the parent side ------------------------------------------------------ */

struct ob_runner {
  ob_ctx *ctx;
  ob_gpu_runner *gpu; /* made by ob_runner_gpu on first use */
  pid_t pid;          /* the worker, or -1 (restarted on the next request) */
  int sock;           /* our end of the socketpair, or -1 */
  int memfd;          /* buffers, or -1 */
  unsigned char *map; /* our mapping of memfd */
  size_t map_cap;
};

static pid_t waitpid_eintr(pid_t pid, int *status, int flags) {
  pid_t w;
  do {
    w = waitpid(pid, status, flags);
  } while (w < 0 && errno == EINTR);
  return w;
}

static ob_status start_worker(ob_runner *r) {
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
static bool stop_worker(ob_runner *r, int *status) {
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
 * after 2 s) and says why it died. */
static void worker_died(ob_runner *r, ob_run_result *res) {
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
             ob_measure_signame(WTERMSIG(status), sb));
  else if (w >= 0 && WIFEXITED(status))
    snprintf(res->message, sizeof res->message,
             "worker exited with status %d (did the kernel call exit?)", WEXITSTATUS(status));
  else
    snprintf(res->message, sizeof res->message, "worker lost");
}

ob_status ob_runner_new(ob_ctx *ctx, ob_runner **out) {
  OB_ASSERT(ctx && out);
  *out = NULL;
  ob_runner *r = calloc(1, sizeof *r);
  if (!r) return ob_fail(ctx, OB_ERR_NOMEM, "runner: out of memory");
  r->ctx = ctx;
  r->pid = -1;
  r->sock = -1;
  r->memfd = -1;
  ob_status st = start_worker(r);
  if (st) {
    free(r);
    return st;
  }
  *out = r;
  return OB_OK;
}

ob_status ob_runner_gpu(ob_runner *r, const struct ob_target *t, ob_gpu_runner **out) {
  *out = NULL;
  if (r->gpu && ob_target_same(ob_gpu_runner_target(r->gpu), t)) {
    *out = r->gpu;
    return OB_OK;
  }
  ob_gpu_runner_free(r->gpu);
  r->gpu = NULL;
  ob_status st = ob_gpu_runner_new(r->ctx, t, &r->gpu);
  if (!st) *out = r->gpu;
  return st;
}

void ob_runner_free(ob_runner *r) {
  if (!r) return;
  ob_gpu_runner_free(r->gpu);
  int status;
  stop_worker(r, &status);
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

static int send_cmd(ob_runner *r, uint32_t kind) {
  wire_cmd cmd = {kind};
  ssize_t k;
  do {
    k = send(r->sock, &cmd, sizeof cmd, MSG_NOSIGNAL);
  } while (k < 0 && errno == EINTR);
  return k == (ssize_t)sizeof cmd ? 0 : -1;
}

enum { WAIT_OK, WAIT_TIMEOUT, WAIT_DEAD };

static int wait_reply(ob_runner *r, double deadline, wire_rep *rep) {
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
static void reply_failed(ob_runner *r, int how, double timeout, ob_run_result *res) {
  if (how == WAIT_TIMEOUT) {
    int status;
    stop_worker(r, &status);
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s", timeout);
  } else {
    worker_died(r, res);
  }
}

ob_status ob_runner_run(ob_runner *r, const ob_run_request *req, ob_run_result *res) {
  OB_ASSERT(r && req && res && req->so_path && req->symbol && req->fill && req->nbufs >= 0);
  OB_ASSERT(req->nbufs == 0 || req->buf_bytes);
  memset(res, 0, sizeof *res);
  const double t_start = ob_now_s();
  ob_status st = OB_OK;
  size_t nb = (size_t)req->nbufs;
  int nthreads = req->nthreads > 0 ? req->nthreads : 1;
  ob_timing_opts t = req->timing;
  if (t.number < 1) t.number = 1;
  if (t.repeat < 1) t.repeat = 10; /* a zeroed ob_timing_opts means the defaults */
  if (t.repeat > OB_RUN_MAX_COSTS) t.repeat = OB_RUN_MAX_COSTS;
  if (t.min_repeat_ms < 0) t.min_repeat_ms = 0;
  double timeout = t.timeout_s > 0 ? t.timeout_s : OB_RUN_TIMEOUT_S;
  const double deadline = t_start + timeout;

  /* The worker resolves paths itself: make relative ones survive a chdir. */
  char *abs = strchr(req->so_path, '/') ? realpath(req->so_path, NULL) : NULL;
  const char *so_path = abs ? abs : req->so_path;
  size_t path_len = strlen(so_path), sym_len = strlen(req->symbol);
  size_t len = sizeof(wire_req) + nb * 16 + (size_t)nthreads * 4 + nb + path_len + 1 + sym_len + 1;
  unsigned char *msg = NULL;
  uint64_t *off = NULL;
  void **bufs = NULL;
  if (len > OB_RUN_REQ_MAX) {
    st = ob_fail(r->ctx, OB_ERR_INVALID_ARG,
                 "runner: request for %s too large (%zu buffers, %d threads)", req->symbol, nb,
                 nthreads);
    goto out;
  }
  msg = calloc(1, len);
  off = calloc(nb + 1, sizeof *off);
  bufs = calloc(nb + 1, sizeof *bufs);
  if (!msg || !off || !bufs) {
    st = ob_fail(r->ctx, OB_ERR_NOMEM, "runner: out of memory");
    goto out;
  }

  /* Layout: every buffer 64-byte aligned, at least one line each. */
  size_t total = 0;
  for (size_t i = 0; i < nb; i++) {
    off[i] = total;
    size_t b = req->buf_bytes[i] ? req->buf_bytes[i] : 1;
    if (b > (size_t)OB_MAX_BUFFER_BYTES || !ob_add_size(total, align_up(b, OB_RUN_ALIGN), &total)) {
      st = ob_fail(r->ctx, OB_ERR_INVALID_ARG,
                   "runner: buffer %zu of %s has %zu bytes, more than the limit of %lld bytes per "
                   "buffer",
                   i, req->symbol, b, (long long)OB_MAX_BUFFER_BYTES);
      goto out;
    }
  }
  if (total == 0) total = OB_RUN_ALIGN;
  if ((st = ob_runner_check_memory(r->ctx, req->symbol, total)) != OB_OK) goto out;
  if ((st = ensure_map(r, total)) != OB_OK) goto out;
  for (size_t i = 0; i < nb; i++) bufs[i] = r->map + off[i];

  wire_req q = {.kind = W_RUN, .nbufs = (int32_t)nb, .nthreads = nthreads,
                .number = t.number, .repeat = t.repeat, .flush = t.flush,
                .min_repeat_ms = t.min_repeat_ms, .map_bytes = total,
                .path_len = (uint32_t)path_len, .sym_len = (uint32_t)sym_len};
  unsigned char *p = msg;
  memcpy(p, &q, sizeof q), p += sizeof q;
  memcpy(p, off, nb * 8), p += nb * 8;
  for (size_t i = 0; i < nb; i++) {
    uint64_t b = req->buf_bytes[i];
    memcpy(p, &b, 8), p += 8;
  }
  for (int i = 0; i < nthreads; i++) {
    int32_t c = req->cores ? req->cores[i] : i;
    memcpy(p, &c, 4), p += 4;
  }
  for (size_t i = 0; i < nb; i++) *p++ = req->buf_is_input ? req->buf_is_input[i] : 1;
  memcpy(p, so_path, path_len + 1), p += path_len + 1;
  memcpy(p, req->symbol, sym_len + 1);

  req->fill(req->user, bufs);

  /* Send; a worker that died between requests is restarted once. */
  for (int attempt = 0;; attempt++) {
    if (r->pid < 0 && (st = start_worker(r)) != OB_OK) goto out;
    if (send_with_fd(r->sock, msg, len, r->memfd) == 0) break;
    int e = errno, status;
    stop_worker(r, &status);
    if (attempt == 1) {
      st = ob_fail(r->ctx, OB_ERR_SYSTEM, "runner: cannot send to the worker: %s", strerror(e));
      goto out;
    }
  }

  wire_rep rep;
  int how = wait_reply(r, deadline, &rep);
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
    worker_died(r, res); /* protocol error: start afresh */
    goto out;
  }
  if (rep.code != 0) {
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "kernel returned %d", rep.code);
    goto out;
  }

  if (req->check) {
    char cmsg[sizeof res->message];
    cmsg[0] = '\0';
    ob_status cst = req->check(req->user, bufs, cmsg, sizeof cmsg);
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
  how = wait_reply(r, deadline, &rep);
  if (how != WAIT_OK) {
    reply_failed(r, how, timeout, res);
    goto out;
  }
  if (rep.kind == W_RAN) { /* a timed call returned non-zero */
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "kernel returned %d", rep.code);
    goto out;
  }
  if (rep.kind != W_COSTS || rep.ncosts < 1 || rep.ncosts > OB_RUN_MAX_COSTS) {
    worker_died(r, res);
    goto out;
  }
  res->error_no = OB_MERR_NONE;
  res->ncosts = rep.ncosts;
  res->number = rep.number;
  memcpy(res->costs, rep.costs, (size_t)rep.ncosts * sizeof rep.costs[0]);
  ob_stats(res->costs, res->ncosts, &res->median_s, &res->mean_s, &res->cv);

out:
  res->run_s = ob_now_s() - t_start;
  free(abs);
  free(msg);
  free(off);
  free(bufs);
  return st;
}
