/* status.c: `opbench fleet status`: the device keys a broker knows, their
 * workers (alive by their heartbeat key, busy, jobs done, last heartbeat)
 * and queues (entries not yet delivered, delivered but not acknowledged),
 * as TVM's query_rpc_tracker lists its devices. */
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_impl.h"

static int64_t int_of(redisReply *r) {
  int64_t v = -1;
  if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
  if (r) freeReplyObject(r);
  return v;
}

static void worker_info(fl_conn *fc, const char *id, ob_fleet_worker_info *w) {
  memset(w, 0, sizeof *w);
  snprintf(w->id, sizeof w->id, "%s", id);
  redisReply *r = fl_cmd(fc, "HGETALL " FL_PREFIX "worker:%s", id);
  if (r && r->type == REDIS_REPLY_ARRAY) {
    const redisReply *f;
    if ((f = fl_field(r, "host"))) snprintf(w->host, sizeof w->host, "%s", f->str);
    if ((f = fl_field(r, "cpu"))) snprintf(w->cpu, sizeof w->cpu, "%s", f->str);
    if ((f = fl_field(r, "targets"))) snprintf(w->targets, sizeof w->targets, "%s", f->str);
    if ((f = fl_field(r, "cores"))) snprintf(w->cores, sizeof w->cores, "%s", f->str);
    if ((f = fl_field(r, "job"))) snprintf(w->job, sizeof w->job, "%s", f->str);
    if ((f = fl_field(r, "threads"))) w->threads = atoi(f->str);
    if ((f = fl_field(r, "busy"))) w->busy = !strcmp(f->str, "1");
    if ((f = fl_field(r, "jobs_done"))) w->jobs_done = strtoll(f->str, NULL, 10);
    if ((f = fl_field(r, "refused"))) w->refused = strtoll(f->str, NULL, 10);
    if ((f = fl_field(r, "last_heartbeat"))) w->last_heartbeat = strtod(f->str, NULL);
    if ((f = fl_field(r, "pid"))) w->pid = strtol(f->str, NULL, 10);
  }
  if (r) freeReplyObject(r);
  w->alive = int_of(fl_cmd(fc, "EXISTS " FL_PREFIX "alive:%s", id)) == 1;
  if (!w->alive) { /* a dead worker is not busy, whatever it last said */
    w->busy = false;
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

ob_status ob_fleet_status_get(ob_ctx *ctx, const char *broker, ob_fleet_status **out) {
  *out = NULL;
  fl_conn fc = {.ctx = ctx};
  ob_status st = ob_fleet_parse_url(ctx, broker, &fc.addr);
  if (!st) st = fl_connect(&fc);
  if (st) return st;
  ob_fleet_status *s = calloc(1, sizeof *s);
  redisReply *keys = fl_cmd(&fc, "SMEMBERS " FL_PREFIX "keys");
  if (!s || !keys) {
    st = s ? OB_ERR_IO : ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  size_t nk = keys->type == REDIS_REPLY_ARRAY ? keys->elements : 0;
  s->keys = calloc(nk ? nk : 1, sizeof *s->keys);
  const char **names = calloc(nk ? nk : 1, sizeof *names);
  if (!s->keys || !names) {
    free(names);
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < nk; i++) names[i] = keys->element[i]->str;
  qsort(names, nk, sizeof *names, cmp_str);
  for (size_t i = 0; i < nk; i++) {
    ob_fleet_key_info *k = &s->keys[s->nkeys++];
    snprintf(k->key, sizeof k->key, "%s", names[i]);
    /* not yet delivered: the group's lag; delivered, unacknowledged: pending */
    redisReply *g = fl_cmd(&fc, "XINFO GROUPS " FL_PREFIX "jobs:%s", k->key);
    int64_t len = int_of(fl_cmd(&fc, "XLEN " FL_PREFIX "jobs:%s", k->key));
    k->queued = len > 0 ? len : 0;
    if (g && g->type == REDIS_REPLY_ARRAY)
      for (size_t j = 0; j < g->elements; j++) {
        const redisReply *gi = g->element[j];
        const redisReply *name = fl_field(gi, "name");
        if (!name || strcmp(name->str, FL_GROUP) != 0) continue;
        for (size_t f = 0; f + 1 < gi->elements; f += 2)
          if (gi->element[f]->type == REDIS_REPLY_STRING && !strcmp(gi->element[f]->str, "pending") &&
              gi->element[f + 1]->type == REDIS_REPLY_INTEGER)
            k->pending = gi->element[f + 1]->integer;
      }
    if (g) freeReplyObject(g);
    /* entries are deleted once answered: the stream holds the queued and the pending */
    k->queued = k->queued > k->pending ? k->queued - k->pending : 0;
    redisReply *ws = fl_cmd(&fc, "SMEMBERS " FL_PREFIX "workers:%s", k->key);
    size_t nw = ws && ws->type == REDIS_REPLY_ARRAY ? ws->elements : 0;
    k->workers = calloc(nw ? nw : 1, sizeof *k->workers);
    if (!k->workers) {
      if (ws) freeReplyObject(ws);
      free(names);
      st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
      goto done;
    }
    const char **wn = calloc(nw ? nw : 1, sizeof *wn);
    for (size_t j = 0; wn && j < nw; j++) wn[j] = ws->element[j]->str;
    if (wn) qsort(wn, nw, sizeof *wn, cmp_str);
    for (size_t j = 0; wn && j < nw; j++) {
      worker_info(&fc, wn[j], &k->workers[k->nworkers]);
      k->nalive += k->workers[k->nworkers].alive;
      k->nworkers++;
    }
    free(wn);
    if (ws) freeReplyObject(ws);
  }
  free(names);
  {
    redisReply *r = fl_cmd(&fc, "GET " FL_PREFIX "double_measured");
    s->double_measured = r && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    if (r) freeReplyObject(r);
  }
  if (fl_broken(&fc)) st = OB_ERR_IO;
done:
  if (keys) freeReplyObject(keys);
  fl_close(&fc);
  if (st) ob_fleet_status_free(s);
  else *out = s;
  return st;
}

void ob_fleet_status_free(ob_fleet_status *s) {
  if (!s) return;
  for (int i = 0; i < s->nkeys; i++) free(s->keys[i].workers);
  free(s->keys);
  free(s);
}
