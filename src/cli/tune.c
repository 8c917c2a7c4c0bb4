/* tune.c: `opbench tune`: tunes one operator's config with a tuner through
 * ob_tune_task (which stores every trial in the database, resumes, overlaps
 * builds with measurement and confirms the best), then prints a summary.
 * The command owns its task, tuner, runner and database handle and frees
 * them on every path. */
#include "cli.h"

#include "opbench/db.h"
#include "opbench/fleet.h"
#include "opbench/predict.h"
#include "opbench/profile.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_config(cJSON *o, const char *name, const ob_config *c,
                       const ob_measure_result *r) {
  cJSON *j = cJSON_AddObjectToObject(o, name);
  cJSON_AddNumberToObject(j, "index", (double)c->index);
  char *s = ob_config_str(c);
  cJSON_AddStringToObject(j, "config", s ? s : "");
  free(s);
  cJSON_AddNumberToObject(j, "gflops", r->gflops);
  cJSON_AddNumberToObject(j, "median_ms", r->timing.median_s * 1e3);
  cJSON_AddNumberToObject(j, "cv", r->timing.cv);
  if (r->timing.repeat > 0) cli_timing_json(j, &r->timing); /* the protocol it was timed with */
}

/* ---- opbench tune ... --corun OP:SHAPE: collaboration tuning ------------------------------- */
static void print_cfg(const char *label, ob_task *task, const ob_config *c) {
  (void)task;
  char *j = NULL;
  if (ob_config_to_json(NULL, c, &j) == OB_OK && j) {
    printf("%-22s #%llu %s\n", label, (unsigned long long)c->index, j);
  } else {
    printf("%-22s #%llu\n", label, (unsigned long long)c->index);
  }
  free(j);
}

