/*
 * translate.c — translates a loop body (a scan's, or a while loop's seen as
 * a scan) and its VJP halves into lane programs (backend/lane.h) and has the
 * backend compile them (lanes.h).
 *
 * The lane axis. With m > 1, a value's lane axis is the one axis of size m
 * in its shape (none: the value is the same for every lane; two: the body
 * does not fit). A value is then a set of entries — its elements with the
 * lane coordinate removed, in row-major order — each a scalar register per
 * lane. Structural ops (reshape, slice, concatenate, pad, broadcast,
 * transpose) only route entries, checked to keep every lane on its own
 * lane; elementwise ops become one scalar op per entry. With m = 1 every
 * element is an entry (small states: an ODE right-hand side). Candidates for
 * m are the sizes of the carries' axes, largest first, then 1.
 *
 * Sums: within a lane, as chains of adds in the CPU kernel's order; across
 * the lanes (the lane axis first among the summed axes, e.g. the cotangent
 * of a constant the whole batch shares), as a per-step sum the loop adds to
 * lane after lane, whose result only instructions after the lanes may read
 * (backend/lane.h) — a body that feeds such a sum back into the lanes (a
 * batch mean) is not translated. Maxima (reduce_max) within a lane only,
 * in the CPU kernel's order and with its IEEE maximum (+0 above -0, NaN
 * propagates): as the adaptive controller's NaN test needs.
 *
 * lu and linear_solve of n <= 8 are unrolled (solve.c), one
 * system per batch entry, the lane axis a batch axis of the operands.
 *
 * Not translated (the body is interpreted instead): dot_general, custom ops,
 * nested scans, non-splat constants along the lane axis, empty values, the
 * case above, and programs over LANES_MAX_INS instructions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ad/node.h"
#include "core/arena.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/exhaustive.h"
#include "backend/lane_io.h"
#include "lanes/lanes.h"
#include "lanes/lanes_impl.h"
#include "lanes/lanes_solve.h"

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

/* ---- building ---- */

static int32_t push_to(lb *b, remat_lane_ins **arr, int *n, int *cap, remat_lane_ins I)
{
    if (!b->ok || b->n + b->n_st >= LANES_MAX_INS)
        return b->ok = 0, -1;
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 256;
        remat_lane_ins *p = rmi_realloc(*arr, sizeof *p * (size_t)nc);
        if (!p)
            return b->ok = 0, -1;
        *arr = p, *cap = nc;
    }
    (*arr)[*n] = I;
    return (*n)++;
}

static uint8_t flags_of(const lb *b, int32_t r) { return r >= 0 ? b->flags[r] : 0; }

static int32_t push(lb *b, remat_lane_ins I)
{
    uint8_t f = 0;
    switch (I.kind) {
    case REMAT_LANE_LOAD: f = b->m > 1 && I.lstride != 0 ? F_VARYING : 0; break;
    case REMAT_LANE_SUM0: f = F_POST; break;
    case REMAT_LANE_ACC: /* adds to a sum in the lanes: the only in-lane reader of a post register */
        if (!(flags_of(b, I.a) & F_POST) || (flags_of(b, I.b) & F_POST))
            return b->ok = 0, -1;
        break;
    case REMAT_LANE_OP:
        f = flags_of(b, I.a) | flags_of(b, I.b) | flags_of(b, I.c);
        if ((f & F_VARYING) && (f & F_POST))
            return b->ok = 0, -1; /* a lane value combined with a sum across lanes */
        I.post = (f & F_POST) != 0;
        break;
    default: break;
    }
    const int32_t r = push_to(b, &b->ins, &b->n, &b->cap, I);
    if (r < 0)
        return r;
    if (b->n > b->cap_flags) {
        int nc = b->cap;
        uint8_t *q = rmi_realloc(b->flags, (size_t)nc);
        if (!q)
            return b->ok = 0, -1;
        b->flags = q, b->cap_flags = nc;
    }
    b->flags[r] = f;
    return r;
}

static int32_t op3(lb *b, remat_op op, remat_dtype dt, int32_t x, int32_t y, int32_t z, double imm)
{
    return push(b, (remat_lane_ins){.kind = REMAT_LANE_OP, .dt = (uint8_t)dt, .op = (uint16_t)op, .a = x, .b = y,
                                    .c = z, .buf = -1, .imm = imm});
}

static int32_t konst(lb *b, remat_dtype dt, double v)
{
    return push(b, (remat_lane_ins){.kind = REMAT_LANE_CONST, .dt = (uint8_t)dt, .a = -1, .b = -1, .c = -1,
                                    .buf = -1, .imm = v});
}

/* ---- lane layouts ---- */

static int lane_axis(const remat_shape *s, int64_t m, int *ok)
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

static int64_t entries(const remat_shape *s, int lane)
{
    int64_t n = remat_shape_numel(s);
    return lane >= 0 ? n / s->dims[lane] : n;
}

/* coordinates (lane coordinate 0) of entry e */
static void entry_coords(const remat_shape *s, int lane, int64_t e, int64_t *c)
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

static int64_t coords_entry(const remat_shape *s, int lane, const int64_t *c)
{
    int64_t e = 0;
    for (int k = 0; k < s->rank; k++)
        if (k != lane)
            e = e * s->dims[k] + c[k];
    return e;
}

static int64_t coords_flat(const remat_shape *s, const int64_t *c)
{
    int64_t f = 0;
    for (int k = 0; k < s->rank; k++)
        f = f * s->dims[k] + c[k];
    return f;
}

static int64_t lane_stride(const remat_shape *s, int lane)
{
    int64_t st = 1;
    if (lane < 0)
        return 0;
    for (int k = s->rank - 1; k > lane; k--)
        st *= s->dims[k];
    return st;
}

