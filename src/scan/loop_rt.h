/*
 * loop_rt.h (internal) — what the runtimes of the two loop nodes share:
 * scan (scan_runtime.c, scan_exec_interp.c) and while (while_lower.c,
 * while_exec.c, while_runtime.c). Both lower a body's cut VJP
 * (scan_impl.h) into the program, add the consts' cotangents with one
 * backend add per const, point the forward half's taped residuals into a
 * tape and the backward half's back out of it, and report their runs and
 * stores to the memory plan alike. What differs (a scan's xs and ys, a
 * while's flags and rejected iterations) stays in each node's files.
 */
#ifndef REMAT_LOOP_RT_H
#define REMAT_LOOP_RT_H

#include "exec/hop.h"
#include "scan/scan_impl.h"

static inline void rmi_loop_rt_swap(char **a, char **b)
{
    char *t = *a;
    *a = *b;
    *b = t;
}

/* one step's bytes of a carry, x_t, y_t or const */
static inline size_t rmi_loop_rt_bytes(const scan_desc *s)
{
    return (size_t)remat_shape_numel(&s->shape) * remat_dtype_size(s->dt);
}

/* The forward half's taped residuals into tape tp: its outputs res[0..n)
 * are residuals taped[0..n), at off[taped[t]] in a tape. */
static inline void rmi_loop_rt_tape_out(void **res, char *tp, const size_t *off, const int *taped, int n)
{
    for (int t = 0; t < n; t++)
        res[t] = tp + off[taped[t]];
}

/* The backward half's inputs of those residuals, from tape tp. */
static inline void rmi_loop_rt_tape_in(const void **in, const char *tp, const size_t *off, const int *taped, int n)
{
    for (int t = 0; t < n; t++) {
        const int j = taped[t];
        in[j] = tp + off[j];
    }
}

/* After a reversed step wrote each const's share at tmp + k_off[i]:
 * acc[1] = acc[0] + share with add[i], then acc[0] is the sum. Steps are
 * reversed last to first under every schedule, so the sum's order (and its
 * bits) does not depend on the schedule. */
static inline void rmi_loop_rt_add_ct_ks(remat_instr *add, int nk, char *acc[2], char *tmp, const size_t *k_off)
{
    for (int i = 0; i < nk; i++) {
        remat_instr *A = &add[i];
        A->in[0] = acc[0] + k_off[i];
        A->in[1] = tmp + k_off[i];
        A->out = acc[1] + k_off[i];
        A->fn(A);
    }
    if (nk > 0)
        rmi_loop_rt_swap(&acc[0], &acc[1]);
}

/* a run's evaluations and peak store into the run's stats (remat_hop_stats.report_run) */
static inline void rmi_loop_rt_report_run(int64_t evals, size_t peak_bytes, remat_stats *st)
{
    st->forward_evals += evals;
    if (peak_bytes > st->peak_snapshot_bytes)
        st->peak_snapshot_bytes = peak_bytes;
}

/* a node's store of `bytes` into the plan when it is the largest so far
 * (ties: the later node), with its carry's and tape's sizes */
static inline void rmi_loop_rt_plan_store(remat_memory_plan *plan, size_t bytes, size_t carry_bytes,
                                          size_t tape_bytes)
{
    if (bytes >= plan->peak_snapshot_bytes) {
        plan->peak_snapshot_bytes = bytes;
        plan->scan_carry_bytes = carry_bytes;
        plan->scan_tape_bytes = tape_bytes;
    }
}

/* loop_lower.c */
/* A copy of v in the program's memory (the program outlives the function
 * that holds v), without its functions (only lowering reads them); NULL
 * when out of memory. */
scan_body_vjp *rmi_loop_rt_keep_vjp(const scan_body_vjp *v, remat_hop_lowering *L);
/* The backend's add for each of the nk consts ks[0..nk) into *out (nk + 1
 * instructions, in the program's memory); out of memory: a message naming
 * `what` (the loop kind or its label). */
remat_status rmi_loop_rt_lower_k_adds(const scan_desc *ks, int nk, const char *what, remat_hop_lowering *L,
                                      remat_instr **out);

#endif
