/* db.c: `opbench db best|top|stats|export|import|push|pull`, the record database from
 * the command line. Selection flags become an ob_db_key / ob_db_filter; best
 * and top default to this host, to the default target and to the resource
 * setting `opbench tune` files its trials under for the same
 * --threads/--cores, so a record tuned on another CPU, for another target or
 * with other threads is never offered as this setting's best unless asked
 * (--host any, --target any, --resources any). */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opbench/db.h"

typedef struct sel {
  ob_db_filter f;
  ob_workload wl;
  bool have_wl;
  char host[64], wl_key[512], resources[256], target[192];
  /* the task config_text rendered the last record with, reused while the
   * records share workload, template and target (top lists usually do);
   * it borrows task_target, the parse of the record's target (NULL when
   * that string does not parse: the task then has the default target) */
  ob_task *task;
  ob_target *task_target;
  char task_wl[512], task_tmpl[64], task_tstr[192];
} sel;

static void sel_free(sel *s) {
  ob_task_free(s->task);
  ob_target_free(s->task_target);
  s->task = NULL;
  s->task_target = NULL;
}

static bool is_action(const cli_args *a, const char *name) { return !strcmp(a->action, name); }

/* Fills s from the flags; false after printing the error. */
static bool make_selection(ob_ctx *ctx, const cli_args *a, sel *s) {
  memset(s, 0, sizeof *s);
  bool narrow = is_action(a, "best") || is_action(a, "top"); /* one task's records */
  const char *host = a->host ? a->host : narrow ? "this" : "any";
  if (!strcmp(host, "this")) {
    ob_host h;
    if (ob_host_detect(ctx, &h) != OB_OK) {
      cli_error("--host this: %s", ob_ctx_errmsg(ctx));
      return false;
    }
    snprintf(s->host, sizeof s->host, "%s", h.fingerprint);
    s->f.key.host = s->host;
  } else if (strcmp(host, "any") != 0) {
    snprintf(s->host, sizeof s->host, "%s", host);
    s->f.key.host = s->host;
  }
  if (a->op && a->shape) {
    if (cli_workload(ctx, a->op, a->shape, a->stride, a->pad, a->dilation, a->epilogue, true,
                     &s->wl) != OB_OK) {
      cli_error("%s", ob_ctx_errmsg(ctx));
      return false;
    }
    s->have_wl = true;
    ob_workload_key(&s->wl, s->wl_key, sizeof s->wl_key);
    s->f.key.workload = s->wl_key;
  } else if (a->op) {
    if (!ob_op_exists(a->op)) {
      cli_error("--op: unknown operator '%s' (see opbench ops)", a->op);
      return false;
    }
    if (narrow) {
      cli_error("'opbench db %s' needs the workload's --shape (or --workload KEY)", a->action);
      return false;
    }
    s->f.op = a->op;
  } else if (a->workload) {
    snprintf(s->wl_key, sizeof s->wl_key, "%s", a->workload);
    s->f.key.workload = s->wl_key;
  }
  if (a->tmpl) s->f.key.tmpl = a->tmpl;
  if (a->target ? strcmp(a->target, "any") != 0 : narrow) {
    ob_target *t = NULL;
    ob_status st = a->target ? ob_target_parse(ctx, a->target, &t) : ob_target_host(ctx, &t);
    if (st) {
      cli_error("%s%s", a->target ? "--target: " : "", ob_ctx_errmsg(ctx));
      return false;
    }
    snprintf(s->target, sizeof s->target, "%s", ob_target_str(t));
    ob_target_free(t);
    s->f.key.target = s->target;
  }
  if (a->resources) {
    if (strcmp(a->resources, "any") != 0) s->f.key.resources = a->resources;
  } else if (narrow || a->threads_set || a->ncores) {
    ob_tune_resources(&a->mo, s->resources, sizeof s->resources);
    s->f.key.resources = s->resources;
  }
  if (a->cache_state) {
    bool measurements = is_action(a, "export") && !(a->table && !strcmp(a->table, "profiles"));
    if (!narrow && !measurements) {
      cli_error("--cache selects measurements by their cache state: it applies to db best, top and "
                "export (of the measurements table), not to db %s%s", a->action,
                is_action(a, "export") ? " --table profiles" : "");
      return false;
    }
    for (ob_db_cache c = OB_DB_CACHE_ANY; c <= OB_DB_CACHE_COLD_WEIGHTS; c++)
      if (!strcmp(a->cache_state, ob_db_cache_name(c))) s->f.cache = c;
  }
  return true;
}

