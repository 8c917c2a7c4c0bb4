/* str.c: growable malloc-backed string used to build source text, keys and
 * reports. The ob_str owns its buffer until ob_str_take hands it over. Out
 * of memory is sticky: the string is marked failed, keeps the text it had,
 * ignores later appends, and ob_str_take returns NULL (core.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

/* Make room for `extra` more bytes plus the terminator; false (and the
 * string failed) when that cannot be had. */
static bool ob_str_reserve(ob_str *s, size_t extra) {
  if (s->failed) return false;
  if (extra > SIZE_MAX / 4 - s->len) goto fail;
  size_t need = s->len + extra + 1;
  if (need <= s->cap) return true;
  size_t cap = s->cap ? s->cap : 64;
  while (cap < need) cap *= 2;
  if (!ob_ctx_alloc_ok(s->ctx)) goto fail;
  char *p = realloc(s->data, cap);
  if (!p) goto fail;
  s->data = p;
  if (s->cap == 0) s->data[0] = '\0';
  s->cap = cap;
  return true;
fail:
  s->failed = true;
  return false;
}

void ob_str_append(ob_str *s, const char *text) {
  OB_ASSERT(s && text);
  size_t n = strlen(text);
  if (!ob_str_reserve(s, n)) return;
  memcpy(s->data + s->len, text, n + 1);
  s->len += n;
}

void ob_str_appendf(ob_str *s, const char *fmt, ...) {
  OB_ASSERT(s && fmt);
  if (s->failed) return;
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  OB_ASSERT(n >= 0); /* only a bad format string makes vsnprintf fail */
  if (ob_str_reserve(s, (size_t)n)) {
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap2);
    s->len += (size_t)n;
  }
  va_end(ap2);
}

void ob_str_append_str(ob_str *s, const ob_str *t) {
  OB_ASSERT(s && t);
  if (t->failed) s->failed = true;
  else if (t->data) ob_str_append(s, t->data);
}

void ob_str_free(ob_str *s) {
  if (!s) return;
  free(s->data);
  s->data = NULL;
  s->len = s->cap = 0;
  s->failed = false;
}

char *ob_str_take(ob_str *s) {
  OB_ASSERT(s);
  char *p = NULL;
  if (!s->failed) p = s->data ? s->data : calloc(1, 1);
  else free(s->data);
  s->data = NULL;
  s->len = s->cap = 0;
  s->failed = false;
  return p;
}
