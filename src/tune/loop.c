/* loop.c: ob_tune_task, AutoTVM's tuning loop with resume, overlapped
 * builds, early stopping and a confirmed best.
 *
 * Pipeline: one build worker per allowed core, pinned to it (the compilers
 * a worker spawns inherit its CPU mask: posix_spawn keeps the calling
 * thread's affinity). While batch k is measured, the workers on cores the
 * measurement does not use lower, generate and compile batch k+1; once the
 * measurement is over, the workers on the measuring cores help with what
 * is left, and the loop waits until the batch is built, so a compiler never
 * runs on a core while a kernel is being timed there. With no free core
 * the loop builds a batch on every core, then measures it. Each worker has
 * its own ctx and copy of the task, so it shares no mutable state with the
 * measuring thread.
 *
 * The tuner proposes batch k+1 before it sees the results of batch k (one
 * batch of delay, as any pipelined tuner); a tuner that must wait for
 * results (ga between generations) proposes fewer and the loop asks again
 * after the update.
 *
 * The template's default config is the first trial (unless the database
 * holds it already) and always takes part in the confirmation, so tuning
 * can only improve on the default: a tuner that never samples it, or one
 * unlucky short trial of it, cannot leave a config slower than the default
 * as the confirmed best.
 * Its channel-block variants (ob_task_block_variants: the same schedule
 * reading another block) come next, within the trial budget: a model's
 * plan joins its nodes' configs by the blocks they read and write, and a
 * tuned depthwise layer of mobilenet-v2 whose records held no config of its
 * neighbours' block took one 3x slower than its fastest to save a
 * conversion (the untuned plan aligns the default's variants instead).
 *
 * Every trial is stored in the database as soon as it is measured (one
 * transaction each), so a process killed at any moment loses at most the
 * trial in flight. The loop owns everything it allocates and frees it on
 * every path; the task, tuner, measurer and db are borrowed.
 *
 * Only the local measurer (builds here, an ob_runner measures) gets the
 * build pipeline; any other measurer (a fleet) gets each batch whole and
 * builds and measures it where it measures, and its results say on which
 * host: trials are filed under that host. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opbench/db.h"
#include "opbench/gpu.h"
#include "opbench/ops.h"
#include "opbench/tune.h"
#include "tune/tune_impl.h"

#define OB_TUNE_DEFAULT_BATCH 16
#define OB_TUNE_MAX_BATCH 1024
#define OB_TUNE_CONFIRM_TOP 5

ob_tune_opts ob_tune_opts_default(void) {
  ob_tune_opts o;
  memset(&o, 0, sizeof o);
  o.n_trial = 200;
  o.batch = OB_TUNE_DEFAULT_BATCH;
  o.measure = ob_measure_opts_default();
  return o;
}

void ob_tune_progress_format(const ob_tune_progress *p, char *buf, size_t cap) {
  snprintf(buf, cap,
           "[Task %d/%d] Current/Best: %7.2f/%7.2f GFLOPS | Progress: (%d/%d) | %.2f s",
           p->task_index > 0 ? p->task_index : 1, p->ntasks > 0 ? p->ntasks : 1, p->cur_gflops,
           p->best_gflops, p->trials, p->n_trial, p->elapsed_s);
}

/* ---- a batch being built --------------------------------------------------------- */

typedef struct batch {
  int n;
  ob_config *cfg;
  ob_measure_result *res; /* instantiation / build errors land here first */
  char **so, **sym;       /* malloc'd; NULL where the config failed */
  bool built;
} batch;

static void batch_clear(batch *b) {
  for (int i = 0; i < b->n; i++) {
    free(b->so[i]);
    free(b->sym[i]);
    b->so[i] = b->sym[i] = NULL;
  }
  b->n = 0;
  b->built = false;
}

static bool batch_alloc(batch *b, int cap) {
  memset(b, 0, sizeof *b);
  b->cfg = calloc((size_t)cap, sizeof *b->cfg);
  b->res = calloc((size_t)cap, sizeof *b->res);
  b->so = calloc((size_t)cap, sizeof *b->so);
  b->sym = calloc((size_t)cap, sizeof *b->sym);
  return b->cfg && b->res && b->so && b->sym;
}

static void batch_free(batch *b) {
  if (b->so && b->sym) batch_clear(b);
  free(b->cfg);
  free(b->res);
  free(b->so);
  free(b->sym);
  memset(b, 0, sizeof *b);
}

/* Build workers, one per allowed core, each pinned to its core and owning
 * a ctx and a copy of the task (lowering touches both). A batch is a queue:
 * workers take configs one at a time until none is left. Workers on free
 * cores start as soon as a batch is proposed; workers on measurement cores
 * join in only once the measurement is over and the loop waits for the
 * batch, and the wait ends when the last config is built, so no compiler
 * outlives it on a measuring core. */
typedef struct bworker {
  struct bpool *pool;
  ob_ctx *ctx;
  ob_task *task;
  int core;
  bool on_meas; /* a measurement core */
  pthread_t th;
  bool running;
  ob_status st; /* nothing could be built (no compiler); message in ctx */
} bworker;

typedef struct bpool {
  bworker *w;
  int nw;
  bool overlap;       /* some worker is on a free core */
  ob_build_opts bopts; /* one compiler per worker */
  batch *job;
  atomic_int next;    /* the next config of job to take */
} bpool;

/* Lowers, generates and compiles config i of b. Per-config failures go to
 * b->res[i]; a failure to build anything at all is the return status. */
static ob_status build_one(bworker *w, batch *b, int i) {
  ob_measure_result *r = &b->res[i];
  memset(r, 0, sizeof *r);
  ob_config c;
  char *src = NULL;
  ob_status st = ob_space_get(w->ctx, ob_task_space(w->task), b->cfg[i].index, &c);
  if (!st) st = ob_task_source(w->task, &c, &src, &b->sym[i]);
  if (st == OB_ERR_NOMEM) return st; /* the machine's failure, not the config's */
  if (st) {
    r->error_no = OB_MERR_INSTANTIATION;
    snprintf(r->message, sizeof r->message, "%s", ob_ctx_errmsg(w->ctx));
    free(src);
    return OB_OK;
  }
  ob_build_input in = {.source = src, .name = b->sym[i]};
  ob_build_result br;
  memset(&br, 0, sizeof br);
  st = ob_build_batch(w->ctx, &w->pool->bopts, &in, 1, &br);
  if (!st) {
    r->build_s = br.build_s;
    if (br.error_no) {
      r->error_no = br.error_no;
      snprintf(r->message, sizeof r->message, "%s", br.message ? br.message : "build failed");
    } else {
      b->so[i] = br.so_path;
      br.so_path = NULL;
    }
  }
  ob_build_result_clear(&br);
  free(src);
  return st;
}

