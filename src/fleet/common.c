/* common.c: what workers, clients and the status share: broker URLs and
 * connections (hiredis; a login, a ping, reconnection with back-off), the
 * fleet key (a file only its owner may read), HMAC-SHA256 signatures
 * (OpenSSL's libcrypto) and the JSON of jobs and results. Numbers that must
 * come back bit for bit (costs, seeds, indices) are written so that they do. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "fleet/fleet_impl.h"

/* ---- URLs ------------------------------------------------------------------------ */

ob_status ob_fleet_parse_url(ob_ctx *ctx, const char *url, ob_fleet_addr *out) {
  memset(out, 0, sizeof *out);
  out->port = OB_FLEET_DEFAULT_PORT;
  if (!url || !*url) return ob_fail(ctx, OB_ERR_INVALID_ARG, "the broker URL is empty (expected redis://USER:PASSWORD@HOST:PORT)");
  const char *p = url;
  if (!strncmp(p, "redis://", 8)) p += 8;
  else if (strstr(p, "://"))
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "broker URL '%.*s...': only redis:// is understood (TLS: through stunnel, see README)",
                   (int)(strstr(p, "://") - p), p);
  size_t n = strcspn(p, "/?#");
  if (p[n] && strcmp(p + n, "/") != 0)
    return ob_fail(ctx, OB_ERR_INVALID_ARG,
                   "broker URL: unexpected path or query after the address (expected "
                   "redis://USER:PASSWORD@HOST:PORT)");
  const char *at = NULL;
  for (const char *q = p; q < p + n; q++)
    if (*q == '@') at = q;
  const char *hp = p;
  if (at) {
    const char *colon = memchr(p, ':', (size_t)(at - p));
    size_t ulen = colon ? (size_t)(colon - p) : (size_t)(at - p);
    if (ulen >= sizeof out->user) return ob_fail(ctx, OB_ERR_INVALID_ARG, "broker URL: the user name is too long");
    memcpy(out->user, p, ulen);
    if (colon) {
      size_t plen = (size_t)(at - colon - 1);
      if (plen >= sizeof out->password)
        return ob_fail(ctx, OB_ERR_INVALID_ARG, "broker URL: the password is too long");
      memcpy(out->password, colon + 1, plen);
    } else { /* redis://PASSWORD@HOST: the default user's password */
      snprintf(out->password, sizeof out->password, "%s", out->user);
      out->user[0] = '\0';
    }
    hp = at + 1;
  }
  size_t hlen = (size_t)(p + n - hp);
  const char *colon = memchr(hp, ':', hlen);
  size_t host_len = colon ? (size_t)(colon - hp) : hlen;
  if (host_len == 0 || host_len >= sizeof out->host)
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "broker URL: %s host name", host_len ? "a too long" : "no");
  memcpy(out->host, hp, host_len);
  if (colon) {
    char port[16];
    size_t plen = (size_t)(p + n - colon - 1);
    if (plen == 0 || plen >= sizeof port)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "broker URL: bad port");
    memcpy(port, colon + 1, plen);
    port[plen] = '\0';
    char *end;
    long v = strtol(port, &end, 10);
    if (*end || v < 1 || v > 65535)
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "broker URL: bad port '%s' (expected 1..65535)", port);
    out->port = (int)v;
  }
  return OB_OK;
}

void ob_fleet_addr_str(const ob_fleet_addr *a, char *buf, size_t cap) {
  if (a->user[0]) snprintf(buf, cap, "redis://%s%s@%s:%d", a->user, a->password[0] ? ":***" : "", a->host, a->port);
  else if (a->password[0]) snprintf(buf, cap, "redis://***@%s:%d", a->host, a->port);
  else snprintf(buf, cap, "redis://%s:%d", a->host, a->port);
}

