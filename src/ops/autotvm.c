/* autotvm.c: which AutoTVM tasks are opbench workloads. TVM's x86 task
 * names and argument lists (conv2d_NCHWc / conv2d_nchw: NCHW float32
 * convolutions without groups; dense_nopack / dense_pack: float32 dense,
 * with or without bias) map to conv2d and dense workloads, and those
 * workloads' attributes back to TVM's argument lists. The db's AutoTVM
 * import and export take this as their ob_db_autotvm_i, so the db itself
 * knows no operator. Every cJSON tree here is owned by the function that
 * parsed or built it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "opbench/db.h"
#include "ops/ops_impl.h"

static bool as_int(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v)) return false;
  double d = v->valuedouble;
  if (!(d == floor(d) && fabs(d) <= 9007199254740992.0)) return false;
  *out = (int64_t)d;
  return true;
}

/* ["TENSOR", [d0, d1, ...], "float32"] */
static bool tensor(const cJSON *t, int64_t *shape, int cap, int *ndim, const char **dtype) {
  if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != 3) return false;
  const cJSON *tag = cJSON_GetArrayItem(t, 0), *sh = cJSON_GetArrayItem(t, 1),
              *dt = cJSON_GetArrayItem(t, 2);
  if (!cJSON_IsString(tag) || strcmp(tag->valuestring, "TENSOR") || !cJSON_IsArray(sh) ||
      !cJSON_IsString(dt))
    return false;
  int n = cJSON_GetArraySize(sh);
  if (n > cap) return false;
  for (int i = 0; i < n; i++)
    if (!as_int(cJSON_GetArrayItem(sh, i), &shape[i]) || shape[i] < 0) return false;
  *ndim = n;
  *dtype = dt->valuestring;
  return true;
}

/* An int or a list of 1 or 2 ints -> (h, w). */
static bool pair(const cJSON *v, int64_t out[2]) {
  if (as_int(v, &out[0])) {
    out[1] = out[0];
    return true;
  }
  if (!cJSON_IsArray(v)) return false;
  int n = cJSON_GetArraySize(v);
  if (n == 1 && as_int(cJSON_GetArrayItem(v, 0), &out[0])) {
    out[1] = out[0];
    return true;
  }
  return n == 2 && as_int(cJSON_GetArrayItem(v, 0), &out[0]) &&
         as_int(cJSON_GetArrayItem(v, 1), &out[1]);
}

/* TVM's get_pad_tuple: an int, (pad_h, pad_w) or (top, left, bottom, right). */
static bool padding(const cJSON *v, int64_t out[4]) {
  int64_t hw[2];
  if (pair(v, hw)) {
    out[0] = out[2] = hw[0];
    out[1] = out[3] = hw[1];
    return true;
  }
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 4) return false;
  for (int i = 0; i < 4; i++)
    if (!as_int(cJSON_GetArrayItem(v, i), &out[i])) return false;
  return true;
}

/* conv2d_NCHWc.x86 / conv2d_nchw.x86: [data, kernel, strides, padding,
 * dilation, (layout, out_layout,) out_dtype], NCHW float32 only. */
