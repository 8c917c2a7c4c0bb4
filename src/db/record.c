/* record.c: measurements. Storing a trial (one transaction, with its config
 * entity), the resume set, and the filtered queries behind best / top-k /
 * records-of-a-workload / stats. Query results own their memory in one
 * arena (ob_db_records_free, ob_db_stats_free). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "db/db_impl.h"

ob_status ob_db_entity_normalize(const char *json, char **out) {
  *out = NULL;
  cJSON *j = cJSON_Parse(json);
  const cJSON *list = j;
  if (cJSON_IsObject(j)) list = cJSON_GetObjectItemCaseSensitive(j, "entity");
  ob_status s = OB_ERR_PARSE;
  if (cJSON_IsArray(list)) {
    *out = cJSON_PrintUnformatted(list);
    s = *out ? OB_OK : OB_ERR_NOMEM;
  }
  cJSON_Delete(j);
  return s;
}

/* ---- storing ------------------------------------------------------------------------ */

ob_status ob_db_record_check(ob_db *db, const ob_db_record *r) {
  char what[768];
  const char *why = NULL;
  if (!r->host || !*r->host) why = "no host fingerprint";
  else if (!r->workload || !*r->workload) why = "no workload key";
  else if (!r->tmpl || !*r->tmpl) why = "no template";
  else if (r->config_index > (uint64_t)INT64_MAX) why = "config index above 2^63";
  else if (r->timing.ncosts < 0 || r->timing.ncosts > OB_TIMING_MAX_COSTS ||
           r->nall_costs < 0 || (r->nall_costs > 0 && !r->all_costs))
    why = "bad cost list";
  else if (r->error_no == 0 && !(isfinite(r->timing.median_s) && r->timing.median_s > 0))
    why = "an error-free trial needs a positive median_s";
  else if (r->timing.number < 0 || r->timing.repeat < 0 || r->timing.extra_repeats < 0)
    why = "negative number, repeat or extra repeats";
  const double *costs = r->nall_costs > 0 ? r->all_costs : r->timing.costs;
  int ncosts = r->nall_costs > 0 ? r->nall_costs : r->timing.ncosts;
  for (int i = 0; !why && i < ncosts; i++)
    if (!isfinite(costs[i])) why = "a repeat's cost is not finite";
  if (!why) return OB_OK;
  ob_db_describe(r, what, sizeof what);
  return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s': cannot store measurement (%s): %s",
                 db->path, what, why);
}

/* The flush column's value of a known cache state: 0 warm, 1 cold, 2 cold
 * weights (ob_db_cache's order; NULL is the unknown protocol). */
static int flush_col(ob_db_cache c) { return (int)c - OB_DB_CACHE_WARM; }

static void bind_key(ob_dbstmt *st, const ob_db_record *r) {
  ob_db_bind_text(st, 1, r->host);
  ob_db_bind_text(st, 2, r->workload);
  ob_db_bind_text(st, 3, r->target ? r->target : "");
  ob_db_bind_text(st, 4, r->resources ? r->resources : "");
  ob_db_bind_text(st, 5, r->tmpl);
  ob_db_bind_int(st, 6, (int64_t)r->config_index);
}

/* The placeholder's operator: the key up to its first '/', as in "dense/f32/...". */
static void op_of_key(const char *key, char *op, size_t cap) {
  size_t n = strcspn(key, "/");
  if (n >= cap) n = cap - 1;
  memcpy(op, key, n);
  op[n] = '\0';
}

