/* profiles.c: the profiler's tables (schema version 3): profiles (one row
 * per point of a feature sweep, keyed like measurements plus the
 * features), host_limits (a host's measured peaks and bandwidths) and
 * tuning_runs (which tuner a task's trials came from), with their puts,
 * queries and the dataset export (CSV or JSON lines, a column per
 * feature). Everything goes through the back-end vtable (db_impl.h) in
 * portable SQL (no JSON functions; upserts with ON CONFLICT, never INSERT
 * OR REPLACE; RETURNING for new ids), so SQLite files and PostgreSQL
 * stores carry the same tables. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "db/db_impl.h"

const char ob_db_schema_v3[] =
    "CREATE TABLE profiles("
    " id INTEGER PRIMARY KEY,"
    " host TEXT NOT NULL, workload_key TEXT NOT NULL, target TEXT NOT NULL,"
    " template TEXT NOT NULL, config_index INTEGER NOT NULL, resources TEXT NOT NULL,"
    " corun_workload TEXT NOT NULL DEFAULT '', corun_mode TEXT NOT NULL DEFAULT '',"
    " pressure_mib REAL NOT NULL DEFAULT 0,"
    " threads INTEGER NOT NULL DEFAULT 0, cores TEXT NOT NULL DEFAULT '',"
    " sweep TEXT NOT NULL DEFAULT '', knob TEXT NOT NULL DEFAULT '',"
    " knob_value TEXT NOT NULL DEFAULT '', entity TEXT NOT NULL DEFAULT '',"
    " corun_cores TEXT NOT NULL DEFAULT '', corun_template TEXT NOT NULL DEFAULT '',"
    " corun_config INTEGER NOT NULL DEFAULT 0, pressure_how TEXT NOT NULL DEFAULT '',"
    " error_no INTEGER NOT NULL, error_msg TEXT NOT NULL DEFAULT '',"
    " median_s REAL, mean_s REAL, cv REAL, costs TEXT NOT NULL DEFAULT '[]',"
    " number INTEGER NOT NULL DEFAULT 0, repeat INTEGER NOT NULL DEFAULT 0,"
    " min_repeat_ms REAL, flush INTEGER, timer_overhead_s REAL,"
    " below_resolution INTEGER NOT NULL DEFAULT 0, noisy INTEGER NOT NULL DEFAULT 0,"
    " extra_repeats INTEGER NOT NULL DEFAULT 0, build_s REAL, run_s REAL,"
    " flops REAL, bytes REAL, gflops REAL, intensity REAL, peak_gflops REAL, peak_pct REAL,"
    " bandwidth_gbps REAL, alone_s REAL, slowdown REAL, corun_partner_s REAL,"
    " pressure_gbps REAL, cycles REAL, instructions REAL, l1d_misses REAL, llc_misses REAL,"
    " task_clock_ns REAL, counters_note TEXT NOT NULL DEFAULT '',"
    " timestamp REAL NOT NULL,"
    " UNIQUE(workload_key, template, host, target, resources, config_index, corun_workload,"
    " corun_mode, pressure_mib));"
    "CREATE INDEX profiles_time ON profiles(timestamp);"
    "CREATE TABLE host_limits("
    " host TEXT NOT NULL, name TEXT NOT NULL, isa TEXT NOT NULL, threads INTEGER NOT NULL,"
    " bytes REAL NOT NULL DEFAULT 0, value REAL NOT NULL, unit TEXT NOT NULL,"
    " verified INTEGER NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '',"
    " timestamp REAL NOT NULL, PRIMARY KEY(host, name, isa, threads));"
    "CREATE TABLE tuning_runs("
    " id INTEGER PRIMARY KEY, host TEXT NOT NULL, workload_key TEXT NOT NULL,"
    " target TEXT NOT NULL, resources TEXT NOT NULL, template TEXT NOT NULL,"
    " tuner TEXT NOT NULL, started REAL NOT NULL, ended REAL,"
    " trials INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX tuning_runs_key ON tuning_runs(workload_key, template, host, target,"
    " resources, started);";

/* query-cache shapes of this file: above every shape record.c builds */
enum {
  SH_PUT = 0x40000000u,
  SH_PUT_REPLACE,
  SH_GET,
  SH_QUERY, /* | filter bits << 8 */
  SH_LIMIT_PUT = 0x40000010u,
  SH_LIMIT_GET,
  SH_LIMIT_GET_HOST,
  SH_RUN_BEGIN,
  SH_RUN_END,
  SH_RUN_GET,
  SH_RUN_GET_HOST,
};

bool ob_db_has_table(ob_db *db, const char *name) {
  bool have = false;
  if (db->be->table_exists(db, name, &have) != OB_OK) {
    ob_ctx_clear_error(db->ctx);
    return false;
  }
  return have;
}

/* ---- columns ------------------------------------------------------------------------
 * One list drives the insert, the select and the export. */
typedef enum pcol_kind { PC_TEXT, PC_INT, PC_REAL, PC_BOOL } pcol_kind;
typedef struct pcol {
  const char *name;
  pcol_kind kind;
} pcol;

