/* test_space.c: config spaces against AutoTVM's counts and order, the
 * mixed-radix index, the filter, JSON round trips and every parse error. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "opbench/space.h"

static ob_ctx *ctx;

static ob_split_opts opts(ob_split_policy p, int n) {
  return (ob_split_opts){.policy = p, .num_outputs = n};
}

/* Entities of a one-knob split space, or -1 if the define failed. */
static int split_len(int64_t extent, ob_split_opts o) {
  ob_space *s = NULL;
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  int n = -1;
  if (ob_space_define_split(s, "x", extent, &o) == OB_OK) n = ob_space_knob_len(s, 0);
  ob_space_free(s);
  return n;
}

/* Independent brute force: all (n-1)-tuples over the policy's factor list. */
static int split_brute(int64_t extent, ob_split_opts o) {
  int64_t fac[256];
  int nf = 0;
  for (int64_t f = 1; f <= extent; f++) {
    bool div = extent % f == 0, p2 = (f & (f - 1)) == 0;
    bool in = o.policy == OB_SPLIT_FACTORS ? div : o.policy == OB_SPLIT_POWER2 ? p2 : div || p2;
    if (in && (o.max_factor == 0 || f <= o.max_factor)) fac[nf++] = f;
  }
  bool no_tail = o.policy == OB_SPLIT_FACTORS || o.no_tail;
  int idx[OB_MAX_SPLIT] = {0}, cnt = 0, m = o.num_outputs - 1;
  for (;;) {
    int64_t p = 1;
    for (int i = 0; i < m; i++) p *= fac[idx[i]];
    if (p <= extent && (extent % p == 0 || (!no_tail && p < extent))) cnt++;
    int i = 0;
    while (i < m && ++idx[i] == nf) idx[i++] = 0;
    if (i == m) break;
  }
  return cnt;
}

static bool row_is(const ob_space *s, int k, int e, const int64_t *want, int n) {
  int64_t v[16];
  int got = ob_space_entity(s, k, e, v, 16);
  if (got != n) return false;
  return !memcmp(v, want, (size_t)n * sizeof *v);
}

static bool msg_is(const char *want) {
  const char *got = ob_ctx_errmsg(ctx);
  bool ok = got && !strcmp(got, want);
  if (!ok) fprintf(stderr, "  message: '%s'\n  wanted:  '%s'\n", got ? got : "(null)", want);
  return ok;
}

static bool msg_starts(const char *want) {
  const char *got = ob_ctx_errmsg(ctx);
  bool ok = got && !strncmp(got, want, strlen(want));
  if (!ok) fprintf(stderr, "  message: '%s'\n  wanted prefix: '%s'\n", got ? got : "(null)", want);
  return ok;
}

static void test_split_counts(void) {
  ob_space *s = NULL;
  ob_split_opts o = opts(OB_SPLIT_FACTORS, 2);
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  CHECK(ob_space_define_split(s, "t", 16, &o) == OB_OK);
  CHECK(ob_space_knob_len(s, 0) == 5);
  for (int e = 0; e < 5; e++) CHECK(row_is(s, 0, e, (int64_t[]){-1, (int64_t)1 << e}, 2));
  ob_space_free(s);

  /* 3 outputs: AutoTVM's order, the innermost factor varies slowest. */
  o = opts(OB_SPLIT_FACTORS, 3);
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  CHECK(ob_space_define_split(s, "t", 16, &o) == OB_OK);
  CHECK(ob_space_knob_len(s, 0) == 15);
  CHECK(row_is(s, 0, 0, (int64_t[]){-1, 1, 1}, 3));
  CHECK(row_is(s, 0, 1, (int64_t[]){-1, 2, 1}, 3));
  CHECK(row_is(s, 0, 4, (int64_t[]){-1, 16, 1}, 3));
  CHECK(row_is(s, 0, 5, (int64_t[]){-1, 1, 2}, 3));
  CHECK(row_is(s, 0, 14, (int64_t[]){-1, 1, 16}, 3));
  ob_space_free(s);

  CHECK(split_len(128, opts(OB_SPLIT_FACTORS, 2)) == 8); /* AutoTVM's test_split */
  CHECK(split_len(10, opts(OB_SPLIT_POWER2, 2)) == 4);   /* 1 2 4 8 */
  o = opts(OB_SPLIT_POWER2, 2);
  o.no_tail = true;
  CHECK(split_len(10, o) == 2); /* 1 2 */
  CHECK(split_len(12, opts(OB_SPLIT_VERBOSE, 2)) == 7); /* 1 2 3 4 6 8 12 */
  o = opts(OB_SPLIT_VERBOSE, 2);
  o.no_tail = true;
  CHECK(split_len(12, o) == 6); /* 8 leaves a tail */
  o = opts(OB_SPLIT_FACTORS, 2);
  o.max_factor = 4;
  CHECK(split_len(16, o) == 3); /* 1 2 4 */
  o = opts(OB_SPLIT_POWER2, 3);
  o.max_factor = 2;
  CHECK(split_len(64, o) == 4); /* {1,2}^2 */
  CHECK(split_len(1, opts(OB_SPLIT_FACTORS, 4)) == 1);

  /* Against brute force over a grid of extents, policies, outputs. */
  int64_t extents[] = {1, 7, 10, 12, 16, 24, 30, 64, 96, 100};
  for (size_t i = 0; i < sizeof extents / sizeof *extents; i++)
    for (int p = OB_SPLIT_FACTORS; p <= OB_SPLIT_VERBOSE; p++)
      for (int n = 2; n <= 4; n++)
        for (int nt = 0; nt < 2; nt++)
          for (int64_t mf = 0; mf <= 8; mf += 8) {
            o = opts((ob_split_policy)p, n);
            o.no_tail = nt;
            o.max_factor = mf;
            int got = split_len(extents[i], o), want = split_brute(extents[i], o);
            CHECK_MSG(got == want, "extent %lld policy %d n %d no_tail %d max %lld: %d vs %d",
                      (long long)extents[i], p, n, nt, (long long)mf, got, want);
          }

  /* Candidates: kept as given, outer recomputed by ob_config_split. */
  int64_t cand[] = {-1, 4, 8, -1, 3, 3, -1, 32, 1};
  o = opts(OB_SPLIT_CANDIDATE, 3);
  o.candidates = cand;
  o.ncandidates = 3;
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  CHECK(ob_space_define_split(s, "c", 100, &o) == OB_OK);
  CHECK(ob_space_knob_len(s, 0) == 3);
  CHECK(row_is(s, 0, 1, (int64_t[]){-1, 3, 3}, 3));
  ob_config c;
  int64_t f[3];
  CHECK(ob_space_get(ctx, s, 0, &c) == OB_OK);
  ob_config_split(&c, "c", f);
  CHECK(f[0] == 4 && f[1] == 4 && f[2] == 8); /* ceil(100/32) */
  CHECK(ob_space_get(ctx, s, 1, &c) == OB_OK);
  ob_config_split(&c, "c", f);
  CHECK(f[0] == 12);
  ob_space_free(s);
}

