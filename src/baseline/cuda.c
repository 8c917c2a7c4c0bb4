/* cuda.c: the GPU baselines, cuDNN (conv2d, depthwise_conv2d: a grouped
 * convolution) and cuBLAS (dense, batch_matmul), as oneDNN is on the CPU:
 * the same workloads, the same inputs and reference check (the checker of
 * baseline.c), the same timing protocol on the device's clock (CUDA
 * events, as the GPU runner times opbench's kernels).
 *
 * The libraries are loaded with dlopen (libcudnn.so.9, libcublas from the
 * CUDA toolkit: $OPBENCH_CUDA_HOME, else /usr/local/cuda, else the
 * loader's path), so nothing links against them. Each measurement runs in
 * a forked child that opens the device, runs the library, reports through
 * a pipe and exits: this process never starts CUDA, which a process that
 * forks GPU workers afterwards must not (and a library crash costs a
 * child). Math is FP32 FMA (cuDNN's CUDNN_FMA_MATH; cuBLAS's default,
 * which keeps TF32 off), as opbench's kernels: the reference check's
 * tolerance holds and the comparison is like for like. cuDNN's algorithm
 * is the fastest cudnnFindConvolutionForwardAlgorithm measures, as
 * frameworks pick it; padding must be symmetric (cuDNN's descriptor has one
 * pad per dimension); epilogues: bias, relu, relu6, add as separate cuDNN
 * calls, timed with the convolution; cuBLAS runs matmuls without an
 * epilogue (a workload with one is an instantiation error, class 1). */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baseline/baseline_impl.h"
#include "opbench/gpu.h"

enum { OB_CUDNN = 0, OB_CUBLAS = 1 };

/* ---- the libraries' entry points (their C ABI, written out) ------------------------ */
typedef void *cudnn_h;
typedef struct cudnn_perf {
  int algo, status;
  float time;
  size_t memory;
  int determinism, math_type, reserved[3];
} cudnn_perf;

typedef struct cudnn_api {
  void *dl;
  size_t (*cudnnGetVersion)(void);
  const char *(*cudnnGetErrorString)(int);
  int (*cudnnCreate)(cudnn_h *);
  int (*cudnnDestroy)(cudnn_h);
  int (*cudnnCreateTensorDescriptor)(void **);
  int (*cudnnSetTensor4dDescriptor)(void *, int fmt, int dtype, int n, int c, int h, int w);
  int (*cudnnDestroyTensorDescriptor)(void *);
  int (*cudnnCreateFilterDescriptor)(void **);
  int (*cudnnSetFilter4dDescriptor)(void *, int dtype, int fmt, int k, int c, int h, int w);
  int (*cudnnDestroyFilterDescriptor)(void *);
  int (*cudnnCreateConvolutionDescriptor)(void **);
  int (*cudnnSetConvolution2dDescriptor)(void *, int ph, int pw, int u, int v, int dh, int dw, int mode, int ctype);
  int (*cudnnSetConvolutionGroupCount)(void *, int);
  int (*cudnnSetConvolutionMathType)(void *, int);
  int (*cudnnDestroyConvolutionDescriptor)(void *);
  int (*cudnnGetConvolution2dForwardOutputDim)(void *, void *, void *, int *, int *, int *, int *);
  int (*cudnnFindConvolutionForwardAlgorithm)(cudnn_h, void *, void *, void *, void *, int, int *, cudnn_perf *);
  int (*cudnnGetConvolutionForwardWorkspaceSize)(cudnn_h, void *, void *, void *, void *, int, size_t *);
  int (*cudnnConvolutionForward)(cudnn_h, const void *, void *, const void *, void *, const void *, void *, int,
                                 void *, size_t, const void *, void *, void *);
  int (*cudnnAddTensor)(cudnn_h, const void *, void *, const void *, const void *, void *, void *);
  int (*cudnnCreateActivationDescriptor)(void **);
  int (*cudnnSetActivationDescriptor)(void *, int mode, int nan, double coef);
  int (*cudnnActivationForward)(cudnn_h, void *, const void *, void *, const void *, const void *, void *, void *);
  int (*cudnnDestroyActivationDescriptor)(void *);
} cudnn_api;

