/* test_nomem.c: out of memory is a status, never an abort. With the ctx's
 * allocation limit (ob_ctx_set_alloc_limit, SQLite's fault injection) the
 * Nth allocation of te, schedule, lower and codegen fails; for every N
 * below what a kernel needs (all of the first few hundred, then spread over
 * the rest), turning a config into C (ob_task_source, ob_task_lower) must
 * return OB_ERR_NOMEM with "out of memory" in the message, leave nothing
 * behind (ASan's leak check in the sanitizer build), and at the needed N
 * give the same source as without a limit. Run under ASan+UBSan this also
 * proves no NULL is dereferenced on any of those paths. Also: a
 * declaration written against te's public API and a schedule under the
 * limit, and ob_measure_configs, which must report NOMEM, not an
 * instantiation error of the config. OB_TEST_FULL_SWEEP=1 tries every N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static bool full_sweep;

/* One attempt at `limit`: the status of source + lowering, whose source
 * (when both succeeded) goes to *src. */
static ob_status attempt(ob_task *t, const ob_config *cfg, int64_t limit, char **src) {
  *src = NULL;
  char *name = NULL;
  ob_lowered *f = NULL;
  ob_ctx_set_alloc_limit(ctx, limit);
  ob_status st = ob_task_source(t, cfg, src, &name);
  if (!st) st = ob_task_lower(t, cfg, &f);
  if (!st) {
    char *ir = ob_lowered_str(f); /* a string of its own: may fail alone */
    if (!ir) st = ob_fail(ctx, OB_ERR_NOMEM, "printing the loop nest: out of memory");
    free(ir);
  }
  ob_ctx_set_alloc_limit(ctx, -1);
  ob_lowered_free(f);
  free(name);
  if (st) {
    free(*src);
    *src = NULL;
  }
  return st;
}

/* Sweeps the limit for one config of one template; returns the number of
 * allocations the config needs. */
static int64_t sweep(const char *op, const char *shape, const char *epi, const char *tmpl, bool random_cfg) {
  ob_workload wl;
  ob_task *t = NULL;
  ob_status st = ob_workload_parse(ctx, op, shape, &wl);
  if (!st && epi) st = ob_workload_set_epilogue(ctx, &wl, epi);
  if (!st) st = ob_task_new(ctx, &wl, tmpl, NULL, &t);
  if (st == OB_ERR_UNSUPPORTED && tmpl && strstr(tmpl, "winograd")) { /* not a 3x3 stride-1 conv */
    ob_ctx_clear_error(ctx);
    return 0;
  }
  CHECK_MSG(st == OB_OK, "%s %s: %s", op, shape, ob_ctx_errmsg(ctx));
  if (st) return 0;
  ob_config cfg = ob_task_default_config(t);
  if (random_cfg) { /* another corner of the space: other splits, unrolls */
    const ob_space *sp = ob_task_space(t);
    ob_rng rng = {strlen(shape)};
    for (int k = 0; k < 1000; k++)
      if (ob_space_get(ctx, sp, ob_rng_next(&rng) % ob_space_len(sp), &cfg) == OB_OK) break;
  }
  /* Winograd's larger tiles take the same paths with bigger coefficient
   * chains (F(4x4) needs about 600,000 allocations, F(6x6) millions): the
   * sweep, whose time grows with the count, takes F(2x2) */
  if (strstr(ob_task_template(t), "winograd")) ob_config_set_knob(&cfg, "tile_m", 2);
  char *want = NULL;
  st = attempt(t, &cfg, -1, &want);
  CHECK_MSG(st == OB_OK && want, "%s %s: %s", op, tmpl ? tmpl : "", ob_ctx_errmsg(ctx));
  /* The fewest allocations that succeed (more always succeed too: the
   * sequence of allocations is deterministic). */
  int64_t lo = 0, hi = 1;
  char *src = NULL;
  while (attempt(t, &cfg, hi, &src) != OB_OK) {
    lo = hi;
    hi *= 2;
    CHECK_MSG(hi < (1 << 26), "%s: no limit below 2^26 succeeds", op);
    if (hi >= (1 << 26)) break;
  }
  free(src);
  while (lo + 1 < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (attempt(t, &cfg, mid, &src) == OB_OK) hi = mid;
    else lo = mid;
    free(src);
  }
  int64_t need = hi;
  st = attempt(t, &cfg, need, &src);
  CHECK_MSG(st == OB_OK && src && want && !strcmp(src, want), "%s: at the limit %lld the source differs", op,
            (long long)need);
  free(src);
  /* Every limit below `need` fails with NOMEM, none otherwise. */
  int tried = 0, bad = 0;
  int64_t step = full_sweep || need <= 600 ? 1 : (need - 300) / 300 + 1;
  for (int64_t n = 0; n < need; n += n < 300 ? 1 : step) {
    ob_ctx_clear_error(ctx);
    st = attempt(t, &cfg, n, &src);
    tried++;
    if (st != OB_ERR_NOMEM || !strstr(ob_ctx_errmsg(ctx), "out of memory")) {
      if (bad++ < 5)
        CHECK_MSG(0, "%s %s, limit %lld of %lld: status %d (%s), message '%s'", op, tmpl ? tmpl : "(default)",
                  (long long)n, (long long)need, st, ob_status_str(st), ob_ctx_errmsg(ctx));
    }
    free(src);
  }
  CHECK_MSG(bad == 0, "%s: %d of %d limits did not give OB_ERR_NOMEM", op, bad, tried);
  printf("  %-16s %-24s %-22s %6lld allocations, %4d limits tried\n", op, tmpl ? tmpl : ob_task_template(t),
         random_cfg ? "(random config)" : "(default config)", (long long)need, tried);
  free(want);
  ob_task_free(t);
  return need;
}

