/*
 * scan_slots.c — the plan's snapshot slots renamed so that strided ops line
 * up (scan_replay.h, rmi_scan_ops_rename_slots).
 *
 * A slot is only a name for where a snapshot waits from its write to its
 * last read: any assignment that keeps each snapshot in one slot over that
 * interval, and no two live ones in the same slot, replays the same steps
 * from the same carries, so the bits do not change. What changes is how
 * many ops the plan has: a SHOT_ADVANCE or RECOMPUTE over many steps is one
 * op (one kernel call in the compiled executor) only when its snapshots are
 * a constant stride apart. Revolve's slots come in stack order, so they
 * line up; online's come in the order its forward phase freed them while
 * moving its kept carries along (sched_online.c), so with the schedule's
 * own slots its reverse phase is ~20% more ops than binomial's over the
 * same evaluations (online:10 over 1000 steps: 1988 reverse ops to
 * binomial:10's 1661; renamed, 1658).
 *
 * The assignment is the greedy colouring of intervals in the order they
 * start (never more slots than snapshots live at once, so within the
 * store): a snapshot that is read takes the lowest free slot, which keeps a
 * LIFO pattern a stack; one that is never read (a SHOT_ADVANCE writes every
 * carry it passes) takes the slot after the previous write when free, so
 * the op's stride survives.
 */
#include <stdint.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "scan/scan_replay.h"

/* ---- the free slots: a bitset with a summary level per 64 words ---- */

enum { FREE_LEVELS = 7 }; /* 64^6 > 2^31 slots */

typedef struct {
    uint64_t *w;
    int64_t off[FREE_LEVELS + 1]; /* level l's words: w[off[l] .. off[l+1]) */
    int top;                      /* the level of one word */
} free_set;

static remat_status free_set_init(free_set *f, int64_t n)
{
    *f = (free_set){0};
    int64_t words = (n + 63) / 64, total = 0;
    for (f->top = 0;; f->top++) {
        REMAT_ASSERT(f->top < FREE_LEVELS);
        f->off[f->top] = total;
        total += words > 0 ? words : 1;
        if (words <= 1)
            break;
        words = (words + 63) / 64;
    }
    f->off[f->top + 1] = total;
    f->w = rmi_calloc((size_t)total, sizeof *f->w);
    return f->w ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "scan: out of memory renaming the plan's slots");
}

static bool free_set_has(const free_set *f, int64_t p) { return f->w[f->off[0] + p / 64] >> (p % 64) & 1; }

static void free_set_put(free_set *f, int64_t p)
{
    for (int l = 0; l <= f->top; l++, p /= 64) {
        uint64_t *w = &f->w[f->off[l] + p / 64];
        const bool was = *w != 0;
        *w |= (uint64_t)1 << (p % 64);
        if (was)
            return;
    }
}

static void free_set_take(free_set *f, int64_t p)
{
    for (int l = 0; l <= f->top; l++, p /= 64) {
        uint64_t *w = &f->w[f->off[l] + p / 64];
        *w &= ~((uint64_t)1 << (p % 64));
        if (*w != 0)
            return;
    }
}

static int64_t free_set_lowest(const free_set *f)
{
    int64_t p = 0;
    for (int l = f->top; l >= 0; l--) {
        const uint64_t w = f->w[f->off[l] + p];
        REMAT_ASSERT(w != 0); /* a free slot exists: fewer snapshots live than slots */
        p = p * 64 + __builtin_ctzll(w);
    }
    return p;
}

/* ---- the ops' slot accesses, one at a time ---- */

/* the snapshots an op writes (SHOT, SHOT_ADVANCE), at slot_at(o, q) */
static int64_t op_writes(const scan_xop *o)
{
    return o->kind == XOP_SHOT ? 1 : o->kind == XOP_SHOT_ADVANCE ? o->count : 0;
}

/* the snapshots an op reads (RESTORE, RECOMPUTE from slots) */
static int64_t op_reads(const scan_xop *o)
{
    return o->kind == XOP_RESTORE ? 1 : o->kind == XOP_RECOMPUTE && o->slot >= 0 ? o->count : 0;
}

static int64_t slot_at(const scan_xop *o, int64_t q) { return o->slot + q * o->dslot; }

/* Backwards over both phases: whether each write is read (live[w]) and
 * whether each read is its snapshot's last (last[r]), accesses numbered in
 * order. after[k]: slot k is read before it is written again. */
static void mark_lives(scan_xop *const ops[2], const int64_t n[2], uint8_t *live, uint8_t *last, bool *after,
                       int64_t nw, int64_t nr)
{
    for (int ph = 1; ph >= 0; ph--)
        for (int64_t i = n[ph] - 1; i >= 0; i--) {
            const scan_xop *o = &ops[ph][i];
            for (int64_t q = op_writes(o) - 1; q >= 0; q--) {
                const int64_t k = slot_at(o, q);
                live[--nw] = after[k];
                after[k] = false;
            }
            for (int64_t q = op_reads(o) - 1; q >= 0; q--) {
                const int64_t k = slot_at(o, q);
                last[--nr] = !after[k];
                after[k] = true;
            }
        }
    REMAT_ASSERT(nw == 0 && nr == 0);
}

