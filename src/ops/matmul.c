/* matmul.c: the packed-weight GEMM template shared by dense (dense_pack.x86)
 * and batch_matmul, and the batch_matmul operator (C[b] = A[b] * B[b]^T).
 * Weights are pre-packed outside the kernel as [N/nb, K, nb]: the hot loop
 * broadcasts A[m, k] into FMAs with one vector of nb packed columns, over a
 * register block of (mb rows x nb columns), as a BLAS micro-kernel does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

typedef struct mm_p {
  int64_t b, m, n, k; /* b = 0: no batch axis (dense) */
} mm_p;

/* Parallel tasks (batch x panels) from which m_tail is the default: as
 * conv2d's OB_CONV_MIN_TASKS. Measured on a Zen 3 VM with bench_ab (12
 * rounds in alternating order, paired median of GFLOPS, tail / repeated
 * rows, 6 x 16 block; bench/results/kernels.txt, stop 39), at 1 and 2
 * threads: bert-base's dense layers (M=128: a tail of 2 rows) 1.021-1.024
 * and 1.030-1.032; its batch_matmul B=12,M=128,N=128,K=64 1.051 and 1.036,
 * N=64,K=128 0.979 and 0.993; M=64,N=K=1024 (a tail of 4) 1.002 and 0.999. */
#define OB_MM_MIN_TASKS 32

/* Steps of K between two prefetches of the next panel of B (sched_pack). */
#define OB_MM_PF_STEPS 32

static mm_p params(const ob_workload *wl) {
  mm_p p = {0, ob_workload_get(wl, "M"), ob_workload_get(wl, "N"), ob_workload_get(wl, "K")};
  if (!strcmp(wl->op, "batch_matmul")) p.b = ob_workload_get(wl, "B");
  return p;
}

/* Bytes of L2 the partial sums of a K-blocked panel (rows x nb floats) may
 * take: half, the rest for A's rows; 256 KB where the size is unknown. */
static int64_t kblock_sums_cap(const ob_target *tg) {
  int64_t l2 = ob_target_get_facts(tg)->l2_bytes;
  return (l2 > 0 ? l2 : 512 * 1024) / 2;
}

/* The register block (tile_y rows of nb/lanes vectors) plus one row of
 * the packed B panel within the target's accumulator budget; a K block
 * (k_block) a whole number of tile_k steps, its panel's sums within
 * kblock_sums_cap. */
static bool pack_ok(const ob_config *cfg, void *user) {
  const ob_target *tg = user;
  int64_t y[2], x[2], k[2], kc = ob_config_knob(cfg, "k_block");
  ob_config_split(cfg, "tile_y", y);
  ob_config_split(cfg, "tile_x", x);
  ob_config_split(cfg, "tile_k", k);
  if (kc && (kc % k[1] || 4 * y[0] * y[1] * x[1] > kblock_sums_cap(tg))) return false;
  if (ob_config_knob(cfg, "m_tail") && ob_config_split_extent(cfg, "tile_y") % y[1] == 0) return false;
  return (y[1] + 1) * ob_tmpl_vectors(tg, x[1]) <= ob_tmpl_budget(tg);
}

/* The padded B panels stay within the tensor limits validate checked. */
static bool padded_fits(const mm_p *p, int64_t np) {
  int64_t b = p->b ? p->b : 1, v;
  return ob_mul_i64(b, np, &v) && ob_mul_i64(v, p->k, &v) && v <= OB_MAX_TENSOR_ELEMS &&
         (uint64_t)v * 4 <= OB_MAX_BUFFER_BYTES;
}

/* Rows and columns the GEMM computes: M and N rounded up to the register
 * block (tile_y rows) and the panel (tile_x columns). */
static void padded_mn(const mm_p *p, const ob_config *cfg, int64_t *mp, int64_t *np) {
  int64_t ty[2], tx[2];
  ob_config_split(cfg, "tile_y", ty);
  ob_config_split(cfg, "tile_x", tx);
  *mp = (p->m + ty[1] - 1) / ty[1] * ty[1];
  *np = (p->n + tx[1] - 1) / tx[1] * tx[1];
}

