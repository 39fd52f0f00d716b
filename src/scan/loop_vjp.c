/*
 * loop_vjp.c — the backward half of every loop node's VJP rule (loop_rt.h):
 * the backward node reads the forward node's store, the primal inputs it
 * needs and the cotangents of the outputs it differentiates (zeros where
 * none flows), and gives the cotangents of the primal inputs. A scan and a
 * while loop differ only in which inputs and outputs those are.
 */
#include "ad/hop_vjp.h"
#include "core/alloc.h"
#include "core/error.h"
#include "scan/loop_rt.h"

remat_status rmi_loop_vjp_backward(remat_hop_vjp *c, const remat_val *out_cts, const loop_bwd_spec *s)
{
    remat_fn *g = rmi_hop_vjp_fn(c);
    const int nin = 1 + s->n_in + s->n_ct;
    remat_val *ins = rmi_malloc(sizeof *ins * (size_t)nin);
    if (!ins) { /* the derived data is ours until rmi_hop_add takes it */
        if (s->bwd_data)
            s->rules->release(s->bwd_data);
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory differentiating", s->what);
    }
    int p = 0;
    ins[p++] = rmi_hop_vjp_forward_output(c, s->store_out); /* the store: the forward's residual */
    for (int k = 0; k < s->n_in; k++)
        ins[p++] = rmi_hop_vjp_input(c, s->in0 + k);
    for (int k = 0; k < s->n_ct; k++) {
        remat_val ct = out_cts ? out_cts[k] : REMAT_NONE;
        if (ct == REMAT_NONE) {
            remat_dtype dt;
            remat_shape sh;
            s->out_desc(s->data, k, &dt, &sh);
            ct = remat_const_fill_at(g, dt, sh.rank, sh.dims, 0.0, s->loc);
        }
        ins[p++] = ct;
    }
    remat_val h = s->bwd_data ? rmi_hop_add(g, s->rules, s->bwd_data, s->dt, s->name, nin, ins, s->loc)
                              : rmi_fn_fail(g, REMAT_ERR_NOMEM, s->loc, "%s: out of memory", s->what);
    rmi_free(ins);
    for (int k = 0; k < s->n_a; k++)
        rmi_hop_vjp_add_ct(c, k, rmi_hop_output(g, h, k));
    for (int k = 0; k < s->n_b; k++)
        rmi_hop_vjp_add_ct(c, s->b_in0 + k, rmi_hop_output(g, h, s->n_a + k));
    remat_status st = remat_fn_status(g);
    if (st == REMAT_OK || st == REMAT_ERR_NOMEM) /* out of memory: recorded on g, remat_vjp reports it */
        return st;
    return rmi_error(REMAT_ERR_UNSUPPORTED, "%s: internal build error: %s", s->what, remat_fn_error(g));
}
