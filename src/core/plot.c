/* plot.c: gnuplot driven as a program (Debian's gnuplot-nox): a script in,
 * the SVG it prints out. The report's plots and the scheduler's timelines
 * both draw through it, so a missing gnuplot or a failing script reads the
 * same everywhere. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opbench/core.h"

ob_status ob_gnuplot_svg(ob_ctx *ctx, const char *who, const char *what, const ob_str *script, ob_str *svg) {
  if (script->failed) return ob_fail(ctx, OB_ERR_NOMEM, "%s: out of memory", who);
  char spath[] = "/tmp/opbench-gnuplot-XXXXXX", epath[] = "/tmp/opbench-gnuplot-err-XXXXXX";
  int sfd = mkstemp(spath), efd = sfd >= 0 ? mkstemp(epath) : -1;
  ob_status st = OB_OK;
  FILE *p = NULL;
  if (sfd < 0 || efd < 0) {
    st = ob_fail(ctx, OB_ERR_IO, "%s: cannot create a temporary file: %s", who, strerror(errno));
    goto done;
  }
  if (write(sfd, script->data, script->len) != (ssize_t)script->len) {
    st = ob_fail(ctx, OB_ERR_IO, "%s: cannot write the gnuplot script: %s", who, strerror(errno));
    goto done;
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "gnuplot %s 2>%s", spath, epath);
  p = popen(cmd, "r");
  if (!p) {
    st = ob_fail(ctx, OB_ERR_SYSTEM, "%s: cannot run gnuplot: %s", who, strerror(errno));
    goto done;
  }
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf - 1, p)) > 0) {
    buf[k] = '\0';
    ob_str_append(svg, buf);
  }
  int rc = pclose(p);
  p = NULL;
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0 || !svg->data || !strstr(svg->data, "</svg>")) {
    char err[512] = "";
    FILE *ef = fopen(epath, "r");
    if (ef) {
      size_t n = fread(err, 1, sizeof err - 1, ef);
      err[n] = '\0';
      fclose(ef);
    }
    for (char *q = err; *q; q++)
      if (*q == '\n') *q = ' ';
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 127)
      st = ob_fail(ctx, OB_ERR_UNSUPPORTED, "%s: gnuplot is not installed (Debian package gnuplot-nox)", who);
    else
      st = ob_fail(ctx, OB_ERR_IO, "%s: gnuplot failed%s%s%s (status %d)%s%.400s", who, what ? " on the " : "",
                   what ? what : "", what ? " plot" : "", rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1,
                   err[0] ? ": " : "", err);
  } else if (svg->failed) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "%s: out of memory", who);
  }
done:
  if (p) pclose(p);
  if (sfd >= 0) {
    close(sfd);
    unlink(spath);
  }
  if (efd >= 0) {
    close(efd);
    unlink(epath);
  }
  return st;
}
