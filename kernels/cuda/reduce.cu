/*
 * reduce.cu — reduce_sum and reduce_max over a set of axes; the CPU
 * reference is src/backend/cpu/reduce.c.
 *
 * One thread per output walks that output's inputs in ascending row-major
 * order from +0 (sum) or -inf (max): the CPU's order, so sums have the CPU's
 * bits, and no atomics. (in dims) -> (kept dims). The price is parallelism
 * when there are few outputs (a full sum is one thread); a fixed-shape tree
 * would be faster there but could not give the CPU's bits.
 */
#include "cuda_util.cuh"

/* in coalesced form: kept axes (their input strides, output row-major) and
 * reduced axes (dims and input strides) */
typedef struct {
    int nk, nr;
    int64_t n_out, n_red;
    int64_t kdims[8], kstride[8];
    int64_t rdims[8], rstride[8];
} red_args;

/* IEEE 754-2019 maximum as the CPU's MAX_STEP: NaN sticks, +0 beats -0 */
template <typename T> __device__ __forceinline__ T max_step(T m, T x)
{
    return (x > m || x != x || (x == m && signbit(m))) ? x : m;
}

template <typename T, bool MAX> __global__ void k_reduce(const red_args A, T *out, const T *in)
{
    GRID_STRIDE(o, (size_t)A.n_out) {
        int64_t base = 0, rest = (int64_t)o;
        for (int d = A.nk - 1; d >= 0; d--) {
            base += (rest % A.kdims[d]) * A.kstride[d];
            rest /= A.kdims[d];
        }
        int64_t idx[8] = {0, 0, 0, 0, 0, 0, 0, 0}, off = base;
        T acc = MAX ? (T)-INFINITY : (T)0;
        for (int64_t r = 0; r < A.n_red; r++) {
            const T x = in[off];
            acc = MAX ? max_step<T>(acc, x) : acc + x;
            for (int d = A.nr - 1; d >= 0; d--) { /* odometer, innermost axis fastest */
                off += A.rstride[d];
                if (++idx[d] < A.rdims[d])
                    break;
                off -= A.rstride[d] * A.rdims[d];
                idx[d] = 0;
            }
        }
        out[o] = acc;
    }
}

extern "C" void rmi_cuda_reduce(rmi_cuda_state *cs, int f64, int is_max, void *out, const void *in,
                                const remat_cuda_reduce_desc *d)
{
    red_args A = {};
    int64_t stride[8], s = 1;
    for (int i = d->rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= d->dims[i];
    }
    A.n_out = A.n_red = 1;
    for (int i = 0; i < d->rank; i++) {
        if (d->reduce[i]) {
            A.rdims[A.nr] = d->dims[i];
            A.rstride[A.nr++] = stride[i];
            A.n_red *= d->dims[i];
        } else {
            A.kdims[A.nk] = d->dims[i];
            A.kstride[A.nk++] = stride[i];
            A.n_out *= d->dims[i];
        }
    }
    if (A.n_out == 0)
        return;
    const size_t n = (size_t)A.n_out;
    cudaStream_t st = rmi_cuda_on(cs);
    const unsigned blocks = rmi_cuda_blocks(n);
    if (f64 && is_max)
        k_reduce<double, true><<<blocks, REMAT_CUDA_BLOCK, 0, st>>>(A, (double *)out, (const double *)in);
    else if (f64)
        k_reduce<double, false><<<blocks, REMAT_CUDA_BLOCK, 0, st>>>(A, (double *)out, (const double *)in);
    else if (is_max)
        k_reduce<float, true><<<blocks, REMAT_CUDA_BLOCK, 0, st>>>(A, (float *)out, (const float *)in);
    else
        k_reduce<float, false><<<blocks, REMAT_CUDA_BLOCK, 0, st>>>(A, (float *)out, (const float *)in);
    CUDA_LAUNCHED("reduce kernel");
}
