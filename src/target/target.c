/* target.c: target strings and the facts kernels depend on. Two tables hold
 * the facts (one row per ISA, one per cross triple); parsing picks rows and
 * fills an ob_target_facts from them, the host description (hwloc, read
 * once per process like a CPU-feature table) and the environment overrides.
 * The checks say what is missing to build or run a target's kernels here. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target/target_impl.h"

/* ---- the tables ------------------------------------------------------------ */

typedef struct isa_row {
  const char *name;
  const char *arch;           /* the architecture it belongs to; NULL: any */
  int vector_bits, lanes_f32, vector_registers;
  int reserved;               /* registers kept for the hot loop's operands: the
                                 accumulator budget is vector_registers - reserved */
  const char *cpu_features;   /* /proc/cpuinfo flags the kernels need */
  const char *native_flags;   /* on a host that has the features */
  const char *portable_flags; /* built elsewhere: a host without them, or cross */
} isa_row;

/* -march=native keeps the host's tuning; -mprefer-vector-width=512 because
 * GCC tunes some CPUs (znver*) for 256-bit vectors and would split the
 * kernels' 64-byte vector-extension types into ymm halves.
 * AVX2 on an AVX-512 host switches AVX-512 off entirely (-mno-avx512f takes
 * every AVX-512 extension with it).
 * Reserved registers: AVX-512 and NEON keep 4 of 32 (a broadcast, weight
 * vectors, addresses and tails); AVX2 keeps 2 of its 16 (a broadcast and a
 * weight vector; FMA takes further weights as memory operands), since a
 * 14-column block of one ymm each measured 1.1x-2.5x faster than 12- or
 * 7-column blocks on ResNet-18's layers; SSE (scalar) keeps 4. */
static const isa_row k_isas[OB_ISA_COUNT] = {
    [OB_ISA_SCALAR] = {"scalar", NULL, 128, 4, 16, 4, "", "-O3 -fPIC -shared", "-O3 -fPIC -shared"},
    [OB_ISA_AVX2] = {"avx2", "x86_64", 256, 8, 16, 2, "avx2 fma",
                     "-O3 -march=native -mno-avx512f -mprefer-vector-width=256 -fPIC -shared",
                     "-O3 -march=x86-64-v3 -mprefer-vector-width=256 -fPIC -shared"},
    [OB_ISA_AVX512] = {"avx512", "x86_64", 512, 16, 32, 4, "avx512f",
                       "-O3 -march=native -mprefer-vector-width=512 -fPIC -shared",
                       "-O3 -march=x86-64-v4 -mprefer-vector-width=512 -fPIC -shared"},
    [OB_ISA_NEON] = {"neon", "aarch64", 128, 4, 32, 4, "asimd", "-O3 -mcpu=native -fPIC -shared",
                     "-O3 -march=armv8-a -fPIC -shared"},
};

typedef struct triple_row {
  const char *triple, *arch;
  ob_isa isa;                  /* when the string names none */
  const char *cc, *cc_env, *cc_pkg;
  const char *qemu, *qemu_env, *qemu_pkg;
  const char *sysroot, *sysroot_env, *libc_pkg;
  const char *loader;          /* the dynamic loader, under sysroot */
  /* what a cross target is assumed to have (no hwloc over there): a
   * Neoverse-N1-class core for aarch64, a Skylake-class one for x86_64 */
  int64_t l1d_bytes, l2_bytes, l3_bytes;
  int ncores;
} triple_row;

static const triple_row k_triples[] = {
    {"aarch64-linux-gnu", "aarch64", OB_ISA_NEON, "aarch64-linux-gnu-gcc", "OPBENCH_AARCH64_CC",
     "gcc-aarch64-linux-gnu", "qemu-aarch64", "OPBENCH_AARCH64_QEMU", "qemu-user",
     "/usr/aarch64-linux-gnu", "OPBENCH_AARCH64_SYSROOT", "libc6-dev-arm64-cross",
     "lib/ld-linux-aarch64.so.1", 64 << 10, 1 << 20, 8 << 20, 4},
    {"x86_64-linux-gnu", "x86_64", OB_ISA_AVX2, "x86_64-linux-gnu-gcc", "OPBENCH_X86_64_CC",
     "gcc-x86-64-linux-gnu", "qemu-x86_64", "OPBENCH_X86_64_QEMU", "qemu-user",
     "/usr/x86_64-linux-gnu", "OPBENCH_X86_64_SYSROOT", "libc6-dev-amd64-cross",
     "lib64/ld-linux-x86-64.so.2", 32 << 10, 1 << 20, 8 << 20, 4},
};
enum { OB_NTRIPLES = (int)(sizeof k_triples / sizeof k_triples[0]) };

