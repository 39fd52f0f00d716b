/*
 * test_ad_ops.c — reverse mode of every primitive and custom op, and the
 * transformations' output order.
 *
 * Every expectation comes from outside the code under test: the JAX 0.10.2
 * goldens in tests/goldens/ (read at run time through $REMAT_GOLDENS, see
 * tools/goldens/gen_goldens.py, test_golden.h) and central finite differences
 * in f64. Residual sets are in test_ad_residuals.c, save policies and
 * recomputation in test_ad_checkpoint.c, bad input in test_ad_errors.c.
 */
#include "ad_builders.h"
#include "test_ad_util.h"
#include "test_golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

static remat_shape shape_of(int rank, const int64_t *dims) { return remat_shape_make(rank, dims); }

/* ==== 1a. value and VJP of every primitive against JAX ==== */

typedef remat_val (*golden_builder)(remat_fn *f, const remat_val *x, const cJSON *params);

static remat_val g_add(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_add(f, x[0], x[1]); }
static remat_val g_sub(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_sub(f, x[0], x[1]); }
static remat_val g_mul(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_mul(f, x[0], x[1]); }
static remat_val g_div(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_div(f, x[0], x[1]); }
static remat_val g_max(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_max(f, x[0], x[1]); }
static remat_val g_min(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_min(f, x[0], x[1]); }
static remat_val g_neg(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_neg(f, x[0]); }
static remat_val g_exp(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_exp(f, x[0]); }
static remat_val g_log(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_log(f, x[0]); }
static remat_val g_sin(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_sin(f, x[0]); }
static remat_val g_cos(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_cos(f, x[0]); }
static remat_val g_tanh(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_tanh(f, x[0]); }
static remat_val g_relu(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_relu(f, x[0]); }
static remat_val g_square(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_square(f, x[0]); }
static remat_val g_sqrt(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_sqrt(f, x[0]); }
static remat_val g_erf(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_erf(f, x[0]); }
static remat_val g_log1p(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_log1p(f, x[0]); }
static remat_val g_expm1(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_expm1(f, x[0]); }
static remat_val g_logistic(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_logistic(f, x[0]); }
static remat_val g_erf_inv(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_erf_inv(f, x[0]); }
static remat_val g_ipow(remat_fn *f, const remat_val *x, const cJSON *p)
{
    return remat_integer_pow(f, x[0], (int)jget(p, "y")->valuedouble);
}
/* lax.pow(x, y) with y = 2.5 everywhere: remat's pow has a constant exponent */
static remat_val g_pow(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_pow(f, x[0], 2.5); }
static remat_val g_select(remat_fn *f, const remat_val *x, const cJSON *p)
{
    return remat_select(f, x[0], x[1], x[2]);
}
static remat_val g_sum(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int axes[REMAT_MAX_RANK];
    int n = jints32(jget(p, "axes"), axes, REMAT_MAX_RANK);
    return remat_sum(f, x[0], n, axes);
}
static remat_val g_reduce_max(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int axes[REMAT_MAX_RANK];
    int n = jints32(jget(p, "axes"), axes, REMAT_MAX_RANK);
    return remat_reduce_max(f, x[0], n, axes);
}
static remat_val g_bcast(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t dims[REMAT_MAX_RANK];
    int bd[REMAT_MAX_RANK];
    int r = jints(jget(p, "shape"), dims, REMAT_MAX_RANK);
    jints32(jget(p, "broadcast_dimensions"), bd, REMAT_MAX_RANK);
    return remat_broadcast_in_dim(f, x[0], r, dims, bd);
}
static remat_val g_transpose(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int perm[REMAT_MAX_RANK];
    jints32(jget(p, "permutation"), perm, REMAT_MAX_RANK);
    return remat_transpose(f, x[0], perm);
}
static remat_val g_slice(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t s[REMAT_MAX_RANK], l[REMAT_MAX_RANK], st[REMAT_MAX_RANK];
    jints(jget(p, "start_indices"), s, REMAT_MAX_RANK);
    jints(jget(p, "limit_indices"), l, REMAT_MAX_RANK);
    jints(jget(p, "strides"), st, REMAT_MAX_RANK);
    return remat_slice(f, x[0], s, l, st);
}
static remat_val g_pad(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t lo[REMAT_MAX_RANK], hi[REMAT_MAX_RANK], in[REMAT_MAX_RANK];
    int r = 0;
    const cJSON *e;
    assert_true(jget(p, "padding_value")->valuedouble == 0.0);
    cJSON_ArrayForEach(e, jget(p, "padding_config"))
    {
        int64_t t[3];
        assert_int_equal(jints(e, t, 3), 3);
        lo[r] = t[0], hi[r] = t[1], in[r] = t[2];
        r++;
    }
    return remat_pad(f, x[0], lo, hi, in);
}
static remat_val g_concat(remat_fn *f, const remat_val *x, const cJSON *p)
{
    return remat_concatenate(f, 2, x, (int)jget(p, "dimension")->valuedouble);
}
static remat_val g_reshape(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t dims[REMAT_MAX_RANK];
    int r = jints(jget(p, "new_sizes"), dims, REMAT_MAX_RANK);
    return remat_reshape(f, x[0], r, dims);
}

