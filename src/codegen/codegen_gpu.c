/* codegen_gpu.c: the CUDA C and OpenCL C emitters. One kernel function per
 * lowered function: its arguments are the lowered arguments (inputs const),
 * loops bound to block and thread indices become those indices (under a
 * guard when the loop is shorter than the launch's dimension), shared
 * buffers are declared once at the top of the kernel, local buffers where
 * they are allocated (per thread: registers once unrolled), barriers are
 * __syncthreads() / barrier(CLK_LOCAL_MEM_FENCE). The two dialects differ
 * only in spelling (the table below). Loops marked unroll, and loops whose
 * iterations with their inner loops' number at most the kernel's
 * auto_unroll_max_step, are unrolled: in the IR when unroll_explicit is set
 * (so that every index is a constant the device compiler folds), by the
 * device compiler's #pragma unroll otherwise.
 *
 * Indices are 32-bit when every buffer and loop of the kernel fits in 2^30
 * (GPUs do 64-bit integer arithmetic in several instructions), else 64-bit.
 *
 * Out of memory: the unrolled copy is checked before emitting; the strings
 * are sticky-failing and checked once at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_impl.h"
#include "opbench/codegen.h"
#include "opbench/ir.h"
#include "opbench/target.h"
#include "te/te_impl.h"

#define OB_GPU_UNROLL_MAX 1500 /* statements one explicitly unrolled loop may become */

typedef struct dialect {
  const char *name;
  const char *block_idx[3], *thread_idx[3];
  const char *barrier;
  const char *shared_kw; /* before a shared declaration */
  const char *global_kw; /* before a pointer argument */
  const char *restrict_kw;
  const char *i64;
  const char *exp, *tanh, *sqrt, *log;
  const char *inf; /* +infinity of float */
} dialect;

static const dialect k_cuda = {
    "CUDA",
    {"(int)blockIdx.x", "(int)blockIdx.y", "(int)blockIdx.z"},
    {"(int)threadIdx.x", "(int)threadIdx.y", "(int)threadIdx.z"},
    "__syncthreads();",
    "__shared__ ",
    "",
    "__restrict__",
    "long long",
    "expf",
    "tanhf",
    "sqrtf",
    "logf",
    "__int_as_float(0x7f800000)",
};

static const dialect k_opencl = {
    "OpenCL",
    {"(int)get_group_id(0)", "(int)get_group_id(1)", "(int)get_group_id(2)"},
    {"(int)get_local_id(0)", "(int)get_local_id(1)", "(int)get_local_id(2)"},
    "barrier(CLK_LOCAL_MEM_FENCE);",
    "__local ",
    "__global ",
    "restrict",
    "long",
    "exp",
    "tanh",
    "sqrt",
    "log",
    "INFINITY",
};

typedef struct gcg {
  ob_ctx *ctx;
  const ob_lowered *f;
  const dialect *d;
  ob_arena *a;
  ob_str *out;
  const char *ix; /* index type: "int" or the 64-bit one */
} gcg;

static void ind(gcg *g, int n) { ob_str_appendf(g->out, "%*s", 2 * n, ""); }

static const char *ctype(ob_dtype t) {
  switch (t) {
  case OB_F32: return "float";
  case OB_I32: return "int";
  case OB_BOOL: return "int";
  default: return "float";
  }
}

