/* export.c: CSV export of measurements and the output-file helper every
 * export uses: core's ob_out (a temporary file renamed over a regular
 * destination on success, so a failed export never leaves half a file
 * behind; devices and pipes written directly) with the database and its
 * SQLite side files as the inputs an export must never overwrite. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db_impl.h"

ob_status ob_db_out_open(ob_db *db, const char *path, ob_db_out *o) {
  memset(o, 0, sizeof *o);
  if (!path || !*path) return ob_fail(db->ctx, OB_ERR_INVALID_ARG, "export path is empty");
  /* the database and SQLite's files beside it are this export's inputs */
  static const char *const k_sfx[] = {"", "-wal", "-shm", "-journal"};
  enum { NIN = sizeof k_sfx / sizeof k_sfx[0] };
  char *in[NIN] = {0};
  ob_status s = OB_OK;
  for (int i = 0; i < NIN && !s; i++) {
    size_t n = strlen(db->path) + strlen(k_sfx[i]) + 1;
    if (!(in[i] = malloc(n))) s = ob_fail(db->ctx, OB_ERR_NOMEM, "export: out of memory");
    else snprintf(in[i], n, "%s%s", db->path, k_sfx[i]);
  }
  if (!s) s = ob_out_open(db->ctx, path, (const char *const *)in, NIN, &o->out);
  for (int i = 0; i < NIN; i++) free(in[i]);
  if (s) return s;
  o->f = o->out.f;
  return OB_OK;
}

ob_status ob_db_out_close(ob_db *db, ob_db_out *o, bool ok) {
  ob_status s = ob_out_close(db->ctx, &o->out, ok);
  o->f = NULL;
  return s;
}

/* RFC 4180: quote when the field holds a comma, quote or line break. */
static void csv_field(FILE *f, const char *s, bool last) {
  if (!s) s = "";
  if (strpbrk(s, ",\"\r\n")) {
    fputc('"', f);
    for (const char *p = s; *p; p++) {
      if (*p == '"') fputc('"', f);
      fputc(*p, f);
    }
    fputc('"', f);
  } else {
    fputs(s, f);
  }
  fputc(last ? '\n' : ',', f);
}

static void csv_real(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  fputc(',', f);
}

typedef struct csv_ctx {
  FILE *f;
  int64_t n;
} csv_ctx;

static ob_status csv_row(void *user, const ob_db_record *r) {
  csv_ctx *c = user;
  FILE *f = c->f;
  csv_field(f, r->host, false);
  csv_field(f, r->workload, false);
  csv_field(f, r->op, false);
  csv_field(f, r->target, false);
  csv_field(f, r->resources, false);
  csv_field(f, r->tmpl, false);
  fprintf(f, "%llu,%d,", (unsigned long long)r->config_index, r->error_no);
  csv_field(f, ob_merr_str(r->error_no), false);
  csv_field(f, r->error_msg, false);
  const ob_timing *t = &r->timing;
  csv_real(f, t->median_s);
  csv_real(f, t->mean_s);
  csv_real(f, t->cv);
  csv_real(f, r->gflops > 0 ? r->gflops : NAN);
  fprintf(f, "%d,", t->number);
  /* costs as "c1;c2;...": numbers need no quoting, so straight to the file */
  const double *cv = r->nall_costs > 0 ? r->all_costs : t->costs;
  int ncv = r->nall_costs > 0 ? r->nall_costs : t->ncosts;
  for (int i = 0; i < ncv; i++) fprintf(f, "%s%.9g", i ? ";" : "", cv[i]);
  fputc(',', f);
  /* the protocol: unknown fields are empty */
  bool known = !isnan(t->min_repeat_ms);
  if (t->repeat > 0) fprintf(f, "%d", t->repeat);
  fputc(',', f);
  csv_real(f, t->min_repeat_ms);
  csv_field(f, known ? ob_db_cache_name(ob_db_cache_of(t)) : "", false); /* warm, cold, cold-weights */
  csv_real(f, t->timer_overhead_s > 0 ? t->timer_overhead_s : NAN);
  fprintf(f, "%d,%d,%d,%d,", t->below_resolution, t->noisy, t->extra_repeats, t->emulated);
  csv_real(f, r->build_s);
  csv_real(f, r->run_s);
  fprintf(f, "%d,", r->nthreads);
  csv_field(f, r->cores, false);
  fprintf(f, "%.3f,", r->timestamp);
  csv_field(f, r->entity, true);
  c->n++;
  return ferror(f) ? OB_ERR_IO : OB_OK;
}

ob_status ob_db_export_csv(ob_db *db, const ob_db_filter *f, const char *path, int64_t *nrows) {
  OB_ASSERT(db);
  if (nrows) *nrows = 0;
  ob_db_out o;
  ob_status s = ob_db_out_open(db, path, &o);
  if (s) return s;
  fputs("host,workload,op,target,resources,template,config_index,error_no,error,error_msg,"
        "median_s,mean_s,cv,gflops,number,repeats_s,repeat,min_repeat_ms,cache,"
        "timer_overhead_s,below_resolution,noisy,extra_repeats,emulated,build_s,run_s,nthreads,cores,"
        "timestamp,entity\n",
        o.f);
  csv_ctx c = {o.f, 0};
  s = ob_db_visit(db, f, csv_row, &c);
  if (s == OB_ERR_IO && ferror(o.f))
    s = ob_fail(db->ctx, OB_ERR_IO, "writing '%s': %s", path, strerror(errno));
  ob_status cs = ob_db_out_close(db, &o, s == OB_OK);
  if (!s) s = cs;
  if (!s && nrows) *nrows = c.n;
  return s;
}
