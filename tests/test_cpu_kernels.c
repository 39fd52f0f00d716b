/*
 * test_cpu_kernels.c — every CPU kernel against a naive reference written
 * here from the op's definition (index arithmetic, libm, long double sums),
 * never against another kernel. Structural ops are exact, so they are compared
 * bit for bit in both element sizes (f32 and f64 views of the same values).
 * The one exception: the kernels with a scalar operand promise the bits of
 * the array kernel on the broadcast scalar, and are held to that promise.
 */
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"

/* ---- helpers ---- */

/* Values k/8 with |k| <= 100: exact in f32, so f32 and f64 copies agree. */
static double rnd(void) { return (double)((int)((rng_next() >> 33) % 201) - 100) / 8.0; }

static void fill(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = rnd();
}

static remat_shape shp(int rank, const int64_t *dims)
{
    return remat_shape_make(rank, dims);
}

static void unravel(const remat_shape *s, int64_t flat, int64_t *idx)
{
    for (int i = s->rank - 1; i >= 0; i--) {
        idx[i] = flat % s->dims[i];
        flat /= s->dims[i];
    }
}

static int64_t ravel(const remat_shape *s, const int64_t *idx)
{
    int64_t f = 0;
    for (int i = 0; i < s->rank; i++)
        f = f * s->dims[i] + idx[i];
    return f;
}

static float *to_f32(const double *x, int64_t n)
{
    float *y = xmalloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)x[i];
    return y;
}

static void check_close_f32(const char *what, int64_t n, const float *got, const double *want,
                            double rtol, double atol)
{
    double *g = xmalloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++)
        g[i] = got[i];
    check_close(what, n, g, want, rtol, atol);
    free(g);
}

/* ---- elementwise ---- */

static const remat_op unary_ops[] = {REMAT_OP_NEG,  REMAT_OP_EXP,  REMAT_OP_LOG,
                                     REMAT_OP_SIN,  REMAT_OP_COS,  REMAT_OP_TANH,
                                     REMAT_OP_RELU, REMAT_OP_SQUARE, REMAT_OP_SQRT};

