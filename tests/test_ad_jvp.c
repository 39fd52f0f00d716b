/*
 * test_ad_jvp.c — forward mode: remat_jvp of every primitive, remat_jacfwd,
 * remat_hvp, and JVPs through checkpoint regions.
 *
 * Expectations come from outside the transform: jax.jvp in f64
 * (tests/goldens/jvp.json, tools/goldens/gen_jvp_goldens.py; ties and
 * relu(0) included, which finite differences cannot see), central finite
 * differences in f64 (J v against (f(x + h v) - f(x - h v)) / 2h), and
 * reverse mode, tested against JAX elsewhere, through the transpose
 * identity <w, J v> = <J^T w, v>. jacfwd, hvp, regions and scans are in
 * test_ad_jvp_transforms.c.
 *
 * Bitwise assertions rest on contract 5 (docs/design-notes.md, "Bitwise
 * contracts"): a JVP's primal outputs are f's.
 */
#include "ad_builders.h"
#include "test_ad_util.h"
#include "test_golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

typedef remat_val (*builder)(remat_fn *f, const remat_val *x);

typedef struct {
    const char *name;
    int n_in;
    int rank[3];
    int64_t dims[3][4];
    double lo, hi; /* inputs uniform in [lo, hi] ... */
    double avoid;  /* ... with |x| >= avoid */
    builder build;
} jvp_case;

static remat_val b_select(remat_fn *f, const remat_val *x)
{
    static const double pred[6] = {1, 0, 0, 1, 1, 0};
    remat_val p = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){2, 3}), pred);
    return remat_select(f, p, x[0], x[1]);
}
/* one branch constant: its tangent is a zero the rule materialises */
static remat_val b_select_const(remat_fn *f, const remat_val *x)
{
    return remat_select(f, remat_gt(f, x[0], x[1]), x[0], remat_const_fill(f, REMAT_F64, 2, ((int64_t[]){2, 3}), 0.5));
}
/* compares have zero tangents: x * (x > y) + y * (x <= y) */
static remat_val b_compare(remat_fn *f, const remat_val *x)
{
    return remat_add(f, remat_mul(f, x[0], remat_gt(f, x[0], x[1])), remat_mul(f, x[1], remat_le(f, x[0], x[1])));
}
static remat_val b_convert(remat_fn *f, const remat_val *x) { return remat_convert(f, x[0], REMAT_F64); }
static remat_val b_bcast(remat_fn *f, const remat_val *x)
{
    return remat_broadcast_in_dim(f, x[0], 3, ((int64_t[]){2, 3, 4}), ((int[]){1}));
}
static remat_val b_slice(remat_fn *f, const remat_val *x)
{
    return remat_slice(f, x[0], ((int64_t[]){1, 0}), ((int64_t[]){4, 6}), ((int64_t[]){2, 3}));
}
static remat_val b_pad(remat_fn *f, const remat_val *x)
{
    return remat_pad(f, x[0], ((int64_t[]){1, 0}), ((int64_t[]){0, 2}), ((int64_t[]){1, 1}));
}
static remat_val b_concat(remat_fn *f, const remat_val *x)
{
    remat_val v[4] = {x[0], remat_const_fill(f, REMAT_F64, 2, ((int64_t[]){2, 2}), 3.0), x[1], x[2]};
    return remat_concatenate(f, 4, v, 1);
}
static remat_val b_matmul(remat_fn *f, const remat_val *x) { return remat_matmul(f, x[0], x[1]); }
static remat_val b_batched_dot(remat_fn *f, const remat_val *x)
{
    remat_dot_dims d = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}, .n_batch = 1, .lhs_batch = {0},
                        .rhs_batch = {0}};
    return remat_dot_general(f, x[0], x[1], &d);
}

