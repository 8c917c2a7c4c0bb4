/* interfere.c: the co-run interference model. A point is "A timed while B
 * runs over and over beside it" from the profiler's co-run sweep (stream:
 * disjoint cores, full: the same cores); its label is A's slowdown over A
 * alone. The features describe both sides by size, intensity, threads and
 * latency alone, so a pair never measured together can be predicted from
 * pairs that were. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predict/predict_impl.h"

static float lg(double v) { return (float)log2(1.0 + fabs(v)); }

/* A side's traffic (bytes over time alone) over the host's bandwidth at
 * its thread count: the cache level its bytes fit in, memory beyond. */
static double demand(const ob_db_host_limits *lim, const char *host, int threads, double bytes, double alone_s) {
  double bw = lim ? ob_predict_cache_bandwidth(lim, host, threads, bytes) : NAN;
  return bw > 0 && alone_s > 0 && bytes > 0 ? bytes / alone_s / (bw * 1e9) : NAN;
}

/* A side's FLOP rate alone over the host's best FMA peak at its thread
 * count (any ISA's, scaled from the nearest count below): near 1 it keeps
 * the FMA units busy, which a partner on the same physical core (SMT
 * siblings behind two vCPUs) halves; far below, it waits on something else. */
static double fma_share(const ob_db_host_limits *lim, const char *host, int threads, double flops, double alone_s) {
  double peak = NAN;
  int at = 0;
  for (int64_t i = 0; lim && i < lim->n; i++) {
    const ob_db_host_limit *h = &lim->l[i];
    if ((host && strcmp(h->host, host)) || strcmp(h->name, "fma_peak") || h->threads < 1 || h->threads > threads ||
        !(h->value > 0))
      continue;
    double v = h->value * threads / h->threads;
    if (h->threads > at || (h->threads == at && v > peak)) {
      at = h->threads;
      peak = v;
    }
  }
  return peak > 0 && alone_s > 0 && flops > 0 ? flops / alone_s / (peak * 1e9) : NAN;
}

void ob_interf_features(double a_flops, double a_bytes, int a_threads, double a_alone_s,
                        double b_flops, double b_bytes, int b_threads, double b_alone_s, bool full,
                        int shared_cores, const ob_db_host_limits *lim, const char *host, float *out) {
  out[0] = lg(a_flops);
  out[1] = lg(a_bytes);
  out[2] = a_bytes > 0 ? lg(a_flops / a_bytes) : NAN;
  out[3] = (float)a_threads;
  out[4] = a_alone_s > 0 ? lg(a_alone_s * 1e9) : NAN;
  out[5] = lg(b_flops);
  out[6] = lg(b_bytes);
  out[7] = b_bytes > 0 ? lg(b_flops / b_bytes) : NAN;
  out[8] = (float)b_threads;
  out[9] = b_alone_s > 0 ? lg(b_alone_s * 1e9) : NAN;
  out[10] = full ? 1.0f : 0.0f;
  out[11] = (float)shared_cores;
  out[12] = lg(a_bytes + b_bytes);
  double da = demand(lim, host, a_threads, a_bytes, a_alone_s), db = demand(lim, host, b_threads, b_bytes, b_alone_s);
  out[13] = (float)da;
  out[14] = (float)db;
  out[15] = (float)(da + db);
  out[16] = a_alone_s > 0 && b_alone_s > 0 ? (float)log2(b_alone_s / a_alone_s) : NAN;
  double fa = fma_share(lim, host, a_threads, a_flops, a_alone_s), fb = fma_share(lim, host, b_threads, b_flops, b_alone_s);
  out[17] = (float)fa;
  out[18] = (float)fb;
  out[19] = (float)(fa * fb);
}

void ob_corun_dataset_free(ob_corun_dataset *d) {
  if (!d) return;
  ob_arena_free(d->arena);
  free(d->s);
  free(d);
}

static int parse_set(const char *s, int *v, int cap) {
  int n = 0;
  while (s && *s && n < cap) {
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s) break;
    v[n++] = (int)x;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

static int shared(const char *a, const char *b) {
  int x[256], y[256];
  int nx = parse_set(a, x, 256), ny = parse_set(b, y, 256), n = 0;
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++) n += x[i] == y[j];
  return n;
}

/* A workload's FLOPs and bytes from its operator and attributes. */
static bool wl_size(ob_ctx *ctx, const char *op, const char *attrs, double *flops, double *bytes) {
  ob_workload wl;
  if (!op || !attrs || ob_workload_from_attrs(ctx, op, attrs, &wl)) {
    ob_ctx_clear_error(ctx);
    return false;
  }
  *flops = ob_workload_flops(&wl);
  *bytes = ob_predict_workload_bytes(&wl);
  return true;
}

