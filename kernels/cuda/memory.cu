/*
 * memory.cu — devices, streams, device memory and the error record.
 *
 * The vtable's entries take no backend argument (backend_impl.h), so the
 * device and stream they act on are the calling thread's: rmi_cuda_enter
 * sets them (a run enters its program's stream; compiling enters the
 * device's default stream). A program runs on one thread at a time
 * (remat/exec.h), so a thread-local binding is all the state needed.
 * Streams are made blocking (cudaStreamDefault): work queued on the legacy
 * default stream at compile time (the constant upload) is ordered before a
 * run's kernels without an explicit event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.cuh"

typedef struct {
    int device;
    cudaStream_t stream;
} cuda_state;

static thread_local int cur_device = -1;
static thread_local cudaStream_t cur_stream = 0;
static thread_local char first_error[320];
static thread_local bool failed = false;

cudaStream_t rmi_cuda_stream(void) { return cur_stream; }

extern "C" void *rmi_cuda_thread_stream(void) { return (void *)cur_stream; }

bool rmi_cuda_note(cudaError_t e, const char *what, const char *file, int line)
{
    if (e == cudaSuccess)
        return true;
    if (!failed) {
        failed = true;
        snprintf(first_error, sizeof first_error, "%s failed (%s:%d): %s (%s)", what, file, line,
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

extern "C" void *rmi_cuda_state_new(int device, char *why, size_t why_len)
{
    cuda_state *s = (cuda_state *)malloc(sizeof *s);
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

extern "C" void rmi_cuda_state_free(void *state)
{
    cuda_state *s = (cuda_state *)state;
    if (!s)
        return;
    if (cur_stream == s->stream)
        cur_stream = 0;
    CUDA_NOTE(cudaStreamDestroy(s->stream), "cudaStreamDestroy");
    free(s);
}

extern "C" void rmi_cuda_enter(int device, void *state)
{
    const cuda_state *s = (const cuda_state *)state;
    if (device != cur_device)
        cur_stream = 0;
    cur_device = device;
    CUDA_NOTE(cudaSetDevice(device), "cudaSetDevice");
    if (s)
        cur_stream = s->stream;
}

extern "C" void *rmi_cuda_malloc(size_t bytes)
{
    void *p = NULL;
    /* 256 bytes at least: cudaMalloc(0) gives NULL, which means out of memory here */
    cudaError_t e = cudaMalloc(&p, bytes < 256 ? 256 : bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* an allocation failure is reported as NULL, not kept */
        return NULL;
    }
    return p;
}

extern "C" void rmi_cuda_free(void *p)
{
    if (p)
        CUDA_NOTE(cudaFree(p), "cudaFree");
}

/* Direction from the pointers (unified addressing): the vtable's copies are
 * device to device, but a loop's flag is read into a host variable through
 * mem_copy (scan/while_exec.c); into pageable host memory the copy returns
 * only once done, so that read sees the value. */
extern "C" void rmi_cuda_memcpy(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        CUDA_NOTE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cur_stream), "cudaMemcpyAsync");
}

extern "C" void rmi_cuda_memset0(void *dst, size_t bytes)
{
    if (bytes)
        CUDA_NOTE(cudaMemsetAsync(dst, 0, bytes, cur_stream), "cudaMemsetAsync");
}

template <typename T> __global__ void k_fill(T *out, T v, size_t n)
{
    GRID_STRIDE(i, n) out[i] = v;
}

extern "C" void rmi_cuda_fill(void *dst, int f64, double value, size_t n)
{
    if (!n)
        return;
    if (f64)
        k_fill<double><<<rmi_cuda_blocks(n), REMAT_CUDA_BLOCK, 0, cur_stream>>>((double *)dst, value, n);
    else
        k_fill<float><<<rmi_cuda_blocks(n), REMAT_CUDA_BLOCK, 0, cur_stream>>>((float *)dst, (float)value, n);
    CUDA_LAUNCHED("fill kernel");
}

extern "C" void rmi_cuda_copy_in(void *dst, const void *host_src, size_t bytes)
{
    if (bytes && CUDA_NOTE(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, cur_stream),
                           "cudaMemcpyAsync (host to device)"))
        CUDA_NOTE(cudaStreamSynchronize(cur_stream), "cudaStreamSynchronize after a copy in");
}

extern "C" void rmi_cuda_copy_out(void *host_dst, const void *src, size_t bytes)
{
    if (bytes && CUDA_NOTE(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, cur_stream),
                           "cudaMemcpyAsync (device to host)"))
        CUDA_NOTE(cudaStreamSynchronize(cur_stream), "cudaStreamSynchronize after a copy out");
}

extern "C" int rmi_cuda_finish(char *msg, size_t msg_len)
{
    CUDA_NOTE(cudaStreamSynchronize(cur_stream), "a kernel of this run (cudaStreamSynchronize)");
    if (!failed)
        return 0;
    snprintf(msg, msg_len, "%s", first_error);
    failed = false;
    return -1;
}
