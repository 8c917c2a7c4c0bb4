/* builder.c: ob_build_batch drives the system compiler, up to `jobs` at once.
 * Each compiler runs in its own process group so a timeout kills the whole
 * driver tree (cc1, as, ld), with stdout+stderr captured in a memfd. Results
 * are cached by content (source, compiler, its version, flags):
 * <name>__<hash>.so (a program: <name>__<hash>) appears only through an
 * atomic rename() after a successful compile, so a killed build never leaves
 * a broken cached object. A compile holds <name>__<hash>.lock (flock) while
 * it runs: another process that wants the same object waits for it instead
 * of compiling it too (two test binaries or two tuners on one cache did,
 * for 15 % of a clean suite's compile time). Locks are only taken without
 * blocking, so two batches that share objects never wait on each other.
 * The caller owns the strings in each ob_build_result (ob_build_result_clear). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opbench/kernel.h"
#include "opbench/target.h"
#include "kernel/kernel_impl.h"

extern char **environ;

#define OB_BUILD_TIMEOUT_S 10.0
#define OB_BUILD_PROBE_TIMEOUT_S 10.0 /* `cc --version` */
#define OB_BUILD_MSG_MAX 8192         /* compiler output kept per variant */
#define OB_BUILD_NAME_MAX 96          /* sanitized name length in file names */
#define OB_BUILD_POLL_NS 2000000L     /* 2 ms between waitpid polls */
/* a variant another process is compiling is waited for at most this many of
 * its timeouts; past that (the holder stopped, or slower) it is built here */
#define OB_BUILD_WAIT_TIMEOUTS 3.0

static void sleep_poll(void) {
  struct timespec ts = {0, OB_BUILD_POLL_NS};
  nanosleep(&ts, NULL);
}

static bool is_exec_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* Finds `cc` the way execvp would. Returns a malloc'd path, or NULL. */
static char *resolve_cc(const char *cc) {
  if (!cc[0]) return NULL;
  if (strchr(cc, '/')) return is_exec_file(cc) ? strdup(cc) : NULL;
  const char *path = getenv("PATH");
  if (!path || !path[0]) path = "/bin:/usr/bin";
  size_t cclen = strlen(cc);
  for (const char *p = path;;) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char *cand = malloc(len + cclen + 3);
    if (!cand) return NULL;
    if (len == 0) {
      snprintf(cand, len + cclen + 3, "./%s", cc); /* empty entry: cwd */
    } else {
      memcpy(cand, p, len);
      cand[len] = '/';
      memcpy(cand + len + 1, cc, cclen + 1);
    }
    if (is_exec_file(cand)) return cand;
    free(cand);
    if (!end) break;
    p = end + 1;
  }
  return NULL;
}

/* Moves fd above stdio so dup2 onto 1/2 in the child always clears CLOEXEC. */
static int capture_fd(void) {
  int fd = memfd_create("opbench-cc-out", MFD_CLOEXEC);
  if (fd >= 0 && fd <= 2) {
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    fd = hi;
  }
  return fd;
}

/* Starts argv in its own process group, stdin from /dev/null, stdout and
 * stderr into outfd. Returns 0 or an errno value. */
static int spawn_cc(const char *path, char *const *argv, int outfd, pid_t *pid) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, dfl;
  int rc = posix_spawn_file_actions_init(&fa);
  if (rc) return rc;
  rc = posix_spawnattr_init(&at);
  if (rc) {
    posix_spawn_file_actions_destroy(&fa);
    return rc;
  }
  sigemptyset(&none);
  sigemptyset(&dfl);
  /* The caller may ignore these; the compiler should not inherit that. */
  sigaddset(&dfl, SIGPIPE);
  sigaddset(&dfl, SIGCHLD);
  sigaddset(&dfl, SIGINT);
  sigaddset(&dfl, SIGTERM);
  sigaddset(&dfl, SIGHUP);
  if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, outfd, 1);
  if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, outfd, 2);
  if (!rc)
    rc = posix_spawnattr_setflags(
        &at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (!rc) rc = posix_spawnattr_setpgroup(&at, 0);
  if (!rc) rc = posix_spawnattr_setsigmask(&at, &none);
  if (!rc) rc = posix_spawnattr_setsigdefault(&at, &dfl);
  if (!rc) rc = posix_spawn(pid, path, &fa, &at, argv, environ);
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  return rc;
}

