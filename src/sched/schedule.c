/* schedule.c: the schedule object (stages of groups, with their costs), its
 * validation against the units, its JSON form (written by --schedule-out,
 * read back for another run or by the runtime) and the graph rewrite of its
 * merge stages. A schedule owns its arena; arrays grow by copying into it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sched/sched_impl.h"

ob_status ob_schedule_new(ob_ctx *ctx, int cores, ob_schedule **out) {
  *out = NULL;
  if (cores < 1 || cores > 1 << 16) return ob_fail(ctx, OB_ERR_INVALID_ARG, "a schedule for %d cores (expected 1..65536)", cores);
  ob_schedule *s = calloc(1, sizeof *s);
  if (!s) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  s->ctx = ctx;
  s->arena = ob_arena_new(ctx, 1 << 14);
  if (!s->arena) {
    free(s);
    return ob_fail(ctx, OB_ERR_NOMEM, "schedule: out of memory");
  }
  s->cores = cores;
  snprintf(s->scheduler, sizeof s->scheduler, "given");
  *out = s;
  return OB_OK;
}

void ob_schedule_free(ob_schedule *s) {
  if (!s) return;
  ob_arena_free(s->arena);
  free(s);
}

void ob_schedule_set_origin(ob_schedule *s, const char *scheduler, const ob_stage_cost *cost) {
  if (scheduler != s->scheduler) snprintf(s->scheduler, sizeof s->scheduler, "%s", scheduler);
  if (cost && cost->vt) {
    const char *d = cost->vt->describe ? cost->vt->describe(cost->self) : cost->vt->name;
    snprintf(s->cost_name, sizeof s->cost_name, "%s", d ? d : "");
    s->predicted = cost->vt->predicted;
  }
}

ob_status ob_schedule_add_stage(ob_schedule *s, ob_sched_stage_kind kind) {
  if ((unsigned)kind >= OB_SCHED_STAGE_KIND_COUNT) return ob_fail(s->ctx, OB_ERR_INVALID_ARG, "bad stage kind %d", (int)kind);
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 32;
    sstage *ns = ob_arena_alloc(s->arena, sizeof *ns * (size_t)cap);
    if (s->n) memcpy(ns, s->st, sizeof *ns * (size_t)s->n);
    s->st = ns;
    s->cap = cap;
  }
  sstage *t = &s->st[s->n++];
  memset(t, 0, sizeof *t);
  t->kind = kind;
  t->seconds = -1;
  return OB_OK;
}

ob_status ob_schedule_add_group(ob_schedule *s, int nops, const int *ops, int ncores, const int *cores) {
  if (!s->n) return ob_fail(s->ctx, OB_ERR_INVALID_ARG, "a group needs a stage to go into");
  if (nops < 0 || ncores < 0) return ob_fail(s->ctx, OB_ERR_INVALID_ARG, "negative group size");
  sstage *t = &s->st[s->n - 1];
  if (t->ngroups == t->cgroups) {
    int cap = t->cgroups ? t->cgroups * 2 : 4;
    sgroup *ng = ob_arena_alloc(s->arena, sizeof *ng * (size_t)cap);
    if (t->ngroups) memcpy(ng, t->groups, sizeof *ng * (size_t)t->ngroups);
    t->groups = ng;
    t->cgroups = cap;
  }
  sgroup *gr = &t->groups[t->ngroups++];
  gr->nops = nops;
  gr->ncores = ncores;
  gr->ops = ob_arena_alloc(s->arena, sizeof(int) * (size_t)(nops ? nops : 1));
  gr->cores = ob_arena_alloc(s->arena, sizeof(int) * (size_t)(ncores ? ncores : 1));
  if (nops) memcpy(gr->ops, ops, sizeof(int) * (size_t)nops);
  if (ncores) memcpy(gr->cores, cores, sizeof(int) * (size_t)ncores);
  gr->seconds = -1;
  return OB_OK;
}

int ob_schedule_cores(const ob_schedule *s) { return s->cores; }
int ob_schedule_stage_count(const ob_schedule *s) { return s->n; }
ob_sched_stage_kind ob_schedule_stage_kind(const ob_schedule *s, int st) { return s->st[st].kind; }
int ob_schedule_group_count(const ob_schedule *s, int st) { return s->st[st].ngroups; }
double ob_schedule_stage_seconds(const ob_schedule *s, int st) { return s->st[st].seconds; }
double ob_schedule_group_seconds(const ob_schedule *s, int st, int g) { return s->st[st].groups[g].seconds; }
const char *ob_schedule_scheduler(const ob_schedule *s) { return s->scheduler; }
const char *ob_schedule_cost_name(const ob_schedule *s) { return s->cost_name; }

int ob_schedule_group_ops(const ob_schedule *s, int st, int g, const int **ops) {
  *ops = s->st[st].groups[g].ops;
  return s->st[st].groups[g].nops;
}

int ob_schedule_group_cores(const ob_schedule *s, int st, int g, const int **cores) {
  *cores = s->st[st].groups[g].cores;
  return s->st[st].groups[g].ncores;
}

double ob_schedule_seconds(const ob_schedule *s) {
  double t = 0;
  for (int i = 0; i < s->n; i++) {
    if (s->st[i].seconds < 0) return -1;
    t += s->st[i].seconds;
  }
  return t;
}

bool ob_schedule_same(const ob_schedule *a, const ob_schedule *b) {
  if (a->cores != b->cores || a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) {
    const sstage *x = &a->st[i], *y = &b->st[i];
    if (x->kind != y->kind || x->ngroups != y->ngroups) return false;
    for (int g = 0; g < x->ngroups; g++) {
      const sgroup *p = &x->groups[g], *q = &y->groups[g];
      if (p->nops != q->nops || p->ncores != q->ncores ||
          (p->nops && memcmp(p->ops, q->ops, sizeof(int) * (size_t)p->nops)) ||
          (p->ncores && memcmp(p->cores, q->cores, sizeof(int) * (size_t)p->ncores)))
        return false;
    }
  }
  return true;
}

/* ---- validation ------------------------------------------------------------------------------ */
typedef struct place {
  int stage, group, pos; /* -1: nowhere */
} place;

