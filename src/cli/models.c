/* models.c: the model commands of `opbench`: models (the zoo; one model's
 * graph, passes and tasks), export-onnx, run-reference (with NumPy .npy
 * input and output) and space --modelname (the config space of every task
 * of a model). Parsing and printing only: the graph module does the work. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "opbench/graph.h"

static ob_model_opts model_opts(const cli_args *a) {
  ob_model_opts o = ob_model_opts_default();
  o.source = a->modelsource ? a->modelsource : "local";
  o.name = a->modelname;
  o.path = a->modelpath;
  o.batch = a->batchsize ? a->batchsize : 1;
  o.seqlen = a->seqlen;
  o.input_size = a->input_size;
  o.hidden = a->hidden;
  o.seed = a->seed_set ? a->mo.seed : 1;
  o.sha256 = a->sha256;
  o.max_bytes = a->max_download;
  return o;
}

/* The lanes the layout pass blocks channels by: --lanes, else the float
 * lanes of the target (--target, else the default target). */
static int host_lanes(ob_ctx *ctx, const cli_args *a) {
  if (a->lanes) return a->lanes;
  ob_target *t = NULL;
  ob_status st = a->target ? ob_target_parse(ctx, a->target, &t) : ob_target_host(ctx, &t);
  int lanes = st ? 8 : ob_target_get_facts(t)->lanes_f32; /* a bad --target is reported by its command */
  ob_ctx_clear_error(ctx);
  ob_target_free(t);
  return lanes;
}

static int live_nodes(const ob_graph *g) {
  int k = 0;
  for (int i = 0; i < ob_graph_node_count(g); i++) k += !ob_graph_node_dead(g, i);
  return k;
}

