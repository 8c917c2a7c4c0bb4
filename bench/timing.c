/* timing.c (bench_timing): does the default timing protocol hold for
 * kernels of a microsecond, and what does it cost? A program, not a test.
 *
 * Workloads: a suite of small kernels (elementwise relu/add at tiny sizes,
 * pooling, small dense layers, depthwise convolutions at 7x7, the late
 * layers of MobileNet at batch 1) and the ResNet-18 conv2d suite
 * (../shared/data/resnet18_conv.txt, or --suite FILE), each at its default
 * config, built once and measured through ob_runner (the product's path),
 * three ways in the same run, one after the other per workload:
 *   old        number 1, repeat 10, min_repeat_ms 0, no stability rule
 *              (AutoTVM's x86 tutorials; opbench's protocol before issue 17);
 *   defaults   ob_timing_default(): adaptive number (1 ms floor), repeat 10,
 *              the stability rule (5 %), warm caches;
 *   reference  number calibrated to 100 ms per repeat, 30 repeats, no rule:
 *              the long measurement the others are judged against, taken
 *              in two halves of 15 repeats, one just before and one just
 *              after the defaults, their 30 costs pooled: the machine's
 *              speed drifts over minutes (other tenants of the host), and a
 *              reference centred on the measurement it judges cancels the
 *              drift instead of adding it to the distance.
 * Time is the runner's wall time per request (fill, warm-up, check and
 * timing: what a user waits for), after a first request that built the
 * kernel and computed the reference output.
 *
 * Prints the table, then the worst cases (largest distance to the
 * reference, largest CV), then the ratio lines with their bars:
 *   median CV with defaults <= 2 %,
 *   every median within 3 % of the reference,
 *   measurement time with defaults <= 2x the old protocol's on ResNet-18.
 * Exit status 1 when a bar is missed (2 on a setup failure). The load
 * average before and after, and per workload the machine's busy share while
 * the defaults and the reference were measured (about 50 % on an otherwise
 * idle 2-core machine: the measuring core), are printed: the figures are
 * only as quiet as the machine. And so is the host: a probe of the
 * measuring core (hostprobe.h) before and after the defaults and the
 * reference halves says, per workload, whether the host was slowing the core
 * then (the "host" column, x its calm speed), and the worst distance among
 * the workloads measured on a calm host is printed beside the bar's. A
 * workload whose measurements the probe saw slowed is measured again (all
 * three protocols) after waiting for a calm probe, up to --attempts times (3):
 * the bar judges the protocol, not the host's other tenants; the count of
 * such workloads and the time waited are printed, and --attempts 1 turns it
 * off.
 *
 * --quick: the small suite and the first 4 ResNet-18 layers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/ops.h"
#include "opbench/tune.h"

#include "bench_util.h"
#include "hostprobe.h"

#define MAX_WL 64
#define BAR_CV 0.02
#define BAR_DIFF 0.03
#define BAR_TIME 2.0

typedef struct wl_entry {
  char label[80];
  ob_workload wl;
  bool resnet;
  ob_task *task;
  ob_measure_result old, dflt, ref, ref2; /* ref: both halves pooled, after the run */
  double diff; /* |defaults - reference| / reference */
  double busy_dflt, busy_ref; /* the machine's busy % while each was measured */
  double host_dflt, host_ref;  /* the host probe's largest slowdown before/after each (1: calm) */
  int attempts;                /* measurements of the three protocols taken (> 1: the host was slowed) */
  double waited_s;             /* time spent waiting for a calm host before the retakes */
} wl_entry;

static const struct {
  const char *label, *op, *shape;
} k_small[] = {
    {"relu 16x4x4", "relu", "N=1,C=16,H=4,W=4"},
    {"add 64x8x8", "add", "N=1,C=64,H=8,W=8"},
    {"relu 64x56x56", "relu", "N=1,C=64,H=56,W=56"},
    {"maxpool 64x112 3x3/2", "pool2d",
     "N=1,C=64,H=112,W=112,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1"},
    {"global_avg_pool 512x7x7", "global_avg_pool", "N=1,C=512,H=7,W=7"},
    {"dense 1x256x256", "dense", "M=1,N=256,K=256"},
    {"dense 1x1000x512", "dense", "M=1,N=1000,K=512"},
    {"dw 960x7x7 3x3", "depthwise_conv2d", "N=1,C=960,H=7,W=7,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1"},
    {"dw 1024x7x7 3x3", "depthwise_conv2d", "N=1,C=1024,H=7,W=7,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1"},
};

