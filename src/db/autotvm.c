/* autotvm.c: AutoTVM v0.2 JSON-lines logs. Import maps AutoTVM tasks
 * (conv2d_NCHWc / conv2d_nchw, dense_nopack / dense_pack) to opbench
 * workloads, files any other task under its AutoTVM task key, and skips
 * broken lines with their numbers; export writes one line per record with
 * args rebuilt from the workload. Every cJSON tree here is owned by the
 * function that parsed or built it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "db/db_impl.h"
#include "opbench/ops.h"

#define OB_IMPORT_CHUNK 512 /* lines per transaction */

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

/* ["TENSOR", [d0, d1, ...], "float32"] */
static bool tensor(const cJSON *t, int64_t *shape, int cap, int *ndim, const char **dtype) {
  if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != 3) return false;
  const cJSON *tag = cJSON_GetArrayItem(t, 0), *sh = cJSON_GetArrayItem(t, 1),
              *dt = cJSON_GetArrayItem(t, 2);
  if (!cJSON_IsString(tag) || strcmp(tag->valuestring, "TENSOR") || !cJSON_IsArray(sh) ||
      !cJSON_IsString(dt))
    return false;
  int n = cJSON_GetArraySize(sh);
  if (n > cap) return false;
  for (int i = 0; i < n; i++)
    if (!as_int(cJSON_GetArrayItem(sh, i), &shape[i]) || shape[i] < 0) return false;
  *ndim = n;
  *dtype = dt->valuestring;
  return true;
}

/* An int or a list of 1 or 2 ints -> (h, w). */
static bool pair(const cJSON *v, int64_t out[2]) {
  if (as_int(v, &out[0])) {
    out[1] = out[0];
    return true;
  }
  if (!cJSON_IsArray(v)) return false;
  int n = cJSON_GetArraySize(v);
  if (n == 1 && as_int(cJSON_GetArrayItem(v, 0), &out[0])) {
    out[1] = out[0];
    return true;
  }
  return n == 2 && as_int(cJSON_GetArrayItem(v, 0), &out[0]) &&
         as_int(cJSON_GetArrayItem(v, 1), &out[1]);
}

/* TVM's get_pad_tuple: an int, (pad_h, pad_w) or (top, left, bottom, right). */
static bool padding(const cJSON *v, int64_t out[4]) {
  int64_t hw[2];
  if (pair(v, hw)) {
    out[0] = out[2] = hw[0];
    out[1] = out[3] = hw[1];
    return true;
  }
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 4) return false;
  for (int i = 0; i < 4; i++)
    if (!as_int(cJSON_GetArrayItem(v, i), &out[i])) return false;
  return true;
}

/* Fills the map from a parsed-and-checked workload. */
static bool from_workload(const ob_workload *wl, wl_map *out) {
  if (ob_workload_validate(NULL, wl) != OB_OK) return false;
  char key[512];
  ob_workload_key(wl, key, sizeof key);
  ob_str a = {0};
  ob_str_appendf(&a, "{\"dtype\":\"%s\"", ob_dtype_name(wl->dtype));
  for (int i = 0; i < wl->nattr; i++)
    ob_str_appendf(&a, ",\"%s\":%lld", wl->attr_name[i], (long long)wl->attr[i]);
  if (wl->epilogue[0]) ob_str_appendf(&a, ",\"epilogue\":\"%s\"", wl->epilogue);
  ob_str_append(&a, "}");
  out->key = strdup(key);
  out->op = strdup(wl->op);
  out->attrs = ob_str_take(&a);
  out->flops = ob_workload_flops(wl);
  out->mapped = true;
  return true;
}

/* conv2d_NCHWc.x86 / conv2d_nchw.x86: [data, kernel, strides, padding,
 * dilation, (layout, out_layout,) out_dtype], NCHW float32 only. */