/* Every template of every operator in the registry, each on a small
 * workload with the odd sizes and epilogues that take the other paths
 * (guards, padding, tails, fused epilogues). */
static const struct { const char *op, *shape, *epi; } k_cases[] = {
    {"conv2d", "C=5,H=11,W=13,K=7,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,add,relu"},
    {"conv2d", "C=32,H=6,W=9,K=48,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,relu6"},
    {"conv2d", "C=12,H=6,W=7,K=9,R=3,S=3,groups=3,stride_h=2,stride_w=2", NULL},
    {"depthwise_conv2d", "C=48,H=15,W=15,R=3,S=3,pad_t=1,pad_l=1,pad_b=1,pad_r=1", "bias,relu6"},
    {"dense", "M=3,N=17,K=13", "bias,relu"},
    {"dense", "M=7,N=48,K=20", "add"},
    {"batch_matmul", "B=2,M=7,N=13,K=9", "relu"},
    {"pool2d", "C=5,H=11,W=13,R=3,S=3,stride_h=2,stride_w=2,pad_t=1,pad_l=1,pad_b=1,pad_r=1,mode=1", NULL},
    {"global_avg_pool", "C=11,H=13,W=9", NULL},
    {"softmax", "M=5,N=37", NULL},
    {"layer_norm", "M=5,N=37", NULL},
    {"batch_norm", "C=3,H=17,W=19", NULL},
    {"concat", "C1=3,C2=5,H=7,W=9", NULL},
    {"to_nchwc", "C=32,H=5,W=19,cb=16", NULL},
    {"from_nchwc", "C=24,H=3,W=7,cb=8", NULL},
    {"gelu", "C=7,H=5,W=11", NULL},
    {"add", "C=5,H=3,W=11", NULL},
};

static void test_templates(void) {
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    const char *names[16];
    int n = ob_op_templates(k_cases[i].op, names, 16);
    CHECK(n >= 1);
    for (int k = 0; k < n && k < 16; k++) {
      sweep(k_cases[i].op, k_cases[i].shape, k_cases[i].epi, names[k], false);
      if (i < 2) sweep(k_cases[i].op, k_cases[i].shape, k_cases[i].epi, names[k], true);
    }
  }
}

/* A declaration through te's public API, cut short at every allocation:
 * constructors return NULL from then on and accept those NULLs, the
 * accessors read them as empty, and the failure is reported once, by
 * ob_sched_new (or the primitives once the schedule's own arena fails). */
