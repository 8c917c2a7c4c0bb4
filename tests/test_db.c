/* test_db.c: the record store. Round trips of every query, the resume set,
 * key uniqueness and remeasure, concurrent writers (two processes), a
 * writer killed with SIGKILL, a garbage file, a newer schema, a locked
 * database, AutoTVM import with broken lines, export/import round trips and
 * CSV. Files live in a temporary directory under /tmp, removed at the end.
 *
 * `test_db --backend postgresql` runs the same tests against the
 * PostgreSQL back end: each store is a schema of a database of its own
 * (made on the server of tests/servers, whose URL the file named by
 * $OB_TEST_SERVERS_ENV gives, and dropped at the end). What only a file can
 * be (garbage bytes, a truncated file, a version-1 file) stays SQLite's; a
 * newer schema, a foreign store and a locked one are checked on both. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "check.h"
#include "opbench/db.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static char dir[64];
static bool pg;            /* --backend postgresql */
static char pg_url[1024];  /* the test database's URL, without a search_path */
static char pg_dbname[64];
static PGconn *pg_admin;   /* makes the schemas */

#define TARGET "llvm -mcpu=native"
#define RES "threads=1;cores=0"
#define HOST "00112233aabbccdd"

static const char *path_in(const char *name) {
  static char buf[8][256];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 256, "%s/%s", dir, name);
  return p;
}

/* The store named `name`: a file in dir, or a schema of the test database
 * (made on first use). */
static const char *db_in(const char *name) {
  if (!pg) return path_in(name);
  static char buf[8][1200];
  static int k;
  char *p = buf[k++ % 8], schema[64];
  snprintf(schema, sizeof schema, "%s", name);
  for (char *c = schema; *c; c++)
    if (*c == '.') *c = '_';
  char sql[160];
  snprintf(sql, sizeof sql, "CREATE SCHEMA IF NOT EXISTS %s", schema);
  PGresult *r = PQexec(pg_admin, sql);
  OB_ASSERT(PQresultStatus(r) == PGRES_COMMAND_OK);
  PQclear(r);
  snprintf(p, 1200, "%s?options=-csearch_path%%3D%s", pg_url, schema);
  return p;
}

/* What messages about store `name` contain. */
static const char *db_label(const char *name) {
  if (!pg) return path_in(name);
  static char buf[4][64];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 64, "%s", name);
  for (char *c = p; *c; c++)
    if (*c == '.') *c = '_';
  return p;
}

static bool msg_has(const char *part) {
  bool ok = strstr(ob_ctx_errmsg(ctx), part) != NULL;
  if (!ok) fprintf(stderr, "  message '%s' lacks '%s'\n", ob_ctx_errmsg(ctx), part);
  return ok;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  fclose(f);
  b[got] = '\0';
  if (len) *len = got;
  return b;
}

static void write_all(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "wb");
  OB_ASSERT(f);
  fwrite(text, 1, len, f);
  fclose(f);
}

static ob_db *open_db(const char *name) {
  ob_db *db = NULL;
  ob_status st = ob_db_open(ctx, db_in(name), 0, &db);
  CHECK_MSG(st == OB_OK, "open %s: %s", name, ob_ctx_errmsg(ctx));
  return db;
}

/* A trial whose costs have median `m`. */
typedef struct trial {
  ob_db_record r;
} trial;

static void make_trial(trial *t, const char *wl, const char *tmpl, uint64_t idx, double m) {
  memset(t, 0, sizeof *t);
  t->r = (ob_db_record){.host = HOST, .workload = wl, .target = TARGET, .resources = RES,
                        .tmpl = tmpl, .config_index = idx, .error_no = 0,
                        .timing = {.median_s = m, .mean_s = m * 1.01, .cv = 0.02, .ncosts = 3,
                                   .costs = {m * 1.1, m, m * 0.95}, .number = 4, .repeat = 3,
                                   .min_repeat_ms = 1.0, .timer_overhead_s = 2e-8},
                        .build_s = 0.25, .run_s = 0.05, .nthreads = 1,
                        .cores = "0", .timestamp = 1700000000.0 + (double)idx};
}

static int64_t count_records(ob_db *db, const char *wl) {
  ob_db_records *r = NULL;
  ob_db_filter f = {.key.workload = wl};
  if (ob_db_query(db, &f, &r) != OB_OK) return -1;
  int64_t n = r->n;
  ob_db_records_free(r);
  return n;
}

static ob_db_key task_key(const char *wl, const char *tmpl) {
  return (ob_db_key){.host = HOST, .workload = wl, .target = TARGET, .resources = RES, .tmpl = tmpl};
}

static void conv_key(char *key, size_t cap, const char *shape, const char *epi) {
  ob_workload wl;
  OB_ASSERT(ob_workload_parse(ctx, "conv2d", shape, &wl) == OB_OK);
  if (epi) OB_ASSERT(ob_workload_set_epilogue(ctx, &wl, epi) == OB_OK);
  ob_workload_key(&wl, key, cap);
}

/* ---- open / hosts / workloads ---------------------------------------------------------- */

static void test_open(void) {
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, db_in("missing.db"), OB_DB_READONLY, &db) == OB_ERR_NOT_FOUND && !db);
  CHECK(msg_has(db_label("missing.db")));
  CHECK(ob_db_open(ctx, db_in("missing.db"), OB_DB_NO_CREATE, &db) == OB_ERR_NOT_FOUND);
  CHECK(ob_db_open(ctx, "", 0, &db) == OB_ERR_INVALID_ARG);
  db = open_db("open.db");
  if (pg) { /* the URL, with its password hidden */
    char *shown = ob_db_url_redact(db_in("open.db"));
    CHECK(db && shown && !strcmp(ob_db_path(db), shown) && strstr(shown, ":***@") &&
          !strcmp(ob_db_backend_name(db), "postgresql"));
    free(shown);
  } else {
    CHECK(db && !strcmp(ob_db_path(db), path_in("open.db")) &&
          !strcmp(ob_db_backend_name(db), "sqlite"));
  }
  CHECK(ob_db_check(db) == OB_OK);
  ob_db_close(db);
  ob_db_close(NULL);
  /* Reopening finds the schema; read-only opening works too. */
  db = open_db("open.db");
  ob_db_close(db);
  db = NULL;
  CHECK(ob_db_open(ctx, db_in("open.db"), OB_DB_READONLY, &db) == OB_OK);
  trial t;
  make_trial(&t, "dense/f32/M1N2K3", "dense.x86", 0, 1e-3);
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_ERR_INVALID_ARG);
  ob_db_close(db);
}

static void test_hosts(void) {
  ob_db *db = open_db("hosts.db");
  ob_host h = {.ncores = 2, .npus = 4, .l1d_bytes = 32768, .l2_bytes = 1 << 20,
               .l3_bytes = 32 << 20, .vector_bits = 512};
  snprintf(h.cpu_model, sizeof h.cpu_model, "Test CPU @ 2.0GHz");
  snprintf(h.isa, sizeof h.isa, "avx2 fma avx512f");
  snprintf(h.os, sizeof h.os, "Linux 6.1");
  snprintf(h.fingerprint, sizeof h.fingerprint, HOST);
  CHECK(ob_db_put_host(db, &h, "gcc", "12.2.0") == OB_OK);
  ob_db_host got;
  CHECK(ob_db_get_host(db, HOST, &got) == OB_OK);
  CHECK(!strcmp(got.host.cpu_model, h.cpu_model) && !strcmp(got.host.isa, h.isa));
  CHECK(got.host.ncores == 2 && got.host.npus == 4 && got.host.l1d_bytes == 32768);
  CHECK(got.host.l2_bytes == 1 << 20 && got.host.l3_bytes == 32 << 20 && got.host.vector_bits == 512);
  CHECK(!strcmp(got.host.os, "Linux 6.1") && !strcmp(got.host.fingerprint, HOST));
  CHECK(!strcmp(got.compiler, "gcc") && !strcmp(got.compiler_version, "12.2.0"));
  CHECK(got.first_seen > 1e9 && got.last_seen >= got.first_seen);
  /* A refresh without compiler keeps the stored one and first_seen. */
  double first = got.first_seen;
  h.ncores = 3;
  CHECK(ob_db_put_host(db, &h, NULL, NULL) == OB_OK);
  CHECK(ob_db_get_host(db, HOST, &got) == OB_OK);
  CHECK(got.host.ncores == 3 && !strcmp(got.compiler, "gcc") && got.first_seen == first);
  CHECK(ob_db_get_host(db, "ffffffffffffffff", &got) == OB_ERR_NOT_FOUND);
  CHECK(msg_has("ffffffffffffffff"));
  ob_host none = {0};
  CHECK(ob_db_put_host(db, &none, NULL, NULL) == OB_ERR_INVALID_ARG);
  /* The detected host goes in too. */
  ob_host me;
  if (ob_host_detect(ctx, &me) == OB_OK) {
    CHECK(ob_db_put_host(db, &me, "cc", NULL) == OB_OK);
    CHECK(ob_db_get_host(db, me.fingerprint, &got) == OB_OK && got.host.npus == me.npus);
  }
  ob_db_close(db);
}

/* ---- measurements -------------------------------------------------------------------------- */

