/* client.c: the fleet's measurer. A batch becomes one signed job per
 * config on the device key's stream (the job carries the operator, its
 * attributes, template, target, config index and entity, the timing
 * options, threads and seed: what a worker needs to build its own kernel),
 * then the client reads its reply stream until every job has its result.
 * A job without news for resend_s is looked after: its stored result is
 * taken when the reply was lost; it is sent again (same id, new timestamp
 * and nonce) when its entry is gone (a broker that restarted without it)
 * or the worker found it expired. A broker that went away is reconnected
 * to; a key without a live worker for no_worker_s fails the batch with a
 * message naming the key. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fleet/fleet_impl.h"
#include "opbench/ops.h"

struct ob_fleet_client {
  ob_ctx *ctx;
  ob_fleet_client_opts o;
  ob_fleet_key key;
  fl_conn conn;
  char dkey[72];
  char id[40];
  char stream[160];
  char reply[200];
  char last[64];     /* the last reply entry read */
  uint64_t seq;
  ob_measurer *measurer;
  ob_fleet_client_stats stats;
};

typedef struct pending {
  fl_job job;
  char eid[64];      /* its entry in the job stream */
  double sent_at, news_at;
  bool done;
} pending;

static double no_worker_s(const ob_fleet_client *c) { return c->o.no_worker_s > 0 ? c->o.no_worker_s : 60; }
static double reconnect_s(const ob_fleet_client *c) { return c->o.reconnect_s > 0 ? c->o.reconnect_s : 120; }
static double resend_s(const ob_fleet_client *c) { return c->o.resend_s > 0 ? c->o.resend_s : 5; }

/* Live workers of the key; their targets joined into targets (may be NULL). */
static int alive_workers(ob_fleet_client *c, char *targets, size_t cap, char *first_id, size_t id_cap) {
  if (targets && cap) targets[0] = '\0';
  if (first_id && id_cap) first_id[0] = '\0';
  redisReply *r = fl_cmd(&c->conn, "SMEMBERS " FL_PREFIX "workers:%s", c->dkey);
  if (!r) return -1;
  int n = 0;
  if (r->type == REDIS_REPLY_ARRAY)
    for (size_t i = 0; i < r->elements; i++) {
      const char *id = r->element[i]->str;
      redisReply *a = fl_cmd(&c->conn, "EXISTS " FL_PREFIX "alive:%s", id);
      bool alive = a && a->type == REDIS_REPLY_INTEGER && a->integer == 1;
      if (a) freeReplyObject(a);
      if (!alive) continue;
      n++;
      if (first_id && !first_id[0]) snprintf(first_id, id_cap, "%s", id);
      if (targets) {
        redisReply *t = fl_cmd(&c->conn, "HGET " FL_PREFIX "worker:%s targets", id);
        if (t && t->type == REDIS_REPLY_STRING) {
          size_t l = strlen(targets);
          snprintf(targets + l, cap - l, "|%s", t->str);
        }
        if (t) freeReplyObject(t);
      }
    }
  freeReplyObject(r);
  return n;
}

static ob_status ensure_conn(ob_fleet_client *c) {
  if (!fl_broken(&c->conn)) return OB_OK;
  ob_status st = fl_reconnect(&c->conn, reconnect_s(c));
  if (!st) c->stats.reconnects++;
  return st;
}

/* Sends (or sends again) one job: a fresh timestamp and nonce. */
static ob_status send_job(ob_fleet_client *c, pending *p) {
  p->job.ts = fl_unix_now();
  fl_random_hex(p->job.nonce, 16);
  char *json = fl_job_json(&p->job);
  if (!json) return ob_fail(c->ctx, OB_ERR_NOMEM, "out of memory");
  char sig[65];
  fl_sign(&c->key, FL_JOB_DOMAIN, json, strlen(json), sig);
  const char *argv[] = {"XADD", c->stream, "*", "job", json, "sig", sig};
  redisReply *r = fl_cmdv(&c->conn, 7, argv, NULL);
  cJSON_free(json);
  if (!r) return OB_ERR_IO;
  ob_status st = OB_OK;
  if (r->type == REDIS_REPLY_STRING) snprintf(p->eid, sizeof p->eid, "%s", r->str);
  else st = ob_fail(c->ctx, OB_ERR_IO, "the broker at %s refused a job: %s", c->conn.shown, r->str ? r->str : "?");
  freeReplyObject(r);
  p->sent_at = p->news_at = ob_now_s();
  c->stats.sent++;
  return st;
}

