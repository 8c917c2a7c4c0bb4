/* test_target.c: target strings and their facts: canonical forms, the ISA
 * and triple tables, the host default and $OPBENCH_TARGET, every bad input
 * (one message naming the target and what is wrong or missing), the checks
 * of what is needed to build and run, and what the facts do to templates
 * and generated code: AVX2 spaces keep register blocks within 14 ymm
 * accumulators, AVX2 code has no 512-bit vectors and every operator's
 * default (and a sample of configs) builds, runs and verifies with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opbench/codegen.h"
#include "opbench/ops.h"
#include "opbench/target.h"
#include "ops_util.h"

static ob_ctx *ctx;
static ob_host host;

static bool host_has(const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = host.isa; (p = strstr(p, flag)) != NULL; p++)
    if ((p == host.isa || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ')) return true;
  return false;
}

static bool x86_host(void) { return strstr(host.os, "x86_64") != NULL; }

/* Parses text and checks its canonical string; returns the target or NULL. */
static ob_target *parse_as(const char *text, const char *canonical) {
  ob_target *t = NULL;
  ob_status st = ob_target_parse(ctx, text, &t);
  CHECK_MSG(st == OB_OK && t, "'%s': %s", text, ob_ctx_errmsg(ctx));
  if (st) return NULL;
  CHECK_MSG(!strcmp(ob_target_str(t), canonical), "'%s' -> '%s', want '%s'", text, ob_target_str(t),
            canonical);
  return t;
}

/* text must be refused with `want`, the message naming text and `what`. */
static void refused(const char *text, ob_status want, const char *what) {
  ob_target *t = NULL;
  ob_ctx_clear_error(ctx);
  ob_status st = ob_target_parse(ctx, text, &t);
  const char *m = ob_ctx_errmsg(ctx);
  CHECK_MSG(st == want && !t, "'%s': status %d (%s), want %d", text, st, m, want);
  CHECK_MSG(strstr(m, what) != NULL, "'%s': message '%s' does not name '%s'", text, m, what);
  if (text[strspn(text, " ")]) CHECK_MSG(strstr(m, text) != NULL, "'%s': message '%s' does not name the target", text, m);
  ob_target_free(t);
}

