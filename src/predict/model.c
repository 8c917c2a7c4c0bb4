/* model.c: the predictors' ensembles on XGBoost's C API, and their file.
 *
 * An ensemble is M boosters of a regression in log space. Member m leaves
 * out the groups (workloads, or co-run pairs) whose hash falls in fold m:
 * the members differ as bootstrap members would, and each left-out group
 * is predicted by a model that never saw it, so the out-of-fold error is
 * an honest estimate of the error on a new workload. The 90% interval
 * combines it with the members' spread.
 *
 * The file is checked before XGBoost parses any of it (a corrupt buffer
 * is not XGBoost's problem to survive): header line, JSON line with the
 * feature schema and the sections' sizes, a checksum over the boosters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <xgboost/c_api.h>

#include "predict/predict_impl.h"

#define MAX_MEMBERS 16
#define FILE_MAGIC "opbench-predict-model\n"
#define FILE_MAX_BYTES ((int64_t)1 << 30)
#define Z90 1.6448536269514722

struct ensemble {
  char name[64]; /* "op:conv2d", "corun" */
  int nfeat, members;
  BoosterHandle b[MAX_MEMBERS];
  double sigma; /* out-of-fold RMS error in log space */
  int64_t records;
};

ob_predict_train_opts ob_predict_train_opts_default(void) {
  return (ob_predict_train_opts){.members = 5, .rounds = 300, .max_depth = 6, .eta = 0.1,
                                 .nthread = 1, .seed = 1};
}

static ob_status xgb_fail(ob_ctx *ctx, const char *what) {
  return ob_fail(ctx, OB_ERR_RUNTIME, "XGBoost %s: %s", what, XGBGetLastError());
}

static void ensemble_clear(ensemble *e) {
  for (int m = 0; m < e->members; m++)
    if (e->b[m]) XGBoosterFree(e->b[m]);
  memset(e, 0, sizeof *e);
}

void ob_predictor_free(ob_predictor *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++) ensemble_clear(&p->e[i]);
  free(p->e);
  free(p);
}

ensemble *ob_predict_find(const ob_predictor *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->e[i].name, name)) return &p->e[i];
  return NULL;
}

static ob_status add_ensemble(ob_ctx *ctx, ob_predictor *p, const char *name, ensemble **out) {
  ensemble *e = ob_predict_find(p, name);
  if (e) {
    ensemble_clear(e);
  } else {
    ensemble *ne = realloc(p->e, sizeof *ne * (size_t)(p->n + 1));
    if (!ne) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    p->e = ne;
    e = &p->e[p->n++];
    memset(e, 0, sizeof *e);
  }
  snprintf(e->name, sizeof e->name, "%s", name);
  *out = e;
  return OB_OK;
}

/* Mean and variance over the members of the rows x (n x nfeat). */
static ob_status ens_predict(ob_ctx *ctx, const ensemble *e, const float *x, int64_t n,
                             double *mean, double *var) {
  DMatrixHandle d = NULL;
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)e->nfeat, NAN, &d))
    return xgb_fail(ctx, "making a prediction matrix");
  for (int64_t i = 0; i < n; i++) mean[i] = var[i] = 0;
  for (int m = 0; m < e->members; m++) {
    bst_ulong len = 0;
    const float *res = NULL;
    if (XGBoosterPredict(e->b[m], d, 0, 0, 0, &len, &res) || len != (bst_ulong)n) {
      XGDMatrixFree(d);
      return xgb_fail(ctx, "predicting");
    }
    for (int64_t i = 0; i < n; i++) {
      mean[i] += res[i];
      var[i] += (double)res[i] * res[i];
    }
  }
  for (int64_t i = 0; i < n; i++) {
    mean[i] /= e->members;
    var[i] = var[i] / e->members - mean[i] * mean[i];
    if (var[i] < 0) var[i] = 0;
  }
  XGDMatrixFree(d);
  return OB_OK;
}