static int tune_collab(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  ob_target *target = NULL;
  ob_task *ta = NULL, *tb = NULL;
  ob_runner *runner = NULL;
  if (!cli_target(ctx, a, true, &target)) goto done;
  if (!(ta = cli_task(ctx, a, target))) goto done;
  ob_workload wb;
  if (ob_profile_parse_workload(ctx, a->corun_spec[0], &wb) != OB_OK ||
      ob_task_new(ctx, &wb, NULL, target, &tb) != OB_OK) {
    cli_error("--corun %s: %s", a->corun_spec[0], ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_host host;
  if (ob_host_detect(ctx, &host) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  /* A on the first T cores of --cores (default 0..T-1), B on the next T */
  int T = a->mo.nthreads > 0 ? a->mo.nthreads : 1, cores[2 * OB_CLI_MAX_CORES], nc = 2 * T;
  if (a->cores_text) {
    if (ob_parse_cores(ctx, a->cores_text, cores, 2 * OB_CLI_MAX_CORES, &nc) != OB_OK) {
      cli_error("--cores: %s", ob_ctx_errmsg(ctx));
      goto done;
    }
    if (!a->threads_set && nc >= 2) T = nc / 2; /* --cores alone: half each */
    if (nc != 2 * T) {
      cli_error("--cores %s: collaboration tuning needs %d cores (--threads %d for each operator, disjoint)",
                a->cores_text, 2 * T, T);
      goto done;
    }
  } else {
    if (2 * T > host.ncores) {
      cli_error("--threads %d: the two operators need %d disjoint cores; this host has %d", T, 2 * T, host.ncores);
      goto done;
    }
    for (int i = 0; i < 2 * T; i++) cores[i] = i;
  }
  if (ob_runner_new(ctx, &runner) != OB_OK) {
    cli_error("cannot start the runner: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_collab_opts o = {.tuner = a->tuner, .trials = a->trials, .batch = a->batch, .seed = a->mo.seed,
                      .log = a->json ? NULL : stdout};
  o.a = o.b = a->mo;
  o.a.nthreads = o.b.nthreads = T;
  o.a.cores = cores;
  o.b.cores = cores + T;
  char ka[256], kb[256];
  ob_workload_key(ob_task_workload(ta), ka, sizeof ka);
  ob_workload_key(ob_task_workload(tb), kb, sizeof kb);
  if (!a->json) {
    printf("A          %s on cores", ka);
    for (int i = 0; i < T; i++) printf("%s%d", i ? "," : " ", cores[i]);
    printf("\nB          %s on cores", kb);
    for (int i = 0; i < T; i++) printf("%s%d", i ? "," : " ", cores[T + i]);
    printf("\ntuner      %s, %d trials per operator each way (independent: alone; joint: every trial the pair "
           "together)\n", a->tuner ? a->tuner : "xgb", a->trials);
    fflush(stdout);
  }
  ob_collab_result r;
  if (ob_collab_tune(ctx, ta, tb, runner, target, &o, &r) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  double ratio = r.joint.makespan_s / r.indep.makespan_s;
  if (a->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "a", ka);
    cJSON_AddStringToObject(j, "b", kb);
    cJSON_AddNumberToObject(j, "trials", a->trials);
    cJSON_AddNumberToObject(j, "independent_a_config", (double)r.indep_a.index);
    cJSON_AddNumberToObject(j, "independent_b_config", (double)r.indep_b.index);
    cJSON_AddNumberToObject(j, "joint_a_config", (double)r.joint_a.index);
    cJSON_AddNumberToObject(j, "joint_b_config", (double)r.joint_b.index);
    cJSON_AddNumberToObject(j, "independent_makespan_s", r.indep.makespan_s);
    cJSON_AddNumberToObject(j, "joint_makespan_s", r.joint.makespan_s);
    cJSON_AddNumberToObject(j, "joint_over_independent", ratio);
    char *t = cJSON_PrintUnformatted(j);
    printf("%s\n", t ? t : "{}");
    free(t);
    cJSON_Delete(j);
  } else {
    print_cfg("independent A", ta, &r.indep_a);
    print_cfg("independent B", tb, &r.indep_b);
    print_cfg("joint A", ta, &r.joint_a);
    print_cfg("joint B", tb, &r.joint_b);
    printf("alone      independent bests: A %.4f ms, B %.4f ms\n", r.indep_alone_a_s * 1e3, r.indep_alone_b_s * 1e3);
    printf("together   independent: A %.4f ms, B %.4f ms, makespan %.4f ms (median of the finals)\n",
           r.indep.a_s * 1e3, r.indep.b_s * 1e3, r.indep.makespan_s * 1e3);
    printf("together   joint:       A %.4f ms, B %.4f ms, makespan %.4f ms\n", r.joint.a_s * 1e3, r.joint.b_s * 1e3,
           r.joint.makespan_s * 1e3);
    printf("makespan   joint / independent = %.3f (%d trials measured, %d failed, %.1f s; nothing stored in the db)\n",
           ratio, r.measured, r.failed, r.seconds);
  }
  rc = 0;
done:
  ob_runner_free(runner);
  ob_task_free(ta);
  ob_task_free(tb);
  ob_target_free(target);
  return rc;
}

int cli_cmd_tune(ob_ctx *ctx, const cli_args *a) {
  if (a->ncorun_spec) return tune_collab(ctx, a);
  int rc = OB_CLI_EXIT_ERROR;
  ob_target *target = NULL;
  ob_task *task = NULL;
  ob_tuner *tuner = NULL;
  ob_runner *runner = NULL;
  ob_measurer *measurer = NULL;
  ob_fleet_client *fleet = NULL;
  ob_db *db = NULL;
  cJSON *root = NULL;
  char *text = NULL, *best_str = NULL, *conf_str = NULL;
  ob_host host;

  /* through a fleet the workers build and run: they say what they can run */
  if (!cli_target(ctx, a, !a->fleet, &target)) goto done;
  if (!(task = cli_task(ctx, a, target))) goto done;
  const ob_workload *wl = ob_task_workload(task);
  /* An existing database is checked first (a corrupt one is reported as
   * such, not as a failed transfer of the xgb tuners); a new one is only
   * created once the tuner exists. */
  ob_status st = ob_db_open(ctx, a->db_path, OB_DB_NO_CREATE, &db);
  if (!st) st = ob_db_check(db);
  if (st && st != OB_ERR_NOT_FOUND) {
    cli_error("--db: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_tuner_opts to = {.seed = a->mo.seed, .db_path = db && !a->no_transfer ? a->db_path : NULL};
  if (ob_tuner_new(ctx, a->tuner, task, &to, &tuner) != OB_OK) {
    cli_error("--tuner: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  /* the broker before a new database: a fleet that cannot be reached
   * leaves no empty database behind */
  if (a->fleet && !(fleet = cli_fleet_client(ctx, a))) goto done;
  if (!db && ob_db_open(ctx, a->db_path, 0, &db) != OB_OK) {
    cli_error("--db: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (ob_host_detect(ctx, &host) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (!a->fleet && (ob_runner_new(ctx, &runner) != OB_OK || ob_measurer_local_new(ctx, runner, &measurer) != OB_OK)) {
    cli_error("cannot start the runner: %s", ob_ctx_errmsg(ctx));
    goto done;
  }

  ob_tune_opts o = ob_tune_opts_default();
  o.n_trial = a->trials;
  o.early_stopping = a->early_stopping;
  o.batch = a->batch;
  o.measure = a->mo;
  o.host = fleet ? NULL : &host; /* a fleet's records go under its workers' host */
  o.log_path = a->log_path;
  o.progress = a->json ? stderr : stdout;
  o.remeasure = a->remeasure;
  o.reconfirm = a->reconfirm;
  o.confirm_rounds = a->reconfirm ? 3 : 1;
  ob_tune_stats s;
  if (ob_tune_task(ctx, task, tuner, fleet ? ob_fleet_client_measurer(fleet) : measurer, db, &o, &s) != OB_OK) {
    if (s.trials && !a->json && isatty(fileno(stdout))) printf("\n"); /* end the redrawn line */
    fflush(stdout);
    cli_error("%s (%d trials stored before the failure are kept in %s)", ob_ctx_errmsg(ctx),
              s.measured, ob_db_path(db));
    goto done;
  }

  char key[256];
  ob_workload_key(wl, key, sizeof key);
  const char *why = s.early_stopped                          ? "early stopped"
                    : s.exhausted                            ? "space exhausted"
                    : s.resumed >= a->trials && !s.measured ? "the stored trials spend the budget"
                                                             : NULL;
  if (s.best_trial) best_str = ob_config_str(&s.best);
  if (s.confirmed) conf_str = ob_config_str(&s.confirmed_cfg);
  if (a->json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "workload", key);
    cJSON_AddStringToObject(root, "template", ob_task_template(task));
    cJSON_AddStringToObject(root, "target", ob_target_str(target));
    char note[512];
    if (cli_timing_note(target, note, sizeof note)) {
      cJSON_AddStringToObject(root, "timing_note", note);
      cJSON_AddBoolToObject(root, "cpu_timings", ob_target_get_facts(target)->gpu.cpu_device);
    }
    cJSON_AddStringToObject(root, "tuner", ob_tuner_name(tuner));
    cJSON_AddNumberToObject(root, "seed", (double)a->mo.seed);
    cJSON_AddNumberToObject(root, "trials", s.trials);
    cJSON_AddNumberToObject(root, "resumed", s.resumed);
    cJSON_AddNumberToObject(root, "measured", s.measured);
    cJSON_AddNumberToObject(root, "failed", s.failed);
    cJSON_AddBoolToObject(root, "early_stopped", s.early_stopped);
    cJSON_AddBoolToObject(root, "exhausted", s.exhausted);
    cJSON_AddNumberToObject(root, "best_trial", s.best_trial);
    if (s.best_trial) put_config(root, "best", &s.best, &s.best_result);
    if (s.confirmed) {
      put_config(root, "confirmed", &s.confirmed_cfg, &s.confirmed_result);
      cJSON_AddNumberToObject(root, "confirm_candidates", s.confirm_candidates);
      cJSON_AddBoolToObject(root, "default_confirmed", s.default_confirmed);
    }
    cJSON_AddNumberToObject(root, "seconds", s.seconds);
    cJSON_AddNumberToObject(root, "build_s", s.build_s);
    cJSON_AddNumberToObject(root, "run_s", s.run_s);
    cJSON_AddStringToObject(root, "db", ob_db_path(db));
    cJSON_AddNumberToObject(root, "transfer_records", ob_tuner_transfer_records(tuner));
    if (a->log_path) {
      cJSON_AddStringToObject(root, "log", a->log_path);
      cJSON_AddNumberToObject(root, "log_lines", (double)s.log_lines);
    }
    if (!(text = cJSON_Print(root))) {
      cli_error("out of memory printing JSON");
      goto done;
    }
    printf("%s\n", text);
  } else {
    printf("workload   %s\n", key);
    printf("template   %s\n", ob_task_template(task));
    printf("target     %s\n", ob_target_str(target));
    char note[512];
    if (cli_timing_note(target, note, sizeof note)) printf("device     %s\n", note);
    printf("tuner      %s, seed %llu\n", ob_tuner_name(tuner), (unsigned long long)a->mo.seed);
    printf("trials     %d of %d (resumed %d, measured %d, failed %d)%s%s\n", s.trials, a->trials,
           s.resumed, s.measured, s.failed, why ? ", " : "", why ? why : "");
    if (s.best_trial)
      printf("best       #%llu %s: %.2f GFLOPS, %.4g ms (trial %d)\n",
             (unsigned long long)s.best.index, best_str ? best_str : "", s.best_result.gflops,
             s.best_result.timing.median_s * 1e3, s.best_trial);
    if (s.confirmed)
      printf("confirmed  #%llu %s: %.2f GFLOPS, %.4g ms, CV %.2f %% (best of %d re-measured%s)\n",
             (unsigned long long)s.confirmed_cfg.index, conf_str ? conf_str : "",
             s.confirmed_result.gflops, s.confirmed_result.timing.median_s * 1e3,
             s.confirmed_result.timing.cv * 100, s.confirm_candidates,
             s.default_confirmed ? ", the template's default among them" : "");
    if (s.confirmed && s.confirmed_result.timing.repeat > 0) {
      ob_timing_opts asked = ob_timing_resolve(&a->mo.timing, target);
      cli_timing_text(&s.confirmed_result.timing, &asked, a->mo.nthreads);
    }
    if (s.measured)
      printf("time       %.2f s, %.3f s per measured trial (build %.2f s, measure %.2f s)\n",
             s.seconds, s.seconds / s.measured, s.build_s, s.run_s);
    printf("db         %s\n", ob_db_path(db));
    if (fleet) {
      ob_fleet_client_stats fs;
      ob_fleet_client_get_stats(fleet, &fs);
      printf("fleet      %s, device key %s: %lld jobs sent (%lld again), %lld results (%lld duplicates ignored)\n",
             a->fleet_url[0] ? "the broker of --host/--port" : "--fleet", a->device_key, (long long)fs.sent,
             (long long)fs.resent, (long long)fs.results, (long long)fs.duplicates);
    }
    int ntl = ob_tuner_transfer_records(tuner);
    if (ntl)
      printf("transfer   base model from %d records of %s/%s in the db\n", ntl, wl->op,
             ob_task_template(task));
    if (a->log_path) printf("log        %s (%lld lines appended)\n", a->log_path, (long long)s.log_lines);
  }
  fflush(stdout);
  if (!s.best_trial) {
    cli_error("no config of %s ran correctly in %d trials (see opbench db stats)", key, s.trials);
    goto done;
  }
  rc = 0;
done:
  cJSON_free(text);
  cJSON_Delete(root);
  free(best_str);
  free(conf_str);
  ob_measurer_free(measurer);
  ob_fleet_client_free(fleet);
  ob_runner_free(runner);
  ob_db_close(db);
  ob_tuner_free(tuner);
  ob_task_free(task);
  ob_target_free(target);
  return rc;
}
