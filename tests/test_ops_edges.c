/* test_ops_edges.c: the kernels that go past what the vendor library does,
 * checked against the naive reference (ob_measure_configs: the runner's
 * check, at each config's stated tolerance):
 *  - border-aware convolution (pad_inline = 2, ob_sched_skip_padding): in
 *    conv2d_NCHWc.x86, conv2d_nchw.x86, depthwise_NCHWc.x86 and
 *    depthwise_nchw.x86, every padding up to the window size, asymmetric
 *    padding, stride 2, dilation 2, and no padded copy in the loop nest;
 *  - odd sizes at vector speed: conv2d_NCHWc.x86 with an output-channel
 *    block that does not divide K, dense_pack / batch_matmul_pack with
 *    panels that do not divide N and register blocks that do not divide M;
 *  - dense_pack / batch_matmul_pack's K blocks (k_block): values, old
 *    records' indices, results on 1 and 2 threads; their row tails
 *    (m_tail): values, default, a nest without repeated rows, results;
 *  - conv2d_NCHWc.x86's weight prefetch: in 1x1 layers whose weights outgrow
 *    the L2 and nowhere else, with unchanged results;
 *  - conv2d_winograd.x86 for every tile size (F(2x2), F(4x4), F(6x6)) and
 *    all three loop orders on spatial sizes whose tiles overhang the output
 *    (order 2's tile blocks across rows, cut short, and its reduction in
 *    chunks too), and parts that own channel blocks end to end ("own"),
 *    with epilogues and a batch of two, at the Winograd tolerances.
 * Shapes are small so the whole file builds about a hundred kernels. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/codegen.h"
#include "opbench/lower.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

static ob_ctx *ctx;
static ob_runner *runner;

/* Measures cfgs[0..n) of t on nthreads threads and expects every one
 * correct. */
static void expect_correct_on(ob_task *t, const ob_config *cfgs, int n, const char *what, int nthreads) {
  ob_measure_opts o = ob_measure_opts_default();
  o.timing.repeat = 1;
  o.timing.timeout_s = o.build.timeout_s = OB_TEST_TIMEOUT_S;
  o.nthreads = nthreads;
  ob_measure_result res[16];
  OB_ASSERT(n <= 16);
  ob_status st = ob_measure_configs(ctx, t, runner, &o, cfgs, n, res);
  CHECK_MSG(st == OB_OK, "%s: %s", what, ob_ctx_errmsg(ctx));
  char key[256];
  ob_workload_key(ob_task_workload(t), key, sizeof key);
  for (int i = 0; st == OB_OK && i < n; i++) {
    char *cs = ob_config_str(&cfgs[i]);
    CHECK_MSG(res[i].error_no == 0 && res[i].gflops > 0, "%s: %s %s [%s]: error %d: %s", what, key,
              ob_task_template(t), cs, res[i].error_no, res[i].message);
    free(cs);
  }
}

static void expect_correct(ob_task *t, const ob_config *cfgs, int n, const char *what) {
  expect_correct_on(t, cfgs, n, what, 2);
}

/* The workload of op and shape with stride, padding (one value or four:
 * top, left, bottom, right), dilation and epilogue where not NULL. */
static ob_status workload_of(const char *op, const char *shape, const char *stride, const char *pad,
                             const char *dil, const char *epi, ob_workload *out) {
  ob_workload wl;
  ob_status st = ob_workload_parse(ctx, op, shape, &wl);
  int64_t v[4];
  int nv;
  const char *names4[] = {"pad_t", "pad_l", "pad_b", "pad_r"};
  if (!st && stride) st = ob_workload_set(ctx, &wl, "stride", atoi(stride));
  if (!st && dil) st = ob_workload_set(ctx, &wl, "dilation", atoi(dil));
  if (!st && pad) {
    nv = sscanf(pad, "%lld,%lld,%lld,%lld", (long long *)&v[0], (long long *)&v[1], (long long *)&v[2],
                (long long *)&v[3]);
    if (nv == 1) st = ob_workload_set(ctx, &wl, "pad", v[0]);
    for (int i = 0; nv == 4 && i < 4 && !st; i++) st = ob_workload_set(ctx, &wl, names4[i], v[i]);
  }
  if (!st && epi) st = ob_workload_set_epilogue(ctx, &wl, epi);
  *out = wl;
  return st;
}

static ob_task *task_of(const char *op, const char *shape, const char *stride, const char *pad,
                        const char *dil, const char *epi, const char *tmpl) {
  ob_workload wl;
  ob_status st = workload_of(op, shape, stride, pad, dil, epi, &wl);
  ob_task *t = NULL;
  if (!st) st = ob_task_new(ctx, &wl, tmpl, NULL, &t);
  CHECK_MSG(st == OB_OK, "%s %s stride %s pad %s dilation %s %s: %s", op, shape, stride ? stride : "1",
            pad ? pad : "0", dil ? dil : "1", tmpl, ob_ctx_errmsg(ctx));
  return st ? NULL : t;
}

/* The default config with fix applied (NULL: as it is), and `extra` random
 * valid configs with it too (seeded), skipping configs the filter rejects. */
typedef struct cfg_fix {
  const char *knob; /* knob = v (NULL: none) */
  int64_t v;
  const char *split; /* and split's inner factor = f (NULL: none) */
  int64_t f;
} cfg_fix;

static void fix_config(ob_config *c, const cfg_fix *fix) {
  if (fix && fix->knob) ob_config_set_knob(c, fix->knob, fix->v);
  if (fix && fix->split) ob_config_set_split(c, fix->split, &fix->f, 1);
}

static int configs_fixed(ob_task *t, const cfg_fix *fix, int extra, uint64_t seed, ob_config *out) {
  const ob_space *sp = ob_task_space(t);
  int n = 0;
  ob_config c = ob_task_default_config(t);
  fix_config(&c, fix);
  if (ob_space_is_valid(sp, c.index)) out[n++] = c;
  ob_rng rng = {seed};
  for (int tries = 0; n < 1 + extra && tries < 2000; tries++) {
    if (ob_space_get(ctx, sp, ob_rng_next(&rng) % ob_space_len(sp), &c) != OB_OK) continue;
    fix_config(&c, fix);
    if (ob_space_is_valid(sp, c.index)) out[n++] = c;
  }
  ob_ctx_clear_error(ctx);
  return n;
}

/* The default config with knob `name` = v, and `extra` random ones. */
static int configs_with(ob_task *t, const char *name, int64_t v, int extra, uint64_t seed, ob_config *out) {
  return configs_fixed(t, &(cfg_fix){.knob = name, .v = v}, extra, seed, out);
}

/* ---- border-aware convolution ---------------------------------------------- */
static void check_border(const char *op, const char *tmpl, const char *shape, const char *stride,
                         const char *pad, const char *dil, const char *epi, int extra) {
  ob_task *t = task_of(op, shape, stride, pad, dil, epi, tmpl);
  if (!t) return;
  char what[256];
  snprintf(what, sizeof what, "border %s %s stride %s pad %s dilation %s", tmpl, shape, stride ? stride : "1",
           pad, dil ? dil : "1");
  ob_config cfgs[8];
  int n = configs_with(t, "pad_inline", 2, extra, 11 + strlen(what), cfgs);
  CHECK_MSG(n >= 1, "%s: no valid config with pad_inline = 2", what);
  /* the padding is skipped, never copied: no padded buffer in the nest */
  ob_lowered *f = NULL;
  CHECK_MSG(ob_task_lower(t, &cfgs[0], &f) == OB_OK, "%s: %s", what, ob_ctx_errmsg(ctx));
  char *nest = f ? ob_lowered_str(f) : NULL;
  CHECK_MSG(nest && !strstr(nest, "data_pad"), "%s: a padded copy in:\n%s", what, nest ? nest : "(null)");
  free(nest);
  ob_lowered_free(f);
  expect_correct(t, cfgs, n, what);
  ob_task_free(t);
}

