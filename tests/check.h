/* check.h: the minimal test harness every tests/test_*.c uses. A failed
 * CHECK prints file:line and the expression, counts, and the test goes on;
 * CHECK_DONE() prints "N passed, M failed" and returns the exit status. */
#ifndef OB_TESTS_CHECK_H
#define OB_TESTS_CHECK_H
#include <stdio.h>

static int ob_check_pass, ob_check_fail;
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
#define CHECK_DONE()                                                         \
  (printf("%d passed, %d failed\n", ob_check_pass, ob_check_fail),           \
   ob_check_fail ? 1 : 0)
#endif