static const jvp_case cases[] = {
    {"add", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, ab_add},
    {"sub", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, ab_sub},
    {"mul", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, ab_mul},
    {"div", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0.5, ab_div},
    {"max", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, ab_max},
    {"min", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, ab_min},
    {"neg", 1, {2}, {{2, 3}}, -2, 2, 0, ab_neg},
    {"exp", 1, {2}, {{2, 3}}, -2, 2, 0, ab_exp},
    {"log", 1, {2}, {{2, 3}}, 0.2, 3, 0, ab_log},
    {"sin", 1, {2}, {{2, 3}}, -2, 2, 0, ab_sin},
    {"cos", 1, {2}, {{2, 3}}, -2, 2, 0, ab_cos},
    {"tanh", 1, {2}, {{2, 3}}, -2, 2, 0, ab_tanh},
    {"relu", 1, {2}, {{2, 3}}, -2, 2, 0.05, ab_relu},
    {"square", 1, {2}, {{2, 3}}, -2, 2, 0, ab_square},
    {"sqrt", 1, {2}, {{2, 3}}, 0.2, 3, 0, ab_sqrt},
    {"erf", 1, {2}, {{2, 3}}, -2.5, 2.5, 0, ab_erf},
    {"log1p", 1, {2}, {{2, 3}}, -0.8, 3, 0, ab_log1p},
    {"expm1", 1, {2}, {{2, 3}}, -3, 2, 0, ab_expm1},
    {"logistic", 1, {2}, {{2, 3}}, -6, 6, 0, ab_logistic},
    {"erf_inv", 1, {2}, {{2, 3}}, -0.9, 0.9, 0, ab_erf_inv},
    {"integer_pow_3", 1, {2}, {{2, 3}}, -2, 2, 0, ab_ipow3},
    {"integer_pow_2", 1, {2}, {{2, 3}}, -2, 2, 0, ab_ipow2},
    {"integer_pow_1", 1, {2}, {{2, 3}}, -2, 2, 0, ab_ipow1},
    {"integer_pow_0", 1, {2}, {{2, 3}}, -2, 2, 0, ab_ipow0},
    {"integer_pow_-2", 1, {2}, {{2, 3}}, -2, 2, 0.5, ab_ipowm2},
    {"pow_2.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, ab_pow25},
    {"pow_-0.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, ab_powm05},
    {"select", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_select},
    {"select_const_branch", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_select_const},
    {"compare", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_compare},
    {"convert", 1, {2}, {{2, 3}}, -2, 2, 0, b_convert},
    {"reduce_sum_axes_0_2", 1, {3}, {{2, 3, 4}}, -2, 2, 0, ab_sum02},
    {"reduce_sum_all", 1, {3}, {{2, 3, 4}}, -2, 2, 0, ab_sum_all},
    {"reduce_max_axis_1", 1, {3}, {{2, 3, 4}}, -2, 2, 0, ab_rmax1},
    {"reduce_max_all", 1, {3}, {{2, 3, 4}}, -2, 2, 0, ab_rmax_all},
    {"broadcast_in_dim", 1, {1}, {{3}}, -2, 2, 0, b_bcast},
    {"reshape", 1, {3}, {{2, 3, 4}}, -2, 2, 0, ab_reshape},
    {"transpose", 1, {3}, {{2, 3, 4}}, -2, 2, 0, ab_transpose},
    {"slice_strided", 1, {2}, {{4, 6}}, -2, 2, 0, b_slice},
    {"pad_interior", 1, {2}, {{2, 3}}, -2, 2, 0, b_pad},
    {"concatenate_with_constant", 3, {2, 2, 2}, {{2, 3}, {2, 2}, {2, 1}}, -2, 2, 0, b_concat},
    {"matmul", 2, {2, 2}, {{3, 4}, {4, 2}}, -2, 2, 0, b_matmul},
    {"dot_general_batched", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, -2, 2, 0, b_batched_dot},
    {"name", 1, {2}, {{2, 3}}, -2, 2, 0, ab_name},
};


static remat_fn *build_case(const jvp_case *c, remat_shape *shapes)
{
    remat_fn *f = remat_fn_new(c->name);
    remat_val x[3];
    char an[16];
    for (int k = 0; k < c->n_in; k++) {
        shapes[k] = remat_shape_make(c->rank[k], c->dims[k]);
        snprintf(an, sizeof an, "x%d", k);
        x[k] = remat_arg(f, an, REMAT_F64, shapes[k].rank, shapes[k].dims);
    }
    remat_fn_output(f, c->build(f, x));
    assert_fn_ok(f);
    return f;
}



/* J v against central differences, the primal output bitwise f's, and
 * <w, J v> = <J^T w, v> against remat_vjp. */
static void check_case(const jvp_case *c)
{
    remat_shape sh[3];
    remat_fn *f = build_case(c, sh);
    remat_fn *j = jvp_ok(f, 0, NULL);
    int n_in = c->n_in;
    double *x[3], *v[3];
    remat_tensor in[6];
    for (int k = 0; k < n_in; k++) {
        int64_t n = remat_shape_numel(&sh[k]);
        x[k] = xmalloc(sizeof(double) * (size_t)n);
        v[k] = xmalloc(sizeof(double) * (size_t)n);
        fill_uniform(x[k], n, c->lo, c->hi, c->avoid);
        fill_uniform(v[k], n, -1, 1, 0);
        in[k] = remat_tensor_f64(x[k], sh[k].rank, sh[k].dims);
        in[n_in + k] = remat_tensor_f64(v[k], sh[k].rank, sh[k].dims);
    }
    outs_t jo, fo, po, mo;
    run_fn(j, 2 * n_in, in, &jo, NULL, NULL);
    run_fn(f, n_in, in, &fo, NULL, NULL);
    assert_int_equal(jo.n, 2);
    int64_t ny = remat_shape_numel(&fo.t[0].shape);
    assert_true(remat_shape_equal(&jo.t[1].shape, &fo.t[0].shape));
    if (memcmp(jo.t[0].data, fo.t[0].data, sizeof(double) * (size_t)ny) != 0)
        fail_msg("jvp %s: the primal output differs from f's", c->name);

    /* central differences along v */
    const double h = 1e-6;
    remat_program *p = compile_ok(f);
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < n_in; k++)
            for (int64_t i = 0; i < remat_shape_numel(&sh[k]); i++)
                x[k][i] += (s == 0 ? h : -2 * h) * v[k][i];
        run_prog(p, n_in, in, s == 0 ? &po : &mo, NULL);
    }
    for (int k = 0; k < n_in; k++)
        for (int64_t i = 0; i < remat_shape_numel(&sh[k]); i++)
            x[k][i] += h * v[k][i];
    const double *jv = jo.t[1].data, *yp = po.t[0].data, *ym = mo.t[0].data;
    for (int64_t i = 0; i < ny; i++) {
        double fd = (yp[i] - ym[i]) / (2 * h);
        double tol = 1e-6 * fabs(fd) + 1e-7;
        if (!(fabs(jv[i] - fd) <= tol))
            fail_msg("jvp %s: (J v)[%lld] = %.12g, finite difference %.12g", c->name, (long long)i, jv[i], fd);
    }

    /* <w, J v> = <J^T w, v> */
    remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL);
    double *w = xmalloc(sizeof(double) * (size_t)(ny ? ny : 1));
    fill_uniform(w, ny, -1, 1, 0);
    remat_tensor vin[4];
    for (int k = 0; k < n_in; k++)
        vin[k] = in[k];
    vin[n_in] = remat_tensor_f64(w, fo.t[0].shape.rank, fo.t[0].shape.dims);
    outs_t vo;
    run_fn(vj, n_in + 1, vin, &vo, NULL, NULL);
    double lhs = dot_n(w, jv, ny), rhs = 0, scale = 0;
    for (int k = 0; k < n_in; k++) {
        rhs += dot_n(vo.t[1 + k].data, v[k], remat_shape_numel(&sh[k]));
        scale += fabs(dot_n(vo.t[1 + k].data, v[k], remat_shape_numel(&sh[k])));
    }
    if (!(fabs(lhs - rhs) <= 1e-13 * (1 + scale + fabs(lhs))))
        fail_msg("jvp %s: <w, J v> = %.17g but <J^T w, v> = %.17g", c->name, lhs, rhs);

    outs_free(&jo);
    outs_free(&fo);
    outs_free(&po);
    outs_free(&mo);
    outs_free(&vo);
    remat_program_free(p);
    remat_fn_free(vj);
    remat_fn_free(j);
    remat_fn_free(f);
    free(w);
    for (int k = 0; k < n_in; k++) {
        free(x[k]);
        free(v[k]);
    }
}