static void test_bad_defines(void) {
  ob_space *s = NULL;
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  ob_split_opts o = opts(OB_SPLIT_FACTORS, 1);
  CHECK(ob_space_define_split(s, "a", 16, &o) == OB_ERR_INVALID_ARG);
  CHECK(msg_is("split knob 'a': num_outputs 1 is outside 2..8"));
  o.num_outputs = OB_MAX_SPLIT + 1;
  CHECK(ob_space_define_split(s, "a", 16, &o) == OB_ERR_INVALID_ARG);
  o.num_outputs = 2;
  CHECK(ob_space_define_split(s, "a", 0, &o) == OB_ERR_INVALID_ARG);
  CHECK(ob_space_define_split(s, "bad name", 16, &o) == OB_ERR_INVALID_ARG);
  CHECK(ob_space_define_split(s, "", 16, &o) == OB_ERR_INVALID_ARG);
  CHECK(ob_space_define_split(s, "a", 16, &o) == OB_OK);
  CHECK(ob_space_define_split(s, "a", 16, &o) == OB_ERR_INVALID_ARG);
  CHECK(msg_is("knob 'a' is defined twice"));
  int64_t cand[] = {-1, 0};
  o = opts(OB_SPLIT_CANDIDATE, 2);
  o.candidates = cand;
  o.ncandidates = 1;
  CHECK(ob_space_define_split(s, "b", 16, &o) == OB_ERR_INVALID_ARG);
  o.ncandidates = 0;
  CHECK(ob_space_define_split(s, "b", 16, &o) == OB_ERR_INVALID_ARG);
  CHECK(ob_space_define_reorder(s, "r", OB_MAX_AXES + 1, OB_REORDER_ALL, NULL, 0) ==
        OB_ERR_INVALID_ARG);
  int notperm[] = {0, 0, 2};
  CHECK(ob_space_define_reorder(s, "r", 3, OB_REORDER_CANDIDATE, notperm, 1) ==
        OB_ERR_INVALID_ARG);
  CHECK(msg_is("reorder knob 'r': candidate 0 is not a permutation of 0..2"));
  CHECK(ob_space_define_annotate(s, "an", 0, OB_ANNOTATE_TRY_UNROLL) == OB_ERR_INVALID_ARG);
  CHECK(ob_space_define_annotate(s, "an", OB_MAX_AXES + 1, OB_ANNOTATE_TRY_UNROLL) ==
        OB_ERR_INVALID_ARG);
  CHECK(ob_space_define_knob(s, "k", NULL, 0) == OB_ERR_INVALID_ARG);
  int64_t dup[] = {1, 2, 1};
  CHECK(ob_space_define_knob(s, "k", dup, 3) == OB_ERR_INVALID_ARG);
  CHECK(ob_space_num_knobs(s) == 1 && ob_space_len(s) == 5); /* failures left no trace */
  ob_space_free(s);

  /* More than OB_MAX_KNOBS knobs. */
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  int64_t one[] = {1};
  for (int k = 0; k < OB_MAX_KNOBS; k++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", k);
    CHECK(ob_space_define_knob(s, name, one, 1) == OB_OK);
  }
  CHECK(ob_space_define_knob(s, "extra", one, 1) == OB_ERR_INVALID_ARG);
  CHECK(msg_is("knob 'extra' exceeds the limit of 32 knobs"));
  ob_space_free(s);
  ob_space_free(NULL);
}

