/* maps.c: the two hash maps of the scheduler (open addressing, linear
 * probing, grown at half load): byte-string keys for interned unit
 * structures, names and the stage-cost cache; uint64 keys for the DP's
 * memo of states. Growth aborts on out-of-memory, as the arena does. */
#include <stdlib.h>

#include "sched/sched_impl.h"

static void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  OB_ASSERT(p != NULL);
  return p;
}

static uint64_t key_hash(const void *key, size_t len) {
  uint64_t h = ob_hash64(key, len, 0x5ced);
  return h ? h : 1;
}

void smap_init(smap *m, ob_arena *keys) {
  memset(m, 0, sizeof *m);
  m->arena = keys;
}

void smap_free(smap *m) {
  free(m->hash);
  free(m->key);
  free(m->len);
  free(m->val);
  memset(m, 0, sizeof *m);
}

static size_t slot_of(const smap *m, uint64_t h, const void *key, size_t len) {
  size_t mask = m->cap - 1, i = (size_t)h & mask;
  while (m->hash[i] && !(m->hash[i] == h && m->len[i] == len && !memcmp(m->key[i], key, len))) i = (i + 1) & mask;
  return i;
}

static void smap_grow(smap *m) {
  smap old = *m;
  m->cap = old.cap ? old.cap * 2 : 64;
  m->hash = xcalloc(m->cap, sizeof *m->hash);
  m->key = xcalloc(m->cap, sizeof *m->key);
  m->len = xcalloc(m->cap, sizeof *m->len);
  m->val = xcalloc(m->cap, sizeof *m->val);
  for (size_t i = 0; i < old.cap; i++) {
    if (!old.hash[i]) continue;
    size_t j = slot_of(m, old.hash[i], old.key[i], old.len[i]);
    m->hash[j] = old.hash[i];
    m->key[j] = old.key[i];
    m->len[j] = old.len[i];
    m->val[j] = old.val[i];
  }
  free(old.hash);
  free(old.key);
  free(old.len);
  free(old.val);
}

int64_t *smap_find(const smap *m, const void *key, size_t len) {
  if (!m->cap) return NULL;
  size_t i = slot_of(m, key_hash(key, len), key, len);
  return m->hash[i] ? &m->val[i] : NULL;
}

int64_t *smap_put(smap *m, const void *key, size_t len, int64_t v, bool *added) {
  if ((m->n + 1) * 2 > m->cap) smap_grow(m);
  uint64_t h = key_hash(key, len);
  size_t i = slot_of(m, h, key, len);
  if (added) *added = !m->hash[i];
  if (!m->hash[i]) {
    void *k = ob_arena_alloc(m->arena, len ? len : 1);
    memcpy(k, key, len);
    m->hash[i] = h;
    m->key[i] = k;
    m->len[i] = (uint32_t)len;
    m->val[i] = v;
    m->n++;
  }
  return &m->val[i];
}

void umap_init(umap *m) { memset(m, 0, sizeof *m); }

void umap_free(umap *m) {
  free(m->key);
  free(m->val);
  free(m->used);
  memset(m, 0, sizeof *m);
}

static size_t uslot(const umap *m, uint64_t key) {
  size_t mask = m->cap - 1, i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask;
  while (m->used[i] && m->key[i] != key) i = (i + 1) & mask;
  return i;
}

static void umap_grow(umap *m) {
  umap old = *m;
  m->cap = old.cap ? old.cap * 2 : 1024;
  m->key = xcalloc(m->cap, sizeof *m->key);
  m->val = xcalloc(m->cap, sizeof *m->val);
  m->used = xcalloc(m->cap, sizeof *m->used);
  for (size_t i = 0; i < old.cap; i++) {
    if (!old.used[i]) continue;
    size_t j = uslot(m, old.key[i]);
    m->used[j] = 1;
    m->key[j] = old.key[i];
    m->val[j] = old.val[i];
  }
  free(old.key);
  free(old.val);
  free(old.used);
}

int32_t *umap_find(const umap *m, uint64_t key) {
  if (!m->cap) return NULL;
  size_t i = uslot(m, key);
  return m->used[i] ? &m->val[i] : NULL;
}

int32_t *umap_put(umap *m, uint64_t key, int32_t v, bool *added) {
  if ((m->n + 1) * 2 > m->cap) umap_grow(m);
  size_t i = uslot(m, key);
  if (added) *added = !m->used[i];
  if (!m->used[i]) {
    m->used[i] = 1;
    m->key[i] = key;
    m->val[i] = v;
    m->n++;
  }
  return &m->val[i];
}
