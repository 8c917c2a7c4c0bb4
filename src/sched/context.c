/* context.c: stage costs corrected by whole runs. A stage measured alone,
 * repeated, is not the stage inside a run: there its inputs were just
 * written by the previous stage's cores (in another core's cache, or in
 * none), its weights were evicted since the last run, and its start waits
 * on the barrier and wakes the groups' pools. On squeezenet at 2 cores the
 * stages alone were off by 0.14x to 4.8x both ways against the same stages
 * inside whole runs (ob_rt_par_profile), the largest errors on parallel
 * stages (two one-core groups: 1.1x to 4.8x slower in the run), which is
 * what makes a DP on costs alone choose stages that lose end to end.
 *
 * This model answers with the base model's cost (cached here by
 * structure, so a DP run again does not measure again) unless the stage
 * was seen inside whole runs, in which case with its mean in-run time.
 * An unseen stage's base cost is scaled by what the runs taught about its
 * class (one group, or groups side by side): the sum of the learned
 * stages' in-run times over the sum of their base costs, once at least
 * k_min_learned stages of the class were seen. Without that the DP favours
 * every unseen parallel stage (alone they were 1.2-1.4x too cheap on
 * randwire) over the learned ones, so each plan is mostly stages it has
 * not seen and the loop stops at its plan limit before it converges.
 * ob_sched_ios_in_context plans, runs the plan, learns its stages' in-run
 * times and plans again until the plan repeats. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched/sched_impl.h"

typedef struct ctx_entry {
  double base_s;   /* the base model's cost, NAN until asked */
  double run_sum;  /* in-run seconds seen */
  int run_n;
  int cls;         /* 0: one group, 1: groups side by side */
} ctx_entry;

/* learned stages of a class needed before its unseen stages are scaled */
enum { k_min_learned = 3 };

typedef struct in_context {
  ob_ctx *ctx;
  ob_stage_cost *base; /* borrowed */
  ob_arena *arena;
  smap map; /* canonical stage key -> entry index */
  ctx_entry *e;
  size_t n, cap;
  const double *learn; /* learning: the in-run seconds of the stages, in order */
  int learn_at;
  int64_t learned; /* distinct stages with in-run times */
  double scale[2]; /* per class: in-run / base over the learned stages (1 until k_min_learned) */
  char name[200];
  ob_str key, part;
} in_context;

/* The stage as text independent of group order: each group "cores:key;key"
 * (ops in order), the groups sorted, after the stage kind. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static ob_status stage_key(in_context *c, const ob_sched_stage_desc *d) {
  char **gs = calloc((size_t)d->ngroups + 1, sizeof *gs);
  bool ok = gs != NULL;
  for (int g = 0; g < d->ngroups && ok; g++) {
    c->part.len = 0;
    ob_str_appendf(&c->part, "%d:", d->groups[g].cores);
    for (int k = 0; k < d->groups[g].nops; k++) ob_str_appendf(&c->part, "%s;", d->groups[g].ops[k]->key);
    ok = !c->part.failed && (gs[g] = strdup(c->part.data)) != NULL;
  }
  if (ok) {
    qsort(gs, (size_t)d->ngroups, sizeof *gs, cmp_str);
    c->key.len = 0;
    ob_str_appendf(&c->key, "%d/%d", (int)d->kind, d->machine_cores);
    for (int g = 0; g < d->ngroups; g++) ob_str_appendf(&c->key, "|%s", gs[g]);
    ok = !c->key.failed;
  }
  for (int g = 0; gs && g < d->ngroups; g++) free(gs[g]);
  free(gs);
  if (!ok) {
    ob_str_free(&c->part); /* clears the failure for the next stage */
    ob_str_free(&c->key);
    return ob_fail(c->ctx, OB_ERR_NOMEM, "in-context stage costs: out of memory");
  }
  return OB_OK;
}

static ob_status entry_of(in_context *c, const ob_sched_stage_desc *d, ctx_entry **out) {
  ob_status st = stage_key(c, d);
  if (st) return st;
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 64;
    ctx_entry *ne = realloc(c->e, sizeof *ne * cap);
    if (!ne) return ob_fail(c->ctx, OB_ERR_NOMEM, "out of memory");
    c->e = ne;
    c->cap = cap;
  }
  bool added = false;
  int64_t *slot = smap_put(&c->map, c->key.data, c->key.len, (int64_t)c->n, &added);
  if (!slot) return ob_fail(c->ctx, OB_ERR_NOMEM, "out of memory");
  if (added) c->e[c->n++] = (ctx_entry){.base_s = NAN, .cls = d->ngroups > 1};
  *out = &c->e[*slot];
  return OB_OK;
}

static ob_status ic_cost(void *self, ob_sched_stage_desc *d, double *seconds) {
  in_context *c = self;
  ctx_entry *e = NULL;
  ob_status st = entry_of(c, d, &e);
  if (st) return st;
  if (c->learn) { /* ob_sched_learn_run walks the schedule's stages in order */
    if (!e->run_n) c->learned++;
    e->run_sum += c->learn[c->learn_at++];
    e->run_n++;
  }
  if (e->run_n) {
    for (int g = 0; g < d->ngroups; g++) d->groups[g].seconds = -1;
    *seconds = e->run_sum / e->run_n;
    return OB_OK;
  }
  if (isnan(e->base_s)) {
    double v = 0;
    if ((st = c->base->vt->cost(c->base->self, d, &v))) return st;
    e->base_s = v;
  }
  double k = c->scale[e->cls];
  if (k != 1)
    for (int g = 0; g < d->ngroups; g++)
      if (d->groups[g].seconds >= 0) d->groups[g].seconds *= k;
  *seconds = e->base_s * k;
  return OB_OK;
}

