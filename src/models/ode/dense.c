/*
 * dense.c — output times as data of the adaptive loop: after each attempt
 * from t to t + h, the rows of the output buffer whose time lies in
 * (t, t + h] take the step's continuous extension at theta = (t_k - t)/h.
 *
 * The extension of an explicit method is y + sum_{j=1..4} theta^j P_j with
 * P_j = sum_i C_ij k_i over the stages k_i = h f_i (the FSAL stage
 * h f(t + h, y') last):
 *   tsit5   Tsitouras' own 4th-order interpolant (tsit5.c's dense table),
 *   dopri5  Hairer's DOPRI5 dense output (order 4, dopri5.c's table);
 * a Rosenbrock method's is (1 - theta) y + theta (y' + (1 - theta)
 * (d_1 + theta (d_2 + theta d_3))) with d_r = sum_i H_ri k_i over its
 * stages (ode_impl.h), y and y' exactly at theta 0 and 1:
 *   rodas5  its own order-4 extension (rodas5.c's H), no right-hand side;
 * methods without one (euler, rk4, on fixed_dense.c's grid) take the cubic
 * Hermite interpolant of y, y', h f(t, y), h f(t + h, y') (order 3).
 * The buffer is a differentiated carry, so reverse mode runs through the
 * interpolant: the gradient of a row is that of the polynomial in theta
 * (theta, its powers and the row mask are control values, computed from t
 * and h, which carry no derivative). Every row costs O(S) per attempt (a
 * Horner evaluation per species and a select), and a rejected attempt's
 * rows are kept by the loop as its y is. The buffer is species-major,
 * (S, K): each species' rows are one contiguous vector.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "models/ode/ode_impl.h"

/* the cubic Hermite weights of (k0 = h f0, k1 = h f1, d = y' - y) */
static void hermite(remat_fn *f, remat_val k0, remat_val k1, remat_val d, remat_val *P)
{
    P[0] = k0;
    P[1] = remat_sub(f, remat_sub(f, remat_mul_scalar(f, d, 3.0), remat_mul_scalar(f, k0, 2.0)), k1);
    P[2] = remat_add(f, remat_add(f, remat_mul_scalar(f, d, -2.0), k0), k1);
    P[3] = REMAT_NONE;
}

/* the extension's value from the coefficients c (P's entries, REMAT_NONE
 * where absent), y and y1 at theta th (om = 1 - theta, Rosenbrock only),
 * all of matching shapes or scalars:
 *   Rosenbrock  (1 - theta) y + theta (y1 + (1 - theta) (c_0 + theta (c_1 + ...))),
 *   otherwise   y + theta (c_0 + theta (c_1 + theta (c_2 + theta c_3))) */
static remat_val extension_at(remat_fn *f, const ode_rosenbrock *rb, const remat_val *c, remat_val y, remat_val y1,
                              remat_val th, remat_val om)
{
    if (rb) {
        remat_val v = c[rb->n_dense - 1];
        for (int r = rb->n_dense - 2; r >= 0; r--)
            v = remat_add(f, remat_mul(f, v, th), c[r]);
        v = remat_add(f, remat_mul(f, om, v), y1);
        return remat_add(f, remat_mul(f, om, y), remat_mul(f, th, v));
    }
    remat_val v = REMAT_NONE;
    for (int j = ODE_DENSE_TERMS - 1; j >= 0; j--) {
        if (v != REMAT_NONE)
            v = remat_mul(f, v, th);
        if (c[j] != REMAT_NONE)
            v = v == REMAT_NONE ? c[j] : remat_add(f, v, c[j]);
    }
    return remat_add(f, remat_mul(f, th, v), y);
}

remat_val ode_dense_update(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K, remat_val out,
                           remat_val ts, remat_val t, remat_val t_next, remat_val y, remat_val y1, remat_val h,
                           const remat_val *k)
{
    remat_val mask = remat_mul(f, remat_gt(f, ts, t), remat_le(f, ts, t_next));
    return ode_dense_update_masked(f, tb, dt, S, K, out, ts, t, mask, y, y1, h, k);
}

