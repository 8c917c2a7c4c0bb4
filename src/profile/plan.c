/* plan.c: a sweep turned into points. The size grid is parsed and applied
 * to each workload (every shape validated, the first impossible one named),
 * the base config of each task found (the database's fastest, else the
 * template's default) and its knob variants chosen, the resource settings
 * checked against the machine, and the co-run and cache-pressure points
 * placed on cores (or skipped, counted, with the reason). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile_impl.h"

#define PLAN_MAX_POINTS 1000000
#define GRID_MAX_VALUES 4096

const char *ob_corun_mode_name(ob_corun_mode m) {
  switch (m) {
  case OB_CORUN_STREAM: return "stream";
  case OB_CORUN_FULL: return "full";
  default: return "";
  }
}

void ob_profile_cores_text(const int *cores, int n, char *buf, size_t cap) {
  size_t off = 0;
  if (cap) buf[0] = '\0';
  for (int i = 0; i < n && off + 12 < cap; i++)
    off += (size_t)snprintf(buf + off, cap - off, "%s%d", i ? "," : "", cores[i]);
}

/* ---- workloads from text ------------------------------------------------------------ */

ob_status ob_profile_parse_workload(ob_ctx *ctx, const char *text, ob_workload *out) {
  const char *colon = text ? strchr(text, ':') : NULL;
  if (!colon || colon == text)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s': expected OP:SHAPE, e.g. dense:M=1,N=1000,K=512",
                   text ? text : "");
  char op[32];
  size_t ol = (size_t)(colon - text);
  if (ol >= sizeof op) return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s': operator name too long", text);
  memcpy(op, text, ol);
  op[ol] = '\0';
  /* the operator's own attributes go to ob_workload_parse; the short forms
   * (stride=, pad=, dilation=) are set afterwards */
  char plain[512], alias[256];
  size_t pl = 0, al = 0;
  const char *p = colon + 1;
  if (strlen(p) >= sizeof plain) return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s': shape too long", text);
  while (*p) {
    size_t n = strcspn(p, ",");
    bool is_alias = (n > 7 && !strncmp(p, "stride=", 7)) || (n > 4 && !strncmp(p, "pad=", 4)) ||
                    (n > 9 && !strncmp(p, "dilation=", 9));
    if (is_alias) al += (size_t)snprintf(alias + al, sizeof alias - al, "%s%.*s", al ? "," : "", (int)n, p);
    else pl += (size_t)snprintf(plain + pl, sizeof plain - pl, "%s%.*s", pl ? "," : "", (int)n, p);
    if (al >= sizeof alias || pl >= sizeof plain)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s': shape too long", text);
    p += n;
    if (*p == ',') p++;
  }
  if (pl == 0) plain[0] = '\0';
  ob_status st = ob_workload_parse(ctx, op, plain, out);
  if (st) {
    if (ob_op_exists(op)) ob_fail_prefix(ctx, "'%s'", text);
    return st;
  }
  for (char *q = al ? alias : NULL; q && *q;) {
    char *comma = strchr(q, ',');
    if (comma) *comma = '\0';
    char *eq = strchr(q, '=');
    char *end = NULL;
    long long v = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || *end) return ob_fail(ctx, OB_ERR_INVALID_ARG, "'%s': '%s' needs an integer", text, q);
    *eq = '\0';
    if ((st = ob_workload_set(ctx, out, q, v))) {
      ob_fail_prefix(ctx, "'%s'", text);
      return st;
    }
    q = comma ? comma + 1 : NULL;
  }
  st = ob_workload_validate(ctx, out);
  if (st) ob_fail_prefix(ctx, "'%s'", text);
  return st;
}

/* ---- the size grid -------------------------------------------------------------------- */

typedef struct grid_dim {
  char name[16];
  int n;
  int64_t *v;
} grid_dim;

static void grid_free(grid_dim *d, int n) {
  for (int i = 0; i < n; i++) free(d[i].v);
  free(d);
}

static ob_status grid_value(ob_ctx *ctx, const char *item, const char *text, int64_t *v) {
  char *end = NULL;
  long long x = strtoll(text, &end, 10);
  if (end == text || *end)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s': '%s' is not an integer", item, text);
  *v = x;
  return OB_OK;
}

/* "H=7:224:x2" -> 7, 14, 28, ... 224; "H=7:56:7" or "+7" adds; "N=1/2/4" a
 * list; "H=14" one value. */
