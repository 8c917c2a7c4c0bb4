/* gpu_runner.c: the runner implementation for GPU targets (cuda, opencl),
 * behind ob_runner as the native and emulator ones (measure_impl.h). As
 * the native worker, a persistent worker process, forked from the caller,
 * runs the kernels, so a kernel that crashes the driver (PoCL runs kernels
 * in the process; a CUDA context is lost after an illegal address) or hangs
 * costs a worker, never the caller. The worker opens the device session
 * itself: neither CUDA nor PoCL survives a fork, and the caller never opens
 * one. The buffers are ob_runner's memfd, which the caller fills and checks
 * in place; the worker copies the inputs to the device before the checked
 * run and the outputs back after it.
 *
 * Protocol, per request (a SOCK_SEQPACKET socketpair, the memfd passed
 * with SCM_RIGHTS):
 *   parent -> RUN (layout, launch, timing, deadline, path, symbol) + memfd
 *   worker -> RAN (0: ran; else the error class and message) | ERR
 *   parent -> TIME | SKIP   (after RAN 0; SKIP on a wrong answer)
 *   worker -> COSTS (the timing, or OB_TIME_DEADLINE) | RAN (a timed
 *             launch failed)
 * Timing: ob_time_loop with the device's clock (ob_gpu_clock: CUDA events,
 * OpenCL profiling info) read around each group of launches, the deadline
 * moved onto that clock, the clock's own cost (two readings with nothing
 * between) as the timer overhead; a cache flush does not apply (the inputs
 * stay on the device) and is recorded off. */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opbench/gpu.h"
#include "opbench/measure.h"
#include "kernel/kernel_impl.h"
#include "measure/measure_impl.h"

#define G_MAX_BUFS 16
#define G_ALIGN 64
#define G_GRACE_S 5.0   /* a worker stuck in a driver call is killed this long after its deadline */
/* the checked run may take this much longer by default (ob_run_request's
 * build_s): the driver's compile (a few seconds for PoCL's heaviest
 * kernels, more on a loaded machine) */
#define G_BUILD_S 30.0

enum { G_RUN = 0x6f670001, G_TIME, G_SKIP, G_RAN, G_COSTS, G_ERR };

typedef struct g_req {
  uint32_t kind;
  int32_t nbufs;
  ob_timing_opts timing; /* resolved for the target; clock NULL */
  uint64_t map_bytes;
  uint64_t off[G_MAX_BUFS], bytes[G_MAX_BUFS];
  uint8_t is_input[G_MAX_BUFS];
  ob_launch launch;
  char path[4096];
  char symbol[256];
} g_req;

typedef struct g_rep {
  uint32_t kind;
  int32_t error_no; /* RAN: 0 or the error class; COSTS: 0 or OB_TIME_DEADLINE */
  ob_timing timing;
  char msg[480];
} g_rep;

/* ---- the worker ------------------------------------------------------------------- */
typedef struct gworker {
  int sock;
  ob_ctx *ctx;
  ob_gpu *gpu;
  char open_msg[480]; /* why the session could not open, or "" */
  double clock_overhead_s;
  void *dev[G_MAX_BUFS];
  size_t dev_bytes[G_MAX_BUFS];
  int nargs;
  /* the last loaded kernel, kept for repeated requests of the same one */
  ob_gpu_kernel *k;
  char k_path[4096], k_sym[256];
  ob_launch k_launch;
} gworker;

static void g_send(gworker *w, const g_rep *rep) {
  ssize_t k;
  do {
    k = send(w->sock, rep, sizeof *rep, MSG_NOSIGNAL);
  } while (k < 0 && errno == EINTR);
  if (k != (ssize_t)sizeof *rep) _exit(0); /* the parent is gone */
}

static void g_reply(gworker *w, uint32_t kind, int error_no, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void g_reply(gworker *w, uint32_t kind, int error_no, const char *fmt, ...) {
  g_rep rep;
  memset(&rep, 0, sizeof rep);
  rep.kind = kind;
  rep.error_no = error_no;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rep.msg, sizeof rep.msg, fmt, ap);
  va_end(ap);
  g_send(w, &rep);
}

