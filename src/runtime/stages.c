/* stages.c: the parallel stage executor (IOS's runtime on CPU cores). A
 * plan's stages hold groups of graph nodes on disjoint core sets; every
 * compiled step goes to the group of its node (a conversion without a node
 * to the group of its readers, or of its producer when readers of one
 * stage sit in several groups), steps keep the runtime's order inside a
 * group (a topological order, whatever order the plan lists). One team
 * thread per core the plan uses, pinned to it; the calling thread is the
 * team's first member. A group is led by the thread of its first core,
 * which owns a thread pool over the group's cores: kernels and native
 * loops of the group run on it through a copy of the runtime's struct whose
 * pool is that one (the steps only read the struct; the copy is refreshed
 * before every run). Between stages a spin barrier among the leaders: each
 * group counts itself done, and a leader starts its group of stage s once
 * every group of stage s-1 has (which implies the stages before); a team
 * thread that leads nothing in a run goes back to sleep at once, and a
 * waiting leader sleeps on a futex after a short spin, because a worker of
 * the running group's pool may share its core.
 *
 * Memory: the sequential plan lets two buffers share bytes when no step
 * sees both alive in step order; stages reorder steps, so the activations
 * are placed again with a value's lifetime taken in both orders (its step
 * span and its stage span) and two values share bytes only when they meet
 * in neither. The runtime then runs either way. */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime_impl.h"

enum { PAR_SPIN = 1 << 11 };

typedef struct par_group {
  int nsteps, *steps;
  int ncores, *cores;
  int pool; /* index in p->pools */
} par_group;

typedef struct par_stage {
  int ngroups;
  par_group *groups;
} par_stage;

typedef struct par_pool {
  int ncores, *cores;
  int member; /* the team member that leads it (its first core's) */
  ob_pool *pool;
  ob_rt view; /* rt with .pool = pool */
} par_pool;

typedef struct par_member {
  struct ob_rt_par *p;
  int index, core;
  pthread_t thread;
  bool started;
} par_member;

struct ob_rt_par {
  ob_rt *rt;
  int nst;
  par_stage *st;
  int npools;
  par_pool *pools;
  int nteam;
  par_member *team;
  /* groups of each stage done in this run */
  _Atomic int *done;
  atomic_int sleepers; /* leaders asleep in wait_stage */
  bool profiling; /* the caller stamps each stage's end */
  /* a run: members wait for `go` to move */
  _Alignas(64) _Atomic uint32_t go;
  atomic_bool stop;
  atomic_int ready, setup_failed;
  char setup_msg[256];
  /* the first failing step of a run, -1 none */
  _Alignas(64) atomic_int fail_step;
  atomic_int fail_rc;
  double *stamp; /* when the caller saw each stage over (profiling) */
};

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Whether stage s runs a thread of another leader's pool on `core`: a
 * member pinned there that spins while it waits takes that thread's core
 * (both are pinned to it; the scheduler time-slices them), so it sleeps at
 * once instead. */
static bool core_busy(const ob_rt_par *p, int s, int core, int member) {
  const par_stage *st = &p->st[s];
  for (int g = 0; g < st->ngroups; g++) {
    const par_group *gr = &st->groups[g];
    if (p->pools[gr->pool].member == member) continue;
    for (int c = 0; c < gr->ncores; c++)
      if (gr->cores[c] == core) return true;
  }
  return false;
}

/* Stage s is over when each of its groups has counted itself done. core,
 * member: the waiting team member's (-1: the caller's final wait, spins). */
static void wait_stage(ob_rt_par *p, int s, int core, int member) {
  int n = p->st[s].ngroups;
  int spin = core >= 0 && core_busy(p, s, core, member) ? 0 : PAR_SPIN;
  for (int i = 0; i < spin; i++) {
    if (atomic_load_explicit(&p->done[s], memory_order_acquire) >= n) return;
    relax();
  }
  /* a long stage: sleep, leaving the core to a worker of the running
   * group's pool. Announce the sleep before the last look; a group counts
   * itself done before it looks for sleepers (both seq_cst), so one of the
   * two sees the other. */
  atomic_fetch_add(&p->sleepers, 1);
  int d;
  while ((d = atomic_load(&p->done[s])) < n)
    syscall(SYS_futex, (uint32_t *)&p->done[s], FUTEX_WAIT_PRIVATE, (uint32_t)d, NULL, NULL, 0);
  atomic_fetch_sub(&p->sleepers, 1);
}