static ob_status parse_dim(ob_ctx *ctx, char *item, grid_dim *d) {
  char *eq = strchr(item, '=');
  if (!eq || eq == item || (size_t)(eq - item) >= sizeof d->name)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s': expected NAME=LO:HI:STEP, NAME=V1/V2 or NAME=V", item);
  snprintf(d->name, sizeof d->name, "%.*s", (int)(eq - item), item);
  char *spec = eq + 1;
  d->v = malloc(GRID_MAX_VALUES * sizeof *d->v);
  if (!d->v) return ob_fail(ctx, OB_ERR_NOMEM, "--sizes: out of memory");
  ob_status st = OB_OK;
  char tmp[128];
  snprintf(tmp, sizeof tmp, "%s", spec);
  if (strchr(tmp, ':')) {
    char *a = tmp, *b = strchr(a, ':');
    *b++ = '\0';
    char *c = strchr(b, ':');
    if (!c) return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s': a range needs LO:HI:STEP (xF or +S)", item);
    *c++ = '\0';
    int64_t lo = 0, hi = 0, step = 0;
    bool mul = *c == 'x' || *c == '*';
    if ((st = grid_value(ctx, item, a, &lo)) || (st = grid_value(ctx, item, b, &hi)) ||
        (st = grid_value(ctx, item, c + (mul || *c == '+'), &step)))
      return st;
    if (lo > hi)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s' is empty: %lld is above %lld", item,
                     (long long)lo, (long long)hi);
    if (mul ? step < 2 : step < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s': the step %s%lld never reaches %lld", item,
                     mul ? "x" : "+", (long long)step, (long long)hi);
    if (mul && lo < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s': a range multiplied from %lld never grows",
                     item, (long long)lo);
    for (int64_t x = lo; x <= hi;) {
      if (d->n == GRID_MAX_VALUES)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s' has more than %d values", item, GRID_MAX_VALUES);
      d->v[d->n++] = x;
      int64_t nx;
      if (mul ? !ob_mul_i64(x, step, &nx) : !ob_add_i64(x, step, &nx)) break;
      x = nx;
    }
  } else {
    for (char *q = tmp; q;) {
      char *slash = strchr(q, '/');
      if (slash) *slash = '\0';
      if (d->n == GRID_MAX_VALUES)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s' has more than %d values", item, GRID_MAX_VALUES);
      if ((st = grid_value(ctx, item, q, &d->v[d->n]))) return st;
      d->n++;
      q = slash ? slash + 1 : NULL;
    }
  }
  return OB_OK;
}

static ob_status parse_grid(ob_ctx *ctx, const char *text, grid_dim **out, int *n) {
  *out = NULL;
  *n = 0;
  char buf[1024];
  if (strlen(text) >= sizeof buf) return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: text too long");
  snprintf(buf, sizeof buf, "%s", text);
  int cap = 1;
  for (const char *p = buf; *p; p++) cap += *p == ',';
  grid_dim *d = calloc((size_t)cap, sizeof *d);
  if (!d) return ob_fail(ctx, OB_ERR_NOMEM, "--sizes: out of memory");
  int nd = 0;
  ob_status st = OB_OK;
  for (char *q = buf; q && !st;) {
    char *comma = strchr(q, ',');
    if (comma) *comma = '\0';
    if (!*q) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: '%s': an empty item", text);
      break;
    }
    st = parse_dim(ctx, q, &d[nd]);
    nd++;
    q = comma ? comma + 1 : NULL;
  }
  if (!st && nd == 0) st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: the grid is empty");
  if (st) {
    grid_free(d, nd);
    return st;
  }
  *out = d;
  *n = nd;
  return OB_OK;
}

/* ---- building the plan ---------------------------------------------------------------- */

void ob_profile_plan_free(ob_profile_plan *p) {
  if (!p) return;
  for (int i = 0; i < p->nw; i++) {
    ob_task_free(p->w[i].task);
    free(p->w[i].cfg);
  }
  free(p->w);
  free(p->res);
  free(p->pt);
  free(p);
}

int ob_profile_plan_count(const ob_profile_plan *p) { return p->npt; }
int ob_profile_plan_workloads(const ob_profile_plan *p) { return p->nw; }
int ob_profile_plan_skipped(const ob_profile_plan *p, const char **why) {
  if (why) *why = p->why;
  return p->skipped;
}

