/* onednn.c: the oneDNN baseline (libdnnl C API, v2.x: op descriptors made
 * with *_desc_init, then dnnl_primitive_desc_create). Per measurement: the
 * primitive descriptor with format "any" for data, weights and output (the
 * library's best formats; pooling, which cannot choose its source format,
 * gets the blocked layout a convolution before it would leave), bias from
 * the bias argument and the other epilogue steps as post-ops (relu: eltwise
 * relu; relu6: eltwise clip 0..6; add: sum post-op, the output buffer
 * preloaded with the residual); the caller-layout inputs reordered into the
 * primitive's formats once; a user-managed scratchpad; one discarded
 * warm-up whose output is reordered back and checked; then ob_time_loop
 * (kernel.h, the runner's loop) times only
 * dnnl_primitive_execute (+ stream wait). Under the sum post-op the
 * timed calls keep accumulating into the output, as an in-place residual
 * add does; values stay finite.
 *
 * Threading: the installed build's CPU runtime decides. OpenMP: the thread
 * count is the measuring thread's OpenMP ICV (omp_set_num_threads), set for
 * the span of one measurement, primitive creation included (oneDNN sizes
 * its work split by it there), and the OpenMP team is pinned one thread per
 * core, as ob_runner pins opbench's pool; both are restored afterwards. The
 * OpenMP entry points are looked up at run time (libdnnl brought libgomp
 * in), so libopbench is not built with -fopenmp. Sequential builds run on
 * the pinned calling thread. The handle owns the engine and the stream. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "baseline/baseline_impl.h"

typedef struct omp_api {
  void *lib; /* an already-loaded OpenMP runtime reopened with RTLD_NOLOAD, or NULL */
  void (*set_num_threads)(int);
  int (*get_max_threads)(void);
  int (*get_thread_num)(void);
  /* libgomp's ABI for "#pragma omp parallel num_threads(n)" (libiomp5
   * exports it too) */
  void (*parallel)(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags);
  int (*pause_all)(int kind); /* OpenMP 5.0's omp_pause_resource_all, or NULL */
} omp_api;

typedef struct thread_state {
  int old_max;      /* OpenMP ICV to restore, or 0 */
  cpu_set_t *saved; /* masks to restore, or NULL */
  bool team;        /* saved[] holds the whole team's masks */
} thread_state;

typedef struct onednn {
  ob_ctx *ctx;
  dnnl_engine_t eng;
  dnnl_stream_t strm;
  unsigned runtime; /* DNNL_RUNTIME_* of the CPU engine */
  omp_api omp;
  int nthreads;
  int *cores;
  char desc[192];
  thread_state span; /* ob_baseline_enter .. _leave */
} onednn;

/* ---- threads ------------------------------------------------------------ */

static void *omp_sym(omp_api *o, const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  if (p) return p;
  static const char *const libs[] = {"libgomp.so.1", "libiomp5.so", "libomp.so"};
  for (size_t i = 0; !o->lib && i < sizeof libs / sizeof libs[0]; i++)
    o->lib = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
  return o->lib ? dlsym(o->lib, name) : NULL;
}

typedef struct pin_job {
  const onednn *d;
  cpu_set_t *saved; /* [nthreads] */
  bool restore;
  atomic_int fails;
} pin_job;

/* Runs on every thread of the team: thread i to cores[i], or back to the
 * mask it had. */
static void pin_body(void *arg) {
  pin_job *j = arg;
  int tid = j->d->omp.get_thread_num ? j->d->omp.get_thread_num() : 0;
  if (tid < 0 || tid >= j->d->nthreads) return;
  pthread_t self = pthread_self();
  if (j->restore) {
    pthread_setaffinity_np(self, sizeof(cpu_set_t), &j->saved[tid]);
    return;
  }
  if (pthread_getaffinity_np(self, sizeof(cpu_set_t), &j->saved[tid])) atomic_fetch_add(&j->fails, 1);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(j->d->cores[tid], &set);
  if (pthread_setaffinity_np(self, sizeof set, &set)) atomic_fetch_add(&j->fails, 1);
}

static void threads_enter(onednn *d, thread_state *ts) {
  memset(ts, 0, sizeof *ts);
  bool omp = d->runtime == DNNL_RUNTIME_OMP;
  if (omp) {
    ts->old_max = d->omp.get_max_threads();
    d->omp.set_num_threads(d->nthreads);
  }
  ts->saved = calloc((size_t)d->nthreads, sizeof(cpu_set_t));
  if (!ts->saved) return; /* unpinned, still correct */
  pin_job j = {.d = d, .saved = ts->saved, .restore = false};
  atomic_init(&j.fails, 0);
  if (omp && d->omp.parallel && d->omp.get_thread_num) {
    d->omp.parallel(pin_body, &j, (unsigned)d->nthreads, 0);
    ts->team = true;
  } else {
    pin_body(&j); /* the calling thread: all of a sequential build */
  }
  if (atomic_load(&j.fails))
    ob_log(d->ctx, OB_LOG_WARN, "onednn: could not pin %d thread(s) to their cores", atomic_load(&j.fails));
}

static void threads_leave(onednn *d, thread_state *ts) {
  if (ts->saved) {
    pin_job j = {.d = d, .saved = ts->saved, .restore = true};
    atomic_init(&j.fails, 0);
    if (ts->team) d->omp.parallel(pin_body, &j, (unsigned)d->nthreads, 0);
    else pin_body(&j);
    free(ts->saved);
  }
  if (d->runtime == DNNL_RUNTIME_OMP && ts->old_max > 0) d->omp.set_num_threads(ts->old_max);
  memset(ts, 0, sizeof *ts);
}

