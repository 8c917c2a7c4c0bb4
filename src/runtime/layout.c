/* layout.c: choosing the configs of a tuned model together (as TVM's graph
 * tuner does), not node by node. Each convolution's configs differ in the
 * channel block they read (icb) and write (ocb); when a producer writes
 * NCHW[a]c and its consumer reads NCHW[b]c with a != b, a conversion step
 * runs between them (17 of them in ResNet-18 when each node takes its own
 * fastest record). Here every kernel node gets the database's top records
 * as candidates; the edges join a node's output to the nodes reading it
 * directly or through layout-following nodes (elementwise kernels, pooling:
 * they keep their input's layout) or through a channel concat (written in
 * place when its producers agree with its reader), and a fused residual
 * joins its producer to the node's output block. The picks minimise the
 * whole graph's estimated time (candidates' times plus conversions): as a
 * PBQP (pbqp.h), exact on chains with residuals, then polished node by
 * node (iterated conditional modes); beside that, the node-by-node
 * polish alone from the fastest records, and the cheaper of the two by
 * the estimate is kept (so it never does worse than the fastest records
 * by its own estimate). choose_kernel (plan.c) takes the pick. */
#include "runtime/runtime_impl.h"

#include "runtime/pbqp.h"

#define LS_SWEEPS 8

typedef struct ls_cand {
  const char *tmpl; /* in the runtime's arena */
  uint64_t index;
  double s;
  int64_t ib, ob; /* data input and output blocks: 0 plain, -1 opaque (packed per run) */
} ls_cand;

typedef struct ls_edge {
  int from, to;  /* nodes with candidates; from -1: a graph input (plain) */
  bool out_out;  /* a residual: from's output block against to's output block */
  size_t bytes;  /* of the tensor */
  const double *cv; /* the conversion rates (rt->cv_rate) */
} ls_edge;

static int64_t block_of(ob_arg_layout al) {
  switch (al.kind) {
  case OB_ARGL_NCHWC: return al.block;
  case OB_ARGL_PLAIN: return 0;
  default: return -1;
  }
}

/* Nodes that run in their first input's layout (plan.c's layout_free
 * kernels, native pooling) pass a block through. */
static bool follows(const ob_graph *g, int n) {
  switch (ob_graph_node_op(g, n)) {
  case OB_GOP_RELU:
  case OB_GOP_ADD:
  case OB_GOP_MUL:
  case OB_GOP_CLIP:
  case OB_GOP_SIGMOID:
  case OB_GOP_TANH:
  case OB_GOP_MAXPOOL:
  case OB_GOP_AVGPOOL: return true;
  default: return false;
  }
}

/* The node with candidates whose output tensor t holds, through
 * layout-following nodes; -1 if none. */
static int source_of(const ob_graph *g, const rt_lsel *sel, int t) {
  for (int hops = 0; hops < 64 && t >= 0; hops++) {
    int p = ob_graph_tensor_producer(g, t);
    if (p < 0 || ob_graph_node_dead(g, p)) return -1;
    if (sel[p].n > 0) return p;
    if (!follows(g, p) || ob_graph_node_num_inputs(g, p) < 1) return -1;
    t = ob_graph_node_input(g, p, 0);
  }
  return -1;
}

/* A channel concat of 4-D tensors: the runtime writes it in place when its
 * producers write the block its reader reads (native.c), so each input's
 * producer is joined to that reader as if directly. */
static bool channel_concat(const ob_graph *g, int n) {
  if (ob_graph_node_op(g, n) != OB_GOP_CONCAT || ob_graph_tensor_ndim(g, ob_graph_node_output(g, n, 0)) != 4)
    return false;
  int64_t a = ob_graph_node_attr_i(g, n, "axis", 0);
  return a == 1 || a == -3;
}

/* The edges into node n's data input t from the nodes with candidates
 * that make it: its source, or the sources of a channel concat's inputs
 * (each edge sized by its own slice). */
