/* autotvm.c: AutoTVM v0.2 JSON-lines logs. Import maps AutoTVM tasks to
 * opbench workloads through the caller's ob_db_autotvm_i (the operators
 * know which tasks are theirs: src/ops/autotvm.c), files any other task
 * under its AutoTVM task key, and skips broken lines with their numbers;
 * export writes one line per record with args rebuilt from the workload by
 * the same map. Every cJSON tree here is owned by the function that parsed
 * or built it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "db/db_impl.h"

#define OB_IMPORT_CHUNK 512    /* lines per transaction */
#define OB_IMPORT_MAX_COST 1e9 /* seconds: an error-free cost at or above is a broken line */

/* ---- workload mapping ------------------------------------------------------------- */

typedef struct wl_map {
  char *key, *op, *attrs; /* malloc'd */
  double flops;           /* 0: unknown */
  bool mapped;            /* an opbench workload (not an AutoTVM task key) */
} wl_map;

static void wl_map_clear(wl_map *m) {
  free(m->key);
  free(m->op);
  free(m->attrs);
  memset(m, 0, sizeof *m);
}

static bool as_int(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v)) return false;
  double d = v->valuedouble;
  if (!(d == floor(d) && fabs(d) <= 9007199254740992.0)) return false;
  *out = (int64_t)d;
  return true;
}

/* kwargs {"opbench": {"workload": key, "op": op, "attrs": {...}, "flops": f}},
 * as opbench's export writes where args alone lose information. */
static bool map_kwargs(const cJSON *kwargs, wl_map *out) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(kwargs, "opbench");
  const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "workload");
  if (!cJSON_IsObject(o) || !cJSON_IsString(key) || !key->valuestring[0]) return false;
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op");
  const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(o, "attrs");
  const cJSON *flops = cJSON_GetObjectItemCaseSensitive(o, "flops");
  out->key = strdup(key->valuestring);
  if (cJSON_IsString(op) && op->valuestring[0]) {
    out->op = strdup(op->valuestring);
  } else {
    size_t n = strcspn(key->valuestring, "/");
    out->op = strndup(key->valuestring, n);
  }
  out->attrs = cJSON_IsObject(attrs) ? cJSON_PrintUnformatted(attrs) : strdup("{}");
  out->flops = cJSON_IsNumber(flops) && flops->valuedouble > 0 ? flops->valuedouble : 0;
  out->mapped = true;
  return true;
}

/* Always fills *out (unless out of memory: false). args_json: the task's
 * argument list as text (NULL: out of memory). */
static bool map_task(const ob_db_autotvm_i *map, void *map_ctx, const char *task,
                     const char *args_json, const cJSON *kwargs, wl_map *out) {
  memset(out, 0, sizeof *out);
  bool done = false;
  if (cJSON_IsObject(kwargs)) done = map_kwargs(kwargs, out);
  if (!done && map && map->from_task && args_json) {
    ob_db_wl_desc d = {0};
    if (map->from_task(map_ctx, task, args_json, &d)) {
      out->key = d.key;
      out->op = d.op;
      out->attrs = d.attrs;
      out->flops = d.flops > 0 ? d.flops : 0;
      out->mapped = done = true;
    }
  }
  if (!done) {
    wl_map_clear(out);
    ob_str k = {0};
    ob_str_appendf(&k, "autotvm:%s:%s", task, args_json ? args_json : "[]");
    out->key = ob_str_take(&k);
    out->op = strndup(task, strcspn(task, "."));
    out->attrs = strdup("{}");
    out->mapped = false;
  }
  if (!out->key || !out->op || !out->attrs) {
    wl_map_clear(out);
    return false;
  }
  return true;
}

/* ---- import ---------------------------------------------------------------------------- */

void ob_db_import_result_clear(ob_db_import_result *r) {
  if (!r) return;
  free(r->bad);
  memset(r, 0, sizeof *r);
}