/* After a measurement. The OpenMP team's threads would spin-wait for their
 * next parallel region (libgomp: 300000 pause instructions, milliseconds)
 * on the cores where the next measurement, opbench's kernel in the
 * runner's process, runs: at two threads that took a third off the kernel
 * timed right after oneDNN, and the comparison measured the spinning. The
 * runtime releases its threads now (OpenMP 5.0's omp_pause_resource_all,
 * soft: they are made again, outside the timing, by the next measurement's
 * warm-up); a runtime without it keeps them. Not after ob_baseline_leave:
 * a graph run keeps its team between runs. */
static void threads_release(onednn *d) {
  if (d->runtime == DNNL_RUNTIME_OMP && d->omp.pause_all) d->omp.pause_all(1 /* omp_pause_soft */);
}

/* ---- memory descriptors ----------------------------------------------- */

static dnnl_status_t md_tag(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag) {
  dnnl_dims_t d;
  for (int i = 0; i < nd; i++) d[i] = dims[i];
  return dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, tag);
}

/* The caller's layout of an argument (what ob_task_fill produced). */
static dnnl_status_t user_md(const ob_bl_problem *p, ob_bl_role role, dnnl_memory_desc_t *md) {
  switch (p->kind) {
  case OB_BL_CONV2D:
    switch (role) {
    case OB_BL_DATA: return md_tag(md, 4, (int64_t[]){p->n, p->c, p->h, p->w}, dnnl_nchw);
    case OB_BL_WEIGHT:
      if (p->g == 1) return md_tag(md, 4, (int64_t[]){p->k, p->c, p->r, p->s}, dnnl_oihw);
      return md_tag(md, 5, (int64_t[]){p->g, p->k / p->g, p->c / p->g, p->r, p->s}, dnnl_goihw);
    case OB_BL_BIAS: return md_tag(md, 1, (int64_t[]){p->k}, dnnl_a);
    default: return md_tag(md, 4, (int64_t[]){p->n, p->k, p->oh, p->ow}, dnnl_nchw);
    }
  case OB_BL_MATMUL: {
    /* batch 1 is a 2-D matmul */
    int nd = p->batch > 1 ? 3 : 2, o = nd - 2;
    int64_t dims[3] = {p->batch};
    switch (role) {
    case OB_BL_DATA:
      dims[o] = p->m, dims[o + 1] = p->kk;
      return md_tag(md, nd, dims, nd == 3 ? dnnl_abc : dnnl_ab);
    case OB_BL_WEIGHT: {
      /* logical [K, N] over B[N, K] row-major: element (k, n) at n*K + k */
      dnnl_dims_t dd = {p->batch}, st = {p->nn * p->kk};
      dd[o] = p->kk, dd[o + 1] = p->nn;
      st[o] = 1, st[o + 1] = p->kk;
      return dnnl_memory_desc_init_by_strides(md, nd, dd, dnnl_f32, st);
    }
    case OB_BL_BIAS:
      dims[0] = 1, dims[o] = 1, dims[o + 1] = p->nn;
      return md_tag(md, nd, dims, nd == 3 ? dnnl_abc : dnnl_ab);
    default:
      dims[o] = p->m, dims[o + 1] = p->nn;
      return md_tag(md, nd, dims, nd == 3 ? dnnl_abc : dnnl_ab);
    }
  }
  case OB_BL_POOL2D:
    if (role == OB_BL_DATA) return md_tag(md, 4, (int64_t[]){p->n, p->c, p->h, p->w}, dnnl_nchw);
    return md_tag(md, 4, (int64_t[]){p->n, p->c, p->oh, p->ow}, dnnl_nchw);
  default: return dnnl_invalid_arguments;
  }
}

/* The same shape, format left to the library. */
static dnnl_status_t any_md(const ob_bl_problem *p, ob_bl_role role, dnnl_memory_desc_t *md) {
  dnnl_status_t s = user_md(p, role, md);
  if (s != dnnl_success) return s;
  dnnl_dims_t dims;
  memcpy(dims, md->dims, sizeof dims);
  return dnnl_memory_desc_init_by_tag(md, md->ndims, dims, dnnl_f32, dnnl_format_tag_any);
}

static int dnnl_arg_of(ob_bl_role role) {
  switch (role) {
  case OB_BL_DATA: return DNNL_ARG_SRC;
  case OB_BL_WEIGHT: return DNNL_ARG_WEIGHTS;
  case OB_BL_BIAS: return DNNL_ARG_BIAS;
  default: return DNNL_ARG_DST; /* the residual is preloaded into dst */
  }
}

/* ---- primitive descriptors -------------------------------------------- */

static dnnl_status_t make_attr(const ob_bl_problem *p, dnnl_primitive_attr_t *out) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_status_t s = dnnl_primitive_attr_create(&attr);
  /* scratchpad passed at execution: no allocation inside the timed call */
  if (s == dnnl_success) s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (s == dnnl_success) s = dnnl_post_ops_create(&po);
  for (int i = 0; i < p->epi.n && s == dnnl_success; i++) {
    switch (p->epi.step[i]) {
    case OB_EPI_BIAS: break; /* the bias argument; first step only */
    case OB_EPI_RELU: s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f); break;
    case OB_EPI_RELU6: s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, 6.0f); break;
    case OB_EPI_ADD: s = dnnl_post_ops_append_sum(po, 1.0f); break;
    default: s = dnnl_invalid_arguments; break;
    }
  }
  if (s == dnnl_success && dnnl_post_ops_len(po) > 0) s = dnnl_primitive_attr_set_post_ops(attr, po);
  dnnl_post_ops_destroy(po);
  if (s != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return s;
  }
  *out = attr;
  return dnnl_success;
}

