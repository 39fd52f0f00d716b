/*
 * test_ad_jvp.c — forward mode: remat_jvp of every primitive, remat_jacfwd,
 * remat_hvp, and JVPs through checkpoint regions.
 *
 * Expectations come from outside the transform: jax.jvp in f64
 * (tests/goldens/jvp.json, tools/goldens/gen_jvp_goldens.py; ties and
 * relu(0) included, which finite differences cannot see), central finite
 * differences in f64 (J v against (f(x + h v) - f(x - h v)) / 2h), and
 * reverse mode, tested against JAX elsewhere, through the transpose
 * identity <w, J v> = <J^T w, v>.
 */
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

static remat_val b_add(remat_fn *f, const remat_val *x) { return remat_add(f, x[0], x[1]); }
static remat_val b_sub(remat_fn *f, const remat_val *x) { return remat_sub(f, x[0], x[1]); }
static remat_val b_mul(remat_fn *f, const remat_val *x) { return remat_mul(f, x[0], x[1]); }
static remat_val b_div(remat_fn *f, const remat_val *x) { return remat_div(f, x[0], x[1]); }
static remat_val b_max(remat_fn *f, const remat_val *x) { return remat_max(f, x[0], x[1]); }
static remat_val b_min(remat_fn *f, const remat_val *x) { return remat_min(f, x[0], x[1]); }
static remat_val b_neg(remat_fn *f, const remat_val *x) { return remat_neg(f, x[0]); }
static remat_val b_exp(remat_fn *f, const remat_val *x) { return remat_exp(f, x[0]); }
static remat_val b_log(remat_fn *f, const remat_val *x) { return remat_log(f, x[0]); }
static remat_val b_sin(remat_fn *f, const remat_val *x) { return remat_sin(f, x[0]); }
static remat_val b_cos(remat_fn *f, const remat_val *x) { return remat_cos(f, x[0]); }
static remat_val b_tanh(remat_fn *f, const remat_val *x) { return remat_tanh(f, x[0]); }
static remat_val b_relu(remat_fn *f, const remat_val *x) { return remat_relu(f, x[0]); }
static remat_val b_square(remat_fn *f, const remat_val *x) { return remat_square(f, x[0]); }
static remat_val b_sqrt(remat_fn *f, const remat_val *x) { return remat_sqrt(f, x[0]); }
static remat_val b_erf(remat_fn *f, const remat_val *x) { return remat_erf(f, x[0]); }
static remat_val b_ipow3(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 3); }
static remat_val b_ipow2(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 2); }
static remat_val b_ipow1(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 1); }
static remat_val b_ipow0(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 0); }
static remat_val b_ipowm2(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], -2); }
static remat_val b_pow25(remat_fn *f, const remat_val *x) { return remat_pow(f, x[0], 2.5); }
static remat_val b_powm05(remat_fn *f, const remat_val *x) { return remat_pow(f, x[0], -0.5); }
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
static remat_val b_sum02(remat_fn *f, const remat_val *x) { return remat_sum(f, x[0], 2, ((int[]){0, 2})); }
static remat_val b_sum_all(remat_fn *f, const remat_val *x) { return remat_sum_all(f, x[0]); }
static remat_val b_rmax1(remat_fn *f, const remat_val *x) { return remat_reduce_max(f, x[0], 1, ((int[]){1})); }
static remat_val b_rmax_all(remat_fn *f, const remat_val *x) { return remat_max_all(f, x[0]); }
static remat_val b_bcast(remat_fn *f, const remat_val *x)
{
    return remat_broadcast_in_dim(f, x[0], 3, ((int64_t[]){2, 3, 4}), ((int[]){1}));
}
static remat_val b_reshape(remat_fn *f, const remat_val *x) { return remat_reshape(f, x[0], 2, ((int64_t[]){6, 4})); }
static remat_val b_transpose(remat_fn *f, const remat_val *x) { return remat_transpose(f, x[0], ((int[]){2, 0, 1})); }
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
static remat_val b_name(remat_fn *f, const remat_val *x) { return remat_name(f, remat_sin(f, x[0]), "tagged"); }

