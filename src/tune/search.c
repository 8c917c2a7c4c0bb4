/* search.c: finding a task's best config within a budget: every valid
 * config when the space fits, otherwise a random sample without repeats.
 * Candidates are measured with a short protocol in compile-parallel
 * batches; the top few are re-measured with the caller's full protocol and
 * the best median of that second measurement wins (one lucky short run does
 * not decide). The template's default config is measured first and always
 * re-measured beside the top few, whatever its short run said: a search can
 * then only improve on the default, and one unlucky short run of the
 * default (a slow episode of this VM lasts up to a second) cannot leave a
 * worse config as the best. With rounds, the re-measurement is repeated in
 * turns and each finalist keeps its fastest round, as bench's final rounds
 * judge. */
#include <stdlib.h>
#include <string.h>

#include "opbench/ops.h"
#include "opbench/tune.h"

typedef struct cand {
  ob_config cfg;
  double cost;
} cand;

static int cmp_cost(const void *x, const void *y) {
  const cand *a = x, *b = y;
  return (a->cost > b->cost) - (a->cost < b->cost);
}

static bool seen(const uint64_t *set, size_t cap, uint64_t v) {
  for (size_t h = (size_t)(v * 0x9E3779B97F4A7C15ULL) % cap;; h = (h + 1) % cap) {
    if (set[h] == v + 1) return true;
    if (!set[h]) return false;
  }
}

static void insert(uint64_t *set, size_t cap, uint64_t v) {
  size_t h = (size_t)(v * 0x9E3779B97F4A7C15ULL) % cap;
  while (set[h]) h = (h + 1) % cap;
  set[h] = v + 1;
}

