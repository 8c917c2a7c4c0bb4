/* native.c: the runtime's own C routines, for nodes no operator workload
 * computes and for layout conversions: views are not here (plan.c makes
 * them), everything else is. They follow the graph's reference semantics
 * (src/graph/ops.c) but compute in float32 with contiguous inner loops the
 * compiler vectorizes, split over the runtime's thread pool:
 *   - layout conversions: plain <-> NCHW[b]c, block to block, weights into
 *     GEMM panels, the last two dims transposed;
 *   - one strided-copy engine for Transpose, Slice, Split, Concat, Expand,
 *     Pad (and a blocked channel Concat);
 *   - one broadcasting elementwise engine for the unary, binary and Where
 *     operators and Cast;
 *   - Gather, Resize (nearest), pooling and global pooling in plain or
 *     blocked layouts, BatchNormalization, LayerNormalization, Softmax and
 *     ReduceMean on any axes, MatMul/Gemm the library does not map, LSTM;
 *   - Shape, ConstantOfShape and Range are constants of the graph's shapes:
 *     evaluated once, at compile time.
 * Parameters live in the runtime's arena; routines keep no state. */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/runtime_impl.h"

#define RT_MAXD OB_GRAPH_MAX_DIMS

/* ---- parallel loops ------------------------------------------------------------ */

static void par_for(ob_pool *pool, int64_t n, int64_t grain, ob_task_fn fn, void *closure) {
  if (n <= 0) return;
  /* a handful of microseconds of work is not worth waking the workers */
  if (!pool || ob_pool_size(pool) < 2 || n < 2 || n * grain < 16384) {
    fn(closure, 0, n);
    return;
  }
  ob_pool_parallel_for(pool, n, fn, closure);
}

void rt_parallel(ob_rt *rt, int64_t n, int64_t grain, ob_task_fn fn, void *closure) {
  par_for(rt->pool, n, grain, fn, closure);
}

/* ---- shapes -------------------------------------------------------------------- */

static int64_t numel(const ob_graph *g, int t) { return ob_graph_tensor_numel(g, t); }

size_t rt_layout_bytes(const ob_graph *g, int t, rt_layout lay) {
  (void)lay; /* every layout holds the same elements: blocks divide their dims */
  int64_t n = numel(g, t);
  return (size_t)(n > 0 ? n : 0) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
}

static void strides_of(int nd, const int64_t *d, int64_t *s) {
  int64_t m = 1;
  for (int i = nd - 1; i >= 0; i--) {
    s[i] = m;
    m *= d[i];
  }
}

static int norm_axis(int64_t a, int nd) { return (int)(a < 0 ? a + nd : a); }

/* ---- layout conversions ------------------------------------------------------------ */

typedef struct cv_p {
  rt_lkind from, to;
  int64_t bf, bt;           /* NCHWC blocks (from, to) */
  int64_t n, c, hw;         /* 4-D tensors */
  int64_t batch, rows, cols; /* last two dims [rows, cols] of the source, batches before */
  int64_t pb;               /* panel width */
  const float *src;
  float *dst;
} cv_p;

/* units: NCHWC kinds: (n, a tile of CV_TILE pixels); the others: panels
 * or 32-row strips */
enum { CV_TILE = 64 };
static int64_t cv_units(const cv_p *p) {
  if (p->from == RL_NCHWC || p->to == RL_NCHWC) return p->n * ((p->hw + CV_TILE - 1) / CV_TILE);
  if (p->to == RL_KN_T) return p->batch * ((p->rows + 31) / 32);
  return p->batch * (p->to == RL_PANELS ? p->rows / p->pb : p->cols / p->pb);
}

/* Pixels [i0, i1) of one image from channel block bf to bt, one of which
 * divides the other: runs of m = min(bf, bt) channels are contiguous on
 * both sides. Inlined with m a constant for the common runs. */
static inline __attribute__((always_inline)) void cv_reblock(const float *sb, float *db, int64_t C, int64_t hw,
                                                             int64_t bf, int64_t bt, int64_t i0, int64_t i1,
                                                             int64_t m) {
  for (int64_t c = 0; c < C; c += m) {
    const float *sr = sb + (c / bf) * hw * bf + c % bf;
    float *dr = db + (c / bt) * hw * bt + c % bt;
    for (int64_t i = i0; i < i1; i++) memcpy(dr + i * bt, sr + i * bf, sizeof(float) * (size_t)m);
  }
}

static void cv_range(void *closure, int64_t begin, int64_t end) {
  const cv_p *p = closure;
  const float *s = p->src;
  float *d = p->dst;
  if (p->from == RL_NCHWC || p->to == RL_NCHWC) {
    /* unit = (n, a tile of pixels): all channels of those pixels. Between
     * two blocks of which one divides the other, runs of the smaller block
     * are contiguous on both sides (memcpy); from or to plain, the plain
     * side is read or written along the tile's pixels */
    int64_t bf = p->from == RL_NCHWC ? p->bf : 0, bt = p->to == RL_NCHWC ? p->bt : 0;
    /* NCHW1c is NCHW: runs of one float would be a memcpy call per element
     * (mobilenet-v2's NCHW16c -> NCHW1c: 0.049 ms for 75 KB), the plain
     * paths below read or write along the tile's pixels instead */
    if (bf == 1) bf = 0;
    if (bt == 1) bt = 0;
    int64_t ntile = (p->hw + CV_TILE - 1) / CV_TILE, hw = p->hw, C = p->c;
    for (int64_t u = begin; u < end; u++) {
      int64_t n = u / ntile, i0 = (u % ntile) * CV_TILE, i1 = i0 + CV_TILE < hw ? i0 + CV_TILE : hw;
      const float *sb = s + n * C * hw;
      float *db = d + n * C * hw;
      if (bf && bt && (bf % bt == 0 || bt % bf == 0)) {
        int64_t m = bf < bt ? bf : bt;
        /* a run of m floats is 16 to 64 bytes: a copy of constant size is
         * one or two vector moves, a memcpy call of variable size costs more
         * than the move (mobilenet-v2's NCHW16c -> NCHW4c took 0.18 ms) */
        switch (m) {
        case 16: cv_reblock(sb, db, C, hw, bf, bt, i0, i1, 16); break;
        case 8: cv_reblock(sb, db, C, hw, bf, bt, i0, i1, 8); break;
        case 4: cv_reblock(sb, db, C, hw, bf, bt, i0, i1, 4); break;
        case 2: cv_reblock(sb, db, C, hw, bf, bt, i0, i1, 2); break;
        default: cv_reblock(sb, db, C, hw, bf, bt, i0, i1, m); break;
        }
      } else if (!bf && bt) {
        for (int64_t c = 0; c < C; c++) {
          const float *sr = sb + c * hw;
          float *dr = db + (c / bt) * hw * bt + c % bt;
          for (int64_t i = i0; i < i1; i++) dr[i * bt] = sr[i];
        }
      } else if (bf && !bt) {
        for (int64_t c = 0; c < C; c++) {
          const float *sr = sb + (c / bf) * hw * bf + c % bf;
          float *dr = db + c * hw;
          for (int64_t i = i0; i < i1; i++) dr[i] = sr[i * bf];
        }
      } else {
        for (int64_t c = 0; c < C; c++)
          for (int64_t i = i0; i < i1; i++) {
            int64_t so = bf ? ((c / bf) * hw + i) * bf + c % bf : c * hw + i;
            int64_t dof = bt ? ((c / bt) * hw + i) * bt + c % bt : c * hw + i;
            db[dof] = sb[so];
          }
      }
    }
    return;
  }
  if (p->to == RL_KN_T) { /* [b, R, C] -> [b, C, R], 32 rows at a time */
    for (int64_t u = begin; u < end; u++) {
      int64_t b = u / ((p->rows + 31) / 32), r0 = (u % ((p->rows + 31) / 32)) * 32;
      int64_t r1 = r0 + 32 < p->rows ? r0 + 32 : p->rows;
      const float *sb = s + b * p->rows * p->cols;
      float *db = d + b * p->rows * p->cols;
      for (int64_t c = 0; c < p->cols; c++)
        for (int64_t r = r0; r < r1; r++) db[c * p->rows + r] = sb[r * p->cols + c];
    }
    return;
  }
  if (p->to == RL_PANELS) { /* [b, N, K] -> [b, N/pb, K, pb]; unit = one panel */
    int64_t np = p->rows / p->pb, K = p->cols;
    for (int64_t u = begin; u < end; u++) {
      int64_t b = u / np, q = u % np;
      const float *sb = s + (b * p->rows + q * p->pb) * K;
      float *db = d + (b * np + q) * K * p->pb;
      for (int64_t j = 0; j < p->pb; j++)
        for (int64_t k = 0; k < K; k++) db[k * p->pb + j] = sb[j * K + k];
    }
    return;
  }
  /* RL_KN_PANELS: [b, K, N] -> [b, N/pb, K, pb]: rows of pb copied */
  int64_t np = p->cols / p->pb, K = p->rows, N = p->cols;
  for (int64_t u = begin; u < end; u++) {
    int64_t b = u / np, q = u % np;
    const float *sb = s + b * K * N + q * p->pb;
    float *db = d + (b * np + q) * K * p->pb;
    for (int64_t k = 0; k < K; k++) memcpy(db + k * p->pb, sb + k * N, sizeof(float) * (size_t)p->pb);
  }
}

static bool cv_init(const ob_graph *g, int t, rt_layout from, rt_layout to, cv_p *p) {
  memset(p, 0, sizeof *p);
  p->from = from.kind;
  p->to = to.kind;
  p->bf = from.block;
  p->bt = to.block;
  int nd = ob_graph_tensor_ndim(g, t);
  const int64_t *d = ob_graph_tensor_dims(g, t);
  if (from.kind == RL_NCHWC || to.kind == RL_NCHWC) {
    if (nd != 4) return false;
    p->n = d[0], p->c = d[1], p->hw = d[2] * d[3];
    return true;
  }
  if (from.kind != RL_PLAIN || nd < 1) return false;
  p->rows = nd >= 2 ? d[nd - 2] : 1;
  p->cols = d[nd - 1];
  p->batch = 1;
  for (int i = 0; i < nd - 2; i++) p->batch *= d[i];
  p->pb = to.block;
  if (to.kind == RL_PANELS) return p->pb > 0 && p->rows % p->pb == 0;
  if (to.kind == RL_KN_PANELS) return p->pb > 0 && p->cols % p->pb == 0;
  return to.kind == RL_KN_T;
}

void rt_convert_const(const ob_graph *g, int t, rt_layout to, const void *src, void *dst) {
  cv_p p;
  OB_ASSERT(cv_init(g, t, rl_plain(), to, &p));
  p.src = src;
  p.dst = dst;
  cv_range(&p, 0, cv_units(&p));
}

/* ---- conversion rates ---------------------------------------------------------- */
static const char *const k_cv_names[OB_RT_CV_KINDS] = {"cv_run16", "cv_run8", "cv_run4",
                                                       "cv_run2",  "cv_block", "cv_nodiv"};

const char *ob_rt_cv_name(ob_rt_cv_kind k) { return (unsigned)k < OB_RT_CV_KINDS ? k_cv_names[k] : "?"; }

/* The tensor each kind is timed on: channels, blocks from and to (0: plain). */
static const struct {
  int64_t c, bf, bt;
  const char *what;
} k_cv_cases[OB_RT_CV_KINDS] = {
    {64, 16, 32, "NCHW16c -> NCHW32c of 64 x 56 x 56"}, {64, 8, 16, "NCHW8c -> NCHW16c of 64 x 56 x 56"},
    {64, 4, 8, "NCHW4c -> NCHW8c of 64 x 56 x 56"},     {64, 2, 4, "NCHW2c -> NCHW4c of 64 x 56 x 56"},
    {64, 0, 8, "NCHW <-> NCHW8c of 64 x 56 x 56"},      {48, 16, 6, "NCHW16c -> NCHW6c of 48 x 56 x 56"}};

const char *ob_rt_cv_what(ob_rt_cv_kind k) { return (unsigned)k < OB_RT_CV_KINDS ? k_cv_cases[k].what : "?"; }

void ob_rt_cv_default(double rates[OB_RT_CV_KINDS]) {
  /* From 228 conversion steps of `run --profile` of tuned resnet-18 and
   * mobilenet-v2 at 1 thread on a Zen 3 VM (tensors of 31 to 802 KB;
   * bench/results/models.txt, stop 38), median [min, max] GB/s: runs of 16
   * 23.9 [9.0, 35.8], of 8 15.7 [8.5, 32.4], of 4 19.6 [10.3, 29.4] (9 for
   * resnet-18's 802 KB layer1 tensors, where conversions cost most: taken),
   * of 2 9.6 [8.3, 12.9]; plain <-> a block 5.7 [4.3, 9.1]. Blocks that do
   * not divide were in none of those plans: their 0.9 is ob_rt_cv_measure's
   * on that host (median of 30, 3 calls: 0.9 each; an index computed per
   * float). */
  static const double k[OB_RT_CV_KINDS] = {25e9, 15e9, 9e9, 9e9, 5e9, 0.9e9};
  memcpy(rates, k, sizeof k);
}

/* A tensor of c channels and CV_MEASURE_HW pixels in block b (0: plain),
 * channel ch of pixel i holding ch * hw + i (exact in float). */
