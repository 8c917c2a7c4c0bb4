/* modellat.c: a model's end-to-end latency from per-operator predictions
 * (nn-Meter's sum over kernels), through the runtime's own compiled step
 * list so that the prediction covers exactly what the runtime runs: the
 * configs it chose, the layout conversions it inserted, the nodes it runs
 * in its own C. Those C steps are not operators the predictor knows; their
 * cost is the runtime's overhead, measured once per host and thread count
 * on a calibration model and stored with the host's limits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/kernel.h"
#include "opbench/predict.h"

/* MiB of the outputs of graph node n (0 for a conversion, node -1). */
static double node_out_mib(const ob_graph *g, int n) {
  if (n < 0) return 0;
  double b = 0;
  for (int i = 0; i < ob_graph_node_num_outputs(g, n); i++) {
    int t = ob_graph_node_output(g, n, i);
    if (t < 0) continue;
    int64_t numel = ob_graph_tensor_numel(g, t);
    if (numel > 0) b += (double)numel * (double)ob_dtype_size(ob_graph_tensor_dtype(g, t));
  }
  return b / (1024.0 * 1024.0);
}

/* MiB of the parameters (weights, biases) graph node n reads: in a run
 * they come from memory cold, each layer's once, where the db's
 * measurement of the kernel alone ran them hot. */
static double node_param_mib(const ob_graph *g, int n) {
  return (double)ob_graph_node_param_bytes(g, n) / (1024.0 * 1024.0);
}

/* MiB of the parameters the model's kernel and oneDNN steps read. */
static double model_param_mib(const ob_rt *rt) {
  const ob_graph *g = ob_rt_graph(rt);
  double w = 0;
  for (int i = 0; i < ob_rt_step_count(rt); i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    if (si.kind == OB_RT_STEP_KERNEL || si.kind == OB_RT_STEP_ONEDNN) w += node_param_mib(g, si.node);
  }
  return w;
}

/* Touches a line in every 64 bytes of buf[0..bytes) (a write: the lines it
 * brings in displace what the caches held, dirty ones included). */
static void sweep(volatile float *buf, size_t bytes) {
  for (size_t i = 0; i < bytes / sizeof(float); i += 16) buf[i] += 1.0f;
}

#define SWEEPS 7  /* sizes of other data between runs: none, 16..256 MiB, all */
#define COLD_ROUNDS 5

/* Whole runs of rt after a sweep of other data of each size, in interleaved
 * rounds (the host's slow windows hit every size alike), medians: the extra
 * time of the run after the largest sweep (twice the last-level cache:
 * every parameter comes from memory) over its warm time gives the cold
 * cost per parameter MiB, and the sizes between give the miss curve. The
 * curve is what a model larger than the calibration's needs: its own
 * parameters evict each other as the sweep evicts the calibration's. */
static ob_status measure_cold(ob_ctx *ctx, ob_rt *rt, ob_predict_overhead *out) {
  ob_host h;
  int64_t llc = ob_host_detect(ctx, &h) == OB_OK && h.l3_bytes > 0 ? h.l3_bytes : (int64_t)64 << 20;
  ob_ctx_clear_error(ctx);
  size_t mib = 1024 * 1024, full = (size_t)llc * 2 < 512 * mib ? 512 * mib : (size_t)llc * 2;
  const size_t sizes[SWEEPS] = {0, 16 * mib, 32 * mib, 64 * mib, 128 * mib, 256 * mib, full};
  float *buf = malloc(full);
  if (!buf) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory for the cache sweep (%zu MiB)", full / mib);
  memset(buf, 0, full);
  double t[SWEEPS][COLD_ROUNDS];
  ob_status st = OB_OK;
  for (int r = 0; r < COLD_ROUNDS && !st; r++)
    for (int k = 0; k < SWEEPS && !st; k++) {
      if (sizes[k]) sweep(buf, sizes[k]);
      else st = ob_rt_run(rt); /* warm: right after a run of its own */
      double t0 = ob_now_s();
      if (!st) st = ob_rt_run(rt);
      t[k][r] = ob_now_s() - t0;
    }
  free(buf);
  if (st) return st;
  double med[SWEEPS];
  for (int k = 0; k < SWEEPS; k++) {
    ob_stats(t[k], COLD_ROUNDS, &med[k], NULL, NULL);
  }
  double extra = med[SWEEPS - 1] - med[0];
  out->cold_s_per_mb = 0;
  out->nmiss = 0;
  /* under 3 % of the run is within the noise of 5 rounds: no cold cost */
  if (!(extra > 0.03 * med[0])) return OB_OK;
  out->cold_s_per_mb = extra / out->param_mib;
  double prev = 0;
  for (int k = 1; k < SWEEPS && out->nmiss < 8; k++) {
    double share = fmin(1, fmax(prev, (med[k] - med[0]) / extra));
    out->miss_mib[out->nmiss] = out->param_mib + (double)sizes[k] / (double)mib;
    out->miss_share[out->nmiss++] = prev = share;
  }
  return OB_OK;
}

