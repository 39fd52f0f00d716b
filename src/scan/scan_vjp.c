/*
 * scan_vjp.c — reverse mode through scan: one VJP of the body, built once and
 * cut at its residuals; the forward scan keeps a store of snapshots and tapes,
 * the backward scan consumes it. Nothing is unrolled into the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "ad/ops_internal.h"
#include "ad/split.h"
#include "ad/vjp_impl.h"
#include "core/assert.h"
#include "core/error.h"
#include "scan/scan_impl.h"

static scan_body_vjp *body_vjp(remat_scan_data *d)
{
    if (d->vjp)
        return d->vjp;
    remat_fn *vj = NULL;
    remat_status st = remat_vjp(d->body, 0, NULL, &vj);
    REMAT_ASSERT(st == REMAT_OK); /* the body was checked when the scan was built */
    remat_vjp_split sp;
    remat_split_vjp(vj, d->body->n_args, d->body->n_outs, &sp);
    remat_fn_free(vj);
    scan_body_vjp *v = calloc(1, sizeof *v);
    REMAT_ASSERT(v);
    v->refcount = 1;
    v->fwd = sp.fwd;
    v->bwd = sp.bwd;
    v->n_res = sp.n_res;
    v->res_off = calloc((size_t)sp.n_res + 1, sizeof *v->res_off);
    v->res_arg = malloc(sizeof *v->res_arg * ((size_t)sp.n_res + 1));
    REMAT_ASSERT(v->res_off && v->res_arg);
    remat_fn *fw = sp.fwd;
    int n_outs = d->body->n_outs, kept = n_outs;
    for (int k = 0; k < sp.n_res; k++) {
        remat_val o = fw->outs[n_outs + k], a = o;
        while (fw->nodes[a].op == REMAT_OP_RESHAPE || remat_op_is_identity((remat_op)fw->nodes[a].op))
            a = fw->nodes[a].in[0];
        const remat_node *n = remat_fn_node(fw, o);
        v->res_arg[k] = -1;
        if (fw->nodes[a].op == REMAT_OP_ARG && fw->nodes[a].p.index >= d->n_carry) {
            v->res_arg[k] = (int)fw->nodes[a].p.index; /* read from xs / consts, not taped */
            continue;
        }
        fw->outs[kept++] = o;
        v->res_off[k] = v->tape_bytes;
        v->tape_bytes += remat_scan_align((size_t)remat_shape_numel(&n->shape) * remat_dtype_size((remat_dtype)n->dtype));
    }
    fw->n_outs = kept;
    d->vjp = v;
    return v;
}

/* Store layout for the schedule at this length. */
static void size_store(remat_scan_data *d)
{
    remat_schedule_cost cost;
    remat_schedule *s = NULL;
    REMAT_ASSERT(remat_schedule_predict(&d->sched, d->length, &cost) == REMAT_OK);
    REMAT_ASSERT(remat_schedule_new(&d->sched, d->length, &s) == REMAT_OK);
    d->max_slots = remat_schedule_max_slots(s);
    remat_schedule_free(s);
    d->peak_snapshots = cost.peak_snapshots;
    d->peak_tapes = cost.peak_tapes;
    d->store_bytes = (size_t)d->max_slots * d->carry_bytes + (size_t)d->peak_tapes * d->vjp->tape_bytes;
}

static remat_val proj(remat_fn *g, remat_val h, const remat_scan_data *d, int i, remat_loc loc)
{
    remat_dtype dt;
    remat_shape sh;
    remat_scan_output_desc(d, i, &dt, &sh);
    remat_node pr = remat_proto(REMAT_OP_PROJ, dt, &sh, loc);
    pr.p.index = i;
    return remat_fn_add_node(g, &pr, 1, &h);
}

static remat_val add_hop(remat_fn *g, remat_scan_data *d, int nin, const remat_val *ins)
{
    remat_shape scalar = {0};
    remat_node hop = remat_proto(REMAT_OP_HOP, d->out[0].dt, &scalar, d->loc);
    hop.p.hop.rules = &remat_scan_rules;
    hop.p.hop.data = d;
    hop.name = remat_fn_strdup(g, d->kind == SCAN_FWD ? "scan_fwd" : "scan_bwd");
    return remat_fn_add_node(g, &hop, nin, ins);
}

remat_val remat_scan_vjp_forward(remat_vjp_ctx *c, int32_t i, const remat_val *ins)
{
    const remat_flat_node *fn = &c->fl->nodes[i];
    const remat_node *n = remat_fn_node(fn->fn, fn->v);
    remat_scan_data *d = n->p.hop.data;
    body_vjp(d);
    remat_scan_data *e = remat_scan_data_derive(d, SCAN_FWD);
    size_store(e);
    return add_hop(c->g, e, n->nin, ins);
}

remat_status remat_scan_vjp_backward(remat_vjp_ctx *c, int32_t i, const remat_val *out_cts)
{
    const remat_flat_node *fn = &c->fl->nodes[i];
    const remat_node *n = remat_fn_node(fn->fn, fn->v);
    remat_scan_data *d = n->p.hop.data;
    remat_fn *g = c->g;
    remat_val fwd = remat_vjp_primal(c, i);
    const remat_node *fn_node = remat_fn_node(g, fwd);
    REMAT_ASSERT(fn_node->op == REMAT_OP_HOP);
    remat_scan_data *fd = fn_node->p.hop.data;
    REMAT_ASSERT(fd->kind == SCAN_FWD);

    int nc = d->n_carry, nx = d->n_xs, nk = d->n_consts, ny = d->n_ys;
    int nin = 1 + nx + nk + nc + ny;
    remat_val *ins = malloc(sizeof *ins * (size_t)nin);
    REMAT_ASSERT(ins);
    int p = 0;
    /* the store belongs to the forward node's side (it is the residual) */
    uint8_t flags = g->emit_flags;
    g->emit_flags = fn_node->flags;
    ins[p++] = proj(g, fwd, fd, nc + ny, d->loc);
    g->emit_flags = flags;
    for (int k = 0; k < nx + nk; k++)
        ins[p++] = remat_vjp_primal(c, fn->in[nc + k]);
    for (int k = 0; k < nc + ny; k++) {
        remat_val ct = out_cts ? out_cts[k] : REMAT_NONE;
        if (ct == REMAT_NONE) {
            remat_dtype dt;
            remat_shape sh;
            remat_scan_output_desc(d, k, &dt, &sh);
            ct = remat_const_fill_at(g, dt, sh.rank, sh.dims, 0.0, d->loc);
        }
        ins[p++] = ct;
    }
    remat_scan_data *bd = remat_scan_data_derive(fd, SCAN_BWD);
    remat_val h = add_hop(g, bd, nin, ins);
    free(ins);
    for (int k = 0; k < nc + nx + nk; k++)
        remat_vjp_add_ct(c, fn->in[k], proj(g, h, bd, k, d->loc));
    return g->status == REMAT_OK ? REMAT_OK
                                 : remat_error(REMAT_ERR_UNSUPPORTED, "scan vjp: internal build error: %s",
                                               remat_fn_error(g));
}
