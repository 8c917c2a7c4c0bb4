/* vm.c: the vm executor. A model whose batch size or sequence length comes
 * with each request: the first request of a shape loads the model at that
 * shape, runs the passes and compiles it (kernels through the kernel cache,
 * so a shape compiled in an earlier process builds nothing); the compiled
 * model is kept for later requests of the shape. The vm owns its graphs and
 * runtimes. */
#include "runtime/runtime_impl.h"

typedef struct vm_entry {
  int64_t batch, seqlen;
  ob_graph *g;
  ob_rt *rt;
} vm_entry;

struct ob_rt_vm {
  ob_ctx *ctx;
  ob_model_opts mo;
  ob_rt_opts o;
  int lanes;
  vm_entry *e;
  int n, cap;
};

ob_status ob_rt_vm_new(ob_ctx *ctx, const ob_model_opts *mo, const ob_rt_opts *o, int lanes, ob_rt_vm **out) {
  *out = NULL;
  ob_rt_vm *vm = calloc(1, sizeof *vm);
  if (!vm) return ob_fail(ctx, OB_ERR_NOMEM, "vm: out of memory");
  vm->ctx = ctx;
  vm->mo = *mo;
  vm->o = o ? *o : ob_rt_opts_default();
  vm->lanes = lanes;
  *out = vm;
  return OB_OK;
}

void ob_rt_vm_free(ob_rt_vm *vm) {
  if (!vm) return;
  /* newest first: each runtime's pool restores the calling thread's mask
   * it found, which the runtimes made before it had set */
  for (int i = vm->n - 1; i >= 0; i--) {
    ob_rt_free(vm->e[i].rt);
    ob_graph_free(vm->e[i].g);
  }
  free(vm->e);
  free(vm);
}

int ob_rt_vm_count(const ob_rt_vm *vm) { return vm->n; }

ob_status ob_rt_vm_get(ob_rt_vm *vm, int64_t batch, int64_t seqlen, ob_rt **rt, bool *compiled) {
  *rt = NULL;
  if (compiled) *compiled = false;
  if (batch < 1) return ob_fail(vm->ctx, OB_ERR_INVALID_ARG, "vm: batch size %lld (expected >= 1)", (long long)batch);
  if (seqlen < 0) return ob_fail(vm->ctx, OB_ERR_INVALID_ARG, "vm: sequence length %lld", (long long)seqlen);
  for (int i = 0; i < vm->n; i++)
    if (vm->e[i].batch == batch && vm->e[i].seqlen == seqlen) {
      *rt = vm->e[i].rt;
      return OB_OK;
    }
  if (vm->n == vm->cap) {
    int nc = vm->cap ? 2 * vm->cap : 8;
    vm_entry *ne = realloc(vm->e, sizeof *ne * (size_t)nc);
    if (!ne) return ob_fail(vm->ctx, OB_ERR_NOMEM, "vm: out of memory");
    vm->e = ne;
    vm->cap = nc;
  }
  ob_model_opts mo = vm->mo;
  mo.batch = batch;
  if (seqlen) mo.seqlen = seqlen;
  ob_graph *g = NULL;
  ob_rt *r = NULL;
  ob_status st = ob_model_load(vm->ctx, &mo, &g);
  int lanes = vm->lanes;
  if (!st && lanes <= 0) {
    ob_target *t = NULL;
    st = vm->o.target ? OB_OK : ob_target_host(vm->ctx, &t);
    if (!st) lanes = ob_target_get_facts(vm->o.target ? vm->o.target : t)->lanes_f32;
    ob_target_free(t);
  }
  if (!st) st = ob_graph_optimize(vm->ctx, g, lanes, NULL);
  if (!st) st = ob_rt_new(vm->ctx, g, &vm->o, &r);
  if (st) {
    ob_fail_prefix(vm->ctx, "vm: batch %lld%s", (long long)batch, seqlen ? ", sequence length given" : "");
    ob_graph_free(g);
    return st;
  }
  vm->e[vm->n++] = (vm_entry){batch, seqlen, g, r};
  *rt = r;
  if (compiled) *compiled = true;
  return OB_OK;
}