static void *build_worker(void *arg) {
  bworker *w = arg;
  bpool *p = w->pool;
  if (w->core >= 0) {
    cpu_set_t m;
    CPU_ZERO(&m);
    CPU_SET(w->core, &m);
    pthread_setaffinity_np(pthread_self(), sizeof m, &m); /* compilers inherit it */
  }
  int i;
  while (!w->st && (i = atomic_fetch_add(&p->next, 1)) < p->job->n) w->st = build_one(w, p->job, i);
  return NULL;
}

static ob_status pool_spawn(ob_ctx *ctx, bpool *p, bool meas) {
  for (int k = 0; k < p->nw; k++) {
    bworker *w = &p->w[k];
    if (w->running || w->on_meas != meas) continue;
    int rc = pthread_create(&w->th, NULL, build_worker, w);
    if (rc) return ob_fail(ctx, OB_ERR_SYSTEM, "cannot start a build thread: %s", strerror(rc));
    w->running = true;
  }
  return OB_OK;
}

/* Starts building b on the free cores (all cores when all is set). */
static ob_status pool_start(ob_ctx *ctx, bpool *p, batch *b, bool all) {
  p->job = b;
  atomic_store(&p->next, 0);
  for (int k = 0; k < p->nw; k++) p->w[k].st = OB_OK;
  ob_status st = pool_spawn(ctx, p, false);
  if (!st && (all || !p->overlap)) st = pool_spawn(ctx, p, true);
  return st;
}

/* Lets the measurement cores help with what is left, then waits for the
 * batch. The first worker failure is returned with its message. */
static ob_status pool_finish(ob_ctx *ctx, bpool *p, double *wait_s) {
  double t = ob_now_s();
  ob_status st = p->job ? pool_spawn(ctx, p, true) : OB_OK;
  ob_status wst = OB_OK;
  for (int k = 0; k < p->nw; k++) {
    bworker *w = &p->w[k];
    if (!w->running) continue;
    pthread_join(w->th, NULL);
    w->running = false;
    if (w->st && !wst) wst = ob_fail(ctx, w->st, "%s", ob_ctx_errmsg(w->ctx));
  }
  p->job = NULL;
  if (wait_s) *wait_s += ob_now_s() - t;
  return st ? st : wst;
}

static void pool_free(bpool *p) {
  for (int k = 0; k < p->nw; k++) {
    if (p->w[k].running) pthread_join(p->w[k].th, NULL);
    ob_task_free(p->w[k].task);
    ob_ctx_free(p->w[k].ctx);
  }
  free(p->w);
  memset(p, 0, sizeof *p);
}

/* ---- measuring one built config ------------------------------------------------- */

/* Runs config i of a built batch (its build errors are already in res). */
static ob_status run_built(ob_task *task, ob_runner *runner, const ob_measure_opts *mo, batch *b,
                           int i) {
  ob_measure_result *r = &b->res[i];
  if (r->error_no || !b->so[i]) return OB_OK;
  ob_status st = ob_run_built(runner, task, mo, &b->cfg[i], b->so[i], b->sym[i], r);
  if (st || r->error_no) return st;
  if (!(r->timing.median_s > 0)) { /* a timer that saw nothing cannot rank configs */
    double m = r->timing.median_s, build_s = r->build_s, run_s = r->run_s;
    memset(r, 0, sizeof *r); /* a failed trial keeps no timing but its seconds */
    r->build_s = build_s;
    r->run_s = run_s;
    r->error_no = OB_MERR_UNKNOWN;
    snprintf(r->message, sizeof r->message, "the kernel's measured time is %g s", m);
  }
  return OB_OK;
}

/* ---- the loop's state -------------------------------------------------------------- */

typedef struct trial {
  uint64_t index;
  double gflops; /* 0 on error */
} trial;

typedef struct loop {
  ob_ctx *ctx;
  ob_task *task;
  ob_tuner *tuner;
  ob_measurer *measurer;
  ob_runner *runner; /* the local measurer's; NULL for a remote one */
  bool local;        /* builds here (the pipeline), measures with runner */
  ob_db *db;
  const ob_tune_opts *o;
  ob_tune_stats *stats;
  ob_measure_opts trial_mo; /* measure with the trial repeat */
  ob_db_key key;
  char host[17], wl_key[512], resources[256], cores_text[192];
  double flops, t0;
  trial *trials; /* every trial counted, in order */
  int ntrials, ctrials;
  int batch_cap; /* configs per batch */
  int alloc;     /* slots in each batch buffer (>= batch_cap, >= confirm_top) */
  bpool pool;
  bool stop;     /* a trial callback asked to stop */
  double cur_gflops;
  bool reported;       /* a progress line was printed */
  int reported_trials; /* its trial count */
  FILE *log_stream;    /* --log as a pipe or device, opened before the first trial */
  int64_t run_id;      /* the db's tuning_runs row of this call (0: none) */
  bool gpu;            /* a GPU target: ob_measure_configs builds (NVRTC) and runs (the
                          GPU runner) each batch; the build pool is the C compiler's */
  ob_config dflt;      /* the task's default config */
  /* the configs the loop measures on its own, first: the default, then its
   * channel-block variants (ob_task_block_variants) */
  ob_config seed[1 + OB_TASK_BLOCK_VARIANTS_MAX];
  int nseed;
  bool seed_pending[1 + OB_TASK_BLOCK_VARIANTS_MAX]; /* not yet a trial: the next batch takes it */
} loop;

/* True when cfg is one the loop measures on its own (the default, its
 * variants), so a tuner's proposal of it is dropped. */
