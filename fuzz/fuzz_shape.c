/* fuzz_shape.c: the workload text of the command line: an operator name,
 * --shape text and the --stride/--pad/--dilation/--epilogue values, one per
 * line of the input (missing lines: flag not given), through cli_workload
 * as `opbench op` parses them. An accepted workload must survive its
 * database round trip (attributes JSON -> workload, same key), and every
 * template must define its space and map the default config to an index
 * and back. */
#include "fuzz.h"

#include "../src/cli/cli.h"

static char *next_line(char **p) {
  if (!*p) return NULL;
  char *s = *p, *nl = strchr(s, '\n');
  if (nl) {
    *nl = '\0';
    *p = nl + 1;
  } else {
    *p = NULL;
  }
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* the command line's values are short */
  ob_ctx *ctx = ob_fuzz_ctx();
  char *text = ob_fuzz_str(data, size), *p = text;
  const char *op = next_line(&p), *shape = next_line(&p);
  const char *f[4];
  for (int i = 0; i < 4; i++) {
    f[i] = next_line(&p);
    if (f[i] && !*f[i]) f[i] = NULL; /* an empty line: the flag is not given */
  }
  ob_workload wl;
  if (op && cli_workload(ctx, op, shape, f[0], f[1], f[2], f[3], true, &wl) == OB_OK) {
    char key[512], key2[512];
    ob_workload_key(&wl, key, sizeof key);
    double flops = ob_workload_flops(&wl);
    OB_FUZZ_REQUIRE(flops >= 0);
    ob_str attrs = {0};
    ob_workload_attrs(&wl, &attrs);
    ob_workload back;
    OB_FUZZ_REQUIRE(ob_workload_from_attrs(ctx, wl.op, attrs.data, &back) == OB_OK);
    ob_workload_key(&back, key2, sizeof key2);
    OB_FUZZ_REQUIRE(!strcmp(key, key2));
    ob_str_free(&attrs);
    const char *names[16];
    int nt = ob_op_templates(wl.op, names, 16);
    for (int t = 0; t < nt && t < 16; t++) {
      ob_task *task = NULL;
      if (ob_task_new(ctx, &wl, names[t], NULL, &task) != OB_OK) continue;
      ob_config d = ob_task_default_config(task), c;
      OB_FUZZ_REQUIRE(ob_space_get(ctx, ob_task_space(task), d.index, &c) == OB_OK);
      OB_FUZZ_REQUIRE(c.index == d.index);
      for (int a = 0; a < ob_task_num_args(task); a++)
        OB_FUZZ_REQUIRE(ob_task_arg_bytes(task, a) <= (size_t)OB_MAX_BUFFER_BYTES);
      ob_task_free(task);
    }
  }
  free(text);
  return 0;
}