static const pcol k_cols[] = {
    /* key */
    {"host", PC_TEXT}, {"workload_key", PC_TEXT}, {"target", PC_TEXT}, {"template", PC_TEXT},
    {"config_index", PC_INT}, {"resources", PC_TEXT}, {"corun_workload", PC_TEXT},
    {"corun_mode", PC_TEXT}, {"pressure_mib", PC_REAL},
    /* the point */
    {"threads", PC_INT}, {"cores", PC_TEXT}, {"sweep", PC_TEXT}, {"knob", PC_TEXT},
    {"knob_value", PC_TEXT}, {"entity", PC_TEXT}, {"corun_cores", PC_TEXT},
    {"corun_template", PC_TEXT}, {"corun_config", PC_INT}, {"pressure_how", PC_TEXT},
    /* the result */
    {"error_no", PC_INT}, {"error_msg", PC_TEXT}, {"median_s", PC_REAL}, {"mean_s", PC_REAL},
    {"cv", PC_REAL}, {"costs", PC_TEXT}, {"number", PC_INT}, {"repeat", PC_INT},
    {"min_repeat_ms", PC_REAL}, {"flush", PC_BOOL}, {"timer_overhead_s", PC_REAL},
    {"below_resolution", PC_BOOL}, {"noisy", PC_BOOL}, {"extra_repeats", PC_INT},
    {"build_s", PC_REAL}, {"run_s", PC_REAL},
    /* derived */
    {"flops", PC_REAL}, {"bytes", PC_REAL}, {"gflops", PC_REAL}, {"intensity", PC_REAL},
    {"peak_gflops", PC_REAL}, {"peak_pct", PC_REAL}, {"bandwidth_gbps", PC_REAL},
    {"alone_s", PC_REAL}, {"slowdown", PC_REAL}, {"corun_partner_s", PC_REAL},
    {"pressure_gbps", PC_REAL},
    /* counters, in ob_counter order */
    {"cycles", PC_REAL}, {"instructions", PC_REAL}, {"l1d_misses", PC_REAL},
    {"llc_misses", PC_REAL}, {"task_clock_ns", PC_REAL}, {"counters_note", PC_TEXT},
    {"timestamp", PC_REAL},
};
enum { NCOLS = sizeof k_cols / sizeof k_cols[0], NKEY = 9, COL_COUNTERS = 46 };
_Static_assert(OB_COUNTER_COUNT == 5, "profiles has one column per ob_counter");

/* A column's value of p, as text (*text), integer (*i) or real (*r). */
typedef struct pval {
  const char *text;
  int64_t i;
  double r;
} pval;

static void col_value(const ob_db_profile *p, int c, const char *costs, pval *v) {
  const ob_timing *t = &p->timing;
  const ob_db_profile_key *k = &p->key;
  memset(v, 0, sizeof *v);
  v->r = NAN;
#define T(x) v->text = (x) ? (x) : ""
  switch (c) {
  case 0: T(k->host); break;
  case 1: T(k->workload); break;
  case 2: T(k->target); break;
  case 3: T(k->tmpl); break;
  case 4: v->i = (int64_t)k->config_index; break;
  case 5: T(k->resources); break;
  case 6: T(k->corun_workload); break;
  case 7: T(k->corun_mode); break;
  case 8: v->r = k->pressure_mib; break;
  case 9: v->i = p->nthreads; break;
  case 10: T(p->cores); break;
  case 11: T(p->sweep); break;
  case 12: T(p->knob); break;
  case 13: T(p->knob_value); break;
  case 14: T(p->entity); break;
  case 15: T(p->corun_cores); break;
  case 16: T(p->corun_template); break;
  case 17: v->i = (int64_t)p->corun_config; break;
  case 18: T(p->pressure_how); break;
  case 19: v->i = p->error_no; break;
  case 20: T(p->error_msg); break;
  case 21: v->r = t->median_s; break;
  case 22: v->r = t->mean_s; break;
  case 23: v->r = t->cv; break;
  case 24: T(costs); break;
  case 25: v->i = t->number; break;
  case 26: v->i = t->repeat; break;
  case 27: v->r = t->min_repeat_ms; break;
  case 28: v->i = t->flush; break;
  case 29: v->r = t->timer_overhead_s > 0 ? t->timer_overhead_s : NAN; break;
  case 30: v->i = t->below_resolution; break;
  case 31: v->i = t->noisy; break;
  case 32: v->i = t->extra_repeats; break;
  case 33: v->r = p->build_s; break;
  case 34: v->r = p->run_s; break;
  case 35: v->r = p->flops; break;
  case 36: v->r = p->bytes; break;
  case 37: v->r = p->gflops; break;
  case 38: v->r = p->intensity; break;
  case 39: v->r = p->peak_gflops; break;
  case 40: v->r = p->peak_pct; break;
  case 41: v->r = p->bandwidth_gbps; break;
  case 42: v->r = p->alone_s; break;
  case 43: v->r = p->slowdown; break;
  case 44: v->r = p->corun_partner_s; break;
  case 45: v->r = p->pressure_gbps; break;
  case 46: case 47: case 48: case 49: case 50: v->r = p->counters[c - COL_COUNTERS]; break;
  case 51: T(p->counters_note); break;
  case 52: v->r = p->timestamp; break;
  default: OB_ASSERT(!"profiles column out of range");
  }
#undef T
}

static void bind_col(ob_dbstmt *st, int i, int c, const pval *v) {
  switch (k_cols[c].kind) {
  case PC_TEXT: ob_db_bind_text(st, i, v->text); break;
  case PC_INT:
  case PC_BOOL: ob_db_bind_int(st, i, v->i); break;
  case PC_REAL: ob_db_bind_real(st, i, v->r); break;
  }
}

static ob_status no_table(ob_db *db, const char *what) {
  return ob_fail(db->ctx, OB_ERR_UNSUPPORTED,
                 "database '%s' has schema version %d, without the profiler's tables: %s needs "
                 "version 3 (open it for writing once to upgrade it)",
                 db->path, db->version, what);
}