static bool seeded(const loop *L, const ob_config *cfg) {
  for (int i = 0; i < L->nseed; i++)
    if (cfg->index == L->seed[i].index) return true;
  return false;
}

static void measurement_cores(const ob_measure_opts *mo, int *cores, int *n) {
  int nt = mo->nthreads > 0 ? mo->nthreads : 1;
  if (nt > CPU_SETSIZE) nt = CPU_SETSIZE;
  for (int i = 0; i < nt; i++) cores[i] = mo->cores ? mo->cores[i] : i;
  *n = nt;
}

static int cores_text(const ob_measure_opts *mo, char *buf, size_t cap) {
  int cores[CPU_SETSIZE], n;
  measurement_cores(mo, cores, &n);
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && off + 12 < cap; i++)
    off += (size_t)snprintf(buf + off, cap - off, "%s%d", i ? "," : "", cores[i]);
  return n;
}

void ob_tune_resources(const ob_measure_opts *mo, char *buf, size_t cap) {
  char cores[1024];
  int n = cores_text(mo, cores, sizeof cores);
  snprintf(buf, cap, "threads=%d;cores=%s", n, cores);
}

/* The allowed cores the measurement does not use. */
static int free_cores(const ob_measure_opts *mo, cpu_set_t *out) {
  CPU_ZERO(out);
  if (sched_getaffinity(0, sizeof *out, out) != 0) return 0;
  int cores[CPU_SETSIZE], n;
  measurement_cores(mo, cores, &n);
  for (int i = 0; i < n; i++)
    if (cores[i] >= 0 && cores[i] < CPU_SETSIZE) CPU_CLR(cores[i], out);
  return CPU_COUNT(out);
}

static ob_status record_trial(loop *L, const ob_config *cfg, const ob_measure_result *res) {
  if (L->ntrials == L->ctrials) {
    int c = L->ctrials ? L->ctrials * 2 : 256;
    trial *t = realloc(L->trials, (size_t)c * sizeof *t);
    if (!t) return ob_fail(L->ctx, OB_ERR_NOMEM, "out of memory recording trials");
    L->trials = t;
    L->ctrials = c;
  }
  double g = res->error_no == OB_MERR_NONE ? res->gflops : 0;
  L->trials[L->ntrials++] = (trial){cfg->index, g};
  ob_tune_stats *s = L->stats;
  s->trials++;
  if (res->error_no) s->failed++;
  if (g > 0 && (s->best_trial == 0 || g > s->best_result.gflops)) {
    s->best_trial = s->trials;
    s->best = *cfg;
    s->best_result = *res;
  }
  return OB_OK;
}

static ob_status store(loop *L, const ob_config *cfg, const ob_measure_result *res,
                       unsigned flags) {
  if (!L->db) return OB_OK;
  char *entity = NULL;
  ob_status st = ob_config_to_json(L->ctx, cfg, &entity);
  if (st) return st;
  ob_db_record rec = {
      .host = res->host[0] ? res->host : L->key.host, /* a fleet's worker */
      .workload = L->key.workload,
      .target = L->key.target,
      .resources = L->key.resources,
      .tmpl = L->key.tmpl,
      .config_index = cfg->index,
      .entity = entity,
      .nthreads = L->trial_mo.nthreads > 0 ? L->trial_mo.nthreads : 1,
      .cores = res->cores[0] ? res->cores : L->cores_text,
  };
  ob_measure_result_to_record(res, &rec);
  st = ob_db_put_measurement(L->db, &rec, flags, NULL);
  if (st) ob_fail_prefix(L->ctx, "storing trial of config %llu", (unsigned long long)cfg->index);
  free(entity);
  return st;
}

static void report(loop *L, bool done) {
  const ob_tune_opts *o = L->o;
  ob_tune_progress p = {
      .task_index = o->task_index > 0 ? o->task_index : 1,
      .ntasks = o->ntasks > 0 ? o->ntasks : 1,
      .trials = L->stats->trials,
      .n_trial = o->n_trial,
      .cur_gflops = L->cur_gflops,
      .best_gflops = L->stats->best_trial ? L->stats->best_result.gflops : 0,
      .elapsed_s = ob_now_s() - L->t0,
      .done = done,
  };
  if (o->progress) {
    /* the closing report only ends a redrawn line, or adds one that says
     * something new */
    bool tty = isatty(fileno(o->progress));
    bool same = L->reported && L->reported_trials == p.trials;
    char line[256];
    ob_tune_progress_format(&p, line, sizeof line);
    if (tty && done && same) fputc('\n', o->progress);
    else if (tty) fprintf(o->progress, "\r%s%s", line, done ? "\n" : "");
    else if (!(done && same)) fprintf(o->progress, "%s\n", line);
    fflush(o->progress);
  }
  L->reported = true;
  L->reported_trials = p.trials;
  if (o->progress_fn) o->progress_fn(o->user, &p);
}

/* ---- resume ------------------------------------------------------------------------ */

