/* ops_call.c — names, stop_gradient, calls (inlined or as checkpoint regions), custom ops. */
#include <stdlib.h>
#include <string.h>

#include "ad/graph_impl.h"
#include "ad/ops_internal.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

remat_val remat_name_at(remat_fn *f, remat_val a, const char *name, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    if (!name || !*name)
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "checkpoint_name: empty name");
    const remat_node *na = rmi_fn_node(f, a);
    remat_node n = rmi_proto(REMAT_OP_NAME, (remat_dtype)na->dtype, &na->shape, loc);
    if (!(n.name = rmi_fn_strdup(f, name)))
        return REMAT_NONE;
    return rmi_fn_add_node(f, &n, 1, &a);
}

remat_val remat_stop_gradient_at(remat_fn *f, remat_val a, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!rmi_fn_vals_ok(f, 1, &a))
        return REMAT_NONE;
    const remat_node *na = rmi_fn_node(f, a);
    remat_node n = rmi_proto(REMAT_OP_STOP_GRADIENT, (remat_dtype)na->dtype, &na->shape, loc);
    return rmi_fn_add_node(f, &n, 1, &a);
}

/* Checks args against callee's signature. */
static int check_call(remat_fn *f, const remat_fn *callee, int nargs, const remat_val *args, remat_loc loc)
{
    char sa[96], sb[96];
    if (!callee) {
        rmi_fn_fail(f, REMAT_ERR_NULL, loc, "call: callee is NULL");
        return 0;
    }
    if (callee->status != REMAT_OK) {
        rmi_fn_fail(f, callee->status, loc, "call of '%s', which has a build error: %s", callee->name,
                    remat_fn_error(callee));
        return 0;
    }
    if (nargs != callee->n_args) {
        rmi_fn_fail(f, REMAT_ERR_ARG, loc, "call of '%s': %d arguments given, %d expected", callee->name, nargs,
                    callee->n_args);
        return 0;
    }
    if (nargs > 0 && !args) {
        rmi_fn_fail(f, REMAT_ERR_NULL, loc, "call of '%s': args is NULL", callee->name);
        return 0;
    }
    if (!rmi_fn_vals_ok(f, nargs, args))
        return 0;
    for (int i = 0; i < nargs; i++) {
        const remat_node *want = rmi_fn_node(callee, callee->args[i]), *got = rmi_fn_node(f, args[i]);
        if (want->dtype != got->dtype || !remat_shape_equal(&want->shape, &got->shape)) {
            rmi_fn_fail(f, want->dtype != got->dtype ? REMAT_ERR_DTYPE : REMAT_ERR_SHAPE, loc,
                        "call of '%s': argument %d ('%s') is %s, expected %s", callee->name, i, want->name,
                        rmi_fn_fmt_val(f, args[i], sa, sizeof sa),
                        rmi_fn_fmt_val(callee, callee->args[i], sb, sizeof sb));
            return 0;
        }
    }
    return 1;
}

remat_status remat_call_at(remat_fn *f, const remat_fn *callee, int nargs, const remat_val *args, remat_val *outs,
                           remat_loc loc)
{
    if (!f)
        return rmi_error(REMAT_ERR_NULL, "%s:%d: call: function is NULL", loc.file, loc.line);
    if (!check_call(f, callee, nargs, args, loc))
        return f->status ? f->status : REMAT_ERR_ARG;
    if (callee->n_outs > 0 && !outs) {
        rmi_fn_fail(f, REMAT_ERR_NULL, loc, "call of '%s': outs is NULL", callee->name);
        return REMAT_ERR_NULL;
    }
    remat_val *map = rmi_malloc(sizeof *map * (size_t)(callee->n_nodes ? callee->n_nodes : 1));
    if (!map) {
        rmi_fn_fail(f, REMAT_ERR_NOMEM, loc, "call of '%s': out of memory", callee->name);
        return REMAT_ERR_NOMEM;
    }
    for (int32_t v = 0; v < callee->n_nodes; v++) {
        const remat_node *n = rmi_fn_node(callee, v);
        map[v] = n->op == REMAT_OP_ARG ? args[n->p.arg_pos] : rmi_fn_copy_node(f, callee, v, map, 0);
    }
    int ok = 1;
    for (int i = 0; i < callee->n_outs; i++)
        ok &= (outs[i] = map[callee->outs[i]]) != REMAT_NONE;
    rmi_free(map);
    return ok ? REMAT_OK : f->status; /* a copy failed (out of memory): recorded on f */
}