/* The blocked activation layout of the widest vector the library uses. */
static dnnl_format_tag_t blocked_tag(void) {
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if ((isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core) return dnnl_nChw16c;
  if ((isa & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2) return dnnl_nChw8c;
  return dnnl_nchw;
}

static dnnl_status_t make_pd(onednn *d, const ob_bl_problem *p, dnnl_primitive_desc_t *pd) {
  dnnl_memory_desc_t src, wei, bias, dst;
  bool has_bias = ob_bl_problem_has(p, OB_EPI_BIAS);
  dnnl_primitive_attr_t attr = NULL;
  dnnl_status_t s = make_attr(p, &attr);
  if (s != dnnl_success) return s;
  switch (p->kind) {
  case OB_BL_CONV2D: {
    dnnl_convolution_desc_t cd;
    s = any_md(p, OB_BL_DATA, &src);
    if (s == dnnl_success) s = any_md(p, OB_BL_WEIGHT, &wei);
    if (s == dnnl_success && has_bias) s = user_md(p, OB_BL_BIAS, &bias);
    if (s == dnnl_success) s = any_md(p, OB_BL_OUTPUT, &dst);
    /* oneDNN counts dilation as the gap between taps: d - 1 */
    dnnl_dims_t strides = {p->sh, p->sw}, dil = {p->dh - 1, p->dw - 1};
    dnnl_dims_t pad_l = {p->pt, p->pl}, pad_r = {p->pb, p->pr};
    if (s == dnnl_success)
      s = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                     p->winograd ? dnnl_convolution_winograd
                                                                 : dnnl_convolution_direct,
                                                     &src, &wei, has_bias ? &bias : NULL, &dst, strides,
                                                     dil, pad_l, pad_r);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, &cd, attr, d->eng, NULL);
    break;
  }
  case OB_BL_MATMUL: {
    dnnl_matmul_desc_t md;
    s = any_md(p, OB_BL_DATA, &src);
    /* weights may be pre-packed into the library's format, as a deployment
     * would; the caller's B[N,K] is read through a transposed descriptor */
    if (s == dnnl_success) s = any_md(p, OB_BL_WEIGHT, &wei);
    if (s == dnnl_success && has_bias) s = user_md(p, OB_BL_BIAS, &bias);
    if (s == dnnl_success) s = any_md(p, OB_BL_OUTPUT, &dst);
    if (s == dnnl_success) s = dnnl_matmul_desc_init(&md, &src, &wei, has_bias ? &bias : NULL, &dst);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, &md, attr, d->eng, NULL);
    break;
  }
  case OB_BL_POOL2D: {
    dnnl_pooling_v2_desc_t pool;
    static const dnnl_alg_kind_t alg[OB_BL_POOL_COUNT] = {
        dnnl_pooling_max, dnnl_pooling_avg_include_padding, dnnl_pooling_avg_exclude_padding};
    s = md_tag(&src, 4, (int64_t[]){p->n, p->c, p->h, p->w}, blocked_tag());
    if (s == dnnl_success) s = any_md(p, OB_BL_OUTPUT, &dst);
    dnnl_dims_t strides = {p->sh, p->sw}, kernel = {p->r, p->s}, dil = {0, 0};
    dnnl_dims_t pad_l = {p->pt, p->pl}, pad_r = {p->pb, p->pr};
    if (s == dnnl_success)
      s = dnnl_pooling_v2_forward_desc_init(&pool, dnnl_forward_inference, alg[p->pool], &src, &dst,
                                            strides, kernel, dil, pad_l, pad_r);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, &pool, attr, d->eng, NULL);
    break;
  }
  default: s = dnnl_invalid_arguments; break;
  }
  dnnl_primitive_attr_destroy(attr);
  return s;
}

/* ---- execution ---------------------------------------------------------- */

static dnnl_status_t reorder(onednn *d, dnnl_memory_t from, dnnl_memory_t to) {
  const dnnl_memory_desc_t *fmd, *tmd;
  dnnl_primitive_desc_t rpd = NULL;
  dnnl_primitive_t r = NULL;
  dnnl_status_t s = dnnl_memory_get_memory_desc(from, &fmd);
  if (s == dnnl_success) s = dnnl_memory_get_memory_desc(to, &tmd);
  if (s == dnnl_success) s = dnnl_reorder_primitive_desc_create(&rpd, fmd, d->eng, tmd, d->eng, NULL);
  if (s == dnnl_success) s = dnnl_primitive_create(&r, rpd);
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  if (s == dnnl_success) s = dnnl_primitive_execute(r, d->strm, 2, args);
  if (s == dnnl_success) s = dnnl_stream_wait(d->strm);
  dnnl_primitive_destroy(r);
  dnnl_primitive_desc_destroy(rpd);
  return s;
}

typedef struct dn_run {
  dnnl_primitive_t prim;
  dnnl_stream_t strm;
  int nargs;
  dnnl_exec_arg_t args[OB_BL_MAX_ARGS];
  int nflush;
  const void *flush_ptr[OB_BL_MAX_ARGS];
  size_t flush_bytes[OB_BL_MAX_ARGS];
} dn_run;

static int run_once(void *user) {
  dn_run *r = user;
  dnnl_status_t s = dnnl_primitive_execute(r->prim, r->strm, r->nargs, r->args);
  if (s == dnnl_success) s = dnnl_stream_wait(r->strm);
  return (int)s;
}

static void flush_inputs(void *user) {
  dn_run *r = user;
  for (int i = 0; i < r->nflush; i++) ob_cache_flush(r->flush_ptr[i], r->flush_bytes[i]);
}

static void dn_error(ob_baseline_result *res, dnnl_status_t s, const char *op, const char *what) {
  res->error_no = s == dnnl_unimplemented ? OB_MERR_INSTANTIATION : OB_MERR_RUNTIME;
  snprintf(res->message, sizeof res->message, "onednn: %s: %s failed: %s%s", op, what, dnnl_status2str(s),
           s == dnnl_unimplemented ? " (no implementation for this workload)" : "");
}