static ob_status resume(loop *L) {
  ob_db_records *recs = NULL;
  ob_db_filter f = {.key = L->key, .order = OB_DB_ORDER_TIME};
  ob_status st = ob_db_query(L->db, &f, &recs);
  if (st) return st;
  const ob_space *sp = ob_task_space(L->task);
  int cap = (int)(recs->n < 256 ? recs->n : 256);
  ob_config *cfgs = calloc((size_t)cap + 1, sizeof *cfgs);
  ob_measure_result *res = calloc((size_t)cap + 1, sizeof *res);
  if (!cfgs || !res) {
    st = ob_fail(L->ctx, OB_ERR_NOMEM, "out of memory resuming");
    goto done;
  }
  int n = 0;
  for (int64_t i = 0; i <= recs->n; i++) {
    if (i < recs->n) {
      const ob_db_record *r = &recs->rec[i];
      if (!ob_space_is_valid(sp, r->config_index)) continue; /* another version's space */
      ob_space_get(L->ctx, sp, r->config_index, &cfgs[n]);
      ob_measure_result *m = &res[n];
      memset(m, 0, sizeof *m);
      m->error_no = r->error_no;
      snprintf(m->message, sizeof m->message, "%s", r->error_msg ? r->error_msg : "");
      m->timing = r->timing; /* a resumed trial keeps how it was timed */
      if (!isfinite(m->timing.median_s)) m->timing.median_s = 0;
      if (!isfinite(m->timing.mean_s)) m->timing.mean_s = 0;
      if (!isfinite(m->timing.cv)) m->timing.cv = 0;
      m->build_s = isfinite(r->build_s) ? r->build_s : 0;
      m->run_s = isfinite(r->run_s) ? r->run_s : 0;
      m->gflops = m->error_no == 0 && m->timing.median_s > 0 ? L->flops / m->timing.median_s / 1e9 : 0;
      if ((st = record_trial(L, &cfgs[n], m))) goto done;
      L->stats->resumed++;
      if (L->o->trial_fn && !L->o->trial_fn(L->o->user, L->stats->trials, &cfgs[n], m, true))
        L->stop = true;
      n++;
    }
    if (n == cap || (i == recs->n && n > 0)) {
      if ((st = ob_tuner_update(L->tuner, cfgs, res, n))) goto done;
      n = 0;
    }
  }
  if (L->stats->resumed)
    ob_log(L->ctx, OB_LOG_INFO, "tune %s: resumed %d trials from %s", L->wl_key,
           L->stats->resumed, ob_db_path(L->db));
done:
  free(cfgs);
  free(res);
  ob_db_records_free(recs);
  return st;
}

/* ---- proposing and building --------------------------------------------------------- */

/* Asks the tuner for up to `want` configs into b after its first b->n,
 * leaving out the seeds (the default and its variants: the loop measures
 * them itself; the tuner hears of them through update, but may propose
 * one before that in the pipelined batch, and then never again). */
static ob_status ask_tuner(loop *L, batch *b, int want) {
  for (int round = 0; round < 2 && b->n < want && ob_tuner_has_next(L->tuner); round++) {
    int got = 0;
    ob_status st = ob_tuner_next_batch(L->tuner, want - b->n, b->cfg + b->n, &got);
    if (st) return st;
    int kept = b->n;
    for (int i = b->n; i < b->n + got; i++)
      if (!seeded(L, &b->cfg[i])) b->cfg[kept++] = b->cfg[i];
    bool dropped = kept < b->n + got;
    b->n = kept;
    if (!dropped) break; /* the tuner gave what it had */
  }
  return OB_OK;
}

static ob_status propose(loop *L, batch *b, int pending) {
  batch_clear(b);
  int want = L->o->n_trial - L->stats->trials - pending;
  if (want > L->batch_cap) want = L->batch_cap;
  if (want <= 0 || L->stop) return OB_OK;
  for (int i = 0; i < L->nseed && b->n < want; i++)
    if (L->seed_pending[i]) {
      b->cfg[b->n++] = L->seed[i];
      L->seed_pending[i] = false;
    }
  return ask_tuner(L, b, want);
}

/* Builds b on every allowed core (nothing measures meanwhile). */
static ob_status build_now(loop *L, batch *b) {
  if (!L->local || L->gpu || b->n == 0) return OB_OK;
  ob_status st = pool_start(L->ctx, &L->pool, b, true);
  ob_status fs = pool_finish(L->ctx, &L->pool, NULL);
  return st ? st : fs;
}

/* Measures (or simulates) batch b, stores and reports every trial, feeds
 * the tuner. */
/* Measures a whole batch where the local pipeline does not: by the
 * measure_fn, or by a remote measurer with opts mo. */
static ob_status measure_whole(loop *L, batch *b, const ob_measure_opts *mo) {
  const ob_tune_opts *o = L->o;
  for (int i = 0; i < b->n; i++) memset(&b->res[i], 0, sizeof b->res[i]);
  if (o->measure_fn) return o->measure_fn(o->user, L->task, b->cfg, b->n, b->res);
  /* a remote measurer's results: its run seconds, and a timer that saw
   * nothing is an error, as run_built makes it for local ones */
  ob_status st = ob_measurer_measure(L->measurer, L->ctx, L->task, mo, b->cfg, b->n, b->res);
  for (int i = 0; !st && i < b->n; i++) {
    ob_measure_result *r = &b->res[i];
    L->stats->run_s += r->run_s;
    if (!r->error_no && !(r->timing.median_s > 0)) { /* as run_built says */
      r->error_no = OB_MERR_UNKNOWN;
      snprintf(r->message, sizeof r->message, "the kernel's measured time is %g s", r->timing.median_s);
    }
  }
  return st;
}

static ob_status measure_batch(loop *L, batch *b) {
  ob_status st = OB_OK;
  const ob_tune_opts *o = L->o;
  if (!L->local && (st = measure_whole(L, b, &L->trial_mo))) return st;
  if (L->local && L->gpu) { /* ob_measure_configs builds (NVRTC) and runs the batch */
    double t = ob_now_s();
    st = ob_measure_configs(L->ctx, L->task, L->runner, &L->trial_mo, b->cfg, b->n, b->res);
    L->stats->run_s += ob_now_s() - t;
    if (st) return st;
  }
  int done = 0;
  L->cur_gflops = 0;
  for (int i = 0; i < b->n && !L->stop; i++) {
    if (L->local && !L->gpu) {
      double t = ob_now_s();
      if ((st = run_built(L->task, L->runner, &L->trial_mo, b, i))) break;
      L->stats->run_s += ob_now_s() - t;
    }
    const ob_measure_result *r = &b->res[i];
    L->stats->build_s += r->build_s;
    if ((st = store(L, &b->cfg[i], r, L->o->remeasure ? OB_DB_REPLACE : 0))) break;
    if ((st = record_trial(L, &b->cfg[i], r))) break;
    L->stats->measured++;
    done++;
    if (r->error_no == 0) L->cur_gflops = r->gflops;
    else
      ob_log(L->ctx, OB_LOG_DEBUG, "trial %d (config %llu): error %d %s: %.200s",
             L->stats->trials, (unsigned long long)b->cfg[i].index, r->error_no,
             ob_merr_str(r->error_no), r->message);
    if (o->trial_fn && !o->trial_fn(o->user, L->stats->trials, &b->cfg[i], r, false))
      L->stop = true;
  }
  if (done) {
    ob_status us = ob_tuner_update(L->tuner, b->cfg, b->res, done);
    if (!st) st = us;
  }
  return st;
}

