/*
 * test_ad_solve.c — linear_solve (remat_linear_solve): the forward against
 * systems with known solutions, the VJP and JVP against central differences
 * in f64 and against each other (<w, J v> = <J^T w, v>), second order
 * through remat_hvp, jnp.linalg.solve goldens (tests/goldens/linear_solve.json,
 * tools/goldens/gen_solve_goldens.py), bad shapes and dtypes, singular A.
 * Sizes cover both kernels: the elimination (n <= 8) and LAPACK (n > 8).
 */
#include "test_ad_util.h"
#include "test_golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

typedef struct {
    const char *name;
    int nb;          /* batch dims */
    int64_t bd[2];   /* their sizes */
    int64_t n, k;    /* k = 0: b is a vector (..., n) */
} solve_case;

static const solve_case cases[] = {
    {"n1", 0, {0}, 1, 0},
    {"n3", 0, {0}, 3, 0},
    {"n3_k2", 0, {0}, 3, 2},
    {"batch2_n4", 1, {2}, 4, 0},
    {"batch2x3_n3_k3", 2, {2, 3}, 3, 3},
    {"n8_k2", 0, {0}, 8, 2},
    {"n10_lapack", 0, {0}, 10, 0},
    {"batch2_n12_k3_lapack", 1, {2}, 12, 3},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static remat_shape a_shape(const solve_case *c)
{
    remat_shape s = {0};
    for (int i = 0; i < c->nb; i++)
        s.dims[s.rank++] = c->bd[i];
    s.dims[s.rank++] = c->n;
    s.dims[s.rank++] = c->n;
    return s;
}

static remat_shape b_shape(const solve_case *c)
{
    remat_shape s = a_shape(c);
    if (c->k)
        s.dims[s.rank - 1] = c->k;
    else
        s.rank--;
    return s;
}

static int64_t batch_of(const solve_case *c)
{
    int64_t b = 1;
    for (int i = 0; i < c->nb; i++)
        b *= c->bd[i];
    return b;
}

/* f(A, b) = solve(A, b), transposed when asked (A^T built by a transpose) */
static remat_fn *solve_fn(const solve_case *c, remat_dtype dt, int transpose)
{
    remat_shape as = a_shape(c), bs = b_shape(c);
    remat_fn *f = remat_fn_new(c->name);
    remat_val A = remat_arg(f, "A", dt, as.rank, as.dims);
    remat_val b = remat_arg(f, "b", dt, bs.rank, bs.dims);
    if (transpose) {
        int perm[REMAT_MAX_RANK];
        for (int i = 0; i < as.rank; i++)
            perm[i] = i;
        perm[as.rank - 2] = as.rank - 1, perm[as.rank - 1] = as.rank - 2;
        A = remat_transpose(f, A, perm);
    }
    remat_fn_output(f, remat_linear_solve(f, A, b));
    assert_fn_ok(f);
    return f;
}

/* Well conditioned but pivoting: each matrix is R + n I (R uniform in
 * [-1, 1]) with its rows rotated by a batch-dependent amount, so the
 * largest entry of a column is rarely on the diagonal. */
static void fill_system(const solve_case *c, double *A, double *b)
{
    const int64_t n = c->n, B = batch_of(c), kk = c->k ? c->k : 1;
    for (int64_t s = 0; s < B; s++) {
        int64_t rot = (s + 1) % n;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                A[s * n * n + ((i + rot) % n) * n + j] = urand(-1, 1) + (i == j ? (double)n : 0.0);
    }
    fill_uniform(b, B * n * kk, -2, 2, 0);
}

/* |A x - b| against |A| |x| for every system of the batch */
static void check_residual(const solve_case *c, const double *A, const double *b, const double *x, int transpose,
                           double tol)
{
    const int64_t n = c->n, kk = c->k ? c->k : 1;
    for (int64_t s = 0; s < batch_of(c); s++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < kk; q++) {
                double r = -b[(s * n + i) * kk + q], mag = fabs(b[(s * n + i) * kk + q]);
                for (int64_t j = 0; j < n; j++) {
                    double a = transpose ? A[s * n * n + j * n + i] : A[s * n * n + i * n + j];
                    r += a * x[(s * n + j) * kk + q];
                    mag += fabs(a * x[(s * n + j) * kk + q]);
                }
                if (!(fabs(r) <= tol * mag))
                    fail_msg("%s%s: residual %g of row %lld column %lld (scale %g)", c->name,
                             transpose ? " (A^T)" : "", r, (long long)i, (long long)q, mag);
            }
}

typedef struct {
    double *A, *b;
    remat_tensor in[2];
    int64_t na, nb;
} system_t;

static void system_new(system_t *S, const solve_case *c)
{
    remat_shape as = a_shape(c), bs = b_shape(c);
    S->na = remat_shape_numel(&as), S->nb = remat_shape_numel(&bs);
    S->A = xmalloc(sizeof(double) * (size_t)S->na);
    S->b = xmalloc(sizeof(double) * (size_t)S->nb);
    fill_system(c, S->A, S->b);
    S->in[0] = remat_tensor_f64(S->A, as.rank, as.dims);
    S->in[1] = remat_tensor_f64(S->b, bs.rank, bs.dims);
}

static void system_free(system_t *S)
{
    free(S->A);
    free(S->b);
}

static void test_ad_solve_forward(void **state)
{
    (void)state;
    for (int ci = 0; ci < N_CASES; ci++)
        for (int t = 0; t < 2; t++) {
            const solve_case *c = &cases[ci];
            system_t S;
            system_new(&S, c);
            remat_fn *f = solve_fn(c, REMAT_F64, t);
            outs_t o;
            run_fn(f, 2, S.in, &o, NULL, NULL);
            check_residual(c, S.A, S.b, o.t[0].data, t, 1e-13);
            outs_free(&o);
            remat_fn_free(f);
            system_free(&S);
        }
}

/* f32: the same kernels in single precision */
static void test_ad_solve_forward_f32(void **state)
{
    (void)state;
    for (int ci = 0; ci < N_CASES; ci++) {
        const solve_case *c = &cases[ci];
        system_t S;
        system_new(&S, c);
        float *A = xmalloc(sizeof(float) * (size_t)S.na), *b = xmalloc(sizeof(float) * (size_t)S.nb);
        double *Ad = xmalloc(sizeof(double) * (size_t)S.na), *bd = xmalloc(sizeof(double) * (size_t)S.nb);
        double *x = xmalloc(sizeof(double) * (size_t)S.nb);
        for (int64_t i = 0; i < S.na; i++)
            Ad[i] = A[i] = (float)S.A[i];
        for (int64_t i = 0; i < S.nb; i++)
            bd[i] = b[i] = (float)S.b[i];
        remat_tensor in[2] = {remat_tensor_f32(A, S.in[0].shape.rank, S.in[0].shape.dims),
                              remat_tensor_f32(b, S.in[1].shape.rank, S.in[1].shape.dims)};
        remat_fn *f = solve_fn(c, REMAT_F32, 0);
        outs_t o;
        run_fn(f, 2, in, &o, NULL, NULL);
        assert_int_equal(o.t[0].dtype, REMAT_F32);
        for (int64_t i = 0; i < S.nb; i++)
            x[i] = ((const float *)o.t[0].data)[i];
        check_residual(c, Ad, bd, x, 0, 1e-5);
        outs_free(&o);
        remat_fn_free(f);
        free(A), free(b), free(Ad), free(bd), free(x);
        system_free(&S);
    }
}

/* integer systems with integer solutions: the kernels' answers are exact
 * to a few ulps (pivoting needed: the first column's largest entry is last) */
static void test_ad_solve_known_solution(void **state)
{
    (void)state;
    static const double A[9] = {1, 2, 3, 0, 1, 4, 5, 6, 0}, x[3] = {1, -2, 3};
    double b[3] = {0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            b[i] += A[i * 3 + j] * x[j];
    solve_case c = {"known", 0, {0}, 3, 0};
    remat_fn *f = solve_fn(&c, REMAT_F64, 0);
    remat_tensor in[2] = {remat_tensor_f64((double *)A, 2, DIMS(3, 3)), remat_tensor_f64(b, 1, DIMS(3))};
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL);
    check_close("solve of the integer system", 3, o.t[0].data, x, 1e-14, 1e-14);
    outs_free(&o);
    remat_fn_free(f);
}

/* <w, x(p + h e) - x(p - h e)> / 2h for every element e of A and b, against
 * the VJP's cotangents of A and b for cotangent w */
static void check_vjp_fd(const solve_case *c, int transpose)
{
    system_t S;
    system_new(&S, c);
    remat_fn *f = solve_fn(c, REMAT_F64, transpose);
    remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL);
    double *w = xmalloc(sizeof(double) * (size_t)S.nb);
    fill_uniform(w, S.nb, -1, 1, 0);
    remat_tensor vin[3] = {S.in[0], S.in[1], remat_tensor_f64(w, S.in[1].shape.rank, S.in[1].shape.dims)};
    outs_t vo;
    run_fn(vj, 3, vin, &vo, NULL, NULL);
    remat_program *p = compile_ok(f);
    const double h = 1e-6;
    for (int arg = 0; arg < 2; arg++) {
        double *p_arg = arg ? S.b : S.A;
        const double *got = vo.t[1 + arg].data;
        for (int64_t e = 0; e < (arg ? S.nb : S.na); e++) {
            double y[2], keep = p_arg[e];
            for (int s = 0; s < 2; s++) {
                outs_t o;
                p_arg[e] = keep + (s ? -h : h);
                run_prog(p, 2, S.in, &o, NULL);
                y[s] = dot_n(w, o.t[0].data, S.nb);
                outs_free(&o);
            }
            p_arg[e] = keep;
            double fd = (y[0] - y[1]) / (2 * h);
            if (!(fabs(got[e] - fd) <= 1e-6 * fabs(fd) + 1e-7))
                fail_msg("%s%s: d/d%s[%lld] = %.12g, finite difference %.12g", c->name, transpose ? " (A^T)" : "",
                         arg ? "b" : "A", (long long)e, got[e], fd);
        }
    }
    remat_program_free(p);
    outs_free(&vo);
    free(w);
    remat_fn_free(vj);
    remat_fn_free(f);
    system_free(&S);
}

