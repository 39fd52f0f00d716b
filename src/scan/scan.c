/* scan.c — the scan node: construction with its shape rules, node data, rule table. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "scan/scan_impl.h"

/* 16 bytes: SIMD-friendly without wasting tapes of a few scalars */
size_t rmi_scan_align(size_t bytes) { return (bytes + 15) / 16 * 16; }

static size_t desc_bytes(const scan_desc *d)
{
    return (size_t)remat_shape_numel(&d->shape) * remat_dtype_size(d->dt);
}

static void *retain(void *vd)
{
    ((remat_scan_data *)vd)->refcount++;
    return vd;
}

void rmi_scan_body_vjp_release(scan_body_vjp *v)
{
    if (!v || --v->refcount > 0)
        return;
    remat_fn_free(v->fwd);
    remat_fn_free(v->bwd);
    rmi_free(v->res_off);
    rmi_free(v->res_arg);
    rmi_free(v);
}

void rmi_scan_data_release(void *vd)
{
    remat_scan_data *d = vd;
    if (!d || --d->refcount > 0)
        return;
    remat_fn_free(d->body);
    rmi_scan_body_vjp_release(d->vjp);
    rmi_free(d->in);
    rmi_free(d->out);
    rmi_free(d);
}

remat_scan_data *rmi_scan_data_derive(remat_scan_data *d, scan_kind kind)
{
    int ni = d->n_carry + d->n_xs + d->n_consts, no = d->n_carry + d->n_ys;
    remat_scan_data *e = rmi_malloc(sizeof *e);
    scan_desc *in = rmi_malloc(sizeof *in * (size_t)(ni + 1)), *out = rmi_malloc(sizeof *out * (size_t)(no + 1));
    if (!e || !in || !out) {
        rmi_free(e);
        rmi_free(in);
        rmi_free(out);
        rmi_error(REMAT_ERR_NOMEM, "scan: out of memory");
        return NULL;
    }
    *e = *d;
    e->refcount = 1;
    e->kind = kind;
    remat_fn_ref(e->body);
    e->in = in;
    e->out = out;
    memcpy(e->in, d->in, sizeof *e->in * (size_t)ni);
    memcpy(e->out, d->out, sizeof *e->out * (size_t)no);
    if (e->vjp)
        e->vjp->refcount++;
    return e;
}

int rmi_scan_num_outputs(const void *vd)
{
    const remat_scan_data *d = vd;
    switch (d->kind) {
    case SCAN_PRIMAL: return d->n_carry + d->n_ys;
    case SCAN_FWD: return d->n_carry + d->n_ys + 1;
    default: return d->n_carry + d->n_xs + d->n_consts;
    }
}

static remat_shape stacked(int64_t length, const remat_shape *s)
{
    remat_shape r = {.rank = s->rank + 1};
    r.dims[0] = length;
    for (int i = 0; i < s->rank; i++)
        r.dims[i + 1] = s->dims[i];
    return r;
}

void rmi_scan_output_desc(const void *vd, int i, remat_dtype *dt, remat_shape *shape)
{
    const remat_scan_data *d = vd;
    if (d->kind == SCAN_BWD) { /* cotangents of init, xs, consts */
        const scan_desc *a = &d->in[i];
        *dt = a->dt;
        *shape = (i >= d->n_carry && i < d->n_carry + d->n_xs) ? stacked(d->length, &a->shape) : a->shape;
        return;
    }
    if (i < d->n_carry) {
        *dt = d->out[i].dt;
        *shape = d->out[i].shape;
    } else if (i < d->n_carry + d->n_ys) {
        *dt = d->out[i].dt;
        *shape = stacked(d->length, &d->out[i].shape);
    } else { /* the store: one flat buffer in the first carry's dtype */
        size_t es = remat_dtype_size(d->out[0].dt);
        *dt = d->out[0].dt;
        *shape = (remat_shape){.rank = 1, .dims = {(int64_t)((d->store_bytes + es - 1) / es)}};
        if (shape->dims[0] == 0)
            shape->dims[0] = 1;
    }
}

static void describe(const void *vd, int i, remat_residual *e)
{
    const remat_scan_data *d = vd;
    static _Thread_local char detail[200];
    if (d->kind == SCAN_BWD)
        return;
    if (i < d->n_carry + d->n_ys) { /* a final carry or the stacked ys */
        if (i < d->n_carry)
            snprintf(detail, sizeof detail, "scan (final carry %d)", i);
        else
            snprintf(detail, sizeof detail, "scan (ys %d)", i - d->n_carry);
        e->detail = detail;
        return;
    }
    char spec[48];
    remat_schedule_format(&d->sched, spec, sizeof spec);
    int pos = snprintf(detail, sizeof detail, "%s", spec);
    if (d->n_carry > 1 && pos < (int)sizeof detail) /* the line shows the first carry's shape */
        pos += snprintf(detail + pos, sizeof detail - (size_t)pos, "; %d carries of %zu bytes per snapshot",
                        d->n_carry, d->carry_bytes);
    if (d->peak_tapes > 0 && pos < (int)sizeof detail)
        pos += snprintf(detail + pos, sizeof detail - (size_t)pos, "; + %lld step tape%s of %zu bytes",
                        (long long)d->peak_tapes, d->peak_tapes > 1 ? "s" : "", d->vjp->tape_bytes);
    if (d->slow_extent > 0 && pos < (int)sizeof detail) /* not in these bytes: offloaded */
        snprintf(detail + pos, sizeof detail - (size_t)pos, "; + %lld snapshots offloaded to the slow tier (%zu bytes)",
                 (long long)d->slow_extent, (size_t)d->slow_extent * d->carry_bytes);
    e->kind = REMAT_RESIDUAL_SNAPSHOT;
    e->dtype = d->out[0].dt;
    e->shape = d->out[0].shape;
    e->count = d->ram_slots;
    e->detail = detail;
    e->bytes = d->store_bytes;
}

