/* dataset.c: the database's points as training rows, and the held-out
 * splits. Every point is rebuilt as a task of its workload, template and
 * target so that its config's loop nest can be described; tasks are kept
 * while consecutive points share them (queries come ordered by key). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/graph.h"
#include "opbench/predict.h"

void ob_predict_dataset_free(ob_predict_dataset *d) {
  if (!d) return;
  ob_arena_free(d->arena);
  free(d->x);
  free(d->s);
  free(d);
}

typedef struct builder {
  ob_ctx *ctx;
  ob_predict_dataset *d;
  int64_t cap;
  ob_db_host_limits *limits;
  /* the task of the last point */
  char key[768];
  ob_task *task;
  ob_workload wl;
  const ob_workload *wl_copy; /* in the dataset's arena */
  bool task_ok;
  /* parsed targets */
  int ntargets;
  char *target_text[16];
  ob_target *targets[16];
} builder;

static ob_target *target_of(builder *b, const char *text) {
  for (int i = 0; i < b->ntargets; i++)
    if (!strcmp(b->target_text[i], text)) return b->targets[i];
  if (b->ntargets == 16) return NULL;
  ob_target *t = NULL;
  if (ob_target_parse(b->ctx, text, &t)) {
    ob_ctx_clear_error(b->ctx);
    t = NULL;
  }
  b->target_text[b->ntargets] = strdup(text);
  b->targets[b->ntargets++] = t;
  return t;
}

static int count_cores(const char *cores) {
  if (!cores || !*cores) return 0;
  int n = 1;
  for (const char *c = cores; *c; c++) n += *c == ',';
  return n;
}

static int threads_of(int nthreads, const char *resources) {
  if (nthreads > 0) return nthreads;
  const char *t = resources ? strstr(resources, "threads=") : NULL;
  return t ? atoi(t + 8) : 1;
}

/* One point: rebuilds its task (cached) and config, appends the row. */
static ob_status add_point(builder *b, const char *op, const char *attrs, const char *workload,
                           const char *host, const char *target, const char *resources,
                           const char *tmpl, uint64_t index, const char *entity, int nthreads,
                           const char *cores, double pressure, double median, bool profile) {
  ob_predict_dataset *d = b->d;
  char key[768];
  snprintf(key, sizeof key, "%s|%s|%s", workload, tmpl, target);
  if (strcmp(key, b->key)) {
    ob_task_free(b->task);
    b->task = NULL;
    snprintf(b->key, sizeof b->key, "%s", key);
    ob_target *t = target_of(b, target);
    b->task_ok = t && ob_workload_from_attrs(b->ctx, op, attrs, &b->wl) == OB_OK &&
                 ob_task_new(b->ctx, &b->wl, tmpl, t, &b->task) == OB_OK;
    if (!b->task_ok) ob_ctx_clear_error(b->ctx);
    b->wl_copy = NULL;
    if (b->task_ok) {
      ob_workload *w = ob_arena_alloc(d->arena, sizeof *w);
      if (!w) return ob_fail(b->ctx, OB_ERR_NOMEM, "out of memory loading the dataset");
      *w = b->wl;
      b->wl_copy = w;
    }
  }
  if (!b->task_ok) {
    d->skipped++;
    return OB_OK;
  }
  ob_config cfg;
  const ob_space *s = ob_task_space(b->task);
  bool ok = entity && *entity ? ob_config_from_json(b->ctx, s, entity, &cfg) == OB_OK
                              : ob_space_get(b->ctx, s, index, &cfg) == OB_OK;
  if (!ok) {
    ob_ctx_clear_error(b->ctx);
    d->skipped++;
    return OB_OK;
  }
  if (d->n == b->cap) {
    int64_t cap = b->cap ? b->cap * 2 : 256;
    ob_predict_sample *ns = realloc(d->s, sizeof *ns * (size_t)cap);
    if (!ns) return ob_fail(b->ctx, OB_ERR_NOMEM, "out of memory loading the dataset");
    d->s = ns;
    float *nx = realloc(d->x, sizeof(float) * OB_PREDICT_NFEAT * (size_t)cap);
    if (!nx) return ob_fail(b->ctx, OB_ERR_NOMEM, "out of memory loading the dataset");
    d->x = nx;
    b->cap = cap;
  }
  ob_predict_sample *p = &d->s[d->n];
  memset(p, 0, sizeof *p);
  ob_arena *a = d->arena;
  p->op = ob_arena_strdup(a, op);
  p->workload = ob_arena_strdup(a, workload);
  p->host = ob_arena_strdup(a, host);
  p->target = ob_arena_strdup(a, target);
  p->resources = ob_arena_strdup(a, resources ? resources : "");
  p->tmpl = ob_arena_strdup(a, tmpl);
  if (ob_arena_failed(a)) return ob_fail(b->ctx, OB_ERR_NOMEM, "out of memory loading the dataset");
  p->config_index = cfg.index;
  p->threads = threads_of(nthreads, resources);
  p->ncores = count_cores(cores);
  if (p->ncores == 0) p->ncores = p->threads;
  p->pressure_mib = pressure;
  p->seconds = median;
  p->flops = ob_workload_flops(&b->wl);
  p->from_profile = profile;
  p->wl = b->wl_copy;
  ob_predict_point pt = {.wl = &b->wl, .task = b->task, .cfg = &cfg, .threads = p->threads,
                         .ncores = p->ncores, .pressure_mib = pressure};
  ob_predict_point_limits(b->limits, host, &pt);
  float *x = d->x + (size_t)d->n * OB_PREDICT_NFEAT;
  ob_status st = ob_predict_features(b->ctx, &pt, x);
  if (st) return st;
  d->n++;
  return OB_OK;
}

