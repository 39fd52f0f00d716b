/*
 * while_models.h — the while-loop model the test_while*.c files share:
 * explicit Euler for y' = -k y (y and k of shape (2)) with control carries
 * t (time) and r (1: the step is accepted), until t >= T:
 *
 *   cond(y, t, r, k, T, h) = t < T
 *   body(y, t, r, k, T, h) = (y + (h * -k y) / r, t + r h, r', r)
 *
 * r' = 1 keeps every step; r' = 1 - r from r = 0 rejects every other
 * iteration, whose candidate y divides by zero (inf / NaN): any trace of it
 * in the reverse pass would show. The accepted iterations compute exactly
 * what the loop without rejections computes, so gradients are bitwise equal.
 * The loss, sum(y_n^2) + sum(y_n), reads only the differentiated carry.
 */
#ifndef REMAT_TEST_WHILE_MODELS_H
#define REMAT_TEST_WHILE_MODELS_H

#include "test_util.h"

#include <stdbool.h>

static inline remat_fn *cond_fn(void)
{
    remat_fn *c = remat_fn_new("t_below_T");
    remat_arg(c, "y", REMAT_F64, 1, DIMS(2));
    remat_val t = remat_arg(c, "t", REMAT_F64, 0, NULL);
    remat_arg(c, "r", REMAT_F64, 0, NULL);
    remat_arg(c, "k", REMAT_F64, 1, DIMS(2));
    remat_val T = remat_arg(c, "T", REMAT_F64, 0, NULL);
    remat_arg(c, "h", REMAT_F64, 0, NULL);
    remat_fn_output(c, remat_lt(c, t, T));
    assert_fn_ok(c);
    return c;
}

static inline remat_fn *body_fn(bool reject)
{
    remat_fn *b = remat_fn_new(reject ? "euler_rejecting" : "euler");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, DIMS(2));
    remat_val t = remat_arg(b, "t", REMAT_F64, 0, NULL);
    remat_val r = remat_arg(b, "r", REMAT_F64, 0, NULL);
    remat_val k = remat_arg(b, "k", REMAT_F64, 1, DIMS(2));
    remat_arg(b, "T", REMAT_F64, 0, NULL);
    remat_val h = remat_arg(b, "h", REMAT_F64, 0, NULL);
    remat_val dy = remat_mul(b, h, remat_neg(b, remat_mul(b, k, y)));
    remat_fn_output(b, remat_add(b, y, remat_div(b, dy, r)));
    remat_fn_output(b, remat_add(b, t, remat_mul(b, r, h)));
    remat_fn_output(b, reject ? remat_sub(b, remat_scalar(b, REMAT_F64, 1.0), r) : remat_scalar(b, REMAT_F64, 1.0));
    remat_fn_output(b, r);
    assert_fn_ok(b);
    return b;
}

/* loss(y0 (2), k (2), T, h) through the while (unroll < 0) or the same
 * body called `unroll` times by hand; r0 = 0 with rejections, 1 without */
static inline remat_fn *model(bool reject, int64_t unroll, const remat_schedule_spec *spec, int64_t max_steps)
{
    remat_fn *c = cond_fn(), *b = body_fn(reject);
    remat_fn *f = remat_fn_new(unroll < 0 ? "loss_while" : "loss_unrolled");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val T = remat_arg(f, "T", REMAT_F64, 0, NULL), h = remat_arg(f, "h", REMAT_F64, 0, NULL);
    remat_val init[3] = {y0, remat_scalar(f, REMAT_F64, 0.0), remat_scalar(f, REMAT_F64, reject ? 0.0 : 1.0)};
    remat_val ks[3] = {k, T, h}, out[3];
    if (unroll < 0) {
        remat_while_options opt = {.max_steps = max_steps, .schedule = spec};
        assert_ok(remat_while(f, c, b, 3, 1, init, 3, ks, &opt, out, NULL));
    } else {
        memcpy(out, init, sizeof out);
        for (int64_t i = 0; i < unroll; i++) {
            remat_val o[4];
            assert_ok(remat_call(f, b, 6, (remat_val[]){out[0], out[1], out[2], k, T, h}, o));
            out[0] = reject ? remat_select(f, o[3], o[0], out[0]) : o[0];
            out[1] = o[1];
            out[2] = o[2];
        }
    }
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_square(f, out[0])), remat_sum_all(f, out[0])));
    assert_fn_ok(f);
    remat_fn_free(c);
    remat_fn_free(b);
    return f;
}

#endif