static void test_measurements(void) {
  ob_db *db = open_db("meas.db");
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", &wl) == OB_OK);
  char key[256];
  ob_workload_key(&wl, key, sizeof key);
  CHECK(ob_workload_store(db, &wl) == OB_OK);

  /* Configs 0..9 of conv2d_nchw.x86; config 3 fails; config 7 is fastest. */
  for (int i = 0; i < 10; i++) {
    trial t;
    make_trial(&t, key, "conv2d_nchw.x86", (uint64_t)(9 - i), 1e-3 * (1 + ((9 - i) * 7) % 10));
    char ent[96];
    snprintf(ent, sizeof ent, "{\"index\": %d, \"entity\": [[\"tile_ow\", \"sp\", [-1, %d]]]}", 9 - i,
             9 - i + 1);
    t.r.entity = ent;
    if (9 - i == 3) {
      t.r.error_no = OB_MERR_RUNTIME;
      t.r.error_msg = "SIGSEGV in kernel, at \"x\"";
      t.r.timing.median_s = t.r.timing.mean_s = t.r.timing.cv = NAN;
      t.r.timing.ncosts = 0;
    }
    bool stored = false;
    CHECK(ob_db_put_measurement(db, &t.r, 0, &stored) == OB_OK && stored);
  }
  /* medians: idx*7%10+1 ms -> idx 7 has 1 ms (9*7=63 -> 4, 7*7=49 -> 10...) */
  double want_best = INFINITY;
  uint64_t want_idx = 0;
  for (uint64_t i = 0; i < 10; i++) {
    double m = 1e-3 * (double)(1 + (i * 7) % 10);
    if (i != 3 && m < want_best) {
      want_best = m;
      want_idx = i;
    }
  }
  /* A second template and another resource setting. */
  trial t;
  make_trial(&t, key, "conv2d_other.x86", 0, want_best / 2);
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  make_trial(&t, key, "conv2d_nchw.x86", 100, want_best / 4);
  t.r.resources = "threads=2;cores=0,1";
  t.r.nthreads = 2;
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);

  /* Uniqueness: the same key is not stored twice... */
  make_trial(&t, key, "conv2d_nchw.x86", 5, 9.0);
  bool stored = true;
  CHECK(ob_db_put_measurement(db, &t.r, 0, &stored) == OB_OK && !stored);
  CHECK(count_records(db, key) == 12);
  /* ...unless remeasured. */
  make_trial(&t, key, "conv2d_nchw.x86", 5, 0.5e-3);
  CHECK(ob_db_put_measurement(db, &t.r, OB_DB_REPLACE, &stored) == OB_OK && stored);
  CHECK(count_records(db, key) == 12);

  ob_db_key k = task_key(key, "conv2d_nchw.x86");
  bool has = false;
  CHECK(ob_db_has_measurement(db, &k, 3, &has) == OB_OK && has);
  CHECK(ob_db_has_measurement(db, &k, 10, &has) == OB_OK && !has);
  CHECK(ob_db_has_measurement(db, &k, 100, &has) == OB_OK && !has); /* other resources */
  ob_db_key partial = k;
  partial.target = NULL;
  CHECK(ob_db_has_measurement(db, &partial, 3, &has) == OB_ERR_INVALID_ARG);

  /* Resume set: sorted, errors included, only this task's key. */
  uint64_t *idx = NULL;
  int64_t n = 0;
  CHECK(ob_db_measured(db, &k, &idx, &n) == OB_OK && n == 10);
  for (int64_t i = 0; i < n; i++) CHECK(idx[i] == (uint64_t)i);
  free(idx);
  ob_db_key other = task_key("dense/f32/M1N1K1", "dense.x86");
  CHECK(ob_db_measured(db, &other, &idx, &n) == OB_OK && n == 0 && !idx);

  /* Best: the remeasured config 5 (0.5 ms) wins within the template. */
  ob_db_records *r = NULL;
  CHECK(ob_db_best(db, &k, &r) == OB_OK && r && r->n == 1);
  if (r && r->n == 1) {
    CHECK(r->rec[0].config_index == 5 && fabs(r->rec[0].timing.median_s - 0.5e-3) < 1e-15);
    CHECK(r->rec[0].gflops > 0 && fabs(r->rec[0].gflops - ob_workload_flops(&wl) / 0.5e-3 / 1e9) < 1e-6);
    CHECK(!strcmp(r->rec[0].op, "conv2d") && r->rec[0].flops == ob_workload_flops(&wl));
  }
  ob_db_records_free(r);
  /* Any template: conv2d_other.x86 (want_best / 2) is faster than 0.5 ms? */
  ob_db_key anyt = k;
  anyt.tmpl = NULL;
  CHECK(ob_db_best(db, &anyt, &r) == OB_OK);
  double fastest = fmin(0.5e-3, want_best / 2);
  if (r) CHECK(fabs(r->rec[0].timing.median_s - fastest) < 1e-15);
  ob_db_records_free(r);
  (void)want_idx;
  /* Any resources too: the 2-thread trial. */
  anyt.resources = NULL;
  CHECK(ob_db_best(db, &anyt, &r) == OB_OK);
  if (r) CHECK(r->rec[0].config_index == 100 && r->rec[0].nthreads == 2);
  ob_db_records_free(r);
  ob_db_key nothing = task_key("dense/f32/M9N9K9", NULL);
  r = (ob_db_records *)1;
  CHECK(ob_db_best(db, &nothing, &r) == OB_ERR_NOT_FOUND && r == NULL);
  CHECK(msg_has("dense/f32/M9N9K9"));

  /* Top-k: ascending medians, error-free only. */
  CHECK(ob_db_top_k(db, &k, 4, &r) == OB_OK && r->n == 4);
  for (int64_t i = 1; r && i < r->n; i++) CHECK(r->rec[i - 1].timing.median_s <= r->rec[i].timing.median_s);
  for (int64_t i = 0; r && i < r->n; i++) CHECK(r->rec[i].error_no == 0);
  ob_db_records_free(r);
  CHECK(ob_db_top_k(db, &k, 100, &r) == OB_OK && r->n == 9);
  ob_db_records_free(r);
  CHECK(ob_db_top_k(db, &k, 0, &r) == OB_ERR_INVALID_ARG);

  /* All records of the workload: every field back. */
  CHECK(ob_db_workload_records(db, key, &r) == OB_OK && r->n == 12);
  int seen_err = 0;
  for (int64_t i = 0; r && i < r->n; i++) {
    const ob_db_record *x = &r->rec[i];
    CHECK(!strcmp(x->host, HOST) && !strcmp(x->workload, key) && !strcmp(x->target, TARGET));
    CHECK(x->attrs && strstr(x->attrs, "\"C\":64"));
    if (strcmp(x->tmpl, "conv2d_nchw.x86") || x->config_index >= 10) continue;
    char want[64];
    snprintf(want, sizeof want, "[[\"tile_ow\",\"sp\",[-1,%d]]]", (int)x->config_index + 1);
    CHECK_MSG(x->entity && !strcmp(x->entity, want), "entity %s", x->entity ? x->entity : "(null)");
    if (x->config_index == 3) {
      seen_err++;
      CHECK(x->error_no == OB_MERR_RUNTIME && !strcmp(x->error_msg, "SIGSEGV in kernel, at \"x\""));
      CHECK(isnan(x->timing.median_s) && x->timing.ncosts == 0 && x->gflops == 0);
    } else if (x->config_index != 5) {
      double m = 1e-3 * (double)(1 + (x->config_index * 7) % 10);
      CHECK(x->timing.median_s == m && x->timing.mean_s == m * 1.01 && x->timing.cv == 0.02);
      CHECK(x->timing.ncosts == 3 && x->timing.costs[0] == m * 1.1 && x->timing.costs[1] == m && x->timing.costs[2] == m * 0.95);
      CHECK(x->timing.number == 4 && x->build_s == 0.25 && x->run_s == 0.05 && x->nthreads == 1);
      CHECK(!strcmp(x->cores, "0") && x->timestamp == 1700000000.0 + (double)x->config_index);
    }
  }
  CHECK(seen_err == 1);
  /* Ordered by key: template, then config index. */
  for (int64_t i = 1; r && i < r->n; i++) {
    int c = strcmp(r->rec[i - 1].tmpl, r->rec[i].tmpl);
    CHECK(c < 0 || (c == 0 && r->rec[i - 1].config_index <= r->rec[i].config_index));
  }
  ob_db_records_free(r);

  /* Filters: by operator, ok only, limit, time order. */
  ob_db_filter f = {.op = "conv2d", .ok_only = true};
  CHECK(ob_db_query(db, &f, &r) == OB_OK && r->n == 11);
  ob_db_records_free(r);
  f = (ob_db_filter){.op = "dense"};
  CHECK(ob_db_query(db, &f, &r) == OB_OK && r->n == 0);
  ob_db_records_free(r);
  f = (ob_db_filter){.order = OB_DB_ORDER_TIME, .limit = 3};
  CHECK(ob_db_query(db, &f, &r) == OB_OK && r->n == 3);
  for (int64_t i = 1; r && i < r->n; i++) CHECK(r->rec[i - 1].timestamp <= r->rec[i].timestamp);
  ob_db_records_free(r);

  /* Malformed records are refused with the record named. */
  make_trial(&t, key, "conv2d_nchw.x86", 50, 1e-3);
  t.r.host = "";
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_ERR_INVALID_ARG && msg_has("host fingerprint"));
  make_trial(&t, key, "conv2d_nchw.x86", 50, 0);
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_ERR_INVALID_ARG && msg_has("config 50"));
  make_trial(&t, key, "conv2d_nchw.x86", 50, 1e-3);
  t.r.entity = "[[\"tile\", ";
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_ERR_PARSE && msg_has("entity"));
  CHECK(count_records(db, key) == 12);

  /* From a measurement result. */
  ob_measure_result mr = {.error_no = 0,
                          .timing = {.median_s = 2e-3, .mean_s = 2.1e-3, .cv = 0.05, .ncosts = 2,
                                     .costs = {2e-3, 2.2e-3}, .number = 7, .repeat = 2},
                          .build_s = 0.3, .run_s = 0.1};
  snprintf(mr.message, sizeof mr.message, "%s", "");
  ob_db_record rec = {.host = HOST, .workload = key, .target = TARGET, .resources = RES,
                      .tmpl = "conv2d_nchw.x86", .config_index = 42};
  ob_measure_result_to_record(&mr, &rec);
  CHECK(ob_db_put_measurement(db, &rec, 0, &stored) == OB_OK && stored);
  CHECK(ob_db_has_measurement(db, &k, 42, &has) == OB_OK && has);
  /* its protocol comes along; a failed one timed nothing: protocol unknown */
  ob_measure_result bad = {.error_no = OB_MERR_RUNTIME, .run_s = 0.2};
  snprintf(bad.message, sizeof bad.message, "kernel crashed: SIGSEGV");
  {
    ob_db *mdb = open_db("mr.db"); /* apart: the counts below are of db */
    CHECK(ob_db_put_measurement(mdb, &rec, 0, NULL) == OB_OK);
    rec.config_index = 43;
    ob_measure_result_to_record(&bad, &rec);
    CHECK(ob_db_put_measurement(mdb, &rec, 0, &stored) == OB_OK && stored);
    ob_db_records *rr = NULL;
    ob_db_filter fk = {.key = k};
    CHECK(ob_db_query(mdb, &fk, &rr) == OB_OK && rr);
    int seen = 0;
    for (int64_t i = 0; rr && i < rr->n; i++) {
      const ob_db_record *x = &rr->rec[i];
      if (x->config_index == 42) {
        seen++;
        CHECK(x->timing.number == 7 && x->timing.repeat == 2 && x->timing.min_repeat_ms == 0);
      } else if (x->config_index == 43) {
        seen++;
        CHECK(x->error_no == OB_MERR_RUNTIME && isnan(x->timing.min_repeat_ms) && x->timing.number == 0);
      }
    }
    CHECK(seen == 2);
    ob_db_records_free(rr);
    ob_db_close(mdb);
  }

  /* Stats per workload, per operator, per error class. */
  trial d;
  make_trial(&d, "dense/f32/M1N1000K512", "dense.x86", 1, 1e-4);
  CHECK(ob_db_put_measurement(db, &d.r, 0, NULL) == OB_OK);
  make_trial(&d, "dense/f32/M1N1000K512", "dense.x86", 2, 1e-4);
  d.r.error_no = OB_MERR_WRONG_ANSWER;
  CHECK(ob_db_put_measurement(db, &d.r, 0, NULL) == OB_OK);
  d.r.error_no = 42; /* an unknown class counts as UNKNOWN */
  d.r.config_index = 3;
  CHECK(ob_db_put_measurement(db, &d.r, 0, NULL) == OB_OK);
  ob_db_stats *s = NULL;
  CHECK(ob_db_stats_get(db, NULL, &s) == OB_OK && s);
  if (s) {
    CHECK(s->nworkloads == 2 && s->nops == 2);
    CHECK(s->total.total == 16 && s->total.nworkloads == 2);
    CHECK(s->total.by_error[0] == 13 && s->total.by_error[OB_MERR_RUNTIME] == 1);
    CHECK(s->total.by_error[OB_MERR_WRONG_ANSWER] == 1 && s->total.by_error[OB_MERR_UNKNOWN] == 1);
    /* sorted by operator: conv2d, then dense */
    CHECK(!strcmp(s->by_op[0].name, "conv2d") && s->by_op[0].total == 13);
    CHECK(!strcmp(s->by_op[1].name, "dense") && s->by_op[1].total == 3);
    CHECK(!strcmp(s->workloads[0].name, key) && s->workloads[0].best_s == want_best / 4);
    CHECK(s->workloads[0].best_gflops > 0 && s->workloads[1].best_gflops == 0);
    CHECK(s->nhosts == 1 && s->nconfigs == 10 && s->nreplaced == 1);
  }
  ob_db_stats_free(s);
  ob_db_filter fd = {.op = "dense"};
  CHECK(ob_db_stats_get(db, &fd, &s) == OB_OK && s->nworkloads == 1 && s->total.total == 3);
  ob_db_stats_free(s);

  /* CSV: a header and one line per record; quoting keeps fields intact. */
  int64_t rows = 0;
  CHECK(ob_db_export_csv(db, NULL, path_in("meas.csv"), &rows) == OB_OK && rows == 16);
  char *csv = read_all(path_in("meas.csv"), NULL);
  int lines = 0;
  for (char *p = csv; p && *p; p++) lines += *p == '\n';
  CHECK(lines == 17);
  CHECK(csv && !strncmp(csv, "host,workload,op,target,resources,template,config_index,", 56));
  CHECK(csv && strstr(csv, "\"SIGSEGV in kernel, at \"\"x\"\"\""));
  char cls[64];
  snprintf(cls, sizeof cls, ",%d,%s,", OB_MERR_RUNTIME, ob_merr_str(OB_MERR_RUNTIME));
  CHECK(csv && strstr(csv, cls));
  free(csv);
  CHECK(ob_db_export_csv(db, NULL, path_in("no/such/dir/x.csv"), &rows) == OB_ERR_IO);
  CHECK(access(path_in("meas.csv"), F_OK) == 0);
  ob_db_close(db);
}

