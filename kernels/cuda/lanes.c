/*
 * lanes.c — lane programs on the GPU (lanes.h): NVRTC for the device's
 * architecture, one library per distinct program, a static trampoline per
 * kernel that launches it.
 */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "backend/backend_impl.h"
#include "core/error.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/lanes.h"
#include "kernels/cuda/lanes_gen.h"
#include "kernels/cuda/nvrtc.h"

typedef struct {
    char *src;            /* the kernel's source: identical programs share a slot */
    char arch[32];        /* what it was compiled for ("sm_90"): devices of another architecture get their own */
    cudaLibrary_t lib;
    cudaKernel_t kernel;
    remat_cuda_lanes_info info;
    int64_t m;
} slot;

static slot slots[REMAT_CUDA_LANES_MAX];
static atomic_int n_slots;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool failed;
static atomic_int launch_error; /* the first failed launch's cudaError_t, 0: none */

int rmi_cuda_lanes_count(void) { return atomic_load(&n_slots); }

remat_status rmi_cuda_lanes_check(void)
{
    const int e = atomic_exchange(&launch_error, 0);
    return e ? rmi_error(REMAT_ERR_BACKEND, "CUDA lanes: a kernel launch failed: %s",
                         cudaGetErrorString((cudaError_t)e))
             : REMAT_OK;
}

/* bufs (n pointers) then strides (n), as struct remat_lane_args lays them out;
 * on cs's stream (NULL: the current device's default stream, a failure kept
 * for rmi_cuda_lanes_check) */
static void launch(rmi_cuda_state *cs, int i, char *const *bufs, const int64_t *strides, int64_t count,
                   int64_t lanes)
{
    const slot *s = &slots[i];
    const int nb = s->info.n_bufs > 0 ? s->info.n_bufs : 1;
    uint64_t argbuf[2 * 2048];
    REMAT_ASSERT(2 * nb <= (int)(sizeof argbuf / sizeof *argbuf));
    memset(argbuf, 0, sizeof(uint64_t) * 2 * (size_t)nb);
    memcpy(argbuf, bufs, sizeof(char *) * (size_t)s->info.n_bufs);
    memcpy(argbuf + nb, strides, sizeof(int64_t) * (size_t)s->info.n_bufs);
    /* lanes 0 .. lanes-1 of this call (lane.h: a range of m moved to 0);
     * m == 1 does not read it */
    long long c = count, lo = 0, hi = s->m == 1 ? 1 : lanes;
    if (hi <= 0 || c <= 0) /* nothing to run (a launch of no blocks would be an error) */
        return;
    void *args[4] = {argbuf, &c, &lo, &hi};
    const unsigned threads = s->info.serial ? 1 : REMAT_CUDA_LANES_BLOCK;
    const unsigned blocks = s->info.serial ? 1 : (unsigned)((hi + REMAT_CUDA_LANES_BLOCK - 1) / REMAT_CUDA_LANES_BLOCK);
    const dim3 grid = {blocks, 1, 1}, block = {threads, 1, 1};
    const cudaStream_t stream = cs ? (cudaStream_t)rmi_cuda_state_stream(cs) : 0;
    const cudaError_t e = cudaLaunchKernel((const void *)s->kernel, grid, block, args, 0, stream);
    if (e != cudaSuccess && cs) {
        rmi_cuda_state_note(cs, (int)e, "a lane kernel's launch (cudaLaunchKernel)");
    } else if (e != cudaSuccess) {
        int none = 0;
        atomic_compare_exchange_strong(&launch_error, &none, (int)e);
    }
}

/* REMAT_CUDA_LANES_MAX trampolines, tramp_<i> launching slot i */
#define T1(i)                                                                            \
    static void tramp_##i(char *const *b, const int64_t *s, int64_t c, int64_t lanes) \
    {                                                                                \
        launch(NULL, i, b, s, c, lanes);                                             \
    }
#define T4(i) T1(i##0) T1(i##1) T1(i##2) T1(i##3)
#define T16(i) T4(i##0) T4(i##1) T4(i##2) T4(i##3)
#define T64(i) T16(i##0) T16(i##1) T16(i##2) T16(i##3)
#define T256(i) T64(i##0) T64(i##1) T64(i##2) T64(i##3)
#define T1024() T256(0) T256(1) T256(2) T256(3)
/* base-4 digits: tramp_01230 is slot 0*256 + 1*64 + 2*16 + 3*4 + 0 */
T1024()
#define R1(i) tramp_##i,
#define R4(i) R1(i##0) R1(i##1) R1(i##2) R1(i##3)
#define R16(i) R4(i##0) R4(i##1) R4(i##2) R4(i##3)
#define R64(i) R16(i##0) R16(i##1) R16(i##2) R16(i##3)
#define R256(i) R64(i##0) R64(i##1) R64(i##2) R64(i##3)
static const remat_lane_fn tramps[REMAT_CUDA_LANES_MAX] = {R256(0) R256(1) R256(2) R256(3)};

_Static_assert(REMAT_CUDA_LANES_MAX == 1024, "one trampoline per slot: T1024 makes 1024");

/* the trampoline names its slot: launched on cx's stream */
void rmi_cuda_run_lanes(const remat_exec_ctx *cx, remat_lane_fn fn, char *const *bufs, const int64_t *strides,
                        int64_t count, int64_t lanes)
{
    const int n = atomic_load(&n_slots);
    for (int i = 0; i < n; i++)
        if (tramps[i] == fn) {
            launch(cx->state, i, bufs, strides, count, lanes);
            return;
        }
    REMAT_ASSERT(!"a lane function compile_lanes did not give");
}

