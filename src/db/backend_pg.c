/* backend_pg.c: the PostgreSQL back end of the record store (libpq), for
 * records a team shares: `--db postgresql://USER:PASSWORD@HOST:PORT/DB`
 * (any libpq URL; `?options=-csearch_path%3DNAME` puts the tables in schema
 * NAME). The tables, keys and statements are those of the SQLite file: the
 * shared SQL text is translated here (ob_db_pg_translate) and every
 * statement runs with its parameters typed by what was bound (PQexecParams),
 * so a query's rows are read whole before the first step returns (nested
 * statements on the one connection work as under SQLite).
 *
 * A store is the set of tables in the connection's current schema. An
 * empty one gets the schema under an advisory lock (two clients creating
 * it at once create it once); one holding other tables but no meta is
 * refused; a newer schema version is refused. Waiting for another
 * writer's locks is bounded by the busy timeout (lock_timeout), past which
 * a write fails with OB_ERR_BUSY as under SQLite. Messages name the URL
 * without its password. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "db/db_impl.h"

/* pg_type OIDs of the parameter types bound (server/catalog/pg_type_d.h) */
#define PG_INT8OID 20
#define PG_TEXTOID 25
#define PG_FLOAT8OID 701

#define PG_MAX_PARAMS 64

/* error codes of this back end (step, exec, prepare) */
enum { PG_ERR = -1, PG_ERR_BUSY = -2, PG_ERR_CONN = -3, PG_ERR_SQL = -4 };

typedef struct pg_conn {
  PGconn *pg;
  int64_t changes;   /* rows the last statement changed */
  char sqlstate[8];  /* of the last error */
  char msg[512];     /* the server's message of the last error, one line */
} pg_conn;

typedef struct pg_stmt {
  ob_dbstmt base;
  char *sql;                       /* translated */
  int nparams;                     /* distinct parameters ($1..$n) */
  int map[PG_MAX_PARAMS + 1];      /* ?N -> its $k (0: not in the text) */
  char *val[PG_MAX_PARAMS];        /* bound values as text; NULL: SQL NULL */
  unsigned type[PG_MAX_PARAMS];    /* their types (0: unknown, for NULL) */
  PGresult *res;                   /* rows of the last run */
  int row;                         /* the current row (-1 before the first) */
} pg_stmt;

static pg_conn *conn(ob_db *db) { return db->conn; }

/* ---- SQLite's dialect in PostgreSQL's ---------------------------------------- */

static bool word_at(const char *p, const char *w) {
  size_t n = strlen(w);
  return !strncmp(p, w, n) && !(isalnum((unsigned char)p[n]) || p[n] == '_');
}

/* Translates SQL text written for SQLite (db_impl.h says which subset) into
 * PostgreSQL's: ?N parameters become $k numbered densely in order of first
 * appearance (map[N] = k, *nparams = the largest k; map may be NULL), and
 * outside quotes INTEGER PRIMARY KEY -> BIGSERIAL PRIMARY KEY, INTEGER ->
 * BIGINT, REAL -> DOUBLE PRECISION, WITHOUT ROWID and BEGIN's IMMEDIATE /
 * EXCLUSIVE / DEFERRED are dropped. malloc'd; NULL when out of memory or
 * when a parameter number exceeds PG_MAX_PARAMS. */
