/* arith.c: integer index arithmetic of the loop IR (ir.h), used by lowering,
 * codegen and feature extraction. Index expressions are put
 * in a linear canonical form (sum of coefficient * atom + constant) so that
 * offsets cancel (x.outer*16 + x.inner - x.outer*16 -> x.inner), and floor
 * div/mod by a constant is resolved when the remainder's range is known.
 * Out of memory: builders return NULL once their arena failed (never a node
 * with a missing operand), and the readers take NULL as "nothing known". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/ir.h"
#include "te/te_impl.h"

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

bool ob_is_const(const ob_expr *e, int64_t *v) {
  if (e && e->kind == OB_E_INT) {
    if (v) *v = e->ival;
    return true;
  }
  return false;
}

bool ob_expr_uses_var(const ob_expr *e, const ob_ivar *v) {
  if (!e) return false;
  if (e->kind == OB_E_VAR) return e->var == v;
  if (ob_expr_uses_var(e->a, v) || ob_expr_uses_var(e->b, v) || ob_expr_uses_var(e->c, v))
    return true;
  if (e->kind == OB_E_LOAD || e->kind == OB_E_BLOAD) {
    int m = e->kind == OB_E_LOAD ? e->n : 1;
    for (int i = 0; i < m; i++)
      if (ob_expr_uses_var(e->idx[i], v)) return true;
  }
  return false;
}

static bool lin_add_atom(ob_lin *l, ob_expr *atom, int64_t c) {
  if (c == 0) return true;
  for (int i = 0; i < l->n; i++)
    if (ob_expr_equal(l->atom[i], atom)) {
      l->coef[i] += c;
      return true;
    }
  if (l->n == OB_LIN_MAX) return false;
  l->atom[l->n] = atom;
  l->coef[l->n++] = c;
  return true;
}

static bool lin_rec(const ob_expr *e, int64_t scale, ob_lin *l) {
  if (e->kind == OB_E_INT) {
    l->c0 += scale * e->ival;
    return true;
  }
  if (e->kind == OB_E_BIN && e->dtype == OB_I64) {
    int64_t k;
    switch (e->op) {
    case OB_ADD: return lin_rec(e->a, scale, l) && lin_rec(e->b, scale, l);
    case OB_SUB: return lin_rec(e->a, scale, l) && lin_rec(e->b, -scale, l);
    case OB_MUL:
      if (ob_is_const(e->b, &k)) return lin_rec(e->a, scale * k, l);
      if (ob_is_const(e->a, &k)) return lin_rec(e->b, scale * k, l);
      break;
    default: break;
    }
  }
  return lin_add_atom(l, (ob_expr *)e, scale);
}

/* (x / c) * c*k + (x % c) * k -> x * k: what fuse followed by a split
 * leaves behind; without it a contiguous vector load looks like a gather. */
static int merge_divmod(ob_lin *l) { /* 1 merged, 0 nothing to merge, -1 full */
  for (int i = 0; i < l->n; i++) {
    if (!l->coef[i]) continue;
    ob_expr *d = l->atom[i];
    int64_t c;
    if (d->kind != OB_E_BIN || d->op != OB_DIV || !ob_is_const(d->b, &c) || c <= 0) continue;
    for (int j = 0; j < l->n; j++) {
      ob_expr *m = l->atom[j];
      int64_t c2;
      if (j == i || !l->coef[j] || m->kind != OB_E_BIN || m->op != OB_MOD || !ob_is_const(m->b, &c2) || c2 != c ||
          !ob_expr_equal(d->a, m->a) || l->coef[i] != l->coef[j] * c)
        continue;
      int64_t k = l->coef[j];
      l->coef[i] = l->coef[j] = 0;
      return lin_rec(m->a, k, l) ? 1 : -1;
    }
  }
  return 0;
}

bool ob_lin_of(const ob_expr *e, ob_lin *out) {
  memset(out, 0, sizeof *out);
  if (!e || !lin_rec(e, 1, out)) return false;
  for (int pass = 0; pass < 4; pass++) {
    int r = merge_divmod(out);
    if (r < 0) return false;
    if (!r) break;
  }
  int j = 0; /* drop cancelled atoms */
  for (int i = 0; i < out->n; i++)
    if (out->coef[i]) {
      out->atom[j] = out->atom[i];
      out->coef[j++] = out->coef[i];
    }
  out->n = j;
  return true;
}

