/* collab.c: collaboration tuning. Two operators that will run together
 * are tuned for the pair rather than each for itself: a config that is
 * fastest alone can be slow beside a partner that takes the shared cache
 * or memory bandwidth, and the makespan of the pair is what a parallel
 * stage waits for. Every joint trial is a co-run measurement
 * (ob_profile_corun_pair); the independent way is the tuning loop's,
 * measured alone, for comparison. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/predict.h"

#define MAXB 64
#define TOPK 3

/* Keeps the TOPK least times (ascending) with their configs. */
static void keep_top(ob_config *top, double *top_s, ob_config c, double s) {
  for (int i = 0; i < TOPK; i++)
    if (s < top_s[i]) {
      for (int j = TOPK - 1; j > i; j--) {
        top_s[j] = top_s[j - 1];
        top[j] = top[j - 1];
      }
      top_s[i] = s;
      top[i] = c;
      return;
    }
}

static void as_result(const ob_corun_pair *p, bool side_a, ob_task *task, ob_measure_result *r) {
  memset(r, 0, sizeof *r);
  r->error_no = p->error_no;
  snprintf(r->message, sizeof r->message, "%s", p->message);
  double s = side_a ? p->a_s : p->b_s;
  if (!r->error_no && !(s > 0)) r->error_no = OB_MERR_UNKNOWN;
  if (r->error_no) return;
  r->timing.median_s = r->timing.mean_s = s;
  r->timing.ncosts = 1;
  r->timing.costs[0] = s;
  r->timing.number = 1;
  r->gflops = ob_workload_flops(ob_task_workload(task)) / s / 1e9;
}