static const struct {
    const char *file, *name;
    golden_builder build;
    int n_args; /* leading golden inputs that become arguments */
} golden_ops[] = {
    {"ops.json", "add", g_add, 2},
    {"ops.json", "sub", g_sub, 2},
    {"ops.json", "mul", g_mul, 2},
    {"ops.json", "div", g_div, 2},
    {"ops.json", "max_ties", g_max, 2},
    {"ops.json", "min_ties", g_min, 2},
    {"ops.json", "neg", g_neg, 1},
    {"ops.json", "exp", g_exp, 1},
    {"ops.json", "log", g_log, 1},
    {"ops.json", "sin", g_sin, 1},
    {"ops.json", "cos", g_cos, 1},
    {"ops.json", "tanh", g_tanh, 1},
    {"ops.json", "relu_at_zero", g_relu, 1},
    {"ops.json", "square", g_square, 1},
    {"ops.json", "sqrt", g_sqrt, 1},
    {"ops.json", "integer_pow_3", g_ipow, 1},
    {"ops.json", "pow_2_5", g_pow, 1}, /* the exponent is a parameter in remat: no cotangent for y */
    {"ops.json", "select", g_select, 3},
    {"ops.json", "reduce_sum_axes_0_2", g_sum, 1},
    {"ops.json", "reduce_sum_all", g_sum, 1},
    {"ops.json", "broadcast_in_dim", g_bcast, 1},
    {"ops.json", "broadcast_in_dim_size1", g_bcast, 1},
    {"ops.json", "transpose", g_transpose, 1},
    {"ops.json", "slice_strided", g_slice, 1},
    {"ops.json", "pad_interior", g_pad, 1},
    {"ops.json", "concatenate", g_concat, 2},
    {"ops.json", "reshape", g_reshape, 1},
    /* tools/goldens/gen_ops_nn_goldens.py */
    {"ops_nn.json", "erf", g_erf, 1},
    {"ops_nn.json", "erf_random", g_erf, 1},
    {"ops_nn.json", "reduce_max_axis0", g_reduce_max, 1},
    {"ops_nn.json", "reduce_max_axis1", g_reduce_max, 1},
    {"ops_nn.json", "reduce_max_all", g_reduce_max, 1},
    {"ops_nn.json", "reduce_max_all_ties", g_reduce_max, 1},
    {"ops_nn.json", "log1p", g_log1p, 1},
    {"ops_nn.json", "expm1", g_expm1, 1},
    {"ops_nn.json", "logistic", g_logistic, 1},
    {"ops_nn.json", "erf_inv", g_erf_inv, 1},
};

/* Builds f(args) = op(args), takes its VJP w.r.t. the inputs JAX differentiated,
 * runs it at the golden point with the golden cotangent and compares. */
static void check_golden_op(const char *file, const char *name, golden_builder build, int n_args)
{
    const cJSON *c = golden_case(file, name);
    const cJSON *params = jget(c, "params");
    jarr in[3];
    remat_val x[3];
    remat_fn *f = remat_fn_new(name);
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, jget(c, "inputs"))
    {
        if (k < n_args) {
            in[k] = jarr_get(e);
            x[k] = remat_arg(f, jget(e, "name")->valuestring, REMAT_F64, in[k].shape.rank, in[k].shape.dims);
        } else { /* pow's exponent array: must be the constant remat was given */
            jarr y = jarr_get(e);
            for (int64_t i = 0; i < y.n; i++)
                assert_true(y.data[i] == 2.5);
            free(y.data);
        }
        k++;
    }
    remat_val out = build(f, x, params);
    remat_fn_output(f, out);
    assert_fn_ok(f);

    /* argnums: the golden's differentiated inputs that are arguments here */
    int argnums[3], na = 0;
    const cJSON *vjps = jget(c, "vjp");
    jarr want_d[3];
    cJSON_ArrayForEach(e, vjps)
    {
        const char *wrt = jget(e, "wrt")->valuestring;
        int idx = -1;
        for (int i = 0; i < n_args; i++)
            if (!strcmp(remat_fn_arg_name(f, i), wrt))
                idx = i;
        if (idx < 0) {
            assert_string_equal(name, "pow_2_5"); /* only pow's y is not an argument */
            continue;
        }
        argnums[na] = idx;
        want_d[na++] = jarr_get(e);
    }
    assert_true(na > 0);
    remat_fn *g = NULL;
    if (remat_vjp(f, na, argnums, &g) != REMAT_OK)
        fail_msg("%s: vjp failed: %s", name, remat_last_error());
    jarr want_out = jarr_get(jget(c, "out")), ct = jarr_get(jget(c, "ct"));
    remat_tensor tin[4];
    for (int i = 0; i < n_args; i++)
        tin[i] = jarr_tensor(&in[i]);
    tin[n_args] = jarr_tensor(&ct);
    outs_t o;
    run_fn(g, n_args + 1, tin, &o, NULL, NULL);
    assert_int_equal(o.n, 1 + na);
    char what[128];
    assert_true(remat_shape_equal(&o.t[0].shape, &want_out.shape));
    snprintf(what, sizeof what, "%s value", name);
    check_close(what, want_out.n, o.t[0].data, want_out.data, 1e-13, 1e-300);
    for (int i = 0; i < na; i++) {
        assert_true(remat_shape_equal(&o.t[1 + i].shape, &want_d[i].shape));
        snprintf(what, sizeof what, "%s vjp wrt %s", name, remat_fn_arg_name(f, argnums[i]));
        check_close(what, want_d[i].n, o.t[1 + i].data, want_d[i].data, 1e-13, 1e-300);
        free(want_d[i].data);
    }
    outs_free(&o);
    for (int i = 0; i < n_args; i++)
        free(in[i].data);
    free(want_out.data);
    free(ct.data);
    remat_fn_free(g);
    remat_fn_free(f);
}

static void test_ad_ops_value_and_vjp_match_jax(void **state)
{
    for (size_t i = 0; i < sizeof golden_ops / sizeof golden_ops[0]; i++)
        check_golden_op(golden_ops[i].file, golden_ops[i].name, golden_ops[i].build, golden_ops[i].n_args);
}

/* max/min split a tie 0.5/0.5 and relu'(0) = 0, as JAX: checked element by
 * element here, independently of the golden's arrays. */
static void test_ad_ties_and_relu_at_zero_follow_jax(void **state)
{
    double a[6] = {1.0, 2.0, 3.0, -1.0, 0.0, -2.5}, b[6] = {3.0, 2.0, 1.0, -1.0, 0.0, 1.5};
    double r[6] = {-1.5, -0.0, 0.0, 0.25, 2.0, -3.0};
    int64_t d6[1] = {6};
    for (int op = 0; op < 3; op++) {
        remat_fn *f = remat_fn_new("ties");
        remat_val x = remat_arg(f, "x", REMAT_F64, 1, d6), y = remat_arg(f, "y", REMAT_F64, 1, d6);
        remat_val v = op == 0 ? remat_max(f, x, y) : op == 1 ? remat_min(f, x, y) : remat_relu(f, x);
        remat_fn_output(f, remat_sum_all(f, v));
        remat_fn *g = grad_ok(f, 0, NULL);
        remat_tensor in[2] = {remat_tensor_f64(op == 2 ? r : a, 1, d6), remat_tensor_f64(b, 1, d6)};
        outs_t o;
        run_fn(g, 2, in, &o, NULL, NULL);
        const double *dx = o.t[0].data, *dy = o.t[1].data;
        for (int i = 0; i < 6; i++) {
            double wx, wy;
            if (op == 2) {
                wx = r[i] > 0 ? 1.0 : 0.0, wy = 0.0;
            } else {
                int x_wins = op == 0 ? a[i] > b[i] : a[i] < b[i];
                wx = a[i] == b[i] ? 0.5 : x_wins ? 1.0 : 0.0;
                wy = a[i] == b[i] ? 0.5 : x_wins ? 0.0 : 1.0;
            }
            if (dx[i] != wx || dy[i] != wy)
                fail_msg("op %d element %d: d = (%g, %g), want (%g, %g)", op, i, dx[i], dy[i], wx, wy);
        }
        outs_free(&o);
        remat_fn_free(g);
        remat_fn_free(f);
    }
}

