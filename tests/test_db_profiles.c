/* test_db_profiles: the profiler's tables of schema version 3: profile
 * points (put, keyed so a point is stored once, replace, lookup, queries by
 * filter, malformed keys refused), host limits and tuning runs; the
 * dataset export (CSV and JSON lines, one column per workload attribute,
 * the union over operators); the upgrade of a version-2 file in place (and
 * read as it is when opened read-only). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "opbench/db.h"
#include "check.h"

static char dir[64];
static ob_ctx *ctx;

static const char *path_in(const char *name) {
  static char buf[4][160];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static const char *CONV = "conv2d_nchw/f32/N1C8H10W10/K8R3S3/s1,1/p1,1,1,1/d1,1/g1";
static const char *DENSE = "dense/f32/M4N32K16";

static ob_db_profile point(const char *wl, int threads, const char *corun, const char *mode,
                           double mib, double median) {
  static char res[8][64];
  static int k;
  k = (k + 1) % 8;
  snprintf(res[k], sizeof res[k], "threads=%d;cores=%s", threads, threads == 1 ? "0" : "0,1");
  ob_db_profile p;
  memset(&p, 0, sizeof p);
  p.key = (ob_db_profile_key){.host = "h1", .workload = wl, .target = "llvm -mcpu=native",
                              .tmpl = "t.x86", .config_index = 3, .resources = res[k],
                              .corun_workload = corun, .corun_mode = mode, .pressure_mib = mib};
  p.nthreads = threads;
  p.cores = threads == 1 ? "0" : "0,1";
  p.sweep = corun ? "corun" : "threads";
  p.timing.ncosts = 3;
  for (int i = 0; i < 3; i++) p.timing.costs[i] = median * (1 + 0.01 * i);
  p.timing.median_s = median;
  p.timing.mean_s = median;
  p.timing.cv = 0.01;
  p.timing.number = 10;
  p.timing.repeat = 3;
  p.timing.min_repeat_ms = 1;
  p.flops = 1e6;
  p.bytes = 4e3;
  p.gflops = p.flops / median / 1e9;
  p.intensity = p.flops / p.bytes;
  p.peak_gflops = 100;
  p.peak_pct = p.gflops;
  p.bandwidth_gbps = NAN;
  p.alone_s = corun || mib > 0 ? median / 2 : NAN;
  p.slowdown = corun || mib > 0 ? 2 : NAN;
  p.corun_partner_s = NAN;
  p.pressure_gbps = NAN;
  for (int c = 0; c < OB_COUNTER_COUNT; c++) p.counters[c] = NAN;
  p.counters[OB_COUNTER_TASK_CLOCK] = median * 1e9;
  p.counters_note = "cycles: no PMU";
  p.build_s = NAN;
  p.run_s = 0.5;
  return p;
}

static void test_points(void) {
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, path_in("p.db"), 0, &db) == OB_OK && db);
  if (!db) return;
  CHECK(ob_db_put_workload(db, CONV, "conv2d",
                           "{\"dtype\":\"float32\",\"N\":1,\"C\":8,\"H\":10,\"W\":10,\"K\":8,\"R\":3,"
                           "\"S\":3,\"stride_h\":1}",
                           1e6) == OB_OK);
  CHECK(ob_db_put_workload(db, DENSE, "dense", "{\"dtype\":\"float32\",\"M\":4,\"N\":32,\"K\":16}",
                           4096) == OB_OK);
  bool stored = false;
  ob_db_profile p = point(CONV, 1, NULL, NULL, 0, 1e-4);
  CHECK(ob_db_put_profile(db, &p, 0, &stored) == OB_OK && stored);
  /* the same key again: kept, not stored */
  ob_db_profile p2 = point(CONV, 1, NULL, NULL, 0, 9e-4);
  CHECK(ob_db_put_profile(db, &p2, 0, &stored) == OB_OK && !stored);
  bool found = false;
  double med = 0;
  CHECK(ob_db_get_profile(db, &p.key, &found, &med) == OB_OK && found && med == 1e-4);
  /* replaced on request */
  CHECK(ob_db_put_profile(db, &p2, OB_DB_REPLACE, &stored) == OB_OK && stored);
  CHECK(ob_db_get_profile(db, &p.key, &found, &med) == OB_OK && found && med == 9e-4);
  /* every feature is part of the key */
  ob_db_profile q[] = {point(CONV, 2, NULL, NULL, 0, 2e-4),
                       point(CONV, 1, DENSE, "stream", 0, 3e-4),
                       point(CONV, 1, DENSE, "full", 0, 4e-4),
                       point(CONV, 1, NULL, NULL, 64, 5e-4),
                       point(DENSE, 1, NULL, NULL, 0, 6e-5)};
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    CHECK(ob_db_put_profile(db, &q[i], 0, &stored) == OB_OK && stored);
    CHECK(ob_db_get_profile(db, &q[i].key, &found, &med) == OB_OK && found && med == q[i].timing.median_s);
  }
  /* a failed point: stored, its median unknown */
  ob_db_profile f = point(DENSE, 2, NULL, NULL, 0, 1e-5);
  f.error_no = 5;
  f.error_msg = "wrong answer";
  f.timing.median_s = NAN;
  CHECK(ob_db_put_profile(db, &f, 0, &stored) == OB_OK && stored);
  CHECK(ob_db_get_profile(db, &f.key, &found, &med) == OB_OK && found && isnan(med));
  ob_db_profile none = point(DENSE, 1, NULL, NULL, 128, 1e-5);
  CHECK(ob_db_get_profile(db, &none.key, &found, &med) == OB_OK && !found);

  /* malformed points are refused, naming what is wrong */
  ob_db_profile bad = point(CONV, 1, NULL, "stream", 0, 1e-4);
  CHECK(ob_db_put_profile(db, &bad, 0, NULL) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "co-run mode but no co-runner"));
  bad = point(CONV, 1, DENSE, "sideways", 0, 1e-4);
  CHECK(ob_db_put_profile(db, &bad, 0, NULL) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "neither 'stream' nor 'full'"));
  bad = point(CONV, 1, NULL, NULL, -1, 1e-4);
  CHECK(ob_db_put_profile(db, &bad, 0, NULL) == OB_ERR_INVALID_ARG);
  bad = point(CONV, 1, NULL, NULL, 0, 0);
  CHECK(ob_db_put_profile(db, &bad, 0, NULL) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "positive median"));
  bad = point(CONV, 1, NULL, NULL, 0, 1e-4);
  bad.key.host = NULL;
  CHECK(ob_db_put_profile(db, &bad, 0, NULL) == OB_ERR_INVALID_ARG);

  /* queries */
  ob_db_profiles *ps = NULL;
  CHECK(ob_db_query_profiles(db, NULL, &ps) == OB_OK && ps && ps->n == 7);
  ob_db_profiles_free(ps);
  ob_db_profile_filter fl = {.op = "dense"};
  CHECK(ob_db_query_profiles(db, &fl, &ps) == OB_OK && ps && ps->n == 2);
  ob_db_profiles_free(ps);
  fl = (ob_db_profile_filter){.op = "dense", .ok_only = true};
  CHECK(ob_db_query_profiles(db, &fl, &ps) == OB_OK && ps && ps->n == 1);
  if (ps && ps->n == 1) {
    const ob_db_profile *r = &ps->p[0];
    CHECK(!strcmp(r->op, "dense") && strstr(r->attrs, "\"M\":4"));
    CHECK(r->timing.ncosts == 3 && r->timing.median_s == 6e-5 && r->timing.number == 10);
    CHECK(isnan(r->counters[OB_COUNTER_CYCLES]) && r->counters[OB_COUNTER_TASK_CLOCK] > 0);
    CHECK(!strcmp(r->counters_note, "cycles: no PMU") && !strcmp(r->key.corun_mode, ""));
    CHECK(r->timestamp > 1e9 && isnan(r->slowdown));
  }
  ob_db_profiles_free(ps);
  fl = (ob_db_profile_filter){.sweep = "corun"};
  CHECK(ob_db_query_profiles(db, &fl, &ps) == OB_OK && ps && ps->n == 2);
  for (int64_t i = 0; ps && i < ps->n; i++)
    CHECK(!strcmp(ps->p[i].key.corun_workload, DENSE) && ps->p[i].slowdown == 2);
  ob_db_profiles_free(ps);

  /* the dataset */
  int64_t n = 0;
  CHECK(ob_db_export_profiles(db, NULL, "csv", path_in("p.csv"), &n) == OB_OK && n == 7);
  FILE *fp = fopen(path_in("p.csv"), "r");
  char line[8192];
  CHECK(fp && fgets(line, sizeof line, fp));
  /* one column per attribute, the union over conv2d and dense, after the point */
  CHECK(strstr(line, "host,workload_key,target,template,config_index,resources,corun_workload,"
                     "corun_mode,pressure_mib,op,threads,cores"));
  CHECK(strstr(line, ",dtype,N,C,H,W,K,R,S,stride_h,M,error_no,"));
  CHECK(strstr(line, "cycles,instructions,l1d_misses,llc_misses,task_clock_ns,counters_note,timestamp\n"));
  int rows = 0;
  bool dense_row = false;
  while (fp && fgets(line, sizeof line, fp)) {
    rows++;
    /* dense has no C, H...: empty fields; M=4, N=32, K=16 */
    if (strstr(line, DENSE) && strstr(line, "float32,32,,,,16,,,,4,")) dense_row = true;
  }
  if (fp) fclose(fp);
  CHECK(rows == 7 && dense_row);
  CHECK(ob_db_export_profiles(db, NULL, "jsonl", path_in("p.jsonl"), &n) == OB_OK && n == 7);
  fp = fopen(path_in("p.jsonl"), "r");
  int objs = 0;
  while (fp && fgets(line, sizeof line, fp)) {
    cJSON *o = cJSON_Parse(line);
    CHECK(cJSON_IsObject(o));
    const cJSON *op = cJSON_GetObjectItem(o, "op"), *nn = cJSON_GetObjectItem(o, "N");
    const cJSON *costs = cJSON_GetObjectItem(o, "costs"), *cyc = cJSON_GetObjectItem(o, "cycles");
    CHECK(cJSON_IsString(op) && cJSON_IsNumber(nn) && cJSON_IsArray(costs) && cJSON_IsNull(cyc));
    if (cJSON_IsString(op) && !strcmp(op->valuestring, "dense"))
      CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "C")) && nn->valuedouble == 32);
    objs++;
    cJSON_Delete(o);
  }
  if (fp) fclose(fp);
  CHECK(objs == 7);
  CHECK(ob_db_export_profiles(db, NULL, "xml", path_in("p.xml"), &n) == OB_ERR_INVALID_ARG);
  CHECK(access(path_in("p.xml"), F_OK) != 0);
  /* never over the database */
  CHECK(ob_db_export_profiles(db, NULL, "csv", path_in("p.db"), &n) == OB_ERR_INVALID_ARG);

  /* host limits */
  ob_db_host_limit l = {.host = "h1", .name = "fma_peak", .isa = "avx512", .threads = 1,
                        .value = 150, .unit = "GFLOP/s", .verified = true, .note = "vfmadd: 24 of 24"};
  CHECK(ob_db_put_host_limit(db, &l) == OB_OK);
  l.value = 151; /* measured again: replaced */
  CHECK(ob_db_put_host_limit(db, &l) == OB_OK);
  ob_db_host_limit bw = {.host = "h1", .name = "mem_triad", .threads = 2, .bytes = 3e9,
                         .value = 20, .unit = "GB/s"};
  CHECK(ob_db_put_host_limit(db, &bw) == OB_OK);
  ob_db_host_limit zero = bw;
  zero.value = 0;
  CHECK(ob_db_put_host_limit(db, &zero) == OB_ERR_INVALID_ARG);
  ob_db_host_limits *ls = NULL;
  CHECK(ob_db_get_host_limits(db, "h1", &ls) == OB_OK && ls && ls->n == 2);
  if (ls && ls->n == 2) {
    CHECK(!strcmp(ls->l[0].name, "fma_peak") && ls->l[0].value == 151 && ls->l[0].verified);
    CHECK(!strcmp(ls->l[1].name, "mem_triad") && !strcmp(ls->l[1].isa, "") && ls->l[1].bytes == 3e9);
  }
  ob_db_host_limits_free(ls);
  CHECK(ob_db_get_host_limits(db, "h2", &ls) == OB_OK && ls && ls->n == 0);
  ob_db_host_limits_free(ls);

  /* tuning runs */
  ob_db_key key = {.host = "h1", .workload = CONV, .target = "llvm -mcpu=native",
                   .resources = "threads=1;cores=0", .tmpl = "t.x86"};
  int64_t id1 = 0, id2 = 0;
  CHECK(ob_db_begin_tuning_run(db, &key, "random", &id1) == OB_OK && id1 > 0);
  CHECK(ob_db_end_tuning_run(db, id1, 16) == OB_OK);
  CHECK(ob_db_begin_tuning_run(db, &key, "xgb", &id2) == OB_OK && id2 > id1);
  ob_db_tuning_runs *rs = NULL;
  CHECK(ob_db_get_tuning_runs(db, NULL, &rs) == OB_OK && rs && rs->n == 2);
  if (rs && rs->n == 2) {
    CHECK(!strcmp(rs->r[0].tuner, "random") && rs->r[0].trials == 16 && rs->r[0].ended >= rs->r[0].started);
    CHECK(!strcmp(rs->r[1].tuner, "xgb") && isnan(rs->r[1].ended)); /* still running */
  }
  ob_db_tuning_runs_free(rs);
  ob_db_close(db);

  /* read-only: queries work, writes are refused */
  CHECK(ob_db_open(ctx, path_in("p.db"), OB_DB_READONLY, &db) == OB_OK && db);
  CHECK(db && ob_db_query_profiles(db, NULL, &ps) == OB_OK && ps && ps->n == 7);
  ob_db_profiles_free(ps);
  CHECK(db && ob_db_put_profile(db, &p, 0, NULL) == OB_ERR_INVALID_ARG);
  ob_db_close(db);
}

