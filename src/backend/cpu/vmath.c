/*
 * vmath.c — SLEEF's u10 transcendentals for the CPU backend (vmath.h).
 *
 * Why SLEEF and which functions: SLEEF's u10 functions are within 1.0 ulp
 * of the exact result and are built from one source for every instruction
 * set, so its AVX2 vector function and its pure-C FMA scalar function of the
 * same name compute the same operations in the same order and give the same
 * bits (tests/test_vmath.c checks every function on millions of samples).
 * The map runs the vector function over whole vectors and over a zero-padded
 * last vector, so the tail is no different from the body.
 *
 * Neighbours. An element's bits must depend on its value only: threads,
 * fusion and the array length change which elements share a vector. SLEEF's
 * sin and cos choose their range reduction once per vector (the cheap
 * Cody-Waite reduction when every lane is below TRIGRANGEMAX2, a wider one
 * otherwise), so a large neighbour changes a small element's last bit. The
 * map therefore takes the vector only when every lane is below that bound
 * (15 for f64, 125 for f32 in SLEEF 3.5's sleefsimd*p.c), where the vector
 * takes the branch each lane alone takes; otherwise each lane goes through
 * the scalar function by itself. exp, log, tanh, erf and pow decide per lane
 * and take the vector always (the test mixes magnitudes across lanes).
 *
 * Other machines: without AVX2 and FMA every element goes through the
 * pure-C scalar without FMA (a different algorithm's rounding, so other bits
 * than an AVX2 machine's: contract 1 is per machine). AVX-512 is not used:
 * SLEEF's AVX-512 log returns a NaN of the other sign for negative inputs.
 */
#include "backend/cpu/vmath.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <sleef.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/assert.h"

#define FN_LIST(X) X(RMI_VM_EXP, exp) X(RMI_VM_LOG, log) X(RMI_VM_SIN, sin) X(RMI_VM_COS, cos) \
    X(RMI_VM_TANH, tanh) X(RMI_VM_ERF, erf)

/* sleef.h declares the FMA and AVX2 variants only where the whole file is
 * compiled for them (-mfma, -mavx2); this file is not (it runs on any
 * x86-64, choosing at run time), so it declares the ones it calls. */
#define DECLARE(f)                                                                                \
    double Sleef_##f##d1_u10purecfma(double);                                                     \
    float Sleef_##f##f1_u10purecfma(float);
DECLARE(exp) DECLARE(log) DECLARE(sin) DECLARE(cos) DECLARE(tanh) DECLARE(erf)
#undef DECLARE
double Sleef_powd1_u10purecfma(double, double);
float Sleef_powf1_u10purecfma(float, float);
#if defined(__x86_64__)
/* code compiled for AVX2 and FMA (the file is not: see rmi_vm_vectorised);
 * on the declarations too, so that clang knows the vector arguments' ABI */
#define AVX2 __attribute__((target("avx2,fma")))
#define DECLARE(f)                                                                                \
    AVX2 __m256d Sleef_##f##d4_u10avx2(__m256d);                                                  \
    AVX2 __m256 Sleef_##f##f8_u10avx2(__m256);
DECLARE(exp) DECLARE(log) DECLARE(sin) DECLARE(cos) DECLARE(tanh) DECLARE(erf)
#undef DECLARE
AVX2 __m256d Sleef_powd4_u10avx2(__m256d, __m256d);
AVX2 __m256 Sleef_powf8_u10avx2(__m256, __m256);
#endif

typedef double (*sd1)(double);
typedef float (*sf1)(float);

/* [0]: pure C, [1]: pure C with FMA (the AVX2 vectors' twin). The casts
 * drop sleef.h's __attribute__((const)), which clang reads into the type. */
#define SCALAR_D(E, f) [E] = {(sd1)Sleef_##f##d1_u10purec, (sd1)Sleef_##f##d1_u10purecfma},
#define SCALAR_F(E, f) [E] = {(sf1)Sleef_##f##f1_u10purec, (sf1)Sleef_##f##f1_u10purecfma},
static const sd1 scalar_d[RMI_VM_COUNT][2] = {FN_LIST(SCALAR_D)};
static const sf1 scalar_f[RMI_VM_COUNT][2] = {FN_LIST(SCALAR_F)};
typedef double (*sd2)(double, double);
typedef float (*sf2)(float, float);
static const sd2 pow_d[2] = {(sd2)Sleef_powd1_u10purec, (sd2)Sleef_powd1_u10purecfma};
static const sf2 pow_f[2] = {(sf2)Sleef_powf1_u10purec, (sf2)Sleef_powf1_u10purecfma};

