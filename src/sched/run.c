/* run.c: a schedule executed by the graph runtime's stage executor. The
 * schedule names units; the runtime runs graph nodes. Each group's nodes
 * are taken by name before the merges rewrite the graph (node ids move);
 * a merge stage becomes one group holding the merged convolution and the
 * channel slices that replace the originals (ob_graph_merge_convs names
 * them "<first>.merged" and "<conv>.slice"). */
#include <stdlib.h>
#include <string.h>

#include "opbench/runtime.h"
#include "opbench/sched.h"

typedef struct name_list {
  int n, cap;
  char **s;
} name_list;

static bool push(name_list *l, const char *a, const char *suffix) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 8;
    char **ns = realloc(l->s, sizeof(char *) * (size_t)cap);
    if (!ns) return false;
    l->s = ns;
    l->cap = cap;
  }
  size_t la = strlen(a), ls = strlen(suffix);
  char *c = malloc(la + ls + 1);
  if (!c) return false;
  memcpy(c, a, la);
  memcpy(c + la, suffix, ls + 1);
  l->s[l->n++] = c;
  return true;
}

static int live_node(const ob_graph *g, const char *name) {
  for (int i = 0; i < ob_graph_node_count(g); i++)
    if (!ob_graph_node_dead(g, i) && !strcmp(ob_graph_node_name(g, i), name)) return i;
  return -1;
}

ob_status ob_schedule_compile(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_graph *g, int lanes,
                              const ob_rt_opts *o, ob_rt **rt_out, ob_rt_par **par_out) {
  *rt_out = NULL;
  *par_out = NULL;
  int ns = ob_schedule_stage_count(s), total = 0;
  for (int i = 0; i < ns; i++) total += ob_schedule_group_count(s, i);
  name_list *names = calloc((size_t)total + 1, sizeof *names);
  ob_rt_stage_plan *stages = calloc((size_t)ns + 1, sizeof *stages);
  ob_rt_group_plan *groups = calloc((size_t)total + 1, sizeof *groups);
  int **nodes = calloc((size_t)total + 1, sizeof *nodes);
  ob_status st = OB_OK;
  ob_rt *rt = NULL;
  bool merges = false;
  if (!names || !stages || !groups || !nodes) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  /* names first: the merges move node ids */
  for (int i = 0, k = 0; i < ns; i++) {
    bool merge = ob_schedule_stage_kind(s, i) == OB_SCHED_STAGE_MERGE;
    merges |= merge;
    for (int j = 0; j < ob_schedule_group_count(s, i); j++, k++) {
      const int *ops;
      int nops = ob_schedule_group_ops(s, i, j, &ops);
      for (int a = 0; a < nops; a++) {
        if (merge) {
          if (a == 0 && !push(&names[k], ob_sched_unit_name(u, ops[0]), ".merged")) goto nomem;
          if (!push(&names[k], ob_sched_unit_name(u, ops[a]), ".slice")) goto nomem;
          continue;
        }
        const int *nd;
        int nn = ob_sched_unit_nodes(u, ops[a], &nd);
        for (int b = 0; b < nn; b++)
          if (!push(&names[k], ob_graph_node_name(g, nd[b]), "")) goto nomem;
      }
    }
  }
  if (merges) {
    if ((st = ob_schedule_apply_merges(ctx, u, s, g))) goto done;
    if (lanes > 0 && (st = ob_graph_plan_layout(ctx, g, lanes, NULL))) goto done;
  }
  for (int i = 0, k = 0; i < ns; i++) {
    stages[i].ngroups = ob_schedule_group_count(s, i);
    stages[i].groups = &groups[k];
    for (int j = 0; j < stages[i].ngroups; j++, k++) {
      if (!(nodes[k] = malloc(sizeof(int) * (size_t)(names[k].n + 1)))) goto nomem;
      for (int a = 0; a < names[k].n; a++) {
        nodes[k][a] = live_node(g, names[k].s[a]);
        if (nodes[k][a] < 0) {
          st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d: the graph has no node '%s'", i + 1, j + 1,
                       names[k].s[a]);
          goto done;
        }
      }
      groups[k].nnodes = names[k].n;
      groups[k].nodes = nodes[k];
      groups[k].ncores = ob_schedule_group_cores(s, i, j, &groups[k].cores);
    }
  }
  if ((st = ob_rt_new(ctx, g, o, &rt))) goto done;
  if ((st = ob_rt_par_new(rt, ns, stages, par_out))) {
    ob_rt_free(rt);
    rt = NULL;
    goto done;
  }
  *rt_out = rt;
  goto done;