/* Compiler macros that name CPU features (for `llvm -mcpu=<cpu>`), mapped to
 * the /proc/cpuinfo names ob_host records. */
static const struct {
  const char *macro, *flag;
} k_macros[] = {
    {"__SSE4_2__", "sse4_2"},        {"__AVX__", "avx"},
    {"__AVX2__", "avx2"},            {"__FMA__", "fma"},
    {"__F16C__", "f16c"},            {"__AVX512F__", "avx512f"},
    {"__AVX512CD__", "avx512cd"},    {"__AVX512BW__", "avx512bw"},
    {"__AVX512DQ__", "avx512dq"},    {"__AVX512VL__", "avx512vl"},
    {"__AVX512IFMA__", "avx512ifma"}, {"__AVX512VBMI__", "avx512vbmi"},
    {"__AVX512VNNI__", "avx512_vnni"}, {"__AVX512BF16__", "avx512_bf16"},
    {"__AVX512FP16__", "avx512_fp16"}, {"__AVXVNNI__", "avx_vnni"},
    {"__AMX_TILE__", "amx_tile"},    {"__AMX_INT8__", "amx_int8"},
    {"__AMX_BF16__", "amx_bf16"},    {"__ARM_NEON", "asimd"},
    {"__ARM_FEATURE_DOTPROD", "asimddp"}, {"__ARM_FEATURE_MATMUL_INT8", "i8mm"},
    {"__ARM_FEATURE_SVE", "sve"},    {"__ARM_FEATURE_SVE2", "sve2"},
};

/* ---- the host, read once ------------------------------------------------------- */

typedef struct host_info {
  ob_host h;
  char arch[16];
  ob_isa best;
} host_info;

static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;
static host_info g_host; /* written once under g_host_once, read-only after */

static bool has_token(const char *list, const char *tok, size_t n) {
  for (const char *p = list; (p = strstr(p, tok)) != NULL; p++) {
    bool starts = p == list || p[-1] == ' ';
    bool ends = p[n] == '\0' || p[n] == ' ';
    if (starts && ends && strncmp(p, tok, n) == 0) return true;
  }
  return false;
}

/* Appends to missing[] the tokens of `need` that `have` lacks; true if none. */
static bool features_missing(const char *have, const char *need, char *missing, size_t cap) {
  if (missing && cap) missing[0] = '\0';
  bool all = true;
  for (const char *p = need; *p;) {
    while (*p == ' ') p++;
    size_t n = strcspn(p, " ");
    if (!n) break;
    char tok[64];
    snprintf(tok, sizeof tok, "%.*s", (int)n, p);
    if (!has_token(have, tok, strlen(tok))) {
      all = false;
      if (missing && cap) {
        size_t len = strlen(missing);
        snprintf(missing + len, cap - len, "%s%s", len ? " " : "", tok);
      }
    }
    p += n;
  }
  return all;
}

static void host_init(void) {
  host_info *hi = &g_host;
  (void)ob_host_detect(NULL, &hi->h); /* never fails; missing facts stay 0 */
  struct utsname u;
  const char *m = uname(&u) == 0 ? u.machine : "unknown";
  if (!strcmp(m, "arm64")) m = "aarch64";
  if (!strcmp(m, "amd64")) m = "x86_64";
  snprintf(hi->arch, sizeof hi->arch, "%.15s", m);
  hi->best = OB_ISA_SCALAR;
  for (int i = OB_ISA_COUNT - 1; i > OB_ISA_SCALAR; i--) {
    const isa_row *r = &k_isas[i];
    if (r->arch && strcmp(r->arch, hi->arch)) continue;
    if (features_missing(hi->h.isa, r->cpu_features, NULL, 0)) {
      hi->best = (ob_isa)i;
      break;
    }
  }
}

