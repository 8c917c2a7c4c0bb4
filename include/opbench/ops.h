/* ops: the operator library. A workload names an operator and its integer
 * attributes (shape, stride, padding, epilogue); the registry knows, per
 * operator, its compute declaration, naive reference and schedule templates
 * (for CPU targets, and AutoTVM's CUDA ones for GPU targets). A task binds one workload to one template for one target (its
 * lanes and registers shape the config space): it owns the config space and
 * the reference output, and turns any config into C source. */
#ifndef OPBENCH_OPS_H
#define OPBENCH_OPS_H

#include "opbench/lower.h"
#include "opbench/space.h"
#include "opbench/target.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OB_WL_MAX_ATTRS 24

typedef struct ob_workload {
  char op[32];
  ob_dtype dtype;
  int nattr;
  char attr_name[OB_WL_MAX_ATTRS][12];
  int64_t attr[OB_WL_MAX_ATTRS];
  char epilogue[48]; /* "", or a comma list of bias, relu, relu6, add */
} ob_workload;

/* An epilogue (ob_workload.epilogue) parsed: its steps in order. The one
 * parser of the epilogue text; the baseline reads workloads through it too. */
typedef enum ob_epi {
  OB_EPI_BIAS = 0, /* + bias[channel] */
  OB_EPI_RELU,
  OB_EPI_RELU6,
  OB_EPI_ADD,      /* + residual, same shape as the output */
  OB_EPI_COUNT
} ob_epi;

typedef struct ob_epilogue {
  int n;
  ob_epi step[8];
} ob_epilogue;

/* "bias,relu" -> steps. NULL or "" is the empty epilogue. An unknown or
 * repeated step (bias and add at most once), or more than 8, is
 * OB_ERR_INVALID_ARG naming it (ctx may be NULL). */
OB_API OB_NODISCARD ob_status ob_epilogue_parse(ob_ctx *ctx, const char *list, ob_epilogue *out);
OB_API bool ob_epilogue_has(const ob_epilogue *e, ob_epi step);

/* Builds a workload for `op` from "N=1,C=64,H=56,W=56,K=64,R=3,S=3"-style
 * text; attributes not given take the operator's defaults, a required one
 * missing, an unknown name or a malformed number is OB_ERR_INVALID_ARG
 * naming it; an unknown operator is OB_ERR_UNSUPPORTED listing the known. */
OB_API OB_NODISCARD ob_status ob_workload_parse(ob_ctx *ctx, const char *op, const char *shape_text,
                                   ob_workload *out);
/* Sets one attribute (e.g. "stride" sets stride_h and stride_w). */
OB_API OB_NODISCARD ob_status ob_workload_set(ob_ctx *ctx, ob_workload *wl, const char *name, int64_t v);
OB_API OB_NODISCARD ob_status ob_workload_set_epilogue(ob_ctx *ctx, ob_workload *wl, const char *list);
OB_API int64_t ob_workload_get(const ob_workload *wl, const char *name);
/* Checks the attributes together (positive sizes, output not empty...). */
OB_API OB_NODISCARD ob_status ob_workload_validate(ob_ctx *ctx, const ob_workload *wl);
/* Canonical key, e.g. conv2d_nchw/f32/N1C64H56W56/K64R3S3/s1,1/p1,1,1,1/d1,1/g1 */
OB_API void ob_workload_key(const ob_workload *wl, char *out, size_t cap);
OB_API double ob_workload_flops(const ob_workload *wl);
/* The attributes as the database stores them: a JSON object of dtype, every
 * attribute and the epilogue, e.g. {"dtype":"float32","N":1,...}. Appended
 * to *out. ob_workload_from_attrs is its inverse (float32 only): a missing
 * or malformed object, another dtype or attributes the operator refuses are
 * OB_ERR_INVALID_ARG. */
OB_API void ob_workload_attrs(const ob_workload *wl, ob_str *out);
OB_API OB_NODISCARD ob_status ob_workload_from_attrs(ob_ctx *ctx, const char *op, const char *attrs_json,
                                        ob_workload *out);
/* Stores the workload in the database (ob_db_put_workload with its key,
 * operator, ob_workload_attrs and FLOPs). */
struct ob_db; /* db.h */
OB_API ob_status ob_workload_store(struct ob_db *db, const ob_workload *wl);

/* AutoTVM's names for opbench workloads (src/ops/autotvm.c), for the db's
 * AutoTVM import and export (ctx NULL): conv2d_NCHWc / conv2d_nchw tasks
 * (NCHW float32, no groups) are conv2d workloads, dense_nopack / dense_pack
 * tasks (float32) dense ones, and those workloads' attributes give back
 * TVM's x86 argument lists. Read-only, lives for the whole program. */
struct ob_db_autotvm_i; /* db.h */
OB_API const struct ob_db_autotvm_i *ob_op_autotvm_map(void);