/* ---- confirmation ---------------------------------------------------------------------- */

static int cmp_trial_desc(const void *a, const void *b) {
  const trial *x = a, *y = b;
  if (x->gflops != y->gflops) return (x->gflops < y->gflops) - (x->gflops > y->gflops);
  return (x->index > y->index) - (x->index < y->index);
}

/* One round of the confirmation's re-measurement of b[0..n) (built when
 * local), in reverse order on odd rounds where the loop orders it. */
static ob_status confirm_round(loop *L, batch *b, int round, const ob_measure_result *keep) {
  const ob_tune_opts *o = L->o;
  if (!L->local) return measure_whole(L, b, &o->measure);
  if (L->gpu) return ob_measure_configs(L->ctx, L->task, L->runner, &o->measure, b->cfg, b->n, b->res);
  ob_status st = OB_OK;
  for (int j = 0; j < b->n && !st; j++) {
    int i = round % 2 ? b->n - 1 - j : j;
    if (!keep || !keep[i].error_no) st = run_built(L->task, L->runner, &o->measure, b, i);
  }
  return st;
}

/* The re-measurement of the confirmation's candidates b[0..n) in
 * confirm_rounds rounds, each candidate keeping its fastest round's result
 * (the rule of the final figures: the host slows our cores in phases of
 * 0.2 s to seconds, and a phase that falls on one candidate's only
 * measurement would decide the pick). A failure in any round is kept. */
static ob_status confirm_measure(loop *L, batch *b) {
  int rounds = L->o->confirm_rounds > 1 ? L->o->confirm_rounds : 1;
  if (L->local && !L->gpu) {
    ob_status st = build_now(L, b);
    if (st) return st;
  }
  if (rounds == 1) return confirm_round(L, b, 0, NULL);
  ob_measure_result *keep = malloc((size_t)b->n * sizeof *keep);
  if (!keep) return ob_fail(L->ctx, OB_ERR_NOMEM, "out of memory confirming the best");
  ob_status st = OB_OK;
  for (int r = 0; r < rounds && !st; r++) {
    st = confirm_round(L, b, r, r ? keep : NULL);
    for (int i = 0; i < b->n && !st; i++)
      if (r == 0 || (!keep[i].error_no && (b->res[i].error_no || b->res[i].timing.median_s < keep[i].timing.median_s)))
        keep[i] = b->res[i];
  }
  if (!st) memcpy(b->res, keep, (size_t)b->n * sizeof *keep);
  free(keep);
  return st;
}

static ob_status confirm(loop *L, batch *b) {
  ob_tune_stats *s = L->stats;
  const ob_tune_opts *o = L->o;
  int top = o->confirm_top == 0 ? OB_TUNE_CONFIRM_TOP : o->confirm_top;
  if (top <= 0 || s->best_trial == 0) return OB_OK;
  /* Confirmed before and nothing new since: keep that verdict (unless
   * asked to confirm again: records taken on a loaded machine). */
  if (L->db && s->measured == 0 && !o->reconfirm) {
    ob_db_confirmed c;
    ob_status st = ob_db_get_confirmed(L->db, &L->key, &c);
    if (st == OB_OK && ob_space_is_valid(ob_task_space(L->task), c.config_index)) {
      ob_space_get(L->ctx, ob_task_space(L->task), c.config_index, &s->confirmed_cfg);
      memset(&s->confirmed_result, 0, sizeof s->confirmed_result);
      s->confirmed_result.timing.median_s = c.median_s;
      s->confirmed_result.timing.mean_s = c.mean_s;
      s->confirmed_result.timing.cv = c.cv;
      s->confirmed_result.gflops = c.median_s > 0 ? L->flops / c.median_s / 1e9 : 0;
      s->confirm_candidates = c.candidates;
      s->confirmed = true;
      return OB_OK;
    }
    if (st != OB_OK && st != OB_ERR_NOT_FOUND) return st;
    ob_ctx_clear_error(L->ctx);
  }
  trial *sorted = malloc((size_t)L->ntrials * sizeof *sorted);
  if (!sorted) return ob_fail(L->ctx, OB_ERR_NOMEM, "out of memory confirming the best");
  memcpy(sorted, L->trials, (size_t)L->ntrials * sizeof *sorted);
  qsort(sorted, (size_t)L->ntrials, sizeof *sorted, cmp_trial_desc);
  batch_clear(b);
  bool have_dflt = false;
  for (int i = 0; i < L->ntrials && b->n < top && b->n < L->alloc - 1; i++) {
    if (sorted[i].gflops <= 0) break;
    bool dup = false;
    for (int j = 0; j < b->n; j++) dup = dup || b->cfg[j].index == sorted[i].index;
    if (!dup) ob_space_get(L->ctx, ob_task_space(L->task), sorted[i].index, &b->cfg[b->n++]);
    have_dflt |= sorted[i].index == L->dflt.index;
  }
  /* the default beside the best trials, if it ran correctly: the slot
   * after them is kept free for it */
  for (int i = 0; i < L->ntrials && !have_dflt; i++)
    if (L->trials[i].index == L->dflt.index && L->trials[i].gflops > 0) {
      b->cfg[b->n++] = L->dflt;
      have_dflt = true;
    }
  s->default_confirmed = have_dflt;
  free(sorted);
  ob_status st = confirm_measure(L, b);
  if (st) return st;
  int best = -1;
  for (int i = 0; i < b->n; i++)
    if (b->res[i].error_no == 0 &&
        (best < 0 || b->res[i].timing.median_s < b->res[best].timing.median_s))
      best = i;
  s->confirm_candidates = b->n;
  if (best < 0) {
    ob_log(L->ctx, OB_LOG_WARN,
           "tune %s: none of the %d best configs ran correctly when re-measured (first: %.200s)",
           L->wl_key, b->n, b->n ? b->res[0].message : "");
    return OB_OK;
  }
  /* The full-protocol numbers replace the trials' (the trials stay in the
   * history table). */
  for (int i = 0; i < b->n && !st; i++)
    if (b->res[i].error_no == 0) st = store(L, &b->cfg[i], &b->res[i], OB_DB_REPLACE);
  if (!st && L->db) {
    ob_db_confirmed c = {
        .config_index = b->cfg[best].index,
        .median_s = b->res[best].timing.median_s,
        .mean_s = b->res[best].timing.mean_s,
        .cv = b->res[best].timing.cv,
        .candidates = b->n,
    };
    st = ob_db_put_confirmed(L->db, &L->key, &c);
  }
  if (st) return st;
  s->confirmed = true;
  s->confirmed_cfg = b->cfg[best];
  s->confirmed_result = b->res[best];
  return OB_OK;
}

