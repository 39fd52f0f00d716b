/*
 * vmath_erfinv.c — erf_inv (lax.erf_inv), the one transcendental of the
 * table SLEEF does not have (vmath.h).
 *
 * Algorithm: a closed-form first guess refined by Halley steps on
 * f(x) = erf(x) - y in double, f32 computed in double and rounded once.
 *
 *   guess: Winitzki's formula (a = 0.147, relative error below 2e-3):
 *     L = log1p(-y^2), t = 2/(pi a) + L/2,
 *     x^2 = sqrt(t^2 - L/a) - t, written as (-L/a) / (sqrt(t^2 - L/a) + t)
 *     while t > 0, so that a tiny y keeps its digits (log1p, no cancellation);
 *   Halley: u = f / f' = (erf(x) - y) sqrt(pi)/2 exp(x^2),
 *     x -= u / (1 + x u); three steps (cubic: 2e-3 -> 1e-8 -> 1e-24).
 *     For y >= 0.5, f is taken as (1 - y) - erfc(x): 1 - y is exact there
 *     (Sterbenz) and erfc keeps the digits erf(x) - y would cancel, which
 *     near y = 1 are all of them.
 *   |y| < 2^-28: x = y sqrt(pi)/2 (the next term, pi y^3 / 12, is below
 *     2^-57 of it).
 *
 * Accuracy: f64 within 2 ulp of the exact value, f32 within 0.5 ulp + one
 * rounding of double's error (tests/test_cpu_kernels_vmath.c measures both
 * against a long double Halley refinement of the result, over the whole
 * range, tiny and next to +-1 included). The bound is set by the last step's
 * residual: erf's 1.0 ulp (erfc's 1.5 ulp in the tail) divided by f'.
 *
 * Bits: one scalar function per element, built from SLEEF's pure-C
 * functions without FMA (erf, erfc, exp, log1p: the same bits on every
 * machine) and IEEE arithmetic (the tree builds with -ffp-contract=off), so
 * an element's bits depend on its value only, on every path. Compiled lane
 * programs do not emit it (jit_gen.c declines a program holding erf_inv,
 * which then runs interpreted: the same bits, contract 2 by construction).
 *
 * Edges: erf_inv(+-1) = +-inf, |y| > 1 and NaN give NaN, +-0 give +-0.
 */
#include <math.h>

#include <sleef.h>

#include "backend/cpu/vmath.h"

#define SQRT_PI_2 0.88622692545275801364908374167057 /* sqrt(pi) / 2 */
#define WINITZKI_A 0.147

double rmi_vm_erfinv_f64(double y)
{
    if (isnan(y))
        return y;
    const double a = fabs(y);
    if (a > 1.0)
        return NAN;
    if (a == 1.0)
        return copysign(INFINITY, y);
    if (a < 0x1p-28)
        return y * SQRT_PI_2;
    const double L = Sleef_log1pd1_u10purec(-a * a);
    const double t = 2.0 / (M_PI * WINITZKI_A) + 0.5 * L, q = t * t - L / WINITZKI_A;
    const double x2 = t > 0 ? (-L / WINITZKI_A) / (sqrt(q) + t) : sqrt(q) - t;
    double x = sqrt(x2);
    for (int k = 0; k < 3; k++) {
        const double f = a >= 0.5 ? (1.0 - a) - Sleef_erfcd1_u15purec(x) : Sleef_erfd1_u10purec(x) - a;
        const double u = f * SQRT_PI_2 * Sleef_expd1_u10purec(x * x);
        x -= u / (1.0 + x * u);
    }
    return copysign(x, y);
}

float rmi_vm_erfinv_f32(float y) { return (float)rmi_vm_erfinv_f64((double)y); }

void rmi_vm_erfinv_map_f64(size_t n, double *out, const double *a)
{
    for (size_t i = 0; i < n; i++)
        out[i] = rmi_vm_erfinv_f64(a[i]);
}

void rmi_vm_erfinv_map_f32(size_t n, float *out, const float *a)
{
    for (size_t i = 0; i < n; i++)
        out[i] = rmi_vm_erfinv_f32(a[i]);
}
