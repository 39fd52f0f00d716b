/*
 * ordered_sum.cu — the device half of remat_dist_device_sum
 * (remat/dist_device.h): n vectors of len doubles, back to back, summed in
 * their order, ((v0 + v1) + v2) + ..., element by element. nvcc runs with
 * -fmad=false and these are plain IEEE adds, so each element's bits are
 * the host's remat_dist_sum's.
 */
#include <stdint.h>

#include "cuda_util.cuh"

// all (n, len), sum (len)
__global__ void ordered_sum_kernel(const double *__restrict__ all, int64_t n, size_t len, double *__restrict__ sum)
{
    GRID_STRIDE(e, len)
    {
        double s = all[e];
        for (int64_t i = 1; i < n; i++)
            s += all[(size_t)i * len + e];
        sum[e] = s;
    }
}

extern "C" cudaError_t rmi_cuda_ordered_sum(const double *all, int64_t n, int64_t len, double *sum,
                                            cudaStream_t stream)
{
    if (len <= 0)
        return cudaSuccess;
    if (n <= 0)
        return cudaMemsetAsync(sum, 0, sizeof *sum * (size_t)len, stream);
    ordered_sum_kernel<<<rmi_cuda_blocks((size_t)len), REMAT_CUDA_BLOCK, 0, stream>>>(all, n, (size_t)len, sum);
    return cudaGetLastError();
}
