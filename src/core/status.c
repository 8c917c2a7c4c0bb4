/* status.c: status names, the assertion handler and the monotonic clock:
 * the stateless corner of core. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/core_impl.h"

/* Indexed by -status; the static assert keeps it in step with the enum. */
static const char *const ob_status_names[] = {
    "ok",
    "invalid argument",
    "out of memory",
    "I/O error",
    "parse error",
    "unsupported",
    "not found",
    "schedule error",
    "out of config space",
    "compile error",
    "timeout",
    "runtime error",
    "wrong answer",
    "system error",
    "busy",
    "over the launch limits",
};
_Static_assert(sizeof ob_status_names / sizeof ob_status_names[0] == OB_STATUS_COUNT,
               "ob_status_names out of step with ob_status");

const char *ob_status_str(ob_status st) {
  int i = -(int)st;
  if (i < 0 || i >= OB_STATUS_COUNT) return "unknown status";
  return ob_status_names[i];
}

void ob_assert_fail(const char *file, int line, const char *expr) {
  fprintf(stderr, "opbench: assertion failed at %s:%d: %s\n", file, line, expr);
  fflush(stderr);
  abort();
}

double ob_now_s(void) {
  struct timespec ts;
  /* CLOCK_MONOTONIC cannot fail with a valid pointer; no status to return. */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
