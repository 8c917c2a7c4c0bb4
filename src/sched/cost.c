/* cost.c: stage costs. The predicted model (per-unit latencies at k
 * threads from a callback, co-run slowdown per pair of unit kinds, and its
 * exact best core split), the FLOPs model the command line predicts with
 * until measured latencies exist, the merged convolution's description,
 * and costing a given schedule stage by stage. The predicted model owns its
 * latency cache (keys in its own arena). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_impl.h"

void ob_stage_cost_free(ob_stage_cost *c) {
  if (!c) return;
  if (c->vt && c->vt->free) c->vt->free(c->self);
  c->vt = NULL;
  c->self = NULL;
}

/* ---- the FLOPs model ------------------------------------------------------------------------- */
ob_sched_flops_model ob_sched_flops_model_default(void) {
  return (ob_sched_flops_model){
      .gflops_per_core = 20, .gbps_per_core = 8, .efficiency = 0.9, .overhead_s = 2e-6, .sync_s = 2e-6};
}

ob_status ob_sched_flops_latency(void *user, const ob_sched_op_desc *op, int threads, double *seconds) {
  const ob_sched_flops_model *m = user;
  if (threads < 1 || m->gflops_per_core <= 0 || m->gbps_per_core <= 0) return OB_ERR_INVALID_ARG;
  double speed = pow((double)threads, m->efficiency), t = 0;
  for (int i = 0; i < op->nnodes; i++) {
    double c = op->nodes[i].flops / (m->gflops_per_core * 1e9 * speed);
    double b = op->nodes[i].bytes / (m->gbps_per_core * 1e9 * speed);
    t += m->overhead_s + m->sync_s * (threads - 1) + (c > b ? c : b);
  }
  *seconds = t;
  return OB_OK;
}

/* ---- per-unit latencies from a trained predictor ------------------------------------------------ */
static bool node_predicted(void *user, const ob_sched_node_desc *n, int threads, double *out) {
  ob_sched_predictor_model *m = user;
  if (!n->has_workload) return false;
  bool known = false; /* asked only for kinds it has, so its ctx gets no message */
  for (int i = 0; i < ob_predictor_kinds(m->predictor) && !known; i++)
    known = !strcmp(ob_predictor_kind(m->predictor, i, NULL, NULL), n->wl.op);
  if (!known) return false;
  ob_task *task = NULL;
  ob_ctx *ctx = NULL;
  bool ok = false;
  if (ob_ctx_new(&ctx) != OB_OK) return false;
  if (ob_task_new(ctx, &n->wl, NULL, m->target, &task) == OB_OK) {
    ob_config cfg = ob_task_default_config(task);
    ob_predict_point pt = {.wl = &n->wl, .task = task, .cfg = &cfg, .threads = threads, .ncores = threads,
                           .peak_gflops = NAN, .bandwidth_gbps = NAN, .cache_gbps = NAN};
    if (m->limits) ob_predict_point_limits(m->limits, m->host, &pt);
    float x[OB_PREDICT_NFEAT];
    ob_prediction pr;
    ok = ob_predict_features(ctx, &pt, x) == OB_OK &&
         ob_predictor_predict(m->predictor, n->wl.op, x, ob_workload_flops(&n->wl), &pr) == OB_OK &&
         isfinite(pr.seconds) && pr.seconds >= 0;
    if (ok) *out = pr.seconds;
  }
  ob_task_free(task);
  ob_ctx_free(ctx);
  return ok;
}

ob_status ob_sched_predictor_latency(void *user, const ob_sched_op_desc *op, int threads, double *seconds) {
  ob_sched_predictor_model *m = user;
  if (threads < 1 || !m->predictor) return OB_ERR_INVALID_ARG;
  return ob_sched_sum_nodes(op, threads, node_predicted, m, &m->fallback, &m->predicted, &m->fallbacks,
                            seconds);
}

