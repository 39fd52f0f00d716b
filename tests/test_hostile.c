/*
 * test_hostile.c — input built to break the core: shapes whose byte size
 * overflows, tensors of invalid rank, overlapping run buffers, integer
 * overflow in parameters, REMAT_NONE operands (NULL to every public
 * function: test_hostile_null.c).
 */
#include "test_util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

#define BIG ((int64_t)1 << 62)

/* v is REMAT_NONE, f's status is st, and its message names every needle */
static void expect_fail(remat_fn *f, remat_val v, remat_status st, const char *n1, const char *n2)
{
    assert_int_equal(v, REMAT_NONE);
    if (remat_fn_status(f) != st)
        fail_msg("status %s, want %s (%s)", remat_status_name(remat_fn_status(f)), remat_status_name(st),
                 remat_fn_error(f));
    if (n1)
        assert_contains(remat_fn_error(f), n1);
    if (n2)
        assert_contains(remat_fn_error(f), n2);
    remat_fn_clear_error(f);
}

static void test_hostile_overflowing_shapes_are_refused_when_built(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("big");
    double one = 1;
    expect_fail(f, remat_arg(f, "x", REMAT_F64, 2, DIMS(BIG + 1, 4)), REMAT_ERR_SHAPE, "argument",
                "f64[4611686018427387905,4]");
    /* 2^61 f64 elements: the count fits in int64, the byte size does not */
    expect_fail(f, remat_arg(f, "x", REMAT_F64, 1, DIMS(BIG / 2)), REMAT_ERR_SHAPE, "argument", "too large");
    expect_fail(f, remat_arg(f, "x", REMAT_F32, 3, DIMS(INT64_MAX, INT64_MAX, 2)), REMAT_ERR_SHAPE, "argument",
                NULL);
    expect_fail(f, remat_const_fill(f, REMAT_F32, 2, DIMS(BIG, BIG), 0.0), REMAT_ERR_SHAPE, "constant", NULL);
    expect_fail(f, remat_const_data(f, REMAT_F64, 2, DIMS(BIG + 1, 4), &one), REMAT_ERR_SHAPE, "constant", NULL);
    /* an empty array is fine whatever its other dims */
    assert_true(remat_arg(f, "e", REMAT_F64, 2, DIMS(0, INT64_MAX)) != REMAT_NONE);
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(4));
    assert_true(x != REMAT_NONE);
    expect_fail(f, remat_reshape(f, x, 2, DIMS(BIG + 1, 4)), REMAT_ERR_SHAPE, "reshape", NULL);
    expect_fail(f, remat_broadcast_to(f, x, 2, DIMS(BIG + 1, 4)), REMAT_ERR_SHAPE, "broadcast_in_dim", NULL);
    expect_fail(f, remat_broadcast_in_dim(f, x, 2, DIMS(BIG, 4), (const int[]){1}), REMAT_ERR_SHAPE,
                "broadcast_in_dim", NULL);
    expect_fail(f, remat_pad(f, x, DIMS(INT64_MAX - 2), DIMS(INT64_MAX - 2), NULL), REMAT_ERR_SHAPE, "pad", NULL);
    expect_fail(f, remat_pad(f, x, DIMS(0), DIMS(0), DIMS(INT64_MAX / 2)), REMAT_ERR_SHAPE, "pad", NULL);
    expect_fail(f, remat_pad(f, x, DIMS(BIG), DIMS(0), NULL), REMAT_ERR_SHAPE, "pad", "too large");
    remat_val h = remat_arg(f, "h", REMAT_F64, 1, DIMS(INT64_MAX / 2));
    (void)h; /* too large already as an argument */
    remat_fn_clear_error(f);
    remat_fn_free(f);
}

static void test_hostile_invalid_rank_is_named_not_printed_past_dims(void **state)
{
    (void)state;
    char buf[256];
    remat_shape s = {.rank = 99};
    remat_shape_format(REMAT_F32, &s, buf, sizeof buf);
    assert_contains(buf, "invalid rank 99");
    s.rank = -3;
    remat_shape_format(REMAT_F32, &s, buf, sizeof buf);
    assert_contains(buf, "invalid rank -3");
    assert_int_equal(remat_shape_numel(&(remat_shape){.rank = 99}), -1);
    /* remat_tensor_f64 with a bad rank gives an invalid shape, not an abort */
    double x[4] = {1, 2, 3, 4}, y[4] = {0};
    remat_tensor bad = remat_tensor_f64(x, 99, DIMS(1, 2, 3));
    assert_int_equal(bad.shape.rank, 99);
    assert_int_equal(remat_tensor_bytes(&bad), 0);

    remat_fn *f = remat_fn_new("sq");
    remat_val a = remat_arg(f, "x", REMAT_F64, 1, DIMS(4));
    remat_fn_output(f, remat_square(f, a));
    remat_program *p = compile_ok(f);
    remat_tensor out = remat_tensor_f64(y, 1, DIMS(4));
    assert_int_equal(remat_run(p, 1, &bad, 1, &out, NULL), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "invalid rank 99");
    /* an overflowing caller shape is a mismatch, never a read past x */
    remat_tensor huge = remat_tensor_f64(x, 2, DIMS(BIG + 1, 4));
    assert_int_equal(remat_run(p, 1, &huge, 1, &out, NULL), REMAT_ERR_SHAPE);
    remat_program_free(p);
    remat_fn_free(f);
}

