/* codegen.c: the C emitter. One translation unit per kernel: a prelude with
 * the kernel ABI and vector helpers, one static task function per parallel
 * loop (outlined with a closure struct, run through rt->parallel_for), and
 * the exported kernel. Vectorized loops become GCC vector-extension code;
 * a vectorized loop whose body the vector path cannot express (non-f32
 * data, nested loops, a guard that is not monotone in the lane) is emitted
 * as a scalar loop with a comment saying why.
 *
 * Out of memory: the statements are expanded (unrolled loops copied) first
 * and checked; while emitting, the expressions made on the way (one lane's
 * index, a guard) may come back NULL once the arena failed, which the
 * emitters print as nothing, and the strings are sticky-failing. One check
 * at the end returns OB_ERR_NOMEM ("codegen: out of memory"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/codegen.h"
#include "opbench/ir.h"
#include "opbench/target.h"
#include "te/te_impl.h"
#include "codegen/codegen_impl.h"

#define var_name ob_cg_var_name
#define buf_name ob_cg_buf_name

typedef struct cg {
  ob_ctx *ctx;
  const ob_lowered *f;
  ob_arena *a;
  const char *name;
  ob_str *out;
  ob_str fns;
  int npar;
  int in_par;
  ob_ivar *loops[64]; /* enclosing loop variables, for closures */
  int nloops;
  ob_buffer *locals[64]; /* local buffers in scope, for closures */
  int local_lanes[64];   /* > 0: declared as an array of vectors of this width */
  int nlocals;
  int vec_lanes[8]; /* vector widths used, for typedefs */
  int nvec;
  int native_lanes; /* float lanes of one vector register of the target */
  int max_vecs;     /* vectors a register tile may hold: the target's registers */
  size_t stack_big; /* bytes of large stack buffers in scope (OB_STACK_BIG_BUDGET) */
} cg;

static void ind(cg *g, int d) { ob_str_appendf(g->out, "%*s", 2 * d, ""); }

void ob_cg_var_name(ob_str *o, const ob_ivar *v) {
  for (const char *p = v->name; *p; p++) ob_str_appendf(o, "%c", (*p == '.' ? '_' : *p));
  ob_str_appendf(o, "_%d", v->id);
}

void ob_cg_buf_name(ob_str *o, const ob_buffer *b) {
  for (const char *p = b->name; *p; p++)
    ob_str_appendf(o, "%c", (*p == '.' || *p == '-') ? '_' : *p);
  ob_str_appendf(o, "_%d", b->id);
}

static const char *ctype(ob_dtype t) {
  switch (t) {
  case OB_F32: return "float";
  case OB_F16: return "_Float16";
  case OB_I8: return "int8_t";
  case OB_I32: return "int32_t";
  case OB_I64: return "int64_t";
  case OB_BOOL: return "int";
  default: return "float";
  }
}