#define DN(call, what)                                                                             \
  do {                                                                                             \
    dnnl_status_t s_ = (call);                                                                     \
    if (s_ != dnnl_success) {                                                                      \
      dn_error(res, s_, wl->op, what);                                                             \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

/* The memories the timed primitive reads and writes (its own formats, the
 * destination, the scratchpad) on huge pages where they are big, as
 * ob_runner times opbench's kernels: the same pages for both sides. Falls
 * back to oneDNN's own allocation. *own is the block to free (or NULL). */
static dnnl_status_t mem_create_big(dnnl_memory_t *m, const dnnl_memory_desc_t *md, dnnl_engine_t eng,
                                    void **own) {
  size_t sz = dnnl_memory_desc_get_size(md);
  *own = sz >= OB_MEM_BIG_MIN ? ob_mem_alloc_big(sz) : NULL;
  return dnnl_memory_create(m, md, eng, *own ? *own : DNNL_MEMORY_ALLOCATE);
}

static ob_status dn_measure(void *self, const ob_workload *wl, const ob_bl_problem *p,
                            const ob_timing_opts *t, uint64_t seed, ob_baseline_result *res) {
  onednn *d = self;
  const double deadline = ob_now_s() + t->timeout_s;
  ob_status st = OB_OK;
  ob_bl_checker ck;
  memset(&ck, 0, sizeof ck);
  void *ubuf[OB_BL_MAX_ARGS] = {0};
  dnnl_memory_t umem[OB_BL_MAX_ARGS] = {0}, pmem[OB_BL_MAX_ARGS] = {0};
  dnnl_memory_t dst = NULL, scratch = NULL;
  void *own[OB_BL_MAX_ARGS + 2] = {0}; /* huge-page blocks: pmem[], dst, scratch */
  dnnl_primitive_desc_t pd = NULL;
  dn_run run;
  memset(&run, 0, sizeof run);
  run.strm = d->strm;
  const int o = p->nargs - 1;
  thread_state ts;
  threads_enter(d, &ts);

  st = ob_bl_checker_init(d->ctx, wl, p, seed, &ck);
  if (st) goto out;
  if (ck.task) res->flops = ob_task_flops(ck.task);
  for (int i = 0; i < p->nargs; i++) {
    size_t bytes = ((size_t)p->args[i].numel * sizeof(float) + 63) / 64 * 64;
    ubuf[i] = aligned_alloc(64, bytes ? bytes : 64);
    if (!ubuf[i]) {
      st = ob_fail(d->ctx, OB_ERR_NOMEM, "onednn: out of memory for %s's buffers", wl->op);
      goto out;
    }
  }
  ob_bl_checker_fill(&ck, ubuf);

  DN(make_pd(d, p, &pd), "creating the primitive descriptor");
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
    snprintf(res->impl, sizeof res->impl, "%s", impl);

  /* caller-layout memories over ubuf, the primitive's own memories, and the
   * reorders between them, all before timing */
  for (int i = 0; i < p->nargs; i++) {
    dnnl_memory_desc_t umd;
    DN(user_md(p, p->args[i].role, &umd), "describing an argument");
    DN(dnnl_memory_create(&umem[i], &umd, d->eng, ubuf[i]), "creating a memory");
  }
  const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_DST);
  DN(dmd ? dnnl_success : dnnl_runtime_error, "querying the destination format");
  DN(mem_create_big(&dst, dmd, d->eng, &own[OB_BL_MAX_ARGS]),
     "allocating the destination");
  for (int i = 0; i < o; i++) {
    ob_bl_role role = p->args[i].role;
    if (role == OB_BL_RESIDUAL) {
      DN(reorder(d, umem[i], dst), "preloading the residual");
      continue;
    }
    int arg = dnnl_arg_of(role);
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    DN(md ? dnnl_success : dnnl_runtime_error, "querying an argument's format");
    DN(mem_create_big(&pmem[i], md, d->eng, &own[i]), "allocating an argument");
    DN(reorder(d, umem[i], pmem[i]), "reordering an input");
    run.args[run.nargs++] = (dnnl_exec_arg_t){arg, pmem[i]};
    void *h = NULL;
    dnnl_memory_get_data_handle(pmem[i], &h);
    run.flush_ptr[run.nflush] = h;
    run.flush_bytes[run.nflush++] = dnnl_memory_desc_get_size(md);
  }
  run.args[run.nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, dst};
  if (ob_bl_problem_has(p, OB_EPI_ADD)) { /* dst is an input too */
    void *h = NULL;
    dnnl_memory_get_data_handle(dst, &h);
    run.flush_ptr[run.nflush] = h;
    run.flush_bytes[run.nflush++] = dnnl_memory_desc_get_size(dmd);
  }
  const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (smd && dnnl_memory_desc_get_size(smd) > 0) {
    DN(mem_create_big(&scratch, smd, d->eng, &own[OB_BL_MAX_ARGS + 1]),
       "allocating the scratchpad");
    run.args[run.nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratch};
  }
  DN(dnnl_primitive_create(&run.prim, pd), "creating the primitive");

  /* the discarded warm-up is the call that is checked, as in ob_runner */
  DN((dnnl_status_t)run_once(&run), "executing");
  DN(reorder(d, dst, umem[o]), "reordering the output back");
  char msg[sizeof res->message];
  msg[0] = 0;
  ob_status cst = ob_bl_checker_check(&ck, ubuf, msg, sizeof msg);
  if (cst == OB_ERR_WRONG_ANSWER) {
    res->error_no = OB_MERR_WRONG_ANSWER;
    snprintf(res->message, sizeof res->message, "onednn (%s): %.400s", res->impl, msg);
    goto out;
  }
  if (cst) {
    st = cst;
    goto out;
  }

  /* run_once returns a dnnl_status_t: never OB_TIME_DEADLINE (INT_MIN) */
  int rc = ob_time_loop(t, deadline, run_once, flush_inputs, &run, &res->timing);
  if (rc == OB_TIME_DEADLINE) {
    res->error_no = OB_MERR_RUN_TIMEOUT;
    snprintf(res->message, sizeof res->message, "onednn: %s: timing ran past %g s", wl->op, t->timeout_s);
  } else if (rc) {
    DN((dnnl_status_t)rc, "executing");
  }

out:
  dnnl_primitive_destroy(run.prim);
  dnnl_memory_destroy(scratch);
  dnnl_memory_destroy(dst);
  for (int i = 0; i < OB_BL_MAX_ARGS; i++) {
    dnnl_memory_destroy(pmem[i]);
    dnnl_memory_destroy(umem[i]);
    free(ubuf[i]);
  }
  for (int i = 0; i < OB_BL_MAX_ARGS + 2; i++) ob_mem_free_big(own[i]);
  dnnl_primitive_desc_destroy(pd);
  ob_bl_checker_clear(&ck);
  threads_leave(d, &ts);
  threads_release(d);
  if (res->error_no != OB_MERR_NONE) memset(&res->timing, 0, sizeof res->timing);
  return st;
}

/* ---- primitives on caller memory (the graph runtime) --------------------- */

typedef struct dn_prim {
  ob_baseline_prim base;
  onednn *d;
  dnnl_primitive_t prim;
  int nargs;
  dnnl_exec_arg_t args[OB_BL_MAX_ARGS + 2];
  /* memories whose data handle is the caller's buffer of workload argument
   * warg[i], set before every call */
  int ndyn;
  dnnl_memory_t dyn[OB_BL_MAX_ARGS];
  int warg[OB_BL_MAX_ARGS];
  dnnl_memory_t owned[OB_BL_MAX_ARGS + 2]; /* reordered constants, scratchpad */
  int nowned;
  /* the sum post-op fallback for a residual: the output preloaded with it */
  int res_arg, out_arg;
  size_t out_bytes;
} dn_prim;

static dnnl_format_tag_t block_tag(int block) {
  switch (block) {
  case 16: return dnnl_nChw16c;
  case 8: return dnnl_nChw8c;
  case 4: return dnnl_nChw4c;
  default: return dnnl_nchw;
  }
}

/* Post-ops of the epilogue; the residual as a binary add reading src1 in
 * res_md (binary), or as the sum post-op (the output preloaded). */
static dnnl_status_t prim_attr(const ob_bl_problem *p, const dnnl_memory_desc_t *res_md, bool binary,
                               dnnl_primitive_attr_t *out) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_status_t s = dnnl_primitive_attr_create(&attr);
  if (s == dnnl_success) s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (s == dnnl_success) s = dnnl_post_ops_create(&po);
  for (int i = 0; i < p->epi.n && s == dnnl_success; i++) {
    switch (p->epi.step[i]) {
    case OB_EPI_BIAS: break;
    case OB_EPI_RELU: s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f); break;
    case OB_EPI_RELU6: s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, 6.0f); break;
    case OB_EPI_ADD:
      s = binary ? dnnl_post_ops_append_binary(po, dnnl_binary_add, res_md) : dnnl_post_ops_append_sum(po, 1.0f);
      break;
    default: s = dnnl_invalid_arguments; break;
    }
  }
  if (s == dnnl_success && dnnl_post_ops_len(po) > 0) s = dnnl_primitive_attr_set_post_ops(attr, po);
  dnnl_post_ops_destroy(po);
  if (s != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return s;
  }
  *out = attr;
  return dnnl_success;
}