/* The op name table lives in src/ad; tests of kernels only need a label. */
static const char *op_label(remat_op op)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "op #%d", (int)op);
    return buf;
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
        for (size_t u = 0; u < sizeof unary_ops / sizeof *unary_ops; u++) {
            const remat_op op = unary_ops[u];
            for (size_t i = 0; i < n; i++) /* log/sqrt need x > 0 */
                a[i] = (op == REMAT_OP_LOG || op == REMAT_OP_SQRT) ? fabs(rnd()) + 0.25 : rnd() / 4;
            float *a32 = to_f32(a, (int64_t)n);
            for (size_t i = 0; i < n; i++)
                want[i] = unary_ref(op, a[i]);
            out[n] = 12345.0; /* sentinel: nothing written past n */
            remat_cpu_unary_f64(op, n, out, a);
            check_close(op_label(op), (int64_t)n, out, want, 1e-15, 0);
            assert_true(out[n] == 12345.0);
            remat_cpu_unary_f32(op, n, out32, a32);
            check_close_f32(op_label(op), (int64_t)n, out32, want, 2e-6, 1e-7);
            free(a32);
        }
        free(a), free(want), free(out), free(out32);
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

    remat_cpu_binary_f64(REMAT_OP_MAX, 8, out, a, b);
    check_close("max f64", 8, out, mx, 0, 0);
    remat_cpu_binary_f64(REMAT_OP_MIN, 8, out, a, b);
    check_close("min f64", 8, out, mn, 0, 0);
    remat_cpu_unary_f64(REMAT_OP_RELU, 8, out, a);
    check_close("relu f64", 8, out, relu, 0, 0);
    assert_false(signbit(out[3])); /* relu(-0) is 0: x <= 0 */

    remat_cpu_binary_f32(REMAT_OP_MAX, 8, out32, a32, b32);
    check_close_f32("max f32", 8, out32, mx, 0, 0);
    remat_cpu_binary_f32(REMAT_OP_MIN, 8, out32, a32, b32);
    check_close_f32("min f32", 8, out32, mn, 0, 0);
    remat_cpu_unary_f32(REMAT_OP_RELU, 8, out32, a32);
    check_close_f32("relu f32", 8, out32, relu, 0, 0);

    /* a long array, so the vectorised loop body (not only its tail) sees NaN */
    enum { N = 101 };
    double x[N], y[N], o[N];
    for (int i = 0; i < N; i++)
        x[i] = i % 7 == 3 ? nan : rnd(), y[i] = i % 11 == 5 ? nan : rnd();
    remat_cpu_binary_f64(REMAT_OP_MAX, N, o, x, y);
    for (int i = 0; i < N; i++)
        assert_true(isnan(x[i]) || isnan(y[i]) ? isnan(o[i]) : o[i] == (x[i] > y[i] ? x[i] : y[i]));
    remat_cpu_unary_f64(REMAT_OP_RELU, N, o, x);
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
    const remat_op ops[] = {REMAT_OP_ADD, REMAT_OP_SUB, REMAT_OP_MUL, REMAT_OP_DIV,
                            REMAT_OP_MAX, REMAT_OP_MIN, REMAT_OP_GT,  REMAT_OP_GE,
                            REMAT_OP_LT,  REMAT_OP_LE,  REMAT_OP_EQ,  REMAT_OP_NE};
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
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        for (int i = 0; i < N; i++)
            want[i] = binary_ref(ops[o], a[i], b[i]);
        remat_cpu_binary_f64(ops[o], N, out, a, b);
        check_close(op_label(ops[o]), N, out, want, 0, 0);
        remat_cpu_binary_f32(ops[o], N, out32, a32, b32);
        check_close_f32(op_label(ops[o]), N, out32, want, 1e-7, 0);
        remat_cpu_binary_f64(ops[o], 0, out, a, b); /* n = 0 is a no-op */
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
    remat_cpu_select_f64(6, out, pred, t, f);
    check_close("select f64", 6, out, want, 0, 0);
    for (int i = 0; i < 6; i++)
        p32[i] = (float)pred[i], t32[i] = (float)t[i], f32[i] = (float)f[i];
    remat_cpu_select_f32(6, o32, p32, t32, f32);
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
static const remat_op scalar_binary_ops[] = {REMAT_OP_ADD, REMAT_OP_SUB, REMAT_OP_MUL, REMAT_OP_DIV,
                                             REMAT_OP_MAX, REMAT_OP_MIN, REMAT_OP_GT,  REMAT_OP_GE,
                                             REMAT_OP_LT,  REMAT_OP_LE,  REMAT_OP_EQ,  REMAT_OP_NE};

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
        remat_cpu_binary_##SFX(op, n, want, side ? x : bc, side ? bc : x);                                     \
        for (int layout = 0; layout < 2; layout++) {                                                           \
            T *sp = scalar_buf_##SFX(layout, n, s);                                                            \
            got[n] = (T)-777;                                                                                  \
            remat_cpu_binary_scalar_##SFX(op, n, got, side ? x : sp, side ? sp : x, side);                     \
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
        remat_cpu_select_##SFX(n, want, pred, t_scalar ? bt : t, f_scalar ? bf : f);                           \
        for (int layout = 0; layout < 2; layout++) {                                                           \
            T *tp = scalar_buf_##SFX(layout, n, ts), *fp = scalar_buf_##SFX(layout, n, fs);                    \
            got[n] = (T)-777;                                                                                  \
            /* the flags as the CPU backend passes them: mask bits 2 and 4 */                                 \
            remat_cpu_select_scalar_##SFX(n, got, pred, t_scalar ? tp : t, t_scalar ? 2 : 0, f_scalar ? fp : f, \
                                          f_scalar ? 4 : 0);                                                   \
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
    for (size_t z = 0; z < sizeof scalar_sizes / sizeof *scalar_sizes; z++) {
        const size_t n = scalar_sizes[z];
        double *x = xmalloc((n + 1) * sizeof *x);
        for (size_t v = 0; v < N_SCALAR_VALUES; v++) {
            const double s = scalar_values[v];
            for (size_t phase = 0; phase < 10; phase++) {
                fill_special(x, n, s, phase);
                float *x32 = to_f32(x, (int64_t)n);
                for (size_t o = 0; o < sizeof scalar_binary_ops / sizeof *scalar_binary_ops; o++)
                    for (int side = 0; side < 2; side++) {
                        binary_scalar_check_f64(scalar_binary_ops[o], side, n, s, x);
                        binary_scalar_check_f32(scalar_binary_ops[o], side, n, (float)s, x32);
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
        remat_cpu_integer_pow_f64(N, out, a, k);
        check_close("integer_pow f64", N, out, want, 4e-15, 0);
        remat_cpu_integer_pow_f32(N, out32, a32, k);
        for (int i = 0; i < N; i++)
            want[i] = k == 0 ? 1.0 : pow((double)a32[i], k);
        check_close_f32("integer_pow f32", N, out32, want, 4e-6, 0);
    }
    /* the small cases are exact products */
    const double x = 1.1;
    remat_cpu_integer_pow_f64(1, out, &x, 3);
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
    remat_cpu_pow_f64(N, out, a, 1.5);
    check_close("pow f64", N, out, want, 1e-15, 0);
    remat_cpu_pow_f32(N, out32, a32, 1.5);
    check_close_f32("pow f32", N, out32, want, 2e-6, 0);

    const double d[] = {0.1, -1e-40, 3.0, 1e300, NAN};
    float f[5];
    double back[5];
    remat_cpu_convert(5, REMAT_F32, f, REMAT_F64, d);
    for (int i = 0; i < 5; i++)
        assert_memory_equal(&f[i], &(float){(float)d[i]}, sizeof(float));
    remat_cpu_convert(5, REMAT_F64, back, REMAT_F32, f);
    for (int i = 0; i < 4; i++)
        assert_true(back[i] == (double)f[i]);
    assert_true(isnan(back[4]));
    remat_cpu_convert(5, REMAT_F64, back, REMAT_F64, d);
    assert_memory_equal(back, d, sizeof d);
    free(a32);
}

/* ---- structural: run a kernel in both element sizes against a reference
 * map "output element i comes from input element src[i]" (-1: zero) ---- */

typedef void (*struct_fn)(remat_dtype dt, void *out, const void *in, const void *ctx);

static void check_structural(const char *what, struct_fn fn, const void *ctx, int64_t n_in,
                             int64_t n_out, const int64_t *src)
{
    double *in = xmalloc((size_t)n_in * sizeof *in), *out = xmalloc((size_t)(n_out + 1) * 8);
    double *want = xmalloc((size_t)n_out * sizeof *want);
    fill(in, n_in);
    for (int64_t i = 0; i < n_out; i++)
        want[i] = src[i] < 0 ? 0.0 : in[src[i]];
    float *in32 = to_f32(in, n_in), *out32 = xmalloc((size_t)(n_out + 1) * 4);
    for (int64_t i = 0; i <= n_out; i++)
        out[i] = NAN, out32[i] = NAN; /* every element must be written */
    fn(REMAT_F64, out, in, ctx);
    check_close(what, n_out, out, want, 0, 0);
    assert_true(isnan(out[n_out]));
    fn(REMAT_F32, out32, in32, ctx);
    check_close_f32(what, n_out, out32, want, 0, 0);
    assert_true(isnan(out32[n_out]));
    free(in), free(out), free(want), free(in32), free(out32);
}

typedef struct {
    remat_shape in, out;
    int perm[REMAT_MAX_RANK];
} transpose_case;

static void run_transpose(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const transpose_case *c = ctx;
    remat_cpu_transpose(dt, out, in, &c->in, c->perm);
}

static void transpose_check(int rank, const int64_t *dims, const int *perm)
{
    transpose_case c = {.in = shp(rank, dims)};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++)
        c.perm[i] = perm[i], od[i] = dims[perm[i]];
    c.out = shp(rank, od);
    const int64_t n = remat_shape_numel(&c.in);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&c.out, f, idx);
        for (int i = 0; i < rank; i++)
            iidx[perm[i]] = idx[i];
        src[f] = ravel(&c.in, iidx);
    }
    check_structural("transpose", run_transpose, &c, n, n, src);
    free(src);
}