static void group_done(ob_rt_par *p, int s) {
  atomic_fetch_add(&p->done[s], 1);
  if (atomic_load(&p->sleepers) > 0)
    syscall(SYS_futex, (uint32_t *)&p->done[s], FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* One run as member m: the groups it leads, each once the stage before is
 * over (which implies every earlier one). */
static void member_run(ob_rt_par *p, par_member *m) {
  for (int s = 0; s < p->nst; s++) {
    const par_stage *st = &p->st[s];
    bool waited = s == 0;
    for (int g = 0; g < st->ngroups; g++) {
      const par_group *gr = &st->groups[g];
      par_pool *pl = &p->pools[gr->pool];
      if (pl->member != m->index) continue;
      if (!waited) wait_stage(p, s - 1, m->core, m->index);
      waited = true;
      for (int k = 0; k < gr->nsteps && atomic_load_explicit(&p->fail_step, memory_order_relaxed) < 0; k++) {
        rt_step *step = &p->rt->s[gr->steps[k]];
        int rc = step->run(&pl->view, step);
        if (rc) {
          int none = -1;
          if (atomic_compare_exchange_strong(&p->fail_step, &none, gr->steps[k])) atomic_store(&p->fail_rc, rc);
        }
      }
      group_done(p, s);
    }
    if (m->index == 0 && p->profiling) {
      wait_stage(p, s, m->core, m->index);
      p->stamp[s] = ob_now_s();
    }
  }
  if (m->index == 0 && p->nst > 0) wait_stage(p, p->nst - 1, m->core, m->index);
}

static void pin_self(int core, int *err) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  *err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The pools member m leads, made on its (pinned) thread. */
static ob_status member_pools(ob_ctx *ctx, ob_rt_par *p, int m) {
  for (int i = 0; i < p->npools; i++) {
    par_pool *pl = &p->pools[i];
    if (pl->member != m) continue;
    ob_status st = ob_pool_new(ctx, pl->cores, pl->ncores, &pl->pool);
    if (st) return st;
  }
  return OB_OK;
}

static void member_pools_free(ob_rt_par *p, int m) {
  for (int i = p->npools - 1; i >= 0; i--) /* reverse: each restores the mask before it */
    if (p->pools[i].member == m) {
      ob_pool_free(p->pools[i].pool);
      p->pools[i].pool = NULL;
    }
}

static void *member_main(void *arg) {
  par_member *m = arg;
  ob_rt_par *p = m->p;
  int err = 0;
  pin_self(m->core, &err);
  ob_ctx *ctx = NULL;
  ob_status st = err ? OB_ERR_INVALID_ARG : ob_ctx_new(&ctx);
  if (!st) st = member_pools(ctx, p, m->index);
  if (st) {
    if (!atomic_exchange(&p->setup_failed, 1))
      snprintf(p->setup_msg, sizeof p->setup_msg, "%s",
               err ? "cannot pin a team thread to its core" : ctx ? ob_ctx_errmsg(ctx) : "out of memory");
  }
  ob_ctx_free(ctx);
  atomic_fetch_add(&p->ready, 1);
  uint32_t seen = 0;
  while (!st) {
    uint32_t g;
    int i = 0;
    while ((g = atomic_load_explicit(&p->go, memory_order_acquire)) == seen) {
      if (i++ < PAR_SPIN) relax();
      else syscall(SYS_futex, (uint32_t *)&p->go, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    }
    seen = g;
    if (atomic_load(&p->stop)) break;
    member_run(p, m);
  }
  member_pools_free(p, m->index);
  return NULL;
}

/* ---- building the plan ------------------------------------------------------------- */

static int val_root(const ob_rt *rt, int v) { return rt->v[v].alias >= 0 ? rt->v[v].alias : v; }

/* Whether values a and b share bytes: the same memory (a view and what it
 * views), or overlapping slices of one in-place concat's output. */
static bool val_overlap(const ob_rt *rt, int a, int b) {
  if (val_root(rt, a) != val_root(rt, b)) return false;
  const rt_val *x = &rt->v[a], *y = &rt->v[b];
  size_t xo = x->alias >= 0 ? x->alias_off : 0, yo = y->alias >= 0 ? y->alias_off : 0;
  return xo < yo + (y->bytes ? y->bytes : 1) && yo < xo + (x->bytes ? x->bytes : 1);
}

/* Whether step w writes bytes of value v. */
static bool step_writes(const ob_rt *rt, int w, int v) {
  for (int o = 0; o < rt->s[w].nout; o++)
    if (val_overlap(rt, rt->s[w].out[o], v)) return true;
  return false;
}

/* The last step that writes bytes of value v (-1: none). */
static int last_writer(const ob_rt *rt, int v) {
  for (int w = rt->ns - 1; w >= 0; w--)
    if (step_writes(rt, w, v)) return w;
  return -1;
}

typedef struct where {
  int stage, group; /* -1: unassigned */
} where;

/* Cores of the machine: the calling thread's own mask is no guide (the
 * runtime's pool pinned it); a core the process may not use fails when a
 * team thread is pinned to it. */
static int machine_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static ob_status check_plan(ob_rt *rt, int nstages, const ob_rt_stage_plan *stages, where *node_at) {
  ob_ctx *ctx = rt->ctx;
  const ob_graph *g = rt->g;
  int nn = ob_graph_node_count(g);
  for (int s = 0; s < nstages; s++) {
    if (stages[s].ngroups < 1) return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: stage %d has no group", s + 1);
    for (int k = 0; k < stages[s].ngroups; k++) {
      const ob_rt_group_plan *gp = &stages[s].groups[k];
      if (gp->ncores < 1)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: stage %d, group %d has no core", s + 1, k + 1);
      for (int c = 0; c < gp->ncores; c++) {
        int core = gp->cores[c];
        if (core < 0 || core >= machine_cores())
          return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: stage %d, group %d: core %d is past this machine's %d cores",
                         s + 1, k + 1, core, machine_cores());
        for (int k2 = 0; k2 <= k; k2++) {
          const ob_rt_group_plan *o = &stages[s].groups[k2];
          for (int c2 = 0; c2 < (k2 == k ? c : o->ncores); c2++)
            if (o->cores[c2] == core)
              return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: stage %d, group %d: core %d is already held by group %d",
                             s + 1, k + 1, core, k2 + 1);
        }
      }
      for (int i = 0; i < gp->nnodes; i++) {
        int n = gp->nodes[i];
        if (n < 0 || n >= nn)
          return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: stage %d, group %d: no node %d in the graph", s + 1, k + 1,
                         n);
        if (node_at[n].stage >= 0)
          return ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: stage %d, group %d: node '%s' is also in stage %d", s + 1,
                         k + 1, ob_graph_node_name(g, n), node_at[n].stage + 1);
        node_at[n] = (where){s, k};
      }
    }
  }
  return OB_OK;
}