/* The primitive descriptor of p with activations in data/out blocks (conv,
 * pool) and B as [K, N] row-major (b_kn) or through the [N, K] view. */
static dnnl_status_t prim_pd(onednn *d, const ob_bl_problem *p, int dblk, int oblk, bool b_kn, bool wconst,
                             bool binary, dnnl_memory_desc_t *mds, dnnl_primitive_desc_t *pd) {
  /* mds[]: the workload arguments' descriptors in the caller's layout */
  dnnl_primitive_attr_t attr = NULL;
  dnnl_status_t s = dnnl_success;
  int o = p->nargs - 1, ri = ob_bl_problem_arg(p, OB_BL_RESIDUAL), bi = ob_bl_problem_arg(p, OB_BL_BIAS);
  bool has_bias = bi >= 0;
  switch (p->kind) {
  case OB_BL_CONV2D: {
    s = md_tag(&mds[0], 4, (int64_t[]){p->n, p->c, p->h, p->w}, block_tag(dblk));
    if (s == dnnl_success) s = user_md(p, OB_BL_WEIGHT, &mds[1]);
    if (s == dnnl_success && has_bias) s = user_md(p, OB_BL_BIAS, &mds[bi]);
    if (s == dnnl_success) s = md_tag(&mds[o], 4, (int64_t[]){p->n, p->k, p->oh, p->ow}, block_tag(oblk));
    if (s == dnnl_success && ri >= 0) mds[ri] = mds[o];
    if (s == dnnl_success) s = prim_attr(p, &mds[o], binary, &attr);
    dnnl_memory_desc_t wany;
    if (s == dnnl_success) s = any_md(p, OB_BL_WEIGHT, &wany);
    dnnl_dims_t strides = {p->sh, p->sw}, dil = {p->dh - 1, p->dw - 1};
    dnnl_dims_t pad_l = {p->pt, p->pl}, pad_r = {p->pb, p->pr};
    dnnl_convolution_desc_t cd;
    if (s == dnnl_success)
      s = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &mds[0],
                                                     &wany, has_bias ? &mds[bi] : NULL, &mds[o], strides, dil,
                                                     pad_l, pad_r);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, &cd, attr, d->eng, NULL);
    break;
  }
  case OB_BL_MATMUL: {
    int nd = p->batch > 1 ? 3 : 2, ox = nd - 2;
    s = user_md(p, OB_BL_DATA, &mds[0]);
    if (s == dnnl_success) {
      if (b_kn) {
        int64_t dims[3] = {p->batch};
        dims[ox] = p->kk, dims[ox + 1] = p->nn;
        s = md_tag(&mds[1], nd, dims, nd == 3 ? dnnl_abc : dnnl_ab);
      } else {
        s = user_md(p, OB_BL_WEIGHT, &mds[1]);
      }
    }
    if (s == dnnl_success && has_bias) s = user_md(p, OB_BL_BIAS, &mds[bi]);
    if (s == dnnl_success) s = user_md(p, OB_BL_OUTPUT, &mds[o]);
    if (s == dnnl_success && ri >= 0) mds[ri] = mds[o];
    if (s == dnnl_success) s = prim_attr(p, &mds[o], binary, &attr);
    dnnl_memory_desc_t wmd = mds[1];
    if (s == dnnl_success && wconst) s = any_md(p, OB_BL_WEIGHT, &wmd);
    dnnl_matmul_desc_t md;
    if (s == dnnl_success) s = dnnl_matmul_desc_init(&md, &mds[0], &wmd, has_bias ? &mds[bi] : NULL, &mds[o]);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, &md, attr, d->eng, NULL);
    break;
  }
  case OB_BL_POOL2D: {
    static const dnnl_alg_kind_t alg[OB_BL_POOL_COUNT] = {dnnl_pooling_max, dnnl_pooling_avg_include_padding,
                                                          dnnl_pooling_avg_exclude_padding};
    s = md_tag(&mds[0], 4, (int64_t[]){p->n, p->c, p->h, p->w}, block_tag(dblk));
    if (s == dnnl_success) s = md_tag(&mds[o], 4, (int64_t[]){p->n, p->c, p->oh, p->ow}, block_tag(oblk));
    if (s == dnnl_success) s = prim_attr(p, NULL, binary, &attr);
    dnnl_dims_t strides = {p->sh, p->sw}, kernel = {p->r, p->s}, dil = {0, 0};
    dnnl_dims_t pad_l = {p->pt, p->pl}, pad_r = {p->pb, p->pr};
    dnnl_pooling_v2_desc_t pool;
    if (s == dnnl_success)
      s = dnnl_pooling_v2_forward_desc_init(&pool, dnnl_forward_inference, alg[p->pool], &mds[0], &mds[o], strides,
                                            kernel, dil, pad_l, pad_r);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(pd, &pool, attr, d->eng, NULL);
    break;
  }
  default: s = dnnl_invalid_arguments; break;
  }
  dnnl_primitive_attr_destroy(attr);
  return s;
}

