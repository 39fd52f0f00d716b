/*
 * rosenbrock.c — one Rosenbrock step as graph ops, from a tableau.
 *
 * With W = I/(h gamma) - J (ode_impl.h has the stage formulas): J = df/dy at
 * (t, y) comes from forward mode, one JVP of the mechanism's right-hand side
 * per species with a one-hot tangent (remat_jvp, inlined S times), which is
 * remat_jacfwd's construction but keeps a batch (..., S): the one-hot tangent
 * is broadcast over the batch, so column j of every batch element's Jacobian
 * comes out of one JVP, and J is (..., S, S). A mechanism that reads t also
 * gets df/dt from one JVP w.r.t. t. The first JVP's primal output is f(t, y),
 * the first stage's evaluation. Gas mechanisms (remat/gas.h) take
 * remat_gas_jacobian's closed form for one state, else one batched JVP.
 * Each stage's k_i is one call of the IR's linear-solve primitive with the same W value (which it factors once for
 * all eight stages); the whole step is graph ops, so reverse
 * mode through it differentiates the Jacobian (second derivatives of the
 * rates) and the solves (solves with W^T) like any other op.
 *
 * Stage inputs that are the previous one plus the previous k (Rodas5's
 * u7 = u6 + k6, u8 = u7 + k7 and y' = u8 + k8) are formed as one add.
 * The stages k_i are handed out on request: the continuous extension
 * (dense.c) is a combination of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/ode/ode_impl.h"
#include "remat/ad.h"
#include "remat/gas.h"

/* k = W^{-1} r: W (..., S, S), r (..., S) */
static remat_val solve(remat_fn *f, remat_val W, remat_val r) { return remat_linear_solve(f, W, r); }

/* row (n entries) == prev row (n - 1 entries) followed by 1 */
static int extends(const double *row, const double *prev, int n)
{
    if (n < 1 || row[n - 1] != 1.0)
        return 0;
    for (int j = 0; j < n - 1; j++)
        if (row[j] != prev[j])
            return 0;
    return 1;
}

/* rhs(y, [t], [params]) -> f(t, y), y shaped like the step's y, params like
 * the step's params (ps; NULL: none) */
static remat_status rhs_fn(const ode_rhs *r, remat_dtype dt, const remat_shape *ys, int timed,
                           const remat_shape *ps, remat_fn **out)
{
    remat_fn *g = *out = remat_fn_new("rosenbrock_rhs");
    if (!g)
        return rmi_error(REMAT_ERR_NOMEM, "ode step (rosenbrock): out of memory");
    remat_val y = remat_arg(g, "y", dt, ys->rank, ys->dims);
    remat_val t = timed ? remat_arg(g, "t", dt, 0, NULL) : REMAT_NONE;
    remat_val p = ps ? remat_arg(g, "params", dt, ps->rank, ps->dims) : REMAT_NONE;
    remat_val dydt;
    remat_status st = ode_rhs_eval(g, r, t, y, p, &dydt);
    if (st != REMAT_OK)
        return st;
    remat_fn_output(g, dydt);
    if (remat_fn_status(g) != REMAT_OK)
        return rmi_error(remat_fn_status(g), "ode step (rosenbrock): %s", remat_fn_error(g));
    return REMAT_OK;
}

/* a one-hot (S,) constant e_j broadcast to y's shape */
static remat_val one_hot(remat_fn *f, remat_dtype dt, const remat_shape *ys, int64_t j)
{
    int64_t S = ys->dims[ys->rank - 1];
    remat_val e = remat_pad(f, remat_const_fill(f, dt, 1, (int64_t[]){1}, 1.0), (int64_t[]){j},
                            (int64_t[]){S - 1 - j}, NULL);
    return ys->rank == 1 ? e : remat_broadcast_to(f, e, ys->rank, ys->dims);
}

/* Gas mechanisms (remat/gas.h), whose right-hand side is vector ops over
 * reactions: J from one JVP of the RHS on a batch of S copies of y with
 * the identity as tangents, so the S columns share every op (one gemm
 * instead of S matrix-vector products); out[..., j, :] = J e_j. */
