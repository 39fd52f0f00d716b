/*
 * vmath.c — SLEEF's u10 transcendentals for the CPU backend (vmath.h).
 *
 * Why SLEEF and which functions: SLEEF's u10 functions are within 1.0 ulp
 * of the exact result (f32 tanh: u35, 3.5 ulp, vmath.h says why) and are
 * built from one source for every instruction set, so its AVX2 vector
 * function and its pure-C FMA scalar function of the same name compute the same operations in the same order and give the same
 * bits (tests/test_cpu_kernels_vmath.c checks every function on millions of samples).
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
 * than an AVX2 machine's: contract 1 is per machine). With AVX-512F as well,
 * exp, tanh and erf map sixteen floats (eight doubles) a call
 * (vmath_avx512.c: the same bits as the FMA scalar, 1.6x the AVX2 speed for
 * tanh); the others stay on AVX2: SLEEF's AVX-512 log returns a NaN of the
 * other sign for negative inputs.
 */
#include "backend/cpu/vmath.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <sleef.h>

#include "core/assert.h"

#define FN_LIST RMI_VM_FN_LIST

/* sleef.h declares the FMA variants only where the whole file is
 * compiled for them (-mfma); this file is not (it runs on any
 * x86-64, choosing at run time), so it declares the ones it calls. */
#define DECLARE(f)                                                                                \
    double Sleef_##f##d1_u10purecfma(double);                                                     \
    float Sleef_##f##f1_u10purecfma(float);
DECLARE(exp) DECLARE(log) DECLARE(sin) DECLARE(cos) DECLARE(tanh) DECLARE(erf) DECLARE(log1p) DECLARE(expm1)
#undef DECLARE
float Sleef_tanhf1_u35purecfma(float);
double Sleef_powd1_u10purecfma(double, double);
float Sleef_powf1_u10purecfma(float, float);

typedef double (*sd1)(double);
typedef float (*sf1)(float);

/* [0]: pure C, [1]: pure C with FMA (the AVX2 vectors' twin). The casts
 * drop sleef.h's __attribute__((const)), which clang reads into the type. */
#define SCALAR_D(E, f) [E] = {(sd1)Sleef_##f##d1_u10purec, (sd1)Sleef_##f##d1_u10purecfma},
/* f32: as FN_LIST with each function's accuracy (vmath.h: tanh u35) */
#define F32_LIST(X) X(RMI_VM_EXP, exp, u10) X(RMI_VM_LOG, log, u10) X(RMI_VM_SIN, sin, u10) X(RMI_VM_COS, cos, u10) \
    X(RMI_VM_TANH, tanh, u35) X(RMI_VM_ERF, erf, u10) X(RMI_VM_LOG1P, log1p, u10) X(RMI_VM_EXPM1, expm1, u10)
#define SCALAR_F(E, f, U) [E] = {(sf1)Sleef_##f##f1_##U##purec, (sf1)Sleef_##f##f1_##U##purecfma},
static const sd1 scalar_d[RMI_VM_COUNT][2] = {FN_LIST(SCALAR_D)};
static const sf1 scalar_f[RMI_VM_COUNT][2] = {F32_LIST(SCALAR_F)};
typedef double (*sd2)(double, double);
typedef float (*sf2)(float, float);
static const sd2 pow_d[2] = {(sd2)Sleef_powd1_u10purec, (sd2)Sleef_powd1_u10purecfma};
static const sf2 pow_f[2] = {(sf2)Sleef_powf1_u10purec, (sf2)Sleef_powf1_u10purecfma};

#define NAME_D(E, f) [E] = {"Sleef_" #f "d1_u10purec", "Sleef_" #f "d1_u10purecfma"},
#define NAME_F(E, f, U) [E] = {"Sleef_" #f "f1_" #U "purec", "Sleef_" #f "f1_" #U "purecfma"},
static const char *const names_d[RMI_VM_COUNT][2] = {FN_LIST(NAME_D)[RMI_VM_POW] = {"Sleef_powd1_u10purec",
                                                                                   "Sleef_powd1_u10purecfma"}};
