/* pbqp.h: the partitioned boolean quadratic problem, as TVM's graph tuner
 * and LLVM's register allocator solve it. Each node i picks one of its n_i
 * choices at cost c_i[x]; each edge (i, j) adds M_ij[x][y] for the pair of
 * picks; the solver minimises the sum. Reductions of Scholz and Eckstein:
 * a node of degree 0 or 1 folds into its neighbour (R0, RI) and one of
 * degree 2 into an edge between its neighbours (RII), all without loss, so
 * a graph they empty (chains, trees, series-parallel graphs: a ResNet or a
 * MobileNet with its residuals) is solved exactly; a node of higher degree
 * left over is fixed at its locally best choice (RN, a heuristic) and the
 * solver says how many it fixed so. Self-contained (libc only): the tests
 * compile it beside a brute force. */
#ifndef OB_RUNTIME_PBQP_H
#define OB_RUNTIME_PBQP_H

#include <stdbool.h>

typedef struct rt_pbqp rt_pbqp;

/* A problem of n nodes without choices yet; NULL when out of memory. */
rt_pbqp *rt_pbqp_new(int n);
void rt_pbqp_free(rt_pbqp *p); /* accepts NULL */
/* Node i's nchoices costs (copied); false when out of memory or set before. */
bool rt_pbqp_set_node(rt_pbqp *p, int i, int nchoices, const double *cost);
/* Adds m (n_i x n_j, row-major: m[x * n_j + y], copied) to edge (i, j),
 * made on first use; both nodes set, i != j. False when out of memory. */
bool rt_pbqp_add_edge(rt_pbqp *p, int i, int j, const double *m);
/* The picks (pick[i] in [0, n_i)); *nheur gets the number of nodes fixed
 * by the heuristic (0: the picks are an optimum). Ties go to the lower
 * choice. False when out of memory (pick untouched) or a node is unset. */
bool rt_pbqp_solve(const rt_pbqp *p, int *pick, int *nheur);
/* The problem's cost of picks. */
double rt_pbqp_cost(const rt_pbqp *p, const int *pick);

#endif
