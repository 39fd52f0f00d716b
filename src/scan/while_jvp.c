/*
 * while_jvp.c — forward mode of a while-loop: a while-loop over the body's
 * JVP, each differentiated carry followed by its tangent (both kept on a
 * rejected iteration: the tangents are differentiated carries of the new
 * loop), the control carries after them with no tangent (stop_gradient),
 * the consts' tangents after the consts. Same cond, max_steps and
 * schedule, so a reverse pass over it (reverse over forward) works too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "scan/while_impl.h"

typedef struct {
    int nc, nd, nk, ntk; /* carries, differentiated ones, consts, consts with a tangent */
    int *tk;             /* their indices among the consts */
} jvp_layout;

static remat_val arg_like(remat_fn *w, const remat_fn *src, int a, const char *prefix)
{
    const remat_node *n = rmi_fn_node(src, remat_fn_arg(src, a));
    char name[128];
    snprintf(name, sizeof name, "%s%s", prefix, n->name ? n->name : "arg");
    return remat_arg_at(w, name, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, n->loc);
}

/* The new loop's arguments (d..., t_d..., c..., k..., t_k...) into w, as
 * the old body's arguments a[0 .. nc+nk) and the tangents t[0 .. nd+ntk). */
static void new_args(remat_fn *w, const remat_fn *src, const jvp_layout *L, remat_val *a, remat_val *t)
{
    for (int i = 0; i < L->nd; i++)
        a[i] = arg_like(w, src, i, "");
    for (int i = 0; i < L->nd; i++)
        t[i] = arg_like(w, src, i, "t_");
    for (int i = L->nd; i < L->nc + L->nk; i++)
        a[i] = arg_like(w, src, i, "");
    for (int i = 0; i < L->ntk; i++)
        t[L->nd + i] = arg_like(w, src, L->nc + L->tk[i], "t_");
}

/* cond'(new args) = cond(d, c, k) */
static remat_fn *jvp_cond(const remat_fn *cond, const jvp_layout *L, remat_val *a, remat_val *t)
{
    char name[300];
    snprintf(name, sizeof name, "jvp_cond(%s)", remat_fn_name(cond));
    remat_fn *w = remat_fn_new(name);
    if (!w)
        return NULL;
    new_args(w, cond, L, a, t);
    remat_val o;
    if (remat_call(w, cond, L->nc + L->nk, a, &o) == REMAT_OK)
        remat_fn_output(w, o);
    return w;
}

/* body'(new args) -> (d'..., t_d'..., c'..., accepted) from jvp(body) */
static remat_fn *jvp_body(const remat_fn *body, const jvp_layout *L, remat_val *a, remat_val *t, remat_status *st)
{
    const int nb = L->nc + L->nk, nw = L->nd + L->ntk, no = L->nc + 1;
    int *wrt = rmi_malloc(sizeof *wrt * (size_t)(nw + 1));
    remat_val *jin = rmi_malloc(sizeof *jin * (size_t)(nb + nw + 1));
    remat_val *jout = rmi_malloc(sizeof *jout * (size_t)(2 * no + 1));
    remat_fn *j = NULL, *w = NULL;
    char name[300];
    *st = REMAT_ERR_NOMEM;
    if (!wrt || !jin || !jout)
        goto done;
    for (int i = 0; i < L->nd; i++)
        wrt[i] = i;
    for (int i = 0; i < L->ntk; i++)
        wrt[L->nd + i] = L->nc + L->tk[i];
    if ((*st = remat_jvp(body, nw, wrt, &j)) != REMAT_OK) /* e.g. an op without a JVP rule, named */
        goto done;
    *st = REMAT_ERR_NOMEM;
    snprintf(name, sizeof name, "jvp(%s)", remat_fn_name(body));
    if (!(w = remat_fn_new(name)))
        goto done;
    new_args(w, body, L, a, t);
    memcpy(jin, a, sizeof *jin * (size_t)nb);
    memcpy(jin + nb, t, sizeof *jin * (size_t)nw);
    if (remat_call(w, j, nb + nw, jin, jout) != REMAT_OK)
        goto done;
    for (int i = 0; i < L->nd; i++)
        remat_fn_output(w, jout[i]);
    for (int i = 0; i < L->nd; i++)
        remat_fn_output(w, jout[no + i]);
    for (int i = L->nd; i <= L->nc; i++)
        remat_fn_output(w, jout[i]);
    *st = REMAT_OK;
done:
    remat_fn_free(j);
    rmi_free(wrt);
    rmi_free(jin);
    rmi_free(jout);
    return w;
}

