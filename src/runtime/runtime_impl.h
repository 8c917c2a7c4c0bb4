/* runtime_impl.h: the compiled model. Values are buffers: a graph tensor
 * in one layout, or a kernel's scratch. Steps read and write values; each
 * step is a kernel, a oneDNN primitive, a native C routine of the runtime or
 * a layout conversion. The planner (plan.c) builds both lists in node order,
 * inserting conversions where a consumer needs a layout the value does not
 * have yet; memplan.c places the activation values in one block by
 * lifetime; native.c holds the C routines; exec.c runs, times and checks.
 * Everything a compiled model owns hangs off struct ob_rt and is freed by
 * ob_rt_free: step parameters and names in its arena, packed constants and
 * the activation block by malloc, tasks, kernels and primitives through
 * their own destructors. */
#ifndef OB_RUNTIME_IMPL_H
#define OB_RUNTIME_IMPL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/baseline.h"
#include "opbench/db.h"
#include "opbench/ops.h"
#include "opbench/runtime.h"

#define RT_MAX_IO 24 /* inputs of one step (Concat may have more: it gets its own list) */
#define RT_ALIGN 64
/* Records read per workload: the layout selection's candidates, deep enough
 * to hold configs of every block a short tuning measured; choose_kernel
 * reads as many, so that it finds the pick among them. */
#define RT_TOPK 64

/* How a value lays out its tensor. */
typedef enum rt_lkind {
  RL_PLAIN = 0, /* row-major, the tensor's own shape */
  RL_NCHWC,     /* 4-D [N, C, H, W] as [N, C/b, H, W, b] */
  RL_PANELS,    /* [.., N, K] as [.., N/b, K, b] (a packed GEMM's B) */
  RL_KN_PANELS, /* a MatMul operand [.., K, N] as [.., N/b, K, b] */
  RL_KN_T,      /* a MatMul operand [.., K, N] as [.., N, K] */
  RL_SCRATCH,   /* a kernel's own layout (pack hooks only) */
  RL_KIND_COUNT
} rt_lkind;

typedef struct rt_layout {
  rt_lkind kind;
  int64_t block;
} rt_layout;

static inline rt_layout rl_plain(void) { return (rt_layout){RL_PLAIN, 0}; }
static inline bool rl_eq(rt_layout a, rt_layout b) { return a.kind == b.kind && a.block == b.block; }

typedef struct rt_val {
  int tensor;      /* graph tensor, -1: scratch */
  rt_layout lay;
  ob_dtype dtype;
  size_t bytes;
  int def, last;   /* step that writes it (-1: set before the run), last reader */
  int alias;       /* the value whose memory this one is (a view), or -1 */
  size_t alias_off; /* where in the viewed value's memory (bytes): a channel slice of an in-place concat */
  bool is_const;   /* fixed at load: a graph constant or a packed copy */
  const void *cdata;
  void *owned;     /* a constant the runtime allocated on its own (malloc) */
  size_t offset;   /* in the activation block */
  void *ptr;       /* where it is, once planned */
} rt_val;

typedef struct rt_step rt_step;
typedef struct ob_rt ob_rt_t;
/* Runs a step on its resolved pointers; a kernel's or the library's
 * failure status comes back non-zero. */
typedef int (*rt_run_fn)(ob_rt *rt, rt_step *s);

/* One compiled kernel (a task at one config), shared by the steps of its
 * workload. */
typedef struct rt_kern {
  char key[256];     /* workload key */
  ob_task *task;     /* owned */
  ob_config cfg;
  bool from_db;
  double db_s;       /* the record's median, NAN without one */
  ob_lowered *fn;    /* until built */
  char name[160];
  ob_kernel *k;
  bool cached;
} rt_kern;

struct rt_step {
  ob_rt_step_kind kind;
  int node;
  const char *name, *op;
  int nin, nout;
  int *in, *out;       /* value ids (arena arrays) */
  void **pin, **pout;  /* resolved pointers */
  rt_run_fn run;
  void *p;             /* the routine's parameters (arena) */
  /* kernels */
  int kern;            /* rt->kern index or -1 */
  int nkargs;
  int kval[OB_KERNEL_MAX_ARGS]; /* value per kernel argument */
  void *kbuf[OB_KERNEL_MAX_ARGS];
  /* oneDNN */
  ob_baseline_prim *prim;
  char wl_key[256];
  double flops;
  bool conv_boundary;  /* a conversion between plain and blocked */
};

