/* run.c — checking a call against the program's signature and executing it. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core/assert.h"
#include "core/error.h"
#include "exec/passes.h"
#include "exec/hop.h"
#include "exec/program_impl.h"

static remat_status check_tensors(const char *what, int n, const remat_tensor *t, int want,
                                  const remat_tensor *desc, const char *const *names)
{
    char a[128], b[128];
    if (n != want)
        return rmi_error(REMAT_ERR_ARG, "run: %d %s given, the program takes %d", n, what, want);
    if (want > 0 && !t)
        return rmi_error(REMAT_ERR_NULL, "run: %s array is NULL", what);
    for (int i = 0; i < n; i++) {
        const char *nm = names ? names[i] : "";
        if (!t[i].data && remat_shape_numel(&desc[i].shape) > 0)
            return rmi_error(REMAT_ERR_NULL, "run: %s %d%s%s%s has NULL data", what, i, *nm ? " ('" : "", nm,
                             *nm ? "')" : "");
        if (t[i].dtype != desc[i].dtype || !remat_shape_equal(&t[i].shape, &desc[i].shape))
            return rmi_error(t[i].dtype != desc[i].dtype ? REMAT_ERR_DTYPE : REMAT_ERR_SHAPE,
                             "run: %s %d%s%s%s is %s, expected %s", what, i, *nm ? " ('" : "", nm, *nm ? "')" : "",
                             remat_shape_format(t[i].dtype, &t[i].shape, a, sizeof a),
                             remat_shape_format(desc[i].dtype, &desc[i].shape, b, sizeof b));
    }
    return REMAT_OK;
}

/* Byte range [lo, hi) of a tensor already checked against its descriptor. */
static int byte_range(const remat_tensor *t, uintptr_t *lo, uintptr_t *hi)
{
    size_t n = remat_tensor_bytes(t);
    if (!t->data || n == 0)
        return 0; /* an empty tensor touches no memory */
    *lo = (uintptr_t)t->data;
    *hi = *lo + n;
    return 1;
}

/* Kernels write outputs while still reading inputs (and other outputs), so
 * an output sharing bytes with either gives results that depend on the
 * execution order. Quadratic in the count, which is small. */
static remat_status check_overlap(int n_in, const remat_tensor *in, int n_out, const remat_tensor *out)
{
    for (int j = 0; j < n_out; j++) {
        uintptr_t lo, hi, l2, h2;
        if (!byte_range(&out[j], &lo, &hi))
            continue;
        for (int i = 0; i < n_in; i++)
            if (byte_range(&in[i], &l2, &h2) && lo < h2 && l2 < hi)
                return rmi_error(REMAT_ERR_ARG, "run: output %d overlaps input %d in memory", j, i);
        for (int k = 0; k < j; k++)
            if (byte_range(&out[k], &l2, &h2) && lo < h2 && l2 < hi)
                return rmi_error(REMAT_ERR_ARG, "run: output %d overlaps output %d in memory", j, k);
    }
    return REMAT_OK;
}

static void run_instrs(const remat_exec_ctx *cx, const remat_program *p)
{
    const remat_instr *I = p->instrs, *end = p->instrs + p->n_instrs;
    for (; I < end; I++)
        I->fn(cx, I);
}

/* The same, measuring the arena high-water mark: the furthest any executed
 * instruction wrote into the arena. Used for a root run and for the first
 * execution of a loop body in it (later ones execute the same instructions). */
static size_t run_measured(const remat_exec_ctx *cx, const remat_program *p)
{
    size_t hw = 0;
    const remat_instr *I = p->instrs, *end = p->instrs + p->n_instrs;
    for (; I < end; I++) {
        I->fn(cx, I);
        if (I->arena_end > hw)
            hw = I->arena_end;
    }
    return hw;
}

/* Points the instruction slots that read inputs / write outputs at this
 * call's buffers. A loop body does this every step: the input patches come
 * first (compile.c), so each loop is a load and a store per slot. */
static void apply_patches(const remat_program *p, const void *const *in, void *const *out)
{
    const remat_patch *pt = p->patches, *mid = pt + p->n_in_patches, *end = pt + p->n_patches;
    for (; pt < mid; pt++)
        *pt->slot = (const char *)in[pt->index] + pt->off;
    for (; pt < end; pt++)
        *pt->slot = (char *)out[pt->index] + pt->off;
}

/* A device backend (copy_in set): the staging block the caller's host
 * buffers are copied through, inputs then outputs; NULL when out of memory. */
static size_t io_off(const remat_program *p, int k) /* k: input k, or output k - n_in */
{
    size_t off = 0;
    for (int i = 0; i < k; i++) {
        const remat_tensor *d = i < p->n_in ? &p->in_desc[i] : &p->out_desc[i - p->n_in];
        off += (remat_tensor_bytes(d) + REMAT_ARENA_ALIGN - 1) / REMAT_ARENA_ALIGN * REMAT_ARENA_ALIGN;
    }
    return off;
}

