/* feature.h: the cost model's feature extraction, inside the tune module.
 * The public half (kinds, lengths, one-config extraction) is in tune.h;
 * here are the pieces xgb.c needs: extraction from an already lowered
 * function, and the per-task cache's lookups. The cache owns its rows;
 * callers get copies. */
#ifndef OB_TUNE_FEATURE_H
#define OB_TUNE_FEATURE_H

#include "opbench/lower.h"
#include "opbench/ops.h"
#include "opbench/tune.h"

/* Itervar and/or curve features of a lowered function (either out may be
 * NULL). Never fails: an empty function gives zeros. */
void ob_feature_of_lowered(const ob_lowered *f, float *itervar, float *curve);
/* Knob features of a config: each knob's entity values, split factors with
 * the outer one computed. */
void ob_feature_of_knobs(const ob_config *cfg, float *out);

/* The cache (ob_feat_cache_new, _free, _stats: tune.h). Whether c serves
 * a tuner of `task` that learns from the kinds in `kinds`: the same space,
 * every kind kept, and one of them lowered (a knob-only tuner recomputes
 * its knobs rather than look them up; a cache with lowered kinds would
 * lower each config for it). */
bool ob_feat_cache_serves(const ob_feat_cache *c, const struct ob_task *task, unsigned kinds);
/* Copies the features of `kind` (one of the cache's kinds) for cfg into
 * out[ob_feature_len(space, kind)]. A config that does not lower gets
 * zeros (it is also cached); the return says whether it lowered. Out of
 * memory growing the cache is sticky: out gets zeros, the return is false,
 * and ob_feat_cache_check says OB_ERR_NOMEM from then on. */
bool ob_feat_cache_get(ob_feat_cache *c, const ob_config *cfg, ob_feature_kind kind, float *out);
ob_status ob_feat_cache_check(const ob_feat_cache *c);

#endif
