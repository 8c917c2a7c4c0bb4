/* file.c: files named by the user, read and written without trusting what
 * they are. The line reader owns one buffer that never grows past the line
 * limit, so an endless stream (/dev/zero, a pipe that never closes) costs
 * bounded memory and ends in a message stating the limit it broke. The
 * output helper decides between a temporary file renamed into place (a
 * regular file) and writing directly (a device or a pipe), and refuses to
 * write over any of the caller's inputs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core_impl.h"

enum { OB_LINES_CHUNK = 64 * 1024 };

static const char *const k_kind_names[OB_FILE_KIND_COUNT] = {
    "missing", "regular file", "directory", "pipe or character device", "block device or socket"};

const char *ob_file_kind_name(ob_file_kind k) {
  return (unsigned)k < OB_FILE_KIND_COUNT ? k_kind_names[k] : "?";
}

static ob_file_kind kind_of_mode(mode_t m) {
  if (S_ISREG(m)) return OB_FILE_REGULAR;
  if (S_ISDIR(m)) return OB_FILE_DIR;
  if (S_ISFIFO(m) || S_ISCHR(m)) return OB_FILE_STREAM;
  return OB_FILE_OTHER;
}

ob_status ob_file_kind_of(ob_ctx *ctx, const char *path, ob_file_kind *kind) {
  OB_ASSERT(path && kind);
  struct stat sb;
  *kind = OB_FILE_MISSING;
  if (stat(path, &sb) != 0) {
    if (errno == ENOENT) return OB_OK;
    return ob_fail(ctx, OB_ERR_IO, "cannot examine '%s': %s", path, strerror(errno));
  }
  *kind = kind_of_mode(sb.st_mode);
  return OB_OK;
}

bool ob_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- reading ---------------------------------------------------------------- */

struct ob_lines {
  ob_ctx *ctx;
  int fd;
  char *path;
  ob_read_limits lim;
  char *buf;
  size_t cap, start, end; /* unread bytes are buf[start, end); buf[cap-1] stays spare */
  bool eof;
  bool skipping; /* inside a line over the limit, discarding up to its '\n' */
  int64_t bytes, lineno;
};

static ob_read_limits limits_or_default(const ob_read_limits *lim) {
  ob_read_limits l = lim ? *lim : (ob_read_limits){0};
  if (l.max_bytes <= 0) l.max_bytes = OB_READ_MAX_BYTES;
  if (l.max_line <= 0) l.max_line = OB_READ_MAX_LINE;
  if (l.max_lines <= 0) l.max_lines = OB_READ_MAX_LINES;
  return l;
}

ob_status ob_lines_open(ob_ctx *ctx, const char *path, const char *what,
                        const ob_read_limits *lim, ob_lines **out) {
  OB_ASSERT(path && out);
  *out = NULL;
  if (!what) what = "file";
  if (!*path) return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: empty file name", what);
  /* A FIFO blocks here until a writer opens it, as reading a pipe does. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    if (e == ENXIO) /* a socket */
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "cannot read %s '%s': a socket, not a file", what,
                     path);
    return ob_fail(ctx, OB_ERR_IO, "cannot read %s '%s': %s", what, path, strerror(e));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return ob_fail(ctx, OB_ERR_IO, "cannot read %s '%s': %s", what, path, strerror(e));
  }
  ob_file_kind k = kind_of_mode(sb.st_mode);
  if (k == OB_FILE_DIR || k == OB_FILE_OTHER) {
    close(fd);
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "cannot read %s '%s': it is a %s, not a text file",
                   what, path, ob_file_kind_name(k));
  }
  ob_lines *r = calloc(1, sizeof *r);
  char *p = strdup(path);
  char *buf = malloc(OB_LINES_CHUNK);
  if (!r || !p || !buf) {
    close(fd);
    free(r);
    free(p);
    free(buf);
    return ob_fail(ctx, OB_ERR_NOMEM, "cannot read '%s': out of memory", path);
  }
  r->ctx = ctx;
  r->fd = fd;
  r->path = p;
  r->lim = limits_or_default(lim);
  r->buf = buf;
  r->cap = OB_LINES_CHUNK;
  *out = r;
  return OB_OK;
}

void ob_lines_close(ob_lines *r) {
  if (!r) return;
  if (r->fd >= 0) close(r->fd);
  free(r->buf);
  free(r->path);
  free(r);
}

int64_t ob_lines_lineno(const ob_lines *r) { return r->lineno; }

