/* while_build.c — remat_while_at: checks the operands and builds the node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "scan/while_impl.h"

static bool desc_eq(const scan_desc *a, const scan_desc *b)
{
    return a->dt == b->dt && remat_shape_equal(&a->shape, &b->shape);
}

static scan_desc desc_of(const remat_fn *g, remat_val v)
{
    const remat_node *n = rmi_fn_node(g, v);
    return (scan_desc){(remat_dtype)n->dtype, n->shape};
}

static const char *fmt(const scan_desc *d, char *buf, size_t len)
{
    return remat_shape_format(d->dt, &d->shape, buf, len);
}

/* W(carry..., consts...) -> (carry'..., accepted): the body with its control
 * carries and flag behind stop_gradient, so that neither mode differentiates
 * through them; in a checkpoint region when a policy is given. NULL with
 * remat_last_error() set when it cannot be built. */
static remat_fn *wrap_body(const remat_fn *body, int nc, int nd, int nk, const remat_policy *policy)
{
    const int na = nc + nk;
    char name[300];
    snprintf(name, sizeof name, "while_body(%s)", remat_fn_name(body));
    remat_fn *w = remat_fn_new(name), *callee = NULL;
    remat_val *a = rmi_malloc(sizeof *a * (size_t)(na + 1)), *o = rmi_malloc(sizeof *o * (size_t)(nc + 2));
    if (!w || !a || !o)
        goto fail;
    callee = policy ? remat_checkpoint((remat_fn *)body, policy) : remat_fn_ref((remat_fn *)body);
    if (!callee)
        goto fail;
    for (int i = 0; i < na; i++) {
        const remat_node *n = rmi_fn_node(body, remat_fn_arg(body, i));
        a[i] = remat_arg_at(w, n->name, (remat_dtype)n->dtype, n->shape.rank, n->shape.dims, n->loc);
        if (i >= nd && i < nc)
            a[i] = remat_stop_gradient_at(w, a[i], n->loc);
    }
    if (remat_call(w, callee, na, a, o) != REMAT_OK)
        goto fail;
    for (int i = 0; i <= nc; i++)
        remat_fn_output(w, i < nd ? o[i] : remat_stop_gradient(w, o[i]));
    if (remat_fn_status(w) != REMAT_OK)
        goto fail;
    remat_fn_free(callee);
    rmi_free(a);
    rmi_free(o);
    return w;
fail:
    if (w && remat_fn_status(w) != REMAT_OK)
        rmi_error(remat_fn_status(w), "%s", remat_fn_error(w));
    else if (remat_last_error()[0] == 0)
        rmi_error(REMAT_ERR_NOMEM, "out of memory");
    remat_fn_free(callee);
    remat_fn_free(w);
    rmi_free(a);
    rmi_free(o);
    return NULL;
}

#define FAIL(st, ...) (rmi_fn_fail(f, (st), loc, __VA_ARGS__), (st))

