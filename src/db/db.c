/* db.c: opening the database (schema creation, version and format checks,
 * WAL), the statement cache, transactions, SQLite error mapping, and the
 * host and workload tables. The ob_db handle owns its connection and every
 * statement; ob_db_close releases them all. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "db/db_impl.h"

#define OB_DB_APPLICATION_ID 0x6f706230 /* "opb0", PRAGMA application_id */

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
static const char k_migrate_v2[] =
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
static const char k_schema[] =
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
    " (workload_key, template, host, target, resources, config_index);"
    "INSERT INTO meta(key, value) VALUES ('schema_version', '3'), ('created_by', 'opbench'),"
    " ('created_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'));";

/* Version 2 -> 3: the profiler's tables (ob_db_schema_v3, profiles.c), empty. */
static const char k_migrate_v3[] =
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
        " op = CASE WHEN ?7 OR (workloads.attrs = '{}' AND ?3 IS NOT NULL AND ?3 <> '{}')"
        "  THEN excluded.op ELSE workloads.op END,"
        " attrs = CASE WHEN ?3 IS NOT NULL AND (?7 OR workloads.attrs = '{}') THEN ?3"
        "  ELSE workloads.attrs END,"
        " flops = CASE WHEN ?7 THEN coalesce(excluded.flops, workloads.flops)"
        "  ELSE coalesce(workloads.flops, excluded.flops) END,"
        " autotvm_args = coalesce(workloads.autotvm_args, excluded.autotvm_args)",
    [OB_DBS_WL_GET] = "SELECT op, attrs, flops, autotvm_args FROM workloads WHERE key = ?1",
    [OB_DBS_CONFIG_PUT] =
        "INSERT INTO configs(workload_key, template, config_index, entity) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT(workload_key, template, config_index) DO UPDATE SET entity = excluded.entity",
    [OB_DBS_MEAS_INSERT] = "INSERT INTO measurements(" OB_MEAS_COLS ") VALUES (" OB_MEAS_VALUES
                           ") ON CONFLICT DO NOTHING",
    [OB_DBS_MEAS_REPLACE] = "INSERT OR REPLACE INTO measurements(" OB_MEAS_COLS
                            ") VALUES (" OB_MEAS_VALUES ")",
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
  const char *msg = db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc);
  if (!msg || !strcmp(msg, "not an error")) msg = sqlite3_errstr(rc);
  switch (rc & 0xff) {
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return ob_fail(db->ctx, OB_ERR_BUSY,
                   "database '%s' is locked by another connection (waited %.1f s): %s: %s",
                   db->path, db->busy_ms / 1000.0, what, msg);
  case SQLITE_NOMEM:
    return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': %s: out of memory", db->path, what);
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return ob_fail(db->ctx, OB_ERR_IO,
                   "database '%s' is not an SQLite database or is corrupt: %s: %s (SQLite code %d)",
                   db->path, what, msg, rc);
  default:
    return ob_fail(db->ctx, OB_ERR_IO, "database '%s': %s: %s (SQLite code %d)", db->path, what,
                   msg, rc);
  }
}

/* ---- statements ------------------------------------------------------------------ */

ob_status ob_db_stmt(ob_db *db, ob_db_stmt_id id, sqlite3_stmt **out) {
  OB_ASSERT(id >= 0 && id < OB_DBS_COUNT && k_stmt_sql[id]);
  if (!db->stmt[id]) {
    int rc = sqlite3_prepare_v3(db->sql, k_stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                &db->stmt[id], NULL);
    if (rc != SQLITE_OK) {
      db->stmt[id] = NULL;
      return ob_db_sqlfail(db, rc, "preparing statement %d", (int)id);
    }
  }
  sqlite3_reset(db->stmt[id]);
  sqlite3_clear_bindings(db->stmt[id]);
  *out = db->stmt[id];
  return OB_OK;
}

ob_status ob_db_stmt_shape(ob_db *db, unsigned shape, const char *sql, sqlite3_stmt **out) {
  for (int i = 0; i < db->nq; i++) {
    if (db->qcache[i].shape != shape) continue;
    sqlite3_reset(db->qcache[i].st);
    sqlite3_clear_bindings(db->qcache[i].st);
    *out = db->qcache[i].st;
    return OB_OK;
  }
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
  if (rc != SQLITE_OK) return ob_db_sqlfail(db, rc, "preparing a query");
  if (db->nq == OB_DB_QCACHE) { /* full: drop the oldest shape */
    sqlite3_finalize(db->qcache[0].st);
    memmove(db->qcache, db->qcache + 1, sizeof db->qcache[0] * (OB_DB_QCACHE - 1));
    db->nq--;
  }
  db->qcache[db->nq].shape = shape;
  db->qcache[db->nq].st = st;
  db->nq++;
  *out = st;
  return OB_OK;
}