ob_status ob_db_put_locked(ob_db *db, const ob_db_record *r, unsigned flags, bool *stored) {
  char what[768];
  ob_status s = ob_db_record_check(db, r);
  if (s) return s;
  ob_db_describe(r, what, sizeof what);
  double now = ob_db_unix_now();
  char *entity = NULL;
  ob_str costs = {0};
  ob_dbstmt *st;
  int rc = OB_DB_DONE;

  if (r->entity) {
    s = ob_db_entity_normalize(r->entity, &entity);
    if (s) {
      s = ob_fail(db->ctx, s, "database '%s': config entity of measurement (%s) is not a JSON "
                              "entity list: %.200s",
                  db->path, what, r->entity);
      goto done;
    }
  }

  /* Placeholder rows keep every measurement's host and workload resolvable. */
  if ((s = ob_db_stmt(db, OB_DBS_HOST_PLACEHOLDER, &st))) goto done;
  ob_db_bind_text(st, 1, r->host);
  ob_db_bind_real(st, 2, now);
  if ((rc = ob_db_step(st)) != OB_DB_DONE) goto sqlfail;
  ob_db_reset(st);

  if ((s = ob_db_stmt(db, OB_DBS_WL_PLACEHOLDER, &st))) goto done;
  char op[64];
  op_of_key(r->workload, op, sizeof op);
  ob_db_bind_text(st, 1, r->workload);
  ob_db_bind_text(st, 2, op);
  ob_db_bind_real(st, 3, now);
  if ((rc = ob_db_step(st)) != OB_DB_DONE) goto sqlfail;
  ob_db_reset(st);

  bool replace = flags & OB_DB_REPLACE;
  if (replace) {
    if ((s = ob_db_stmt(db, OB_DBS_MEAS_HISTORY, &st))) goto done;
    bind_key(st, r);
    ob_db_bind_real(st, 27, now);
    if ((rc = ob_db_step(st)) != OB_DB_DONE) goto sqlfail;
    ob_db_reset(st);
  }

  const ob_timing *t = &r->timing;
  const double *cv = r->nall_costs > 0 ? r->all_costs : t->costs;
  int ncv = r->nall_costs > 0 ? r->nall_costs : t->ncosts;
  ob_str_append(&costs, "[");
  for (int i = 0; i < ncv; i++) ob_str_appendf(&costs, "%s%.17g", i ? "," : "", cv[i]);
  ob_str_append(&costs, "]");
  if (costs.failed) {
    s = ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': storing measurement (%s): out of memory", db->path, what);
    goto done;
  }

  if ((s = ob_db_stmt(db, replace ? OB_DBS_MEAS_REPLACE : OB_DBS_MEAS_INSERT, &st))) goto done;
  bind_key(st, r);
  ob_db_bind_int(st, 7, r->error_no);
  ob_db_bind_text(st, 8, r->error_msg ? r->error_msg : "");
  ob_db_bind_real(st, 9, t->median_s);
  ob_db_bind_real(st, 10, t->mean_s);
  ob_db_bind_real(st, 11, t->cv);
  ob_db_bind_text(st, 12, costs.data);
  ob_db_bind_int(st, 13, t->number);
  ob_db_bind_real(st, 14, r->build_s);
  ob_db_bind_real(st, 15, r->run_s);
  ob_db_bind_int(st, 16, r->nthreads);
  ob_db_bind_text(st, 17, r->cores);
  ob_db_bind_real(st, 18, r->timestamp > 0 ? r->timestamp : now);
  ob_db_bind_int(st, 19, t->repeat);
  bool known = !isnan(t->min_repeat_ms); /* else the protocol is unknown */
  ob_db_bind_real(st, 20, t->min_repeat_ms);
  if (known) ob_db_bind_int(st, 21, flush_col(ob_db_cache_of(t)));
  else ob_db_bind_null(st, 21);
  ob_db_bind_real(st, 22, t->timer_overhead_s > 0 ? t->timer_overhead_s : NAN);
  ob_db_bind_int(st, 23, t->below_resolution);
  ob_db_bind_int(st, 24, t->noisy);
  ob_db_bind_int(st, 25, t->extra_repeats);
  ob_db_bind_int(st, 26, t->emulated);
  if ((rc = ob_db_step(st)) != OB_DB_DONE) goto sqlfail;
  ob_db_reset(st);
  bool wrote = db->be->changes(db) > 0;
  if (stored) *stored = wrote;

  /* The entity goes with the trial: a put that stores nothing changes
   * nothing. */
  if (entity && wrote) {
    if ((s = ob_db_stmt(db, OB_DBS_CONFIG_PUT, &st))) goto done;
    ob_db_bind_text(st, 1, r->workload);
    ob_db_bind_text(st, 2, r->tmpl);
    ob_db_bind_int(st, 3, (int64_t)r->config_index);
    ob_db_bind_text(st, 4, entity);
    if ((rc = ob_db_step(st)) != OB_DB_DONE) goto sqlfail;
    ob_db_reset(st);
  }
  goto done;

sqlfail:
  ob_db_reset(st);
  s = ob_db_sqlfail(db, rc, "storing measurement (%s)", what);
done:
  free(entity);
  ob_str_free(&costs);
  return s;
}

