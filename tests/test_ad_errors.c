/*
 * test_ad_errors.c — bad input to building, differentiating and running:
 * every error names the op, the shapes and the caller's line, leaves outputs
 * untouched, and NULL handles are refused without a crash.
 */
#include "test_ad_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

static remat_shape shape_of(int rank, const int64_t *dims) { return remat_shape_make(rank, dims); }

/* ==== 5. bad input ==== */

/* v is the result of a bad call made at `line` of this file */
static void expect_build_error(remat_fn *f, remat_val v, remat_status st, int line, const char *op, const char *s1,
                               const char *s2)
{
    char loc[64];
    snprintf(loc, sizeof loc, "test_ad_errors.c:%d", line);
    assert_int_equal(v, REMAT_NONE);
    if (remat_fn_status(f) != st)
        fail_msg("line %d: status %s, want %s (%s)", line, remat_status_name(remat_fn_status(f)),
                 remat_status_name(st), remat_fn_error(f));
    const char *msg = remat_fn_error(f);
    assert_contains(msg, loc);
    if (op && strchr(op, '|')) { /* either name */
        char a[64];
        snprintf(a, sizeof a, "%.*s", (int)(strchr(op, '|') - op), op);
        if (!contains(msg, a) && !contains(msg, strchr(op, '|') + 1))
            fail_msg("expected \"%s\" in message: %s", op, msg);
    } else if (op) {
        assert_contains(msg, op);
    }
    if (s1)
        assert_contains(msg, s1);
    if (s2)
        assert_contains(msg, s2);
    assert_contains(remat_last_error(), loc);
    remat_fn_clear_error(f);
    assert_int_equal(remat_fn_status(f), REMAT_OK);
}

static void expect_shape(const remat_fn *f, remat_val v, remat_dtype dt, int rank, const int64_t *dims)
{
    assert_true(v != REMAT_NONE);
    assert_int_equal(remat_val_dtype(f, v), dt);
    remat_shape s = remat_val_shape(f, v), want = shape_of(rank, dims);
    assert_true(remat_shape_equal(&s, &want));
}