/* pad with negative low/high (the golden's pad_negative_low) is documented as
 * unsupported: a clear build error, not a wrong answer. */
static void test_ad_pad_negative_is_rejected(void **state)
{
    remat_fn *f = remat_fn_new("padneg");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){2, 3}));
    int line;
    remat_val v = remat_pad(f, x, ((int64_t[]){-1, 1}), ((int64_t[]){1, -1}), ((int64_t[]){0, 1})); line = __LINE__;
    assert_int_equal(v, REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_ARG);
    char loc[64];
    snprintf(loc, sizeof loc, "test_ad_ops.c:%d", line);
    assert_contains(remat_fn_error(f), "pad");
    assert_contains(remat_fn_error(f), loc);
    remat_fn_free(f);
}

static void test_ad_dot_general_matches_jax(void **state)
{
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, jget(golden("dot_general.json"), "cases"))
    {
        const char *name = jget(c, "name")->valuestring;
        const cJSON *dn = jget(c, "dimension_numbers");
        remat_dot_dims d = {0};
        d.n_contract = jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 0), d.lhs_contract, REMAT_MAX_RANK);
        assert_int_equal(jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 1), d.rhs_contract, REMAT_MAX_RANK),
                         d.n_contract);
        d.n_batch = jints32(cJSON_GetArrayItem(jget(dn, "batch"), 0), d.lhs_batch, REMAT_MAX_RANK);
        assert_int_equal(jints32(cJSON_GetArrayItem(jget(dn, "batch"), 1), d.rhs_batch, REMAT_MAX_RANK), d.n_batch);
        jarr l = jarr_get(jget(c, "lhs")), r = jarr_get(jget(c, "rhs")), ct = jarr_get(jget(c, "ct"));
        jarr out = jarr_get(jget(c, "out")), dl = jarr_get(jget(c, "d_lhs")), dr = jarr_get(jget(c, "d_rhs"));
        remat_fn *f = remat_fn_new(name);
        remat_val a = remat_arg(f, "lhs", REMAT_F64, l.shape.rank, l.shape.dims);
        remat_val b = remat_arg(f, "rhs", REMAT_F64, r.shape.rank, r.shape.dims);
        remat_fn_output(f, remat_dot_general(f, a, b, &d));
        assert_fn_ok(f);
        remat_fn *g = NULL;
        if (remat_vjp(f, 0, NULL, &g) != REMAT_OK)
            fail_msg("%s: vjp failed: %s", name, remat_last_error());
        remat_tensor in[3] = {jarr_tensor(&l), jarr_tensor(&r), jarr_tensor(&ct)};
        outs_t o;
        run_fn(g, 3, in, &o, NULL, NULL);
        char what[128];
        assert_true(remat_shape_equal(&o.t[0].shape, &out.shape));
        assert_true(remat_shape_equal(&o.t[1].shape, &l.shape));
        assert_true(remat_shape_equal(&o.t[2].shape, &r.shape));
        /* sums of a few products: a few ulps of the largest term */
        snprintf(what, sizeof what, "dot_general %s out", name);
        check_close(what, out.n, o.t[0].data, out.data, 1e-13, 1e-14);
        snprintf(what, sizeof what, "dot_general %s d_lhs", name);
        check_close(what, dl.n, o.t[1].data, dl.data, 1e-13, 1e-14);
        snprintf(what, sizeof what, "dot_general %s d_rhs", name);
        check_close(what, dr.n, o.t[2].data, dr.data, 1e-13, 1e-14);
        outs_free(&o);
        remat_fn_free(g);
        remat_fn_free(f);
        free(l.data), free(r.data), free(ct.data), free(out.data), free(dl.data), free(dr.data);
        n++;
    }
    assert_int_equal(n, 12);
}

/* ==== 1b. central finite differences of sum(w * op(x)) in f64 ==== */

typedef remat_val (*fd_builder)(remat_fn *f, const remat_val *x);

typedef struct {
    const char *name;
    int n_in;
    int rank[3];
    int64_t dims[3][4];
    double lo, hi;   /* inputs uniform in [lo, hi] ... */
    double avoid;    /* ... with |x| >= avoid */
    int no_ties;     /* second input kept away from the first */
    fd_builder build;
} fd_case;

static remat_val fd_add_bcast(remat_fn *f, const remat_val *x) { return remat_add(f, x[0], x[1]); }
static remat_val fd_rmax02(remat_fn *f, const remat_val *x) { return remat_reduce_max(f, x[0], 2, ((int[]){0, 2})); }
static remat_val fd_select(remat_fn *f, const remat_val *x)
{
    static const double pred[6] = {1, 0, 0, 1, 1, 0};
    remat_val p = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){2, 3}), pred);
    return remat_select(f, p, x[0], x[1]);
}
static remat_val fd_bcast(remat_fn *f, const remat_val *x)
{
    return remat_broadcast_in_dim(f, x[0], 3, ((int64_t[]){2, 3, 4}), ((int[]){1}));
}
static remat_val fd_bcast1(remat_fn *f, const remat_val *x)
{
    return remat_broadcast_in_dim(f, x[0], 3, ((int64_t[]){2, 3, 4}), ((int[]){1, 2}));
}
static remat_val fd_slice(remat_fn *f, const remat_val *x)
{
    return remat_slice(f, x[0], ((int64_t[]){1, 0}), ((int64_t[]){4, 6}), ((int64_t[]){2, 3}));
}
static remat_val fd_slice2(remat_fn *f, const remat_val *x) /* limit not on the stride grid */
{
    return remat_slice(f, x[0], ((int64_t[]){0, 1}), ((int64_t[]){3, 6}), ((int64_t[]){2, 2}));
}
static remat_val fd_pad(remat_fn *f, const remat_val *x)
{
    return remat_pad(f, x[0], ((int64_t[]){1, 0}), ((int64_t[]){0, 2}), ((int64_t[]){1, 1}));
}
static remat_val fd_concat(remat_fn *f, const remat_val *x) { return remat_concatenate(f, 3, x, 1); }
static remat_val fd_index(remat_fn *f, const remat_val *x) { return remat_index(f, x[0], 2); }