ob_status ob_db_put_measurement(ob_db *db, const ob_db_record *rec, unsigned flags,
                                bool *stored) {
  OB_ASSERT(db && rec);
  if (stored) *stored = false;
  if (db->readonly)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s' was opened read-only", db->path);
  ob_status s = ob_db_txn_begin(db);
  if (s) return s;
  bool ok = false;
  s = ob_db_put_locked(db, rec, flags, &ok);
  if (s) {
    ob_db_txn_rollback(db);
    return s;
  }
  s = ob_db_txn_commit(db);
  if (!s && stored) *stored = ok;
  return s;
}

/* ---- resume ---------------------------------------------------------------------- */

static ob_status check_full_key(ob_db *db, const ob_db_key *k) {
  OB_ASSERT(k);
  if (k->host && k->workload && k->target && k->resources && k->tmpl) return OB_OK;
  return ob_fail(db->ctx, OB_ERR_INVALID_ARG,
                 "database '%s': a task key needs host, workload, target, resources and template "
                 "(workload %s, template %s)",
                 db->path, k->workload ? k->workload : "(null)", k->tmpl ? k->tmpl : "(null)");
}

static void bind_task_key(ob_dbstmt *st, const ob_db_key *k) {
  ob_db_bind_text(st, 1, k->host);
  ob_db_bind_text(st, 2, k->workload);
  ob_db_bind_text(st, 3, k->target);
  ob_db_bind_text(st, 4, k->resources);
  ob_db_bind_text(st, 5, k->tmpl);
}

ob_status ob_db_has_measurement(ob_db *db, const ob_db_key *key, uint64_t config_index,
                                bool *out) {
  OB_ASSERT(db && out);
  *out = false;
  ob_status s = check_full_key(db, key);
  if (s) return s;
  if (config_index > (uint64_t)INT64_MAX) return OB_OK;
  ob_dbstmt *st;
  if ((s = ob_db_stmt(db, OB_DBS_MEAS_HAS, &st))) return s;
  bind_task_key(st, key);
  ob_db_bind_int(st, 6, (int64_t)config_index);
  int rc = ob_db_step(st);
  ob_db_reset(st);
  if (rc == OB_DB_ROW) *out = true;
  else if (rc != OB_DB_DONE)
    return ob_db_sqlfail(db, rc, "looking up config %llu of workload %s",
                         (unsigned long long)config_index, key->workload);
  return OB_OK;
}

ob_status ob_db_measured(ob_db *db, const ob_db_key *key, uint64_t **out, int64_t *n) {
  OB_ASSERT(db && out && n);
  *out = NULL;
  *n = 0;
  ob_status s = check_full_key(db, key);
  if (s) return s;
  ob_dbstmt *st;
  if ((s = ob_db_stmt(db, OB_DBS_MEAS_MEASURED, &st))) return s;
  bind_task_key(st, key);
  uint64_t *v = NULL;
  int64_t cnt = 0, cap = 0;
  int rc;
  while ((rc = ob_db_step(st)) == OB_DB_ROW) {
    if (cnt == cap) {
      cap = cap ? cap * 2 : 256;
      uint64_t *nv = realloc(v, (size_t)cap * sizeof *v);
      if (!nv) {
        rc = OB_DB_NOMEM;
        break;
      }
      v = nv;
    }
    v[cnt++] = (uint64_t)ob_db_col_int(st, 0);
  }
  ob_db_reset(st);
  if (rc != OB_DB_DONE) {
    free(v);
    return ob_db_sqlfail(db, rc, "reading the measured configs of workload %s, template %s",
                         key->workload, key->tmpl);
  }
  *out = v;
  *n = cnt;
  return OB_OK;
}

/* ---- queries ---------------------------------------------------------------------- */

enum { OB_Q_RECORDS = 0, OB_Q_STATS = 1 };

