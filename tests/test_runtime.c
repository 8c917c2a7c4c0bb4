/* test_runtime: the graph runtime (module runtime) against the naive
 * reference execution of the same graph, on every zoo model at a small
 * input size; the memory plan (two buffers share bytes only when no step
 * sees both alive); the oneDNN-kernel run; the vm executor (a shape is
 * compiled once and reused); bad arguments. Kernels come through the
 * content-addressed cache ($OPBENCH_CACHE, set by ctest), so a second run
 * of the test builds nothing. */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opbench/graph.h"
#include "opbench/db.h"
#include "opbench/runtime.h"
#include "opbench/tune.h"

static ob_ctx *ctx;

static ob_graph *load(const char *source, const char *name, int64_t size, int64_t seqlen, int64_t hidden,
                      int64_t batch) {
  ob_model_opts o = ob_model_opts_default();
  o.source = source;
  o.name = name;
  o.input_size = size;
  o.seqlen = seqlen;
  o.hidden = hidden;
  o.batch = batch;
  ob_graph *g = NULL;
  ob_status st = ob_model_load(ctx, &o, &g);
  CHECK_MSG(st == OB_OK, "%s: %s", name, ob_ctx_errmsg(ctx));
  return st == OB_OK ? g : NULL;
}

static size_t tensor_bytes(const ob_graph *g, int t) {
  return (size_t)ob_graph_tensor_numel(g, t) * ob_dtype_size(ob_graph_tensor_dtype(g, t));
}

/* Inputs (seeded) and the reference's outputs of g. */
typedef struct io {
  int ni, no;
  void **in, **ref;
} io;

static void io_free(io *x) {
  for (int i = 0; x->in && i < x->ni; i++) free(x->in[i]);
  for (int i = 0; x->ref && i < x->no; i++) free(x->ref[i]);
  free(x->in);
  free(x->ref);
  memset(x, 0, sizeof *x);
}

static bool io_make(const ob_graph *g, uint64_t seed, io *x) {
  x->ni = ob_graph_input_count(g);
  x->no = ob_graph_output_count(g);
  x->in = calloc((size_t)x->ni + 1, sizeof(void *));
  x->ref = calloc((size_t)x->no + 1, sizeof(void *));
  for (int i = 0; i < x->ni; i++) {
    x->in[i] = calloc(1, tensor_bytes(g, ob_graph_input(g, i)) + 1);
    ob_graph_fill_input(g, i, seed, x->in[i]);
  }
  for (int i = 0; i < x->no; i++) x->ref[i] = calloc(1, tensor_bytes(g, ob_graph_output(g, i)) + 1);
  ob_status st = ob_graph_run_reference(ctx, g, (const void *const *)x->in, x->ref);
  CHECK_MSG(st == OB_OK, "reference: %s", ob_ctx_errmsg(ctx));
  return st == OB_OK;
}

static bool feed(ob_rt *rt, const io *x) {
  const ob_graph *g = ob_rt_graph(rt);
  for (int i = 0; i < x->ni; i++) {
    ob_status st = ob_rt_set_input(rt, i, x->in[i], tensor_bytes(g, ob_graph_input(g, i)));
    CHECK_MSG(st == OB_OK, "set_input %d: %s", i, ob_ctx_errmsg(ctx));
    if (st) return false;
  }
  return true;
}

/* The world of a test of tuned records: a temporary database that knows this
 * host, the host target, g optimised, and inputs with their reference.
 * fixture_close releases whatever fixture_open got (g always). */
typedef struct rt_fixture {
  char dir[64], path[96];
  ob_graph *g;
  ob_db *db;
  ob_target *tg;
  ob_host h;
  io x;
  char res[512]; /* the resources of a 1-thread run on core 0, as records carry them */
} rt_fixture;

