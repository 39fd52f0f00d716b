/*
 * jacfwd.c — what is built from forward mode: Jacobians column by column
 * (jax.jacfwd) and forward-over-reverse Hessian-vector products (jvp of
 * grad, as the JAX autodiff cookbook's hvp).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad/graph_impl.h"
#include "core/alloc.h"
#include "core/error.h"

/* f's arguments, re-declared in h */
static void copy_args(remat_fn *h, const remat_fn *f, remat_val *args)
{
    for (int i = 0; i < f->n_args; i++) {
        const remat_node *a = rmi_fn_node(f, f->args[i]);
        args[i] = remat_arg_at(h, a->name, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, a->loc);
    }
}

/* One-hot tangent e of an argument shaped like a (f32 or f64). */
static remat_val basis(remat_fn *h, const remat_node *a, int64_t e, void *buf)
{
    int64_t n = remat_shape_numel(&a->shape);
    size_t es = a->dtype == REMAT_F64 ? sizeof(double) : sizeof(float);
    memset(buf, 0, es * (size_t)n);
    if (a->dtype == REMAT_F64)
        ((double *)buf)[e] = 1.0;
    else
        ((float *)buf)[e] = 1.0f;
    return remat_const_data_at(h, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, buf, a->loc);
}

/* d out_k / d arg: the columns J e_i of every output, stacked on a new last
 * axis, reshaped to out.shape ++ arg.shape. cols[k * n + i] is column i of
 * output k. */
static void emit_jacobians(remat_fn *h, const remat_fn *f, const remat_node *a, int64_t n, remat_val *cols,
                           remat_val *jac)
{
    for (int k = 0; k < f->n_outs; k++) {
        const remat_node *o = rmi_fn_node(f, f->outs[k]);
        remat_shape js = o->shape;
        for (int d = 0; d < a->shape.rank; d++)
            js.dims[js.rank++] = a->shape.dims[d];
        if (n == 0) {
            jac[k] = remat_const_fill_at(h, (remat_dtype)o->dtype, js.rank, js.dims, 0.0, o->loc);
            continue;
        }
        int64_t col[REMAT_MAX_RANK];
        memcpy(col, o->shape.dims, sizeof col);
        col[o->shape.rank] = 1;
        for (int64_t i = 0; i < n; i++)
            cols[k * n + i] = remat_reshape_at(h, cols[k * n + i], o->shape.rank + 1, col, o->loc);
        remat_val stacked = remat_concatenate_at(h, (int)n, cols + k * n, o->shape.rank, o->loc);
        jac[k] = remat_reshape_at(h, stacked, js.rank, js.dims, o->loc);
    }
}

/* The Jacobians of every output w.r.t. argument j, into jac[0..n_outs). */
static remat_status jac_of_arg(remat_fn *h, const remat_fn *f, const remat_val *args, int j, remat_val *jac)
{
    const remat_node *a = rmi_fn_node(f, f->args[j]);
    for (int k = 0; k < f->n_outs; k++)
        if (rmi_fn_node(f, f->outs[k])->shape.rank + a->shape.rank > REMAT_MAX_RANK)
            return rmi_error(REMAT_ERR_SHAPE, "jacfwd of '%s': output %d's Jacobian w.r.t. argument %d ('%s') has rank %d, above %d",
                             f->name, k, j, a->name, rmi_fn_node(f, f->outs[k])->shape.rank + a->shape.rank,
                             REMAT_MAX_RANK);
    remat_fn *jf = NULL;
    remat_status st = remat_jvp(f, 1, &j, &jf);
    if (st != REMAT_OK)
        return st;
    int64_t n = remat_shape_numel(&a->shape);
    int no = f->n_outs;
    remat_val *ins = rmi_malloc(sizeof *ins * (size_t)(f->n_args + 1));
    remat_val *outs = rmi_malloc(sizeof *outs * (size_t)(2 * no));
    remat_val *cols = rmi_malloc(sizeof *cols * (size_t)(no * (n ? n : 1)));
    void *buf = rmi_malloc(sizeof(double) * (size_t)(n ? n : 1));
    st = REMAT_ERR_NOMEM;
    if (!ins || !outs || !cols || !buf)
        goto done;
    memcpy(ins, args, sizeof *ins * (size_t)f->n_args);
    for (int64_t i = 0; i < n; i++) { /* column i: J e_i */
        ins[f->n_args] = basis(h, a, i, buf);
        if ((st = remat_call_at(h, jf, f->n_args + 1, ins, outs, a->loc)) != REMAT_OK)
            goto done;
        for (int k = 0; k < no; k++)
            cols[k * n + i] = outs[no + k];
    }
    emit_jacobians(h, f, a, n, cols, jac);
    st = h->status;
done:
    remat_fn_free(jf);
    rmi_free(ins);
    rmi_free(outs);
    rmi_free(cols);
    rmi_free(buf);
    return st;
}

remat_status remat_jacfwd(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "jacfwd: output pointer is NULL");
    remat_fn *probe = NULL; /* the argument checks are remat_jvp's */
    remat_status st = remat_jvp(f, n_argnums, argnums, &probe);
    remat_fn_free(probe);
    if (st != REMAT_OK)
        return st;
    *out = NULL;
    int n_wrt = n_argnums ? n_argnums : f->n_args;
    char name[300];
    snprintf(name, sizeof name, "jacfwd(%s)", f->name);
    remat_fn *h = remat_fn_new(name);
    remat_val *args = rmi_malloc(sizeof *args * (size_t)(f->n_args ? f->n_args : 1));
    remat_val *jac = rmi_malloc(sizeof *jac * (size_t)(n_wrt * f->n_outs > 0 ? n_wrt * f->n_outs : 1));
    st = REMAT_ERR_NOMEM;
    if (!h || !args || !jac)
        goto done;
    copy_args(h, f, args);
    for (int j = 0; j < n_wrt; j++)
        if ((st = jac_of_arg(h, f, args, n_argnums ? argnums[j] : j, jac + (size_t)j * f->n_outs)) != REMAT_OK)
            goto done;
    for (int k = 0; k < f->n_outs; k++)
        for (int j = 0; j < n_wrt; j++)
            remat_fn_output_at(h, jac[(size_t)j * f->n_outs + k], rmi_fn_node(f, f->outs[k])->loc);
    st = h->status;
