/* tune_impl.h: what the tune module's files share beyond tune.h. */
#ifndef OB_TUNE_IMPL_H
#define OB_TUNE_IMPL_H

#include "opbench/tune.h"

struct ob_task;
/* Runs one built config of the task (so_path/symbol from the builder) with
 * the measurement opts: inputs made and outputs checked per config
 * (ob_task_fill_for / ob_task_check_for), the runner's outcome and timing
 * copied into *r (error_no, message, run_s; on success median/mean/cv,
 * costs and GFLOPS, 0 when the median is not positive). Fails only when
 * the runner itself does. measure_task.c; shared with the tuning loop. */
OB_NODISCARD ob_status ob_run_built(ob_runner *runner, struct ob_task *task, const ob_measure_opts *mo,
                       const ob_config *cfg, const char *so_path, const char *symbol,
                       ob_measure_result *r);

/* OB_OK if the task's kernels can be measured by the runner: the target
 * runs here natively or under its emulator (the message names the target
 * and what is missing otherwise: a CPU feature, the emulator, its sysroot). */
ob_status ob_task_check_measurable(ob_ctx *ctx, struct ob_task *task);

#endif