char *ob_db_pg_translate(const char *sql, int *map, int *nparams) {
  ob_str o = {0};
  int n = 0;
  if (map) memset(map, 0, sizeof *map * (PG_MAX_PARAMS + 1));
  char quote = 0;
  bool after_begin = false;
  for (const char *p = sql; *p;) {
    if (quote) {
      if (*p == quote) quote = 0;
      ob_str_appendf(&o, "%c", *p++);
      continue;
    }
    if (*p == '\'' || *p == '"') {
      quote = *p;
      ob_str_appendf(&o, "%c", *p++);
      continue;
    }
    if (*p == '?' && isdigit((unsigned char)p[1])) {
      char *end;
      long k = strtol(p + 1, &end, 10);
      if (k < 1 || k > PG_MAX_PARAMS || !map) {
        ob_str_free(&o);
        return NULL;
      }
      if (!map[k]) map[k] = ++n;
      ob_str_appendf(&o, "$%d", map[k]);
      p = end;
      continue;
    }
    bool word_start = (isalpha((unsigned char)*p) || *p == '_') &&
                      (p == sql || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'));
    if (word_start) {
      if (word_at(p, "INTEGER")) {
        const char *q = p + 7;
        while (*q == ' ') q++;
        ob_str_append(&o, word_at(q, "PRIMARY") ? "BIGSERIAL" : "BIGINT");
        p += 7;
        continue;
      }
      if (word_at(p, "REAL")) {
        ob_str_append(&o, "DOUBLE PRECISION");
        p += 4;
        continue;
      }
      if (word_at(p, "WITHOUT")) {
        const char *q = p + 7;
        while (*q == ' ') q++;
        if (word_at(q, "ROWID")) {
          p = q + 5;
          continue;
        }
      }
      if (after_begin && (word_at(p, "IMMEDIATE") || word_at(p, "EXCLUSIVE") || word_at(p, "DEFERRED"))) {
        while (isalpha((unsigned char)*p)) p++;
        after_begin = false;
        continue;
      }
      after_begin = word_at(p, "BEGIN");
      const char *q = p;
      while (isalnum((unsigned char)*q) || *q == '_') q++;
      ob_str_appendf(&o, "%.*s", (int)(q - p), p);
      p = q;
      continue;
    }
    if (!isspace((unsigned char)*p)) after_begin = false;
    ob_str_appendf(&o, "%c", *p++);
  }
  if (nparams) *nparams = n;
  if (o.failed || !o.data) {
    ob_str_free(&o);
    return o.failed ? NULL : strdup("");
  }
  return o.data;
}

/* ---- URL ------------------------------------------------------------------------- */

/* The URL with the password of its user part and any password= parameter
 * replaced by "***". malloc'd (NULL: out of memory). */
char *ob_db_url_redact(const char *url) {
  const char *s = strstr(url, "://");
  if (!s) return strdup(url);
  s += 3;
  size_t auth = strcspn(s, "/?");
  const char *last_at = NULL; /* the last '@' of the authority ends the user part */
  for (const char *a = s; a < s + auth; a++)
    if (*a == '@') last_at = a;
  ob_str o = {0};
  ob_str_appendf(&o, "%.*s", (int)(s - url), url);
  if (last_at) {
    const char *colon = memchr(s, ':', (size_t)(last_at - s));
    if (colon) ob_str_appendf(&o, "%.*s:***", (int)(colon - s), s);
    else ob_str_appendf(&o, "%.*s", (int)(last_at - s), s);
    s = last_at;
  }
  /* the rest, with password=VALUE hidden */
  for (const char *p = s; *p;) {
    if ((p[-1] == '?' || p[-1] == '&') && !strncmp(p, "password=", 9)) {
      ob_str_append(&o, "password=***");
      p += 9;
      while (*p && *p != '&') p++;
      continue;
    }
    ob_str_appendf(&o, "%c", *p++);
  }
  if (o.failed) {
    ob_str_free(&o);
    return NULL;
  }
  return o.data;
}

/* ---- errors ---------------------------------------------------------------------- */

static void one_line(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
  size_t n = strlen(dst);
  while (n && (dst[n - 1] == '\n' || dst[n - 1] == ' ')) dst[--n] = '\0';
  for (char *p = dst; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
}

/* Keeps the last error's state and message; returns its code. */
static int pg_error(ob_db *db, const PGresult *res) {
  pg_conn *c = conn(db);
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  snprintf(c->sqlstate, sizeof c->sqlstate, "%s", state ? state : "");
  const char *m = res ? PQresultErrorMessage(res) : NULL;
  if (!m || !*m) m = PQerrorMessage(c->pg);
  one_line(c->msg, sizeof c->msg, m);
  if (PQstatus(c->pg) != CONNECTION_OK) return PG_ERR_CONN;
  /* lock_not_available (lock_timeout), serialization_failure, deadlock_detected */
  if (!strcmp(c->sqlstate, "55P03") || !strcmp(c->sqlstate, "40001") || !strcmp(c->sqlstate, "40P01"))
    return PG_ERR_BUSY;
  return PG_ERR;
}

static ob_status pg_fail(ob_db *db, int code, const char *what) {
  pg_conn *c = conn(db);
  const char *msg = c && c->msg[0] ? c->msg : "unknown error";
  switch (code) {
  case PG_ERR_BUSY:
    return ob_fail(db->ctx, OB_ERR_BUSY,
                   "database '%s' is locked by another connection (waited %.1f s): %s: %s",
                   db->path, db->busy_ms / 1000.0, what, msg);
  case PG_ERR_CONN:
    return ob_fail(db->ctx, OB_ERR_IO, "database '%s': %s: the connection to the server is lost: %s",
                   db->path, what, msg);
  case PG_ERR_SQL:
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "database '%s': %s: the SQL cannot be translated for PostgreSQL", db->path, what);
  default:
    return ob_fail(db->ctx, OB_ERR_IO, "database '%s': %s: %s%s%s%s", db->path, what, msg,
                   c && c->sqlstate[0] ? " (SQLSTATE " : "", c ? c->sqlstate : "",
                   c && c->sqlstate[0] ? ")" : "");
  }
}

/* ---- statements ------------------------------------------------------------------ */

static bool needs_schema_lock(const char *sql) {
  for (const char *p = sql; (p = strstr(p, "CREATE ")) != NULL; p += 7)
    if (p == sql || !isalnum((unsigned char)p[-1])) return true;
  return false;
}

/* Concurrent CREATE TABLE IF NOT EXISTS of one table can fail on the
 * catalog's unique index in PostgreSQL; inside a transaction a lock per
 * schema makes DDL take turns. */
static int schema_lock(ob_db *db) {
  PGresult *r = PQexec(conn(db)->pg, "SELECT pg_advisory_xact_lock(hashtext(current_schema()))");
  int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : pg_error(db, r);
  PQclear(r);
  return rc;
}

static bool pg_in_txn(ob_db *db) {
  PGTransactionStatusType t = PQtransactionStatus(conn(db)->pg);
  return t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

static int pg_exec(ob_db *db, const char *sql) {
  char *t = ob_db_pg_translate(sql, NULL, NULL);
  if (!t) return strchr(sql, '?') ? PG_ERR_SQL : OB_DB_NOMEM;
  int rc = 0;
  if (needs_schema_lock(t) && pg_in_txn(db)) rc = schema_lock(db);
  if (!rc) {
    PGresult *r = PQexec(conn(db)->pg, t);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) rc = pg_error(db, r);
    else conn(db)->changes = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
  }
  free(t);
  return rc;
}

static int pg_prepare(ob_db *db, const char *sql, ob_dbstmt **out) {
  pg_stmt *s = calloc(1, sizeof *s);
  if (!s) return OB_DB_NOMEM;
  s->base.db = db;
  s->row = -1;
  if (!(s->sql = ob_db_pg_translate(sql, s->map, &s->nparams))) {
    free(s);
    return PG_ERR_SQL;
  }
  *out = &s->base;
  return 0;
}

static void clear_binds(pg_stmt *s) {
  for (int k = 0; k < s->nparams; k++) {
    free(s->val[k]);
    s->val[k] = NULL;
    s->type[k] = 0;
  }
}

static void pg_reset(ob_dbstmt *st) {
  pg_stmt *s = (pg_stmt *)st;
  PQclear(s->res);
  s->res = NULL;
  s->row = -1;
  clear_binds(s);
}

static void pg_finalize(ob_dbstmt *st) {
  if (!st) return;
  pg_stmt *s = (pg_stmt *)st;
  pg_reset(st);
  free(s->sql);
  free(s);
}

/* The $k slot of ?i, or -1 when the text does not use it. */
static int slot(pg_stmt *s, int i) {
  return i >= 1 && i <= PG_MAX_PARAMS && s->map[i] ? s->map[i] - 1 : -1;
}

static void bind(ob_dbstmt *st, int i, char *text, unsigned type) {
  pg_stmt *s = (pg_stmt *)st;
  int k = slot(s, i);
  if (k < 0) {
    free(text);
    return;
  }
  free(s->val[k]);
  s->val[k] = text;
  s->type[k] = text ? type : 0;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  char buf[64];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return strdup(buf);
}

/* An allocation that fails binds NULL; the statement then fails on its
 * NOT NULL constraint or stores nothing, never a wrong value silently:
 * the shared code's own allocations fail long before these 30 bytes. */
static void pg_bind_int64(ob_dbstmt *st, int i, int64_t v) { bind(st, i, fmt("%lld", (long long)v), PG_INT8OID); }
static void pg_bind_double(ob_dbstmt *st, int i, double v) { bind(st, i, fmt("%.17g", v), PG_FLOAT8OID); }
static void pg_bind_text(ob_dbstmt *st, int i, const char *v) { bind(st, i, strdup(v), PG_TEXTOID); }
static void pg_bind_null(ob_dbstmt *st, int i) { bind(st, i, NULL, 0); }

static int pg_step(ob_dbstmt *st) {
  pg_stmt *s = (pg_stmt *)st;
  ob_db *db = st->db;
  if (!s->res) {
    unsigned types[PG_MAX_PARAMS];
    for (int k = 0; k < s->nparams; k++) types[k] = s->type[k];
    PGresult *r = PQexecParams(conn(db)->pg, s->sql, s->nparams, (const Oid *)types,
                               (const char *const *)s->val, NULL, NULL, 0);
    ExecStatusType t = PQresultStatus(r);
    if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK) {
      int rc = pg_error(db, r);
      PQclear(r);
      return rc;
    }
    conn(db)->changes = strtoll(PQcmdTuples(r), NULL, 10);
    s->res = r;
    s->row = -1;
  }
  if (s->row + 1 < PQntuples(s->res)) {
    s->row++;
    return OB_DB_ROW;
  }
  s->row = PQntuples(s->res);
  return OB_DB_DONE;
}

