/* baseline: vendor libraries executing the same workloads as opbench, in the
 * same process (cuDNN and cuBLAS: in a child process on the GPU), timed by
 * the runner's timing loop (kernel.h) and checked against the operators'
 * naive reference, so every comparison is measured side by side: oneDNN
 * (libdnnl, C API, v2.x) on the CPU, cuDNN and cuBLAS on a CUDA GPU.
 *
 * Operators (opbench's, workloads from ob_workload_parse) and the layouts
 * the caller's data is in (what ob_task_fill produces; the library's own
 * formats are reached by reorders done once, outside the timed region):
 *   conv2d            data NCHW, weight [K, C/groups, R, S], bias [K],
 *                     residual and output [N, K, OH, OW]; stride, asymmetric
 *                     padding, dilation, groups (grouped and depthwise).
 *   depthwise_conv2d  as conv2d with groups = C, K = C; weight [C, 1, R, S]
 *                     (a depth multiplier is conv2d with groups = C, K = m*C).
 *   dense             C[M,N] = A[M,K] * B[N,K]^T; A, B, C row-major; bias [N].
 *   batch_matmul      C[b] = A[b] * B[b]^T: A [B,M,K], B [B,N,K], C [B,M,N]
 *                     (attributes B, M, N, K); bias [N].
 *   pool2d            data NCHW -> output NCHW (floor output size); mode 0
 *                     max, 1 average dividing by the window's in-bounds
 *                     elements (incl_pad 0) or by R*S (incl_pad 1).
 *   global_avg_pool   [N, C, H, W] -> [N, C, 1, 1].
 * Attributes and their meaning are those of ob_workload_parse (src/ops);
 * pooling GFLOPS count one operation per window element.
 * Epilogues (ob_workload.epilogue, "bias,relu"...) for conv2d,
 * depthwise_conv2d, dense and batch_matmul: bias (first step only, as the
 * libraries add it before any post-op), relu, relu6 and add (residual). */
#ifndef OPBENCH_BASELINE_H
#define OPBENCH_BASELINE_H

#include "opbench/core.h"
#include "opbench/kernel.h"
#include "opbench/ops.h"
#include "opbench/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One measurement at a time per handle (it sets process-wide thread state). */
typedef struct ob_baseline ob_baseline;

typedef struct ob_baseline_result {
  int error_no;        /* ob_merr: NONE; INSTANTIATION (the baseline does not
                          support the workload); RUNTIME (the library failed:
                          its status text is in message); WRONG_ANSWER;
                          RUN_TIMEOUT (timing passed timing.timeout_s) */
  char message[512];   /* why, for any error */
  char impl[96];       /* implementation the library picked, e.g.
                          "brg:avx512_core", or "" when none was created */
  ob_timing timing;    /* when error_no is NONE: costs, median, number used, flags */
  double flops;        /* floating-point operations per call */
  double gflops;       /* flops / timing.median_s / 1e9 */
  double run_s;        /* wall time of the whole measurement (setup included) */
} ob_baseline_result;

/* oneDNN limited to the ISA of `target` (NULL or the host's best: no limit;
 * "c -isa=avx2": AVX2, so both sides use the same vector width), set with
 * dnnl_set_max_cpu_isa before oneDNN creates anything; the limit is
 * process-wide and set once: OB_ERR_UNSUPPORTED when oneDNN already runs a
 * wider ISA in this process, or for a target that does not run natively
 * here. On `nthreads` threads pinned one to one on cores[0..nthreads-1]
 * (cores NULL: 0..nthreads-1), as ob_runner pins opbench's kernels. With
 * oneDNN's OpenMP runtime the thread count is set with omp_set_num_threads
 * on the measuring thread for the span of each ob_baseline_measure call
 * (oneDNN sizes its kernels by it at primitive creation), and the OpenMP
 * team is pinned for that span too; both are restored afterwards. A
 * sequential build accepts nthreads == 1 only. Fails with
 * OB_ERR_INVALID_ARG for nthreads < 1 or a core this process may not use
 * (or listed twice), OB_ERR_UNSUPPORTED when the build's threading runtime
 * cannot honour the request, OB_ERR_SYSTEM when no CPU engine can be made;
 * *out is then NULL. The caller frees the handle with ob_baseline_free. */
OB_API ob_status ob_baseline_onednn_new(ob_ctx *ctx, const int *cores, int nthreads,
                                        const ob_target *target, ob_baseline **out);
/* The NVIDIA libraries on the GPU of cuda target `target`: cuDNN for
 * conv2d and depthwise_conv2d, cuBLAS for dense and batch_matmul, FP32 FMA
 * math (no TF32), timed on the device's clock (CUDA events) with the same
 * protocol and checked against the same reference. Each measurement runs
 * in a child process (this process never starts CUDA: its GPU workers are
 * forked from it). OB_ERR_UNSUPPORTED naming what is missing: a target that
 * is not cuda, no GPU (the target's run check), neither library installed
 * (both are loaded with dlopen from $OPBENCH_CUDA_HOME or /usr/local/cuda
 * or the loader's path). Asymmetric padding and matmul epilogues are
 * instantiation errors (class 1) of the workload. Name: "cudnn". */