typedef struct cublas_api {
  void *dl;
  int (*cublasCreate_v2)(void **);
  int (*cublasDestroy_v2)(void *);
  int (*cublasGetVersion_v2)(void *, int *);
  int (*cublasSetMathMode)(void *, int);
  int (*cublasSgemm_v2)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                        const float *, float *, int);
  int (*cublasSgemmStridedBatched)(void *, int, int, int, int, int, const float *, const float *, int, long long,
                                   const float *, int, long long, const float *, float *, int, long long, int);
} cublas_api;

/* cudnn.h and cublas_api.h values used here */
enum {
  CUDNN_TENSOR_NCHW = 0,
  CUDNN_DATA_FLOAT = 0,
  CUDNN_CROSS_CORRELATION = 1,
  CUDNN_FMA_MATH = 3,
  CUDNN_ACTIVATION_RELU = 1,
  CUDNN_ACTIVATION_CLIPPED_RELU = 3,
  CUDNN_PROPAGATE_NAN = 1,
  CUBLAS_OP_N = 0,
  CUBLAS_OP_T = 1,
  CUBLAS_DEFAULT_MATH = 0,
};

static bool load_syms(void *dl, void *table, const char *const *names, size_t n, char *missing, size_t cap) {
  void **slots = (void **)((char *)table + sizeof(void *)); /* after dl */
  for (size_t i = 0; i < n; i++) {
    void *p = dlsym(dl, names[i]);
    if (!p) {
      snprintf(missing, cap, "%s", names[i]);
      return false;
    }
    slots[i] = p;
  }
  return true;
}

static void *open_lib(const char *const *names, char *err, size_t cap) {
  const char *home = getenv("OPBENCH_CUDA_HOME");
  if (!home || !*home) home = getenv("CUDA_HOME");
  if (!home || !*home) home = "/usr/local/cuda";
  for (int pass = 0; pass < 2; pass++) /* the toolkit's copy, then the loader's path */
    for (const char *const *n = names; *n; n++) {
      char path[512];
      if (pass) snprintf(path, sizeof path, "%s", *n);
      else snprintf(path, sizeof path, "%.400s/lib64/%s", home, *n);
      void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (dl) return dl;
      const char *e = dlerror();
      if (e && !err[0]) snprintf(err, cap, "%s", e);
    }
  return NULL;
}

static const char *const k_cudnn_syms[] = {
    "cudnnGetVersion", "cudnnGetErrorString", "cudnnCreate", "cudnnDestroy", "cudnnCreateTensorDescriptor",
    "cudnnSetTensor4dDescriptor", "cudnnDestroyTensorDescriptor", "cudnnCreateFilterDescriptor",
    "cudnnSetFilter4dDescriptor", "cudnnDestroyFilterDescriptor", "cudnnCreateConvolutionDescriptor",
    "cudnnSetConvolution2dDescriptor", "cudnnSetConvolutionGroupCount", "cudnnSetConvolutionMathType",
    "cudnnDestroyConvolutionDescriptor", "cudnnGetConvolution2dForwardOutputDim",
    "cudnnFindConvolutionForwardAlgorithm", "cudnnGetConvolutionForwardWorkspaceSize", "cudnnConvolutionForward",
    "cudnnAddTensor", "cudnnCreateActivationDescriptor", "cudnnSetActivationDescriptor", "cudnnActivationForward",
    "cudnnDestroyActivationDescriptor"};
static const char *const k_cublas_syms[] = {"cublasCreate_v2",   "cublasDestroy_v2", "cublasGetVersion_v2",
                                            "cublasSetMathMode", "cublasSgemm_v2",   "cublasSgemmStridedBatched"};
_Static_assert(sizeof(cudnn_api) == sizeof(void *) * (1 + sizeof k_cudnn_syms / sizeof k_cudnn_syms[0]),
               "cudnn_api out of step with its symbol list");
_Static_assert(sizeof(cublas_api) == sizeof(void *) * (1 + sizeof k_cublas_syms / sizeof k_cublas_syms[0]),
               "cublas_api out of step with its symbol list");

/* Loads the library; NULL with why[]. Per process (the measuring child
 * loads it again; the parent only to say whether it exists). */