/* The classes' scales from the learned stages whose base cost is known. */
static void rescale(in_context *c) {
  double run[2] = {0, 0}, base[2] = {0, 0};
  int n[2] = {0, 0};
  for (size_t i = 0; i < c->n; i++) {
    const ctx_entry *e = &c->e[i];
    if (!e->run_n || !(e->base_s > 0)) continue;
    run[e->cls] += e->run_sum / e->run_n;
    base[e->cls] += e->base_s;
    n[e->cls]++;
  }
  for (int k = 0; k < 2; k++) {
    double r = n[k] >= k_min_learned && base[k] > 0 ? run[k] / base[k] : 1;
    c->scale[k] = r > 0 && isfinite(r) ? r : 1;
  }
}

static void ic_free(void *self) {
  in_context *c = self;
  if (!c) return;
  smap_free(&c->map);
  ob_arena_free(c->arena);
  free(c->e);
  ob_str_free(&c->key);
  ob_str_free(&c->part);
  free(c);
}

static const char *ic_describe(const void *self) { return ((const in_context *)self)->name; }

static const ob_stage_cost_i k_in_context = {
    .name = "in context", .predicted = false, .cost = ic_cost, .best_split = NULL, .free = ic_free,
    .describe = ic_describe};

ob_status ob_stage_cost_in_context(ob_ctx *ctx, ob_stage_cost *base, ob_stage_cost *out) {
  memset(out, 0, sizeof *out);
  if (!base || !base->vt) return ob_fail(ctx, OB_ERR_INVALID_ARG, "in-context stage costs need a base model");
  in_context *c = calloc(1, sizeof *c);
  if (!c) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  c->ctx = ctx;
  c->base = base;
  c->scale[0] = c->scale[1] = 1;
  if (!(c->arena = ob_arena_new(ctx, 1 << 14))) {
    free(c);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  smap_init(&c->map, c->arena);
  const char *bd = base->vt->describe ? base->vt->describe(base->self) : base->vt->name;
  snprintf(c->name, sizeof c->name, "%s, corrected by stage times inside whole runs", bd ? bd : "");
  out->vt = &k_in_context;
  out->self = c;
  return OB_OK;
}

int64_t ob_stage_cost_in_context_learned(const ob_stage_cost *c) {
  if (!c || c->vt != &k_in_context) return 0;
  return ((const in_context *)c->self)->learned;
}

ob_status ob_sched_learn_run(ob_ctx *ctx, ob_stage_cost *c, const ob_sched_units *u, ob_schedule *s,
                             const double *stage_s) {
  if (!c || c->vt != &k_in_context) return ob_fail(ctx, OB_ERR_INVALID_ARG, "learning in-run stage times needs an in-context model");
  in_context *ic = c->self;
  for (int i = 0; i < ob_schedule_stage_count(s); i++)
    if (!(stage_s[i] >= 0) || !isfinite(stage_s[i]))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d ran %g s", i + 1, stage_s[i]);
  ic->learn = stage_s;
  ic->learn_at = 0;
  ob_status st = ob_schedule_cost(ctx, u, s, c, NULL);
  ic->learn = NULL;
  if (!st) rescale(ic);
  return st;
}

ob_status ob_sched_ios_in_context(ob_ctx *ctx, const ob_sched_units *u, const ob_sched_opts *o, ob_stage_cost *c,
                                  int max_plans, ob_sched_run_fn run, void *user, ob_schedule **plans, int *nplans,
                                  ob_sched_stats *stats) {
  *nplans = 0;
  if (max_plans < 1 || !run) return ob_fail(ctx, OB_ERR_INVALID_ARG, "in-context planning needs a runner and a plan");
  double t0 = ob_now_s();
  ob_status st = OB_OK;
  double *stage_s = NULL;
  ob_sched_stats first = {0};
  for (int p = 0; p < max_plans && !st; p++) {
    ob_schedule *s = NULL;
    ob_sched_stats ps;
    if ((st = ob_sched_ios(ctx, u, o, c, &s, &ps))) break;
    if (p == 0) first = ps;
    bool seen = false;
    for (int q = 0; q < *nplans && !seen; q++) seen = ob_schedule_same(plans[q], s);
    if (seen) { /* the plan repeats: in-run times changed nothing */
      ob_schedule_free(s);
      break;
    }
    plans[(*nplans)++] = s;
    if (p == max_plans - 1) break; /* the last plan is not run here: the caller measures it */
    double *ns = realloc(stage_s, sizeof(double) * (size_t)(ob_schedule_stage_count(s) + 1));
    if (!ns) {
      st = ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
      break;
    }
    stage_s = ns;
    if ((st = run(user, s, stage_s))) {
      ob_fail_prefix(ctx, "running plan %d", p + 1);
      break;
    }
    st = ob_sched_learn_run(ctx, c, u, s, stage_s);
  }
  free(stage_s);
  if (st) {
    for (int q = 0; q < *nplans; q++) ob_schedule_free(plans[q]);
    *nplans = 0;
    return st;
  }
  if (stats) {
    *stats = first;
    stats->seconds = ob_now_s() - t0;
  }
  return OB_OK;
}
