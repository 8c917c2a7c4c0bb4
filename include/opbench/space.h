/* space: config spaces after AutoTVM's ConfigSpace. A template defines
 * knobs (split, reorder, annotate, plain values), an optional cross-knob
 * filter rejects combinations; a config is a point of the space, named by
 * its mixed-radix index (first knob fastest) or by its JSON entity list as
 * AutoTVM logs write it. Spaces sit below the operators (which define them)
 * and the tuners (which search them), and know neither. */
#ifndef OPBENCH_SPACE_H
#define OPBENCH_SPACE_H

#include "opbench/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OB_MAX_KNOBS 32
#define OB_MAX_SPLIT 8  /* at most this many factors in one split */
#define OB_MAX_AXES 8   /* at most this many axes in a reorder/annotate knob */

typedef enum ob_knob_kind {
  OB_KNOB_SPLIT = 0,  /* "sp" */
  OB_KNOB_REORDER,    /* "re" */
  OB_KNOB_ANNOTATE,   /* "an" */
  OB_KNOB_OTHER,      /* "ot" */
  OB_KNOB_KIND_COUNT
} ob_knob_kind;

typedef enum ob_split_policy {
  OB_SPLIT_FACTORS = 0, /* divisors only (no tail) */
  OB_SPLIT_POWER2,      /* powers of two, tail allowed */
  OB_SPLIT_VERBOSE,     /* divisors and powers of two */
  OB_SPLIT_CANDIDATE,   /* explicit list */
  OB_SPLIT_POLICY_COUNT
} ob_split_policy;

typedef struct ob_split_opts {
  ob_split_policy policy;
  int num_outputs;            /* >= 2 */
  int64_t max_factor;         /* 0: no limit; bounds each inner factor */
  bool no_tail;               /* with power2/verbose: only exact covers */
  const int64_t *candidates;  /* OB_SPLIT_CANDIDATE: ncandidates rows of
                                 num_outputs entries, first entry -1 */
  int ncandidates;
  /* Entities added to the knob after records of the template were stored
   * (the space's version change): rows as candidates are, appended after
   * the policy's entities (rows already among them are skipped). Old
   * records' indices keep naming their configs; see ob_space_get. */
  const int64_t *added;
  int nadded;
} ob_split_opts;

typedef enum ob_reorder_policy {
  OB_REORDER_IDENTITY = 0,
  OB_REORDER_ALL,       /* every permutation */
  OB_REORDER_CANDIDATE, /* explicit list of permutations */
  OB_REORDER_POLICY_COUNT
} ob_reorder_policy;

typedef enum ob_ann {
  OB_ANN_NONE = 0,
  OB_ANN_UNROLL,
  OB_ANN_VEC,
  OB_ANN_COUNT
} ob_ann;

typedef enum ob_annotate_policy {
  OB_ANNOTATE_TRY_UNROLL = 0,     /* each axis: none | unroll */
  OB_ANNOTATE_TRY_VEC,            /* last axis: none | vec */
  OB_ANNOTATE_TRY_UNROLL_VEC,     /* each axis none|unroll, last also vec */
  OB_ANNOTATE_POLICY_COUNT
} ob_annotate_policy;

typedef struct ob_space ob_space;
typedef struct ob_config {
  const ob_space *space;
  uint64_t index;              /* mixed-radix index, first knob fastest */
  int32_t choice[OB_MAX_KNOBS];/* per knob, index into its entity list */
} ob_config;

/* Cross-knob filter: false rejects the config. */
typedef bool (*ob_space_filter_fn)(const ob_config *cfg, void *user);

OB_API ob_status ob_space_new(ob_ctx *ctx, ob_space **out);
OB_API void ob_space_free(ob_space *s);

/* Each define_* fails with OB_ERR_INVALID_ARG on a duplicate name, bad
 * options, or a knob whose entity list would be empty. */
OB_API ob_status ob_space_define_split(ob_space *s, const char *name, int64_t extent,
                                       const ob_split_opts *opts);
OB_API ob_status ob_space_define_reorder(ob_space *s, const char *name, int naxes,
                                         ob_reorder_policy policy, const int *candidates,
                                         int ncandidates);
OB_API ob_status ob_space_define_annotate(ob_space *s, const char *name, int naxes,
                                          ob_annotate_policy policy);
OB_API ob_status ob_space_define_knob(ob_space *s, const char *name, const int64_t *values,
                                      int nvalues);
/* A knob added to a template after records of it were stored (the space's
 * version change): define it after every knob the records knew, with the
 * old behaviour as its first value. The first knobs vary fastest in a
 * config's index, so an old record's index names the same config, and an
 * old record's JSON entity, which lacks the knob, reads its first value. */
