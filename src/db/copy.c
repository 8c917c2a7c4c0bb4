/* copy.c: copying records between two stores (`opbench db push|pull`: a
 * local SQLite file and a team's PostgreSQL store, or any two stores).
 * Each measurement goes with its host (facts and compiler), its workload
 * (operator, attributes, FLOPs, AutoTVM arguments) and its config entity;
 * a key the destination holds keeps its trial (or is replaced, with the
 * old trial kept in the history, under OB_DB_REPLACE), so copying twice
 * copies nothing the second time. Confirmed bests follow their tasks: the
 * newer confirmation wins. The destination is written in transactions of
 * OB_DB_COPY_CHUNK records; a failure keeps what was committed before it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

#define OB_DB_COPY_CHUNK 500

typedef struct copy_ctx {
  ob_db *src, *dst;
  unsigned flags;
  ob_db_copy_result *res;
  int pending;   /* records in the open transaction */
  char **seen;   /* host fingerprints and workload keys already copied */
  int nseen, cseen;
} copy_ctx;

static bool seen(copy_ctx *c, const char *kind, const char *name, ob_status *st) {
  char key[1024];
  snprintf(key, sizeof key, "%s:%s", kind, name);
  for (int i = 0; i < c->nseen; i++)
    if (!strcmp(c->seen[i], key)) return true;
  if (c->nseen == c->cseen) {
    int n = c->cseen ? c->cseen * 2 : 64;
    char **v = realloc(c->seen, (size_t)n * sizeof *v);
    if (!v) {
      *st = ob_fail(c->dst->ctx, OB_ERR_NOMEM, "copying records: out of memory");
      return true;
    }
    c->seen = v;
    c->cseen = n;
  }
  if (!(c->seen[c->nseen] = strdup(key))) {
    *st = ob_fail(c->dst->ctx, OB_ERR_NOMEM, "copying records: out of memory");
    return true;
  }
  c->nseen++;
  return false;
}

static ob_status copy_host(copy_ctx *c, const char *fp) {
  ob_status st = OB_OK;
  if (seen(c, "host", fp, &st)) return st;
  ob_db_host h;
  st = ob_db_get_host(c->src, fp, &h);
  if (st == OB_ERR_NOT_FOUND) { /* a placeholder row is made with the record */
    ob_ctx_clear_error(c->src->ctx);
    return OB_OK;
  }
  if (st) return st;
  if (!h.host.cpu_model[0] && !h.host.isa[0] && !h.compiler[0]) return OB_OK; /* a placeholder */
  snprintf(h.host.fingerprint, sizeof h.host.fingerprint, "%s", fp);
  st = ob_db_put_host(c->dst, &h.host, h.compiler, h.compiler_version);
  if (!st) c->res->nhosts++;
  return st;
}

static ob_status copy_workload(copy_ctx *c, const ob_db_record *r) {
  ob_status st = OB_OK;
  if (seen(c, "wl", r->workload, &st)) return st;
  ob_dbstmt *q;
  if ((st = ob_db_stmt(c->src, OB_DBS_WL_GET, &q))) return st;
  ob_db_bind_text(q, 1, r->workload);
  int rc = ob_db_step(q);
  char *op = NULL, *attrs = NULL, *args = NULL;
  double flops = 0;
  if (rc == OB_DB_ROW) {
    const char *v;
    if ((v = ob_db_col_text(q, 0))) op = strdup(v);
    if ((v = ob_db_col_text(q, 1))) attrs = strdup(v);
    if ((v = ob_db_col_text(q, 3))) args = strdup(v);
    flops = ob_db_col_real(q, 2);
  }
  ob_db_reset(q);
  if (rc == OB_DB_ROW && op)
    st = ob_db_put_workload_locked(c->dst, r->workload, op, attrs, isfinite(flops) ? flops : 0,
                                   args, false);
  else if (rc != OB_DB_ROW && rc != OB_DB_DONE)
    st = ob_db_sqlfail(c->src, rc, "reading workload %s", r->workload);
  if (!st && rc == OB_DB_ROW) c->res->nworkloads++;
  free(op);
  free(attrs);
  free(args);
  return st;
}