/* Relative squared error of the in-graph model over n kernel steps: step
 * i takes the longer of f x its time alone a[i] and k x its parameter MiB
 * w[i], against y[i], its time in the run. */
static double in_graph_loss(const double *y, const double *a, const double *w, int n, double f, double k) {
  double l = 0;
  for (int i = 0; i < n; i++) {
    double e = (fmax(f * a[i], k * w[i]) - y[i]) / y[i];
    l += e * e;
  }
  return l;
}

/* k among 0 and the rates at which a step read its parameters in the run
 * (a step held by its weights sets the rate exactly), f on a grid. */
void ob_predict_fit_in_graph(const double *y, const double *a, const double *w, int n, double *f_out, double *k_out) {
  *f_out = 1;
  if (n == 0) return;
  double best = INFINITY, bf = 1, bk = 0;
  for (int c = -1; c < n; c++) {
    if (c >= 0 && !(w[c] > 0)) continue;
    double k = c < 0 ? 0 : y[c] / w[c];
    for (int j = 0; j <= 700; j++) { /* f from 0.5 to 4 */
      double f = 0.5 + 0.005 * j, l = in_graph_loss(y, a, w, n, f, k);
      if (l < best) best = l, bf = f, bk = k;
    }
  }
  *f_out = bf;
  *k_out = bk;
}

ob_status ob_predict_overhead_measure(ob_ctx *ctx, ob_rt *rt, int threads, int runs, ob_predict_overhead *out) {
  OB_ASSERT(rt && out);
  memset(out, 0, sizeof *out);
  out->threads = threads;
  int ns = ob_rt_step_count(rt);
  /* the steps' times in the run, then the fit's kernel steps: in the run,
   * alone (the db), parameter MiB */
  double *st = calloc(((size_t)ns + 1) * 4, sizeof *st), total = 0;
  if (!st) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  double *y = st + ns + 1, *a = y + ns + 1, *w = a + ns + 1;
  ob_status s = ob_rt_profile(rt, runs > 0 ? runs : 10, st, &total);
  if (s) {
    free(st);
    return s;
  }
  const ob_graph *g = ob_rt_graph(rt);
  double sum = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, conv = 0;
  int nn = 0, nc = 0, nk = 0;
  for (int i = 0; i < ns; i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    sum += st[i];
    if (si.kind == OB_RT_STEP_NATIVE) {
      double x = node_out_mib(g, si.node);
      sx += x;
      sy += st[i];
      sxx += x * x;
      sxy += x * st[i];
      nn++;
    } else if (si.kind == OB_RT_STEP_KERNEL && st[i] > 0) {
      /* the fastest a step with weights beyond a core's L2 read them in the
       * run: the rate when no step has a db median to fit one on */
      double mib = node_param_mib(g, si.node);
      if (mib >= 1 && (out->floor_s_per_mb == 0 || st[i] / mib < out->floor_s_per_mb))
        out->floor_s_per_mb = st[i] / mib;
      if (si.db_s > 0) {
        y[nk] = st[i];
        a[nk] = si.db_s;
        w[nk++] = mib;
      }
    } else if (si.kind == OB_RT_STEP_CONVERT) {
      conv += st[i];
      nc++;
    }
  }
  out->nnative = nn;
  out->nconvert = nc;
  if (nn > 0) {
    double den = (double)nn * sxx - sx * sx;
    double slope = nn >= 3 && den > 0 ? ((double)nn * sxy - sx * sy) / den : 0;
    /* a negative slope is noise, not a step that gets cheaper with size:
     * the mean then serves every native step */
    if (slope < 0) slope = 0;
    out->native_s_per_mb = slope;
    out->native_fixed_s = fmax(0, (sy - slope * sx) / (double)nn);
  }
  out->param_mib = model_param_mib(rt);
  out->convert_s = nc ? conv / (double)nc : 0;
  out->run_s = fmax(0, total - sum);
  ob_predict_fit_in_graph(y, a, w, nk, &out->kernel_factor, &out->floor_s_per_mb);
  free(st);
  return out->param_mib > 0 ? measure_cold(ctx, rt, out) : OB_OK;
}