/* ---- the AutoTVM log ------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static bool sorted_has(const uint64_t *v, size_t n, uint64_t x) {
  return n && bsearch(&x, v, n, sizeof *v, cmp_u64) != NULL;
}

static uint64_t line_hash(const char *s, size_t n) { return ob_hash64(s, n, 0x6c6f67); }

/* Hashes of the lines of the log (sorted); a missing log has none, and
 * neither has a stream (a pipe, /dev/stdout, a device): it cannot be read
 * back, only appended to. A regular log is read within the reader's limits. */
static ob_status file_line_hashes(ob_ctx *ctx, const char *path, uint64_t **out, size_t *n,
                                  bool *ends_nl, bool *empty) {
  *out = NULL;
  *n = 0;
  *ends_nl = true;
  *empty = true;
  ob_file_kind kind;
  ob_status st = ob_file_kind_of(ctx, path, &kind);
  if (st || kind == OB_FILE_MISSING || kind == OB_FILE_STREAM) return st;
  ob_lines *in = NULL;
  if ((st = ob_lines_open(ctx, path, "log", NULL, &in))) return st;
  char *line;
  size_t l, cap = 0;
  uint64_t *v = NULL;
  for (;;) {
    st = ob_lines_next(in, &line, &l);
    if (st == OB_ERR_PARSE) { /* over the line limit: no exported line is that long */
      ob_ctx_clear_error(ctx);
      *empty = false;
      continue;
    }
    if (st || !line) break;
    *empty = false;
    if (*n == cap) {
      cap = cap ? cap * 2 : 1024;
      uint64_t *nv = realloc(v, cap * sizeof *nv);
      if (!nv) {
        st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory reading log '%s'", path);
        break;
      }
      v = nv;
    }
    v[(*n)++] = line_hash(line, l);
  }
  ob_lines_close(in);
  if (st) {
    ob_fail_prefix(ctx, "reading the log to append to");
    free(v);
    *n = 0;
    return st;
  }
  /* whether the last line ended in '\n': the reader strips it, so look */
  struct stat sb;
  FILE *f = (*n && stat(path, &sb) == 0 && sb.st_size > 0) ? fopen(path, "r") : NULL;
  if (f) {
    if (fseeko(f, sb.st_size - 1, SEEK_SET) == 0) *ends_nl = fgetc(f) == '\n';
    fclose(f);
  }
  if (*n) qsort(v, *n, sizeof *v, cmp_u64);
  *out = v;
  return OB_OK;
}

/* fopen(path, "a") that fails (ENXIO) instead of waiting when the path is
 * a FIFO nobody reads. */
static FILE *open_append(const char *path) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) return NULL;
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "a");
  if (!f) close(fd);
  return f;
}

/* Refuses, before any trial is run, a --log that cannot be one: a
 * directory, a block device or socket, the database itself or one of its
 * SQLite side files (appending JSON to them would corrupt every record). */
static ob_status check_log(loop *L) {
  const char *path = L->o->log_path;
  if (!path) return OB_OK;
  if (!*path) return ob_fail(L->ctx, OB_ERR_INVALID_ARG, "--log: empty file name");
  ob_file_kind kind;
  ob_status st = ob_file_kind_of(L->ctx, path, &kind);
  if (st) return st;
  if (kind == OB_FILE_DIR || kind == OB_FILE_OTHER)
    return ob_fail(L->ctx, OB_ERR_INVALID_ARG, "--log '%s': it is a %s, not a file to append to",
                   path, ob_file_kind_name(kind));
  if (L->db) {
    static const char *const k_sfx[] = {"", "-wal", "-shm", "-journal"};
    const char *dbp = ob_db_path(L->db);
    for (size_t i = 0; i < sizeof k_sfx / sizeof k_sfx[0]; i++) {
      char side[4096];
      snprintf(side, sizeof side, "%s%s", dbp, k_sfx[i]);
      if (ob_same_file(path, side))
        return ob_fail(L->ctx, OB_ERR_INVALID_ARG,
                       "--log '%s' is the database file '%s'; appending to it would destroy it",
                       path, side);
    }
  }
  /* A pipe is opened now, and kept: a FIFO nobody reads is an error before
   * the run rather than after it (and probing it by opening and closing
   * would hand its reader an end of file). */
  if (kind == OB_FILE_STREAM && !(L->log_stream = open_append(path)))
    return ob_fail(L->ctx, OB_ERR_IO, "cannot write log '%s': %s", path,
                   errno == ENXIO ? "no process reads that pipe" : strerror(errno));
  return OB_OK;
}

static ob_status entity_of(void *user, const ob_db_record *rec, char **json) {
  loop *L = user;
  ob_config c;
  *json = NULL;
  if (ob_space_get(NULL, ob_task_space(L->task), rec->config_index, &c) != OB_OK) return OB_OK;
  return ob_config_to_json(L->ctx, &c, json);
}

/* Appends the AutoTVM lines of the task's records that the log does not
 * hold yet (a line exported twice is the same text), so a run killed
 * before it wrote its log is made up for by the run that resumes it. */