static void add_edges(const ob_graph *g, const rt_lsel *sel, int n, int t, bool out_out, ls_edge *e, int *ne, int cap,
                      int depth) {
  int p = source_of(g, sel, t);
  if (p >= 0) {
    if (p != n && *ne < cap) e[(*ne)++] = (ls_edge){p, n, out_out, rt_layout_bytes(g, t, rl_plain()), NULL};
    return;
  }
  /* a graph input, fed plain: a candidate reading a block converts it every
   * run, a cost like any edge's (a tuned mobilenet-v2 once took a stem
   * reading NCHW3c behind 0.11 ms of conversion: bench/results/models.txt) */
  if (!out_out && ob_graph_tensor_kind(g, t) == OB_GT_INPUT && *ne < cap) {
    e[(*ne)++] = (ls_edge){-1, n, false, rt_layout_bytes(g, t, rl_plain()), NULL};
    return;
  }
  /* through layout-following nodes to a concat */
  int c = -1;
  for (int hops = 0; hops < 64 && t >= 0; hops++) {
    int q = ob_graph_tensor_producer(g, t);
    if (q < 0 || ob_graph_node_dead(g, q)) break;
    if (channel_concat(g, q)) {
      c = q;
      break;
    }
    if (!follows(g, q) || ob_graph_node_num_inputs(g, q) < 1) break;
    t = ob_graph_node_input(g, q, 0);
  }
  if (c < 0 || out_out || depth > 4) return;
  for (int k = 0; k < ob_graph_node_num_inputs(g, c); k++) /* an inner concat's inputs too */
    if (ob_graph_node_input(g, c, k) >= 0) add_edges(g, sel, n, ob_graph_node_input(g, c, k), false, e, ne, cap, depth + 1);
}

/* A candidate: task's config cfg of template tmpl (in the arena), its time
 * s, and the blocks it reads its data input in and writes its output in. */
static ls_cand cand_of(const ob_task *task, const ob_config *cfg, const char *tmpl, double s) {
  int out_arg = -1;
  for (int a = 0; a < ob_task_num_args(task) && out_arg < 0; a++)
    if (!ob_task_arg_is_input(task, a)) out_arg = a;
  return (ls_cand){tmpl, cfg->index, s, block_of(ob_task_arg_layout(task, cfg, 0)),
                   out_arg >= 0 ? block_of(ob_task_arg_layout(task, cfg, out_arg)) : 0};
}

/* The default config with other channel blocks (ob_task_block_variants),
 * as candidates of a node without records. With 16 registers the direct
 * convolution's default writes two vectors of output channels (the 6 x
 * 2-vector block) and reads one, the depthwise one reads and writes one,
 * so a chain of defaults converts at nearly every edge (ResNet-18: 14
 * conversions; MobileNet-V2: 26, 12 % of its time). Their time is unknown,
 * as the default's: the selection then picks the blocks the neighbours
 * read and write. */
static int block_variants(const ob_task *task, const ob_config *dflt, const char *tmpl, ls_cand *out) {
  ob_config v[OB_TASK_BLOCK_VARIANTS_MAX];
  int n = ob_task_block_variants(task, dflt, v, OB_TASK_BLOCK_VARIANTS_MAX);
  for (int i = 0; i < n; i++) out[i] = cand_of(task, &v[i], tmpl, 0.0);
  return n;
}

/* The candidates of one node: its workload's top records for this host,
 * target and resources, with their blocks. */
