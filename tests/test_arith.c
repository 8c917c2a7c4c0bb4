/* test_arith: the loop IR's integer arithmetic (ir.h: ob_is_const, ob_lin_of,
 * ob_lin_to_expr, ob_range, ob_simplify, ob_expr_uses_var, ob_stmt_subst).
 * Expected values are written out by hand or computed by this file's own
 * evaluator (floor division through floating point, not the library's
 * integer formula). The property part builds thousands of random index
 * expressions (vars, constants of both signs, + - *, floor / and % by
 * constants, min, max, select, buffer loads as non-linear atoms) and checks
 * on random points that the simplified expression and the linear form
 * evaluate as the original does, and that every evaluated value lies in
 * the range ob_range gives. It reads te's node layout (te/te_impl.h) to
 * evaluate; it calls only exported functions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/ir.h"
#include "te/te_impl.h"

static ob_te *te;
static ob_arena *A; /* simplifier output */

#define INT(v) ob_te_int(te, (v))
#define VAR(x) ob_te_var(te, (x))
#define BIN(op, a, b) ob_te_bin(te, (op), (a), (b))
#define ADD(a, b) BIN(OB_ADD, a, b)
#define SUB(a, b) BIN(OB_SUB, a, b)
#define MUL(a, b) BIN(OB_MUL, a, b)
#define DIV(a, b) BIN(OB_DIV, a, b)
#define MOD(a, b) BIN(OB_MOD, a, b)

/* ---- the reference evaluator ---------------------------------------------------- */
#define MAXV 8
typedef struct env {
  int n;
  const ob_ivar *var[MAXV];
  int64_t val[MAXV];
} env;

static int64_t floor_div(int64_t a, int64_t b) { return (int64_t)floor((double)a / (double)b); }
static int64_t floor_mod(int64_t a, int64_t b) { return a - b * floor_div(a, b); }
/* What buffer `mem` holds at i: any fixed function that is not linear. */
static int64_t mem_at(int64_t i) { return ((i * 37 + 11) % 23 + 23) % 23 - 11; }

static bool eval(const ob_expr *e, const env *v, int64_t *out) {
  int64_t a = 0, b = 0, c = 0;
  switch (e->kind) {
  case OB_E_INT: *out = e->ival; return true;
  case OB_E_VAR:
    for (int i = 0; i < v->n; i++)
      if (v->var[i] == e->var) {
        *out = v->val[i];
        return true;
      }
    return false;
  case OB_E_BLOAD:
    if (!eval(e->idx[0], v, &a)) return false;
    *out = mem_at(a);
    return true;
  case OB_E_SELECT:
    if (!eval(e->c, v, &c)) return false;
    return eval(c ? e->a : e->b, v, out);
  case OB_E_BIN:
    if (!eval(e->a, v, &a) || !eval(e->b, v, &b)) return false;
    switch (e->op) {
    case OB_ADD: *out = a + b; return true;
    case OB_SUB: *out = a - b; return true;
    case OB_MUL: *out = a * b; return true;
    case OB_DIV: if (!b) return false; *out = floor_div(a, b); return true;
    case OB_MOD: if (!b) return false; *out = floor_mod(a, b); return true;
    case OB_MIN: *out = a < b ? a : b; return true;
    case OB_MAX: *out = a > b ? a : b; return true;
    case OB_LT: *out = a < b; return true;
    case OB_LE: *out = a <= b; return true;
    case OB_GT: *out = a > b; return true;
    case OB_GE: *out = a >= b; return true;
    case OB_EQ: *out = a == b; return true;
    case OB_NE: *out = a != b; return true;
    case OB_AND: *out = a && b; return true;
    case OB_OR: *out = a || b; return true;
    default: return false;
    }
  default: return false;
  }
}

static int64_t ev(const ob_expr *e, const env *v) {
  int64_t r = 0;
  bool ok = eval(e, v, &r);
  CHECK_MSG(ok, "cannot evaluate %s", ob_expr_str(e));
  return r;
}

/* Evaluates e with no variables bound; e must be a constant expression. */
static int64_t ev0(const ob_expr *e) {
  env none = {0};
  return ev(e, &none);
}

