/* corun.c: one pair of configs measured side by side, with the same
 * co-runner request the sweeps use (run.c), for callers that pick the
 * configs themselves: collaboration tuning measures every trial this way. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_impl.h"

typedef struct side_req {
  ob_task *task;
  const ob_config *cfg;
  uint64_t seed;
  ob_status fill_st;
  size_t bytes[OB_KERNEL_MAX_ARGS];
  bool is_input[OB_KERNEL_MAX_ARGS];
} side_req;

static void s_fill(void *user, void *const *bufs) {
  side_req *k = user;
  k->fill_st = ob_task_fill_for(k->task, k->cfg, k->seed, bufs);
}

static ob_status s_check(void *user, void *const *bufs, char *msg, size_t cap) {
  side_req *k = user;
  if (k->fill_st) {
    snprintf(msg, cap, "filling the inputs failed: %s", ob_status_str(k->fill_st));
    return k->fill_st;
  }
  return ob_task_check_for(k->task, k->cfg, k->seed, bufs, msg, cap);
}

ob_status ob_profile_corun_pair(ob_ctx *ctx, ob_runner *runner, const ob_target *t, const ob_measure_opts *mo,
                                const ob_corun_side *a, const ob_corun_side *b, ob_corun_pair *out) {
  OB_ASSERT(runner && mo && a && b && out);
  memset(out, 0, sizeof *out);
  out->a_s = out->b_s = out->makespan_s = NAN;
  const ob_corun_side *sd[2] = {a, b};
  char *src[2] = {0}, *name[2] = {0};
  ob_build_result br[2];
  memset(br, 0, sizeof br);
  ob_status st = OB_OK;
  for (int i = 0; i < 2; i++) {
    st = ob_task_source(sd[i]->task, sd[i]->cfg, &src[i], &name[i]);
    if (st == OB_ERR_NOMEM) goto done;
    if (st) {
      out->error_no = OB_MERR_INSTANTIATION;
      snprintf(out->message, sizeof out->message, "%s: %s", i ? "B" : "A", ob_ctx_errmsg(ctx));
      ob_ctx_clear_error(ctx);
      st = OB_OK;
      goto done;
    }
  }
  ob_build_input in[2] = {{.source = src[0], .name = name[0]}, {.source = src[1], .name = name[1]}};
  ob_build_opts bo = mo->build;
  bo.target = t;
  if ((st = ob_build_batch(ctx, &bo, in, 2, br))) goto done;
  for (int i = 0; i < 2; i++)
    if (br[i].error_no) {
      out->error_no = br[i].error_no;
      snprintf(out->message, sizeof out->message, "%s does not build: %.400s", i ? "B" : "A",
               br[i].message ? br[i].message : "");
      goto done;
    }
  side_req k[2];
  ob_run_request rq[2];
  for (int i = 0; i < 2; i++) {
    memset(&k[i], 0, sizeof k[i]);
    k[i].task = sd[i]->task;
    k[i].cfg = sd[i]->cfg;
    k[i].seed = mo->seed;
    int nargs = ob_task_num_args(sd[i]->task);
    OB_ASSERT(nargs <= OB_KERNEL_MAX_ARGS);
    for (int j = 0; j < nargs; j++) {
      k[i].bytes[j] = ob_task_arg_bytes_for(sd[i]->task, sd[i]->cfg, j);
      k[i].is_input[j] = ob_task_arg_is_input(sd[i]->task, j);
    }
    rq[i] = (ob_run_request){.target = t, .so_path = br[i].so_path, .symbol = name[i], .nbufs = nargs,
                             .buf_bytes = k[i].bytes, .buf_is_input = k[i].is_input, .cores = sd[i]->cores,
                             .nthreads = sd[i]->nthreads, .timing = mo->timing, .fill = s_fill,
                             .check = s_check, .user = &k[i]};
  }
  /* each side timed by the timing protocol (a median) while the other runs
   * beside it: two requests, the roles swapped, so that neither side's time
   * is the co-runner's coarser calls-per-window count */
  for (int i = 0; i < 2; i++) {
    rq[i].corun = &rq[i ^ 1];
    rq[i ^ 1].corun = NULL;
    ob_run_result rr;
    if ((st = ob_runner_run(runner, &rq[i], &rr))) goto done;
    if (rr.error_no) {
      out->error_no = rr.error_no;
      snprintf(out->message, sizeof out->message, "%s beside %s: %.480s", i ? "B" : "A", i ? "A" : "B", rr.message);
      goto done;
    }
    *(i ? &out->b_s : &out->a_s) = rr.timing.median_s;
  }
  out->makespan_s = fmax(out->a_s, out->b_s);
done:
  for (int i = 0; i < 2; i++) {
    free(src[i]);
    free(name[i]);
    ob_build_result_clear(&br[i]);
  }
  return st;
}