static bool fixture_open(rt_fixture *f, ob_graph *g, const char *what) {
  memset(f, 0, sizeof *f);
  f->g = g;
  snprintf(f->dir, sizeof f->dir, "/tmp/ob_rt_fx_XXXXXX");
  if (!mkdtemp(f->dir)) {
    f->dir[0] = '\0';
    CHECK_MSG(false, "%s: mkdtemp failed", what);
    return false;
  }
  snprintf(f->path, sizeof f->path, "%s/r.db", f->dir);
  ob_measure_opts mo = ob_measure_opts_default();
  int cores[1] = {0};
  mo.nthreads = 1;
  mo.cores = cores;
  ob_tune_resources(&mo, f->res, sizeof f->res);
  if (!g || ob_graph_optimize(ctx, g, 16, NULL) != OB_OK || ob_db_open(ctx, f->path, 0, &f->db) != OB_OK ||
      ob_target_host(ctx, &f->tg) != OB_OK || ob_host_detect(ctx, &f->h) != OB_OK ||
      ob_db_put_host(f->db, &f->h, NULL, NULL) || !io_make(g, 5, &f->x)) {
    CHECK_MSG(false, "%s: setup: %s", what, ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

static void fixture_close(rt_fixture *f) {
  io_free(&f->x);
  ob_db_close(f->db);
  ob_target_free(f->tg);
  ob_graph_free(f->g);
  if (f->dir[0]) {
    unlink(f->path);
    rmdir(f->dir);
  }
}

/* A runtime of g on db's tuned configs, fed x, run once and checked against
 * x's reference (what names the test in failures). NULL when a step failed. */
static ob_rt *tuned_run_cache(const ob_graph *g, ob_db *db, const ob_target *tg, const io *x, const char *what,
                              ob_db_cache cache) {
  ob_rt_opts o = ob_rt_opts_default();
  o.cache = cache;
  o.kernels = OB_RT_TUNED;
  o.db = db;
  o.target = tg;
  o.build.timeout_s = OB_TEST_TIMEOUT_S;
  ob_rt *rt = NULL;
  ob_status st = ob_rt_new(ctx, g, &o, &rt);
  CHECK_MSG(st == OB_OK, "%s: %s", what, ob_ctx_errmsg(ctx));
  if (st || !feed(rt, x)) {
    ob_rt_free(rt);
    return NULL;
  }
  CHECK(ob_rt_run(rt) == OB_OK);
  ob_rt_check_result c;
  ob_rt_check(rt, (const void *const *)x->ref, 1e-3, &c);
  CHECK_MSG(c.ok, "%s: %s", what, c.message);
  return rt;
}

static ob_rt *tuned_run_checked(const ob_graph *g, ob_db *db, const ob_target *tg, const io *x, const char *what) {
  return tuned_run_cache(g, db, tg, x, what, ob_rt_opts_default().cache);
}

/* The plan's invariant: buffers whose byte ranges intersect have disjoint
 * lifetimes; every buffer lies inside the planned block. */
static void check_memplan(const ob_rt *rt, const char *name) {
  ob_rt_stats s;
  ob_rt_get_stats(rt, &s);
  int n = ob_rt_buffer_count(rt);
  CHECK(n == s.nbuffers);
  CHECK_MSG(s.peak_bytes <= s.sum_bytes, "%s: peak %zu > sum %zu", name, s.peak_bytes, s.sum_bytes);
  ob_rt_buffer *b = calloc((size_t)n + 1, sizeof *b);
  size_t sum = 0;
  int bad = 0, outside = 0;
  for (int i = 0; i < n; i++) {
    ob_rt_buffer_get(rt, i, &b[i]);
    sum += b[i].bytes;
    outside += b[i].offset + b[i].bytes > s.peak_bytes || b[i].first > b[i].last;
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      bool bytes = b[i].offset < b[j].offset + b[j].bytes && b[j].offset < b[i].offset + b[i].bytes;
      bool alive = b[i].first <= b[j].last && b[j].first <= b[i].last;
      if (bytes && alive && b[i].bytes && b[j].bytes) {
        if (!bad)
          fprintf(stderr, "%s: buffers %d [%zu,+%zu) steps %d..%d and %d [%zu,+%zu) steps %d..%d overlap\n", name, i,
                  b[i].offset, b[i].bytes, b[i].first, b[i].last, j, b[j].offset, b[j].bytes, b[j].first, b[j].last);
        bad++;
      }
    }
  CHECK_MSG(bad == 0, "%s: %d pairs of live buffers share bytes", name, bad);
  CHECK_MSG(outside == 0, "%s: %d buffers outside the block or with an empty lifetime", name, outside);
  CHECK_MSG(sum <= s.sum_bytes + 64 * (size_t)n && s.sum_bytes <= sum + 64 * (size_t)n,
            "%s: sum of buffers %zu vs stats %zu", name, sum, s.sum_bytes);
  free(b);
}

/* Compiles g (already optimized) with kernels k, runs it on x, compares
 * with the reference; returns the runtime (caller frees) or NULL. */
static ob_rt *run_checked(const ob_graph *g, const io *x, ob_rt_kernels k, int nthreads, const char *name) {
  ob_rt_opts o = ob_rt_opts_default();
  o.kernels = k;
  o.nthreads = nthreads;
  o.build.timeout_s = OB_TEST_TIMEOUT_S;
  ob_rt *rt = NULL;
  ob_status st = ob_rt_new(ctx, g, &o, &rt);
  CHECK_MSG(st == OB_OK, "%s (%s): %s", name, ob_rt_kernels_name(k), ob_ctx_errmsg(ctx));
  if (st) return NULL;
  if (!feed(rt, x)) return rt;
  st = ob_rt_run(rt);
  CHECK_MSG(st == OB_OK, "%s run: %s", name, ob_ctx_errmsg(ctx));
  ob_rt_check_result c;
  ob_rt_check(rt, (const void *const *)x->ref, 1e-3, &c);
  CHECK_MSG(c.ok, "%s (%s, %d threads): %s (max err %.3g of %.3g)", name, ob_rt_kernels_name(k), nthreads, c.message,
            c.max_abs_err, c.max_abs_ref);
  return rt;
}

static void test_zoo(void) {
  static const struct {
    const char *source, *name;
    int64_t size, seqlen, hidden;
    bool onednn;
  } m[] = {
      {"simple", "simple", 0, 0, 0, true},
      {"local", "resnet-18", 32, 0, 0, true},
      {"local", "resnet-50", 32, 0, 0, false},
      {"local", "vgg-16", 32, 0, 0, false},
      {"local", "mobilenet-v2", 32, 0, 0, true},
      {"local", "squeezenet-1.1", 64, 0, 0, false},
      {"local", "inception-v3", 75, 0, 0, false},
      {"local", "randwire", 32, 0, 0, false},
      {"local", "nasnet-a", 35, 0, 0, false},
      {"local", "yolov5s", 64, 0, 0, false},
      {"local", "lstm", 0, 5, 24, false},
      {"local", "bert-base", 0, 3, 0, true},
      {"transformers", "bert-base-uncased", 0, 3, 0, false},
      {"transformers", "gpt2", 0, 3, 0, false},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    if (ob_test_asan_leaves(m[i].name, true)) {
      printf("%-18s checked by the release build (too heavy under ASan)\n", m[i].name);
      continue;
    }
    double t0 = ob_now_s();
    ob_graph *g = load(m[i].source, m[i].name, m[i].size, m[i].seqlen, m[i].hidden, 1);
    if (!g) continue;
    ob_status st = ob_graph_optimize(ctx, g, 16, NULL);
    CHECK_MSG(st == OB_OK, "%s: %s", m[i].name, ob_ctx_errmsg(ctx));
    io x = {0};
    if (st || !io_make(g, 7, &x)) {
      io_free(&x);
      ob_graph_free(g);
      continue;
    }
    ob_rt *rt = run_checked(g, &x, OB_RT_DEFAULT, 1, m[i].name);
    if (rt) {
      check_memplan(rt, m[i].name);
      ob_rt_stats s;
      ob_rt_get_stats(rt, &s);
      CHECK_MSG((s.nkernels > 0 || !strcmp(m[i].name, "lstm")) && s.ndefault == s.ntasks && s.ntuned == 0,
                "%s: %d kernels, %d tasks, %d default", m[i].name, s.nkernels, s.ntasks, s.ndefault);
      int covered = -1, steps = -1;
      double sum = ob_rt_db_sum(rt, &covered, &steps);
      CHECK(covered == 0 && steps == s.nkernels + s.nonednn && sum == 0);
      /* a second run on the same inputs gives the same bits: no buffer is
       * read after another step reused its bytes */
      size_t ob0 = ob_rt_output_bytes(rt, 0);
      void *first = malloc(ob0);
      memcpy(first, ob_rt_output(rt, 0), ob0);
      CHECK(ob_rt_run(rt) == OB_OK);
      CHECK_MSG(!memcmp(first, ob_rt_output(rt, 0), ob0), "%s: a second run differs", m[i].name);
      free(first);
    }
    ob_rt_free(rt);
    if (m[i].onednn) ob_rt_free(run_checked(g, &x, OB_RT_ONEDNN, 1, m[i].name));
    printf("%-18s ok in %.1f s\n", m[i].name, ob_now_s() - t0);
    io_free(&x);
    ob_graph_free(g);
  }
}

/* Two threads (a second core needed) and batch 2. */
static void test_threads_batch(void) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  ob_graph *g = load("local", "resnet-18", 32, 0, 0, 2);
  if (!g) return;
  CHECK(ob_graph_optimize(ctx, g, 16, NULL) == OB_OK);
  io x = {0};
  if (io_make(g, 3, &x)) {
    if (ncpu >= 2) {
      ob_rt *rt = run_checked(g, &x, OB_RT_DEFAULT, 2, "resnet-18 batch 2");
      if (rt) {
        /* the profile's steps are all timed and the whole run with them */
        int ns = ob_rt_step_count(rt);
        double *step = calloc((size_t)ns, sizeof *step), total = 0, sum = 0;
        CHECK(ob_rt_profile(rt, 2, step, &total) == OB_OK);
        for (int i = 0; i < ns; i++) sum += step[i];
        CHECK_MSG(total > 0 && sum > 0, "profile: total %g, sum %g", total, sum);
        /* each kernel step alone: a time for every kernel and oneDNN step,
         * none for the others, and the outputs still the run's */
        size_t ob0 = ob_rt_output_bytes(rt, 0);
        void *out0 = malloc(ob0);
        if (out0) memcpy(out0, ob_rt_output(rt, 0), ob0);
        CHECK(ob_rt_profile_alone(rt, 3, step) == OB_OK);
        int timed = 0, wrong = 0;
        for (int i = 0; i < ns; i++) {
          ob_rt_step_info si;
          ob_rt_step_get(rt, i, &si);
          bool k = si.kind == OB_RT_STEP_KERNEL || si.kind == OB_RT_STEP_ONEDNN;
          timed += k && step[i] > 0;
          wrong += k ? !(step[i] > 0) : !isnan(step[i]);
        }
        CHECK_MSG(timed > 10 && wrong == 0, "profile alone: %d steps timed, %d wrong", timed, wrong);
        CHECK(out0 && !memcmp(out0, ob_rt_output(rt, 0), ob0));
        free(out0);
        free(step);
        ob_timing t;
        ob_timing_opts to = ob_timing_default();
        to.repeat = 2;
        to.max_cv = 0;
        CHECK(ob_rt_time(rt, &to, &t) == OB_OK);
        CHECK(t.median_s > 0 && t.repeat >= 2);
        /* timing with profiled runs between the repeats: the steps add up
         * to the profiled runs' total (less the loop's few ns a step). A
         * thread preempted between two steps (ctest runs two tests at once
         * on two cores) adds time outside every step: up to 3 tries, and a
         * step left untimed fails them all */
        double *ps = calloc((size_t)ns, sizeof *ps), ptot = 0, psum = 0;
        int pruns = 0;
        for (int attempt = 0; attempt < 3; attempt++) {
          psum = 0; /* ps and ptot are set by each call */
          CHECK(ob_rt_time_profiled(rt, &to, 2, &t, ps, &ptot, &pruns) == OB_OK);
          for (int i = 0; i < ns; i++) psum += ps[i];
          if (psum > 0.95 * ptot) break;
        }
        CHECK_MSG(t.median_s > 0 && ptot > 0 && psum <= ptot && psum > 0.95 * ptot,
                  "time_profiled: median %g, profiled total %g, steps %g", t.median_s, ptot, psum);
        CHECK_MSG(pruns == 2 * (t.repeat - t.retaken), "time_profiled: %d runs, %d kept repeats", pruns,
                  t.repeat - t.retaken);
        free(ps);
      }
      ob_rt_free(rt);
      ob_rt_free(run_checked(g, &x, OB_RT_ONEDNN, 2, "resnet-18 batch 2"));
    } else {
      CHECK_SKIP("a second core is needed for the 2-thread run");
    }
  }
  io_free(&x);
  ob_graph_free(g);
}

/* The vm executor: a shape compiles once; the same shape again reuses it. */
static void test_vm(void) {
  ob_model_opts mo = ob_model_opts_default();
  mo.source = "local";
#if defined(__SANITIZE_ADDRESS__)
  /* the vm's bookkeeping on a light model: bert-base's 85 M weights made,
   * packed and run by the reference three to five times took 23 s under
   * ASan (the release build runs it) */
  mo.name = "lstm";
  mo.hidden = 24;
  const int bdim = 1, sdim = 0; /* ONNX's LSTM input: sequence, batch, features */
#else
  mo.name = "bert-base";
  const int bdim = 0, sdim = 1;
#endif
  mo.seqlen = 4;
  ob_rt_opts o = ob_rt_opts_default();
  o.kernels = OB_RT_DEFAULT;
  o.build.timeout_s = OB_TEST_TIMEOUT_S;
  ob_rt_vm *vm = NULL;
  CHECK(ob_rt_vm_new(ctx, &mo, &o, 16, &vm) == OB_OK);
  if (!vm) return;
  static const int64_t req[][2] = {{1, 3}, {2, 3}, {1, 3}, {1, 5}, {2, 3}};
  ob_rt *seen[5] = {0};
  bool compiled[5];
  for (int i = 0; i < 5; i++) {
    ob_status st = ob_rt_vm_get(vm, req[i][0], req[i][1], &seen[i], &compiled[i]);
    CHECK_MSG(st == OB_OK, "vm request %d: %s", i, ob_ctx_errmsg(ctx));
    if (st) continue;
    const ob_graph *g = ob_rt_graph(seen[i]);
    CHECK(ob_graph_tensor_dims(g, ob_graph_input(g, 0))[bdim] == req[i][0]);
    CHECK(ob_graph_tensor_dims(g, ob_graph_input(g, 0))[sdim] == req[i][1]);
    io x = {0};
    if (io_make(g, (uint64_t)i + 1, &x) && feed(seen[i], &x)) {
      CHECK(ob_rt_run(seen[i]) == OB_OK);
      ob_rt_check_result c;
      ob_rt_check(seen[i], (const void *const *)x.ref, 1e-3, &c);
      CHECK_MSG(c.ok, "vm request %d: %s", i, c.message);
    }
    io_free(&x);
  }
  CHECK(compiled[0] && compiled[1] && !compiled[2] && compiled[3] && !compiled[4]);
  CHECK(seen[2] == seen[0] && seen[4] == seen[1] && seen[1] != seen[0]);
  CHECK(ob_rt_vm_count(vm) == 3);
  ob_rt *r = NULL;
  CHECK(ob_rt_vm_get(vm, 0, 3, &r, NULL) == OB_ERR_INVALID_ARG && r == NULL);
  CHECK(strstr(ob_ctx_errmsg(ctx), "batch size 0") != NULL);
  ob_rt_vm_free(vm);
}

static void test_bad(void) {
  ob_graph *g = load("simple", "simple", 0, 0, 0, 1);
  if (!g) return;
  CHECK(ob_graph_optimize(ctx, g, 16, NULL) == OB_OK);
  ob_rt_opts o = ob_rt_opts_default();
  ob_rt *rt = NULL;
  o.nthreads = 0;
  CHECK(ob_rt_new(ctx, g, &o, &rt) == OB_ERR_INVALID_ARG && rt == NULL);
  CHECK(strstr(ob_ctx_errmsg(ctx), "threads") != NULL);
  o = ob_rt_opts_default();
  o.kernels = OB_RT_KERNELS_COUNT;
  CHECK(ob_rt_new(ctx, g, &o, &rt) == OB_ERR_INVALID_ARG && rt == NULL);
  o = ob_rt_opts_default();
  o.kernels = OB_RT_DEFAULT;
  o.build.timeout_s = OB_TEST_TIMEOUT_S;
  CHECK(ob_rt_new(ctx, g, &o, &rt) == OB_OK);
  if (rt) {
    size_t bytes = tensor_bytes(g, ob_graph_input(g, 0));
    float *buf = calloc(bytes / sizeof(float) + 1, sizeof(float));
    CHECK(ob_rt_set_input(rt, 0, buf, bytes - 4) == OB_ERR_INVALID_ARG);
    CHECK(ob_rt_set_input(rt, 5, buf, bytes) == OB_ERR_INVALID_ARG);
    CHECK(ob_rt_set_input(rt, 0, buf, bytes) == OB_OK);
    /* a reference that disagrees is caught and located */
    CHECK(ob_rt_run(rt) == OB_OK);
    size_t ob0 = ob_rt_output_bytes(rt, 0);
    float *ref = malloc(ob0);
    memcpy(ref, ob_rt_output(rt, 0), ob0);
    ob_rt_check_result c;
    const void *refs[1] = {ref};
    ob_rt_check(rt, refs, 1e-3, &c);
    CHECK(c.ok && c.max_abs_err == 0);
    ref[3] += 10.0f;
    ob_rt_check(rt, refs, 1e-3, &c);
    CHECK(!c.ok && c.worst_output == 0 && c.worst_index == 3 && c.message[0]);
    ref[3] = NAN;
    ob_rt_check(rt, refs, 1e-3, &c);
    CHECK(!c.ok);
    free(ref);
    free(buf);
  }
  ob_rt_free(rt);
  ob_graph_free(g);
  ob_rt_free(NULL);
  ob_rt_vm_free(NULL);
}

/* Puts one record of cfg (template tmpl) for node n's workload, timed warm
 * or in another cache state. */
static void put_record_in(ob_db *db, const ob_host *h, const ob_target *tg, const char *res, const ob_graph *g, int n,
                          const char *tmpl, const ob_config *cfg, double m, ob_db_cache cache) {
  ob_workload wl;
  CHECK(ob_graph_node_workload(ctx, g, n, &wl) == OB_OK);
  char key[256], *ent = NULL;
  ob_workload_key(&wl, key, sizeof key);
  CHECK(ob_workload_store(db, &wl) == OB_OK && ob_config_to_json(ctx, cfg, &ent) == OB_OK);
  ob_db_record r = {.host = h->fingerprint, .workload = key, .target = ob_target_str(tg), .resources = res,
                    .tmpl = tmpl, .config_index = cfg->index, .entity = ent,
                    .timing = {.median_s = m, .mean_s = m, .cv = 0.01, .ncosts = 1, .costs = {m}, .number = 1,
                               .repeat = 1, .min_repeat_ms = 1.0},
                    .nthreads = 1, .cores = "0", .timestamp = 1700000000.0};
  r.timing.flush = cache == OB_DB_CACHE_COLD || cache == OB_DB_CACHE_COLD_WEIGHTS;
  r.timing.flush_keep_first = cache == OB_DB_CACHE_COLD_WEIGHTS;
  CHECK_MSG(ob_db_put_measurement(db, &r, 0, NULL) == OB_OK, "put: %s", ob_ctx_errmsg(ctx));
  free(ent);
}

static void put_record(ob_db *db, const ob_host *h, const ob_target *tg, const char *res, const ob_graph *g, int n,
                       const char *tmpl, const ob_config *cfg, double m) {
  put_record_in(db, h, tg, res, g, n, tmpl, cfg, m, OB_DB_CACHE_WARM);
}

/* Records of two cache states for every direct convolution: a warm one
 * that reads faster and one with cold weights (tune --modelname's
 * default), of two configs with the same data layouts (the layout
 * selection has nothing to trade). The runtime's default takes the
 * cold-weights config, the one a model's kernel meets; asked for warm or
 * any state, the warm one; with warm records only, those (said in stats). */
static void test_cache_records(void) {
  rt_fixture f;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "cache records")) goto done;
  uint64_t warm_cfg[64], cold_cfg[64];
  int node[64], nn = 0;
  for (int n = 0; n < ob_graph_node_count(f.g) && nn < 64; n++) {
    ob_workload wl;
    if (ob_graph_node_dead(f.g, n) || ob_graph_node_op(f.g, n) != OB_GOP_CONV ||
        ob_graph_node_workload(ctx, f.g, n, &wl) != OB_OK)
      continue;
    ob_task *t = NULL;
    if (ob_task_new(ctx, &wl, "conv2d_NCHWc.x86", f.tg, &t) != OB_OK) {
      ob_ctx_clear_error(ctx);
      continue;
    }
    ob_config a = ob_task_default_config(t), b = a;
    ob_config_set_knob(&b, "unroll_kw", !ob_config_knob(&a, "unroll_kw"));
    if (b.index != a.index && ob_space_is_valid(ob_task_space(t), b.index)) {
      put_record_in(f.db, &f.h, f.tg, f.res, f.g, n, "conv2d_NCHWc.x86", &a, 1e-6, OB_DB_CACHE_WARM);
      node[nn] = n;
      warm_cfg[nn] = a.index;
      cold_cfg[nn++] = b.index;
    }
    ob_task_free(t);
  }
  CHECK_MSG(nn >= 2, "simple has %d direct convolutions with an unroll_kw knob", nn);
  /* warm records only: taken whatever the preference, and counted */
  for (int pass = 0; pass < 4; pass++) {
    if (pass == 1) /* then cold-weights records of the other configs, slower */
      for (int i = 0; i < nn; i++) {
        ob_workload wl;
        ob_task *t = NULL;
        CHECK(ob_graph_node_workload(ctx, f.g, node[i], &wl) == OB_OK &&
              ob_task_new(ctx, &wl, "conv2d_NCHWc.x86", f.tg, &t) == OB_OK);
        ob_config b;
        CHECK(t && ob_space_get(ctx, ob_task_space(t), cold_cfg[i], &b) == OB_OK);
        if (t) put_record_in(f.db, &f.h, f.tg, f.res, f.g, node[i], "conv2d_NCHWc.x86", &b, 5e-6, OB_DB_CACHE_COLD_WEIGHTS);
        ob_task_free(t);
      }
    static const ob_db_cache k_pref[4] = {OB_DB_CACHE_COLD_WEIGHTS, OB_DB_CACHE_COLD_WEIGHTS, OB_DB_CACHE_WARM,
                                          OB_DB_CACHE_ANY};
    ob_rt *rt = tuned_run_cache(f.g, f.db, f.tg, &f.x, "cache records", k_pref[pass]);
    if (!rt) continue;
    bool cold = pass == 1;
    int ok = 0;
    for (int s = 0; s < ob_rt_step_count(rt); s++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, s, &si);
      for (int i = 0; i < nn; i++)
        if (si.kind == OB_RT_STEP_KERNEL && si.node == node[i])
          ok += si.from_db && si.config_index == (cold ? cold_cfg[i] : warm_cfg[i]);
    }
    ob_rt_stats st;
    ob_rt_get_stats(rt, &st);
    CHECK_MSG(ok == nn, "cache records, pass %d: %d of %d convolutions ran the %s config", pass, ok, nn,
              cold ? "cold-weights" : "warm");
    CHECK_MSG(st.cache == k_pref[pass] && st.nother_cache == (pass == 0 ? st.ntuned : 0) && st.ntuned >= 1,
              "cache records, pass %d: %d of %d tuned tasks from another state", pass, st.nother_cache, st.ntuned);
    ob_rt_free(rt);
  }
  /* an unknown state is refused */
  ob_rt_opts o = ob_rt_opts_default();
  o.cache = (ob_db_cache)9;
  ob_rt *rt = NULL;
  CHECK(ob_rt_new(ctx, f.g, &o, &rt) == OB_ERR_INVALID_ARG && !rt && strstr(ob_ctx_errmsg(ctx), "cache state"));