static bool map_conv2d(const cJSON *args, wl_map *out) {
  int n = cJSON_GetArraySize(args);
  if (n < 5) return false;
  int64_t d[8], k[8], st[2], pad[4], dil[2];
  int dn, kn;
  const char *dt, *kt;
  if (!tensor(cJSON_GetArrayItem(args, 0), d, 8, &dn, &dt) || dn != 4 || strcmp(dt, "float32"))
    return false;
  if (!tensor(cJSON_GetArrayItem(args, 1), k, 8, &kn, &kt) || kn != 4 || strcmp(kt, "float32"))
    return false;
  if (k[1] != d[1]) return false; /* grouped or depthwise: other tasks */
  if (!pair(cJSON_GetArrayItem(args, 2), st) || !padding(cJSON_GetArrayItem(args, 3), pad) ||
      !pair(cJSON_GetArrayItem(args, 4), dil))
    return false;
  for (int i = 5; i < n; i++) {
    const cJSON *v = cJSON_GetArrayItem(args, i);
    if (!cJSON_IsString(v)) return false;
    const char *s = v->valuestring;
    bool ok = i == n - 1 ? !strcmp(s, "float32") || !*s : !strcmp(s, "NCHW") || !*s;
    if (!ok) return false;
  }
  char text[512];
  snprintf(text, sizeof text,
           "N=%lld,C=%lld,H=%lld,W=%lld,K=%lld,R=%lld,S=%lld,stride_h=%lld,stride_w=%lld,"
           "pad_t=%lld,pad_l=%lld,pad_b=%lld,pad_r=%lld,dil_h=%lld,dil_w=%lld",
           (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3], (long long)k[0],
           (long long)k[2], (long long)k[3], (long long)st[0], (long long)st[1],
           (long long)pad[0], (long long)pad[1], (long long)pad[2], (long long)pad[3],
           (long long)dil[0], (long long)dil[1]);
  ob_workload wl;
  if (ob_workload_parse(NULL, "conv2d", text, &wl) != OB_OK) return false;
  return from_workload(&wl, out);
}

/* dense_nopack.x86 / dense_pack.x86: [data [M,K], weight [N,K], bias or
 * null, out_dtype], float32 only. */
