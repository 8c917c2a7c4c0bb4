/* fleet.c (bench_fleet): the device fleet's throughput, dispatch overhead
 * and fault tolerance, against a real Redis broker it starts on loopback
 * (redis-server with an ACL user and an append-only file) and real
 * workers (`opbench worker`, the CLI next to this program or
 * $OPBENCH_BIN). A program, not a test.
 *
 * 1. Throughput: the same tuning job (conv2d, random tuner, --trials,
 *    batches of 16, no confirmation) through the fleet with one worker and
 *    with two, each worker held to one core of its own (--cores), builds
 *    included (a fresh kernel cache for every run, so every config is
 *    compiled by the worker). Runs alternate 1, 2, 1, 2, ... (--reps each);
 *    trials per second are medians. Target: two workers >= 1.7x one.
 * 2. Dispatch overhead per job: single-config batches, one at a time,
 *    through one worker: round trip (sent -> result read) minus the
 *    worker's time on the job (task, build, run, check). Target: median
 *    <= 5 ms.
 * 3. Fault run: a --fault-trials (200) tuning job with three workers; every
 *    --kill-every (20) s one worker is killed with SIGKILL (and a new one
 *    started in its place), and once the broker is killed with SIGKILL and
 *    restarted from its append-only file. Checks that every trial of the
 *    budget completes, none twice (the tuning loop's trials and the
 *    broker's double-measured count), none lost (the database holds the
 *    budget's configs).
 * Prints the table and the figures, the ratio line last.
 * Each worker runs in a session of its own (setsid), as a worker daemon
 * does: under the kernel's autogroup scheduling a session's processes share
 * one CPU share, which would make workers started from this program's
 * session compete with each other on a loaded machine.
 * --quick: 32 trials, 1 rep, a 60-trial fault run killing every 5 s. */
#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opbench/db.h"
#include "opbench/fleet.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

typedef struct bench {
  char dir[200], opbench[PATH_MAX], keyfile[300], url[256], conf[300], password[64];
  char fault_conf[300], fault_url[256];
  int fault_port;
  int port;
  int ncpu;
  pid_t broker;
} bench;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench_fleet: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static bool have(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

static pid_t start_broker(const char *dir, const char *conf) {
  fflush(stdout);
  pid_t p = fork();
  if (p < 0) die("fork: %s", strerror(errno));
  if (p == 0) {
    char log[320];
    snprintf(log, sizeof log, "%s/redis.out", dir);
    if (!freopen(log, "a", stdout)) _exit(127);
    execlp("redis-server", "redis-server", conf, (char *)NULL);
    _exit(127);
  }
  return p;
}

static bool broker_up(const char *url, double within_s) {
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx)) return false;
  ob_ctx_set_log_level(ctx, OB_LOG_ERROR);
  double until = ob_now_s() + within_s;
  bool up = false;
  while (!up && ob_now_s() < until) {
    ob_fleet_status *s = NULL;
    up = ob_fleet_status_get(ctx, url, &s) == OB_OK;
    ob_fleet_status_free(s);
    if (!up) sleep_s(0.05);
  }
  ob_ctx_free(ctx);
  return up;
}

