/* test_scan_jit_util.c — runs, schedules and the Euler body the compiled-loop suites share (test_scan_jit_util.h). */
#include "test_scan_jit_util.h"

#include <stdlib.h>

void run_mode(const remat_fn *g, int n_in, const remat_tensor *in, int jit, result *r)
{
    if (jit)
        unsetenv("REMAT_NO_JIT");
    else
        setenv("REMAT_NO_JIT", "1", 1);
    run_fn(g, n_in, in, &r->o, &r->st, &r->plan);
    unsetenv("REMAT_NO_JIT");
    assert_int_equal(r->st.peak_arena_bytes, r->plan.arena_bytes);
}

const char *const jit_schedules[] = {"store-all",  "per-step",   "periodic:3", "two-level",
                                     "binomial:1", "binomial:4", "online:2",   "online:5"};
const int n_jit_schedules = (int)(sizeof jit_schedules / sizeof jit_schedules[0]);

remat_scan_options opts(const char *sched, int reverse, const remat_policy *pol)
{
    remat_scan_options o = {.reverse = reverse != 0, .body_policy = pol};
    if (remat_schedule_parse(sched, &o.schedule) != REMAT_OK)
        fail_msg("schedule %s: %s", sched, remat_last_error());
    return o;
}

remat_fn *euler_body(remat_dtype dt, int64_t m, int rows)
{
    remat_fn *b = remat_fn_new("euler");
    const int64_t *ydims = m == 0 ? DIMS(3) : rows ? DIMS(3, m) : DIMS(m, 3);
    remat_val y = remat_arg(b, "y", dt, m == 0 ? 1 : 2, ydims);
    remat_val k1 = remat_arg(b, "k1", dt, m == 0 ? 0 : 1, DIMS(m));
    remat_val k2 = remat_arg(b, "k2", dt, m == 0 ? 0 : 1, DIMS(m));
    remat_val a, bb;
    if (m == 0 || rows) {
        a = remat_index(b, y, 0), bb = remat_index(b, y, 1);
    } else {
        a = remat_reshape(b, remat_slice(b, y, DIMS(0, 0), DIMS(m, 1), NULL), 1, DIMS(m));
        bb = remat_reshape(b, remat_slice(b, y, DIMS(0, 1), DIMS(m, 2), NULL), 1, DIMS(m));
    }
    remat_val r1 = remat_mul(b, k1, a), r2 = remat_mul(b, k2, bb);
    const int64_t *pd = m == 0 ? DIMS(1) : rows ? DIMS(1, m) : DIMS(m, 1);
    const int pr = m == 0 ? 1 : 2;
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), pr, pd), remat_reshape(b, remat_sub(b, r1, r2), pr, pd),
                          remat_reshape(b, r2, pr, pd)};
    remat_val dy = remat_concatenate(b, 3, parts, m == 0 || rows ? 0 : 1);
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, dy, 0.01)));
    assert_fn_ok(b);
    return b;
}

remat_fn *scan_loss(const remat_fn *body, int64_t len, int n_args, const remat_dtype *dt,
                    const remat_shape *shapes, int n_carry, int n_xs, const remat_scan_options *o, int n_ys)
{
    remat_fn *f = remat_fn_new("scan_loss");
    remat_val a[8], c[8], ys[48];
    for (int i = 0; i < n_args; i++)
        a[i] = remat_arg(f, "a", dt[i], shapes[i].rank, shapes[i].dims);
    scan_ok(f, body, len, n_carry, a, n_xs, a + n_carry, n_args - n_carry - n_xs, a + n_carry + n_xs, o, c,
            n_ys ? ys : NULL);
    remat_val l = remat_sum_all(f, remat_sin(f, c[0]));
    for (int i = 1; i < n_carry; i++)
        l = remat_add(f, l, remat_convert(f, remat_sum_all(f, remat_sin(f, c[i])), dt[0]));
    for (int i = 0; i < n_ys; i++)
        l = remat_add(f, l, remat_convert(f, remat_sum_all(f, remat_cos(f, ys[i])), dt[0]));
    remat_fn_output(f, l);
    assert_fn_ok(f);
    return f;
}

euler_case euler_case_new(remat_dtype dt, int64_t m, int rows)
{
    euler_case c = {.body = euler_body(dt, m, rows)};
    const int r = m == 0 ? 0 : 1; /* rank of k */
    c.in[0] = t_rand(dt, r + 1, m == 0 ? DIMS(3) : rows ? DIMS(3, m) : DIMS(m, 3), 0, 1);
    c.in[1] = t_rand(dt, r, DIMS(m), 0.5, 1.5);
    c.in[2] = t_rand(dt, r, DIMS(m), 0.2, 0.8);
    return c;
}

remat_fn *euler_loss(const euler_case *c, const remat_scan_options *o, int64_t len)
{
    const remat_dtype dt[3] = {c->in[0].dtype, c->in[1].dtype, c->in[2].dtype};
    const remat_shape sh[3] = {c->in[0].shape, c->in[1].shape, c->in[2].shape};
    return scan_loss(c->body, len, 3, dt, sh, 1, 0, o, 0);
}

void euler_case_free(euler_case *c)
{
    t_free_all(3, c->in);
    remat_fn_free(c->body);
    c->body = NULL;
}