/* ---- robustness ------------------------------------------------------------------------------ */

static void test_garbage(void) {
  char junk[8192];
  uint64_t x = 12345;
  for (size_t i = 0; i < sizeof junk; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    junk[i] = (char)(x >> 56);
  }
  const char *p = path_in("garbage.db");
  write_all(p, junk, sizeof junk);
  ob_db *db = (ob_db *)1;
  CHECK(ob_db_open(ctx, p, 0, &db) == OB_ERR_IO && db == NULL);
  CHECK(msg_has(p) && msg_has("not a database"));
  size_t len = 0;
  char *back = read_all(p, &len);
  CHECK(back && len == sizeof junk && !memcmp(back, junk, sizeof junk));
  free(back);
  char wal[300];
  snprintf(wal, sizeof wal, "%s-wal", p);
  CHECK(access(wal, F_OK) != 0);
  /* A text file is no better. */
  p = path_in("text.db");
  write_all(p, "hello, I am not a database\n", 27);
  CHECK(ob_db_open(ctx, p, 0, &db) == OB_ERR_IO);
  back = read_all(p, &len);
  CHECK(back && len == 27 && !memcmp(back, "hello, I am not a database\n", 27));
  free(back);
  /* A truncated database: its header survives, its pages do not. */
  ob_db *good = open_db("trunc.db");
  trial t;
  for (int i = 0; i < 200; i++) {
    make_trial(&t, "dense/f32/M1N1K1", "dense.x86", (uint64_t)i, 1e-3);
    ob_db_put_measurement(good, &t.r, 0, NULL);
  }
  ob_db_close(good);
  back = read_all(path_in("trunc.db"), &len);
  CHECK(len > 8192);
  write_all(path_in("trunc.db"), back, len / 2);
  free(back);
  db = NULL;
  ob_status st = ob_db_open(ctx, path_in("trunc.db"), 0, &db);
  if (st == OB_OK) { /* the damage shows on the first full read */
    CHECK(ob_db_check(db) == OB_ERR_IO && msg_has("trunc.db"));
    ob_db_close(db);
  } else {
    CHECK(st == OB_ERR_IO && msg_has("trunc.db"));
  }
}

static void test_newer_schema(void) {
  ob_db *db = open_db("newer.db");
  CHECK(ob_db_exec(db, "UPDATE meta SET value = '999' WHERE key = 'schema_version'") == OB_OK);
  ob_db_close(db);
  size_t len0 = 0, len1 = 0;
  char *before = pg ? NULL : read_all(path_in("newer.db"), &len0);
  db = (ob_db *)1;
  CHECK(ob_db_open(ctx, db_in("newer.db"), 0, &db) == OB_ERR_UNSUPPORTED && db == NULL);
  char upto[64];
  snprintf(upto, sizeof upto, "understands up to %d", OB_DB_SCHEMA_VERSION);
  CHECK(msg_has(db_label("newer.db")) && msg_has("schema version 999") && msg_has(upto));
  if (!pg) {
    char *after = read_all(path_in("newer.db"), &len1);
    CHECK(before && after && len0 == len1 && !memcmp(before, after, len0));
    free(after);
  }
  free(before);
  /* An SQLite file that is not opbench's is refused, not adopted. */
  db = open_db("foreign.db");
  CHECK(ob_db_exec(db, "DROP TABLE meta") == OB_OK);
  ob_db_close(db);
  CHECK(ob_db_open(ctx, db_in("foreign.db"), 0, &db) == OB_ERR_UNSUPPORTED);
  CHECK(msg_has(pg ? "not an opbench store" : "not an opbench database"));
}

static void test_locked(void) {
  ob_db *a = open_db("locked.db");
  trial t;
  make_trial(&t, "dense/f32/M1N1K1", "dense.x86", 0, 1e-3);
  CHECK(ob_db_put_measurement(a, &t.r, 0, NULL) == OB_OK);
  /* PostgreSQL's BEGIN locks nothing: a writer's table lock stands in */
  const char *lock = pg ? "BEGIN; LOCK TABLE measurements IN EXCLUSIVE MODE" : "BEGIN EXCLUSIVE";
  CHECK(ob_db_exec(a, lock) == OB_OK);
  ob_db *b = NULL;
  ob_db_open_opts o = {.busy_timeout_ms = 150};
  CHECK(ob_db_open_ex(ctx, db_in("locked.db"), &o, &b) == OB_OK);
  if (b) {
    /* Readers are not blocked under WAL. */
    CHECK(count_records(b, "dense/f32/M1N1K1") == 1);
    make_trial(&t, "dense/f32/M1N1K1", "dense.x86", 1, 1e-3);
    double t0 = ob_now_s();
    CHECK(ob_db_put_measurement(b, &t.r, 0, NULL) == OB_ERR_BUSY);
    double waited = ob_now_s() - t0;
    /* SQLite sleeps until the 150 ms are spent, then gives up: at least
     * that long, and clearly less than the default it replaced (the upper
     * bound leaves room for a loaded machine). */
    CHECK_MSG(waited >= 0.1 && waited < 0.8 * OB_DB_DEFAULT_BUSY_MS * 1e-3, "waited %.3f s", waited);
    CHECK(msg_has(db_label("locked.db")) && msg_has("locked"));
    CHECK(count_records(b, "dense/f32/M1N1K1") == 1);
    CHECK(ob_db_exec(a, "COMMIT") == OB_OK);
    CHECK(ob_db_put_measurement(b, &t.r, 0, NULL) == OB_OK);
    CHECK(count_records(a, "dense/f32/M1N1K1") == 2);
    /* The timeout can also be changed on an open handle. */
    CHECK(ob_db_exec(a, pg ? lock : "BEGIN IMMEDIATE") == OB_OK);
    ob_db_set_busy_timeout(b, 10);
    make_trial(&t, "dense/f32/M1N1K1", "dense.x86", 2, 1e-3);
    CHECK(ob_db_put_measurement(b, &t.r, 0, NULL) == OB_ERR_BUSY);
    CHECK(ob_db_exec(a, "ROLLBACK") == OB_OK);
  }
  /* Puts inside a caller's transaction nest as savepoints. */
  CHECK(ob_db_exec(a, "BEGIN IMMEDIATE") == OB_OK);
  for (int i = 10; i < 20; i++) {
    make_trial(&t, "dense/f32/M1N1K1", "dense.x86", (uint64_t)i, 1e-3);
    CHECK(ob_db_put_measurement(a, &t.r, 0, NULL) == OB_OK);
  }
  make_trial(&t, "dense/f32/M1N1K1", "dense.x86", 30, 0); /* refused, rolled back alone */
  CHECK(ob_db_put_measurement(a, &t.r, 0, NULL) == OB_ERR_INVALID_ARG);
  CHECK(ob_db_exec(a, "COMMIT") == OB_OK);
  CHECK(count_records(a, "dense/f32/M1N1K1") == 12);
  ob_db_close(b);
  ob_db_close(a);
}

/* Each child inserts 200 trials of its own configs, both at once. */
static void test_concurrent(void) {
  const char *p = db_in("concurrent.db");
  ob_db *db = open_db("concurrent.db");
  ob_db_close(db);
  int go[2];
  CHECK(pipe(go) == 0);
  pid_t kids[2];
  for (int c = 0; c < 2; c++) {
    kids[c] = fork();
    if (kids[c] == 0) {
      close(go[1]);
      char b;
      if (read(go[0], &b, 1) != 1) _exit(3);
      ob_ctx *cc = NULL;
      ob_ctx_new(&cc);
      ob_db *d = NULL;
      if (ob_db_open(cc, p, 0, &d) != OB_OK) _exit(2);
      int bad = 0;
      for (int i = 0; i < 200; i++) {
        trial t;
        make_trial(&t, "dense/f32/M8N8K8", "dense.x86", (uint64_t)(c * 1000 + i), 1e-3);
        bool stored = false;
        if (ob_db_put_measurement(d, &t.r, 0, &stored) != OB_OK || !stored) {
          fprintf(stderr, "child %d trial %d: %s\n", c, i, ob_ctx_errmsg(cc));
          bad++;
        }
      }
      ob_db_close(d);
      ob_ctx_free(cc);
      _exit(bad ? 1 : 0);
    }
  }
  close(go[0]);
  CHECK(write(go[1], "gg", 2) == 2);
  close(go[1]);
  for (int c = 0; c < 2; c++) {
    int status = 0;
    CHECK(waitpid(kids[c], &status, 0) == kids[c]);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status %d", c, status);
  }
  db = open_db("concurrent.db");
  CHECK(count_records(db, "dense/f32/M8N8K8") == 400);
  ob_db_key k = task_key("dense/f32/M8N8K8", "dense.x86");
  uint64_t *idx = NULL;
  int64_t n = 0;
  CHECK(ob_db_measured(db, &k, &idx, &n) == OB_OK && n == 400);
  for (int64_t i = 0; i < n; i++) CHECK(idx[i] == (uint64_t)(i < 200 ? i : 1000 + i - 200));
  free(idx);
  CHECK(ob_db_check(db) == OB_OK);
  ob_db_close(db);
}

