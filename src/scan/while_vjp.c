/*
 * while_vjp.c — reverse mode through a while-loop: one VJP of the wrapped
 * body (control carries and the flag behind stop_gradient), cut at its
 * residuals as for scan; the forward loop keeps a store, the backward loop
 * consumes it. Nothing is unrolled into the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "ad/hop_vjp.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "scan/loop_rt.h"
#include "scan/while_impl.h"

remat_status rmi_while_body_vjp(remat_while_data *d)
{
    if (d->vjp)
        return REMAT_OK;
    /* fwd's outputs: carry', accepted, then the taped residuals */
    return rmi_scan_body_vjp_new(d->body, d->n_carry, d->n_carry + 1, "while", &d->vjp);
}

/* The schedule for a memory budget: the fastest whose store fits at
 * max_steps iterations; online:S for binomial:S (the same store, and no
 * counting pass). */
remat_status rmi_while_budget_schedule(remat_while_data *e)
{
    remat_schedule_spec s;
    remat_status st = remat_schedule_for_budget(e->budget, e->max_steps, (int64_t)e->carry_bytes,
                                                (int64_t)e->vjp->tape_bytes, &s);
    if (st != REMAT_OK)
        return st;
    if (s.kind == REMAT_SCHED_BINOMIAL)
        s.kind = REMAT_SCHED_ONLINE;
    e->sched = s;
    return REMAT_OK;
}

remat_val rmi_while_vjp_forward(remat_hop_vjp *c, void *data, const remat_val *ins)
{
    remat_while_data *d = data;
    remat_fn *g = rmi_hop_vjp_fn(c);
    remat_status st = rmi_while_body_vjp(d);
    if (st != REMAT_OK)
        return rmi_fn_fail(g, st, d->loc, "%s: %s", d->label, remat_last_error());
    remat_while_data *e = rmi_while_data_derive(d, WHILE_FWD);
    if (!e)
        return rmi_fn_fail(g, REMAT_ERR_NOMEM, d->loc, "%s: out of memory", d->label);
    rmi_while_size_store(e);
    return rmi_hop_add(g, &rmi_while_rules, e, e->in[0].dt, "while_fwd", rmi_hop_vjp_num_inputs(c), ins,
                       d->loc);
}

remat_status rmi_while_vjp_backward(remat_hop_vjp *c, void *data, const remat_val *out_cts)
{
    remat_while_data *d = data;
    void *fdata = NULL;
    rmi_hop_vjp_forward(c, &fdata);
    remat_while_data *fd = fdata;
    if (!fd) /* out of memory recomputing the forward (recorded) */
        return REMAT_ERR_NOMEM;
    REMAT_ASSERT(fd->kind == WHILE_FWD);

    const int nc = d->n_carry, nd = d->n_diff, nk = d->n_consts;
    remat_while_data *bd = rmi_while_data_derive(fd, WHILE_BWD);
    /* (store, consts..., ct_diff...) -> (ct_init_diff..., ct_consts...): control
     * carries and n_iter have no cotangent */
    const loop_bwd_spec s = {.rules = &rmi_while_rules, .bwd_data = bd, .dt = bd ? bd->in[0].dt : REMAT_F64,
                             .name = "while_bwd", .what = d->label, .store_out = nc + 1, .in0 = nc, .n_in = nk,
                             .n_ct = nd, .n_a = nd, .n_b = nk, .b_in0 = nc, .out_desc = rmi_while_output_desc,
                             .data = d, .loc = d->loc};
    return rmi_loop_vjp_backward(c, out_cts, &s);
}
