/*
 * pfr_cuda_hand.c — see pfr_cuda_hand.h. The kernel is the string below;
 * its two loops are pfr_hand.c's pfr_hand_euler_soa for one lane.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "kernels/cuda/lanes_gen.h"
#include "kernels/cuda/nvrtc.h"
#include "pfr_cuda_hand.h"

static const char kernel_src[] =
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "pfr_hand(long long m, long long steps, double h, const double *y0, const double *k1p, const double *k2p,\n"
    "         double *sa, double *sb, double *g1p, double *g2p, double *blp)\n"
    "{\n"
    "    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (j >= m) return;\n"
    "    const double k1 = k1p[j], k2 = k2p[j];\n"
    "    double a = y0[j], b = y0[m + j], c = y0[2 * m + j];\n"
    "    for (long long i = 0; i < steps; i++) {       /* forward: keep (A, B) of step i */\n"
    "        sa[i * m + j] = a, sb[i * m + j] = b;\n"
    "        const double r1 = k1 * a, r2 = k2 * b;\n"
    "        a = a + -r1 * h;\n"
    "        b = b + (r1 - r2) * h;\n"
    "        c = c + r2 * h;\n"
    "    }\n"
    "    blp[j] = b;\n"
    "    double la = 0, lb = -1, lc = 0, g1 = 0, g2 = 0;  /* loss = -sum_j B_j(L) */\n"
    "    for (long long i = steps - 1; i >= 0; i--) {  /* reverse */\n"
    "        const double ai = sa[i * m + j], bi = sb[i * m + j];\n"
    "        const double dab = lb - la, dbc = lc - lb;\n"
    "        g1 += h * ai * dab;\n"
    "        g2 += h * bi * dbc;\n"
    "        la += h * k1 * dab;\n"
    "        lb += h * k2 * dbc;\n"
    "    }\n"
    "    g1p[j] = g1, g2p[j] = g2;\n"
    "}\n";

struct pfr_cuda_hand {
    int64_t m, steps;
    double h;
    double *sa, *sb;
    cudaLibrary_t lib;
    cudaKernel_t k;
};

pfr_cuda_hand *pfr_cuda_hand_new(int64_t m, int64_t steps, double h)
{
    pfr_cuda_hand *H = calloc(1, sizeof *H);
    int dev = 0, major = 0, minor = 0;
    char arch[32], *img = NULL, *log = NULL;
    size_t n = 0;
    if (!H)
        return NULL;
    *H = (pfr_cuda_hand){.m = m, .steps = steps, .h = h};
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    if (rmi_nvrtc_compile(kernel_src, "pfr_cuda_hand.cu", rmi_cuda_lanes_options, arch, REMAT_NVRTC_CUBIN, &img, &n,
                          &log) != REMAT_OK) {
        fprintf(stderr, "pfr_cuda_hand: %s\n%s\n", remat_last_error(), log ? log : "");
        goto fail;
    }
    cudaError_t e = cudaLibraryLoadData(&H->lib, img, NULL, NULL, 0, NULL, NULL, 0);
    if (e == cudaSuccess)
        e = cudaLibraryGetKernel(&H->k, H->lib, "pfr_hand");
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&H->sa, sizeof(double) * (size_t)(m * steps));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&H->sb, sizeof(double) * (size_t)(m * steps));
    if (e != cudaSuccess) {
        fprintf(stderr, "pfr_cuda_hand: %s\n", cudaGetErrorString(e));
        goto fail;
    }
    rmi_free(img), rmi_free(log);
    return H;
fail:
    rmi_free(img), rmi_free(log);
    pfr_cuda_hand_free(H);
    return NULL;
}

void pfr_cuda_hand_free(pfr_cuda_hand *H)
{
    if (!H)
        return;
    cudaFree(H->sa), cudaFree(H->sb);
    if (H->lib)
        cudaLibraryUnload(H->lib);
    free(H);
}

uint64_t pfr_cuda_hand_store_bytes(const pfr_cuda_hand *H) { return 2 * sizeof(double) * (uint64_t)(H->m * H->steps); }

int pfr_cuda_hand_run(pfr_cuda_hand *H, const double *y0, const double *k1, const double *k2, double *g1, double *g2,
                      double *bl)
{
    long long m = H->m, steps = H->steps;
    double h = H->h;
    void *args[] = {&m, &steps, &h, &y0, &k1, &k2, &H->sa, &H->sb, &g1, &g2, &bl};
    const dim3 grid = {(unsigned)((m + 255) / 256), 1, 1}, block = {256, 1, 1};
    return cudaLaunchKernel((const void *)H->k, grid, block, args, 0, 0) == cudaSuccess ? 0 : -1;
}