/* A writer killed with SIGKILL mid-run loses at most the trial in flight. */
static void test_kill9(void) {
  const char *p = db_in("kill.db");
  ob_db *db = open_db("kill.db");
  ob_db_close(db);
  int fd[2];
  CHECK(pipe(fd) == 0);
  pid_t kid = fork();
  if (kid == 0) {
    close(fd[0]);
    ob_ctx *cc = NULL;
    ob_ctx_new(&cc);
    ob_db *d = NULL;
    if (ob_db_open(cc, p, 0, &d) != OB_OK) _exit(2);
    for (uint64_t i = 0;; i++) {
      trial t;
      make_trial(&t, "dense/f32/M4N4K4", "dense.x86", i, 1e-3 + 1e-6 * (double)i);
      char ent[64];
      snprintf(ent, sizeof ent, "[[\"k\",\"ot\",%llu]]", (unsigned long long)i);
      t.r.entity = ent;
      if (ob_db_put_measurement(d, &t.r, 0, NULL) != OB_OK) _exit(1);
      if (write(fd[1], &i, sizeof i) != sizeof i) _exit(1); /* committed */
    }
  }
  close(fd[1]);
  uint64_t last = 0, got = 0, v;
  /* Kill after 300 reported commits, however long they take: read blocks
   * until the child writes or dies. */
  while (got < 300 && read(fd[0], &v, sizeof v) == sizeof v) {
    last = v;
    got++;
  }
  kill(kid, SIGKILL);
  int status = 0;
  waitpid(kid, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  while (read(fd[0], &v, sizeof v) == sizeof v) { /* reported before dying */
    last = v;
    got++;
  }
  close(fd[0]);
  CHECK_MSG(got >= 300, "child committed only %llu trials", (unsigned long long)got);
  db = open_db("kill.db");
  CHECK(ob_db_check(db) == OB_OK);
  ob_db_key k = task_key("dense/f32/M4N4K4", "dense.x86");
  uint64_t *idx = NULL;
  int64_t n = 0;
  CHECK(ob_db_measured(db, &k, &idx, &n) == OB_OK);
  /* Every reported trial is there; at most the one in flight beyond. */
  CHECK_MSG((uint64_t)n == last + 1 || (uint64_t)n == last + 2, "n %lld, last reported %llu",
            (long long)n, (unsigned long long)last);
  for (int64_t i = 0; i < n; i++) CHECK(idx[i] == (uint64_t)i);
  free(idx);
  ob_db_records *r = NULL;
  CHECK(ob_db_workload_records(db, "dense/f32/M4N4K4", &r) == OB_OK && r->n == n);
  for (int64_t i = 0; r && i < r->n; i++) {
    char ent[64];
    snprintf(ent, sizeof ent, "[[\"k\",\"ot\",%lld]]", (long long)i);
    CHECK(r->rec[i].entity && !strcmp(r->rec[i].entity, ent));
    CHECK(r->rec[i].timing.ncosts == 3 && r->rec[i].timing.median_s == 1e-3 + 1e-6 * (double)i);
  }
  ob_db_records_free(r);
  /* And the file takes new writes. */
  trial t;
  make_trial(&t, "dense/f32/M4N4K4", "dense.x86", (uint64_t)n, 1e-3);
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  ob_db_close(db);
}

/* ---- AutoTVM logs ------------------------------------------------------------------------------ */

static const char *k_log =
    /* 1: conv2d_NCHWc, ResNet-18 layer */
    "{\"input\": [\"llvm -keys=cpu -mcpu=skylake-avx512 -num-threads=2\", \"conv2d_NCHWc.x86\", "
    "[[\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", [64, 64, 3, 3], \"float32\"], [1, 1], "
    "[1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", \"float32\"], {}], \"config\": {\"index\": 1234, "
    "\"code_hash\": null, \"entity\": [[\"tile_ic\", \"sp\", [-1, 16]], [\"tile_oc\", \"sp\", [-1, 16]], "
    "[\"tile_ow\", \"sp\", [-1, 8]], [\"unroll_kw\", \"ot\", true]]}, \"result\": [[0.00012, 0.00013, "
    "0.000125], 0, 1.5, 1600000000.5], \"version\": 0.2, \"tvm_version\": \"0.8.0\"}\n"
    /* 2: truncated */
    "{\"input\": [\"llvm\", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 64, 56\n"
    /* 3: blank */
    "   \n"
    /* 4: conv2d_nchw with the 6-argument form and (pad_h, pad_w), stride 2; an error */
    "{\"input\": [\"llvm\", \"conv2d_nchw.x86\", [[\"TENSOR\", [1, 3, 224, 224], \"float32\"], "
    "[\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, 2], [3, 3], [1, 1], \"float32\"], {}], "
    "\"config\": {\"index\": 7, \"code_hash\": null, \"entity\": [[\"tile_oc\", \"sp\", [-1, 8]]]}, "
    "\"result\": [[1000000000.0], 4, 2.0, 1600000001.0], \"version\": 0.2, \"tvm_version\": \"0.8.0\"}\n"
    /* 5: missing result */
    "{\"input\": [\"llvm\", \"dense_pack.x86\", [], {}], \"config\": {\"index\": 1, \"entity\": []}, "
    "\"version\": 0.2}\n"
    /* 6: dense_pack with bias */
    "{\"input\": [\"llvm\", \"dense_pack.x86\", [[\"TENSOR\", [1, 512], \"float32\"], [\"TENSOR\", "
    "[1000, 512], \"float32\"], [\"TENSOR\", [1000], \"float32\"], \"float32\"], {}], \"config\": "
    "{\"index\": 3, \"code_hash\": null, \"entity\": [[\"tile_y\", \"sp\", [-1, 1, 1]]]}, \"result\": "
    "[[2e-05, 2.2e-05], 0, 0.8, 1600000002.0], \"version\": 0.2, \"tvm_version\": \"0.8.0\"}\n"
    /* 7: wrong type: index is a string */
    "{\"input\": [\"llvm\", \"dense_nopack.x86\", [], {}], \"config\": {\"index\": \"7\", \"entity\": "
    "[]}, \"result\": [[1e-05], 0, 0.1, 1600000003.0], \"version\": 0.2}\n"
    /* 8: wrong type: error_no is a string */
    "{\"input\": [\"llvm\", \"dense_nopack.x86\", [], {}], \"config\": {\"index\": 7, \"entity\": []}, "
    "\"result\": [[1e-05], \"0\", 0.1, 1600000003.0], \"version\": 0.2}\n"
    /* 9: not JSON at all */
    "hello world\n"
    /* 10: depthwise: not an opbench operator, kept under its task key */
    "{\"input\": [\"llvm\", \"depthwise_conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 32, 112, 112], "
    "\"float32\"], [\"TENSOR\", [32, 1, 3, 3], \"float32\"], [1, 1], [1, 1, 1, 1], [1, 1], \"NCHW\", "
    "\"NCHW\", \"float32\"], {}], \"config\": {\"index\": 11, \"code_hash\": null, \"entity\": "
    "[[\"tile_ic\", \"sp\", [-1, 8]]]}, \"result\": [[3e-05], 0, 0.7, 1600000004.0], \"version\": "
    "0.2, \"tvm_version\": \"0.8.0\"}\n"
    /* 11: the same trial as line 1 again: a duplicate */
    "{\"input\": [\"llvm -keys=cpu -mcpu=skylake-avx512 -num-threads=2\", \"conv2d_NCHWc.x86\", "
    "[[\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", [64, 64, 3, 3], \"float32\"], [1, 1], "
    "[1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", \"float32\"], {}], \"config\": {\"index\": 1234, "
    "\"code_hash\": null, \"entity\": []}, \"result\": [[0.5], 0, 1.5, 1600000000.5], \"version\": "
    "0.2, \"tvm_version\": \"0.8.0\"}\n"
    /* 12: an error-free result with a cost that is not a number */
    "{\"input\": [\"llvm\", \"dense_nopack.x86\", [], {}], \"config\": {\"index\": 8, \"entity\": []}, "
    "\"result\": [[\"fast\"], 0, 0.1, 1600000003.0], \"version\": 0.2}\n"
    /* 13: version 0.1 */
    "{\"i\": [\"llvm\", \"x\"], \"r\": [[1e-05], 0, 0.1, 1.0], \"v\": 0.1}\n"
    /* 14: a JSON array */
    "[1, 2, 3]\n"
    /* 15: trailing text */
    "{\"input\": 1} trailing\n"
    /* 16: last line without a newline, an NCHW layout conv2d with int stride/padding */
    "{\"input\": [\"llvm\", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 128, 28, 28], \"float32\"], "
    "[\"TENSOR\", [256, 128, 1, 1], \"float32\"], 2, 0, 1, \"NCHW\", \"NCHW\", \"float32\"], {}], "
    "\"config\": {\"index\": 0, \"code_hash\": null, \"entity\": [[\"tile_ic\", \"sp\", [-1, 4]]]}, "
    "\"result\": [[7e-05, 6e-05, 8e-05], 0, 0.9, 1600000005.0], \"version\": 0.2, \"tvm_version\": "
    "\"0.8.0\"}";

static void test_autotvm_import(void) {
  write_all(path_in("log.json"), k_log, strlen(k_log));
  ob_db *db = open_db("import.db");
  /* Something stored before the import must survive it. */
  trial pre;
  make_trial(&pre, "dense/f32/M2N2K2", "dense.x86", 0, 1e-3);
  CHECK(ob_db_put_measurement(db, &pre.r, 0, NULL) == OB_OK);

  ob_db_import_opts o = {.host = HOST, .resources = "threads=2", .map = ob_op_autotvm_map()};
  ob_db_import_result res;
  ob_ctx_set_log_level(ctx, OB_LOG_ERROR); /* the summary warnings are expected */
  CHECK_MSG(ob_db_import_autotvm(db, path_in("log.json"), &o, &res) == OB_OK, "%s",
            ob_ctx_errmsg(ctx));
  CHECK_MSG(res.nlines == 15, "nlines %lld", (long long)res.nlines);
  CHECK_MSG(res.nimported == 5, "imported %lld", (long long)res.nimported);
  CHECK(res.nduplicate == 1 && res.nunmapped == 1);
  CHECK_MSG(res.nbroken == 9 && res.nbad == 9, "broken %lld", (long long)res.nbroken);
  static const int64_t want_bad[] = {2, 5, 7, 8, 9, 12, 13, 14, 15};
  for (int i = 0; i < 9 && i < res.nbad; i++)
    CHECK_MSG(res.bad[i].line == want_bad[i], "bad[%d] = line %lld (%s)", i,
              (long long)res.bad[i].line, res.bad[i].why);
  if (res.nbad == 9) {
    CHECK(strstr(res.bad[0].why, "not valid JSON"));
    CHECK(strstr(res.bad[1].why, "'result'"));
    CHECK(strstr(res.bad[2].why, "config.index"));
    CHECK(strstr(res.bad[3].why, "'result'"));
    CHECK(strstr(res.bad[5].why, "cost 1"));
    CHECK(strstr(res.bad[6].why, "0.1"));
    CHECK(strstr(res.bad[7].why, "not a JSON object"));
    CHECK(strstr(res.bad[8].why, "after the JSON"));
  }
  ob_db_import_result_clear(&res);

  /* Mapped workloads carry opbench keys, operators and FLOPs. */
  char k1[256], k4[256], k16[256];
  conv_key(k1, sizeof k1, "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", NULL);
  conv_key(k4, sizeof k4, "N=1,C=3,H=224,W=224,K=64,R=7,S=7,stride_h=2,stride_w=2,pad_t=3,pad_l=3,pad_b=3,pad_r=3", NULL);
  conv_key(k16, sizeof k16, "N=1,C=128,H=28,W=28,K=256,R=1,S=1,stride_h=2,stride_w=2", NULL);
  ob_db_records *r = NULL;
  CHECK(ob_db_workload_records(db, k1, &r) == OB_OK && r->n == 1);
  if (r && r->n == 1) {
    const ob_db_record *x = &r->rec[0];
    CHECK(!strcmp(x->tmpl, "conv2d_NCHWc.x86") && x->config_index == 1234);
    CHECK(!strcmp(x->target, "llvm -keys=cpu -mcpu=skylake-avx512 -num-threads=2"));
    CHECK(!strcmp(x->host, HOST) && !strcmp(x->resources, "threads=2") && x->nthreads == 2);
    CHECK(x->error_no == 0 && x->timing.ncosts == 3 && x->timing.median_s == 0.000125);
    CHECK(fabs(x->timing.mean_s - 0.000125) < 1e-12 && x->run_s == 1.5 && isnan(x->build_s));
    CHECK(x->timestamp == 1600000000.5 && !strcmp(x->op, "conv2d") && x->gflops > 0);
    CHECK(x->entity && !strcmp(x->entity, "[[\"tile_ic\",\"sp\",[-1,16]],[\"tile_oc\",\"sp\",[-1,16]],"
                                          "[\"tile_ow\",\"sp\",[-1,8]],[\"unroll_kw\",\"ot\",true]]"));
  }
  ob_db_records_free(r);
  CHECK(ob_db_workload_records(db, k4, &r) == OB_OK && r->n == 1);
  if (r && r->n == 1) CHECK(r->rec[0].error_no == 4 && r->rec[0].timing.ncosts == 0 && isnan(r->rec[0].timing.median_s));
  ob_db_records_free(r);
  CHECK(count_records(db, k16) == 1);
  CHECK(count_records(db, "dense/f32/M1N1000K512/epi:bias") == 1);
  ob_db_filter f = {.op = "depthwise_conv2d_NCHWc"};
  CHECK(ob_db_query(db, &f, &r) == OB_OK && r->n == 1);
  if (r && r->n == 1)
    CHECK(!strncmp(r->rec[0].workload, "autotvm:depthwise_conv2d_NCHWc.x86:[[\"TENSOR\"", 45));
  ob_db_records_free(r);
  CHECK(count_records(db, "dense/f32/M2N2K2") == 1);

  /* A second import adds nothing new; REPLACE overwrites. */
  CHECK(ob_db_import_autotvm(db, path_in("log.json"), &o, &res) == OB_OK);
  CHECK(res.nimported == 0 && res.nduplicate == 6 && res.nbroken == 9);
  ob_db_import_result_clear(&res);
  o.flags = OB_DB_REPLACE;
  CHECK(ob_db_import_autotvm(db, path_in("log.json"), &o, &res) == OB_OK);
  CHECK(res.nimported == 6 && res.nduplicate == 0);
  ob_db_import_result_clear(&res);
  CHECK(ob_db_workload_records(db, k1, &r) == OB_OK && r->n == 1);
  if (r && r->n == 1) CHECK(r->rec[0].timing.median_s == 0.5); /* line 11 came last */
  ob_db_records_free(r);

  /* A missing file is an I/O error naming it. */
  CHECK(ob_db_import_autotvm(db, path_in("nope.json"), &o, &res) == OB_ERR_IO && msg_has("nope.json"));
  ob_db_import_result_clear(&res);
  /* An empty file imports nothing. */
  write_all(path_in("empty.json"), "", 0);
  CHECK(ob_db_import_autotvm(db, path_in("empty.json"), &o, &res) == OB_OK && res.nlines == 0);
  ob_db_import_result_clear(&res);
  ob_ctx_set_log_level(ctx, OB_LOG_WARN);
  ob_db_close(db);
}

static ob_status entity_from_caller(void *user, const ob_db_record *rec, char **out) {
  (*(int *)user)++;
  char buf[64];
  snprintf(buf, sizeof buf, "[[\"given\",\"ot\",%llu]]", (unsigned long long)rec->config_index);
  *out = strdup(buf);
  return OB_OK;
}

static void test_autotvm_roundtrip(void) {
  ob_db *a = open_db("rt_a.db");
  /* opbench workloads: plain conv2d, conv2d with an epilogue, dense with
   * bias, an elementwise op; one record without a stored entity. */
  const char *ops[4][2] = {{"conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1"},
                           {"conv2d", "N=1,C=64,H=56,W=56,K=128,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1"},
                           {"dense", "M=1,N=1000,K=512"},
                           {"relu", "N=1,C=64,H=56,W=56"}};
  const char *epis[4] = {NULL, "bias,relu", "bias", NULL};
  const char *tmpls[4] = {"conv2d_nchw.x86", "conv2d_nchw.x86", "dense.x86", "elemwise.x86"};
  char keys[4][256];
  int nrec = 0;
  for (int w = 0; w < 4; w++) {
    ob_workload wl;
    CHECK(ob_workload_parse(ctx, ops[w][0], ops[w][1], &wl) == OB_OK);
    if (epis[w]) CHECK(ob_workload_set_epilogue(ctx, &wl, epis[w]) == OB_OK);
    ob_workload_key(&wl, keys[w], sizeof keys[w]);
    CHECK(ob_workload_store(a, &wl) == OB_OK);
    for (int i = 0; i < 5; i++) {
      trial t;
      make_trial(&t, keys[w], tmpls[w], (uint64_t)(i * 3), 1e-4 * (w + 1) + 1e-5 * i);
      char ent[64];
      snprintf(ent, sizeof ent, "[[\"tile\",\"sp\",[-1,%d]],[\"u\",\"ot\",false]]", i + 1);
      t.r.entity = w == 3 && i == 4 ? NULL : ent;
      if (i == 2) {
        t.r.error_no = OB_MERR_COMPILE_HOST;
        t.r.error_msg = "cc failed";
        t.r.timing.ncosts = 0;
        t.r.timing.median_s = t.r.timing.mean_s = t.r.timing.cv = NAN;
      }
      CHECK(ob_db_put_measurement(a, &t.r, 0, NULL) == OB_OK);
      nrec++;
    }
  }
  int calls = 0;
  int64_t n = 0;
  CHECK(ob_db_export_autotvm(a, NULL, path_in("rt.json"), ob_op_autotvm_map(), NULL,
                             entity_from_caller, &calls, &n) == OB_OK);
  CHECK(n == nrec && calls == 1);
  char *text = read_all(path_in("rt.json"), NULL);
  int lines = 0;
  for (char *p = text; p && *p; p++) lines += *p == '\n';
  CHECK(lines == nrec);
  CHECK(text && strstr(text, "\"conv2d_nchw.x86\",[[\"TENSOR\",[1,64,56,56],\"float32\"],"
                             "[\"TENSOR\",[64,64,3,3],\"float32\"],[1,1],[1,1,1,1],[1,1],\"NCHW\","
                             "\"NCHW\",\"float32\"],{}]"));
  CHECK(text && strstr(text, "\"opbench\":{\"workload\":\"conv2d_nchw/f32/N1C64H56W56/K128"));
  CHECK(text && strstr(text, "[\"TENSOR\",[1000],\"float32\"],\"float32\"],{}]"));
  CHECK(text && strstr(text, "[[1000000000],2,"));
  CHECK(text && strstr(text, "\"version\":0.2"));
  CHECK(text && strstr(text, "[[\"given\",\"ot\",12]]"));
  free(text);

  ob_db *b = open_db("rt_b.db");
  ob_db_import_opts o = {.host = HOST, .resources = RES, .map = ob_op_autotvm_map()};
  ob_db_import_result res;
  CHECK(ob_db_import_autotvm(b, path_in("rt.json"), &o, &res) == OB_OK);
  CHECK_MSG(res.nimported == nrec && res.nbroken == 0 && res.nunmapped == 0,
            "imported %lld broken %lld unmapped %lld", (long long)res.nimported,
            (long long)res.nbroken, (long long)res.nunmapped);
  ob_db_import_result_clear(&res);
  ob_db_records *ra = NULL, *rb = NULL;
  CHECK(ob_db_query(a, NULL, &ra) == OB_OK && ob_db_query(b, NULL, &rb) == OB_OK);
  CHECK(ra && rb && ra->n == rb->n);
  for (int64_t i = 0; ra && rb && i < ra->n && i < rb->n; i++) {
    const ob_db_record *x = &ra->rec[i], *y = &rb->rec[i];
    CHECK_MSG(!strcmp(x->workload, y->workload), "%s vs %s", x->workload, y->workload);
    CHECK(!strcmp(x->tmpl, y->tmpl) && x->config_index == y->config_index);
    CHECK(!strcmp(x->target, y->target) && x->error_no == y->error_no);
    CHECK(x->timestamp == y->timestamp && !strcmp(x->op, y->op));
    CHECK(x->flops == y->flops && !strcmp(x->attrs, y->attrs));
    if (x->entity) CHECK(y->entity && !strcmp(x->entity, y->entity));
    else CHECK(y->entity && !strcmp(y->entity, "[[\"given\",\"ot\",12]]"));
    if (x->error_no == 0) {
      CHECK(x->timing.median_s == y->timing.median_s && x->timing.ncosts == y->timing.ncosts);
      for (int c = 0; c < x->timing.ncosts && c < y->timing.ncosts; c++) CHECK(x->timing.costs[c] == y->timing.costs[c]);
      /* the protocol travels in "opbench_timing" and comes back */
      CHECK(x->timing.number == y->timing.number && x->timing.repeat == y->timing.repeat);
      CHECK(x->timing.min_repeat_ms == y->timing.min_repeat_ms && x->timing.flush == y->timing.flush);
      CHECK(x->timing.timer_overhead_s == y->timing.timer_overhead_s);
    }
  }
  ob_db_records_free(ra);
  ob_db_records_free(rb);

  /* Exporting the imported records gives the same lines back. */
  CHECK(ob_db_export_autotvm(b, NULL, path_in("rt2.json"), ob_op_autotvm_map(), NULL, NULL,
                             NULL, &n) == OB_OK && n == nrec);
  char *t1 = read_all(path_in("rt.json"), NULL), *t2 = read_all(path_in("rt2.json"), NULL);
  CHECK(t1 && t2 && !strcmp(t1, t2));
  free(t1);
  free(t2);
  /* A filtered export. */
  ob_db_filter f = {.op = "dense", .ok_only = true};
  CHECK(ob_db_export_autotvm(b, &f, path_in("dense.json"), ob_op_autotvm_map(), NULL, NULL,
                             NULL, &n) == OB_OK && n == 4);
  ob_db_close(a);
  ob_db_close(b);
}


/* The cache state a record was timed in (warm, cold, cold weights with a
 * warm activation) is stored, read back, exported and imported, and top-k
 * can take one state's records only (the runtime compares like with like). */
static void test_cache_state(void) {
  ob_db *db = open_db("cache.db");
  const char *wl = "dense/f32/M1N512K512";
  static const struct { uint64_t idx; double m; int state; } k_rows[] = {
      {1, 1e-6, OB_DB_CACHE_WARM},        {2, 3e-6, OB_DB_CACHE_COLD},
      {3, 2e-6, OB_DB_CACHE_COLD_WEIGHTS}, {4, 2.5e-6, OB_DB_CACHE_COLD_WEIGHTS},
      {5, 0.5e-6, OB_DB_CACHE_ANY}, /* protocol unknown (an imported record) */
  };
  for (size_t i = 0; i < sizeof k_rows / sizeof k_rows[0]; i++) {
    trial t;
    make_trial(&t, wl, "dense.x86", k_rows[i].idx, k_rows[i].m);
    t.r.timing.flush = k_rows[i].state >= OB_DB_CACHE_COLD;
    t.r.timing.flush_keep_first = k_rows[i].state == OB_DB_CACHE_COLD_WEIGHTS;
    if (k_rows[i].state == OB_DB_CACHE_ANY) t.r.timing.min_repeat_ms = NAN;
    CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  }
  ob_db_records *r = NULL;
  CHECK(ob_db_workload_records(db, wl, &r) == OB_OK && r && r->n == 5);
  for (int64_t i = 0; r && i < r->n; i++) {
    const ob_timing *x = &r->rec[i].timing;
    int want = k_rows[r->rec[i].config_index - 1].state;
    if (want == OB_DB_CACHE_ANY) CHECK(isnan(x->min_repeat_ms) && !x->flush && !x->flush_keep_first);
    else CHECK_MSG((int)ob_db_cache_of(x) == want, "config %llu: %s", (unsigned long long)r->rec[i].config_index,
                   ob_db_cache_name(ob_db_cache_of(x)));
  }
  ob_db_records_free(r);
  ob_db_key k = task_key(wl, NULL);
  static const struct { ob_db_cache c; int n; uint64_t first; } k_top[] = {
      {OB_DB_CACHE_WARM, 1, 1}, {OB_DB_CACHE_COLD, 1, 2}, {OB_DB_CACHE_COLD_WEIGHTS, 2, 3}, {OB_DB_CACHE_ANY, 5, 5}};
  for (size_t i = 0; i < sizeof k_top / sizeof k_top[0]; i++) {
    CHECK(ob_db_top_k_cache(db, &k, k_top[i].c, 10, &r) == OB_OK && r);
    CHECK_MSG(r && r->n == k_top[i].n && r->rec[0].config_index == k_top[i].first, "%s: %lld records",
              ob_db_cache_name(k_top[i].c), r ? (long long)r->n : -1LL);
    ob_db_records_free(r);
  }
  CHECK(ob_db_top_k_cache(db, &k, OB_DB_CACHE_COLD_WEIGHTS, 0, &r) == OB_ERR_INVALID_ARG && !r);
  CHECK(!strcmp(ob_db_cache_name(OB_DB_CACHE_COLD_WEIGHTS), "cold-weights"));
  /* CSV names it; AutoTVM's log carries it and brings it back */
  int64_t rows = 0;
  CHECK(ob_db_export_csv(db, NULL, path_in("cache.csv"), &rows) == OB_OK && rows == 5);
  char *csv = read_all(path_in("cache.csv"), NULL);
  CHECK(csv && strstr(csv, ",cold-weights,") && strstr(csv, ",cold,") && strstr(csv, ",warm,"));
  free(csv);
  int64_t n = 0;
  CHECK(ob_db_export_autotvm(db, NULL, path_in("cache.json"), ob_op_autotvm_map(), NULL, NULL, NULL, &n) == OB_OK &&
        n == 5);
  ob_db *b = open_db("cache_b.db");
  ob_db_import_opts o = {.host = HOST, .resources = RES, .map = ob_op_autotvm_map()};
  ob_db_import_result res;
  CHECK(ob_db_import_autotvm(b, path_in("cache.json"), &o, &res) == OB_OK && res.nimported == 5);
  ob_db_import_result_clear(&res);
  CHECK(ob_db_top_k_cache(b, &k, OB_DB_CACHE_COLD_WEIGHTS, 10, &r) == OB_OK && r && r->n == 2);
  ob_db_records_free(r);
  ob_db_close(b);
  ob_db_close(db);
}

/* Every field of the timing record is stored and read back; an unknown
 * protocol stays unknown; long AutoTVM cost lists are kept whole; CSV
 * carries the protocol; stats count noisy and emulated records. */
static void test_timing_record(void) {
  ob_db *db = open_db("timing.db");
  const char *wl = "dense/f32/M1N256K256";
  trial t;
  make_trial(&t, wl, "dense.x86", 1, 2e-6);
  ob_timing *tm = &t.r.timing;
  tm->number = 517;
  tm->repeat = 14;
  tm->min_repeat_ms = 1.0;
  tm->flush = true;
  tm->timer_overhead_s = 2.1e-8;
  tm->below_resolution = false;
  tm->noisy = true;
  tm->extra_repeats = 4;
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  make_trial(&t, wl, "dense.x86", 2, 1e-8); /* a tiny one, warm, flagged */
  tm->number = 100000;
  tm->below_resolution = true;
  tm->emulated = true; /* and timed under an emulator */
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  make_trial(&t, wl, "dense.x86", 3, 3e-6); /* protocol unknown */
  tm->number = 0;
  tm->repeat = 0;
  tm->min_repeat_ms = NAN;
  tm->timer_overhead_s = 0;
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  /* more costs than a timing holds */
  double many[100];
  for (int i = 0; i < 100; i++) many[i] = 5e-6 + 1e-9 * i;
  make_trial(&t, wl, "dense.x86", 4, 5e-6 + 1e-9 * 49.5);
  t.r.all_costs = many;
  t.r.nall_costs = 100;
  tm->ncosts = OB_TIMING_MAX_COSTS;
  memcpy(tm->costs, many, sizeof tm->costs);
  tm->repeat = 100;
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  /* a negative count is refused */
  make_trial(&t, wl, "dense.x86", 5, 1e-6);
  tm->extra_repeats = -1;
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_ERR_INVALID_ARG && msg_has("negative"));

  ob_db_records *r = NULL;
  CHECK(ob_db_workload_records(db, wl, &r) == OB_OK && r && r->n == 4);
  for (int64_t i = 0; r && i < r->n; i++) {
    const ob_timing *x = &r->rec[i].timing;
    switch (r->rec[i].config_index) {
    case 1:
      CHECK(x->number == 517 && x->repeat == 14 && x->min_repeat_ms == 1.0 && x->flush);
      CHECK(x->timer_overhead_s == 2.1e-8 && !x->below_resolution && x->noisy);
      CHECK(x->extra_repeats == 4 && x->ncosts == 3 && r->rec[i].all_costs == NULL);
      CHECK(!x->emulated);
      break;
    case 2:
      CHECK(x->number == 100000 && !x->flush && x->below_resolution && !x->noisy && x->emulated);
      break;
    case 3:
      CHECK(x->number == 0 && x->repeat == 0 && isnan(x->min_repeat_ms));
      CHECK(!x->flush && x->timer_overhead_s == 0);
      break;
    case 4:
      CHECK(x->ncosts == OB_TIMING_MAX_COSTS && x->repeat == 100);
      CHECK(r->rec[i].nall_costs == 100 && r->rec[i].all_costs);
      for (int c = 0; r->rec[i].all_costs && c < 100; c++) CHECK(r->rec[i].all_costs[c] == many[c]);
      for (int c = 0; c < OB_TIMING_MAX_COSTS; c++) CHECK(x->costs[c] == many[c]);
      break;
    default: CHECK(!"unexpected config");
    }
  }
  ob_db_records_free(r);

  /* CSV: the protocol columns, cold/warm/unknown */
  int64_t rows = 0;
  CHECK(ob_db_export_csv(db, NULL, path_in("timing.csv"), &rows) == OB_OK && rows == 4);
  char *csv = read_all(path_in("timing.csv"), NULL);
  CHECK(csv && strstr(csv, ",number,repeats_s,repeat,min_repeat_ms,cache,timer_overhead_s,"
                           "below_resolution,noisy,extra_repeats,emulated,"));
  CHECK(csv && strstr(csv, ",517,"));
  CHECK(csv && strstr(csv, ",14,1,cold,2.1e-08,0,1,4,0,"));
  CHECK(csv && strstr(csv, ",3,1,warm,2e-08,1,0,0,1,"));
  CHECK(csv && strstr(csv, ",0,") && strstr(csv, ",,,,0,0,0,0,")); /* the unknown one */
  free(csv);

  /* AutoTVM: every one of the 100 costs goes out and comes back */
  int64_t n = 0;
  CHECK(ob_db_export_autotvm(db, NULL, path_in("timing.json"), ob_op_autotvm_map(), NULL, NULL,
                             NULL, &n) == OB_OK && n == 4);
  char *text = read_all(path_in("timing.json"), NULL);
  CHECK(text && strstr(text, "\"opbench_timing\":{\"number\":517,\"repeat\":14,\"min_repeat_ms\":1,"
                             "\"flush\":true,\"timer_overhead_s\":2.1e-08,\"below_resolution\":false,"
                             "\"noisy\":true,\"extra_repeats\":4,\"emulated\":false}"));
  free(text);
  ob_db *b = open_db("timing_b.db");
  ob_db_import_opts o = {.host = HOST, .resources = RES, .map = ob_op_autotvm_map()};
  ob_db_import_result res;
  CHECK(ob_db_import_autotvm(b, path_in("timing.json"), &o, &res) == OB_OK && res.nimported == 4);
  ob_db_import_result_clear(&res);
  CHECK(ob_db_workload_records(b, wl, &r) == OB_OK && r && r->n == 4);
  for (int64_t i = 0; r && i < r->n; i++) {
    const ob_db_record *x = &r->rec[i];
    if (x->config_index == 1)
      CHECK(x->timing.number == 517 && x->timing.flush && x->timing.noisy && x->timing.extra_repeats == 4);
    if (x->config_index == 2) CHECK(x->timing.emulated && x->timing.below_resolution);
    if (x->config_index == 3) CHECK(isnan(x->timing.min_repeat_ms) && x->timing.number == 0);
    if (x->config_index == 4) CHECK(x->nall_costs == 100 && x->all_costs && x->all_costs[99] == many[99]);
  }
  ob_db_records_free(r);
  ob_db_close(b);

  /* stats: one noisy, one below resolution */
  ob_db_stats *st = NULL;
  CHECK(ob_db_stats_get(db, NULL, &st) == OB_OK && st);
  if (st) CHECK(st->total.noisy == 1 && st->total.below_resolution == 1 && st->total.total == 4);
  if (st) CHECK(st->total.emulated == 1);
  ob_db_stats_free(st);
  ob_db_close(db);
}

