/* timing.c: how the tool shows a timing record (kernel.h's ob_timing): the
 * protocol actually used, the stability rule's verdict, the resolution
 * flag and whether it was timed under an emulator, the same way in op,
 * bench and tune, in text and in --json. */
#include <math.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "opbench/db.h"

void cli_timing_json(cJSON *o, const ob_timing *t) {
  cJSON_AddNumberToObject(o, "number", t->number);
  cJSON_AddNumberToObject(o, "repeat", t->repeat);
  cJSON_AddNumberToObject(o, "repeats_kept", t->ncosts);
  if (isnan(t->min_repeat_ms)) cJSON_AddNullToObject(o, "min_repeat_ms");
  else cJSON_AddNumberToObject(o, "min_repeat_ms", t->min_repeat_ms);
  cJSON_AddBoolToObject(o, "flush", t->flush);
  cJSON_AddStringToObject(o, "cache", ob_db_cache_name(ob_db_cache_of(t))); /* warm, cold, cold-weights */
  cJSON_AddNumberToObject(o, "timer_overhead_ns", t->timer_overhead_s * 1e9);
  cJSON_AddBoolToObject(o, "below_resolution", t->below_resolution);
  cJSON_AddBoolToObject(o, "noisy", t->noisy);
  cJSON_AddNumberToObject(o, "extra_repeats", t->extra_repeats);
  cJSON_AddNumberToObject(o, "retaken", t->retaken);
  cJSON_AddBoolToObject(o, "emulated", t->emulated);
}

/* "12.3 ns", "4.56 us", "1.23 ms" */
static void fmt_time(char *buf, size_t cap, double s) {
  if (s < 1e-6) snprintf(buf, cap, "%.3g ns", s * 1e9);
  else if (s < 1e-3) snprintf(buf, cap, "%.3g us", s * 1e6);
  else snprintf(buf, cap, "%.4g ms", s * 1e3);
}

void cli_timing_text(const ob_timing *t, const ob_timing_opts *asked, int nthreads) {
  char ovh[32];
  fmt_time(ovh, sizeof ovh, t->timer_overhead_s);
  bool adaptive = asked->number == 0;
  printf("timing     threads %d, number %d (%s), repeat %d, min_repeat_ms %g, %s caches, "
         "timer overhead %s\n",
         nthreads, t->number, adaptive ? "adaptive" : "fixed", t->repeat, t->min_repeat_ms,
         !t->flush ? "warm" : t->flush_keep_first ? "weights cold (--flush-weights)" : "cold (--flush)", ovh);
  if (t->retaken > 0)
    printf("preempted  %d repeat%s retaken: the thread was off its CPU for more than %g %% of "
           "%s\n",
           t->retaken, t->retaken == 1 ? "" : "s", asked->max_offcpu * 100,
           t->retaken == 1 ? "it" : "each");
  int added = t->extra_repeats - t->retaken;
  if (added > 0)
    printf("stability  CV above %g %% after %d repeats: %d more taken; CV of the last %d: "
           "%.2f %%%s\n",
           asked->max_cv * 100, t->repeat - t->extra_repeats, added, t->ncosts, t->cv * 100,
           t->noisy ? " (still noisy: treat the median with care)" : "");
  else if (t->noisy)
    printf("stability  CV %.2f %% is above %g %% (no time left for more repeats): noisy\n",
           t->cv * 100, asked->max_cv * 100);
  if (t->emulated)
    printf("emulated   timed under the target's emulator: the kernel ran and its output was "
           "checked, but these times are not performance figures\n");
  if (t->below_resolution) {
    char med[32];
    fmt_time(med, sizeof med, t->median_s);
    printf("resolution median %s is below 10x the timer overhead (%s): near the timer's "
           "resolution\n",
           med, ovh);
  }
}

const char *cli_timing_flags(const ob_timing *t) {
  static const char *const flags[8] = {"",    "noisy",     "res",     "noisy,res",
                                       "emu", "noisy,emu", "res,emu", "noisy,res,emu"};
  return flags[(t->noisy ? 1 : 0) | (t->below_resolution ? 2 : 0) | (t->emulated ? 4 : 0)];
}
