/* fuzz_suite.c: suite files of `opbench bench --suite`, through
 * cli_suite_parse as the command parses them (messages go to stderr, which
 * the fuzz runs close). Every accepted entry must hold a valid workload
 * whose key fits and whose task can be made. */
#include "fuzz.h"

#include "../src/cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  ob_ctx *ctx = ob_fuzz_ctx();
  char *text = ob_fuzz_str(data, size);
  cli_suite_entry *es = NULL;
  int n = 0;
  if (cli_suite_parse(ctx, "fuzz.txt", text, &es, &n)) {
    OB_FUZZ_REQUIRE(n >= 1 && n <= CLI_SUITE_MAX_WORKLOADS);
    for (int i = 0; i < n && i < 8; i++) {
      OB_FUZZ_REQUIRE(ob_workload_validate(ctx, &es[i].wl) == OB_OK);
      OB_FUZZ_REQUIRE(es[i].count >= 1);
      char key[512];
      ob_workload_key(&es[i].wl, key, sizeof key);
      ob_task *t = NULL;
      OB_FUZZ_REQUIRE(ob_task_new(ctx, &es[i].wl, NULL, NULL, &t) == OB_OK);
      ob_task_free(t);
    }
    free(es);
  }
  free(text);
  return 0;
}