/* A version-1 file (tests/fixtures/db_v1.sql, written by opbench before
 * version 2) is read as it is when opened read-only and upgraded in place
 * when opened for writing, keeping every record. */
static void test_migrate_v1(void) {
  char fixture[512];
  snprintf(fixture, sizeof fixture, "%s/db_v1.sql", OB_TEST_FIXTURES);
  char *sql = read_all(fixture, NULL);
  CHECK_MSG(sql != NULL, "cannot read %s", fixture);
  if (!sql) return;
  sqlite3 *raw = NULL;
  CHECK(sqlite3_open(path_in("v1.db"), &raw) == SQLITE_OK);
  char *err = NULL;
  CHECK_MSG(sqlite3_exec(raw, sql, NULL, NULL, &err) == SQLITE_OK, "%s", err ? err : "");
  sqlite3_free(err);
  sqlite3_close(raw);
  free(sql);
  const char *wl = "dense/f32/M1N16K16";

  /* read-only: readable, unchanged */
  size_t len0 = 0, len1 = 0;
  char *before = read_all(path_in("v1.db"), &len0);
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, path_in("v1.db"), OB_DB_READONLY, &db) == OB_OK && db);
  ob_db_records *r = NULL;
  CHECK(db && ob_db_workload_records(db, wl, &r) == OB_OK && r && r->n == 3);
  for (int64_t i = 0; r && i < r->n; i++) {
    const ob_timing *x = &r->rec[i].timing;
    CHECK(x->number == 1 && x->repeat == 10 && x->ncosts == 10 && isnan(x->min_repeat_ms));
    CHECK(!x->noisy && !x->below_resolution && x->extra_repeats == 0 && x->timer_overhead_s == 0);
    CHECK(!x->emulated);
  }
  ob_db_records_free(r);
  ob_db_stats *st = NULL;
  CHECK(db && ob_db_stats_get(db, NULL, &st) == OB_OK && st && st->total.total == 3 && st->total.noisy == 0);
  ob_db_stats_free(st);
  ob_db_close(db);
  char *after = read_all(path_in("v1.db"), &len1);
  CHECK(before && after && len0 == len1 && !memcmp(before, after, len0));
  free(before);
  free(after);

  /* writable: upgraded, the same records, new ones with the full protocol */
  db = NULL;
  CHECK(ob_db_open(ctx, path_in("v1.db"), 0, &db) == OB_OK && db);
  if (!db) return;
  CHECK(ob_db_check(db) == OB_OK);
  CHECK(ob_db_workload_records(db, wl, &r) == OB_OK && r && r->n == 3);
  for (int64_t i = 0; r && i < r->n; i++) {
    const ob_db_record *x = &r->rec[i];
    CHECK(x->timing.number == 1 && x->timing.repeat == 10 && isnan(x->timing.min_repeat_ms));
    CHECK(x->error_no == 0 && x->timing.median_s > 0 && x->gflops > 0 && x->entity);
  }
  ob_db_records_free(r);
  ob_db_stats *st2 = NULL;
  CHECK(ob_db_stats_get(db, NULL, &st2) == OB_OK && st2 && st2->nreplaced == 3 && st2->total.total == 3);
  ob_db_stats_free(st2);
  trial t;
  make_trial(&t, wl, "dense_pack.x86", 7, 9e-9);
  t.r.timing.number = 120000;
  t.r.timing.noisy = true;
  CHECK(ob_db_put_measurement(db, &t.r, 0, NULL) == OB_OK);
  /* the replaced trials' history has the new columns too */
  make_trial(&t, wl, "dense_pack.x86", 3, 8e-9);
  t.r.host = "cfb02edcb9ed5e17";
  t.r.target = "llvm -mcpu=native";
  t.r.resources = "threads=1;cores=0";
  CHECK(ob_db_put_measurement(db, &t.r, OB_DB_REPLACE, NULL) == OB_OK);
  ob_db_close(db);
  /* reopened: version 3 (1 -> 2 -> 3), nothing upgraded twice */
  CHECK(ob_db_open(ctx, path_in("v1.db"), OB_DB_READONLY, &db) == OB_OK && db);
  CHECK(db && ob_db_workload_records(db, wl, &r) == OB_OK && r && r->n == 4);
  for (int64_t i = 0; r && i < r->n; i++)
    if (r->rec[i].config_index == 7) CHECK(r->rec[i].timing.number == 120000 && r->rec[i].timing.noisy);
  ob_db_records_free(r);
  ob_db_close(db);
  CHECK(sqlite3_open(path_in("v1.db"), &raw) == SQLITE_OK);
  sqlite3_stmt *q = NULL;
  CHECK(sqlite3_prepare_v2(raw, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &q, NULL) == SQLITE_OK);
  CHECK(q && sqlite3_step(q) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(q, 0), "3"));
  sqlite3_finalize(q);
  /* 3 upgraded rows (3 costs each), then the trial the remeasure replaced (10) */
  CHECK(sqlite3_prepare_v2(raw, "SELECT group_concat(repeat) FROM (SELECT repeat FROM"
                                " measurements_history ORDER BY id)", -1, &q, NULL) == SQLITE_OK);
  CHECK(q && sqlite3_step(q) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(q, 0), "3,3,3,10"));
  sqlite3_finalize(q);
  sqlite3_close(raw);
}