ob_graph *cli_model_load(ob_ctx *ctx, const cli_args *a, bool zero_weights) {
  ob_model_opts o = model_opts(a);
  o.zero_weights = zero_weights;
  ob_graph *g = NULL;
  if (ob_model_load(ctx, &o, &g) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  return g;
}

/* Loads the model of the flags; prints the error and returns NULL on failure. */
static ob_graph *load(ob_ctx *ctx, const cli_args *a) {
  ob_model_opts o = model_opts(a);
  ob_graph *g = NULL;
  if (ob_model_load(ctx, &o, &g) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    return NULL;
  }
  return g;
}

static const ob_zoo_info *zoo_find(const char *source, const char *name) {
  for (int i = 0; i < ob_zoo_count(); i++) {
    const ob_zoo_info *z = ob_zoo_info_at(i);
    if (!strcmp(z->source, source) && name && !strcasecmp(z->name, name)) return z;
  }
  return NULL;
}

static void rel(char *buf, size_t cap, double v, double pub) {
  if (pub > 0) snprintf(buf, cap, "%+.1f%%", 100.0 * (v - pub) / pub);
  else snprintf(buf, cap, "-");
}

static int list_zoo(ob_ctx *ctx, const cli_args *a) {
  printf("%-13s %-18s %9s %9s %6s %9s %9s %6s  %s\n", "source", "model", "GMACs", "published", "diff", "Mparams", "published",
         "diff", "description");
  for (int i = 0; i < ob_zoo_count(); i++) {
    const ob_zoo_info *z = ob_zoo_info_at(i);
    ob_model_opts o = model_opts(a);
    o.source = z->source;
    o.name = z->name;
    o.zero_weights = true; /* only counted */
    ob_graph *g = NULL;
    if (ob_model_load(ctx, &o, &g) != OB_OK) return cli_error("%s", ob_ctx_errmsg(ctx));
    double macs = ob_graph_macs(g), params = (double)ob_graph_params(g);
    char d1[16], d2[16], p1[16], p2[16];
    rel(d1, sizeof d1, macs, z->pub_macs);
    /* inception-v3's published count includes the AuxLogits head */
    double pp = z->pub_params;
    if (!strcmp(z->name, "inception-v3")) pp -= 3326696;
    rel(d2, sizeof d2, params, pp);
    snprintf(p1, sizeof p1, z->pub_macs > 0 ? "%.3f" : "-", z->pub_macs / 1e9);
    snprintf(p2, sizeof p2, z->pub_params > 0 ? "%.3f" : "-", pp / 1e6);
    printf("%-13s %-18s %9.3f %9s %6s %9.3f %9s %6s  %s\n", z->source, z->name, macs / 1e9, p1, d1, params / 1e6, p2, d2,
           z->description);
    ob_graph_free(g);
  }
  printf("GMACs: multiply-adds of Conv/Gemm/MatMul/LSTM at the default input and batch 1 (--batchsize,\n"
         "--input-size, --seqlen change them); parameters: trained weights (batch-norm statistics,\n"
         "masks and shape constants excluded). inception-v3's published 27.161 M parameters include\n"
         "the AuxLogits head (3.327 M), which is off here. opbench models --modelname M: one model.\n");
  return 0;
}

static int one_model(ob_ctx *ctx, const cli_args *a) {
  ob_graph *g = load(ctx, a);
  if (!g) return OB_CLI_EXIT_ERROR;
  int rc = OB_CLI_EXIT_ERROR;
  ob_graph_task *tasks = NULL;
  cJSON *j = NULL;
  const char *src = a->modelsource ? a->modelsource : "local";
  const ob_zoo_info *z = zoo_find(src, a->modelname ? a->modelname : (!strcmp(src, "simple") ? "simple" : NULL));
  double macs = ob_graph_macs(g);
  int64_t params = ob_graph_params(g);
  int nodes0 = live_nodes(g);
  ob_graph_pass_stats ps = {0};
  int lanes = host_lanes(ctx, a);
  if (!a->no_passes && ob_graph_optimize(ctx, g, lanes, &ps) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int nt = 0;
  if (ob_graph_tasks(ctx, g, &tasks, &nt) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int keep = a->key_ops > 0 ? ob_graph_key_tasks(tasks, nt, a->key_ops) : nt;
  double tot = 0;
  for (int i = 0; i < nt; i++) tot += tasks[i].count * tasks[i].flops;
  if (a->print_graph && !a->json) {
    ob_str s = {0};
    ob_graph_print(g, &s);
    fputs(s.data, stdout);
    ob_str_free(&s);
  }
  if (a->json) {
    j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", ob_graph_name(g));
    cJSON_AddStringToObject(j, "source", src);
    cJSON_AddNumberToObject(j, "macs", macs);
    cJSON_AddNumberToObject(j, "params", (double)params);
    cJSON_AddNumberToObject(j, "nodes_before", nodes0);
    cJSON_AddNumberToObject(j, "nodes_after", live_nodes(g));
    cJSON *jt = cJSON_AddArrayToObject(j, "tasks");
    for (int i = 0; i < keep; i++) {
      cJSON *t = cJSON_CreateObject();
      cJSON_AddStringToObject(t, "op", tasks[i].wl.op);
      cJSON_AddStringToObject(t, "workload", tasks[i].key);
      cJSON_AddNumberToObject(t, "count", tasks[i].count);
      cJSON_AddNumberToObject(t, "flops", tasks[i].flops);
      cJSON_AddNumberToObject(t, "share", tasks[i].share);
      cJSON_AddItemToArray(jt, t);
    }
    cJSON_AddNumberToObject(j, "tasks_total", nt);
    char *txt = cJSON_PrintUnformatted(j);
    printf("%s\n", txt);
    free(txt);
    rc = 0;
    goto done;
  }
  printf("model      %s (%s)%s%s\n", ob_graph_name(g), src, z ? ": " : "", z ? z->description : "");
  char sh[256];
  for (int i = 0; i < ob_graph_input_count(g); i++) {
    int t = ob_graph_input(g, i);
    cli_shape_text(g, t, sh, sizeof sh);
    printf("input      %s %s %s\n", ob_graph_tensor_name(g, t), sh, cli_dtype_text(ob_graph_tensor_dtype(g, t)));
  }
  for (int i = 0; i < ob_graph_output_count(g); i++) {
    int t = ob_graph_output(g, i);
    cli_shape_text(g, t, sh, sizeof sh);
    printf("output     %s %s %s\n", ob_graph_tensor_name(g, t), sh, cli_dtype_text(ob_graph_tensor_dtype(g, t)));
  }
  char d1[16] = "", d2[16] = "";
  if (z && z->pub_macs > 0 && !a->input_size && !a->seqlen && (!a->batchsize || a->batchsize == 1)) {
    rel(d1, sizeof d1, macs, z->pub_macs);
    printf("macs       %.3f G multiply-adds (published %.3f G, %s)\n", macs / 1e9, z->pub_macs / 1e9, d1);
  } else {
    printf("macs       %.3f G multiply-adds\n", macs / 1e9);
  }
  if (z && z->pub_params > 0) {
    double pp = z->pub_params - (!strcmp(z->name, "inception-v3") ? 3326696 : 0);
    rel(d2, sizeof d2, (double)params, pp);
    printf("params     %.3f M (published %.3f M, %s; %s)\n", (double)params / 1e6, pp / 1e6, d2, z->pub_note);
  } else {
    printf("params     %.3f M\n", (double)params / 1e6);
  }
  if (a->no_passes)
    printf("passes     none (--no-passes): %d nodes\n", nodes0);
  else
    printf("passes     %d nodes -> %d: %d folded to constants, %d batch norms folded, %d fused into conv/dense, "
           "%d dead removed; layout: %d transforms at %d lanes\n",
           nodes0, live_nodes(g), ps.folded, ps.bn_folded, ps.fused, ps.removed, ps.transforms, lanes);
  printf("tasks      %d distinct workloads, %.3f GFLOPs in all (time estimated by FLOPs)\n", nt, tot / 1e9);
  printf("  %3s %6s %10s %7s %7s  %s\n", "#", "count", "GFLOPs", "share", "cum", "workload");
  double cum = 0;
  for (int i = 0; i < keep; i++) {
    cum += tasks[i].share;
    printf("  %3d %6d %10.4f %6.2f%% %6.2f%%  %s\n", i + 1, tasks[i].count, tasks[i].count * tasks[i].flops / 1e9,
           100 * tasks[i].share, 100 * cum, tasks[i].key);
  }
  if (keep < nt)
    printf("key-ops    %d of %d tasks make up %.2f%% of the estimated time (--key-ops %g)\n", keep, nt, 100 * cum, a->key_ops);
  rc = 0;
done:
  cJSON_Delete(j);
  free(tasks);
  ob_graph_free(g);
  return rc;
}

int cli_cmd_models(ob_ctx *ctx, const cli_args *a) {
  if (!a->modelname && !a->modelpath && !(a->modelsource && !strcmp(a->modelsource, "simple"))) return list_zoo(ctx, a);
  return one_model(ctx, a);
}

int cli_cmd_export_onnx(ob_ctx *ctx, const cli_args *a) {
  ob_graph *g = load(ctx, a);
  if (!g) return OB_CLI_EXIT_ERROR;
  int rc = 0;
  if (ob_onnx_export_file(ctx, g, a->out) != OB_OK) {
    rc = cli_error("%s", ob_ctx_errmsg(ctx));
  } else {
    struct stat sb;
    long long bytes = stat(a->out, &sb) ? -1 : (long long)sb.st_size;
    printf("wrote %s: %s, %d nodes, %.3f M parameters, %lld bytes, ONNX opset 17\n", a->out, ob_graph_name(g), live_nodes(g),
           (double)ob_graph_params(g) / 1e6, bytes);
  }
  ob_graph_free(g);
  return rc;
}

int cli_cmd_run_reference(ob_ctx *ctx, const cli_args *a) {
  ob_graph *g = load(ctx, a);
  if (!g) return OB_CLI_EXIT_ERROR;
  int rc = OB_CLI_EXIT_ERROR;
  int ni = ob_graph_input_count(g), no = ob_graph_output_count(g);
  void **in = calloc((size_t)ni + 1, sizeof(void *)), **out = calloc((size_t)no + 1, sizeof(void *));
  FILE *io = NULL;
  if (!in || !out) {
    cli_error("out of memory");
    goto done;
  }
  if (!a->no_passes && ob_graph_optimize(ctx, g, host_lanes(ctx, a), NULL) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (a->print_graph) {
    ob_str s = {0};
    ob_graph_print(g, &s);
    fputs(s.data, stdout);
    ob_str_free(&s);
  }
  uint64_t seed = a->seed_set ? a->mo.seed : 1;
  for (int i = 0; i < ni; i++) {
    int t = ob_graph_input(g, i);
    size_t bytes = (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
    in[i] = malloc(bytes ? bytes : 1);
    if (!in[i]) {
      cli_error("out of memory");
      goto done;
    }
    char err[512];
    if (i == 0 && a->input_file) {
      if (!cli_npy_read(a->input_file, g, t, in[i], err, sizeof err)) {
        cli_error("--input: %s", err);
        goto done;
      }
    } else {
      ob_graph_fill_input(g, i, seed, in[i]);
    }
  }
  for (int i = 0; i < no; i++) {
    int t = ob_graph_output(g, i);
    size_t bytes = (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
    out[i] = malloc(bytes ? bytes : 1);
    if (!out[i]) {
      cli_error("out of memory");
      goto done;
    }
  }
  double t0 = ob_now_s();
  if (ob_graph_run_reference(ctx, g, (const void *const *)in, out) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  double secs = ob_now_s() - t0;
  if (a->save_io) {
    if (mkdir(a->save_io, 0755) && errno != EEXIST) {
      cli_error("--save-io: cannot create folder '%s': %s", a->save_io, strerror(errno));
      goto done;
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/io.txt", a->save_io);
    io = fopen(p, "w");
    if (!io) {
      cli_error("--save-io: cannot write '%s': %s", p, strerror(errno));
      goto done;
    }
  }
  for (int k = 0; k < ni + no; k++) {
    bool is_in = k < ni;
    int i = is_in ? k : k - ni, t = is_in ? ob_graph_input(g, i) : ob_graph_output(g, i);
    ob_dtype dt = ob_graph_tensor_dtype(g, t);
    int64_t n = ob_graph_tensor_numel(g, t);
    const void *data = is_in ? in[i] : out[i];
    char sh[256];
    cli_shape_text(g, t, sh, sizeof sh);
    if (!is_in) {
      double sum = 0, mx = 0;
      bool finite = true;
      for (int64_t q = 0; q < n && dt == OB_F32; q++) {
        double v = ((const float *)data)[q];
        finite &= isfinite(v);
        sum += v;
        mx = fabs(v) > mx ? fabs(v) : mx;
      }
      printf("output %s %s %s sum %.6g max|x| %.6g%s\n", ob_graph_tensor_name(g, t), sh, cli_dtype_text(dt), sum, mx,
             finite ? "" : " (non-finite values!)");
    }
    size_t bytes = (size_t)n * ob_dtype_size(dt);
    if (io) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s%d.npy", a->save_io, is_in ? "input" : "output", i);
      if (!cli_npy_write(p, dt, ob_graph_tensor_ndim(g, t), ob_graph_tensor_dims(g, t), data, bytes)) {
        cli_error("--save-io: cannot write '%s': %s", p, strerror(errno));
        goto done;
      }
      fprintf(io, "%s %d %s\n", is_in ? "input" : "output", i, ob_graph_tensor_name(g, t));
    }
    if (!is_in && i == 0 && a->save_output &&
        !cli_npy_write(a->save_output, dt, ob_graph_tensor_ndim(g, t), ob_graph_tensor_dims(g, t), data, bytes)) {
      cli_error("--save-output: cannot write '%s': %s", a->save_output, strerror(errno));
      goto done;
    }
  }
  printf("reference  %s: %d nodes in %.2f s\n", ob_graph_name(g), live_nodes(g), secs);
  rc = 0;
done:
  if (io) fclose(io);
  for (int i = 0; in && i < ni; i++) free(in[i]);
  for (int i = 0; out && i < no; i++) free(out[i]);
  free(in);
  free(out);
  ob_graph_free(g);
  return rc;
}

static const char *const k_kind[] = {"split", "reorder", "annotate", "other"};

int cli_cmd_model_space(ob_ctx *ctx, const cli_args *a) {
  ob_target *target = NULL;
  if (!cli_target(ctx, a, false, &target)) return OB_CLI_EXIT_ERROR;
  ob_graph *g = load(ctx, a);
  if (!g) {
    ob_target_free(target);
    return OB_CLI_EXIT_ERROR;
  }
  int rc = OB_CLI_EXIT_ERROR, nt = 0;
  ob_graph_task *tasks = NULL;
  cJSON *root = cJSON_CreateObject();
  if (!a->no_passes && ob_graph_optimize(ctx, g, 0, NULL) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  if (ob_graph_tasks(ctx, g, &tasks, &nt) != OB_OK) {
    cli_error("%s", ob_ctx_errmsg(ctx));
    goto done;
  }
  int keep = a->key_ops > 0 ? ob_graph_key_tasks(tasks, nt, a->key_ops) : nt;
  cJSON_AddStringToObject(root, "model", ob_graph_name(g));
  cJSON_AddStringToObject(root, "target", ob_target_str(target));
  cJSON_AddNumberToObject(root, "batch", (double)(a->batchsize ? a->batchsize : 1));
  cJSON *jt = cJSON_AddArrayToObject(root, "tasks");
  if (!a->out) printf("%-4s %-6s %-22s %6s %14s  %s\n", "#", "count", "template", "knobs", "configs", "workload");
  for (int i = 0; i < keep; i++) {
    ob_task *task = NULL;
    if (ob_task_new(ctx, &tasks[i].wl, NULL, target, &task) != OB_OK) {
      cli_error("task %s: %s", tasks[i].key, ob_ctx_errmsg(ctx));
      goto done;
    }
    const ob_space *s = ob_task_space(task);
    ob_config def = ob_task_default_config(task);
    char *dj = NULL;
    if (ob_config_to_json(ctx, &def, &dj) != OB_OK) {
      ob_task_free(task);
      cli_error("%s", ob_ctx_errmsg(ctx));
      goto done;
    }
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "op", tasks[i].wl.op);
    cJSON_AddStringToObject(t, "workload", tasks[i].key);
    cJSON_AddNumberToObject(t, "count", tasks[i].count);
    cJSON_AddNumberToObject(t, "flops", tasks[i].flops);
    cJSON_AddStringToObject(t, "template", ob_task_template(task));
    cJSON_AddNumberToObject(t, "space_size", (double)ob_space_len(s));
    cJSON *kn = cJSON_AddArrayToObject(t, "knobs");
    for (int k = 0; k < ob_space_num_knobs(s); k++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", ob_space_knob_name(s, k));
      cJSON_AddStringToObject(o, "kind", k_kind[ob_space_knob_kind(s, k)]);
      int len = ob_space_knob_len(s, k);
      cJSON_AddNumberToObject(o, "entities", len);
      cJSON *ent = cJSON_AddArrayToObject(o, "values");
      for (int c = 0; c < len; c++) {
        int64_t vals[OB_MAX_SPLIT + OB_MAX_AXES];
        int nv = ob_space_entity(s, k, c, vals, OB_MAX_SPLIT + OB_MAX_AXES);
        cJSON *e = cJSON_CreateArray();
        for (int q = 0; q < nv; q++) cJSON_AddItemToArray(e, cJSON_CreateNumber((double)vals[q]));
        cJSON_AddItemToArray(ent, e);
      }
      cJSON_AddItemToArray(kn, o);
    }
    cJSON *dflt = cJSON_Parse(dj);
    if (dflt) cJSON_AddItemToObject(t, "default", dflt);
    cJSON_AddItemToArray(jt, t);
    if (!a->out)
      printf("%-4d %-6d %-22s %6d %14llu  %s\n", i + 1, tasks[i].count, ob_task_template(task), ob_space_num_knobs(s),
             (unsigned long long)ob_space_len(s), tasks[i].key);
    free(dj);
    ob_task_free(task);
  }
  if (a->out) {
    char *txt = cJSON_Print(root);
    FILE *f = strcmp(a->out, "-") ? fopen(a->out, "w") : stdout;
    if (!f) {
      free(txt);
      cli_error("--out: cannot write '%s': %s", a->out, strerror(errno));
      goto done;
    }
    fprintf(f, "%s\n", txt);
    free(txt);
    if (f != stdout && fclose(f)) {
      cli_error("--out: cannot write '%s'", a->out);
      goto done;
    }
    if (f != stdout) printf("wrote %s: config spaces of %d tasks of %s\n", a->out, keep, ob_graph_name(g));
  }
  rc = 0;
done:
  cJSON_Delete(root);
  free(tasks);
  ob_graph_free(g);
  ob_target_free(target);
  return rc;
}