static const char *or_any(const char *s) { return s ? s : "any"; }

static void describe_selection(const sel *s) {
  printf("workload   %s\n", or_any(s->f.key.workload));
  printf("host       %s\n", or_any(s->f.key.host));
  printf("target     %s\n", or_any(s->f.key.target));
  printf("resources  %s\n", or_any(s->f.key.resources));
  if (s->f.key.tmpl) printf("template   %s\n", s->f.key.tmpl);
  if (s->f.cache != OB_DB_CACHE_ANY) printf("cache      %s\n", ob_db_cache_name(s->f.cache));
}

/* The config of a record in knob form when its template's space can be
 * rebuilt (for the selected workload, else from the record's stored
 * attributes); its stored entity otherwise. */
static ob_task *task_of(ob_ctx *ctx, sel *s, const ob_db_record *r) {
  const char *rt = r->target ? r->target : "";
  if (s->task && !strcmp(s->task_wl, r->workload) && !strcmp(s->task_tmpl, r->tmpl) &&
      !strcmp(s->task_tstr, rt))
    return s->task;
  sel_free(s);
  ob_workload wl;
  bool have = s->have_wl;
  if (have) wl = s->wl;
  else have = r->op && ob_workload_from_attrs(ctx, r->op, r->attrs, &wl) == OB_OK;
  if (have && ob_target_parse(ctx, rt, &s->task_target) != OB_OK) ob_ctx_clear_error(ctx);
  if (have && ob_task_new(ctx, &wl, r->tmpl, s->task_target, &s->task) == OB_OK) {
    snprintf(s->task_wl, sizeof s->task_wl, "%s", r->workload);
    snprintf(s->task_tmpl, sizeof s->task_tmpl, "%s", r->tmpl);
    snprintf(s->task_tstr, sizeof s->task_tstr, "%s", rt);
  }
  return s->task;
}

static char *config_text(ob_ctx *ctx, sel *s, const ob_db_record *r) {
  char *out = NULL;
  ob_task *task = task_of(ctx, s, r);
  if (task) {
    const ob_space *sp = ob_task_space(task);
    ob_config c;
    bool ok = r->entity && *r->entity ? ob_config_from_json(ctx, sp, r->entity, &c) == OB_OK
                                      : ob_space_get(ctx, sp, r->config_index, &c) == OB_OK;
    if (ok) out = ob_config_str(&c);
  }
  ob_ctx_clear_error(ctx);
  if (!out) out = strdup(r->entity && *r->entity ? r->entity : "(no entity stored)");
  return out;
}

static void time_text(double t, char *buf, size_t cap) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (t > 0 && localtime_r(&tt, &tm)) strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
  else snprintf(buf, cap, "unknown");
}

/* "number 1234, repeat 10, floor 1 ms, warm, timer overhead 21 ns, noisy" with
 * "unknown" for what the record does not say. Returns buf. */
static const char *timing_text(const ob_timing *t, char *buf, size_t cap) {
  char num[16] = "unknown", rep[16] = "unknown", fl[32] = "unknown", ovh[32] = "unknown";
  if (t->number > 0) snprintf(num, sizeof num, "%d", t->number);
  if (t->repeat > 0) snprintf(rep, sizeof rep, "%d", t->repeat);
  if (!isnan(t->min_repeat_ms)) snprintf(fl, sizeof fl, "%g ms", t->min_repeat_ms);
  if (t->timer_overhead_s > 0) snprintf(ovh, sizeof ovh, "%.3g ns", t->timer_overhead_s * 1e9);
  snprintf(buf, cap, "number %s, repeat %s, floor %s, %s caches, timer overhead %s%s%s%s", num,
           rep, fl, isnan(t->min_repeat_ms) ? "unknown" : ob_db_cache_name(ob_db_cache_of(t)), ovh,
           t->noisy ? ", noisy" : "", t->below_resolution ? ", below resolution" : "",
           t->emulated ? ", emulated (not a performance figure)" : "");
  return buf;
}

