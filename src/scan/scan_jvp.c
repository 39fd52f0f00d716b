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
#include "scan/loop_rt.h"

typedef struct {
    int nc, nx, nk, ny; /* carries, xs, consts, ys of the primal */
    int ntx, ntk;       /* xs and consts with a tangent */
    int *tx, *tk;       /* their indices among the xs / consts */
} jvp_layout;

/* W(carry..., t_carry..., x..., t_x..., k..., t_k...) ->
 *   (carry'..., t_carry'..., y..., t_y...): the body's JVP in scan order. */
static remat_fn *jvp_body(const remat_fn *body, const jvp_layout *L, remat_status *st)
{
    const int nw = L->nc + L->ntx + L->ntk, nin = L->nc + L->nx + L->nk + nw, nout = 2 * (L->nc + L->ny);
    int *wrt = rmi_malloc(sizeof *wrt * (size_t)(nw + 1));
    loop_slot *in = rmi_malloc(sizeof *in * (size_t)(nin + 1)), *out = rmi_malloc(sizeof *out * (size_t)(nout + 1));
    remat_fn *w = NULL;
    *st = REMAT_ERR_NOMEM;
    if (wrt && in && out) {
        int p = 0, q = 0;
        for (int i = 0; i < L->nc; i++)
            wrt[i] = i;
        for (int i = 0; i < L->ntx; i++)
            wrt[L->nc + i] = L->nc + L->tx[i];
        for (int i = 0; i < L->ntk; i++)
            wrt[L->nc + L->ntx + i] = L->nc + L->nx + L->tk[i];
        /* group by group (carries, xs, consts): primal then tangent */
        const int group[3][2] = {{0, L->nc}, {L->nc, L->nx}, {L->nc + L->nx, L->nk}};
        const int tstart[3] = {0, L->nc, L->nc + L->ntx}, tcount[3] = {L->nc, L->ntx, L->ntk};
        for (int g = 0; g < 3; g++) {
            for (int i = 0; i < group[g][1]; i++)
                in[p++] = (loop_slot){group[g][0] + i, false};
            for (int i = 0; i < tcount[g]; i++)
                in[p++] = (loop_slot){tstart[g] + i, true};
        }
        for (int g = 0; g < 2; g++) /* carry', t_carry', y, t_y */
            for (int t = 0; t < 2; t++)
                for (int i = 0; i < (g ? L->ny : L->nc); i++)
                    out[q++] = (loop_slot){(g ? L->nc : 0) + i, t == 1};
        w = rmi_loop_jvp_fn(body, true, "jvp", nw, wrt, in, p, out, q, st);
    }
    if (w && remat_fn_status(w) != REMAT_OK) {
        *st = remat_fn_status(w);
        remat_fn_free(w);
        w = NULL;
    }
    rmi_free(wrt);
    rmi_free(in);
    rmi_free(out);
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
    remat_scan_options opt = {.reverse = d->reverse, .schedule = d->sched, .unroll = d->unroll};
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
