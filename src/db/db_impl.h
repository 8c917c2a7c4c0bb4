/* db_impl.h: the database handle, the storage back-end vtable and the
 * helpers shared by the db sources. The handle owns its back end's
 * connection and every prepared statement; statements are prepared on
 * first use and finalized by ob_db_close.
 *
 * Back ends (struct ob_db_backend_i): SQLite (backend_sqlite.c, a file, the
 * default) and PostgreSQL (backend_pg.c, libpq, a `postgresql://` URL). The
 * shared code speaks SQL text in SQLite's dialect with numbered parameters
 * (?1, ?2, ...) bound through the vtable; a back end translates what its
 * server spells differently (PostgreSQL: $n parameters, DOUBLE PRECISION
 * for REAL, BIGINT for INTEGER, BIGSERIAL for INTEGER PRIMARY KEY, no
 * WITHOUT ROWID, BEGIN for BEGIN IMMEDIATE; see ob_db_pg_translate). So a
 * new table is one CREATE TABLE IF NOT EXISTS in that dialect and its
 * statements, and it works on both. Portable SQL avoids SQLite's bare
 * columns in GROUP BY, boolean sums and INSERT OR REPLACE (use upserts:
 * ON CONFLICT(...) DO UPDATE). */
#ifndef OB_DB_IMPL_H
#define OB_DB_IMPL_H

#include "opbench/db.h"

/* A prepared statement; each back end's statement struct starts with it. */
typedef struct ob_dbstmt {
  ob_db *db;
} ob_dbstmt;

/* What ob_db_step returns besides an error (a back end's code, < 0);
 * OB_DB_NOMEM is an error code every back end's fail understands (the
 * shared code's own allocations failed while reading rows). */
enum { OB_DB_DONE = 0, OB_DB_ROW = 1, OB_DB_NOMEM = -1000000 };

typedef struct ob_db_backend_i {
  const char *name; /* "sqlite", "postgresql" */
  /* Connects to db->path (db->ctx, db->readonly, db->busy_ms are set) and
   * makes the store usable as `flags` allow: creates the schema in an
   * empty store, upgrades an older one when writable, refuses a foreign or
   * newer one (the statuses of ob_db_open_ex); sets db->version. On
   * failure the caller calls close. */
  ob_status (*open)(ob_db *db, unsigned flags);
  void (*close)(ob_db *db); /* accepts a half-opened db */
  /* SQL text of one or more statements without result rows: 0 or an
   * error code for fail. */
  int (*exec)(ob_db *db, const char *sql);
  int (*prepare)(ob_db *db, const char *sql, ob_dbstmt **out);
  void (*finalize)(ob_dbstmt *st); /* accepts NULL */
  /* Rewinds the statement and clears its bindings. */
  void (*reset)(ob_dbstmt *st);
  /* Parameters are numbered from 1 as in the SQL text (?N); text is copied. */
  void (*bind_int64)(ob_dbstmt *st, int i, int64_t v);
  void (*bind_double)(ob_dbstmt *st, int i, double v);
  void (*bind_text)(ob_dbstmt *st, int i, const char *s);
  void (*bind_null)(ob_dbstmt *st, int i);
  /* OB_DB_ROW, OB_DB_DONE, or an error code (< 0). The first step runs
   * the statement. Column values are valid until the next step or reset. */
  int (*step)(ob_dbstmt *st);
  bool (*col_null)(ob_dbstmt *st, int i); /* columns from 0 */
  int64_t (*col_int64)(ob_dbstmt *st, int i);
  double (*col_double)(ob_dbstmt *st, int i);
  const char *(*col_text)(ob_dbstmt *st, int i); /* NULL for SQL NULL */
  int64_t (*changes)(ob_db *db); /* rows the last statement changed */
  bool (*in_txn)(ob_db *db);     /* a transaction is open on the connection */
  /* The status of error `code` with a message naming the store, `what`
   * and the server's own words. */
  ob_status (*fail)(ob_db *db, int code, const char *what);
  ob_status (*table_exists)(ob_db *db, const char *name, bool *out);
  ob_status (*check)(ob_db *db); /* ob_db_check */
  void (*set_busy_timeout)(ob_db *db, int ms);
} ob_db_backend_i;

