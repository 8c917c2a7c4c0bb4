/* analytic.c: an analytical time of a kernel from the tiling its config
 * really makes, the base that the learned model corrects (nn-Meter and
 * TenSet learn the whole latency; a base that already knows the tiles
 * leaves the trees only what it misses, which transfers to shapes the
 * training models never had).
 *
 * For the register-blocked templates (conv2d_NCHWc, dense_pack,
 * batch_matmul_pack) the config fixes:
 *  - the work done, rounded up to whole blocks (a panel of 16 columns over
 *    N = 1000 computes 1008; 7 output columns in blocks of 4 compute 8),
 *    less the window taps on padding when the kernel skips them;
 *  - the share of vector lanes that carry data (a block of 8 output
 *    channels in a 16-lane vector uses half of it);
 *  - the inner step: its multiply-adds against its loads (one broadcast per
 *    row of the block, one load per weight vector) and against the FMA
 *    latency that too few accumulators expose;
 *  - the parallel chunks (the fused outer loop the pool splits), whose
 *    whole-chunk rounding per thread is the load imbalance;
 *  - the bytes the chunks read from the caches (weights or panel, input
 *    rows), a feature: which cache serves them is for the trees to learn.
 * Other templates get the roofline with no tiling terms. */
#include <math.h>
#include <string.h>

#include "opbench/predict.h"

/* In-core model of the x86 cores the templates target: two FMA pipes and
 * two load ports, FMA latency 4 cycles (so 8 independent accumulators keep
 * both pipes busy). */
#define FMA_PORTS 2.0
#define LOAD_PORTS 2.0
#define FMA_LATENCY 4.0

static int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : a; }

/* Efficiency of an inner step of `fmas` vector FMAs (independent
 * accumulators) and `loads` loads: the FMA pipes' share of its cycles. */
static double step_eff(double fmas, double loads) {
  if (!(fmas > 0)) return 1;
  double cyc = fmax(fmax(fmas / FMA_PORTS, loads / LOAD_PORTS), FMA_LATENCY);
  return (fmas / FMA_PORTS) / cyc;
}

static void imbalance(ob_predict_tiling *t, int threads) {
  int64_t th = threads > 0 ? threads : 1;
  if (t->chunks < 1) t->chunks = 1;
  int64_t per = ceil_div(t->chunks, th);
  t->chunks_per_thread = (double)per;
  t->imbalance = (double)(per * th) / (double)t->chunks;
  if (t->imbalance > (double)th) t->imbalance = (double)th; /* fewer chunks than threads */
}

/* Share of a window's taps along one dimension that land inside the input
 * (the rest read padding): what a kernel that skips the padding computes. */
static double tap_share(int64_t in, int64_t out, int64_t win, int64_t stride, int64_t pad, int64_t dil) {
  int64_t valid = 0;
  for (int64_t o = 0; o < out; o++)
    for (int64_t r = 0; r < win; r++) {
      int64_t i = o * stride - pad + r * dil;
      valid += i >= 0 && i < in;
    }
  return out > 0 && win > 0 ? (double)valid / (double)(out * win) : 1;
}

static void conv_nchwc(const ob_workload *wl, const ob_config *cfg, int lanes, int threads,
                       ob_predict_tiling *t) {
  int64_t n = ob_workload_get(wl, "N"), c = ob_workload_get(wl, "C"), h = ob_workload_get(wl, "H"),
          w = ob_workload_get(wl, "W"), k = ob_workload_get(wl, "K"), r = ob_workload_get(wl, "R"),
          s = ob_workload_get(wl, "S"), g = ob_workload_get(wl, "groups");
  int64_t sh = ob_workload_get(wl, "stride_h"), sw = ob_workload_get(wl, "stride_w");
  int64_t dh = ob_workload_get(wl, "dil_h"), dw = ob_workload_get(wl, "dil_w");
  int64_t oh = (h + ob_workload_get(wl, "pad_t") + ob_workload_get(wl, "pad_b") - dh * (r - 1) - 1) / sh + 1;
  int64_t ow = (w + ob_workload_get(wl, "pad_l") + ob_workload_get(wl, "pad_r") - dw * (s - 1) - 1) / sw + 1;
  if (oh < 1 || ow < 1 || g < 1) return;
  int64_t ic[2], oc[2], tow[2], toh[2];
  ob_config_split(cfg, "tile_ic", ic);
  ob_config_split(cfg, "tile_oc", oc);
  ob_config_split(cfg, "tile_ow", tow);
  ob_config_split(cfg, "tile_oh", toh);
  int64_t ocb = oc[1], owb = tow[1], ohb = toh[1];
  int64_t occ = ceil_div(k, ocb);
  double vecs = (double)ceil_div(ocb, lanes);
  t->work_ratio = (double)(occ * ocb) / (double)k * (double)(ceil_div(ow, owb) * owb) / (double)ow *
                  (double)(ceil_div(oh, ohb) * ohb) / (double)oh;
  /* pad_inline 2 skips the taps that read padding: on the small maps of
   * deep layers most of a 7-wide window (1x7 over 3 columns: 3 of 7) */
  if (ob_config_knob(cfg, "pad_inline") == 2)
    t->work_ratio *= tap_share(h, oh, r, sh, ob_workload_get(wl, "pad_t"), dh) *
                     tap_share(w, ow, s, sw, ob_workload_get(wl, "pad_l"), dw);
  t->lane_util = (double)ocb / (vecs * lanes);
  double rows = (double)(owb * ohb);
  t->step_eff = step_eff(rows * vecs, rows + vecs);
  t->chunks = n * occ * ceil_div(oh, ohb);
  t->reduction = (double)(c / g * r * s);
  t->block_bytes = 4.0 * (double)(c / g * r * s * ocb); /* one chunk's weights */
  /* a chunk reads its weights and the input rows its output rows need */
  int64_t in_rows = (ohb - 1) * sh + (r - 1) * dh + 1;
  t->traffic_bytes = (double)t->chunks * (t->block_bytes + 4.0 * (double)(c / g * in_rows * w));
  imbalance(t, threads);
}

