/*
 * scan_jvp.c — forward mode of a scan: an ordinary scan over the JVP of the
 * body, the tangents carried along with the carries (no schedule, no store:
 * forward mode keeps nothing for later). The new loop is a scan like any
 * other, so it is compiled to lane loops when its body allows.
 *
 * Every carry gets a tangent (a zero where its init has none): a carry can
 * pick one up from a const or an x_t after the first step, and finding which
 * cannot would need a fixed point over the body; xs and consts get one only
 * where the caller's tangent is not a symbolic zero.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "scan/scan_impl.h"

typedef struct {
    int nc, nx, nk, ny; /* carries, xs, consts, ys of the primal */
    int ntx, ntk;       /* xs and consts with a tangent */
    int *tx, *tk;       /* their indices among the xs / consts */
} jvp_layout;

/* W(carry..., t_carry..., x..., t_x..., k..., t_k...) ->
 *   (carry'..., t_carry'..., y..., t_y...): the body's JVP in scan order. */
static remat_fn *jvp_body(const remat_fn *body, const jvp_layout *L, remat_status *st)
{
    int nb = L->nc + L->nx + L->nk, nw = L->nc + L->ntx + L->ntk;
    int *wrt = rmi_malloc(sizeof *wrt * (size_t)(nw + 1));
    remat_val *jin = rmi_malloc(sizeof *jin * (size_t)(nb + nw + 1));
    remat_val *jout = rmi_malloc(sizeof *jout * (size_t)(2 * (L->nc + L->ny) + 1));
    remat_fn *j = NULL, *w = NULL;
    char name[300];
    *st = REMAT_ERR_NOMEM;
    if (!wrt || !jin || !jout)
        goto done;
    for (int i = 0; i < L->nc; i++)
        wrt[i] = i;
    for (int i = 0; i < L->ntx; i++)
        wrt[L->nc + i] = L->nc + L->tx[i];
    for (int i = 0; i < L->ntk; i++)
        wrt[L->nc + L->ntx + i] = L->nc + L->nx + L->tk[i];
    if ((*st = remat_jvp(body, nw, wrt, &j)) != REMAT_OK) /* e.g. an op without a JVP rule, named */
        goto done;
    *st = REMAT_ERR_NOMEM;
    snprintf(name, sizeof name, "jvp(%s)", remat_fn_name(body));
    if (!(w = remat_fn_new(name)))
        goto done;
    /* W's arguments group by group: primal then tangent; jin in jvp(body)'s order */
    int groups[3][2] = {{0, L->nc}, {L->nc, L->nx}, {L->nc + L->nx, L->nk}};
    int tstart[3] = {0, L->nc, L->nc + L->ntx}, tcount[3] = {L->nc, L->ntx, L->ntk};
    for (int g = 0; g < 3; g++) {
        for (int i = 0; i < groups[g][1]; i++) {
            int a = groups[g][0] + i;
            const remat_node *n = rmi_fn_node(body, remat_fn_arg(body, a));
            jin[a] = remat_arg_at(w, n->name, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, n->loc);
        }
        for (int i = 0; i < tcount[g]; i++) {
            int a = wrt[tstart[g] + i];
            const remat_node *n = rmi_fn_node(body, remat_fn_arg(body, a));
            char tn[128];
            snprintf(tn, sizeof tn, "t_%s", n->name ? n->name : "arg");
            jin[nb + tstart[g] + i] = remat_arg_at(w, tn, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, n->loc);
        }
    }
    if (remat_call(w, j, nb + nw, jin, jout) != REMAT_OK)
        goto done;
    int no = L->nc + L->ny;
    for (int i = 0; i < L->nc; i++)
        remat_fn_output(w, jout[i]);
    for (int i = 0; i < L->nc; i++)
        remat_fn_output(w, jout[no + i]);
    for (int i = 0; i < L->ny; i++)
        remat_fn_output(w, jout[L->nc + i]);
    for (int i = 0; i < L->ny; i++)
        remat_fn_output(w, jout[no + L->nc + i]);
    *st = REMAT_OK;
done:
    if (w && remat_fn_status(w) != REMAT_OK) {
        *st = remat_fn_status(w);
        remat_fn_free(w);
        w = NULL;
    }
    remat_fn_free(j);
    rmi_free(wrt);
    rmi_free(jin);
    rmi_free(jout);
    return w;
}

