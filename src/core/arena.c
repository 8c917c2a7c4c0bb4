/* arena.c: bump allocator for objects that share one lifetime (an IR, a
 * schedule, a batch of candidates). The arena owns every chunk; callers never
 * free individual allocations. Every allocation comes zeroed: each is
 * cleared as it is handed out, not its chunk when allocated (a feature
 * lowering of a tuner uses a few KiB of three 32-64 KiB chunks, and calloc
 * clearing them was 8.5 % of test_xgb's time). A large block, which gets a
 * chunk of its own, comes from calloc: fresh pages, zero without being
 * touched (a model's weights made with zero_weights stay untouched, and
 * clearing them by hand took `opbench models` from 0.26 to 1.47 s). Out of memory returns NULL
 * and marks the arena failed for good (core.h says what callers do with it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

enum { OB_ARENA_ALIGN = 16, OB_ARENA_DEFAULT_CHUNK = 64 * 1024 };

typedef struct ob_chunk {
  struct ob_chunk *next;
  size_t used, cap; /* bytes of data[] */
  _Alignas(OB_ARENA_ALIGN) unsigned char data[];
} ob_chunk;

struct ob_arena {
  ob_chunk *head; /* the chunk being filled; large blocks sit behind it */
  size_t chunk_bytes;
  ob_ctx *ctx; /* where a test's allocation limit is counted; may be NULL */
  bool failed;
};

static ob_chunk *ob_chunk_new(size_t cap, bool zeroed) {
  if (cap > SIZE_MAX / 2) return NULL;
  ob_chunk *c = zeroed ? calloc(1, sizeof(ob_chunk) + cap) : malloc(sizeof(ob_chunk) + cap);
  if (c) *c = (ob_chunk){.cap = cap};
  return c;
}

ob_arena *ob_arena_new(ob_ctx *ctx, size_t chunk_bytes) {
  if (chunk_bytes > SIZE_MAX / 4 || !ob_ctx_alloc_ok(ctx)) return NULL;
  ob_arena *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  if (chunk_bytes < 256) chunk_bytes = chunk_bytes ? 256 : OB_ARENA_DEFAULT_CHUNK;
  a->chunk_bytes = (chunk_bytes + OB_ARENA_ALIGN - 1) & ~(size_t)(OB_ARENA_ALIGN - 1);
  a->ctx = ctx;
  a->head = ob_chunk_new(a->chunk_bytes, false);
  if (!a->head) {
    free(a);
    return NULL;
  }
  return a;
}

void ob_arena_free(ob_arena *a) {
  if (!a) return;
  ob_chunk *c = a->head;
  while (c) {
    ob_chunk *next = c->next;
    free(c);
    c = next;
  }
  free(a);
}

bool ob_arena_failed(const ob_arena *a) { return a && a->failed; }

static void *ob_arena_fail(ob_arena *a) {
  a->failed = true;
  return NULL;
}

void *ob_arena_alloc(ob_arena *a, size_t bytes) {
  OB_ASSERT(a);
  if (a->failed) return NULL; /* failed for good: nothing half-built gets finished */
  if (bytes > SIZE_MAX / 2 || !ob_ctx_alloc_ok(a->ctx)) return ob_arena_fail(a);
  /* Zero-byte requests still get a distinct pointer. */
  size_t size = (bytes + OB_ARENA_ALIGN - 1) & ~(size_t)(OB_ARENA_ALIGN - 1);
  if (size == 0) size = OB_ARENA_ALIGN;

  ob_chunk *c = a->head;
  if (c->cap - c->used >= size) {
    void *p = c->data + c->used;
    c->used += size;
    return memset(p, 0, size);
  }
  /* A large block gets its own chunk, linked behind the head so the space
   * left in the current chunk stays usable for later small requests. */
  if (size > a->chunk_bytes / 4) {
    ob_chunk *big = ob_chunk_new(size, true);
    if (!big) return ob_arena_fail(a);
    big->used = size;
    big->next = c->next;
    c->next = big;
    return big->data;
  }
  ob_chunk *fresh = ob_chunk_new(a->chunk_bytes, false);
  if (!fresh) return ob_arena_fail(a);
  fresh->next = c;
  a->head = fresh;
  fresh->used = size;
  return memset(fresh->data, 0, size);
}

char *ob_arena_strdup(ob_arena *a, const char *s) {
  OB_ASSERT(a && (s || a->failed)); /* NULL only as an earlier failure's result */
  if (!s) return NULL;
  size_t n = strlen(s);
  char *p = ob_arena_alloc(a, n + 1);
  if (p) memcpy(p, s, n); /* the terminator is already zero */
  return p;
}

char *ob_arena_sprintf(ob_arena *a, const char *fmt, ...) {
  OB_ASSERT(a && fmt);
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  OB_ASSERT(n >= 0); /* only a bad format string makes vsnprintf fail */
  char *p = ob_arena_alloc(a, (size_t)n + 1);
  if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}