ob_status ob_fleet_url_from_host(ob_ctx *ctx, const char *host, const char *port, char *buf,
                                 size_t cap) {
  if (!host || !*host) host = getenv("TVM_TRACKER_HOST");
  if (!port || !*port) port = getenv("TVM_TRACKER_PORT");
  if (!host || !*host)
    return ob_fail(ctx, OB_ERR_NOT_FOUND, "no broker given (--fleet URL, --host/--port or $TVM_TRACKER_HOST)");
  const char *user = getenv("OPBENCH_FLEET_USER"), *pw = getenv("OPBENCH_FLEET_PASSWORD");
  int n = snprintf(buf, cap, "redis://%s%s%s%s%s:%s", user && *user ? user : "",
                   pw && *pw ? ":" : "", pw && *pw ? pw : "", (user && *user) || (pw && *pw) ? "@" : "",
                   host, port && *port ? port : "6379");
  if (n < 0 || (size_t)n >= cap) return ob_fail(ctx, OB_ERR_INVALID_ARG, "--host: too long");
  return OB_OK;
}

/* ---- the key ------------------------------------------------------------------------ */

ob_status ob_fleet_key_load(ob_ctx *ctx, const char *path, ob_fleet_key *out) {
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return ob_fail(ctx, errno == ELOOP ? OB_ERR_INVALID_ARG : OB_ERR_IO,
                   "fleet key '%s': %s", path,
                   errno == ELOOP ? "a symbolic link (name the file itself)" : strerror(errno));
  struct stat sb;
  ob_status st = OB_OK;
  if (fstat(fd, &sb) != 0) st = ob_fail(ctx, OB_ERR_IO, "fleet key '%s': %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "fleet key '%s' is not a regular file", path);
  else if (sb.st_uid != geteuid())
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "fleet key '%s' belongs to uid %ld, not to this user (%ld)",
                 path, (long)sb.st_uid, (long)geteuid());
  else if (sb.st_mode & 077)
    st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                 "fleet key '%s' has mode %04o: its group or others may read or change it "
                 "(chmod 600 '%s')",
                 path, (unsigned)(sb.st_mode & 07777), path);
  else if (sb.st_size > OB_FLEET_KEY_MAX_BYTES + 64)
    st = ob_fail(ctx, OB_ERR_INVALID_ARG, "fleet key '%s' is %lld bytes (at most %d)", path,
                 (long long)sb.st_size, OB_FLEET_KEY_MAX_BYTES);
  if (!st) {
    unsigned char buf[OB_FLEET_KEY_MAX_BYTES + 64];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      st = ob_fail(ctx, OB_ERR_IO, "fleet key '%s': %s", path, strerror(errno));
    } else {
      while (n > 0 && isspace(buf[n - 1])) n--;
      if (n < OB_FLEET_KEY_MIN_BYTES || n > OB_FLEET_KEY_MAX_BYTES)
        st = ob_fail(ctx, OB_ERR_INVALID_ARG,
                     "fleet key '%s' has %zd bytes; a key has %d to %d (opbench fleet keygen --out FILE makes one)",
                     path, n, OB_FLEET_KEY_MIN_BYTES, OB_FLEET_KEY_MAX_BYTES);
      else {
        memcpy(out->bytes, buf, (size_t)n);
        out->len = (int)n;
      }
      OPENSSL_cleanse(buf, sizeof buf);
    }
  }
  close(fd);
  return st;
}

ob_status ob_fleet_key_generate(ob_ctx *ctx, const char *path) {
  char hex[65];
  fl_random_hex(hex, 32);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return ob_fail(ctx, OB_ERR_IO, "cannot create fleet key '%s': %s%s", path, strerror(errno),
                   errno == EEXIST ? " (refusing to replace a key)" : "");
  hex[64] = '\n';
  ob_status st = OB_OK;
  if (write(fd, hex, 65) != 65 || fsync(fd) != 0)
    st = ob_fail(ctx, OB_ERR_IO, "writing fleet key '%s': %s", path, strerror(errno));
  close(fd);
  OPENSSL_cleanse(hex, sizeof hex);
  if (st) unlink(path);
  return st;
}