ob_status ob_sched_sum_nodes(const ob_sched_op_desc *op, int threads, ob_sched_node_cost_fn node, void *user,
                             ob_sched_flops_model *fallback, int64_t *hits, int64_t *fallbacks,
                             double *seconds) {
  double t = 0;
  for (int i = 0; i < op->nnodes; i++) {
    double v = 0;
    if (node(user, &op->nodes[i], threads, &v)) {
      (*hits)++;
    } else {
      ob_sched_op_desc one = *op;
      one.nnodes = 1;
      one.nodes = &op->nodes[i];
      ob_status st = ob_sched_flops_latency(fallback, &one, threads, &v);
      if (st) return st;
      (*fallbacks)++;
    }
    t += v;
  }
  *seconds = t;
  return OB_OK;
}

/* ---- the predicted model ------------------------------------------------------------------------ */
typedef struct predicted {
  ob_ctx *ctx;
  ob_sched_predict_opts o;
  char name[160];
  ob_arena *arena;
  smap lat;     /* key "threads|op key" -> index into vals */
  double *vals;
  size_t nvals, cvals;
  ob_str buf;
} predicted;

static ob_status op_latency(predicted *p, const ob_sched_op_desc *op, int k, double *out) {
  p->buf.len = 0;
  ob_str_appendf(&p->buf, "%d|%s", k, op->key);
  int64_t *slot = smap_find(&p->lat, p->buf.data, p->buf.len);
  if (slot) {
    *out = p->vals[*slot];
    return OB_OK;
  }
  double v = 0;
  ob_status st = p->o.latency(p->o.user, op, k, &v);
  if (st || !(v >= 0) || !isfinite(v)) {
    if (!st) st = OB_ERR_INVALID_ARG;
    return ob_fail(p->ctx, st, "%s: no latency for '%.200s' at %d threads", p->name, op->key, k);
  }
  if (p->nvals == p->cvals) {
    size_t cap = p->cvals ? p->cvals * 2 : 256;
    double *nv = realloc(p->vals, sizeof(double) * cap);
    if (!nv) return ob_fail(p->ctx, OB_ERR_NOMEM, "out of memory");
    p->vals = nv;
    p->cvals = cap;
  }
  p->vals[p->nvals] = v;
  smap_put(&p->lat, p->buf.data, p->buf.len, (int64_t)p->nvals, NULL);
  p->nvals++;
  *out = v;
  return OB_OK;
}

static double corun(const predicted *p, ob_sched_kind a, ob_sched_kind b) {
  double f = p->o.corun[a][b];
  return f > 1 ? f : 1;
}

/* The co-run factor of group i: the worst pairing of its units with
 * another group's. */
static double group_factor(const predicted *p, const ob_sched_stage_desc *s, int i) {
  double f = 1;
  const ob_sched_group_desc *gi = &s->groups[i];
  for (int j = 0; j < s->ngroups; j++) {
    if (j == i) continue;
    const ob_sched_group_desc *gj = &s->groups[j];
    for (int a = 0; a < gi->nops; a++)
      for (int b = 0; b < gj->nops; b++) {
        double c = corun(p, gi->ops[a]->kind, gj->ops[b]->kind);
        f = c > f ? c : f;
      }
  }
  return f;
}

static ob_status group_time(predicted *p, const ob_sched_group_desc *g, int k, double *out) {
  double t = 0;
  for (int a = 0; a < g->nops; a++) {
    double v;
    ob_status st = op_latency(p, g->ops[a], k, &v);
    if (st) return st;
    t += v;
  }
  *out = t;
  return OB_OK;
}

static ob_status pred_cost(void *self, ob_sched_stage_desc *s, double *seconds) {
  predicted *p = self;
  double worst = 0;
  for (int i = 0; i < s->ngroups; i++) {
    double t;
    if (s->groups[i].cores < 1) return ob_fail(p->ctx, OB_ERR_INVALID_ARG, "%s: a group without cores", p->name);
    ob_status st = group_time(p, &s->groups[i], s->groups[i].cores, &t);
    if (st) return st;
    t *= group_factor(p, s, i);
    s->groups[i].seconds = t;
    worst = t > worst ? t : worst;
  }
  *seconds = worst + p->o.barrier_s;
  return OB_OK;
}

/* min over splits (k_i >= 1, sum N) of max_i T_i(k_i) f_i: F[i][c] is the
 * best over groups i.. with c cores left, each group's time a table. */
