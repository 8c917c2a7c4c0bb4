/* tuners.c (bench_tuners): how many trials each tuner needs on ResNet-18's
 * conv2d workloads, and what a trial costs. A program, not a test.
 *
 * 1. Every valid config of each workload's space (conv2d_NCHWc.x86) is
 *    measured once with the tuning protocol (ob_tune_task with gridsearch,
 *    3 repeats) into a database, so the table is built once and reused by
 *    later runs (an interrupted pass resumes). Its best is the best GFLOPS
 *    known for the workload.
 * 2. Each tuner (one row of k_rows; a row whose tuner ob_tuner_new cannot
 *    create is skipped), with seeds 1..3, is replayed on that table:
 *    ob_tune_task with a measure_fn that looks the config up, the same
 *    batches of 16 and the same one-batch delay as a live run. Trials to
 *    95% = the 1-based trial whose config first reaches 95% of the table's
 *    best. All tuners see the same measured values. random, ga and
 *    xgb-cold see no database (xgb-cold: the first layer anyone tunes on
 *    this host). The xgb row is xgb as `opbench tune --tuner xgb` runs it,
 *    with its default transfer from the database, here a database holding
 *    the other ResNet-18 layers' records: a copy of the tables without the
 *    tuned workload and with only --transfer-records (200) pseudo-randomly
 *    chosen records of each other layer, what a 200-trial random run of
 *    each leaves. The headline compares that xgb with random; the cold
 *    ratio is printed just before it.
 * 3. Wall time per trial: one live 200-trial ob_tune_task per row (build
 *    + run, builds overlapped, confirmation included, and for xgb the
 *    training of its transfer model) on one workload, with a fresh kernel
 *    cache and database, so every config is compiled.
 * Prints the table, then as the last two lines the median trials to 95% of
 * xgb and random with their ratio, and the worst live wall time per trial.
 *
 * --quick: only the 3 workloads with the smallest spaces (#10, #9, #11:
 * 1x1 and 3x3 at 14x14 and 7x7, 1680 configs to measure the first time,
 * 2-5 minutes on 2 cores; seconds once the tables are in the database),
 * the live runs unchanged (3 x 200 trials, about 15 s each).
 * A full run measures 14,496 configs the first time (about 25 minutes).
 * The workload list is copied from shared/data/resnet18_conv.txt (as
 * src/cli/suite_resnet18.c). */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opbench/db.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

/* One row per tuner; a row whose tuner cannot be created here is skipped. */
typedef struct row {
  const char *label, *tuner;
  bool transfer; /* xgb: base model from the other workloads' tables */
} row;
static const row k_rows[] = {
    {"random", "random", false},
    {"ga", "ga", false},
    {"xgb-cold", "xgb", false},
    {"xgb", "xgb", true},
};
enum { NROWS = sizeof k_rows / sizeof k_rows[0], MAX_SEEDS = 16 };

typedef struct wl_def {
  const char *shape;
  int stride, pad, count;
} wl_def;

static const wl_def k_resnet18[] = {
    {"N=1,C=3,H=224,W=224,K=64,R=7,S=7", 2, 3, 1},  {"N=1,C=64,H=56,W=56,K=64,R=3,S=3", 1, 1, 4},
    {"N=1,C=64,H=56,W=56,K=128,R=3,S=3", 2, 1, 1},  {"N=1,C=64,H=56,W=56,K=128,R=1,S=1", 2, 0, 1},
    {"N=1,C=128,H=28,W=28,K=128,R=3,S=3", 1, 1, 3}, {"N=1,C=128,H=28,W=28,K=256,R=3,S=3", 2, 1, 1},
    {"N=1,C=128,H=28,W=28,K=256,R=1,S=1", 2, 0, 1}, {"N=1,C=256,H=14,W=14,K=256,R=3,S=3", 1, 1, 3},
    {"N=1,C=256,H=14,W=14,K=512,R=3,S=3", 2, 1, 1}, {"N=1,C=256,H=14,W=14,K=512,R=1,S=1", 2, 0, 1},
    {"N=1,C=512,H=7,W=7,K=512,R=3,S=3", 1, 1, 3},
};
enum { NWL = sizeof k_resnet18 / sizeof k_resnet18[0] };
static const int k_quick[] = {10, 9, 11}; /* 1-based, smallest spaces */

