/* counters.c: hardware (and software) event counters through Linux's
 * perf_event_open, for the runner's worker (a counting pass after a
 * kernel's timing) and for ob_counters_probe.
 *
 * A set counts one thread: the worker opens one on every thread of the
 * pool that runs the kernel (each thread opens its own, from inside a
 * parallel loop), enables them all, runs the kernel, disables and sums.
 * (Counting by `inherit` would need the pool's threads to exit first, and
 * Linux folds a child's counts in after pthread_join can return.) Events a
 * machine cannot count (virtual machines
 * without a virtual PMU, perf_event_paranoid, seccomp) are left out and
 * named in a note; nothing fails for want of them. task-clock (a software
 * event, the CPU time of the counted threads) is always there where
 * perf_event_open is, so it is what the tests count. */
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "measure/measure_impl.h"

static const char *const k_names[OB_COUNTER_COUNT] = {
    [OB_COUNTER_CYCLES] = "cycles",
    [OB_COUNTER_INSTRUCTIONS] = "instructions",
    [OB_COUNTER_L1D_MISSES] = "l1d_misses",
    [OB_COUNTER_LLC_MISSES] = "llc_misses",
    [OB_COUNTER_TASK_CLOCK] = "task_clock_ns",
};

const char *ob_counter_name(ob_counter c) {
  return c >= 0 && c < OB_COUNTER_COUNT ? k_names[c] : "?";
}

static void event_attr(ob_counter c, struct perf_event_attr *a) {
  memset(a, 0, sizeof *a);
  a->size = sizeof *a;
  a->disabled = 1;
  a->exclude_kernel = 1; /* the kernel's own work, as an unprivileged user may count it */
  a->exclude_hv = 1;
  switch (c) {
  case OB_COUNTER_CYCLES:
    a->type = PERF_TYPE_HARDWARE;
    a->config = PERF_COUNT_HW_CPU_CYCLES;
    break;
  case OB_COUNTER_INSTRUCTIONS:
    a->type = PERF_TYPE_HARDWARE;
    a->config = PERF_COUNT_HW_INSTRUCTIONS;
    break;
  case OB_COUNTER_L1D_MISSES:
    a->type = PERF_TYPE_HW_CACHE;
    a->config = PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
    break;
  case OB_COUNTER_LLC_MISSES:
    a->type = PERF_TYPE_HW_CACHE;
    a->config = PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
    break;
  case OB_COUNTER_TASK_CLOCK:
  case OB_COUNTER_COUNT:
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_TASK_CLOCK;
    break;
  }
}

static const char *why(int err) {
  switch (err) {
  case ENOENT:
  case EOPNOTSUPP:
  case ENODEV:
    return "the CPU or virtual machine exposes no such counter (no PMU)";
  case EACCES:
  case EPERM:
    return "not permitted (kernel.perf_event_paranoid, or a seccomp filter)";
  case ENOSYS:
    return "perf_event_open is not available in this kernel";
  default:
    return strerror(err);
  }
}

void ob_counter_set_open(ob_counter_set *s, unsigned asked) {
  memset(s, 0, sizeof *s);
  for (int c = 0; c < OB_COUNTER_COUNT; c++) s->fd[c] = -1;
  s->asked = asked;
  const char *reason[OB_COUNTER_COUNT] = {0};
  for (int c = 0; c < OB_COUNTER_COUNT; c++) {
    if (!(asked & (1u << c))) continue;
    struct perf_event_attr a;
    event_attr((ob_counter)c, &a);
    long fd = syscall(SYS_perf_event_open, &a, 0 /* this thread */, -1 /* any CPU */, -1, 0);
    if (fd >= 0) {
      s->fd[c] = (int)fd;
      s->open |= 1u << c;
    } else {
      reason[c] = why(errno);
    }
  }
  /* "cycles, instructions: no PMU; ...": the events that share a reason, once */
  size_t off = 0;
  bool done[OB_COUNTER_COUNT] = {0};
  for (int c = 0; c < OB_COUNTER_COUNT; c++) {
    if (!reason[c] || done[c]) continue;
    for (int d = c; d < OB_COUNTER_COUNT; d++) {
      if (!reason[d] || done[d] || strcmp(reason[d], reason[c])) continue;
      done[d] = true;
      if (off < sizeof s->note)
        off += (size_t)snprintf(s->note + off, sizeof s->note - off, "%s%s",
                                d == c ? (off ? "; " : "") : ", ", k_names[d]);
    }
    if (off < sizeof s->note)
      off += (size_t)snprintf(s->note + off, sizeof s->note - off, ": %s", reason[c]);
  }
}

void ob_counter_set_enable(ob_counter_set *s, bool on) {
  for (int c = 0; c < OB_COUNTER_COUNT; c++)
    if (s->fd[c] >= 0) ioctl(s->fd[c], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

void ob_counter_set_reset(ob_counter_set *s) {
  for (int c = 0; c < OB_COUNTER_COUNT; c++)
    if (s->fd[c] >= 0) ioctl(s->fd[c], PERF_EVENT_IOC_RESET, 0);
}

void ob_counter_set_add(ob_counter_set *s, double sum[OB_COUNTER_COUNT]) {
  for (int c = 0; c < OB_COUNTER_COUNT; c++) {
    if (s->fd[c] < 0) continue;
    uint64_t v = 0;
    if (read(s->fd[c], &v, sizeof v) == (ssize_t)sizeof v) sum[c] += (double)v;
  }
}

void ob_counter_set_close(ob_counter_set *s) {
  for (int c = 0; c < OB_COUNTER_COUNT; c++) {
    if (s->fd[c] >= 0) close(s->fd[c]);
    s->fd[c] = -1;
  }
  s->open = 0;
}

unsigned ob_counters_probe(unsigned asked, char *note, size_t cap) {
  ob_counter_set s;
  ob_counter_set_open(&s, asked);
  unsigned open = s.open;
  if (note && cap) snprintf(note, cap, "%s", s.note);
  ob_counter_set_close(&s);
  return open;
}
