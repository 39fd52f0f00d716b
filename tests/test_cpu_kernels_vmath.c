/*
 * test_cpu_kernels_vmath.c — the CPU backend's transcendentals (SLEEF's u10
 * functions, src/backend/cpu/vmath.h): accuracy and the bits of every path.
 *
 * Accuracy: every function against a long double libm reference (f32 against
 * double's), within the bound docs/DESIGN.md states (1.0 ulp; f32 tanh 3.5), on sampled
 * ranges. Bits: an element's result is the scalar function's (the one the
 * compiled lane programs import) whatever the array length, its place in a
 * vector, its neighbours (a large sin argument beside a small one), in place
 * or not; that is what keeps contract 1 (threads split arrays anywhere) and
 * contract 2 (compiled = interpreted) with vectorised kernels.
 */
#include "test_cpu_kernels_util.h"

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/vmath.h"

static uint64_t state = 0x243f6a8885a308d3ull;

static uint64_t next(void)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
}

static double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next() >> 11) * 0x1p-53; }

static const char *const fn_name[RMI_VM_COUNT] = {"exp", "log", "sin", "cos", "tanh", "erf", "log1p", "expm1", "pow"};
static const double pow_exponents[] = {1.7, -0.5, 2.5, 0.3, -2.25};

static long double ref_l(rmi_vm_fn fn, long double x, long double p)
{
    switch (fn) {
    case RMI_VM_EXP: return expl(x);
    case RMI_VM_LOG: return logl(x);
    case RMI_VM_SIN: return sinl(x);
    case RMI_VM_COS: return cosl(x);
    case RMI_VM_TANH: return tanhl(x);
    case RMI_VM_ERF: return erfl(x);
    case RMI_VM_LOG1P: return log1pl(x);
    case RMI_VM_EXPM1: return expm1l(x);
    case RMI_VM_POW: return powl(x, p);
    case RMI_VM_COUNT: break;
    }
    fail_msg("no function %d", (int)fn);
    return 0;
}

/* a sample of fn's domain: k picks one of the ranges */
static double sample(rmi_vm_fn fn, int f32, int k)
{
    switch (fn) {
    case RMI_VM_EXP: return f32 ? uniform(-87.0, 88.0) : uniform(-700.0, 700.0);
    case RMI_VM_LOG:
    case RMI_VM_POW: return exp(f32 ? uniform(-80.0, 80.0) : uniform(-650.0, 650.0));
    case RMI_VM_SIN:
    case RMI_VM_COS: {
        const double r[3] = {4.0, 200.0, f32 ? 1e4 : 1e6};
        return uniform(-r[k % 3], r[k % 3]);
    }
    case RMI_VM_TANH: return uniform(-20.0, 20.0);
    case RMI_VM_ERF: return uniform(-6.0, 6.0);
    case RMI_VM_LOG1P: /* tiny of both signs (where log(1 + x) loses it all), near -1, large */
    case RMI_VM_EXPM1: {
        const double tiny = uniform(-1.0, 1.0) * pow(10.0, -uniform(0.0, f32 ? 35.0 : 300.0));
        if (fn == RMI_VM_LOG1P)
            return k % 3 == 0 ? tiny : k % 3 == 1 ? uniform(-1.0, 4.0) : exp(uniform(0.0, f32 ? 80.0 : 650.0));
        return k % 3 == 0 ? tiny : k % 3 == 1 ? uniform(-5.0, 5.0) : f32 ? uniform(-100.0, 88.0) : uniform(-750.0, 709.0);
    }
    case RMI_VM_COUNT: break;
    }
    return 0;
}

/* |got - want| in units of the last place of want in the type of got */
static double ulps(long double got, long double want, int f32)
{
    if (want == 0)
        return got == 0 ? 0.0 : INFINITY;
    const int mant = f32 ? 23 : 52, emin = f32 ? -126 : -1022;
    int e = ilogbl(want);
    if (e < emin)
        e = emin;
    return (double)(fabsl(got - want) / ldexpl(1.0L, e - mant));
}

/* SLEEF's u10 functions stay within 1.0 ulp, f32 tanh (u35) within 3.5
 * (docs/DESIGN.md, vmath.h's RMI_VM_ULP_BOUND); the long double reference
 * adds 2^-11 ulp at most */