nomem:
  st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
done:
  for (int k = 0; names && k < total; k++) {
    for (int a = 0; a < names[k].n; a++) free(names[k].s[a]);
    free(names[k].s);
  }
  for (int k = 0; nodes && k < total; k++) free(nodes[k]);
  free(names);
  free(nodes);
  free(stages);
  free(groups);
  return st;
}

/* s's stages started on rt (ob_rt_par_new: rt's memory placed again) and run once. */
static ob_status par_on(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_rt *rt, ob_rt_par **out) {
  *out = NULL;
  int ns = ob_schedule_stage_count(s), total = 0, nn = 0;
  for (int i = 0; i < ns; i++) {
    if (ob_schedule_stage_kind(s, i) == OB_SCHED_STAGE_MERGE)
      return ob_fail(ctx, OB_ERR_UNSUPPORTED, "stage %d merges convolutions: compile the schedule (ob_schedule_compile)",
                     i + 1);
    total += ob_schedule_group_count(s, i);
  }
  for (int i = 0; i < ob_sched_units_count(u); i++) {
    const int *nd;
    nn += ob_sched_unit_nodes(u, i, &nd);
  }
  ob_rt_stage_plan *stages = calloc((size_t)ns + 1, sizeof *stages);
  ob_rt_group_plan *groups = calloc((size_t)total + 1, sizeof *groups);
  int *nodes = malloc(sizeof(int) * (size_t)(nn + 1));
  ob_status st = OB_OK;
  ob_rt_par *par = NULL;
  if (!stages || !groups || !nodes) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int i = 0, k = 0, at = 0; i < ns; i++) {
    stages[i].ngroups = ob_schedule_group_count(s, i);
    stages[i].groups = &groups[k];
    for (int j = 0; j < stages[i].ngroups; j++, k++) {
      const int *ops;
      int nops = ob_schedule_group_ops(s, i, j, &ops);
      groups[k].nodes = nodes + at;
      for (int a = 0; a < nops; a++) {
        const int *nd;
        int m = ob_sched_unit_nodes(u, ops[a], &nd);
        if (at + m > nn) {
          st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d: a unit scheduled twice", i + 1);
          goto done;
        }
        memcpy(nodes + at, nd, sizeof(int) * (size_t)m);
        at += m;
        groups[k].nnodes += m;
      }
      groups[k].ncores = ob_schedule_group_cores(s, i, j, &groups[k].cores);
    }
  }
  if (!(st = ob_rt_par_new(rt, ns, stages, &par)) && !(st = ob_rt_par_run(par))) {
    *out = par;
    par = NULL;
  }
done:
  ob_rt_par_free(par);
  free(stages);
  free(groups);
  free(nodes);
  return st;
}

ob_status ob_schedule_time_on(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_rt *rt,
                              const ob_timing_opts *t, double *seconds) {
  ob_rt_par *par = NULL;
  ob_timing tm;
  ob_status st = par_on(ctx, u, s, rt, &par);
  if (!st && !(st = ob_rt_par_time(par, t, &tm))) *seconds = tm.median_s;
  ob_rt_par_free(par);
  return st;
}

ob_status ob_schedule_profile_on(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_rt *rt, int runs,
                                 double *stage_s) {
  ob_rt_par *par = NULL;
  ob_status st = par_on(ctx, u, s, rt, &par);
  double *x = NULL;
  if (!st) {
    int n = ob_rt_par_stage_count(par), ns = ob_schedule_stage_count(s);
    if (!(x = malloc(sizeof(double) * (size_t)(n + 1)))) st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    else if (!(st = ob_rt_par_profile(par, runs, x)))
      for (int i = 0; i < ns; i++) stage_s[i] = x[n - ns + i]; /* a prologue stage of the runtime's own comes first */
  }
  free(x);
  ob_rt_par_free(par);
  return st;
}

