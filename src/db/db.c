/* db.c: what every back end shares: the schema text, opening (which back
 * end a path names), the statement cache, transactions, and the host and
 * workload tables. The ob_db handle owns its connection and every
 * statement; ob_db_close releases them all. The back ends (SQLite files,
 * PostgreSQL servers) are in backend_sqlite.c and backend_pg.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "db/db_impl.h"

/* Version 2's timing columns of measurements and measurements_history, in
 * the order of OB_MEAS_COLS' tail. flush and min_repeat_ms NULL: unknown
 * protocol (imported records, rows of version-1 files). */
#define OB_DB_TIMING_COLS_DEF                                                       \
  " repeat INTEGER NOT NULL DEFAULT 0, min_repeat_ms REAL, flush INTEGER,"          \
  " timer_overhead_s REAL, below_resolution INTEGER NOT NULL DEFAULT 0,"            \
  " noisy INTEGER NOT NULL DEFAULT 0, extra_repeats INTEGER NOT NULL DEFAULT 0,"      \
  " emulated INTEGER NOT NULL DEFAULT 0"

/* Version 1 -> 2, in one transaction. Version 1 kept every repeat it took,
 * so a row's repeat count is the length of its cost list. */
const char ob_db_migrate_v2_sql[] =
    "ALTER TABLE measurements ADD COLUMN repeat INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements ADD COLUMN min_repeat_ms REAL;"
    "ALTER TABLE measurements ADD COLUMN flush INTEGER;"
    "ALTER TABLE measurements ADD COLUMN timer_overhead_s REAL;"
    "ALTER TABLE measurements ADD COLUMN below_resolution INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements ADD COLUMN noisy INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements ADD COLUMN extra_repeats INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements ADD COLUMN emulated INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements_history ADD COLUMN repeat INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements_history ADD COLUMN min_repeat_ms REAL;"
    "ALTER TABLE measurements_history ADD COLUMN flush INTEGER;"
    "ALTER TABLE measurements_history ADD COLUMN timer_overhead_s REAL;"
    "ALTER TABLE measurements_history ADD COLUMN below_resolution INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements_history ADD COLUMN noisy INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements_history ADD COLUMN extra_repeats INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE measurements_history ADD COLUMN emulated INTEGER NOT NULL DEFAULT 0;"
    "UPDATE measurements SET repeat = json_array_length(costs) WHERE json_valid(costs);"
    "UPDATE measurements_history SET repeat = json_array_length(costs) WHERE json_valid(costs);"
    "UPDATE meta SET value = '2' WHERE key = 'schema_version';"
    "INSERT INTO meta(key, value) VALUES ('upgraded_to_2_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))"
    " ON CONFLICT(key) DO UPDATE SET value = excluded.value;";

/* The current schema (version 3: this, then ob_db_schema_v3). Measurement keys lead with the workload
 * so that "all records of a workload" and "measured configs of a task" are
 * prefix scans; best queries use a partial index over error-free trials
 * ordered by median. The timing columns after `timestamp` came with
 * version 2 (k_migrate_v2 adds them to a version-1 file the same way). */
