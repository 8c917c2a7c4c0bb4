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
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_exec(db->sql, k_confirmed_sql, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db->sql,
                            "INSERT OR REPLACE INTO confirmed(host, workload_key, target, resources,"
                            " template, config_index, median_s, mean_s, cv, candidates, timestamp)"
                            " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                            -1, &st, NULL);
  if (rc == SQLITE_OK) {
    ob_db_bind_text(st, 1, key->host);
    ob_db_bind_text(st, 2, key->workload);
    ob_db_bind_text(st, 3, key->target);
    ob_db_bind_text(st, 4, key->resources);
    ob_db_bind_text(st, 5, key->tmpl);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)c->config_index);
    ob_db_bind_real(st, 7, c->median_s);
    ob_db_bind_real(st, 8, c->mean_s);
    ob_db_bind_real(st, 9, c->cv);
    sqlite3_bind_int(st, 10, c->candidates);
    sqlite3_bind_double(st, 11, c->timestamp > 0 ? c->timestamp : ob_db_unix_now());
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK) s = ob_db_sqlfail(db, rc, "storing the confirmed best of %s", what);
  sqlite3_finalize(st);
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
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->sql,
                              "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                              " AND name = 'confirmed'",
                              -1, &st, NULL);
  bool have = false;
  if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    have = sqlite3_column_int(st, 0) > 0;
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (rc == SQLITE_OK && have)
    rc = sqlite3_prepare_v2(db->sql,
                            "SELECT config_index, median_s, mean_s, cv, candidates, timestamp"
                            " FROM confirmed WHERE workload_key = ?2 AND template = ?5"
                            " AND host = ?1 AND target = ?3 AND resources = ?4",
                            -1, &st, NULL);
  bool found = false;
  if (rc == SQLITE_OK && have) {
    ob_db_bind_text(st, 1, key->host);
    ob_db_bind_text(st, 2, key->workload);
    ob_db_bind_text(st, 3, key->target);
    ob_db_bind_text(st, 4, key->resources);
    ob_db_bind_text(st, 5, key->tmpl);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      found = true;
      out->config_index = (uint64_t)sqlite3_column_int64(st, 0);
      out->median_s = ob_db_col_real(st, 1);
      out->mean_s = ob_db_col_real(st, 2);
      out->cv = ob_db_col_real(st, 3);
      out->candidates = sqlite3_column_int(st, 4);
      out->timestamp = sqlite3_column_double(st, 5);
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_OK) return ob_db_sqlfail(db, rc, "reading the confirmed best of %s", what);
  if (!found)
    return ob_fail(db->ctx, OB_ERR_NOT_FOUND, "database '%s' has no confirmed best for %s",
                   db->path, what);
  return OB_OK;
}