enum { CV_MEASURE_HW = 56 * 56, CV_MEASURE_REPS = 30 };
static size_t cv_at(int64_t b, int64_t ch, int64_t i, int64_t hw) {
  return (size_t)(b ? ((ch / b) * hw + i) * b + ch % b : ch * hw + i);
}

/* The median of CV_MEASURE_REPS conversions of a c-channel tensor from
 * block bf to bt (0: plain), after checking the first; NAN when wrong. A
 * price, not a limit: the median, as the plan's kernel times are (the
 * fastest read 1.0-1.6x the median on a Zen 3 VM, by kind and call). */
static double cv_time(ob_pool *pool, float *src, float *dst, int64_t c, int64_t bf, int64_t bt) {
  int64_t hw = CV_MEASURE_HW;
  cv_p p = {.from = bf ? RL_NCHWC : RL_PLAIN, .to = bt ? RL_NCHWC : RL_PLAIN, .bf = bf, .bt = bt,
            .n = 1, .c = c, .hw = hw, .src = src, .dst = dst};
  for (int64_t ch = 0; ch < c; ch++)
    for (int64_t i = 0; i < hw; i++) src[cv_at(bf, ch, i, hw)] = (float)(ch * hw + i);
  memset(dst, 0, sizeof(float) * (size_t)(c * hw));
  int64_t u = cv_units(&p), grain = c * CV_TILE; /* as run_convert */
  par_for(pool, u, grain, cv_range, &p);
  for (int64_t ch = 0; ch < c; ch++)
    for (int64_t i = 0; i < hw; i++)
      if (dst[cv_at(bt, ch, i, hw)] != (float)(ch * hw + i)) return NAN;
  double t[CV_MEASURE_REPS], med;
  for (int r = 0; r < CV_MEASURE_REPS; r++) {
    double t0 = ob_now_s();
    par_for(pool, u, grain, cv_range, &p);
    t[r] = ob_now_s() - t0;
  }
  ob_stats(t, CV_MEASURE_REPS, &med, NULL, NULL);
  return med > 0 ? med : 1e-9;
}

ob_status ob_rt_cv_measure(ob_ctx *ctx, int nthreads, const int *cores, double rates[OB_RT_CV_KINDS],
                           double *bytes) {
  if (nthreads < 1 || nthreads > 256)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "conversion rates: %d threads (expected 1..256)", nthreads);
  int own[256];
  for (int i = 0; i < nthreads; i++) own[i] = cores ? cores[i] : i;
  size_t n = (size_t)(64 * CV_MEASURE_HW);
  float *src = ob_mem_alloc_big(sizeof(float) * n), *dst = ob_mem_alloc_big(sizeof(float) * n);
  ob_pool *pool = NULL;
  ob_status st = src && dst ? ob_pool_new(ctx, own, nthreads, &pool) : ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  for (int k = 0; !st && k < OB_RT_CV_KINDS; k++) {
    double b = 4.0 * (double)(k_cv_cases[k].c * CV_MEASURE_HW);
    double t = cv_time(pool, src, dst, k_cv_cases[k].c, k_cv_cases[k].bf, k_cv_cases[k].bt);
    if (k == OB_RT_CV_BLOCK) t = 0.5 * (t + cv_time(pool, src, dst, 64, 8, 0)); /* and back */
    if (!isfinite(t)) {
      st = ob_fail(ctx, OB_ERR_WRONG_ANSWER, "conversion rates: the %s conversion's result is wrong", k_cv_names[k]);
      break;
    }
    rates[k] = b / t;
  }
  if (bytes) *bytes = 4.0 * (double)n;
  ob_pool_free(pool);
  ob_mem_free_big(src);
  ob_mem_free_big(dst);
  return st;
}

static int run_convert(ob_rt *rt, rt_step *s) {
  cv_p *p = s->p;
  p->src = s->pin[0];
  p->dst = s->pout[0];
  int64_t u = cv_units(p);
  rt_parallel(rt, u, p->c ? p->c * CV_TILE : 1024, cv_range, p); /* elements per unit */
  return 0;
}

static const char *lay_name(rt_layout l, char *buf, size_t cap) {
  switch (l.kind) {
  case RL_NCHWC: snprintf(buf, cap, "NCHW%lldc", (long long)l.block); break;
  case RL_PANELS: snprintf(buf, cap, "panels%lld", (long long)l.block); break;
  case RL_KN_PANELS: snprintf(buf, cap, "KN-panels%lld", (long long)l.block); break;
  case RL_KN_T: snprintf(buf, cap, "transposed"); break;
  case RL_SCRATCH: snprintf(buf, cap, "packed"); break;
  default: snprintf(buf, cap, "plain"); break;
  }
  return buf;
}

int rt_convert(ob_rt *rt, int src, rt_layout to) {
  const ob_graph *g = rt->g;
  int t = rt->v[src].tensor;
  rt_layout from = rt->v[src].lay;
  cv_p *p = rt_alloc(rt, sizeof *p);
  if (!p) {
    ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
    return -1;
  }
  /* NCHW[1]c is NCHW byte for byte: a view of the source, no step (the
   * copy cost squeezenet-1.1's input 0.07 ms of 4.7 at 1 thread) */
  bool one = (from.kind == RL_PLAIN && to.kind == RL_NCHWC && to.block == 1) ||
             (from.kind == RL_NCHWC && from.block == 1 && to.kind == RL_PLAIN);
  if (one && ob_graph_tensor_ndim(g, t) == 4 && rt_layout_bytes(g, t, from) == rt_layout_bytes(g, t, to)) {
    int v = rt_val_new(rt, t, to, ob_graph_tensor_dtype(g, t), rt_layout_bytes(g, t, to));
    if (v < 0 || !rt_bind(rt, t, v)) {
      ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
      return -1;
    }
    rt_val *sv = &rt->v[src], *vv = &rt->v[v];
    vv->alias = sv->alias >= 0 ? sv->alias : src;
    vv->alias_off = sv->alias >= 0 ? sv->alias_off : 0;
    vv->def = sv->def;
    rt->st.nviews++;
    return v;
  }
  if (ob_graph_tensor_dtype(g, t) != OB_F32 || !cv_init(g, t, from, to, p)) {
    char a[32], b[32];
    ob_fail(rt->ctx, OB_ERR_UNSUPPORTED, "runtime: no conversion of '%s' from %s to %s", ob_graph_tensor_name(g, t),
            lay_name(from, a, sizeof a), lay_name(to, b, sizeof b));
    return -1;
  }
  int v = rt_val_new(rt, t, to, OB_F32, rt_layout_bytes(g, t, to));
  if (v < 0 || !rt_bind(rt, t, v)) {
    ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
    return -1;
  }
  char a[32], b[32], nm[320];
  snprintf(nm, sizeof nm, "%s: %s -> %s", ob_graph_tensor_name(g, t), lay_name(from, a, sizeof a),
           lay_name(to, b, sizeof b));
  int sid = rt_step_add(rt, OB_RT_STEP_CONVERT, -1, nm, "layout", &src, 1, &v, 1, run_convert, p);
  if (sid < 0) {
    ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
    return -1;
  }
  bool boundary = (from.kind == RL_NCHWC) != (to.kind == RL_NCHWC);
  rt->s[sid].conv_boundary = boundary;
  if (from.kind == RL_NCHWC && to.kind == RL_NCHWC) rt->st.nreblock++;
  else if (boundary) rt->st.nboundary++;
  return v;
}

/* ---- helpers for planning ---------------------------------------------------------------- */

