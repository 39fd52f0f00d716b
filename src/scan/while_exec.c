/*
 * while_exec.c — a while loop as a loop kind of the one interpreted
 * executor (loop_exec.c): the cond, a plain iteration (with the lookahead
 * of a pending evaluation), the accepted flag's bit and the select after
 * an evaluation, the backward half's zero cotangents of the control
 * carries and the flag. A rejected iteration has no tape and no reverse:
 * absent from the adjoint.
 */
#include "scan/loop_rt.h"
#include "scan/while_rt.h"

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
    for (int i = 0; i < r->c.nc; i++)
        r->c.fin[i] = carry + r->c.carry_off[i];
}

static void set_carry_outputs(while_rt *r)
{
    for (int i = 0; i < r->c.nc; i++)
        r->c.fout[i] = r->c.next + r->c.carry_off[i];
    r->c.fout[r->c.nc] = r->flag;
}

bool rmi_while_rt_cond(while_rt *r, const char *carry)
{
    set_carry_inputs(r, carry);
    void *out[1] = {r->flag};
    rmi_program_exec(r->c.cx, r->p_cond, r->c.fin, out);
    return read_flag(r, r->d->cond_dt);
}

/* after the body wrote next and the flag: iteration k's bit, and the select */
static void settle(loop_core *c, int64_t k)
{
    while_rt *r = (while_rt *)c;
    const bool acc = read_flag(r, r->d->acc_dt);
    rmi_while_rt_set_bit(r, k, acc);
    if (!acc)
        for (int i = 0; i < r->nd; i++)
            r->c.be->iface.mem_copy(r->c.cx, r->c.next + r->c.carry_off[i], r->c.cur + r->c.carry_off[i],
                                  rmi_loop_rt_bytes(&r->d->in[i]));
}

/* iteration k from cur into next, plain (no tape) */
void rmi_while_rt_eval(while_rt *r, int64_t k)
{
    set_carry_inputs(r, r->c.cur);
    set_carry_outputs(r);
    rmi_program_exec(r->c.cx, r->p_body, r->c.fin, r->c.fout);
    settle(&r->c, k);
    r->c.evals++;
}

void rmi_while_rt_step(while_rt *r, int64_t k)
{
    if (r->pending != k)
        rmi_while_rt_eval(r, k);
    r->pending = -1;
    rmi_loop_rt_swap(&r->c.cur, &r->c.next);
}

static void advance(loop_core *c, int64_t k) { rmi_while_rt_step((while_rt *)c, k); }

static void step_io(loop_core *c, int64_t k)
{
    (void)k;
    while_rt *r = (while_rt *)c;
    r->pending = -1;
    set_carry_inputs(r, r->c.cur);
    set_carry_outputs(r);
}

/* backward of accepted iteration k's arguments: the differentiated
 * carries' cotangent; control carries and the flag get zero cotangents
 * (stop_gradient), their cotangents go to a dummy */
static void reverse_io(loop_core *c, int64_t k)
{
    (void)k;
    while_rt *r = (while_rt *)c;
    const int nc = r->c.nc, nd = r->nd, nres = r->c.nres;
    const void **in = r->c.bin;
    void **out = r->c.bout;
    for (int i = 0; i < nc; i++) {
        in[nres + i] = (i < nd ? r->c.ct_cur : r->zeros) + r->c.carry_off[i];
        out[i] = (i < nd ? r->c.ct_next : r->ct_dummy) + r->c.carry_off[i];
    }
    in[nres + nc] = r->zeros;
}

/* iteration k has a tape and a reverse when accepted (not yet evaluated:
 * the forward pass's first evaluation decides, with its tape) */
static bool taped(const loop_core *c, int64_t k)
{
    const while_rt *r = (const while_rt *)c;
    return k >= r->known || rmi_while_rt_bit(r, k);
}

static void restored(loop_core *c) { ((while_rt *)c)->pending = -1; }

/* a while loop: the plain step evaluates cond's lookahead, a step settles
 * its flag, rejected iterations are untaped */
const loop_kind rmi_while_loop_kind = {.advance = advance, .step_io = step_io, .stepped = settle,
                                       .reverse_io = reverse_io, .taped = taped, .restored = restored,
                                       .name = "while"};