static pid_t waitpid_eintr(pid_t pid, int *status, int flags) {
  pid_t w;
  do {
    w = waitpid(pid, status, flags);
  } while (w < 0 && errno == EINTR);
  return w;
}

/* Kills the process group led by pid and reaps pid. */
static void kill_and_reap(pid_t pid, int *status) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL); /* in case it left its group */
  waitpid_eintr(pid, status, 0);
}

/* Reads what a compiler wrote into fd (at most `cap` bytes, then a marker).
 * Returns a malloc'd string, or NULL if it wrote nothing. */
static char *read_capture(int fd, size_t cap) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return NULL;
  size_t size = (size_t)st.st_size, n = size < cap ? size : cap;
  static const char more[] = "\n[... compiler output truncated]";
  char *buf = malloc(n + sizeof more);
  if (!buf) return NULL;
  size_t got = 0;
  while (got < n) {
    ssize_t k = pread(fd, buf + got, n - got, (off_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  buf[got] = '\0';
  if (size > cap) memcpy(buf + got, more, sizeof more);
  return buf;
}

/* First line of `cc --version` (empty if it prints nothing or hangs). */
static char *probe_version(const char *path, const char *arg0) {
  char *line = NULL;
  int fd = capture_fd();
  if (fd < 0) return strdup("");
  char *argv[] = {(char *)arg0, "--version", NULL};
  pid_t pid;
  if (spawn_cc(path, argv, fd, &pid) == 0) {
    int status = 0;
    double until = ob_now_s() + OB_BUILD_PROBE_TIMEOUT_S;
    pid_t w;
    while ((w = waitpid_eintr(pid, &status, WNOHANG)) == 0 && ob_now_s() < until)
      sleep_poll();
    if (w == 0) kill_and_reap(pid, &status);
    else if (w == pid) line = read_capture(fd, 1024);
  }
  close(fd);
  if (!line) return strdup("");
  line[strcspn(line, "\r\n")] = '\0';
  return line;
}

static char *dup_printf(const char *fmt, const char *a, const char *b) {
  int n = snprintf(NULL, 0, fmt, a, b);
  char *s = malloc((size_t)n + 1);
  if (s) snprintf(s, (size_t)n + 1, fmt, a, b);
  return s;
}

/* The cache directory as documented in ob_build_opts; malloc'd. */
static char *cache_dir_path(const ob_build_opts *o) {
  const char *e;
  if (o && o->cache_dir && o->cache_dir[0]) return strdup(o->cache_dir);
  if ((e = getenv("OPBENCH_CACHE")) && e[0]) return strdup(e);
  if ((e = getenv("XDG_CACHE_HOME")) && e[0]) return dup_printf("%s/%s", e, "opbench");
  if ((e = getenv("HOME")) && e[0]) return dup_printf("%s/%s", e, ".cache/opbench");
  char buf[64];
  snprintf(buf, sizeof buf, "/tmp/opbench-%u", (unsigned)getuid());
  return strdup(buf);
}

/* mkdir -p. Returns 0 or an errno value. */
static int mkdir_p(const char *dir) {
  char *p = strdup(dir);
  if (!p) return ENOMEM;
  int err = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST) {
        err = errno;
        break;
      }
      *s = c;
      if (!c) break;
    }
  }
  struct stat st;
  if (!err && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) err = ENOTDIR;
  free(p);
  return err;
}

/* Writes `text` to `path` through a temporary file and rename(), so readers
 * never see a half-written file. Returns 0 or an errno value. */
static int write_atomic(const char *path, const char *tmp, const char *text) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  size_t len = strlen(text), done = 0;
  int err = 0;
  while (done < len) {
    ssize_t k = write(fd, text + done, len - done);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      err = errno;
      break;
    }
    done += (size_t)k;
  }
  if (close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) unlink(tmp);
  return err;
}

