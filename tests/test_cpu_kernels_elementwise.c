/*
 * test_cpu_kernels_elementwise.c — the elementwise CPU kernels: unary (erf too),
 * binary, compare, select, the scalar-operand variants, powers and convert.
 *
 * Every CPU kernel against a naive reference written here from the op's
 * definition (index arithmetic, libm, long double sums), never against another
 * kernel. The one exception: the kernels with a scalar operand promise the
 * bits of the array kernel on the broadcast scalar, and are held to that
 * promise.
 *
 * Bitwise assertions need no contract of docs/design-notes.md ("Bitwise
 * contracts"): each element is one IEEE operation, libm call or conversion
 * of the same operands on both sides, so they agree on any machine.
 */
#include "test_cpu_kernels_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"

/* ---- elementwise ---- */

/* The ops under test come from the op table (REMAT_OP_LIST), so a new row
 * of its category is tested here, and fails until its reference is written
 * below. */
static int table_ops(remat_op *out, int (*pick)(remat_op))
{
    int n = 0;
    for (int k = 0; k < REMAT_OP_COUNT; k++)
        if (pick((remat_op)k))
            out[n++] = (remat_op)k;
    assert_true(n > 0);
    return n;
}

/* the unary ops of remat_cpu_unary_*: no parameter (powers have kernels of their own) */
static int plain_unary(remat_op op)
{
    return remat_op_category_of(op) == REMAT_OPCAT_UNARY && remat_op_param_of(op) == REMAT_OPP_NONE;
}

static const char *op_label(remat_op op) { return remat_op_name(op); }

/* erf's inverse by bisection on glibc's erfl (|y| < 1; odd) */
static double erfinv_bisect(double y)
{
    if (y < 0)
        return -erfinv_bisect(-y);
    if (y == 0)
        return y;
    long double lo = 0.0L, hi = 7.0L;
    for (int k = 0; k < 200 && lo < hi; k++) {
        const long double mid = 0.5L * (lo + hi);
        if (mid == lo || mid == hi)
            break;
        if (erfl(mid) < y)
            lo = mid;
        else
            hi = mid;
    }
    return (double)(0.5L * (lo + hi));
}

static double unary_ref(remat_op op, double x)
{
    switch (op) {
    case REMAT_OP_NEG: return -x;
    case REMAT_OP_EXP: return exp(x);
    case REMAT_OP_LOG: return log(x);
    case REMAT_OP_SIN: return sin(x);
    case REMAT_OP_COS: return cos(x);
    case REMAT_OP_TANH: return tanh(x);
    case REMAT_OP_RELU: return isnan(x) ? x : (x > 0 ? x : 0.0);
    case REMAT_OP_SQUARE: return x * x;
    case REMAT_OP_SQRT: return sqrt(x);
    case REMAT_OP_ERF: return erf(x);
    case REMAT_OP_LOG1P: return log1p(x);
    case REMAT_OP_EXPM1: return expm1(x);
    case REMAT_OP_LOGISTIC: return 1.0 / (1.0 + exp(-x));
    case REMAT_OP_ERF_INV: return erfinv_bisect(x);
    default: fail_msg("not unary"); return 0;
    }
}

static void test_cpu_kernels_unary_matches_libm(void **state)
{
    (void)state;
    const size_t sizes[] = {0, 1, 3, 1037};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const size_t n = sizes[s];
        double *a = xmalloc((n + 1) * sizeof *a), *want = xmalloc((n + 1) * sizeof *want);
        double *out = xmalloc((n + 1) * sizeof *out);
        float *out32 = xmalloc((n + 1) * sizeof *out32);
        remat_op unary_ops[REMAT_OP_COUNT];
        const int n_unary = table_ops(unary_ops, plain_unary);
        for (int u = 0; u < n_unary; u++) {
            const remat_op op = unary_ops[u];
            for (size_t i = 0; i < n; i++) /* log/sqrt need x > 0 */
                a[i] = (op == REMAT_OP_LOG || op == REMAT_OP_SQRT) ? fabs(rnd()) + 0.25
                       : op == REMAT_OP_ERF_INV                    ? rnd() / 12.6 /* in (-1, 1) */
                                                                   : rnd() / 4;
            float *a32 = to_f32(a, (int64_t)n);
            for (size_t i = 0; i < n; i++)
                want[i] = unary_ref(op, a[i]);
            out[n] = 12345.0; /* sentinel: nothing written past n */
            rmi_cpu_unary_f64(op, n, out, a);
            check_close(op_label(op), (int64_t)n, out, want, 1e-15, 0);
            assert_true(out[n] == 12345.0);
            rmi_cpu_unary_f32(op, n, out32, a32);
            check_close_f32(op_label(op), (int64_t)n, out32, want, 2e-6, 1e-7);
            free(a32);
        }
        free(a), free(want), free(out), free(out32);
    }
}