static void test_border(void) {
  static const char *const conv_tmpls[] = {"conv2d_NCHWc.x86", "conv2d_nchw.x86"};
  static const char *const dw_tmpls[] = {"depthwise_NCHWc.x86", "depthwise_nchw.x86"};
  /* every padding up to the window (3 rows, 3 columns; 5 rows, 3 columns) */
  static const char *const pads3[] = {"1", "2", "3"};
  for (int tm = 0; tm < 2; tm++) {
    for (int i = 0; i < 3; i++) {
      check_border("conv2d", conv_tmpls[tm], "C=8,H=9,W=10,K=16,R=3,S=3", NULL, pads3[i], NULL, NULL, 1);
      check_border("depthwise_conv2d", dw_tmpls[tm], "C=16,H=9,W=10,R=3,S=3", NULL, pads3[i], NULL, NULL, 1);
    }
    /* a 5x3 window: rows padded by up to 5, asymmetric */
    check_border("conv2d", conv_tmpls[tm], "C=8,H=11,W=9,K=16,R=5,S=3", NULL, "4,1,5,3", NULL, "bias,relu", 1);
    check_border("conv2d", conv_tmpls[tm], "C=8,H=11,W=9,K=16,R=5,S=3", NULL, "0,2,3,0", NULL, NULL, 1);
    check_border("depthwise_conv2d", dw_tmpls[tm], "C=16,H=11,W=9,R=5,S=3", NULL, "5,0,2,3", NULL, NULL, 1);
    /* stride 2, dilation 2 and both */
    check_border("conv2d", conv_tmpls[tm], "C=8,H=13,W=12,K=16,R=3,S=3", "2", "1", NULL, NULL, 1);
    check_border("conv2d", conv_tmpls[tm], "C=8,H=13,W=12,K=16,R=3,S=3", "2", "3,0,2,1", NULL, "bias,add", 1);
    check_border("conv2d", conv_tmpls[tm], "C=8,H=13,W=12,K=16,R=3,S=3", NULL, "2", "2", NULL, 1);
    check_border("conv2d", conv_tmpls[tm], "C=8,H=15,W=13,K=16,R=3,S=3", "2", "1,4,3,0", "2", NULL, 1);
    check_border("depthwise_conv2d", dw_tmpls[tm], "C=16,H=13,W=12,R=3,S=3", "2", "1", "2", NULL, 1);
  }
  /* a 7x7 window at stride 2 (ResNet's first layer), smaller */
  check_border("conv2d", "conv2d_NCHWc.x86", "C=3,H=20,W=18,K=16,R=7,S=7", "2", "3", NULL, NULL, 2);
}

/* ---- odd sizes ---------------------------------------------------------------- */
static void test_odd_sizes(void) {
  /* K = 23 in blocks of half a vector, one and two (padded; 8, 16 and 32
   * on AVX-512, 4, 8 and 16 on AVX2), C = 17 */
  ob_task *t = task_of("conv2d", "C=17,H=12,W=11,K=23,R=5,S=3", NULL, "1", NULL, "bias,add", "conv2d_NCHWc.x86");
  if (t) {
    ob_config cfgs[3];
    int n = 0;
    int64_t lanes = ob_target_get_facts(ob_task_target(t))->lanes_f32;
    for (int64_t ocb = lanes / 2; ocb <= 2 * lanes; ocb *= 2) {
      ob_config c = ob_task_default_config(t);
      ob_config_set_split(&c, "tile_oc", (int64_t[]){ocb}, 1);
      int64_t oc[2];
      ob_config_split(&c, "tile_oc", oc);
      CHECK_MSG(oc[1] == ocb, "conv2d K=23: no output-channel block of %lld (got %lld)", (long long)ocb,
                (long long)oc[1]);
      if (ob_space_is_valid(ob_task_space(t), c.index)) cfgs[n++] = c;
    }
    CHECK(n >= 2);
    expect_correct(t, cfgs, n, "odd channels");
    /* the default keeps whole vectors */
    ob_config d = ob_task_default_config(t);
    int64_t oc[2];
    ob_config_split(&d, "tile_oc", oc);
    CHECK_MSG(oc[1] > 1, "conv2d K=23: default output-channel block %lld", (long long)oc[1]);
    ob_task_free(t);
  }
  /* two vectors of output channels by default where the padded last block
   * wastes at most 1/32 (squeezenet's 1000-way classifier: 520 here), not
   * where it wastes more (40) */
  static const struct {
    const char *shape;
    bool two;
  } kp[] = {{"C=64,H=13,W=13,K=520,R=1,S=1", true}, {"C=32,H=13,W=13,K=40,R=1,S=1", false}};
  for (size_t i = 0; i < sizeof kp / sizeof kp[0]; i++) {
    t = task_of("conv2d", kp[i].shape, NULL, NULL, NULL, "bias,relu", "conv2d_NCHWc.x86");
    if (!t) continue;
    int64_t lanes = ob_target_get_facts(ob_task_target(t))->lanes_f32, oc[2];
    ob_config d = ob_task_default_config(t);
    ob_config_split(&d, "tile_oc", oc);
    CHECK_MSG((oc[1] == 2 * lanes) == kp[i].two, "conv2d %s: default output-channel block %lld (%lld lanes)",
              kp[i].shape, (long long)oc[1], (long long)lanes);
    if (kp[i].two) expect_correct(t, &d, 1, "padded two-vector default");
    ob_task_free(t);
  }
  /* GEMM panels past N, register blocks past M */
  static const struct {
    const char *op, *shape, *epi;
  } g[] = {
      {"dense", "M=1,N=37,K=24", NULL},
      {"dense", "M=7,N=45,K=33", "bias,relu"},
      {"dense", "M=37,N=101,K=16", "add"},
      {"batch_matmul", "B=2,M=5,N=19,K=16", "bias"},
  };
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
    const char *tmpl = strcmp(g[i].op, "dense") ? "batch_matmul_pack.x86" : "dense_pack.x86";
    t = task_of(g[i].op, g[i].shape, NULL, NULL, NULL, g[i].epi, tmpl);
    if (!t) continue;
    ob_config d = ob_task_default_config(t);
    int64_t x[2];
    ob_config_split(&d, "tile_x", x);
    CHECK_MSG(x[1] > 1, "%s %s: the default panel is %lld column(s) wide", g[i].op, g[i].shape, (long long)x[1]);
    ob_config cfgs[6];
    int n = configs_with(t, NULL, 0, 5, 31 + i, cfgs);
    expect_correct(t, cfgs, n, "odd GEMM");
    ob_task_free(t);
  }
}

/* The packed GEMM task of op (dense or batch_matmul), in *knob_at the
 * index of its knob `knob` (-1: none), and in what the knob and the
 * workload, for messages. */
static ob_task *gemm_task(const char *op, const char *shape, const char *epi, const char *knob, int *knob_at,
                          char *what, size_t cap) {
  snprintf(what, cap, "%s %s %s", knob, op, shape);
  ob_task *t = task_of(op, shape, NULL, NULL, NULL, epi, strcmp(op, "dense") ? "batch_matmul_pack.x86" : "dense_pack.x86");
  *knob_at = t ? ob_space_knob_find(ob_task_space(t), knob) : -1;
  return t;
}

/* dense_pack / batch_matmul_pack's K blocks (knob k_block, added last):
 * its values (0, then the powers of two from 64 to 1024 that divide K and
 * are below it, where M has more than 12 rows), old records' indices and
 * JSON naming their configs with k_block 0, a default of 0, and the results
 * of K-blocked configs on 1 and 2 threads: odd M and N, a batch, epilogues. */
