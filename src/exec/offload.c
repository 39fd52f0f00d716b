/*
 * offload.c — offloaded residuals (a policy's REMAT_POLICY_OFFLOAD, JAX's
 * Offloadable): reverse mode marks a forward value's name node OFFLOAD and
 * its reader in the backward RELOAD (ad/node.h). Here the OFFLOAD node is an
 * instruction that writes its operand to the slow tier and has no arena
 * storage (ST_TIER: bytes into the tier); the RELOAD node is an instruction
 * that reads it back into an arena buffer of its own. So the value's arena
 * buffer ends at the write and a new one starts at the read: between them
 * it costs the arena nothing.
 *
 * The tier on the CPU is one file per program run under
 * remat_compile_options.tier_dir (as the scans' slow tier, scan/loop_slow.c):
 * made with mkstemp and unlinked at once (nothing is left behind), reserved
 * in full with posix_fallocate when the run begins (core/tier_file.h), so a full or unwritable
 * directory fails the run before any instruction runs; each offloaded value
 * has its own place, planned at compile (remat_memory_plan.offload_bytes),
 * and the run measures the extent it wrote (remat_stats.offload_bytes).
 * The copy is exact, so gradients are those of the policy saving the same
 * values, bit for bit. On a device backend (one with copy_in/copy_out:
 * CUDA) the tier is host memory the program holds, written and read with
 * the backend's synchronised copies as its custom ops stage their operands
 * (kernels/cuda/custom.c). With the backend's host_alloc (CUDA: pinned,
 * cudaHostAlloc) that memory is taken when the run begins and given back by
 * the program's last tier instruction, as the file is made and closed
 * (CUDA keeps the block in the run's state for the next run:
 * kernels/cuda/pinned.h);
 * without it, it is plain host memory the program holds (pageable, JAX's
 * unpinned_host), whichever kind the policy names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/tier_file.h"
#include "exec/passes.h"

struct rmi_offload_store {
    const remat_backend_iface *dev; /* a device backend: the tier is `host`, else a file */
    char *host;
    bool pinned;         /* host comes from dev->host_alloc each run (NULL between runs) */
    remat_exec_ctx host_cx; /* the run's context host came from: given back to the same state */
    const char *dir;
    int64_t max_bytes;   /* remat_compile_options.tier_max_bytes (0: the disk's room) */
    size_t bytes;        /* planned: the tier's extent */
    size_t hi;           /* measured: the furthest byte written this run */
    int fd;              /* -1 between runs */
    remat_status status; /* of this run */
    char why[512];
};

typedef struct {
    rmi_offload_store *s;
    size_t off, bytes;
    bool last; /* the program's last tier instruction: it closes the file */
} offload_io;

static void store_close(rmi_offload_store *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    if (s->pinned && s->host)
        s->dev->host_free(&s->host_cx, s->host);
    if (s->pinned)
        s->host = NULL;
}

static void io_fail(rmi_offload_store *s, bool write, const offload_io *o, const char *why)
{
    if (s->status != REMAT_OK)
        return;
    s->status = REMAT_ERR_IO;
    snprintf(s->why, sizeof s->why, "offloaded residuals: %s %zu bytes at offset %zu of the tier file in '%s': %s",
             write ? "writing" : "reading", o->bytes, o->off, s->dir, why);
}

