/* report.c: the database as an HTML page of gnuplot plots. The data comes
 * from the profiles, host_limits and tuning_runs tables (db schema v3) and
 * the measurements of each tuning run; each plot is a gnuplot script with
 * its data inline (datablocks), run as `gnuplot FILE` writing SVG on its
 * standard output. The SVG goes beside the page and, base64-encoded, into
 * an <img> data URI so the page needs no other file. A small script on the
 * page marks every image that failed to decode (the browser test reads the
 * marks: a broken plot is a failed test, not an empty frame). */
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opbench/report.h"

#define MAX_SERIES 8 /* lines per plot: more are unreadable */

/* ---- gnuplot ------------------------------------------------------------------ */

/* A gnuplot single-quoted string: quotes doubled, control characters out. */
static void quoted(ob_str *s, const char *text) {
  ob_str_append(s, "'");
  for (const char *p = text; *p; p++) {
    if (*p == '\'') ob_str_append(s, "''");
    else if ((unsigned char)*p < 0x20) ob_str_append(s, " ");
    else ob_str_appendf(s, "%c", *p);
  }
  ob_str_append(s, "'");
}

/* A label inside a datablock, double-quoted: no quotes or control characters. */
static void data_label(ob_str *s, const char *text) {
  ob_str_append(s, "\"");
  for (const char *p = text; *p; p++)
    ob_str_appendf(s, "%c", (*p == '"' || (unsigned char)*p < 0x20) ? ' ' : *p);
  ob_str_append(s, "\"");
}

static void header(ob_str *s, const char *title, const char *xlabel, const char *ylabel) {
  ob_str_append(s, "set terminal svg size 900,520 noenhanced font 'sans,11' background rgb 'white'\n");
  ob_str_append(s, "set title ");
  quoted(s, title);
  ob_str_append(s, "\nset xlabel ");
  quoted(s, xlabel);
  ob_str_append(s, "\nset ylabel ");
  quoted(s, ylabel);
  ob_str_append(s, "\nset grid\nset key outside right top vertical\n");
}

static ob_status run_gnuplot(ob_ctx *ctx, const char *what, const ob_str *script, ob_str *svg) {
  return ob_gnuplot_svg(ctx, "report", what, script, svg);
}

/* ---- the page ----------------------------------------------------------------- */

typedef struct page {
  ob_ctx *ctx;
  const char *dir;
  ob_str body;     /* the figures */
  ob_str skipped;  /* <li> per plot left out */
  ob_report_stats *stats;
} page;

static void html_text(ob_str *s, const char *text) {
  for (const char *p = text; *p; p++) {
    switch (*p) {
    case '<': ob_str_append(s, "&lt;"); break;
    case '>': ob_str_append(s, "&gt;"); break;
    case '&': ob_str_append(s, "&amp;"); break;
    case '"': ob_str_append(s, "&quot;"); break;
    default: ob_str_appendf(s, "%c", *p);
    }
  }
}

static ob_status write_file(ob_ctx *ctx, const char *path, const char *data, size_t len) {
  ob_out o;
  ob_status st = ob_out_open(ctx, path, NULL, 0, &o);
  if (st) return st;
  bool ok = fwrite(data, 1, len, o.f) == len;
  st = ob_out_close(ctx, &o, ok);
  if (!st && !ok) st = ob_fail(ctx, OB_ERR_IO, "%s: write failed", path);
  return st;
}

/* Adds a figure of an SVG (written to dir/name.svg too) with its caption. */
static ob_status figure(page *pg, const char *name, const char *svg, size_t len, const char *caption) {
  if (pg->stats->nplots == OB_REPORT_MAX_PLOTS) return OB_OK;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.svg", pg->dir, name);
  ob_status st = write_file(pg->ctx, path, svg, len);
  if (st) return st;
  size_t cap = 4 * ((len + 2) / 3) + 1;
  unsigned char *b64 = malloc(cap);
  if (!b64) return ob_fail(pg->ctx, OB_ERR_NOMEM, "report: out of memory");
  EVP_EncodeBlock(b64, (const unsigned char *)svg, (int)len);
  ob_str_appendf(&pg->body, "<figure id=\"plot-%s\">\n<img class=\"plot\" alt=\"%s\" src=\"data:image/svg+xml;base64,",
                 name, name);
  ob_str_append(&pg->body, (const char *)b64);
  free(b64);
  ob_str_append(&pg->body, "\">\n<figcaption>");
  html_text(&pg->body, caption);
  ob_str_appendf(&pg->body, " <a href=\"%s.svg\">%s.svg</a></figcaption>\n</figure>\n", name, name);
  snprintf(pg->stats->plots[pg->stats->nplots++], sizeof pg->stats->plots[0], "%s", name);
  return OB_OK;
}