static void float_lit(ob_str *o, double v, ob_dtype t) {
  if (isinf(v)) {
    ob_str_append(o, v < 0 ? "(-INFINITY)" : "INFINITY");
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.9g", v);
  if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
  ob_str_appendf(o, "%s%s", buf, t == OB_F32 ? "f" : "");
}

/* Lanes of a local buffer promoted to an array of vectors, else 0; the
 * innermost declaration in scope wins. */
static int promoted(const cg *g, const ob_buffer *b) {
  for (int i = g->nlocals - 1; i >= 0; i--)
    if (g->locals[i] == b) return g->local_lanes[i];
  return 0;
}

static void emit_expr(cg *g, ob_str *o, const ob_expr *e);

/* Element i of a buffer, in either declaration form. */
static void emit_elem(cg *g, ob_str *o, const ob_buffer *b, const ob_expr *idx) {
  int L = promoted(g, b);
  buf_name(o, b);
  if (!L) {
    ob_str_append(o, "[");
    emit_expr(g, o, idx);
    ob_str_append(o, "]");
    return;
  }
  int64_t c;
  if (ob_is_const(idx, &c)) {
    ob_str_appendf(o, "[%lld][%lld]", (long long)(c / L), (long long)(c % L));
    return;
  }
  ob_str_append(o, "[(");
  emit_expr(g, o, idx);
  ob_str_appendf(o, ") / %d][(", L);
  emit_expr(g, o, idx);
  ob_str_appendf(o, ") %% %d]", L);
}

static bool nonneg(const ob_expr *e) {
  int64_t lo, hi;
  return ob_range(e, &lo, &hi) && lo >= 0;
}

/* ---- scalar expressions --------------------------------------------------- */
static void emit_expr(cg *g, ob_str *o, const ob_expr *e) {
  if (!e) return; /* out of memory on the way: the source is never returned */
  switch (e->kind) {
  case OB_E_INT: ob_str_appendf(o, "%lldLL", (long long)e->ival); break;
  case OB_E_FLOAT: float_lit(o, e->fval, e->dtype); break;
  case OB_E_VAR: var_name(o, e->var); break;
  case OB_E_BIN: {
    bool isint = e->a->dtype == OB_I64 || e->a->dtype == OB_I32 || e->a->dtype == OB_I8;
    if (e->op == OB_MIN || e->op == OB_MAX) {
      ob_str_appendf(o, "%s(", isint ? (e->op == OB_MIN ? "ob_min64" : "ob_max64")
                                     : (e->op == OB_MIN ? "ob_minf" : "ob_maxf"));
      emit_expr(g, o, e->a);
      ob_str_append(o, ", ");
      emit_expr(g, o, e->b);
      ob_str_append(o, ")");
      return;
    }
    if ((e->op == OB_DIV || e->op == OB_MOD) && isint && !(nonneg(e->a) && nonneg(e->b))) {
      ob_str_append(o, e->op == OB_DIV ? "ob_floordiv(" : "ob_floormod(");
      emit_expr(g, o, e->a);
      ob_str_append(o, ", ");
      emit_expr(g, o, e->b);
      ob_str_append(o, ")");
      return;
    }
    ob_str_append(o, "(");
    emit_expr(g, o, e->a);
    ob_str_appendf(o, " %s ", ob_binop_sym(e->op));
    emit_expr(g, o, e->b);
    ob_str_append(o, ")");
    break;
  }
  case OB_E_SELECT:
    ob_str_append(o, "(");
    emit_expr(g, o, e->c);
    ob_str_append(o, " ? ");
    emit_expr(g, o, e->a);
    ob_str_append(o, " : ");
    emit_expr(g, o, e->b);
    ob_str_append(o, ")");
    break;
  case OB_E_CAST:
    ob_str_appendf(o, "((%s)", ctype(e->dtype));
    emit_expr(g, o, e->a);
    ob_str_append(o, ")");
    break;
  case OB_E_CALL:
    ob_str_appendf(o, "%s%s(", ob_intrin_name(e->fn), e->dtype == OB_F32 ? "f" : "");
    emit_expr(g, o, e->a);
    ob_str_append(o, ")");
    break;
  case OB_E_BLOAD: emit_elem(g, o, e->buf, e->idx[0]); break;
  default: OB_ASSERT(!"unexpected expression in lowered code");
  }
}

/* ---- vector expressions --------------------------------------------------- */
typedef struct vctx {
  ob_ivar *v;
  int lanes;
  char vt[32]; /* vector type name */
  char it[32]; /* mask type name */
} vctx;

static ob_expr *at_lane(cg *g, const ob_expr *e, ob_ivar *v, int64_t lane) {
  ob_expr *c = ob_e_int(g->a, lane);
  return ob_simplify(g->a, ob_expr_subst(g->a, (ob_expr *)e, 1, &v, &c));
}

/* Stride of v in integer index e: false when e is not affine in v. */
static bool stride_of(const ob_expr *e, ob_ivar *v, int64_t *stride) {
  ob_lin l;
  if (!ob_lin_of(e, &l)) return false;
  *stride = 0;
  for (int i = 0; i < l.n; i++) {
    if (l.atom[i]->kind == OB_E_VAR && l.atom[i]->var == v) *stride += l.coef[i];
    else if (ob_expr_uses_var(l.atom[i], v)) return false;
  }
  return true;
}

static bool has_load(const ob_expr *e) {
  if (!e) return false;
  if (e->kind == OB_E_BLOAD) return true;
  return has_load(e->a) || has_load(e->b) || has_load(e->c);
}

static void emit_lanewise(cg *g, ob_str *o, const ob_expr *e, const vctx *vc) {
  ob_str_appendf(o, "((%s){", vc->vt);
  for (int l = 0; l < vc->lanes; l++) {
    if (l) ob_str_append(o, ", ");
    emit_expr(g, o, at_lane(g, e, vc->v, l));
  }
  ob_str_append(o, "})");
}

static void emit_vec_operand(cg *g, ob_str *o, const ob_expr *e, const vctx *vc);

/* Emits e; *is_vec tells whether the text is a vector or a scalar. */
static void emit_vexpr(cg *g, ob_str *o, const ob_expr *e, const vctx *vc, bool *is_vec) {
  if (!ob_expr_uses_var(e, vc->v)) {
    *is_vec = false;
    emit_expr(g, o, e);
    return;
  }
  *is_vec = true;
  if (e->dtype != OB_F32) { /* lane-dependent integer or boolean values */
    emit_lanewise(g, o, e, vc);
    return;
  }
  switch (e->kind) {
  case OB_E_BLOAD: {
    int64_t s;
    ob_expr *i0 = at_lane(g, e->idx[0], vc->v, 0);
    if (!stride_of(e->idx[0], vc->v, &s)) {
      emit_lanewise(g, o, e, vc);
    } else if (s == 1 && promoted(g, e->buf) == vc->lanes && ob_is_const(i0, NULL) &&
               i0->ival % vc->lanes == 0) {
      buf_name(o, e->buf);
      ob_str_appendf(o, "[%lld]", (long long)(i0->ival / vc->lanes));
    } else if (s == 1 && !promoted(g, e->buf)) {
      ob_str_appendf(o, "OB_VLOAD(%s, &", vc->vt);
      buf_name(o, e->buf);
      ob_str_append(o, "[");
      emit_expr(g, o, i0);
      ob_str_append(o, "])");
    } else {
      emit_lanewise(g, o, e, vc); /* gather */
    }
    return;
  }
  case OB_E_BIN:
    if (e->op == OB_ADD || e->op == OB_SUB || e->op == OB_MUL || e->op == OB_FDIV) {
      bool va, vb;
      ob_str_append(o, "(");
      emit_vexpr(g, o, e->a, vc, &va);
      ob_str_appendf(o, " %s ", ob_binop_sym(e->op));
      emit_vexpr(g, o, e->b, vc, &vb);
      ob_str_append(o, ")");
      return;
    }
    if (e->op == OB_MIN || e->op == OB_MAX) {
      ob_str_appendf(o, "%s(%s, %s, ", e->op == OB_MIN ? "OB_VMIN" : "OB_VMAX", vc->vt, vc->it);
      emit_vec_operand(g, o, e->a, vc);
      ob_str_append(o, ", ");
      emit_vec_operand(g, o, e->b, vc);
      ob_str_append(o, ")");
      return;
    }
    break;
  case OB_E_SELECT:
    if (!ob_expr_uses_var(e->c, vc->v)) {
      ob_str_append(o, "(");
      emit_expr(g, o, e->c);
      ob_str_append(o, " ? ");
      emit_vec_operand(g, o, e->a, vc);
      ob_str_append(o, " : ");
      emit_vec_operand(g, o, e->b, vc);
      ob_str_append(o, ")");
      return;
    }
    if (!has_load(e->a) && !has_load(e->b)) break; /* lanewise is fine and safe */
    break;
  default: break;
  }
  emit_lanewise(g, o, e, vc);
}

/* Emits e as a vector: a scalar operand is broadcast (ob_bcL), a vector
 * operand is used as it is (wrapping it in an add of zero would cost an
 * instruction per use: without fast-math x + 0.0f cannot fold). */
static void emit_vec_operand(cg *g, ob_str *o, const ob_expr *e, const vctx *vc) {
  ob_str tmp = {.ctx = g->ctx};
  bool isv;
  emit_vexpr(g, &tmp, e, vc, &isv);
  if (!isv) ob_str_appendf(o, "ob_bc%d(", vc->lanes);
  ob_str_append_str(o, &tmp);
  if (!isv) ob_str_append(o, ")");
  ob_str_free(&tmp);
}

/* ---- statements ------------------------------------------------------------ */
static void emit_stmt(cg *g, const ob_stmt *s, int d);

static bool vec_body_ok(const ob_stmt *s, const char **why) {
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++)
      if (!vec_body_ok(s->seq[i], why)) return false;
    return true;
  case OB_S_IF: return vec_body_ok(s->body, why);
  case OB_S_STORE:
    if (s->buf->dtype != OB_F32) {
      *why = "non-float32 data";
      return false;
    }
    return true;
  default: *why = "a loop or allocation inside the vectorized loop"; return false;
  }
}