extern const ob_db_backend_i ob_db_sqlite_backend;
extern const ob_db_backend_i ob_db_pg_backend;
/* SQLite's dialect (as above) in PostgreSQL's; backend_pg.c says how. */
char *ob_db_pg_translate(const char *sql, int *map, int *nparams);

/* Fixed statements, prepared lazily into db->stmt[]. */
typedef enum ob_db_stmt_id {
  OB_DBS_BEGIN = 0,
  OB_DBS_COMMIT,
  OB_DBS_ROLLBACK,
  OB_DBS_SAVEPOINT,
  OB_DBS_RELEASE,
  OB_DBS_ROLLBACK_TO,
  OB_DBS_HOST_PLACEHOLDER,
  OB_DBS_HOST_PUT,
  OB_DBS_HOST_GET,
  OB_DBS_WL_PLACEHOLDER,
  OB_DBS_WL_PUT,
  OB_DBS_WL_GET,
  OB_DBS_CONFIG_PUT,
  OB_DBS_MEAS_INSERT,
  OB_DBS_MEAS_REPLACE,
  OB_DBS_MEAS_HISTORY,
  OB_DBS_MEAS_HAS,
  OB_DBS_MEAS_MEASURED,
  OB_DBS_COUNT_HOSTS,
  OB_DBS_COUNT_CONFIGS,
  OB_DBS_COUNT_HISTORY,
  OB_DBS_COUNT
} ob_db_stmt_id;

/* Query statements differ by which filter fields are set and the order;
 * each shape is prepared once. */
#define OB_DB_QCACHE 64

struct ob_db {
  ob_ctx *ctx;
  const ob_db_backend_i *be;
  void *conn;               /* the back end's connection */
  char *path;               /* the file, or the URL without its password */
  char *conninfo;           /* PostgreSQL: the URL as given (password included) */
  int busy_ms;
  bool readonly;
  int version;              /* the store's schema version: OB_DB_SCHEMA_VERSION, or
                               older for a file opened read-only (not upgraded) */
  ob_dbstmt *stmt[OB_DBS_COUNT];
  struct {
    unsigned shape;
    ob_dbstmt *st;
  } qcache[OB_DB_QCACHE];
  int nq;
  int txn_depth;            /* nesting of ob_db_txn_begin */
  bool txn_outer_savepoint; /* the outermost level is a savepoint inside a
                               transaction the caller opened */
};

/* The schema every back end creates (SQLite's dialect; see above): a new
 * store gets ob_db_schema_sql, then ob_db_schema_v3 (profiles.c), then
 * ob_db_schema_meta. The version-1 -> 2 and 2 -> 3 upgrades (SQLite only:
 * no older store exists elsewhere; 2 -> 3 runs ob_db_schema_v3 first), and
 * the tables an opbench store must have (confirmed is made on demand): the
 * first OB_DB_SCHEMA_V2_TABLES of them are a version-2 store's. */
extern const char ob_db_schema_sql[];
extern const char ob_db_migrate_v2_sql[];
extern const char ob_db_migrate_v3_sql[];
extern const char *const ob_db_schema_tables[];
extern const int ob_db_schema_ntables;
enum { OB_DB_SCHEMA_V2_TABLES = 6 };
/* The rows of meta a new store gets (created_at: now, UTC, ISO 8601). */
ob_status ob_db_schema_meta(ob_db *db);

/* Maps a back end's error code to a status, with a message naming the
 * store, what was being done (printf-style `what`) and the server's message. */