/* Schema version 3's tables (profiles.c) through the store's back end:
 * a point stored, kept, replaced (the upsert) and queried with its
 * workload's operator; a host limit replaced in place; tuning runs filed
 * and closed (their ids from RETURNING); and the dataset export. On
 * PostgreSQL this is what proves the version-3 DDL and SQL portable. */
static void test_profile_tables(void) {
  ob_db *db = open_db("profiles.db");
  if (!db) return;
  const char *wl = "dense/f32/M4N32K16";
  CHECK(ob_db_put_workload(db, wl, "dense", "{\"dtype\":\"float32\",\"M\":4,\"N\":32,\"K\":16}", 4096) ==
        OB_OK);
  ob_db_profile p;
  memset(&p, 0, sizeof p);
  p.key = (ob_db_profile_key){.host = HOST, .workload = wl, .target = TARGET, .tmpl = "dense_pack.x86",
                              .config_index = 7, .resources = RES, .corun_workload = "",
                              .corun_mode = "", .pressure_mib = 0};
  p.nthreads = 1;
  p.cores = "0";
  p.sweep = "threads";
  p.timing.ncosts = 2;
  p.timing.costs[0] = 1e-4;
  p.timing.costs[1] = 1.2e-4;
  p.timing.median_s = 1e-4;
  p.timing.mean_s = 1.1e-4;
  p.timing.number = 10;
  p.timing.repeat = 2;
  p.flops = 4096;
  p.bytes = NAN, p.gflops = NAN, p.intensity = NAN, p.peak_gflops = NAN, p.peak_pct = NAN;
  p.bandwidth_gbps = NAN, p.alone_s = NAN, p.slowdown = NAN, p.corun_partner_s = NAN;
  p.pressure_gbps = NAN, p.build_s = NAN, p.run_s = 0.25;
  for (int c = 0; c < OB_COUNTER_COUNT; c++) p.counters[c] = NAN;
  bool stored = false, found = false;
  double med = 0;
  CHECK(ob_db_put_profile(db, &p, 0, &stored) == OB_OK && stored);
  ob_db_profile p2 = p;
  p2.timing.median_s = 3e-4;
  p2.sweep = "again";
  CHECK(ob_db_put_profile(db, &p2, 0, &stored) == OB_OK && !stored); /* kept */
  CHECK(ob_db_get_profile(db, &p.key, &found, &med) == OB_OK && found && med == 1e-4);
  CHECK(ob_db_put_profile(db, &p2, OB_DB_REPLACE, &stored) == OB_OK && stored);
  CHECK(ob_db_get_profile(db, &p.key, &found, &med) == OB_OK && found && med == 3e-4);
  ob_db_profile p3 = p;
  p3.key.corun_workload = wl;
  p3.key.corun_mode = "stream";
  p3.key.pressure_mib = 2.5;
  CHECK(ob_db_put_profile(db, &p3, 0, &stored) == OB_OK && stored);
  ob_db_profiles *ps = NULL;
  CHECK(ob_db_query_profiles(db, &(ob_db_profile_filter){.op = "dense"}, &ps) == OB_OK && ps);
  CHECK_MSG(ps && ps->n == 2, "%lld profile points", ps ? (long long)ps->n : -1LL);
  if (ps && ps->n == 2) {
    CHECK(!strcmp(ps->p[0].sweep, "again") && ps->p[0].timing.median_s == 3e-4);
    CHECK(ps->p[0].timing.ncosts == 2 && ps->p[0].timing.costs[1] == 1.2e-4 && isnan(ps->p[0].bytes));
    CHECK(!strcmp(ps->p[0].op, "dense") && ps->p[0].key.config_index == 7 && ps->p[0].nthreads == 1);
    CHECK(!strcmp(ps->p[1].key.corun_mode, "stream") && ps->p[1].key.pressure_mib == 2.5);
  }
  ob_db_profiles_free(ps);
  ps = NULL;
  CHECK(ob_db_query_profiles(db, &(ob_db_profile_filter){.sweep = "none"}, &ps) == OB_OK && ps && ps->n == 0);
  ob_db_profiles_free(ps);
  int64_t nrows = 0;
  CHECK(ob_db_export_profiles(db, NULL, "csv", path_in("profiles.csv"), &nrows) == OB_OK && nrows == 2);

  ob_db_host_limit l = {.host = HOST, .name = "fma_peak", .isa = "avx2", .threads = 1,
                        .value = 50, .unit = "GFLOP/s", .verified = true, .note = "first"};
  CHECK(ob_db_put_host_limit(db, &l) == OB_OK);
  l.value = 60;
  l.note = "again";
  CHECK(ob_db_put_host_limit(db, &l) == OB_OK);
  ob_db_host_limits *ls = NULL;
  CHECK(ob_db_get_host_limits(db, HOST, &ls) == OB_OK && ls && ls->n == 1);
  if (ls && ls->n == 1) CHECK(ls->l[0].value == 60 && !strcmp(ls->l[0].note, "again") && ls->l[0].verified);
  ob_db_host_limits_free(ls);

  ob_db_key k = {.host = HOST, .workload = wl, .target = TARGET, .resources = RES, .tmpl = "dense_pack.x86"};
  int64_t id1 = 0, id2 = 0;
  CHECK(ob_db_begin_tuning_run(db, &k, "xgb", &id1) == OB_OK && id1 > 0);
  CHECK(ob_db_end_tuning_run(db, id1, 16) == OB_OK);
  CHECK(ob_db_begin_tuning_run(db, &k, "random", &id2) == OB_OK && id2 > id1);
  ob_db_tuning_runs *rs = NULL;
  CHECK(ob_db_get_tuning_runs(db, HOST, &rs) == OB_OK && rs && rs->n == 2);
  if (rs && rs->n == 2) {
    CHECK(!strcmp(rs->r[0].tuner, "xgb") && rs->r[0].trials == 16 && !isnan(rs->r[0].ended));
    CHECK(!strcmp(rs->r[1].tuner, "random") && isnan(rs->r[1].ended));
  }
  ob_db_tuning_runs_free(rs);
  ob_db_close(db);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

/* The attributes the db stores give the workload back (same key), and
 * malformed ones are refused with a message. */
static void test_workload_attrs(void) {
  const struct {
    const char *op, *shape, *epi;
  } cases[] = {{"conv2d", "N=1,C=3,H=224,W=224,K=64,R=7,S=7,stride_h=2,stride_w=2,pad_t=3", NULL},
               {"conv2d", "N=2,C=8,H=9,W=7,K=8,R=3,S=3,groups=2,dil_h=2", "bias,relu"},
               {"dense", "M=1,N=1000,K=512", "bias"},
               {"depthwise_conv2d", "N=1,C=32,H=28,W=28,R=3,S=3,pad_t=1,pad_l=1", NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ob_workload a, b;
    CHECK_MSG(ob_workload_parse(ctx, cases[i].op, cases[i].shape, &a) == OB_OK, "%s: %s",
              cases[i].shape, ob_ctx_errmsg(ctx));
    if (cases[i].epi) CHECK(ob_workload_set_epilogue(ctx, &a, cases[i].epi) == OB_OK);
    ob_str js = {0};
    ob_workload_attrs(&a, &js);
    CHECK_MSG(ob_workload_from_attrs(ctx, a.op, js.data, &b) == OB_OK, "%s: %s", js.data,
              ob_ctx_errmsg(ctx));
    char ka[512], kb[512];
    ob_workload_key(&a, ka, sizeof ka);
    ob_workload_key(&b, kb, sizeof kb);
    CHECK_MSG(!strcmp(ka, kb), "%s came back as %s", ka, kb);
    ob_str_free(&js);
  }
  ob_workload w;
  const char *bad[] = {NULL, "", "[1,2]", "{\"dtype\":\"float16\",\"M\":1,\"N\":2,\"K\":3}",
                       "{\"M\":1,\"N\":0,\"K\":3}", "{\"M\":1,\"Q\":2}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ob_ctx_clear_error(ctx);
    CHECK_MSG(ob_workload_from_attrs(ctx, "dense", bad[i], &w) != OB_OK &&
                  ob_ctx_errmsg(ctx)[0],
              "attrs '%s' accepted", bad[i] ? bad[i] : "(null)");
  }
  ob_ctx_clear_error(ctx);
}

/* The operators' AutoTVM map on its own, and an import without it. */
static void test_autotvm_map(void) {
  const ob_db_autotvm_i *m = ob_op_autotvm_map();
  CHECK(m && m->from_task && m->to_args);
  if (!m) return;
  const char *conv_args = "[[\"TENSOR\",[1,64,56,56],\"float32\"],[\"TENSOR\",[64,64,3,3],"
                          "\"float32\"],[1,1],[1,1,1,1],[1,1],\"NCHW\",\"NCHW\",\"float32\"]";
  char k1[256];
  conv_key(k1, sizeof k1, "N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", NULL);
  ob_db_wl_desc d = {0};
  CHECK(m->from_task(NULL, "conv2d_NCHWc.x86", conv_args, &d));
  CHECK_MSG(d.key && !strcmp(d.key, k1), "%s", d.key ? d.key : "(null)");
  CHECK(d.op && !strcmp(d.op, "conv2d"));
  CHECK(d.flops == 2.0 * 64 * 56 * 56 * 64 * 3 * 3);
  ob_workload back;
  char kb[256] = "";
  CHECK(d.attrs && ob_workload_from_attrs(ctx, "conv2d", d.attrs, &back) == OB_OK);
  ob_workload_key(&back, kb, sizeof kb);
  CHECK(!strcmp(kb, k1));
  /* ... and the attributes give back TVM's arguments. */
  char *args = d.attrs ? m->to_args(NULL, "conv2d", d.attrs) : NULL;
  CHECK_MSG(args && !strcmp(args, conv_args), "%s", args ? args : "(null)");
  free(args);
  free(d.key);
  free(d.op);
  free(d.attrs);
  /* dense_nopack with bias, without the out_dtype. */
  memset(&d, 0, sizeof d);
  CHECK(m->from_task(NULL, "dense_nopack.x86",
                     "[[\"TENSOR\",[4,64],\"float32\"],[\"TENSOR\",[10,64],\"float32\"],"
                     "[\"TENSOR\",[10],\"float32\"]]",
                     &d));
  CHECK(d.key && !strcmp(d.key, "dense/f32/M4N10K64/epi:bias") && d.flops > 0);
  free(d.key);
  free(d.op);
  free(d.attrs);
  /* Not theirs: untouched and false. */
  const char *no[][2] = {
      {"depthwise_conv2d_NCHWc.x86", conv_args},
      {"conv2d_NCHWc.x86", "[[\"TENSOR\",[1,64,56,56],\"float32\"],[\"TENSOR\",[64,32,3,3],"
                           "\"float32\"],[1,1],[1,1,1,1],[1,1],\"NCHW\",\"NCHW\",\"float32\"]"},
      {"conv2d_NCHWc.x86", "[[\"TENSOR\",[1,64,56,56],\"float16\"],[\"TENSOR\",[64,64,3,3],"
                           "\"float16\"],[1,1],[1,1,1,1],[1,1],\"NCHW\",\"NCHW\",\"float16\"]"},
      {"conv2d_NCHWc.x86", "[[\"TENSOR\",[1,64,56,56],\"float32\"],[\"TENSOR\",[64,64,3,3],"
                           "\"float32\"],[1,1],[1,1,1,1],[1,1],\"NHWC\",\"NHWC\",\"float32\"]"},
      {"dense_pack.x86", "[[\"TENSOR\",[4,64],\"float32\"],[\"TENSOR\",[10,63],\"float32\"]]"},
      {"dense_pack.x86", "not json"},
      {"dense_pack.x86", "{}"}};
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
    ob_db_wl_desc z = {0};
    CHECK_MSG(!m->from_task(NULL, no[i][0], no[i][1], &z) && !z.key && !z.op && !z.attrs,
              "%s %s mapped", no[i][0], no[i][1]);
  }
  char *none = m->to_args(NULL, "relu", "{\"dtype\":\"float32\",\"N\":1,\"C\":8,\"H\":4,\"W\":4}");
  CHECK(!none);
  free(none);
  none = m->to_args(NULL, "conv2d", "{\"N\":1,\"C\":8}"); /* attributes missing */
  CHECK(!none);
  free(none);

  /* Without a map the db knows no operator: every task stays under its
   * AutoTVM task key. */
  write_all(path_in("log.json"), k_log, strlen(k_log));
  ob_db *db = open_db("import_nomap.db");
  ob_db_import_opts o = {.host = HOST, .resources = "threads=2"};
  ob_db_import_result res;
  ob_ctx_set_log_level(ctx, OB_LOG_ERROR);
  CHECK(ob_db_import_autotvm(db, path_in("log.json"), &o, &res) == OB_OK);
  CHECK_MSG(res.nimported == 5 && res.nunmapped == 5 && res.nduplicate == 1,
            "imported %lld unmapped %lld", (long long)res.nimported, (long long)res.nunmapped);
  ob_db_import_result_clear(&res);
  ob_ctx_set_log_level(ctx, OB_LOG_WARN);
  CHECK(count_records(db, k1) == 0);
  ob_db_filter f = {.op = "conv2d_NCHWc"};
  ob_db_records *r = NULL;
  CHECK(ob_db_query(db, &f, &r) == OB_OK && r->n == 2);
  for (int64_t i = 0; r && i < r->n; i++)
    CHECK(!strncmp(r->rec[i].workload, "autotvm:conv2d_NCHWc.x86:[[\"TENSOR\"", 35));
  ob_db_records_free(r);
  ob_db_close(db);
}

/* The PostgreSQL server of tests/servers: a database of this run's own on
 * it. false (a skip) when the servers are not installed. */
static bool pg_setup(void) {
  const char *envf = getenv("OB_TEST_SERVERS_ENV");
  FILE *f = envf ? fopen(envf, "r") : NULL;
  char line[1024], base[1024] = "";
  bool absent = false;
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (!strncmp(line, "OB_TEST_PG_URL=", 15)) snprintf(base, sizeof base, "%s", line + 15);
    if (!strcmp(line, "OB_TEST_SERVERS=absent")) absent = true;
  }
  if (f) fclose(f);
  if (absent) {
    CHECK_SKIP("PostgreSQL is not installed (scripts/install-deps.sh installs it)");
    return false;
  }
  CHECK_MSG(base[0], "no PostgreSQL URL in '%s' ($OB_TEST_SERVERS_ENV)", envf ? envf : "(unset)");
  if (!base[0]) return false;
  pg_admin = PQconnectdb(base);
  CHECK_MSG(PQstatus(pg_admin) == CONNECTION_OK, "%s", PQerrorMessage(pg_admin));
  if (PQstatus(pg_admin) != CONNECTION_OK) return false;
  snprintf(pg_dbname, sizeof pg_dbname, "opbench_test_db_%d", (int)getpid());
  char sql[128];
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", pg_dbname);
  PGresult *r = PQexec(pg_admin, sql);
  CHECK_MSG(PQresultStatus(r) == PGRES_COMMAND_OK, "%s", PQerrorMessage(pg_admin));
  PQclear(r);
  PQfinish(pg_admin);
  /* the same server, the new database */
  char *slash = strrchr(base, '/');
  OB_ASSERT(slash && slash > strstr(base, "://") + 2);
  snprintf(pg_url, sizeof pg_url, "%.*s/%s", (int)(slash - base), base, pg_dbname);
  pg_admin = PQconnectdb(pg_url);
  CHECK_MSG(PQstatus(pg_admin) == CONNECTION_OK, "%s", PQerrorMessage(pg_admin));
  PQclear(PQexec(pg_admin, "SET client_min_messages = warning"));
  return PQstatus(pg_admin) == CONNECTION_OK;
}