static ob_status train_one(ob_ctx *ctx, const ob_predict_train_opts *o, int member, const float *x,
                           const float *y, int64_t n, int nfeat, double base, BoosterHandle *out) {
  DMatrixHandle d = NULL;
  BoosterHandle b = NULL;
  ob_status st = OB_OK;
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)nfeat, NAN, &d) ||
      XGDMatrixSetFloatInfo(d, "label", y, (bst_ulong)n)) {
    st = xgb_fail(ctx, "making the training matrix");
    goto done;
  }
  if (XGBoosterCreate(&d, 1, &b)) {
    st = xgb_fail(ctx, "creating a booster");
    goto done;
  }
  char seed[32], depth[16], eta[32], nth[16], bs[48];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)((o->seed * 7919 + (uint64_t)member) & 0x7fffffff));
  snprintf(depth, sizeof depth, "%d", o->max_depth);
  snprintf(eta, sizeof eta, "%g", o->eta);
  snprintf(nth, sizeof nth, "%d", o->nthread);
  snprintf(bs, sizeof bs, "%.17g", base);
  const char *kv[][2] = {{"objective", "reg:squarederror"}, {"tree_method", "hist"},
                         {"max_depth", depth},  {"eta", eta},
                         {"subsample", "0.8"},  {"colsample_bytree", "0.8"},
                         {"min_child_weight", "1"}, {"lambda", "1"},
                         {"base_score", bs},    {"nthread", nth},
                         {"verbosity", "0"},    {"seed", seed}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (XGBoosterSetParam(b, kv[i][0], kv[i][1])) {
      st = xgb_fail(ctx, "setting parameters");
      goto done;
    }
  for (int r = 0; r < o->rounds; r++)
    if (XGBoosterUpdateOneIter(b, r, d)) {
      st = xgb_fail(ctx, "boosting");
      goto done;
    }
  *out = b;
  b = NULL;
done:
  if (b) XGBoosterFree(b);
  if (d) XGDMatrixFree(d);
  return st;
}