typedef struct {
    scan_xop *ops;
    int64_t n, cap;
} sink;

static bool sink_push(sink *s, scan_xop op)
{
    if (s->n == s->cap) {
        const int64_t cap = s->cap ? 2 * s->cap : 64;
        scan_xop *b = rmi_realloc(s->ops, sizeof *b * (size_t)cap);
        if (!b)
            return false;
        s->ops = b, s->cap = cap;
    }
    rmi_scan_ops_push(s->ops, &s->n, op);
    return true;
}

typedef struct {
    free_set free;
    int32_t *to;  /* [max_slots] the slot each of the schedule's slots is renamed to now */
    int64_t prev; /* the last write's slot (-1: none yet) */
    const uint8_t *live, *last; /* mark_lives' */
    int64_t w, r; /* the next write's and read's numbers */
} renamer;

static int32_t rename_write(renamer *R, int64_t k, int64_t max_slots)
{
    int64_t p;
    if (R->live[R->w++]) {
        p = free_set_lowest(&R->free);
        free_set_take(&R->free, p);
    } else { /* never read: it stays free, best where it keeps the stride of the write before */
        const int64_t next = R->prev + 1;
        p = R->prev >= 0 && next < max_slots && free_set_has(&R->free, next) ? next : free_set_lowest(&R->free);
    }
    R->prev = p;
    R->to[k] = (int32_t)p;
    return (int32_t)p;
}

static int32_t rename_read(renamer *R, int64_t k)
{
    const int32_t p = R->to[k];
    REMAT_ASSERT(p >= 0 && !free_set_has(&R->free, p)); /* written, and live until now */
    if (R->last[R->r++])
        free_set_put(&R->free, p);
    return p;
}

/* op with its slot accesses renamed into s, one access per op where it has
 * several (the push merges them again where the new slots allow) */
static bool rename_op(renamer *R, const scan_xop *o, int64_t max_slots, sink *s)
{
    const int64_t nw = op_writes(o), nr = op_reads(o);
    if (nw == 0 && nr == 0)
        return sink_push(s, *o);
    const int64_t dir = o->kind == XOP_RECOMPUTE ? -1 : 1;
    for (int64_t q = 0; q < (nw > nr ? nw : nr); q++) {
        scan_xop e = *o;
        const int64_t k = slot_at(o, q);
        e.slot = nw > 0 ? rename_write(R, k, max_slots) : rename_read(R, k);
        e.dslot = 0;
        if (o->kind == XOP_SHOT_ADVANCE || o->kind == XOP_RECOMPUTE)
            e.step = o->step + dir * q, e.count = 1;
        if (!sink_push(s, e))
            return false;
    }
    return true;
}

remat_status rmi_scan_ops_rename_slots(scan_xop *const ops[2], const int64_t n[2], int64_t max_slots,
                                       scan_xop *out[2], int64_t n_out[2])
{
    int64_t nw = 0, nr = 0;
    for (int ph = 0; ph < 2; ph++)
        for (int64_t i = 0; i < n[ph]; i++)
            nw += op_writes(&ops[ph][i]), nr += op_reads(&ops[ph][i]);
    renamer R = {.prev = -1};
    sink s[2] = {{0}};
    uint8_t *live = rmi_malloc((size_t)nw + 1), *last = rmi_malloc((size_t)nr + 1);
    bool *after = rmi_calloc((size_t)max_slots + 1, sizeof *after);
    R.to = rmi_malloc(sizeof *R.to * (size_t)(max_slots + 1));
    remat_status st = live && last && after && R.to
                          ? free_set_init(&R.free, max_slots)
                          : rmi_error(REMAT_ERR_NOMEM, "scan: out of memory renaming the plan's slots");
    if (st == REMAT_OK) {
        mark_lives(ops, n, live, last, after, nw, nr);
        R.live = live, R.last = last;
        for (int64_t k = 0; k < max_slots; k++) {
            free_set_put(&R.free, k);
            R.to[k] = -1;
        }
        for (int ph = 0; ph < 2 && st == REMAT_OK; ph++)
            for (int64_t i = 0; i < n[ph] && st == REMAT_OK; i++)
                if (ops[ph][i].kind >= 0 && !rename_op(&R, &ops[ph][i], max_slots, &s[ph]))
                    st = rmi_error(REMAT_ERR_NOMEM, "scan: out of memory renaming the plan's slots");
    }
    for (int ph = 0; ph < 2; ph++) {
        if (st != REMAT_OK) {
            rmi_free(s[ph].ops);
            s[ph] = (sink){0};
        }
        out[ph] = s[ph].ops;
        n_out[ph] = s[ph].n;
    }
    rmi_free(R.free.w);
    rmi_free(R.to);
    rmi_free(after);
    rmi_free(live);
    rmi_free(last);
    return st;
}