static void test_ad_solve_vjp_finite_differences(void **state)
{
    (void)state;
    for (int ci = 0; ci < N_CASES; ci++)
        for (int t = 0; t < 2; t++)
            check_vjp_fd(&cases[ci], t);
}

/* J v against central differences along v, the primal bitwise f's, and
 * <w, J v> = <J^T w, v> against the VJP */
static void check_jvp(const solve_case *c, int transpose)
{
    system_t S;
    system_new(&S, c);
    remat_fn *f = solve_fn(c, REMAT_F64, transpose);
    remat_fn *j = jvp_ok(f, 0, NULL);
    double *vA = xmalloc(sizeof(double) * (size_t)S.na), *vb = xmalloc(sizeof(double) * (size_t)S.nb);
    double *w = xmalloc(sizeof(double) * (size_t)S.nb);
    fill_uniform(vA, S.na, -1, 1, 0);
    fill_uniform(vb, S.nb, -1, 1, 0);
    fill_uniform(w, S.nb, -1, 1, 0);
    remat_tensor jin[4] = {S.in[0], S.in[1], remat_tensor_f64(vA, S.in[0].shape.rank, S.in[0].shape.dims),
                           remat_tensor_f64(vb, S.in[1].shape.rank, S.in[1].shape.dims)};
    outs_t jo, fo, po, mo;
    run_fn(j, 4, jin, &jo, NULL, NULL);
    run_fn(f, 2, S.in, &fo, NULL, NULL);
    if (memcmp(jo.t[0].data, fo.t[0].data, sizeof(double) * (size_t)S.nb) != 0) /* contract 5 */
        fail_msg("%s: the JVP's primal output differs from f's", c->name);
    const double h = 1e-6;
    remat_program *p = compile_ok(f);
    for (int s = 0; s < 2; s++) {
        for (int64_t i = 0; i < S.na; i++)
            S.A[i] += (s ? -2 * h : h) * vA[i];
        for (int64_t i = 0; i < S.nb; i++)
            S.b[i] += (s ? -2 * h : h) * vb[i];
        run_prog(p, 2, S.in, s ? &mo : &po, NULL);
    }
    for (int64_t i = 0; i < S.na; i++)
        S.A[i] += h * vA[i];
    for (int64_t i = 0; i < S.nb; i++)
        S.b[i] += h * vb[i];
    const double *jv = jo.t[1].data;
    for (int64_t i = 0; i < S.nb; i++) {
        double fd = (((const double *)po.t[0].data)[i] - ((const double *)mo.t[0].data)[i]) / (2 * h);
        if (!(fabs(jv[i] - fd) <= 1e-6 * fabs(fd) + 1e-7))
            fail_msg("%s%s: (J v)[%lld] = %.12g, finite difference %.12g", c->name, transpose ? " (A^T)" : "",
                     (long long)i, jv[i], fd);
    }
    remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL);
    remat_tensor vin[3] = {S.in[0], S.in[1], remat_tensor_f64(w, S.in[1].shape.rank, S.in[1].shape.dims)};
    outs_t vo;
    run_fn(vj, 3, vin, &vo, NULL, NULL);
    double lhs = dot_n(w, jv, S.nb);
    double rhs = dot_n(vo.t[1].data, vA, S.na) + dot_n(vo.t[2].data, vb, S.nb);
    if (!(fabs(lhs - rhs) <= 1e-12 * (fabs(lhs) + 1)))
        fail_msg("%s: <w, J v> = %.17g but <J^T w, v> = %.17g", c->name, lhs, rhs);
    remat_program_free(p);
    outs_free(&jo), outs_free(&fo), outs_free(&po), outs_free(&mo), outs_free(&vo);
    free(vA), free(vb), free(w);
    remat_fn_free(vj), remat_fn_free(j), remat_fn_free(f);
    system_free(&S);
}