static cJSON *record_json(ob_ctx *ctx, sel *s, const ob_db_record *r) {
  cJSON *o = cJSON_CreateObject();
  char *cfg = config_text(ctx, s, r);
  cJSON_AddStringToObject(o, "workload", r->workload);
  cJSON_AddStringToObject(o, "host", r->host);
  cJSON_AddStringToObject(o, "target", r->target);
  cJSON_AddStringToObject(o, "resources", r->resources);
  cJSON_AddStringToObject(o, "template", r->tmpl);
  cJSON_AddNumberToObject(o, "config_index", (double)r->config_index);
  cJSON_AddStringToObject(o, "config", cfg ? cfg : "");
  if (r->entity) cJSON_AddStringToObject(o, "entity", r->entity);
  cJSON_AddNumberToObject(o, "error_no", r->error_no);
  const ob_timing *t = &r->timing;
  if (isfinite(t->median_s)) cJSON_AddNumberToObject(o, "median_s", t->median_s);
  if (isfinite(t->cv)) cJSON_AddNumberToObject(o, "cv", t->cv);
  cJSON_AddNumberToObject(o, "gflops", r->gflops);
  /* how it was timed; unknown parts (imported records, old files) are null */
  if (t->number > 0) cJSON_AddNumberToObject(o, "number", t->number);
  else cJSON_AddNullToObject(o, "number");
  if (t->repeat > 0) cJSON_AddNumberToObject(o, "repeat", t->repeat);
  else cJSON_AddNullToObject(o, "repeat");
  if (isnan(t->min_repeat_ms)) {
    cJSON_AddNullToObject(o, "min_repeat_ms");
    cJSON_AddNullToObject(o, "cache");
  } else {
    cJSON_AddNumberToObject(o, "min_repeat_ms", t->min_repeat_ms);
    cJSON_AddStringToObject(o, "cache", ob_db_cache_name(ob_db_cache_of(t)));
  }
  if (t->timer_overhead_s > 0) cJSON_AddNumberToObject(o, "timer_overhead_s", t->timer_overhead_s);
  else cJSON_AddNullToObject(o, "timer_overhead_s");
  cJSON_AddBoolToObject(o, "below_resolution", t->below_resolution);
  cJSON_AddBoolToObject(o, "noisy", t->noisy);
  cJSON_AddNumberToObject(o, "extra_repeats", t->extra_repeats);
  cJSON_AddBoolToObject(o, "emulated", t->emulated);
  cJSON_AddNumberToObject(o, "timestamp", r->timestamp);
  free(cfg);
  return o;
}

static int print_json(cJSON *root) {
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return cli_error("out of memory printing JSON");
  printf("%s\n", text);
  cJSON_free(text);
  return 0;
}

/* Why a task has no record: how many the workload has under other hosts
 * or resource settings, so the user knows which flag to widen. */
static int no_record(ob_db *db, const sel *s, const char *what) {
  ob_db_filter f = {.key = {.workload = s->f.key.workload}};
  ob_db_stats *st = NULL;
  int64_t n = 0;
  if (ob_db_stats_get(db, &f, &st) == OB_OK) n = st->total.total;
  ob_db_stats_free(st);
  if (n > 0)
    return cli_error("%s: no error-free record of %s for host %s, target %s, resources %s%s%s%s%s "
                     "(the database holds %lld of this workload under other settings: try "
                     "--host any --target any --resources any%s)",
                     what, s->f.key.workload, or_any(s->f.key.host), or_any(s->f.key.target),
                     or_any(s->f.key.resources),
                     s->f.key.tmpl ? ", template " : "", s->f.key.tmpl ? s->f.key.tmpl : "",
                     s->f.cache ? ", cache " : "", s->f.cache ? ob_db_cache_name(s->f.cache) : "",
                     (long long)n, s->f.cache ? " --cache any" : "");
  return cli_error("%s: the database holds no record of %s", what, s->f.key.workload);
}