ob_status ob_predict_train_ensemble(ob_ctx *ctx, ob_predictor *p, const char *name, const float *x,
                                    const float *y, const uint64_t *group, int64_t n, int nfeat,
                                    const ob_predict_train_opts *opts) {
  ob_predict_train_opts o = opts ? *opts : ob_predict_train_opts_default();
  ob_predict_train_opts def = ob_predict_train_opts_default();
  if (o.members <= 0) o.members = def.members;
  if (o.members > MAX_MEMBERS) o.members = MAX_MEMBERS;
  if (o.rounds <= 0) o.rounds = def.rounds;
  if (o.max_depth <= 0) o.max_depth = def.max_depth;
  if (!(o.eta > 0)) o.eta = def.eta;
  if (o.nthread <= 0) o.nthread = 1;
  if (n <= 0) return ob_fail(ctx, OB_ERR_NOT_FOUND, "%s: no training records", name);
  ensemble *e = NULL;
  ob_status st = add_ensemble(ctx, p, name, &e);
  if (st) return st;
  e->nfeat = nfeat;
  e->records = n;
  double base = 0;
  for (int64_t i = 0; i < n; i++) base += y[i];
  base /= (double)n;
  /* folds of groups: a member leaves its fold out when that leaves it rows
   * and there are at least two groups */
  int M = o.members;
  int64_t ngroups = 0;
  for (int64_t i = 0; i < n && ngroups < 2; i++)
    if (group[i] != group[0]) ngroups = 2;
  bool folds = ngroups >= 2 && M >= 2;
  /* the feature matrices of 100k rows are tens of MiB: on huge pages */
  float *xs = ob_mem_alloc_big(sizeof(float) * (size_t)n * (size_t)nfeat);
  float *ys = malloc(sizeof(float) * (size_t)n);
  double *oof = malloc(sizeof(double) * (size_t)n), *mv = malloc(sizeof(double) * (size_t)n),
         *vv = malloc(sizeof(double) * (size_t)n);
  uint8_t *have = calloc((size_t)n, 1);
  if (!xs || !ys || !oof || !mv || !vv || !have) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory training %s", name);
    goto done;
  }
  for (int m = 0; m < M; m++) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
      if (folds && (int)(group[i] % (uint64_t)M) == m) continue;
      memcpy(xs + (size_t)k * (size_t)nfeat, x + (size_t)i * (size_t)nfeat, sizeof(float) * (size_t)nfeat);
      ys[k++] = y[i];
    }
    if (k == 0) { /* every group in this fold: train on all of them */
      memcpy(xs, x, sizeof(float) * (size_t)n * (size_t)nfeat);
      memcpy(ys, y, sizeof(float) * (size_t)n);
      k = n;
    }
    st = train_one(ctx, &o, m, xs, ys, k, nfeat, base, &e->b[m]);
    if (st) goto done;
    e->members = m + 1;
    if (k == n && folds) continue;
    /* out-of-fold predictions of this member */
    ensemble one = *e;
    one.members = 1;
    one.b[0] = e->b[m];
    int64_t j = 0;
    for (int64_t i = 0; i < n; i++) {
      if (folds && (int)(group[i] % (uint64_t)M) != m) continue;
      memcpy(xs + (size_t)j * (size_t)nfeat, x + (size_t)i * (size_t)nfeat, sizeof(float) * (size_t)nfeat);
      j++;
    }
    if (!folds || j == 0) continue;
    st = ens_predict(ctx, &one, xs, j, mv, vv);
    if (st) goto done;
    j = 0;
    for (int64_t i = 0; i < n; i++) {
      if ((int)(group[i] % (uint64_t)M) != m) continue;
      oof[i] = mv[j++];
      have[i] = 1;
    }
  }
  /* sigma: out of fold where there are folds, else on the training rows */
  double ss = 0;
  int64_t cnt = 0;
  bool any = false;
  for (int64_t i = 0; i < n; i++) any |= have[i];
  if (!any) {
    st = ens_predict(ctx, e, x, n, mv, vv);
    if (st) goto done;
    for (int64_t i = 0; i < n; i++) {
      oof[i] = mv[i];
      have[i] = 1;
    }
  }
  for (int64_t i = 0; i < n; i++)
    if (have[i]) {
      ss += (oof[i] - y[i]) * (oof[i] - y[i]);
      cnt++;
    }
  e->sigma = cnt ? sqrt(ss / (double)cnt) : 0;
  ob_log(ctx, OB_LOG_INFO, "predict: %s: %d members on %lld records, out-of-fold log RMS %.3f", name,
         e->members, (long long)n, e->sigma);
done:
  ob_mem_free_big(xs);
  free(ys);
  free(oof);
  free(mv);
  free(vv);
  free(have);
  if (st) { /* leave no half-trained ensemble behind */
    ensemble_clear(e);
    *e = p->e[p->n - 1];
    p->n--;
  }
  return st;
}

ob_status ob_predict_ensemble_eval(ob_ctx *ctx, const ensemble *e, const float *x, int64_t n,
                                   double *mean, double *sd) {
  ob_status st = ens_predict(ctx, e, x, n, mean, sd);
  if (st) return st;
  for (int64_t i = 0; i < n; i++) sd[i] = sqrt(sd[i] + e->sigma * e->sigma);
  return OB_OK;
}

/* ---- the latency predictor ------------------------------------------------------- */
static ob_predictor *predictor_new(ob_ctx *ctx) {
  ob_predictor *p = calloc(1, sizeof *p);
  if (p) p->ctx = ctx;
  return p;
}