/* Arguments of a workload without a task (inputs in order, then outputs):
 * how many, the element count of argument i and whether it is an input. */
OB_API int ob_workload_num_args(const ob_workload *wl);
OB_API int64_t ob_workload_arg_numel(const ob_workload *wl, int i);
OB_API bool ob_workload_arg_is_input(const ob_workload *wl, int i);
/* Runs the operator's naive reference (double accumulation) on caller
 * buffers in argument order, in the operator's own layout; the workload
 * must be valid (ob_workload_validate). Graph reference executions and the
 * runtime's checks use the same code as the kernels' checks. */
OB_API void ob_workload_reference(const ob_workload *wl, void *const *bufs);

/* Registry. */
OB_API int ob_op_count(void);
OB_API const char *ob_op_name(int i);
OB_API bool ob_op_exists(const char *name);
/* Template names of an operator for CPU targets, the first being the
 * default. */
OB_API int ob_op_templates(const char *op, const char **names, int cap);
/* Template names of an operator for target t's kind (t NULL: CPU; a cuda or
 * opencl target: the GPU templates), the first being the default. */
OB_API int ob_op_templates_for(const char *op, const ob_target *t, const char **names, int cap);
/* True for a template of GPU targets (false for unknown names). */
OB_API bool ob_op_template_is_gpu(const char *op, const char *tmpl);
/* The template to run where nothing was measured (a graph node without
 * records): the operator's pick for wl on target t where it has one (conv2d:
 * Winograd for 3x3 windows at stride 1 on CPUs), else NULL, the default
 * template. ob_task_new takes the result as its tmpl. */
OB_API const char *ob_op_untuned_template(const ob_workload *wl, const ob_target *t);

typedef struct ob_task ob_task;
/* tmpl NULL picks the operator's default template. target is borrowed and
 * must outlive the task; NULL: the default target (ob_target_host), made
 * and owned by the task. The space, fallback config and generated code are
 * the target's: a config index means a config only with its target. */
OB_API ob_status ob_task_new(ob_ctx *ctx, const ob_workload *wl, const char *tmpl,
                             const ob_target *target, ob_task **out);
OB_API void ob_task_free(ob_task *t);
OB_API const ob_workload *ob_task_workload(const ob_task *t);
OB_API const char *ob_task_template(const ob_task *t);
OB_API const ob_target *ob_task_target(const ob_task *t);
OB_API const ob_space *ob_task_space(const ob_task *t);
OB_API ob_config ob_task_default_config(const ob_task *t);
/* Configs like base but for the channel block of the data it reads (up to
 * max into out; the count returned): conv2d_NCHWc.x86 varies tile_ic, the
 * block of the reduction over input channels, which its register tile does
 * not depend on; depthwise_NCHWc.x86 varies tile_c, its channel block in
 * and out, with the widest column block of at most base's that still fits
 * the registers; conv2d_winograd.x86 its tile_ic. Blocks from half to twice
 * the target's vector lanes that divide the channels; 0 for other
 * templates. A model's plan takes them where its neighbours read or write
 * that block, to save a layout conversion. */
OB_API int ob_task_block_variants(const ob_task *t, const ob_config *base, ob_config *out, int max);
#define OB_TASK_BLOCK_VARIANTS_MAX 3 /* blocks of half, one and two vectors */
OB_API double ob_task_flops(const ob_task *t);

/* Lowers one config (OB_ERR_OUT_OF_SPACE if the config is not in the space,
 * OB_ERR_SCHEDULE if the template cannot apply it). */
OB_API ob_status ob_task_lower(ob_task *t, const ob_config *cfg, ob_lowered **out);
/* Source of one config (C; CUDA C or OpenCL C for a GPU target); *name
 * receives the kernel name (both malloc'd). A GPU kernel over the target's
 * launch limits is OB_ERR_LAUNCH naming the limit. */
OB_API ob_status ob_task_source(ob_task *t, const ob_config *cfg, char **src, char **name);
/* The kernel name ob_task_source gives config cfg (a C identifier: template,
 * dtype, config index), into buf. */
OB_API void ob_task_kernel_name(const ob_task *t, const ob_config *cfg, char *buf, size_t cap);
/* The same, with the GPU launch (grid, block, shared memory) when launch is
 * not NULL. */
OB_API ob_status ob_task_source_launch(ob_task *t, const ob_config *cfg, char **src, char **name,
                                       ob_launch *launch);

