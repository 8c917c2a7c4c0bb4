/* backend_sqlite.c: the SQLite back end of the record store (the default):
 * one file in WAL mode. Opening checks what the file holds before writing
 * anything (an empty file gets the schema, an older opbench file is
 * upgraded in one transaction, a foreign or newer one is refused), and
 * SQLite's result codes become statuses here. The connection and its
 * statements belong to the ob_db handle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "db/db_impl.h"

#define OB_DB_APPLICATION_ID 0x6f706230 /* "opb0", PRAGMA application_id */

typedef struct sq_stmt {
  ob_dbstmt base;
  sqlite3_stmt *st;
} sq_stmt;

static sqlite3 *conn(ob_db *db) { return db->conn; }
static sqlite3_stmt *raw(ob_dbstmt *s) { return ((sq_stmt *)s)->st; }

/* SQLite's codes travel negated: the shared code's errors are < 0. */
static int err(int rc) { return rc == SQLITE_OK ? 0 : -rc; }

static ob_status sq_fail(ob_db *db, int code, const char *what) {
  int rc = -code;
  const char *msg = conn(db) ? sqlite3_errmsg(conn(db)) : sqlite3_errstr(rc);
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

static int sq_exec(ob_db *db, const char *sql) {
  return err(sqlite3_exec(conn(db), sql, NULL, NULL, NULL));
}

static int sq_prepare(ob_db *db, const char *sql, ob_dbstmt **out) {
  sq_stmt *s = calloc(1, sizeof *s);
  if (!s) return OB_DB_NOMEM;
  s->base.db = db;
  int rc = sqlite3_prepare_v3(conn(db), sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st, NULL);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s->st);
    free(s);
    return err(rc);
  }
  *out = &s->base;
  return 0;
}

static void sq_finalize(ob_dbstmt *st) {
  if (!st) return;
  sqlite3_finalize(raw(st));
  free(st);
}

static void sq_reset(ob_dbstmt *st) {
  sqlite3_reset(raw(st));
  sqlite3_clear_bindings(raw(st));
}

static void sq_bind_int64(ob_dbstmt *st, int i, int64_t v) { sqlite3_bind_int64(raw(st), i, v); }
static void sq_bind_double(ob_dbstmt *st, int i, double v) { sqlite3_bind_double(raw(st), i, v); }
static void sq_bind_text(ob_dbstmt *st, int i, const char *s) {
  sqlite3_bind_text(raw(st), i, s, -1, SQLITE_TRANSIENT);
}
static void sq_bind_null(ob_dbstmt *st, int i) { sqlite3_bind_null(raw(st), i); }

static int sq_step(ob_dbstmt *st) {
  int rc = sqlite3_step(raw(st));
  if (rc == SQLITE_ROW) return OB_DB_ROW;
  if (rc == SQLITE_DONE) return OB_DB_DONE;
  return err(rc);
}

static bool sq_col_null(ob_dbstmt *st, int i) {
  return sqlite3_column_type(raw(st), i) == SQLITE_NULL;
}
static int64_t sq_col_int64(ob_dbstmt *st, int i) { return sqlite3_column_int64(raw(st), i); }
static double sq_col_double(ob_dbstmt *st, int i) { return sqlite3_column_double(raw(st), i); }
static const char *sq_col_text(ob_dbstmt *st, int i) {
  return (const char *)sqlite3_column_text(raw(st), i);
}
static int64_t sq_changes(ob_db *db) { return sqlite3_changes(conn(db)); }
static bool sq_in_txn(ob_db *db) { return !sqlite3_get_autocommit(conn(db)); }

/* One-row, one-column query on fixed SQL (no values to bind). *text gets a
 * malloc'd copy of the value (NULL for SQL NULL or no row). */
static ob_status query_text(ob_db *db, const char *sql, const char *what, char **text) {
  *text = NULL;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(conn(db), sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return sq_fail(db, err(rc), what);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const char *v = (const char *)sqlite3_column_text(st, 0);
    if (v && !(*text = strdup(v))) rc = SQLITE_NOMEM;
    else rc = SQLITE_DONE;
  }
  ob_status s = rc == SQLITE_DONE ? OB_OK : sq_fail(db, err(rc), what);
  sqlite3_finalize(st);
  return s;
}

static ob_status sq_table_exists(ob_db *db, const char *name, bool *out) {
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
           name);
  char *v = NULL;
  ob_status s = query_text(db, sql, "reading the schema", &v);
  *out = !s && v && strcmp(v, "0") != 0;
  free(v);
  return s;
}