static ob_status declare_and_schedule(int64_t limit) {
  ob_te *te = NULL;
  ob_sched *s = NULL;
  ob_ctx_set_alloc_limit(ctx, limit);
  ob_status st = ob_te_new(ctx, &te);
  if (st) goto done;
  int64_t shape[2] = {16, 24};
  ob_tensor *a = ob_te_placeholder(te, "a", 2, shape, OB_F32);
  ob_tensor *b = ob_te_placeholder(te, "b", 2, (int64_t[]){24, ob_tensor_dim(a, 0)}, OB_F32);
  ob_ivar *i = ob_te_axis(te, "i", ob_tensor_dim(a, 0)), *j = ob_te_axis(te, "j", 24);
  ob_ivar *k = ob_te_reduce_axis(te, "k", ob_tensor_dim(a, 1));
  ob_expr *prod = ob_te_bin(te, OB_MUL, ob_te_load(te, a, 2, (ob_expr *[]){ob_te_var(te, i), ob_te_var(te, k)}),
                            ob_te_load(te, b, 2, (ob_expr *[]){ob_te_var(te, k), ob_te_var(te, j)}));
  ob_tensor *c = ob_te_compute(te, "c", 2, (ob_ivar *[]){i, j}, ob_te_reduce(te, OB_REDUCE_SUM, prod, 1, &k));
  ob_expr *cv = ob_te_load(te, c, 2, (ob_expr *[]){ob_te_var(te, i), ob_te_var(te, j)});
  ob_tensor *r = ob_te_compute(te, "r", 2, (ob_ivar *[]){i, j},
                               ob_te_select(te, ob_te_bin(te, OB_GT, cv, ob_te_float(te, OB_F32, 0)), cv,
                                            ob_te_call(te, OB_TANH, ob_te_cast(te, OB_F32, cv))));
  if (ob_te_failed(te)) CHECK(!r && ob_tensor_ndim(r) == 0 && ob_tensor_numel(r) == 0 && !ob_tensor_is_placeholder(r));
  st = ob_sched_new(te, 1, &r, &s);
  if (st) goto done;
  ob_stage *sc = ob_sched_stage(s, c), *sr = ob_sched_stage(s, r), *local = NULL;
  ob_ivar *io, *ii, *jo, *ji, *f;
  st = ob_sched_cache_write(s, sc, &local);
  if (!st) st = ob_sched_tile(s, sr, ob_stage_axis(sr, 0), ob_stage_axis(sr, 1), 4, 8, &io, &jo, &ii, &ji);
  if (!st) st = ob_sched_fuse(s, sr, io, jo, &f);
  if (!st) st = ob_sched_parallel(s, sr, f);
  if (!st) st = ob_sched_vectorize(s, sr, ji);
  if (!st) st = ob_sched_compute_inline(s, sc);
  if (!st) st = ob_sched_compute_at(s, local, sr, f);
  ob_lowered *lw = NULL;
  if (!st) st = ob_lower(s, &lw);
  ob_lowered_free(lw);
done:
  ob_sched_free(s);
  ob_te_free(te);
  ob_ctx_set_alloc_limit(ctx, -1);
  return st;
}

static void test_public_te(void) {
  ob_status st = declare_and_schedule(-1);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  int64_t need = -1;
  int bad = 0;
  for (int64_t n = 0; n < 5000 && need < 0; n++) {
    ob_ctx_clear_error(ctx);
    st = declare_and_schedule(n);
    if (st == OB_OK) need = n;
    else if (st != OB_ERR_NOMEM || !strstr(ob_ctx_errmsg(ctx), "out of memory"))
      if (bad++ < 5) CHECK_MSG(0, "limit %lld: status %d, '%s'", (long long)n, st, ob_ctx_errmsg(ctx));
  }
  CHECK_MSG(need > 10 && bad == 0, "te + schedule + lower: needs %lld allocations, %d bad limits", (long long)need,
            bad);
  printf("  te + schedule + lower by hand: %lld allocations, every smaller limit OB_ERR_NOMEM\n", (long long)need);
}

/* Measuring: a config that cannot be turned into C for want of memory is
 * the call's failure (NOMEM), not a result "error 1" of that config. */
static void test_measure_configs(void) {
  ob_workload wl;
  ob_task *t = NULL;
  ob_runner *r = NULL;
  CHECK(ob_workload_parse(ctx, "dense", "M=4,N=32,K=16", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &t) == OB_OK);
  CHECK(ob_runner_new(ctx, &r) == OB_OK);
  if (!t || !r) goto done;
  ob_config cfg = ob_task_default_config(t);
  ob_measure_opts o = ob_measure_opts_default();
  ob_measure_result res;
  for (int64_t n = 0; n < 200; n += 37) {
    ob_ctx_set_alloc_limit(ctx, n);
    ob_status st = ob_measure_configs(ctx, t, r, &o, &cfg, 1, &res);
    ob_ctx_set_alloc_limit(ctx, -1);
    CHECK_MSG(st == OB_ERR_NOMEM && strstr(ob_ctx_errmsg(ctx), "out of memory"), "limit %lld: %d '%s'",
              (long long)n, st, ob_ctx_errmsg(ctx));
  }
done:
  ob_runner_free(r);
  ob_task_free(t);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  const char *fs = getenv("OB_TEST_FULL_SWEEP");
  full_sweep = fs && *fs && *fs != '0';
  test_templates();
  test_public_te();
  test_measure_configs();
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
