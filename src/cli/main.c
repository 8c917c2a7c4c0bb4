/* main.c: entry point of the `opbench` tool: picks the subcommand, creates
 * the one ob_ctx, and runs `opbench ops`. Exit status: 0 success, 2 any
 * error (bad input, missing compiler, a variant that fails). */
#include "cli.h"

#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: opbench <command> [flags]\n"
          "commands:\n"
          "  op <op> --shape ...     build, check and time one variant of an operator\n"
          "  bench --suite FILE      time the default config of every workload of a suite\n"
          "                          (--suite resnet18: the built-in ResNet-18 conv2d suite)\n"
          "  space <op> --shape ...  show a template's config space and default config\n"
          "  ops                     list operators and their schedule templates\n"
          "  tune --op OP --shape ... tune one operator's config (resumable; see tune --help)\n"
          "  tune --modelname M      the collector: tune every task of a model, compare untuned,\n"
          "                          tuned and oneDNN kernels end to end\n"
          "  run --modelname M       run a model once with the database's configs: checked, timed\n"
          "  db best|top|stats|export|import   query, export and import the record database\n"
          "  models [--modelname M]  the model zoo; a model's graph, passes and tasks\n"
          "  export-onnx --modelname M --out FILE   write a model as ONNX (opset 17)\n"
          "  run-reference --modelname M   run a model's naive reference, save outputs (.npy)\n"
          "  space --modelname M     the config space of every task of a model\n"
          "  schedule --modelname M  inter-operator schedules (sequential, greedy, IOS) on core groups\n"
          "  worker --broker URL --device-key KEY   serve a fleet's measurement jobs\n"
          "  fleet status|keygen     a fleet's devices and queues; a new fleet key\n"
          "  profile OP|--suite|--modelname  sweep sizes, threads, cores, knobs, co-runners and cache\n"
          "                          pressure; every point a record (resumable)\n"
          "  report --db FILE --out DIR   an HTML page with plots of the database\n"
          "  predict [train|eval|corr|turnaround|corun|nash]   latency predictors from the records\n"
          "  opbench <command> --help   flags of a command\n"
          "  opbench --version\n");
}

int cli_cmd_ops(ob_ctx *ctx, const cli_args *a) {
  (void)a;
  printf("%-16s %s\n", "operator", "templates (the first is the default; GPU: for cuda and opencl targets)");
  /* the GPU templates, as listed for any GPU target (parsing one needs no
   * device) */
  ob_target *gpu = NULL;
  if (ob_target_parse(ctx, "cuda -arch=sm_80", &gpu) != OB_OK) gpu = NULL;
  for (int i = 0; i < ob_op_count(); i++) {
    const char *names[32];
    const char *op = ob_op_name(i);
    int n = ob_op_templates(op, names, 32);
    printf("%-16s", op);
    for (int k = 0; k < n && k < 32; k++) printf("%s%s", k ? ", " : " ", names[k]);
    n = gpu ? ob_op_templates_for(op, gpu, names, 32) : 0;
    for (int k = 0; k < n && k < 32; k++) printf("%s%s", k ? ", " : "; GPU: ", names[k]);
    printf("\n");
  }
  ob_target_free(gpu);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return cli_error("no command given");
  }
  const char *c = argv[1];
  if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 || strcmp(c, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(c, "--version") == 0 || strcmp(c, "-V") == 0) {
    printf("opbench %s\n", OB_CLI_VERSION);
    return 0;
  }
  int cmd = -1;
  for (int i = 0; i < CLI_CMD_COUNT; i++)
    if (strcmp(c, cli_cmd_name((cli_cmd)i)) == 0) cmd = i;
  if (cmd < 0) {
    if (c[0] == '-') return cli_error("unknown flag '%s' (see opbench --help)", c);
    return cli_error("unknown command '%s' (expected op, bench, space, ops, tune, db, models, export-onnx, run-reference, schedule, run, worker, fleet, profile, report or predict)", c);
  }

  ob_ctx *ctx = NULL;
  if (ob_ctx_new(&ctx) != OB_OK) return cli_error("out of memory");
  int rc = OB_CLI_EXIT_ERROR;
  cli_args args;
  if (!cli_parse(ctx, (cli_cmd)cmd, argc, argv, &args)) goto done;
  if (args.help) {
    cli_usage(stdout, (cli_cmd)cmd);
    rc = 0;
    goto done;
  }
  if (args.verbose) ob_ctx_set_log_level(ctx, args.verbose > 1 ? OB_LOG_DEBUG : OB_LOG_INFO);
  switch ((cli_cmd)cmd) {
  case CLI_CMD_OP: rc = cli_cmd_op(ctx, &args); break;
  case CLI_CMD_BENCH: rc = cli_cmd_bench(ctx, &args); break;
  case CLI_CMD_SPACE:
    rc = args.op ? cli_cmd_space(ctx, &args) : cli_cmd_model_space(ctx, &args);
    break;
  case CLI_CMD_OPS: rc = cli_cmd_ops(ctx, &args); break;
  case CLI_CMD_TUNE:
    if (args.record_steps && (!args.model_tune || !args.ifcompare)) {
      cli_error("--record-steps records the tuned model's steps in its comparison: it needs a model and --ifcompare "
                "true");
      rc = OB_CLI_EXIT_ERROR;
      break;
    }
    rc = args.model_tune ? cli_cmd_tune_model(ctx, &args) : cli_cmd_tune(ctx, &args);
    break;
  case CLI_CMD_DB: rc = cli_cmd_db(ctx, &args); break;
  case CLI_CMD_MODELS: rc = cli_cmd_models(ctx, &args); break;
  case CLI_CMD_EXPORT_ONNX: rc = cli_cmd_export_onnx(ctx, &args); break;
  case CLI_CMD_RUN_REFERENCE: rc = cli_cmd_run_reference(ctx, &args); break;
  case CLI_CMD_SCHEDULE: rc = cli_cmd_schedule(ctx, &args); break;
  case CLI_CMD_WORKER: rc = cli_cmd_worker(ctx, &args); break;
  case CLI_CMD_FLEET: rc = cli_cmd_fleet(ctx, &args); break;
  case CLI_CMD_PROFILE: rc = cli_cmd_profile(ctx, &args); break;
  case CLI_CMD_REPORT: rc = cli_cmd_report(ctx, &args); break;
  case CLI_CMD_PREDICT: rc = cli_cmd_predict(ctx, &args); break;
  case CLI_CMD_RUN: rc = cli_cmd_run(ctx, &args); break;
  case CLI_CMD_COUNT: break;
  }
done:
  ob_ctx_free(ctx);
  return rc;
}