done:
  fixture_close(&f);
}

/* Records of conv2d_winograd.x86 in the database: the runtime runs its
 * kernels in the blocked layout the Winograd template describes (data
 * NCHW[icb]c, output NCHW[ocb]c, weights transformed once at load), with no
 * pack or unpack step around them, and the output still matches the
 * reference. */
static void test_winograd_records(void) {
  rt_fixture f;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "winograd records")) goto done;
  ob_graph *g = f.g;
  ob_db *db = f.db;
  ob_target *tg = f.tg;
  ob_host h = f.h;
  io x = f.x;
  const char *res = f.res;
  int nwino = 0;
  for (int n = 0; n < ob_graph_node_count(g); n++) {
    ob_workload wl;
    if (ob_graph_node_dead(g, n) || ob_graph_node_op(g, n) != OB_GOP_CONV ||
        ob_graph_node_workload(ctx, g, n, &wl) != OB_OK)
      continue;
    ob_task *t = NULL;
    if (ob_task_new(ctx, &wl, "conv2d_winograd.x86", tg, &t) != OB_OK) { /* not 3x3 stride 1 */
      ob_ctx_clear_error(ctx);
      continue;
    }
    ob_config c = ob_task_default_config(t);
    put_record(db, &h, tg, res, g, n, "conv2d_winograd.x86", &c, 1e-6); /* faster than any direct record */
    ob_task_free(t);
    nwino++;
  }
  CHECK_MSG(nwino >= 2, "simple has %d 3x3 stride-1 convolutions", nwino);
  ob_rt *rt = tuned_run_checked(g, db, tg, &x, "winograd records");
  if (rt) {
    int ran = 0, packs = 0;
    for (int i = 0; i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && !strcmp(si.tmpl, "conv2d_winograd.x86") && si.from_db) ran++;
      if (si.kind == OB_RT_STEP_CONVERT && (!strcmp(si.op, "pack") || !strcmp(si.op, "unpack"))) packs++;
    }
    CHECK_MSG(ran == nwino && packs == 0, "winograd records: %d of %d Winograd kernels ran, %d pack steps", ran,
              nwino, packs);
  }
  ob_rt_free(rt);