static bool mode_ok(const char *m) { return !strcmp(m, "stream") || !strcmp(m, "full"); }

static ob_status check_key(ob_db *db, const ob_db_profile_key *k, const char *what) {
  const char *cw = k->corun_workload ? k->corun_workload : "";
  const char *cm = k->corun_mode ? k->corun_mode : "";
  const char *why = NULL;
  if (!k->host || !*k->host || !k->workload || !*k->workload || !k->target || !k->tmpl ||
      !*k->tmpl || !k->resources)
    why = "needs host, workload, target, template and resources";
  else if (*cw && !mode_ok(cm))
    why = "has a co-runner but a co-run mode that is neither 'stream' nor 'full'";
  else if (!*cw && *cm)
    why = "has a co-run mode but no co-runner";
  else if (!(k->pressure_mib >= 0) || !isfinite(k->pressure_mib))
    why = "has a cache pressure that is negative or not a number";
  else if (k->config_index > (uint64_t)INT64_MAX)
    why = "has a config index beyond 2^63";
  if (!why) return OB_OK;
  return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s': %s of workload %s %s", db->path, what,
                 k->workload ? k->workload : "(null)", why);
}

ob_status ob_db_put_profile(ob_db *db, const ob_db_profile *p, unsigned flags, bool *stored) {
  OB_ASSERT(db && p);
  if (stored) *stored = false;
  ob_status s = check_key(db, &p->key, "profile point");
  if (s) return s;
  if (db->readonly)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s' was opened read-only", db->path);
  if (db->version < 3) return no_table(db, "storing a profile");
  const ob_timing *t = &p->timing;
  if (p->error_no == 0 && !(t->median_s > 0 && isfinite(t->median_s)))
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "database '%s': profile point of workload %s: an error-free point needs a "
                   "positive median (got %g)",
                   db->path, p->key.workload, t->median_s);
  if (t->ncosts < 0 || t->ncosts > OB_TIMING_MAX_COSTS)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s': profile point of workload %s: %d costs",
                   db->path, p->key.workload, t->ncosts);

  ob_str costs = {0}, sql = {0};
  ob_str_append(&costs, "[");
  for (int i = 0; i < t->ncosts; i++) ob_str_appendf(&costs, "%s%.17g", i ? "," : "", t->costs[i]);
  ob_str_append(&costs, "]");
  bool replace = flags & OB_DB_REPLACE;
  ob_str_append(&sql, "INSERT INTO profiles(");
  for (int c = 0; c < NCOLS; c++) ob_str_appendf(&sql, "%s%s", c ? ", " : "", k_cols[c].name);
  ob_str_append(&sql, ") VALUES (");
  for (int c = 0; c < NCOLS; c++) ob_str_appendf(&sql, "%s?%d", c ? ", " : "", c + 1);
  /* an upsert on the key (the first NKEY columns), not INSERT OR REPLACE:
   * PostgreSQL has only this */
  if (replace) {
    ob_str_append(&sql, ") ON CONFLICT(");
    for (int c = 0; c < NKEY; c++) ob_str_appendf(&sql, "%s%s", c ? ", " : "", k_cols[c].name);
    ob_str_append(&sql, ") DO UPDATE SET ");
    for (int c = NKEY; c < NCOLS; c++)
      ob_str_appendf(&sql, "%s%s = excluded.%s", c > NKEY ? ", " : "", k_cols[c].name, k_cols[c].name);
  } else {
    ob_str_append(&sql, ") ON CONFLICT DO NOTHING");
  }
  if (costs.failed || sql.failed) {
    s = ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': storing a profile point: out of memory", db->path);
    goto done;
  }
  double now = ob_db_unix_now();
  if ((s = ob_db_txn_begin(db))) goto done;
  /* placeholder rows keep every point's host and workload resolvable */
  ob_dbstmt *st;
  if ((s = ob_db_stmt(db, OB_DBS_HOST_PLACEHOLDER, &st))) goto rollback;
  ob_db_bind_text(st, 1, p->key.host);
  ob_db_bind_double(st, 2, now);
  int rc = ob_db_step(st);
  ob_db_reset(st);
  if (rc != OB_DB_DONE) goto sqlfail;
  if ((s = ob_db_stmt(db, OB_DBS_WL_PLACEHOLDER, &st))) goto rollback;
  char op[64]; /* the key's first part, as record.c files placeholders */
  size_t ol = strcspn(p->key.workload, "/");
  snprintf(op, sizeof op, "%.*s", (int)(ol < sizeof op ? ol : sizeof op - 1), p->key.workload);
  ob_db_bind_text(st, 1, p->key.workload);
  ob_db_bind_text(st, 2, op);
  ob_db_bind_double(st, 3, now);
  rc = ob_db_step(st);
  ob_db_reset(st);
  if (rc != OB_DB_DONE) goto sqlfail;

  if ((s = ob_db_stmt_shape(db, replace ? SH_PUT_REPLACE : SH_PUT, sql.data, &st))) goto rollback;
  ob_db_profile q = *p;
  if (!(q.timestamp > 0)) q.timestamp = now;
  for (int c = 0; c < NCOLS; c++) {
    pval v;
    col_value(&q, c, costs.data, &v);
    bind_col(st, c + 1, c, &v);
  }
  rc = ob_db_step(st);
  int changed = db->be->changes(db);
  ob_db_reset(st);
  if (rc != OB_DB_DONE) goto sqlfail;
  if ((s = ob_db_txn_commit(db))) goto done;
  if (stored) *stored = changed > 0;
  goto done;