/* The device's error is sticky: report it and let the parent start afresh. */
static _Noreturn void g_lost(gworker *w, int error_no, const char *what) {
  g_reply(w, G_RAN, error_no, "%s: %s", what,
          ob_gpu_errmsg(w->gpu)[0] ? ob_gpu_errmsg(w->gpu) : ob_ctx_errmsg(w->ctx));
  _exit(0);
}

static int class_of(ob_status st) {
  switch (st) {
  case OB_ERR_COMPILE: return OB_MERR_COMPILE_HOST;
  case OB_ERR_LAUNCH: return OB_MERR_INSTANTIATION;
  default: return OB_MERR_RUNTIME;
  }
}

static int g_call(void *user) {
  gworker *w = user;
  return ob_gpu_launch(w->k, w->dev, w->nargs);
}

static double g_clock(void *user) { return ob_gpu_clock(((gworker *)user)->gpu); }

/* Two readings of the device clock with nothing between: what one costs on
 * the device's timeline (the best of a few). */
static double clock_overhead(ob_gpu *g) {
  double best = INFINITY;
  for (int run = 0; run < 3; run++) {
    enum { READS = 20 };
    double c0 = ob_gpu_clock(g), c = c0;
    for (int i = 0; i < READS; i++) c = ob_gpu_clock(g);
    double per = (c - c0) / READS;
    if (per > 0 && per < best) best = per;
  }
  return isfinite(best) && !ob_gpu_error(g) ? best : 0;
}

static void g_serve(gworker *w, const g_req *q, int fd) {
  if (w->open_msg[0]) {
    g_reply(w, G_ERR, 0, "%s", w->open_msg);
    return;
  }
  void *map = mmap(NULL, q->map_bytes ? q->map_bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    g_reply(w, G_ERR, 0, "GPU worker cannot map buffers: %s", strerror(errno));
    return;
  }
  int nb = q->nbufs;
  /* device buffers: kept between requests of the same sizes */
  for (int i = 0; i < nb; i++) {
    if (w->dev[i] && w->dev_bytes[i] != q->bytes[i]) {
      ob_gpu_free(w->gpu, w->dev[i]);
      w->dev[i] = NULL;
    }
    if (!w->dev[i]) {
      if (ob_gpu_alloc(w->gpu, q->bytes[i], &w->dev[i]) != OB_OK) {
        w->dev[i] = NULL;
        g_reply(w, G_RAN, OB_MERR_RUNTIME, "%s", ob_ctx_errmsg(w->ctx));
        goto out;
      }
      w->dev_bytes[i] = q->bytes[i];
    }
  }
  w->nargs = nb;
  bool same = w->k && !strcmp(w->k_path, q->path) && !strcmp(w->k_sym, q->symbol) &&
              !memcmp(&w->k_launch, &q->launch, sizeof q->launch);
  if (!same) {
    ob_gpu_kernel_free(w->k);
    w->k = NULL;
    ob_status st = ob_gpu_load(w->gpu, q->path, q->symbol, &q->launch, &w->k);
    if (st) {
      if (ob_gpu_error(w->gpu)) g_lost(w, OB_MERR_RUNTIME, "loading the kernel");
      g_reply(w, G_RAN, class_of(st), "%s", ob_ctx_errmsg(w->ctx));
      goto out;
    }
    snprintf(w->k_path, sizeof w->k_path, "%s", q->path);
    snprintf(w->k_sym, sizeof w->k_sym, "%s", q->symbol);
    w->k_launch = q->launch;
  }
  for (int i = 0; i < nb; i++)
    if (ob_gpu_upload(w->gpu, w->dev[i], (char *)map + q->off[i], q->bytes[i]) != OB_OK)
      g_lost(w, OB_MERR_RUNTIME, "copying the inputs to the device");
  /* the checked run, also the discarded warm-up */
  if (g_call(w) || ob_gpu_sync(w->gpu) != OB_OK) g_lost(w, OB_MERR_RUNTIME, "running the kernel");
  for (int i = 0; i < nb; i++)
    if (!q->is_input[i] && ob_gpu_download(w->gpu, (char *)map + q->off[i], w->dev[i], q->bytes[i]) != OB_OK)
      g_lost(w, OB_MERR_RUNTIME, "copying the outputs from the device");
  g_reply(w, G_RAN, 0, "ran");
  uint32_t cmd = 0;
  ssize_t k;
  do {
    k = recv(w->sock, &cmd, sizeof cmd, 0);
  } while (k < 0 && errno == EINTR);
  if (k != (ssize_t)sizeof cmd) _exit(0);
  if (cmd != G_TIME) goto out;
  g_rep rep;
  memset(&rep, 0, sizeof rep);
  rep.kind = G_COSTS;
  ob_timing_opts o = q->timing;
  o.flush = false;
  o.clock = g_clock;
  o.timer_overhead_s = w->clock_overhead_s;
  /* the timing's deadline on the device's timeline: the timeout counts from
   * here (the driver's compile at load and first launch is no run time) */
  double dev_deadline = ob_gpu_clock(w->gpu) + q->timing.timeout_s;
  int rc = ob_time_loop(&o, dev_deadline, g_call, NULL, w, &rep.timing);
  if (ob_gpu_error(w->gpu) || (rc && rc != OB_TIME_DEADLINE)) g_lost(w, OB_MERR_RUNTIME, "timing the kernel");
  rep.error_no = rc;
  g_send(w, &rep);
out:
  munmap(map, q->map_bytes ? q->map_bytes : 1);
}

