/* host.c: describes the machine (CPU model, ISA, core counts, caches, OS)
 * from hwloc and /proc. The fingerprint keys tuning records: results are
 * only comparable between hosts whose fingerprints match. */
#include <ctype.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/core_impl.h"

/* The ISA flags kernels are selected by, in a fixed order so the isa string
 * (and the fingerprint) does not depend on /proc/cpuinfo's ordering. x86
 * names as in the "flags" line, Arm names as in "Features". */
static const char *const ob_isa_flags[] = {
    "sse4_2",      "avx",         "avx2",        "fma",         "f16c",
    "avx512f",     "avx512cd",    "avx512bw",    "avx512dq",    "avx512vl",
    "avx512ifma",  "avx512vbmi",  "avx512_vnni", "avx512_bf16", "avx512_fp16",
    "avx_vnni",    "amx_tile",    "amx_int8",    "amx_bf16",    "asimd",
    "asimdhp",     "asimddp",     "i8mm",        "bf16",        "sve",
    "sve2",
};

static void ob_trim_copy(char *dst, size_t cap, const char *src) {
  while (isspace((unsigned char)*src)) src++;
  size_t n = strlen(src);
  while (n && isspace((unsigned char)src[n - 1])) n--;
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static bool ob_has_token(const char *list, const char *tok) {
  size_t n = strlen(tok);
  for (const char *p = list; (p = strstr(p, tok)) != NULL; p += n) {
    bool starts = p == list || isspace((unsigned char)p[-1]);
    bool ends = p[n] == '\0' || isspace((unsigned char)p[n]);
    if (starts && ends) return true;
  }
  return false;
}

/* Reads the model name (if still unknown) and the ISA flags from the first
 * processor entry of /proc/cpuinfo. Absent file: facts stay empty. */
static void ob_read_cpuinfo(ob_host *h) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char *line = NULL;
  size_t cap = 0;
  bool have_flags = false;
  while (getline(&line, &cap, f) > 0) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    *colon = '\0';
    char key[64];
    ob_trim_copy(key, sizeof key, line);
    const char *val = colon + 1;
    if (!h->cpu_model[0] && (!strcmp(key, "model name") || !strcmp(key, "Model name") ||
                             !strcmp(key, "cpu model"))) {
      ob_trim_copy(h->cpu_model, sizeof h->cpu_model, val);
    } else if (!have_flags && (!strcmp(key, "flags") || !strcmp(key, "Features"))) {
      have_flags = true;
      size_t len = 0;
      for (size_t i = 0; i < sizeof ob_isa_flags / sizeof ob_isa_flags[0]; i++) {
        if (!ob_has_token(val, ob_isa_flags[i])) continue;
        int n = snprintf(h->isa + len, sizeof h->isa - len, "%s%s", len ? " " : "",
                         ob_isa_flags[i]);
        if (n < 0 || (size_t)n >= sizeof h->isa - len) break;
        len += (size_t)n;
      }
    }
    if (have_flags && h->cpu_model[0]) break;
  }
  free(line);
  fclose(f);
}

/* sysconf answers -1 or 0 for "unknown"; both mean "missing" here. */
static int64_t ob_sysconf_pos(int name) {
  long v = sysconf(name);
  return v > 0 ? (int64_t)v : 0;
}

static int64_t ob_cache_size(hwloc_topology_t topo, hwloc_obj_type_t type) {
  hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, 0);
  return o && o->attr ? (int64_t)o->attr->cache.size : 0;
}

static void ob_read_hwloc(ob_ctx *ctx, ob_host *h) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    ob_log(ctx, OB_LOG_WARN, "host: hwloc_topology_init failed; using sysconf");
    return;
  }
  if (hwloc_topology_load(topo) != 0) {
    ob_log(ctx, OB_LOG_WARN, "host: hwloc_topology_load failed; using sysconf");
    hwloc_topology_destroy(topo);
    return;
  }
  int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  int npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  h->ncores = ncores > 0 ? ncores : 0;
  h->npus = npus > 0 ? npus : 0;
  h->l1d_bytes = ob_cache_size(topo, HWLOC_OBJ_L1CACHE);
  h->l2_bytes = ob_cache_size(topo, HWLOC_OBJ_L2CACHE);
  h->l3_bytes = ob_cache_size(topo, HWLOC_OBJ_L3CACHE);

  /* hwloc 2 on Linux attaches CPUModel to packages, other backends to root. */
  const char *model = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "CPUModel");
  hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
  if (!model && pkg) model = hwloc_obj_get_info_by_name(pkg, "CPUModel");
  if (model) ob_trim_copy(h->cpu_model, sizeof h->cpu_model, model);
  hwloc_topology_destroy(topo);
}