sqlfail:
  s = ob_db_sqlfail(db, rc, "storing a profile point of workload %s", p->key.workload);
rollback:
  ob_db_txn_rollback(db);
done:
  ob_str_free(&costs);
  ob_str_free(&sql);
  return s;
}

ob_status ob_db_get_profile(ob_db *db, const ob_db_profile_key *key, bool *found, double *median_s) {
  OB_ASSERT(db && key && found);
  *found = false;
  if (median_s) *median_s = NAN;
  ob_status s = check_key(db, key, "profile point");
  if (s) return s;
  if (db->version < 3) return OB_OK;
  ob_dbstmt *st;
  s = ob_db_stmt_shape(db, SH_GET,
                       "SELECT error_no, median_s FROM profiles WHERE workload_key = ?2 AND"
                       " template = ?4 AND host = ?1 AND target = ?3 AND resources = ?6 AND"
                       " config_index = ?5 AND corun_workload = ?7 AND corun_mode = ?8 AND"
                       " pressure_mib = ?9",
                       &st);
  if (s) return s;
  ob_db_profile p = {.key = *key};
  for (int c = 0; c < NKEY; c++) {
    pval v;
    col_value(&p, c, NULL, &v);
    bind_col(st, c + 1, c, &v);
  }
  int rc = ob_db_step(st);
  if (rc == OB_DB_ROW) {
    *found = true;
    if (median_s && (int)ob_db_col_int(st, 0) == 0) *median_s = ob_db_col_real(st, 1);
    rc = OB_DB_DONE;
  }
  ob_db_reset(st);
  if (rc != OB_DB_DONE)
    return ob_db_sqlfail(db, rc, "looking up a profile point of workload %s", key->workload);
  return OB_OK;
}

/* ---- queries ------------------------------------------------------------------------- */

void ob_db_profiles_free(ob_db_profiles *p) {
  if (!p) return;
  ob_arena_free(p->arena);
  free(p);
}

static char *dup_col(ob_arena *a, ob_dbstmt *st, int i) {
  const char *v = ob_db_col_text(st, i);
  return ob_arena_strdup(a, v ? v : "");
}

/* "[1e-05,2e-05]" into t->costs (at most OB_TIMING_MAX_COSTS). */
static void read_costs(const char *text, ob_timing *t) {
  t->ncosts = 0;
  const char *p = text ? strchr(text, '[') : NULL;
  if (!p) return;
  p++;
  while (t->ncosts < OB_TIMING_MAX_COSTS) {
    while (*p == ' ' || *p == ',') p++;
    char *end;
    double v = strtod(p, &end);
    if (end == p) break;
    t->costs[t->ncosts++] = v;
    p = end;
  }
}

/* Reads the row's columns (k_cols order, then w.op, w.attrs) into *p, its
 * strings copied into a. */
static void read_row(ob_dbstmt *st, ob_arena *a, ob_db_profile *p) {
  memset(p, 0, sizeof *p);
  const char **text[NCOLS] = {0};
  text[0] = &p->key.host, text[1] = &p->key.workload, text[2] = &p->key.target;
  text[3] = &p->key.tmpl, text[5] = &p->key.resources, text[6] = &p->key.corun_workload;
  text[7] = &p->key.corun_mode, text[10] = &p->cores, text[11] = &p->sweep;
  text[12] = &p->knob, text[13] = &p->knob_value, text[14] = &p->entity;
  text[15] = &p->corun_cores, text[16] = &p->corun_template, text[18] = &p->pressure_how;
  text[20] = &p->error_msg, text[51] = &p->counters_note;
  for (int c = 0; c < NCOLS; c++)
    if (text[c]) *text[c] = dup_col(a, st, c);
  ob_timing *t = &p->timing;
  p->key.config_index = (uint64_t)ob_db_col_int(st, 4);
  p->key.pressure_mib = ob_db_col_double(st, 8);
  p->nthreads = (int)ob_db_col_int(st, 9);
  p->corun_config = (uint64_t)ob_db_col_int(st, 17);
  p->error_no = (int)ob_db_col_int(st, 19);
  t->median_s = ob_db_col_real(st, 21);
  t->mean_s = ob_db_col_real(st, 22);
  t->cv = ob_db_col_real(st, 23);
  read_costs(ob_db_col_text(st, 24), t);
  t->number = (int)ob_db_col_int(st, 25);
  t->repeat = (int)ob_db_col_int(st, 26);
  t->min_repeat_ms = ob_db_col_real(st, 27);
  t->flush = (int)ob_db_col_int(st, 28) != 0;
  double ov = ob_db_col_real(st, 29);
  t->timer_overhead_s = isfinite(ov) ? ov : 0;
  t->below_resolution = (int)ob_db_col_int(st, 30) != 0;
  t->noisy = (int)ob_db_col_int(st, 31) != 0;
  t->extra_repeats = (int)ob_db_col_int(st, 32);
  p->build_s = ob_db_col_real(st, 33);
  p->run_s = ob_db_col_real(st, 34);
  double *r[] = {&p->flops,     &p->bytes,          &p->gflops,  &p->intensity,
                 &p->peak_gflops, &p->peak_pct,     &p->bandwidth_gbps, &p->alone_s,
                 &p->slowdown,  &p->corun_partner_s, &p->pressure_gbps};
  for (int i = 0; i < (int)(sizeof r / sizeof r[0]); i++) *r[i] = ob_db_col_real(st, 35 + i);
  for (int c = 0; c < OB_COUNTER_COUNT; c++) p->counters[c] = ob_db_col_real(st, COL_COUNTERS + c);
  p->timestamp = ob_db_col_double(st, 52);
  p->op = dup_col(a, st, NCOLS);
  p->attrs = dup_col(a, st, NCOLS + 1);
}