ob_status ob_matmul_define_pack(ob_ctx *ctx, const ob_target *tg, const ob_workload *wl, ob_space *sp, ob_config *dflt) {
  (void)ctx;
  mm_p p = params(wl);
  int64_t lanes = ob_tmpl_lanes(tg);
  int64_t cand[16];
  int nc = 0;
  /* panels of half a vector and of one to four vectors; one that does not
   * divide N pads the last panel with zero columns (at most a quarter of
   * the panels' work wasted: N = 1001 takes panels of 16 as 1008 columns),
   * as oneDNN pads its blocks: odd N keeps whole vectors */
  const int64_t nbs[] = {lanes / 2, lanes, 2 * lanes, 3 * lanes, 4 * lanes};
  for (size_t i = 0; i < sizeof nbs / sizeof nbs[0]; i++) {
    int64_t np = (p.n + nbs[i] - 1) / nbs[i] * nbs[i];
    if (nbs[i] > 1 && (p.n % nbs[i] == 0 || (4 * (np - p.n) <= np && padded_fits(&p, np)))) {
      cand[2 * nc] = -1;
      cand[2 * nc + 1] = nbs[i];
      nc++;
    }
  }
  if (!nc) {
    cand[0] = -1;
    cand[1] = 1;
    nc = 1;
  }
  /* Added since records were stored: for panels of 1 to 4 vectors, the
   * most rows whose accumulators and the panel's row fit the budget (AVX2's
   * 6 rows of 2 vectors: BLIS's 6x16 Haswell sgemm block), which the
   * divisors and powers of two of M miss; rows past M are computed and
   * dropped, as for any row block that does not divide M. Only with 16
   * registers: with 32 the fallback below took 8 rows (6 absent), measured
   * on AVX-512, and stays as it was. */
  int64_t yadd[8];
  int nyadd = 0;
  for (int64_t v = 1; v <= 4 && ob_tmpl_registers(tg) <= 16; v++) {
    int64_t y = ob_tmpl_budget(tg) / v - 1;
    if (y >= 1 && y <= 12 && y <= p.m) {
      yadd[2 * nyadd] = -1;
      yadd[2 * nyadd + 1] = y;
      nyadd++;
    }
  }
  ob_status st = ob_space_define_split(sp, "tile_y", p.m, &(ob_split_opts){.policy = OB_SPLIT_VERBOSE, .num_outputs = 2, .max_factor = 12, .added = yadd, .nadded = nyadd});
  if (!st) st = ob_space_define_split(sp, "tile_x", p.n, &(ob_split_opts){.policy = OB_SPLIT_CANDIDATE, .num_outputs = 2, .candidates = cand, .ncandidates = nc});
  if (!st) st = ob_space_define_split(sp, "tile_k", p.k, &(ob_split_opts){.policy = OB_SPLIT_FACTORS, .num_outputs = 2, .max_factor = 4});
  /* Added since records were stored: K in blocks of kc (see build_kblock;
   * 0: the whole of K per register block, as before), for kc a power of
   * two from 64 to 1024 that divides K, where there are several row blocks
   * to share a block's slice of B */
  int64_t kcs[8] = {0};
  int nkc = 1;
  for (int64_t kc = 64; kc <= 1024; kc *= 2)
    if (p.k % kc == 0 && p.k > kc && p.m > 12) kcs[nkc++] = kc;
  if (!st) st = ob_space_define_knob_added(sp, "k_block", kcs, nkc);
  /* Added since records were stored: m_tail 1 runs a row block that does
   * not divide M as a tail of fewer rows, not as a whole block over
   * repeated rows (see sched_pack); only with a tile_y that leaves one */
  if (!st) st = ob_space_define_knob_added(sp, "m_tail", (int64_t[]){0, 1}, p.m > 1 ? 2 : 1);
  if (st) return st;
  ob_space_set_filter(sp, pack_ok, (void *)tg); /* read only */
  /* fallback: the widest panel of at most two vectors, 6 rows of two
   * vectors or 8 of one, fewer where the budget is smaller */
  ob_config c = ob_space_first(sp);
  int64_t nb = 1;
  for (int i = 0; i < nc; i++)
    if (cand[2 * i + 1] <= 2 * lanes) nb = cand[2 * i + 1];
  ob_config_set_split(&c, "tile_x", (int64_t[]){nb}, 1);
  for (int64_t want = nb >= 2 * lanes ? 6 : 8; want >= 1; want--) {
    int64_t y[2]; /* the row count M's splits allow nearest to want */
    ob_config_set_split(&c, "tile_y", (int64_t[]){want}, 1);
    ob_config_split(&c, "tile_y", y);
    if ((y[1] + 1) * ob_tmpl_vectors(tg, nb) <= ob_tmpl_budget(tg)) break;
  }
  /* one row (a classifier's GEMV): the block's accumulators are its
   * panel's vectors alone, too few to cover the FMA's latency at two; with
   * 16 registers the widest panel then. Measured on a Zen 3 core
   * (interleaved, fastest of 6): M=1,N=1000,K=512 25 -> 34 GFLOPS with 4
   * vectors, K=2048 22 -> 28. 32 registers keep theirs. */
  if (ob_tmpl_registers(tg) <= 16 && p.m == 1) {
    for (int i = 0; i < nc; i++)
      if (cand[2 * i + 1] > nb && 2 * ob_tmpl_vectors(tg, cand[2 * i + 1]) <= ob_tmpl_budget(tg)) nb = cand[2 * i + 1];
    ob_config_set_split(&c, "tile_x", (int64_t[]){nb}, 1);
  }
  /* K unrolled by 2 fills 16 registers badly: GCC 12 keeps 12 accumulators
   * and reloads B's vectors as memory operands of the FMAs (24 loads per
   * 24 FMAs beside the broadcasts, where tile_k 1 loads 2 per 12), and the
   * load ports set the pace. Measured on a Zen 3 core (interleaved, fastest
   * of 5-10): BERT-base's dense and batch_matmul 43-57 GFLOPS with 2 -> 78-86
   * with 1 (6 x 16 block). 32 registers keep 2, measured on AVX-512. */
  ob_config_set_split(&c, "tile_k", (int64_t[]){ob_tmpl_registers(tg) <= 16 ? 1 : 2}, 1);
  /* rows that leave a tail run it as a shorter block where the panels
   * alone give OB_MM_MIN_TASKS parallel tasks (see sched_pack) */
  int64_t ty[2], tx[2];
  ob_config_split(&c, "tile_y", ty);
  ob_config_split(&c, "tile_x", tx);
  if (p.m % ty[1] && (p.b ? p.b : 1) * tx[0] >= OB_MM_MIN_TASKS) ob_config_set_knob(&c, "m_tail", 1);
  *dflt = c;
  return OB_OK;
}