static ob_status plot(page *pg, const char *name, const ob_str *script, const char *caption) {
  ob_str svg = {0};
  ob_status st = run_gnuplot(pg->ctx, name, script, &svg);
  if (!st) st = figure(pg, name, svg.data, svg.len, caption);
  ob_str_free(&svg);
  return st;
}

static void skip(page *pg, const char *name, const char *why) {
  pg->stats->nskipped++;
  ob_str_appendf(&pg->skipped, "<li><b>%s</b>: ", name);
  html_text(&pg->skipped, why);
  ob_str_append(&pg->skipped, "</li>\n");
}

/* ---- names ----------------------------------------------------------------------- */

/* "conv2d_nchw/f32/N1C64H56W56/K64R3S3/s1,1/..." -> "conv2d_nchw N1C64H56W56 K64R3S3 s1,1":
 * the operator and its shape parts, without the dtype. */
static void short_name(const char *key, char *buf, size_t cap) {
  buf[0] = '\0';
  size_t len = 0;
  int part = 0;
  for (const char *p = key; *p && part < 5;) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (part != 1 && len + n + 2 < cap) {
      if (len) buf[len++] = ' ';
      memcpy(buf + len, p, n);
      len += n;
      buf[len] = '\0';
    }
    part++;
    p = e ? e + 1 : p + n;
  }
}

static bool empty(const char *s) { return !s || !*s; }

/* An error-free point measured alone (no co-runner, no pressure). */
static bool alone_ok(const ob_db_profile *r) {
  return !r->error_no && empty(r->key.corun_mode) && r->key.pressure_mib == 0 && r->gflops > 0 &&
         isfinite(r->gflops);
}

/* ---- the plots ------------------------------------------------------------------- */

static ob_status plot_tuning(page *pg, ob_db *db, const ob_db_tuning_runs *R) {
  ob_str s = {0};
  header(&s, "Tuning curves: best GFLOPS so far", "trials", "best GFLOPS");
  char plotcmd[8192] = "plot ";
  int nseries = 0;
  ob_status st = OB_OK;
  for (int64_t i = 0; i < R->n && nseries < MAX_SERIES; i++) {
    const ob_db_tuning_run *r = &R->r[i];
    /* the run's trials: from its start to the next run of the task */
    double end = INFINITY;
    for (int64_t j = 0; j < R->n; j++) {
      const ob_db_key *a = &r->key, *b = &R->r[j].key;
      if (j != i && R->r[j].started > r->started && R->r[j].started < end && !strcmp(a->host, b->host) &&
          !strcmp(a->workload, b->workload) && !strcmp(a->target, b->target) &&
          !strcmp(a->resources, b->resources) && !strcmp(a->tmpl, b->tmpl))
        end = R->r[j].started;
    }
    ob_db_filter f = {.key = r->key, .order = OB_DB_ORDER_TIME};
    ob_db_records *recs = NULL;
    if ((st = ob_db_query(db, &f, &recs))) break;
    int trials = 0;
    double best = 0;
    ob_str d = {0};
    for (int64_t k = 0; k < recs->n; k++) {
      double t = recs->rec[k].timestamp;
      if (t < r->started - 1e-3 || t >= end) continue;
      trials++;
      if (recs->rec[k].gflops > best) best = recs->rec[k].gflops;
      ob_str_appendf(&d, "%d %.6g\n", trials, best);
    }
    ob_db_records_free(recs);
    if (trials >= 1 && best > 0) {
      char nm[160];
      short_name(r->key.workload, nm, sizeof nm);
      ob_str_appendf(&s, "$t%d << EOD\n", nseries);
      ob_str_append_str(&s, &d);
      ob_str_append(&s, "EOD\n");
      char title[256];
      snprintf(title, sizeof title, "%s: %.60s (%s)", r->tuner, nm, r->key.resources);
      ob_str t = {0};
      quoted(&t, title);
      size_t used = strlen(plotcmd);
      snprintf(plotcmd + used, sizeof plotcmd - used, "%s$t%d with steps lw 2 title %s", nseries ? ", " : "",
               nseries, t.data ? t.data : "''");
      ob_str_free(&t);
      nseries++;
    }
    ob_str_free(&d);
  }
  if (!st && nseries) {
    ob_str_appendf(&s, "%s\n", plotcmd);
    st = plot(pg, "tuning", &s,
              "Best GFLOPS found against the number of trials, one line per tuning run (tuner, task "
              "and resources).");
  } else if (!st) {
    skip(pg, "tuning", "the tuning runs hold no error-free trial");
  }
  ob_str_free(&s);
  return st;
}

