/* tuner.c: the ob_tuner wrapper over a tuner family's vtable, the registry
 * of tuner names, and the set of config indices the tuners keep. The
 * wrapper owns the family's `self` and frees it through the vtable. */
#include <stdlib.h>
#include <string.h>

#include "tune/tuner_impl.h"

/* ---- registry -------------------------------------------------------------- */

typedef ob_status (*tuner_create_fn)(ob_ctx *ctx, const char *name, struct ob_task *task,
                                     const ob_tuner_opts *opts, const struct ob_tuner_i **vt,
                                     void **self);

static const struct {
  const char *name;
  tuner_create_fn create;
} k_tuners[] = {
    {"random", ob_basic_tuner_create},   {"gridsearch", ob_basic_tuner_create},
    {"ga", ob_basic_tuner_create},       {"xgb", ob_xgb_tuner_create},
    {"xgb-rank", ob_xgb_tuner_create},   {"xgb_knob", ob_xgb_tuner_create},
    {"xgb_itervar", ob_xgb_tuner_create}, {"xgb_curve", ob_xgb_tuner_create},
};
enum { K_NTUNERS = sizeof k_tuners / sizeof k_tuners[0] };

int ob_tuner_count(void) { return K_NTUNERS; }
const char *ob_tuner_name_at(int i) { return i >= 0 && i < K_NTUNERS ? k_tuners[i].name : NULL; }

ob_status ob_tuner_new(ob_ctx *ctx, const char *name, struct ob_task *task,
                       const ob_tuner_opts *opts, ob_tuner **out) {
  OB_ASSERT(out && task);
  *out = NULL;
  int found = -1;
  for (int i = 0; name && i < K_NTUNERS; i++)
    if (!strcmp(k_tuners[i].name, name)) found = i;
  if (found < 0) {
    char known[256] = "";
    for (int i = 0; i < K_NTUNERS; i++) {
      if (i) strcat(known, ", ");
      strcat(known, k_tuners[i].name);
    }
    return ob_fail(ctx, OB_ERR_NOT_FOUND, "unknown tuner '%s' (known tuners: %s)",
                   name ? name : "(null)", known);
  }
  ob_tuner_opts dflt;
  memset(&dflt, 0, sizeof dflt);
  if (!opts) opts = &dflt;
  ob_tuner *t = calloc(1, sizeof *t);
  if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory creating tuner '%s'", name);
  t->ctx = ctx;
  snprintf(t->name, sizeof t->name, "%s", name);
  ob_status st = k_tuners[found].create(ctx, name, task, opts, &t->vt, &t->self);
  if (st) {
    free(t);
    return st;
  }
  OB_ASSERT(t->vt && t->vt->next_batch && t->vt->update && t->vt->has_next && t->vt->free);
  *out = t;
  return OB_OK;
}

void ob_tuner_free(ob_tuner *t) {
  if (!t) return;
  if (t->vt) t->vt->free(t->self);
  free(t);
}

const char *ob_tuner_name(const ob_tuner *t) { return t->name; }

int ob_tuner_transfer_records(const ob_tuner *t) {
  return t->vt->transfer_records ? t->vt->transfer_records(t->self) : 0;
}

ob_status ob_tuner_next_batch(ob_tuner *t, int n, ob_config *out, int *got) {
  OB_ASSERT(t && got && n >= 0 && (n == 0 || out));
  *got = 0;
  if (n == 0) return OB_OK;
  ob_status st = t->vt->next_batch(t->self, n, out, got);
  OB_ASSERT(*got >= 0 && *got <= n);
  if (st) ob_fail_prefix(t->ctx, "tuner '%s'", t->name);
  return st;
}

ob_status ob_tuner_update(ob_tuner *t, const ob_config *cfgs, const ob_measure_result *res,
                          int n) {
  OB_ASSERT(t && n >= 0 && (n == 0 || (cfgs && res)));
  if (n == 0) return OB_OK;
  ob_status st = t->vt->update(t->self, cfgs, res, n);
  if (st) ob_fail_prefix(t->ctx, "tuner '%s'", t->name);
  return st;
}

bool ob_tuner_has_next(const ob_tuner *t) { return t->vt->has_next(t->self); }

/* ---- index set --------------------------------------------------------------- */

/* Fibonacci hashing; slots hold index + 1 so that 0 marks an empty slot. */
static size_t slot_of(uint64_t v, size_t cap) {
  return (size_t)((v * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

bool ob_idxset_has(const ob_idxset *s, uint64_t v) {
  if (!s->cap) return false;
  for (size_t h = slot_of(v, s->cap);; h = (h + 1) & (s->cap - 1)) {
    if (s->slot[h] == v + 1) return true;
    if (!s->slot[h]) return false;
  }
}

static void put_slot(uint64_t *slots, size_t cap, uint64_t v) {
  size_t h = slot_of(v, cap);
  while (slots[h]) h = (h + 1) & (cap - 1);
  slots[h] = v + 1;
}

bool ob_idxset_add(ob_idxset *s, uint64_t v) {
  OB_ASSERT(v != UINT64_MAX);
  if (s->failed || ob_idxset_has(s, v)) return false;
  if ((s->n + 1) * 2 > s->cap) { /* keep the load at most 1/2 */
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint64_t *slots = calloc(cap, sizeof *slots);
    if (!slots) {
      s->failed = true;
      return false;
    }
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i]) put_slot(slots, cap, s->slot[i] - 1);
    free(s->slot);
    s->slot = slots;
    s->cap = cap;
  }
  put_slot(s->slot, s->cap, v);
  s->n++;
  return true;
}

ob_status ob_idxset_check(ob_ctx *ctx, const ob_idxset *s, const char *who) {
  return s->failed ? ob_fail(ctx, OB_ERR_NOMEM, "%s: out of memory recording visited configs", who) : OB_OK;
}

void ob_idxset_free(ob_idxset *s) {
  if (!s) return;
  free(s->slot);
  memset(s, 0, sizeof *s);
}
