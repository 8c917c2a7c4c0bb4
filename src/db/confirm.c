/* confirm.c: the confirmed best config of a task (the tuning loop's final
 * re-measurement), one row per task key in table `confirmed`, created on
 * first write so that files made before it need no migration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

static const char k_confirmed_sql[] =
    "CREATE TABLE IF NOT EXISTS confirmed("
    " host TEXT NOT NULL, workload_key TEXT NOT NULL, target TEXT NOT NULL,"
    " resources TEXT NOT NULL, template TEXT NOT NULL, config_index INTEGER NOT NULL,"
    " median_s REAL NOT NULL, mean_s REAL, cv REAL, candidates INTEGER NOT NULL DEFAULT 0,"
    " timestamp REAL NOT NULL,"
    " PRIMARY KEY(workload_key, template, host, target, resources)) WITHOUT ROWID";

static ob_status check_key(ob_db *db, const ob_db_key *k) {
  if (k && k->host && *k->host && k->workload && *k->workload && k->target && k->resources &&
      k->tmpl && *k->tmpl)
    return OB_OK;
  return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                 "database '%s': a confirmed best needs host, workload, target, resources and "
                 "template (workload %s, template %s)",
                 db->path, k && k->workload ? k->workload : "(null)",
                 k && k->tmpl ? k->tmpl : "(null)");
}

static void describe(const ob_db_key *k, char *out, size_t cap) {
  snprintf(out, cap, "host %s, workload %s, target '%s', resources '%s', template %s", k->host,
           k->workload, k->target, k->resources, k->tmpl);
}

static void bind_key(ob_dbstmt *st, const ob_db_key *key) {
  ob_db_bind_text(st, 1, key->host);
  ob_db_bind_text(st, 2, key->workload);
  ob_db_bind_text(st, 3, key->target);
  ob_db_bind_text(st, 4, key->resources);
  ob_db_bind_text(st, 5, key->tmpl);
}

ob_status ob_db_put_confirmed(ob_db *db, const ob_db_key *key, const ob_db_confirmed *c) {
  OB_ASSERT(db && c);
  ob_status s = check_key(db, key);
  if (s) return s;
  char what[768];
  describe(key, what, sizeof what);
  if (db->readonly)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s' was opened read-only", db->path);
  if (!(c->median_s > 0) || !isfinite(c->median_s) || c->config_index > (uint64_t)INT64_MAX)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "database '%s': confirmed best of %s: config %llu with median %g s", db->path,
                   what, (unsigned long long)c->config_index, c->median_s);
  if ((s = ob_db_txn_begin(db))) return s;
  ob_dbstmt *st = NULL;
  int rc = db->be->exec(db, k_confirmed_sql);
  if (rc == 0)
    rc = db->be->prepare(db,
                         "INSERT INTO confirmed(host, workload_key, target, resources,"
                         " template, config_index, median_s, mean_s, cv, candidates, timestamp)"
                         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
                         " ON CONFLICT(workload_key, template, host, target, resources) DO UPDATE"
                         " SET config_index = excluded.config_index, median_s = excluded.median_s,"
                         " mean_s = excluded.mean_s, cv = excluded.cv,"
                         " candidates = excluded.candidates, timestamp = excluded.timestamp",
                         &st);
  if (rc == 0) {
    bind_key(st, key);
    ob_db_bind_int(st, 6, (int64_t)c->config_index);
    ob_db_bind_real(st, 7, c->median_s);
    ob_db_bind_real(st, 8, c->mean_s);
    ob_db_bind_real(st, 9, c->cv);
    ob_db_bind_int(st, 10, c->candidates);
    ob_db_bind_real(st, 11, c->timestamp > 0 ? c->timestamp : ob_db_unix_now());
    rc = ob_db_step(st);
    if (rc == OB_DB_DONE) rc = 0;
  }
  if (rc) s = ob_db_sqlfail(db, rc, "storing the confirmed best of %s", what);
  ob_db_finalize(st);
  if (s) {
    ob_db_txn_rollback(db);
    return s;
  }
  return ob_db_txn_commit(db);
}

ob_status ob_db_get_confirmed(ob_db *db, const ob_db_key *key, ob_db_confirmed *out) {
  OB_ASSERT(db && out);
  memset(out, 0, sizeof *out);
  ob_status s = check_key(db, key);
  if (s) return s;
  char what[768];
  describe(key, what, sizeof what);
  bool have = false;
  if ((s = db->be->table_exists(db, "confirmed", &have))) return s;
  ob_dbstmt *st = NULL;
  int rc = 0;
  bool found = false;
  if (have)
    rc = db->be->prepare(db,
                         "SELECT config_index, median_s, mean_s, cv, candidates, timestamp"
                         " FROM confirmed WHERE workload_key = ?2 AND template = ?5"
                         " AND host = ?1 AND target = ?3 AND resources = ?4",
                         &st);
  if (rc == 0 && have) {
    bind_key(st, key);
    rc = ob_db_step(st);
    if (rc == OB_DB_ROW) {
      found = true;
      out->config_index = (uint64_t)ob_db_col_int(st, 0);
      out->median_s = ob_db_col_real(st, 1);
      out->mean_s = ob_db_col_real(st, 2);
      out->cv = ob_db_col_real(st, 3);
      out->candidates = (int)ob_db_col_int(st, 4);
      out->timestamp = ob_db_col_real(st, 5);
      rc = 0;
    } else if (rc == OB_DB_DONE) {
      rc = 0;
    }
  }
  ob_db_finalize(st);
  if (rc) return ob_db_sqlfail(db, rc, "reading the confirmed best of %s", what);
  if (!found)
    return ob_fail(db->ctx, OB_ERR_NOT_FOUND, "database '%s' has no confirmed best for %s",
                   db->path, what);
  return OB_OK;
}