static lval *new_val(lb *b, remat_dtype dt, const remat_shape *s)
{
    lval *v = rmi_arena_alloc(&b->mem, sizeof *v);
    int ok = 1;
    if (!v)
        return b->ok = 0, NULL;
    v->dt = dt;
    v->shape = *s;
    v->lane = lane_axis(s, b->m, &ok);
    v->n = entries(s, v->lane);
    if (v->n == 0 || remat_shape_numel(s) == 0) /* empty values: nothing a loop would gain */
        return b->ok = 0, NULL;
    v->reg = rmi_arena_alloc(&b->mem, sizeof *v->reg * (size_t)(v->n + 1));
    if (!ok || !v->reg)
        return b->ok = 0, NULL;
    return v;
}

/* a value of desc (dt, s) read from buffer buf */
static lval *load(lb *b, int32_t buf, remat_dtype dt, const remat_shape *s)
{
    lval *v = new_val(b, dt, s);
    if (!v)
        return NULL;
    const int64_t ls = lane_stride(s, v->lane);
    int64_t c[REMAT_MAX_RANK];
    for (int64_t e = 0; e < v->n; e++) {
        entry_coords(s, v->lane, e, c);
        v->reg[e] = push(b, (remat_lane_ins){.kind = REMAT_LANE_LOAD, .dt = (uint8_t)dt, .a = -1, .b = -1, .c = -1,
                                              .buf = buf, .off = coords_flat(s, c), .lstride = ls});
    }
    return v;
}

/* stores v into buffer buf (deferred until every load is emitted). A value
 * without a lane axis stored by every lane is fine in a plain buffer, but a
 * state buffer would be updated m times. */
static void store(lb *b, int32_t buf, const lval *v)
{
    if (!v) {
        b->ok = 0;
        return;
    }
    const int64_t ls = b->m > 1 ? lane_stride(&v->shape, v->lane) : 0;
    int64_t c[REMAT_MAX_RANK];
    for (int64_t e = 0; e < v->n && b->ok; e++) {
        const int post = (flags_of(b, v->reg[e]) & F_POST) != 0;
        /* after the lanes only a lane-less element can be written; in them, a
         * state element without a lane would be updated m times */
        if ((post && ls != 0) || (!post && ls == 0 && b->m > 1 && b->bufs[buf].state)) {
            b->ok = 0;
            return;
        }
        entry_coords(&v->shape, v->lane, e, c);
        push_to(b, &b->st, &b->n_st, &b->cap_st,
                (remat_lane_ins){.kind = REMAT_LANE_STORE, .dt = (uint8_t)v->dt, .post = (uint8_t)post,
                                 .a = v->reg[e], .b = -1, .c = -1, .buf = buf, .off = coords_flat(&v->shape, c),
                                 .lstride = ls});
    }
}

/* ---- ops ---- */

/* route and lane_preserved switch on the parameter kind, which names each
 * routing op (slice, transpose, broadcast, pad, concatenate). */
REMAT_EXHAUSTIVE_BEGIN
/* Maps output coordinates to the operand's (lane coordinate 0 stays 0, or
 * the lane is checked not to move). Returns 0 for an element that is
 * padding (pad), or the operand index + 1 (concatenate: which operand). */
typedef struct {
    const remat_node *node;
    const remat_shape *in_shapes[64];
    int nin;
} route_ctx;

static int route(const route_ctx *r, const int64_t *oc, int64_t *ic)
{
    const remat_node *N = r->node;
    const remat_shape *in = r->in_shapes[0];
    switch (remat_op_param_of((remat_op)N->op)) {
    case REMAT_OPP_SLICE:
        for (int k = 0; k < N->shape.rank; k++)
            ic[k] = N->p.slice->start[k] + oc[k] * N->p.slice->stride[k];
        return 1;
    case REMAT_OPP_PERM:
        for (int k = 0; k < N->shape.rank; k++)
            ic[N->p.perm[k]] = oc[k];
        return 1;
    case REMAT_OPP_BDIMS:
        for (int k = 0; k < in->rank; k++)
            ic[k] = in->dims[k] == 1 ? 0 : oc[N->p.bdims[k]];
        return 1;
    case REMAT_OPP_PAD:
        for (int k = 0; k < N->shape.rank; k++) {
            int64_t t = oc[k] - N->p.pad->low[k], step = N->p.pad->interior[k] + 1;
            if (t < 0 || t % step != 0 || t / step >= in->dims[k])
                return 0;
            ic[k] = t / step;
        }
        return 1;
    case REMAT_OPP_AXIS: {
        const int ax = (int)N->p.axis;
        int64_t pos = oc[ax];
        for (int q = 0; q < r->nin; q++) {
            if (pos < r->in_shapes[q]->dims[ax]) {
                memcpy(ic, oc, sizeof *ic * (size_t)N->shape.rank);
                ic[ax] = pos;
                return q + 1;
            }
            pos -= r->in_shapes[q]->dims[ax];
        }
        REMAT_UNREACHABLE("scan lanes: concatenate coordinate out of range");
    }
    case REMAT_OPP_NONE: case REMAT_OPP_FILL: case REMAT_OPP_ARG_POS: case REMAT_OPP_OUTPUT:
    case REMAT_OPP_INT_EXPONENT: case REMAT_OPP_EXPONENT: case REMAT_OPP_AXES: case REMAT_OPP_DOT:
    case REMAT_OPP_SOLVE:
    case REMAT_OPP_CALL: case REMAT_OPP_CUSTOM: case REMAT_OPP_HOP: case REMAT_OPP_COUNT:
        break;
    }
    REMAT_UNREACHABLE("scan lanes: not a routing op");
}