/* Reads more input behind buf[end]; sets eof at the end of the input. */
static ob_status fill(ob_lines *r) {
  if (r->start > 0) { /* keep the unread part at the front */
    memmove(r->buf, r->buf + r->start, r->end - r->start);
    r->end -= r->start;
    r->start = 0;
  }
  /* room for the longest allowed line, its '\n' and the terminating NUL */
  size_t most = (size_t)r->lim.max_line + 2;
  if (r->end + 1 >= r->cap && r->cap < most) {
    size_t cap = r->cap * 2 < most ? r->cap * 2 : most;
    char *nb = realloc(r->buf, cap);
    if (!nb)
      return ob_fail(r->ctx, OB_ERR_NOMEM, "reading '%s': out of memory for line %lld", r->path,
                     (long long)r->lineno + 1);
    r->buf = nb;
    r->cap = cap;
  }
  size_t room = r->cap - 1 - r->end;
  OB_ASSERT(room > 0);
  ssize_t n;
  do {
    n = read(r->fd, r->buf + r->end, room);
  } while (n < 0 && errno == EINTR);
  if (n < 0)
    return ob_fail(r->ctx, errno == EISDIR ? OB_ERR_INVALID_ARG : OB_ERR_IO,
                   "reading '%s' after line %lld: %s", r->path, (long long)r->lineno,
                   strerror(errno));
  if (n == 0) {
    r->eof = true;
    return OB_OK;
  }
  const char *nul = memchr(r->buf + r->end, '\0', (size_t)n);
  if (nul) {
    int64_t line = r->lineno + 1;
    for (const char *q = r->buf + r->start; q < nul; q++) line += *q == '\n';
    return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "%s:%lld: a NUL byte: not a text file", r->path,
                   (long long)line);
  }
  r->end += (size_t)n;
  r->bytes += n;
  if (r->bytes > r->lim.max_bytes)
    return ob_fail(r->ctx, OB_ERR_INVALID_ARG,
                   "%s: more than %lld bytes, the limit for this input (a stream without end?)",
                   r->path, (long long)r->lim.max_bytes);
  return OB_OK;
}

ob_status ob_lines_next(ob_lines *r, char **line, size_t *len) {
  OB_ASSERT(r && line && len);
  *line = NULL;
  *len = 0;
  for (;;) {
    char *from = r->buf + r->start;
    size_t have = r->end - r->start;
    char *nl = memchr(from, '\n', have);
    size_t n = nl ? (size_t)(nl - from) : have;
    if (r->skipping) { /* the rest of an over-long line: drop it unread */
      r->start += nl ? n + 1 : n;
      if (nl || r->eof) r->skipping = false;
      if (nl) continue;
      if (r->eof) return OB_OK;
      ob_status st = fill(r);
      if (st) return st;
      continue;
    }
    if (n > (size_t)r->lim.max_line) {
      if (r->lineno >= r->lim.max_lines)
        return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "%s: more than %lld lines, the limit for this input",
                       r->path, (long long)r->lim.max_lines);
      r->lineno++;
      r->skipping = true;
      return ob_fail(r->ctx, OB_ERR_PARSE, "%s:%lld: line longer than the limit of %lld bytes",
                     r->path, (long long)r->lineno, (long long)r->lim.max_line);
    }
    if (nl || (r->eof && have > 0)) {
      if (r->lineno >= r->lim.max_lines)
        return ob_fail(r->ctx, OB_ERR_INVALID_ARG, "%s: more than %lld lines, the limit for this input",
                       r->path, (long long)r->lim.max_lines);
      from[n] = '\0'; /* the '\n', or the spare byte behind the last line */
      r->start += nl ? n + 1 : n;
      r->lineno++;
      *line = from;
      *len = n;
      return OB_OK;
    }
    if (r->eof) return OB_OK;
    ob_status st = fill(r);
    if (st) return st;
  }
}

ob_status ob_read_text(ob_ctx *ctx, const char *path, const char *what,
                       const ob_read_limits *lim, char **out, size_t *len) {
  OB_ASSERT(out);
  *out = NULL;
  if (len) *len = 0;
  ob_lines *r = NULL;
  ob_status st = ob_lines_open(ctx, path, what, lim, &r);
  if (st) return st;
  char *text = NULL, *line;
  size_t n = 0, cap = 0, k;
  while (!(st = ob_lines_next(r, &line, &k)) && line) {
    if (n + k + 2 > cap) {
      size_t ncap = cap ? cap : 4096;
      while (ncap < n + k + 2) ncap *= 2;
      char *t = realloc(text, ncap);
      if (!t) {
        st = ob_fail(ctx, OB_ERR_NOMEM, "reading '%s': out of memory at line %lld", path,
                     (long long)ob_lines_lineno(r));
        break;
      }
      text = t;
      cap = ncap;
    }
    memcpy(text + n, line, k);
    n += k;
    text[n++] = '\n';
  }
  ob_lines_close(r);
  if (!st && !text && !(text = calloc(1, 1)))
    st = ob_fail(ctx, OB_ERR_NOMEM, "reading '%s': out of memory", path);
  if (st) {
    free(text);
    return st;
  }
  text[n] = '\0';
  *out = text;
  if (len) *len = n;
  return OB_OK;
}

/* ---- writing ------------------------------------------------------------------ */

/* The input among inputs[] that `st` is, or NULL. */
static const char *input_that_is(const struct stat *st, const char *const *inputs, int n) {
  for (int i = 0; i < n; i++) {
    struct stat si;
    if (inputs[i] && stat(inputs[i], &si) == 0 && si.st_dev == st->st_dev &&
        si.st_ino == st->st_ino)
      return inputs[i];
  }
  return NULL;
}