static bool load_cudnn(cudnn_api *a, char *why, size_t cap) {
  memset(a, 0, sizeof *a);
  char err[256] = "";
  a->dl = open_lib((const char *const[]){"libcudnn.so.9", "libcudnn.so", NULL}, err, sizeof err);
  if (!a->dl) {
    snprintf(why, cap, "cuDNN (libcudnn.so.9) is not installed (%s)", err);
    return false;
  }
  char missing[64];
  if (!load_syms(a->dl, a, k_cudnn_syms, sizeof k_cudnn_syms / sizeof k_cudnn_syms[0], missing, sizeof missing)) {
    snprintf(why, cap, "cuDNN lacks %s (version 8 or 9 is needed)", missing);
    return false;
  }
  return true;
}

static bool load_cublas(cublas_api *a, char *why, size_t cap) {
  memset(a, 0, sizeof *a);
  char err[256] = "";
  a->dl = open_lib((const char *const[]){"libcublas.so", "libcublas.so.13", "libcublas.so.12", NULL}, err,
                   sizeof err);
  if (!a->dl) {
    snprintf(why, cap, "cuBLAS (libcublas) is not installed (%s)", err);
    return false;
  }
  char missing[64];
  if (!load_syms(a->dl, a, k_cublas_syms, sizeof k_cublas_syms / sizeof k_cublas_syms[0], missing, sizeof missing)) {
    snprintf(why, cap, "cuBLAS lacks %s", missing);
    return false;
  }
  return true;
}

/* ---- the measuring child ---------------------------------------------------------------- */
typedef struct child {
  ob_ctx *ctx;
  ob_gpu *g;
  const ob_bl_problem *p;
  ob_baseline_result *res;
  cudnn_api dnn;
  cublas_api blas;
  cudnn_h h;
  void *blas_h;
  void *x, *w, *y, *conv, *act, *bias_d, *res_d; /* descriptors */
  int algo;
  void *ws;
  size_t ws_bytes;
  void *dev[OB_BL_MAX_ARGS];
  void *call; /* dnn_call or blas_call, for the timing loop */
} child;

#define DNN(c, call) dnn_ok((c), (call), #call)
static bool dnn_ok(child *c, int st, const char *what) {
  if (!st) return true;
  if (!c->res->message[0])
    snprintf(c->res->message, sizeof c->res->message, "cuDNN: %.60s: %s", what, c->dnn.cudnnGetErrorString(st));
  return false;
}

static bool set_tensor(child *c, void **d, int n, int ch, int h, int w) {
  return DNN(c, c->dnn.cudnnCreateTensorDescriptor(d)) &&
         DNN(c, c->dnn.cudnnSetTensor4dDescriptor(*d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, ch, h, w));
}