static const char *const names_f[RMI_VM_COUNT][2] = {F32_LIST(NAME_F)[RMI_VM_POW] = {"Sleef_powf1_u10purec",
                                                                                   "Sleef_powf1_u10purecfma"}};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int use_fma; /* index into the tables: the CPU has AVX2 and FMA */
static int use_avx512; /* and AVX-512F (the OS saving its registers: cpu_supports checks) */

static void pick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    use_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    use_avx512 = use_fma && __builtin_cpu_supports("avx512f");
#endif
}

static inline int fma_idx(void)
{
    pthread_once(&once, pick);
    return use_fma;
}

bool rmi_vm_vectorised(void) { return fma_idx() == 1; }

static bool on_avx512(rmi_vm_fn fn)
{
#if defined(__x86_64__)
    return fma_idx() && use_avx512 && rmi_vm_avx512_has(fn);
#else
    (void)fn;
    return false;
#endif
}

int rmi_vm_map_width(rmi_vm_fn fn, bool f64)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
    const int w = on_avx512(fn) ? 64 : fma_idx() ? 32 : 0;
    return w ? w / (f64 ? 8 : 4) : 1;
}

const char *rmi_vm_scalar_name(rmi_vm_fn fn, bool f64)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
    return (f64 ? names_d : names_f)[fn][fma_idx()];
}

double rmi_vm_ulp_bound(rmi_vm_fn fn, bool f64)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
    return !f64 && fn == RMI_VM_TANH ? 3.5 : 1.0;
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

/* the scalar function chosen once per array, not per element */
static void map_scalar_f64(rmi_vm_fn fn, size_t n, double *out, const double *a, double p)
{
    const int k = fma_idx();
    if (fn == RMI_VM_POW) {
        for (size_t i = 0; i < n; i++)
            out[i] = pow_d[k](a[i], p);
        return;
    }
    const sd1 f = scalar_d[fn][k];
    for (size_t i = 0; i < n; i++)
        out[i] = f(a[i]);
}

static void map_scalar_f32(rmi_vm_fn fn, size_t n, float *out, const float *a, float p)
{
    const int k = fma_idx();
    if (fn == RMI_VM_POW) {
        for (size_t i = 0; i < n; i++)
            out[i] = pow_f[k](a[i], p);
        return;
    }
    const sf1 f = scalar_f[fn][k];
    for (size_t i = 0; i < n; i++)
        out[i] = f(a[i]);
}


void rmi_vm_map_f64(rmi_vm_fn fn, size_t n, double *out, const double *a, double p)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
#if defined(__x86_64__)
    if (on_avx512(fn)) {
        rmi_vm_avx512_map_f64(fn, n, out, a);
        return;
    }
    if (fma_idx()) {
        rmi_vm_avx2_map_f64(fn, n, out, a, p);
        return;
    }
#endif
    map_scalar_f64(fn, n, out, a, p);
}

void rmi_vm_map_f32(rmi_vm_fn fn, size_t n, float *out, const float *a, float p)
{
    REMAT_ASSERT((unsigned)fn < RMI_VM_COUNT);
#if defined(__x86_64__)
    if (on_avx512(fn)) {
        rmi_vm_avx512_map_f32(fn, n, out, a);
        return;
    }
    if (fma_idx()) {
        rmi_vm_avx2_map_f32(fn, n, out, a, p);
        return;
    }
#endif
    map_scalar_f32(fn, n, out, a, p);
}

void rmi_vm_map_any(int fn, int f64, long long n, void *out, const void *a, double p)
{
    REMAT_ASSERT((unsigned)fn <= RMI_VM_COUNT && n >= 0);
    if (fn == RMI_VM_COUNT) {
        if (f64)
            rmi_vm_erfinv_map_f64((size_t)n, out, a);
        else
            rmi_vm_erfinv_map_f32((size_t)n, out, a);
    } else if (f64) {
        rmi_vm_map_f64((rmi_vm_fn)fn, (size_t)n, out, a, p);
    } else {
        rmi_vm_map_f32((rmi_vm_fn)fn, (size_t)n, out, a, (float)p);
    }
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
