/* npy.c: model inputs and outputs as files: NumPy .npy (format 1.0,
 * little-endian float32, int64 or bool, C order) both ways, and raw
 * float32 of an input's exact size on the way in; shapes and dtypes as
 * text for the model commands. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opbench/graph.h"

const char *cli_dtype_text(ob_dtype dt) { return dt == OB_F32 ? "float32" : dt == OB_I64 ? "int64" : "bool"; }

void cli_shape_text(const struct ob_graph *g, int t, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  const int64_t *d = ob_graph_tensor_dims(g, t);
  for (int i = 0; i < ob_graph_tensor_ndim(g, t) && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)d[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

static const char *npy_descr(ob_dtype dt) { return dt == OB_F32 ? "<f4" : dt == OB_I64 ? "<i8" : "|b1"; }

bool cli_npy_write(const char *path, ob_dtype dt, int nd, const int64_t *dims, const void *data, size_t bytes) {
  char hdr[512];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", npy_descr(dt));
  for (int i = 0; i < nd; i++)
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld%s", (long long)dims[i], nd == 1 ? "," : i + 1 < nd ? ", " : "");
  n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
  int total = 10 + n + 1, pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  uint16_t hl = (uint16_t)(n + pad + 1);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(hl & 0xff, f);
  fputc(hl >> 8, f);
  fwrite(hdr, 1, (size_t)n, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  bool ok = fwrite(data, 1, bytes, f) == bytes;
  return (fclose(f) == 0) && ok;
}

bool cli_npy_read(const char *path, const struct ob_graph *g, int t, void *out, char *err, size_t cap) {
  ob_dtype dt = ob_graph_tensor_dtype(g, t);
  size_t bytes = (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(dt);
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    snprintf(err, cap, "'%s' is a directory", path);
    return false;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, cap, "cannot open '%s': %s", path, strerror(errno));
    return false;
  }
  unsigned char pre[10];
  bool ok = false;
  char hdr[4096];
  size_t got = fread(pre, 1, 10, f);
  if (got < 6 || memcmp(pre, "\x93NUMPY", 6)) {
    /* raw float32 of exactly the input's size */
    bool regular = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    if (dt == OB_F32 && regular && (size_t)sb.st_size == bytes) {
      rewind(f);
      ok = fread(out, 1, bytes, f) == bytes;
      if (!ok) snprintf(err, cap, "'%s': cannot read %zu bytes", path, bytes);
    } else {
      char want[256];
      cli_shape_text(g, t, want, sizeof want);
      snprintf(err, cap, "'%s' is neither a NumPy .npy file nor raw float32 of %zu bytes (input '%s' %s %s)", path,
               bytes, ob_graph_tensor_name(g, t), want, cli_dtype_text(dt));
    }
    goto done;
  }
  if (got != 10 || pre[6] != 1) {
    snprintf(err, cap, "'%s' is not a NumPy .npy file of format 1.0", path);
    goto done;
  }
  size_t hl = (size_t)pre[8] | (size_t)pre[9] << 8;
  if (hl >= sizeof hdr || fread(hdr, 1, hl, f) != hl) {
    snprintf(err, cap, "'%s': truncated .npy header", path);
    goto done;
  }
  hdr[hl] = 0;
  if (!strstr(hdr, npy_descr(dt)) || strstr(hdr, "'fortran_order': True")) {
    snprintf(err, cap, "'%s' must hold %s in C order (descr %s) for input '%s'", path, cli_dtype_text(dt),
             npy_descr(dt), ob_graph_tensor_name(g, t));
    goto done;
  }
  const char *sp = strstr(hdr, "'shape': (");
  int64_t dims[OB_GRAPH_MAX_DIMS];
  int nd = 0;
  if (sp) {
    const char *p = sp + 10;
    while (*p && *p != ')' && nd < OB_GRAPH_MAX_DIMS) {
      char *end;
      long long v = strtoll(p, &end, 10);
      if (end == p) break;
      dims[nd++] = v;
      p = end;
      while (*p == ',' || *p == ' ') p++;
    }
  }
  int tn = ob_graph_tensor_ndim(g, t);
  bool same = sp && nd == tn && !memcmp(dims, ob_graph_tensor_dims(g, t), sizeof(int64_t) * (size_t)nd);
  if (!same) {
    char want[256];
    cli_shape_text(g, t, want, sizeof want);
    snprintf(err, cap, "'%s' does not have the shape %s of input '%s'", path, want, ob_graph_tensor_name(g, t));
    goto done;
  }
  if (fread(out, 1, bytes, f) != bytes) {
    snprintf(err, cap, "'%s': truncated data (%zu bytes expected)", path, bytes);
    goto done;
  }
  ok = true;
done:
  fclose(f);
  return ok;
}