static void setup(bench *b) {
  b->ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(b->dir, sizeof b->dir, "/tmp/opbench-bench-fleet-XXXXXX");
  if (!mkdtemp(b->dir)) die("mkdtemp: %s", strerror(errno));
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) die("cannot find this program's folder");
  self[n] = '\0';
  const char *env = getenv("OPBENCH_BIN");
  if (env && *env) snprintf(b->opbench, sizeof b->opbench, "%s", env);
  else snprintf(b->opbench, sizeof b->opbench, "%s/opbench", dirname(self));
  if (access(b->opbench, X_OK) != 0) die("no opbench CLI at %s (set $OPBENCH_BIN)", b->opbench);
  snprintf(b->keyfile, sizeof b->keyfile, "%s/fleet.key", b->dir);
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx) || ob_fleet_key_generate(ctx, b->keyfile)) die("cannot write the fleet key");
  ob_ctx_free(ctx);
  unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
  b->port = 20000 + (int)(rand_r(&seed) % 30000);
  snprintf(b->password, sizeof b->password, "pw%08x%08x", rand_r(&seed), rand_r(&seed));
  b->fault_port = b->port == 49999 ? 20000 : b->port + 1;
  /* Throughput and dispatch: the append-only file synced every second,
   * Redis's production default. The fault run's broker (its own, in a
   * folder of its own) syncs every write: killed -9, it keeps every
   * acknowledged write. */
  for (int k = 0; k < 2; k++) {
    char *conf = k ? b->fault_conf : b->conf, sub[256];
    snprintf(sub, sizeof sub, "%s/%s", b->dir, k ? "fault-broker" : "broker");
    if (mkdir(sub, 0700) != 0) die("%s: %s", sub, strerror(errno));
    snprintf(conf, sizeof b->conf, "%s/redis.conf", sub);
    FILE *f = fopen(conf, "w");
    if (!f) die("%s: %s", conf, strerror(errno));
    fprintf(f,
            "bind 127.0.0.1\nport %d\ndir %s\nsave \"\"\nappendonly yes\nappendfsync %s\n"
            "protected-mode yes\nuser default off\nuser opbench on >%s ~* &* +@all\n",
            k ? b->fault_port : b->port, sub, k ? "always" : "everysec", b->password);
    fclose(f);
  }
  snprintf(b->url, sizeof b->url, "redis://opbench:%s@127.0.0.1:%d", b->password, b->port);
  snprintf(b->fault_url, sizeof b->fault_url, "redis://opbench:%s@127.0.0.1:%d", b->password, b->fault_port);
  b->broker = start_broker(b->dir, b->conf);
  if (!broker_up(b->url, 10)) die("redis-server did not start on port %d (see %s/redis.out)", b->port, b->dir);
}

static void stop_pid(pid_t p, int sig) {
  if (p <= 0) return;
  kill(p, sig);
  waitpid(p, NULL, 0);
}

/* A worker on one core with its own kernel cache. */
static pid_t start_worker(const bench *b, const char *key, int core, const char *cache, int idx) {
  fflush(stdout);
  pid_t p = fork();
  if (p < 0) die("fork: %s", strerror(errno));
  if (p == 0) {
    char log[400], cores[16];
    snprintf(log, sizeof log, "%s/worker-%s-%d.log", b->dir, key, idx);
    snprintf(cores, sizeof cores, "%d", core);
    setenv("OPBENCH_CACHE", cache, 1);
    /* A worker is a daemon of its own (a device of the fleet), not a
     * process of this program's terminal session: with the kernel's
     * autogroup scheduling on, the processes of one session share one CPU
     * share, so workers left in this session would split one share however
     * many cores they are given. */
    setsid();
    if (!freopen(log, "a", stderr) || !freopen("/dev/null", "w", stdout)) _exit(127);
    execl(b->opbench, "opbench", "worker", "--broker", b->url, "--device-key", key, "--fleet-key", b->keyfile,
          "--cores", cores, "--claim-timeout", "3", (char *)NULL);
    _exit(127);
  }
  return p;
}

static int alive_of(const bench *b, const char *key) {
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx)) return -1;
  ob_fleet_status *s = NULL;
  int n = -1;
  if (ob_fleet_status_get(ctx, b->url, &s) == OB_OK) {
    n = 0;
    for (int i = 0; i < s->nkeys; i++)
      if (!strcmp(s->keys[i].key, key)) n = s->keys[i].nalive;
  }
  ob_fleet_status_free(s);
  ob_ctx_free(ctx);
  return n;
}

static void wait_alive(const bench *b, const char *key, int n) {
  for (int i = 0; i < 200; i++) {
    if (alive_of(b, key) >= n) return;
    sleep_s(0.05);
  }
  die("the workers of %s did not register (see %s)", key, b->dir);
}

