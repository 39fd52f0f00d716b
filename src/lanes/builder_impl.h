/*
 * builder_impl.h (internal to src/lanes) — the lane-program builder the
 * translator's files share: a value as one register per entry along its
 * lane axis (lval), the builder of one kernel's instructions (lb) with its
 * instruction pushes (builder.c), the layout of entries along a lane
 * (below), reading and writing values from buffers (builder.c), and the
 * translation of one function's ops (emit.c). translate.c builds the
 * kernels of a loop body with them.
 */
#ifndef REMAT_LANES_BUILDER_IMPL_H
#define REMAT_LANES_BUILDER_IMPL_H

#include "core/arena.h"
#include "lanes/lanes.h"

/* Instructions per kernel: a safety valve, not the policy. Whether a body's
 * programs are worth compiling is scan_tier.c's call (their interpreted
 * work against gcc's time, which the backend predicts from their size);
 * this only keeps a pathological body (gcc's time grows faster than
 * linearly in a function's size: a (20,20) state's ~5000-instruction
 * unrolled kernels took 9 s at -O3) from being translated at all. Rodas5 on
 * three species: 764 to 2102 a kernel. */
#define LANES_MAX_INS 20000

typedef struct {
    int lane;           /* lane axis, -1: none */
    int64_t n;          /* entries */
    int32_t *reg;       /* n registers */
    remat_dtype dt;
    remat_shape shape;
} lval;

typedef struct {
    int64_t m;
    remat_lane_ins *ins;
    int n, cap;
    remat_lane_ins *st; /* stores, emitted after everything else */
    int n_st, cap_st;
    remat_lane_buf *bufs;
    int n_bufs;
    uint8_t *flags; /* per instruction of ins: F_VARYING, F_POST */
    int cap_flags;
    int ok;
    remat_arena mem;
} lb;

/* A register that differs between lanes (read lane by lane), and one whose
 * value exists only after the lanes (a sum across them, ops of it): the two
 * never meet in one op (backend/lane.h, "Sums across lanes"). */
enum { F_VARYING = 1, F_POST = 2 };

/* ---- building (builder.c) ---- */

/* Appends I to arr (ins or the deferred stores); -1, b->ok cleared, past
 * LANES_MAX_INS or out of memory. */
int32_t rmi_lb_push_to(lb *b, remat_lane_ins **arr, int *n, int *cap, remat_lane_ins I);
static inline uint8_t rmi_lb_flags_of(const lb *b, int32_t r) { return r >= 0 ? b->flags[r] : 0; }
/* Appends I to the instructions with its register's flags (a lane value
 * never meets a sum across lanes); -1 when it cannot. */
int32_t rmi_lb_push(lb *b, remat_lane_ins I);
int32_t rmi_lb_op3(lb *b, remat_op op, remat_dtype dt, int32_t x, int32_t y, int32_t z, double imm);
int32_t rmi_lb_konst(lb *b, remat_dtype dt, double v);

/* ---- lane layouts ---- */

static inline int rmi_lb_lane_axis(const remat_shape *s, int64_t m, int *ok)
{
    int a = -1;
    if (m == 1)
        return -1;
    for (int k = 0; k < s->rank; k++)
        if (s->dims[k] == m) {
            if (a >= 0)
                *ok = 0; /* two axes of size m: which one is the lane is ambiguous */
            a = k;
        }
    return a;
}

static inline int64_t rmi_lb_entries(const remat_shape *s, int lane)
{
    int64_t n = remat_shape_numel(s);
    return lane >= 0 ? n / s->dims[lane] : n;
}

/* coordinates (lane coordinate 0) of entry e */
static inline void rmi_lb_entry_coords(const remat_shape *s, int lane, int64_t e, int64_t *c)
{
    for (int k = s->rank - 1; k >= 0; k--) {
        if (k == lane) {
            c[k] = 0;
            continue;
        }
        c[k] = e % s->dims[k];
        e /= s->dims[k];
    }
}

static inline int64_t rmi_lb_coords_entry(const remat_shape *s, int lane, const int64_t *c)
{
    int64_t e = 0;
    for (int k = 0; k < s->rank; k++)
        if (k != lane)
            e = e * s->dims[k] + c[k];
    return e;
}

static inline int64_t rmi_lb_coords_flat(const remat_shape *s, const int64_t *c)
{
    int64_t f = 0;
    for (int k = 0; k < s->rank; k++)
        f = f * s->dims[k] + c[k];
    return f;
}

static inline int64_t rmi_lb_lane_stride(const remat_shape *s, int lane)
{
    int64_t st = 1;
    if (lane < 0)
        return 0;
    for (int k = s->rank - 1; k > lane; k--)
        st *= s->dims[k];
    return st;
}

/* ---- values in buffers (builder.c) ---- */

/* A new value of (dt, s), its registers unset; NULL (b->ok cleared) when
 * its lane axis is ambiguous, it is empty, or out of memory. */
lval *rmi_lb_new_val(lb *b, remat_dtype dt, const remat_shape *s);
/* a value of desc (dt, s) read from buffer buf */
lval *rmi_lb_load(lb *b, int32_t buf, remat_dtype dt, const remat_shape *s);
/* stores v into buffer buf (deferred until every load is emitted) */
void rmi_lb_store(lb *b, int32_t buf, const lval *v);

/* ---- ops (emit.c) ---- */

/* Translates f with its arguments given; fills outs[0..n_outs) (b->ok
 * cleared when an op does not translate). */
void rmi_lb_emit_fn(lb *b, const remat_fn *f, lval *const *args, lval **outs);

#endif