static const jvp_case cases[] = {
    {"add", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_add},
    {"sub", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_sub},
    {"mul", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_mul},
    {"div", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0.5, b_div},
    {"max", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_max},
    {"min", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_min},
    {"neg", 1, {2}, {{2, 3}}, -2, 2, 0, b_neg},
    {"exp", 1, {2}, {{2, 3}}, -2, 2, 0, b_exp},
    {"log", 1, {2}, {{2, 3}}, 0.2, 3, 0, b_log},
    {"sin", 1, {2}, {{2, 3}}, -2, 2, 0, b_sin},
    {"cos", 1, {2}, {{2, 3}}, -2, 2, 0, b_cos},
    {"tanh", 1, {2}, {{2, 3}}, -2, 2, 0, b_tanh},
    {"relu", 1, {2}, {{2, 3}}, -2, 2, 0.05, b_relu},
    {"square", 1, {2}, {{2, 3}}, -2, 2, 0, b_square},
    {"sqrt", 1, {2}, {{2, 3}}, 0.2, 3, 0, b_sqrt},
    {"erf", 1, {2}, {{2, 3}}, -2.5, 2.5, 0, b_erf},
    {"integer_pow_3", 1, {2}, {{2, 3}}, -2, 2, 0, b_ipow3},
    {"integer_pow_2", 1, {2}, {{2, 3}}, -2, 2, 0, b_ipow2},
    {"integer_pow_1", 1, {2}, {{2, 3}}, -2, 2, 0, b_ipow1},
    {"integer_pow_0", 1, {2}, {{2, 3}}, -2, 2, 0, b_ipow0},
    {"integer_pow_-2", 1, {2}, {{2, 3}}, -2, 2, 0.5, b_ipowm2},
    {"pow_2.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, b_pow25},
    {"pow_-0.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, b_powm05},
    {"select", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_select},
    {"select_const_branch", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_select_const},
    {"compare", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, b_compare},
    {"convert", 1, {2}, {{2, 3}}, -2, 2, 0, b_convert},
    {"reduce_sum_axes_0_2", 1, {3}, {{2, 3, 4}}, -2, 2, 0, b_sum02},
    {"reduce_sum_all", 1, {3}, {{2, 3, 4}}, -2, 2, 0, b_sum_all},
    {"reduce_max_axis_1", 1, {3}, {{2, 3, 4}}, -2, 2, 0, b_rmax1},
    {"reduce_max_all", 1, {3}, {{2, 3, 4}}, -2, 2, 0, b_rmax_all},
    {"broadcast_in_dim", 1, {1}, {{3}}, -2, 2, 0, b_bcast},
    {"reshape", 1, {3}, {{2, 3, 4}}, -2, 2, 0, b_reshape},
    {"transpose", 1, {3}, {{2, 3, 4}}, -2, 2, 0, b_transpose},
    {"slice_strided", 1, {2}, {{4, 6}}, -2, 2, 0, b_slice},
    {"pad_interior", 1, {2}, {{2, 3}}, -2, 2, 0, b_pad},
    {"concatenate_with_constant", 3, {2, 2, 2}, {{2, 3}, {2, 2}, {2, 1}}, -2, 2, 0, b_concat},
    {"matmul", 2, {2, 2}, {{3, 4}, {4, 2}}, -2, 2, 0, b_matmul},
    {"dot_general_batched", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, -2, 2, 0, b_batched_dot},
    {"name", 1, {2}, {{2, 3}}, -2, 2, 0, b_name},
};

static void fill(double *x, int64_t n, double lo, double hi, double avoid)
{
    for (int64_t i = 0; i < n; i++) {
        x[i] = urand(lo, hi);
        if (fabs(x[i]) < avoid)
            x[i] = x[i] < 0 ? x[i] - avoid : x[i] + avoid;
    }
}

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

static remat_fn *jvp_ok(const remat_fn *f, int n, const int *argnums)
{
    remat_fn *j = NULL;
    remat_status st = remat_jvp(f, n, argnums, &j);
    if (st != REMAT_OK)
        fail_msg("remat_jvp(%s): %s", remat_fn_name(f), remat_last_error());
    return j;
}

static double dot_n(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
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
        fill(x[k], n, c->lo, c->hi, c->avoid);
        fill(v[k], n, -1, 1, 0);
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
    fill(w, ny, -1, 1, 0);
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
    {"add", b_add}, {"sub", b_sub}, {"mul", b_mul}, {"div", b_div}, {"max_ties", b_max}, {"min_ties", b_min},
    {"neg", b_neg}, {"exp", b_exp}, {"log", b_log}, {"sin", b_sin}, {"cos", b_cos}, {"tanh", b_tanh},
    {"relu_at_zero", b_relu}, {"square", b_square}, {"sqrt", b_sqrt}, {"erf", b_erf},
    {"integer_pow_3", b_ipow3}, {"integer_pow_-2", b_ipowm2}, {"integer_pow_0", b_ipow0}, {"pow_2.5", b_pow25},
    {"select", b_select}, {"reduce_sum_axes_0_2", b_sum02}, {"reduce_max_ties_axis_2", b_rmax2},
    {"reduce_max_ties_all", b_rmax_all}, {"broadcast_in_dim", b_bcast}, {"reshape", b_reshape},
    {"transpose", b_transpose}, {"slice_strided", b_slice}, {"pad_interior", b_pad}, {"concatenate", b_concat3},
    {"matmul", b_matmul}, {"dot_general_batched", b_batched_dot},
};

static remat_fn *scan_net(int reverse);

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
            f = scan_net(0);
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

/* f(a, b) = (sin(a) * sum(b), sum(a * a) * b): two outputs of different shapes */
static remat_fn *two_out_fn(void)
{
    remat_fn *f = remat_fn_new("two_out");
    remat_val a = remat_arg(f, "a", REMAT_F64, 1, ((int64_t[]){3}));
    remat_val b = remat_arg(f, "b", REMAT_F64, 2, ((int64_t[]){2, 2}));
    remat_fn_output(f, remat_mul(f, remat_sin(f, a), remat_sum_all(f, b)));
    remat_fn_output(f, remat_mul(f, remat_sum_all(f, remat_mul(f, a, a)), b));
    assert_fn_ok(f);
    return f;
}

/* jacfwd's Jacobians against the rows reverse mode gives, one VJP per
 * output element with a one-hot cotangent. */
static void test_ad_jvp_jacfwd_equals_vjp_jacobian(void **state)
{
    (void)state;
    remat_fn *f = two_out_fn();
    remat_fn *jf = NULL;
    assert_int_equal(remat_jacfwd(f, 0, NULL, &jf), REMAT_OK);
    double a[3] = {0.3, -1.2, 0.7}, b[4] = {0.5, -0.25, 2.0, 1.5};
    remat_tensor in[4] = {remat_tensor_f64(a, 1, (int64_t[]){3}), remat_tensor_f64(b, 2, (int64_t[]){2, 2})};
    outs_t jo;
    run_fn(jf, 2, in, &jo, NULL, NULL);
    assert_int_equal(jo.n, 4);
    const int64_t want[4][4] = {{3, 3}, {3, 2, 2}, {2, 2, 3}, {2, 2, 2, 2}};
    const int want_rank[4] = {2, 3, 3, 4};
    for (int k = 0; k < 4; k++) {
        remat_shape ws = remat_shape_make(want_rank[k], want[k]);
        assert_true(remat_shape_equal(&jo.t[k].shape, &ws));
    }
    remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL);
    remat_program *p = compile_ok(vj);
    const int64_t ny[2] = {3, 4}, nx[2] = {3, 4};
    double c0[3], c1[4];
    in[2] = remat_tensor_f64(c0, 1, (int64_t[]){3});
    in[3] = remat_tensor_f64(c1, 2, (int64_t[]){2, 2});
    for (int k = 0; k < 2; k++)
        for (int64_t e = 0; e < ny[k]; e++) {
            memset(c0, 0, sizeof c0);
            memset(c1, 0, sizeof c1);
            (k == 0 ? c0 : c1)[e] = 1.0;
            outs_t vo;
            run_prog(p, 4, in, &vo, NULL);
            for (int j = 0; j < 2; j++) {
                const double *row = vo.t[2 + j].data, *jac = jo.t[k * 2 + j].data;
                for (int64_t i = 0; i < nx[j]; i++)
                    if (!(fabs(jac[e * nx[j] + i] - row[i]) <= 1e-14 * (1 + fabs(row[i]))))
                        fail_msg("jacfwd d out%d[%lld] / d arg%d[%lld] = %.17g, VJP row %.17g", k, (long long)e,
                                 j, (long long)i, jac[e * nx[j] + i], row[i]);
            }
            outs_free(&vo);
        }
    outs_free(&jo);
    remat_program_free(p);
    remat_fn_free(vj);
    remat_fn_free(jf);
    remat_fn_free(f);
}

/* jacfwd w.r.t. one argument of a mixed-dtype function: only that one */
static void test_ad_jvp_jacfwd_argnums_f32(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("f32");
    remat_val a = remat_arg(f, "a", REMAT_F32, 1, ((int64_t[]){2}));
    remat_val s = remat_arg(f, "s", REMAT_F32, 0, NULL);
    remat_fn_output(f, remat_mul(f, remat_exp(f, a), s));
    assert_fn_ok(f);
    remat_fn *jf = NULL;
    assert_int_equal(remat_jacfwd(f, 1, (int[]){1}, &jf), REMAT_OK);
    float av[2] = {0.5f, -1.0f}, sv = 3.0f;
    remat_tensor in[2] = {remat_tensor_f32(av, 1, (int64_t[]){2}), remat_tensor_f32(&sv, 0, NULL)};
    outs_t jo;
    run_fn(jf, 2, in, &jo, NULL, NULL);
    assert_int_equal(jo.n, 1);
    assert_int_equal(jo.t[0].shape.rank, 1);
    const float *d = jo.t[0].data;
    assert_true(d[0] == expf(0.5f) && d[1] == expf(-1.0f));
    outs_free(&jo);
    remat_fn_free(jf);
    remat_fn_free(f);
}

/* f(x, w) = sum(sin(x * w)) + sum(x^3) * sum(w): H v against central
 * differences of the gradient along v */
static remat_fn *hvp_target(void)
{
    remat_fn *f = remat_fn_new("hvp_target");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){4}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 1, ((int64_t[]){4}));
    remat_val a = remat_sum_all(f, remat_sin(f, remat_mul(f, x, w)));
    remat_val b = remat_mul(f, remat_sum_all(f, remat_integer_pow(f, x, 3)), remat_sum_all(f, w));
    remat_fn_output(f, remat_add(f, a, b));
    assert_fn_ok(f);
    return f;
}