static remat_status jacobian_batched(remat_fn *f, const remat_mechanism *m, remat_val y, remat_val params,
                                     remat_val *J, remat_val *f0)
{
    remat_dtype dt = remat_val_dtype(f, y);
    remat_shape ys = remat_val_shape(f, y), bs = ys;
    int64_t S = ys.dims[ys.rank - 1];
    bs.dims[bs.rank] = S; /* (..., S, S): copy j of y at [..., j, :] */
    bs.dims[bs.rank - 1] = S;
    bs.rank++;
    int bdims[REMAT_MAX_RANK];
    for (int i = 0; i + 1 < ys.rank; i++)
        bdims[i] = i;
    bdims[ys.rank - 1] = bs.rank - 1;
    remat_shape ps = params != REMAT_NONE ? remat_val_shape(f, params) : (remat_shape){0};
    remat_fn *g = NULL, *jy = NULL;
    ode_rhs r = ode_rhs_of(m);
    remat_status st = rhs_fn(&r, dt, &bs, 0, params != REMAT_NONE ? &ps : NULL, &g);
    if (st == REMAT_OK)
        st = remat_jvp(g, 1, (int[]){0}, &jy);
    if (st == REMAT_OK) {
        double *id = rmi_calloc((size_t)(S * S), sizeof *id);
        if (!id) {
            st = rmi_error(REMAT_ERR_NOMEM, "ode step (rosenbrock): out of memory");
        } else {
            for (int64_t i = 0; i < S; i++)
                id[i * S + i] = 1.0;
            remat_val eye = remat_const_data(f, dt, 2, (int64_t[]){S, S}, id);
            rmi_free(id);
            remat_val args[3] = {remat_broadcast_in_dim(f, y, bs.rank, bs.dims, bdims)}, outs[2];
            int na = 1;
            if (params != REMAT_NONE)
                args[na++] = params;
            args[na++] = ys.rank == 1 ? eye : remat_broadcast_to(f, eye, bs.rank, bs.dims);
            if ((st = remat_call(f, jy, na, args, outs)) == REMAT_OK) {
                int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
                memcpy(limit, bs.dims, sizeof limit);
                limit[bs.rank - 2] = 1;
                *f0 = remat_reshape(f, remat_slice(f, outs[0], start, limit, NULL), ys.rank, ys.dims);
                int perm[REMAT_MAX_RANK];
                for (int i = 0; i < bs.rank; i++)
                    perm[i] = i;
                perm[bs.rank - 2] = bs.rank - 1;
                perm[bs.rank - 1] = bs.rank - 2;
                *J = remat_transpose(f, outs[1], perm);
            }
        }
    }
    remat_fn_free(g);
    remat_fn_free(jy);
    return st;
}

/* J (..., S, S) with J[..., i, j] = df_i/dy_j, f(t, y) and, when timed, df/dt */
static remat_status jacobian(remat_fn *f, const ode_rhs *r, remat_val t, remat_val y, remat_val params,
                             remat_val *J, remat_val *f0, remat_val *dfdt)
{
    remat_dtype dt = remat_val_dtype(f, y);
    remat_shape ys = remat_val_shape(f, y);
    int timed = t != REMAT_NONE;
    int64_t S = ys.dims[ys.rank - 1];
    if (!r->eval && !timed && remat_gas_species_count(r->m) > 0 && ys.rank < REMAT_MAX_RANK &&
        (params == REMAT_NONE || remat_val_shape(f, params).rank == 1)) { /* one parameter set */
        /* one state: the closed-form Jacobian where the mechanism has one */
        if (ys.rank == 1 && params != REMAT_NONE) {
            remat_status gs = remat_gas_jacobian(f, r->m, y, params, J, f0);
            if (gs != REMAT_ERR_UNSUPPORTED)
                return gs;
            remat_clear_error(); /* no closed form (PLOG, orders): not an error, the JVPs below serve */
        }
        return jacobian_batched(f, r->m, y, params, J, f0);
    }
    remat_shape ps = params != REMAT_NONE ? remat_val_shape(f, params) : (remat_shape){0};
    remat_fn *g = NULL, *jy = NULL, *jt = NULL;
    remat_val *cols = rmi_malloc(sizeof *cols * (size_t)S);
    remat_status st = cols ? rhs_fn(r, dt, &ys, timed, params != REMAT_NONE ? &ps : NULL, &g)
                           : rmi_error(REMAT_ERR_NOMEM, "ode step (rosenbrock): out of memory");
    if (st == REMAT_OK)
        st = remat_jvp(g, 1, (int[]){0}, &jy);
    if (st == REMAT_OK && timed)
        st = remat_jvp(g, 1, (int[]){1}, &jt);
    if (st != REMAT_OK)
        goto done;
    remat_val args[4] = {y}, outs[2];
    int na = 1;
    if (timed)
        args[na++] = t;
    if (params != REMAT_NONE)
        args[na++] = params;
    remat_shape cs = ys; /* (..., S, 1) */
    cs.dims[cs.rank++] = 1;
    for (int64_t j = 0; j < S; j++) {
        args[na] = one_hot(f, dt, &ys, j);
        if ((st = remat_call(f, jy, na + 1, args, outs)) != REMAT_OK)
            goto done;
        if (j == 0)
            *f0 = outs[0];
        cols[j] = remat_reshape(f, outs[1], cs.rank, cs.dims);
    }
    *J = S == 1 ? cols[0] : remat_concatenate(f, (int)S, cols, cs.rank - 1);
    if (timed) {
        args[na] = remat_scalar(f, dt, 1.0);
        if ((st = remat_call(f, jt, na + 1, args, outs)) != REMAT_OK)
            goto done;
        *dfdt = outs[1];
    }
done:
    remat_fn_free(g);
    remat_fn_free(jy);
    remat_fn_free(jt);
    rmi_free(cols);
    return st;
}