static ob_status copy_one(void *user, const ob_db_record *r) {
  copy_ctx *c = user;
  ob_status st = OB_OK;
  if (c->pending == 0 && (st = ob_db_txn_begin(c->dst))) return st;
  c->pending++;
  st = copy_host(c, r->host);
  if (!st) st = copy_workload(c, r);
  bool stored = false;
  if (!st) {
    st = ob_db_put_locked(c->dst, r, c->flags, &stored);
  }
  if (st) {
    ob_db_txn_rollback(c->dst);
    c->pending = 0;
    return st;
  }
  c->res->nrecords++;
  if (stored) c->res->ncopied++;
  else c->res->nduplicate++;
  if (c->pending >= OB_DB_COPY_CHUNK) {
    c->pending = 0;
    if ((st = ob_db_txn_commit(c->dst))) return st;
    c->res->ncommitted = c->res->ncopied;
  }
  return OB_OK;
}

static bool key_matches(const ob_db_key *k, const char *const v[5]) {
  const char *f[5] = {k->host, k->workload, k->target, k->resources, k->tmpl};
  for (int i = 0; i < 5; i++)
    if (f[i] && (!v[i] || strcmp(f[i], v[i]))) return false;
  return true;
}

/* The confirmed bests of the source whose keys the filter selects. */
static ob_status copy_confirmed(copy_ctx *c, const ob_db_filter *f) {
  bool have = false;
  ob_status st = c->src->be->table_exists(c->src, "confirmed", &have);
  if (st || !have) return st;
  ob_dbstmt *q = NULL;
  if ((st = ob_db_prepare(c->src,
                          "SELECT host, workload_key, target, resources, template, config_index,"
                          " median_s, mean_s, cv, candidates, timestamp FROM confirmed"
                          " ORDER BY workload_key, template, host, target, resources",
                          &q)))
    return st;
  int rc;
  while (!st && (rc = ob_db_step(q)) == OB_DB_ROW) {
    const char *v[5];
    for (int i = 0; i < 5; i++) v[i] = ob_db_col_text(q, i);
    if (f && !key_matches(&f->key, v)) continue;
    size_t lop = f && f->op ? strlen(f->op) : 0; /* a workload key starts "op/" */
    if (lop && (!v[1] || strncmp(v[1], f->op, lop) || v[1][lop] != '/')) continue;
    ob_db_key k = {.host = v[0], .workload = v[1], .target = v[2], .resources = v[3], .tmpl = v[4]};
    ob_db_confirmed src = {.config_index = (uint64_t)ob_db_col_int(q, 5),
                           .median_s = ob_db_col_real(q, 6),
                           .mean_s = ob_db_col_real(q, 7),
                           .cv = ob_db_col_real(q, 8),
                           .candidates = (int)ob_db_col_int(q, 9),
                           .timestamp = ob_db_col_real(q, 10)};
    ob_db_confirmed old;
    st = ob_db_get_confirmed(c->dst, &k, &old);
    if (st == OB_ERR_NOT_FOUND) {
      ob_ctx_clear_error(c->dst->ctx);
      old.timestamp = -1;
      st = OB_OK;
    }
    if (!st && src.timestamp > old.timestamp) {
      st = ob_db_put_confirmed(c->dst, &k, &src);
      if (!st) c->res->nconfirmed++;
    }
  }
  if (!st && rc != OB_DB_DONE) st = ob_db_sqlfail(c->src, rc, "reading the confirmed bests");
  ob_db_finalize(q);
  return st;
}

ob_status ob_db_copy(ob_db *src, ob_db *dst, const ob_db_filter *f, unsigned flags,
                     ob_db_copy_result *res) {
  OB_ASSERT(src && dst && res);
  memset(res, 0, sizeof *res);
  if (dst->readonly)
    return ob_fail(dst->ctx, OB_ERR_INVALID_ARG, "database '%s' was opened read-only", dst->path);
  if (src == dst) return ob_fail(dst->ctx, OB_ERR_INVALID_ARG, "copying database '%s' onto itself", dst->path);
  copy_ctx c = {.src = src, .dst = dst, .flags = flags & OB_DB_REPLACE, .res = res};
  ob_db_filter all = {.order = OB_DB_ORDER_TIME};
  ob_db_filter ff = f ? *f : all;
  ff.order = OB_DB_ORDER_TIME; /* oldest first: the destination keeps their order */
  ob_status st = ob_db_visit(src, &ff, copy_one, &c);
  if (!st && c.pending) {
    c.pending = 0;
    st = ob_db_txn_commit(dst);
  } else if (st && c.pending) {
    ob_db_txn_rollback(dst);
  }
  if (!st) {
    res->ncommitted = res->ncopied;
    st = copy_confirmed(&c, f);
  }
  for (int i = 0; i < c.nseen; i++) free(c.seen[i]);
  free(c.seen);
  if (st) ob_fail_prefix(dst->ctx, "copying records from '%s' to '%s'", src->path, dst->path);
  return st;
}