int ob_db_bind_text(sqlite3_stmt *st, int i, const char *s) {
  return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

int ob_db_bind_real(sqlite3_stmt *st, int i, double v) {
  return isfinite(v) ? sqlite3_bind_double(st, i, v) : sqlite3_bind_null(st, i);
}

double ob_db_col_real(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

const char *ob_db_col_text(sqlite3_stmt *st, int i) {
  return (const char *)sqlite3_column_text(st, i);
}

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
  sqlite3_stmt *st;
  ob_status s = ob_db_stmt(db, id, &st);
  if (s) return s;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
  }
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? OB_OK : ob_db_sqlfail(db, rc, "%s", what);
}

/* ---- transactions --------------------------------------------------------------- */

ob_status ob_db_txn_begin(ob_db *db) {
  ob_status s;
  bool outer_begin = db->txn_depth == 0 && sqlite3_get_autocommit(db->sql);
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
  } else if (!sqlite3_get_autocommit(db->sql)) {
    run_simple(db, OB_DBS_ROLLBACK, "rolling back");
  }
  db->ctx = ctx;
  db->txn_depth--;
}

/* ---- open / close ------------------------------------------------------------------ */

/* One-row, one-column query on fixed SQL (no values to bind). *text gets a
 * malloc'd copy of the value (NULL for SQL NULL or no row). */
static ob_status query_text(ob_db *db, const char *sql, const char *what, char **text) {
  *text = NULL;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return ob_db_sqlfail(db, rc, "%s", what);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const char *v = ob_db_col_text(st, 0);
    if (v && !(*text = strdup(v))) rc = SQLITE_NOMEM;
    else rc = SQLITE_DONE;
  }
  ob_status s = rc == SQLITE_DONE ? OB_OK : ob_db_sqlfail(db, rc, "%s", what);
  sqlite3_finalize(st);
  return s;
}

/* Reads what the file holds: *ntables objects in its schema, and, when it
 * has a meta table, its schema version (else 0). Reading is all it does, so
 * a foreign or newer file is refused before anything is written. */
static ob_status inspect(ob_db *db, int64_t *nobjects, long *version) {
  *nobjects = 0;
  *version = 0;
  char *v = NULL;
  ob_status s = query_text(db, "SELECT count(*) FROM sqlite_master", "reading the schema", &v);
  if (s) return s;
  *nobjects = v ? strtoll(v, NULL, 10) : 0;
  free(v);
  if (*nobjects == 0) return OB_OK;
  s = query_text(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                 "reading the schema", &v);
  if (s) return s;
  bool has_meta = v && !strcmp(v, "1");
  free(v);
  if (!has_meta)
    return ob_fail(db->ctx, OB_ERR_UNSUPPORTED,
                   "database '%s' is an SQLite database but not an opbench database (it has no "
                   "meta table); refusing to change it",
                   db->path);
  s = query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'",
                 "reading the schema version", &v);
  if (s) return s;
  char *end = NULL;
  long ver = v ? strtol(v, &end, 10) : 0;
  bool ok = v && end != v && *end == '\0' && ver >= 1;
  if (!ok) {
    s = ob_fail(db->ctx, OB_ERR_IO, "database '%s' has a malformed schema_version '%s' in its meta table",
                db->path, v ? v : "(missing)");
    free(v);
    return s;
  }
  free(v);
  *version = ver;
  if (ver > OB_DB_SCHEMA_VERSION) return OB_OK; /* refused by the caller, with its version */
  /* Every table of the schema: one dropped by hand or lost to damage would
   * otherwise surface halfway through a run, after the work it costs. */
  /* (confirmed is created when first needed, so it may be missing) */
  static const char *const k_tables[] = {"meta",         "hosts",        "workloads",
                                         "configs",      "measurements", "measurements_history",
                                         "profiles",     "host_limits",  "tuning_runs"};
  size_t ntables = ver >= 3 ? sizeof k_tables / sizeof k_tables[0] : 6; /* version 3's last three */
  for (size_t i = 0; i < ntables; i++) {
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'", k_tables[i]);
    if ((s = query_text(db, sql, "reading the schema", &v))) return s;
    bool have = v && !strcmp(v, "1");
    free(v);
    if (!have)
      return ob_fail(db->ctx, OB_ERR_IO,
                     "database '%s' lacks the table '%s' of the opbench schema (damaged or "
                     "changed by hand); refusing to use it",
                     db->path, k_tables[i]);
  }
  return OB_OK;
}

