/* fleet.c: `opbench worker`, `opbench fleet status|keygen`, and the fleet
 * measurer `tune` and `bench` use with --fleet (or --host/--port). */
#include "cli.h"

#include "opbench/fleet.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <string.h>
#include <time.h>

/* Set by SIGINT/SIGTERM: the worker stops after the job in hand. The one
 * piece of process state a signal handler may touch; it lives in the tool,
 * not in the library. */
static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static bool load_key(ob_ctx *ctx, const cli_args *a, ob_fleet_key *key) {
  char buf[1024];
  const char *path = ob_fleet_key_default_path(a->fleet_key, buf, sizeof buf);
  if (!path) {
    cli_error("no fleet key: give --fleet-key FILE (or $OPBENCH_FLEET_KEY); opbench fleet keygen --out FILE makes one");
    return false;
  }
  if (ob_fleet_key_load(ctx, path, key) != OB_OK) {
    cli_error("--fleet-key: %s", ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

ob_fleet_client *cli_fleet_client(ob_ctx *ctx, const cli_args *a) {
  ob_fleet_key key;
  if (!load_key(ctx, a, &key)) return NULL;
  ob_fleet_client_opts o = {.broker = a->fleet, .device_key = a->device_key, .key = &key};
  ob_fleet_client *c = NULL;
  if (ob_fleet_client_new(ctx, &o, &c) != OB_OK) {
    cli_error("--fleet: %s", ob_ctx_errmsg(ctx));
    c = NULL;
  }
  memset(&key, 0, sizeof key);
  return c;
}

int cli_cmd_worker(ob_ctx *ctx, const cli_args *a) {
  ob_fleet_key key;
  if (!load_key(ctx, a, &key)) return OB_CLI_EXIT_ERROR;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  ob_fleet_worker_opts o = {
      .broker = a->fleet,
      .device_key = a->device_key,
      .key = &key,
      .cores = a->ncores ? a->cores : NULL,
      .ncores = a->ncores,
      .nthreads = a->threads_set ? a->mo.nthreads : 0,
      .max_jobs = a->max_jobs,
      .claim_timeout_s = a->claim_timeout,
      .stop = &g_stop,
      .log = stderr,
  };
  ob_fleet_worker_stats s;
  ob_status st = ob_fleet_worker_run(ctx, &o, &s);
  memset(&key, 0, sizeof key);
  if (st) return cli_error("worker: %s", ob_ctx_errmsg(ctx));
  printf("worker %s: %lld jobs measured, %lld refused, %lld taken over from dead workers, %lld answered again\n",
         s.id, (long long)s.jobs, (long long)s.refused, (long long)s.reclaimed, (long long)s.resent);
  return 0;
}

int cli_cmd_fleet(ob_ctx *ctx, const cli_args *a) {
  if (!strcmp(a->action, "keygen")) {
    if (ob_fleet_key_generate(ctx, a->out) != OB_OK) return cli_error("--out: %s", ob_ctx_errmsg(ctx));
    printf("fleet key written to %s (mode 0600): copy it to every worker and client\n", a->out);
    return 0;
  }
  ob_fleet_status *s = NULL;
  if (ob_fleet_status_get(ctx, a->fleet, &s) != OB_OK) return cli_error("--broker: %s", ob_ctx_errmsg(ctx));
  double now = (double)time(NULL);
  if (a->json) {
    cJSON *root = cJSON_CreateObject();
    cJSON *keys = cJSON_AddArrayToObject(root, "keys");
    for (int i = 0; i < s->nkeys; i++) {
      const ob_fleet_key_info *k = &s->keys[i];
      cJSON *kj = cJSON_CreateObject();
      cJSON_AddItemToArray(keys, kj);
      cJSON_AddStringToObject(kj, "key", k->key);
      cJSON_AddNumberToObject(kj, "queued", (double)k->queued);
      cJSON_AddNumberToObject(kj, "pending", (double)k->pending);
      cJSON_AddNumberToObject(kj, "alive", k->nalive);
      cJSON *ws = cJSON_AddArrayToObject(kj, "workers");
      for (int j = 0; j < k->nworkers; j++) {
        const ob_fleet_worker_info *w = &k->workers[j];
        cJSON *wj = cJSON_CreateObject();
        cJSON_AddItemToArray(ws, wj);
        cJSON_AddStringToObject(wj, "id", w->id);
        cJSON_AddStringToObject(wj, "host", w->host);
        cJSON_AddStringToObject(wj, "cpu", w->cpu);
        cJSON_AddStringToObject(wj, "targets", w->targets);
        cJSON_AddStringToObject(wj, "cores", w->cores);
        cJSON_AddNumberToObject(wj, "threads", w->threads);
        cJSON_AddBoolToObject(wj, "alive", w->alive);
        cJSON_AddBoolToObject(wj, "busy", w->busy);
        cJSON_AddStringToObject(wj, "job", w->job);
        cJSON_AddNumberToObject(wj, "jobs_done", (double)w->jobs_done);
        cJSON_AddNumberToObject(wj, "refused", (double)w->refused);
        cJSON_AddNumberToObject(wj, "last_heartbeat", w->last_heartbeat);
        cJSON_AddNumberToObject(wj, "pid", (double)w->pid);
      }
    }
    cJSON_AddNumberToObject(root, "double_measured", (double)s->double_measured);
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
  } else {
    printf("%-20s %6s %7s %6s\n", "device key", "alive", "queued", "pending");
    for (int i = 0; i < s->nkeys; i++) {
      const ob_fleet_key_info *k = &s->keys[i];
      printf("%-20s %6d %7lld %6lld\n", k->key, k->nalive, (long long)k->queued, (long long)k->pending);
    }
    printf("\n%-20s %-36s %-16s %-6s %-5s %6s %7s %10s  %s\n", "device key", "worker", "host", "state", "cores",
           "jobs", "refused", "heartbeat", "job");
    for (int i = 0; i < s->nkeys; i++)
      for (int j = 0; j < s->keys[i].nworkers; j++) {
        const ob_fleet_worker_info *w = &s->keys[i].workers[j];
        char hb[32];
        if (w->last_heartbeat > 0) snprintf(hb, sizeof hb, "%.0f s ago", now > w->last_heartbeat ? now - w->last_heartbeat : 0.0);
        else snprintf(hb, sizeof hb, "never");
        printf("%-20s %-36s %-16s %-6s %-5s %6lld %7lld %10s  %s\n", s->keys[i].key, w->id, w->host,
               !w->alive ? "dead" : w->busy ? "busy" : "idle", w->cores, (long long)w->jobs_done,
               (long long)w->refused, hb, w->busy ? w->job : "");
      }
    if (s->double_measured > 0) printf("\njobs measured twice: %lld\n", (long long)s->double_measured);
  }
  ob_fleet_status_free(s);
  return 0;
}