done:
  fixture_close(&f);
}

/* A node without records runs the operator's untuned template: the
 * Winograd default for the 3x3 stride-1 convolutions that
 * ob_op_untuned_template names (simple's, at 8x8 outputs and more), the
 * direct one elsewhere; no pack step around them, and the output matches
 * the reference at the runtime's tolerance. */
static void test_untuned_winograd(void) {
  rt_fixture f;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "untuned winograd")) goto done;
  int want = 0;
  for (int n = 0; n < ob_graph_node_count(f.g); n++) {
    ob_workload wl;
    if (ob_graph_node_dead(f.g, n) || ob_graph_node_op(f.g, n) != OB_GOP_CONV ||
        ob_graph_node_workload(ctx, f.g, n, &wl) != OB_OK)
      continue;
    const char *u = ob_op_untuned_template(&wl, f.tg);
    want += u && !strcmp(u, "conv2d_winograd.x86");
  }
  CHECK_MSG(want >= 1, "untuned winograd: simple has %d convolutions for Winograd untuned", want);
  ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "untuned winograd"); /* an empty database */
  if (rt) {
    int ran = 0, packs = 0, direct = 0;
    for (int i = 0; i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && !si.from_db && !strcmp(si.tmpl, "conv2d_winograd.x86")) ran++;
      if (si.kind == OB_RT_STEP_KERNEL && !strcmp(si.tmpl, "conv2d_NCHWc.x86")) direct++;
      if (si.kind == OB_RT_STEP_CONVERT && (!strcmp(si.op, "pack") || !strcmp(si.op, "unpack"))) packs++;
    }
    CHECK_MSG(ran == want && direct >= 1 && packs == 0,
              "untuned winograd: %d of %d Winograd kernels ran, %d direct, %d pack steps", ran, want, direct, packs);
  }
  ob_rt_free(rt);
done:
  fixture_close(&f);
}

/* A kernel that fails to build costs its node that kernel, not the model:
 * with a compiler that refuses Winograd's kernels, the untuned Winograd
 * nodes of an empty database run the direct template's default, the output
 * still checked, and a note says why; with one that refuses every
 * convolution nothing is left to fall back to: a clear error naming the
 * first failure. */
static void test_build_fallback(void) {
  rt_fixture f;
  char cc[160], cache[160], nb[200];
  cc[0] = cache[0] = 0;
  FILE *notes = NULL;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "build fallback")) goto done;
  static const char *const refuse[2] = {"conv2d_winograd", "conv2d_"};
  for (int v = 0; v < 2; v++) {
    snprintf(cc, sizeof cc, "%s/cc%d.sh", f.dir, v);
    snprintf(cache, sizeof cache, "%s/cache%d", f.dir, v);
    FILE *w = fopen(cc, "w");
    if (!w) {
      CHECK_MSG(false, "build fallback: cannot write %s", cc);
      goto done;
    }
    fprintf(w, "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in *.c) if grep -q '%s' \"$a\"; then echo 'cc: refused' >&2; "
            "exit 1; fi;; esac; done\nexec cc \"$@\"\n", refuse[v]);
    fclose(w);
    chmod(cc, 0755);
    notes = tmpfile();
    ob_rt_opts o = ob_rt_opts_default();
    o.db = f.db;
    o.target = f.tg;
    o.build.timeout_s = OB_TEST_TIMEOUT_S;
    o.build.cc = cc;
    o.build.cache_dir = cache;
    o.notes = notes;
    ob_rt *rt = NULL;
    ob_status st = ob_rt_new(ctx, f.g, &o, &rt);
    char text[4096] = "";
    if (notes) {
      rewind(notes);
      size_t n = fread(text, 1, sizeof text - 1, notes);
      text[n] = 0;
      fclose(notes);
      notes = NULL;
    }
    if (v == 0) {
      CHECK_MSG(st == OB_OK, "build fallback: %s", ob_ctx_errmsg(ctx));
      CHECK_MSG(strstr(text, "failed to build") && strstr(text, "planning again without") &&
                    strstr(text, "conv2d_winograd.x86"),
                "build fallback: notes '%s'", text);
      /* the second plan says "no record" only for the workloads whose kernels failed */
      int said = 0;
      for (const char *at = text; (at = strstr(at, "no record of conv2d_nchw/f32/N1C3H32W32")); at++) said++;
      CHECK_MSG(said == 1, "build fallback: conv1's note said %d times", said);
      int wino = 0, direct = 0;
      for (int i = 0; rt && i < ob_rt_step_count(rt); i++) {
        ob_rt_step_info si;
        ob_rt_step_get(rt, i, &si);
        wino += si.kind == OB_RT_STEP_KERNEL && !strcmp(si.tmpl, "conv2d_winograd.x86");
        direct += si.kind == OB_RT_STEP_KERNEL && !strcmp(si.tmpl, "conv2d_NCHWc.x86");
      }
      CHECK_MSG(rt && wino == 0 && direct >= 2, "build fallback: %d Winograd and %d direct kernels", wino, direct);
      if (rt && feed(rt, &f.x)) {
        CHECK(ob_rt_run(rt) == OB_OK);
        ob_rt_check_result c;
        ob_rt_check(rt, (const void *const *)f.x.ref, 1e-3, &c);
        CHECK_MSG(c.ok, "build fallback: %s", c.message);
      }
    } else {
      CHECK_MSG(st == OB_ERR_COMPILE && !rt, "build fallback, nothing left: status %d: %s", (int)st, ob_ctx_errmsg(ctx));
      const char *m = ob_ctx_errmsg(ctx);
      CHECK_MSG(strstr(m, "no other kernel") && strstr(m, "first:") && strstr(m, "refused"),
                "build fallback, nothing left: '%s'", m);
      ob_ctx_clear_error(ctx);
    }
    ob_rt_free(rt);
    unlink(cc);
    snprintf(nb, sizeof nb, "rm -rf '%s'", cache);
    CHECK(system(nb) == 0);
  }
done:
  if (notes) fclose(notes);
  fixture_close(&f);
}

static int node_named(const ob_graph *g, const char *name) {
  for (int n = 0; n < ob_graph_node_count(g); n++)
    if (!ob_graph_node_dead(g, n) && !strcmp(ob_graph_node_name(g, n), name)) return n;
  return -1;
}

/* Node `name` of the fixture's graph and a task of its workload (the
 * default template); false, said, when either is missing. */
