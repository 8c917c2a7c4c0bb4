/* ops_impl.h: the operator registry's record layout. Each operator file
 * defines one read-only ob_op_def: its attributes with defaults, its
 * argument layout, its naive reference and its schedule templates. */
#ifndef OB_OPS_IMPL_H
#define OB_OPS_IMPL_H

#include "opbench/ops.h"
#include "opbench/schedule.h"
#include "opbench/target.h"

#define OB_ATTR_REQUIRED INT64_MIN
#define OB_MAX_ARGS 8

/* A template reads the target's facts (float lanes, vector registers, the
 * accumulator budget) for everything that depends on the machine: vector
 * widths, register blocks, the filter and the fallback config. No lane
 * count or register budget is written into a template; the facts come
 * from the target table (src/target/). The target outlives the task. */
typedef struct ob_tmpl_def {
  const char *name;
  bool gpu; /* for GPU targets (cuda, opencl) only; the others for CPU targets only */
  /* Declares the knobs into `space` and sets *dflt to the fallback config.
   * A filter may keep `tg` as its user pointer. */
  ob_status (*define)(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *space,
                      ob_config *dflt);
  /* Declares the compute in te (placeholders in argument order) and returns
   * its schedule with cfg applied. */
  ob_status (*build)(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg,
                     ob_sched **out);
  /* Optional, for kernels whose arguments use the template's own layout:
   * pack copies argument `arg` from the operator's layout into the kernel's,
   * unpack the other way. NULL: the layouts are the same. */
  void (*pack)(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst);
  void (*unpack)(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst);
  /* Optional: elements of argument `arg` in the kernel's layout when it is
   * larger than the operator's (padded blocks; pack fills the padding with
   * zeros). NULL: the operator's count. */
  int64_t (*arg_numel)(const ob_workload *wl, const ob_config *cfg, int arg);
  /* Optional: the check's tolerance for cfg (NULL: ob_tolerance_default). */
  ob_tolerance (*tolerance)(const ob_workload *wl, const ob_config *cfg);
  /* Optional, with pack: the layout of argument `arg` (ob_task_arg_layout);
   * NULL with pack hooks: every argument is OPAQUE. */
  ob_arg_layout (*layout)(const ob_workload *wl, const ob_config *cfg, int arg);
  /* CPU templates whose kernels keep reduction loops rolled: the task adds
   * the knob unroll_inner (ob_sched_unroll_inner's factor: 0, 4 or 8) after
   * the template's own, and the fallback config takes unroll_default.
   * 8 against 0 at the defaults (bench_ab, 8 paired rounds, 1 thread, the
   * AVX2 Zen 3 host): dense_pack 1.09-1.13 (0.97 at M=1), dense.x86 1.18
   * and 1.35, batch_matmul_pack 1.09 and 1.16, conv2d_NCHWc 0.98-1.16 over
   * ResNet-18's layers, 1.01-1.15 on ResNet-18's and mobilenet's 1x1
   * layers (1.01-1.19 with the input blocks of 16 a model's layout plan
   * may give them),
   * depthwise_NCHWc 1.00-1.25; conv2d_nchw 0.88 and depthwise_nchw 1.01
   * (4: 0.81); Winograd 1.03 and 1.30 at its defaults, but 0.69-0.86 on 3
   * of 4 ResNet and SqueezeNet layers with the input blocks of 16 their
   * models run (a partial unroll of 16 channels by 8): 0 in these three,
   * for the tuner to try. Optional unroll_for: the fallback's value given
   * the rest of it (NULL: unroll_default). */
  bool unroll_inner;
  int unroll_default;
  int (*unroll_for)(const ob_config *dflt);
} ob_tmpl_def;

typedef struct ob_arg_info {
  const char *name;
  int64_t numel;
  bool is_input;
} ob_arg_info;

