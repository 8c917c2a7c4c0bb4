/* target_impl.h: the layout of an ob_target. A target is one allocation,
 * immutable once ob_target_parse returns it, so handles are shared freely
 * (a task borrows its caller's; nothing but ob_target_free releases one). */
#ifndef OB_TARGET_IMPL_H
#define OB_TARGET_IMPL_H

#include "opbench/target.h"

struct ob_target {
  char str[192];          /* canonical text */
  char cpu[64];           /* llvm -mcpu value ("native" or a CPU name); "" for c */
  ob_target_facts facts;
};

#endif