/* Creates the schema in an empty file, under a write lock, so two processes
 * opening a new file at once create it once. */
static ob_status create_schema(ob_db *db, long *version) {
  ob_status s = ob_db_txn_begin(db);
  if (s) return s;
  int64_t nobj;
  s = inspect(db, &nobj, version);
  if (!s && nobj == 0) {
    char *err = NULL;
    int rc = sqlite3_exec(db->sql, k_schema, NULL, NULL, &err);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db->sql, ob_db_schema_v3, NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
      char pragma[64];
      snprintf(pragma, sizeof pragma, "PRAGMA application_id = %d", OB_DB_APPLICATION_ID);
      rc = sqlite3_exec(db->sql, pragma, NULL, NULL, NULL);
    }
    sqlite3_free(err);
    if (rc != SQLITE_OK) s = ob_db_sqlfail(db, rc, "creating the schema");
    *version = OB_DB_SCHEMA_VERSION;
  }
  if (s) {
    ob_db_txn_rollback(db);
    return s;
  }
  return ob_db_txn_commit(db);
}

/* Upgrades an older file to OB_DB_SCHEMA_VERSION under a write lock: the
 * version is read again inside the transaction, so two processes opening
 * the same old file upgrade it once; a failure rolls everything back and
 * leaves the file as it was. */
static ob_status migrate(ob_db *db, long *version) {
  ob_status s = ob_db_txn_begin(db);
  if (s) return s;
  int64_t nobj;
  s = inspect(db, &nobj, version);
  if (!s && *version == 1) {
    char *err = NULL;
    int rc = sqlite3_exec(db->sql, k_migrate_v2, NULL, NULL, &err);
    if (rc != SQLITE_OK) s = ob_db_sqlfail(db, rc, "upgrading schema version 1 to 2");
    sqlite3_free(err);
    if (!s) {
      ob_log(db->ctx, OB_LOG_INFO, "database '%s': upgraded schema version 1 to 2", db->path);
      *version = 2;
    }
  }
  if (!s && *version == 2) {
    int rc = sqlite3_exec(db->sql, ob_db_schema_v3, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db->sql, k_migrate_v3, NULL, NULL, NULL);
    if (rc != SQLITE_OK) s = ob_db_sqlfail(db, rc, "upgrading schema version 2 to 3");
    if (!s) {
      ob_log(db->ctx, OB_LOG_INFO, "database '%s': upgraded schema version 2 to 3", db->path);
      *version = 3;
    }
  }
  if (s) {
    ob_db_txn_rollback(db);
    return s;
  }
  return ob_db_txn_commit(db);
}

static ob_status set_wal_once(ob_db *db) {
  char *mode = NULL;
  ob_status s = query_text(db, "PRAGMA journal_mode", "reading the journal mode", &mode);
  if (s) return s;
  bool wal = mode && !strcmp(mode, "wal");
  free(mode);
  if (wal) return OB_OK;
  s = query_text(db, "PRAGMA journal_mode = WAL", "switching to WAL mode", &mode);
  if (s) return s;
  wal = mode && !strcmp(mode, "wal");
  free(mode);
  if (!wal)
    return ob_fail(db->ctx, OB_ERR_IO,
                   "database '%s': cannot switch to WAL mode (is it on a file system without "
                   "shared memory support?)",
                   db->path);
  return OB_OK;
}

/* Changing the journal mode needs the file to itself. When another process
 * is opening (or creating) the same file at that moment, SQLite reports it
 * busy at once instead of through the busy handler (a lock upgrade it
 * cannot wait for), so the switch is retried within the busy timeout. */