static void test_cpu_kernels_transpose_any_perm(void **state)
{
    (void)state;
    transpose_check(0, NULL, NULL);
    transpose_check(1, (int64_t[]){5}, (int[]){0});
    transpose_check(2, (int64_t[]){37, 45}, (int[]){1, 0}); /* tiled path */
    transpose_check(2, (int64_t[]){3, 4}, (int[]){1, 0});
    transpose_check(3, (int64_t[]){5, 40, 33}, (int[]){0, 2, 1}); /* batched tiles */
    transpose_check(3, (int64_t[]){4, 5, 6}, (int[]){2, 0, 1});
    transpose_check(4, (int64_t[]){2, 3, 4, 5}, (int[]){1, 3, 0, 2});
    transpose_check(4, (int64_t[]){2, 1, 4, 5}, (int[]){0, 2, 1, 3});
    transpose_check(3, (int64_t[]){2, 0, 4}, (int[]){2, 1, 0}); /* zero-size */
    transpose_check(8, (int64_t[]){2, 1, 3, 2, 1, 2, 3, 2}, (int[]){7, 2, 5, 0, 1, 6, 3, 4});
}

typedef struct {
    remat_shape in, out;
    int bdims[REMAT_MAX_RANK];
} bcast_case;

static void run_bcast(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const bcast_case *c = ctx;
    remat_cpu_broadcast_in_dim(dt, out, &c->out, in, &c->in, c->bdims);
}

static void bcast_check(int in_rank, const int64_t *in_dims, int out_rank, const int64_t *out_dims,
                        const int *bdims)
{
    bcast_case c = {.in = shp(in_rank, in_dims), .out = shp(out_rank, out_dims)};
    int64_t idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < in_rank; i++)
        c.bdims[i] = bdims[i];
    const int64_t n = remat_shape_numel(&c.out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&c.out, f, idx);
        for (int i = 0; i < in_rank; i++)
            iidx[i] = in_dims[i] == 1 ? 0 : idx[bdims[i]];
        src[f] = ravel(&c.in, iidx);
    }
    check_structural("broadcast_in_dim", run_bcast, &c, remat_shape_numel(&c.in), n, src);
    free(src);
}

static void test_cpu_kernels_broadcast_in_dim(void **state)
{
    (void)state;
    bcast_check(0, NULL, 0, NULL, NULL);
    bcast_check(0, NULL, 2, (int64_t[]){3, 4}, NULL);
    bcast_check(1, (int64_t[]){4}, 2, (int64_t[]){3, 4}, (int[]){1});
    bcast_check(1, (int64_t[]){3}, 2, (int64_t[]){3, 4}, (int[]){0});
    bcast_check(2, (int64_t[]){3, 1}, 2, (int64_t[]){3, 5}, (int[]){0, 1});
    bcast_check(3, (int64_t[]){2, 1, 3}, 4, (int64_t[]){4, 2, 5, 3}, (int[]){1, 2, 3});
    bcast_check(2, (int64_t[]){1, 6}, 3, (int64_t[]){6, 2, 7}, (int[]){1, 0}); /* swaps order */
    bcast_check(1, (int64_t[]){3}, 2, (int64_t[]){0, 3}, (int[]){1});         /* zero-size */
}

typedef struct {
    remat_shape in;
    remat_slice_params p;
} slice_case;

static void run_slice(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const slice_case *c = ctx;
    remat_cpu_slice(dt, out, in, &c->in, &c->p);
}