/* Same printed form (te's printer is exported; its structural comparison is not). */
static bool same(const ob_expr *a, const ob_expr *b) {
  char *x = ob_expr_str(a), *y = ob_expr_str(b);
  bool r = x && y && !strcmp(x, y);
  if (!r) fprintf(stderr, "%s is not %s\n", x ? x : "?", y ? y : "?");
  free(x);
  free(y);
  return r;
}

static bool is_var(const ob_expr *e, const ob_ivar *x) { return e->kind == OB_E_VAR && e->var == x; }

static bool is_int(const ob_expr *e, int64_t v) {
  int64_t got;
  return ob_is_const(e, &got) && got == v;
}

/* Checks simplify(e) against e on every point of the vars' boxes (small
 * boxes only) and returns the simplified expression. */
static ob_expr *simp_all(ob_expr *e, int nv, ob_ivar *const *vars) {
  ob_expr *s = ob_simplify(A, e);
  env v = {.n = nv};
  int64_t total = 1;
  for (int i = 0; i < nv; i++) {
    v.var[i] = vars[i];
    total *= ob_ivar_extent(vars[i]);
  }
  int bad = 0;
  for (int64_t p = 0; p < total && bad < 3; p++) {
    int64_t q = p;
    for (int i = 0; i < nv; i++) {
      v.val[i] = q % ob_ivar_extent(vars[i]);
      q /= ob_ivar_extent(vars[i]);
    }
    int64_t x = 0, y = 0;
    if (eval(e, &v, &x) && eval(s, &v, &y) && x == y) continue;
    bad++;
    char *es = ob_expr_str(e), *ss = ob_expr_str(s);
    CHECK_MSG(false, "%s -> %s at point %lld: %lld vs %lld", es, ss, (long long)p, (long long)x,
              (long long)y);
    free(es);
    free(ss);
  }
  CHECK(bad == 0);
  return s;
}

/* ---- ob_is_const, ob_expr_uses_var ------------------------------------------------ */
static void test_is_const(void) {
  ob_ivar *x = ob_te_axis(te, "x", 4);
  int64_t v = 0;
  CHECK(ob_is_const(INT(-7), &v) && v == -7);
  CHECK(ob_is_const(INT(0), NULL));
  CHECK(!ob_is_const(VAR(x), &v));
  CHECK(!ob_is_const(NULL, &v));
  CHECK(!ob_is_const(ADD(INT(1), INT(2)), &v)); /* not folded: that is ob_simplify's job */
  CHECK(!ob_is_const(ob_te_float(te, OB_F32, 1.0), &v));

  ob_ivar *y = ob_te_axis(te, "y", 4), *z = ob_te_axis(te, "z", 4);
  ob_expr *e = ADD(MUL(VAR(x), INT(2)), ob_te_select(te, BIN(OB_LT, VAR(y), INT(2)), INT(1), INT(0)));
  CHECK(ob_expr_uses_var(e, x) && ob_expr_uses_var(e, y) && !ob_expr_uses_var(e, z));
  ob_buffer mem = {.name = "mem", .dtype = OB_I64, .numel = 1000};
  ob_expr *ld = ob_buffer_load(A, &mem, OB_I64, ADD(VAR(z), INT(1)));
  CHECK(ob_expr_uses_var(ld, z) && !ob_expr_uses_var(ld, x));
  CHECK(!ob_expr_uses_var(NULL, x));
}

/* ---- ob_lin_of / ob_lin_to_expr ------------------------------------------------------ */
static int64_t coef_of(const ob_lin *l, const ob_expr *atom) {
  for (int i = 0; i < l->n; i++)
    if (l->atom[i] == atom || (atom->kind == OB_E_VAR && is_var(l->atom[i], atom->var)))
      return l->coef[i];
  return 0;
}