static bool map_conv2d(const cJSON *args, ob_workload *wl) {
  int n = cJSON_GetArraySize(args);
  if (n < 5) return false;
  int64_t d[8], k[8], st[2], pad[4], dil[2];
  int dn, kn;
  const char *dt, *kt;
  if (!tensor(cJSON_GetArrayItem(args, 0), d, 8, &dn, &dt) || dn != 4 || strcmp(dt, "float32"))
    return false;
  if (!tensor(cJSON_GetArrayItem(args, 1), k, 8, &kn, &kt) || kn != 4 || strcmp(kt, "float32"))
    return false;
  if (k[1] != d[1]) return false; /* grouped or depthwise: other tasks */
  if (!pair(cJSON_GetArrayItem(args, 2), st) || !padding(cJSON_GetArrayItem(args, 3), pad) ||
      !pair(cJSON_GetArrayItem(args, 4), dil))
    return false;
  for (int i = 5; i < n; i++) {
    const cJSON *v = cJSON_GetArrayItem(args, i);
    if (!cJSON_IsString(v)) return false;
    const char *s = v->valuestring;
    bool ok = i == n - 1 ? !strcmp(s, "float32") || !*s : !strcmp(s, "NCHW") || !*s;
    if (!ok) return false;
  }
  char text[512];
  snprintf(text, sizeof text,
           "N=%lld,C=%lld,H=%lld,W=%lld,K=%lld,R=%lld,S=%lld,stride_h=%lld,stride_w=%lld,"
           "pad_t=%lld,pad_l=%lld,pad_b=%lld,pad_r=%lld,dil_h=%lld,dil_w=%lld",
           (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3], (long long)k[0],
           (long long)k[2], (long long)k[3], (long long)st[0], (long long)st[1],
           (long long)pad[0], (long long)pad[1], (long long)pad[2], (long long)pad[3],
           (long long)dil[0], (long long)dil[1]);
  return ob_workload_parse(NULL, "conv2d", text, wl) == OB_OK;
}

/* dense_nopack.x86 / dense_pack.x86: [data [M,K], weight [N,K], bias or
 * null, out_dtype], float32 only. */
static bool map_dense(const cJSON *args, ob_workload *wl) {
  int n = cJSON_GetArraySize(args);
  if (n < 2 || n > 4) return false;
  int64_t a[8], b[8], c[8];
  int an, bn, cn;
  const char *at, *bt, *ct;
  if (!tensor(cJSON_GetArrayItem(args, 0), a, 8, &an, &at) || an != 2 || strcmp(at, "float32"))
    return false;
  if (!tensor(cJSON_GetArrayItem(args, 1), b, 8, &bn, &bt) || bn != 2 || strcmp(bt, "float32") ||
      b[1] != a[1])
    return false;
  bool bias = false;
  if (n >= 3) {
    const cJSON *v = cJSON_GetArrayItem(args, 2);
    if (tensor(v, c, 8, &cn, &ct)) {
      if (cn != 1 || c[0] != b[0] || strcmp(ct, "float32")) return false;
      bias = true;
    } else if (!cJSON_IsNull(v)) {
      return false;
    }
  }
  if (n == 4) {
    const cJSON *v = cJSON_GetArrayItem(args, 3);
    if (!cJSON_IsNull(v) && !(cJSON_IsString(v) && !strcmp(v->valuestring, "float32")))
      return false;
  }
  char text[256];
  snprintf(text, sizeof text, "M=%lld,N=%lld,K=%lld", (long long)a[0], (long long)b[0],
           (long long)a[1]);
  if (ob_workload_parse(NULL, "dense", text, wl) != OB_OK) return false;
  return !bias || ob_workload_set_epilogue(NULL, wl, "bias") == OB_OK;
}

/* The task name without its target suffix: "conv2d_NCHWc.x86" -> "conv2d_NCHWc". */
static bool task_is(const char *task, const char *const *bases) {
  size_t n = strcspn(task, ".");
  for (int i = 0; bases[i]; i++)
    if (strlen(bases[i]) == n && !strncmp(task, bases[i], n)) return true;
  return false;
}

/* ob_db_autotvm_i.from_task. */
static bool from_task(void *ctx, const char *task, const char *args_json, ob_db_wl_desc *out) {
  static const char *const k_conv[] = {"conv2d_NCHWc", "conv2d_nchw", "conv2d_winograd", NULL};
  static const char *const k_dense[] = {"dense_nopack", "dense_pack", "dense", NULL};
  (void)ctx;
  cJSON *args = cJSON_Parse(args_json);
  ob_workload wl;
  bool ok = false;
  if (cJSON_IsArray(args)) {
    if (task_is(task, k_conv)) ok = map_conv2d(args, &wl);
    if (!ok && task_is(task, k_dense)) ok = map_dense(args, &wl);
  }
  cJSON_Delete(args);
  if (!ok || ob_workload_validate(NULL, &wl) != OB_OK) return false;
  char key[512];
  ob_workload_key(&wl, key, sizeof key);
  ob_str a = {0};
  ob_workload_attrs(&wl, &a);
  out->key = strdup(key);
  out->op = strdup(wl.op);
  out->attrs = ob_str_take(&a);
  out->flops = ob_workload_flops(&wl);
  return true;
}