/* Writes straight into a character device or a pipe (nothing to rename:
 * renaming a file over a device node would replace the device). */
static ob_status open_direct(ob_ctx *ctx, const char *path, ob_out *o) {
  /* O_NONBLOCK: a FIFO nobody reads is an error now, not a hang */
  int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENXIO)
      return ob_fail(ctx, OB_ERR_IO, "cannot write '%s': no process reads that pipe", path);
    return ob_fail(ctx, OB_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  o->f = fdopen(fd, "w");
  o->path = strdup(path);
  if (!o->f || !o->path) {
    if (o->f) fclose(o->f);
    else close(fd);
    free(o->path);
    memset(o, 0, sizeof *o);
    return ob_fail(ctx, OB_ERR_NOMEM, "cannot write '%s': out of memory", path);
  }
  return OB_OK;
}

ob_status ob_out_open(ob_ctx *ctx, const char *path, const char *const *inputs, int ninputs,
                      ob_out *o) {
  OB_ASSERT(o && (inputs || ninputs == 0));
  memset(o, 0, sizeof *o);
  if (!path || !*path) return ob_fail(ctx, OB_ERR_INVALID_ARG, "output file name is empty");
  struct stat st;
  if (!strcmp(path, "-")) {
    const char *in = NULL;
    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode))
      in = input_that_is(&st, inputs, ninputs);
    if (in)
      return ob_fail(ctx, OB_ERR_INVALID_ARG,
                     "stdout is redirected to '%s', which this command reads; writing would "
                     "destroy it",
                     in);
    o->f = stdout;
    o->is_stdout = true;
    return OB_OK;
  }
  const char *target = path;
  char *real = NULL;
  bool exists = false;
  struct stat ls;
  if (lstat(path, &ls) != 0) {
    if (errno != ENOENT) return ob_fail(ctx, OB_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  } else {
    if (stat(path, &st) != 0)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "cannot write '%s': a symbolic link to nothing (%s)",
                     path, strerror(errno));
    const char *in = input_that_is(&st, inputs, ninputs);
    if (in)
      return ob_fail(ctx, OB_ERR_INVALID_ARG,
                     "output '%s' is '%s', which this command reads; writing would destroy it",
                     path, in);
    ob_file_kind k = kind_of_mode(st.st_mode);
    if (k == OB_FILE_STREAM) return open_direct(ctx, path, o);
    if (k != OB_FILE_REGULAR)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "cannot write '%s': it is a %s, not a regular file",
                     path, ob_file_kind_name(k));
    if (S_ISLNK(ls.st_mode)) { /* replace what the link names, keep the link */
      real = realpath(path, NULL);
      if (!real) return ob_fail(ctx, OB_ERR_IO, "cannot resolve '%s': %s", path, strerror(errno));
      target = real;
    }
    exists = true;
  }
  char *tmp = NULL;
  int fd = -1;
  size_t tl = strlen(target) + 32;
  if ((tmp = malloc(tl))) {
    snprintf(tmp, tl, "%s.tmp.%ld", target, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  if (fd < 0) {
    ob_status s = tmp ? ob_fail(ctx, OB_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno))
                      : ob_fail(ctx, OB_ERR_NOMEM, "cannot write '%s': out of memory", path);
    free(tmp);
    free(real);
    return s;
  }
  if (exists) /* the replacement keeps the file's permissions */
    (void)fchmod(fd, st.st_mode & 07777);
  o->f = fdopen(fd, "w");
  o->path = strdup(target);
  o->tmp = tmp;
  free(real);
  if (!o->f || !o->path) {
    if (o->f) fclose(o->f);
    else close(fd);
    unlink(tmp);
    free(tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return ob_fail(ctx, OB_ERR_NOMEM, "cannot write '%s': out of memory", path);
  }
  return OB_OK;
}

ob_status ob_out_close(ob_ctx *ctx, ob_out *o, bool ok) {
  OB_ASSERT(o);
  ob_status s = OB_OK;
  if (!o->f) return OB_OK;
  if (o->is_stdout) {
    if (fflush(stdout) != 0 && ok)
      s = ob_fail(ctx, OB_ERR_IO, "writing to stdout: %s", strerror(errno));
    memset(o, 0, sizeof *o);
    return s;
  }
  bool werr = ferror(o->f) != 0;
  int saved = errno;
  if (fclose(o->f) != 0 && !werr) {
    werr = true;
    saved = errno;
  }
  o->f = NULL;
  if (ok && werr) s = ob_fail(ctx, OB_ERR_IO, "writing '%s': %s", o->path, strerror(saved));
  if (o->tmp) {
    if (ok && !s && rename(o->tmp, o->path) != 0)
      s = ob_fail(ctx, OB_ERR_IO, "cannot move '%s' to '%s': %s", o->tmp, o->path,
                  strerror(errno));
    if (!ok || s) unlink(o->tmp);
  }
  free(o->tmp);
  free(o->path);
  memset(o, 0, sizeof *o);
  return s;
}