static size_t rsize(size_t b) { return b ? (b + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN : RT_ALIGN; }

/* Places the activations again, lifetimes in both orders (see the top). */
static ob_status replan_memory(ob_rt *rt, const where *step_at, bool share) {
  int nv = rt->nv, ns = rt->ns;
  int *f1 = malloc(sizeof(int) * (size_t)(nv + 1)), *l1 = malloc(sizeof(int) * (size_t)(nv + 1));
  int *f2 = malloc(sizeof(int) * (size_t)(nv + 1)), *l2 = malloc(sizeof(int) * (size_t)(nv + 1));
  int *order = malloc(sizeof(int) * (size_t)(nv + 1));
  size_t *off = calloc((size_t)nv + 1, sizeof(size_t));
  ob_status st = OB_OK;
  if (!f1 || !l1 || !f2 || !l2 || !order || !off) {
    st = ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
    goto done;
  }
  for (int v = 0; v < nv; v++) {
    f1[v] = f2[v] = INT_MAX;
    l1[v] = l2[v] = -1;
  }
  int last_stage = 0;
  for (int i = 0; i < ns; i++)
    if (step_at[i].stage > last_stage) last_stage = step_at[i].stage;
  /* every use and definition, through views to the memory they are */
  for (int i = 0; i < ns; i++) {
    const rt_step *s = &rt->s[i];
    int stg = step_at[i].stage < -1 ? -1 : step_at[i].stage;
    for (int pass = 0; pass < 3; pass++) {
      int n = pass == 0 ? s->nin : pass == 1 ? s->nout : s->nkargs;
      const int *ids = pass == 0 ? s->in : pass == 1 ? s->out : s->kval;
      for (int k = 0; k < n; k++) {
        if (ids[k] < 0) continue;
        int v = val_root(rt, ids[k]);
        if (i < f1[v]) f1[v] = i;
        if (i > l1[v]) l1[v] = i;
        if (stg < f2[v]) f2[v] = stg;
        if (stg > l2[v]) l2[v] = stg;
      }
    }
  }
  int n = 0;
  for (int v = 0; v < nv; v++) {
    rt_val *x = &rt->v[v];
    if (x->is_const || x->alias >= 0) continue;
    if (x->def == -1 || x->def == INT_MAX) f1[v] = f2[v] = -1; /* set before the run */
    if (x->last == INT_MAX) {                                   /* read after the run */
      l1[v] = INT_MAX;
      l2[v] = INT_MAX;
    }
    if (f1[v] == INT_MAX) f1[v] = f2[v] = -1;
    if (l1[v] < f1[v]) l1[v] = f1[v];
    if (l2[v] < f2[v]) l2[v] = f2[v];
    order[n++] = v;
  }
  /* outputs of a view read after the run keep their memory alive too */
  for (int v = 0; v < nv; v++)
    if (rt->v[v].alias >= 0 && rt->v[v].last == INT_MAX) {
      int r = val_root(rt, v);
      l1[r] = l2[r] = INT_MAX;
    }
  /* largest first */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && rt->v[order[j]].bytes > rt->v[order[j - 1]].bytes; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  size_t peak = 0;
  int *live = malloc(sizeof(int) * (size_t)(n + 1));
  if (!live) {
    st = ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
    goto done;
  }
  for (int i = 0; i < n && !share; i++) {
    off[order[i]] = peak;
    peak += rsize(rt->v[order[i]].bytes);
  }
  for (int i = 0; i < n && share; i++) {
    int v = order[i];
    size_t bytes = rsize(rt->v[v].bytes);
    /* the placed values it meets, by offset; the lowest gap that fits */
    int nl = 0;
    for (int j = 0; j < i; j++) {
      int w = order[j];
      if (!share || (f1[v] <= l1[w] && f1[w] <= l1[v]) || (f2[v] <= l2[w] && f2[w] <= l2[v])) {
        int k = nl++;
        for (; k > 0 && off[live[k - 1]] > off[w]; k--) live[k] = live[k - 1];
        live[k] = w;
      }
    }
    size_t o = 0;
    for (int k = 0; k < nl; k++) {
      int w = live[k];
      if (off[w] >= o + bytes) break;
      if (off[w] + rsize(rt->v[w].bytes) > o) o = off[w] + rsize(rt->v[w].bytes);
    }
    off[v] = o;
    if (o + bytes > peak) peak = o + bytes;
  }
  free(live);
  /* the inputs' bytes are copied over; the rest starts at zero as before */
  void *block = peak ? ob_mem_alloc_big(peak) : NULL;
  if (peak && !block) {
    st = ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory for %zu bytes of activations", peak);
    goto done;
  }
  if (block) memset(block, 0, peak);
  for (int i = 0; i < ob_graph_input_count(rt->g); i++) {
    int v = val_root(rt, rt->in_val[i]);
    if (!rt->v[v].is_const && rt->v[v].bytes) memcpy((char *)block + off[v], rt->v[v].ptr, rt->v[v].bytes);
  }
  ob_mem_free_big(rt->block);
  rt->block = block;
  rt->block_bytes = peak;
  for (int i = 0; i < n; i++) {
    rt_val *x = &rt->v[order[i]];
    x->offset = off[order[i]];
    x->ptr = (char *)block + off[order[i]];
  }
  for (int v = 0; v < nv; v++)
    if (!rt->v[v].is_const && rt->v[v].alias >= 0) rt->v[v].ptr = (char *)rt->v[rt->v[v].alias].ptr + rt->v[v].alias_off;
  for (int i = 0; i < ns; i++) {
    rt_step *s = &rt->s[i];
    for (int k = 0; k < s->nin; k++) s->pin[k] = s->in[k] >= 0 ? rt->v[s->in[k]].ptr : NULL;
    for (int k = 0; k < s->nout; k++) s->pout[k] = rt->v[s->out[k]].ptr;
    for (int k = 0; k < s->nkargs; k++) s->kbuf[k] = s->kval[k] >= 0 ? rt->v[s->kval[k]].ptr : NULL;
  }
  rt->st.peak_bytes = peak;
done:
  free(f1);
  free(l1);
  free(f2);
  free(l2);
  free(order);
  free(off);
  return st;
}

static ob_status nomem(ob_rt *rt) { return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory"); }

static const char *val_name(const ob_rt *rt, int v) {
  int t = rt->v[v].tensor;
  return t >= 0 ? ob_graph_tensor_name(rt->g, t) : "scratch";
}

/* Where each step runs (see the top); the prologue stage, if a graph
 * input's conversion needs one, is stage -1 here. */
static ob_status assign_steps(ob_rt *rt, const where *node_at, bool subset, where *step_at) {
  int ns = rt->ns;
  for (int i = 0; i < ns; i++) {
    const rt_step *s = &rt->s[i];
    step_at[i] = (where){-2, -1};
    if (s->node >= 0 && node_at[s->node].stage >= 0) step_at[i] = node_at[s->node];
    else if (subset && s->kind != OB_RT_STEP_CONVERT) step_at[i] = (where){-3, -1}; /* not run */
    else if (s->kind != OB_RT_STEP_CONVERT)
      return ob_fail(rt->ctx, OB_ERR_INVALID_ARG, "runtime: node '%s' (%s) is in no stage of the plan",
                     s->node >= 0 ? ob_graph_node_name(rt->g, s->node) : s->name, s->op);
  }
  /* conversions: with their readers when those of the earliest stage share a group */
  bool *by_producer = calloc((size_t)ns + 1, sizeof(bool));
  if (!by_producer) return nomem(rt);
  for (int i = ns - 1; i >= 0; i--) {
    if (step_at[i].stage != -2) continue;
    const rt_step *s = &rt->s[i];
    where best = {INT_MAX, -1};
    bool split = false;
    for (int j = i + 1; j < ns; j++) {
      const rt_step *r = &rt->s[j];
      bool reads = false;
      for (int k = 0; k < r->nin && !reads; k++)
        for (int o = 0; o < s->nout && !reads; o++)
          reads = r->in[k] >= 0 && val_root(rt, r->in[k]) == val_root(rt, s->out[o]);
      if (!reads) continue;
      where w = step_at[j];
      if (w.stage == -2 || w.stage == -3) continue; /* by producer (it follows this one), or not run */
      if (w.stage < best.stage) {
        best = w;
        split = false;
      } else if (w.stage == best.stage && w.group != best.group) {
        split = true;
      }
    }
    if (best.stage != INT_MAX && !split) step_at[i] = best;
    else if (subset) step_at[i] = (where){-3, -1}; /* the last full run left its value */
    else by_producer[i] = true;
  }
  for (int i = 0; i < ns; i++) {
    if (!by_producer[i]) continue;
    const rt_step *s = &rt->s[i];
    int w = s->nin > 0 && s->in[0] >= 0 ? last_writer(rt, s->in[0]) : -1;
    step_at[i] = w >= 0 ? step_at[w] : (where){-1, 0};
  }
  free(by_producer);
  /* every read after the writes of its bytes (an in-place concat's output
   * is written by several steps, one slice each) */
  for (int i = 0; i < ns; i++) {
    const rt_step *s = &rt->s[i];
    for (int k = 0; k < s->nin; k++) {
      if (s->in[k] < 0) continue;
      for (int w = 0; w < ns; w++) {
        if (!step_writes(rt, w, s->in[k]) || w == i || step_at[i].stage == -3 || step_at[w].stage == -3) continue;
        where a = step_at[w], b = step_at[i];
        bool ok = a.stage < b.stage || (a.stage == b.stage && a.group == b.group && w < i);
        if (!ok) {
          const rt_step *ws = &rt->s[w];
          return ob_fail(rt->ctx, OB_ERR_INVALID_ARG,
                         "runtime: stage %d, group %d: '%s' reads '%s', which '%s' writes in stage %d, group %d: the "
                         "plan runs them out of order",
                         b.stage + 1, b.group + 1, s->name, val_name(rt, s->in[k]), ws->name, a.stage + 1,
                         a.group + 1);
        }
      }
    }
  }
  return OB_OK;
}

static void par_release(ob_rt_par *p) {
  if (!p) return;
  for (int s = 0; s < p->nst; s++) {
    for (int g = 0; g < p->st[s].ngroups; g++) {
      free(p->st[s].groups[g].steps);
      free(p->st[s].groups[g].cores);
    }
    free(p->st[s].groups);
  }
  free(p->st);
  for (int i = 0; i < p->npools; i++) free(p->pools[i].cores);
  free(p->pools);
  free(p->team);
  free(p->stamp);
  free((void *)p->done);
  free(p);
}

void ob_rt_par_free(ob_rt_par *p) {
  if (!p) return;
  atomic_store(&p->stop, true);
  atomic_fetch_add(&p->go, 1);
  syscall(SYS_futex, (uint32_t *)&p->go, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  for (int m = 1; m < p->nteam; m++)
    if (p->team[m].started) pthread_join(p->team[m].thread, NULL);
  if (p->nteam > 0) member_pools_free(p, 0);
  par_release(p);
}

static int find_pool(ob_rt_par *p, const int *cores, int n) {
  for (int i = 0; i < p->npools; i++)
    if (p->pools[i].ncores == n && !memcmp(p->pools[i].cores, cores, sizeof(int) * (size_t)n)) return i;
  return -1;
}

static ob_status par_new(ob_rt *rt, int nstages, const ob_rt_stage_plan *stages, bool subset, ob_rt_par **out);

ob_status ob_rt_par_new(ob_rt *rt, int nstages, const ob_rt_stage_plan *stages, ob_rt_par **out) {
  return par_new(rt, nstages, stages, false, out);
}

ob_status ob_rt_par_new_subset(ob_rt *rt, int nstages, const ob_rt_stage_plan *stages, ob_rt_par **out) {
  return par_new(rt, nstages, stages, true, out);
}

static ob_status par_new(ob_rt *rt, int nstages, const ob_rt_stage_plan *stages, bool subset, ob_rt_par **out) {
  OB_ASSERT(rt && out && (nstages == 0 || stages));
  *out = NULL;
  ob_ctx *ctx = rt->ctx;
  if (rt->bl)
    return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                   "runtime: parallel stages run generated kernels (tuned or default), not oneDNN primitives, "
                   "which own their threads");
  int nn = ob_graph_node_count(rt->g), ns = rt->ns;
  where *node_at = malloc(sizeof(where) * (size_t)(nn + 1));
  where *step_at = malloc(sizeof(where) * (size_t)(ns + 1));
  ob_rt_par *p = calloc(1, sizeof *p);
  ob_status st = OB_OK;
  if (!node_at || !step_at || !p) {
    st = nomem(rt);
    goto fail;
  }
  p->rt = rt;
  for (int i = 0; i < nn; i++) node_at[i] = (where){-1, -1};
  if ((st = check_plan(rt, nstages, stages, node_at)) || (st = assign_steps(rt, node_at, subset, step_at))) goto fail;
  bool prologue = false;
  for (int i = 0; i < ns; i++) prologue |= step_at[i].stage == -1;
  if (prologue && nstages == 0) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "runtime: the plan has no stage");
    goto fail;
  }
  /* stages: the prologue first when there is one */
  int shift = prologue ? 1 : 0;
  p->nst = nstages + shift;
  p->st = calloc((size_t)p->nst + 1, sizeof *p->st);
  int maxpools = 1;
  for (int i = 0; i < nstages; i++) maxpools += stages[i].ngroups;
  p->pools = calloc((size_t)maxpools, sizeof *p->pools);
  p->stamp = calloc((size_t)p->nst + 1, sizeof *p->stamp);
  p->done = calloc((size_t)p->nst + 1, sizeof *p->done);
  if (!p->st || !p->pools || !p->stamp || !p->done) {
    st = nomem(rt);
    goto fail;
  }
  for (int s = 0; s < p->nst; s++) {
    const ob_rt_stage_plan *sp = s < shift ? NULL : &stages[s - shift];
    int ng = sp ? sp->ngroups : 1;
    par_stage *ps = &p->st[s];
    ps->groups = calloc((size_t)ng, sizeof *ps->groups);
    if (!ps->groups) {
      st = nomem(rt);
      goto fail;
    }
    ps->ngroups = ng;
    for (int g = 0; g < ng; g++) {
      const ob_rt_group_plan *gp = sp ? &sp->groups[g] : &stages[0].groups[0];
      par_group *pg = &ps->groups[g];
      pg->ncores = gp->ncores;
      pg->cores = malloc(sizeof(int) * (size_t)gp->ncores);
      pg->steps = malloc(sizeof(int) * (size_t)(ns + 1));
      if (!pg->cores || !pg->steps) {
        st = nomem(rt);
        goto fail;
      }
      memcpy(pg->cores, gp->cores, sizeof(int) * (size_t)gp->ncores);
      for (int i = 0; i < ns; i++)
        if (step_at[i].stage + shift == s && (sp ? step_at[i].group == g : true)) pg->steps[pg->nsteps++] = i;
      /* its pool, and the team member that leads it */
      int pi = find_pool(p, pg->cores, pg->ncores);
      if (pi < 0) {
        pi = p->npools++;
        par_pool *pl = &p->pools[pi];
        pl->ncores = pg->ncores;
        if (!(pl->cores = malloc(sizeof(int) * (size_t)pg->ncores))) {
          st = nomem(rt);
          goto fail;
        }
        memcpy(pl->cores, pg->cores, sizeof(int) * (size_t)pg->ncores);
      }
      pg->pool = pi;
    }
  }
  /* the team: one member per core used, the smallest first (the caller) */
  int team[CPU_SETSIZE];
  int nteam = 0;
  for (int i = 0; i < p->npools; i++)
    for (int c = 0; c < p->pools[i].ncores; c++) {
      int core = p->pools[i].cores[c], k = 0;
      while (k < nteam && team[k] != core) k++;
      if (k == nteam) team[nteam++] = core;
    }
  for (int i = 1; i < nteam; i++)
    for (int j = i; j > 0 && team[j] < team[j - 1]; j--) {
      int t = team[j];
      team[j] = team[j - 1];
      team[j - 1] = t;
    }
  p->team = calloc((size_t)nteam + 1, sizeof *p->team);
  if (!p->team) {
    st = nomem(rt);
    goto fail;
  }
  for (int i = 0; i < p->npools; i++) {
    int k = 0;
    while (team[k] != p->pools[i].cores[0]) k++;
    p->pools[i].member = k;
  }
  /* a subset runs on memory shared by nothing, placed once */
  if (!(subset && rt->par_unshared) && (st = replan_memory(rt, step_at, !subset))) goto fail;
  rt->par_unshared = subset;
  p->nteam = nteam;
  atomic_store(&p->fail_step, -1);
  for (int m = 0; m < nteam; m++) p->team[m] = (par_member){.p = p, .index = m, .core = team[m]};
  if (nteam > 0 && (st = member_pools(ctx, p, 0))) goto fail_team;
  for (int m = 1; m < nteam; m++) {
    int rc = pthread_create(&p->team[m].thread, NULL, member_main, &p->team[m]);
    if (rc) {
      st = ob_fail(ctx, OB_ERR_SYSTEM, "runtime: cannot start the team thread of core %d: %s", team[m], strerror(rc));
      goto fail_team;
    }
    p->team[m].started = true;
  }
  while (atomic_load(&p->ready) < nteam - 1) sched_yield();
  if (atomic_load(&p->setup_failed)) {
    st = ob_fail(ctx, OB_ERR_SYSTEM, "runtime: %s", p->setup_msg);
    goto fail_team;
  }
  free(node_at);
  free(step_at);
  *out = p;
  return OB_OK;
fail_team:
  free(node_at);
  free(step_at);
  ob_rt_par_free(p);
  return st;
fail:
  free(node_at);
  free(step_at);
  par_release(p);
  return st;
}