/* AND of the guards that depend on v; false if one is not monotone in v. */
static bool lane_guards(cg *g, const ob_stmt *s, ob_ivar *v, ob_expr **acc) {
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++)
      if (!lane_guards(g, s->seq[i], v, acc)) return false;
    return true;
  case OB_S_IF:
    if (ob_expr_uses_var(s->cond, v)) {
      /* each conjunct must compare an expression affine in v */
      const ob_expr *stack[32];
      int n = 0;
      stack[n++] = s->cond;
      while (n) {
        const ob_expr *c = stack[--n];
        if (c->kind == OB_E_BIN && c->op == OB_AND) {
          if (n + 2 > 32) return false;
          stack[n++] = c->a;
          stack[n++] = c->b;
          continue;
        }
        if (!ob_expr_uses_var(c, v)) continue;
        if (c->kind != OB_E_BIN || !ob_binop_is_cmp(c->op) || c->op == OB_OR) return false;
        int64_t st;
        if (!stride_of(c->a, v, &st) || !stride_of(c->b, v, &st)) return false;
      }
      *acc = *acc ? ob_e_bin(g->a, OB_AND, *acc, s->cond) : s->cond;
    }
    return lane_guards(g, s->body, v, acc);
  default: return true;
  }
}

static bool is_reduce_update(const ob_stmt *s, const ob_expr **rest, ob_binop *op) {
  const ob_expr *v = s->value;
  if (v->kind != OB_E_BIN || (v->op != OB_ADD && v->op != OB_MAX)) return false;
  const ob_expr *cur = v->a;
  if (cur->kind != OB_E_BLOAD || cur->buf != s->buf || !ob_expr_equal(cur->idx[0], s->index))
    return false;
  *rest = v->b;
  *op = v->op;
  return true;
}

static void emit_vstmt(cg *g, const ob_stmt *s, int d, const vctx *vc) {
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) emit_vstmt(g, s->seq[i], d, vc);
    return;
  case OB_S_IF:
    if (ob_expr_uses_var(s->cond, vc->v)) { /* proven true for every lane */
      emit_vstmt(g, s->body, d, vc);
      return;
    }
    ind(g, d);
    ob_str_append(g->out, "if (");
    emit_expr(g, g->out, s->cond);
    ob_str_append(g->out, ") {\n");
    emit_vstmt(g, s->body, d + 1, vc);
    ind(g, d);
    ob_str_append(g->out, "}\n");
    return;
  case OB_S_STORE: {
    int64_t st;
    ob_expr *i0 = at_lane(g, s->index, vc->v, 0);
    bool affine = stride_of(s->index, vc->v, &st);
    ind(g, d);
    int L = promoted(g, s->buf);
    if (affine && st == 1 && L == vc->lanes && ob_is_const(i0, NULL) && i0->ival % L == 0) {
      buf_name(g->out, s->buf);
      ob_str_appendf(g->out, "[%lld] = ", (long long)(i0->ival / L));
      emit_vec_operand(g, g->out, s->value, vc);
      ob_str_append(g->out, ";\n");
      return;
    }
    if (affine && st == 1 && !L) {
      ob_str_append(g->out, "OB_VSTORE(&");
      buf_name(g->out, s->buf);
      ob_str_append(g->out, "[");
      emit_expr(g, g->out, i0);
      ob_str_append(g->out, "], ");
      emit_vec_operand(g, g->out, s->value, vc);
      ob_str_append(g->out, ");\n");
      return;
    }
    const ob_expr *rest;
    ob_binop op;
    if (affine && st == 0 && is_reduce_update(s, &rest, &op)) {
      /* reduction along the vector axis: lanes combine, then one update */
      emit_elem(g, g->out, s->buf, i0);
      ob_str_append(g->out, " = ");
      ob_str_append(g->out, op == OB_ADD ? "(" : "ob_maxf(");
      emit_elem(g, g->out, s->buf, i0);
      ob_str_appendf(g->out, "%s%s(", op == OB_ADD ? " + " : ", ", op == OB_ADD ? "OB_HSUM" : "OB_HMAX");
      emit_vec_operand(g, g->out, rest, vc);
      ob_str_appendf(g->out, ", %d));\n", vc->lanes);
      return;
    }
    /* scatter: compute the vector once, store lane by lane in lane order */
    ob_str_appendf(g->out, "{ %s ob_t_ = ", vc->vt);
    emit_vec_operand(g, g->out, s->value, vc);
    ob_str_append(g->out, ";");
    for (int l = 0; l < vc->lanes; l++) {
      ob_str_append(g->out, " ");
      emit_elem(g, g->out, s->buf, at_lane(g, s->index, vc->v, l));
      ob_str_appendf(g->out, " = ob_t_[%d];", l);
    }
    ob_str_append(g->out, " }\n");
    return;
  }
  default: OB_ASSERT(!"statement not allowed in a vector body");
  }
}

