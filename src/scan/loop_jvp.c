/*
 * loop_jvp.c — what the forward-mode rules of every loop share (loop_rt.h):
 * a loop's forward mode is the same loop over its body's JVP, whose
 * arguments and outputs each loop orders its own way (a scan: each group,
 * carries, xs, consts, then its tangents; a while loop: the differentiated
 * carries and their tangents, the control carries, the consts and theirs).
 */
#include <stdio.h>

#include "core/alloc.h"
#include "core/error.h"
#include "scan/loop_rt.h"

remat_fn *rmi_loop_jvp_fn(const remat_fn *f, bool jvp, const char *prefix, int n_wrt, const int *wrt,
                          const loop_slot *in, int n_in, const loop_slot *out, int n_out, remat_status *st)
{
    const int nb = remat_fn_num_args(f), no = remat_fn_num_outputs(f);
    remat_val *args = rmi_malloc(sizeof *args * (size_t)(nb + n_wrt + 1));
    remat_val *res = rmi_malloc(sizeof *res * (size_t)(2 * no + 1));
    remat_fn *j = NULL, *w = NULL;
    char name[300];
    *st = REMAT_ERR_NOMEM;
    if (!args || !res)
        goto done;
    if (jvp && (*st = remat_jvp(f, n_wrt, wrt, &j)) != REMAT_OK) /* e.g. an op without a JVP rule, named */
        goto done;
    *st = REMAT_ERR_NOMEM;
    snprintf(name, sizeof name, "%s(%s)", prefix, remat_fn_name(f));
    if (!(w = remat_fn_new(name)))
        goto done;
    /* W's arguments in the loop's order; args in f's (then its tangents: the JVP's order) */
    for (int q = 0; q < n_in; q++) {
        const int a = in[q].tangent ? wrt[in[q].i] : in[q].i;
        const remat_node *n = rmi_fn_node(f, remat_fn_arg(f, a));
        char an[128];
        snprintf(an, sizeof an, "%s%s", in[q].tangent ? "t_" : "", n->name ? n->name : "arg");
        args[in[q].tangent ? nb + in[q].i : a] =
            remat_arg_at(w, an, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, n->loc);
    }
    if (remat_call(w, j ? j : f, j ? nb + n_wrt : nb, args, res) != REMAT_OK)
        goto done;
    for (int q = 0; q < n_out; q++)
        remat_fn_output(w, res[(out[q].tangent ? no : 0) + out[q].i]);
done:
    if (w)
        *st = REMAT_OK; /* a failed build: remat_fn_status(w) */
    remat_fn_free(j);
    rmi_free(args);
    rmi_free(res);
    return w;
}