static void float_lit(gcg *g, ob_str *o, double v) {
  if (isinf(v)) {
    ob_str_appendf(o, "(%s%s)", v < 0 ? "-" : "", g->d->inf);
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.9g", v);
  if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
  ob_str_appendf(o, "%sf", buf);
}

static bool nonneg(const ob_expr *e) {
  int64_t lo, hi;
  return ob_range(e, &lo, &hi) && lo >= 0;
}

static void emit_expr(gcg *g, ob_str *o, const ob_expr *e) {
  if (!e) return; /* out of memory on the way: the source is never returned */
  switch (e->kind) {
  case OB_E_INT:
    if (e->ival >= -2147483647 && e->ival <= 2147483647) ob_str_appendf(o, "%lld", (long long)e->ival);
    else ob_str_appendf(o, "((%s)%lldLL)", g->d->i64, (long long)e->ival);
    break;
  case OB_E_FLOAT: float_lit(g, o, e->fval); break;
  case OB_E_VAR: ob_cg_var_name(o, e->var); break;
  case OB_E_BIN: {
    bool isint = e->a->dtype == OB_I64 || e->a->dtype == OB_I32 || e->a->dtype == OB_I8;
    if (e->op == OB_MIN || e->op == OB_MAX) {
      ob_str_appendf(o, "%s(", isint ? (e->op == OB_MIN ? "ob_mini" : "ob_maxi")
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
    return;
  }
  case OB_E_SELECT:
    ob_str_append(o, "(");
    emit_expr(g, o, e->c);
    ob_str_append(o, " ? ");
    emit_expr(g, o, e->a);
    ob_str_append(o, " : ");
    emit_expr(g, o, e->b);
    ob_str_append(o, ")");
    return;
  case OB_E_CAST:
    ob_str_appendf(o, "((%s)", e->dtype == OB_I64 ? g->ix : ctype(e->dtype));
    emit_expr(g, o, e->a);
    ob_str_append(o, ")");
    return;
  case OB_E_CALL: {
    const char *fn = e->fn == OB_EXP ? g->d->exp : e->fn == OB_TANH ? g->d->tanh
                     : e->fn == OB_SQRT ? g->d->sqrt : g->d->log;
    ob_str_appendf(o, "%s(", fn);
    emit_expr(g, o, e->a);
    ob_str_append(o, ")");
    return;
  }
  case OB_E_BLOAD:
    ob_cg_buf_name(o, e->buf);
    ob_str_append(o, "[");
    emit_expr(g, o, e->idx[0]);
    ob_str_append(o, "]");
    return;
  default: OB_ASSERT(!"unexpected expression in lowered code");
  }
}

/* Stores the subtree executes: the unrolling pragma's measure of a loop. */
static int64_t steps(const ob_stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case OB_S_SEQ: {
    int64_t n = 0;
    for (int i = 0; i < s->nseq; i++) n += steps(s->seq[i]);
    return n;
  }
  case OB_S_FOR: {
    int64_t b = steps(s->body);
    return b > INT64_MAX / 2 / (s->var->extent ? s->var->extent : 1) ? INT64_MAX / 2 : b * s->var->extent;
  }
  case OB_S_IF: return steps(s->body);
  case OB_S_STORE: return 1;
  default: return 0;
  }
}

static bool has_barrier(const ob_stmt *s) {
  if (!s) return false;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++)
      if (has_barrier(s->seq[i])) return true;
    return false;
  case OB_S_FOR:
  case OB_S_IF: return has_barrier(s->body);
  case OB_S_BARRIER: return true;
  default: return false;
  }
}

/* Which serial loops unroll: marked ones, and (with a max step) those whose
 * subtree executes at most max_step stores; loops holding a barrier or an
 * allocation of shared memory stay loops. Explicit unrolling copies the
 * body with the index a constant; otherwise the loop is marked for the
 * pragma (OB_IT_UNROLL). */
static ob_stmt *expand(gcg *g, const ob_stmt *s) {
  ob_stmt *c = s ? ob_stmt_new(g->a, s->kind) : NULL;
  if (!c) return NULL;
  *c = *s;
  const ob_launch *l = &g->f->launch;
  switch (s->kind) {
  case OB_S_SEQ:
    c->seq = ob_arena_alloc(g->a, sizeof(ob_stmt *) * (size_t)(s->nseq ? s->nseq : 1));
    for (int i = 0; c->seq && i < s->nseq; i++) c->seq[i] = expand(g, s->seq[i]);
    return c;
  case OB_S_IF: {
    int64_t v;
    if (ob_is_const(s->cond, &v)) return v ? expand(g, s->body) : ob_stmt_new(g->a, OB_S_SEQ);
    c->body = expand(g, s->body);
    return c;
  }
  case OB_S_FOR: {
    if (ob_ann_is_bound(s->ann)) {
      c->body = expand(g, s->body);
      return c;
    }
    int64_t st = steps(s);
    bool unroll = s->ann == OB_IT_UNROLL || (l->unroll_max_step > 0 && st <= l->unroll_max_step);
    if (unroll && has_barrier(s->body)) unroll = false;
    if (unroll && (l->unroll_explicit || s->ann == OB_IT_UNROLL) && st <= OB_GPU_UNROLL_MAX) {
      int64_t n = s->var->extent;
      c = ob_stmt_new(g->a, OB_S_SEQ);
      if (!c || !(c->seq = ob_arena_alloc(g->a, sizeof(ob_stmt *) * (size_t)n))) return NULL;
      c->nseq = (int)n;
      for (int64_t i = 0; i < n; i++)
        c->seq[i] = expand(g, ob_stmt_subst(g->a, s->body, s->var, ob_e_int(g->a, i)));
      return c;
    }
    c->ann = unroll ? OB_IT_UNROLL : OB_IT_SERIAL;
    c->body = expand(g, s->body);
    return c;
  }
  default: return c;
  }
}