static void note_lanes(cg *g, int lanes) {
  for (int i = 0; i < g->nvec; i++)
    if (g->vec_lanes[i] == lanes) return;
  if (g->nvec < 8) g->vec_lanes[g->nvec++] = lanes;
}

static void emit_scalar_for(cg *g, const ob_stmt *s, int d) {
  ind(g, d);
  ob_str_append(g->out, "for (int64_t ");
  var_name(g->out, s->var);
  ob_str_append(g->out, " = 0; ");
  var_name(g->out, s->var);
  ob_str_appendf(g->out, " < %lldLL; ++", (long long)s->var->extent);
  var_name(g->out, s->var);
  ob_str_append(g->out, ") {\n");
  g->loops[g->nloops++] = s->var;
  emit_stmt(g, s->body, d + 1);
  g->nloops--;
  ind(g, d);
  ob_str_append(g->out, "}\n");
}

static void emit_vector_for(cg *g, const ob_stmt *s, int d) {
  int64_t L = s->var->extent;
  const char *why = NULL;
  if (L < 2 || L > 64 || (L & (L - 1))) why = "the lane count is not a power of two in [2, 64]";
  if (!why) vec_body_ok(s->body, &why);
  ob_expr *guard = NULL;
  if (!why && !lane_guards(g, s->body, s->var, &guard)) why = "a guard that is not affine in the lane";
  if (why) {
    ind(g, d);
    ob_str_appendf(g->out, "/* vectorize %s: scalar loop (%s) */\n", s->var->name, why);
    emit_scalar_for(g, s, d);
    return;
  }
  vctx vc = {.v = s->var, .lanes = (int)L};
  snprintf(vc.vt, sizeof vc.vt, "ob_f32x%d", (int)L);
  snprintf(vc.it, sizeof vc.it, "ob_i32x%d", (int)L);
  note_lanes(g, (int)L);
  if (guard) {
    /* guards are monotone in the lane: true at both ends -> true for all */
    ob_expr *all = ob_simplify(g->a, ob_e_bin(g->a, OB_AND, at_lane(g, guard, s->var, 0),
                                               at_lane(g, guard, s->var, L - 1)));
    int64_t known;
    if (ob_is_const(all, &known) && !known) { /* never all lanes: the scalar loop alone */
      emit_scalar_for(g, s, d);
      return;
    }
    ind(g, d);
    ob_str_append(g->out, "if (");
    emit_expr(g, g->out, all);
    ob_str_append(g->out, ") {\n");
    emit_vstmt(g, s->body, d + 1, &vc);
    ind(g, d);
    ob_str_append(g->out, "} else {\n");
    emit_scalar_for(g, s, d + 1);
    ind(g, d);
    ob_str_append(g->out, "}\n");
    return;
  }
  ind(g, d);
  ob_str_appendf(g->out, "{ /* %s vectorized, %d lanes */\n", s->var->name, (int)L);
  emit_vstmt(g, s->body, d + 1, &vc);
  ind(g, d);
  ob_str_append(g->out, "}\n");
}

static void emit_args(cg *g, const char *src, int d) {
  const ob_lowered *f = g->f;
  for (int i = 0; i < f->nargs; i++) {
    ind(g, d);
    ob_str_appendf(g->out, "%s *restrict ", ctype(f->args[i]->dtype));
    buf_name(g->out, f->args[i]);
    ob_str_appendf(g->out, " = (%s *)%s[%d];\n", ctype(f->args[i]->dtype), src, i);
  }
}

