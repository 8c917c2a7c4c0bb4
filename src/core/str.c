/* str.c: growable malloc-backed string used to build source text, keys and
 * reports. The ob_str owns its buffer until ob_str_take hands it over. OOM
 * aborts: these strings are small and callers have no status to return. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

/* Make room for `extra` more bytes plus the terminator. */
static void ob_str_reserve(ob_str *s, size_t extra) {
  if (extra > SIZE_MAX / 4 - s->len) ob_oom(extra);
  size_t need = s->len + extra + 1;
  if (need <= s->cap) return;
  size_t cap = s->cap ? s->cap : 64;
  while (cap < need) cap *= 2;
  s->data = ob_xrealloc(s->data, cap);
  if (s->cap == 0) s->data[0] = '\0';
  s->cap = cap;
}

void ob_str_append(ob_str *s, const char *text) {
  OB_ASSERT(s && text);
  size_t n = strlen(text);
  ob_str_reserve(s, n);
  memcpy(s->data + s->len, text, n + 1);
  s->len += n;
}

void ob_str_appendf(ob_str *s, const char *fmt, ...) {
  OB_ASSERT(s && fmt);
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  OB_ASSERT(n >= 0); /* only a bad format string makes vsnprintf fail */
  ob_str_reserve(s, (size_t)n);
  vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  s->len += (size_t)n;
}

void ob_str_free(ob_str *s) {
  if (!s) return;
  free(s->data);
  s->data = NULL;
  s->len = s->cap = 0;
}

/* Never returns NULL: an untouched string yields an allocated "". */
char *ob_str_take(ob_str *s) {
  OB_ASSERT(s);
  char *p = s->data ? s->data : ob_xcalloc(1, 1);
  s->data = NULL;
  s->len = s->cap = 0;
  return p;
}