static void test_reorder_annotate(void) {
  ob_space *s = NULL;
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  CHECK(ob_space_define_reorder(s, "id", 4, OB_REORDER_IDENTITY, NULL, 0) == OB_OK);
  CHECK(ob_space_define_reorder(s, "all", 3, OB_REORDER_ALL, NULL, 0) == OB_OK);
  int cand[] = {2, 1, 0, 1, 0, 2};
  CHECK(ob_space_define_reorder(s, "cand", 3, OB_REORDER_CANDIDATE, cand, 2) == OB_OK);
  CHECK(ob_space_define_annotate(s, "u", 3, OB_ANNOTATE_TRY_UNROLL) == OB_OK);
  CHECK(ob_space_define_annotate(s, "v", 3, OB_ANNOTATE_TRY_VEC) == OB_OK);
  CHECK(ob_space_define_annotate(s, "uv", 3, OB_ANNOTATE_TRY_UNROLL_VEC) == OB_OK);
  CHECK(ob_space_knob_len(s, 0) == 1);
  CHECK(row_is(s, 0, 0, (int64_t[]){0, 1, 2, 3}, 4));
  CHECK(ob_space_knob_len(s, 1) == 6);
  const int64_t perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int e = 0; e < 6; e++) CHECK(row_is(s, 1, e, perms[e], 3));
  CHECK(ob_space_knob_len(s, 2) == 2);
  CHECK(row_is(s, 2, 0, (int64_t[]){2, 1, 0}, 3));
  CHECK(ob_space_knob_len(s, 3) == 8);
  CHECK(row_is(s, 3, 1, (int64_t[]){OB_ANN_NONE, OB_ANN_NONE, OB_ANN_UNROLL}, 3));
  CHECK(row_is(s, 3, 4, (int64_t[]){OB_ANN_UNROLL, OB_ANN_NONE, OB_ANN_NONE}, 3));
  CHECK(ob_space_knob_len(s, 4) == 2);
  CHECK(row_is(s, 4, 1, (int64_t[]){OB_ANN_NONE, OB_ANN_NONE, OB_ANN_VEC}, 3));
  CHECK(ob_space_knob_len(s, 5) == 12);
  CHECK(row_is(s, 5, 2, (int64_t[]){OB_ANN_NONE, OB_ANN_NONE, OB_ANN_VEC}, 3));
  CHECK(ob_space_knob_kind(s, 5) == OB_KNOB_ANNOTATE && !strcmp(ob_space_knob_name(s, 5), "uv"));
  CHECK(ob_space_len(s) == 1ull * 6 * 2 * 8 * 2 * 12);

  ob_config c;
  CHECK(ob_space_get(ctx, s, 3, &c) == OB_OK); /* all = [1,2,0] */
  int perm[3];
  ob_config_reorder(&c, "all", perm);
  CHECK(perm[0] == 1 && perm[1] == 2 && perm[2] == 0);
  ob_ann anns[3];
  ob_config_annotate(&c, "uv", anns);
  CHECK(anns[0] == OB_ANN_NONE && anns[2] == OB_ANN_NONE);
  ob_space_free(s);

  /* 8 axes, all permutations: 8! */
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  CHECK(ob_space_define_reorder(s, "r", 8, OB_REORDER_ALL, NULL, 0) == OB_OK);
  CHECK(ob_space_len(s) == 40320);
  ob_space_free(s);
}

/* tile_oc (factors 64 -> 7) x order (3! = 6) x ann (try_unroll_vec 2 -> 6)
 * x unroll_kw (2) = 504 configs. */
static ob_space *make_space(void) {
  ob_space *s = NULL;
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  ob_split_opts o = opts(OB_SPLIT_FACTORS, 2);
  CHECK(ob_space_define_split(s, "tile_oc", 64, &o) == OB_OK);
  CHECK(ob_space_define_reorder(s, "order", 3, OB_REORDER_ALL, NULL, 0) == OB_OK);
  CHECK(ob_space_define_annotate(s, "ann", 2, OB_ANNOTATE_TRY_UNROLL_VEC) == OB_OK);
  int64_t kw[] = {0, 1};
  CHECK(ob_space_define_knob(s, "unroll_kw", kw, 2) == OB_OK);
  return s;
}