static const host_info *host_get(void) {
  pthread_once(&g_host_once, host_init);
  return &g_host;
}

/* ---- helpers --------------------------------------------------------------------- */

const char *ob_isa_name(ob_isa isa) {
  return isa >= 0 && isa < OB_ISA_COUNT ? k_isas[isa].name : "unknown";
}

/* True if the command's first word is an executable: a path, or a name
 * found in $PATH. */
static bool tool_found(const char *cmd) {
  char name[256];
  size_t n = strcspn(cmd, " \t");
  if (!n || n >= sizeof name) return false;
  memcpy(name, cmd, n);
  name[n] = '\0';
  if (strchr(name, '/')) return access(name, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path) return false;
  for (const char *p = path;;) {
    size_t len = strcspn(p, ":");
    char full[1024];
    int w = snprintf(full, sizeof full, "%.*s/%s", (int)len, len ? p : ".", name);
    struct stat sb;
    if (w > 0 && (size_t)w < sizeof full && stat(full, &sb) == 0 && S_ISREG(sb.st_mode) &&
        access(full, X_OK) == 0)
      return true;
    if (!p[len]) break;
    p += len + 1;
  }
  return false;
}

static bool path_exists(const char *dir, const char *rel) {
  char full[512];
  int w = snprintf(full, sizeof full, "%s/%s", dir, rel);
  struct stat sb;
  return w > 0 && (size_t)w < sizeof full && stat(full, &sb) == 0;
}

/* Letters, digits and "._+-": safe on a shell command line unquoted. */
static bool plain_word(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("._+-/", *s)) return false;
  return true;
}

static const isa_row *find_isa(const char *name, ob_isa *out) {
  for (int i = 0; i < OB_ISA_COUNT; i++)
    if (!strcmp(k_isas[i].name, name)) {
      *out = (ob_isa)i;
      return &k_isas[i];
    }
  return NULL;
}

static const triple_row *find_triple(const char *name) {
  for (int i = 0; i < OB_NTRIPLES; i++)
    if (!strcmp(k_triples[i].triple, name)) return &k_triples[i];
  return NULL;
}

static const char *env_or(const char *var, const char *dflt) {
  const char *v = var ? getenv(var) : NULL;
  return v && *v ? v : dflt;
}

/* Asks the compiler which features -march/-mcpu=<cpu> enables: its ISA and
 * the features as cpuinfo names. */
static ob_status query_cpu(ob_ctx *ctx, const char *text, const char *cc, const char *arch,
                           const char *cpu, ob_isa *isa, char *features, size_t cap) {
  if (!plain_word(cpu))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': malformed CPU name '%s'", text, cpu);
  if (!plain_word(cc) || !tool_found(cc))
    return ob_fail(ctx, OB_ERR_COMPILE,
                   "target '%s': the compiler '%s' that would say what -mcpu=%s means is not "
                   "installed",
                   text, cc, cpu);
  bool x86 = !strcmp(arch, "x86_64");
  char cmd[640];
  snprintf(cmd, sizeof cmd, "%s %s=%s -dM -E -x c /dev/null 2>/dev/null", cc,
           x86 ? "-march" : "-mcpu", cpu);
  FILE *p = popen(cmd, "r");
  if (!p)
    return ob_fail(ctx, OB_ERR_SYSTEM, "target '%s': cannot run '%s'", text, cc);
  features[0] = '\0';
  bool avx512 = false, avx2 = false, fma = false, neon = false;
  char line[512];
  while (fgets(line, sizeof line, p)) {
    char name[128];
    if (sscanf(line, "#define %127s", name) != 1) continue;
    for (size_t i = 0; i < sizeof k_macros / sizeof k_macros[0]; i++) {
      if (strcmp(name, k_macros[i].macro)) continue;
      size_t len = strlen(features);
      snprintf(features + len, cap - len, "%s%s", len ? " " : "", k_macros[i].flag);
    }
    avx512 |= !strcmp(name, "__AVX512F__");
    avx2 |= !strcmp(name, "__AVX2__");
    fma |= !strcmp(name, "__FMA__");
    neon |= !strcmp(name, "__ARM_NEON");
  }
  int status = pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "target '%s': unknown CPU '%s' (%s does not accept %s=%s)", text, cpu, cc,
                   x86 ? "-march" : "-mcpu", cpu);
  *isa = x86 ? (avx512 ? OB_ISA_AVX512 : avx2 && fma ? OB_ISA_AVX2 : OB_ISA_SCALAR)
             : (neon ? OB_ISA_NEON : OB_ISA_SCALAR);
  return OB_OK;
}