/* A result's JSON and signature: into its pending job when it is one. */
static ob_status take_result(ob_fleet_client *c, ob_task *task, pending *ps, int n, ob_measure_result *out,
                             const char *json, size_t len, const char *sig, size_t sig_len, int *left) {
  if (!fl_verify(&c->key, FL_RESULT_DOMAIN, json, len, sig, sig_len)) {
    ob_log(c->ctx, OB_LOG_WARN, "fleet: a result with a bad signature on %s was ignored", c->reply);
    return OB_OK;
  }
  fl_result r;
  char why[128];
  if (!fl_result_parse(json, len, &r, why, sizeof why)) {
    ob_log(c->ctx, OB_LOG_WARN, "fleet: a malformed result was ignored: %s", why);
    return OB_OK;
  }
  for (int i = 0; i < n; i++) {
    pending *p = &ps[i];
    if (strcmp(p->job.id, r.id) != 0) continue;
    if (p->done) {
      c->stats.duplicates++;
      return OB_OK;
    }
    if (r.expired) { /* too old when a worker saw it: again, fresh */
      c->stats.resent++;
      return send_job(c, p);
    }
    if (r.refused)
      return ob_fail(c->ctx, OB_ERR_INVALID_ARG, "device key '%s': %s", c->dkey, r.res.message);
    p->done = true;
    (*left)--;
    c->stats.results++;
    out[i] = r.res;
    if (!out[i].error_no && out[i].timing.median_s > 0)
      out[i].gflops = ob_task_flops(task) / out[i].timing.median_s / 1e9;
    int k = c->stats.nrtt % OB_FLEET_RTT_KEEP;
    c->stats.rtt_s[k] = ob_now_s() - p->sent_at;
    c->stats.work_s[k] = r.job_s;
    c->stats.build_s[k] = r.res.build_s;
    c->stats.run_s[k] = r.res.run_s;
    c->stats.nrtt++;
    return OB_OK;
  }
  c->stats.duplicates++; /* a result of an earlier batch, come twice */
  return OB_OK;
}

/* A job without news: its stored result, or sent again when its entry is gone. */
static ob_status look_after(ob_fleet_client *c, ob_task *task, pending *ps, int n, int i,
                            ob_measure_result *out, int *left) {
  pending *p = &ps[i];
  p->news_at = ob_now_s();
  redisReply *r = fl_cmd(&c->conn, "HGETALL " FL_PREFIX "result:%s", p->job.id);
  if (!r) return OB_ERR_IO;
  const redisReply *rj = fl_field(r, "res"), *rs = fl_field(r, "sig");
  ob_status st = OB_OK;
  if (rj && rs) {
    st = take_result(c, task, ps, n, out, rj->str, rj->len, rs->str, rs->len, left);
    freeReplyObject(r);
    return st;
  }
  freeReplyObject(r);
  r = fl_cmd(&c->conn, "XRANGE %s %s %s", c->stream, p->eid, p->eid);
  if (!r) return OB_ERR_IO;
  bool there = r->type == REDIS_REPLY_ARRAY && r->elements > 0;
  freeReplyObject(r);
  if (!there) {
    /* gone without a result: lost with a broker that restarted (or being
     * answered right now, in which case the worker answers the copy from
     * the stored result) */
    r = fl_cmd(&c->conn, "EXISTS " FL_PREFIX "claim:%s", p->job.id);
    bool claimed = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r) freeReplyObject(r);
    if (!claimed) {
      ob_log(c->ctx, OB_LOG_WARN, "fleet: job %s was lost by the broker; sending it again", p->job.id);
      c->stats.resent++;
      st = send_job(c, p);
    }
  }
  return st;
}

static ob_status fill_job(ob_fleet_client *c, ob_task *task, const ob_measure_opts *o, const ob_config *cfg,
                          const char *attrs, fl_job *j) {
  memset(j, 0, sizeof *j);
  snprintf(j->id, sizeof j->id, "%s-%llu", c->id, (unsigned long long)++c->seq);
  snprintf(j->key, sizeof j->key, "%s", c->dkey);
  snprintf(j->reply, sizeof j->reply, "%s", c->reply);
  const ob_workload *wl = ob_task_workload(task);
  snprintf(j->op, sizeof j->op, "%s", wl->op);
  snprintf(j->tmpl, sizeof j->tmpl, "%s", ob_task_template(task));
  snprintf(j->target, sizeof j->target, "%s", ob_target_str(ob_task_target(task)));
  j->space_len = ob_space_len(ob_task_space(task));
  j->index = cfg->index;
  j->timing = o->timing;
  j->nthreads = o->nthreads > 0 ? o->nthreads : 1;
  j->seed = o->seed;
  j->build_timeout_s = o->build.timeout_s > 0 ? o->build.timeout_s : 0;
  j->attrs = strdup(attrs);
  char *cj = NULL;
  ob_status st = ob_config_to_json(c->ctx, cfg, &cj);
  if (st) return st;
  cJSON *pj = cJSON_Parse(cj);
  free(cj);
  j->entity = pj ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(pj, "entity")) : NULL;
  cJSON_Delete(pj);
  if (!j->attrs || !j->entity) return ob_fail(c->ctx, OB_ERR_NOMEM, "out of memory");
  return OB_OK;
}