static ob_status append_log(loop *L) {
  const char *path = L->o->log_path;
  char tmp[] = "/tmp/opbench-log-XXXXXX";
  int fd = mkstemp(tmp);
  if (fd < 0) return ob_fail(L->ctx, OB_ERR_IO, "cannot create a temporary file: %s", strerror(errno));
  close(fd);
  uint64_t *have = NULL;
  size_t nhave = 0;
  bool ends_nl, empty;
  FILE *in = NULL, *out = NULL;
  char *line = NULL;
  size_t lcap = 0;
  ob_db_filter f = {.key = L->key, .order = OB_DB_ORDER_TIME};
  ob_status st =
      ob_db_export_autotvm(L->db, &f, tmp, ob_op_autotvm_map(), NULL, entity_of, L, NULL);
  if (!st) st = file_line_hashes(L->ctx, path, &have, &nhave, &ends_nl, &empty);
  if (st) goto done;
  if (L->log_stream) { /* a pipe or device: written as it is, kept open */
    out = L->log_stream;
    L->log_stream = NULL;
  }
  if (!(in = fopen(tmp, "r")) || !(out || (out = open_append(path)))) {
    st = errno == ENXIO ? ob_fail(L->ctx, OB_ERR_IO, "cannot write log '%s': no process reads that pipe", path)
                        : ob_fail(L->ctx, OB_ERR_IO, "cannot open log '%s': %s", in ? path : tmp, strerror(errno));
    goto done;
  }
  if (!ends_nl && !empty) fputc('\n', out); /* a line cut by a kill stays on its own */
  ssize_t len;
  while ((len = getline(&line, &lcap, in)) > 0) {
    size_t l = (size_t)len - (line[len - 1] == '\n');
    if (sorted_has(have, nhave, line_hash(line, l))) continue;
    fwrite(line, 1, l, out);
    fputc('\n', out);
    L->stats->log_lines++;
  }
  if (fflush(out) != 0 || ferror(out))
    st = ob_fail(L->ctx, OB_ERR_IO, "writing log '%s': %s", path, strerror(errno));
done:
  if (in) fclose(in);
  if (out && fclose(out) != 0 && !st)
    st = ob_fail(L->ctx, OB_ERR_IO, "writing log '%s': %s", path, strerror(errno));
  unlink(tmp);
  free(line);
  free(have);
  return st;
}

/* ---- ob_tune_task ------------------------------------------------------------------------ */

static ob_status setup_keys(loop *L) {
  const ob_tune_opts *o = L->o;
  ob_workload_key(ob_task_workload(L->task), L->wl_key, sizeof L->wl_key);
  cores_text(&o->measure, L->cores_text, sizeof L->cores_text);
  if (o->resources) snprintf(L->resources, sizeof L->resources, "%s", o->resources);
  else if (L->measurer) ob_measurer_resources(L->measurer, &o->measure, L->resources, sizeof L->resources);
  else ob_tune_resources(&o->measure, L->resources, sizeof L->resources);
  ob_host h;
  const ob_host *hp = o->host;
  char cc[128] = "", ccver[128] = "";
  bool asked = false; /* the measurer named the host and its compiler */
  if (!hp && L->db) {
    ob_status st = L->measurer ? ob_measurer_host(L->measurer, L->ctx, L->task, &h, cc, sizeof cc,
                                                  ccver, sizeof ccver)
                               : ob_host_detect(L->ctx, &h);
    if (st) return st;
    hp = &h;
    asked = L->measurer != NULL;
  }
  snprintf(L->host, sizeof L->host, "%s", hp ? hp->fingerprint : "unknown");
  L->key = (ob_db_key){.host = L->host,
                       .workload = L->wl_key,
                       .target = o->target ? o->target : ob_target_str(ob_task_target(L->task)),
                       .resources = L->resources,
                       .tmpl = ob_task_template(L->task)};
  if (!L->db) return OB_OK;
  /* the host row records the compiler the trials are built with; a missing
   * compiler is left to the builder to report per batch */
  ob_build_opts bo = o->measure.build;
  bo.target = ob_task_target(L->task);
  bool have_cc = asked ? cc[0] != '\0'
                       : L->local && !L->gpu &&
                             ob_build_compiler(L->ctx, &bo, cc, sizeof cc, ccver, sizeof ccver) == OB_OK;
  if (L->gpu && L->local) { /* GPU kernels: NVRTC, or the OpenCL device's own compiler */
    const ob_target_facts *tf = ob_target_get_facts(ob_task_target(L->task));
    have_cc = true;
    snprintf(cc, sizeof cc, "%s", tf->kind == OB_TARGET_CUDA ? "nvrtc" : "opencl");
    if (tf->kind == OB_TARGET_CUDA) ob_gpu_nvrtc_version(ccver, sizeof ccver);
    else snprintf(ccver, sizeof ccver, "%.60s: %.60s", tf->gpu.platform_name, tf->gpu.device_name);
  }
  ob_ctx_clear_error(L->ctx);
  ob_status st = ob_db_put_host(L->db, hp, have_cc ? cc : NULL, have_cc ? ccver : NULL);
  if (!st) st = ob_workload_store(L->db, ob_task_workload(L->task));
  return st;
}

/* One build worker per allowed core. Without a free core there is no
 * overlap: each batch is built on every core, then measured. */
static ob_status setup_pool(loop *L) {
  const ob_tune_opts *o = L->o;
  bpool *p = &L->pool;
  cpu_set_t allowed, fr;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) == 0)
    CPU_SET(0, &allowed);
  int nfree = free_cores(&o->measure, &fr);
  int n = CPU_COUNT(&allowed);
  p->w = calloc((size_t)n, sizeof *p->w);
  if (!p->w) return ob_fail(L->ctx, OB_ERR_NOMEM, "out of memory");
  p->bopts = o->measure.build;
  p->bopts.jobs = 1;
  p->bopts.target = ob_task_target(L->task); /* the code is generated for it */
  p->overlap = !o->no_overlap && nfree > 0;
  for (int c = 0; c < CPU_SETSIZE && p->nw < n; c++) {
    if (!CPU_ISSET(c, &allowed)) continue;
    bworker *w = &p->w[p->nw++];
    w->pool = p;
    w->core = c;
    w->on_meas = !CPU_ISSET(c, &fr);
    ob_status st = ob_ctx_new(&w->ctx);
    if (st) return ob_fail(L->ctx, st, "out of memory");
    st = ob_task_new(w->ctx, ob_task_workload(L->task), ob_task_template(L->task),
                     ob_task_target(L->task), &w->task);
    if (st) return ob_fail(L->ctx, st, "%s", ob_ctx_errmsg(w->ctx));
  }
  ob_log(L->ctx, OB_LOG_INFO, "tune %s: %d build worker(s); %s", L->wl_key, p->nw,
         p->overlap ? "builds overlap measurement on the free cores"
                    : "no free core: each batch is built, then measured");
  return OB_OK;
}