ob_expr *ob_lin_to_expr(ob_arena *a, const ob_lin *l) {
  ob_expr *acc = NULL;
  for (int i = 0; i < l->n; i++) {
    int64_t c = l->coef[i];
    ob_expr *t = l->atom[i];
    bool neg = c < 0 && acc;
    int64_t m = neg ? -c : c;
    if (m != 1) t = ob_e_bin(a, OB_MUL, t, ob_e_int(a, m));
    acc = acc ? ob_e_bin(a, neg ? OB_SUB : OB_ADD, acc, t) : t;
  }
  if (!acc) return ob_e_int(a, l->c0);
  if (l->c0 > 0) acc = ob_e_bin(a, OB_ADD, acc, ob_e_int(a, l->c0));
  if (l->c0 < 0) acc = ob_e_bin(a, OB_SUB, acc, ob_e_int(a, -l->c0));
  return acc;
}

static void mul_range(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int64_t *lo,
                      int64_t *hi) {
  int64_t c[4] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
  *lo = *hi = c[0];
  for (int i = 1; i < 4; i++) {
    if (c[i] < *lo) *lo = c[i];
    if (c[i] > *hi) *hi = c[i];
  }
}

bool ob_range(const ob_expr *e, int64_t *lo, int64_t *hi) {
  int64_t alo, ahi, blo, bhi;
  if (!e) return false;
  switch (e->kind) {
  case OB_E_INT: *lo = *hi = e->ival; return true;
  case OB_E_VAR: *lo = 0; *hi = e->var->extent - 1; return e->var->extent >= 1;
  case OB_E_BIN:
    if (e->dtype != OB_I64) return false;
    if (!ob_range(e->a, &alo, &ahi) || !ob_range(e->b, &blo, &bhi)) return false;
    switch (e->op) {
    case OB_ADD: *lo = alo + blo; *hi = ahi + bhi; return true;
    case OB_SUB: *lo = alo - bhi; *hi = ahi - blo; return true;
    case OB_MUL: mul_range(alo, ahi, blo, bhi, lo, hi); return true;
    case OB_DIV:
      if (blo != bhi || blo <= 0) return false;
      *lo = floordiv(alo, blo);
      *hi = floordiv(ahi, blo);
      return true;
    case OB_MOD:
      if (blo != bhi || blo <= 0) return false;
      if (alo >= 0 && ahi - alo < blo && floormod(alo, blo) <= floormod(ahi, blo)) {
        *lo = floormod(alo, blo);
        *hi = floormod(ahi, blo);
      } else {
        *lo = 0;
        *hi = blo - 1;
      }
      return true;
    case OB_MIN: *lo = alo < blo ? alo : blo; *hi = ahi < bhi ? ahi : bhi; return true;
    case OB_MAX: *lo = alo > blo ? alo : blo; *hi = ahi > bhi ? ahi : bhi; return true;
    default: return false;
    }
  case OB_E_SELECT:
    if (!ob_range(e->a, &alo, &ahi) || !ob_range(e->b, &blo, &bhi)) return false;
    *lo = alo < blo ? alo : blo;
    *hi = ahi > bhi ? ahi : bhi;
    return true;
  default: return false;
  }
}

/* a / c and a % c for constant c > 0: split a = c*q + r with r's range in
 * [0, c) so that a / c = q and a % c = r. */
static bool split_divmod(ob_arena *a, ob_expr *num, int64_t c, ob_expr **q, ob_expr **r) {
  ob_lin l, lq, lr;
  if (!ob_lin_of(num, &l)) return false;
  memset(&lq, 0, sizeof lq);
  memset(&lr, 0, sizeof lr);
  for (int i = 0; i < l.n; i++) {
    if (l.coef[i] % c == 0) {
      lq.atom[lq.n] = l.atom[i];
      lq.coef[lq.n++] = l.coef[i] / c;
    } else {
      lr.atom[lr.n] = l.atom[i];
      lr.coef[lr.n++] = l.coef[i];
    }
  }
  lq.c0 = floordiv(l.c0, c);
  lr.c0 = floormod(l.c0, c);
  ob_expr *re = ob_lin_to_expr(a, &lr);
  int64_t lo, hi;
  if (!ob_range(re, &lo, &hi) || lo < 0 || hi >= c) return false;
  *q = ob_lin_to_expr(a, &lq);
  *r = re;
  return true;
}

