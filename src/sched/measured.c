/* measured.c: the measured stage-cost model. A stage is run on this
 * machine by the graph runtime's stage executor: its groups' units' nodes
 * as a subset of one compiled model (ob_rt_par_new_subset), each group on
 * consecutive cores as the split gives them, and timed with the kernels'
 * protocol; the inputs the stage reads hold what a full run left. The
 * scheduler caches stage costs by structure and core split, so each
 * distinct stage is measured once. The descriptions the scheduler hands
 * over point at the units' own op descriptions: that is how a stage's
 * operators are found again. Merged convolutions are a different graph:
 * plan without merge endings in this mode. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_impl.h"

typedef struct measured {
  ob_ctx *ctx;
  const ob_sched_units *u;
  ob_rt *rt;
  ob_timing_opts timing;
  int64_t count;
  double seconds; /* spent measuring */
  char name[160];
} measured;

static int unit_of(const measured *m, const ob_sched_op_desc *op) {
  int n = ob_sched_units_count(m->u);
  for (int i = 0; i < n; i++)
    if (ob_sched_unit_op(m->u, i) == op) return i;
  return -1;
}

static ob_status m_cost(void *self, ob_sched_stage_desc *d, double *seconds) {
  measured *m = self;
  if (d->kind == OB_SCHED_STAGE_MERGE)
    return ob_fail(m->ctx, OB_ERR_UNSUPPORTED, "measured stage costs: merge stages are not measured (plan without merges)");
  int total = 0, ncores = 0;
  for (int j = 0; j < d->ngroups; j++) {
    for (int k = 0; k < d->groups[j].nops; k++) {
      int uid = unit_of(m, d->groups[j].ops[k]);
      if (uid < 0) return ob_fail(m->ctx, OB_ERR_INVALID_ARG, "measured stage costs: an operator of another model");
      const int *nd;
      total += ob_sched_unit_nodes(m->u, uid, &nd);
    }
    ncores += d->groups[j].cores;
  }
  if (ncores > d->machine_cores || ncores > 256)
    return ob_fail(m->ctx, OB_ERR_INVALID_ARG, "measured stage costs: %d cores asked of %d", ncores, d->machine_cores);
  int *nodes = malloc(sizeof(int) * (size_t)(total + 1)), cores[256];
  ob_rt_group_plan *gp = calloc((size_t)d->ngroups, sizeof *gp);
  if (!nodes || !gp) {
    free(nodes);
    free(gp);
    return ob_fail(m->ctx, OB_ERR_NOMEM, "out of memory");
  }
  int at = 0, c = 0;
  for (int j = 0; j < d->ngroups; j++) {
    gp[j].nodes = nodes + at;
    for (int k = 0; k < d->groups[j].nops; k++) {
      const int *nd;
      int nn = ob_sched_unit_nodes(m->u, unit_of(m, d->groups[j].ops[k]), &nd);
      memcpy(nodes + at, nd, sizeof(int) * (size_t)nn);
      at += nn;
      gp[j].nnodes += nn;
    }
    gp[j].cores = cores + c;
    gp[j].ncores = d->groups[j].cores;
    for (int k = 0; k < d->groups[j].cores; k++, c++) cores[c] = c;
  }
  ob_rt_stage_plan sp = {d->ngroups, gp};
  ob_rt_par *p = NULL;
  double t0 = ob_now_s();
  ob_status st = ob_rt_par_new_subset(m->rt, 1, &sp, &p);
  ob_timing tm;
  if (!st) st = ob_rt_par_time(p, &m->timing, &tm);
  ob_rt_par_free(p);
  free(nodes);
  free(gp);
  m->seconds += ob_now_s() - t0;
  if (st) {
    ob_fail_prefix(m->ctx, "measuring a stage");
    return st;
  }
  m->count++;
  *seconds = tm.median_s;
  return OB_OK;
}

static void m_free(void *self) { free(self); }

static const char *m_describe(const void *self) { return ((const measured *)self)->name; }

static const ob_stage_cost_i k_measured = {
    .name = "measured", .predicted = false, .cost = m_cost, .best_split = NULL, .free = m_free,
    .describe = m_describe};

ob_status ob_stage_cost_measured(ob_ctx *ctx, const ob_sched_units *u, ob_rt *rt, const ob_timing_opts *t,
                                 ob_stage_cost *out) {
  memset(out, 0, sizeof *out);
  measured *m = calloc(1, sizeof *m);
  if (!m) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  m->ctx = ctx;
  m->u = u;
  m->rt = rt;
  m->timing = t ? *t : ob_timing_default();
  snprintf(m->name, sizeof m->name, "measured on this machine: each distinct stage run by the stage executor");
  out->vt = &k_measured;
  out->self = m;
  return OB_OK;
}

int64_t ob_stage_cost_measured_count(const ob_stage_cost *c, double *seconds) {
  if (!c || c->vt != &k_measured) return 0;
  const measured *m = c->self;
  if (seconds) *seconds = m->seconds;
  return m->count;
}
