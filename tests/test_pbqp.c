/* test_pbqp.c: the runtime's PBQP solver (src/runtime/pbqp.c, compiled
 * in here: it is internal to the library) against a brute force on random
 * problems small enough to enumerate, against a dynamic program on long
 * chains, and on the layout selection's trap: a chain whose cheapest plan
 * changes two nodes at once, where changing either alone only moves a
 * conversion (the iterated conditional modes it replaces stay there). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/pbqp.h"

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 16) & 0x7fff;
}

/* Least cost over every assignment (n nodes, choices nc). */
static double brute(const rt_pbqp *p, int n, const int *nc, int *best) {
  int pick[16] = {0};
  double lo = INFINITY;
  for (;;) {
    double c = rt_pbqp_cost(p, pick);
    if (c < lo) {
      lo = c;
      memcpy(best, pick, sizeof(int) * (size_t)n);
    }
    int i = 0;
    while (i < n && ++pick[i] == nc[i]) pick[i++] = 0;
    if (i == n) break;
  }
  return lo;
}

/* Random problems: 1-8 nodes of 1-4 choices, edges with probability 1/2
 * (some graphs need the heuristic, most do not), costs small integers
 * (ties) or reals. Without the heuristic the picks are optimal; with it
 * they cost no less than the optimum, and the cost reported is theirs. */
static void test_random(void) {
  unsigned s = 12345;
  int exact = 0, heur = 0, heur_opt = 0;
  for (int iter = 0; iter < 3000; iter++) {
    int n = 1 + (int)(rnd(&s) % 8), nc[16];
    bool ints = rnd(&s) % 2;
    rt_pbqp *p = rt_pbqp_new(n);
    CHECK(p != NULL);
    if (!p) return;
    for (int i = 0; i < n; i++) {
      nc[i] = 1 + (int)(rnd(&s) % 4);
      double c[4];
      for (int x = 0; x < nc[i]; x++) c[x] = ints ? (double)(rnd(&s) % 5) : rnd(&s) / 3276.7;
      CHECK(rt_pbqp_set_node(p, i, nc[i], c));
    }
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++) {
        if (rnd(&s) % 2) continue;
        double m[16];
        for (int k = 0; k < nc[i] * nc[j]; k++) m[k] = ints ? (double)(rnd(&s) % 7) : rnd(&s) / 3276.7;
        CHECK(rt_pbqp_add_edge(p, i, j, m));
        if (rnd(&s) % 4 == 0) CHECK(rt_pbqp_add_edge(p, j, i, (double[16]){0})); /* merged, the other way */
      }
    int pick[16], best[16], nh = -1;
    CHECK(rt_pbqp_solve(p, pick, &nh));
    double opt = brute(p, n, nc, best), got = rt_pbqp_cost(p, pick);
    bool in = true;
    for (int i = 0; i < n; i++) in &= pick[i] >= 0 && pick[i] < nc[i];
    CHECK_MSG(in, "random #%d: a pick out of range", iter);
    if (nh == 0) {
      CHECK_MSG(fabs(got - opt) < 1e-9, "random #%d (%d nodes, exact): cost %.6f, optimum %.6f", iter, n, got, opt);
      exact++;
    } else {
      CHECK_MSG(got >= opt - 1e-9, "random #%d: cost %.6f below the optimum %.6f", iter, got, opt);
      heur++;
      heur_opt += fabs(got - opt) < 1e-9;
    }
    rt_pbqp_free(p);
  }
  /* both paths were taken */
  CHECK_MSG(exact > 1000 && heur > 50, "random: %d exact, %d with the heuristic", exact, heur);
  printf("random problems: %d solved by reductions alone (all optimal), %d with the heuristic (%d of them optimal)\n",
         exact, heur, heur_opt);
}

/* A chain of 300 nodes of 12 choices, with a second edge to the node two
 * ahead (a residual): reductions solve it exactly; checked against a
 * dynamic program over the pairs of consecutive picks. */