static void test_ad_solve_jvp(void **state)
{
    (void)state;
    for (int ci = 0; ci < N_CASES; ci++)
        for (int t = 0; t < 2; t++)
            check_jvp(&cases[ci], t);
}

/* jvp(grad): the VJP's transposed solve and outer product differentiated in
 * turn. H v of sum(solve(A, b)^2) against differences of the gradient. */
static void test_ad_solve_hvp(void **state)
{
    (void)state;
    const solve_case c = {"batch2_n3_k2", 1, {2}, 3, 2};
    remat_shape as = a_shape(&c), bs = b_shape(&c);
    remat_fn *f = remat_fn_new("solve_sq");
    remat_val A = remat_arg(f, "A", REMAT_F64, as.rank, as.dims), b = remat_arg(f, "b", REMAT_F64, bs.rank, bs.dims);
    remat_val x = remat_linear_solve(f, A, b);
    remat_fn_output(f, remat_sum(f, remat_mul(f, x, x), 3, ((int[]){0, 1, 2})));
    assert_fn_ok(f);
    remat_fn *hv = NULL, *g = grad_ok(f, 0, NULL);
    assert_ok(remat_hvp(f, 0, NULL, &hv));
    system_t S;
    system_new(&S, &c);
    double *vA = xmalloc(sizeof(double) * (size_t)S.na), *vb = xmalloc(sizeof(double) * (size_t)S.nb);
    fill_uniform(vA, S.na, -1, 1, 0);
    fill_uniform(vb, S.nb, -1, 1, 0);
    remat_tensor hin[4] = {S.in[0], S.in[1], remat_tensor_f64(vA, as.rank, as.dims),
                           remat_tensor_f64(vb, bs.rank, bs.dims)};
    outs_t ho, go[2];
    run_fn(hv, 4, hin, &ho, NULL, NULL);
    const double h = 1e-5;
    remat_program *p = compile_ok(g);
    for (int s = 0; s < 2; s++) {
        for (int64_t i = 0; i < S.na; i++)
            S.A[i] += (s ? -2 * h : h) * vA[i];
        for (int64_t i = 0; i < S.nb; i++)
            S.b[i] += (s ? -2 * h : h) * vb[i];
        run_prog(p, 2, S.in, &go[s], NULL);
    }
    for (int arg = 0; arg < 2; arg++) {
        int64_t n = arg ? S.nb : S.na;
        const double *got = ho.t[arg].data, *gp = go[0].t[arg].data, *gm = go[1].t[arg].data;
        for (int64_t i = 0; i < n; i++) {
            double fd = (gp[i] - gm[i]) / (2 * h);
            if (!(fabs(got[i] - fd) <= 1e-5 * fabs(fd) + 1e-6))
                fail_msg("hvp %s[%lld] = %.12g, differences of the gradient %.12g", arg ? "b" : "A", (long long)i,
                         got[i], fd);
        }
    }
    remat_program_free(p);
    outs_free(&ho), outs_free(&go[0]), outs_free(&go[1]);
    free(vA), free(vb);
    system_free(&S);
    remat_fn_free(hv), remat_fn_free(g), remat_fn_free(f);
}

