/* worker.c: `opbench worker`: serves the jobs of one device key. A worker
 * registers (its host's facts, the targets it can run, a heartbeat key
 * with a time-to-live that a thread of its own refreshes, with the claim
 * of the job in hand), then loops: first it takes over jobs a dead worker
 * left pending longer than the claim timeout (XAUTOCLAIM), else it reads
 * new ones through the consumer group (XREADGROUP). Each entry is checked
 * before anything is built: size, signature, JSON, device key, age, nonce
 * (a nonce seen in another entry is a replay). A job whose result is
 * stored already is answered from it (delivered twice, measured once); a
 * job another live worker claims is left to it. Otherwise the worker
 * builds the config with its own compiler for the job's target, measures
 * it with the normal runner on its own cores, stores the signed result
 * (SET NX: a second result is counted, never stored) and writes it to the
 * client's reply stream, then acknowledges and deletes the entry. */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fleet/fleet_impl.h"
#include "opbench/ops.h"

/* The targets a worker offers: the host's best ISA and the named ones this
 * machine can build and run (the canonical strings, '|'-separated). */
static const char *const k_candidates[] = {"llvm", "c -isa=avx512", "c -isa=avx2", "c -isa=scalar",
                                           "c -isa=neon -triple=aarch64-linux-gnu"};

static void runnable_targets(ob_ctx *ctx, char *buf, size_t cap) {
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof k_candidates / sizeof *k_candidates; i++) {
    ob_target *t = NULL;
    if (ob_target_parse(ctx, k_candidates[i], &t) == OB_OK && ob_target_check_runnable(ctx, t) == OB_OK &&
        ob_target_check_buildable(ctx, t) == OB_OK) {
      const char *s = ob_target_str(t);
      char padded[256];
      snprintf(padded, sizeof padded, "|%s|", s);
      char have[2048];
      snprintf(have, sizeof have, "|%s|", buf);
      if (!strstr(have, padded)) {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "%s%s", n ? "|" : "", s);
      }
    }
    ob_ctx_clear_error(ctx);
    ob_target_free(t);
  }
}

typedef struct worker {
  ob_ctx *ctx;
  const ob_fleet_worker_opts *o;
  ob_fleet_worker_stats *st;
  fl_conn conn;
  char key[72];
  char stream[160];
  char id[64];
  char wkey[160];  /* worker:<id> */
  char alive[160]; /* alive:<id> */
  char cores_text[64];
  int cores[256], ncores, nthreads;
  int64_t claim_ms, alive_ms;
  ob_host host;
  char cc[128], ccver[128];
  char targets[1024];
  ob_runner *runner;
  /* the heartbeat thread's */
  pthread_t hb;
  bool hb_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool hb_stop;
  char job[96];    /* the job in hand ("" none), under mu */
} worker;

