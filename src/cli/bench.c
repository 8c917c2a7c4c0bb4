/* bench.c: `opbench bench`: reads a suite (a list of workloads taken from a
 * real model, one per line: `op shape [stride pad] count`), refuses it
 * whole on the first malformed line, then measures the default config of
 * every workload and prints a table plus the geometric mean of GFLOPS and
 * the count-weighted total latency. The suite text, its entries and their
 * tasks belong to this file and are freed on every path.
 * --search finds each workload's best config over all templates of its
 * operator (ob_search_best); --vs onednn measures oneDNN on the same
 * workloads in the same process and prints speed ratios (oneDNN time /
 * opbench time). */
#include "cli.h"

#include "opbench/baseline.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_entry {
  int line;
  char op[32];
  char shape[128];
  char stride[24], pad[24]; /* "" when the line gives none */
  int64_t count;
  ob_workload wl;
  ob_task *task;
  ob_measure_result res;          /* default config of the default template */
  bool searched;
  ob_measure_result best;         /* best found (res when not searched) */
  char best_tmpl[64];
  char best_cfg[512];
  double search_s;
  int measured;
  bool have_base;
  ob_baseline_result base;
} bench_entry;

/* Reads a whole file into a malloc'd string; NULL with errno on failure. */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ob_str s = {0};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
    buf[n] = '\0';
    if (strlen(buf) != n) { /* a NUL byte: not a text file */
      fclose(f);
      ob_str_free(&s);
      errno = EINVAL;
      return NULL;
    }
    ob_str_append(&s, buf);
  }
  int err = ferror(f) ? EIO : 0;
  fclose(f);
  if (err) {
    ob_str_free(&s);
    errno = err;
    return NULL;
  }
  char *text = ob_str_take(&s); /* "" for an empty file */
  if (!text) errno = ENOMEM;
  return text;
}

/* Copies a token into a fixed field; false if it does not fit. */
static bool copy_tok(char *dst, size_t cap, const char *tok) {
  if (strlen(tok) >= cap) return false;
  strcpy(dst, tok);
  return true;
}

/* Parses one non-empty, comment-stripped line. Prints "FILE:LINE: ..." and
 * returns false when it is malformed. */
