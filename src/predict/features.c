/* features.c: the predictors' feature vector (schema OB_PREDICT_SCHEMA).
 * Workload and resource numbers first, then the tuner's itervar features
 * of the config, so the same loop-nest description that ranks configs in
 * the tuner feeds the latency model. Latencies span orders of magnitude:
 * sizes enter as log2 so that trees split them evenly. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opbench/predict.h"

static float lg(double v) { return (float)log2(1.0 + fabs(v)); }

double ob_predict_workload_bytes(const ob_workload *wl) {
  double b = 0;
  int n = ob_workload_num_args(wl);
  for (int i = 0; i < n; i++) b += 4.0 * (double)ob_workload_arg_numel(wl, i);
  return b;
}

static int template_index(const char *op, const char *tmpl) {
  const char *names[32];
  int n = ob_op_templates(op, names, 32);
  for (int i = 0; i < n && i < 32; i++)
    if (!strcmp(names[i], tmpl)) return i;
  return -1;
}

ob_status ob_predict_features(ob_ctx *ctx, const ob_predict_point *p, float *out) {
  OB_ASSERT(p && p->wl && out);
  const ob_workload *wl = p->wl;
  for (int i = 0; i < OB_PREDICT_NFEAT; i++) out[i] = NAN;
  for (int i = 0; i < wl->nattr && i < 24; i++) out[i] = lg((double)wl->attr[i]);
  double flops = ob_workload_flops(wl), bytes = ob_predict_workload_bytes(wl);
  out[24] = lg(flops);
  out[25] = lg(bytes);
  out[26] = bytes > 0 ? lg(flops / bytes) : NAN;
  if (p->task) {
    int ti = template_index(wl->op, ob_task_template(p->task));
    out[27] = ti >= 0 ? (float)ti : NAN;
    out[34] = (float)ob_target_get_facts(ob_task_target(p->task))->isa;
  }
  out[28] = (float)p->threads;
  out[29] = (float)(p->ncores > 0 ? p->ncores : p->threads);
  out[30] = (float)p->pressure_mib;
  out[31] = isfinite(p->peak_gflops) ? lg(p->peak_gflops) : NAN;
  out[32] = isfinite(p->bandwidth_gbps) ? lg(p->bandwidth_gbps) : NAN;
  ob_epilogue e;
  out[33] = ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK ? (float)e.n : NAN;
  ob_predict_tiling tl;
  ob_predict_tiling_of(wl, p->task ? ob_task_template(p->task) : NULL, p->task ? p->cfg : NULL,
                       p->task ? ob_target_get_facts(ob_task_target(p->task))->lanes_f32 : 0, p->threads, &tl);
  /* the arguments stream from the cache level that holds them (the
   * measurements are warm), from memory when none does */
  double bw = p->cache_gbps > 0 ? p->cache_gbps : p->bandwidth_gbps;
  double an = ob_predict_analytic_s(&tl, flops, bytes, p->peak_gflops, bw, p->threads);
  out[45] = p->cache_gbps > 0 ? lg(p->cache_gbps) : NAN;
  out[35] = (float)log2(an);
  if (tl.known) {
    out[36] = (float)tl.work_ratio;
    out[37] = (float)tl.lane_util;
    out[38] = (float)tl.step_eff;
    out[39] = lg((double)tl.chunks);
    out[40] = (float)tl.imbalance;
    out[41] = lg(tl.chunks_per_thread);
    out[42] = lg(tl.reduction);
    out[43] = lg(tl.block_bytes);
    out[44] = lg(tl.traffic_bytes);
  }
  if (p->task && p->cfg) {
    float *iv = out + OB_PREDICT_BASE_FEATURES;
    ob_status st = ob_feature_extract(ctx, p->task, p->cfg, OB_FEATURE_ITERVAR, iv);
    if (st == OB_ERR_NOMEM) return st;
    if (st) {
      ob_ctx_clear_error(ctx);
      for (int i = 0; i < OB_FEATURE_ITERVAR_LEN; i++) iv[i] = NAN;
    }
  }
  return OB_OK;
}