const char *ob_fleet_key_default_path(const char *flag, char *buf, size_t cap) {
  if (flag && *flag) return flag;
  const char *e = getenv("OPBENCH_FLEET_KEY");
  if (e && *e) return e;
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  snprintf(buf, cap, "%s/.config/opbench/fleet.key", home);
  return access(buf, F_OK) == 0 ? buf : NULL;
}

/* ---- signatures ------------------------------------------------------------------ */

static void mac(const ob_fleet_key *key, const char *domain, const char *bytes, size_t len,
                unsigned char out[32]) {
  memset(out, 0, 32);
  EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  size_t outl = 0;
  bool ok = c && EVP_MAC_init(c, key->bytes, (size_t)key->len, params) &&
            EVP_MAC_update(c, (const unsigned char *)domain, strlen(domain)) &&
            EVP_MAC_update(c, (const unsigned char *)bytes, len) && EVP_MAC_final(c, out, &outl, 32);
  /* A library that cannot compute HMAC-SHA256 cannot sign or check
   * anything: that is a broken installation, not an input. */
  OB_ASSERT(ok && outl == 32);
  EVP_MAC_CTX_free(c);
  EVP_MAC_free(m);
}

void fl_sign(const ob_fleet_key *key, const char *domain, const char *bytes, size_t len,
             char out[65]) {
  unsigned char d[32];
  mac(key, domain, bytes, len, d);
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

bool fl_verify(const ob_fleet_key *key, const char *domain, const char *bytes, size_t len,
               const char *sig, size_t sig_len) {
  if (sig_len != 64) return false;
  char want[65];
  fl_sign(key, domain, bytes, len, want);
  char got[64];
  for (int i = 0; i < 64; i++) got[i] = (char)tolower((unsigned char)sig[i]);
  return CRYPTO_memcmp(want, got, 64) == 0;
}

void fl_random_hex(char *out, int n) {
  unsigned char b[64];
  OB_ASSERT(n <= 64);
  if (RAND_bytes(b, n) != 1) { /* no entropy from libcrypto: read the OS's */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    OB_ASSERT(fd >= 0 && read(fd, b, (size_t)n) == n);
    close(fd);
  }
  for (int i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

double fl_unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool fl_key_ok(const char *key) {
  size_t n = key ? strlen(key) : 0;
  if (n < 1 || n > 64) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)key[i]) && key[i] != '.' && key[i] != '_' && key[i] != '-') return false;
  return true;
}

/* ---- connections ----------------------------------------------------------------- */