static int dn_prim_run(ob_baseline_prim *bp, void *const *bufs) {
  dn_prim *q = (dn_prim *)bp;
  for (int i = 0; i < q->ndyn; i++) dnnl_memory_set_data_handle(q->dyn[i], bufs[q->warg[i]]);
  if (q->res_arg >= 0) memcpy(bufs[q->out_arg], bufs[q->res_arg], q->out_bytes);
  dnnl_status_t s = dnnl_primitive_execute(q->prim, q->d->strm, q->nargs, q->args);
  if (s == dnnl_success) s = dnnl_stream_wait(q->d->strm);
  return (int)s;
}

static void dn_prim_free(ob_baseline_prim *bp) {
  dn_prim *q = (dn_prim *)bp;
  if (!q) return;
  dnnl_primitive_destroy(q->prim);
  for (int i = 0; i < q->ndyn; i++) dnnl_memory_destroy(q->dyn[i]);
  for (int i = 0; i < q->nowned; i++) dnnl_memory_destroy(q->owned[i]);
  free(q);
}

static ob_status dn_prim_new(void *self, const ob_workload *wl, const ob_bl_problem *p, int want_block, bool b_kn,
                             const void *const *consts, ob_baseline_prim **out) {
  onednn *d = self;
  dn_prim *q = calloc(1, sizeof *q);
  if (!q) return ob_fail(d->ctx, OB_ERR_NOMEM, "onednn: out of memory");
  q->d = d;
  q->base.run = dn_prim_run;
  q->base.free = dn_prim_free;
  q->res_arg = q->out_arg = -1;
  const int o = p->nargs - 1, ri = ob_bl_problem_arg(p, OB_BL_RESIDUAL);
  int dblk = 0, oblk = 0;
  if (p->kind != OB_BL_MATMUL && want_block > 0) {
    dblk = p->c % want_block == 0 ? want_block : 0;
    oblk = p->k % want_block == 0 ? want_block : 0;
  }
  bool wconst = p->kind != OB_BL_POOL2D && consts && consts[1];
  dnnl_memory_desc_t mds[OB_BL_MAX_ARGS];
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t s = dnnl_unimplemented;
  /* the blocks asked for, then one block both sides share (16, 8), then
   * plain activations; for each, the residual as a binary post-op, then as
   * the sum post-op (the output preloaded with it). oneDNN's reference
   * implementations ("ref:") are 10-100x slower than its JIT kernels: one is
   * kept only when no later layout gets a JIT kernel */
  int tries[8][3], nt = 0;
  int pairs[4][2] = {{dblk, oblk}, {0, 0}, {0, 0}, {0, 0}}, np = 1;
  if (p->kind != OB_BL_MATMUL)
    for (int b = 16; b >= 8; b /= 2)
      if (want_block >= b && p->c % b == 0 && p->k % b == 0 && !(dblk == b && oblk == b)) {
        pairs[np][0] = pairs[np][1] = b;
        np++;
      }
  if (dblk || oblk) np++; /* plain, left {0, 0} */
  for (int i = 0; i < np; i++)
    for (int bin = 1; bin >= 0; bin--)
      if (bin || ri >= 0) {
        tries[nt][0] = pairs[i][0];
        tries[nt][1] = pairs[i][1];
        tries[nt++][2] = bin;
      }
  int used = -1;
  for (int t = 0; t < nt; t++) {
    dnnl_primitive_desc_t cand = NULL;
    dnnl_memory_desc_t cmds[OB_BL_MAX_ARGS];
    memset(cmds, 0, sizeof cmds);
    dnnl_status_t cs = prim_pd(d, p, tries[t][0], tries[t][1], b_kn, wconst, tries[t][2], cmds, &cand);
    if (cs != dnnl_success) {
      if (used < 0) s = cs;
      continue;
    }
    const char *ci = NULL;
    bool ref = dnnl_primitive_desc_query(cand, dnnl_query_impl_info_str, 0, &ci) == dnnl_success && ci &&
               !strncmp(ci, "ref", 3);
    if (used < 0 || !ref) {
      dnnl_primitive_desc_destroy(pd);
      pd = cand;
      memcpy(mds, cmds, sizeof mds);
      used = t;
      s = dnnl_success;
      if (!ref) break;
    } else {
      dnnl_primitive_desc_destroy(cand);
    }
  }
  ob_status st = OB_OK;
  if (used < 0) {
    st = ob_fail(d->ctx, OB_ERR_UNSUPPORTED, "onednn: %s: no primitive (%s)", wl->op, dnnl_status2str(s));
    goto fail;
  }
  q->base.data_block = tries[used][0];
  q->base.out_block = tries[used][1];
  bool binary = tries[used][2];
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
    snprintf(q->base.impl, sizeof q->base.impl, "%s", impl);
  for (int i = 0; i < p->nargs; i++) {
    ob_bl_role role = p->args[i].role;
    if (role == OB_BL_RESIDUAL && !binary) {
      q->res_arg = i;
      q->out_arg = o;
      q->out_bytes = dnnl_memory_desc_get_size(&mds[o]);
      continue;
    }
    int arg = role == OB_BL_RESIDUAL ? (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1) : dnnl_arg_of(role);
    if (role == OB_BL_RESIDUAL) { /* its post-op's index: the steps before it */
      int idx = 0;
      for (int k = 0; k < p->epi.n && p->epi.step[k] != OB_EPI_ADD; k++) idx += p->epi.step[k] != OB_EPI_BIAS;
      arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1;
    }
    bool is_const = consts && consts[i] && role != OB_BL_DATA && role != OB_BL_OUTPUT && role != OB_BL_RESIDUAL;
    if (is_const) {
      /* reordered once into the primitive's format */
      const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
      dnnl_memory_t um = NULL, pm = NULL;
      s = md ? dnnl_memory_create(&um, &mds[i], d->eng, (void *)consts[i]) : dnnl_runtime_error;
      if (s == dnnl_success) s = dnnl_memory_create(&pm, md, d->eng, DNNL_MEMORY_ALLOCATE);
      if (s == dnnl_success) s = reorder(d, um, pm);
      dnnl_memory_destroy(um);
      if (s != dnnl_success) {
        dnnl_memory_destroy(pm);
        st = ob_fail(d->ctx, OB_ERR_UNSUPPORTED, "onednn: %s: reordering constant %s: %s", wl->op, p->args[i].name,
                     dnnl_status2str(s));
        goto fail;
      }
      q->owned[q->nowned++] = pm;
      q->args[q->nargs++] = (dnnl_exec_arg_t){arg, pm};
      continue;
    }
    /* an activation: the caller's buffer, in the layout the descriptor says */
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    if (!md || !dnnl_memory_desc_equal(md, &mds[i])) {
      st = ob_fail(d->ctx, OB_ERR_UNSUPPORTED, "onednn: %s: argument %s is not in the caller's layout", wl->op,
                   p->args[i].name);
      goto fail;
    }
    dnnl_memory_t m = NULL;
    s = dnnl_memory_create(&m, &mds[i], d->eng, DNNL_MEMORY_NONE);
    if (s != dnnl_success) {
      st = ob_fail(d->ctx, OB_ERR_SYSTEM, "onednn: %s: creating a memory: %s", wl->op, dnnl_status2str(s));
      goto fail;
    }
    q->dyn[q->ndyn] = m;
    q->warg[q->ndyn++] = i;
    q->args[q->nargs++] = (dnnl_exec_arg_t){arg, m};
  }
  const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (smd && dnnl_memory_desc_get_size(smd) > 0) {
    dnnl_memory_t sm = NULL;
    s = dnnl_memory_create(&sm, smd, d->eng, DNNL_MEMORY_ALLOCATE);
    if (s != dnnl_success) {
      st = ob_fail(d->ctx, OB_ERR_NOMEM, "onednn: %s: allocating the scratchpad", wl->op);
      goto fail;
    }
    q->owned[q->nowned++] = sm;
    q->args[q->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sm};
  }
  s = dnnl_primitive_create(&q->prim, pd);
  if (s != dnnl_success) {
    st = ob_fail(d->ctx, OB_ERR_UNSUPPORTED, "onednn: %s: creating the primitive: %s", wl->op, dnnl_status2str(s));
    goto fail;
  }
  dnnl_primitive_desc_destroy(pd);
  *out = &q->base;
  return OB_OK;
fail:
  dnnl_primitive_desc_destroy(pd);
  dn_prim_free(&q->base);
  return st;
}