static bool node_task(const rt_fixture *f, const char *name, int *n, ob_workload *wl, ob_task **t) {
  *t = NULL;
  *n = node_named(f->g, name);
  if (*n < 0 || ob_graph_node_workload(ctx, f->g, *n, wl) != OB_OK || ob_task_new(ctx, wl, NULL, f->tg, t) != OB_OK) {
    CHECK_MSG(false, "node %s: setup: %s", name, ob_ctx_errmsg(ctx));
    return false;
  }
  return true;
}

/* Configs chosen together: conv2's fastest record writes NCHW32c, but
 * conv3 (reading conv2's output) only has a record reading NCHW16c, and a
 * conversion of conv2's output costs more than the 1 us conv2's slower
 * NCHW16c record gives away. Node by node conv2 takes its fastest record
 * and a conversion runs before conv3; the layout selection takes conv2's
 * NCHW16c record and no conversion runs between them. The output still
 * matches the reference. */
/* The graph's input is fed plain: a stem config reading a channel block
 * converts it every run, which the selection counts against the config
 * that reads it as it comes (before, a record 20 % faster reading NCHW3c
 * won, and the conversion ran uncounted). */
static void test_layout_input(void) {
  ob_task *t = NULL;
  int n = -1;
  rt_fixture f;
  ob_workload wl;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "layout input") || !node_task(&f, "conv1", &n, &wl, &t))
    goto done;
  ob_config c1 = ob_task_default_config(t), c3 = c1;
  ob_config_set_split(&c1, "tile_ic", (int64_t[]){1}, 1);
  ob_config_set_split(&c3, "tile_ic", (int64_t[]){3}, 1);
  CHECK(ob_task_arg_layout(t, &c1, 0).block == 1 && ob_task_arg_layout(t, &c3, 0).block == 3);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n, ob_task_template(t), &c3, 1e-6);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n, ob_task_template(t), &c1, 1.2e-6);
  ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "layout input");
  for (int i = 0; rt && i < ob_rt_step_count(rt); i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    if (si.kind == OB_RT_STEP_CONVERT) CHECK_MSG(i > 0, "layout input: step 0 converts the input (%s)", si.name);
    if (si.kind == OB_RT_STEP_KERNEL && si.node == n)
      CHECK_MSG(si.from_db && si.config_index == c1.index, "conv1 ran config %llu (plain input: %llu)",
                (unsigned long long)si.config_index, (unsigned long long)c1.index);
  }
  ob_rt_free(rt);
done:
  ob_task_free(t);
  fixture_close(&f);
}

static void test_layout_select(void) {
  ob_task *ta = NULL, *tb = NULL;
  int a = -1, b = -1;
  rt_fixture f;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "layout select")) goto done;
  ob_graph *g = f.g;
  ob_db *db = f.db;
  ob_target *tg = f.tg;
  ob_host h = f.h;
  io x = f.x;
  if ((a = node_named(g, "conv2")) < 0 || (b = node_named(g, "conv3")) < 0) {
    CHECK_MSG(false, "layout select: setup: no conv2 or conv3");
    goto done;
  }
  const char *res = f.res;
  ob_workload wa, wb;
  CHECK(ob_graph_node_workload(ctx, g, a, &wa) == OB_OK && ob_graph_node_workload(ctx, g, b, &wb) == OB_OK);
  CHECK(ob_task_new(ctx, &wa, NULL, tg, &ta) == OB_OK && ob_task_new(ctx, &wb, NULL, tg, &tb) == OB_OK);
  if (!ta || !tb) goto done;
  const char *tmpl = ob_task_template(ta);
  /* blocks of two vectors and one (32 and 16 channels on AVX-512, 16 and 8 on AVX2) */
  int64_t L = ob_target_get_facts(tg)->lanes_f32;
  ob_config a32 = ob_task_default_config(ta), a16 = a32, b16 = ob_task_default_config(tb);
  ob_config_set_split(&a32, "tile_oc", (int64_t[]){2 * L}, 1);
  ob_config_set_split(&a16, "tile_oc", (int64_t[]){L}, 1);
  ob_config_set_split(&b16, "tile_ic", (int64_t[]){L}, 1);
  CHECK(ob_task_arg_layout(ta, &a32, 3).block == 2 * L && ob_task_arg_layout(ta, &a16, 3).block == L &&
        ob_task_arg_layout(tb, &b16, 0).block == L);
  put_record(db, &h, tg, res, g, a, tmpl, &a32, 1e-6);
  put_record(db, &h, tg, res, g, a, tmpl, &a16, 2e-6);
  put_record(db, &h, tg, res, g, b, tmpl, &b16, 1e-6);
  ob_rt *rt = tuned_run_checked(g, db, tg, &x, "layout select");
  if (rt) {
    int ia = -1, ib = -1;
    for (int i = 0; i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && si.node == a) ia = i;
      if (si.kind == OB_RT_STEP_KERNEL && si.node == b) ib = i;
    }
    ob_rt_step_info sa;
    CHECK(ia >= 0 && ib == ia + 1); /* no conversion between them */
    if (ia >= 0) {
      ob_rt_step_get(rt, ia, &sa);
      CHECK_MSG(sa.from_db && sa.config_index == a16.index, "conv2 ran config %llu (NCHW16c out: %llu)",
                (unsigned long long)sa.config_index, (unsigned long long)a16.index);
    }
  }
  ob_rt_free(rt);
done:
  ob_task_free(ta);
  ob_task_free(tb);
  fixture_close(&f);
}

/* A chain of three 1x1 convolutions (x [1,16,16,16] -> a -> b -> c, of
 * 32, 32 and 48 channels: three workloads): the graph of the layout trap. */
static ob_graph *chain3(void) {
  ob_graph *g = NULL;
  int x = -1, w[3] = {-1, -1, -1}, t = x, node = -1;
  if (ob_graph_new(ctx, "chain3", &g) != OB_OK) return NULL;
  bool ok = ob_graph_add_input(g, "x", OB_F32, 4, (int64_t[]){1, 16, 16, 16}, &x) == OB_OK;
  t = x;
  float *wd = malloc(sizeof(float) * 48 * 32);
  for (int i = 0; wd && i < 48 * 32; i++) wd[i] = (float)((i * 37 % 101) - 50) / 400.0f;
  const char *names[3] = {"a", "b", "c"};
  for (int i = 0; ok && wd && i < 3; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "%s.w", names[i]);
    ok = ob_graph_add_const(g, nm, OB_F32, 4, (int64_t[]){i == 2 ? 48 : 32, i ? 32 : 16, 1, 1}, wd, true, &w[i]) == OB_OK &&
         ob_graph_add_node(g, OB_GOP_CONV, names[i], 2, (int[]){t, w[i]}, 1, NULL, &t, &node) == OB_OK;
    if (ok) ob_graph_set_attr_ints(g, node, "kernel_shape", 2, (int64_t[]){1, 1});
  }
  free(wd);
  if (!ok || !wd || ob_graph_mark_output(g, t) != OB_OK) {
    CHECK_MSG(false, "chain3: %s", ob_ctx_errmsg(ctx));
    ob_graph_free(g);
    return NULL;
  }
  return g;
}

/* The block a config writes its output in. */
static int64_t out_block(const ob_task *t, const ob_config *c) {
  for (int a = 0; a < ob_task_num_args(t); a++)
    if (!ob_task_arg_is_input(t, a)) return ob_task_arg_layout(t, c, a).block;
  return -1;
}

/* The trap of choosing node by node: a writes one vector of channels
 * (1.0 us) or two (1.1 us); b reads and writes one (1.0) or two (1.1); c
 * only has a record reading two. From the fastest records a conversion
 * runs before c; changing b alone moves it before b, changing a alone adds
 * one: iterated conditional modes stayed there. The whole-graph selection
 * (PBQP) takes a's and b's two-vector records, and no conversion runs
 * between the kernels. */
