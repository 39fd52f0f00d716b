/*
 * cuda_util.cuh (internal) — what the .cu files share: a state's stream,
 * its sticky error record (llm.c's cudaCheck, without the exit) and the
 * launch geometry. CUDA_NOTE and CUDA_LAUNCHED record into `cs`, the
 * calling function's rmi_cuda_state (every entry of cuda_kernels.h that
 * launches or copies takes one by that name).
 */
#ifndef REMAT_CUDA_UTIL_CUH
#define REMAT_CUDA_UTIL_CUH

#include <cuda_runtime.h>

#include "cuda_kernels.h"

/* cs's stream, cs's device made current (cudaSetDevice when another is:
 * launches need their stream's device current) (memory.cu) */
cudaStream_t rmi_cuda_on(rmi_cuda_state *cs);
/* remembers the first failure in cs (NULL: none to keep it) until
 * rmi_cuda_finish(); false when e failed */
bool rmi_cuda_note(rmi_cuda_state *cs, cudaError_t e, const char *what, const char *file, int line);
#define CUDA_NOTE(call, what) rmi_cuda_note(cs, (call), (what), __FILE__, __LINE__)
/* after a launch: a bad configuration shows here, a fault at finish */
#define CUDA_LAUNCHED(what) rmi_cuda_note(cs, cudaGetLastError(), (what), __FILE__, __LINE__)

/* grid-stride loops: 256 threads a block, at most 2^16 blocks (each thread
 * then takes several elements; an H200 runs 132 x 2048 threads at once) */
enum { REMAT_CUDA_BLOCK = 256 };
static inline unsigned rmi_cuda_blocks(size_t n)
{
    size_t b = (n + REMAT_CUDA_BLOCK - 1) / REMAT_CUDA_BLOCK;
    return (unsigned)(b > 65536 ? 65536 : b);
}
#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

#endif