static void wlog(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wlog(worker *w, const char *fmt, ...) {
  if (!w->o->log) return;
  char t[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
  va_list ap;
  va_start(ap, fmt);
  fprintf(w->o->log, "%s worker %s: ", t, w->id);
  vfprintf(w->o->log, fmt, ap);
  fputc('\n', w->o->log);
  fflush(w->o->log);
  va_end(ap);
}

/* Registers the worker and its consumer group (again after a broker that
 * restarted without its data). */
static ob_status do_register(worker *w) {
  redisReply *r = fl_cmd(&w->conn, "XGROUP CREATE %s " FL_GROUP " 0 MKSTREAM", w->stream);
  if (!r) return OB_ERR_IO;
  bool ok = r->type != REDIS_REPLY_ERROR || (r->str && !strncmp(r->str, "BUSYGROUP", 9));
  if (!ok) {
    ob_status st = ob_fail(w->ctx, OB_ERR_IO, "the broker at %s refused the job stream '%s': %s",
                           w->conn.shown, w->stream, r->str);
    freeReplyObject(r);
    return st;
  }
  freeReplyObject(r);
  char facts[2048];
  snprintf(facts, sizeof facts,
           "{\"cpu\":\"%s\",\"isa\":\"%s\",\"ncores\":%d,\"npus\":%d,\"l1d\":%lld,\"l2\":%lld,\"l3\":%lld,"
           "\"vector_bits\":%d,\"os\":\"%s\"}",
           w->host.cpu_model, w->host.isa, w->host.ncores, w->host.npus, (long long)w->host.l1d_bytes,
           (long long)w->host.l2_bytes, (long long)w->host.l3_bytes, w->host.vector_bits, w->host.os);
  char now[32], threads[16], pid[24], ncores[16], npus[16], l1[24], l2[24], l3[24], vb[16];
  snprintf(now, sizeof now, "%.3f", fl_unix_now());
  snprintf(threads, sizeof threads, "%d", w->nthreads);
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  snprintf(ncores, sizeof ncores, "%d", w->host.ncores);
  snprintf(npus, sizeof npus, "%d", w->host.npus);
  snprintf(l1, sizeof l1, "%lld", (long long)w->host.l1d_bytes);
  snprintf(l2, sizeof l2, "%lld", (long long)w->host.l2_bytes);
  snprintf(l3, sizeof l3, "%lld", (long long)w->host.l3_bytes);
  snprintf(vb, sizeof vb, "%d", w->host.vector_bits);
  const char *argv[] = {"HSET",     w->wkey,          "key",     w->key,         "host",
                        w->host.fingerprint, "cpu",   w->host.cpu_model, "isa",  w->host.isa,
                        "ncores",   ncores,           "npus",    npus,           "l1d",
                        l1,         "l2",             l2,        "l3",           l3,
                        "vector_bits", vb,            "os",      w->host.os,     "cc",
                        w->cc,      "cc_version",     w->ccver,  "facts",        facts,
                        "targets",  w->targets,       "threads", threads,        "cores",
                        w->cores_text, "pid",         pid,       "started",      now,
                        "last_heartbeat", now,        "busy",    "0",            "job",
                        ""};
  int argc = (int)(sizeof argv / sizeof *argv);
  r = fl_cmdv(&w->conn, argc, argv, NULL);
  if (!r) return OB_ERR_IO;
  freeReplyObject(r);
  r = fl_cmd(&w->conn, "SADD " FL_PREFIX "keys %s", w->key);
  if (r) freeReplyObject(r);
  r = fl_cmd(&w->conn, "SADD " FL_PREFIX "workers:%s %s", w->key, w->id);
  if (r) freeReplyObject(r);
  r = fl_cmd(&w->conn, "SET %s %s PX %lld", w->alive, now, (long long)w->alive_ms);
  if (!r) return OB_ERR_IO;
  freeReplyObject(r);
  return OB_OK;
}

/* The heartbeat: its own connection and ctx, refreshing the alive key and
 * the claim of the job in hand every quarter of their time-to-live. */
static void *heartbeat(void *arg) {
  worker *w = arg;
  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx) != OB_OK) return NULL;
  fl_conn c = {.ctx = ctx, .addr = w->conn.addr, .cmd_timeout_s = 5};
  pthread_mutex_lock(&w->mu);
  while (!w->hb_stop) {
    char job[96];
    snprintf(job, sizeof job, "%s", w->job);
    pthread_mutex_unlock(&w->mu);
    if (fl_broken(&c)) {
      fl_close(&c);
      if (fl_connect(&c) != OB_OK) ob_ctx_clear_error(ctx);
    }
    if (!fl_broken(&c)) {
      char now[32];
      snprintf(now, sizeof now, "%.3f", fl_unix_now());
      redisReply *r = fl_cmd(&c, "SET %s %s PX %lld", w->alive, now, (long long)w->alive_ms);
      if (r) freeReplyObject(r);
      r = fl_cmd(&c, "HSET %s last_heartbeat %s", w->wkey, now);
      if (r) freeReplyObject(r);
      if (job[0]) {
        r = fl_cmd(&c, "PEXPIRE " FL_PREFIX "claim:%s %lld", job, (long long)w->claim_ms);
        if (r) freeReplyObject(r);
      }
    }
    pthread_mutex_lock(&w->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = (int64_t)ts.tv_nsec + (w->alive_ms / 4) * 1000000;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    if (!w->hb_stop) pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  fl_close(&c);
  ob_ctx_free(ctx);
  return NULL;
}

static void set_job(worker *w, const char *job) {
  pthread_mutex_lock(&w->mu);
  snprintf(w->job, sizeof w->job, "%s", job ? job : "");
  pthread_mutex_unlock(&w->mu);
}

/* Signs and sends a result to the client's reply stream. */
static void send_result(worker *w, const char *reply, const char *json, const char *sig) {
  const char *argv[] = {"XADD", reply, "MAXLEN", "~", "100000", "*", "res", json, "sig", sig};
  redisReply *r = fl_cmdv(&w->conn, 10, argv, NULL);
  if (r) freeReplyObject(r);
  /* a client that went away leaves its stream: it expires */
  r = fl_cmd(&w->conn, "EXPIRE %s %d", reply, FL_RESULT_TTL_S);
  if (r) freeReplyObject(r);
}

static void done_entry(worker *w, const char *eid) {
  redisReply *r = fl_cmd(&w->conn, "XACK %s " FL_GROUP " %s", w->stream, eid);
  if (r) freeReplyObject(r);
  r = fl_cmd(&w->conn, "XDEL %s %s", w->stream, eid);
  if (r) freeReplyObject(r);
}

static void refuse(worker *w, const char *eid, const char *why) {
  wlog(w, "REFUSED entry %s: %s (not run)", eid, why);
  ob_log(w->ctx, OB_LOG_WARN, "fleet worker %s: refused entry %s: %s", w->id, eid, why);
  w->st->refused++;
  redisReply *r = fl_cmd(&w->conn, "HINCRBY %s refused 1", w->wkey);
  if (r) freeReplyObject(r);
  r = fl_cmd(&w->conn, "INCR " FL_PREFIX "refused");
  if (r) freeReplyObject(r);
  done_entry(w, eid);
}

/* Builds and measures the job; fills res (refused when this worker cannot
 * run it). */
static void measure_job(worker *w, const fl_job *j, fl_result *res) {
  ob_ctx *ctx = w->ctx;
  ob_workload wl;
  ob_target *t = NULL;
  ob_task *task = NULL;
  char *cj = NULL;
  cJSON *parsed = NULL;
  char *entity = NULL;
  ob_status st = ob_workload_from_attrs(ctx, j->op, j->attrs, &wl);
  if (!st) st = ob_target_parse(ctx, j->target, &t);
  if (!st && j->nthreads > w->nthreads)
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "the job asks for %d threads; worker %s serves at most %d",
                 j->nthreads, w->id, w->nthreads);
  if (!st) st = ob_target_check_runnable(ctx, t);
  if (!st) st = ob_task_new(ctx, &wl, j->tmpl, t, &task);
  ob_config cfg;
  if (!st && ob_space_len(ob_task_space(task)) != j->space_len)
    st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                 "the config space of %s/%s for '%s' has %llu configs here, %llu for the client", j->op,
                 j->tmpl, j->target, (unsigned long long)ob_space_len(ob_task_space(task)),
                 (unsigned long long)j->space_len);
  if (!st) st = ob_space_get(ctx, ob_task_space(task), j->index, &cfg);
  if (!st) st = ob_config_to_json(ctx, &cfg, &cj);
  if (!st) {
    parsed = cJSON_Parse(cj);
    entity = parsed ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(parsed, "entity")) : NULL;
    if (!entity || strcmp(entity, j->entity) != 0)
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "config #%llu is %s here, not the client's %s",
                   (unsigned long long)j->index, entity ? entity : "?", j->entity);
  }
  if (st) {
    res->refused = true;
    snprintf(res->res.message, sizeof res->res.message, "worker %s cannot run the job: %s", w->id,
             ob_ctx_errmsg(ctx));
    res->res.error_no = OB_MERR_INSTANTIATION;
    ob_ctx_clear_error(ctx);
  } else {
    ob_measure_opts mo = ob_measure_opts_default();
    mo.build.target = t;
    mo.build.timeout_s = j->build_timeout_s;
    mo.build.jobs = 1;
    mo.timing = j->timing;
    mo.nthreads = j->nthreads;
    mo.cores = w->cores;
    mo.seed = j->seed;
    st = ob_measure_configs(ctx, task, w->runner, &mo, &cfg, 1, &res->res);
    if (st) { /* nothing could be measured here (no compiler): the job is refused */
      res->refused = true;
      snprintf(res->res.message, sizeof res->res.message, "worker %s cannot measure: %s", w->id,
               ob_ctx_errmsg(ctx));
      ob_ctx_clear_error(ctx);
    }
  }
  cJSON_free(entity);
  cJSON_Delete(parsed);
  free(cj);
  ob_task_free(task);
  ob_target_free(t);
}

