/* test_arith.c: unit tests of the index arithmetic that lowering and codegen
 * stand on (arith.c): range analysis (ob_range), linear forms (ob_lin_of)
 * and the simplifier (ob_simplify). Known cases pin down what each rule
 * does (floor semantics, cancellation, div/mod by known ranges, the
 * fuse/split merge, comparisons and min/max decided by ranges); then
 * random expressions over small variables are checked at every point of
 * their domain: a range must hold every value, a linear form and a
 * simplified expression must have the same value as the original, and the
 * original must be left as it was. A white-box test (see CMakeLists.txt):
 * it links the library's objects and reads the expression nodes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#if __has_include("opbench/ir.h")
#include "opbench/ir.h" /* the loop IR and its arithmetic as a module of their own */
#else
#include "lower/lower_impl.h"
#endif
#include "te/te_impl.h"

static ob_ctx *ctx;
static ob_te *te;
static ob_arena *A; /* where the simplifier builds */

#define I(v) ob_te_int(te, (v))
#define V(iv) ob_te_var(te, (iv))
#define B(op, a, b) ob_te_bin(te, (op), (a), (b))
#define ADD(a, b) B(OB_ADD, a, b)
#define SUB(a, b) B(OB_SUB, a, b)
#define MUL(a, b) B(OB_MUL, a, b)
#define DIV(a, b) B(OB_DIV, a, b)
#define MOD(a, b) B(OB_MOD, a, b)

/* ---- exact evaluation ------------------------------------------------------ */

typedef struct env {
  const ob_ivar *var[4];
  int64_t val[4];
  int n;
} env;

static int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t fmod_(int64_t a, int64_t b) { return a - fdiv(a, b) * b; }

/* The value of an integer or boolean expression (booleans as 0/1). */
static int64_t eval(const ob_expr *e, const env *en) {
  switch (e->kind) {
  case OB_E_INT: return e->ival;
  case OB_E_VAR:
    for (int i = 0; i < en->n; i++)
      if (en->var[i] == e->var) return en->val[i];
    OB_ASSERT(!"a variable without a value");
    return 0;
  case OB_E_SELECT: return eval(e->c, en) ? eval(e->a, en) : eval(e->b, en);
  case OB_E_BIN: {
    int64_t x = eval(e->a, en), y = eval(e->b, en);
    switch (e->op) {
    case OB_ADD: return x + y;
    case OB_SUB: return x - y;
    case OB_MUL: return x * y;
    case OB_DIV: return fdiv(x, y);
    case OB_MOD: return fmod_(x, y);
    case OB_MIN: return x < y ? x : y;
    case OB_MAX: return x > y ? x : y;
    case OB_LT: return x < y;
    case OB_LE: return x <= y;
    case OB_GT: return x > y;
    case OB_GE: return x >= y;
    case OB_EQ: return x == y;
    case OB_NE: return x != y;
    case OB_AND: return x && y;
    case OB_OR: return x || y;
    default: break;
    }
  }
  /* fall through */
  default: OB_ASSERT(!"not an integer expression"); return 0;
  }
}

/* Calls fn at every point of the vars' domain; false stops. */
static void each_point(env *en, int k, bool (*fn)(const env *, void *), void *user, bool *go) {
  if (!*go) return;
  if (k == en->n) {
    *go = fn(en, user);
    return;
  }
  for (int64_t v = 0; v < en->var[k]->extent && *go; v++) {
    en->val[k] = v;
    each_point(en, k + 1, fn, user, go);
  }
}

static char *str(const ob_expr *e) {
  char *s = ob_expr_str(e);
  OB_ASSERT(s);
  return s;
}

/* ---- known cases -------------------------------------------------------------- */

static void expect_range(const ob_expr *e, int64_t lo, int64_t hi) {
  int64_t l = 0, h = 0;
  bool ok = ob_range(e, &l, &h);
  char *s = str(e);
  CHECK_MSG(ok && l == lo && h == hi, "range of %s: %s [%lld, %lld], want [%lld, %lld]", s, ok ? "" : "none",
            (long long)l, (long long)h, (long long)lo, (long long)hi);
  free(s);
}

