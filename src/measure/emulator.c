/* emulator.c: the runner for targets whose kernels run under an emulator
 * (c -isa=neon -triple=aarch64-linux-gnu: qemu-aarch64 -L <sysroot>).
 *
 * A kernel built for such a target cannot be loaded here, so a harness
 * program built for the target loads it (dlopen inside the emulated
 * process) and times it with ob_time_loop compiled for the target
 * (harness/harness.c, whose source the library embeds). The harness is
 * cross-compiled by the builder with the target's compiler into the
 * kernel's cache folder, content-addressed like the kernels, so it is built
 * once per folder and sources; this runner remembers the last one it used.
 *
 * One emulated process per request, in its own process group: fd 3 is the
 * runner's buffer memfd (the emulator maps it for the guest, so the parent
 * fills inputs and checks outputs in place, as with the native worker),
 * fd 4 a stream socket for the line protocol harness.c describes, stdout
 * and stderr go to a memfd whose head explains an emulator that could not
 * start. A crash ends the process with the kernel's signal: error 4; past
 * the deadline the group is killed: error 7; a wrong answer is 5. Every
 * timing it returns is marked emulated: it says the kernel ran, not how
 * fast it runs on the target. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opbench/kernel.h"
#include "opbench/measure.h"
#include "opbench/target.h"
#include "kernel/kernel_impl.h"
#include "measure/measure_impl.h"

#define EMU_HARNESS_NAME "opbench_harness"
/* No -shared: a program. The harness uses libm's sqrt; --no-as-needed keeps
 * -lm wherever the builder puts the source after the flags. */
#define EMU_HARNESS_FLAGS "-std=gnu17 -O2 -D_GNU_SOURCE -pthread -Wl,--no-as-needed -lm"
#define EMU_BUILD_TIMEOUT_S 120.0 /* a cross compile of ~1000 lines, on a loaded machine */
#define EMU_MAX_ARGS 8            /* words of the emulator command */
#define EMU_LINE_MAX 8192
#define EMU_REAP_S 2.0            /* a harness that has replied ends by itself within this */

typedef struct emu {
  ob_ctx *ctx;
  /* the harness last built: for this target string and cache folder */
  char *harness_target, *harness_dir, *harness_path;
} emu;

ob_status ob_runner_emulator_new(ob_ctx *ctx, void **self) {
  *self = NULL;
  emu *e = calloc(1, sizeof *e);
  if (!e) return ob_fail(ctx, OB_ERR_NOMEM, "emulator runner: out of memory");
  e->ctx = ctx;
  *self = e;
  return OB_OK;
}

static void emu_free(void *self) {
  emu *e = self;
  if (!e) return;
  free(e->harness_target);
  free(e->harness_dir);
  free(e->harness_path);
  free(e);
}

/* The harness for target t in cache folder dir: remembered, or built now
 * (which finds it in the cache when another process built it). Kernel-like
 * failures (the compiler rejects it) are the runner's own: OB_ERR_COMPILE
 * with the compiler's message. */
static ob_status harness_for(emu *e, const ob_target *t, const char *dir, const char **path) {
  const char *ts = ob_target_str(t);
  if (e->harness_path && !strcmp(e->harness_target, ts) && !strcmp(e->harness_dir, dir)) {
    struct stat sb;
    if (stat(e->harness_path, &sb) == 0 && S_ISREG(sb.st_mode)) {
      *path = e->harness_path;
      return OB_OK;
    }
  }
  ob_build_opts bo = {.target = t, .flags = EMU_HARNESS_FLAGS, .cache_dir = dir,
                      .timeout_s = EMU_BUILD_TIMEOUT_S, .jobs = 1};
  ob_build_input in = {.source = ob_harness_source, .name = EMU_HARNESS_NAME, .program = true};
  ob_build_result br;
  ob_status st = ob_build_batch(e->ctx, &bo, &in, 1, &br);
  if (st) {
    ob_build_result_clear(&br);
    ob_fail_prefix(e->ctx, "target '%s': building the emulator harness", ts);
    return st;
  }
  if (br.error_no != OB_MERR_NONE) {
    st = ob_fail(e->ctx, OB_ERR_COMPILE, "target '%s': the emulator harness does not build (%s): %.600s",
                 ts, ob_merr_str(br.error_no), br.message ? br.message : "");
    ob_build_result_clear(&br);
    return st;
  }
  free(e->harness_target);
  free(e->harness_dir);
  free(e->harness_path);
  e->harness_target = strdup(ts);
  e->harness_dir = strdup(dir);
  e->harness_path = br.so_path;
  br.so_path = NULL;
  bool cached = br.cached;
  ob_build_result_clear(&br);
  if (!e->harness_target || !e->harness_dir || !e->harness_path) {
    free(e->harness_path);
    e->harness_path = NULL;
    return ob_fail(e->ctx, OB_ERR_NOMEM, "emulator runner: out of memory");
  }
  ob_log(e->ctx, OB_LOG_DEBUG, "emulator harness for %s: %s%s", ts, e->harness_path,
         cached ? " (cached)" : "");
  *path = e->harness_path;
  return OB_OK;
}

