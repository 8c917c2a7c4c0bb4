/* ops_util.h: what the operator tests share: measuring the default config
 * and a random sample of a template's config space for one workload and a
 * target (NULL: the default), each checked against the operator's
 * reference (error 0, GFLOPS > 0). */
#ifndef OB_TESTS_OPS_UTIL_H
#define OB_TESTS_OPS_UTIL_H
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opbench/ops.h"
#include "opbench/tune.h" /* ob_measure_configs */

#define OPS_MAX_SAMPLES 32

static void ops_check_template(ob_ctx *ctx, ob_runner *runner, const ob_target *target,
                               const ob_workload *wl, const char *tmpl, int samples, uint64_t seed) {
  ob_task *t = NULL;
  ob_status st = ob_task_new(ctx, wl, tmpl, target, &t);
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
  o.timing.repeat = 1;
  o.nthreads = 2;
  ob_measure_result res[OPS_MAX_SAMPLES];
  st = ob_measure_configs(ctx, t, runner, &o, cfgs, n, res);
  CHECK_MSG(st == OB_OK, "%s", ob_ctx_errmsg(ctx));
  char key[256];
  ob_workload_key(wl, key, sizeof key);
  for (int i = 0; st == OB_OK && i < n; i++) {
    char *cs = ob_config_str(&cfgs[i]);
    CHECK_MSG(res[i].error_no == 0 && res[i].gflops > 0, "%s %s [%s] for %s: error %d: %s", key, tmpl,
              cs, ob_target_str(ob_task_target(t)), res[i].error_no, res[i].message);
    free(cs);
  }
  ob_task_free(t);
}

/* Every template of the workload's operator. */
static void ops_check_all_templates(ob_ctx *ctx, ob_runner *runner, const ob_target *target,
                                    const ob_workload *wl, int samples, uint64_t seed) {
  const char *names[8];
  int n = ob_op_templates(wl->op, names, 8);
  CHECK_MSG(n >= 1, "%s has no template", wl->op);
  for (int i = 0; i < n && i < 8; i++) ops_check_template(ctx, runner, target, wl, names[i], samples, seed);
}
#endif