OB_API ob_status ob_space_define_knob_added(ob_space *s, const char *name, const int64_t *values,
                                            int nvalues);
OB_API void ob_space_set_filter(ob_space *s, ob_space_filter_fn fn, void *user);

/* A space's length: the product of knob sizes, or, with added entities, the
 * old configs plus room for the new ones (some indices there are holes,
 * which ob_space_is_valid rejects as the filter's rejections are). */
OB_API uint64_t ob_space_len(const ob_space *s);
OB_API int ob_space_num_knobs(const ob_space *s);
OB_API const char *ob_space_knob_name(const ob_space *s, int k);
OB_API ob_knob_kind ob_space_knob_kind(const ob_space *s, int k);
OB_API int ob_space_knob_len(const ob_space *s, int k);
OB_API int ob_space_knob_find(const ob_space *s, const char *name); /* -1 if absent */
/* Entity k's values as numbers, e.g. split [-1,4,8] -> {-1,4,8}; reorder ->
 * permutation; annotate -> ob_ann per axis; other -> {value}. Returns count. */
OB_API int ob_space_entity(const ob_space *s, int k, int choice, int64_t *vals, int cap);

/* Index <-> config. OB_ERR_OUT_OF_SPACE when index >= len or the filter
 * rejects it (message names the index and, for the filter, the config).
 * Indices are mixed-radix with the first knob fastest. Where knobs gained
 * entities (ob_split_opts.added, ob_space_define_knob_added), an index below
 * the old space's length (the product of each knob's old entity count) is
 * the old config of that index; above it, index = old part + old length x
 * the new part, each knob's new entities numbered from 1 in the new part
 * (0 there: the old part chooses). An index naming a new entity and an old
 * non-first one of the same knob is a hole. */
OB_API ob_status ob_space_get(ob_ctx *ctx, const ob_space *s, uint64_t index, ob_config *out);
OB_API bool ob_space_is_valid(const ob_space *s, uint64_t index);
OB_API uint64_t ob_config_index_of(const ob_space *s, const int32_t *choice);
/* The choices an index names, without the filter's or the holes' verdict
 * (index < len). */
OB_API void ob_space_decode(const ob_space *s, uint64_t index, ob_config *out);

/* Accessors by knob name; a missing name or a kind mismatch is a template
 * bug and aborts. Split: fills num_outputs factors, the first one computed
 * as ceil(extent / product(others)). */
OB_API void ob_config_split(const ob_config *c, const char *name, int64_t *factors);
/* The length of the axis a split knob cuts (its extent). */
OB_API int64_t ob_config_split_extent(const ob_config *c, const char *name);
OB_API void ob_config_reorder(const ob_config *c, const char *name, int *perm);
OB_API void ob_config_annotate(const ob_config *c, const char *name, ob_ann *anns);
OB_API int64_t ob_config_knob(const ob_config *c, const char *name);

/* Building a default (fallback) config: start from choice 0 everywhere, then
 * pick by value; a value absent from the space picks the nearest entity
 * (split: closest product of inner factors, knob: closest value). */
OB_API ob_config ob_space_first(const ob_space *s);
OB_API void ob_config_set_split(ob_config *c, const char *name, const int64_t *inner, int ninner);
OB_API void ob_config_set_knob(ob_config *c, const char *name, int64_t value);
OB_API void ob_config_set_reorder(ob_config *c, const char *name, const int *perm);
OB_API void ob_config_set_annotate(ob_config *c, const char *name, const ob_ann *anns);

/* JSON (AutoTVM entity form):
 *   {"index": 12, "entity": [["tile_oc","sp",[-1,16]], ["order","re",[0,2,1]],
 *                            ["ann","an",["unroll","vec"]], ["unroll_kw","ot",1]]}
 * to_json: *out malloc'd. from_json: "index" alone, or "entity" (which wins),
 * or the entity list alone (AutoTVM's [["knob","sp",[-1,8]], ...]);
 * an unknown knob, a value not in a knob's list, or a missing knob is
 * OB_ERR_OUT_OF_SPACE / OB_ERR_NOT_FOUND / OB_ERR_PARSE with the knob named. */
OB_API ob_status ob_config_to_json(ob_ctx *ctx, const ob_config *c, char **out);
OB_API ob_status ob_config_from_json(ob_ctx *ctx, const ob_space *s, const char *json,
                                     ob_config *out);
/* One line "tile_oc=[-1,16] unroll_kw=1 ..." into a malloc'd string (NULL: out of memory). */
OB_API char *ob_config_str(const ob_config *c);

#ifdef __cplusplus
}
#endif
#endif
