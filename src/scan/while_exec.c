/*
 * while_exec.c — the interpreted executor of a while node: each iteration
 * is one execution of a sub-program (the body for an advance, the VJP's
 * forward half for a tape or a recomputation, its backward half for a
 * reverse), driven by the ops of scan_replay.h. A rejected iteration is
 * advanced without a tape and skipped in reverse: absent from the adjoint.
 */
#include "core/assert.h"
#include "scan/loop_rt.h"
#include "scan/while_rt.h"

void rmi_while_rt_bind(while_rt *r, const void *const *ks, bool backward)
{
    for (int i = 0; i < r->nk; i++)
        r->fin[r->nc + i] = ks[i];
    const int *arg = r->d->vjp ? r->d->vjp->res_arg : NULL;
    for (int j = 0; j < r->nres; j++)
        if (arg[j] >= r->nc)
            r->bin[j] = ks[arg[j] - r->nc];
    if (!backward)
        return;
    r->reversed = 0;
    for (int i = 0; i < r->nk; i++) { /* every reversed iteration adds its share: -0.0 + c == c */
        const scan_desc *k = &r->d->in[r->nc + i];
        r->be->iface.mem_fill(r->ct_k_acc[0] + r->k_off[i], k->dt, -0.0, (size_t)remat_shape_numel(&k->shape));
    }
}

void rmi_while_rt_finish(while_rt *r, void *const *ct_ks)
{
    for (int i = 0; i < r->nk; i++) {
        const scan_desc *k = &r->d->in[r->nc + i];
        if (r->reversed == 0) /* nothing accepted: a plain zero, not -0.0 */
            r->be->iface.mem_fill(ct_ks[i], k->dt, 0.0, (size_t)remat_shape_numel(&k->shape));
        else
            r->be->iface.mem_copy(ct_ks[i], r->ct_k_acc[0] + r->k_off[i], rmi_loop_rt_bytes(k));
    }
}

/* The flag the last cond or body execution wrote, read to the host. */
static bool read_flag(const while_rt *r, remat_dtype dt)
{
    if (dt == REMAT_F64) {
        double v;
        rmi_while_rt_to_host(r, &v, r->flag, sizeof v);
        return v != 0;
    }
    float v;
    rmi_while_rt_to_host(r, &v, r->flag, sizeof v);
    return v != 0;
}

static void set_carry_inputs(while_rt *r, const char *carry)
{
    for (int i = 0; i < r->nc; i++)
        r->fin[i] = carry + r->carry_off[i];
}

static void set_carry_outputs(while_rt *r)
{
    for (int i = 0; i < r->nc; i++)
        r->fout[i] = r->next + r->carry_off[i];
    r->fout[r->nc] = r->flag;
}

bool rmi_while_rt_cond(while_rt *r, const char *carry)
{
    set_carry_inputs(r, carry);
    void *out[1] = {r->flag};
    rmi_program_exec(r->p_cond, r->fin, out);
    return read_flag(r, r->d->cond_dt);
}

/* after the body wrote next and the flag: iteration k's bit, and the select */
static void settle(while_rt *r, int64_t k)
{
    const bool acc = read_flag(r, r->d->acc_dt);
    rmi_while_rt_set_bit(r, k, acc);
    if (!acc)
        for (int i = 0; i < r->nd; i++)
            r->be->iface.mem_copy(r->next + r->carry_off[i], r->cur + r->carry_off[i],
                                  rmi_loop_rt_bytes(&r->d->in[i]));
    r->evals++;
}

/* iteration k from cur into next, plain (no tape) */
void rmi_while_rt_eval(while_rt *r, int64_t k)
{
    set_carry_inputs(r, r->cur);
    set_carry_outputs(r);
    rmi_program_exec(r->p_body, r->fin, r->fout);
    settle(r, k);
}

void rmi_while_rt_step(while_rt *r, int64_t k)
{
    if (r->pending != k)
        rmi_while_rt_eval(r, k);
    r->pending = -1;
    rmi_loop_rt_swap(&r->cur, &r->next);
}