static int cmd_best(ob_ctx *ctx, ob_db *db, const cli_args *a, sel *s) {
  ob_db_records *r = NULL;
  ob_status st = ob_db_top_k_cache(db, &s->f.key, s->f.cache, 1, &r);
  if (st) return cli_error("db best: %s", ob_ctx_errmsg(ctx));
  if (r->n == 0) {
    ob_db_records_free(r);
    return no_record(db, s, "db best");
  }
  const ob_db_record *b = &r->rec[0];
  ob_db_key k = {b->host, b->workload, b->target, b->resources, b->tmpl};
  ob_db_confirmed c;
  bool have_c = ob_db_get_confirmed(db, &k, &c) == OB_OK;
  ob_ctx_clear_error(ctx);
  int rc = 0;
  if (a->json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "best", record_json(ctx, s, b));
    if (have_c) {
      cJSON *cj = cJSON_CreateObject();
      cJSON_AddNumberToObject(cj, "config_index", (double)c.config_index);
      cJSON_AddNumberToObject(cj, "median_s", c.median_s);
      cJSON_AddNumberToObject(cj, "cv", c.cv);
      cJSON_AddNumberToObject(cj, "candidates", c.candidates);
      if (b->flops > 0) cJSON_AddNumberToObject(cj, "gflops", b->flops / c.median_s / 1e9);
      cJSON_AddNumberToObject(cj, "timestamp", c.timestamp);
      cJSON_AddItemToObject(root, "confirmed", cj);
    }
    rc = print_json(root);
  } else {
    char *cfg = config_text(ctx, s, b), when[32], tbuf[160];
    time_text(b->timestamp, when, sizeof when);
    printf("workload   %s\n", b->workload);
    printf("host       %s\n", b->host);
    printf("target     %s\n", b->target);
    printf("resources  %s\n", b->resources);
    printf("best       %s #%llu %s: %.2f GFLOPS, %.4g ms, CV %.2f %% (%s)\n", b->tmpl,
           (unsigned long long)b->config_index, cfg ? cfg : "", b->gflops,
           b->timing.median_s * 1e3, isfinite(b->timing.cv) ? b->timing.cv * 100 : 0.0, when);
    printf("timing     %s\n", timing_text(&b->timing, tbuf, sizeof tbuf));
    free(cfg);
    if (have_c) {
      ob_db_record cr = *b;
      cr.config_index = c.config_index;
      cr.entity = NULL; /* the confirmed config is named by index */
      char *ccfg = config_text(ctx, s, &cr);
      printf("confirmed  #%llu %s: %.2f GFLOPS, %.4g ms, CV %.2f %% (best of %d re-measured)\n",
             (unsigned long long)c.config_index, ccfg ? ccfg : "",
             b->flops > 0 ? b->flops / c.median_s / 1e9 : 0.0, c.median_s * 1e3, c.cv * 100,
             c.candidates);
      free(ccfg);
    }
  }
  ob_db_records_free(r);
  return rc;
}

static int cmd_top(ob_ctx *ctx, ob_db *db, const cli_args *a, sel *s) {
  ob_db_records *r = NULL;
  if (ob_db_top_k_cache(db, &s->f.key, s->f.cache, a->top, &r) != OB_OK)
    return cli_error("db top: %s", ob_ctx_errmsg(ctx));
  if (r->n == 0) {
    ob_db_records_free(r);
    return no_record(db, s, "db top");
  }
  int rc = 0;
  if (a->json) {
    cJSON *arr = cJSON_CreateArray();
    for (int64_t i = 0; i < r->n; i++) cJSON_AddItemToArray(arr, record_json(ctx, s, &r->rec[i]));
    rc = print_json(arr);
  } else {
    describe_selection(s);
    printf("\n%4s %-20s %8s %9s %10s %7s %9s %-9s  %s\n", "rank", "template", "index", "GFLOPS",
           "ms", "CV %", "number", "flags", "config");
    for (int64_t i = 0; i < r->n; i++) {
      const ob_db_record *x = &r->rec[i];
      char *cfg = config_text(ctx, s, x);
      char num[16] = "?";
      if (x->timing.number > 0) snprintf(num, sizeof num, "%d", x->timing.number);
      printf("%4lld %-20s %8llu %9.2f %10.4g %7.2f %9s %-9s  %s\n", (long long)i + 1, x->tmpl,
             (unsigned long long)x->config_index, x->gflops, x->timing.median_s * 1e3,
             isfinite(x->timing.cv) ? x->timing.cv * 100 : 0.0, num,
             cli_timing_flags(&x->timing), cfg ? cfg : "");
      free(cfg);
    }
  }
  ob_db_records_free(r);
  return rc;
}

