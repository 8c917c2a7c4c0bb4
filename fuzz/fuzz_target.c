/* fuzz_target.c: the target string of --target and $OPBENCH_TARGET through
 * ob_target_parse. An accepted target must print a canonical string that
 * parses back to the same target with the same facts, and its facts must
 * be consistent (lanes x 32 bits = vector width, accumulators within the
 * registers, strings terminated).
 *
 * `llvm -mcpu=<cpu>` asks the compiler what the CPU means (a popen per
 * input): the compilers are pointed at a path that does not exist, so the
 * parser's own checks run and the query fails fast with OB_ERR_COMPILE. */
#include "fuzz.h"

#include "opbench/target.h"

static bool facts_consistent(const ob_target_facts *f) {
  if (f->isa < 0 || f->isa >= OB_ISA_COUNT) return false;
  if (f->lanes_f32 * 32 != f->vector_bits) return false;
  if (f->accum_budget <= 0 || f->accum_budget > f->vector_registers) return false;
  if (f->native && f->emulated) return false;
  const char *s[] = {f->triple, f->arch, f->cc, f->cflags, f->emulator, f->sysroot, f->cpu_features};
  size_t cap[] = {sizeof f->triple,  sizeof f->arch,    sizeof f->cc,          sizeof f->cflags,
                  sizeof f->emulator, sizeof f->sysroot, sizeof f->cpu_features};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
    if (!memchr(s[i], '\0', cap[i])) return false;
  return f->min_repeat_ms >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 512) return 0; /* the parser refuses anything past 255 characters */
  static int env_set;
  if (!env_set) {
    setenv("OPBENCH_CC", "/nonexistent/opbench-fuzz-cc", 1);
    setenv("OPBENCH_AARCH64_CC", "/nonexistent/opbench-fuzz-cc", 1);
    env_set = 1;
  }
  ob_ctx *ctx = ob_fuzz_ctx();
  char *text = ob_fuzz_str(data, size);
  ob_target *t = NULL;
  if (ob_target_parse(ctx, text, &t) == OB_OK) {
    OB_FUZZ_REQUIRE(t);
    const char *canon = ob_target_str(t);
    OB_FUZZ_REQUIRE(canon && *canon && strlen(canon) < 256);
    const ob_target_facts *f = ob_target_get_facts(t);
    OB_FUZZ_REQUIRE(f && facts_consistent(f));
    ob_target *back = NULL;
    OB_FUZZ_REQUIRE(ob_target_parse(ctx, canon, &back) == OB_OK);
    OB_FUZZ_REQUIRE(ob_target_same(t, back));
    OB_FUZZ_REQUIRE(!strcmp(ob_target_str(back), canon));
    const ob_target_facts *g = ob_target_get_facts(back);
    OB_FUZZ_REQUIRE(g->isa == f->isa && g->vector_bits == f->vector_bits &&
                    g->native == f->native && !strcmp(g->triple, f->triple));
    ob_target_free(back);
  } else {
    OB_FUZZ_REQUIRE(!t);
    OB_FUZZ_REQUIRE(*ob_ctx_errmsg(ctx)); /* a refusal says why */
  }
  ob_target_free(t);
  free(text);
  return 0;
}