static struct timeval tv_of(double s) {
  struct timeval tv = {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
  return tv;
}

void fl_close(fl_conn *fc) {
  if (fc->c) redisFree(fc->c);
  fc->c = NULL;
}

bool fl_broken(const fl_conn *fc) { return !fc->c || fc->c->err != 0; }

ob_status fl_connect(fl_conn *fc) {
  fl_close(fc);
  ob_fleet_addr_str(&fc->addr, fc->shown, sizeof fc->shown);
  if (fc->cmd_timeout_s <= 0) fc->cmd_timeout_s = 15;
  redisContext *c = redisConnectWithTimeout(fc->addr.host, fc->addr.port, tv_of(5));
  if (!c || c->err) {
    ob_status st = ob_fail(fc->ctx, OB_ERR_IO, "cannot reach the broker at %s: %s", fc->shown,
                           c ? c->errstr : "out of memory");
    if (c) redisFree(c);
    return st;
  }
  redisSetTimeout(c, tv_of(fc->cmd_timeout_s));
  fc->c = c;
  redisReply *r = NULL;
  if (fc->addr.password[0]) {
    r = fc->addr.user[0] ? redisCommand(c, "AUTH %s %s", fc->addr.user, fc->addr.password)
                         : redisCommand(c, "AUTH %s", fc->addr.password);
    if (!r || r->type == REDIS_REPLY_ERROR) {
      ob_status st = ob_fail(fc->ctx, OB_ERR_IO, "the broker at %s refused the login%s%s%s: %s",
                             fc->shown, fc->addr.user[0] ? " of user '" : "", fc->addr.user,
                             fc->addr.user[0] ? "'" : "", r ? r->str : c->errstr);
      if (r) freeReplyObject(r);
      fl_close(fc);
      return st;
    }
    freeReplyObject(r);
  }
  r = redisCommand(c, "PING");
  if (!r || r->type == REDIS_REPLY_ERROR) {
    bool noauth = r && r->str && !strncmp(r->str, "NOAUTH", 6);
    ob_status st = noauth ? ob_fail(fc->ctx, OB_ERR_IO,
                                    "the broker at %s requires a password (give "
                                    "redis://USER:PASSWORD@HOST:PORT): %s",
                                    fc->shown, r->str)
                          : ob_fail(fc->ctx, OB_ERR_IO, "the broker at %s does not answer: %s",
                                    fc->shown, r ? r->str : c->errstr);
    if (r) freeReplyObject(r);
    fl_close(fc);
    return st;
  }
  freeReplyObject(r);
  return OB_OK;
}

ob_status fl_reconnect(fl_conn *fc, double for_s) {
  double until = ob_now_s() + for_s, wait = 0.1;
  ob_log(fc->ctx, OB_LOG_WARN, "fleet: lost the broker at %s; reconnecting (up to %.0f s)", fc->shown, for_s);
  for (;;) {
    ob_status st = fl_connect(fc);
    if (!st) {
      ob_log(fc->ctx, OB_LOG_WARN, "fleet: reconnected to the broker at %s", fc->shown);
      return OB_OK;
    }
    if (ob_now_s() + wait > until) {
      ob_fail_prefix(fc->ctx, "the broker stayed away for %.0f s", for_s);
      return st;
    }
    struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
    if (wait < 2) wait *= 2;
  }
}

redisReply *fl_cmd(fl_conn *fc, const char *fmt, ...) {
  if (!fc->c) {
    ob_fail(fc->ctx, OB_ERR_IO, "not connected to the broker at %s", fc->shown);
    return NULL;
  }
  va_list ap;
  va_start(ap, fmt);
  redisReply *r = redisvCommand(fc->c, fmt, ap);
  va_end(ap);
  if (!r) ob_fail(fc->ctx, OB_ERR_IO, "the connection to the broker at %s broke: %s", fc->shown, fc->c->errstr);
  return r;
}

redisReply *fl_cmdv(fl_conn *fc, int argc, const char **argv, const size_t *len) {
  if (!fc->c) {
    ob_fail(fc->ctx, OB_ERR_IO, "not connected to the broker at %s", fc->shown);
    return NULL;
  }
  redisReply *r = redisCommandArgv(fc->c, argc, argv, len);
  if (!r) ob_fail(fc->ctx, OB_ERR_IO, "the connection to the broker at %s broke: %s", fc->shown, fc->c->errstr);
  return r;
}

const redisReply *fl_field(const redisReply *f, const char *name) {
  if (!f || f->type != REDIS_REPLY_ARRAY) return NULL;
  for (size_t i = 0; i + 1 < f->elements; i += 2)
    if (f->element[i]->type == REDIS_REPLY_STRING && !strcmp(f->element[i]->str, name) &&
        f->element[i + 1]->type == REDIS_REPLY_STRING)
      return f->element[i + 1];
  return NULL;
}

/* ---- JSON ------------------------------------------------------------------------ */

/* A double that reads back bit for bit (null for NaN and infinities). */
static cJSON *num(double v) {
  char buf[40];
  if (!isfinite(v)) return cJSON_CreateNull();
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  return cJSON_CreateRaw(buf);
}

static cJSON *u64(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
  return cJSON_CreateString(buf);
}

static double get_num(const cJSON *o, const char *name, double dflt) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
  if (cJSON_IsNumber(j)) return j->valuedouble;
  if (cJSON_IsNull(j)) return NAN;
  return dflt;
}

/* A whole number in [lo, hi], or dflt when absent: false for anything
 * else (converting an out-of-range double to int is undefined). */
