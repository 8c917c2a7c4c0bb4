/* gpu.c: compiling GPU kernels (NVRTC for CUDA; OpenCL C is stored for the
 * device driver to build at load), their cache files, and the session
 * calls, which dispatch to cuda.c or opencl.c by the target's kind. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/gpu_impl.h"

ob_status ob_gpu_set_error(ob_gpu *g, ob_status st, const char *fmt, ...) {
  if (g->err) return g->err; /* the first failure is the cause */
  g->err = st ? st : OB_ERR_RUNTIME;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->errmsg, sizeof g->errmsg, fmt, ap);
  va_end(ap);
  return ob_fail(g->ctx, g->err, "%s", g->errmsg);
}

/* ---- the cache --------------------------------------------------------------------- */
static char *cache_dir(const char *given) {
  const char *e;
  char buf[1024];
  if (given && *given) snprintf(buf, sizeof buf, "%s/gpu", given);
  else if ((e = getenv("OPBENCH_CACHE")) && *e) snprintf(buf, sizeof buf, "%s/gpu", e);
  else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(buf, sizeof buf, "%s/opbench/gpu", e);
  else if ((e = getenv("HOME")) && *e) snprintf(buf, sizeof buf, "%s/.cache/opbench/gpu", e);
  else snprintf(buf, sizeof buf, "/tmp/opbench-%u/gpu", (unsigned)getuid());
  return strdup(buf);
}

static int mkdir_p(char *dir) {
  for (char *s = dir + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      int bad = mkdir(dir, 0700) != 0 && errno != EEXIST;
      *s = c;
      if (bad) return errno;
      if (!c) break;
    }
  }
  struct stat st;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

static bool file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* Writes text to path atomically (a temporary file renamed over it). */
static ob_status write_file(ob_ctx *ctx, const char *path, const char *text, size_t len) {
  ob_out o;
  ob_status st = ob_out_open(ctx, path, NULL, 0, &o);
  if (st) return st;
  bool ok = fwrite(text, 1, len, o.f) == len;
  return ob_out_close(ctx, &o, ok);
}

void ob_gpu_build_clear(ob_gpu_build *b) {
  if (!b) return;
  free(b->path);
  free(b->message);
  memset(b, 0, sizeof *b);
}

const char *ob_gpu_nvrtc_version(char *buf, size_t cap) {
  const char *why = NULL;
  const ob_nvrtc_api *nv = ob_nvrtc_api_get(&why);
  int ma = 0, mi = 0;
  if (!nv) snprintf(buf, cap, "%s", why);
  else if (nv->nvrtcVersion(&ma, &mi) == 0) snprintf(buf, cap, "NVRTC %d.%d (%s)", ma, mi, nv->path);
  else snprintf(buf, cap, "NVRTC (%s)", nv->path);
  return buf;
}

/* NVRTC: src -> PTX text (malloc'd) or the log. */
static ob_status nvrtc_compile(ob_ctx *ctx, const ob_nvrtc_api *nv, int sm, const char *src,
                               const char *name, char **ptx, char **log) {
  *ptx = *log = NULL;
  ob_nvrtc_program p = NULL;
  char file[160];
  snprintf(file, sizeof file, "%.150s.cu", name);
  int r = nv->nvrtcCreateProgram(&p, src, file, 0, NULL, NULL);
  if (r) return ob_fail(ctx, OB_ERR_COMPILE, "NVRTC cannot take kernel %s: %s", name, nv->nvrtcGetErrorString(r));
  char arch[48];
  snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d", sm);
  const char *opts[] = {arch, "--use_fast_math", "-default-device", "--std=c++14"};
  /* --use_fast_math: as TVM's CUDA builds; the reference check's tolerance
   * (1e-4 relative) holds for its exp/tanh */
  int rc = nv->nvrtcCompileProgram(p, 4, opts);
  size_t n = 0;
  if (nv->nvrtcGetProgramLogSize(p, &n) == 0 && n > 1) {
    *log = malloc(n);
    if (*log && nv->nvrtcGetProgramLog(p, *log) != 0) (*log)[0] = '\0';
  }
  if (rc == 0 && nv->nvrtcGetPTXSize(p, &n) == 0 && n > 0) {
    *ptx = malloc(n);
    if (*ptx && nv->nvrtcGetPTX(p, *ptx) != 0) {
      free(*ptx);
      *ptx = NULL;
    }
  }
  nv->nvrtcDestroyProgram(&p);
  if (rc == 0 && !*ptx) return ob_fail(ctx, OB_ERR_NOMEM, "NVRTC: out of memory for the PTX of %s", name);
  return OB_OK; /* a compile error: *ptx NULL, the log says why */
}