static void add_bad(ob_db_import_result *res, int64_t line, const char *why) {
  res->nbroken++;
  if (res->nbad >= OB_DB_MAX_BAD_LINES) return;
  if ((res->nbad & (res->nbad - 1)) == 0) { /* grow at powers of two */
    int64_t cap = res->nbad ? res->nbad * 2 : 16;
    ob_db_bad_line *nb = realloc(res->bad, (size_t)cap * sizeof *nb);
    if (!nb) return;
    res->bad = nb;
  }
  ob_db_bad_line *b = &res->bad[res->nbad++];
  b->line = line;
  snprintf(b->why, sizeof b->why, "%s", why);
}

/* One parsed line, pointing into the cJSON tree. */
typedef struct log_line {
  const char *target, *task;
  const cJSON *args, *kwargs, *entity;
  uint64_t index;
  const cJSON *costs;
  int64_t error_no;
  double all_cost, timestamp;
  const cJSON *timing; /* "opbench_timing" (opbench's own exports), or NULL */
} log_line;

/* Checks a line's shape; on failure writes the reason into why. */
static bool parse_line(const cJSON *root, log_line *l, char *why, size_t cap) {
  memset(l, 0, sizeof *l);
  if (!cJSON_IsObject(root)) {
    snprintf(why, cap, "not a JSON object");
    return false;
  }
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (!ver && cJSON_GetObjectItemCaseSensitive(root, "v")) {
    snprintf(why, cap, "AutoTVM log version 0.1 is not supported (only 0.2)");
    return false;
  }
  if (ver && !(cJSON_IsNumber(ver) && fabs(ver->valuedouble - 0.2) < 1e-9)) {
    snprintf(why, cap, "unsupported log version (only 0.2 is read)");
    return false;
  }
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
  int nin = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : 0;
  const cJSON *tgt = cJSON_GetArrayItem(in, 0), *task = cJSON_GetArrayItem(in, 1);
  const cJSON *args = cJSON_GetArrayItem(in, 2), *kw = cJSON_GetArrayItem(in, 3);
  if (!cJSON_IsArray(in) || nin < 3 || nin > 4 || !cJSON_IsString(tgt) ||
      !cJSON_IsString(task) || !task->valuestring[0] || !cJSON_IsArray(args) ||
      (kw && !cJSON_IsObject(kw) && !cJSON_IsNull(kw))) {
    snprintf(why, cap, "'input' must be [target, task_name, args, kwargs]");
    return false;
  }
  const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
  if (!cJSON_IsObject(cfg)) {
    snprintf(why, cap, "'config' is missing or not an object");
    return false;
  }
  int64_t idx;
  if (!as_int(cJSON_GetObjectItemCaseSensitive(cfg, "index"), &idx) || idx < 0) {
    snprintf(why, cap, "'config.index' is missing or not a non-negative integer");
    return false;
  }
  const cJSON *entity = cJSON_GetObjectItemCaseSensitive(cfg, "entity");
  if (!cJSON_IsArray(entity)) {
    snprintf(why, cap, "'config.entity' is missing or not a list");
    return false;
  }
  const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "result");
  const cJSON *costs = cJSON_GetArrayItem(res, 0), *eno = cJSON_GetArrayItem(res, 1);
  const cJSON *all = cJSON_GetArrayItem(res, 2), *ts = cJSON_GetArrayItem(res, 3);
  int64_t error_no;
  if (!cJSON_IsArray(res) || cJSON_GetArraySize(res) != 4 || !cJSON_IsArray(costs) ||
      !as_int(eno, &error_no) || error_no < 0 || error_no > 1000 || !cJSON_IsNumber(all) ||
      !cJSON_IsNumber(ts)) {
    snprintf(why, cap, "'result' must be [costs, error_no, all_cost, timestamp]");
    return false;
  }
  /* cJSON reads 1e999 as infinity: such a line would store a record that
   * exports as null and never reads back */
  if (!isfinite(all->valuedouble) || !isfinite(ts->valuedouble)) {
    snprintf(why, cap, "'result' has a %s that is not a finite number",
             isfinite(all->valuedouble) ? "timestamp" : "all_cost");
    return false;
  }
  if (error_no == 0) {
    int n = cJSON_GetArraySize(costs);
    if (n == 0) {
      snprintf(why, cap, "an error-free result has no costs");
      return false;
    }
    if (n > 100000) {
      snprintf(why, cap, "too many costs (%d)", n);
      return false;
    }
    for (int i = 0; i < n; i++) {
      const cJSON *c = cJSON_GetArrayItem(costs, i);
      if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble <= 0) {
        snprintf(why, cap, "cost %d of an error-free result is not a positive number", i + 1);
        return false;
      }
      /* AutoTVM's own failure sentinel is 1e9 s: no run takes that long */
      if (c->valuedouble >= OB_IMPORT_MAX_COST) {
        snprintf(why, cap, "cost %d of an error-free result is %g s, not a measurement (limit %g s)",
                 i + 1, c->valuedouble, OB_IMPORT_MAX_COST);
        return false;
      }
    }
  }
  const cJSON *tim = cJSON_GetObjectItemCaseSensitive(root, "opbench_timing");
  if (tim && !cJSON_IsObject(tim)) {
    snprintf(why, cap, "'opbench_timing' is not an object");
    return false;
  }
  l->timing = tim;
  l->target = tgt->valuestring;
  l->task = task->valuestring;
  l->args = args;
  l->kwargs = kw;
  l->entity = entity;
  l->index = (uint64_t)idx;
  l->costs = costs;
  l->error_no = error_no;
  l->all_cost = all->valuedouble;
  l->timestamp = ts->valuedouble;
  return true;
}

