/* lower_impl.h: the loop-nest IR (statements and buffers) and the integer
 * arithmetic (linear forms, ranges, simplification) shared by lower and
 * codegen. */
#ifndef OB_LOWER_IMPL_H
#define OB_LOWER_IMPL_H

#include "opbench/lower.h"
#include "schedule/sched_impl.h"

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
  struct ob_buffer *buf; /* STORE, ALLOC */
  ob_expr *index, *value;
  ob_expr *cond; /* IF */
};

struct ob_lowered {
  ob_ctx *ctx;
  ob_arena *arena;
  ob_stmt *body;
  struct ob_buffer **args;
  int nargs;
  struct ob_buffer **temps; /* OB_BUF_GLOBAL */
  int ntemps;
};

/* ---- arithmetic (arith.c) ---------------------------------------------- */
#define OB_LIN_MAX 48
typedef struct ob_lin {
  int n;
  ob_expr *atom[OB_LIN_MAX]; /* vars or non-linear subexpressions */
  int64_t coef[OB_LIN_MAX];
  int64_t c0;
} ob_lin;

/* Integer expression -> sum of coef*atom + c0. False if too many atoms. */
bool ob_lin_of(const ob_expr *e, ob_lin *out);
ob_expr *ob_lin_to_expr(ob_arena *a, const ob_lin *l);
/* Range of an integer expression with every var over [0, extent). */
bool ob_range(const ob_expr *e, int64_t *lo, int64_t *hi);
bool ob_expr_uses_var(const ob_expr *e, const ob_ivar *v);
/* Constant folding, linear canonical form, div/mod by known ranges. */
ob_expr *ob_simplify(ob_arena *a, ob_expr *e);
bool ob_is_const(const ob_expr *e, int64_t *v);

ob_stmt *ob_stmt_new(ob_arena *a, ob_stmt_kind k);
/* Copy of s with var `from` replaced by `to`, expressions simplified. */
ob_stmt *ob_stmt_subst(ob_arena *a, const ob_stmt *s, ob_ivar *from, ob_expr *to);

#endif