static void test_k_block(void) {
  static const struct {
    const char *op, *shape, *epi;
    int values;
  } c[] = {
      {"dense", "M=37,N=45,K=640", "bias,relu,add", 3},  /* 0 64 128 */
      {"dense", "M=13,N=8,K=2048", "relu", 6},           /* 0 64 ... 1024 */
      {"dense", "M=12,N=24,K=512", NULL, 1},             /* one row block */
      {"dense", "M=50,N=33,K=96", NULL, 1},              /* K has no such divisor */
      {"batch_matmul", "B=3,M=29,N=21,K=256", "add", 3}, /* 0 64 128 */
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[128];
    int k;
    ob_task *t = gemm_task(c[i].op, c[i].shape, c[i].epi, "k_block", &k, what, sizeof what);
    if (!t) continue;
    const ob_space *sp = ob_task_space(t);
    CHECK_MSG(k == ob_space_knob_find(sp, "m_tail") - 1 && ob_space_knob_len(sp, k) == c[i].values,
              "%s: knob k_block not before m_tail or with %d values", what,
              k >= 0 ? ob_space_knob_len(sp, k) : -1);
    int64_t v0 = -1;
    CHECK(k < 0 || (ob_space_entity(sp, k, 0, &v0, 1) == 1 && v0 == 0));
    ob_config d = ob_task_default_config(t);
    CHECK_MSG(ob_config_knob(&d, "k_block") == 0, "%s: default k_block %lld", what,
              (long long)ob_config_knob(&d, "k_block"));
    /* an old record: its JSON lacks k_block (and m_tail, added after it)
     * and names the config of k_block 0 */
    ob_config o = d, j;
    ob_config_set_knob(&o, "unroll_inner", 0); /* added after m_tail */
    char *js = NULL;
    CHECK(ob_config_to_json(ctx, &o, &js) == OB_OK && js);
    char *kb = js ? strstr(js, ", [\"k_block\"") : NULL, *ent = js ? strstr(js, "\"entity\"") : NULL;
    if (kb) memmove(kb, "]}", 3); /* drop the knob and m_tail, the last entities */
    char old[512] = ""; /* and the index: the entity alone names the config */
    if (ent) snprintf(old, sizeof old, "{%s", ent);
    CHECK_MSG(kb && ent && ob_config_from_json(ctx, sp, old, &j) == OB_OK && j.index == o.index &&
                  ob_config_knob(&j, "k_block") == 0,
              "%s: an entity without k_block reads another config (%s)", what, old);
    free(js);
    if (k >= 0 && ob_space_knob_len(sp, k) > 1) {
      ob_config cfgs[8];
      int n = 0;
      for (int v = 1; v < ob_space_knob_len(sp, k) && n < 8; v++) {
        int64_t kc;
        ob_space_entity(sp, k, v, &kc, 1);
        n += configs_with(t, "k_block", kc, 1, 91 + i * 8 + (size_t)v, cfgs + n) > 0;
      }
      CHECK_MSG(n >= 2, "%s: too few K-blocked configs (%d)", what, n);
      for (int q = 0; q < n; q++) CHECK(ob_config_knob(&cfgs[q], "k_block") > 0);
      expect_correct_on(t, cfgs, n, what, 1);
      expect_correct_on(t, cfgs, n, what, 2);
    }
    ob_task_free(t);
  }
  /* records stored before the knob: their indices on a 16-register, 8-lane
   * host (AVX2), taken from the space without it */
  ob_target *tg = NULL;
  CHECK(ob_target_parse(ctx, "llvm -mcpu=native", &tg) == OB_OK);
  bool avx2 = tg && ob_target_get_facts(tg)->vector_registers == 16 && ob_target_get_facts(tg)->lanes_f32 == 8;
  bool regs16 = tg && ob_target_get_facts(tg)->vector_registers <= 16;
  int64_t lanes = tg ? ob_target_get_facts(tg)->lanes_f32 : 0;
  ob_target_free(tg);
  /* the defaults: with 16 registers K not unrolled (tile_k 1) and a GEMV's
   * widest panel (4 vectors); with 32, tile_k 2 and panels of 2 vectors */
  ob_task *gemm = task_of("dense", "M=128,N=768,K=768", NULL, NULL, NULL, NULL, "dense_pack.x86");
  ob_task *gemv = task_of("dense", "M=1,N=1000,K=512", NULL, NULL, NULL, NULL, "dense_pack.x86");
  if (gemm && gemv && lanes > 0) {
    ob_config d = ob_task_default_config(gemm), v = ob_task_default_config(gemv);
    int64_t kk[2], x[2];
    ob_config_split(&d, "tile_k", kk);
    ob_config_split(&v, "tile_x", x);
    CHECK_MSG(kk[1] == (regs16 ? 1 : 2), "dense M=128: default tile_k %lld", (long long)kk[1]);
    CHECK_MSG(x[1] == (regs16 ? 4 : 2) * lanes, "dense M=1: default panel %lld columns", (long long)x[1]);
  }
  ob_task_free(gemm);
  ob_task_free(gemv);
  static const struct {
    const char *op, *shape;
    int64_t y, x, k;
    uint64_t index;
  } r[] = {
      {"dense", "M=128,N=768,K=768", 6, 16, 2, 108},     {"dense", "M=128,N=768,K=768", 4, 8, 1, 6},
      {"dense", "M=128,N=768,K=768", 3, 16, 4, 228},     {"dense", "M=37,N=45,K=640", 6, 16, 2, 72},
      {"dense", "M=37,N=45,K=640", 3, 16, 4, 136},       {"batch_matmul", "B=12,M=128,N=64,K=128", 6, 16, 2, 88},
      {"batch_matmul", "B=12,M=128,N=64,K=128", 3, 16, 4, 168},
  };
  for (size_t i = 0; avx2 && i < sizeof r / sizeof r[0]; i++) {
    const char *tmpl = strcmp(r[i].op, "dense") ? "batch_matmul_pack.x86" : "dense_pack.x86";
    ob_task *t = task_of(r[i].op, r[i].shape, NULL, NULL, NULL, NULL, tmpl);
    if (!t) continue;
    ob_config cf;
    int64_t y[2], x[2], kk[2];
    CHECK(ob_space_get(ctx, ob_task_space(t), r[i].index, &cf) == OB_OK);
    ob_config_split(&cf, "tile_y", y);
    ob_config_split(&cf, "tile_x", x);
    ob_config_split(&cf, "tile_k", kk);
    CHECK_MSG(y[1] == r[i].y && x[1] == r[i].x && kk[1] == r[i].k && ob_config_knob(&cf, "k_block") == 0,
              "%s %s: index %llu names another config than its record's", r[i].op, r[i].shape,
              (unsigned long long)r[i].index);
    ob_task_free(t);
  }
}

/* dense_pack / batch_matmul_pack's row tail (knob m_tail, added last): its
 * values (only where M > 1), configs whose tile_y divides M rejected (the
 * knob would change nothing), the default (on where the rows leave a tail
 * and batch x panels are at least 32 tasks), no repeated rows in its nest
 * (no min() on the row index) and a peeled tail, and the results on 1 and 2
 * threads: odd M and N, K blocks, a batch, epilogues. */
static void test_m_tail(void) {
  static const struct {
    const char *op, *shape, *epi;
    bool dflt; /* the default has m_tail 1 */
  } c[] = {
      {"dense", "M=64,N=512,K=64", NULL, true},             /* 6-row blocks: 10 + a tail of 4; 32 panels */
      {"dense", "M=37,N=45,K=640", "bias,relu,add", false}, /* 3 panels: too few tasks */
      {"dense", "M=13,N=8,K=2048", "relu", false},
      {"batch_matmul", "B=12,M=29,N=40,K=64", "add", true}, /* 12 x 3 panels of 16 (N padded to 48) */
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[128];
    int k;
    ob_task *t = gemm_task(c[i].op, c[i].shape, c[i].epi, "m_tail", &k, what, sizeof what);
    if (!t) continue;
    const ob_space *sp = ob_task_space(t);
    CHECK_MSG(k == ob_space_knob_find(sp, "unroll_inner") - 1 && ob_space_knob_len(sp, k) == 2,
              "%s: knob m_tail not the template's last or with %d values",
              what, k >= 0 ? ob_space_knob_len(sp, k) : -1);
    ob_config d = ob_task_default_config(t);
    int64_t y[2];
    ob_config_split(&d, "tile_y", y);
    CHECK_MSG((ob_config_knob(&d, "m_tail") != 0) == c[i].dflt, "%s: default m_tail %lld (tile_y %lld)", what,
              (long long)ob_config_knob(&d, "m_tail"), (long long)y[1]);
    /* a tile_y that divides M: m_tail 1 is rejected */
    ob_config dv = d;
    ob_config_set_split(&dv, "tile_y", (int64_t[]){1}, 1);
    ob_config_set_knob(&dv, "m_tail", 1);
    CHECK_MSG(!ob_space_is_valid(sp, dv.index), "%s: m_tail 1 with rows of 1 is a valid config", what);
    ob_config cfgs[8];
    int n = configs_fixed(t, &(cfg_fix){.knob = "m_tail", .v = 1, .split = "tile_y", .f = 6}, 0, 1, cfgs);
    n += configs_with(t, "m_tail", 1, 4, 301 + i, cfgs + n);
    CHECK_MSG(n >= 3, "%s: too few configs with m_tail 1 (%d)", what, n);
    /* the nest of 6-row blocks with a tail: no row repeated, the tail peeled
     * (no guard left where the panels divide N: the first shape) */
    ob_lowered *f = NULL;
    CHECK_MSG(ob_task_lower(t, &cfgs[0], &f) == OB_OK, "%s: %s", what, ob_ctx_errmsg(ctx));
    char *nest = f ? ob_lowered_str(f) : NULL;
    CHECK_MSG(nest && !strstr(nest, "min(") && (i > 0 || !strstr(nest, "if (")), "%s: repeated rows or a guard in:\n%s", what,
              nest ? nest : "(null)");
    free(nest);
    ob_lowered_free(f);
    expect_correct_on(t, cfgs, n, what, 1);
    expect_correct_on(t, cfgs, n, what, 2);
    ob_task_free(t);
  }
}

/* ---- weight prefetch ------------------------------------------------------------ */
/* Whether the lowered nest of t's default config has a software prefetch. */
static bool nest_prefetches(ob_task *t, const char *what) {
  ob_config c = ob_task_default_config(t);
  ob_lowered *f = NULL;
  CHECK_MSG(ob_task_lower(t, &c, &f) == OB_OK, "%s: %s", what, ob_ctx_errmsg(ctx));
  char *nest = f ? ob_lowered_str(f) : NULL;
  bool has = nest && strstr(nest, "prefetch ");
  free(nest);
  ob_lowered_free(f);
  return has;
}

/* conv2d_NCHWc prefetches the next output-channel block's weights in 1x1
 * layers whose weights outgrow the L2, and in larger windows whose weights
 * outgrow it under the weights-stationary order (knob "stationary", the
 * default where a register tile is a whole row), and nowhere else; values
 * unchanged, padding (asymmetric too) and strides included. */
