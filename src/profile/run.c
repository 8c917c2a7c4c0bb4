/* run.c: measuring a plan. Each workload's configs are built in one batch
 * (in parallel, through the content-addressed cache) when its first point
 * comes; every point goes through the runner (checked against the
 * reference, timed with the protocol, counters counted) with its co-runner
 * or cache pressure beside it, and is stored at once in its own
 * transaction, so a run killed at any moment resumes where it stopped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile_impl.h"

ob_profile_opts ob_profile_opts_default(void) {
  ob_profile_opts o;
  memset(&o, 0, sizeof o);
  o.measure = ob_measure_opts_default();
  o.counters = OB_COUNTERS_ALL;
  return o;
}

void ob_profile_pressure_how(char *buf, size_t cap) {
  struct stat sb;
  if (stat("/sys/fs/resctrl/info/L3", &sb) == 0)
    snprintf(buf, cap, "Linux resctrl offers L3 cache allocation here, but opbench makes cache "
                       "pressure with a co-runner thread on another core");
  else if (stat("/sys/fs/resctrl", &sb) == 0)
    snprintf(buf, cap, "Linux resctrl is mounted without L3 cache allocation (no info/L3): "
                       "cache pressure comes from a co-runner thread on another core");
  else
    snprintf(buf, cap, "Linux resctrl is not available here (no /sys/fs/resctrl: the kernel or "
                       "the virtual CPU has no cache allocation): cache pressure comes from a "
                       "co-runner thread on another core");
}

/* ---- artifacts ------------------------------------------------------------------------ */

typedef struct art {
  bool built;
  int error_no;   /* instantiation or build failure */
  char *msg;
  char *so, *sym;
  double build_s;
} art;

typedef struct runner_ctx {
  ob_ctx *ctx;
  ob_profile_plan *p;
  const ob_profile_opts *o;
  art **a; /* [workload][config] */
} runner_ctx;

static void art_clear(art *a) {
  free(a->msg);
  free(a->so);
  free(a->sym);
  memset(a, 0, sizeof *a);
}

/* Builds the configs of workload wi not built yet (only cfg 0 when
 * only_base), in one batch, through the tuner's ob_build_configs. */
static ob_status ensure_built(runner_ctx *R, int wi, bool only_base) {
  pwl *w = &R->p->w[wi];
  int n = only_base ? 1 : w->ncfg;
  ob_config *cfgs = calloc((size_t)n, sizeof *cfgs);
  ob_build_report *rep = calloc((size_t)n, sizeof *rep);
  int *slot = calloc((size_t)n, sizeof *slot);
  ob_status st = OB_OK;
  if (!cfgs || !rep || !slot) {
    st = ob_fail(R->ctx, OB_ERR_NOMEM, "profile: out of memory");
    goto done;
  }
  int nb = 0;
  for (int c = 0; c < n; c++) {
    art *a = &R->a[wi][c];
    if (a->built) continue;
    a->built = true;
    st = ob_space_get(R->ctx, ob_task_space(w->task), w->cfg[c].index, &cfgs[nb]);
    if (st == OB_ERR_NOMEM) goto done;
    if (st) { /* the config cannot be instantiated: error 1 */
      a->error_no = OB_MERR_INSTANTIATION;
      a->msg = strdup(ob_ctx_errmsg(R->ctx));
      ob_ctx_clear_error(R->ctx);
      st = OB_OK;
      continue;
    }
    slot[nb++] = c;
  }
  ob_measure_opts mo = R->o->measure;
  if (nb && (st = ob_build_configs(R->ctx, w->task, &mo, cfgs, nb, rep))) goto done;
  for (int b = 0; b < nb; b++) {
    art *a = &R->a[wi][slot[b]];
    a->build_s = rep[b].build_s;
    if (rep[b].error_no) { /* instantiation (class 1) or build failure */
      a->error_no = rep[b].error_no;
      a->msg = strdup(rep[b].message[0] ? rep[b].message : "build failed");
      continue;
    }
    char sym[256];
    ob_task_kernel_name(w->task, &cfgs[b], sym, sizeof sym);
    a->so = strdup(rep[b].path);
    a->sym = strdup(sym);
    if (!a->so || !a->sym) {
      st = ob_fail(R->ctx, OB_ERR_NOMEM, "profile: out of memory");
      goto done;
    }
  }
done:
  free(cfgs);
  free(rep);
  free(slot);
  return st;
}

