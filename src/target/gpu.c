/* gpu.c: the GPU targets `cuda` and `opencl`: parsing their options and
 * reading their facts from the device. The device is asked in a forked
 * child that reports the facts through a pipe and exits, so that this
 * process never initialises a GPU runtime itself: CUDA refuses to work in
 * a child forked after cuInit, and PoCL's worker threads do not survive a
 * fork, while the runners fork their workers from this process later.
 * Without a device, a CUDA target takes its facts from a table per
 * architecture (what NVIDIA documents for the part named in the row) and
 * can be built but not run; an OpenCL target without its platform or
 * device can be neither. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target/gpu_api.h"
#include "target/target_impl.h"

/* ---- CUDA architectures --------------------------------------------------------- */
typedef struct arch_row {
  int sm;
  const char *part; /* the part whose SM count the row assumes */
  int sms;
} arch_row;

/* Facts common to every architecture since sm_30: 1024 threads per block,
 * blocks of 1024 x 1024 x 64, grids of (2^31 - 1) x 65535 x 65535, 48 KiB of
 * static shared memory per block (more only through dynamic opt-in, which
 * the generated kernels do not use), warps of 32, 64 Ki registers per
 * block. */
static const arch_row k_archs[] = {
    {75, "Tesla T4", 40},    {80, "A100", 108},     {86, "A10", 72},
    {87, "Jetson AGX Orin", 16}, {89, "L4", 58},    {90, "H100 SXM", 132},
    {100, "B200", 148},      {120, "RTX PRO 6000", 188},
};
#define OB_CUDA_DEFAULT_SM 80

static const arch_row *find_arch(int sm) {
  for (size_t i = 0; i < sizeof k_archs / sizeof k_archs[0]; i++)
    if (k_archs[i].sm == sm) return &k_archs[i];
  return NULL;
}

static void cuda_table_facts(ob_gpu_facts *g, int sm) {
  const arch_row *r = find_arch(sm);
  g->sm = sm;
  g->max_threads_per_block = 1024;
  g->max_block_dim[0] = g->max_block_dim[1] = 1024;
  g->max_block_dim[2] = 64;
  g->max_grid_dim[0] = 2147483647;
  g->max_grid_dim[1] = g->max_grid_dim[2] = 65535;
  g->max_shared_per_block = 48 << 10;
  g->warp_size = 32;
  g->max_registers_per_block = 65536;
  g->compute_units = r ? r->sms : 80;
  snprintf(g->device_name, sizeof g->device_name, "no device: facts of sm_%d (%s)", sm,
           r ? r->part : "generic");
}

/* ---- asking the device in a child ----------------------------------------------- */
typedef struct probe_reply {
  int ok;               /* 1: facts filled; 0: why[] says what is missing */
  ob_gpu_facts g;
  char why[400];
} probe_reply;

static void probe_cuda(int device, probe_reply *rep) {
  const char *why = NULL;
  const ob_cuda_api *cu = ob_cuda_api_get(&why);
  if (!cu) {
    snprintf(rep->why, sizeof rep->why, "%s", why);
    return;
  }
  int n = 0;
  ob_cu_result r = cu->cuDeviceGetCount(&n);
  if (r || device >= n) {
    snprintf(rep->why, sizeof rep->why, "no CUDA device %d (this machine has %d)", device, r ? 0 : n);
    return;
  }
  ob_cu_device d;
  if ((r = cu->cuDeviceGet(&d, device)) != 0) {
    snprintf(rep->why, sizeof rep->why, "cuDeviceGet(%d): %s", device, ob_cu_errstr(cu, r));
    return;
  }
  ob_gpu_facts *g = &rep->g;
  int v[16] = {0};
  static const int attrs[] = {
      OB_CU_ATTR_MAX_THREADS_PER_BLOCK, OB_CU_ATTR_MAX_BLOCK_DIM_X, OB_CU_ATTR_MAX_BLOCK_DIM_Y,
      OB_CU_ATTR_MAX_BLOCK_DIM_Z, OB_CU_ATTR_MAX_GRID_DIM_X, OB_CU_ATTR_MAX_GRID_DIM_Y,
      OB_CU_ATTR_MAX_GRID_DIM_Z, OB_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, OB_CU_ATTR_WARP_SIZE,
      OB_CU_ATTR_MAX_REGISTERS_PER_BLOCK, OB_CU_ATTR_MULTIPROCESSOR_COUNT,
      OB_CU_ATTR_COMPUTE_CAPABILITY_MAJOR, OB_CU_ATTR_COMPUTE_CAPABILITY_MINOR};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    if ((r = cu->cuDeviceGetAttribute(&v[i], attrs[i], d)) != 0) {
      snprintf(rep->why, sizeof rep->why, "cuDeviceGetAttribute(%d) on device %d: %s", attrs[i],
               device, ob_cu_errstr(cu, r));
      return;
    }
  g->max_threads_per_block = v[0];
  g->max_block_dim[0] = v[1];
  g->max_block_dim[1] = v[2];
  g->max_block_dim[2] = v[3];
  g->max_grid_dim[0] = v[4];
  g->max_grid_dim[1] = v[5];
  g->max_grid_dim[2] = v[6];
  g->max_shared_per_block = v[7];
  g->warp_size = v[8];
  g->max_registers_per_block = v[9];
  g->compute_units = v[10];
  g->sm = v[11] * 10 + v[12];
  size_t mem = 0;
  if (cu->cuDeviceTotalMem(&mem, d) == 0) g->global_mem_bytes = (int64_t)mem;
  cu->cuDeviceGetName(g->device_name, (int)sizeof g->device_name, d);
  g->device_name[sizeof g->device_name - 1] = '\0';
  rep->ok = 1;
}