/* The packed GEMM's loops: the output in register blocks of ty rows by a
 * panel of nb columns, row blocks inside panels so a panel of B is reused
 * across them, K in steps of tk. A thread runs a panel and one row block,
 * the block's sums in registers. With a tail (knob m_tail) a thread runs a
 * panel and all its row blocks, the rows' loop serial, so lowering peels
 * the last block, of M % ty rows, off it: the block over repeated rows
 * (ty = 6 gives 66 rows for M = 64, 3 % of the FMAs wasted) is gone, at the
 * price of fewer tasks (the panels alone). With K in blocks of kc (knob k_block) a
 * thread owns a panel and all rows, and for each block of kc runs every
 * row block, so the block's kc x nb slice of B stays in L1 while the rows
 * pass and the panel's partial sums wait in an M x nb buffer (in L1 too);
 * without it each row block streams the whole K x nb panel from L2. */
static ob_status sched_pack(ob_sched *s, ob_stage *so, ob_stage *sc, const mm_p *p, int64_t ty, int64_t nb,
                            int64_t tk, int64_t kc, bool tail, const ob_tensor *B, bool pf) {
  int off = p->b ? 1 : 0;
  ob_ivar *yo, *yi, *xo, *xi, *f = NULL, *ko, *ki, *kco = NULL, *cmo = NULL, *koo = NULL;
  ob_status st = ob_sched_split(s, so, ob_stage_axis(so, off), ty, &yo, &yi);
  if (!st) st = ob_sched_split(s, so, ob_stage_axis(so, off + 1), nb, &xo, &xi);
  if (!st) st = ob_sched_reorder(s, so, 4, (ob_ivar *[]){xo, yo, yi, xi});
  if (!st && (kc || tail)) f = xo;
  else if (!st) st = ob_sched_fuse(s, so, xo, yo, &f);
  if (!st && p->b) st = ob_sched_fuse(s, so, ob_stage_axis(so, 0), f, &f);
  if (!st) st = ob_sched_parallel(s, so, f);
  if (!st && nb > 1) st = ob_sched_vectorize(s, so, xi);
  if (!st) st = ob_sched_unroll(s, so, yi); /* the tile stays in registers */
  if (!st) st = ob_sched_compute_at(s, sc, so, tail && !kc ? yo : f);
  ob_ivar *kr = ob_stage_reduce_axis(sc, 0), *cm = ob_stage_axis(sc, off), *cn = ob_stage_axis(sc, off + 1);
  if (!st && kc) st = ob_sched_split(s, sc, kr, kc, &kco, &kr);
  if (!st) st = ob_sched_split(s, sc, kr, tk, &ko, &ki);
  if (!st && kc) st = ob_sched_split(s, sc, cm, ty, &cmo, &cm);
  if (!st && pf) st = ob_sched_split(s, sc, ko, OB_MM_PF_STEPS, &koo, &ko);
  if (!st) {
    ob_ivar *ord[8];
    int n = 0;
    if (p->b) ord[n++] = ob_stage_axis(sc, 0);
    if (kc) {
      ord[n++] = kco;
      ord[n++] = cmo;
    }
    if (koo) ord[n++] = koo;
    ord[n++] = ko;
    ord[n++] = ki;
    ord[n++] = cm;
    ord[n++] = cn;
    st = ob_sched_reorder(s, sc, n, ord);
  }
  if (!st && nb > 1) st = ob_sched_vectorize(s, sc, cn);
  if (!st) st = ob_sched_unroll(s, sc, cm);
  if (!st && tk > 1) st = ob_sched_unroll(s, sc, ki);
  /* the next panel of B into the L2, a few lines every OB_MM_PF_STEPS
   * steps of K of every row block (parts numbered K-step first, so each
   * row block takes its share) */
  if (!st && pf) st = ob_sched_prefetch(s, sc, B, f, p->k * nb, 2, (ob_ivar *[]){koo, yo}, koo);
  return st;
}

