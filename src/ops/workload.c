/* workload.c: workloads (operator + named integer attributes), their
 * attribute JSON and row in the database, and the operator registry.
 * Parsing errors name the attribute at fault. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "opbench/db.h"
#include "ops/ops_impl.h"

static const ob_op_def *const k_ops[] = {&ob_op_conv2d, &ob_op_depthwise_conv2d, &ob_op_dense, &ob_op_batch_matmul, &ob_op_relu,
                                         &ob_op_add,    &ob_op_bias_add, &ob_op_clip,
                                         &ob_op_mul, &ob_op_sigmoid, &ob_op_tanh, &ob_op_gelu, &ob_op_relu6,
                                         &ob_op_pool2d, &ob_op_global_avg_pool, &ob_op_softmax,
                                         &ob_op_layer_norm, &ob_op_batch_norm, &ob_op_concat, &ob_op_to_nchwc, &ob_op_from_nchwc};
#define NOPS ((int)(sizeof k_ops / sizeof k_ops[0]))

int ob_op_count(void) { return NOPS; }
const char *ob_op_name(int i) { return (i >= 0 && i < NOPS) ? k_ops[i]->name : NULL; }

const ob_op_def *ob_op_def_find(const char *name) {
  for (int i = 0; i < NOPS; i++)
    if (!strcmp(k_ops[i]->name, name)) return k_ops[i];
  return NULL;
}

bool ob_op_exists(const char *name) { return ob_op_def_find(name) != NULL; }

int ob_op_templates_for(const char *op, const ob_target *t, const char **names, int cap) {
  const ob_op_def *d = ob_op_def_find(op);
  if (!d) return 0;
  bool gpu = t && ob_target_is_gpu(t);
  int n = 0;
  for (int i = 0; i < d->ntmpls; i++)
    if (d->tmpls[i].gpu == gpu) {
      if (n < cap) names[n] = d->tmpls[i].name;
      n++;
    }
  return n;
}

int ob_op_templates(const char *op, const char **names, int cap) {
  return ob_op_templates_for(op, NULL, names, cap);
}

bool ob_op_template_is_gpu(const char *op, const char *tmpl) {
  const ob_op_def *d = ob_op_def_find(op);
  for (int i = 0; d && tmpl && i < d->ntmpls; i++)
    if (!strcmp(d->tmpls[i].name, tmpl)) return d->tmpls[i].gpu;
  return false;
}

const char *ob_op_untuned_template(const ob_workload *wl, const ob_target *t) {
  const ob_op_def *d = wl ? ob_op_def_find(wl->op) : NULL;
  return d && d->untuned && t ? d->untuned(wl, t) : NULL;
}

static int attr_index(const ob_workload *wl, const char *name) {
  for (int i = 0; i < wl->nattr; i++)
    if (!strcmp(wl->attr_name[i], name)) return i;
  return -1;
}

int64_t ob_workload_get(const ob_workload *wl, const char *name) {
  int i = attr_index(wl, name);
  OB_ASSERT(i >= 0); /* operator code asks only for its own attributes */
  return wl->attr[i];
}

static ob_status unknown_op(ob_ctx *ctx, const char *op) {
  ob_str known = {0};
  for (int i = 0; i < NOPS; i++) ob_str_appendf(&known, "%s%s", i ? ", " : "", k_ops[i]->name);
  ob_status st = ob_fail(ctx, OB_ERR_UNSUPPORTED, "unknown operator '%s' (known: %s)", op,
                         known.data ? known.data : "?");
  ob_str_free(&known);
  return st;
}

static ob_status set_one(ob_ctx *ctx, ob_workload *wl, const char *name, int64_t v) {
  int i = attr_index(wl, name);
  if (i < 0) {
    const ob_op_def *d = ob_op_def_find(wl->op);
    ob_str known = {0};
    for (int k = 0; d && k < d->nattrs; k++) ob_str_appendf(&known, "%s%s", k ? "," : "", d->attrs[k]);
    ob_status st = ob_fail(ctx, OB_ERR_INVALID_ARG, "operator '%s' has no attribute '%s' (attributes: %s)",
                           wl->op, name, known.data ? known.data : "");
    ob_str_free(&known);
    return st;
  }
  char what[64];
  snprintf(what, sizeof what, "%s: %s", wl->op, name);
  ob_status st = ob_check_attr(ctx, what, v);
  if (st) return st;
  wl->attr[i] = v;
  return OB_OK;
}