remat_status rmi_while_jvp(remat_fn *g, void *data, const remat_val *ins, const remat_val *tans, remat_val *outs,
                           remat_loc loc)
{
    const remat_while_data *d = data;
    if (d->kind != WHILE_PRIMAL)
        return rmi_error(REMAT_ERR_UNSUPPORTED,
                         "%s:%d: forward mode over the reverse pass of %s (forward-over-reverse through a loop) "
                         "is not supported",
                         loc.file, loc.line, d->label);
    jvp_layout L = {.nc = d->n_carry, .nd = d->n_diff, .nk = d->n_consts};
    const int nb = L.nc + L.nk, ncn = L.nc + L.nd;
    L.tk = rmi_malloc(sizeof *L.tk * (size_t)(L.nk + 1));
    remat_val *a = rmi_malloc(sizeof *a * (size_t)(nb + 1)), *t = rmi_malloc(sizeof *t * (size_t)(nb + 1));
    remat_val *v = rmi_malloc(sizeof *v * (size_t)(2 * nb + 1)), *co = rmi_malloc(sizeof *co * (size_t)(ncn + 1));
    remat_fn *wc = NULL, *wb = NULL;
    remat_status st = REMAT_ERR_NOMEM;
    if (!L.tk || !a || !t || !v || !co)
        goto done;
    for (int i = 0; i < L.nk; i++)
        if (tans[L.nc + i] != REMAT_NONE)
            L.tk[L.ntk++] = i;
    wc = jvp_cond(d->cond, &L, a, t);
    wb = jvp_body(d->body, &L, a, t, &st);
    if (wc && !wb && st != REMAT_ERR_NOMEM) /* the body's JVP failed with its own message */
        goto done;
    if (!wc || !wb || remat_fn_status(wc) != REMAT_OK || remat_fn_status(wb) != REMAT_OK) {
        const remat_fn *bad = wc && remat_fn_status(wc) != REMAT_OK ? wc : wb;
        st = bad && remat_fn_status(bad) != REMAT_OK ? remat_fn_status(bad) : REMAT_ERR_NOMEM;
        if (st != REMAT_ERR_NOMEM)
            st = rmi_error(st, "%s: forward mode of the body: %s", d->label, remat_fn_error(bad));
        goto done;
    }
    /* operands: d..., t_d..., c..., k..., t_k... */
    int p = 0;
    for (int i = 0; i < L.nd; i++)
        v[p++] = ins[i];
    for (int i = 0; i < L.nd; i++)
        v[p++] = tans[i] != REMAT_NONE ? tans[i]
                                       : remat_const_fill_at(g, d->in[i].dt, d->in[i].shape.rank,
                                                             d->in[i].shape.dims, 0.0, loc);
    for (int i = L.nd; i < nb; i++)
        v[p++] = ins[i];
    for (int i = 0; i < L.ntk; i++)
        v[p++] = tans[L.nc + L.tk[i]];
    const remat_while_options opt = {.max_steps = d->max_steps, .schedule = &d->sched};
    remat_val n_iter;
    st = remat_while_at(g, wc, wb, ncn, 2 * L.nd, v, L.nk + L.ntk, v + ncn, &opt, co, &n_iter, loc);
    if (st == REMAT_OK) {
        const int no = L.nc + 1;
        for (int i = 0; i < L.nd; i++) {
            outs[i] = co[i];
            outs[no + i] = co[L.nd + i];
        }
        for (int i = L.nd; i < L.nc; i++) {
            outs[i] = co[L.nd + i];
            outs[no + i] = REMAT_NONE;
        }
        outs[L.nc] = n_iter;
        outs[no + L.nc] = REMAT_NONE;
    }
done:
    if (st == REMAT_ERR_NOMEM)
        st = rmi_error(REMAT_ERR_NOMEM, "%s:%d: out of memory in the forward mode of %s", loc.file, loc.line,
                       d->label);
    remat_fn_free(wc);
    remat_fn_free(wb);
    rmi_free(L.tk);
    rmi_free(a);
    rmi_free(t);
    rmi_free(v);
    rmi_free(co);
    return st;
}
