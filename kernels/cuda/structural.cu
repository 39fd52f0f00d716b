/*
 * structural.cu — transpose, broadcast_in_dim, slice, pad, reshape copies,
 * concatenate and add(x, pad(g)); the CPU references are
 * src/backend/cpu/structural.c and add_pad.c.
 *
 * The shape work is the CPU's: backend.c makes the CPU's copy plan
 * (remat_cpu_*_plan: size-1 axes dropped, contiguous axes merged) when it
 * lowers the op and hands its strides here; one kernel moves any plan, one
 * thread per element, elements moved as 4- or 8-byte words (the ops never
 * look at values). (dims) -> (dims) through the two stride vectors.
 */
#include "cuda_util.cuh"

typedef struct {
    int rank;
    int64_t dims[8], ds[8], ss[8];
} copy_args;

template <typename U> __global__ void k_copy(const copy_args A, size_t n, U *dst, const U *src)
{
    GRID_STRIDE(i, n) {
        int64_t rest = (int64_t)i, doff = 0, soff = 0;
        for (int d = A.rank - 1; d >= 0; d--) {
            const int64_t k = rest % A.dims[d];
            rest /= A.dims[d];
            doff += k * A.ds[d];
            soff += k * A.ss[d];
        }
        dst[doff] = src[soff];
    }
}

#define LAUNCH(kernel, n) kernel<<<rmi_cuda_blocks(n), REMAT_CUDA_BLOCK, 0, rmi_cuda_on(cs)>>>

extern "C" void rmi_cuda_copy(rmi_cuda_state *cs, const remat_cuda_copy_desc *d, void *out, const void *in)
{
    rmi_cuda_memset0(cs, out, d->zero_bytes); /* all-zero bits are +0.0 */
    if (d->n <= 0)
        return;
    char *dst = (char *)out + d->doff * d->esize;
    const char *src = (const char *)in + d->soff * d->esize;
    if (d->rank == 0) { /* contiguous */
        rmi_cuda_memcpy(cs, dst, src, (size_t)d->n * (size_t)d->esize);
        return;
    }
    copy_args A;
    A.rank = d->rank;
    for (int i = 0; i < d->rank; i++)
        A.dims[i] = d->dims[i], A.ds[i] = d->ds[i], A.ss[i] = d->ss[i];
    const size_t n = (size_t)d->n;
    if (d->esize == 8)
        LAUNCH(k_copy<uint64_t>, n)(A, n, (uint64_t *)(void *)dst, (const uint64_t *)(const void *)src);
    else
        LAUNCH(k_copy<uint32_t>, n)(A, n, (uint32_t *)(void *)dst, (const uint32_t *)(const void *)src);
    CUDA_LAUNCHED("structural copy kernel");
}

/* (outer, chunk) -> columns [col, col + chunk) of (outer, row) */
template <typename U>
__global__ void k_concat(int64_t outer, int64_t row, int64_t col, int64_t chunk, U *out, const U *in)
{
    GRID_STRIDE(i, (size_t)(outer * chunk)) {
        const int64_t o = (int64_t)i / chunk, c = (int64_t)i % chunk;
        out[o * row + col + c] = in[i];
    }
}

extern "C" void rmi_cuda_concat_one(rmi_cuda_state *cs, int esize, int64_t outer, int64_t row, int64_t col,
                                    int64_t chunk, void *out, const void *in)
{
    if (outer <= 0 || chunk <= 0)
        return;
    const size_t n = (size_t)(outer * chunk);
    if (esize == 8)
        LAUNCH(k_concat<uint64_t>, n)(outer, row, col, chunk, (uint64_t *)out, (const uint64_t *)in);
    else
        LAUNCH(k_concat<uint32_t>, n)(outer, row, col, chunk, (uint32_t *)out, (const uint32_t *)in);
    CUDA_LAUNCHED("concatenate kernel");
}

/* out (dims) = x + 0 outside g's region, x + g (g + x) inside: the bits of
 * pad then add (x + +0.0 turns -0.0 into +0.0) */
template <typename T> __global__ void k_add_pad(const remat_cuda_add_pad_desc A, T *out, const T *x, const T *g)
{
    GRID_STRIDE(i, (size_t)A.n) {
        int64_t rest = (int64_t)i, goff = 0, gst = 1;
        bool in = true;
        for (int d = A.rank - 1; d >= 0; d--) {
            const int64_t k = rest % A.dims[d] - A.lo[d];
            rest /= A.dims[d];
            in = in && k >= 0 && k < A.gdims[d];
            goff += k * gst;
            gst *= A.gdims[d];
        }
        const T v = in ? g[goff] : (T)0;
        out[i] = A.pad_first ? v + x[i] : x[i] + v;
    }
}

extern "C" void rmi_cuda_add_pad(rmi_cuda_state *cs, const remat_cuda_add_pad_desc *d, void *out, const void *x,
                                 const void *g)
{
    if (d->n <= 0)
        return;
    const size_t n = (size_t)d->n;
    if (d->f64)
        LAUNCH(k_add_pad<double>, n)(*d, (double *)out, (const double *)x, (const double *)g);
    else
        LAUNCH(k_add_pad<float>, n)(*d, (float *)out, (const float *)x, (const float *)g);
    CUDA_LAUNCHED("add_pad kernel");
}