static bool map_dense(const cJSON *args, wl_map *out) {
  int n = cJSON_GetArraySize(args);
  if (n < 2 || n > 4) return false;
  int64_t a[8], b[8], c[8];
  int an, bn, cn;
  const char *at, *bt, *ct;
  if (!tensor(cJSON_GetArrayItem(args, 0), a, 8, &an, &at) || an != 2 || strcmp(at, "float32"))
    return false;
  if (!tensor(cJSON_GetArrayItem(args, 1), b, 8, &bn, &bt) || bn != 2 || strcmp(bt, "float32") ||
      b[1] != a[1])
    return false;
  bool bias = false;
  if (n >= 3) {
    const cJSON *v = cJSON_GetArrayItem(args, 2);
    if (tensor(v, c, 8, &cn, &ct)) {
      if (cn != 1 || c[0] != b[0] || strcmp(ct, "float32")) return false;
      bias = true;
    } else if (!cJSON_IsNull(v)) {
      return false;
    }
  }
  if (n == 4) {
    const cJSON *v = cJSON_GetArrayItem(args, 3);
    if (!cJSON_IsNull(v) && !(cJSON_IsString(v) && !strcmp(v->valuestring, "float32")))
      return false;
  }
  char text[256];
  snprintf(text, sizeof text, "M=%lld,N=%lld,K=%lld", (long long)a[0], (long long)b[0],
           (long long)a[1]);
  ob_workload wl;
  if (ob_workload_parse(NULL, "dense", text, &wl) != OB_OK) return false;
  if (bias && ob_workload_set_epilogue(NULL, &wl, "bias") != OB_OK) return false;
  return from_workload(&wl, out);
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

/* The task name without its target suffix: "conv2d_NCHWc.x86" -> "conv2d_NCHWc". */
static bool task_is(const char *task, const char *const *bases) {
  size_t n = strcspn(task, ".");
  for (int i = 0; bases[i]; i++)
    if (strlen(bases[i]) == n && !strncmp(task, bases[i], n)) return true;
  return false;
}

/* Always fills *out (unless out of memory: false). */
static bool map_task(const char *task, const cJSON *args, const cJSON *kwargs, wl_map *out) {
  static const char *const k_conv[] = {"conv2d_NCHWc", "conv2d_nchw", NULL};
  static const char *const k_dense[] = {"dense_nopack", "dense_pack", "dense", NULL};
  memset(out, 0, sizeof *out);
  bool done = false;
  if (cJSON_IsObject(kwargs)) done = map_kwargs(kwargs, out);
  if (!done && task_is(task, k_conv)) done = map_conv2d(args, out);
  if (!done && task_is(task, k_dense)) done = map_dense(args, out);
  if (!done) {
    wl_map_clear(out);
    char *a = cJSON_PrintUnformatted(args);
    ob_str k = {0};
    ob_str_appendf(&k, "autotvm:%s:%s", task, a ? a : "[]");
    free(a);
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
    }
  }
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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median, mean and coefficient of variation of n > 0 samples. */
static void costs_stats(const double *x, int n, double *median, double *mean, double *cv) {
  double *s = malloc((size_t)n * sizeof *s);
  double sum = 0, sq = 0;
  for (int i = 0; i < n; i++) sum += x[i];
  *mean = sum / n;
  for (int i = 0; i < n; i++) sq += (x[i] - *mean) * (x[i] - *mean);
  *cv = *mean > 0 ? sqrt(sq / n) / *mean : NAN;
  if (!s) {
    *median = *mean;
    return;
  }
  memcpy(s, x, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  *median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
}

typedef struct chunk_counts {
  int64_t imported, duplicate, unmapped;
} chunk_counts;

/* Stores one parsed line inside the open transaction. */
static ob_status import_line(ob_db *db, const log_line *l, const ob_db_import_opts *o,
                             chunk_counts *cc) {
  wl_map m;
  if (!map_task(l->task, l->args, l->kwargs, &m))
    return ob_fail(db->ctx, OB_ERR_NOMEM, "importing into '%s': out of memory", db->path);
  char *args = cJSON_PrintUnformatted(l->args);
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
  r.median_s = r.mean_s = r.cv = NAN;
  if (l->error_no == 0) {
    for (int i = 0; i < n; i++) costs[i] = cJSON_GetArrayItem(l->costs, i)->valuedouble;
    r.ncosts = n;
    r.costs = costs;
    costs_stats(costs, n, &r.median_s, &r.mean_s, &r.cv);
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
  r.nthreads = nt ? atoi(nt + strlen("-num-threads=")) : 0;
  r.timestamp = l->timestamp > 0 ? l->timestamp : 0;

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
  FILE *f = fopen(path, "r");
  if (!f) return ob_fail(db->ctx, OB_ERR_IO, "cannot read AutoTVM log '%s': %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int64_t lineno = 0;
  bool in_txn = false;
  int pending = 0;
  chunk_counts cc = {0};
  ob_status s = OB_OK;
  char why[160];
  errno = 0;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    size_t lead = strspn(line, " \t");
    if ((ssize_t)lead == len) continue;
    res->nlines++;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, (size_t)len, &end, false);
    if (!root) {
      long col = end ? (long)(end - line) + 1 : 0;
      snprintf(why, sizeof why, "not valid JSON (stops at column %ld)", col);
      add_bad(res, lineno, why);
      continue;
    }
    if (end && (ssize_t)(end - line + strspn(end, " \t")) < len) {
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
  bool read_err = !s && ferror(f);
  int saved = errno;
  if (in_txn) {
    if (s || read_err) {
      ob_db_txn_rollback(db);
    } else if (!(s = ob_db_txn_commit(db))) {
      res->nimported += cc.imported;
      res->nduplicate += cc.duplicate;
      res->nunmapped += cc.unmapped;
    }
  }
  if (read_err)
    s = ob_fail(db->ctx, OB_ERR_IO, "reading AutoTVM log '%s' after line %lld: %s", path,
                (long long)lineno, strerror(saved));
  free(line);
  fclose(f);
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

static int64_t attr_int(const cJSON *attrs, const char *name, bool *ok) {
  int64_t v = 0;
  if (!as_int(cJSON_GetObjectItemCaseSensitive(attrs, name), &v)) *ok = false;
  return v;
}

static cJSON *tensor_json(const int64_t *shape, int n) {
  cJSON *t = cJSON_CreateArray();
  cJSON_AddItemToArray(t, cJSON_CreateString("TENSOR"));
  cJSON *sh = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[i]));
  cJSON_AddItemToArray(t, sh);
  cJSON_AddItemToArray(t, cJSON_CreateString("float32"));
  return t;
}

static cJSON *ints_json(const int64_t *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
  return a;
}

/* TVM's x86 argument lists for conv2d and dense workloads; NULL for any
 * other operator or an attribute set that does not fit. */
static cJSON *args_from_attrs(const char *op, const cJSON *attrs) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(attrs, "dtype");
  if (!cJSON_IsObject(attrs) || (dt && !(cJSON_IsString(dt) && !strcmp(dt->valuestring, "float32"))))
    return NULL;
  const cJSON *epi = cJSON_GetObjectItemCaseSensitive(attrs, "epilogue");
  const char *e = cJSON_IsString(epi) ? epi->valuestring : "";
  bool ok = true;
  if (op && !strcmp(op, "conv2d")) {
    const char *names[] = {"N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_t",
                           "pad_l", "pad_b", "pad_r", "dil_h", "dil_w", "groups"};
    int64_t v[16];
    for (int i = 0; i < 16; i++) v[i] = attr_int(attrs, names[i], &ok);
    if (!ok || v[15] != 1) return NULL;
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){v[0], v[1], v[2], v[3]}, 4));
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){v[4], v[1], v[5], v[6]}, 4));
    cJSON_AddItemToArray(a, ints_json(v + 7, 2));
    cJSON_AddItemToArray(a, ints_json(v + 9, 4));
    cJSON_AddItemToArray(a, ints_json(v + 13, 2));
    cJSON_AddItemToArray(a, cJSON_CreateString("NCHW"));
    cJSON_AddItemToArray(a, cJSON_CreateString("NCHW"));
    cJSON_AddItemToArray(a, cJSON_CreateString("float32"));
    return a;
  }
  if (op && !strcmp(op, "dense")) {
    int64_t m = attr_int(attrs, "M", &ok), n = attr_int(attrs, "N", &ok),
            k = attr_int(attrs, "K", &ok);
    if (!ok) return NULL;
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){m, k}, 2));
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){n, k}, 2));
    cJSON_AddItemToArray(a, strstr(e, "bias") ? tensor_json(&n, 1) : cJSON_CreateNull());
    cJSON_AddItemToArray(a, cJSON_CreateString("float32"));
    return a;
  }
  return NULL;
}