/* singular A: no error and no abort; the zero pivot gives inf/nan (JAX's
 * answer too), in both kernels */
static void test_ad_solve_singular(void **state)
{
    (void)state;
    for (int64_t n = 2; n <= 12; n += 10) {
        solve_case c = {"singular", 0, {0}, n, 0};
        double *A = xcalloc((size_t)(n * n), sizeof(double)), *b = xcalloc((size_t)n, sizeof(double));
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                A[i * n + j] = (double)((i + 1) * (j + 1)); /* rank 1 */
        for (int64_t i = 0; i < n; i++)
            b[i] = 1.0;
        remat_fn *f = solve_fn(&c, REMAT_F64, 0);
        remat_tensor in[2] = {remat_tensor_f64(A, 2, DIMS(n, n)), remat_tensor_f64(b, 1, DIMS(n))};
        outs_t o;
        run_fn(f, 2, in, &o, NULL, NULL);
        int nonfinite = 0;
        for (int64_t i = 0; i < n; i++)
            nonfinite += !isfinite(((const double *)o.t[0].data)[i]);
        if (!nonfinite)
            fail_msg("singular %lldx%lld system: every entry of x is finite", (long long)n, (long long)n);
        outs_free(&o);
        remat_fn_free(f);
        free(A), free(b);
    }
}