typedef struct tseries {
  const char *workload, *tmpl;
  uint64_t config;
  double best[65]; /* GFLOPS per thread count (0: not measured) */
} tseries;

static ob_status plot_threads(page *pg, const ob_db_profiles *P) {
  tseries ser[64];
  int ns = 0;
  for (int64_t i = 0; i < P->n; i++) {
    const ob_db_profile *r = &P->p[i];
    if (!alone_ok(r) || !empty(r->knob) || r->nthreads < 1 || r->nthreads > 64) continue;
    int k = 0;
    while (k < ns && (strcmp(ser[k].workload, r->key.workload) || strcmp(ser[k].tmpl, r->key.tmpl) ||
                      ser[k].config != r->key.config_index))
      k++;
    if (k == ns) {
      if (ns == 64) continue;
      memset(&ser[ns], 0, sizeof ser[ns]);
      ser[ns].workload = r->key.workload;
      ser[ns].tmpl = r->key.tmpl;
      ser[ns].config = r->key.config_index;
      ns++;
    }
    if (r->gflops > ser[k].best[r->nthreads]) ser[k].best[r->nthreads] = r->gflops;
  }
  ob_str s = {0};
  header(&s, "GFLOPS against threads (turnaround point marked)", "threads", "GFLOPS");
  ob_str_append(&s, "set xtics 1\nset offsets 0.3, 0.3, 0, 0\n");
  char plotcmd[8192] = "plot ";
  int drawn = 0;
  for (int k = 0; k < ns && drawn < MAX_SERIES; k++) {
    int counts = 0, top = 0;
    for (int t = 1; t <= 64; t++)
      if (ser[k].best[t] > 0) {
        counts++;
        if (!top || ser[k].best[t] > ser[k].best[top]) top = t;
      }
    if (counts < 2) continue;
    ob_str_appendf(&s, "$h%d << EOD\n", drawn);
    for (int t = 1; t <= 64; t++)
      if (ser[k].best[t] > 0) ob_str_appendf(&s, "%d %.6g\n", t, ser[k].best[t]);
    ob_str_appendf(&s, "EOD\n$m%d << EOD\n%d %.6g\nEOD\n", drawn, top, ser[k].best[top]);
    char nm[160], title[256];
    short_name(ser[k].workload, nm, sizeof nm);
    snprintf(title, sizeof title, "%.60s (turnaround %d)", nm, top);
    ob_str t = {0};
    quoted(&t, title);
    size_t used = strlen(plotcmd);
    snprintf(plotcmd + used, sizeof plotcmd - used,
             "%s$h%d with linespoints lw 2 lc %d title %s, $m%d with points pt 7 ps 2.5 lc %d notitle", drawn ? ", " : "",
             drawn, drawn + 1, t.data ? t.data : "''", drawn, drawn + 1);
    ob_str_free(&t);
    drawn++;
  }
  ob_status st = OB_OK;
  if (drawn) {
    ob_str_appendf(&s, "%s\n", plotcmd);
    st = plot(pg, "threads", &s,
              "GFLOPS of each workload's config alone against its thread count (the best core set per "
              "count); the large dot is the turnaround point, the count past which more threads stop "
              "helping.");
  } else {
    skip(pg, "threads", "no workload was profiled at two or more thread counts (opbench profile --threads 1,2)");
  }
  ob_str_free(&s);
  return st;
}