static void probe_opencl(int platform, int device, probe_reply *rep) {
  const char *why = NULL;
  const ob_opencl_api *cl = ob_opencl_api_get(&why);
  if (!cl) {
    snprintf(rep->why, sizeof rep->why, "%s", why);
    return;
  }
  cl_uint np = 0;
  cl_int e = cl->clGetPlatformIDs(0, NULL, &np);
  if (e || np == 0) {
    const char *vend = getenv("OCL_ICD_VENDORS");
    snprintf(rep->why, sizeof rep->why,
             "no OpenCL platform is installed (the ICD loader found none in %s: %s; Debian "
             "package pocl-opencl-icd runs OpenCL on the CPU)",
             vend && *vend ? vend : "/etc/OpenCL/vendors", ob_cl_errstr(e ? e : CL_DEVICE_NOT_FOUND));
    return;
  }
  if ((cl_uint)platform >= np) {
    snprintf(rep->why, sizeof rep->why, "no OpenCL platform %d (%u installed)", platform, np);
    return;
  }
  cl_platform_id *pl = calloc(np, sizeof *pl);
  if (!pl) {
    snprintf(rep->why, sizeof rep->why, "out of memory");
    return;
  }
  cl->clGetPlatformIDs(np, pl, NULL);
  cl_platform_id p = pl[platform];
  free(pl);
  ob_gpu_facts *g = &rep->g;
  cl->clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof g->platform_name, g->platform_name, NULL);
  g->platform_name[sizeof g->platform_name - 1] = '\0';
  cl_uint nd = 0;
  e = cl->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
  if (e || (cl_uint)device >= nd) {
    snprintf(rep->why, sizeof rep->why, "no device %d on OpenCL platform %d (%s has %u)", device,
             platform, g->platform_name, e ? 0 : nd);
    return;
  }
  cl_device_id *ds = calloc(nd, sizeof *ds);
  if (!ds) {
    snprintf(rep->why, sizeof rep->why, "out of memory");
    return;
  }
  cl->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds, NULL);
  cl_device_id d = ds[device];
  free(ds);
  size_t wg = 0, dims[3] = {0, 0, 0};
  cl_ulong local = 0, gmem = 0;
  cl_uint cu = 0;
  cl_device_type type = 0;
  cl->clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  cl->clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dims, dims, NULL);
  cl->clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
  cl->clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
  cl->clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  cl->clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  cl->clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof g->device_name, g->device_name, NULL);
  g->device_name[sizeof g->device_name - 1] = '\0';
  g->max_threads_per_block = wg > 1u << 30 ? 1 << 30 : (int)wg;
  for (int i = 0; i < 3; i++) {
    g->max_block_dim[i] = dims[i] > 1u << 30 ? 1 << 30 : (int)dims[i];
    /* OpenCL bounds the global size by size_t only; work-groups per
     * dimension as CUDA's first one */
    g->max_grid_dim[i] = 2147483647;
  }
  g->max_shared_per_block = (int64_t)local;
  g->global_mem_bytes = (int64_t)gmem;
  g->compute_units = (int)cu;
  g->cpu_device = (type & CL_DEVICE_TYPE_CPU) != 0;
  /* subgroups: the vendors' attributes (cl_nv_device_attribute_query,
   * cl_amd_device_attribute_query); a CPU device runs work-items as loop
   * iterations, not SIMT lanes */
  cl_uint w = 0;
  if (cl->clGetDeviceInfo(d, 0x4003 /* CL_DEVICE_WARP_SIZE_NV */, sizeof w, &w, NULL) == 0 && w)
    g->warp_size = (int)w;
  else if (cl->clGetDeviceInfo(d, 0x4043 /* CL_DEVICE_WAVEFRONT_WIDTH_AMD */, sizeof w, &w, NULL) == 0 && w)
    g->warp_size = (int)w;
  else
    g->warp_size = g->cpu_device ? 1 : 0;
  rep->ok = 1;
}