/* The protocol fields of an "opbench_timing" object (as export_row
 * writes it); absent or malformed members leave *t as it is. */
static void timing_from_json(const cJSON *j, ob_timing *t) {
  if (!cJSON_IsObject(j)) return;
  const cJSON *v;
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "number")) && v->valuedouble >= 0 &&
      v->valuedouble <= OB_TIMING_NUMBER_MAX)
    t->number = (int)v->valuedouble;
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "repeat")) && v->valuedouble >= 0 &&
      v->valuedouble <= 1e6)
    t->repeat = (int)v->valuedouble;
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "min_repeat_ms")) &&
      isfinite(v->valuedouble) && v->valuedouble >= 0) {
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(j, "flush");
    if (cJSON_IsBool(fl)) { /* floor and cache state are known together */
      t->min_repeat_ms = v->valuedouble;
      t->flush = cJSON_IsTrue(fl);
      t->flush_keep_first = t->flush && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "flush_keep_first"));
    }
  }
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "timer_overhead_s")) &&
      isfinite(v->valuedouble) && v->valuedouble > 0)
    t->timer_overhead_s = v->valuedouble;
  if (cJSON_IsBool(v = cJSON_GetObjectItemCaseSensitive(j, "below_resolution")))
    t->below_resolution = cJSON_IsTrue(v);
  if (cJSON_IsBool(v = cJSON_GetObjectItemCaseSensitive(j, "noisy"))) t->noisy = cJSON_IsTrue(v);
  if (cJSON_IsBool(v = cJSON_GetObjectItemCaseSensitive(j, "emulated"))) t->emulated = cJSON_IsTrue(v);
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "extra_repeats")) &&
      v->valuedouble >= 0 && v->valuedouble <= 1e6)
    t->extra_repeats = (int)v->valuedouble;
}

typedef struct chunk_counts {
  int64_t imported, duplicate, unmapped;
} chunk_counts;

/* Stores one parsed line inside the open transaction. A record the
 * database would refuse is OB_ERR_INVALID_ARG before anything is written,
 * so the caller skips the line as broken; any other failure ends the
 * import. */