static void slice_check(int rank, const int64_t *dims, const int64_t *start, const int64_t *limit,
                        const int64_t *stride)
{
    slice_case c = {.in = shp(rank, dims)};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        c.p.start[i] = start[i], c.p.limit[i] = limit[i], c.p.stride[i] = stride[i];
        od[i] = 0;
        for (int64_t j = start[i]; j < limit[i]; j += stride[i])
            od[i]++; /* counted, not the ceil formula the kernel uses */
    }
    const remat_shape out = shp(rank, od);
    const int64_t n = remat_shape_numel(&out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&out, f, idx);
        for (int i = 0; i < rank; i++)
            iidx[i] = start[i] + idx[i] * stride[i];
        src[f] = ravel(&c.in, iidx);
    }
    check_structural("slice", run_slice, &c, remat_shape_numel(&c.in), n, src);
    free(src);
}

static void test_cpu_kernels_slice_with_strides(void **state)
{
    (void)state;
    slice_check(0, NULL, NULL, NULL, NULL);
    slice_check(1, (int64_t[]){10}, (int64_t[]){2}, (int64_t[]){9}, (int64_t[]){3});
    slice_check(2, (int64_t[]){6, 8}, (int64_t[]){1, 0}, (int64_t[]){5, 8}, (int64_t[]){1, 1});
    slice_check(3, (int64_t[]){7, 9, 5}, (int64_t[]){1, 0, 2}, (int64_t[]){7, 9, 5},
                (int64_t[]){2, 3, 1});
    slice_check(3, (int64_t[]){4, 5, 6}, (int64_t[]){0, 4, 1}, (int64_t[]){4, 5, 6},
                (int64_t[]){1, 1, 7}); /* stride past the end */
    slice_check(2, (int64_t[]){4, 5}, (int64_t[]){2, 1}, (int64_t[]){2, 4},
                (int64_t[]){1, 1}); /* empty */
}

typedef struct {
    remat_shape in, out;
    remat_pad_params p;
} pad_case;

static void run_pad(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const pad_case *c = ctx;
    remat_cpu_pad(dt, out, &c->out, in, &c->in, &c->p);
}

static void pad_check(int rank, const int64_t *dims, const int64_t *lo, const int64_t *hi,
                      const int64_t *interior)
{
    pad_case c = {.in = shp(rank, dims)};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], iidx[REMAT_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        c.p.low[i] = lo[i], c.p.high[i] = hi[i], c.p.interior[i] = interior[i];
        od[i] = lo[i] + hi[i] + dims[i] + (dims[i] > 0 ? (dims[i] - 1) * interior[i] : 0);
    }
    c.out = shp(rank, od);
    const int64_t n = remat_shape_numel(&c.out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&c.out, f, idx);
        src[f] = 0;
        for (int i = 0; i < rank; i++) {
            const int64_t q = idx[i] - lo[i];
            if (q < 0 || q % (interior[i] + 1) != 0 || q / (interior[i] + 1) >= dims[i])
                src[f] = -1;
            else
                iidx[i] = q / (interior[i] + 1);
        }
        if (src[f] == 0)
            src[f] = ravel(&c.in, iidx);
    }
    check_structural("pad", run_pad, &c, remat_shape_numel(&c.in), n, src);
    free(src);
}

static void test_cpu_kernels_pad_edges_and_interior(void **state)
{
    (void)state;
    pad_check(0, NULL, NULL, NULL, NULL);
    pad_check(1, (int64_t[]){4}, (int64_t[]){2}, (int64_t[]){1}, (int64_t[]){0});
    pad_check(1, (int64_t[]){4}, (int64_t[]){0}, (int64_t[]){0}, (int64_t[]){2});
    pad_check(2, (int64_t[]){3, 4}, (int64_t[]){0, 0}, (int64_t[]){0, 0}, (int64_t[]){0, 0});
    pad_check(2, (int64_t[]){3, 4}, (int64_t[]){1, 2}, (int64_t[]){2, 0}, (int64_t[]){1, 3});
    pad_check(3, (int64_t[]){2, 3, 4}, (int64_t[]){0, 1, 0}, (int64_t[]){1, 0, 2},
              (int64_t[]){2, 0, 1});
    pad_check(2, (int64_t[]){0, 3}, (int64_t[]){1, 0}, (int64_t[]){2, 1}, (int64_t[]){4, 1});
}

typedef struct {
    int n_in, axis;
    remat_shape shapes[4];
    const remat_shape *ptrs[4];
    int64_t offs[4];
} concat_case;

static void run_concat(remat_dtype dt, void *out, const void *in, const void *ctx)
{
    const concat_case *c = ctx;
    const void *ins[4];
    for (int j = 0; j < c->n_in; j++)
        ins[j] = (const char *)in + c->offs[j] * (int64_t)remat_dtype_size(dt);
    remat_cpu_concatenate(dt, out, c->n_in, ins, c->ptrs, c->axis);
}