static const fd_case fd_cases[] = {
    {"add", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, ab_add},
    {"add_broadcast", 2, {1, 2}, {{3}, {2, 3}}, -2, 2, 0, 0, fd_add_bcast},
    {"sub", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, ab_sub},
    {"mul", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, ab_mul},
    {"div", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0.5, 0, ab_div},
    {"max", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 1, ab_max},
    {"min", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 1, ab_min},
    {"neg", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_neg},
    {"exp", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_exp},
    {"log", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, ab_log},
    {"sin", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_sin},
    {"cos", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_cos},
    {"tanh", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_tanh},
    {"relu", 1, {2}, {{2, 3}}, -2, 2, 0.05, 0, ab_relu},
    {"square", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_square},
    {"sqrt", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, ab_sqrt},
    {"erf", 1, {2}, {{2, 3}}, -2.5, 2.5, 0, 0, ab_erf},
    {"log1p", 1, {2}, {{2, 3}}, -0.8, 3, 0, 0, ab_log1p},
    {"expm1", 1, {2}, {{2, 3}}, -3, 2, 0, 0, ab_expm1},
    {"logistic", 1, {2}, {{2, 3}}, -6, 6, 0, 0, ab_logistic},
    {"erf_inv", 1, {2}, {{2, 3}}, -0.9, 0.9, 0, 0, ab_erf_inv},
    {"integer_pow_3", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_ipow3},
    {"integer_pow_2", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_ipow2},
    {"integer_pow_1", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_ipow1},
    {"integer_pow_0", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_ipow0},
    {"integer_pow_-2", 1, {2}, {{2, 3}}, -2, 2, 0.5, 0, ab_ipowm2},
    {"pow_2.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, ab_pow25},
    {"pow_-0.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, ab_powm05},
    {"select", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, fd_select},
    {"reduce_sum_axes_0_2", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, ab_sum02},
    {"reduce_sum_all", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, ab_sum_all},
    /* uniform random inputs: no two within h of each other, so no ties */
    {"reduce_max_axis_1", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, ab_rmax1},
    {"reduce_max_axes_0_2", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, fd_rmax02},
    {"reduce_max_all", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, ab_rmax_all},
    {"broadcast_in_dim", 1, {1}, {{3}}, -2, 2, 0, 0, fd_bcast},
    {"broadcast_in_dim_size1", 1, {2}, {{3, 1}}, -2, 2, 0, 0, fd_bcast1},
    {"reshape", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, ab_reshape},
    {"transpose", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, ab_transpose},
    {"slice_strided", 1, {2}, {{4, 6}}, -2, 2, 0, 0, fd_slice},
    {"slice_strided_ragged", 1, {2}, {{4, 6}}, -2, 2, 0, 0, fd_slice2},
    {"index", 1, {2}, {{4, 3}}, -2, 2, 0, 0, fd_index},
    {"pad_interior", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_pad},
    {"concatenate", 3, {2, 2, 2}, {{2, 3}, {2, 2}, {2, 1}}, -2, 2, 0, 0, fd_concat},
    {"name", 1, {2}, {{2, 3}}, -2, 2, 0, 0, ab_name},
};

static void fill_inputs(double *x, int64_t n, double lo, double hi, double avoid)
{
    for (int64_t i = 0; i < n; i++) {
        x[i] = urand(lo, hi);
        if (fabs(x[i]) < avoid)
            x[i] = x[i] < 0 ? x[i] - avoid : x[i] + avoid;
    }
}

/* loss(x) = sum(w * op(x)) with w a fixed random constant; checks
 * remat_grad against (loss(x+h) - loss(x-h)) / 2h element by element. */
static void fd_check(const char *name, int n_in, const remat_shape *shapes, double **xs, fd_builder build)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x[3];
    char an[16];
    for (int k = 0; k < n_in; k++) {
        snprintf(an, sizeof an, "x%d", k);
        x[k] = remat_arg(f, an, REMAT_F64, shapes[k].rank, shapes[k].dims);
    }
    remat_val y = build(f, x);
    assert_fn_ok(f);
    remat_shape ys = remat_val_shape(f, y);
    int64_t ny = remat_shape_numel(&ys);
    double *w = xcalloc((size_t)ny, sizeof *w);
    for (int64_t i = 0; i < ny; i++)
        w[i] = urand(-1, 1);
    remat_val wv = remat_const_data(f, REMAT_F64, ys.rank, ys.dims, w);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, wv, y)));
    assert_fn_ok(f);
    remat_fn *g = grad_ok(f, 0, NULL);

    remat_tensor in[3];
    for (int k = 0; k < n_in; k++)
        in[k] = remat_tensor_f64(xs[k], shapes[k].rank, shapes[k].dims);
    outs_t go, lo;
    run_fn(g, n_in, in, &go, NULL, NULL);
    assert_int_equal(go.n, n_in);
    remat_program *pl = compile_ok(f);
    run_prog(pl, n_in, in, &lo, NULL);
    double f0 = *(double *)lo.t[0].data;
    const double h = 1e-6;
    for (int k = 0; k < n_in; k++) {
        assert_true(remat_shape_equal(&go.t[k].shape, &shapes[k]));
        const double *gk = go.t[k].data;
        int64_t n = remat_shape_numel(&shapes[k]);
        for (int64_t i = 0; i < n; i++) {
            double save = xs[k][i];
            xs[k][i] = save + h;
            outs_free(&lo);
            run_prog(pl, n_in, in, &lo, NULL);
            double fp = *(double *)lo.t[0].data;
            xs[k][i] = save - h;
            outs_free(&lo);
            run_prog(pl, n_in, in, &lo, NULL);
            double fm = *(double *)lo.t[0].data;
            xs[k][i] = save;
            double fd = (fp - fm) / (2 * h);
            /* relative 1e-6, plus an absolute term for the rounding of loss itself */
            double tol = 1e-6 * fabs(fd) + 1e-8 * (1 + fabs(f0));
            if (!(fabs(gk[i] - fd) <= tol))
                fail_msg("FD %s: d/dx%d[%lld] = %.12g, finite difference %.12g (x = %.6g)", name, k, (long long)i,
                         gk[i], fd, save);
        }
    }
    outs_free(&lo);
    outs_free(&go);
    remat_program_free(pl);
    remat_fn_free(g);
    remat_fn_free(f);
    free(w);
}