/* Builds (or finds) the statement for a filter's shape and binds it. */
static ob_status filter_stmt(ob_db *db, const ob_db_filter *f, int kind, ob_dbstmt **out) {
  static const char *const k_cond[6] = {"m.host = ?1",      "m.workload_key = ?2",
                                        "w.op = ?3",        "m.target = ?4",
                                        "m.resources = ?5", "m.template = ?6"};
  const char *val[6] = {f->key.host,      f->key.workload, f->op,
                        f->key.target,    f->key.resources, f->key.tmpl};
  unsigned shape = 0;
  for (int i = 0; i < 6; i++)
    if (val[i]) shape |= 1u << i;
  if (f->ok_only) shape |= 1u << 6;
  OB_ASSERT(f->order >= 0 && f->order < OB_DB_ORDER_COUNT);
  shape |= (unsigned)f->order << 7;
  shape |= (unsigned)kind << 9;
  OB_ASSERT(f->cache >= OB_DB_CACHE_ANY && f->cache <= OB_DB_CACHE_COLD_WEIGHTS);
  shape |= (unsigned)f->cache << 10;

  ob_str sql = {0};
  if (kind == OB_Q_RECORDS) {
    ob_str_append(&sql,
                  "SELECT m.host, m.workload_key, m.target, m.resources, m.template, m.config_index,"
                  " c.entity, m.error_no, m.error_msg, m.median_s, m.mean_s, m.cv, m.costs,"
                  " m.number, m.build_s, m.run_s, m.nthreads, m.cores, m.timestamp,"
                  " w.op, w.attrs, w.flops, ");
    /* a version-1 file opened read-only: what an upgrade would read */
    ob_str_append(&sql, db->version >= 2
                            ? "m.repeat, m.min_repeat_ms, m.flush, m.timer_overhead_s,"
                              " m.below_resolution, m.noisy, m.extra_repeats, m.emulated"
                            : "CASE WHEN json_valid(m.costs) THEN json_array_length(m.costs)"
                              " ELSE 0 END, NULL, NULL, NULL, 0, 0, 0, 0");
    ob_str_append(&sql, 
                  " FROM measurements m"
                  " LEFT JOIN workloads w ON w.key = m.workload_key"
                  " LEFT JOIN configs c ON c.workload_key = m.workload_key"
                  " AND c.template = m.template AND c.config_index = m.config_index");
  } else {
    ob_str_append(&sql, "SELECT m.workload_key, coalesce(w.op, ''), count(*)");
    /* counts as sums of CASE: a sum of comparisons is SQLite's alone */
    for (int e = 0; e < OB_MERR_UNKNOWN; e++)
      ob_str_appendf(&sql, ", sum(CASE WHEN m.error_no = %d THEN 1 ELSE 0 END)", e);
    ob_str_appendf(&sql, ", sum(CASE WHEN m.error_no >= %d OR m.error_no < 0 THEN 1 ELSE 0 END)",
                   OB_MERR_UNKNOWN);
    ob_str_append(&sql, ", min(CASE WHEN m.error_no = 0 THEN m.median_s END), w.flops");
    ob_str_append(&sql, db->version >= 2
                            ? ", sum(CASE WHEN m.error_no = 0 AND m.noisy <> 0 THEN 1 ELSE 0 END),"
                              " sum(CASE WHEN m.error_no = 0 AND m.below_resolution <> 0"
                              " THEN 1 ELSE 0 END),"
                              " sum(CASE WHEN m.error_no = 0 AND m.emulated <> 0 THEN 1 ELSE 0 END)"
                            : ", 0, 0, 0");
    ob_str_append(&sql, " FROM measurements m LEFT JOIN workloads w ON w.key = m.workload_key");
  }
  bool first = true;
  for (int i = 0; i < 6; i++) {
    if (!val[i]) continue;
    ob_str_appendf(&sql, " %s %s", first ? "WHERE" : "AND", k_cond[i]);
    first = false;
  }
  if (f->ok_only) {
    ob_str_appendf(&sql, " %s m.error_no = 0 AND m.median_s IS NOT NULL", first ? "WHERE" : "AND");
    first = false;
  }
  /* the stored cache state (a version-1 file has none: matches only ANY) */
  if (f->cache != OB_DB_CACHE_ANY) {
    if (db->version >= 2) ob_str_appendf(&sql, " %s m.flush = %d", first ? "WHERE" : "AND", flush_col(f->cache));
    else ob_str_appendf(&sql, " %s 0 = 1", first ? "WHERE" : "AND");
  }
  if (kind == OB_Q_RECORDS) {
    switch (f->order) {
    case OB_DB_ORDER_FASTEST:
      /* error-free only: exactly the partial index's order, no sort */
      if (f->ok_only) ob_str_append(&sql, " ORDER BY m.median_s, m.config_index");
      else
        ob_str_append(&sql, " ORDER BY (m.error_no <> 0 OR m.median_s IS NULL), m.median_s,"
                            " m.config_index");
      break;
    case OB_DB_ORDER_TIME:
      ob_str_append(&sql, " ORDER BY m.timestamp, m.id");
      break;
    default:
      /* the unique key's order: an index walk, no sort */
      ob_str_append(&sql, " ORDER BY m.workload_key, m.template, m.host, m.target,"
                          " m.resources, m.config_index");
      break;
    }
    ob_str_append(&sql, " LIMIT ?7");
  } else {
    /* every column that is not aggregated is grouped by (w.op and w.flops
     * follow from the key; only SQLite would take them bare) */
    ob_str_append(&sql, " GROUP BY m.workload_key, w.op, w.flops"
                        " ORDER BY coalesce(w.op, ''), m.workload_key");
  }
  ob_dbstmt *st;
  ob_status s = sql.failed ? ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': building a query: out of memory", db->path)
                           : ob_db_stmt_shape(db, shape, sql.data, &st);
  ob_str_free(&sql);
  if (s) return s;
  for (int i = 0; i < 6; i++)
    if (val[i]) ob_db_bind_text(st, i + 1, val[i]);
  /* no limit: the largest one (SQLite's -1 is an error elsewhere) */
  if (kind == OB_Q_RECORDS) ob_db_bind_int(st, 7, f->limit > 0 ? f->limit : INT64_MAX);
  *out = st;
  return OB_OK;
}

