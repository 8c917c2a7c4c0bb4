/* space.c: config spaces after AutoTVM's ConfigSpace: split / reorder /
 * annotate / plain knobs, a cross-knob filter, the mixed-radix index (first
 * knob fastest), default-config setters and the JSON entity form of logs.
 *
 * Ownership: the space owns every entity table (plain malloc, freed by
 * ob_space_free). Configs are values; strings returned by ob_config_str and
 * ob_config_to_json are malloc'd and belong to the caller.
 *
 * Entity order (kept identical to AutoTVM so indices in its logs mean the
 * same configs here):
 *   split    DFS over the factor list in ascending order where the innermost
 *            factor varies slowest: [-1,1,1], [-1,2,1], [-1,4,1], ...,
 *            [-1,1,2], ... (AutoTVM appends tmp_stack[::-1]).
 *   reorder  permutations in lexicographic order (itertools.permutations).
 *   annotate DFS where the first axis varies slowest, none < unroll < vec. */
#include "space/space_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_tag[OB_KNOB_KIND_COUNT] = {"sp", "re", "an", "ot"};
static const char *const ann_name[OB_ANN_COUNT] = {"none", "unroll", "vec"};

/* ---- small helpers ------------------------------------------------------- */

/* Records the message in ctx (when there is one) and returns st. */
__attribute__((format(printf, 3, 4))) static ob_status sp_fail(ob_ctx *ctx, ob_status st,
                                                               const char *fmt, ...) {
  if (!ctx) return st;
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&msg, fmt, ap);
  va_end(ap);
  if (n < 0) {
    ob_fail(ctx, st, "%s", fmt); /* out of memory: the bare template still says what */
  } else {
    ob_fail(ctx, st, "%s", msg);
    free(msg);
  }
  return st;
}

/* Product saturating at INT64_MAX (all inputs >= 1). */
static int64_t sat_mul(int64_t a, int64_t b) {
  if (a > INT64_MAX / b) return INT64_MAX;
  return a * b;
}

static int64_t inner_product(const int64_t *row, int width) {
  int64_t p = 1;
  for (int i = 1; i < width; i++) p = sat_mul(p, row[i]);
  return p;
}

static bool name_ok(const char *name) {
  if (!name || !name[0] || strlen(name) >= OB_KNOB_NAME_MAX) return false;
  for (const char *p = name; *p; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

/* Growable entity table used while a knob is being defined. */
typedef struct ent_buf {
  int64_t *v;
  size_t n, cap; /* in rows */
  int width;
  bool oom, too_many;
} ent_buf;

static void ent_push(ent_buf *b, const int64_t *row) {
  if (b->oom || b->too_many) return;
  if (b->n >= OB_KNOB_MAX_ENTITIES) {
    b->too_many = true;
    return;
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 16;
    int64_t *v = realloc(b->v, cap * (size_t)b->width * sizeof *v);
    if (!v) {
      b->oom = true;
      return;
    }
    b->v = v;
    b->cap = cap;
  }
  memcpy(b->v + b->n * (size_t)b->width, row, (size_t)b->width * sizeof *row);
  b->n++;
}

static bool ent_has(const ent_buf *b, const int64_t *row) {
  for (size_t i = 0; i < b->n; i++)
    if (!memcmp(b->v + i * (size_t)b->width, row, (size_t)b->width * sizeof *row)) return true;
  return false;
}

/* Checks the name and the knob count before any work is done. */
static ob_status knob_check_name(ob_space *s, const char *name) {
  if (!name_ok(name))
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                   "invalid knob name '%s' (want 1-%d of [A-Za-z0-9_.-])", name ? name : "(null)",
                   OB_KNOB_NAME_MAX - 1);
  if (ob_space_knob_find(s, name) >= 0)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "knob '%s' is defined twice", name);
  if (s->nknobs >= OB_MAX_KNOBS)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "knob '%s' exceeds the limit of %d knobs", name,
                   OB_MAX_KNOBS);
  return OB_OK;
}

/* Moves a finished entity table into the space as a new knob; frees the
 * table on failure. */
static ob_status knob_commit(ob_space *s, const char *name, ob_knob_kind kind, int policy,
                             int64_t extent, ent_buf *b, int n_old) {
  ob_status st = OB_OK;
  if (b->oom) {
    st = sp_fail(s->ctx, OB_ERR_NOMEM, "knob '%s': out of memory", name);
    goto fail;
  }
  if (b->too_many) {
    st = sp_fail(s->ctx, OB_ERR_INVALID_ARG, "knob '%s' would have more than %d entities", name,
                 OB_KNOB_MAX_ENTITIES);
    goto fail;
  }
  if (b->n == 0) {
    st = sp_fail(s->ctx, OB_ERR_INVALID_ARG, "knob '%s' has no entity", name);
    goto fail;
  }
  if (n_old <= 0 || n_old > (int)b->n) n_old = (int)b->n;
  uint64_t grow = (uint64_t)b->n - (uint64_t)n_old + 1;
  if (s->len > UINT64_MAX / grow / (uint64_t)n_old) {
    st = sp_fail(s->ctx, OB_ERR_INVALID_ARG, "knob '%s' makes the space larger than 2^64 configs",
                 name);
    goto fail;
  }
  ob_knob *k = &s->knobs[s->nknobs];
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
  k->kind = kind;
  k->policy = policy;
  k->width = b->width;
  k->n = (int)b->n;
  k->vals = b->v;
  k->extent = extent;
  k->n_old = n_old;
  s->len *= grow * (uint64_t)n_old;
  s->old_len *= (uint64_t)n_old;
  s->nknobs++;
  b->v = NULL;
  return OB_OK;
fail:
  free(b->v);
  b->v = NULL;
  return st;
}