static ob_status set_wal(ob_db *db) {
  double until = ob_now_s() + db->busy_ms / 1000.0;
  for (;;) {
    ob_status s = set_wal_once(db);
    if (s != OB_ERR_BUSY || ob_now_s() >= until) return s;
    struct timespec ts = {0, 5000000}; /* 5 ms */
    nanosleep(&ts, NULL);
  }
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
  bool readonly = flags & OB_DB_READONLY;
  struct stat sb;
  bool exists = stat(path, &sb) == 0;
  if ((flags & (OB_DB_READONLY | OB_DB_NO_CREATE)) && !exists)
    return ob_fail(ctx, OB_ERR_NOT_FOUND, "database '%s' does not exist", path);
  /* SQLite would try a directory, and write its journal "into" /dev/null */
  if (exists && !S_ISREG(sb.st_mode))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "database '%s' is a %s, not a database file", path,
                   S_ISDIR(sb.st_mode)                        ? "directory"
                   : S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode) ? "pipe or character device"
                                                              : "special file");

  ob_status s = OB_OK;
  ob_db *db = calloc(1, sizeof *db);
  if (!db || !(db->path = strdup(path))) {
    free(db);
    return ob_fail(ctx, OB_ERR_NOMEM, "opening database '%s': out of memory", path);
  }
  db->ctx = ctx;
  db->busy_ms = busy;
  db->readonly = readonly;
  int oflags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path, &db->sql, oflags | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    s = ob_db_sqlfail(db, rc, "cannot open");
    goto fail;
  }
  sqlite3_extended_result_codes(db->sql, 1);
  sqlite3_busy_timeout(db->sql, busy);

  int64_t nobj;
  long version;
  s = inspect(db, &nobj, &version);
  if (s) goto fail;
  if (nobj == 0) {
    if (readonly) {
      s = ob_fail(ctx, OB_ERR_UNSUPPORTED, "database '%s' is empty, not an opbench database", path);
      goto fail;
    }
    /* WAL first: the mode is persistent and cheapest to set while empty. */
    s = set_wal(db);
    if (!s) s = create_schema(db, &version);
    if (s) goto fail;
  }
  if (version > OB_DB_SCHEMA_VERSION) {
    s = ob_fail(ctx, OB_ERR_UNSUPPORTED,
                "database '%s' has schema version %ld; this opbench understands up to %d "
                "(use a newer opbench)",
                path, version, OB_DB_SCHEMA_VERSION);
    goto fail;
  }
  if (!readonly) {
    s = set_wal(db);
    if (s) goto fail;
    if (version < OB_DB_SCHEMA_VERSION && (s = migrate(db, &version))) goto fail;
    /* Under WAL, NORMAL keeps the file consistent on any crash and loses no
     * committed transaction when only the process dies (kill -9). */
    rc = sqlite3_exec(db->sql, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      s = ob_db_sqlfail(db, rc, "setting synchronous mode");
      goto fail;
    }
  }
  db->version = (int)version;
  *out = db;
  return OB_OK;
fail:
  ob_db_close(db);
  return s;
}

void ob_db_close(ob_db *db) {
  if (!db) return;
  for (int i = 0; i < OB_DBS_COUNT; i++) sqlite3_finalize(db->stmt[i]);
  for (int i = 0; i < db->nq; i++) sqlite3_finalize(db->qcache[i].st);
  if (db->sql) sqlite3_close_v2(db->sql);
  free(db->path);
  free(db);
}

const char *ob_db_path(const ob_db *db) { return db->path; }

void ob_db_set_busy_timeout(ob_db *db, int ms) {
  OB_ASSERT(db);
  db->busy_ms = ms > 0 ? ms : 0;
  sqlite3_busy_timeout(db->sql, db->busy_ms);
}

ob_ctx *ob_db_ctx(const ob_db *db) { return db->ctx; }

ob_status ob_db_check(ob_db *db) {
  OB_ASSERT(db);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->sql, "PRAGMA integrity_check(20)", -1, &st, NULL);
  if (rc != SQLITE_OK) return ob_db_sqlfail(db, rc, "checking integrity");
  ob_str found = {0};
  bool ok = false;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *line = ob_db_col_text(st, 0);
    if (line && !strcmp(line, "ok")) {
      ok = true;
      continue;
    }
    ob_str_appendf(&found, "%s%s", found.len ? "; " : "", line ? line : "?");
  }
  /* SQLite's report is multi-line; the message stays one line */
  for (size_t i = 0; i < found.len; i++)
    if (found.data[i] == '\n' || found.data[i] == '\r' || found.data[i] == '\t') found.data[i] = ' ';
  ob_status s = OB_OK;
  if (rc != SQLITE_DONE) s = ob_db_sqlfail(db, rc, "checking integrity");
  else if (!ok || found.len)
    s = ob_fail(db->ctx, OB_ERR_IO, "database '%s' failed its integrity check: %s", db->path,
                found.len && found.data ? found.data : "no result");
  sqlite3_finalize(st);
  ob_str_free(&found);
  return s;
}

