/* te_impl.h: node layouts shared by te, schedule, ir, lower, codegen and
 * the tuner's feature extraction. The same expression type serves tensor
 * expressions (LOAD of a tensor with one index per dimension) and the
 * lowered IR (BLOAD of a flat buffer, ir.h). */
#ifndef OB_TE_IMPL_H
#define OB_TE_IMPL_H

#include "opbench/te.h"

typedef enum ob_expr_kind {
  OB_E_INT = 0,
  OB_E_FLOAT,
  OB_E_VAR,
  OB_E_BIN,
  OB_E_SELECT, /* c ? a : b */
  OB_E_CAST,
  OB_E_CALL,
  OB_E_LOAD,   /* tensor[idx...] (te level) */
  OB_E_BLOAD,  /* buffer[flat idx] (lowered) */
  OB_E_REDUCE,
  OB_E_KIND_COUNT
} ob_expr_kind;

typedef enum ob_ivar_kind { OB_IV_DATA = 0, OB_IV_REDUCE, OB_IV_KIND_COUNT } ob_ivar_kind;

struct ob_ivar {
  const char *name;
  int64_t extent;
  ob_ivar_kind kind;
  int id;            /* unique within its te, for names in generated code */
  ob_iter_ann ann;   /* loop variables of lowered code only */
};

struct ob_buffer;

struct ob_expr {
  ob_expr_kind kind;
  ob_dtype dtype;
  int64_t ival;
  double fval;
  ob_ivar *var;
  ob_binop op;
  ob_intrin fn;
  ob_reduce_op rop;
  ob_expr *a, *b, *c; /* operands; SELECT: c ? a : b; REDUCE: body a */
  const ob_tensor *tensor; /* LOAD */
  struct ob_buffer *buf;   /* BLOAD (ir.h) */
  const char *buf_name;    /* BLOAD: buf's name, so that te prints lowered
                              expressions without knowing ir's buffers */
  int n;                   /* LOAD: index count; REDUCE: axis count */
  ob_expr **idx;           /* LOAD indices (BLOAD: idx[0]) */
  ob_ivar **axes;          /* REDUCE axes */
};

struct ob_tensor {
  const char *name;
  int ndim;
  int64_t shape[8];
  ob_dtype dtype;
  bool placeholder;
  int id;            /* creation order */
  ob_ivar **axes;    /* compute: ndim axes */
  ob_expr *body;     /* compute: body (REDUCE at top for reductions) */
};

struct ob_te {
  ob_ctx *ctx;
  ob_arena *arena;
  int next_id;
  int ntensors;
};

/* Helpers shared inside the compiler. Nodes come from arena `a`. */
ob_expr *ob_e_int(ob_arena *a, int64_t v);
ob_expr *ob_e_var(ob_arena *a, ob_ivar *iv);
ob_expr *ob_e_bin(ob_arena *a, ob_binop op, ob_expr *x, ob_expr *y);
ob_expr *ob_e_copy(ob_arena *a, const ob_expr *e); /* shallow node copy */
ob_ivar *ob_iv_new(ob_arena *a, const char *name, int64_t extent, ob_ivar_kind kind, int id);
bool ob_expr_equal(const ob_expr *x, const ob_expr *y);
bool ob_binop_is_cmp(ob_binop op);
const char *ob_binop_sym(ob_binop op);
const char *ob_intrin_name(ob_intrin fn);
void ob_expr_print(ob_str *s, const ob_expr *e);

/* Substitution: returns e with each var in from[] replaced by to[]. */
ob_expr *ob_expr_subst(ob_arena *a, ob_expr *e, int n, ob_ivar *const *from,
                       ob_expr *const *to);

#endif