/* ---- parsing ----------------------------------------------------------------------- */

typedef struct opt {
  const char *name; /* without the dash */
  const char *value;
} opt;

static const char *opt_get(const opt *o, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(o[i].name, name)) return o[i].value;
  return NULL;
}

ob_status ob_target_parse(ob_ctx *ctx, const char *text, ob_target **out) {
  OB_ASSERT(out);
  *out = NULL;
  if (!text) text = "";
  char buf[256];
  if (strlen(text) >= sizeof buf)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%.40s...': longer than %zu characters", text,
                   sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", text);
  enum { MAXTOK = 8 };
  char *tok[MAXTOK + 1];
  int nt = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
    if (nt == MAXTOK)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': more than %d options", text,
                     MAXTOK - 1);
    tok[nt++] = t;
  }
  if (!nt)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "empty target (expected llvm, llvm -mcpu=CPU, c -isa=avx512|avx2|scalar|neon "
                   "[-triple=aarch64-linux-gnu], cuda [-arch=sm_XY], opencl)");
  const char *kind = tok[0];
  if (!strcmp(kind, "cuda") || !strcmp(kind, "opencl")) {
    ob_target *t = calloc(1, sizeof *t);
    if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
    ob_status st = ob_target_parse_gpu(ctx, text, kind[0] == 'c' ? OB_TARGET_CUDA : OB_TARGET_OPENCL,
                                       tok + 1, nt - 1, t);
    if (st) {
      free(t);
      return st;
    }
    *out = t;
    return OB_OK;
  }
  bool llvm = !strcmp(kind, "llvm");
  if (!llvm && strcmp(kind, "c"))
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "target '%s': unknown target kind '%s' (known: llvm, c, cuda, opencl)", text, kind);
  static const char *const llvm_opts[] = {"mcpu", "mtriple"};
  static const char *const c_opts[] = {"isa", "triple"};
  const char *const *known = llvm ? llvm_opts : c_opts;
  opt o[MAXTOK];
  int no = 0;
  for (int i = 1; i < nt; i++) {
    char *t = tok[i], *eq = strchr(t, '=');
    if (t[0] != '-' || t[1] == '-' || !eq || eq == t + 1 || !eq[1])
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': malformed option '%s' (expected -name=value)",
                     text, t);
    *eq = '\0';
    const char *name = t + 1;
    if (strcmp(name, known[0]) && strcmp(name, known[1]))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': unknown option '-%s' for %s (known: -%s, -%s)",
                     text, name, kind, known[0], known[1]);
    if (opt_get(o, no, name))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': option '-%s' given twice", text, name);
    o[no++] = (opt){name, eq + 1};
  }

  const host_info *hi = host_get();
  const char *triple = opt_get(o, no, llvm ? "mtriple" : "triple");
  const triple_row *tr = NULL;
  if (triple && !(tr = find_triple(triple))) {
    ob_str k = {0};
    for (int i = 0; i < OB_NTRIPLES; i++) ob_str_appendf(&k, "%s%s", i ? ", " : "", k_triples[i].triple);
    ob_status st = ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': unknown triple '%s' (known: %s)",
                           text, triple, k.data ? k.data : "");
    ob_str_free(&k);
    return st;
  }
  bool cross = tr && strcmp(tr->arch, hi->arch) != 0;
  const char *arch = tr ? tr->arch : hi->arch;

  ob_target *t = calloc(1, sizeof *t);
  if (!t) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  ob_target_facts *f = &t->facts;
  ob_isa isa = cross ? tr->isa : hi->best;
  const isa_row *row = &k_isas[isa];
  ob_status st = OB_OK;
  const char *cc = cross ? env_or(tr->cc_env, tr->cc) : env_or("OPBENCH_CC", "cc");
  const char *cpu = llvm ? opt_get(o, no, "mcpu") : NULL;
  if (llvm) {
    if (cpu && !strcmp(cpu, "native") && cross) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "target '%s': -mcpu=native names this %s host's CPU, not one of %s; name the "
                   "CPU or leave -mcpu out",
                   text, hi->arch, tr->triple);
      goto fail;
    }
    if (cpu && strcmp(cpu, "native")) {
      st = query_cpu(ctx, text, cc, arch, cpu, &isa, f->cpu_features, sizeof f->cpu_features);
      if (st) goto fail;
      row = &k_isas[isa];
    }
    if (!cpu && !cross) cpu = "native";
    snprintf(t->cpu, sizeof t->cpu, "%s", cpu ? cpu : "");
  } else if (opt_get(o, no, "isa")) {
    const char *name = opt_get(o, no, "isa");
    if (!(row = find_isa(name, &isa))) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "target '%s': unknown ISA '%s' (known: avx512, avx2, scalar, neon)", text, name);
      goto fail;
    }
    if (row->arch && strcmp(row->arch, arch)) {
      if (!tr)
        st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                     "target '%s': ISA %s is for %s, and this host is %s (cross-compile with "
                     "-triple=%s-linux-gnu)",
                     text, name, row->arch, hi->arch, row->arch);
      else
        st = ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': ISA %s is for %s, not for triple %s",
                     text, name, row->arch, tr->triple);
      goto fail;
    }
  }

  f->isa = isa;
  snprintf(f->triple, sizeof f->triple, "%s", cross ? tr->triple : "");
  snprintf(f->arch, sizeof f->arch, "%.15s", arch);
  f->vector_bits = row->vector_bits;
  f->lanes_f32 = row->lanes_f32;
  f->vector_registers = row->vector_registers;
  f->accum_budget = row->vector_registers - row->reserved;
  if (!f->cpu_features[0]) snprintf(f->cpu_features, sizeof f->cpu_features, "%s", row->cpu_features);
  if (cross) {
    f->l1d_bytes = tr->l1d_bytes;
    f->l2_bytes = tr->l2_bytes;
    f->l3_bytes = tr->l3_bytes;
    f->ncores = tr->ncores;
  } else {
    f->l1d_bytes = hi->h.l1d_bytes;
    f->l2_bytes = hi->h.l2_bytes;
    f->l3_bytes = hi->h.l3_bytes;
    f->ncores = hi->h.ncores;
  }
  f->native = !cross && features_missing(hi->h.isa, f->cpu_features, NULL, 0);
  f->emulated = cross;
  f->min_repeat_ms = 2.0;
  snprintf(f->cc, sizeof f->cc, "%s", cc);
  if (llvm && t->cpu[0] && strcmp(t->cpu, "native")) {
    if (!strcmp(arch, "x86_64"))
      snprintf(f->cflags, sizeof f->cflags, "-O3 -march=%s -mprefer-vector-width=%d -fPIC -shared",
               t->cpu, f->vector_bits);
    else
      snprintf(f->cflags, sizeof f->cflags, "-O3 -mcpu=%s -fPIC -shared", t->cpu);
  } else {
    snprintf(f->cflags, sizeof f->cflags, "%s", f->native ? row->native_flags : row->portable_flags);
  }
  if (cross) {
    snprintf(f->sysroot, sizeof f->sysroot, "%s", env_or(tr->sysroot_env, tr->sysroot));
    snprintf(f->emulator, sizeof f->emulator, "%.100s -L %.150s", env_or(tr->qemu_env, tr->qemu), f->sysroot);
  }

  if (llvm)
    snprintf(t->str, sizeof t->str, "llvm%s%s%s%s", t->cpu[0] ? " -mcpu=" : "", t->cpu,
             cross ? " -mtriple=" : "", cross ? tr->triple : "");
  else
    snprintf(t->str, sizeof t->str, "c -isa=%s%s%s", row->name, cross ? " -triple=" : "",
             cross ? tr->triple : "");
  *out = t;
  return OB_OK;