static void check_hvp_fd(const remat_fn *f, int n_argnums, const int *argnums)
{
    remat_fn *hv = NULL;
    assert_int_equal(remat_hvp(f, n_argnums, argnums, &hv), REMAT_OK);
    remat_fn *g = grad_ok(f, n_argnums, argnums);
    double x[2][4] = {{0.3, -0.8, 1.1, 0.4}, {0.9, 0.2, -0.5, 1.3}}, v[2][4] = {{1, -0.5, 0.25, 2}, {-1, 0.5, 1.5, 0.1}};
    int n_wrt = n_argnums ? n_argnums : 2;
    remat_tensor in[4] = {remat_tensor_f64(x[0], 1, (int64_t[]){4}), remat_tensor_f64(x[1], 1, (int64_t[]){4})};
    for (int k = 0; k < n_wrt; k++)
        in[2 + k] = remat_tensor_f64(v[n_argnums ? argnums[k] : k], 1, (int64_t[]){4});
    outs_t ho, gp, gm;
    run_fn(hv, 2 + n_wrt, in, &ho, NULL, NULL);
    assert_int_equal(ho.n, n_wrt);
    remat_program *p = compile_ok(g);
    const double h = 1e-6;
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < n_wrt; k++) {
            int a = n_argnums ? argnums[k] : k;
            for (int i = 0; i < 4; i++)
                x[a][i] += (s == 0 ? h : -2 * h) * v[a][i];
        }
        run_prog(p, 2, in, s == 0 ? &gp : &gm, NULL);
    }
    for (int k = 0; k < n_wrt; k++)
        for (int i = 0; i < 4; i++) {
            double fd = (((double *)gp.t[k].data)[i] - ((double *)gm.t[k].data)[i]) / (2 * h);
            double got = ((double *)ho.t[k].data)[i];
            if (!(fabs(got - fd) <= 1e-6 * fabs(fd) + 1e-7))
                fail_msg("hvp of %s: (H v)[%d][%d] = %.12g, finite difference of the gradient %.12g",
                         remat_fn_name(f), k, i, got, fd);
        }
    outs_free(&ho);
    outs_free(&gp);
    outs_free(&gm);
    remat_program_free(p);
    remat_fn_free(g);
    remat_fn_free(hv);
}