static void test_layout_chain(void) {
  ob_task *t[3] = {NULL, NULL, NULL};
  rt_fixture f;
  if (!fixture_open(&f, chain3(), "layout chain")) goto done;
  int n[3] = {node_named(f.g, "a"), node_named(f.g, "b"), node_named(f.g, "c")};
  if (n[0] < 0 || n[1] < 0 || n[2] < 0) {
    CHECK_MSG(false, "layout chain: setup: nodes %d %d %d", n[0], n[1], n[2]);
    goto done;
  }
  for (int i = 0; i < 3; i++) {
    ob_workload wl;
    CHECK(ob_graph_node_workload(ctx, f.g, n[i], &wl) == OB_OK && ob_task_new(ctx, &wl, NULL, f.tg, &t[i]) == OB_OK);
    if (!t[i]) goto done;
  }
  int64_t L = ob_target_get_facts(f.tg)->lanes_f32;
  ob_config a1 = ob_task_default_config(t[0]), a2 = a1, b1 = ob_task_default_config(t[1]), b2 = b1,
            c2 = ob_task_default_config(t[2]);
  ob_config_set_split(&a1, "tile_oc", (int64_t[]){L}, 1);
  ob_config_set_split(&a2, "tile_oc", (int64_t[]){2 * L}, 1);
  ob_config_set_split(&b1, "tile_ic", (int64_t[]){L}, 1);
  ob_config_set_split(&b1, "tile_oc", (int64_t[]){L}, 1);
  ob_config_set_split(&b2, "tile_ic", (int64_t[]){2 * L}, 1);
  ob_config_set_split(&b2, "tile_oc", (int64_t[]){2 * L}, 1);
  ob_config_set_split(&c2, "tile_ic", (int64_t[]){2 * L}, 1);
  CHECK_MSG(out_block(t[0], &a1) == L && out_block(t[0], &a2) == 2 * L &&
                ob_task_arg_layout(t[0], &a1, 0).block == ob_task_arg_layout(t[0], &a2, 0).block &&
                ob_task_arg_layout(t[1], &b1, 0).block == L && out_block(t[1], &b1) == L &&
                ob_task_arg_layout(t[1], &b2, 0).block == 2 * L && out_block(t[1], &b2) == 2 * L &&
                ob_task_arg_layout(t[2], &c2, 0).block == 2 * L,
            "layout chain: setup: blocks");
  const char *tmpl = ob_task_template(t[0]);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n[0], tmpl, &a1, 1.0e-6);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n[0], tmpl, &a2, 1.1e-6);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n[1], tmpl, &b1, 1.0e-6);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n[1], tmpl, &b2, 1.1e-6);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n[2], tmpl, &c2, 1.0e-6);
  ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "layout chain");
  int at[3] = {-1, -1, -1};
  for (int i = 0; rt && i < ob_rt_step_count(rt); i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    for (int k = 0; k < 3; k++)
      if (si.kind == OB_RT_STEP_KERNEL && si.node == n[k]) at[k] = i;
    if (si.kind == OB_RT_STEP_KERNEL && (si.node == n[0] || si.node == n[1])) {
      uint64_t want = si.node == n[0] ? a2.index : b2.index;
      CHECK_MSG(si.from_db && si.config_index == want, "layout chain: %s ran config %llu (two vectors: %llu)",
                si.name, (unsigned long long)si.config_index, (unsigned long long)want);
    }
  }
  /* (the input's and the output's conversions, at the layout boundaries, stay) */
  CHECK_MSG(rt && at[0] >= 0 && at[1] == at[0] + 1 && at[2] == at[1] + 1,
            "layout chain: kernels at steps %d, %d, %d: conversions between them", at[0], at[1], at[2]);
  ob_rt_stats st;
  if (rt) ob_rt_get_stats(rt, &st);
  CHECK_MSG(rt && st.cv_threads == 0, "layout chain: priced at limits of %d threads, none stored", rt ? st.cv_threads : -1);
  ob_rt_free(rt);
  /* the host's measured conversion rates, where the database holds all of
   * them for the runtime's threads: at 10^6 GB/s a conversion costs nothing
   * beside 0.1 us of kernel, so a and b take their fastest records (one
   * vector) and a conversion runs before c; one of them unverified, and
   * the built-in rates price again */
  for (int round = 0; round < 2; round++) {
    for (int k = 0; k < OB_RT_CV_KINDS; k++) {
      ob_db_host_limit l = {.host = f.h.fingerprint, .name = ob_rt_cv_name(k), .isa = "", .threads = 1,
                            .bytes = 802816, .value = 1e6, .unit = "GB/s", .verified = !(round && k == 2),
                            .note = "test"};
      CHECK(ob_db_put_host_limit(f.db, &l) == OB_OK);
    }
    rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "layout chain, measured rates");
    uint64_t ran[2] = {UINT64_MAX, UINT64_MAX};
    int conv = 0;
    for (int i = 0; rt && i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      for (int k = 0; k < 2; k++)
        if (si.kind == OB_RT_STEP_KERNEL && si.node == n[k]) ran[k] = si.config_index;
      conv += si.kind == OB_RT_STEP_CONVERT;
    }
    if (rt) ob_rt_get_stats(rt, &st);
    bool cheap = round == 0;
    CHECK_MSG(rt && st.cv_threads == (cheap ? 1 : 0) && ran[0] == (cheap ? a1.index : a2.index) &&
                  ran[1] == (cheap ? b1.index : b2.index),
              "layout chain, round %d: priced at limits of %d threads; a ran %llu, b %llu (%d conversions)", round,
              rt ? st.cv_threads : -1, (unsigned long long)ran[0], (unsigned long long)ran[1], conv);
    ob_rt_free(rt);
  }
done:
  for (int i = 0; i < 3; i++) ob_task_free(t[i]);
  fixture_close(&f);
}

/* A trial record faster than its template's confirmed best, and older
 * than the confirmation, is a trial the confirmation did not re-measure:
 * the plan counts it at the confirmed time and runs the confirmed config
 * (resnet-18's stem once ran a config 18 % slower so). A record newer than
 * the confirmation keeps its own time and wins. */
static void test_confirmed_times(void) {
  ob_task *t = NULL;
  rt_fixture f;
  int n = -1;
  ob_workload wl;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "confirmed times") || !node_task(&f, "conv2", &n, &wl, &t))
    goto done;
  ob_config fast = ob_task_default_config(t), conf = fast;
  ob_config_set_knob(&fast, "unroll_kw", 0);
  ob_config_set_knob(&conf, "unroll_kw", 1);
  CHECK(fast.index != conf.index && ob_task_arg_layout(t, &fast, 0).block == ob_task_arg_layout(t, &conf, 0).block);
  put_record(f.db, &f.h, f.tg, f.res, f.g, n, ob_task_template(t), &fast, 1.0e-6); /* at 1700000000 */
  put_record(f.db, &f.h, f.tg, f.res, f.g, n, ob_task_template(t), &conf, 1.2e-6);
  char key[256];
  ob_workload_key(&wl, key, sizeof key);
  ob_db_key k = {.host = f.h.fingerprint, .workload = key, .target = ob_target_str(f.tg), .resources = f.res,
                 .tmpl = ob_task_template(t)};
  for (int round = 0; round < 2; round++) {
    /* confirmed after the fast trial, then before it */
    ob_db_confirmed c = {.config_index = conf.index, .median_s = 1.2e-6, .mean_s = 1.2e-6, .cv = 0.01,
                         .candidates = 2, .timestamp = round ? 1699999000.0 : 1700000100.0};
    CHECK(ob_db_put_confirmed(f.db, &k, &c) == OB_OK);
    ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "confirmed times");
    uint64_t want = round ? fast.index : conf.index, ran = UINT64_MAX;
    for (int i = 0; rt && i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && si.node == n) ran = si.config_index;
    }
    CHECK_MSG(ran == want, "confirmed times (confirmed %s the fast trial): conv2 ran config %llu, expected %llu",
              round ? "before" : "after", (unsigned long long)ran, (unsigned long long)want);
    ob_rt_free(rt);
  }
done:
  ob_task_free(t);
  fixture_close(&f);
}

/* NCHW[1]c is NCHW byte for byte: conv1's record reads its input as
 * NCHW1c, which the runtime makes a view of the plain input (no conversion
 * step), and the output still matches the reference. */
static void test_one_block_view(void) {
  ob_task *t = NULL;
  rt_fixture f;
  int a = -1;
  ob_workload w;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "one-block view") || !node_task(&f, "conv1", &a, &w, &t))
    goto done;
  ob_config c = ob_task_default_config(t);
  ob_config_set_split(&c, "tile_ic", (int64_t[]){1}, 1);
  CHECK(ob_task_arg_layout(t, &c, 0).kind == OB_ARGL_NCHWC && ob_task_arg_layout(t, &c, 0).block == 1);
  put_record(f.db, &f.h, f.tg, f.res, f.g, a, ob_task_template(t), &c, 1e-6);
  ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "one-block view");
  if (rt) {
    int ran = 0, to1 = 0;
    for (int i = 0; i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && si.node == a && si.from_db && si.config_index == c.index) ran++;
      if (si.kind == OB_RT_STEP_CONVERT && strstr(si.name, "NCHW1c")) to1++;
    }
    ob_rt_stats st;
    ob_rt_get_stats(rt, &st);
    CHECK_MSG(ran == 1 && to1 == 0 && st.nviews >= 1, "one-block view: conv1 ran the record %d time(s), %d "
              "conversions to or from NCHW1c, %d views", ran, to1, st.nviews);
  }
  ob_rt_free(rt);
done:
  ob_task_free(t);
  fixture_close(&f);
}

/* The tasks (default template, target tg) of n nodes of g, into *out[i];
 * false (a check failed) when one cannot be made. */
static bool node_tasks(ob_graph *g, const ob_target *tg, const int *nodes, ob_task **const *out, int n) {
  for (int i = 0; i < n; i++) {
    ob_workload w;
    CHECK(ob_graph_node_workload(ctx, g, nodes[i], &w) == OB_OK && ob_task_new(ctx, &w, NULL, tg, out[i]) == OB_OK);
    if (!*out[i]) return false;
  }
  return true;
}

/* A channel Concat between blocked convolutions reads each input in the
 * block it was made in and writes the block its consumer reads: in
 * squeezenet's first fire module, the expands write NCHW32c (or NCHW16c)
 * and the next squeeze reads NCHW8c; no conversion runs around the concat
 * (it cannot run in place), and the output matches the reference. The
 * squeeze's pick (writing NCHW8c, which the next expands read) is its
 * slowest record, behind 20 a few nanoseconds faster that write NCHW16c and
 * would cost two conversions: the runtime must find a pick that is not
 * among the first 16 records. The expands' records that read NCHW16c are
 * slow (0.1 ms): else the next expands would read NCHW16c too, the fast
 * squeeze records would cost nothing, and the selection, which also prices
 * the edges through the next concat, takes them. */
