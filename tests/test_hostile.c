/*
 * test_hostile.c — input built to break the core: shapes whose byte size
 * overflows, tensors of invalid rank, overlapping run buffers, integer
 * overflow in parameters, and NULL handed to every public entry point.
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

/* ---- NULL to every public entry point that takes a pointer ---- */

/* One call with NULL: its result as text (so one table holds every return
 * type), compared with the documented answer; remat_last_error() must name
 * what was NULL. */
typedef struct {
    const char *call;
    const char *want; /* the documented value, printed */
    void (*run)(char *got, size_t len);
    int silent;       /* _free(NULL) and the like: a no-op, no message */
} null_row;

static remat_fn *F0;                 /* NULL, typed */
static const remat_mechanism *M0;    /* NULL, typed */
static const remat_dataset *D0;      /* NULL, typed */
static int64_t d4[1] = {4};

#define INT_CASE(name, expr)                                                                                    \
    static void name(char *got, size_t len) { snprintf(got, len, "%lld", (long long)(expr)); }
#define DBL_CASE(name, expr)                                                                                    \
    static void name(char *got, size_t len) { snprintf(got, len, "%g", (double)(expr)); }
#define PTR_CASE(name, expr)                                                                                    \
    static void name(char *got, size_t len) { snprintf(got, len, "%s", (expr) ? "ptr" : "NULL"); }
#define VOID_CASE(name, stmt)                                                                                   \
    static void name(char *got, size_t len) { stmt; snprintf(got, len, "-"); }