static void test_ad_jvp_hvp_finite_differences(void **state)
{
    (void)state;
    remat_fn *f = hvp_target();
    check_hvp_fd(f, 0, NULL);
    check_hvp_fd(f, 1, (int[]){1});
    remat_fn_free(f);
}

/* body(x, w) = sin(x @ w); net(x, w) = sum(body(body(x, w), w)^2) with the
 * body as a checkpoint region, or inlined */
static remat_fn *region_net(int checkpointed)
{
    remat_fn *body = remat_fn_new("body");
    remat_val bx = remat_arg(body, "x", REMAT_F64, 2, ((int64_t[]){2, 3}));
    remat_val bw = remat_arg(body, "w", REMAT_F64, 2, ((int64_t[]){3, 3}));
    remat_fn_output(body, remat_sin(body, remat_matmul(body, bx, bw)));
    remat_fn *callee = checkpointed ? remat_checkpoint(body, remat_nothing_saveable) : remat_fn_ref(body);
    remat_fn *f = remat_fn_new(checkpointed ? "net_checkpointed" : "net_inlined");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){2, 3}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 2, ((int64_t[]){3, 3}));
    remat_val h = remat_call1(f, callee, 2, ((remat_val[]){x, w}));
    h = remat_call1(f, callee, 2, ((remat_val[]){h, w}));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, h)));
    assert_fn_ok(f);
    remat_fn_free(callee);
    remat_fn_free(body);
    return f;
}

