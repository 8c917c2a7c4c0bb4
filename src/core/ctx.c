/* ctx.c: the context passed first to every fallible call. It owns the last
 * error message (a fixed buffer, so reporting a failure never allocates),
 * the log threshold and the allocation limit of fault-injection tests. A
 * NULL ctx is tolerated: messages are then dropped, logging uses the
 * default level and allocations are not limited. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

enum { OB_MSG_CAP = 2048 };

struct ob_ctx {
  ob_log_level log_level;
  /* Allocations left before each one fails; < 0: no limit. Atomic: the
   * builder's threads share their caller's ctx. */
  _Atomic int64_t alloc_left;
  char msg[OB_MSG_CAP];
};

static const char *const ob_log_tags[OB_LOG_LEVEL_COUNT] = {"error", "warn", "info",
                                                             "debug"};

ob_status ob_ctx_new(ob_ctx **out) {
  OB_ASSERT(out);
  *out = NULL;
  ob_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return OB_ERR_NOMEM;
  ctx->log_level = OB_LOG_WARN;
  int64_t limit = -1;
  const char *env = getenv("OPBENCH_TEST_ALLOC_LIMIT");
  if (env && *env) {
    char *end;
    errno = 0;
    long long v = strtoll(env, &end, 10);
    if (errno || *end || end == env)
      ob_log(ctx, OB_LOG_WARN, "OPBENCH_TEST_ALLOC_LIMIT='%s' is not a number: no limit", env);
    else
      limit = v;
  }
  atomic_init(&ctx->alloc_left, limit);
  *out = ctx;
  return OB_OK;
}

void ob_ctx_set_alloc_limit(ob_ctx *ctx, int64_t n) {
  OB_ASSERT(ctx);
  atomic_store(&ctx->alloc_left, n < 0 ? -1 : n);
}

bool ob_ctx_alloc_ok(ob_ctx *ctx) {
  if (!ctx) return true;
  int64_t left = atomic_load_explicit(&ctx->alloc_left, memory_order_relaxed);
  while (left > 0 && !atomic_compare_exchange_weak(&ctx->alloc_left, &left, left - 1)) {
  }
  return left != 0; /* < 0: no limit; > 0: this one counted */
}

void ob_ctx_free(ob_ctx *ctx) { free(ctx); }

ob_status ob_fail(ob_ctx *ctx, ob_status st, const char *fmt, ...) {
  if (!ctx) return st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
  va_end(ap);
  ob_log(ctx, OB_LOG_DEBUG, "fail (%s): %s", ob_status_str(st), ctx->msg);
  return st;
}

void ob_fail_prefix(ob_ctx *ctx, const char *fmt, ...) {
  if (!ctx) return;
  char buf[OB_MSG_CAP];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
  if (ctx->msg[0]) {
    /* Truncate from the end: the outermost context is the most useful. */
    const char *parts[2] = {": ", ctx->msg};
    for (int i = 0; i < 2; i++) {
      size_t k = strlen(parts[i]);
      if (k > sizeof buf - 1 - len) k = sizeof buf - 1 - len;
      memcpy(buf + len, parts[i], k);
      len += k;
    }
    buf[len] = '\0';
  }
  memcpy(ctx->msg, buf, len + 1);
}

const char *ob_ctx_errmsg(const ob_ctx *ctx) { return ctx ? ctx->msg : ""; }

void ob_ctx_clear_error(ob_ctx *ctx) {
  if (ctx) ctx->msg[0] = '\0';
}

void ob_ctx_set_log_level(ob_ctx *ctx, ob_log_level lvl) {
  OB_ASSERT(ctx);
  OB_ASSERT(lvl >= OB_LOG_ERROR && lvl < OB_LOG_LEVEL_COUNT);
  ctx->log_level = lvl;
}

void ob_log(ob_ctx *ctx, ob_log_level lvl, const char *fmt, ...) {
  OB_ASSERT(lvl >= OB_LOG_ERROR && lvl < OB_LOG_LEVEL_COUNT);
  ob_log_level limit = ctx ? ctx->log_level : OB_LOG_WARN;
  if (lvl > limit) return;
  /* Format the whole line first so one fputs keeps lines from different
   * threads or processes from interleaving mid-line. */
  char line[OB_MSG_CAP + 32];
  int head = snprintf(line, sizeof line, "opbench [%s]: ", ob_log_tags[lvl]);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + head, sizeof line - (size_t)head, fmt, ap);
  va_end(ap);
  size_t len = strlen(line);
  if (len + 1 >= sizeof line) len = sizeof line - 2; /* truncated: room for '\n' */
  if (line[len - 1] != '\n') line[len++] = '\n';
  line[len] = '\0';
  fputs(line, stderr);
}
