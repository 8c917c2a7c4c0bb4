/* report.c: `opbench report`, the database as an HTML page of plots. */
#include "cli.h"

#include <string.h>

#include "opbench/db.h"
#include "opbench/report.h"

int cli_cmd_report(ob_ctx *ctx, const cli_args *a) {
  ob_db *db = NULL;
  /* read-only: a report never changes the database (nor creates one) */
  if (ob_db_open(ctx, a->db_path, OB_DB_READONLY, &db) != OB_OK)
    return cli_error("--db: %s", ob_ctx_errmsg(ctx));
  ob_report_opts o = {.db_name = a->db_path, .ntimelines = a->nschedules, .timelines = a->schedules};
  ob_report_stats st;
  int rc = 0;
  if (ob_report_write(ctx, db, a->out, &o, &st) != OB_OK) {
    rc = cli_error("report: %s", ob_ctx_errmsg(ctx));
  } else {
    printf("report     %s/index.html: %d plots from %lld profile points and %lld tuning runs\n", a->out,
           st.nplots, (long long)st.nprofiles, (long long)st.nruns);
    for (int i = 0; i < st.nplots; i++) printf("plot       %s/%s.svg\n", a->out, st.plots[i]);
    if (st.nskipped) printf("left out   %d plots for want of data (listed on the page)\n", st.nskipped);
  }
  ob_db_close(db);
  return rc;
}