static const char *kind_word(ob_sched_stage_kind k) { return k == OB_SCHED_STAGE_MERGE ? "merge" : "parallel"; }

ob_status ob_schedule_validate(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, int machine_cores) {
  int n = u->n;
  ob_status st = OB_OK;
  place *pl = malloc(sizeof *pl * (size_t)(n ? n : 1));
  int *owner = calloc((size_t)(machine_cores > 0 ? machine_cores : 1), sizeof(int));
  if (!pl || !owner) {
    free(pl);
    free(owner);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) pl[i] = (place){-1, -1, -1};
  if (machine_cores < 1) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "a machine of %d cores", machine_cores);
    goto done;
  }
  if (s->n == 0) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "the schedule has no stages ('%s' has %d operators)", u->model, n);
    goto done;
  }
  /* placement, core sets */
  for (int i = 0; i < s->n && !st; i++) {
    const sstage *t = &s->st[i];
    memset(owner, 0, sizeof(int) * (size_t)machine_cores);
    if (t->ngroups == 0) st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d (%s) has no groups", i + 1, kind_word(t->kind));
    if (!st && t->kind == OB_SCHED_STAGE_MERGE && t->ngroups != 1)
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d (merge) has %d groups; a merge stage is one merged convolution", i + 1,
                   t->ngroups);
    for (int g = 0; g < t->ngroups && !st; g++) {
      const sgroup *gr = &t->groups[g];
      const char *first = gr->nops > 0 && gr->ops[0] >= 0 && gr->ops[0] < n ? u->u[gr->ops[0]].name : "?";
      if (gr->nops == 0) {
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d has no operators", i + 1, g + 1);
        break;
      }
      if (gr->ncores == 0) {
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d (operator '%s') has no cores", i + 1, g + 1, first);
        break;
      }
      for (int c = 0; c < gr->ncores && !st; c++) {
        int core = gr->cores[c];
        if (core < 0 || core >= machine_cores)
          st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "stage %d, group %d (operator '%s'): core %d is beyond the machine's %d cores (0-%d)", i + 1, g + 1,
                       first, core, machine_cores, machine_cores - 1);
        else if (owner[core] == g + 1)
          st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d (operator '%s') lists core %d twice", i + 1, g + 1, first,
                       core);
        else if (owner[core]) {
          const sgroup *o = &t->groups[owner[core] - 1];
          st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "stage %d: group %d (operator '%s') and group %d (operator '%s') both hold core %d: the core sets of "
                       "a stage's groups must not overlap",
                       i + 1, owner[core], u->u[o->ops[0]].name, g + 1, first, core);
        } else
          owner[core] = g + 1;
      }
      for (int k = 0; k < gr->nops && !st; k++) {
        int op = gr->ops[k];
        if (op < 0 || op >= n) {
          st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d: operator %d is not one of '%s''s %d", i + 1, g + 1, op,
                       u->model, n);
        } else if (pl[op].stage >= 0) {
          st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d: operator '%s' is scheduled twice (already in stage %d)",
                       i + 1, g + 1, u->u[op].name, pl[op].stage + 1);
        } else {
          pl[op] = (place){i, g, k};
        }
      }
    }
    if (!st && t->kind == OB_SCHED_STAGE_MERGE) {
      const sgroup *gr = &t->groups[0];
      if (gr->nops < 2)
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d (merge): operator '%s' has nothing to merge with", i + 1,
                     u->u[gr->ops[0]].name);
      for (int k = 0; k < gr->nops && !st; k++) {
        const sunit *a = &u->u[gr->ops[0]], *b = &u->u[gr->ops[k]];
        if (b->merge_class < 0 || b->merge_class != a->merge_class)
          st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "stage %d (merge): operators '%s' and '%s' cannot merge (merging needs plain convolutions reading "
                       "the same input with the same kernel size, strides, pads and activation)",
                       i + 1, a->name, b->name);
      }
    }
  }
  /* dependencies */
  for (int i = 0; i < s->n && !st; i++) {
    const sstage *t = &s->st[i];
    for (int g = 0; g < t->ngroups && !st; g++) {
      const sgroup *gr = &t->groups[g];
      for (int k = 0; k < gr->nops && !st; k++) {
        const sunit *x = &u->u[gr->ops[k]];
        for (int j = 0; j < x->npred && !st; j++) {
          int p = x->preds[j];
          place q = pl[p];
          if (q.stage < 0) continue; /* reported below as missing */
          if (q.stage < i) continue;
          if (q.stage == i && q.group == g && q.pos < k && t->kind == OB_SCHED_STAGE_PARALLEL) continue;
          if (q.stage > i)
            st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d: operator '%s' runs before its input '%s' (stage %d)",
                         i + 1, g + 1, x->name, u->u[p].name, q.stage + 1);
          else if (q.group != g)
            st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                         "stage %d: operator '%s' (group %d) reads '%s', which group %d of the same stage computes at "
                         "the same time",
                         i + 1, x->name, g + 1, u->u[p].name, q.group + 1);
          else if (t->kind == OB_SCHED_STAGE_MERGE)
            st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d (merge): operator '%s' reads '%s', merged with it", i + 1,
                         x->name, u->u[p].name);
          else
            st = ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d, group %d: operator '%s' comes before its input '%s' in the group",
                         i + 1, g + 1, x->name, u->u[p].name);
        }
      }
    }
  }
  /* missing units: name the stage that needed one, if any */
  for (int i = 0; i < n && !st; i++) {
    if (pl[i].stage >= 0) continue;
    int reader = -1;
    for (int j = i + 1; j < n && reader < 0; j++)
      for (int k = 0; k < u->u[j].npred; k++)
        if (u->u[j].preds[k] == i && pl[j].stage >= 0) reader = j;
    if (reader >= 0)
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "operator '%s' is in no stage, but stage %d runs '%s', which reads it",
                   u->u[i].name, pl[reader].stage + 1, u->u[reader].name);
    else
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "operator '%s' is in no stage of the %d", u->u[i].name, s->n);
  }