static bool pg_col_null(ob_dbstmt *st, int i) {
  pg_stmt *s = (pg_stmt *)st;
  return !s->res || s->row < 0 || s->row >= PQntuples(s->res) || i >= PQnfields(s->res) ||
         PQgetisnull(s->res, s->row, i);
}

static const char *pg_col_text(ob_dbstmt *st, int i) {
  pg_stmt *s = (pg_stmt *)st;
  return pg_col_null(st, i) ? NULL : PQgetvalue(s->res, s->row, i);
}

static int64_t pg_col_int64(ob_dbstmt *st, int i) {
  const char *v = pg_col_text(st, i);
  if (!v) return 0;
  if (!strcmp(v, "t")) return 1; /* a boolean */
  return strtoll(v, NULL, 10);
}

static double pg_col_double(ob_dbstmt *st, int i) {
  const char *v = pg_col_text(st, i);
  return v ? strtod(v, NULL) : 0;
}

static int64_t pg_changes(ob_db *db) { return conn(db)->changes; }

/* ---- opening ----------------------------------------------------------------------- */

static void notice(void *arg, const char *message) {
  ob_db *db = arg;
  char line[512];
  one_line(line, sizeof line, message);
  ob_log(db->ctx, OB_LOG_DEBUG, "database '%s': %s", db->path, line);
}