/* jnp.linalg.solve in f64: x, the VJP's A_bar and b_bar, the JVP's x_dot */
static void test_ad_solve_jax_goldens(void **state)
{
    (void)state;
    const cJSON *e;
    int n_cases = 0;
    cJSON_ArrayForEach(e, jget(golden("linear_solve.json"), "cases"))
    {
        const char *name = jget(e, "name")->valuestring;
        const int transpose = cJSON_IsTrue(jget(e, "transpose"));
        jarr A = jarr_get(jget(e, "A")), b = jarr_get(jget(e, "b")), x = jarr_get(jget(e, "x"));
        jarr w = jarr_get(jget(e, "cotangent")), abar = jarr_get(jget(e, "A_bar")), bbar = jarr_get(jget(e, "b_bar"));
        jarr ta = jarr_get(jget(e, "A_dot")), tb = jarr_get(jget(e, "b_dot")), tx = jarr_get(jget(e, "x_dot"));
        remat_fn *f = remat_fn_new(name);
        remat_val va = remat_arg(f, "A", REMAT_F64, A.shape.rank, A.shape.dims);
        remat_val vb = remat_arg(f, "b", REMAT_F64, b.shape.rank, b.shape.dims);
        if (transpose) {
            int perm[REMAT_MAX_RANK], r = A.shape.rank;
            for (int i = 0; i < r; i++)
                perm[i] = i;
            perm[r - 2] = r - 1, perm[r - 1] = r - 2;
            va = remat_transpose(f, va, perm);
        }
        remat_fn_output(f, remat_linear_solve(f, va, vb));
        assert_fn_ok(f);
        remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL), *j = jvp_ok(f, 0, NULL);
        remat_tensor in[4] = {jarr_tensor(&A), jarr_tensor(&b), jarr_tensor(&w)};
        outs_t vo, jo;
        run_fn(vj, 3, in, &vo, NULL, NULL);
        in[2] = jarr_tensor(&ta), in[3] = jarr_tensor(&tb);
        run_fn(j, 4, in, &jo, NULL, NULL);
        char what[96];
        snprintf(what, sizeof what, "%s: x", name);
        check_close(what, x.n, vo.t[0].data, x.data, 1e-12, 1e-13);
        snprintf(what, sizeof what, "%s: A_bar", name);
        check_close(what, abar.n, vo.t[1].data, abar.data, 1e-12, 1e-13);
        snprintf(what, sizeof what, "%s: b_bar", name);
        check_close(what, bbar.n, vo.t[2].data, bbar.data, 1e-12, 1e-13);
        snprintf(what, sizeof what, "%s: x_dot", name);
        check_close(what, tx.n, jo.t[1].data, tx.data, 1e-12, 1e-13);
        outs_free(&vo), outs_free(&jo);
        remat_fn_free(j), remat_fn_free(vj), remat_fn_free(f);
        jarr *all[] = {&A, &b, &x, &w, &abar, &bbar, &ta, &tb, &tx};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            free(all[i]->data);
        n_cases++;
    }
    assert_true(n_cases >= 7);
}