static void tape_one(while_rt *r, int64_t k, char *tp)
{
    if (k < r->known && !rmi_while_rt_bit(r, k)) { /* rejected: no tape */
        rmi_while_rt_step(r, k);
        return;
    }
    r->pending = -1;
    set_carry_inputs(r, r->cur);
    set_carry_outputs(r);
    rmi_loop_rt_tape_out(r->fout + r->nc + 1, tp, r->d->vjp->res_off, r->res_taped, r->n_taped);
    rmi_program_exec(r->p_fwd, r->fin, r->fout);
    settle(r, k);
    rmi_loop_rt_swap(&r->cur, &r->next);
}

/* backward of accepted iteration k from its tape; ct_cur holds the
 * cotangent of the differentiated carries after it */
static void reverse_one(while_rt *r, int64_t k, const char *tp)
{
    if (!rmi_while_rt_bit(r, k))
        return;
    const int nc = r->nc, nd = r->nd, nres = r->nres;
    const void **in = r->bin;
    void **out = r->bout;
    rmi_loop_rt_tape_in(in, tp, r->d->vjp->res_off, r->res_taped, r->n_taped);
    for (int i = 0; i < nc; i++) { /* control carries and the flag: zero cotangents (stop_gradient) */
        in[nres + i] = (i < nd ? r->ct_cur : r->zeros) + r->carry_off[i];
        out[i] = (i < nd ? r->ct_next : r->ct_dummy) + r->carry_off[i];
    }
    in[nres + nc] = r->zeros;
    for (int i = 0; i < r->nk; i++)
        out[nc + i] = r->ct_k_tmp + r->k_off[i];
    rmi_program_exec(r->p_bwd, in, out);
    rmi_loop_rt_add_ct_ks(r->k_add, r->nk, r->ct_k_acc, r->ct_k_tmp, r->k_off); /* in iteration order n-1 .. 0 */
    rmi_loop_rt_swap(&r->ct_cur, &r->ct_next);
    r->reversed++;
}

/* ---- the ops ---- */

static void x_advance(void *x, int64_t step, int64_t n)
{
    for (int64_t q = 0; q < n; q++)
        rmi_while_rt_step(x, step + q);
}

void rmi_while_rt_snapshot(void *x, int slot)
{
    while_rt *r = x;
    r->be->iface.mem_copy(rmi_while_rt_slot(r, slot), r->cur, r->d->carry_bytes);
}

void rmi_while_rt_restore(void *x, int slot)
{
    while_rt *r = x;
    r->pending = -1;
    r->be->iface.mem_copy(r->cur, rmi_while_rt_slot(r, slot), r->d->carry_bytes);
}

static void x_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    for (int64_t q = 0; q < n; q++) {
        rmi_while_rt_snapshot(x, (int)(slot + q * dslot));
        rmi_while_rt_step(x, step + q);
    }
}

static void x_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    for (int64_t q = 0; q < n; q++)
        tape_one(x, step + q, rmi_while_rt_tape(x, tape + q));
}

static void x_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    for (int64_t q = 0; q < n; q++)
        reverse_one(x, step - q, rmi_while_rt_tape(x, tape - q));
}

static void x_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    while_rt *r = x;
    REMAT_ASSERT(slot >= 0 || n == 1);
    for (int64_t q = 0; q < n; q++) {
        if (slot >= 0)
            rmi_while_rt_restore(x, (int)(slot + q * dslot));
        if (!rmi_while_rt_bit(r, step - q)) /* rejected: absent from the reverse pass */
            continue;
        tape_one(r, step - q, r->tmp_tape);
        reverse_one(r, step - q, r->tmp_tape);
    }
}

static const scan_executor interp = {
    .advance = x_advance, .snapshot = rmi_while_rt_snapshot, .restore = rmi_while_rt_restore, .shot_advance = x_shot_advance,
    .tape = x_tape, .reverse = x_reverse, .recompute = x_recompute,
};

void rmi_while_rt_run(void *x, const scan_xop *ops, int64_t n) { scan_walk(&interp, x, ops, n); }