int ode_dense_coeffs(remat_fn *f, const ode_tableau *tb, remat_val y, remat_val y1, const remat_val *k, remat_val *P)
{
    const ode_rosenbrock *rb = tb->ros && tb->ros->n_dense > 0 ? tb->ros : NULL;
    if (rb) {
        REMAT_ASSERT(rb->n_dense <= ODE_MAX_DENSE);
        for (int r = 0; r < rb->n_dense; r++)
            P[r] = ode_combine(f, tb->stages, rb->H + r * tb->stages, k);
        return rb->n_dense;
    }
    if (tb->dense) {
        double w[ODE_MAX_STAGES + 1];
        for (int j = 0; j < 4; j++) {
            for (int i = 0; i <= tb->stages; i++)
                w[i] = tb->dense[i * 4 + j];
            P[j] = ode_combine(f, tb->stages + 1, w, k);
        }
        return 4;
    }
    hermite(f, k[0], k[1], remat_sub(f, y1, y), P);
    return 3;
}

remat_val ode_dense_update_masked(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K,
                                  remat_val out, remat_val ts, remat_val t, remat_val mask, remat_val y, remat_val y1,
                                  remat_val h, const remat_val *k)
{
    remat_val P[ODE_DENSE_TERMS];
    ode_dense_coeffs(f, tb, y, y1, k, P);
    return ode_dense_eval_masked(f, tb, dt, S, K, out, ts, t, mask, y, y1, h, P);
}

remat_val ode_dense_eval_masked(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K,
                                remat_val out, remat_val ts, remat_val t, remat_val mask, remat_val y, remat_val y1,
                                remat_val h, const remat_val *P)
{
    const ode_rosenbrock *rb = tb->ros && tb->ros->n_dense > 0 ? tb->ros : NULL;
    /* theta per row, clamped to [0, 1] so that a row outside the step (its
     * cotangent 0) never meets an overflowing power in the reverse pass */
    remat_val zero = remat_scalar(f, dt, 0.0), one = remat_scalar(f, dt, 1.0);
    remat_val hs = remat_select(f, remat_gt(f, h, zero), h, one);
    remat_val th = remat_div(f, remat_sub(f, ts, t), hs);
    th = remat_min(f, remat_max(f, th, zero), one);
    /* species by species, y_s + theta (P0_s + theta (P1_s + ...)) in
     * Horner's form: (K,) vectors times scalars, elementwise with no
     * broadcast copies and no matrix product (BLAS would want its buffers);
     * the rows are kept species-major, (S, K). One row (rows.c's grid) is
     * the same elementwise ops on (S,) vectors times theta as a scalar. */
    int64_t oneK[2] = {1, K}, S1[2] = {S, 1};
    remat_val om = rb ? remat_sub(f, one, th) : REMAT_NONE; /* 1 - theta */
    remat_val interp;
    if (K == 1) {
        remat_val th0 = remat_reshape(f, th, 0, NULL), om0 = rb ? remat_reshape(f, om, 0, NULL) : REMAT_NONE;
        interp = remat_reshape(f, extension_at(f, rb, P, y, y1, th0, om0), 2, S1);
    } else {
        remat_val *rows = rmi_calloc((size_t)S, sizeof *rows);
        if (!rows)
            return REMAT_NONE; /* out of memory: the caller reports it (f's status may be fine) */
        for (int64_t s = 0; s < S; s++) {
            remat_val c[ODE_DENSE_TERMS];
            for (int j = 0; j < ODE_DENSE_TERMS; j++)
                c[j] = j < (rb ? rb->n_dense : ODE_DENSE_TERMS) && P[j] != REMAT_NONE ? remat_index(f, P[j], s)
                                                                                      : REMAT_NONE;
            remat_val v = extension_at(f, rb, c, remat_index(f, y, s), remat_index(f, y1, s), th, om);
            rows[s] = remat_reshape(f, v, 2, oneK);
        }
        interp = S == 1 ? rows[0] : remat_concatenate(f, (int)S, rows, 0);
        rmi_free(rows);
    }
    remat_val m2 = remat_reshape(f, mask, 2, oneK);
    return remat_select(f, m2, interp, out);
}