double ob_predict_param_miss(const ob_predict_overhead *ov, double model_mib) {
  if (!(ov->cold_s_per_mb > 0) || ov->nmiss < 1 || !(model_mib > ov->param_mib)) return 0;
  double x0 = ov->param_mib, y0 = 0;
  for (int k = 0; k < ov->nmiss; k++) {
    double x1 = ov->miss_mib[k], y1 = ov->miss_share[k];
    if (model_mib <= x1) return x1 > x0 ? y0 + (y1 - y0) * (model_mib - x0) / (x1 - x0) : y1;
    x0 = x1;
    y0 = y1;
  }
  return y0;
}

ob_status ob_predict_overhead_stack(ob_ctx *ctx, ob_rt *rt, ob_rt *const *others, int n, ob_predict_overhead *out) {
  OB_ASSERT(rt && out && n >= 0 && n < 8);
  (void)ctx; /* the runs' failures carry their messages in it already */
  if (!(out->cold_s_per_mb > 0) || !(out->param_mib > 0) || n == 0) return OB_OK;
  double t[8][COLD_ROUNDS], mib[8];
  mib[0] = out->param_mib;
  for (int k = 1; k <= n; k++) mib[k] = mib[k - 1] + model_param_mib(others[k - 1]);
  for (int r = 0; r < COLD_ROUNDS; r++)
    for (int k = 0; k <= n; k++) {
      ob_status st = ob_rt_run(rt); /* k = 0: warm, right after a run of its own */
      for (int j = 0; j < k && !st; j++) st = ob_rt_run(others[j]);
      double t0 = ob_now_s();
      if (!st) st = ob_rt_run(rt);
      if (st) return st;
      t[k][r] = ob_now_s() - t0;
    }
  double med[8];
  for (int k = 0; k <= n; k++) ob_stats(t[k], COLD_ROUNDS, &med[k], NULL, NULL);
  /* the stack's points, then the sweep's beyond them */
  double keep_mib[8], keep_share[8], prev = 0;
  int nk = 0;
  for (int k = 1; k <= n; k++) {
    prev = fmin(1, fmax(prev, (med[k] - med[0]) / (out->cold_s_per_mb * out->param_mib)));
    keep_mib[nk] = mib[k];
    keep_share[nk++] = prev;
  }
  for (int k = 0; k < out->nmiss && nk < 8; k++)
    if (out->miss_mib[k] > mib[n]) {
      keep_mib[nk] = out->miss_mib[k];
      keep_share[nk++] = prev = fmax(prev, out->miss_share[k]);
    }
  out->nmiss = nk;
  memcpy(out->miss_mib, keep_mib, sizeof keep_mib);
  memcpy(out->miss_share, keep_share, sizeof keep_share);
  return OB_OK;
}

