/*
 * memory.cu — devices, streams, device memory and the error record.
 *
 * Everything acts on the state it is handed (rmi_cuda_state: a run's
 * remat_exec_ctx.state, or a short-lived one for a compile's uploads): no
 * thread-local binding. The CUDA runtime's current device is still the
 * thread's, so each entry makes its state's device current first
 * (rmi_cuda_on; a cudaGetDevice when it already is). Streams are made
 * blocking (cudaStreamDefault): work on the legacy default stream is
 * ordered with a run's kernels without an explicit event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_lib.h"
#include "cuda_util.cuh"
#include "pinned.h"

struct rmi_cuda_state {
    int device;
    cudaStream_t stream;
    bool failed;
    char first_error[320];
    cublasHandle_t blas; /* made at the first gemm (dot.cu rmi_cuda_blas), NULL before */
    rmi_pinned_cache pinned; /* host_alloc's blocks, kept between runs (pinned.h) */
};

static void use_device(int device)
{
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != device)
        (void)cudaSetDevice(device); /* a failure shows in the call that follows */
}

cudaStream_t rmi_cuda_on(rmi_cuda_state *cs)
{
    use_device(cs->device);
    return cs->stream;
}

extern "C" void *rmi_cuda_state_stream(rmi_cuda_state *cs) { return (void *)rmi_cuda_on(cs); }

extern "C" void rmi_cuda_state_note(rmi_cuda_state *cs, int cuda_error, const char *what)
{
    rmi_cuda_note(cs, (cudaError_t)cuda_error, what, __FILE__, __LINE__);
}

extern "C" int rmi_cuda_state_device(const rmi_cuda_state *cs) { return cs->device; }

/* dot.cu: the state's cuBLAS handle slot */
cublasHandle_t *rmi_cuda_blas_slot(rmi_cuda_state *cs) { return &cs->blas; }

bool rmi_cuda_note(rmi_cuda_state *cs, cudaError_t e, const char *what, const char *file, int line)
{
    if (e == cudaSuccess)
        return true;
    if (cs && !cs->failed) {
        cs->failed = true;
        snprintf(cs->first_error, sizeof cs->first_error, "%s failed (%s:%d): %s (%s)", what, file, line,
                 cudaGetErrorString(e), cudaGetErrorName(e));
    }
    return false;
}

extern "C" int rmi_cuda_device_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        snprintf(why, why_len, "%s", e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none");
        (void)cudaGetLastError(); /* not sticky: clear it */
        return 0;
    }
    return n;
}

/* Pinned host memory (the vtable's host_alloc): the slow tier of
 * offloaded residuals and two-tier loops, which copy_in / copy_out move
 * without a staging copy. Portable: any device's stream may copy it. */
extern "C" void *rmi_cuda_host_alloc(int device, size_t bytes)
{
    void *p = NULL;
    use_device(device);
    cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* reported as NULL, not kept */
        return NULL;
    }
    return p;
}

extern "C" void rmi_cuda_host_free(int device, void *p)
{
    if (!p)
        return;
    use_device(device);
    (void)cudaFreeHost(p); /* no state to keep an error in */
    (void)cudaGetLastError();
}

static void *pinned_alloc(void *ctx, size_t bytes) { return rmi_cuda_host_alloc(*(int *)ctx, bytes); }
static void pinned_free(void *ctx, void *p) { rmi_cuda_host_free(*(int *)ctx, p); }
static rmi_pinned_allocator pinned_allocator(rmi_cuda_state *cs)
{
    return rmi_pinned_allocator{pinned_alloc, pinned_free, &cs->device};
}

extern "C" void *rmi_cuda_state_host_alloc(rmi_cuda_state *cs, size_t bytes)
{
    const rmi_pinned_allocator a = pinned_allocator(cs);
    return rmi_pinned_take(&cs->pinned, bytes, &a);
}

extern "C" void rmi_cuda_state_host_free(rmi_cuda_state *cs, void *p)
{
    const rmi_pinned_allocator a = pinned_allocator(cs);
    rmi_pinned_give(&cs->pinned, p, &a);
}

