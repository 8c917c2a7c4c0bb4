/* test_fleet.c: the fleet's pieces that need no broker: broker URLs (and
 * that no message or shown form carries the password), the seed
 * collector's --host/--port spelling, fleet keys (made 0600, never over a
 * file, refused when others may read them, too short, a link or not a
 * file), and a worker or client given a bad device key or no key. The
 * fleet against a real redis-server is tests/fleet_test.sh. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "opbench/fleet.h"

static ob_ctx *ctx;

static void test_urls(void) {
  ob_fleet_addr a;
  CHECK(ob_fleet_parse_url(ctx, "redis://opbench:s3cret@10.0.0.2:6380", &a) == OB_OK);
  CHECK(!strcmp(a.host, "10.0.0.2") && a.port == 6380 && !strcmp(a.user, "opbench") && !strcmp(a.password, "s3cret"));
  char shown[512];
  ob_fleet_addr_str(&a, shown, sizeof shown);
  CHECK_MSG(!strcmp(shown, "redis://opbench:***@10.0.0.2:6380"), "%s", shown);
  CHECK(ob_fleet_parse_url(ctx, "redis://broker", &a) == OB_OK);
  CHECK(!strcmp(a.host, "broker") && a.port == OB_FLEET_DEFAULT_PORT && !a.user[0] && !a.password[0]);
  CHECK(ob_fleet_parse_url(ctx, "broker:7000/", &a) == OB_OK && a.port == 7000);
  CHECK(ob_fleet_parse_url(ctx, "redis://pw@h:1", &a) == OB_OK && !a.user[0] && !strcmp(a.password, "pw"));
  ob_fleet_addr_str(&a, shown, sizeof shown);
  CHECK(!strstr(shown, "pw@") && strstr(shown, "***"));
  const char *bad[] = {"", "http://h:1", "redis://h:0", "redis://h:70000", "redis://h:x", "redis://:1",
                       "redis://h:1/db", "redis://u:secretpw@:5"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ob_status st = ob_fleet_parse_url(ctx, bad[i], &a);
    CHECK_MSG(st == OB_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
    CHECK_MSG(!strstr(ob_ctx_errmsg(ctx), "secretpw"), "%s", ob_ctx_errmsg(ctx));
  }
  char url[600];
  unsetenv("OPBENCH_FLEET_USER");
  unsetenv("OPBENCH_FLEET_PASSWORD");
  unsetenv("TVM_TRACKER_HOST");
  unsetenv("TVM_TRACKER_PORT");
  CHECK(ob_fleet_url_from_host(ctx, NULL, NULL, url, sizeof url) == OB_ERR_NOT_FOUND);
  CHECK(ob_fleet_url_from_host(ctx, "h", "9", url, sizeof url) == OB_OK && !strcmp(url, "redis://h:9"));
  setenv("TVM_TRACKER_HOST", "tracker", 1);
  setenv("TVM_TRACKER_PORT", "9190", 1);
  setenv("OPBENCH_FLEET_USER", "u", 1);
  setenv("OPBENCH_FLEET_PASSWORD", "p", 1);
  CHECK(ob_fleet_url_from_host(ctx, NULL, NULL, url, sizeof url) == OB_OK);
  CHECK_MSG(!strcmp(url, "redis://u:p@tracker:9190"), "%s", url);
  CHECK(ob_fleet_url_from_host(ctx, "other", NULL, url, sizeof url) == OB_OK && !strcmp(url, "redis://u:p@other:9190"));
  unsetenv("TVM_TRACKER_HOST");
  unsetenv("TVM_TRACKER_PORT");
  unsetenv("OPBENCH_FLEET_USER");
  unsetenv("OPBENCH_FLEET_PASSWORD");
}

static void test_keys(const char *dir) {
  char path[512], p2[512];
  snprintf(path, sizeof path, "%s/fleet.key", dir);
  CHECK(ob_fleet_key_generate(ctx, path) == OB_OK);
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600 && sb.st_size == 65);
  CHECK(ob_fleet_key_generate(ctx, path) == OB_ERR_IO); /* never over a key */
  ob_fleet_key k, k2;
  CHECK(ob_fleet_key_load(ctx, path, &k) == OB_OK && k.len == 64);
  snprintf(p2, sizeof p2, "%s/fleet2.key", dir);
  CHECK(ob_fleet_key_generate(ctx, p2) == OB_OK && ob_fleet_key_load(ctx, p2, &k2) == OB_OK);
  CHECK(k2.len == 64 && memcmp(k.bytes, k2.bytes, 64) != 0); /* random */
  CHECK(chmod(path, 0640) == 0);
  CHECK(ob_fleet_key_load(ctx, path, &k) == OB_ERR_INVALID_ARG && strstr(ob_ctx_errmsg(ctx), "mode 0640"));
  CHECK(chmod(path, 0604) == 0);
  CHECK(ob_fleet_key_load(ctx, path, &k) == OB_ERR_INVALID_ARG);
  CHECK(chmod(path, 0600) == 0);
  snprintf(p2, sizeof p2, "%s/link.key", dir);
  CHECK(symlink(path, p2) == 0);
  CHECK(ob_fleet_key_load(ctx, p2, &k) == OB_ERR_INVALID_ARG && strstr(ob_ctx_errmsg(ctx), "symbolic link"));
  snprintf(p2, sizeof p2, "%s/short.key", dir);
  FILE *f = fopen(p2, "w");
  CHECK(f != NULL);
  if (f) {
    fputs("short\n", f);
    fclose(f);
  }
  CHECK(chmod(p2, 0600) == 0);
  CHECK(ob_fleet_key_load(ctx, p2, &k) == OB_ERR_INVALID_ARG && strstr(ob_ctx_errmsg(ctx), "5 bytes"));
  CHECK(ob_fleet_key_load(ctx, dir, &k) == OB_ERR_INVALID_ARG); /* a folder */
  snprintf(p2, sizeof p2, "%s/none.key", dir);
  CHECK(ob_fleet_key_load(ctx, p2, &k) == OB_ERR_IO);
  char buf[600];
  CHECK(ob_fleet_key_default_path("x.key", buf, sizeof buf) && !strcmp(ob_fleet_key_default_path("x.key", buf, sizeof buf), "x.key"));
  setenv("OPBENCH_FLEET_KEY", path, 1);
  CHECK(!strcmp(ob_fleet_key_default_path(NULL, buf, sizeof buf), path));
  unsetenv("OPBENCH_FLEET_KEY");

  /* workers and clients check their arguments before the broker */
  ob_fleet_worker_opts wo = {.broker = "redis://127.0.0.1:1", .device_key = "a b", .key = &k2};
  CHECK(ob_fleet_worker_run(ctx, &wo, NULL) == OB_ERR_INVALID_ARG && strstr(ob_ctx_errmsg(ctx), "device key 'a b'"));
  wo.device_key = "ok";
  wo.key = NULL;
  CHECK(ob_fleet_worker_run(ctx, &wo, NULL) == OB_ERR_INVALID_ARG && strstr(ob_ctx_errmsg(ctx), "fleet key"));
  ob_fleet_client *c = NULL;
  ob_fleet_client_opts co = {.broker = "redis://127.0.0.1:1", .device_key = "", .key = &k2};
  CHECK(ob_fleet_client_new(ctx, &co, &c) == OB_ERR_INVALID_ARG && c == NULL);
  co.device_key = "ok";
  co.broker = "ftp://x";
  CHECK(ob_fleet_client_new(ctx, &co, &c) == OB_ERR_INVALID_ARG && c == NULL);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  ob_ctx_set_log_level(ctx, OB_LOG_ERROR);
  char dir[] = "/tmp/opbench_test_fleet.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_urls();
  test_keys(dir);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  ob_ctx_free(ctx);
  return ob_check_done();
}
