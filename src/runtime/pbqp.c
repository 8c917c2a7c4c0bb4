/* pbqp.c: the PBQP solver of pbqp.h. The problem keeps what it was given;
 * rt_pbqp_solve reduces a copy (vectors, edge matrices, adjacency lists),
 * records each removed node on a stack and picks the choices back from the
 * stack's top, each node against the picks of the neighbours it had when
 * it was removed (those were removed after it, so they are picked first). */
#include "runtime/pbqp.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

typedef struct pq_edge {
  int a, b;  /* nodes; m is n_a x n_b */
  double *m;
  bool dead;
} pq_edge;

struct rt_pbqp {
  int n;
  int *nc;      /* choices per node (0: unset) */
  double **c;   /* cost vectors */
  pq_edge *e;
  int ne, cap;
};

rt_pbqp *rt_pbqp_new(int n) {
  rt_pbqp *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = n;
  p->nc = calloc((size_t)n + 1, sizeof *p->nc);
  p->c = calloc((size_t)n + 1, sizeof *p->c);
  if (!p->nc || !p->c) {
    rt_pbqp_free(p);
    return NULL;
  }
  return p;
}

void rt_pbqp_free(rt_pbqp *p) {
  if (!p) return;
  for (int i = 0; p->c && i < p->n; i++) free(p->c[i]);
  for (int i = 0; i < p->ne; i++) free(p->e[i].m);
  free(p->nc);
  free(p->c);
  free(p->e);
  free(p);
}

bool rt_pbqp_set_node(rt_pbqp *p, int i, int nchoices, const double *cost) {
  if (i < 0 || i >= p->n || nchoices < 1 || p->nc[i]) return false;
  p->c[i] = malloc(sizeof(double) * (size_t)nchoices);
  if (!p->c[i]) return false;
  memcpy(p->c[i], cost, sizeof(double) * (size_t)nchoices);
  p->nc[i] = nchoices;
  return true;
}

/* Edge (a, b) of an edge list, in either direction; -1 if none. */
static int find_edge(const pq_edge *e, int ne, int a, int b) {
  for (int k = 0; k < ne; k++)
    if (!e[k].dead && ((e[k].a == a && e[k].b == b) || (e[k].a == b && e[k].b == a))) return k;
  return -1;
}

/* Adds m (n_i x n_j) into edge k, whose direction may be (j, i). */
static void add_into(pq_edge *ek, const int *nc, int i, int j, const double *m) {
  int ni = nc[i], nj = nc[j];
  for (int x = 0; x < ni; x++)
    for (int y = 0; y < nj; y++) {
      if (ek->a == i) ek->m[x * nj + y] += m[x * nj + y];
      else ek->m[y * ni + x] += m[x * nj + y];
    }
}

static bool grow_edges(pq_edge **e, int *cap, int need) {
  if (need <= *cap) return true;
  int nc = *cap ? 2 * *cap : 16;
  while (nc < need) nc *= 2;
  pq_edge *ne = realloc(*e, sizeof *ne * (size_t)nc);
  if (!ne) return false;
  *e = ne;
  *cap = nc;
  return true;
}

bool rt_pbqp_add_edge(rt_pbqp *p, int i, int j, const double *m) {
  if (i < 0 || j < 0 || i >= p->n || j >= p->n || i == j || !p->nc[i] || !p->nc[j]) return false;
  int k = find_edge(p->e, p->ne, i, j);
  if (k < 0) {
    if (!grow_edges(&p->e, &p->cap, p->ne + 1)) return false;
    double *mm = calloc((size_t)p->nc[i] * (size_t)p->nc[j], sizeof *mm);
    if (!mm) return false;
    k = p->ne++;
    p->e[k] = (pq_edge){i, j, mm, false};
  }
  add_into(&p->e[k], p->nc, i, j, m);
  return true;
}

double rt_pbqp_cost(const rt_pbqp *p, const int *pick) {
  double s = 0;
  for (int i = 0; i < p->n; i++)
    if (p->nc[i]) s += p->c[i][pick[i]];
  for (int k = 0; k < p->ne; k++) s += p->e[k].m[pick[p->e[k].a] * p->nc[p->e[k].b] + pick[p->e[k].b]];
  return s;
}

/* ---- solving ------------------------------------------------------------------------------ */

enum { PQ_R0, PQ_R1, PQ_R2, PQ_RN };

typedef struct pq_step {
  int node, kind, e1, e2, fixed;
} pq_step;

typedef struct pq_work {
  int n;
  const int *nc;
  double **c;
  pq_edge *e;
  int ne, cap;
  int **adj, *nadj, *capadj; /* edge ids per node, dead ones included */
  int *deg;
  bool *gone;
} pq_work;