/* ---- space lifetime ------------------------------------------------------ */

ob_status ob_space_new(ob_ctx *ctx, ob_space **out) {
  OB_ASSERT(out);
  *out = NULL;
  ob_space *s = calloc(1, sizeof *s);
  if (!s) return sp_fail(ctx, OB_ERR_NOMEM, "config space: out of memory");
  s->ctx = ctx;
  s->len = 1;
  s->old_len = 1;
  *out = s;
  return OB_OK;
}

void ob_space_free(ob_space *s) {
  if (!s) return;
  for (int k = 0; k < s->nknobs; k++) free(s->knobs[k].vals);
  free(s);
}

/* ---- split --------------------------------------------------------------- */

typedef struct split_gen {
  ent_buf *b;
  const int64_t *factors;
  int nfactors;
  int64_t extent;
  bool no_tail;
  int ninner;
  int64_t tmp[OB_MAX_SPLIT];
} split_gen;

/* AutoTVM's _generate_space: position `now` of tmp_stack ranges over the
 * factor list; the entity is [-1] + reversed(tmp_stack). Factors are sorted,
 * so a product past the extent ends the loop early (same entities). */
static void split_dfs(split_gen *g, int now, int64_t prod) {
  if (g->b->oom || g->b->too_many) return;
  if (now == g->ninner) {
    if (g->extent % prod == 0 || (!g->no_tail && prod < g->extent)) {
      int64_t row[OB_MAX_SPLIT];
      row[0] = -1;
      for (int i = 0; i < g->ninner; i++) row[1 + i] = g->tmp[g->ninner - 1 - i];
      ent_push(g->b, row);
    }
    return;
  }
  for (int i = 0; i < g->nfactors; i++) {
    int64_t f = g->factors[i];
    if (f > g->extent / prod) break; /* prod * f > extent */
    g->tmp[now] = f;
    split_dfs(g, now + 1, prod * f);
  }
}

/* Ascending divisors of n. *out malloc'd. */
static int divisors(int64_t n, int64_t **out) {
  int cap = 64, cnt = 0, nhi = 0;
  int64_t *lo = malloc((size_t)cap * sizeof *lo), *hi = malloc((size_t)cap * sizeof *hi);
  if (!lo || !hi) goto oom;
  for (int64_t i = 1; i <= n / i; i++) {
    if (n % i) continue;
    if (cnt == cap || nhi == cap) {
      cap *= 2;
      int64_t *l2 = realloc(lo, (size_t)cap * sizeof *lo);
      if (!l2) goto oom;
      lo = l2;
      int64_t *h2 = realloc(hi, (size_t)cap * sizeof *hi);
      if (!h2) goto oom;
      hi = h2;
    }
    lo[cnt++] = i;
    if (i != n / i) hi[nhi++] = n / i;
  }
  int64_t *all = realloc(lo, (size_t)(cnt + nhi) * sizeof *lo);
  if (!all) goto oom;
  lo = all;
  for (int i = 0; i < nhi; i++) lo[cnt + i] = hi[nhi - 1 - i];
  free(hi);
  *out = lo;
  return cnt + nhi;
oom:
  free(lo);
  free(hi);
  *out = NULL;
  return -1;
}

static const char *const split_policy_name[OB_SPLIT_POLICY_COUNT] = {"factors", "power2",
                                                                     "verbose", "candidate"};

/* Appends the entities added since records were stored (opts->added) to
 * the policy's, then commits the knob with the old count (knob_commit). */
static ob_status split_commit(ob_space *s, const char *name, const ob_split_opts *opts,
                              int64_t extent, ent_buf *b) {
  int n_old = (int)b->n, n = opts->num_outputs;
  if (opts->nadded > 0 && !opts->added) {
    free(b->v);
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "split knob '%s': no added entities given", name);
  }
  for (int r = 0; r < opts->nadded; r++) {
    int64_t row[OB_MAX_SPLIT];
    const int64_t *src = opts->added + (size_t)r * (size_t)n;
    row[0] = -1;
    for (int i = 1; i < n; i++) {
      if (src[i] < 1) {
        free(b->v);
        return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                       "split knob '%s': added entity %d has factor %lld < 1", name, r,
                       (long long)src[i]);
      }
      row[i] = src[i];
    }
    if (!ent_has(b, row)) ent_push(b, row);
  }
  return knob_commit(s, name, OB_KNOB_SPLIT, opts->policy, extent, b, n_old);
}