/* Does the op keep lane j on lane j? Checked on the lane axes and params. */
static int lane_preserved(const remat_node *N, const lval *const *x, int nin, const lval *o)
{
    const int lo = o->lane;
    for (int q = 0; q < nin; q++)
        if ((x[q]->lane >= 0) != (lo >= 0) &&
            !(remat_op_param_of((remat_op)N->op) == REMAT_OPP_BDIMS && x[q]->lane < 0))
            return 0; /* a lane appears from nothing or vanishes */
    if (lo < 0)
        return 1;
    switch (remat_op_param_of((remat_op)N->op)) {
    case REMAT_OPP_SLICE:
        return N->p.slice->start[lo] == 0 && N->p.slice->stride[lo] == 1 && x[0]->lane == lo;
    case REMAT_OPP_PERM: return N->p.perm[lo] == x[0]->lane;
    case REMAT_OPP_BDIMS: return x[0]->lane < 0 || N->p.bdims[x[0]->lane] == lo;
    case REMAT_OPP_PAD:
        return x[0]->lane == lo && !N->p.pad->low[lo] && !N->p.pad->high[lo] && !N->p.pad->interior[lo];
    case REMAT_OPP_AXIS:
        for (int q = 0; q < nin; q++)
            if (x[q]->lane != lo)
                return 0;
        return N->p.axis != lo;
    case REMAT_OPP_NONE: case REMAT_OPP_FILL: case REMAT_OPP_ARG_POS: case REMAT_OPP_OUTPUT:
    case REMAT_OPP_INT_EXPONENT: case REMAT_OPP_EXPONENT: case REMAT_OPP_AXES: case REMAT_OPP_DOT:
    case REMAT_OPP_SOLVE:
    case REMAT_OPP_CALL: case REMAT_OPP_CUSTOM: case REMAT_OPP_HOP: case REMAT_OPP_COUNT:
        return 0;
    }
    return 0;
}
REMAT_EXHAUSTIVE_END

static lval *reshape(lb *b, const lval *x, const remat_node *N)
{
    lval *o = new_val(b, x->dt, &N->shape);
    if (!o)
        return NULL;
    if ((o->lane >= 0) != (x->lane >= 0))
        return b->ok = 0, NULL;
    /* every element: lane j of the output must be lane j of the operand */
    const int64_t numel = remat_shape_numel(&N->shape);
    int64_t oc[REMAT_MAX_RANK], ic[REMAT_MAX_RANK];
    for (int64_t f = 0; f < numel; f++) {
        int64_t t = f;
        for (int k = o->shape.rank - 1; k >= 0; k--)
            oc[k] = t % o->shape.dims[k], t /= o->shape.dims[k];
        t = f;
        for (int k = x->shape.rank - 1; k >= 0; k--)
            ic[k] = t % x->shape.dims[k], t /= x->shape.dims[k];
        if (o->lane >= 0 && oc[o->lane] != ic[x->lane])
            return b->ok = 0, NULL;
        if (o->lane < 0 || oc[o->lane] == 0)
            o->reg[coords_entry(&o->shape, o->lane, oc)] = x->reg[coords_entry(&x->shape, x->lane, ic)];
    }
    return o;
}

static lval *routed(lb *b, const remat_node *N, lval *const *x, int nin)
{
    lval *o = new_val(b, (remat_dtype)N->dtype, &N->shape); /* nin <= 64: emit_fn checked */
    if (!o)
        return NULL;
    if (!lane_preserved(N, (const lval *const *)x, nin, o))
        return b->ok = 0, NULL;
    route_ctx r = {.node = N, .nin = nin};
    for (int q = 0; q < nin; q++)
        r.in_shapes[q] = &x[q]->shape;
    int32_t zero = -1;
    int64_t oc[REMAT_MAX_RANK], ic[REMAT_MAX_RANK];
    for (int64_t e = 0; e < o->n; e++) {
        entry_coords(&o->shape, o->lane, e, oc);
        int q = route(&r, oc, ic);
        if (q == 0) {
            if (zero < 0)
                zero = konst(b, o->dt, 0.0);
            o->reg[e] = zero;
            continue;
        }
        const lval *src = x[q - 1];
        o->reg[e] = src->reg[coords_entry(&src->shape, src->lane, ic)];
    }
    return o;
}

static lval *constant(lb *b, const remat_node *N)
{
    lval *o = new_val(b, (remat_dtype)N->dtype, &N->shape);
    if (!o)
        return NULL;
    if (!N->data) { /* splat */
        int32_t r = konst(b, o->dt, N->p.fill);
        for (int64_t e = 0; e < o->n; e++)
            o->reg[e] = r;
        return o;
    }
    if (o->lane >= 0) /* values that differ by lane would need a buffer of their own */
        return b->ok = 0, NULL;
    for (int64_t e = 0; e < o->n; e++)
        o->reg[e] = konst(b, o->dt, o->dt == REMAT_F32 ? (double)((const float *)N->data)[e]
                                                        : ((const double *)N->data)[e]);
    return o;
}

static int is_pos_zero(const lb *b, int32_t r)
{
    const remat_lane_ins *I = &b->ins[r];
    return I->kind == REMAT_LANE_CONST && I->imm == 0.0 && !signbit(I->imm);
}

/* x + y. (a + b) + 0 is rewritten as (a + 0) + b, a the operand computed
 * first: in IEEE round-to-nearest both give a + b except that a = b = -0
 * gives +0, the same bits always (x + y is -0 only when both are -0). The
 * +0 (a cotangent added to a pad's zeros: add(ct, pad(g))) then leaves the
 * critical path of a loop-carried chain such as a scan's carry cotangent. */
static int32_t add(lb *b, remat_dtype dt, int32_t x, int32_t y)
{
    if (is_pos_zero(b, x)) {
        int32_t t = x;
        x = y, y = t;
    }
    if (is_pos_zero(b, y) && b->ins[x].kind == REMAT_LANE_OP && b->ins[x].op == REMAT_OP_ADD) {
        int32_t p = b->ins[x].a, q = b->ins[x].b;
        if (p > q) {
            int32_t t = p;
            p = q, q = t;
        }
        return op3(b, REMAT_OP_ADD, dt, op3(b, REMAT_OP_ADD, dt, p, y, -1, 0.0), q, -1, 0.0);
    }
    return op3(b, REMAT_OP_ADD, dt, x, y, -1, 0.0);
}