fail:
  free(t);
  return st;
}

ob_status ob_target_host(ob_ctx *ctx, ob_target **out) {
  OB_ASSERT(out);
  const char *env = getenv("OPBENCH_TARGET");
  bool from_env = env && *env;
  ob_status st = ob_target_parse(ctx, from_env ? env : "llvm", out);
  if (st) {
    ob_fail_prefix(ctx, "$OPBENCH_TARGET");
    return st;
  }
  const ob_target_facts *f = &(*out)->facts;
  if (f->kind != OB_TARGET_CPU) {
    ob_log(ctx, OB_LOG_INFO, "target %s%s: %s, %s", (*out)->str, from_env ? " (from $OPBENCH_TARGET)" : "",
           f->gpu.device_name, f->native ? "runs here" : "built only");
    return OB_OK;
  }
  ob_log(ctx, OB_LOG_INFO,
         "target %s%s: ISA %s (%d float lanes, %d vector registers, %d for accumulators), %s, "
         "cc %s, flags '%s'",
         (*out)->str, from_env ? " (from $OPBENCH_TARGET)" : " (the host's best ISA)",
         ob_isa_name(f->isa), f->lanes_f32, f->vector_registers, f->accum_budget,
         f->native ? "runs here" : f->emulated ? "runs under an emulator" : "built only", f->cc,
         f->cflags);
  return OB_OK;
}