ob_status ob_gpu_compile(ob_ctx *ctx, const ob_target *t, const char *dir_given, const char *src,
                         const char *name, ob_gpu_build *out) {
  OB_ASSERT(ctx && t && src && name && out);
  memset(out, 0, sizeof *out);
  const ob_target_facts *f = ob_target_get_facts(t);
  bool cuda = f->kind == OB_TARGET_CUDA;
  if (f->kind == OB_TARGET_CPU)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "ob_gpu_compile: target '%s' is not a GPU target", ob_target_str(t));
  const ob_nvrtc_api *nv = NULL;
  char version[64] = "";
  if (cuda) {
    const char *why = NULL;
    if (!(nv = ob_nvrtc_api_get(&why)))
      return ob_fail(ctx, OB_ERR_COMPILE, "target '%s': cannot compile CUDA kernels: %s", ob_target_str(t), why);
    int ma = 0, mi = 0;
    nv->nvrtcVersion(&ma, &mi);
    snprintf(version, sizeof version, "nvrtc %d.%d sm_%d", ma, mi, f->gpu.sm);
  }
  char *dir = cache_dir(dir_given);
  if (!dir) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  int err = mkdir_p(dir);
  if (err) {
    ob_status st = ob_fail(ctx, OB_ERR_IO, "kernel cache %s: %s", dir, strerror(err));
    free(dir);
    return st;
  }
  uint64_t h = ob_hash64(src, strlen(src), 0x6f7067707531ULL);
  h = ob_hash64(version, strlen(version), h);
  char hex[17];
  ob_hash_hex(h, hex);
  size_t plen = strlen(dir) + strlen(name) + 40;
  out->path = malloc(plen);
  if (!out->path) {
    free(dir);
    return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  }
  snprintf(out->path, plen, "%s/%.100s__%s.%s", dir, name, hex, cuda ? "ptx" : "cl");
  free(dir);
  if (file_exists(out->path)) {
    out->cached = true;
    return OB_OK;
  }
  ob_status st = OB_OK;
  if (!cuda) {
    st = write_file(ctx, out->path, src, strlen(src));
  } else {
    double t0 = ob_now_s();
    char *ptx = NULL, *log = NULL;
    st = nvrtc_compile(ctx, nv, f->gpu.sm, src, name, &ptx, &log);
    out->build_s = ob_now_s() - t0;
    out->message = log;
    if (!st && !ptx) {
      out->error_no = 2;
      if (!out->message) out->message = strdup("NVRTC failed without a log");
    } else if (!st) {
      st = write_file(ctx, out->path, ptx, strlen(ptx));
    }
    free(ptx);
  }
  if (st || out->error_no) {
    free(out->path);
    out->path = NULL;
  }
  return st;
}

/* ---- sessions ---------------------------------------------------------------------- */
ob_status ob_gpu_open(ob_ctx *ctx, const ob_target *t, ob_gpu **out) {
  OB_ASSERT(ctx && t && out);
  *out = NULL;
  const ob_target_facts *f = ob_target_get_facts(t);
  if (f->kind == OB_TARGET_CPU)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "ob_gpu_open: target '%s' is not a GPU target", ob_target_str(t));
  ob_status st = ob_target_check_runnable(ctx, t);
  if (st) return st;
  ob_gpu *g = calloc(1, sizeof *g);
  if (!g) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  g->ctx = ctx;
  g->kind = f->kind;
  snprintf(g->target, sizeof g->target, "%s", ob_target_str(t));
  st = g->kind == OB_TARGET_CUDA ? ob_cuda_open(g, t) : ob_opencl_open(g, t);
  if (st) {
    ob_gpu_close(g);
    return st;
  }
  *out = g;
  return OB_OK;
}