static lval *elementwise(lb *b, const remat_node *N, lval *const *x, int nin)
{
    lval *o = new_val(b, (remat_dtype)N->dtype, &N->shape);
    if (!o)
        return NULL;
    for (int q = 0; q < nin; q++)
        if (x[q]->lane != o->lane || x[q]->n != o->n)
            return b->ok = 0, NULL;
    const remat_op_param pk = remat_op_param_of((remat_op)N->op);
    const double imm = pk == REMAT_OPP_EXPONENT       ? N->p.exponent
                       : pk == REMAT_OPP_INT_EXPONENT ? (double)N->p.int_exponent
                                                      : 0.0;
    for (int64_t e = 0; e < o->n && b->ok; e++)
        o->reg[e] = N->op == REMAT_OP_ADD ? add(b, o->dt, x[0]->reg[e], x[1]->reg[e])
                                          : op3(b, (remat_op)N->op, o->dt, x[0]->reg[e], nin > 1 ? x[1]->reg[e] : -1,
                                                nin > 2 ? x[2]->reg[e] : -1, imm);
    return o;
}

/* reduce_max's step (backend/cpu/reduce.c, MAX_STEP): m takes x when
 * x > m, when x is NaN, or when x == m and m is -0 (IEEE maximum: +0 beats
 * -0, a NaN propagates, the latest NaN's bits win). max(x, m) is all of it
 * but the last case, where it keeps m: the select takes x there, m's sign
 * read off 1/m (-inf for -0; any negative m equal to x has x's bits). */
static int32_t max_step(lb *b, remat_dtype dt, int32_t m, int32_t x)
{
    const int32_t mx = op3(b, REMAT_OP_MAX, dt, x, m, -1, 0.0);
    const int32_t neg = op3(b, REMAT_OP_LT, dt, op3(b, REMAT_OP_DIV, dt, konst(b, dt, 1.0), m, -1, 0.0),
                            konst(b, dt, 0.0), -1, 0.0);
    const int32_t eq_neg = op3(b, REMAT_OP_MUL, dt, op3(b, REMAT_OP_EQ, dt, x, m, -1, 0.0), neg, -1, 0.0);
    return op3(b, REMAT_OP_SELECT, dt, eq_neg, x, mx, 0.0);
}

/* reduce_sum and reduce_max over axes without the lane: each output entry
 * is ((+0 + x0) + x1) + ... (sum) or step(...step(-inf, x0)..., xn) (max,
 * step(-inf, x0) being x0 whatever x0) over its inputs in ascending
 * row-major order, the CPU kernel's contract (backend/cpu/reduce.c). A sum
 * may run across the lanes; a max across them has no lane instruction and
 * is not translated. */
static lval *reduce(lb *b, const lval *x, const remat_node *N)
{
    const uint32_t mask = N->p.axes_mask;
    const int is_max = N->op == REMAT_OP_REDUCE_MAX;
    const int across = x->lane >= 0 && (mask >> x->lane & 1u);
    if (across && is_max)
        return b->ok = 0, NULL;
    for (int k = 0; across && k < x->lane; k++)
        if (mask >> k & 1u) /* row-major order would interleave the lanes */
            return b->ok = 0, NULL;
    lval *o = new_val(b, x->dt, &N->shape);
    if (!o)
        return NULL;
    int kept[REMAT_MAX_RANK], red[REMAT_MAX_RANK], nk = 0, nr = 0, lane_out = -1;
    for (int k = 0; k < x->shape.rank; k++) {
        if (mask >> k & 1u) {
            if (k != x->lane) /* across: the lane axis is summed by the loop itself */
                red[nr++] = k;
        } else {
            if (k == x->lane)
                lane_out = nk;
            kept[nk++] = k;
        }
    }
    if (o->lane != lane_out)
        return b->ok = 0, NULL;
    int64_t oc[REMAT_MAX_RANK], ic[REMAT_MAX_RANK], rc[REMAT_MAX_RANK];
    for (int64_t e = 0; e < o->n && b->ok; e++) {
        entry_coords(&o->shape, o->lane, e, oc);
        for (int q = 0; q < nk; q++)
            ic[kept[q]] = oc[q];
        memset(rc, 0, sizeof rc);
        int32_t acc = across ? push(b, (remat_lane_ins){.kind = REMAT_LANE_SUM0, .dt = (uint8_t)o->dt, .a = -1,
                                                         .b = -1, .c = -1, .buf = -1})
                      : is_max ? -1
                               : konst(b, o->dt, 0.0);
        for (;;) { /* odometer over the reduced axes, last fastest (across: in each lane in turn) */
            for (int q = 0; q < nr; q++)
                ic[red[q]] = rc[q];
            const int32_t xe = x->reg[coords_entry(&x->shape, x->lane, ic)];
            if (across)
                push(b, (remat_lane_ins){.kind = REMAT_LANE_ACC, .dt = (uint8_t)o->dt, .a = acc, .b = xe, .c = -1,
                                         .buf = -1});
            else if (is_max)
                acc = acc < 0 ? xe : max_step(b, o->dt, acc, xe);
            else
                acc = op3(b, REMAT_OP_ADD, o->dt, acc, xe, -1, 0.0);
            int q = nr - 1;
            while (q >= 0 && ++rc[q] == x->shape.dims[red[q]])
                rc[q--] = 0;
            if (q < 0)
                break;
        }
        o->reg[e] = acc;
    }
    return o;
}

static int32_t solve_op(void *ctx, remat_op op, int32_t x, int32_t y, int32_t z)
{
    lb *b = ctx;
    return op3(b, op, b->ins[x].dt, x, y, z, 0.0);
}

/* lu (x = {A}) and linear_solve (x = {A, lu(A), b}): for every batch entry
 * (lane coordinate 0), the matrix's registers go through the unrolled
 * elimination. A lane axis must be a batch axis, the same in every operand
 * that has one (A may be lane-less while b is not). */
