/*
 * vmath_avx2.c — the AVX2 half of vmath.c: SLEEF's u10 vector functions over
 * arrays (rmi_vm_avx2_map_*), for CPUs with AVX2 and FMA only (vmath.c
 * decides at run time).
 *
 * Its own translation unit, compiled with -mavx2 -mfma (meson.build): the
 * calling convention of 256-bit vector arguments is fixed per translation
 * unit by clang, so a target("avx2") function in a file built for plain
 * x86-64 passed SLEEF's __m256d arguments in memory while SLEEF reads them
 * from ymm registers. One-argument functions worked by accident (the
 * argument was still in ymm0); pow's exponent was garbage. Built for AVX2,
 * sleef.h declares the vector functions itself and both compilers agree.
 *
 * Neighbours: see vmath.c.
 */
#include "backend/cpu/vmath.h"

#include <immintrin.h>
#include <string.h>

#include <sleef.h>

#define AVX2 /* the whole file is built for AVX2 and FMA */

/* the bound below which every lane takes SLEEF's first trigonometric reduction */
#define TRIG_D 15.0
#define TRIG_F 125.0f

/* One vector function over n elements: whole vectors, then the padded tail.
 * TRIG: lanes at or above the bound each go alone (see "Neighbours"). */
#define DEFINE_MAP_D(NAME, EXPR, TRIG)                                                                             \
    AVX2 static void NAME(size_t n, double *out, const double *a, double p)                                        \
    {                                                                                                              \
        const __m256d pv = _mm256_set1_pd(p), bound = _mm256_set1_pd(TRIG_D);                                      \
        const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));                     \
        (void)pv, (void)bound, (void)absmask;                                                                      \
        for (size_t i = 0; i < n; i += 4) {                                                                        \
            double t[4] = {0};                                                                                     \
            const size_t k = n - i < 4 ? n - i : 4;                                                                \
            if (k < 4)                                                                                             \
                memcpy(t, a + i, k * sizeof *t);                                                                   \
            const __m256d x = _mm256_loadu_pd(k < 4 ? t : a + i);                                                  \
            if (TRIG && _mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(x, absmask), bound, _CMP_LT_OQ)) != 0xf) {  \
                _mm256_storeu_pd(t, x);                                                                            \
                for (size_t j = 0; j < k; j++)                                                                     \
                    out[i + j] = map_one_d(NAME, t[j], p);                                                         \
                continue;                                                                                          \
            }                                                                                                      \
            if (k == 4) {                                                                                          \
                _mm256_storeu_pd(out + i, EXPR);                                                                   \
                continue;                                                                                          \
            }                                                                                                      \
            _mm256_storeu_pd(t, EXPR);                                                                             \
            memcpy(out + i, t, k * sizeof *t);                                                                     \
        }                                                                                                          \
    }

#define DEFINE_MAP_F(NAME, EXPR, TRIG)                                                                              \
    AVX2 static void NAME(size_t n, float *out, const float *a, float p)                                            \
    {                                                                                                               \
        const __m256 pv = _mm256_set1_ps(p), bound = _mm256_set1_ps(TRIG_F);                                        \
        const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));                                  \
        (void)pv, (void)bound, (void)absmask;                                                                       \
        for (size_t i = 0; i < n; i += 8) {                                                                         \
            float t[8] = {0};                                                                                       \
            const size_t k = n - i < 8 ? n - i : 8;                                                                 \
            if (k < 8)                                                                                              \
                memcpy(t, a + i, k * sizeof *t);                                                                    \
            const __m256 x = _mm256_loadu_ps(k < 8 ? t : a + i);                                                    \
            if (TRIG && _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(x, absmask), bound, _CMP_LT_OQ)) != 0xff) {  \
                _mm256_storeu_ps(t, x);                                                                             \
                for (size_t j = 0; j < k; j++)                                                                      \
                    out[i + j] = map_one_f(NAME, t[j], p);                                                          \
                continue;                                                                                           \
            }                                                                                                       \
            if (k == 8) {                                                                                           \
                _mm256_storeu_ps(out + i, EXPR);                                                                    \
                continue;                                                                                           \
            }                                                                                                       \
            _mm256_storeu_ps(t, EXPR);                                                                              \
            memcpy(out + i, t, k * sizeof *t);                                                                      \
        }                                                                                                           \
    }

