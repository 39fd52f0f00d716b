/*
 * out_scratch.c — intermediates held in the caller's output buffers before
 * those are written (rmi_pass_out_scratch), as XLA's buffer assignment does.
 *
 * A gradient program writes the gradient of a layer's weights only in that
 * layer's backward, yet its output buffer exists from the start of the run.
 * Until its first write (fw), output j is free memory of bytes_j bytes: a
 * buffer whose whole lifetime ends before fw (strictly: the writing
 * instruction may read it, and kernels assume no overlap) can live there
 * instead of in the arena. A deep network's activations saved for the
 * backward end their lives in their layer's backward, so they fit into the
 * gradient buffers of that layer and of the layers before it, written later.
 *
 * Only a root program does this: remat_run checks that no output shares
 * memory with an input or another output, while a loop runs its bodies'
 * sub-programs on buffers that may alias (carries updated in place).
 *
 * The choice is greedy: buffers largest first (then longest lived); each goes
 * to the output closing soonest after its last reader that has a free range
 * of its size for its lifetime (first fit by offset among the buffers already
 * placed there). Placed buffers become views of the output (ST_OUTPUT with
 * an offset, patched at each run like the output itself) and leave the arena
 * plan, so the arena's high-water mark measured at run time is still the
 * plan's. Off with no_inplace (REMAT_NO_INPLACE=1), for comparing the bits.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "exec/passes.h"

/* Buffers smaller than this stay in the arena: they do not move the peak,
 * and the search is per buffer. */
enum { SCRATCH_MIN_BYTES = 1024 };

typedef struct {
    int32_t buf; /* the placed buffer */
    size_t off, end;
} placed;

typedef struct {
    int32_t out;   /* output index */
    int32_t fw;    /* its first write */
    size_t bytes;  /* its size */
    placed *p;     /* buffers placed in it */
    int32_t n, cap;
} bin;

static size_t align_up(size_t x) { return (x + REMAT_ARENA_ALIGN - 1) / REMAT_ARENA_ALIGN * REMAT_ARENA_ALIGN; }

/* The first instruction writing each output (-1: none found, unusable). */
static void first_writes(const remat_compile_ctx *c, int32_t *fw)
{
    const remat_graph_view *g = c->g;
    for (int j = 0; j < g->n_outs; j++)
        fw[j] = -1;
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        const remat_cnode *R = &c->N[v];
        if (R->instr < 0)
            continue;
        if (R->st.kind == ST_OUTPUT && (fw[R->st.index] < 0 || R->instr < fw[R->st.index]))
            fw[R->st.index] = R->instr;
        if (R->hop_st) {
            const remat_node *n = &g->nodes[v];
            int no = rmi_hop_node_outputs(n);
            for (int k = 0; k < no; k++)
                if (R->hop_st[k].kind == ST_OUTPUT && (fw[R->hop_st[k].index] < 0 || R->instr < fw[R->hop_st[k].index]))
                    fw[R->hop_st[k].index] = R->instr;
        }
    }
    int32_t ci = c->n_instr; /* the copies at the end */
    for (int j = 0; j < g->n_outs; j++) {
        if (c->direct[j])
            continue;
        if (fw[j] < 0 || ci < fw[j])
            fw[j] = ci;
        ci++;
    }
}

/* The lowest offset of output bin b where buf fits for its lifetime, or
 * SIZE_MAX. */
static size_t fit_in(const bin *b, const remat_plan_buf *B, int32_t buf, size_t size)
{
    size_t off = 0;
    for (;;) {
        size_t next = off;
        for (int32_t k = 0; k < b->n; k++) {
            const placed *q = &b->p[k];
            const remat_plan_buf *o = &B[q->buf];
            if (o->last < B[buf].first || o->first > B[buf].last)
                continue; /* lifetimes apart */
            if (q->off < off + size && off < q->end && q->end > next)
                next = q->end;
        }
        if (next == off)
            return off + size <= b->bytes ? off : SIZE_MAX;
        off = next;
        if (off + size > b->bytes)
            return SIZE_MAX;
    }
}

static int by_fw(const void *a, const void *b)
{
    const bin *x = a, *y = b;
    return (x->fw > y->fw) - (x->fw < y->fw);
}

static int by_size_life(const void *a, const void *b, void *bufs)
{
    const remat_plan_buf *B = bufs;
    const remat_plan_buf *x = &B[*(const int32_t *)a], *y = &B[*(const int32_t *)b];
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    int32_t lx = x->last - x->first, ly = y->last - y->first;
    if (lx != ly)
        return lx < ly ? 1 : -1;
    return (*(const int32_t *)a > *(const int32_t *)b) - (*(const int32_t *)a < *(const int32_t *)b);
}

