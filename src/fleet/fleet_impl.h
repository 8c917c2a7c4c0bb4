/* fleet_impl.h: what the fleet's sources (and tests/test_fleet.c) share:
 * the broker connection, the key names, the signed envelope of jobs and
 * results and their JSON. Not part of the public API.
 *
 * Keys (prefix "opbench:fleet:"):
 *   keys                 set of device keys ever registered
 *   jobs:<key>           stream of jobs of a device key; group "workers".
 *                        Entry fields: job (JSON), sig (hex HMAC)
 *   workers:<key>        set of worker ids registered under the key
 *   worker:<id>          hash: key, host, cpu, facts (JSON), targets, threads,
 *                        cores, pid, started, last_heartbeat, busy, job,
 *                        jobs_done, refused
 *   alive:<id>           heartbeat: exists while the worker lives (PX ttl)
 *   claim:<jobid>        the worker measuring the job (PX claim timeout,
 *                        refreshed by its heartbeat)
 *   result:<jobid>       the signed result of a measured job (a day)
 *   nonce:<nonce>        the stream entry that carried it (twice the window)
 *   reply:<client>       a client's stream of results: res (JSON), sig
 *   double_measured      count of results stored twice (should stay 0) */
#ifndef OB_FLEET_IMPL_H
#define OB_FLEET_IMPL_H

#include <hiredis/hiredis.h>

#include "opbench/fleet.h"

#define FL_PREFIX "opbench:fleet:"
#define FL_GROUP "workers"
#define FL_RESULT_TTL_S 86400
#define FL_MAX_RESULT_BYTES (64 * 1024)

/* A connection to the broker, remade after it breaks. */
typedef struct fl_conn {
  ob_ctx *ctx;
  ob_fleet_addr addr;
  char shown[400];       /* the URL without its password, for messages */
  redisContext *c;
  double cmd_timeout_s;  /* a reply must come within this */
} fl_conn;

/* Connects, logs in and pings. OB_ERR_IO with a message naming the broker:
 * unreachable, login refused, a password required. */
ob_status fl_connect(fl_conn *fc);
void fl_close(fl_conn *fc);
/* Reconnects within `for_s` seconds (retries with back-off, logging). */
ob_status fl_reconnect(fl_conn *fc, double for_s);
/* Runs a command; NULL when the connection failed (the caller reconnects;
 * the ctx message says why). An error reply is returned as a reply. */
redisReply *fl_cmd(fl_conn *fc, const char *fmt, ...);
redisReply *fl_cmdv(fl_conn *fc, int argc, const char **argv, const size_t *len);
/* Whether the last fl_cmd failure was the connection's (not a reply). */
bool fl_broken(const fl_conn *fc);

/* Device keys: [A-Za-z0-9._-]{1,64}. */
bool fl_key_ok(const char *key);

/* HMAC-SHA256(key, domain || bytes) as 64 hex digits + NUL. */
void fl_sign(const ob_fleet_key *key, const char *domain, const char *bytes, size_t len,
             char out[65]);
/* Constant-time check of a hex signature. */
bool fl_verify(const ob_fleet_key *key, const char *domain, const char *bytes, size_t len,
               const char *sig, size_t sig_len);
#define FL_JOB_DOMAIN "opbench-fleet-job-v1\n"
#define FL_RESULT_DOMAIN "opbench-fleet-result-v1\n"

/* 2n random hex digits from the OS. */
void fl_random_hex(char *out, int n);
double fl_unix_now(void);

/* A job as the client sends it. */
typedef struct fl_job {
  char id[96];
  double ts;
  char nonce[40];
  char key[72];
  char reply[200];
  char op[32];
  char *attrs;        /* JSON object text (malloc'd by the parser) */
  char tmpl[64];
  char target[192];
  uint64_t space_len;
  uint64_t index;
  char *entity;       /* JSON (malloc'd by the parser) */
  ob_timing_opts timing;
  int nthreads;
  uint64_t seed;
  double build_timeout_s;
} fl_job;
void fl_job_clear(fl_job *j);
/* The job's JSON (malloc'd); NULL when out of memory. */
char *fl_job_json(const fl_job *j);
/* Parses a job; false with why[] on malformed JSON or fields. */
bool fl_job_parse(const char *json, size_t len, fl_job *out, char *why, size_t cap);

/* A result as the worker sends it. */
typedef struct fl_result {
  char id[96];
  char worker[64];
  char host[17];
  char cores[64];
  bool refused;       /* the worker cannot run the job (target, threads): not a trial */
  bool expired;       /* the job was older than the window: send it again */
  ob_measure_result res;
  double job_s;       /* the worker's wall time on the job */
} fl_result;
char *fl_result_json(const fl_result *r);
bool fl_result_parse(const char *json, size_t len, fl_result *out, char *why, size_t cap);

/* The field `name` of a stream entry's field list (an array of name, value
 * pairs); NULL when absent. */
const redisReply *fl_field(const redisReply *fields, const char *name);

#endif