/* Per-variant bookkeeping. */
typedef struct bvar {
  char *base;   /* <dir>/<name>__<hash> */
  char *so;     /* base.so */
  char *c;      /* base.c */
  char *tmp_so; /* base.tmp<pid>_<i>.so: the compiler's output */
  char *lock;   /* base.lock: held while this process compiles it */
  pid_t pid;
  int outfd;
  int lockfd;   /* -1 when not held */
  bool waiting; /* another process holds its lock: its object is awaited */
  double t0;    /* compile start, or the start of the wait */
} bvar;

/* Takes v's lock without blocking: 1 taken, 0 another process holds it,
 * -1 no lock to be had (the compile goes ahead without one). */
static int lock_variant(bvar *v) {
  int fd = open(v->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    v->lockfd = fd;
    return 1;
  }
  int busy = errno == EWOULDBLOCK;
  close(fd);
  return busy ? 0 : -1;
}

/* Removes the lock file before letting go of it, so the cache keeps none. A
 * process that opened the old file meanwhile and then takes its lock finds
 * the object in place (cached_object after the lock) or, when the compile
 * failed, compiles it itself: never a wrong object, at worst a second
 * compile. */
static void unlock_variant(bvar *v) {
  if (v->lockfd < 0) return;
  unlink(v->lock);
  close(v->lockfd);
  v->lockfd = -1;
}