static _Noreturn void g_main(int sock, pid_t parent, const ob_target *t) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
  static const int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) signal(crash[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);
  if (sock > 3) close_range(3, (unsigned)sock - 1, 0);
  close_range((unsigned)sock + 1, ~0U, 0);
  /* device compilers print their diagnostics (PoCL's clang: "1 error
   * generated.") besides returning them in the build log, which the
   * result carries: the caller's stderr keeps its one error line */
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull >= 0) {
    dup2(devnull, STDERR_FILENO);
    close(devnull);
  }
  gworker w;
  memset(&w, 0, sizeof w);
  w.sock = sock;
  if (ob_ctx_new(&w.ctx) != OB_OK) _exit(3);
  if (ob_gpu_open(w.ctx, t, &w.gpu) != OB_OK) snprintf(w.open_msg, sizeof w.open_msg, "%s", ob_ctx_errmsg(w.ctx));
  else w.clock_overhead_s = clock_overhead(w.gpu);
  g_req *q = malloc(sizeof *q);
  if (!q) _exit(3);
  for (;;) {
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(sizeof(int))];
    } cbuf;
    struct iovec iov = {q, sizeof *q};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf, .msg_controllen = sizeof cbuf.buf};
    ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (n != (ssize_t)sizeof *q || q->kind != G_RUN || fd < 0 || q->nbufs < 0 || q->nbufs > G_MAX_BUFS ||
        q->timing.repeat < 1 || q->timing.repeat > OB_TIMING_MAX_COSTS || q->timing.clock)
      g_reply(&w, G_ERR, 0, "malformed request");
    else
      g_serve(&w, q, fd);
    if (fd >= 0) close(fd);
  }
}

/* ---- the parent side: the implementation behind ob_runner --------------------------- */
typedef struct gpurun {
  ob_ctx *ctx;
  ob_target *target; /* the worker's: parsed again from the canonical string */
  pid_t pid;
  int sock;
} gpurun;

static pid_t g_waitpid(pid_t pid, int *status, int flags) {
  pid_t w;
  do {
    w = waitpid(pid, status, flags);
  } while (w < 0 && errno == EINTR);
  return w;
}

static ob_status g_start(gpurun *r) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return ob_fail(r->ctx, OB_ERR_SYSTEM, "GPU runner: socketpair: %s", strerror(errno));
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    return ob_fail(r->ctx, OB_ERR_SYSTEM, "GPU runner: fork: %s", strerror(e));
  }
  if (pid == 0) {
    close(sv[0]);
    g_main(sv[1], parent, r->target);
  }
  close(sv[1]);
  r->pid = pid;
  r->sock = sv[0];
  return OB_OK;
}