#define TABLE_RESOURCES "threads=1;cores=0;bench=exhaustive"

static ob_ctx *ctx;

static void die(const char *what) {
  fprintf(stderr, "bench_tuners: %s: %s\n", what, ob_ctx_errmsg(ctx));
  exit(2);
}

static ob_task *make_task(const wl_def *w) {
  ob_workload wl;
  ob_task *t = NULL;
  if (ob_workload_parse(ctx, "conv2d", w->shape, &wl) ||
      ob_workload_set(ctx, &wl, "stride", w->stride) || ob_workload_set(ctx, &wl, "pad", w->pad) ||
      ob_task_new(ctx, &wl, NULL, NULL, &t))
    die(w->shape);
  return t;
}

/* ---- the measured table of a workload -------------------------------------------- */

typedef struct table {
  uint64_t len;
  double *gflops; /* per config index; -1: not in the table, 0: failed */
  double *median;
  double best;
  int64_t nvalid, nmeasured, nfailed;
} table;

static int64_t count_valid(const ob_space *s) {
  int64_t n = 0;
  for (uint64_t i = 0; i < ob_space_len(s); i++) n += ob_space_is_valid(s, i);
  return n;
}

static void build_table(ob_db *db, const ob_host *host, ob_task *task, int idx, int n,
                        table *t) {
  const ob_space *s = ob_task_space(task);
  memset(t, 0, sizeof *t);
  t->len = ob_space_len(s);
  t->nvalid = count_valid(s);
  ob_tuner *grid = NULL;
  ob_runner *runner = NULL;
  ob_tuner_opts to = {.seed = 1};
  if (ob_tuner_new(ctx, "gridsearch", task, &to, &grid) || ob_runner_new(ctx, &runner))
    die("exhaustive pass");
  ob_tune_opts o = ob_tune_opts_default();
  o.n_trial = (int)t->nvalid;
  o.confirm_top = -1;
  o.host = host;
  o.resources = TABLE_RESOURCES;
  o.progress = stderr;
  o.task_index = idx;
  o.ntasks = n;
  ob_tune_stats st;
  ob_measurer *m = NULL;
  if (ob_measurer_local_new(ctx, runner, &m)) die("exhaustive pass");
  if (ob_tune_task(ctx, task, grid, m, db, &o, &st)) die("exhaustive pass");
  ob_measurer_free(m);
  ob_runner_free(runner);
  ob_tuner_free(grid);

  t->gflops = malloc(t->len * sizeof *t->gflops);
  t->median = calloc(t->len, sizeof *t->median);
  if (!t->gflops || !t->median) die("out of memory");
  for (uint64_t i = 0; i < t->len; i++) t->gflops[i] = -1;
  char key[512];
  ob_workload_key(ob_task_workload(task), key, sizeof key);
  ob_db_filter f = {.key = {.host = host->fingerprint,
                            .workload = key,
                            .target = "llvm -mcpu=native",
                            .resources = TABLE_RESOURCES,
                            .tmpl = ob_task_template(task)}};
  ob_db_records *r = NULL;
  if (ob_db_query(db, &f, &r)) die("reading the table");
  for (int64_t i = 0; i < r->n; i++) {
    const ob_db_record *rec = &r->rec[i];
    if (rec->config_index >= t->len) continue;
    double g = rec->error_no == 0 ? rec->gflops : 0;
    t->gflops[rec->config_index] = g;
    t->median[rec->config_index] = rec->timing.median_s;
    t->nmeasured++;
    t->nfailed += g <= 0;
    if (g > t->best) t->best = g;
  }
  ob_db_records_free(r);
}

/* ---- replay ------------------------------------------------------------------------ */

typedef struct replay {
  const table *t;
  double goal;
  int reached; /* trial, 0: not yet */
} replay;