/* One run; 0 or the failing step's status (*failed: its index). */
static int par_run_raw(ob_rt_par *p, int *failed) {
  ob_rt *rt = p->rt;
  for (int i = 0; i < p->npools; i++) {
    p->pools[i].view = *rt;
    p->pools[i].view.pool = p->pools[i].pool;
  }
  atomic_store(&p->fail_step, -1);
  atomic_store(&p->fail_rc, 0);
  for (int s = 0; s < p->nst; s++) atomic_store_explicit(&p->done[s], 0, memory_order_relaxed);
  atomic_fetch_add_explicit(&p->go, 1, memory_order_release);
  if (p->nteam > 1) syscall(SYS_futex, (uint32_t *)&p->go, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  if (p->nteam > 0) member_run(p, &p->team[0]);
  int f = atomic_load(&p->fail_step);
  if (failed) *failed = f;
  if (f < 0) return 0;
  int rc = atomic_load(&p->fail_rc);
  return rc ? rc : 1;
}

static ob_status named(ob_rt_par *p, int rc, int failed) {
  if (!rc) return OB_OK;
  const rt_step *s = &p->rt->s[failed];
  return ob_fail(p->rt->ctx, OB_ERR_RUNTIME, "runtime: step '%s' (%s) failed (status %d)", s->name, s->op, rc);
}

ob_status ob_rt_par_run(ob_rt_par *p) {
  int failed = -1;
  int rc = par_run_raw(p, &failed);
  return named(p, rc, failed);
}

static int call_run(void *user) {
  int rc = par_run_raw(user, NULL);
  return rc == OB_TIME_DEADLINE ? -1 : rc;
}

ob_status ob_rt_par_time(ob_rt_par *p, const ob_timing_opts *o, ob_timing *out) {
  memset(out, 0, sizeof *out);
  ob_rt *rt = p->rt;
  ob_timing_opts t = ob_timing_resolve(o, rt->target);
  if (t.timer_overhead_s <= 0) t.timer_overhead_s = ob_timer_overhead();
  ob_status st = ob_rt_par_run(p); /* the discarded warm-up names a failing step */
  if (st) return st;
  int rc = ob_time_loop(&t, ob_now_s() + t.timeout_s, call_run, NULL, p, out);
  if (rc == OB_TIME_DEADLINE)
    return ob_fail(rt->ctx, OB_ERR_TIMEOUT, "runtime: timing the model by stages ran past %g s", t.timeout_s);
  if (rc) {
    int failed = -1;
    rc = par_run_raw(p, &failed);
    if (rc) return named(p, rc, failed);
    return ob_fail(rt->ctx, OB_ERR_RUNTIME, "runtime: a step failed while timing by stages (status %d)", rc);
  }
  return OB_OK;
}

int ob_rt_par_stage_count(const ob_rt_par *p) { return p->nst; }

int ob_rt_par_group_steps(const ob_rt_par *p, int stage, int group, const int **steps) {
  const par_group *g = &p->st[stage].groups[group];
  *steps = g->steps;
  return g->nsteps;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

ob_status ob_rt_par_profile(ob_rt_par *p, int runs, double *stage_s) {
  if (runs < 1) runs = 1;
  double *t = malloc(sizeof(double) * (size_t)runs * (size_t)(p->nst + 1));
  if (!t) return nomem(p->rt);
  ob_status st = ob_rt_par_run(p);
  p->profiling = true;
  for (int r = 0; r < runs && !st; r++) {
    double t0 = ob_now_s();
    int failed = -1;
    int rc = par_run_raw(p, &failed);
    if (rc) st = named(p, rc, failed);
    for (int s = 0; s < p->nst && !st; s++) t[(size_t)s * (size_t)runs + (size_t)r] = p->stamp[s] - (s ? p->stamp[s - 1] : t0);
  }
  p->profiling = false;
  if (!st)
    for (int s = 0; s < p->nst; s++) {
      double *x = t + (size_t)s * (size_t)runs;
      qsort(x, (size_t)runs, sizeof *x, cmp_d);
      stage_s[s] = x[runs / 2];
    }
  free(t);
  return st;
}