static void test_canonical(void) {
  ob_target *a = parse_as("llvm", "llvm -mcpu=native");
  ob_target *b = parse_as("  llvm   -mcpu=native ", "llvm -mcpu=native");
  if (a && b) {
    CHECK(ob_target_same(a, b));
    const ob_target_facts *f = ob_target_get_facts(a);
    CHECK(f->native && !f->emulated && !f->triple[0]);
    CHECK(f->lanes_f32 * 32 == f->vector_bits);
    CHECK(f->accum_budget > 0 && f->accum_budget < f->vector_registers);
    /* the host's caches and cores, as hwloc sees them */
    CHECK(f->l1d_bytes == host.l1d_bytes && f->l2_bytes == host.l2_bytes &&
          f->l3_bytes == host.l3_bytes && f->ncores == host.ncores);
    CHECK(f->min_repeat_ms > 0);
    CHECK(strstr(f->cflags, "-fPIC") && strstr(f->cflags, "-shared"));
    /* the host's best ISA */
    if (host_has("avx512f")) {
      CHECK(f->isa == OB_ISA_AVX512 && f->lanes_f32 == 16 && f->vector_registers == 32);
      /* the flags kernels were always built with: cached kernels stay valid */
      CHECK(!strcmp(f->cflags, "-O3 -march=native -mprefer-vector-width=512 -fPIC -shared"));
    } else if (host_has("avx2") && host_has("fma")) {
      CHECK(f->isa == OB_ISA_AVX2);
    }
  }
  ob_target_free(a);
  ob_target_free(b);
  if (!x86_host()) {
    CHECK_SKIP("x86-64 targets on a %s host", host.os);
    return;
  }

  ob_target *c = parse_as("c -isa=avx2", "c -isa=avx2");
  if (c) {
    const ob_target_facts *f = ob_target_get_facts(c);
    CHECK(f->isa == OB_ISA_AVX2 && f->vector_bits == 256 && f->lanes_f32 == 8);
    CHECK(f->vector_registers == 16 && f->accum_budget == 14);
    CHECK(!strcmp(ob_isa_name(f->isa), "avx2"));
    CHECK(!strcmp(f->arch, "x86_64"));
    if (host_has("avx2") && host_has("fma")) {
      CHECK(f->native);
      CHECK(strstr(f->cflags, "-mno-avx512f") && strstr(f->cflags, "-mprefer-vector-width=256"));
    }
  }
  ob_target *c2 = parse_as("c -isa=avx2 -triple=x86_64-linux-gnu", "c -isa=avx2"); /* the host's own */
  if (c && c2) CHECK(ob_target_same(c, c2));
  ob_target_free(c);
  ob_target_free(c2);

  ob_target *d = parse_as("c -isa=avx512", "c -isa=avx512");
  if (d) {
    const ob_target_facts *f = ob_target_get_facts(d);
    CHECK(f->lanes_f32 == 16 && f->vector_registers == 32 && f->accum_budget == 28);
    CHECK(f->native == host_has("avx512f"));
  }
  ob_target_free(d);

  ob_target *s = parse_as("c -isa=scalar", "c -isa=scalar");
  if (s) CHECK(ob_target_get_facts(s)->native && !strstr(ob_target_get_facts(s)->cflags, "-march"));
  ob_target_free(s);

  /* "c" alone names the host's best ISA */
  ob_target *hb = NULL, *cc = NULL;
  CHECK(ob_target_parse(ctx, "llvm", &hb) == OB_OK);
  CHECK(ob_target_parse(ctx, "c", &cc) == OB_OK);
  if (hb && cc) {
    char want[64];
    snprintf(want, sizeof want, "c -isa=%s", ob_isa_name(ob_target_get_facts(hb)->isa));
    CHECK_MSG(!strcmp(ob_target_str(cc), want), "%s", ob_target_str(cc));
    CHECK(!ob_target_same(hb, cc)); /* different strings: records stay apart */
  }
  ob_target_free(hb);
  ob_target_free(cc);

  /* the cross target: parses without any tool */
  ob_target *n1 = parse_as("c -isa=neon -triple=aarch64-linux-gnu", "c -isa=neon -triple=aarch64-linux-gnu");
  ob_target *n2 = parse_as("c -triple=aarch64-linux-gnu", "c -isa=neon -triple=aarch64-linux-gnu");
  ob_target *n3 = parse_as("c -triple=aarch64-linux-gnu -isa=neon", "c -isa=neon -triple=aarch64-linux-gnu");
  if (n1) {
    const ob_target_facts *f = ob_target_get_facts(n1);
    CHECK(f->isa == OB_ISA_NEON && f->lanes_f32 == 4 && f->vector_registers == 32 && f->vector_bits == 128);
    CHECK(!f->native && f->emulated);
    CHECK(!strcmp(f->triple, "aarch64-linux-gnu") && !strcmp(f->arch, "aarch64"));
    CHECK(!strcmp(f->cc, "aarch64-linux-gnu-gcc"));
    CHECK(!strcmp(f->sysroot, "/usr/aarch64-linux-gnu"));
    CHECK(!strcmp(f->emulator, "qemu-aarch64 -L /usr/aarch64-linux-gnu"));
    CHECK(!strstr(f->cflags, "native")); /* nothing of this host's CPU */
    CHECK(f->l1d_bytes > 0 && f->ncores > 0);
  }
  if (n1 && n2 && n3) CHECK(ob_target_same(n1, n2) && ob_target_same(n1, n3));
  ob_target_free(n1);
  ob_target_free(n2);
  ob_target_free(n3);
  ob_target *n4 = parse_as("llvm -mtriple=aarch64-linux-gnu", "llvm -mtriple=aarch64-linux-gnu");
  if (n4) CHECK(ob_target_get_facts(n4)->isa == OB_ISA_NEON && ob_target_get_facts(n4)->emulated);
  ob_target_free(n4);
}