static void matmul_pack(const ob_workload *wl, const ob_config *cfg, bool batched, int lanes, int threads,
                        ob_predict_tiling *t) {
  int64_t b = batched ? ob_workload_get(wl, "B") : 1, m = ob_workload_get(wl, "M"),
          nn = ob_workload_get(wl, "N"), k = ob_workload_get(wl, "K");
  if (m < 1 || nn < 1) return;
  int64_t ty[2], tx[2];
  ob_config_split(cfg, "tile_y", ty);
  ob_config_split(cfg, "tile_x", tx);
  bool tail = ob_space_knob_find(cfg->space, "m_tail") >= 0 && ob_config_knob(cfg, "m_tail");
  int64_t mp = tail ? m : ceil_div(m, ty[1]) * ty[1], np = ceil_div(nn, tx[1]) * tx[1];
  double vecs = (double)ceil_div(tx[1], lanes);
  t->work_ratio = (double)(mp * np) / (double)(m * nn);
  t->lane_util = (double)tx[1] / (vecs * lanes);
  t->step_eff = step_eff((double)ty[1] * vecs, (double)ty[1] + vecs);
  t->chunks = b * (np / tx[1]) * (mp / ty[1]);
  t->reduction = (double)k;
  t->block_bytes = 4.0 * (double)(k * tx[1]); /* one chunk's panel of B */
  t->traffic_bytes = (double)t->chunks * (t->block_bytes + 4.0 * (double)(k * ty[1])); /* and its rows of A */
  if (tail) { /* a chunk is a whole panel, all rows; the last row block shorter */
    t->chunks = b * (np / tx[1]);
    t->traffic_bytes = (double)t->chunks * 4.0 * (double)(k * tx[1] + k * m);
  }
  int kb = ob_space_knob_find(cfg->space, "k_block");
  int64_t kc = kb >= 0 ? ob_config_knob(cfg, "k_block") : 0;
  if (kc > 0) { /* K in blocks: a chunk is a whole panel, all rows; a block's slice of B is reused */
    t->chunks = b * (np / tx[1]);
    t->block_bytes = 4.0 * (double)(kc * tx[1]);
    t->traffic_bytes = (double)t->chunks * 4.0 * (double)(k * tx[1] + k * mp);
  }
  imbalance(t, threads);
}

void ob_predict_tiling_of(const ob_workload *wl, const char *tmpl, const ob_config *cfg, int lanes,
                          int threads, ob_predict_tiling *t) {
  *t = (ob_predict_tiling){.work_ratio = 1, .lane_util = 1, .step_eff = 1, .chunks = 0,
                           .chunks_per_thread = NAN, .imbalance = 1, .reduction = NAN, .block_bytes = NAN,
                           .traffic_bytes = NAN, .known = false};
  if (!wl || !tmpl || !cfg || lanes < 1) return;
  if (!strcmp(tmpl, "conv2d_NCHWc.x86") && !strcmp(wl->op, "conv2d")) conv_nchwc(wl, cfg, lanes, threads, t);
  else if (!strcmp(tmpl, "dense_pack.x86") && !strcmp(wl->op, "dense")) matmul_pack(wl, cfg, false, lanes, threads, t);
  else if (!strcmp(tmpl, "batch_matmul_pack.x86") && !strcmp(wl->op, "batch_matmul"))
    matmul_pack(wl, cfg, true, lanes, threads, t);
  else return;
  t->known = t->chunks >= 1;
}

double ob_predict_analytic_s(const ob_predict_tiling *t, double flops, double bytes, double peak_gflops,
                             double bandwidth_gbps, int threads) {
  double th = threads > 0 ? threads : 1;
  double peak = peak_gflops > 0 ? peak_gflops : 50.0 * th, bw = bandwidth_gbps > 0 ? bandwidth_gbps : 20.0;
  double f = flops > 1 ? flops : 1;
  double mem = (bytes > 0 ? bytes : 0) / (bw * 1e9);
  if (!t || !t->known) return fmax(fmax(f / (peak * 1e9), mem), 1e-12);
  /* the busiest thread does chunks_per_thread of the chunks' work at the
   * per-thread peak, scaled by the lanes and the inner step it uses */
  double per_thread = peak / th * 1e9 * t->lane_util * t->step_eff;
  double compute = f * t->work_ratio * t->imbalance / th / per_thread;
  return fmax(fmax(compute, mem), 1e-12);
}