static ob_status nomem(ob_rt *rt) { return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory"); }

static ob_status unsupported(ob_rt *rt, int node, const char *why) {
  return ob_fail(rt->ctx, OB_ERR_UNSUPPORTED, "runtime: node '%s' (%s): %s", ob_graph_node_name(rt->g, node),
                 ob_gop_name(ob_graph_node_op(rt->g, node)), why);
}

/* A new value for output k of node in layout lay. */
static int out_value(ob_rt *rt, int node, int k, rt_layout lay) {
  int t = ob_graph_node_output(rt->g, node, k);
  int v = rt_val_new(rt, t, lay, ob_graph_tensor_dtype(rt->g, t), rt_layout_bytes(rt->g, t, lay));
  if (v < 0 || !rt_bind(rt, t, v)) return -1;
  return v;
}

static ob_status add_step(ob_rt *rt, int node, const int *in, int nin, const int *out, int nout, rt_run_fn fn,
                          void *p) {
  const ob_graph *g = rt->g;
  if (rt_step_add(rt, OB_RT_STEP_NATIVE, node, ob_graph_node_name(g, node), ob_gop_name(ob_graph_node_op(g, node)), in,
                  nin, out, nout, fn, p) < 0)
    return nomem(rt);
  return OB_OK;
}

/* The layout of tensor t's first value when blocked, else plain. */
static rt_layout primary_lay(const ob_rt *rt, int t) {
  int p = rt_primary(rt, t);
  if (p >= 0 && rt->v[p].lay.kind == RL_NCHWC) return rt->v[p].lay;
  return rl_plain();
}

/* ---- strided copies ------------------------------------------------------------------------ */

typedef struct cp_p {
  int nd;
  int64_t dims[RT_MAXD];
  int64_t ss[RT_MAXD], ds[RT_MAXD]; /* element strides */
  int64_t soff, doff;
  size_t es;
  int in, out;                      /* which step pointer */
  const char *src;
  char *dst;
} cp_p;

/* Drops unit dims and merges dims contiguous in both source and destination. */
static void cp_collapse(cp_p *c) {
  int k = 0;
  for (int i = 0; i < c->nd; i++) {
    if (c->dims[i] == 1) continue;
    c->dims[k] = c->dims[i], c->ss[k] = c->ss[i], c->ds[k] = c->ds[i];
    k++;
  }
  c->nd = k;
  if (!k) {
    c->nd = 1;
    c->dims[0] = 1, c->ss[0] = c->ds[0] = 1;
    return;
  }
  int m = 0;
  for (int i = 1; i < c->nd; i++) {
    if (c->ss[m] == c->ss[i] * c->dims[i] && c->ds[m] == c->ds[i] * c->dims[i]) {
      c->dims[m] *= c->dims[i];
      c->ss[m] = c->ss[i], c->ds[m] = c->ds[i];
    } else {
      m++;
      c->dims[m] = c->dims[i], c->ss[m] = c->ss[i], c->ds[m] = c->ds[i];
    }
  }
  c->nd = m + 1;
}

static int64_t cp_rows(const cp_p *c) {
  int64_t r = 1;
  for (int i = 0; i < c->nd - 1; i++) r *= c->dims[i];
  return r;
}

static void cp_range(void *closure, int64_t begin, int64_t end) {
  const cp_p *c = closure;
  int nd = c->nd;
  int64_t inner = c->dims[nd - 1], si = c->ss[nd - 1], di = c->ds[nd - 1];
  size_t es = c->es;
  for (int64_t r = begin; r < end; r++) {
    int64_t rem = r, so = c->soff, dof = c->doff;
    for (int i = nd - 2; i >= 0; i--) {
      int64_t q = rem % c->dims[i];
      rem /= c->dims[i];
      so += q * c->ss[i];
      dof += q * c->ds[i];
    }
    const char *s = c->src + so * (int64_t)es;
    char *d = c->dst + dof * (int64_t)es;
    if (si == 1 && di == 1) {
      memcpy(d, s, (size_t)inner * es);
    } else if (es == 4) {
      const uint32_t *s4 = (const uint32_t *)s;
      uint32_t *d4 = (uint32_t *)d;
      if (di == 1)
        for (int64_t k = 0; k < inner; k++) d4[k] = s4[k * si];
      else
        for (int64_t k = 0; k < inner; k++) d4[k * di] = s4[k * si];
    } else {
      for (int64_t k = 0; k < inner; k++) memcpy(d + k * di * (int64_t)es, s + k * si * (int64_t)es, es);
    }
  }
}

static void cp_run(ob_rt *rt, cp_p *c, const void *src, void *dst) {
  c->src = src;
  c->dst = dst;
  rt_parallel(rt, cp_rows(c), c->dims[c->nd - 1], cp_range, c);
}

/* A list of copies, each from one input pointer into one output pointer. */
typedef struct cps_p {
  int n;
  cp_p *c;
  bool fill;      /* Pad: the output is filled first */
  double value;
  int64_t fill_n; /* elements */
} cps_p;

static void fill_out(void *dst, ob_dtype dt, double v, int64_t n) {
  if (dt == OB_F32) {
    float f = (float)v, *p = dst;
    for (int64_t i = 0; i < n; i++) p[i] = f;
  } else if (dt == OB_I64) {
    int64_t q = (int64_t)v, *p = dst;
    for (int64_t i = 0; i < n; i++) p[i] = q;
  } else {
    memset(dst, v != 0, (size_t)n);
  }
}

static int run_copies(ob_rt *rt, rt_step *s) {
  cps_p *p = s->p;
  if (p->fill) fill_out(s->pout[0], p->c[0].es == 4 ? OB_F32 : p->c[0].es == 8 ? OB_I64 : OB_BOOL, p->value, p->fill_n);
  for (int i = 0; i < p->n; i++) cp_run(rt, &p->c[i], s->pin[p->c[i].in], s->pout[p->c[i].out]);
  return 0;
}

static ob_status plan_copies(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  ob_gop op = ob_graph_node_op(g, node);
  int x = ob_graph_node_input(g, node, 0), y = ob_graph_node_output(g, node, 0);
  int xn = ob_graph_tensor_ndim(g, x), yn = ob_graph_tensor_ndim(g, y);
  const int64_t *xd = ob_graph_tensor_dims(g, x), *yd = ob_graph_tensor_dims(g, y);
  size_t es = ob_dtype_size(ob_graph_tensor_dtype(g, x));
  int64_t xs[RT_MAXD], ys[RT_MAXD];
  strides_of(xn, xd, xs);
  strides_of(yn, yd, ys);
  cps_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  int ins[1024], nin = 0, outs[16], nout = 0;
  switch (op) {
  case OB_GOP_TRANSPOSE: {
    int64_t perm[RT_MAXD];
    if (ob_graph_node_attr_ints(g, node, "perm", perm, RT_MAXD) < 0)
      for (int i = 0; i < xn; i++) perm[i] = xn - 1 - i;
    p->n = 1;
    p->c = rt_alloc(rt, sizeof(cp_p));
    if (!p->c) return nomem(rt);
    cp_p *c = &p->c[0];
    c->nd = yn;
    for (int i = 0; i < yn; i++) c->dims[i] = yd[i], c->ds[i] = ys[i], c->ss[i] = xs[perm[i]];
    break;
  }
  case OB_GOP_SLICE: {
    /* starts/ends/axes/steps resolved as the reference does */
    int64_t st[RT_MAXD], en[RT_MAXD], ax[RT_MAXD], sp[RT_MAXD];
    int ns = 0;
    const int tin[4] = {1, 2, 3, 4};
    int64_t *arr[4] = {st, en, ax, sp};
    int cnt[4] = {0, 0, -1, -1};
    for (int k = 0; k < 4; k++) {
      int t = ob_graph_node_num_inputs(g, node) > tin[k] ? ob_graph_node_input(g, node, tin[k]) : -1;
      if (t < 0) continue;
      const int64_t *dv = ob_graph_tensor_data(g, t);
      if (!dv || ob_graph_tensor_dtype(g, t) != OB_I64 || numel(g, t) > RT_MAXD)
        return unsupported(rt, node, "starts, ends, axes and steps must be constant");
      cnt[k] = (int)numel(g, t);
      memcpy(arr[k], dv, sizeof(int64_t) * (size_t)cnt[k]);
    }
    ns = cnt[0];
    if (cnt[2] < 0)
      for (int i = 0; i < ns; i++) ax[i] = i;
    if (cnt[3] < 0)
      for (int i = 0; i < ns; i++) sp[i] = 1;
    int64_t start[RT_MAXD], step[RT_MAXD];
    for (int i = 0; i < xn; i++) start[i] = 0, step[i] = 1;
    for (int i = 0; i < ns; i++) {
      int a = norm_axis(ax[i], xn);
      int64_t d = xd[a], b = st[i];
      if (b < 0) b = b < -d ? -1 : b + d;
      if (sp[i] > 0) b = b < 0 ? 0 : b > d ? d : b;
      else b = b < -1 ? -1 : b > d - 1 ? d - 1 : b;
      start[a] = b;
      step[a] = sp[i];
    }
    p->n = 1;
    p->c = rt_alloc(rt, sizeof(cp_p));
    if (!p->c) return nomem(rt);
    cp_p *c = &p->c[0];
    c->nd = yn;
    for (int i = 0; i < yn; i++) {
      c->dims[i] = yd[i], c->ds[i] = ys[i], c->ss[i] = xs[i] * step[i];
      c->soff += start[i] * xs[i];
    }
    break;
  }
  case OB_GOP_SPLIT: {
    int a = norm_axis(ob_graph_node_attr_i(g, node, "axis", 0), xn);
    nout = ob_graph_node_num_outputs(g, node);
    p->n = nout;
    p->c = rt_alloc(rt, sizeof(cp_p) * (size_t)nout);
    if (!p->c) return nomem(rt);
    int64_t off = 0;
    for (int k = 0; k < nout; k++) {
      int yk = ob_graph_node_output(g, node, k);
      const int64_t *kd = ob_graph_tensor_dims(g, yk);
      int64_t ks[RT_MAXD];
      strides_of(xn, kd, ks);
      cp_p *c = &p->c[k];
      c->nd = xn;
      for (int i = 0; i < xn; i++) c->dims[i] = kd[i], c->ss[i] = xs[i], c->ds[i] = ks[i];
      c->soff = off * xs[a];
      c->out = k;
      off += kd[a];
    }
    break;
  }
  case OB_GOP_CONCAT: {
    int a = norm_axis(ob_graph_node_attr_i(g, node, "axis", 0), yn);
    nin = ob_graph_node_num_inputs(g, node);
    p->n = nin;
    p->c = rt_alloc(rt, sizeof(cp_p) * (size_t)nin);
    if (!p->c) return nomem(rt);
    int64_t off = 0;
    for (int k = 0; k < nin; k++) {
      int xk = ob_graph_node_input(g, node, k);
      const int64_t *kd = ob_graph_tensor_dims(g, xk);
      int64_t ks[RT_MAXD];
      strides_of(yn, kd, ks);
      cp_p *c = &p->c[k];
      c->nd = yn;
      for (int i = 0; i < yn; i++) c->dims[i] = kd[i], c->ss[i] = ks[i], c->ds[i] = ys[i];
      c->doff = off * ys[a];
      c->in = k;
      off += kd[a];
    }
    break;
  }
  case OB_GOP_EXPAND: {
    p->n = 1;
    p->c = rt_alloc(rt, sizeof(cp_p));
    if (!p->c) return nomem(rt);
    cp_p *c = &p->c[0];
    c->nd = yn;
    for (int i = 0; i < yn; i++) {
      int j = i - (yn - xn);
      c->dims[i] = yd[i], c->ds[i] = ys[i];
      c->ss[i] = j >= 0 && xd[j] != 1 ? xs[j] : 0;
    }
    break;
  }
  case OB_GOP_PAD: {
    int pt = ob_graph_node_input(g, node, 1);
    const int64_t *pads = ob_graph_tensor_data(g, pt);
    if (!pads || numel(g, pt) != 2 * xn) return unsupported(rt, node, "pads must be constant");
    p->fill = true;
    p->fill_n = numel(g, y);
    int cvt = ob_graph_node_num_inputs(g, node) > 2 ? ob_graph_node_input(g, node, 2) : -1;
    if (cvt >= 0) {
      const void *cd = ob_graph_tensor_data(g, cvt);
      if (!cd) return unsupported(rt, node, "constant_value must be constant");
      ob_dtype ct = ob_graph_tensor_dtype(g, cvt);
      p->value = ct == OB_F32 ? *(const float *)cd : ct == OB_I64 ? (double)*(const int64_t *)cd : *(const uint8_t *)cd;
    }
    p->n = 1;
    p->c = rt_alloc(rt, sizeof(cp_p));
    if (!p->c) return nomem(rt);
    cp_p *c = &p->c[0];
    c->nd = xn;
    for (int i = 0; i < xn; i++) {
      c->dims[i] = xd[i], c->ss[i] = xs[i], c->ds[i] = ys[i];
      c->doff += pads[i] * ys[i];
    }
    break;
  }
  default: return unsupported(rt, node, "not a copy");
  }
  for (int i = 0; i < p->n; i++) {
    p->c[i].es = es;
    cp_collapse(&p->c[i]);
  }
  if (!nin) nin = 1;
  for (int k = 0; k < nin; k++) {
    ins[k] = rt_value_for(rt, ob_graph_node_input(g, node, k), rl_plain());
    if (ins[k] < 0) return OB_ERR_INVALID_ARG;
  }
  if (!nout) nout = 1;
  for (int k = 0; k < nout; k++)
    if ((outs[k] = out_value(rt, node, k, rl_plain())) < 0) return nomem(rt);
  return add_step(rt, node, ins, nin, outs, nout, run_copies, p);
}

/* Concat along the channels of NCHW[b]c inputs. Each input is read in the
 * block it was made in (a block dividing its channels), and the output is
 * written in the block its first tuned consumer reads (layout.c), so the
 * conversions around the concat (a squeeze after a fire module of
 * squeezenet, an inception branch) are part of the copy instead of two
 * passes over the tensor each. An output block is filled by segments: runs
 * of channels contiguous in both the output block and one input's block. */
typedef struct bcat_seg {
  int k;         /* input */
  int64_t src;   /* float offset in input k's image at position 0 */
  int64_t sb;    /* input k's block: its stride between positions */
  int64_t lane;  /* first output lane */
  int64_t len;   /* channels */
} bcat_seg;

typedef struct bcat_p {
  int nin;
  int64_t n, hw, b, ctot;
  int64_t *cimg;   /* per input: floats per image (C_k * hw) */
  int64_t *segoff; /* per output block: its segments, segoff[cb] .. segoff[cb + 1] */
  bcat_seg *seg;
  const float **x;
  float *y;
} bcat_p;

/* hw runs of len floats: the source's at stride sb, the output's at b. */
static inline __attribute__((always_inline)) void bcat_runs(float *d, const float *sr, int64_t hw, int64_t b,
                                                            int64_t sb, int64_t len) {
  for (int64_t i = 0; i < hw; i++) memcpy(d + i * b, sr + i * sb, sizeof(float) * (size_t)len);
}

static void bcat_range(void *cl, int64_t begin, int64_t end) {
  const bcat_p *p = cl;
  int64_t nb = p->ctot / p->b;
  for (int64_t u = begin; u < end; u++) {
    int64_t n = u / nb, cb = u % nb;
    float *yb = p->y + (n * nb + cb) * p->hw * p->b;
    for (int64_t q = p->segoff[cb]; q < p->segoff[cb + 1]; q++) {
      const bcat_seg *g = &p->seg[q];
      const float *xs = p->x[g->k] + n * p->cimg[g->k] + g->src;
      if (g->len == p->b && g->sb == p->b) { /* the whole block, one run */
        memcpy(yb, xs, sizeof(float) * (size_t)(p->hw * p->b));
        continue;
      }
      /* runs of 16 to 64 bytes: copies of constant size (see cv_reblock) */
      switch (g->len) {
      case 16: bcat_runs(yb + g->lane, xs, p->hw, p->b, g->sb, 16); break;
      case 8: bcat_runs(yb + g->lane, xs, p->hw, p->b, g->sb, 8); break;
      case 4: bcat_runs(yb + g->lane, xs, p->hw, p->b, g->sb, 4); break;
      default: bcat_runs(yb + g->lane, xs, p->hw, p->b, g->sb, g->len); break;
      }
    }
  }
}

static int run_bconcat(ob_rt *rt, rt_step *s) {
  bcat_p *p = s->p;
  for (int k = 0; k < p->nin; k++) p->x[k] = s->pin[k];
  p->y = s->pout[0];
  rt_parallel(rt, p->n * (p->ctot / p->b), p->hw * p->b, bcat_range, p);
  return 0;
}

/* The block input x is read in: the block it was made in when that block
 * divides its channels, else the output's (0: neither works). */
static int64_t bcat_in_block(const ob_rt *rt, int x, int64_t out_block) {
  rt_layout l = primary_lay(rt, x);
  int64_t c = ob_graph_tensor_dims(rt->g, x)[1];
  if (l.kind == RL_NCHWC && l.block > 0 && c % l.block == 0) return l.block;
  return out_block > 0 && c % out_block == 0 ? out_block : 0;
}

static bool bconcat_ok(const ob_rt *rt, int node, int64_t *block) {
  const ob_graph *g = rt->g;
  int y = ob_graph_node_output(g, node, 0);
  if (ob_graph_tensor_ndim(g, y) != 4 || ob_graph_tensor_dtype(g, y) != OB_F32) return false;
  if (norm_axis(ob_graph_node_attr_i(g, node, "axis", 0), 4) != 1) return false;
  rt_layout l0 = primary_lay(rt, ob_graph_node_input(g, node, 0));
  if (l0.kind != RL_NCHWC) return false;
  int64_t ctot = ob_graph_tensor_dims(g, y)[1];
  int64_t b = rt_layout_wanted_block(rt, y);
  if (b <= 0 || ctot % b) b = l0.block;
  if (ctot % b) return false;
  for (int k = 0; k < ob_graph_node_num_inputs(g, node); k++) {
    int x = ob_graph_node_input(g, node, k);
    if (x < 0 || ob_graph_tensor_ndim(g, x) != 4 || !bcat_in_block(rt, x, b)) return false;
  }
  *block = b;
  return true;
}

static ob_status plan_bconcat(ob_rt *rt, int node, int64_t b) {
  const ob_graph *g = rt->g;
  int nin = ob_graph_node_num_inputs(g, node), y = ob_graph_node_output(g, node, 0);
  bcat_p *p = rt_alloc(rt, sizeof *p);
  int *ins = rt_alloc(rt, sizeof(int) * (size_t)nin);
  int64_t *c = rt_alloc(rt, sizeof(int64_t) * (size_t)nin), *coff = rt_alloc(rt, sizeof(int64_t) * (size_t)nin);
  int64_t *ib = rt_alloc(rt, sizeof(int64_t) * (size_t)nin);
  if (!p || !ins || !c || !coff || !ib) return nomem(rt);
  const int64_t *yd = ob_graph_tensor_dims(g, y);
  p->nin = nin, p->n = yd[0], p->hw = yd[2] * yd[3], p->b = b, p->ctot = yd[1];
  p->cimg = rt_alloc(rt, sizeof(int64_t) * (size_t)nin);
  p->x = rt_alloc(rt, sizeof(float *) * (size_t)nin);
  int64_t nb = p->ctot / b;
  p->segoff = rt_alloc(rt, sizeof(int64_t) * (size_t)(nb + 1));
  if (!p->cimg || !p->x || !p->segoff) return nomem(rt);
  int64_t off = 0, maxseg = nb;
  for (int k = 0; k < nin; k++) {
    int x = ob_graph_node_input(g, node, k);
    c[k] = ob_graph_tensor_dims(g, x)[1];
    coff[k] = off;
    off += c[k];
    p->cimg[k] = c[k] * p->hw;
    ib[k] = bcat_in_block(rt, x, b);
    maxseg += c[k] / ib[k] + 2; /* each input block starts a new run at most once */
    ins[k] = rt_value_for(rt, x, (rt_layout){RL_NCHWC, ib[k]});
    if (ins[k] < 0) return OB_ERR_INVALID_ARG;
  }
  p->seg = rt_alloc(rt, sizeof(bcat_seg) * (size_t)maxseg);
  if (!p->seg) return nomem(rt);
  int64_t ns = 0;
  for (int64_t cb = 0; cb < nb; cb++) {
    p->segoff[cb] = ns;
    for (int64_t l = 0; l < b;) {
      int64_t ch = cb * b + l;
      int k = 0;
      while (k + 1 < nin && ch >= coff[k] + c[k]) k++;
      int64_t ck = ch - coff[k], lane_in = ck % ib[k];
      int64_t len = b - l;
      if (ib[k] - lane_in < len) len = ib[k] - lane_in;
      if (c[k] - ck < len) len = c[k] - ck;
      OB_ASSERT(ns < maxseg && len > 0);
      p->seg[ns++] = (bcat_seg){k, (ck / ib[k]) * p->hw * ib[k] + lane_in, ib[k], l, len};
      l += len;
    }
  }
  p->segoff[nb] = ns;
  int ov = out_value(rt, node, 0, (rt_layout){RL_NCHWC, b});
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, ins, nin, &ov, 1, run_bconcat, p);
}