/* The first column of the first row of fixed SQL as a malloc'd string (NULL
 * for no row or SQL NULL). */
static ob_status query_text(ob_db *db, const char *sql, const char *param, const char *what,
                            char **text) {
  *text = NULL;
  const char *vals[1] = {param};
  PGresult *r = PQexecParams(conn(db)->pg, sql, param ? 1 : 0, NULL, vals, NULL, NULL, 0);
  ob_status s = OB_OK;
  if (PQresultStatus(r) != PGRES_TUPLES_OK) s = pg_fail(db, pg_error(db, r), what);
  else if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) && !(*text = strdup(PQgetvalue(r, 0, 0))))
    s = ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': %s: out of memory", db->path, what);
  PQclear(r);
  return s;
}

static ob_status pg_table_exists(ob_db *db, const char *name, bool *out) {
  char *v = NULL;
  ob_status s = query_text(db,
                           "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
                           " AND tablename = $1",
                           name, "reading the schema", &v);
  *out = !s && v && strcmp(v, "0") != 0;
  free(v);
  return s;
}

/* What the schema holds: its tables, and the schema version (0: no meta). */
static ob_status inspect(ob_db *db, int64_t *ntables, long *version) {
  *ntables = 0;
  *version = 0;
  char *v = NULL;
  ob_status s = query_text(db, "SELECT current_schema()", NULL, "reading the schema", &v);
  if (s) return s;
  if (!v)
    return ob_fail(db->ctx, OB_ERR_NOT_FOUND,
                   "database '%s': no schema of its search_path exists (create it, or name "
                   "an existing one in options=-csearch_path%%3DNAME)",
                   db->path);
  free(v);
  s = query_text(db, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()", NULL,
                 "reading the schema", &v);
  if (s) return s;
  *ntables = v ? strtoll(v, NULL, 10) : 0;
  free(v);
  if (*ntables == 0) return OB_OK;
  bool has_meta;
  if ((s = pg_table_exists(db, "meta", &has_meta))) return s;
  if (!has_meta)
    return ob_fail(db->ctx, OB_ERR_UNSUPPORTED,
                   "database '%s' holds tables but is not an opbench store (it has no meta "
                   "table); refusing to change it",
                   db->path);
  if ((s = query_text(db, "SELECT value FROM meta WHERE key = 'schema_version'", NULL,
                      "reading the schema version", &v)))
    return s;
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
  if (ver > OB_DB_SCHEMA_VERSION) return OB_OK;
  int nwant = ver >= 3 ? ob_db_schema_ntables : OB_DB_SCHEMA_V2_TABLES; /* older: refused by the caller */
  for (int i = 0; i < nwant; i++) {
    bool have;
    if ((s = pg_table_exists(db, ob_db_schema_tables[i], &have))) return s;
    if (!have)
      return ob_fail(db->ctx, OB_ERR_IO,
                     "database '%s' lacks the table '%s' of the opbench schema (damaged or "
                     "changed by hand); refusing to use it",
                     db->path, ob_db_schema_tables[i]);
  }
  return OB_OK;
}

