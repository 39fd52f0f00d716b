/*
 * elementwise.cu — unary, binary, compare, select, powers, convert and fused
 * groups, f32 and f64; the CPU references are src/backend/cpu/elementwise.c
 * and fused.c, checked against in tests/test_cuda_kernels.c.
 *
 * A splat operand (one element, scalar_mask) is read with stride 0, so the
 * scalar and array forms are one kernel. One thread per element in a grid-
 * stride loop: (n) -> (n).
 */
#include "cuda_util.cuh"
#include "ew_math.cuh"

template <typename T> __global__ void k_unary(int op, size_t n, T *out, const T *a)
{
    GRID_STRIDE(i, n) out[i] = ew_unary<T>(op, a[i]);
}

template <typename T> __global__ void k_binary(int op, size_t n, T *out, const T *a, size_t sa, const T *b, size_t sb)
{
    GRID_STRIDE(i, n) out[i] = ew_binary<T>(op, a[i * sa], b[i * sb]);
}

template <typename T>
__global__ void k_select(size_t n, T *out, const T *p, const T *t, size_t st, const T *f, size_t sf)
{
    GRID_STRIDE(i, n) out[i] = ew_select<T>(p[i], t[i * st], f[i * sf]);
}

template <typename T> __global__ void k_integer_pow(size_t n, T *out, const T *a, int k)
{
    GRID_STRIDE(i, n) out[i] = ew_integer_pow<T>(a[i], k);
}

template <typename T> __global__ void k_pow(size_t n, T *out, const T *a, T p)
{
    GRID_STRIDE(i, n) out[i] = m_pow(a[i], p);
}

template <typename O, typename I> __global__ void k_convert(size_t n, O *out, const I *in)
{
    GRID_STRIDE(i, n) out[i] = (O)in[i]; /* round to nearest, as the CPU's cast */
}

#define LAUNCH(kernel, n) kernel<<<rmi_cuda_blocks(n), REMAT_CUDA_BLOCK, 0, rmi_cuda_on(cs)>>>

extern "C" void rmi_cuda_unary(rmi_cuda_state *cs, int f64, int op, size_t n, void *out, const void *a)
{
    if (!n)
        return;
    if (f64)
        LAUNCH(k_unary<double>, n)(op, n, (double *)out, (const double *)a);
    else
        LAUNCH(k_unary<float>, n)(op, n, (float *)out, (const float *)a);
    CUDA_LAUNCHED("unary kernel");
}

extern "C" void rmi_cuda_binary(rmi_cuda_state *cs, int f64, int op, size_t n, void *out, const void *a, int a_scalar,
                                const void *b, int b_scalar)
{
    if (!n)
        return;
    const size_t sa = a_scalar ? 0 : 1, sb = b_scalar ? 0 : 1;
    if (f64)
        LAUNCH(k_binary<double>, n)(op, n, (double *)out, (const double *)a, sa, (const double *)b, sb);
    else
        LAUNCH(k_binary<float>, n)(op, n, (float *)out, (const float *)a, sa, (const float *)b, sb);
    CUDA_LAUNCHED("binary kernel");
}

extern "C" void rmi_cuda_select(rmi_cuda_state *cs, int f64, size_t n, void *out, const void *pred, const void *t,
                                int t_scalar, const void *f, int f_scalar)
{
    if (!n)
        return;
    const size_t st = t_scalar ? 0 : 1, sf = f_scalar ? 0 : 1;
    if (f64)
        LAUNCH(k_select<double>, n)(n, (double *)out, (const double *)pred, (const double *)t, st,
                                    (const double *)f, sf);
    else
        LAUNCH(k_select<float>, n)(n, (float *)out, (const float *)pred, (const float *)t, st, (const float *)f, sf);
    CUDA_LAUNCHED("select kernel");
}

