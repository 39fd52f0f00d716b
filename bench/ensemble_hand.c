/* ensemble_hand.c — see ensemble_hand.h. */
#include "ensemble_hand.h"

/* one Euler step of every lane: states and sensitivities in place */
static inline void step(int64_t m, double h, const double *restrict k1, const double *restrict k2, double *restrict a,
                        double *restrict b, double *restrict c, double *restrict a1, double *restrict b1,
                        double *restrict c1, double *restrict a2, double *restrict b2, double *restrict c2)
{
    for (int64_t i = 0; i < m; i++) {
        double p = k1[i], q = k2[i], A = a[i], B = b[i];
        double r1 = p * A, r2 = q * B;
        /* d r1 / dk1 = A + p a1, d r1 / dk2 = p a2; d r2 / dk1 = q b1, d r2 / dk2 = B + q b2 */
        double r1_1 = A + p * a1[i], r1_2 = p * a2[i], r2_1 = q * b1[i], r2_2 = B + q * b2[i];
        a[i] = A + h * -r1;
        b[i] = B + h * (r1 - r2);
        c[i] = c[i] + h * r2;
        a1[i] += h * -r1_1;
        b1[i] += h * (r1_1 - r2_1);
        c1[i] += h * r2_1;
        a2[i] += h * -r1_2;
        b2[i] += h * (r1_2 - r2_2);
        c2[i] += h * r2_2;
    }
}

/* AVX2 where the CPU has it, as remat's compiled loops take it
 * (-march=x86-64-v3). gcc only: clang 14 names the ifunc of a clone that its
 * own file does not call "<name>.ifunc", which no other file finds (the
 * benchmarks' figures are gcc builds' anyway). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void ensemble_hand_euler(int64_t m, int64_t steps, double h, const double y0[3], const double *k1, const double *k2,
                         double *out, double *jac, double *work)
{
    double *a = work, *b = a + m, *c = b + m;
    double *a1 = c + m, *b1 = a1 + m, *c1 = b1 + m; /* d/dk1 */
    double *a2 = c1 + m, *b2 = a2 + m, *c2 = b2 + m; /* d/dk2 */
    for (int64_t i = 0; i < m; i++) {
        a[i] = y0[0], b[i] = y0[1], c[i] = y0[2];
        a1[i] = b1[i] = c1[i] = a2[i] = b2[i] = c2[i] = 0;
    }
    for (int64_t n = 0; n < steps; n++)
        step(m, h, k1, k2, a, b, c, a1, b1, c1, a2, b2, c2);
    for (int64_t i = 0; i < m; i++) {
        out[3 * i] = a[i], out[3 * i + 1] = b[i], out[3 * i + 2] = c[i];
        double *J = jac + 6 * i;
        J[0] = a1[i], J[1] = a2[i], J[2] = b1[i], J[3] = b2[i], J[4] = c1[i], J[5] = c2[i];
    }
}