static void errors_text(const ob_db_stat_row *row, char *buf, size_t cap) {
  size_t off = 0;
  buf[0] = '\0';
  for (int e = 1; e < OB_MERR_COUNT; e++)
    if (row->by_error[e] && off < cap)
      off += (size_t)snprintf(buf + off, cap - off, "%s%s %lld", off ? ", " : "", ob_merr_str(e),
                              (long long)row->by_error[e]);
  if (!off) snprintf(buf, cap, "-");
}

static cJSON *stat_json(const ob_db_stat_row *row) {
  cJSON *o = cJSON_CreateObject();
  if (row->name) cJSON_AddStringToObject(o, "name", row->name);
  if (row->op) cJSON_AddStringToObject(o, "op", row->op);
  cJSON_AddNumberToObject(o, "records", (double)row->total);
  cJSON_AddNumberToObject(o, "ok", (double)row->by_error[0]);
  cJSON *errs = cJSON_AddObjectToObject(o, "errors");
  for (int e = 1; e < OB_MERR_COUNT; e++)
    if (row->by_error[e]) cJSON_AddNumberToObject(errs, ob_merr_str(e), (double)row->by_error[e]);
  if (isfinite(row->best_s)) cJSON_AddNumberToObject(o, "best_s", row->best_s);
  if (row->best_gflops > 0) cJSON_AddNumberToObject(o, "best_gflops", row->best_gflops);
  if (row->nworkloads) cJSON_AddNumberToObject(o, "workloads", (double)row->nworkloads);
  cJSON_AddNumberToObject(o, "noisy", (double)row->noisy);
  cJSON_AddNumberToObject(o, "below_resolution", (double)row->below_resolution);
  cJSON_AddNumberToObject(o, "emulated", (double)row->emulated);
  return o;
}

static void print_stat_row(const char *label, const ob_db_stat_row *row) {
  char errs[256], best[32] = "-";
  errors_text(row, errs, sizeof errs);
  if (row->best_gflops > 0) snprintf(best, sizeof best, "%.2f", row->best_gflops);
  printf("%-64s %8lld %8lld %6lld %9s  %s\n", label, (long long)row->total,
         (long long)row->by_error[0], (long long)row->noisy, best, errs);
}

static int cmd_stats(ob_ctx *ctx, ob_db *db, const cli_args *a, const sel *s) {
  ob_db_stats *st = NULL;
  if (ob_db_stats_get(db, &s->f, &st) != OB_OK) return cli_error("db stats: %s", ob_ctx_errmsg(ctx));
  int rc = 0;
  if (a->json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "total", stat_json(&st->total));
    cJSON_AddNumberToObject(root, "hosts", (double)st->nhosts);
    cJSON_AddNumberToObject(root, "configs", (double)st->nconfigs);
    cJSON_AddNumberToObject(root, "replaced", (double)st->nreplaced);
    cJSON *ops = cJSON_AddArrayToObject(root, "operators");
    for (int64_t i = 0; i < st->nops; i++) cJSON_AddItemToArray(ops, stat_json(&st->by_op[i]));
    cJSON *wls = cJSON_AddArrayToObject(root, "workloads");
    for (int64_t i = 0; i < st->nworkloads; i++)
      cJSON_AddItemToArray(wls, stat_json(&st->workloads[i]));
    rc = print_json(root);
  } else {
    printf("database   %s: %lld hosts, %lld configs, %lld trials replaced by a "
           "re-measurement\n",
           ob_db_path(db), (long long)st->nhosts, (long long)st->nconfigs,
           (long long)st->nreplaced);
    printf("records    %lld of %lld workloads (%lld operators)\n", (long long)st->total.total,
           (long long)st->nworkloads, (long long)st->nops);
    if (s->f.key.host || s->f.key.target || s->f.key.resources || s->f.key.tmpl || s->f.op ||
        s->f.key.workload)
      printf("selection  op %s, workload %s, host %s, target %s, resources %s, template %s\n",
             or_any(s->f.op), or_any(s->f.key.workload), or_any(s->f.key.host),
             or_any(s->f.key.target), or_any(s->f.key.resources), or_any(s->f.key.tmpl));
    printf("\n%-64s %8s %8s %6s %9s  %s\n", "operator / workload", "records", "ok", "noisy",
           "best GF", "errors");
    for (int64_t i = 0; i < st->nops; i++) {
      const ob_db_stat_row *op = &st->by_op[i];
      char label[96];
      snprintf(label, sizeof label, "%s (%lld workloads)", op->name, (long long)op->nworkloads);
      print_stat_row(label, op);
      for (int64_t w = 0; w < st->nworkloads; w++) {
        const ob_db_stat_row *row = &st->workloads[w];
        if (!row->op || strcmp(row->op, op->name)) continue;
        char wl[96];
        snprintf(wl, sizeof wl, "  %.61s", row->name);
        print_stat_row(wl, row);
      }
    }
    print_stat_row("total", &st->total);
    printf("noisy      %lld error-free records kept a CV above their stability threshold; %lld "
           "have a median below 10x the timer overhead\n",
           (long long)st->total.noisy, (long long)st->total.below_resolution);
    if (st->total.emulated)
      printf("emulated   %lld error-free records were timed under an emulator (a cross target's "
             "kernels): their times are not performance figures\n",
             (long long)st->total.emulated);
  }
  ob_db_stats_free(st);
  return rc;
}

