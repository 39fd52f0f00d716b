/*
 * scan_vjp.c — reverse mode through scan: one VJP of the body, built once and
 * cut at its residuals; the forward scan keeps a store of snapshots and tapes,
 * the backward scan consumes it. Nothing is unrolled into the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "ad/hop_vjp.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "scan/loop_rt.h"
#include "scan/loop_slow.h"

remat_status rmi_scan_body_vjp_new(const remat_fn *body, int n_carry, int first_res, const char *what,
                                   scan_body_vjp **out)
{
    remat_hop_body_vjp hv;
    remat_status st = rmi_hop_body_vjp_build(body, n_carry, &hv);
    if (st != REMAT_OK)
        return st;
    scan_body_vjp *v = rmi_calloc(1, sizeof *v);
    size_t *res_off = rmi_calloc((size_t)hv.n_res + 1, sizeof *res_off);
    if (!v || !res_off) {
        rmi_free(v);
        rmi_free(res_off);
        rmi_hop_body_vjp_clear(&hv);
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory differentiating body '%s'", what, remat_fn_name(body));
    }
    *v = (scan_body_vjp){.refcount = 1, .fwd = hv.fwd, .bwd = hv.bwd, .n_res = hv.n_res, .res_arg = hv.res_arg,
                         .res_off = res_off};
    for (int k = 0, t = first_res; k < hv.n_res; k++) {
        if (v->res_arg[k] >= 0)
            continue;
        const remat_node *n = rmi_fn_node(v->fwd, remat_fn_out(v->fwd, t++));
        v->res_off[k] = v->tape_bytes;
        v->tape_bytes += rmi_scan_align((size_t)remat_shape_numel(&n->shape) * remat_dtype_size((remat_dtype)n->dtype));
    }
    *out = v;
    return REMAT_OK;
}

/* The body's cut VJP with its tape layout, in d->vjp (remat_last_error()
 * says why when it fails). */
static remat_status body_vjp(remat_scan_data *d)
{
    if (d->vjp)
        return REMAT_OK;
    return rmi_scan_body_vjp_new(d->body, d->n_carry, remat_fn_num_outputs(d->body), "scan", &d->vjp);
}

/* Store layout for the schedule at this length. The spec was checked when
 * the scan was built, so a failure here is the schedule's state not fitting
 * in memory (REMAT_ERR_NOMEM, message set by the schedule). */
static remat_status size_store(remat_scan_data *d)
{
    remat_schedule_cost cost;
    remat_schedule *s = NULL;
    remat_status st = remat_schedule_predict(&d->sched, d->length, &cost);
    if (st == REMAT_OK)
        st = remat_schedule_new(&d->sched, d->length, &s);
    if (st != REMAT_OK)
        return st;
    d->max_slots = remat_schedule_max_slots(s);
    remat_schedule_free(s);
    d->ram_slots = d->max_slots, d->slow_extent = 0;
    if (d->sched.kind == REMAT_SCHED_TWO_TIER) { /* the slow slots a run writes: the file's extent */
        d->ram_slots = d->sched.snapshots < d->max_slots ? d->sched.snapshots : d->max_slots;
        st = rmi_loop_slow_extent(&d->sched, d->length, &d->slow_extent);
        if (st != REMAT_OK)
            return st;
    }
    d->peak_snapshots = cost.peak_snapshots;
    d->peak_tapes = cost.peak_tapes;
    /* a slow tier's handle (file descriptor, or host memory on a device) and extent written travel from the
     * forward node to the backward in the store's last 16 bytes */
    d->store_bytes = (size_t)d->ram_slots * d->carry_bytes + (size_t)d->peak_tapes * d->vjp->tape_bytes +
                     (d->slow_extent > 0 ? 16 : 0);
    return REMAT_OK;
}

remat_val rmi_scan_vjp_forward(remat_hop_vjp *c, void *data, const remat_val *ins)
{
    remat_scan_data *d = data;
    remat_fn *g = rmi_hop_vjp_fn(c);
    remat_status st = body_vjp(d);
    if (st != REMAT_OK)
        return rmi_fn_fail(g, st, d->loc, "scan: %s", remat_last_error());
    remat_scan_data *e = rmi_scan_data_derive(d, SCAN_FWD);
    if (!e)
        return rmi_fn_fail(g, REMAT_ERR_NOMEM, d->loc, "scan: out of memory");
    st = size_store(e);
    if (st != REMAT_OK) {
        rmi_scan_data_release(e);
        return rmi_fn_fail(g, st, d->loc, "scan: %s", remat_last_error());
    }
    return rmi_hop_add(g, &rmi_scan_rules, e, e->out[0].dt, "scan_fwd", rmi_hop_vjp_num_inputs(c), ins, d->loc);
}

remat_status rmi_scan_vjp_backward(remat_hop_vjp *c, void *data, const remat_val *out_cts)
{
    remat_scan_data *d = data;
    void *fdata = NULL;
    rmi_hop_vjp_forward(c, &fdata);
    remat_scan_data *fd = fdata;
    if (!fd) /* out of memory recomputing the forward (recorded) */
        return REMAT_ERR_NOMEM;
    REMAT_ASSERT(fd->kind == SCAN_FWD);

    const int nc = d->n_carry, nx = d->n_xs, nk = d->n_consts, ny = d->n_ys;
    remat_scan_data *bd = rmi_scan_data_derive(fd, SCAN_BWD);
    /* (store, xs..., consts..., ct_carry..., ct_ys...) -> (ct_init..., ct_xs..., ct_consts...) */
    const loop_bwd_spec s = {.rules = &rmi_scan_rules, .bwd_data = bd, .dt = bd ? bd->out[0].dt : REMAT_F64,
                             .name = "scan_bwd", .what = "scan vjp", .store_out = nc + ny, .in0 = nc, .n_in = nx + nk,
                             .n_ct = nc + ny, .n_a = nc + nx + nk, .out_desc = rmi_scan_output_desc, .data = d,
                             .loc = d->loc};
    return rmi_loop_vjp_backward(c, out_cts, &s);
}