/* Solves with one matrix share one factorisation, in the forward, the VJP
 * (its transposed solves) and the JVP: x1 = A^{-1} b, x2 = A^{-1} x1,
 * x3 = A^{-1} (x1 + x2), the stages of a Rosenbrock step in miniature. */
static void test_ad_solve_one_factorisation(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("stages");
    remat_val A = remat_arg(f, "A", REMAT_F64, 2, DIMS(3, 3)), b = remat_arg(f, "b", REMAT_F64, 1, DIMS(3));
    remat_val x1 = remat_linear_solve(f, A, b), x2 = remat_linear_solve(f, A, x1);
    remat_val x3 = remat_linear_solve(f, A, remat_add(f, x1, x2));
    remat_fn_output(f, remat_sum(f, remat_mul(f, x3, x3), 1, ((int[]){0})));
    assert_fn_ok(f);
    assert_int_equal(count_op(f, REMAT_OP_LU), 1);
    assert_int_equal(count_op(f, REMAT_OP_LINEAR_SOLVE), 3);
    remat_fn *g = grad_ok(f, 0, NULL), *j = jvp_ok(f, 0, NULL);
    assert_int_equal(count_op(g, REMAT_OP_LU), 1);
    assert_int_equal(count_op(g, REMAT_OP_LINEAR_SOLVE), 6);
    assert_int_equal(count_op(j, REMAT_OP_LU), 1);
    /* a different matrix gets its own */
    remat_fn *f2 = remat_fn_new("two");
    remat_val B = remat_arg(f2, "A", REMAT_F64, 2, DIMS(3, 3)), c = remat_arg(f2, "b", REMAT_F64, 1, DIMS(3));
    remat_val y = remat_linear_solve(f2, B, c);
    remat_fn_output(f2, remat_linear_solve(f2, remat_neg(f2, B), y));
    assert_int_equal(count_op(f2, REMAT_OP_LU), 2);
    /* the shared factorisation gives what separate solves give */
    double Ad[9] = {1, 2, 3, 0, 1, 4, 5, 6, 0.5}, bd[3] = {1, -1, 2};
    remat_tensor in[2] = {remat_tensor_f64(Ad, 2, DIMS(3, 3)), remat_tensor_f64(bd, 1, DIMS(3))};
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL);
    double x[3][3];
    for (int s = 0; s < 3; s++) { /* each stage solved by a one-solve function */
        solve_case c1 = {"stage", 0, {0}, 3, 0};
        remat_fn *one = solve_fn(&c1, REMAT_F64, 0);
        double rhs[3];
        for (int i = 0; i < 3; i++)
            rhs[i] = s == 0 ? bd[i] : s == 1 ? x[0][i] : x[0][i] + x[1][i];
        remat_tensor oin[2] = {in[0], remat_tensor_f64(rhs, 1, DIMS(3))};
        outs_t oo;
        run_fn(one, 2, oin, &oo, NULL, NULL);
        memcpy(x[s], oo.t[0].data, sizeof x[s]);
        outs_free(&oo);
        remat_fn_free(one);
    }
    /* to rounding: the program's sum of squares is a reduce kernel's, this
     * one a C expression's (docs/design-notes.md, "Bitwise contracts": two
     * code paths); a wrong factorisation would be off by far more */
    const double want = x[2][0] * x[2][0] + x[2][1] * x[2][1] + x[2][2] * x[2][2];
    check_close("shared factorisation against separate solves", 1, o.t[0].data, &want, 1e-14, 0);
    outs_free(&o);
    remat_fn_free(f2), remat_fn_free(j), remat_fn_free(g), remat_fn_free(f);
}