static int count_op(const remat_fn *f, remat_op op)
{
    int n = 0;
    for (int v = 0; v < remat_fn_num_nodes(f); v++)
        n += remat_val_op(f, v) == op;
    return n;
}

/* The JVP of a function with checkpoint regions keeps them as regions over
 * the body's JVP, and equals the JVP of the same function inlined, bitwise;
 * so do its HVPs (reverse over the regions, then forward). */
static void test_ad_jvp_checkpoint_region(void **state)
{
    (void)state;
    remat_fn *fc = region_net(1), *fi = region_net(0);
    remat_fn *jc = jvp_ok(fc, 0, NULL), *ji = jvp_ok(fi, 0, NULL);
    assert_int_equal(count_op(fc, REMAT_OP_CHECKPOINT), 2);
    assert_int_equal(count_op(jc, REMAT_OP_CHECKPOINT), 2);
    assert_int_equal(count_op(ji, REMAT_OP_CHECKPOINT), 0);
    double x[6], w[9], tx[6], tw[9];
    rng_seed(7);
    fill(x, 6, -1, 1, 0);
    fill(w, 9, -1, 1, 0);
    fill(tx, 6, -1, 1, 0);
    fill(tw, 9, -1, 1, 0);
    remat_tensor in[4] = {remat_tensor_f64(x, 2, (int64_t[]){2, 3}), remat_tensor_f64(w, 2, (int64_t[]){3, 3}),
                          remat_tensor_f64(tx, 2, (int64_t[]){2, 3}), remat_tensor_f64(tw, 2, (int64_t[]){3, 3})};
    outs_t oc, oi;
    run_fn(jc, 4, in, &oc, NULL, NULL);
    run_fn(ji, 4, in, &oi, NULL, NULL);
    assert_int_equal(oc.n, 2);
    for (int k = 0; k < 2; k++)
        assert_memory_equal(oc.t[k].data, oi.t[k].data, sizeof(double));
    outs_free(&oc);
    outs_free(&oi);

    remat_fn *hc = NULL, *hi = NULL;
    assert_int_equal(remat_hvp(fc, 0, NULL, &hc), REMAT_OK);
    assert_int_equal(remat_hvp(fi, 0, NULL, &hi), REMAT_OK);
    run_fn(hc, 4, in, &oc, NULL, NULL);
    run_fn(hi, 4, in, &oi, NULL, NULL);
    assert_memory_equal(oc.t[0].data, oi.t[0].data, sizeof(double) * 6);
    assert_memory_equal(oc.t[1].data, oi.t[1].data, sizeof(double) * 9);
    outs_free(&oc);
    outs_free(&oi);
    remat_fn_free(hc);
    remat_fn_free(hi);
    remat_fn_free(jc);
    remat_fn_free(ji);
    remat_fn_free(fc);
    remat_fn_free(fi);
}

