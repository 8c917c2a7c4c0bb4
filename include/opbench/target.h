/* target: what kernels are built for. A target is parsed from a TVM-style
 * string (`llvm`, `llvm -mcpu=znver4`, `c -isa=avx2`,
 * `c -isa=neon -triple=aarch64-linux-gnu`) into an immutable handle that
 * holds the facts kernels depend on: the ISA, float lanes per vector,
 * vector registers and the accumulator budget templates size their
 * register tiles by, caches and cores (hwloc for the host), the compiler
 * and its flags, and whether kernels run here natively, under an emulator,
 * or can only be built. The facts are data: one table per ISA and one per
 * cross triple (src/target/target.c); nothing here calls into a later
 * module. The canonical string of a target is part of every record key.
 *
 * Accepted strings (options in any order, each at most once):
 *   llvm                        the host's best ISA = "llvm -mcpu=native"
 *   llvm -mcpu=native|<cpu>     <cpu> as the compiler's -march knows it; its
 *                               ISA is asked from the compiler
 *   llvm ... -mtriple=<triple>  a cross triple (see below)
 *   c                           the host's best ISA, named: "c -isa=avx512"
 *   c -isa=avx512|avx2|scalar|neon [-triple=<triple>]
 * Cross triples: aarch64-linux-gnu (cross compiler aarch64-linux-gnu-gcc,
 * emulator qemu-aarch64 with the sysroot /usr/aarch64-linux-gnu; overridden
 * by $OPBENCH_AARCH64_CC, $OPBENCH_AARCH64_QEMU, $OPBENCH_AARCH64_SYSROOT).
 * The host's own triple (x86_64-linux-gnu here) is accepted and dropped from
 * the canonical string. "scalar" is the architecture's baseline ISA without
 * -march (SSE2 on x86-64): portable kernels whose 128-bit vector types the
 * compiler lowers onto it.
 *
 * GPU targets (src/target/gpu.c):
 *   cuda [-arch=sm_XY] [-device=N]   CUDA C compiled by NVRTC to PTX for
 *                                    compute_XY, run through the CUDA driver
 *                                    on device N (default 0)
 *   opencl [-platform=P] [-device=N] OpenCL C built and run through the ICD
 *                                    loader on device N of platform P
 * Their facts (threads and shared memory per block, block and grid limits,
 * warp or subgroup size, compute units) are read from the device where one
 * exists (gpu.present); without one, a CUDA target takes them from a table
 * per architecture (sm_80 when -arch is not given) and can be built (NVRTC)
 * but not run. The canonical strings are "cuda -arch=sm_XY" and "opencl",
 * with -device/-platform only when not 0. */
#ifndef OPBENCH_TARGET_H
#define OPBENCH_TARGET_H

#include "opbench/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ob_isa {
  OB_ISA_SCALAR = 0,
  OB_ISA_AVX2,
  OB_ISA_AVX512,
  OB_ISA_NEON,
  OB_ISA_COUNT
} ob_isa;

typedef enum ob_target_kind {
  OB_TARGET_CPU = 0, /* llvm / c: C kernels from the system compiler */
  OB_TARGET_CUDA,    /* CUDA C through NVRTC, the CUDA driver to run */
  OB_TARGET_OPENCL,  /* OpenCL C through the ICD loader */
  OB_TARGET_KIND_COUNT
} ob_target_kind;

typedef struct ob_target ob_target; /* opaque, immutable after parse */

/* What GPU kernels depend on and what lowering checks launches against. */
typedef struct ob_gpu_facts {
  bool present;               /* the device exists here and these were read from it */
  bool cpu_device;            /* an OpenCL device of type CPU (PoCL): its timings are CPU
                                 timings */
  int device, platform;       /* -device=N, -platform=P */
  int sm;                     /* CUDA compute capability as 10*major + minor (80 = sm_80);
                                 0 for OpenCL */
  int max_threads_per_block;  /* CUDA threads / OpenCL work-items per work-group */
  int max_block_dim[3];
  int64_t max_grid_dim[3];    /* blocks per grid dimension (OpenCL: work-groups) */
  int64_t max_shared_per_block; /* bytes of shared (OpenCL __local) memory a block may
                                   declare statically */
  int warp_size;              /* CUDA warp; OpenCL: the vendor's subgroup size (NVIDIA
                                 warp, AMD wavefront), 1 for a CPU device (work-items
                                 are not SIMT lanes), 0 when the device does not say */
  int compute_units;          /* streaming multiprocessors / OpenCL compute units */
  int max_registers_per_block; /* 32-bit registers (CUDA); 0 unknown */
  int64_t global_mem_bytes;
  char device_name[128];
  char platform_name[64];     /* OpenCL platform ("Portable Computing Language") */
} ob_gpu_facts;

