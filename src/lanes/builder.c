/*
 * builder.c — the lane-program builder (builder_impl.h): instructions
 * pushed with the flags that keep lane values and sums across lanes apart,
 * and values read from and written to buffers entry by entry.
 */
#include <string.h>

#include "core/alloc.h"
#include "lanes/builder_impl.h"

int32_t rmi_lb_push_to(lb *b, remat_lane_ins **arr, int *n, int *cap, remat_lane_ins I)
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

int32_t rmi_lb_push(lb *b, remat_lane_ins I)
{
    uint8_t f = 0;
    switch (I.kind) {
    case REMAT_LANE_LOAD: f = b->m > 1 && I.lstride != 0 ? F_VARYING : 0; break;
    case REMAT_LANE_SUM0: f = F_POST; break;
    case REMAT_LANE_ACC: /* adds to a sum in the lanes: the only in-lane reader of a post register */
        if (!(rmi_lb_flags_of(b, I.a) & F_POST) || (rmi_lb_flags_of(b, I.b) & F_POST))
            return b->ok = 0, -1;
        break;
    case REMAT_LANE_OP:
        f = rmi_lb_flags_of(b, I.a) | rmi_lb_flags_of(b, I.b) | rmi_lb_flags_of(b, I.c);
        if ((f & F_VARYING) && (f & F_POST))
            return b->ok = 0, -1; /* a lane value combined with a sum across lanes */
        I.post = (f & F_POST) != 0;
        break;
    default: break;
    }
    const int32_t r = rmi_lb_push_to(b, &b->ins, &b->n, &b->cap, I);
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

int32_t rmi_lb_op3(lb *b, remat_op op, remat_dtype dt, int32_t x, int32_t y, int32_t z, double imm)
{
    return rmi_lb_push(b, (remat_lane_ins){.kind = REMAT_LANE_OP, .dt = (uint8_t)dt, .op = (uint16_t)op, .a = x, .b = y,
                                           .c = z, .buf = -1, .imm = imm});
}

int32_t rmi_lb_konst(lb *b, remat_dtype dt, double v)
{
    return rmi_lb_push(b, (remat_lane_ins){.kind = REMAT_LANE_CONST, .dt = (uint8_t)dt, .a = -1, .b = -1, .c = -1,
                                           .buf = -1, .imm = v});
}

/* ---- values in buffers ---- */

lval *rmi_lb_new_val(lb *b, remat_dtype dt, const remat_shape *s)
{
    lval *v = rmi_arena_alloc(&b->mem, sizeof *v);
    int ok = 1;
    if (!v)
        return b->ok = 0, NULL;
    v->dt = dt;
    v->shape = *s;
    v->lane = rmi_lb_lane_axis(s, b->m, &ok);
    v->n = rmi_lb_entries(s, v->lane);
    if (v->n == 0 || remat_shape_numel(s) == 0) /* empty values: nothing a loop would gain */
        return b->ok = 0, NULL;
    v->reg = rmi_arena_alloc(&b->mem, sizeof *v->reg * (size_t)(v->n + 1));
    if (!ok || !v->reg)
        return b->ok = 0, NULL;
    return v;
}

/* a value of desc (dt, s) read from buffer buf */
lval *rmi_lb_load(lb *b, int32_t buf, remat_dtype dt, const remat_shape *s)
{
    lval *v = rmi_lb_new_val(b, dt, s);
    if (!v)
        return NULL;
    const int64_t ls = rmi_lb_lane_stride(s, v->lane);
    int64_t c[REMAT_MAX_RANK];
    for (int64_t e = 0; e < v->n; e++) {
        rmi_lb_entry_coords(s, v->lane, e, c);
        v->reg[e] = rmi_lb_push(b, (remat_lane_ins){.kind = REMAT_LANE_LOAD, .dt = (uint8_t)dt, .a = -1, .b = -1,
                                                     .c = -1, .buf = buf, .off = rmi_lb_coords_flat(s, c),
                                                     .lstride = ls});
    }
    return v;
}

/* stores v into buffer buf (deferred until every load is emitted). A value
 * without a lane axis stored by every lane is fine in a plain buffer, but a
 * state buffer would be updated m times. */
void rmi_lb_store(lb *b, int32_t buf, const lval *v)
{
    if (!v) {
        b->ok = 0;
        return;
    }
    const int64_t ls = b->m > 1 ? rmi_lb_lane_stride(&v->shape, v->lane) : 0;
    int64_t c[REMAT_MAX_RANK];
    for (int64_t e = 0; e < v->n && b->ok; e++) {
        const int post = (rmi_lb_flags_of(b, v->reg[e]) & F_POST) != 0;
        /* after the lanes only a lane-less element can be written; in them, a
         * state element without a lane would be updated m times */
        if ((post && ls != 0) || (!post && ls == 0 && b->m > 1 && b->bufs[buf].state)) {
            b->ok = 0;
            return;
        }
        rmi_lb_entry_coords(&v->shape, v->lane, e, c);
        rmi_lb_push_to(b, &b->st, &b->n_st, &b->cap_st,
                       (remat_lane_ins){.kind = REMAT_LANE_STORE, .dt = (uint8_t)v->dt, .post = (uint8_t)post,
                                        .a = v->reg[e], .b = -1, .c = -1, .buf = buf,
                                        .off = rmi_lb_coords_flat(&v->shape, c), .lstride = ls});
    }
}