static int64_t double_measured(const bench *b) {
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx)) return -1;
  ob_fleet_status *s = NULL;
  int64_t v = -1;
  if (ob_fleet_status_get(ctx, b->url, &s) == OB_OK) v = s->double_measured;
  ob_fleet_status_free(s);
  ob_ctx_free(ctx);
  return v;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static ob_task *make_task(ob_ctx *ctx) {
  ob_workload wl;
  ob_task *t = NULL;
  if (ob_workload_parse(ctx, "conv2d", "N=1,C=32,H=14,W=14,K=32,R=3,S=3", &wl) ||
      ob_workload_set(ctx, &wl, "pad", 1) || ob_workload_validate(ctx, &wl) || ob_task_new(ctx, &wl, NULL, NULL, &t))
    die("task: %s", ob_ctx_errmsg(ctx));
  return t;
}

static ob_fleet_client *client(ob_ctx *ctx, const bench *b, const char *key) {
  ob_fleet_key k;
  if (ob_fleet_key_load(ctx, b->keyfile, &k)) die("key: %s", ob_ctx_errmsg(ctx));
  ob_fleet_client_opts o = {.broker = b->url, .device_key = key, .key = &k, .reconnect_s = 120};
  ob_fleet_client *c = NULL;
  if (ob_fleet_client_new(ctx, &o, &c)) die("client: %s", ob_ctx_errmsg(ctx));
  return c;
}

/* Trials of the tuning loop: every config once. */
typedef struct trials {
  uint64_t *idx;
  int n, cap, dup, failed;
} trials;
static bool on_trial(void *user, int trial, const ob_config *cfg, const ob_measure_result *res, bool resumed) {
  (void)trial;
  (void)resumed;
  trials *t = user;
  for (int i = 0; i < t->n; i++)
    if (t->idx[i] == cfg->index) t->dup++;
  if (t->n < t->cap) t->idx[t->n++] = cfg->index;
  if (res->error_no) t->failed++;
  return true;
}

/* One tuning run through nworkers workers (cores 0..n-1); trials per second. */
static double throughput(const bench *b, int nworkers, int ntrials, int rep) {
  char key[64], cache[400];
  snprintf(key, sizeof key, "tp%d-r%d", nworkers, rep);
  snprintf(cache, sizeof cache, "%s/cache-%s", b->dir, key);
  pid_t w[2];
  for (int i = 0; i < nworkers; i++) w[i] = start_worker(b, key, i % b->ncpu, cache, i);
  wait_alive(b, key, nworkers);
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx)) die("out of memory");
  ob_task *task = make_task(ctx);
  ob_tuner *tuner = NULL;
  ob_tuner_opts to = {.seed = (uint64_t)rep + 1};
  if (ob_tuner_new(ctx, "random", task, &to, &tuner)) die("tuner: %s", ob_ctx_errmsg(ctx));
  ob_fleet_client *c = client(ctx, b, key);
  ob_tune_opts o = ob_tune_opts_default();
  o.n_trial = ntrials;
  o.batch = 16;
  o.confirm_top = -1;
  ob_tune_stats s;
  if (ob_tune_task(ctx, task, tuner, ob_fleet_client_measurer(c), NULL, &o, &s)) die("tune: %s", ob_ctx_errmsg(ctx));
  double tps = s.measured / s.seconds;
  ob_fleet_client_free(c);
  ob_tuner_free(tuner);
  ob_task_free(task);
  ob_ctx_free(ctx);
  for (int i = 0; i < nworkers; i++) stop_pid(w[i], SIGTERM);
  nftw(cache, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  return tps;
}