ob_status ob_db_sqlfail(ob_db *db, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The prepared statement `id`, reset and with bindings cleared. */
OB_NODISCARD ob_status ob_db_stmt(ob_db *db, ob_db_stmt_id id, ob_dbstmt **out);
/* A statement for ad-hoc SQL kept in the query cache under `shape`. */
OB_NODISCARD ob_status ob_db_stmt_shape(ob_db *db, unsigned shape, const char *sql, ob_dbstmt **out);
/* A statement of one's own (finalize with ob_db_finalize). */
OB_NODISCARD ob_status ob_db_prepare(ob_db *db, const char *sql, ob_dbstmt **out);

/* Write transactions: BEGIN IMMEDIATE at the outermost level (so waiting
 * for a lock happens under the busy timeout, never as a deadlock), a
 * savepoint inside a transaction the caller opened with ob_db_exec. */
OB_NODISCARD ob_status ob_db_txn_begin(ob_db *db);
OB_NODISCARD ob_status ob_db_txn_commit(ob_db *db);
void ob_db_txn_rollback(ob_db *db);

/* The vtable's calls on a statement. */
static inline int ob_db_step(ob_dbstmt *st) { return st->db->be->step(st); }
static inline void ob_db_reset(ob_dbstmt *st) { st->db->be->reset(st); }
static inline void ob_db_finalize(ob_dbstmt *st) {
  if (st) st->db->be->finalize(st);
}
static inline void ob_db_bind_int(ob_dbstmt *st, int i, int64_t v) { st->db->be->bind_int64(st, i, v); }
static inline void ob_db_bind_null(ob_dbstmt *st, int i) { st->db->be->bind_null(st, i); }
static inline bool ob_db_col_null(ob_dbstmt *st, int i) { return st->db->be->col_null(st, i); }
static inline int64_t ob_db_col_int(ob_dbstmt *st, int i) { return st->db->be->col_int64(st, i); }
static inline void ob_db_bind_double(ob_dbstmt *st, int i, double v) { st->db->be->bind_double(st, i, v); }
static inline double ob_db_col_double(ob_dbstmt *st, int i) { return st->db->be->col_double(st, i); }
/* Binds text; NULL binds SQL NULL. */
void ob_db_bind_text(ob_dbstmt *st, int i, const char *s);
/* Binds a double; NAN (or infinity) binds NULL. */
void ob_db_bind_real(ob_dbstmt *st, int i, double v);
/* Column as double, NULL -> NAN. */
double ob_db_col_real(ob_dbstmt *st, int i);
/* Column as text, NULL -> NULL. */
const char *ob_db_col_text(ob_dbstmt *st, int i);


double ob_db_unix_now(void);
/* "host H, workload W, target 'T', resources 'R', template X, config I" */
void ob_db_describe(const ob_db_record *rec, char *out, size_t cap);

/* OB_OK when ob_db_put_locked would accept the record's fields; else
 * OB_ERR_INVALID_ARG saying what is wrong with it. Writes nothing. */
OB_NODISCARD ob_status ob_db_record_check(ob_db *db, const ob_db_record *rec);
/* Stores one record inside an open transaction (no begin/commit). */
OB_NODISCARD ob_status ob_db_put_locked(ob_db *db, const ob_db_record *rec, unsigned flags, bool *stored);
/* Inside a transaction: the workload row, keeping non-empty existing facts
 * when `refresh` is false. autotvm_args may be NULL. */
OB_NODISCARD ob_status ob_db_put_workload_locked(ob_db *db, const char *key, const char *op,
                                    const char *attrs_json, double flops,
                                    const char *autotvm_args, bool refresh);

/* Steps through the records of a filter; the record's pointers are valid
 * only inside the callback. A non-OB_OK return from fn stops the walk and
 * is returned. */
typedef ob_status (*ob_db_visit_fn)(void *user, const ob_db_record *rec);
OB_NODISCARD ob_status ob_db_visit(ob_db *db, const ob_db_filter *f, ob_db_visit_fn fn, void *user);

/* Opens `path` for an export ("-": stdout) as ob_out_open does, with the
 * database (and its -wal, -shm, -journal files) as the inputs it refuses to
 * write over; ob_db_out_close renames into place on success (or removes the
 * temporary file on failure). */
typedef struct ob_db_out {
  FILE *f;
  ob_out out;
} ob_db_out;
OB_NODISCARD ob_status ob_db_out_open(ob_db *db, const char *path, ob_db_out *o);
OB_NODISCARD ob_status ob_db_out_close(ob_db *db, ob_db_out *o, bool ok);

/* The tables schema version 3 added (profiles.c): created with a new store
 * (either back end) and by the upgrade from version 2. SQLite's dialect as
 * above, so PostgreSQL takes it through ob_db_pg_translate. */
extern const char ob_db_schema_v3[];
/* Whether the store has table `name` (false on any error). */
bool ob_db_has_table(ob_db *db, const char *name);

/* Normalises a config entity (a JSON list, or an object with "entity") to
 * the compact list text; malloc'd into *out. OB_ERR_PARSE otherwise. */
OB_NODISCARD ob_status ob_db_entity_normalize(const char *json, char **out);

#endif