/* Edge k's cost when node i (one of its ends) takes x and the other y. */
static double em(const pq_work *w, int k, int i, int x, int y) {
  const pq_edge *e = &w->e[k];
  return e->a == i ? e->m[x * w->nc[e->b] + y] : e->m[y * w->nc[e->b] + x];
}

static int other(const pq_work *w, int k, int i) { return w->e[k].a == i ? w->e[k].b : w->e[k].a; }

static bool adj_push(pq_work *w, int i, int k) {
  if (w->nadj[i] == w->capadj[i]) {
    int nc = w->capadj[i] ? 2 * w->capadj[i] : 4;
    int *na = realloc(w->adj[i], sizeof *na * (size_t)nc);
    if (!na) return false;
    w->adj[i] = na;
    w->capadj[i] = nc;
  }
  w->adj[i][w->nadj[i]++] = k;
  return true;
}

/* The first live edges of node i (up to 2, into ks). */
static void live_edges(const pq_work *w, int i, int *ks, int want) {
  int got = 0;
  for (int t = 0; t < w->nadj[i] && got < want; t++)
    if (!w->e[w->adj[i][t]].dead) ks[got++] = w->adj[i][t];
}

static void kill_edge(pq_work *w, int k) {
  w->e[k].dead = true;
  w->deg[w->e[k].a]--;
  w->deg[w->e[k].b]--;
}

static void work_free(pq_work *w) {
  for (int i = 0; w->c && i < w->n; i++) free(w->c[i]);
  for (int k = 0; w->e && k < w->ne; k++) free(w->e[k].m);
  for (int i = 0; w->adj && i < w->n; i++) free(w->adj[i]);
  free(w->c);
  free(w->e);
  free(w->adj);
  free(w->nadj);
  free(w->capadj);
  free(w->deg);
  free(w->gone);
}

static bool work_init(pq_work *w, const rt_pbqp *p) {
  memset(w, 0, sizeof *w);
  int n = p->n;
  w->n = n;
  w->nc = p->nc;
  w->c = calloc((size_t)n + 1, sizeof *w->c);
  w->adj = calloc((size_t)n + 1, sizeof *w->adj);
  w->nadj = calloc((size_t)n + 1, sizeof *w->nadj);
  w->capadj = calloc((size_t)n + 1, sizeof *w->capadj);
  w->deg = calloc((size_t)n + 1, sizeof *w->deg);
  w->gone = calloc((size_t)n + 1, sizeof *w->gone);
  if (!w->c || !w->adj || !w->nadj || !w->capadj || !w->deg || !w->gone || !grow_edges(&w->e, &w->cap, p->ne + 1))
    return false;
  for (int i = 0; i < n; i++) {
    if (!(w->c[i] = malloc(sizeof(double) * (size_t)p->nc[i]))) return false;
    memcpy(w->c[i], p->c[i], sizeof(double) * (size_t)p->nc[i]);
  }
  for (int k = 0; k < p->ne; k++) {
    size_t sz = (size_t)p->nc[p->e[k].a] * (size_t)p->nc[p->e[k].b];
    double *m = malloc(sizeof *m * sz);
    if (!m) return false;
    memcpy(m, p->e[k].m, sizeof *m * sz);
    w->e[w->ne++] = (pq_edge){p->e[k].a, p->e[k].b, m, false};
    w->deg[p->e[k].a]++;
    w->deg[p->e[k].b]++;
    if (!adj_push(w, p->e[k].a, k) || !adj_push(w, p->e[k].b, k)) return false;
  }
  return true;
}

/* RI: node i's one edge k folds into its neighbour's vector. */
static void reduce1(pq_work *w, int i, int k) {
  int j = other(w, k, i);
  for (int y = 0; y < w->nc[j]; y++) {
    double best = DBL_MAX;
    for (int x = 0; x < w->nc[i]; x++) {
      double v = w->c[i][x] + em(w, k, i, x, y);
      if (v < best) best = v;
    }
    w->c[j][y] += best;
  }
  kill_edge(w, k);
}

/* RII: node i's two edges fold into one between its neighbours. */
static bool reduce2(pq_work *w, int i, int k1, int k2) {
  int j = other(w, k1, i), l = other(w, k2, i), nj = w->nc[j], nl = w->nc[l];
  double *d = malloc(sizeof *d * (size_t)nj * (size_t)nl);
  if (!d) return false;
  for (int y = 0; y < nj; y++)
    for (int z = 0; z < nl; z++) {
      double best = DBL_MAX;
      for (int x = 0; x < w->nc[i]; x++) {
        double v = w->c[i][x] + em(w, k1, i, x, y) + em(w, k2, i, x, z);
        if (v < best) best = v;
      }
      d[y * nl + z] = best;
    }
  kill_edge(w, k1);
  kill_edge(w, k2);
  int k = -1;
  for (int t = 0; t < w->nadj[j] && k < 0; t++) {
    int q = w->adj[j][t];
    if (!w->e[q].dead && other(w, q, j) == l) k = q;
  }
  if (k < 0) {
    double *z = calloc((size_t)nj * (size_t)nl, sizeof *z);
    if (!z || !grow_edges(&w->e, &w->cap, w->ne + 1)) {
      free(z);
      free(d);
      return false;
    }
    k = w->ne++;
    w->e[k] = (pq_edge){j, l, z, false};
    w->deg[j]++;
    w->deg[l]++;
    if (!adj_push(w, j, k) || !adj_push(w, l, k)) {
      free(d);
      return false;
    }
  }
  add_into(&w->e[k], w->nc, j, l, d);
  free(d);
  return true;
}