static ob_status plot_sizes(page *pg, const ob_db_profiles *P) {
  const char *ops[MAX_SERIES];
  int nops = 0;
  ob_str d[MAX_SERIES];
  memset(d, 0, sizeof d);
  int cnt[MAX_SERIES] = {0};
  for (int64_t i = 0; i < P->n; i++) {
    const ob_db_profile *r = &P->p[i];
    if (!alone_ok(r) || strcmp(r->sweep ? r->sweep : "", "sizes") || !(r->flops > 0)) continue;
    const char *op = r->op ? r->op : "?";
    int k = 0;
    while (k < nops && strcmp(ops[k], op)) k++;
    if (k == nops) {
      if (nops == MAX_SERIES) continue;
      ops[nops++] = op;
    }
    ob_str_appendf(&d[k], "%.6g %.6g %d\n", r->flops / 1e9, r->gflops, r->nthreads);
    cnt[k]++;
  }
  ob_str s = {0};
  header(&s, "GFLOPS against input size", "GFLOP of one call (log)", "GFLOPS");
  ob_str_append(&s, "set logscale x\n");
  char plotcmd[4096] = "plot ";
  int drawn = 0;
  for (int k = 0; k < nops; k++) {
    if (cnt[k] < 2) continue;
    ob_str_appendf(&s, "$s%d << EOD\n", drawn);
    ob_str_append_str(&s, &d[k]);
    ob_str_append(&s, "EOD\n");
    size_t used = strlen(plotcmd);
    snprintf(plotcmd + used, sizeof plotcmd - used, "%s$s%d using 1:2 with points pt 7 ps 1.2 lc %d title '%s'",
             drawn ? ", " : "", drawn, drawn + 1, ops[k]);
    drawn++;
  }
  for (int k = 0; k < MAX_SERIES; k++) ob_str_free(&d[k]);
  ob_status st = OB_OK;
  if (drawn) {
    ob_str_appendf(&s, "%s\n", plotcmd);
    st = plot(pg, "sizes", &s,
              "GFLOPS of the size grid's workloads (opbench profile --sizes) against their size in GFLOP, "
              "per operator.");
  } else {
    skip(pg, "sizes", "no size grid was profiled (opbench profile --sizes H=7:56:x2)");
  }
  ob_str_free(&s);
  return st;
}

static ob_status plot_knobs(page *pg, const ob_db_profiles *P) {
  const char *knobs[32];
  int nk = 0;
  ob_str d = {0};
  int npts = 0;
  for (int64_t i = 0; i < P->n; i++) {
    const ob_db_profile *r = &P->p[i];
    if (!alone_ok(r) || empty(r->knob) || !strcmp(r->knob, "random")) continue;
    /* its base: the same workload, template and resources, no knob changed */
    double base = NAN;
    for (int64_t j = 0; j < P->n; j++) {
      const ob_db_profile *b = &P->p[j];
      if (alone_ok(b) && empty(b->knob) && !strcmp(b->key.workload, r->key.workload) &&
          !strcmp(b->key.tmpl, r->key.tmpl) && !strcmp(b->key.resources, r->key.resources) &&
          !strcmp(b->key.target, r->key.target) && !strcmp(b->key.host, r->key.host))
        base = b->gflops;
    }
    if (!isfinite(base)) continue;
    int k = 0;
    while (k < nk && strcmp(knobs[k], r->knob)) k++;
    if (k == nk) {
      if (nk == 32) continue;
      knobs[nk++] = r->knob;
    }
    ob_str_appendf(&d, "%d %.6g\n", k, r->gflops / base);
    npts++;
  }
  ob_str s = {0};
  header(&s, "Knob sensitivity: one-knob changes against their base config", "knob changed",
         "GFLOPS / base config's GFLOPS");
  ob_status st = OB_OK;
  if (npts) {
    ob_str_appendf(&s, "set xrange [-0.5:%d.5]\nset xtics (", nk - 1);
    for (int k = 0; k < nk; k++) {
      ob_str_append(&s, k ? ", " : "");
      quoted(&s, knobs[k]);
      ob_str_appendf(&s, " %d", k);
    }
    ob_str_append(&s, ") rotate by -30\nunset key\nset arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'\n");
    ob_str_append(&s, "$k << EOD\n");
    ob_str_append_str(&s, &d);
    ob_str_append(&s, "EOD\nplot $k using 1:2 with points pt 7 ps 1.2 lc rgb '#4e79a7' notitle\n");
    st = plot(pg, "knobs", &s,
              "Each one-knob change around a base config (opbench profile --knobs neighbours), its GFLOPS "
              "over the base config's at the same resources: below 1 the change is slower. The spread "
              "per knob is its sensitivity.");
  } else {
    skip(pg, "knobs", "no knob sweep was profiled (opbench profile --knobs neighbours)");
  }
  ob_str_free(&d);
  ob_str_free(&s);
  return st;
}

