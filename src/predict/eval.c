/* eval.c: TenSet's and nn-Meter's metrics, and the correlation helpers.
 * Ranking metrics are per task (host, workload, target, resources): the
 * configs of one task are what a cost model must order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/predict.h"

typedef struct idx_key {
  const ob_predict_sample *s;
  int64_t i;
} idx_key;

static int task_cmp(const ob_predict_sample *a, const ob_predict_sample *b) {
  int c;
  if ((c = strcmp(a->host, b->host))) return c;
  if ((c = strcmp(a->workload, b->workload))) return c;
  if ((c = strcmp(a->target, b->target))) return c;
  return strcmp(a->resources, b->resources);
}

static int by_task(const void *x, const void *y) {
  const idx_key *a = x, *b = y;
  int c = task_cmp(a->s, b->s);
  if (c) return c;
  return a->i < b->i ? -1 : a->i > b->i;
}

static int by_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

void ob_predict_metrics_compute(const ob_predict_dataset *d, const uint8_t *mask, const double *pred,
                                ob_predict_metrics *out) {
  memset(out, 0, sizeof *out);
  out->pairwise = out->score1 = out->score5 = NAN;
  double se = 0;
  int64_t within = 0;
  idx_key *k = malloc(sizeof *k * (size_t)(d->n + 1));
  double *ape = malloc(sizeof(double) * (size_t)(d->n + 1));
  int64_t nk = 0;
  out->mdape = NAN;
  for (int64_t i = 0; i < d->n; i++) {
    if ((mask && !mask[i]) || !(pred[i] > 0) || !(d->s[i].seconds > 0)) continue;
    double e = (pred[i] - d->s[i].seconds) / d->s[i].seconds;
    se += e * e;
    within += fabs(e) <= 0.1;
    if (ape) ape[out->n] = fabs(e);
    out->n++;
    if (k) k[nk++] = (idx_key){&d->s[i], i};
  }
  if (!out->n) {
    out->rmspe = out->within10 = NAN;
    free(k);
    free(ape);
    return;
  }
  if (ape) {
    qsort(ape, (size_t)out->n, sizeof *ape, by_double);
    out->mdape = out->n % 2 ? ape[out->n / 2] : (ape[out->n / 2 - 1] + ape[out->n / 2]) / 2;
    free(ape);
  }
  out->rmspe = sqrt(se / (double)out->n);
  out->within10 = (double)within / (double)out->n;
  if (!k) return;
  qsort(k, (size_t)nk, sizeof *k, by_task);
  int64_t right = 0;
  double s1 = 0, s5 = 0;
  for (int64_t lo = 0; lo < nk;) {
    int64_t hi = lo + 1;
    while (hi < nk && !task_cmp(k[hi].s, k[lo].s)) hi++;
    int64_t m = hi - lo;
    if (m >= 2) {
      for (int64_t a = lo; a < hi; a++)
        for (int64_t b = a + 1; b < hi; b++) {
          double ta = k[a].s->seconds, tb = k[b].s->seconds;
          if (ta == tb) continue;
          double pa = pred[k[a].i], pb = pred[k[b].i];
          out->npairs++;
          right += (ta < tb) == (pa < pb);
        }
      /* best true among the predicted top-k over the true best (time: lower is better) */
      double best = INFINITY;
      for (int64_t a = lo; a < hi; a++) best = fmin(best, k[a].s->seconds);
      for (int kk = 1; kk <= 5; kk += 4) {
        double got = INFINITY;
        uint8_t *taken = calloc((size_t)m, 1);
        if (!taken) break;
        for (int r = 0; r < kk && r < m; r++) {
          int64_t pick = -1;
          for (int64_t a = lo; a < hi; a++)
            if (!taken[a - lo] && (pick < 0 || pred[k[a].i] < pred[k[pick].i])) pick = a;
          taken[pick - lo] = 1;
          got = fmin(got, k[pick].s->seconds);
        }
        free(taken);
        if (kk == 1) s1 += best / got;
        else s5 += best / got;
      }
      out->ntasks++;
    }
    lo = hi;
  }
  if (out->npairs) out->pairwise = (double)right / (double)out->npairs;
  if (out->ntasks) {
    out->score1 = s1 / (double)out->ntasks;
    out->score5 = s5 / (double)out->ntasks;
  }
  free(k);
}

double ob_pearson(const double *x, const double *y, int64_t n) {
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i]) || isnan(y[i])) continue;
    sx += x[i];
    sy += y[i];
    m++;
  }
  if (m < 3) return NAN;
  double mx = sx / (double)m, my = sy / (double)m;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i]) || isnan(y[i])) continue;
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return NAN;
  return sxy / sqrt(sxx * syy);
}

typedef struct vi {
  double v;
  int64_t i;
} vi;

static int by_v(const void *a, const void *b) {
  const vi *x = a, *y = b;
  return x->v < y->v ? -1 : x->v > y->v;
}

/* Average ranks (1-based) of the non-NAN entries of v[0..n) selected by ok. */
static void ranks(const double *v, const uint8_t *ok, int64_t n, double *r, vi *tmp) {
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (ok[i]) tmp[m++] = (vi){v[i], i};
  qsort(tmp, (size_t)m, sizeof *tmp, by_v);
  for (int64_t a = 0; a < m;) {
    int64_t b = a + 1;
    while (b < m && tmp[b].v == tmp[a].v) b++;
    double avg = (double)(a + b + 1) / 2.0;
    for (int64_t j = a; j < b; j++) r[tmp[j].i] = avg;
    a = b;
  }
}

double ob_spearman(const double *x, const double *y, int64_t n) {
  uint8_t *ok = malloc((size_t)n + 1);
  double *rx = malloc(sizeof(double) * ((size_t)n + 1)), *ry = malloc(sizeof(double) * ((size_t)n + 1));
  vi *tmp = malloc(sizeof(vi) * ((size_t)n + 1));
  double res = NAN;
  if (ok && rx && ry && tmp) {
    for (int64_t i = 0; i < n; i++) {
      ok[i] = !isnan(x[i]) && !isnan(y[i]);
      rx[i] = ry[i] = NAN;
    }
    ranks(x, ok, n, rx, tmp);
    ranks(y, ok, n, ry, tmp);
    res = ob_pearson(rx, ry, n);
  }
  free(ok);
  free(rx);
  free(ry);
  free(tmp);
  return res;
}

int ob_turnaround(const int *threads, const double *lat, int n, double gain) {
  if (n <= 0) return 0;
  for (int i = 0; i + 1 < n; i++)
    if (!(lat[i + 1] < lat[i] * (1.0 - gain))) return threads[i];
  return threads[n - 1];
}