static bool dnn_setup(child *c) {
  const ob_bl_problem *p = c->p;
  if (p->pt != p->pb || p->pl != p->pr) {
    c->res->error_no = OB_MERR_INSTANTIATION;
    snprintf(c->res->message, sizeof c->res->message,
             "cudnn: asymmetric padding %lld,%lld,%lld,%lld (cuDNN pads both sides alike)", (long long)p->pt,
             (long long)p->pl, (long long)p->pb, (long long)p->pr);
    return false;
  }
  if (!DNN(c, c->dnn.cudnnCreate(&c->h))) return false;
  if (!set_tensor(c, &c->x, (int)p->n, (int)p->c, (int)p->h, (int)p->w)) return false;
  if (!set_tensor(c, &c->y, (int)p->n, (int)p->k, (int)p->oh, (int)p->ow)) return false;
  if (!DNN(c, c->dnn.cudnnCreateFilterDescriptor(&c->w)) ||
      !DNN(c, c->dnn.cudnnSetFilter4dDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)p->k,
                                                (int)(p->c / p->g), (int)p->r, (int)p->s)))
    return false;
  if (!DNN(c, c->dnn.cudnnCreateConvolutionDescriptor(&c->conv)) ||
      !DNN(c, c->dnn.cudnnSetConvolution2dDescriptor(c->conv, (int)p->pt, (int)p->pl, (int)p->sh, (int)p->sw,
                                                     (int)p->dh, (int)p->dw, CUDNN_CROSS_CORRELATION,
                                                     CUDNN_DATA_FLOAT)) ||
      !DNN(c, c->dnn.cudnnSetConvolutionGroupCount(c->conv, (int)p->g)) ||
      !DNN(c, c->dnn.cudnnSetConvolutionMathType(c->conv, CUDNN_FMA_MATH)))
    return false;
  int on, oc, oh, ow;
  if (!DNN(c, c->dnn.cudnnGetConvolution2dForwardOutputDim(c->conv, c->x, c->w, &on, &oc, &oh, &ow))) return false;
  if (on != p->n || oc != p->k || oh != p->oh || ow != p->ow) {
    c->res->error_no = OB_MERR_INSTANTIATION;
    snprintf(c->res->message, sizeof c->res->message, "cudnn: output %dx%dx%dx%d, opbench's %lldx%lldx%lldx%lld",
             on, oc, oh, ow, (long long)p->n, (long long)p->k, (long long)p->oh, (long long)p->ow);
    return false;
  }
  cudnn_perf perf[8];
  int got = 0;
  if (!DNN(c, c->dnn.cudnnFindConvolutionForwardAlgorithm(c->h, c->x, c->w, c->conv, c->y, 8, &got, perf)))
    return false;
  c->algo = -1;
  for (int i = 0; i < got && c->algo < 0; i++)
    if (perf[i].status == 0) c->algo = perf[i].algo;
  if (c->algo < 0) {
    c->res->error_no = OB_MERR_INSTANTIATION;
    snprintf(c->res->message, sizeof c->res->message, "cudnn: no forward algorithm for this convolution");
    return false;
  }
  snprintf(c->res->impl, sizeof c->res->impl, "cudnn algo %d (FP32 FMA)", c->algo);
  if (!DNN(c, c->dnn.cudnnGetConvolutionForwardWorkspaceSize(c->h, c->x, c->w, c->conv, c->y, c->algo, &c->ws_bytes)))
    return false;
  if (c->ws_bytes && ob_gpu_alloc(c->g, c->ws_bytes, &c->ws) != OB_OK) return false;
  if (ob_bl_problem_has(p, OB_EPI_BIAS) && !set_tensor(c, &c->bias_d, 1, (int)p->k, 1, 1)) return false;
  if ((ob_bl_problem_has(p, OB_EPI_RELU) || ob_bl_problem_has(p, OB_EPI_RELU6)) &&
      !DNN(c, c->dnn.cudnnCreateActivationDescriptor(&c->act)))
    return false;
  return true;
}

static void *dptr(void *h) { return h; } /* a CUdeviceptr handle is the device address */

static int dnn_call(void *user) {
  child *c = user;
  const ob_bl_problem *p = c->p;
  float one = 1.0f, zero = 0.0f;
  int di = ob_bl_problem_arg(p, OB_BL_DATA), wi = ob_bl_problem_arg(p, OB_BL_WEIGHT);
  int bi = ob_bl_problem_arg(p, OB_BL_BIAS), ri = ob_bl_problem_arg(p, OB_BL_RESIDUAL);
  int oi = ob_bl_problem_arg(p, OB_BL_OUTPUT);
  void *y = dptr(c->dev[oi]);
  if (!DNN(c, c->dnn.cudnnConvolutionForward(c->h, &one, c->x, dptr(c->dev[di]), c->w, dptr(c->dev[wi]), c->conv,
                                             c->algo, c->ws, c->ws_bytes, &zero, c->y, y)))
    return 1;
  for (int i = 0; i < p->epi.n; i++) {
    switch (p->epi.step[i]) {
    case OB_EPI_BIAS:
      if (!DNN(c, c->dnn.cudnnAddTensor(c->h, &one, c->bias_d, dptr(c->dev[bi]), &one, c->y, y))) return 1;
      break;
    case OB_EPI_ADD:
      if (!DNN(c, c->dnn.cudnnAddTensor(c->h, &one, c->y, dptr(c->dev[ri]), &one, c->y, y))) return 1;
      break;
    case OB_EPI_RELU:
    case OB_EPI_RELU6: {
      bool six = p->epi.step[i] == OB_EPI_RELU6;
      if (!DNN(c, c->dnn.cudnnSetActivationDescriptor(c->act, six ? CUDNN_ACTIVATION_CLIPPED_RELU : CUDNN_ACTIVATION_RELU,
                                                      CUDNN_PROPAGATE_NAN, six ? 6.0 : 0.0)) ||
          !DNN(c, c->dnn.cudnnActivationForward(c->h, c->act, &one, c->y, y, &zero, c->y, y)))
        return 1;
      break;
    }
    default: return 1;
    }
  }
  return 0;
}