static void node_cands(ob_rt *rt, int node, rt_lsel *out) {
  const ob_graph *g = rt->g;
  ob_ctx *ctx = rt->ctx;
  ob_workload wl;
  if (ob_graph_node_workload(ctx, g, node, &wl) != OB_OK) {
    ob_ctx_clear_error(ctx);
    return;
  }
  char key[256];
  ob_workload_key(&wl, key, sizeof key);
  ob_db_records *recs = NULL;
  ob_db_key k = {.host = rt->host, .workload = key, .target = ob_target_str(rt->target), .resources = rt->resources};
  /* no database, or every task untuned: the defaults and their block
   * variants only (the selection is the graph's plan, not tuning) */
  if (rt_reads_records(rt) && rt_top_records(rt, &k, &recs, NULL) != OB_OK) {
    ob_ctx_clear_error(ctx); /* choose_kernel reads it again and says why */
    return;
  }
  ls_cand *c = rt_alloc(rt, sizeof *c * (size_t)((recs ? recs->n : 0) + 1 + OB_TASK_BLOCK_VARIANTS_MAX));
  double *rs = recs ? rt_alloc(rt, sizeof *rs * (size_t)(recs->n + 1)) : NULL;
  int nc = 0;
  if (recs && rs) rt_record_times(rt, &k, recs, rs);
  for (int64_t i = 0; c && rs && recs && i < recs->n; i++) {
    const ob_db_record *r = &recs->rec[i];
    ob_task *task = NULL;
    ob_config cfg;
    if (!rt_record_task(ctx, rt, &wl, r, &task, &cfg)) continue;
    c[nc++] = cand_of(task, &cfg, rt_strdup(rt, r->tmpl), rs[i]);
    ob_task_free(task);
  }
  ob_db_records_free(recs);
  bool unknown = !nc;
  if (unknown && c) {
    /* no record: the default config runs (choose_kernel's fallback), or
     * one of its block variants; their blocks still bind the neighbours'
     * picks (their time, unknown, is the same whatever they pick) */
    ob_task *task = NULL;
    if (rt_untuned_task(ctx, rt, &wl, &task) != OB_OK) {
      ob_ctx_clear_error(ctx);
      return;
    }
    ob_config cfg = ob_task_default_config(task);
    const char *tmpl = rt_strdup(rt, ob_task_template(task));
    c[nc++] = cand_of(task, &cfg, tmpl, 0.0);
    nc += block_variants(task, &cfg, tmpl, c + nc);
    ob_task_free(task);
  }
  /* a node whose candidates all read and write plain data has no choice
   * to make here (dense, matmul): its fastest record is taken as before */
  bool blocked = false;
  for (int i = 0; i < nc; i++) blocked |= c[i].ib > 0 || c[i].ob > 0;
  if (!blocked) return;
  out->n = nc;
  out->c = c;
  out->pick = 0;
  out->unknown = unknown;
}

/* A conversion runs unless both sides name the same block. An opaque side
 * (a kernel's own padded layout) is packed or unpacked every run through
 * plain data: its pack hook (rows copied into padding) and, when the other
 * side is blocked, a conversion between plain and that block as well
 * (mobilenet-v2's 24-channel outputs: unpack 0.086 ms, then plain ->
 * NCHW12c 0.071 ms at 2 threads, where one estimate at the cheap rate had
 * said 0.075 ms for both). */
static double edge_cost(const ls_edge *e, int64_t a, int64_t b) {
  if (a >= 0 && b >= 0 && a == b) return 0;
  if (a >= 0 && b >= 0) return rt_convert_cost(e->cv, e->bytes, a, b);
  double c = 0;
  for (int side = 0; side < 2; side++) {
    int64_t x = side ? b : a, other = side ? a : b;
    if (x >= 0) continue;
    c += rt_convert_cost(e->cv, e->bytes, -1, 0);                /* the pack hook */
    if (other > 0) c += rt_convert_cost(e->cv, e->bytes, 0, other); /* plain <-> the other block */
  }
  return c;
}

/* The estimated conversions on the edges into node (reading its data
 * input, or a fused residual against its output) were it to take cand,
 * given its producers' picks. */
static double in_cost(const rt_lsel *sel, const ls_edge *e, int ne, int node, int cand) {
  const ls_cand *c = &sel[node].c[cand];
  double cost = 0;
  for (int i = 0; i < ne; i++)
    if (e[i].to == node) {
      int64_t pb = e[i].from < 0 ? 0 : sel[e[i].from].c[sel[e[i].from].pick].ob;
      cost += edge_cost(&e[i], pb, e[i].out_out ? c->ob : c->ib);
    }
  return cost;
}

static double local_cost(const rt_lsel *sel, const ls_edge *e, int ne, int node, int cand) {
  const ls_cand *c = &sel[node].c[cand];
  double cost = c->s + in_cost(sel, e, ne, node, cand);
  for (int i = 0; i < ne; i++)
    if (e[i].from == node) {
      const ls_cand *q = &sel[e[i].to].c[sel[e[i].to].pick];
      cost += edge_cost(&e[i], c->ob, e[i].out_out ? q->ob : q->ib);
    }
  return cost;
}

/* The estimated time of the whole selection: the picks' times and the
 * conversions on every edge (each edge ends at a node with candidates). */
static double total_cost(const rt_lsel *sel, int nn, const ls_edge *e, int ne) {
  double c = 0;
  for (int n = 0; n < nn; n++)
    if (sel[n].n) c += sel[n].c[sel[n].pick].s + in_cost(sel, e, ne, n, sel[n].pick);
  return c;
}

/* Iterated conditional modes: node after node, until nothing changes, the
 * candidate of least time plus conversions given the neighbours' picks. */