static void test_lin(void) {
  ob_ivar *x = ob_te_axis(te, "x", 10), *y = ob_te_axis(te, "y", 10);
  ob_expr *X = VAR(x), *Y = VAR(y);
  ob_lin l;

  /* offsets cancel: x*4 + y - x*4 + 3 */
  CHECK(ob_lin_of(ADD(SUB(ADD(MUL(X, INT(4)), Y), MUL(X, INT(4))), INT(3)), &l));
  CHECK(l.n == 1 && is_var(l.atom[0], y) && l.coef[0] == 1 && l.c0 == 3);
  /* (x + 2) * 3 - 5 = 3x + 1; constants on either side of * */
  CHECK(ob_lin_of(SUB(MUL(ADD(X, INT(2)), INT(3)), INT(5)), &l));
  CHECK(l.n == 1 && coef_of(&l, X) == 3 && l.c0 == 1);
  CHECK(ob_lin_of(MUL(INT(-2), SUB(Y, X)), &l));
  CHECK(l.n == 2 && coef_of(&l, X) == 2 && coef_of(&l, Y) == -2 && l.c0 == 0);
  /* a constant */
  CHECK(ob_lin_of(SUB(INT(3), INT(10)), &l) && l.n == 0 && l.c0 == -7);
  /* x*y is one non-linear atom; equal atoms add up */
  ob_expr *xy = MUL(X, Y);
  CHECK(ob_lin_of(ADD(ADD(xy, INT(2)), MUL(MUL(X, Y), INT(3))), &l));
  CHECK(l.n == 1 && l.atom[0] == xy && l.coef[0] == 4 && l.c0 == 2);
  /* fuse then split: (x/4)*4 + x%4 -> x, also scaled: (x/4)*8 + (x%4)*2 -> 2x */
  CHECK(ob_lin_of(ADD(MUL(DIV(X, INT(4)), INT(4)), MOD(X, INT(4))), &l));
  CHECK(l.n == 1 && is_var(l.atom[0], x) && l.coef[0] == 1 && l.c0 == 0);
  CHECK(ob_lin_of(ADD(MUL(MOD(X, INT(4)), INT(2)), MUL(DIV(X, INT(4)), INT(8))), &l));
  CHECK(l.n == 1 && is_var(l.atom[0], x) && l.coef[0] == 2);
  /* ... of a compound numerator: ((x*10+y)/5)*5 + (x*10+y)%5 -> 10x + y */
  ob_expr *f = ADD(MUL(X, INT(10)), Y);
  CHECK(ob_lin_of(ADD(MUL(DIV(f, INT(5)), INT(5)), MOD(f, INT(5))), &l));
  CHECK(l.n == 2 && coef_of(&l, X) == 10 && coef_of(&l, Y) == 1 && l.c0 == 0);
  /* not merged: other numerator, other divisor, coefficients that do not match */
  CHECK(ob_lin_of(ADD(MUL(DIV(X, INT(4)), INT(4)), MOD(Y, INT(4))), &l) && l.n == 2);
  CHECK(ob_lin_of(ADD(MUL(DIV(X, INT(4)), INT(4)), MOD(X, INT(2))), &l) && l.n == 2);
  CHECK(ob_lin_of(ADD(MUL(DIV(X, INT(4)), INT(3)), MOD(X, INT(4))), &l) && l.n == 2);
  /* OB_LIN_MAX distinct atoms fit, one more does not */
  ob_expr *sum = INT(1);
  for (int k = 2; k < 2 + OB_LIN_MAX; k++) sum = ADD(sum, DIV(X, INT(k)));
  CHECK(ob_lin_of(sum, &l) && l.n == OB_LIN_MAX && l.c0 == 1);
  CHECK(!ob_lin_of(ADD(sum, DIV(Y, INT(3))), &l));

  /* ob_lin_to_expr gives an expression of the same value */
  env v = {.n = 2, .var = {x, y}};
  struct {
    int n;
    int64_t coef[2], c0;
  } forms[] = {{0, {0, 0}, 0}, {0, {0, 0}, -5}, {1, {1, 0}, 0}, {1, {-1, 0}, 0},
               {2, {-3, 2}, 7}, {2, {4, -1}, -9}, {2, {-1, -1}, 0}};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    ob_lin m = {.n = forms[i].n, .atom = {X, Y}, .coef = {forms[i].coef[0], forms[i].coef[1]},
                .c0 = forms[i].c0};
    ob_expr *e = ob_lin_to_expr(A, &m);
    for (v.val[0] = 0; v.val[0] < 10; v.val[0] += 3)
      for (v.val[1] = 0; v.val[1] < 10; v.val[1] += 4)
        CHECK(ev(e, &v) == m.coef[0] * (m.n > 0 ? v.val[0] : 0) +
                               m.coef[1] * (m.n > 1 ? v.val[1] : 0) + m.c0);
  }
  CHECK(is_int(ob_lin_to_expr(A, &(ob_lin){.c0 = 42}), 42));
}