static void test_vmath_accuracy_within_one_ulp(void **st)
{
    (void)st;
    enum { N = 20000 };
    double *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    float *xf = xmalloc(N * sizeof *xf), *yf = xmalloc(N * sizeof *yf);
    for (int fn = 0; fn < RMI_VM_COUNT; fn++) {
        const int np = fn == RMI_VM_POW ? (int)(sizeof pow_exponents / sizeof *pow_exponents) : 1;
        for (int pi = 0; pi < np; pi++) {
            const double p = fn == RMI_VM_POW ? pow_exponents[pi] : 0.0;
            double worst = 0, worst_f = 0;
            for (int i = 0; i < N; i++) {
                x[i] = sample((rmi_vm_fn)fn, 0, i);
                xf[i] = (float)sample((rmi_vm_fn)fn, 1, i);
            }
            rmi_vm_map_f64((rmi_vm_fn)fn, N, y, x, p);
            rmi_vm_map_f32((rmi_vm_fn)fn, N, yf, xf, (float)p);
            for (int i = 0; i < N; i++) {
                const long double want = ref_l((rmi_vm_fn)fn, x[i], p);
                if (isfinite((double)want) && fabsl(want) <= DBL_MAX) {
                    const double u = ulps(y[i], want, 0);
                    worst = u > worst ? u : worst;
                }
                const long double want_f = ref_l((rmi_vm_fn)fn, xf[i], (float)p);
                if (fabsl(want_f) <= FLT_MAX) {
                    const double u = ulps(yf[i], want_f, 1);
                    worst_f = u > worst_f ? u : worst_f;
                }
            }
            printf("  %-4s p=%5.2f  max error f64 %.3f ulp, f32 %.3f ulp\n", fn_name[fn], p, worst, worst_f);
            assert_true(worst <= 1.0 + 0x1p-11);
            assert_true(worst_f <= rmi_vm_ulp_bound((rmi_vm_fn)fn, false) + 0x1p-11);
            assert_true(rmi_vm_ulp_bound((rmi_vm_fn)fn, true) == 1.0);
        }
    }
    free(x), free(y), free(xf), free(yf);
}

/* values that stress the per-vector choices: both sides of sin/cos's
 * reduction bounds (15, 125), huge, tiny, subnormal, signed zeros, inf, NaN */
static double nasty(void)
{
    static const double special[] = {0.0, -0.0, 1.0, -1.0, 14.999, 15.0, 15.001, 124.9, 125.0, 125.1,
                                     39000.5, 1e7, 1e15, 1e300, -1e300, 4.9e-324, 1e-310, 1e-40,
                                     INFINITY, -INFINITY, NAN, 710.0, -746.0, 89.0, -104.0};
    const uint64_t r = next();
    if (r % 3 == 0)
        return special[(r >> 8) % (sizeof special / sizeof *special)];
    return uniform(-3.0, 3.0) * pow(10.0, (double)((r >> 20) % 9) - 2.0);
}

static int same_f64(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }
static int same_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Each element of a map is the scalar function's bits, whatever its
 * neighbours, the array's length and offset, in place or not. */
static void test_vmath_map_equals_scalar_whatever_the_neighbours(void **st)
{
    (void)st;
    enum { N = 4099 };
    double *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y), *z = xmalloc(N * sizeof *z);
    float *xf = xmalloc(N * sizeof *xf), *yf = xmalloc(N * sizeof *yf), *zf = xmalloc(N * sizeof *zf);
    for (int rep = 0; rep < 40; rep++) {
        for (int i = 0; i < N; i++)
            x[i] = nasty(), xf[i] = (float)x[i];
        for (int fn = 0; fn < RMI_VM_COUNT; fn++) {
            const double p = fn == RMI_VM_POW ? pow_exponents[rep % 5] : 0.0;
            const size_t off = (size_t)(next() % 9), n = N - off - (size_t)(next() % 13);
            rmi_vm_map_f64((rmi_vm_fn)fn, n, y, x + off, p);
            rmi_vm_map_f32((rmi_vm_fn)fn, n, yf, xf + off, (float)p);
            memcpy(z, x + off, n * sizeof *z), memcpy(zf, xf + off, n * sizeof *zf);
            rmi_vm_map_f64((rmi_vm_fn)fn, n, z, z, p); /* in place */
            rmi_vm_map_f32((rmi_vm_fn)fn, n, zf, zf, (float)p);
            for (size_t i = 0; i < n; i++) {
                const double s = rmi_vm_f64((rmi_vm_fn)fn, x[off + i], p);
                const float sf = rmi_vm_f32((rmi_vm_fn)fn, xf[off + i], (float)p);
                if (!same_f64(y[i], s) || !same_f64(z[i], s) || !same_f32(yf[i], sf) || !same_f32(zf[i], sf))
                    fail_msg("%s(%a) at %zu of %zu: map %a / %a (in place %a / %a), scalar %a / %a", fn_name[fn],
                             x[off + i], i, n, y[i], (double)yf[i], z[i], (double)zf[i], s, (double)sf);
            }
        }
    }
    free(x), free(y), free(z), free(xf), free(yf), free(zf);
}