static ob_status fleet_measure(void *self, ob_ctx *ctx, ob_task *task, const ob_measure_opts *o,
                               const ob_config *cfgs, int n, ob_measure_result *out) {
  ob_fleet_client *c = self;
  c->ctx = c->conn.ctx = ctx;
  if (n <= 0) return OB_OK;
  pending *ps = calloc((size_t)n, sizeof *ps);
  if (!ps) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  ob_str attrs = {0};
  ob_workload_attrs(ob_task_workload(task), &attrs);
  ob_status st = attrs.failed ? ob_fail(ctx, OB_ERR_NOMEM, "out of memory") : OB_OK;
  for (int i = 0; i < n && !st; i++) {
    memset(&out[i], 0, sizeof out[i]);
    st = fill_job(c, task, o, &cfgs[i], attrs.data, &ps[i].job);
  }
  ob_str_free(&attrs);
  for (int i = 0; i < n && !st; i++) {
    while ((st = send_job(c, &ps[i])) == OB_ERR_IO && fl_broken(&c->conn)) {
      ob_ctx_clear_error(ctx);
      if ((st = ensure_conn(c))) break;
    }
  }
  int left = n;
  double no_worker_since = -1, last_check = 0;
  while (!st && left > 0) {
    if ((st = ensure_conn(c))) break;
    redisReply *r = fl_cmd(&c->conn, "XREAD COUNT 64 BLOCK 250 STREAMS %s %s", c->reply, c->last);
    if (!r) {
      ob_ctx_clear_error(ctx);
      continue; /* reconnect at the top */
    }
    if (r->type == REDIS_REPLY_ERROR) {
      st = ob_fail(ctx, OB_ERR_IO, "the broker at %s: XREAD: %s", c->conn.shown, r->str);
      freeReplyObject(r);
      break;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
      const redisReply *s = r->element[0];
      const redisReply *es = s->elements == 2 ? s->element[1] : NULL;
      for (size_t k = 0; es && k < es->elements && !st; k++) {
        const redisReply *e = es->element[k];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 2) continue;
        snprintf(c->last, sizeof c->last, "%s", e->element[0]->str);
        const redisReply *rj = fl_field(e->element[1], "res"), *rs = fl_field(e->element[1], "sig");
        if (rj && rs && rj->len <= FL_MAX_RESULT_BYTES)
          st = take_result(c, task, ps, n, out, rj->str, rj->len, rs->str, rs->len, &left);
      }
    }
    freeReplyObject(r);
    if (st || left == 0) break;
    double now = ob_now_s();
    for (int i = 0; i < n && !st; i++)
      if (!ps[i].done && now - ps[i].news_at > resend_s(c)) st = look_after(c, task, ps, n, i, out, &left);
    if (st == OB_ERR_IO && fl_broken(&c->conn)) {
      ob_ctx_clear_error(ctx);
      st = OB_OK;
      continue;
    }
    if (!st && now - last_check > 1) {
      last_check = now;
      int alive = alive_workers(c, NULL, 0, NULL, 0);
      if (alive == 0) {
        if (no_worker_since < 0) no_worker_since = now;
        else if (now - no_worker_since > no_worker_s(c))
          st = ob_fail(ctx, OB_ERR_IO,
                       "no worker of device key '%s' has been alive at %s for %.0f s (%d of %d results in)",
                       c->dkey, c->conn.shown, no_worker_s(c), n - left, n);
      } else if (alive > 0) {
        no_worker_since = -1;
      }
    }
  }
  for (int i = 0; i < n; i++) fl_job_clear(&ps[i].job);
  free(ps);
  return st;
}

static ob_status fleet_check(void *self, ob_ctx *ctx, ob_task *task) {
  ob_fleet_client *c = self;
  c->ctx = c->conn.ctx = ctx;
  ob_status st = ensure_conn(c);
  if (st) return st;
  char targets[8192];
  double until = ob_now_s() + no_worker_s(c);
  int n;
  for (;;) {
    n = alive_workers(c, targets, sizeof targets, NULL, 0);
    if (n < 0) return OB_ERR_IO;
    if (n > 0 || ob_now_s() > until) break;
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
  }
  if (n == 0)
    return ob_fail(ctx, OB_ERR_NOT_FOUND, "no worker of device key '%s' is alive at %s (start one: opbench worker --broker URL --device-key %s)",
                   c->dkey, c->conn.shown, c->dkey);
  const char *want = ob_target_str(ob_task_target(task));
  char w[256];
  snprintf(w, sizeof w, "|%s|", want);
  size_t l = strlen(targets);
  snprintf(targets + l, sizeof targets - l, "|");
  if (!strstr(targets, w))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': no live worker of device key '%s' can run it (they run %s)",
                   want, c->dkey, targets[0] ? targets : "nothing");
  return OB_OK;
}

