/*
 * pfr_cuda_hand.h — the hand-written CUDA store-all discrete adjoint of the
 * A->B->C plug-flow reactor ensemble (pfr_hand.h's pfr_hand_euler_soa on the
 * GPU), the reference bench_cuda holds remat's compiled scans against.
 *
 * One thread per lane: the forward Euler loop keeps (A, B) of every step in
 * global memory, lane-fastest ((steps, m) each: a warp's stores coalesce),
 * the state in registers; then the reverse sweep reads them back and carries
 * lambda and the gradient in registers. Compiled by NVRTC at run time with
 * the lane kernels' options (--fmad=false, IEEE division), the arithmetic in
 * the order remat's Euler step forms it, so the gradient's bits can be
 * compared with remat's.
 *
 * Traffic: 16 bytes written and 16 read per lane-step (A and B as f64),
 * plus k1, k2, y0 and the outputs once per lane.
 */
#ifndef BENCH_PFR_CUDA_HAND_H
#define BENCH_PFR_CUDA_HAND_H

#include <stdint.h>

typedef struct pfr_cuda_hand pfr_cuda_hand;

/* Compiles the kernel and allocates its store for m lanes and `steps`
 * steps; NULL with a message on stderr when it cannot. */
pfr_cuda_hand *pfr_cuda_hand_new(int64_t m, int64_t steps, double h);
void pfr_cuda_hand_free(pfr_cuda_hand *H);

/* Device arrays: y0 (3, m) (rows A, B, C), k1, k2 (m,); out: g1, g2 (m,)
 * d loss/d k, bl (m,) B at the end (loss = -sum bl). Asynchronous on
 * stream 0; returns 0, or -1 when the launch failed. */
int pfr_cuda_hand_run(pfr_cuda_hand *H, const double *y0, const double *k1, const double *k2, double *g1, double *g2,
                      double *bl);

/* the store's bytes (for the memory figures) */
uint64_t pfr_cuda_hand_store_bytes(const pfr_cuda_hand *H);

#endif