static ob_status import_line(ob_db *db, const log_line *l, const ob_db_import_opts *o,
                             chunk_counts *cc) {
  char *args = cJSON_PrintUnformatted(l->args);
  wl_map m;
  if (!map_task(o ? o->map : NULL, o ? o->map_ctx : NULL, l->task, args, l->kwargs, &m)) {
    free(args);
    return ob_fail(db->ctx, OB_ERR_NOMEM, "importing into '%s': out of memory", db->path);
  }
  char *entity = cJSON_PrintUnformatted(l->entity);
  int n = cJSON_GetArraySize(l->costs);
  double *costs = calloc((size_t)n + 1, sizeof *costs);
  ob_str msg = {0};
  ob_status s = OB_OK;
  if (!args || !entity || !costs) {
    s = ob_fail(db->ctx, OB_ERR_NOMEM, "importing into '%s': out of memory", db->path);
    goto done;
  }
  ob_db_record r = {0};
  r.host = o && o->host && *o->host ? o->host : "unknown";
  r.workload = m.key;
  r.target = l->target;
  r.resources = o && o->resources ? o->resources : "";
  r.tmpl = l->task;
  r.config_index = l->index;
  r.entity = entity;
  r.error_no = (int)l->error_no;
  ob_timing *t = &r.timing;
  t->median_s = t->mean_s = t->cv = NAN;
  t->min_repeat_ms = NAN; /* AutoTVM logs do not say how they were timed */
  timing_from_json(l->timing, t);
  if (l->error_no == 0) {
    for (int i = 0; i < n; i++) costs[i] = cJSON_GetArrayItem(l->costs, i)->valuedouble;
    t->ncosts = n < OB_TIMING_MAX_COSTS ? n : OB_TIMING_MAX_COSTS;
    memcpy(t->costs, costs, (size_t)t->ncosts * sizeof *costs);
    if (n > OB_TIMING_MAX_COSTS) {
      r.all_costs = costs;
      r.nall_costs = n;
    }
    ob_stats(costs, n, &t->median_s, &t->mean_s, &t->cv); /* as every timing's */
    if (t->repeat == 0) t->repeat = n; /* AutoTVM keeps every repeat */
  } else {
    /* AutoTVM writes (1e9,) for failures; some versions the error text. */
    for (int i = 0; i < n; i++) {
      const cJSON *c = cJSON_GetArrayItem(l->costs, i);
      if (cJSON_IsString(c)) ob_str_appendf(&msg, "%s%s", msg.len ? "; " : "", c->valuestring);
    }
    r.error_msg = msg.data;
    if (msg.failed) {
      s = ob_fail(db->ctx, OB_ERR_NOMEM, "importing into '%s': out of memory", db->path);
      goto done;
    }
  }
  r.build_s = NAN;
  r.run_s = l->all_cost; /* AutoTVM's all_cost: build + run together */
  const char *nt = strstr(l->target, "-num-threads=");
  long nth = nt ? strtol(nt + strlen("-num-threads="), NULL, 10) : 0;
  r.nthreads = nth > 0 && nth <= 1 << 20 ? (int)nth : 0;
  r.timestamp = l->timestamp > 0 ? l->timestamp : 0;

  if ((s = ob_db_record_check(db, &r))) goto done;
  s = ob_db_put_workload_locked(db, m.key, m.op, m.attrs, m.flops, args, false);
  if (s) goto done;
  bool stored = false;
  s = ob_db_put_locked(db, &r, o ? o->flags : 0, &stored);
  if (s) goto done;
  if (stored) {
    cc->imported++;
    if (!m.mapped) cc->unmapped++;
  } else {
    cc->duplicate++;
  }
done:
  wl_map_clear(&m);
  free(args);
  free(entity);
  free(costs);
  ob_str_free(&msg);
  return s;
}