/* "[1e-05,2e-05]" -> doubles; anything unparsable ends the list. */
static int parse_costs(const char *text, double **buf, int *cap) {
  int n = 0;
  const char *p = text ? strchr(text, '[') : NULL;
  if (!p) return 0;
  p++;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    char *end;
    double v = strtod(p, &end);
    if (end == p) break;
    if (n == *cap) {
      int nc = *cap ? *cap * 2 : 16;
      double *nb = realloc(*buf, (size_t)nc * sizeof **buf);
      if (!nb) break;
      *buf = nb;
      *cap = nc;
    }
    (*buf)[n++] = v;
    p = end;
  }
  return n;
}

ob_status ob_db_visit(ob_db *db, const ob_db_filter *f, ob_db_visit_fn fn, void *user) {
  ob_db_filter all = {0};
  if (!f) f = &all;
  ob_dbstmt *st;
  ob_status s = filter_stmt(db, f, OB_Q_RECORDS, &st);
  if (s) return s;
  double *costs = NULL;
  int cap = 0, rc;
  while ((rc = ob_db_step(st)) == OB_DB_ROW) {
    ob_db_record r = {0};
    r.host = ob_db_col_text(st, 0);
    r.workload = ob_db_col_text(st, 1);
    r.target = ob_db_col_text(st, 2);
    r.resources = ob_db_col_text(st, 3);
    r.tmpl = ob_db_col_text(st, 4);
    r.config_index = (uint64_t)ob_db_col_int(st, 5);
    r.entity = ob_db_col_text(st, 6);
    r.error_no = (int)ob_db_col_int(st, 7);
    r.error_msg = ob_db_col_text(st, 8);
    ob_timing *t = &r.timing;
    t->median_s = ob_db_col_real(st, 9);
    t->mean_s = ob_db_col_real(st, 10);
    t->cv = ob_db_col_real(st, 11);
    int n = parse_costs(ob_db_col_text(st, 12), &costs, &cap);
    t->ncosts = n < OB_TIMING_MAX_COSTS ? n : OB_TIMING_MAX_COSTS;
    if (t->ncosts > 0) memcpy(t->costs, costs, (size_t)t->ncosts * sizeof *costs);
    if (n > OB_TIMING_MAX_COSTS) {
      r.all_costs = costs;
      r.nall_costs = n;
    }
    t->number = (int)ob_db_col_int(st, 13);
    r.build_s = ob_db_col_real(st, 14);
    r.run_s = ob_db_col_real(st, 15);
    r.nthreads = (int)ob_db_col_int(st, 16);
    r.cores = ob_db_col_text(st, 17);
    r.timestamp = ob_db_col_real(st, 18);
    r.op = ob_db_col_text(st, 19);
    r.attrs = ob_db_col_text(st, 20);
    double flops = ob_db_col_real(st, 21);
    r.flops = isfinite(flops) && flops > 0 ? flops : 0;
    r.gflops = r.error_no == 0 && r.flops > 0 && t->median_s > 0 ? r.flops / t->median_s / 1e9 : 0;
    t->repeat = (int)ob_db_col_int(st, 22);
    t->min_repeat_ms = ob_db_col_real(st, 23);
    bool flush_known = !ob_db_col_null(st, 24);
    int64_t fl = flush_known ? ob_db_col_int(st, 24) : 0;
    t->flush = fl != 0;
    t->flush_keep_first = fl == flush_col(OB_DB_CACHE_COLD_WEIGHTS);
    if (!flush_known) t->min_repeat_ms = NAN; /* one unknown protocol, one sentinel */
    double ovh = ob_db_col_real(st, 25);
    t->timer_overhead_s = isfinite(ovh) && ovh > 0 ? ovh : 0;
    t->below_resolution = (int)ob_db_col_int(st, 26) != 0;
    t->noisy = (int)ob_db_col_int(st, 27) != 0;
    t->extra_repeats = (int)ob_db_col_int(st, 28);
    t->emulated = (int)ob_db_col_int(st, 29) != 0;
    if ((s = fn(user, &r))) break;
  }
  ob_db_reset(st);
  free(costs);
  if (s) return s;
  if (rc != OB_DB_DONE) return ob_db_sqlfail(db, rc, "reading measurements");
  return OB_OK;
}