static int cmd_export(ob_ctx *ctx, ob_db *db, const cli_args *a, const sel *s) {
  int64_t n = 0;
  if (a->table && !strcmp(a->table, "profiles")) {
    /* the profiler's dataset: a column per feature and workload attribute */
    ob_db_profile_filter pf = {.host = s->f.key.host, .workload = s->f.key.workload,
                               .target = s->f.key.target, .op = s->f.op, .ok_only = s->f.ok_only};
    if (ob_db_export_profiles(db, &pf, a->format, a->out, &n) != OB_OK)
      return cli_error("db export: %s", ob_ctx_errmsg(ctx));
    fflush(stdout);
    fprintf(stderr, "opbench: exported %lld profile points as %s to %s\n", (long long)n,
            !strcmp(a->format, "jsonl") ? "JSON lines" : "CSV", strcmp(a->out, "-") ? a->out : "stdout");
    return 0;
  }
  bool autotvm = !strcmp(a->format, "autotvm");
  ob_status st = autotvm ? ob_db_export_autotvm(db, &s->f, a->out, ob_op_autotvm_map(), NULL,
                                                NULL, NULL, &n)
                         : ob_db_export_csv(db, &s->f, a->out, &n);
  if (st) return cli_error("db export: %s", ob_ctx_errmsg(ctx));
  fflush(stdout);
  fprintf(stderr, "opbench: exported %lld records as %s to %s\n", (long long)n,
          autotvm ? "AutoTVM v0.2 JSON lines" : "CSV", strcmp(a->out, "-") ? a->out : "stdout");
  return 0;
}