/* body(c, x_t, k) = (c + 0.1 (sin(x_t) - k c), c * c): a stepper with a
 * per-step input, a const and a y */
static remat_fn *scan_net(int reverse)
{
    const int64_t d3[1] = {3};
    remat_fn *body = remat_fn_new("step");
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, d3);
    remat_val x = remat_arg(body, "x_t", REMAT_F64, 1, d3);
    remat_val k = remat_arg(body, "k", REMAT_F64, 1, d3);
    remat_val rate = remat_sub(body, remat_sin(body, x), remat_mul(body, k, c));
    remat_fn_output(body, remat_add(body, c, remat_mul_scalar(body, rate, 0.1)));
    remat_fn_output(body, remat_mul(body, c, c));
    assert_fn_ok(body);
    remat_fn *f = remat_fn_new(reverse ? "scan_net_reverse" : "scan_net");
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, d3);
    remat_val xs = remat_arg(f, "xs", REMAT_F64, 2, ((int64_t[]){20, 3}));
    remat_val kk = remat_arg(f, "k", REMAT_F64, 1, d3);
    remat_val cout, ys;
    remat_scan_options opt = {.reverse = reverse != 0};
    assert_int_equal(remat_scan(f, body, 20, 1, &c0, 1, &xs, 1, &kk, &opt, &cout, &ys), REMAT_OK);
    remat_fn_output(f, cout);
    remat_fn_output(f, ys);
    assert_fn_ok(f);
    remat_fn_free(body);
    return f;
}

/* J v of a scan (tangents carried in the carry) against central differences
 * and the scan's VJP; the JVP loop is an ordinary scan, compiled to a lane
 * loop like the primal one. With a tangent on k alone, the carry's tangent
 * starts at zero and picks k's up. */
