/*
 * scan_xops.c — lists of executor ops (scan_replay.h): merging an op into
 * the one before it, the counting executor, and dropping snapshots that no
 * later op reads.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "scan/scan_replay.h"

/* ---- ops ---- */

/* b follows a: one op doing both into *a, or false */
static bool merge_ops(scan_xop *a, const scan_xop *b)
{
    switch ((scan_xop_kind)b->kind) {
    case XOP_ADVANCE:
        if (a->kind == XOP_ADVANCE && a->step + a->count == b->step) {
            a->count += b->count;
            return true;
        }
        if (a->kind == XOP_SHOT && b->count == 1) { /* a snapshot, then one step */
            *a = (scan_xop){.kind = XOP_SHOT_ADVANCE, .slot = a->slot, .step = b->step, .count = 1};
            return true;
        }
        return false;
    case XOP_SHOT_ADVANCE:
    case XOP_RECOMPUTE: {
        const int64_t dir = b->kind == XOP_SHOT_ADVANCE ? 1 : -1;
        if (a->kind != b->kind || b->count != 1 || a->slot < 0 || b->slot < 0 || a->step + dir * a->count != b->step)
            return false;
        if (a->count == 1)
            a->dslot = b->slot - a->slot;
        else if (b->slot != a->slot + a->count * a->dslot)
            return false;
        a->count++;
        return true;
    }
    case XOP_TAPE:
        if (a->kind != XOP_TAPE || a->step + a->count != b->step || a->tape + a->count != b->tape)
            return false;
        a->count += b->count;
        return true;
    case XOP_REVERSE:
        if (a->kind != XOP_REVERSE || a->step - a->count != b->step || a->tape - a->count != b->tape)
            return false;
        a->count += b->count;
        return true;
    default: return false;
    }
}

/* A restore followed by a one-step recompute from the current carry is a
 * recompute from the slot (the carry is undefined after it anyway). */
static bool fold_restore(scan_xop *a, const scan_xop *b)
{
    if (a->kind != XOP_RESTORE || b->kind != XOP_RECOMPUTE || b->slot >= 0 || b->count != 1)
        return false;
    *a = (scan_xop){.kind = XOP_RECOMPUTE, .slot = a->slot, .step = b->step, .count = 1};
    return true;
}

void rmi_scan_ops_push(scan_xop *buf, int64_t *n, scan_xop op)
{
    buf[(*n)++] = op;
    while (*n >= 2 && (fold_restore(&buf[*n - 2], &buf[*n - 1]) || merge_ops(&buf[*n - 2], &buf[*n - 1])))
        (*n)--;
}

/* ---- the counting executor ---- */

static void count_advance(void *x, int64_t step, int64_t n) { (void)step, ((scan_evals *)x)->plain += n; }
static void count_none(void *x, int slot) { (void)x, (void)slot; }
static void count_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    (void)step, (void)slot, (void)dslot;
    ((scan_evals *)x)->plain += n;
}
static void count_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    (void)step, (void)tape;
    ((scan_evals *)x)->record += n;
}
static void count_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    (void)step, (void)tape;
    ((scan_evals *)x)->reverse += n;
}
static void count_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    (void)step, (void)slot, (void)dslot;
    ((scan_evals *)x)->record += n;
    ((scan_evals *)x)->reverse += n;
}

static const scan_executor counting = {
    .advance = count_advance, .snapshot = count_none, .restore = count_none, .shot_advance = count_shot_advance,
    .tape = count_tape, .reverse = count_reverse, .recompute = count_recompute,
};

void rmi_scan_ops_count(const scan_xop *ops, int64_t n, scan_evals *evals) { scan_walk(&counting, evals, ops, n); }

/* Snapshots that no later op reads (before their slot is written again)
 * are dropped; backwards over both phases, since the reverse phase reads
 * what the forward phase took. */
remat_status rmi_scan_ops_drop_dead_shots(scan_xop *const ops[2], const int64_t n[2], int64_t max_slots)
{
    bool *live = rmi_calloc((size_t)max_slots + 1, sizeof *live);
    if (!live)
        return rmi_error(REMAT_ERR_NOMEM, "scan: out of memory dropping the plan's dead snapshots");
    for (int ph = 1; ph >= 0; ph--)
        for (int64_t i = n[ph] - 1; i >= 0; i--) {
            scan_xop *o = &ops[ph][i];
            switch ((scan_xop_kind)o->kind) {
            case XOP_RESTORE: live[o->slot] = true; break;
            case XOP_RECOMPUTE:
                for (int64_t q = 0; o->slot >= 0 && q < o->count; q++)
                    live[o->slot + q * o->dslot] = true;
                break;
            case XOP_SHOT:
                if (!live[o->slot])
                    o->kind = -1; /* dropped */
                live[o->slot] = false;
                break;
            case XOP_SHOT_ADVANCE:
                for (int64_t q = o->count - 1; q >= 0; q--)
                    live[o->slot + q * o->dslot] = false;
                break;
            default: break;
            }
        }
    rmi_free(live);
    return REMAT_OK;
}

