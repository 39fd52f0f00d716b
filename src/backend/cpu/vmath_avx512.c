/*
 * vmath_avx512.c — the AVX-512 maps of vmath.c for exp, tanh and erf:
 * SLEEF's u10 functions sixteen floats or eight doubles a call, on CPUs
 * with AVX-512F and FMA (vmath.c decides at run time). On a Sapphire Rapids
 * core tanhf16 maps an array 1.6x faster than tanhf8 (the FFN benchmark's
 * gelu, recomputed under the remat policies, is its largest elementwise
 * cost).
 *
 * Only these three: SLEEF builds them from the same source as the AVX2 and
 * pure-C FMA functions, and on this machine their bits equal the pure-C FMA
 * scalar's (the twin compiled code calls; tests/test_cpu_kernels_vmath.c
 * checks map against scalar on every run, and a sweep of every seventh f32
 * pattern found no difference). log is left out: SLEEF's AVX-512 log
 * returns a NaN of the other sign for negative inputs; sin and cos choose
 * their range reduction per vector with bounds not checked for this width,
 * and pow is not measured: they stay on AVX2.
 *
 * Its own translation unit built with -mavx512f -mfma, for the reason
 * vmath_avx2.c gives (vector arguments' calling convention). The tail is a
 * zero-padded vector (a masked load), as in the AVX2 maps, and every lane
 * decides its own branch in these functions, so an element's bits depend on
 * its value only.
 */
#include "backend/cpu/vmath.h"

#include <immintrin.h>

#include <sleef.h>

#include "core/assert.h"

#define DEFINE_MAP(f, UF)                                                                                  \
    static void map_##f##_d(size_t n, double *out, const double *a)                                      \
    {                                                                                                    \
        size_t i = 0;                                                                                    \
        for (; i + 8 <= n; i += 8)                                                                       \
            _mm512_storeu_pd(out + i, Sleef_##f##d8_u10avx512f(_mm512_loadu_pd(a + i)));                 \
        if (i < n) {                                                                                     \
            const __mmask8 m = (__mmask8)((1u << (n - i)) - 1u);                                         \
            _mm512_mask_storeu_pd(out + i, m, Sleef_##f##d8_u10avx512f(_mm512_maskz_loadu_pd(m, a + i))); \
        }                                                                                                \
    }                                                                                                    \
    static void map_##f##_f(size_t n, float *out, const float *a)                                        \
    {                                                                                                    \
        size_t i = 0;                                                                                    \
        for (; i + 16 <= n; i += 16)                                                                     \
            _mm512_storeu_ps(out + i, Sleef_##f##f16_##UF##avx512f(_mm512_loadu_ps(a + i)));             \
        if (i < n) {                                                                                     \
            const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);                                       \
            _mm512_mask_storeu_ps(out + i, m, Sleef_##f##f16_##UF##avx512f(_mm512_maskz_loadu_ps(m, a + i))); \
        }                                                                                                \
    }

DEFINE_MAP(exp, u10)
DEFINE_MAP(tanh, u35) /* vmath.h: f32 tanh is SLEEF's u35 */
DEFINE_MAP(erf, u10)

bool rmi_vm_avx512_has(rmi_vm_fn fn) { return fn == RMI_VM_EXP || fn == RMI_VM_TANH || fn == RMI_VM_ERF; }

void rmi_vm_avx512_map_f64(rmi_vm_fn fn, size_t n, double *out, const double *a)
{
    switch (fn) {
    case RMI_VM_EXP: map_exp_d(n, out, a); return;
    case RMI_VM_TANH: map_tanh_d(n, out, a); return;
    case RMI_VM_ERF: map_erf_d(n, out, a); return;
    default: REMAT_ASSERT(!"rmi_vm_avx512_map_f64: not an AVX-512 function");
    }
}

void rmi_vm_avx512_map_f32(rmi_vm_fn fn, size_t n, float *out, const float *a)
{
    switch (fn) {
    case RMI_VM_EXP: map_exp_f(n, out, a); return;
    case RMI_VM_TANH: map_tanh_f(n, out, a); return;
    case RMI_VM_ERF: map_erf_f(n, out, a); return;
    default: REMAT_ASSERT(!"rmi_vm_avx512_map_f32: not an AVX-512 function");
    }
}
