/* timeloop.c: THE timing loop (ob_time_loop), its option normalisation,
 * statistics, timer overhead and cache flush. The runner's worker, the
 * baseline and the emulator harness all time through this file.
 *
 * Contract for the harness: this file uses standard C17, libc and libm only
 * (plus compiler intrinsics for the cache flush) and includes nothing of
 * opbench but kernel.h, whose own includes are core.h's standard headers. It
 * calls no opbench function, so `cc -c -Iinclude src/kernel/timeloop.c`
 * compiles it for any target and the object links against libc alone (the
 * ctest timeloop_standalone does exactly that). Keep it so: no ob_ctx, no
 * OB_ASSERT, no allocation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "opbench/kernel.h"

#define CACHE_LINE 64
#define MIN_BUDGET_S 0.010   /* automatic stability budget, at least */
#define CALIB_AIM 1.25       /* calibration aims this far above the floor */
#define CALIB_MAX_GROWTH 100.0

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The calling thread's CPU time (POSIX; NAN where the clock is missing).
 * Wall time minus this is time the thread spent off its CPU: preempted by
 * another process, or asleep waiting for a pool worker that was. */
double ob_thread_cpu_s(void) {
#ifdef CLOCK_THREAD_CPUTIME_ID
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
  return NAN;
}

ob_timing_opts ob_timing_default(void) {
  ob_timing_opts t;
  memset(&t, 0, sizeof t);
  t.number = 0;
  t.repeat = OB_TIMING_DEFAULT_REPEAT;
  t.min_repeat_ms = -1;
  t.flush = false;
  t.max_cv = OB_TIMING_DEFAULT_MAX_CV;
  t.stability_budget_s = -1;
  t.timeout_s = OB_TIMING_DEFAULT_TIMEOUT_S;
  t.max_offcpu = OB_TIMING_DEFAULT_MAX_OFFCPU;
  return t;
}

