/*
 * split.h (internal) — cutting a reverse-mode function at its residuals.
 *
 * remat_vjp() builds forward and backward in one graph. A loop that stores
 * step "tapes" needs them apart: fwd(primal args) -> (primal outputs,
 * residuals...) and bwd(residuals..., cotangents...) -> (argument
 * cotangents...). The residuals are exactly those of the residual report.
 */
#ifndef REMAT_AD_SPLIT_H
#define REMAT_AD_SPLIT_H

#include "ad/graph_impl.h"

typedef struct {
    remat_fn *fwd;
    remat_fn *bwd;
    int n_res;
} remat_vjp_split;

/* vjp_fn must come from remat_vjp(f, 0, NULL, ...) of an f with n_args
 * arguments and n_outs outputs. */
remat_status remat_split_vjp(const remat_fn *vjp_fn, int n_args, int n_outs, remat_vjp_split *out);

#endif