static void test_ad_every_primitive_matches_finite_differences(void **state)
{
    for (size_t c = 0; c < sizeof fd_cases / sizeof fd_cases[0]; c++) {
        const fd_case *fc = &fd_cases[c];
        remat_shape s[3];
        double *xs[3];
        for (int k = 0; k < fc->n_in; k++) {
            s[k] = shape_of(fc->rank[k], fc->dims[k]);
            int64_t n = remat_shape_numel(&s[k]);
            xs[k] = xcalloc((size_t)n, sizeof(double));
            fill_inputs(xs[k], n, fc->lo, fc->hi, fc->avoid);
            if (k == 1 && fc->no_ties)
                for (int64_t i = 0; i < n; i++)
                    if (fabs(xs[1][i] - xs[0][i]) < 0.05)
                        xs[1][i] = xs[0][i] + 0.3;
        }
        fd_check(fc->name, fc->n_in, s, xs, fc->build);
        for (int k = 0; k < fc->n_in; k++)
            free(xs[k]);
    }
}

/* dot_general: every dimension-number layout of the golden file, in FD too */
static remat_dot_dims fd_dot_dims; /* fd_builder has no context: set before each check */

static remat_val fd_dot(remat_fn *f, const remat_val *x) { return remat_dot_general(f, x[0], x[1], &fd_dot_dims); }

static void test_ad_dot_general_matches_finite_differences(void **state)
{
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, jget(golden("dot_general.json"), "cases"))
    {
        const cJSON *dn = jget(c, "dimension_numbers");
        remat_dot_dims *d = &fd_dot_dims;
        memset(d, 0, sizeof *d);
        d->n_contract = jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 0), d->lhs_contract, REMAT_MAX_RANK);
        jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 1), d->rhs_contract, REMAT_MAX_RANK);
        d->n_batch = jints32(cJSON_GetArrayItem(jget(dn, "batch"), 0), d->lhs_batch, REMAT_MAX_RANK);
        jints32(cJSON_GetArrayItem(jget(dn, "batch"), 1), d->rhs_batch, REMAT_MAX_RANK);
        jarr l = jarr_get(jget(c, "lhs")), r = jarr_get(jget(c, "rhs"));
        remat_shape s[2] = {l.shape, r.shape};
        double *xs[2] = {l.data, r.data};
        fd_check(jget(c, "name")->valuestring, 2, s, xs, fd_dot);
        free(l.data), free(r.data);
        n++;
    }
    assert_int_equal(n, 12);
}

/* convert_element_type: its VJP converts the cotangent back. The check uses
 * f32 inputs on a 1/8 grid and h = 1/64, so x +- h is exact and the central
 * difference of this linear map is exact too. */
static void test_ad_convert_value_vjp_and_finite_differences(void **state)
{
    int64_t d[2] = {2, 3};
    float x[6], ctf[6];
    double ct[6], w[6];
    for (int i = 0; i < 6; i++) {
        x[i] = (float)(floor(urand(-16, 16)) / 8.0);
        ct[i] = urand(-1, 1);
        ctf[i] = (float)urand(-1, 1);
        w[i] = urand(-1, 1);
    }
    /* f32 -> f64: value exact, cotangent rounded to f32 */
    remat_fn *f = remat_fn_new("up");
    remat_fn_output(f, remat_convert(f, remat_arg(f, "x", REMAT_F32, 2, d), REMAT_F64));
    assert_int_equal(remat_val_op(f, remat_fn_out(f, 0)), REMAT_OP_CONVERT);
    remat_fn *g = NULL;
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    remat_tensor in[2] = {remat_tensor_f32(x, 2, d), remat_tensor_f64(ct, 2, d)};
    outs_t o;
    run_fn(g, 2, in, &o, NULL, NULL);
    assert_int_equal(o.t[0].dtype, REMAT_F64);
    assert_int_equal(o.t[1].dtype, REMAT_F32);
    for (int i = 0; i < 6; i++) {
        assert_true(((double *)o.t[0].data)[i] == (double)x[i]);
        assert_true(((float *)o.t[1].data)[i] == (float)ct[i]);
    }
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* f64 -> f32: value rounded, cotangent widened exactly */
    double xd[6];
    for (int i = 0; i < 6; i++)
        xd[i] = urand(-2, 2);
    f = remat_fn_new("down");
    remat_fn_output(f, remat_convert(f, remat_arg(f, "x", REMAT_F64, 2, d), REMAT_F32));
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    remat_tensor in2[2] = {remat_tensor_f64(xd, 2, d), remat_tensor_f32(ctf, 2, d)};
    run_fn(g, 2, in2, &o, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        assert_true(((float *)o.t[0].data)[i] == (float)xd[i]);
        assert_true(((double *)o.t[1].data)[i] == (double)ctf[i]);
    }
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* FD of sum(w * convert(x)) (f64 loss of an f32 argument) */
    f = remat_fn_new("fd_convert");
    remat_val c = remat_convert(f, remat_arg(f, "x", REMAT_F32, 2, d), REMAT_F64);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, remat_const_data(f, REMAT_F64, 2, d, w), c)));
    g = grad_ok(f, 0, NULL);
    remat_tensor tx = remat_tensor_f32(x, 2, d);
    outs_t go;
    run_fn(g, 1, &tx, &go, NULL, NULL);
    remat_program *pl = compile_ok(f);
    const float h = 1.0f / 64;
    for (int i = 0; i < 6; i++) {
        float save = x[i];
        x[i] = save + h;
        run_prog(pl, 1, &tx, &o, NULL);
        double fp = *(double *)o.t[0].data;
        outs_free(&o);
        x[i] = save - h;
        run_prog(pl, 1, &tx, &o, NULL);
        double fm = *(double *)o.t[0].data;
        outs_free(&o);
        x[i] = save;
        double fd = (fp - fm) / (2.0 * h), gi = ((float *)go.t[0].data)[i];
        if (!(fabs(gi - fd) <= 1e-6 * fabs(fd) + 1e-12))
            fail_msg("FD convert [%d]: grad %.9g, finite difference %.9g", i, gi, fd);
    }
    outs_free(&go);
    remat_program_free(pl);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* checkpoint_name is the identity, for values and cotangents, bit for bit */