/* Single-config batches through one worker: round trip minus the worker's time. */
static void dispatch(const bench *b, int njobs, double *ovh_ms, double *rtt_ms, double *work_ms) {
  const char *key = "dispatch";
  char cache[400];
  snprintf(cache, sizeof cache, "%s/cache-dispatch", b->dir);
  pid_t w = start_worker(b, key, 0, cache, 0);
  wait_alive(b, key, 1);
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx)) die("out of memory");
  ob_task *task = make_task(ctx);
  ob_fleet_client *c = client(ctx, b, key);
  ob_measurer *m = ob_fleet_client_measurer(c);
  if (ob_measurer_check(m, ctx, task)) die("check: %s", ob_ctx_errmsg(ctx));
  ob_measure_opts mo = ob_measure_opts_default();
  mo.timing.repeat = 3;
  ob_config cfg = ob_task_default_config(task);
  ob_measure_result r;
  double *o = calloc((size_t)njobs, sizeof *o), *rt = calloc((size_t)njobs, sizeof *rt),
         *wk = calloc((size_t)njobs, sizeof *wk);
  if (!o || !rt || !wk) die("out of memory");
  if (ob_measurer_measure(m, ctx, task, &mo, &cfg, 1, &r)) die("measure: %s", ob_ctx_errmsg(ctx)); /* builds once */
  ob_fleet_client_stats st0;
  ob_fleet_client_get_stats(c, &st0);
  for (int i = 0; i < njobs; i++)
    if (ob_measurer_measure(m, ctx, task, &mo, &cfg, 1, &r)) die("measure: %s", ob_ctx_errmsg(ctx));
  ob_fleet_client_stats *st = malloc(sizeof *st);
  if (!st) die("out of memory");
  ob_fleet_client_get_stats(c, st);
  int n = 0;
  for (int i = st0.nrtt; i < st->nrtt && n < njobs; i++, n++) {
    int k = i % OB_FLEET_RTT_KEEP;
    rt[n] = st->rtt_s[k] * 1e3;
    wk[n] = st->work_s[k] * 1e3;
    o[n] = rt[n] - wk[n];
  }
  *ovh_ms = median(o, n);
  *rtt_ms = median(rt, n);
  *work_ms = median(wk, n);
  free(st);
  free(o);
  free(rt);
  free(wk);
  ob_fleet_client_free(c);
  ob_task_free(task);
  ob_ctx_free(ctx);
  stop_pid(w, SIGTERM);
}

/* The fault run's chaos: a child process that owns the three workers,
 * kills one every kill_every seconds (starting another in its place) and
 * kills and restarts the broker once. Stops (killing its workers) on
 * SIGTERM. Reports kills through its exit status. */
static volatile sig_atomic_t g_chaos_stop;
static void on_term(int sig) {
  (void)sig;
  g_chaos_stop = 1;
}

static pid_t chaos(bench *b, const char *key, double kill_every, pid_t broker) {
  fflush(stdout);
  pid_t p = fork();
  if (p < 0) die("fork: %s", strerror(errno));
  if (p) return p;
  signal(SIGTERM, on_term);
  char cache[400];
  snprintf(cache, sizeof cache, "%s/cache-fault", b->dir);
  pid_t w[3];
  int idx = 0;
  for (int i = 0; i < 3; i++) w[i] = start_worker(b, key, i % b->ncpu, cache, idx++);
  double t0 = ob_now_s(), next = t0 + kill_every, broker_at = t0 + kill_every * 1.5;
  char sf[400];
  snprintf(sf, sizeof sf, "%s/chaos.txt", b->dir);
  bool restarted = false;
  int kills = 0;
  FILE *log = fopen("/dev/stderr", "w");
  while (!g_chaos_stop) {
    sleep_s(0.05);
    double now = ob_now_s();
    if (!restarted && now >= broker_at) {
      kill(broker, SIGKILL);
      waitpid(broker, NULL, 0);
      if (log) fprintf(log, "  [fault] %5.1f s: broker killed -9; restarting it from its append-only file\n", now - t0);
      sleep_s(0.5);
      broker = start_broker(b->dir, b->fault_conf);
      restarted = true;
    }
    if (now >= next) {
      int v = kills % 3;
      kill(w[v], SIGKILL);
      waitpid(w[v], NULL, 0);
      kills++;
      if (log) fprintf(log, "  [fault] %5.1f s: worker %d killed -9 (kill %d); a new one started\n", now - t0, v, kills);
      w[v] = start_worker(b, key, v % b->ncpu, cache, idx++);
      next += kill_every;
    }
    /* reap whatever else ended */
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
  }
  for (int i = 0; i < 3; i++) stop_pid(w[i], SIGKILL);
  /* the broker stays: the parent reads its counters and stops it; a
   * restarted one is our child, so hand its pid over in a file */
  char pf[400];
  snprintf(pf, sizeof pf, "%s/broker.pid", b->dir);
  FILE *f = fopen(pf, "w");
  if (f) {
    fprintf(f, "%ld\n", (long)broker);
    fclose(f);
  }
  if ((f = fopen(sf, "w"))) {
    fprintf(f, "%d %d\n", kills, restarted ? 1 : 0);
    fclose(f);
  }
  if (log) fclose(log);
  _exit(0);
}