static void emit_stmt(gcg *g, const ob_stmt *s, int d);

static void emit_seq(gcg *g, const ob_stmt *s, int d) {
  for (int i = 0; i < s->nseq; i++) {
    const ob_stmt *c = s->seq[i];
    if (c->kind == OB_S_ALLOC) {
      if (c->buf->scope == OB_SCOPE_SHARED) continue; /* declared at the top */
      ind(g, d);
      ob_str_appendf(g->out, "%s ", ctype(c->buf->dtype));
      ob_cg_buf_name(g->out, c->buf);
      ob_str_appendf(g->out, "[%lld];\n", (long long)c->buf->numel);
      continue;
    }
    emit_stmt(g, c, d);
  }
}

static void emit_stmt(gcg *g, const ob_stmt *s, int d) {
  switch (s->kind) {
  case OB_S_SEQ: {
    bool block = false;
    for (int i = 0; i < s->nseq; i++)
      block |= s->seq[i]->kind == OB_S_ALLOC && s->seq[i]->buf->scope != OB_SCOPE_SHARED;
    if (block) {
      ind(g, d);
      ob_str_append(g->out, "{\n");
      emit_seq(g, s, d + 1);
      ind(g, d);
      ob_str_append(g->out, "}\n");
    } else {
      emit_seq(g, s, d);
    }
    return;
  }
  case OB_S_FOR: {
    const ob_launch *l = &g->f->launch;
    if (ob_ann_is_bound(s->ann)) {
      bool blk = ob_ann_is_block(s->ann);
      int k = blk ? s->ann - OB_IT_BLOCK_X : s->ann - OB_IT_THREAD_X;
      int64_t full = blk ? l->grid[k] : l->block[k];
      ind(g, d);
      ob_str_appendf(g->out, "{ /* %s bound to %s */\n", s->var->name, ob_iter_ann_name(s->ann));
      ind(g, d + 1);
      ob_str_appendf(g->out, "const %s ", g->ix);
      ob_cg_var_name(g->out, s->var);
      ob_str_appendf(g->out, " = %s;\n", blk ? g->d->block_idx[k] : g->d->thread_idx[k]);
      if (s->var->extent < full) {
        ind(g, d + 1);
        ob_str_append(g->out, "if (");
        ob_cg_var_name(g->out, s->var);
        ob_str_appendf(g->out, " < %lld) {\n", (long long)s->var->extent);
        emit_stmt(g, s->body, d + 2);
        ind(g, d + 1);
        ob_str_append(g->out, "}\n");
      } else {
        emit_stmt(g, s->body, d + 1);
      }
      ind(g, d);
      ob_str_append(g->out, "}\n");
      return;
    }
    if (s->ann == OB_IT_UNROLL) {
      ind(g, d);
      ob_str_append(g->out, "#pragma unroll\n");
    }
    ind(g, d);
    ob_str_appendf(g->out, "for (%s ", g->ix);
    ob_cg_var_name(g->out, s->var);
    ob_str_append(g->out, " = 0; ");
    ob_cg_var_name(g->out, s->var);
    ob_str_appendf(g->out, " < %lld; ++", (long long)s->var->extent);
    ob_cg_var_name(g->out, s->var);
    ob_str_append(g->out, ") {\n");
    emit_stmt(g, s->body, d + 1);
    ind(g, d);
    ob_str_append(g->out, "}\n");
    return;
  }
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
    ob_cg_buf_name(g->out, s->buf);
    ob_str_append(g->out, "[");
    emit_expr(g, g->out, s->index);
    ob_str_append(g->out, "] = ");
    emit_expr(g, g->out, s->value);
    ob_str_append(g->out, ";\n");
    return;
  case OB_S_BARRIER:
    ind(g, d);
    ob_str_appendf(g->out, "%s\n", g->d->barrier);
    return;
  case OB_S_PREFETCH: return; /* a CPU cache hint */
  case OB_S_ALLOC: /* emit_seq */
  default: OB_ASSERT(!"unexpected statement");
  }
}