/* Concat in place: the producers write the channel slices of the output.
 * In NCHW[b]c at batch 1, channels [c0, c0 + c) with b dividing c0 and c are
 * one contiguous range of the output, exactly the bytes of an NCHW[b]c
 * tensor of c channels; when every input was made in that block by a step
 * of its own (and is read nowhere as anything but itself), each input
 * becomes a view at its slice's offset and the concat runs no step:
 * squeezenet's 8 concats copied 0.35 ms of 5.8 at 1 thread. The output
 * lives from the first slice's write, as the memory plan reads views. */
static bool plan_concat_inplace(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int y = ob_graph_node_output(g, node, 0), nin = ob_graph_node_num_inputs(g, node);
  if (nin < 2 || nin > RT_MAX_IO || ob_graph_tensor_ndim(g, y) != 4 || ob_graph_tensor_dtype(g, y) != OB_F32) return false;
  if (norm_axis(ob_graph_node_attr_i(g, node, "axis", 0), 4) != 1) return false;
  const int64_t *yd = ob_graph_tensor_dims(g, y);
  if (yd[0] != 1) return false;
  for (int i = 0; i < ob_graph_output_count(g); i++)
    if (ob_graph_output(g, i) == y) return false;
  int vals[RT_MAX_IO];
  int64_t b = 0, hw = yd[2] * yd[3];
  for (int k = 0; k < nin; k++) {
    int x = ob_graph_node_input(g, node, k);
    if (x < 0 || ob_graph_tensor_ndim(g, x) != 4) return false;
    for (int i = 0; i < ob_graph_output_count(g); i++)
      if (ob_graph_output(g, i) == x) return false;
    int v = rt_primary(rt, x);
    if (v < 0) return false;
    const rt_val *xv = &rt->v[v];
    int64_t c = ob_graph_tensor_dims(g, x)[1];
    if (xv->lay.kind != RL_NCHWC || xv->lay.block <= 0 || (b && xv->lay.block != b)) return false;
    b = xv->lay.block;
    /* written by a step (not an input, a constant or a view; an inner
     * concat in place counts as written by its first slice's step),
     * exactly the tensor's bytes, once in this concat */
    if (xv->is_const || xv->alias >= 0 || xv->def < 0 || xv->def >= rt->ns || c % b ||
        xv->bytes != (size_t)(c * hw) * sizeof(float))
      return false;
    for (int j = 0; j < k; j++)
      if (vals[j] == v) return false;
    vals[k] = v;
  }
  int64_t want = rt_layout_wanted_block(rt, y);
  if (want > 0 && want != b) return false; /* its reader wants another block: the blocked copy converts on the way */
  /* each slice at an aligned offset, as the kernels' outputs are */
  int64_t off = 0;
  for (int k = 0; k < nin; k++) {
    if (((size_t)off * sizeof(float)) % RT_ALIGN) return false;
    off += ob_graph_tensor_dims(g, ob_graph_node_input(g, node, k))[1] * hw;
  }
  int ov = out_value(rt, node, 0, (rt_layout){RL_NCHWC, b});
  if (ov < 0) return false;
  rt_val *yv = &rt->v[ov];
  off = 0;
  for (int k = 0; k < nin; k++) {
    rt_val *xv = &rt->v[vals[k]];
    size_t at = (size_t)off * sizeof(float);
    /* the values that view this input (the slices of an inner concat, as
     * in inception-v3's Mixed_7b) move into the output with it */
    for (int i = 0; i < rt->nv; i++)
      if (rt->v[i].alias == vals[k]) {
        rt->v[i].alias = ov;
        rt->v[i].alias_off += at;
      }
    xv->alias = ov;
    xv->alias_off = at;
    if (xv->def < yv->def) yv->def = xv->def;
    off += ob_graph_tensor_dims(g, ob_graph_node_input(g, node, k))[1] * hw;
  }
  rt->st.nviews++;
  return true;
}

/* ---- elementwise --------------------------------------------------------------------------- */

typedef enum ew_op {
  EW_ADD = 0, EW_SUB, EW_MUL, EW_DIV, EW_POW, EW_EQUAL, EW_WHERE,
  EW_RELU, EW_CLIP, EW_SIGMOID, EW_HARDSIGMOID, EW_TANH, EW_ERF, EW_SQRT, EW_EXP, EW_NEG, EW_GELU, EW_GELU_TANH,
  EW_CAST,
  EW_OP_COUNT
} ew_op;

typedef struct ew_p {
  ew_op op;
  int nin;
  ob_dtype in_dt, out_dt;
  int nd;                      /* collapsed output dims; nd 0: flat (all inputs the output's shape) */
  int64_t dims[RT_MAXD];
  int64_t st[3][RT_MAXD];      /* input strides (0: broadcast) */
  int64_t total;
  float lo, hi, alpha, beta;
  const void *in[3];
  void *out;
} ew_p;

#define GELU_K 0.7978845608028654f

/* Loops worth the host's widest vectors (erf's rational is 14 multiply-adds
 * and a division per element): GCC builds an AVX-512, an AVX2 and a
 * baseline copy and picks one at load (the library is built for any x86-64).
 * CMakeLists.txt compiles this file with -fno-trapping-math, without which
 * the clamp below is not if-converted and nothing vectorizes. The ASan
 * build, for tests and not timings, builds the one copy: three took 18 s
 * of its compile (4 s in release). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define RT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RT_SIMD_CLONES
#endif

/* erf in float, branch-free so that loops of it vectorize: a rational
 * approximation on [-4, 4] (outside, erf is +-1 in float), the one of
 * XLA and Eigen; within 7e-8 of erf. libm's erff is a call per element
 * with branches on the range: BERT's twelve GELUs (393k elements each)
 * took 40 ms of a 240 ms run through it. */
