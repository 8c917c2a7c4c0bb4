/* test_hostile.c: the library against hostile input (issue 16): checked
 * sizes, every operator's attributes at and beyond their limits, the
 * bounded line reader on devices, pipes and over-long lines, the output
 * helper that must never write over an input or replace a device, and the
 * inputs the fuzz targets found (each also in fuzz/corpus/). Run under the
 * ASan+UBSan build too, where any overflow left would stop it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "opbench/db.h"
#include "opbench/ops.h"

static ob_ctx *ctx;
static char tmpdir[64];

static bool msg_has(const char *s) { return strstr(ob_ctx_errmsg(ctx), s) != NULL; }

static const char *path_in(const char *name) {
  static char buf[4][256];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  OB_ASSERT(f);
  fputs(text, f);
  fclose(f);
}

/* ---- checked sizes ------------------------------------------------------------- */
static void test_sizes(void) {
  int64_t v;
  CHECK(ob_mul_i64(INT64_C(1) << 31, INT64_C(1) << 31, &v) && v == INT64_C(1) << 62);
  CHECK(!ob_mul_i64(INT64_C(1) << 62, 4, &v));
  CHECK(!ob_mul_i64(INT64_MIN, -1, &v));
  CHECK(!ob_add_i64(INT64_MAX, 1, &v));
  size_t z;
  CHECK(!ob_add_size(SIZE_MAX, 1, &z));

  int64_t n = 0;
  CHECK(ob_check_numel(ctx, "t", 4, (int64_t[]){1, 64, 56, 56}, &n) == OB_OK && n == 200704);
  CHECK(ob_check_numel(ctx, "t", 2, (int64_t[]){INT64_C(1) << 31, 1}, &n) == OB_OK);
  /* one past the limit, and a product that wraps int64 to a small number */
  CHECK(ob_check_numel(ctx, "t", 2, (int64_t[]){(INT64_C(1) << 31) + 1, 1}, NULL) == OB_ERR_INVALID_ARG);
  CHECK(ob_check_numel(ctx, "conv2d output", 4,
                       (int64_t[]){INT64_C(1) << 62, 4, 1, 1}, NULL) == OB_ERR_INVALID_ARG);
  CHECK_MSG(msg_has("conv2d output: 4611686018427387904 x 4 x 1 x 1 elements, more than the limit "
                    "of 2147483648 (2^31) elements per tensor"),
            "%s", ob_ctx_errmsg(ctx));
  CHECK(ob_check_numel(ctx, "t", 3, (int64_t[]){4, 0, 4}, NULL) == OB_ERR_INVALID_ARG);
  CHECK(msg_has("dimension 1 is 0"));
  CHECK(ob_check_attr(ctx, "x", OB_MAX_ATTR) == OB_OK);
  CHECK(ob_check_attr(ctx, "x", -OB_MAX_ATTR) == OB_OK);
  CHECK(ob_check_attr(ctx, "conv2d: N", OB_MAX_ATTR + 1) == OB_ERR_INVALID_ARG);
  CHECK(msg_has("conv2d: N = 2147483648 is out of range"));
  CHECK(ob_check_attr(ctx, "x", INT64_MIN) == OB_ERR_INVALID_ARG);
}

/* A small valid shape of every operator: the attribute names come from
 * the parsed workload. */