/* ---- ob_range --------------------------------------------------------------------------- */
static bool range_is(const ob_expr *e, int64_t lo, int64_t hi) {
  int64_t a = 0, b = 0;
  bool ok = ob_range(e, &a, &b);
  if (!ok || a != lo || b != hi) {
    char *s = ob_expr_str(e);
    fprintf(stderr, "range of %s: %s [%lld, %lld], expected [%lld, %lld]\n", s,
            ok ? "got" : "unknown", (long long)a, (long long)b, (long long)lo, (long long)hi);
    free(s);
    return false;
  }
  return true;
}

static void test_range(void) {
  ob_ivar *x = ob_te_axis(te, "x", 10), *y = ob_te_axis(te, "y", 5), *s = ob_te_axis(te, "s", 8),
          *u = ob_te_axis(te, "u", 5), *none = ob_te_axis(te, "none", 0);
  ob_expr *X = VAR(x), *Y = VAR(y), *S = VAR(s), *U = VAR(u);
  int64_t lo, hi;
  CHECK(range_is(INT(-3), -3, -3));
  CHECK(range_is(X, 0, 9));
  CHECK(!ob_range(VAR(none), &lo, &hi)); /* an empty loop has no values */
  CHECK(range_is(SUB(MUL(X, INT(3)), Y), -4, 27));
  CHECK(range_is(MUL(X, INT(-2)), -18, 0));
  CHECK(range_is(MUL(SUB(X, INT(5)), SUB(Y, INT(2))), -10, 10)); /* [-5, 4] x [-2, 2] */
  CHECK(range_is(MUL(SUB(X, INT(5)), SUB(Y, INT(3))), -12, 15)); /* [-5, 4] x [-3, 1] */
  /* floor semantics for negative numerators */
  CHECK(range_is(DIV(SUB(S, INT(5)), INT(4)), -2, 0));  /* [-5, 2] / 4 */
  CHECK(range_is(DIV(SUB(S, INT(8)), INT(8)), -1, -1)); /* [-8, -1] / 8 */
  CHECK(range_is(MOD(SUB(S, INT(5)), INT(4)), 0, 3));   /* negative part: the whole [0, 4) */
  /* mod of a numerator that does not wrap stays narrow; one that wraps is [0, c) */
  CHECK(range_is(MOD(U, INT(8)), 0, 4));
  CHECK(range_is(MOD(ADD(U, INT(16)), INT(8)), 0, 4));
  CHECK(range_is(MOD(ADD(U, INT(6)), INT(8)), 0, 7));
  CHECK(range_is(MOD(X, INT(10)), 0, 9));
  CHECK(range_is(BIN(OB_MIN, X, INT(3)), 0, 3));
  CHECK(range_is(BIN(OB_MAX, X, INT(3)), 3, 9));
  CHECK(range_is(ob_te_select(te, BIN(OB_LT, X, INT(2)), Y, ADD(Y, INT(20))), 0, 24));
  /* unknown: a divisor that is not one constant, a non-positive one, a load, a float */
  CHECK(!ob_range(DIV(X, ADD(Y, INT(1))), &lo, &hi));
  CHECK(!ob_range(DIV(X, INT(-2)), &lo, &hi));
  CHECK(!ob_range(MOD(X, INT(0)), &lo, &hi));
  ob_buffer mem = {.name = "mem", .dtype = OB_I64, .numel = 100};
  CHECK(!ob_range(ADD(ob_buffer_load(A, &mem, OB_I64, X), INT(1)), &lo, &hi));
  CHECK(!ob_range(ob_te_float(te, OB_F32, 2.0), &lo, &hi));
  CHECK(!ob_range(BIN(OB_LT, X, Y), &lo, &hi));
}