ob_status ob_tune_task(ob_ctx *ctx, struct ob_task *task, ob_tuner *tuner, ob_measurer *measurer,
                       struct ob_db *db, const ob_tune_opts *opts, ob_tune_stats *stats) {
  OB_ASSERT(task && tuner && opts && stats);
  memset(stats, 0, sizeof *stats);
  if (opts->n_trial < 1)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "a trial budget of %d: tuning needs at least 1 trial",
                   opts->n_trial);
  if (!measurer && !opts->measure_fn)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "tuning needs a measurer (or a measure_fn)");
  if (!opts->measure_fn) {
    ob_status cs = ob_measurer_check(measurer, ctx, task);
    if (cs) return cs;
  }
  loop L;
  memset(&L, 0, sizeof L);
  L.ctx = ctx;
  L.task = task;
  L.tuner = tuner;
  L.measurer = measurer;
  L.runner = measurer && !opts->measure_fn ? ob_measurer_runner(measurer) : NULL;
  L.local = L.runner != NULL;
  L.db = db;
  L.o = opts;
  L.stats = stats;
  L.t0 = ob_now_s();
  L.flops = ob_task_flops(task);
  L.gpu = ob_target_is_gpu(ob_task_target(task));
  L.trial_mo = opts->measure;
  int rep = opts->search_repeat > 0 ? opts->search_repeat : 3;
  if (opts->measure.timing.repeat > 0 && rep > opts->measure.timing.repeat)
    rep = opts->measure.timing.repeat;
  L.trial_mo.timing.repeat = rep;
  /* A trial is a ranking, not a verdict: the number stays calibrated to the
   * floor (or as given), so tiny kernels are not ranked by noise, but the
   * stability rule is left to the confirmation, which re-measures the best
   * configs with the full protocol; a noisy trial would cost more repeats
   * for every config of the search. */
  L.trial_mo.timing.max_cv = 0;
  L.batch_cap = opts->batch > 0 ? opts->batch : OB_TUNE_DEFAULT_BATCH;
  if (L.batch_cap > OB_TUNE_MAX_BATCH) L.batch_cap = OB_TUNE_MAX_BATCH;
  int cap = L.batch_cap > OB_TUNE_CONFIRM_TOP ? L.batch_cap : OB_TUNE_CONFIRM_TOP;
  if (opts->confirm_top > cap) cap = opts->confirm_top;
  cap++; /* the confirmation's slot for the default */
  if (cap > OB_TUNE_MAX_BATCH) cap = OB_TUNE_MAX_BATCH;
  L.alloc = cap;
  batch bufs[2];
  memset(bufs, 0, sizeof bufs);
  ob_status st = OB_OK;
  if (!batch_alloc(&bufs[0], cap) || !batch_alloc(&bufs[1], cap)) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  if ((st = check_log(&L))) goto done;
  if ((st = setup_keys(&L))) goto done;
  if (L.local && !L.gpu && (st = setup_pool(&L))) goto done;
  if (db && !opts->remeasure && (st = resume(&L))) goto done;
  L.dflt = ob_task_default_config(task);
  L.seed[0] = L.dflt;
  L.nseed = 1 + ob_task_block_variants(task, &L.dflt, L.seed + 1, OB_TASK_BLOCK_VARIANTS_MAX);
  for (int k = 0; k < L.nseed; k++) {
    L.seed_pending[k] = true;
    for (int i = 0; i < L.ntrials && L.seed_pending[k]; i++) L.seed_pending[k] = L.trials[i].index != L.seed[k].index;
  }
  if (stats->resumed) report(&L, false);
  /* which tuner the trials from now on come from (the report's tuning curves) */
  if (db && (st = ob_db_begin_tuning_run(db, &L.key, ob_tuner_name(tuner), &L.run_id))) goto done;

  batch *cur = &bufs[0], *next = &bufs[1];
  if ((st = propose(&L, cur, 0))) goto done;
  if ((st = build_now(&L, cur))) goto done;
  while (cur->n > 0) {
    /* batch k+1 builds while batch k is measured */
    if ((st = propose(&L, next, cur->n))) goto done;
    bool bg = L.local && L.pool.overlap && next->n > 0;
    if (bg && (st = pool_start(ctx, &L.pool, next, false))) goto done;
    st = measure_batch(&L, cur);
    ob_status js = bg ? pool_finish(ctx, &L.pool, &stats->wait_s) : OB_OK;
    if (!st) st = js;
    if (st) goto done;
    report(&L, false);
    if (opts->early_stopping > 0 && stats->trials - stats->best_trial >= opts->early_stopping &&
        stats->trials < opts->n_trial) {
      stats->early_stopped = true;
      break;
    }
    if (L.stop || stats->trials >= opts->n_trial) break;
    if (next->n == 0 && (st = propose(&L, next, 0))) goto done; /* the tuner waited for results */
    if (!bg && (st = build_now(&L, next))) goto done;
    batch *t = cur;
    cur = next;
    next = t;
  }
  stats->stopped = L.stop;
  stats->exhausted = !L.stop && !stats->early_stopped && stats->trials < opts->n_trial &&
                     !ob_tuner_has_next(tuner);
  if ((st = confirm(&L, &bufs[0]))) goto done;
  if (db && opts->log_path && (st = append_log(&L))) goto done;

done:
  stats->seconds = ob_now_s() - L.t0;
  if (!st && L.run_id) st = ob_db_end_tuning_run(db, L.run_id, stats->measured);
  if (!st) report(&L, true);
  batch_free(&bufs[0]);
  batch_free(&bufs[1]);
  pool_free(&L.pool);
  free(L.trials);
  if (L.log_stream) fclose(L.log_stream);
  return st;
}