static void emit_parallel_for(cg *g, const ob_stmt *s, int d) {
  int id = g->npar++;
  ob_str fn = {.ctx = g->ctx};
  /* closure: args, temps, locals in scope, enclosing loop variables */
  ob_str_appendf(&fn, "struct %s_cl%d {\n  void *const *bufs;\n", g->name, id);
  for (int i = 0; i < g->f->ntemps; i++) {
    ob_str_appendf(&fn, "  %s *", ctype(g->f->temps[i]->dtype));
    buf_name(&fn, g->f->temps[i]);
    ob_str_append(&fn, ";\n");
  }
  for (int i = 0; i < g->nlocals; i++) {
    if (g->local_lanes[i]) ob_str_appendf(&fn, "  ob_f32x%d *", g->local_lanes[i]);
    else ob_str_appendf(&fn, "  %s *", ctype(g->locals[i]->dtype));
    buf_name(&fn, g->locals[i]);
    ob_str_append(&fn, ";\n");
  }
  for (int i = 0; i < g->nloops; i++) {
    ob_str_append(&fn, "  int64_t ");
    var_name(&fn, g->loops[i]);
    ob_str_append(&fn, ";\n");
  }
  ob_str_append(&fn, "};\n\n");
  ob_str_appendf(&fn, "static void %s_par%d(void *ob_cl_, int64_t ob_begin, int64_t ob_end) {\n",
                 g->name, id);
  ob_str_appendf(&fn, "  const struct %s_cl%d *ob_cl = ob_cl_;\n", g->name, id);
  ob_str *saved = g->out;
  g->out = &fn;
  emit_args(g, "ob_cl->bufs", 1);
  for (int i = 0; i < g->f->ntemps; i++) {
    ob_str_appendf(&fn, "  %s *", ctype(g->f->temps[i]->dtype));
    buf_name(&fn, g->f->temps[i]);
    ob_str_append(&fn, " = ob_cl->");
    buf_name(&fn, g->f->temps[i]);
    ob_str_append(&fn, ";\n");
  }
  for (int i = 0; i < g->nlocals; i++) {
    if (g->local_lanes[i]) ob_str_appendf(&fn, "  ob_f32x%d *", g->local_lanes[i]);
    else ob_str_appendf(&fn, "  %s *", ctype(g->locals[i]->dtype));
    buf_name(&fn, g->locals[i]);
    ob_str_append(&fn, " = ob_cl->");
    buf_name(&fn, g->locals[i]);
    ob_str_append(&fn, ";\n");
  }
  for (int i = 0; i < g->nloops; i++) {
    ob_str_append(&fn, "  const int64_t ");
    var_name(&fn, g->loops[i]);
    ob_str_append(&fn, " = ob_cl->");
    var_name(&fn, g->loops[i]);
    ob_str_append(&fn, ";\n");
  }
  ob_str_append(&fn, "  for (int64_t ");
  var_name(&fn, s->var);
  ob_str_append(&fn, " = ob_begin; ");
  var_name(&fn, s->var);
  ob_str_append(&fn, " < ob_end; ++");
  var_name(&fn, s->var);
  ob_str_append(&fn, ") {\n");
  int saved_nlocals = g->nlocals, saved_nloops = g->nloops;
  g->in_par++;
  g->loops[g->nloops++] = s->var;
  emit_stmt(g, s->body, 2);
  g->nloops = saved_nloops;
  g->nlocals = saved_nlocals;
  g->in_par--;
  ob_str_append(&fn, "  }\n}\n\n");
  g->out = saved;
  ob_str_append_str(&g->fns, &fn);
  ob_str_free(&fn);

  ind(g, d);
  ob_str_appendf(g->out, "{ /* parallel %s */\n", s->var->name);
  ind(g, d + 1);
  ob_str_appendf(g->out, "struct %s_cl%d ob_cl = {bufs", g->name, id);
  for (int i = 0; i < g->f->ntemps; i++) {
    ob_str_append(g->out, ", ");
    buf_name(g->out, g->f->temps[i]);
  }
  for (int i = 0; i < g->nlocals; i++) {
    ob_str_append(g->out, ", ");
    buf_name(g->out, g->locals[i]);
  }
  for (int i = 0; i < g->nloops; i++) {
    ob_str_append(g->out, ", ");
    var_name(g->out, g->loops[i]);
  }
  ob_str_append(g->out, "};\n");
  ind(g, d + 1);
  ob_str_appendf(g->out,
                 "if (rt && rt->parallel_for) rt->parallel_for(rt->pool, %lldLL, %s_par%d, &ob_cl);\n",
                 (long long)s->var->extent, g->name, id);
  ind(g, d + 1);
  ob_str_appendf(g->out, "else %s_par%d(&ob_cl, 0, %lldLL);\n", g->name, id,
                 (long long)s->var->extent);
  ind(g, d);
  ob_str_append(g->out, "}\n");
}

#define OB_UNROLL_MAX 64 /* longer unrolled loops stay loops under a pragma */
#define OB_STACK_BUF_MAX (256 * 1024) /* bytes; larger locals go to the heap, */
/* unless they fit the budget of large stack buffers in scope at once (the
 * kernel's root intermediates stay on the heap: on the stack, test_ops saw
 * wrong answers from NCHWc's padded copy, cause not found). A
 * heap buffer of that size is fresh memory on every call: glibc serves it
 * by mmap, or returns it to the kernel past its trim threshold when freed,
 * so each call faults its pages in again (and threads take the process's
 * page-table lock in turn); stack pages stay mapped from call to call. 3
 * MiB keeps well inside a thread's default stack (glibc sizes it by
 * RLIMIT_STACK: 8 MiB here) */
#define OB_STACK_BIG_MAX (2 * 1024 * 1024)
#define OB_STACK_BIG_BUDGET (3 * 1024 * 1024)

/* Whether a local of `bytes` goes on the stack (counted in g->stack_big
 * while in scope when large). */
static bool on_stack(cg *g, size_t bytes) {
  if (bytes <= OB_STACK_BUF_MAX) return true;
  if (bytes > OB_STACK_BIG_MAX || g->stack_big + bytes > OB_STACK_BIG_BUDGET) return false;
  g->stack_big += bytes;
  return true;
}

/* Can buffer b be declared as an array of L-lane vectors? Every access in
 * a vectorized loop must be a whole aligned vector at a constant offset
 * (after unrolling), all with one width; other accesses are elements. */
typedef struct promo {
  const ob_buffer *b;
  int lanes; /* 0 none seen yet, -1 refused */
} promo;

static void promo_access(cg *g, promo *p, const ob_expr *idx, ob_ivar *v, int lanes) {
  if (p->lanes < 0 || !v) return;
  int64_t st;
  ob_expr *i0 = at_lane(g, idx, v, 0);
  if (!stride_of(idx, v, &st) || st != 1 || !ob_is_const(i0, NULL) || i0->ival % lanes ||
      (p->lanes && p->lanes != lanes))
    p->lanes = -1;
  else
    p->lanes = lanes;
}

static void promo_expr(cg *g, promo *p, const ob_expr *e, ob_ivar *v, int lanes) {
  if (!e || p->lanes < 0) return;
  if (e->kind == OB_E_BLOAD && e->buf == p->b) promo_access(g, p, e->idx[0], v, lanes);
  promo_expr(g, p, e->a, v, lanes);
  promo_expr(g, p, e->b, v, lanes);
  promo_expr(g, p, e->c, v, lanes);
  if (e->kind == OB_E_BLOAD) promo_expr(g, p, e->idx[0], v, lanes);
}