static bool get_int(const cJSON *o, const char *name, int dflt, int lo, int hi, int *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!j) {
    *out = dflt;
    return true;
  }
  if (!cJSON_IsNumber(j) || !(j->valuedouble >= lo && j->valuedouble <= hi) || j->valuedouble != floor(j->valuedouble))
    return false;
  *out = (int)j->valuedouble;
  return true;
}

static bool get_u64(const cJSON *o, const char *name, uint64_t *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsString(j) || !j->valuestring[0] || !isdigit((unsigned char)j->valuestring[0])) return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(j->valuestring, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

static bool get_str(const cJSON *o, const char *name, char *buf, size_t cap) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!cJSON_IsString(j) || strlen(j->valuestring) >= cap) return false;
  snprintf(buf, cap, "%s", j->valuestring);
  return true;
}

static bool get_bool(const cJSON *o, const char *name) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, name));
}

void fl_job_clear(fl_job *j) {
  free(j->attrs);
  free(j->entity);
  j->attrs = j->entity = NULL;
}

char *fl_job_json(const fl_job *j) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "v", 1);
  cJSON_AddStringToObject(o, "id", j->id);
  cJSON_AddItemToObject(o, "ts", num(j->ts));
  cJSON_AddStringToObject(o, "nonce", j->nonce);
  cJSON_AddStringToObject(o, "key", j->key);
  cJSON_AddStringToObject(o, "reply", j->reply);
  cJSON_AddStringToObject(o, "op", j->op);
  cJSON_AddItemToObject(o, "attrs", cJSON_CreateRaw(j->attrs ? j->attrs : "{}"));
  cJSON_AddStringToObject(o, "template", j->tmpl);
  cJSON_AddStringToObject(o, "target", j->target);
  cJSON_AddItemToObject(o, "space", u64(j->space_len));
  cJSON_AddItemToObject(o, "index", u64(j->index));
  cJSON_AddItemToObject(o, "entity", cJSON_CreateRaw(j->entity ? j->entity : "[]"));
  cJSON *t = cJSON_AddObjectToObject(o, "timing");
  cJSON_AddNumberToObject(t, "number", j->timing.number);
  cJSON_AddNumberToObject(t, "repeat", j->timing.repeat);
  cJSON_AddItemToObject(t, "min_repeat_ms", num(j->timing.min_repeat_ms));
  cJSON_AddBoolToObject(t, "flush", j->timing.flush);
  cJSON_AddItemToObject(t, "max_cv", num(j->timing.max_cv));
  cJSON_AddItemToObject(t, "stability_budget_s", num(j->timing.stability_budget_s));
  cJSON_AddItemToObject(t, "timeout_s", num(j->timing.timeout_s));
  cJSON_AddNumberToObject(o, "threads", j->nthreads);
  cJSON_AddItemToObject(o, "seed", u64(j->seed));
  cJSON_AddItemToObject(o, "build_timeout_s", num(j->build_timeout_s));
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