/* ---- ob_simplify ------------------------------------------------------------------------ */
static void test_simplify(void) {
  ob_ivar *x = ob_te_axis(te, "x", 10), *y = ob_te_axis(te, "y", 8), *y9 = ob_te_axis(te, "y9", 9),
          *s = ob_te_axis(te, "s", 8);
  ob_expr *X = VAR(x), *Y = VAR(y), *S = VAR(s);
  ob_ivar *xy[2] = {x, y};

  CHECK(ob_simplify(A, NULL) == NULL);
  /* constant folding, floor division and modulo of every sign */
  CHECK(is_int(ob_simplify(A, MUL(ADD(INT(3), INT(4)), INT(2))), 14));
  static const int64_t dm[][4] = {/* a, b, a/b, a%b */
                                  {7, 2, 3, 1},    {-7, 2, -4, 1},  {7, -2, -4, -1},
                                  {-7, -2, 3, -1}, {-8, 4, -2, 0},  {0, 3, 0, 0},
                                  {-1, 8, -1, 7},  {1, -8, -1, -7}, {123, 10, 12, 3}};
  for (size_t i = 0; i < sizeof dm / sizeof dm[0]; i++) {
    ob_expr *q = ob_simplify(A, DIV(INT(dm[i][0]), INT(dm[i][1])));
    ob_expr *r = ob_simplify(A, MOD(INT(dm[i][0]), INT(dm[i][1])));
    CHECK_MSG(is_int(q, dm[i][2]) && is_int(r, dm[i][3]), "%lld / %lld", (long long)dm[i][0],
              (long long)dm[i][1]);
    CHECK(ev0(DIV(INT(dm[i][0]), INT(dm[i][1]))) == dm[i][2]); /* the evaluator agrees */
  }
  CHECK(is_int(ob_simplify(A, BIN(OB_MIN, INT(-3), INT(2))), -3));
  CHECK(is_int(ob_simplify(A, BIN(OB_MAX, INT(-3), INT(2))), 2));
  /* division by a constant 0 is left alone (and does not crash) */
  CHECK(!ob_is_const(ob_simplify(A, DIV(INT(5), INT(0))), NULL));
  CHECK(!ob_is_const(ob_simplify(A, MOD(X, INT(0))), NULL));

  /* linear canonical form */
  CHECK(is_var(simp_all(SUB(ADD(MUL(X, INT(16)), Y), MUL(X, INT(16))), 2, xy), y));
  CHECK(is_int(simp_all(SUB(ADD(X, INT(1)), X), 2, xy), 1));
  (void)simp_all(SUB(MUL(X, Y), MUL(Y, X)), 2, xy); /* x*y and y*x: only its value is checked */
  CHECK(is_int(simp_all(SUB(ADD(MUL(MUL(X, Y), INT(4)), INT(3)), MUL(MUL(X, Y), INT(4))), 2, xy), 3));
  CHECK(is_var(simp_all(MUL(X, INT(1)), 2, xy), x));
  CHECK(is_int(simp_all(MUL(X, INT(0)), 2, xy), 0));

  /* div/mod resolved by the range of the remainder */
  CHECK(is_var(simp_all(DIV(ADD(MUL(X, INT(8)), Y), INT(8)), 2, xy), x));
  CHECK(is_var(simp_all(MOD(ADD(MUL(X, INT(8)), Y), INT(8)), 2, xy), y));
  ob_expr *q = simp_all(DIV(ADD(ADD(MUL(X, INT(8)), Y), INT(16)), INT(8)), 2, xy);
  ob_lin l;
  CHECK(ob_lin_of(q, &l) && l.n == 1 && is_var(l.atom[0], x) && l.coef[0] == 1 && l.c0 == 2);
  CHECK(is_var(simp_all(DIV(X, INT(1)), 2, xy), x));
  CHECK(is_int(simp_all(MOD(X, INT(1)), 2, xy), 0));
  CHECK(is_int(simp_all(DIV(Y, INT(8)), 2, xy), 0));
  /* a remainder that can reach the divisor keeps the division (y9 < 9) */
  ob_ivar *xy9[2] = {x, y9};
  ob_expr *keep = simp_all(DIV(ADD(MUL(X, INT(8)), VAR(y9)), INT(8)), 2, xy9);
  CHECK(keep->kind == OB_E_BIN && keep->op == OB_DIV);
  /* negative offsets: floor, not truncation (C's (s-8)/8 is 0 for s >= 1) */
  CHECK(is_int(simp_all(DIV(SUB(S, INT(8)), INT(8)), 1, &s), -1));
  CHECK(is_var(simp_all(MOD(SUB(S, INT(8)), INT(8)), 1, &s), s));
  ob_expr *m1 = simp_all(DIV(SUB(S, INT(1)), INT(8)), 1, &s); /* -1 at s = 0, else 0 */
  CHECK(!ob_is_const(m1, NULL));
  env e0 = {.n = 1, .var = {s}, .val = {0}};
  CHECK(ev(m1, &e0) == -1);
  e0.val[0] = 1;
  CHECK(ev(m1, &e0) == 0);
  /* fuse then split, through the simplifier: (f/16)*16 + f%16 with f = x*8 + y */
  ob_expr *fz = ADD(MUL(X, INT(8)), Y);
  ob_expr *re = simp_all(ADD(MUL(DIV(fz, INT(16)), INT(16)), MOD(fz, INT(16))), 2, xy);
  CHECK(ob_lin_of(re, &l) && l.n == 2 && coef_of(&l, X) == 8 && coef_of(&l, Y) == 1 && l.c0 == 0);

  /* min/max and comparisons decided by ranges */
  CHECK(is_var(simp_all(BIN(OB_MIN, X, INT(20)), 2, xy), x));
  CHECK(is_var(simp_all(BIN(OB_MAX, X, INT(-1)), 2, xy), x));
  CHECK(is_int(simp_all(BIN(OB_MAX, Y, INT(7)), 2, xy), 7));
  CHECK(!ob_is_const(simp_all(BIN(OB_MIN, X, INT(5)), 2, xy), NULL));
  CHECK(is_int(simp_all(BIN(OB_LT, X, INT(10)), 2, xy), 1));
  CHECK(is_int(simp_all(BIN(OB_LT, X, INT(0)), 2, xy), 0));
  CHECK(is_int(simp_all(BIN(OB_GE, ADD(X, Y), INT(0)), 2, xy), 1));
  CHECK(is_int(simp_all(BIN(OB_GT, X, ADD(Y, INT(9))), 2, xy), 0));
  CHECK(is_int(simp_all(BIN(OB_LE, SUB(X, INT(9)), INT(0)), 2, xy), 1));
  CHECK(!ob_is_const(simp_all(BIN(OB_LT, ADD(X, Y), INT(3)), 2, xy), NULL));
  /* and / or / select with a decided side */
  ob_expr *yl = BIN(OB_LT, Y, INT(3));
  CHECK(same(simp_all(BIN(OB_AND, BIN(OB_LT, X, INT(10)), yl), 2, xy), yl));
  CHECK(is_int(simp_all(BIN(OB_AND, yl, BIN(OB_LT, X, INT(0))), 2, xy), 0));
  CHECK(same(simp_all(BIN(OB_OR, BIN(OB_LT, X, INT(0)), yl), 2, xy), yl));
  CHECK(is_int(simp_all(BIN(OB_OR, yl, BIN(OB_GE, X, INT(0))), 2, xy), 1));
  CHECK(is_var(simp_all(ob_te_select(te, BIN(OB_LT, X, INT(10)), Y, X), 2, xy), y));
  CHECK(is_var(simp_all(ob_te_select(te, BIN(OB_GT, X, INT(10)), Y, X), 2, xy), x));

  /* inside a load: the index is simplified, the load stays an atom */
  ob_buffer mem = {.name = "mem", .dtype = OB_I64, .numel = 1000};
  ob_expr *ld = ob_buffer_load(A, &mem, OB_I64, SUB(ADD(MUL(X, INT(4)), Y), MUL(X, INT(4))));
  ob_expr *sl = simp_all(ADD(ld, ld), 2, xy);
  CHECK(ob_lin_of(sl, &l) && l.n == 1 && l.coef[0] == 2 && l.atom[0]->kind == OB_E_BLOAD &&
        is_var(l.atom[0]->idx[0], y));
  char *printed = ob_expr_str(l.atom[0]);
  CHECK_MSG(printed && !strcmp(printed, "mem[y]"), "%s", printed ? printed : "(null)");
  free(printed);

  /* the input is left as it was */
  ob_expr *orig = ADD(SUB(MUL(X, INT(16)), MUL(X, INT(16))), DIV(ADD(MUL(X, INT(8)), Y), INT(8)));
  char *before = ob_expr_str(orig);
  (void)ob_simplify(A, orig);
  char *after = ob_expr_str(orig);
  CHECK(before && after && !strcmp(before, after));
  free(before);
  free(after);
}