static void concat_check(int rank, const int64_t *dims, int axis, int n_in, const int64_t *sizes)
{
    concat_case c = {.n_in = n_in, .axis = axis};
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], total = 0, n_all = 0;
    for (int j = 0; j < n_in; j++) {
        c.shapes[j] = shp(rank, dims);
        c.shapes[j].dims[axis] = sizes[j];
        c.ptrs[j] = &c.shapes[j];
        c.offs[j] = n_all; /* all inputs packed one after the other in `in` */
        n_all += remat_shape_numel(&c.shapes[j]);
        total += sizes[j];
    }
    memcpy(od, dims, (size_t)rank * sizeof *od);
    od[axis] = total;
    const remat_shape out = shp(rank, od);
    const int64_t n = remat_shape_numel(&out);
    int64_t *src = xmalloc((size_t)n * sizeof *src);
    for (int64_t f = 0; f < n; f++) {
        unravel(&out, f, idx);
        int j = 0;
        while (idx[axis] >= sizes[j])
            idx[axis] -= sizes[j++];
        src[f] = c.offs[j] + ravel(&c.shapes[j], idx);
    }
    check_structural("concatenate", run_concat, &c, n_all, n, src);
    free(src);
}

static void test_cpu_kernels_concatenate_any_axis(void **state)
{
    (void)state;
    const int64_t d[] = {3, 4, 5};
    for (int axis = 0; axis < 3; axis++) {
        concat_check(3, d, axis, 3, (int64_t[]){2, 0, 3});
        concat_check(3, d, axis, 1, (int64_t[]){4});
    }
    concat_check(1, (int64_t[]){1}, 0, 4, (int64_t[]){1, 2, 1, 3});
    concat_check(2, (int64_t[]){0, 2}, 1, 2, (int64_t[]){2, 3}); /* zero-size */
}

/* ---- reduce_sum ---- */

static void reduce_check(int rank, const int64_t *dims, const bool *reduce)
{
    const remat_shape s = shp(rank, dims);
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], oidx[REMAT_MAX_RANK] = {0};
    int orank = 0;
    for (int i = 0; i < rank; i++)
        if (!reduce[i])
            od[orank++] = dims[i];
    const remat_shape os = shp(orank, od);
    const int64_t n = remat_shape_numel(&s), no = remat_shape_numel(&os);
    double *in = xmalloc((size_t)n * sizeof *in), *want = xmalloc((size_t)no * sizeof *want);
    double *out = xmalloc((size_t)(no + 1) * sizeof *out);
    long double *acc = xmalloc((size_t)no * sizeof *acc);
    fill(in, n);
    for (int64_t i = 0; i < no; i++)
        acc[i] = 0;
    for (int64_t f = 0; f < n; f++) {
        unravel(&s, f, idx);
        int k = 0;
        for (int i = 0; i < rank; i++)
            if (!reduce[i])
                oidx[k++] = idx[i];
        acc[ravel(&os, oidx)] += in[f];
    }
    for (int64_t i = 0; i < no; i++)
        want[i] = (double)acc[i];
    for (int64_t i = 0; i <= no; i++)
        out[i] = NAN;
    remat_cpu_reduce_sum(REMAT_F64, out, in, &s, reduce);
    /* inputs are multiples of 1/8 below 2^7: every partial sum is exact */
    check_close("reduce_sum f64", no, out, want, 0, 0);
    assert_true(isnan(out[no]));
    float *in32 = to_f32(in, n), *out32 = xmalloc((size_t)(no + 1) * sizeof *out32);
    remat_cpu_reduce_sum(REMAT_F32, out32, in32, &s, reduce);
    check_close_f32("reduce_sum f32", no, out32, want, 1e-6, 1e-6 * (double)n);
    free(in), free(want), free(out), free(acc), free(in32), free(out32);
}

static void test_cpu_kernels_reduce_sum_every_axis_set(void **state)
{
    (void)state;
    const int64_t d[] = {3, 4, 5, 6};
    for (unsigned mask = 0; mask < 16; mask++) {
        bool r[4];
        for (int i = 0; i < 4; i++)
            r[i] = (mask >> i) & 1u;
        reduce_check(4, d, r);
    }
    reduce_check(0, NULL, NULL);
    reduce_check(1, (int64_t[]){100003}, (bool[]){true});                 /* sum all */
    reduce_check(2, (int64_t[]){301, 67}, (bool[]){true, false});         /* column sums */
    reduce_check(2, (int64_t[]){67, 301}, (bool[]){false, true});         /* row sums */
    reduce_check(3, (int64_t[]){1, 7, 1}, (bool[]){true, false, true});   /* size-1 axes */
    reduce_check(3, (int64_t[]){2, 0, 3}, (bool[]){false, true, false});  /* empty sum: 0 */
    reduce_check(2, (int64_t[]){0, 3}, (bool[]){false, true});            /* empty output */
    reduce_check(2, (int64_t[]){3, 4}, (bool[]){false, false});           /* identity */
}

/* The header promises one running sum per output in ascending row-major
 * order; with values that are not exact in binary, any other order (lanes,
 * pairwise, per-row partials) changes the bits, so this compares bitwise. */