/* erf at known points (Abramowitz and Stegun table 7.1; erf(x) = x * 2/sqrt(pi)
 * to rounding below 1e-8) and its limits: odd, +-1 in the tails, NaN stays NaN */
static void test_cpu_kernels_erf_known_values(void **state)
{
    (void)state;
    const double x[8] = {0.0, -0.0, 1e-10, 0.5, 1.0, -2.0, 30.0, -INFINITY};
    const double want[8] = {0.0, -0.0, 1.1283791670955126e-10, 0.5204998778130465, 0.8427007929497149,
                            -0.9953222650189527, 1.0, -1.0};
    double out[9];
    float x32[9], out32[9];
    rmi_cpu_unary_f64(REMAT_OP_ERF, 8, out, x);
    check_close("erf f64", 8, out, want, 1e-15, 0);
    assert_true(signbit(out[1]) && !signbit(out[0]));
    for (int i = 0; i < 8; i++)
        x32[i] = (float)x[i];
    x32[8] = NAN;
    rmi_cpu_unary_f32(REMAT_OP_ERF, 9, out32, x32);
    check_close_f32("erf f32", 8, out32, want, 2e-7, 0);
    assert_true(isnan(out32[8]));
    double nan_in = NAN;
    rmi_cpu_unary_f64(REMAT_OP_ERF, 1, out, &nan_in);
    assert_true(isnan(out[0]));
}

/* log1p, expm1 and logistic at their edges: log1p(-1) = -inf, NaN below -1,
 * exact-ish tiny arguments (log1p(x) = expm1(x) = x to rounding below 1e-17,
 * where log(1 + x) would give 0), expm1's overflow and its -1 floor, and
 * logistic's tails without NaN (exp(-x) = inf gives 0, not inf/inf) */
static void test_cpu_kernels_log1p_expm1_logistic_edges(void **state)
{
    (void)state;
    enum { N = 9 };
    const double x[N] = {-1.0, -2.0, 1e-20, -1e-20, 0.0, -0.0, INFINITY, NAN, 1e-300};
    const double l1p[N] = {-INFINITY, NAN, 1e-20, -1e-20, 0.0, -0.0, INFINITY, NAN, 1e-300};
    const double xe[N] = {1e-20, -1e-20, 1000.0, -1000.0, 709.0, -INFINITY, 0.0, -0.0, NAN};
    const double em1[N] = {1e-20, -1e-20, INFINITY, -1.0, 8.218407461554972e307, -1.0, 0.0, -0.0, NAN};
    const double xl[N] = {1000.0, -1000.0, 0.0, 40.0, -40.0, INFINITY, -INFINITY, NAN, -745.5};
    const double lg[N] = {1.0, 0.0, 0.5, 1.0, 4.248354255291589e-18, 1.0, 0.0, NAN, 0.0};
    const remat_op ops[3] = {REMAT_OP_LOG1P, REMAT_OP_EXPM1, REMAT_OP_LOGISTIC};
    const double *in[3] = {x, xe, xl}, *want[3] = {l1p, em1, lg};
    for (int k = 0; k < 3; k++) {
        double out[N];
        float in32[N], out32[N];
        rmi_cpu_unary_f64(ops[k], N, out, in[k]);
        for (int i = 0; i < N; i++) {
            in32[i] = (float)in[k][i];
            const double w = want[k][i];
            if (isnan(w) ? !isnan(out[i]) : (out[i] != w && fabs(out[i] - w) > 2e-16 * fabs(w)) ||
                                                 !signbit(out[i]) != !signbit(w))
                fail_msg("%s(%a) = %a, want %a", remat_op_name(ops[k]), in[k][i], out[i], w);
        }
        rmi_cpu_unary_f32(ops[k], N, out32, in32);
        for (int i = 0; i < N; i++) {
            const double w = ops[k] == REMAT_OP_LOG1P   ? log1p((double)in32[i])
                             : ops[k] == REMAT_OP_EXPM1 ? expm1((double)in32[i])
                                                        : 1.0 / (1.0 + exp(-(double)in32[i]));
            const double wf = (double)(float)w; /* inf past FLT_MAX */
            if (isnan(wf) ? !isnan(out32[i]) : (out32[i] != wf && fabs(out32[i] - wf) > 2.4e-7 * fabs(wf)) ||
                                                  !signbit(out32[i]) != !signbit(wf))
                fail_msg("%s f32(%a) = %a, want %a", remat_op_name(ops[k]), (double)in32[i], (double)out32[i], wf);
        }
    }
}