void ob_target_free(ob_target *t) { free(t); }
const char *ob_target_str(const ob_target *t) { return t->str; }
const ob_target_facts *ob_target_get_facts(const ob_target *t) { return &t->facts; }
bool ob_target_same(const ob_target *a, const ob_target *b) { return !strcmp(a->str, b->str); }
const char *ob_target_kind_name(ob_target_kind k) {
  static const char *const names[OB_TARGET_KIND_COUNT] = {"cpu", "cuda", "opencl"};
  return k >= 0 && k < OB_TARGET_KIND_COUNT ? names[k] : "unknown";
}

/* ---- checks -------------------------------------------------------------------------- */

static const triple_row *triple_of(const ob_target *t) {
  return t->facts.triple[0] ? find_triple(t->facts.triple) : NULL;
}

ob_status ob_target_check_buildable(ob_ctx *ctx, const ob_target *t) {
  const ob_target_facts *f = &t->facts;
  if (f->kind != OB_TARGET_CPU) return ob_target_check_gpu(ctx, t, false);
  const triple_row *tr = triple_of(t);
  if (!tool_found(f->cc)) {
    if (tr)
      return ob_fail(ctx, OB_ERR_COMPILE,
                     "target '%s': the cross compiler '%s' is not installed (Debian package %s; "
                     "or set $%s)",
                     t->str, f->cc, tr->cc_pkg, tr->cc_env);
    return ob_fail(ctx, OB_ERR_COMPILE, "target '%s': the compiler '%s' is not found (set --cc or OPBENCH_CC)",
                   t->str, f->cc);
  }
  if (tr && !path_exists(f->sysroot, "include/stdlib.h"))
    return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "target '%s': the %s C library headers are not installed (no %s/include/stdlib.h; "
                   "Debian package %s, or set $%s)",
                   t->str, tr->arch, f->sysroot, tr->libc_pkg, tr->sysroot_env);
  return OB_OK;
}

ob_status ob_target_check_runnable(ob_ctx *ctx, const ob_target *t) {
  const ob_target_facts *f = &t->facts;
  if (f->kind != OB_TARGET_CPU) return ob_target_check_gpu(ctx, t, true);
  if (f->native) return OB_OK;
  const triple_row *tr = triple_of(t);
  if (f->emulated && tr) {
    if (!tool_found(f->emulator))
      return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                     "target '%s': its kernels need the emulator '%.*s', which is not installed "
                     "(Debian package %s; or set $%s)",
                     t->str, (int)strcspn(f->emulator, " "), f->emulator, tr->qemu_pkg, tr->qemu_env);
    if (!path_exists(f->sysroot, tr->loader))
      return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                     "target '%s': the emulator needs the %s libraries, which are not installed "
                     "(no %s/%s; Debian package %s, or set $%s)",
                     t->str, tr->arch, f->sysroot, tr->loader, tr->libc_pkg, tr->sysroot_env);
    return OB_OK;
  }
  char missing[256];
  features_missing(host_get()->h.isa, f->cpu_features, missing, sizeof missing);
  return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                 "target '%s': this CPU lacks %s, which its kernels need; they can be built here "
                 "but not run",
                 t->str, missing[0] ? missing : f->cpu_features);
}