static const struct {
  const char *op, *shape;
} k_small[] = {
    {"conv2d", "N=1,C=4,H=6,W=6,K=4,R=3,S=3"},
    {"depthwise_conv2d", "N=1,C=4,H=6,W=6,R=3,S=3"},
    {"dense", "M=2,N=8,K=4"},
    {"batch_matmul", "B=2,M=2,N=8,K=4"},
    {"relu", "N=1,C=2,H=3,W=3"},
    {"add", "N=1,C=2,H=3,W=3"},
    {"bias_add", "N=1,C=2,H=3,W=3"},
    {"clip", "N=1,C=2,H=3,W=3,lo=-1,hi=1"},
    {"mul", "N=1,C=2,H=3,W=3"},
    {"sigmoid", "N=1,C=2,H=3,W=3"},
    {"tanh", "N=1,C=2,H=3,W=3"},
    {"gelu", "N=1,C=2,H=3,W=3"},
    {"relu6", "N=1,C=2,H=3,W=3"},
    {"pool2d", "N=1,C=2,H=4,W=4,R=2,S=2"},
    {"global_avg_pool", "N=1,C=2,H=3,W=3"},
    {"softmax", "M=2,N=8"},
    {"layer_norm", "M=2,N=8"},
    {"batch_norm", "N=1,C=2,H=3,W=3"},
    {"concat", "N=1,C1=2,C2=3,H=3,W=3"},
    {"to_nchwc", "N=1,C=8,H=3,W=3,cb=4"},
    {"from_nchwc", "N=1,C=8,H=3,W=3,cb=4"},
};
#define NSMALL ((int)(sizeof k_small / sizeof k_small[0]))

/* A workload that passed validation: its tensors are within the limits,
 * its task can be made, its flops and key computed. */
static bool accepted_is_sane(const ob_workload *wl) {
  double f = ob_workload_flops(wl);
  if (!(f >= 0 && f < 1e40)) return false;
  char key[512];
  ob_workload_key(wl, key, sizeof key);
  ob_task *t = NULL;
  if (ob_task_new(ctx, wl, NULL, NULL, &t) != OB_OK) return false;
  bool ok = true;
  for (int a = 0; a < ob_task_num_args(t); a++)
    ok &= ob_task_arg_bytes(t, a) <= (size_t)OB_MAX_BUFFER_BYTES;
  ob_task_free(t);
  return ok;
}

/* Every attribute of every operator at the limit, beyond it, and pairs of
 * attributes at values whose product passes 2^31: each is refused with a
 * status or accepted with every tensor within the limit. Nothing may
 * overflow on the way (the UBSan build runs this). */