/* The select of f's shape over profiles p joined to workloads w, bound. */
static ob_status query_stmt(ob_db *db, const ob_db_profile_filter *f, ob_dbstmt **out) {
  static const char *const k_cond[5] = {"p.host = ?1", "p.workload_key = ?2", "p.target = ?3",
                                        "w.op = ?4", "p.sweep = ?5"};
  const char *val[5] = {f->host, f->workload, f->target, f->op, f->sweep};
  unsigned shape = 0;
  for (int i = 0; i < 5; i++)
    if (val[i]) shape |= 1u << i;
  if (f->ok_only) shape |= 1u << 5;
  ob_str sql = {0};
  ob_str_append(&sql, "SELECT ");
  for (int c = 0; c < NCOLS; c++) ob_str_appendf(&sql, "%sp.%s", c ? ", " : "", k_cols[c].name);
  ob_str_append(&sql, ", coalesce(w.op, ''), coalesce(w.attrs, '{}')"
                      " FROM profiles p LEFT JOIN workloads w ON w.key = p.workload_key");
  bool first = true;
  for (int i = 0; i < 5; i++) {
    if (!val[i]) continue;
    ob_str_appendf(&sql, " %s %s", first ? "WHERE" : "AND", k_cond[i]);
    first = false;
  }
  if (f->ok_only) ob_str_appendf(&sql, " %s p.error_no = 0", first ? "WHERE" : "AND");
  ob_str_append(&sql, " ORDER BY p.timestamp, p.id");
  ob_status s = sql.failed ? ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': out of memory", db->path)
                           : ob_db_stmt_shape(db, SH_QUERY | shape << 8, sql.data, out);
  ob_str_free(&sql);
  if (s) return s;
  for (int i = 0; i < 5; i++)
    if (val[i]) ob_db_bind_text(*out, i + 1, val[i]);
  return OB_OK;
}

ob_status ob_db_query_profiles(ob_db *db, const ob_db_profile_filter *f, ob_db_profiles **out) {
  OB_ASSERT(db && out);
  *out = NULL;
  ob_db_profile_filter all = {0};
  if (!f) f = &all;
  ob_db_profiles *res = calloc(1, sizeof *res);
  if (!res || !(res->arena = ob_arena_new(db->ctx, 1 << 16))) {
    free(res);
    return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': reading profiles: out of memory", db->path);
  }
  if (db->version < 3 || !ob_db_has_table(db, "profiles")) {
    *out = res;
    return OB_OK;
  }
  ob_dbstmt *st = NULL;
  ob_status s = query_stmt(db, f, &st);
  int64_t cap = 0;
  int rc = OB_DB_DONE;
  while (!s && (rc = ob_db_step(st)) == OB_DB_ROW) {
    if (res->n == cap) {
      int64_t nc = cap ? cap * 2 : 64;
      ob_db_profile *np = realloc(res->p, (size_t)nc * sizeof *np);
      if (!np) {
        s = ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': reading profiles: out of memory", db->path);
        break;
      }
      res->p = np;
      cap = nc;
    }
    read_row(st, res->arena, &res->p[res->n++]);
  }
  if (st) ob_db_reset(st);
  if (!s && rc != OB_DB_DONE) s = ob_db_sqlfail(db, rc, "reading profiles");
  if (!s && ob_arena_failed(res->arena))
    s = ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': reading profiles: out of memory", db->path);
  if (s) {
    /* the rows live in malloc'd p, freed with the result */
    free(res->p);
    ob_arena_free(res->arena);
    free(res);
    return s;
  }
  /* hand p's ownership to the arena's lifetime: copy into it */
  if (res->n) {
    ob_db_profile *ap = ob_arena_alloc(res->arena, (size_t)res->n * sizeof *ap);
    if (!ap) {
      free(res->p);
      ob_arena_free(res->arena);
      free(res);
      return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': reading profiles: out of memory", db->path);
    }
    memcpy(ap, res->p, (size_t)res->n * sizeof *ap);
    free(res->p);
    res->p = ap;
  } else {
    free(res->p);
    res->p = NULL;
  }
  *out = res;
  return OB_OK;
}

/* ---- the dataset ------------------------------------------------------------------------ */

/* RFC 4180: quoted when it holds a comma, quote or line break. */
static void csv_text(FILE *f, const char *s) {
  if (!s) s = "";
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (const char *p = s; *p; p++) {
    if (*p == '"') fputc('"', f);
    fputc(*p, f);
  }
  fputc('"', f);
}

/* The columns of the export: the table's, with the workload's operator
 * after its key and its attributes after the point. costs stays a JSON
 * list; the export drops nothing. */
typedef struct attr_cols {
  int n, cap;
  char **name;
} attr_cols;

static bool attr_add(attr_cols *ac, const char *name) {
  for (int i = 0; i < ac->n; i++)
    if (!strcmp(ac->name[i], name)) return true;
  if (ac->n == ac->cap) {
    int nc = ac->cap ? ac->cap * 2 : 32;
    char **nn = realloc(ac->name, (size_t)nc * sizeof *nn);
    if (!nn) return false;
    ac->name = nn;
    ac->cap = nc;
  }
  if (!(ac->name[ac->n] = strdup(name))) return false;
  ac->n++;
  return true;
}

static void attr_free(attr_cols *ac) {
  for (int i = 0; i < ac->n; i++) free(ac->name[i]);
  free(ac->name);
}