/* llvm -mcpu=<cpu>: the ISA comes from what the compiler enables for it. */
static void test_mcpu(void) {
  if (!x86_host()) {
    CHECK_SKIP("x86-64 targets on a %s host", host.os);
    return;
  }
  ob_target *h = parse_as("llvm -mcpu=haswell", "llvm -mcpu=haswell");
  if (h) {
    const ob_target_facts *f = ob_target_get_facts(h);
    CHECK(f->isa == OB_ISA_AVX2 && f->lanes_f32 == 8);
    CHECK(strstr(f->cflags, "-march=haswell") && strstr(f->cflags, "-mprefer-vector-width=256"));
    CHECK(strstr(f->cpu_features, "avx2") && strstr(f->cpu_features, "fma"));
    CHECK(!strstr(f->cpu_features, "avx512f"));
    CHECK(f->native == (host_has("avx2") && host_has("fma") && host_has("f16c")));
  }
  ob_target_free(h);
  ob_target *s = parse_as("llvm -mcpu=skylake-avx512", "llvm -mcpu=skylake-avx512");
  if (s) {
    const ob_target_facts *f = ob_target_get_facts(s);
    CHECK(f->isa == OB_ISA_AVX512 && f->lanes_f32 == 16);
    CHECK(strstr(f->cpu_features, "avx512f") && strstr(f->cpu_features, "avx512bw"));
    if (!f->native) {
      /* names what this CPU lacks */
      CHECK(ob_target_check_runnable(ctx, s) == OB_ERR_UNSUPPORTED);
      CHECK(strstr(ob_ctx_errmsg(ctx), "lacks") && strstr(ob_ctx_errmsg(ctx), "skylake-avx512"));
    }
  }
  ob_target_free(s);
  refused("llvm -mcpu=nosuchcpu9", OB_ERR_INVALID_ARG, "unknown CPU 'nosuchcpu9'");
  refused("llvm -mcpu=a;b", OB_ERR_INVALID_ARG, "malformed CPU name");
  /* the compiler that would say what the CPU is: missing */
  setenv("OPBENCH_CC", "/nonexistent/opbench-cc", 1);
  refused("llvm -mcpu=haswell", OB_ERR_COMPILE, "/nonexistent/opbench-cc");
  unsetenv("OPBENCH_CC");
}

static void test_bad_input(void) {
  refused("", OB_ERR_INVALID_ARG, "empty target");
  refused("   ", OB_ERR_INVALID_ARG, "empty target");
  refused("tvm", OB_ERR_INVALID_ARG, "unknown target kind 'tvm'");
  refused("c -isa=sse9", OB_ERR_INVALID_ARG, "unknown ISA 'sse9'");
  refused("c -isa=avx2 -triple=riscv64-linux-gnu", OB_ERR_INVALID_ARG, "unknown triple 'riscv64-linux-gnu'");
  refused("c -isa=avx2 -isa=avx512", OB_ERR_INVALID_ARG, "given twice");
  refused("c -vendor=intel", OB_ERR_INVALID_ARG, "unknown option '-vendor'");
  refused("llvm -isa=avx2", OB_ERR_INVALID_ARG, "unknown option '-isa'");
  refused("c isa=avx2", OB_ERR_INVALID_ARG, "malformed option 'isa=avx2'");
  refused("c -isa=", OB_ERR_INVALID_ARG, "malformed option");
  refused("c -isa", OB_ERR_INVALID_ARG, "malformed option");
  refused("c --isa=avx2", OB_ERR_INVALID_ARG, "malformed option");
  if (x86_host()) {
    refused("c -isa=neon", OB_ERR_INVALID_ARG, "-triple=aarch64-linux-gnu");
    refused("c -isa=avx2 -triple=aarch64-linux-gnu", OB_ERR_INVALID_ARG, "not for triple aarch64-linux-gnu");
    refused("llvm -mcpu=native -mtriple=aarch64-linux-gnu", OB_ERR_INVALID_ARG, "-mcpu=native");
  }
  char longer[400];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  ob_target *t = NULL;
  CHECK(ob_target_parse(ctx, longer, &t) == OB_ERR_INVALID_ARG && !t);
  CHECK(strstr(ob_ctx_errmsg(ctx), "longer than"));
  ob_target_free(NULL); /* accepted */
}

static void test_host_default(void) {
  ob_target *t = NULL;
  unsetenv("OPBENCH_TARGET");
  CHECK(ob_target_host(ctx, &t) == OB_OK && t && !strcmp(ob_target_str(t), "llvm -mcpu=native"));
  ob_target_free(t);
  t = NULL;
  setenv("OPBENCH_TARGET", "", 1); /* empty: not set */
  CHECK(ob_target_host(ctx, &t) == OB_OK && t && !strcmp(ob_target_str(t), "llvm -mcpu=native"));
  ob_target_free(t);
  t = NULL;
  setenv("OPBENCH_TARGET", "c -isa=scalar", 1);
  CHECK(ob_target_host(ctx, &t) == OB_OK && t && !strcmp(ob_target_str(t), "c -isa=scalar"));
  ob_target_free(t);
  t = NULL;
  setenv("OPBENCH_TARGET", "c -isa=bogus", 1);
  CHECK(ob_target_host(ctx, &t) == OB_ERR_INVALID_ARG && !t);
  CHECK(strstr(ob_ctx_errmsg(ctx), "$OPBENCH_TARGET") && strstr(ob_ctx_errmsg(ctx), "bogus"));
  /* a task made with the default target follows it too */
  ob_workload wl;
  ob_task *task = NULL;
  CHECK(ob_workload_parse(ctx, "dense", "M=2,N=16,K=8", &wl) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &task) == OB_ERR_INVALID_ARG && !task);
  setenv("OPBENCH_TARGET", "c -isa=scalar", 1);
  CHECK(ob_task_new(ctx, &wl, NULL, NULL, &task) == OB_OK && task);
  if (task) CHECK(!strcmp(ob_target_str(ob_task_target(task)), "c -isa=scalar"));
  ob_task_free(task);
  unsetenv("OPBENCH_TARGET");
}