ob_status ob_space_define_split(ob_space *s, const char *name, int64_t extent,
                                const ob_split_opts *opts) {
  OB_ASSERT(s);
  ob_status st = knob_check_name(s, name);
  if (st) return st;
  if (!opts || (unsigned)opts->policy >= OB_SPLIT_POLICY_COUNT)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "split knob '%s': missing or unknown policy", name);
  int n = opts->num_outputs;
  if (n < 2 || n > OB_MAX_SPLIT)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                   "split knob '%s': num_outputs %d is outside 2..%d", name, n, OB_MAX_SPLIT);
  if (extent < 1 || extent > OB_SPLIT_MAX_EXTENT)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                   "split knob '%s': extent %lld is outside 1..2^48", name, (long long)extent);
  if (opts->max_factor < 0)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "split knob '%s': max_factor %lld is negative",
                   name, (long long)opts->max_factor);

  ent_buf b = {.width = n};
  if (opts->policy == OB_SPLIT_CANDIDATE) {
    if (!opts->candidates || opts->ncandidates < 1)
      return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "split knob '%s': no candidates given", name);
    for (int r = 0; r < opts->ncandidates; r++) {
      int64_t row[OB_MAX_SPLIT];
      const int64_t *src = opts->candidates + (size_t)r * (size_t)n;
      row[0] = -1; /* the outer factor is always inferred */
      for (int i = 1; i < n; i++) {
        if (src[i] < 1) {
          free(b.v);
          return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                         "split knob '%s': candidate %d has factor %lld < 1", name, r,
                         (long long)src[i]);
        }
        row[i] = src[i];
      }
      if (ent_has(&b, row)) {
        free(b.v);
        return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "split knob '%s': candidate %d is a duplicate",
                       name, r);
      }
      ent_push(&b, row);
    }
    return split_commit(s, name, opts, extent, &b);
  }

  /* The factor list each inner position ranges over, ascending. */
  int64_t *div = NULL, pow2[64];
  int ndiv = 0, npow2 = 0;
  for (int64_t p = 1; p <= extent; p *= 2) pow2[npow2++] = p;
  if (opts->policy != OB_SPLIT_POWER2) {
    ndiv = divisors(extent, &div);
    if (ndiv < 0) return sp_fail(s->ctx, OB_ERR_NOMEM, "split knob '%s': out of memory", name);
  }
  int64_t *fac = malloc((size_t)(ndiv + npow2) * sizeof *fac);
  if (!fac) {
    free(div);
    return sp_fail(s->ctx, OB_ERR_NOMEM, "split knob '%s': out of memory", name);
  }
  int nfac = 0;
  if (opts->policy == OB_SPLIT_FACTORS) {
    memcpy(fac, div, (size_t)ndiv * sizeof *fac);
    nfac = ndiv;
  } else if (opts->policy == OB_SPLIT_POWER2) {
    memcpy(fac, pow2, (size_t)npow2 * sizeof *fac);
    nfac = npow2;
  } else { /* verbose: sorted union (AutoTVM's set union, ordered) */
    int i = 0, j = 0;
    while (i < ndiv || j < npow2) {
      int64_t v;
      if (j >= npow2 || (i < ndiv && div[i] < pow2[j])) v = div[i++];
      else if (i >= ndiv || pow2[j] < div[i]) v = pow2[j++];
      else v = div[i++], j++;
      fac[nfac++] = v;
    }
  }
  free(div);
  if (opts->max_factor > 0) {
    int m = 0;
    for (int i = 0; i < nfac; i++)
      if (fac[i] <= opts->max_factor) fac[m++] = fac[i];
    nfac = m;
  }

  split_gen g = {.b = &b,
                 .factors = fac,
                 .nfactors = nfac,
                 .extent = extent,
                 .no_tail = opts->policy == OB_SPLIT_FACTORS || opts->no_tail,
                 .ninner = n - 1};
  split_dfs(&g, 0, 1);
  free(fac);
  if (b.n == 0 && !b.oom && !b.too_many) {
    free(b.v);
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                   "split knob '%s' (policy %s, extent %lld, max_factor %lld) has no entity", name,
                   split_policy_name[opts->policy], (long long)extent,
                   (long long)opts->max_factor);
  }
  return split_commit(s, name, opts, extent, &b);
}

/* ---- reorder ------------------------------------------------------------- */

static bool next_perm(int64_t *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int64_t t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) {
    t = a[l];
    a[l] = a[r];
    a[r] = t;
  }
  return true;
}