/* ---- ob_stmt_subst ----------------------------------------------------------------------- */
static void test_stmt_subst(void) {
  ob_ivar *x = ob_te_axis(te, "x", 4), *y = ob_te_axis(te, "y", 4);
  ob_buffer out = {.name = "out", .dtype = OB_I64, .numel = 64};
  ob_stmt *st = ob_stmt_new(A, OB_S_STORE);
  st->buf = &out;
  st->index = ADD(MUL(VAR(x), INT(4)), VAR(y));
  st->value = MUL(VAR(x), VAR(y));
  ob_stmt *loop = ob_stmt_new(A, OB_S_FOR);
  loop->var = y;
  loop->body = st;
  ob_stmt *c = ob_stmt_subst(A, loop, x, INT(2));
  CHECK(c != loop && c->kind == OB_S_FOR && c->var == y && c->body != st);
  ob_lin l;
  CHECK(ob_lin_of(c->body->index, &l) && l.n == 1 && is_var(l.atom[0], y) && l.c0 == 8);
  CHECK(ob_lin_of(c->body->value, &l) && l.n == 1 && is_var(l.atom[0], y) && l.coef[0] == 2);
  CHECK(ob_expr_uses_var(st->index, x)); /* the original keeps x */
}

/* ---- random expressions -------------------------------------------------------------------- */
typedef struct gen {
  ob_rng rng;
  ob_ivar *var[3];
  ob_buffer *mem;
} gen;