ob_status ob_db_import_autotvm(ob_db *db, const char *path, const ob_db_import_opts *o,
                               ob_db_import_result *res) {
  OB_ASSERT(db && path && res);
  memset(res, 0, sizeof *res);
  if (db->readonly)
    return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "database '%s' was opened read-only", db->path);
  ob_lines *in = NULL;
  ob_status s = ob_lines_open(db->ctx, path, "AutoTVM log", NULL, &in);
  if (s) return s;
  char *line = NULL;
  size_t len = 0;
  bool in_txn = false;
  int pending = 0;
  chunk_counts cc = {0};
  char why[240];
  for (;;) {
    s = ob_lines_next(in, &line, &len);
    int64_t lineno = ob_lines_lineno(in);
    if (s == OB_ERR_PARSE) { /* a line over the length limit: broken, skipped */
      res->nlines++;
      snprintf(why, sizeof why, "longer than the limit of %lld bytes", (long long)OB_READ_MAX_LINE);
      add_bad(res, lineno, why);
      ob_ctx_clear_error(db->ctx);
      continue;
    }
    if (s || !line) break;
    while (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
    size_t lead = strspn(line, " \t");
    if (lead == len) continue;
    res->nlines++;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, false);
    if (!root) {
      long col = end ? (long)(end - line) + 1 : 0;
      snprintf(why, sizeof why, "not valid JSON (stops at column %ld)", col);
      add_bad(res, lineno, why);
      continue;
    }
    if (end && (size_t)(end - line) + strspn(end, " \t") < len) {
      cJSON_Delete(root);
      add_bad(res, lineno, "text after the JSON object");
      continue;
    }
    log_line l;
    if (!parse_line(root, &l, why, sizeof why)) {
      cJSON_Delete(root);
      add_bad(res, lineno, why);
      continue;
    }
    if (!in_txn) {
      if ((s = ob_db_txn_begin(db))) {
        cJSON_Delete(root);
        break;
      }
      in_txn = true;
    }
    s = import_line(db, &l, o, &cc);
    cJSON_Delete(root);
    if (s == OB_ERR_INVALID_ARG) { /* refused before any write: a broken line */
      add_bad(res, lineno, ob_ctx_errmsg(db->ctx));
      ob_ctx_clear_error(db->ctx);
      s = OB_OK;
      continue;
    }
    if (s) {
      ob_fail_prefix(db->ctx, "importing '%s' line %lld", path, (long long)lineno);
      break;
    }
    if (++pending >= OB_IMPORT_CHUNK) {
      if ((s = ob_db_txn_commit(db))) {
        in_txn = false;
        break;
      }
      in_txn = false;
      pending = 0;
      res->nimported += cc.imported;
      res->nduplicate += cc.duplicate;
      res->nunmapped += cc.unmapped;
      cc = (chunk_counts){0};
    }
  }
  if (in_txn) {
    if (s) {
      ob_db_txn_rollback(db);
    } else if (!(s = ob_db_txn_commit(db))) {
      res->nimported += cc.imported;
      res->nduplicate += cc.duplicate;
      res->nunmapped += cc.unmapped;
    }
  }
  ob_lines_close(in);
  if (!s && res->nbroken)
    ob_log(db->ctx, OB_LOG_WARN, "%s: skipped %lld broken line(s) of %lld (first: line %lld: %s)",
           path, (long long)res->nbroken, (long long)res->nlines,
           (long long)(res->nbad ? res->bad[0].line : 0), res->nbad ? res->bad[0].why : "");
  return s;
}

/* ---- export ------------------------------------------------------------------------------ */

/* A number that reads back bit for bit (cJSON prints 15 digits and accepts
 * an approximate round trip, which would change stored costs). */