/* Handles one stream entry (fields: job, sig). */
static void handle(worker *w, const char *eid, const redisReply *fields, bool reclaimed) {
  const redisReply *jf = fl_field(fields, "job"), *sf = fl_field(fields, "sig");
  char why[512];
  if (!jf) { refuse(w, eid, "no job field"); return; }
  if (jf->len > OB_FLEET_MAX_JOB_BYTES) {
    snprintf(why, sizeof why, "oversized job (%zu bytes; at most %d)", jf->len, OB_FLEET_MAX_JOB_BYTES);
    { refuse(w, eid, why); return; }
  }
  if (!sf) { refuse(w, eid, "unsigned job"); return; }
  const ob_fleet_key *k = w->o->key;
  if (!fl_verify(k, FL_JOB_DOMAIN, jf->str, jf->len, sf->str, sf->len))
    { refuse(w, eid, "forged or altered job: the signature does not match"); return; }
  fl_job j;
  if (!fl_job_parse(jf->str, jf->len, &j, why, sizeof why)) {
    char m[600];
    snprintf(m, sizeof m, "malformed job: %s", why);
    { refuse(w, eid, m); return; }
  }
  double age = fl_unix_now() - j.ts, window = w->o->window_s > 0 ? w->o->window_s : OB_FLEET_DEFAULT_WINDOW_S;
  if (strcmp(j.key, w->key) != 0) {
    snprintf(why, sizeof why, "job %s is for device key '%s', not '%s'", j.id, j.key, w->key);
    fl_job_clear(&j);
    { refuse(w, eid, why); return; }
  }
  if (age < -window) {
    snprintf(why, sizeof why, "job %s is dated %.0f s in the future", j.id, -age);
    fl_job_clear(&j);
    { refuse(w, eid, why); return; }
  }
  /* the nonce belongs to the first entry that carried it */
  redisReply *r = fl_cmd(&w->conn, "SET " FL_PREFIX "nonce:%s %s NX EX %d GET", j.nonce, eid,
                         (int)(2 * window) + 1);
  if (!r) {
    fl_job_clear(&j);
    return;
  }
  bool replay = r->type == REDIS_REPLY_STRING && strcmp(r->str, eid) != 0;
  freeReplyObject(r);
  if (replay) {
    snprintf(why, sizeof why, "replayed job %s (its nonce came in another entry)", j.id);
    fl_job_clear(&j);
    { refuse(w, eid, why); return; }
  }
  fl_result res;
  memset(&res, 0, sizeof res);
  snprintf(res.id, sizeof res.id, "%s", j.id);
  snprintf(res.worker, sizeof res.worker, "%s", w->id);
  snprintf(res.host, sizeof res.host, "%s", w->host.fingerprint);
  snprintf(res.cores, sizeof res.cores, "%s", w->cores_text);
  if (age > window) { /* too old to trust: the client sends it again, fresh */
    wlog(w, "job %s expired (%.0f s old; the window is %.0f s): sent back", j.id, age, window);
    res.expired = true;
    snprintf(res.res.message, sizeof res.res.message, "expired");
    char *json = fl_result_json(&res);
    char sig[65];
    if (json) {
      fl_sign(k, FL_RESULT_DOMAIN, json, strlen(json), sig);
      send_result(w, j.reply, json, sig);
    }
    cJSON_free(json);
    done_entry(w, eid);
    fl_job_clear(&j);
    return;
  }
  /* measured already (delivered again): answer from the stored result */
  r = fl_cmd(&w->conn, "HGETALL " FL_PREFIX "result:%s", j.id);
  if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 4) {
    const redisReply *rj = fl_field(r, "res"), *rs = fl_field(r, "sig");
    if (rj && rs) {
      send_result(w, j.reply, rj->str, rs->str);
      w->st->resent++;
      wlog(w, "job %s was measured already: its stored result sent again", j.id);
    }
    freeReplyObject(r);
    done_entry(w, eid);
    fl_job_clear(&j);
    return;
  }
  if (r) freeReplyObject(r);
  /* a live worker measuring it keeps it */
  r = fl_cmd(&w->conn, "GET " FL_PREFIX "claim:%s", j.id);
  if (r && r->type == REDIS_REPLY_STRING && strcmp(r->str, w->id) != 0) {
    redisReply *a = fl_cmd(&w->conn, "EXISTS " FL_PREFIX "alive:%s", r->str);
    bool alive = a && a->type == REDIS_REPLY_INTEGER && a->integer == 1;
    if (a) freeReplyObject(a);
    if (alive) {
      wlog(w, "job %s is being measured by live worker %s: left to it", j.id, r->str);
      w->st->skipped++;
      freeReplyObject(r);
      fl_job_clear(&j);
      return;
    }
  }
  if (r) freeReplyObject(r);
  r = fl_cmd(&w->conn, "SET " FL_PREFIX "claim:%s %s PX %lld", j.id, w->id, (long long)w->claim_ms);
  if (r) freeReplyObject(r);
  if (reclaimed) {
    w->st->reclaimed++;
    wlog(w, "job %s (entry %s) taken over from a dead worker", j.id, eid);
  }
  set_job(w, j.id);
  r = fl_cmd(&w->conn, "HSET %s busy 1 job %s", w->wkey, j.id);
  if (r) freeReplyObject(r);
  wlog(w, "job %s %s/%s #%llu: measuring", j.id, j.op, j.tmpl, (unsigned long long)j.index);
  double t0 = ob_now_s();
  measure_job(w, &j, &res);
  res.job_s = ob_now_s() - t0;
  set_job(w, NULL);
  char *json = fl_result_json(&res);
  if (!json) { /* out of memory: leave the entry pending; another worker or we retry */
    fl_job_clear(&j);
    return;
  }
  char sig[65];
  fl_sign(k, FL_RESULT_DOMAIN, json, strlen(json), sig);
  /* stored once: a second result of the same job is counted, never kept */
  r = fl_cmd(&w->conn, "HSETNX " FL_PREFIX "result:%s res %s", j.id, json);
  bool first = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  if (r) freeReplyObject(r);
  if (first) {
    r = fl_cmd(&w->conn, "HSET " FL_PREFIX "result:%s sig %s", j.id, sig);
    if (r) freeReplyObject(r);
    r = fl_cmd(&w->conn, "EXPIRE " FL_PREFIX "result:%s %d", j.id, FL_RESULT_TTL_S);
    if (r) freeReplyObject(r);
    send_result(w, j.reply, json, sig);
  } else if (r || !fl_broken(&w->conn)) {
    r = fl_cmd(&w->conn, "INCR " FL_PREFIX "double_measured");
    if (r) freeReplyObject(r);
  }
  if (!fl_broken(&w->conn)) {
    w->st->jobs++;
    r = fl_cmd(&w->conn, "HINCRBY %s jobs_done 1", w->wkey);
    if (r) freeReplyObject(r);
    r = fl_cmd(&w->conn, "HSET %s busy 0 job %s", w->wkey, "");
    if (r) freeReplyObject(r);
    r = fl_cmd(&w->conn, "DEL " FL_PREFIX "claim:%s", j.id);
    if (r) freeReplyObject(r);
    done_entry(w, eid);
  }
  wlog(w, "job %s %s/%s #%llu: %s (%.3f s)", j.id, j.op, j.tmpl, (unsigned long long)j.index,
       res.refused ? res.res.message : res.res.error_no ? ob_merr_str(res.res.error_no) : "ok",
       res.job_s);
  cJSON_free(json);
  fl_job_clear(&j);
}

