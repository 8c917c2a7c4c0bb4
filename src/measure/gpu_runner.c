/* gpu_runner.c: the runner of GPU kernels. As the CPU runner (runner.c), a
 * persistent worker process, forked from the caller, runs the kernels, so
 * a kernel that crashes the driver (PoCL runs kernels in the process; a
 * CUDA context is lost after an illegal address) or hangs costs a worker,
 * never the caller. The worker opens the device session itself: neither
 * CUDA nor PoCL survives a fork, and the caller never opens one. Buffers
 * are host buffers in a memfd that the caller fills and checks in place;
 * the worker copies inputs to the device before the checked run and
 * outputs back after it.
 *
 * Protocol, per request (a SOCK_SEQPACKET socketpair, the memfd passed
 * with SCM_RIGHTS):
 *   parent -> RUN (layout, launch, timing, path, symbol) + memfd
 *   worker -> RAN (0: ran; else the error class and message) | ERR
 *   parent -> TIME | SKIP   (after RAN 0; SKIP on a wrong answer)
 *   worker -> COSTS | RAN (a timed launch failed)
 * Timing: the device's clock (ob_gpu_clock: CUDA events, OpenCL profiling
 * info) read around groups of `number` launches, the groups growing by
 * x1.618 until one lasts min_repeat_ms, `repeat` groups kept; a cache
 * flush does not apply (the inputs stay on the device). */
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
#include "measure/measure_impl.h"

#define G_MAX_BUFS 16
#define G_MAX_COSTS 64
#define G_REQ_MAX 8192
#define G_ALIGN 64
#define G_NUMBER_MAX (1 << 30)

enum { G_RUN = 0x6f670001, G_TIME, G_SKIP, G_RAN, G_COSTS, G_ERR };

typedef struct g_req {
  uint32_t kind;
  int32_t nbufs, number, repeat;
  double min_repeat_ms;
  uint64_t map_bytes;
  uint64_t off[G_MAX_BUFS], bytes[G_MAX_BUFS];
  uint8_t is_input[G_MAX_BUFS];
  ob_launch launch;
  char path[4096];
  char symbol[256];
} g_req;

typedef struct g_rep {
  uint32_t kind;
  int32_t error_no; /* RAN: 0 or the error class */
  int32_t number, ncosts;
  double costs[G_MAX_COSTS];
  char msg[480];
} g_rep;