typedef struct ob_op_def {
  const char *name;
  const char *const *attrs;  /* attribute names */
  const int64_t *defaults;   /* OB_ATTR_REQUIRED where there is none */
  int nattrs;
  bool epilogue_ok;          /* accepts bias/relu/relu6/add */
  ob_status (*validate)(ob_ctx *ctx, const ob_workload *wl);
  void (*key)(const ob_workload *wl, char *out, size_t cap);
  double (*flops)(const ob_workload *wl);
  int64_t (*reduce_len)(const ob_workload *wl);
  int (*args)(const ob_workload *wl, ob_arg_info *out); /* inputs, then outputs */
  void (*reference)(const ob_workload *wl, void *const *bufs);
  const ob_tmpl_def *tmpls;
  int ntmpls;
  /* Optional: the template to run untuned (ob_op_untuned_template); NULL
   * or a NULL result: the first of the target's kind. */
  const char *(*untuned)(const ob_workload *wl, const ob_target *tg);
} ob_op_def;

const ob_op_def *ob_op_def_find(const char *name);

extern const ob_op_def ob_op_conv2d;
extern const ob_op_def ob_op_depthwise_conv2d;
extern const ob_op_def ob_op_dense;
extern const ob_op_def ob_op_batch_matmul;
extern const ob_op_def ob_op_relu;
extern const ob_op_def ob_op_add;
extern const ob_op_def ob_op_bias_add;
extern const ob_op_def ob_op_clip;
extern const ob_op_def ob_op_mul;
extern const ob_op_def ob_op_sigmoid;
extern const ob_op_def ob_op_tanh;
extern const ob_op_def ob_op_gelu;
extern const ob_op_def ob_op_relu6;
extern const ob_op_def ob_op_pool2d;
extern const ob_op_def ob_op_global_avg_pool;
extern const ob_op_def ob_op_softmax;
extern const ob_op_def ob_op_layer_norm;
extern const ob_op_def ob_op_batch_norm;
extern const ob_op_def ob_op_concat;
extern const ob_op_def ob_op_to_nchwc;
extern const ob_op_def ob_op_from_nchwc;

/* ---- sizes ------------------------------------------------------------------
 * ob_workload_validate checks every attribute against OB_MAX_ATTR before an
 * operator's validate runs, and validate checks every tensor the operator
 * makes (inputs, outputs, materialized intermediates such as padded data)
 * through ob_check_numel. The other functions of an ob_op_def see only
 * validated workloads; ob_numel_valid multiplies their dims and asserts
 * what validate established. flops functions multiply in double. */
static inline int64_t ob_numel_valid(int n, const int64_t *d) {
  int64_t v = 1;
  for (int i = 0; i < n; i++) OB_ASSERT(d[i] >= 0 && ob_mul_i64(v, d[i], &v));
  OB_ASSERT(v <= OB_MAX_TENSOR_ELEMS);
  return v;
}
#define OB_NUMEL(...) \
  ob_numel_valid((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/* The output extent of a sliding window: floor((in + pad_a + pad_b -
 * dil * (k - 1) - 1) / stride) + 1, or 0 when the dilated window is larger
 * than the padded input or a value is out of range (stride or dil below 1,
 * overflow). */
int64_t ob_window_out(int64_t in, int64_t pad_a, int64_t pad_b, int64_t dil, int64_t k,
                      int64_t stride);

/* ---- convolution helpers (convutil.c) ------------------------------------ */
typedef struct ob_conv_geom {
  int64_t n, c, h, w, k, r, s, sh, sw, pt, pl, pb, pr, dh, dw, g, oh, ow;
} ob_conv_geom;
/* Checks the element count of every tensor of a convolution (data,
 * weight, output, padded data) for operator `op`. */
ob_status ob_conv_check_sizes(ob_ctx *ctx, const char *op, const ob_conv_geom *p);
/* Naive grouped convolution (data NCHW, weight [K, C/g, R, S]) in double,
 * then the epilogue; bufs in argument order: data, weight, [bias],
 * [residual], output. */
void ob_conv_ref(const ob_conv_geom *p, const char *epilogue, void *const *bufs);
/* data with zeros around spatial dims hdim and wdim (data itself when no
 * padding): a select-based stage, materialized or inlined by templates. */
ob_tensor *ob_pad_spatial(ob_te *te, ob_tensor *data, int hdim, int wdim, int64_t pt, int64_t pl,
                          int64_t pb, int64_t pr);

/* The geometry of a conv2d workload (conv2d.c). */
ob_conv_geom ob_conv2d_geom(const ob_workload *wl);

/* ---- conv2d_winograd.x86 (winograd.c) ------------------------------------ */
ob_status ob_winograd_define(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp,
                             ob_config *dflt);
ob_status ob_winograd_build(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg,
                            ob_sched **out);
void ob_winograd_pack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst);
void ob_winograd_unpack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst);
int64_t ob_winograd_arg_numel(const ob_workload *wl, const ob_config *cfg, int arg);
ob_arg_layout ob_winograd_layout(const ob_workload *wl, const ob_config *cfg, int arg);
/* Whether conv2d_winograd.x86 takes the geometry: a 3x3 window at stride 1,
 * no dilation or groups. */
