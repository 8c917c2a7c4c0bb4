/* check.h: the minimal test harness every tests/test_*.c uses. A failed
 * CHECK prints file:line and the expression, counts, and the test goes on.
 * CHECK_SKIP(...) says why a part cannot run here (no second core, a tool
 * missing) and counts it. CHECK_DONE() prints "N passed, M failed, K
 * skipped" and returns the exit status: 1 if a check failed or if no check
 * was made at all (a test that asserts nothing fails), else 77 if a part was
 * skipped (CMake sets SKIP_RETURN_CODE 77, so ctest reports a skip, not a
 * pass), else 0.
 *
 * The counters are weak definitions so that an executable built from
 * several files (test_ops.c + test_ops2.c) shares one set. */
#ifndef OB_TESTS_CHECK_H
#define OB_TESTS_CHECK_H
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { OB_CHECK_SKIP_CODE = 77 };

/* Build and run timeouts for tests that compile and run real kernels. The
 * library's 10 s (AutoTVM's) guard against hangs; on a loaded machine a
 * heavily unrolled kernel can take longer to compile, and a test must not
 * fail for that (test_measure tests the timeouts themselves, with a fake
 * compiler and a hanging kernel; ctest's TIMEOUT bounds each test). */
#define OB_TEST_TIMEOUT_S 300.0

/* Zoo models an ASan build leaves to the release build, which checks
 * them: those of 100 M+ random weights (vgg-16, bert-base-uncased, gpt2:
 * making, packing and checking them takes minutes under ASan), and with
 * by_reference also those whose naive reference runs dominate there
 * (nasnet-a, randwire). Neither adds a code path the lighter models lack.
 * Always false outside ASan. */
static inline bool ob_test_asan_leaves(const char *model, bool by_reference) {
#if defined(__SANITIZE_ADDRESS__)
  static const char *const heavy[] = {"vgg-16", "bert-base-uncased", "gpt2", "nasnet-a", "randwire"};
  for (int i = 0; i < (by_reference ? 5 : 3); i++)
    if (!strcmp(model, heavy[i])) return true;
#else
  (void)model;
  (void)by_reference;
#endif
  return false;
}

__attribute__((weak)) int ob_check_pass, ob_check_fail, ob_check_skip;

#define CHECK(x)                                                             \
  do {                                                                       \
    if (x) {                                                                 \
      ob_check_pass++;                                                       \
    } else {                                                                 \
      ob_check_fail++;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #x);  \
    }                                                                        \
  } while (0)
#define CHECK_MSG(x, ...)                                                    \
  do {                                                                       \
    if (x) {                                                                 \
      ob_check_pass++;                                                       \
    } else {                                                                 \
      ob_check_fail++;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #x);  \
      fprintf(stderr, __VA_ARGS__);                                          \
      fputc('\n', stderr);                                                   \
    }                                                                        \
  } while (0)
/* A part of the test that cannot run on this machine: printf-style reason. */
#define CHECK_SKIP(...)                                                      \
  do {                                                                       \
    ob_check_skip++;                                                         \
    printf("SKIP %s:%d: ", __FILE__, __LINE__);                              \
    printf(__VA_ARGS__);                                                     \
    putchar('\n');                                                           \
  } while (0)

static inline int ob_check_done(void) {
  printf("%d passed, %d failed, %d skipped\n", ob_check_pass, ob_check_fail, ob_check_skip);
  if (ob_check_fail) return 1;
  if (ob_check_pass == 0 && ob_check_skip == 0) {
    fprintf(stderr, "no check was made: a test that asserts nothing fails\n");
    return 1;
  }
  return ob_check_skip ? OB_CHECK_SKIP_CODE : 0;
}
#define CHECK_DONE() ob_check_done()
#endif