static void reduce_order_check(int rank, const int64_t *dims, const bool *reduce)
{
    const remat_shape s = shp(rank, dims);
    int64_t od[REMAT_MAX_RANK], idx[REMAT_MAX_RANK], oidx[REMAT_MAX_RANK] = {0};
    int orank = 0;
    for (int i = 0; i < rank; i++)
        if (!reduce[i])
            od[orank++] = dims[i];
    const remat_shape os = shp(orank, od);
    const int64_t n = remat_shape_numel(&s), no = remat_shape_numel(&os);
    double *in = xmalloc((size_t)n * sizeof *in), *want = xmalloc((size_t)no * sizeof *want);
    double *out = xmalloc((size_t)no * sizeof *out);
    float *want32 = xmalloc((size_t)no * sizeof *want32), *out32 = xmalloc((size_t)no * 4);
    for (int64_t i = 0; i < n; i++)
        in[i] = rnd() * 0.1 + (i % 3 ? 1e7 : -1e7) / 3.0;
    float *in32 = to_f32(in, n);
    for (int64_t i = 0; i < no; i++)
        want[i] = 0, want32[i] = 0;
    for (int64_t f = 0; f < n; f++) {
        unravel(&s, f, idx);
        int k = 0;
        for (int i = 0; i < rank; i++)
            if (!reduce[i])
                oidx[k++] = idx[i];
        want[ravel(&os, oidx)] += in[f];
        want32[ravel(&os, oidx)] += in32[f];
    }
    remat_cpu_reduce_sum(REMAT_F64, out, in, &s, reduce);
    remat_cpu_reduce_sum(REMAT_F32, out32, in32, &s, reduce);
    for (int64_t i = 0; i < no; i++) {
        if (memcmp(&out[i], &want[i], sizeof(double)) != 0)
            fail_msg("reduce_sum f64 order: element %lld: got %.17g want %.17g", (long long)i,
                     out[i], want[i]);
        if (memcmp(&out32[i], &want32[i], sizeof(float)) != 0)
            fail_msg("reduce_sum f32 order: element %lld: got %.9g want %.9g", (long long)i,
                     (double)out32[i], (double)want32[i]);
    }
    free(in), free(want), free(out), free(want32), free(out32), free(in32);
}

static void test_cpu_kernels_reduce_sum_order_is_ascending(void **state)
{
    (void)state;
    reduce_order_check(1, (int64_t[]){1001}, (bool[]){true});
    reduce_order_check(2, (int64_t[]){7, 37}, (bool[]){false, true}); /* 4-row chains + tail */
    reduce_order_check(2, (int64_t[]){37, 7}, (bool[]){true, false});
    reduce_order_check(3, (int64_t[]){5, 3, 17}, (bool[]){true, false, true});
    reduce_order_check(4, (int64_t[]){3, 4, 5, 6}, (bool[]){false, true, false, true});
    /* -0.0 sums to +0.0: the running sum starts at +0 */
    const double negz[3] = {-0.0, -0.0, -0.0};
    double o = 1;
    remat_cpu_reduce_sum(REMAT_F64, &o, negz, &(remat_shape){1, {3}}, (bool[]){true});
    assert_true(o == 0 && !signbit(o));
}

/* ---- dot_general against the definition ---- */

/* out[b.., fl.., fr..] = sum_c lhs[...] * rhs[...], with the dims placed
 * where the dimension numbers say. Also fills absref = sum |lhs*rhs|. */
static void dot_ref(const double *l, const remat_shape *ls, const double *r, const remat_shape *rs,
                    const remat_dot_dims *d, remat_shape *os, double *out, double *absref)
{
    int lrole[REMAT_MAX_RANK] = {0}, rrole[REMAT_MAX_RANK] = {0}; /* 0 free, 1 batch, 2 contract */
    int lfree[REMAT_MAX_RANK], rfree[REMAT_MAX_RANK], nlf = 0, nrf = 0, orank = 0;
    int64_t od[REMAT_MAX_RANK], cd[REMAT_MAX_RANK];
    for (int i = 0; i < d->n_batch; i++)
        lrole[d->lhs_batch[i]] = 1, rrole[d->rhs_batch[i]] = 1;
    for (int i = 0; i < d->n_contract; i++)
        lrole[d->lhs_contract[i]] = 2, rrole[d->rhs_contract[i]] = 2;
    for (int i = 0; i < ls->rank; i++)
        if (!lrole[i])
            lfree[nlf++] = i;
    for (int i = 0; i < rs->rank; i++)
        if (!rrole[i])
            rfree[nrf++] = i;
    for (int i = 0; i < d->n_batch; i++)
        od[orank++] = ls->dims[d->lhs_batch[i]];
    for (int i = 0; i < nlf; i++)
        od[orank++] = ls->dims[lfree[i]];
    for (int i = 0; i < nrf; i++)
        od[orank++] = rs->dims[rfree[i]];
    *os = shp(orank, od);
    for (int i = 0; i < d->n_contract; i++)
        cd[i] = ls->dims[d->lhs_contract[i]];
    const remat_shape cs = shp(d->n_contract, cd);
    const int64_t no = remat_shape_numel(os), nc = remat_shape_numel(&cs);
    int64_t oi[REMAT_MAX_RANK], ci[REMAT_MAX_RANK], li[REMAT_MAX_RANK], ri[REMAT_MAX_RANK];
    for (int64_t f = 0; f < no; f++) {
        unravel(os, f, oi);
        int p = 0;
        for (int i = 0; i < d->n_batch; i++, p++)
            li[d->lhs_batch[i]] = oi[p], ri[d->rhs_batch[i]] = oi[p];
        for (int i = 0; i < nlf; i++, p++)
            li[lfree[i]] = oi[p];
        for (int i = 0; i < nrf; i++, p++)
            ri[rfree[i]] = oi[p];
        long double s = 0, sa = 0;
        for (int64_t g = 0; g < nc; g++) {
            unravel(&cs, g, ci);
            for (int i = 0; i < d->n_contract; i++)
                li[d->lhs_contract[i]] = ci[i], ri[d->rhs_contract[i]] = ci[i];
            const long double prod = (long double)l[ravel(ls, li)] * r[ravel(rs, ri)];
            s += prod;
            sa += fabsl(prod);
        }
        out[f] = (double)s;
        absref[f] = (double)sa;
    }
}

