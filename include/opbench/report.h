/* report: a database shown as a page people would rather look at. One
 * self-contained HTML file (every plot embedded as an SVG data URI, also
 * left beside it as NAME.svg), the plots drawn by gnuplot run as a program
 * (Debian's gnuplot-nox; no hand-written axes):
 *   tuning    best GFLOPS against trials, per tuner and task (tuning runs)
 *   threads   GFLOPS against the thread count per workload, the turnaround
 *             point (the count past which more threads stop helping) marked
 *   sizes     GFLOPS against the workload's GFLOP (the size grid), per operator
 *   knobs     knob sensitivity: each one-knob change's GFLOPS over its base
 *             config's, per knob
 *   roofline  every error-free point at its arithmetic intensity, under the
 *             host's FMA peak and memory bandwidth (host limits)
 *   corun_*   the co-run slowdown matrix (operator against partner) as a heat
 *             map, per mode (stream, full)
 *   timeline* schedule timelines drawn by `opbench schedule --timeline`
 * A plot is drawn only when the database holds its data; the page says which
 * were left out and why. */
#ifndef OPBENCH_REPORT_H
#define OPBENCH_REPORT_H

#include "opbench/core.h"
#include "opbench/db.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ob_report_opts {
  const char *title;                /* NULL: "opbench report" */
  const char *db_name;              /* shown on the page (the file name) */
  int ntimelines;
  const char *const *timelines;     /* SVG files to embed as schedule timelines */
} ob_report_opts;

#define OB_REPORT_MAX_PLOTS 32

typedef struct ob_report_stats {
  int nplots;                       /* plots on the page */
  char plots[OB_REPORT_MAX_PLOTS][32]; /* their names (NAME.svg) */
  int nskipped;                     /* plots left out for want of data */
  int64_t nprofiles, nruns;         /* what the database held */
} ob_report_stats;

/* Writes out_dir/index.html and out_dir/NAME.svg per plot (out_dir is
 * created when missing; files are written beside and renamed into place).
 * Errors: OB_ERR_NOT_FOUND when the database holds neither profiles nor
 * tuning runs (nothing to show), OB_ERR_INVALID_ARG for an out_dir that is
 * not a folder or a timeline that is not an SVG file, OB_ERR_UNSUPPORTED
 * when gnuplot is missing, OB_ERR_IO when it fails or a file cannot be
 * written. */
OB_API ob_status ob_report_write(ob_ctx *ctx, ob_db *db, const char *out_dir, const ob_report_opts *o,
                                 ob_report_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