static void test_every_operator_at_its_limits(void) {
  static const int64_t k_vals[] = {OB_MAX_ATTR, -OB_MAX_ATTR, 65536, 46341, 0, -1, 2};
  static const int64_t k_pair[] = {OB_MAX_ATTR, 65536, 46341};
  CHECK(NSMALL == ob_op_count());
  int refused = 0, accepted = 0, insane = 0;
  for (int o = 0; o < NSMALL; o++) {
    ob_workload base;
    CHECK_MSG(ob_workload_parse(ctx, k_small[o].op, k_small[o].shape, &base) == OB_OK &&
                  ob_workload_validate(ctx, &base) == OB_OK,
              "%s %s: %s", k_small[o].op, k_small[o].shape, ob_ctx_errmsg(ctx));
    for (int i = 0; i < base.nattr; i++) {
      ob_workload wl = base;
      /* beyond the limit: refused by the setter, whatever the operator */
      CHECK(ob_workload_set(ctx, &wl, base.attr_name[i], OB_MAX_ATTR + 1) == OB_ERR_INVALID_ARG);
      CHECK(ob_workload_set(ctx, &wl, base.attr_name[i], INT64_MIN) == OB_ERR_INVALID_ARG);
      CHECK(ob_workload_set(ctx, &wl, base.attr_name[i], INT64_C(1) << 62) == OB_ERR_INVALID_ARG);
      /* ... and by validate when written into the struct directly */
      wl.attr[i] = INT64_C(1) << 62;
      CHECK(ob_workload_validate(ctx, &wl) == OB_ERR_INVALID_ARG);
      for (size_t v = 0; v < sizeof k_vals / sizeof k_vals[0]; v++) {
        wl = base;
        if (ob_workload_set(ctx, &wl, base.attr_name[i], k_vals[v]) != OB_OK) {
          refused++;
          continue;
        }
        if (ob_workload_validate(ctx, &wl) != OB_OK) {
          refused++;
          continue;
        }
        accepted++;
        if (!accepted_is_sane(&wl)) {
          insane++;
          fprintf(stderr, "%s %s=%lld: accepted but not sane: %s\n", k_small[o].op,
                  base.attr_name[i], (long long)k_vals[v], ob_ctx_errmsg(ctx));
        }
      }
      for (int j = i + 1; j < base.nattr; j++)
        for (size_t v = 0; v < sizeof k_pair / sizeof k_pair[0]; v++) {
          wl = base;
          if (ob_workload_set(ctx, &wl, base.attr_name[i], k_pair[v]) != OB_OK ||
              ob_workload_set(ctx, &wl, base.attr_name[j], k_pair[v]) != OB_OK ||
              ob_workload_validate(ctx, &wl) != OB_OK) {
            refused++;
            continue;
          }
          accepted++;
          if (!accepted_is_sane(&wl)) {
            insane++;
            fprintf(stderr, "%s %s=%s=%lld: accepted but not sane: %s\n", k_small[o].op,
                    base.attr_name[i], base.attr_name[j], (long long)k_pair[v], ob_ctx_errmsg(ctx));
          }
        }
    }
  }
  CHECK(insane == 0);
  CHECK(refused > 0 && accepted > 0);
  printf("limits: %d combinations refused, %d accepted and sane\n", refused, accepted);

  /* the examples, by the library */
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "conv2d", "N=4611686018427387904,C=4,H=1,W=1,K=4,R=1,S=1", &wl) ==
        OB_ERR_INVALID_ARG);
  CHECK(msg_has("N = 4611686018427387904 is out of range"));
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=4,H=1,W=1,K=4,R=1,S=1", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "pad", 2147483647) == OB_OK);
  CHECK(ob_workload_validate(ctx, &wl) == OB_ERR_INVALID_ARG);
  CHECK_MSG(msg_has("conv2d output (N x K x OH x OW): 1 x 4 x 4294967295 x 4294967295 elements"),
            "%s", ob_ctx_errmsg(ctx));
  /* a window larger than the input with stride 2 (C division rounded the
   * empty output up to one row) */
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=1,H=2,W=2,K=1,R=3,S=3,stride_h=2,stride_w=2", &wl) == OB_OK);
  CHECK(ob_workload_validate(ctx, &wl) == OB_ERR_INVALID_ARG && msg_has("empty output"));
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=1,H=3,W=3,K=1,R=3,S=3,stride_h=2,stride_w=2", &wl) == OB_OK);
  CHECK(ob_workload_validate(ctx, &wl) == OB_OK);
  /* padded data is a tensor too */
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=1,H=1,W=1,K=1,R=40000,S=40000", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "pad", 40000) == OB_OK);
  CHECK(ob_workload_validate(ctx, &wl) == OB_ERR_INVALID_ARG && msg_has("padded data"));
  /* an attribute set whose names do not belong to the operator */
  CHECK(ob_workload_parse(ctx, "dense", "M=2,N=8,K=4", &wl) == OB_OK);
  snprintf(wl.attr_name[0], sizeof wl.attr_name[0], "X");
  CHECK(ob_workload_validate(ctx, &wl) == OB_ERR_INVALID_ARG);
}