static void test_weight_prefetch(void) {
  ob_target *tg = NULL;
  CHECK(ob_target_parse(ctx, "llvm -mcpu=native", &tg) == OB_OK);
  if (!tg) return;
  int64_t l2 = ob_target_get_facts(tg)->l2_bytes;
  ob_target_free(tg);
  static const struct {
    const char *shape, *pad, *stride;
    double wbytes;
    bool one_by_one, whole_row; /* whole_row: the default tile is a whole row */
  } c[] = {
      {"C=2048,H=7,W=7,K=1024,R=1,S=1", NULL, NULL, 4.0 * 2048 * 1024, true, false},
      {"C=512,H=14,W=14,K=2048,R=1,S=1", NULL, "2", 4.0 * 512 * 2048, true, false},
      {"C=64,H=14,W=14,K=64,R=1,S=1", NULL, NULL, 4.0 * 64 * 64, true, false},
      {"C=512,H=7,W=7,K=512,R=3,S=3", "1", NULL, 4.0 * 512 * 512 * 9, false, true},
      {"C=256,H=14,W=14,K=512,R=3,S=3", "1", "2", 4.0 * 256 * 512 * 9, false, true},
      {"C=256,H=9,W=9,K=256,R=3,S=3", "0,1,2,1", NULL, 4.0 * 256 * 256 * 9, false, true},
      {"C=256,H=14,W=14,K=256,R=3,S=3", "1", NULL, 4.0 * 256 * 256 * 9, false, false},
      {"C=64,H=7,W=7,K=64,R=3,S=3", "1", NULL, 4.0 * 64 * 64 * 9, false, true},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    ob_task *t = task_of("conv2d", c[i].shape, c[i].stride, c[i].pad, NULL, "bias,relu", "conv2d_NCHWc.x86");
    if (!t) continue;
    char what[128];
    snprintf(what, sizeof what, "weight prefetch %s pad %s", c[i].shape, c[i].pad ? c[i].pad : "0");
    bool big = l2 > 0 && c[i].wbytes > (double)l2;
    /* a 1x1 layer in input-channel chunks (k_chunk) reads a chunk's weights
     * of a block once per chunk, and runs without */
    ob_config dk = ob_task_default_config(t);
    bool want = big && (c[i].one_by_one ? !ob_config_knob(&dk, "k_chunk") : c[i].whole_row);
    CHECK_MSG(nest_prefetches(t, what) == want, "%s: prefetch %s expected (L2 %lld bytes)", what,
              want ? "" : "not", (long long)l2);
    const ob_space *sp = ob_task_space(t);
    int k = ob_space_knob_find(sp, "stationary");
    CHECK_MSG(k >= 0 && ob_space_knob_len(sp, k) == (big && !c[i].one_by_one ? 2 : 1),
              "%s: knob stationary has the wrong number of values", what);
    ob_config d = ob_task_default_config(t);
    CHECK_MSG(ob_config_knob(&d, "stationary") == (big && c[i].whole_row && !c[i].one_by_one),
              "%s: default stationary wrong", what);
    ob_config cfgs[4];
    int n = 0;
    if (c[i].one_by_one)
      n = configs_with(t, NULL, 0, 3, 41 + i, cfgs);
    else if (big)
      n = configs_with(t, "stationary", 1, 3, 41 + i, cfgs);
    CHECK_MSG(c[i].one_by_one || !big || n >= 2, "%s: too few stationary configs (%d)", what, n);
    if (n) expect_correct(t, cfgs, n, what);
    ob_task_free(t);
  }
  /* dense_pack / batch_matmul_pack with a row tail (a thread runs a panel's
   * rows, then the next panel): the next panel prefetched where B outgrows
   * the L2 and K is a whole number of prefetch steps, nowhere else; the
   * last panel prefetches itself (clamped), so the parallel loop over
   * panels keeps every panel (a guard would have partitioned the last one
   * off, onto one thread); results on 1 and 2 threads */
  static const struct {
    const char *op, *shape;
    double bbytes;
    bool tail;
  } g[] = {
      {"dense", "M=64,N=512,K=1024", 4.0 * 512 * 1024, true}, /* 2 MiB of B, 32 panels */
      {"dense", "M=64,N=512,K=96", 4.0 * 512 * 96, true},     /* 192 KiB */
      {"dense", "M=60,N=512,K=1024", 4.0 * 512 * 1024, false}, /* 6-row blocks divide M: no tail */
      {"batch_matmul", "B=12,M=29,N=64,K=512", 4.0 * 12 * 64 * 512, true},
  };
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
    char what[128];
    int k;
    ob_task *t = gemm_task(g[i].op, g[i].shape, NULL, "m_tail", &k, what, sizeof what);
    if (!t) continue;
    ob_config d = ob_task_default_config(t);
    bool want = g[i].tail && l2 > 0 && g[i].bbytes > (double)l2;
    CHECK_MSG((ob_config_knob(&d, "m_tail") != 0) == g[i].tail, "%s: default m_tail", what);
    CHECK_MSG(nest_prefetches(t, what) == want, "%s: prefetch %s expected (L2 %lld bytes)", what, want ? "" : "not",
              (long long)l2);
    ob_lowered *f = NULL;
    CHECK(ob_task_lower(t, &d, &f) == OB_OK);
    char *nest = f ? ob_lowered_str(f) : NULL;
    int top = 0; /* statements of the kernel's body: the parallel loop alone */
    for (const char *l = nest; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
      top += l[0] == ' ' && l[1] == ' ' && l[2] != ' ' && l[2] != '}' && l[2] != '\n';
    CHECK_MSG(nest && top == 1 && strstr(nest, "  parallel "), "%s: the parallel loop partitioned:\n%s", what,
              nest ? nest : "(null)");
    free(nest);
    ob_lowered_free(f);
    expect_correct_on(t, &d, 1, what, 1);
    expect_correct_on(t, &d, 1, what, 2);
    ob_task_free(t);
  }
}

/* A case of a conv2d_NCHWc knob's test: the workload, its epilogue and
 * how many values the knob has there. */
typedef struct knob_row {
  const char *shape, *pad, *stride, *epi;
  int values;
} knob_row;

/* The case's task (NULL when it could not be made), its name in what, and
 * the knob's value count checked. */
static ob_task *knob_case(const char *knob, const knob_row *r, char *what, size_t n) {
  ob_task *t = task_of("conv2d", r->shape, r->stride, r->pad, NULL, r->epi, "conv2d_NCHWc.x86");
  if (!t) return NULL;
  snprintf(what, n, "%s %s pad %s stride %s", knob, r->shape, r->pad ? r->pad : "0", r->stride ? r->stride : "1");
  const ob_space *sp = ob_task_space(t);
  int k = ob_space_knob_find(sp, knob);
  CHECK_MSG(k >= 0 && ob_space_knob_len(sp, k) == r->values, "%s: knob %s has the wrong values", what, knob);
  return t;
}

/* conv2d_NCHWc's rows outside the output-channel blocks (knob rows_outer):
 * the default where the input outgrows half the L2 and the weights do not,
 * a single value where there is one block or one row, and the results of
 * configs with it, strides, padding and epilogues included. */