/* What is missing to build or run, simulated through the overrides. */
static void test_checks(void) {
  ob_target *t = NULL;
  CHECK(ob_target_host(ctx, &t) == OB_OK);
  if (t) {
    CHECK(ob_target_check_runnable(ctx, t) == OB_OK);
    CHECK_MSG(ob_target_check_buildable(ctx, t) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  }
  ob_target_free(t);
  if (!x86_host()) {
    CHECK_SKIP("x86-64 targets on a %s host", host.os);
    return;
  }
  t = NULL;
  CHECK(ob_target_parse(ctx, "c -isa=avx512", &t) == OB_OK);
  if (t && !host_has("avx512f")) {
    CHECK(ob_target_check_runnable(ctx, t) == OB_ERR_UNSUPPORTED);
    CHECK(strstr(ob_ctx_errmsg(ctx), "avx512f") && strstr(ob_ctx_errmsg(ctx), "c -isa=avx512"));
  } else if (t) {
    CHECK(ob_target_check_runnable(ctx, t) == OB_OK);
  }
  ob_target_free(t);

  const char *neon = "c -isa=neon -triple=aarch64-linux-gnu";
  struct {
    const char *var, *value;
    bool run; /* the run check fails (else the build check) */
    ob_status want;
    const char *what;
  } cases[] = {
      {"OPBENCH_AARCH64_CC", "/nonexistent/aarch64-gcc", false, OB_ERR_COMPILE, "/nonexistent/aarch64-gcc"},
      {"OPBENCH_AARCH64_SYSROOT", "/nonexistent/sysroot", false, OB_ERR_UNSUPPORTED, "libc6-dev-arm64-cross"},
      {"OPBENCH_AARCH64_QEMU", "/nonexistent/qemu", true, OB_ERR_UNSUPPORTED, "/nonexistent/qemu"},
      {"OPBENCH_AARCH64_SYSROOT", "/nonexistent/sysroot", true, OB_ERR_UNSUPPORTED, "ld-linux-aarch64.so.1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv(cases[i].var, cases[i].value, 1);
    t = NULL;
    CHECK(ob_target_parse(ctx, neon, &t) == OB_OK); /* parsing needs none of them */
    if (t) {
      ob_ctx_clear_error(ctx);
      ob_status st = cases[i].run ? ob_target_check_runnable(ctx, t) : ob_target_check_buildable(ctx, t);
      const char *m = ob_ctx_errmsg(ctx);
      CHECK_MSG(st == cases[i].want, "%s=%s: status %d (%s)", cases[i].var, cases[i].value, st, m);
      CHECK_MSG(strstr(m, cases[i].what) && strstr(m, neon), "%s=%s: '%s'", cases[i].var, cases[i].value, m);
    }
    ob_target_free(t);
    unsetenv(cases[i].var);
  }
  /* with the cross tools installed (scripts/install-deps.sh) both pass */
  t = NULL;
  CHECK(ob_target_parse(ctx, neon, &t) == OB_OK);
  if (t) {
    ob_status b = ob_target_check_buildable(ctx, t), r = ob_target_check_runnable(ctx, t);
    if (b || r) CHECK_SKIP("%s cannot be built or run here: %s", neon, ob_ctx_errmsg(ctx));
    else CHECK(b == OB_OK && r == OB_OK);
  }
  ob_target_free(t);
}

/* The facts shape the spaces: AVX2's register blocks stay within 14 ymm
 * accumulators and leave room for their weights and a broadcast, its channel
 * blocks are 4/8/16 lanes, and a config index means a config only with its
 * target. */
static void test_spaces(void) {
  if (!x86_host()) {
    CHECK_SKIP("x86-64 targets on a %s host", host.os);
    return;
  }
  ob_target *avx2 = NULL, *avx512 = NULL;
  CHECK(ob_target_parse(ctx, "c -isa=avx2", &avx2) == OB_OK);
  CHECK(ob_target_parse(ctx, "c -isa=avx512", &avx512) == OB_OK);
  if (!avx2 || !avx512) goto done;
  ob_workload wl;
  CHECK(ob_workload_parse(ctx, "conv2d", "C=64,H=56,W=56,K=64,R=3,S=3", &wl) == OB_OK);
  CHECK(ob_workload_set(ctx, &wl, "pad", 1) == OB_OK);
  ob_task *a = NULL, *b = NULL;
  CHECK(ob_task_new(ctx, &wl, "conv2d_NCHWc.x86", avx2, &a) == OB_OK);
  CHECK(ob_task_new(ctx, &wl, "conv2d_NCHWc.x86", avx512, &b) == OB_OK);
  if (a && b) {
    const ob_space *sa = ob_task_space(a), *sb = ob_task_space(b);
    int ka = -1, kb = -1;
    for (int k = 0; k < ob_space_num_knobs(sa); k++)
      if (!strcmp(ob_space_knob_name(sa, k), "tile_oc")) ka = k;
    for (int k = 0; k < ob_space_num_knobs(sb); k++)
      if (!strcmp(ob_space_knob_name(sb, k), "tile_oc")) kb = k;
    CHECK(ka >= 0 && kb >= 0);
    if (ka >= 0 && kb >= 0) {
      int64_t v[2];
      CHECK(ob_space_knob_len(sa, ka) == 3 && ob_space_knob_len(sb, kb) == 3);
      ob_space_entity(sa, ka, 0, v, 2);
      CHECK(v[1] == 4);
      ob_space_entity(sa, ka, 2, v, 2);
      CHECK(v[1] == 16);
      ob_space_entity(sb, kb, 0, v, 2);
      CHECK(v[1] == 8);
      ob_space_entity(sb, kb, 2, v, 2);
      CHECK(v[1] == 32);
    }
    /* every valid AVX2 config fits the budget; the default is valid */
    ob_config d = ob_task_default_config(a);
    CHECK(ob_space_is_valid(sa, d.index));
    int valid = 0, over = 0;
    for (uint64_t i = 0; i < ob_space_len(sa); i++) {
      ob_config c;
      if (ob_space_get(ctx, sa, i, &c) != OB_OK) continue;
      valid++;
      int64_t oc[2], oh[2], ow[2];
      ob_config_split(&c, "tile_oc", oc);
      ob_config_split(&c, "tile_oh", oh);
      ob_config_split(&c, "tile_ow", ow);
      int64_t v = (oc[1] + 7) / 8, acc = ow[1] * oh[1] * v;
      if (acc > 14 || acc + v + 1 > 16) over++; /* accumulators, weights, a broadcast */
    }
    ob_ctx_clear_error(ctx);
    CHECK(valid > 0 && over == 0);
    /* 7 columns of 2 ymm would spill: 14 accumulators + 2 weights + 1 broadcast */
    ob_config c;
    CHECK(ob_config_from_json(ctx, sa,
                              "{\"entity\": [[\"tile_ic\",\"sp\",[-1,8]],[\"tile_oc\",\"sp\",[-1,16]],"
                              "[\"tile_ow\",\"sp\",[-1,7]],[\"tile_oh\",\"sp\",[-1,1]],"
                              "[\"unroll_kw\",\"ot\",0],[\"reduce_order\",\"ot\",0],[\"pad_inline\",\"ot\",0]]}",
                              &c) == OB_ERR_OUT_OF_SPACE);
    /* ... 14 columns of one ymm fit, and the default is 6 columns of 2 ymm
     * (a width 6 does not divide: an entity added to the space) */
    CHECK(ob_config_from_json(ctx, sa,
                              "{\"entity\": [[\"tile_ic\",\"sp\",[-1,8]],[\"tile_oc\",\"sp\",[-1,8]],"
                              "[\"tile_ow\",\"sp\",[-1,14]],[\"tile_oh\",\"sp\",[-1,1]],"
                              "[\"unroll_kw\",\"ot\",0],[\"reduce_order\",\"ot\",0],[\"pad_inline\",\"ot\",2]]}",
                              &c) == OB_OK);
    CHECK(ob_config_from_json(ctx, sa,
                              "{\"entity\": [[\"tile_ic\",\"sp\",[-1,8]],[\"tile_oc\",\"sp\",[-1,16]],"
                              "[\"tile_ow\",\"sp\",[-1,6]],[\"tile_oh\",\"sp\",[-1,1]],"
                              "[\"unroll_kw\",\"ot\",0],[\"reduce_order\",\"ot\",0],[\"pad_inline\",\"ot\",2]]}",
                              &c) == OB_OK);
    ob_config_set_knob(&c, "rows_outer", ob_config_knob(&d, "rows_outer")); /* the host's L2 decides */
    ob_config_set_knob(&c, "unroll_inner", ob_config_knob(&d, "unroll_inner")); /* added after the entity */
    CHECK(c.index == d.index);
    CHECK(ob_space_len(sa) != ob_space_len(sb) || ob_task_default_config(b).index != d.index);
  }
  ob_task_free(a);
  ob_task_free(b);
done:
  ob_target_free(avx2);
  ob_target_free(avx512);
}

/* No vector wider than the target's registers in its code; the default
 * target's code still has AVX-512 vectors (on an AVX-512 host). */
static void test_codegen(void) {
  if (!x86_host()) {
    CHECK_SKIP("x86-64 targets on a %s host", host.os);
    return;
  }
  static const struct {
    const char *op, *shape;
  } k[] = {
      {"conv2d", "C=32,H=14,W=14,K=64,R=3,S=3"},
      {"depthwise_conv2d", "C=64,H=14,W=14,R=3,S=3"},
      {"dense", "M=4,N=64,K=64"},
      {"batch_matmul", "B=2,M=8,N=64,K=32"},
      {"softmax", "M=4,N=256"},
      {"relu", "C=8,H=16,W=16"},
  };
  ob_target *avx2 = NULL, *avx512 = NULL;
  CHECK(ob_target_parse(ctx, "c -isa=avx2", &avx2) == OB_OK);
  CHECK(ob_target_parse(ctx, "c -isa=avx512", &avx512) == OB_OK);
  for (size_t i = 0; avx2 && avx512 && i < sizeof k / sizeof k[0]; i++) {
    ob_workload wl;
    CHECK(ob_workload_parse(ctx, k[i].op, k[i].shape, &wl) == OB_OK);
    const char *names[8];
    int nt = ob_op_templates(k[i].op, names, 8);
    for (int j = 0; j < nt; j++) {
      for (int w = 0; w < 2; w++) {
        ob_task *t = NULL;
        CHECK(ob_task_new(ctx, &wl, names[j], w ? avx512 : avx2, &t) == OB_OK);
        if (!t) continue;
        ob_config c = ob_task_default_config(t);
        char *src = NULL, *name = NULL;
        CHECK_MSG(ob_task_source(t, &c, &src, &name) == OB_OK, "%s", ob_ctx_errmsg(ctx));
        if (src && !w) CHECK_MSG(!strstr(src, "vector_size(64)"), "%s %s: a 512-bit vector in AVX2 code", k[i].op, names[j]);
        if (src && w && !strcmp(names[j], "conv2d_NCHWc.x86"))
          CHECK(strstr(src, "vector_size(64)") != NULL);
        free(src);
        free(name);
        ob_task_free(t);
      }
    }
  }
  ob_target_free(avx2);
  ob_target_free(avx512);
}

/* AVX2 (and scalar) kernels of every operator family build, run and match
 * the reference: the default config and a few sampled ones. */
static void test_run(const char *target_text, int samples) {
  if (!x86_host()) {
    CHECK_SKIP("x86-64 targets on a %s host", host.os);
    return;
  }
  ob_target *t = NULL;
  CHECK(ob_target_parse(ctx, target_text, &t) == OB_OK);
  if (!t) return;
  if (ob_target_check_runnable(ctx, t) != OB_OK) {
    CHECK_SKIP("%s does not run here: %s", target_text, ob_ctx_errmsg(ctx));
    ob_target_free(t);
    return;
  }
  static const struct {
    const char *op, *shape;
    int64_t stride, pad;
  } k[] = {
      {"conv2d", "C=16,H=9,W=11,K=24,R=3,S=3", 1, 1},
      {"conv2d", "C=17,H=10,W=10,K=23,R=5,S=3", 2, 1}, /* odd channels */
      {"depthwise_conv2d", "C=24,H=9,W=9,R=3,S=3", 1, 1},
      {"dense", "M=5,N=40,K=24", 0, 0},
      {"dense", "M=3,N=17,K=13", 0, 0},
      {"batch_matmul", "B=2,M=7,N=24,K=16", 0, 0},
      {"pool2d", "C=5,H=11,W=13,R=3,S=3", 0, 0},
      {"global_avg_pool", "C=7,H=9,W=9", 0, 0},
      {"softmax", "M=3,N=37", 0, 0},
      {"layer_norm", "M=3,N=40", 0, 0},
      {"batch_norm", "C=3,H=9,W=11", 0, 0},
      {"concat", "C1=3,C2=5,H=7,W=9", 0, 0},
      {"to_nchwc", "C=16,H=5,W=9,cb=8", 0, 0},
      {"relu", "C=3,H=7,W=19", 0, 0},
  };
  ob_runner *runner = NULL;
  CHECK(ob_runner_new(ctx, &runner) == OB_OK);
  for (size_t i = 0; runner && i < sizeof k / sizeof k[0]; i++) {
    ob_workload wl;
    ob_status st = ob_workload_parse(ctx, k[i].op, k[i].shape, &wl);
    if (!st && k[i].stride) st = ob_workload_set(ctx, &wl, "stride", k[i].stride);
    if (!st && k[i].pad) st = ob_workload_set(ctx, &wl, "pad", k[i].pad);
    CHECK_MSG(st == OB_OK, "%s %s: %s", k[i].op, k[i].shape, ob_ctx_errmsg(ctx));
    if (!st) ops_check_all_templates(ctx, runner, t, &wl, samples, 7 + i);
  }
  ob_runner_free(runner);
  ob_target_free(t);
}

/* The GPU target strings: canonical forms, facts (read from the device
 * where one exists, else the architecture table), bad options, and the
 * build and run checks. This machine may have a GPU or not: the parts
 * that need one (or its absence) say so and are counted as skips. */
static void test_gpu_targets(void) {
  ob_target *a = NULL;
  ob_status st = ob_target_parse(ctx, "cuda -arch=sm_80", &a);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (a) {
    const ob_target_facts *f = ob_target_get_facts(a);
    CHECK(f->kind == OB_TARGET_CUDA && ob_target_is_gpu(a));
    CHECK(!strcmp(ob_target_str(a), "cuda -arch=sm_80"));
    CHECK(f->gpu.sm == 80);
    CHECK(f->gpu.max_threads_per_block >= 512 && f->gpu.max_block_dim[0] >= 512);
    CHECK(f->gpu.max_shared_per_block >= 16384 && f->gpu.warp_size == 32);
    CHECK(f->gpu.compute_units > 0 && f->gpu.max_grid_dim[0] > 0);
    CHECK(!f->emulated);
    ob_ctx_clear_error(ctx);
    st = ob_target_check_runnable(ctx, a);
    if (f->gpu.present) {
      CHECK_MSG(st == OB_OK || strstr(ob_ctx_errmsg(ctx), "older than"), "%s", ob_ctx_errmsg(ctx));
    } else {
      /* no device: built only, and the message says so */
      CHECK(!f->native);
      CHECK(st == OB_ERR_UNSUPPORTED && strstr(ob_ctx_errmsg(ctx), "no GPU") &&
            strstr(ob_ctx_errmsg(ctx), "--build-only") && strstr(ob_ctx_errmsg(ctx), "cuda -arch=sm_80"));
      /* without a device the facts are the table's for sm_80 (A100) */
      CHECK(f->gpu.compute_units == 108 && f->gpu.max_threads_per_block == 1024 &&
            f->gpu.max_shared_per_block == 48 << 10);
    }
    ob_ctx_clear_error(ctx);
    st = ob_target_check_buildable(ctx, a);
    if (st) CHECK_SKIP("NVRTC is not installed: %s", ob_ctx_errmsg(ctx));
  }
  ob_target_free(a);
  /* the canonical form names the architecture; -device only when not 0 */
  ob_target *b = NULL;
  if (ob_target_parse(ctx, "cuda", &b) == OB_OK) {
    const ob_target_facts *f = ob_target_get_facts(b);
    char want[64];
    snprintf(want, sizeof want, "cuda -arch=sm_%d", f->gpu.sm);
    CHECK_MSG(!strcmp(ob_target_str(b), want), "cuda -> %s", ob_target_str(b));
    if (!f->gpu.present) CHECK(f->gpu.sm == 80);
  } else {
    CHECK_MSG(false, "cuda: %s", ob_ctx_errmsg(ctx));
  }
  ob_target_free(b);
  b = parse_as("cuda -device=0 -arch=sm_90", "cuda -arch=sm_90");
  if (b) CHECK(ob_target_get_facts(b)->gpu.sm == 90 && ob_target_get_facts(b)->gpu.max_block_dim[2] >= 64);
  ob_target_free(b);
  b = parse_as("cuda -arch=sm_75 -device=3", "cuda -arch=sm_75 -device=3");
  if (b) {
    CHECK(ob_target_get_facts(b)->gpu.device == 3);
    ob_ctx_clear_error(ctx);
    if (!ob_target_get_facts(b)->gpu.present)
      CHECK(ob_target_check_runnable(ctx, b) == OB_ERR_UNSUPPORTED);
  }
  ob_target_free(b);

  /* OpenCL: PoCL here (its facts from the device), or no platform */
  ob_target *o = NULL;
  st = ob_target_parse(ctx, "opencl", &o);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  if (o) {
    const ob_target_facts *f = ob_target_get_facts(o);
    CHECK(f->kind == OB_TARGET_OPENCL && !strcmp(ob_target_str(o), "opencl"));
    if (f->gpu.present) {
      CHECK(f->gpu.max_threads_per_block >= 1 && f->gpu.max_shared_per_block > 0);
      CHECK(f->gpu.compute_units >= 1 && f->gpu.device_name[0] && f->gpu.platform_name[0]);
      CHECK(f->native);
      ob_ctx_clear_error(ctx);
      CHECK(ob_target_check_runnable(ctx, o) == OB_OK && ob_target_check_buildable(ctx, o) == OB_OK);
      if (strstr(f->gpu.platform_name, "Portable Computing Language")) CHECK(f->gpu.cpu_device);
    } else {
      CHECK_SKIP("no OpenCL platform here");
    }
  }
  ob_target_free(o);
  o = parse_as("opencl -device=0", "opencl");
  ob_target_free(o);
  o = parse_as("opencl -device=7", "opencl -device=7");
  if (o) {
    /* a device that is not there: parsed, neither built nor run, and named */
    ob_ctx_clear_error(ctx);
    CHECK(!ob_target_get_facts(o)->gpu.present);
    CHECK(ob_target_check_runnable(ctx, o) == OB_ERR_UNSUPPORTED && strstr(ob_ctx_errmsg(ctx), "device 7"));
    ob_ctx_clear_error(ctx);
    CHECK(ob_target_check_buildable(ctx, o) == OB_ERR_UNSUPPORTED);
  }
  ob_target_free(o);
  o = parse_as("opencl -platform=0 -device=1", "opencl -device=1");
  ob_target_free(o);

  refused("cuda -arch=80", OB_ERR_INVALID_ARG, "malformed -arch=80");
  refused("cuda -arch=sm_", OB_ERR_INVALID_ARG, "malformed -arch=sm_");
  refused("cuda -arch=sm_8x", OB_ERR_INVALID_ARG, "expected sm_XY");
  refused("cuda -arch=sm_80 -arch=sm_90", OB_ERR_INVALID_ARG, "given twice");
  refused("cuda -isa=avx2", OB_ERR_INVALID_ARG, "unknown option '-isa' for cuda");
  refused("cuda -platform=0", OB_ERR_INVALID_ARG, "unknown option '-platform' for cuda");
  refused("opencl -arch=sm_80", OB_ERR_INVALID_ARG, "unknown option '-arch' for opencl");
  refused("opencl -device=x", OB_ERR_INVALID_ARG, "-device=x is not a device number");
  refused("opencl -device=-1", OB_ERR_INVALID_ARG, "not a device number");
  refused("opencl -device", OB_ERR_INVALID_ARG, "malformed option");
  refused("cuda -device=1 -device=2", OB_ERR_INVALID_ARG, "given twice");
  if (ob_target_parse(ctx, "cuda -arch=sm_80", &a) == OB_OK && ob_target_check_buildable(ctx, a) == OB_OK)
    refused("cuda -arch=sm_12", OB_ERR_INVALID_ARG, "NVRTC does not compile for -arch=sm_12");
  ob_target_free(a);

  /* a missing OpenCL platform (an empty vendors folder): the target parses
   * with no device and both checks name what is missing. The ICD loader
   * reads $OCL_ICD_VENDORS in the probing child, so this process can. */
  char dir[] = "/tmp/opbench-novendors-XXXXXX";
  if (mkdtemp(dir)) {
    setenv("OCL_ICD_VENDORS", dir, 1);
    o = parse_as("opencl", "opencl");
    if (o) {
      ob_ctx_clear_error(ctx);
      CHECK(!ob_target_get_facts(o)->gpu.present && !ob_target_get_facts(o)->native);
      CHECK(ob_target_check_runnable(ctx, o) == OB_ERR_UNSUPPORTED);
      CHECK_MSG(strstr(ob_ctx_errmsg(ctx), "no OpenCL platform") && strstr(ob_ctx_errmsg(ctx), dir),
                "%s", ob_ctx_errmsg(ctx));
    }
    ob_target_free(o);
    unsetenv("OCL_ICD_VENDORS");
    rmdir(dir);
  }
}

int main(void) {
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  CHECK(ob_host_detect(ctx, &host) == OB_OK);
  test_canonical();
  test_mcpu();
  test_bad_input();
  test_gpu_targets();
  test_host_default();
  test_checks();
  test_spaces();
  test_codegen();
  test_run("c -isa=avx2", 4);
  test_run("c -isa=scalar", 2);
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