static lval *linalg(lb *b, const remat_node *N, lval *const *x)
{
    const int is_lu = N->op == REMAT_OP_LU, ra = x[0]->shape.rank, nb = ra - 2;
    const lval *F = x[is_lu ? 0 : 1], *B = is_lu ? NULL : x[2];
    const int64_t n = x[0]->shape.dims[ra - 1], k = B && B->shape.rank == ra ? B->shape.dims[ra - 1] : 1;
    lval *o = new_val(b, (remat_dtype)N->dtype, &N->shape);
    if (!o)
        return NULL;
    if (n > REMAT_LANE_SOLVE_MAX_N || F->lane >= nb || o->lane >= nb || (F->lane >= 0 && F->lane != o->lane))
        return b->ok = 0, NULL;
    int32_t P[2 * REMAT_LANE_SOLVE_MAX_N * REMAT_LANE_SOLVE_MAX_N], A[REMAT_LANE_SOLVE_MAX_N * REMAT_LANE_SOLVE_MAX_N];
    int32_t *X = rmi_arena_alloc(&b->mem, sizeof *X * (size_t)(n * k)), zero = -1;
    const int64_t w = is_lu ? n : 2 * n; /* columns read from F */
    if (!X)
        return b->ok = 0, NULL;
    int64_t cb[REMAT_MAX_RANK] = {0};
    for (;;) { /* odometer over the batch axes but the lane */
        int32_t *in = is_lu ? A : P;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < w; j++) {
                cb[nb] = i, cb[nb + 1] = j;
                in[i * w + j] = F->reg[coords_entry(&F->shape, F->lane, cb)];
            }
        for (int64_t i = 0; B && i < n; i++)
            for (int64_t q = 0; q < k; q++) {
                cb[nb] = i, cb[nb + 1] = q;
                X[i * k + q] = B->reg[coords_entry(&B->shape, B->lane, cb)];
            }
        if (is_lu ? !rmi_lanes_lu((int)n, A, P, solve_op, b)
                  : !rmi_lanes_lu_solve((int)n, (int)k, (int)N->p.solve_transpose, P, X, solve_op, b))
            return b->ok = 0, NULL;
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < (is_lu ? 2 * n : k); q++) {
                int32_t v = is_lu ? P[i * 2 * n + q] : X[i * k + q];
                if (v < 0)
                    v = zero >= 0 ? zero : (zero = konst(b, o->dt, 0.0));
                cb[nb] = i, cb[nb + 1] = q;
                o->reg[coords_entry(&o->shape, o->lane, cb)] = v;
            }
        int a = nb - 1;
        while (a >= 0 && (a == o->lane || ++cb[a] == o->shape.dims[a]))
            cb[a--] = 0;
        if (a < 0)
            return o;
    }
}

REMAT_EXHAUSTIVE_BEGIN
/* Translates f with its arguments given; fills outs[0..n_outs). */
static void emit_fn(lb *b, const remat_fn *f0, lval *const *args, lval **outs)
{
    remat_fn *f = rmi_fn_inline_calls(f0);
    const int32_t nn = remat_fn_num_nodes(f);
    lval **val = f ? rmi_calloc((size_t)nn + 1, sizeof *val) : NULL;
    if (!val)
        b->ok = 0;
    for (int32_t v = 0; b->ok && v < nn; v++) {
        const remat_node *N = rmi_fn_node(f, v);
        lval *x[64];
        if (N->nin > 64) {
            b->ok = 0;
            break;
        }
        for (int q = 0; q < N->nin; q++)
            x[q] = val[N->in[q]];
        switch (remat_op_category_of((remat_op)N->op)) {
        case REMAT_OPCAT_LEAF: val[v] = N->op == REMAT_OP_ARG ? args[N->p.arg_pos] : constant(b, N); break;
        case REMAT_OPCAT_IDENTITY: val[v] = x[0]; break;
        case REMAT_OPCAT_STRUCTURAL:
            val[v] = remat_op_param_of((remat_op)N->op) == REMAT_OPP_NONE ? reshape(b, x[0], N)
                                                                           : routed(b, N, x, N->nin);
            break;
        case REMAT_OPCAT_REDUCE: val[v] = reduce(b, x[0], N); break;
        case REMAT_OPCAT_UNARY:
        case REMAT_OPCAT_BINARY:
        case REMAT_OPCAT_COMPARE:
        case REMAT_OPCAT_SELECT:
        case REMAT_OPCAT_CONVERT: val[v] = elementwise(b, N, x, N->nin); break;
        case REMAT_OPCAT_LINALG: val[v] = linalg(b, N, x); break;
        case REMAT_OPCAT_DOT: /* declined: the body is interpreted */
        case REMAT_OPCAT_CUSTOM:
        case REMAT_OPCAT_CONTROL:
        case REMAT_OPCAT_COUNT: b->ok = 0; break;
        }
        if (!val[v])
            b->ok = 0;
    }
    for (int i = 0; b->ok && i < remat_fn_num_outputs(f); i++)
        outs[i] = val[remat_fn_out(f, i)];
    rmi_free(val);
    remat_fn_free(f);
}
REMAT_EXHAUSTIVE_END

/* ---- the kernels ---- */

typedef struct {
    const lanes_loop *d;
    int nc, nx, nk, ny, nt;
    int base[LB_KINDS + 1];
    bool packed; /* CARRY and CT with the lane axis last (lanes.h) */
} layout;

static int buf_of(const layout *L, int kind, int i) { return L->base[kind] + i; }