static int64_t pick(gen *g, int64_t lo, int64_t hi) { /* uniform in [lo, hi] */
  return lo + (int64_t)(ob_rng_next(&g->rng) % (uint64_t)(hi - lo + 1));
}

static ob_expr *gen_int(gen *g, int depth);

static ob_expr *gen_cond(gen *g, int depth) {
  static const ob_binop cmps[] = {OB_LT, OB_LE, OB_GT, OB_GE, OB_EQ, OB_NE};
  ob_expr *c = BIN(cmps[pick(g, 0, 5)], gen_int(g, depth - 1), gen_int(g, depth - 1));
  if (depth > 1 && pick(g, 0, 3) == 0)
    c = BIN(pick(g, 0, 1) ? OB_AND : OB_OR, c, gen_cond(g, depth - 1));
  return c;
}

static ob_expr *gen_int(gen *g, int depth) {
  if (depth <= 0 || pick(g, 0, 5) == 0)
    return pick(g, 0, 2) ? VAR(g->var[pick(g, 0, 2)]) : INT(pick(g, -9, 9));
  ob_expr *a = gen_int(g, depth - 1);
  switch (pick(g, 0, 13)) {
  case 0:
  case 1: return ADD(a, gen_int(g, depth - 1));
  case 2:
  case 3: return SUB(a, gen_int(g, depth - 1));
  case 4: return MUL(a, INT(pick(g, -4, 4)));
  case 5: return MUL(INT(pick(g, -4, 4)), a);
  case 6: return MUL(a, VAR(g->var[pick(g, 0, 2)])); /* non-linear */
  case 7: {
    int64_t c = pick(g, 1, 9);
    if (pick(g, 0, 5) == 0) c = -c; /* negative divisors fold only when constant */
    return DIV(a, INT(c));
  }
  case 8: return MOD(a, INT(pick(g, 1, 9)));
  case 9: return BIN(pick(g, 0, 1) ? OB_MIN : OB_MAX, a, gen_int(g, depth - 1));
  case 10: return ob_te_select(te, gen_cond(g, depth - 1), a, gen_int(g, depth - 1));
  case 11: return ob_buffer_load(A, g->mem, OB_I64, a);
  case 12: /* by a positive divisor that is not a constant: no range, no folding */
    return BIN(pick(g, 0, 1) ? OB_DIV : OB_MOD, a, ADD(VAR(g->var[pick(g, 0, 2)]), INT(1)));
  default: {
    /* the shape fuse + split leaves: (a/c)*c*k + (a%c)*k */
    int64_t c = pick(g, 1, 8), k = pick(g, -3, 3);
    return ADD(MUL(DIV(a, INT(c)), INT(c * k)), MUL(MOD(a, INT(c)), INT(k)));
  }
  }
}

