/* fleet: measuring on remote devices through a Redis broker (AutoTVM's RPC
 * tracker and device keys, on engines that keep jobs when devices die).
 *
 *  - Workers (ob_fleet_worker_run, `opbench worker`) register under a
 *    device key (host fingerprint and facts, the targets they can run, a
 *    heartbeat key with a time-to-live), read jobs from the key's stream
 *    through a consumer group, build each config with their own compiler
 *    for their own target, measure it with the normal runner (isolation,
 *    timeouts, error classes, the reference check) and write the result to
 *    the job's reply stream. A job a dead worker left pending is claimed by
 *    another after the claim timeout (XAUTOCLAIM); a job delivered twice is
 *    measured once (results are kept by job id, a claim with a time-to-live
 *    keeps a second worker off a job being measured).
 *  - Clients (ob_fleet_client: an ob_measurer for the tuning loop and the
 *    search, `opbench tune|bench --fleet`) send each batch as jobs and wait
 *    for the results; a job lost with a broker that restarted is sent again
 *    (its id unchanged), a broker that went away is reconnected to.
 *  - Jobs carry what a worker needs to build its own kernel (operator and
 *    attributes, template, target, config index and entity, timing options,
 *    threads, seed), never a binary, and are signed: HMAC-SHA256 over the
 *    job's bytes with the fleet key (a file only its owner may read), with
 *    a timestamp and a nonce. A worker refuses (and logs, and goes on
 *    serving) a job without a signature, with a wrong one, one older or
 *    newer than the replay window, one whose nonce it saw in another entry,
 *    one for another device key or larger than OB_FLEET_MAX_JOB_BYTES;
 *    results are signed too.
 *  - The broker is a Redis server that requires a password (an ACL user:
 *    redis://USER:PASSWORD@HOST:PORT); README shows TLS through stunnel.
 * Everything here is above tune in the layer order: the tuning loop never
 * sees the fleet, only the measurer it is handed. */
#ifndef OPBENCH_FLEET_H
#define OPBENCH_FLEET_H

#include <signal.h>
#include <stdio.h>

#include "opbench/core.h"
#include "opbench/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OB_FLEET_DEFAULT_PORT 6379
#define OB_FLEET_MAX_JOB_BYTES (64 * 1024) /* a signed job's JSON */
#define OB_FLEET_KEY_MIN_BYTES 16
#define OB_FLEET_KEY_MAX_BYTES 1024
#define OB_FLEET_DEFAULT_WINDOW_S 600.0   /* replay window: a job's age limit */
#define OB_FLEET_DEFAULT_CLAIM_S 10.0     /* a dead worker's job is claimed after this */

/* ---- broker address -------------------------------------------------------- */
typedef struct ob_fleet_addr {
  char host[256];
  int port;            /* OB_FLEET_DEFAULT_PORT when the URL has none */
  char user[128];      /* "" : Redis's default user */
  char password[256];  /* "" : none given */
} ob_fleet_addr;

/* redis://[USER[:PASSWORD]@]HOST[:PORT][/] (or HOST[:PORT]); OB_ERR_INVALID_ARG
 * naming the URL (never its password) when malformed. */
OB_API ob_status ob_fleet_parse_url(ob_ctx *ctx, const char *url, ob_fleet_addr *out);
/* "redis://USER:***@HOST:PORT" (the password hidden). */
OB_API void ob_fleet_addr_str(const ob_fleet_addr *a, char *buf, size_t cap);
/* The broker URL from the original collector's spelling: --host/--port,
 * their defaults $TVM_TRACKER_HOST / $TVM_TRACKER_PORT; user and password
 * from $OPBENCH_FLEET_USER / $OPBENCH_FLEET_PASSWORD. host NULL and no
 * $TVM_TRACKER_HOST: OB_ERR_NOT_FOUND. */
OB_API ob_status ob_fleet_url_from_host(ob_ctx *ctx, const char *host, const char *port, char *buf,
                                        size_t cap);

/* ---- the fleet key ----------------------------------------------------------- */
typedef struct ob_fleet_key {
  unsigned char bytes[OB_FLEET_KEY_MAX_BYTES];
  int len;
} ob_fleet_key;

/* Reads the key: the file's bytes, trailing whitespace stripped, at least
 * OB_FLEET_KEY_MIN_BYTES. Refused (OB_ERR_INVALID_ARG naming the file and
 * its mode) when it is not a regular file owned by this user or when its
 * group or others may read or write it; OB_ERR_IO when unreadable. */
OB_API ob_status ob_fleet_key_load(ob_ctx *ctx, const char *path, ob_fleet_key *out);
/* Writes a new random key (64 hex digits) to path with mode 0600; refuses
 * to overwrite a file. */
OB_API ob_status ob_fleet_key_generate(ob_ctx *ctx, const char *path);
/* The key file of --fleet-key FILE, else $OPBENCH_FLEET_KEY, else
 * ~/.config/opbench/fleet.key when it exists; NULL when there is none. */
OB_API const char *ob_fleet_key_default_path(const char *flag, char *buf, size_t cap);