static void promo_stmt(cg *g, promo *p, const ob_stmt *s, ob_ivar *v, int lanes) {
  if (p->lanes < 0) return;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) promo_stmt(g, p, s->seq[i], v, lanes);
    return;
  case OB_S_FOR:
    if (s->ann == OB_IT_VECTORIZE && s->var->extent >= 2 && s->var->extent <= 64 &&
        !(s->var->extent & (s->var->extent - 1)))
      promo_stmt(g, p, s->body, s->var, (int)s->var->extent);
    else
      promo_stmt(g, p, s->body, v, lanes);
    return;
  case OB_S_IF:
    promo_expr(g, p, s->cond, v, lanes);
    promo_stmt(g, p, s->body, v, lanes);
    return;
  case OB_S_STORE:
    if (s->buf == p->b) promo_access(g, p, s->index, v, lanes);
    promo_expr(g, p, s->index, v, lanes);
    promo_expr(g, p, s->value, v, lanes);
    return;
  default: return;
  }
}

static int promote_lanes(cg *g, const ob_buffer *b, ob_stmt *const *rest, int n) {
  if (b->dtype != OB_F32) return 0;
  promo p = {b, 0};
  for (int i = 0; i < n; i++) promo_stmt(g, &p, rest[i], NULL, 0);
  if (p.lanes <= 0 || b->numel % p.lanes || b->numel / p.lanes > g->max_vecs) return 0;
  note_lanes(g, p.lanes);
  return p.lanes;
}

static void emit_seq(cg *g, const ob_stmt *s, int d) {
  const ob_buffer *heap[64];
  int nheap = 0, saved_nlocals = g->nlocals;
  size_t saved_big = g->stack_big;
  for (int i = 0; i < s->nseq; i++) {
    const ob_stmt *c = s->seq[i];
    if (c->kind == OB_S_ALLOC) {
      size_t bytes = (size_t)c->buf->numel * ob_dtype_size(c->buf->dtype);
      int lanes = promote_lanes(g, c->buf, s->seq + i + 1, s->nseq - i - 1);
      ind(g, d);
      if (lanes) { /* register tile: GCC keeps constant-indexed vectors in registers */
        ob_str_appendf(g->out, "ob_f32x%d ", lanes);
        buf_name(g->out, c->buf);
        ob_str_appendf(g->out, "[%lld];\n", (long long)(c->buf->numel / lanes));
      } else if (on_stack(g, bytes)) {
        ob_str_appendf(g->out, "%s ", ctype(c->buf->dtype));
        buf_name(g->out, c->buf);
        ob_str_appendf(g->out, "[%lld] __attribute__((aligned(64)));\n", (long long)c->buf->numel);
      } else {
        ob_str_appendf(g->out, "%s *", ctype(c->buf->dtype));
        buf_name(g->out, c->buf);
        ob_str_appendf(g->out, " = (%s *)ob_alloc(%zu);\n", ctype(c->buf->dtype), bytes);
        if (nheap < 64) heap[nheap++] = c->buf;
      }
      if (g->nlocals < 64) {
        g->local_lanes[g->nlocals] = lanes;
        g->locals[g->nlocals++] = c->buf;
      }
      continue;
    }
    emit_stmt(g, c, d);
  }
  for (int i = 0; i < nheap; i++) {
    ind(g, d);
    ob_str_append(g->out, "free(");
    buf_name(g->out, heap[i]);
    ob_str_append(g->out, ");\n");
  }
  g->nlocals = saved_nlocals;
  g->stack_big = saved_big;
}

/* No loop in s but vectorized ones (which become vector statements). */
static bool holds_no_loop(const ob_stmt *s) {
  if (!s) return true;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++)
      if (!holds_no_loop(s->seq[i])) return false;
    return true;
  case OB_S_IF: return holds_no_loop(s->body);
  case OB_S_FOR: return s->ann == OB_IT_VECTORIZE && holds_no_loop(s->body);
  default: return true;
  }
}

static void emit_stmt(cg *g, const ob_stmt *s, int d) {
  switch (s->kind) {
  case OB_S_SEQ:
    if (s->nseq && s->seq[0]->kind == OB_S_ALLOC) { /* a block of its own */
      ind(g, d);
      ob_str_append(g->out, "{\n");
      emit_seq(g, s, d + 1);
      ind(g, d);
      ob_str_append(g->out, "}\n");
    } else {
      emit_seq(g, s, d);
    }
    return;
  case OB_S_FOR:
    if (s->ann == OB_IT_PARALLEL && !g->in_par) {
      emit_parallel_for(g, s, d);
    } else if (s->ann == OB_IT_VECTORIZE) {
      emit_vector_for(g, s, d);
    } else { /* short unrolled loops were expanded by expand_unroll */
      if (s->ann == OB_IT_UNROLL) {
        ind(g, d);
        ob_str_appendf(g->out, "#pragma GCC unroll %lld\n", (long long)s->var->extent);
      } else if (s->ann == OB_IT_NO_UNROLL) {
        ind(g, d);
        ob_str_append(g->out, "#pragma GCC unroll 1\n");
      } else if (s->ann == OB_IT_SERIAL && g->f->inner_unroll > 0 && holds_no_loop(s->body)) {
        ind(g, d); /* ob_sched_unroll_inner */
        ob_str_appendf(g->out, "#pragma GCC unroll %lld\n", (long long)g->f->inner_unroll);
      }
      emit_scalar_for(g, s, d);
    }
    return;
  case OB_S_IF:
    ind(g, d);
    ob_str_append(g->out, "if (");
    emit_expr(g, g->out, s->cond);
    ob_str_append(g->out, ") {\n");
    emit_stmt(g, s->body, d + 1);
    ind(g, d);
    ob_str_append(g->out, "}\n");
    return;
  case OB_S_STORE:
    ind(g, d);
    emit_elem(g, g->out, s->buf, s->index);
    ob_str_append(g->out, " = ");
    emit_expr(g, g->out, s->value);
    ob_str_append(g->out, ";\n");
    return;
  case OB_S_PREFETCH:
    ind(g, d);
    ob_str_append(g->out, "ob_prefetch(");
    buf_name(g->out, s->buf);
    ob_str_append(g->out, ", ");
    emit_expr(g, g->out, s->index);
    ob_str_append(g->out, ", ");
    emit_expr(g, g->out, s->value);
    ob_str_appendf(g->out, ", %lld);\n", (long long)s->count);
    return;
  case OB_S_ALLOC: /* handled by emit_seq */
  default: OB_ASSERT(!"unexpected statement");
  }
}