remat_status rmi_scan_jvp(remat_fn *g, void *data, const remat_val *ins, const remat_val *tans, remat_val *outs,
                          remat_loc loc)
{
    const remat_scan_data *d = data;
    if (d->kind != SCAN_PRIMAL) /* the forward/backward forms come from reverse mode */
        return rmi_error(REMAT_ERR_UNSUPPORTED,
                         "%s:%d: forward mode over the reverse pass of a scan (forward-over-reverse through a "
                         "loop) is not supported",
                         loc.file, loc.line);
    jvp_layout L = {.nc = d->n_carry, .nx = d->n_xs, .nk = d->n_consts, .ny = d->n_ys};
    int nin = L.nc + L.nx + L.nk;
    L.tx = rmi_malloc(sizeof *L.tx * (size_t)(L.nx + 1));
    L.tk = rmi_malloc(sizeof *L.tk * (size_t)(L.nk + 1));
    remat_val *v = rmi_malloc(sizeof *v * (size_t)(2 * nin + 1));
    remat_val *co = rmi_malloc(sizeof *co * (size_t)(2 * L.nc + 1));
    remat_val *ys = rmi_malloc(sizeof *ys * (size_t)(2 * L.ny + 1));
    remat_fn *w = NULL;
    remat_status st = REMAT_ERR_NOMEM;
    if (!L.tx || !L.tk || !v || !co || !ys)
        goto done;
    for (int i = 0; i < L.nx; i++)
        if (tans[L.nc + i] != REMAT_NONE)
            L.tx[L.ntx++] = i;
    for (int i = 0; i < L.nk; i++)
        if (tans[L.nc + L.nx + i] != REMAT_NONE)
            L.tk[L.ntk++] = i;
    if (!(w = jvp_body(d->body, &L, &st)))
        goto done;
    /* the scan's operands: carries, their tangents; xs, theirs; consts, theirs */
    remat_val *init = v, *xs = v + 2 * L.nc, *ks = xs + L.nx + L.ntx;
    for (int i = 0; i < L.nc; i++) {
        init[i] = ins[i];
        init[L.nc + i] = tans[i] != REMAT_NONE ? tans[i]
                                               : remat_const_fill_at(g, d->in[i].dt, d->in[i].shape.rank,
                                                                     d->in[i].shape.dims, 0.0, loc);
    }
    for (int i = 0; i < L.nx; i++)
        xs[i] = ins[L.nc + i];
    for (int i = 0; i < L.ntx; i++)
        xs[L.nx + i] = tans[L.nc + L.tx[i]];
    for (int i = 0; i < L.nk; i++)
        ks[i] = ins[L.nc + L.nx + i];
    for (int i = 0; i < L.ntk; i++)
        ks[L.nk + i] = tans[L.nc + L.nx + L.tk[i]];
    remat_scan_options opt = {.reverse = d->reverse, .schedule = d->sched};
    st = remat_scan_at(g, w, d->length, 2 * L.nc, init, L.nx + L.ntx, xs, L.nk + L.ntk, ks, &opt, co, ys, loc);
    if (st == REMAT_OK) {
        int no = L.nc + L.ny;
        for (int i = 0; i < L.nc; i++) {
            outs[i] = co[i];
            outs[no + i] = co[L.nc + i];
        }
        for (int i = 0; i < L.ny; i++) {
            outs[L.nc + i] = ys[i];
            outs[no + L.nc + i] = ys[L.ny + i];
        }
    }
done:
    if (st == REMAT_ERR_NOMEM)
        st = rmi_error(REMAT_ERR_NOMEM, "%s:%d: out of memory in the forward mode of a scan", loc.file, loc.line);
    remat_fn_free(w);
    rmi_free(L.tx);
    rmi_free(L.tk);
    rmi_free(v);
    rmi_free(co);
    rmi_free(ys);
    return st;
}