static bool parse_line(ob_ctx *ctx, const char *file, int lineno, char *line, bench_entry *e) {
  enum { MAXTOK = 8 };
  char *tok[MAXTOK];
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " \t\r\v\f", &save); t; t = strtok_r(NULL, " \t\r\v\f", &save)) {
    if (n == MAXTOK) {
      n++;
      break;
    }
    tok[n++] = t;
  }
  memset(e, 0, sizeof *e);
  e->line = lineno;
  if (n != 3 && n != 5) {
    cli_error("%s:%d: expected 'op shape [stride pad] count' (3 or 5 columns), got %s%d", file,
              lineno, n > MAXTOK ? "more than " : "", n > MAXTOK ? MAXTOK : n);
    return false;
  }
  if (!ob_op_exists(tok[0])) {
    ob_workload tmp;
    ob_workload_parse(ctx, tok[0], tok[1], &tmp); /* its message lists the known ops */
    cli_error("%s:%d: %s", file, lineno, ob_ctx_errmsg(ctx));
    return false;
  }
  if (!copy_tok(e->op, sizeof e->op, tok[0]) || !copy_tok(e->shape, sizeof e->shape, tok[1])) {
    cli_error("%s:%d: column too long: '%s'", file, lineno, tok[1]);
    return false;
  }
  const char *count = tok[n - 1];
  if (!cli_parse_i64(count, 1, INT32_MAX, &e->count)) {
    cli_error("%s:%d: bad count '%s' (expected an integer >= 1)", file, lineno, count);
    return false;
  }
  if (n == 5) {
    int64_t v;
    for (int i = 1; i <= 2; i++) {
      if (!cli_parse_i64(tok[1 + i], 0, INT32_MAX, &v)) {
        cli_error("%s:%d: bad %s '%s' (expected an integer >= 0)", file, lineno,
                  i == 1 ? "stride" : "pad", tok[1 + i]);
        return false;
      }
    }
    copy_tok(e->stride, sizeof e->stride, tok[2]);
    copy_tok(e->pad, sizeof e->pad, tok[3]);
  }
  if (cli_workload(ctx, e->op, e->shape, e->stride[0] ? e->stride : NULL,
                   e->pad[0] ? e->pad : NULL, NULL, NULL, false, &e->wl) != OB_OK) {
    cli_error("%s:%d: %s", file, lineno, ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

/* Parses the whole suite into *out (malloc'd, *n entries). */
static bool parse_suite(ob_ctx *ctx, const char *file, char *text, bench_entry **out, int *n) {
  int cap = 0, len = 0, lineno = 0;
  bench_entry *v = NULL;
  char *p = text;
  while (p && *p) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    lineno++;
    char *hash = strchr(p, '#');
    if (hash) *hash = '\0';
    if (p[strspn(p, " \t\r\v\f")] != '\0') {
      if (len == cap) {
        cap = cap ? 2 * cap : 16;
        bench_entry *g = realloc(v, (size_t)cap * sizeof *v);
        if (!g) {
          cli_error("out of memory reading suite %s", file);
          free(v);
          return false;
        }
        v = g;
      }
      if (!parse_line(ctx, file, lineno, p, &v[len])) {
        free(v);
        return false;
      }
      len++;
    }
    p = nl ? nl + 1 : NULL;
  }
  if (len == 0) {
    cli_error("%s: the suite lists no workloads", file);
    free(v);
    return false;
  }
  *out = v;
  *n = len;
  return true;
}

static void print_header(void) {
  printf("%3s %-8s %-36s %6s %6s %5s %10s %11s %7s  %s\n", "#", "workload", "shape", "stride",
         "pad", "count", "GFLOPS", "median ms", "CV %", "error");
}

static void print_vs_header(bool vs) {
  printf("%3s %-16s %-34s %4s %3s %5s %9s %9s %9s %8s %8s %8s  %s\n", "#", "workload", "shape", "str", "pad",
         "count", "best", "default", vs ? "onednn" : "-", vs ? "best/dnn" : "-", vs ? "dflt/dnn" : "-",
         "search s", "best template / config");
}

/* Speed ratio: baseline time / opbench time (> 1: opbench is faster). */
static double ratio(const ob_measure_result *r, const ob_baseline_result *b) {
  return r->error_no || b->error_no || r->median_s <= 0 ? 0 : b->median_s / r->median_s;
}

static void print_vs_row(int i, const bench_entry *e) {
  printf("%3d %-16s %-34s %4s %3s %5lld", i + 1, e->op, e->shape, e->stride[0] ? e->stride : "-",
         e->pad[0] ? e->pad : "-", (long long)e->count);
  printf(" %9.2f %9.2f", e->best.error_no ? 0 : e->best.gflops, e->res.error_no ? 0 : e->res.gflops);
  if (e->have_base && !e->base.error_no)
    printf(" %9.2f %8.3f %8.3f", e->base.gflops, ratio(&e->best, &e->base), ratio(&e->res, &e->base));
  else if (e->have_base)
    printf(" %9s %8s %8s", "err", "-", "-");
  else
    printf(" %9s %8s %8s", "-", "-", "-");
  printf(" %8.1f  %s %s\n", e->search_s, e->best_tmpl, e->best_cfg);
  if (e->have_base && e->base.error_no)
    printf("    onednn: error %d %s: %.200s\n", e->base.error_no, ob_merr_str(e->base.error_no), e->base.message);
}

static void print_row(int i, const bench_entry *e, bool measured) {
  printf("%3d %-8s %-36s %6s %6s %5lld", i + 1, e->op, e->shape, e->stride[0] ? e->stride : "-",
         e->pad[0] ? e->pad : "-", (long long)e->count);
  if (!measured) {
    printf("\n");
  } else if (e->res.error_no == OB_MERR_NONE) {
    printf(" %10.2f %11.4f %7.2f  %d\n", e->res.gflops, e->res.median_s * 1e3, e->res.cv * 100,
           0);
  } else {
    printf(" %10s %11s %7s  %d %s: %.160s\n", "-", "-", "-", e->res.error_no,
           ob_merr_str(e->res.error_no), e->res.message);
  }
}

int cli_cmd_bench(ob_ctx *ctx, const cli_args *a) {
  int rc = OB_CLI_EXIT_ERROR;
  bench_entry *es = NULL;
  int n = 0;
  ob_runner *runner = NULL;
  ob_baseline *base = NULL;
  cJSON *root = NULL;
  char *json = NULL;
  const char *file = a->suite;
  char *text = NULL;

  if (strcmp(a->suite, "resnet18") == 0) {
    text = strdup(cli_suite_resnet18);
  } else if (!(text = read_file(a->suite))) {
    cli_error("--suite: cannot read '%s': %s", a->suite, strerror(errno));
    goto done;
  }
  if (!text) {
    cli_error("out of memory");
    goto done;
  }
  if (!parse_suite(ctx, file, text, &es, &n)) goto done;

  if (a->dry_run) {
    print_header();
    for (int i = 0; i < n; i++) print_row(i, &es[i], false);
    printf("%d workloads (not measured: --dry-run)\n", n);
    rc = 0;
    goto done;
  }

  for (int i = 0; i < n; i++) {
    if (ob_task_new(ctx, &es[i].wl, NULL, &es[i].task) != OB_OK) {
      cli_error("%s:%d: %s", file, es[i].line, ob_ctx_errmsg(ctx));
      goto done;
    }
  }
  if (ob_runner_new(ctx, &runner) != OB_OK) {
    cli_error("cannot start the runner: %s", ob_ctx_errmsg(ctx));
    goto done;
  }

  if (a->vs && ob_baseline_onednn_new(ctx, a->mo.cores, a->mo.nthreads, &base) != OB_OK) {
    cli_error("--vs onednn: %s", ob_ctx_errmsg(ctx));
    goto done;
  }
  bool wide = a->vs || a->search_budget;
  int nok = 0, nfail = 0, nratio = 0;
  double logsum = 0, total_ms = 0, log_best = 0, log_dflt = 0;
  for (int i = 0; i < n; i++) {
    bench_entry *e = &es[i];
    ob_config cfg = ob_task_default_config(e->task);
    if (ob_measure_configs(ctx, e->task, runner, &a->mo, &cfg, 1, &e->res) != OB_OK) {
      cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
      goto done;
    }
    e->best = e->res;
    snprintf(e->best_tmpl, sizeof e->best_tmpl, "%s", ob_task_template(e->task));
    char *cs = ob_config_str(&cfg);
    snprintf(e->best_cfg, sizeof e->best_cfg, "%s", cs ? cs : "");
    free(cs);
    if (a->search_budget) {
      const char *names[8];
      int nt = ob_op_templates(e->op, names, 8);
      for (int t = 0; t < nt && t < 8; t++) {
        ob_task *tk = NULL;
        ob_search_result sr;
        ob_search_opts so = {.budget = a->search_budget, .seed = a->mo.seed + (uint64_t)i};
        if (ob_task_new(ctx, &e->wl, names[t], &tk) != OB_OK) {
          cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
          goto done;
        }
        ob_status st = ob_search_best(ctx, tk, runner, &a->mo, &so, &sr);
        if (st == OB_OK) {
          e->search_s += sr.seconds;
          e->measured += sr.measured;
          if (e->best.error_no || sr.best_result.median_s < e->best.median_s) {
            e->best = sr.best_result;
            snprintf(e->best_tmpl, sizeof e->best_tmpl, "%s", names[t]);
            cs = ob_config_str(&sr.best);
            snprintf(e->best_cfg, sizeof e->best_cfg, "%s", cs ? cs : "");
            free(cs);
          }
        } else if (st != OB_ERR_RUNTIME) { /* no config ran is a result; the rest is not */
          cli_error("%s:%d: %s", file, e->line, ob_ctx_errmsg(ctx));
          ob_task_free(tk);
          goto done;
        }
        ob_task_free(tk);
      }
      e->searched = true;
    }
    if (base) {
      if (ob_baseline_measure(base, &e->wl, &a->mo.timing, a->mo.seed, &e->base) != OB_OK) {
        cli_error("%s:%d: onednn: %s", file, e->line, ob_ctx_errmsg(ctx));
        goto done;
      }
      e->have_base = true;
      double rb = ratio(&e->best, &e->base), rd = ratio(&e->res, &e->base);
      if (rb > 0 && rd > 0) {
        log_best += log(rb);
        log_dflt += log(rd);
        nratio++;
      }
    }
    if (wide && !a->json) {
      if (i == 0) {
        printf("suite %s: %d workloads, %d thread(s), number %d, repeat %d, search %s, baseline %s%s%s\n",
               strcmp(file, "resnet18") == 0 ? "resnet18 (built in)" : file, n, a->mo.nthreads,
               a->mo.timing.number, a->mo.timing.repeat, a->search_budget ? "on" : "off",
               base ? ob_baseline_describe(base) : "none", a->search_budget ? "" : "",
               "; GFLOPS columns, ratios = oneDNN time / opbench time");
        print_vs_header(base != NULL);
      }
      print_vs_row(i, e);
      fflush(stdout);
    }
    if (e->res.error_no == OB_MERR_NONE && e->res.gflops > 0) {
      nok++;
      logsum += log(e->res.gflops);
      total_ms += (double)e->count * e->res.median_s * 1e3;
    } else {
      nfail++;
    }
    if (!a->json && !wide) {
      /* The heading waits for the first result, so that a failure to measure
       * at all (no compiler) leaves stdout empty. */
      if (i == 0) {
        printf("suite %s: %d workloads, default configs, %d thread(s), number %d, repeat %d\n",
               strcmp(file, "resnet18") == 0 ? "resnet18 (built in)" : file, n,
               a->mo.nthreads, a->mo.timing.number, a->mo.timing.repeat);
        print_header();
      }
      print_row(i, e, true);
      fflush(stdout);
    }
  }
  double geomean = nok ? exp(logsum / nok) : 0;

  if (a->json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "suite", file);
    cJSON_AddNumberToObject(root, "threads", a->mo.nthreads);
    cJSON_AddNumberToObject(root, "number", a->mo.timing.number);
    cJSON_AddNumberToObject(root, "repeat", a->mo.timing.repeat);
    cJSON *arr = cJSON_AddArrayToObject(root, "workloads");
    for (int i = 0; i < n; i++) {
      const bench_entry *e = &es[i];
      char key[256];
      ob_workload_key(&e->wl, key, sizeof key);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "line", e->line);
      cJSON_AddStringToObject(o, "op", e->op);
      cJSON_AddStringToObject(o, "shape", e->shape);
      if (e->stride[0]) cJSON_AddNumberToObject(o, "stride", atof(e->stride));
      if (e->pad[0]) cJSON_AddNumberToObject(o, "pad", atof(e->pad));
      cJSON_AddNumberToObject(o, "count", (double)e->count);
      cJSON_AddStringToObject(o, "workload", key);
      cJSON_AddStringToObject(o, "template", ob_task_template(e->task));
      ob_config cfg = ob_task_default_config(e->task);
      char *cj = NULL;
      if (ob_config_to_json(ctx, &cfg, &cj) == OB_OK) {
        cJSON *c = cJSON_Parse(cj);
        if (c) cJSON_AddItemToObject(o, "config", c);
      }
      free(cj);
      cJSON_AddNumberToObject(o, "error_no", e->res.error_no);
      cJSON_AddStringToObject(o, "error", ob_merr_str(e->res.error_no));
      cJSON_AddStringToObject(o, "message", e->res.message);
      cJSON_AddNumberToObject(o, "gflops", e->res.gflops);
      cJSON_AddNumberToObject(o, "median_ms", e->res.median_s * 1e3);
      cJSON_AddNumberToObject(o, "mean_ms", e->res.mean_s * 1e3);
      cJSON_AddNumberToObject(o, "cv", e->res.cv);
      cJSON *costs = cJSON_AddArrayToObject(o, "costs_ms");
      for (int k = 0; k < e->res.ncosts; k++)
        cJSON_AddItemToArray(costs, cJSON_CreateNumber(e->res.costs[k] * 1e3));
      cJSON_AddNumberToObject(o, "build_s", e->res.build_s);
      if (e->searched) {
        cJSON_AddNumberToObject(o, "best_gflops", e->best.gflops);
        cJSON_AddNumberToObject(o, "best_median_ms", e->best.median_s * 1e3);
        cJSON_AddStringToObject(o, "best_template", e->best_tmpl);
        cJSON_AddStringToObject(o, "best_config", e->best_cfg);
        cJSON_AddNumberToObject(o, "search_s", e->search_s);
        cJSON_AddNumberToObject(o, "configs_measured", e->measured);
      }
      if (e->have_base) {
        cJSON_AddNumberToObject(o, "onednn_error_no", e->base.error_no);
        cJSON_AddNumberToObject(o, "onednn_gflops", e->base.gflops);
        cJSON_AddNumberToObject(o, "onednn_median_ms", e->base.median_s * 1e3);
        cJSON_AddStringToObject(o, "onednn_impl", e->base.impl);
        cJSON_AddNumberToObject(o, "ratio_best", ratio(&e->best, &e->base));
        cJSON_AddNumberToObject(o, "ratio_default", ratio(&e->res, &e->base));
      }
      cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddNumberToObject(root, "geomean_gflops", geomean);
    cJSON_AddNumberToObject(root, "total_weighted_ms", total_ms);
    cJSON_AddNumberToObject(root, "failed", nfail);
    if (base) {
      cJSON_AddNumberToObject(root, "geomean_ratio_best", nratio ? exp(log_best / nratio) : 0);
      cJSON_AddNumberToObject(root, "geomean_ratio_default", nratio ? exp(log_dflt / nratio) : 0);
    }
    if (!(json = cJSON_Print(root))) {
      cli_error("out of memory printing JSON");
      goto done;
    }
    printf("%s\n", json);
  } else {
    printf("total weighted latency (sum of count x median): %.3f ms%s\n", total_ms,
           nfail ? " (failed workloads excluded)" : "");
    printf("geomean GFLOPS (default configs): %.2f\n", geomean);
    if (base)
      printf("geomean speed ratio opbench/onednn: %.3f (default: %.3f)%s\n",
             nratio ? exp(log_best / nratio) : 0, nratio ? exp(log_dflt / nratio) : 0,
             nratio < n ? " (workloads where either side failed excluded)" : "");
  }
  fflush(stdout);
  if (nfail) {
    cli_error("%d of %d workloads failed (see the error column)", nfail, n);
    goto done;
  }
  rc = 0;

done:
  cJSON_free(json);
  cJSON_Delete(root);
  for (int i = 0; i < n; i++) ob_task_free(es[i].task);
  free(es);
  free(text);
  ob_runner_free(runner);
  ob_baseline_free(base);
  return rc;
}