static cJSON *num_json(double v) {
  char buf[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (!isfinite(v)) snprintf(buf, sizeof buf, "null");
  return cJSON_CreateRaw(buf);
}

typedef struct export_ctx {
  ob_db *db;
  FILE *f;
  const char *path;
  const ob_db_autotvm_i *map;
  void *map_ctx;
  ob_db_entity_fn entity_fn;
  void *user;
  int64_t n, nmissing;
} export_ctx;

static ob_status export_row(void *user, const ob_db_record *r) {
  export_ctx *x = user;
  ob_db *db = x->db;
  ob_status s = OB_OK;
  char *args_text = NULL, *ent_text = NULL, *line = NULL;
  cJSON *root = NULL, *attrs = NULL;
  char what[768];
  ob_db_describe(r, what, sizeof what);

  /* The workload's stored AutoTVM args, else args rebuilt from its attrs. */
  ob_dbstmt *st;
  if ((s = ob_db_stmt(db, OB_DBS_WL_GET, &st))) return s;
  ob_db_bind_text(st, 1, r->workload);
  int rc = ob_db_step(st);
  if (rc == OB_DB_ROW) {
    const char *a = ob_db_col_text(st, 3);
    if (a) args_text = strdup(a);
  }
  ob_db_reset(st);
  if (rc != OB_DB_ROW && rc != OB_DB_DONE) {
    free(args_text);
    return ob_db_sqlfail(db, rc, "reading workload %s", r->workload);
  }

  attrs = cJSON_Parse(r->attrs ? r->attrs : "{}");
  cJSON *args = args_text ? cJSON_Parse(args_text) : NULL;
  if (!cJSON_IsArray(args) && x->map && x->map->to_args) {
    cJSON_Delete(args);
    char *t = x->map->to_args(x->map_ctx, r->op, r->attrs ? r->attrs : "{}");
    args = t ? cJSON_Parse(t) : NULL;
    free(t);
  }
  if (!cJSON_IsArray(args)) {
    cJSON_Delete(args);
    args = NULL;
  }
  if (!args) { /* no TVM form: the key stands in, kwargs carry the rest */
    args = cJSON_CreateArray();
    cJSON_AddItemToArray(args, cJSON_CreateString(r->workload));
  }

  cJSON *kwargs = cJSON_CreateObject();
  wl_map m;
  char *args_json = cJSON_PrintUnformatted(args);
  bool same = map_task(x->map, x->map_ctx, r->tmpl, args_json, NULL, &m) &&
              !strcmp(m.key, r->workload);
  wl_map_clear(&m);
  free(args_json);
  if (!same) {
    cJSON *ob = cJSON_AddObjectToObject(kwargs, "opbench");
    cJSON_AddStringToObject(ob, "workload", r->workload);
    cJSON_AddStringToObject(ob, "op", r->op ? r->op : "");
    cJSON_AddItemToObject(ob, "attrs", cJSON_IsObject(attrs) ? cJSON_Duplicate(attrs, true)
                                                              : cJSON_CreateObject());
    if (r->flops > 0) cJSON_AddItemToObject(ob, "flops", num_json(r->flops));
  }

  root = cJSON_CreateObject();
  cJSON *in = cJSON_AddArrayToObject(root, "input");
  cJSON_AddItemToArray(in, cJSON_CreateString(r->target ? r->target : ""));
  cJSON_AddItemToArray(in, cJSON_CreateString(r->tmpl));
  cJSON_AddItemToArray(in, args);
  cJSON_AddItemToArray(in, kwargs);

  const char *ent = r->entity;
  if (!ent && x->entity_fn) {
    if ((s = x->entity_fn(x->user, r, &ent_text))) {
      ob_fail_prefix(db->ctx, "exporting measurement (%s)", what);
      goto done;
    }
    ent = ent_text;
  }
  cJSON *entity = ent ? cJSON_Parse(ent) : NULL;
  if (cJSON_IsObject(entity)) { /* {"index":..,"entity":[..]} form */
    cJSON *inner = cJSON_DetachItemFromObjectCaseSensitive(entity, "entity");
    cJSON_Delete(entity);
    entity = inner;
  }
  if (!cJSON_IsArray(entity)) {
    cJSON_Delete(entity);
    entity = cJSON_CreateArray();
    x->nmissing++;
  }
  cJSON *cfg = cJSON_AddObjectToObject(root, "config");
  cJSON_AddNumberToObject(cfg, "index", (double)r->config_index);
  cJSON_AddNullToObject(cfg, "code_hash");
  cJSON_AddItemToObject(cfg, "entity", entity);

  cJSON *res = cJSON_AddArrayToObject(root, "result");
  cJSON *costs = cJSON_CreateArray();
  const ob_timing *t = &r->timing;
  const double *cv = r->nall_costs > 0 ? r->all_costs : t->costs;
  int ncv = r->nall_costs > 0 ? r->nall_costs : t->ncosts;
  if (r->error_no == 0 && ncv > 0) {
    for (int i = 0; i < ncv; i++) cJSON_AddItemToArray(costs, num_json(cv[i]));
  } else if (r->error_no == 0) {
    cJSON_AddItemToArray(costs, num_json(t->median_s));
  } else {
    cJSON_AddItemToArray(costs, cJSON_CreateNumber(1e9));
  }
  cJSON_AddItemToArray(res, costs);
  cJSON_AddItemToArray(res, cJSON_CreateNumber(r->error_no));
  double all = (isfinite(r->build_s) ? r->build_s : 0) + (isfinite(r->run_s) ? r->run_s : 0);
  cJSON_AddItemToArray(res, num_json(isfinite(all) ? all : 0));
  cJSON_AddItemToArray(res, num_json(isfinite(r->timestamp) ? r->timestamp : 0));
  cJSON_AddNumberToObject(root, "version", 0.2);
  cJSON_AddStringToObject(root, "tvm_version", "opbench");
  /* How it was timed, where known: TVM reads only the keys above, and
   * import gives these back to the record. */
  if (r->error_no == 0 && (t->number > 0 || !isnan(t->min_repeat_ms))) {
    cJSON *tj = cJSON_AddObjectToObject(root, "opbench_timing");
    if (t->number > 0) cJSON_AddNumberToObject(tj, "number", t->number);
    if (t->repeat > 0) cJSON_AddNumberToObject(tj, "repeat", t->repeat);
    if (!isnan(t->min_repeat_ms)) {
      cJSON_AddItemToObject(tj, "min_repeat_ms", num_json(t->min_repeat_ms));
      cJSON_AddBoolToObject(tj, "flush", t->flush);
      if (t->flush && t->flush_keep_first) cJSON_AddBoolToObject(tj, "flush_keep_first", true);
    }
    if (t->timer_overhead_s > 0)
      cJSON_AddItemToObject(tj, "timer_overhead_s", num_json(t->timer_overhead_s));
    cJSON_AddBoolToObject(tj, "below_resolution", t->below_resolution);
    cJSON_AddBoolToObject(tj, "noisy", t->noisy);
    cJSON_AddNumberToObject(tj, "extra_repeats", t->extra_repeats);
    cJSON_AddBoolToObject(tj, "emulated", t->emulated);
  }

  line = cJSON_PrintUnformatted(root);
  if (!line) {
    s = ob_fail(db->ctx, OB_ERR_NOMEM, "exporting measurement (%s): out of memory", what);
    goto done;
  }
  fputs(line, x->f);
  fputc('\n', x->f);
  if (ferror(x->f)) {
    s = ob_fail(db->ctx, OB_ERR_IO, "writing '%s': %s", x->path, strerror(errno));
    goto done;
  }
  x->n++;
done:
  free(line);
  free(args_text);
  free(ent_text);
  cJSON_Delete(attrs);
  cJSON_Delete(root);
  return s;
}

ob_status ob_db_export_autotvm(ob_db *db, const ob_db_filter *f, const char *path,
                               const ob_db_autotvm_i *map, void *map_ctx,
                               ob_db_entity_fn entity_fn, void *user, int64_t *nrows) {
  OB_ASSERT(db);
  if (nrows) *nrows = 0;
  ob_db_filter by_time = {.order = OB_DB_ORDER_TIME};
  if (!f) f = &by_time;
  ob_db_out o;
  ob_status s = ob_db_out_open(db, path, &o);
  if (s) return s;
  export_ctx x = {db, o.f, path, map, map_ctx, entity_fn, user, 0, 0};
  s = ob_db_visit(db, f, export_row, &x);
  ob_status cs = ob_db_out_close(db, &o, s == OB_OK);
  if (!s) s = cs;
  if (!s && x.nmissing)
    ob_log(db->ctx, OB_LOG_WARN,
           "%s: %lld of %lld records have no config entity stored; written with \"entity\": []",
           path, (long long)x.nmissing, (long long)x.n);
  if (!s && nrows) *nrows = x.n;
  return s;
}