/* graph.h */
INT_CASE(g_arg, remat_arg(F0, "x", REMAT_F64, 1, d4))
INT_CASE(g_fill, remat_const_fill(F0, REMAT_F64, 1, d4, 1.0))
INT_CASE(g_data, remat_const_data(F0, REMAT_F64, 1, d4, d4))
INT_CASE(g_unary, remat_exp(F0, 0))
INT_CASE(g_binary, remat_add(F0, 0, 0))
INT_CASE(g_bscalar, remat_add_scalar(F0, 0, 1.0))
INT_CASE(g_ipow, remat_integer_pow(F0, 0, 2))
INT_CASE(g_pow, remat_pow(F0, 0, 2.0))
INT_CASE(g_select, remat_select(F0, 0, 0, 0))
INT_CASE(g_convert, remat_convert(F0, 0, REMAT_F32))
INT_CASE(g_sum, remat_sum_all(F0, 0))
INT_CASE(g_rmax, remat_max_all(F0, 0))
INT_CASE(g_bid, remat_broadcast_in_dim(F0, 0, 1, d4, (const int[]){0}))
INT_CASE(g_bto, remat_broadcast_to(F0, 0, 1, d4))
INT_CASE(g_reshape, remat_reshape(F0, 0, 1, d4))
INT_CASE(g_transpose, remat_transpose(F0, 0, (const int[]){0}))
INT_CASE(g_slice, remat_slice(F0, 0, d4, d4, NULL))
INT_CASE(g_index, remat_index(F0, 0, 0))
INT_CASE(g_pad, remat_pad(F0, 0, d4, d4, NULL))
INT_CASE(g_concat, remat_concatenate(F0, 1, (const remat_val[]){0}, 0))
INT_CASE(g_dot, remat_dot_general(F0, 0, 0, &(remat_dot_dims){0}))
INT_CASE(g_matmul, remat_matmul(F0, 0, 0))
INT_CASE(g_name, remat_name(F0, 0, "n"))
INT_CASE(g_stop, remat_stop_gradient(F0, 0))
INT_CASE(g_call, remat_call(F0, NULL, 0, NULL, NULL))
INT_CASE(g_call1, remat_call1(F0, NULL, 0, NULL))
INT_CASE(g_custom, remat_custom(F0, NULL, 0, NULL, REMAT_F64, 0, NULL))
INT_CASE(g_output, remat_fn_output(F0, 0))
INT_CASE(g_status, remat_fn_status(F0))
PTR_CASE(g_fn_name, remat_fn_name(F0))
PTR_CASE(g_error, remat_fn_error(F0))
INT_CASE(g_nargs, remat_fn_num_args(F0))
INT_CASE(g_nouts, remat_fn_num_outputs(F0))
INT_CASE(g_nnodes, remat_fn_num_nodes(F0))
INT_CASE(g_fnarg, remat_fn_arg(F0, 0))
INT_CASE(g_fnout, remat_fn_out(F0, 0))
PTR_CASE(g_argname, remat_fn_arg_name(F0, 0))
INT_CASE(g_vdtype, remat_val_dtype(F0, 0))
INT_CASE(g_vshape, remat_val_shape(F0, 0).rank)
INT_CASE(g_vop, remat_val_op(F0, 0))
VOID_CASE(g_free, remat_fn_free(F0))
PTR_CASE(g_ref, remat_fn_ref(F0))
VOID_CASE(g_clear, remat_fn_clear_error(F0))
VOID_CASE(g_print, remat_fn_print(F0, stdout))
/* ad.h */
static remat_fn *out_fn;
INT_CASE(a_vjp, remat_vjp(F0, 0, NULL, &out_fn))
INT_CASE(a_grad, remat_grad(F0, 0, NULL, &out_fn))
INT_CASE(a_vgrad, remat_value_and_grad(F0, 0, NULL, &out_fn))
PTR_CASE(a_checkpoint, remat_checkpoint(F0, NULL))
INT_CASE(a_residuals, remat_fn_residuals(F0, &(remat_residual_list *){0}))
INT_CASE(a_saved, remat_saved_residuals(F0, 0, NULL, &(remat_residual_list *){0}))
INT_CASE(a_rcount, remat_residual_list_count(NULL))
PTR_CASE(a_rget, remat_residual_list_get(NULL, 0))
INT_CASE(a_rbytes, remat_residual_list_bytes(NULL))
VOID_CASE(a_rfree, remat_residual_list_free(NULL))
VOID_CASE(a_pfree, remat_policy_free(NULL))
PTR_CASE(a_plabel, remat_policy_label(NULL))
PTR_CASE(a_pref, remat_policy_ref(NULL))
/* mechanism.h */
INT_CASE(m_parse_s, remat_mechanism_parse_string(NULL, NULL, &(remat_mechanism *){0}))
INT_CASE(m_parse_f, remat_mechanism_parse_file(NULL, &(remat_mechanism *){0}))
INT_CASE(m_parse_out, remat_mechanism_parse_string("species A\n", NULL, NULL))
VOID_CASE(m_free, remat_mechanism_free(NULL))
PTR_CASE(m_source, remat_mechanism_source(M0))
PTR_CASE(m_indep, remat_mechanism_indep_name(M0))
INT_CASE(m_nspecies, remat_mechanism_species_count(M0))
PTR_CASE(m_sname, remat_mechanism_species_name(M0, 0))
INT_CASE(m_sfind, remat_mechanism_species_find(M0, "A"))
INT_CASE(m_nparams, remat_mechanism_param_count(M0))
PTR_CASE(m_pname, remat_mechanism_param_name(M0, 0))
DBL_CASE(m_pvalue, remat_mechanism_param_value(M0, 0))
DBL_CASE(m_plo, remat_mechanism_param_lo(M0, 0))
DBL_CASE(m_phi, remat_mechanism_param_hi(M0, 0))
INT_CASE(m_pfind, remat_mechanism_param_find(M0, "k"))
VOID_CASE(m_pvalues, remat_mechanism_param_values(M0, (double[4]){0}))
INT_CASE(m_nconsts, remat_mechanism_const_count(M0))
PTR_CASE(m_cname, remat_mechanism_const_name(M0, 0))
DBL_CASE(m_cvalue, remat_mechanism_const_value(M0, 0))
INT_CASE(m_nlets, remat_mechanism_let_count(M0))
PTR_CASE(m_lname, remat_mechanism_let_name(M0, 0))
PTR_CASE(m_lexpr, remat_mechanism_let_expr(M0, 0))
PTR_CASE(m_rhs, remat_mechanism_rhs(M0, 0))
INT_CASE(m_nreact, remat_mechanism_reaction_count(M0))
PTR_CASE(m_rate, remat_mechanism_reaction_rate(M0, 0))
DBL_CASE(m_stoich, remat_mechanism_reaction_stoich(M0, 0, 0))
INT_CASE(m_rline, remat_mechanism_reaction_line(M0, 0))
INT_CASE(m_eval, remat_mechanism_eval_rhs(M0, 0.0, (double[1]){0}, NULL, (double[1]){0}))
/* dataset.h */
INT_CASE(d_read, remat_dataset_read(NULL, NULL, &(remat_dataset *){0}))
VOID_CASE(d_free, remat_dataset_free(NULL))
PTR_CASE(d_path, remat_dataset_path(D0))
PTR_CASE(d_indep, remat_dataset_indep_name(D0))
INT_CASE(d_rows, remat_dataset_rows(D0))
INT_CASE(d_nspecies, remat_dataset_species_count(D0))
PTR_CASE(d_times, remat_dataset_times(D0))
PTR_CASE(d_row, remat_dataset_row(D0, 0))
DBL_CASE(d_value, remat_dataset_value(D0, 0, 0))
INT_CASE(d_measured, remat_dataset_is_measured(D0, 0, 0))
INT_CASE(d_column, remat_dataset_has_column(D0, 0))
INT_CASE(d_initial, remat_dataset_initial_complete(D0))
/* tensor.h */
INT_CASE(t_numel, remat_shape_numel(NULL))
INT_CASE(t_equal, remat_shape_equal(NULL, NULL))
INT_CASE(t_bytes, remat_tensor_bytes(NULL))
PTR_CASE(t_format, strcmp(remat_shape_format(REMAT_F32, NULL, (char[16]){0}, 16), "f32[?]") == 0 ? "" : NULL)