static void move_storage(remat_storage *s, const int32_t *to_out, const size_t *to_off)
{
    if (s->kind != ST_ARENA || to_out[s->index] < 0)
        return;
    int32_t b = s->index;
    *s = (remat_storage){.kind = ST_OUTPUT, .index = to_out[b], .view = to_off[b] + s->view};
}

remat_status rmi_pass_out_scratch(remat_compile_ctx *c)
{
    const remat_graph_view *g = c->g;
    if (c->n_bufs == 0 || g->n_outs == 0)
        return REMAT_OK;
    int32_t *fw = rmi_malloc(sizeof *fw * (size_t)g->n_outs);
    bin *bins = rmi_calloc((size_t)g->n_outs, sizeof *bins);
    int32_t *cand = rmi_malloc(sizeof *cand * (size_t)c->n_bufs);
    int32_t *to_out = rmi_malloc(sizeof *to_out * (size_t)c->n_bufs);
    size_t *to_off = rmi_malloc(sizeof *to_off * (size_t)c->n_bufs);
    uint8_t *scratch = rmi_calloc((size_t)c->n_bufs, 1);
    remat_status st = REMAT_OK;
    if (!fw || !bins || !cand || !to_out || !to_off || !scratch) {
        st = rmi_compile_nomem("placing intermediates in output buffers");
        goto done;
    }
    first_writes(c, fw);
    int32_t nb = 0;
    for (int j = 0; j < g->n_outs; j++) {
        size_t bytes = rmi_node_bytes(&g->nodes[g->outs[j]]);
        if (fw[j] > 0 && bytes >= SCRATCH_MIN_BYTES)
            bins[nb++] = (bin){.out = j, .fw = fw[j], .bytes = bytes};
    }
    qsort(bins, (size_t)nb, sizeof *bins, by_fw);
    for (int32_t i = 0; i < c->n_instr; i++) /* an instruction's scratch stays in the arena */
        if (c->ops && c->ops[i].scratch_buf >= 0)
            scratch[c->ops[i].scratch_buf] = 1;
    int32_t nc = 0;
    for (int32_t b = 0; b < c->n_bufs; b++) {
        to_out[b] = -1;
        if (!scratch[b] && c->bufs[b].size >= SCRATCH_MIN_BYTES)
            cand[nc++] = b;
    }
    qsort_r(cand, (size_t)nc, sizeof *cand, by_size_life, c->bufs);
    for (int32_t k = 0; k < nc && nb > 0; k++) {
        int32_t b = cand[k];
        size_t size = align_up(c->bufs[b].size);
        /* the first bin closing after the buffer's last read */
        int32_t lo = 0, hi = nb;
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (bins[mid].fw > c->bufs[b].last)
                hi = mid;
            else
                lo = mid + 1;
        }
        for (int32_t j = lo; j < nb; j++) {
            bin *B = &bins[j];
            if (B->bytes < size)
                continue;
            size_t off = fit_in(B, c->bufs, b, size);
            if (off == SIZE_MAX)
                continue;
            if (B->n == B->cap) {
                int32_t cap = B->cap ? 2 * B->cap : 8;
                placed *q = rmi_realloc(B->p, sizeof *q * (size_t)cap);
                if (!q) {
                    st = rmi_compile_nomem("placing intermediates in output buffers");
                    goto done;
                }
                B->p = q, B->cap = cap;
            }
            B->p[B->n++] = (placed){b, off, off + size};
            to_out[b] = B->out;
            to_off[b] = off;
            break;
        }
    }
    /* every storage on a placed buffer becomes a view of its output; the
     * buffer leaves the arena plan (size 0) */
    for (int32_t i = 0; i < c->n_order; i++) {
        int32_t v = c->order[i];
        remat_cnode *R = &c->N[v];
        move_storage(&R->st, to_out, to_off);
        if (R->hop_st) {
            const remat_node *n = &g->nodes[v];
            int no = rmi_hop_node_outputs(n);
            for (int k = 0; k < no; k++)
                move_storage(&R->hop_st[k], to_out, to_off);
        }
    }
    for (int32_t b = 0; b < c->n_bufs; b++)
        if (to_out[b] >= 0)
            c->bufs[b].size = 0;
done:
    for (int j = 0; bins && j < g->n_outs; j++)
        rmi_free(bins[j].p);
    rmi_free(fw);
    rmi_free(bins);
    rmi_free(cand);
    rmi_free(to_out);
    rmi_free(to_off);
    rmi_free(scratch);
    return st;
}
