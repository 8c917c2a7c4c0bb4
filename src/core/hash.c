/* hash.c: content hashing (XXH64, for cache keys and host fingerprints) and
 * the splitmix64 generator that fills test and benchmark inputs. XXH64 is
 * written out here rather than linked so keys never change with a library
 * version; it matches the reference implementation bit for bit. */
#include <string.h>

#include "core/core_impl.h"

#define OB_P1 0x9E3779B185EBCA87ull
#define OB_P2 0xC2B2AE3D27D4EB4Full
#define OB_P3 0x165667B19E3779F9ull
#define OB_P4 0x85EBCA77C2B2AE63ull
#define OB_P5 0x27D4EB2F165667C5ull

static inline uint64_t ob_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads so a key is the same on every host. */
static inline uint64_t ob_read64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline uint32_t ob_read32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

static inline uint64_t ob_xxh_round(uint64_t acc, uint64_t in) {
  acc += in * OB_P2;
  acc = ob_rotl64(acc, 31);
  return acc * OB_P1;
}

static inline uint64_t ob_xxh_merge(uint64_t acc, uint64_t v) {
  acc ^= ob_xxh_round(0, v);
  return acc * OB_P1 + OB_P4;
}

uint64_t ob_hash64(const void *data, size_t len, uint64_t seed) {
  OB_ASSERT(data || len == 0);
  const unsigned char *p = data;
  const unsigned char *end = p + len;
  uint64_t h;

  if (len >= 32) {
    uint64_t v1 = seed + OB_P1 + OB_P2, v2 = seed + OB_P2, v3 = seed, v4 = seed - OB_P1;
    const unsigned char *limit = end - 32;
    do {
      v1 = ob_xxh_round(v1, ob_read64(p));
      v2 = ob_xxh_round(v2, ob_read64(p + 8));
      v3 = ob_xxh_round(v3, ob_read64(p + 16));
      v4 = ob_xxh_round(v4, ob_read64(p + 24));
      p += 32;
    } while (p <= limit);
    h = ob_rotl64(v1, 1) + ob_rotl64(v2, 7) + ob_rotl64(v3, 12) + ob_rotl64(v4, 18);
    h = ob_xxh_merge(h, v1);
    h = ob_xxh_merge(h, v2);
    h = ob_xxh_merge(h, v3);
    h = ob_xxh_merge(h, v4);
  } else {
    h = seed + OB_P5;
  }
  h += (uint64_t)len;

  while (end - p >= 8) {
    h ^= ob_xxh_round(0, ob_read64(p));
    h = ob_rotl64(h, 27) * OB_P1 + OB_P4;
    p += 8;
  }
  if (end - p >= 4) {
    h ^= (uint64_t)ob_read32(p) * OB_P1;
    h = ob_rotl64(h, 23) * OB_P2 + OB_P3;
    p += 4;
  }
  while (p < end) {
    h ^= (uint64_t)*p * OB_P5;
    h = ob_rotl64(h, 11) * OB_P1;
    p++;
  }

  /* Final avalanche: every input bit reaches every output bit. */
  h ^= h >> 33;
  h *= OB_P2;
  h ^= h >> 29;
  h *= OB_P3;
  h ^= h >> 32;
  return h;
}

void ob_hash_hex(uint64_t h, char out[17]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; i--) {
    out[i] = digits[h & 0xf];
    h >>= 4;
  }
  out[16] = '\0';
}

static inline uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* 24 random bits give an odd numerator k in (-2^24, 2^24); k / 2^24 is
 * exact in float, symmetric about 0, inside (-1, 1) and never zero, so
 * tests never see the zeros that hide indexing bugs. */
static inline float unit_float(uint64_t z) {
  int32_t u = (int32_t)(z >> 40);
  int32_t k = 2 * u - (1 << 24) + 1;
  return (float)k * 0x1p-24f;
}

uint64_t ob_rng_next(ob_rng *r) { return splitmix(&r->s); }

float ob_rng_float(ob_rng *r) { return unit_float(splitmix(&r->s)); }

/* One call instead of a call per element: making the zoo's random weights
 * (up to 138 M of them for vgg-16) was 17 % of test_runtime's profile, and
 * the fill takes 1.8-2.6 ns an element against 4.9-7.1 through
 * ob_rng_float (2^25 floats, 5 rounds). */
void ob_rng_fill(ob_rng *r, float *p, int64_t n) {
  uint64_t s = r->s;
  for (int64_t i = 0; i < n; i++) p[i] = unit_float(splitmix(&s));
  r->s = s;
}