static int64_t attr_int(const cJSON *attrs, const char *name, bool *ok) {
  int64_t v = 0;
  if (!as_int(cJSON_GetObjectItemCaseSensitive(attrs, name), &v)) *ok = false;
  return v;
}

static cJSON *tensor_json(const int64_t *shape, int n) {
  cJSON *t = cJSON_CreateArray();
  cJSON_AddItemToArray(t, cJSON_CreateString("TENSOR"));
  cJSON *sh = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[i]));
  cJSON_AddItemToArray(t, sh);
  cJSON_AddItemToArray(t, cJSON_CreateString("float32"));
  return t;
}

static cJSON *ints_json(const int64_t *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
  return a;
}

/* TVM's x86 argument lists for conv2d and dense workloads; NULL for any
 * other operator or an attribute set that does not fit. */
static cJSON *args_from_attrs(const char *op, const cJSON *attrs) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(attrs, "dtype");
  if (!cJSON_IsObject(attrs) || (dt && !(cJSON_IsString(dt) && !strcmp(dt->valuestring, "float32"))))
    return NULL;
  const cJSON *epi = cJSON_GetObjectItemCaseSensitive(attrs, "epilogue");
  const char *e = cJSON_IsString(epi) ? epi->valuestring : "";
  bool ok = true;
  if (op && !strcmp(op, "conv2d")) {
    const char *names[] = {"N", "C", "H", "W", "K", "R", "S", "stride_h", "stride_w", "pad_t",
                           "pad_l", "pad_b", "pad_r", "dil_h", "dil_w", "groups"};
    int64_t v[16];
    for (int i = 0; i < 16; i++) v[i] = attr_int(attrs, names[i], &ok);
    if (!ok || v[15] != 1) return NULL;
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){v[0], v[1], v[2], v[3]}, 4));
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){v[4], v[1], v[5], v[6]}, 4));
    cJSON_AddItemToArray(a, ints_json(v + 7, 2));
    cJSON_AddItemToArray(a, ints_json(v + 9, 4));
    cJSON_AddItemToArray(a, ints_json(v + 13, 2));
    cJSON_AddItemToArray(a, cJSON_CreateString("NCHW"));
    cJSON_AddItemToArray(a, cJSON_CreateString("NCHW"));
    cJSON_AddItemToArray(a, cJSON_CreateString("float32"));
    return a;
  }
  if (op && !strcmp(op, "dense")) {
    int64_t m = attr_int(attrs, "M", &ok), n = attr_int(attrs, "N", &ok),
            k = attr_int(attrs, "K", &ok);
    if (!ok) return NULL;
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){m, k}, 2));
    cJSON_AddItemToArray(a, tensor_json((int64_t[]){n, k}, 2));
    cJSON_AddItemToArray(a, strstr(e, "bias") ? tensor_json(&n, 1) : cJSON_CreateNull());
    cJSON_AddItemToArray(a, cJSON_CreateString("float32"));
    return a;
  }
  return NULL;
}

/* ob_db_autotvm_i.to_args. */
static char *to_args(void *ctx, const char *op, const char *attrs_json) {
  (void)ctx;
  cJSON *attrs = cJSON_Parse(attrs_json ? attrs_json : "{}");
  cJSON *args = args_from_attrs(op, attrs);
  char *text = args ? cJSON_PrintUnformatted(args) : NULL;
  cJSON_Delete(args);
  cJSON_Delete(attrs);
  return text;
}

static const ob_db_autotvm_i k_autotvm_map = {from_task, to_args};

const ob_db_autotvm_i *ob_op_autotvm_map(void) { return &k_autotvm_map; }