/* the body's argument values: carries from `carry_kind` (-1: none), x_t, consts */
static void body_args(lb *b, const layout *L, int carry_kind, lval **args)
{
    const lanes_loop *d = L->d;
    for (int i = 0; i < L->nc && carry_kind >= 0; i++)
        args[i] = load(b, buf_of(L, carry_kind, i), d->in[i].dt, &d->in[i].shape);
    for (int i = 0; i < L->nx; i++)
        args[L->nc + i] = load(b, buf_of(L, LB_X, i), d->in[L->nc + i].dt, &d->in[L->nc + i].shape);
    for (int i = 0; i < L->nk; i++)
        args[L->nc + L->nx + i] =
            load(b, buf_of(L, LB_K, i), d->in[L->nc + L->nx + i].dt, &d->in[L->nc + L->nx + i].shape);
}

/* the backward half, given the residual values; accumulates CTK */
static void emit_backward(lb *b, const layout *L, lval **res)
{
    const lanes_loop *d = L->d;
    const scan_body_vjp *V = d->vjp;
    const int nres = V->n_res, nc = L->nc, nx = L->nx, nk = L->nk, ny = L->ny;
    lval **args = rmi_calloc((size_t)(nres + nc + ny + 1), sizeof *args);
    lval **outs = rmi_calloc((size_t)(nc + nx + nk + 1), sizeof *outs);
    lval **acc = rmi_calloc((size_t)(nk + 1), sizeof *acc);
    if (!args || !outs || !acc)
        b->ok = 0;
    for (int j = 0; b->ok && j < nres; j++)
        args[j] = res[j];
    for (int i = 0; b->ok && i < nc; i++)
        args[nres + i] = load(b, buf_of(L, LB_CT, i), d->in[i].dt, &d->in[i].shape);
    for (int i = 0; b->ok && i < ny; i++)
        args[nres + nc + i] = load(b, buf_of(L, LB_CTY, i), d->out[nc + i].dt, &d->out[nc + i].shape);
    for (int i = 0; b->ok && i < nk; i++)
        acc[i] = load(b, buf_of(L, LB_CTK, i), d->in[nc + nx + i].dt, &d->in[nc + nx + i].shape);
    if (b->ok)
        emit_fn(b, V->bwd, args, outs);
    for (int i = 0; b->ok && i < nc; i++)
        store(b, buf_of(L, LB_CT, i), outs[i]);
    for (int i = 0; b->ok && i < nx; i++)
        store(b, buf_of(L, LB_CTX, i), outs[nc + i]);
    for (int i = 0; b->ok && i < nk; i++) {
        const lval *c = outs[nc + nx + i];
        lval *s = new_val(b, c->dt, &c->shape);
        if (!s || !acc[i] || c->lane != acc[i]->lane) {
            b->ok = 0;
            break;
        }
        for (int64_t e = 0; e < s->n; e++)
            s->reg[e] = op3(b, REMAT_OP_ADD, s->dt, acc[i]->reg[e], c->reg[e], -1, 0.0);
        store(b, buf_of(L, LB_CTK, i), s);
    }
    rmi_free(args), rmi_free(outs), rmi_free(acc);
}

/* residual values for the backward: taped ones from `tape_vals` (tape order),
 * x_t and consts from their arguments */
static void residuals(const layout *L, lval **args, lval **tape_vals, lval **res)
{
    const scan_body_vjp *V = L->d->vjp;
    for (int j = 0, t = 0; j < V->n_res; j++)
        res[j] = V->res_arg[j] < 0 ? tape_vals[t++] : args[V->res_arg[j]];
}

static void emit_kernel(lb *b, const layout *L, unsigned which)
{
    const lanes_loop *d = L->d;
    const int nc = L->nc, ny = L->ny, nin = nc + L->nx + L->nk;
    const int nres = d->vjp ? d->vjp->n_res : 0;
    lval **args = rmi_calloc((size_t)nin + 1, sizeof *args);
    lval **outs = rmi_calloc((size_t)(nc + ny + nres) + 1, sizeof *outs);
    lval **res = rmi_calloc((size_t)nres + 1, sizeof *res);
    if (!args || !outs || !res) {
        b->ok = 0;
        goto out;
    }
    switch (which) {
    case LK_ADVANCE:
    case LK_ADVANCE_SHOT:
        body_args(b, L, LB_CARRY, args);
        if (which == LK_ADVANCE_SHOT)
            for (int i = 0; i < nc; i++)
                store(b, buf_of(L, LB_SHOT, i), args[i]);
        if (b->ok)
            emit_fn(b, d->body, args, outs);
        for (int i = 0; b->ok && i < nc + ny; i++)
            store(b, i < nc ? buf_of(L, LB_CARRY, i) : buf_of(L, LB_Y, i - nc), outs[i]);
        break;
    case LK_TAPE:
        body_args(b, L, LB_CARRY, args);
        if (b->ok)
            emit_fn(b, d->vjp->fwd, args, outs);
        for (int i = 0; b->ok && i < nc + ny; i++)
            store(b, i < nc ? buf_of(L, LB_CARRY, i) : buf_of(L, LB_Y, i - nc), outs[i]);
        for (int t = 0; b->ok && t < L->nt; t++)
            store(b, buf_of(L, LB_TAPE, t), outs[nc + ny + t]);
        break;
    case LK_REVERSE: {
        body_args(b, L, -1, args); /* x_t and consts: residuals that are not taped */
        lval **tv = outs;           /* the tape entries */
        for (int t = 0; b->ok && t < L->nt; t++) {
            const remat_node *o = rmi_fn_node(d->vjp->fwd, remat_fn_out(d->vjp->fwd, nc + ny + t));
            tv[t] = load(b, buf_of(L, LB_TAPE, t), (remat_dtype)o->dtype, &o->shape);
        }
        residuals(L, args, tv, res);
        if (b->ok)
            emit_backward(b, L, res);
        break;
    }
    case LK_RECOMPUTE:
        body_args(b, L, LB_SHOT, args);
        if (b->ok)
            emit_fn(b, d->vjp->fwd, args, outs);
        if (b->ok) {
            residuals(L, args, outs + nc + ny, res);
            emit_backward(b, L, res);
        }
        break;
    case LK_PACK:   /* SHOT (the caller's layout) -> CARRY (packed) */
    case LK_UNPACK: /* CARRY -> SHOT */
        for (int i = 0; b->ok && i < nc; i++) {
            const int from = which == LK_PACK ? LB_SHOT : LB_CARRY, to = which == LK_PACK ? LB_CARRY : LB_SHOT;
            store(b, buf_of(L, to, i), load(b, buf_of(L, from, i), d->in[i].dt, &d->in[i].shape));
        }
        break;
    default: REMAT_UNREACHABLE("scan lanes: unknown kernel");
    }
out:
    rmi_free(args), rmi_free(outs), rmi_free(res);
}