ob_status ob_predictor_train(ob_ctx *ctx, const ob_predict_dataset *d, const uint8_t *use,
                             const ob_predict_train_opts *o, ob_predictor **out) {
  *out = NULL;
  ob_predictor *p = predictor_new(ctx);
  float *x = ob_mem_alloc_big(sizeof(float) * ((size_t)d->n * OB_PREDICT_NFEAT + 1));
  float *y = malloc(sizeof(float) * ((size_t)d->n + 1));
  uint64_t *g = malloc(sizeof(uint64_t) * ((size_t)d->n + 1));
  uint8_t *done = calloc((size_t)d->n + 1, 1);
  ob_status st = OB_OK;
  if (!p || !x || !y || !g || !done) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory training the predictor");
    goto out;
  }
  for (int64_t i = 0; i < d->n; i++) {
    if (done[i] || (use && !use[i])) continue;
    const char *op = d->s[i].op;
    int64_t n = 0;
    for (int64_t j = i; j < d->n; j++) {
      if (done[j] || (use && !use[j]) || strcmp(d->s[j].op, op)) continue;
      done[j] = 1;
      memcpy(x + (size_t)n * OB_PREDICT_NFEAT, d->x + (size_t)j * OB_PREDICT_NFEAT,
             sizeof(float) * OB_PREDICT_NFEAT);
      y[n] = (float)(log(d->s[j].seconds) - log(ob_predict_bound(d->s[j].x, d->s[j].flops)));
      g[n] = ob_hash64(d->s[j].workload, strlen(d->s[j].workload), 0x5eed);
      n++;
    }
    char name[64];
    snprintf(name, sizeof name, "op:%s", op);
    st = ob_predict_train_ensemble(ctx, p, name, x, y, g, n, OB_PREDICT_NFEAT, o);
    if (st) goto out;
  }
  if (p->n == 0) st = ob_fail(ctx, OB_ERR_NOT_FOUND, "no training records (the dataset has %lld usable points)",
                              (long long)d->n);
out:
  ob_mem_free_big(x);
  free(y);
  free(g);
  free(done);
  if (st) {
    ob_predictor_free(p);
    return st;
  }
  *out = p;
  return OB_OK;
}

static void kinds_list(const ob_predictor *p, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < p->n && len < cap; i++)
    if (!strncmp(p->e[i].name, "op:", 3))
      len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", p->e[i].name + 3);
  if (!buf[0]) snprintf(buf, cap, "none");
}

ob_status ob_predictor_predict(ob_predictor *p, const char *op, const float *x, double flops,
                               ob_prediction *out) {
  char name[64];
  snprintf(name, sizeof name, "op:%s", op);
  const ensemble *e = ob_predict_find(p, name);
  if (!e) {
    char kinds[256];
    kinds_list(p, kinds, sizeof kinds);
    return ob_fail(p->ctx, OB_ERR_NOT_FOUND,
                   "the predictor has no model for operator '%s' (no training records of it; trained: %s)",
                   op, kinds);
  }
  double m = 0, sd = 0;
  ob_status st = ob_predict_ensemble_eval(p->ctx, e, x, 1, &m, &sd);
  if (st) return st;
  double lf = log(ob_predict_bound(x, flops)); /* the label is relative to the analytical base */
  out->seconds = exp(m + lf);
  out->lo = exp(m - Z90 * sd + lf);
  out->hi = exp(m + Z90 * sd + lf);
  return OB_OK;
}

int ob_predictor_kinds(const ob_predictor *p) {
  int n = 0;
  for (int i = 0; i < p->n; i++) n += !strncmp(p->e[i].name, "op:", 3);
  return n;
}

const char *ob_predictor_kind(const ob_predictor *p, int i, int64_t *records, double *sigma) {
  for (int j = 0; j < p->n; j++) {
    if (strncmp(p->e[j].name, "op:", 3)) continue;
    if (i-- == 0) {
      if (records) *records = p->e[j].records;
      if (sigma) *sigma = p->e[j].sigma;
      return p->e[j].name + 3;
    }
  }
  return NULL;
}