static remat_status cuda_fail(cudaError_t e, const char *what)
{
    return rmi_error(REMAT_ERR_BACKEND, "CUDA lanes: %s: %s", what, cudaGetErrorString(e));
}

bool rmi_cuda_lanes_arch(int major, int minor, char *sm, char *compute, size_t n)
{
    if (major < 1 || minor < 0 || minor > 9) /* no compute capability CUDA knows */
        return false;
    const int a = snprintf(sm, n, "sm_%d%d", major, minor), b = snprintf(compute, n, "compute_%d%d", major, minor);
    return a > 0 && (size_t)a < n && b > 0 && (size_t)b < n;
}

/* the architecture names of device dev, asked of that device (not the
 * thread's current one) */
static remat_status device_arch(int dev, char *sm, char *compute, size_t n)
{
    int major = 0, minor = 0;
    cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e != cudaSuccess)
        return cuda_fail(e, "the device's compute capability");
    if (!rmi_cuda_lanes_arch(major, minor, sm, compute, n))
        return rmi_error(REMAT_ERR_BACKEND, "CUDA lanes: device %d has compute capability %d.%d, which has no "
                                            "architecture name", dev, major, minor);
    return REMAT_OK;
}

/* compiles and loads src for sm (compute: its PTX form) into a new slot;
 * the lock is held */
static remat_status load_slot(char *src, const remat_cuda_lanes_info *info, int64_t m, const char *sm,
                              const char *compute, int *at)
{
    const int i = atomic_load(&n_slots);
    if (i == REMAT_CUDA_LANES_MAX)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "CUDA lanes: more than %d distinct lane kernels in one process",
                         REMAT_CUDA_LANES_MAX);
    remat_status st = REMAT_OK;
    char *img = NULL, *log = NULL;
    size_t size = 0;
    if (st == REMAT_OK) {
        st = rmi_nvrtc_compile(src, "remat_lanes.cu", rmi_cuda_lanes_options, sm, REMAT_NVRTC_CUBIN, &img, &size,
                               &log);
        if (st == REMAT_ERR_BACKEND && log && strstr(log, "arch")) { /* an architecture newer than this NVRTC */
            rmi_free(log), log = NULL;
            st = rmi_nvrtc_compile(src, "remat_lanes.cu", rmi_cuda_lanes_options, compute, REMAT_NVRTC_PTX, &img,
                                   &size, &log);
        }
    }
    if (st == REMAT_OK) {
        slot *s = &slots[i];
        cudaError_t e = cudaLibraryLoadData(&s->lib, img, NULL, NULL, 0, NULL, NULL, 0);
        if (e == cudaSuccess && (e = cudaLibraryGetKernel(&s->kernel, s->lib, "remat_lanes")) != cudaSuccess)
            cudaLibraryUnload(s->lib);
        if (e != cudaSuccess) {
            st = cuda_fail(e, "loading a compiled lane kernel");
        } else {
            s->src = src, s->info = *info, s->m = m;
            snprintf(s->arch, sizeof s->arch, "%s", sm);
            *at = i;
            atomic_store(&n_slots, i + 1);
        }
    }
    rmi_free(img), rmi_free(log);
    return st;
}

/* cache_dir: unused, NVRTC's code is kept in this process only */
remat_status rmi_cuda_compile_lanes(const remat_backend *be, int n, const remat_lane_program *const *p,
                                    remat_lane_fn *out, const char *cache_dir)
{
    (void)cache_dir;
    if (!rmi_cuda_can_compile_lanes())
        return rmi_error(REMAT_ERR_UNSUPPORTED, "CUDA lanes: compiling is off (no NVRTC or device, or an earlier "
                                                  "failure)");
    char sm[32], compute[32];
    remat_status st = device_arch(rmi_cuda_backend_device(be), sm, compute, sizeof sm);
    if (st != REMAT_OK)
        return st;
    pthread_mutex_lock(&lock);
    for (int k = 0; k < n && st == REMAT_OK; k++) {
        char *src = NULL;
        remat_cuda_lanes_info info;
        if ((st = rmi_cuda_lanes_source(p[k], "remat_lanes", &src, &info)) != REMAT_OK)
            break;
        int at = -1;
        for (int i = 0; i < atomic_load(&n_slots) && at < 0; i++) /* the source names m */
            if (strcmp(slots[i].src, src) == 0 && strcmp(slots[i].arch, sm) == 0)
                at = i;
        if (at >= 0)
            rmi_free(src);
        else if ((st = load_slot(src, &info, p[k]->m, sm, compute, &at)) != REMAT_OK)
            rmi_free(src);
        if (st == REMAT_OK)
            out[k] = tramps[at];
    }
    /* an op without a CUDA form is this program's business; anything else
     * (NVRTC, the driver) would fail again: stop trying */
    if (st != REMAT_OK && st != REMAT_ERR_UNSUPPORTED)
        atomic_store(&failed, true);
    pthread_mutex_unlock(&lock);
    return st;
}

/* Whether NVRTC and a device are there and no compile has failed. Whether
 * loops are compiled at all is the compile options' jit mode (REMAT_NO_JIT
 * is read into it by src/core/config.c), which the loop runtimes consult
 * before asking here. */
bool rmi_cuda_can_compile_lanes(void)
{
    if (atomic_load(&failed) || !rmi_nvrtc_available(NULL))
        return false;
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}