static const char *const ov_names[] = {"rt_native_fixed", "rt_native_per_mb", "rt_convert", "rt_run",
                                       "rt_in_graph_f", "rt_cold_per_mb", "rt_param_mib", "rt_stream_per_mb"};
#define NOV 8

/* The db keeps positive limits only: a part measured as 0 is left out, and
 * "rt_calib_steps" (the steps the calibration timed, at least 1) marks that the
 * overhead of this thread count was measured at all. */
ob_status ob_predict_overhead_store(ob_db *db, const char *host, const ob_predict_overhead *o, const char *note) {
  for (int k = 0; k < o->nmiss && k < 8; k++) {
    char name[16]; /* one limit per point: the db keys a limit by name, not by bytes */
    snprintf(name, sizeof name, "rt_miss%d", k);
    ob_db_host_limit l = {.host = host, .name = name, .isa = "", .threads = o->threads,
                          .bytes = (int64_t)(o->miss_mib[k] * 1048576.0), .value = fmax(1e-6, o->miss_share[k]),
                          .unit = "share", .verified = true, .note = note ? note : ""};
    ob_status s = ob_db_put_host_limit(db, &l);
    if (s) return s;
  }
  double v[NOV + 1] = {o->native_fixed_s, o->native_s_per_mb, o->convert_s, o->run_s, o->kernel_factor,
                       o->cold_s_per_mb, o->param_mib, o->floor_s_per_mb, 1.0 + o->nnative + o->nconvert};
  for (int i = 0; i <= NOV; i++) {
    if (!(v[i] > 0)) continue;
    ob_db_host_limit l = {.host = host, .name = i < NOV ? ov_names[i] : "rt_calib_steps", .isa = "",
                          .threads = o->threads, .bytes = 0, .value = v[i],
                          .unit = i == 1 || i == 5 || i == 7 ? "s/MiB" : i == 4 ? "x" : i == 6 ? "MiB"
                                  : i == NOV                         ? "steps"
                                                                     : "s",
                          .verified = true,
                          .note = note ? note : ""};
    ob_status s = ob_db_put_host_limit(db, &l);
    if (s) return s;
  }
  return OB_OK;
}

bool ob_predict_overhead_find(const ob_db_host_limits *l, const char *host, int threads, ob_predict_overhead *out) {
  memset(out, 0, sizeof *out);
  out->threads = threads;
  out->kernel_factor = 1;
  double *v[NOV] = {&out->native_fixed_s, &out->native_s_per_mb, &out->convert_s, &out->run_s, &out->kernel_factor,
                    &out->cold_s_per_mb, &out->param_mib, &out->floor_s_per_mb};
  bool marked = false;
  for (int64_t i = 0; l && i < l->n; i++) {
    const ob_db_host_limit *x = &l->l[i];
    if (x->threads != threads || (host && strcmp(x->host, host))) continue;
    marked |= !strcmp(x->name, "rt_calib_steps");
    for (int k = 0; k < NOV; k++)
      if (!strcmp(x->name, ov_names[k])) *v[k] = x->value;
    if (!strncmp(x->name, "rt_miss", 7) && x->name[7] >= '0' && x->name[7] <= '7' && !x->name[8] && x->bytes > 0 &&
        out->nmiss < 8) { /* kept in order of working set */
      double mb = (double)x->bytes / 1048576.0, sh = x->value <= 1e-6 ? 0 : x->value;
      int at = out->nmiss++;
      while (at > 0 && out->miss_mib[at - 1] > mb) {
        out->miss_mib[at] = out->miss_mib[at - 1];
        out->miss_share[at] = out->miss_share[at - 1];
        at--;
      }
      out->miss_mib[at] = mb;
      out->miss_share[at] = sh;
    }
  }
  return marked;
}

static void add_uncovered(ob_predict_model_result *r, const char *op) {
  if (strstr(r->uncovered, op)) return;
  size_t len = strlen(r->uncovered);
  snprintf(r->uncovered + len, sizeof r->uncovered - len, "%s%s", len ? ", " : "", op);
}