ob_status ob_space_define_reorder(ob_space *s, const char *name, int naxes,
                                  ob_reorder_policy policy, const int *candidates,
                                  int ncandidates) {
  OB_ASSERT(s);
  ob_status st = knob_check_name(s, name);
  if (st) return st;
  if (naxes < 1 || naxes > OB_MAX_AXES)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "reorder knob '%s': naxes %d is outside 1..%d",
                   name, naxes, OB_MAX_AXES);
  if ((unsigned)policy >= OB_REORDER_POLICY_COUNT)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "reorder knob '%s': unknown policy %d", name,
                   (int)policy);
  ent_buf b = {.width = naxes};
  int64_t row[OB_MAX_AXES];
  for (int i = 0; i < naxes; i++) row[i] = i;
  if (policy == OB_REORDER_IDENTITY) {
    ent_push(&b, row);
  } else if (policy == OB_REORDER_ALL) {
    do ent_push(&b, row);
    while (next_perm(row, naxes));
  } else {
    if (!candidates || ncandidates < 1)
      return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "reorder knob '%s': no candidates given", name);
    for (int r = 0; r < ncandidates; r++) {
      bool seen[OB_MAX_AXES] = {false};
      for (int i = 0; i < naxes; i++) {
        int a = candidates[(size_t)r * (size_t)naxes + (size_t)i];
        if (a < 0 || a >= naxes || seen[a]) {
          free(b.v);
          return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                         "reorder knob '%s': candidate %d is not a permutation of 0..%d", name, r,
                         naxes - 1);
        }
        seen[a] = true;
        row[i] = a;
      }
      if (ent_has(&b, row)) {
        free(b.v);
        return sp_fail(s->ctx, OB_ERR_INVALID_ARG,
                       "reorder knob '%s': candidate %d is a duplicate", name, r);
      }
      ent_push(&b, row);
    }
  }
  return knob_commit(s, name, OB_KNOB_REORDER, policy, 0, &b, 0);
}

/* ---- annotate ------------------------------------------------------------ */

typedef struct ann_gen {
  ent_buf *b;
  int naxes;
  int nopt[OB_MAX_AXES];
  ob_ann opt[OB_MAX_AXES][OB_ANN_COUNT];
  int64_t tmp[OB_MAX_AXES];
} ann_gen;

static void ann_dfs(ann_gen *g, int now) {
  if (now == g->naxes) {
    ent_push(g->b, g->tmp);
    return;
  }
  for (int i = 0; i < g->nopt[now]; i++) {
    g->tmp[now] = g->opt[now][i];
    ann_dfs(g, now + 1);
  }
}

ob_status ob_space_define_annotate(ob_space *s, const char *name, int naxes,
                                   ob_annotate_policy policy) {
  OB_ASSERT(s);
  ob_status st = knob_check_name(s, name);
  if (st) return st;
  if (naxes < 1 || naxes > OB_MAX_AXES)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "annotate knob '%s': naxes %d is outside 1..%d",
                   name, naxes, OB_MAX_AXES);
  if ((unsigned)policy >= OB_ANNOTATE_POLICY_COUNT)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "annotate knob '%s': unknown policy %d", name,
                   (int)policy);
  ent_buf b = {.width = naxes};
  ann_gen g = {.b = &b, .naxes = naxes};
  for (int a = 0; a < naxes; a++) {
    bool last = a == naxes - 1;
    g.opt[a][g.nopt[a]++] = OB_ANN_NONE;
    if (policy != OB_ANNOTATE_TRY_VEC) g.opt[a][g.nopt[a]++] = OB_ANN_UNROLL;
    if (last && policy != OB_ANNOTATE_TRY_UNROLL) g.opt[a][g.nopt[a]++] = OB_ANN_VEC;
  }
  ann_dfs(&g, 0);
  return knob_commit(s, name, OB_KNOB_ANNOTATE, policy, 0, &b, 0);
}

/* ---- plain knob ---------------------------------------------------------- */

/* n_old: the values records knew (0: all of them). */
static ob_status define_other(ob_space *s, const char *name, const int64_t *values, int nvalues,
                              int n_old) {
  OB_ASSERT(s);
  ob_status st = knob_check_name(s, name);
  if (st) return st;
  if (!values || nvalues < 1)
    return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "knob '%s': no values given", name);
  ent_buf b = {.width = 1};
  for (int i = 0; i < nvalues; i++) {
    if (ent_has(&b, &values[i])) {
      free(b.v);
      return sp_fail(s->ctx, OB_ERR_INVALID_ARG, "knob '%s': value %lld is listed twice", name,
                     (long long)values[i]);
    }
    ent_push(&b, &values[i]);
  }
  return knob_commit(s, name, OB_KNOB_OTHER, 0, 0, &b, n_old);
}

ob_status ob_space_define_knob(ob_space *s, const char *name, const int64_t *values,
                               int nvalues) {
  return define_other(s, name, values, nvalues, 0);
}

ob_status ob_space_define_knob_added(ob_space *s, const char *name, const int64_t *values, int nvalues) {
  ob_status st = define_other(s, name, values, nvalues, 1);
  if (!st) s->knobs[s->nknobs - 1].added = true;
  return st;
}

void ob_space_set_filter(ob_space *s, ob_space_filter_fn fn, void *user) {
  OB_ASSERT(s);
  s->filter = fn;
  s->filter_user = user;
}

/* ---- queries ------------------------------------------------------------- */

uint64_t ob_space_len(const ob_space *s) {
  OB_ASSERT(s);
  return s->len;
}

int ob_space_num_knobs(const ob_space *s) {
  OB_ASSERT(s);
  return s->nknobs;
}

static const ob_knob *knob_at(const ob_space *s, int k) {
  OB_ASSERT(s && k >= 0 && k < s->nknobs);
  return &s->knobs[k];
}