static void g_stop(gpurun *r) {
  int status;
  if (r->pid > 0) {
    kill(r->pid, SIGKILL);
    g_waitpid(r->pid, &status, 0);
  }
  if (r->sock >= 0) close(r->sock);
  r->pid = -1;
  r->sock = -1;
}

/* The worker is gone (or exiting): reap it and say why. */
static void g_died(gpurun *r, ob_run_result *res) {
  int status = 0;
  pid_t w = 0;
  double until = ob_now_s() + 2.0;
  while (r->pid > 0 && (w = g_waitpid(r->pid, &status, WNOHANG)) == 0 && ob_now_s() < until) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (w == r->pid) {
    r->pid = -1;
    if (r->sock >= 0) close(r->sock);
    r->sock = -1;
  } else {
    g_stop(r);
    status = 0;
  }
  res->error_no = OB_MERR_RUNTIME;
  char sb[32];
  if (WIFSIGNALED(status))
    snprintf(res->message, sizeof res->message, "kernel crashed the GPU worker: %s",
             ob_kernel_signame(WTERMSIG(status), sb));
  else
    snprintf(res->message, sizeof res->message, "GPU worker lost");
}

ob_status ob_runner_gpu_new(ob_ctx *ctx, void **self) {
  gpurun *r = calloc(1, sizeof *r);
  if (!r) return ob_fail(ctx, OB_ERR_NOMEM, "GPU runner: out of memory");
  r->ctx = ctx;
  r->pid = r->sock = -1;
  *self = r;
  return OB_OK;
}

static void gpu_free(void *self) {
  gpurun *r = self;
  if (!r) return;
  g_stop(r);
  ob_target_free(r->target);
  free(r);
}

static int g_send_fd(int sock, const void *buf, size_t len, int fd) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } cbuf;
  memset(&cbuf, 0, sizeof cbuf);
  struct iovec iov = {(void *)buf, len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf, .msg_controllen = sizeof cbuf.buf};
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

enum { GW_OK, GW_TIMEOUT, GW_DEAD };