static ob_status plot_roofline(page *pg, ob_db *db, const ob_db_profiles *P) {
  const char *host = NULL;
  for (int64_t i = 0; i < P->n && !host; i++)
    if (alone_ok(&P->p[i])) host = P->p[i].key.host;
  if (!host) {
    skip(pg, "roofline", "no error-free point");
    return OB_OK;
  }
  ob_db_host_limits *L = NULL;
  ob_status st = ob_db_get_host_limits(db, host, &L);
  if (st) return st;
  /* the ceilings at one thread and at the most threads measured */
  double peak1 = 0, peakn = 0, bw1 = 0, bwn = 0;
  int tn = 1;
  for (int64_t i = 0; i < L->n; i++)
    if (L->l[i].threads > tn) tn = L->l[i].threads;
  for (int64_t i = 0; i < L->n; i++) {
    const ob_db_host_limit *l = &L->l[i];
    bool one = l->threads == 1, all = l->threads == tn;
    if (!strcmp(l->name, "fma_peak")) {
      if (one && l->value > peak1) peak1 = l->value;
      if (all && l->value > peakn) peakn = l->value;
    } else if (!strcmp(l->name, "mem_triad")) {
      if (one && l->value > bw1) bw1 = l->value;
      if (all && l->value > bwn) bwn = l->value;
    }
  }
  ob_db_host_limits_free(L);
  if (!(peak1 > 0) || !(bw1 > 0)) {
    skip(pg, "roofline", "the host's limits are not in the database (opbench profile measures them)");
    return OB_OK;
  }
  ob_str s = {0}, d1 = {0}, dn = {0};
  double xmin = INFINITY, xmax = 0;
  int n = 0;
  for (int64_t i = 0; i < P->n; i++) {
    const ob_db_profile *r = &P->p[i];
    if (!alone_ok(r) || !(r->intensity > 0) || strcmp(r->key.host, host)) continue;
    ob_str_appendf(r->nthreads == 1 ? &d1 : &dn, "%.6g %.6g\n", r->intensity, r->gflops);
    if (r->intensity < xmin) xmin = r->intensity;
    if (r->intensity > xmax) xmax = r->intensity;
    n++;
  }
  if (!n) {
    skip(pg, "roofline", "no point with a known arithmetic intensity");
  } else {
    header(&s, "Roofline", "arithmetic intensity (FLOP/byte, log)", "GFLOPS (log)");
    bool many = peakn > 0 && bwn > 0 && tn > 1;
    double lo = fmin(xmin, peak1 / bw1) / 4, hi = fmax(xmax, (many ? peakn / bwn : peak1 / bw1)) * 4;
    ob_str_appendf(&s, "set logscale xy\nset xrange [%.6g:%.6g]\nset samples 400\n", lo, hi);
    ob_str_appendf(&s, "r1(x) = (x * %.6g < %.6g) ? x * %.6g : %.6g\n", bw1, peak1, bw1, peak1);
    if (many) ob_str_appendf(&s, "rn(x) = (x * %.6g < %.6g) ? x * %.6g : %.6g\n", bwn, peakn, bwn, peakn);
    if (d1.len) {
      ob_str_append(&s, "$p1 << EOD\n");
      ob_str_append_str(&s, &d1);
      ob_str_append(&s, "EOD\n");
    }
    if (dn.len) {
      ob_str_append(&s, "$pn << EOD\n");
      ob_str_append_str(&s, &dn);
      ob_str_append(&s, "EOD\n");
    }
    ob_str_appendf(&s, "plot r1(x) with lines lw 2 lc rgb '#333333' title 'roof, 1 thread (%.0f GFLOP/s, %.1f GB/s)'",
                   peak1, bw1);
    if (many)
      ob_str_appendf(&s, ", rn(x) with lines lw 2 dt 2 lc rgb '#777777' title 'roof, %d threads (%.0f GFLOP/s, %.1f GB/s)'",
                     tn, peakn, bwn);
    if (d1.len) ob_str_append(&s, ", $p1 with points pt 7 ps 1 lc rgb '#4e79a7' title 'points, 1 thread'");
    if (dn.len) ob_str_append(&s, ", $pn with points pt 5 ps 1 lc rgb '#e15759' title 'points, more threads'");
    ob_str_append(&s, "\n");
    char cap[512];
    snprintf(cap, sizeof cap,
             "Every error-free point measured alone at its arithmetic intensity (FLOPs over the bytes of "
             "its arguments), under the host's measured FMA peak and STREAM triad bandwidth (host %s).",
             host);
    st = plot(pg, "roofline", &s, cap);
  }
  ob_str_free(&s);
  ob_str_free(&d1);
  ob_str_free(&dn);
  return st;
}

