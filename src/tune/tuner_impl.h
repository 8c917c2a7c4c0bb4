/* tuner_impl.h: the tuner vtable behind the opaque ob_tuner (tune.h).
 * tuner.c owns the registry and the ob_tuner wrapper; each tuner family
 * (tuners.c: random, gridsearch, ga; xgb.c: the cost-model tuners) owns
 * its `self` object and frees it in its `free` entry. */
#ifndef OB_TUNER_IMPL_H
#define OB_TUNER_IMPL_H

#include "opbench/ops.h"
#include "opbench/tune.h"

/* One tuner family. Every entry gets the `self` its constructor returned.
 * next_batch: up to n configs of the task's space that this tuner has never
 *   proposed nor been told about through update, none rejected by the
 *   space's filter; *got < n only when nothing more can be proposed now
 *   (the space is spent, or the tuner waits for results: see has_next).
 * update: results of configs in the task's space, proposed by this tuner or
 *   not (resume feeds the database's records first); those configs are then
 *   never proposed. error_no != 0 scores 0.
 * has_next: false once the space holds nothing left to propose.
 * free: releases self (NULL or half-built accepted). */
struct ob_tuner_i {
  ob_status (*next_batch)(void *self, int n, ob_config *out, int *got);
  ob_status (*update)(void *self, const ob_config *cfgs, const ob_measure_result *res, int n);
  bool (*has_next)(const void *self);
  void (*free)(void *self);
  /* optional: records a transferred base model learned from (0: none) */
  int (*transfer_records)(const void *self);
};

struct ob_tuner {
  const struct ob_tuner_i *vt;
  void *self;
  ob_ctx *ctx;
  char name[32]; /* as asked for, e.g. "xgb-rank" */
};

/* A set of config indices (open addressing, grows by doubling).
 * Zero-initialise to start. Out of memory is sticky, as in an arena: growth
 * that fails marks the set failed (the value is not added, ob_idxset_add
 * returns false), and the tuner that owns it returns OB_ERR_NOMEM from the
 * vtable call in progress (ob_idxset_check), so no proposal rests on it. */
typedef struct ob_idxset {
  uint64_t *slot; /* index + 1; 0 = empty */
  size_t cap, n;
  bool failed;
} ob_idxset;
bool ob_idxset_has(const ob_idxset *s, uint64_t v);
bool ob_idxset_add(ob_idxset *s, uint64_t v); /* true when v was new */
/* OB_ERR_NOMEM naming `who` once the set failed, else OB_OK. */
ob_status ob_idxset_check(ob_ctx *ctx, const ob_idxset *s, const char *who);
void ob_idxset_free(ob_idxset *s);

/* Constructors. `name` is the registry name that selected the family; `ctx`
 * outlives the tuner and receives messages. On failure *self is NULL and
 * the ctx holds the message. */
ob_status ob_basic_tuner_create(ob_ctx *ctx, const char *name, struct ob_task *task,
                                const ob_tuner_opts *opts, const struct ob_tuner_i **vt,
                                void **self);
/* xgb.c: "xgb", "xgb-rank", "xgb_knob", "xgb_itervar", "xgb_curve". */
ob_status ob_xgb_tuner_create(ob_ctx *ctx, const char *name, struct ob_task *task,
                              const ob_tuner_opts *opts, const struct ob_tuner_i **vt,
                              void **self);

#endif