static void test_ad_jvp_every_op(void **state)
{
    (void)state;
    rng_seed(10);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

/* jvp w.r.t. x of x + g(y): the tangent is t_x itself, and nothing is
 * emitted for g(y)'s symbolic zero tangent (no node beyond f's and t_x). */
static void test_ad_jvp_symbolic_zeros(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("zeros");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){3}));
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, ((int64_t[]){3}));
    remat_val gy = remat_exp(f, remat_sin(f, remat_mul(f, y, y)));
    remat_fn_output(f, remat_add(f, x, gy));
    assert_fn_ok(f);
    remat_fn *j = jvp_ok(f, 1, (int[]){0});
    assert_int_equal(remat_fn_num_args(j), 3);
    assert_string_equal(remat_fn_arg_name(j, 2), "t_x");
    assert_int_equal(remat_fn_num_nodes(j), remat_fn_num_nodes(f) + 1);
    assert_int_equal(remat_fn_out(j, 1), remat_fn_arg(j, 2));
    remat_fn_free(j);
    remat_fn_free(f);
}

/* ---- jax.jvp goldens ---- */

static remat_val b_rmax2(remat_fn *f, const remat_val *x) { return remat_reduce_max(f, x[0], 1, ((int[]){2})); }
static remat_val b_concat3(remat_fn *f, const remat_val *x) { return remat_concatenate(f, 3, x, 1); }

