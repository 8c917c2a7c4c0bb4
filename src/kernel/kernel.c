/* kernel.c: artifacts (ob_kernel_build: codegen + the builder, with each
 * kernel's argument layout), loading and running a kernel in this process
 * (ob_kernel_load / _run / _free), AutoTVM's error-class names and signal
 * names for messages. An ob_kernel owns its dlopen handle; an artifact owns
 * its strings. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opbench/codegen.h"
#include "opbench/gpu.h"
#include "opbench/kernel.h"
#include "opbench/lower.h"
#include "kernel/kernel_impl.h"

const char *ob_kernel_signame(int sig, char buf[32]) {
  static const struct { int sig; const char *name; } names[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"},
      {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGINT, "SIGINT"},   {SIGHUP, "SIGHUP"},
      {SIGQUIT, "SIGQUIT"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGALRM, "SIGALRM"},
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig) return names[i].name;
  snprintf(buf, 32, "signal %d", sig);
  return buf;
}

const char *ob_merr_str(int error_no) {
  /* AutoTVM's MeasureErrorNo names. */
  static const char *const names[OB_MERR_COUNT] = {
      "NO_ERROR",     "INSTANTIATION_ERROR", "COMPILE_HOST", "COMPILE_DEVICE", "RUNTIME_DEVICE",
      "WRONG_ANSWER", "BUILD_TIMEOUT",       "RUN_TIMEOUT",  "UNKNOWN_ERROR",
  };
  return error_no >= 0 && error_no < OB_MERR_COUNT ? names[error_no] : "INVALID_ERROR_NO";
}

/* ---- timing options for a target ---------------------------------------------------- */

ob_timing_opts ob_timing_resolve(const ob_timing_opts *o, const ob_target *t) {
  /* The floor is a target fact; timeloop.c knows no module but itself, so
   * it gets the number. NULL: the host's default, whose table row has
   * OB_TIMING_DEFAULT_FLOOR_MS (parsing $OPBENCH_TARGET here would need a
   * context; callers that have a target pass it). */
  double floor_ms = t ? ob_target_get_facts(t)->min_repeat_ms : OB_TIMING_DEFAULT_FLOOR_MS;
  return ob_timing_normalize(o, floor_ms > 0 ? floor_ms : OB_TIMING_DEFAULT_FLOOR_MS);
}

/* ---- artifacts ------------------------------------------------------------------ */

void ob_kernel_artifact_clear(ob_kernel_artifact *a) {
  if (!a) return;
  free(a->message);
  free(a->so_path);
  free(a->symbol);
  free(a->source);
  memset(a, 0, sizeof *a);
}

/* GPU targets: launch check, CUDA C / OpenCL C, NVRTC (gpu.h), one at a
 * time (NVRTC compiles in this process; the cache makes repeats free). */
static ob_status build_gpu(ob_ctx *ctx, const ob_target *t, const ob_build_opts *o,
                           const struct ob_lowered *const *fns, const char *const *names, int n,
                           ob_kernel_artifact *out) {
  ob_status st = ob_target_check_buildable(ctx, t);
  if (st) return st;
  for (int i = 0; i < n; i++) {
    ob_kernel_artifact *a = &out[i];
    snprintf(a->target, sizeof a->target, "%s", ob_target_str(t));
    a->symbol = strdup(names[i]);
    if (!a->symbol) return ob_fail(ctx, OB_ERR_NOMEM, "ob_kernel_build: out of memory");
    int nargs = ob_lowered_num_args(fns[i]);
    a->nargs = nargs < OB_KERNEL_MAX_ARGS ? nargs : OB_KERNEL_MAX_ARGS;
    for (int k = 0; k < a->nargs; k++) {
      a->arg_bytes[k] = (size_t)ob_lowered_arg_numel(fns[i], k) * ob_dtype_size(ob_lowered_arg_dtype(fns[i], k));
      a->arg_is_input[k] = !ob_lowered_arg_is_output(fns[i], k);
    }
    a->launch = fns[i]->launch;
    st = nargs > OB_KERNEL_MAX_ARGS
             ? ob_fail(ctx, OB_ERR_SCHEDULE, "kernel %s takes %d arguments; at most %d are supported", names[i],
                       nargs, OB_KERNEL_MAX_ARGS)
             : ob_lower_check_launch(ctx, fns[i], t);
    if (!st) st = ob_codegen_gpu(ctx, t, fns[i], names[i], &a->source);
    if (st == OB_ERR_NOMEM) return st;
    if (st) { /* the config cannot be a kernel for t: class 1, named */
      a->error_no = OB_MERR_INSTANTIATION;
      a->message = strdup(ob_ctx_errmsg(ctx));
      ob_ctx_clear_error(ctx);
      continue;
    }
    ob_gpu_build gb;
    st = ob_gpu_compile(ctx, t, o ? o->cache_dir : NULL, a->source, names[i], &gb);
    if (st) return st; /* no NVRTC, an unwritable cache: nothing can be built */
    a->error_no = gb.error_no;
    a->so_path = gb.path;
    a->message = gb.message;
    a->build_s = gb.build_s;
    a->cached = gb.cached;
  }
  return OB_OK;
}