/* ---- workers ------------------------------------------------------------------- */
typedef struct ob_fleet_worker_opts {
  const char *broker;       /* redis://USER:PASSWORD@HOST:PORT */
  const char *device_key;   /* [A-Za-z0-9._-]{1,64} */
  const ob_fleet_key *key;  /* required */
  const int *cores;         /* the cores it builds and measures on (it pins itself
                               there); NULL: the process's allowed cores */
  int ncores;
  int nthreads;             /* most threads a job may ask for; <= 0: ncores */
  int max_jobs;             /* return after this many jobs handled; <= 0: never */
  double claim_timeout_s;   /* <= 0: OB_FLEET_DEFAULT_CLAIM_S */
  double window_s;          /* replay window; <= 0: OB_FLEET_DEFAULT_WINDOW_S */
  double reconnect_s;       /* how long to wait for a broker that went away; <= 0: 300 */
  const volatile sig_atomic_t *stop; /* set (by a signal handler) to stop after the job in hand */
  FILE *log;                /* one line per job and refusal; NULL: none */
} ob_fleet_worker_opts;

typedef struct ob_fleet_worker_stats {
  int64_t jobs;      /* measured (results written) */
  int64_t resent;    /* delivered again after their result was stored: answered from it */
  int64_t refused;   /* unsigned, forged, replayed, expired, oversized, malformed, other key */
  int64_t skipped;   /* claimed by a live worker: left to it */
  int64_t reclaimed; /* taken over from a dead worker (XAUTOCLAIM) */
  char id[64];       /* this worker's id */
} ob_fleet_worker_stats;

/* Serves jobs until *stop, max_jobs or a broker that stays away longer than
 * reconnect_s. Fails at once (OB_ERR_IO naming the broker, never the
 * password) when the broker cannot be reached, refuses the login or wants a
 * password; OB_ERR_INVALID_ARG for a bad device key or option. */
OB_API ob_status ob_fleet_worker_run(ob_ctx *ctx, const ob_fleet_worker_opts *o,
                                     ob_fleet_worker_stats *stats);

/* ---- clients ------------------------------------------------------------------- */
typedef struct ob_fleet_client_opts {
  const char *broker;
  const char *device_key;
  const ob_fleet_key *key;
  double no_worker_s;  /* fail when no worker is alive this long; <= 0: 60 */
  double reconnect_s;  /* how long to wait for a broker that went away; <= 0: 120 */
  double resend_s;     /* a job without news this long is looked for; <= 0: 5 */
} ob_fleet_client_opts;

typedef struct ob_fleet_client ob_fleet_client;

/* Connects and checks the broker (OB_ERR_IO as for workers). */
OB_API ob_status ob_fleet_client_new(ob_ctx *ctx, const ob_fleet_client_opts *o,
                                     ob_fleet_client **out);
OB_API void ob_fleet_client_free(ob_fleet_client *c); /* accepts NULL */
/* The measurer that sends batches to the fleet (owned by the client, valid
 * while it lives). Its check fails, naming the device key, when no worker
 * is alive there or none can run the task's target; records go under the
 * host of the workers that measured them, resources "threads=N;device=KEY". */
OB_API ob_measurer *ob_fleet_client_measurer(ob_fleet_client *c);

typedef struct ob_fleet_client_stats {
  int64_t sent;        /* jobs sent (resends included) */
  int64_t resent;      /* sent again: lost with the broker, or expired */
  int64_t results;     /* results taken */
  int64_t duplicates;  /* results that came twice (ignored) */
  int64_t reconnects;  /* broker connections made again */
  int nrtt;            /* per-job figures of the last OB_FLEET_RTT_KEEP results: */
  double rtt_s[1024];  /* sent -> result received */
  double work_s[1024]; /* the worker's time on the job (task, build, run, check) */
  double build_s[1024], run_s[1024];
} ob_fleet_client_stats;
#define OB_FLEET_RTT_KEEP 1024
OB_API void ob_fleet_client_get_stats(const ob_fleet_client *c, ob_fleet_client_stats *out);

/* ---- status (opbench fleet status) ---------------------------------------------- */
typedef struct ob_fleet_worker_info {
  char id[64], host[17], cpu[128], targets[512], cores[64];
  int threads;
  bool alive;               /* its heartbeat key exists */
  bool busy;                /* measuring a job now */
  char job[96];             /* the job in hand */
  int64_t jobs_done, refused;
  double last_heartbeat;    /* unix seconds; 0: never */
  long pid;
} ob_fleet_worker_info;

typedef struct ob_fleet_key_info {
  char key[72];
  int64_t queued;           /* jobs in the stream not yet delivered */
  int64_t pending;          /* delivered, not yet acknowledged */
  int nworkers, nalive;
  ob_fleet_worker_info *workers;
} ob_fleet_key_info;

typedef struct ob_fleet_status {
  int nkeys;
  ob_fleet_key_info *keys;
  int64_t double_measured;  /* jobs whose result was stored twice (should stay 0) */
} ob_fleet_status;

OB_API ob_status ob_fleet_status_get(ob_ctx *ctx, const char *broker, ob_fleet_status **out);
OB_API void ob_fleet_status_free(ob_fleet_status *s); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif
