/*
 * policy_impl.h (internal to src/ad) — what policy.c shares with the
 * offload policies and the policy parser (policy_offload.c) and with
 * reverse mode (vjp.c: the kind of each residual and where it goes).
 */
#ifndef REMAT_AD_POLICY_IMPL_H
#define REMAT_AD_POLICY_IMPL_H

#include "remat/ad.h"

/* The kind p (NULL: nothing_saveable) gives op; for OFFLOAD *dst (when
 * dst is not NULL) is the memory kind (JAX's offload_dst), else NULL. */
remat_policy_result rmi_policy_decide(const remat_policy *p, const remat_op_info *op, const char **dst);
/* A policy answering with a kind (remat_policy_new's ownership rules). */
remat_policy *rmi_policy_new_deciding(const char *label,
                                      remat_policy_result (*decide)(const remat_op_info *op, void *ctx,
                                                                    const char **dst),
                                      void *ctx, void (*free_ctx)(void *));
/* From now on p lives as long as the process (remat_policy_free ignores it). */
void rmi_policy_make_immortal(remat_policy *p);
/* remat_policy_named for "kind(args)": made once per distinct text. */
const remat_policy *rmi_policy_parse_call(const char *text);

#endif
