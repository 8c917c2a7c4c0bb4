/* ingraph.c: in-graph step records. A kernel's record in the database is
 * its latency measured alone; inside the model the same config runs on
 * inputs another step just wrote, beside the runtime's own steps (pooling,
 * concat, elementwise) and its layout conversions, none of which the
 * tuner measures. A profiling run of the deployed plan stores every step's
 * latency as it runs inside the graph (profile points of sweep "in-graph"),
 * and the sum of those records is what the database says the deployed
 * model costs.
 *
 * A record's key names the plan it was measured in: the workload key is
 * "ingraph/<model>/<plan hash>/<step index>/<op>", where the hash covers
 * every step's kind, operator, name, template and config. A plan that
 * changes anywhere (another pick of the layout selection, a new record)
 * finds none of the old records, so the sum is never made of a different
 * deployment's steps. */
#include "runtime/runtime_impl.h"

#define RT_INGRAPH_SWEEP "in-graph"

static uint64_t plan_hash(const ob_rt *rt) {
  uint64_t h = ob_hash64(ob_graph_name(rt->g), strlen(ob_graph_name(rt->g)), 0x1a2b3c4dULL);
  for (int i = 0; i < rt->ns; i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    char buf[768];
    int n = snprintf(buf, sizeof buf, "%d|%s|%s|%s|%s|%llu|%zu", (int)si.kind, si.op, si.name, si.workload, si.tmpl,
                     (unsigned long long)si.config_index, rt->s[i].nout ? rt->v[rt->s[i].out[0]].bytes : (size_t)0);
    h = ob_hash64(buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1), h);
  }
  return h;
}

/* The profile key of step i (strings in wl, or rt's). */
static ob_db_profile_key step_key(const ob_rt *rt, int i, const char *hash, char *wl, size_t cap) {
  ob_rt_step_info si;
  ob_rt_step_get(rt, i, &si);
  snprintf(wl, cap, "ingraph/%s/%s/%d/%s", ob_graph_name(rt->g), hash, i, si.op);
  ob_db_profile_key k = {.host = rt->host,
                         .workload = wl,
                         .target = ob_target_str(rt->target),
                         .tmpl = si.tmpl && si.tmpl[0] ? si.tmpl : ob_rt_step_kind_name(si.kind),
                         .config_index = si.config_index,
                         .resources = rt->resources};
  return k;
}

ob_status ob_rt_record_steps(ob_rt *rt, ob_db *db, int runs, double *sum_s, double *total_s) {
  OB_ASSERT(rt && db);
  double *st = calloc((size_t)rt->ns + 1, sizeof(double));
  if (!st) return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
  ob_status s = rt_profile_runs(rt, runs, true, st, total_s);
  if (!s) s = ob_rt_store_steps(rt, db, st, runs, sum_s);
  free(st);
  return s;
}

ob_status ob_rt_store_steps(ob_rt *rt, ob_db *db, const double *st, int runs, double *sum_s) {
  OB_ASSERT(rt && db && st);
  int ns = rt->ns;
  ob_status s = OB_OK;
  char hash[17];
  ob_hash_hex(plan_hash(rt), hash);
  double sum = 0;
  for (int i = 0; i < ns && !s; i++) {
    char wl[512];
    ob_db_profile p;
    memset(&p, 0, sizeof p);
    p.key = step_key(rt, i, hash, wl, sizeof wl);
    p.nthreads = rt->o.nthreads;
    p.sweep = RT_INGRAPH_SWEEP;
    /* a step below the clock's resolution still costs something */
    double t = st[i] > 0 ? st[i] : 1e-9;
    p.timing.ncosts = 1;
    p.timing.costs[0] = t;
    p.timing.median_s = p.timing.mean_s = t;
    p.timing.number = 1;
    p.timing.repeat = runs;
    p.timing.min_repeat_ms = 0;
    p.flops = p.bytes = p.gflops = p.intensity = p.peak_gflops = p.peak_pct = p.bandwidth_gbps = NAN;
    p.alone_s = p.slowdown = p.corun_partner_s = p.pressure_gbps = NAN;
    for (int c = 0; c < OB_COUNTER_COUNT; c++) p.counters[c] = NAN;
    s = ob_db_put_profile(db, &p, OB_DB_REPLACE, NULL);
    sum += t;
  }
  if (!s && sum_s) *sum_s = sum;
  return s;
}

ob_status ob_rt_ingraph_sum(const ob_rt *rt, ob_db *db, double *sum_s, int *covered) {
  OB_ASSERT(rt && db && sum_s);
  char hash[17];
  ob_hash_hex(plan_hash(rt), hash);
  double sum = 0;
  int c = 0;
  for (int i = 0; i < rt->ns; i++) {
    char wl[512];
    ob_db_profile_key k = step_key(rt, i, hash, wl, sizeof wl);
    bool found = false;
    double med = NAN;
    ob_status s = ob_db_get_profile(db, &k, &found, &med);
    if (s) return s;
    if (found && med > 0) {
      sum += med;
      c++;
    }
  }
  *sum_s = sum;
  if (covered) *covered = c;
  return OB_OK;
}