/* rt run sequentially, then par (started on rt): the outputs must agree
 * (1e-5), else OB_ERR_WRONG_ANSWER naming the schedule. */
static ob_status check_par(ob_ctx *ctx, ob_rt *rt, ob_rt_par *par, const ob_schedule *s) {
  int no = ob_graph_output_count(ob_rt_graph(rt));
  void **ref = calloc((size_t)no + 1, sizeof *ref);
  ob_status st = ref ? ob_rt_run(rt) : ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  for (int i = 0; i < no && !st; i++) {
    size_t b = ob_rt_output_bytes(rt, i);
    if (!(ref[i] = malloc(b + 1))) st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    else memcpy(ref[i], ob_rt_output(rt, i), b);
  }
  if (!st && !(st = ob_rt_par_run(par))) {
    ob_rt_check_result chk;
    ob_rt_check(rt, (const void *const *)ref, 1e-5, &chk);
    if (!chk.ok)
      st = ob_fail(ctx, OB_ERR_WRONG_ANSWER, "the %s schedule by stages differs from the sequential run: %s",
                   ob_schedule_scheduler(s), chk.message);
  }
  for (int i = 0; ref && i < no; i++) free(ref[i]);
  free(ref);
  return st;
}

ob_status ob_schedule_check_on(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_rt *rt) {
  ob_rt_par *par = NULL;
  ob_status st = par_on(ctx, u, s, rt, &par);
  if (!st) st = check_par(ctx, rt, par, s);
  ob_rt_par_free(par);
  return st;
}

/* ---- a schedule compiled once, timed many times ---------------------------------------------------------- */
struct ob_sched_compiled {
  ob_ctx *ctx;
  ob_graph *g;
  ob_sched_units *u;
  ob_schedule *s;
  ob_rt *rt;
  ob_rt_par *par;
};

void ob_sched_compiled_free(ob_sched_compiled *c) {
  if (!c) return;
  ob_rt_par_free(c->par);
  ob_rt_free(c->rt);
  ob_schedule_free(c->s);
  ob_sched_units_free(c->u);
  ob_graph_free(c->g);
  free(c);
}

ob_status ob_sched_compiled_new(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_graph *g, int max_part,
                                int lanes, const ob_rt_opts *o, ob_sched_compiled **out) {
  *out = NULL;
  ob_sched_compiled *c = calloc(1, sizeof *c);
  ob_str js = {0};
  ob_status st = OB_OK;
  if (!c) {
    ob_graph_free(g);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  c->ctx = ctx;
  c->g = g;
  /* the schedule goes over by its JSON: units are named, so it fits the
   * fresh graph's units whatever their numbering */
  if ((st = ob_sched_units_from_graph(ctx, g, max_part, &c->u)) || (st = ob_schedule_to_json(ctx, u, s, &js)) ||
      (st = ob_schedule_from_json(ctx, c->u, js.data, "schedule", ob_schedule_cores(s), &c->s)) ||
      (st = ob_schedule_compile(ctx, c->u, c->s, g, lanes, o, &c->rt, &c->par)) || (st = ob_rt_run(c->rt)))
    goto done;
  st = check_par(ctx, c->rt, c->par, s);
done:
  ob_str_free(&js);
  if (st) {
    ob_sched_compiled_free(c);
    return st;
  }
  *out = c;
  return OB_OK;
}

ob_status ob_sched_compiled_time(ob_sched_compiled *c, const ob_timing_opts *t, double *seconds) {
  ob_timing tm;
  ob_status st = ob_rt_par_time(c->par, t, &tm);
  if (!st) *seconds = tm.median_s;
  return st;
}

ob_rt *ob_sched_compiled_rt(const ob_sched_compiled *c) { return c->rt; }
ob_rt_par *ob_sched_compiled_par(const ob_sched_compiled *c) { return c->par; }