static void lb_reset(lb *b, int64_t m)
{
    b->n = b->n_st = 0;
    b->m = m;
    b->ok = 1;
    rmi_arena_clear(&b->mem);
}

/* Packed carries: the element at coordinates c (lane coordinate 0) of a
 * CARRY or CT buffer moves from its place in the carry's shape to (c's
 * index among the entries) * m, the lanes following at stride 1, a
 * structure of arrays whatever the caller's layout. */
static void pack_offsets(const layout *L, int64_t m, remat_lane_ins *ins, int n)
{
    for (int i = 0; i < n; i++) {
        remat_lane_ins *I = &ins[i];
        int c = -1;
        if (I->kind == REMAT_LANE_LOAD || I->kind == REMAT_LANE_STORE) {
            if (I->buf >= L->base[LB_CARRY] && I->buf < L->base[LB_CARRY] + L->nc)
                c = I->buf - L->base[LB_CARRY];
            else if (I->buf >= L->base[LB_CT] && I->buf < L->base[LB_CT] + L->nc)
                c = I->buf - L->base[LB_CT];
        }
        if (c < 0)
            continue;
        const remat_shape *s = &L->d->in[c].shape;
        int ok = 1;
        const int lane = lane_axis(s, m, &ok);
        REMAT_ASSERT(lane >= 0 && I->lstride == lane_stride(s, lane)); /* carries are on the lanes */
        int64_t co[REMAT_MAX_RANK], f = I->off;
        for (int k = s->rank - 1; k >= 0; k--)
            co[k] = f % s->dims[k], f /= s->dims[k];
        I->off = coords_entry(s, lane, co) * m;
        I->lstride = 1;
    }
}

/* Translates one kernel into a program of its own (instructions copied out
 * of the builder, which the next kernel reuses). 0 when it does not fit. */
static int translate_kernel(lb *b, const layout *L, unsigned which, remat_lane_program *p)
{
    lb_reset(b, b->m);
    emit_kernel(b, L, which);
    for (int i = 0; b->ok && i < b->n_st; i++) /* the stores come last */
        push(b, b->st[i]);
    remat_lane_ins *ins = b->ok ? rmi_malloc(sizeof *ins * (size_t)b->n) : NULL;
    if (!ins)
        return 0;
    memcpy(ins, b->ins, sizeof *ins * (size_t)b->n);
    if (L->packed)
        pack_offsets(L, b->m, ins, b->n);
    *p = (remat_lane_program){.m = b->m, .n_ins = b->n, .ins = ins, .n_bufs = b->n_bufs, .bufs = b->bufs};
    return 1;
}

/* Every carry must be on the lanes (a carry without one would be updated by
 * every lane); with m = 1 there is nothing to check. */
static int carries_on_lanes(const lanes_loop *d, int64_t m)
{
    for (int i = 0; m > 1 && i < d->n_carry; i++) {
        int ok = 1;
        if (lane_axis(&d->in[i].shape, m, &ok) < 0 || !ok)
            return 0;
    }
    return 1;
}

