/* kernel.c: the pieces of module kernel that are neither building nor
 * timing: AutoTVM's error-class names and signal names for messages. */
#include <signal.h>
#include <stdio.h>

#include "opbench/kernel.h"
#include "kernel/kernel_impl.h"

const char *ob_kernel_signame(int sig, char buf[32]) {
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