_Static_assert(REMAT_ERR_NULL == 1, "null_table spells REMAT_ERR_NULL as 1");
static const null_row null_table[] = {
    {"remat_arg", "-1", g_arg, 0},
    {"remat_const_fill", "-1", g_fill, 0},
    {"remat_const_data", "-1", g_data, 0},
    {"remat_exp", "-1", g_unary, 0},
    {"remat_add", "-1", g_binary, 0},
    {"remat_add_scalar", "-1", g_bscalar, 0},
    {"remat_integer_pow", "-1", g_ipow, 0},
    {"remat_pow", "-1", g_pow, 0},
    {"remat_select", "-1", g_select, 0},
    {"remat_convert", "-1", g_convert, 0},
    {"remat_sum_all", "-1", g_sum, 0},
    {"remat_max_all", "-1", g_rmax, 0},
    {"remat_broadcast_in_dim", "-1", g_bid, 0},
    {"remat_broadcast_to", "-1", g_bto, 0},
    {"remat_reshape", "-1", g_reshape, 0},
    {"remat_transpose", "-1", g_transpose, 0},
    {"remat_slice", "-1", g_slice, 0},
    {"remat_index", "-1", g_index, 0},
    {"remat_pad", "-1", g_pad, 0},
    {"remat_concatenate", "-1", g_concat, 0},
    {"remat_dot_general", "-1", g_dot, 0},
    {"remat_matmul", "-1", g_matmul, 0},
    {"remat_name", "-1", g_name, 0},
    {"remat_stop_gradient", "-1", g_stop, 0},
    {"remat_call", "1", g_call, 0}, /* statuses: REMAT_ERR_NULL = 1 */
    {"remat_call1", "-1", g_call1, 0},
    {"remat_custom", "-1", g_custom, 0},
    {"remat_fn_output", "-1", g_output, 0},
    {"remat_fn_status", "1", g_status, 1},
    {"remat_fn_name", "ptr", g_fn_name, 1},
    {"remat_fn_error", "ptr", g_error, 1},
    {"remat_fn_num_args", "0", g_nargs, 1},
    {"remat_fn_num_outputs", "0", g_nouts, 1},
    {"remat_fn_num_nodes", "0", g_nnodes, 1},
    {"remat_fn_arg", "-1", g_fnarg, 1},
    {"remat_fn_out", "-1", g_fnout, 1},
    {"remat_fn_arg_name", "NULL", g_argname, 1},
    {"remat_val_dtype", "2", g_vdtype, 0},
    {"remat_val_shape", "-1", g_vshape, 0},
    {"remat_val_op", "?", g_vop, 0},
    {"remat_fn_free", "-", g_free, 1},
    {"remat_fn_ref", "NULL", g_ref, 1},
    {"remat_fn_clear_error", "-", g_clear, 1},
    {"remat_fn_print", "-", g_print, 1},
    {"remat_vjp", "1", a_vjp, 0},
    {"remat_grad", "1", a_grad, 0},
    {"remat_value_and_grad", "1", a_vgrad, 0},
    {"remat_checkpoint", "NULL", a_checkpoint, 0},
    {"remat_fn_residuals", "1", a_residuals, 0},
    {"remat_saved_residuals", "1", a_saved, 0},
    {"remat_residual_list_count", "0", a_rcount, 1},
    {"remat_residual_list_get", "NULL", a_rget, 1},
    {"remat_residual_list_bytes", "0", a_rbytes, 1},
    {"remat_residual_list_free", "-", a_rfree, 1},
    {"remat_policy_free", "-", a_pfree, 1},
    {"remat_policy_label", "ptr", a_plabel, 1},
    {"remat_policy_ref", "NULL", a_pref, 1},
    {"remat_mechanism_parse_string", "1", m_parse_s, 0},
    {"remat_mechanism_parse_file", "1", m_parse_f, 0},
    {"remat_mechanism_parse_string", "1", m_parse_out, 0},
    {"remat_mechanism_free", "-", m_free, 1},
    {"remat_mechanism_source", "NULL", m_source, 0},
    {"remat_mechanism_indep_name", "NULL", m_indep, 0},
    {"remat_mechanism_species_count", "0", m_nspecies, 0},
    {"remat_mechanism_species_name", "NULL", m_sname, 0},
    {"remat_mechanism_species_find", "-1", m_sfind, 0},
    {"remat_mechanism_param_count", "0", m_nparams, 0},
    {"remat_mechanism_param_name", "NULL", m_pname, 0},
    {"remat_mechanism_param_value", "nan", m_pvalue, 0},
    {"remat_mechanism_param_lo", "nan", m_plo, 0},
    {"remat_mechanism_param_hi", "nan", m_phi, 0},
    {"remat_mechanism_param_find", "-1", m_pfind, 0},
    {"remat_mechanism_param_values", "-", m_pvalues, 0},
    {"remat_mechanism_const_count", "0", m_nconsts, 0},
    {"remat_mechanism_const_name", "NULL", m_cname, 0},
    {"remat_mechanism_const_value", "nan", m_cvalue, 0},
    {"remat_mechanism_let_count", "0", m_nlets, 0},
    {"remat_mechanism_let_name", "NULL", m_lname, 0},
    {"remat_mechanism_let_expr", "NULL", m_lexpr, 0},
    {"remat_mechanism_rhs", "NULL", m_rhs, 0},
    {"remat_mechanism_reaction_count", "0", m_nreact, 0},
    {"remat_mechanism_reaction_rate", "NULL", m_rate, 0},
    {"remat_mechanism_reaction_stoich", "nan", m_stoich, 0},
    {"remat_mechanism_reaction_line", "-1", m_rline, 0},
    {"remat_mechanism_eval_rhs", "1", m_eval, 0},
    {"remat_dataset_read", "1", d_read, 0},
    {"remat_dataset_free", "-", d_free, 1},
    {"remat_dataset_path", "NULL", d_path, 0},
    {"remat_dataset_indep_name", "NULL", d_indep, 0},
    {"remat_dataset_rows", "0", d_rows, 0},
    {"remat_dataset_species_count", "0", d_nspecies, 0},
    {"remat_dataset_times", "NULL", d_times, 0},
    {"remat_dataset_row", "NULL", d_row, 0},
    {"remat_dataset_value", "nan", d_value, 0},
    {"remat_dataset_is_measured", "0", d_measured, 0},
    {"remat_dataset_has_column", "0", d_column, 0},
    {"remat_dataset_initial_complete", "0", d_initial, 0},
    {"remat_shape_numel", "-1", t_numel, 1},
    {"remat_shape_equal", "0", t_equal, 1},
    {"remat_tensor_bytes", "0", t_bytes, 1},
    {"remat_shape_format", "ptr", t_format, 1},
};

static void test_hostile_null_to_every_public_function_is_answered(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof null_table / sizeof null_table[0]; i++) {
        const null_row *r = &null_table[i];
        char got[64];
        remat_clear_error();
        r->run(got, sizeof got);
        const char *msg = remat_last_error();
        if (strcmp(got, r->want) != 0 && !(strcmp(r->want, "?") == 0)) {
            printf("%s(NULL): returned %s, documented %s\n", r->call, got, r->want);
            bad++;
        }
        if (!r->silent && !(msg && strstr(msg, "NULL"))) {
            printf("%s(NULL): message \"%s\" does not say what is NULL\n", r->call, msg ? msg : "(none)");
            bad++;
        }
    }
    assert_int_equal(bad, 0);
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
        cmocka_unit_test(test_hostile_null_to_every_public_function_is_answered),
        cmocka_unit_test(test_hostile_none_operand_is_an_error_when_used),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