/* RN: node i takes the choice of least own cost plus, per neighbour, the
 * least edge-and-neighbour cost; the neighbours' vectors take the edges'
 * rows of that choice. */
static int reduce_n(pq_work *w, int i) {
  int bx = 0;
  double best = DBL_MAX;
  for (int x = 0; x < w->nc[i]; x++) {
    double v = w->c[i][x];
    for (int t = 0; t < w->nadj[i]; t++) {
      int k = w->adj[i][t];
      if (w->e[k].dead) continue;
      int j = other(w, k, i);
      double m = DBL_MAX;
      for (int y = 0; y < w->nc[j]; y++) {
        double u = em(w, k, i, x, y) + w->c[j][y];
        if (u < m) m = u;
      }
      v += m;
    }
    if (v < best) {
      best = v;
      bx = x;
    }
  }
  for (int t = 0; t < w->nadj[i]; t++) {
    int k = w->adj[i][t];
    if (w->e[k].dead) continue;
    int j = other(w, k, i);
    for (int y = 0; y < w->nc[j]; y++) w->c[j][y] += em(w, k, i, bx, y);
    kill_edge(w, k);
  }
  return bx;
}

bool rt_pbqp_solve(const rt_pbqp *p, int *pick, int *nheur) {
  for (int i = 0; i < p->n; i++)
    if (!p->nc[i]) return false;
  pq_work w;
  pq_step *st = malloc(sizeof *st * ((size_t)p->n + 1));
  int *out = malloc(sizeof *out * ((size_t)p->n + 1));
  bool ok = st && out && work_init(&w, p);
  int ns = 0, nh = 0;
  for (int left = p->n; ok && left > 0; left--) {
    /* the lowest node of least degree (R0, RI, RII), else the highest degree (RN) */
    int i = -1, maxi = -1;
    for (int d = 0; d <= 2 && i < 0; d++)
      for (int q = 0; q < p->n && i < 0; q++)
        if (!w.gone[q] && w.deg[q] == d) i = q;
    if (i < 0)
      for (int q = 0; q < p->n; q++)
        if (!w.gone[q] && (maxi < 0 || w.deg[q] > w.deg[maxi])) maxi = q;
    pq_step s = {.node = i >= 0 ? i : maxi, .e1 = -1, .e2 = -1};
    int ks[2] = {-1, -1};
    if (i >= 0 && w.deg[i] == 0) {
      s.kind = PQ_R0;
    } else if (i >= 0 && w.deg[i] == 1) {
      live_edges(&w, i, ks, 1);
      s.kind = PQ_R1;
      s.e1 = ks[0];
      reduce1(&w, i, ks[0]);
    } else if (i >= 0) {
      live_edges(&w, i, ks, 2);
      s.kind = PQ_R2;
      s.e1 = ks[0];
      s.e2 = ks[1];
      ok = reduce2(&w, i, ks[0], ks[1]);
    } else {
      s.kind = PQ_RN;
      s.fixed = reduce_n(&w, maxi);
      nh++;
    }
    w.gone[s.node] = true;
    st[ns++] = s;
  }
  /* back from the last removed: each node against the picks of the
   * neighbours it folded into */
  for (int t = ns - 1; ok && t >= 0; t--) {
    const pq_step *s = &st[t];
    int i = s->node;
    if (s->kind == PQ_RN) {
      out[i] = s->fixed;
      continue;
    }
    int bx = 0;
    double best = DBL_MAX;
    for (int x = 0; x < w.nc[i]; x++) {
      double v = w.c[i][x];
      if (s->e1 >= 0) v += em(&w, s->e1, i, x, out[other(&w, s->e1, i)]);
      if (s->e2 >= 0) v += em(&w, s->e2, i, x, out[other(&w, s->e2, i)]);
      if (v < best) {
        best = v;
        bx = x;
      }
    }
    out[i] = bx;
  }
  if (ok) {
    memcpy(pick, out, sizeof *pick * (size_t)p->n);
    if (nheur) *nheur = nh;
  }
  if (st && out) work_free(&w);
  free(st);
  free(out);
  return ok;
}