/* ---- the worker ------------------------------------------------------------------- */
typedef struct gworker {
  int sock;
  ob_ctx *ctx;
  ob_gpu *gpu;
  ob_status open_st;
  char open_msg[480];
  void *dev[G_MAX_BUFS];
  size_t dev_bytes[G_MAX_BUFS];
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

static void g_reply(gworker *w, uint32_t kind, int error_no, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
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
  g_reply(w, G_RAN, error_no, "%s: %s", what, ob_gpu_errmsg(w->gpu)[0] ? ob_gpu_errmsg(w->gpu) : ob_ctx_errmsg(w->ctx));
  _exit(0);
}

static int class_of(ob_status st) {
  switch (st) {
  case OB_ERR_COMPILE: return OB_MERR_COMPILE_HOST;
  case OB_ERR_LAUNCH: return OB_MERR_INSTANTIATION;
  default: return OB_MERR_RUNTIME;
  }
}

/* AutoTVM's timing loop on the device's clock; 0 or the error class. */
static int g_time(gworker *w, const g_req *q, void *const *dev, g_rep *rep) {
  int number = q->number;
  double min_s = q->min_repeat_ms * 1e-3;
  for (int g = 0; g < q->repeat; g++) {
    for (;;) {
      double t0 = ob_gpu_clock(w->gpu);
      for (int k = 0; k < number; k++)
        if (ob_gpu_launch(w->k, dev, q->nbufs)) return OB_MERR_RUNTIME;
      double t1 = ob_gpu_clock(w->gpu);
      if (ob_gpu_error(w->gpu)) return OB_MERR_RUNTIME;
      double s = t1 - t0;
      if (s >= min_s || number >= G_NUMBER_MAX) {
        rep->costs[g] = s / number;
        break;
      }
      double grown = ceil(number * 1.618);
      number = grown > G_NUMBER_MAX ? G_NUMBER_MAX : (int)grown;
    }
  }
  rep->number = number;
  rep->ncosts = q->repeat;
  return 0;
}

static void g_serve(gworker *w, const g_req *q, int fd) {
  if (w->open_st) {
    g_reply(w, G_ERR, 0, "%s", w->open_msg);
    return;
  }
  void *map = mmap(NULL, q->map_bytes ? q->map_bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    g_reply(w, G_ERR, 0, "GPU worker cannot map buffers: %s", strerror(errno));
    return;
  }
  void *dev[G_MAX_BUFS];
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
    dev[i] = w->dev[i];
  }
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
    if (ob_gpu_upload(w->gpu, dev[i], (char *)map + q->off[i], q->bytes[i]) != OB_OK)
      g_lost(w, OB_MERR_RUNTIME, "copying the inputs to the device");
  /* the checked run, also the discarded warm-up */
  if (ob_gpu_launch(w->k, dev, nb) || ob_gpu_sync(w->gpu) != OB_OK) g_lost(w, OB_MERR_RUNTIME, "running the kernel");
  for (int i = 0; i < nb; i++)
    if (!q->is_input[i] && ob_gpu_download(w->gpu, (char *)map + q->off[i], dev[i], q->bytes[i]) != OB_OK)
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
  int e = g_time(w, q, dev, &rep);
  if (e) g_lost(w, e, "timing the kernel");
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
  w.open_st = ob_gpu_open(w.ctx, t, &w.gpu);
  if (w.open_st) snprintf(w.open_msg, sizeof w.open_msg, "%s", ob_ctx_errmsg(w.ctx));
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
        q->repeat < 1 || q->repeat > G_MAX_COSTS || q->number < 1)
      g_reply(&w, G_ERR, 0, "malformed request");
    else
      g_serve(&w, q, fd);
    if (fd >= 0) close(fd);
  }
}

/* ---- the parent side --------------------------------------------------------------- */
struct ob_gpu_runner {
  ob_ctx *ctx;
  ob_target *target; /* its own copy, parsed again from the canonical string */
  pid_t pid;
  int sock, memfd;
  unsigned char *map;
  size_t map_cap;
};

static pid_t g_waitpid(pid_t pid, int *status, int flags) {
  pid_t w;
  do {
    w = waitpid(pid, status, flags);
  } while (w < 0 && errno == EINTR);
  return w;
}