/* The layout selection's choice for one node (layout.c). */
typedef struct rt_lsel {
  int n, pick;           /* candidates (0: the node is not selected here), the one picked */
  struct ls_cand *c;     /* arena */
  bool unknown;          /* no records: the default config and its block variants */
} rt_lsel;

/* A kernel that failed to build: a new plan avoids it (ob_rt_new). */
typedef struct rt_avoid {
  char key[256];  /* workload key */
  char tmpl[64];
  uint64_t index; /* config index */
} rt_avoid;
#define RT_MAX_AVOID 8

struct ob_rt {
  ob_ctx *ctx;
  const ob_graph *g;
  ob_rt_opts o;
  ob_target *own_target;
  const ob_target *target;
  int lanes;
  int cores[256];
  ob_pool *pool;
  ob_arena *arena;
  rt_val *v;
  int nv, cv;
  rt_step *s;
  int ns, cs;
  int **tvals;       /* per tensor: the values holding it (-1 terminated, arena) */
  int *ntvals;
  rt_kern *kern;
  int nkern, ckern;
  ob_baseline *bl;
  bool bl_inside;    /* between ob_baseline_enter and _leave */
  void *block;       /* the activation block (ob_mem_alloc_big) */
  /* packed constants (weights in blocks and panels), one after another in
   * chunks on huge pages: a model's 10-340 MB of weights on 4 KiB pages
   * miss the TLB on every read of a layer, and their physical placement
   * (hence L2 conflicts) changes from process to process */
  void **wchunk;
  int nwchunk, cwchunk;
  char *wat;         /* the next free byte of the last chunk */
  size_t wleft;
  bool par_unshared; /* stages.c placed every activation apart (subsets of steps run) */
  size_t block_bytes;
  int *in_val, *out_val; /* graph inputs and outputs -> value */
  rt_lsel *lsel;     /* per node, tuned runs only (NULL otherwise) */
  ob_rt_stats st;
  /* notices said once */
  char host[32];
  char resources[512];
  double cv_rate[OB_RT_CV_KINDS]; /* conversion rates, bytes/s (rt_convert_cost) */
  bool noted_foreign;
  int64_t foreign_records;
  /* kernels earlier plans failed to build (the caller's array) */
  const rt_avoid *avoid;
  int navoid;
  rt_avoid failed[RT_MAX_AVOID]; /* build_kernels: kernels that failed (none
                                    where every kernel it compiled failed) */
  int nfailed;
  bool none_left; /* a node's every kernel failed to build in earlier plans */
};

/* Whether the plan reads the database's records (a database given and the
 * tasks not all untuned); oneDNN nodes aside, the rest of a --kernels
 * onednn plan reads them too. Without them, defaults and their block
 * variants. */
static inline bool rt_reads_records(const ob_rt *rt) { return rt->o.kernels != OB_RT_DEFAULT && rt->o.db; }
ob_status rt_top_records(const ob_rt *rt, const ob_db_key *k, ob_db_records **out, bool *other);
/* s[i]: the time the plan compares recs->rec[i] by (its median, or its
 * template's confirmed best's where the confirmation did not re-measure it)
 * (plan.c). */
void rt_record_times(const ob_rt *rt, const ob_db_key *k, const ob_db_records *recs, double *s);

/* ---- values and steps (plan.c) ---------------------------------------------- */
int rt_val_new(ob_rt *rt, int tensor, rt_layout lay, ob_dtype dt, size_t bytes);
/* A step reading in[0..nin) and writing out[0..nout) (value ids); uses and
 * definitions are recorded. Returns its index, -1 out of memory. */
int rt_step_add(ob_rt *rt, ob_rt_step_kind kind, int node, const char *name, const char *op, const int *in,
                int nin, const int *out, int nout, rt_run_fn run, void *p);
/* The value of tensor t in layout lay: existing, a constant converted at
 * load, or converted now (a step). -1 with the ctx's message on failure. */