const remat_hop_rules rmi_scan_rules = {
    .name = "scan",
    .retain = retain,
    .release = rmi_scan_data_release,
    .num_outputs = rmi_scan_num_outputs,
    .output_desc = rmi_scan_output_desc,
    .vjp_forward = rmi_scan_vjp_forward,
    .vjp_backward = rmi_scan_vjp_backward,
    .jvp = rmi_scan_jvp,
    .lower = rmi_scan_lower,
    .describe_output = describe,
};

/* ---- construction ---- */
/* REMAT_OK when v has want's dtype and (stacked) shape; else the status to
 * report, a dtype mismatch first, as remat_call does. */
static remat_status same(const remat_fn *f, remat_val v, const scan_desc *want, int stacked_len, int64_t length)
{
    const remat_node *n = rmi_fn_node(f, v);
    remat_shape s = stacked_len ? stacked(length, &want->shape) : want->shape;
    if (n->dtype != want->dt)
        return REMAT_ERR_DTYPE;
    return remat_shape_equal(&n->shape, &s) ? REMAT_OK : REMAT_ERR_SHAPE;
}

remat_status remat_scan_at(remat_fn *f, const remat_fn *body, int64_t length, int n_carry, const remat_val *init,
                           int n_xs, const remat_val *xs, int n_consts, const remat_val *consts,
                           const remat_scan_options *opt, remat_val *carry_out, remat_val *ys, remat_loc loc)
{
    char a[96], b[96];
    remat_scan_options dflt = {0};
    if (!f)
        return rmi_error(REMAT_ERR_NULL, "%s:%d: scan: function is NULL", loc.file, loc.line);
#define FAIL(st, ...) (rmi_fn_fail(f, (st), loc, __VA_ARGS__), (st))
    if (!body)
        return FAIL(REMAT_ERR_NULL, "scan: body is NULL");
    if (remat_fn_status(body) != REMAT_OK)
        return FAIL(remat_fn_status(body), "scan: body '%s' has a build error: %s", remat_fn_name(body),
                    remat_fn_error(body));
    const char *bname = remat_fn_name(body);
    const int b_args = remat_fn_num_args(body), b_outs = remat_fn_num_outputs(body);
    if (!opt)
        opt = &dflt;
    if (length < 0)
        return FAIL(REMAT_ERR_VALUE, "scan: length %lld is negative", (long long)length);
    if (n_carry < 0 || n_xs < 0 || n_consts < 0 || (n_carry && (!init || !carry_out)) || (n_xs && !xs) ||
        (n_consts && !consts))
        return FAIL(REMAT_ERR_ARG, "scan: bad carry/xs/consts counts or NULL arrays");
    if (n_carry + n_xs + n_consts != b_args)
        return FAIL(REMAT_ERR_ARG, "scan: body '%s' takes %d arguments, given %d carries + %d xs + %d consts",
                    bname, b_args, n_carry, n_xs, n_consts);
    if (b_outs < n_carry)
        return FAIL(REMAT_ERR_ARG, "scan: body '%s' returns %d values, fewer than its %d carries", bname,
                    b_outs, n_carry);
    int n_ys = b_outs - n_carry;
    if (n_ys > 0 && !ys)
        return FAIL(REMAT_ERR_NULL, "scan: body '%s' returns %d ys but ys is NULL", bname, n_ys);
    if (!rmi_fn_vals_ok(f, n_carry, init) || !rmi_fn_vals_ok(f, n_xs, xs) || !rmi_fn_vals_ok(f, n_consts, consts))
        return remat_fn_status(f) ? remat_fn_status(f) : REMAT_ERR_ARG;
    if (opt->unroll < 0)
        return FAIL(REMAT_ERR_VALUE, "scan: unroll %d is not a positive number of steps", opt->unroll);
    remat_schedule_cost cost;
    if (remat_schedule_predict(&opt->schedule, length, &cost) != REMAT_OK)
        return FAIL(REMAT_ERR_ARG, "scan: %s", remat_last_error());

    remat_scan_data *d = rmi_calloc(1, sizeof *d);
    if (!d)
        return FAIL(REMAT_ERR_NOMEM, "scan: out of memory");
    d->refcount = 1;
    d->kind = SCAN_PRIMAL;
    d->length = length;
    d->n_carry = n_carry;
    d->n_xs = n_xs;
    d->n_consts = n_consts;
    d->n_ys = n_ys;
    d->reverse = opt->reverse;
    d->unroll = opt->unroll ? opt->unroll : 1;
    d->sched = opt->schedule;
    d->loc = loc;
    d->in = rmi_calloc((size_t)b_args + 1, sizeof *d->in);
    d->out = rmi_calloc((size_t)b_outs + 1, sizeof *d->out);
    if (!d->in || !d->out) {
        rmi_scan_data_release(d);
        return FAIL(REMAT_ERR_NOMEM, "scan: out of memory");
    }
    for (int i = 0; i < b_args; i++) {
        const remat_node *n = rmi_fn_node(body, remat_fn_arg(body, i));
        d->in[i] = (scan_desc){(remat_dtype)n->dtype, n->shape};
    }
    for (int i = 0; i < b_outs; i++) {
        const remat_node *n = rmi_fn_node(body, remat_fn_out(body, i));
        d->out[i] = (scan_desc){(remat_dtype)n->dtype, n->shape};
    }
    remat_status st = REMAT_OK, bad;
    for (int i = 0; i < n_carry && st == REMAT_OK; i++) {
        if (d->out[i].dt != d->in[i].dt || !remat_shape_equal(&d->out[i].shape, &d->in[i].shape))
            st = FAIL(d->out[i].dt != d->in[i].dt ? REMAT_ERR_DTYPE : REMAT_ERR_SHAPE,
                      "scan: body '%s' carry %d goes in as %s but comes out as %s", bname, i,
                      remat_shape_format(d->in[i].dt, &d->in[i].shape, a, sizeof a),
                      remat_shape_format(d->out[i].dt, &d->out[i].shape, b, sizeof b));
        else if ((bad = same(f, init[i], &d->in[i], 0, length)) != REMAT_OK)
            st = FAIL(bad, "scan: init carry %d is %s, body '%s' expects %s", i,
                      rmi_fn_fmt_val(f, init[i], a, sizeof a), bname,
                      remat_shape_format(d->in[i].dt, &d->in[i].shape, b, sizeof b));
    }
    for (int i = 0; i < n_xs && st == REMAT_OK; i++) {
        const scan_desc *w = &d->in[n_carry + i];
        if ((bad = same(f, xs[i], w, 1, length)) != REMAT_OK) {
            remat_shape s = stacked(length, &w->shape);
            st = FAIL(bad, "scan: xs %d is %s, expected %s (length %lld stacked on axis 0)", i,
                      rmi_fn_fmt_val(f, xs[i], a, sizeof a), remat_shape_format(w->dt, &s, b, sizeof b),
                      (long long)length);
        }
    }
    for (int i = 0; i < n_consts && st == REMAT_OK; i++) {
        const scan_desc *w = &d->in[n_carry + n_xs + i];
        if ((bad = same(f, consts[i], w, 0, length)) != REMAT_OK)
            st = FAIL(bad, "scan: const %d is %s, body '%s' expects %s", i,
                      rmi_fn_fmt_val(f, consts[i], a, sizeof a), bname,
                      remat_shape_format(w->dt, &w->shape, b, sizeof b));
    }
#undef FAIL
    if (st != REMAT_OK) {
        rmi_scan_data_release(d);
        return st;
    }
    d->body = opt->body_policy ? remat_checkpoint((remat_fn *)body, opt->body_policy) : remat_fn_ref((remat_fn *)body);
    if (!d->body) { /* checkpoint ran out of memory (body was checked) */
        rmi_scan_data_release(d);
        rmi_fn_fail(f, REMAT_ERR_NOMEM, loc, "scan: %s", remat_last_error());
        return REMAT_ERR_NOMEM;
    }
    for (int i = 0; i < n_carry; i++)
        d->carry_bytes += rmi_scan_align(desc_bytes(&d->in[i]));

    int nin = n_carry + n_xs + n_consts;
    remat_val *ins = rmi_malloc(sizeof *ins * (size_t)(nin + 1));
    if (!ins) {
        rmi_scan_data_release(d);
        return rmi_fn_fail(f, REMAT_ERR_NOMEM, loc, "scan: out of memory"), REMAT_ERR_NOMEM;
    }
    if (n_carry) /* init may be NULL without carries (a map): memcpy(_, NULL, 0) is undefined */
        memcpy(ins, init, sizeof *ins * (size_t)n_carry);
    if (n_xs)
        memcpy(ins + n_carry, xs, sizeof *ins * (size_t)n_xs);
    if (n_consts)
        memcpy(ins + n_carry + n_xs, consts, sizeof *ins * (size_t)n_consts);
    remat_val h = rmi_hop_add(f, &rmi_scan_rules, d, d->out[0].dt, "scan", nin, ins, loc);
    rmi_free(ins);
    for (int i = 0; i < n_carry + n_ys; i++) {
        remat_val v = rmi_hop_output(f, h, i);
        if (i < n_carry)
            carry_out[i] = v;
        else
            ys[i - n_carry] = v;
    }
    return h == REMAT_NONE ? remat_fn_status(f) : REMAT_OK;
}