done:
  free(pl);
  free(owner);
  return st;
}

/* ---- JSON ------------------------------------------------------------------------------------ */
/* A double with every digit (cJSON's own printing rounds to 15 digits when
 * that is close enough, so a file read back would not print the same). */
static void add_seconds(cJSON *o, const char *name, double v) {
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", v);
  cJSON_AddItemToObject(o, name, cJSON_CreateRaw(buf));
}

static cJSON *int_array(const int *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
  return a;
}

ob_status ob_schedule_to_json(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_str *out) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  cJSON_AddStringToObject(j, "format", "opbench-schedule");
  cJSON_AddNumberToObject(j, "version", 1);
  cJSON_AddStringToObject(j, "model", u->model);
  cJSON_AddNumberToObject(j, "units", u->n);
  cJSON_AddNumberToObject(j, "cores", s->cores);
  cJSON_AddStringToObject(j, "scheduler", s->scheduler);
  if (s->cost_name[0]) {
    cJSON_AddStringToObject(j, "cost", s->cost_name);
    cJSON_AddBoolToObject(j, "predicted", s->predicted);
  }
  double total = ob_schedule_seconds(s);
  if (total >= 0) add_seconds(j, "seconds", total);
  cJSON *stages = cJSON_AddArrayToObject(j, "stages");
  for (int i = 0; i < s->n; i++) {
    const sstage *t = &s->st[i];
    cJSON *js = cJSON_CreateObject();
    cJSON_AddStringToObject(js, "kind", kind_word(t->kind));
    if (t->seconds >= 0) add_seconds(js, "seconds", t->seconds);
    if (t->kind == OB_SCHED_STAGE_MERGE && t->ngroups == 1) {
      cJSON_AddItemToObject(js, "cores", int_array(t->groups[0].cores, t->groups[0].ncores));
      cJSON *ops = cJSON_AddArrayToObject(js, "ops");
      for (int k = 0; k < t->groups[0].nops; k++) cJSON_AddItemToArray(ops, cJSON_CreateString(u->u[t->groups[0].ops[k]].name));
    } else {
      cJSON *gs = cJSON_AddArrayToObject(js, "groups");
      for (int g = 0; g < t->ngroups; g++) {
        const sgroup *gr = &t->groups[g];
        cJSON *jg = cJSON_CreateObject();
        cJSON_AddItemToObject(jg, "cores", int_array(gr->cores, gr->ncores));
        cJSON *ops = cJSON_AddArrayToObject(jg, "ops");
        for (int k = 0; k < gr->nops; k++) cJSON_AddItemToArray(ops, cJSON_CreateString(u->u[gr->ops[k]].name));
        if (gr->seconds >= 0) add_seconds(jg, "seconds", gr->seconds);
        cJSON_AddItemToArray(gs, jg);
      }
    }
    cJSON_AddItemToArray(stages, js);
  }
  char *txt = cJSON_Print(j);
  cJSON_Delete(j);
  if (!txt) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  ob_str_append(out, txt);
  ob_str_append(out, "\n");
  free(txt);
  return OB_OK;
}