static const struct {
    const char *name;
    builder build;
} golden_builders[] = {
    {"add", ab_add}, {"sub", ab_sub}, {"mul", ab_mul}, {"div", ab_div}, {"max_ties", ab_max}, {"min_ties", ab_min},
    {"neg", ab_neg}, {"exp", ab_exp}, {"log", ab_log}, {"sin", ab_sin}, {"cos", ab_cos}, {"tanh", ab_tanh},
    {"relu_at_zero", ab_relu}, {"square", ab_square}, {"sqrt", ab_sqrt}, {"erf", ab_erf},
    {"integer_pow_3", ab_ipow3}, {"integer_pow_-2", ab_ipowm2}, {"integer_pow_0", ab_ipow0}, {"pow_2.5", ab_pow25},
    {"select", b_select}, {"reduce_sum_axes_0_2", ab_sum02}, {"reduce_max_ties_axis_2", b_rmax2},
    {"reduce_max_ties_all", ab_rmax_all}, {"broadcast_in_dim", b_bcast}, {"reshape", ab_reshape},
    {"transpose", ab_transpose}, {"slice_strided", b_slice}, {"pad_interior", b_pad}, {"concatenate", b_concat3},
    {"matmul", b_matmul}, {"dot_general_batched", b_batched_dot},
};


static void check_close_golden(const char *what, const remat_tensor *got, const cJSON *want)
{
    jarr w = jarr_get(want);
    assert_true(remat_shape_equal(&got->shape, &w.shape));
    check_close(what, w.n, got->data, w.data, 1e-13, 1e-15);
    free(w.data);
}