ob_status ob_predictor_predict_dataset(ob_predictor *p, const ob_predict_dataset *d,
                                       const uint8_t *mask, bool skip_unknown, double *pred) {
  for (int64_t i = 0; i < d->n; i++) pred[i] = NAN;
  for (int k = 0; k < p->n; k++) {
    const ensemble *e = &p->e[k];
    if (strncmp(e->name, "op:", 3)) continue;
    const char *op = e->name + 3;
    int64_t n = 0;
    for (int64_t i = 0; i < d->n; i++) n += (!mask || mask[i]) && !strcmp(d->s[i].op, op);
    if (!n) continue;
    float *x = malloc(sizeof(float) * (size_t)n * OB_PREDICT_NFEAT);
    double *m = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)n);
    if (!x || !m || !v) {
      free(x);
      free(m);
      free(v);
      return ob_fail(p->ctx, OB_ERR_NOMEM, "out of memory predicting");
    }
    int64_t j = 0;
    for (int64_t i = 0; i < d->n; i++)
      if ((!mask || mask[i]) && !strcmp(d->s[i].op, op))
        memcpy(x + (size_t)j++ * OB_PREDICT_NFEAT, d->x + (size_t)i * OB_PREDICT_NFEAT,
               sizeof(float) * OB_PREDICT_NFEAT);
    ob_status st = ens_predict(p->ctx, e, x, n, m, v);
    j = 0;
    for (int64_t i = 0; !st && i < d->n; i++)
      if ((!mask || mask[i]) && !strcmp(d->s[i].op, op)) {
        pred[i] = exp(m[j++] + log(ob_predict_bound(d->s[i].x, d->s[i].flops)));
      }
    free(x);
    free(m);
    free(v);
    if (st) return st;
  }
  if (!skip_unknown)
    for (int64_t i = 0; i < d->n; i++)
      if ((!mask || mask[i]) && isnan(pred[i])) {
        char kinds[256];
        kinds_list(p, kinds, sizeof kinds);
        return ob_fail(p->ctx, OB_ERR_NOT_FOUND,
                       "the predictor has no model for operator '%s' (trained: %s)", d->s[i].op, kinds);
      }
  return OB_OK;
}

/* ---- interference ------------------------------------------------------------------ */
bool ob_predictor_has_interference(const ob_predictor *p) { return ob_predict_find(p, "corun") != NULL; }

ob_status ob_predictor_slowdown(ob_predictor *p, const float *x, ob_prediction *out) {
  const ensemble *e = ob_predict_find(p, "corun");
  if (!e)
    return ob_fail(p->ctx, OB_ERR_NOT_FOUND,
                   "the predictor has no co-run interference model (no co-run records when it was trained)");
  double m = 0, sd = 0;
  ob_status st = ob_predict_ensemble_eval(p->ctx, e, x, 1, &m, &sd);
  if (st) return st;
  out->seconds = exp(m);
  out->lo = exp(m - Z90 * sd);
  out->hi = exp(m + Z90 * sd);
  return OB_OK;
}

ob_predictor *ob_predictor_new(ob_ctx *ctx) { return predictor_new(ctx); }