static ob_status replay_measure(void *user, ob_task *task, const ob_config *cfgs, int n,
                                ob_measure_result *res) {
  (void)task;
  const replay *r = user;
  for (int i = 0; i < n; i++) {
    memset(&res[i], 0, sizeof res[i]);
    uint64_t k = cfgs[i].index;
    double g = k < r->t->len ? r->t->gflops[k] : -1;
    if (g <= 0) {
      res[i].error_no = g < 0 ? OB_MERR_UNKNOWN : OB_MERR_RUNTIME;
      snprintf(res[i].message, sizeof res[i].message, "%s",
               g < 0 ? "not in the table" : "failed when the table was measured");
      continue;
    }
    res[i].gflops = g;
    res[i].timing.median_s = res[i].timing.mean_s = r->t->median[k];
  }
  return OB_OK;
}

static bool replay_trial(void *user, int trial, const ob_config *cfg, const ob_measure_result *res,
                         bool resumed) {
  (void)cfg;
  (void)resumed;
  replay *r = user;
  if (!r->reached && res->error_no == 0 && res->gflops >= r->goal) r->reached = trial;
  return !r->reached;
}

/* Trials the tuner needs to reach 95% of the table's best; the space size
 * + 1 if it never does. */
static int trials_to_goal(ob_task *task, const char *name, uint64_t seed, const table *t,
                          double frac, const char *transfer_db, ob_feat_cache *fc) {
  ob_tuner *tuner = NULL;
  ob_tuner_opts to = {.seed = seed, .db_path = transfer_db, .features = fc};
  if (ob_tuner_new(ctx, name, task, &to, &tuner)) die(name);
  replay r = {.t = t, .goal = frac * t->best};
  ob_tune_opts o = ob_tune_opts_default();
  o.n_trial = (int)t->nvalid;
  o.confirm_top = -1;
  o.measure_fn = replay_measure;
  o.trial_fn = replay_trial;
  o.user = &r;
  ob_tune_stats st;
  if (ob_tune_task(ctx, task, tuner, NULL, NULL, &o, &st)) die(name);
  ob_tuner_free(tuner);
  return r.reached ? r.reached : (int)t->nvalid + 1;
}

/* ---- live runs ------------------------------------------------------------------------- */

typedef struct live {
  bool done;
  int measured;
  double seconds, setup_s, per_trial, build_s, run_s, wait_s, best_gflops;
} live;

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(p);
}

static live live_run(ob_task *task, const char *name, const ob_host *host, int trials,
                     const char *transfer) {
  live L = {0};
  char dir[64] = "/tmp/bench_tuners-XXXXXX";
  if (!mkdtemp(dir)) {
    fprintf(stderr, "bench_tuners: mkdtemp: %s\n", strerror(errno));
    exit(2);
  }
  char cache[96], dbpath[96];
  snprintf(cache, sizeof cache, "%s/kcache", dir);
  snprintf(dbpath, sizeof dbpath, "%s/live.db", dir);
  ob_db *db = NULL;
  ob_runner *runner = NULL;
  ob_tuner *tuner = NULL;
  ob_tuner_opts to = {.seed = 1, .db_path = transfer};
  if (ob_db_open(ctx, dbpath, 0, &db) || ob_runner_new(ctx, &runner)) die(name);
  double t0 = ob_now_s(); /* creating the tuner includes training the transfer model */
  if (ob_tuner_new(ctx, name, task, &to, &tuner)) die(name);
  L.setup_s = ob_now_s() - t0;
  ob_tune_opts o = ob_tune_opts_default();
  o.n_trial = trials;
  o.host = host;
  o.measure.build.cache_dir = cache;
  o.progress = stderr;
  ob_tune_stats st;
  ob_measurer *m = NULL;
  if (ob_measurer_local_new(ctx, runner, &m)) die(name);
  if (ob_tune_task(ctx, task, tuner, m, db, &o, &st)) die(name);
  ob_measurer_free(m);
  L.done = true;
  L.measured = st.measured;
  L.seconds = L.setup_s + st.seconds;
  L.per_trial = st.measured ? L.seconds / st.measured : 0;
  L.build_s = st.build_s;
  L.run_s = st.run_s;
  L.wait_s = st.wait_s;
  L.best_gflops = st.confirmed ? st.confirmed_result.gflops : st.best_result.gflops;
  ob_tuner_free(tuner);
  ob_runner_free(runner);
  ob_db_close(db);
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return L;
}

