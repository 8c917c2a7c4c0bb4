/* fuzz_autotvm.c: AutoTVM v0.2 logs through ob_db_import_autotvm into a
 * temporary database (in /dev/shm, emptied before each input), the way
 * `opbench db import` reads them; the input is the log file, handed over as
 * a memfd path. Whatever the log holds, the import either succeeds with
 * every line counted (stored, duplicate or broken) or fails with a status,
 * and the records it stored can be exported again as AutoTVM lines and as
 * CSV. */
#include "fuzz.h"

#include <sys/mman.h>
#include <unistd.h>

#include "opbench/db.h"
#include "opbench/ops.h"

static char g_db_path[128];

static void remove_db(void) {
  static const char *const sfx[] = {"", "-wal", "-shm"};
  char p[160];
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s", g_db_path, sfx[i]);
    unlink(p);
  }
}

static ob_db *the_db(ob_ctx *ctx) {
  static ob_db *db;
  if (!db) {
    snprintf(g_db_path, sizeof g_db_path, "/dev/shm/opbench-fuzz-%ld.db", (long)getpid());
    remove_db();
    if (ob_db_open(ctx, g_db_path, 0, &db) != OB_OK) abort();
    atexit(remove_db);
  }
  /* each input starts from an empty database */
  if (ob_db_exec(db, "DELETE FROM measurements; DELETE FROM measurements_history; "
                     "DELETE FROM configs; DELETE FROM workloads; DELETE FROM hosts;") != OB_OK)
    abort();
  return db;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 18) return 0;
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("fuzz-autotvm-log", 0);
    if (fd < 0) abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
  ob_ctx *ctx = ob_fuzz_ctx();
  ob_db *db = the_db(ctx);
  ob_db_import_result res;
  ob_db_import_opts o = {.map = ob_op_autotvm_map()};
  if (ob_db_import_autotvm(db, path, &o, &res) == OB_OK) {
    OB_FUZZ_REQUIRE(res.nimported + res.nduplicate + res.nbroken == res.nlines);
    OB_FUZZ_REQUIRE(res.nbad <= res.nbroken);
    int64_t n = -1;
    OB_FUZZ_REQUIRE(ob_db_export_csv(db, NULL, "/dev/null", &n) == OB_OK);
    OB_FUZZ_REQUIRE(n == res.nimported);
    /* what was exported reads back as the same records: all duplicates */
    char log[160];
    snprintf(log, sizeof log, "%s.log", g_db_path);
    OB_FUZZ_REQUIRE(ob_db_export_autotvm(db, NULL, log, o.map, NULL, NULL, NULL, &n) == OB_OK);
    OB_FUZZ_REQUIRE(n == res.nimported);
    ob_db_import_result again;
    OB_FUZZ_REQUIRE(ob_db_import_autotvm(db, log, &o, &again) == OB_OK);
    OB_FUZZ_REQUIRE(again.nlines == n && again.nbroken == 0 && again.nimported == 0 &&
                    again.nduplicate == n);
    ob_db_import_result_clear(&again);
    unlink(log);
  }
  ob_db_import_result_clear(&res);
  return 0;
}