static void expect_no_range(const ob_expr *e) {
  int64_t l, h;
  char *s = str(e);
  CHECK_MSG(!ob_range(e, &l, &h), "%s has a range [%lld, %lld]; it should have none", s, (long long)l,
            (long long)h);
  free(s);
}

static void expect_simple(ob_expr *e, const char *want) {
  char *before = str(e);
  ob_expr *s = ob_simplify(A, e);
  char *got = s ? str(s) : NULL;
  char *after = str(e);
  CHECK_MSG(got && !strcmp(got, want), "simplify %s: got %s, want %s", before, got ? got : "NULL", want);
  CHECK_MSG(!strcmp(before, after), "simplify changed its input: %s became %s", before, after);
  free(before);
  free(got);
  free(after);
}

static void test_ranges(void) {
  ob_ivar *x = ob_te_axis(te, "x", 16), *y = ob_te_axis(te, "y", 8), *one = ob_te_axis(te, "o", 1);
  expect_range(I(-3), -3, -3);
  expect_range(V(x), 0, 15);
  expect_range(V(one), 0, 0);
  expect_range(ADD(MUL(V(x), I(4)), I(3)), 3, 63);
  expect_range(SUB(V(x), V(y)), -7, 15);
  expect_range(MUL(V(x), I(-2)), -30, 0);
  expect_range(MUL(SUB(V(x), I(8)), SUB(V(y), I(3))), -32, 28); /* products of both signs */
  /* floor division and modulo, negative numerators included */
  expect_range(DIV(V(x), I(4)), 0, 3);
  expect_range(DIV(SUB(V(x), I(5)), I(4)), -2, 2);
  expect_range(MOD(V(x), I(4)), 0, 3);
  expect_range(MOD(V(x), I(32)), 0, 15);          /* no wrap: the tighter range */
  expect_range(MOD(ADD(V(y), I(2)), I(16)), 2, 9);
  expect_range(MOD(ADD(V(x), I(3)), I(8)), 0, 7); /* wraps */
  expect_range(MOD(ADD(V(y), I(6)), I(8)), 0, 7); /* 6..13 wraps at 8 */
  expect_range(MOD(SUB(V(x), I(20)), I(8)), 0, 7);
  expect_range(B(OB_MIN, V(x), V(y)), 0, 7);
  expect_range(B(OB_MAX, V(x), ADD(V(y), I(10))), 10, 17);
  expect_range(ob_te_select(te, B(OB_LT, V(x), V(y)), V(x), ADD(V(y), I(20))), 0, 27);
  /* no range: a divisor that is not a positive constant, a load, a float */
  expect_no_range(DIV(V(x), V(y)));
  expect_no_range(MOD(V(x), I(0)));
  expect_no_range(DIV(V(x), I(-2)));
  int64_t shape[1] = {16};
  ob_tensor *t = ob_te_placeholder(te, "t", 1, shape, OB_I64);
  expect_no_range(ADD(ob_te_load(te, t, 1, (ob_expr *[]){V(x)}), I(1)));
  expect_no_range(ob_te_float(te, OB_F32, 1.5));
  expect_no_range(NULL); /* an earlier allocation's failure: nothing known */
}

