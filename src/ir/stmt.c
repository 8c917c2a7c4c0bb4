/* stmt.c: constructors and substitution for the loop IR's statements and
 * buffer loads (ir.h). Nodes live in the caller's arena. */
#include "opbench/ir.h"
#include "te/te_impl.h"

ob_expr *ob_buffer_load(ob_arena *a, ob_buffer *buf, ob_dtype dtype, ob_expr *idx) {
  ob_expr *e = ob_arena_alloc(a, sizeof *e);
  e->kind = OB_E_BLOAD;
  e->dtype = dtype;
  e->buf = buf;
  e->buf_name = buf->name;
  e->n = 1;
  e->idx = ob_arena_alloc(a, sizeof(ob_expr *));
  e->idx[0] = idx;
  return e;
}

ob_stmt *ob_stmt_new(ob_arena *a, ob_stmt_kind k) {
  ob_stmt *s = ob_arena_alloc(a, sizeof *s);
  s->kind = k;
  return s;
}

ob_stmt *ob_stmt_subst(ob_arena *a, const ob_stmt *s, ob_ivar *from, ob_expr *to) {
  ob_stmt *c = ob_stmt_new(a, s->kind);
  *c = *s;
  ob_ivar *f[1] = {from};
  ob_expr *t[1] = {to};
  switch (s->kind) {
  case OB_S_SEQ:
    c->seq = ob_arena_alloc(a, sizeof(ob_stmt *) * (size_t)(s->nseq ? s->nseq : 1));
    for (int i = 0; i < s->nseq; i++) c->seq[i] = ob_stmt_subst(a, s->seq[i], from, to);
    break;
  case OB_S_FOR: c->body = ob_stmt_subst(a, s->body, from, to); break;
  case OB_S_IF:
    c->cond = ob_simplify(a, ob_expr_subst(a, s->cond, 1, f, t));
    c->body = ob_stmt_subst(a, s->body, from, to);
    break;
  case OB_S_STORE:
    c->index = ob_simplify(a, ob_expr_subst(a, s->index, 1, f, t));
    c->value = ob_simplify(a, ob_expr_subst(a, s->value, 1, f, t));
    break;
  default: break;
  }
  return c;
}
