/* measure_impl.h: internals shared by the builder and the runner (not part of
 * the public API; hidden from the shared library's exports). */
#ifndef OPBENCH_MEASURE_IMPL_H
#define OPBENCH_MEASURE_IMPL_H

/* "SIGSEGV", "SIGABRT", ... for a signal number; "signal N" (in a static
 * per-call-free form, written into buf[32]) for numbers without a name.
 * Returns a string that lives as long as buf or forever. */
const char *ob_measure_signame(int sig, char buf[32]);

#endif
