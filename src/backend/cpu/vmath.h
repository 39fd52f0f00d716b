/*
 * vmath.h — the transcendental functions of the CPU backend: SLEEF's u10
 * functions (at most 1.0 ulp from the exact result), except f32 tanh, which
 * is SLEEF's u35 (at most 3.5 ulp; measured 2.3): gelu's tanh, whose u10
 * form (double-float arithmetic) mapped 3.1x slower and was a tenth of a
 * checkpointed FFN step; one algorithm per machine for every path.
 *
 * The interpreted kernels (elementwise.c, fused.c) map whole arrays through
 * rmi_vm_map_*; compiled lane programs (jit_gen.c) call the scalar SLEEF
 * function rmi_vm_scalar_name names. Both are the same SLEEF algorithm, built
 * for the same instruction set (AVX2 + FMA vectors and the pure-C FMA scalar
 * where the CPU has both, the pure-C non-FMA scalar everywhere else), so an
 * element's bits depend on its value only: not on the path, the array length,
 * the thread's range or the element's neighbours (vmath.c, "neighbours";
 * tests/test_cpu_kernels_vmath.c checks all of it).
 */
#ifndef REMAT_CPU_VMATH_H
#define REMAT_CPU_VMATH_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { RMI_VM_EXP, RMI_VM_LOG, RMI_VM_SIN, RMI_VM_COS, RMI_VM_TANH, RMI_VM_ERF, RMI_VM_LOG1P, RMI_VM_EXPM1, RMI_VM_POW,
               RMI_VM_COUNT } rmi_vm_fn;

/* the one-argument functions as X(enum, SLEEF name) (pow apart) */
#define RMI_VM_FN_LIST(X) X(RMI_VM_EXP, exp) X(RMI_VM_LOG, log) X(RMI_VM_SIN, sin) X(RMI_VM_COS, cos) \
    X(RMI_VM_TANH, tanh) X(RMI_VM_ERF, erf) X(RMI_VM_LOG1P, log1p) X(RMI_VM_EXPM1, expm1)

/* The documented bound of fn in ulp: 1.0, f32 tanh 3.5 */
double rmi_vm_ulp_bound(rmi_vm_fn fn, bool f64);

/* out[i] = fn(a[i]) (POW: pow(a[i], p)); out may equal a, no other overlap */
void rmi_vm_map_f64(rmi_vm_fn fn, size_t n, double *out, const double *a, double p);
void rmi_vm_map_f32(rmi_vm_fn fn, size_t n, float *out, const float *a, float p);

/* one element through the scalar function (the bits of rmi_vm_map_*) */
double rmi_vm_f64(rmi_vm_fn fn, double x, double p);
float rmi_vm_f32(rmi_vm_fn fn, float x, float p);

/* erf_inv (vmath_erfinv.c; SLEEF has none): one scalar function per element
 * on every path, within 2 ulp in f64 and 0.5 ulp + 2^-28 in f32 */
double rmi_vm_erfinv_f64(double y);
float rmi_vm_erfinv_f32(float y);
void rmi_vm_erfinv_map_f64(size_t n, double *out, const double *a);
void rmi_vm_erfinv_map_f32(size_t n, float *out, const float *a);

/* The maps for compiled code (jit_gen.c calls it through a pointer, a block
 * of lanes at a time): out[i] = fn(a[i]) for i < n through rmi_vm_map_f64
 * (f64) or rmi_vm_map_f32 (p rounded to float), fn RMI_VM_COUNT meaning
 * erf_inv (rmi_vm_erfinv_map_*): the interpreted kernels' calls, so the
 * interpreter's bits. */
void rmi_vm_map_any(int fn, int f64, long long n, void *out, const void *a, double p);

/* The symbol of the scalar function (double or float x[, p]) for compiled code
 * to import, e.g. "Sleef_sind1_u10purecfma". */
const char *rmi_vm_scalar_name(rmi_vm_fn fn, bool f64);

/* Whether the map uses SLEEF's vector functions (AVX2, and AVX-512 for
 * exp, tanh and erf where the CPU has it) on this machine. */
bool rmi_vm_vectorised(void);

/* Makes the SLEEF symbols visible to code loaded later with dlopen (compiled
 * lane programs resolve their imports in the global scope); idempotent. */
void rmi_vm_export_symbols(void);

/* vmath_avx2.c (x86-64, built for AVX2 and FMA): rmi_vm_map_* on a CPU
 * that has both; call only when rmi_vm_vectorised() */
void rmi_vm_avx2_map_f64(rmi_vm_fn fn, size_t n, double *out, const double *a, double p);
void rmi_vm_avx2_map_f32(rmi_vm_fn fn, size_t n, float *out, const float *a, float p);

/* vmath_avx512.c (x86-64, built for AVX-512F and FMA): the maps of the
 * functions it has (exp, tanh, erf) on a CPU with both; the same bits */
bool rmi_vm_avx512_has(rmi_vm_fn fn);
void rmi_vm_avx512_map_f64(rmi_vm_fn fn, size_t n, double *out, const double *a);
void rmi_vm_avx512_map_f32(rmi_vm_fn fn, size_t n, float *out, const float *a);

/* The map's vector width for fn in elements of f64 or f32: 1 (scalar), the
 * AVX2 width (4 / 8) or the AVX-512 width (8 / 16). */
int rmi_vm_map_width(rmi_vm_fn fn, bool f64);

#endif