ob_status ob_matmul_build_pack(ob_te *te, const ob_target *tg, const ob_workload *wl, const ob_config *cfg, ob_sched **out) {
  mm_p p = params(wl);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ob_te_ctx(te), wl->epilogue, &e);
  if (st) return st;
  int64_t ty[2], tx[2], tk[2], mp, np;
  ob_config_split(cfg, "tile_y", ty);
  ob_config_split(cfg, "tile_x", tx);
  ob_config_split(cfg, "tile_k", tk);
  int64_t kc = ob_config_knob(cfg, "k_block");
  bool tail = ob_config_knob(cfg, "m_tail") != 0;
  padded_mn(&p, cfg, &mp, &np);
  if (tail) mp = p.m;
  int64_t nb = tx[1], bt = p.b ? p.b : 1;
  int nd = p.b ? 3 : 2; /* output rank */
  ob_tensor *A = p.b ? ob_te_placeholder(te, "A", 3, (int64_t[]){p.b, p.m, p.k}, OB_F32)
                     : ob_te_placeholder(te, "A", 2, (int64_t[]){p.m, p.k}, OB_F32);
  ob_tensor *B = ob_te_placeholder(te, "B_packed", 4, (int64_t[]){bt, np / nb, p.k, nb}, OB_F32);
  /* the product over whole register blocks: rows past M repeat row M - 1
   * (in bounds, never stored), columns past N meet the zero padding of B */
  ob_ivar *ab = p.b ? ob_te_axis(te, "b", p.b) : NULL;
  ob_ivar *am = ob_te_axis(te, "m", mp), *an = ob_te_axis(te, "n", np), *rk = ob_te_reduce_axis(te, "k", p.k);
  ob_expr *vb = ab ? ob_te_var(te, ab) : ob_te_int(te, 0);
  ob_expr *row = mp == p.m ? ob_te_var(te, am) : ob_te_bin(te, OB_MIN, ob_te_var(te, am), ob_te_int(te, p.m - 1));
  ob_expr *va = ab ? ob_te_load(te, A, 3, (ob_expr *[]){vb, row, ob_te_var(te, rk)})
                   : ob_te_load(te, A, 2, (ob_expr *[]){row, ob_te_var(te, rk)});
  ob_expr *vn = ob_te_var(te, an);
  ob_expr *vw = ob_te_load(te, B, 4,
                           (ob_expr *[]){vb, ob_te_bin(te, OB_DIV, vn, ob_te_int(te, nb)), ob_te_var(te, rk),
                                         ob_te_bin(te, OB_MOD, vn, ob_te_int(te, nb))});
  ob_ivar *axes[3];
  int na = 0;
  if (ab) axes[na++] = ab;
  axes[na++] = am;
  axes[na++] = an;
  ob_tensor *C = ob_te_compute(te, p.b ? "batch_matmul" : "dense", nd, axes,
                               ob_te_reduce(te, OB_REDUCE_SUM, OB_TE_MUL(te, va, vw), 1, &rk));
  /* the output: the product's first M x N, then the epilogue */
  ob_ivar *ob = p.b ? ob_te_axis(te, "b", p.b) : NULL;
  ob_ivar *om = ob_te_axis(te, "m", p.m), *on = ob_te_axis(te, "n", p.n);
  ob_ivar *oaxes[3];
  ob_expr *oidx[3];
  int no = 0;
  if (ob) oaxes[no++] = ob;
  oaxes[no++] = om;
  oaxes[no++] = on;
  for (int i = 0; i < no; i++) oidx[i] = ob_te_var(te, oaxes[i]);
  ob_tensor *X = ob_te_compute(te, "out", nd, oaxes, ob_te_load(te, C, nd, oidx));
  if (!A || !B || !C || !X) return OB_ERR_INVALID_ARG;
  ob_epi_inputs ein;
  ob_epilogue_placeholders(te, &e, X, nd - 1, &ein);
  ob_tensor *mid[8];
  int nmid;
  ob_tensor *O = ob_epilogue_apply(te, &e, X, nd - 1, &ein, mid, &nmid);
  ob_sched *s = NULL;
  st = ob_sched_new(te, 1, &O, &s);
  if (st) return st;
  ob_stage *so = ob_sched_stage(s, O), *sc = ob_sched_stage(s, C);
  for (int i = 0; i < nmid && !st; i++) st = ob_sched_compute_inline(s, ob_sched_stage(s, mid[i]));
  if (!st && O != X) st = ob_sched_compute_inline(s, ob_sched_stage(s, X));
  /* with a row tail a thread runs a panel's rows one block after the
   * other, and the panel after it next: where B outgrows the L2 (in a
   * model the layers before evicted it), that panel is prefetched while
   * this one's rows pass, as conv2d_NCHWc does a 1x1 layer's next block.
   * Measured with bench_ab on a Zen 3 VM (12 paired rounds, prefetch /
   * none, the same tail; bench/results/kernels.txt, stop 39), weights
   * flushed as the tuner measures a model's tasks, at 1 and 2 threads:
   * 128x768x768 1.057 and 1.070, 64x1024x1024 1.082 and 1.055, 128x768x3072
   * 0.989 and 1.035, 128x3072x768 0.989 and 0.988; warm 0.97-1.03 (median
   * 0.995). */
  const ob_target_facts *f = ob_target_get_facts(tg);
  bool pf = tail && !kc && f->l2_bytes > 0 && 4.0 * (double)(bt * np) * (double)p.k > (double)f->l2_bytes &&
            p.k % (OB_MM_PF_STEPS * tk[1]) == 0 && p.k / tk[1] > OB_MM_PF_STEPS;
  if (!st) st = sched_pack(s, so, sc, &p, ty[1], nb, tk[1], kc, tail, B, pf);
  if (st) {
    ob_sched_free(s);
    return st;
  }
  *out = s;
  return OB_OK;
}

