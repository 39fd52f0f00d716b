/*
 * remat/kinetics.h — a reaction mechanism's right-hand side as graph ops.
 *
 * remat_kinetics_rhs() lowers the expression DAG of a parsed mechanism
 * (remat/mechanism.h) into ops of a remat_fn: dy/dt = f(t, y, params). The
 * DAG is walked once: a node shared by several species (a reaction's net
 * rate) becomes one value, and each let is computed once. The result is an
 * ordinary part of the graph, so it is differentiated, checkpointed and
 * compiled like any other op — nothing is interpreted per call.
 *
 *   remat_mechanism *m;
 *   remat_mechanism_parse_string("A -> B : k1\nB -> C : k2\n"
 *                                "param k1 = 1.0\nparam k2 = 0.5", NULL, &m);
 *   remat_fn *f = remat_fn_new("rhs");
 *   remat_val t = remat_arg(f, "t", REMAT_F64, 0, NULL);
 *   remat_val y = remat_arg(f, "y", REMAT_F64, 1, ((int64_t[]){3}));
 *   remat_val p = remat_arg(f, "k", REMAT_F64, 1, ((int64_t[]){2}));
 *   remat_val dydt;
 *   if (remat_kinetics_rhs(f, m, t, y, p, &dydt) != REMAT_OK)
 *       puts(remat_last_error());
 *   remat_fn_output(f, dydt);  // f64[3]: {-k1 A, k1 A - k2 B, k2 B}
 *
 * Shapes: t is a scalar; y is (S,) or batched (..., S) with the species on
 * the last axis; params is (P,), shared by the batch, or batched with y's
 * batch axes, (..., P), one parameter set per batch entry (an ensemble:
 * remat_pfr_ensemble); dydt has y's shape and dtype. Species are read with
 * slices, and dy/dt is one concatenation of S per-species values along the
 * last axis.
 *
 * Semantics match remat_mechanism_eval_rhs() (the double reference) up to
 * rounding, with these choices:
 *   - x^e with e a constant (a number, a const, or an expression of those)
 *     becomes integer_pow for integer e in [-64, 64] and pow otherwise, so
 *     mass-action orders are exact products as in JAX's x**2;
 *   - x^e with a non-constant exponent becomes exp(e * log(x)), defined for
 *     x > 0 (a negative base with a variable exponent has no real derivative);
 *   - min/max propagate NaN (lax.min/max) where the reference uses fmin/fmax,
 *     and split the derivative 0.5/0.5 at ties, as JAX does.
 */
#ifndef REMAT_KINETICS_H
#define REMAT_KINETICS_H

#include "export.h"
#include "graph.h"
#include "mechanism.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Emits dy/dt = f(t, y, params) into f and writes it to *dydt.
 * t may be REMAT_NONE when the mechanism never reads its independent
 * variable; params may be REMAT_NONE when it has no parameters. On error
 * (a NULL argument, a shape or dtype that does not fit the mechanism, the
 * independent variable read but t absent) returns the status with a message
 * naming the input, and *dydt = REMAT_NONE. */
REMAT_API remat_status remat_kinetics_rhs(remat_fn *f, const remat_mechanism *m, remat_val t, remat_val y,
                                          remat_val params, remat_val *dydt);

/* Whether any right-hand side (or a let it reads) refers to the independent
 * variable: a model that does not may pass t = REMAT_NONE. NULL: 0. */
REMAT_API int remat_kinetics_uses_indep(const remat_mechanism *m);

/* A function rhs(t: (), y: (S,), params: (P,)) -> dydt: (S,) in dtype dt.
 * NULL on error (message in remat_last_error()). Free with remat_fn_free. */
REMAT_API remat_fn *remat_kinetics_rhs_fn(const remat_mechanism *m, remat_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