/* Every case of jvp.json: primal and tangent outputs against jax.jvp */
static void test_ad_jvp_jax_goldens(void **state)
{
    (void)state;
    const cJSON *gcases = jget(golden("jvp.json"), "cases");
    int n_cases = cJSON_GetArraySize(gcases), seen = 0;
    for (int c = 0; c < n_cases; c++) {
        const cJSON *gc = cJSON_GetArrayItem(gcases, c);
        const char *name = jget(gc, "name")->valuestring;
        const cJSON *ins = jget(gc, "inputs"), *tans = jget(gc, "tangents");
        int n_in = cJSON_GetArraySize(ins);
        jarr x[3], t[3];
        remat_tensor in[6];
        for (int k = 0; k < n_in; k++) {
            x[k] = jarr_get(cJSON_GetArrayItem(ins, k));
            t[k] = jarr_get(cJSON_GetArrayItem(tans, k));
            in[k] = jarr_tensor(&x[k]);
            in[n_in + k] = jarr_tensor(&t[k]);
        }
        remat_fn *f = NULL;
        if (strcmp(name, "scan") == 0) {
            f = jvp_scan_net(0);
        } else {
            for (size_t b = 0; b < sizeof golden_builders / sizeof golden_builders[0]; b++)
                if (strcmp(golden_builders[b].name, name) == 0) {
                    f = remat_fn_new(name);
                    remat_val xv[3];
                    for (int k = 0; k < n_in; k++)
                        xv[k] = remat_arg(f, "x", REMAT_F64, x[k].shape.rank, x[k].shape.dims);
                    remat_fn_output(f, golden_builders[b].build(f, xv));
                    assert_fn_ok(f);
                }
        }
        if (!f)
            fail_msg("jvp.json case '%s' has no builder here", name);
        remat_fn *j = jvp_ok(f, 0, NULL);
        outs_t o;
        run_fn(j, 2 * n_in, in, &o, NULL, NULL);
        int no = remat_fn_num_outputs(f);
        char what[96];
        for (int k = 0; k < no; k++) {
            const cJSON *wo = jget(gc, "out"), *wt = jget(gc, "tangent_out");
            snprintf(what, sizeof what, "jax.jvp %s out %d", name, k);
            check_close_golden(what, &o.t[k], cJSON_IsArray(wo) ? cJSON_GetArrayItem(wo, k) : wo);
            snprintf(what, sizeof what, "jax.jvp %s tangent %d", name, k);
            check_close_golden(what, &o.t[no + k], cJSON_IsArray(wt) ? cJSON_GetArrayItem(wt, k) : wt);
        }
        outs_free(&o);
        remat_fn_free(j);
        remat_fn_free(f);
        for (int k = 0; k < n_in; k++) {
            free(x[k].data);
            free(t[k].data);
        }
        seen++;
    }
    assert_int_equal(seen, 33);
}

/* stop_gradient's tangent is zero (finite differences cannot see it):
 * jvp(x * stop_gradient(x)) = stop_gradient(x) * t exactly, as jax.jvp */
static void test_ad_jvp_stop_gradient(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("sg");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){3}));
    remat_fn_output(f, remat_mul(f, x, remat_stop_gradient(f, x)));
    assert_fn_ok(f);
    remat_fn *j = jvp_ok(f, 0, NULL);
    double xv[3] = {0.5, -2, 3}, tv[3] = {1.5, 0.25, -1};
    remat_tensor in[2] = {remat_tensor_f64(xv, 1, (int64_t[]){3}), remat_tensor_f64(tv, 1, (int64_t[]){3})};
    outs_t o;
    run_fn(j, 2, in, &o, NULL, NULL);
    for (int i = 0; i < 3; i++)
        assert_true(((double *)o.t[1].data)[i] == tv[i] * xv[i]);
    outs_free(&o);
    remat_fn_free(j);
    remat_fn_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_jvp_every_op),
        cmocka_unit_test(test_ad_jvp_jax_goldens),
        cmocka_unit_test(test_ad_jvp_symbolic_zeros),
        cmocka_unit_test(test_ad_jvp_stop_gradient),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