static void test_cpu_kernels_relu_max_min_propagate_nan(void **state)
{
    (void)state;
    const double nan = NAN;
    const double a[] = {nan, -1.0, 2.0, -0.0, nan, 1.0, -INFINITY, 5.0};
    const double b[] = {1.0, nan, 3.0, 0.0, nan, 1.0, 3.0, -INFINITY};
    const double mx[] = {nan, nan, 3.0, 0.0, nan, 1.0, 3.0, 5.0};
    const double mn[] = {nan, nan, 2.0, 0.0, nan, 1.0, -INFINITY, -INFINITY};
    const double relu[] = {nan, 0.0, 2.0, 0.0, nan, 1.0, 0.0, 5.0};
    double out[8];
    float a32[8], b32[8], out32[8];
    for (int i = 0; i < 8; i++)
        a32[i] = (float)a[i], b32[i] = (float)b[i];

    rmi_cpu_binary_f64(REMAT_OP_MAX, 8, out, a, b);
    check_close("max f64", 8, out, mx, 0, 0);
    rmi_cpu_binary_f64(REMAT_OP_MIN, 8, out, a, b);
    check_close("min f64", 8, out, mn, 0, 0);
    rmi_cpu_unary_f64(REMAT_OP_RELU, 8, out, a);
    check_close("relu f64", 8, out, relu, 0, 0);
    assert_false(signbit(out[3])); /* relu(-0) is 0: x <= 0 */

    rmi_cpu_binary_f32(REMAT_OP_MAX, 8, out32, a32, b32);
    check_close_f32("max f32", 8, out32, mx, 0, 0);
    rmi_cpu_binary_f32(REMAT_OP_MIN, 8, out32, a32, b32);
    check_close_f32("min f32", 8, out32, mn, 0, 0);
    rmi_cpu_unary_f32(REMAT_OP_RELU, 8, out32, a32);
    check_close_f32("relu f32", 8, out32, relu, 0, 0);

    /* a long array, so the vectorised loop body (not only its tail) sees NaN */
    enum { N = 101 };
    double x[N], y[N], o[N];
    for (int i = 0; i < N; i++)
        x[i] = i % 7 == 3 ? nan : rnd(), y[i] = i % 11 == 5 ? nan : rnd();
    rmi_cpu_binary_f64(REMAT_OP_MAX, N, o, x, y);
    for (int i = 0; i < N; i++)
        assert_true(isnan(x[i]) || isnan(y[i]) ? isnan(o[i]) : o[i] == (x[i] > y[i] ? x[i] : y[i]));
    rmi_cpu_unary_f64(REMAT_OP_RELU, N, o, x);
    for (int i = 0; i < N; i++)
        assert_true(isnan(x[i]) ? isnan(o[i]) : o[i] == (x[i] > 0 ? x[i] : 0.0));
}