static bool blas_setup(child *c) {
  const ob_bl_problem *p = c->p;
  if (p->epi.n) {
    c->res->error_no = OB_MERR_INSTANTIATION;
    snprintf(c->res->message, sizeof c->res->message, "cublas: no epilogue (the workload has %d steps)", p->epi.n);
    return false;
  }
  int st = c->blas.cublasCreate_v2(&c->blas_h);
  if (!st) st = c->blas.cublasSetMathMode(c->blas_h, CUBLAS_DEFAULT_MATH);
  if (st) {
    snprintf(c->res->message, sizeof c->res->message, "cuBLAS: cublasCreate: status %d", st);
    return false;
  }
  int v = 0;
  c->blas.cublasGetVersion_v2(c->blas_h, &v);
  snprintf(c->res->impl, sizeof c->res->impl, "cublas %d sgemm%s (FP32)", v, p->batch > 1 ? " strided batched" : "");
  return true;
}

/* C[M,N] = A[M,K] B[N,K]^T, row-major, is column-major C^T = op_T(B) A. */
static int blas_call(void *user) {
  child *c = user;
  const ob_bl_problem *p = c->p;
  float one = 1.0f, zero = 0.0f;
  const float *A = dptr(c->dev[0]), *B = dptr(c->dev[1]);
  float *C = dptr(c->dev[p->nargs - 1]);
  int m = (int)p->m, n = (int)p->nn, k = (int)p->kk;
  int st;
  if (p->batch > 1)
    st = c->blas.cublasSgemmStridedBatched(c->blas_h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, B, k, (long long)n * k,
                                           A, k, (long long)m * k, &zero, C, n, (long long)m * n, (int)p->batch);
  else
    st = c->blas.cublasSgemm_v2(c->blas_h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, B, k, A, k, &zero, C, n);
  if (st && !c->res->message[0]) snprintf(c->res->message, sizeof c->res->message, "cuBLAS sgemm: status %d", st);
  return st;
}

static int time_call(void *user) {
  int (*call)(void *);
  void *fp = ((child *)user)->call;
  memcpy(&call, &fp, sizeof call); /* POSIX: object and function pointers convert */
  return call(user);
}
static double time_clock(void *user) { return ob_gpu_clock(((child *)user)->g); }

/* Two readings of the device clock with nothing between: its overhead. */
static double clock_overhead(ob_gpu *g) {
  double best = INFINITY;
  for (int run = 0; run < 3; run++) {
    double c0 = ob_gpu_clock(g), c = c0;
    for (int i = 0; i < 20; i++) c = ob_gpu_clock(g);
    if ((c - c0) / 20 > 0 && (c - c0) / 20 < best) best = (c - c0) / 20;
  }
  return isfinite(best) ? best : 0;
}