static void test_simplify(void) {
  ob_ivar *x = ob_te_axis(te, "x", 16), *y = ob_te_axis(te, "y", 8), *z = ob_te_axis(te, "z", 5);
  /* constant folding, floor semantics */
  expect_simple(MUL(ADD(I(3), I(4)), I(2)), "14");
  expect_simple(DIV(I(7), I(2)), "3");
  expect_simple(DIV(I(-7), I(2)), "-4");
  expect_simple(MOD(I(-7), I(2)), "1");
  expect_simple(DIV(I(7), I(-2)), "-4");
  expect_simple(MOD(I(7), I(-2)), "-1");
  expect_simple(B(OB_MIN, I(3), I(-2)), "-2");
  expect_simple(B(OB_MAX, I(3), I(-2)), "3");
  expect_simple(DIV(I(7), I(0)), "(7 / 0)"); /* left for the program to fail on, not folded */
  /* linear canonical form: offsets cancel, constants gather */
  expect_simple(SUB(ADD(MUL(V(x), I(16)), V(y)), MUL(V(x), I(16))), "y");
  expect_simple(ADD(ADD(V(x), I(3)), SUB(I(2), V(x))), "5");
  expect_simple(SUB(MUL(I(3), ADD(V(x), I(1))), I(3)), "(x * 3)");
  expect_simple(SUB(V(y), V(x)), "(y - x)");
  expect_simple(SUB(I(0), V(x)), "(x * -1)");
  /* what fuse then split leaves: (x / c) * c + x % c is x */
  expect_simple(ADD(MUL(DIV(V(x), I(4)), I(4)), MOD(V(x), I(4))), "x");
  expect_simple(ADD(MUL(DIV(V(x), I(4)), I(8)), MUL(MOD(V(x), I(4)), I(2))), "(x * 2)");
  expect_simple(ADD(MUL(DIV(V(x), I(4)), I(4)), MOD(V(x), I(8))),
                "(((x / 4) * 4) + (x % 8))"); /* different divisors: no merge */
  /* div/mod by a constant when the remainder's range is known */
  expect_simple(DIV(ADD(MUL(V(x), I(8)), V(y)), I(8)), "x");
  expect_simple(MOD(ADD(MUL(V(x), I(8)), V(y)), I(8)), "y");
  expect_simple(DIV(ADD(ADD(MUL(V(x), I(8)), V(y)), I(8)), I(8)), "(x + 1)");
  /* a remainder that may reach the divisor (z < 5, divisor 4), or an
   * offset that moves the quotient: kept */
  expect_simple(DIV(ADD(MUL(V(x), I(8)), V(z)), I(4)), "(((x * 8) + z) / 4)");
  expect_simple(DIV(ADD(V(x), I(1)), I(4)), "((x + 1) / 4)");
  expect_simple(DIV(V(x), I(1)), "x");
  expect_simple(MOD(V(x), I(1)), "0");
  /* min/max and comparisons decided by ranges (guards that always hold) */
  expect_simple(B(OB_MIN, V(y), I(10)), "y");
  expect_simple(B(OB_MAX, V(y), I(10)), "10");
  expect_simple(B(OB_MIN, V(x), V(y)), "min(x, y)");
  expect_simple(B(OB_LT, V(y), I(8)), "1");
  expect_simple(B(OB_GE, V(y), I(8)), "0");
  expect_simple(B(OB_LE, ADD(V(y), I(1)), I(8)), "1");
  expect_simple(B(OB_GT, V(y), I(7)), "0");
  expect_simple(B(OB_LT, V(x), V(y)), "(x < y)");
  expect_simple(B(OB_AND, B(OB_LT, V(x), I(100)), B(OB_LT, V(x), V(y))), "(x < y)");
  expect_simple(B(OB_OR, B(OB_LT, V(x), V(y)), B(OB_GE, V(y), I(0))), "1");
  expect_simple(ob_te_select(te, B(OB_LT, V(y), I(8)), V(x), V(z)), "x");
  expect_simple(ob_te_select(te, B(OB_LT, V(y), I(0)), V(x), ADD(V(z), I(0))), "z");
  CHECK(ob_simplify(A, NULL) == NULL);
}

