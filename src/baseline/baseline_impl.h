/* baseline_impl.h: what every baseline shares. A workload becomes an
 * ob_bl_problem (the operator family, its sizes, its epilogue as ops parses
 * it, and its argument list in kernel order); the checker gives a problem
 * its inputs and judges its output through the workload's ob_task (the
 * operators' fill, naive reference and tolerance); timing is kernel.h's
 * ob_time_loop with the options normalized for the handle's target (its
 * floor, as ob_timing_resolve does for the runner) and ob_cache_flush.
 * A baseline is a small vtable behind ob_baseline. */
#ifndef OB_BASELINE_IMPL_H
#define OB_BASELINE_IMPL_H

#include "opbench/baseline.h"

#define OB_BL_MAX_ARGS 8

typedef enum ob_bl_kind {
  OB_BL_CONV2D = 0, /* conv2d, depthwise_conv2d */
  OB_BL_MATMUL,     /* dense (batch 1), batch_matmul */
  OB_BL_POOL2D,     /* pool2d, global_avg_pool */
  OB_BL_KIND_COUNT
} ob_bl_kind;

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
  ob_epilogue epi; /* bias (first, if at all), relu, relu6, add */
  bool winograd;   /* conv2d: the library's Winograd algorithm, checked with
                      ob_winograd_tolerance */
  double flops;   /* per call */
  int nargs;      /* inputs in order, then the output (last) */
  ob_bl_arg args[OB_BL_MAX_ARGS];
} ob_bl_problem;

/* Turns a workload that ops accepts (ob_task_new validated it) into a
 * problem. OB_ERR_UNSUPPORTED, the message in msg, for what the baselines
 * cannot run (operator, dtype, epilogue order). */
ob_status ob_bl_problem_init(const ob_workload *wl, ob_bl_problem *p, char *msg, size_t cap);
bool ob_bl_problem_has(const ob_bl_problem *p, ob_epi step);
int ob_bl_problem_arg(const ob_bl_problem *p, ob_bl_role role); /* index or -1 */

/* The checker: the workload's ob_task (inputs from ob_task_fill, output
 * judged by ob_task_check). Every workload ob_bl_problem_init accepts has
 * one whose arguments are the problem's (test_baseline walks them all). */
typedef struct ob_bl_checker {
  ob_task *task; /* owned */
  uint64_t seed;
  bool winograd; /* the problem's: judged with ob_winograd_tolerance */
} ob_bl_checker;
/* OB_ERR_UNSUPPORTED (message in ctx) when ops has no task taking the
 * problem's arguments, OB_ERR_NOMEM. */
ob_status ob_bl_checker_init(ob_ctx *ctx, const ob_workload *wl, const ob_bl_problem *p,
                             uint64_t seed, ob_bl_checker *ck);
void ob_bl_checker_fill(ob_bl_checker *ck, void *const *bufs);
/* OB_OK or OB_ERR_WRONG_ANSWER with msg; OB_ERR_NOMEM. */
ob_status ob_bl_checker_check(ob_bl_checker *ck, void *const *bufs, char *msg, size_t cap);
void ob_bl_checker_clear(ob_bl_checker *ck);

struct ob_baseline_i {
  const char *name;
  ob_status (*measure)(void *self, const ob_workload *wl, const ob_bl_problem *p,
                       const ob_timing_opts *t, uint64_t seed, ob_baseline_result *res);
  const char *(*describe)(const void *self);
  void (*free)(void *self);
  /* primitives on caller memory (baseline.h); p is validated and
   * supported by ob_bl_problem_init */
  ob_status (*prim_new)(void *self, const ob_workload *wl, const ob_bl_problem *p, int want_block,
                        bool b_kn, const void *const *consts, ob_baseline_prim **out);
  void (*enter)(void *self);
  void (*leave)(void *self);
};

/* What every baseline's primitive starts with (the implementation's own
 * state follows in its larger struct). */
struct ob_baseline_prim {
  int data_block, out_block;
  char impl[96];
  int (*run)(ob_baseline_prim *p, void *const *bufs);
  void (*free)(ob_baseline_prim *p);
};

struct ob_baseline {
  const struct ob_baseline_i *vt;
  void *self;
  ob_ctx *ctx;
  double timer_overhead_s; /* measured once, when the handle is made */
  double floor_ms;         /* the target's timing floor (min_repeat_ms); < 0: the host's */
};

#endif