OB_API ob_status ob_baseline_cudnn_new(ob_ctx *ctx, const ob_target *target, ob_baseline **out);
OB_API void ob_baseline_free(ob_baseline *b); /* accepts NULL */
OB_API const char *ob_baseline_name(const ob_baseline *b); /* "onednn" */
/* Library version, threading runtime and core set, e.g. "oneDNN 2.6.3
 * (OpenMP, 1 thread on cores 0, isa avx512_core)". Owned by b. */
OB_API const char *ob_baseline_describe(const ob_baseline *b);

/* Measures one workload (float32): ops validates it (ob_workload_validate)
 * and its ob_task supplies the inputs (ob_task_fill from seed) and judges
 * the output (ob_task_check: the operators' naive reference),
 * the library's preferred formats for data, weights and output, weights and
 * inputs reordered once before timing; one discarded warm-up whose output is
 * reordered back and checked; then ob_time_loop (kernel.h) with the options
 * ob_runner uses (ob_timing_resolve with the handle's target: adaptive
 * number, the target's floor, repeats,
 * stability rule), ob_cache_flush on the primitive's inputs before each call
 * when timing->flush, and the timer overhead measured once per handle.
 * timing NULL: ob_timing_default(). Workload failures are
 * results (out->error_no); the call fails only when the baseline itself
 * cannot work (out of memory). */
OB_API ob_status ob_baseline_measure(ob_baseline *b, const ob_workload *wl,
                                     const ob_timing_opts *timing, uint64_t seed,
                                     ob_baseline_result *out);

/* The library's algorithm for a convolution. DIRECT is what
 * ob_baseline_measure runs (oneDNN's dnnl_convolution_direct, the kernels
 * frameworks get); WINOGRAD asks for dnnl_convolution_winograd, which
 * oneDNN implements for some float32 3x3 stride-1 convolutions on AVX-512
 * only. A workload the library has no such kernel for is a result with
 * error INSTANTIATION, as any unsupported workload. Winograd's output is
 * checked with the tolerance opbench states for its own Winograd template
 * (ob_winograd_tolerance), since its error is larger than a direct sum's. */
typedef enum ob_baseline_alg {
  OB_BASELINE_ALG_DIRECT = 0,
  OB_BASELINE_ALG_WINOGRAD,
  OB_BASELINE_ALG_COUNT
} ob_baseline_alg;
OB_API ob_status ob_baseline_measure_alg(ob_baseline *b, const ob_workload *wl, ob_baseline_alg alg,
                                         const ob_timing_opts *timing, uint64_t seed,
                                         ob_baseline_result *out);

/* ---- primitives on caller memory, for the graph runtime ----------------------
 * One workload (the operators above) computed by the library on buffers the
 * caller keeps between calls, in the layouts a graph runtime keeps:
 * activations plain (NCHW, row-major matrices) or blocked NCHW[b]c, weights
 * reordered once into the library's own formats when the primitive is made.
 *   want_block   the channel block the caller would like activations in
 *                (conv data and output, pooling): the library's vector
 *                block when it divides the channels; 0: plain.
 *   b_kn         batch_matmul only: B comes as [B, K, N] row-major (a graph's
 *                MatMul operand) instead of the workload's [B, N, K].
 *   consts[i]    workload argument i when it is a constant (weights, bias;
 *                plain, the operator's layout), else NULL (read at run time).
 * The residual of an epilogue "add" is read in the output's layout. Fails
 * with OB_ERR_UNSUPPORTED (message naming the workload and why) when the
 * library has no implementation for it; *out is then NULL. */
typedef struct ob_baseline_prim ob_baseline_prim;
OB_API ob_status ob_baseline_prim_new(ob_baseline *b, const ob_workload *wl, int want_block, bool b_kn,
                                      const void *const *consts, ob_baseline_prim **out);
OB_API void ob_baseline_prim_free(ob_baseline_prim *p); /* accepts NULL */
/* The block the primitive takes its data in and gives its output in (0:
 * plain), and the implementation the library picked. */
OB_API int ob_baseline_prim_data_block(const ob_baseline_prim *p);
OB_API int ob_baseline_prim_out_block(const ob_baseline_prim *p);
OB_API const char *ob_baseline_prim_impl(const ob_baseline_prim *p);
/* One call on bufs (workload argument order; entries of constants are
 * ignored). 0 on success, else the library's status. Between
 * ob_baseline_enter and ob_baseline_leave of its handle. */
OB_API int ob_baseline_prim_run(ob_baseline_prim *p, void *const *bufs);
/* The handle's thread count and pinning in force for a span of prim runs
 * (as ob_baseline_measure does for one measurement). Not nested. */
OB_API void ob_baseline_enter(ob_baseline *b);
OB_API void ob_baseline_leave(ob_baseline *b);

#ifdef __cplusplus
}
#endif
#endif
