/* baseline_impl.h: what every baseline shares. A workload becomes an
 * ob_bl_problem (the operator family, its sizes, its epilogue and its
 * argument list in kernel order); the checker gives a problem its inputs and
 * judges its output, through the workload's ob_task where opbench has one,
 * through the naive references in reference.c otherwise; the timing loop is
 * the runner's. A baseline is a small vtable behind ob_baseline. */
#ifndef OB_BASELINE_IMPL_H
#define OB_BASELINE_IMPL_H

#include "opbench/baseline.h"

#define OB_BL_MAX_ARGS 8
#define OB_BL_MAX_COSTS 64

typedef enum ob_bl_kind {
  OB_BL_CONV2D = 0, /* conv2d, depthwise_conv2d */
  OB_BL_MATMUL,     /* dense (batch 1), batch_matmul */
  OB_BL_POOL2D,     /* pool2d, global_avg_pool */
  OB_BL_KIND_COUNT
} ob_bl_kind;

typedef enum ob_bl_epi { OB_BL_EPI_BIAS = 0, OB_BL_EPI_RELU, OB_BL_EPI_RELU6, OB_BL_EPI_ADD, OB_BL_EPI_COUNT } ob_bl_epi;

typedef enum ob_bl_pool {
  OB_BL_POOL_MAX = 0,
  OB_BL_POOL_AVG_INCLUDE, /* divisor R*S */
  OB_BL_POOL_AVG_EXCLUDE, /* divisor: the window's in-bounds elements */
  OB_BL_POOL_COUNT
} ob_bl_pool;

typedef enum ob_bl_role { OB_BL_DATA = 0, OB_BL_WEIGHT, OB_BL_BIAS, OB_BL_RESIDUAL, OB_BL_OUTPUT, OB_BL_ROLE_COUNT } ob_bl_role;

typedef struct ob_bl_arg {
  const char *name;
  ob_bl_role role;
  int64_t numel;
  bool is_input;
} ob_bl_arg;

typedef struct ob_bl_problem {
  ob_bl_kind kind;
  /* conv / pool (n c h w; k output channels; r s kernel) */
  int64_t n, c, h, w, k, r, s, sh, sw, pt, pl, pb, pr, dh, dw, g, oh, ow;
  ob_bl_pool pool;
  /* matmul: C[batch][m, nn] = A[batch][m, kk] * B[batch][nn, kk]^T */
  int64_t batch, m, nn, kk;
  int nepi;
  ob_bl_epi epi[8];
  bool winograd;  /* conv2d: the library's Winograd algorithm, checked with
                     ob_winograd_tolerance */
  double flops;   /* per call */
  int64_t red;    /* reduction length, for the tolerance */
  int nargs;      /* inputs in order, then the output (last) */
  ob_bl_arg args[OB_BL_MAX_ARGS];
} ob_bl_problem;

/* Turns a workload into a problem. OB_ERR_UNSUPPORTED (operator, dtype,
 * epilogue the baselines cannot run) or OB_ERR_INVALID_ARG (bad sizes), the
 * message in msg naming the attribute. */
ob_status ob_bl_problem_init(const ob_workload *wl, ob_bl_problem *p, char *msg, size_t cap);
bool ob_bl_problem_has(const ob_bl_problem *p, ob_bl_epi step);
int ob_bl_problem_arg(const ob_bl_problem *p, ob_bl_role role); /* index or -1 */

/* reference.c: the naive references (double accumulation, epilogue as
 * ob_epilogue_ref), the fill that ob_task_fill also uses, and the check with
 * ob_task_check's tolerance. bufs follow p->args. */
void ob_bl_reference(const ob_bl_problem *p, void *const *bufs);
void ob_bl_fill(const ob_bl_problem *p, uint64_t seed, void *const *bufs);
ob_status ob_bl_compare(const ob_bl_problem *p, const float *got, const float *ref, char *msg,
                        size_t cap);

/* The checker: the workload's ob_task when opbench can make one that takes
 * the same arguments, else the reference above (e.g. conv2d with groups,
 * which opbench's conv2d does not take yet). */
typedef struct ob_bl_checker {
  const ob_bl_problem *p;
  ob_task *task;  /* owned, or NULL */
  float *ref;     /* owned reference output (own reference only) */
  uint64_t seed;
} ob_bl_checker;
ob_status ob_bl_checker_init(ob_ctx *ctx, const ob_workload *wl, const ob_bl_problem *p,
                             uint64_t seed, ob_bl_checker *ck);
void ob_bl_checker_fill(ob_bl_checker *ck, void *const *bufs);
/* OB_OK or OB_ERR_WRONG_ANSWER with msg; OB_ERR_NOMEM. */
ob_status ob_bl_checker_check(ob_bl_checker *ck, void *const *bufs, char *msg, size_t cap);
void ob_bl_checker_clear(ob_bl_checker *ck);

/* The runner's timing loop in-process: `call` returns 0 or a library status
 * (the loop stops there and returns it); `flush` (may be NULL) runs before
 * each call when t->flush. Fills costs/ncosts/number/stats of res. Returns
 * 0, the failing call's code, or -1 when the deadline passed. */
int ob_bl_time(const ob_timing_opts *t, double deadline, int (*call)(void *user),
               void (*flush)(void *user), void *user, ob_baseline_result *res);
/* Flushes [p, p+bytes) from the caches (x86 clflush, AArch64 dc civac). */
void ob_bl_flush_range(const void *p, size_t bytes);
/* A normalized copy of t (NULL: defaults), as ob_runner_run applies. */
ob_timing_opts ob_bl_timing(const ob_timing_opts *t);

struct ob_baseline_i {
  const char *name;
  ob_status (*measure)(void *self, const ob_workload *wl, const ob_bl_problem *p,
                       const ob_timing_opts *t, uint64_t seed, ob_baseline_result *res);
  const char *(*describe)(const void *self);
  void (*free)(void *self);
};

struct ob_baseline {
  const struct ob_baseline_i *vt;
  void *self;
  ob_ctx *ctx;
};

#endif