static void test_random(void) {
  gen g = {.rng = {12345}};
  ob_buffer mem = {.name = "mem", .dtype = OB_I64, .numel = 1 << 20};
  g.mem = &mem;
  int nexpr = 20000, npoints = 24, nlin = 0, natoms = 0, nrange = 0, nconst = 0, bad = 0;
  int64_t nevals = 0;
  for (int i = 0; i < nexpr && bad < 10; i++) {
    /* fresh variables with random extents (1 to 20) for each expression */
    for (int k = 0; k < 3; k++) {
      char name[8];
      snprintf(name, sizeof name, "v%d", k);
      g.var[k] = ob_te_axis(te, name, pick(&g, 1, 20));
    }
    ob_expr *e = gen_int(&g, (int)pick(&g, 1, 5));
    ob_expr *s = ob_simplify(A, e);
    ob_lin l;
    bool has_lin = ob_lin_of(e, &l);
    ob_expr *le = has_lin ? ob_lin_to_expr(A, &l) : NULL;
    int64_t lo = 0, hi = 0, slo = 0, shi = 0;
    bool has_range = ob_range(e, &lo, &hi), s_range = ob_range(s, &slo, &shi);
    nlin += has_lin;
    natoms += has_lin && l.n > 0;
    nrange += has_range;
    nconst += ob_is_const(s, NULL);
    env v = {.n = 3, .var = {g.var[0], g.var[1], g.var[2]}};
    for (int p = 0; p < npoints; p++) {
      for (int k = 0; k < 3; k++) v.val[k] = pick(&g, 0, ob_ivar_extent(g.var[k]) - 1);
      int64_t want = 0, got = 0, lin = 0;
      bool ok = eval(e, &v, &want);
      if (!ok) continue; /* cannot happen: every divisor is a non-zero constant */
      nevals++;
      bool fine = eval(s, &v, &got) && got == want;
      if (has_lin) {
        int64_t sum = l.c0;
        for (int a = 0; a < l.n; a++) sum += l.coef[a] * ev(l.atom[a], &v);
        fine = fine && sum == want && eval(le, &v, &lin) && lin == want;
      }
      if (has_range) fine = fine && lo <= want && want <= hi;
      if (s_range) fine = fine && slo <= want && want <= shi;
      if (!fine) {
        char *es = ob_expr_str(e), *ss = ob_expr_str(s);
        CHECK_MSG(false,
                  "%s (extents %lld %lld %lld) at (%lld, %lld, %lld) is %lld; simplified %s "
                  "gives %lld; range %s [%lld, %lld], of the simplified %s [%lld, %lld]; "
                  "linear form %s %lld",
                  es, (long long)ob_ivar_extent(g.var[0]), (long long)ob_ivar_extent(g.var[1]),
                  (long long)ob_ivar_extent(g.var[2]), (long long)v.val[0], (long long)v.val[1],
                  (long long)v.val[2], (long long)want, ss, (long long)got,
                  has_range ? "" : "(none)", (long long)lo, (long long)hi,
                  s_range ? "" : "(none)", (long long)slo, (long long)shi,
                  has_lin ? "" : "(none)", (long long)lin);
        free(es);
        free(ss);
        bad++;
        break;
      }
    }
  }
  CHECK_MSG(bad == 0, "%d random expressions disagree", bad);
  /* the generator reaches every path (not a test that only builds constants) */
  CHECK_MSG(nevals > nexpr * npoints / 2, "evaluations %lld", (long long)nevals);
  /* at most 2^5 atoms in a depth-5 tree: every one has a linear form, most with atoms */
  CHECK_MSG(nlin == nexpr && natoms > nexpr / 2, "linear forms %d (%d with atoms) of %d", nlin,
            natoms, nexpr);
  CHECK_MSG(nrange > nexpr / 4 && nrange < nexpr, "ranges %d of %d", nrange, nexpr);
  CHECK_MSG(nconst > 0 && nconst < nexpr, "constants %d of %d", nconst, nexpr);
  printf("random: %d expressions, %lld evaluations; %d with a linear form, %d with a range, "
         "%d simplified to a constant\n",
         nexpr, (long long)nevals, nlin, nrange, nconst);
}

int main(void) {
  ob_ctx *ctx = NULL;
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  CHECK(ob_te_new(ctx, &te) == OB_OK);
  A = ob_arena_new(ctx, 1 << 20);
  CHECK(A != NULL);
  if (!A) return CHECK_DONE();
  test_is_const();
  test_lin();
  test_range();
  test_simplify();
  test_stmt_subst();
  test_random();
  ob_arena_free(A);
  ob_te_free(te);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
