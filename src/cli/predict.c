/* predict.c: `opbench predict`: the predict module's predictors on the
 * command line: one point, train, eval, corr, turnaround, corun and nash.
 * Parsing, calling the library and printing only. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "opbench/db.h"
#include "opbench/graph.h"
#include "opbench/predict.h"
#include "opbench/runtime.h"

static ob_predict_train_opts train_opts(const cli_args *a) {
  ob_predict_train_opts o = ob_predict_train_opts_default();
  if (a->rounds) o.rounds = a->rounds;
  if (a->members) o.members = a->members;
  if (a->seed_set) o.seed = a->mo.seed;
  return o;
}

static ob_db *open_db(ob_ctx *ctx, const cli_args *a) {
  ob_db *db = NULL;
  if (ob_db_open(ctx, a->db_path, OB_DB_READONLY, &db) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  return db;
}

static ob_predict_dataset *load_data(ob_ctx *ctx, ob_db *db, const cli_args *a) {
  ob_predict_data_opts o = {.op = a->op, .host = a->host && strcmp(a->host, "any") ? a->host : NULL};
  ob_predict_dataset *d = NULL;
  if (ob_predict_dataset_load(ctx, db, &o, &d) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  if (d->n == 0) {
    cli_error("%s: no usable records%s%s to learn from (error-free, not emulated measurements or profile points)",
              a->db_path, a->op ? " of operator " : "", a->op ? a->op : "");
    ob_predict_dataset_free(d);
    return NULL;
  }
  return d;
}

/* The model file of --predictor, or one trained now on the db's records. */
static ob_predictor *get_predictor(ob_ctx *ctx, const cli_args *a, ob_predict_dataset *d, bool *trained_now) {
  ob_predictor *p = NULL;
  *trained_now = false;
  if (a->predictor) {
    if (ob_predictor_load(ctx, a->predictor, &p) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      return NULL;
    }
    return p;
  }
  ob_predict_train_opts o = train_opts(a);
  if (ob_predictor_train(ctx, d, NULL, &o, &p) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  *trained_now = true;
  return p;
}

static void print_metrics(const char *what, const ob_predict_metrics *m) {
  printf("%-14s %7lld %8.1f %8.1f %8.1f %9.3f %8.3f %8.3f %7lld\n", what, (long long)m->n, 100 * m->rmspe,
         100 * m->mdape, 100 * m->within10, m->pairwise, m->score1, m->score5, (long long)m->ntasks);
}

/* ---- one point ------------------------------------------------------------------------ */
static int predict_point(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_db *db = NULL;
  ob_target *target = NULL;
  ob_task *task = NULL;
  ob_predict_dataset *d = NULL;
  ob_predictor *p = NULL;
  ob_db_host_limits *lim = NULL;
  ob_db_records *recs = NULL;
  if (!cli_target(ctx, a, false, &target)) goto done;
  task = cli_task(ctx, a, target);
  if (!task) goto done;
  const ob_workload *wl = ob_task_workload(task);
  ob_config cfg = ob_task_default_config(task);
  if (a->config_json && ob_config_from_json(ctx, ob_task_space(task), a->config_json, &cfg) != OB_OK) {
    cli_error("--config: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (a->has_config_index && ob_space_get(ctx, ob_task_space(task), a->config_index, &cfg) != OB_OK) {
    cli_error("--config-index: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int threads = a->mo.nthreads > 0 ? a->mo.nthreads : 1, ncores = threads;
  int cores[OB_CLI_MAX_CORES];
  if (a->cores_text) {
    if (ob_parse_cores(ctx, a->cores_text, cores, OB_CLI_MAX_CORES, &ncores) != OB_OK) {
      cli_error("--cores: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    if (!a->threads_set) threads = ncores;
    if (ncores < threads) {
      cli_error("--cores %s holds %d cores, fewer than --threads %d", a->cores_text, ncores, threads);
      goto done;
    }
  }
  db = open_db(ctx, a);
  if (!db) goto done;
  bool trained_now = false;
  if (!a->predictor) {
    cli_args b = *a;
    b.op = wl->op;
    d = load_data(ctx, db, &b);
    if (!d) goto done;
  }
  p = get_predictor(ctx, a, d, &trained_now);
  if (!p) goto done;
  ob_host h;
  if (ob_host_detect(ctx, &h) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (ob_db_get_host_limits(db, h.fingerprint, &lim) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_predict_point pt = {.wl = wl, .task = task, .cfg = &cfg, .threads = threads, .ncores = ncores};
  ob_predict_point_limits(lim, h.fingerprint, &pt);
  float x[OB_PREDICT_NFEAT];
  ob_prediction pr;
  if (ob_predict_features(ctx, &pt, x) != OB_OK ||
      ob_predictor_predict(p, wl->op, x, ob_workload_flops(wl), &pr) != OB_OK) {
    cli_error("%s%s%s", a->predictor ? a->predictor : "", a->predictor ? ": " : "", ob_ctx_errmsg(ctx));
    goto done;
  }
  /* measured, when the db has this very point */
  char key[512], res[256];
  ob_workload_key(wl, key, sizeof key);
  ob_measure_opts mo = a->mo;
  mo.nthreads = threads;
  if (a->cores_text) mo.cores = cores; /* the resource text takes nthreads of them */
  ob_tune_resources(&mo, res, sizeof res);
  ob_db_filter f;
  memset(&f, 0, sizeof f);
  f.key = (ob_db_key){.host = h.fingerprint, .workload = key, .target = ob_target_str(target),
                      .resources = res, .tmpl = ob_task_template(task)};
  f.ok_only = true;
  double measured = NAN;
  if (ob_db_query(db, &f, &recs) == OB_OK) {
    for (int64_t i = 0; i < recs->n; i++)
      if (recs->rec[i].config_index == cfg.index && !recs->rec[i].timing.emulated)
        measured = recs->rec[i].timing.median_s;
  } else {
    ob_ctx_clear_error(ctx);
  }
  int64_t nrec = 0;
  double sigma = 0;
  for (int i = 0; i < ob_predictor_kinds(p); i++)
    if (!strcmp(ob_predictor_kind(p, i, &nrec, &sigma), wl->op)) break;
  if (a->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "workload", key);
    cJSON_AddStringToObject(o, "template", ob_task_template(task));
    cJSON_AddNumberToObject(o, "config_index", (double)cfg.index);
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "cores", ncores);
    cJSON_AddNumberToObject(o, "predicted_s", pr.seconds);
    cJSON_AddNumberToObject(o, "lo_s", pr.lo);
    cJSON_AddNumberToObject(o, "hi_s", pr.hi);
    if (isfinite(measured)) cJSON_AddNumberToObject(o, "measured_s", measured);
    else cJSON_AddNullToObject(o, "measured_s");
    cJSON_AddNumberToObject(o, "trained_records", (double)nrec);
    cJSON_AddStringToObject(o, "predictor", a->predictor ? a->predictor : "trained now from the db");
    char *t = cJSON_PrintUnformatted(o);
    printf("%s\n", t ? t : "{}");
    free(t);
    cJSON_Delete(o);
  } else {
    printf("workload   %s\ntemplate   %s\nconfig     %llu\nresources  threads=%d, %d cores\n", key,
           ob_task_template(task), (unsigned long long)cfg.index, threads, ncores);
    printf("predictor  %s (%lld records of %s, out-of-fold error ~%.0f%%)\n",
           trained_now ? "trained now from the db" : a->predictor, (long long)nrec, wl->op,
           100 * (exp(sigma) - 1));
    printf("predicted  %.4f ms (90%% interval %.4f .. %.4f ms)\n", pr.seconds * 1e3, pr.lo * 1e3, pr.hi * 1e3);
    if (isfinite(measured))
      printf("measured   %.4f ms (error %+.1f%%)\n", measured * 1e3, 100 * (pr.seconds - measured) / measured);
    else
      printf("measured   none in %s\n", a->db_path);
  }
  rc = 0;
done:
  ob_db_records_free(recs);
  ob_db_host_limits_free(lim);
  ob_predictor_free(p);
  ob_predict_dataset_free(d);
  ob_db_close(db);
  ob_task_free(task);
  ob_target_free(target);
  return rc;
}

/* ---- train ------------------------------------------------------------------------------ */
static int do_train(ob_ctx *ctx, const cli_args *a, ob_db *db) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_predict_dataset *d = load_data(ctx, db, a);
  ob_predictor *p = NULL;
  ob_corun_dataset *cd = NULL;
  if (!d) return rc;
  ob_predict_train_opts o = train_opts(a);
  double t0 = ob_now_s();
  if (ob_predictor_train(ctx, d, NULL, &o, &p) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (ob_corun_dataset_load(ctx, db, NULL, &cd) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (cd->n > 0 && ob_predictor_train_interference(p, cd, NULL, &o) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  double secs = ob_now_s() - t0;
  if (ob_predictor_save(ctx, p, a->out) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  printf("trained on %lld points of %s (%lld skipped) in %.1f s; feature schema %d\n", (long long)d->n,
         a->db_path, (long long)d->skipped, secs, OB_PREDICT_SCHEMA);
  printf("%-14s %8s %s\n", "operator", "records", "out-of-fold error (log RMS)");
  for (int i = 0; i < ob_predictor_kinds(p); i++) {
    int64_t n;
    double s;
    const char *k = ob_predictor_kind(p, i, &n, &s);
    printf("%-14s %8lld %.3f (~%.0f%%)\n", k, (long long)n, s, 100 * (exp(s) - 1));
  }
  if (cd->n > 0)
    printf("interference   %8lld co-run points (%lld skipped)\n", (long long)cd->n, (long long)cd->skipped);
  else
    printf("interference   none: the db has no co-run points\n");
  printf("model file     %s\n", a->out);
  rc = 0;
done:
  ob_corun_dataset_free(cd);
  ob_predictor_free(p);
  ob_predict_dataset_free(d);
  return rc;
}

/* ---- eval -------------------------------------------------------------------------------- */
static int split_list(char *text, const char **out, int cap) {
  int n = 0;
  for (char *t = strtok(text, ","); t && n < cap; t = strtok(NULL, ",")) out[n++] = t;
  return n;
}

static int do_eval(ob_ctx *ctx, const cli_args *a, ob_db *db) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_predict_dataset *d = load_data(ctx, db, a);
  ob_predictor *p = NULL;
  uint8_t *test = NULL, *train = NULL, *all = NULL;
  double *pred = NULL;
  if (!d) return rc;
  test = calloc((size_t)d->n, 1);
  train = calloc((size_t)d->n, 1);
  all = calloc((size_t)d->n, 1);
  pred = malloc(sizeof(double) * (size_t)d->n);
  if (!test || !train || !all || !pred) {
    cli_error("out of memory");
    goto done;
  }
  for (int64_t i = 0; i < d->n; i++) pred[i] = NAN;
  ob_predict_train_opts o = train_opts(a);
  bool by_model = a->split && !strcmp(a->split, "model");
  int folds = by_model ? 1 : (a->folds ? a->folds : 5);
  char models_buf[1024];
  const char *models[32];
  int nmodels = 0;
  if (by_model) {
    snprintf(models_buf, sizeof models_buf, "%s", a->test_models);
    nmodels = split_list(models_buf, models, 32);
  }
  for (int fold = 0; fold < folds; fold++) {
    if (by_model) {
      if (ob_predict_split_models(ctx, d, models, nmodels, a->input_size, test) != OB_OK) {
        cli_error("%s", ob_ctx_errmsg(ctx));
        goto done;
      }
    } else {
      ob_predict_split_workload(d, fold, folds, test);
    }
    int64_t ntest = 0, ntrain = 0;
    for (int64_t i = 0; i < d->n; i++) {
      train[i] = !test[i];
      ntest += test[i];
      ntrain += train[i];
    }
    if (!ntest) continue;
    if (!ntrain) {
      cli_error("the held-out split leaves nothing to train on (every point is a test point)");
      goto done;
    }
    ob_predictor_free(p);
    p = NULL;
    if (ob_predictor_train(ctx, d, train, &o, &p) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      goto done;
    }
    double *fp = malloc(sizeof(double) * (size_t)d->n);
    if (!fp || ob_predictor_predict_dataset(p, d, test, true, fp) != OB_OK) {
      free(fp);
      cli_error("%s", fp ? ob_ctx_errmsg(ctx) : "out of memory");
      goto done;
    }
    for (int64_t i = 0; i < d->n; i++)
      if (test[i]) {
        pred[i] = fp[i];
        all[i] = 1;
      }
    free(fp);
  }
  int64_t nheld = 0, nunk = 0;
  for (int64_t i = 0; i < d->n; i++) {
    nheld += all[i];
    if (all[i] && isnan(pred[i])) {
      nunk++;
      all[i] = 0;
    }
  }
  if (!nheld) {
    cli_error("the split holds out no point (%s)", by_model ? "no record is a task of the held-out models"
                                                            : "every workload fell on one side");
    goto done;
  }
  if (by_model)
    printf("held out: the tasks of %s (%lld points); trained on the other %lld\n", a->test_models,
           (long long)nheld, (long long)(d->n - nheld));
  else
    printf("held out: %d folds by workload, each point predicted by a model that never saw its workload (%lld points)\n",
           folds, (long long)nheld);
  if (nunk) printf("not predicted: %lld points of operator kinds absent from the training side\n", (long long)nunk);
  printf("%-14s %7s %8s %8s %8s %9s %8s %8s %7s\n", "operator", "points", "RMSPE%", "MdAPE%", "+-10%", "pairwise",
         "score@1", "score@5", "tasks");
  ob_predict_metrics m;
  for (int64_t i = 0; i < d->n; i++) {
    bool first = all[i];
    for (int64_t j = 0; j < i && first; j++) first = !(all[j] && !strcmp(d->s[j].op, d->s[i].op));
    if (!first) continue;
    for (int64_t j = 0; j < d->n; j++) test[j] = all[j] && !strcmp(d->s[j].op, d->s[i].op);
    ob_predict_metrics_compute(d, test, pred, &m);
    print_metrics(d->s[i].op, &m);
  }
  ob_predict_metrics_compute(d, all, pred, &m);
  print_metrics("all", &m);
  rc = 0;
done:
  free(test);
  free(train);
  free(all);
  free(pred);
  ob_predictor_free(p);
  ob_predict_dataset_free(d);
  return rc;
}

/* ---- corr -------------------------------------------------------------------------------- */
static int do_corr(ob_ctx *ctx, const cli_args *a, ob_db *db) {
  ob_predict_dataset *d = load_data(ctx, db, a);
  if (!d) return OB_CLI_EXIT_ERROR;
  double *x = malloc(sizeof(double) * (size_t)d->n), *y = malloc(sizeof(double) * (size_t)d->n);
  if (!x || !y) {
    free(x);
    free(y);
    ob_predict_dataset_free(d);
    return cli_error("out of memory");
  }
  printf("correlation of log latency with each feature, per operator kind (Pearson on log2 values, Spearman on ranks)\n");
  printf("%-12s %-22s %8s %9s %9s\n", "operator", "feature", "points", "pearson", "spearman");
  for (int64_t i = 0; i < d->n; i++) {
    bool first = true;
    for (int64_t j = 0; j < i && first; j++) first = strcmp(d->s[j].op, d->s[i].op) != 0;
    if (!first) continue;
    const char *op = d->s[i].op;
    const ob_workload *wl = d->s[i].wl;
    for (int f = 0; f < OB_PREDICT_BASE_FEATURES; f++) {
      if (f < 24 && (!wl || f >= wl->nattr)) continue;
      if (f == 27 || f == 34) continue; /* categories, not quantities */
      int64_t n = 0;
      for (int64_t j = 0; j < d->n; j++) {
        if (strcmp(d->s[j].op, op)) continue;
        x[n] = d->s[j].x[f];
        y[n] = log(d->s[j].seconds);
        n++;
      }
      double pe = ob_pearson(x, y, n), sp = ob_spearman(x, y, n);
      if (isnan(pe) && isnan(sp)) continue; /* constant over the records */
      char name[64];
      if (f < 24) snprintf(name, sizeof name, "%s", wl->attr_name[f]);
      else ob_predict_feature_name(f, name, sizeof name);
      printf("%-12s %-22s %8lld %9.3f %9.3f\n", op, name, (long long)n, pe, sp);
    }
  }
  free(x);
  free(y);
  ob_predict_dataset_free(d);
  return 0;
}

/* ---- turnaround -------------------------------------------------------------------------------- */
typedef struct tpt {
  int threads;
  int64_t i;
} tpt;

static int by_threads(const void *a, const void *b) {
  const tpt *x = a, *y = b;
  return x->threads - y->threads;
}

static bool same_point(const ob_predict_sample *a, const ob_predict_sample *b) {
  return !strcmp(a->host, b->host) && !strcmp(a->workload, b->workload) && !strcmp(a->target, b->target) &&
         !strcmp(a->tmpl, b->tmpl) && a->config_index == b->config_index && a->pressure_mib == b->pressure_mib;
}

static int do_turnaround(ob_ctx *ctx, const cli_args *a, ob_db *db) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_predict_dataset *d = load_data(ctx, db, a);
  ob_predictor *p = NULL;
  double *pred = NULL;
  uint8_t *seen = NULL;
  if (!d) return rc;
  bool now = false;
  p = get_predictor(ctx, a, d, &now);
  pred = malloc(sizeof(double) * (size_t)d->n);
  seen = calloc((size_t)d->n, 1);
  if (!p || !pred || !seen) {
    if (p) cli_error("out of memory");
    goto done;
  }
  if (ob_predictor_predict_dataset(p, d, NULL, true, pred) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  printf("thread-count turnaround: the thread count beyond which latency improves by less than 5%%\n");
  printf("(predicted by %s)\n", now ? "a predictor trained now on these records (in-sample)" : a->predictor);
  printf("%-56s %-8s %-24s %9s %9s\n", "workload", "config", "threads: measured ms", "measured", "predicted");
  int64_t groups = 0, agree = 0;
  for (int64_t i = 0; i < d->n; i++) {
    if (seen[i] || d->s[i].threads != d->s[i].ncores) continue;
    tpt pts[64];
    int n = 0;
    for (int64_t j = i; j < d->n && n < 64; j++) {
      if (seen[j] || d->s[j].threads != d->s[j].ncores || !same_point(&d->s[i], &d->s[j])) continue;
      seen[j] = 1;
      bool dup = false;
      for (int k = 0; k < n; k++) dup |= pts[k].threads == d->s[j].threads;
      if (!dup) pts[n++] = (tpt){d->s[j].threads, j};
    }
    if (n < 2) continue;
    qsort(pts, (size_t)n, sizeof *pts, by_threads);
    int th[64];
    double ml[64], pl[64];
    char line[256];
    size_t len = 0;
    line[0] = 0;
    for (int k = 0; k < n; k++) {
      th[k] = pts[k].threads;
      ml[k] = d->s[pts[k].i].seconds;
      pl[k] = pred[pts[k].i];
      if (len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%d:%.3g", k ? " " : "", th[k], ml[k] * 1e3);
    }
    int tm = ob_turnaround(th, ml, n, 0.05), tp = isnan(pl[0]) ? 0 : ob_turnaround(th, pl, n, 0.05);
    groups++;
    agree += tm == tp;
    printf("%-56.56s %-8llu %-24s %9d %9d\n", d->s[i].workload, (unsigned long long)d->s[i].config_index, line,
           tm, tp);
  }
  if (!groups)
    printf("no workload/config measured at two thread counts or more in %s\n", a->db_path);
  else
    printf("turnaround predicted rightly for %lld of %lld\n", (long long)agree, (long long)groups);
  rc = 0;
done:
  free(pred);
  free(seen);
  ob_predictor_free(p);
  ob_predict_dataset_free(d);
  return rc;
}

/* ---- corun ------------------------------------------------------------------------------------ */
static int do_corun(ob_ctx *ctx, const cli_args *a, ob_db *db) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_corun_dataset *d = NULL;
  ob_predictor *p = NULL;
  uint8_t *test = NULL, *train = NULL;
  double *pred = NULL;
  if (ob_corun_dataset_load(ctx, db, a->host && strcmp(a->host, "any") ? a->host : NULL, &d) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return rc;
  }
  if (d->n == 0) {
    cli_error("%s: no co-run points (profile points with a co-runner; %lld skipped)", a->db_path,
              (long long)d->skipped);
    goto done;
  }
  test = calloc((size_t)d->n, 1);
  train = calloc((size_t)d->n, 1);
  pred = malloc(sizeof(double) * (size_t)d->n);
  if (!test || !train || !pred) {
    cli_error("out of memory");
    goto done;
  }
  int folds = a->folds ? a->folds : 5;
  ob_predict_train_opts o = train_opts(a);
  for (int64_t i = 0; i < d->n; i++) pred[i] = NAN;
  for (int fold = 0; fold < folds; fold++) {
    ob_corun_split_pairs(d, fold, folds, test);
    int64_t nt = 0, nr = 0;
    for (int64_t i = 0; i < d->n; i++) {
      train[i] = !test[i];
      nt += test[i];
      nr += train[i];
    }
    if (!nt || !nr) continue;
    ob_predictor_free(p);
    p = ob_predictor_new(ctx);
    if (!p || ob_predictor_train_interference(p, d, train, &o) != OB_OK) {
      cli_error("%s", p ? ob_ctx_errmsg(ctx) : "out of memory");
      goto done;
    }
    for (int64_t i = 0; i < d->n; i++) {
      if (!test[i]) continue;
      ob_prediction pr;
      if (ob_predictor_slowdown(p, d->s[i].x, &pr) != OB_OK) {
        cli_error("%s", ob_ctx_errmsg(ctx));
        goto done;
      }
      pred[i] = pr.seconds;
    }
  }
  printf("co-run slowdown of A beside B, each pair predicted by a model trained without it (%d folds by pair)\n",
         folds);
  printf("%-40s %-40s %-6s %9s %9s\n", "A", "B", "mode", "measured", "predicted");
  double se = 0;
  int64_t n = 0, within = 0;
  for (int64_t i = 0; i < d->n; i++) {
    if (isnan(pred[i])) continue;
    double e = (pred[i] - d->s[i].slowdown) / d->s[i].slowdown;
    se += e * e;
    within += fabs(e) <= 0.1;
    n++;
    printf("%-40.40s %-40.40s %-6s %9.3f %9.3f\n", d->s[i].a, d->s[i].b, d->s[i].mode, d->s[i].slowdown, pred[i]);
  }
  if (!n) {
    cli_error("every co-run pair fell on one side of the split: need at least two distinct pairs");
    goto done;
  }
  printf("held-out pairs: %lld points, RMSPE %.1f%%, within +-10%%: %.1f%%\n", (long long)n, 100 * sqrt(se / (double)n),
         100.0 * (double)within / (double)n);
  rc = 0;
done:
  free(test);
  free(train);
  free(pred);
  ob_predictor_free(p);
  ob_corun_dataset_free(d);
  return rc;
}

/* ---- nash -------------------------------------------------------------------------------------- */
static void print_profile(const char *label, const int *k, int n, double makespan) {
  printf("  %-26s [", label);
  for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", k[i]);
  printf("] makespan %.4f ms\n", makespan * 1e3);
}

static int solve_game(ob_ctx *ctx, ob_nash_game *g, bool simulated) {
  printf("%d cores%s, %d players, core counts per player: ", g->cores, simulated ? " (SIMULATED)" : "", g->players);
  if (g->nchoices) {
    for (int i = 0; i < g->nchoices; i++) printf("%s%d", i ? "," : "", g->choices[i]);
  } else {
    printf("1..%d", g->cores);
  }
  printf("\n");
  int k[OB_NASH_MAX_PLAYERS], rounds = 0;
  for (int i = 0; i < g->players; i++) k[i] = g->cores; /* everyone asks for every core */
  print_profile("all cores to everyone", k, g->players, ob_nash_makespan(g, k));
  bool conv = ob_nash_best_response(g, k, 100, &rounds);
  char label[64];
  snprintf(label, sizeof label, "best response (%d rounds)%s", rounds, conv ? "" : " NO");
  print_profile(label, k, g->players, ob_nash_makespan(g, k));
  ob_nash_summary s;
  if (ob_nash_exhaustive(ctx, g, 2000000, &s) != OB_OK) {
    printf("  exhaustive check skipped: %s\n", ob_ctx_errmsg(ctx));
    ob_ctx_clear_error(ctx);
    return 0;
  }
  print_profile("social optimum", s.opt, g->players, s.opt_makespan);
  printf("  pure equilibria: %lld of %lld profiles; best response %s one\n", (long long)s.equilibria,
         (long long)s.profiles, ob_nash_is_equilibrium(g, k) ? "found" : "did NOT find");
  if (s.equilibria) {
    print_profile("worst equilibrium", s.worst_eq, g->players, s.worst_eq_makespan);
    printf("  price of anarchy %.3f, price of stability %.3f\n", s.price_of_anarchy, s.price_of_stability);
  }
  return 0;
}

typedef struct nash_user {
  ob_predictor *p;
  const ob_db_host_limits *lim;
  const char *host;
  const double *flops, *bytes, *alone; /* alone: players x cores */
  int cores;
} nash_user;

/* Player i's predicted slowdown beside j at their core counts and shared cores. */
static double nash_slowdown(void *u, int i, int j, int ki, int kj, int shared) {
  nash_user *n = u;
  float x[OB_INTERF_NFEAT];
  ob_prediction pr;
  ob_interf_features(n->flops[i], n->bytes[i], ki, n->alone[(size_t)i * (size_t)n->cores + (size_t)(ki - 1)],
                     n->flops[j], n->bytes[j], kj, n->alone[(size_t)j * (size_t)n->cores + (size_t)(kj - 1)],
                     shared > 0, shared, n->lim, n->host, x);
  return ob_predictor_slowdown(n->p, x, &pr) == OB_OK ? pr.seconds : 1;
}

static int do_nash(ob_ctx *ctx, const cli_args *a, ob_db *db) {
  int rc = OB_CLI_EXIT_ERROR;
  cli_suite_entry *e = NULL;
  int ne = 0;
  ob_predictor *p = NULL;
  ob_target *target = NULL;
  ob_db_host_limits *lim = NULL;
  double *alone = NULL, *l12 = NULL;
  if (!a->suite) return cli_error("'opbench predict nash' needs --suite FILE (the players: at most %d workloads)",
                                  OB_NASH_MAX_PLAYERS);
  if (!a->predictor) return cli_error("'opbench predict nash' needs --predictor FILE (a model file of predict train)");
  int sizes[16], nsizes = 0;
  if (a->cores_text) { /* checked before anything is predicted or printed */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", a->cores_text);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
      int64_t P;
      if (!cli_parse_i64(t, 1, OB_NASH_MAX_CORES, &P) || nsizes == 16)
        return cli_error("--cores: bad machine size '%s' (expected at most 16 integers from 1 to %d, e.g. 8,16,64)",
                         t, OB_NASH_MAX_CORES);
      sizes[nsizes++] = (int)P;
    }
  }
  if (!cli_suite_read(ctx, a->suite, &e, &ne)) return rc;
  if (ne > OB_NASH_MAX_PLAYERS) {
    cli_error("%s: %d workloads; a game takes at most %d players", a->suite, ne, OB_NASH_MAX_PLAYERS);
    goto done;
  }
  if (ob_predictor_load(ctx, a->predictor, &p) != OB_OK || !cli_target(ctx, a, false, &target)) {
    if (p == NULL) cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_host h;
  if (ob_host_detect(ctx, &h) != OB_OK || ob_db_get_host_limits(db, h.fingerprint, &lim) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int here = h.ncores > 0 ? h.ncores : 1;
  if (here > 64) here = 64;
  alone = calloc((size_t)ne * (size_t)here, sizeof *alone);
  l12 = calloc((size_t)ne * 2, sizeof *l12);
  double flops[OB_NASH_MAX_PLAYERS], bytes[OB_NASH_MAX_PLAYERS];
  if (!alone || !l12) {
    cli_error("out of memory");
    goto done;
  }
  printf("players (predicted ms alone at 1..%d threads, default configs):\n", here);
  for (int i = 0; i < ne; i++) {
    ob_task *task = NULL;
    if (ob_task_new(ctx, &e[i].wl, NULL, target, &task) != OB_OK) {
      cli_error("%s:%d: %s", a->suite, e[i].line, ob_ctx_errmsg(ctx));
      goto done;
    }
    ob_config cfg = ob_task_default_config(task);
    flops[i] = ob_workload_flops(&e[i].wl);
    bytes[i] = ob_predict_workload_bytes(&e[i].wl);
    printf("  %d %-10s %-40s", i + 1, e[i].op, e[i].shape);
    for (int k = 1; k <= (here > 2 ? here : 2); k++) {
      ob_predict_point pt = {.wl = &e[i].wl, .task = task, .cfg = &cfg, .threads = k, .ncores = k};
      ob_predict_point_limits(lim, h.fingerprint, &pt);
      float x[OB_PREDICT_NFEAT];
      ob_prediction pr;
      if (ob_predict_features(ctx, &pt, x) != OB_OK ||
          ob_predictor_predict(p, e[i].op, x, flops[i], &pr) != OB_OK) {
        ob_task_free(task);
        cli_error("%s: %s", a->predictor, ob_ctx_errmsg(ctx));
        goto done;
      }
      if (k <= here) alone[(size_t)i * (size_t)here + (size_t)(k - 1)] = pr.seconds;
      if (k <= 2) l12[2 * i + k - 1] = pr.seconds;
      if (k <= here) printf(" %.4f", pr.seconds * 1e3);
    }
    printf("\n");
    ob_task_free(task);
  }
  ob_nash_game g;
  memset(&g, 0, sizeof g);
  g.players = ne;
  g.cores = here;
  g.alone = alone;
  bool interf = ob_predictor_has_interference(p);
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      g.stream[i][j] = g.full[i][j] = 1;
      if (i == j || !interf) continue;
      float x[OB_INTERF_NFEAT];
      ob_prediction pr;
      ob_interf_features(flops[i], bytes[i], 1, l12[2 * i], flops[j], bytes[j], 1, l12[2 * j], false, 0, lim,
                         h.fingerprint, x);
      if (ob_predictor_slowdown(p, x, &pr) == OB_OK) g.stream[i][j] = pr.seconds;
      ob_interf_features(flops[i], bytes[i], here, alone[(size_t)i * (size_t)here + (size_t)(here - 1)], flops[j],
                         bytes[j], here, alone[(size_t)j * (size_t)here + (size_t)(here - 1)], true, here, lim,
                         h.fingerprint, x);
      /* a "full" slowdown includes the time-slicing of two players on every core,
       * which the game counts itself: the factor is what remains beyond it */
      if (ob_predictor_slowdown(p, x, &pr) == OB_OK) g.full[i][j] = fmax(1, pr.seconds / 2);
      ob_ctx_clear_error(ctx);
    }
  /* this machine: each profile priced as the co-run model predicts it, at
   * the players' own threads and shared cores (as it measures them: time on
   * shared cores included, no time-slicing multiplier on top) */
  nash_user nu = {.p = p, .lim = lim, .host = h.fingerprint, .flops = flops, .bytes = bytes, .alone = alone,
                  .cores = here};
  if (interf) {
    g.slowdown = nash_slowdown;
    g.user = &nu;
  }
  printf("interference: %s\n", interf ? "the predictor's co-run model at each profile's threads and shared cores "
                                        "(simulated machines: stream at 1 thread each; full on all cores, over the "
                                        "2x of time-slicing)"
                                      : "none in the model file (factors 1: only time-slicing counts)");
  printf("\nthis machine (predicted):\n");
  solve_game(ctx, &g, false);
  /* simulated machines: Amdahl's law through the predicted 1- and 2-thread latencies */
  for (int si = 0; si < nsizes; si++) {
    {
      int64_t P = sizes[si];
      double *sim = calloc((size_t)ne * (size_t)P, sizeof *sim);
      if (!sim) {
        cli_error("out of memory");
        goto done;
      }
      ob_nash_game s = g;
      s.slowdown = NULL; /* the matrices: the co-run model knows this machine's core counts only */
      s.user = NULL;
      s.cores = (int)P;
      s.alone = sim;
      s.nchoices = 0;
      for (int c = 1; c <= P && s.nchoices < 32; c *= 2) s.choices[s.nchoices++] = c;
      if (s.choices[s.nchoices - 1] != P && s.nchoices < 32) s.choices[s.nchoices++] = (int)P;
      for (int i = 0; i < ne; i++) {
        double L1 = l12[2 * i], L2 = l12[2 * i + 1];
        double par = L1 > 0 ? 2 * (1 - L2 / L1) : 0;
        if (par < 0) par = 0;
        if (par > 1) par = 1;
        for (int k = 1; k <= P; k++) sim[(size_t)i * (size_t)P + (size_t)(k - 1)] = L1 * ((1 - par) + par / k);
      }
      printf("\nSIMULATED %lld-core machine (latencies: Amdahl's law fitted to the predicted 1- and 2-thread ones):\n",
             (long long)P);
      solve_game(ctx, &s, true);
      free(sim);
    }
  }
  rc = 0;
done:
  free(alone);
  free(l12);
  ob_db_host_limits_free(lim);
  ob_target_free(target);
  ob_predictor_free(p);
  free(e);
  return rc;
}

/* ---- a model's end-to-end latency ------------------------------------------------------ */
/* The calibration model of the runtime's overhead by default: a training
 * model of the predictor benchmark (never one of the held-out ones), at the
 * same input size and batch as the model predicted. */
#define CALIB_MODEL "resnet-18"
#define CALIB_STACK 3 /* further instances of the calibration model in the miss curve's stack */

/* A compiled runtime of model `name` (NULL: the flags' model). */
static ob_rt *compile_model(ob_ctx *ctx, const cli_args *a, const char *name, const ob_target *target, ob_db *db,
                            int threads, ob_graph **gout) {
  cli_args b = *a;
  if (name) {
    b.modelsource = "local";
    b.modelname = name;
    b.modelpath = NULL;
  }
  *gout = cli_model_load(ctx, &b, false);
  if (!*gout) return NULL;
  if (ob_graph_optimize(ctx, *gout, ob_target_get_facts(target)->lanes_f32, NULL) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  ob_rt_opts o = ob_rt_opts_default();
  o.target = target;
  o.build = a->mo.build;
  o.nthreads = threads;
  o.cores = a->mo.cores;
  o.db = db;
  ob_rt *rt = NULL;
  if (ob_rt_new(ctx, *gout, &o, &rt) != OB_OK) {
    cli_error("%s: %s", name ? name : a->modelname ? a->modelname : a->modelpath, ob_ctx_errmsg(ctx));
    return NULL;
  }
  return rt;
}

static int predict_model(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_db *db = NULL;
  ob_target *target = NULL;
  ob_predict_dataset *d = NULL;
  ob_predictor *p = NULL;
  ob_db_host_limits *lim = NULL;
  ob_graph *g = NULL, *cg = NULL;
  ob_rt *rt = NULL, *crt = NULL, *srt[CALIB_STACK] = {0};
  ob_graph *sg[CALIB_STACK] = {0};
  ob_predict_model_step *steps = NULL;
  int threads = a->mo.nthreads > 0 ? a->mo.nthreads : 1;
  if (!cli_target(ctx, a, true, &target)) goto done;
  if (ob_db_open(ctx, a->db_path, 0, &db) != OB_OK) { /* read-write: the overhead is stored */
    cli_error("--db: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  bool trained_now = false;
  if (!a->predictor && !(d = load_data(ctx, db, a))) goto done;
  if (!(p = get_predictor(ctx, a, d, &trained_now))) goto done;
  ob_host h;
  if (ob_host_detect(ctx, &h) != OB_OK || ob_db_get_host_limits(db, h.fingerprint, &lim) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  /* the model first: a model that does not load or compile is reported
   * before anything is printed or measured */
  if (!(rt = compile_model(ctx, a, NULL, target, db, threads, &g))) goto done;
  const char *calib = a->calibrate ? a->calibrate : CALIB_MODEL;
  ob_predict_overhead ov;
  bool stored = ob_predict_overhead_find(lim, h.fingerprint, threads, &ov);
  if (!stored) {
    if (!(crt = compile_model(ctx, a, calib, target, db, threads, &cg))) goto done;
    /* further instances of it, each with parameters of its own: the miss
     * curve's synthetic stack */
    for (int k = 0; k < CALIB_STACK; k++)
      if (!(srt[k] = compile_model(ctx, a, calib, target, db, threads, &sg[k]))) goto done;
    char note[200];
    snprintf(note, sizeof note, "ob_rt_profile of %s (input size %lld, batch %lld), 10 runs; miss curve from a stack of "
             "%d more instances", calib, (long long)a->input_size, (long long)(a->batchsize ? a->batchsize : 1),
             CALIB_STACK);
    if (ob_predict_overhead_measure(ctx, crt, threads, 10, &ov) != OB_OK ||
        ob_predict_overhead_stack(ctx, crt, srt, CALIB_STACK, &ov) != OB_OK ||
        ob_predict_overhead_store(db, h.fingerprint, &ov, note) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      goto done;
    }
    ob_rt_free(crt);
    crt = NULL;
  }
  printf("overhead   per native step %.4f ms + %.4f ms/MiB of output; per layout conversion %.4f ms; per run %.4f ms; "
         "a kernel step the longer of x%.3f its time alone and %.4f ms per MiB of its parameters (+ %.4f ms per "
         "MiB evicted between runs: calibration %.1f MiB) (%s%s%s)\n",
         ov.native_fixed_s * 1e3, ov.native_s_per_mb * 1e3, ov.convert_s * 1e3, ov.run_s * 1e3, ov.kernel_factor,
         ov.floor_s_per_mb * 1e3, ov.cold_s_per_mb * 1e3, ov.param_mib,
         stored ? "stored" : "measured now on ", stored ? "" : calib, stored ? "" : ", stored in the db");
  if (ov.nmiss) {
    printf("evicted    share of the parameters by MiB read between runs:");
    for (int k = 0; k < ov.nmiss; k++) printf(" %.0f MiB %.2f", ov.miss_mib[k], ov.miss_share[k]);
    printf("\n");
  }
  ob_rt_stats rs;
  ob_rt_get_stats(rt, &rs);
  int ns = ob_rt_step_count(rt);
  steps = calloc((size_t)ns + 1, sizeof *steps);
  if (!steps) {
    cli_error("out of memory");
    goto done;
  }
  ob_predict_model_result r;
  if (ob_predict_model(ctx, p, rt, target, threads, lim, h.fingerprint, &ov, steps, &r) != OB_OK) {
    cli_error("%s: %s", ob_graph_name(g), ob_ctx_errmsg(ctx));
    goto done;
  }
  printf("model      %s, %d thread%s: %d steps (%d kernels of %d tasks, %d tuned / %d default configs; %d native, "
         "%d conversions)\n",
         ob_graph_name(g), threads, threads == 1 ? "" : "s", rs.nsteps, rs.nkernels, rs.ntasks, rs.ntuned, rs.ndefault,
         rs.nnative, rs.nconvert);
  printf("predictor  %s\n", trained_now ? "trained now from the db" : a->predictor);
  if (a->verbose) {
    printf("  %4s %-8s %-16s %10s  %s\n", "#", "kind", "op", "pred ms", "node");
    for (int i = 0; i < ns; i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      printf("  %4d %-8s %-16.16s %10.4f  %.60s%s\n", i, ob_rt_step_kind_name(si.kind), si.op, steps[i].seconds * 1e3,
             si.name, steps[i].predicted ? "" : " (overhead)");
    }
  }
  printf("kernels    %.3f ms predicted over %d kernel steps\n", r.kernels_s * 1e3, r.nkernels);
  if (r.nuncovered)
    printf("uncovered  %d kernel steps of operators the predictor has no records of (%s): costed as native steps\n",
           r.nuncovered, r.uncovered);
  printf("overhead   %.3f ms over %d other steps and the run\n", r.other_s * 1e3, r.nother);
  printf("predicted  %.3f ms (90%% interval %.3f .. %.3f ms)\n", r.seconds * 1e3, r.lo * 1e3, r.hi * 1e3);
  if (a->measure_model) {
    ob_timing tm;
    ob_timing_opts mt = a->mo.timing;
    if (!a->timeout_set) mt.timeout_s = 600; /* a whole model, not one kernel */
    if (ob_rt_time(rt, &mt, &tm) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      goto done;
    }
    printf("measured   %.3f ms (median of %d repeats, CV %.1f%%); predicted error %+.1f%%\n", tm.median_s * 1e3,
           tm.ncosts, 100 * tm.cv, 100 * (r.seconds - tm.median_s) / tm.median_s);
  }
  rc = 0;
done:
  free(steps);
  ob_rt_free(rt);
  ob_rt_free(crt);
  ob_graph_free(g);
  ob_graph_free(cg);
  for (int k = 0; k < CALIB_STACK; k++) {
    ob_rt_free(srt[k]);
    ob_graph_free(sg[k]);
  }
  ob_db_host_limits_free(lim);
  ob_predictor_free(p);
  ob_predict_dataset_free(d);
  ob_db_close(db);
  ob_target_free(target);
  return rc;
}

int cli_cmd_predict(ob_ctx *ctx, const cli_args *a) {
  if (!a->action && (a->modelname || a->modelpath)) return predict_model(ctx, a);
  if (!a->action) return predict_point(ctx, a);
  ob_db *db = open_db(ctx, a);
  if (!db) return OB_CLI_EXIT_ERROR;
  int rc = OB_CLI_EXIT_ERROR;
  if (!strcmp(a->action, "train")) rc = do_train(ctx, a, db);
  else if (!strcmp(a->action, "eval")) rc = do_eval(ctx, a, db);
  else if (!strcmp(a->action, "corr")) rc = do_corr(ctx, a, db);
  else if (!strcmp(a->action, "turnaround")) rc = do_turnaround(ctx, a, db);
  else if (!strcmp(a->action, "corun")) rc = do_corun(ctx, a, db);
  else if (!strcmp(a->action, "nash")) rc = do_nash(ctx, a, db);
  ob_db_close(db);
  return rc;
}