static inline float fast_erf(float x) {
  x = x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x;
  float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

static inline float ew_unary(const ew_p *p, float v) {
  switch (p->op) {
  case EW_RELU: return v > 0 ? v : 0.0f;
  case EW_CLIP: return v < p->lo ? p->lo : v > p->hi ? p->hi : v;
  case EW_SIGMOID: return 1.0f / (1.0f + expf(-v));
  case EW_HARDSIGMOID: {
    float r = p->alpha * v + p->beta;
    return r < 0 ? 0.0f : r > 1 ? 1.0f : r;
  }
  case EW_TANH: return tanhf(v);
  case EW_ERF: return fast_erf(v);
  case EW_SQRT: return sqrtf(v);
  case EW_EXP: return expf(v);
  case EW_NEG: return -v;
  case EW_GELU: return 0.5f * v * (1.0f + fast_erf(v * 0.70710678118654752f));
  case EW_GELU_TANH: return 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
  default: return v;
  }
}

static RT_SIMD_CLONES void erf_run(const float *a, int64_t n, float *o) {
  for (int64_t i = 0; i < n; i++) o[i] = fast_erf(a[i]);
}

static RT_SIMD_CLONES void gelu_run(const float *a, int64_t n, float *o) {
  for (int64_t i = 0; i < n; i++) o[i] = 0.5f * a[i] * (1.0f + fast_erf(a[i] * 0.70710678118654752f));
}

/* One contiguous run of n output elements; input k advances by sk (0 or 1). */
static void ew_run_f32(const ew_p *p, int64_t n, const float *a, int64_t sa, const float *b, int64_t sb, float *o) {
  switch (p->op) {
#define BIN(OP, EXPR)                                                                    \
  case OP:                                                                               \
    if (sa && sb)                                                                        \
      for (int64_t i = 0; i < n; i++) {                                                  \
        float x = a[i], y = b[i];                                                        \
        o[i] = (EXPR);                                                                   \
      }                                                                                  \
    else if (sa) {                                                                       \
      float y = b[0];                                                                    \
      for (int64_t i = 0; i < n; i++) {                                                  \
        float x = a[i];                                                                  \
        o[i] = (EXPR);                                                                   \
      }                                                                                  \
    } else if (sb) {                                                                     \
      float x = a[0];                                                                    \
      for (int64_t i = 0; i < n; i++) {                                                  \
        float y = b[i];                                                                  \
        o[i] = (EXPR);                                                                   \
      }                                                                                  \
    } else {                                                                             \
      float x = a[0], y = b[0], r = (EXPR);                                              \
      for (int64_t i = 0; i < n; i++) o[i] = r;                                          \
    }                                                                                    \
    break;
    BIN(EW_ADD, x + y)
    BIN(EW_SUB, x - y)
    BIN(EW_MUL, x * y)
    BIN(EW_DIV, x / y)
    BIN(EW_POW, powf(x, y))
#undef BIN
  case EW_RELU:
    for (int64_t i = 0; i < n; i++) o[i] = a[i * sa] > 0 ? a[i * sa] : 0.0f;
    break;
  case EW_ERF: /* contiguous runs apart, so that they vectorize */
    if (sa) erf_run(a, n, o);
    else
      for (int64_t i = 0; i < n; i++) o[i] = fast_erf(a[0]);
    break;
  case EW_GELU:
    if (sa) gelu_run(a, n, o);
    else
      for (int64_t i = 0; i < n; i++) o[i] = 0.5f * a[0] * (1.0f + fast_erf(a[0] * 0.70710678118654752f));
    break;
  default:
    for (int64_t i = 0; i < n; i++) o[i] = ew_unary(p, a[i * sa]);
    break;
  }
}

static void ew_run_other(const ew_p *p, int64_t n, const void *const *in, const int64_t *s, void *out) {
  for (int64_t i = 0; i < n; i++) {
    if (p->op == EW_WHERE) {
      bool c = ((const uint8_t *)in[0])[i * s[0]];
      size_t es = ob_dtype_size(p->out_dt);
      memcpy((char *)out + i * (int64_t)es, (const char *)in[c ? 1 : 2] + i * s[c ? 1 : 2] * (int64_t)es, es);
      continue;
    }
    if (p->op == EW_CAST) {
      double v = p->in_dt == OB_F32 ? ((const float *)in[0])[i * s[0]]
                 : p->in_dt == OB_I64 ? (double)((const int64_t *)in[0])[i * s[0]]
                                      : ((const uint8_t *)in[0])[i * s[0]];
      if (p->out_dt == OB_F32) ((float *)out)[i] = (float)v;
      else if (p->out_dt == OB_I64)
        ((int64_t *)out)[i] = p->in_dt == OB_I64 ? ((const int64_t *)in[0])[i * s[0]]
                                                 : (int64_t)(isfinite(v) && fabs(v) < 9e18 ? v : 0);
      else ((uint8_t *)out)[i] = v != 0;
      continue;
    }
    if (p->op == EW_EQUAL) {
      bool eq = p->in_dt == OB_F32   ? ((const float *)in[0])[i * s[0]] == ((const float *)in[1])[i * s[1]]
                : p->in_dt == OB_I64 ? ((const int64_t *)in[0])[i * s[0]] == ((const int64_t *)in[1])[i * s[1]]
                                     : ((const uint8_t *)in[0])[i * s[0]] == ((const uint8_t *)in[1])[i * s[1]];
      ((uint8_t *)out)[i] = eq;
      continue;
    }
    /* int64 arithmetic (shape chains that were not folded) */
    int64_t x = ((const int64_t *)in[0])[i * s[0]], y = p->nin > 1 ? ((const int64_t *)in[1])[i * s[1]] : 0, r = 0;
    switch (p->op) {
    case EW_ADD: r = x + y; break;
    case EW_SUB: r = x - y; break;
    case EW_MUL: r = x * y; break;
    case EW_DIV: r = y ? x / y : 0; break;
    case EW_NEG: r = -x; break;
    default: r = x; break;
    }
    ((int64_t *)out)[i] = r;
  }
}

static void ew_range(void *closure, int64_t begin, int64_t end) {
  const ew_p *p = closure;
  bool fast = p->out_dt == OB_F32 && p->in_dt == OB_F32 && p->op != EW_WHERE && p->op != EW_EQUAL && p->op != EW_CAST;
  if (p->nd == 0) { /* flat: chunks of 4096 elements */
    for (int64_t r = begin; r < end; r++) {
      int64_t o0 = r * 4096, n = p->total - o0 < 4096 ? p->total - o0 : 4096;
      if (fast) {
        ew_run_f32(p, n, (const float *)p->in[0] + o0, 1, p->nin > 1 ? (const float *)p->in[1] + o0 : NULL, 1,
                   (float *)p->out + o0);
      } else {
        const void *in[3];
        int64_t s[3] = {1, 1, 1};
        for (int k = 0; k < p->nin; k++) in[k] = (const char *)p->in[k] + o0 * (int64_t)ob_dtype_size(p->in_dt);
        if (p->op == EW_WHERE) {
          in[0] = (const uint8_t *)p->in[0] + o0;
          for (int k = 1; k < 3; k++) in[k] = (const char *)p->in[k] + o0 * (int64_t)ob_dtype_size(p->out_dt);
        }
        ew_run_other(p, n, in, s, (char *)p->out + o0 * (int64_t)ob_dtype_size(p->out_dt));
      }
    }
    return;
  }
  int nd = p->nd;
  int64_t inner = p->dims[nd - 1];
  size_t oes = ob_dtype_size(p->out_dt);
  for (int64_t r = begin; r < end; r++) {
    int64_t rem = r, off[3] = {0, 0, 0};
    for (int i = nd - 2; i >= 0; i--) {
      int64_t q = rem % p->dims[i];
      rem /= p->dims[i];
      for (int k = 0; k < p->nin; k++) off[k] += q * p->st[k][i];
    }
    void *o = (char *)p->out + r * inner * (int64_t)oes;
    if (fast) {
      ew_run_f32(p, inner, (const float *)p->in[0] + off[0], p->st[0][nd - 1],
                 p->nin > 1 ? (const float *)p->in[1] + off[1] : NULL, p->nin > 1 ? p->st[1][nd - 1] : 0, o);
    } else {
      const void *in[3];
      int64_t s[3];
      for (int k = 0; k < p->nin; k++) {
        size_t es = p->op == EW_WHERE ? (k ? oes : 1) : ob_dtype_size(p->in_dt);
        in[k] = (const char *)p->in[k] + off[k] * (int64_t)es;
        s[k] = p->st[k][nd - 1];
      }
      ew_run_other(p, inner, in, s, o);
    }
  }
}

static int run_ew(ob_rt *rt, rt_step *s) {
  ew_p *p = s->p;
  for (int k = 0; k < p->nin; k++) p->in[k] = s->pin[k];
  p->out = s->pout[0];
  if (p->nd == 0) rt_parallel(rt, (p->total + 4095) / 4096, 4096, ew_range, p);
  else {
    int64_t rows = p->total / p->dims[p->nd - 1];
    rt_parallel(rt, rows, p->dims[p->nd - 1], ew_range, p);
  }
  return 0;
}

static bool same_dims(const ob_graph *g, int a, int b) {
  return ob_graph_tensor_ndim(g, a) == ob_graph_tensor_ndim(g, b) &&
         !memcmp(ob_graph_tensor_dims(g, a), ob_graph_tensor_dims(g, b),
                 sizeof(int64_t) * (size_t)ob_graph_tensor_ndim(g, a));
}

static ob_status plan_ew(ob_rt *rt, int node, ew_op op) {
  const ob_graph *g = rt->g;
  int y = ob_graph_node_output(g, node, 0);
  ew_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  p->op = op;
  int nin = op == EW_WHERE ? 3 : op <= EW_EQUAL ? 2 : 1;
  p->nin = nin;
  int x0 = ob_graph_node_input(g, node, 0);
  p->in_dt = ob_graph_tensor_dtype(g, op == EW_WHERE ? ob_graph_node_input(g, node, 1) : x0);
  p->out_dt = ob_graph_tensor_dtype(g, y);
  p->total = numel(g, y);
  if (op == EW_CLIP) {
    p->lo = -INFINITY, p->hi = INFINITY;
    for (int k = 1; k < 3 && k < ob_graph_node_num_inputs(g, node); k++) {
      int t = ob_graph_node_input(g, node, k);
      if (t < 0) continue;
      const float *d = ob_graph_tensor_data(g, t);
      if (!d) return unsupported(rt, node, "min and max must be constants");
      if (k == 1) p->lo = d[0];
      else p->hi = d[0];
    }
  }
  p->alpha = (float)ob_graph_node_attr_f(g, node, "alpha", 0.2);
  p->beta = (float)ob_graph_node_attr_f(g, node, "beta", 0.5);
  if (op == EW_GELU && !strcmp(ob_graph_node_attr_s(g, node, "approximate", "none"), "tanh")) p->op = EW_GELU_TANH;
  if ((op == EW_NEG || op <= EW_DIV) && p->in_dt == OB_BOOL) return unsupported(rt, node, "boolean arithmetic");
  if (op > EW_EQUAL && op < EW_CAST && op != EW_NEG && p->in_dt != OB_F32)
    return unsupported(rt, node, "a float operator on integers");
  if (op == EW_POW && p->in_dt != OB_F32) return unsupported(rt, node, "integer powers");
  /* all inputs of the output's shape: a flat loop, in any common layout */
  bool flat = true;
  for (int k = 0; k < nin; k++) flat &= same_dims(g, ob_graph_node_input(g, node, k), y);
  rt_layout lay = rl_plain();
  if (flat && p->in_dt == OB_F32 && p->out_dt == OB_F32 && op != EW_WHERE) {
    lay = primary_lay(rt, x0);
    if (lay.kind == RL_NCHWC && ob_graph_tensor_kind(g, x0) == OB_GT_CONST) lay = rl_plain();
  }
  int ins[3];
  for (int k = 0; k < nin; k++) {
    ins[k] = rt_value_for(rt, ob_graph_node_input(g, node, k), lay);
    if (ins[k] < 0) return OB_ERR_INVALID_ARG;
  }
  if (!flat) {
    int yn = ob_graph_tensor_ndim(g, y);
    const int64_t *yd = ob_graph_tensor_dims(g, y);
    int64_t st[3][RT_MAXD];
    for (int k = 0; k < nin; k++) {
      int x = ob_graph_node_input(g, node, k);
      int xn = ob_graph_tensor_ndim(g, x);
      const int64_t *xd = ob_graph_tensor_dims(g, x);
      int64_t xs[RT_MAXD];
      strides_of(xn, xd, xs);
      for (int i = 0; i < yn; i++) {
        int j = i - (yn - xn);
        st[k][i] = j >= 0 && xd[j] != 1 ? xs[j] : 0;
      }
    }
    /* collapse: drop unit dims, merge dims every input steps through alike */
    int m = 0;
    for (int i = 0; i < yn; i++) {
      if (yd[i] == 1) continue;
      bool merge = m > 0;
      for (int k = 0; k < nin && merge; k++) merge = st[k][i] * yd[i] == p->st[k][m - 1] || (!st[k][i] && !p->st[k][m - 1]);
      if (merge) {
        p->dims[m - 1] *= yd[i];
        for (int k = 0; k < nin; k++) p->st[k][m - 1] = st[k][i];
      } else {
        p->dims[m] = yd[i];
        for (int k = 0; k < nin; k++) p->st[k][m] = st[k][i];
        m++;
      }
    }
    if (!m) {
      m = 1;
      p->dims[0] = 1;
      for (int k = 0; k < nin; k++) p->st[k][0] = 0;
    }
    p->nd = m;
  }
  int ov = out_value(rt, node, 0, lay);
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, ins, nin, &ov, 1, run_ew, p);
}

/* ---- Gather ---------------------------------------------------------------------------------- */

typedef struct gather_p {
  int64_t outer, d, inner, nidx;
  size_t es;
  const char *x;
  const int64_t *idx;
  char *y;
  atomic_int bad;
} gather_p;

static void gather_range(void *closure, int64_t begin, int64_t end) {
  gather_p *p = closure;
  for (int64_t r = begin; r < end; r++) {
    int64_t o = r / p->nidx, k = r % p->nidx, v = p->idx[k];
    if (v < 0) v += p->d;
    if (v < 0 || v >= p->d) {
      atomic_store(&p->bad, 1);
      continue;
    }
    memcpy(p->y + (size_t)(r * p->inner) * p->es, p->x + (size_t)((o * p->d + v) * p->inner) * p->es,
           (size_t)p->inner * p->es);
  }
}

static int run_gather(ob_rt *rt, rt_step *s) {
  gather_p *p = s->p;
  p->x = s->pin[0];
  p->idx = s->pin[1];
  p->y = s->pout[0];
  atomic_store(&p->bad, 0);
  rt_parallel(rt, p->outer * p->nidx, p->inner, gather_range, p);
  return atomic_load(&p->bad) ? -1 : 0;
}

static ob_status plan_gather(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0), ix = ob_graph_node_input(g, node, 1);
  int xn = ob_graph_tensor_ndim(g, x);
  const int64_t *xd = ob_graph_tensor_dims(g, x);
  gather_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  int a = norm_axis(ob_graph_node_attr_i(g, node, "axis", 0), xn);
  p->outer = 1, p->inner = 1, p->d = xd[a], p->nidx = numel(g, ix);
  for (int i = 0; i < a; i++) p->outer *= xd[i];
  for (int i = a + 1; i < xn; i++) p->inner *= xd[i];
  p->es = ob_dtype_size(ob_graph_tensor_dtype(g, x));
  int ins[2] = {rt_value_for(rt, x, rl_plain()), rt_value_for(rt, ix, rl_plain())};
  if (ins[0] < 0 || ins[1] < 0) return OB_ERR_INVALID_ARG;
  int ov = out_value(rt, node, 0, rl_plain());
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, ins, 2, &ov, 1, run_gather, p);
}

/* ---- Resize (nearest) ------------------------------------------------------------------------------ */

typedef struct resize_p {
  int nd;
  int64_t ydims[RT_MAXD], xs[RT_MAXD];
  int64_t *map[RT_MAXD];
  size_t es;
  const char *x;
  char *y;
} resize_p;

static void resize_range(void *closure, int64_t begin, int64_t end) {
  const resize_p *p = closure;
  int nd = p->nd;
  int64_t w = p->ydims[nd - 1];
  for (int64_t r = begin; r < end; r++) {
    int64_t rem = r, so = 0;
    for (int i = nd - 2; i >= 0; i--) {
      int64_t q = rem % p->ydims[i];
      rem /= p->ydims[i];
      so += p->map[i][q] * p->xs[i];
    }
    char *d = p->y + (size_t)(r * w) * p->es;
    if (p->es == 4) {
      const float *s = (const float *)p->x + so;
      for (int64_t o = 0; o < w; o++) ((float *)d)[o] = s[p->map[nd - 1][o]];
    } else {
      for (int64_t o = 0; o < w; o++) memcpy(d + (size_t)o * p->es, p->x + (size_t)(so + p->map[nd - 1][o]) * p->es, p->es);
    }
  }
}

static int run_resize(ob_rt *rt, rt_step *s) {
  resize_p *p = s->p;
  p->x = s->pin[0];
  p->y = s->pout[0];
  int64_t rows = 1;
  for (int i = 0; i < p->nd - 1; i++) rows *= p->ydims[i];
  rt_parallel(rt, rows, p->ydims[p->nd - 1], resize_range, p);
  return 0;
}

static ob_status plan_resize(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0), y = ob_graph_node_output(g, node, 0);
  int nd = ob_graph_tensor_ndim(g, x);
  const int64_t *xd = ob_graph_tensor_dims(g, x), *yd = ob_graph_tensor_dims(g, y);
  if (strcmp(ob_graph_node_attr_s(g, node, "mode", "nearest"), "nearest") || nd < 1)
    return unsupported(rt, node, "only nearest resizing");
  resize_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  p->nd = nd;
  p->es = ob_dtype_size(ob_graph_tensor_dtype(g, x));
  strides_of(nd, xd, p->xs);
  /* scales as the reference takes them: from sizes, else the scales input */
  double sc[RT_MAXD];
  int sct = ob_graph_node_num_inputs(g, node) > 2 ? ob_graph_node_input(g, node, 2) : -1;
  int szt = ob_graph_node_num_inputs(g, node) > 3 ? ob_graph_node_input(g, node, 3) : -1;
  for (int k = 0; k < nd; k++) sc[k] = (double)yd[k] / (double)xd[k];
  if (!(szt >= 0 && numel(g, szt) > 0) && sct >= 0 && ob_graph_tensor_data(g, sct) && numel(g, sct) == nd)
    for (int k = 0; k < nd; k++) sc[k] = ((const float *)ob_graph_tensor_data(g, sct))[k];
  const char *ct = ob_graph_node_attr_s(g, node, "coordinate_transformation_mode", "half_pixel");
  const char *nm = ob_graph_node_attr_s(g, node, "nearest_mode", "round_prefer_floor");
  for (int k = 0; k < nd; k++) {
    p->ydims[k] = yd[k];
    p->map[k] = rt_alloc(rt, sizeof(int64_t) * (size_t)yd[k]);
    if (!p->map[k]) return nomem(rt);
    for (int64_t o = 0; o < yd[k]; o++) {
      double c;
      if (!strcmp(ct, "asymmetric")) c = (double)o / sc[k];
      else if (!strcmp(ct, "align_corners")) c = yd[k] > 1 ? (double)o * (double)(xd[k] - 1) / (double)(yd[k] - 1) : 0;
      else if (!strcmp(ct, "pytorch_half_pixel")) c = yd[k] > 1 ? ((double)o + 0.5) / sc[k] - 0.5 : 0;
      else c = ((double)o + 0.5) / sc[k] - 0.5;
      double r;
      if (!strcmp(nm, "floor")) r = floor(c);
      else if (!strcmp(nm, "ceil")) r = ceil(c);
      else if (!strcmp(nm, "round_prefer_ceil")) r = floor(c + 0.5);
      else r = (c - floor(c) == 0.5) ? floor(c) : floor(c + 0.5);
      int64_t i = (int64_t)r;
      p->map[k][o] = i < 0 ? 0 : i >= xd[k] ? xd[k] - 1 : i;
    }
  }
  int in = rt_value_for(rt, x, rl_plain());
  if (in < 0) return OB_ERR_INVALID_ARG;
  int ov = out_value(rt, node, 0, rl_plain());
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, &in, 1, &ov, 1, run_resize, p);
}

