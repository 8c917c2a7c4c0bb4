/* exec.c: running a compiled model: inputs in, steps in order, outputs
 * out; the check against reference outputs; whole-model timing through the
 * kernels' timing loop; the per-step profile; what was compiled. */
#include <limits.h>

#include "runtime/runtime_impl.h"

const ob_graph *ob_rt_graph(const ob_rt *rt) { return rt->g; }

ob_status ob_rt_set_input(ob_rt *rt, int i, const void *data, size_t bytes) {
  if (i < 0 || i >= ob_graph_input_count(rt->g))
    return ob_fail(rt->ctx, OB_ERR_INVALID_ARG, "runtime: the model has no input %d", i);
  rt_val *v = &rt->v[rt->in_val[i]];
  if (bytes != v->bytes)
    return ob_fail(rt->ctx, OB_ERR_INVALID_ARG, "runtime: input '%s' takes %zu bytes, got %zu",
                   ob_graph_tensor_name(rt->g, v->tensor), v->bytes, bytes);
  if (bytes) memcpy(v->ptr, data, bytes);
  return OB_OK;
}

const void *ob_rt_output(const ob_rt *rt, int i) { return rt->v[rt->out_val[i]].ptr; }
size_t ob_rt_output_bytes(const ob_rt *rt, int i) { return rt->v[rt->out_val[i]].bytes; }

static ob_status step_failed(ob_rt *rt, const rt_step *s, int rc) {
  return ob_fail(rt->ctx, OB_ERR_RUNTIME, "runtime: step '%s' (%s) failed (status %d)%s", s->name, s->op, rc,
                 !strcmp(s->op, "Gather") ? ": an index is out of range" : "");
}

static int run_all(void *user) {
  ob_rt *rt = user;
  for (int i = 0; i < rt->ns; i++) {
    rt_step *s = &rt->s[i];
    int rc = s->run(rt, s);
    if (rc) return rc == OB_TIME_DEADLINE ? -1 : rc;
  }
  return 0;
}

/* Runs every step; the failing step is named. */
static ob_status run_named(ob_rt *rt) {
  for (int i = 0; i < rt->ns; i++) {
    rt_step *s = &rt->s[i];
    int rc = s->run(rt, s);
    if (rc) return step_failed(rt, s, rc);
  }
  return OB_OK;
}

static void enter(ob_rt *rt, bool *entered) {
  *entered = rt->bl && !rt->bl_inside;
  if (*entered) {
    ob_baseline_enter(rt->bl);
    rt->bl_inside = true;
  }
}

static void leave(ob_rt *rt, bool entered) {
  if (entered) {
    ob_baseline_leave(rt->bl);
    rt->bl_inside = false;
  }
}

ob_status ob_rt_run(ob_rt *rt) {
  bool e;
  enter(rt, &e);
  ob_status st = run_named(rt);
  leave(rt, e);
  return st;
}

void ob_rt_check(const ob_rt *rt, const void *const *ref, double tol, ob_rt_check_result *out) {
  memset(out, 0, sizeof *out);
  out->ok = true;
  out->worst_output = -1;
  if (tol <= 0) tol = 1e-3;
  const ob_graph *g = rt->g;
  for (int i = 0; i < ob_graph_output_count(g); i++) {
    int t = ob_graph_output(g, i);
    ob_dtype dt = ob_graph_tensor_dtype(g, t);
    int64_t n = ob_graph_tensor_numel(g, t);
    const void *got = ob_rt_output(rt, i);
    if (dt != OB_F32) {
      if (memcmp(got, ref[i], (size_t)n * ob_dtype_size(dt))) {
        out->ok = false;
        snprintf(out->message, sizeof out->message, "output '%s' (%s) differs from the reference",
                 ob_graph_tensor_name(g, t), ob_dtype_name(dt));
      }
      continue;
    }
    const float *a = got, *r = ref[i];
    for (int64_t k = 0; k < n; k++) {
      double d = fabs((double)a[k] - r[k]);
      if (isfinite(r[k]) && fabs(r[k]) > out->max_abs_ref) out->max_abs_ref = fabs(r[k]);
      /* a non-finite value on either side passes only when both sides hold
       * the same one (a NaN against a number compares false, so it must be
       * caught here) */
      bool same = (isnan(a[k]) && isnan(r[k])) || a[k] == r[k];
      if ((!isfinite(a[k]) || !isfinite(r[k])) && !same) {
        if (out->ok)
          snprintf(out->message, sizeof out->message, "output '%s'[%lld] = %g, reference %g",
                   ob_graph_tensor_name(g, t), (long long)k, a[k], r[k]);
        out->ok = false;
        d = INFINITY;
      } else if (!isfinite(a[k])) {
        d = 0;
      }
      if (d > out->max_abs_err) {
        out->max_abs_err = d;
        out->worst_output = i;
        out->worst_index = k;
      }
    }
  }
  out->rel_err = out->max_abs_err / (out->max_abs_ref > 1 ? out->max_abs_ref : 1);
  if (out->ok && out->rel_err > tol) {
    out->ok = false;
    int t = ob_graph_output(g, out->worst_output);
    const float *a = ob_rt_output(rt, out->worst_output), *r = ref[out->worst_output];
    snprintf(out->message, sizeof out->message,
             "output '%s'[%lld] = %.7g, reference %.7g: error %.3g of max |ref| %.3g is above the tolerance %g",
             ob_graph_tensor_name(g, t), (long long)out->worst_index, a[out->worst_index], r[out->worst_index],
             out->max_abs_err, out->max_abs_ref, tol);
  }
}

