/* suite.c: suite files of `opbench bench`: a list of workloads taken from a
 * real model, one per line, `op shape [stride pad] count`, '#' starting a
 * comment. The whole file is refused on the first malformed line, before
 * anything is measured. Reading is bounded (CLI_SUITE_MAX_* below): a suite
 * named by the user may be a directory, a pipe without end or a binary
 * file. The entries array belongs to the caller. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Copies a token into a fixed field; false if it does not fit. */
static OB_NODISCARD bool copy_tok(char *dst, size_t cap, const char *tok) {
  if (strlen(tok) >= cap) return false;
  strcpy(dst, tok);
  return true;
}

/* Parses one non-empty, comment-stripped line. Prints "FILE:LINE: ..." and
 * returns false when it is malformed. */
static bool parse_line(ob_ctx *ctx, const char *file, int lineno, char *line, cli_suite_entry *e) {
  enum { MAXTOK = 8 };
  char *tok[MAXTOK];
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " \t\r\v\f", &save); t; t = strtok_r(NULL, " \t\r\v\f", &save)) {
    if (n == MAXTOK) {
      n++;
      break;
    }
    tok[n++] = t;
  }
  memset(e, 0, sizeof *e);
  e->line = lineno;
  if (n != 3 && n != 5) {
    cli_error("%s:%d: expected 'op shape [stride pad] count' (3 or 5 columns), got %s%d", file,
              lineno, n > MAXTOK ? "more than " : "", n > MAXTOK ? MAXTOK : n);
    return false;
  }
  if (!ob_op_exists(tok[0])) {
    ob_workload tmp;
    /* fails by design: its message lists the known operators */
    if (ob_workload_parse(ctx, tok[0], tok[1], &tmp) != OB_OK)
      cli_error("%s:%d: %s", file, lineno, ob_ctx_errmsg(ctx));
    else
      cli_error("%s:%d: unknown operator '%s'", file, lineno, tok[0]);
    return false;
  }
  if (!copy_tok(e->op, sizeof e->op, tok[0])) {
    cli_error("%s:%d: operator column too long: '%.64s...'", file, lineno, tok[0]);
    return false;
  }
  if (!copy_tok(e->shape, sizeof e->shape, tok[1])) {
    cli_error("%s:%d: shape column longer than %zu characters: '%.64s...'", file, lineno,
              sizeof e->shape - 1, tok[1]);
    return false;
  }
  const char *count = tok[n - 1];
  if (!cli_parse_i64(count, 1, INT32_MAX, &e->count)) {
    cli_error("%s:%d: bad count '%s' (expected an integer from 1 to %d)", file, lineno, count,
              INT32_MAX);
    return false;
  }
  if (n == 5) {
    char *field[2] = {e->stride, e->pad};
    for (int i = 1; i <= 2; i++) {
      const char *name = i == 1 ? "stride" : "pad";
      int64_t v;
      if (!cli_parse_i64(tok[1 + i], 0, INT32_MAX, &v)) {
        cli_error("%s:%d: bad %s '%s' (expected an integer from 0 to %d)", file, lineno, name,
                  tok[1 + i], INT32_MAX);
        return false;
      }
      /* a field that does not fit is refused, never dropped: a dropped
       * stride would measure another workload under this line's name */
      if (!copy_tok(field[i - 1], sizeof e->stride, tok[1 + i])) {
        cli_error("%s:%d: %s column longer than %zu characters: '%.64s'", file, lineno, name,
                  sizeof e->stride - 1, tok[1 + i]);
        return false;
      }
    }
  }
  if (cli_workload(ctx, e->op, e->shape, e->stride[0] ? e->stride : NULL,
                   e->pad[0] ? e->pad : NULL, NULL, NULL, false, &e->wl) != OB_OK) {
    cli_error("%s:%d: %s", file, lineno, ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

bool cli_suite_parse(ob_ctx *ctx, const char *file, char *text, cli_suite_entry **out, int *n) {
  int cap = 0, len = 0, lineno = 0;
  cli_suite_entry *v = NULL;
  char *p = text;
  *out = NULL;
  *n = 0;
  while (p && *p) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    if (lineno == CLI_SUITE_MAX_LINES) {
      cli_error("%s: more than %d lines, the limit for a suite", file, CLI_SUITE_MAX_LINES);
      free(v);
      return false;
    }
    lineno++;
    char *hash = strchr(p, '#');
    if (hash) *hash = '\0';
    if (p[strspn(p, " \t\r\v\f")] != '\0') {
      if (len == CLI_SUITE_MAX_WORKLOADS) {
        cli_error("%s:%d: more than %d workloads, the limit for a suite", file, lineno,
                  CLI_SUITE_MAX_WORKLOADS);
        free(v);
        return false;
      }
      if (len == cap) {
        cap = cap ? 2 * cap : 16;
        cli_suite_entry *g = realloc(v, (size_t)cap * sizeof *v);
        if (!g) {
          cli_error("%s:%d: out of memory reading the suite", file, lineno);
          free(v);
          return false;
        }
        v = g;
      }
      if (!parse_line(ctx, file, lineno, p, &v[len])) {
        free(v);
        return false;
      }
      len++;
    }
    p = nl ? nl + 1 : NULL;
  }
  if (len == 0) {
    cli_error("%s: the suite lists no workloads", file);
    free(v);
    return false;
  }
  *out = v;
  *n = len;
  return true;
}

bool cli_suite_read(ob_ctx *ctx, const char *file, cli_suite_entry **out, int *n) {
  *out = NULL;
  *n = 0;
  char *text = NULL;
  if (!strcmp(file, "resnet18")) {
    if (!(text = strdup(cli_suite_resnet18))) {
      cli_error("--suite: out of memory");
      return false;
    }
  } else {
    ob_read_limits lim = {.max_bytes = CLI_SUITE_MAX_BYTES, .max_line = CLI_SUITE_MAX_LINE,
                          .max_lines = CLI_SUITE_MAX_LINES};
    if (ob_read_text(ctx, file, "suite", &lim, &text, NULL) != OB_OK) {
      cli_error("--suite: %s", ob_ctx_errmsg(ctx));
      return false;
    }
  }
  bool ok = cli_suite_parse(ctx, file, text, out, n);
  free(text);
  return ok;
}