/* ---- pooling, plain (block 1) or NCHW[b]c -------------------------------------------------------------------- */

typedef struct pool_p {
  int64_t n, c, h, w, oh, ow, r, s, sh, sw, pt, pl, pb, pr, b;
  bool max, incl;
  const float *x;
  float *y;
} pool_p;

/* One output row; inlined with B a constant (the common blocks) so the
 * channel loops become vector operations. */
static inline __attribute__((always_inline)) void pool_row(const pool_p *p, int64_t u, int64_t B) {
  int64_t oy = u % p->oh, ncb = u / p->oh;
  const float *xs = p->x + ncb * p->h * p->w * B;
  float *ys = p->y + (ncb * p->oh + oy) * p->ow * B;
  float acc[64];
  int64_t r0 = oy * p->sh - p->pt, r1 = r0 + p->r;
  int64_t cnt_r = (r1 < p->h + p->pb ? r1 : p->h + p->pb) - r0; /* rows inside the padded input */
  if (r0 < 0) r0 = 0;
  if (r1 > p->h) r1 = p->h;
  for (int64_t ox = 0; ox < p->ow; ox++) {
    for (int64_t j = 0; j < B; j++) acc[j] = p->max ? -INFINITY : 0.0f;
    int64_t q0 = ox * p->sw - p->pl, q1 = q0 + p->s;
    int64_t cnt_q = (q1 < p->w + p->pr ? q1 : p->w + p->pr) - q0;
    if (q0 < 0) q0 = 0;
    if (q1 > p->w) q1 = p->w;
    for (int64_t iy = r0; iy < r1; iy++)
      for (int64_t ix = q0; ix < q1; ix++) {
        const float *v = xs + (iy * p->w + ix) * B;
        if (p->max)
          for (int64_t j = 0; j < B; j++) acc[j] = v[j] > acc[j] ? v[j] : acc[j];
        else
          for (int64_t j = 0; j < B; j++) acc[j] += v[j];
      }
    float *o = ys + ox * B;
    if (p->max) {
      for (int64_t j = 0; j < B; j++) o[j] = acc[j];
    } else {
      int64_t cnt = (r1 - r0) * (q1 - q0), cnt_pad = cnt_r * cnt_q;
      float inv = 1.0f / (float)(p->incl ? cnt_pad : cnt > 0 ? cnt : 1);
      for (int64_t j = 0; j < B; j++) o[j] = acc[j] * inv;
    }
  }
}

/* A max pool's output row in a block narrower than a vector (plain is block
 * 1): the maximum down the window's rows first, along the whole input row
 * (w * B contiguous floats, so it runs at full vector width), then across
 * each output's columns. The generic row above runs a vector of B lanes per
 * output and window position: a scalar loop for the plain layout (0.39 ms
 * for squeezenet's first pool at 1 thread, where ONNX Runtime takes 0.17),
 * a quarter vector for NCHW4c. */
static inline __attribute__((always_inline)) void pool_row_sep_max(const pool_p *p, int64_t u, float *tmp, int64_t B) {
  int64_t oy = u % p->oh, ncb = u / p->oh, wb = p->w * B;
  const float *xs = p->x + ncb * p->h * wb;
  float *ys = p->y + (ncb * p->oh + oy) * p->ow * B;
  int64_t r0 = oy * p->sh - p->pt, r1 = r0 + p->r;
  if (r0 < 0) r0 = 0;
  if (r1 > p->h) r1 = p->h;
  for (int64_t i = 0; i < wb; i++) tmp[i] = -INFINITY;
  for (int64_t iy = r0; iy < r1; iy++) {
    const float *row = xs + iy * wb;
    for (int64_t i = 0; i < wb; i++) tmp[i] = row[i] > tmp[i] ? row[i] : tmp[i];
  }
  for (int64_t ox = 0; ox < p->ow; ox++) {
    int64_t q0 = ox * p->sw - p->pl, q1 = q0 + p->s;
    if (q0 < 0) q0 = 0;
    if (q1 > p->w) q1 = p->w;
    float m[16];
    for (int64_t j = 0; j < B; j++) m[j] = -INFINITY;
    for (int64_t ix = q0; ix < q1; ix++)
      for (int64_t j = 0; j < B; j++) m[j] = tmp[ix * B + j] > m[j] ? tmp[ix * B + j] : m[j];
    for (int64_t j = 0; j < B; j++) ys[ox * B + j] = m[j];
  }
}

/* The widest input row (w * block floats) pool_row_sep_max takes: its row
 * of maxima is on the stack. */
#define POOL_SEP_MAX_FLOATS 8192

/* Cloned per vector width: the library is built for the baseline ISA, and
 * a 16-channel block is one AVX-512 maximum per window position where SSE2
 * needs four (squeezenet's first pool: 0.39 -> 0.17 ms at 1 thread). */
static RT_SIMD_CLONES void pool_range(void *closure, int64_t begin, int64_t end) {
  const pool_p *p = closure;
  if (p->max && p->b < 16 && p->w * p->b <= POOL_SEP_MAX_FLOATS) {
    float tmp[POOL_SEP_MAX_FLOATS];
    for (int64_t u = begin; u < end; u++) switch (p->b) {
      case 8: pool_row_sep_max(p, u, tmp, 8); break;
      case 4: pool_row_sep_max(p, u, tmp, 4); break;
      case 2: pool_row_sep_max(p, u, tmp, 2); break;
      case 1: pool_row_sep_max(p, u, tmp, 1); break;
      default: pool_row_sep_max(p, u, tmp, p->b); break;
      }
    return;
  }
  for (int64_t u = begin; u < end; u++) { /* u = (n, channel block, output row) */
    /* every block the convolutions' configs give their outputs (half a
     * vector to two): a block left to the generic case runs a scalar loop
     * (4x slower on ResNet-18's NCHW32c max pool) */
    switch (p->b) {
    case 64: pool_row(p, u, 64); break;
    case 32: pool_row(p, u, 32); break;
    case 16: pool_row(p, u, 16); break;
    case 8: pool_row(p, u, 8); break;
    case 4: pool_row(p, u, 4); break;
    case 2: pool_row(p, u, 2); break;
    case 1: pool_row(p, u, 1); break;
    default: pool_row(p, u, p->b); break;
    }
  }
}

static int run_pool(ob_rt *rt, rt_step *s) {
  pool_p *p = s->p;
  p->x = s->pin[0];
  p->y = s->pout[0];
  rt_parallel(rt, p->n * (p->c / p->b) * p->oh, p->ow * p->r * p->s * p->b, pool_range, p);
  return 0;
}

static ob_status plan_pool(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0), y = ob_graph_node_output(g, node, 0);
  const int64_t *xd = ob_graph_tensor_dims(g, x), *yd = ob_graph_tensor_dims(g, y);
  if (ob_graph_tensor_ndim(g, x) != 4) return unsupported(rt, node, "only 2-D pooling");
  pool_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  int64_t ks[2], st[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  if (ob_graph_node_attr_ints(g, node, "kernel_shape", ks, 2) != 2) return unsupported(rt, node, "kernel_shape");
  int64_t tmp[4];
  if (ob_graph_node_attr_ints(g, node, "strides", tmp, 2) == 2) st[0] = tmp[0], st[1] = tmp[1];
  if (ob_graph_node_attr_ints(g, node, "pads", tmp, 4) == 4) memcpy(pads, tmp, sizeof pads);
  p->n = xd[0], p->c = xd[1], p->h = xd[2], p->w = xd[3], p->oh = yd[2], p->ow = yd[3];
  p->r = ks[0], p->s = ks[1], p->sh = st[0], p->sw = st[1];
  p->pt = pads[0], p->pl = pads[1], p->pb = pads[2], p->pr = pads[3];
  p->max = ob_graph_node_op(g, node) == OB_GOP_MAXPOOL;
  p->incl = ob_graph_node_attr_i(g, node, "count_include_pad", 0) != 0;
  rt_layout lay = primary_lay(rt, x);
  if (lay.block > 64) lay = rl_plain();
  p->b = lay.kind == RL_NCHWC ? lay.block : 1;
  int in = rt_value_for(rt, x, lay);
  if (in < 0) return OB_ERR_INVALID_ARG;
  int ov = out_value(rt, node, 0, lay);
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, &in, 1, &ov, 1, run_pool, p);
}

/* Global average pooling: [N, C, ...] -> [N, C, 1...], input plain or
 * NCHW[b]c, output plain. */
typedef struct gap_p {
  int64_t n, c, hw, b;
  const float *x;
  float *y;
} gap_p;

static void gap_range(void *closure, int64_t begin, int64_t end) {
  const gap_p *p = closure;
  float inv = 1.0f / (float)p->hw;
  for (int64_t u = begin; u < end; u++) { /* (n, channel block) */
    const float *xs = p->x + u * p->hw * p->b;
    float acc[64];
    for (int64_t j = 0; j < p->b; j++) acc[j] = 0;
    for (int64_t i = 0; i < p->hw; i++)
      for (int64_t j = 0; j < p->b; j++) acc[j] += xs[i * p->b + j];
    for (int64_t j = 0; j < p->b; j++) p->y[u * p->b + j] = acc[j] * inv;
  }
}

static int run_gap(ob_rt *rt, rt_step *s) {
  gap_p *p = s->p;
  p->x = s->pin[0];
  p->y = s->pout[0];
  rt_parallel(rt, p->n * p->c / p->b, p->hw * p->b, gap_range, p);
  return 0;
}

static ob_status plan_gap(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0);
  const int64_t *xd = ob_graph_tensor_dims(g, x);
  gap_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  p->n = xd[0], p->c = xd[1];
  p->hw = numel(g, x) / (p->n * p->c > 0 ? p->n * p->c : 1);
  rt_layout lay = primary_lay(rt, x);
  if (lay.block > 64) lay = rl_plain();
  p->b = lay.kind == RL_NCHWC ? lay.block : 1;
  int in = rt_value_for(rt, x, lay);
  if (in < 0) return OB_ERR_INVALID_ARG;
  /* with H = W = 1 blocked and plain are the same bytes */
  int ov = out_value(rt, node, 0, rl_plain());
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, &in, 1, &ov, 1, run_gap, p);
}

/* ---- normalization, softmax, reductions -------------------------------------------------------------------- */

/* BatchNormalization: y = x * scale[c] + shift[c], plain or blocked. */
typedef struct bn_p {
  int64_t n, c, hw, b;
  float eps;
  float *scale, *shift;
  const float *x;
  float *y;
} bn_p;

static void bn_range(void *closure, int64_t begin, int64_t end) {
  const bn_p *p = closure;
  for (int64_t u = begin; u < end; u++) { /* (n, channel block) */
    int64_t c0 = (u % (p->c / p->b)) * p->b;
    const float *xs = p->x + u * p->hw * p->b;
    float *ys = p->y + u * p->hw * p->b;
    const float *sc = p->scale + c0, *sh = p->shift + c0;
    if (p->b == 1) {
      float a = sc[0], d = sh[0];
      for (int64_t i = 0; i < p->hw; i++) ys[i] = xs[i] * a + d;
    } else {
      for (int64_t i = 0; i < p->hw; i++)
        for (int64_t j = 0; j < p->b; j++) ys[i * p->b + j] = xs[i * p->b + j] * sc[j] + sh[j];
    }
  }
}

static int run_bn(ob_rt *rt, rt_step *s) {
  bn_p *p = s->p;
  const float *g = s->pin[1], *b = s->pin[2], *mu = s->pin[3], *var = s->pin[4];
  for (int64_t c = 0; c < p->c; c++) {
    float rs = 1.0f / sqrtf(var[c] + p->eps);
    p->scale[c] = rs * g[c];
    p->shift[c] = b[c] - mu[c] * rs * g[c];
  }
  p->x = s->pin[0];
  p->y = s->pout[0];
  rt_parallel(rt, p->n * p->c / p->b, p->hw * p->b, bn_range, p);
  return 0;
}