bool ob_winograd_applies(const ob_conv_geom *p);
ob_tolerance ob_winograd_config_tolerance(const ob_workload *wl, const ob_config *cfg);

/* ---- packed GEMM template (matmul.c), shared by dense and batch_matmul ---- */
ob_status ob_matmul_define_pack(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt);
ob_status ob_matmul_build_pack(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out);
void ob_matmul_pack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst);
void ob_matmul_unpack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst);
int64_t ob_matmul_arg_numel(const ob_workload *wl, const ob_config *cfg, int arg);
ob_arg_layout ob_matmul_layout(const ob_workload *wl, const ob_config *cfg, int arg);


/* ---- GPU templates (gpu_tmpl.c) -------------------------------------------
 * Direct convolution: knobs tile_f, tile_y, tile_x (4-way), tile_rc, tile_ry,
 * tile_rx (2-way, when rc > 0), auto_unroll_max_step, unroll_explicit over
 * output channels f, rows y, columns x and the reduction (rc, ry, rx). The
 * schedule takes the output stage, the accumulating stage (the same when
 * there is no epilogue), the tensor the accumulation reads data from (the
 * padded one, inlined, or the data) and the weights. */
ob_status ob_gpu_conv_define(const ob_target *tg, ob_space *sp, ob_config *dflt, int64_t f, int64_t y, int64_t x,
                             int64_t rc, int64_t ry, int64_t rx);
ob_status ob_gpu_conv_schedule(ob_sched *s, ob_stage *so, ob_stage *sacc, const ob_tensor *src,
                               const ob_tensor *pad, const ob_tensor *weight, const ob_config *cfg, bool has_rc);
/* dense_large_batch.gpu and batch_matmul.cuda (plain layouts) */
ob_status ob_gpu_gemm_define(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt);
ob_status ob_gpu_gemm_build(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg,
                            ob_sched **out);
/* dense_small_batch.gpu */
ob_status ob_gpu_dense_small_define(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp,
                                    ob_config *dflt);
ob_status ob_gpu_dense_small_build(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg,
                                   ob_sched **out);

/* ---- epilogues (epilogue.c; the parsed form is public in ops.h) ---------- */
/* Placeholders the epilogue reads (bias [channels], residual [shape of x]),
 * made in this order so that they follow the operator's own inputs. */
typedef struct ob_epi_inputs {
  ob_tensor *bias, *residual;
} ob_epi_inputs;
void ob_epilogue_placeholders(ob_te *te, const ob_epilogue *e, const ob_tensor *x, int chan_dim,
                              ob_epi_inputs *in);
/* Applies the steps to x; returns the last tensor (x itself when empty) and
 * the intermediates (to be inlined) in mid[]/nmid. */