#define JSON_MAX_CORES 65536

/* Integers of a JSON array into v (arena); false when it is not one. */
static bool ints_of(const cJSON *a, ob_arena *ar, int **v, int *n) {
  if (!cJSON_IsArray(a)) return false;
  int k = cJSON_GetArraySize(a);
  *v = ob_arena_alloc(ar, sizeof(int) * (size_t)(k ? k : 1));
  *n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    /* range first: converting an out-of-range double to int is undefined */
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= -1 && e->valuedouble <= JSON_MAX_CORES) ||
        e->valuedouble != (double)(int)e->valuedouble)
      return false;
    (*v)[(*n)++] = (int)e->valuedouble;
  }
  return true;
}

/* The units named in a JSON array of strings. */
static ob_status ops_of(ob_ctx *ctx, const ob_sched_units *u, const cJSON *a, ob_arena *ar, const char *what, int stage,
                        int group, const char *file_model, int **v, int *n) {
  char where[64];
  if (group >= 0) snprintf(where, sizeof where, "stage %d, group %d", stage, group);
  else snprintf(where, sizeof where, "stage %d", stage);
  if (!cJSON_IsArray(a)) return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: %s: \"ops\" must be an array of operator names", what, where);
  int k = cJSON_GetArraySize(a);
  *v = ob_arena_alloc(ar, sizeof(int) * (size_t)(k ? k : 1));
  *n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsString(e)) return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: %s: an operator name must be a string", what, where);
    int id = ob_sched_unit_find(u, e->valuestring);
    if (id < 0) {
      if (file_model && strcmp(file_model, u->model))
        return ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "%s: %s: operator '%s' is not an operator of '%s' (the file is a schedule for '%s')", what, where,
                       e->valuestring, u->model, file_model);
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: %s: operator '%s' is not an operator of '%s' (after the passes)", what,
                     where, e->valuestring, u->model);
    }
    (*v)[(*n)++] = id;
  }
  return OB_OK;
}