static ob_status plan_bn(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0);
  const int64_t *xd = ob_graph_tensor_dims(g, x);
  bn_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  p->n = xd[0], p->c = xd[1];
  p->hw = numel(g, x) / (p->n * p->c > 0 ? p->n * p->c : 1);
  p->eps = (float)ob_graph_node_attr_f(g, node, "epsilon", 1e-5);
  p->scale = rt_alloc(rt, sizeof(float) * (size_t)p->c);
  p->shift = rt_alloc(rt, sizeof(float) * (size_t)p->c);
  if (!p->scale || !p->shift) return nomem(rt);
  rt_layout lay = ob_graph_tensor_ndim(g, x) == 4 ? primary_lay(rt, x) : rl_plain();
  if (lay.block > 64) lay = rl_plain();
  p->b = lay.kind == RL_NCHWC ? lay.block : 1;
  int ins[5];
  for (int k = 0; k < 5; k++) {
    ins[k] = rt_value_for(rt, ob_graph_node_input(g, node, k), k ? rl_plain() : lay);
    if (ins[k] < 0) return OB_ERR_INVALID_ARG;
  }
  int ov = out_value(rt, node, 0, lay);
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, ins, 5, &ov, 1, run_bn, p);
}

/* LayerNormalization over the trailing dims from `axis`. */
typedef struct ln_p {
  int64_t rows, inner;
  float eps;
  const float *x, *s, *b;
  float *y;
} ln_p;

/* Sum of x[0..n) in 16 partial sums (a vector's lanes), after subtracting
 * c and squaring when sq. */
static inline float sum16(const float *x, int64_t n, float c, bool sq) {
  float acc[16] = {0}, s = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) {
      float d = x[i + j] - c;
      acc[j] += sq ? d * d : d;
    }
  for (int j = 0; j < 16; j++) s += acc[j];
  for (; i < n; i++) s += sq ? (x[i] - c) * (x[i] - c) : x[i] - c;
  return s;
}

/* One row of LayerNormalization (BERT: 768 floats, 24 rows of 128 per run). */
static RT_SIMD_CLONES void ln_row(const float *x, float *y, const float *sc, const float *b, int64_t n, float eps) {
  float mean = sum16(x, n, 0.0f, false) / (float)n;
  float rs = 1.0f / sqrtf(sum16(x, n, mean, true) / (float)n + eps);
  if (b)
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - mean) * rs * sc[i] + b[i];
  else
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - mean) * rs * sc[i];
}

static void ln_range(void *closure, int64_t begin, int64_t end) {
  const ln_p *p = closure;
  int64_t n = p->inner;
  for (int64_t r = begin; r < end; r++) ln_row(p->x + r * n, p->y + r * n, p->s, p->b, n, p->eps);
}

static int run_ln(ob_rt *rt, rt_step *s) {
  ln_p *p = s->p;
  p->x = s->pin[0];
  p->s = s->pin[1];
  p->b = s->nin > 2 ? s->pin[2] : NULL;
  p->y = s->pout[0];
  rt_parallel(rt, p->rows, p->inner * 4, ln_range, p);
  return 0;
}

static ob_status plan_ln(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0);
  int nd = ob_graph_tensor_ndim(g, x);
  const int64_t *xd = ob_graph_tensor_dims(g, x);
  ln_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  int a = norm_axis(ob_graph_node_attr_i(g, node, "axis", -1), nd);
  p->inner = 1;
  for (int i = a; i < nd; i++) p->inner *= xd[i];
  p->rows = numel(g, x) / (p->inner ? p->inner : 1);
  p->eps = (float)ob_graph_node_attr_f(g, node, "epsilon", 1e-5);
  int ins[3], nin = 0;
  for (int k = 0; k < 3 && k < ob_graph_node_num_inputs(g, node); k++) {
    int t = ob_graph_node_input(g, node, k);
    if (t < 0) break;
    if ((ins[nin++] = rt_value_for(rt, t, rl_plain())) < 0) return OB_ERR_INVALID_ARG;
  }
  int ov = out_value(rt, node, 0, rl_plain());
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, ins, nin, &ov, 1, run_ln, p);
}

/* Softmax over one axis: [outer, len, inner]. */
typedef struct sm_p {
  int64_t outer, len, inner;
  const float *x;
  float *y;
} sm_p;

/* exp in float, branch-free for the same reason as fast_erf: 2^n * e^r with
 * n = round(x / ln 2) (the 1.5 * 2^23 trick rounds), r reduced in two steps
 * (Cody and Waite) and e^r by its degree-6 Taylor polynomial on
 * |r| <= ln2 / 2 (within 4e-6 relative); x is clamped so that 2^n stays normal
 * (e^-87.3 is the smallest normal float: a softmax underflowing to it
 * instead of 0 is off by 1e-38). */
static inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
  float t = x * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  /* the integer n sits in t's low mantissa bits; it is added to p's
   * exponent in unsigned arithmetic (a negative n shifted is undefined) */
  union { float f; uint32_t i; } u = {t}, v = {p};
  v.i += (u.i - 0x4B400000u) << 23;
  return v.f;
}

/* A softmax over one contiguous row: max and sum each in 16 partial
 * results (a vector's lanes; one running max or sum does not vectorize
 * without reassociation), exponentials, scale. */
static RT_SIMD_CLONES void sm_row(const float *x, float *y, int64_t len) {
  float m16[16], acc[16] = {0};
  for (int j = 0; j < 16; j++) m16[j] = -INFINITY;
  int64_t i = 0;
  for (; i + 16 <= len; i += 16)
    for (int j = 0; j < 16; j++) m16[j] = x[i + j] > m16[j] ? x[i + j] : m16[j];
  float mx = -INFINITY;
  for (int j = 0; j < 16; j++) mx = m16[j] > mx ? m16[j] : mx;
  for (; i < len; i++) mx = x[i] > mx ? x[i] : mx;
  for (i = 0; i < len; i++) y[i] = fast_exp(x[i] - mx);
  for (i = 0; i + 16 <= len; i += 16)
    for (int j = 0; j < 16; j++) acc[j] += y[i + j];
  float s = 0;
  for (int j = 0; j < 16; j++) s += acc[j];
  for (; i < len; i++) s += y[i];
  float inv = 1.0f / s;
  for (int64_t k = 0; k < len; k++) y[k] *= inv;
}

static void sm_range(void *closure, int64_t begin, int64_t end) {
  const sm_p *p = closure;
  if (p->inner == 1) {
    for (int64_t u = begin; u < end; u++) sm_row(p->x + u * p->len, p->y + u * p->len, p->len);
    return;
  }
  for (int64_t u = begin; u < end; u++) {
    int64_t o = u / p->inner, q = u % p->inner;
    const float *x = p->x + o * p->len * p->inner + q;
    float *y = p->y + o * p->len * p->inner + q;
    float mx = -INFINITY, s = 0;
    for (int64_t i = 0; i < p->len; i++) mx = x[i * p->inner] > mx ? x[i * p->inner] : mx;
    for (int64_t i = 0; i < p->len; i++) {
      float e = expf(x[i * p->inner] - mx);
      y[i * p->inner] = e;
      s += e;
    }
    float inv = 1.0f / s;
    for (int64_t i = 0; i < p->len; i++) y[i * p->inner] *= inv;
  }
}

static int run_sm(ob_rt *rt, rt_step *s) {
  sm_p *p = s->p;
  p->x = s->pin[0];
  p->y = s->pout[0];
  rt_parallel(rt, p->outer * p->inner, p->len * 8, sm_range, p);
  return 0;
}

static ob_status plan_softmax(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0);
  int nd = ob_graph_tensor_ndim(g, x);
  const int64_t *xd = ob_graph_tensor_dims(g, x);
  sm_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  int a = norm_axis(ob_graph_node_attr_i(g, node, "axis", -1), nd);
  p->outer = 1, p->inner = 1, p->len = xd[a];
  for (int i = 0; i < a; i++) p->outer *= xd[i];
  for (int i = a + 1; i < nd; i++) p->inner *= xd[i];
  int in = rt_value_for(rt, x, rl_plain());
  if (in < 0) return OB_ERR_INVALID_ARG;
  int ov = out_value(rt, node, 0, rl_plain());
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, &in, 1, &ov, 1, run_sm, p);
}

/* ReduceMean: the kept dims in order, the reduced ones summed. */
typedef struct rm_p {
  int nd;
  int64_t dims[RT_MAXD];
  bool red[RT_MAXD];
  int64_t nout, count;
  const float *x;
  float *y;
} rm_p;

static int run_rm(ob_rt *rt, rt_step *s) {
  (void)rt;
  rm_p *p = s->p;
  p->x = s->pin[0];
  p->y = s->pout[0];
  int64_t total = p->nout * p->count;
  for (int64_t i = 0; i < p->nout; i++) p->y[i] = 0;
  int64_t idx[RT_MAXD] = {0};
  for (int64_t i = 0; i < total; i++) {
    int64_t o = 0;
    for (int k = 0; k < p->nd; k++)
      if (!p->red[k]) o = o * p->dims[k] + idx[k];
    p->y[o] += p->x[i];
    for (int k = p->nd - 1; k >= 0; k--) {
      if (++idx[k] < p->dims[k]) break;
      idx[k] = 0;
    }
  }
  float inv = 1.0f / (float)(p->count ? p->count : 1);
  for (int64_t i = 0; i < p->nout; i++) p->y[i] *= inv;
  return 0;
}

static ob_status plan_reducemean(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0), y = ob_graph_node_output(g, node, 0);
  int nd = ob_graph_tensor_ndim(g, x);
  const int64_t *xd = ob_graph_tensor_dims(g, x);
  rm_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  p->nd = nd;
  int64_t ax[RT_MAXD];
  int nax = ob_graph_node_attr_ints(g, node, "axes", ax, RT_MAXD);
  for (int i = 0; i < nd; i++) p->dims[i] = xd[i], p->red[i] = nax < 0;
  for (int i = 0; i < nax; i++) p->red[norm_axis(ax[i], nd)] = true;
  p->nout = numel(g, y);
  p->count = p->nout ? numel(g, x) / p->nout : 1;
  int in = rt_value_for(rt, x, rl_plain());
  if (in < 0) return OB_ERR_INVALID_ARG;
  int ov = out_value(rt, node, 0, rl_plain());
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, &in, 1, &ov, 1, run_rm, p);
}

/* ---- matrix products the operator library does not map ---------------------------------------------------- */

/* C[M, N] (+)= alpha * A[M, K] * B, B row-major [K, N]: the inner loop runs
 * along a row of B and of C. */
static void gemm_kn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, bool ta, const float *B, float *C,
                    float alpha, bool accumulate) {
  for (int64_t i = 0; i < M; i++) {
    float *c = C + i * N;
    if (!accumulate)
      for (int64_t j = 0; j < N; j++) c[j] = 0;
    for (int64_t k = 0; k < K; k++) {
      float a = alpha * (ta ? A[k * lda + i] : A[i * lda + k]);
      const float *b = B + k * N;
      for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
    }
  }
}

typedef struct mm_p {
  int64_t nbatch, m, n, k;
  int nd;                     /* batch dims of the output */
  int64_t bdims[RT_MAXD], sa[RT_MAXD], sb[RT_MAXD];
  bool gemm, ta;
  float alpha, beta;
  int64_t cn;                 /* Gemm: elements of C (broadcast to [M, N]) */
  int64_t cdims[2];
  const float *a, *b, *c;
  float *y;
} mm_p;

static void mm_range(void *closure, int64_t begin, int64_t end) {
  const mm_p *p = closure;
  for (int64_t u = begin; u < end; u++) { /* (batch, row block of 16) */
    int64_t rb = (p->m + 15) / 16, bi = u / rb, r0 = (u % rb) * 16;
    int64_t r1 = r0 + 16 < p->m ? r0 + 16 : p->m;
    int64_t rem = bi, oa = 0, ob = 0;
    for (int i = p->nd - 1; i >= 0; i--) {
      int64_t q = rem % p->bdims[i];
      rem /= p->bdims[i];
      oa += q * p->sa[i];
      ob += q * p->sb[i];
    }
    const float *A = p->a + oa * p->m * p->k;
    const float *B = p->b + ob * p->k * p->n;
    float *Y = p->y + bi * p->m * p->n;
    if (p->ta) {
      gemm_kn(r1 - r0, p->n, p->k, A + r0, p->m, true, B, Y + r0 * p->n, p->alpha, false);
    } else {
      gemm_kn(r1 - r0, p->n, p->k, A + r0 * p->k, p->k, false, B, Y + r0 * p->n, p->alpha, false);
    }
    if (p->gemm && p->c)
      for (int64_t i = r0; i < r1; i++)
        for (int64_t j = 0; j < p->n; j++) {
          int64_t ci = (p->cdims[0] == 1 ? 0 : i) * (p->cdims[1] == 1 ? 1 : p->n) + (p->cdims[1] == 1 ? 0 : j);
          Y[i * p->n + j] += p->beta * p->c[ci];
        }
  }
}

static int run_mm(ob_rt *rt, rt_step *s) {
  mm_p *p = s->p;
  p->a = s->pin[0];
  p->b = s->pin[1];
  p->c = s->nin > 2 ? s->pin[2] : NULL;
  p->y = s->pout[0];
  rt_parallel(rt, p->nbatch * ((p->m + 15) / 16), 16 * p->n * p->k, mm_range, p);
  return 0;
}