ob_status ob_search_best(ob_ctx *ctx, ob_task *task, ob_measurer *runner, const ob_measure_opts *opts,
                         const ob_search_opts *so, ob_search_result *out) {
  memset(out, 0, sizeof *out);
  if (so->budget < 1) return ob_fail(ctx, OB_ERR_INVALID_ARG, "search budget must be >= 1 (got %d)", so->budget);
  double t0 = ob_now_s();
  const ob_space *sp = ob_task_space(task);
  uint64_t len = ob_space_len(sp);
  int budget = so->budget;
  bool exhaustive = len <= (uint64_t)budget;
  out->exhaustive = exhaustive;
  cand *cs = calloc((size_t)budget + 1, sizeof *cs);
  size_t setcap = (size_t)budget * 4 + 16;
  uint64_t *set = calloc(setcap, sizeof *set);
  ob_config *batch = calloc(64, sizeof *batch);
  ob_measure_result *res = calloc(64, sizeof *res), *rr = calloc(64, sizeof *rr);
  ob_config *rb = calloc(64, sizeof *rb); /* a round's order */
  ob_status st = OB_OK;
  if (!cs || !set || !batch || !res || !rr || !rb) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  ob_measure_opts quick = *opts;
  quick.timing.repeat = so->search_repeat > 0 ? so->search_repeat : 3;
  quick.timing.max_cv = 0; /* as the tuning loop's trials: the top-k re-measurement judges */
  int nc = 0, bsz = so->batch > 0 && so->batch <= 64 ? so->batch : 16;
  ob_rng rng = {so->seed ? so->seed : 1};
  uint64_t next = 0;         /* exhaustive: next index to try */
  int64_t tries = 0, max_tries = (int64_t)budget * 64 + 1000;
  /* the default config always competes */
  ob_config dflt = ob_task_default_config(task);
  batch[0] = dflt;
  insert(set, setcap, dflt.index);
  int nb = 1;
  for (;;) {
    while (nb < bsz && out->measured + nb < budget) {
      uint64_t idx;
      if (exhaustive) {
        if (next >= len) break;
        idx = next++;
      } else {
        if (tries++ > max_tries) break; /* a filter that rejects almost everything */
        idx = ob_rng_next(&rng) % len;
      }
      if (seen(set, setcap, idx) || !ob_space_is_valid(sp, idx)) continue;
      insert(set, setcap, idx);
      if (ob_space_get(ctx, sp, idx, &batch[nb]) == OB_OK) nb++;
    }
    if (!nb) break;
    st = ob_measurer_measure(runner, ctx, task, &quick, batch, nb, res);
    if (st) goto done;
    for (int i = 0; i < nb; i++) {
      out->measured++;
      if (res[i].error_no) {
        out->failed++;
        continue;
      }
      ob_log(ctx, OB_LOG_DEBUG, "search %s: config %llu%s: %.4f ms (short run)", ob_task_template(task),
             (unsigned long long)batch[i].index, batch[i].index == dflt.index ? " (default)" : "",
             res[i].timing.median_s * 1e3);
      cs[nc].cfg = batch[i];
      cs[nc++].cost = res[i].timing.median_s;
    }
    nb = 0;
    if (out->measured >= budget) break;
  }
  if (!nc) {
    st = ob_fail(ctx, OB_ERR_RUNTIME, "no config of template '%s' ran correctly (%d tried)",
                 ob_task_template(task), out->measured);
    goto done;
  }
  qsort(cs, (size_t)nc, sizeof *cs, cmp_cost);
  int top = so->top_k > 0 ? so->top_k : 3;
  if (top > nc) top = nc;
  if (top > 63) top = 63; /* the batch buffer holds 64: the default's slot stays free */
  bool dflt_in = false;
  for (int i = 0; i < top; i++) {
    batch[i] = cs[i].cfg;
    dflt_in |= cs[i].cfg.index == dflt.index;
  }
  int nre = top;
  for (int i = top; i < nc && !dflt_in; i++) /* the default ran correctly but ranked lower */
    if (cs[i].cfg.index == dflt.index) {
      batch[nre++] = dflt;
      dflt_in = true;
    }
  out->default_remeasured = dflt_in;
  /* rounds > 1: the finalists are re-measured in turn, the order reversed
   * every other round, and each keeps its fastest round (a round: the
   * median of its repeats). The host slows down in windows of up to
   * seconds; one such window over one finalist's single re-measurement
   * left a 25 % slower config the best (F(6x6) over the default F(4x4) on
   * 56x56 at 2 threads: 729 against 968 GFLOPS in the final rounds). */
  int rounds = so->rounds > 1 ? (so->rounds < 16 ? so->rounds : 16) : 1;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < nre; i++) rb[i] = batch[r % 2 ? nre - 1 - i : i];
    st = ob_measurer_measure(runner, ctx, task, opts, rb, nre, rr);
    if (st) goto done;
    for (int i = 0; i < nre; i++) {
      int j = r % 2 ? nre - 1 - i : i; /* rr[i] is batch[j]'s */
      if (r == 0 || (!rr[i].error_no && (res[j].error_no || rr[i].timing.median_s < res[j].timing.median_s)))
        res[j] = rr[i];
    }
  }
  int best = -1;
  for (int i = 0; i < nre; i++) {
    if (res[i].error_no) continue;
    ob_log(ctx, OB_LOG_DEBUG, "search %s: config %llu%s: %.4f ms (re-measured%s)", ob_task_template(task),
           (unsigned long long)batch[i].index, batch[i].index == dflt.index ? " (default)" : "",
           res[i].timing.median_s * 1e3, rounds > 1 ? ", fastest round" : "");
    if (batch[i].index == dflt.index) out->default_result = res[i];
    if (best < 0 || res[i].timing.median_s < res[best].timing.median_s) best = i;
  }
  if (best < 0) {
    st = ob_fail(ctx, OB_ERR_RUNTIME, "the best configs of template '%s' failed when re-measured: %s",
                 ob_task_template(task), res[0].message);
    goto done;
  }
  out->best = batch[best];
  out->best_result = res[best];
  out->seconds = ob_now_s() - t0;
done:
  free(cs);
  free(set);
  free(batch);
  free(res);
  free(rr);
  free(rb);
  return st;
}
