/* timeline.c: a schedule drawn as a timeline, by gnuplot run as a program
 * (Debian's gnuplot-nox): time across, cores up, one bar per group over its
 * cores for its time within its stage, stage boundaries as thin lines.
 * gnuplot reads a script from a temporary file and writes SVG on its
 * standard output, which goes to the output through ob_out (a temporary
 * file renamed into place), so a failure leaves nothing half-written. */
#include <stdio.h>
#include <stdlib.h>

#include "sched/sched_impl.h"

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

static const unsigned k_colors[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xb07aa1, 0x76b7b2, 0xedc948, 0xff9da7, 0x9c755f};

static ob_status script(ob_ctx *ctx, const ob_schedule *s, const char *title, ob_str *out) {
  double total = ob_schedule_seconds(s);
  if (total < 0) return ob_fail(ctx, OB_ERR_INVALID_ARG, "the schedule has no stage costs to draw (cost it first)");
  int N = s->cores;
  int width = 1200, height = 160 + 40 * (N < 64 ? N : 64);
  ob_str_appendf(out, "set terminal svg size %d,%d noenhanced font 'sans,11' background rgb 'white'\n", width, height);
  ob_str_append(out, "set title ");
  quoted(out, title ? title : "");
  ob_str_appendf(out, "\nset xlabel '%s'\nset ylabel 'core'\n",
                 s->predicted ? "time (ms, predicted)" : "time (ms)");
  ob_str_appendf(out, "set xrange [0:%.9g]\nset yrange [-0.6:%g]\nset ytics 0,1,%d\nset grid noxtics noytics\n",
                 total * 1e3 * 1.001, N - 0.4, N - 1);
  ob_str_append(out, "set style fill solid 0.75 border rgb '#333333'\nunset key\n");
  /* stage boundaries (when they are few enough to see) */
  double t = 0;
  if (s->n <= 400)
    for (int i = 0; i < s->n; i++) {
      if (i) ob_str_appendf(out, "set arrow from %.9g,graph 0 to %.9g,graph 1 nohead lc rgb '#dddddd' lw 0.5 back\n", t * 1e3, t * 1e3);
      t += s->st[i].seconds;
    }
  /* bars: x_lo x_hi y_lo y_hi colour, one per run of consecutive cores */
  ob_str_append(out, "$bars << EOD\n");
  t = 0;
  for (int i = 0; i < s->n; i++) {
    const sstage *st = &s->st[i];
    for (int g = 0; g < st->ngroups; g++) {
      const sgroup *gr = &st->groups[g];
      double len = gr->seconds >= 0 && gr->seconds <= st->seconds ? gr->seconds : st->seconds;
      unsigned col = st->kind == OB_SCHED_STAGE_MERGE ? 0xe15759 : k_colors[g % 8];
      for (int c = 0; c < gr->ncores;) {
        int lo = gr->cores[c], hi = lo;
        while (c + 1 < gr->ncores && gr->cores[c + 1] == hi + 1) hi = gr->cores[++c];
        c++;
        ob_str_appendf(out, "%.9g %.9g %g %g %u\n", t * 1e3, (t + len) * 1e3, lo - 0.4, hi + 0.4, col);
      }
    }
    t += st->seconds;
  }
  ob_str_append(out, "EOD\n");
  ob_str_append(out, "plot $bars using (($1+$2)/2):(($3+$4)/2):1:2:3:4:5 with boxxyerror lc rgb variable\n");
  return OB_OK;
}

ob_status ob_schedule_timeline(ob_ctx *ctx, const ob_sched_units *u, const ob_schedule *s, const char *path,
                               const char *title) {
  (void)u;
  ob_str sc = {0}, svg = {0};
  ob_status st = script(ctx, s, title, &sc);
  if (!st) st = ob_gnuplot_svg(ctx, "timeline", NULL, &sc, &svg);
  if (st) goto done;
  ob_out o;
  if ((st = ob_out_open(ctx, path, NULL, 0, &o))) goto done;
  bool ok = fwrite(svg.data, 1, svg.len, o.f) == svg.len;
  st = ob_out_close(ctx, &o, ok);
  if (!st && !ok) st = ob_fail(ctx, OB_ERR_IO, "%s: write failed", path);
done:
  ob_str_free(&sc);
  ob_str_free(&svg);
  return st;
}