static void dn_enter(void *self) {
  onednn *d = self;
  threads_enter(d, &d->span);
}
static void dn_leave(void *self) {
  onednn *d = self;
  threads_leave(d, &d->span);
}

/* ---- the handle --------------------------------------------------------- */

static const char *dn_describe(const void *self) { return ((const onednn *)self)->desc; }

static void dn_free(void *self) {
  onednn *d = self;
  if (!d) return;
  if (d->strm) dnnl_stream_destroy(d->strm);
  if (d->eng) dnnl_engine_destroy(d->eng);
  if (d->omp.lib) dlclose(d->omp.lib);
  free(d->cores);
  free(d);
}

static const struct ob_baseline_i k_onednn_i = {.name = "onednn",
                                                 .measure = dn_measure,
                                                 .describe = dn_describe,
                                                 .free = dn_free,
                                                 .prim_new = dn_prim_new,
                                                 .enter = dn_enter,
                                                 .leave = dn_leave};

static const char *isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_sse41: return "sse41";
  case dnnl_cpu_isa_avx: return "avx";
  case dnnl_cpu_isa_avx2: return "avx2";
  case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
  case dnnl_cpu_isa_avx512_core: return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
  default: return "other";
  }
}

/* Limits oneDNN to the target's ISA (AVX2 kernels against AVX2 oneDNN).
 * The limit is process-wide and can be set only before oneDNN's first JIT
 * kernel, so a second, different limit fails. The host's best (AVX-512)
 * stays unlimited, as oneDNN picks it by itself. */