/* ---- the line reader ---------------------------------------------------------------- */
static void test_lines(void) {
  ob_lines *r = NULL;
  char *line;
  size_t len;
  /* a regular file: lines without '\n', the last one without it too */
  write_file(path_in("a.txt"), "one\n\ntwo\r\nthree");
  CHECK(ob_lines_open(ctx, path_in("a.txt"), "test file", NULL, &r) == OB_OK);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && !strcmp(line, "one") && len == 3);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && len == 0);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && !strcmp(line, "two\r"));
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && !strcmp(line, "three") && len == 5);
  CHECK(ob_lines_lineno(r) == 4);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && !line);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && !line);
  ob_lines_close(r);
  ob_lines_close(NULL);

  /* missing, a directory */
  CHECK(ob_lines_open(ctx, path_in("none"), "suite", NULL, &r) == OB_ERR_IO && !r);
  CHECK(msg_has("cannot read suite") && msg_has("No such file"));
  CHECK(ob_lines_open(ctx, tmpdir, "suite", NULL, &r) == OB_ERR_INVALID_ARG);
  CHECK(msg_has("it is a directory, not a text file"));

  /* /dev/zero: a NUL byte at once, not an endless line */
  CHECK(ob_lines_open(ctx, "/dev/zero", NULL, NULL, &r) == OB_OK);
  CHECK(ob_lines_next(r, &line, &len) == OB_ERR_INVALID_ARG && msg_has("/dev/zero:1: a NUL byte"));
  ob_lines_close(r);
  /* a NUL on line 3 */
  FILE *f = fopen(path_in("nul.txt"), "w");
  fwrite("a\nb\nc\0d\n", 1, 8, f);
  fclose(f);
  CHECK(ob_lines_open(ctx, path_in("nul.txt"), NULL, NULL, &r) == OB_OK);
  ob_status st;
  while (!(st = ob_lines_next(r, &line, &len)) && line) {
  }
  CHECK(st == OB_ERR_INVALID_ARG && msg_has("nul.txt:3: a NUL byte"));
  ob_lines_close(r);

  /* limits: an over-long line is skipped (OB_ERR_PARSE) and reading goes on */
  ob_read_limits lim = {.max_line = 8};
  write_file(path_in("long.txt"), "short\n0123456789abcdef0123456789\nafter\n12345678\n123456789");
  CHECK(ob_lines_open(ctx, path_in("long.txt"), NULL, &lim, &r) == OB_OK);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && !strcmp(line, "short"));
  CHECK(ob_lines_next(r, &line, &len) == OB_ERR_PARSE && ob_lines_lineno(r) == 2);
  CHECK(msg_has("long.txt:2: line longer than the limit of 8 bytes"));
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && !strcmp(line, "after"));
  CHECK(ob_lines_lineno(r) == 3);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && !strcmp(line, "12345678"));
  CHECK(ob_lines_next(r, &line, &len) == OB_ERR_PARSE && ob_lines_lineno(r) == 5);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && !line);
  ob_lines_close(r);
  /* over-long lines longer than the reader's buffer (64 KiB), skipped */
  lim = (ob_read_limits){.max_line = 100};
  f = fopen(path_in("huge.txt"), "w");
  for (int i = 0; i < 300000; i++) fputc('x', f);
  fputs("\nnext\n", f);
  fclose(f);
  CHECK(ob_lines_open(ctx, path_in("huge.txt"), NULL, &lim, &r) == OB_OK);
  CHECK(ob_lines_next(r, &line, &len) == OB_ERR_PARSE);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && line && !strcmp(line, "next") && ob_lines_lineno(r) == 2);
  ob_lines_close(r);
  /* lines and bytes */
  lim = (ob_read_limits){.max_lines = 2};
  write_file(path_in("three.txt"), "1\n2\n3\n");
  CHECK(ob_lines_open(ctx, path_in("three.txt"), NULL, &lim, &r) == OB_OK);
  CHECK(ob_lines_next(r, &line, &len) == OB_OK && ob_lines_next(r, &line, &len) == OB_OK);
  CHECK(ob_lines_next(r, &line, &len) == OB_ERR_INVALID_ARG && msg_has("more than 2 lines"));
  ob_lines_close(r);
  lim = (ob_read_limits){.max_bytes = 5};
  CHECK(ob_lines_open(ctx, path_in("three.txt"), NULL, &lim, &r) == OB_OK);
  CHECK(ob_lines_next(r, &line, &len) == OB_ERR_INVALID_ARG && msg_has("more than 5 bytes"));
  ob_lines_close(r);

  /* a pipe: read once as a stream, bounded */
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    signal(SIGPIPE, SIG_DFL);
    const char *l = "endless line of text\n";
    for (;;)
      if (write(fds[1], l, strlen(l)) < 0) _exit(0);
  }
  close(fds[1]);
  char pp[64];
  snprintf(pp, sizeof pp, "/proc/self/fd/%d", fds[0]);
  lim = (ob_read_limits){.max_bytes = 1 << 20};
  CHECK(ob_lines_open(ctx, pp, NULL, &lim, &r) == OB_OK);
  int64_t n = 0;
  while (!(st = ob_lines_next(r, &line, &len)) && line) n++;
  CHECK(st == OB_ERR_INVALID_ARG && msg_has("more than 1048576 bytes") && n > 40000);
  ob_lines_close(r);
  close(fds[0]);
  waitpid(pid, NULL, 0);

  /* the whole-file form */
  char *text = NULL;
  size_t tl = 0;
  CHECK(ob_read_text(ctx, path_in("a.txt"), NULL, NULL, &text, &tl) == OB_OK);
  CHECK(text && !strcmp(text, "one\n\ntwo\r\nthree\n") && tl == strlen(text));
  free(text);
  write_file(path_in("empty.txt"), "");
  CHECK(ob_read_text(ctx, path_in("empty.txt"), NULL, NULL, &text, &tl) == OB_OK && text &&
        !*text && tl == 0);
  free(text);
  CHECK(ob_read_text(ctx, "/dev/urandom", "suite", NULL, &text, NULL) == OB_ERR_INVALID_ARG && !text);
  CHECK(msg_has("a NUL byte"));
}