/* B [b, N, K] <-> [b, Np/nb, K, nb] (columns past N zero); other
 * arguments keep their layout. */
static void move(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst, bool to_blk) {
  mm_p p = params(wl);
  int64_t tx[2], mp, np;
  ob_config_split(cfg, "tile_x", tx);
  padded_mn(&p, cfg, &mp, &np);
  int64_t nb = tx[1], bt = p.b ? p.b : 1;
  if (arg == 1 && to_blk && np != p.n) memset(dst, 0, sizeof(float) * (size_t)OB_NUMEL(bt, np, p.k));
  if (arg != 1) {
    int64_t numel = arg == 0 ? OB_NUMEL(bt, p.m, p.k) : -1;
    if (numel < 0) { /* bias [N], residual/output [b, M, N] */
      ob_epilogue e;
      OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
      numel = ob_epilogue_has(&e, OB_EPI_BIAS) && arg == 2 ? p.n : OB_NUMEL(bt, p.m, p.n);
    }
    memcpy(dst, src, sizeof(float) * (size_t)numel);
    return;
  }
  for (int64_t b = 0; b < bt; b++)
    for (int64_t n = 0; n < p.n; n++)
      for (int64_t k = 0; k < p.k; k++) {
        int64_t plain = (b * p.n + n) * p.k + k;
        int64_t blk = ((b * (np / nb) + n / nb) * p.k + k) * nb + n % nb;
        if (to_blk) dst[blk] = src[plain];
        else dst[plain] = src[blk];
      }
}