static void pg_teardown(const char *base_env) {
  (void)base_env;
  if (!pg_admin) return;
  char url[1024];
  snprintf(url, sizeof url, "%s", pg_url);
  char *slash = strrchr(url, '/');
  PQfinish(pg_admin);
  pg_admin = NULL;
  if (!slash) return;
  snprintf(slash, sizeof url - (size_t)(slash - url), "/postgres");
  PGconn *c = PQconnectdb(url);
  char sql[128];
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", pg_dbname);
  PQclear(PQexec(c, sql));
  PQfinish(c);
}

int main(int argc, char **argv) {
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  if (argc == 3 && !strcmp(argv[1], "--backend") && !strcmp(argv[2], "postgresql")) pg = true;
  else if (argc != 1) {
    fprintf(stderr, "usage: test_db [--backend postgresql]\n");
    return 2;
  }
  snprintf(dir, sizeof dir, "/tmp/opbench-test-db-XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  if (!pg || pg_setup()) {
    test_open();
    test_hosts();
    test_measurements();
    if (!pg) test_garbage(); /* bytes of a file */
    test_newer_schema();
    test_locked();
    test_concurrent();
    test_kill9();
    test_autotvm_import();
    test_autotvm_roundtrip();
    test_autotvm_map();
    test_workload_attrs();
    test_timing_record();
    test_cache_state();
    test_profile_tables();
    if (!pg) test_migrate_v1(); /* version-1 stores are SQLite files */
  }
  if (pg) pg_teardown(NULL);
  if (!getenv("OPBENCH_KEEP_TEST_FILES")) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
