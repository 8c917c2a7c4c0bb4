/* bench_util.h: what the benchmark programs share (header only; bench/ is
 * not the library): a line of a suite file (the suites under ../shared/data) and the
 * load average they print beside their figures. */
#ifndef OB_BENCH_UTIL_H
#define OB_BENCH_UTIL_H

#include <stdio.h>
#include <string.h>

#include "opbench/ops.h"

/* One suite line, "op shape [stride [pad [count]]]" with '#' comments, into
 * *wl (and *stride and *pad: 1 and 0 when absent). 1: a workload; 0: nothing on the line;
 * -1: a bad one, said on stderr as "prog: path: 'op shape': why". */
static inline int bench_suite_line(ob_ctx *ctx, const char *prog, const char *path, char *line, ob_workload *wl,
                                   long *stride, long *pad) {
  char *hash = strchr(line, '#');
  if (hash) *hash = 0;
  char op[32], shape[256];
  long count = 1;
  *stride = 1;
  *pad = 0;
  int got = sscanf(line, "%31s %255s %ld %ld %ld", op, shape, stride, pad, &count);
  if (got < 2) return 0;
  if (ob_workload_parse(ctx, op, shape, wl) != OB_OK ||
      (got >= 3 && ob_workload_set(ctx, wl, "stride", *stride) != OB_OK) ||
      (got >= 4 && ob_workload_set(ctx, wl, "pad", *pad) != OB_OK)) {
    fprintf(stderr, "%s: %s: '%s %s': %s\n", prog, path, op, shape, ob_ctx_errmsg(ctx));
    return -1;
  }
  return 1;
}

/* /proc/loadavg's line (empty where it cannot be read). */
static inline void bench_loadavg(char *buf, size_t cap) {
  FILE *f = fopen("/proc/loadavg", "r");
  buf[0] = 0;
  if (f) {
    if (!fgets(buf, (int)cap, f)) buf[0] = 0;
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = 0;
}

#endif