int rmi_lanes_build(const lanes_loop *d, remat_backend *be, unsigned want, scan_lanes *out,
                         void *(*alloc)(void *ctx, size_t bytes), void *ctx)
{
    memset(out, 0, sizeof *out);
    if (!be->iface.compile_lanes || !be->iface.can_compile_lanes() || !want || d->length == 0)
        return 0;
    if ((want & (LK_TAPE | LK_REVERSE | LK_RECOMPUTE)) && !d->vjp)
        return 0;
    layout L = {.d = d, .nc = d->n_carry, .nx = d->n_xs, .nk = d->n_consts, .ny = d->n_ys};
    const int nres = d->vjp ? d->vjp->n_res : 0;
    for (int j = 0; j < nres; j++)
        L.nt += d->vjp->res_arg[j] < 0;
    const int count[LB_KINDS] = {[LB_CARRY] = L.nc, [LB_X] = L.nx, [LB_K] = L.nk, [LB_Y] = L.ny, [LB_SHOT] = L.nc,
                                 [LB_TAPE] = L.nt, [LB_CT] = L.nc, [LB_CTY] = L.ny, [LB_CTX] = L.nx, [LB_CTK] = L.nk};
    for (int k = 0; k < LB_KINDS; k++)
        L.base[k + 1] = L.base[k] + count[k];
    lb b = {.n_bufs = L.base[LB_KINDS]};
    b.bufs = rmi_calloc((size_t)b.n_bufs + 1, sizeof *b.bufs);
    int ok = b.bufs != NULL;
    for (int k = 0; ok && k < LB_KINDS; k++)
        for (int i = 0; i < count[k]; i++) {
            remat_lane_buf *B = &b.bufs[L.base[k] + i];
            const int nc = L.nc, nx = L.nx;
            switch (k) {
            case LB_CARRY: case LB_SHOT: case LB_CT: B->dt = (uint8_t)d->in[i].dt; break;
            case LB_X: case LB_CTX: B->dt = (uint8_t)d->in[nc + i].dt; break;
            case LB_K: case LB_CTK: B->dt = (uint8_t)d->in[nc + nx + i].dt; break;
            case LB_Y: case LB_CTY: B->dt = (uint8_t)d->out[nc + i].dt; break;
            case LB_TAPE:
                B->dt = rmi_fn_node(d->vjp->fwd, remat_fn_out(d->vjp->fwd, nc + L.ny + i))->dtype;
                break;
            }
            B->state = k == LB_CARRY || k == LB_CT || k == LB_CTK;
        }
    int64_t cand[2 * REMAT_MAX_RANK * 4 + 1];
    const int64_t nm = ok ? rmi_lanes_candidates(d, cand) : 0;
    ok = 0;
    for (int64_t q = 0; q < nm && !ok; q++) {
        if (!carries_on_lanes(d, cand[q]))
            continue;
        b.m = cand[q];
        /* interleaved carries ((B,3)) are packed, so that the kernels
         * vectorise as for (3,B); PACK / UNPACK move them */
        L.packed = false;
        for (int i = 0; b.m > 1 && i < L.nc; i++) {
            int okl = 1;
            L.packed |= lane_stride(&d->in[i].shape, lane_axis(&d->in[i].shape, b.m, &okl)) != 1;
        }
        const unsigned kernels = want | (L.packed ? LK_PACK | LK_UNPACK : 0);
        scan_lanes S = {.m = b.m, .packed = L.packed};
        remat_lane_program progs[LKI_COUNT];
        const remat_lane_program *pp[LKI_COUNT];
        int n = 0, fits = 1;
        for (int k = 0; fits && k < LKI_COUNT; k++)
            if (kernels & (1u << k)) {
                fits = translate_kernel(&b, &L, 1u << k, &progs[n]);
                pp[n] = &progs[n];
                n += fits;
            }
        int64_t *lane_bytes = fits ? alloc(ctx, sizeof *lane_bytes * (size_t)(b.n_bufs + 1)) : NULL;
        if (lane_bytes)
            memset(lane_bytes, 0, sizeof *lane_bytes * (size_t)(b.n_bufs + 1));
        bool shared = true;
        if (fits && lane_bytes && b.m > 1 && rmi_lanes_strides(pp, n, b.bufs, b.n_bufs, lane_bytes, &shared)) {
            S.contiguous = true;
            for (int i = 0; i < L.nc; i++)
                S.contiguous &= lane_bytes[L.base[LB_CARRY] + i] == (int64_t)remat_dtype_size(d->in[i].dt);
            S.ranges = true;
            S.split = !shared;
        }
        if (fits && lane_bytes)
            rmi_lane_dump(n, pp);
        /* the programs, kept in the program's memory: compiled now, or later
         * by a node that starts interpreted (scan_tier.c) */
        remat_lane_program *kp = fits && lane_bytes ? alloc(ctx, sizeof *kp * (size_t)(n + 1)) : NULL;
        remat_lane_buf *kb = kp ? alloc(ctx, sizeof *kb * (size_t)(b.n_bufs + 1)) : NULL;
        if (kb)
            memcpy(kb, b.bufs, sizeof *kb * (size_t)b.n_bufs);
        for (int i = 0; kb && i < n; i++) {
            remat_lane_ins *ins = alloc(ctx, sizeof *ins * (size_t)(progs[i].n_ins + 1));
            if (!ins) {
                kb = NULL;
                break;
            }
            memcpy(ins, progs[i].ins, sizeof *ins * (size_t)progs[i].n_ins);
            kp[i] = progs[i];
            kp[i].ins = ins, kp[i].bufs = kb;
            S.n_ins += progs[i].n_ins;
        }
        if (kb) {
            const remat_lane_program *kpp[LKI_COUNT];
            for (int i = 0; i < n; i++)
                kpp[i] = &kp[i];
            S.pool_key = rmi_lane_programs_hash(n, kpp);
            S.progs = kp, S.n_progs = n, S.want = kernels;
            memcpy(S.base, L.base, sizeof S.base);
            S.lane_bytes = lane_bytes;
            *out = S;
            ok = 1;
        } else if (fits) {
            q = nm; /* out of memory: interpreted */
        }
        for (int i = 0; i < n; i++)
            rmi_free((void *)progs[i].ins);
    }
    rmi_free(b.ins), rmi_free(b.st), rmi_free(b.bufs), rmi_free(b.flags);
    rmi_arena_clear(&b.mem);
    return ok;
}

remat_status rmi_lanes_get_views(scan_lanes *const *views, int n_views, struct lanes_memo_entry *memo,
                                 remat_backend *be, const char *cache_dir, bool compile)
{
    const remat_lane_program *pp[2 * LKI_COUNT];
    remat_lane_fn got[2 * LKI_COUNT];
    int n = 0;
    REMAT_ASSERT(n_views <= 2);
    for (int v = 0; v < n_views; v++) {
        REMAT_ASSERT(views[v]->n_progs <= LKI_COUNT);
        for (int i = 0; i < views[v]->n_progs; i++)
            pp[n++] = &views[v]->progs[i];
    }
    remat_status st = REMAT_ERR_UNSUPPORTED;
    if (memo && rmi_lanes_memo_code(memo, n, got)) /* another node of the body got it */
        st = REMAT_OK;
    else if (compile)
        st = be->iface.compile_lanes(n, pp, got, cache_dir); /* one compilation */
    else if (be->iface.load_lanes)
        st = be->iface.load_lanes(n, pp, got, cache_dir);
    if (st != REMAT_OK)
        return st;
    if (memo)
        rmi_lanes_memo_set_code(memo, n, got);
    for (int v = 0, i = 0; v < n_views; v++)
        for (int k = 0; k < LKI_COUNT; k++)
            if (views[v]->want & (1u << k))
                views[v]->fn[k] = got[i++];
    return REMAT_OK;
}

remat_status rmi_lanes_get(scan_lanes *S, remat_backend *be, const char *cache_dir, bool compile)
{
    REMAT_ASSERT(S->progs);
    return rmi_lanes_get_views(&S, 1, S->memo, be, cache_dir, compile);
}