static int exec_raw(const char *path, const char *sql) {
  sqlite3 *raw = NULL;
  int rc = sqlite3_open(path, &raw);
  if (rc == SQLITE_OK) rc = sqlite3_exec(raw, sql, NULL, NULL, NULL);
  sqlite3_close(raw);
  return rc;
}

static char *query_raw(const char *path, const char *sql) {
  sqlite3 *raw = NULL;
  sqlite3_stmt *q = NULL;
  char *v = NULL;
  if (sqlite3_open(path, &raw) == SQLITE_OK && sqlite3_prepare_v2(raw, sql, -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
    v = strdup((const char *)sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return v;
}

/* A version-2 file: made by this build, then the version-3 tables dropped
 * and the version set back, which is what opbench before the profiler
 * wrote. */
static void test_upgrade(void) {
  const char *path = path_in("v2.db");
  ob_db *db = NULL;
  CHECK(ob_db_open(ctx, path, 0, &db) == OB_OK);
  ob_db_close(db);
  CHECK(exec_raw(path, "DROP TABLE profiles; DROP TABLE host_limits; DROP TABLE tuning_runs;"
                       "UPDATE meta SET value = '2' WHERE key = 'schema_version';"
                       "INSERT INTO hosts(fingerprint, first_seen, last_seen) VALUES ('old', 1, 1);") == SQLITE_OK);
  /* read-only: read as it is, no profiles, nothing written */
  CHECK(ob_db_open(ctx, path, OB_DB_READONLY, &db) == OB_OK && db);
  ob_db_profiles *ps = NULL;
  CHECK(db && ob_db_query_profiles(db, NULL, &ps) == OB_OK && ps && ps->n == 0);
  ob_db_profiles_free(ps);
  bool found = true;
  ob_db_profile p = point(CONV, 1, NULL, NULL, 0, 1e-4);
  CHECK(db && ob_db_get_profile(db, &p.key, &found, NULL) == OB_OK && !found);
  ob_db_host_limits *ls = NULL;
  CHECK(db && ob_db_get_host_limits(db, NULL, &ls) == OB_OK && ls && ls->n == 0);
  ob_db_host_limits_free(ls);
  ob_db_close(db);
  char *v = query_raw(path, "SELECT value FROM meta WHERE key = 'schema_version'");
  CHECK(v && !strcmp(v, "2"));
  free(v);
  /* writable: upgraded in place, the old rows kept */
  CHECK(ob_db_open(ctx, path, 0, &db) == OB_OK && db);
  CHECK(db && ob_db_put_profile(db, &p, 0, NULL) == OB_OK);
  ob_db_close(db);
  v = query_raw(path, "SELECT value FROM meta WHERE key = 'schema_version'");
  CHECK(v && !strcmp(v, "3"));
  free(v);
  v = query_raw(path, "SELECT count(*) FROM hosts WHERE fingerprint = 'old'");
  CHECK(v && !strcmp(v, "1"));
  free(v);
  v = query_raw(path, "SELECT value FROM meta WHERE key = 'upgraded_to_3_at'");
  CHECK(v && strlen(v) > 10);
  free(v);
  /* a version-3 file that lost a table is refused by name */
  CHECK(exec_raw(path, "DROP TABLE host_limits") == SQLITE_OK);
  CHECK(ob_db_open(ctx, path, 0, &db) == OB_ERR_IO);
  CHECK(strstr(ob_ctx_errmsg(ctx), "lacks the table 'host_limits'"));
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  snprintf(dir, sizeof dir, "/tmp/obdbprof-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  test_points();
  test_upgrade();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