/* The model's timing: one discarded run, then the kernels' timing loop.
 * between (NULL: o's own) runs after every kept repeat with user, and
 * *hook_st (may be NULL) holds its failure, which is the one reported; the
 * limit is the timeout times `scale` (the hook's runs take time too). */
static ob_status time_model(ob_rt *rt, const ob_timing_opts *o, int (*between)(void *), void *user,
                            const ob_status *hook_st, double scale, ob_timing *out) {
  memset(out, 0, sizeof *out);
  ob_timing_opts t = ob_timing_resolve(o, rt->target);
  if (t.timer_overhead_s <= 0) t.timer_overhead_s = ob_timer_overhead();
  if (between) {
    t.between = between;
    t.between_user = user;
  }
  double limit = t.timeout_s * scale;
  bool e;
  enter(rt, &e);
  ob_status st = run_named(rt); /* the discarded warm-up names a failing step */
  if (!st) {
    int rc = ob_time_loop(&t, ob_now_s() + limit, run_all, NULL, rt, out);
    if (hook_st && *hook_st)
      st = *hook_st;
    else if (rc == OB_TIME_DEADLINE)
      st = ob_fail(rt->ctx, OB_ERR_TIMEOUT, "runtime: timing the model ran past %g s", limit);
    else if (rc)
      st = run_named(rt);
    if (!st && rc) st = ob_fail(rt->ctx, OB_ERR_RUNTIME, "runtime: a step failed while timing (status %d)", rc);
  }
  leave(rt, e);
  return st;
}

