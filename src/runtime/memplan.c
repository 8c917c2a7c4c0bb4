/* memplan.c: the memory plan. Every activation value (not a constant, not
 * a view) lives from the step that writes it (graph inputs: before the
 * first) to its last reader (graph outputs: to the end; a view's readers
 * count for the value it views). Values are placed largest first at the
 * lowest offset of one block where they overlap no value already placed
 * whose lifetime meets theirs (greedy by size, as TFLite's arena planner),
 * so two buffers share bytes only when no step sees both alive; the
 * placement is checked before the block is allocated. */
#include <limits.h>

#include "runtime/runtime_impl.h"

typedef struct span {
  int v;
  size_t off, bytes;
  int first, last;
} span;

static int by_size(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  return x->first - y->first;
}

static int by_off(const void *a, const void *b) {
  const span *x = *(const span *const *)a, *y = *(const span *const *)b;
  return x->off < y->off ? -1 : x->off > y->off;
}

static bool meet(const span *a, const span *b) { return a->first <= b->last && b->first <= a->last; }

static size_t round_up(size_t n) { return (n + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN; }

ob_status rt_memplan(ob_rt *rt) {
  int ns = rt->ns;
  /* views: their readers keep the viewed value alive */
  for (int i = 0; i < rt->nv; i++) {
    rt_val *v = &rt->v[i];
    if (v->alias >= 0 && v->last > rt->v[v->alias].last) rt->v[v->alias].last = v->last;
  }
  span *sp = calloc((size_t)rt->nv + 1, sizeof *sp);
  const span **live = calloc((size_t)rt->nv + 1, sizeof *live);
  if (!sp || !live) {
    free(sp);
    free(live);
    return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory");
  }
  int n = 0;
  size_t sum = 0;
  for (int i = 0; i < rt->nv; i++) {
    rt_val *v = &rt->v[i];
    if (v->is_const || v->alias >= 0) continue;
    int first = v->def == INT_MAX ? 0 : v->def;
    int last = v->last == INT_MAX ? ns : v->last < first ? first : v->last; /* written, never read */
    sp[n++] = (span){i, 0, round_up(v->bytes ? v->bytes : 1), first, last};
    sum += round_up(v->bytes ? v->bytes : 1); /* as placed: aligned */
  }
  qsort(sp, (size_t)n, sizeof *sp, by_size);
  size_t peak = 0;
  for (int i = 0; i < n; i++) {
    int nl = 0;
    for (int j = 0; j < i; j++)
      if (meet(&sp[i], &sp[j])) live[nl++] = &sp[j];
    qsort(live, (size_t)nl, sizeof *live, by_off);
    size_t off = 0;
    for (int j = 0; j < nl; j++) {
      if (live[j]->off >= off + sp[i].bytes) break; /* the gap before it fits */
      if (live[j]->off + live[j]->bytes > off) off = live[j]->off + live[j]->bytes;
    }
    sp[i].off = off;
    if (off + sp[i].bytes > peak) peak = off + sp[i].bytes;
  }
  /* by construction no two live values overlap; say so before trusting it */
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      OB_ASSERT(!meet(&sp[i], &sp[j]) || sp[i].off + sp[i].bytes <= sp[j].off || sp[j].off + sp[j].bytes <= sp[i].off);
  free(live);
  rt->block_bytes = peak;
  rt->block = peak ? ob_mem_alloc_big(peak) : NULL;
  if (peak && !rt->block) {
    free(sp);
    return ob_fail(rt->ctx, OB_ERR_NOMEM, "runtime: out of memory for %zu bytes of activations", peak);
  }
  if (rt->block) memset(rt->block, 0, peak);
  for (int i = 0; i < n; i++) {
    rt_val *v = &rt->v[sp[i].v];
    v->offset = sp[i].off;
    v->ptr = (char *)rt->block + sp[i].off;
  }
  free(sp);
  for (int i = 0; i < rt->nv; i++) {
    rt_val *v = &rt->v[i];
    if (v->is_const) v->ptr = (void *)v->cdata;
  }
  for (int i = 0; i < rt->nv; i++) {
    rt_val *v = &rt->v[i];
    if (!v->is_const && v->alias >= 0) v->ptr = (char *)rt->v[v->alias].ptr + v->alias_off;
  }
  for (int i = 0; i < ns; i++) {
    rt_step *s = &rt->s[i];
    for (int k = 0; k < s->nin; k++) s->pin[k] = s->in[k] >= 0 ? rt->v[s->in[k]].ptr : NULL;
    for (int k = 0; k < s->nout; k++) s->pout[k] = rt->v[s->out[k]].ptr;
    for (int k = 0; k < s->nkargs; k++) s->kbuf[k] = s->kval[k] >= 0 ? rt->v[s->kval[k]].ptr : NULL;
  }
  rt->st.peak_bytes = peak;
  rt->st.sum_bytes = sum;
  rt->st.nbuffers = n;
  return OB_OK;
}

int ob_rt_buffer_count(const ob_rt *rt) { return rt->st.nbuffers; }

void ob_rt_buffer_get(const ob_rt *rt, int i, ob_rt_buffer *out) {
  memset(out, 0, sizeof *out);
  int k = 0;
  for (int j = 0; j < rt->nv; j++) {
    const rt_val *v = &rt->v[j];
    if (v->is_const || v->alias >= 0) continue;
    if (k++ != i) continue;
    out->offset = v->offset;
    out->bytes = v->bytes;
    out->first = v->def == INT_MAX ? 0 : v->def;
    out->last = v->last == INT_MAX ? rt->ns : v->last < out->first ? out->first : v->last;
    out->tensor = v->tensor;
    return;
  }
}