/* The unary and pow kernels the interpreter runs are the map (the kernels
 * the compiled loops match), on short arrays too (n < one vector). */
static void test_vmath_kernels_are_the_map(void **st)
{
    (void)st;
    static const remat_op ops[] = {REMAT_OP_EXP,  REMAT_OP_LOG, REMAT_OP_SIN,   REMAT_OP_COS,
                                   REMAT_OP_TANH, REMAT_OP_ERF, REMAT_OP_LOG1P, REMAT_OP_EXPM1};
    static const rmi_vm_fn fns[] = {RMI_VM_EXP,  RMI_VM_LOG, RMI_VM_SIN,   RMI_VM_COS,
                                    RMI_VM_TANH, RMI_VM_ERF, RMI_VM_LOG1P, RMI_VM_EXPM1};
    double x[11], y[11];
    float xf[11], yf[11];
    for (int k = 0; k < 8; k++)
        for (size_t n = 0; n <= 11; n++) {
            for (size_t i = 0; i < n; i++)
                x[i] = nasty(), xf[i] = (float)x[i];
            rmi_cpu_unary_f64(ops[k], n, y, x);
            rmi_cpu_unary_f32(ops[k], n, yf, xf);
            for (size_t i = 0; i < n; i++) {
                assert_true(same_f64(y[i], rmi_vm_f64(fns[k], x[i], 0)));
                assert_true(same_f32(yf[i], rmi_vm_f32(fns[k], xf[i], 0)));
            }
        }
    for (size_t i = 0; i < 11; i++)
        x[i] = fabs(nasty()), xf[i] = (float)x[i];
    rmi_cpu_pow_f64(11, y, x, 1.7);
    rmi_cpu_pow_f32(11, yf, xf, 1.7);
    for (size_t i = 0; i < 11; i++) {
        assert_true(same_f64(y[i], rmi_vm_f64(RMI_VM_POW, x[i], 1.7)));
        assert_true(same_f32(yf[i], rmi_vm_f32(RMI_VM_POW, xf[i], (float)1.7)));
    }
}

/* logistic is 1 / (1 + exp(-x)) with the map's exp (jit_gen.c emits the
 * same three operations around the scalar exp, so the bits are the
 * compiled loops'), within 2^-51 relative of the exact value, so 4 ulp
 * (exp's 1 ulp, 2^-52 relative, scaled by e / (1 + e) < 1, plus the
 * roundings of the add and the divide; measured: 1.9 ulp) wherever
 * exp(-x) is finite, and exactly 0 where it overflows (x below -709.78 in
 * f64, -88.72 in f32: JAX's lax.logistic gives the same 0), never NaN */
static void test_vmath_logistic_is_the_exp_map(void **st)
{
    (void)st;
    enum { N = 20011 };
    double *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    float *xf = xmalloc(N * sizeof *xf), *yf = xmalloc(N * sizeof *yf);
    double worst = 0, worst_f = 0;
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < N; i++) {
            x[i] = rep ? nasty() : i % 2 ? uniform(-40.0, 40.0) : uniform(-745.0, 745.0);
            xf[i] = (float)x[i];
        }
        rmi_cpu_unary_f64(REMAT_OP_LOGISTIC, N, y, x);
        rmi_cpu_unary_f32(REMAT_OP_LOGISTIC, N, yf, xf);
        for (int i = 0; i < N; i++) {
            const double s = 1.0 / (1.0 + rmi_vm_f64(RMI_VM_EXP, -x[i], 0));
            const float sf = 1.0f / (1.0f + rmi_vm_f32(RMI_VM_EXP, -xf[i], 0));
            if (!same_f64(y[i], s) || !same_f32(yf[i], sf))
                fail_msg("logistic(%a): kernel %a / %a, scalar %a / %a", x[i], y[i], (double)yf[i], s, (double)sf);
            assert_false(isnan(y[i]) != isnan(x[i]) || isnan(yf[i]) != isnan(xf[i]));
            if (isnan(x[i]))
                continue;
            const long double w = 1.0L / (1.0L + expl(-(long double)x[i]));
            const long double wf = 1.0L / (1.0L + expl(-(long double)xf[i]));
            if (isinf(rmi_vm_f64(RMI_VM_EXP, -x[i], 0)))
                assert_true(y[i] == 0.0 && x[i] < -709.0);
            else {
                const double u = ulps(y[i], w, 0);
                worst = u > worst ? u : worst;
            }
            if (isinf(rmi_vm_f32(RMI_VM_EXP, -xf[i], 0)))
                assert_true(yf[i] == 0.0f && xf[i] < -88.0f);
            else {
                const double uf = ulps(yf[i], wf, 1);
                worst_f = uf > worst_f ? uf : worst_f;
            }
        }
    }
    printf("  logistic max error f64 %.3f ulp, f32 %.3f ulp\n", worst, worst_f);
    assert_true(worst <= 4.0 && worst_f <= 4.0);
    free(x), free(y), free(xf), free(yf);
}