const char *ob_space_knob_name(const ob_space *s, int k) { return knob_at(s, k)->name; }
ob_knob_kind ob_space_knob_kind(const ob_space *s, int k) { return knob_at(s, k)->kind; }
int ob_space_knob_len(const ob_space *s, int k) { return knob_at(s, k)->n; }

int ob_space_knob_find(const ob_space *s, const char *name) {
  OB_ASSERT(s);
  if (!name) return -1;
  for (int k = 0; k < s->nknobs; k++)
    if (!strcmp(s->knobs[k].name, name)) return k;
  return -1;
}

int ob_space_entity(const ob_space *s, int k, int choice, int64_t *vals, int cap) {
  const ob_knob *kn = knob_at(s, k);
  OB_ASSERT(choice >= 0 && choice < kn->n);
  OB_ASSERT(cap <= 0 || vals);
  const int64_t *row = ob_knob_row(kn, choice);
  for (int i = 0; i < kn->width && i < cap; i++) vals[i] = row[i];
  return kn->width;
}

/* ---- index <-> config ---------------------------------------------------- */

/* The index split in its old part (each knob's old entities) and its new
 * part (each knob's added ones, from 1; 0: the old part chooses), as the
 * header describes. Returns false for a hole: a knob whose new part names
 * an added entity while its old part names a non-first old one. */
static bool decode(const ob_space *s, uint64_t index, ob_config *c) {
  memset(c, 0, sizeof *c);
  c->space = s;
  c->index = index;
  uint64_t old = index % s->old_len, added = index / s->old_len;
  bool hole = false;
  for (int k = 0; k < s->nknobs; k++) {
    const ob_knob *kn = &s->knobs[k];
    uint64_t o = (uint64_t)kn->n_old, a = (uint64_t)(kn->n - kn->n_old) + 1;
    int32_t r = (int32_t)(old % o), q = (int32_t)(added % a);
    old /= o;
    added /= a;
    c->choice[k] = q ? kn->n_old + q - 1 : r;
    hole |= q && r;
  }
  return !hole;
}

void ob_space_decode(const ob_space *s, uint64_t index, ob_config *out) {
  OB_ASSERT(s && out && index < s->len);
  decode(s, index, out);
}

uint64_t ob_config_index_of(const ob_space *s, const int32_t *choice) {
  OB_ASSERT(s && (choice || s->nknobs == 0));
  uint64_t old = 0, added = 0, ro = 1, ra = 1;
  for (int k = 0; k < s->nknobs; k++) {
    const ob_knob *kn = &s->knobs[k];
    OB_ASSERT(choice[k] >= 0 && choice[k] < kn->n);
    bool is_new = choice[k] >= kn->n_old;
    old += (uint64_t)(is_new ? 0 : choice[k]) * ro;
    added += (uint64_t)(is_new ? choice[k] - kn->n_old + 1 : 0) * ra;
    ro *= (uint64_t)kn->n_old;
    ra *= (uint64_t)(kn->n - kn->n_old) + 1;
  }
  return old + added * s->old_len;
}

static bool passes_filter(const ob_space *s, const ob_config *c) {
  return !s->filter || s->filter(c, s->filter_user);
}

static ob_status filter_fail(ob_ctx *ctx, const ob_config *c) {
  char *str = ob_config_str(c);
  ob_status st = sp_fail(ctx, OB_ERR_OUT_OF_SPACE,
                         "config index %llu is rejected by the template's filter: %s",
                         (unsigned long long)c->index, str ? str : "?");
  free(str);
  return st;
}

ob_status ob_space_get(ob_ctx *ctx, const ob_space *s, uint64_t index, ob_config *out) {
  OB_ASSERT(s && out);
  if (index >= s->len)
    return sp_fail(ctx, OB_ERR_OUT_OF_SPACE, "config index %llu is outside the space of %llu configs",
                   (unsigned long long)index, (unsigned long long)s->len);
  ob_config c;
  if (!decode(s, index, &c))
    return sp_fail(ctx, OB_ERR_OUT_OF_SPACE,
                   "config index %llu names no config (a hole left by entities added to the space)",
                   (unsigned long long)index);
  if (!passes_filter(s, &c)) return filter_fail(ctx, &c);
  *out = c;
  return OB_OK;
}

bool ob_space_is_valid(const ob_space *s, uint64_t index) {
  OB_ASSERT(s);
  if (index >= s->len) return false;
  ob_config c;
  return decode(s, index, &c) && passes_filter(s, &c);
}

/* ---- accessors ----------------------------------------------------------- */

/* A template asking for a knob it never defined is a bug: say which, abort. */
static const ob_knob *cfg_knob(const ob_config *c, const char *name, ob_knob_kind kind,
                               int *kidx) {
  OB_ASSERT(c && c->space && name);
  int k = ob_space_knob_find(c->space, name);
  if (k < 0 || c->space->knobs[k].kind != kind)
    fprintf(stderr, "opbench: config has no %s knob '%s'\n", kind_tag[kind], name);
  OB_ASSERT(k >= 0);
  const ob_knob *kn = &c->space->knobs[k];
  OB_ASSERT(kn->kind == kind);
  OB_ASSERT(c->choice[k] >= 0 && c->choice[k] < kn->n);
  if (kidx) *kidx = k;
  return kn;
}

