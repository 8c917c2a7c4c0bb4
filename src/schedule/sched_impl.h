/* sched_impl.h: stage layout shared by schedule and lower. A stage owns its
 * root axes, its leaf order, the split/fuse relations between them and where
 * it is attached; primitives only edit these records. */
#ifndef OB_SCHED_IMPL_H
#define OB_SCHED_IMPL_H

#include "opbench/schedule.h"
#include "te/te_impl.h"

typedef enum ob_attach { OB_ATTACH_ROOT = 0, OB_ATTACH_INLINE, OB_ATTACH_AT, OB_ATTACH_COUNT } ob_attach;
typedef enum ob_rel_kind { OB_REL_SPLIT = 0, OB_REL_FUSE, OB_REL_KIND_COUNT } ob_rel_kind;

typedef struct ob_rel {
  ob_rel_kind kind;
  ob_ivar *parent, *outer, *inner; /* split: parent -> outer, inner */
  ob_ivar *fused;                  /* fuse: outer, inner -> fused */
  int64_t factor;                  /* split: inner extent */
} ob_rel;

struct ob_stage {
  ob_sched *s;
  const ob_tensor *tensor; /* identity of the buffer it writes */
  int ndim, nred;
  ob_ivar **axes, **raxes; /* root axes */
  ob_expr *body;           /* value per point (reduction body if is_reduce) */
  bool is_reduce;
  ob_reduce_op rop;
  ob_ivar **leaves;
  int nleaves, capleaves;
  ob_rel *rels;
  int nrels, caprels;
  ob_attach attach;
  ob_stage *attach_stage;
  ob_ivar *attach_iv;
  bool is_output;
  bool touched; /* a loop primitive was applied */
  bool skip_padding; /* ob_sched_skip_padding: zero terms of selects become guards */
  /* annotations live on the stage, not on the ivar, so that te axes shared
   * by several schedules of one compute do not leak annotations */
  ob_ivar *ann_iv[64];
  ob_iter_ann ann_kind[64];
  int nann;
  ob_mem_scope scope;      /* where an attached stage's region lives (LOCAL by
                              default; root stages write global memory) */
  bool cache_read;         /* a copy made by cache_read */
  /* ob_sched_prefetch (NULL pf_tensor: none) */
  const ob_tensor *pf_tensor;
  ob_ivar *pf_outer, *pf_at, *pf_spread[4];
  int pf_nspread;
  int64_t pf_slice;
};

ob_iter_ann ob_stage_ann(const ob_stage *st, const ob_ivar *iv);

struct ob_sched {
  ob_te *te;
  ob_ctx *ctx;
  ob_arena *arena;
  ob_stage **stages; /* producers before consumers */
  int nstages, capstages;
  const ob_tensor **outs;
  int nout;
  const ob_tensor **inputs; /* placeholders in declaration order */
  int ninputs;
  int next_id;
  int64_t unroll_max_step; /* ob_sched_unroll_pragma */
  bool unroll_explicit;
  bool pressure_sched; /* ob_sched_pressure_sched */
  int64_t inner_unroll; /* ob_sched_unroll_inner */
};

#endif