#define NAME_D(E, f) [E] = {"Sleef_" #f "d1_u10purec", "Sleef_" #f "d1_u10purecfma"},
#define NAME_F(E, f) [E] = {"Sleef_" #f "f1_u10purec", "Sleef_" #f "f1_u10purecfma"},
static const char *const names_d[RMI_VM_COUNT][2] = {FN_LIST(NAME_D)[RMI_VM_POW] = {"Sleef_powd1_u10purec",
                                                                                   "Sleef_powd1_u10purecfma"}};
static const char *const names_f[RMI_VM_COUNT][2] = {FN_LIST(NAME_F)[RMI_VM_POW] = {"Sleef_powf1_u10purec",
                                                                                   "Sleef_powf1_u10purecfma"}};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int use_fma; /* index into the tables: the CPU has AVX2 and FMA */

static void pick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    use_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
}

static inline int fma_idx(void)
{
    pthread_once(&once, pick);
    return use_fma;
}

bool rmi_vm_vectorised(void) { return fma_idx() == 1; }

const char *rmi_vm_scalar_name(rmi_vm_fn fn, bool f64)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
    return (f64 ? names_d : names_f)[fn][fma_idx()];
}

double rmi_vm_f64(rmi_vm_fn fn, double x, double p)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
    return fn == RMI_VM_POW ? pow_d[fma_idx()](x, p) : scalar_d[fn][fma_idx()](x);
}

float rmi_vm_f32(rmi_vm_fn fn, float x, float p)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
    return fn == RMI_VM_POW ? pow_f[fma_idx()](x, p) : scalar_f[fn][fma_idx()](x);
}

static void map_scalar_f64(rmi_vm_fn fn, size_t n, double *out, const double *a, double p)
{
    for (size_t i = 0; i < n; i++)
        out[i] = rmi_vm_f64(fn, a[i], p);
}

static void map_scalar_f32(rmi_vm_fn fn, size_t n, float *out, const float *a, float p)
{
    for (size_t i = 0; i < n; i++)
        out[i] = rmi_vm_f32(fn, a[i], p);
}

#if defined(__x86_64__)
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

#define DEFINE_BOTH(f, TRIG)                                                                      \
    DEFINE_ONE_D(map_##f##_d, Sleef_##f##d4_u10avx2(x))                                           \
    DEFINE_MAP_D(map_##f##_d, Sleef_##f##d4_u10avx2(x), TRIG)                                     \
    DEFINE_ONE_F(map_##f##_f, Sleef_##f##f8_u10avx2(x))                                           \
    DEFINE_MAP_F(map_##f##_f, Sleef_##f##f8_u10avx2(x), TRIG)

DEFINE_BOTH(exp, 0)
DEFINE_BOTH(log, 0)
DEFINE_BOTH(sin, 1)
DEFINE_BOTH(cos, 1)
DEFINE_BOTH(tanh, 0)
DEFINE_BOTH(erf, 0)
DEFINE_ONE_D(map_pow_d, Sleef_powd4_u10avx2(x, pv))
DEFINE_MAP_D(map_pow_d, Sleef_powd4_u10avx2(x, pv), 0)
DEFINE_ONE_F(map_pow_f, Sleef_powf8_u10avx2(x, pv))
DEFINE_MAP_F(map_pow_f, Sleef_powf8_u10avx2(x, pv), 0)

typedef void (*map_d)(size_t, double *, const double *, double);
typedef void (*map_f)(size_t, float *, const float *, float);
#define VEC_D(E, f) [E] = map_##f##_d,
#define VEC_F(E, f) [E] = map_##f##_f,
static const map_d vec_d[RMI_VM_COUNT] = {FN_LIST(VEC_D)[RMI_VM_POW] = map_pow_d};
static const map_f vec_f[RMI_VM_COUNT] = {FN_LIST(VEC_F)[RMI_VM_POW] = map_pow_f};
#endif

void rmi_vm_map_f64(rmi_vm_fn fn, size_t n, double *out, const double *a, double p)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
#if defined(__x86_64__)
    if (fma_idx()) {
        vec_d[fn](n, out, a, p);
        return;
    }
#endif
    map_scalar_f64(fn, n, out, a, p);
}

void rmi_vm_map_f32(rmi_vm_fn fn, size_t n, float *out, const float *a, float p)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
#if defined(__x86_64__)
    if (fma_idx()) {
        vec_f[fn](n, out, a, p);
        return;
    }
#endif
    map_scalar_f32(fn, n, out, a, p);
}

static void export_once(void)
{
    Dl_info info;
    if (dladdr((void *)Sleef_sind1_u10purec, &info) && info.dli_fname)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

void rmi_vm_export_symbols(void)
{
    static pthread_once_t exported = PTHREAD_ONCE_INIT;
    pthread_once(&exported, export_once);
}
