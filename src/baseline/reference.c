/* reference.c: naive references for the workloads opbench has no task for
 * yet (grouped and depthwise conv2d, batch_matmul, pooling), written to agree
 * with src/ops: double accumulation, the epilogue applied as
 * ob_epilogue_ref does, inputs from ob_task_fill's generator and the
 * comparison with ob_task_check's float32 tolerance. Nothing here allocates
 * beyond one accumulator per call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline/baseline_impl.h"

/* The epilogue tail of ob_epilogue_ref: channel (i / inner) % chans. */
static void epilogue(const ob_bl_problem *p, double *acc, int64_t numel, int64_t chans, int64_t inner,
                     const float *bias, const float *res) {
  for (int s = 0; s < p->nepi; s++)
    for (int64_t i = 0; i < numel; i++) {
      switch (p->epi[s]) {
      case OB_BL_EPI_BIAS: acc[i] = (float)(acc[i] + bias[(i / inner) % chans]); break;
      case OB_BL_EPI_RELU: acc[i] = acc[i] > 0 ? acc[i] : 0; break;
      case OB_BL_EPI_RELU6: acc[i] = acc[i] < 0 ? 0 : acc[i] > 6 ? 6 : acc[i]; break;
      case OB_BL_EPI_ADD: acc[i] = (float)(acc[i] + res[i]); break;
      default: break;
      }
    }
}

static void conv_ref(const ob_bl_problem *p, const float *in, const float *wt, double *acc) {
  int64_t cg = p->c / p->g, kg = p->k / p->g;
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t k = 0; k < p->k; k++) {
      int64_t c0 = k / kg * cg;
      for (int64_t y = 0; y < p->oh; y++)
        for (int64_t x = 0; x < p->ow; x++) {
          double s = 0;
          for (int64_t c = 0; c < cg; c++)
            for (int64_t ry = 0; ry < p->r; ry++) {
              int64_t iy = y * p->sh + ry * p->dh - p->pt;
              if (iy < 0 || iy >= p->h) continue;
              for (int64_t rx = 0; rx < p->s; rx++) {
                int64_t ix = x * p->sw + rx * p->dw - p->pl;
                if (ix < 0 || ix >= p->w) continue;
                s += (double)in[((n * p->c + c0 + c) * p->h + iy) * p->w + ix] *
                     wt[((k * cg + c) * p->r + ry) * p->s + rx];
              }
            }
          acc[((n * p->k + k) * p->oh + y) * p->ow + x] = s;
        }
    }
}

static void matmul_ref(const ob_bl_problem *p, const float *A, const float *B, double *acc) {
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t i = 0; i < p->m; i++)
      for (int64_t j = 0; j < p->nn; j++) {
        const float *a = A + (b * p->m + i) * p->kk, *w = B + (b * p->nn + j) * p->kk;
        double s = 0;
        for (int64_t k = 0; k < p->kk; k++) s += (double)a[k] * w[k];
        acc[(b * p->m + i) * p->nn + j] = s;
      }
}

/* Max ignores the padding; averages divide by R*S or by the in-bounds count. */
static void pool_ref(const ob_bl_problem *p, const float *in, double *acc) {
  for (int64_t nc = 0; nc < p->n * p->c; nc++)
    for (int64_t y = 0; y < p->oh; y++)
      for (int64_t x = 0; x < p->ow; x++) {
        double s = p->pool == OB_BL_POOL_MAX ? -INFINITY : 0;
        int64_t cnt = 0;
        for (int64_t ry = 0; ry < p->r; ry++) {
          int64_t iy = y * p->sh + ry - p->pt;
          if (iy < 0 || iy >= p->h) continue;
          for (int64_t rx = 0; rx < p->s; rx++) {
            int64_t ix = x * p->sw + rx - p->pl;
            if (ix < 0 || ix >= p->w) continue;
            double v = in[(nc * p->h + iy) * p->w + ix];
            if (p->pool == OB_BL_POOL_MAX) s = v > s ? v : s;
            else s += v;
            cnt++;
          }
        }
        if (p->pool == OB_BL_POOL_AVG_INCLUDE) s /= (double)(p->r * p->s);
        else if (p->pool == OB_BL_POOL_AVG_EXCLUDE) s = cnt ? s / (double)cnt : 0;
        acc[(nc * p->oh + y) * p->ow + x] = s;
      }
}

void ob_bl_reference(const ob_bl_problem *p, void *const *bufs) {
  int o = p->nargs - 1, ib = ob_bl_problem_arg(p, OB_BL_BIAS), ir = ob_bl_problem_arg(p, OB_BL_RESIDUAL);
  int64_t numel = p->args[o].numel;
  double *acc = malloc(sizeof(double) * (size_t)(numel ? numel : 1));
  OB_ASSERT(acc); /* references run on test-sized problems */
  const float *bias = ib >= 0 ? bufs[ib] : NULL, *res = ir >= 0 ? bufs[ir] : NULL;
  switch (p->kind) {
  case OB_BL_CONV2D:
    conv_ref(p, bufs[0], bufs[1], acc);
    epilogue(p, acc, numel, p->k, p->oh * p->ow, bias, res);
    break;
  case OB_BL_MATMUL:
    matmul_ref(p, bufs[0], bufs[1], acc);
    epilogue(p, acc, numel, p->nn, 1, bias, res);
    break;
  case OB_BL_POOL2D: pool_ref(p, bufs[0], acc); break;
  default: OB_ASSERT(!"bad problem kind");
  }
  float *out = bufs[o];
  for (int64_t i = 0; i < numel; i++) out[i] = (float)acc[i];
  free(acc);
}

void ob_bl_fill(const ob_bl_problem *p, uint64_t seed, void *const *bufs) {
  ob_rng r = {seed * 0x9E3779B97F4A7C15ULL + 1}; /* as ob_task_fill */
  for (int i = 0; i < p->nargs; i++) {
    float *f = bufs[i];
    if (p->args[i].is_input)
      for (int64_t k = 0; k < p->args[i].numel; k++) f[k] = ob_rng_float(&r);
    else
      for (int64_t k = 0; k < p->args[i].numel; k++) f[k] = NAN;
  }
}

ob_status ob_bl_compare(const ob_bl_problem *p, const float *got, const float *ref, char *msg,
                        size_t cap) {
  int o = p->nargs - 1;
  int64_t n = p->args[o].numel;
  double amax = 0;
  for (int64_t k = 0; k < n; k++)
    if (fabs(ref[k]) > amax) amax = fabs(ref[k]);
  ob_tolerance tol = p->winograd ? ob_winograd_tolerance(0) : ob_tolerance_default();
  double atol = tol.atol * sqrt((double)p->red) * (amax > 1 ? amax : 1) + 1e-6;
  for (int64_t k = 0; k < n; k++) {
    double d = fabs((double)got[k] - ref[k]);
    if (!(d <= tol.rtol * fabs(ref[k]) + atol)) { /* NaN fails too */
      snprintf(msg, cap, "wrong answer: %s[%lld] = %.7g, reference %.7g (tolerance %.3g)",
               p->args[o].name, (long long)k, got[k], ref[k], tol.rtol * fabs(ref[k]) + atol);
      return OB_ERR_WRONG_ANSWER;
    }
  }
  return OB_OK;
}