const char *ob_predict_feature_name(int i, char *buf, size_t cap) {
  static const char *const base[] = {"log2_flops", "log2_bytes", "log2_intensity", "template",
                                     "threads", "cores", "pressure_mib", "log2_peak_gflops",
                                     "log2_bandwidth_gbps", "epilogue_steps", "isa",
                                     "log2_analytic_s", "work_ratio", "lane_util", "step_eff",
                                     "log2_chunks", "imbalance", "log2_chunks_per_thread",
                                     "log2_reduction", "log2_block_bytes", "log2_traffic_bytes",
                                     "log2_cache_gbps"};
  if (i < 24) snprintf(buf, cap, "attr%d", i);
  else if (i < OB_PREDICT_BASE_FEATURES) snprintf(buf, cap, "%s", base[i - 24]);
  else snprintf(buf, cap, "itervar%d", i - OB_PREDICT_BASE_FEATURES);
  return buf;
}

/* The value at the nearest thread count at or below `threads` (scaled by
 * the ratio for a peak, which grows with cores; kept for a bandwidth). */
void ob_predict_host_limits(const ob_db_host_limits *l, const char *host, const char *isa,
                            int threads, double *peak_gflops, double *bandwidth_gbps) {
  *peak_gflops = NAN;
  *bandwidth_gbps = NAN;
  int best_p = 0, best_b = 0;
  for (int64_t i = 0; l && i < l->n; i++) {
    const ob_db_host_limit *h = &l->l[i];
    if (host && strcmp(h->host, host)) continue;
    if (h->threads < 1 || h->threads > threads || !(h->value > 0)) continue;
    if (!strcmp(h->name, "fma_peak") && isa && !strcmp(h->isa, isa) && h->threads > best_p) {
      best_p = h->threads;
      *peak_gflops = h->value * threads / h->threads;
    } else if (!strcmp(h->name, "mem_triad") && h->threads > best_b) {
      best_b = h->threads;
      *bandwidth_gbps = h->value;
    }
  }
}

double ob_predict_cache_bandwidth(const ob_db_host_limits *l, const char *host, int threads, double bytes) {
  static const char *const levels[] = {"l1_read", "l2_read", "l3_read"};
  /* the profiler reads half of L1d and of L2 and a quarter of L3 (at most
   * 64 MiB) to measure a level: its capacity is that many times the bytes
   * the limit records */
  static const double capacity[] = {2, 2, 4};
  double best_bytes = INFINITY, bw = NAN;
  for (int k = 0; k < 3; k++) {
    /* the level's entry at the nearest thread count at or below */
    int at = 0;
    double lb = 0, lv = NAN;
    for (int64_t i = 0; l && i < l->n; i++) {
      const ob_db_host_limit *h = &l->l[i];
      if ((host && strcmp(h->host, host)) || strcmp(h->name, levels[k])) continue;
      if (h->threads < 1 || h->threads > threads || h->threads <= at || !(h->value > 0) || !(h->bytes > 0)) continue;
      at = h->threads;
      lb = capacity[k] * (double)h->bytes;
      lv = h->value;
    }
    if (at && bytes <= lb && lb < best_bytes) {
      best_bytes = lb;
      bw = lv;
    }
  }
  if (isnan(bw)) { /* beyond the caches (or none measured): memory */
    double peak;
    ob_predict_host_limits(l, host, NULL, threads, &peak, &bw);
  }
  return bw;
}

void ob_predict_point_limits(const ob_db_host_limits *l, const char *host, ob_predict_point *p) {
  const char *isa = p->task ? ob_isa_name(ob_target_get_facts(ob_task_target(p->task))->isa) : NULL;
  ob_predict_host_limits(l, host, isa, p->threads, &p->peak_gflops, &p->bandwidth_gbps);
  p->cache_gbps = p->wl ? ob_predict_cache_bandwidth(l, host, p->threads, ob_predict_workload_bytes(p->wl)) : NAN;
}

/* log2(1 + v) back to v; NAN stays NAN. */
static double unlg(float f) { return isfinite(f) ? exp2((double)f) - 1.0 : NAN; }

double ob_predict_bound(const float *x, double flops) {
  if (isfinite(x[35])) return fmax(exp2((double)x[35]), 1e-12); /* the analytical time (schema 3) */
  double threads = isfinite(x[28]) && x[28] >= 1 ? (double)x[28] : 1;
  return ob_predict_analytic_s(NULL, flops, unlg(x[25]), unlg(x[31]), unlg(x[32]), (int)threads);
}