/* erf_inv's reference: three Halley steps in long double from the result
 * (glibc's erfl and erfcl, 11 bits beyond double; erfc for y >= 0.5, where
 * erf(x) - y cancels) */
static long double erfinv_ref(double y)
{
    const long double a = fabsl((long double)y);
    long double x = fabsl((long double)rmi_vm_erfinv_f64(fabs(y)));
    for (int k = 0; k < 3; k++) {
        const long double f = a >= 0.5L ? (1.0L - a) - erfcl(x) : erfl(x) - a;
        const long double u = f * 0.88622692545275801364908374167057L * expl(x * x);
        x -= u / (1.0L + x * u);
    }
    return y < 0 ? -x : x;
}

/* erf_inv (vmath_erfinv.c) within its documented bound (2 ulp f64, 0.5 ulp
 * + 2^-28 f32) over the whole of (-1, 1): uniform, next to +-1 (1 - 10^-k,
 * the last double below 1), tiny and subnormal; erf of the result gives y
 * back; the kernels are the scalar function element by element; the edges
 * (+-1 -> +-inf, |y| > 1 and NaN -> NaN, signed zeros) */
static void test_vmath_erf_inv_accuracy_and_edges(void **st)
{
    (void)st;
    enum { N = 30011 };
    double *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    float *xf = xmalloc(N * sizeof *xf), *yf = xmalloc(N * sizeof *yf);
    for (int i = 0; i < N; i++) {
        const int k = i % 4;
        double v = k == 0   ? uniform(-1.0, 1.0)
                   : k == 1 ? 1.0 - pow(10.0, -uniform(0.3, 16.0))
                   : k == 2 ? uniform(-1.0, 1.0) * pow(10.0, -uniform(0.0, 310.0))
                            : uniform(0.45, 0.55);
        if (v >= 1.0)
            v = nextafter(1.0, 0.0);
        x[i] = (i & 16) ? -v : v, xf[i] = (float)x[i];
    }
    x[0] = nextafter(1.0, 0.0), x[1] = -nextafter(1.0, 0.0), xf[0] = nextafterf(1.0f, 0.0f), xf[1] = -xf[0];
    rmi_cpu_unary_f64(REMAT_OP_ERF_INV, N, y, x);
    rmi_cpu_unary_f32(REMAT_OP_ERF_INV, N, yf, xf);
    double worst = 0, worst_f = 0, back = 0;
    for (int i = 0; i < N; i++) {
        assert_true(same_f64(y[i], rmi_vm_erfinv_f64(x[i])) && same_f32(yf[i], rmi_vm_erfinv_f32(xf[i])));
        if (fabsf(xf[i]) >= 1.0f)
            continue;
        const double u = ulps(y[i], erfinv_ref(x[i]), 0), uf = ulps(yf[i], erfinv_ref(xf[i]), 1);
        worst = u > worst ? u : worst, worst_f = uf > worst_f ? uf : worst_f;
        if (fabs(x[i]) < 0.5 && fabs(x[i]) > 0x1p-1000) { /* the round trip, where erf is well conditioned
                                                            and y not subnormal */
            const double b = fabs((double)(erfl((long double)y[i]) - x[i])) / fabs(x[i]);
            back = b > back ? b : back;
        }
    }
    printf("  erf_inv max error f64 %.3f ulp, f32 %.3f ulp; |erf(erf_inv(y)) - y| / |y| <= %.2g\n", worst, worst_f,
           back);
    assert_true(worst <= 2.0 && worst_f <= 0.5 + 0x1p-28);
    assert_true(back <= 4 * DBL_EPSILON);
    const double e[8] = {1.0, -1.0, 1.5, -2.0, NAN, 0.0, -0.0, INFINITY};
    double o[8];
    float ef[8], of[8];
    rmi_cpu_unary_f64(REMAT_OP_ERF_INV, 8, o, e);
    for (int i = 0; i < 8; i++)
        ef[i] = (float)e[i];
    rmi_cpu_unary_f32(REMAT_OP_ERF_INV, 8, of, ef);
    assert_true(o[0] == INFINITY && o[1] == -INFINITY && of[0] == INFINITY && of[1] == -INFINITY);
    for (int i = 2; i < 5; i++)
        assert_true(isnan(o[i]) && isnan(of[i]));
    assert_true(isnan(o[7]) && isnan(of[7]));
    assert_true(o[5] == 0.0 && !signbit(o[5]) && o[6] == 0.0 && signbit(o[6]));
    assert_true(of[5] == 0.0f && !signbit(of[5]) && of[6] == 0.0f && signbit(of[6]));
    free(x), free(y), free(xf), free(yf);
}

