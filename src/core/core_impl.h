/* core_impl.h: helpers shared by the core sources and not exported. The
 * allocation wrappers abort instead of returning NULL: they serve the arena
 * and ob_str, whose contracts have no status to report OOM through. */
#ifndef OB_CORE_IMPL_H
#define OB_CORE_IMPL_H

#include <stdarg.h>
#include <stddef.h>

#include "opbench/core.h"

/* Print "opbench: out of memory (N bytes)" and abort. */
_Noreturn void ob_oom(size_t bytes);
void *ob_xmalloc(size_t bytes);
void *ob_xcalloc(size_t count, size_t size);
void *ob_xrealloc(void *p, size_t bytes);

#endif