static void icm(rt_lsel *sel, int nn, const ls_edge *e, int ne) {
  for (int sweep = 0; sweep < LS_SWEEPS; sweep++) {
    bool changed = false;
    for (int n = 0; n < nn; n++) {
      if (sel[n].n < 2) continue;
      int best = sel[n].pick;
      double bc = local_cost(sel, e, ne, n, best);
      for (int c = 0; c < sel[n].n; c++) {
        double x = local_cost(sel, e, ne, n, c);
        if (x < bc - 1e-12) {
          bc = x;
          best = c;
        }
      }
      if (best != sel[n].pick) {
        sel[n].pick = best;
        changed = true;
      }
    }
    if (!changed) break;
  }
}

/* The selection as a PBQP (pbqp.h): a node per kernel node with
 * candidates, its vector their times (plus a plain graph input's
 * conversion), a matrix per edge of the conversions between each pair of
 * candidates. False when out of memory (the picks stay as they were). */
static bool solve_pbqp(rt_lsel *sel, int nn, const ls_edge *e, int ne) {
  int *id = malloc(sizeof *id * (size_t)(nn + 1)), np = 0;
  if (!id) return false;
  for (int n = 0; n < nn; n++) id[n] = sel[n].n ? np++ : -1;
  rt_pbqp *p = rt_pbqp_new(np);
  int *pick = malloc(sizeof *pick * (size_t)(np + 1));
  bool ok = p && pick;
  for (int n = 0; ok && n < nn; n++) {
    if (id[n] < 0) continue;
    double *v = malloc(sizeof *v * (size_t)sel[n].n);
    if (!(ok = v != NULL)) break;
    for (int c = 0; c < sel[n].n; c++) {
      v[c] = sel[n].c[c].s;
      for (int i = 0; i < ne; i++)
        if (e[i].to == n && e[i].from < 0)
          v[c] += edge_cost(&e[i], 0, e[i].out_out ? sel[n].c[c].ob : sel[n].c[c].ib);
    }
    ok = rt_pbqp_set_node(p, id[n], sel[n].n, v);
    free(v);
  }
  for (int i = 0; ok && i < ne; i++) {
    int a = e[i].from, b = e[i].to;
    if (a < 0 || a == b) continue;
    double *m = malloc(sizeof *m * (size_t)sel[a].n * (size_t)sel[b].n);
    if (!(ok = m != NULL)) break;
    for (int x = 0; x < sel[a].n; x++)
      for (int y = 0; y < sel[b].n; y++)
        m[x * sel[b].n + y] =
            edge_cost(&e[i], sel[a].c[x].ob, e[i].out_out ? sel[b].c[y].ob : sel[b].c[y].ib);
    ok = rt_pbqp_add_edge(p, id[a], id[b], m);
    free(m);
  }
  ok = ok && rt_pbqp_solve(p, pick, NULL);
  for (int n = 0; ok && n < nn; n++)
    if (id[n] >= 0) sel[n].pick = pick[id[n]];
  rt_pbqp_free(p);
  free(pick);
  free(id);
  return ok;
}