static void test_lin(void) {
  ob_ivar *x = ob_te_axis(te, "x", 16), *y = ob_te_axis(te, "y", 8);
  ob_lin l;
  CHECK(ob_lin_of(ADD(SUB(ADD(MUL(V(x), I(3)), MUL(V(y), I(2))), MUL(V(x), I(3))), I(5)), &l));
  CHECK(l.n == 1 && l.atom[0]->kind == OB_E_VAR && l.atom[0]->var == y && l.coef[0] == 2 && l.c0 == 5);
  CHECK(ob_lin_of(MUL(I(4), SUB(I(1), V(x))), &l) && l.n == 1 && l.coef[0] == -4 && l.c0 == 4);
  /* a non-linear part is an atom of its own; equal ones merge */
  ob_expr *xy = MUL(V(x), V(y));
  CHECK(ob_lin_of(ADD(xy, MUL(MUL(V(x), V(y)), I(2))), &l) && l.n == 1 && l.coef[0] == 3);
  CHECK(ob_lin_of(I(-9), &l) && l.n == 0 && l.c0 == -9);
  /* more atoms than a form holds */
  ob_expr *many = I(0);
  for (int k = 2; k < OB_LIN_MAX + 3; k++) many = ADD(many, DIV(V(x), I(k)));
  CHECK(!ob_lin_of(many, &l));
  CHECK(!ob_lin_of(NULL, &l));
  /* and the simplifier leaves such a sum correct */
  ob_expr *s = ob_simplify(A, many);
  env en = {.var = {x}, .n = 1};
  int bad = 0;
  for (int64_t v = 0; v < 16; v++) {
    en.val[0] = v;
    bad += !s || eval(s, &en) != eval(many, &en);
  }
  CHECK(bad == 0);
  CHECK(ob_expr_uses_var(many, x) && !ob_expr_uses_var(many, y) && !ob_expr_uses_var(NULL, x));
  int64_t c = 0;
  CHECK(ob_is_const(I(12), &c) && c == 12 && !ob_is_const(V(x), NULL) && !ob_is_const(NULL, NULL));
}

/* ---- random expressions, every point ----------------------------------------- */

typedef struct gen {
  ob_rng rng;
  ob_ivar *var[3];
} gen;

static int64_t pick(gen *g, int64_t n) { return (int64_t)(ob_rng_next(&g->rng) % (uint64_t)n); }

static ob_expr *gen_int(gen *g, int depth);

static ob_expr *gen_cond(gen *g, int depth) {
  static const ob_binop cmp[] = {OB_LT, OB_LE, OB_GT, OB_GE, OB_EQ, OB_NE};
  ob_expr *c = B(cmp[pick(g, 6)], gen_int(g, depth - 1), gen_int(g, depth - 1));
  if (depth > 1 && pick(g, 3) == 0) c = B(pick(g, 2) ? OB_AND : OB_OR, c, gen_cond(g, depth - 1));
  return c;
}

static ob_expr *gen_int(gen *g, int depth) {
  if (depth <= 0 || pick(g, 4) == 0)
    return pick(g, 3) ? V(g->var[pick(g, 3)]) : I(pick(g, 18) - 5);
  switch (pick(g, 9)) {
  case 0: return ADD(gen_int(g, depth - 1), gen_int(g, depth - 1));
  case 1: return SUB(gen_int(g, depth - 1), gen_int(g, depth - 1));
  case 2: return MUL(gen_int(g, depth - 1), I(pick(g, 9) - 3));
  case 3: return MUL(gen_int(g, depth - 1), gen_int(g, depth - 2));
  case 4: return DIV(gen_int(g, depth - 1), I(1 + pick(g, 8)));
  case 5: return MOD(gen_int(g, depth - 1), I(1 + pick(g, 8)));
  case 6: return B(pick(g, 2) ? OB_MIN : OB_MAX, gen_int(g, depth - 1), gen_int(g, depth - 1));
  case 7: return ob_te_select(te, gen_cond(g, depth - 1), gen_int(g, depth - 1), gen_int(g, depth - 1));
  default: /* the shapes lowering makes: c * (a / c) + a % c, split offsets */
    {
      ob_expr *a = gen_int(g, depth - 1);
      int64_t c = 2 + pick(g, 6);
      return ADD(MUL(DIV(a, I(c)), I(c)), MOD(a, I(c)));
    }
  }
}