static void test_rows_outer(void) {
  ob_target *tg = NULL;
  CHECK(ob_target_parse(ctx, "llvm -mcpu=native", &tg) == OB_OK);
  if (!tg) return;
  double half = ob_target_get_facts(tg)->l2_bytes / 2.0;
  ob_target_free(tg);
  static const struct {
    const char *shape, *pad, *stride, *epi;
    double wbytes, ibytes;
    int values;
  } c[] = {
      {"C=64,H=56,W=56,K=32,R=1,S=1", NULL, "2", "bias,add", 4.0 * 64 * 32, 4.0 * 64 * 56 * 56, 2},
      {"C=8,H=9,W=11,K=40,R=3,S=3", "1", NULL, "bias,relu", 4.0 * 8 * 40 * 9, 4.0 * 8 * 9 * 11, 2},
      {"C=16,H=13,W=12,K=24,R=3,S=3", "2,0,1,1", "2", NULL, 4.0 * 16 * 24 * 9, 4.0 * 16 * 13 * 12, 2},
      {"C=512,H=14,W=14,K=512,R=1,S=1", NULL, NULL, NULL, 4.0 * 512 * 512, 4.0 * 512 * 14 * 14, 2},
      {"C=16,H=9,W=9,K=16,R=3,S=3", "1", NULL, NULL, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[128];
    knob_row r = {c[i].shape, c[i].pad, c[i].stride, c[i].epi, c[i].values};
    ob_task *t = knob_case("rows_outer", &r, what, sizeof what);
    if (!t) continue;
    ob_config d = ob_task_default_config(t);
    bool want = c[i].values == 2 && half > 0 && c[i].wbytes <= half && c[i].ibytes > half &&
                !ob_config_knob(&d, "stationary");
    CHECK_MSG(ob_config_knob(&d, "rows_outer") == want, "%s: default rows_outer %lld, %d expected", what,
              (long long)ob_config_knob(&d, "rows_outer"), want);
    if (c[i].values == 2) {
      ob_config cfgs[4];
      int n = configs_with(t, "rows_outer", 1, 3, 77 + i, cfgs);
      CHECK_MSG(n >= 2, "%s: too few configs with rows outside (%d)", what, n);
      expect_correct(t, cfgs, n, what);
    }
    ob_task_free(t);
  }
}

/* conv2d_NCHWc's register blocks over pixels (knob pixels): offered for 1x1
 * windows without padding, never with row blocks or rows outside; the
 * default with 16 registers where 6 columns leave a tail in every row; the
 * results of configs with it (blocks that cross rows, the image's tail,
 * stride 2, padded channel blocks, a batch, epilogues with a residual). */
static void test_pixels(void) {
  static const knob_row c[] = {
      {"C=16,H=7,W=7,K=48,R=1,S=1", NULL, NULL, "bias,add", 2},
      {"C=24,H=14,W=14,K=32,R=1,S=1", NULL, "2", "bias,relu", 2},
      {"N=2,C=8,H=5,W=9,K=23,R=1,S=1", NULL, NULL, "add", 2},
      {"C=8,H=7,W=7,K=16,R=1,S=1", "1", NULL, NULL, 1},
      {"C=8,H=7,W=7,K=16,R=3,S=3", NULL, NULL, NULL, 1},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[128];
    ob_task *t = knob_case("pixels", &c[i], what, sizeof what);
    if (!t) continue;
    ob_config d = ob_task_default_config(t);
    if (ob_config_knob(&d, "pixels")) {
      int64_t oh[2];
      ob_config_split(&d, "tile_oh", oh);
      CHECK_MSG(c[i].values == 2 && oh[1] == 1 && !ob_config_knob(&d, "rows_outer"), "%s: a bad default", what);
    }
    if (c[i].values == 2) {
      ob_config cfgs[5];
      int n = configs_with(t, "pixels", 1, 4, 91 + i, cfgs);
      CHECK_MSG(n >= 3, "%s: too few configs over pixels (%d)", what, n);
      for (int j = 0; j < n; j++) {
        int64_t oh[2];
        ob_config_split(&cfgs[j], "tile_oh", oh);
        CHECK_MSG(oh[1] == 1 && !ob_config_knob(&cfgs[j], "rows_outer"), "%s: the filter let a row block in", what);
      }
      expect_correct(t, cfgs, n, what);
    }
    ob_task_free(t);
  }
  /* the default over pixels where 16 registers' 6 x 2 block leaves a tail
   * in every row (7x7, not rows outside: a small input) */
  ob_task *t = task_of("conv2d", "C=256,H=14,W=14,K=512,R=1,S=1", "2", NULL, NULL, NULL, "conv2d_NCHWc.x86");
  if (t) {
    ob_config d = ob_task_default_config(t);
    bool sixteen = ob_target_get_facts(ob_task_target(t))->vector_registers <= 16;
    CHECK_MSG(ob_config_knob(&d, "pixels") == sixteen, "pixels default %lld with %s registers",
              (long long)ob_config_knob(&d, "pixels"), sixteen ? "16" : "32");
    ob_task_free(t);
  }
  /* few output-channel blocks (K = 16): the parallel loop over (image,
   * channel blocks) had one to four tasks, and a second thread sat idle
   * (mobilenet-v2's 32x112 -> 16 1x1: 91 GFLOPS at 1 thread, 92 at 2); the
   * image's pixels are cut in chunks of whole pixel blocks for it (28 x 28
   * with 6-pixel blocks: 27 chunks of 5 blocks, the last, with the image's
   * tail, after the parallel loop), and the results stay right on 2
   * threads */
  t = task_of("conv2d", "C=16,H=28,W=28,K=16,R=1,S=1", NULL, NULL, NULL, "bias", "conv2d_NCHWc.x86");
  if (t) {
    ob_config got[6], cfgs[6];
    int n = configs_with(t, "pixels", 1, 5, 97, got), m = 0;
    for (int j = 0; j < n; j++) {
      int64_t ow[2];
      ob_config_split(&got[j], "tile_ow", ow);
      /* wider blocks leave fewer than 17 chunks of at least 4 blocks; k_chunk has its own loop */
      if (ow[1] > 12 || ob_config_knob(&got[j], "k_chunk")) continue;
      cfgs[m++] = got[j];
      ob_lowered *low = NULL;
      char *src = NULL;
      CHECK(ob_task_lower(t, &got[j], &low) == OB_OK && ob_codegen_c(ctx, NULL, low, "pixel_chunks", &src) == OB_OK);
      const char *pf = src ? strstr(src, "parallel_for(rt->pool, ") : NULL;
      long long tasks = pf ? strtoll(pf + strlen("parallel_for(rt->pool, "), NULL, 10) : 0;
      CHECK_MSG(tasks >= 16, "pixels over K=16, tile_ow %lld: %lld parallel tasks", (long long)ow[1], tasks);
      free(src);
      ob_lowered_free(low);
    }
    CHECK_MSG(m >= 2, "pixels over K=16: %d configs with small pixel blocks", m);
    expect_correct_on(t, cfgs, m, "pixels over K=16, chunks, 2 threads", 2);
    ob_task_free(t);
  }
  /* a 1x1 window at stride 2 reads every other input row: 128x28 -> 256
   * reads 200 of its 400 KB, which a 512 KB L2 holds, so no rows outside
   * and, with 16 registers, blocks over pixels (14 columns: a tail a row) */
  t = task_of("conv2d", "C=128,H=28,W=28,K=256,R=1,S=1", "2", NULL, NULL, NULL, "conv2d_NCHWc.x86");
  if (t) {
    ob_config d = ob_task_default_config(t);
    const ob_target_facts *f = ob_target_get_facts(ob_task_target(t));
    if (f->l2_bytes >= 512 * 1024) {
      CHECK_MSG(!ob_config_knob(&d, "rows_outer"), "128x28 -> 256 1x1/2: rows outside with a %lld KB L2",
                (long long)(f->l2_bytes / 1024));
      CHECK_MSG(ob_config_knob(&d, "pixels") == (f->vector_registers <= 16), "128x28 -> 256 1x1/2: pixels %lld",
                (long long)ob_config_knob(&d, "pixels"));
    }
    ob_task_free(t);
  }
}

/* conv2d_NCHWc's gathered input (knob compact): two values for a 1x1
 * window at a stride without padding, one otherwise; configs with it give
 * the reference's results (over pixels or rows, rows outside or not,
 * epilogues, a padded last channel block, two images); its default where
 * rows stay inside, and over pixels with 16 registers even where the
 * weights outgrow the L2 (ResNet-50's 1024x14 -> 2048 1x1/2). */
static void test_compact(void) {
  static const knob_row c[] = {
      {"C=32,H=14,W=14,K=48,R=1,S=1", NULL, "2", "bias,add", 2},
      {"N=2,C=16,H=9,W=11,K=23,R=1,S=1", NULL, "2", "relu", 2},
      {"C=24,H=12,W=12,K=16,R=1,S=1", NULL, "3", NULL, 2},
      {"C=16,H=14,W=14,K=16,R=1,S=1", NULL, NULL, NULL, 1},
      {"C=16,H=14,W=14,K=16,R=1,S=1", "1", "2", NULL, 1},
      {"C=16,H=14,W=14,K=16,R=3,S=3", NULL, "2", NULL, 1},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[128];
    ob_task *t = knob_case("compact", &c[i], what, sizeof what);
    if (!t) continue;
    if (c[i].values == 2) {
      ob_config cfgs[7];
      int n = configs_with(t, "compact", 1, 5, 131 + i, cfgs);
      CHECK_MSG(n >= 4, "%s: too few configs with compact (%d)", what, n);
      /* over pixels and over rows both among them */
      cfgs[n] = cfgs[0];
      ob_config_set_knob(&cfgs[n], "pixels", !ob_config_knob(&cfgs[0], "pixels"));
      ob_config_set_knob(&cfgs[n], "rows_outer", 0);
      ob_config_set_split(&cfgs[n], "tile_oh", (int64_t[]){1}, 1);
      if (ob_space_is_valid(ob_task_space(t), cfgs[n].index)) n++;
      expect_correct(t, cfgs, n, what);
      ob_config d = ob_task_default_config(t);
      CHECK_MSG(ob_config_knob(&d, "compact") == !ob_config_knob(&d, "rows_outer"), "%s: compact default %lld",
                what, (long long)ob_config_knob(&d, "compact"));
    }
    ob_task_free(t);
  }
  ob_task *t = task_of("conv2d", "C=1024,H=14,W=14,K=2048,R=1,S=1", "2", NULL, NULL, NULL, "conv2d_NCHWc.x86");
  if (t) {
    ob_config d = ob_task_default_config(t);
    bool sixteen = ob_target_get_facts(ob_task_target(t))->vector_registers <= 16;
    CHECK_MSG(ob_config_knob(&d, "compact") && !ob_config_knob(&d, "rows_outer") &&
                  ob_config_knob(&d, "pixels") == sixteen,
              "1024x14 -> 2048 1x1/2: compact %lld rows_outer %lld pixels %lld", (long long)ob_config_knob(&d, "compact"),
              (long long)ob_config_knob(&d, "rows_outer"), (long long)ob_config_knob(&d, "pixels"));
    ob_task_free(t);
  }
}

/* conv2d_NCHWc's input channels in chunks (knob k_chunk): offered for 1x1
 * windows without padding, each chunk a power of two from 64 that divides
 * C and is less; only over pixels; configs with it give the reference's
 * results (a pixel tail, a padded last channel block, two images, stride 2
 * gathered or not, epilogues with a residual, groups of blocks and one
 * block per task); the default chunks a stride-1 layer whose input and a
 * block's weights overflow the L2 (ResNet-50's 2048x7 -> 512) with 16
 * registers, and not one whose input stays there (128x28 -> 512). */
static void test_k_chunk(void) {
  static const knob_row c[] = {
      {"C=256,H=7,W=7,K=64,R=1,S=1", NULL, NULL, "bias,add", 3},
      {"N=2,C=128,H=5,W=9,K=40,R=1,S=1", NULL, NULL, "relu", 2},
      {"C=192,H=14,W=14,K=32,R=1,S=1", NULL, "2", "bias,relu", 2},
      {"C=1024,H=3,W=3,K=16,R=1,S=1", NULL, NULL, NULL, 5},
      {"C=96,H=7,W=7,K=16,R=1,S=1", NULL, NULL, NULL, 1},
      {"C=128,H=7,W=7,K=16,R=1,S=1", "1", NULL, NULL, 1},
      {"C=128,H=7,W=7,K=16,R=3,S=3", NULL, NULL, NULL, 1},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[128];
    ob_task *t = knob_case("k_chunk", &c[i], what, sizeof what);
    if (!t) continue;
    if (c[i].values > 1) {
      ob_config cfgs[6];
      int n = configs_with(t, "k_chunk", 64, 4, 171 + i, cfgs);
      CHECK_MSG(n >= 3, "%s: too few configs with chunks (%d)", what, n);
      for (int j = 0; j < n; j++)
        CHECK_MSG(ob_config_knob(&cfgs[j], "pixels") && !ob_config_knob(&cfgs[j], "stationary"),
                  "%s: the filter let chunks in without pixels", what);
      if (c[i].values > 2 && n < 6) { /* the largest chunk too */
        cfgs[n] = cfgs[0];
        ob_config_set_knob(&cfgs[n], "k_chunk", 64LL << (c[i].values - 2));
        if (ob_space_is_valid(ob_task_space(t), cfgs[n].index)) n++;
      }
      expect_correct(t, cfgs, n, what);
    }
    ob_task_free(t);
  }
  static const struct {
    const char *shape;
    bool chunked; /* with 16 registers, a 512 KB L2 and a 32 KB L1 */
    int64_t kc;
  } d[] = {
      {"C=2048,H=7,W=7,K=512,R=1,S=1", true, 256},
      {"C=1024,H=14,W=14,K=256,R=1,S=1", true, 128},
      {"C=256,H=56,W=56,K=64,R=1,S=1", true, 64},
      {"C=128,H=28,W=28,K=512,R=1,S=1", false, 0},
      {"C=512,H=7,W=7,K=2048,R=1,S=1", false, 0},
  };
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
    ob_task *t = task_of("conv2d", d[i].shape, NULL, NULL, NULL, NULL, "conv2d_NCHWc.x86");
    if (!t) continue;
    const ob_target_facts *f = ob_target_get_facts(ob_task_target(t));
    ob_config dc = ob_task_default_config(t);
    int64_t kc = ob_config_knob(&dc, "k_chunk");
    if (f->vector_registers > 16) {
      CHECK_MSG(kc == 0, "%s: k_chunk %lld by default with 32 registers", d[i].shape, (long long)kc);
    } else if (f->l2_bytes == 512 * 1024 && f->l1d_bytes == 32 * 1024) {
      CHECK_MSG(kc == d[i].kc, "%s: default k_chunk %lld, %lld expected", d[i].shape, (long long)kc,
                (long long)d[i].kc);
      CHECK_MSG(!kc || ob_config_knob(&dc, "pixels"), "%s: chunks without pixels", d[i].shape);
    } else {
      CHECK_MSG(!kc || d[i].chunked, "%s: k_chunk %lld by default", d[i].shape, (long long)kc);
    }
    ob_task_free(t);
  }
}