int64_t ob_matmul_arg_numel(const ob_workload *wl, const ob_config *cfg, int arg) {
  mm_p p = params(wl);
  int64_t mp, np;
  padded_mn(&p, cfg, &mp, &np);
  if (arg == 1) return OB_NUMEL(p.b ? p.b : 1, np, p.k);
  return ob_workload_arg_numel(wl, arg);
}

void ob_matmul_pack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  move(wl, cfg, arg, src, dst, true);
}
void ob_matmul_unpack(const ob_workload *wl, const ob_config *cfg, int arg, const float *src, float *dst) {
  move(wl, cfg, arg, src, dst, false);
}
/* B in panels of tile_x columns; everything else plain. */
ob_arg_layout ob_matmul_layout(const ob_workload *wl, const ob_config *cfg, int arg) {
  if (arg != 1) return (ob_arg_layout){OB_ARGL_PLAIN, 0};
  int64_t tx[2];
  ob_config_split(cfg, "tile_x", tx);
  /* a padded last panel (N % panel != 0) only the pack hook fills */
  if (params(wl).n % tx[1]) return (ob_arg_layout){OB_ARGL_OPAQUE, 0};
  return (ob_arg_layout){OB_ARGL_PANELS, tx[1]};
}

/* ---- batch_matmul ------------------------------------------------------------ */
static const char *const k_attrs[] = {"B", "M", "N", "K"};
static const int64_t k_defaults[] = {OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED, OB_ATTR_REQUIRED};