/* ---- one kernel's request -------------------------------------------------------------- */

typedef struct kreq {
  ob_task *task;
  ob_config cfg;
  uint64_t seed;
  ob_status fill_st;
  size_t bytes[OB_KERNEL_MAX_ARGS];
  bool is_input[OB_KERNEL_MAX_ARGS];
  ob_run_request req;
} kreq;

static void k_fill(void *user, void *const *bufs) {
  kreq *k = user;
  k->fill_st = ob_task_fill_for(k->task, &k->cfg, k->seed, bufs);
}

static ob_status k_check(void *user, void *const *bufs, char *msg, size_t cap) {
  kreq *k = user;
  if (k->fill_st) {
    snprintf(msg, cap, "filling the inputs failed: %s", ob_status_str(k->fill_st));
    return k->fill_st;
  }
  return ob_task_check_for(k->task, &k->cfg, k->seed, bufs, msg, cap);
}

static ob_status make_req(runner_ctx *R, int wi, int c, const int *cores, int n, kreq *k) {
  pwl *w = &R->p->w[wi];
  art *a = &R->a[wi][c];
  memset(k, 0, sizeof *k);
  k->task = w->task;
  k->seed = R->o->measure.seed;
  ob_status st = ob_space_get(R->ctx, ob_task_space(w->task), w->cfg[c].index, &k->cfg);
  if (st) return st;
  int nargs = ob_task_num_args(w->task);
  OB_ASSERT(nargs <= OB_KERNEL_MAX_ARGS);
  for (int i = 0; i < nargs; i++) {
    k->bytes[i] = ob_task_arg_bytes_for(w->task, &k->cfg, i); /* the config may pad (panels, blocks) */
    k->is_input[i] = ob_task_arg_is_input(w->task, i);
  }
  k->req = (ob_run_request){.target = R->p->t, .so_path = a->so, .symbol = a->sym, .nbufs = nargs,
                            .buf_bytes = k->bytes, .buf_is_input = k->is_input, .cores = cores,
                            .nthreads = n, .timing = R->o->measure.timing, .fill = k_fill,
                            .check = k_check, .user = k};
  return OB_OK;
}

/* ---- progress -------------------------------------------------------------------------- */

static void fmt_dur(double s, char *buf, size_t cap) {
  if (s < 0) snprintf(buf, cap, "?");
  else if (s < 90) snprintf(buf, cap, "%.0f s", s);
  else if (s < 5400) snprintf(buf, cap, "%.0f min %02.0f s", floor(s / 60), fmod(s, 60));
  else snprintf(buf, cap, "%.0f h %02.0f min", floor(s / 3600), fmod(s, 3600) / 60);
}

static void report(const ob_profile_opts *o, const ob_profile_progress *pr, bool done) {
  if (o->progress) {
    char el[32], eta[32], line[512];
    fmt_dur(pr->elapsed_s, el, sizeof el);
    fmt_dur(pr->eta_s, eta, sizeof eta);
    int k = snprintf(line, sizeof line, "[profile] points %d/%d (%d measured, %d resumed, %d failed) | %s elapsed",
                     pr->done, pr->total, pr->measured, pr->resumed, pr->failed, el);
    if (!done && k > 0 && (size_t)k < sizeof line)
      snprintf(line + k, sizeof line - (size_t)k, " | %s%s left", pr->eta_s >= 0 ? "~" : "", eta);
    bool tty = isatty(fileno(o->progress));
    /* on a terminal one line, redrawn (\r, cleared to its end); otherwise a line per update */
    if (tty) fprintf(o->progress, "\r%s\033[K%s", line, done ? "\n" : "");
    else fprintf(o->progress, "%s%s%s\n", line, pr->what && !done ? " | " : "", pr->what && !done ? pr->what : "");
    fflush(o->progress);
  }
  if (o->progress_fn) o->progress_fn(o->user, pr);
}