/* conv2d_NCHWc's register tile over several output-channel blocks (knob
 * oc_group): four values everywhere; the filter keeps whole groups (of the
 * blocks of one convolution group), within the registers, and out of the
 * orders that own one block per thread or task (stationary, k_chunk);
 * configs with groups of 2, 3 and 4 give the reference's results (rows and
 * pixels, rows outside, a 3x3 window with padding and stride, groups of
 * channels, a padded last block, two images, epilogues with a residual), and
 * their kernels are scheduled for register pressure; the default with 16
 * registers on a 1x1 layer to 24 channels is three 8-channel blocks by 4. */
static void test_oc_group(void) {
  static const struct {
    knob_row r;
    int64_t grp;
  } c[] = {
      {{"C=144,H=14,W=14,K=24,R=1,S=1", NULL, NULL, "bias,add", 4}, 3},
      {{"N=2,C=16,H=9,W=11,K=48,R=3,S=3", "1", "2", "relu", 4}, 2},
      {{"C=16,H=9,W=11,K=48,R=3,S=3", "1", NULL, "bias,relu", 4}, 3},
      {{"C=24,H=7,W=7,K=32,R=1,S=1", NULL, NULL, "add", 4}, 4},
      {{"C=8,H=6,W=10,K=40,R=1,S=1", NULL, NULL, NULL, 4}, 2}, /* padded: 8-lane blocks divide 40, 16 do not */
      {{"C=32,H=8,W=8,K=48,R=3,S=3,groups=2", "1", NULL, "bias", 4}, 3},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[128];
    ob_task *t = knob_case("oc_group", &c[i].r, what, sizeof what);
    if (!t) continue;
    ob_config cfgs[6];
    int n = configs_with(t, "oc_group", c[i].grp, 4, 211 + i, cfgs);
    CHECK_MSG(n >= 3, "%s: too few configs with oc_group %lld (%d)", what, (long long)c[i].grp, n);
    for (int j = 0; j < n; j++) {
      int64_t oc[2], ow[2], oh[2];
      ob_config_split(&cfgs[j], "tile_oc", oc);
      ob_config_split(&cfgs[j], "tile_ow", ow);
      ob_config_split(&cfgs[j], "tile_oh", oh);
      int64_t vec = (oc[1] + 7) / 8 * c[i].grp;
      CHECK_MSG(oc[0] % c[i].grp == 0 && !ob_config_knob(&cfgs[j], "stationary") &&
                    !ob_config_knob(&cfgs[j], "k_chunk") && ow[1] * oh[1] * vec <= 32,
                "%s: the filter let a bad group in", what);
    }
    expect_correct(t, cfgs, n, what);
    ob_lowered *f = NULL;
    CHECK_MSG(ob_task_lower(t, &cfgs[0], &f) == OB_OK && f->pressure_sched, "%s: not scheduled for pressure", what);
    ob_lowered_free(f);
    ob_task_free(t);
  }
  ob_task *t = task_of("conv2d", "C=144,H=56,W=56,K=24,R=1,S=1", NULL, NULL, NULL, NULL, "conv2d_NCHWc.x86");
  if (t) {
    ob_config d = ob_task_default_config(t);
    const ob_target_facts *f = ob_target_get_facts(ob_task_target(t));
    int64_t oc[2];
    ob_config_split(&d, "tile_oc", oc);
    if (f->vector_registers <= 16 && f->lanes_f32 == 8)
      CHECK_MSG(ob_config_knob(&d, "oc_group") == 3 && oc[1] == 8, "144x56 -> 24: oc_group %lld of %lld channels",
                (long long)ob_config_knob(&d, "oc_group"), (long long)oc[1]);
    ob_lowered *lw = NULL;
    CHECK_MSG(ob_task_lower(t, &d, &lw) == OB_OK && lw->pressure_sched == (ob_config_knob(&d, "oc_group") > 1),
              "144x56 -> 24: pressure scheduling follows the group");
    ob_lowered_free(lw);
    /* the filter: a group that does not divide the blocks */
    ob_config bad = d;
    ob_config_set_split(&bad, "tile_oc", (int64_t[]){8}, 1);
    ob_config_set_knob(&bad, "oc_group", 2);
    CHECK_MSG(!ob_space_is_valid(ob_task_space(t), bad.index), "144x56 -> 24: a group of 2 of 3 blocks");
    ob_task_free(t);
  }
}

/* conv2d_NCHWc with one input channel per block and the window's columns
 * not unrolled (the stems' plain layout): the column loop stays a loop in
 * the C (ob_sched_no_unroll), and such configs give the reference's
 * results (3x3/2 and 7x7/2 with padding, an epilogue, two images). */
static void test_stem_loop(void) {
  static const char *const shapes[] = {"C=3,H=33,W=31,K=32,R=3,S=3", "N=2,C=3,H=30,W=30,K=16,R=7,S=7"};
  static const char *const pads[] = {"1", "3"};
  for (int i = 0; i < 2; i++) {
    ob_task *t = task_of("conv2d", shapes[i], "2", pads[i], NULL, "bias,relu", "conv2d_NCHWc.x86");
    if (!t) continue;
    ob_config cfgs[5];
    int n = configs_fixed(t, &(cfg_fix){.knob = "unroll_kw", .v = 0, .split = "tile_ic", .f = 1}, 4, 301 + (uint64_t)i,
                          cfgs);
    CHECK_MSG(n >= 3, "%s: too few configs of one channel per block (%d)", shapes[i], n);
    ob_lowered *f = NULL;
    CHECK_MSG(n && ob_task_lower(t, &cfgs[0], &f) == OB_OK, "%s: %s", shapes[i], ob_ctx_errmsg(ctx));
    char *nest = f ? ob_lowered_str(f) : NULL;
    CHECK_MSG(nest && strstr(nest, "for (kept a loop) rx"), "%s: the window's columns not kept a loop:\n%s", shapes[i],
              nest ? nest : "(null)");
    free(nest);
    ob_lowered_free(f);
    expect_correct(t, cfgs, n, shapes[i]);
    ob_task_free(t);
  }
}