static void child_run(int which, const ob_target *tgt, const ob_workload *wl, const ob_bl_problem *p,
                      const ob_timing_opts *t, uint64_t seed, ob_baseline_result *res) {
  child c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.res = res;
  res->error_no = OB_MERR_RUNTIME;
  char why[400] = "";
  void *host[OB_BL_MAX_ARGS] = {0};
  ob_bl_checker ck;
  memset(&ck, 0, sizeof ck);
  if (ob_ctx_new(&c.ctx) != OB_OK) return;
  if (ob_gpu_open(c.ctx, tgt, &c.g) != OB_OK) {
    snprintf(res->message, sizeof res->message, "%s", ob_ctx_errmsg(c.ctx));
    goto out;
  }
  if (which == OB_CUDNN ? !load_cudnn(&c.dnn, why, sizeof why) : !load_cublas(&c.blas, why, sizeof why)) {
    snprintf(res->message, sizeof res->message, "%s", why);
    goto out;
  }
  if (ob_bl_checker_init(c.ctx, wl, p, seed, &ck) != OB_OK) {
    snprintf(res->message, sizeof res->message, "%s", ob_ctx_errmsg(c.ctx));
    goto out;
  }
  for (int i = 0; i < p->nargs; i++) {
    size_t b = (size_t)p->args[i].numel * sizeof(float);
    host[i] = malloc(b ? b : 4);
    if (!host[i] || ob_gpu_alloc(c.g, b, &c.dev[i]) != OB_OK) {
      snprintf(res->message, sizeof res->message, "out of memory for argument %s", p->args[i].name);
      goto out;
    }
  }
  ob_bl_checker_fill(&ck, host);
  for (int i = 0; i < p->nargs; i++)
    if (ob_gpu_upload(c.g, c.dev[i], host[i], (size_t)p->args[i].numel * sizeof(float)) != OB_OK) goto lost;
  if (which == OB_CUDNN ? !dnn_setup(&c) : !blas_setup(&c)) goto out;
  int (*call)(void *) = which == OB_CUDNN ? dnn_call : blas_call;
  if (call(&c) || ob_gpu_sync(c.g) != OB_OK) goto lost; /* the checked run, also the warm-up */
  int o = p->nargs - 1;
  if (ob_gpu_download(c.g, host[o], c.dev[o], (size_t)p->args[o].numel * sizeof(float)) != OB_OK) goto lost;
  char msg[sizeof res->message];
  msg[0] = '\0';
  if (ob_bl_checker_check(&ck, host, msg, sizeof msg) != OB_OK) {
    res->error_no = OB_MERR_WRONG_ANSWER;
    snprintf(res->message, sizeof res->message, "%s", msg);
    goto out;
  }
  /* the timing loop on the device's clock, as the GPU runner times
   * opbench's kernels; no cache flush on a GPU */
  memcpy(&c.call, &call, sizeof c.call);
  ob_timing_opts topt = *t;
  topt.flush = false;
  topt.clock = time_clock;
  topt.timer_overhead_s = clock_overhead(c.g);
  int rc = ob_time_loop(&topt, ob_gpu_clock(c.g) + t->timeout_s, time_call, NULL, &c, &res->timing);
  if (ob_gpu_error(c.g)) goto lost;
  if (rc == OB_TIME_DEADLINE) {
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "timing passed %g s", t->timeout_s);
  } else if (rc) {
    goto lost;
  } else {
    res->error_no = OB_MERR_NONE;
    res->message[0] = '\0';
  }
  goto out;
lost:
  res->error_no = OB_MERR_RUNTIME;
  if (!res->message[0] || ob_gpu_error(c.g))
    snprintf(res->message, sizeof res->message, "%s", ob_gpu_error(c.g) ? ob_gpu_errmsg(c.g) : ob_ctx_errmsg(c.ctx));
out:
  /* the process ends right after: the device and libraries go with it */
  for (int i = 0; i < p->nargs; i++) free(host[i]);
  ob_bl_checker_clear(&ck);
}

/* ---- the handle --------------------------------------------------------------------- */
typedef struct cuda_bl {
  ob_ctx *ctx;
  bool have_dnn, have_blas;
  ob_target *target;
  char describe[320];
} cuda_bl;