static void check_scan_jvp(int reverse, int n_argnums, const int *argnums)
{
    remat_fn *f = scan_net(reverse);
    remat_fn *j = jvp_ok(f, n_argnums, argnums);
    assert_int_equal(count_op(j, REMAT_OP_HOP), 1);
    double x[3][60], v[3][60];
    const int64_t n[3] = {3, 60, 3};
    const remat_shape sh[3] = {remat_shape_make(1, (int64_t[]){3}), remat_shape_make(2, (int64_t[]){20, 3}),
                               remat_shape_make(1, (int64_t[]){3})};
    rng_seed(11);
    remat_tensor in[6];
    for (int a = 0; a < 3; a++) {
        fill(x[a], n[a], -1, 1, 0);
        fill(v[a], n[a], -1, 1, 0);
        in[a] = remat_tensor_f64(x[a], sh[a].rank, sh[a].dims);
    }
    int n_wrt = n_argnums ? n_argnums : 3;
    for (int t = 0; t < n_wrt; t++) {
        int a = n_argnums ? argnums[t] : t;
        in[3 + t] = remat_tensor_f64(v[a], sh[a].rank, sh[a].dims);
    }
    outs_t jo, fo, po, mo;
    remat_memory_plan jplan, fplan;
    run_fn(j, 3 + n_wrt, in, &jo, NULL, &jplan);
    run_fn(f, 3, in, &fo, NULL, &fplan);
    assert_int_equal(jplan.compiled_loops, fplan.compiled_loops); /* compiled when the primal loop is */
    assert_int_equal(jo.n, 4);
    assert_memory_equal(jo.t[0].data, fo.t[0].data, 3 * sizeof(double));
    assert_memory_equal(jo.t[1].data, fo.t[1].data, 60 * sizeof(double));
    const double h = 1e-6;
    remat_program *p = compile_ok(f);
    for (int s = 0; s < 3; s++) {
        for (int t = 0; t < n_wrt; t++) {
            int a = n_argnums ? argnums[t] : t;
            for (int64_t i = 0; i < n[a]; i++)
                x[a][i] += (s == 0 ? h : s == 1 ? -2 * h : h) * v[a][i];
        }
        if (s < 2)
            run_prog(p, 3, in, s == 0 ? &po : &mo, NULL);
    }
    const int64_t no[2] = {3, 60};
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < no[k]; i++) {
            double fd = (((double *)po.t[k].data)[i] - ((double *)mo.t[k].data)[i]) / (2 * h);
            double got = ((double *)jo.t[2 + k].data)[i];
            if (!(fabs(got - fd) <= 1e-6 * fabs(fd) + 1e-7))
                fail_msg("scan jvp (reverse %d): tangent of output %d [%lld] = %.12g, finite difference %.12g",
                         reverse, k, (long long)i, got, fd);
        }
    /* <w, J v> = <J^T w, v> with the scan's reverse mode */
    remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL);
    double w0[3], w1[60];
    fill(w0, 3, -1, 1, 0);
    fill(w1, 60, -1, 1, 0);
    remat_tensor vin[5] = {in[0], in[1], in[2], remat_tensor_f64(w0, 1, (int64_t[]){3}),
                           remat_tensor_f64(w1, 2, (int64_t[]){20, 3})};
    outs_t vo;
    run_fn(vj, 5, vin, &vo, NULL, NULL);
    double lhs = dot_n(w0, jo.t[2].data, 3) + dot_n(w1, jo.t[3].data, 60), rhs = 0;
    for (int t = 0; t < n_wrt; t++) {
        int a = n_argnums ? argnums[t] : t;
        rhs += dot_n(vo.t[2 + a].data, v[a], n[a]);
    }
    if (!(fabs(lhs - rhs) <= 1e-12 * (1 + fabs(lhs))))
        fail_msg("scan jvp: <w, J v> = %.17g but <J^T w, v> = %.17g", lhs, rhs);
    outs_free(&vo);
    outs_free(&jo);
    outs_free(&fo);
    outs_free(&po);
    outs_free(&mo);
    remat_program_free(p);
    remat_fn_free(vj);
    remat_fn_free(j);
    remat_fn_free(f);
}

static void test_ad_jvp_scan(void **state)
{
    (void)state;
    check_scan_jvp(0, 0, NULL);
    check_scan_jvp(1, 0, NULL);
    check_scan_jvp(0, 1, (int[]){2});
    check_scan_jvp(0, 1, (int[]){1});
}

/* HVP of a loss through a scan (reverse over forward: the scan's reverse
 * forms have no forward mode) against central differences of the gradient,
 * with a binomial schedule on the loop. */
