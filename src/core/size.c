/* size.c: checked sizes for values that come from user input. Callers
 * multiply shapes through ob_check_numel instead of writing a * b * c, so a
 * shape whose product does not fit is refused with the limit named instead
 * of wrapping into a small number that passes every later check. */
#include <stdio.h>

#include "core/core_impl.h"

ob_status ob_check_numel(ob_ctx *ctx, const char *what, int ndim, const int64_t *dims,
                         int64_t *numel) {
  OB_ASSERT(ndim >= 0 && (dims || ndim == 0));
  int64_t n = 1;
  bool over = false;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: dimension %d is %lld (must be >= 1)", what, i,
                     (long long)dims[i]);
    if (!over && !ob_mul_i64(n, dims[i], &n)) over = true;
  }
  if (over || n > OB_MAX_TENSOR_ELEMS) {
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < ndim && len < sizeof list; i++) {
      int k = snprintf(list + len, sizeof list - len, "%s%lld", i ? " x " : "", (long long)dims[i]);
      if (k < 0) break;
      len += (size_t)k;
    }
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "%s: %s elements, more than the limit of %lld (2^31) elements per tensor", what,
                   list, (long long)OB_MAX_TENSOR_ELEMS);
  }
  if (numel) *numel = n;
  return OB_OK;
}

ob_status ob_check_attr(ob_ctx *ctx, const char *what, int64_t v) {
  if (v >= -OB_MAX_ATTR && v <= OB_MAX_ATTR) return OB_OK;
  return ob_fail(ctx, OB_ERR_INVALID_ARG,
                 "%s = %lld is out of range (attributes are limited to -%lld..%lld, 2^31-1)",
                 what, (long long)v, (long long)OB_MAX_ATTR, (long long)OB_MAX_ATTR);
}