ob_status ob_rt_time(ob_rt *rt, const ob_timing_opts *o, ob_timing *out) {
  return time_model(rt, o, NULL, NULL, NULL, 1, out);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Run indices ordered by their whole run's time. */
typedef struct run_tot {
  double t;
  int r;
} run_tot;

static int cmp_run_tot(const void *a, const void *b) {
  double x = ((const run_tot *)a)->t, y = ((const run_tot *)b)->t;
  return x < y ? -1 : x > y;
}

/* Profiled runs kept for the reduction: t[run * (ns + 1) + i] is step i's
 * seconds in that run, t[run * (ns + 1) + ns] the whole run's. */
typedef struct prof_acc {
  ob_rt *rt;
  double *t;
  int n, cap;
  ob_status st; /* the first failure, for the caller (the timing loop only sees a code) */
  int per_call; /* runs per call of prof_between */
  double max_offcpu; /* > 0: a run whose thread was off its CPU longer than this share
                        of it is taken again, as the timing loop retakes its repeats */
  int retakes_left;
} prof_acc;

/* One run timing each step into acc. */
static ob_status prof_run(prof_acc *acc) {
  ob_rt *rt = acc->rt;
  size_t w = (size_t)rt->ns + 1;
  if (acc->n == acc->cap) {
    int cap = acc->cap ? 2 * acc->cap : 64;
    double *t = realloc(acc->t, sizeof(double) * w * (size_t)cap);
    if (!t) return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
    acc->t = t;
    acc->cap = cap;
  }
  double *row = acc->t + w * (size_t)acc->n;
  /* a run preempted (or waiting on a preempted worker) is taken again into
   * the same row: the timed repeats beside it drop such runs, so the profile
   * does too, else a long model's steps (bert-base at 1 thread: 330 ms a
   * run) summed 7-8 % over its timing */
  for (;;) {
    double c0 = acc->max_offcpu > 0 ? ob_thread_cpu_s() : 0;
    double r0 = ob_now_s();
    for (int i = 0; i < rt->ns; i++) {
      rt_step *s = &rt->s[i];
      double t0 = ob_now_s();
      int rc = s->run(rt, s);
      row[i] = ob_now_s() - t0;
      if (rc) return step_failed(rt, s, rc);
    }
    double el = row[rt->ns] = ob_now_s() - r0;
    if (!(acc->max_offcpu > 0 && acc->retakes_left > 0)) break;
    double cpu = ob_thread_cpu_s() - c0;
    if (!(isfinite(cpu) && el - cpu > acc->max_offcpu * el)) break;
    acc->retakes_left--;
  }
  acc->n++;
  return OB_OK;
}

/* The kept runs reduced: trimmed, each step's mean over the runs whose
 * totals fall in the middle half (a slow phase of the host slows every
 * step of a run; trimming each step apart kept different runs per step,
 * and the sum strayed 4-5 % from the whole run's on bert-base and
 * mobilenet-v2), so that the steps add up to those runs' mean total; else
 * each step's median. */
static ob_status prof_reduce(prof_acc *acc, bool trimmed, double *step_s, double *total_s) {
  ob_rt *rt = acc->rt;
  int ns = rt->ns, runs = acc->n;
  size_t w = (size_t)ns + 1;
  if (runs < 1) return ob_fail(rt->ctx, OB_ERR_RUNTIME, "runtime: no profiled run to reduce");
  run_tot *o = malloc(sizeof *o * (size_t)runs);
  double *x = malloc(sizeof *x * (size_t)runs);
  if (!o || !x) {
    free(o);
    free(x);
    return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
  }
  if (trimmed) {
    for (int r = 0; r < runs; r++) o[r] = (run_tot){acc->t[w * (size_t)r + (size_t)ns], r};
    qsort(o, (size_t)runs, sizeof *o, cmp_run_tot);
    int lo = runs / 4, hi = runs - runs / 4;
    for (int i = 0; i <= ns; i++) {
      double sum = 0;
      for (int k = lo; k < hi; k++) sum += acc->t[w * (size_t)o[k].r + (size_t)i];
      if (i < ns) step_s[i] = sum / (hi - lo);
      else if (total_s) *total_s = sum / (hi - lo);
    }
  } else {
    for (int i = 0; i <= ns; i++) {
      for (int r = 0; r < runs; r++) x[r] = acc->t[w * (size_t)r + (size_t)i];
      qsort(x, (size_t)runs, sizeof *x, cmp_d);
      if (i < ns) step_s[i] = x[runs / 2];
      else if (total_s) *total_s = x[runs / 2];
    }
  }
  free(o);
  free(x);
  return OB_OK;
}

ob_status rt_profile_runs(ob_rt *rt, int runs, bool trimmed, double *step_s, double *total_s) {
  if (runs < 1) runs = 1;
  prof_acc acc = {.rt = rt};
  bool e;
  enter(rt, &e);
  ob_status st = run_named(rt);
  for (int r = 0; r < runs && !st; r++) st = prof_run(&acc);
  leave(rt, e);
  if (!st) st = prof_reduce(&acc, trimmed, step_s, total_s);
  free(acc.t);
  return st;
}

/* The timing loop's hook between repeats: acc->per_call profiled runs. */
static int prof_between(void *user) {
  prof_acc *acc = user;
  for (int k = 0; k < acc->per_call && !acc->st; k++) acc->st = prof_run(acc);
  return acc->st ? -1 : 0;
}

ob_status ob_rt_time_profiled(ob_rt *rt, const ob_timing_opts *o, int runs_per_repeat, ob_timing *out,
                              double *step_s, double *total_s, int *runs) {
  prof_acc acc = {.rt = rt, .per_call = runs_per_repeat < 1 ? 1 : runs_per_repeat};
  ob_timing_opts r = ob_timing_resolve(o, rt->target);
  if (!r.clock && r.max_offcpu > 0) { /* the timing loop's rule and budget, per profiled run */
    acc.max_offcpu = r.max_offcpu;
    acc.retakes_left = acc.per_call * r.repeat;
  }
  /* the profiled runs take about as long as the timed ones */
  ob_status st = time_model(rt, o, prof_between, &acc, &acc.st, 1 + acc.per_call, out);
  if (!st) st = prof_reduce(&acc, true, step_s, total_s);
  if (!st && runs) *runs = acc.n;
  free(acc.t);
  return st;
}

ob_status ob_rt_profile(ob_rt *rt, int runs, double *step_s, double *total_s) {
  return rt_profile_runs(rt, runs, false, step_s, total_s);
}

ob_status ob_rt_profile_trimmed(ob_rt *rt, int runs, double *step_s, double *total_s) {
  return rt_profile_runs(rt, runs, true, step_s, total_s);
}

ob_status ob_rt_profile_alone(ob_rt *rt, int reps, double *alone_s) {
  OB_ASSERT(rt && alone_s);
  if (reps < 1) reps = 1;
  if (reps > OB_TIMING_MAX_COSTS) reps = OB_TIMING_MAX_COSTS;
  double t[OB_TIMING_MAX_COSTS];
  bool e;
  enter(rt, &e);
  ob_status st = OB_OK;
  /* one run in order, so every step reads what the steps before it wrote;
   * a kernel or oneDNN step right after its own first call is warm (code,
   * weights, inputs) as the kernel's repeats in the db were */
  for (int i = 0; i < rt->ns && !st; i++) {
    rt_step *s = &rt->s[i];
    int rc = s->run(rt, s);
    alone_s[i] = NAN;
    bool timed = s->kind == OB_RT_STEP_KERNEL || s->kind == OB_RT_STEP_ONEDNN;
    for (int r = 0; timed && r < reps && !rc; r++) {
      double t0 = ob_now_s();
      rc = s->run(rt, s);
      t[r] = ob_now_s() - t0;
    }
    if (rc) st = step_failed(rt, s, rc);
    else if (timed) ob_stats(t, reps, &alone_s[i], NULL, NULL);
  }
  leave(rt, e);
  return st;
}

int ob_rt_step_count(const ob_rt *rt) { return rt->ns; }

const char *ob_rt_step_kind_name(ob_rt_step_kind k) {
  static const char *const n[OB_RT_STEP_KIND_COUNT] = {"kernel", "onednn", "native", "convert"};
  return (unsigned)k < OB_RT_STEP_KIND_COUNT ? n[k] : "?";
}

void ob_rt_step_get(const ob_rt *rt, int i, ob_rt_step_info *out) {
  const rt_step *s = &rt->s[i];
  memset(out, 0, sizeof *out);
  out->kind = s->kind;
  out->node = s->node;
  out->name = s->name;
  out->op = s->op;
  out->workload = s->wl_key;
  out->tmpl = "";
  out->db_s = NAN;
  out->flops = s->flops;
  if (s->kern >= 0) {
    const rt_kern *k = &rt->kern[s->kern];
    out->tmpl = ob_task_template(k->task);
    out->config_index = k->cfg.index;
    out->from_db = k->from_db;
    out->db_s = k->db_s;
  } else if (s->prim) {
    out->tmpl = ob_baseline_prim_impl(s->prim);
  }
  if (s->kind == OB_RT_STEP_CONVERT && s->node >= 0) out->node = -1;
}

void ob_rt_get_stats(const ob_rt *rt, ob_rt_stats *out) {
  *out = rt->st;
  out->cache = rt->o.cache;
}

double ob_rt_db_sum(const ob_rt *rt, int *covered, int *steps) {
  double sum = 0;
  int c = 0, n = 0;
  for (int i = 0; i < rt->ns; i++) {
    const rt_step *s = &rt->s[i];
    if (s->kind != OB_RT_STEP_KERNEL && s->kind != OB_RT_STEP_ONEDNN) continue;
    n++;
    if (s->kern >= 0 && !isnan(rt->kern[s->kern].db_s)) {
      sum += rt->kern[s->kern].db_s;
      c++;
    }
  }
  if (covered) *covered = c;
  if (steps) *steps = n;
  return sum;
}