/* The run's context (backend_impl.h remat_exec_ctx): the program's backend
 * and state, the state made at the first run of a device backend. */
static remat_status open_ctx(remat_program *p, remat_exec_ctx *cx)
{
    const remat_backend_iface *be = &p->be->iface;
    if (!p->be_state && be->program_new && !(p->be_state = be->program_new(p->be)))
        return rmi_error(REMAT_ERR_BACKEND, "run: %s backend: no stream for the program: %s", be->name,
                         remat_last_error());
    *cx = (remat_exec_ctx){.be = p->be, .state = p->be_state};
    return REMAT_OK;
}

/* Points the patches at the caller's buffers (in place), or at the staging
 * block after copying the inputs in (a device backend given host memory). */
static remat_status bind_buffers(const remat_exec_ctx *cx, remat_program *p, const remat_tensor *inputs,
                                 remat_tensor *outputs, bool staged)
{
    const remat_backend_iface *be = &p->be->iface;
    const remat_patch *pt = p->patches, *mid = pt + p->n_in_patches, *end = pt + p->n_patches;
    if (!staged) {
        for (; pt < mid; pt++)
            *pt->slot = (char *)inputs[pt->index].data + pt->off;
        for (; pt < end; pt++)
            *pt->slot = (char *)outputs[pt->index].data + pt->off;
        return REMAT_OK;
    }
    if (!p->io) {
        p->io_bytes = io_off(p, p->n_in + p->n_out);
        if (!(p->io = be->mem_alloc(cx, p->io_bytes ? p->io_bytes : REMAT_ARENA_ALIGN)))
            return rmi_error(REMAT_ERR_NOMEM, "run: %s backend: out of memory for %zu bytes of inputs and outputs",
                             be->name, p->io_bytes);
    }
    char *io = p->io;
    for (int i = 0; i < p->n_in; i++)
        if (remat_tensor_bytes(&inputs[i]))
            be->copy_in(cx, io + io_off(p, i), inputs[i].data, remat_tensor_bytes(&inputs[i]));
    for (; pt < mid; pt++)
        *pt->slot = io + io_off(p, pt->index) + pt->off;
    for (; pt < end; pt++)
        *pt->slot = io + io_off(p, p->n_in + pt->index) + pt->off;
    return REMAT_OK;
}

static remat_status run_common(remat_program *p, int n_in, const remat_tensor *inputs, int n_out,
                               remat_tensor *outputs, remat_stats *stats, bool on_device)
{
    if (!p)
        return rmi_error(REMAT_ERR_NULL, "run: program is NULL");
    remat_status st = check_tensors("inputs", n_in, inputs, p->n_in, p->in_desc, p->in_names);
    if (st == REMAT_OK)
        st = check_tensors("outputs", n_out, outputs, p->n_out, p->out_desc, NULL);
    if (st == REMAT_OK)
        st = check_overlap(n_in, inputs, n_out, outputs);
    remat_exec_ctx cx = {.be = p->be, .state = NULL};
    if (st == REMAT_OK)
        st = open_ctx(p, &cx);
    const remat_backend_iface *be = &p->be->iface;
    const bool staged = be->copy_in && !on_device;
    if (st == REMAT_OK)
        st = bind_buffers(&cx, p, inputs, outputs, staged);
    if (st != REMAT_OK)
        return st;
    remat_exec_counters *C = p->counters;
    for (int i = 0; i < C->n_hooks; i++)
        C->hooks[i].begin_run(&cx, C->hooks[i].self);
    for (int i = 0; i < C->n_hooks; i++) /* one that cannot start (the tier's file): before anything runs */
        if (C->hooks[i].run_status && (st = C->hooks[i].run_status(C->hooks[i].self)) != REMAT_OK) {
            const char *why = C->hooks[i].run_error ? C->hooks[i].run_error(C->hooks[i].self) : NULL;
            return rmi_error(st, "run: %s", why ? why : remat_status_name(st));
        }
    for (int i = 0; i < C->n_subs; i++)
        C->subs[i]->runs = 0, C->subs[i]->hw_max = 0;
    struct timespec t0, t1;
    if (stats)
        clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t hw = run_measured(&cx, p);
    for (int i = 0; i < C->n_hooks; i++) {
        st = C->hooks[i].run_status ? C->hooks[i].run_status(C->hooks[i].self) : REMAT_OK;
        if (st != REMAT_OK) { /* set the message here: it may have failed on another thread */
            const char *why = C->hooks[i].run_error ? C->hooks[i].run_error(C->hooks[i].self) : NULL;
            if (why)
                return rmi_error(st, "run: %s", why);
            return rmi_error(st, "run: a loop could not run: %s",
                             st == REMAT_ERR_NOMEM ? "out of memory replaying its schedule" : remat_status_name(st));
        }
    }
    for (int j = 0; staged && j < p->n_out; j++)
        if (remat_tensor_bytes(&outputs[j]))
            be->copy_out(&cx, outputs[j].data, (char *)p->io + io_off(p, p->n_in + j), remat_tensor_bytes(&outputs[j]));
    if (be->finish && (st = be->finish(&cx)) != REMAT_OK)
        return st;
    if (stats) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        memset(stats, 0, sizeof *stats);
        stats->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        stats->peak_arena_bytes = hw;
        stats->residual_bytes = p->residual_bytes;
        stats->ops_executed = p->n_instrs - p->n_copies + p->n_fused;
        stats->recomputed_ops = p->recompute_instrs;
        memcpy(stats->op_counts, p->op_counts, sizeof stats->op_counts);
        for (int i = 0; i < C->n_hooks; i++)
            C->hooks[i].report_run(C->hooks[i].self, stats);
        for (int i = 0; i < C->n_subs; i++) { /* loop bodies: static counts x runs */
            const remat_program *s = C->subs[i];
            stats->peak_arena_bytes += s->hw_max;
            stats->ops_executed += s->runs * (s->n_instrs - s->n_copies + s->n_fused);
            stats->recomputed_ops += s->runs * s->recompute_instrs;
            for (int k = 0; k < REMAT_OP_COUNT; k++)
                stats->op_counts[k] += s->runs * s->op_counts[k];
        }
        for (int k = 0; be->on_host && k < REMAT_OP_COUNT; k++)
            if (be->on_host((remat_op)k))
                stats->host_ops += stats->op_counts[k];
    }
    return REMAT_OK;
}