done:
    if (st == REMAT_ERR_NOMEM)
        st = rmi_error(REMAT_ERR_NOMEM, "jacfwd of '%s': out of memory", f->name);
    if (st == REMAT_OK)
        *out = h;
    else
        remat_fn_free(h);
    rmi_free(args);
    rmi_free(jac);
    return st;
}

/* Reverse over forward: H v = grad_x <grad f(x), v> = grad_x (J_f(x) v), the
 * gradient of jvp(f)'s tangent output w.r.t. the argnums, as a function of
 * (x..., v...). For f whose reverse-mode form has no forward mode (a scan's
 * taping forward and its backward), while jvp(f) is an ordinary scan that
 * reverse mode takes. */
static remat_status hvp_reverse_over_forward(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    remat_fn *jf = NULL, *s = NULL;
    int n_wrt = n_argnums ? n_argnums : f->n_args;
    remat_val *ins = rmi_malloc(sizeof *ins * (size_t)(f->n_args + n_wrt + 1));
    remat_val *outs = rmi_malloc(sizeof *outs * 2);
    int *wrt = rmi_malloc(sizeof *wrt * (size_t)(n_wrt + 1));
    remat_status st = ins && outs && wrt ? remat_jvp(f, n_argnums, argnums, &jf) : REMAT_ERR_NOMEM;
    if (st != REMAT_OK)
        goto done;
    char name[300];
    snprintf(name, sizeof name, "hvp(%s)", f->name);
    st = REMAT_ERR_NOMEM;
    if (!(s = remat_fn_new(name)))
        goto done;
    for (int i = 0; i < jf->n_args; i++) {
        const remat_node *a = rmi_fn_node(jf, jf->args[i]);
        ins[i] = remat_arg_at(s, a->name, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, a->loc);
    }
    if ((st = remat_call_at(s, jf, jf->n_args, ins, outs, rmi_fn_node(f, f->outs[0])->loc)) != REMAT_OK)
        goto done;
    remat_fn_output_at(s, outs[1], rmi_fn_node(f, f->outs[0])->loc); /* J v, a scalar */
    for (int k = 0; k < n_wrt; k++) /* argnums index x in s's (x..., v...) too; "all" is f's args, not the vs */
        wrt[k] = n_argnums ? argnums[k] : k;
    if ((st = s->status) == REMAT_OK)
        st = remat_grad(s, n_wrt, wrt, out);
done:
    remat_fn_free(s);
    remat_fn_free(jf);
    rmi_free(ins);
    rmi_free(outs);
    rmi_free(wrt);
    return st;
}

remat_status remat_hvp(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    if (out)
        *out = NULL;
    remat_fn *gr = NULL, *jg = NULL, *h = NULL;
    remat_val *ins = NULL, *outs = NULL;
    remat_status st = remat_grad(f, n_argnums, argnums, &gr); /* checks f and argnums */
    if (st != REMAT_OK)
        return st;
    if ((st = remat_jvp(gr, n_argnums, argnums, &jg)) == REMAT_ERR_UNSUPPORTED) {
        remat_fn_free(gr);
        return hvp_reverse_over_forward(f, n_argnums, argnums, out);
    }
    if (st != REMAT_OK)
        goto done;
    int n_wrt = n_argnums ? n_argnums : f->n_args;
    char name[300];
    snprintf(name, sizeof name, "hvp(%s)", f->name);
    h = remat_fn_new(name);
    ins = rmi_malloc(sizeof *ins * (size_t)(f->n_args + n_wrt + 1));
    outs = rmi_malloc(sizeof *outs * (size_t)(2 * n_wrt + 1));
    st = REMAT_ERR_NOMEM;
    if (!h || !ins || !outs)
        goto done;
    copy_args(h, f, ins);
    for (int k = 0; k < n_wrt; k++) {
        const remat_node *a = rmi_fn_node(f, f->args[n_argnums ? argnums[k] : k]);
        char vn[128];
        snprintf(vn, sizeof vn, "v_%s", a->name ? a->name : "arg");
        ins[f->n_args + k] = remat_arg_at(h, vn, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, a->loc);
    }
    if ((st = remat_call_at(h, jg, f->n_args + n_wrt, ins, outs, rmi_fn_node(f, f->outs[0])->loc)) != REMAT_OK)
        goto done;
    for (int k = 0; k < n_wrt; k++) /* the tangents of the gradient: H v */
        remat_fn_output_at(h, outs[n_wrt + k], rmi_fn_node(f, f->outs[0])->loc);
    st = h->status;
done:
    if (st == REMAT_ERR_NOMEM)
        st = rmi_error(REMAT_ERR_NOMEM, "hvp of '%s': out of memory", f->name);
    if (st == REMAT_OK)
        *out = h;
    else
        remat_fn_free(h);
    remat_fn_free(jg);
    remat_fn_free(gr);
    rmi_free(ins);
    rmi_free(outs);
    return st;
}