static ob_status plan_matmul(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  ob_gop op = ob_graph_node_op(g, node);
  int a = ob_graph_node_input(g, node, 0), b = ob_graph_node_input(g, node, 1);
  int an = ob_graph_tensor_ndim(g, a), bn = ob_graph_tensor_ndim(g, b);
  const int64_t *ad = ob_graph_tensor_dims(g, a), *bd = ob_graph_tensor_dims(g, b);
  mm_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  int ins[3], nin = 2;
  p->alpha = 1, p->beta = 1;
  rt_layout blay = rl_plain();
  if (op == OB_GOP_GEMM) {
    p->gemm = true;
    p->ta = ob_graph_node_attr_i(g, node, "transA", 0) != 0;
    bool tb = ob_graph_node_attr_i(g, node, "transB", 0) != 0;
    p->alpha = (float)ob_graph_node_attr_f(g, node, "alpha", 1.0);
    p->beta = (float)ob_graph_node_attr_f(g, node, "beta", 1.0);
    p->m = p->ta ? ad[1] : ad[0];
    p->k = p->ta ? ad[0] : ad[1];
    p->n = tb ? bd[0] : bd[1];
    p->nbatch = 1;
    if (tb) blay = (rt_layout){RL_KN_T, 0}; /* [N, K] read as [K, N] */
    int c = ob_graph_node_num_inputs(g, node) > 2 ? ob_graph_node_input(g, node, 2) : -1;
    if (c >= 0) {
      int cn = ob_graph_tensor_ndim(g, c);
      const int64_t *cd = ob_graph_tensor_dims(g, c);
      p->cdims[0] = cn >= 2 ? cd[cn - 2] : 1;
      p->cdims[1] = cn >= 1 ? cd[cn - 1] : 1;
      if ((ins[2] = rt_value_for(rt, c, rl_plain())) < 0) return OB_ERR_INVALID_ARG;
      nin = 3;
    }
  } else if (op == OB_GOP_DENSE) {
    /* y[..., N] = x[..., K] * w[N, K]^T (+ bias) (+ residual) */
    p->k = ad[an - 1];
    p->m = numel(g, a) / p->k;
    p->n = bd[0];
    p->nbatch = 1;
    blay = (rt_layout){RL_KN_T, 0};
    if (ob_graph_node_num_inputs(g, node) > 3 && ob_graph_node_input(g, node, 3) >= 0)
      return unsupported(rt, node, "a residual without a workload");
    int c = ob_graph_node_num_inputs(g, node) > 2 ? ob_graph_node_input(g, node, 2) : -1;
    if (c >= 0) {
      p->gemm = true;
      p->cdims[0] = 1, p->cdims[1] = p->n;
      if ((ins[2] = rt_value_for(rt, c, rl_plain())) < 0) return OB_ERR_INVALID_ARG;
      nin = 3;
    }
    if (*ob_graph_node_attr_s(g, node, "activation", "")) return unsupported(rt, node, "a fused activation without a workload");
  } else {
    if (an < 2 || bn < 2) return unsupported(rt, node, "1-D operands");
    p->m = ad[an - 2], p->k = ad[an - 1], p->n = bd[bn - 1];
    int y = ob_graph_node_output(g, node, 0);
    int yn = ob_graph_tensor_ndim(g, y);
    const int64_t *yd = ob_graph_tensor_dims(g, y);
    p->nd = yn - 2;
    p->nbatch = 1;
    int64_t as = 1, bs = 1;
    for (int i = p->nd - 1; i >= 0; i--) {
      int ja = i - (p->nd - (an - 2)), jb = i - (p->nd - (bn - 2));
      p->bdims[i] = yd[i];
      p->sa[i] = ja >= 0 && ad[ja] != 1 ? as : 0;
      p->sb[i] = jb >= 0 && bd[jb] != 1 ? bs : 0;
      if (ja >= 0) as *= ad[ja];
      if (jb >= 0) bs *= bd[jb];
      p->nbatch *= yd[i];
    }
  }
  if ((ins[0] = rt_value_for(rt, a, rl_plain())) < 0) return OB_ERR_INVALID_ARG;
  if ((ins[1] = rt_value_for(rt, b, blay)) < 0) return OB_ERR_INVALID_ARG;
  int ov = out_value(rt, node, 0, rl_plain());
  if (ov < 0) return nomem(rt);
  return add_step(rt, node, ins, nin, &ov, 1, run_mm, p);
}

/* LSTM, forward, ONNX gates i, o, f, c: the input projection of all steps
 * at once, then one [B, H] x [H, 4H] product per step. */
typedef struct lstm_p {
  int64_t T, B, I, H;
  float *gx, *h, *c, *gh;
} lstm_p;

static float sigmf(float v) { return 1.0f / (1.0f + expf(-v)); }

static int run_lstm(ob_rt *rt, rt_step *s) {
  (void)rt;
  lstm_p *p = s->p;
  const float *X = s->pin[0], *Wt = s->pin[1], *Rt = s->pin[2], *Bi = s->nin > 3 ? s->pin[3] : NULL;
  float *Y = s->pout[0];
  int64_t T = p->T, B = p->B, I = p->I, H = p->H, G = 4 * H;
  gemm_kn(T * B, G, I, X, I, false, Wt, p->gx, 1.0f, false);
  memset(p->h, 0, sizeof(float) * (size_t)(B * H));
  memset(p->c, 0, sizeof(float) * (size_t)(B * H));
  for (int64_t t = 0; t < T; t++) {
    gemm_kn(B, G, H, p->h, H, false, Rt, p->gh, 1.0f, false);
    for (int64_t b = 0; b < B; b++) {
      const float *gx = p->gx + (t * B + b) * G, *gh = p->gh + b * G;
      for (int64_t j = 0; j < H; j++) {
        float bi[4] = {0, 0, 0, 0};
        if (Bi)
          for (int q = 0; q < 4; q++) bi[q] = Bi[q * H + j] + Bi[G + q * H + j];
        float ig = sigmf(gx[j] + gh[j] + bi[0]), og = sigmf(gx[H + j] + gh[H + j] + bi[1]);
        float fg = sigmf(gx[2 * H + j] + gh[2 * H + j] + bi[2]), cg = tanhf(gx[3 * H + j] + gh[3 * H + j] + bi[3]);
        float cn = fg * p->c[b * H + j] + ig * cg;
        p->c[b * H + j] = cn;
        Y[(t * B + b) * H + j] = og * tanhf(cn);
      }
      memcpy(p->h + b * H, Y + (t * B + b) * H, sizeof(float) * (size_t)H);
    }
  }
  if (s->nout > 1) memcpy(s->pout[1], p->h, sizeof(float) * (size_t)(B * H));
  if (s->nout > 2) memcpy(s->pout[2], p->c, sizeof(float) * (size_t)(B * H));
  return 0;
}

static ob_status plan_lstm(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0), w = ob_graph_node_input(g, node, 1), r = ob_graph_node_input(g, node, 2);
  const int64_t *xd = ob_graph_tensor_dims(g, x), *wd = ob_graph_tensor_dims(g, w);
  lstm_p *p = rt_alloc(rt, sizeof *p);
  if (!p) return nomem(rt);
  p->T = xd[0], p->B = xd[1], p->I = xd[2], p->H = wd[1] / 4;
  /* working memory of the routine: the runtime's arena (one run at a time) */
  p->gx = rt_alloc(rt, sizeof(float) * (size_t)(p->T * p->B * 4 * p->H));
  p->gh = rt_alloc(rt, sizeof(float) * (size_t)(p->B * 4 * p->H));
  p->h = rt_alloc(rt, sizeof(float) * (size_t)(p->B * p->H));
  p->c = rt_alloc(rt, sizeof(float) * (size_t)(p->B * p->H));
  if (!p->gx || !p->gh || !p->h || !p->c) return nomem(rt);
  int ins[4], nin = 3;
  ins[0] = rt_value_for(rt, x, rl_plain());
  ins[1] = rt_value_for(rt, w, (rt_layout){RL_KN_T, 0}); /* [1, 4H, I] -> [1, I, 4H] */
  ins[2] = rt_value_for(rt, r, (rt_layout){RL_KN_T, 0});
  if (ob_graph_node_num_inputs(g, node) > 3 && ob_graph_node_input(g, node, 3) >= 0)
    ins[nin++] = rt_value_for(rt, ob_graph_node_input(g, node, 3), rl_plain());
  for (int k = 0; k < nin; k++)
    if (ins[k] < 0) return OB_ERR_INVALID_ARG;
  int outs[3], nout = ob_graph_node_num_outputs(g, node);
  for (int k = 0; k < nout; k++)
    if ((outs[k] = out_value(rt, node, k, rl_plain())) < 0) return nomem(rt);
  return add_step(rt, node, ins, nin, outs, nout, run_lstm, p);
}

/* ---- constants of the shapes -------------------------------------------------------------------------- */

/* Shape, ConstantOfShape, Range: their outputs depend on shapes and
 * constants only, so they are computed once, here. */
static ob_status plan_const(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  const void *in[8] = {0};
  int nin = ob_graph_node_num_inputs(g, node);
  for (int k = 0; k < nin && k < 8; k++) {
    int t = ob_graph_node_input(g, node, k);
    if (t < 0) continue;
    in[k] = ob_graph_tensor_data(g, t);
    if (!in[k] && ob_graph_node_op(g, node) != OB_GOP_SHAPE) return unsupported(rt, node, "its inputs are not constant");
  }
  int y = ob_graph_node_output(g, node, 0);
  int v = out_value(rt, node, 0, rl_plain());
  if (v < 0) return nomem(rt);
  rt_val *cv = &rt->v[v];
  cv->is_const = true;
  cv->def = -1;
  cv->owned = malloc(cv->bytes ? cv->bytes : 1);
  if (!cv->owned) return nomem(rt);
  void *out[1] = {cv->owned};
  ob_status st = ob_graph_node_reference(rt->ctx, g, node, in, out);
  if (st) return st;
  cv->cdata = cv->owned;
  (void)y;
  return OB_OK;
}

/* ---- dispatch --------------------------------------------------------------------------------------------- */

bool rt_native_takes_blocked(const ob_rt *rt, int node) {
  switch (ob_graph_node_op(rt->g, node)) {
  case OB_GOP_MAXPOOL: case OB_GOP_AVGPOOL: case OB_GOP_GLOBALAVGPOOL: return true;
  case OB_GOP_CONCAT: {
    int64_t b;
    return bconcat_ok(rt, node, &b);
  }
  default: return false;
  }
}

ob_status rt_native_plan(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  switch (ob_graph_node_op(g, node)) {
  case OB_GOP_ADD: return plan_ew(rt, node, EW_ADD);
  case OB_GOP_SUB: return plan_ew(rt, node, EW_SUB);
  case OB_GOP_MUL: return plan_ew(rt, node, EW_MUL);
  case OB_GOP_DIV: return plan_ew(rt, node, EW_DIV);
  case OB_GOP_POW: return plan_ew(rt, node, EW_POW);
  case OB_GOP_EQUAL: return plan_ew(rt, node, EW_EQUAL);
  case OB_GOP_WHERE: return plan_ew(rt, node, EW_WHERE);
  case OB_GOP_RELU: return plan_ew(rt, node, EW_RELU);
  case OB_GOP_CLIP: return plan_ew(rt, node, EW_CLIP);
  case OB_GOP_SIGMOID: return plan_ew(rt, node, EW_SIGMOID);
  case OB_GOP_HARDSIGMOID: return plan_ew(rt, node, EW_HARDSIGMOID);
  case OB_GOP_TANH: return plan_ew(rt, node, EW_TANH);
  case OB_GOP_ERF: return plan_ew(rt, node, EW_ERF);
  case OB_GOP_SQRT: return plan_ew(rt, node, EW_SQRT);
  case OB_GOP_EXP: return plan_ew(rt, node, EW_EXP);
  case OB_GOP_NEG: return plan_ew(rt, node, EW_NEG);
  case OB_GOP_GELU: return plan_ew(rt, node, EW_GELU);
  case OB_GOP_CAST: return plan_ew(rt, node, EW_CAST);
  case OB_GOP_TRANSPOSE: case OB_GOP_SLICE: case OB_GOP_SPLIT: case OB_GOP_EXPAND: case OB_GOP_PAD:
    return plan_copies(rt, node);
  case OB_GOP_CONCAT: {
    int64_t b;
    if (plan_concat_inplace(rt, node)) return OB_OK;
    if (bconcat_ok(rt, node, &b)) return plan_bconcat(rt, node, b);
    return plan_copies(rt, node);
  }
  case OB_GOP_GATHER: return plan_gather(rt, node);
  case OB_GOP_RESIZE: return plan_resize(rt, node);
  case OB_GOP_MAXPOOL: case OB_GOP_AVGPOOL: return plan_pool(rt, node);
  case OB_GOP_GLOBALAVGPOOL: return plan_gap(rt, node);
  case OB_GOP_BATCHNORM: return plan_bn(rt, node);
  case OB_GOP_LAYERNORM: return plan_ln(rt, node);
  case OB_GOP_SOFTMAX: return plan_softmax(rt, node);
  case OB_GOP_REDUCEMEAN: return plan_reducemean(rt, node);
  case OB_GOP_MATMUL: case OB_GOP_GEMM: case OB_GOP_DENSE: return plan_matmul(rt, node);
  case OB_GOP_LSTM: return plan_lstm(rt, node);
  case OB_GOP_SHAPE: case OB_GOP_CONSTANTOFSHAPE: case OB_GOP_RANGE: return plan_const(rt, node);
  default: return unsupported(rt, node, "no routine of the runtime runs this operator");
  }
}