static int name_index(char names[][160], int *n, int cap, const char *key) {
  char nm[160];
  short_name(key, nm, sizeof nm);
  for (int i = 0; i < *n; i++)
    if (!strcmp(names[i], nm)) return i;
  if (*n == cap) return -1;
  snprintf(names[*n], 160, "%s", nm);
  return (*n)++;
}

static ob_status plot_corun(page *pg, const ob_db_profiles *P, const char *mode) {
  enum { CAP = 24 };
  char rows[CAP][160], cols[CAP][160];
  int nr = 0, nc = 0;
  double val[CAP][CAP];
  for (int i = 0; i < CAP; i++)
    for (int j = 0; j < CAP; j++) val[i][j] = NAN;
  for (int64_t i = 0; i < P->n; i++) {
    const ob_db_profile *r = &P->p[i];
    if (r->error_no || empty(r->key.corun_mode) || strcmp(r->key.corun_mode, mode) || !isfinite(r->slowdown))
      continue;
    int a = name_index(rows, &nr, CAP, r->key.workload), b = name_index(cols, &nc, CAP, r->key.corun_workload);
    if (a >= 0 && b >= 0) val[a][b] = r->slowdown;
  }
  char name[32];
  snprintf(name, sizeof name, "corun_%s", mode);
  if (!nr) {
    char why[128];
    snprintf(why, sizeof why, "no %s co-run was profiled (opbench profile --corun tasks --corun-mode %s)", mode, mode);
    skip(pg, name, why);
    return OB_OK;
  }
  ob_str s = {0};
  char title[128];
  snprintf(title, sizeof title, "Co-run slowdown (%s: %s)", mode,
           !strcmp(mode, "stream") ? "disjoint cores" : "the same cores, time-sliced");
  header(&s, title, "partner", "operator");
  ob_str_append(&s, "unset key\nset palette defined (0 '#ffffff', 1 '#fdd49e', 2 '#ef6548', 3 '#7f0000')\n"
                    "set cblabel 'slowdown (time beside the partner / time alone)'\n");
  ob_str_appendf(&s, "set xrange [-0.5:%d.5]\nset yrange [-0.5:%d.5]\nset grid noxtics noytics\nset xtics (", nc - 1,
                 nr - 1);
  for (int j = 0; j < nc; j++) {
    ob_str_append(&s, j ? ", " : "");
    quoted(&s, cols[j]);
    ob_str_appendf(&s, " %d", j);
  }
  ob_str_append(&s, ") rotate by -20 font ',9'\nset ytics (");
  for (int i = 0; i < nr; i++) {
    ob_str_append(&s, i ? ", " : "");
    quoted(&s, rows[i]);
    ob_str_appendf(&s, " %d", i);
  }
  ob_str_append(&s, ") font ',9'\nset lmargin 36\nset bmargin 8\n$c << EOD\n");
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < nr; i++)
    for (int j = 0; j < nc; j++)
      if (isfinite(val[i][j])) {
        ob_str_appendf(&s, "%d %d %.4g ", j, i, val[i][j]);
        char lab[32];
        snprintf(lab, sizeof lab, "%.2fx", val[i][j]);
        data_label(&s, lab);
        ob_str_append(&s, "\n");
        lo = fmin(lo, val[i][j]);
        hi = fmax(hi, val[i][j]);
      }
  ob_str_appendf(&s, "EOD\nset cbrange [%.4g:%.4g]\n", fmin(lo, 1.0), fmax(hi, lo + 0.1));
  ob_str_append(&s, "plot $c using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette, "
                    "$c using 1:2:4 with labels font ',10'\n");
  char caption[256];
  snprintf(caption, sizeof caption,
           "Each operator's slowdown beside a partner running at the same time (%s), against itself alone.",
           !strcmp(mode, "stream") ? "stream: on disjoint cores" : "full: on the same cores");
  ob_status st = plot(pg, name, &s, caption);
  ob_str_free(&s);
  return st;
}