ob_status ob_schedule_from_json(ob_ctx *ctx, const ob_sched_units *u, const char *text, const char *what,
                                int machine_cores, ob_schedule **out) {
  *out = NULL;
  if (!what) what = "schedule";
  cJSON *j = cJSON_Parse(text);
  ob_schedule *s = NULL;
  ob_status st = OB_OK;
  if (!j) {
    const char *at = cJSON_GetErrorPtr();
    int line = 1;
    for (const char *p = text; at && p < at && *p; p++) line += *p == '\n';
    return ob_fail(ctx, OB_ERR_PARSE, "%s: not JSON (line %d)", what, line);
  }
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format"), *model = cJSON_GetObjectItemCaseSensitive(j, "model");
  const cJSON *cores = cJSON_GetObjectItemCaseSensitive(j, "cores"), *stages = cJSON_GetObjectItemCaseSensitive(j, "stages");
  const cJSON *sch = cJSON_GetObjectItemCaseSensitive(j, "scheduler");
  const char *file_model = cJSON_IsString(model) ? model->valuestring : NULL;
  if (!cJSON_IsObject(j) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "opbench-schedule")) {
    st = ob_fail(ctx, OB_ERR_PARSE, "%s: not an opbench schedule (no \"format\": \"opbench-schedule\")", what);
    goto done;
  }
  if (!cJSON_IsArray(stages)) {
    st = ob_fail(ctx, OB_ERR_PARSE, "%s: \"stages\" must be an array", what);
    goto done;
  }
  int planned = machine_cores;
  if (cores) {
    if (!cJSON_IsNumber(cores) || !(cores->valuedouble >= 1 && cores->valuedouble <= JSON_MAX_CORES) ||
        cores->valuedouble != (double)(int)cores->valuedouble) {
      st = ob_fail(ctx, OB_ERR_PARSE, "%s: \"cores\" must be a whole number of cores", what);
      goto done;
    }
    planned = (int)cores->valuedouble;
  }
  if (planned > machine_cores) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: the schedule is for %d cores; this machine (or --cores) has %d", what, planned,
                 machine_cores);
    goto done;
  }
  if ((st = ob_schedule_new(ctx, planned, &s))) goto done;
  snprintf(s->scheduler, sizeof s->scheduler, "%s", cJSON_IsString(sch) ? sch->valuestring : "given");
  const cJSON *cn = cJSON_GetObjectItemCaseSensitive(j, "cost");
  if (cJSON_IsString(cn)) {
    snprintf(s->cost_name, sizeof s->cost_name, "%s", cn->valuestring);
    s->predicted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "predicted"));
  }
  int i = 0;
  const cJSON *js;
  cJSON_ArrayForEach(js, stages) {
    i++;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(js, "kind");
    bool merge = cJSON_IsString(kind) && !strcmp(kind->valuestring, "merge");
    if (!cJSON_IsObject(js) || !cJSON_IsString(kind) || (!merge && strcmp(kind->valuestring, "parallel"))) {
      st = ob_fail(ctx, OB_ERR_PARSE, "%s: stage %d: \"kind\" must be \"parallel\" or \"merge\"", what, i);
      break;
    }
    if ((st = ob_schedule_add_stage(s, merge ? OB_SCHED_STAGE_MERGE : OB_SCHED_STAGE_PARALLEL))) break;
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(js, "seconds");
    if (cJSON_IsNumber(sec) && sec->valuedouble >= 0) s->st[s->n - 1].seconds = sec->valuedouble;
    if (merge) {
      int *ops = NULL, *cs = NULL, nops = 0, ncs = 0;
      if ((st = ops_of(ctx, u, cJSON_GetObjectItemCaseSensitive(js, "ops"), s->arena, what, i, -1, file_model, &ops, &nops)))
        break;
      if (!ints_of(cJSON_GetObjectItemCaseSensitive(js, "cores"), s->arena, &cs, &ncs)) {
        st = ob_fail(ctx, OB_ERR_PARSE, "%s: stage %d: \"cores\" must be an array of core numbers", what, i);
        break;
      }
      if ((st = ob_schedule_add_group(s, nops, ops, ncs, cs))) break;
      continue;
    }
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(js, "groups"), *jg;
    if (!cJSON_IsArray(groups)) {
      st = ob_fail(ctx, OB_ERR_PARSE, "%s: stage %d: \"groups\" must be an array", what, i);
      break;
    }
    int g = 0;
    cJSON_ArrayForEach(jg, groups) {
      g++;
      int *ops = NULL, *cs = NULL, nops = 0, ncs = 0;
      if (!cJSON_IsObject(jg)) {
        st = ob_fail(ctx, OB_ERR_PARSE, "%s: stage %d, group %d: not an object", what, i, g);
        break;
      }
      if ((st = ops_of(ctx, u, cJSON_GetObjectItemCaseSensitive(jg, "ops"), s->arena, what, i, g, file_model, &ops, &nops)))
        break;
      if (!ints_of(cJSON_GetObjectItemCaseSensitive(jg, "cores"), s->arena, &cs, &ncs)) {
        st = ob_fail(ctx, OB_ERR_PARSE, "%s: stage %d, group %d: \"cores\" must be an array of core numbers", what, i, g);
        break;
      }
      if ((st = ob_schedule_add_group(s, nops, ops, ncs, cs))) break;
      const cJSON *gs = cJSON_GetObjectItemCaseSensitive(jg, "seconds");
      if (cJSON_IsNumber(gs) && gs->valuedouble >= 0) s->st[s->n - 1].groups[g - 1].seconds = gs->valuedouble;
    }
    if (st) break;
  }
  if (!st) {
    st = ob_schedule_validate(ctx, u, s, machine_cores);
    if (st && file_model && strcmp(file_model, u->model))
      ob_fail_prefix(ctx, "%s (a schedule for '%s', not '%s')", what, file_model, u->model);
    else if (st)
      ob_fail_prefix(ctx, "%s", what);
  }