/* a lane by itself: the vector function on that value in every lane (the
 * scalar function's bits; the test checks that too) */
#define map_one_d(NAME, v, p) NAME##_one(v, p)
#define map_one_f(NAME, v, p) NAME##_one(v, p)
#define DEFINE_ONE_D(NAME, EXPR)                                                                  \
    AVX2 static double NAME##_one(double v, double p)                                             \
    {                                                                                             \
        const __m256d x = _mm256_set1_pd(v), pv = _mm256_set1_pd(p);                             \
        (void)pv;                                                                                 \
        return _mm256_cvtsd_f64(EXPR);                                                            \
    }
#define DEFINE_ONE_F(NAME, EXPR)                                                                  \
    AVX2 static float NAME##_one(float v, float p)                                                \
    {                                                                                             \
        const __m256 x = _mm256_set1_ps(v), pv = _mm256_set1_ps(p);                               \
        (void)pv;                                                                                 \
        return _mm256_cvtss_f32(EXPR);                                                            \
    }

/* UF: the f32 variant's accuracy, u10 but for tanh (vmath.h, RMI_VM_F32_U) */
#define DEFINE_BOTH_U(f, TRIG, UF)                                                                \
    DEFINE_ONE_D(map_##f##_d, Sleef_##f##d4_u10avx2(x))                                           \
    DEFINE_MAP_D(map_##f##_d, Sleef_##f##d4_u10avx2(x), TRIG)                                     \
    DEFINE_ONE_F(map_##f##_f, Sleef_##f##f8_##UF##avx2(x))                                        \
    DEFINE_MAP_F(map_##f##_f, Sleef_##f##f8_##UF##avx2(x), TRIG)
#define DEFINE_BOTH(f, TRIG) DEFINE_BOTH_U(f, TRIG, u10)

DEFINE_BOTH(exp, 0)
DEFINE_BOTH(log, 0)
DEFINE_BOTH(sin, 1)
DEFINE_BOTH(cos, 1)
DEFINE_BOTH_U(tanh, 0, u35)
DEFINE_BOTH(erf, 0)
DEFINE_BOTH(log1p, 0)
DEFINE_BOTH(expm1, 0)
DEFINE_ONE_D(map_pow_d, Sleef_powd4_u10avx2(x, pv))
DEFINE_MAP_D(map_pow_d, Sleef_powd4_u10avx2(x, pv), 0)
DEFINE_ONE_F(map_pow_f, Sleef_powf8_u10avx2(x, pv))
DEFINE_MAP_F(map_pow_f, Sleef_powf8_u10avx2(x, pv), 0)

typedef void (*map_d)(size_t, double *, const double *, double);
typedef void (*map_f)(size_t, float *, const float *, float);
#define VEC_D(E, f) [E] = map_##f##_d,
#define VEC_F(E, f) [E] = map_##f##_f,
static const map_d vec_d[RMI_VM_COUNT] = {RMI_VM_FN_LIST(VEC_D)[RMI_VM_POW] = map_pow_d};
static const map_f vec_f[RMI_VM_COUNT] = {RMI_VM_FN_LIST(VEC_F)[RMI_VM_POW] = map_pow_f};

void rmi_vm_avx2_map_f64(rmi_vm_fn fn, size_t n, double *out, const double *a, double p) { vec_d[fn](n, out, a, p); }

void rmi_vm_avx2_map_f32(rmi_vm_fn fn, size_t n, float *out, const float *a, float p) { vec_f[fn](n, out, a, p); }