typedef struct export_ctx {
  ob_db *db;
  FILE *f;
  const char *path;
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
  sqlite3_stmt *st;
  if ((s = ob_db_stmt(db, OB_DBS_WL_GET, &st))) return s;
  ob_db_bind_text(st, 1, r->workload);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const char *a = ob_db_col_text(st, 3);
    if (a) args_text = strdup(a);
  }
  sqlite3_reset(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    free(args_text);
    return ob_db_sqlfail(db, rc, "reading workload %s", r->workload);
  }

  attrs = cJSON_Parse(r->attrs ? r->attrs : "{}");
  cJSON *args = args_text ? cJSON_Parse(args_text) : NULL;
  if (!cJSON_IsArray(args)) {
    cJSON_Delete(args);
    args = args_from_attrs(r->op, attrs);
  }
  if (!args) { /* no TVM form: the key stands in, kwargs carry the rest */
    args = cJSON_CreateArray();
    cJSON_AddItemToArray(args, cJSON_CreateString(r->workload));
  }

  cJSON *kwargs = cJSON_CreateObject();
  wl_map m;
  bool same = map_task(r->tmpl, args, NULL, &m) && !strcmp(m.key, r->workload);
  wl_map_clear(&m);
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
  if (r->error_no == 0 && r->ncosts > 0) {
    for (int i = 0; i < r->ncosts; i++) cJSON_AddItemToArray(costs, num_json(r->costs[i]));
  } else if (r->error_no == 0) {
    cJSON_AddItemToArray(costs, num_json(r->median_s));
  } else {
    cJSON_AddItemToArray(costs, cJSON_CreateNumber(1e9));
  }
  cJSON_AddItemToArray(res, costs);
  cJSON_AddItemToArray(res, cJSON_CreateNumber(r->error_no));
  double all = (isfinite(r->build_s) ? r->build_s : 0) + (isfinite(r->run_s) ? r->run_s : 0);
  cJSON_AddItemToArray(res, num_json(all));
  cJSON_AddItemToArray(res, num_json(r->timestamp));
  cJSON_AddNumberToObject(root, "version", 0.2);
  cJSON_AddStringToObject(root, "tvm_version", "opbench");

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
                               ob_db_entity_fn entity_fn, void *user, int64_t *nrows) {
  OB_ASSERT(db);
  if (nrows) *nrows = 0;
  ob_db_filter by_time = {.order = OB_DB_ORDER_TIME};
  if (!f) f = &by_time;
  ob_db_out o;
  ob_status s = ob_db_out_open(db, path, &o);
  if (s) return s;
  export_ctx x = {db, o.f, path, entity_fn, user, 0, 0};
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
