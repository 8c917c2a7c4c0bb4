/* plan.c: compiling a graph into steps (ob_rt_new). Nodes are taken in
 * order; each becomes a kernel step (its workload at the database's best
 * config or the default), a oneDNN step, a native step or a view of its
 * input. A step asks for its inputs in the layouts it reads; a value that
 * is not there yet in that layout is converted by a step placed just before
 * it (or, for a constant, converted once now: packed weights). Kernels are
 * then built in one batch and loaded, and the memory plan places the
 * activations. */
#include <limits.h>
#include <stdarg.h>

#include "runtime/runtime_impl.h"
#include "opbench/tune.h"

/* ---- small helpers --------------------------------------------------------------- */

void *rt_alloc(ob_rt *rt, size_t bytes) { return ob_arena_alloc(rt->arena, bytes ? bytes : 1); }

const char *rt_strdup(ob_rt *rt, const char *s) { return ob_arena_strdup(rt->arena, s ? s : ""); }

/* Weight chunks: 32 MiB (16 huge pages), or one weight's size when larger. */
#define RT_WCHUNK ((size_t)32 << 20)

void *rt_weight_alloc(ob_rt *rt, size_t bytes) {
  bytes = (bytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
  if (!bytes) bytes = RT_ALIGN;
  if (bytes > rt->wleft) {
    if (rt->nwchunk == rt->cwchunk) {
      int nc = rt->cwchunk ? 2 * rt->cwchunk : 8;
      void **w = realloc(rt->wchunk, sizeof *w * (size_t)nc);
      if (!w) return NULL;
      rt->wchunk = w;
      rt->cwchunk = nc;
    }
    size_t size = bytes > RT_WCHUNK ? (bytes + OB_MEM_HUGE_PAGE - 1) / OB_MEM_HUGE_PAGE * OB_MEM_HUGE_PAGE : RT_WCHUNK;
    char *c = ob_mem_alloc_big(size);
    if (!c) return NULL;
    rt->wchunk[rt->nwchunk++] = c;
    rt->wat = c;
    rt->wleft = size;
  }
  void *p = rt->wat;
  rt->wat += bytes;
  rt->wleft -= bytes;
  return p;
}

static bool grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return true;
  int nc = *cap ? *cap * 2 : 64;
  while (nc < need) nc *= 2;
  void *q = realloc(*p, (size_t)nc * elem);
  if (!q) return false;
  memset((char *)q + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
  *p = q;
  *cap = nc;
  return true;
}

int rt_val_new(ob_rt *rt, int tensor, rt_layout lay, ob_dtype dt, size_t bytes) {
  if (!grow((void **)&rt->v, &rt->cv, rt->nv + 1, sizeof *rt->v)) return -1;
  rt_val *v = &rt->v[rt->nv];
  memset(v, 0, sizeof *v);
  v->tensor = tensor;
  v->lay = lay;
  v->dtype = dt;
  v->bytes = bytes;
  v->def = INT_MAX; /* set by the step that writes it */
  v->last = -1;
  v->alias = -1;
  return rt->nv++;
}

bool rt_bind(ob_rt *rt, int t, int v) {
  int n = rt->ntvals[t];
  int *nl = rt_alloc(rt, sizeof(int) * (size_t)(n + 1));
  if (!nl) return false;
  if (n) memcpy(nl, rt->tvals[t], sizeof(int) * (size_t)n);
  nl[n] = v;
  rt->tvals[t] = nl;
  rt->ntvals[t] = n + 1;
  return true;
}

int rt_primary(const ob_rt *rt, int t) { return rt->ntvals[t] ? rt->tvals[t][0] : -1; }

static int find_value(const ob_rt *rt, int t, rt_layout lay) {
  for (int i = 0; i < rt->ntvals[t]; i++)
    if (rl_eq(rt->v[rt->tvals[t][i]].lay, lay)) return rt->tvals[t][i];
  return -1;
}

int rt_step_add(ob_rt *rt, ob_rt_step_kind kind, int node, const char *name, const char *op, const int *in, int nin,
                const int *out, int nout, rt_run_fn run, void *p) {
  if (!grow((void **)&rt->s, &rt->cs, rt->ns + 1, sizeof *rt->s)) return -1;
  int id = rt->ns;
  rt_step *s = &rt->s[id];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->node = node;
  s->name = rt_strdup(rt, name);
  s->op = rt_strdup(rt, op);
  s->kern = -1;
  s->run = run;
  s->p = p;
  s->nin = nin;
  s->nout = nout;
  s->in = rt_alloc(rt, sizeof(int) * (size_t)(nin + 1));
  s->out = rt_alloc(rt, sizeof(int) * (size_t)(nout + 1));
  s->pin = rt_alloc(rt, sizeof(void *) * (size_t)(nin + 1));
  s->pout = rt_alloc(rt, sizeof(void *) * (size_t)(nout + 1));
  if (!s->name || !s->op || !s->in || !s->out || !s->pin || !s->pout) return -1;
  for (int i = 0; i < nin; i++) {
    s->in[i] = in[i];
    if (in[i] >= 0 && rt->v[in[i]].last < id) rt->v[in[i]].last = id;
  }
  for (int i = 0; i < nout; i++) {
    s->out[i] = out[i];
    if (rt->v[out[i]].def > id) rt->v[out[i]].def = id;
  }
  rt->ns++;
  switch (kind) {
  case OB_RT_STEP_KERNEL: rt->st.nkernels++; break;
  case OB_RT_STEP_ONEDNN: rt->st.nonednn++; break;
  case OB_RT_STEP_NATIVE: rt->st.nnative++; break;
  default: rt->st.nconvert++; break;
  }
  return id;
}

static ob_status nomem(ob_rt *rt) { return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory"); }

/* Direct conversions; anything else goes through the plain layout. */
static bool direct(rt_layout from, rt_layout to) {
  if (from.kind == RL_PLAIN) return to.kind != RL_SCRATCH;
  if (from.kind == RL_NCHWC) return to.kind == RL_PLAIN || to.kind == RL_NCHWC;
  return false;
}

int rt_value_for(ob_rt *rt, int t, rt_layout lay) {
  int v = find_value(rt, t, lay);
  if (v >= 0) return v;
  const ob_graph *g = rt->g;
  if (ob_graph_tensor_kind(g, t) == OB_GT_CONST) {
    const void *data = ob_graph_tensor_data(g, t);
    size_t bytes = rt_layout_bytes(g, t, lay);
    v = rt_val_new(rt, t, lay, ob_graph_tensor_dtype(g, t), bytes);
    if (v < 0 || !rt_bind(rt, t, v)) {
      nomem(rt);
      return -1;
    }
    rt_val *cv = &rt->v[v];
    cv->is_const = true;
    cv->def = -1;
    if (lay.kind == RL_PLAIN) {
      cv->cdata = data;
      return v;
    }
    void *w = rt_weight_alloc(rt, bytes);
    if (!w) {
      nomem(rt);
      return -1;
    }
    rt_convert_const(g, t, lay, data, w);
    cv->cdata = w;
    rt->st.npacked++;
    rt->st.packed_bytes += bytes;
    return v;
  }
  int src = find_value(rt, t, rl_plain());
  if (src < 0) src = rt_primary(rt, t);
  if (src < 0) {
    ob_fail(rt->ctx, OB_ERR_INVALID_ARG, "runtime: tensor '%s' is read before any node makes it",
            ob_graph_tensor_name(g, t));
    return -1;
  }
  if (!direct(rt->v[src].lay, lay)) {
    src = rt_value_for(rt, t, rl_plain());
    if (src < 0) return -1;
  }
  return rt_convert(rt, src, lay);
}

/* ---- choosing a kernel ---------------------------------------------------------------- */

static void note(ob_rt *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(ob_rt *rt, const char *fmt, ...) {
  if (!rt->o.notes) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("runtime: ", rt->o.notes);
  vfprintf(rt->o.notes, fmt, ap);
  fputc('\n', rt->o.notes);
  va_end(ap);
}

static int kern_find(const ob_rt *rt, const char *key, const char *tmpl, uint64_t idx) {
  for (int i = 0; i < rt->nkern; i++)
    if (!strcmp(rt->kern[i].key, key) && !strcmp(ob_task_template(rt->kern[i].task), tmpl) &&
        rt->kern[i].cfg.index == idx)
      return i;
  return -1;
}

static bool key_seen(const ob_rt *rt, const char *key) {
  for (int i = 0; i < rt->nkern; i++)
    if (!strcmp(rt->kern[i].key, key)) return true;
  return false;
}

/* A kernel for (workload, template, config): the one already made for it,
 * or a new one. Takes ownership of task when it makes one, else frees it. */
static int kern_get(ob_rt *rt, const char *key, ob_task *task, const ob_config *cfg, bool from_db, double db_s) {
  int k = kern_find(rt, key, ob_task_template(task), cfg->index);
  if (k >= 0) {
    ob_task_free(task);
    return k;
  }
  if (!grow((void **)&rt->kern, &rt->ckern, rt->nkern + 1, sizeof *rt->kern)) {
    ob_task_free(task);
    nomem(rt);
    return -1;
  }
  bool new_key = !key_seen(rt, key);
  rt_kern *kn = &rt->kern[rt->nkern];
  memset(kn, 0, sizeof *kn);
  snprintf(kn->key, sizeof kn->key, "%s", key);
  kn->task = task;
  kn->cfg = *cfg;
  kn->from_db = from_db;
  kn->db_s = db_s;
  if (new_key) {
    rt->st.ntasks++;
    if (from_db) rt->st.ntuned++;
    else rt->st.ndefault++;
  }
  return rt->nkern++;
}

double rt_convert_cost(const double *cv, size_t bytes, int64_t from, int64_t to) {
  /* Bytes of the tensor per second, by what one copy moves (native.c's
   * cv_range): runs of m = min(from, to) floats where one block divides the
   * other, single floats along the tile's pixels between plain (or NCHW1c)
   * and a block, an index computed per float between blocks that do not
   * divide (32 -> 6). The rates are the host's measured ones where the
   * database holds them, else ob_rt_cv_default's; the selection needs their
   * order and their scale against kernel times, which an earlier flat guess
   * (runs 4 GB/s, element by element 0.6) had 2.4 to 9.5x too low. A block
   * of -1 is a kernel's own padded layout: its pack hook copies rows into
   * padding at 0.7 of plain <-> block (mobilenet-v2's 24-channel unpack:
   * 0.086 ms for 301 KB, 3.5 GB/s, beside plain <-> block's 5 on that host). */
  if (from < 0 || to < 0) return (double)bytes / (0.7 * cv[OB_RT_CV_BLOCK]);
  if (from == 1) from = 0; /* NCHW1c is NCHW */
  if (to == 1) to = 0;
  if (from == to) return 0; /* NCHW[1]c <-> NCHW: a view (rt_convert) */
  double rate;
  if (from > 0 && to > 0 && (from % to == 0 || to % from == 0)) {
    int64_t m = from < to ? from : to;
    rate = cv[m >= 16 ? OB_RT_CV_RUN16 : m >= 8 ? OB_RT_CV_RUN8 : m >= 4 ? OB_RT_CV_RUN4 : OB_RT_CV_RUN2];
  } else if (from == 0 || to == 0) {
    rate = cv[OB_RT_CV_BLOCK];
  } else {
    rate = cv[OB_RT_CV_NODIV];
  }
  return (double)bytes / rate;
}

/* The conversion rates: the host's limits "cv_*" at the runtime's thread
 * count where the database holds every one of them (ob_rt_cv_measure, by
 * opbench profile), else at 1 thread, else the built-in ones. */
static void cv_rates(ob_rt *rt) {
  ob_rt_cv_default(rt->cv_rate);
  rt->st.cv_threads = 0;
  ob_db_host_limits *l = NULL;
  if (!rt->o.db || ob_db_get_host_limits(rt->o.db, rt->host, &l) != OB_OK) {
    ob_ctx_clear_error(rt->ctx); /* a file without limits prices as before */
    return;
  }
  int tries[2] = {rt->o.nthreads, 1};
  for (int t = 0; t < 2 && !rt->st.cv_threads; t++) {
    double v[OB_RT_CV_KINDS];
    int found = 0;
    for (int k = 0; k < OB_RT_CV_KINDS; k++)
      for (int64_t i = 0; i < l->n; i++)
        if (l->l[i].threads == tries[t] && !strcmp(l->l[i].name, ob_rt_cv_name(k)) && l->l[i].value > 0 &&
            l->l[i].verified) {
          v[k] = l->l[i].value * 1e9; /* stored in GB/s */
          found++;
          break;
        }
    if (found == OB_RT_CV_KINDS) {
      memcpy(rt->cv_rate, v, sizeof v);
      rt->st.cv_threads = tries[t];
    }
  }
  ob_db_host_limits_free(l);
}

/* True when an earlier plan failed to build this kernel (index), any
 * config of tmpl for workload key (UINT64_MAX), or any kernel of key (tmpl
 * NULL). */
static bool avoided(const ob_rt *rt, const char *key, const char *tmpl, uint64_t index) {
  for (int i = 0; i < rt->navoid; i++)
    if ((index == UINT64_MAX || rt->avoid[i].index == index) && !strcmp(rt->avoid[i].key, key) &&
        (!tmpl || !strcmp(rt->avoid[i].tmpl, tmpl)))
      return true;
  return false;
}

ob_status rt_untuned_task(ob_ctx *ctx, const ob_rt *rt, const ob_workload *wl, ob_task **task) {
  const char *tmpl = ob_op_untuned_template(wl, rt->target);
  ob_status st = ob_task_new(ctx, wl, tmpl, rt->target, task);
  if (st || !tmpl || !rt->navoid) return st;
  /* a config of the untuned pick failed to build in an earlier plan (its
   * default or a block variant the layout selection chose): the
   * operator's default template instead */
  char key[256];
  ob_workload_key(wl, key, sizeof key);
  if (!avoided(rt, key, ob_task_template(*task), UINT64_MAX)) return OB_OK;
  ob_task_free(*task);
  *task = NULL;
  return ob_task_new(ctx, wl, NULL, rt->target, task);
}

/* The config of node's workload: the database's fastest record for this
 * host, target and resources (the cost of converting the input into its
 * data layout counted), else the default of the default template. */
bool rt_record_task(ob_ctx *ctx, const ob_rt *rt, const ob_workload *wl, const ob_db_record *r, ob_task **task,
                    ob_config *cfg) {
  *task = NULL;
  if (ob_task_new(ctx, wl, r->tmpl, rt->target, task) != OB_OK) {
    ob_ctx_clear_error(ctx); /* a template this build lacks */
    return false;
  }
  ob_status st = r->entity ? ob_config_from_json(ctx, ob_task_space(*task), r->entity, cfg) : OB_ERR_NOT_FOUND;
  if (st) st = ob_space_get(ctx, ob_task_space(*task), r->config_index, cfg);
  if (st) {
    ob_ctx_clear_error(ctx);
    ob_task_free(*task);
    *task = NULL;
    return false;
  }
  return true;
}

/* The k fastest records of a workload (key) in the cache state the runtime
 * prefers when it has any, else in every state: a config timed warm and
 * one timed with cold weights are not compared (the warm one reads faster
 * however it runs in the model). The layout selection and choose_kernel
 * read the same list. */
ob_status rt_top_records(const ob_rt *rt, const ob_db_key *k, ob_db_records **out, bool *other) {
  if (other) *other = false;
  if (rt->o.cache != OB_DB_CACHE_ANY) {
    ob_status st = ob_db_top_k_cache(rt->o.db, k, rt->o.cache, RT_TOPK, out);
    if (st || (*out)->n > 0) return st;
    ob_db_records_free(*out);
    *out = NULL;
    if (other) *other = true;
  }
  return ob_db_top_k(rt->o.db, k, RT_TOPK, out);
}

/* The times the plan compares records by: their medians, except that a
 * record faster than its template's confirmed best (tune's re-measurement
 * of the best trials with the full protocol, confirm.c) and older than
 * that confirmation counts at the confirmed time. The confirmation
 * re-measured and replaced the records of its candidates, so such a record
 * is a trial it did not re-measure, timed in another phase of a noisy host:
 * resnet-18's tuned stem #3389 kept a trial of 3.218 ms beside the
 * confirmed default's 3.364, ran 3.06 ms against the default's 2.59 in the
 * model, and won the layout plan once its input conversion (0.11 ms) was
 * costed right. Only where the confirmed config's record is in the list
 * with the confirmed time (the same cache state). */
void rt_record_times(const ob_rt *rt, const ob_db_key *k, const ob_db_records *recs, double *s) {
  ob_ctx *ctx = rt->ctx;
  for (int64_t i = 0; i < recs->n; i++) s[i] = recs->rec[i].timing.median_s;
  for (int64_t i = 0; i < recs->n; i++) {
    const char *tmpl = recs->rec[i].tmpl;
    bool seen = false;
    for (int64_t j = 0; j < i && !seen; j++) seen = !strcmp(recs->rec[j].tmpl, tmpl);
    if (seen) continue; /* one query per template */
    ob_db_key kt = *k;
    kt.tmpl = tmpl;
    ob_db_confirmed c;
    if (ob_db_get_confirmed(rt->o.db, &kt, &c) != OB_OK) {
      ob_ctx_clear_error(ctx);
      continue;
    }
    bool listed = false;
    for (int64_t j = 0; j < recs->n && !listed; j++)
      listed = !strcmp(recs->rec[j].tmpl, tmpl) && recs->rec[j].config_index == c.config_index &&
               fabs(recs->rec[j].timing.median_s - c.median_s) <= 1e-9 * c.median_s;
    if (!listed) continue;
    for (int64_t j = 0; j < recs->n; j++) {
      const ob_db_record *r = &recs->rec[j];
      if (!strcmp(r->tmpl, tmpl) && r->config_index != c.config_index && r->timestamp <= c.timestamp &&
          s[j] <= c.median_s)
        s[j] = c.median_s * (1 + 1e-6); /* a hair above: ties go to the confirmed */
    }
  }
}

static int choose_kernel(ob_rt *rt, int node, const ob_workload *wl, const char *key) {
  const ob_graph *g = rt->g;
  ob_ctx *ctx = rt->ctx;
  bool use_db = rt_reads_records(rt), other_cache = false, new_key = !key_seen(rt, key);
  ob_db_records *recs = NULL;
  if (use_db) {
    ob_db_key k = {.host = rt->host, .workload = key, .target = ob_target_str(rt->target), .resources = rt->resources};
    if (rt_top_records(rt, &k, &recs, &other_cache) != OB_OK) {
      ob_fail_prefix(ctx, "runtime: reading the database for %s", key);
      return -1;
    }
    if (recs->n == 0) {
      ob_db_records *any = NULL;
      ob_db_key ka = {.workload = key, .target = ob_target_str(rt->target), .resources = rt->resources};
      if (ob_db_top_k(rt->o.db, &ka, 1, &any) == OB_OK && any->n > 0) rt->foreign_records++;
      ob_db_records_free(any);
      ob_ctx_clear_error(ctx);
    }
  }
  int in0 = ob_graph_node_num_inputs(g, node) > 0 ? ob_graph_node_input(g, node, 0) : -1;
  bool act0 = in0 >= 0 && ob_graph_tensor_kind(g, in0) != OB_GT_CONST;
  /* the layout selection's pick (layout.c) when it made one: chosen with
   * the node's neighbours, not from its input alone */
  const char *ptmpl = NULL;
  uint64_t pidx = 0;
  /* (not where a config of its template failed: the selection's picks
   * without records are the untuned template's block variants) */
  bool picked = rt_layout_picked(rt, node, &ptmpl, &pidx) && !avoided(rt, key, ptmpl, UINT64_MAX);
  int best = -1;
  /* the records' times choose only where the selection made no pick (its
   * pick is the one record let through below; node_cands timed them) */
  double best_cost = INFINITY, *rs = recs && !picked ? malloc(sizeof *rs * (size_t)(recs->n + 1)) : NULL;
  if (recs && !picked && !rs) {
    ob_db_records_free(recs);
    ob_fail(ctx, OB_ERR_NOMEM, "runtime: out of memory");
    return -1;
  }
  if (rs) {
    ob_db_key k = {.host = rt->host, .workload = key, .target = ob_target_str(rt->target), .resources = rt->resources};
    rt_record_times(rt, &k, recs, rs);
  }
  for (int64_t i = 0; recs && i < recs->n; i++) {
    const ob_db_record *r = &recs->rec[i];
    ob_task *task = NULL;
    ob_config cfg;
    if (!rt_record_task(ctx, rt, wl, r, &task, &cfg)) continue;
    if (avoided(rt, key, ob_task_template(task), cfg.index) ||
        (picked && (strcmp(r->tmpl, ptmpl) || cfg.index != pidx))) {
      ob_task_free(task);
      continue;
    }
    double cost = rs ? rs[i] : r->timing.median_s;
    if (act0 && !picked) {
      ob_arg_layout al = ob_task_arg_layout(task, &cfg, 0);
      rt_layout want = al.kind == OB_ARGL_NCHWC ? (rt_layout){RL_NCHWC, al.block} : rl_plain();
      int src = rt_primary(rt, in0);
      if (al.kind != OB_ARGL_OPAQUE && find_value(rt, in0, want) < 0)
        cost += rt_convert_cost(rt->cv_rate, rt_layout_bytes(g, in0, rl_plain()),
                                src >= 0 && rt->v[src].lay.kind == RL_NCHWC ? rt->v[src].lay.block : 0,
                                want.kind == RL_NCHWC ? want.block : 0);
    }
    if (cost < best_cost) {
      int k = kern_get(rt, key, task, &cfg, true, r->timing.median_s);
      if (k < 0) {
        ob_db_records_free(recs);
        free(rs);
        return -1;
      }
      best_cost = cost;
      best = k;
    } else {
      ob_task_free(task);
    }
  }
  ob_db_records_free(recs);
  free(rs);
  if (best >= 0) {
    if (other_cache && new_key) rt->st.nother_cache++;
    return best;
  }
  ob_task *task = NULL;
  if (rt_untuned_task(ctx, rt, wl, &task) != OB_OK) {
    ob_fail_prefix(ctx, "runtime: node '%s'", ob_graph_node_name(g, node));
    return -1;
  }
  /* (a plan made again after a failed build says it only for the
   * workloads whose kernels failed: the first plan said the rest) */
  bool said = rt->navoid > 0 && !avoided(rt, key, NULL, UINT64_MAX);
  if (use_db && !key_seen(rt, key) && !said)
    note(rt, "no record of %s for this host, target and %s in the database: default config of %s", key,
         rt->resources, ob_task_template(task));
  ob_config cfg = ob_task_default_config(task);
  if (avoided(rt, key, ob_task_template(task), cfg.index)) {
    ob_fail(ctx, OB_ERR_COMPILE, "runtime: node '%s': the default config of %s failed to build, and no other "
            "kernel of %s is left to try", ob_graph_node_name(g, node), ob_task_template(task), key);
    rt->none_left = true;
    ob_task_free(task);
    return -1;
  }
  /* the selection's pick among the default's channel-block variants (layout.c) */
  if (picked && !strcmp(ptmpl, ob_task_template(task)) && pidx != cfg.index &&
      ob_space_get(ctx, ob_task_space(task), pidx, &cfg) != OB_OK) {
    ob_ctx_clear_error(ctx);
    cfg = ob_task_default_config(task);
  }
  return kern_get(rt, key, task, &cfg, false, NAN);
}

/* ---- kernel steps ------------------------------------------------------------------------ */

static int run_kernel(ob_rt *rt, rt_step *s) { return ob_kernel_run(rt->kern[s->kern].k, s->kbuf, rt->pool); }

/* A kernel argument in a layout only the template's pack hooks know. */
/* The kernel is named by its index: rt->kern grows (and moves) while later
 * nodes are planned, so a pointer to its config would dangle. */
typedef struct pack_p {
  int kern;
  int arg;
  bool unpack;
} pack_p;

static int run_pack(ob_rt *rt, rt_step *s) {
  pack_p *p = s->p;
  const rt_kern *k = &rt->kern[p->kern];
  if (p->unpack) ob_task_unpack_arg(k->task, &k->cfg, p->arg, s->pin[0], s->pout[0]);
  else ob_task_pack_arg(k->task, &k->cfg, p->arg, s->pin[0], s->pout[0]);
  return 0;
}

/* Elementwise operators whose kernels compute element by element: any
 * layout works when all their tensors share it. */
static bool layout_free(const char *op) {
  static const char *const k[] = {"relu", "add", "mul", "sigmoid", "tanh", "gelu", "gelu_erf", "relu6", "clip"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (!strcmp(op, k[i])) return true;
  return false;
}

static rt_layout from_arg_layout(ob_arg_layout al, bool kn) {
  switch (al.kind) {
  case OB_ARGL_NCHWC: return (rt_layout){RL_NCHWC, al.block};
  case OB_ARGL_PANELS: return (rt_layout){kn ? RL_KN_PANELS : RL_PANELS, al.block};
  case OB_ARGL_OPAQUE: return (rt_layout){RL_SCRATCH, 0};
  default: return kn ? (rt_layout){RL_KN_T, 0} : rl_plain();
  }
}

static ob_status plan_kernel(ob_rt *rt, int node, const ob_workload *wl) {
  const ob_graph *g = rt->g;
  char key[256];
  ob_workload_key(wl, key, sizeof key);
  int k = choose_kernel(rt, node, wl, key);
  if (k < 0) return OB_ERR_INVALID_ARG; /* ctx has why */
  const ob_task *task = rt->kern[k].task;
  const ob_config *cfg = &rt->kern[k].cfg;
  int nargs = ob_task_num_args(task);
  bool kn = ob_graph_node_op(g, node) == OB_GOP_MATMUL;
  /* the workload's inputs are the node's given inputs, in order */
  int ins[OB_KERNEL_MAX_ARGS], nins = 0;
  for (int i = 0; i < ob_graph_node_num_inputs(g, node) && nins < OB_KERNEL_MAX_ARGS; i++)
    if (ob_graph_node_input(g, node, i) >= 0) ins[nins++] = ob_graph_node_input(g, node, i);
  rt_layout free_lay = rl_plain();
  if (layout_free(wl->op)) {
    int p0 = rt_primary(rt, ins[0]);
    if (p0 >= 0 && rt->v[p0].lay.kind == RL_NCHWC) free_lay = rt->v[p0].lay;
  }
  int vals[OB_KERNEL_MAX_ARGS], after = -1, after_src = -1;
  int a = 0;
  for (int i = 0; i < nargs; i++) {
    ob_arg_layout al = ob_task_arg_layout(task, cfg, i);
    bool arg_kn = kn && i == 1;
    rt_layout lay = layout_free(wl->op) ? free_lay : from_arg_layout(al, arg_kn);
    if (ob_task_arg_is_input(task, i)) {
      if (a >= nins) return ob_fail(rt->ctx, OB_ERR_INVALID_ARG, "runtime: node '%s' has fewer inputs than %s takes",
                                    ob_graph_node_name(g, node), wl->op);
      int t = ins[a++];
      if (lay.kind != RL_SCRATCH) {
        vals[i] = rt_value_for(rt, t, lay);
        if (vals[i] < 0) return OB_ERR_INVALID_ARG;
        continue;
      }
      /* packed by the template's hook from the operator's layout */
      int src = rt_value_for(rt, t, arg_kn ? (rt_layout){RL_KN_T, 0} : rl_plain());
      if (src < 0) return OB_ERR_INVALID_ARG;
      size_t bytes = ob_task_arg_bytes_for(task, cfg, i); /* padded blocks and panels */
      if (rt->v[src].is_const) {
        int v = rt_val_new(rt, -1, lay, OB_F32, bytes);
        if (v < 0) return nomem(rt);
        rt_val *pv = &rt->v[v];
        pv->is_const = true;
        pv->def = -1;
        void *w = rt_weight_alloc(rt, bytes);
        if (!w) return nomem(rt);
        ob_task_pack_arg(task, cfg, i, rt->v[src].cdata, w);
        pv->cdata = w;
        rt->st.npacked++;
        rt->st.packed_bytes += bytes;
        vals[i] = v;
        continue;
      }
      int v = rt_val_new(rt, -1, lay, OB_F32, bytes);
      pack_p *pp = rt_alloc(rt, sizeof *pp);
      if (v < 0 || !pp) return nomem(rt);
      *pp = (pack_p){k, i, false};
      char nm[300];
      snprintf(nm, sizeof nm, "%s: pack %s", ob_graph_node_name(g, node), ob_task_arg_name(task, i));
      if (rt_step_add(rt, OB_RT_STEP_CONVERT, node, nm, "pack", &src, 1, &v, 1, run_pack, pp) < 0) return nomem(rt);
      vals[i] = v;
    } else {
      int t = ob_graph_node_output(g, node, 0);
      size_t bytes = ob_task_arg_bytes_for(task, cfg, i); /* padded blocks and panels */
      if (lay.kind == RL_SCRATCH) {
        vals[i] = rt_val_new(rt, -1, lay, OB_F32, bytes);
        after = rt_val_new(rt, t, rl_plain(), OB_F32, rt_layout_bytes(g, t, rl_plain()));
        if (vals[i] < 0 || after < 0 || !rt_bind(rt, t, after)) return nomem(rt);
        after_src = i;
      } else {
        vals[i] = rt_val_new(rt, t, lay, OB_F32, bytes);
        if (vals[i] < 0 || !rt_bind(rt, t, vals[i])) return nomem(rt);
      }
    }
  }
  int nin = 0, nout = 0, ivals[OB_KERNEL_MAX_ARGS], ovals[OB_KERNEL_MAX_ARGS];
  for (int i = 0; i < nargs; i++) {
    if (ob_task_arg_is_input(task, i)) ivals[nin++] = vals[i];
    else ovals[nout++] = vals[i];
  }
  int sid = rt_step_add(rt, OB_RT_STEP_KERNEL, node, ob_graph_node_name(g, node), wl->op, ivals, nin, ovals, nout,
                        run_kernel, NULL);
  if (sid < 0) return nomem(rt);
  rt_step *s = &rt->s[sid];
  s->kern = k;
  s->nkargs = nargs;
  memcpy(s->kval, vals, sizeof(int) * (size_t)nargs);
  snprintf(s->wl_key, sizeof s->wl_key, "%s", key);
  s->flops = ob_workload_flops(wl);
  if (after >= 0) {
    pack_p *pp = rt_alloc(rt, sizeof *pp);
    if (!pp) return nomem(rt);
    *pp = (pack_p){k, after_src, true};
    char nm[300];
    snprintf(nm, sizeof nm, "%s: unpack", ob_graph_node_name(g, node));
    if (rt_step_add(rt, OB_RT_STEP_CONVERT, node, nm, "unpack", &vals[after_src], 1, &after, 1, run_pack, pp) < 0)
      return nomem(rt);
  }
  return OB_OK;
}

/* ---- oneDNN steps ------------------------------------------------------------------------------ */

static int run_prim(ob_rt *rt, rt_step *s) {
  (void)rt;
  return ob_baseline_prim_run(s->prim, s->kbuf);
}

static bool onednn_op(const char *op) {
  return !strcmp(op, "conv2d") || !strcmp(op, "depthwise_conv2d") || !strcmp(op, "dense") ||
         !strcmp(op, "batch_matmul") || !strcmp(op, "pool2d") || !strcmp(op, "global_avg_pool");
}

/* OB_ERR_UNSUPPORTED when oneDNN has no primitive for it (the caller runs
 * opbench's kernel instead). */
static ob_status plan_onednn(ob_rt *rt, int node, const ob_workload *wl) {
  const ob_graph *g = rt->g;
  int ins[OB_KERNEL_MAX_ARGS], nins = 0;
  for (int i = 0; i < ob_graph_node_num_inputs(g, node) && nins < OB_KERNEL_MAX_ARGS; i++)
    if (ob_graph_node_input(g, node, i) >= 0) ins[nins++] = ob_graph_node_input(g, node, i);
  int nargs = ob_workload_num_args(wl);
  bool kn = ob_graph_node_op(g, node) == OB_GOP_MATMUL;
  const void *consts[OB_KERNEL_MAX_ARGS] = {0};
  for (int i = 0, a = 0; i < nargs; i++) {
    if (!ob_workload_arg_is_input(wl, i)) continue;
    int t = ins[a++];
    if (ob_graph_tensor_kind(g, t) == OB_GT_CONST) {
      if (kn && i == 1) { /* the node's [K, N]: the workload's B is its transpose */
        int v = rt_value_for(rt, t, (rt_layout){RL_KN_T, 0});
        if (v < 0) return OB_ERR_INVALID_ARG;
        consts[i] = rt->v[v].cdata;
      } else {
        consts[i] = ob_graph_tensor_data(g, t);
      }
    }
  }
  bool b_kn = kn && !consts[1];
  ob_baseline_prim *prim = NULL;
  ob_status st = ob_baseline_prim_new(rt->bl, wl, rt->lanes, b_kn, consts, &prim);
  if (st) return st;
  int vals[OB_KERNEL_MAX_ARGS], ivals[OB_KERNEL_MAX_ARGS], nin = 0, ov = -1;
  int dblk = ob_baseline_prim_data_block(prim), oblk = ob_baseline_prim_out_block(prim);
  for (int i = 0, a = 0; i < nargs; i++) {
    if (!ob_workload_arg_is_input(wl, i)) {
      int t = ob_graph_node_output(g, node, 0);
      rt_layout lay = oblk ? (rt_layout){RL_NCHWC, oblk} : rl_plain();
      ov = vals[i] = rt_val_new(rt, t, lay, OB_F32, rt_layout_bytes(g, t, lay));
      if (ov < 0 || !rt_bind(rt, t, ov)) {
        ob_baseline_prim_free(prim);
        return nomem(rt);
      }
      continue;
    }
    int t = ins[a++];
    rt_layout lay = rl_plain();
    if (i == 0 && dblk) lay = (rt_layout){RL_NCHWC, dblk};
    /* the residual is read in the output's layout */
    if (i > 0 && ob_graph_tensor_ndim(g, t) == 4 && oblk && ob_graph_tensor_kind(g, t) != OB_GT_CONST &&
        !(kn && i == 1))
      lay = (rt_layout){RL_NCHWC, oblk};
    vals[i] = consts[i] ? -1 : rt_value_for(rt, t, lay);
    if (!consts[i] && vals[i] < 0) {
      ob_baseline_prim_free(prim);
      return OB_ERR_INVALID_ARG;
    }
    if (vals[i] >= 0) ivals[nin++] = vals[i];
  }
  int sid = rt_step_add(rt, OB_RT_STEP_ONEDNN, node, ob_graph_node_name(g, node), wl->op, ivals, nin, &ov, 1,
                        run_prim, NULL);
  if (sid < 0) {
    ob_baseline_prim_free(prim);
    return nomem(rt);
  }
  rt_step *s = &rt->s[sid];
  s->prim = prim;
  s->nkargs = nargs;
  memcpy(s->kval, vals, sizeof(int) * (size_t)nargs);
  ob_workload_key(wl, s->wl_key, sizeof s->wl_key);
  s->flops = ob_workload_flops(wl);
  return OB_OK;
}

/* ---- nodes -------------------------------------------------------------------------------------- */

static bool is_view(ob_gop op) {
  return op == OB_GOP_RESHAPE || op == OB_GOP_FLATTEN || op == OB_GOP_SQUEEZE || op == OB_GOP_UNSQUEEZE ||
         op == OB_GOP_IDENTITY;
}

/* Reshape and friends: the output is the input's plain bytes. */
static ob_status plan_view(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  int x = ob_graph_node_input(g, node, 0), y = ob_graph_node_output(g, node, 0);
  int src = rt_value_for(rt, x, rl_plain());
  if (src < 0) return OB_ERR_INVALID_ARG;
  int v = rt_val_new(rt, y, rl_plain(), ob_graph_tensor_dtype(g, y), rt_layout_bytes(g, y, rl_plain()));
  if (v < 0 || !rt_bind(rt, y, v)) return nomem(rt);
  rt_val *sv = &rt->v[src], *vv = &rt->v[v];
  vv->alias = sv->alias >= 0 ? sv->alias : src;
  vv->alias_off = sv->alias >= 0 ? sv->alias_off : 0;
  vv->def = sv->def;
  if (sv->is_const) {
    vv->is_const = true;
    vv->cdata = sv->cdata;
  }
  rt->st.nviews++;
  return OB_OK;
}

/* Pooling, global pooling and a two-input channel concat whose input is
 * blocked run natively in the blocked layout rather than converting. */
static bool prefer_native(const ob_rt *rt, int node, const ob_workload *wl) {
  /* a softmax over the last axis: the native row loop (vectorized exp)
   * runs BERT's attention softmax about 10x faster than the generated
   * kernel, which calls libm's expf per element */
  if (!strcmp(wl->op, "softmax")) {
    const ob_graph *g = rt->g;
    int nd = ob_graph_tensor_ndim(g, ob_graph_node_input(g, node, 0));
    int64_t a = ob_graph_node_attr_i(g, node, "axis", -1);
    return a == -1 || a == nd - 1;
  }
  if (strcmp(wl->op, "pool2d") && strcmp(wl->op, "global_avg_pool") && strcmp(wl->op, "concat")) return false;
  int p0 = rt_primary(rt, ob_graph_node_input(rt->g, node, 0));
  return p0 >= 0 && rt->v[p0].lay.kind == RL_NCHWC && rt_native_takes_blocked(rt, node);
}

static ob_status plan_node(ob_rt *rt, int node) {
  const ob_graph *g = rt->g;
  ob_gop op = ob_graph_node_op(g, node);
  if (is_view(op)) return plan_view(rt, node);
  ob_workload wl;
  if (ob_graph_node_workload(rt->ctx, g, node, &wl) == OB_OK && !prefer_native(rt, node, &wl)) {
    if (rt->o.kernels == OB_RT_ONEDNN && onednn_op(wl.op)) {
      ob_status st = plan_onednn(rt, node, &wl);
      if (st != OB_ERR_UNSUPPORTED) return st;
      note(rt, "node '%s': %s; opbench's kernel runs it", ob_graph_node_name(g, node), ob_ctx_errmsg(rt->ctx));
      ob_ctx_clear_error(rt->ctx);
    }
    return plan_kernel(rt, node, &wl);
  }
  ob_ctx_clear_error(rt->ctx);
  return rt_native_plan(rt, node);
}

/* ---- building ------------------------------------------------------------------------------------- */

#define RT_BUILD_TIMEOUT_S 120.0 /* per kernel, where the options set none */

static ob_status build_kernels(ob_rt *rt) {
  ob_ctx *ctx = rt->ctx;
  int n = rt->nkern;
  /* only the kernels some step uses (choose_kernel may have made others) */
  bool *used = calloc((size_t)n + 1, 1);
  const ob_lowered **fns = calloc((size_t)n + 1, sizeof *fns);
  const char **names = calloc((size_t)n + 1, sizeof *names);
  int *which = calloc((size_t)n + 1, sizeof *which);
  ob_kernel_artifact *art = calloc((size_t)n + 1, sizeof *art);
  ob_status st = OB_OK;
  int nb = 0;
  if (!used || !fns || !names || !which || !art) {
    st = nomem(rt);
    goto done;
  }
  for (int i = 0; i < rt->ns; i++)
    if (rt->s[i].kern >= 0) used[rt->s[i].kern] = true;
  for (int i = 0; i < n && !st; i++) {
    if (!used[i]) continue;
    rt_kern *k = &rt->kern[i];
    st = ob_task_lower(k->task, &k->cfg, &k->fn);
    if (st) {
      ob_fail_prefix(ctx, "runtime: %s", k->key);
      break;
    }
    /* the name tuning built it under: the content-addressed cache then
     * holds the kernel of every tuned config (Winograd's take seconds to
     * compile) */
    ob_task_kernel_name(k->task, &k->cfg, k->name, sizeof k->name);
    fns[nb] = k->fn;
    names[nb] = k->name;
    which[nb++] = i;
  }
  if (st) goto done;
  ob_build_opts bo = rt->o.build;
  /* Tuning's 10 s limit weeds out variants; the runtime builds the kernels
   * it chose, and a Winograd kernel that compiles in 2.4 s alone took over
   * 10 s on a loaded 2-core CI machine and failed the model. The limit
   * still catches a hung compiler. */
  if (bo.timeout_s <= 0) bo.timeout_s = RT_BUILD_TIMEOUT_S;
  st = ob_kernel_build(ctx, rt->target, &bo, fns, names, nb, art);
  if (st) goto done;
  /* every kernel that failed, for the next plan to avoid (ob_rt_new); the
   * error names the first */
  int compiled = 0, nfail = 0;
  for (int j = 0; j < nb; j++) {
    rt_kern *k = &rt->kern[which[j]];
    compiled += !art[j].cached;
    if (art[j].error_no == OB_MERR_NONE) continue;
    nfail++;
    if (rt->nfailed < RT_MAX_AVOID) {
      rt_avoid *f = &rt->failed[rt->nfailed++];
      snprintf(f->key, sizeof f->key, "%s", k->key);
      snprintf(f->tmpl, sizeof f->tmpl, "%s", ob_task_template(k->task));
      f->index = k->cfg.index;
    }
    if (!st) {
      char *cfg = ob_config_str(&k->cfg);
      st = ob_fail(ctx, OB_ERR_COMPILE, "runtime: kernel of %s (template %s, config %s) failed to build: %s: %.300s",
                   k->key, ob_task_template(k->task), cfg ? cfg : "?", ob_merr_str(art[j].error_no),
                   art[j].message ? art[j].message : "");
      free(cfg);
    }
  }
  /* every kernel it compiled failed: the compiler is at fault, not a
   * kernel, and another plan would fail alike */
  if (nfail > 1 && nfail == compiled) rt->nfailed = 0;
  for (int j = 0; j < nb && !st; j++) {
    rt_kern *k = &rt->kern[which[j]];
    k->cached = art[j].cached;
    if (art[j].cached) rt->st.ncached++;
    else rt->st.nbuilt++;
    st = ob_kernel_load(ctx, &art[j], &k->k);
    if (st) ob_fail_prefix(ctx, "runtime: loading the kernel of %s", k->key);
  }
done:
  for (int j = 0; art && j < nb; j++) ob_kernel_artifact_clear(&art[j]);
  for (int i = 0; i < n; i++) {
    ob_lowered_free(rt->kern[i].fn);
    rt->kern[i].fn = NULL;
  }
  free(used);
  free(fns);
  free(names);
  free(which);
  free(art);
  return st;
}

/* ---- ob_rt_new ---------------------------------------------------------------------------------------- */

ob_rt_opts ob_rt_opts_default(void) {
  ob_rt_opts o;
  memset(&o, 0, sizeof o);
  o.kernels = OB_RT_TUNED;
  o.nthreads = 1;
  o.cache = OB_DB_CACHE_COLD_WEIGHTS;
  return o;
}

const char *ob_rt_kernels_name(ob_rt_kernels k) {
  static const char *const n[OB_RT_KERNELS_COUNT] = {"tuned", "default", "onednn"};
  return (unsigned)k < OB_RT_KERNELS_COUNT ? n[k] : "?";
}

static ob_status setup(ob_rt *rt) {
  ob_ctx *ctx = rt->ctx;
  const ob_rt_opts *o = &rt->o;
  ob_status st = OB_OK;
  if (o->target) {
    rt->target = o->target;
  } else {
    if ((st = ob_target_host(ctx, &rt->own_target))) return st;
    rt->target = rt->own_target;
  }
  const ob_target_facts *f = ob_target_get_facts(rt->target);
  if (!f->native)
    return ob_fail(ctx, OB_ERR_UNSUPPORTED, "runtime: target '%s' does not run natively here; the graph runtime runs "
                   "kernels in this process", ob_target_str(rt->target));
  rt->lanes = f->lanes_f32;
  for (int i = 0; i < o->nthreads; i++) rt->cores[i] = o->cores ? o->cores[i] : i;
  rt->o.cores = rt->cores;
  if (o->host) {
    snprintf(rt->host, sizeof rt->host, "%s", o->host);
  } else {
    ob_host h;
    if ((st = ob_host_detect(ctx, &h))) return st;
    snprintf(rt->host, sizeof rt->host, "%s", h.fingerprint);
  }
  cv_rates(rt);
  ob_measure_opts mo = ob_measure_opts_default();
  mo.nthreads = o->nthreads;
  mo.cores = rt->cores;
  ob_tune_resources(&mo, rt->resources, sizeof rt->resources);
  if (o->kernels == OB_RT_ONEDNN) {
    /* the host's best ISA unlimited; a narrower target limits oneDNN too */
    st = ob_baseline_onednn_new(ctx, rt->cores, o->nthreads, o->target ? rt->target : NULL, &rt->bl);
    if (st) return st;
  }
  /* the pool pins the calling thread: after oneDNN has read the process's
   * cores */
  return ob_pool_new(ctx, rt->cores, o->nthreads, &rt->pool);
}

/* One plan and build of g, avoiding avoid[0..navoid); the kernels that
 * failed to build go to failed[0..*nfailed) (none where every kernel it
 * compiled failed). */
static ob_status rt_new_once(ob_ctx *ctx, const ob_graph *g, const ob_rt_opts *o, const rt_avoid *avoid, int navoid,
                             rt_avoid *failed, int *nfailed, ob_rt **out) {
  *out = NULL;
  *nfailed = 0;
  ob_rt_opts opts = o ? *o : ob_rt_opts_default();
  if (opts.nthreads < 1 || opts.nthreads > 256)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: %d threads (expected 1..256)", opts.nthreads);
  if ((unsigned)opts.kernels >= OB_RT_KERNELS_COUNT)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: unknown kernel source %d", (int)opts.kernels);
  if (opts.cache < OB_DB_CACHE_ANY || opts.cache > OB_DB_CACHE_COLD_WEIGHTS)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: unknown cache state %d", (int)opts.cache);
  for (int t = 0; t < ob_graph_tensor_count(g); t++)
    if (ob_graph_tensor_ndim(g, t) < 0 && ob_graph_tensor_producer(g, t) >= 0 &&
        !ob_graph_node_dead(g, ob_graph_tensor_producer(g, t)))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: the shape of '%s' is unknown (infer shapes first)",
                     ob_graph_tensor_name(g, t));
  double t0 = ob_now_s();
  ob_rt *rt = calloc(1, sizeof *rt);
  if (!rt) return ob_fail(ctx, OB_ERR_NOMEM, "runtime: out of memory");
  rt->ctx = ctx;
  rt->g = g;
  rt->o = opts;
  rt->avoid = avoid;
  rt->navoid = navoid;
  ob_status st = OB_OK;
  int nt = ob_graph_tensor_count(g);
  rt->arena = ob_arena_new(ctx, 1 << 16);
  rt->tvals = calloc((size_t)nt + 1, sizeof *rt->tvals);
  rt->ntvals = calloc((size_t)nt + 1, sizeof *rt->ntvals);
  rt->in_val = calloc((size_t)ob_graph_input_count(g) + 1, sizeof(int));
  rt->out_val = calloc((size_t)ob_graph_output_count(g) + 1, sizeof(int));
  if (!rt->arena || !rt->tvals || !rt->ntvals || !rt->in_val || !rt->out_val) {
    st = nomem(rt);
    goto fail;
  }
  if ((st = setup(rt))) goto fail;
  for (int i = 0; i < ob_graph_input_count(g); i++) {
    int t = ob_graph_input(g, i);
    int v = rt_val_new(rt, t, rl_plain(), ob_graph_tensor_dtype(g, t), rt_layout_bytes(g, t, rl_plain()));
    if (v < 0 || !rt_bind(rt, t, v)) {
      st = nomem(rt);
      goto fail;
    }
    rt->v[v].def = -1;
    rt->in_val[i] = v;
  }
  /* oneDNN sizes a primitive's work split by the thread count in force when
   * it is made: made outside the handle's span, an OpenMP build would split
   * for every core of the process and run a team that fights the pinned
   * threads at every call */
  if (opts.kernels != OB_RT_ONEDNN && (st = rt_layout_select(rt))) goto fail;
  if (rt->bl) ob_baseline_enter(rt->bl);
  for (int n = 0; n < ob_graph_node_count(g) && !st; n++)
    if (!ob_graph_node_dead(g, n)) st = plan_node(rt, n);
  if (rt->bl) ob_baseline_leave(rt->bl);
  if (st) goto fail;
  for (int i = 0; i < ob_graph_output_count(g); i++) {
    int v = rt_value_for(rt, ob_graph_output(g, i), rl_plain());
    if (v < 0) {
      st = OB_ERR_INVALID_ARG;
      goto fail;
    }
    rt->out_val[i] = v;
  }
  for (int i = 0; i < ob_graph_output_count(g); i++) {
    rt_val *v = &rt->v[rt->out_val[i]];
    v->last = INT_MAX; /* read after the run */
    if (v->alias >= 0) rt->v[v->alias].last = INT_MAX;
  }
  /* inputs stay as set for every later run (timing loops run the graph
   * again without setting them): their bytes are never reused */
  for (int i = 0; i < ob_graph_input_count(g); i++) rt->v[rt->in_val[i]].last = INT_MAX;
  if ((st = build_kernels(rt))) goto fail;
  if ((st = rt_memplan(rt))) goto fail;
  if (ob_arena_failed(rt->arena)) {
    st = nomem(rt);
    goto fail;
  }
  rt->st.nsteps = rt->ns;
  if (rt->foreign_records && !rt->noted_foreign) {
    rt->noted_foreign = true;
    rt->st.foreign_records = true;
    note(rt, "the database holds records of %lld of this model's workloads from other hosts only; they are not "
         "applied on this host (%s)", (long long)rt->foreign_records, rt->host);
  }
  rt->st.build_s = ob_now_s() - t0;
  *out = rt;
  return OB_OK;
fail:
  *nfailed = rt->nfailed;
  memcpy(failed, rt->failed, sizeof(rt_avoid) * (size_t)rt->nfailed);
  if (rt->none_left) st = OB_ERR_COMPILE;
  ob_rt_free(rt);
  return st;
}

/* A kernel that does not build (a compiler that rejects or outlasts it, a
 * record of another compiler's day) costs its node that kernel, not the
 * model: the plan is made again without it, the node taking its next
 * record or its default (the operator's default template's, where the
 * untuned pick failed), said in a note. */
ob_status ob_rt_new(ob_ctx *ctx, const ob_graph *g, const ob_rt_opts *o, ob_rt **out) {
  OB_ASSERT(ctx && g && out);
  rt_avoid avoid[RT_MAX_AVOID];
  int navoid = 0;
  char first[512] = "";
  for (;;) {
    rt_avoid failed[RT_MAX_AVOID];
    int nfailed = 0;
    ob_status st = rt_new_once(ctx, g, o, avoid, navoid, failed, &nfailed, out);
    if (st != OB_ERR_COMPILE || !nfailed || navoid + nfailed > RT_MAX_AVOID) {
      if (st && navoid) { /* the failure that started the retries, too */
        char cur[512];
        snprintf(cur, sizeof cur, "%s", ob_ctx_errmsg(ctx));
        ob_fail(ctx, st, "%s (first: %s)", cur, first);
      }
      return st;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ob_ctx_errmsg(ctx));
    for (char *c = msg; *c; c++)
      if (*c == '\n' || *c == '\r') *c = ' '; /* a note is one line */
    if (!navoid) snprintf(first, sizeof first, "%s", msg);
    if (o && o->notes)
      fprintf(o->notes, "%s; planning again without %s\n", msg, nfailed > 1 ? "the kernels that failed" : "that kernel");
    ob_ctx_clear_error(ctx);
    memcpy(avoid + navoid, failed, sizeof(rt_avoid) * (size_t)nfailed);
    navoid += nfailed;
  }
}

void ob_rt_free(ob_rt *rt) {
  if (!rt) return;
  for (int i = 0; i < rt->ns; i++) ob_baseline_prim_free(rt->s[i].prim);
  for (int i = 0; i < rt->nkern; i++) {
    ob_kernel_free(rt->kern[i].k);
    ob_lowered_free(rt->kern[i].fn);
    ob_task_free(rt->kern[i].task);
  }
  for (int i = 0; i < rt->nv; i++) free(rt->v[i].owned);
  for (int i = 0; i < rt->nwchunk; i++) ob_mem_free_big(rt->wchunk[i]);
  free(rt->wchunk);
  ob_baseline_free(rt->bl);
  ob_pool_free(rt->pool);
  ob_target_free(rt->own_target);
  ob_mem_free_big(rt->block);
  free(rt->kern);
  free(rt->v);
  free(rt->s);
  free(rt->tvals);
  free(rt->ntvals);
  free(rt->in_val);
  free(rt->out_val);
  ob_arena_free(rt->arena);
  free(rt);
}