static void test_index(void) {
  ob_space *s = make_space();
  CHECK(ob_space_len(s) == 504);
  CHECK(ob_space_knob_find(s, "ann") == 2 && ob_space_knob_find(s, "nope") == -1);
  int bad = 0;
  for (uint64_t i = 0; i < ob_space_len(s); i++) {
    ob_config c;
    if (ob_space_get(ctx, s, i, &c) != OB_OK) {
      bad++;
      continue;
    }
    uint64_t t = i;
    for (int k = 0; k < 4; k++) { /* first knob fastest */
      uint64_t n = (uint64_t)ob_space_knob_len(s, k);
      if ((uint64_t)c.choice[k] != t % n) bad++;
      t /= n;
    }
    if (c.index != i || ob_config_index_of(s, c.choice) != i || c.space != s) bad++;
  }
  CHECK(bad == 0);
  ob_config c;
  CHECK(ob_space_get(ctx, s, 504, &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_is("config index 504 is outside the space of 504 configs"));
  CHECK(!ob_space_is_valid(s, 504) && ob_space_is_valid(s, 503));

  /* Accessors on index 7*1 + 7*6*... : tile [-1,2], order 1, ann 0, kw 0 */
  CHECK(ob_space_get(ctx, s, 1 + 7 * 1, &c) == OB_OK);
  int64_t f[2];
  ob_config_split(&c, "tile_oc", f);
  CHECK(f[0] == 32 && f[1] == 2);
  CHECK(ob_config_knob(&c, "unroll_kw") == 0);
  ob_space_free(s);

  /* The empty space holds exactly one config. */
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  CHECK(ob_space_len(s) == 1);
  CHECK(ob_space_get(ctx, s, 0, &c) == OB_OK);
  CHECK(ob_space_get(ctx, s, 1, &c) == OB_ERR_OUT_OF_SPACE);
  char *j = NULL;
  CHECK(ob_config_to_json(ctx, &c, &j) == OB_OK);
  CHECK(j && !strcmp(j, "{\"index\": 0, \"code_hash\": null, \"entity\": []}"));
  ob_config d;
  CHECK(ob_config_from_json(ctx, s, j, &d) == OB_OK && d.index == 0);
  free(j);
  char *str = ob_config_str(&c);
  CHECK(str && !strcmp(str, ""));
  free(str);
  ob_space_free(s);
}

/* Rejects inner tile > 8 together with unroll_kw = 1. */
static bool filt(const ob_config *c, void *user) {
  int *calls = user;
  (*calls)++;
  int64_t f[2];
  ob_config_split(c, "tile_oc", f);
  return !(f[1] > 8 && ob_config_knob(c, "unroll_kw") == 1);
}

static void test_filter(void) {
  ob_space *s = make_space();
  int calls = 0, valid = 0;
  ob_space_set_filter(s, filt, &calls);
  CHECK(ob_space_len(s) == 504); /* the filter does not shrink the index range */
  for (uint64_t i = 0; i < ob_space_len(s); i++) valid += ob_space_is_valid(s, i);
  CHECK(valid == 504 - 3 * 36); /* inner 16, 32, 64 with kw = 1 */
  CHECK(calls == 504);
  /* index: tile [-1,16] = choice 4, kw = 1 -> 4 + 252 */
  ob_config c;
  CHECK(ob_space_get(ctx, s, 256, &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_is("config index 256 is rejected by the template's filter: "
               "tile_oc=[-1,16] order=[0,1,2] ann=[none,none] unroll_kw=1"));
  CHECK(ob_config_from_json(ctx, s, "256", &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(ob_config_from_json(ctx, s,
                            "{\"entity\": [[\"tile_oc\",\"sp\",[-1,16]], [\"order\",\"re\",[0,1,2]],"
                            " [\"ann\",\"an\",[\"none\",\"none\"]], [\"unroll_kw\",\"ot\",1]]}",
                            &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_starts("config index 256 is rejected by the template's filter"));
  CHECK(ob_space_get(ctx, s, 4, &c) == OB_OK);
  ob_space_set_filter(s, NULL, NULL);
  CHECK(ob_space_is_valid(s, 256));
  ob_space_free(s);
}

static void test_json(void) {
  ob_space *s = make_space();
  ob_config c, d;
  /* tile [-1,16] (4), order [0,2,1] (1), ann [unroll,vec] (5), kw 1 */
  int32_t ch[4] = {4, 1, 5, 1};
  uint64_t idx = ob_config_index_of(s, ch);
  CHECK(ob_space_get(ctx, s, idx, &c) == OB_OK);
  char *j = NULL;
  CHECK(ob_config_to_json(ctx, &c, &j) == OB_OK);
  char want[512];
  snprintf(want, sizeof want,
           "{\"index\": %llu, \"code_hash\": null, \"entity\": [[\"tile_oc\", \"sp\", [-1, 16]], "
           "[\"order\", \"re\", [0, 2, 1]], [\"ann\", \"an\", [\"unroll\", \"vec\"]], "
           "[\"unroll_kw\", \"ot\", 1]]}",
           (unsigned long long)idx);
  CHECK_MSG(j && !strcmp(j, want), "%s", j ? j : "(null)");
  free(j);
  char *str = ob_config_str(&c);
  CHECK_MSG(str && !strcmp(str, "tile_oc=[-1,16] order=[0,2,1] ann=[unroll,vec] unroll_kw=1"),
            "%s", str ? str : "(null)");
  free(str);

  /* Round trip of every config; the index alone must agree too. */
  int bad = 0;
  for (uint64_t i = 0; i < ob_space_len(s); i++) {
    CHECK(ob_space_get(ctx, s, i, &c) == OB_OK);
    CHECK(ob_config_to_json(ctx, &c, &j) == OB_OK);
    if (ob_config_from_json(ctx, s, j, &d) != OB_OK || d.index != i ||
        memcmp(d.choice, c.choice, sizeof c.choice) || d.space != s)
      bad++;
    free(j);
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)i);
    if (ob_config_from_json(ctx, s, num, &d) != OB_OK || d.index != i) bad++;
    snprintf(num, sizeof num, "{\"index\": %llu}", (unsigned long long)i);
    if (ob_config_from_json(ctx, s, num, &d) != OB_OK || d.index != i) bad++;
  }
  CHECK(bad == 0);

  /* Entity wins over index; split outer may be the real value; bools and
   * any knob order are accepted; trailing whitespace is fine. */
  const char *txt =
      "{\"index\": 3, \"code_hash\": null, \"entity\": [[\"unroll_kw\", \"ot\", true], "
      "[\"tile_oc\", \"sp\", [4, 16]], [\"order\", \"re\", [0, 2, 1]], "
      "[\"ann\", \"an\", [\"unroll\", \"vec\"]]]}\n";
  CHECK(ob_config_from_json(ctx, s, txt, &d) == OB_OK && d.index == idx);
  ob_space_free(s);
}

/* Configs of old that keep, in s (old with knobs or entities added), their
 * index, their first nold choices, the first value ("own" 0, "late" 5) of
 * each added knob s has, and their JSON's index: the count of those that
 * do not. */
static int old_configs_moved(const ob_space *old, const ob_space *s, int nold) {
  int bad = 0;
  for (uint64_t i = 0; i < ob_space_len(old); i++) {
    ob_config c, d, e;
    char *j = NULL;
    CHECK(ob_space_get(ctx, old, i, &c) == OB_OK);
    CHECK(ob_config_to_json(ctx, &c, &j) == OB_OK);
    if (ob_space_get(ctx, s, i, &d) != OB_OK || memcmp(d.choice, c.choice, sizeof(int32_t) * (size_t)nold) ||
        ob_config_knob(&d, "own") != 0 || (ob_space_knob_find(s, "late") >= 0 && ob_config_knob(&d, "late") != 5))
      bad++;
    if (!j || ob_config_from_json(ctx, s, j, &e) != OB_OK || e.index != i) bad++;
    free(j);
  }
  return bad;
}

/* A knob added after records were stored (ob_space_define_knob_added):
 * every config of the space before it keeps its index, and its JSON,
 * which lacks the new knob, reads the knob's first value; a knob defined
 * the ordinary way still must be there. */
static void test_added_knob(void) {
  ob_space *old = make_space(), *s = make_space();
  int64_t own[] = {0, 1, 2}, late[] = {5, 6};
  CHECK(ob_space_define_knob_added(s, "own", own, 3) == OB_OK);
  CHECK(ob_space_define_knob_added(s, "late", late, 2) == OB_OK);
  CHECK(ob_space_len(s) == ob_space_len(old) * 6);
  /* the old record's index, and its entity without the new knobs */
  CHECK(old_configs_moved(old, s, 4) == 0);
  /* a new config names its own value */
  ob_config c = ob_space_first(s);
  ob_config_set_knob(&c, "own", 2);
  char *j = NULL;
  ob_config d;
  CHECK(ob_config_to_json(ctx, &c, &j) == OB_OK && j && strstr(j, "[\"own\", \"ot\", 2]"));
  CHECK(ob_config_from_json(ctx, s, j, &d) == OB_OK && d.index == c.index && d.index >= ob_space_len(old));
  free(j);
  /* an ordinary knob is still required */
  CHECK(ob_config_from_json(ctx, s, "[[\"own\", \"ot\", 1]]", &d) == OB_ERR_PARSE);
  CHECK(strstr(ob_ctx_errmsg(ctx), "missing knob 'tile_oc'"));
  ob_ctx_clear_error(ctx);
  ob_space_free(old);
  ob_space_free(s);
}

/* Entities added to a split knob (ob_split_opts.added) in the middle of
 * the space, beside an added knob: every old config keeps its index and its
 * JSON; every config of the new space has exactly one valid index, which
 * round-trips; the holes the encoding leaves are refused, by name. */
static ob_space *split_space(bool with_added) {
  ob_space *s = NULL;
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  ob_split_opts o = opts(OB_SPLIT_FACTORS, 2);
  CHECK(ob_space_define_split(s, "tile_ic", 12, &o) == OB_OK); /* 1 2 3 4 6 12 */
  int64_t more[] = {-1, 5, -1, 4, -1, 7}; /* 4 is there already: skipped */
  if (with_added) {
    o.added = more;
    o.nadded = 3;
  }
  CHECK(ob_space_define_split(s, "tile_ow", 14, &o) == OB_OK); /* 1 2 7 14 (+5 7) */
  int64_t kw[] = {0, 1, 2};
  CHECK(ob_space_define_knob(s, "unroll_kw", kw, 3) == OB_OK);
  if (with_added) CHECK(ob_space_define_knob_added(s, "own", (int64_t[]){0, 1}, 2) == OB_OK);
  return s;
}

static void test_added_entities(void) {
  ob_space *old = split_space(false), *s = split_space(true);
  CHECK(ob_space_knob_len(s, 1) == 6 && ob_space_knob_len(old, 1) == 4);
  CHECK(old_configs_moved(old, s, 3) == 0);
  int bad = 0;
  /* each of the 6 x 6 x 3 x 2 configs once among the valid indices */
  int seen[6][6][3][2] = {{{{0}}}}, valid = 0, holes = 0;
  for (uint64_t i = 0; i < ob_space_len(s); i++) {
    ob_config c;
    if (!ob_space_is_valid(s, i)) {
      holes++;
      CHECK(ob_space_get(ctx, s, i, &c) == OB_ERR_OUT_OF_SPACE);
      CHECK(strstr(ob_ctx_errmsg(ctx), "names no config"));
      ob_ctx_clear_error(ctx);
      continue;
    }
    CHECK(ob_space_get(ctx, s, i, &c) == OB_OK);
    if (ob_config_index_of(s, c.choice) != i) bad++;
    seen[c.choice[0]][c.choice[1]][c.choice[2]][c.choice[3]]++;
    valid++;
  }
  CHECK(bad == 0 && valid == 6 * 6 * 3 * 2 && holes > 0);
  for (int a = 0; a < 6; a++)
    for (int b = 0; b < 6; b++)
      for (int k = 0; k < 3; k++)
        for (int w = 0; w < 2; w++) bad += seen[a][b][k][w] != 1;
  CHECK(bad == 0);
  /* a new entity by value, through JSON */
  ob_config c = ob_space_first(s), d;
  ob_config_set_split(&c, "tile_ow", (int64_t[]){5}, 1);
  ob_config_set_split(&c, "tile_ic", (int64_t[]){3}, 1);
  int64_t f[2];
  ob_config_split(&c, "tile_ow", f);
  CHECK(f[1] == 5 && f[0] == 3 && c.index >= ob_space_len(old));
  char *j = NULL;
  CHECK(ob_config_to_json(ctx, &c, &j) == OB_OK && j && strstr(j, "[\"tile_ow\", \"sp\", [-1, 5]]"));
  CHECK(ob_config_from_json(ctx, s, j, &d) == OB_OK && d.index == c.index);
  free(j);
  /* a bad added row is refused by name */
  ob_split_opts o = opts(OB_SPLIT_FACTORS, 2);
  o.added = (int64_t[]){-1, 0};
  o.nadded = 1;
  CHECK(ob_space_define_split(s, "bad", 8, &o) == OB_ERR_INVALID_ARG);
  CHECK(strstr(ob_ctx_errmsg(ctx), "split knob 'bad': added entity 0 has factor 0 < 1"));
  ob_ctx_clear_error(ctx);
  ob_space_free(old);
  ob_space_free(s);
}

static void test_json_errors(void) {
  ob_space *s = make_space();
  ob_config c;
  const char *tail = ", [\"order\",\"re\",[0,2,1]], [\"ann\",\"an\",[\"unroll\",\"vec\"]], "
                     "[\"unroll_kw\",\"ot\",1]]}";
  char buf[512];

  /* the entity list alone (how the db stores it) is the same config */
  ob_config obj, list;
  snprintf(buf, sizeof buf, "{\"entity\": [[\"tile_oc\",\"sp\",[-1,16]]%s", tail);
  CHECK(ob_config_from_json(ctx, s, buf, &obj) == OB_OK);
  snprintf(buf, sizeof buf, " [[\"tile_oc\",\"sp\",[-1,16]]%s", tail);
  buf[strlen(buf) - 1] = '\0'; /* no closing brace */
  CHECK_MSG(ob_config_from_json(ctx, s, buf, &list) == OB_OK && list.index == obj.index,
            "entity list '%s': %s", buf, ob_ctx_errmsg(ctx));

  snprintf(buf, sizeof buf, "{\"entity\": [[\"foo\",\"sp\",[-1,16]]%s", tail);
  CHECK(ob_config_from_json(ctx, s, buf, &c) == OB_ERR_NOT_FOUND);
  CHECK(msg_is("unknown knob 'foo' (knobs: tile_oc, order, ann, unroll_kw)"));

  snprintf(buf, sizeof buf, "{\"entity\": [[\"tile_oc\",\"sp\",[-1,7]]%s", tail);
  CHECK(ob_config_from_json(ctx, s, buf, &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_is("knob 'tile_oc' has no entity [-1,7] for this workload"));

  snprintf(buf, sizeof buf, "{\"entity\": [[\"tile_oc\",\"sp\",[-1,4,4]]%s", tail);
  CHECK(ob_config_from_json(ctx, s, buf, &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_is("knob 'tile_oc' has no entity [-1,4,4] for this workload"));

  CHECK(ob_config_from_json(ctx, s,
                            "{\"entity\": [[\"tile_oc\",\"sp\",[-1,16]], "
                            "[\"order\",\"re\",[0,2,1]], [\"ann\",\"an\",[\"vec\",\"vec\"]], "
                            "[\"unroll_kw\",\"ot\",1]]}",
                            &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_is("knob 'ann' has no entity [\"vec\",\"vec\"] for this workload"));

  CHECK(ob_config_from_json(ctx, s,
                            "{\"entity\": [[\"tile_oc\",\"sp\",[-1,16]], "
                            "[\"order\",\"re\",[0,2,1]], [\"unroll_kw\",\"ot\",1]]}",
                            &c) == OB_ERR_PARSE);
  CHECK(msg_is("config is missing knob 'ann'"));

  snprintf(buf, sizeof buf, "{\"entity\": [[\"tile_oc\",\"re\",[-1,16]]%s", tail);
  CHECK(ob_config_from_json(ctx, s, buf, &c) == OB_ERR_PARSE);
  CHECK(msg_is("knob 'tile_oc' is of kind \"sp\", the config says \"re\""));

  snprintf(buf, sizeof buf, "{\"entity\": [[\"tile_oc\",\"sp\",[-1,\"x\"]]%s", tail);
  CHECK(ob_config_from_json(ctx, s, buf, &c) == OB_ERR_PARSE);
  CHECK(msg_starts("knob 'tile_oc'"));

  snprintf(buf, sizeof buf, "{\"entity\": [[\"tile_oc\",\"sp\",[-1,16]], "
                            "[\"tile_oc\",\"sp\",[-1,16]]%s", tail);
  CHECK(ob_config_from_json(ctx, s, buf, &c) == OB_ERR_PARSE);
  CHECK(msg_is("config lists knob 'tile_oc' twice"));

  CHECK(ob_config_from_json(ctx, s, "{\"entity\": [[\"tile_oc\",\"sp\"]]}", &c) == OB_ERR_PARSE);
  CHECK(ob_config_from_json(ctx, s, "{\"entity\": 3}", &c) == OB_ERR_PARSE);
  CHECK(ob_config_from_json(ctx, s, "{\"index\": 1.5}", &c) == OB_ERR_PARSE);
  CHECK(ob_config_from_json(ctx, s, "{\"code_hash\": null}", &c) == OB_ERR_PARSE);
  CHECK(ob_config_from_json(ctx, s, "\"12\"", &c) == OB_ERR_PARSE);

  CHECK(ob_config_from_json(ctx, s, "{\"index\": 12, \"entity\": [", &c) == OB_ERR_PARSE);
  CHECK(msg_starts("malformed config JSON at offset"));
  CHECK(ob_config_from_json(ctx, s, "12 13", &c) == OB_ERR_PARSE);
  CHECK(ob_config_from_json(ctx, s, "", &c) == OB_ERR_PARSE);

  CHECK(ob_config_from_json(ctx, s, "{\"index\": 504}", &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_is("config index 504 is outside the space of 504 configs"));
  CHECK(ob_config_from_json(ctx, s, "-1", &c) == OB_ERR_OUT_OF_SPACE);
  ob_space_free(s);

  /* The brief's exact wording on a 100-config space. */
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  ob_split_opts o = opts(OB_SPLIT_FACTORS, 2);
  CHECK(ob_space_define_split(s, "t", 16, &o) == OB_OK);
  int64_t v[20];
  for (int i = 0; i < 20; i++) v[i] = i;
  CHECK(ob_space_define_knob(s, "k", v, 20) == OB_OK);
  CHECK(ob_space_len(s) == 100);
  CHECK(ob_config_from_json(ctx, s, "123", &c) == OB_ERR_OUT_OF_SPACE);
  CHECK(msg_is("config index 123 is outside the space of 100 configs"));
  ob_space_free(s);
}

static bool synced(const ob_config *c) {
  ob_config g;
  return c->index == ob_config_index_of(c->space, c->choice) &&
         ob_space_get(ctx, c->space, c->index, &g) == OB_OK &&
         !memcmp(g.choice, c->choice, sizeof g.choice);
}

static void test_defaults(void) {
  ob_space *s = NULL;
  CHECK(ob_space_new(ctx, &s) == OB_OK);
  ob_split_opts o = opts(OB_SPLIT_FACTORS, 2);
  CHECK(ob_space_define_split(s, "f12", 12, &o) == OB_OK); /* 1 2 3 4 6 12 */
  o = opts(OB_SPLIT_POWER2, 2);
  CHECK(ob_space_define_split(s, "p10", 10, &o) == OB_OK); /* 1 2 4 8 */
  o = opts(OB_SPLIT_FACTORS, 3);
  CHECK(ob_space_define_split(s, "f16", 16, &o) == OB_OK);
  int64_t kv[] = {1, 4, 16};
  CHECK(ob_space_define_knob(s, "k", kv, 3) == OB_OK);
  CHECK(ob_space_define_reorder(s, "r", 3, OB_REORDER_ALL, NULL, 0) == OB_OK);
  CHECK(ob_space_define_annotate(s, "a", 2, OB_ANNOTATE_TRY_UNROLL) == OB_OK);

  ob_config c = ob_space_first(s);
  CHECK(c.index == 0 && c.space == s);
  for (int k = 0; k < ob_space_num_knobs(s); k++) CHECK(c.choice[k] == 0);

  int64_t f[3];
  ob_config_set_split(&c, "f12", (int64_t[]){4}, 1);
  ob_config_split(&c, "f12", f);
  CHECK(f[0] == 3 && f[1] == 4 && synced(&c));
  ob_config_set_split(&c, "f12", (int64_t[]){5}, 1); /* 4 and 6 tie, both divide: larger */
  ob_config_split(&c, "f12", f);
  CHECK(f[1] == 6 && synced(&c));
  ob_config_set_split(&c, "f12", (int64_t[]){100}, 1);
  ob_config_split(&c, "f12", f);
  CHECK(f[0] == 1 && f[1] == 12);

  ob_config_set_split(&c, "p10", (int64_t[]){3}, 1); /* 2 and 4 tie, only 2 divides 10 */
  ob_config_split(&c, "p10", f);
  CHECK(f[1] == 2 && f[0] == 5);
  ob_config_set_split(&c, "p10", (int64_t[]){6}, 1); /* 4 and 8 tie, neither divides: larger */
  ob_config_split(&c, "p10", f);
  CHECK(f[1] == 8 && f[0] == 2 && synced(&c));

  ob_config_set_split(&c, "f16", (int64_t[]){2, 4}, 2); /* exact */
  ob_config_split(&c, "f16", f);
  CHECK(f[0] == 2 && f[1] == 2 && f[2] == 4);
  ob_config_set_split(&c, "f16", (int64_t[]){3, 3}, 2); /* product 8, first: [1,8] */
  ob_config_split(&c, "f16", f);
  CHECK(f[0] == 2 && f[1] == 1 && f[2] == 8 && synced(&c));

  ob_config_set_knob(&c, "k", 16);
  CHECK(ob_config_knob(&c, "k") == 16);
  ob_config_set_knob(&c, "k", 3);
  CHECK(ob_config_knob(&c, "k") == 4);
  ob_config_set_knob(&c, "k", 10); /* 4 and 16 tie: smaller */
  CHECK(ob_config_knob(&c, "k") == 4);
  ob_config_set_knob(&c, "k", -50);
  CHECK(ob_config_knob(&c, "k") == 1 && synced(&c));

  int perm[3];
  ob_config_set_reorder(&c, "r", (int[]){2, 0, 1});
  ob_config_reorder(&c, "r", perm);
  CHECK(perm[0] == 2 && perm[1] == 0 && perm[2] == 1 && synced(&c));
  ob_config_set_reorder(&c, "r", (int[]){2, 2, 1}); /* absent: unchanged */
  ob_config_reorder(&c, "r", perm);
  CHECK(perm[0] == 2 && perm[1] == 0 && perm[2] == 1);

  ob_ann an[2];
  ob_config_set_annotate(&c, "a", (ob_ann[]){OB_ANN_UNROLL, OB_ANN_NONE});
  ob_config_annotate(&c, "a", an);
  CHECK(an[0] == OB_ANN_UNROLL && an[1] == OB_ANN_NONE && synced(&c));
  ob_config_set_annotate(&c, "a", (ob_ann[]){OB_ANN_VEC, OB_ANN_NONE}); /* absent */
  ob_config_annotate(&c, "a", an);
  CHECK(an[0] == OB_ANN_UNROLL && synced(&c));

  char *str = ob_config_str(&c);
  CHECK_MSG(str && !strcmp(str, "f12=[-1,12] p10=[-1,8] f16=[-1,1,8] k=1 r=[2,0,1] a=[unroll,none]"),
            "%s", str ? str : "(null)");
  free(str);
  ob_space_free(s);
}

/* A template asking for a knob it never defined aborts. */
static void test_assert(void) {
  ob_space *s = make_space();
  ob_config c = ob_space_first(s);
  const char *names[] = {"nope", "order"}; /* missing, wrong kind */
  for (int i = 0; i < 2; i++) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      if (!freopen("/dev/null", "w", stderr)) _exit(2);
      int64_t f[2];
      ob_config_split(&c, names[i], f);
      _exit(0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  }
  ob_space_free(s);
}

int main(void) {
  CHECK(ob_ctx_new(&ctx) == OB_OK);
  test_split_counts();
  test_bad_defines();
  test_reorder_annotate();
  test_index();
  test_filter();
  test_json();
  test_added_knob();
  test_added_entities();
  test_json_errors();
  test_defaults();
  test_assert();
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