/* Runs the probe in a child; false with why[] when it could not run or the
 * device is missing. */
static void probe(ob_target_kind kind, int platform, int device, probe_reply *out) {
  memset(out, 0, sizeof *out);
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(out->why, sizeof out->why, "pipe: %s", strerror(errno));
    return;
  }
  fflush(NULL); /* the child exits with _exit; nothing is written twice */
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(out->why, sizeof out->why, "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    probe_reply rep;
    memset(&rep, 0, sizeof rep);
    if (kind == OB_TARGET_CUDA) probe_cuda(device, &rep);
    else probe_opencl(platform, device, &rep);
    const char *p = (const char *)&rep;
    size_t left = sizeof rep;
    while (left) {
      ssize_t k = write(fds[1], p, left);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      p += k;
      left -= (size_t)k;
    }
    _exit(0);
  }
  close(fds[1]);
  char *p = (char *)out;
  size_t got = 0;
  while (got < sizeof *out) {
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    int rc = poll(&pfd, 1, 60000); /* a driver may take seconds to start */
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    ssize_t k = read(fds[0], p + got, sizeof *out - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fds[0]);
  if (got < sizeof *out) kill(pid, SIGKILL);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got < sizeof *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->why, sizeof out->why, "the %s driver crashed or hung while asked for its devices",
             kind == OB_TARGET_CUDA ? "CUDA" : "OpenCL");
  }
  out->why[sizeof out->why - 1] = '\0';
}

/* ---- parsing ------------------------------------------------------------------------ */
static bool parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = (int)v;
  return true;
}

/* Architectures NVRTC compiles for, as "75 80 ..." (empty when NVRTC is
 * missing or does not say). */
static void nvrtc_archs(char *buf, size_t cap, int *archs, int *narchs) {
  buf[0] = '\0';
  *narchs = 0;
  const ob_nvrtc_api *nv = ob_nvrtc_api_get(NULL);
  int n = 0;
  if (!nv || !nv->nvrtcGetNumSupportedArchs || !nv->nvrtcGetSupportedArchs ||
      nv->nvrtcGetNumSupportedArchs(&n) != 0 || n <= 0 || n > 64)
    return;
  if (nv->nvrtcGetSupportedArchs(archs) != 0) return;
  *narchs = n;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "%ssm_%d", i ? ", " : "", archs[i]);
  }
}

ob_status ob_target_parse_gpu(ob_ctx *ctx, const char *text, ob_target_kind kind, char *const *opts,
                              int nopts, ob_target *t) {
  const char *kname = kind == OB_TARGET_CUDA ? "cuda" : "opencl";
  const char *arch = NULL;
  int device = 0, platform = 0;
  bool have_dev = false, have_plat = false;
  for (int i = 0; i < nopts; i++) {
    char *o = opts[i], *eq = strchr(o, '=');
    if (o[0] != '-' || o[1] == '-' || !eq || eq == o + 1 || !eq[1])
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': malformed option '%s' (expected -name=value)",
                     text, o);
    size_t nl = (size_t)(eq - o - 1);
    const char *v = eq + 1;
#define OPT_IS(s) (nl == strlen(s) && !strncmp(o + 1, s, nl))
    bool twice = false;
    if (OPT_IS("device")) {
      twice = have_dev;
      have_dev = true;
      if (!twice && !parse_int(v, 0, 1023, &device))
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': -device=%s is not a device number (0-1023)",
                       text, v);
    } else if (kind == OB_TARGET_CUDA && OPT_IS("arch")) {
      twice = arch != NULL;
      arch = v;
    } else if (kind == OB_TARGET_OPENCL && OPT_IS("platform")) {
      twice = have_plat;
      have_plat = true;
      if (!twice && !parse_int(v, 0, 1023, &platform))
        return ob_fail(ctx, OB_ERR_INVALID_ARG,
                       "target '%s': -platform=%s is not a platform number (0-1023)", text, v);
    } else {
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': unknown option '%.*s' for %s (known: %s)", text,
                     (int)(eq - o), o, kname,
                     kind == OB_TARGET_CUDA ? "-arch=sm_XY, -device=N" : "-platform=P, -device=N");
    }
