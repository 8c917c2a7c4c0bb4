/* remote.c: models over HTTP(S) for --modelsource remoteonnx. libcurl
 * downloads into the cache folder (a partial file, renamed once complete and
 * checked), with a size limit enforced while receiving; OpenSSL's libcrypto
 * computes the SHA-256 that --sha256 checks. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "graph/graph_impl.h"

#define DEFAULT_MAX_BYTES (INT64_C(2) << 30)

ob_status ob_file_sha256(ob_ctx *ctx, const char *path, char hex[65]) {
  FILE *f = fopen(path, "rb");
  if (!f) return ob_fail(ctx, OB_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  ob_status st = OB_OK;
  if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
    st = ob_fail(ctx, OB_ERR_SYSTEM, "SHA-256 is not available from libcrypto");
    goto done;
  }
  unsigned char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) EVP_DigestUpdate(md, buf, n);
  if (ferror(f)) {
    st = ob_fail(ctx, OB_ERR_IO, "cannot read '%s'", path);
    goto done;
  }
  unsigned char dig[EVP_MAX_MD_SIZE];
  unsigned dl = 0;
  EVP_DigestFinal_ex(md, dig, &dl);
  for (unsigned i = 0; i < dl && i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", dig[i]);
  hex[64] = 0;
done:
  EVP_MD_CTX_free(md);
  fclose(f);
  return st;
}

static ob_status mkdirs(ob_ctx *ctx, const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) && errno != EEXIST) return ob_fail(ctx, OB_ERR_IO, "cannot create folder '%s': %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0755) && errno != EEXIST) return ob_fail(ctx, OB_ERR_IO, "cannot create folder '%s': %s", buf, strerror(errno));
  return OB_OK;
}

typedef struct sink {
  FILE *f;
  int64_t got, max;
  bool too_big;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *user) {
  sink *s = user;
  size_t bytes = size * n;
  if (s->got + (int64_t)bytes > s->max) {
    s->too_big = true;
    return 0; /* aborts the transfer */
  }
  s->got += (int64_t)bytes;
  return fwrite(p, 1, bytes, s->f);
}

static bool hex_ok(const char *s) {
  if (strlen(s) != 64) return false;
  for (int i = 0; i < 64; i++)
    if (!isxdigit((unsigned char)s[i])) return false;
  return true;
}

ob_status ob_model_download(ob_ctx *ctx, const char *url, const char *cache_dir, const char *sha256, int64_t max_bytes,
                            char **path) {
  if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "model URL '%s' is not http:// or https://", url);
  if (sha256 && !hex_ok(sha256))
    return ob_fail(ctx, OB_ERR_INVALID_ARG, "--sha256 '%s' is not 64 hexadecimal digits", sha256);
  if (max_bytes <= 0) max_bytes = DEFAULT_MAX_BYTES;
  char dir[4096];
  const char *env = getenv("OPBENCH_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (cache_dir && *cache_dir) snprintf(dir, sizeof dir, "%s/models", cache_dir);
  else if (env && *env) snprintf(dir, sizeof dir, "%s/models", env);
  else if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/opbench/models", xdg);
  else snprintf(dir, sizeof dir, "%s/.cache/opbench/models", home ? home : "/tmp");
  ob_status st = mkdirs(ctx, dir);
  if (st) return st;
  char h[17], dest[4200], part[4300], hex[65];
  ob_hash_hex(ob_hash64(url, strlen(url), 0x6f6e6e78), h);
  snprintf(dest, sizeof dest, "%s/%s.onnx", dir, h);
  struct stat sb;
  if (!stat(dest, &sb)) {
    if (!sha256) goto have;
    if ((st = ob_file_sha256(ctx, dest, hex))) return st;
    if (!strcasecmp(hex, sha256)) goto have;
    remove(dest); /* stale or corrupt: fetch again */
  }
  snprintf(part, sizeof part, "%s.part.%ld", dest, (long)getpid());
  sink s = {.f = fopen(part, "wb"), .max = max_bytes};
  if (!s.f) return ob_fail(ctx, OB_ERR_IO, "cannot write '%s': %s", part, strerror(errno));
  if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
    fclose(s.f);
    remove(part);
    return ob_fail(ctx, OB_ERR_SYSTEM, "libcurl failed to initialize");
  }
  CURL *c = curl_easy_init();
  CURLcode rc = CURLE_FAILED_INIT;
  long http = 0;
  char err[CURL_ERROR_SIZE] = "";
  if (c) {
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a stalled server ends the transfer */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_bytes);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
    curl_easy_cleanup(c);
  }
  curl_global_cleanup();
  bool wrote = fclose(s.f) == 0;
  if (rc != CURLE_OK || !wrote) {
    remove(part);
    if (s.too_big || rc == CURLE_FILESIZE_EXCEEDED)
      return ob_fail(ctx, OB_ERR_IO, "download of '%s' exceeds the limit of %lld bytes", url, (long long)max_bytes);
    if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_PROXY ||
        rc == CURLE_OPERATION_TIMEDOUT)
      return ob_fail(ctx, OB_ERR_IO, "cannot reach '%s' (no network?): %s", url, *err ? err : curl_easy_strerror(rc));
    if (rc == CURLE_HTTP_RETURNED_ERROR)
      return ob_fail(ctx, OB_ERR_IO, "download of '%s' failed: HTTP %ld", url, http);
    return ob_fail(ctx, OB_ERR_IO, "download of '%s' failed: %s", url, *err ? err : curl_easy_strerror(rc));
  }
  if (sha256) {
    if ((st = ob_file_sha256(ctx, part, hex))) {
      remove(part);
      return st;
    }
    if (strcasecmp(hex, sha256)) {
      remove(part);
      return ob_fail(ctx, OB_ERR_INVALID_ARG, "download of '%s': SHA-256 %s differs from --sha256 %s", url, hex, sha256);
    }
  }
  if (rename(part, dest)) {
    remove(part);
    return ob_fail(ctx, OB_ERR_IO, "cannot move the download to '%s': %s", dest, strerror(errno));
  }
have:
  *path = strdup(dest);
  if (!*path) return ob_fail(ctx, OB_ERR_NOMEM, "out of memory");
  return OB_OK;
}
