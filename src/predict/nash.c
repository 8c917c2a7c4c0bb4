/* nash.c: placing operators that are ready at once as a game. Each player
 * picks a core count; its cost is its own latency given everyone's picks
 * (cores shared by several players are time-sliced, and the interference
 * factors say how much a neighbour slows it beyond that). Selfish players
 * settle in a pure Nash equilibrium when best-response dynamics converge;
 * the scheduler wants the least makespan (the social optimum); their
 * ratio over the worst equilibrium is the price of anarchy. */
#include <math.h>
#include <string.h>

#include "opbench/predict.h"

static int choices(const ob_nash_game *g, int *out) {
  if (g->nchoices <= 0) {
    for (int c = 1; c <= g->cores; c++) out[c - 1] = c;
    return g->cores;
  }
  for (int i = 0; i < g->nchoices; i++) out[i] = g->choices[i];
  return g->nchoices;
}

void ob_nash_costs(const ob_nash_game *g, const int *k, double *cost) {
  OB_ASSERT(g->players >= 1 && g->players <= OB_NASH_MAX_PLAYERS && g->cores >= 1 &&
            g->cores <= OB_NASH_MAX_CORES);
  int load[OB_NASH_MAX_CORES] = {0};
  int first[OB_NASH_MAX_PLAYERS];
  int at = 0;
  for (int i = 0; i < g->players; i++) {
    OB_ASSERT(k[i] >= 1 && k[i] <= g->cores);
    first[i] = at;
    for (int c = 0; c < k[i]; c++) load[(at + c) % g->cores]++;
    at = (at + k[i]) % g->cores;
  }
  for (int i = 0; i < g->players; i++) {
    int most = 1;
    bool on[OB_NASH_MAX_CORES] = {0};
    for (int c = 0; c < k[i]; c++) {
      int core = (first[i] + c) % g->cores;
      on[core] = true;
      if (load[core] > most) most = load[core];
    }
    double f = 1;
    bool first_other = true;
    for (int j = 0; j < g->players; j++) {
      if (j == i) continue;
      int shared = 0;
      bool seen[OB_NASH_MAX_CORES] = {0};
      for (int c = 0; c < k[j]; c++) {
        int core = (first[j] + c) % g->cores;
        if (on[core] && !seen[core]) shared++;
        seen[core] = true;
      }
      double v;
      if (g->slowdown) {
        /* the measured quantity itself: the largest over the others, which
         * may be below 1 */
        v = g->slowdown(g->user, i, j, k[i], k[j], shared);
        if (!(v >= 0)) v = 1;
        if (first_other || v > f) f = v;
        first_other = false;
        continue;
      }
      v = shared ? g->full[i][j] : g->stream[i][j];
      if (v > f) f = v;
    }
    cost[i] = g->alone[(size_t)i * (size_t)g->cores + (size_t)(k[i] - 1)] * (g->slowdown ? 1 : most) * f;
  }
}

double ob_nash_makespan(const ob_nash_game *g, const int *k) {
  double c[OB_NASH_MAX_PLAYERS], m = 0;
  ob_nash_costs(g, k, c);
  for (int i = 0; i < g->players; i++)
    if (c[i] > m) m = c[i];
  return m;
}

/* Player i's best choice given the others; *improves says whether it beats
 * the current one by more than a rounding error. */
static int best_reply(const ob_nash_game *g, const int *k, int i, bool *improves) {
  int ch[OB_NASH_MAX_CORES], nc = choices(g, ch);
  int kk[OB_NASH_MAX_PLAYERS];
  double c[OB_NASH_MAX_PLAYERS];
  memcpy(kk, k, sizeof(int) * (size_t)g->players);
  ob_nash_costs(g, kk, c);
  double cur = c[i], best = cur;
  int pick = k[i];
  for (int a = 0; a < nc; a++) {
    kk[i] = ch[a];
    ob_nash_costs(g, kk, c);
    if (c[i] < best * (1 - 1e-9)) {
      best = c[i];
      pick = ch[a];
    }
  }
  *improves = pick != k[i];
  return pick;
}

bool ob_nash_is_equilibrium(const ob_nash_game *g, const int *k) {
  for (int i = 0; i < g->players; i++) {
    bool imp;
    best_reply(g, k, i, &imp);
    if (imp) return false;
  }
  return true;
}

bool ob_nash_best_response(const ob_nash_game *g, int *k, int max_rounds, int *rounds) {
  for (int r = 0; r < max_rounds; r++) {
    bool moved = false;
    for (int i = 0; i < g->players; i++) {
      bool imp;
      int pick = best_reply(g, k, i, &imp);
      if (imp) {
        k[i] = pick;
        moved = true;
      }
    }
    if (rounds) *rounds = r + 1;
    if (!moved) return true;
  }
  return false;
}

ob_status ob_nash_exhaustive(ob_ctx *ctx, const ob_nash_game *g, int64_t max_profiles,
                             ob_nash_summary *out) {
  memset(out, 0, sizeof *out);
  out->opt_makespan = INFINITY;
  out->worst_eq_makespan = out->best_eq_makespan = NAN;
  out->price_of_anarchy = out->price_of_stability = NAN;
  if (g->players < 1 || g->players > OB_NASH_MAX_PLAYERS || g->cores < 1 || g->cores > OB_NASH_MAX_CORES)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "a game of 1..%d players on 1..%d cores (got %d on %d)",
                   OB_NASH_MAX_PLAYERS, OB_NASH_MAX_CORES, g->players, g->cores);
  int ch[OB_NASH_MAX_CORES], nc = choices(g, ch);
  double total = pow((double)nc, g->players);
  if (total > (double)max_profiles)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "%.0f profiles (%d choices, %d players) exceed the limit of %lld",
                   total, nc, g->players, (long long)max_profiles);
  int idx[OB_NASH_MAX_PLAYERS] = {0}, k[OB_NASH_MAX_PLAYERS];
  for (;;) {
    for (int i = 0; i < g->players; i++) k[i] = ch[idx[i]];
    double m = ob_nash_makespan(g, k);
    out->profiles++;
    if (m < out->opt_makespan) {
      out->opt_makespan = m;
      memcpy(out->opt, k, sizeof(int) * (size_t)g->players);
    }
    if (ob_nash_is_equilibrium(g, k)) {
      out->equilibria++;
      if (!(m <= out->worst_eq_makespan)) {
        out->worst_eq_makespan = m;
        memcpy(out->worst_eq, k, sizeof(int) * (size_t)g->players);
      }
      if (!(m >= out->best_eq_makespan)) {
        out->best_eq_makespan = m;
        memcpy(out->best_eq, k, sizeof(int) * (size_t)g->players);
      }
    }
    int i = 0;
    while (i < g->players && ++idx[i] == nc) idx[i++] = 0;
    if (i == g->players) break;
  }
  if (out->equilibria && out->opt_makespan > 0) {
    out->price_of_anarchy = out->worst_eq_makespan / out->opt_makespan;
    out->price_of_stability = out->best_eq_makespan / out->opt_makespan;
  }
  return OB_OK;
}