static double binary_ref(remat_op op, double x, double y)
{
    switch (op) {
    case REMAT_OP_ADD: return x + y;
    case REMAT_OP_SUB: return x - y;
    case REMAT_OP_MUL: return x * y;
    case REMAT_OP_DIV: return x / y;
    case REMAT_OP_MAX: return isnan(x) || isnan(y) ? NAN : (x > y ? x : y);
    case REMAT_OP_MIN: return isnan(x) || isnan(y) ? NAN : (x < y ? x : y);
    case REMAT_OP_GT: return x > y;
    case REMAT_OP_GE: return x >= y;
    case REMAT_OP_LT: return x < y;
    case REMAT_OP_LE: return x <= y;
    case REMAT_OP_EQ: return x == y;
    case REMAT_OP_NE: return x != y;
    default: fail_msg("not binary"); return 0;
    }
}

static void test_cpu_kernels_binary_and_compare_match_reference(void **state)
{
    (void)state;
    remat_op ops[REMAT_OP_COUNT];
    const int n_ops = table_ops(ops, remat_op_is_binary);
    enum { N = 263 };
    double a[N], b[N], want[N], out[N];
    float out32[N];
    for (int i = 0; i < N; i++) {
        a[i] = rnd();
        b[i] = i % 5 == 0 ? a[i] : rnd(); /* ties for the compares */
        if (b[i] == 0)
            b[i] = 0.5;
        if (i == 7)
            a[i] = NAN, b[i] = NAN; /* NaN compares: only NE is true */
    }
    float *a32 = to_f32(a, N), *b32 = to_f32(b, N);
    for (int o = 0; o < n_ops; o++) {
        for (int i = 0; i < N; i++)
            want[i] = binary_ref(ops[o], a[i], b[i]);
        rmi_cpu_binary_f64(ops[o], N, out, a, b);
        check_close(op_label(ops[o]), N, out, want, 0, 0);
        rmi_cpu_binary_f32(ops[o], N, out32, a32, b32);
        check_close_f32(op_label(ops[o]), N, out32, want, 1e-7, 0);
        rmi_cpu_binary_f64(ops[o], 0, out, a, b); /* n = 0 is a no-op */
    }
    free(a32), free(b32);
}

static void test_cpu_kernels_select_picks_by_predicate(void **state)
{
    (void)state;
    const double pred[] = {0.0, 1.0, -0.0, NAN, 2.5, 0.0};
    const double t[] = {1, 2, 3, 4, 5, 6}, f[] = {-1, -2, -3, -4, -5, -6};
    const double want[] = {-1, 2, -3, 4, 5, -6}; /* -0 == 0; NaN != 0 */
    double out[6];
    float p32[6], t32[6], f32[6], o32[6];
    rmi_cpu_select_f64(6, out, pred, t, f);
    check_close("select f64", 6, out, want, 0, 0);
    for (int i = 0; i < 6; i++)
        p32[i] = (float)pred[i], t32[i] = (float)t[i], f32[i] = (float)f[i];
    rmi_cpu_select_f32(6, o32, p32, t32, f32);
    check_close_f32("select f32", 6, o32, want, 0, 0);
}

/* ---- one operand a scalar: remat_cpu_binary_scalar_* and
 * remat_cpu_select_scalar_* read that operand from its element 0 (the CPU
 * backend passes a one-element splat constant). Their contract is the bits
 * of the array kernel on the scalar broadcast to n elements, so they are held
 * to exactly that (the array kernels are held to the reference above), with
 * NaN, +-0, +-inf and ties on either side. ---- */

static const size_t scalar_sizes[] = {0, 1, 3, 1037};
static const double scalar_values[] = {1.5, -2.25, 0.0, -0.0, NAN, INFINITY, -INFINITY};
#define N_SCALAR_VALUES (sizeof scalar_values / sizeof *scalar_values)

/* n values in a pattern shifted by phase: `tie` (the scalar, so max/min and
 * the compares see ties, +0 against -0 included), NaN, +0, -0, +inf, -inf,
 * and k/8 values (exact in f32). No RNG: the cases around keep their draws. */