static ob_status add_workload(ob_profile_plan *p, const ob_workload *wl, bool size_variant,
                              bool companion, int *index) {
  char key[256];
  ob_workload_key(wl, key, sizeof key);
  for (int i = 0; i < p->nw; i++)
    if (!strcmp(p->w[i].key, key)) {
      p->w[i].companion = p->w[i].companion && companion;
      *index = i;
      return OB_OK;
    }
  pwl *nw = realloc(p->w, (size_t)(p->nw + 1) * sizeof *nw);
  if (!nw) return ob_fail(p->ctx, OB_ERR_NOMEM, "profile: out of memory");
  p->w = nw;
  pwl *w = &p->w[p->nw];
  memset(w, 0, sizeof *w);
  w->wl = *wl;
  snprintf(w->key, sizeof w->key, "%s", key);
  w->size_variant = size_variant;
  w->companion = companion;
  *index = p->nw++;
  return OB_OK;
}

static ob_status add_point(ob_profile_plan *p, const ppoint *pt) {
  if (p->npt >= PLAN_MAX_POINTS)
    return ob_fail(p->ctx, OB_ERR_INVALID_ARG, "profile: the sweep has more than %d points; narrow it",
                   PLAN_MAX_POINTS);
  if (p->npt == p->cpt) {
    int nc = p->cpt ? p->cpt * 2 : 64;
    ppoint *np = realloc(p->pt, (size_t)nc * sizeof *np);
    if (!np) return ob_fail(p->ctx, OB_ERR_NOMEM, "profile: out of memory");
    p->pt = np;
    p->cpt = nc;
  }
  p->pt[p->npt++] = *pt;
  return OB_OK;
}

static void skip(ob_profile_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void skip(ob_profile_plan *p, const char *fmt, ...) {
  if (p->skipped++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
  }
}

static void entity_text(const ob_space *s, int k, int choice, char *buf, size_t cap) {
  int64_t v[OB_MAX_AXES + OB_MAX_SPLIT];
  int n = ob_space_entity(s, k, choice, v, (int)(sizeof v / sizeof v[0]));
  if (ob_space_knob_kind(s, k) == OB_KNOB_OTHER && n == 1) {
    snprintf(buf, cap, "%lld", (long long)v[0]);
    return;
  }
  size_t off = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < n && off < cap; i++)
    off += (size_t)snprintf(buf + off, cap - off, "%s%lld", i ? "," : "", (long long)v[i]);
  if (off < cap) snprintf(buf + off, cap - off, "]");
}

/* The configs of workload w: its base config, then the knob variants. */
static ob_status choose_configs(ob_profile_plan *p, pwl *w, const ob_profile_sweep *s) {
  const ob_space *sp = ob_task_space(w->task);
  ob_config base = ob_task_default_config(w->task);
  if (s->db && s->host) {
    char tstr[192];
    snprintf(tstr, sizeof tstr, "%s", ob_target_str(p->t));
    ob_db_key key = {.host = s->host, .workload = w->key, .target = tstr,
                     .tmpl = ob_task_template(w->task)};
    ob_db_records *best = NULL;
    ob_status st = ob_db_top_k(s->db, &key, 1, &best);
    if (st) return st;
    if (best->n > 0 && ob_space_is_valid(sp, best->rec[0].config_index)) {
      ob_config c;
      if (ob_space_get(p->ctx, sp, best->rec[0].config_index, &c) == OB_OK) {
        base = c;
        w->base_from_db = true;
      }
    }
    ob_db_records_free(best);
    ob_ctx_clear_error(p->ctx);
  }
  int want = 1;
  if (!w->companion && s->knobs != OB_KNOBS_BASE) {
    if (s->knob_count > 0) want += s->knob_count;
    else if (s->knobs == OB_KNOBS_RANDOM) want += 10;
    else {
      for (int k = 0; k < ob_space_num_knobs(sp); k++) want += ob_space_knob_len(sp, k) - 1;
    }
  }
  if (want > 100000) want = 100000;
  w->cfg = calloc((size_t)want, sizeof *w->cfg);
  if (!w->cfg) return ob_fail(p->ctx, OB_ERR_NOMEM, "profile: out of memory");
  w->cfg[0].index = base.index;
  w->ncfg = 1;
  if (w->companion || s->knobs == OB_KNOBS_BASE) return OB_OK;
  int nk = ob_space_num_knobs(sp);
  if (s->knobs == OB_KNOBS_NEIGHBOURS) {
    /* nearest entities first, round robin over the knobs */
    int maxd = 0;
    for (int k = 0; k < nk; k++)
      if (ob_space_knob_len(sp, k) > maxd) maxd = ob_space_knob_len(sp, k);
    for (int d = 1; d < maxd && w->ncfg < want; d++)
      for (int sign = 1; sign >= -1 && w->ncfg < want; sign -= 2)
        for (int k = 0; k < nk && w->ncfg < want; k++) {
          int c = base.choice[k] + sign * d;
          if (c < 0 || c >= ob_space_knob_len(sp, k)) continue;
          int32_t choice[OB_MAX_KNOBS];
          memcpy(choice, base.choice, sizeof choice);
          choice[k] = c;
          uint64_t idx = ob_config_index_of(sp, choice);
          if (!ob_space_is_valid(sp, idx)) continue;
          pcfg *x = &w->cfg[w->ncfg++];
          x->index = idx;
          snprintf(x->knob, sizeof x->knob, "%s", ob_space_knob_name(sp, k));
          entity_text(sp, k, c, x->knob_value, sizeof x->knob_value);
        }
  } else {
    ob_rng rng = {s->seed ^ ob_hash64(w->key, strlen(w->key), 7)};
    uint64_t len = ob_space_len(sp);
    for (int tries = 0; w->ncfg < want && tries < want * 50; tries++) {
      uint64_t idx = ob_rng_next(&rng) % len;
      if (!ob_space_is_valid(sp, idx)) continue;
      bool dup = false;
      for (int i = 0; i < w->ncfg && !dup; i++) dup = w->cfg[i].index == idx;
      if (dup) continue;
      pcfg *x = &w->cfg[w->ncfg++];
      x->index = idx;
      snprintf(x->knob, sizeof x->knob, "random");
      snprintf(x->knob_value, sizeof x->knob_value, "%llu", (unsigned long long)idx);
    }
  }
  return OB_OK;
}