/* Runs both dtypes; scratch is allocated to exactly the reported size so that
 * ASan catches an under-reported size. Returns the f64 scratch bytes. */
static size_t dot_check(int lrank, const int64_t *ldims, int rrank, const int64_t *rdims,
                        remat_dot_dims d)
{
    const remat_shape ls = shp(lrank, ldims), rs = shp(rrank, rdims);
    const int64_t nl = remat_shape_numel(&ls), nr = remat_shape_numel(&rs);
    double *l = xmalloc((size_t)nl * 8), *r = xmalloc((size_t)nr * 8);
    fill(l, nl);
    fill(r, nr);
    remat_shape os;
    double want[4096], absref[4096];
    dot_ref(l, &ls, r, &rs, &d, &os, want, absref);
    const int64_t no = remat_shape_numel(&os);
    assert_true(no < 4096);
    int64_t k = 1;
    for (int i = 0; i < d.n_contract; i++)
        k *= ldims[d.lhs_contract[i]];

    const size_t sb64 = remat_cpu_dot_general_scratch(REMAT_F64, &ls, &rs, &d);
    double *out = xmalloc((size_t)(no + 1) * 8);
    void *scratch = sb64 ? xmalloc(sb64) : NULL;
    for (int64_t i = 0; i <= no; i++)
        out[i] = NAN;
    remat_cpu_dot_general(REMAT_F64, out, l, &ls, r, &rs, &d, scratch);
    for (int64_t i = 0; i < no; i++)
        if (!(fabs(out[i] - want[i]) <= 4.0 * (double)k * DBL_EPSILON * absref[i]))
            fail_msg("dot_general f64 element %lld: got %.17g want %.17g", (long long)i, out[i],
                     want[i]);
    assert_true(isnan(out[no]));
    free(scratch);

    const size_t sb32 = remat_cpu_dot_general_scratch(REMAT_F32, &ls, &rs, &d);
    assert_true(sb32 * 2 == sb64);
    float *l32 = to_f32(l, nl), *r32 = to_f32(r, nr), *out32 = xmalloc((size_t)(no + 1) * 4);
    scratch = sb32 ? xmalloc(sb32) : NULL;
    for (int64_t i = 0; i <= no; i++)
        out32[i] = NAN;
    remat_cpu_dot_general(REMAT_F32, out32, l32, &ls, r32, &rs, &d, scratch);
    for (int64_t i = 0; i < no; i++)
        if (!(fabs(out32[i] - want[i]) <= 4.0 * (double)k * FLT_EPSILON * absref[i]))
            fail_msg("dot_general f32 element %lld: got %.9g want %.17g", (long long)i,
                     (double)out32[i], want[i]);
    assert_true(isnan(out32[no]));
    free(scratch), free(l), free(r), free(out), free(l32), free(r32), free(out32);
    return sb64;
}

#define DD(...) ((remat_dot_dims){__VA_ARGS__})