static int cmd_import(ob_ctx *ctx, ob_db *db, const cli_args *a) {
  char host[64] = "";
  if (a->host && !strcmp(a->host, "any"))
    return cli_error("--host any: an import files its records under one host "
                     "(a fingerprint, or this)");
  if (a->host && !strcmp(a->host, "this")) {
    ob_host h;
    if (ob_host_detect(ctx, &h) != OB_OK) return cli_error("--host this: %s", ob_ctx_errmsg(ctx));
    if (ob_db_put_host(db, &h, NULL, NULL) != OB_OK)
      return cli_error("db import: %s", ob_ctx_errmsg(ctx));
    snprintf(host, sizeof host, "%s", h.fingerprint);
  } else if (a->host) {
    snprintf(host, sizeof host, "%s", a->host);
  }
  ob_db_import_opts o = {.host = *host ? host : NULL,
                         .resources = a->resources,
                         .flags = a->remeasure ? OB_DB_REPLACE : 0,
                         .map = ob_op_autotvm_map()};
  ob_db_import_result res;
  memset(&res, 0, sizeof res);
  ob_status st = ob_db_import_autotvm(db, a->file, &o, &res);
  int rc = 0;
  if (st) {
    rc = cli_error("db import %s: %s (%lld records stored before the failure are kept)", a->file,
                   ob_ctx_errmsg(ctx), (long long)res.nimported);
  } else {
    printf("imported   %s: %lld lines, %lld records stored, %lld already stored (kept), %lld "
           "broken lines skipped\n",
           a->file, (long long)res.nlines, (long long)res.nimported, (long long)res.nduplicate,
           (long long)res.nbroken);
    printf("host       %s\n", *host ? host : "unknown");
    if (res.nunmapped)
      printf("unmapped   %lld records of tasks opbench has no operator for, stored under their "
             "AutoTVM task key\n",
             (long long)res.nunmapped);
    enum { SHOW = 20 };
    for (int64_t i = 0; i < res.nbad && i < SHOW; i++)
      printf("skipped    line %lld: %s\n", (long long)res.bad[i].line, res.bad[i].why);
    if (res.nbroken > SHOW)
      printf("skipped    ... and %lld more broken lines\n", (long long)(res.nbroken - SHOW));
  }
  ob_db_import_result_clear(&res);
  return rc;
}

/* push: --db -> --shared; pull: --shared -> --db (created if need be). */
static int cmd_copy(ob_ctx *ctx, const cli_args *a, const sel *s) {
  bool push = is_action(a, "push");
  const char *from = push ? a->db_path : a->shared, *to = push ? a->shared : a->db_path;
  ob_db *src = NULL, *dst = NULL;
  int rc = OB_CLI_EXIT_ERROR;
  if (ob_db_open(ctx, from, OB_DB_READONLY, &src) != OB_OK) {
    cli_error("%s: %s", push ? "--db" : "--shared", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (ob_db_open(ctx, to, 0, &dst) != OB_OK) {
    cli_error("%s: %s", push ? "--shared" : "--db", ob_ctx_errmsg(ctx));
    goto done;
  }
  ob_db_copy_result r;
  ob_status st = ob_db_copy(src, dst, &s->f, a->remeasure ? OB_DB_REPLACE : 0, &r);
  if (st) {
    cli_error("db %s: %s (%lld records copied before the failure are kept)", a->action,
              ob_ctx_errmsg(ctx), (long long)r.ncommitted);
    goto done;
  }
  printf("%-10s %lld records from %s to %s: %lld copied, %lld already there (%s)\n", a->action,
         (long long)r.nrecords, ob_db_path(src), ob_db_path(dst), (long long)r.ncopied,
         (long long)r.nduplicate, a->remeasure ? "replaced" : "kept");
  printf("with       %lld hosts, %lld workloads, %lld confirmed bests\n", (long long)r.nhosts,
         (long long)r.nworkloads, (long long)r.nconfirmed);
  rc = 0;
done:
  ob_db_close(dst);
  ob_db_close(src);
  return rc;
}

int cli_cmd_db(ob_ctx *ctx, const cli_args *a) {
  bool import = is_action(a, "import");
  if (is_action(a, "push") || is_action(a, "pull")) {
    sel s;
    if (!make_selection(ctx, a, &s)) return OB_CLI_EXIT_ERROR;
    int rc = cmd_copy(ctx, a, &s);
    sel_free(&s);
    return rc;
  }
  sel s;
  if (!import && !make_selection(ctx, a, &s)) return OB_CLI_EXIT_ERROR;
  ob_db *db = NULL;
  /* queries never create or modify the file; import creates it */
  if (ob_db_open(ctx, a->db_path, import ? 0 : OB_DB_READONLY, &db) != OB_OK)
    return cli_error("--db: %s", ob_ctx_errmsg(ctx));
  int rc;
  if (import) rc = cmd_import(ctx, db, a);
  else if (is_action(a, "best")) rc = cmd_best(ctx, db, a, &s);
  else if (is_action(a, "top")) rc = cmd_top(ctx, db, a, &s);
  else if (is_action(a, "stats")) rc = cmd_stats(ctx, db, a, &s);
  else rc = cmd_export(ctx, db, a, &s);
  if (!import) sel_free(&s);
  ob_db_close(db);
  return rc;
}