static int g_wait(gpurun *r, double until, g_rep *rep) {
  for (;;) {
    double left = until - ob_now_s();
    if (left <= 0) return GW_TIMEOUT;
    struct pollfd pfd = {.fd = r->sock, .events = POLLIN};
    int ms = (int)ceil(left * 1000);
    int rc = poll(&pfd, 1, ms < 1 ? 1 : ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return GW_DEAD;
    if (rc == 0) continue;
    ssize_t k = recv(r->sock, rep, sizeof *rep, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k != (ssize_t)sizeof *rep) return GW_DEAD;
    rep->msg[sizeof rep->msg - 1] = '\0';
    return GW_OK;
  }
}

static void g_failed(gpurun *r, int how, double timeout, ob_run_result *res) {
  if (how == GW_TIMEOUT) {
    g_stop(r);
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s", timeout);
  } else {
    g_died(r, res);
  }
}

static ob_status gpu_run(void *self, const ob_run_request *req, const ob_timing_opts *t, double deadline,
                         double kill_at, const ob_run_bufs *b, ob_run_result *res) {
  gpurun *r = self;
  ob_status st = OB_OK;
  if (!req->target || !ob_target_is_gpu(req->target) || !req->launch)
    return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "GPU runner: kernel %s needs a GPU target and its launch",
                   req->symbol);
  if (b->nbufs > G_MAX_BUFS)
    return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "GPU runner: %d buffers (at most %d)", b->nbufs, G_MAX_BUFS);
  g_req *q = calloc(1, sizeof *q);
  if (!q) return ob_fail(r->ctx, OB_ERR_NOMEM, "GPU runner: out of memory");
  if (strlen(req->so_path) >= sizeof q->path || strlen(req->symbol) >= sizeof q->symbol) {
    free(q);
    return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "GPU runner: kernel path or name too long");
  }
  /* a worker per target: another target's worker makes way */
  if (!r->target || !ob_target_same(r->target, req->target)) {
    g_stop(r);
    ob_target_free(r->target);
    r->target = NULL;
    if ((st = ob_target_parse(r->ctx, ob_target_str(req->target), &r->target)) != OB_OK) goto out;
  }
  q->kind = G_RUN;
  q->nbufs = b->nbufs;
  q->timing = *t;
  q->map_bytes = b->map_bytes;
  q->launch = *req->launch;
  for (int i = 0; i < b->nbufs; i++) {
    q->off[i] = b->off[i];
    q->bytes[i] = req->buf_bytes[i];
    q->is_input[i] = req->buf_is_input ? req->buf_is_input[i] : 1;
  }
  snprintf(q->path, sizeof q->path, "%s", req->so_path);
  snprintf(q->symbol, sizeof q->symbol, "%s", req->symbol);
  req->fill(req->user, b->ptr);
  for (int attempt = 0;; attempt++) {
    if (r->pid < 0 && (st = g_start(r)) != OB_OK) goto out;
    if (g_send_fd(r->sock, q, sizeof *q, b->memfd) == 0) break;
    int e = errno;
    g_stop(r);
    if (attempt == 1) {
      st = ob_fail(r->ctx, OB_ERR_SYSTEM, "GPU runner: cannot send to the worker: %s", strerror(e));
      goto out;
    }
  }
  (void)deadline, (void)kill_at; /* the timeout counts from the timing's start (above) */
  /* the checked run: the device's start, the driver's compile (OpenCL
   * builds at load, PoCL again at the first launch) and the run */
  g_rep rep;
  int how = g_wait(r, ob_now_s() + t->timeout_s + (req->build_s > 0 ? req->build_s : G_BUILD_S), &rep);
  if (how != GW_OK) {
    g_failed(r, how, t->timeout_s, res);
    goto out;
  }
  if (rep.kind == G_ERR) { /* the worker cannot serve: no device session */
    g_stop(r);
    st = ob_fail(r->ctx, OB_ERR_UNSUPPORTED, "%s", rep.msg);
    goto out;
  }
  if (rep.kind != G_RAN) {
    g_died(r, res);
    goto out;
  }
  if (rep.error_no) {
    res->error_no = rep.error_no;
    snprintf(res->message, sizeof res->message, "%s", rep.msg);
    goto out;
  }
  if (req->check) {
    char cmsg[sizeof res->message];
    cmsg[0] = '\0';
    ob_status cst = req->check(req->user, b->ptr, cmsg, sizeof cmsg);
    if (cst != OB_OK) {
      res->error_no = OB_MERR_WRONG_ANSWER;
      cmsg[sizeof cmsg - 1] = '\0';
      snprintf(res->message, sizeof res->message, "%s", cmsg[0] ? cmsg : ob_status_str(cst));
      uint32_t cmd = G_SKIP;
      if (send(r->sock, &cmd, sizeof cmd, MSG_NOSIGNAL) != (ssize_t)sizeof cmd) g_stop(r);
      goto out;
    }
  }
  uint32_t cmd = G_TIME;
  if (send(r->sock, &cmd, sizeof cmd, MSG_NOSIGNAL) != (ssize_t)sizeof cmd) {
    g_died(r, res);
    goto out;
  }
  how = g_wait(r, ob_now_s() + t->timeout_s + G_GRACE_S, &rep);
  if (how != GW_OK) {
    g_failed(r, how, t->timeout_s, res);
    goto out;
  }
  if (rep.kind == G_RAN) {
    res->error_no = rep.error_no ? rep.error_no : OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "%s", rep.msg);
    goto out;
  }
  if (rep.kind == G_COSTS && rep.error_no == OB_TIME_DEADLINE) {
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s (while timing)", t->timeout_s);
    goto out;
  }
  if (rep.kind != G_COSTS || rep.error_no || rep.timing.ncosts < 1 || rep.timing.ncosts > OB_TIMING_MAX_COSTS) {
    g_died(r, res);
    goto out;
  }
  res->error_no = OB_MERR_NONE;
  res->timing = rep.timing;
out:
  free(q);
  return st;
}

const struct ob_runner_i ob_runner_gpu_i = {"gpu", gpu_run, gpu_free};