void ob_config_split(const ob_config *c, const char *name, int64_t *factors) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_SPLIT, &k);
  OB_ASSERT(factors);
  const int64_t *row = ob_knob_row(kn, c->choice[k]);
  int64_t prod = inner_product(row, kn->width);
  factors[0] = kn->extent / prod + (kn->extent % prod != 0);
  for (int i = 1; i < kn->width; i++) factors[i] = row[i];
}

int64_t ob_config_split_extent(const ob_config *c, const char *name) {
  int k;
  return cfg_knob(c, name, OB_KNOB_SPLIT, &k)->extent;
}

void ob_config_reorder(const ob_config *c, const char *name, int *perm) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_REORDER, &k);
  OB_ASSERT(perm);
  const int64_t *row = ob_knob_row(kn, c->choice[k]);
  for (int i = 0; i < kn->width; i++) perm[i] = (int)row[i];
}

void ob_config_annotate(const ob_config *c, const char *name, ob_ann *anns) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_ANNOTATE, &k);
  OB_ASSERT(anns);
  const int64_t *row = ob_knob_row(kn, c->choice[k]);
  for (int i = 0; i < kn->width; i++) anns[i] = (ob_ann)row[i];
}

int64_t ob_config_knob(const ob_config *c, const char *name) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_OTHER, &k);
  return ob_knob_row(kn, c->choice[k])[0];
}

/* ---- default-config building --------------------------------------------- */

ob_config ob_space_first(const ob_space *s) {
  OB_ASSERT(s);
  ob_config c;
  decode(s, 0, &c);
  return c;
}

static void set_choice(ob_config *c, int k, int choice) {
  c->choice[k] = choice;
  c->index = ob_config_index_of(c->space, c->choice);
}

/* Lexicographic order of inner split factors. */
static bool inner_less(const int64_t *a, const int64_t *b, int width) {
  for (int i = 1; i < width; i++)
    if (a[i] != b[i]) return a[i] < b[i];
  return false;
}

static uint64_t dist(int64_t a, int64_t b) {
  return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* Exact inner factors if present; else the closest inner product, ties to a
 * product that divides the extent, then the larger product, then the first
 * entity in lexicographic order of its inner factors. */
void ob_config_set_split(ob_config *c, const char *name, const int64_t *inner, int ninner) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_SPLIT, &k);
  OB_ASSERT(inner && ninner == kn->width - 1);
  int64_t target = 1;
  for (int i = 0; i < ninner; i++) {
    OB_ASSERT(inner[i] >= 1);
    target = sat_mul(target, inner[i]);
  }
  int best = -1;
  uint64_t bdist = 0;
  int64_t bprod = 0;
  bool bdiv = false;
  for (int e = 0; e < kn->n; e++) {
    const int64_t *row = ob_knob_row(kn, e);
    if (!memcmp(row + 1, inner, (size_t)ninner * sizeof *inner)) {
      best = e;
      break;
    }
    int64_t p = inner_product(row, kn->width);
    uint64_t d = dist(p, target);
    bool dv = kn->extent % p == 0;
    bool better;
    if (best < 0 || d != bdist) better = best < 0 || d < bdist;
    else if (dv != bdiv) better = dv;
    else if (p != bprod) better = p > bprod;
    else better = inner_less(row, ob_knob_row(kn, best), kn->width);
    if (better) {
      best = e;
      bdist = d;
      bprod = p;
      bdiv = dv;
    }
  }
  set_choice(c, k, best);
}

/* Exact value if present; else the closest, ties to the smaller value. */
void ob_config_set_knob(ob_config *c, const char *name, int64_t value) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_OTHER, &k);
  int best = 0;
  for (int e = 1; e < kn->n; e++) {
    int64_t v = kn->vals[e], bv = kn->vals[best];
    uint64_t d = dist(v, value), bd = dist(bv, value);
    if (d < bd || (d == bd && v < bv)) best = e;
  }
  set_choice(c, k, best);
}

void ob_config_set_reorder(ob_config *c, const char *name, const int *perm) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_REORDER, &k);
  OB_ASSERT(perm);
  for (int e = 0; e < kn->n; e++) {
    const int64_t *row = ob_knob_row(kn, e);
    int i = 0;
    while (i < kn->width && row[i] == perm[i]) i++;
    if (i == kn->width) {
      set_choice(c, k, e);
      return;
    }
  }
}

void ob_config_set_annotate(ob_config *c, const char *name, const ob_ann *anns) {
  int k;
  const ob_knob *kn = cfg_knob(c, name, OB_KNOB_ANNOTATE, &k);
  OB_ASSERT(anns);
  for (int e = 0; e < kn->n; e++) {
    const int64_t *row = ob_knob_row(kn, e);
    int i = 0;
    while (i < kn->width && row[i] == (int64_t)anns[i]) i++;
    if (i == kn->width) {
      set_choice(c, k, e);
      return;
    }
  }
}

/* ---- text forms ---------------------------------------------------------- */