remat_status remat_run(remat_program *p, int n_in, const remat_tensor *inputs, int n_out, remat_tensor *outputs,
                       remat_stats *stats)
{
    return run_common(p, n_in, inputs, n_out, outputs, stats, false);
}

remat_status remat_run_device(remat_program *p, int n_in, const remat_tensor *inputs, int n_out,
                              remat_tensor *outputs, remat_stats *stats)
{
    return run_common(p, n_in, inputs, n_out, outputs, stats, true);
}

void rmi_program_exec(const remat_exec_ctx *cx, remat_program *p, const void *const *in, void *const *out)
{
    REMAT_ASSERT(!p->elsewhere);
    apply_patches(p, in, out);
    if (p->runs == 0) { /* the first execution since the root's run began */
        size_t hw = run_measured(cx, p);
        if (hw > p->hw_max)
            p->hw_max = hw;
    } else {
        run_instrs(cx, p);
    }
    p->runs++;
}

void rmi_program_run_elsewhere(remat_program *p)
{
    if (p->arena) /* at lowering (no run's context): mem_free needs none */
        p->be->iface.mem_free(&(remat_exec_ctx){.be = p->be, .state = NULL}, p->arena);
    p->arena = NULL;
    p->arena_bytes = 0;
    p->elsewhere = true;
}

void rmi_program_add_runs(remat_program *p, int64_t n)
{
    if (p)
        p->runs += n;
}

void remat_program_plan(const remat_program *p, remat_memory_plan *plan)
{
    REMAT_NULL_RETURN(p, );
    REMAT_NULL_RETURN(plan, );
    *plan = (remat_memory_plan){
        .arena_bytes = p->arena_bytes,
        .residual_bytes = p->residual_bytes,
        .residual_arg_bytes = p->residual_arg_bytes,
        .constant_bytes = p->const_bytes,
        .instructions = p->n_instrs - p->n_copies + p->n_fused,
        .recompute_instructions = p->recompute_instrs,
    };
    for (int i = 0; i < p->counters->n_hooks; i++)
        p->counters->hooks[i].report_plan(p->counters->hooks[i].self, plan);
    for (int i = 0; i < p->counters->n_subs; i++) /* loop bodies have arenas of their own */
        plan->arena_bytes += p->counters->subs[i]->arena_bytes;
}

int remat_program_num_inputs(const remat_program *p)
{
    REMAT_NULL_RETURN(p, 0);
    return p->n_in;
}

int remat_program_num_outputs(const remat_program *p)
{
    REMAT_NULL_RETURN(p, 0);
    return p->n_out;
}

static remat_tensor bad_desc(const remat_program *p, const char *what, int i)
{
    rmi_error(p ? REMAT_ERR_ARG : REMAT_ERR_NULL, "%s: %s %d", what, p ? "no such index" : "program is NULL", i);
    return (remat_tensor){.dtype = REMAT_DTYPE_COUNT, .shape = {.rank = -1}};
}

remat_tensor remat_program_input_desc(const remat_program *p, int i)
{
    if (!p || i < 0 || i >= p->n_in)
        return bad_desc(p, "remat_program_input_desc", i);
    return p->in_desc[i];
}

remat_tensor remat_program_output_desc(const remat_program *p, int i)
{
    if (!p || i < 0 || i >= p->n_out)
        return bad_desc(p, "remat_program_output_desc", i);
    return p->out_desc[i];
}
