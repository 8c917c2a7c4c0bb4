/* db_impl.h: the database handle and helpers shared by the db sources. The
 * handle owns the SQLite connection and every prepared statement; statements
 * are prepared on first use and finalized by ob_db_close. */
#ifndef OB_DB_IMPL_H
#define OB_DB_IMPL_H

#include <sqlite3.h>

#include "opbench/db.h"

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
  sqlite3 *sql;
  char *path;
  int busy_ms;
  bool readonly;
  int version;              /* the file's schema version: OB_DB_SCHEMA_VERSION, or
                               older for a file opened read-only (not upgraded) */
  sqlite3_stmt *stmt[OB_DBS_COUNT];
  struct {
    unsigned shape;
    sqlite3_stmt *st;
  } qcache[OB_DB_QCACHE];
  int nq;
  int txn_depth;            /* nesting of ob_db_txn_begin */
  bool txn_outer_savepoint; /* the outermost level is a savepoint inside a
                               transaction the caller opened */
};

/* Maps an SQLite result code to a status, with a message naming the file,
 * what was being done (printf-style `what`) and SQLite's own message. */
ob_status ob_db_sqlfail(ob_db *db, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The prepared statement `id`, reset and with bindings cleared. */
OB_NODISCARD ob_status ob_db_stmt(ob_db *db, ob_db_stmt_id id, sqlite3_stmt **out);
/* A statement for ad-hoc SQL kept in the query cache under `shape`. */
OB_NODISCARD ob_status ob_db_stmt_shape(ob_db *db, unsigned shape, const char *sql, sqlite3_stmt **out);

/* Write transactions: BEGIN IMMEDIATE at the outermost level (so waiting
 * for a lock happens under the busy timeout, never as a deadlock), a
 * savepoint inside a transaction the caller opened with ob_db_exec. */
OB_NODISCARD ob_status ob_db_txn_begin(ob_db *db);
OB_NODISCARD ob_status ob_db_txn_commit(ob_db *db);
void ob_db_txn_rollback(ob_db *db);

/* Binds text; NULL binds SQL NULL. */
int ob_db_bind_text(sqlite3_stmt *st, int i, const char *s);
/* Binds a double; NAN (or infinity) binds NULL. */
int ob_db_bind_real(sqlite3_stmt *st, int i, double v);
/* Column as double, NULL -> NAN. */
double ob_db_col_real(sqlite3_stmt *st, int i);
/* Column as text, NULL -> NULL. */
const char *ob_db_col_text(sqlite3_stmt *st, int i);

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

/* The tables schema version 3 added (profiles.c): created with a new file
 * and by the upgrade from version 2. Plain SQL, one statement each. */
extern const char ob_db_schema_v3[];
/* Whether the connection's file has table `name` (false on any error). */
bool ob_db_has_table(ob_db *db, const char *name);

/* Normalises a config entity (a JSON list, or an object with "entity") to
 * the compact list text; malloc'd into *out. OB_ERR_PARSE otherwise. */
OB_NODISCARD ob_status ob_db_entity_normalize(const char *json, char **out);

#endif