int rt_value_for(ob_rt *rt, int t, rt_layout lay);
/* The value a tensor is produced in first (its primary), -1 if none yet. */
int rt_primary(const ob_rt *rt, int t);
/* Records v as holding tensor t. */
bool rt_bind(ob_rt *rt, int t, int v);
void *rt_alloc(ob_rt *rt, size_t bytes); /* zeroed, in the runtime's arena */
/* Room for a packed constant of `bytes`, 64-byte aligned, among the weights
 * (freed with the runtime); NULL out of memory. */
void *rt_weight_alloc(ob_rt *rt, size_t bytes);
const char *rt_strdup(ob_rt *rt, const char *s);

/* ---- natives (native.c) --------------------------------------------------------
 * rt_native_plan: asks the values the node's routine reads (in the layouts
 * it can read), makes its outputs and adds the step. OB_ERR_UNSUPPORTED
 * naming the node for what it cannot run. */
ob_status rt_native_plan(ob_rt *rt, int node);
/* Whether the native routine of this node reads a blocked input directly
 * (pooling, global average pooling, channel concat, elementwise). */
bool rt_native_takes_blocked(const ob_rt *rt, int node);
/* A conversion step from value src to a new value of layout `to` for the
 * same tensor; returns the new value or -1. */
int rt_convert(ob_rt *rt, int src, rt_layout to);
/* Converts constant data at load (weights into panels, blocks). */
void rt_convert_const(const ob_graph *g, int t, rt_layout to, const void *src, void *dst);
/* Estimated seconds of converting `bytes` of activations between channel
 * blocks from and to (0: plain; -1: a kernel's padded layout, to or from
 * plain) at the rates cv (bytes/s by ob_rt_cv_kind) (plan.c). */
double rt_convert_cost(const double *cv, size_t bytes, int64_t from, int64_t to);
/* The bytes of tensor t in layout lay. */
size_t rt_layout_bytes(const ob_graph *g, int t, rt_layout lay);
/* Runs fn over [0, n) on the runtime's pool, or inline for small n. */
void rt_parallel(ob_rt *rt, int64_t n, int64_t grain, ob_task_fn fn, void *closure);

/* ---- configs chosen together (layout.c) ---------------------------------------------
 * rt_layout_select: per node, the database's top records as candidates,
 * picked to minimise their time plus the conversions between channel
 * blocks of neighbouring nodes. rt_layout_picked: the pick of a node
 * (template and config index), false if the node has none. */
ob_status rt_layout_select(ob_rt *rt);
bool rt_layout_picked(const ob_rt *rt, int node, const char **tmpl, uint64_t *index);
/* The channel block the selected consumers of tensor t read it in (its
 * first consumer with a pick, through layout-following nodes), 0 when
 * unknown: a native producer free to choose (a blocked Concat) writes it. */
int64_t rt_layout_wanted_block(const ob_rt *rt, int t);
/* The task and config of database record r for workload wl (plan.c): false,
 * with the error cleared and nothing to free, when this build lacks the
 * record's template or its config does not parse. */
bool rt_record_task(ob_ctx *ctx, const ob_rt *rt, const ob_workload *wl, const ob_db_record *r, ob_task **task,
                    ob_config *cfg);
/* The task a node of workload wl runs without records (plan.c): its
 * operator's untuned template (ob_op_untuned_template) on the runtime's
 * target. */
ob_status rt_untuned_task(ob_ctx *ctx, const ob_rt *rt, const ob_workload *wl, ob_task **task);

/* ---- running (exec.c) ------------------------------------------------------------------
 * ob_rt_profile's loop: per step (and for the whole runs) the median, or
 * with `trimmed` the mean over the runs whose totals fall in the middle half (sums of such means
 * add up to the runs' own trimmed mean, which sums of medians do not). */
ob_status rt_profile_runs(ob_rt *rt, int runs, bool trimmed, double *step_s, double *total_s);

/* ---- memory (memplan.c) ------------------------------------------------------------- */
/* Places every activation value (not constant, not a view) by lifetime,
 * allocates the block and resolves every value's and step's pointers. */
ob_status rt_memplan(ob_rt *rt);

#endif