static void test_ad_name_is_identity_for_values_and_cotangents(void **state)
{
    int64_t d[2] = {2, 3};
    double x[6], ct[6];
    fill_inputs(x, 6, -2, 2, 0);
    fill_inputs(ct, 6, -1, 1, 0);
    remat_fn *f = remat_fn_new("name");
    remat_val a = remat_arg(f, "x", REMAT_F64, 2, d);
    remat_val n = remat_name(f, remat_exp(f, a), "tag");
    assert_int_equal(remat_val_op(f, n), REMAT_OP_NAME);
    remat_fn_output(f, remat_name(f, n, "again"));
    remat_fn *g = NULL;
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    remat_tensor in[2] = {remat_tensor_f64(x, 2, d), remat_tensor_f64(ct, 2, d)};
    outs_t o;
    run_fn(g, 2, in, &o, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        double y = ((double *)o.t[0].data)[i];
        assert_true(fabs(y - exp(x[i])) <= 1e-15 * exp(x[i]));
        assert_true(((double *)o.t[1].data)[i] == ct[i] * y); /* exp's rule alone: g * y, names add nothing */
    }
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* reduce_max shares the cotangent equally among the positions equal to the
 * max (-0 and +0 are equal), and a NaN in a run makes the run's max and its
 * whole cotangent NaN, as JAX's reduce_chooser rule (checked against JAX in
 * ops_nn.json too). */
static void test_ad_reduce_max_ties_share_the_cotangent(void **state)
{
    double x[12] = {2, 2, 1, 0.5, 3, 3, 3, -1, 0.0, -0.0, -1, -2};
    double want[12] = {0.5, 0.5, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0.5, 0.5, 0, 0};
    int64_t d[2] = {3, 4};
    remat_fn *f = remat_fn_new("max_ties");
    remat_val a = remat_arg(f, "x", REMAT_F64, 2, d);
    remat_fn_output(f, remat_sum_all(f, remat_reduce_max(f, a, 1, ((int[]){1}))));
    remat_fn *g = grad_ok(f, 0, NULL);
    remat_tensor in = remat_tensor_f64(x, 2, d);
    outs_t o;
    run_fn(g, 1, &in, &o, NULL, NULL);
    for (int i = 0; i < 12; i++)
        if (((double *)o.t[0].data)[i] != want[i])
            fail_msg("element %d: d = %.17g, want %.17g", i, ((double *)o.t[0].data)[i], want[i]);
    outs_free(&o);
    x[5] = NAN; /* row 1: NaN max, NaN cotangent everywhere in it; the others unchanged */
    remat_fn *v = NULL;
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &v), REMAT_OK);
    run_fn(v, 1, &in, &o, NULL, NULL);
    assert_true(isnan(*(double *)o.t[0].data));
    for (int i = 0; i < 12; i++) {
        double gi = ((double *)o.t[1].data)[i];
        if (i / 4 == 1 ? !isnan(gi) : gi != want[i])
            fail_msg("NaN row: element %d: d = %g", i, gi);
    }
    outs_free(&o);
    remat_fn_free(v);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* stop_gradient: the identity forward (the same bits, no instruction of its
 * own), a zero cotangent backward; x * stop_gradient(x) differentiates to x,
 * not 2x. */
static void test_ad_stop_gradient_is_identity_with_zero_cotangent(void **state)
{
    int64_t d[2] = {2, 3};
    double x[6];
    fill_inputs(x, 6, -2, 2, 0);
    remat_fn *f = remat_fn_new("stop");
    remat_val a = remat_arg(f, "x", REMAT_F64, 2, d);
    remat_val s = remat_stop_gradient(f, remat_sin(f, a));
    assert_int_equal(remat_val_op(f, s), REMAT_OP_STOP_GRADIENT);
    remat_fn_output(f, s);
    remat_tensor in = remat_tensor_f64(x, 2, d);
    outs_t o;
    remat_stats st;
    run_fn(f, 1, &in, &o, &st, NULL);
    for (int i = 0; i < 6; i++)
        assert_true(((double *)o.t[0].data)[i] == sin(x[i]));
    assert_int_equal(st.op_counts[REMAT_OP_STOP_GRADIENT], 0); /* aliased, no copy */
    assert_int_equal(st.ops_executed, 1);
    outs_free(&o);
    remat_fn_free(f);

    f = remat_fn_new("stop_half");
    a = remat_arg(f, "x", REMAT_F64, 2, d);
    remat_val b = remat_arg(f, "y", REMAT_F64, 2, d);
    remat_val sa = remat_stop_gradient(f, a);
    remat_fn_output(f, remat_sum_all(f, remat_add(f, remat_mul(f, a, sa), remat_stop_gradient(f, remat_exp(f, b)))));
    remat_fn *g = grad_ok(f, 0, NULL);
    remat_tensor in2[2] = {remat_tensor_f64(x, 2, d), remat_tensor_f64(x, 2, d)};
    run_fn(g, 2, in2, &o, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        assert_true(((double *)o.t[0].data)[i] == x[i]);
        assert_true(((double *)o.t[1].data)[i] == 0.0);
    }
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);
}

static remat_val fd_custom(remat_fn *f, const remat_val *x)
{
    remat_shape s = remat_val_shape(f, x[0]);
    return remat_custom(f, &xsin_op, 2, x, REMAT_F64, s.rank, s.dims);
}