#undef OPT_IS
    if (twice)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "target '%s': option '%.*s' given twice", text, (int)(eq - o), o);
  }
  int sm = 0;
  if (arch) {
    const char *digits = !strncmp(arch, "sm_", 3) ? arch + 3 : NULL;
    if (!digits || strlen(digits) < 2 || strlen(digits) > 3 || !parse_int(digits, 10, 999, &sm))
      return ob_fail(ctx, OB_ERR_INVALID_ARG,
                     "target '%s': malformed -arch=%s (expected sm_XY, e.g. sm_80)", text, arch);
    char list[512];
    int archs[64], na;
    nvrtc_archs(list, sizeof list, archs, &na);
    bool known = na == 0; /* without NVRTC's list any sm_XY is taken */
    for (int i = 0; i < na; i++) known |= archs[i] == sm;
    if (!known)
      return ob_fail(ctx, OB_ERR_INVALID_ARG,
                     "target '%s': NVRTC does not compile for -arch=%s (it knows %s)", text, arch, list);
  }

  ob_target_facts *f = &t->facts;
  f->kind = kind;
  ob_gpu_facts *g = &f->gpu;
  probe_reply rep;
  probe(kind, platform, device, &rep);
  if (rep.ok) {
    *g = rep.g;
    g->present = true;
  } else {
    memset(g, 0, sizeof *g);
    snprintf(t->gpu_missing, sizeof t->gpu_missing, "%s", rep.why);
    if (kind == OB_TARGET_CUDA) {
      cuda_table_facts(g, sm ? sm : OB_CUDA_DEFAULT_SM);
    } else {
      /* OpenCL 1.2's guaranteed minimums: nothing can be built anyway */
      g->max_threads_per_block = 256;
      g->max_block_dim[0] = g->max_block_dim[1] = g->max_block_dim[2] = 256;
      g->max_grid_dim[0] = g->max_grid_dim[1] = g->max_grid_dim[2] = 2147483647;
      g->max_shared_per_block = 32 << 10;
      snprintf(g->device_name, sizeof g->device_name, "no device");
    }
  }
  g->device = device;
  g->platform = platform;
  if (kind == OB_TARGET_CUDA) {
    t->device_sm = g->present ? g->sm : 0;
    if (sm) g->sm = sm; /* code for the named architecture; the device runs it if newer */
  }
  /* host-side facts: kernels are not host code, the host's C compiler and
   * timing floor are what the rest of the tool uses */
  f->isa = OB_ISA_SCALAR;
  snprintf(f->arch, sizeof f->arch, "%s", kind == OB_TARGET_CUDA ? "nvptx64" : "opencl");
  f->vector_bits = 32;
  f->lanes_f32 = 1;
  f->vector_registers = 0;
  f->accum_budget = 0;
  f->native = g->present && (kind != OB_TARGET_CUDA || t->device_sm >= g->sm);
  f->emulated = false;
  f->min_repeat_ms = 1.0;
  snprintf(f->cc, sizeof f->cc, "%s", kind == OB_TARGET_CUDA ? "nvrtc" : "opencl");
  f->cflags[0] = '\0';

  if (kind == OB_TARGET_CUDA) {
    int n = snprintf(t->str, sizeof t->str, "cuda -arch=sm_%d", g->sm);
    if (device) snprintf(t->str + n, sizeof t->str - (size_t)n, " -device=%d", device);
  } else {
    int n = snprintf(t->str, sizeof t->str, "opencl");
    if (platform) n += snprintf(t->str + n, sizeof t->str - (size_t)n, " -platform=%d", platform);
    if (device) snprintf(t->str + n, sizeof t->str - (size_t)n, " -device=%d", device);
  }
  return OB_OK;
}

ob_status ob_target_check_gpu(ob_ctx *ctx, const ob_target *t, bool run) {
  const ob_target_facts *f = &t->facts;
  const ob_gpu_facts *g = &f->gpu;
  if (f->kind == OB_TARGET_CUDA) {
    if (!run) {
      const char *why = NULL;
      if (!ob_nvrtc_api_get(&why))
        return ob_fail(ctx, OB_ERR_COMPILE, "target '%s': cannot compile CUDA kernels: %s", t->str, why);
      return OB_OK;
    }
    if (!g->present)
      return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                     "target '%s': no GPU to run its kernels on (%s); --build-only compiles them "
                     "through NVRTC and checks their launch limits without running them",
                     t->str, t->gpu_missing);
    if (t->device_sm < g->sm)
      return ob_fail(ctx, OB_ERR_UNSUPPORTED,
                     "target '%s': device %d (%s) is sm_%d, older than the target's sm_%d; build for "
                     "-arch=sm_%d or --build-only",
                     t->str, g->device, g->device_name, t->device_sm, g->sm, t->device_sm);
    return OB_OK;
  }
  if (!g->present)
    return ob_fail(ctx, OB_ERR_UNSUPPORTED, "target '%s': %s", t->str, t->gpu_missing);
  return OB_OK;
}