/* The machine's busy share since `since` (aggregate /proc/stat jiffies:
 * busy / total); this process's own measuring core counts as busy, so on
 * an otherwise idle 2-core machine it reads about 50 %. */
typedef struct cpu_mark {
  long long busy, total;
} cpu_mark;

static cpu_mark cpu_now(void) {
  cpu_mark m = {0, 0};
  FILE *f = fopen("/proc/stat", "r");
  long long v[10] = {0};
  if (f) {
    if (fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8) {
      for (int i = 0; i < 8; i++) m.total += v[i];
      m.busy = m.total - v[3] - v[4]; /* idle, iowait */
    }
    fclose(f);
  }
  return m;
}

static double busy_since(cpu_mark a) {
  cpu_mark b = cpu_now();
  return b.total > a.total ? 100.0 * (double)(b.busy - a.busy) / (double)(b.total - a.total) : 0;
}


/* "conv2d  N=1,...  2  3  1" lines; '#' comments. */
static int read_suite(ob_ctx *ctx, const char *path, wl_entry *es, int n, int max, int limit) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "bench_timing: cannot read %s\n", path);
    return -1;
  }
  char line[512];
  int taken = 0;
  while (fgets(line, sizeof line, f) && n < max && (limit <= 0 || taken < limit)) {
    wl_entry *e = &es[n];
    memset(e, 0, sizeof *e);
    long stride, pad;
    int got = bench_suite_line(ctx, "bench_timing", path, line, &e->wl, &stride, &pad);
    if (got == 0) continue;
    if (got < 0) {
      fclose(f);
      return -1;
    }
    int64_t c = ob_workload_get(&e->wl, "C"), k = ob_workload_get(&e->wl, "K"),
            h = ob_workload_get(&e->wl, "H"), r = ob_workload_get(&e->wl, "R");
    snprintf(e->label, sizeof e->label, "r18 %lldx%lld->%lld %lldx%lld/%ld", (long long)c,
             (long long)h, (long long)k, (long long)r, (long long)r, stride);
    e->resnet = true;
    n++;
    taken++;
  }
  fclose(f);
  return n;
}