bool fl_job_parse(const char *json, size_t len, fl_job *j, char *why, size_t cap) {
  memset(j, 0, sizeof *j);
  cJSON *o = cJSON_ParseWithLength(json, len);
  bool ok = false;
  const char *bad = NULL;
  if (!cJSON_IsObject(o)) bad = "not a JSON object";
  else if (get_num(o, "v", 0) != 1) bad = "not version 1";
  else if (!get_str(o, "id", j->id, sizeof j->id) || !j->id[0]) bad = "no id";
  else if (!isfinite(j->ts = get_num(o, "ts", NAN))) bad = "no timestamp";
  else if (!get_str(o, "nonce", j->nonce, sizeof j->nonce) || strlen(j->nonce) < 16) bad = "no nonce";
  else if (!get_str(o, "key", j->key, sizeof j->key)) bad = "no device key";
  else if (!get_str(o, "reply", j->reply, sizeof j->reply) ||
           strncmp(j->reply, FL_PREFIX "reply:", strlen(FL_PREFIX "reply:")))
    bad = "no reply stream of a client";
  else if (!get_str(o, "op", j->op, sizeof j->op)) bad = "no operator";
  else if (!get_str(o, "template", j->tmpl, sizeof j->tmpl)) bad = "no template";
  else if (!get_str(o, "target", j->target, sizeof j->target)) bad = "no target";
  else if (!get_u64(o, "space", &j->space_len) || !get_u64(o, "index", &j->index)) bad = "no config index";
  else if (!get_u64(o, "seed", &j->seed)) bad = "no seed";
  if (!bad) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "attrs");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "entity");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "timing");
    if (!cJSON_IsObject(a)) bad = "no attributes";
    else if (!cJSON_IsArray(e)) bad = "no config entity";
    else if (!cJSON_IsObject(t)) bad = "no timing options";
    else {
      j->attrs = cJSON_PrintUnformatted(a);
      j->entity = cJSON_PrintUnformatted(e);
      ob_timing_opts d = ob_timing_default();
      bool ints = get_int(t, "number", 0, 0, OB_TIMING_NUMBER_MAX, &d.number) &&
                  get_int(t, "repeat", 0, 0, OB_TIMING_MAX_COSTS, &d.repeat);
      d.min_repeat_ms = get_num(t, "min_repeat_ms", -1);
      if (isnan(d.min_repeat_ms)) d.min_repeat_ms = -1;
      d.flush = get_bool(t, "flush");
      d.max_cv = get_num(t, "max_cv", d.max_cv);
      d.stability_budget_s = get_num(t, "stability_budget_s", -1);
      d.timeout_s = get_num(t, "timeout_s", 0);
      j->timing = d;
      if (!get_int(o, "threads", 1, 1, 4096, &j->nthreads)) j->nthreads = 0;
      j->build_timeout_s = get_num(o, "build_timeout_s", 0);
      if (!j->attrs || !j->entity) bad = "out of memory";
      else if (j->nthreads < 1) bad = "a bad thread count";
      else if (!ints || !isfinite(d.min_repeat_ms) ||
               !(d.timeout_s >= 0 && d.timeout_s <= 3600) || !(j->build_timeout_s >= 0 && j->build_timeout_s <= 3600))
        bad = "timing options out of range";
      else ok = true;
    }
  }
  if (!ok) {
    snprintf(why, cap, "%s", bad ? bad : "malformed");
    fl_job_clear(j);
  }
  cJSON_Delete(o);
  return ok;
}

char *fl_result_json(const fl_result *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "v", 1);
  cJSON_AddStringToObject(o, "id", r->id);
  cJSON_AddStringToObject(o, "worker", r->worker);
  cJSON_AddStringToObject(o, "host", r->host);
  cJSON_AddStringToObject(o, "cores", r->cores);
  cJSON_AddBoolToObject(o, "refused", r->refused);
  cJSON_AddBoolToObject(o, "expired", r->expired);
  cJSON_AddNumberToObject(o, "error_no", r->res.error_no);
  cJSON_AddStringToObject(o, "message", r->res.message);
  const ob_timing *t = &r->res.timing;
  cJSON *tj = cJSON_AddObjectToObject(o, "timing");
  cJSON *costs = cJSON_AddArrayToObject(tj, "costs");
  for (int i = 0; i < t->ncosts && i < OB_TIMING_MAX_COSTS; i++) cJSON_AddItemToArray(costs, num(t->costs[i]));
  cJSON_AddItemToObject(tj, "median_s", num(t->median_s));
  cJSON_AddItemToObject(tj, "mean_s", num(t->mean_s));
  cJSON_AddItemToObject(tj, "cv", num(t->cv));
  cJSON_AddNumberToObject(tj, "number", t->number);
  cJSON_AddNumberToObject(tj, "repeat", t->repeat);
  cJSON_AddItemToObject(tj, "min_repeat_ms", num(t->min_repeat_ms));
  cJSON_AddBoolToObject(tj, "flush", t->flush);
  cJSON_AddBoolToObject(tj, "flush_keep_first", t->flush && t->flush_keep_first);
  cJSON_AddItemToObject(tj, "timer_overhead_s", num(t->timer_overhead_s));
  cJSON_AddBoolToObject(tj, "below_resolution", t->below_resolution);
  cJSON_AddBoolToObject(tj, "noisy", t->noisy);
  cJSON_AddNumberToObject(tj, "extra_repeats", t->extra_repeats);
  cJSON_AddBoolToObject(tj, "emulated", t->emulated);
  cJSON_AddItemToObject(o, "build_s", num(r->res.build_s));
  cJSON_AddItemToObject(o, "run_s", num(r->res.run_s));
  cJSON_AddItemToObject(o, "job_s", num(r->job_s));
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