static ob_status limit_isa(ob_ctx *ctx, const ob_target *t) {
  const ob_target_facts *f = ob_target_get_facts(t);
  if (!f->native || strcmp(f->arch, "x86_64"))
    return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "onednn: target '%s' does not run natively on this host; oneDNN runs the "
                   "host's own x86-64 code only",
                   ob_target_str(t));
  dnnl_cpu_isa_t want = f->isa == OB_ISA_AVX2     ? dnnl_cpu_isa_avx2
                        : f->isa == OB_ISA_SCALAR ? dnnl_cpu_isa_sse41
                                                  : dnnl_cpu_isa_all;
  if (want == dnnl_cpu_isa_all) return OB_OK;
  dnnl_status_t s = dnnl_set_max_cpu_isa(want);
  dnnl_cpu_isa_t got = dnnl_get_effective_cpu_isa();
  if ((got & want) != got)
    return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "onednn: cannot limit oneDNN to %s for target '%s' (%s; it already dispatches "
                   "up to %s in this process)",
                   isa_name(want), ob_target_str(t), dnnl_status2str(s), isa_name(got));
  return OB_OK;
}

ob_status ob_baseline_onednn_new(ob_ctx *ctx, const int *cores, int nthreads, const ob_target *target,
                                 ob_baseline **out) {
  OB_ASSERT(out);
  *out = NULL;
  if (nthreads < 1) return ob_fail(ctx, OB_ERR_INVALID_ARG, "onednn: nthreads must be >= 1 (got %d)", nthreads);
  if (target) {
    ob_status lst = limit_isa(ctx, target);
    if (lst) return lst;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed))
    return ob_fail(ctx, OB_ERR_SYSTEM, "onednn: cannot read the process's CPU affinity");
  for (int i = 0; i < nthreads; i++) {
    int c = cores ? cores[i] : i;
    if (c < 0 || c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "onednn: core %d is not available to this process", c);
    for (int k = 0; k < i; k++)
      if ((cores ? cores[k] : k) == c)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "onednn: core %d is listed twice", c);
  }
  ob_status st = OB_OK;
  ob_baseline *b = calloc(1, sizeof *b);
  onednn *d = calloc(1, sizeof *d);
  if (!b || !d || !(d->cores = malloc((size_t)nthreads * sizeof(int)))) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "onednn: out of memory");
    goto fail;
  }
  b->vt = &k_onednn_i;
  b->self = d;
  b->ctx = ctx;
  b->timer_overhead_s = ob_timer_overhead();
  b->floor_ms = target ? ob_target_get_facts(target)->min_repeat_ms : -1;
  d->ctx = ctx;
  d->nthreads = nthreads;
  for (int i = 0; i < nthreads; i++) d->cores[i] = cores ? cores[i] : i;

  const dnnl_version_t *v = dnnl_version();
  d->runtime = v->cpu_runtime;
  const char *rt = "?";
  if (d->runtime == DNNL_RUNTIME_OMP) {
    rt = "OpenMP";
    d->omp.set_num_threads = (void (*)(int))omp_sym(&d->omp, "omp_set_num_threads");
    d->omp.get_max_threads = (int (*)(void))omp_sym(&d->omp, "omp_get_max_threads");
    d->omp.get_thread_num = (int (*)(void))omp_sym(&d->omp, "omp_get_thread_num");
    d->omp.parallel = (void (*)(void (*)(void *), void *, unsigned, unsigned))omp_sym(&d->omp, "GOMP_parallel");
    d->omp.pause_all = (int (*)(int))omp_sym(&d->omp, "omp_pause_resource_all");
    if (!d->omp.set_num_threads || !d->omp.get_max_threads) {
      st = ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "onednn: the library uses OpenMP but omp_set_num_threads is not found in the process");
      goto fail;
    }
    if (!d->omp.parallel || !d->omp.get_thread_num)
      ob_log(ctx, OB_LOG_WARN, "onednn: GOMP_parallel not found; only the calling thread is pinned");
  } else if (d->runtime == DNNL_RUNTIME_SEQ) {
    rt = "sequential";
    if (nthreads != 1) {
      st = ob_fail(ctx, OB_ERR_UNSUPPORTED, "onednn: this build is sequential; %d threads were asked for",
                   nthreads);
      goto fail;
    }
  } else {
    st = ob_fail(ctx, OB_ERR_UNSUPPORTED,
                 "onednn: CPU runtime %u (TBB or threadpool) cannot be given a thread count here", d->runtime);
    goto fail;
  }
  dnnl_status_t s = dnnl_engine_create(&d->eng, dnnl_cpu, 0);
  if (s == dnnl_success) s = dnnl_stream_create(&d->strm, d->eng, dnnl_stream_default_flags);
  if (s != dnnl_success) {
    st = ob_fail(ctx, OB_ERR_SYSTEM, "onednn: cannot create a CPU engine and stream: %s", dnnl_status2str(s));
    goto fail;
  }
  int n = snprintf(d->desc, sizeof d->desc, "oneDNN %d.%d.%d (%s, %d thread%s on cores ", v->major, v->minor,
                   v->patch, rt, nthreads, nthreads == 1 ? "" : "s");
  for (int i = 0; i < nthreads && n > 0 && (size_t)n < sizeof d->desc; i++)
    n += snprintf(d->desc + n, sizeof d->desc - (size_t)n, "%s%d", i ? "," : "", d->cores[i]);
  if (n > 0 && (size_t)n < sizeof d->desc)
    snprintf(d->desc + n, sizeof d->desc - (size_t)n, ", isa %s)", isa_name(dnnl_get_effective_cpu_isa()));
  *out = b;
  return OB_OK;
fail:
  if (b) b->self = NULL;
  dn_free(d);
  free(b);
  return st;
}
