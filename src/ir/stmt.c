/* stmt.c: constructors and substitution for the loop IR's statements and
 * buffer loads (ir.h). Nodes live in the caller's arena. Out of memory:
 * NULL, never a node with a missing part (arena.c's contract), and a NULL
 * argument is an earlier failure's result, passed along. */
#include "opbench/ir.h"
#include "te/te_impl.h"

ob_expr *ob_buffer_load(ob_arena *a, ob_buffer *buf, ob_dtype dtype, ob_expr *idx) {
  ob_expr *e = buf && idx ? ob_arena_alloc(a, sizeof *e) : NULL;
  if (!e || !(e->idx = ob_arena_alloc(a, sizeof(ob_expr *)))) return NULL;
  e->kind = OB_E_BLOAD;
  e->dtype = dtype;
  e->buf = buf;
  e->buf_name = buf->name;
  e->n = 1;
  e->idx[0] = idx;
  return e;
}

ob_stmt *ob_stmt_new(ob_arena *a, ob_stmt_kind k) {
  ob_stmt *s = ob_arena_alloc(a, sizeof *s);
  if (s) s->kind = k;
  return s;
}

ob_stmt *ob_stmt_subst(ob_arena *a, const ob_stmt *s, ob_ivar *from, ob_expr *to) {
  ob_stmt *c = s && to ? ob_stmt_new(a, s->kind) : NULL;
  if (!c) return NULL;
  *c = *s;
  ob_ivar *f[1] = {from};
  ob_expr *t[1] = {to};
  switch (s->kind) {
  case OB_S_SEQ:
    c->seq = ob_arena_alloc(a, sizeof(ob_stmt *) * (size_t)(s->nseq ? s->nseq : 1));
    for (int i = 0; c->seq && i < s->nseq; i++) c->seq[i] = ob_stmt_subst(a, s->seq[i], from, to);
    break;
  case OB_S_FOR: c->body = ob_stmt_subst(a, s->body, from, to); break;
  case OB_S_IF:
    c->cond = ob_simplify(a, ob_expr_subst(a, s->cond, 1, f, t));
    c->body = ob_stmt_subst(a, s->body, from, to);
    break;
  case OB_S_STORE:
  case OB_S_PREFETCH:
    c->index = ob_simplify(a, ob_expr_subst(a, s->index, 1, f, t));
    c->value = ob_simplify(a, ob_expr_subst(a, s->value, 1, f, t));
    break;
  default: break;
  }
  return ob_arena_failed(a) ? NULL : c;
}