ob_status ob_workload_set(ob_ctx *ctx, ob_workload *wl, const char *name, int64_t v) {
  /* short forms set every dimension at once */
  static const struct { const char *alias, *names[4]; } k_alias[] = {
      {"stride", {"stride_h", "stride_w", NULL, NULL}},
      {"pad", {"pad_t", "pad_l", "pad_b", "pad_r"}},
      {"dilation", {"dil_h", "dil_w", NULL, NULL}},
  };
  for (size_t a = 0; a < sizeof k_alias / sizeof k_alias[0]; a++) {
    if (strcmp(name, k_alias[a].alias)) continue;
    if (attr_index(wl, k_alias[a].names[0]) < 0) break;
    for (int k = 0; k < 4 && k_alias[a].names[k]; k++) {
      ob_status st = set_one(ctx, wl, k_alias[a].names[k], v);
      if (st) return st;
    }
    return OB_OK;
  }
  return set_one(ctx, wl, name, v);
}

ob_status ob_workload_set_epilogue(ob_ctx *ctx, ob_workload *wl, const char *list) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  if (!d) return unknown_op(ctx, wl->op);
  if (list && *list && !d->epilogue_ok)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "operator '%s' takes no epilogue (got '%s')", wl->op, list);
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ctx, list, &e);
  if (st) return st;
  if (list && strlen(list) >= sizeof wl->epilogue)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "epilogue '%s' is too long", list);
  snprintf(wl->epilogue, sizeof wl->epilogue, "%s", list ? list : "");
  return OB_OK;
}

ob_status ob_workload_parse(ob_ctx *ctx, const char *op, const char *text, ob_workload *out) {
  memset(out, 0, sizeof *out);
  const ob_op_def *d = ob_op_def_find(op);
  if (!d) return unknown_op(ctx, op);
  snprintf(out->op, sizeof out->op, "%s", op);
  out->dtype = OB_F32;
  out->nattr = d->nattrs;
  for (int i = 0; i < d->nattrs; i++) {
    snprintf(out->attr_name[i], sizeof out->attr_name[i], "%s", d->attrs[i]);
    out->attr[i] = d->defaults[i];
  }
  const char *p = text ? text : "";
  while (*p) {
    const char *eq = strchr(p, '=');
    const char *comma = strchr(p, ',');
    if (!eq || (comma && comma < eq))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "malformed shape text '%s': expected NAME=VALUE at '%s'",
                     text, p);
    char name[32];
    size_t nl = (size_t)(eq - p);
    if (nl == 0 || nl >= sizeof name)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "malformed shape text '%s': bad name at '%s'", text, p);
    memcpy(name, p, nl);
    name[nl] = 0;
    const char *num = eq + 1;
    char *end;
    errno = 0;
    long long v = strtoll(num, &end, 10);
    if (end == num || errno || (*end && *end != ','))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "malformed shape text '%s': '%s' needs an integer value",
                     text, name);
    ob_status st = set_one(ctx, out, name, v);
    if (st) return st;
    p = *end ? end + 1 : end;
    if (*end == ',' && !*p)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "malformed shape text '%s': trailing comma", text);
  }
  for (int i = 0; i < out->nattr; i++)
    if (out->attr[i] == OB_ATTR_REQUIRED)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "operator '%s' needs attribute '%s' in --shape", op,
                     out->attr_name[i]);
  return OB_OK;
}

ob_status ob_workload_validate(ob_ctx *ctx, const ob_workload *wl) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  if (!d) return unknown_op(ctx, wl->op);
  if (wl->nattr > d->nattrs)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: %d attributes, the operator has %d", wl->op,
                   wl->nattr, d->nattrs);
  /* In range, every attribute leaves the operators' validate functions room
   * to add and multiply a few of them in int64 before their checked sizes. A
   * workload built by hand may lack what ob_workload_parse fills in. */
  for (int i = 0; i < d->nattrs; i++) {
    if (i >= wl->nattr || wl->attr[i] == OB_ATTR_REQUIRED)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: missing attribute '%s'", wl->op, d->attrs[i]);
    if (strncmp(wl->attr_name[i], d->attrs[i], sizeof wl->attr_name[i]))
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "%s: attribute %d is '%.12s', expected '%s'", wl->op,
                     i, wl->attr_name[i], d->attrs[i]);
    char what[64];
    snprintf(what, sizeof what, "%s: %s", wl->op, d->attrs[i]);
    ob_status st = ob_check_attr(ctx, what, wl->attr[i]);
    if (st) return st;
  }
  ob_epilogue e;
  ob_status st = ob_epilogue_parse(ctx, wl->epilogue, &e);
  if (st) return st;
  return d->validate(ctx, wl);
}