/* The absolute path of a command's program ($PATH search), malloc'd; NULL
 * when not found. Done before fork: the child only execs. */
static char *find_program(const char *name) {
  if (strchr(name, '/')) return access(name, X_OK) == 0 ? strdup(name) : NULL;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  for (const char *p = path;;) {
    size_t len = strcspn(p, ":");
    char full[4096];
    int w = snprintf(full, sizeof full, "%.*s/%s", (int)len, len ? p : ".", name);
    struct stat sb;
    if (w > 0 && (size_t)w < sizeof full && stat(full, &sb) == 0 && S_ISREG(sb.st_mode) &&
        access(full, X_OK) == 0)
      return strdup(full);
    if (!p[len]) return NULL;
    p += len + 1;
  }
}

/* ---- one emulated process ------------------------------------------------------ */

typedef struct proc {
  pid_t pid;  /* also its process group */
  int sock;   /* our end of the stream socket */
  int outfd;  /* its stdout + stderr (a memfd) */
  char buf[EMU_LINE_MAX];
  size_t len; /* bytes in buf not yet returned as a line */
} proc;

static pid_t waitpid_eintr(pid_t pid, int *status, int flags) {
  pid_t w;
  do {
    w = waitpid(pid, status, flags);
  } while (w < 0 && errno == EINTR);
  return w;
}

/* In the child between fork and exec: async-signal-safe calls only. Puts
 * `fd` on `target` whatever the numbers are (all sources are first moved
 * above the targets). */