static ob_status create_schema(ob_db *db, long *version) {
  ob_status s = ob_db_txn_begin(db);
  if (s) return s;
  int rc = schema_lock(db);
  if (rc) s = pg_fail(db, rc, "locking the schema to create it");
  int64_t n = 0;
  if (!s) s = inspect(db, &n, version);
  if (!s && n == 0) {
    if ((rc = pg_exec(db, ob_db_schema_sql))) s = pg_fail(db, rc, "creating the schema");
    if (!s && (rc = pg_exec(db, ob_db_schema_v3))) s = pg_fail(db, rc, "creating the profiler's tables");
    if (!s) s = ob_db_schema_meta(db);
    *version = OB_DB_SCHEMA_VERSION;
  }
  if (s) {
    ob_db_txn_rollback(db);
    return s;
  }
  return ob_db_txn_commit(db);
}

static int set_lock_timeout(ob_db *db, int ms) {
  char sql[64];
  snprintf(sql, sizeof sql, "SET lock_timeout = %d", ms > 0 ? ms : 1);
  return pg_exec(db, sql);
}

static void pg_set_busy_timeout(ob_db *db, int ms) {
  if (set_lock_timeout(db, ms)) ob_log(db->ctx, OB_LOG_WARN, "database '%s': cannot set lock_timeout", db->path);
}