ob_timing_opts ob_timing_normalize(const ob_timing_opts *o, double target_floor_ms) {
  if (!(target_floor_ms >= 0)) target_floor_ms = OB_TIMING_DEFAULT_FLOOR_MS;
  ob_timing_opts r = o ? *o : ob_timing_default();
  if (r.number < 0) r.number = 0;
  if (r.repeat < 1) r.repeat = OB_TIMING_DEFAULT_REPEAT;
  if (r.repeat > OB_TIMING_MAX_COSTS) r.repeat = OB_TIMING_MAX_COSTS;
  if (!(r.min_repeat_ms >= 0)) r.min_repeat_ms = r.number == 0 ? target_floor_ms : 0;
  if (!(r.max_cv > 0)) r.max_cv = 0;
  if (!(r.max_offcpu > 0)) r.max_offcpu = 0;
  if (!(r.timeout_s > 0)) r.timeout_s = OB_TIMING_DEFAULT_TIMEOUT_S;
  if (!(r.timer_overhead_s > 0)) r.timer_overhead_s = 0;
  if (isnan(r.stability_budget_s)) r.stability_budget_s = -1;
  return r;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void ob_stats(const double *x, int n, double *median, double *trimmed_mean, double *cv) {
  /* Timings hold at most OB_TIMING_MAX_COSTS samples (sorted on the stack);
   * longer lists (imported logs) are sorted in a heap copy. */
  double stackbuf[OB_TIMING_MAX_COSTS];
  double *s = n <= OB_TIMING_MAX_COSTS ? stackbuf : malloc((size_t)n * sizeof *s);
  if (n < 1 || !x || !s) {
    if (median) *median = NAN;
    if (trimmed_mean) *trimmed_mean = NAN;
    if (cv) *cv = NAN;
    return;
  }
  memcpy(s, x, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += s[i];
  double mean = sum / n, var = 0;
  for (int i = 0; i < n; i++) var += (s[i] - mean) * (s[i] - mean);
  var /= n;
  if (median) *median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  if (trimmed_mean) *trimmed_mean = n > 2 ? (sum - s[0] - s[n - 1]) / (n - 2) : mean;
  if (cv) *cv = mean != 0 ? sqrt(var) / mean : 0;
  if (s != stackbuf) free(s);
}

void ob_timing_finish(ob_timing *t, double max_cv) {
  if (t->ncosts < 1) return;
  ob_stats(t->costs, t->ncosts, &t->median_s, &t->mean_s, &t->cv);
  t->below_resolution = t->timer_overhead_s > 0 &&
                        t->median_s < OB_TIMING_RESOLUTION_FACTOR * t->timer_overhead_s;
  t->noisy = max_cv > 0 && t->cv > max_cv;
}

double ob_timer_overhead(void) {
  /* Reads in a row: the mean gap is what one read costs; the best of a few
   * runs discards runs hit by an interrupt. */
  double best = INFINITY;
  for (int run = 0; run < 5; run++) {
    enum { READS = 1000 };
    double t0 = mono_s(), t = t0;
    for (int i = 0; i < READS; i++) t = mono_s();
    double per = (t - t0) / READS;
    if (per > 0 && per < best) best = per;
  }
  return isfinite(best) ? best : 0;
}

void ob_cache_flush(const void *p, size_t bytes) {
  const char *c = p;
#if defined(__x86_64__) || defined(__i386__)
  for (size_t o = 0; o < bytes; o += CACHE_LINE) _mm_clflush(c + o);
  _mm_mfence();
#elif defined(__aarch64__)
  for (size_t o = 0; o < bytes; o += CACHE_LINE) __asm__ volatile("dc civac, %0" ::"r"(c + o) : "memory");
  __asm__ volatile("dsb ish" ::: "memory");
#else
  (void)c, (void)bytes;
#endif
}

/* ---- the loop ------------------------------------------------------------------ */

typedef struct loop {
  const ob_timing_opts *o;
  ob_time_call_fn call;
  ob_time_flush_fn flush;
  void *user;
  bool offcpu_check; /* the real clock, and max_offcpu > 0 */
} loop;

static double now(const loop *L) { return L->o->clock ? L->o->clock(L->user) : mono_s(); }

/* One group of `number` calls; *el gets the timed seconds and *off the
 * part of them the calling thread spent off its CPU (0 when not checked).
 * Returns the first failing call's code, or 0. */
static int group(const loop *L, int number, double *el, double *off) {
  double cpu = 0;
  *off = 0;
  if (L->o->flush) {
    double sum = 0;
    for (int k = 0; k < number; k++) {
      if (L->flush) L->flush(L->user);
      double c0 = L->offcpu_check ? ob_thread_cpu_s() : 0;
      double t0 = now(L);
      int rc = L->call(L->user);
      sum += now(L) - t0;
      if (L->offcpu_check) cpu += ob_thread_cpu_s() - c0;
      if (rc) return rc;
    }
    *el = sum;
  } else {
    double c0 = L->offcpu_check ? ob_thread_cpu_s() : 0;
    double t0 = now(L);
    for (int k = 0; k < number; k++) {
      int rc = L->call(L->user);
      if (rc) return rc;
    }
    *el = now(L) - t0;
    if (L->offcpu_check) cpu = ob_thread_cpu_s() - c0;
  }
  /* Both clocks are read around the calls, so the gap is the calls' own
   * off-CPU time plus a clock read: far below the 1 % threshold. */
  if (L->offcpu_check && isfinite(cpu) && *el > cpu) *off = *el - cpu;
  return 0;
}

/* A repeat during which the calling thread was off its CPU for more than
 * max_offcpu of its time measured the scheduler, not the kernel. */
static bool disturbed(const loop *L, double el, double off) {
  return L->offcpu_check && el > 0 && off > L->o->max_offcpu * el;
}

/* The next count when a group of `number` calls took el < floor seconds:
 * aim CALIB_AIM above the floor from the rate seen, growing at least x1.5
 * (el may be one clock tick) and at most x100 per step. */
static int grow(int number, double el, double floor_s) {
  double f = el > 0 ? floor_s * CALIB_AIM / el : CALIB_MAX_GROWTH;
  if (f < 1.5) f = 1.5;
  if (f > CALIB_MAX_GROWTH) f = CALIB_MAX_GROWTH;
  double n = ceil(number * f);
  return n > OB_TIMING_NUMBER_MAX ? OB_TIMING_NUMBER_MAX : (int)n;
}

/* One kept repeat: groups until one lasts at least the floor (growing
 * *number for good) and, while *retakes_left allows, until one was not
 * disturbed (each retake uses one up and counts in *retaken); its per-call
 * cost goes to *cost. */
static int one_repeat(const loop *L, int *number, double floor_s, double deadline, double *cost,
                      int *retakes_left, int *retaken) {
  for (;;) {
    double el = 0, off = 0;
    int rc = group(L, *number, &el, &off);
    if (rc) return rc;
    if (now(L) > deadline) return OB_TIME_DEADLINE;
    if (el >= floor_s || *number >= OB_TIMING_NUMBER_MAX) {
      if (disturbed(L, el, off) && *retakes_left > 0) {
        (*retakes_left)--;
        (*retaken)++;
        continue;
      }
      *cost = el / *number;
      return 0;
    }
    *number = grow(*number, el, floor_s);
  }
}

int ob_time_loop(const ob_timing_opts *o_in, double deadline_s, ob_time_call_fn call,
                 ob_time_flush_fn flush, void *user, ob_timing *out) {
  ob_timing_opts o = ob_timing_normalize(o_in, -1);
  o.clock = o_in ? o_in->clock : NULL;
  loop L = {&o, call, flush, user, o.clock == NULL && o.max_offcpu > 0};
  memset(out, 0, sizeof *out);
  const double floor_s = o.min_repeat_ms * 1e-3;
  out->min_repeat_ms = o.min_repeat_ms;
  out->flush = o.flush;
  out->timer_overhead_s = o.timer_overhead_s > 0 ? o.timer_overhead_s : ob_timer_overhead();
  int number = o.number > 0 ? o.number : 1;
  double all[OB_TIMING_MAX_COSTS];
  int taken = 0, retaken = 0, retakes_left = o.repeat;
  double t_rep = now(&L);

  /* Calibration: groups until one lasts the floor. The shorter ones are
   * discarded (more warm-up); the one that lasts the floor is a repeat like
   * any other, so a kernel longer than the floor costs no extra call. */
  if (floor_s > 0) {
    for (;;) {
      double el = 0, off = 0, t0 = now(&L);
      int rc = group(&L, number, &el, &off);
      if (rc) return rc;
      if (now(&L) > deadline_s) return OB_TIME_DEADLINE;
      if (el >= floor_s || number >= OB_TIMING_NUMBER_MAX) {
        t_rep = t0;
        if (disturbed(&L, el, off) && retakes_left > 0) {
          retakes_left--; /* one_repeat below takes it again */
          retaken++;
          break;
        }
        all[taken++] = el / number;
        if (o.between && (rc = o.between(o.between_user)) != 0) return rc;
        break;
      }
      number = grow(number, el, floor_s);
    }
  }

  /* The repeats. */
  for (; taken < o.repeat; taken++) {
    int rc = one_repeat(&L, &number, floor_s, deadline_s, &all[taken], &retakes_left, &retaken);
    if (!rc && o.between) rc = o.between(o.between_user);
    if (rc) return rc;
  }

  /* Stability: more repeats while the last `repeat` costs spread too much.
   * A repeat is only started when, at the pace so far, it ends within the
   * budget and before the deadline. */
  double t_ext = now(&L);
  double budget = o.stability_budget_s >= 0 ? o.stability_budget_s : t_ext - t_rep;
  if (o.stability_budget_s < 0 && budget < MIN_BUDGET_S) budget = MIN_BUDGET_S;
  double per_repeat = (t_ext - t_rep) / o.repeat;
  for (;;) {
    double cv;
    ob_stats(all + taken - o.repeat, o.repeat, NULL, NULL, &cv);
    if (!(o.max_cv > 0) || cv <= o.max_cv || taken >= OB_TIMING_MAX_COSTS) break;
    double t = now(&L);
    if (t - t_ext + per_repeat > budget || t + per_repeat >= deadline_s) break;
    int rc = one_repeat(&L, &number, floor_s, deadline_s, &all[taken], &retakes_left, &retaken);
    if (!rc && o.between) rc = o.between(o.between_user);
    if (rc) return rc;
    taken++;
  }

  out->ncosts = o.repeat;
  memcpy(out->costs, all + taken - o.repeat, (size_t)o.repeat * sizeof all[0]);
  out->number = number;
  out->repeat = taken + retaken;
  out->extra_repeats = taken + retaken - o.repeat;
  out->retaken = retaken;
  ob_timing_finish(out, o.max_cv);
  return 0;
}