/* the signatures of cond and body against each other and the operands */
static remat_status check_fns(remat_fn *f, remat_while_data *d, const remat_fn *cond, const remat_fn *body,
                              const remat_val *init, const remat_val *consts, remat_loc loc)
{
    char x[96], y[96];
    const int nc = d->n_carry, nk = d->n_consts, na = nc + nk;
    const char *cn = remat_fn_name(cond), *bn = remat_fn_name(body);
    if (remat_fn_num_args(body) != na)
        return FAIL(REMAT_ERR_ARG, "while: body '%s' takes %d arguments, given %d carries + %d consts", bn,
                    remat_fn_num_args(body), nc, nk);
    if (remat_fn_num_args(cond) != na)
        return FAIL(REMAT_ERR_ARG, "while: cond '%s' takes %d arguments, given %d carries + %d consts", cn,
                    remat_fn_num_args(cond), nc, nk);
    if (remat_fn_num_outputs(cond) != 1)
        return FAIL(REMAT_ERR_ARG, "while: cond '%s' returns %d values, expected one scalar", cn,
                    remat_fn_num_outputs(cond));
    if (remat_fn_num_outputs(body) != nc + 1)
        return FAIL(REMAT_ERR_ARG, "while: body '%s' returns %d values, expected %d carries + accepted", bn,
                    remat_fn_num_outputs(body), nc);
    const scan_desc cf = desc_of(cond, remat_fn_out(cond, 0)), af = desc_of(body, remat_fn_out(body, nc));
    if (cf.shape.rank != 0)
        return FAIL(REMAT_ERR_SHAPE, "while: cond '%s' returns %s, expected a scalar (rank 0)", cn, fmt(&cf, x, 96));
    if (af.shape.rank != 0)
        return FAIL(REMAT_ERR_SHAPE, "while: body '%s' output %d (accepted) is %s, expected a scalar (rank 0)", bn,
                    nc, fmt(&af, x, 96));
    d->cond_dt = cf.dt;
    d->acc_dt = af.dt;
    for (int i = 0; i < na; i++) {
        const scan_desc b = desc_of(body, remat_fn_arg(body, i)), c = desc_of(cond, remat_fn_arg(cond, i));
        d->in[i] = b;
        if (!desc_eq(&b, &c))
            return FAIL(b.dt != c.dt ? REMAT_ERR_DTYPE : REMAT_ERR_SHAPE,
                        "while: argument %d is %s in body '%s' but %s in cond '%s'", i, fmt(&b, x, 96), bn,
                        fmt(&c, y, 96), cn);
        const scan_desc v = desc_of(f, i < nc ? init[i] : consts[i - nc]);
        if (!desc_eq(&v, &b))
            return FAIL(v.dt != b.dt ? REMAT_ERR_DTYPE : REMAT_ERR_SHAPE, "while: %s %d is %s, body '%s' expects %s",
                        i < nc ? "init carry" : "const", i < nc ? i : i - nc, fmt(&v, x, 96), bn, fmt(&b, y, 96));
        if (i < nc) {
            const scan_desc o = desc_of(body, remat_fn_out(body, i));
            if (!desc_eq(&o, &b))
                return FAIL(o.dt != b.dt ? REMAT_ERR_DTYPE : REMAT_ERR_SHAPE,
                            "while: body '%s' carry %d goes in as %s but comes out as %s", bn, i, fmt(&b, x, 96),
                            fmt(&o, y, 96));
        }
    }
    return REMAT_OK;
}

