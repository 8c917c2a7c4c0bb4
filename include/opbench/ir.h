/* ir: the loop-nest IR that lowering (lower.h) produces and that codegen and
 * the tuner's feature extraction read: buffers, statements (loops, stores,
 * guards, local allocations), the lowered function's layout, and the
 * integer index arithmetic (linear forms, ranges, simplification) that all
 * of them use. Expressions are te's nodes (te.h); a lowered access is a
 * BLOAD of a flat buffer. Everything here lives in an arena: a lowered
 * function's arena owns its statements, buffers and expressions. */
#ifndef OPBENCH_IR_H
#define OPBENCH_IR_H

#include "opbench/target.h" /* ob_launch */
#include "opbench/te.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ob_buf_kind {
  OB_BUF_ARG = 0, /* kernel argument */
  OB_BUF_GLOBAL,  /* whole-tensor temporary, allocated at kernel entry */
  OB_BUF_LOCAL,   /* region of an attached stage, declared where attached */
  OB_BUF_KIND_COUNT
} ob_buf_kind;

typedef struct ob_buffer ob_buffer;
struct ob_buffer {
  const char *name;
  ob_dtype dtype;
  int64_t numel;
  ob_buf_kind kind;
  ob_mem_scope scope; /* OB_BUF_LOCAL: per thread (registers) or shared by a block */
  int arg_index;
  bool is_output;
  int id;
};

typedef enum ob_stmt_kind {
  OB_S_FOR = 0,
  OB_S_SEQ,
  OB_S_STORE,
  OB_S_IF,
  OB_S_ALLOC, /* declares buf in the enclosing block */
  OB_S_BARRIER, /* GPU: every thread of the block waits here (shared memory is
                   written before and read after, or the other way round) */
  OB_S_PREFETCH, /* CPU: fetch buf's elements [index, min(index + count, value)) into
                    the cache, a hint that changes no value (ob_sched_prefetch) */
  OB_S_KIND_COUNT
} ob_stmt_kind;

typedef struct ob_stmt ob_stmt;
struct ob_stmt {
  ob_stmt_kind kind;
  ob_ivar *var; /* FOR: the loop variable (its extent is the loop's) */
  ob_iter_ann ann;
  ob_stmt *body; /* FOR, IF */
  ob_stmt **seq;
  int nseq;
  struct ob_buffer *buf; /* STORE, ALLOC, PREFETCH */
  ob_expr *index, *value; /* PREFETCH: the first element and the end of the slice */
  int64_t count;          /* PREFETCH: elements */
  ob_expr *cond; /* IF */
  bool window;   /* IF: a guard of ob_sched_skip_padding (a tap of a window
                    that may read padding): loop partitioning splits data
                    loops on it, never reduce or parallel ones, where it
                    costs one test per row of taps */
};

/* ob_launch (target.h): what a GPU kernel is launched with. */

/* A lowered function (ob_lower makes it, ob_lowered_free frees it). */
typedef struct ob_lowered ob_lowered;
struct ob_lowered {
  ob_ctx *ctx;
  ob_arena *arena;
  ob_stmt *body;
  struct ob_buffer **args;
  int nargs;
  struct ob_buffer **temps; /* OB_BUF_GLOBAL */
  int ntemps;
  ob_launch launch;
  bool pressure_sched; /* ob_sched_pressure_sched */
  int64_t inner_unroll; /* ob_sched_unroll_inner (0: none asked) */
};

/* ---- statements (stmt.c) ------------------------------------------------- */
/* buf[idx] as an expression of type dtype (a BLOAD node from arena a). */
OB_API ob_expr *ob_buffer_load(ob_arena *a, ob_buffer *buf, ob_dtype dtype, ob_expr *idx);
OB_API ob_stmt *ob_stmt_new(ob_arena *a, ob_stmt_kind k);
/* Copy of s with var `from` replaced by `to`, expressions simplified. */
OB_API ob_stmt *ob_stmt_subst(ob_arena *a, const ob_stmt *s, ob_ivar *from, ob_expr *to);

/* ---- integer index arithmetic (arith.c) ------------------------------------
 * Integer expressions are int64 (OB_I64); DIV and MOD are floor division
 * and floor modulo. A variable ranges over [0, extent). New nodes come from
 * arena `a`; the input is never modified (results may share its nodes). */
#define OB_LIN_MAX 48
typedef struct ob_lin {
  int n;
  ob_expr *atom[OB_LIN_MAX]; /* vars or non-linear subexpressions */
  int64_t coef[OB_LIN_MAX];
  int64_t c0;
} ob_lin;

/* Integer expression -> sum of coef*atom + c0 (atoms that cancel dropped;
 * (x/c)*c*k + (x%c)*k merged into x*k). False if too many atoms. */
OB_API bool ob_lin_of(const ob_expr *e, ob_lin *out);
OB_API ob_expr *ob_lin_to_expr(ob_arena *a, const ob_lin *l);
/* Bounds [*lo, *hi] of every value of an integer expression with each var
 * over [0, extent); false when unknown (a load, a division by a range). */
OB_API bool ob_range(const ob_expr *e, int64_t *lo, int64_t *hi);
OB_API bool ob_expr_uses_var(const ob_expr *e, const ob_ivar *v);
/* Constant folding, linear canonical form, div/mod by known ranges,
 * min/max and index comparisons decided by ranges. */
OB_API ob_expr *ob_simplify(ob_arena *a, ob_expr *e);
/* True for an integer constant (its value into *v when v is not NULL). */
OB_API bool ob_is_const(const ob_expr *e, int64_t *v);

#ifdef __cplusplus
}
#endif
#endif