static const char *base_sweep(const ob_profile_plan *p, const pwl *w, const pres *r) {
  if (w->size_variant) return "sizes";
  if (r->explicit_set) return "cores";
  if (p->nres > 1) return "threads";
  return "base";
}

/* The partner's cores in a co-run point: the same set (full), or as many
 * cores outside the set (stream); false when the machine has too few. */
static bool place_partner(const ob_profile_plan *p, const pres *r, ob_corun_mode m, ppoint *pt) {
  pt->ncores_partner = r->n;
  if (m == OB_CORUN_FULL) {
    memcpy(pt->partner_cores, r->cores, (size_t)r->n * sizeof r->cores[0]);
    return true;
  }
  int got = 0;
  for (int c = 0; c < p->machine_cores && got < r->n; c++) {
    bool used = false;
    for (int i = 0; i < r->n && !used; i++) used = r->cores[i] == c;
    if (!used) pt->partner_cores[got++] = c;
  }
  return got == r->n;
}

static ob_status plan_workload(ob_profile_plan *p, const ob_profile_sweep *s, int wi, int nprofiled) {
  pwl *w = &p->w[wi];
  ob_status st = OB_OK;
  for (int c = 0; c < w->ncfg && !st; c++)
    for (int r = 0; r < p->nres && !st; r++) {
      ppoint pt = {.w = wi, .cfg = c, .res = r, .partner = -1,
                   .sweep = c ? "knobs" : base_sweep(p, w, &p->res[r])};
      st = add_point(p, &pt);
    }
  /* cache pressure: the base config beside a pressure thread on a free core */
  for (int r = 0; r < p->nres && !st; r++)
    for (int i = 0; i < s->npressure && !st; i++) {
      if (!(s->pressure_mib[i] > 0) || w->companion) continue;
      const pres *rs = &p->res[r];
      int free_core = -1;
      for (int c = 0; c < p->machine_cores && free_core < 0; c++) {
        bool used = false;
        for (int k = 0; k < rs->n && !used; k++) used = rs->cores[k] == c;
        if (!used) free_core = c;
      }
      if (free_core < 0) {
        skip(p, "cache pressure at %d threads needs a core the operator does not use; this machine has %d",
             rs->n, p->machine_cores);
        continue;
      }
      ppoint pt = {.w = wi, .res = r, .partner = -1, .pressure_mib = s->pressure_mib[i],
                   .pressure_core = free_core, .sweep = "cache"};
      st = add_point(p, &pt);
    }
  /* co-run: with each partner, in each mode */
  unsigned modes = s->corun_modes ? s->corun_modes : (1u << OB_CORUN_STREAM) | (1u << OB_CORUN_FULL);
  for (int r = 0; r < p->nres && !st; r++)
    for (int q = 0; q < p->nw && !st; q++) {
      /* a profiled workload co-runs with the companions, and with every
       * profiled one when the matrix is asked; a companion with the profiled */
      bool pair = w->companion ? q < nprofiled && !p->w[q].companion
                               : p->w[q].companion || (s->corun_all && q < nprofiled);
      if (!pair) continue;
      for (int m = OB_CORUN_STREAM; m < OB_CORUN_MODE_COUNT && !st; m++) {
        if (!(modes & (1u << m))) continue;
        ppoint pt = {.w = wi, .res = r, .partner = q, .mode = (ob_corun_mode)m, .sweep = "corun"};
        if (!place_partner(p, &p->res[r], (ob_corun_mode)m, &pt)) {
          skip(p, "stream co-run at %d threads needs %d cores; this machine has %d", p->res[r].n,
               2 * p->res[r].n, p->machine_cores);
          continue;
        }
        st = add_point(p, &pt);
      }
    }
  return st;
}

