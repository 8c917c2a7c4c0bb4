/* ops_util.h: what the operator tests share: measuring the default config
 * and a random sample of a template's config space for one workload and a
 * target (NULL: the default), each checked against the operator's
 * reference (error 0, GFLOPS > 0).
 *
 * The harness records every (operator, template) pair it checked, and
 * ops_check_registry_covered() walks the registry (ob_op_count, ob_op_name,
 * ob_op_templates) and fails for each pair that no case of this run
 * checked: a new operator or template without a test case fails test_ops.
 * The record lives in weak definitions, shared by the files that make up
 * one test executable (test_ops.c and test_ops2.c). */
#ifndef OB_TESTS_OPS_UTIL_H
#define OB_TESTS_OPS_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/ops.h"
#include "opbench/tune.h" /* ob_measure_configs */

#define OPS_MAX_SAMPLES 32
#define OPS_MAX_TEMPLATES 16

typedef struct ops_pair {
  char op[32], tmpl[64];
  int cases; /* workloads checked with this template */
} ops_pair;
enum { OPS_MAX_PAIRS = 512 };
__attribute__((weak)) ops_pair ops_checked[OPS_MAX_PAIRS];
__attribute__((weak)) int ops_nchecked;

static void ops_record(const char *op, const char *tmpl) {
  for (int i = 0; i < ops_nchecked; i++)
    if (!strcmp(ops_checked[i].op, op) && !strcmp(ops_checked[i].tmpl, tmpl)) {
      ops_checked[i].cases++;
      return;
    }
  CHECK_MSG(ops_nchecked < OPS_MAX_PAIRS, "more than %d (operator, template) pairs", OPS_MAX_PAIRS);
  if (ops_nchecked >= OPS_MAX_PAIRS) return;
  ops_pair *p = &ops_checked[ops_nchecked++];
  snprintf(p->op, sizeof p->op, "%s", op);
  snprintf(p->tmpl, sizeof p->tmpl, "%s", tmpl);
  p->cases = 1;
}

/* any_template: called for every template of the operator, where one
 * that does not take the workload (OB_ERR_UNSUPPORTED: Winograd on a
 * strided convolution) is passed over rather than failed. */
static void ops_check_template_ex(ob_ctx *ctx, ob_runner *runner, const ob_target *target,
                                  const ob_workload *wl, const char *tmpl, int samples, uint64_t seed,
                                  bool any_template) {
  ob_task *t = NULL;
  ob_status st = ob_task_new(ctx, wl, tmpl, target, &t);
  if (st == OB_ERR_UNSUPPORTED && any_template) {
    ob_ctx_clear_error(ctx);
    return;
  }
  CHECK_MSG(st == OB_OK, "%s %s: %s", wl->op, tmpl, ob_ctx_errmsg(ctx));
  if (st) return;
  const ob_space *sp = ob_task_space(t);
  ob_config cfgs[OPS_MAX_SAMPLES];
  int n = 0;
  cfgs[n++] = ob_task_default_config(t);
  CHECK(ob_space_is_valid(sp, cfgs[0].index));
  ob_rng rng = {seed};
  int tries = 0;
  if (samples > OPS_MAX_SAMPLES) samples = OPS_MAX_SAMPLES;
  while (n < samples && tries++ < 10000) {
    uint64_t i = ob_rng_next(&rng) % ob_space_len(sp);
    if (ob_space_get(ctx, sp, i, &cfgs[n]) == OB_OK) n++;
  }
  ob_measure_opts o = ob_measure_opts_default();
  /* correctness, not speed: one call timed, and no limit a loaded machine
   * (or a sanitizer build's compiler) could reach */
  o.timing.number = 1;
  o.timing.repeat = 1;
  o.timing.max_cv = 0;
  o.timing.timeout_s = o.build.timeout_s = OB_TEST_TIMEOUT_S;
  o.nthreads = 2;
  ob_measure_result res[OPS_MAX_SAMPLES];
  st = ob_measure_configs(ctx, t, runner, &o, cfgs, n, res);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  char key[256];
  ob_workload_key(wl, key, sizeof key);
  if (st == OB_OK) ops_record(wl->op, tmpl);
  for (int i = 0; st == OB_OK && i < n; i++) {
    char *cs = ob_config_str(&cfgs[i]);
    CHECK_MSG(res[i].error_no == 0 && res[i].gflops > 0, "%s %s [%s] for %s: error %d: %s", key, tmpl,
              cs, ob_target_str(ob_task_target(t)), res[i].error_no, res[i].message);
    free(cs);
  }
  ob_task_free(t);
}

static inline void ops_check_template(ob_ctx *ctx, ob_runner *runner, const ob_target *target,
                               const ob_workload *wl, const char *tmpl, int samples, uint64_t seed) {
  ops_check_template_ex(ctx, runner, target, wl, tmpl, samples, seed, false);
}

/* Every template of the workload's operator that takes the workload. */
static void ops_check_all_templates(ob_ctx *ctx, ob_runner *runner, const ob_target *target,
                                    const ob_workload *wl, int samples, uint64_t seed) {
  const char *names[OPS_MAX_TEMPLATES];
  int n = ob_op_templates(wl->op, names, OPS_MAX_TEMPLATES);
  CHECK_MSG(n >= 1 && n <= OPS_MAX_TEMPLATES, "%s has %d templates", wl->op, n);
  for (int i = 0; i < n && i < OPS_MAX_TEMPLATES; i++)
    ops_check_template_ex(ctx, runner, target, wl, names[i], samples, seed, true);
}

/* The registry walk: each template of each registered operator was checked
 * above on at least one workload, in this run. */
static inline void ops_check_registry_covered(void) {
  int nops = ob_op_count(), pairs = 0, missing = 0;
  CHECK(nops >= 1);
  for (int i = 0; i < nops; i++) {
    const char *op = ob_op_name(i);
    const char *names[OPS_MAX_TEMPLATES];
    int n = ob_op_templates(op, names, OPS_MAX_TEMPLATES);
    CHECK_MSG(n >= 1 && n <= OPS_MAX_TEMPLATES, "operator %s: %d templates", op, n);
    for (int k = 0; k < n && k < OPS_MAX_TEMPLATES; k++) {
      int cases = 0;
      for (int j = 0; j < ops_nchecked; j++)
        if (!strcmp(ops_checked[j].op, op) && !strcmp(ops_checked[j].tmpl, names[k])) cases = ops_checked[j].cases;
      CHECK_MSG(cases > 0, "operator %s, template %s: no test case checks it (add a workload to tests/test_ops*.c)",
                op, names[k]);
      pairs++;
      missing += cases == 0;
    }
  }
  printf("registry: %d operators, %d (operator, template) pairs, %d checked here, %d without a test case\n", nops,
         pairs, pairs - missing, missing);
}
/* test_ops2.c's cases, run by test_ops.c's main before the registry walk. */
void ops2_run(ob_ctx *ctx, ob_runner *runner);
#endif