static void test_ad_custom_op_gradient_and_finite_differences(void **state)
{
    int64_t d[2] = {2, 3};
    double x[6], y[6];
    fill_inputs(x, 6, -2, 2, 0);
    fill_inputs(y, 6, -2, 2, 0);
    /* grad of sum(xsin(x, y)) against the formula, w.r.t. x and y */
    remat_fn *f = remat_fn_new("custom");
    remat_val a[2] = {remat_arg(f, "x", REMAT_F64, 2, d), remat_arg(f, "y", REMAT_F64, 2, d)};
    remat_fn_output(f, remat_sum_all(f, fd_custom(f, a)));
    assert_fn_ok(f);
    remat_fn *g = grad_ok(f, 0, NULL);
    remat_tensor in[2] = {remat_tensor_f64(x, 2, d), remat_tensor_f64(y, 2, d)};
    outs_t o;
    memset(&xsin_counts, 0, sizeof xsin_counts);
    run_fn(g, 2, in, &o, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 1); /* the VJP callback is handed the forward output */
    assert_int_equal(xsin_counts.vjp_calls, 2);
    for (int i = 0; i < 6; i++) {
        assert_true(fabs(((double *)o.t[0].data)[i] - sin(y[i])) <= 1e-15);
        assert_true(fabs(((double *)o.t[1].data)[i] - x[i] * cos(y[i])) <= 1e-15);
    }
    outs_free(&o);
    remat_fn_free(g);

    /* value_and_grad: the value, and the same bits inside a nothing_saveable region */
    remat_fn *vg = NULL;
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &vg), REMAT_OK);
    memset(&xsin_counts, 0, sizeof xsin_counts);
    outs_t o1, o2;
    run_fn(vg, 2, in, &o1, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 1);
    double want = 0;
    for (int i = 0; i < 6; i++)
        want += x[i] * sin(y[i]);
    assert_true(fabs(*(double *)o1.t[0].data - want) <= 1e-14);
    remat_fn *ck = remat_checkpoint(f, remat_nothing_saveable);
    remat_fn *vgc = NULL;
    assert_int_equal(remat_value_and_grad(ck, 0, NULL, &vgc), REMAT_OK);
    run_fn(vgc, 2, in, &o2, NULL, NULL);
    for (int k = 0; k < 3; k++)
        assert_memory_equal(o1.t[k].data, o2.t[k].data, tbytes(REMAT_F64, &o1.t[k].shape)); /* contract 3 */
    outs_free(&o1);
    outs_free(&o2);
    remat_fn_free(vgc);
    remat_fn_free(ck);
    remat_fn_free(vg);
    remat_fn_free(f);

    /* under nothing_saveable the output the VJP callback reads is recomputed:
     * value_and_grad runs the forward callback for the value, then again in
     * the backward (grad alone would drop the forward as dead code) */
    f = remat_fn_new("custom2");
    remat_val b[2] = {remat_arg(f, "x", REMAT_F64, 2, d), remat_arg(f, "y", REMAT_F64, 2, d)};
    remat_val z = fd_custom(f, b);
    remat_fn_output(f, remat_sum_all(f, remat_exp(f, z)));
    ck = remat_checkpoint(f, NULL);
    remat_fn *g1 = NULL, *g2 = NULL;
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &g1), REMAT_OK);
    assert_int_equal(remat_value_and_grad(ck, 0, NULL, &g2), REMAT_OK);
    memset(&xsin_counts, 0, sizeof xsin_counts);
    run_fn(g1, 2, in, &o1, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 1);
    memset(&xsin_counts, 0, sizeof xsin_counts);
    run_fn(g2, 2, in, &o2, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 2); /* forward + recompute in the backward */
    for (int k = 0; k < 3; k++)
        assert_memory_equal(o1.t[k].data, o2.t[k].data, tbytes(REMAT_F64, &o1.t[k].shape)); /* contract 3 */
    for (int i = 0; i < 6; i++) { /* d/dx exp(x sin y) = exp(.) sin y */
        double e = exp(x[i] * sin(y[i]));
        assert_true(fabs(((double *)o1.t[1].data)[i] - e * sin(y[i])) <= 1e-14 * e);
        assert_true(fabs(((double *)o1.t[2].data)[i] - e * x[i] * cos(y[i])) <= 1e-14 * e);
    }
    outs_free(&o1);
    outs_free(&o2);
    remat_fn_free(g1);
    remat_fn_free(g2);
    remat_fn_free(ck);
    remat_fn_free(f);

    /* central differences of sum(w * xsin(x, y)) */
    remat_shape s[2] = {shape_of(2, d), shape_of(2, d)};
    double *xs[2] = {x, y};
    fd_check("custom xsin", 2, s, xs, fd_custom);
}

static void test_ad_custom_op_without_vjp_fails_at_grad_time(void **state)
{
    static xsin_ctx counts;
    static const remat_custom_op novjp = {"fused_novjp", xsin_forward, NULL, &counts};
    int64_t d[1] = {3};
    remat_fn *f = remat_fn_new("novjp");
    remat_val a[2] = {remat_arg(f, "x", REMAT_F64, 1, d), remat_arg(f, "y", REMAT_F64, 1, d)};
    int line;
    remat_val z = remat_custom(f, &novjp, 2, a, REMAT_F64, 1, d); line = __LINE__;
    remat_fn_output(f, remat_sum_all(f, z));
    assert_fn_ok(f); /* building is fine ... */
    double x[3] = {1, 2, 3}, y[3] = {0.5, 1, 1.5};
    remat_tensor in[2] = {remat_tensor_f64(x, 1, d), remat_tensor_f64(y, 1, d)};
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL); /* ... and so is running the forward */
    assert_true(fabs(*(double *)o.t[0].data - (sin(0.5) + 2 * sin(1.0) + 3 * sin(1.5))) <= 1e-14);
    outs_free(&o);
    remat_fn *g = (remat_fn *)0x1;
    assert_int_equal(remat_grad(f, 0, NULL, &g), REMAT_ERR_UNSUPPORTED); /* ... grad is not */
    assert_null(g);
    char loc[64];
    snprintf(loc, sizeof loc, "test_ad_ops.c:%d", line);
    assert_contains(remat_last_error(), "fused_novjp");
    assert_contains(remat_last_error(), loc);
    /* not differentiating through it is fine: grad w.r.t. nothing it feeds */
    remat_fn *f2 = remat_fn_new("novjp2");
    remat_val b[3] = {remat_arg(f2, "x", REMAT_F64, 1, d), remat_arg(f2, "y", REMAT_F64, 1, d),
                      remat_arg(f2, "w", REMAT_F64, 1, d)};
    remat_val z2 = remat_custom(f2, &novjp, 2, b, REMAT_F64, 1, d);
    remat_fn_output(f2, remat_sum_all(f2, remat_mul(f2, z2, b[2])));
    g = NULL;
    assert_int_equal(remat_grad(f2, 1, ((int[]){2}), &g), REMAT_OK);
    remat_fn_free(g);
    remat_fn_free(f2);
    remat_fn_free(f);
}

/* ==== 6. vjp and value_and_grad: output order, argnums, unused arguments ==== */