/* a column name of the table that an attribute must not take */
static bool clashes(const char *name) {
  for (int c = 0; c < NCOLS; c++)
    if (!strcmp(k_cols[c].name, name)) return true;
  return !strcmp(name, "op");
}

static void json_real(cJSON *o, const char *k, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
  else cJSON_AddNullToObject(o, k);
}

ob_status ob_db_export_profiles(ob_db *db, const ob_db_profile_filter *f, const char *format,
                                const char *path, int64_t *nrows) {
  OB_ASSERT(db);
  if (nrows) *nrows = 0;
  bool csv = format && !strcmp(format, "csv"), jsonl = format && !strcmp(format, "jsonl");
  if (!csv && !jsonl)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "exporting profiles: unknown format '%s' (expected csv or jsonl)",
                   format ? format : "(null)");
  ob_db_profiles *ps = NULL;
  ob_status s = ob_db_query_profiles(db, f, &ps);
  if (s) return s;
  attr_cols ac = {0};
  cJSON **attrs = ps->n ? calloc((size_t)ps->n, sizeof *attrs) : NULL;
  ob_db_out o = {0};
  bool opened = false;
  if (ps->n && !attrs) {
    s = ob_fail(db->ctx, OB_ERR_NOMEM, "exporting profiles: out of memory");
    goto done;
  }
  /* the attribute columns: the union over the rows, in order of first appearance */
  for (int64_t i = 0; i < ps->n; i++) {
    attrs[i] = cJSON_Parse(ps->p[i].attrs);
    const cJSON *a;
    cJSON_ArrayForEach(a, attrs[i]) {
      if (!a->string) continue;
      char name[80];
      snprintf(name, sizeof name, "%s%s", clashes(a->string) ? "wl_" : "", a->string);
      if (!attr_add(&ac, name)) {
        s = ob_fail(db->ctx, OB_ERR_NOMEM, "exporting profiles: out of memory");
        goto done;
      }
    }
  }
  if ((s = ob_db_out_open(db, path, &o))) goto done;
  opened = true;
  FILE *out = o.f;
  if (csv) {
    for (int c = 0; c < NCOLS; c++) {
      if (c == NKEY) fputs("op,", out);
      if (c == 19)
        for (int k = 0; k < ac.n; k++) {
          csv_text(out, ac.name[k]);
          fputc(',', out);
        }
      fprintf(out, "%s%s", k_cols[c].name, c + 1 < NCOLS ? "," : "\n");
    }
  }
  for (int64_t i = 0; i < ps->n; i++) {
    const ob_db_profile *p = &ps->p[i];
    ob_str costs = {0};
    ob_str_append(&costs, "[");
    for (int k = 0; k < p->timing.ncosts; k++)
      ob_str_appendf(&costs, "%s%.9g", k ? "," : "", p->timing.costs[k]);
    ob_str_append(&costs, "]");
    cJSON *row = jsonl ? cJSON_CreateObject() : NULL;
    for (int c = 0; c < NCOLS; c++) {
      if (c == NKEY) {
        if (csv) {
          csv_text(out, p->op);
          fputc(',', out);
        } else {
          cJSON_AddStringToObject(row, "op", p->op);
        }
      }
      if (c == 19)
        for (int k = 0; k < ac.n; k++) {
          const char *nm = ac.name[k];
          const cJSON *a = cJSON_GetObjectItemCaseSensitive(
              attrs[i], strncmp(nm, "wl_", 3) || !clashes(nm + 3) ? nm : nm + 3);
          if (csv) {
            if (cJSON_IsNumber(a)) fprintf(out, "%.17g", a->valuedouble);
            else if (cJSON_IsString(a)) csv_text(out, a->valuestring);
            fputc(',', out);
          } else if (cJSON_IsNumber(a)) {
            cJSON_AddNumberToObject(row, nm, a->valuedouble);
          } else if (cJSON_IsString(a)) {
            cJSON_AddStringToObject(row, nm, a->valuestring);
          } else {
            cJSON_AddNullToObject(row, nm);
          }
        }
      pval v;
      col_value(p, c, costs.data, &v);
      if (csv) {
        switch (k_cols[c].kind) {
        case PC_TEXT: csv_text(out, v.text); break;
        case PC_INT: fprintf(out, "%lld", (long long)v.i); break;
        case PC_BOOL:
          /* an unknown protocol leaves the cache state unknown too */
          if (c == 28 && !isfinite(p->timing.min_repeat_ms)) break;
          fprintf(out, "%d", v.i ? 1 : 0);
          break;
        case PC_REAL:
          if (isfinite(v.r)) fprintf(out, "%.9g", v.r);
          break;
        }
        fputc(c + 1 < NCOLS ? ',' : '\n', out);
      } else {
        switch (k_cols[c].kind) {
        case PC_TEXT:
          if (c == 24) cJSON_AddItemToObject(row, "costs", cJSON_Parse(v.text));
          else cJSON_AddStringToObject(row, k_cols[c].name, v.text);
          break;
        case PC_INT: cJSON_AddNumberToObject(row, k_cols[c].name, (double)v.i); break;
        case PC_BOOL:
          if (c == 28 && !isfinite(p->timing.min_repeat_ms)) cJSON_AddNullToObject(row, "flush");
          else cJSON_AddBoolToObject(row, k_cols[c].name, v.i != 0);
          break;
        case PC_REAL: json_real(row, k_cols[c].name, v.r); break;
        }
      }
    }
    bool bad = costs.failed;
    ob_str_free(&costs);
    if (jsonl) {
      char *line = row ? cJSON_PrintUnformatted(row) : NULL;
      cJSON_Delete(row);
      if (!line) bad = true;
      else {
        fputs(line, out);
        fputc('\n', out);
        cJSON_free(line);
      }
    }
    if (bad) {
      s = ob_fail(db->ctx, OB_ERR_NOMEM, "exporting profiles: out of memory");
      goto done;
    }
    if (nrows) (*nrows)++;
  }