/* Policies: a solve is not a dot (dots_saveable keeps only the arguments,
 * as JAX's report for jnp.linalg.solve under dots_saveable); under
 * everything_saveable the factorisation and the solution are residuals
 * named by their ops (JAX: lu's outputs and the solve's). */
static int count_solve_residuals(const remat_policy *pol, int *n_outputs, int *n_lu)
{
    remat_fn *body = remat_fn_new("body");
    remat_val A = remat_arg(body, "A", REMAT_F64, 2, DIMS(3, 3)), b = remat_arg(body, "b", REMAT_F64, 1, DIMS(3));
    remat_val x = remat_linear_solve(body, A, remat_sin(body, b));
    remat_fn_output(body, remat_sum(body, remat_sin(body, x), 1, ((int[]){0})));
    remat_fn *region = remat_checkpoint(body, pol);
    assert_non_null(region);
    remat_fn *f = remat_fn_new("net");
    remat_val args[2] = {remat_arg(f, "A", REMAT_F64, 2, DIMS(3, 3)), remat_arg(f, "b", REMAT_F64, 1, DIMS(3))};
    remat_fn_output(f, remat_call1(f, region, 2, args));
    assert_fn_ok(f);
    remat_residual_list *r = NULL;
    assert_ok(remat_saved_residuals(f, 0, NULL, &r));
    int solves = 0;
    *n_outputs = *n_lu = 0;
    for (int i = 0; i < remat_residual_list_count(r); i++) {
        const remat_residual *e = remat_residual_list_get(r, i);
        char line[256];
        remat_residual_format(e, line, sizeof line);
        if (e->kind == REMAT_RESIDUAL_OUTPUT)
            (*n_outputs)++;
        if (e->kind == REMAT_RESIDUAL_OUTPUT && e->op == REMAT_OP_LU) {
            assert_contains(line, "f64[3,6] output of lu"); /* n <= 8: (n, 2n) */
            (*n_lu)++;
        }
        if (e->kind == REMAT_RESIDUAL_OUTPUT && e->op == REMAT_OP_LINEAR_SOLVE) {
            assert_contains(line, "output of linear_solve");
            solves++;
        }
    }
    remat_residual_list_free(r);
    remat_fn_free(f), remat_fn_free(region), remat_fn_free(body);
    return solves;
}