/* Unrolled loops become straight-line copies with the index a constant, so
 * that every index is known to the emitter (register tiles need it). */
static ob_stmt *expand_unroll(cg *g, const ob_stmt *s) {
  ob_stmt *c = s ? ob_stmt_new(g->a, s->kind) : NULL;
  if (!c) return NULL; /* out of memory: ob_codegen_c checks the arena */
  *c = *s;
  switch (s->kind) {
  case OB_S_SEQ:
    c->seq = ob_arena_alloc(g->a, sizeof(ob_stmt *) * (size_t)(s->nseq ? s->nseq : 1));
    for (int i = 0; c->seq && i < s->nseq; i++) c->seq[i] = expand_unroll(g, s->seq[i]);
    return c;
  case OB_S_IF: {
    int64_t v;
    if (ob_is_const(s->cond, &v)) return v ? expand_unroll(g, s->body) : ob_stmt_new(g->a, OB_S_SEQ);
    c->body = expand_unroll(g, s->body);
    return c;
  }
  case OB_S_FOR:
    if (s->ann == OB_IT_UNROLL && s->var->extent <= OB_UNROLL_MAX) {
      int64_t n = s->var->extent;
      c = ob_stmt_new(g->a, OB_S_SEQ);
      if (!c || !(c->seq = ob_arena_alloc(g->a, sizeof(ob_stmt *) * (size_t)n))) return NULL;
      c->nseq = (int)n;
      for (int64_t i = 0; i < n; i++)
        c->seq[i] = expand_unroll(g, ob_stmt_subst(g->a, s->body, s->var, ob_e_int(g->a, i)));
      return c;
    }
    int L = g->native_lanes; /* the target's float lanes per register */
    if (s->ann == OB_IT_VECTORIZE && s->var->extent > L && s->var->extent % L == 0) {
      /* wider than a register: native-width pieces (a vector type wider
       * than the registers would live in memory) */
      int64_t n = s->var->extent / L;
      c = ob_stmt_new(g->a, OB_S_SEQ);
      if (!c || !(c->seq = ob_arena_alloc(g->a, sizeof(ob_stmt *) * (size_t)n))) return NULL;
      c->nseq = (int)n;
      for (int64_t i = 0; i < n; i++) {
        ob_ivar *v = ob_iv_new(g->a, s->var->name, L, s->var->kind, s->var->id * 64 + (int)i);
        ob_stmt *f = ob_stmt_new(g->a, OB_S_FOR);
        if (!v || !f) return NULL;
        v->ann = OB_IT_VECTORIZE;
        ob_expr *at = ob_e_bin(g->a, OB_ADD, ob_e_var(g->a, v), ob_e_int(g->a, i * L));
        f->var = v;
        f->ann = OB_IT_VECTORIZE;
        f->body = expand_unroll(g, ob_stmt_subst(g->a, s->body, s->var, at));
        c->seq[i] = f;
      }
      return c;
    }
    c->body = expand_unroll(g, s->body);
    return c;
  default: return c;
  }
}

/* GCC's predictive commoning (-O3) keeps values loaded by one iteration
 * for the next ones that read them again: a window's column loop over a
 * register block whose columns' inputs overlap (the 7x7 stride-2 stem: the
 * tap kx + 2 of one column is the tap kx of the next) then holds the
 * block's broadcasts across taps, and with 16 registers it spills the
 * accumulators around them (the stem's inner loop: 84 multiply-adds with 25
 * stack moves). The register blocks are the schedule's to choose. Measured
 * on a Zen 3 core: the stem 63-65 -> 89 GFLOPS (interleaved, fastest of 6);
 * the code of every other default kernel of the ResNet-18, MobileNet-V2 and
 * BERT suites is unchanged. */
