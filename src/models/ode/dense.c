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

remat_val ode_dense_update(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K, remat_val out,
                           remat_val ts, remat_val t, remat_val t_next, remat_val y, remat_val y1, remat_val h,
                           const remat_val *k)
{
    remat_val mask = remat_mul(f, remat_gt(f, ts, t), remat_le(f, ts, t_next));
    return ode_dense_update_masked(f, tb, dt, S, K, out, ts, t, mask, y, y1, h, k);
}

remat_val ode_dense_update_masked(remat_fn *f, const ode_tableau *tb, remat_dtype dt, int64_t S, int64_t K,
                                  remat_val out, remat_val ts, remat_val t, remat_val mask, remat_val y, remat_val y1,
                                  remat_val h, const remat_val *k)
{
    remat_val P[4];
    const ode_rosenbrock *rb = tb->ros && tb->ros->n_dense > 0 ? tb->ros : NULL;
    if (rb) {
        REMAT_ASSERT(rb->n_dense <= ODE_MAX_DENSE);
        for (int r = 0; r < rb->n_dense; r++)
            P[r] = ode_combine(f, tb->stages, rb->H + r * tb->stages, k);
    } else if (tb->dense) {
        double w[ODE_MAX_STAGES + 1];
        for (int j = 0; j < 4; j++) {
            for (int i = 0; i <= tb->stages; i++)
                w[i] = tb->dense[i * 4 + j];
            P[j] = ode_combine(f, tb->stages + 1, w, k);
        }
    } else {
        hermite(f, k[0], k[1], remat_sub(f, y1, y), P);
    }
    /* theta per row, clamped to [0, 1] so that a row outside the step (its
     * cotangent 0) never meets an overflowing power in the reverse pass */
    remat_val zero = remat_scalar(f, dt, 0.0), one = remat_scalar(f, dt, 1.0);
    remat_val hs = remat_select(f, remat_gt(f, h, zero), h, one);
    remat_val th = remat_div(f, remat_sub(f, ts, t), hs);
    th = remat_min(f, remat_max(f, th, zero), one);
    /* species by species, y_s + theta (P0_s + theta (P1_s + ...)) in
     * Horner's form: (K,) vectors times scalars, elementwise with no
     * broadcast copies and no matrix product (BLAS would want its buffers);
     * the rows are kept species-major, (S, K) */
    int64_t oneK[2] = {1, K};
    remat_val *rows = rmi_calloc((size_t)S, sizeof *rows);
    if (!rows)
        return REMAT_NONE; /* out of memory: the caller reports it (f's status may be fine) */
    remat_val om = rb ? remat_sub(f, one, th) : REMAT_NONE; /* 1 - theta */
    for (int64_t s = 0; s < S; s++) {
        if (rb) { /* (1 - theta) y_s + theta (y'_s + (1 - theta) (d_1 + theta (d_2 + ...))) */
            remat_val v = remat_index(f, P[rb->n_dense - 1], s);
            for (int r = rb->n_dense - 2; r >= 0; r--)
                v = remat_add(f, remat_mul(f, v, th), remat_index(f, P[r], s));
            v = remat_add(f, remat_mul(f, om, v), remat_index(f, y1, s));
            v = remat_add(f, remat_mul(f, om, remat_index(f, y, s)), remat_mul(f, th, v));
            rows[s] = remat_reshape(f, v, 2, oneK);
            continue;
        }
        remat_val v = REMAT_NONE;
        for (int j = 3; j >= 0; j--) {
            if (v != REMAT_NONE)
                v = remat_mul(f, v, th);
            if (P[j] != REMAT_NONE) {
                remat_val c = remat_index(f, P[j], s);
                v = v == REMAT_NONE ? c : remat_add(f, v, c);
            }
        }
        v = remat_add(f, remat_mul(f, th, v), remat_index(f, y, s));
        rows[s] = remat_reshape(f, v, 2, oneK);
    }
    remat_val interp = S == 1 ? rows[0] : remat_concatenate(f, (int)S, rows, 0);
    rmi_free(rows);
    remat_val m2 = remat_reshape(f, mask, 2, oneK);
    return remat_select(f, m2, interp, out);
}