ob_status ob_profile_plan_new(ob_ctx *ctx, const ob_target *t, const ob_profile_sweep *s,
                              ob_profile_plan **out) {
  OB_ASSERT(ctx && t && s && out);
  *out = NULL;
  ob_profile_plan *p = calloc(1, sizeof *p);
  if (!p) return ob_fail(ctx, OB_ERR_NOMEM, "profile: out of memory");
  p->ctx = ctx;
  p->t = t;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  p->machine_cores = online > 0 ? (int)(online < OB_PROFILE_MAX_CORES ? online : OB_PROFILE_MAX_CORES) : 1;
  ob_status st = OB_OK;
  grid_dim *grid = NULL;
  int ndim = 0;
  if (s->nworkloads < 1) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "profile: no workload to profile");
    goto fail;
  }

  /* resources */
  int nres = s->nthreads + s->ncore_sets;
  p->res = calloc((size_t)(nres ? nres : 1), sizeof *p->res);
  if (!p->res) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "profile: out of memory");
    goto fail;
  }
  for (int i = 0; i < s->nthreads; i++) {
    int n = s->threads[i];
    if (n < 1 || n > p->machine_cores) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--threads: %d threads on a machine of %d cores", n,
                   p->machine_cores);
      goto fail;
    }
    pres *r = &p->res[p->nres++];
    r->n = n;
    for (int c = 0; c < n; c++) r->cores[c] = c;
  }
  for (int i = 0; i < s->ncore_sets; i++) {
    int n = s->core_set_n[i];
    if (n < 1 || n > OB_PROFILE_MAX_CORES) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--cores: a core set of %d cores", n);
      goto fail;
    }
    pres *r = &p->res[p->nres];
    r->n = n;
    r->explicit_set = true;
    for (int c = 0; c < n; c++) {
      int core = s->core_sets[i][c];
      if (core < 0 || core >= p->machine_cores) {
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--cores: core %d does not exist (this machine has cores 0-%d)",
                     core, p->machine_cores - 1);
        goto fail;
      }
      for (int k = 0; k < c; k++)
        if (r->cores[k] == core) {
          st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--cores: core %d is listed twice in a set", core);
          goto fail;
        }
      r->cores[c] = core;
    }
    /* the same set as a thread count gave is one setting, not two */
    bool dup = false;
    for (int k = 0; k < p->nres && !dup; k++)
      dup = p->res[k].n == n && !memcmp(p->res[k].cores, r->cores, (size_t)n * sizeof(int));
    if (!dup) p->nres++;
  }
  if (p->nres == 0) {
    p->res[0].n = 1;
    p->nres = 1;
  }

  /* cache pressure: not more than the memory there is */
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  double mem_mib = pages > 0 && psz > 0 ? (double)pages * (double)psz / 1048576 : INFINITY;
  for (int i = 0; i < s->npressure; i++) {
    double m = s->pressure_mib[i];
    if (!(m >= 0) || !isfinite(m)) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--cache-pressure: %g MiB is not a size", m);
      goto fail;
    }
    if (m >= mem_mib) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "--cache-pressure: %g MiB is more than this machine's memory (%.0f MiB)", m, mem_mib);
      goto fail;
    }
  }

  /* workloads: each through the size grid */
  if (s->sizes && (st = parse_grid(ctx, s->sizes, &grid, &ndim))) goto fail;
  for (int i = 0; i < s->nworkloads && !st; i++) {
    if (!grid) {
      int idx;
      st = add_workload(p, &s->workloads[i], false, false, &idx);
      continue;
    }
    int64_t combos = 1;
    for (int d = 0; d < ndim; d++)
      if (!ob_mul_i64(combos, grid[d].n, &combos) || combos > PLAN_MAX_POINTS) {
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--sizes: the grid has more than %d shapes", PLAN_MAX_POINTS);
        goto fail;
      }
    for (int64_t c = 0; c < combos && !st; c++) {
      ob_workload wl = s->workloads[i];
      char what[256];
      size_t off = 0;
      int64_t rest = c;
      for (int d = 0; d < ndim && !st; d++) {
        int64_t v = grid[d].v[rest % grid[d].n];
        rest /= grid[d].n;
        off += (size_t)snprintf(what + off, sizeof what - (off < sizeof what ? off : sizeof what), "%s%s=%lld",
                                d ? "," : "", grid[d].name, (long long)v);
        if (off >= sizeof what) off = sizeof what - 1;
        st = ob_workload_set(ctx, &wl, grid[d].name, v);
      }
      if (!st) st = ob_workload_validate(ctx, &wl);
      if (st) {
        ob_fail_prefix(ctx, "--sizes: %s with %s is impossible", s->workloads[i].op, what);
        goto fail;
      }
      int idx;
      st = add_workload(p, &wl, true, false, &idx);
    }
  }
  if (st) goto fail;
  int nprofiled = p->nw;
  for (int i = 0; i < s->ncorun && !st; i++) {
    int idx;
    st = add_workload(p, &s->corun[i], false, true, &idx);
  }
  if (st) goto fail;
  bool any_corun = s->ncorun > 0 || s->corun_all;
  /* tasks and configs */
  for (int i = 0; i < p->nw; i++) {
    pwl *w = &p->w[i];
    if ((st = ob_task_new(ctx, &w->wl, s->tmpl, t, &w->task))) {
      ob_fail_prefix(ctx, "profile: %s", w->key);
      goto fail;
    }
    if ((st = choose_configs(p, w, s))) goto fail;
  }
  for (int i = 0; i < p->nw; i++) {
    if (p->w[i].companion && !any_corun) continue;
    if ((st = plan_workload(p, s, i, nprofiled))) goto fail;
  }
  if (p->npt == 0) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "profile: the sweep has no point to measure%s%s",
                 p->skipped ? ": " : "", p->skipped ? p->why : "");
    goto fail;
  }
  grid_free(grid, ndim);
  *out = p;
  return OB_OK;