static void test_hostile_run_refuses_overlapping_buffers(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("two");
    remat_val a = remat_arg(f, "a", REMAT_F64, 1, DIMS(4)), b = remat_arg(f, "b", REMAT_F64, 1, DIMS(4));
    remat_fn_output(f, remat_add(f, a, b));
    remat_fn_output(f, remat_mul(f, a, b));
    remat_program *p = compile_ok(f);
    double buf[16] = {1, 2, 3, 4, 5, 6, 7, 8}, keep[16];
    memcpy(keep, buf, sizeof buf);
    remat_tensor in[2] = {remat_tensor_f64(buf, 1, DIMS(4)), remat_tensor_f64(buf + 4, 1, DIMS(4))};
    remat_tensor out[2] = {remat_tensor_f64(buf + 8, 1, DIMS(4)), remat_tensor_f64(buf + 12, 1, DIMS(4))};
    /* disjoint: fine; the inputs may share memory (they are only read) */
    assert_int_equal(remat_run(p, 2, in, 2, out, NULL), REMAT_OK);
    assert_true(buf[8] == 6 && buf[12] == 5);
    remat_tensor same_in[2] = {in[0], in[0]};
    assert_int_equal(remat_run(p, 2, same_in, 2, out, NULL), REMAT_OK);
    memcpy(buf, keep, sizeof buf);
    /* output 1 is input 1 */
    out[1] = remat_tensor_f64(buf + 4, 1, DIMS(4));
    assert_int_equal(remat_run(p, 2, in, 2, out, NULL), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "output 1 overlaps input 1");
    /* output 0 shares its last element with input 0 */
    out[0] = remat_tensor_f64(buf + 3, 1, DIMS(4));
    out[1] = remat_tensor_f64(buf + 12, 1, DIMS(4));
    assert_int_equal(remat_run(p, 2, in, 2, out, NULL), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "output 0 overlaps input 0");
    /* the two outputs overlap each other */
    out[0] = remat_tensor_f64(buf + 10, 1, DIMS(4));
    assert_int_equal(remat_run(p, 2, in, 2, out, NULL), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "output 1 overlaps output 0");
    assert_memory_equal(buf, keep, sizeof buf); /* nothing was written */
    remat_program_free(p);
    remat_fn_free(f);
}

/* d/dx x^INT_MIN = INT_MIN * x^(INT_MIN-1): the rule must not form k - 1 */
static void test_hostile_integer_pow_int_min_gradient_is_defined(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("ipow");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(4));
    remat_fn_output(f, remat_sum_all(f, remat_integer_pow(f, x, INT_MIN)));
    remat_fn *g = grad_ok(f, 0, NULL);
    double xv[4] = {1.0, -1.0, 0.5, 2.0};
    remat_tensor in = remat_tensor_f64(xv, 1, DIMS(4));
    outs_t o;
    run_fn(g, 1, &in, &o, NULL, NULL);
    const double *gx = o.t[0].data;
    assert_true(gx[0] == (double)INT_MIN);  /* INT_MIN * 1^(odd) */
    assert_true(gx[1] == -(double)INT_MIN); /* INT_MIN * (-1)^(odd) */
    /* 0.5^(INT_MIN-1) = inf and 2^(INT_MIN-1) = 0 (a wrapped k-1 = INT_MAX
     * gives the opposite) */
    assert_true(isinf(gx[2]) && gx[2] < 0);
    assert_true(gx[3] == 0);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);
}

static void test_hostile_ode_step_counts_past_2_53_are_out_of_range(void **state)
{
    (void)state;
    const double times[3] = {1, 2, 3};
    int64_t steps[3], total = -1;
    remat_ode_options o = {.method = REMAT_ODE_EULER, .t0 = 0, .n_times = 3, .times = times, .steps = INT64_MAX};
    assert_int_equal(remat_ode_count_steps(&o, steps, &total), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "out of range");
    assert_int_equal(total, -1);
    o.steps = INT64_MAX / 2; /* each fits, the sum would overflow */
    assert_int_equal(remat_ode_count_steps(&o, steps, &total), REMAT_ERR_VALUE);
    o.steps = 0;
    o.dt = 1e-18; /* 1e18 steps per interval: 3e18 in all */
    assert_int_equal(remat_ode_count_steps(&o, steps, &total), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "out of range");
    o.dt = 0.25;
    assert_ok(remat_ode_count_steps(&o, steps, &total));
    assert_int_equal(total, 12);
}

/* remat_add(f, a, REMAT_NONE) on a function with no error is an error now */
static void test_hostile_none_operand_is_an_error_when_used(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("none");
    remat_val a = remat_arg(f, "a", REMAT_F64, 0, NULL);
    assert_int_equal(remat_add(f, a, REMAT_NONE), REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_ARG);
    assert_contains(remat_fn_error(f), "REMAT_NONE");
    remat_fn_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_overflowing_shapes_are_refused_when_built),
        cmocka_unit_test(test_hostile_invalid_rank_is_named_not_printed_past_dims),
        cmocka_unit_test(test_hostile_run_refuses_overlapping_buffers),
        cmocka_unit_test(test_hostile_integer_pow_int_min_gradient_is_defined),
        cmocka_unit_test(test_hostile_ode_step_counts_past_2_53_are_out_of_range),
        cmocka_unit_test(test_hostile_none_operand_is_an_error_when_used),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
