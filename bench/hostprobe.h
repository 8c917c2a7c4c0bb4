/* hostprobe.h: is the host slowing this core right now? (header only;
 * bench/ is not the library.) A virtual machine's core shares its L1, L2
 * and ports with whatever the host runs on the sibling hyperthread, and its
 * L3 with every tenant: invisible from inside (no steal, the thread stays on
 * its CPU), yet it moves every timing by up to 1.3x for phases of tens of
 * milliseconds to seconds. Three probes that need different parts of a core
 * (FMA chains in registers, a 24 KiB read from L1, a 1.5 MiB read from L2)
 * are timed a few times on the measuring core; each probe's median against
 * the fastest median it has had in this process (its calm speed) says how
 * slowed the core is. bench_hostprobe prints their spread over seconds;
 * bench_timing and bench_profile probe before and after each measurement so
 * that their tables say which figures were taken on a slowed host. */
#ifndef OB_BENCH_HOSTPROBE_H
#define OB_BENCH_HOSTPROBE_H

#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opbench/core.h"
#include "opbench/kernel.h"

typedef float bench_v16 __attribute__((vector_size(64)));

/* AVX-512 where the core has it (an ifunc picks), as the kernels use it */
#if defined(__x86_64__)
#define BENCH_PROBE_FN __attribute__((noinline, target_clones("avx512f", "default")))
#else
#define BENCH_PROBE_FN __attribute__((noinline))
#endif

/* 10 independent chains: the FMA's latency hidden, the ports busy. */
BENCH_PROBE_FN static float bench_probe_fma(int iters) {
  bench_v16 a[10], b, c;
  for (int i = 0; i < 16; i++) {
    b[i] = 0.999f;
    c[i] = 0.001f;
  }
  for (int j = 0; j < 10; j++) a[j] = b * (float)(j + 1);
  for (int k = 0; k < iters; k++)
    for (int j = 0; j < 10; j++) a[j] = a[j] * b + c;
  bench_v16 s = a[0];
  for (int j = 1; j < 10; j++) s += a[j];
  float r = 0;
  for (int i = 0; i < 16; i++) r += s[i];
  return r;
}

/* nvec vectors read `reps` times, a multiply-add per loaded vector into 4
 * accumulators (the loads, not the adds, set the pace). */
BENCH_PROBE_FN static float bench_probe_read(const bench_v16 *w, size_t nvec, int reps) {
  bench_v16 acc[4] = {{0}}, x;
  for (int i = 0; i < 16; i++) x[i] = 0.5f;
  for (int r = 0; r < reps; r++)
    for (size_t i = 0; i + 3 < nvec; i += 4)
      for (int j = 0; j < 4; j++) acc[j] += w[i + (size_t)j] * x;
  bench_v16 s = acc[0] + acc[1] + acc[2] + acc[3];
  float t = 0;
  for (int i = 0; i < 16; i++) t += s[i];
  return t;
}

enum { BENCH_PROBES = 3, BENCH_PROBE_L1_BYTES = 24 << 10, BENCH_PROBE_L2_BYTES = 1536 << 10 };
static const char *const bench_probe_names[BENCH_PROBES] = {"fma", "L1", "L2"};

typedef struct bench_probe {
  bench_v16 *buf;              /* the L2 probe's buffer; the L1 probe reads its start */
  int core;                    /* the core probed (the measurements' core) */
  double calm[BENCH_PROBES];   /* each probe's fastest median so far */
  volatile float sink;
} bench_probe;

/* The core's three probe times now: each the median of 7 runs, the thread
 * moved to p->core for the time (and back). */
static inline void bench_probe_times(bench_probe *p, double t[BENCH_PROBES]) {
  cpu_set_t old, one;
  bool pinned = sched_getaffinity(0, sizeof old, &old) == 0;
  CPU_ZERO(&one);
  CPU_SET(p->core, &one);
  pinned = pinned && sched_setaffinity(0, sizeof one, &one) == 0;
  double v[BENCH_PROBES][7];
  for (int r = 0; r < 7; r++)
    for (int k = 0; k < BENCH_PROBES; k++) {
      double a = ob_now_s();
      p->sink += k == 0   ? bench_probe_fma(600)
                 : k == 1 ? bench_probe_read(p->buf, BENCH_PROBE_L1_BYTES / 64, 16)
                          : bench_probe_read(p->buf, BENCH_PROBE_L2_BYTES / 64, 1);
      v[k][r] = ob_now_s() - a;
    }
  if (pinned) sched_setaffinity(0, sizeof old, &old);
  for (int k = 0; k < BENCH_PROBES; k++) ob_stats(v[k], 7, &t[k], NULL, NULL);
}

/* How slowed the core is now: the largest of the three probes' ratios to
 * their calm speed (1.0: calm), each ratio in r when r is not NULL. */
static inline double bench_probe_now(bench_probe *p, double r[BENCH_PROBES]) {
  double t[BENCH_PROBES], worst = 0;
  bench_probe_times(p, t);
  for (int k = 0; k < BENCH_PROBES; k++) {
    if (t[k] < p->calm[k]) p->calm[k] = t[k];
    double x = t[k] / p->calm[k];
    if (r) r[k] = x;
    if (x > worst) worst = x;
  }
  return worst;
}

/* Allocates the buffer and finds the calm speeds over about `seconds`
 * (the fastest of many medians: a calm phase within them is enough).
 * false when out of memory. */
static inline bool bench_probe_init(bench_probe *p, int core, double seconds) {
  memset(p, 0, sizeof *p);
  p->core = core;
  p->buf = aligned_alloc(64, BENCH_PROBE_L2_BYTES);
  if (!p->buf) return false;
  float *f = (float *)p->buf;
  for (size_t i = 0; i < BENCH_PROBE_L2_BYTES / 4; i++) f[i] = 1e-3f * (float)(i % 7);
  for (int k = 0; k < BENCH_PROBES; k++) p->calm[k] = 1e30;
  double t0 = ob_now_s();
  do bench_probe_now(p, NULL);
  while (ob_now_s() - t0 < seconds);
  return true;
}

/* Probes every 20 ms until the core reads calm (at most `slowed`) or
 * max_s has passed; the seconds waited. */
static inline double bench_probe_wait_calm(bench_probe *p, double slowed, double max_s) {
  double t0 = ob_now_s();
  struct timespec nap = {0, 20 * 1000 * 1000};
  while (bench_probe_now(p, NULL) > slowed && ob_now_s() - t0 < max_s) nanosleep(&nap, NULL);
  return ob_now_s() - t0;
}

static inline void bench_probe_free(bench_probe *p) {
  free(p->buf);
  p->buf = NULL;
}

#define BENCH_PROBE_SLOWED 1.10 /* a probe 10 % over its calm speed: the host is slowing the core */

#endif
