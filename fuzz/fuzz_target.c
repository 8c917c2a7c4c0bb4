/* fuzz_target.c: the target string of --target and $OPBENCH_TARGET through
 * ob_target_parse. An accepted target must print a canonical string that
 * parses back to the same target with the same facts, and its facts must
 * be consistent (lanes x 32 bits = vector width, accumulators within the
 * registers, strings terminated).
 *
 * `llvm -mcpu=<cpu>` asks the compiler what the CPU means (a popen per
 * input): the compilers are pointed at a path that does not exist, so the
 * parser's own checks run and the query fails fast with OB_ERR_COMPILE.
 * GPU targets (cuda, opencl) are checked on their launch facts, not the
 * CPU ones (which stay the host's for their host code). */
#include "fuzz.h"

#include "opbench/target.h"

/* A GPU target's facts: launch limits a kernel can be checked against
 * (from the device, or cuda's sm table without one; an opencl target
 * whose device is not here has none), the names terminated. */
static bool gpu_facts_consistent(const ob_target_facts *f) {
  const ob_gpu_facts *g = &f->gpu;
  if (!memchr(g->device_name, '\0', sizeof g->device_name) ||
      !memchr(g->platform_name, '\0', sizeof g->platform_name))
    return false;
  if (g->device < 0 || g->platform < 0 || g->warp_size < 0 || g->compute_units < 0) return false;
  if ((f->kind == OB_TARGET_CUDA) != (g->sm > 0)) return false;
  if (f->kind == OB_TARGET_OPENCL && !g->present) return true;
  if (g->max_threads_per_block <= 0 || g->max_shared_per_block < 0) return false;
  for (int d = 0; d < 3; d++)
    if (g->max_block_dim[d] <= 0 || g->max_grid_dim[d] <= 0) return false;
  return f->min_repeat_ms >= 0;
}

static bool facts_consistent(const ob_target_facts *f) {
  if (f->kind == OB_TARGET_CUDA || f->kind == OB_TARGET_OPENCL) return gpu_facts_consistent(f);
  if (f->kind != OB_TARGET_CPU) return false;
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
    /* an opencl target asks the ICD loader in a forked probe: with no
     * platform listed, PoCL is not started for every input */
    setenv("OCL_ICD_VENDORS", "/nonexistent/opbench-fuzz-vendors", 1);
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
    OB_FUZZ_REQUIRE(g->kind == f->kind && g->isa == f->isa && g->vector_bits == f->vector_bits &&
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
