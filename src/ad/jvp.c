/*
 * jvp.c — forward mode as a source-to-source transform (as jax.jvp).
 *
 * jvp(f) walks f's nodes once, in order: each node is copied as it is (so
 * the primal outputs are bitwise f's), and a node with a tangent on some
 * input gets its tangent from its rule (jvp_rules.c). Tangents flow with
 * the computation, so no residuals are kept and checkpoint regions need no
 * policy decisions: a region becomes a region over the JVP of its body (its
 * policy kept, for a reverse pass over the result), and a higher-order
 * primitive emits its own forward-mode form through its rules table.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ad/jvp_impl.h"
#include "core/alloc.h"
#include "core/error.h"

/* The checks remat_vjp makes, with the same messages' shape. */
static remat_status check_args(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "jvp: output pointer is NULL");
    *out = NULL;
    if (!f)
        return rmi_error(REMAT_ERR_NULL, "jvp: function is NULL");
    if (f->status != REMAT_OK)
        return rmi_error(f->status, "jvp of '%s', which has a build error: %s", f->name, remat_fn_error(f));
    if (f->n_outs == 0)
        return rmi_error(REMAT_ERR_ARG, "jvp of '%s': it has no outputs", f->name);
    if (n_argnums < 0 || (n_argnums > 0 && !argnums))
        return rmi_error(REMAT_ERR_ARG, "jvp of '%s': bad argnums", f->name);
    for (int k = 0; k < n_argnums; k++) {
        if (argnums[k] < 0 || argnums[k] >= f->n_args)
            return rmi_error(REMAT_ERR_ARG, "jvp of '%s': argnum %d out of range (it has %d arguments)", f->name,
                             argnums[k], f->n_args);
        for (int j = 0; j < k; j++)
            if (argnums[j] == argnums[k])
                return rmi_error(REMAT_ERR_ARG, "jvp of '%s': argnum %d given twice (one tangent per argument)",
                                 f->name, argnums[k]);
    }
    return REMAT_OK;
}

/* The arguments: f's, then one tangent per differentiated argument. */
static void emit_args(remat_jvp_ctx *c, int n_wrt, const int *wrt)
{
    const remat_fn *f = c->f;
    for (int i = 0; i < f->n_args; i++) {
        const remat_node *a = rmi_fn_node(f, f->args[i]);
        c->p[f->args[i]] = remat_arg_at(c->g, a->name, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, a->loc);
    }
    for (int k = 0; k < n_wrt; k++) {
        const remat_node *a = rmi_fn_node(f, f->args[wrt[k]]);
        char name[128];
        snprintf(name, sizeof name, "t_%s", a->name ? a->name : "arg");
        c->t[f->args[wrt[k]]] =
            remat_arg_at(c->g, name, (remat_dtype)a->dtype, a->shape.rank, a->shape.dims, a->loc);
    }
}

/* Node v of f: its primal copy, and its tangent when an input has one. */
static remat_status emit_node(remat_jvp_ctx *c, remat_val v)
{
    const remat_node *n = rmi_fn_node(c->f, v);
    if (n->op == REMAT_OP_ARG)
        return REMAT_OK;
    if (n->op == REMAT_OP_PROJ && c->outs[n->in[0]]) { /* an output of a call or HOP in its tangent form */
        const remat_node *h = rmi_fn_node(c->f, n->in[0]);
        int no = h->op == REMAT_OP_CHECKPOINT ? remat_fn_num_outputs(h->p.call->callee)
                                          : h->p.hop.rules->num_outputs(h->p.hop.data);
        c->p[v] = c->outs[n->in[0]][n->p.output];
        c->t[v] = c->outs[n->in[0]][no + n->p.output];
        return REMAT_OK;
    }
    int has_tangent = 0;
    if (remat_op_deriv_of((remat_op)n->op) != REMAT_OPD_ZERO)
        for (int k = 0; k < n->nin; k++)
            has_tangent |= c->t[n->in[k]] != REMAT_NONE;
    if (!has_tangent || n->op == REMAT_OP_PROJ) {
        c->p[v] = rmi_fn_copy_node(c->g, c->f, v, c->p, 0);
        return REMAT_OK;
    }
    if (n->op != REMAT_OP_CHECKPOINT && n->op != REMAT_OP_HOP)
        c->p[v] = rmi_fn_copy_node(c->g, c->f, v, c->p, 0);
    return rmi_jvp_rule(c, v);
}

remat_status remat_jvp(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    remat_status st = check_args(f, n_argnums, argnums, out);
    if (st != REMAT_OK)
        return st;
    int n_wrt = n_argnums ? n_argnums : f->n_args;
    int *wrt = rmi_malloc(sizeof *wrt * (size_t)(n_wrt ? n_wrt : 1));
    char name[300];
    snprintf(name, sizeof name, "jvp(%s)", f->name);
    size_t n = (size_t)(f->n_nodes ? f->n_nodes : 1);
    remat_jvp_ctx c = {.f = f, .g = remat_fn_new(name)};
    c.p = rmi_malloc(sizeof *c.p * n);
    c.t = rmi_malloc(sizeof *c.t * n);
    c.outs = rmi_calloc(n, sizeof *c.outs);
    if (!wrt || !c.g || !c.p || !c.t || !c.outs) {
        st = REMAT_ERR_NOMEM;
        goto done;
    }
    for (int k = 0; k < n_wrt; k++)
        wrt[k] = n_argnums ? argnums[k] : k;
    for (size_t v = 0; v < n; v++)
        c.p[v] = c.t[v] = REMAT_NONE;
    emit_args(&c, n_wrt, wrt);
    for (remat_val v = 0; v < f->n_nodes && st == REMAT_OK && c.g->status == REMAT_OK; v++)
        st = emit_node(&c, v);
    if (st == REMAT_OK && c.g->status == REMAT_OK) {
        for (int k = 0; k < f->n_outs; k++)
            remat_fn_output_at(c.g, c.p[f->outs[k]], rmi_fn_node(f, f->outs[k])->loc);
        for (int k = 0; k < f->n_outs; k++) {
            const remat_node *o = rmi_fn_node(f, f->outs[k]);
            remat_val tv = c.t[f->outs[k]];
            if (tv == REMAT_NONE) /* the output does not depend on a differentiated argument */
                tv = remat_const_fill_at(c.g, (remat_dtype)o->dtype, o->shape.rank, o->shape.dims, 0.0, o->loc);
            remat_fn_output_at(c.g, tv, o->loc);
        }
    }

done:
    if (c.g && c.g->status == REMAT_ERR_NOMEM)
        st = REMAT_ERR_NOMEM;
    if (st == REMAT_ERR_NOMEM)
        st = rmi_error(REMAT_ERR_NOMEM, "jvp of '%s': out of memory building the forward-mode function%s%s",
                       f->name, c.g && c.g->error ? ": " : "", c.g && c.g->error ? c.g->error : "");
    else if (st == REMAT_OK && c.g->status != REMAT_OK)
        st = rmi_error(REMAT_ERR_UNSUPPORTED, "jvp of '%s': internal build error: %s", f->name,
                       remat_fn_error(c.g));
    if (st == REMAT_OK)
        *out = c.g;
    else
        remat_fn_free(c.g);
    for (size_t v = 0; c.outs && v < n; v++)
        rmi_free(c.outs[v]);
    rmi_free(c.outs);
    rmi_free(c.p);
    rmi_free(c.t);
    rmi_free(wrt);
    return st;
}