static void test_ad_build_errors_name_op_shapes_and_caller_line(void **state)
{
    int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d45[2] = {4, 5}, d33[2] = {3, 3};
    remat_fn *f = remat_fn_new("bad");
    remat_val a = remat_arg(f, "a", REMAT_F32, 2, d23), b = remat_arg(f, "b", REMAT_F32, 2, d32);
    remat_val c = remat_arg(f, "c", REMAT_F32, 2, d45), e = remat_arg(f, "e", REMAT_F64, 2, d23);
    remat_val s = remat_arg(f, "s", REMAT_F32, 2, d33), v;
    remat_val t1 = remat_arg(f, "t1", REMAT_F32, 3, ((int64_t[]){2, 3, 4}));
    remat_val t2 = remat_arg(f, "t2", REMAT_F32, 3, ((int64_t[]){3, 4, 5}));
    remat_val r3 = remat_arg(f, "r3", REMAT_F32, 1, ((int64_t[]){3}));
    assert_fn_ok(f);
    int line;

    /* shape mismatches */
    v = remat_add(f, a, b); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "add", "f32[2,3]", "f32[3,2]");
    v = remat_matmul(f, a, c); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "matmul|dot_general", "f32[2,3]", "f32[4,5]");
    v = remat_matmul(f, a, t1); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "matmul", "f32[2,3]", "f32[2,3,4]");
    remat_dot_dims bd = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                         .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0}};
    v = remat_dot_general(f, t1, t2, &bd); line = __LINE__; /* batch 2 vs 3 */
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "dot_general", "f32[2,3,4]", "f32[3,4,5]");
    remat_dot_dims cd = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    v = remat_dot_general(f, a, c, &cd); line = __LINE__; /* contract 3 vs 5 */
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "dot_general", "f32[2,3]", "f32[4,5]");
    v = remat_concatenate(f, 2, ((remat_val[]){a, s}), 1); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "concatenate", "f32[2,3]", "f32[3,3]");
    v = remat_reshape(f, a, 2, ((int64_t[]){4, 2})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "reshape", "f32[2,3]", "f32[4,2]");
    v = remat_broadcast_in_dim(f, r3, 2, ((int64_t[]){2, 4}), ((int[]){1})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "broadcast_in_dim", "f32[3]", NULL);
    v = remat_select(f, a, a, b); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "select", "f32[2,3]", "f32[3,2]");

    /* dtype mismatches */
    v = remat_add(f, a, e); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "add", "f32[2,3]", "f64[2,3]");
    v = remat_mul(f, e, a); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "mul", "f64[2,3]", "f32[2,3]");
    v = remat_matmul(f, e, s); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "matmul|dot_general", "f64[2,3]", "f32[3,3]");
    v = remat_concatenate(f, 2, ((remat_val[]){a, e}), 0); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "concatenate", "f32[2,3]", "f64[2,3]");

    /* bad axes */
    v = remat_sum(f, a, 1, ((int[]){2})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "reduce_sum", "f32[2,3]", NULL);
    v = remat_sum(f, a, 2, ((int[]){1, -1})); line = __LINE__; /* -1 is 1 again */
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "reduce_sum", "f32[2,3]", NULL);
    v = remat_transpose(f, a, ((int[]){0, 0})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "transpose", "f32[2,3]", NULL);
    v = remat_transpose(f, a, ((int[]){0, 2})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "transpose", "f32[2,3]", NULL);
    v = remat_slice(f, a, ((int64_t[]){0, 1}), ((int64_t[]){2, 4}), NULL); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "slice", "f32[2,3]", NULL);
    v = remat_slice(f, a, ((int64_t[]){1, 0}), ((int64_t[]){0, 3}), NULL); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "slice", "f32[2,3]", NULL);
    v = remat_concatenate(f, 2, ((remat_val[]){a, a}), 2); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "concatenate", "f32[2,3]", NULL);
    remat_dot_dims ad = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0}};
    v = remat_dot_general(f, a, s, &ad); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "dot_general", "f32[2,3]", NULL);
    v = remat_broadcast_in_dim(f, a, 3, ((int64_t[]){2, 3, 4}), ((int[]){0, 5})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "broadcast_in_dim", "f32[2,3]", NULL);

    /* the first error wins; ops on REMAT_NONE stay quiet; valid ops keep working */
    v = remat_add(f, a, b); line = __LINE__;
    remat_val q = remat_sin(f, v);
    assert_int_equal(q, REMAT_NONE);
    q = remat_add(f, v, a);
    assert_int_equal(q, REMAT_NONE);
    v = remat_add(f, a, e); /* a second, different error: the function keeps the first */
    assert_int_equal(v, REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_SHAPE);
    char first[64];
    snprintf(first, sizeof first, "test_ad_errors.c:%d", line);
    assert_contains(remat_fn_error(f), first);
    assert_contains(remat_fn_error(f), "f32[3,2]");
    assert_contains(remat_last_error(), "f64[2,3]"); /* the thread's last error is the latest */
    remat_fn_clear_error(f);
    expect_shape(f, remat_matmul(f, a, s), REMAT_F32, 2, d23);
    expect_shape(f, remat_concatenate(f, 2, ((remat_val[]){a, a}), 0), REMAT_F32, 2, ((int64_t[]){4, 3}));
    expect_shape(f, remat_transpose(f, a, ((int[]){1, 0})), REMAT_F32, 2, d32);
    expect_shape(f, remat_sum(f, t1, 1, ((int[]){1})), REMAT_F32, 2, ((int64_t[]){2, 4}));
    expect_shape(f, remat_slice(f, a, ((int64_t[]){0, 1}), ((int64_t[]){2, 3}), NULL), REMAT_F32, 2,
                 ((int64_t[]){2, 2}));
    expect_shape(f, remat_broadcast_in_dim(f, r3, 2, ((int64_t[]){2, 3}), ((int[]){1})), REMAT_F32, 2, d23);
    expect_shape(f, remat_dot_general(f, t1, t1, &((remat_dot_dims){.n_contract = 1, .lhs_contract = {2},
                                                                     .rhs_contract = {2}, .n_batch = 1,
                                                                     .lhs_batch = {0}, .rhs_batch = {0}})),
                 REMAT_F32, 3, ((int64_t[]){2, 3, 3}));
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, a, a)));
    remat_fn *g = grad_ok(f, 1, ((int[]){0})); /* usable end to end */
    remat_fn_free(g);

    /* a function holding an error is refused by the transforms and the compiler */
    v = remat_add(f, a, b); line = __LINE__;
    remat_program *p = (remat_program *)0x1;
    g = (remat_fn *)0x1;
    assert_int_equal(remat_grad(f, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_null(g);
    assert_int_equal(remat_compile(f, remat_backend_cpu(), &p), REMAT_ERR_SHAPE);
    assert_null(p);
    assert_null(remat_checkpoint(f, NULL));
    remat_fn_free(f);
}

static void test_ad_run_rejects_bad_inputs_and_leaves_outputs_untouched(void **state)
{
    int64_t d2[1] = {2}, d3[1] = {3};
    remat_fn *f = remat_fn_new("sig");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, d2), y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, x), remat_sum_all(f, y)));
    remat_fn_output(f, remat_mul_scalar(f, y, 2.0));
    remat_program *p = compile_ok(f);
    double xv[3] = {1, 2, 3}, yv[3] = {10, 20, 30}, out0 = 12345.0, out1[3] = {7, 7, 7};
    float xf[2] = {1, 2};
    remat_tensor good[2] = {remat_tensor_f64(xv, 1, d2), remat_tensor_f64(yv, 1, d3)};
    remat_tensor outs[2] = {remat_tensor_f64(&out0, 0, NULL), remat_tensor_f64(out1, 1, d3)};
    const struct {
        remat_tensor in[2];
        int n_in;
        remat_tensor out[2];
        int n_out;
        remat_status st;
        const char *needle[3];
    } bad[] = {
        {{good[0]}, 1, {outs[0], outs[1]}, 2, REMAT_ERR_ARG, {"1 inputs", "takes 2"}},
        {{good[0], good[1]}, 2, {outs[0]}, 1, REMAT_ERR_ARG, {"1 outputs", "takes 2"}},
        {{remat_tensor_f64(xv, 1, d3), good[1]}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_SHAPE, {"'x'", "f64[3]", "f64[2]"}},
        {{good[0], remat_tensor_f64(yv, 1, d2)}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_SHAPE, {"'y'", "f64[2]", "f64[3]"}},
        {{remat_tensor_f32(xf, 1, d2), good[1]}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_DTYPE, {"'x'", "f32[2]", "f64[2]"}},
        {{remat_tensor_f64(NULL, 1, d2), good[1]}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_NULL, {"'x'", "NULL"}},
        {{good[0], good[1]}, 2, {outs[0], remat_tensor_f64(out1, 1, d2)}, 2, REMAT_ERR_SHAPE, {"output", "f64[2]", "f64[3]"}},
        {{good[0], good[1]}, 2, {outs[0], remat_tensor_f64(NULL, 1, d3)}, 2, REMAT_ERR_NULL, {"output", "NULL"}},
        {{good[0], good[1]}, 2, {remat_tensor_f32((float *)&out0, 0, NULL), outs[1]}, 2, REMAT_ERR_DTYPE, {"output", "f32[]", "f64[]"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remat_stats st;
        remat_clear_error();
        remat_status s = remat_run(p, bad[i].n_in, bad[i].in, bad[i].n_out, (remat_tensor *)bad[i].out, &st);
        if (s != bad[i].st)
            fail_msg("bad run %zu: status %s, want %s (%s)", i, remat_status_name(s), remat_status_name(bad[i].st),
                     remat_last_error());
        for (int k = 0; k < 3 && bad[i].needle[k]; k++)
            assert_contains(remat_last_error(), bad[i].needle[k]);
        assert_true(out0 == 12345.0);
        assert_true(out1[0] == 7 && out1[1] == 7 && out1[2] == 7);
    }
    assert_int_equal(remat_run(p, 2, NULL, 2, outs, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_run(p, 2, good, 2, NULL, NULL), REMAT_ERR_NULL);
    assert_true(out0 == 12345.0);
    /* and the program still runs (stats may be NULL) */
    assert_int_equal(remat_run(p, 2, good, 2, outs, NULL), REMAT_OK);
    assert_true(out0 == 63.0);
    assert_true(out1[0] == 20 && out1[1] == 40 && out1[2] == 60);
    remat_program_free(p);
    remat_fn_free(f);
}

static bool any_policy(const remat_op_info *op, void *ctx) { return true; }

static void test_ad_null_handles_are_refused_without_crashing(void **state)
{
    remat_fn *f = remat_fn_new("ok"), *out = (remat_fn *)0x1;
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){2}));
    remat_fn_output(f, remat_sum_all(f, x));
    remat_program *p = (remat_program *)0x1;
    remat_residual_list *r = (remat_residual_list *)0x1;

    assert_int_equal(remat_grad(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_null(out);
    out = (remat_fn *)0x1;
    assert_int_equal(remat_vjp(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_null(out);
    out = (remat_fn *)0x1;
    assert_int_equal(remat_value_and_grad(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_null(out);
    assert_int_equal(remat_grad(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_vjp(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_value_and_grad(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_grad(f, 1, NULL, &out), REMAT_ERR_ARG); /* argnums NULL with n = 1 */
    assert_int_equal(remat_grad(f, 1, ((int[]){1}), &out), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "argnum 1");
    assert_int_equal(remat_grad(f, -1, NULL, &out), REMAT_ERR_ARG);

    assert_int_equal(remat_compile(NULL, remat_backend_cpu(), &p), REMAT_ERR_NULL);
    assert_null(p);
    p = (remat_program *)0x1;
    assert_int_equal(remat_compile(f, NULL, &p), REMAT_ERR_NULL);
    assert_null(p);
    assert_int_equal(remat_compile(f, remat_backend_cpu(), NULL), REMAT_ERR_NULL);
    double v = 0;
    remat_tensor t = remat_tensor_f64(&v, 0, NULL);
    assert_int_equal(remat_run(NULL, 1, &t, 1, &t, NULL), REMAT_ERR_NULL);
    remat_program_free(NULL);
    remat_program_plan(NULL, NULL);
    assert_int_equal(remat_program_num_inputs(NULL), 0);
    assert_int_equal(remat_program_num_outputs(NULL), 0);
    assert_non_null(remat_backend_name(remat_backend_cpu()));

    assert_int_equal(remat_saved_residuals(NULL, 0, NULL, &r), REMAT_ERR_NULL);
    assert_null(r);
    r = (remat_residual_list *)0x1;
    assert_int_equal(remat_fn_residuals(NULL, &r), REMAT_ERR_NULL);
    assert_null(r);
    assert_int_equal(remat_saved_residuals(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_fn_residuals(f, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_residual_list_count(NULL), 0);
    assert_null(remat_residual_list_get(NULL, 0));
    assert_int_equal(remat_residual_list_bytes(NULL), 0);
    remat_residual_list_print(NULL, stdout);
    remat_residual_list_free(NULL);

    remat_fn_free(NULL);
    assert_null(remat_fn_ref(NULL));
    assert_int_equal(remat_fn_status(NULL), REMAT_ERR_NULL);
    assert_string_equal(remat_fn_error(NULL), "");
    remat_fn_clear_error(NULL);
    remat_fn_print(NULL, stdout);
    assert_int_equal(remat_fn_num_args(NULL), 0);
    assert_int_equal(remat_fn_num_outputs(NULL), 0);
    assert_int_equal(remat_fn_num_nodes(NULL), 0);
    assert_int_equal(remat_fn_arg(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_fn_out(NULL, 0), REMAT_NONE);
    assert_null(remat_fn_arg_name(NULL, 0));
    assert_non_null(remat_fn_name(NULL));
    assert_int_equal(remat_arg(NULL, "x", REMAT_F32, 0, NULL), REMAT_NONE);
    assert_int_equal(remat_scalar(NULL, REMAT_F32, 1.0), REMAT_NONE);
    assert_int_equal(remat_add(NULL, 0, 0), REMAT_NONE);
    assert_int_equal(remat_sin(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_sum_all(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_matmul(NULL, 0, 0), REMAT_NONE);
    assert_int_equal(remat_name(NULL, 0, "n"), REMAT_NONE);
    assert_int_equal(remat_fn_output(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_custom(NULL, &xsin_op, 0, NULL, REMAT_F32, 0, NULL), REMAT_NONE);
    remat_val o1;
    assert_int_equal(remat_call(NULL, f, 1, &x, &o1), REMAT_ERR_NULL);
    assert_int_equal(remat_call1(NULL, f, 1, &x), REMAT_NONE);

    remat_fn *h = remat_fn_new("caller");
    remat_val hx = remat_arg(h, "x", REMAT_F64, 1, ((int64_t[]){2})), o;
    int line;
    o = remat_call1(h, NULL, 1, &hx); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "call", NULL, NULL);
    o = remat_custom(h, NULL, 1, &hx, REMAT_F64, 1, ((int64_t[]){2})); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "custom", NULL, NULL);
    o = remat_call1(h, f, 1, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "call", NULL, NULL);
    o = remat_name(h, hx, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_ARG, line, "checkpoint_name", NULL, NULL);
    o = remat_transpose(h, hx, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "transpose", NULL, NULL);
    o = remat_dot_general(h, hx, hx, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "dot_general", NULL, NULL);
    o = remat_call1(h, f, 1, ((remat_val[]){remat_convert(h, hx, REMAT_F32)})); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_DTYPE, line, "call", "f32[2]", "f64[2]");
    assert_int_equal(remat_fn_num_outputs(h), 0);
    remat_fn_free(h);

    assert_null(remat_checkpoint(NULL, remat_nothing_saveable));
    assert_null(remat_policy_new("x", NULL, NULL, NULL));
    assert_null(remat_policy_save_from_both(NULL, remat_dots_saveable));
    assert_null(remat_policy_save_from_both(remat_dots_saveable, NULL));
    assert_null(remat_policy_save_only_these_names(1, NULL));
    assert_null(remat_policy_save_any_names_but_these(-1, NULL));
    assert_null(remat_policy_ref(NULL));
    remat_policy_free(NULL);
    remat_policy_free((remat_policy *)remat_dots_saveable); /* built-ins are immortal */
    assert_string_equal(remat_policy_label(remat_dots_saveable), "dots_saveable");
    assert_non_null(remat_policy_label(NULL));
    /* a policy outlives its creator's reference while a region holds it */
    remat_policy *pol = remat_policy_new("any", any_policy, NULL, NULL);
    remat_fn *ck = remat_checkpoint(f, pol);
    remat_policy_free(pol);
    assert_int_equal(remat_grad(ck, 0, NULL, &out), REMAT_OK);
    remat_fn_free(out);
    remat_fn_free(ck);
    remat_fn_free(f);
}

/* A number that never was a value of the function is an error with a message;
 * REMAT_NONE (the result of a failed op) propagates quietly, keeping the
 * first error's message. */
static void test_ad_foreign_value_handles_are_errors(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("handles");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){3}));
    assert_int_equal(remat_sin(f, 12345), REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_fn_error(f), "12345 is not a value"));
    remat_fn_clear_error(f);
    remat_val bad = remat_add(f, x, remat_reshape(f, x, 1, ((int64_t[]){4}))); /* reshape fails */
    assert_int_equal(bad, REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_SHAPE);
    const char *first = remat_fn_error(f);
    assert_non_null(strstr(first, "reshape"));
    assert_int_equal(remat_exp(f, bad), REMAT_NONE); /* quiet: the reshape's message stands */
    assert_int_equal(remat_fn_status(f), REMAT_ERR_SHAPE);
    assert_non_null(strstr(remat_fn_error(f), "reshape"));
    assert_true(remat_sin(f, x) != REMAT_NONE); /* still usable */
    remat_fn_free(f);
}

static void test_ad_grad_of_non_scalar_function_is_a_clear_error(void **state)
{
    remat_fn *f = remat_fn_new("vec");
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){2, 3}));
    remat_fn_output(f, remat_sin(f, x));
    remat_fn *g = (remat_fn *)0x1;
    assert_int_equal(remat_grad(f, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_null(g);
    assert_contains(remat_last_error(), "scalar");
    assert_contains(remat_last_error(), "f32[2,3]");
    assert_contains(remat_last_error(), "vec");
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "f32[2,3]");
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK); /* vjp is fine */
    remat_fn_free(g);
    /* two scalar outputs are not one */
    remat_fn_output(f, remat_sum_all(f, x));
    remat_fn *f2 = remat_fn_new("two");
    remat_val y = remat_arg(f2, "y", REMAT_F32, 0, NULL);
    remat_fn_output(f2, y);
    remat_fn_output(f2, remat_sin(f2, y));
    assert_int_equal(remat_grad(f2, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "2 output");
    /* no outputs at all */
    remat_fn *f3 = remat_fn_new("none");
    remat_arg(f3, "z", REMAT_F32, 0, NULL);
    assert_int_equal(remat_grad(f3, 0, NULL, &g), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "no outputs");
    remat_fn_free(f3), remat_fn_free(f2), remat_fn_free(f);
}

/* ---- main ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_build_errors_name_op_shapes_and_caller_line),
        cmocka_unit_test(test_ad_run_rejects_bad_inputs_and_leaves_outputs_untouched),
        cmocka_unit_test(test_ad_null_handles_are_refused_without_crashing),
        cmocka_unit_test(test_ad_foreign_value_handles_are_errors),
        cmocka_unit_test(test_ad_grad_of_non_scalar_function_is_a_clear_error),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