static const char k_prelude[] =
    "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
    "typedef void (*ob_krt_task)(void *closure, int64_t begin, int64_t end);\n"
    "typedef struct ob_krt {\n  void *pool;\n"
    "  void (*parallel_for)(void *pool, int64_t n, ob_krt_task fn, void *closure);\n} ob_krt;\n\n"
    "static inline int64_t ob_floordiv(int64_t a, int64_t b) {\n"
    "  int64_t q = a / b;\n  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n"
    "static inline int64_t ob_floormod(int64_t a, int64_t b) { return a - ob_floordiv(a, b) * b; }\n"
    "static inline int64_t ob_min64(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int64_t ob_max64(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "static inline float ob_minf(float a, float b) { return a < b ? a : b; }\n"
    "static inline float ob_maxf(float a, float b) { return a > b ? a : b; }\n"
    "/* elements [i, min(i + n, end)) of b into the L2 cache: a hint */\n"
    "static inline void ob_prefetch(const float *b, int64_t i, int64_t end, int64_t n) {\n"
    "  if (end > i + n) end = i + n;\n"
    "  for (; i < end; i += 16) __builtin_prefetch(b + i, 0, 2);\n"
    "}\n"
    "static inline void *ob_alloc(size_t n) {\n"
    "  void *p = NULL;\n  if (posix_memalign(&p, 64, n ? n : 64)) abort();\n  return p;\n}\n"
    "/* vector helpers: unaligned load/store, broadcast, blend-based min/max,\n"
    " * horizontal reductions (GCC vector extensions) */\n"
    "#define OB_VLOAD(T, p) ({ T ob_v_; __builtin_memcpy(&ob_v_, (p), sizeof ob_v_); ob_v_; })\n"
    "#define OB_VSTORE(p, x) ({ __typeof__(x) ob_s_ = (x); __builtin_memcpy((p), &ob_s_, sizeof ob_s_); })\n"
    "#define OB_VMAX(T, IT, a, b) ({ T ob_a_ = (a), ob_b_ = (b); IT ob_m_ = ob_a_ > ob_b_; "
    "(T)((ob_m_ & (IT)ob_a_) | (~ob_m_ & (IT)ob_b_)); })\n"
    "#define OB_VMIN(T, IT, a, b) ({ T ob_a_ = (a), ob_b_ = (b); IT ob_m_ = ob_a_ < ob_b_; "
    "(T)((ob_m_ & (IT)ob_a_) | (~ob_m_ & (IT)ob_b_)); })\n"
    "#define OB_HSUM(x, L) ({ __typeof__(x) ob_h_ = (x); float ob_r_ = 0.0f; "
    "for (int ob_l_ = 0; ob_l_ < (L); ++ob_l_) ob_r_ += ob_h_[ob_l_]; ob_r_; })\n"
    "#define OB_HMAX(x, L) ({ __typeof__(x) ob_h_ = (x); float ob_r_ = ob_h_[0]; "
    "for (int ob_l_ = 1; ob_l_ < (L); ++ob_l_) ob_r_ = ob_maxf(ob_r_, ob_h_[ob_l_]); ob_r_; })\n";

ob_status ob_codegen_c(ob_ctx *ctx, const ob_target *target, const ob_lowered *f, const char *name,
                       char **out) {
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "kernel name '%s' is not a C identifier", name);
  if (f->launch.gpu)
    return ob_fail(ctx, OB_ERR_SCHEDULE,
                   "kernel %s binds loops to GPU block or thread indices; C code cannot run them "
                   "(a GPU target: cuda, opencl)",
                   name);
  ob_target *own = NULL;
  if (!target) {
    ob_status st = ob_target_host(ctx, &own);
    if (st) return st;
    target = own;
  }
  const ob_target_facts *tf = ob_target_get_facts(target);
  cg g = {.ctx = ctx,
          .f = f,
          .name = name,
          .fns = {.ctx = ctx},
          .native_lanes = tf->lanes_f32,
          .max_vecs = tf->vector_registers};
  ob_target_free(own);
  ob_str body = {.ctx = ctx}, src = {.ctx = ctx};
  g.a = ob_arena_new(ctx, 64 * 1024);
  ob_stmt *top = g.a ? expand_unroll(&g, f->body) : NULL;
  if (!top || ob_arena_failed(g.a)) goto oom; /* the emitters need a whole tree */
  g.out = &body;
  emit_args(&g, "bufs", 1);
  for (int i = 0; i < f->ntemps; i++) {
    ob_str_appendf(&body, "  %s *", ctype(f->temps[i]->dtype));
    buf_name(&body, f->temps[i]);
    ob_str_appendf(&body, " = (%s *)ob_alloc(%zu);\n", ctype(f->temps[i]->dtype),
                   (size_t)f->temps[i]->numel * ob_dtype_size(f->temps[i]->dtype));
  }
  emit_stmt(&g, top, 1);
  for (int i = 0; i < f->ntemps; i++) {
    ob_str_append(&body, "  free(");
    buf_name(&body, f->temps[i]);
    ob_str_append(&body, ");\n");
  }
  ob_str_appendf(&src, "/* Generated by opbench codegen: kernel %s. Do not edit. */\n", name);
  ob_str_appendf(&src, "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC optimize(\"no-predictive-commoning\"%s)\n#endif\n",
                 f->pressure_sched ? ", \"schedule-insns\", \"sched-pressure\"" : ""); /* ob_sched_pressure_sched */
  ob_str_append(&src, k_prelude);
  for (int i = 0; i < g.nvec; i++) {
    int L = g.vec_lanes[i];
    ob_str_appendf(&src, "typedef float ob_f32x%d __attribute__((vector_size(%d)));\n", L, 4 * L);
    ob_str_appendf(&src, "typedef int32_t ob_i32x%d __attribute__((vector_size(%d)));\n", L, 4 * L);
    ob_str_appendf(&src, "static inline ob_f32x%d ob_bc%d(float s) { return (ob_f32x%d){", L, L, L);
    for (int l = 0; l < L; l++) ob_str_append(&src, l ? ", s" : "s");
    ob_str_append(&src, "}; }\n");
  }
  ob_str_append(&src, "\n");
  ob_str_append_str(&src, &g.fns);
  ob_str_appendf(&src, "int %s(void *const *bufs, const ob_krt *rt) {\n", name);
  ob_str_append(&src, "  (void)rt;\n");
  ob_str_append_str(&src, &body);
  ob_str_append(&src, "  return 0;\n}\n");
  if (ob_arena_failed(g.a)) goto oom; /* an expression made while emitting is missing */
  ob_str_free(&body);
  ob_str_free(&g.fns);
  ob_arena_free(g.a);
  *out = ob_str_take(&src);
  return *out ? OB_OK : ob_fail(ctx, OB_ERR_NOMEM, "codegen of kernel %s: out of memory", name);
oom:
  ob_str_free(&body);
  ob_str_free(&g.fns);
  ob_str_free(&src);
  ob_arena_free(g.a);
  return ob_fail(ctx, OB_ERR_NOMEM, "codegen of kernel %s: out of memory", name);
}