static void test_cpu_kernels_dot_general_matmul_cases_need_no_scratch(void **state)
{
    (void)state;
    /* x(M,K) @ w(K,N) */
    assert_int_equal(dot_check(2, (int64_t[]){7, 5}, 2, (int64_t[]){5, 6},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* dx = g(M,N) . w(K,N) over N -> (M,K) */
    assert_int_equal(dot_check(2, (int64_t[]){7, 6}, 2, (int64_t[]){5, 6},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1})), 0);
    /* dw = h(M,K) . g(M,N) over M -> (K,N) */
    assert_int_equal(dot_check(2, (int64_t[]){7, 5}, 2, (int64_t[]){7, 6},
                               DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0})), 0);
    /* (B,M,K) x (B,K,N) */
    assert_int_equal(dot_check(3, (int64_t[]){3, 4, 5}, 3, (int64_t[]){3, 5, 6},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                                  .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0})), 0);
    /* large enough for OpenBLAS's blocked kernels */
    assert_int_equal(dot_check(2, (int64_t[]){33, 70}, 2, (int64_t[]){70, 41},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* matrix-vector, vector dot, outer product, size-1 dims */
    assert_int_equal(dot_check(2, (int64_t[]){4, 5}, 1, (int64_t[]){5},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(1, (int64_t[]){9}, 1, (int64_t[]){9},
                               DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(1, (int64_t[]){4}, 1, (int64_t[]){3}, DD(.n_contract = 0)), 0);
    assert_int_equal(dot_check(3, (int64_t[]){1, 4, 1}, 2, (int64_t[]){1, 3},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0})), 0);
}

static void test_cpu_kernels_dot_general_general_dimension_numbers(void **state)
{
    (void)state;
    /* batch dims not leading: lhs (M,B,K), rhs (K,B,N) -> (B,M,N); needs copies */
    assert_true(dot_check(3, (int64_t[]){4, 3, 5}, 3, (int64_t[]){5, 3, 6},
                          DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0},
                             .n_batch = 1, .lhs_batch = {1}, .rhs_batch = {1})) > 0);
    /* two contracting dims in different orders: lhs (M,K1,K2), rhs (K2,N,K1) */
    dot_check(3, (int64_t[]){4, 3, 5}, 3, (int64_t[]){5, 6, 3},
              DD(.n_contract = 2, .lhs_contract = {1, 2}, .rhs_contract = {2, 0}));
    /* contract pairs listed out of memory order on both sides: direct after reordering */
    assert_int_equal(dot_check(3, (int64_t[]){4, 3, 5}, 3, (int64_t[]){3, 5, 6},
                               DD(.n_contract = 2, .lhs_contract = {2, 1}, .rhs_contract = {1, 0})),
                     0);
    /* pair order matters: lhs (M,K1,K2), rhs (K2,K1,N). Pairing by the lhs
     * order would copy the big rhs; pairing by the rhs order copies lhs only */
    assert_int_equal(dot_check(3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){4, 3, 50},
                               DD(.n_contract = 2, .lhs_contract = {1, 2}, .rhs_contract = {1, 0})),
                     2 * 3 * 4 * sizeof(double));
    /* a size-1 contract dim can sit anywhere: lhs (M,1,N') needs no copy */
    assert_int_equal(dot_check(3, (int64_t[]){4, 1, 5}, 2, (int64_t[]){1, 6},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* two batch dims, swapped between operands: lhs (B1,M,B2,K), rhs (B2,K,B1,N) */
    dot_check(4, (int64_t[]){2, 4, 3, 5}, 4, (int64_t[]){3, 5, 2, 6},
              DD(.n_contract = 1, .lhs_contract = {3}, .rhs_contract = {1}, .n_batch = 2,
                 .lhs_batch = {0, 2}, .rhs_batch = {2, 0}));
    /* batch last, several free dims on each side: lhs (M1,K,M2,B), rhs (N1,B,K,N2) */
    dot_check(4, (int64_t[]){2, 5, 3, 4}, 4, (int64_t[]){3, 4, 5, 2},
              DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {2}, .n_batch = 1,
                 .lhs_batch = {3}, .rhs_batch = {1}));
    /* lhs transposed layout (B,K,M) with rhs (B,N,K) */
    assert_int_equal(dot_check(3, (int64_t[]){2, 5, 4}, 3, (int64_t[]){2, 6, 5},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {2},
                                  .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0})),
                     0);
    /* only batch dims, no contraction: elementwise product per batch */
    dot_check(2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 3},
              DD(.n_batch = 2, .lhs_batch = {0, 1}, .rhs_batch = {1, 0}));
}

static void test_cpu_kernels_dot_general_degenerate_sizes(void **state)
{
    (void)state;
    /* K = 0: the output is all zeros */
    assert_int_equal(dot_check(2, (int64_t[]){3, 0}, 2, (int64_t[]){0, 4},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* K = 0 in a layout that would otherwise need a copy */
    assert_int_equal(dot_check(3, (int64_t[]){3, 2, 0}, 3, (int64_t[]){0, 2, 4},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0},
                                  .n_batch = 1, .lhs_batch = {1}, .rhs_batch = {1})), 0);
    /* M = 0, N = 0, B = 0: nothing to write */
    assert_int_equal(dot_check(2, (int64_t[]){0, 5}, 2, (int64_t[]){5, 4},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(2, (int64_t[]){3, 5}, 2, (int64_t[]){5, 0},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(3, (int64_t[]){0, 3, 5}, 3, (int64_t[]){0, 5, 2},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                                  .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0})), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_kernels_unary_matches_libm),
        cmocka_unit_test(test_cpu_kernels_relu_max_min_propagate_nan),
        cmocka_unit_test(test_cpu_kernels_binary_and_compare_match_reference),
        cmocka_unit_test(test_cpu_kernels_select_picks_by_predicate),
        cmocka_unit_test(test_cpu_kernels_binary_scalar_matches_broadcast),
        cmocka_unit_test(test_cpu_kernels_select_scalar_matches_broadcast),
        cmocka_unit_test(test_cpu_kernels_integer_pow_matches_pow),
        cmocka_unit_test(test_cpu_kernels_pow_and_convert),
        cmocka_unit_test(test_cpu_kernels_transpose_any_perm),
        cmocka_unit_test(test_cpu_kernels_broadcast_in_dim),
        cmocka_unit_test(test_cpu_kernels_slice_with_strides),
        cmocka_unit_test(test_cpu_kernels_pad_edges_and_interior),
        cmocka_unit_test(test_cpu_kernels_concatenate_any_axis),
        cmocka_unit_test(test_cpu_kernels_reduce_sum_every_axis_set),
        cmocka_unit_test(test_cpu_kernels_reduce_sum_order_is_ascending),
        cmocka_unit_test(test_cpu_kernels_dot_general_matmul_cases_need_no_scratch),
        cmocka_unit_test(test_cpu_kernels_dot_general_general_dimension_numbers),
        cmocka_unit_test(test_cpu_kernels_dot_general_degenerate_sizes),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