/* The symbol compiled code imports resolves in the global scope (after
 * rmi_vm_export_symbols) to the function the scalar path calls. */
static void test_vmath_jit_symbols_resolve_to_the_scalar(void **st)
{
    (void)st;
    rmi_vm_export_symbols();
    for (int fn = 0; fn < RMI_VM_COUNT; fn++) {
        const char *dn = rmi_vm_scalar_name((rmi_vm_fn)fn, true), *fname = rmi_vm_scalar_name((rmi_vm_fn)fn, false);
        void *d = dlsym(RTLD_DEFAULT, dn), *f = dlsym(RTLD_DEFAULT, fname);
        if (!d || !f)
            fail_msg("%s or %s not in the global scope", dn, fname);
        for (int i = 0; i < 1000; i++) {
            const double x = fn == RMI_VM_POW || fn == RMI_VM_LOG ? fabs(nasty()) : nasty();
            double got;
            float gotf;
            if (fn == RMI_VM_POW) {
                double (*pd)(double, double);
                float (*pf)(float, float);
                *(void **)&pd = d, *(void **)&pf = f;
                got = pd(x, 1.7), gotf = pf((float)x, 1.7f);
            } else {
                double (*ud)(double);
                float (*uf)(float);
                *(void **)&ud = d, *(void **)&uf = f;
                got = ud(x), gotf = uf((float)x);
            }
            assert_true(same_f64(got, rmi_vm_f64((rmi_vm_fn)fn, x, 1.7)));
            assert_true(same_f32(gotf, rmi_vm_f32((rmi_vm_fn)fn, (float)x, 1.7f)));
        }
    }
    printf("  vectorised (AVX2 + FMA): %s; compiled code imports %s\n", rmi_vm_vectorised() ? "yes" : "no",
           rmi_vm_scalar_name(RMI_VM_SIN, true));
}

/* On a CPU with AVX-512F (and AVX2 + FMA) exp, tanh and erf map sixteen
 * floats or eight doubles a call, the others AVX2's eight or four; the
 * tests above hold those maps to the scalar's bits. */
static void test_vmath_avx512_maps_where_the_cpu_has_it(void **st)
{
    (void)st;
    const int vec = rmi_vm_vectorised();
#if defined(__x86_64__)
    const int wide = vec && __builtin_cpu_supports("avx512f");
#else
    const int wide = 0;
#endif
    for (int fn = 0; fn < RMI_VM_COUNT; fn++) {
        const int big = wide && (fn == RMI_VM_EXP || fn == RMI_VM_TANH || fn == RMI_VM_ERF);
        assert_int_equal(rmi_vm_map_width((rmi_vm_fn)fn, false), big ? 16 : vec ? 8 : 1);
        assert_int_equal(rmi_vm_map_width((rmi_vm_fn)fn, true), big ? 8 : vec ? 4 : 1);
    }
    printf("  AVX-512 maps (exp, tanh, erf): %s\n", wide ? "yes" : "no");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vmath_accuracy_within_one_ulp),
        cmocka_unit_test(test_vmath_map_equals_scalar_whatever_the_neighbours),
        cmocka_unit_test(test_vmath_kernels_are_the_map),
        cmocka_unit_test(test_vmath_logistic_is_the_exp_map),
        cmocka_unit_test(test_vmath_erf_inv_accuracy_and_edges),
        cmocka_unit_test(test_vmath_jit_symbols_resolve_to_the_scalar),
        cmocka_unit_test(test_vmath_avx512_maps_where_the_cpu_has_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
