/* profile_impl.h: the plan of a sweep as plan.c builds it and run.c walks
 * it (not part of the public API). The plan owns its workloads' tasks and
 * every array here; ob_profile_plan_free releases them. */
#ifndef OPBENCH_PROFILE_IMPL_H
#define OPBENCH_PROFILE_IMPL_H

#include "opbench/profile.h"

/* One config of a workload that the plan measures. */
typedef struct pcfg {
  uint64_t index;
  char knob[32];       /* "" for the base config; the knob changed, or "random" */
  char knob_value[64]; /* the knob's new entity as text */
} pcfg;

/* A workload of the plan (after the size grid, or a co-run partner). */
typedef struct pwl {
  ob_workload wl;
  char key[256];
  ob_task *task;
  bool size_variant;   /* made by the size grid */
  bool companion;      /* a co-run partner given by the caller, measured alone and beside
                          each profiled workload so that its own slowdown is known */
  bool base_from_db;   /* the base config is the fastest the database held */
  int ncfg;
  pcfg *cfg;           /* cfg[0] is the base config */
} pwl;

/* A resource setting: a core set, one thread per core. */
typedef struct pres {
  int n;
  int cores[OB_PROFILE_MAX_CORES];
  bool explicit_set;   /* given as a core set, not a thread count */
} pres;

typedef struct ppoint {
  int w, cfg, res;     /* workload, its config, the resource setting */
  int partner;         /* co-run: a workload index (its base config); -1: none */
  ob_corun_mode mode;
  int ncores_partner;
  int partner_cores[OB_PROFILE_MAX_CORES];
  double pressure_mib; /* 0: none */
  int pressure_core;
  const char *sweep;   /* static text */
} ppoint;

struct ob_profile_plan {
  ob_ctx *ctx;
  const ob_target *t;
  pwl *w;
  int nw;
  pres *res;
  int nres;
  ppoint *pt;
  int npt, cpt;
  int skipped;
  char why[256];
  int machine_cores;
};

/* "0,1,2" of n cores into buf. */
void ob_profile_cores_text(const int *cores, int n, char *buf, size_t cap);

#endif