static void test_ad_jvp_hvp_through_scan(void **state)
{
    (void)state;
    const int64_t d3[1] = {3};
    remat_fn *body = remat_fn_new("step");
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, d3);
    remat_val k = remat_arg(body, "k", REMAT_F64, 1, d3);
    remat_fn_output(body, remat_add(body, c, remat_mul_scalar(body, remat_sin(body, remat_mul(body, k, c)), 0.1)));
    remat_fn *f = remat_fn_new("scan_loss");
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, d3);
    remat_val kk = remat_arg(f, "k", REMAT_F64, 1, d3);
    remat_val cout;
    remat_scan_options opt = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 3}};
    assert_int_equal(remat_scan(f, body, 16, 1, &c0, 0, NULL, 1, &kk, &opt, &cout, NULL), REMAT_OK);
    remat_fn_output(f, remat_sum_all(f, remat_square(f, cout)));
    assert_fn_ok(f);
    remat_fn *hv = NULL;
    assert_int_equal(remat_hvp(f, 0, NULL, &hv), REMAT_OK);
    remat_fn *g = grad_ok(f, 0, NULL);
    double x[2][3] = {{0.5, -0.3, 0.8}, {1.2, 0.7, -0.9}}, v[2][3] = {{1, -0.5, 0.25}, {-1, 0.5, 1.5}};
    remat_tensor in[4];
    for (int a = 0; a < 2; a++) {
        in[a] = remat_tensor_f64(x[a], 1, d3);
        in[2 + a] = remat_tensor_f64(v[a], 1, d3);
    }
    outs_t ho, gp, gm;
    run_fn(hv, 4, in, &ho, NULL, NULL);
    assert_int_equal(ho.n, 2);
    remat_program *p = compile_ok(g);
    const double h = 1e-6;
    for (int s = 0; s < 2; s++) {
        for (int a = 0; a < 2; a++)
            for (int i = 0; i < 3; i++)
                x[a][i] += (s == 0 ? h : -2 * h) * v[a][i];
        run_prog(p, 2, in, s == 0 ? &gp : &gm, NULL);
    }
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 3; i++) {
            double fd = (((double *)gp.t[a].data)[i] - ((double *)gm.t[a].data)[i]) / (2 * h);
            double got = ((double *)ho.t[a].data)[i];
            if (!(fabs(got - fd) <= 1e-6 * fabs(fd) + 1e-7))
                fail_msg("hvp through scan: (H v)[%d][%d] = %.12g, finite difference %.12g", a, i, got, fd);
        }
    outs_free(&ho);
    outs_free(&gp);
    outs_free(&gm);
    remat_program_free(p);
    remat_fn_free(g);
    remat_fn_free(hv);
    remat_fn_free(f);
    remat_fn_free(body);
}

static void test_ad_jvp_bad_input(void **state)
{
    (void)state;
    remat_fn *f = two_out_fn(), *out = NULL;
    assert_int_equal(remat_jvp(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_int_equal(remat_jvp(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_jvp(f, 1, (int[]){2}, &out), REMAT_ERR_ARG);
    assert_true(contains(remat_last_error(), "argnum 2 out of range"));
    assert_int_equal(remat_jvp(f, 2, (int[]){1, 1}, &out), REMAT_ERR_ARG);
    assert_true(contains(remat_last_error(), "argnum 1 given twice"));
    assert_int_equal(remat_jacfwd(f, 1, (int[]){-1}, &out), REMAT_ERR_ARG);
    assert_int_equal(remat_hvp(f, 0, NULL, &out), REMAT_ERR_SHAPE); /* two outputs: not a scalar function */
    assert_null(out);
    remat_fn_free(f);

    remat_fn *c = remat_fn_new("custom");
    remat_val x = remat_arg(c, "x", REMAT_F64, 1, ((int64_t[]){2}));
    remat_fn_output(c, remat_custom(c, &xsin_op, 2, ((remat_val[]){x, x}), REMAT_F64, 1, ((int64_t[]){2})));
    assert_fn_ok(c);
    assert_int_equal(remat_jvp(c, 0, NULL, &out), REMAT_ERR_UNSUPPORTED);
    assert_true(contains(remat_last_error(), "custom op 'xsin' has no JVP"));
    assert_null(out);
    remat_fn_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_jvp_every_op),
        cmocka_unit_test(test_ad_jvp_jax_goldens),
        cmocka_unit_test(test_ad_jvp_symbolic_zeros),
        cmocka_unit_test(test_ad_jvp_stop_gradient),
        cmocka_unit_test(test_ad_jvp_jacfwd_equals_vjp_jacobian),
        cmocka_unit_test(test_ad_jvp_jacfwd_argnums_f32),
        cmocka_unit_test(test_ad_jvp_hvp_finite_differences),
        cmocka_unit_test(test_ad_jvp_checkpoint_region),
        cmocka_unit_test(test_ad_jvp_scan),
        cmocka_unit_test(test_ad_jvp_hvp_through_scan),
        cmocka_unit_test(test_ad_jvp_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