typedef struct ob_target_facts {
  ob_target_kind kind;     /* CPU, CUDA or OpenCL; the CPU facts below are the host's
                              for the host code of a GPU target and unused by its
                              kernels */
  ob_gpu_facts gpu;        /* GPU targets only */
  ob_isa isa;
  char triple[64];         /* "" = the host's own; else e.g. "aarch64-linux-gnu" */
  char arch[16];           /* "x86_64", "aarch64": the architecture kernels run on */
  int vector_bits;         /* 512 / 256 / 128 */
  int lanes_f32;           /* float32 lanes per vector register */
  int vector_registers;    /* architectural vector registers: 32 zmm, 16 ymm, 32 NEON v */
  int accum_budget;        /* vector registers a template may fill with accumulators:
                              the registers minus those kept for operands (a
                              broadcast, weight vectors, addresses): 28 of 32 zmm,
                              14 of 16 ymm, 28 of 32 NEON v */
  int64_t l1d_bytes, l2_bytes, l3_bytes; /* hwloc for the host; the table's for cross */
  int ncores;              /* physical cores (the host's; the table's for cross) */
  bool native;             /* kernels run directly on this host */
  bool emulated;           /* kernels run under an emulator (qemu-user): timings are
                              not performance figures */
  double min_repeat_ms;    /* default timing floor of one repeat for this target */
  char cc[256];            /* compiler command: native "cc" or $OPBENCH_CC; cross
                              e.g. "aarch64-linux-gnu-gcc" */
  char cflags[256];        /* e.g. "-O3 -march=native -mprefer-vector-width=512 -fPIC -shared" */
  char emulator[256];      /* "" or e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu" */
  char sysroot[256];       /* cross: the target's libraries (emulator -L); else "" */
  char cpu_features[256];  /* CPU flags (/proc/cpuinfo names) kernels need, e.g. "avx2 fma" */
} ob_target_facts;

/* What a GPU kernel is launched with, derived from its bound loops: the
 * grid and block extents per dimension (the largest loop bound to each;
 * smaller ones run under a guard), the shared memory its blocks declare,
 * and the unrolling pragma of the schedule (AutoTVM's auto_unroll_max_step:
 * loops whose iterations, with their inner loops', number at most this many
 * are unrolled; explicitly in the IR or by the device compiler's pragma). */
typedef struct ob_launch {
  bool gpu;                /* some loop is bound to a block or thread index */
  int64_t grid[3], block[3];
  int64_t shared_bytes;
  int64_t local_bytes;     /* largest per-thread local (register) buffer total */
  int64_t unroll_max_step; /* 0: no automatic unrolling */
  bool unroll_explicit;
} ob_launch;

/* Parses `text`; *out is owned by the caller (ob_target_free). Unknown kind,
 * ISA, triple or option, a malformed or repeated option, an ISA that does not
 * match the triple, an -arch NVRTC does not know: OB_ERR_INVALID_ARG naming
 * it. Parsing needs no tool except for `llvm -mcpu=<cpu>`,
 * whose ISA the compiler is asked for (OB_ERR_INVALID_ARG when it does not
 * know the CPU, OB_ERR_COMPILE when it is missing). A target that cannot run
 * or be built here parses: see the checks below. */
OB_API ob_status ob_target_parse(ob_ctx *ctx, const char *text, ob_target **out);
/* The default target: $OPBENCH_TARGET when set and not empty (parsed as
 * above, errors naming the variable), else the host's best ISA as
 * "llvm -mcpu=native" (the string records were stored under before targets
 * were parsed). Logs what it picked at info level. */
OB_API ob_status ob_target_host(ob_ctx *ctx, ob_target **out);
OB_API void ob_target_free(ob_target *t); /* accepts NULL */
/* Canonical text; part of every record key. Owned by t. */
OB_API const char *ob_target_str(const ob_target *t);
OB_API const ob_target_facts *ob_target_get_facts(const ob_target *t);
OB_API const char *ob_isa_name(ob_isa isa); /* "scalar", "avx2", "avx512", "neon" */
/* Same canonical string: kernels and records of one are those of the other. */
OB_API bool ob_target_same(const ob_target *a, const ob_target *b);
OB_API const char *ob_target_kind_name(ob_target_kind k); /* "cpu", "cuda", "opencl" */
static inline bool ob_target_is_gpu(const ob_target *t) {
  return ob_target_get_facts(t)->kind != OB_TARGET_CPU;
}

/* OB_OK if kernels for t can be run here (natively or under its emulator,
 * which must then be installed with its sysroot; a GPU target's device must
 * exist and, for CUDA, be of the target's architecture or newer); else
 * OB_ERR_UNSUPPORTED with one message naming the target and what is
 * missing (the CPU features the host lacks, the emulator, the sysroot, the
 * GPU driver or device, the OpenCL platform). */
OB_API ob_status ob_target_check_runnable(ob_ctx *ctx, const ob_target *t);
/* OB_OK if kernels for t can be built here: its compiler is found in PATH
 * (OB_ERR_COMPILE naming target and compiler otherwise) and, for a cross
 * target, the target's C library headers are installed in its sysroot
 * (OB_ERR_UNSUPPORTED otherwise). CUDA: NVRTC can be loaded (no GPU is
 * needed); OpenCL: the device exists (its driver compiles the kernels). */
OB_API ob_status ob_target_check_buildable(ob_ctx *ctx, const ob_target *t);

#ifdef __cplusplus
}
#endif
#endif
