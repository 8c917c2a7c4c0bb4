/* kernel_impl.h: internals of module kernel shared with the modules above it
 * (measure's runner names signals the same way); not part of the public API,
 * hidden from the shared library's exports. */
#ifndef OPBENCH_KERNEL_IMPL_H
#define OPBENCH_KERNEL_IMPL_H

/* "SIGSEGV", "SIGABRT", ... for a signal number; "signal N" (written into
 * buf[32]) for numbers without a name. Returns a string that lives as long
 * as buf or forever. */
const char *ob_kernel_signame(int sig, char buf[32]);

#endif