static ob_status fleet_host(void *self, ob_ctx *ctx, ob_task *task, ob_host *out, char *cc, size_t cc_cap,
                            char *ver, size_t ver_cap) {
  (void)task;
  ob_fleet_client *c = self;
  c->ctx = c->conn.ctx = ctx;
  memset(out, 0, sizeof *out);
  if (cc_cap) cc[0] = '\0';
  if (ver_cap) ver[0] = '\0';
  ob_status st = ensure_conn(c);
  if (st) return st;
  char id[64];
  int n = alive_workers(c, NULL, 0, id, sizeof id);
  if (n < 0) return OB_ERR_IO;
  if (n == 0) return ob_fail(ctx, OB_ERR_NOT_FOUND, "no worker of device key '%s' is alive", c->dkey);
  redisReply *r = fl_cmd(&c->conn, "HGETALL " FL_PREFIX "worker:%s", id);
  if (!r) return OB_ERR_IO;
  const redisReply *f;
#define S(name, dst) \
  if ((f = fl_field(r, name))) snprintf(dst, sizeof dst, "%s", f->str)
#define I(name, dst) \
  if ((f = fl_field(r, name))) dst = strtoll(f->str, NULL, 10)
  S("host", out->fingerprint);
  S("cpu", out->cpu_model);
  S("isa", out->isa);
  S("os", out->os);
  I("ncores", out->ncores);
  I("npus", out->npus);
  I("l1d", out->l1d_bytes);
  I("l2", out->l2_bytes);
  I("l3", out->l3_bytes);
  I("vector_bits", out->vector_bits);
#undef S
#undef I
  if ((f = fl_field(r, "cc")) && cc_cap) snprintf(cc, cc_cap, "%s", f->str);
  if ((f = fl_field(r, "cc_version")) && ver_cap) snprintf(ver, ver_cap, "%s", f->str);
  freeReplyObject(r);
  if (!out->fingerprint[0]) return ob_fail(ctx, OB_ERR_IO, "worker %s registered no host", id);
  return OB_OK;
}

static void fleet_resources(void *self, const ob_measure_opts *mo, char *buf, size_t cap) {
  ob_fleet_client *c = self;
  snprintf(buf, cap, "threads=%d;device=%s", mo->nthreads > 0 ? mo->nthreads : 1, c->dkey);
}

static const ob_measurer_i k_fleet = {
    .name = "fleet",
    .measure = fleet_measure,
    .check = fleet_check,
    .host = fleet_host,
    .resources = fleet_resources,
};

ob_status ob_fleet_client_new(ob_ctx *ctx, const ob_fleet_client_opts *o, ob_fleet_client **out) {
  *out = NULL;
  if (!o->key) return ob_fail(ctx, OB_ERR_INVALID_ARG, "the fleet needs its key (--fleet-key FILE)");
  if (!fl_key_ok(o->device_key))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "device key '%s': expected 1 to 64 of A-Z a-z 0-9 . _ -",
                   o->device_key ? o->device_key : "");
  ob_fleet_client *c = calloc(1, sizeof *c);
  if (!c) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  c->ctx = ctx;
  c->o = *o;
  c->key = *o->key;
  c->o.key = &c->key;
  c->conn.ctx = ctx;
  snprintf(c->dkey, sizeof c->dkey, "%s", o->device_key);
  c->o.device_key = c->dkey;
  c->o.broker = NULL;
  fl_random_hex(c->id, 8);
  snprintf(c->stream, sizeof c->stream, FL_PREFIX "jobs:%s", c->dkey);
  snprintf(c->reply, sizeof c->reply, FL_PREFIX "reply:%s", c->id);
  snprintf(c->last, sizeof c->last, "0-0");
  ob_status st = ob_fleet_parse_url(ctx, o->broker, &c->conn.addr);
  if (!st) st = fl_connect(&c->conn);
  if (!st) st = ob_measurer_new(ctx, &k_fleet, c, &c->measurer);
  if (st) {
    ob_fleet_client_free(c);
    return st;
  }
  *out = c;
  return OB_OK;
}

void ob_fleet_client_free(ob_fleet_client *c) {
  if (!c) return;
  if (!fl_broken(&c->conn)) {
    redisReply *r = fl_cmd(&c->conn, "DEL %s", c->reply);
    if (r) freeReplyObject(r);
  }
  fl_close(&c->conn);
  ob_measurer_free(c->measurer);
  memset(&c->key, 0, sizeof c->key);
  free(c);
}

ob_measurer *ob_fleet_client_measurer(ob_fleet_client *c) { return c->measurer; }

void ob_fleet_client_get_stats(const ob_fleet_client *c, ob_fleet_client_stats *out) { *out = c->stats; }
