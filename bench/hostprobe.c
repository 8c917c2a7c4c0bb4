/* bench_hostprobe: how much does the host disturb this machine's cores right
 * now? A virtual machine's core shares its L1, L2 and load ports with
 * whatever the host runs on the sibling hyperthread, and its L3 and memory
 * with every tenant; our own processes cannot see that (no steal, the thread
 * stays on its CPU), yet it moves every timing. This program times, in a
 * loop for a few seconds, four probes that need different parts of a core:
 *   fma    independent FMA chains in registers (the execution ports)
 *   L1     24 KiB read 16 times with a multiply-add per vector (L1 and loads)
 *   L2     1.5 MiB read once (the L2)
 *   L3     6 MiB read once (beyond the L2: the host's L3 and memory)
 * and prints, per probe, how the medians of short windows spread against
 * the probe's calm speed (the 10th percentile of the windows), the share of
 * windows slowed by more than 5 % and 20 %, the longest slowed phase, and a
 * timeline. Run it beside (before and after) a benchmark whose figures you
 * will quote: a benchmark taken while the L1/L2 probes are slowed measures
 * the host. The final line is the share of windows in which the L2 probe
 * was slowed by more than 5 %.
 *
 *   bench_hostprobe [--seconds S (20)] [--window-ms W (20)]
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostprobe.h"

enum { NPROBE = 4, MAXWIN = 100000 };

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  double seconds = 20, window_ms = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--window-ms") && i + 1 < argc) window_ms = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_hostprobe [--seconds S] [--window-ms W]\n");
      return 2;
    }
  }
  if (!(seconds >= 1 && seconds <= 600) || !(window_ms >= 1 && window_ms <= 10000)) {
    fprintf(stderr, "bench_hostprobe: --seconds must be 1..600 and --window-ms 1..10000\n");
    return 2;
  }
  const char *name[NPROBE] = {"fma (registers)", "L1 24 KiB x16", "L2 1.5 MiB", "L3 6 MiB"};
  size_t bytes[NPROBE] = {0, 24u << 10, 1536u << 10, 6u << 20};
  int reps[NPROBE] = {0, 16, 1, 1};
  bench_v16 *buf[NPROBE] = {0};
  for (int p = 1; p < NPROBE; p++) {
    buf[p] = aligned_alloc(64, bytes[p]);
    if (!buf[p]) {
      fprintf(stderr, "bench_hostprobe: out of memory\n");
      return 1;
    }
    float *f = (float *)buf[p];
    for (size_t i = 0; i < bytes[p] / 4; i++) f[i] = 1e-3f * (float)(i % 7);
  }
  /* one iteration times every probe once; the windows take the median of
   * each probe's times within window_ms */
  size_t cap = (size_t)(seconds * 20000) + 16;
  double *ts = malloc(sizeof(double) * cap), *tt = malloc(sizeof(double) * cap * NPROBE);
  double *tmp = malloc(sizeof(double) * cap);
  static double wm[MAXWIN][NPROBE];
  if (!ts || !tt || !tmp) {
    fprintf(stderr, "bench_hostprobe: out of memory\n");
    return 1;
  }
  volatile float sink = 0;
  size_t k = 0;
  double t0 = ob_now_s();
  while (k < cap && ob_now_s() - t0 < seconds) {
    ts[k] = ob_now_s() - t0;
    for (int p = 0; p < NPROBE; p++) {
      double a = ob_now_s();
      sink += p == 0 ? bench_probe_fma(600) : bench_probe_read(buf[p], bytes[p] / 64, reps[p]);
      tt[k * NPROBE + (size_t)p] = ob_now_s() - a;
    }
    k++;
  }
  int nw = 0;
  for (size_t i = 0; i < k && nw < MAXWIN;) {
    size_t j = i;
    while (j < k && ts[j] < ts[i] + window_ms * 1e-3) j++;
    for (int p = 0; p < NPROBE; p++) {
      size_t c = 0;
      for (size_t q = i; q < j; q++) tmp[c++] = tt[q * NPROBE + (size_t)p];
      qsort(tmp, c, sizeof(double), cmp_d);
      wm[nw][p] = tmp[c / 2];
    }
    nw++;
    i = j;
  }
  printf("bench_hostprobe: %zu iterations over %.1f s, %d windows of %.0f ms; each window's median against the "
         "probe's calm speed (10th percentile of the windows)\n\n",
         k, seconds, nw, window_ms);
  printf("%-16s %10s | %6s %6s %6s %6s | %7s %7s | %s\n", "probe", "calm", "p50", "p90", "p99", "max", ">5 %",
         ">20 %", "longest slowed phase");
  double calm[NPROBE], slow5[NPROBE];
  for (int p = 0; p < NPROBE; p++) {
    for (int w = 0; w < nw; w++) tmp[w] = wm[w][p];
    qsort(tmp, (size_t)nw, sizeof(double), cmp_d);
    calm[p] = tmp[nw / 10];
    int s5 = 0, s20 = 0, run = 0, longest = 0;
    for (int w = 0; w < nw; w++) {
      bool slow = wm[w][p] > 1.05 * calm[p];
      s5 += slow;
      s20 += wm[w][p] > 1.2 * calm[p];
      run = slow ? run + 1 : 0;
      if (run > longest) longest = run;
    }
    slow5[p] = (double)s5 / nw;
    printf("%-16s %7.2f us | %6.3f %6.3f %6.3f %6.3f | %6.1f%% %6.1f%% | %.0f ms\n", name[p], calm[p] * 1e6,
           tmp[nw / 2] / calm[p], tmp[nw * 9 / 10] / calm[p], tmp[nw * 99 / 100] / calm[p], tmp[nw - 1] / calm[p],
           100 * slow5[p], 100.0 * s20 / nw, longest * window_ms);
  }
  /* timeline: one mark per second for the L1 and L2 probes */
  int per = (int)(1000 / window_ms);
  if (per < 1) per = 1;
  for (int p = 1; p <= 2; p++) {
    printf("\n%-16s per second ('.' calm, 'o' 5-20 %% slower, 'X' more):\n  ", name[p]);
    for (int w = 0; w < nw; w += per) {
      int c = 0;
      for (int q = w; q < w + per && q < nw; q++) tmp[c++] = wm[q][p];
      qsort(tmp, (size_t)c, sizeof(double), cmp_d);
      double r = tmp[c / 2] / calm[p];
      putchar(r > 1.2 ? 'X' : r > 1.05 ? 'o' : '.');
    }
    putchar('\n');
  }
  printf("\nhost disturbance: the L2 probe slowed by more than 5 %% in %.1f %% of %.0f-ms windows "
         "(L1 %.1f %%, fma %.1f %%, L3 %.1f %%)\n",
         100 * slow5[2], window_ms, 100 * slow5[1], 100 * slow5[0], 100 * slow5[3]);
  printf("ratio slowed windows / all windows (L2 probe): %.3f\n", slow5[2]);
  (void)sink;
  for (int p = 1; p < NPROBE; p++) free(buf[p]);
  free(ts);
  free(tt);
  free(tmp);
  return 0;
}