remat_status remat_while_at(remat_fn *f, const remat_fn *cond, const remat_fn *body, int n_carry, int n_diff,
                            const remat_val *init, int n_consts, const remat_val *consts,
                            const remat_while_options *opt, remat_val *carry_out, remat_val *n_iter, remat_loc loc)
{
    if (!f)
        return rmi_error(REMAT_ERR_NULL, "%s:%d: while: function is NULL", loc.file, loc.line);
    if (!cond || !body)
        return FAIL(REMAT_ERR_NULL, "while: %s is NULL", !cond ? "cond" : "body");
    if (!opt)
        return FAIL(REMAT_ERR_NULL, "while: options are NULL (max_steps is required)");
    for (int k = 0; k < 2; k++) {
        const remat_fn *g = k ? body : cond;
        if (remat_fn_status(g) != REMAT_OK)
            return FAIL(remat_fn_status(g), "while: %s '%s' has a build error: %s", k ? "body" : "cond",
                        remat_fn_name(g), remat_fn_error(g));
    }
    if (n_carry < 1)
        return FAIL(REMAT_ERR_ARG, "while: n_carry is %d, a loop needs at least one carry", n_carry);
    if (n_diff < 0 || n_diff > n_carry)
        return FAIL(REMAT_ERR_ARG, "while: n_diff is %d, expected 0 .. n_carry (%d)", n_diff, n_carry);
    if (n_consts < 0 || (n_consts && !consts))
        return FAIL(REMAT_ERR_ARG, "while: n_consts is %d with consts %s", n_consts, consts ? "given" : "NULL");
    if (!init || !carry_out)
        return FAIL(REMAT_ERR_NULL, "while: %s is NULL", !init ? "init" : "carry_out");
    if (opt->max_steps < 1)
        return FAIL(REMAT_ERR_VALUE, "while: max_steps is %lld, expected at least 1", (long long)opt->max_steps);
    if (opt->memory_budget < 0 || (opt->memory_budget > 0 && opt->schedule))
        return FAIL(opt->memory_budget < 0 ? REMAT_ERR_VALUE : REMAT_ERR_ARG,
                    "while: memory_budget is %lld%s", (long long)opt->memory_budget,
                    opt->memory_budget < 0 ? ", expected >= 0" : " and a schedule is given: name one or the other");
    const remat_schedule_spec online = {.kind = REMAT_SCHED_ONLINE, .snapshots = REMAT_WHILE_DEFAULT_SNAPSHOTS};
    const remat_schedule_spec *sp = opt->schedule ? opt->schedule : &online;
    remat_schedule_cost cost;
    if (remat_schedule_predict(sp, 1, &cost) != REMAT_OK)
        return FAIL(REMAT_ERR_ARG, "while: schedule: %s", remat_last_error());
    if (!rmi_fn_vals_ok(f, n_carry, init) || !rmi_fn_vals_ok(f, n_consts, consts))
        return remat_fn_status(f) ? remat_fn_status(f) : REMAT_ERR_ARG;

    remat_while_data *d = rmi_calloc(1, sizeof *d);
    if (!d)
        return FAIL(REMAT_ERR_NOMEM, "while: out of memory");
    *d = (remat_while_data){.refcount = 1, .kind = WHILE_PRIMAL, .n_carry = n_carry, .n_diff = n_diff,
                            .n_consts = n_consts, .max_steps = opt->max_steps, .sched = *sp, .budget = opt->memory_budget,
                            .loc = loc};
    snprintf(d->label, sizeof d->label, "while(cond '%s', body '%s') at %s:%d", remat_fn_name(cond),
             remat_fn_name(body), loc.file, loc.line);
    d->in = rmi_calloc((size_t)(n_carry + n_consts) + 1, sizeof *d->in);
    remat_status st = d->in ? check_fns(f, d, cond, body, init, consts, loc) : FAIL(REMAT_ERR_NOMEM, "while: out of memory");
    if (st == REMAT_OK) {
        d->cond = remat_fn_ref((remat_fn *)cond);
        if (!(d->body = wrap_body(body, n_carry, n_diff, n_consts, opt->body_policy)))
            st = FAIL(remat_fn_status(body) ? remat_fn_status(body) : REMAT_ERR_NOMEM, "while: body '%s': %s",
                      remat_fn_name(body), remat_last_error());
    }
    for (int i = 0; st == REMAT_OK && i < n_carry; i++)
        d->carry_bytes += rmi_scan_align((size_t)remat_shape_numel(&d->in[i].shape) * remat_dtype_size(d->in[i].dt));
    if (st == REMAT_OK && opt->memory_budget > 0) { /* the tape's size is the body VJP's */
        if ((st = rmi_while_body_vjp(d)) == REMAT_OK)
            st = rmi_while_budget_schedule(d);
        if (st != REMAT_OK)
            (void)FAIL(st, "while: memory_budget: %s", remat_last_error());
    }
    const int nin = n_carry + n_consts;
    remat_val *ins = st == REMAT_OK ? rmi_malloc(sizeof *ins * (size_t)(nin + 1)) : NULL;
    if (st == REMAT_OK && !ins)
        st = FAIL(REMAT_ERR_NOMEM, "while: out of memory");
    if (st != REMAT_OK) {
        rmi_while_data_release(d);
        return st;
    }
    memcpy(ins, init, sizeof *ins * (size_t)n_carry);
    if (n_consts)
        memcpy(ins + n_carry, consts, sizeof *ins * (size_t)n_consts);
    remat_val h = rmi_hop_add(f, &rmi_while_rules, d, d->in[0].dt, "while", nin, ins, loc);
    rmi_free(ins);
    for (int i = 0; i < n_carry; i++)
        carry_out[i] = rmi_hop_output(f, h, i);
    if (n_iter)
        *n_iter = rmi_hop_output(f, h, n_carry);
    return h == REMAT_NONE ? remat_fn_status(f) : REMAT_OK;
}