ob_status rt_layout_select(ob_rt *rt) {
  const ob_graph *g = rt->g;
  int nn = ob_graph_node_count(g);
  rt->lsel = rt_alloc(rt, sizeof *rt->lsel * (size_t)(nn + 1));
  if (!rt->lsel) return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
  rt_lsel *sel = rt->lsel;
  for (int n = 0; n < nn; n++)
    if (!ob_graph_node_dead(g, n)) node_cands(rt, n, &sel[n]);
  /* edges: data input 0 (through a channel concat, from each of its
   * inputs' sources) and, for a fused residual (a Conv's fourth input, a
   * Dense's fourth), the residual */
  int cap = 8 * nn + 1, ne = 0;
  ls_edge *e = calloc((size_t)cap, sizeof *e);
  int *keep = malloc(sizeof *keep * (size_t)(nn + 1));
  if (!e || !keep) {
    free(e);
    free(keep);
    return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
  }
  for (int n = 0; n < nn; n++) {
    if (!sel[n].n) continue;
    int ni = ob_graph_node_num_inputs(g, n);
    for (int k = 0; k < ni && k < 4; k++) {
      if (k == 1 || k == 2) continue; /* weights, bias */
      int t = ob_graph_node_input(g, n, k);
      if (t < 0 || ob_graph_tensor_kind(g, t) == OB_GT_CONST) continue;
      add_edges(g, sel, n, t, k == 3, e, &ne, cap, 0);
    }
  }
  for (int i = 0; i < ne; i++) e[i].cv = rt->cv_rate;
  /* first plan: each node's fastest record, then improved node by node */
  for (int n = 0; n < nn; n++)
    for (int c = 1; c < sel[n].n; c++)
      if (sel[n].c[c].s < sel[n].c[sel[n].pick].s) sel[n].pick = c;
  /* nodes without records (candidates: the default and its block
   * variants, their times unknown) take, in graph order, the variant that
   * reads what their producers write: a chain of them would otherwise stay
   * at the defaults, where changing any one node alone only moves the
   * conversion to its other edge */
  for (int n = 0; n < nn; n++) {
    if (sel[n].n < 2 || !sel[n].unknown) continue;
    int best = sel[n].pick;
    double bc = INFINITY;
    for (int c = 0; c < sel[n].n; c++) {
      double x = in_cost(sel, e, ne, n, c);
      if (x < bc - 1e-12) {
        bc = x;
        best = c;
      }
    }
    sel[n].pick = best;
  }
  icm(sel, nn, e, ne);
  /* second plan: the whole graph at once. Changing one node at a time
   * stops where the cheaper plan changes several: mobilenet-v2 tuned kept
   * an estimated 0.2 ms conversion of features.1's 800 KB output to
   * NCHW8c, where taking a NCHW8c-writing record needed its producer's
   * output changed too (each alone only moved the conversion). The PBQP
   * reductions solve chains with residuals exactly; ICM then polishes
   * what a heuristic reduction fixed. The cheaper of the two is kept. */
  double c1 = total_cost(sel, nn, e, ne);
  for (int n = 0; n < nn; n++) keep[n] = sel[n].pick;
  bool better = solve_pbqp(sel, nn, e, ne);
  if (better) {
    icm(sel, nn, e, ne);
    better = total_cost(sel, nn, e, ne) <= c1 + 1e-12;
  }
  for (int n = 0; n < nn && !better; n++) sel[n].pick = keep[n];
  free(keep);
  free(e);
  return OB_OK;
}

bool rt_layout_picked(const ob_rt *rt, int node, const char **tmpl, uint64_t *index) {
  if (!rt->lsel || !rt->lsel[node].n) return false;
  const ls_cand *c = &rt->lsel[node].c[rt->lsel[node].pick];
  *tmpl = c->tmpl;
  *index = c->index;
  return true;
}

/* The channel block node n's default config reads its data input in (0:
 * plain, none or not a kernel). */
static int64_t default_ib(const ob_rt *rt, int n) {
  ob_workload wl;
  ob_task *task = NULL;
  if (ob_graph_node_workload(rt->ctx, rt->g, n, &wl) != OB_OK || rt_untuned_task(rt->ctx, rt, &wl, &task)) {
    ob_ctx_clear_error(rt->ctx);
    return 0;
  }
  ob_config cfg = ob_task_default_config(task);
  int64_t b = block_of(ob_task_arg_layout(task, &cfg, 0));
  ob_task_free(task);
  return b;
}

/* The channel block the first node reading t as its data input, directly
 * or through layout-following nodes, reads it in: its pick in a tuned run,
 * its default config's when no selection ran; 0 when none says. */
static int64_t wanted(const ob_rt *rt, int t, int depth) {
  const ob_graph *g = rt->g;
  int nn = ob_graph_node_count(g);
  for (int n = 0; n < nn && depth < 4; n++) {
    if (ob_graph_node_dead(g, n) || ob_graph_node_num_inputs(g, n) < 1 || ob_graph_node_input(g, n, 0) != t) continue;
    if (follows(g, n)) {
      int64_t b = wanted(rt, ob_graph_node_output(g, n, 0), depth + 1);
      if (b > 0) return b;
      continue;
    }
    int64_t b = 0;
    if (rt->lsel && rt->lsel[n].n > 0) b = rt->lsel[n].c[rt->lsel[n].pick].ib;
    else if (!rt->lsel) b = default_ib(rt, n); /* every kernel at its default */
    if (b > 0) return b;
  }
  return 0;
}

int64_t rt_layout_wanted_block(const ob_rt *rt, int t) {
  return rt->o.kernels == OB_RT_ONEDNN ? 0 : wanted(rt, t, 0);
}