/* Kernel arguments: inputs in order, then outputs. */
OB_API int ob_task_num_args(const ob_task *t);
OB_API size_t ob_task_arg_bytes(const ob_task *t, int i);
OB_API bool ob_task_arg_is_input(const ob_task *t, int i);
OB_API const char *ob_task_arg_name(const ob_task *t, int i);
/* Random inputs in [-1, 1] (never 0) from `seed`; outputs poisoned with NaN. */
OB_API void ob_task_fill(const ob_task *t, uint64_t seed, void *const *bufs);
/* The tolerance of a check against the reference: an output passes when
 * |got - ref| <= rtol * |ref| + atol * sqrt(red) * max(max|ref|, 1) + 1e-6,
 * red being the reduction length. The default (float32 sums in any order)
 * is rtol 1e-4, atol 1e-5. */
typedef struct ob_tolerance {
  double rtol, atol;
} ob_tolerance;
OB_API ob_tolerance ob_tolerance_default(void);
/* Winograd's minimal filtering F(m x m, 3 x 3) adds the rounding of its
 * transforms, whose constants grow with m: the tolerance opbench states for
 * tile m (2, 4 or 6), measured on random inputs (see conv2d_winograd.x86 in
 * src/ops/winograd.c). Any other m: that of the largest tile. */
OB_API ob_tolerance ob_winograd_tolerance(int m);
/* The tolerance a config's kernel is checked with: the template's own (the
 * Winograd template's depends on its tile size), else the default. */
OB_API ob_tolerance ob_task_tolerance(const ob_task *t, const ob_config *cfg);
/* Compares outputs in bufs with the naive reference on the inputs that
 * ob_task_fill(seed) makes (the reference is computed once and kept), with
 * the default tolerance. OB_ERR_WRONG_ANSWER with the first bad element
 * named in the message. */
OB_API ob_status ob_task_check(ob_task *t, uint64_t seed, void *const *bufs, char *msg,
                               size_t cap);
/* The same with a tolerance of the caller's. */
OB_API ob_status ob_task_check_tol(ob_task *t, uint64_t seed, void *const *bufs, ob_tolerance tol,
                                   char *msg, size_t cap);
/* The same for the kernel of one config, whose arguments may be in a
 * template's own layout (e.g. NCHW16c data, pre-packed weights, Winograd-
 * transformed weights; channel blocks padded with zeros): inputs are made in
 * the operator's layout and packed; outputs are unpacked before the
 * comparison, which uses ob_task_tolerance(t, cfg). The buffers are
 * ob_task_arg_bytes_for(t, cfg, i) bytes each. */
OB_API OB_NODISCARD ob_status ob_task_fill_for(ob_task *t, const ob_config *cfg, uint64_t seed,
                                  void *const *bufs);
OB_API OB_NODISCARD ob_status ob_task_check_for(ob_task *t, const ob_config *cfg, uint64_t seed,
                                   void *const *bufs, char *msg, size_t cap);
/* Bytes of argument i of cfg's kernel: ob_task_arg_bytes, or more where
 * the template's layout pads (channel blocks that do not divide the channel
 * count, GEMM panels that do not divide N). */
OB_API size_t ob_task_arg_bytes_for(const ob_task *t, const ob_config *cfg, int i);
/* True when cfg's kernel takes its arguments in the operator's own layout. */
OB_API bool ob_task_plain_layout(const ob_task *t, const ob_config *cfg);

/* How argument i of cfg's kernel is laid out, for callers that keep data in
 * the kernels' layouts across calls (the graph runtime: blocked activations
 * flowing between convolutions, weights packed once at load):
 *   PLAIN   the operator's own layout (row-major, as ob_workload_reference);
 *   NCHWC   a 4-D [N, C, H, W] argument as [N, C/block, H, W, block];
 *   PANELS  a [..., N, K] argument as [..., N/block, K, block] (the packed
 *           GEMM's B);
 *   OPAQUE  only ob_task_pack_arg / ob_task_unpack_arg know it (a template
 *           with pack hooks that does not describe its layouts).
 * block divides the dimension it blocks. */
typedef enum ob_arg_layout_kind {
  OB_ARGL_PLAIN = 0,
  OB_ARGL_NCHWC,
  OB_ARGL_PANELS,
  OB_ARGL_OPAQUE,
  OB_ARGL_COUNT
} ob_arg_layout_kind;
typedef struct ob_arg_layout {
  ob_arg_layout_kind kind;
  int64_t block; /* NCHWC and PANELS; 0 otherwise */
} ob_arg_layout;
OB_API ob_arg_layout ob_task_arg_layout(const ob_task *t, const ob_config *cfg, int i);
/* Moves argument i from the operator's layout (src) into cfg's kernel
 * layout (dst), or back; a plain argument is copied. Buffers of
 * ob_task_arg_bytes(t, i). */
OB_API void ob_task_pack_arg(const ob_task *t, const ob_config *cfg, int i, const float *src, float *dst);
OB_API void ob_task_unpack_arg(const ob_task *t, const ob_config *cfg, int i, const float *src, float *dst);

#ifdef __cplusplus
}
#endif
#endif