static void fill_special(double *x, size_t n, double tie, size_t phase)
{
    static const double special[] = {NAN, 0.0, -0.0, INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++) {
        const size_t k = (i + phase) % 10;
        x[i] = k == 0 ? tie : k <= 5 ? special[k - 1] : (double)((int)((i * 7919 + phase) % 201) - 100) / 8.0;
    }
}

/* got and want element by element in their bits: NaN payloads, sign of zero */
static void expect_same_bits(const char *what, size_t n, size_t esize, const void *got, const void *want)
{
    for (size_t i = 0; i < n; i++) {
        const char *g = (const char *)got + i * esize, *w = (const char *)want + i * esize;
        if (memcmp(g, w, esize) == 0)
            continue;
        double gv, wv;
        if (esize == sizeof(float)) {
            float gf, wf;
            memcpy(&gf, g, sizeof gf), memcpy(&wf, w, sizeof wf);
            gv = gf, wv = wf;
        } else {
            memcpy(&gv, g, sizeof gv), memcpy(&wv, w, sizeof wv);
        }
        fail_msg("%s: element %zu: got %.17g, want %.17g (bits differ)", what, i, gv, wv);
    }
}

/* Each scalar operand is passed twice: alone in a one-element buffer (a read
 * past element 0 is an ASan error) and as element 0 of an n-element buffer
 * whose other elements are 12345 (a read of element i shows in the result).
 * `out` has one element more than n, set to a sentinel that must survive. */
#define DEFINE_SCALAR_CHECKS(SFX, T)                                                                           \
    static T *scalar_buf_##SFX(int layout, size_t n, T s)                                                      \
    {                                                                                                          \
        T *p = xmalloc((layout ? n + 1 : 1) * sizeof(T));                                                      \
        p[0] = s;                                                                                              \
        for (size_t i = 1; layout && i < n; i++)                                                               \
            p[i] = (T)12345;                                                                                   \
        return p;                                                                                              \
    }                                                                                                          \
                                                                                                               \
    static T *broadcast_##SFX(size_t n, T s)                                                                   \
    {                                                                                                          \
        T *p = xmalloc((n + 1) * sizeof(T));                                                                   \
        for (size_t i = 0; i < n; i++)                                                                         \
            p[i] = s;                                                                                          \
        return p;                                                                                              \
    }                                                                                                          \
                                                                                                               \
    /* side 1: b is the scalar s, a is x; side 0: a is s, b is x */                                           \
    static void binary_scalar_check_##SFX(remat_op op, int side, size_t n, T s, const T *x)                   \
    {                                                                                                          \
        char what[96];                                                                                         \
        T *bc = broadcast_##SFX(n, s), *want = xmalloc((n + 1) * sizeof(T)), *got = xmalloc((n + 1) * sizeof(T)); \
        rmi_cpu_binary_##SFX(op, n, want, side ? x : bc, side ? bc : x);                                       \
        for (int layout = 0; layout < 2; layout++) {                                                           \
            T *sp = scalar_buf_##SFX(layout, n, s);                                                            \
            got[n] = (T)-777;                                                                                  \
            rmi_cpu_binary_scalar_##SFX(op, n, got, side ? x : sp, side ? sp : x, side);                       \
            snprintf(what, sizeof what, "binary_scalar_" #SFX " %s, %s = %g, n = %zu, layout %d", op_label(op), \
                     side ? "b" : "a", (double)s, n, layout);                                                  \
            expect_same_bits(what, n, sizeof(T), got, want);                                                   \
            assert_true(got[n] == (T)-777);                                                                    \
            free(sp);                                                                                          \
        }                                                                                                      \
        free(bc), free(want), free(got);                                                                       \
    }                                                                                                          \
                                                                                                               \
    /* t (f) is the scalar ts (fs) when t_scalar (f_scalar), else the array */                                 \
    static void select_scalar_check_##SFX(size_t n, const T *pred, int t_scalar, T ts, const T *t, int f_scalar, \
                                          T fs, const T *f)                                                    \
    {                                                                                                          \
        char what[96];                                                                                         \
        T *bt = broadcast_##SFX(n, ts), *bf = broadcast_##SFX(n, fs);                                          \
        T *want = xmalloc((n + 1) * sizeof(T)), *got = xmalloc((n + 1) * sizeof(T));                          \
        rmi_cpu_select_##SFX(n, want, pred, t_scalar ? bt : t, f_scalar ? bf : f);                             \
        for (int layout = 0; layout < 2; layout++) {                                                           \
            T *tp = scalar_buf_##SFX(layout, n, ts), *fp = scalar_buf_##SFX(layout, n, fs);                    \
            got[n] = (T)-777;                                                                                  \
            /* the flags as the CPU backend passes them: mask bits 2 and 4 */                                 \
            rmi_cpu_select_scalar_##SFX(n, got, pred, t_scalar ? tp : t, t_scalar ? 2 : 0, f_scalar ? fp : f,   \
                                        f_scalar ? 4 : 0);                                                     \
            snprintf(what, sizeof what, "select_scalar_" #SFX ", on_true %s, on_false %s, n = %zu, layout %d",  \
                     t_scalar ? "scalar" : "array", f_scalar ? "scalar" : "array", n, layout);                 \
            expect_same_bits(what, n, sizeof(T), got, want);                                                   \
            assert_true(got[n] == (T)-777);                                                                    \
            free(tp), free(fp);                                                                                \
        }                                                                                                      \
        free(bt), free(bf), free(want), free(got);                                                             \
    }