/* A copy of the tables for transfer: without the workload being tuned, and
 * of each other workload only `keep` records (a fixed pseudo-random sample,
 * what a `--tuner random --trials keep` run of that layer leaves behind);
 * keep <= 0 keeps every record. */
static void transfer_db(ob_db *db, ob_task *task, const char *path, int keep) {
  char key[512], sql[1024];
  ob_workload_key(ob_task_workload(task), key, sizeof key);
  unlink(path);
  snprintf(sql, sizeof sql, "VACUUM INTO '%s'", path);
  if (ob_db_exec(db, sql)) die("copying the tables for transfer");
  ob_db *cp = NULL;
  if (ob_db_open(ctx, path, OB_DB_NO_CREATE, &cp)) die(path);
  snprintf(sql, sizeof sql, "DELETE FROM measurements WHERE workload_key = '%s'", key);
  if (ob_db_exec(cp, sql)) die(path);
  if (keep > 0) {
    snprintf(sql, sizeof sql,
             "DELETE FROM measurements WHERE id IN (SELECT id FROM (SELECT id, row_number() "
             "OVER (PARTITION BY workload_key ORDER BY (id * 2654435761) %% 4294967311) AS rn "
             "FROM measurements) WHERE rn > %d)",
             keep);
    if (ob_db_exec(cp, sql)) die(path);
  }
  ob_db_close(cp);
}

/* ---- main ------------------------------------------------------------------------------ */

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static double median_int(int *v, int n) {
  if (n == 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_int);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Whether `name` is one of the comma-separated items of `list`. */
static bool listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, name, n)) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_tuners [--quick] [--workloads N] [--seeds N] [--db FILE]\n"
          "                    [--live-trials N] [--live-workload I] [--tuners a,b,...]\n"
          "  --quick            the 3 workloads with the smallest spaces (#10, #9, #11)\n"
          "  --workloads N      only the first N workloads (of the quick list with --quick)\n"
          "  --seeds N          seeds per tuner and workload (default 3)\n"
          "  --db FILE          where the measured tables live (default ./bench_tuners.db);\n"
          "                     the first run measures every config, later runs reuse them\n"
          "  --live-trials N    trials of each live wall-time run (default 200; 0: none)\n"
          "  --live-workload I  ResNet-18 workload of the live runs, 1..11 (default 2)\n"
          "  --tuners LIST      rows to run, comma-separated: random,ga,xgb-cold,xgb (default all)\n"
          "  --transfer-records N  records of each other layer the xgb row transfers from\n"
          "                     (default 200; 0: every record of the tables)\n");
}