static const char *arena_dup(ob_arena *a, const char *s) { return s ? ob_arena_strdup(a, s) : NULL; }

typedef struct collect {
  ob_db *db;
  ob_db_records *out;
  int64_t cap;
} collect;

static ob_status collect_one(void *user, const ob_db_record *r) {
  collect *c = user;
  ob_db_records *o = c->out;
  if (o->n == c->cap) {
    int64_t nc = c->cap ? c->cap * 2 : 64;
    ob_db_record *nr = realloc(o->rec, (size_t)nc * sizeof *nr);
    if (!nr)
      return ob_fail(c->db->ctx, OB_ERR_NOMEM, "database '%s': out of memory reading %lld records",
                     c->db->path, (long long)nc);
    o->rec = nr;
    c->cap = nc;
  }
  ob_db_record *d = &o->rec[o->n++];
  ob_arena *a = o->arena;
  *d = *r;
  d->host = arena_dup(a, r->host);
  d->workload = arena_dup(a, r->workload);
  d->target = arena_dup(a, r->target);
  d->resources = arena_dup(a, r->resources);
  d->tmpl = arena_dup(a, r->tmpl);
  d->entity = arena_dup(a, r->entity);
  d->error_msg = arena_dup(a, r->error_msg);
  d->cores = arena_dup(a, r->cores);
  d->op = arena_dup(a, r->op);
  d->attrs = arena_dup(a, r->attrs);
  d->all_costs = NULL;
  if (r->nall_costs > 0 &&
      (d->all_costs = ob_arena_alloc(a, (size_t)r->nall_costs * sizeof *d->all_costs)))
    memcpy((double *)d->all_costs, r->all_costs, (size_t)r->nall_costs * sizeof *d->all_costs);
  if (ob_arena_failed(a))
    return ob_fail(c->db->ctx, OB_ERR_NOMEM, "database '%s': out of memory reading %lld records",
                   c->db->path, (long long)o->n);
  return OB_OK;
}

