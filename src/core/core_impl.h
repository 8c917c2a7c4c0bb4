/* core_impl.h: helpers shared by the core sources and not exported. */
#ifndef OB_CORE_IMPL_H
#define OB_CORE_IMPL_H

#include <stdarg.h>
#include <stddef.h>

#include "opbench/core.h"

/* Counts one allocation against ctx's test limit (ob_ctx_set_alloc_limit):
 * false when it must fail. A NULL ctx never fails. */
bool ob_ctx_alloc_ok(ob_ctx *ctx);

#endif