int main(int argc, char **argv) {
  bool quick = false;
  int nwl_limit = 0, nseeds = 3, live_trials = 200, live_wl = 2, tl_keep = 200;
  const char *dbpath = "./bench_tuners.db", *tuner_list = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) quick = true;
    else if (!strcmp(a, "--workloads") && v) nwl_limit = atoi(argv[++i]);
    else if (!strcmp(a, "--seeds") && v) nseeds = atoi(argv[++i]);
    else if (!strcmp(a, "--db") && v) dbpath = argv[++i];
    else if (!strcmp(a, "--live-trials") && v) live_trials = atoi(argv[++i]);
    else if (!strcmp(a, "--live-workload") && v) live_wl = atoi(argv[++i]);
    else if (!strcmp(a, "--tuners") && v) tuner_list = argv[++i];
    else if (!strcmp(a, "--transfer-records") && v) tl_keep = atoi(argv[++i]);
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (nseeds < 1 || nseeds > MAX_SEEDS || live_wl < 1 || live_wl > NWL || live_trials < 0 ||
      tl_keep < 0) {
    usage(stderr);
    return 2;
  }
  if (ob_ctx_new(&ctx)) return 2;
  ob_host host;
  if (ob_host_detect(ctx, &host)) die("host");

  int wls[NWL], nw = 0;
  if (quick)
    for (int i = 0; i < (int)(sizeof k_quick / sizeof k_quick[0]); i++) wls[nw++] = k_quick[i] - 1;
  else
    for (int i = 0; i < NWL; i++) wls[nw++] = i;
  if (nwl_limit > 0 && nwl_limit < nw) nw = nwl_limit;

  /* the rows of this run: listed (or all) and creatable here */
  bool use[NROWS];
  ob_task *probe = make_task(&k_resnet18[wls[0]]);
  int nt = 0;
  for (int k = 0; k < NROWS; k++) {
    use[k] = !tuner_list || listed(tuner_list, k_rows[k].label);
    ob_tuner *t = NULL;
    if (use[k] && ob_tuner_new(ctx, k_rows[k].tuner, probe, NULL, &t) != OB_OK) {
      fprintf(stderr, "bench_tuners: tuner %s unavailable: %s\n", k_rows[k].tuner,
              ob_ctx_errmsg(ctx));
      use[k] = false;
    }
    ob_tuner_free(t);
    nt += use[k];
  }
  ob_task_free(probe);
  if (!nt) {
    fprintf(stderr, "bench_tuners: no tuner to run\n");
    return 2;
  }

  ob_db *db = NULL;
  if (ob_db_open(ctx, dbpath, 0, &db)) die(dbpath);
  /* every table first: transfer learns from the other workloads' */
  ob_task *tasks[NWL];
  table tables[NWL];
  for (int w = 0; w < nw; w++) {
    tasks[w] = make_task(&k_resnet18[wls[w]]);
    build_table(db, &host, tasks[w], w + 1, nw, &tables[w]);
  }
  char tmpdir[64] = "/tmp/bench_tuners-XXXXXX", tlpath[128];
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "bench_tuners: mkdtemp: %s\n", strerror(errno));
    return 2;
  }
  snprintf(tlpath, sizeof tlpath, "%s/transfer.db", tmpdir);

  printf("bench_tuners: %d ResNet-18 conv2d workload(s)%s, template conv2d_NCHWc.x86, %d seed(s),\n"
         "trials to 95%% of the best GFLOPS of the workload's exhaustively measured table\n"
         "(replayed: every tuner sees the same measurements, batches of 16, one batch of delay;\n"
         "xgb-cold: empty database; xgb: transfer from the other layers' records, %d per layer)\n"
         "host %s (%s, %d cores), tables in %s\n\n",
         nw, quick ? " (--quick)" : "", nseeds, tl_keep, host.fingerprint, host.cpu_model, host.npus, dbpath);

  int *all[NROWS];
  int nall[NROWS];
  for (int k = 0; k < NROWS; k++) {
    all[k] = calloc((size_t)nw * (size_t)nseeds + 1, sizeof *all[k]);
    nall[k] = 0;
  }
  printf("%3s %-36s %6s %8s", "#", "workload (stride, pad)", "space", "best GF");
  for (int k = 0; k < NROWS; k++)
    if (use[k]) printf(" | %-8s %-12s", k_rows[k].label, "to 95%: seeds");
  printf("\n");
  for (int w = 0; w < nw; w++) {
    const wl_def *d = &k_resnet18[wls[w]];
    const table *t = &tables[w];
    bool have_tl = false;
    /* the workload's features, lowered once for every row and seed */
    ob_feat_cache *fc = NULL;
    if (ob_feat_cache_new(ctx, tasks[w], OB_FEATURE_KINDS_ALL, 0, &fc)) die("feature cache");
    char name[64];
    snprintf(name, sizeof name, "%s s%d p%d", d->shape + 4, d->stride, d->pad);
    printf("%3d %-36s %6lld %8.2f", wls[w] + 1, name, (long long)t->nvalid, t->best);
    for (int k = 0; k < NROWS; k++) {
      if (!use[k]) continue;
      if (k_rows[k].transfer && !have_tl) {
        transfer_db(db, tasks[w], tlpath, tl_keep);
        have_tl = true;
      }
      int v[MAX_SEEDS];
      char cell[64] = "";
      size_t off = 0;
      for (int sd = 0; sd < nseeds; sd++) {
        v[sd] = trials_to_goal(tasks[w], k_rows[k].tuner, (uint64_t)sd + 1, t, 0.95,
                               k_rows[k].transfer ? tlpath : NULL, fc);
        all[k][nall[k]++] = v[sd];
        off += (size_t)snprintf(cell + off, sizeof cell - off, "%s%d", sd ? " " : "", v[sd]);
      }
      printf(" | %-8.0f %-12s", median_int(v, nseeds), cell);
    }
    ob_feat_cache_free(fc);
    printf("\n");
    fflush(stdout);
    if (t->nmeasured != t->nvalid)
      printf("    note: the table holds %lld of %lld valid configs\n", (long long)t->nmeasured,
             (long long)t->nvalid);
  }
  for (int w = 0; w < nw; w++) {
    free(tables[w].gflops);
    free(tables[w].median);
    ob_task_free(tasks[w]);
  }

  double med[NROWS];
  printf("\nmedian over workloads and seeds:");
  for (int k = 0; k < NROWS; k++) {
    med[k] = use[k] ? median_int(all[k], nall[k]) : NAN;
    if (use[k]) printf(" %s %.1f", k_rows[k].label, med[k]);
  }
  printf("\n");

  /* live wall time per trial; the transfer row learns from the tables of
   * the other workloads first, as in the replay */
  double worst = 0;
  const char *worst_name = NULL;
  if (live_trials > 0) {
    const wl_def *d = &k_resnet18[live_wl - 1];
    ob_task *task = make_task(d);
    printf("\nlive runs: %d trials each on workload #%d (%s s%d p%d), fresh kernel cache,\n"
           "1 measuring thread on core 0, builds overlapped on the other cores;\n"
           "seconds include creating the tuner (setup s: xgb trains its transfer model)\n",
           live_trials, live_wl, d->shape + 4, d->stride, d->pad);
    printf("%-8s %8s %9s %9s %10s %9s %9s %9s %9s\n", "tuner", "trials", "seconds", "setup s",
           "s/trial", "build s", "run s", "wait s", "best GF");
    for (int k = 0; k < NROWS; k++) {
      if (!use[k]) continue;
      if (k_rows[k].transfer) transfer_db(db, task, tlpath, tl_keep);
      live L = live_run(task, k_rows[k].tuner, &host, live_trials,
                        k_rows[k].transfer ? tlpath : NULL);
      printf("%-8s %8d %9.2f %9.2f %10.3f %9.2f %9.2f %9.2f %9.2f\n", k_rows[k].label,
             L.measured, L.seconds, L.setup_s, L.per_trial, L.build_s, L.run_s, L.wait_s, L.best_gflops);
      fflush(stdout);
      if (L.per_trial > worst) {
        worst = L.per_trial;
        worst_name = k_rows[k].label;
      }
    }
    ob_task_free(task);
    if (worst_name) printf("slowest per trial: %s\n", worst_name);
  }
  ob_db_close(db);
  nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);

  int kx = -1, kr = -1;
  for (int k = 0; k < NROWS; k++) {
    if (!strcmp(k_rows[k].label, "xgb") && use[k]) kx = k;
    if (!strcmp(k_rows[k].label, "random") && use[k]) kr = k;
  }
  int kc = -1;
  for (int k = 0; k < NROWS; k++)
    if (!strcmp(k_rows[k].label, "xgb-cold") && use[k]) kc = k;
  printf("\n");
  if (kc >= 0 && kr >= 0)
    printf("cold start (empty database): xgb-cold %.1f, random %.1f, ratio %.3f\n", med[kc],
           med[kr], med[kc] / med[kr]);
  if (kx >= 0 && kr >= 0)
    printf("median trials to 95%%: xgb %.1f, random %.1f, ratio %.3f (bar <= 1/3)\n", med[kx],
           med[kr], med[kx] / med[kr]);
  else
    printf("median trials to 95%%: xgb %s, random %s, ratio n/a (bar <= 1/3)\n",
           kx >= 0 ? "ran" : "n/a (not run or unavailable)", kr >= 0 ? "ran" : "n/a (not run)");
  if (worst_name) /* the worst live run (named in the table above) */
    printf("wall time per trial: %.3f s (bar <= 0.35 s)\n", worst);
  else
    printf("wall time per trial: n/a (no live run) (bar <= 0.35 s)\n");
  for (int k = 0; k < NROWS; k++) free(all[k]);
  ob_ctx_free(ctx);
  return 0;
}