void ob_db_records_free(ob_db_records *r) {
  if (!r) return;
  free(r->rec);
  ob_arena_free(r->arena);
  free(r);
}

ob_status ob_db_query(ob_db *db, const ob_db_filter *f, ob_db_records **out) {
  OB_ASSERT(db && out);
  *out = NULL;
  ob_db_records *res = calloc(1, sizeof *res);
  if (!res || !(res->arena = ob_arena_new(db->ctx, 0))) {
    free(res);
    return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': out of memory", db->path);
  }
  collect c = {db, res, 0};
  ob_status s = ob_db_visit(db, f, collect_one, &c);
  if (s) {
    ob_db_records_free(res);
    return s;
  }
  *out = res;
  return OB_OK;
}

ob_status ob_db_top_k(ob_db *db, const ob_db_key *key, int64_t k, ob_db_records **out) {
  return ob_db_top_k_cache(db, key, OB_DB_CACHE_ANY, k, out);
}

ob_status ob_db_top_k_cache(ob_db *db, const ob_db_key *key, ob_db_cache cache, int64_t k,
                            ob_db_records **out) {
  OB_ASSERT(db && key && out);
  ob_db_filter f = {.key = *key, .ok_only = true, .order = OB_DB_ORDER_FASTEST, .limit = k, .cache = cache};
  if (k <= 0) {
    *out = NULL;
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s': top-k needs k >= 1 (got %lld)",
                   db->path, (long long)k);
  }
  return ob_db_query(db, &f, out);
}

ob_db_cache ob_db_cache_of(const ob_timing *t) {
  return !t->flush ? OB_DB_CACHE_WARM : t->flush_keep_first ? OB_DB_CACHE_COLD_WEIGHTS : OB_DB_CACHE_COLD;
}

const char *ob_db_cache_name(ob_db_cache c) {
  switch (c) {
  case OB_DB_CACHE_WARM: return "warm";
  case OB_DB_CACHE_COLD: return "cold";
  case OB_DB_CACHE_COLD_WEIGHTS: return "cold-weights";
  default: return "any";
  }
}

ob_status ob_db_best(ob_db *db, const ob_db_key *key, ob_db_records **out) {
  ob_status s = ob_db_top_k(db, key, 1, out);
  if (s) return s;
  if ((*out)->n > 0) return OB_OK;
  ob_db_records_free(*out);
  *out = NULL;
  return ob_fail(db->ctx, OB_ERR_NOT_FOUND,
                 "database '%s' has no error-free measurement of workload %s (host %s, target "
                 "'%s', resources '%s', template %s)",
                 db->path, key->workload ? key->workload : "(any)", key->host ? key->host : "(any)",
                 key->target ? key->target : "(any)", key->resources ? key->resources : "(any)",
                 key->tmpl ? key->tmpl : "(any)");
}

ob_status ob_db_workload_records(ob_db *db, const char *workload, ob_db_records **out) {
  OB_ASSERT(db && workload && out);
  ob_db_filter f = {.key.workload = workload, .order = OB_DB_ORDER_KEY};
  return ob_db_query(db, &f, out);
}

/* ---- statistics --------------------------------------------------------------------- */

static ob_status count_rows(ob_db *db, ob_db_stmt_id id, int64_t *n) {
  ob_dbstmt *st;
  ob_status s = ob_db_stmt(db, id, &st);
  if (s) return s;
  int rc = ob_db_step(st);
  *n = rc == OB_DB_ROW ? ob_db_col_int(st, 0) : 0;
  ob_db_reset(st);
  return rc == OB_DB_ROW ? OB_OK : ob_db_sqlfail(db, rc, "counting rows");
}

static void stat_add(ob_db_stat_row *acc, const ob_db_stat_row *r) {
  acc->total += r->total;
  acc->noisy += r->noisy;
  acc->below_resolution += r->below_resolution;
  acc->emulated += r->emulated;
  for (int e = 0; e < OB_MERR_COUNT; e++) acc->by_error[e] += r->by_error[e];
  if (isfinite(r->best_s) && (!isfinite(acc->best_s) || r->best_s < acc->best_s))
    acc->best_s = r->best_s;
  if (r->best_gflops > acc->best_gflops) acc->best_gflops = r->best_gflops;
  acc->nworkloads += r->nworkloads;
}

