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
#include "scan/loop_rt.h"
#include "scan/while_impl.h"

typedef struct {
    int nc, nd, nk, ntk; /* carries, differentiated ones, consts, consts with a tangent */
    int *tk;             /* their indices among the consts */
} jvp_layout;

/* cond' (jvp false: cond itself) or body' over the new loop's arguments
 * (d..., t_d..., c..., k..., t_k...); body' -> (d'..., t_d'..., c'...,
 * accepted) from jvp(body) */
static remat_fn *jvp_fn(const remat_fn *f, bool jvp, const jvp_layout *L, remat_status *st)
{
    const int nw = L->nd + L->ntk, nin = L->nc + L->nk + nw, nout = L->nc + L->nd + 1;
    int *wrt = rmi_malloc(sizeof *wrt * (size_t)(nw + 1));
    loop_slot *in = rmi_malloc(sizeof *in * (size_t)(nin + 1)), *out = rmi_malloc(sizeof *out * (size_t)(nout + 1));
    remat_fn *w = NULL;
    *st = REMAT_ERR_NOMEM;
    if (wrt && in && out) {
        int p = 0, q = 0;
        for (int i = 0; i < L->nd; i++)
            wrt[i] = i;
        for (int i = 0; i < L->ntk; i++)
            wrt[L->nd + i] = L->nc + L->tk[i];
        for (int i = 0; i < L->nd; i++)
            in[p++] = (loop_slot){i, false};
        for (int i = 0; i < L->nd; i++)
            in[p++] = (loop_slot){i, true};
        for (int i = L->nd; i < L->nc + L->nk; i++)
            in[p++] = (loop_slot){i, false};
        for (int i = 0; i < L->ntk; i++)
            in[p++] = (loop_slot){L->nd + i, true};
        if (!jvp) /* the cond's flag */
            out[q++] = (loop_slot){0, false};
        for (int i = 0; jvp && i < L->nd; i++)
            out[q++] = (loop_slot){i, false};
        for (int i = 0; jvp && i < L->nd; i++)
            out[q++] = (loop_slot){i, true};
        for (int i = L->nd; jvp && i <= L->nc; i++)
            out[q++] = (loop_slot){i, false};
        w = rmi_loop_jvp_fn(f, jvp, jvp ? "jvp" : "jvp_cond", nw, wrt, in, p, out, q, st);
    }
    rmi_free(wrt);
    rmi_free(in);
    rmi_free(out);
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
    remat_val *v = rmi_malloc(sizeof *v * (size_t)(2 * nb + 1)), *co = rmi_malloc(sizeof *co * (size_t)(ncn + 1));
    remat_fn *wc = NULL, *wb = NULL;
    remat_status st = REMAT_ERR_NOMEM;
    if (!L.tk || !v || !co)
        goto done;
    for (int i = 0; i < L.nk; i++)
        if (tans[L.nc + i] != REMAT_NONE)
            L.tk[L.ntk++] = i;
    remat_status cst;
    wc = jvp_fn(d->cond, false, &L, &cst);
    wb = jvp_fn(d->body, true, &L, &st);
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
    rmi_free(v);
    rmi_free(co);
    return st;
}
