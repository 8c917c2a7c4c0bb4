/* sched_impl.h: what the files of src/sched share: the layout of units and
 * schedules, the hash maps the scheduler's caches and memo use, and the
 * helpers that turn units into the stage descriptions cost models see.
 * Units and schedules own one arena each (everything they point to lives
 * there); the maps own their arrays and copy their keys into a caller's
 * arena. */
#ifndef OB_SCHED_IMPL_H
#define OB_SCHED_IMPL_H

#include <stdint.h>
#include <string.h>

#include "opbench/sched.h"

/* ---- maps ---------------------------------------------------------------------------- */
/* Byte-string keys -> int64 values, open addressing, grows by doubling. */
typedef struct smap {
  uint64_t *hash; /* 0: empty slot (hashes are forced non-zero) */
  const void **key;
  uint32_t *len;
  int64_t *val;
  size_t cap, n;
  ob_arena *arena; /* keys are copied here */
} smap;
void smap_init(smap *m, ob_arena *keys);
void smap_free(smap *m);
/* The value slot of key, or NULL. */
int64_t *smap_find(const smap *m, const void *key, size_t len);
/* The slot of key, inserted with value v when absent (*added says which). */
int64_t *smap_put(smap *m, const void *key, size_t len, int64_t v, bool *added);

/* uint64 keys -> int32 values (the DP's memo: state -> entry). */
typedef struct umap {
  uint64_t *key; /* every value is a valid key: slots have a used flag */
  int32_t *val;
  uint8_t *used;
  size_t cap, n;
} umap;
void umap_init(umap *m);
void umap_free(umap *m);
int32_t *umap_find(const umap *m, uint64_t key);
int32_t *umap_put(umap *m, uint64_t key, int32_t v, bool *added);

/* ---- units ------------------------------------------------------------------------------- */
typedef struct sunit {
  const char *name;
  ob_sched_op_desc op;   /* key and nodes in the units' arena */
  const char *merge_key; /* "" when the unit never merges */
  int merge_class;       /* interned merge key, -1 when none */
  int sid;               /* interned op key: units of equal structure share it */
  int npred;
  int *preds;            /* ascending */
  int nnodes;
  int *nodes;            /* graph nodes (from a graph) */
  int part;
} sunit;

struct ob_sched_units {
  ob_ctx *ctx;
  ob_arena *arena;
  const char *model;
  sunit *u;
  int n, cap;
  smap names, sids, classes;
  int nsids, nclasses;
  bool finished;
  int nblocks, nparts;
  int *part_first, *part_n;
};

/* Adds a unit whose op desc already lives in the units' arena (taken as is). */
ob_status ob_sched_units_add_owned(ob_sched_units *u, const char *name, const ob_sched_op_desc *op,
                                   const char *merge_key, int npred, const int *preds, int *id);

/* ---- schedules ----------------------------------------------------------------------------- */
typedef struct sgroup {
  int nops, ncores;
  int *ops, *cores;
  double seconds;
} sgroup;

typedef struct sstage {
  ob_sched_stage_kind kind;
  int ngroups, cgroups;
  sgroup *groups;
  double seconds;
} sstage;

struct ob_schedule {
  ob_ctx *ctx;
  ob_arena *arena;
  int cores;
  sstage *st;
  int n, cap;
  char scheduler[32];
  char cost_name[400];
  bool predicted;
};
void ob_schedule_set_origin(ob_schedule *s, const char *scheduler, const ob_stage_cost *cost);

/* ---- stage descriptions (cost.c) ---------------------------------------------------------- */
/* The merged convolution of n mergeable units (ascending ids give the
 * channel order): its desc (node and key in arena a). */
ob_status ob_sched_merged_desc(ob_ctx *ctx, const ob_sched_units *u, int n, const int *ids, ob_arena *a,
                               ob_sched_op_desc *out);
/* An operator's latency as the sum of its nodes': each node through
 * `node` (true when it could cost it; *hits counted), else through the
 * FLOPs model `fallback` (*fallbacks counted). The predictor's and the
 * database's models share it. */
typedef bool (*ob_sched_node_cost_fn)(void *user, const ob_sched_node_desc *n, int threads, double *out);
ob_status ob_sched_sum_nodes(const ob_sched_op_desc *op, int threads, ob_sched_node_cost_fn node, void *user,
                             ob_sched_flops_model *fallback, int64_t *hits, int64_t *fallbacks,
                             double *seconds);

#endif