/* The untuned template of conv2d (ob_op_untuned_template): Winograd for
 * 3x3 windows at stride 1 with 16 channels or more in and out and 8x8
 * outputs or more; the default template (NULL) for strides, dilation,
 * groups, other windows, an image's 3 channels, 7x7 outputs; NULL for
 * operators without a pick. */
static void test_untuned_template(void) {
  ob_target *tg = NULL;
  CHECK(ob_target_parse(ctx, "llvm -mcpu=native", &tg) == OB_OK);
  if (!tg) return;
  static const struct {
    const char *op, *shape, *stride, *pad, *dil;
    bool wino;
  } c[] = {
      {"conv2d", "C=64,H=56,W=56,K=64,R=3,S=3", NULL, "1", NULL, true},
      {"conv2d", "C=16,H=8,W=8,K=16,R=3,S=3", NULL, "1", NULL, true},
      {"conv2d", "C=32,H=147,W=147,K=64,R=3,S=3", NULL, NULL, NULL, true},
      {"conv2d", "C=512,H=7,W=7,K=512,R=3,S=3", NULL, "1", NULL, false},
      {"conv2d", "C=64,H=56,W=56,K=128,R=3,S=3", "2", "1", NULL, false},
      {"conv2d", "C=64,H=56,W=56,K=64,R=3,S=3", NULL, "2", "2", false},
      {"conv2d", "C=3,H=56,W=56,K=64,R=3,S=3", NULL, "1", NULL, false},
      {"conv2d", "C=64,H=56,W=56,K=64,R=1,S=1", NULL, NULL, NULL, false},
      {"conv2d", "C=64,H=56,W=56,K=64,R=5,S=5", NULL, "2", NULL, false},
      {"conv2d", "C=64,H=56,W=56,K=64,R=3,S=3,groups=2", NULL, "1", NULL, false},
      {"dense", "M=1,N=1000,K=512", NULL, NULL, NULL, false},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    ob_workload wl;
    ob_status st = workload_of(c[i].op, c[i].shape, c[i].stride, c[i].pad, c[i].dil, NULL, &wl);
    CHECK_MSG(st == OB_OK, "untuned %s: %s", c[i].shape, ob_ctx_errmsg(ctx));
    if (st) continue;
    const char *u = ob_op_untuned_template(&wl, tg);
    CHECK_MSG(c[i].wino ? u && !strcmp(u, "conv2d_winograd.x86") : !u, "untuned %s %s stride %s: %s", c[i].op,
              c[i].shape, c[i].stride ? c[i].stride : "1", u ? u : "(default)");
    if (u) { /* a template of the workload, which builds */
      ob_task *t = NULL;
      CHECK_MSG(ob_task_new(ctx, &wl, u, tg, &t) == OB_OK, "untuned %s: %s", c[i].shape, ob_ctx_errmsg(ctx));
      ob_task_free(t);
    }
  }
  ob_target_free(tg);
}

/* ---- Winograd ------------------------------------------------------------------- */
static void check_winograd(const char *shape, const char *pad, const char *epi, int64_t m, int64_t order,
                           int extra) {
  ob_task *t = task_of("conv2d", shape, NULL, pad, NULL, epi, "conv2d_winograd.x86");
  if (!t) return;
  char what[256];
  snprintf(what, sizeof what, "winograd F(%lldx%lld,3x3) order %lld %s pad %s", (long long)m, (long long)m,
           (long long)order, shape, pad);
  ob_config cfgs[8];
  int n = configs_with(t, "tile_m", m, extra, 101 + strlen(what) + (uint64_t)order, cfgs);
  for (int i = 0; i < n; i++) {
    ob_config_set_knob(&cfgs[i], "order", order);
    ob_config_set_knob(&cfgs[i], "own", 0); /* the order's own schedule */
    ob_config_set_knob(&cfgs[i], "parts", 2);
  }
  CHECK_MSG(n >= 1, "%s: no config", what);
  ob_tolerance tol = ob_task_tolerance(t, &cfgs[0]), want = ob_winograd_tolerance((int)m);
  CHECK_MSG(tol.rtol == want.rtol && tol.atol == want.atol, "%s: checked at %g/%g, stated %g/%g", what, tol.rtol,
            tol.atol, want.rtol, want.atol);
  expect_correct(t, cfgs, n, what);
  ob_task_free(t);
}