fail:
  grid_free(grid, ndim);
  ob_profile_plan_free(p);
  return st;
}

void ob_profile_plan_print(const ob_profile_plan *p, FILE *f) {
  for (int i = 0; i < p->npt; i++) {
    const ppoint *pt = &p->pt[i];
    const pwl *w = &p->w[pt->w];
    const pres *r = &p->res[pt->res];
    char cores[256];
    ob_profile_cores_text(r->cores, r->n, cores, sizeof cores);
    fprintf(f, "%5d  %-8s %s  config %llu%s%s%s%s", i + 1, pt->sweep, w->key,
            (unsigned long long)w->cfg[pt->cfg].index, w->cfg[pt->cfg].knob[0] ? " (" : "",
            w->cfg[pt->cfg].knob, w->cfg[pt->cfg].knob[0] ? "=" : "",
            w->cfg[pt->cfg].knob[0] ? w->cfg[pt->cfg].knob_value : "");
    if (w->cfg[pt->cfg].knob[0]) fputc(')', f);
    fprintf(f, " threads=%d cores=%s", r->n, cores);
    if (pt->partner >= 0) {
      char pc[256];
      ob_profile_cores_text(pt->partner_cores, pt->ncores_partner, pc, sizeof pc);
      fprintf(f, "  with %s (%s, cores %s)", p->w[pt->partner].key, ob_corun_mode_name(pt->mode), pc);
    }
    if (pt->pressure_mib > 0)
      fprintf(f, "  cache pressure %g MiB on core %d", pt->pressure_mib, pt->pressure_core);
    fputc('\n', f);
  }
}