static void collect_shared(const ob_stmt *s, const ob_buffer **out, int *n, int cap) {
  if (!s) return;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++) collect_shared(s->seq[i], out, n, cap);
    return;
  case OB_S_FOR:
  case OB_S_IF: collect_shared(s->body, out, n, cap); return;
  case OB_S_ALLOC:
    if (s->buf->scope == OB_SCOPE_SHARED && *n < cap) {
      for (int i = 0; i < *n; i++)
        if (out[i] == s->buf) return;
      out[(*n)++] = s->buf;
    }
    return;
  default: return;
  }
}

static int64_t max_extent(const ob_stmt *s) {
  if (!s) return 0;
  int64_t m = 0, x;
  switch (s->kind) {
  case OB_S_SEQ:
    for (int i = 0; i < s->nseq; i++)
      if ((x = max_extent(s->seq[i])) > m) m = x;
    return m;
  case OB_S_FOR:
    x = max_extent(s->body);
    return s->var->extent > x ? s->var->extent : x;
  case OB_S_IF: return max_extent(s->body);
  case OB_S_ALLOC: return s->buf->numel;
  default: return 0;
  }
}

ob_status ob_codegen_gpu(ob_ctx *ctx, const ob_target *target, const ob_lowered *f, const char *name,
                         char **out) {
  OB_ASSERT(ctx && target && f && name && out);
  *out = NULL;
  ob_target_kind kind = ob_target_get_facts(target)->kind;
  if (kind == OB_TARGET_CPU)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "ob_codegen_gpu: target '%s' is not a GPU target",
                   ob_target_str(target));
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "kernel name '%s' is not a C identifier", name);
  if (f->ntemps)
    return ob_fail(ctx, OB_ERR_SCHEDULE,
                   "GPU kernel %s: stage '%s' is a whole-tensor temporary at the root, which a GPU "
                   "kernel cannot allocate (inline it or attach it inside the output's loops)",
                   name, f->temps[0]->name);
  for (int i = 0; i < f->nargs; i++)
    if (f->args[i]->dtype != OB_F32)
      return ob_fail(ctx, OB_ERR_UNSUPPORTED, "GPU kernel %s: argument '%s' is %s; float32 only", name,
                     f->args[i]->name, ob_dtype_name(f->args[i]->dtype));
  const dialect *d = kind == OB_TARGET_CUDA ? &k_cuda : &k_opencl;
  int64_t big = max_extent(f->body);
  for (int i = 0; i < f->nargs; i++)
    if (f->args[i]->numel > big) big = f->args[i]->numel;
  gcg g = {.ctx = ctx, .f = f, .d = d, .ix = big <= (1 << 30) ? "int" : d->i64};
  ob_str body = {.ctx = ctx}, src = {.ctx = ctx};
  g.a = ob_arena_new(ctx, 64 * 1024);
  ob_stmt *top = g.a ? expand(&g, f->body) : NULL;
  if (!top || ob_arena_failed(g.a)) goto oom;
  g.out = &body;
  const ob_buffer *shared[64];
  int nshared = 0;
  collect_shared(top, shared, &nshared, 64);
  for (int i = 0; i < nshared; i++) {
    ob_str_appendf(&body, "  %s%s ", d->shared_kw, ctype(shared[i]->dtype));
    ob_cg_buf_name(&body, shared[i]);
    ob_str_appendf(&body, "[%lld];\n", (long long)shared[i]->numel);
  }
  emit_stmt(&g, top, 1);

  const ob_launch *l = &f->launch;
  int64_t threads = l->block[0] * l->block[1] * l->block[2];
  ob_str_appendf(&src,
                 "/* Generated by opbench codegen (%s): kernel %s, grid %lldx%lldx%lld, block "
                 "%lldx%lldx%lld, %lld bytes of shared memory. Do not edit. */\n",
                 d->name, name, (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2],
                 (long long)l->block[0], (long long)l->block[1], (long long)l->block[2],
                 (long long)l->shared_bytes);
  const char *dev = kind == OB_TARGET_CUDA ? "__device__ __forceinline__ " : "static inline ";
  ob_str_appendf(&src,
                 "%sint ob_floordiv(int a, int b) { int q = a / b; return (a %% b != 0 && ((a < 0) != "
                 "(b < 0))) ? q - 1 : q; }\n"
                 "%sint ob_floormod(int a, int b) { return a - ob_floordiv(a, b) * b; }\n"
                 "%sint ob_mini(int a, int b) { return a < b ? a : b; }\n"
                 "%sint ob_maxi(int a, int b) { return a > b ? a : b; }\n"
                 "%sfloat ob_minf(float a, float b) { return a < b ? a : b; }\n"
                 "%sfloat ob_maxf(float a, float b) { return a > b ? a : b; }\n\n",
                 dev, dev, dev, dev, dev, dev);
  if (strcmp(g.ix, "int")) { /* 64-bit indices: the helpers for them */
    ob_str_appendf(&src, "#define ob_floordiv(a, b) ob_floordiv64((a), (b))\n"
                         "#define ob_floormod(a, b) ((a) - ob_floordiv64((a), (b)) * (b))\n"
                         "#define ob_mini(a, b) ((a) < (b) ? (a) : (b))\n"
                         "#define ob_maxi(a, b) ((a) > (b) ? (a) : (b))\n"
                         "%s%s ob_floordiv64(%s a, %s b) { %s q = a / b; return (a %% b != 0 && ((a < 0) "
                         "!= (b < 0))) ? q - 1 : q; }\n\n",
                   dev, d->i64, d->i64, d->i64, d->i64);
  }
  if (kind == OB_TARGET_CUDA)
    ob_str_appendf(&src, "extern \"C\" __global__ void __launch_bounds__(%lld) %s(", (long long)threads, name);
  else
    ob_str_appendf(&src, "__kernel __attribute__((reqd_work_group_size(%lld, %lld, %lld))) void %s(",
                   (long long)l->block[0], (long long)l->block[1], (long long)l->block[2], name);
  for (int i = 0; i < f->nargs; i++) {
    ob_str_appendf(&src, "%s%s%s%s* %s ", i ? ", " : "", d->global_kw, f->args[i]->is_output ? "" : "const ",
                   ctype(f->args[i]->dtype), d->restrict_kw);
    ob_cg_buf_name(&src, f->args[i]);
  }
  ob_str_append(&src, ") {\n");
  ob_str_append_str(&src, &body);
  ob_str_append(&src, "}\n");
  if (ob_arena_failed(g.a)) goto oom;
  ob_str_free(&body);
  ob_arena_free(g.a);
  *out = ob_str_take(&src);
  return *out ? OB_OK : ob_fail(ctx, OB_ERR_NOMEM, "codegen of kernel %s: out of memory", name);
oom:
  ob_str_free(&body);
  ob_str_free(&src);
  ob_arena_free(g.a);
  return ob_fail(ctx, OB_ERR_NOMEM, "codegen of kernel %s: out of memory", name);
}

ob_status ob_codegen(ob_ctx *ctx, const ob_target *target, const ob_lowered *f, const char *name,
                     char **out) {
  if (target && ob_target_get_facts(target)->kind != OB_TARGET_CPU)
    return ob_codegen_gpu(ctx, target, f, name, out);
  return ob_codegen_c(ctx, target, f, name, out);
}
