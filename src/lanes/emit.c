/*
 * emit.c — one function's ops as lane instructions (builder_impl.h):
 * structural ops route entries (each lane kept on its own lane),
 * elementwise ops become one scalar op per entry, sums and maxima follow
 * the CPU kernel's order (within a lane, or a sum across the lanes),
 * lu/linear_solve unroll through solve.c; anything else declines the body.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ad/node.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/exhaustive.h"
#include "lanes/builder_impl.h"
#include "lanes/lanes_solve.h"

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
    lval *o = rmi_lb_new_val(b, x->dt, &N->shape);
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
            o->reg[rmi_lb_coords_entry(&o->shape, o->lane, oc)] = x->reg[rmi_lb_coords_entry(&x->shape, x->lane, ic)];
    }
    return o;
}

static lval *routed(lb *b, const remat_node *N, lval *const *x, int nin)
{
    lval *o = rmi_lb_new_val(b, (remat_dtype)N->dtype, &N->shape); /* nin <= 64: emit_fn checked */
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
        rmi_lb_entry_coords(&o->shape, o->lane, e, oc);
        int q = route(&r, oc, ic);
        if (q == 0) {
            if (zero < 0)
                zero = rmi_lb_konst(b, o->dt, 0.0);
            o->reg[e] = zero;
            continue;
        }
        const lval *src = x[q - 1];
        o->reg[e] = src->reg[rmi_lb_coords_entry(&src->shape, src->lane, ic)];
    }
    return o;
}

static lval *constant(lb *b, const remat_node *N)
{
    lval *o = rmi_lb_new_val(b, (remat_dtype)N->dtype, &N->shape);
    if (!o)
        return NULL;
    if (!N->data) { /* splat */
        int32_t r = rmi_lb_konst(b, o->dt, N->p.fill);
        for (int64_t e = 0; e < o->n; e++)
            o->reg[e] = r;
        return o;
    }
    if (o->lane >= 0) /* values that differ by lane would need a buffer of their own */
        return b->ok = 0, NULL;
    for (int64_t e = 0; e < o->n; e++)
        o->reg[e] = rmi_lb_konst(b, o->dt, o->dt == REMAT_F32 ? (double)((const float *)N->data)[e]
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
        return rmi_lb_op3(b, REMAT_OP_ADD, dt, rmi_lb_op3(b, REMAT_OP_ADD, dt, p, y, -1, 0.0), q, -1, 0.0);
    }
    return rmi_lb_op3(b, REMAT_OP_ADD, dt, x, y, -1, 0.0);
}

static lval *elementwise(lb *b, const remat_node *N, lval *const *x, int nin)
{
    lval *o = rmi_lb_new_val(b, (remat_dtype)N->dtype, &N->shape);
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
                                          : rmi_lb_op3(b, (remat_op)N->op, o->dt, x[0]->reg[e],
                                                       nin > 1 ? x[1]->reg[e] : -1, nin > 2 ? x[2]->reg[e] : -1, imm);
    return o;
}

/* reduce_max's step (backend/cpu/reduce.c, MAX_STEP): m takes x when
 * x > m, when x is NaN, or when x == m and m is -0 (IEEE maximum: +0 beats
 * -0, a NaN propagates, the latest NaN's bits win). max(x, m) is all of it
 * but the last case, where it keeps m: the select takes x there, m's sign
 * read off 1/m (-inf for -0; any negative m equal to x has x's bits). */
static int32_t max_step(lb *b, remat_dtype dt, int32_t m, int32_t x)
{
    const int32_t mx = rmi_lb_op3(b, REMAT_OP_MAX, dt, x, m, -1, 0.0);
    const int32_t neg =
        rmi_lb_op3(b, REMAT_OP_LT, dt, rmi_lb_op3(b, REMAT_OP_DIV, dt, rmi_lb_konst(b, dt, 1.0), m, -1, 0.0),
                   rmi_lb_konst(b, dt, 0.0), -1, 0.0);
    const int32_t eq_neg = rmi_lb_op3(b, REMAT_OP_MUL, dt, rmi_lb_op3(b, REMAT_OP_EQ, dt, x, m, -1, 0.0), neg, -1, 0.0);
    return rmi_lb_op3(b, REMAT_OP_SELECT, dt, eq_neg, x, mx, 0.0);
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
    lval *o = rmi_lb_new_val(b, x->dt, &N->shape);
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
        rmi_lb_entry_coords(&o->shape, o->lane, e, oc);
        for (int q = 0; q < nk; q++)
            ic[kept[q]] = oc[q];
        memset(rc, 0, sizeof rc);
        int32_t acc = across ? rmi_lb_push(b, (remat_lane_ins){.kind = REMAT_LANE_SUM0, .dt = (uint8_t)o->dt, .a = -1,
                                                                .b = -1, .c = -1, .buf = -1})
                      : is_max ? -1
                               : rmi_lb_konst(b, o->dt, 0.0);
        for (;;) { /* odometer over the reduced axes, last fastest (across: in each lane in turn) */
            for (int q = 0; q < nr; q++)
                ic[red[q]] = rc[q];
            const int32_t xe = x->reg[rmi_lb_coords_entry(&x->shape, x->lane, ic)];
            if (across)
                rmi_lb_push(b, (remat_lane_ins){.kind = REMAT_LANE_ACC, .dt = (uint8_t)o->dt, .a = acc, .b = xe,
                                                .c = -1, .buf = -1});
            else if (is_max)
                acc = acc < 0 ? xe : max_step(b, o->dt, acc, xe);
            else
                acc = rmi_lb_op3(b, REMAT_OP_ADD, o->dt, acc, xe, -1, 0.0);
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
    return rmi_lb_op3(b, op, b->ins[x].dt, x, y, z, 0.0);
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
    lval *o = rmi_lb_new_val(b, (remat_dtype)N->dtype, &N->shape);
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
                in[i * w + j] = F->reg[rmi_lb_coords_entry(&F->shape, F->lane, cb)];
            }
        for (int64_t i = 0; B && i < n; i++)
            for (int64_t q = 0; q < k; q++) {
                cb[nb] = i, cb[nb + 1] = q;
                X[i * k + q] = B->reg[rmi_lb_coords_entry(&B->shape, B->lane, cb)];
            }
        if (is_lu ? !rmi_lanes_lu((int)n, A, P, solve_op, b)
                  : !rmi_lanes_lu_solve((int)n, (int)k, (int)N->p.solve_transpose, P, X, solve_op, b))
            return b->ok = 0, NULL;
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < (is_lu ? 2 * n : k); q++) {
                int32_t v = is_lu ? P[i * 2 * n + q] : X[i * k + q];
                if (v < 0)
                    v = zero >= 0 ? zero : (zero = rmi_lb_konst(b, o->dt, 0.0));
                cb[nb] = i, cb[nb + 1] = q;
                o->reg[rmi_lb_coords_entry(&o->shape, o->lane, cb)] = v;
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
void rmi_lb_emit_fn(lb *b, const remat_fn *f0, lval *const *args, lval **outs)
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