DEFINE_SCALAR_CHECKS(f32, float)
DEFINE_SCALAR_CHECKS(f64, double)

static void test_cpu_kernels_binary_scalar_matches_broadcast(void **state)
{
    (void)state;
    remat_op ops[REMAT_OP_COUNT];
    const int n_ops = table_ops(ops, remat_op_is_binary);
    for (size_t z = 0; z < sizeof scalar_sizes / sizeof *scalar_sizes; z++) {
        const size_t n = scalar_sizes[z];
        double *x = xmalloc((n + 1) * sizeof *x);
        for (size_t v = 0; v < N_SCALAR_VALUES; v++) {
            const double s = scalar_values[v];
            for (size_t phase = 0; phase < 10; phase++) {
                fill_special(x, n, s, phase);
                float *x32 = to_f32(x, (int64_t)n);
                for (int o = 0; o < n_ops; o++)
                    for (int side = 0; side < 2; side++) {
                        binary_scalar_check_f64(ops[o], side, n, s, x);
                        binary_scalar_check_f32(ops[o], side, n, (float)s, x32);
                    }
                free(x32);
            }
        }
        free(x);
    }
}

static void test_cpu_kernels_select_scalar_matches_broadcast(void **state)
{
    (void)state;
    /* (on_true, on_false) scalars: distinct finite, +0 against -0, NaN, inf */
    static const double pairs[][2] = {{1.5, -2.25}, {0.0, -0.0}, {-0.0, 0.0}, {NAN, INFINITY}, {-INFINITY, NAN}};
    for (size_t z = 0; z < sizeof scalar_sizes / sizeof *scalar_sizes; z++) {
        const size_t n = scalar_sizes[z];
        double *pred = xmalloc((n + 1) * sizeof *pred), *t = xmalloc((n + 1) * sizeof *t);
        double *f = xmalloc((n + 1) * sizeof *f);
        for (size_t phase = 0; phase < 10; phase++) {
            fill_special(pred, n, 0.0, phase); /* 0, -0, NaN (!= 0: on_true), inf, k/8 */
            fill_special(t, n, 4.0, phase + 3);
            fill_special(f, n, -4.0, phase + 7);
            float *p32 = to_f32(pred, (int64_t)n), *t32 = to_f32(t, (int64_t)n), *f32 = to_f32(f, (int64_t)n);
            for (size_t q = 0; q < sizeof pairs / sizeof *pairs; q++)
                for (int mask = 1; mask <= 3; mask++) { /* bit 0: on_true scalar, bit 1: on_false */
                    const int ts = mask & 1, fs = (mask >> 1) & 1;
                    select_scalar_check_f64(n, pred, ts, pairs[q][0], t, fs, pairs[q][1], f);
                    select_scalar_check_f32(n, p32, ts, (float)pairs[q][0], t32, fs, (float)pairs[q][1], f32);
                }
            free(p32), free(t32), free(f32);
        }
        free(pred), free(t), free(f);
    }
}