/* A timeline's SVG text into svg; OB_ERR_INVALID_ARG naming a file that
 * cannot be read or is not SVG. */
static ob_status read_svg(ob_ctx *ctx, const char *path, ob_str *svg) {
  FILE *f = fopen(path, "rb");
  if (!f) return ob_fail(ctx, OB_ERR_INVALID_ARG, "--schedule %s: %s", path, strerror(errno));
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf - 1, f)) > 0) {
    buf[k] = '\0';
    if (memchr(buf, '\0', k)) break; /* binary: not SVG */
    ob_str_append(svg, buf);
  }
  fclose(f);
  if (svg->failed) return ob_fail(ctx, OB_ERR_NOMEM, "report: out of memory");
  if (!svg->data || !strstr(svg->data, "<svg") || !strstr(svg->data, "</svg>"))
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "--schedule %s: not an SVG timeline (draw one with opbench schedule --timeline FILE.svg)", path);
  return OB_OK;
}

static ob_status timelines(page *pg, const ob_report_opts *o) {
  for (int i = 0; i < o->ntimelines; i++) {
    const char *path = o->timelines[i];
    ob_str svg = {0};
    ob_status rs = read_svg(pg->ctx, path, &svg);
    if (rs) {
      ob_str_free(&svg);
      return rs;
    }
    char name[32], cap[512];
    snprintf(name, sizeof name, "timeline%d", i + 1);
    const char *base = strrchr(path, '/');
    snprintf(cap, sizeof cap, "Schedule timeline %s (opbench schedule --timeline).", base ? base + 1 : path);
    ob_status st = figure(pg, name, svg.data, svg.len, cap);
    ob_str_free(&svg);
    if (st) return st;
  }
  return OB_OK;
}

/* ---- the call ---------------------------------------------------------------------- */

static ob_status limits_table(ob_db *db, ob_str *out) {
  ob_db_host_limits *L = NULL;
  ob_status st = ob_db_get_host_limits(db, NULL, &L);
  if (st) return st;
  if (L->n) {
    ob_str_append(out, "<h2>Host limits</h2>\n<table>\n<tr><th>host</th><th>limit</th><th>ISA</th>"
                       "<th>threads</th><th>value</th><th>checks</th></tr>\n");
    for (int64_t i = 0; i < L->n; i++) {
      const ob_db_host_limit *l = &L->l[i];
      ob_str_append(out, "<tr><td>");
      html_text(out, l->host);
      ob_str_append(out, "</td><td>");
      html_text(out, l->name);
      ob_str_append(out, "</td><td>");
      html_text(out, l->isa && *l->isa ? l->isa : "-");
      ob_str_appendf(out, "</td><td>%d</td><td>%.1f ", l->threads, l->value);
      html_text(out, l->unit ? l->unit : "");
      ob_str_appendf(out, "</td><td>%s", l->verified ? "" : "unverified: ");
      html_text(out, l->note ? l->note : "");
      ob_str_append(out, "</td></tr>\n");
    }
    ob_str_append(out, "</table>\n");
  }
  ob_db_host_limits_free(L);
  return OB_OK;
}