static ob_expr *fold_bin(ob_arena *a, ob_expr *e) {
  int64_t x = 0, y = 0;
  bool cx = ob_is_const(e->a, &x), cy = ob_is_const(e->b, &y);
  if (e->dtype == OB_I64 || (e->dtype == OB_BOOL && e->a->dtype == OB_I64)) {
    if (cx && cy) {
      switch (e->op) {
      case OB_ADD: return ob_e_int(a, x + y);
      case OB_SUB: return ob_e_int(a, x - y);
      case OB_MUL: return ob_e_int(a, x * y);
      case OB_DIV: if (y) return ob_e_int(a, floordiv(x, y)); break;
      case OB_MOD: if (y) return ob_e_int(a, floormod(x, y)); break;
      case OB_MIN: return ob_e_int(a, x < y ? x : y);
      case OB_MAX: return ob_e_int(a, x > y ? x : y);
      default: break;
      }
    }
  }
  if (e->dtype == OB_I64) {
    if ((e->op == OB_DIV || e->op == OB_MOD) && cy && y > 0) {
      if (y == 1) return e->op == OB_DIV ? e->a : ob_e_int(a, 0);
      ob_expr *q, *r;
      if (split_divmod(a, e->a, y, &q, &r)) return ob_simplify(a, e->op == OB_DIV ? q : r);
      return e;
    }
    if (e->op == OB_ADD || e->op == OB_SUB || e->op == OB_MUL) {
      ob_lin l;
      if (ob_lin_of(e, &l)) return ob_lin_to_expr(a, &l);
      return e;
    }
    if (e->op == OB_MIN || e->op == OB_MAX) {
      int64_t alo, ahi, blo, bhi;
      if (ob_range(e->a, &alo, &ahi) && ob_range(e->b, &blo, &bhi)) {
        if (e->op == OB_MIN) {
          if (ahi <= blo) return e->a;
          if (bhi <= alo) return e->b;
        } else {
          if (alo >= bhi) return e->a;
          if (blo >= ahi) return e->b;
        }
      }
    }
    return e;
  }
  /* comparisons of indices decided by ranges (guards that always hold) */
  if (e->dtype == OB_BOOL && e->a->dtype == OB_I64 && ob_binop_is_cmp(e->op) &&
      e->op != OB_AND && e->op != OB_OR) {
    int64_t alo, ahi;
    ob_expr *d = ob_simplify(a, ob_e_bin(a, OB_SUB, e->a, e->b));
    if (ob_range(d, &alo, &ahi)) {
      switch (e->op) {
      case OB_LT: if (ahi < 0) return ob_e_int(a, 1); if (alo >= 0) return ob_e_int(a, 0); break;
      case OB_LE: if (ahi <= 0) return ob_e_int(a, 1); if (alo > 0) return ob_e_int(a, 0); break;
      case OB_GT: if (alo > 0) return ob_e_int(a, 1); if (ahi <= 0) return ob_e_int(a, 0); break;
      case OB_GE: if (alo >= 0) return ob_e_int(a, 1); if (ahi < 0) return ob_e_int(a, 0); break;
      default: break;
      }
    }
    return e;
  }
  if (e->dtype == OB_BOOL && (e->op == OB_AND || e->op == OB_OR)) {
    if (e->op == OB_AND) {
      if (cx) return x ? e->b : ob_e_int(a, 0);
      if (cy) return y ? e->a : ob_e_int(a, 0);
    } else {
      if (cx) return x ? ob_e_int(a, 1) : e->b;
      if (cy) return y ? ob_e_int(a, 1) : e->a;
    }
  }
  return e;
}

ob_expr *ob_simplify(ob_arena *a, ob_expr *e) {
  if (!e) return NULL;
  switch (e->kind) {
  case OB_E_INT:
  case OB_E_FLOAT:
  case OB_E_VAR: return e;
  case OB_E_BIN: {
    ob_expr *x = ob_simplify(a, e->a), *y = ob_simplify(a, e->b);
    ob_expr *c = ob_e_copy(a, e);
    if (!x || !y || !c) return NULL; /* out of memory */
    c->a = x;
    c->b = y;
    return fold_bin(a, c);
  }
  case OB_E_SELECT: {
    ob_expr *cond = ob_simplify(a, e->c);
    int64_t v;
    if (ob_is_const(cond, &v)) return ob_simplify(a, v ? e->a : e->b);
    ob_expr *c = ob_e_copy(a, e);
    if (!c) return NULL;
    c->c = cond;
    c->a = ob_simplify(a, e->a);
    c->b = ob_simplify(a, e->b);
    return ob_arena_failed(a) ? NULL : c;
  }
  case OB_E_LOAD:
  case OB_E_BLOAD: {
    ob_expr *c = ob_e_copy(a, e);
    int m = e->kind == OB_E_LOAD ? e->n : 1;
    if (!c || !(c->idx = ob_arena_alloc(a, sizeof(ob_expr *) * (size_t)m))) return NULL;
    for (int i = 0; i < m; i++) c->idx[i] = ob_simplify(a, e->idx[i]);
    return ob_arena_failed(a) ? NULL : c;
  }
  default: {
    ob_expr *c = ob_e_copy(a, e);
    if (!c) return NULL;
    c->a = ob_simplify(a, e->a);
    c->b = ob_simplify(a, e->b);
    c->c = ob_simplify(a, e->c);
    return ob_arena_failed(a) ? NULL : c;
  }
  }
}
