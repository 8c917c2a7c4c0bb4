/* export.c: CSV export of measurements and the output-file helper every
 * export uses (write to a temporary file beside the destination, rename on
 * success, so a failed export never leaves half a file behind). */
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
  if (!strcmp(path, "-")) {
    o->f = stdout;
    return OB_OK;
  }
  ob_str t = {0};
  ob_str_appendf(&t, "%s.tmp.%ld", path, (long)getpid());
  o->tmp = ob_str_take(&t);
  o->path = strdup(path);
  if (!o->tmp || !o->path) {
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return ob_fail(db->ctx, OB_ERR_NOMEM, "exporting to '%s': out of memory", path);
  }
  o->f = fopen(o->tmp, "w");
  if (!o->f) {
    ob_status s = ob_fail(db->ctx, OB_ERR_IO, "cannot write '%s': %s", o->tmp, strerror(errno));
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return s;
  }
  return OB_OK;
}

ob_status ob_db_out_close(ob_db *db, ob_db_out *o, bool ok) {
  ob_status s = OB_OK;
  if (!o->f) return OB_OK;
  if (o->f == stdout) {
    if (fflush(stdout) != 0 && ok) s = ob_fail(db->ctx, OB_ERR_IO, "writing to stdout: %s", strerror(errno));
    o->f = NULL;
    return s;
  }
  bool werr = ferror(o->f) != 0;
  int saved = errno;
  if (fclose(o->f) != 0 && !werr) {
    werr = true;
    saved = errno;
  }
  o->f = NULL;
  if (ok && werr) s = ob_fail(db->ctx, OB_ERR_IO, "writing '%s': %s", o->path, strerror(saved));
  if (ok && !s && rename(o->tmp, o->path) != 0)
    s = ob_fail(db->ctx, OB_ERR_IO, "cannot move '%s' to '%s': %s", o->tmp, o->path,
                strerror(errno));
  if (!ok || s) unlink(o->tmp);
  free(o->tmp);
  free(o->path);
  o->tmp = o->path = NULL;
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
  csv_real(f, r->median_s);
  csv_real(f, r->mean_s);
  csv_real(f, r->cv);
  csv_real(f, r->gflops > 0 ? r->gflops : NAN);
  fprintf(f, "%d,", r->number);
  /* costs as "c1;c2;...": numbers need no quoting, so straight to the file */
  for (int i = 0; i < r->ncosts; i++) fprintf(f, "%s%.9g", i ? ";" : "", r->costs[i]);
  fputc(',', f);
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
        "median_s,mean_s,cv,gflops,number,repeats_s,build_s,run_s,nthreads,cores,timestamp,"
        "entity\n",
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