static void test_cpu_kernels_integer_pow_matches_pow(void **state)
{
    (void)state;
    enum { N = 37 };
    double a[N], want[N], out[N];
    float out32[N];
    for (int i = 0; i < N; i++)
        a[i] = rnd() / 16 + (i % 2 ? 1.5 : -1.25); /* away from 0 for negative k */
    a[0] = NAN;
    float *a32 = to_f32(a, N);
    const int ks[] = {0, 1, 2, 3, 4, 5, 6, 7, 13, -1, -2, -3, -7};
    for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
        const int k = ks[j];
        for (int i = 0; i < N; i++)
            want[i] = k == 0 ? 1.0 : pow(a[i], k); /* x^0 = 1 even for NaN, as lax */
        rmi_cpu_integer_pow_f64(N, out, a, k);
        check_close("integer_pow f64", N, out, want, 4e-15, 0);
        rmi_cpu_integer_pow_f32(N, out32, a32, k);
        for (int i = 0; i < N; i++)
            want[i] = k == 0 ? 1.0 : pow((double)a32[i], k);
        check_close_f32("integer_pow f32", N, out32, want, 4e-6, 0);
    }
    /* the small cases are exact products */
    const double x = 1.1;
    rmi_cpu_integer_pow_f64(1, out, &x, 3);
    assert_true(out[0] == x * (x * x));
    free(a32);
}

static void test_cpu_kernels_pow_and_convert(void **state)
{
    (void)state;
    enum { N = 19 };
    double a[N], want[N], out[N];
    float out32[N];
    for (int i = 0; i < N; i++)
        a[i] = fabs(rnd()) + 0.125;
    float *a32 = to_f32(a, N);
    for (int i = 0; i < N; i++)
        want[i] = pow(a[i], 1.5);
    rmi_cpu_pow_f64(N, out, a, 1.5);
    check_close("pow f64", N, out, want, 1e-15, 0);
    rmi_cpu_pow_f32(N, out32, a32, 1.5);
    check_close_f32("pow f32", N, out32, want, 2e-6, 0);

    const double d[] = {0.1, -1e-40, 3.0, 1e300, NAN};
    float f[5];
    double back[5];
    rmi_cpu_convert(5, REMAT_F32, f, REMAT_F64, d);
    for (int i = 0; i < 5; i++)
        assert_memory_equal(&f[i], &(float){(float)d[i]}, sizeof(float));
    rmi_cpu_convert(5, REMAT_F64, back, REMAT_F32, f);
    for (int i = 0; i < 4; i++)
        assert_true(back[i] == (double)f[i]);
    assert_true(isnan(back[4]));
    rmi_cpu_convert(5, REMAT_F64, back, REMAT_F64, d);
    assert_memory_equal(back, d, sizeof d);
    free(a32);
}

/* ---- main ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_kernels_unary_matches_libm),
        cmocka_unit_test(test_cpu_kernels_erf_known_values),
        cmocka_unit_test(test_cpu_kernels_log1p_expm1_logistic_edges),
        cmocka_unit_test(test_cpu_kernels_relu_max_min_propagate_nan),
        cmocka_unit_test(test_cpu_kernels_binary_and_compare_match_reference),
        cmocka_unit_test(test_cpu_kernels_select_picks_by_predicate),
        cmocka_unit_test(test_cpu_kernels_binary_scalar_matches_broadcast),
        cmocka_unit_test(test_cpu_kernels_select_scalar_matches_broadcast),
        cmocka_unit_test(test_cpu_kernels_integer_pow_matches_pow),
        cmocka_unit_test(test_cpu_kernels_pow_and_convert),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