/* ---- the run ------------------------------------------------------------------------------ */

static double args_bytes(ob_task *t) {
  double b = 0;
  for (int i = 0; i < ob_task_num_args(t); i++) b += (double)ob_task_arg_bytes(t, i);
  return b;
}

ob_status ob_profile_run(ob_ctx *ctx, ob_profile_plan *p, ob_runner *runner, ob_db *db,
                         const ob_profile_opts *o, ob_profile_stats *stats) {
  OB_ASSERT(ctx && p && runner && db && o && stats);
  memset(stats, 0, sizeof *stats);
  const double t0 = ob_now_s();
  runner_ctx R = {.ctx = ctx, .p = p, .o = o};
  ob_status st = OB_OK;
  ob_host h;
  const ob_host *hp = o->host;
  if (!hp) {
    if ((st = ob_host_detect(ctx, &h))) return st;
    hp = &h;
  }
  char tstr[192];
  snprintf(tstr, sizeof tstr, "%s", ob_target_str(p->t));
  const char *isa = ob_isa_name(ob_target_get_facts(p->t)->isa);
  if ((st = ob_target_check_runnable(ctx, p->t))) return st;
  R.a = calloc((size_t)p->nw, sizeof *R.a);
  if (!R.a) return ob_fail(ctx, OB_ERR_NOMEM, "profile: out of memory");
  for (int i = 0; i < p->nw; i++)
    if (!(R.a[i] = calloc((size_t)p->w[i].ncfg, sizeof **R.a))) {
      st = ob_fail(ctx, OB_ERR_NOMEM, "profile: out of memory");
      goto done;
    }
  {
    char cc[128], ccver[128];
    ob_build_opts bo = o->measure.build;
    bo.target = p->t;
    bool have_cc = ob_build_compiler(ctx, &bo, cc, sizeof cc, ccver, sizeof ccver) == OB_OK;
    ob_ctx_clear_error(ctx);
    if ((st = ob_db_put_host(db, hp, have_cc ? cc : NULL, have_cc ? ccver : NULL))) goto done;
  }
  for (int i = 0; i < p->nw; i++)
    if ((st = ob_workload_store(db, &p->w[i].wl))) goto done;
  char how[256];
  ob_profile_pressure_how(how, sizeof how);

  stats->points = p->npt;
  double measure_s = 0;
  int measured_here = 0;
  for (int i = 0; i < p->npt && !st; i++) {
    const ppoint *pt = &p->pt[i];
    pwl *w = &p->w[pt->w];
    const pres *r = &p->res[pt->res];
    char cores[1024], res[1100], pcores[1024] = "", what[2700];
    ob_profile_cores_text(r->cores, r->n, cores, sizeof cores);
    snprintf(res, sizeof res, "threads=%d;cores=%s", r->n, cores);
    const pwl *pw = pt->partner >= 0 ? &p->w[pt->partner] : NULL;
    if (pw) ob_profile_cores_text(pt->partner_cores, pt->ncores_partner, pcores, sizeof pcores);
    ob_db_profile rec;
    memset(&rec, 0, sizeof rec);
    rec.key = (ob_db_profile_key){.host = hp->fingerprint, .workload = w->key, .target = tstr,
                                  .tmpl = ob_task_template(w->task), .config_index = w->cfg[pt->cfg].index,
                                  .resources = res, .corun_workload = pw ? pw->key : "",
                                  .corun_mode = ob_corun_mode_name(pt->mode),
                                  .pressure_mib = pt->pressure_mib};
    snprintf(what, sizeof what, "%s %s %s%s%s%s", pt->sweep, w->key, res, pw ? " with " : "",
             pw ? pw->key : "", pt->pressure_mib > 0 ? " under cache pressure" : "");
    double t_point = ob_now_s();
    bool found = false;
    if (!o->remeasure && (st = ob_db_get_profile(db, &rec.key, &found, NULL))) break;
    if (found) {
      stats->resumed++;
      if (o->point_fn) o->point_fn(o->user, i, NULL);
    } else {
      if (!R.a[pt->w][pt->cfg].built && (st = ensure_built(&R, pt->w, false))) break;
      if (pw && !R.a[pt->partner][0].built && (st = ensure_built(&R, pt->partner, true))) break;
      const art *a = &R.a[pt->w][pt->cfg];
      const art *pa = pw ? &R.a[pt->partner][0] : NULL;
      char entity_buf[1] = "";
      char *entity = NULL;
      ob_config cfg;
      if (ob_space_get(ctx, ob_task_space(w->task), w->cfg[pt->cfg].index, &cfg) == OB_OK &&
          ob_config_to_json(ctx, &cfg, &entity) != OB_OK)
        entity = NULL;
      ob_ctx_clear_error(ctx);
      rec.nthreads = r->n;
      rec.cores = cores;
      rec.sweep = pt->sweep;
      rec.knob = w->cfg[pt->cfg].knob;
      rec.knob_value = w->cfg[pt->cfg].knob_value;
      rec.entity = entity ? entity : entity_buf;
      rec.corun_cores = pcores;
      rec.corun_template = pw ? ob_task_template(pw->task) : "";
      rec.corun_config = pw ? pw->cfg[0].index : 0;
      char phow[400] = "";
      if (pt->pressure_mib > 0)
        snprintf(phow, sizeof phow, "a thread on core %d reading and writing %g MiB line by line; %s",
                 pt->pressure_core, pt->pressure_mib, how);
      rec.pressure_how = phow;
      rec.flops = ob_task_flops(w->task);
      rec.bytes = args_bytes(w->task);
      rec.intensity = rec.bytes > 0 ? rec.flops / rec.bytes : NAN;
      rec.peak_gflops = o->limits ? ob_limits_peak(o->limits, isa, r->n) : NAN;
      rec.bandwidth_gbps = o->limits ? ob_limits_bandwidth(o->limits, r->n) : NAN;
      rec.gflops = rec.peak_pct = rec.alone_s = rec.slowdown = rec.corun_partner_s = NAN;
      rec.pressure_gbps = rec.build_s = NAN;
      for (int c = 0; c < OB_COUNTER_COUNT; c++) rec.counters[c] = NAN;
      rec.timing.median_s = rec.timing.mean_s = rec.timing.cv = rec.timing.min_repeat_ms = NAN;
      char msg[1024] = "";
      ob_run_result rr; /* outlives the branch: rec.counters_note points into it */
      memset(&rr, 0, sizeof rr);
      if (a->error_no || (pa && pa->error_no)) {
        rec.error_no = a->error_no ? a->error_no : pa->error_no;
        snprintf(msg, sizeof msg, "%s%.900s", a->error_no ? "" : "co-runner: ",
                 (a->error_no ? a->msg : pa->msg) ? (a->error_no ? a->msg : pa->msg) : "");
        rec.build_s = a->build_s;
      } else {
        kreq *k = calloc(2, sizeof *k);
        if (!k) {
          free(entity);
          st = ob_fail(ctx, OB_ERR_NOMEM, "profile: out of memory");
          break;
        }
        st = make_req(&R, pt->w, pt->cfg, r->cores, r->n, &k[0]);
        if (!st && pw) st = make_req(&R, pt->partner, 0, pt->partner_cores, pt->ncores_partner, &k[1]);
        if (st) {
          free(k);
          free(entity);
          break;
        }
        k[0].req.counters = o->counters;
        if (pw) k[0].req.corun = &k[1].req;
        if (pt->pressure_mib > 0) {
          k[0].req.pressure_bytes = (size_t)(pt->pressure_mib * 1048576);
          k[0].req.pressure_core = pt->pressure_core;
        }
        st = ob_runner_run(runner, &k[0].req, &rr);
        free(k);
        if (st) {
          free(entity);
          break;
        }
        rec.build_s = a->build_s;
        rec.run_s = rr.run_s;
        rec.error_no = rr.error_no;
        snprintf(msg, sizeof msg, "%s", rr.message);
        if (!rr.error_no) {
          rec.timing = rr.timing;
          rec.gflops = rec.flops / rr.timing.median_s / 1e9;
          rec.peak_pct = rec.peak_gflops > 0 ? 100 * rec.gflops / rec.peak_gflops : NAN;
          for (int c = 0; c < OB_COUNTER_COUNT; c++) rec.counters[c] = rr.counters.per_call[c];
          rec.counters_note = rr.counters.note;
          if (o->counters && rr.counters.note[0] && !stats->counters_note[0])
            snprintf(stats->counters_note, sizeof stats->counters_note, "%s", rr.counters.note);
          if (pw && rr.corun_calls > 0) rec.corun_partner_s = rr.corun_s / (double)rr.corun_calls;
          if (pt->pressure_mib > 0) {
            rec.pressure_gbps = rr.pressure_gbps;
            snprintf(stats->pressure_how, sizeof stats->pressure_how, "%s", how);
          }
          if (pw || pt->pressure_mib > 0) { /* against the same point alone */
            ob_db_profile_key alone = rec.key;
            alone.corun_workload = "";
            alone.corun_mode = "";
            alone.pressure_mib = 0;
            bool af = false;
            double am = NAN;
            if ((st = ob_db_get_profile(db, &alone, &af, &am))) {
              free(entity);
              break;
            }
            if (af && am > 0) {
              rec.alone_s = am;
              rec.slowdown = rr.timing.median_s / am;
            }
          }
        }
      }
      rec.error_msg = msg;
      bool stored = false;
      st = ob_db_put_profile(db, &rec, o->remeasure ? OB_DB_REPLACE : 0, &stored);
      if (!st && o->point_fn) o->point_fn(o->user, i, &rec);
      free(entity);
      if (st) break;
      stats->measured++;
      if (rec.error_no) stats->failed++;
      if (isfinite(rec.build_s)) stats->build_s += rec.build_s;
      stats->run_s += rec.run_s;
      measured_here++;
      measure_s += ob_now_s() - t_point;
    }
    int done_n = i + 1;
    double el = ob_now_s() - t0;
    /* what is left is measured at the pace measured so far (resumed points cost nothing) */
    double eta = measured_here > 0 ? measure_s / measured_here * (p->npt - done_n) : -1;
    ob_profile_progress pr = {.done = done_n, .total = p->npt, .measured = stats->measured,
                              .resumed = stats->resumed, .failed = stats->failed, .elapsed_s = el,
                              .eta_s = eta, .what = what};
    report(o, &pr, false);
  }
  if (!st) {
    ob_profile_progress pr = {.done = p->npt, .total = p->npt, .measured = stats->measured,
                              .resumed = stats->resumed, .failed = stats->failed,
                              .elapsed_s = ob_now_s() - t0, .eta_s = 0, .what = NULL};
    report(o, &pr, true);
  }
done:
  for (int i = 0; R.a && i < p->nw; i++) {
    for (int c = 0; R.a[i] && c < p->w[i].ncfg; c++) art_clear(&R.a[i][c]);
    free(R.a[i]);
  }
  free(R.a);
  stats->seconds = ob_now_s() - t0;
  return st;
}