ob_status ob_corun_dataset_load(ob_ctx *ctx, ob_db *db, const char *host, ob_corun_dataset **out) {
  *out = NULL;
  ob_db_profiles *prof = NULL;
  ob_db_host_limits *lim = NULL;
  ob_corun_dataset *d = calloc(1, sizeof *d);
  ob_status st = OB_OK;
  if (!d || !(d->arena = ob_arena_new(ctx, 0))) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  ob_db_profile_filter pf = {.host = host, .ok_only = true};
  st = ob_db_query_profiles(db, &pf, &prof);
  if (st) goto done;
  st = ob_db_get_host_limits(db, host, &lim);
  if (st) goto done;
  d->s = calloc((size_t)prof->n + 1, sizeof *d->s);
  if (!d->s) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int64_t i = 0; i < prof->n; i++) {
    const ob_db_profile *p = &prof->p[i];
    const char *bkey = p->key.corun_workload, *mode = p->key.corun_mode;
    if (!bkey || !*bkey || !mode || !*mode) continue;
    double slow = isfinite(p->slowdown) && p->slowdown > 0 ? p->slowdown
                  : p->alone_s > 0                         ? p->timing.median_s / p->alone_s
                                                           : NAN;
    if (!(slow > 0)) continue;
    double af, ab, bf = 0, bb = 0, balone = NAN, bco = NAN;
    if (!wl_size(ctx, p->op, p->attrs, &af, &ab)) {
      d->skipped++;
      continue;
    }
    int bthreads = parse_set(p->corun_cores, (int[256]){0}, 256);
    if (bthreads < 1) bthreads = 1;
    /* B's size and latency alone from its own points */
    bool found = false;
    for (int64_t j = 0; j < prof->n; j++) {
      const ob_db_profile *q = &prof->p[j];
      if (strcmp(q->key.workload, bkey)) continue;
      if (!found) found = wl_size(ctx, q->op, q->attrs, &bf, &bb);
      if ((!q->key.corun_workload || !*q->key.corun_workload) && q->key.pressure_mib == 0 &&
          q->nthreads == bthreads && q->timing.median_s > 0 &&
          !(balone <= q->timing.median_s))
        balone = q->timing.median_s;
      /* B's own co-run points hold its time alone too (their alone_s) */
      else if (q->key.corun_workload && *q->key.corun_workload && q->nthreads == bthreads && q->alone_s > 0 &&
               !(bco <= q->alone_s))
        bco = q->alone_s;
    }
    if (isnan(balone)) balone = bco;
    if (!found) {
      ob_db_records *r = NULL;
      if (!ob_db_workload_records(db, bkey, &r) && r->n > 0)
        found = wl_size(ctx, r->rec[0].op, r->rec[0].attrs, &bf, &bb);
      ob_ctx_clear_error(ctx);
      ob_db_records_free(r);
    }
    if (!found) {
      d->skipped++;
      continue;
    }
    ob_corun_sample *s = &d->s[d->n];
    s->a = ob_arena_strdup(d->arena, p->key.workload);
    s->b = ob_arena_strdup(d->arena, bkey);
    s->mode = ob_arena_strdup(d->arena, mode);
    if (ob_arena_failed(d->arena)) {
      st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
      goto done;
    }
    ob_interf_features(af, ab, p->nthreads > 0 ? p->nthreads : 1, p->alone_s, bf, bb, bthreads,
                       balone, !strcmp(mode, "full"), shared(p->cores, p->corun_cores), lim, p->key.host, s->x);
    s->slowdown = slow;
    s->timestamp = p->timestamp;
    d->n++;
  }
done:
  ob_db_profiles_free(prof);
  ob_db_host_limits_free(lim);
  if (st) {
    ob_corun_dataset_free(d);
    return st;
  }
  *out = d;
  return OB_OK;
}

static uint64_t pair_hash(const char *a, const char *b) {
  uint64_t x = ob_hash64(a, strlen(a), 0x5eed), y = ob_hash64(b, strlen(b), 0x5eed);
  return x ^ y; /* unordered: (A, B) and (B, A) stay on the same side */
}

void ob_corun_split_pairs(const ob_corun_dataset *d, int fold, int nfolds, uint8_t *test) {
  OB_ASSERT(nfolds >= 1 && fold >= 0 && fold < nfolds);
  for (int64_t i = 0; i < d->n; i++)
    test[i] = (uint8_t)(pair_hash(d->s[i].a, d->s[i].b) % (uint64_t)nfolds == (uint64_t)fold);
}

ob_status ob_predictor_train_interference(ob_predictor *p, const ob_corun_dataset *d,
                                          const uint8_t *use, const ob_predict_train_opts *o) {
  int64_t n = 0;
  float *x = malloc(sizeof(float) * OB_INTERF_NFEAT * ((size_t)d->n + 1));
  float *y = malloc(sizeof(float) * ((size_t)d->n + 1));
  uint64_t *g = malloc(sizeof(uint64_t) * ((size_t)d->n + 1));
  ob_status st = OB_OK;
  if (!x || !y || !g) {
    st = ob_fail(p->ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int64_t i = 0; i < d->n; i++) {
    if (use && !use[i]) continue;
    memcpy(x + (size_t)n * OB_INTERF_NFEAT, d->s[i].x, sizeof(float) * OB_INTERF_NFEAT);
    y[n] = (float)log(d->s[i].slowdown);
    g[n] = pair_hash(d->s[i].a, d->s[i].b);
    n++;
  }
  if (!n) {
    st = ob_fail(p->ctx, OB_ERR_NOT_FOUND, "no co-run records to train the interference model on");
    goto done;
  }
  st = ob_predict_train_ensemble(p->ctx, p, "corun", x, y, g, n, OB_INTERF_NFEAT, o);
done:
  free(x);
  free(y);
  free(g);
  return st;
}
