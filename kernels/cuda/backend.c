/*
 * backend.c — the CUDA backend object: the vtable (lowering in lower.c,
 * kernels in *.cu), device memory, and one backend per device.
 *
 * Every entry acts on the context it is handed (backend_impl.h
 * remat_exec_ctx): the device is the backend object's, the stream and error
 * record the state's (an rmi_cuda_state, memory.cu: a run's is its
 * program's, made at its first run; a compile's uploads use a short-lived
 * one). mem_alloc / mem_free need only the device; host_alloc / host_free
 * (pinned host memory, the slow tiers') go through the state's kept blocks
 * when there is a state (kernels/cuda/pinned.h), and must then be given
 * the same state. finish waits for the
 * state's stream and turns its first device error since the last finish
 * into REMAT_ERR_BACKEND. Scan loop bodies compile to lane kernels through
 * NVRTC (lanes.h), launched on the context's stream (run_lanes); their
 * launch failures are reported by finish too.
 */
#include <pthread.h>
#include <stdint.h>

#include "core/error.h"
#include "kernels/cuda/cublas_lib.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/lanes.h"

enum { MAX_DEVICES = 64 };

int rmi_cuda_backend_device(const remat_backend *be) { return (int)(intptr_t)be->context; }

static int device_of(const remat_backend *be) { return rmi_cuda_backend_device(be); }

static void *cuda_mem_alloc(const remat_exec_ctx *cx, size_t bytes) { return rmi_cuda_malloc(device_of(cx->be),
                            bytes); }
static void cuda_mem_free(const remat_exec_ctx *cx, void *p) { rmi_cuda_free(device_of(cx->be), p); }
static void cuda_mem_copy(const remat_exec_ctx *cx, void *dst, const void *src, size_t bytes)
{
    rmi_cuda_memcpy(cx->state, dst, src, bytes);
}
static void cuda_mem_fill(const remat_exec_ctx *cx, void *dst, remat_dtype dt, double value, size_t n)
{
    rmi_cuda_fill(cx->state, dst, dt == REMAT_F64, value, n);
}
static void cuda_copy_in(const remat_exec_ctx *cx, void *dst, const void *host_src, size_t bytes)
{
    rmi_cuda_copy_in(cx->state, dst, host_src, bytes);
}
static void cuda_copy_out(const remat_exec_ctx *cx, void *host_dst, const void *src, size_t bytes)
{
    rmi_cuda_copy_out(cx->state, host_dst, src, bytes);
}
/* with a state (a run's), through its kept blocks: no cudaHostAlloc per run */
static void *cuda_host_alloc(const remat_exec_ctx *cx, size_t bytes)
{
    return cx->state ? rmi_cuda_state_host_alloc(cx->state, bytes) : rmi_cuda_host_alloc(device_of(cx->be), bytes);
}
static void cuda_host_free(const remat_exec_ctx *cx, void *p)
{
    if (cx->state)
        rmi_cuda_state_host_free(cx->state, p);
    else
        rmi_cuda_host_free(device_of(cx->be), p);
}
static void cuda_program_free(void *state) { rmi_cuda_state_free(state); }

static void *cuda_program_new(remat_backend *be)
{
    char why[256];
    void *s = rmi_cuda_state_new(device_of(be), why, sizeof why);
    if (!s)
        rmi_error(REMAT_ERR_BACKEND, "cuda backend: %s", why);
    return s;
}

static remat_status cuda_finish(const remat_exec_ctx *cx)
{
    char msg[400];
    if (rmi_cuda_finish(cx->state, msg, sizeof msg) == 0)
        return rmi_cuda_lanes_check();
    rmi_cuda_lanes_check(); /* reported once: the first error is the one above */
    return rmi_error(REMAT_ERR_BACKEND, "cuda backend: %s", msg);
}

static const remat_backend_iface cuda_iface = {
    .name = "cuda",
    .supports_op = rmi_cuda_supports,
    .scratch_bytes = rmi_cuda_scratch,
    .lower = rmi_cuda_lower,
    .lower_fused = rmi_cuda_lower_fused,
    .lower_add_pad = rmi_cuda_lower_add_pad,
    .compile_lanes = rmi_cuda_compile_lanes,
    .can_compile_lanes = rmi_cuda_can_compile_lanes,
    .host_lane_cuts = false, /* one launch per run over all lanes, on the program's stream */
    .run_lanes = rmi_cuda_run_lanes,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_copy = cuda_mem_copy,
    .mem_fill = cuda_mem_fill,
    .copy_in = cuda_copy_in,
    .copy_out = cuda_copy_out,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .program_new = cuda_program_new,
    .program_free = cuda_program_free,
    .finish = cuda_finish,
    .on_host = rmi_cuda_on_host,
};

const remat_backend_iface *rmi_cuda_iface(void) { return &cuda_iface; }

static remat_backend backends[MAX_DEVICES];
static int n_devices;
static char no_device[256];
static int no_cublas; /* a device, but cuBLAS (dlopen'ed here, cublas_lib.h) did not load: why in no_device */

/* The first call of the process: the static cudart opens the driver, then
 * cuBLAS is loaded; nothing of CUDA is loaded before it. */
static void probe(void)
{
    n_devices = rmi_cuda_device_count(no_device, sizeof no_device);
    if (n_devices > MAX_DEVICES)
        n_devices = MAX_DEVICES;
    if (n_devices > 0 && !rmi_cublas_open(no_device, sizeof no_device)) {
        no_cublas = 1;
        n_devices = 0;
    }
    for (int d = 0; d < n_devices; d++)
        backends[d] = (remat_backend){.iface = cuda_iface, .context = (void *)(intptr_t)d};
}

remat_backend *remat_backend_cuda(int device)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, probe);
    if (no_cublas) {
        rmi_error(REMAT_ERR_BACKEND, "cuda backend: %s", no_device);
        return NULL;
    }
    if (n_devices == 0) {
        rmi_error(REMAT_ERR_BACKEND, "no CUDA device: %s", no_device);
        return NULL;
    }
    if (device < 0 || device >= n_devices) {
        rmi_error(REMAT_ERR_ARG, "no CUDA device: device %d asked for, %d present", device, n_devices);
        return NULL;
    }
    return &backends[device];
}