static ob_status cuda_measure(void *self, const ob_workload *wl, const ob_bl_problem *p, const ob_timing_opts *t,
                              uint64_t seed, ob_baseline_result *res) {
  cuda_bl *b = self;
  /* convolutions through cuDNN, matrix products through cuBLAS */
  int which = p->kind == OB_BL_CONV2D ? OB_CUDNN : p->kind == OB_BL_MATMUL ? OB_CUBLAS : -1;
  if (which < 0 || (which == OB_CUDNN && !b->have_dnn) || (which == OB_CUBLAS && !b->have_blas)) {
    res->error_no = OB_MERR_INSTANTIATION;
    snprintf(res->message, sizeof res->message, "the GPU baseline has no %s for %s",
             which < 0 ? "library" : which == OB_CUDNN ? "cuDNN" : "cuBLAS", wl->op);
    return OB_OK;
  }
  int fds[2];
  if (pipe(fds) != 0) return ob_fail(b->ctx, OB_ERR_SYSTEM, "baseline: pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return ob_fail(b->ctx, OB_ERR_SYSTEM, "baseline: fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    ob_baseline_result r;
    memset(&r, 0, sizeof r);
    r.flops = res->flops;
    child_run(which, b->target, wl, p, t, seed, &r);
    const char *q = (const char *)&r;
    size_t left = sizeof r;
    while (left) {
      ssize_t k = write(fds[1], q, left);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      q += k;
      left -= (size_t)k;
    }
    _exit(0);
  }
  close(fds[1]);
  ob_baseline_result r;
  char *q = (char *)&r;
  size_t got = 0;
  /* the device's start and cuDNN's algorithm search come on top of timing */
  double deadline = ob_now_s() + t->timeout_s + 120.0;
  bool timed_out = false;
  while (got < sizeof r) {
    double left = deadline - ob_now_s();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    int rc = poll(&pfd, 1, (int)ceil(left * 1000));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    ssize_t k = read(fds[0], q + got, sizeof r - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fds[0]);
  if (got < sizeof r) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double flops = res->flops;
  if (got == sizeof r) {
    *res = r;
  } else {
    memset(res, 0, sizeof *res);
    res->error_no = timed_out ? OB_MERR_RUN_TIMEOUT : OB_MERR_RUNTIME;
    if (timed_out) snprintf(res->message, sizeof res->message, "the baseline ran past its deadline");
    else if (WIFSIGNALED(status))
      snprintf(res->message, sizeof res->message, "the baseline's process crashed: signal %d", WTERMSIG(status));
    else
      snprintf(res->message, sizeof res->message, "the baseline's process ended without a result");
  }
  res->flops = flops;
  return OB_OK;
}

static const char *cuda_describe(const void *self) { return ((const cuda_bl *)self)->describe; }

static void cuda_free(void *self) {
  cuda_bl *b = self;
  ob_target_free(b->target);
  free(b);
}

/* no primitives on caller memory: the graph runtime runs on the host */
static const struct ob_baseline_i k_cuda_i = {
    .name = "cudnn", .measure = cuda_measure, .describe = cuda_describe, .free = cuda_free};

ob_status ob_baseline_cudnn_new(ob_ctx *ctx, const ob_target *target, ob_baseline **out) {
  OB_ASSERT(ctx && out);
  *out = NULL;
  if (!target || ob_target_get_facts(target)->kind != OB_TARGET_CUDA)
    return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "cudnn measures on a CUDA GPU: it needs a cuda target (got '%s'; e.g. --target cuda)",
                   target ? ob_target_str(target) : "the host's");
  ob_status st = ob_target_check_runnable(ctx, target);
  if (st) {
    ob_fail_prefix(ctx, "cudnn");
    return st;
  }
  /* the libraries, looked up here (each measuring child loads its own) */
  char why_dnn[400], why_blas[400];
  cudnn_api da;
  cublas_api ba;
  bool dnn = load_cudnn(&da, why_dnn, sizeof why_dnn), blas = load_cublas(&ba, why_blas, sizeof why_blas);
  if (!dnn && !blas) return ob_fail(ctx, OB_ERR_UNSUPPORTED, "cudnn: %s; %s", why_dnn, why_blas);
  ob_baseline *b = calloc(1, sizeof *b);
  cuda_bl *d = calloc(1, sizeof *d);
  if (!b || !d) {
    free(b);
    free(d);
    return ob_fail(ctx, OB_ERR_NOMEM, "cudnn: out of memory");
  }
  d->ctx = ctx;
  d->have_dnn = dnn;
  d->have_blas = blas;
  st = ob_target_parse(ctx, ob_target_str(target), &d->target);
  if (st) {
    free(b);
    free(d);
    return st;
  }
  const ob_gpu_facts *g = &ob_target_get_facts(target)->gpu;
  char libs[128];
  if (dnn) snprintf(libs, sizeof libs, "cuDNN %zu%s", da.cudnnGetVersion(), blas ? " + cuBLAS" : "");
  else snprintf(libs, sizeof libs, "cuBLAS (no cuDNN)");
  snprintf(d->describe, sizeof d->describe, "%s on %s (%s, FP32 FMA)", libs, g->device_name, ob_target_str(target));
  b->vt = &k_cuda_i;
  b->self = d;
  b->ctx = ctx;
  *out = b;
  return OB_OK;
}