ob_status ob_predict_model(ob_ctx *ctx, ob_predictor *p, const ob_rt *rt, const ob_target *target, int threads,
                           const ob_db_host_limits *lim, const char *host, const ob_predict_overhead *ov,
                           ob_predict_model_step *steps, ob_predict_model_result *out) {
  OB_ASSERT(p && rt && target && ov && out);
  memset(out, 0, sizeof *out);
  const ob_graph *g = ob_rt_graph(rt);
  int ns = ob_rt_step_count(rt);
  out->param_mib = model_param_mib(rt);
  double miss = out->miss_share = ob_predict_param_miss(ov, out->param_mib);
  for (int i = 0; i < ns; i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    ob_predict_model_step r = {.step = i};
    bool done = false;
    if (si.kind == OB_RT_STEP_KERNEL || si.kind == OB_RT_STEP_ONEDNN) {
      ob_workload wl;
      ob_task *task = NULL;
      ob_status s = ob_graph_node_workload(ctx, g, si.node, &wl);
      if (s == OB_OK) s = ob_task_new(ctx, &wl, si.kind == OB_RT_STEP_KERNEL ? si.tmpl : NULL, target, &task);
      if (s) return s;
      ob_config cfg = ob_task_default_config(task);
      if (si.kind == OB_RT_STEP_KERNEL && (s = ob_space_get(ctx, ob_task_space(task), si.config_index, &cfg))) {
        ob_task_free(task);
        return s;
      }
      ob_predict_point pt = {.wl = &wl, .task = task, .cfg = &cfg, .threads = threads, .ncores = threads};
      ob_predict_point_limits(lim, host, &pt);
      float x[OB_PREDICT_NFEAT];
      ob_prediction pr;
      s = ob_predict_features(ctx, &pt, x);
      if (s == OB_OK) s = ob_predictor_predict(p, wl.op, x, ob_workload_flops(&wl), &pr);
      ob_task_free(task);
      if (s == OB_OK) {
        /* measured alone, predicted alone: in the graph times the factor,
         * but no faster than its weights stream in a run (the rate fitted
         * on the calibration; a layer whose weights spill the L2 was
         * measured alone with them warm in the L3), slower for the share of
         * its parameters the caches lost since the last run (a model's own
         * parameters evict each other: the miss curve at the model's size)
         * at the cold cost the calibration measured per MiB. The streaming
         * overlaps the computation: the longer of the two, not their sum
         * (added, the cold cost put bert-base's compute-bound dense layers
         * 7-13 % high at 2 threads). */
        double f = ov->kernel_factor > 0 ? ov->kernel_factor : 1, w = node_param_mib(g, si.node);
        double stream = w * (ov->floor_s_per_mb + miss * ov->cold_s_per_mb);
        r.seconds = fmax(pr.seconds * f, stream);
        r.lo = fmax(pr.lo * f, stream);
        r.hi = fmax(pr.hi * f, stream);
        r.predicted = done = true;
        out->kernels_s += r.seconds;
        out->nkernels++;
      } else if (s == OB_ERR_NOT_FOUND) {
        /* an operator kind the predictor has no records of: the runtime's
         * cost of a step of that size, said in the result */
        ob_ctx_clear_error(ctx);
        out->nuncovered++;
        add_uncovered(out, wl.op);
      } else {
        return s;
      }
    }
    if (!done) {
      r.seconds = si.kind == OB_RT_STEP_CONVERT ? ov->convert_s
                                                : ov->native_fixed_s + ov->native_s_per_mb * node_out_mib(g, si.node);
      r.lo = r.hi = r.seconds;
      out->other_s += r.seconds;
      out->nother++;
    }
    out->seconds += r.seconds;
    out->lo += r.lo;
    out->hi += r.hi;
    if (steps) steps[i] = r;
  }
  out->seconds += ov->run_s;
  out->lo += ov->run_s;
  out->hi += ov->run_s;
  out->other_s += ov->run_s;
  return OB_OK;
}