bool fl_result_parse(const char *json, size_t len, fl_result *r, char *why, size_t cap) {
  memset(r, 0, sizeof *r);
  cJSON *o = cJSON_ParseWithLength(json, len);
  const char *bad = NULL;
  const cJSON *tj = o ? cJSON_GetObjectItemCaseSensitive(o, "timing") : NULL;
  const cJSON *costs = tj ? cJSON_GetObjectItemCaseSensitive(tj, "costs") : NULL;
  if (!cJSON_IsObject(o) || get_num(o, "v", 0) != 1) bad = "not a version-1 result";
  else if (!get_str(o, "id", r->id, sizeof r->id) || !get_str(o, "worker", r->worker, sizeof r->worker) ||
           !get_str(o, "host", r->host, sizeof r->host) || !get_str(o, "cores", r->cores, sizeof r->cores))
    bad = "no id, worker, host or cores";
  else if (!get_str(o, "message", r->res.message, sizeof r->res.message)) bad = "no message";
  else if (!cJSON_IsObject(tj) || !cJSON_IsArray(costs) || cJSON_GetArraySize(costs) > OB_TIMING_MAX_COSTS)
    bad = "no timing";
  if (!bad) {
    r->refused = get_bool(o, "refused");
    r->expired = get_bool(o, "expired");
    double e = get_num(o, "error_no", -1);
    r->res.error_no = e >= 0 && e < OB_MERR_COUNT ? (int)e : OB_MERR_UNKNOWN;
    ob_timing *t = &r->res.timing;
    const cJSON *c;
    cJSON_ArrayForEach(c, costs) {
      if (!cJSON_IsNumber(c)) {
        bad = "a cost that is not a number";
        break;
      }
      t->costs[t->ncosts++] = c->valuedouble;
    }
    t->median_s = get_num(tj, "median_s", NAN);
    t->mean_s = get_num(tj, "mean_s", NAN);
    t->cv = get_num(tj, "cv", NAN);
    if (!get_int(tj, "number", 0, 0, OB_TIMING_NUMBER_MAX, &t->number) ||
        !get_int(tj, "repeat", 0, 0, INT_MAX, &t->repeat) ||
        !get_int(tj, "extra_repeats", 0, 0, INT_MAX, &t->extra_repeats))
      bad = "timing counts out of range";
    t->min_repeat_ms = get_num(tj, "min_repeat_ms", NAN);
    t->flush = get_bool(tj, "flush");
    t->flush_keep_first = t->flush && get_bool(tj, "flush_keep_first");
    double ovh = get_num(tj, "timer_overhead_s", 0);
    t->timer_overhead_s = isfinite(ovh) ? ovh : 0;
    t->below_resolution = get_bool(tj, "below_resolution");
    t->noisy = get_bool(tj, "noisy");
    t->emulated = get_bool(tj, "emulated");
    r->res.build_s = get_num(o, "build_s", 0);
    r->res.run_s = get_num(o, "run_s", 0);
    r->job_s = get_num(o, "job_s", 0);
    if (!isfinite(r->res.build_s)) r->res.build_s = 0;
    if (!isfinite(r->res.run_s)) r->res.run_s = 0;
    snprintf(r->res.host, sizeof r->res.host, "%s", r->host);
    snprintf(r->res.cores, sizeof r->res.cores, "%s", r->cores);
  }
  if (bad) snprintf(why, cap, "%s", bad);
  cJSON_Delete(o);
  return !bad;
}