const char ob_db_schema_sql[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE hosts("
    " fingerprint TEXT PRIMARY KEY,"
    " cpu_model TEXT NOT NULL DEFAULT '', isa TEXT NOT NULL DEFAULT '',"
    " ncores INTEGER NOT NULL DEFAULT 0, npus INTEGER NOT NULL DEFAULT 0,"
    " l1d_bytes INTEGER NOT NULL DEFAULT 0, l2_bytes INTEGER NOT NULL DEFAULT 0,"
    " l3_bytes INTEGER NOT NULL DEFAULT 0, vector_bits INTEGER NOT NULL DEFAULT 0,"
    " os TEXT NOT NULL DEFAULT '', compiler TEXT NOT NULL DEFAULT '',"
    " compiler_version TEXT NOT NULL DEFAULT '',"
    " first_seen REAL NOT NULL, last_seen REAL NOT NULL);"
    "CREATE TABLE workloads("
    " key TEXT PRIMARY KEY, op TEXT NOT NULL, attrs TEXT NOT NULL DEFAULT '{}',"
    " flops REAL, autotvm_args TEXT, first_seen REAL NOT NULL);"
    "CREATE INDEX workloads_op ON workloads(op);"
    "CREATE TABLE configs("
    " workload_key TEXT NOT NULL, template TEXT NOT NULL, config_index INTEGER NOT NULL,"
    " entity TEXT NOT NULL,"
    " PRIMARY KEY(workload_key, template, config_index)) WITHOUT ROWID;"
    "CREATE TABLE measurements("
    " id INTEGER PRIMARY KEY,"
    " host TEXT NOT NULL, workload_key TEXT NOT NULL, target TEXT NOT NULL,"
    " resources TEXT NOT NULL, template TEXT NOT NULL, config_index INTEGER NOT NULL,"
    " error_no INTEGER NOT NULL, error_msg TEXT NOT NULL DEFAULT '',"
    " median_s REAL, mean_s REAL, cv REAL, costs TEXT NOT NULL DEFAULT '[]',"
    " number INTEGER NOT NULL DEFAULT 0, build_s REAL, run_s REAL,"
    " nthreads INTEGER NOT NULL DEFAULT 0, cores TEXT, timestamp REAL NOT NULL,"
    OB_DB_TIMING_COLS_DEF ","
    " UNIQUE(workload_key, template, host, target, resources, config_index));"
    "CREATE INDEX measurements_best ON measurements"
    " (workload_key, host, target, resources, median_s, config_index)"
    " WHERE error_no = 0 AND median_s IS NOT NULL;"
    "CREATE INDEX measurements_time ON measurements(timestamp);"
    "CREATE TABLE measurements_history("
    " id INTEGER PRIMARY KEY,"
    " host TEXT NOT NULL, workload_key TEXT NOT NULL, target TEXT NOT NULL,"
    " resources TEXT NOT NULL, template TEXT NOT NULL, config_index INTEGER NOT NULL,"
    " error_no INTEGER NOT NULL, error_msg TEXT NOT NULL DEFAULT '',"
    " median_s REAL, mean_s REAL, cv REAL, costs TEXT NOT NULL DEFAULT '[]',"
    " number INTEGER NOT NULL DEFAULT 0, build_s REAL, run_s REAL,"
    " nthreads INTEGER NOT NULL DEFAULT 0, cores TEXT, timestamp REAL NOT NULL,"
    " replaced_at REAL NOT NULL," OB_DB_TIMING_COLS_DEF ");"
    "CREATE INDEX measurements_history_key ON measurements_history"
    " (workload_key, template, host, target, resources, config_index);";

/* version 2's six, then version 3's three (ob_db_schema_v3) */
const char *const ob_db_schema_tables[] = {"meta",         "hosts",
                                           "workloads",    "configs",
                                           "measurements", "measurements_history",
                                           "profiles",     "host_limits",
                                           "tuning_runs"};
const int ob_db_schema_ntables = sizeof ob_db_schema_tables / sizeof ob_db_schema_tables[0];

ob_status ob_db_schema_meta(ob_db *db) {
  char now[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
  ob_dbstmt *st = NULL;
  int rc = db->be->prepare(db,
                           "INSERT INTO meta(key, value) VALUES ('schema_version', ?1),"
                           " ('created_by', 'opbench'), ('created_at', ?2)",
                           &st);
  if (rc == 0) {
    char v[16];
    snprintf(v, sizeof v, "%d", OB_DB_SCHEMA_VERSION);
    ob_db_bind_text(st, 1, v);
    ob_db_bind_text(st, 2, now);
    rc = ob_db_step(st);
  }
  ob_db_finalize(st);
  return rc == OB_DB_DONE ? OB_OK : ob_db_sqlfail(db, rc, "creating the schema");
}

/* Version 2 -> 3 (SQLite only, as 1 -> 2): the profiler's tables
 * (ob_db_schema_v3, profiles.c), empty, then this. */
const char ob_db_migrate_v3_sql[] =
    "UPDATE meta SET value = '3' WHERE key = 'schema_version';"
    "INSERT INTO meta(key, value) VALUES ('upgraded_to_3_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))"
    " ON CONFLICT(key) DO UPDATE SET value = excluded.value;";

#define OB_MEAS_COLS                                                                   \
  "host, workload_key, target, resources, template, config_index, error_no, error_msg, " \
  "median_s, mean_s, cv, costs, number, build_s, run_s, nthreads, cores, timestamp, "    \
  "repeat, min_repeat_ms, flush, timer_overhead_s, below_resolution, noisy, extra_repeats, " \
  "emulated"
#define OB_MEAS_VALUES                                                                   \
  "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, " \
  "?20, ?21, ?22, ?23, ?24, ?25, ?26"
#define OB_MEAS_KEY_WHERE \
  "workload_key = ?2 AND template = ?5 AND host = ?1 AND target = ?3 AND resources = ?4"

static const char *const k_stmt_sql[OB_DBS_COUNT] = {
    [OB_DBS_BEGIN] = "BEGIN IMMEDIATE",
    [OB_DBS_COMMIT] = "COMMIT",
    [OB_DBS_ROLLBACK] = "ROLLBACK",
    [OB_DBS_SAVEPOINT] = "SAVEPOINT ob_txn",
    [OB_DBS_RELEASE] = "RELEASE ob_txn",
    [OB_DBS_ROLLBACK_TO] = "ROLLBACK TO ob_txn",
    [OB_DBS_HOST_PLACEHOLDER] = "INSERT INTO hosts(fingerprint, first_seen, last_seen) VALUES (?1, ?2, ?2)"
                         " ON CONFLICT(fingerprint) DO NOTHING",
    [OB_DBS_HOST_PUT] =
        "INSERT INTO hosts(fingerprint, cpu_model, isa, ncores, npus, l1d_bytes, l2_bytes, l3_bytes,"
        " vector_bits, os, compiler, compiler_version, first_seen, last_seen)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, coalesce(?11, ''), coalesce(?12, ''), ?13, ?13)"
        " ON CONFLICT(fingerprint) DO UPDATE SET cpu_model = excluded.cpu_model, isa = excluded.isa,"
        " ncores = excluded.ncores, npus = excluded.npus, l1d_bytes = excluded.l1d_bytes,"
        " l2_bytes = excluded.l2_bytes, l3_bytes = excluded.l3_bytes,"
        " vector_bits = excluded.vector_bits, os = excluded.os,"
        " compiler = coalesce(?11, hosts.compiler),"
        " compiler_version = coalesce(?12, hosts.compiler_version), last_seen = excluded.last_seen",
    [OB_DBS_HOST_GET] =
        "SELECT cpu_model, isa, ncores, npus, l1d_bytes, l2_bytes, l3_bytes, vector_bits, os,"
        " compiler, compiler_version, first_seen, last_seen FROM hosts WHERE fingerprint = ?1",
    [OB_DBS_WL_PLACEHOLDER] = "INSERT INTO workloads(key, op, attrs, first_seen) VALUES (?1, ?2, '{}', ?3)"
                       " ON CONFLICT(key) DO NOTHING",
    /* ?7: refresh (the caller describes the workload authoritatively);
     * otherwise only facts still missing are filled in. */
    [OB_DBS_WL_PUT] =
        "INSERT INTO workloads(key, op, attrs, flops, autotvm_args, first_seen)"
        " VALUES (?1, ?2, coalesce(?3, '{}'), ?4, ?5, ?6)"
        " ON CONFLICT(key) DO UPDATE SET"
        " op = CASE WHEN ?7 <> 0 OR (workloads.attrs = '{}' AND ?3 IS NOT NULL AND ?3 <> '{}')"
        "  THEN excluded.op ELSE workloads.op END,"
        " attrs = CASE WHEN ?3 IS NOT NULL AND (?7 <> 0 OR workloads.attrs = '{}') THEN ?3"
        "  ELSE workloads.attrs END,"
        " flops = CASE WHEN ?7 <> 0 THEN coalesce(excluded.flops, workloads.flops)"
        "  ELSE coalesce(workloads.flops, excluded.flops) END,"
        " autotvm_args = coalesce(workloads.autotvm_args, excluded.autotvm_args)",
    [OB_DBS_WL_GET] = "SELECT op, attrs, flops, autotvm_args FROM workloads WHERE key = ?1",
    [OB_DBS_CONFIG_PUT] =
        "INSERT INTO configs(workload_key, template, config_index, entity) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT(workload_key, template, config_index) DO UPDATE SET entity = excluded.entity",
    [OB_DBS_MEAS_INSERT] = "INSERT INTO measurements(" OB_MEAS_COLS ") VALUES (" OB_MEAS_VALUES
                           ") ON CONFLICT DO NOTHING",
    /* an upsert rather than INSERT OR REPLACE: both back ends speak it */
    [OB_DBS_MEAS_REPLACE] = "INSERT INTO measurements(" OB_MEAS_COLS ") VALUES (" OB_MEAS_VALUES
                            ") ON CONFLICT(workload_key, template, host, target, resources,"
                            " config_index) DO UPDATE SET error_no = excluded.error_no,"
                            " error_msg = excluded.error_msg, median_s = excluded.median_s,"
                            " mean_s = excluded.mean_s, cv = excluded.cv, costs = excluded.costs,"
                            " number = excluded.number, build_s = excluded.build_s,"
                            " run_s = excluded.run_s, nthreads = excluded.nthreads,"
                            " cores = excluded.cores, timestamp = excluded.timestamp,"
                            " repeat = excluded.repeat, min_repeat_ms = excluded.min_repeat_ms,"
                            " flush = excluded.flush, timer_overhead_s = excluded.timer_overhead_s,"
                            " below_resolution = excluded.below_resolution,"
                            " noisy = excluded.noisy, extra_repeats = excluded.extra_repeats,"
                            " emulated = excluded.emulated",
    [OB_DBS_MEAS_HISTORY] = "INSERT INTO measurements_history(" OB_MEAS_COLS ", replaced_at)"
                            " SELECT " OB_MEAS_COLS ", ?27 FROM measurements WHERE " OB_MEAS_KEY_WHERE
                            " AND config_index = ?6",
    [OB_DBS_MEAS_HAS] =
        "SELECT 1 FROM measurements WHERE " OB_MEAS_KEY_WHERE " AND config_index = ?6",
    [OB_DBS_MEAS_MEASURED] =
        "SELECT config_index FROM measurements WHERE " OB_MEAS_KEY_WHERE " ORDER BY config_index",
    [OB_DBS_COUNT_HOSTS] = "SELECT count(*) FROM hosts",
    [OB_DBS_COUNT_CONFIGS] = "SELECT count(*) FROM configs",
    [OB_DBS_COUNT_HISTORY] = "SELECT count(*) FROM measurements_history",
};

/* ---- errors ------------------------------------------------------------------ */

ob_status ob_db_sqlfail(ob_db *db, int rc, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (rc == OB_DB_NOMEM)
    return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': %s: out of memory", db->path, what);
  return db->be->fail(db, rc, what);
}

/* ---- statements ------------------------------------------------------------------ */

ob_status ob_db_prepare(ob_db *db, const char *sql, ob_dbstmt **out) {
  *out = NULL;
  int rc = db->be->prepare(db, sql, out);
  if (rc) {
    *out = NULL;
    return ob_db_sqlfail(db, rc, "preparing '%.120s'", sql);
  }
  return OB_OK;
}

ob_status ob_db_stmt(ob_db *db, ob_db_stmt_id id, ob_dbstmt **out) {
  OB_ASSERT(id >= 0 && id < OB_DBS_COUNT && k_stmt_sql[id]);
  if (!db->stmt[id]) {
    ob_status s = ob_db_prepare(db, k_stmt_sql[id], &db->stmt[id]);
    if (s) return s;
  }
  ob_db_reset(db->stmt[id]);
  *out = db->stmt[id];
  return OB_OK;
}

ob_status ob_db_stmt_shape(ob_db *db, unsigned shape, const char *sql, ob_dbstmt **out) {
  for (int i = 0; i < db->nq; i++) {
    if (db->qcache[i].shape != shape) continue;
    ob_db_reset(db->qcache[i].st);
    *out = db->qcache[i].st;
    return OB_OK;
  }
  ob_dbstmt *st = NULL;
  ob_status s = ob_db_prepare(db, sql, &st);
  if (s) return s;
  if (db->nq == OB_DB_QCACHE) { /* full: drop the oldest shape */
    ob_db_finalize(db->qcache[0].st);
    memmove(db->qcache, db->qcache + 1, sizeof db->qcache[0] * (OB_DB_QCACHE - 1));
    db->nq--;
  }
  db->qcache[db->nq].shape = shape;
  db->qcache[db->nq].st = st;
  db->nq++;
  *out = st;
  return OB_OK;
}

void ob_db_bind_text(ob_dbstmt *st, int i, const char *s) {
  if (s) st->db->be->bind_text(st, i, s);
  else st->db->be->bind_null(st, i);
}

void ob_db_bind_real(ob_dbstmt *st, int i, double v) {
  if (isfinite(v)) st->db->be->bind_double(st, i, v);
  else st->db->be->bind_null(st, i);
}

double ob_db_col_real(ob_dbstmt *st, int i) {
  return st->db->be->col_null(st, i) ? NAN : st->db->be->col_double(st, i);
}

const char *ob_db_col_text(ob_dbstmt *st, int i) { return st->db->be->col_text(st, i); }

double ob_db_unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ob_db_describe(const ob_db_record *rec, char *out, size_t cap) {
  snprintf(out, cap, "host %s, workload %s, target '%s', resources '%s', template %s, config %llu",
           rec->host ? rec->host : "(null)", rec->workload ? rec->workload : "(null)",
           rec->target ? rec->target : "", rec->resources ? rec->resources : "",
           rec->tmpl ? rec->tmpl : "(null)", (unsigned long long)rec->config_index);
}

/* Runs a statement expected to return no rows (or to ignore them). */
static ob_status run_simple(ob_db *db, ob_db_stmt_id id, const char *what) {
  ob_dbstmt *st;
  ob_status s = ob_db_stmt(db, id, &st);
  if (s) return s;
  int rc;
  while ((rc = ob_db_step(st)) == OB_DB_ROW) {
  }
  ob_db_reset(st);
  return rc == OB_DB_DONE ? OB_OK : ob_db_sqlfail(db, rc, "%s", what);
}

/* ---- transactions --------------------------------------------------------------- */

ob_status ob_db_txn_begin(ob_db *db) {
  ob_status s;
  bool outer_begin = db->txn_depth == 0 && !db->be->in_txn(db);
  if (outer_begin)
    s = run_simple(db, OB_DBS_BEGIN, "starting a write transaction");
  else
    s = run_simple(db, OB_DBS_SAVEPOINT, "starting a savepoint");
  if (s) return s;
  if (db->txn_depth == 0) db->txn_outer_savepoint = !outer_begin;
  db->txn_depth++;
  return OB_OK;
}

/* A level is a savepoint when a transaction was already open beneath it:
 * that is the case for every level but the first when the caller opened
 * none, and for every level when the caller did. Since the outermost level
 * is the only one that can be BEGIN, it is enough to know whether it was. */
static bool txn_is_savepoint(ob_db *db) {
  return db->txn_depth > 1 || db->txn_outer_savepoint;
}

ob_status ob_db_txn_commit(ob_db *db) {
  OB_ASSERT(db->txn_depth > 0);
  ob_status s = txn_is_savepoint(db) ? run_simple(db, OB_DBS_RELEASE, "releasing a savepoint")
                                     : run_simple(db, OB_DBS_COMMIT, "committing");
  if (s) {
    ob_db_txn_rollback(db);
    return s;
  }
  db->txn_depth--;
  return OB_OK;
}

void ob_db_txn_rollback(ob_db *db) {
  OB_ASSERT(db->txn_depth > 0);
  /* Keep the error message of the failure that led here. */
  ob_ctx *ctx = db->ctx;
  db->ctx = NULL;
  if (txn_is_savepoint(db)) {
    run_simple(db, OB_DBS_ROLLBACK_TO, "rolling back to a savepoint");
    run_simple(db, OB_DBS_RELEASE, "releasing a savepoint");
  } else if (db->be->in_txn(db)) {
    run_simple(db, OB_DBS_ROLLBACK, "rolling back");
  }
  db->ctx = ctx;
  db->txn_depth--;
}

/* ---- open / close ------------------------------------------------------------------ */

bool ob_db_is_url(const char *path) {
  return path && (!strncmp(path, "postgresql://", 13) || !strncmp(path, "postgres://", 11));
}

ob_status ob_db_open(ob_ctx *ctx, const char *path, unsigned flags, ob_db **out) {
  ob_db_open_opts o = {.flags = flags, .busy_timeout_ms = OB_DB_DEFAULT_BUSY_MS};
  return ob_db_open_ex(ctx, path, &o, out);
}

ob_status ob_db_open_ex(ob_ctx *ctx, const char *path, const ob_db_open_opts *opts, ob_db **out) {
  OB_ASSERT(out);
  *out = NULL;
  if (!path || !*path) return ob_fail(ctx, OB_ERR_INVALID_ARG, "database path is empty");
  unsigned flags = opts ? opts->flags : 0;
  int busy = opts && opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : OB_DB_DEFAULT_BUSY_MS;
  ob_db *db = calloc(1, sizeof *db);
  if (!db) return ob_fail(ctx, OB_ERR_NOMEM, "opening database '%s': out of memory", path);
  db->ctx = ctx;
  db->busy_ms = busy;
  db->readonly = flags & OB_DB_READONLY;
  db->be = ob_db_is_url(path) ? &ob_db_pg_backend : &ob_db_sqlite_backend;
  ob_status s = OB_OK;
  if (db->be == &ob_db_pg_backend) {
    /* messages and ob_db_path show the URL without its password */
    if (!(db->conninfo = strdup(path)) || !(db->path = ob_db_url_redact(path)))
      s = ob_fail(ctx, OB_ERR_NOMEM, "opening database: out of memory");
  } else if (!(db->path = strdup(path))) {
    s = ob_fail(ctx, OB_ERR_NOMEM, "opening database '%s': out of memory", path);
  }
  if (!s) s = db->be->open(db, flags);
  if (s) {
    ob_db_close(db);
    return s;
  }
  *out = db;
  return OB_OK;
}

void ob_db_close(ob_db *db) {
  if (!db) return;
  for (int i = 0; i < OB_DBS_COUNT; i++) ob_db_finalize(db->stmt[i]);
  for (int i = 0; i < db->nq; i++) ob_db_finalize(db->qcache[i].st);
  if (db->be) db->be->close(db);
  free(db->path);
  free(db->conninfo);
  free(db);
}

const char *ob_db_path(const ob_db *db) { return db->path; }

const char *ob_db_backend_name(const ob_db *db) { return db->be->name; }

void ob_db_set_busy_timeout(ob_db *db, int ms) {
  OB_ASSERT(db);
  db->busy_ms = ms > 0 ? ms : 0;
  db->be->set_busy_timeout(db, db->busy_ms);
}

ob_ctx *ob_db_ctx(const ob_db *db) { return db->ctx; }

ob_status ob_db_check(ob_db *db) {
  OB_ASSERT(db);
  return db->be->check(db);
}

ob_status ob_db_exec(ob_db *db, const char *sql) {
  OB_ASSERT(db && sql);
  int rc = db->be->exec(db, sql);
  return rc ? ob_db_sqlfail(db, rc, "running '%.200s'", sql) : OB_OK;
}

/* ---- hosts ------------------------------------------------------------------------ */

ob_status ob_db_put_host(ob_db *db, const ob_host *h, const char *compiler,
                         const char *compiler_version) {
  OB_ASSERT(db && h);
  if (!h->fingerprint[0])
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "database '%s': host '%s' has no fingerprint (use ob_host_detect)", db->path,
                   h->cpu_model);
  ob_dbstmt *st;
  ob_status s = ob_db_stmt(db, OB_DBS_HOST_PUT, &st);
  if (s) return s;
  ob_db_bind_text(st, 1, h->fingerprint);
  ob_db_bind_text(st, 2, h->cpu_model);
  ob_db_bind_text(st, 3, h->isa);
  ob_db_bind_int(st, 4, h->ncores);
  ob_db_bind_int(st, 5, h->npus);
  ob_db_bind_int(st, 6, h->l1d_bytes);
  ob_db_bind_int(st, 7, h->l2_bytes);
  ob_db_bind_int(st, 8, h->l3_bytes);
  ob_db_bind_int(st, 9, h->vector_bits);
  ob_db_bind_text(st, 10, h->os);
  ob_db_bind_text(st, 11, compiler);
  ob_db_bind_text(st, 12, compiler_version);
  ob_db_bind_real(st, 13, ob_db_unix_now());
  int rc = ob_db_step(st);
  ob_db_reset(st);
  if (rc != OB_DB_DONE) return ob_db_sqlfail(db, rc, "storing host %s", h->fingerprint);
  return OB_OK;
}

static void copy_col(char *dst, size_t cap, ob_dbstmt *st, int i) {
  const char *v = ob_db_col_text(st, i);
  snprintf(dst, cap, "%s", v ? v : "");
}

ob_status ob_db_get_host(ob_db *db, const char *fingerprint, ob_db_host *out) {
  OB_ASSERT(db && fingerprint && out);
  memset(out, 0, sizeof *out);
  ob_dbstmt *st;
  ob_status s = ob_db_stmt(db, OB_DBS_HOST_GET, &st);
  if (s) return s;
  ob_db_bind_text(st, 1, fingerprint);
  int rc = ob_db_step(st);
  if (rc == OB_DB_ROW) {
    ob_host *h = &out->host;
    copy_col(h->cpu_model, sizeof h->cpu_model, st, 0);
    copy_col(h->isa, sizeof h->isa, st, 1);
    h->ncores = (int)ob_db_col_int(st, 2);
    h->npus = (int)ob_db_col_int(st, 3);
    h->l1d_bytes = ob_db_col_int(st, 4);
    h->l2_bytes = ob_db_col_int(st, 5);
    h->l3_bytes = ob_db_col_int(st, 6);
    h->vector_bits = (int)ob_db_col_int(st, 7);
    copy_col(h->os, sizeof h->os, st, 8);
    snprintf(h->fingerprint, sizeof h->fingerprint, "%s", fingerprint);
    copy_col(out->compiler, sizeof out->compiler, st, 9);
    copy_col(out->compiler_version, sizeof out->compiler_version, st, 10);
    out->first_seen = ob_db_col_real(st, 11);
    out->last_seen = ob_db_col_real(st, 12);
    s = OB_OK;
  } else if (rc == OB_DB_DONE) {
    s = ob_fail(db->ctx, OB_ERR_NOT_FOUND, "database '%s' has no host with fingerprint '%s'",
                db->path, fingerprint);
  } else {
    s = ob_db_sqlfail(db, rc, "reading host %s", fingerprint);
  }
  ob_db_reset(st);
  return s;
}

/* ---- workloads -------------------------------------------------------------------- */

ob_status ob_db_put_workload_locked(ob_db *db, const char *key, const char *op,
                                    const char *attrs_json, double flops,
                                    const char *autotvm_args, bool refresh) {
  ob_dbstmt *st;
  ob_status s = ob_db_stmt(db, OB_DBS_WL_PUT, &st);
  if (s) return s;
  ob_db_bind_text(st, 1, key);
  ob_db_bind_text(st, 2, op);
  ob_db_bind_text(st, 3, attrs_json);
  ob_db_bind_real(st, 4, flops > 0 ? flops : NAN);
  ob_db_bind_text(st, 5, autotvm_args);
  ob_db_bind_real(st, 6, ob_db_unix_now());
  ob_db_bind_int(st, 7, refresh);
  int rc = ob_db_step(st);
  ob_db_reset(st);
  if (rc != OB_DB_DONE) return ob_db_sqlfail(db, rc, "storing workload %s", key);
  return OB_OK;
}

ob_status ob_db_put_workload(ob_db *db, const char *key, const char *op,
                             const char *attrs_json, double flops) {
  OB_ASSERT(db);
  if (!key || !*key || !op || !*op)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "database '%s': a workload needs a key and an operator (got '%s', '%s')",
                   db->path, key ? key : "(null)", op ? op : "(null)");
  if (attrs_json) {
    cJSON *j = cJSON_Parse(attrs_json);
    bool obj = cJSON_IsObject(j);
    cJSON_Delete(j);
    if (!obj)
      return ob_fail(db->ctx, OB_ERR_PARSE,
                     "database '%s': attributes of workload %s are not a JSON object: %.200s",
                     db->path, key, attrs_json);
  }
  return ob_db_put_workload_locked(db, key, op, attrs_json, flops, NULL, true);
}