static void test_chain(void) {
  enum { N = 300, C = 12 };
  unsigned s = 777;
  static double cost[N][C], m1[N][C * C], m2[N][C * C];
  rt_pbqp *p = rt_pbqp_new(N);
  CHECK(p != NULL);
  if (!p) return;
  for (int i = 0; i < N; i++) {
    for (int x = 0; x < C; x++) cost[i][x] = rnd(&s) / 327.67;
    CHECK(rt_pbqp_set_node(p, i, C, cost[i]));
  }
  for (int i = 0; i + 1 < N; i++) {
    for (int k = 0; k < C * C; k++) m1[i][k] = (k / C == k % C) ? 0 : rnd(&s) / 655.34;
    CHECK(rt_pbqp_add_edge(p, i, i + 1, m1[i]));
  }
  for (int i = 0; i + 2 < N; i++) {
    for (int k = 0; k < C * C; k++) m2[i][k] = (k / C == k % C) ? 0 : rnd(&s) / 1310.68;
    CHECK(rt_pbqp_add_edge(p, i, i + 2, m2[i]));
  }
  /* DP state (pick of i-1, pick of i) */
  static double f[C][C], g[C][C];
  for (int a = 0; a < C; a++)
    for (int b = 0; b < C; b++) f[a][b] = cost[0][a] + cost[1][b] + m1[0][a * C + b];
  for (int i = 2; i < N; i++) {
    for (int b = 0; b < C; b++)
      for (int c = 0; c < C; c++) {
        double lo = INFINITY;
        for (int a = 0; a < C; a++) {
          double v = f[a][b] + m2[i - 2][a * C + c];
          if (v < lo) lo = v;
        }
        g[b][c] = lo + cost[i][c] + m1[i - 1][b * C + c];
      }
    memcpy(f, g, sizeof f);
  }
  double opt = INFINITY;
  for (int a = 0; a < C; a++)
    for (int b = 0; b < C; b++)
      if (f[a][b] < opt) opt = f[a][b];
  static int pick[N];
  int nh = -1;
  CHECK(rt_pbqp_solve(p, pick, &nh));
  double got = rt_pbqp_cost(p, pick);
  CHECK_MSG(nh == 0 && fabs(got - opt) < 1e-6 * opt, "chain: cost %.6f, optimum %.6f, %d heuristic", got, opt, nh);
  rt_pbqp_free(p);
}

/* The layout trap: nodes a -> b -> c; a writes block P (time 1.0) or Q
 * (1.1); b reads and writes P (1.0) or Q (1.1); c reads only Q. A
 * conversion costs 5. Starting from the fastest picks (a P, b P: one
 * conversion before c), changing a alone or b alone moves the conversion
 * and adds 0.1; the optimum changes both (3.2 against 8.0). */
static void test_trap(void) {
  rt_pbqp *p = rt_pbqp_new(3);
  CHECK(p != NULL);
  if (!p) return;
  CHECK(rt_pbqp_set_node(p, 0, 2, (double[]){1.0, 1.1}));
  CHECK(rt_pbqp_set_node(p, 1, 2, (double[]){1.0, 1.1}));
  CHECK(rt_pbqp_set_node(p, 2, 1, (double[]){1.0}));
  CHECK(rt_pbqp_add_edge(p, 0, 1, (double[]){0, 5, 5, 0}));
  CHECK(rt_pbqp_add_edge(p, 1, 2, (double[]){5, 0}));
  int pick[3], nh = -1;
  CHECK(rt_pbqp_solve(p, pick, &nh));
  CHECK_MSG(pick[0] == 1 && pick[1] == 1 && pick[2] == 0 && nh == 0, "trap: picks %d %d %d", pick[0], pick[1],
            pick[2]);
  CHECK(fabs(rt_pbqp_cost(p, pick) - 3.2) < 1e-12);
  CHECK(fabs(rt_pbqp_cost(p, (int[]){0, 0, 0}) - 8.0) < 1e-12);
  rt_pbqp_free(p);
}

/* Misuse: an unset node, a self edge, a node set twice. */
static void test_misuse(void) {
  rt_pbqp *p = rt_pbqp_new(2);
  CHECK(p != NULL);
  if (!p) return;
  int pick[2];
  CHECK(!rt_pbqp_solve(p, pick, NULL));
  CHECK(rt_pbqp_set_node(p, 0, 1, (double[]){0}));
  CHECK(!rt_pbqp_set_node(p, 0, 1, (double[]){0}));
  CHECK(!rt_pbqp_add_edge(p, 0, 0, (double[]){0}));
  CHECK(!rt_pbqp_add_edge(p, 0, 1, (double[]){0}));
  CHECK(rt_pbqp_set_node(p, 1, 2, (double[]){3, 2}));
  CHECK(rt_pbqp_solve(p, pick, NULL) && pick[0] == 0 && pick[1] == 1);
  rt_pbqp_free(p);
  rt_pbqp_free(NULL);
}

int main(void) {
  test_random();
  test_chain();
  test_trap();
  test_misuse();
  CHECK_DONE();
}