static void test_ad_vjp_outputs_order_and_argnums(void **state)
{
    int64_t d3[1] = {3}, d2[1] = {2};
    /* f(x, y, z) = (x * y, sum(sin x)); z unused */
    remat_fn *f = remat_fn_new("two_out");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, d3), y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_arg(f, "z", REMAT_F64, 1, d2);
    remat_fn_output(f, remat_mul(f, x, y));
    remat_fn_output(f, remat_sum_all(f, remat_sin(f, x)));
    int nodes = remat_fn_num_nodes(f);
    double xv[3] = {0.3, -1.2, 2.0}, yv[3] = {1.5, 0.25, -0.75}, zv[2] = {4, 5}, ct0[3] = {1, -2, 0.5}, ct1 = 3.0;
    remat_tensor in[5] = {remat_tensor_f64(xv, 1, d3), remat_tensor_f64(yv, 1, d3), remat_tensor_f64(zv, 1, d2),
                          remat_tensor_f64(ct0, 1, d3), remat_tensor_f64(&ct1, 0, NULL)};

    /* argnums {2, 0}: outputs (x*y, sum sin x, dz, dx) */
    remat_fn *g = NULL;
    assert_int_equal(remat_vjp(f, 2, ((int[]){2, 0}), &g), REMAT_OK);
    assert_int_equal(remat_fn_num_nodes(f), nodes); /* f untouched */
    assert_int_equal(remat_fn_num_args(g), 5);
    assert_int_equal(remat_fn_num_outputs(g), 4);
    remat_program *p = compile_ok(g);
    assert_int_equal(remat_program_num_inputs(p), 5);
    for (int i = 0; i < 5; i++) {
        remat_tensor dsc = remat_program_input_desc(p, i);
        assert_int_equal(dsc.dtype, REMAT_F64);
        assert_true(remat_shape_equal(&dsc.shape, &in[i].shape));
    }
    outs_t o;
    run_prog(p, 5, in, &o, NULL);
    remat_program_free(p);
    assert_int_equal(o.n, 4);
    assert_int_equal(o.t[1].shape.rank, 0);
    assert_true(remat_shape_equal(&o.t[2].shape, &in[2].shape));
    assert_true(remat_shape_equal(&o.t[3].shape, &in[0].shape));
    double s = 0;
    for (int i = 0; i < 3; i++) {
        assert_true(((double *)o.t[0].data)[i] == xv[i] * yv[i]);
        s += sin(xv[i]);
        double want = ct0[i] * yv[i] + ct1 * cos(xv[i]);
        assert_true(fabs(((double *)o.t[3].data)[i] - want) <= 1e-15 * (1 + fabs(want)));
    }
    assert_true(fabs(*(double *)o.t[1].data - s) <= 1e-15 * 3);
    assert_true(((double *)o.t[2].data)[0] == 0.0 && ((double *)o.t[2].data)[1] == 0.0); /* unused: zeros */
    outs_free(&o);
    remat_fn_free(g);

    /* all arguments: (x*y, sum sin x, dx, dy, dz) */
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    run_fn(g, 5, in, &o, NULL, NULL);
    assert_int_equal(o.n, 5);
    for (int i = 0; i < 3; i++) {
        double want = ct0[i] * yv[i] + ct1 * cos(xv[i]);
        assert_true(fabs(((double *)o.t[2].data)[i] - want) <= 1e-15 * (1 + fabs(want)));
        assert_true(((double *)o.t[3].data)[i] == ct0[i] * xv[i]);
    }
    assert_true(((double *)o.t[4].data)[0] == 0.0 && ((double *)o.t[4].data)[1] == 0.0);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* value_and_grad of h(x, y, z) = sum(x * y) + sum(sin x): (value, dy, dz) */
    f = remat_fn_new("scalar");
    x = remat_arg(f, "x", REMAT_F64, 1, d3), y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_arg(f, "z", REMAT_F64, 1, d2);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_mul(f, x, y)), remat_sum_all(f, remat_sin(f, x))));
    assert_int_equal(remat_value_and_grad(f, 2, ((int[]){1, 2}), &g), REMAT_OK);
    assert_int_equal(remat_fn_num_args(g), 3); /* no cotangent argument */
    run_fn(g, 3, in, &o, NULL, NULL);
    assert_int_equal(o.n, 3);
    double val = 0;
    for (int i = 0; i < 3; i++)
        val += xv[i] * yv[i];
    val += s;
    assert_true(fabs(*(double *)o.t[0].data - val) <= 1e-14);
    for (int i = 0; i < 3; i++)
        assert_true(((double *)o.t[1].data)[i] == xv[i]);
    assert_true(((double *)o.t[2].data)[0] == 0.0 && ((double *)o.t[2].data)[1] == 0.0);
    outs_free(&o);
    remat_fn_free(g);
    /* grad with a repeated argnum: the same gradient twice */
    g = grad_ok(f, 2, ((int[]){1, 1}));
    run_fn(g, 3, in, &o, NULL, NULL);
    assert_int_equal(o.n, 2);
    assert_memory_equal(o.t[0].data, o.t[1].data, 3 * sizeof(double)); /* contract 1 */
    outs_free(&o);
    remat_fn_free(g);
    /* grad of the unused argument alone */
    g = grad_ok(f, 1, ((int[]){2}));
    run_fn(g, 3, in, &o, NULL, NULL);
    assert_int_equal(o.n, 1);
    assert_true(((double *)o.t[0].data)[0] == 0.0 && ((double *)o.t[0].data)[1] == 0.0);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* ---- main ---- */

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_ops_value_and_vjp_match_jax),
        cmocka_unit_test(test_ad_ties_and_relu_at_zero_follow_jax),
        cmocka_unit_test(test_ad_pad_negative_is_rejected),
        cmocka_unit_test(test_ad_dot_general_matches_jax),
        cmocka_unit_test(test_ad_every_primitive_matches_finite_differences),
        cmocka_unit_test(test_ad_dot_general_matches_finite_differences),
        cmocka_unit_test(test_ad_convert_value_vjp_and_finite_differences),
        cmocka_unit_test(test_ad_name_is_identity_for_values_and_cotangents),
        cmocka_unit_test(test_ad_reduce_max_ties_share_the_cotangent),
        cmocka_unit_test(test_ad_stop_gradient_is_identity_with_zero_cotangent),
        cmocka_unit_test(test_ad_custom_op_gradient_and_finite_differences),
        cmocka_unit_test(test_ad_custom_op_without_vjp_fails_at_grad_time),
        cmocka_unit_test(test_ad_vjp_outputs_order_and_argnums),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
