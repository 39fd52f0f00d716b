/* jit_cost.c — gcc's optimisation level for a compilation of lane programs,
 * and what the compilation costs (jit_cost.h).
 *
 * Measured (CPU time of remat_compile with the assembler and linker,
 * REMAT_JIT=always REMAT_NO_CACHE=1, taskset -c 1; design notes, "Compiling
 * only where it pays"): the PFR Euler body (five kernels, 152 instructions)
 * 35 / 44 / 58 ms at -O0 / -O1 / -O3; Robertson's Rodas5
 * body (six unrolled kernels, 6104 instructions) 0.29 / 0.65 / 0.91 / 0.98 s
 * at -O0 / -O1 / -O2 / -O3, running its gradient in 0.535 / 0.200 / 0.204 /
 * 0.201 ms. So a fixed part (~30 ms: the driver, as and ld) and a part per
 * instruction that -O1 cuts by a third and -O0 by 70%, at 2.7x the run time
 * for -O0 and no loss for -O1 on straight-line scalar code; -O3's gain is in
 * loops over lanes (vectorised), which -O1 does not vectorise, so those keep
 * it. gcc's time grows faster than linearly in a function's size (a 5000
 * instruction kernel took seconds): the estimate errs low for such bodies,
 * which then compile a little later than they would pay (scan_tier.h's
 * rent-or-buy bound still holds for the real cost, up to that error).
 */
#include "backend/cpu/jit_cost.h"

#define GCC_NS_FIXED 30e6
#define GCC_NS_PER_INS_O1 0.097e6
#define GCC_NS_PER_INS_O3 0.15e6
/* Unrolled sets past this many instructions compile at -O1: below it the
 * fixed part dominates and -O3 costs little more. */
#define O1_FROM_INS 1000

static int64_t instructions(int n, const remat_lane_program *const *ps, int *scalar)
{
    int64_t ins = 0;
    *scalar = 1;
    for (int k = 0; k < n; k++) {
        ins += ps[k]->n_ins;
        *scalar &= ps[k]->m == 1;
    }
    return ins;
}

int rmi_cpu_jit_level(int n, const remat_lane_program *const *ps)
{
    int scalar;
    const int64_t ins = instructions(n, ps, &scalar);
    return scalar && ins > O1_FROM_INS ? 1 : 3;
}

double rmi_cpu_lanes_compile_ns(int n, const remat_lane_program *const *ps)
{
    int scalar;
    const int64_t ins = instructions(n, ps, &scalar);
    const double per = rmi_cpu_jit_level(n, ps) == 1 ? GCC_NS_PER_INS_O1 : GCC_NS_PER_INS_O3;
    return GCC_NS_FIXED + per * (double)ins;
}