typedef struct pcheck {
  const ob_expr *e, *s;
  bool has_range, has_srange, has_lin;
  int64_t lo, hi, slo, shi;
  int64_t vmin, vmax; /* the values actually taken */
  ob_lin lin;
  int bad_range, bad_simplify, bad_lin;
} pcheck;

static bool check_point(const env *en, void *user) {
  pcheck *p = user;
  int64_t v = eval(p->e, en);
  if (v < p->vmin) p->vmin = v;
  if (v > p->vmax) p->vmax = v;
  if (p->has_range && (v < p->lo || v > p->hi)) p->bad_range++;
  if (p->s && eval(p->s, en) != v) p->bad_simplify++;
  if (p->has_srange && (v < p->slo || v > p->shi)) p->bad_range++;
  if (p->has_lin) {
    int64_t sum = p->lin.c0;
    for (int i = 0; i < p->lin.n; i++) sum += p->lin.coef[i] * eval(p->lin.atom[i], en);
    if (sum != v) p->bad_lin++;
  }
  return p->bad_range + p->bad_simplify + p->bad_lin < 3;
}

static void test_random(void) {
  gen g = {.rng = {20240611}};
  int trials = 3000, exact = 0, shrunk = 0, failures = 0;
  for (int t = 0; t < trials; t++) {
    for (int k = 0; k < 3; k++) {
      static const char *const names[3] = {"x", "y", "z"};
      g.var[k] = ob_te_axis(te, names[k], 1 + pick(&g, 7));
    }
    ob_expr *e = gen_int(&g, 1 + (int)pick(&g, 4));
    char *before = str(e);
    pcheck p = {.e = e, .vmin = INT64_MAX, .vmax = INT64_MIN};
    p.has_range = ob_range(e, &p.lo, &p.hi);
    p.has_lin = ob_lin_of(e, &p.lin);
    p.s = ob_simplify(A, e);
    p.has_srange = p.s && ob_range(p.s, &p.slo, &p.shi);
    char *after = str(e), *simple = p.s ? str(p.s) : NULL;
    env en = {.var = {g.var[0], g.var[1], g.var[2]}, .n = 3};
    bool go = true;
    each_point(&en, 0, check_point, &p, &go);
    exact += p.has_range && p.lo == p.vmin && p.hi == p.vmax;
    shrunk += simple && strlen(simple) < strlen(before);
    bool ok = p.s && !p.bad_range && !p.bad_simplify && !p.bad_lin && !strcmp(before, after);
    if (!ok && failures++ < 5)
      CHECK_MSG(0, "%s (extents %lld %lld %lld): simplified %s; range %s [%lld, %lld] (%d outside); %d wrong "
                   "simplified values, %d wrong linear values; input %s",
                before, (long long)g.var[0]->extent, (long long)g.var[1]->extent, (long long)g.var[2]->extent,
                simple ? simple : "NULL", p.has_range ? "" : "none", (long long)p.lo, (long long)p.hi, p.bad_range,
                p.bad_simplify, p.bad_lin, strcmp(before, after) ? "changed" : "kept");
    free(before);
    free(after);
    free(simple);
  }
  CHECK_MSG(failures == 0, "%d of %d random expressions broke a rule", failures, trials);
  /* the rules had something to do: ranges often exact, many shortened */
  CHECK(exact > trials / 4 && shrunk > trials / 10);
  printf("random: %d expressions checked at every point; range exact for %d, %d made shorter\n", trials, exact,
         shrunk);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK || ob_te_new(ctx, &te) != OB_OK || !(A = ob_arena_new(ctx, 0))) return 1;
  test_ranges();
  test_simplify();
  test_lin();
  test_random();
  ob_arena_free(A);
  ob_te_free(te);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
