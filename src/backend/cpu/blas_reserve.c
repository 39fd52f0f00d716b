/*
 * blas_reserve.c — OpenBLAS under an address-space limit (RLIMIT_AS,
 * `ulimit -v`).
 *
 * OpenBLAS gives every thread that runs a level-3 call one buffer of its
 * compile-time BUFFER_SIZE (128 MiB in Debian's x86-64 builds: the mmap seen
 * under gdb), and when mmap and malloc both fail it retries for ever
 * (blas_memory_alloc): below the limit a process spins instead of failing.
 * So before the first program with a gemm or getrf op is compiled, when the
 * limit is finite, a trial mapping of that size checks that the buffer fits
 * and a gemm on the buffered path then has OpenBLAS take it at once, so that
 * later allocations cannot take its room; a buffer that does not fit is
 * REMAT_ERR_NOMEM at compile time. Threads OpenBLAS starts itself take one
 * buffer each before main: the remat tool runs with OPENBLAS_NUM_THREADS=1
 * under a limit (tools/remat/main.c).
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "backend/cpu/cpu_kernels.h"
#include "core/error.h"

/* BUFFER_SIZE plus the page OpenBLAS adds for alignment, and a margin for
 * the gemm's own operands */
#define BLAS_BUFFER_BYTES ((size_t)128 << 20)
#define BLAS_MARGIN_BYTES ((size_t)4 << 20)
/* past OpenBLAS's small-matrix kernels (no buffer) on every x86 target */
#define TOUCH_N 192

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char why[256]; /* empty: OpenBLAS has what it needs */

static void reserve(void)
{
    struct rlimit rl;
    if (!REMAT_HAVE_OPENBLAS) /* the reference BLAS allocates nothing of its own */
        return;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    size_t need = BLAS_BUFFER_BYTES + BLAS_MARGIN_BYTES;
    void *p = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double *m = NULL;
    if (p != MAP_FAILED) {
        munmap(p, need);
        m = calloc((size_t)3 * TOUCH_N * TOUCH_N, sizeof *m);
    }
    if (p == MAP_FAILED || !m) {
        snprintf(why, sizeof why,
                 "out of memory: OpenBLAS needs a %zu MiB buffer for matrix products and the address-space "
                 "limit (RLIMIT_AS, ulimit -v %llu KiB) leaves less; raise the limit",
                 BLAS_BUFFER_BYTES >> 20, (unsigned long long)(rl.rlim_cur >> 10));
        return;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, TOUCH_N, TOUCH_N, TOUCH_N, 1.0, m, TOUCH_N,
                m + TOUCH_N * TOUCH_N, TOUCH_N, 0.0, m + 2 * TOUCH_N * TOUCH_N, TOUCH_N);
    free(m);
}

remat_status rmi_cpu_blas_reserve(void)
{
    pthread_once(&once, reserve);
    return why[0] ? rmi_error(REMAT_ERR_NOMEM, "cpu backend: %s", why) : REMAT_OK;
}