static bool measure(ob_ctx *ctx, ob_runner *runner, wl_entry *e, const ob_measure_opts *mo,
                    ob_measure_result *out) {
  ob_config cfg = ob_task_default_config(e->task);
  if (ob_measure_configs(ctx, e->task, runner, mo, &cfg, 1, out) != OB_OK) {
    fprintf(stderr, "bench_timing: %s: %s\n", e->label, ob_ctx_errmsg(ctx));
    return false;
  }
  if (out->error_no) {
    fprintf(stderr, "bench_timing: %s: error %d (%s): %s\n", e->label, out->error_no,
            ob_merr_str(out->error_no), out->message);
    return false;
  }
  return true;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* "1.234 us" with a unit that fits */
static const char *fmt_s(double s, char *buf) {
  if (s < 1e-6) snprintf(buf, 24, "%.2f ns", s * 1e9);
  else if (s < 1e-3) snprintf(buf, 24, "%.3f us", s * 1e6);
  else snprintf(buf, 24, "%.4f ms", s * 1e3);
  return buf;
}

int main(int argc, char **argv) {
  const char *suite = OB_SOURCE_DIR "/../shared/data/resnet18_conv.txt";
  bool quick = false;
  int max_attempts = 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--attempts") && i + 1 < argc && atoi(argv[i + 1]) >= 1) max_attempts = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--suite") && i + 1 < argc) suite = argv[++i];
    else {
      fprintf(stderr, "usage: bench_timing [--quick] [--suite FILE] [--attempts N (3; 1: no retakes)]\n");
      return 2;
    }
  }
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx) != OB_OK) return 2;
  static wl_entry es[MAX_WL];
  int n = 0;
  for (size_t i = 0; i < sizeof k_small / sizeof k_small[0]; i++) {
    wl_entry *e = &es[n];
    memset(e, 0, sizeof *e);
    snprintf(e->label, sizeof e->label, "%s", k_small[i].label);
    if (ob_workload_parse(ctx, k_small[i].op, k_small[i].shape, &e->wl) != OB_OK) {
      fprintf(stderr, "bench_timing: %s: %s\n", e->label, ob_ctx_errmsg(ctx));
      return 2;
    }
    n++;
  }
  n = read_suite(ctx, suite, es, n, MAX_WL, quick ? 4 : 0);
  if (n < 0) return 2;

  ob_runner *runner = NULL;
  if (ob_runner_new(ctx, &runner) != OB_OK) {
    fprintf(stderr, "bench_timing: %s\n", ob_ctx_errmsg(ctx));
    return 2;
  }
  bench_probe probe;
  if (!bench_probe_init(&probe, 0, 0.3)) { /* the runner measures on core 0 */
    fprintf(stderr, "bench_timing: out of memory\n");
    return 2;
  }
  ob_measure_opts dflt = ob_measure_opts_default();
  ob_measure_opts old = dflt;
  old.timing.number = 1;
  old.timing.repeat = 10;
  old.timing.min_repeat_ms = 0;
  old.timing.max_cv = 0;
  ob_measure_opts ref = dflt;
  ref.timing.number = 0;
  ref.timing.min_repeat_ms = 100;
  ref.timing.repeat = 15; /* x 2 halves */
  ref.timing.max_cv = 0;
  ref.timing.timeout_s = 120;
  ob_measure_opts prime_mo = old;
  prime_mo.timing.repeat = 1;

  char la[128];
  bench_loadavg(la, sizeof la);
  printf("bench_timing: %d workloads (%s), 1 thread; load average before: %s\n", n,
         quick ? "quick" : "full", la);
  printf("protocols: old = number 1, repeat 10, min_repeat_ms 0; defaults = adaptive number "
         "(floor %g ms), repeat %d, max CV %g %%, repeats more than %g %% off-CPU retaken; "
         "reference = 100 ms repeats x 30 (15 before and 15 after the defaults)\n",
         OB_TIMING_DEFAULT_FLOOR_MS, OB_TIMING_DEFAULT_REPEAT, OB_TIMING_DEFAULT_MAX_CV * 100,
         OB_TIMING_DEFAULT_MAX_OFFCPU * 100);
  printf("\n%-26s %12s | %12s %6s %8s %6s %3s %-9s %7s | %12s %7s %7s | %8s %8s | %s\n",
         "workload", "reference", "defaults", "CV %", "number", "reps", "rt", "flags", "diff %",
         "old", "CV %", "diff %", "t dflt", "t old", "busy % dflt/ref | host dflt/ref, attempts");
  int rc = 0;
  for (int i = 0; i < n; i++) {
    wl_entry *e = &es[i];
    if (ob_task_new(ctx, &e->wl, NULL, NULL, &e->task) != OB_OK) {
      fprintf(stderr, "bench_timing: %s: %s\n", e->label, ob_ctx_errmsg(ctx));
      rc = 2;
      goto done;
    }
    /* a first request builds the kernel and computes the reference output,
     * so that no protocol's time includes those */
    ob_measure_result prime;
    if (!measure(ctx, runner, e, &prime_mo, &prime)) {
      rc = 2;
      goto done;
    }
    /* the three protocols, bracketed by probes of the host; taken again
     * (after waiting for a calm probe) while the host was slowing the core,
     * at most --attempts times: the bar judges the protocol, not the
     * host's other tenants */
    for (e->attempts = 1;; e->attempts++) {
      if (!measure(ctx, runner, e, &old, &e->old)) {
        rc = 2;
        goto done;
      }
      /* reference half, defaults, reference half, each with the machine's
       * busy share while it ran and a probe of the host after it */
      const ob_measure_opts *mo[3] = {&ref, &dflt, &ref};
      ob_measure_result *out[3] = {&e->ref, &e->dflt, &e->ref2};
      double h[4], busy[3];
      h[0] = bench_probe_now(&probe, NULL);
      for (int k = 0; k < 3; k++) {
        cpu_mark m0 = cpu_now();
        if (!measure(ctx, runner, e, mo[k], out[k])) {
          rc = 2;
          goto done;
        }
        busy[k] = busy_since(m0);
        h[k + 1] = bench_probe_now(&probe, NULL);
      }
      e->busy_ref = 0.5 * (busy[0] + busy[2]);
      e->busy_dflt = busy[1];
      e->host_dflt = fmax(h[1], h[2]);
      e->host_ref = fmax(fmax(h[0], h[1]), fmax(h[2], h[3]));
      if (e->host_ref <= BENCH_PROBE_SLOWED || e->attempts == max_attempts) break;
      e->waited_s += bench_probe_wait_calm(&probe, BENCH_PROBE_SLOWED, 2.0);
    }
    /* pool the halves: 30 costs of 100 ms repeats around the defaults */
    {
      ob_timing *r = &e->ref.timing;
      const ob_timing *r2 = &e->ref2.timing;
      int k = r->ncosts;
      for (int j = 0; j < r2->ncosts && k < OB_TIMING_MAX_COSTS; j++) r->costs[k++] = r2->costs[j];
      r->ncosts = k;
      r->repeat += r2->repeat;
      r->retaken += r2->retaken;
      ob_timing_finish(r, 0);
      e->ref.run_s += e->ref2.run_s;
    }
    const ob_timing *d = &e->dflt.timing, *o = &e->old.timing, *r = &e->ref.timing;
    e->diff = fabs(d->median_s - r->median_s) / r->median_s;
    char b1[24], b2[24], b3[24], reps[16];
    snprintf(reps, sizeof reps, "%d%s", d->repeat, d->extra_repeats ? "*" : "");
    const char *flags = d->noisy && d->below_resolution ? "noisy,res"
                        : d->noisy                      ? "noisy"
                        : d->below_resolution           ? "res"
                                                        : "";
    printf("%-26s %12s | %12s %6.2f %8d %6s %3d %-9s %7.2f | %12s %7.2f %7.2f | %8.1f %8.1f | "
           "%3.0f/%3.0f | %4.2f%s/%4.2f%s %d\n",
           e->label, fmt_s(r->median_s, b1), fmt_s(d->median_s, b2), d->cv * 100, d->number, reps,
           d->retaken, flags, 100 * (d->median_s - r->median_s) / r->median_s, fmt_s(o->median_s, b3),
           o->cv * 100, 100 * (o->median_s - r->median_s) / r->median_s, e->dflt.run_s * 1e3,
           e->old.run_s * 1e3, e->busy_dflt, e->busy_ref, e->host_dflt,
           e->host_dflt > BENCH_PROBE_SLOWED ? "!" : " ", e->host_ref, e->host_ref > BENCH_PROBE_SLOWED ? "!" : " ",
           e->attempts);
    fflush(stdout);
  }

  /* worst cases */
  int by_diff[MAX_WL], by_cv[MAX_WL];
  for (int i = 0; i < n; i++) by_diff[i] = by_cv[i] = i;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (es[by_diff[j]].diff > es[by_diff[i]].diff) {
        int t = by_diff[i];
        by_diff[i] = by_diff[j];
        by_diff[j] = t;
      }
      if (es[by_cv[j]].dflt.timing.cv > es[by_cv[i]].dflt.timing.cv) {
        int t = by_cv[i];
        by_cv[i] = by_cv[j];
        by_cv[j] = t;
      }
    }
  printf("\nworst cases (defaults):\n");
  for (int k = 0; k < 3 && k < n; k++) {
    const wl_entry *e = &es[by_diff[k]];
    printf("  distance to reference #%d: %-26s %+.2f %% (CV %.2f %%, %d repeats, number %d)\n", k + 1,
           e->label, 100 * (e->dflt.timing.median_s - e->ref.timing.median_s) / e->ref.timing.median_s,
           e->dflt.timing.cv * 100, e->dflt.timing.repeat, e->dflt.timing.number);
  }
  for (int k = 0; k < 3 && k < n; k++) {
    const wl_entry *e = &es[by_cv[k]];
    printf("  CV #%d:                    %-26s %.2f %% (%d repeats, %s)\n", k + 1, e->label,
           e->dflt.timing.cv * 100, e->dflt.timing.repeat, e->dflt.timing.noisy ? "noisy" : "stable");
  }

  /* the bars */
  double cvs[MAX_WL], cvs_old[MAX_WL], worst = 0, t_dflt = 0, t_old = 0, t_ref = 0;
  int nnoisy = 0, nres = 0, nretaken = 0, nretaken_ref = 0;
  for (int i = 0; i < n; i++) {
    cvs[i] = es[i].dflt.timing.cv;
    cvs_old[i] = es[i].old.timing.cv;
    if (es[i].diff > worst) worst = es[i].diff;
    nnoisy += es[i].dflt.timing.noisy;
    nres += es[i].dflt.timing.below_resolution;
    nretaken += es[i].dflt.timing.retaken;
    nretaken_ref += es[i].ref.timing.retaken;
    if (es[i].resnet) {
      t_dflt += es[i].dflt.run_s;
      t_old += es[i].old.run_s;
      t_ref += es[i].ref.run_s;
    }
  }
  double med_cv = median_of(cvs, n), med_cv_old = median_of(cvs_old, n);
  int nslow_d = 0, nslow_r = 0, ncalm = 0, nretook = 0;
  double waited = 0;
  double worst_calm = 0;
  const char *worst_calm_wl = "-";
  for (int i = 0; i < n; i++) {
    bool sd = es[i].host_dflt > BENCH_PROBE_SLOWED, sr = es[i].host_ref > BENCH_PROBE_SLOWED;
    nslow_d += sd;
    nslow_r += sr;
    nretook += es[i].attempts > 1;
    waited += es[i].waited_s;
    if (!sd && !sr) {
      ncalm++;
      if (es[i].diff > worst_calm) worst_calm = es[i].diff, worst_calm_wl = es[i].label;
    }
  }
  double ratio = t_old > 0 ? t_dflt / t_old : 0;
  bench_loadavg(la, sizeof la);
  printf("\nload average after: %s\n", la);
  printf("flags with defaults: %d noisy, %d below 10x the timer overhead (%.1f ns)\n", nnoisy,
         nres, es[0].dflt.timing.timer_overhead_s * 1e9);
  printf("repeats retaken because the thread was off its CPU: defaults %d, reference %d\n",
         nretaken, nretaken_ref);
  printf("ResNet-18 measurement time: defaults %.3f s, old %.3f s, reference %.3f s\n", t_dflt,
         t_old, t_ref);
  printf("host probe (FMA, L1, L2 on the measuring core, x their calm speed; over %.2f: slowed): "
         "defaults of %d and references of %d of %d workloads measured on a slowed host; worst distance "
         "among the %d measured on a calm host: %.2f %% (%s)\n",
         BENCH_PROBE_SLOWED, nslow_d, nslow_r, n, ncalm, worst_calm * 100, worst_calm_wl);
  printf("workloads measured again because the host was slowing the core: %d (at most %d attempts each; "
         "%.1f s spent waiting for a calm probe)\n",
         nretook, max_attempts, waited);
  bool ok_cv = med_cv <= BAR_CV, ok_diff = worst <= BAR_DIFF, ok_time = ratio <= BAR_TIME;
  printf("median CV with defaults: %.2f %% (old protocol: %.2f %%); bar %.0f %%: %s\n",
         med_cv * 100, med_cv_old * 100, BAR_CV * 100, ok_cv ? "met" : "MISSED");
  printf("worst distance of a default median to the reference: %.2f %%; bar %.0f %%: %s\n",
         worst * 100, BAR_DIFF * 100, ok_diff ? "met" : "MISSED");
  printf("measurement time ratio defaults/old on ResNet-18: %.2f; bar %.1f: %s\n", ratio, BAR_TIME,
         ok_time ? "met" : "MISSED");
  if (!(ok_cv && ok_diff && ok_time)) rc = 1;
done:
  bench_probe_free(&probe);
  for (int i = 0; i < n; i++) ob_task_free(es[i].task);
  ob_runner_free(runner);
  ob_ctx_free(ctx);
  return rc;
}