ob_status ob_predict_dataset_load(ob_ctx *ctx, ob_db *db, const ob_predict_data_opts *o,
                                  ob_predict_dataset **out) {
  *out = NULL;
  ob_predict_data_opts def = {0};
  if (!o) o = &def;
  builder b;
  memset(&b, 0, sizeof b);
  b.ctx = ctx;
  ob_db_records *recs = NULL;
  ob_db_profiles *prof = NULL;
  ob_predict_dataset *d = calloc(1, sizeof *d);
  ob_status st = OB_OK;
  if (!d || !(d->arena = ob_arena_new(ctx, 0))) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory loading the dataset");
    goto done;
  }
  b.d = d;
  st = ob_db_get_host_limits(db, o->host, &b.limits);
  if (st) goto done;
  ob_db_filter f;
  memset(&f, 0, sizeof f);
  f.key.host = o->host;
  f.op = o->op;
  f.ok_only = true;
  f.order = OB_DB_ORDER_KEY;
  st = ob_db_query(db, &f, &recs);
  if (st) goto done;
  int64_t total = recs->n;
  if (!o->no_profiles) {
    ob_db_profile_filter pf = {.host = o->host, .op = o->op, .ok_only = true};
    st = ob_db_query_profiles(db, &pf, &prof);
    if (st) goto done;
    total += prof->n;
  }
  int64_t stride = o->max_records > 0 ? (total + o->max_records - 1) / o->max_records : 1;
  if (stride < 1) stride = 1;
  int64_t at = 0;
  for (int64_t i = 0; i < recs->n; i++, at++) {
    const ob_db_record *r = &recs->rec[i];
    if (at % stride) continue;
    if (r->error_no || r->timing.emulated || !(r->timing.median_s > 0) || !r->op || !r->attrs) {
      d->skipped += r->error_no == 0;
      continue;
    }
    if (o->max_cv > 0 && !o->cv_profiles_only && r->timing.cv > o->max_cv) {
      d->noisy++;
      continue;
    }
    st = add_point(&b, r->op, r->attrs, r->workload, r->host, r->target, r->resources, r->tmpl,
                   r->config_index, r->entity, r->nthreads, r->cores, 0, r->timing.median_s, false);
    if (st) goto done;
  }
  for (int64_t i = 0; prof && i < prof->n; i++, at++) {
    const ob_db_profile *p = &prof->p[i];
    if (at % stride) continue;
    if (p->key.corun_workload && *p->key.corun_workload) continue; /* the interference model's */
    if (p->error_no || p->timing.emulated || !(p->timing.median_s > 0) || !p->op || !p->attrs) {
      d->skipped += p->error_no == 0;
      continue;
    }
    if (o->max_cv > 0 && p->timing.cv > o->max_cv) {
      d->noisy++;
      continue;
    }
    st = add_point(&b, p->op, p->attrs, p->key.workload, p->key.host, p->key.target,
                   p->key.resources, p->key.tmpl, p->key.config_index, p->entity, p->nthreads,
                   p->cores, p->key.pressure_mib, p->timing.median_s, true);
    if (st) goto done;
  }