/* ---- the file ------------------------------------------------------------------------ */
ob_status ob_predictor_save(ob_ctx *ctx, const ob_predictor *p, const char *path) {
  cJSON *root = cJSON_CreateObject(), *secs = NULL;
  char *json = NULL;
  bst_ulong *len = calloc((size_t)p->n * MAX_MEMBERS + 1, sizeof *len);
  const char **buf = calloc((size_t)p->n * MAX_MEMBERS + 1, sizeof *buf);
  ob_status st = OB_OK;
  if (!root || !len || !buf) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory saving the predictor");
    goto done;
  }
  /* XGBoost's buffers live until the booster's next call: copy none, write
   * them right after computing the checksum over all of them */
  uint64_t h = 0x0b9ed1c7;
  char **copies = calloc((size_t)p->n * MAX_MEMBERS + 1, sizeof *copies);
  if (!copies) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory saving the predictor");
    goto done;
  }
  cJSON_AddStringToObject(root, "format", "opbench-predict-model");
  cJSON_AddNumberToObject(root, "schema", OB_PREDICT_SCHEMA);
  secs = cJSON_AddArrayToObject(root, "sections");
  int k = 0;
  for (int i = 0; i < p->n && !st; i++) {
    const ensemble *e = &p->e[i];
    cJSON *s = cJSON_CreateObject();
    cJSON_AddItemToArray(secs, s);
    cJSON_AddStringToObject(s, "name", e->name);
    cJSON_AddNumberToObject(s, "nfeat", e->nfeat);
    cJSON_AddNumberToObject(s, "members", e->members);
    cJSON_AddNumberToObject(s, "sigma", e->sigma);
    cJSON_AddNumberToObject(s, "records", (double)e->records);
    cJSON *sizes = cJSON_AddArrayToObject(s, "sizes");
    for (int m = 0; m < e->members; m++, k++) {
      const char *b = NULL;
      if (XGBoosterSaveModelToBuffer(e->b[m], "{\"format\": \"ubj\"}", &len[k], &b)) {
        st = xgb_fail(ctx, "saving a booster");
        break;
      }
      copies[k] = malloc((size_t)len[k] + 1);
      if (!copies[k]) {
        st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory saving the predictor");
        break;
      }
      memcpy(copies[k], b, (size_t)len[k]);
      h = ob_hash64(copies[k], (size_t)len[k], h);
      cJSON_AddItemToArray(sizes, cJSON_CreateNumber((double)len[k]));
    }
  }
  if (!st) {
    char hex[17];
    ob_hash_hex(h, hex);
    cJSON_AddStringToObject(root, "checksum", hex);
    json = cJSON_PrintUnformatted(root);
    if (!json) st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory saving the predictor");
  }
  if (!st) {
    ob_out o;
    st = ob_out_open(ctx, path, NULL, 0, &o);
    if (!st) {
      bool ok = fputs(FILE_MAGIC, o.f) >= 0 && fputs(json, o.f) >= 0 && fputc('\n', o.f) != EOF;
      for (int i = 0; i < k && ok; i++) ok = fwrite(copies[i], 1, (size_t)len[i], o.f) == (size_t)len[i];
      st = ob_out_close(ctx, &o, ok);
      if (!st && !ok) st = ob_fail(ctx, OB_ERR_IO, "%s: write failed", path);
    }
  }
  for (int i = 0; i < p->n * MAX_MEMBERS; i++) free(copies[i]);
  free(copies);
done:
  cJSON_Delete(root);
  free(json);
  free(len);
  free(buf);
  return st;
}

static ob_status corrupt(ob_ctx *ctx, const char *path, const char *why) {
  return ob_fail(ctx, OB_ERR_PARSE, "%s: corrupt predictor model file (%s); train it again with opbench predict train",
                 path, why);
}

