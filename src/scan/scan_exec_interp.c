/*
 * scan_exec_interp.c — a scan as a loop kind of the one interpreted
 * executor (loop_exec.c): a step's arguments (the carry, x_t, y_t into ys
 * or a dummy; backward, ct_y_t and ct_x_t) and its plain step, the primal
 * body. Every step is taped.
 */
#include "scan/loop_rt.h"
#include "scan/scan_rt.h"

/* carry and x_t of step k (the consts are bound already) */
static void set_step_inputs(scan_rt *r, int64_t k, const char *carry)
{
    const void **in = r->c.fin;
    for (int i = 0; i < r->c.nc; i++)
        in[i] = carry + r->c.carry_off[i];
    if (r->nx > 0) {
        const int64_t t = rmi_scan_rt_step(r, k);
        for (int i = 0; i < r->nx; i++)
            in[r->c.nc + i] = (const char *)r->xs[i] + (size_t)t * r->x_step[i];
    }
}

/* outputs of the primal/forward bodies: next carry, y_t (into ys or a dummy) */
static void set_step_outputs(scan_rt *r, int64_t k, char *next)
{
    void **out = r->c.fout;
    for (int i = 0; i < r->c.nc; i++)
        out[i] = next + r->c.carry_off[i];
    if (r->ny > 0) {
        const int64_t t = rmi_scan_rt_step(r, k);
        size_t dy = 0;
        for (int i = 0; i < r->ny; i++) {
            out[r->c.nc + i] = r->ys ? (char *)r->ys[i] + (size_t)t * r->y_step[i] : r->dummy_y + dy;
            dy += rmi_scan_align(r->y_step[i]);
        }
    }
}

static void advance_one(loop_core *c, int64_t k)
{
    scan_rt *r = (scan_rt *)c;
    set_step_inputs(r, k, r->c.cur);
    set_step_outputs(r, k, r->c.next);
    rmi_program_exec(r->c.cx, r->p_primal, r->c.fin, r->c.fout);
    rmi_loop_rt_swap(&r->c.cur, &r->c.next);
    r->c.evals++;
}

/* unroll steps k .. k+unroll-1 as one run of the unrolled sub-program,
 * as many whole groups as n holds (the same ops in the same order as
 * advance_one's, so the same bits) */
static int64_t advance_group(loop_core *c, int64_t k, int64_t n)
{
    scan_rt *r = (scan_rt *)c;
    const int u = r->unroll, nc = r->c.nc, nx = r->nx, ny = r->ny, nk = r->c.nk;
    if (!r->p_unrolled)
        return 0;
    int64_t done = 0;
    for (; n - done >= u; done += u) {
        for (int i = 0; i < nc; i++) {
            r->u_in[i] = r->c.cur + r->c.carry_off[i];
            r->u_out[i] = r->c.next + r->c.carry_off[i];
        }
        size_t dy = 0;
        for (int j = 0; j < u; j++) {
            const int64_t t = rmi_scan_rt_step(r, k + done + j);
            for (int i = 0; i < nx; i++)
                r->u_in[nc + j * nx + i] = (const char *)r->xs[i] + (size_t)t * r->x_step[i];
            for (int i = 0; i < ny; i++) {
                r->u_out[nc + j * ny + i] = r->ys ? (char *)r->ys[i] + (size_t)t * r->y_step[i] : r->u_dummy_y + dy;
                dy += rmi_scan_align(r->y_step[i]);
            }
        }
        for (int i = 0; i < nk; i++)
            r->u_in[nc + u * nx + i] = r->c.fin[r->c.k_in0 + i];
        rmi_program_exec(r->c.cx, r->p_unrolled, r->u_in, r->u_out);
        rmi_loop_rt_swap(&r->c.cur, &r->c.next);
        r->c.evals += u;
    }
    return done;
}

static void step_io(loop_core *c, int64_t k)
{
    scan_rt *r = (scan_rt *)c;
    set_step_inputs(r, k, r->c.cur);
    set_step_outputs(r, k, r->c.next);
}

/* backward of step k's arguments: the carry's cotangent, x_t the residuals
 * read, ct_y_t, and ct_x_t out */
static void reverse_io(loop_core *c, int64_t k)
{
    scan_rt *r = (scan_rt *)c;
    const int nc = r->c.nc, nx = r->nx, ny = r->ny, nres = r->c.nres;
    const void **in = r->c.bin;
    void **out = r->c.bout;
    for (int i = 0; i < nc; i++)
        in[nres + i] = r->c.ct_cur + r->c.carry_off[i];
    for (int i = 0; i < nc; i++)
        out[i] = r->c.ct_next + r->c.carry_off[i];
    if (nx > 0 || ny > 0) {
        const int64_t t = rmi_scan_rt_step(r, k);
        for (int q = 0; q < r->n_res_x; q++) {
            const int j = r->res_x[2 * q], i = r->res_x[2 * q + 1];
            in[j] = (const char *)r->xs[i] + (size_t)t * r->x_step[i];
        }
        for (int i = 0; i < ny; i++)
            in[nres + nc + i] = (const char *)r->ct_ys[i] + (size_t)t * r->y_step[i];
        for (int i = 0; i < nx; i++)
            out[nc + i] = (char *)r->ct_xs[i] + (size_t)t * r->x_step[i];
    }
}

/* a scan: every step taped, nothing to do after a step or a restore */
const loop_kind rmi_scan_loop_kind = {.advance = advance_one, .advance_group = advance_group, .step_io = step_io,
                                      .reverse_io = reverse_io, .name = "scan"};

const scan_rt_exec rmi_scan_exec_interp = {.run = rmi_loop_run,
                                             .carry_in = rmi_scan_rt_copy_carry_in,
                                             .carry_out = rmi_scan_rt_copy_carry_out};