ob_status ob_host_detect(ob_ctx *ctx, ob_host *out) {
  OB_ASSERT(out);
  ob_host h;
  memset(&h, 0, sizeof h);

  ob_read_hwloc(ctx, &h);
  ob_read_cpuinfo(&h);

  /* Fallbacks for hosts where hwloc saw nothing (restricted containers). */
  if (h.npus == 0) h.npus = (int)ob_sysconf_pos(_SC_NPROCESSORS_ONLN);
  if (h.ncores == 0) h.ncores = h.npus;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (h.l1d_bytes == 0) h.l1d_bytes = ob_sysconf_pos(_SC_LEVEL1_DCACHE_SIZE);
  if (h.l2_bytes == 0) h.l2_bytes = ob_sysconf_pos(_SC_LEVEL2_CACHE_SIZE);
  if (h.l3_bytes == 0) h.l3_bytes = ob_sysconf_pos(_SC_LEVEL3_CACHE_SIZE);
#endif

  if (ob_has_token(h.isa, "avx512f"))
    h.vector_bits = 512;
  else if (ob_has_token(h.isa, "avx2") || ob_has_token(h.isa, "avx"))
    h.vector_bits = 256;
  else
    h.vector_bits = 128;

  struct utsname u;
  if (uname(&u) == 0) {
    int n = snprintf(h.os, sizeof h.os, "%s %s %s", u.sysname, u.release, u.machine);
    if (n < 0) h.os[0] = '\0'; /* truncation is fine: the fields are short */
  }

  char key[1024];
  int n = snprintf(key, sizeof key, "%s|%s|%d|%d|%lld|%lld|%lld|%s", h.cpu_model, h.isa,
                   h.ncores, h.npus, (long long)h.l1d_bytes, (long long)h.l2_bytes,
                   (long long)h.l3_bytes, h.os);
  size_t klen = n < 0 ? 0 : (size_t)n < sizeof key ? (size_t)n : sizeof key - 1;
  ob_hash_hex(ob_hash64(key, klen, 0), h.fingerprint);

  ob_log(ctx, OB_LOG_INFO,
         "host %s: %s; %d cores, %d PUs; L1d %lld, L2 %lld, L3 %lld bytes; %d-bit "
         "vectors [%s]; %s",
         h.fingerprint, h.cpu_model[0] ? h.cpu_model : "unknown CPU", h.ncores, h.npus,
         (long long)h.l1d_bytes, (long long)h.l2_bytes, (long long)h.l3_bytes,
         h.vector_bits, h.isa, h.os);
  *out = h;
  return OB_OK;
}

ob_status ob_host_cpukinds(ob_ctx *ctx, ob_cpukind *kinds, int cap, int *n) {
  OB_ASSERT(kinds && cap >= 1 && n);
  *n = 0;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
    return ob_fail(ctx, OB_ERR_SYSTEM, "hwloc: cannot load the topology");
  int nk = hwloc_cpukinds_get_nr(topo, 0);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int k = 0; set && k < nk && *n < cap; k++) {
    int eff = -1;
    unsigned ninfos = 0;
    struct hwloc_info_s *infos = NULL;
    if (hwloc_cpukinds_get_info(topo, (unsigned)k, set, &eff, &ninfos, &infos, 0) != 0) continue;
    ob_cpukind *o = &kinds[*n];
    memset(o, 0, sizeof *o);
    o->efficiency = eff;
    snprintf(o->name, sizeof o->name, "kind %d", k);
    for (unsigned i = 0; i < ninfos; i++)
      if (!strcmp(infos[i].name, "CoreType") || !strcmp(infos[i].name, "FrequencyMaxMHz"))
        snprintf(o->name, sizeof o->name, "%s %s", infos[i].name, infos[i].value);
    int cpu;
    hwloc_bitmap_foreach_begin(cpu, set) {
      if (o->ncpus < OB_CPUKIND_MAX_CPUS) o->cpus[o->ncpus++] = cpu;
    }
    hwloc_bitmap_foreach_end();
    if (o->ncpus) (*n)++;
  }
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(topo);
  if (*n == 0) { /* no kinds reported: one kind, every online CPU */
    ob_cpukind *o = &kinds[0];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "all");
    o->efficiency = -1;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < online && c < OB_CPUKIND_MAX_CPUS; c++) o->cpus[o->ncpus++] = c;
    *n = 1;
  }
  return OB_OK;
}