/* The independent way for one side: the tuner's batches measured alone. */
static ob_status tune_alone(ob_ctx *ctx, ob_task *task, ob_runner *runner, const ob_collab_opts *o,
                            const ob_measure_opts *mo, const char *label, ob_config *best, double *best_s,
                            ob_collab_result *out) {
  ob_tuner_opts to = {.seed = o->seed};
  ob_tuner *tu = NULL;
  ob_status st = ob_tuner_new(ctx, o->tuner, task, &to, &tu);
  if (st) return st;
  ob_config cfgs[MAXB];
  ob_measure_result *res = calloc(MAXB, sizeof *res);
  if (!res) {
    ob_tuner_free(tu);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  *best_s = INFINITY;
  ob_config top[TOPK];
  double top_s[TOPK] = {INFINITY, INFINITY, INFINITY};
  for (int done = 0; done < o->trials && ob_tuner_has_next(tu);) {
    int want = o->trials - done < o->batch ? o->trials - done : o->batch, got = 0;
    if ((st = ob_tuner_next_batch(tu, want, cfgs, &got)) || got == 0) break;
    if ((st = ob_measure_configs(ctx, task, runner, mo, cfgs, got, res))) break;
    if ((st = ob_tuner_update(tu, cfgs, res, got))) break;
    for (int i = 0; i < got; i++) {
      out->measured++;
      if (res[i].error_no) {
        out->failed++;
        continue;
      }
      keep_top(top, top_s, cfgs[i], res[i].timing.median_s);
    }
    done += got;
    if (o->log)
      fprintf(o->log, "independent %s: %d/%d trials, best alone %.4f ms\n", label, done, o->trials, top_s[0] * 1e3);
  }
  /* the few best measured again, as the tuning loop confirms its best: a
   * search's minimum is partly luck */
  int nt = 0;
  while (nt < TOPK && isfinite(top_s[nt])) nt++;
  if (!st && nt && !(st = ob_measure_configs(ctx, task, runner, mo, top, nt, res)))
    for (int i = 0; i < nt; i++)
      if (!res[i].error_no && res[i].timing.median_s < *best_s) {
        *best_s = res[i].timing.median_s;
        *best = top[i];
      }
  free(res);
  ob_tuner_free(tu);
  if (st) return st;
  if (!isfinite(*best_s))
    return ob_fail(ctx, OB_ERR_RUNTIME, "collaboration tuning: no config of %s ran correctly alone (%d trials)",
                   label, o->trials);
  return OB_OK;
}

static ob_status pair(ob_ctx *ctx, ob_runner *runner, const ob_target *t, const ob_collab_opts *o, ob_task *a,
                      const ob_config *ca, ob_task *b, const ob_config *cb, ob_corun_pair *out) {
  ob_corun_side sa = {.task = a, .cfg = ca, .cores = o->a.cores, .nthreads = o->a.nthreads};
  ob_corun_side sb = {.task = b, .cfg = cb, .cores = o->b.cores, .nthreads = o->b.nthreads};
  return ob_profile_corun_pair(ctx, runner, t, &o->a, &sa, &sb, out);
}

/* The joint way: A's batches beside B's best so far, then B's beside A's. */
static ob_status tune_joint(ob_ctx *ctx, ob_task *a, ob_task *b, ob_runner *runner, const ob_target *t,
                            const ob_collab_opts *o, ob_collab_result *out) {
  ob_tuner_opts to = {.seed = o->seed};
  ob_tuner *tu[2] = {NULL, NULL};
  ob_task *task[2] = {a, b};
  ob_status st = ob_tuner_new(ctx, o->tuner, a, &to, &tu[0]);
  if (!st) st = ob_tuner_new(ctx, o->tuner, b, &to, &tu[1]);
  ob_measure_result *res = calloc(MAXB, sizeof *res);
  ob_corun_pair *pr = calloc(MAXB, sizeof *pr);
  if (!st && (!res || !pr)) st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  /* each side's current partner config: its best beside the other so far,
   * the template's default before any */
  ob_config cur[2] = {ob_task_default_config(a), ob_task_default_config(b)};
  double cur_s[2] = {INFINITY, INFINITY}, best_ms = INFINITY;
  ob_config top_a[TOPK], top_b[TOPK];
  double top_ms[TOPK] = {INFINITY, INFINITY, INFINITY};
  int done[2] = {0, 0};
  for (int side = 0; !st && (done[0] < o->trials || done[1] < o->trials); side ^= 1) {
    if (done[side] >= o->trials || !ob_tuner_has_next(tu[side])) {
      if (done[side ^ 1] >= o->trials || !ob_tuner_has_next(tu[side ^ 1])) break;
      continue;
    }
    ob_config cfgs[MAXB];
    int want = o->trials - done[side] < o->batch ? o->trials - done[side] : o->batch, got = 0;
    if ((st = ob_tuner_next_batch(tu[side], want, cfgs, &got))) break;
    if (got == 0) {
      done[side] = o->trials;
      continue;
    }
    /* built together first (parallel, into the kernel cache): each pair's
     * own build then finds them there */
    ob_build_report *rep = calloc((size_t)got, sizeof *rep);
    if (!rep) {
      st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
      break;
    }
    st = ob_build_configs(ctx, task[side], side ? &o->b : &o->a, cfgs, got, rep);
    free(rep);
    if (st) break;
    for (int i = 0; i < got && !st; i++) {
      const ob_config *ca = side ? &cur[0] : &cfgs[i], *cb = side ? &cfgs[i] : &cur[1];
      st = pair(ctx, runner, t, o, a, ca, b, cb, &pr[i]);
      if (st) break;
      as_result(&pr[i], side == 0, task[side], &res[i]);
      out->measured++;
      if (res[i].error_no) {
        out->failed++;
        continue;
      }
      if (pr[i].makespan_s < best_ms) best_ms = pr[i].makespan_s;
      for (int k = 0; k < TOPK; k++)
        if (pr[i].makespan_s < top_ms[k]) {
          for (int j = TOPK - 1; j > k; j--) {
            top_ms[j] = top_ms[j - 1];
            top_a[j] = top_a[j - 1];
            top_b[j] = top_b[j - 1];
          }
          top_ms[k] = pr[i].makespan_s;
          top_a[k] = *ca;
          top_b[k] = *cb;
          break;
        }
      double s = res[i].timing.median_s;
      if (s < cur_s[side]) {
        cur_s[side] = s;
        cur[side] = cfgs[i];
      }
    }
    if (st) break;
    if ((st = ob_tuner_update(tu[side], cfgs, res, got))) break;
    done[side] += got;
    if (o->log)
      fprintf(o->log, "joint %s: %d/%d trials beside the other's best, best pair makespan %.4f ms\n",
              side ? "B" : "A", done[side], o->trials, best_ms * 1e3);
  }
  /* the few best pairs measured together again; the least makespan wins */
  double conf = INFINITY;
  for (int k = 0; !st && k < TOPK && isfinite(top_ms[k]); k++) {
    ob_corun_pair p;
    if ((st = pair(ctx, runner, t, o, a, &top_a[k], b, &top_b[k], &p))) break;
    if (!p.error_no && p.makespan_s < conf) {
      conf = p.makespan_s;
      out->joint_a = top_a[k];
      out->joint_b = top_b[k];
    }
  }
  if (!st && !isfinite(conf)) best_ms = INFINITY;
  free(res);
  free(pr);
  ob_tuner_free(tu[0]);
  ob_tuner_free(tu[1]);
  if (st) return st;
  if (!isfinite(best_ms))
    return ob_fail(ctx, OB_ERR_RUNTIME, "collaboration tuning: no pair ran correctly together (%d trials)",
                   out->measured);
  return OB_OK;
}

static int by_makespan(const void *x, const void *y) {
  const ob_corun_pair *p = x, *q = y;
  return (p->makespan_s > q->makespan_s) - (p->makespan_s < q->makespan_s);
}

ob_status ob_collab_tune(ob_ctx *ctx, ob_task *a, ob_task *b, ob_runner *runner, const ob_target *t,
                         const ob_collab_opts *oi, ob_collab_result *out) {
  OB_ASSERT(a && b && runner && oi && out);
  memset(out, 0, sizeof *out);
  ob_collab_opts o = *oi;
  if (!o.tuner) o.tuner = "xgb";
  if (o.trials <= 0) o.trials = 32;
  if (o.batch <= 0) o.batch = 8;
  if (o.batch > MAXB) o.batch = MAXB;
  if (o.finals <= 0) o.finals = 5;
  if (o.finals > 15) o.finals = 15;
  for (int i = 0; i < o.a.nthreads; i++)
    for (int j = 0; j < o.b.nthreads; j++) {
      int ca = o.a.cores ? o.a.cores[i] : i, cb = o.b.cores ? o.b.cores[j] : j;
      if (ca == cb)
        return ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "collaboration tuning: the two operators' core sets share core %d (they must be disjoint)", ca);
    }
  double t0 = ob_now_s();
  ob_status st = tune_alone(ctx, a, runner, &o, &o.a, "A", &out->indep_a, &out->indep_alone_a_s, out);
  if (!st) st = tune_alone(ctx, b, runner, &o, &o.b, "B", &out->indep_b, &out->indep_alone_b_s, out);
  if (!st) st = tune_joint(ctx, a, b, runner, t, &o, out);
  if (st) return st;
  /* the finals, alternately so that a drift of the machine's load hits both */
  ob_corun_pair fi[15], fj[15];
  int ni = 0, nj = 0;
  for (int r = 0; r < o.finals; r++) {
    ob_corun_pair p;
    if ((st = pair(ctx, runner, t, &o, a, &out->indep_a, b, &out->indep_b, &p))) return st;
    if (!p.error_no) fi[ni++] = p;
    if ((st = pair(ctx, runner, t, &o, a, &out->joint_a, b, &out->joint_b, &p))) return st;
    if (!p.error_no) fj[nj++] = p;
  }
  if (!ni || !nj)
    return ob_fail(ctx, OB_ERR_RUNTIME, "collaboration tuning: the %s pair failed in every final run",
                   !ni ? "independent" : "joint");
  qsort(fi, (size_t)ni, sizeof *fi, by_makespan);
  qsort(fj, (size_t)nj, sizeof *fj, by_makespan);
  out->indep = fi[ni / 2];
  out->joint = fj[nj / 2];
  out->seconds = ob_now_s() - t0;
  return OB_OK;
}