static ob_status g_start(ob_gpu_runner *r) {
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

static void g_stop(ob_gpu_runner *r, int *status) {
  if (r->pid > 0) {
    kill(r->pid, SIGKILL);
    g_waitpid(r->pid, status, 0);
  }
  if (r->sock >= 0) close(r->sock);
  r->pid = -1;
  r->sock = -1;
}

/* The worker is gone (or exiting): reap it and say why. */
static void g_died(ob_gpu_runner *r, ob_run_result *res) {
  int status = 0;
  pid_t w = 0;
  double until = ob_now_s() + 2.0;
  while (r->pid > 0 && (w = g_waitpid(r->pid, &status, WNOHANG)) == 0 && ob_now_s() < until) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (w == r->pid) r->pid = -1;
  else g_stop(r, &status);
  if (r->sock >= 0) close(r->sock);
  r->sock = -1;
  r->pid = -1;
  res->error_no = OB_MERR_RUNTIME;
  char sb[32];
  if (WIFSIGNALED(status))
    snprintf(res->message, sizeof res->message, "kernel crashed the GPU worker: %s",
             ob_measure_signame(WTERMSIG(status), sb));
  else
    snprintf(res->message, sizeof res->message, "GPU worker lost");
}

ob_status ob_gpu_runner_new(ob_ctx *ctx, const ob_target *t, ob_gpu_runner **out) {
  OB_ASSERT(ctx && t && out);
  *out = NULL;
  ob_status st = ob_target_check_runnable(ctx, t);
  if (st) return st;
  ob_gpu_runner *r = calloc(1, sizeof *r);
  if (!r) return ob_fail(ctx, OB_ERR_NOMEM, "GPU runner: out of memory");
  r->ctx = ctx;
  r->pid = r->sock = r->memfd = -1;
  st = ob_target_parse(ctx, ob_target_str(t), &r->target);
  if (!st) st = g_start(r);
  if (st) {
    ob_gpu_runner_free(r);
    return st;
  }
  *out = r;
  return OB_OK;
}

void ob_gpu_runner_free(ob_gpu_runner *r) {
  if (!r) return;
  int status;
  g_stop(r, &status);
  if (r->map) munmap(r->map, r->map_cap);
  if (r->memfd >= 0) close(r->memfd);
  ob_target_free(r->target);
  free(r);
}

const ob_target *ob_gpu_runner_target(const ob_gpu_runner *r) { return r->target; }

static ob_status g_map(ob_gpu_runner *r, size_t bytes) {
  if (r->map && r->map_cap >= bytes) return OB_OK;
  if (r->map) munmap(r->map, r->map_cap);
  if (r->memfd >= 0) close(r->memfd);
  r->map = NULL;
  r->map_cap = 0;
  r->memfd = memfd_create("opbench-gpu-bufs", MFD_CLOEXEC);
  if (r->memfd < 0) return ob_fail(r->ctx, OB_ERR_SYSTEM, "GPU runner: memfd_create: %s", strerror(errno));
  long pg = sysconf(_SC_PAGESIZE);
  size_t cap = (bytes + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
  if (ftruncate(r->memfd, (off_t)cap) != 0)
    return ob_fail(r->ctx, OB_ERR_SYSTEM, "GPU runner: cannot size buffers to %zu bytes: %s", cap, strerror(errno));
  void *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, r->memfd, 0);
  if (m == MAP_FAILED) return ob_fail(r->ctx, OB_ERR_SYSTEM, "GPU runner: mmap: %s", strerror(errno));
  r->map = m;
  r->map_cap = cap;
  return OB_OK;
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

static int g_wait(ob_gpu_runner *r, double deadline, g_rep *rep) {
  for (;;) {
    double left = deadline - ob_now_s();
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

static void g_failed(ob_gpu_runner *r, int how, double timeout, ob_run_result *res) {
  if (how == GW_TIMEOUT) {
    int status;
    g_stop(r, &status);
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s", timeout);
  } else {
    g_died(r, res);
  }
}

ob_status ob_gpu_runner_run(ob_gpu_runner *r, const ob_gpu_run_request *req, ob_run_result *res) {
  OB_ASSERT(r && req && res && req->path && req->symbol && req->fill);
  memset(res, 0, sizeof *res);
  const double t0 = ob_now_s();
  ob_status st = OB_OK;
  if (req->nbufs < 0 || req->nbufs > G_MAX_BUFS)
    return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "GPU runner: %d buffers (at most %d)", req->nbufs, G_MAX_BUFS);
  if (strlen(req->path) >= sizeof ((g_req *)0)->path || strlen(req->symbol) >= sizeof ((g_req *)0)->symbol)
    return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "GPU runner: kernel path or name too long");
  ob_timing_opts t = req->timing;
  if (t.number < 1) t.number = 1;
  if (t.repeat < 1) t.repeat = 10;
  if (t.repeat > G_MAX_COSTS) t.repeat = G_MAX_COSTS;
  if (t.min_repeat_ms < 0) t.min_repeat_ms = 0;
  double timeout = t.timeout_s > 0 ? t.timeout_s : 10.0;
  const double deadline = t0 + timeout;
  g_req *q = calloc(1, sizeof *q);
  void *bufs[G_MAX_BUFS];
  if (!q) return ob_fail(r->ctx, OB_ERR_NOMEM, "GPU runner: out of memory");
  q->kind = G_RUN;
  q->nbufs = req->nbufs;
  q->number = t.number;
  q->repeat = t.repeat;
  q->min_repeat_ms = t.min_repeat_ms;
  q->launch = req->launch;
  snprintf(q->path, sizeof q->path, "%s", req->path);
  snprintf(q->symbol, sizeof q->symbol, "%s", req->symbol);
  size_t total = 0;
  for (int i = 0; i < req->nbufs; i++) {
    size_t b = req->buf_bytes[i] ? req->buf_bytes[i] : 1;
    if (b > (size_t)OB_MAX_BUFFER_BYTES) {
      st = ob_fail(r->ctx, OB_ERR_INVALID_ARG, "GPU runner: buffer %d of %s has %zu bytes, more than the limit", i,
                   req->symbol, b);
      goto out;
    }
    q->off[i] = total;
    q->bytes[i] = req->buf_bytes[i];
    q->is_input[i] = req->buf_is_input ? req->buf_is_input[i] : 1;
    total += (b + G_ALIGN - 1) / G_ALIGN * G_ALIGN;
  }
  if (!total) total = G_ALIGN;
  q->map_bytes = total;
  if ((st = ob_runner_check_memory(r->ctx, req->symbol, total)) != OB_OK) goto out;
  if ((st = g_map(r, total)) != OB_OK) goto out;
  for (int i = 0; i < req->nbufs; i++) bufs[i] = r->map + q->off[i];
  req->fill(req->user, bufs);
  for (int attempt = 0;; attempt++) {
    if (r->pid < 0 && (st = g_start(r)) != OB_OK) goto out;
    if (g_send_fd(r->sock, q, sizeof *q, r->memfd) == 0) break;
    int e = errno, status;
    g_stop(r, &status);
    if (attempt == 1) {
      st = ob_fail(r->ctx, OB_ERR_SYSTEM, "GPU runner: cannot send to the worker: %s", strerror(e));
      goto out;
    }
  }
  g_rep rep;
  int how = g_wait(r, deadline, &rep);
  if (how != GW_OK) {
    g_failed(r, how, timeout, res);
    goto out;
  }
  if (rep.kind == G_ERR) { /* the worker cannot serve: no device session */
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
    ob_status cst = req->check(req->user, bufs, cmsg, sizeof cmsg);
    if (cst != OB_OK) {
      res->error_no = OB_MERR_WRONG_ANSWER;
      cmsg[sizeof cmsg - 1] = '\0';
      snprintf(res->message, sizeof res->message, "%s", cmsg[0] ? cmsg : ob_status_str(cst));
      uint32_t cmd = G_SKIP;
      if (send(r->sock, &cmd, sizeof cmd, MSG_NOSIGNAL) != (ssize_t)sizeof cmd) {
        int status;
        g_stop(r, &status);
      }
      goto out;
    }
  }
  uint32_t cmd = G_TIME;
  if (send(r->sock, &cmd, sizeof cmd, MSG_NOSIGNAL) != (ssize_t)sizeof cmd) {
    g_died(r, res);
    goto out;
  }
  how = g_wait(r, deadline, &rep);
  if (how != GW_OK) {
    g_failed(r, how, timeout, res);
    goto out;
  }
  if (rep.kind == G_RAN) {
    res->error_no = rep.error_no ? rep.error_no : OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "%s", rep.msg);
    goto out;
  }
  if (rep.kind != G_COSTS || rep.ncosts < 1 || rep.ncosts > G_MAX_COSTS) {
    g_died(r, res);
    goto out;
  }
  res->error_no = OB_MERR_NONE;
  res->ncosts = rep.ncosts;
  res->number = rep.number;
  memcpy(res->costs, rep.costs, (size_t)rep.ncosts * sizeof rep.costs[0]);
  ob_stats(res->costs, res->ncosts, &res->median_s, &res->mean_s, &res->cv);
out:
  res->run_s = ob_now_s() - t0;
  free(q);
  return st;
}