static ob_status validate(ob_ctx *ctx, const ob_workload *wl) {
  for (int i = 0; i < 4; i++)
    if (ob_workload_get(wl, k_attrs[i]) < 1)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "batch_matmul: %s must be >= 1 (got %lld)", k_attrs[i],
                     (long long)ob_workload_get(wl, k_attrs[i]));
  mm_p p = params(wl);
  ob_status st = ob_check_numel(ctx, "batch_matmul A (B x M x K)", 3, (int64_t[]){p.b, p.m, p.k}, NULL);
  if (!st) st = ob_check_numel(ctx, "batch_matmul B (B x N x K)", 3, (int64_t[]){p.b, p.n, p.k}, NULL);
  if (!st) st = ob_check_numel(ctx, "batch_matmul C (B x M x N)", 3, (int64_t[]){p.b, p.m, p.n}, NULL);
  return st;
}

static void key(const ob_workload *wl, char *out, size_t cap) {
  mm_p p = params(wl);
  snprintf(out, cap, "batch_matmul/f32/B%lldM%lldN%lldK%lld", (long long)p.b, (long long)p.m, (long long)p.n,
           (long long)p.k);
}

static double flops(const ob_workload *wl) {
  mm_p p = params(wl);
  return 2.0 * (double)p.b * (double)p.m * (double)p.n * (double)p.k;
}

static int64_t reduce_len(const ob_workload *wl) { return ob_workload_get(wl, "K"); }

static int args(const ob_workload *wl, ob_arg_info *out) {
  mm_p p = params(wl);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  int c = 0;
  out[c++] = (ob_arg_info){"A", OB_NUMEL(p.b, p.m, p.k), true};
  out[c++] = (ob_arg_info){"B", OB_NUMEL(p.b, p.n, p.k), true};
  c += ob_epilogue_args(&e, p.n, OB_NUMEL(p.b, p.m, p.n), out + c);
  out[c++] = (ob_arg_info){"C", OB_NUMEL(p.b, p.m, p.n), false};
  return c;
}

static void reference(const ob_workload *wl, void *const *bufs) {
  mm_p p = params(wl);
  ob_epilogue e;
  OB_ASSERT(ob_epilogue_parse(NULL, wl->epilogue, &e) == OB_OK);
  const float *A = bufs[0], *B = bufs[1];
  int a = 2;
  const float *bias = ob_epilogue_has(&e, OB_EPI_BIAS) ? bufs[a++] : NULL;
  const float *res = ob_epilogue_has(&e, OB_EPI_ADD) ? bufs[a++] : NULL;
  float *C = bufs[a];
  for (int64_t b = 0; b < p.b; b++)
    for (int64_t i = 0; i < p.m; i++)
      for (int64_t j = 0; j < p.n; j++) {
        double s = 0;
        for (int64_t k = 0; k < p.k; k++) s += (double)A[(b * p.m + i) * p.k + k] * B[(b * p.n + j) * p.k + k];
        int64_t at = (b * p.m + i) * p.n + j;
        C[at] = (float)ob_epilogue_ref_at(&e, s, at, p.n, 1, bias, res);
      }
}

static const ob_tmpl_def k_tmpls[] = {
    {.name = "batch_matmul_pack.x86", .define = ob_matmul_define_pack, .build = ob_matmul_build_pack,
     .pack = ob_matmul_pack, .unpack = ob_matmul_unpack, .arg_numel = ob_matmul_arg_numel,
     .layout = ob_matmul_layout, .unroll_inner = true, .unroll_default = 8},
    {.name = "batch_matmul.cuda", .gpu = true, .define = ob_gpu_gemm_define, .build = ob_gpu_gemm_build},
};

const ob_op_def ob_op_batch_matmul = {
    .name = "batch_matmul",
    .attrs = k_attrs,
    .defaults = k_defaults,
    .nattrs = 4,
    .epilogue_ok = true,
    .validate = validate,
    .key = key,
    .flops = flops,
    .reduce_len = reduce_len,
    .args = args,
    .reference = reference,
    .tmpls = k_tmpls,
    .ntmpls = (int)(sizeof k_tmpls / sizeof k_tmpls[0]),
};
