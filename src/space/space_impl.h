/* space_impl.h: the layout of a config space, private to the space module
 * (the tuners' features and cost model read it too). A space owns its knobs'
 * entity tables (malloc'd, freed by ob_space_free); an ob_config is a plain
 * value that points at its space and owns nothing. */
#ifndef OB_SPACE_IMPL_H
#define OB_SPACE_IMPL_H

#include "opbench/space.h"

#define OB_KNOB_NAME_MAX 64              /* bytes, NUL included */
#define OB_KNOB_MAX_ENTITIES (1 << 20)   /* a bigger knob is a template bug */
#define OB_SPLIT_MAX_EXTENT (INT64_C(1) << 48) /* keeps divisor search cheap */

typedef struct ob_knob {
  char name[OB_KNOB_NAME_MAX];
  ob_knob_kind kind;
  int policy;     /* ob_split_policy / ob_reorder_policy / ob_annotate_policy */
  int width;      /* int64 values per entity: split n, reorder/annotate naxes, other 1 */
  int n;          /* number of entities, >= 1 */
  int64_t *vals;  /* n * width values; split rows start with -1 */
  int64_t extent; /* split: the axis length */
  bool added;     /* ob_space_define_knob_added: a config without it takes entity 0 */
  int n_old;      /* entities records stored before entities were added (n when none) */
} ob_knob;

struct ob_space {
  ob_ctx *ctx;      /* for messages of functions without a ctx; may be NULL */
  int nknobs;
  uint64_t len;     /* old_len x the product of (n - n_old + 1): see ob_space_get */
  uint64_t old_len; /* product of n_old: the configs before entities were added */
  ob_space_filter_fn filter;
  void *filter_user;
  ob_knob knobs[OB_MAX_KNOBS];
};

static inline const int64_t *ob_knob_row(const ob_knob *k, int choice) {
  return k->vals + (size_t)choice * (size_t)k->width;
}

#endif
