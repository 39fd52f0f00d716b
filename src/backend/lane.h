/*
 * lane.h (internal) — lane programs: the scalar code of one loop step, run
 * for m independent lanes, and compiled by a backend into one native loop.
 *
 * A scan whose body is elementwise along one axis of size m (a batch of
 * independent problems, or m = 1: a small state such as an ODE right-hand
 * side) does the same scalar arithmetic for every index j of that axis. The
 * scan module (src/lanes/translate.c) translates the body into this form;
 * the backend only sees scalar instructions and buffers, never a graph.
 *
 * Registers are instruction indices: LOAD, CONST and OP instruction i
 * defines register i (each once per lane and step); STORE defines none.
 * Buffer element (off + j * lstride) is lane j's (lstride 0: every lane
 * reads the same element). In each lane and step every LOAD comes before
 * every STORE (the translator orders them so), which is what lets a state
 * buffer be read and written in place.
 *
 * Running a compiled program for `count` steps, step s (0-based) uses
 * buffer b at bufs[b] + s * strides[b] bytes (strides may be negative or
 * zero), for lanes j = 0 .. lanes-1 (m == 1: the one lane, `lanes` not
 * read). The lane count is the caller's at run time, so that one compiled
 * program runs any range of lanes [lo, hi) of its m: with every buffer
 * pointer moved by lo lanes (lo * lstride elements) and lanes = hi - lo, it
 * computes exactly what a run over all m lanes computes for those lanes,
 * when the lanes are independent (no SUM0/ACC, no post; a STORE with
 * lstride 0 is then written by every range). Callers with sums across
 * lanes pass lanes = m. A backend must give the bits the CPU kernels give for the same ops
 * (backend/cpu/elementwise.c), op by op, in instruction order. (NaN results
 * are NaN either way, but their sign and payload may differ: a compiler may
 * swap the operands of a commutative op, and which NaN propagates follows
 * the operand order.)
 */
#ifndef REMAT_BACKEND_LANE_H
#define REMAT_BACKEND_LANE_H

#include <stdint.h>

#include "remat/op.h"
#include "remat/status.h"
#include "remat/tensor.h"

typedef enum {
    REMAT_LANE_LOAD = 0, /* r = buf[off + j*lstride] */
    REMAT_LANE_CONST,    /* r = imm (converted to dt) */
    REMAT_LANE_OP,       /* r = op(a[, b[, c]]): an elementwise remat_op */
    REMAT_LANE_STORE,    /* buf[off + j*lstride] = a */
    REMAT_LANE_SUM0,     /* r = +0 once per step, before the lanes: a sum across lanes */
    REMAT_LANE_ACC,      /* a (a SUM0 register) = a + b, in each lane in turn */
    REMAT_LANE_EXIT,     /* after this step: if a == 0, buf[off] = steps run, and stop (below) */
} remat_lane_kind;

/*
 * Loops with a conditional exit ("iterate while cond, at most count
 * times": a while loop's body, src/scan/while_lanes.c). EXIT is the last
 * instruction of a program, after its stores; a is a register that is the
 * same in every lane (m == 1, or a post register). When a step computes
 * a == 0, that step is complete (its stores done) and the run stops: the
 * number of steps it ran, s + 1 for 0-based step s, is written to element
 * `off` of buffer `buf` (lstride 0, at the step's pointer, in the buffer's
 * dtype: exact to 2^24 steps in f32, 2^53 in f64), and the state buffers
 * are written back as at the end of a run. A run that does not stop that
 * way leaves that element alone: the caller presets it (to count, or -1)
 * and reads it after the call. A flag, not a return value, so that the
 * function type stays the same on every backend (a CUDA kernel cannot
 * return one).
 */

/*
 * Sums across lanes. A SUM0 register starts each step at +0; ACC adds to
 * it in lane order j = 0 .. m-1 (and instruction order within a lane), one
 * rounding per addition, as the CPU reduce kernel sums. Its value is
 * complete only after the last lane, so only `post` instructions read it:
 * those run once per step, after the lanes, in order, and read registers
 * that are either post or the same in every lane (CONST, LOAD with lstride
 * 0, ops of those). A post STORE writes lstride-0 elements (an accumulator
 * of a state buffer, a y_t summed over the batch).
 */
typedef struct {
    uint8_t kind;  /* remat_lane_kind */
    uint8_t dt;    /* remat_dtype of the register (STORE: of the buffer) */
    uint16_t op;   /* OP: the remat_op (CONVERT: from a's dtype to dt) */
    uint8_t post;  /* OP/LOAD/STORE: run once per step after the lanes (see above) */
    int32_t a, b, c;
    int32_t buf;   /* LOAD/STORE/EXIT */
    int64_t off, lstride; /* LOAD/STORE (EXIT: off), in elements */
    double imm;    /* CONST: the value; POW: the exponent; INTEGER_POW: the exponent */
} remat_lane_ins;

typedef struct {
    uint8_t dt;    /* element dtype */
    /* Read and written at the same elements every step (stride 0): a carry
     * updated in place, an accumulator. A backend may keep it in registers
     * between steps. */
    uint8_t state;
} remat_lane_buf;

typedef struct {
    int64_t m; /* lanes, >= 1 */
    int n_ins;
    const remat_lane_ins *ins;
    int n_bufs;
    const remat_lane_buf *bufs;
} remat_lane_program;

/* lu and linear_solve of systems up to this size are unrolled into lane
 * programs (src/lanes/solve.c); the CPU kernels use the same
 * elimination (backend/linalg.c), so both give the same bits. */
#define REMAT_LANE_SOLVE_MAX_N REMAT_LU_SMALL_N

typedef void (*remat_lane_fn)(char *const *bufs, const int64_t *strides, int64_t count, int64_t lanes);

/* A backend compiles lane programs through its optional vtable entries
 * `compile_lanes` and `can_compile_lanes` (backend_impl.h); the CPU
 * backend's are backend/cpu/jit.c (libgccjit), absent without it. Any
 * failure means "interpret the body op by op instead": REMAT_NO_JIT=1 in
 * the environment at compile time, an earlier compile failure, or an op
 * the compiler does not know. */

#endif