static void test_winograd(void) {
  /* tiles that overhang: 7 = 2*4 - 1 = 4*2 - 1 = 6*2 - 5; 11 x 9; 5 x 13 */
  for (int64_t m = 2; m <= 6; m += 2)
    for (int64_t order = 0; order <= 2; order++) {
      check_winograd("C=16,H=7,W=7,K=32,R=3,S=3", "1", NULL, m, order, m == 6 ? 0 : 1);
      if (m < 6) check_winograd("N=2,C=8,H=11,W=9,K=16,R=3,S=3", "1", "bias,relu", m, order, 1);
    }
  check_winograd("C=16,H=5,W=13,K=16,R=3,S=3", "0,2,1,1", "add", 2, 1, 1);
  check_winograd("C=16,H=5,W=13,K=16,R=3,S=3", "2,0,2,3", NULL, 4, 0, 1);
  check_winograd("C=24,H=10,W=10,K=24,R=3,S=3", "0", "bias", 6, 0, 0);
  check_winograd("C=24,H=10,W=10,K=24,R=3,S=3", "0", NULL, 6, 2, 0);
  /* order 2 blocks the image's tiles row after row: blocks that straddle
   * rows and a last block cut short (20 tiles, 4 rows of 5, in blocks of 3
   * or 6), and a reduction cut into chunks (C = 256 x 32 channels of
   * weights outgrow half the L1: two chunks of 128; with AVX2's 16-channel
   * blocks, C = 512) */
  for (int64_t tp = 3; tp <= 6; tp += 3) {
    ob_target *host = NULL;
    CHECK(ob_target_host(ctx, &host) == OB_OK);
    int64_t ocb = host ? 2 * ob_target_get_facts(host)->lanes_f32 : 32;
    ob_target_free(host);
    char shape[64];
    snprintf(shape, sizeof shape, "C=%lld,H=7,W=9,K=32,R=3,S=3", (long long)(256 * 32 / ocb));
    ob_task *t = task_of("conv2d", shape, NULL, "1", NULL, "bias", "conv2d_winograd.x86");
    if (!t) continue;
    ob_config c = ob_task_default_config(t);
    ob_config_set_knob(&c, "tile_m", 2);
    ob_config_set_knob(&c, "order", 2);
    ob_config_set_knob(&c, "tile_x", tp);
    ob_config_set_knob(&c, "tile_oc", ocb);
    CHECK_MSG(ob_space_is_valid(ob_task_space(t), c.index), "winograd order 2 tile_x %lld: not in the space",
              (long long)tp);
    expect_correct(t, &c, 1, tp == 3 ? "winograd order 2, blocks of 3 tiles" : "winograd order 2, blocks of 6 tiles");
    ob_task_free(t);
  }
  /* each part end to end ("own"): parts of the channel blocks (K = 48 in
   * blocks of 16: 3 blocks in parts of 2 and 1, or 1 each; K = 32: 2
   * blocks, 4 parts asked, 2 made), every tile size on the
   * first, batch 2 (parts of both images), tiles that overhang, the
   * reduction in chunks (C = 256) */
  static const struct {
    const char *shape, *epi;
  } own_shapes[] = {
      {"C=16,H=7,W=7,K=48,R=3,S=3", NULL},
      {"N=2,C=8,H=11,W=9,K=48,R=3,S=3", "bias,relu"},
      {"C=256,H=7,W=9,K=32,R=3,S=3", "add"},
  };
  for (size_t i = 0; i < sizeof own_shapes / sizeof own_shapes[0]; i++) {
    ob_task *t = task_of("conv2d", own_shapes[i].shape, NULL, "1", NULL, own_shapes[i].epi, "conv2d_winograd.x86");
    if (!t) continue;
    ob_config cfgs[8];
    int n = 0;
    for (int64_t m = 2; m <= 6; m += 2)
      for (int64_t parts = 2; parts <= 4; parts += 2) {
        if (i > 0 && m != (i == 1 ? 4 : 2)) continue; /* every tile size on the first */
        ob_config c = ob_task_default_config(t);
        ob_config_set_knob(&c, "tile_m", m);
        ob_config_set_knob(&c, "order", 2);
        ob_config_set_knob(&c, "own", 1);
        ob_config_set_knob(&c, "parts", parts);
        ob_config_set_knob(&c, "tile_oc", 16);
        ob_config_set_knob(&c, "tile_x", 5); /* a last block cut short */
        CHECK_MSG(ob_space_is_valid(ob_task_space(t), c.index), "winograd own parts %lld F(%lld): not in the space",
                  (long long)parts, (long long)m);
        /* "own" takes order 2's GEMM: other orders are not configs */
        ob_config o = c;
        ob_config_set_knob(&o, "order", 1);
        CHECK(!ob_space_is_valid(ob_task_space(t), o.index));
        cfgs[n++] = c;
      }
    char what[128];
    snprintf(what, sizeof what, "winograd own parts %s", own_shapes[i].shape);
    expect_correct(t, cfgs, n, what);
    ob_task_free(t);
  }
  /* no Winograd for what it does not compute */
  ob_workload wl;
  ob_task *t = NULL;
  CHECK(ob_workload_parse(ctx, "conv2d", "C=16,H=9,W=9,K=16,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "stride", 2) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, "conv2d_winograd.x86", NULL, &t) == OB_ERR_UNSUPPORTED);
  CHECK(t == NULL && strstr(ob_ctx_errmsg(ctx), "3x3 windows at stride 1"));
  ob_ctx_clear_error(ctx);
  /* the tolerance grows with the tile; F(6x6)'s keeps the error within 1e-3
   * of the largest output for reductions up to 10^4 (sqrt 100 x 1e-5) */
  CHECK(ob_winograd_tolerance(2).atol < ob_winograd_tolerance(4).atol);
  CHECK(ob_winograd_tolerance(4).atol < ob_winograd_tolerance(6).atol);
  CHECK(ob_winograd_tolerance(6).atol * 100 <= 1e-3);
}

/* Every "#pragma GCC unroll N" line of src followed by a loop that holds
 * no other loop: the next line opens a for, and no for opens before that
 * loop's braces close (a vectorized loop with lanes under a guard keeps a
 * scalar loop for them: the shapes below have none). Returns how many, -1
 * if one is not. */
static int innermost_pragmas(const char *src, const char *pragma) {
  int n = 0;
  for (const char *p = strstr(src, pragma); p; p = strstr(p + 1, pragma)) {
    const char *l = strchr(p, '\n');
    if (!l) return -1;
    l += strspn(l, " \n");
    if (strncmp(l, "for (", 5)) return -1;
    int depth = 0;
    for (const char *q = strchr(l, '{'); q && *q; q++) {
      if (*q == '{') depth++;
      if (*q == '}' && --depth == 0) break;
      if (q > l + 5 && !strncmp(q, "for (", 5)) return -1;
    }
    n++;
  }
  return n;
}

/* The task's knob unroll_inner (ob_sched_unroll_inner), added after each
 * CPU compute template's own knobs: values 0, 4, 8; each template's
 * default; old records' JSON (without it) naming 0; the pragma before the
 * innermost loops alone and in the nest's header; results of 4 and 8 on 1
 * and 2 threads. Templates without reduction loops have no such knob. */
static void test_unroll_inner(void) {
  static const struct {
    const char *op, *shape, *pad, *tmpl;
    int dflt;
  } c[] = {
      {"dense", "M=13,N=40,K=96", NULL, "dense_pack.x86", 8},
      {"dense", "M=3,N=37,K=50", NULL, "dense.x86", 8},
      {"batch_matmul", "B=2,M=7,N=20,K=33", NULL, "batch_matmul_pack.x86", 8},
      {"conv2d", "N=1,C=16,H=10,W=9,K=32,R=3,S=3", "1", "conv2d_NCHWc.x86", 8},
      {"conv2d", "N=1,C=96,H=12,W=12,K=24,R=1,S=1", NULL, "conv2d_NCHWc.x86", 0}, /* oc_group 3: fills the registers */
      {"conv2d", "N=1,C=16,H=10,W=9,K=24,R=3,S=3", "1", "conv2d_winograd.x86", 0},
      {"conv2d", "N=1,C=5,H=10,W=18,K=6,R=3,S=3", NULL, "conv2d_nchw.x86", 0}, /* rows of 16: no lane guards */
      {"depthwise_conv2d", "N=1,C=24,H=11,W=10,R=3,S=3", "1", "depthwise_NCHWc.x86", 8},
      {"depthwise_conv2d", "N=1,C=5,H=11,W=18,R=3,S=3", NULL, "depthwise_nchw.x86", 0},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char what[160];
    snprintf(what, sizeof what, "unroll_inner %s %s %s", c[i].op, c[i].shape, c[i].tmpl);
    ob_task *t = task_of(c[i].op, c[i].shape, NULL, c[i].pad, NULL, NULL, c[i].tmpl);
    if (!t) continue;
    const ob_space *sp = ob_task_space(t);
    int k = ob_space_knob_find(sp, "unroll_inner");
    int64_t v[3] = {-1, -1, -1};
    CHECK_MSG(k == ob_space_num_knobs(sp) - 1 && ob_space_knob_len(sp, k) == 3 && ob_space_entity(sp, k, 0, &v[0], 1) == 1 &&
                  ob_space_entity(sp, k, 1, &v[1], 1) == 1 && ob_space_entity(sp, k, 2, &v[2], 1) == 1 && v[0] == 0 &&
                  v[1] == 4 && v[2] == 8,
              "%s: knob unroll_inner not last or not 0, 4, 8", what);
    ob_config d = ob_task_default_config(t);
    CHECK_MSG(ob_config_knob(&d, "unroll_inner") == c[i].dflt, "%s: default unroll_inner %lld", what,
              (long long)ob_config_knob(&d, "unroll_inner"));
    if (ob_space_knob_find(sp, "oc_group") >= 0)
      CHECK_MSG((ob_config_knob(&d, "oc_group") > 1) == (c[i].dflt == 0), "%s: oc_group %lld", what,
                (long long)ob_config_knob(&d, "oc_group"));
    /* an old record: its JSON without the knob names the config of 0 */
    ob_config o = d, j;
    ob_config_set_knob(&o, "unroll_inner", 0);
    char *js = NULL;
    CHECK(ob_config_to_json(ctx, &o, &js) == OB_OK && js);
    char *u = js ? strstr(js, ", [\"unroll_inner\"") : NULL, *ent = js ? strstr(js, "\"entity\"") : NULL;
    if (u) memmove(u, "]}", 3);
    char old[1024] = "";
    if (ent) snprintf(old, sizeof old, "{%s", ent);
    CHECK_MSG(u && ent && ob_config_from_json(ctx, sp, old, &j) == OB_OK && j.index == o.index,
              "%s: an entity without unroll_inner reads another config (%s)", what, old);
    free(js);
    ob_config cfgs[2] = {d, d};
    ob_config_set_knob(&cfgs[0], "unroll_inner", 4);
    ob_config_set_knob(&cfgs[1], "unroll_inner", 8);
    for (int m = 0; m < 3; m++) { /* 0 (o), 4, 8 */
      const ob_config *cf = m ? &cfgs[m - 1] : &o;
      char *src = NULL, *name = NULL, *nest = NULL;
      ob_lowered *f = NULL;
      CHECK(ob_task_source(t, cf, &src, &name) == OB_OK && ob_task_lower(t, cf, &f) == OB_OK);
      nest = f ? ob_lowered_str(f) : NULL;
      int want = m == 0 ? 0 : m == 1 ? 4 : 8;
      char pragma[40], head[40];
      snprintf(pragma, sizeof pragma, "#pragma GCC unroll %d\n", want);
      snprintf(head, sizeof head, ") unroll_inner %d {", want);
      int n = src && want ? innermost_pragmas(src, pragma) : 0;
      CHECK_MSG(!want || n >= 1, "%s: %d pragmas before innermost loops (-1: one before a loop that holds one)", what, n);
      CHECK_MSG(want || (src && !strstr(src, "#pragma GCC unroll 4\n") && !strstr(src, "#pragma GCC unroll 8\n")),
                "%s: unroll_inner 0 unrolls", what);
      CHECK_MSG(nest && (want ? strstr(nest, head) != NULL : strstr(nest, "unroll_inner") == NULL), "%s: nest header", what);
      free(src);
      free(name);
      free(nest);
      ob_lowered_free(f);
    }
    expect_correct_on(t, cfgs, 2, what, 1);
    expect_correct_on(t, cfgs, 2, what, 2);
    ob_task_free(t);
  }
  /* elementwise kernels keep no reduction loop: no knob */
  ob_task *r = task_of("relu", "N=1,C=16,H=8,W=8", NULL, NULL, NULL, NULL, NULL);
  CHECK(r && ob_space_knob_find(ob_task_space(r), "unroll_inner") < 0);
  ob_task_free(r);
}

int main(void) {
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  CHECK(ob_runner_new(ctx, &runner) == OB_OK);
  if (runner) {
    test_border();
    test_odd_sizes();
    test_weight_prefetch();
    test_rows_outer();
    test_pixels();
    test_compact();
    test_k_chunk();
    test_oc_group();
    test_stem_loop();
    test_untuned_template();
    test_k_block();
    test_m_tail();
    test_unroll_inner();
    test_winograd();
  }
  ob_runner_free(runner);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