/* I/(h gamma) - J; REMAT_NONE when out of memory */
static remat_val w_matrix(remat_fn *f, remat_val J, remat_val h, double gamma, int64_t S)
{
    remat_dtype dt = remat_val_dtype(f, J);
    size_t n = (size_t)(S * S), es = dt == REMAT_F64 ? sizeof(double) : sizeof(float);
    unsigned char *id = rmi_calloc(n, es);
    if (!id)
        return REMAT_NONE;
    for (int64_t i = 0; i < S; i++) {
        if (dt == REMAT_F64)
            ((double *)id)[i * S + i] = 1.0;
        else
            ((float *)id)[i * S + i] = 1.0f;
    }
    remat_val eye = remat_const_data(f, dt, 2, (int64_t[]){S, S}, id);
    rmi_free(id);
    remat_val inv = remat_div(f, remat_scalar(f, dt, 1.0), remat_mul_scalar(f, h, gamma));
    return remat_sub(f, remat_mul(f, eye, inv), J);
}

remat_status rmi_ode_rosenbrock_step(remat_fn *f, const ode_rhs *rhs, const ode_tableau *tb, remat_val t,
                                     remat_val h, remat_val y, remat_val params, remat_val *y_next,
                                     remat_val *err, remat_val *k_out)
{
    const ode_rosenbrock *rb = tb->ros;
    REMAT_ASSERT(rb && tb->stages <= ODE_MAX_STAGES);
    remat_shape ys = y >= 0 && y < remat_fn_num_nodes(f) ? remat_val_shape(f, y) : (remat_shape){.rank = 0};
    if (ys.rank < 1)
        return rmi_error(REMAT_ERR_SHAPE, "ode step (%s): y must be a value of function '%s' of shape (..., S)",
                         tb->name, remat_fn_name(f));
    if (params != REMAT_NONE && (params < 0 || params >= remat_fn_num_nodes(f)))
        return rmi_error(REMAT_ERR_SHAPE, "ode step (%s): params must be a (P,) or (..., P) value of function '%s'",
                         tb->name, remat_fn_name(f));
    int64_t S = ys.dims[ys.rank - 1];
    remat_val J = REMAT_NONE, f0 = REMAT_NONE, dfdt = REMAT_NONE;
    /* t is the mechanism's to read: a mechanism that does not read it has no df/dt */
    remat_val tt = rhs->timed ? t : REMAT_NONE;
    if (tt == REMAT_NONE && rhs->timed)
        return rmi_error(REMAT_ERR_ARG, "ode step (%s): the mechanism reads its independent variable but t is "
                         "absent", tb->name);
    remat_status st = jacobian(f, rhs, tt, y, params, &J, &f0, &dfdt);
    if (st != REMAT_OK)
        return st;
    remat_val W = w_matrix(f, J, h, rb->gamma, S);
    if (W == REMAT_NONE && remat_fn_status(f) == REMAT_OK)
        return rmi_error(REMAT_ERR_NOMEM, "ode step (%s): out of memory", tb->name);
    remat_val inv_h = remat_div(f, remat_scalar(f, remat_val_dtype(f, y), 1.0), h);
    remat_val k[ODE_MAX_STAGES], u = y;
    for (int i = 0; i < tb->stages; i++) {
        const double *ai = rb->a + i * (i - 1) / 2;
        if (i > 1 && extends(ai, rb->a + (i - 1) * (i - 2) / 2, i)) {
            u = remat_add(f, u, k[i - 1]);
        } else if (i > 0) {
            remat_val incr = ode_combine(f, i, ai, k);
            u = incr == REMAT_NONE ? y : remat_add(f, y, incr);
        }
        remat_val fi = f0;
        if (i > 0) {
            remat_val ti = tt;
            if (tt != REMAT_NONE && rb->c[i] != 0.0)
                ti = remat_add(f, tt, rb->c[i] == 1.0 ? h : remat_mul_scalar(f, h, rb->c[i]));
            if ((st = ode_rhs_eval(f, rhs, ti, u, params, &fi)) != REMAT_OK)
                return st;
        }
        remat_val r = fi;
        if (dfdt != REMAT_NONE && rb->d[i] != 0.0)
            r = remat_add(f, r, remat_mul(f, remat_mul_scalar(f, h, rb->d[i]), dfdt));
        remat_val ck = i ? ode_combine(f, i, rb->C + i * (i - 1) / 2, k) : REMAT_NONE;
        if (ck != REMAT_NONE)
            r = remat_add(f, r, remat_mul(f, inv_h, ck));
        k[i] = solve(f, W, r);
    }
    const double *last = rb->a + (tb->stages - 1) * (tb->stages - 2) / 2;
    remat_val out = extends(rb->b, last, tb->stages) ? remat_add(f, u, k[tb->stages - 1])
                                                     : remat_add(f, y, ode_combine(f, tb->stages, rb->b, k));
    remat_val est = err ? ode_combine(f, tb->stages, rb->e, k) : REMAT_NONE;
    if (remat_fn_status(f) != REMAT_OK)
        return rmi_error(remat_fn_status(f), "ode step (%s): %s", tb->name, remat_fn_error(f));
    *y_next = out;
    if (err)
        *err = est;
    for (int i = 0; k_out && i < tb->stages; i++)
        k_out[i] = k[i];
    return REMAT_OK;
}