/* The object is in the cache: out says so. */
static bool cached_object(const bvar *v, ob_build_result *out) {
  struct stat sb;
  if (stat(v->so, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
  out->cached = true;
  out->so_path = strdup(v->so);
  return true;
}

static char *sanitize_name(const char *name) {
  if (!name || !name[0]) name = "kernel";
  size_t n = strlen(name);
  if (n > OB_BUILD_NAME_MAX) n = OB_BUILD_NAME_MAX;
  char *s = malloc(n + 1);
  if (!s) return NULL;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    s[i] = ok ? c : '_';
  }
  s[n] = '\0';
  return s;
}

static void set_msg(ob_build_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_msg(ob_build_result *r, const char *fmt, ...) {
  char buf[4400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(r->message);
  r->message = strdup(buf);
}

/* Starts compiling variant i; on failure fills out->error_no / message. */
static void start_compile(bvar *v, int i, const ob_build_input *in, const char *ccpath,
                          char **argv, int nflags, ob_build_result *out) {
  size_t tlen = strlen(v->base) + 48;
  char *tmp_c = malloc(tlen);
  int err = ENOMEM;
  if (tmp_c) {
    snprintf(tmp_c, tlen, "%s.tmp%ld_%d.c", v->base, (long)getpid(), i);
    err = write_atomic(v->c, tmp_c, in->source);
    free(tmp_c);
  }
  if (err) {
    out->error_no = OB_MERR_COMPILE_HOST;
    set_msg(out, "cannot write %s: %s", v->c, strerror(err));
    return;
  }
  v->outfd = capture_fd();
  if (v->outfd < 0) {
    out->error_no = OB_MERR_COMPILE_HOST;
    set_msg(out, "cannot capture compiler output: %s", strerror(errno));
    return;
  }
  argv[1 + nflags] = v->c;
  argv[2 + nflags] = "-o";
  argv[3 + nflags] = v->tmp_so;
  argv[4 + nflags] = NULL;
  v->t0 = ob_now_s();
  if ((err = spawn_cc(ccpath, argv, v->outfd, &v->pid)) != 0) {
    out->error_no = OB_MERR_COMPILE_HOST;
    set_msg(out, "cannot run compiler %s: %s", ccpath, strerror(err));
    close(v->outfd);
    v->outfd = -1;
    v->pid = 0;
  }
}

/* v's lock is ours (lk 1) or there is none to be had (lk -1): takes the
 * object if it landed meanwhile, else starts its compiler. True when a
 * compiler runs (and holds the lock until finish_compile). */
static bool claim(bvar *v, int lk, int i, const ob_build_input *in, const char *ccpath, char **argv, int nflags,
                  ob_build_result *out) {
  if (!(lk == 1 && cached_object(v, out))) {
    start_compile(v, i, in, ccpath, argv, nflags, out);
    if (v->pid > 0) return true;
  }
  unlock_variant(v);
  return false;
}

/* The compiler of variant v ended with `status` (or was killed for its
 * timeout): fills out and moves the object into the cache. */
static void finish_compile(bvar *v, int status, bool timed_out, double timeout,
                           const char *cc, ob_build_result *out) {
  out->build_s = ob_now_s() - v->t0;
  char *text = read_capture(v->outfd, OB_BUILD_MSG_MAX);
  close(v->outfd);
  v->outfd = -1;
  v->pid = 0;
  char head[256];
  head[0] = '\0';
  if (timed_out) {
    out->error_no = OB_MERR_BUILD_TIMEOUT;
    snprintf(head, sizeof head, "build timed out after %g s", timeout);
  } else if (WIFSIGNALED(status)) {
    char sb[32];
    out->error_no = OB_MERR_COMPILE_HOST;
    snprintf(head, sizeof head, "compiler '%s' killed by %s", cc,
             ob_kernel_signame(WTERMSIG(status), sb));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    out->error_no = OB_MERR_COMPILE_HOST;
    if (!text || !text[0])
      snprintf(head, sizeof head, "compiler '%s' exited with status %d", cc,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else if (rename(v->tmp_so, v->so) != 0) {
    out->error_no = OB_MERR_COMPILE_HOST;
    snprintf(head, sizeof head, "compiler '%s' produced no %s: %s", cc, v->tmp_so,
             strerror(errno));
  } else {
    out->error_no = OB_MERR_NONE;
    out->so_path = strdup(v->so);
  }
  if (out->error_no != OB_MERR_NONE) unlink(v->tmp_so);
  if (head[0] && text && text[0]) { /* both: "head\ncompiler output" */
    size_t hl = strlen(head), tl = strlen(text);
    char *m = malloc(hl + tl + 2);
    if (m) {
      memcpy(m, head, hl);
      m[hl] = '\n';
      memcpy(m + hl + 1, text, tl + 1);
    }
    free(text);
    text = m;
  } else if (head[0]) {
    free(text);
    text = strdup(head);
  }
  free(out->message);
  out->message = text; /* warnings are kept on success too */
}

/* The compiler and flags come from the target's facts (its table row: cc,
 * or $OPBENCH_CC for a native target, and the ISA's flags); opts->cc and
 * opts->flags override them; $OPBENCH_CFLAGS_APPEND goes after either (the
 * test suite sets -Og: its kernels are checked, not timed, and compile
 * faster; a clean clone's suite spent most of its time in the compiler).
 * A cross target whose own compiler or C library is missing fails here,
 * naming what is missing. */
static ob_status pick_compiler(ob_ctx *ctx, const ob_build_opts *opts, char *cc, size_t cc_cap,
                               char *flags, size_t flags_cap) {
  ob_target *own = NULL;
  const ob_target *t = opts ? opts->target : NULL;
  ob_status st = OB_OK;
  if (!t) {
    if ((st = ob_target_host(ctx, &own))) return st;
    t = own;
  }
  const ob_target_facts *f = ob_target_get_facts(t);
  bool own_cc = !(opts && opts->cc && opts->cc[0]);
  if (own_cc && f->triple[0]) st = ob_target_check_buildable(ctx, t);
  snprintf(cc, cc_cap, "%s", own_cc ? f->cc : opts->cc);
  const char *extra = opts && opts->exact_flags ? NULL : getenv("OPBENCH_CFLAGS_APPEND");
  bool more = extra && extra[strspn(extra, " \t")];
  int n = snprintf(flags, flags_cap, "%s%s%s", opts && opts->flags ? opts->flags : f->cflags, more ? " " : "",
                   more ? extra : "");
  if (n < 0 || (size_t)n >= flags_cap)
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "build: the compiler flags with $OPBENCH_CFLAGS_APPEND are longer than %zu "
                 "bytes", flags_cap - 1);
  ob_target_free(own);
  return st;
}

ob_status ob_build_compiler(ob_ctx *ctx, const ob_build_opts *opts, char *path,
                            size_t path_cap, char *version, size_t version_cap) {
  OB_ASSERT(ctx && path && version && path_cap && version_cap);
  char cc[256], flags[1024];
  ob_status st = pick_compiler(ctx, opts, cc, sizeof cc, flags, sizeof flags);
  if (st) return st;
  char *ccpath = resolve_cc(cc);
  if (!ccpath) return ob_fail(ctx, OB_ERR_COMPILE, "compiler '%s' not found (set --cc or OPBENCH_CC)", cc);
  char *v = probe_version(ccpath, cc);
  snprintf(path, path_cap, "%s", ccpath);
  snprintf(version, version_cap, "%s", v ? v : "");
  free(ccpath);
  free(v);
  return OB_OK;
}

ob_status ob_build_batch(ob_ctx *ctx, const ob_build_opts *opts, const ob_build_input *in,
                         int n, ob_build_result *out) {
  OB_ASSERT(ctx && n >= 0 && (n == 0 || (in && out)));
  ob_status st = OB_OK;
  char *ccpath = NULL, *version = NULL, *flagbuf = NULL, *dir = NULL;
  char **argv = NULL;
  bvar *vars = NULL;
  int nflags = 0;
  for (int i = 0; i < n; i++) memset(&out[i], 0, sizeof out[i]);
  if (n == 0) return OB_OK;

  char cc[256], flags[1024];
  if ((st = pick_compiler(ctx, opts, cc, sizeof cc, flags, sizeof flags))) return st;
  double timeout = opts && opts->timeout_s > 0 ? opts->timeout_s : OB_BUILD_TIMEOUT_S;
  int jobs = opts && opts->jobs > 0 ? opts->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1) jobs = 1;
  if (jobs > n) jobs = n;

  if (!(ccpath = resolve_cc(cc))) {
    st = ob_fail(ctx, OB_ERR_COMPILE, "compiler '%s' not found (set --cc or OPBENCH_CC)", cc);
    goto fail;
  }
  dir = cache_dir_path(opts);
  flagbuf = strdup(flags);
  argv = calloc(strlen(flags) / 2 + 6, sizeof *argv); /* flags + cc, src, -o, out, NULL */
  vars = calloc((size_t)n, sizeof *vars);
  for (int i = 0; vars && i < n; i++) vars[i].lockfd = -1;
  if (!dir || !flagbuf || !argv || !vars) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory in ob_build_batch");
    goto fail;
  }
  int err = mkdir_p(dir);
  if (err) {
    st = ob_fail(ctx, OB_ERR_IO, "cannot create cache directory %s: %s", dir, strerror(err));
    goto fail;
  }
  argv[0] = cc;
  char *save = NULL;
  for (char *t = strtok_r(flagbuf, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
    argv[1 + nflags++] = t;
  version = probe_version(ccpath, cc);
  if (!version) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory in ob_build_batch");
    goto fail;
  }
  ob_log(ctx, OB_LOG_DEBUG, "build: %d variant(s), cc %s (%s), flags '%s', cache %s, %d job(s)",
         n, ccpath, version, flags, dir, jobs);

  /* Cache key and file names. */
  for (int i = 0; i < n; i++) {
    OB_ASSERT(in[i].source);
    uint64_t h = ob_hash64(in[i].source, strlen(in[i].source), 0x6f7062656e6368ULL);
    h = ob_hash64(ccpath, strlen(ccpath), h);
    h = ob_hash64(version, strlen(version), h);
    h = ob_hash64(flags, strlen(flags), h);
    if (in[i].program) h = ob_hash64("program", 7, h); /* shared objects keep their keys */
    char hex[17];
    ob_hash_hex(h, hex);
    char *name = sanitize_name(in[i].name);
    bvar *v = &vars[i];
    v->outfd = -1;
    if (name) {
      size_t len = strlen(dir) + strlen(name) + 80;
      v->base = malloc(len);
      v->so = malloc(len);
      v->c = malloc(len);
      v->tmp_so = malloc(len);
      v->lock = malloc(len);
      if (v->base && v->so && v->c && v->tmp_so && v->lock) {
        snprintf(v->base, len, "%s/%s__%s", dir, name, hex);
        snprintf(v->so, len, "%s%s", v->base, in[i].program ? "" : ".so");
        snprintf(v->c, len, "%s.c", v->base);
        snprintf(v->tmp_so, len, "%s.tmp%ld_%d.so", v->base, (long)getpid(), i);
        snprintf(v->lock, len, "%s.lock", v->base);
      }
    }
    free(name);
    if (!v->tmp_so || !v->c || !v->so || !v->base || !v->lock) {
      st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory in ob_build_batch");
      goto fail;
    }
  }

  /* Launch up to `jobs` compilers and poll them (no SIGCHLD handler). A
   * variant whose lock another process holds waits (using no job) until its
   * object appears or the lock is free. */
  int next = 0, running = 0, waiting = 0;
  while (next < n || running > 0 || waiting > 0) {
    bool progress = false;
    for (int i = 0; i < next && running < jobs; i++) {
      bvar *v = &vars[i];
      if (!v->waiting) continue;
      if (cached_object(v, &out[i])) {
        v->waiting = false;
        waiting--;
        progress = true;
        continue;
      }
      int lk = lock_variant(v);
      if (lk == 0 && ob_now_s() - v->t0 < OB_BUILD_WAIT_TIMEOUTS * timeout) continue;
      v->waiting = false;
      waiting--;
      progress = true;
      running += claim(v, lk, i, &in[i], ccpath, argv, nflags, &out[i]);
    }
    while (running < jobs && next < n) {
      int i = next++;
      bvar *v = &vars[i];
      if (cached_object(v, &out[i])) continue;
      int lk = lock_variant(v);
      if (lk == 0) {
        v->waiting = true;
        v->t0 = ob_now_s();
        waiting++;
        continue;
      }
      running += claim(v, lk, i, &in[i], ccpath, argv, nflags, &out[i]);
    }
    for (int i = 0; i < next; i++) {
      bvar *v = &vars[i];
      if (v->pid <= 0) continue;
      int status = 0;
      pid_t w = waitpid_eintr(v->pid, &status, WNOHANG);
      if (w == v->pid || w < 0) {
        /* w < 0: reaped elsewhere (SIGCHLD ignored?); its output decides. */
        if (w < 0) status = 0;
        finish_compile(v, status, false, timeout, cc, &out[i]);
      } else if (ob_now_s() - v->t0 > timeout) {
        kill_and_reap(v->pid, &status);
        finish_compile(v, status, true, timeout, cc, &out[i]);
      } else {
        continue;
      }
      unlock_variant(v);
      running--;
      progress = true;
    }
    if (!progress && (running > 0 || waiting > 0)) sleep_poll();
  }
  /* a variant built (or cached) whose path could not be copied: out of
   * memory, not a result anyone could run */
  for (int i = 0; i < n; i++)
    if (out[i].error_no == OB_MERR_NONE && !out[i].so_path) {
      st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory in ob_build_batch");
      goto done;
    }
  goto done;

fail:
  for (int i = 0; i < n; i++) {
    out[i].error_no = OB_MERR_COMPILE_HOST;
    out[i].message = strdup(ob_ctx_errmsg(ctx));
  }
done:
  if (vars) {
    for (int i = 0; i < n; i++) {
      free(vars[i].base);
      free(vars[i].so);
      free(vars[i].c);
      free(vars[i].tmp_so);
      unlock_variant(&vars[i]);
      free(vars[i].lock);
    }
  }
  free(vars);
  free(argv);
  free(flagbuf);
  free(dir);
  free(version);
  free(ccpath);
  return st;
}

void ob_build_result_clear(ob_build_result *r) {
  if (!r) return;
  free(r->so_path);
  free(r->message);
  memset(r, 0, sizeof *r);
}