extern "C" void rmi_cuda_integer_pow(rmi_cuda_state *cs, int f64, size_t n, void *out, const void *a, int k)
{
    if (!n)
        return;
    if (f64)
        LAUNCH(k_integer_pow<double>, n)(n, (double *)out, (const double *)a, k);
    else
        LAUNCH(k_integer_pow<float>, n)(n, (float *)out, (const float *)a, k);
    CUDA_LAUNCHED("integer_pow kernel");
}

extern "C" void rmi_cuda_pow(rmi_cuda_state *cs, int f64, size_t n, void *out, const void *a, double p)
{
    if (!n)
        return;
    if (f64)
        LAUNCH(k_pow<double>, n)(n, (double *)out, (const double *)a, p);
    else
        LAUNCH(k_pow<float>, n)(n, (float *)out, (const float *)a, (float)p);
    CUDA_LAUNCHED("pow kernel");
}

extern "C" void rmi_cuda_convert(rmi_cuda_state *cs, size_t n, int out_f64, void *out, int in_f64, const void *in)
{
    if (!n)
        return;
    if (out_f64 == in_f64)
        rmi_cuda_memcpy(cs, out, in, n * (out_f64 ? 8 : 4));
    else if (out_f64)
        LAUNCH((k_convert<double, float>), n)(n, (double *)out, (const float *)in);
    else
        LAUNCH((k_convert<float, double>), n)(n, (float *)out, (const double *)in);
    CUDA_LAUNCHED("convert kernel");
}

/* The group's input pointers travel with the micro-ops, by value (the
 * instruction's pointers are patched per run, so they are copied at launch). */
typedef struct {
    remat_cuda_fused F;
    const void *in[REMAT_CUDA_FUSED_MAX_IN];
} fused_args;

/* Each thread runs the whole group on its element, every micro-op's result
 * rounded to T in a register, as the CPU's block loop stores each one: (n) -> (n). */
template <typename T> __global__ void k_fused(const fused_args A, size_t n, T *out)
{
    const remat_cuda_fused *F = &A.F;
    GRID_STRIDE(i, n) {
        T regs[REMAT_CUDA_FUSED_MAX_REGS];
        T v = (T)0;
        for (int k = 0; k < F->n_uops; k++) {
            const remat_cuda_uop *u = &F->uops[k];
            T x[3] = {(T)0, (T)0, (T)0};
            for (int j = 0; j < 3; j++) {
                const int r = u->src[j];
                if (r >= 0) {
                    x[j] = regs[r];
                } else if (r != INT16_MIN) {
                    const int e = -1 - r;
                    const bool one = (F->scalar_in[e / 64] >> (e % 64)) & 1u;
                    x[j] = ((const T *)A.in[e])[one ? 0 : i];
                }
            }
            switch (u->kind) {
            case REMAT_CUDA_UOP_UNARY: v = ew_unary<T>(u->op, x[0]); break;
            case REMAT_CUDA_UOP_INTEGER_POW: v = ew_integer_pow<T>(x[0], u->int_exponent); break;
            case REMAT_CUDA_UOP_POW: v = m_pow(x[0], (T)u->exponent); break;
            case REMAT_CUDA_UOP_SELECT: v = ew_select<T>(x[0], x[1], x[2]); break;
            default: v = ew_binary<T>(u->op, x[0], x[1]); break;
            }
            if (k + 1 < F->n_uops)
                regs[u->dst] = v;
        }
        out[i] = v;
    }
}

extern "C" void rmi_cuda_fused_run(rmi_cuda_state *cs, const remat_cuda_fused *F, size_t n, void *out,
                                   const void *const *in)
{
    if (!n)
        return;
    fused_args A;
    A.F = *F;
    for (int k = 0; k < F->nin; k++)
        A.in[k] = in[k];
    if (F->f64)
        LAUNCH(k_fused<double>, n)(A, n, (double *)out);
    else
        LAUNCH(k_fused<float>, n)(A, n, (float *)out);
    CUDA_LAUNCHED("fused elementwise kernel");
}