ob_status ob_predictor_load(ob_ctx *ctx, const char *path, ob_predictor **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return ob_fail(ctx, OB_ERR_NOT_FOUND, "%s: cannot open the predictor model file", path);
  struct stat sb;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode) || sb.st_size > FILE_MAX_BYTES) {
    fclose(f);
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: not a regular file of at most 1 GiB", path);
  }
  size_t size = (size_t)sb.st_size;
  char *data = malloc(size + 1);
  if (!data) {
    fclose(f);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory reading %s", path);
  }
  size_t got = fread(data, 1, size, f);
  fclose(f);
  data[got] = 0;
  ob_predictor *p = NULL;
  cJSON *root = NULL;
  ob_status st = OB_OK;
  size_t ml = strlen(FILE_MAGIC);
  if (got < ml || memcmp(data, FILE_MAGIC, ml)) {
    st = ob_fail(ctx, OB_ERR_PARSE, "%s: not an opbench predictor model file (train one with opbench predict train)",
                 path);
    goto done;
  }
  char *nl = memchr(data + ml, '\n', got - ml);
  if (!nl) {
    st = corrupt(ctx, path, "no header");
    goto done;
  }
  *nl = 0;
  root = cJSON_Parse(data + ml);
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  const cJSON *secs = cJSON_GetObjectItemCaseSensitive(root, "sections");
  const cJSON *sum = cJSON_GetObjectItemCaseSensitive(root, "checksum");
  if (!root || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "opbench-predict-model") ||
      !cJSON_IsNumber(schema) || !cJSON_IsArray(secs) || !cJSON_IsString(sum)) {
    st = corrupt(ctx, path, "malformed header");
    goto done;
  }
  if (schema->valueint != OB_PREDICT_SCHEMA) {
    st = ob_fail(ctx, OB_ERR_UNSUPPORTED,
                 "%s: trained for feature schema %d, this build uses schema %d; train it again with opbench predict train",
                 path, schema->valueint, OB_PREDICT_SCHEMA);
    goto done;
  }
  /* sizes and checksum before XGBoost sees anything */
  const char *blob = nl + 1, *end = data + got;
  uint64_t h = 0x0b9ed1c7;
  size_t total = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, secs) {
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(s, "sizes"), *z;
    if (!cJSON_IsArray(sizes)) {
      st = corrupt(ctx, path, "a section without sizes");
      goto done;
    }
    cJSON_ArrayForEach(z, sizes) {
      if (!cJSON_IsNumber(z) || z->valuedouble < 1 || z->valuedouble > (double)(end - blob) ||
          total + (size_t)z->valuedouble > (size_t)(end - blob)) {
        st = corrupt(ctx, path, "truncated");
        goto done;
      }
      h = ob_hash64(blob + total, (size_t)z->valuedouble, h);
      total += (size_t)z->valuedouble;
    }
  }
  char hex[17];
  ob_hash_hex(h, hex);
  if (total != (size_t)(end - blob) || strcmp(hex, sum->valuestring)) {
    st = corrupt(ctx, path, total != (size_t)(end - blob) ? "trailing or missing bytes" : "checksum mismatch");
    goto done;
  }
  p = predictor_new(ctx);
  if (!p) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  size_t at = 0;
  cJSON_ArrayForEach(s, secs) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
    const cJSON *nfeat = cJSON_GetObjectItemCaseSensitive(s, "nfeat");
    const cJSON *sigma = cJSON_GetObjectItemCaseSensitive(s, "sigma");
    const cJSON *recs = cJSON_GetObjectItemCaseSensitive(s, "records");
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(s, "sizes"), *z;
    int want = cJSON_IsString(name) && !strcmp(name->valuestring, "corun") ? OB_INTERF_NFEAT : OB_PREDICT_NFEAT;
    if (!cJSON_IsString(name) || strlen(name->valuestring) >= 64 || !cJSON_IsNumber(nfeat) ||
        !cJSON_IsNumber(sigma) || cJSON_GetArraySize(sizes) < 1 || cJSON_GetArraySize(sizes) > MAX_MEMBERS) {
      st = corrupt(ctx, path, "malformed section");
      goto done;
    }
    if (nfeat->valueint != want) {
      st = ob_fail(ctx, OB_ERR_UNSUPPORTED, "%s: section %s has %d features, this build's schema %d has %d",
                   path, name->valuestring, nfeat->valueint, OB_PREDICT_SCHEMA, want);
      goto done;
    }
    ensemble *e = NULL;
    st = add_ensemble(ctx, p, name->valuestring, &e);
    if (st) goto done;
    e->nfeat = want;
    e->sigma = sigma->valuedouble;
    /* the header is outside the checksum: range first, the cast of an
     * out-of-range double is undefined */
    e->records = cJSON_IsNumber(recs) && recs->valuedouble >= 0 && recs->valuedouble <= 9e15
                     ? (int64_t)recs->valuedouble
                     : 0;
    cJSON_ArrayForEach(z, sizes) {
      size_t n = (size_t)z->valuedouble;
      BoosterHandle b = NULL;
      if (XGBoosterCreate(NULL, 0, &b) || XGBoosterLoadModelFromBuffer(b, blob + at, (bst_ulong)n)) {
        if (b) XGBoosterFree(b);
        st = corrupt(ctx, path, XGBGetLastError());
        goto done;
      }
      e->b[e->members++] = b;
      at += n;
    }
  }
done:
  cJSON_Delete(root);
  free(data);
  if (st) {
    ob_predictor_free(p);
    return st;
  }
  *out = p;
  return OB_OK;
}