ob_status ob_db_exec(ob_db *db, const char *sql) {
  OB_ASSERT(db && sql);
  char *err = NULL;
  int rc = sqlite3_exec(db->sql, sql, NULL, NULL, &err);
  ob_status s = OB_OK;
  if (rc != SQLITE_OK) {
    s = ob_db_sqlfail(db, rc, "running '%.200s'", sql);
  }
  sqlite3_free(err);
  return s;
}

/* ---- hosts ------------------------------------------------------------------------ */

ob_status ob_db_put_host(ob_db *db, const ob_host *h, const char *compiler,
                         const char *compiler_version) {
  OB_ASSERT(db && h);
  if (!h->fingerprint[0])
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "database '%s': host '%s' has no fingerprint (use ob_host_detect)", db->path,
                   h->cpu_model);
  sqlite3_stmt *st;
  ob_status s = ob_db_stmt(db, OB_DBS_HOST_PUT, &st);
  if (s) return s;
  ob_db_bind_text(st, 1, h->fingerprint);
  ob_db_bind_text(st, 2, h->cpu_model);
  ob_db_bind_text(st, 3, h->isa);
  sqlite3_bind_int(st, 4, h->ncores);
  sqlite3_bind_int(st, 5, h->npus);
  sqlite3_bind_int64(st, 6, h->l1d_bytes);
  sqlite3_bind_int64(st, 7, h->l2_bytes);
  sqlite3_bind_int64(st, 8, h->l3_bytes);
  sqlite3_bind_int(st, 9, h->vector_bits);
  ob_db_bind_text(st, 10, h->os);
  ob_db_bind_text(st, 11, compiler);
  ob_db_bind_text(st, 12, compiler_version);
  sqlite3_bind_double(st, 13, ob_db_unix_now());
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return ob_db_sqlfail(db, rc, "storing host %s", h->fingerprint);
  return OB_OK;
}

static void copy_col(char *dst, size_t cap, sqlite3_stmt *st, int i) {
  const char *v = ob_db_col_text(st, i);
  snprintf(dst, cap, "%s", v ? v : "");
}

ob_status ob_db_get_host(ob_db *db, const char *fingerprint, ob_db_host *out) {
  OB_ASSERT(db && fingerprint && out);
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  ob_status s = ob_db_stmt(db, OB_DBS_HOST_GET, &st);
  if (s) return s;
  ob_db_bind_text(st, 1, fingerprint);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    ob_host *h = &out->host;
    copy_col(h->cpu_model, sizeof h->cpu_model, st, 0);
    copy_col(h->isa, sizeof h->isa, st, 1);
    h->ncores = sqlite3_column_int(st, 2);
    h->npus = sqlite3_column_int(st, 3);
    h->l1d_bytes = sqlite3_column_int64(st, 4);
    h->l2_bytes = sqlite3_column_int64(st, 5);
    h->l3_bytes = sqlite3_column_int64(st, 6);
    h->vector_bits = sqlite3_column_int(st, 7);
    copy_col(h->os, sizeof h->os, st, 8);
    snprintf(h->fingerprint, sizeof h->fingerprint, "%s", fingerprint);
    copy_col(out->compiler, sizeof out->compiler, st, 9);
    copy_col(out->compiler_version, sizeof out->compiler_version, st, 10);
    out->first_seen = sqlite3_column_double(st, 11);
    out->last_seen = sqlite3_column_double(st, 12);
    s = OB_OK;
  } else if (rc == SQLITE_DONE) {
    s = ob_fail(db->ctx, OB_ERR_NOT_FOUND, "database '%s' has no host with fingerprint '%s'",
                db->path, fingerprint);
  } else {
    s = ob_db_sqlfail(db, rc, "reading host %s", fingerprint);
  }
  sqlite3_reset(st);
  return s;
}

/* ---- workloads -------------------------------------------------------------------- */

ob_status ob_db_put_workload_locked(ob_db *db, const char *key, const char *op,
                                    const char *attrs_json, double flops,
                                    const char *autotvm_args, bool refresh) {
  sqlite3_stmt *st;
  ob_status s = ob_db_stmt(db, OB_DBS_WL_PUT, &st);
  if (s) return s;
  ob_db_bind_text(st, 1, key);
  ob_db_bind_text(st, 2, op);
  ob_db_bind_text(st, 3, attrs_json);
  ob_db_bind_real(st, 4, flops > 0 ? flops : NAN);
  ob_db_bind_text(st, 5, autotvm_args);
  sqlite3_bind_double(st, 6, ob_db_unix_now());
  sqlite3_bind_int(st, 7, refresh);
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return ob_db_sqlfail(db, rc, "storing workload %s", key);
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
