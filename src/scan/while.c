/* while.c — the while node (remat/loop.h): construction, node data, rule table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "scan/while_impl.h"

static void *retain(void *vd)
{
    ((remat_while_data *)vd)->refcount++;
    return vd;
}

void rmi_while_data_release(void *vd)
{
    remat_while_data *d = vd;
    if (!d || --d->refcount > 0)
        return;
    remat_fn_free(d->cond);
    remat_fn_free(d->body);
    rmi_scan_body_vjp_release(d->vjp);
    rmi_free(d->in);
    rmi_free(d);
}

remat_while_data *rmi_while_data_derive(remat_while_data *d, while_kind kind)
{
    const int ni = d->n_carry + d->n_consts;
    remat_while_data *e = rmi_malloc(sizeof *e);
    scan_desc *in = rmi_malloc(sizeof *in * (size_t)(ni + 1));
    if (!e || !in) {
        rmi_free(e);
        rmi_free(in);
        rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", d->label);
        return NULL;
    }
    *e = *d;
    e->refcount = 1;
    e->kind = kind;
    remat_fn_ref(e->cond);
    remat_fn_ref(e->body);
    e->in = in;
    memcpy(e->in, d->in, sizeof *e->in * (size_t)ni);
    if (e->vjp)
        e->vjp->refcount++;
    return e;
}

static int num_outputs(const void *vd)
{
    const remat_while_data *d = vd;
    switch (d->kind) {
    case WHILE_PRIMAL: return d->n_carry + 1;
    case WHILE_FWD: return d->n_carry + 2;
    default: return d->n_diff + d->n_consts;
    }
}

void rmi_while_output_desc(const void *vd, int i, remat_dtype *dt, remat_shape *shape)
{
    const remat_while_data *d = vd;
    if (d->kind == WHILE_BWD) { /* cotangents of the differentiated inits, then of the consts */
        const scan_desc *a = &d->in[i < d->n_diff ? i : d->n_carry + i - d->n_diff];
        *dt = a->dt;
        *shape = a->shape;
    } else if (i < d->n_carry) {
        *dt = d->in[i].dt;
        *shape = d->in[i].shape;
    } else if (i == d->n_carry) { /* n_iter */
        *dt = REMAT_F64;
        *shape = (remat_shape){.rank = 0};
    } else { /* the store: one flat buffer in the first carry's dtype */
        const size_t es = remat_dtype_size(d->in[0].dt);
        *dt = d->in[0].dt;
        *shape = (remat_shape){.rank = 1, .dims = {(int64_t)((d->store_bytes + es - 1) / es)}};
    }
}

/* Bounds on the slots and tapes the schedule can hold for any length up
 * to max_steps (remat/schedule.h's cost table), so that the store is one
 * value sized at compile time. */
static void store_bounds(const remat_schedule_spec *s, int64_t m, int64_t *slots, int64_t *tapes)
{
    int64_t k;
    switch (s->kind) {
    case REMAT_SCHED_STORE_ALL: *slots = 0, *tapes = m; return;
    case REMAT_SCHED_PER_STEP: *slots = m - 1, *tapes = 1; return;
    case REMAT_SCHED_PERIODIC:
        *slots = (m + s->period - 1) / s->period - 1, *tapes = s->period < m ? s->period : m;
        return;
    case REMAT_SCHED_TWO_LEVEL:
        /* K(n) = ceil(sqrt n) <= K(m), and ceil(n / K(n)) <= ceil(sqrt n) */
        for (k = 1; k * k < m; k++)
            ;
        if (s->period > 0)
            *slots = (m + s->period - 1) / s->period - 1, *tapes = s->period < m ? s->period : m;
        else
            *slots = k, *tapes = k;
        return;
    case REMAT_SCHED_BINOMIAL:
    case REMAT_SCHED_ONLINE: *slots = s->snapshots, *tapes = 1; return;
    case REMAT_SCHED_TWO_TIER: /* RAM slots 0 .. min(S, n)-1; the slow ones are the file's */
        *slots = s->snapshots < m ? s->snapshots : m, *tapes = 1;
        return;
    case REMAT_SCHED_KIND_COUNT: break;
    }
    REMAT_UNREACHABLE("while: schedule kind");
}

void rmi_while_size_store(remat_while_data *d)
{
    store_bounds(&d->sched, d->max_steps, &d->slot_cap, &d->tape_cap);
    const bool two = d->sched.kind == REMAT_SCHED_TWO_TIER;
    d->slow_cap = two ? (d->sched.disk_snapshots < d->max_steps ? d->sched.disk_snapshots : d->max_steps) : 0;
    /* the header: the length and, with a slow tier, its handle (loop_rt.h slow_fd)
     * and extent written, from the forward node to the backward */
    d->bits_off = d->slow_cap > 0 ? 32 : 16;
    d->slots_off = d->bits_off + rmi_scan_align((size_t)(d->max_steps + 7) / 8);
    d->tapes_off = d->slots_off + (size_t)d->slot_cap * d->carry_bytes;
    d->store_bytes = d->tapes_off + (size_t)d->tape_cap * d->vjp->tape_bytes;
}

static void describe(const void *vd, int i, remat_residual *e)
{
    const remat_while_data *d = vd;
    static _Thread_local char detail[320];
    if (d->kind == WHILE_BWD)
        return;
    if (i <= d->n_carry) {
        if (i < d->n_carry)
            snprintf(detail, sizeof detail, "while (final carry %d)", i);
        else
            snprintf(detail, sizeof detail, "while (iteration count)");
        e->detail = detail;
        return;
    }
    char spec[48];
    remat_schedule_format(&d->sched, spec, sizeof spec);
    snprintf(detail, sizeof detail, "%s within max_steps %lld; %d carries of %zu bytes per snapshot, %lld of them; "
             "%lld step tape%s of %zu bytes",
             spec, (long long)d->max_steps, d->n_carry, d->carry_bytes, (long long)d->slot_cap,
             (long long)d->tape_cap, d->tape_cap == 1 ? "" : "s", d->vjp->tape_bytes);
    e->kind = REMAT_RESIDUAL_SNAPSHOT;
    e->dtype = d->in[0].dt;
    e->shape = d->in[0].shape;
    e->count = d->slot_cap;
    e->detail = detail;
    e->bytes = d->store_bytes;
    if (d->slow_cap > 0) { /* not in these bytes: offloaded */
        const size_t pos = strlen(detail);
        snprintf(detail + pos, sizeof detail - pos, "; + up to %lld snapshots offloaded to the slow tier (%zu bytes)",
                 (long long)d->slow_cap, (size_t)d->slow_cap * d->carry_bytes);
    }
}

const remat_hop_rules rmi_while_rules = {
    .name = "while",
    .retain = retain,
    .release = rmi_while_data_release,
    .num_outputs = num_outputs,
    .output_desc = rmi_while_output_desc,
    .vjp_forward = rmi_while_vjp_forward,
    .vjp_backward = rmi_while_vjp_backward,
    .jvp = rmi_while_jvp,
    .lower = rmi_while_lower,
    .describe_output = describe,
};
