/* mem.c: big buffers on transparent huge pages (see ob_mem_alloc_big). */
#include <stdlib.h>
#include <sys/mman.h>

#include "core/core_impl.h"

void *ob_mem_alloc_big(size_t bytes) {
  if (bytes < OB_MEM_BIG_MIN) {
    size_t n = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, n ? n : 64);
  }
  size_t n;
  if (!ob_add_size(bytes, OB_MEM_HUGE_PAGE - 1, &n)) return NULL;
  n = n / OB_MEM_HUGE_PAGE * OB_MEM_HUGE_PAGE;
  void *p = aligned_alloc(OB_MEM_HUGE_PAGE, n);
  /* advice only: without THP (or with it off) the buffer stays on small pages */
  if (p) (void)madvise(p, n, MADV_HUGEPAGE);
  return p;
}

void ob_mem_free_big(void *p) { free(p); }