/* ---- file kinds and outputs --------------------------------------------------------- */
static void test_outputs(void) {
  ob_file_kind k;
  CHECK(ob_file_kind_of(ctx, "/dev/null", &k) == OB_OK && k == OB_FILE_STREAM);
  CHECK(ob_file_kind_of(ctx, tmpdir, &k) == OB_OK && k == OB_FILE_DIR);
  CHECK(ob_file_kind_of(ctx, path_in("nothing"), &k) == OB_OK && k == OB_FILE_MISSING);
  write_file(path_in("in.db"), "precious\n");
  CHECK(ob_file_kind_of(ctx, path_in("in.db"), &k) == OB_OK && k == OB_FILE_REGULAR);
  CHECK(symlink(path_in("in.db"), path_in("sym.db")) == 0);
  CHECK(link(path_in("in.db"), path_in("hard.db")) == 0);
  CHECK(ob_same_file(path_in("in.db"), path_in("sym.db")));
  CHECK(ob_same_file(path_in("hard.db"), path_in("sym.db")));
  CHECK(!ob_same_file(path_in("in.db"), path_in("a.txt")));
  CHECK(!ob_same_file(path_in("in.db"), path_in("nothing")));

  char in_db[256];
  snprintf(in_db, sizeof in_db, "%s", path_in("in.db")); /* path_in's buffers rotate */
  const char *inputs[] = {in_db};
  ob_out o;
  const char *bad[] = {"in.db", "sym.db", "hard.db"};
  for (int i = 0; i < 3; i++) {
    bad[i] = path_in(bad[i]);
    CHECK(ob_out_open(ctx, bad[i], inputs, 1, &o) == OB_ERR_INVALID_ARG && !o.f);
    CHECK(msg_has("which this command reads"));
  }
  CHECK(ob_out_open(ctx, tmpdir, inputs, 1, &o) == OB_ERR_INVALID_ARG && msg_has("directory"));
  CHECK(symlink(path_in("nowhere"), path_in("dangling")) == 0);
  CHECK(ob_out_open(ctx, path_in("dangling"), inputs, 1, &o) == OB_ERR_INVALID_ARG);
  CHECK(ob_out_open(ctx, "", inputs, 1, &o) == OB_ERR_INVALID_ARG);
  /* nothing written over the input */
  char *text = NULL;
  CHECK(ob_read_text(ctx, path_in("in.db"), NULL, NULL, &text, NULL) == OB_OK &&
        !strcmp(text, "precious\n"));
  free(text);

  /* a device is written directly and stays a device */
  CHECK(ob_out_open(ctx, "/dev/null", inputs, 1, &o) == OB_OK && o.f && !o.tmp);
  fputs("x\n", o.f);
  CHECK(ob_out_close(ctx, &o, true) == OB_OK);
  struct stat sb;
  CHECK(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));
  /* a FIFO nobody reads: an error, not a hang */
  CHECK(mkfifo(path_in("fifo"), 0600) == 0);
  CHECK(ob_out_open(ctx, path_in("fifo"), inputs, 1, &o) == OB_ERR_IO && msg_has("no process reads"));

  /* a new file, then a replaced one (mode kept), through a link (link kept) */
  CHECK(ob_out_open(ctx, path_in("new.txt"), inputs, 1, &o) == OB_OK && o.tmp);
  fputs("first\n", o.f);
  CHECK(ob_out_close(ctx, &o, true) == OB_OK);
  CHECK(chmod(path_in("new.txt"), 0640) == 0);
  CHECK(symlink("new.txt", path_in("new.link")) == 0);
  CHECK(ob_out_open(ctx, path_in("new.link"), inputs, 1, &o) == OB_OK);
  fputs("second\n", o.f);
  CHECK(ob_out_close(ctx, &o, true) == OB_OK);
  CHECK(lstat(path_in("new.link"), &sb) == 0 && S_ISLNK(sb.st_mode));
  CHECK(stat(path_in("new.txt"), &sb) == 0 && (sb.st_mode & 0777) == 0640);
  CHECK(ob_read_text(ctx, path_in("new.txt"), NULL, NULL, &text, NULL) == OB_OK &&
        !strcmp(text, "second\n"));
  free(text);
  /* a failed write leaves the old file and no temporary */
  CHECK(ob_out_open(ctx, path_in("new.txt"), inputs, 1, &o) == OB_OK);
  char tmpname[512];
  snprintf(tmpname, sizeof tmpname, "%s", o.tmp);
  fputs("half", o.f);
  CHECK(ob_out_close(ctx, &o, false) == OB_OK);
  CHECK(access(tmpname, F_OK) != 0);
  CHECK(ob_read_text(ctx, path_in("new.txt"), NULL, NULL, &text, NULL) == OB_OK &&
        !strcmp(text, "second\n"));
  free(text);
}