ob_tensor *ob_epilogue_apply(ob_te *te, const ob_epilogue *e, ob_tensor *x, int chan_dim,
                             const ob_epi_inputs *in, ob_tensor **mid, int *nmid);
/* The same for a blocked layout: the channel is idx[chan_dim] * block +
 * idx[block_dim]; bias has `chans` entries. */
ob_tensor *ob_epilogue_apply_blocked(ob_te *te, const ob_epilogue *e, ob_tensor *x, int chan_dim,
                                     int block_dim, int64_t chans, const ob_epi_inputs *in,
                                     ob_tensor **mid, int *nmid);
void ob_epilogue_placeholders_n(ob_te *te, const ob_epilogue *e, const ob_tensor *x, int64_t chans,
                                ob_epi_inputs *in);
/* Argument entries and reference of the epilogue, in the same order. */
int ob_epilogue_args(const ob_epilogue *e, int64_t chans, int64_t out_numel, ob_arg_info *out);
/* out[i] = epilogue(acc[i]) given the epilogue inputs (bias, residual). */
void ob_epilogue_ref(const ob_epilogue *e, double *acc, int64_t numel, int64_t chans,
                     int64_t inner, const float *bias, const float *residual);
/* The same for element i alone (acc = v): lets a reference apply the
 * epilogue as it goes, with no buffer (that could fail) for the whole. */
double ob_epilogue_ref_at(const ob_epilogue *e, double v, int64_t i, int64_t chans, int64_t inner,
                          const float *bias, const float *residual);

/* ---- target facts as templates use them --------------------------------- */
static inline int64_t ob_tmpl_lanes(const ob_target *tg) { return ob_target_get_facts(tg)->lanes_f32; }
static inline int64_t ob_tmpl_budget(const ob_target *tg) { return ob_target_get_facts(tg)->accum_budget; }
static inline int64_t ob_tmpl_registers(const ob_target *tg) {
  return ob_target_get_facts(tg)->vector_registers;
}
/* Vectors of `lanes` float lanes needed for n floats. */
static inline int64_t ob_tmpl_vectors(const ob_target *tg, int64_t n) {
  return (n + ob_tmpl_lanes(tg) - 1) / ob_tmpl_lanes(tg);
}
/* A register block of `points` outputs, each `vecs` vectors wide (the
 * block holds points x vecs accumulators and reads vecs weight vectors and
 * one broadcast per step): within the accumulator budget, and with the
 * weights and the broadcast in registers as well. With AVX2's 16 ymm a
 * 2-vector block of 14 spills an accumulator each step (14 + 2 + 1 > 16),
 * which the budget alone (14) would allow. */
static inline bool ob_tmpl_block_fits(const ob_target *tg, int64_t points, int64_t vecs) {
  int64_t acc = points * vecs;
  return acc <= ob_tmpl_budget(tg) && acc + vecs + 1 <= ob_tmpl_registers(tg);
}
/* The widest block of `vecs` vectors per point that fits (AVX2's 6 x 2
 * vectors, BLIS's 6x16 Haswell sgemm block); 1 when none wider does, 0
 * when the budget holds fewer than `vecs` accumulators. */
static inline int64_t ob_tmpl_widest_block(const ob_target *tg, int64_t vecs) {
  int64_t w = ob_tmpl_budget(tg) / vecs;
  while (w > 1 && !ob_tmpl_block_fits(tg, w, vecs)) w--;
  return w;
}
/* Vector widths (float lanes) a template offers for a vectorized loop: the
 * powers of two from 4 to four registers' worth (4, 8, ..., 4 x lanes).
 * Returns the count; out needs room for 8. */
int ob_tmpl_vec_choices(const ob_target *tg, int64_t *out);

/* Shared helper: i-th argument pointer as float. */
#define OB_F(bufs, i) ((float *)(bufs)[i])

#endif
