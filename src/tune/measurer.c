/* measurer.c: ob_measurer, what the tuning loop and the search measure
 * with: a vtable and its self. The local measurer builds in this process
 * (ob_measure_configs) and measures with an ob_runner it borrows; other
 * measurers (a fleet of remote workers) live in the modules above and
 * reach the loop through ob_measurer_new. */
#include <stdlib.h>
#include <string.h>

#include "opbench/ops.h"
#include "opbench/tune.h"
#include "tune/tune_impl.h"

struct ob_measurer {
  const ob_measurer_i *vt;
  void *self;
  ob_runner *runner; /* the local measurer's */
};

static ob_status local_measure(void *self, ob_ctx *ctx, ob_task *task, const ob_measure_opts *o,
                               const ob_config *cfgs, int n, ob_measure_result *out) {
  return ob_measure_configs(ctx, task, self, o, cfgs, n, out);
}

static ob_status local_check(void *self, ob_ctx *ctx, ob_task *task) {
  (void)self;
  return ob_task_check_measurable(ctx, task);
}

static ob_status local_host(void *self, ob_ctx *ctx, ob_task *task, ob_host *out, char *cc,
                            size_t cc_cap, char *ver, size_t ver_cap) {
  (void)self;
  ob_status st = ob_host_detect(ctx, out);
  if (st) return st;
  /* the host row records the compiler the trials are built with; a missing
   * compiler is left to the builder to report per batch */
  ob_build_opts bo = {.target = ob_task_target(task)};
  if (ob_build_compiler(ctx, &bo, cc, cc_cap, ver, ver_cap) != OB_OK) {
    ob_ctx_clear_error(ctx);
    if (cc_cap) cc[0] = '\0';
    if (ver_cap) ver[0] = '\0';
  }
  return OB_OK;
}

static void local_resources(void *self, const ob_measure_opts *mo, char *buf, size_t cap) {
  (void)self;
  ob_tune_resources(mo, buf, cap);
}

static const ob_measurer_i k_local = {
    .name = "local",
    .measure = local_measure,
    .check = local_check,
    .host = local_host,
    .resources = local_resources,
};

ob_status ob_measurer_new(ob_ctx *ctx, const ob_measurer_i *vt, void *self, ob_measurer **out) {
  OB_ASSERT(vt && vt->measure && vt->check && vt->host && vt->resources && out);
  *out = calloc(1, sizeof **out);
  if (!*out) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  (*out)->vt = vt;
  (*out)->self = self;
  return OB_OK;
}

ob_status ob_measurer_local_new(ob_ctx *ctx, ob_runner *runner, ob_measurer **out) {
  OB_ASSERT(runner);
  ob_status st = ob_measurer_new(ctx, &k_local, runner, out);
  if (!st) (*out)->runner = runner;
  return st;
}

void ob_measurer_free(ob_measurer *m) {
  if (!m) return;
  if (m->vt->free) m->vt->free(m->self);
  free(m);
}

const char *ob_measurer_name(const ob_measurer *m) { return m->vt->name; }
ob_runner *ob_measurer_runner(const ob_measurer *m) { return m->runner; }

ob_status ob_measurer_measure(ob_measurer *m, ob_ctx *ctx, ob_task *task, const ob_measure_opts *o,
                              const ob_config *cfgs, int n, ob_measure_result *out) {
  return m->vt->measure(m->self, ctx, task, o, cfgs, n, out);
}

ob_status ob_measurer_check(ob_measurer *m, ob_ctx *ctx, ob_task *task) {
  return m->vt->check(m->self, ctx, task);
}

ob_status ob_measurer_host(ob_measurer *m, ob_ctx *ctx, ob_task *task, ob_host *out, char *cc,
                           size_t cc_cap, char *ver, size_t ver_cap) {
  return m->vt->host(m->self, ctx, task, out, cc, cc_cap, ver, ver_cap);
}

void ob_measurer_resources(ob_measurer *m, const ob_measure_opts *mo, char *buf, size_t cap) {
  m->vt->resources(m->self, mo, buf, cap);
}