ob_status ob_kernel_build(ob_ctx *ctx, const ob_target *t, const ob_build_opts *o,
                          const struct ob_lowered *const *fns, const char *const *names, int n,
                          ob_kernel_artifact *out) {
  OB_ASSERT(ctx && n >= 0 && (n == 0 || (fns && names && out)));
  for (int i = 0; i < n; i++) memset(&out[i], 0, sizeof out[i]);
  if (n == 0) return OB_OK;
  ob_status st = OB_OK;
  ob_target *own = NULL;
  if (!t) {
    if ((st = ob_target_host(ctx, &own))) return st;
    t = own;
  }
  if (ob_target_is_gpu(t)) {
    st = build_gpu(ctx, t, o, fns, names, n, out);
    ob_target_free(own);
    return st;
  }
  /* the kernels' target decides the compiler and flags too (o's cc and
   * flags still override them) */
  ob_build_opts bo = o ? *o : (ob_build_opts){0};
  bo.target = t;
  ob_build_input *in = calloc((size_t)n + 1, sizeof *in);
  ob_build_result *br = calloc((size_t)n + 1, sizeof *br);
  int *slot = calloc((size_t)n + 1, sizeof *slot);
  if (!in || !br || !slot) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "ob_kernel_build: out of memory");
    goto done;
  }
  int nb = 0;
  for (int i = 0; i < n; i++) {
    ob_kernel_artifact *a = &out[i];
    snprintf(a->target, sizeof a->target, "%s", ob_target_str(t));
    a->symbol = strdup(names[i]);
    if (!a->symbol) {
      st = ob_fail(ctx, OB_ERR_NOMEM, "ob_kernel_build: out of memory");
      goto done;
    }
    int nargs = ob_lowered_num_args(fns[i]);
    if (nargs > OB_KERNEL_MAX_ARGS) {
      a->error_no = OB_MERR_INSTANTIATION;
      char m[160];
      snprintf(m, sizeof m, "kernel %s takes %d arguments; at most %d are supported", names[i],
               nargs, OB_KERNEL_MAX_ARGS);
      a->message = strdup(m);
      continue;
    }
    a->nargs = nargs;
    for (int k = 0; k < nargs; k++) {
      a->arg_bytes[k] = (size_t)ob_lowered_arg_numel(fns[i], k) *
                        ob_dtype_size(ob_lowered_arg_dtype(fns[i], k));
      a->arg_is_input[k] = !ob_lowered_arg_is_output(fns[i], k);
    }
    if (ob_codegen_c(ctx, t, fns[i], names[i], &a->source) != OB_OK) {
      a->error_no = OB_MERR_INSTANTIATION;
      a->message = strdup(ob_ctx_errmsg(ctx));
      ob_ctx_clear_error(ctx);
      continue;
    }
    in[nb] = (ob_build_input){.source = a->source, .name = names[i]};
    slot[nb++] = i;
  }
  if (nb) st = ob_build_batch(ctx, &bo, in, nb, br);
  for (int b = 0; b < nb; b++) {
    ob_kernel_artifact *a = &out[slot[b]];
    a->error_no = br[b].error_no;
    a->message = br[b].message;
    a->so_path = br[b].so_path;
    a->build_s = br[b].build_s;
    a->cached = br[b].cached;
    br[b].message = br[b].so_path = NULL;
  }
done:
  for (int b = 0; br && b < n; b++) ob_build_result_clear(&br[b]);
  free(in);
  free(br);
  free(slot);
  ob_target_free(own);
  return st;
}

/* ---- loading and running ------------------------------------------------------------ */

struct ob_kernel {
  void *dl;
  ob_kernel_fn fn;
};

ob_status ob_kernel_load_path(ob_ctx *ctx, const char *so_path, const char *symbol,
                              ob_kernel **out) {
  OB_ASSERT(ctx && so_path && symbol && out);
  *out = NULL;
  ob_kernel *k = calloc(1, sizeof *k);
  if (!k) return ob_fail(ctx, OB_ERR_NOMEM, "loading %s: out of memory", so_path);
  k->dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!k->dl) {
    const char *e = dlerror();
    free(k);
    return ob_fail(ctx, OB_ERR_RUNTIME, "dlopen failed: %s", e ? e : so_path);
  }
  dlerror();
  void *sp = dlsym(k->dl, symbol);
  if (!sp) {
    const char *e = dlerror();
    ob_status st = ob_fail(ctx, OB_ERR_RUNTIME, "dlsym failed: %s", e ? e : symbol);
    dlclose(k->dl);
    free(k);
    return st;
  }
  *(void **)&k->fn = sp; /* POSIX: object and function pointers convert */
  *out = k;
  return OB_OK;
}

ob_status ob_kernel_load(ob_ctx *ctx, const ob_kernel_artifact *a, ob_kernel **out) {
  OB_ASSERT(ctx && a && out);
  *out = NULL;
  if (a->error_no != OB_MERR_NONE || !a->so_path || !a->symbol)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "kernel %s was not built (%s)",
                   a->symbol ? a->symbol : "(unnamed)", ob_merr_str(a->error_no));
  if (a->launch.gpu)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "kernel %s is a GPU kernel for '%s': it runs in the GPU runner (ob_runner_run with "
                   "its launch), not in this process",
                   a->symbol, a->target);
  return ob_kernel_load_path(ctx, a->so_path, a->symbol, out);
}

static void krt_parallel_for(void *pool, int64_t n, ob_krt_task fn, void *closure) {
  ob_pool_parallel_for(pool, n, fn, closure);
}

int ob_kernel_run(ob_kernel *k, void *const *bufs, ob_pool *pool) {
  OB_ASSERT(k);
  if (!pool) return k->fn(bufs, NULL);
  ob_krt rt = {.pool = pool, .parallel_for = krt_parallel_for};
  return k->fn(bufs, &rt);
}

ob_kernel_fn ob_kernel_function(const ob_kernel *k) { return k->fn; }

void ob_kernel_free(ob_kernel *k) {
  if (!k) return;
  if (k->dl) dlclose(k->dl);
  free(k);
}