static void test_blocked_concat(void) {
  ob_task *t1 = NULL, *t3 = NULL, *tq = NULL;
  int e1 = -1, e3 = -1, sq = -1, f1 = -1, f3 = -1;
  rt_fixture f;
  if (!fixture_open(&f, load("local", "squeezenet-1.1", 64, 0, 0, 1), "blocked concat")) goto done;
  ob_graph *g = f.g;
  ob_db *db = f.db;
  ob_target *tg = f.tg;
  ob_host h = f.h;
  io x = f.x;
  if ((e1 = node_named(g, "features.3.expand1x1")) < 0 || (e3 = node_named(g, "features.3.expand3x3")) < 0 ||
      (sq = node_named(g, "features.4.squeeze")) < 0 || (f1 = node_named(g, "features.4.expand1x1")) < 0 ||
      (f3 = node_named(g, "features.4.expand3x3")) < 0) {
    CHECK_MSG(false, "blocked concat: setup: a fire module's node is missing");
    goto done;
  }
  const char *res = f.res;
  if (!node_tasks(g, tg, (int[]){e1, e3, sq}, (ob_task **[]){&t1, &t3, &tq}, 3)) goto done;
  const char *tmpl = ob_task_template(t1);
  /* blocks of a vector, two and half a vector (16, 32, 8 channels on AVX-512; 8, 16, 4 on AVX2) */
  int64_t L = ob_target_get_facts(tg)->lanes_f32;
  ob_config c1 = ob_task_default_config(t1), c3 = ob_task_default_config(t3), cq = ob_task_default_config(tq);
  ob_config_set_split(&c1, "tile_oc", (int64_t[]){L}, 1);
  ob_config_set_split(&c3, "tile_oc", (int64_t[]){2 * L}, 1);
  ob_config_set_split(&cq, "tile_ic", (int64_t[]){L / 2}, 1);
  ob_config_set_split(&cq, "tile_oc", (int64_t[]){L / 2}, 1);
  CHECK(ob_task_arg_layout(t1, &c1, 3).block == L && ob_task_arg_layout(t3, &c3, 3).block == 2 * L &&
        ob_task_arg_layout(tq, &cq, 0).block == L / 2 && ob_task_arg_layout(tq, &cq, 3).block == L / 2);
  put_record(db, &h, tg, res, g, e1, tmpl, &c1, 1e-4);
  put_record(db, &h, tg, res, g, e3, tmpl, &c3, 1e-4);
  put_record(db, &h, tg, res, g, sq, tmpl, &cq, 1e-3);
  /* the next expands read NCHW8c (these records hold for the first
   * module's expands too, the same workloads, which keep their NCHW16c
   * records: a conversion of their input costs more than they save) */
  for (int k = 0; k < 2; k++) {
    ob_workload w;
    ob_task *t = NULL;
    CHECK(ob_graph_node_workload(ctx, g, k ? f3 : f1, &w) == OB_OK && ob_task_new(ctx, &w, NULL, tg, &t) == OB_OK);
    if (!t) goto done;
    ob_config c = ob_task_default_config(t);
    ob_config_set_split(&c, "tile_ic", (int64_t[]){L / 2}, 1);
    CHECK(ob_task_arg_layout(t, &c, 0).block == L / 2);
    put_record(db, &h, tg, res, g, k ? f3 : f1, tmpl, &c, 5e-7);
    ob_task_free(t);
  }
  /* 20 records of the squeeze a few nanoseconds faster, writing NCHW16c:
   * each would cost two conversions of its output before the expands */
  int nfast = 0;
  const ob_space *sp = ob_task_space(tq);
  for (uint64_t i = 0; i < ob_space_len(sp) && nfast < 20; i++) {
    ob_config c;
    if (!ob_space_is_valid(sp, i) || ob_space_get(ctx, sp, i, &c) != OB_OK) {
      ob_ctx_clear_error(ctx);
      continue;
    }
    if (ob_task_arg_layout(tq, &c, 0).block != L / 2 || ob_task_arg_layout(tq, &c, 3).block != L) continue;
    put_record(db, &h, tg, res, g, sq, tmpl, &c, 1e-3 - 1e-9 * (nfast + 1));
    nfast++;
  }
  CHECK_MSG(nfast == 20, "%d configs of the squeeze write NCHW%lldc", nfast, (long long)L);
  ob_rt *rt = tuned_run_checked(g, db, tg, &x, "blocked concat");
  if (rt) {
    int i1 = -1, iq = -1, around = 0;
    for (int i = 0; i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && si.node == e1) i1 = i;
      if (si.kind == OB_RT_STEP_KERNEL && si.node == sq) {
        iq = i;
        CHECK_MSG(si.from_db && si.config_index == cq.index, "the squeeze ran config %llu, its pick is %llu",
                  (unsigned long long)si.config_index, (unsigned long long)cq.index);
      }
      if (si.kind == OB_RT_STEP_CONVERT && i1 >= 0 && iq < 0) {
        fprintf(stderr, "blocked concat: conversion '%s'\n", si.name);
        around++;
      }
    }
    /* expand1x1, expand3x3, the concat, the squeeze */
    CHECK_MSG(i1 >= 0 && iq == i1 + 3 && !around, "steps %d..%d, %d conversions around the concat", i1, iq, around);
  }
  ob_rt_free(rt);
done:
  ob_task_free(t1);
  ob_task_free(t3);
  ob_task_free(tq);
  fixture_close(&f);
}

/* A channel Concat whose producers write the block its reader reads runs
 * in place: in squeezenet's first fire module, expand1x1 and expand3x3 both
 * write NCHW16c and the next squeeze reads NCHW16c, so the expands write
 * their slices of the concat's output and no step runs for the concat (nor
 * a conversion around it); the plan's memory stays sound and the output
 * matches the reference, run after run. */
static void test_inplace_concat(void) {
  ob_task *t1 = NULL, *t3 = NULL, *tq = NULL;
  rt_fixture f;
  if (!fixture_open(&f, load("local", "squeezenet-1.1", 64, 0, 0, 1), "in-place concat")) goto done;
  ob_graph *g = f.g;
  int e1 = node_named(g, "features.3.expand1x1"), e3 = node_named(g, "features.3.expand3x3");
  int cat = node_named(g, "features.3.cat"), sq = node_named(g, "features.4.squeeze");
  if (e1 < 0 || e3 < 0 || cat < 0 || sq < 0) {
    CHECK_MSG(false, "in-place concat: setup: a fire module's node is missing");
    goto done;
  }
  if (!node_tasks(g, f.tg, (int[]){e1, e3, sq}, (ob_task **[]){&t1, &t3, &tq}, 3)) goto done;
  const char *tmpl = ob_task_template(t1);
  ob_config c1 = ob_task_default_config(t1), c3 = ob_task_default_config(t3), cq = ob_task_default_config(tq);
  ob_config_set_split(&c1, "tile_oc", (int64_t[]){16}, 1);
  ob_config_set_split(&c3, "tile_oc", (int64_t[]){16}, 1);
  ob_config_set_split(&cq, "tile_ic", (int64_t[]){16}, 1);
  CHECK(ob_task_arg_layout(t1, &c1, 3).block == 16 && ob_task_arg_layout(t3, &c3, 3).block == 16 &&
        ob_task_arg_layout(tq, &cq, 0).block == 16);
  put_record(f.db, &f.h, f.tg, f.res, g, e1, tmpl, &c1, 1e-6);
  put_record(f.db, &f.h, f.tg, f.res, g, e3, tmpl, &c3, 1e-6);
  put_record(f.db, &f.h, f.tg, f.res, g, sq, tmpl, &cq, 1e-6);
  ob_rt *rt = tuned_run_checked(g, f.db, f.tg, &f.x, "in-place concat");
  if (rt) {
    int i1 = -1, i3 = -1, iq = -1, catsteps = 0, around = 0;
    for (int i = 0; i < ob_rt_step_count(rt); i++) {
      ob_rt_step_info si;
      ob_rt_step_get(rt, i, &si);
      if (si.kind == OB_RT_STEP_KERNEL && si.node == e1) i1 = i;
      if (si.kind == OB_RT_STEP_KERNEL && si.node == e3) i3 = i;
      if (si.kind == OB_RT_STEP_KERNEL && si.node == sq) iq = i;
      if (si.node == cat) catsteps++;
      if (si.kind == OB_RT_STEP_CONVERT && i1 >= 0 && iq < 0) around++;
    }
    CHECK_MSG(i1 >= 0 && i3 == i1 + 1 && iq == i3 + 1 && !catsteps && !around,
              "in-place concat: expands at steps %d, %d, squeeze at %d; %d concat steps, %d conversions", i1, i3, iq,
              catsteps, around);
    check_memplan(rt, "in-place concat");
    /* again: every run rewrites the slices */
    CHECK(ob_rt_run(rt) == OB_OK);
    ob_rt_check_result c;
    ob_rt_check(rt, (const void *const *)f.x.ref, 1e-3, &c);
    CHECK_MSG(c.ok, "in-place concat, second run: %s", c.message);
  }
  ob_rt_free(rt);
done:
  ob_task_free(t1);
  ob_task_free(t3);
  ob_task_free(tq);
  fixture_close(&f);
}