static _Noreturn void child_exec(const char *prog, char **argv, int bufs_fd, int sock_fd, int out_fd,
                                 pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  int b = fcntl(bufs_fd, F_DUPFD, 10), s = fcntl(sock_fd, F_DUPFD, 10), o = fcntl(out_fd, F_DUPFD, 10);
  int nul = open("/dev/null", O_RDONLY);
  if (b < 0 || s < 0 || o < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0 ||
      dup2(b, 3) < 0 || dup2(s, 4) < 0)
    _exit(127);
  close_range(5, ~0U, 0);
  /* crashes are results: default actions, no core files */
  static const int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGPIPE};
  for (size_t i = 0; i < sizeof crash / sizeof crash[0]; i++) signal(crash[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  struct rlimit nocore = {0, 0};
  setrlimit(RLIMIT_CORE, &nocore);
  execv(prog, argv);
  _exit(127);
}

static ob_status proc_start(emu *e, const char *prog, char **argv, int bufs_fd, proc *p) {
  memset(p, 0, sizeof *p);
  p->pid = -1;
  p->sock = p->outfd = -1;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return ob_fail(e->ctx, OB_ERR_SYSTEM, "emulator runner: socketpair: %s", strerror(errno));
  p->outfd = memfd_create("opbench-emulator-out", MFD_CLOEXEC);
  if (p->outfd < 0) {
    int err = errno;
    close(sv[0]);
    close(sv[1]);
    return ob_fail(e->ctx, OB_ERR_SYSTEM, "emulator runner: memfd_create: %s", strerror(err));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(sv[0]);
    close(sv[1]);
    close(p->outfd);
    p->outfd = -1;
    return ob_fail(e->ctx, OB_ERR_SYSTEM, "emulator runner: fork: %s", strerror(err));
  }
  if (pid == 0) child_exec(prog, argv, bufs_fd, sv[1], p->outfd, parent);
  setpgid(pid, pid); /* as the child does: whoever runs first */
  close(sv[1]);
  p->pid = pid;
  p->sock = sv[0];
  return OB_OK;
}

/* Kills the process group and reaps the process; its wait status in
 * *status when it was reaped. */
static bool proc_kill(proc *p, int *status) {
  bool reaped = false;
  if (p->pid > 0) {
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
    reaped = waitpid_eintr(p->pid, status, 0) == p->pid;
    p->pid = -1;
  }
  return reaped;
}

/* Reaps a process that should be ending (it replied, or closed its socket);
 * kills it after EMU_REAP_S. */
static bool proc_reap(proc *p, int *status) {
  double until = ob_now_s() + EMU_REAP_S;
  while (p->pid > 0) {
    pid_t w = waitpid_eintr(p->pid, status, WNOHANG);
    if (w == p->pid) {
      p->pid = -1;
      kill(-w, SIGKILL); /* anything it left in its group */
      return true;
    }
    if (w < 0 || ob_now_s() > until) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return proc_kill(p, status);
}

static void proc_close(proc *p) {
  int status;
  if (p->pid > 0) proc_kill(p, &status);
  if (p->sock >= 0) close(p->sock);
  if (p->outfd >= 0) close(p->outfd);
  p->sock = p->outfd = -1;
}

/* The first line of what the process printed (the emulator's own error,
 * e.g. a missing loader), into out. */
static void proc_output(const proc *p, char *out, size_t cap) {
  out[0] = '\0';
  if (p->outfd < 0 || cap < 2) return;
  char buf[512];
  ssize_t n = pread(p->outfd, buf, sizeof buf - 1, 0);
  if (n <= 0) return;
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  snprintf(out, cap, "%.*s", (int)(cap - 1), buf);
}

enum { LINE_OK, LINE_TIMEOUT, LINE_EOF };

/* The next line from the process, without its newline, into line[cap]
 * (cut to fit). */
static int proc_line(proc *p, double deadline, char *line, size_t cap) {
  for (;;) {
    char *nl = memchr(p->buf, '\n', p->len);
    if (nl) {
      size_t n = (size_t)(nl - p->buf), c = n < cap - 1 ? n : cap - 1;
      memcpy(line, p->buf, c);
      line[c] = '\0';
      p->len -= n + 1;
      memmove(p->buf, nl + 1, p->len);
      return LINE_OK;
    }
    if (p->len >= sizeof p->buf) return LINE_EOF; /* an endless line: not the harness */
    double left = deadline - ob_now_s();
    if (left <= 0) return LINE_TIMEOUT;
    struct pollfd pfd = {.fd = p->sock, .events = POLLIN};
    int ms = (int)ceil(left * 1000);
    int rc = poll(&pfd, 1, ms < 1 ? 1 : ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return LINE_EOF;
    if (rc == 0) continue;
    ssize_t k = recv(p->sock, p->buf + p->len, sizeof p->buf - p->len, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return LINE_EOF;
    p->len += (size_t)k;
  }
}

static int proc_send(proc *p, const char *line) {
  size_t n = strlen(line), done = 0;
  while (done < n) {
    ssize_t k = send(p->sock, line + done, n - done, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    done += (size_t)k;
  }
  return 0;
}

/* The process ended, or stopped talking, before it replied: reaps it and
 * says why (error 4). */
static void proc_lost(proc *p, const char *emulator, ob_run_result *res) {
  int status = 0;
  bool reaped = proc_reap(p, &status);
  char out[256], sb[32];
  proc_output(p, out, sizeof out);
  res->error_no = OB_MERR_RUNTIME;
  if (reaped && WIFSIGNALED(status))
    snprintf(res->message, sizeof res->message, "kernel crashed under the emulator: %s",
             ob_kernel_signame(WTERMSIG(status), sb));
  else if (reaped && WIFEXITED(status) && WEXITSTATUS(status) == 127)
    snprintf(res->message, sizeof res->message, "the emulator '%s' could not be started%s%.300s",
             emulator, out[0] ? ": " : "", out);
  else if (reaped && WIFEXITED(status))
    snprintf(res->message, sizeof res->message,
             "the emulated harness exited with status %d before replying%s%.300s",
             WEXITSTATUS(status), out[0] ? ": " : "", out);
  else
    snprintf(res->message, sizeof res->message, "the emulated harness was lost");
}

/* "costs RC NUMBER REPEAT EXTRA MIN_REPEAT_MS FLUSH OVERHEAD N C1..CN" */
static bool parse_costs(const char *line, int *rc, ob_timing *t) {
  memset(t, 0, sizeof *t);
  int flush = 0, n = 0, used = 0;
  if (sscanf(line, "costs %d %d %d %d %la %d %la %d%n", rc, &t->number, &t->repeat,
             &t->extra_repeats, &t->min_repeat_ms, &flush, &t->timer_overhead_s, &n, &used) != 8)
    return false;
  if (n < 0 || n > OB_TIMING_MAX_COSTS || (*rc == 0 && n < 1)) return false;
  const char *q = line + used;
  for (int i = 0; i < n; i++) {
    char *end;
    t->costs[i] = strtod(q, &end);
    if (end == q || !isfinite(t->costs[i]) || t->costs[i] < 0) return false;
    q = end;
  }
  while (*q == ' ') q++;
  if (*q) return false;
  t->ncosts = n;
  t->flush = flush != 0;
  return t->number >= 0 && t->repeat >= 0 && t->extra_repeats >= 0;
}

/* ---- the implementation ---------------------------------------------------------- */

static ob_status emu_run(void *self, const ob_run_request *req, const ob_timing_opts *t,
                         double deadline, double kill_at, const ob_run_bufs *b,
                         ob_run_result *res) {
  emu *e = self;
  ob_status st = OB_OK;
  const ob_target_facts *f = ob_target_get_facts(req->target);
  int nthreads = req->nthreads > 0 ? req->nthreads : 1;
  char *abs = realpath(req->so_path, NULL), *dirbuf = NULL, *prog = NULL, *emucmd = NULL;
  char **argv = NULL;
  int argc = 0, spec0 = 0; /* argv[spec0..argc): the buffer specs, malloc'd */
  proc p = {.pid = -1, .sock = -1, .outfd = -1};
  char line[EMU_LINE_MAX];
  if (!abs) { /* the kernel's file is gone: a load failure, as dlopen's */
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "cannot load %s: %s", req->so_path, strerror(errno));
    goto out;
  }
  if (!(dirbuf = strdup(abs)) || !(emucmd = strdup(f->emulator))) {
    st = ob_fail(e->ctx, OB_ERR_NOMEM, "emulator runner: out of memory");
    goto out;
  }
  /* Building the harness (once per folder) is not the kernel's time: the
   * deadline moves by what it took. */
  const char *harness = NULL;
  double t_build = ob_now_s();
  if ((st = harness_for(e, req->target, dirname(dirbuf), &harness))) goto out;
  t_build = ob_now_s() - t_build;
  deadline += t_build;
  kill_at += t_build;

  /* argv: the emulator's words, the harness and its arguments */
  if (!(argv = calloc(EMU_MAX_ARGS + 16 + (size_t)b->nbufs, sizeof *argv))) {
    st = ob_fail(e->ctx, OB_ERR_NOMEM, "emulator runner: out of memory");
    goto out;
  }
  char *save = NULL;
  for (char *w = strtok_r(emucmd, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (argc == EMU_MAX_ARGS) {
      st = ob_fail(e->ctx, OB_ERR_INVALID_ARG, "target '%s': emulator command '%s' has more than %d words",
                   ob_target_str(req->target), f->emulator, EMU_MAX_ARGS);
      goto out;
    }
    argv[argc++] = w;
  }
  if (!argc || !(prog = find_program(argv[0]))) {
    st = ob_fail(e->ctx, OB_ERR_UNSUPPORTED, "target '%s': the emulator '%s' is not installed",
                 ob_target_str(req->target), argc ? argv[0] : "");
    goto out;
  }
  char num[11][48];
  snprintf(num[0], sizeof num[0], "%zu", b->map_bytes);
  snprintf(num[1], sizeof num[1], "%d", nthreads);
  snprintf(num[2], sizeof num[2], "%a", deadline);
  snprintf(num[3], sizeof num[3], "%d", t->number);
  snprintf(num[4], sizeof num[4], "%d", t->repeat);
  snprintf(num[5], sizeof num[5], "%a", t->min_repeat_ms);
  snprintf(num[6], sizeof num[6], "%d", t->flush ? 1 : 0);
  snprintf(num[7], sizeof num[7], "%a", t->max_cv);
  snprintf(num[8], sizeof num[8], "%a", t->stability_budget_s);
  snprintf(num[9], sizeof num[9], "%a", t->timeout_s);
  snprintf(num[10], sizeof num[10], "%d", b->nbufs);
  argv[argc++] = (char *)harness;
  argv[argc++] = abs;
  argv[argc++] = (char *)req->symbol;
  for (int i = 0; i < 11; i++) argv[argc++] = num[i];
  spec0 = argc;
  for (int i = 0; i < b->nbufs; i++) {
    char spec[80];
    snprintf(spec, sizeof spec, "%llu:%llu:%d", (unsigned long long)b->off[i],
             (unsigned long long)b->bytes[i], req->buf_is_input ? req->buf_is_input[i] : 1);
    if (!(argv[argc++] = strdup(spec))) {
      st = ob_fail(e->ctx, OB_ERR_NOMEM, "emulator runner: out of memory");
      goto out;
    }
  }
  argv[argc] = NULL;

  req->fill(req->user, b->ptr);
  if ((st = proc_start(e, prog, argv, b->memfd, &p))) goto out;

  int how = proc_line(&p, kill_at, line, sizeof line);
  if (how == LINE_TIMEOUT) goto timeout;
  if (how != LINE_OK) {
    proc_lost(&p, argv[0], res);
    goto out;
  }
  int code = 0;
  if (!strncmp(line, "err ", 4)) {
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "%.*s", (int)sizeof res->message - 1, line + 4);
    goto out;
  }
  if (sscanf(line, "ran %d", &code) != 1) {
    proc_lost(&p, argv[0], res);
    goto out;
  }
  if (code != 0) {
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "kernel returned %d", code);
    goto out;
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
      (void)proc_send(&p, "skip\n");
      goto out;
    }
  }
  if (proc_send(&p, "time\n") != 0) {
    proc_lost(&p, argv[0], res);
    goto out;
  }
  how = proc_line(&p, kill_at, line, sizeof line);
  if (how == LINE_TIMEOUT) goto timeout;
  int rc = 0;
  ob_timing tm;
  if (how != LINE_OK || !parse_costs(line, &rc, &tm)) {
    proc_lost(&p, argv[0], res);
    goto out;
  }
  if (rc == OB_TIME_DEADLINE) {
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s (while timing, under the emulator)",
             t->timeout_s);
    goto out;
  }
  if (rc != 0) {
    res->error_no = OB_MERR_RUNTIME;
    snprintf(res->message, sizeof res->message, "kernel returned %d", rc);
    goto out;
  }
  ob_timing_finish(&tm, t->max_cv); /* the statistics, as the harness's loop made them */
  tm.emulated = true;
  res->error_no = OB_MERR_NONE;
  res->timing = tm;
  goto out;

timeout:
  {
    int status;
    proc_kill(&p, &status);
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "run timed out after %g s (under the emulator)",
             t->timeout_s);
  }
out:
  if (p.pid > 0) {
    int status;
    proc_reap(&p, &status);
  }
  proc_close(&p);
  for (int i = spec0; argv && spec0 > 0 && i < argc; i++) free(argv[i]);
  free(argv);
  free(prog);
  free(emucmd);
  free(dirbuf);
  free(abs);
  return st;
}

const struct ob_runner_i ob_runner_emulator_i = {"emulator", emu_run, emu_free};