/* Reads what the file holds: *nobjects objects in its schema, and, when it
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
  bool has_meta;
  if ((s = sq_table_exists(db, "meta", &has_meta))) return s;
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
  int ntables = ver >= 3 ? ob_db_schema_ntables : OB_DB_SCHEMA_V2_TABLES;
  for (int i = 0; i < ntables; i++) {
    bool have;
    if ((s = sq_table_exists(db, ob_db_schema_tables[i], &have))) return s;
    if (!have)
      return ob_fail(db->ctx, OB_ERR_IO,
                     "database '%s' lacks the table '%s' of the opbench schema (damaged or "
                     "changed by hand); refusing to use it",
                     db->path, ob_db_schema_tables[i]);
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
    int rc = sqlite3_exec(conn(db), ob_db_schema_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(conn(db), ob_db_schema_v3, NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
      char pragma[64];
      snprintf(pragma, sizeof pragma, "PRAGMA application_id = %d", OB_DB_APPLICATION_ID);
      rc = sqlite3_exec(conn(db), pragma, NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) s = sq_fail(db, err(rc), "creating the schema");
    if (!s) s = ob_db_schema_meta(db);
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
    int rc = sqlite3_exec(conn(db), ob_db_migrate_v2_sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) s = sq_fail(db, err(rc), "upgrading schema version 1 to 2");
    if (!s) {
      ob_log(db->ctx, OB_LOG_INFO, "database '%s': upgraded schema version 1 to 2", db->path);
      *version = 2;
    }
  }
  if (!s && *version == 2) {
    int rc = sqlite3_exec(conn(db), ob_db_schema_v3, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(conn(db), ob_db_migrate_v3_sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) s = sq_fail(db, err(rc), "upgrading schema version 2 to 3");
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

static ob_status sq_open(ob_db *db, unsigned flags) {
  const char *path = db->path;
  struct stat sb;
  bool exists = stat(path, &sb) == 0;
  if ((flags & (OB_DB_READONLY | OB_DB_NO_CREATE)) && !exists)
    return ob_fail(db->ctx, OB_ERR_NOT_FOUND, "database '%s' does not exist", path);
  /* SQLite would try a directory, and write its journal "into" /dev/null */
  if (exists && !S_ISREG(sb.st_mode))
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s' is a %s, not a database file", path,
                   S_ISDIR(sb.st_mode)                           ? "directory"
                   : S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode) ? "pipe or character device"
                                                                 : "special file");
  int oflags = db->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  sqlite3 *sql = NULL;
  int rc = sqlite3_open_v2(path, &sql, oflags | SQLITE_OPEN_NOMUTEX, NULL);
  db->conn = sql;
  if (rc != SQLITE_OK) return sq_fail(db, err(rc), "cannot open");
  sqlite3_extended_result_codes(sql, 1);
  sqlite3_busy_timeout(sql, db->busy_ms);

  int64_t nobj;
  long version;
  ob_status s = inspect(db, &nobj, &version);
  if (s) return s;
  if (nobj == 0) {
    if (db->readonly)
      return ob_fail(db->ctx, OB_ERR_UNSUPPORTED, "database '%s' is empty, not an opbench database",
                     path);
    /* WAL first: the mode is persistent and cheapest to set while empty. */
    s = set_wal(db);
    if (!s) s = create_schema(db, &version);
    if (s) return s;
  }
  if (version > OB_DB_SCHEMA_VERSION)
    return ob_fail(db->ctx, OB_ERR_UNSUPPORTED,
                   "database '%s' has schema version %ld; this opbench understands up to %d "
                   "(use a newer opbench)",
                   path, version, OB_DB_SCHEMA_VERSION);
  if (!db->readonly) {
    if ((s = set_wal(db))) return s;
    if (version < OB_DB_SCHEMA_VERSION && (s = migrate(db, &version))) return s;
    /* Under WAL, NORMAL keeps the file consistent on any crash and loses no
     * committed transaction when only the process dies (kill -9). */
    rc = sqlite3_exec(sql, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return sq_fail(db, err(rc), "setting synchronous mode");
  }
  db->version = (int)version;
  return OB_OK;
}

static void sq_close(ob_db *db) {
  if (db->conn) sqlite3_close_v2(conn(db));
  db->conn = NULL;
}

static ob_status sq_check(ob_db *db) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(conn(db), "PRAGMA integrity_check(20)", -1, &st, NULL);
  if (rc != SQLITE_OK) return sq_fail(db, err(rc), "checking integrity");
  ob_str found = {0};
  bool ok = false;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *line = (const char *)sqlite3_column_text(st, 0);
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
  if (rc != SQLITE_DONE) s = sq_fail(db, err(rc), "checking integrity");
  else if (!ok || found.len)
    s = ob_fail(db->ctx, OB_ERR_IO, "database '%s' failed its integrity check: %s", db->path,
                found.len && found.data ? found.data : "no result");
  sqlite3_finalize(st);
  ob_str_free(&found);
  return s;
}

static void sq_set_busy_timeout(ob_db *db, int ms) { sqlite3_busy_timeout(conn(db), ms); }

const ob_db_backend_i ob_db_sqlite_backend = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .exec = sq_exec,
    .prepare = sq_prepare,
    .finalize = sq_finalize,
    .reset = sq_reset,
    .bind_int64 = sq_bind_int64,
    .bind_double = sq_bind_double,
    .bind_text = sq_bind_text,
    .bind_null = sq_bind_null,
    .step = sq_step,
    .col_null = sq_col_null,
    .col_int64 = sq_col_int64,
    .col_double = sq_col_double,
    .col_text = sq_col_text,
    .changes = sq_changes,
    .in_txn = sq_in_txn,
    .fail = sq_fail,
    .table_exists = sq_table_exists,
    .check = sq_check,
    .set_busy_timeout = sq_set_busy_timeout,
};