/* Native max pooling in the blocks its input may come in: squeezenet's
 * second pool (3x3 stride 2, ceil mode) reads the concat before it, which
 * is written in the block features.6.squeeze reads (NCHW[b]c for b = 1, 2,
 * 4, 8: rows taken first, then columns; 16: a vector per window position),
 * and the output matches the reference each time. */
static void test_pool_blocks(void) {
  static const int64_t blocks[] = {1, 2, 4, 8, 16};
  int ran = 0;
  char which[64] = "";
  for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
    ob_task *t = NULL;
    rt_fixture f;
    if (!fixture_open(&f, load("local", "squeezenet-1.1", 64, 0, 0, 1), "pool blocks")) goto next;
    int sq = node_named(f.g, "features.6.squeeze");
    ob_workload w;
    if (sq < 0 || ob_graph_node_workload(ctx, f.g, sq, &w) != OB_OK || ob_task_new(ctx, &w, NULL, f.tg, &t)) {
      CHECK_MSG(false, "pool blocks: setup: %s", ob_ctx_errmsg(ctx));
      goto next;
    }
    ob_config c = ob_task_default_config(t);
    ob_config_set_split(&c, "tile_ic", (int64_t[]){blocks[bi]}, 1);
    if (ob_task_arg_layout(t, &c, 0).block != blocks[bi]) goto next; /* not a block this template reads */
    put_record(f.db, &f.h, f.tg, f.res, f.g, sq, ob_task_template(t), &c, 1e-9);
    char what[64];
    snprintf(what, sizeof what, "max pool in NCHW%lldc", (long long)blocks[bi]);
    ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, what);
    if (rt) {
      ran++;
      snprintf(which + strlen(which), sizeof which - strlen(which), " %lld", (long long)blocks[bi]);
    }
    ob_rt_free(rt);
  next:
    ob_task_free(t);
    fixture_close(&f);
  }
  CHECK_MSG(ran >= 4, "pool blocks: ran in blocks%s only", which);
}

/* In-graph step records: a profiling run stores one record per step of
 * the plan (kernels, natives, conversions); the sum read back covers every
 * step and is the sum stored; a plan under another resource setting (2
 * threads) finds none of them. */
static void test_ingraph_records(void) {
  rt_fixture f;
  if (!fixture_open(&f, load("simple", "simple", 0, 0, 0, 1), "in-graph records")) goto done;
  ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "in-graph records");
  if (!rt) goto done;
  double in0 = -1;
  int c0 = -1;
  CHECK(ob_rt_ingraph_sum(rt, f.db, &in0, &c0) == OB_OK);
  CHECK_MSG(c0 == 0 && in0 == 0, "records before any were stored: %d steps, %g s", c0, in0);
  double sum = 0, tot = 0;
  CHECK_MSG(ob_rt_record_steps(rt, f.db, 5, &sum, &tot) == OB_OK, "%s", ob_ctx_errmsg(ctx));
  CHECK_MSG(sum > 0 && tot > 0, "sum %g, total %g", sum, tot);
  double in = 0;
  int c = 0;
  CHECK(ob_rt_ingraph_sum(rt, f.db, &in, &c) == OB_OK);
  CHECK_MSG(c == ob_rt_step_count(rt), "%d of %d steps have a record", c, ob_rt_step_count(rt));
  CHECK_MSG(fabs(in - sum) <= 1e-12 + 1e-9 * sum, "read back %g s, stored %g s", in, sum);
  ob_rt_free(rt);
  /* another resource setting is another plan */
  ob_rt_opts o = ob_rt_opts_default();
  o.db = f.db;
  o.target = f.tg;
  o.nthreads = 2;
  o.build.timeout_s = OB_TEST_TIMEOUT_S;
  if (ob_rt_new(ctx, f.g, &o, &rt) == OB_OK) {
    CHECK(ob_rt_ingraph_sum(rt, f.db, &in, &c) == OB_OK);
    CHECK_MSG(c == 0, "a 2-thread plan found %d 1-thread records", c);
    ob_rt_free(rt);
  } else {
    CHECK_MSG(false, "2 threads: %s", ob_ctx_errmsg(ctx));
  }
done:
  fixture_close(&f);
}

/* Conversion steps of a plan, each named on stderr; kernels and those of
 * them from the database in *kern and *fromdb. */
static int count_conversions(const ob_rt *rt, const char *what, int *kern, int *fromdb) {
  int conv = 0;
  *kern = *fromdb = 0;
  for (int i = 0; i < ob_rt_step_count(rt); i++) {
    ob_rt_step_info si;
    ob_rt_step_get(rt, i, &si);
    if (si.kind == OB_RT_STEP_CONVERT) {
      fprintf(stderr, "%s: conversion '%s'\n", what, si.name);
      conv++;
    }
    if (si.kind == OB_RT_STEP_KERNEL) {
      (*kern)++;
      *fromdb += si.from_db;
    }
  }
  return conv;
}

/* A tuned run whose database holds no record of the model: every node
 * runs its default config or one of its channel-block variants (layout.c),
 * picked so that the blocks agree along the graph, and the output matches
 * the reference. With 16 registers, where the defaults write two vectors
 * of channels and read one, MobileNet-V2's chain of 1x1 expand, depthwise
 * and 1x1 project layers would convert at nearly every edge (32 steps, 1.5
 * of 13 ms at 1 thread) and does not at all with the variants, tuned run
 * or untuned (--kernels default: the blocks are the graph's plan, not
 * tuning). Elsewhere (32 registers) the defaults' blocks mostly agree
 * already: the variants must not add conversions. */
static void test_default_blocks(void) {
  rt_fixture f;
  ob_rt *dflt = NULL;
  if (!fixture_open(&f, load("local", "mobilenet-v2", 32, 0, 0, 1), "default blocks")) goto done;
  ob_rt_opts o = ob_rt_opts_default();
  o.kernels = OB_RT_DEFAULT;
  o.target = f.tg;
  o.build.timeout_s = OB_TEST_TIMEOUT_S;
  CHECK_MSG(ob_rt_new(ctx, f.g, &o, &dflt) == OB_OK, "default blocks: %s", ob_ctx_errmsg(ctx));
  ob_rt *rt = tuned_run_checked(f.g, f.db, f.tg, &f.x, "default blocks");
  if (rt && dflt) {
    int kern, fromdb, k0, f0;
    int conv = count_conversions(rt, "default blocks", &kern, &fromdb);
    int conv0 = count_conversions(dflt, "default blocks, --kernels default", &k0, &f0);
    CHECK_MSG(kern > 40 && fromdb == 0, "default blocks: %d kernels (%d from the db)", kern, fromdb);
    if (ob_target_get_facts(f.tg)->vector_registers <= 16)
      CHECK_MSG(conv == 0 && conv0 == 0, "default blocks: %d conversions (%d untuned)", conv, conv0);
    else
      CHECK_MSG(conv == conv0, "default blocks: %d conversions, %d untuned", conv, conv0);
  }
  ob_rt_free(rt);
done:
  ob_rt_free(dflt);
  fixture_close(&f);
}

/* ob_rt_cv_measure: every kind's rate positive at 1 and 2 threads (each
 * conversion checked inside: a wrong one fails the call), a thread count
 * out of range refused. */
static void test_cv_measure(void) {
  for (int t = 1; t <= 2; t++) {
    double r[OB_RT_CV_KINDS], bytes = 0;
    for (int k = 0; k < OB_RT_CV_KINDS; k++) r[k] = -1;
    CHECK_MSG(ob_rt_cv_measure(ctx, t, NULL, r, &bytes) == OB_OK, "conversion rates at %d threads: %s", t,
              ob_ctx_errmsg(ctx));
    CHECK(bytes == 4.0 * 64 * 56 * 56);
    for (int k = 0; k < OB_RT_CV_KINDS; k++)
      CHECK_MSG(r[k] > 1e6 && isfinite(r[k]), "%s at %d threads: %g bytes/s", ob_rt_cv_name(k), t, r[k]);
  }
  double r[OB_RT_CV_KINDS];
  CHECK(ob_rt_cv_measure(ctx, 0, NULL, r, NULL) == OB_ERR_INVALID_ARG);
  CHECK(ob_rt_cv_measure(ctx, 257, NULL, r, NULL) == OB_ERR_INVALID_ARG);
  CHECK(strcmp(ob_rt_cv_name(OB_RT_CV_RUN16), "cv_run16") == 0 && strcmp(ob_rt_cv_name(OB_RT_CV_KINDS), "?") == 0);
  ob_ctx_clear_error(ctx);
}

int main(void) {
  if (ob_ctx_new(&ctx) != OB_OK) return 1;
  test_cv_measure();
  test_bad();
  test_winograd_records();
  test_cache_records();
  test_untuned_winograd();
  test_build_fallback();
  test_layout_select();
  test_layout_chain();
  test_confirmed_times();
  test_layout_input();
  test_one_block_view();
  test_blocked_concat();
  test_default_blocks();
  test_inplace_concat();
  test_pool_blocks();
  test_ingraph_records();
  test_vm();
  test_threads_batch();
  test_zoo();
  ob_ctx_free(ctx);
  return CHECK_DONE();
}