/* Appends a knob's value: sep is ", " for JSON (as Python's json.dumps
 * writes it) and "," for ob_config_str; quote wraps annotation names. */
static void append_value(ob_str *o, const ob_knob *kn, int choice, const char *sep, bool quote) {
  const int64_t *row = ob_knob_row(kn, choice);
  if (kn->kind == OB_KNOB_OTHER) {
    ob_str_appendf(o, "%lld", (long long)row[0]);
    return;
  }
  ob_str_append(o, "[");
  for (int i = 0; i < kn->width; i++) {
    if (i) ob_str_append(o, sep);
    if (kn->kind == OB_KNOB_ANNOTATE)
      ob_str_appendf(o, quote ? "\"%s\"" : "%s", ann_name[row[i]]);
    else
      ob_str_appendf(o, "%lld", (long long)row[i]);
  }
  ob_str_append(o, "]");
}

static void check_config(const ob_config *c) {
  OB_ASSERT(c && c->space);
  for (int k = 0; k < c->space->nknobs; k++)
    OB_ASSERT(c->choice[k] >= 0 && c->choice[k] < c->space->knobs[k].n);
}

char *ob_config_str(const ob_config *c) {
  check_config(c);
  ob_str o = {0};
  for (int k = 0; k < c->space->nknobs; k++) {
    const ob_knob *kn = &c->space->knobs[k];
    ob_str_appendf(&o, "%s%s=", k ? " " : "", kn->name);
    append_value(&o, kn, c->choice[k], ",", false);
  }
  return ob_str_take(&o); /* NULL: out of memory */
}

ob_status ob_config_to_json(ob_ctx *ctx, const ob_config *c, char **out) {
  check_config(c);
  OB_ASSERT(out);
  *out = NULL;
  ob_str o = {0};
  ob_str_appendf(&o, "{\"index\": %llu, \"code_hash\": null, \"entity\": [",
                 (unsigned long long)c->index);
  for (int k = 0; k < c->space->nknobs; k++) {
    const ob_knob *kn = &c->space->knobs[k];
    ob_str_appendf(&o, "%s[\"%s\", \"%s\", ", k ? ", " : "", kn->name, kind_tag[kn->kind]);
    append_value(&o, kn, c->choice[k], ", ", true);
    ob_str_append(&o, "]");
  }
  ob_str_append(&o, "]}");
  *out = ob_str_take(&o);
  return *out ? OB_OK : ob_fail(ctx, OB_ERR_NOMEM, "config %llu as JSON: out of memory", (unsigned long long)c->index);
}

/* ---- JSON parsing -------------------------------------------------------- */

/* An integral JSON number, or a bool (AutoTVM logs write `true` for knobs
 * such as unroll_kw). */
static bool json_int(const cJSON *j, int64_t *v) {
  if (cJSON_IsBool(j)) {
    *v = cJSON_IsTrue(j) ? 1 : 0;
    return true;
  }
  if (!cJSON_IsNumber(j)) return false;
  double d = j->valuedouble;
  if (!isfinite(d) || d != trunc(d) || fabs(d) >= 9.2e18) return false;
  *v = (int64_t)d;
  return true;
}

/* Matches one knob's JSON value against its entity list; *choice = -1 when
 * the value is well-formed but absent. PARSE on a malformed value. */
static ob_status match_value(ob_ctx *ctx, const ob_knob *kn, const cJSON *val, int *choice) {
  *choice = -1;
  int64_t want[OB_MAX_SPLIT > OB_MAX_AXES ? OB_MAX_SPLIT : OB_MAX_AXES];
  if (kn->kind == OB_KNOB_OTHER) {
    if (!json_int(val, &want[0]))
      return sp_fail(ctx, OB_ERR_PARSE, "knob '%s': value must be an integer", kn->name);
  } else {
    if (!cJSON_IsArray(val))
      return sp_fail(ctx, OB_ERR_PARSE, "knob '%s': value must be a list", kn->name);
    int n = cJSON_GetArraySize(val), i = 0;
    bool absent = n != kn->width;
    const cJSON *it;
    cJSON_ArrayForEach(it, val) {
      if (kn->kind == OB_KNOB_ANNOTATE) {
        if (!cJSON_IsString(it))
          return sp_fail(ctx, OB_ERR_PARSE, "knob '%s': annotations must be strings", kn->name);
        int a = 0;
        while (a < OB_ANN_COUNT && strcmp(ann_name[a], it->valuestring)) a++;
        if (a == OB_ANN_COUNT) absent = true;
        if (i < kn->width) want[i] = a;
      } else {
        int64_t v;
        if (!json_int(it, &v) || cJSON_IsBool(it))
          return sp_fail(ctx, OB_ERR_PARSE, "knob '%s': list entries must be integers",
                         kn->name);
        if (i < kn->width) want[i] = v;
      }
      i++;
    }
    if (absent) return OB_OK;
  }
  /* Split: the first entry is -1 or the outer size; only inner ones count. */
  int from = kn->kind == OB_KNOB_SPLIT ? 1 : 0;
  for (int e = 0; e < kn->n; e++) {
    const int64_t *row = ob_knob_row(kn, e);
    int i = from;
    while (i < kn->width && row[i] == want[i]) i++;
    if (i == kn->width) {
      *choice = e;
      break;
    }
  }
  return OB_OK;
}