void ob_gpu_close(ob_gpu *g) {
  if (!g) return;
  if (g->kind == OB_TARGET_CUDA) ob_cuda_close(g);
  else ob_opencl_close(g);
  free(g);
}

ob_status ob_gpu_alloc(ob_gpu *g, size_t bytes, void **out) {
  if (g->err) return ob_fail(g->ctx, g->err, "%s", g->errmsg);
  return g->kind == OB_TARGET_CUDA ? ob_cuda_alloc(g, bytes ? bytes : 4, out)
                                   : ob_opencl_alloc(g, bytes ? bytes : 4, out);
}

void ob_gpu_free(ob_gpu *g, void *mem) {
  if (!g || !mem) return;
  if (g->kind == OB_TARGET_CUDA) ob_cuda_free(g, mem);
  else ob_opencl_free(g, mem);
}

ob_status ob_gpu_upload(ob_gpu *g, void *mem, const void *src, size_t bytes) {
  if (g->err) return ob_fail(g->ctx, g->err, "%s", g->errmsg);
  if (!bytes) return OB_OK;
  return g->kind == OB_TARGET_CUDA ? ob_cuda_copy(g, mem, src, bytes, true)
                                   : ob_opencl_copy(g, mem, src, bytes, true);
}

ob_status ob_gpu_download(ob_gpu *g, void *dst, const void *mem, size_t bytes) {
  if (g->err) return ob_fail(g->ctx, g->err, "%s", g->errmsg);
  if (!bytes) return OB_OK;
  return g->kind == OB_TARGET_CUDA ? ob_cuda_copy(g, dst, mem, bytes, false)
                                   : ob_opencl_copy(g, dst, mem, bytes, false);
}

ob_status ob_gpu_load(ob_gpu *g, const char *path, const char *name, const ob_launch *launch,
                      ob_gpu_kernel **out) {
  OB_ASSERT(g && path && name && launch && out);
  *out = NULL;
  if (g->err) return ob_fail(g->ctx, g->err, "%s", g->errmsg);
  ob_gpu_kernel *k = calloc(1, sizeof *k);
  if (!k) return ob_fail(g->ctx, OB_ERR_NOMEM, "out of memory");
  k->g = g;
  k->launch = *launch;
  snprintf(k->name, sizeof k->name, "%s", name);
  ob_status st = g->kind == OB_TARGET_CUDA ? ob_cuda_load(g, path, k) : ob_opencl_load(g, path, k);
  if (st) {
    ob_gpu_kernel_free(k);
    return st;
  }
  *out = k;
  return OB_OK;
}

void ob_gpu_kernel_free(ob_gpu_kernel *k) {
  if (!k) return;
  if (k->g->kind == OB_TARGET_CUDA) ob_cuda_unload(k);
  else ob_opencl_unload(k);
  free(k);
}

int ob_gpu_launch(ob_gpu_kernel *k, void *const *args, int nargs) {
  if (k->g->err) return 1;
  return k->g->kind == OB_TARGET_CUDA ? ob_cuda_launch(k, args, nargs) : ob_opencl_launch(k, args, nargs);
}

ob_status ob_gpu_sync(ob_gpu *g) {
  if (g->err) return ob_fail(g->ctx, g->err, "%s", g->errmsg);
  return g->kind == OB_TARGET_CUDA ? ob_cuda_sync(g) : ob_opencl_sync(g);
}

double ob_gpu_clock(void *user) {
  ob_gpu *g = user;
  if (g->err) return g->clock_s;
  return g->kind == OB_TARGET_CUDA ? ob_cuda_clock(g) : ob_opencl_clock(g);
}

ob_status ob_gpu_error(const ob_gpu *g) { return g->err; }
const char *ob_gpu_errmsg(const ob_gpu *g) { return g->errmsg; }