done:
  if (opened) {
    ob_status cs = ob_db_out_close(db, &o, !s);
    if (!s) s = cs;
  }
  for (int64_t i = 0; attrs && i < ps->n; i++) cJSON_Delete(attrs[i]);
  free(attrs);
  attr_free(&ac);
  ob_db_profiles_free(ps);
  return s;
}

/* ---- host limits ------------------------------------------------------------------------- */

/* The arena-backed row arrays of host limits and tuning runs: *arr grown
 * (doubling, copied) to hold one more element of `elem` bytes; false when
 * the arena is out of memory (then ob_arena_failed says so too). */
static bool arena_room(ob_arena *a, void **arr, int64_t n, int64_t *cap, size_t elem) {
  if (n < *cap) return true;
  int64_t nc = *cap ? *cap * 2 : 32;
  void *na = ob_arena_alloc(a, (size_t)nc * elem);
  if (!na) return false;
  if (n) memcpy(na, *arr, (size_t)n * elem);
  *arr = na;
  *cap = nc;
  return true;
}

/* The end of such a read: out of memory, a failing step, or OB_OK. */
static ob_status read_end(ob_db *db, ob_arena *a, int rc, const char *what) {
  if (ob_arena_failed(a)) return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': %s: out of memory", db->path, what);
  if (rc != OB_DB_DONE) return ob_db_sqlfail(db, rc, "%s", what);
  return OB_OK;
}

void ob_db_host_limits_free(ob_db_host_limits *l) {
  if (!l) return;
  ob_arena_free(l->arena);
  free(l);
}

ob_status ob_db_put_host_limit(ob_db *db, const ob_db_host_limit *l) {
  OB_ASSERT(db && l);
  if (!l->host || !*l->host || !l->name || !*l->name || !l->unit || l->threads < 1 ||
      !(l->value > 0) || !isfinite(l->value))
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                   "database '%s': a host limit needs a host, a name, a unit, threads >= 1 and a "
                   "positive value (got %s %s at %d threads: %g)",
                   db->path, l->host ? l->host : "(null)", l->name ? l->name : "(null)", l->threads,
                   l->value);
  if (db->readonly)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s' was opened read-only", db->path);
  if (db->version < 3) return no_table(db, "storing a host limit");
  ob_dbstmt *st;
  ob_status s = ob_db_stmt_shape(
      db, SH_LIMIT_PUT,
      "INSERT INTO host_limits(host, name, isa, threads, bytes, value, unit, verified, note,"
      " timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
      " ON CONFLICT(host, name, isa, threads) DO UPDATE SET bytes = excluded.bytes,"
      " value = excluded.value, unit = excluded.unit, verified = excluded.verified,"
      " note = excluded.note, timestamp = excluded.timestamp",
      &st);
  if (s) return s;
  ob_db_bind_text(st, 1, l->host);
  ob_db_bind_text(st, 2, l->name);
  ob_db_bind_text(st, 3, l->isa ? l->isa : "");
  ob_db_bind_int(st, 4, l->threads);
  ob_db_bind_double(st, 5, isfinite(l->bytes) ? l->bytes : 0);
  ob_db_bind_double(st, 6, l->value);
  ob_db_bind_text(st, 7, l->unit);
  ob_db_bind_int(st, 8, l->verified);
  ob_db_bind_text(st, 9, l->note ? l->note : "");
  ob_db_bind_double(st, 10, l->timestamp > 0 ? l->timestamp : ob_db_unix_now());
  int rc = ob_db_step(st);
  ob_db_reset(st);
  if (rc != OB_DB_DONE) return ob_db_sqlfail(db, rc, "storing host limit %s of %s", l->name, l->host);
  return OB_OK;
}

ob_status ob_db_get_host_limits(ob_db *db, const char *host, ob_db_host_limits **out) {
  OB_ASSERT(db && out);
  *out = NULL;
  ob_db_host_limits *res = calloc(1, sizeof *res);
  if (!res || !(res->arena = ob_arena_new(db->ctx, 1 << 12))) {
    free(res);
    return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': out of memory", db->path);
  }
  if (db->version < 3 || !ob_db_has_table(db, "host_limits")) {
    *out = res;
    return OB_OK;
  }
  ob_dbstmt *st;
  ob_status s = ob_db_stmt_shape(
      db, host ? SH_LIMIT_GET_HOST : SH_LIMIT_GET,
      host ? "SELECT host, name, isa, threads, bytes, value, unit, verified, note, timestamp"
             " FROM host_limits WHERE host = ?1 ORDER BY host, name, isa, threads"
           : "SELECT host, name, isa, threads, bytes, value, unit, verified, note, timestamp"
             " FROM host_limits ORDER BY host, name, isa, threads",
      &st);
  if (s) {
    ob_db_host_limits_free(res);
    return s;
  }
  if (host) ob_db_bind_text(st, 1, host);
  int rc;
  int64_t cap = 0;
  while ((rc = ob_db_step(st)) == OB_DB_ROW) {
    if (!arena_room(res->arena, (void **)&res->l, res->n, &cap, sizeof *res->l)) break;
    ob_db_host_limit *l = &res->l[res->n++];
    l->host = dup_col(res->arena, st, 0);
    l->name = dup_col(res->arena, st, 1);
    l->isa = dup_col(res->arena, st, 2);
    l->threads = (int)ob_db_col_int(st, 3);
    l->bytes = ob_db_col_double(st, 4);
    l->value = ob_db_col_double(st, 5);
    l->unit = dup_col(res->arena, st, 6);
    l->verified = (int)ob_db_col_int(st, 7) != 0;
    l->note = dup_col(res->arena, st, 8);
    l->timestamp = ob_db_col_double(st, 9);
  }
  ob_db_reset(st);
  if ((s = read_end(db, res->arena, rc, "reading host limits"))) {
    ob_db_host_limits_free(res);
    return s;
  }
  *out = res;
  return OB_OK;
}