static ob_status pg_open(ob_db *db, unsigned flags) {
  pg_conn *c = calloc(1, sizeof *c);
  if (!c) return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': out of memory", db->path);
  db->conn = c;
  /* connect_timeout first: the URL's own settings come after and win */
  const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
  const char *const vals[] = {"10", "opbench", db->conninfo, NULL};
  c->pg = PQconnectdbParams(keys, vals, 1);
  if (!c->pg) return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': out of memory", db->path);
  if (PQstatus(c->pg) != CONNECTION_OK) {
    char m[512];
    one_line(m, sizeof m, PQerrorMessage(c->pg));
    return ob_fail(db->ctx, OB_ERR_IO, "cannot connect to PostgreSQL database '%s': %s", db->path, m);
  }
  PQsetNoticeProcessor(c->pg, notice, db);
  int rc = pg_exec(db, "SET client_min_messages = warning");
  if (!rc) rc = set_lock_timeout(db, db->busy_ms);
  if (!rc && db->readonly) rc = pg_exec(db, "SET default_transaction_read_only = on");
  if (rc) return pg_fail(db, rc, "setting up the session");
  int64_t n;
  long version;
  ob_status s = inspect(db, &n, &version);
  if (s) return s;
  if (n == 0) {
    if (flags & (OB_DB_READONLY | OB_DB_NO_CREATE))
      return ob_fail(db->ctx, OB_ERR_NOT_FOUND,
                     "database '%s' does not exist (it holds no opbench tables yet)", db->path);
    if ((s = create_schema(db, &version))) return s;
  }
  if (version > OB_DB_SCHEMA_VERSION)
    return ob_fail(db->ctx, OB_ERR_UNSUPPORTED,
                   "database '%s' has schema version %ld; this opbench understands up to %d "
                   "(use a newer opbench)",
                   db->path, version, OB_DB_SCHEMA_VERSION);
  if (version < OB_DB_SCHEMA_VERSION)
    return ob_fail(db->ctx, OB_ERR_UNSUPPORTED,
                   "database '%s' has schema version %ld, which no opbench writes to PostgreSQL",
                   db->path, version);
  db->version = (int)version;
  return OB_OK;
}

static void pg_close(ob_db *db) {
  pg_conn *c = conn(db);
  if (!c) return;
  if (c->pg) PQfinish(c->pg);
  free(c);
  db->conn = NULL;
}

/* What integrity_check is to SQLite: every table of the schema reads. */
static ob_status pg_check(ob_db *db) {
  for (int i = 0; i < ob_db_schema_ntables; i++) {
    char sql[128], *v = NULL;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", ob_db_schema_tables[i]);
    ob_status s = query_text(db, sql, NULL, "checking the tables", &v);
    free(v);
    if (s) return s;
  }
  return OB_OK;
}

const ob_db_backend_i ob_db_pg_backend = {
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .exec = pg_exec,
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .reset = pg_reset,
    .bind_int64 = pg_bind_int64,
    .bind_double = pg_bind_double,
    .bind_text = pg_bind_text,
    .bind_null = pg_bind_null,
    .step = pg_step,
    .col_null = pg_col_null,
    .col_int64 = pg_col_int64,
    .col_double = pg_col_double,
    .col_text = pg_col_text,
    .changes = pg_changes,
    .in_txn = pg_in_txn,
    .fail = pg_fail,
    .table_exists = pg_table_exists,
    .check = pg_check,
    .set_busy_timeout = pg_set_busy_timeout,
};