done:
  cJSON_Delete(j);
  if (st) {
    ob_schedule_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

ob_status ob_schedule_read(ob_ctx *ctx, const ob_sched_units *u, const char *path, int machine_cores, ob_schedule **out) {
  *out = NULL;
  char *text = NULL;
  ob_read_limits lim = {64 << 20, 64 << 20, 0};
  ob_status st = ob_read_text(ctx, path, "schedule", &lim, &text, NULL);
  if (st) return st;
  st = ob_schedule_from_json(ctx, u, text, path, machine_cores, out);
  free(text);
  return st;
}

ob_status ob_schedule_write(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, const char *path) {
  ob_str js = {0};
  ob_status st = ob_schedule_to_json(ctx, u, s, &js);
  if (st) return st;
  ob_out o;
  st = ob_out_open(ctx, path, NULL, 0, &o);
  if (!st) {
    bool ok = fwrite(js.data, 1, js.len, o.f) == js.len;
    st = ob_out_close(ctx, &o, ok);
    if (!st && !ok) st = ob_fail(ctx, OB_ERR_IO, "%s: write failed", path);
  }
  ob_str_free(&js);
  return st;
}

/* ---- graph rewrite ----------------------------------------------------------------------------- */
static int node_by_name(const ob_graph *g, const char *name) {
  for (int i = 0; i < ob_graph_node_count(g); i++)
    if (!ob_graph_node_dead(g, i) && !strcmp(ob_graph_node_name(g, i), name)) return i;
  return -1;
}

ob_status ob_schedule_apply_merges(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, ob_graph *g) {
  for (int i = 0; i < s->n; i++) {
    const sstage *t = &s->st[i];
    if (t->kind != OB_SCHED_STAGE_MERGE) continue;
    const sgroup *gr = &t->groups[0];
    int nodes[64];
    if (gr->nops > 64) return ob_fail(ctx, OB_ERR_UNSUPPORTED, "stage %d merges %d convolutions (at most 64)", i + 1, gr->nops);
    for (int k = 0; k < gr->nops; k++) {
      /* by name: node ids move as merges insert nodes */
      nodes[k] = node_by_name(g, u->u[gr->ops[k]].name);
      if (nodes[k] < 0)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "stage %d: the graph has no node '%s'", i + 1, u->u[gr->ops[k]].name);
    }
    ob_status st = ob_graph_merge_convs(ctx, g, gr->nops, nodes, NULL);
    if (st) {
      ob_fail_prefix(ctx, "stage %d (merge)", i + 1);
      return st;
    }
  }
  return OB_OK;
}