ob_status ob_report_write(ob_ctx *ctx, ob_db *db, const char *out_dir, const ob_report_opts *o,
                          ob_report_stats *stats) {
  OB_ASSERT(db && out_dir && o && stats);
  memset(stats, 0, sizeof *stats);
  ob_db_profiles *P = NULL;
  ob_db_tuning_runs *R = NULL;
  ob_status st = ob_db_query_profiles(db, NULL, &P);
  if (!st) st = ob_db_get_tuning_runs(db, NULL, &R);
  if (st) goto out;
  stats->nprofiles = P->n;
  stats->nruns = R->n;
  if (!P->n && !R->n) {
    st = ob_fail(ctx, OB_ERR_NOT_FOUND,
                 "%s holds no profiles and no tuning runs: nothing to report (run opbench profile or "
                 "opbench tune with --db first)",
                 o->db_name ? o->db_name : "the database");
    goto out;
  }
  /* every input checked before anything is written */
  for (int i = 0; i < o->ntimelines && !st; i++) {
    ob_str svg = {0};
    st = read_svg(ctx, o->timelines[i], &svg);
    ob_str_free(&svg);
  }
  if (st) goto out;
  struct stat sb;
  if (stat(out_dir, &sb) == 0) {
    if (!S_ISDIR(sb.st_mode)) {
      st = ob_fail(ctx, OB_ERR_INVALID_ARG, "--out %s: exists and is not a folder", out_dir);
      goto out;
    }
  } else if (mkdir(out_dir, 0777) != 0) {
    st = ob_fail(ctx, OB_ERR_IO, "--out %s: cannot create the folder: %s", out_dir, strerror(errno));
    goto out;
  }
  page pg = {.ctx = ctx, .dir = out_dir, .stats = stats};
  if (R->n) st = plot_tuning(&pg, db, R);
  else skip(&pg, "tuning", "no tuning runs in the database (opbench tune --db)");
  if (!st) st = plot_threads(&pg, P);
  if (!st) st = plot_sizes(&pg, P);
  if (!st) st = plot_knobs(&pg, P);
  if (!st) st = plot_roofline(&pg, db, P);
  if (!st) st = plot_corun(&pg, P, "stream");
  if (!st) st = plot_corun(&pg, P, "full");
  if (!st) st = timelines(&pg, o);
  ob_str html = {0};
  if (!st) {
    const char *title = o->title ? o->title : "opbench report";
    ob_str_append(&html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    html_text(&html, title);
    ob_str_append(&html,
                  "</title>\n<style>\nbody{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}\n"
                  "figure{margin:2em 0;border-top:1px solid #ddd;padding-top:1em}\nimg.plot{width:100%;"
                  "height:auto}\nimg.broken{outline:4px solid red}\ntable{border-collapse:collapse;font-size:"
                  "90%}\ntd,th{border:1px solid #ccc;padding:2px 6px;text-align:left}\n</style>\n</head>\n"
                  "<body>\n<h1>");
    html_text(&html, title);
    ob_str_append(&html, "</h1>\n<p>");
    html_text(&html, o->db_name ? o->db_name : "");
    ob_str_appendf(&html, ": %lld profile points, %lld tuning runs, %d plots.</p>\n", (long long)P->n,
                   (long long)R->n, stats->nplots);
    st = limits_table(db, &html);
    ob_str_append_str(&html, &pg.body);
    if (pg.skipped.len) {
      ob_str_append(&html, "<h2>Plots left out</h2>\n<ul>\n");
      ob_str_append_str(&html, &pg.skipped);
      ob_str_append(&html, "</ul>\n");
    }
    /* marks each plot as loaded or broken once the page has loaded: what a
     * reader sees (a red frame) and what the browser test reads */
    ob_str_append(&html,
                  "<script>\nwindow.addEventListener('load', function () {\n"
                  "  var ok = 0, bad = 0;\n"
                  "  document.querySelectorAll('img.plot').forEach(function (im) {\n"
                  "    if (im.complete && im.naturalWidth > 0) { ok++; im.setAttribute('data-loaded', 'yes'); }\n"
                  "    else { bad++; im.className += ' broken'; im.setAttribute('data-loaded', 'no'); }\n"
                  "  });\n"
                  "  document.body.setAttribute('data-plots-loaded', ok);\n"
                  "  document.body.setAttribute('data-plots-broken', bad);\n"
                  "});\n</script>\n</body>\n</html>\n");
  }
  if (!st && (pg.body.failed || html.failed)) st = ob_fail(ctx, OB_ERR_NOMEM, "report: out of memory");
  if (!st) {
    char path[4096];
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    st = write_file(ctx, path, html.data, html.len);
  }
  ob_str_free(&html);
  ob_str_free(&pg.body);
  ob_str_free(&pg.skipped);
out:
  ob_db_profiles_free(P);
  ob_db_tuning_runs_free(R);
  return st;
}