static ob_status unknown_knob(ob_ctx *ctx, const ob_space *s, const char *name) {
  ob_str names = {0};
  for (int k = 0; k < s->nknobs; k++)
    ob_str_appendf(&names, "%s%s", k ? ", " : "", s->knobs[k].name);
  ob_status st = sp_fail(ctx, OB_ERR_NOT_FOUND, "unknown knob '%s' (knobs: %s)", name,
                         names.data ? names.data : "none");
  ob_str_free(&names);
  return st;
}

static ob_status parse_entity(ob_ctx *ctx, const ob_space *s, const cJSON *ent, ob_config *c) {
  bool seen[OB_MAX_KNOBS] = {false};
  if (!cJSON_IsArray(ent))
    return sp_fail(ctx, OB_ERR_PARSE, "config \"entity\" must be a list");
  int idx = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, ent) {
    const cJSON *jn = cJSON_GetArrayItem(item, 0), *jk = cJSON_GetArrayItem(item, 1),
                *jv = cJSON_GetArrayItem(item, 2);
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 3 || !cJSON_IsString(jn) ||
        !cJSON_IsString(jk))
      return sp_fail(ctx, OB_ERR_PARSE, "config entity %d is not [name, kind, value]", idx);
    const char *name = jn->valuestring;
    int k = ob_space_knob_find(s, name);
    if (k < 0) return unknown_knob(ctx, s, name);
    const ob_knob *kn = &s->knobs[k];
    if (seen[k]) return sp_fail(ctx, OB_ERR_PARSE, "config lists knob '%s' twice", name);
    seen[k] = true;
    if (strcmp(jk->valuestring, kind_tag[kn->kind]))
      return sp_fail(ctx, OB_ERR_PARSE, "knob '%s' is of kind \"%s\", the config says \"%s\"",
                     name, kind_tag[kn->kind], jk->valuestring);
    int choice;
    ob_status st = match_value(ctx, kn, jv, &choice);
    if (st) return st;
    if (choice < 0) {
      char *txt = cJSON_PrintUnformatted(jv);
      st = sp_fail(ctx, OB_ERR_OUT_OF_SPACE, "knob '%s' has no entity %s for this workload", name,
                   txt ? txt : "?");
      cJSON_free(txt);
      return st;
    }
    c->choice[k] = choice;
    idx++;
  }
  for (int k = 0; k < s->nknobs; k++)
    if (!seen[k] && !s->knobs[k].added)
      return sp_fail(ctx, OB_ERR_PARSE, "config is missing knob '%s'", s->knobs[k].name);
    else if (!seen[k])
      c->choice[k] = 0; /* a config from before the knob: the behaviour it had */
  c->index = ob_config_index_of(s, c->choice);
  if (!passes_filter(s, c)) return filter_fail(ctx, c);
  return OB_OK;
}

static ob_status parse_index(ob_ctx *ctx, const ob_space *s, const cJSON *j, ob_config *out) {
  if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) ||
      j->valuedouble != trunc(j->valuedouble))
    return sp_fail(ctx, OB_ERR_PARSE, "config \"index\" must be an integer");
  double d = j->valuedouble;
  if (d < 0 || d >= 18446744073709551616.0)
    return sp_fail(ctx, OB_ERR_OUT_OF_SPACE, "config index %.0f is outside the space of %llu configs",
                   d, (unsigned long long)s->len);
  return ob_space_get(ctx, s, (uint64_t)d, out);
}

ob_status ob_config_from_json(ob_ctx *ctx, const ob_space *s, const char *json, ob_config *out) {
  OB_ASSERT(s && json && out);
  ob_status st = OB_OK;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(json, &end, true);
  if (!root) {
    size_t off = end && end >= json ? (size_t)(end - json) : 0;
    st = sp_fail(ctx, OB_ERR_PARSE, "malformed config JSON at offset %zu: '%.24s'", off,
                 json + (off <= strlen(json) ? off : 0));
    goto done;
  }
  ob_config c;
  decode(s, 0, &c);
  if (cJSON_IsNumber(root)) {
    st = parse_index(ctx, s, root, &c);
  } else if (cJSON_IsArray(root)) { /* the entity list alone, as the db stores it */
    st = parse_entity(ctx, s, root, &c);
  } else if (cJSON_IsObject(root)) {
    const cJSON *ent = cJSON_GetObjectItemCaseSensitive(root, "entity");
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(root, "index");
    if (ent && !cJSON_IsNull(ent))
      st = parse_entity(ctx, s, ent, &c);
    else if (idx)
      st = parse_index(ctx, s, idx, &c);
    else
      st = sp_fail(ctx, OB_ERR_PARSE, "config has neither \"entity\" nor \"index\"");
  } else {
    st = sp_fail(ctx, OB_ERR_PARSE, "config JSON must be an object, an entity list or an index");
  }
  if (!st) *out = c;
done:
  cJSON_Delete(root);
  return st;
}