extern "C" rmi_cuda_state *rmi_cuda_state_new(int device, char *why, size_t why_len)
{
    rmi_cuda_state *s = (rmi_cuda_state *)calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of host memory");
        return NULL;
    }
    s->device = device;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&s->stream, cudaStreamDefault);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cudaStreamCreate on device %d: %s", device, cudaGetErrorString(e));
        (void)cudaGetLastError();
        free(s);
        return NULL;
    }
    return s;
}

extern "C" void rmi_cuda_state_free(rmi_cuda_state *cs)
{
    if (!cs)
        return;
    use_device(cs->device);
    if (cs->blas)
        rmi_cublas.destroy(cs->blas);
    const rmi_pinned_allocator a = pinned_allocator(cs);
    rmi_pinned_clear(&cs->pinned, &a);
    CUDA_NOTE(cudaStreamDestroy(cs->stream), "cudaStreamDestroy");
    free(cs);
}

extern "C" void *rmi_cuda_malloc(int device, size_t bytes)
{
    void *p = NULL;
    use_device(device);
    /* 256 bytes at least: cudaMalloc(0) gives NULL, which means out of memory here */
    cudaError_t e = cudaMalloc(&p, bytes < 256 ? 256 : bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* an allocation failure is reported as NULL, not kept */
        return NULL;
    }
    return p;
}

extern "C" void rmi_cuda_free(int device, void *p)
{
    if (!p)
        return;
    use_device(device);
    (void)cudaFree(p); /* no state to keep an error in: a failed free is not reported */
    (void)cudaGetLastError();
}

/* Direction from the pointers (unified addressing): the vtable's copies are
 * device to device, but a loop's flag is read into a host variable through
 * mem_copy (scan/while_exec.c); into pageable host memory the copy returns
 * only once done, so that read sees the value. */
extern "C" void rmi_cuda_memcpy(rmi_cuda_state *cs, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        CUDA_NOTE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, rmi_cuda_on(cs)), "cudaMemcpyAsync");
}

extern "C" void rmi_cuda_memset0(rmi_cuda_state *cs, void *dst, size_t bytes)
{
    if (bytes)
        CUDA_NOTE(cudaMemsetAsync(dst, 0, bytes, rmi_cuda_on(cs)), "cudaMemsetAsync");
}

template <typename T> __global__ void k_fill(T *out, T v, size_t n)
{
    GRID_STRIDE(i, n) out[i] = v;
}

extern "C" void rmi_cuda_fill(rmi_cuda_state *cs, void *dst, int f64, double value, size_t n)
{
    if (!n)
        return;
    if (f64)
        k_fill<double><<<rmi_cuda_blocks(n), REMAT_CUDA_BLOCK, 0, rmi_cuda_on(cs)>>>((double *)dst, value, n);
    else
        k_fill<float><<<rmi_cuda_blocks(n), REMAT_CUDA_BLOCK, 0, rmi_cuda_on(cs)>>>((float *)dst, (float)value, n);
    CUDA_LAUNCHED("fill kernel");
}

extern "C" void rmi_cuda_copy_in(rmi_cuda_state *cs, void *dst, const void *host_src, size_t bytes)
{
    if (bytes && CUDA_NOTE(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, rmi_cuda_on(cs)),
                           "cudaMemcpyAsync (host to device)"))
        CUDA_NOTE(cudaStreamSynchronize(rmi_cuda_on(cs)), "cudaStreamSynchronize after a copy in");
}

extern "C" void rmi_cuda_copy_out(rmi_cuda_state *cs, void *host_dst, const void *src, size_t bytes)
{
    if (bytes && CUDA_NOTE(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, rmi_cuda_on(cs)),
                           "cudaMemcpyAsync (device to host)"))
        CUDA_NOTE(cudaStreamSynchronize(rmi_cuda_on(cs)), "cudaStreamSynchronize after a copy out");
}

extern "C" int rmi_cuda_finish(rmi_cuda_state *cs, char *msg, size_t msg_len)
{
    CUDA_NOTE(cudaStreamSynchronize(rmi_cuda_on(cs)), "a kernel of this run (cudaStreamSynchronize)");
    if (!cs->failed)
        return 0;
    snprintf(msg, msg_len, "%s", cs->first_error);
    cs->failed = false;
    return -1;
}