int main(int argc, char **argv) {
  bool quick = false;
  int ntrials = 96, reps = 3, fault_trials = 200, dispatch_jobs = 50;
  double kill_every = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      quick = true;
      ntrials = 32;
      reps = 1;
      fault_trials = 60;
      kill_every = 5;
      dispatch_jobs = 20;
    } else if (!strcmp(argv[i], "--trials") && i + 1 < argc) ntrials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fault-trials") && i + 1 < argc) fault_trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--kill-every") && i + 1 < argc) kill_every = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_fleet [--quick] [--trials N] [--reps R] [--fault-trials N] [--kill-every S]\n");
      return 2;
    }
  }
  if (ntrials < 16 || reps < 1 || fault_trials < 16 || !(kill_every > 1)) die("bad flags");
  if (!have("redis-server")) {
    printf("bench_fleet: redis-server is not installed (scripts/install-deps.sh installs it)\n");
    return 77;
  }
  bench b = {0};
  setup(&b);
  printf("bench_fleet: broker redis://opbench:***@127.0.0.1:%d (append-only file synced every second; the fault "
         "run's broker syncs every write), %d cores%s\n",
         b.port, b.ncpu, quick ? ", --quick" : "");
  if (b.ncpu < 2) printf("note: one core only: the two workers share it, the throughput ratio cannot reach 2\n");

  /* 1. throughput, alternating */
  double *t1 = calloc((size_t)reps, sizeof *t1), *t2 = calloc((size_t)reps, sizeof *t2);
  if (!t1 || !t2) die("out of memory");
  printf("\n%-28s %8s %8s %10s\n", "run (conv2d 32x14x14, 3x3)", "workers", "trials", "trials/s");
  for (int r = 0; r < reps; r++) {
    t1[r] = throughput(&b, 1, ntrials, r);
    printf("%-28s %8d %8d %10.2f\n", "tune --fleet, random", 1, ntrials, t1[r]);
    fflush(stdout);
    t2[r] = throughput(&b, 2, ntrials, r);
    printf("%-28s %8d %8d %10.2f\n", "tune --fleet, random", 2, ntrials, t2[r]);
    fflush(stdout);
  }
  double m1 = median(t1, reps), m2 = median(t2, reps);

  /* 2. dispatch overhead */
  double ovh, rtt, work;
  dispatch(&b, dispatch_jobs, &ovh, &rtt, &work);

  /* 3. the fault run */
  printf("\nfault run: %d trials, 3 workers, one killed -9 every %.0f s, the broker killed -9 and restarted once\n",
         fault_trials, kill_every);
  fflush(stdout);
  const char *fkey = "fault";
  char dbpath[400];
  snprintf(dbpath, sizeof dbpath, "%s/fault.db", b.dir);
  /* its own broker; the throughput broker stops */
  stop_pid(b.broker, SIGTERM);
  snprintf(b.url, sizeof b.url, "%s", b.fault_url);
  pid_t fb = start_broker(b.dir, b.fault_conf);
  if (!broker_up(b.url, 10)) die("the fault run's redis-server did not start on port %d", b.fault_port);
  pid_t ch = chaos(&b, fkey, kill_every, fb);
  wait_alive(&b, fkey, 3);
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx)) die("out of memory");
  ob_task *task = make_task(ctx);
  ob_tuner *tuner = NULL;
  ob_tuner_opts to = {.seed = 7};
  if (ob_tuner_new(ctx, "random", task, &to, &tuner)) die("tuner: %s", ob_ctx_errmsg(ctx));
  ob_db *db = NULL;
  if (ob_db_open(ctx, dbpath, 0, &db)) die("db: %s", ob_ctx_errmsg(ctx));
  ob_fleet_client *c = client(ctx, &b, fkey);
  trials tr = {.cap = fault_trials * 2};
  tr.idx = calloc((size_t)tr.cap, sizeof *tr.idx);
  if (!tr.idx) die("out of memory");
  ob_tune_opts o = ob_tune_opts_default();
  o.n_trial = fault_trials;
  o.batch = 16;
  o.confirm_top = -1;
  o.trial_fn = on_trial;
  o.user = &tr;
  ob_tune_stats s;
  ob_status st = ob_tune_task(ctx, task, tuner, ob_fleet_client_measurer(c), db, &o, &s);
  if (st) printf("fault run: the tuning run failed: %s\n", ob_ctx_errmsg(ctx));
  ob_fleet_client_stats cs;
  ob_fleet_client_get_stats(c, &cs);
  int64_t twice = double_measured(&b);
  kill(ch, SIGTERM);
  waitpid(ch, NULL, 0);
  waitpid(fb, NULL, WNOHANG);
  int kills = -1, restarts = -1;
  {
    char sf[400];
    snprintf(sf, sizeof sf, "%s/chaos.txt", b.dir);
    FILE *f = fopen(sf, "r");
    if (!f || fscanf(f, "%d %d", &kills, &restarts) != 2) kills = restarts = -1;
    if (f) fclose(f);
  }
  /* the db holds each config of the budget once */
  int64_t nstored = -1;
  {
    ob_host h;
    char cc[128], ver[128], res[256], wk[256];
    ob_measure_opts mo = o.measure;
    ob_measurer *m = ob_fleet_client_measurer(c);
    if (ob_measurer_host(m, ctx, task, &h, cc, sizeof cc, ver, sizeof ver) == OB_OK) {
      ob_measurer_resources(m, &mo, res, sizeof res);
      ob_workload_key(ob_task_workload(task), wk, sizeof wk);
      ob_db_key k = {.host = h.fingerprint, .workload = wk, .target = ob_target_str(ob_task_target(task)),
                     .resources = res, .tmpl = ob_task_template(task)};
      uint64_t *ids = NULL;
      if (ob_db_measured(db, &k, &ids, &nstored) != OB_OK) nstored = -1;
      free(ids);
    }
  }
  ob_fleet_client_free(c);
  ob_db_close(db);
  ob_tuner_free(tuner);
  ob_task_free(task);
  ob_ctx_free(ctx);
  {
    char pf[400];
    snprintf(pf, sizeof pf, "%s/broker.pid", b.dir);
    FILE *f = fopen(pf, "r");
    long bp = 0;
    if (f && fscanf(f, "%ld", &bp) == 1 && bp > 0) kill((pid_t)bp, SIGTERM);
    if (f) fclose(f);
    sleep_s(0.3);
  }
  bool fault_ok = restarts == 1 && kills >= 1 && !st && s.trials == fault_trials && s.measured == fault_trials && tr.dup == 0 &&
                  tr.n == fault_trials && twice == 0 && nstored == fault_trials;

  printf("\n%-44s %s\n", "figure", "value");
  printf("%-44s %.2f\n", "trials/s, one worker (median)", m1);
  printf("%-44s %.2f\n", "trials/s, two workers (median)", m2);
  printf("%-44s %.2f ms (round trip %.2f ms, worker %.2f ms; %d jobs)\n", "dispatch overhead per job (median)", ovh,
         rtt, work, dispatch_jobs);
  printf("%-44s %d of %d (%d failed trials)\n", "fault run: trials completed", s.trials, fault_trials, tr.failed);
  printf("%-44s %lld in the db for %d trials\n", "fault run: configs stored", (long long)nstored, fault_trials);
  printf("%-44s %d (loop), %lld (broker)\n", "fault run: measured twice", tr.dup, (long long)twice);
  printf("%-44s %d worker kills, %d broker restart, %lld jobs resent, %lld reconnects\n", "fault run: faults",
         kills, restarts, (long long)cs.resent, (long long)cs.reconnects);
  printf("%-44s %s\n", "fault run", fault_ok ? "every trial completed once, none lost" : "FAILED");
  printf("dispatch overhead median %.2f ms (target <= 5 ms): %s\n", ovh, ovh <= 5 ? "met" : "NOT met");
  printf("ratio trials/s two workers / one: %.2fx (target >= 1.7x): %s\n", m2 / m1, m2 / m1 >= 1.7 ? "met" : "NOT met");
  nftw(b.dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
  free(t1);
  free(t2);
  free(tr.idx);
  return fault_ok ? 0 : 1;
}