/* ---- what the fuzz targets found (each input also in fuzz/corpus/) -------------------- */
static void test_fuzz_regressions(void) {
  /* fuzz_shape: dense.x86's fallback (4x4 tile, nearest factors 7x7) broke
   * its own 28-accumulator filter */
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "dense", "M=7,K=5,N=1001,K=5112", &wl) == OB_OK);
  CHECK(ob_workload_set_epilogue(ctx, &wl, "bias") == OB_OK);
  ob_task *t = NULL;
  CHECK(ob_task_new(ctx, &wl, "dense.x86", NULL, &t) == OB_OK);
  if (t) {
    ob_config d = ob_task_default_config(t), c;
    CHECK(ob_space_is_valid(ob_task_space(t), d.index));
    CHECK(ob_space_get(ctx, ob_task_space(t), d.index, &c) == OB_OK);
    ob_task_free(t);
  }
  /* every operator's every template that takes the workload (Winograd
   * takes 3x3 stride 1 only; the default template takes all): the default
   * config passes the filter */
  for (int o = 0; o < NSMALL; o++) {
    CHECK(ob_workload_parse(ctx, k_small[o].op, k_small[o].shape, &wl) == OB_OK);
    const char *names[8];
    int nt = ob_op_templates(k_small[o].op, names, 8);
    for (int i = 0; i < nt && i < 8; i++) {
      t = NULL;
      ob_status tst = ob_task_new(ctx, &wl, names[i], NULL, &t);
      CHECK_MSG(tst == OB_OK || (tst == OB_ERR_UNSUPPORTED && i > 0), "%s %s: %s", k_small[o].op, names[i],
                ob_ctx_errmsg(ctx));
      ob_ctx_clear_error(ctx);
      if (t) CHECK(ob_space_is_valid(ob_task_space(t), ob_task_default_config(t).index));
      ob_task_free(t);
    }
  }

  /* fuzz_autotvm: a timestamp of 1e999 (infinity) was stored, exported as
   * null, and never read back; costs of 1e308 ended the import */
  write_file(path_in("inf.json"),
             "{\"input\": [\"llvm\", \"dense_nopack.x86\", [[\"TENSOR\", [1, 64], \"float32\"], "
             "[\"TENSOR\", [32, 64], \"float32\"], null, \"float32\"], {}], \"config\": {\"index\": 3, "
             "\"entity\": []}, \"result\": [[0.001], 0, 1.0, 11e308650000001], \"version\": 0.2}\n"
             "{\"input\": [\"llvm\", \"dense_nopack.x86\", [[\"TENSOR\", [1, 64], \"float32\"], "
             "[\"TENSOR\", [32, 64], \"float32\"], null, \"float32\"], {}], \"config\": {\"index\": 4, "
             "\"entity\": []}, \"result\": [[1e308, 1e308], 0, 1.0, 1], \"version\": 0.2}\n"
             "{\"input\": [\"llvm\", \"dense_nopack.x86\", [[\"TENSOR\", [1, 64], \"float32\"], "
             "[\"TENSOR\", [32, 64], \"float32\"], null, \"float32\"], {}], \"config\": {\"index\": 5, "
             "\"entity\": []}, \"result\": [[0.001, 0.003], 0, 1e999, 1], \"version\": 0.2}\n"
             "{\"input\": [\"llvm\", \"dense_nopack.x86\", [[\"TENSOR\", [1, 64], \"float32\"], "
             "[\"TENSOR\", [32, 64], \"float32\"], null, \"float32\"], {}], \"config\": {\"index\": 6, "
             "\"entity\": []}, \"result\": [[0.001, 0.003], 0, 1.0, 1], \"version\": 0.2}\n");
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, path_in("inf.db"), 0, &db) == OB_OK);
  if (!db) return;
  ob_db_import_result res;
  ob_db_import_opts io = {.map = ob_op_autotvm_map()};
  CHECK(ob_db_import_autotvm(db, path_in("inf.json"), &io, &res) == OB_OK);
  CHECK(res.nlines == 4 && res.nimported == 1 && res.nbroken == 3 && res.nbad == 3);
  CHECK(res.nbad == 3 && res.bad[0].line == 1 && res.bad[1].line == 2 && res.bad[2].line == 3);
  ob_db_import_result_clear(&res);
  int64_t n = 0;
  CHECK(ob_db_export_autotvm(db, NULL, path_in("back.json"), io.map, NULL, NULL, NULL, &n) == OB_OK && n == 1);
  CHECK(ob_db_import_autotvm(db, path_in("back.json"), &io, &res) == OB_OK);
  CHECK(res.nlines == 1 && res.nduplicate == 1 && res.nbroken == 0);
  ob_db_import_result_clear(&res);
  /* the stored statistics of costs [0.001, 0.003] */
  ob_db_records *recs = NULL;
  CHECK(ob_db_query(db, NULL, &recs) == OB_OK && recs && recs->n == 1);
  if (recs && recs->n == 1) {
    CHECK(recs->rec[0].timing.median_s > 0.0019999 && recs->rec[0].timing.median_s < 0.0020001);
    CHECK(recs->rec[0].timing.mean_s > 0.0019999 && recs->rec[0].timing.mean_s < 0.0020001);
  }
  ob_db_records_free(recs);
  /* an export onto the database itself is refused, and the database stays */
  CHECK(ob_db_export_csv(db, NULL, path_in("inf.db"), &n) == OB_ERR_INVALID_ARG);
  CHECK(ob_db_query(db, NULL, &recs) == OB_OK && recs && recs->n == 1);
  ob_db_records_free(recs);
  ob_db_close(db);
  CHECK(ob_db_open(ctx, "/dev/null", 0, &db) == OB_ERR_INVALID_ARG && !db);
  CHECK(ob_db_open(ctx, tmpdir, 0, &db) == OB_ERR_INVALID_ARG && !db);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/opbench_test_hostile.XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  test_sizes();
  test_every_operator_at_its_limits();
  test_lines();
  test_outputs();
  test_fuzz_regressions();
  int rc = CHECK_DONE();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) rc = 1;
  ob_ctx_free(ctx);
  return rc;
}
