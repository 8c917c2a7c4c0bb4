/* predict_impl.h: what the files of the predict module share. */
#ifndef OB_PREDICT_IMPL_H
#define OB_PREDICT_IMPL_H

#include "opbench/predict.h"

typedef struct ensemble ensemble;

struct ob_predictor {
  ob_ctx *ctx;
  int n;
  ensemble *e; /* named sections: "op:<kind>", "corun" */
};

ensemble *ob_predict_find(const ob_predictor *p, const char *name);
/* Trains (or retrains) section `name` on n rows x (nfeat each) with labels
 * y (log space); group[i] picks the fold a row is left out of. */
ob_status ob_predict_train_ensemble(ob_ctx *ctx, ob_predictor *p, const char *name, const float *x,
                                    const float *y, const uint64_t *group, int64_t n, int nfeat,
                                    const ob_predict_train_opts *o);
/* Mean and standard deviation (members and out-of-fold error) in log space. */
ob_status ob_predict_ensemble_eval(ob_ctx *ctx, const ensemble *e, const float *x, int64_t n,
                                   double *mean, double *sd);

#endif