static ob_status pred_split(void *self, ob_sched_stage_desc *s, double *seconds) {
  predicted *p = self;
  int g = s->ngroups, N = s->machine_cores;
  if (g < 1 || g > N) return ob_fail(p->ctx, OB_ERR_INVALID_ARG, "%s: %d groups on %d cores", p->name, g, N);
  int kmax = N - g + 1;
  double *T = malloc(sizeof(double) * (size_t)(g * (kmax + 1))), *F = malloc(sizeof(double) * (size_t)((g + 1) * (N + 1)));
  int *C = malloc(sizeof(int) * (size_t)((g + 1) * (N + 1)));
  ob_status st = OB_OK;
  if (!T || !F || !C) {
    st = ob_fail(p->ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int i = 0; i < g && !st; i++) {
    double f = group_factor(p, s, i);
    for (int k = 1; k <= kmax && !st; k++) {
      st = group_time(p, &s->groups[i], k, &T[i * (kmax + 1) + k]);
      T[i * (kmax + 1) + k] *= f;
    }
  }
  if (st) goto done;
  for (int c = 0; c <= N; c++) F[g * (N + 1) + c] = c == 0 ? 0 : INFINITY;
  for (int i = g - 1; i >= 0; i--)
    for (int c = 0; c <= N; c++) {
      double best = INFINITY;
      int arg = 0;
      for (int k = 1; k <= c && k <= kmax; k++) {
        double v = fmax(T[i * (kmax + 1) + k], F[(i + 1) * (N + 1) + c - k]);
        if (v < best) {
          best = v;
          arg = k;
        }
      }
      F[i * (N + 1) + c] = best;
      C[i * (N + 1) + c] = arg;
    }
  for (int i = 0, c = N; i < g; i++) {
    int k = C[i * (N + 1) + c];
    s->groups[i].cores = k;
    s->groups[i].seconds = T[i * (kmax + 1) + k];
    c -= k;
  }
  *seconds = F[N] + p->o.barrier_s;
done:
  free(T);
  free(F);
  free(C);
  return st;
}

static void pred_free(void *self) {
  predicted *p = self;
  if (!p) return;
  smap_free(&p->lat);
  free(p->vals);
  ob_str_free(&p->buf);
  ob_arena_free(p->arena);
  free(p);
}

static const char *pred_describe(const void *self) { return ((const predicted *)self)->name; }

static const ob_stage_cost_i k_predicted = {.name = "predicted",
                                            .predicted = true,
                                            .cost = pred_cost,
                                            .best_split = pred_split,
                                            .free = pred_free,
                                            .describe = pred_describe};

ob_status ob_stage_cost_predicted(ob_ctx *ctx, const ob_sched_predict_opts *o, ob_stage_cost *out) {
  memset(out, 0, sizeof *out);
  if (!o || !o->latency) return ob_fail(ctx, OB_ERR_INVALID_ARG, "the predicted stage cost needs a latency callback");
  if (!(o->barrier_s >= 0)) return ob_fail(ctx, OB_ERR_INVALID_ARG, "barrier time %g is negative", o->barrier_s);
  predicted *p = calloc(1, sizeof *p);
  if (!p) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  p->ctx = ctx;
  p->o = *o;
  snprintf(p->name, sizeof p->name, "%s", o->name ? o->name : "predicted");
  p->arena = ob_arena_new(ctx, 1 << 16);
  if (!p->arena) {
    free(p);
    return ob_fail(ctx, OB_ERR_NOMEM, "predicted stage cost: out of memory");
  }
  smap_init(&p->lat, p->arena);
  out->vt = &k_predicted;
  out->self = p;
  return OB_OK;
}

/* ---- merged convolutions ------------------------------------------------------------------------ */
ob_status ob_sched_merged_desc(ob_ctx *ctx, const ob_sched_units *u, int n, const int *ids, ob_arena *a,
                               ob_sched_op_desc *out) {
  if (n < 1) return ob_fail(ctx, OB_ERR_INVALID_ARG, "nothing to merge");
  const sunit *first = &u->u[ids[0]];
  if (first->merge_class < 0) return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s' does not merge", first->name);
  ob_sched_node_desc *nd = ob_arena_alloc(a, sizeof *nd);
  *nd = first->op.nodes[0];
  int64_t K = 0;
  bool bias = false;
  for (int i = 0; i < n; i++) {
    const sunit *x = &u->u[ids[i]];
    if (x->merge_class != first->merge_class)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s' and '%s' cannot merge", first->name, x->name);
    K += ob_workload_get(&x->op.nodes[0].wl, "K");
    bias |= strstr(x->op.nodes[0].wl.epilogue, "bias") != NULL;
  }
  ob_status st = ob_workload_set(ctx, &nd->wl, "K", K);
  if (!st && bias && !strstr(nd->wl.epilogue, "bias")) {
    char epi[64];
    snprintf(epi, sizeof epi, "bias%s%s", nd->wl.epilogue[0] ? "," : "", nd->wl.epilogue);
    st = ob_workload_set_epilogue(ctx, &nd->wl, epi);
  }
  if (st) return st;
  nd->flops = ob_workload_flops(&nd->wl);
  /* the input is read once; weights and outputs add up */
  double in_bytes = 4.0 * (double)(ob_workload_get(&nd->wl, "N") * ob_workload_get(&nd->wl, "C") *
                                   ob_workload_get(&nd->wl, "H") * ob_workload_get(&nd->wl, "W"));
  nd->bytes = in_bytes;
  for (int i = 0; i < n; i++) nd->bytes += u->u[ids[i]].op.nodes[0].bytes - in_bytes;
  char key[256];
  ob_workload_key(&nd->wl, key, sizeof key);
  memset(out, 0, sizeof *out);
  out->key = ob_arena_sprintf(a, "merged:%s", key);
  out->kind = OB_SCHED_KIND_CONV;
  out->flops = nd->flops;
  out->bytes = nd->bytes;
  out->nnodes = 1;
  out->nodes = nd;
  return OB_OK;
}

/* ---- a given schedule -------------------------------------------------------------------------- */
ob_status ob_schedule_cost(ob_ctx *ctx, const ob_sched_units *u, ob_schedule *s, ob_stage_cost *cost, double *seconds) {
  ob_status st = OB_OK;
  ob_arena *a = ob_arena_new(ctx, 1 << 14);
  if (!a) return ob_fail(ctx, OB_ERR_NOMEM, "schedule cost: out of memory");
  double total = 0;
  for (int i = 0; i < s->n && !st; i++) {
    sstage *t = &s->st[i];
    ob_sched_stage_desc d = {.kind = t->kind, .ngroups = t->ngroups, .machine_cores = s->cores};
    d.groups = ob_arena_alloc(a, sizeof *d.groups * (size_t)t->ngroups);
    for (int g = 0; g < t->ngroups && !st; g++) {
      sgroup *gr = &t->groups[g];
      const ob_sched_op_desc **ops = ob_arena_alloc(a, sizeof *ops * (size_t)(gr->nops ? gr->nops : 1));
      d.groups[g].cores = gr->ncores;
      d.groups[g].seconds = -1;
      if (t->kind == OB_SCHED_STAGE_MERGE) {
        ob_sched_op_desc *m = ob_arena_alloc(a, sizeof *m);
        st = ob_sched_merged_desc(ctx, u, gr->nops, gr->ops, a, m);
        ops[0] = m;
        d.groups[g].nops = 1;
      } else {
        for (int k = 0; k < gr->nops; k++) ops[k] = &u->u[gr->ops[k]].op;
        d.groups[g].nops = gr->nops;
      }
      d.groups[g].ops = ops;
    }
    double v = 0;
    if (!st) st = cost->vt->cost(cost->self, &d, &v);
    if (st) {
      ob_fail_prefix(ctx, "stage %d", i + 1);
      break;
    }
    t->seconds = v;
    for (int g = 0; g < t->ngroups; g++) t->groups[g].seconds = d.groups[g].seconds;
    total += v;
  }
  ob_arena_free(a);
  if (st) return st;
  ob_schedule_set_origin(s, s->scheduler, cost);
  if (seconds) *seconds = total;
  return OB_OK;
}