void ob_db_stats_free(ob_db_stats *s) {
  if (!s) return;
  free(s->workloads);
  free(s->by_op);
  ob_arena_free(s->arena);
  free(s);
}

ob_status ob_db_stats_get(ob_db *db, const ob_db_filter *f, ob_db_stats **out) {
  OB_ASSERT(db && out);
  *out = NULL;
  ob_db_filter all = {0};
  if (!f) f = &all;
  ob_db_stats *res = calloc(1, sizeof *res);
  if (!res || !(res->arena = ob_arena_new(db->ctx, 0))) {
    free(res);
    return ob_fail(db->ctx, OB_ERR_NOMEM, "database '%s': out of memory", db->path);
  }
  res->total.name = "total";
  res->total.op = "";
  res->total.best_s = NAN;
  int64_t cap = 0, opcap = 0;
  ob_dbstmt *st = NULL;
  ob_status s = filter_stmt(db, f, OB_Q_STATS, &st);
  if (s) goto fail;
  int rc;
  while ((rc = ob_db_step(st)) == OB_DB_ROW) {
    if (res->nworkloads == cap) {
      cap = cap ? cap * 2 : 64;
      ob_db_stat_row *nw = realloc(res->workloads, (size_t)cap * sizeof *nw);
      if (!nw) {
        rc = OB_DB_NOMEM;
        break;
      }
      res->workloads = nw;
    }
    ob_db_stat_row *w = &res->workloads[res->nworkloads++];
    memset(w, 0, sizeof *w);
    w->name = ob_arena_strdup(res->arena, ob_db_col_text(st, 0));
    w->op = ob_arena_strdup(res->arena, ob_db_col_text(st, 1));
    if (ob_arena_failed(res->arena)) {
      rc = OB_DB_NOMEM;
      break;
    }
    w->total = ob_db_col_int(st, 2);
    for (int e = 0; e < OB_MERR_COUNT; e++) w->by_error[e] = ob_db_col_int(st, 3 + e);
    w->best_s = ob_db_col_real(st, 3 + OB_MERR_COUNT);
    double flops = ob_db_col_real(st, 4 + OB_MERR_COUNT);
    w->best_gflops = isfinite(flops) && flops > 0 && isfinite(w->best_s) && w->best_s > 0
                         ? flops / w->best_s / 1e9
                         : 0;
    w->noisy = ob_db_col_int(st, 5 + OB_MERR_COUNT);
    w->below_resolution = ob_db_col_int(st, 6 + OB_MERR_COUNT);
    w->emulated = ob_db_col_int(st, 7 + OB_MERR_COUNT);
    w->nworkloads = 1;
    /* Rows come sorted by operator: a new operator opens a by_op row. */
    if (res->nops == 0 || strcmp(res->by_op[res->nops - 1].name, w->op)) {
      if (res->nops == opcap) {
        opcap = opcap ? opcap * 2 : 16;
        ob_db_stat_row *no = realloc(res->by_op, (size_t)opcap * sizeof *no);
        if (!no) {
          rc = OB_DB_NOMEM;
          break;
        }
        res->by_op = no;
      }
      ob_db_stat_row *o = &res->by_op[res->nops++];
      memset(o, 0, sizeof *o);
      o->name = w->op;
      o->op = w->op;
      o->best_s = NAN;
    }
    stat_add(&res->by_op[res->nops - 1], w);
    stat_add(&res->total, w);
  }
  ob_db_reset(st);
  if (rc != OB_DB_DONE) {
    s = ob_db_sqlfail(db, rc, "computing statistics");
    goto fail;
  }
  if ((s = count_rows(db, OB_DBS_COUNT_HOSTS, &res->nhosts))) goto fail;
  if ((s = count_rows(db, OB_DBS_COUNT_CONFIGS, &res->nconfigs))) goto fail;
  if ((s = count_rows(db, OB_DBS_COUNT_HISTORY, &res->nreplaced))) goto fail;
  *out = res;
  return OB_OK;
fail:
  ob_db_stats_free(res);
  return s;
}