static void tier_io(const remat_exec_ctx *cx, const remat_instr *I, bool write)
{
    const offload_io *o = I->aux;
    rmi_offload_store *s = o->s;
    size_t done = 0;
    if (s->dev) { /* a device's values through host memory */
        if (!s->host) {
            if (s->status == REMAT_OK)
                io_fail(s, write, o, "the tier's host memory is not allocated (an instruction ran outside its "
                                     "program's run)");
            return;
        }
        if (write)
            s->dev->copy_out(cx, s->host + o->off, I->in[0], o->bytes);
        else
            s->dev->copy_in(cx, I->out, s->host + o->off, o->bytes);
        done = o->bytes;
    } else if (s->fd < 0 && s->status == REMAT_OK)
        io_fail(s, write, o, "the tier file is not open (an instruction ran outside its program's run)");
    while (s->fd >= 0 && s->status == REMAT_OK && done < o->bytes) {
        const off_t at = (off_t)(o->off + done);
        const ssize_t k = write ? pwrite(s->fd, (const char *)I->in[0] + done, o->bytes - done, at)
                                : pread(s->fd, (char *)I->out + done, o->bytes - done, at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            io_fail(s, write, o, k < 0 ? strerror(errno) : "end of file");
        else
            done += (size_t)k;
    }
    if (write && done == o->bytes && o->off + o->bytes > s->hi)
        s->hi = o->off + o->bytes;
    if (o->last)
        store_close(s);
}

static void tier_write(const remat_exec_ctx *cx, const remat_instr *I) { tier_io(cx, I, true); }
static void tier_read(const remat_exec_ctx *cx, const remat_instr *I) { tier_io(cx, I, false); }

/* the run's file: made, unlinked, reserved in full */
static void begin_run(const remat_exec_ctx *cx, void *self)
{
    rmi_offload_store *s = self;
    store_close(s); /* a run cut short left it open */
    s->status = REMAT_OK, s->hi = 0, s->why[0] = 0;
    if (s->pinned) {
        s->host_cx = *cx; /* CUDA: the root's state, whose kept block serves the next run too */
        if (!(s->host = s->dev->host_alloc(cx, s->bytes))) {
            s->status = REMAT_ERR_NOMEM;
            snprintf(s->why, sizeof s->why,
                     "offloaded residuals: cannot allocate %zu bytes of host memory for the tier (backend '%s')",
                     s->bytes, s->dev->name);
        }
        return;
    }
    if (s->dev)
        return;
    const int fd = rmi_tier_file_open(s->dir, "remat-offload", s->bytes, s->max_bytes, "offloaded residuals", "tier");
    if (fd < 0) {
        s->status = REMAT_ERR_IO;
        snprintf(s->why, sizeof s->why, "%s", remat_last_error());
        return;
    }
    s->fd = fd;
}

static remat_status run_status(const void *self) { return ((const rmi_offload_store *)self)->status; }
static const char *run_error(const void *self) { return ((const rmi_offload_store *)self)->why; }

static void report_run(const void *self, remat_stats *stats)
{
    stats->offload_bytes += ((const rmi_offload_store *)self)->hi;
}

static void report_plan(const void *self, remat_memory_plan *plan)
{
    plan->offload_bytes += ((const rmi_offload_store *)self)->bytes;
}

/* Which OFFLOAD nodes go to the tier: those every live reader of which is a
 * RELOAD node and that are no output (else they stay plain names). */
remat_status rmi_offload_mark(remat_compile_ctx *c, uint8_t **tier)
{
    const remat_graph_view *g = c->g;
    *tier = NULL;
    bool any = false;
    for (int32_t i = 0; i < c->n_order && !any; i++)
        any = (g->nodes[c->order[i]].flags & REMAT_NODE_OFFLOAD) != 0;
    /* a loop body's sub-program runs many times inside one root run: its
       values stay plain names (a body's residuals are the loop's tape) */
    if (!any || c->p->counters != &c->p->own_counters)
        return REMAT_OK;
    uint8_t *t = rmi_calloc((size_t)g->n_nodes + 1, 1);
    if (!t)
        return rmi_compile_nomem("the offloaded residuals");
    for (int32_t i = 0; i < c->n_order; i++)
        if (g->nodes[c->order[i]].flags & REMAT_NODE_OFFLOAD)
            t[c->order[i]] = 1;
    for (int32_t i = 0; i < c->n_order; i++) {
        const remat_node *n = &g->nodes[c->order[i]];
        for (int k = 0; k < n->nin; k++)
            if (!(n->flags & REMAT_NODE_RELOAD) || n->op != REMAT_OP_NAME)
                t[n->in[k]] = 0;
    }
    for (int j = 0; j < g->n_outs; j++)
        t[g->outs[j]] = 0;
    *tier = t;
    return REMAT_OK;
}

/* An OFFLOAD node's instruction: its place in the tier */
remat_status rmi_offload_storage(remat_compile_ctx *c, int32_t v)
{
    remat_cnode *R = &c->N[v];
    R->instr = c->n_instr++;
    R->st = (remat_storage){.kind = ST_TIER, .view = c->tier_bytes};
    c->tier_bytes += (rmi_node_bytes(&c->g->nodes[v]) + REMAT_ARENA_ALIGN - 1) / REMAT_ARENA_ALIGN * REMAT_ARENA_ALIGN;
    return REMAT_OK;
}

/* The instruction of an OFFLOAD (write) or RELOAD (read) node whose
 * operand or own storage is planned; in/out resolved by the caller. */
remat_status rmi_offload_lower(remat_compile_ctx *c, int32_t v, remat_instr *I, bool last)
{
    remat_program *p = c->p;
    const remat_node *n = &c->g->nodes[v];
    if (!c->offload) {
        rmi_offload_store *s = rmi_prog_alloc(p, sizeof *s);
        const char *dir = p->counters->opts.tier_dir;
        if (!s)
            return rmi_compile_nomem("the offloaded residuals' store");
        *s = (rmi_offload_store){.dir = dir ? dir : "/tmp", .max_bytes = p->counters->opts.tier_max_bytes,
                                 .bytes = c->tier_bytes, .fd = -1};
        if (c->be->iface.copy_in) {
            s->dev = &c->be->iface;
            s->pinned = s->dev->host_alloc && s->dev->host_free;
            if (!s->pinned && !(s->host = rmi_prog_alloc(p, c->tier_bytes)))
                return rmi_compile_nomem("the offloaded residuals' host memory");
        }
        const remat_hop_stats hook = {.begin_run = begin_run, .report_run = report_run, .report_plan = report_plan,
                                      .run_status = run_status, .run_error = run_error, .self = s};
        remat_status st = rmi_hop_stats_add(p->counters, &hook);
        if (st != REMAT_OK)
            return st;
        c->offload = s;
    }
    offload_io *o = rmi_prog_alloc(p, sizeof *o);
    if (!o)
        return rmi_compile_nomem("an offloaded residual");
    const bool write = (n->flags & REMAT_NODE_OFFLOAD) != 0;
    const remat_storage *at = write ? &c->N[v].st : &c->N[n->in[0]].st;
    *o = (offload_io){.s = c->offload, .off = at->view, .bytes = rmi_node_bytes(n), .last = last};
    I->aux = o;
    I->fn = write ? tier_write : tier_read;
    return REMAT_OK;
}