void ob_workload_key(const ob_workload *wl, char *out, size_t cap) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  OB_ASSERT(d);
  d->key(wl, out, cap);
  if (wl->epilogue[0]) {
    size_t n = strlen(out);
    snprintf(out + n, cap > n ? cap - n : 0, "/epi:%s", wl->epilogue);
  }
}

double ob_workload_flops(const ob_workload *wl) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  OB_ASSERT(d);
  return d->flops(wl);
}

void ob_workload_attrs(const ob_workload *wl, ob_str *a) {
  ob_str_appendf(a, "{\"dtype\":\"%s\"", ob_dtype_name(wl->dtype));
  for (int i = 0; i < wl->nattr; i++)
    ob_str_appendf(a, ",\"%s\":%lld", wl->attr_name[i], (long long)wl->attr[i]);
  if (wl->epilogue[0]) ob_str_appendf(a, ",\"epilogue\":\"%s\"", wl->epilogue);
  ob_str_append(a, "}");
}

ob_status ob_workload_store(ob_db *db, const ob_workload *wl) {
  OB_ASSERT(db && wl);
  char key[512];
  ob_workload_key(wl, key, sizeof key);
  ob_str a = {0};
  ob_workload_attrs(wl, &a);
  ob_status s = a.failed ? ob_fail(ob_db_ctx(db), OB_ERR_NOMEM, "workload %s: out of memory", key)
                         : ob_db_put_workload(db, key, wl->op, a.data, ob_workload_flops(wl));
  ob_str_free(&a);
  return s;
}

ob_status ob_workload_from_attrs(ob_ctx *ctx, const char *op, const char *attrs_json,
                                 ob_workload *out) {
  cJSON *j = attrs_json ? cJSON_Parse(attrs_json) : NULL;
  ob_status st = OB_OK;
  ob_str text = {0};
  if (!cJSON_IsObject(j)) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "workload attributes of %s: not a JSON object", op);
    goto done;
  }
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
  if (dt && !(cJSON_IsString(dt) && !strcmp(dt->valuestring, "float32"))) {
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "workload attributes of %s: dtype %s is not float32",
                 op, cJSON_IsString(dt) ? dt->valuestring : "(not a string)");
    goto done;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, j) {
    if (!cJSON_IsNumber(it)) continue;
    ob_str_appendf(&text, "%s%s=%lld", text.len ? "," : "", it->string, (long long)it->valuedouble);
  }
  if (text.failed) {
    st = ob_fail(ctx, OB_ERR_NOMEM, "workload attributes of %s: out of memory", op);
    goto done;
  }
  st = ob_workload_parse(ctx, op, text.data ? text.data : "", out);
  const cJSON *epi = cJSON_GetObjectItemCaseSensitive(j, "epilogue");
  if (!st && cJSON_IsString(epi)) st = ob_workload_set_epilogue(ctx, out, epi->valuestring);
  if (!st) st = ob_workload_validate(ctx, out);
done:
  ob_str_free(&text);
  cJSON_Delete(j);
  return st;
}

int ob_workload_num_args(const ob_workload *wl) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  OB_ASSERT(d);
  ob_arg_info a[OB_MAX_ARGS];
  return d->args(wl, a);
}

int64_t ob_workload_arg_numel(const ob_workload *wl, int i) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  OB_ASSERT(d);
  ob_arg_info a[OB_MAX_ARGS];
  int n = d->args(wl, a);
  OB_ASSERT(i >= 0 && i < n);
  return a[i].numel;
}

bool ob_workload_arg_is_input(const ob_workload *wl, int i) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  OB_ASSERT(d);
  ob_arg_info a[OB_MAX_ARGS];
  int n = d->args(wl, a);
  OB_ASSERT(i >= 0 && i < n);
  return a[i].is_input;
}

void ob_workload_reference(const ob_workload *wl, void *const *bufs) {
  const ob_op_def *d = ob_op_def_find(wl->op);
  OB_ASSERT(d);
  d->reference(wl, bufs);
}