remat_val remat_call1_at(remat_fn *f, const remat_fn *callee, int nargs, const remat_val *args, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (callee && callee->n_outs != 1)
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "call1 of '%s': it has %d outputs, not 1", callee->name,
                           callee->n_outs);
    remat_val out = REMAT_NONE;
    if (remat_call_at(f, callee, nargs, args, &out, loc) != REMAT_OK)
        return REMAT_NONE;
    return out;
}

remat_fn *remat_checkpoint(remat_fn *fn, const remat_policy *policy)
{
    if (!fn) {
        rmi_error(REMAT_ERR_NULL, "checkpoint: function is NULL");
        return NULL;
    }
    if (fn->status != REMAT_OK) {
        rmi_error(fn->status, "checkpoint of '%s', which has a build error: %s", fn->name, remat_fn_error(fn));
        return NULL;
    }
    if (fn->n_outs == 0) {
        rmi_error(REMAT_ERR_ARG, "checkpoint of '%s': it has no outputs", fn->name);
        return NULL;
    }
    char name[256];
    snprintf(name, sizeof name, "checkpoint(%s)", fn->name);
    remat_fn *w = remat_fn_new(name);
    if (!w)
        return NULL;
    remat_val *args = rmi_malloc(sizeof *args * (size_t)(fn->n_args ? fn->n_args : 1));
    if (!args) {
        remat_fn_free(w);
        rmi_error(REMAT_ERR_NOMEM, "checkpoint of '%s': out of memory", fn->name);
        return NULL;
    }
    for (int i = 0; i < fn->n_args; i++) {
        const remat_node *a = rmi_fn_node(fn, fn->args[i]);
        args[i] = remat_arg_at(w, a->name, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, a->loc);
    }
    const remat_node *o0 = rmi_fn_node(fn, fn->outs[0]);
    remat_shape scalar = {0};
    remat_node call = rmi_proto(REMAT_OP_CHECKPOINT, (remat_dtype)o0->dtype, &scalar, o0->loc);
    remat_call_params *cp = rmi_fn_alloc(w, sizeof *cp);
    remat_val c = REMAT_NONE;
    if (cp) {
        cp->callee = fn;
        cp->policy = policy ? policy : remat_nothing_saveable;
        call.p.call = cp;
        c = rmi_fn_add_node(w, &call, fn->n_args, args);
    }
    if (c != REMAT_NONE) { /* the node holds its references once it exists (remat_fn_free drops them) */
        remat_fn_ref(fn);
        remat_policy_ref(cp->policy);
    }
    for (int i = 0; i < fn->n_outs; i++) {
        const remat_node *o = rmi_fn_node(fn, fn->outs[i]);
        remat_node proj = rmi_proto(REMAT_OP_PROJ, (remat_dtype)o->dtype, &o->shape, o->loc);
        proj.p.output = i;
        remat_fn_output_at(w, rmi_fn_add_node(w, &proj, 1, &c), o->loc);
    }
    rmi_free(args);
    if (w->status != REMAT_OK) { /* only out of memory: fn was checked */
        rmi_error(w->status, "checkpoint of '%s': %s", fn->name, remat_fn_error(w));
        remat_fn_free(w);
        return NULL;
    }
    return w;
}

remat_val remat_custom_at(remat_fn *f, const remat_custom_op *op, int n_in, const remat_val *ins, remat_dtype dt,
                          int rank, const int64_t *dims, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, __func__);
    if (!op || !op->forward)
        return rmi_fn_fail(f, REMAT_ERR_NULL, loc, "custom: op or its forward function is NULL");
    if (n_in < 0 || (n_in > 0 && !ins))
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "custom '%s': bad inputs", op->name ? op->name : "?");
    if (!rmi_fn_vals_ok(f, n_in, ins))
        return REMAT_NONE;
    if ((unsigned)dt >= REMAT_DTYPE_COUNT)
        return rmi_fn_fail(f, REMAT_ERR_DTYPE, loc, "custom '%s': unknown dtype", op->name ? op->name : "?");
    if (!rmi_check_dims(f, "custom", dt, rank, dims, loc))
        return REMAT_NONE;
    remat_shape s = remat_shape_make(rank, dims);
    remat_node n = rmi_proto(REMAT_OP_CUSTOM, dt, &s, loc);
    n.p.custom = op;
    if (!(n.name = rmi_fn_strdup(f, op->name ? op->name : "custom")))
        return REMAT_NONE;
    return rmi_fn_add_node(f, &n, n_in, ins);
}