/* The entries of an XREADGROUP / XAUTOCLAIM reply: handles each. */
static void handle_entries(worker *w, const redisReply *entries, bool reclaimed, int *n) {
  if (!entries || entries->type != REDIS_REPLY_ARRAY) return;
  for (size_t i = 0; i < entries->elements; i++) {
    const redisReply *e = entries->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[0]->type != REDIS_REPLY_STRING) continue;
    if (e->element[1]->type != REDIS_REPLY_ARRAY) { /* deleted while pending */
      done_entry(w, e->element[0]->str);
      continue;
    }
    handle(w, e->element[0]->str, e->element[1], reclaimed);
    (*n)++;
  }
}

static bool stop_now(const worker *w, int handled) {
  if (w->o->stop && *w->o->stop) return true;
  return w->o->max_jobs > 0 && handled >= w->o->max_jobs;
}

ob_status ob_fleet_worker_run(ob_ctx *ctx, const ob_fleet_worker_opts *o, ob_fleet_worker_stats *stats) {
  ob_fleet_worker_stats dummy;
  if (!stats) stats = &dummy;
  memset(stats, 0, sizeof *stats);
  if (!o->key) return ob_fail(ctx, OB_ERR_INVALID_ARG, "a worker needs the fleet key (--fleet-key FILE)");
  if (!fl_key_ok(o->device_key))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "device key '%s': expected 1 to 64 of A-Z a-z 0-9 . _ -",
                   o->device_key ? o->device_key : "");
  worker *w = calloc(1, sizeof *w);
  if (!w) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  w->ctx = ctx;
  w->o = o;
  w->st = stats;
  w->conn.ctx = ctx;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  ob_status st = ob_fleet_parse_url(ctx, o->broker, &w->conn.addr);
  if (st) goto out;
  snprintf(w->key, sizeof w->key, "%s", o->device_key);
  snprintf(w->stream, sizeof w->stream, FL_PREFIX "jobs:%s", w->key);
  double claim_s = o->claim_timeout_s > 0 ? o->claim_timeout_s : OB_FLEET_DEFAULT_CLAIM_S;
  w->claim_ms = (int64_t)(claim_s * 1000);
  w->alive_ms = w->claim_ms < 2000 ? 2000 : w->claim_ms;
  /* cores: the given set, else the process's allowed cores; the worker
   * pins itself (and so its compilers) there */
  cpu_set_t set;
  CPU_ZERO(&set);
  if (o->cores && o->ncores > 0) {
    for (int i = 0; i < o->ncores && i < 256; i++) {
      if (o->cores[i] < 0 || o->cores[i] >= CPU_SETSIZE) {
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--cores: core %d does not exist", o->cores[i]);
        goto out;
      }
      w->cores[w->ncores++] = o->cores[i];
      CPU_SET(o->cores[i], &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--cores: cannot run on those cores: %s", strerror(errno));
      goto out;
    }
  } else if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE && w->ncores < 256; c++)
      if (CPU_ISSET(c, &set)) w->cores[w->ncores++] = c;
  }
  if (w->ncores == 0) w->cores[w->ncores++] = 0;
  w->nthreads = o->nthreads > 0 ? o->nthreads : w->ncores;
  if (w->nthreads > w->ncores) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--threads %d: the worker has %d cores", w->nthreads, w->ncores);
    goto out;
  }
  {
    size_t n = 0;
    for (int i = 0; i < w->ncores && n + 8 < sizeof w->cores_text; i++)
      n += (size_t)snprintf(w->cores_text + n, sizeof w->cores_text - n, "%s%d", i ? "," : "", w->cores[i]);
  }
  if ((st = ob_host_detect(ctx, &w->host))) goto out;
  {
    ob_build_opts bo = {0};
    if (ob_build_compiler(ctx, &bo, w->cc, sizeof w->cc, w->ccver, sizeof w->ccver) != OB_OK)
      ob_ctx_clear_error(ctx);
  }
  runnable_targets(ctx, w->targets, sizeof w->targets);
  {
    char hn[64] = "";
    gethostname(hn, sizeof hn - 1);
    for (char *p = hn; *p; p++)
      if (!fl_key_ok((char[]){*p, 0})) *p = '_';
    char rnd[9];
    fl_random_hex(rnd, 4);
    snprintf(w->id, sizeof w->id, "%.32s-%ld-%s", hn[0] ? hn : "host", (long)getpid(), rnd);
  }
  snprintf(stats->id, sizeof stats->id, "%s", w->id);
  snprintf(w->wkey, sizeof w->wkey, FL_PREFIX "worker:%s", w->id);
  snprintf(w->alive, sizeof w->alive, FL_PREFIX "alive:%s", w->id);
  if ((st = fl_connect(&w->conn))) goto out;
  if ((st = do_register(w))) goto out;
  if ((st = ob_runner_new(ctx, &w->runner))) goto out;
  if (pthread_create(&w->hb, NULL, heartbeat, w) != 0) {
    st = ob_fail(ctx, OB_ERR_IO, "cannot start the heartbeat thread");
    goto out;
  }
  w->hb_started = true;
  wlog(w, "serving device key '%s' at %s (host %s, cores %s, targets %s)", w->key, w->conn.shown,
       w->host.fingerprint, w->cores_text, w->targets);
  double reconnect_s = o->reconnect_s > 0 ? o->reconnect_s : 300;
  int handled = 0;
  while (!stop_now(w, handled)) {
    if (fl_broken(&w->conn)) {
      if ((st = fl_reconnect(&w->conn, reconnect_s))) break;
      if ((st = do_register(w))) break;
      wlog(w, "reconnected to the broker");
    }
    char ms[24];
    snprintf(ms, sizeof ms, "%lld", (long long)w->claim_ms);
    /* jobs of dead workers first */
    redisReply *r = fl_cmd(&w->conn, "XAUTOCLAIM %s " FL_GROUP " %s %s 0-0 COUNT 1", w->stream, w->id, ms);
    if (!r) continue;
    if (r->type == REDIS_REPLY_ERROR) {
      if (r->str && !strncmp(r->str, "NOGROUP", 7)) { /* a broker that lost its data */
        freeReplyObject(r);
        if ((st = do_register(w))) break;
        continue;
      }
      st = ob_fail(ctx, OB_ERR_IO, "the broker at %s: XAUTOCLAIM: %s", w->conn.shown, r->str);
      freeReplyObject(r);
      break;
    }
    int before = handled;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) handle_entries(w, r->element[1], true, &handled);
    freeReplyObject(r);
    if (handled > before || stop_now(w, handled)) continue;
    r = fl_cmd(&w->conn, "XREADGROUP GROUP " FL_GROUP " %s COUNT 1 BLOCK 500 STREAMS %s >", w->id, w->stream);
    if (!r) continue;
    if (r->type == REDIS_REPLY_ERROR) {
      bool nogroup = r->str && !strncmp(r->str, "NOGROUP", 7);
      if (!nogroup) st = ob_fail(ctx, OB_ERR_IO, "the broker at %s: XREADGROUP: %s", w->conn.shown, r->str);
      freeReplyObject(r);
      if (!nogroup) break;
      if ((st = do_register(w))) break;
      continue;
    }
    if (r->type == REDIS_REPLY_ARRAY)
      for (size_t i = 0; i < r->elements; i++) {
        const redisReply *s = r->element[i];
        if (s->type == REDIS_REPLY_ARRAY && s->elements == 2) handle_entries(w, s->element[1], false, &handled);
      }
    freeReplyObject(r);
  }
  if (!fl_broken(&w->conn)) { /* leave the registry tidy: gone, not dead */
    redisReply *r = fl_cmd(&w->conn, "DEL %s", w->alive);
    if (r) freeReplyObject(r);
    r = fl_cmd(&w->conn, "HSET %s busy 0 job %s", w->wkey, "");
    if (r) freeReplyObject(r);
  }
  wlog(w, "stopping: %lld jobs measured, %lld refused, %lld taken over, %lld answered again",
       (long long)stats->jobs, (long long)stats->refused, (long long)stats->reclaimed, (long long)stats->resent);
out:
  if (w->hb_started) {
    pthread_mutex_lock(&w->mu);
    w->hb_stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->hb, NULL);
  }
  ob_runner_free(w->runner);
  fl_close(&w->conn);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
  return st;
}