static void test_ad_solve_policies(void **state)
{
    (void)state;
    int outs, lus;
    assert_int_equal(count_solve_residuals(remat_dots_saveable, &outs, &lus), 0);
    assert_int_equal(outs, 0);
    assert_int_equal(count_solve_residuals(remat_nothing_saveable, &outs, &lus), 0);
    assert_int_equal(outs, 0);
    assert_int_equal(count_solve_residuals(remat_everything_saveable, &outs, &lus), 1);
    assert_int_equal(lus, 1);
}

/* bad input: an error naming linear_solve and the shapes or dtypes */
static void expect_error(remat_dtype da, int ra, const int64_t *a, remat_dtype db, int rb, const int64_t *bd,
                         remat_status want, const char *needle)
{
    remat_fn *f = remat_fn_new("bad");
    remat_val A = remat_arg(f, "A", da, ra, a), b = remat_arg(f, "b", db, rb, bd);
    assert_int_equal(remat_linear_solve(f, A, b), REMAT_NONE);
    assert_int_equal(remat_fn_status(f), want);
    assert_contains(remat_fn_error(f), "linear_solve");
    assert_contains(remat_fn_error(f), needle);
    remat_fn_free(f);
}

static void test_ad_solve_bad_input(void **state)
{
    (void)state;
    expect_error(REMAT_F64, 2, DIMS(3, 3), REMAT_F32, 1, DIMS(3), REMAT_ERR_DTYPE, "f32[3]");
    expect_error(REMAT_F64, 2, DIMS(3, 4), REMAT_F64, 1, DIMS(3), REMAT_ERR_SHAPE, "f64[3,4]");
    expect_error(REMAT_F64, 1, DIMS(3), REMAT_F64, 1, DIMS(3), REMAT_ERR_SHAPE, "square");
    expect_error(REMAT_F64, 2, DIMS(0, 0), REMAT_F64, 1, DIMS(0), REMAT_ERR_SHAPE, "n >= 1");
    expect_error(REMAT_F64, 2, DIMS(3, 3), REMAT_F64, 1, DIMS(4), REMAT_ERR_SHAPE, "f64[4]");
    expect_error(REMAT_F64, 3, DIMS(2, 3, 3), REMAT_F64, 2, DIMS(3, 3), REMAT_ERR_SHAPE, "no broadcasting");
    expect_error(REMAT_F64, 3, DIMS(2, 3, 3), REMAT_F64, 1, DIMS(3), REMAT_ERR_SHAPE, "f64[2,3,3]");
    expect_error(REMAT_F64, 2, DIMS(3, 3), REMAT_F64, 3, DIMS(1, 3, 2), REMAT_ERR_SHAPE, "f64[1,3,2]");
    assert_int_equal(remat_linear_solve(NULL, 0, 1), REMAT_NONE);
    assert_contains(remat_last_error(), "remat_linear_solve");
}

int main(void)
{
    rng_seed(0x50175e17ull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_solve_forward),
        cmocka_unit_test(test_ad_solve_forward_f32),
        cmocka_unit_test(test_ad_solve_known_solution),
        cmocka_unit_test(test_ad_solve_vjp_finite_differences),
        cmocka_unit_test(test_ad_solve_jvp),
        cmocka_unit_test(test_ad_solve_hvp),
        cmocka_unit_test(test_ad_solve_jax_goldens),
        cmocka_unit_test(test_ad_solve_policies),
        cmocka_unit_test(test_ad_solve_one_factorisation),
        cmocka_unit_test(test_ad_solve_singular),
        cmocka_unit_test(test_ad_solve_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