/* ---- tuning runs ---------------------------------------------------------------------------- */

void ob_db_tuning_runs_free(ob_db_tuning_runs *r) {
  if (!r) return;
  ob_arena_free(r->arena);
  free(r);
}

ob_status ob_db_begin_tuning_run(ob_db *db, const ob_db_key *k, const char *tuner, int64_t *id) {
  OB_ASSERT(db && k && tuner && id);
  *id = 0;
  if (!k->host || !k->workload || !k->target || !k->resources || !k->tmpl)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s': a tuning run needs the whole task key",
                   db->path);
  if (db->version < 3) return no_table(db, "filing a tuning run");
  ob_dbstmt *st;
  ob_status s = ob_db_stmt_shape(db, SH_RUN_BEGIN,
                                 "INSERT INTO tuning_runs(host, workload_key, target, resources,"
                                 " template, tuner, started) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                                 &st);
  if (s) return s;
  ob_db_bind_text(st, 1, k->host);
  ob_db_bind_text(st, 2, k->workload);
  ob_db_bind_text(st, 3, k->target);
  ob_db_bind_text(st, 4, k->resources);
  ob_db_bind_text(st, 5, k->tmpl);
  ob_db_bind_text(st, 6, tuner);
  ob_db_bind_double(st, 7, ob_db_unix_now());
  /* RETURNING, not the last rowid: the same on both back ends */
  int rc = ob_db_step(st);
  if (rc == OB_DB_ROW) {
    *id = ob_db_col_int(st, 0);
    rc = OB_DB_DONE;
  }
  ob_db_reset(st);
  if (rc != OB_DB_DONE) return ob_db_sqlfail(db, rc, "filing a tuning run of %s", k->workload);
  return OB_OK;
}

ob_status ob_db_end_tuning_run(ob_db *db, int64_t id, int trials) {
  OB_ASSERT(db);
  if (db->version < 3) return no_table(db, "closing a tuning run");
  ob_dbstmt *st;
  ob_status s = ob_db_stmt_shape(db, SH_RUN_END,
                                 "UPDATE tuning_runs SET ended = ?2, trials = ?3 WHERE id = ?1", &st);
  if (s) return s;
  ob_db_bind_int(st, 1, id);
  ob_db_bind_double(st, 2, ob_db_unix_now());
  ob_db_bind_int(st, 3, trials);
  int rc = ob_db_step(st);
  ob_db_reset(st);
  if (rc != OB_DB_DONE) return ob_db_sqlfail(db, rc, "closing tuning run %lld", (long long)id);
  return OB_OK;
}

ob_status ob_db_get_tuning_runs(ob_db *db, const char *host, ob_db_tuning_runs **out) {
  OB_ASSERT(db && out);
  *out = NULL;
  ob_db_tuning_runs *res = calloc(1, sizeof *res);
  if (!res || !(res->arena = ob_arena_new(db->ctx, 1 << 12))) {
    free(res);
    return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': out of memory", db->path);
  }
  if (db->version < 3 || !ob_db_has_table(db, "tuning_runs")) {
    *out = res;
    return OB_OK;
  }
  static const char k_sel[] = "SELECT host, workload_key, target, resources, template, tuner,"
                              " started, ended, trials FROM tuning_runs";
  char sql[512];
  snprintf(sql, sizeof sql, "%s%s ORDER BY workload_key, template, host, target, resources, started",
           k_sel, host ? " WHERE host = ?1" : "");
  ob_dbstmt *st;
  ob_status s = ob_db_stmt_shape(db, host ? SH_RUN_GET_HOST : SH_RUN_GET, sql, &st);
  if (s) {
    ob_db_tuning_runs_free(res);
    return s;
  }
  if (host) ob_db_bind_text(st, 1, host);
  int rc;
  int64_t cap = 0;
  while ((rc = ob_db_step(st)) == OB_DB_ROW) {
    if (!arena_room(res->arena, (void **)&res->r, res->n, &cap, sizeof *res->r)) break;
    ob_db_tuning_run *r = &res->r[res->n++];
    r->key.host = dup_col(res->arena, st, 0);
    r->key.workload = dup_col(res->arena, st, 1);
    r->key.target = dup_col(res->arena, st, 2);
    r->key.resources = dup_col(res->arena, st, 3);
    r->key.tmpl = dup_col(res->arena, st, 4);
    r->tuner = dup_col(res->arena, st, 5);
    r->started = ob_db_col_double(st, 6);
    r->ended = ob_db_col_real(st, 7);
    r->trials = (int)ob_db_col_int(st, 8);
  }
  ob_db_reset(st);
  if ((s = read_end(db, res->arena, rc, "reading tuning runs"))) {
    ob_db_tuning_runs_free(res);
    return s;
  }
  *out = res;
  return OB_OK;
}