done:
  for (int64_t i = 0; d && i < d->n; i++) d->s[i].x = d->x + (size_t)i * OB_PREDICT_NFEAT;
  ob_task_free(b.task);
  for (int i = 0; i < b.ntargets; i++) {
    free(b.target_text[i]);
    ob_target_free(b.targets[i]);
  }
  ob_db_host_limits_free(b.limits);
  ob_db_records_free(recs);
  ob_db_profiles_free(prof);
  if (st) {
    ob_predict_dataset_free(d);
    return st;
  }
  *out = d;
  return OB_OK;
}

static uint64_t key_hash(const char *s) { return ob_hash64(s, strlen(s), 0x5eed); }

typedef struct hk {
  uint64_t h;
  int64_t i;
} hk;

static int by_hash(const void *a, const void *b) {
  const hk *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Workloads in the order of their key's hash, dealt to the folds in turn:
 * folds differ by at most one workload, and which workload lands where
 * depends only on the keys. */
void ob_predict_split_workload(const ob_predict_dataset *d, int fold, int nfolds, uint8_t *test) {
  OB_ASSERT(nfolds >= 1 && fold >= 0 && fold < nfolds);
  hk *v = malloc(sizeof *v * ((size_t)d->n + 1));
  if (!v) { /* no memory for the ranks: the plain hash still splits by workload */
    for (int64_t i = 0; i < d->n; i++)
      test[i] = (uint8_t)(key_hash(d->s[i].workload) % (uint64_t)nfolds == (uint64_t)fold);
    return;
  }
  for (int64_t i = 0; i < d->n; i++) v[i] = (hk){key_hash(d->s[i].workload), i};
  qsort(v, (size_t)d->n, sizeof *v, by_hash);
  int64_t rank = -1;
  for (int64_t j = 0; j < d->n; j++) {
    if (j == 0 || v[j].h != v[j - 1].h || strcmp(d->s[v[j].i].workload, d->s[v[j - 1].i].workload)) rank++;
    test[v[j].i] = (uint8_t)(rank % nfolds == fold);
  }
  free(v);
}

ob_status ob_predict_split_models(ob_ctx *ctx, const ob_predict_dataset *d,
                                  const char *const *models, int nmodels, int64_t input_size,
                                  uint8_t *test) {
  memset(test, 0, (size_t)d->n);
  for (int m = 0; m < nmodels; m++) {
    ob_model_opts mo = ob_model_opts_default();
    mo.name = models[m];
    mo.zero_weights = true;
    mo.input_size = input_size;
    ob_graph *g = NULL;
    ob_graph_task *tasks = NULL;
    int nt = 0;
    ob_status st = ob_model_load(ctx, &mo, &g);
    if (!st) st = ob_graph_optimize(ctx, g, 0, NULL);
    if (!st) st = ob_graph_tasks(ctx, g, &tasks, &nt);
    ob_graph_free(g);
    if (st) {
      free(tasks);
      ob_fail_prefix(ctx, "held-out model '%s'", models[m]);
      return st;
    }
    for (int64_t i = 0; i < d->n; i++)
      for (int t = 0; t < nt && !test[i]; t++)
        if (!strcmp(d->s[i].workload, tasks[t].key)) test[i] = 1;
    free(tasks);
  }
  return OB_OK;
}
