/*
 * layout.c — the lane analysis's two questions that need no
 * translation state: which lane counts a loop's carries could have, and
 * whether translated programs touch lanes at one stride each (independent
 * lanes, so blocks and lane ranges may run apart).
 */
#include <string.h>

#include "lanes/lanes.h"
#include "lanes/lanes_impl.h"

/* The distinct extents of the carries' axes above 1, largest first, then 1
 * (every loop runs as one lane): the lane counts to try, in c; their count. */
int64_t rmi_lanes_candidates(const lanes_loop *d, int64_t *c)
{
    int64_t n = 0;
    for (int i = 0; i < d->n_carry; i++)
        for (int k = 0; k < d->in[i].shape.rank; k++) {
            int64_t v = d->in[i].shape.dims[k];
            int dup = v <= 1;
            for (int64_t q = 0; q < n; q++)
                dup |= c[q] == v;
            if (!dup && n < 2 * REMAT_MAX_RANK * 4)
                c[n++] = v;
        }
    for (int64_t a = 0; a < n; a++) /* largest first */
        for (int64_t q = a + 1; q < n; q++)
            if (c[q] > c[a]) {
                int64_t t = c[a];
                c[a] = c[q], c[q] = t;
            }
    c[n++] = 1;
    return n;
}

/* Bytes from lane j to j+1 of each buffer, read off the loads and stores;
 * 0 when a kernel sums across lanes or a buffer has two lane strides (then
 * lanes are not independent, or not at one stride: no blocks). *shared:
 * some kernel stores an element every lane writes (a y_t the same in every
 * lane), which blocks running at once would race on. */
int rmi_lanes_strides(const remat_lane_program *const *p, int n, const remat_lane_buf *bufs, int n_bufs,
                           int64_t *lane_bytes, bool *shared)
{
    memset(lane_bytes, 0, sizeof *lane_bytes * (size_t)n_bufs);
    *shared = false;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < p[k]->n_ins; i++) {
            const remat_lane_ins *I = &p[k]->ins[i];
            if (I->kind == REMAT_LANE_SUM0 || I->kind == REMAT_LANE_ACC || I->kind == REMAT_LANE_EXIT || I->post)
                return 0;
            *shared |= I->kind == REMAT_LANE_STORE && I->lstride == 0;
            if ((I->kind != REMAT_LANE_LOAD && I->kind != REMAT_LANE_STORE) || I->lstride == 0)
                continue;
            const int64_t b = I->lstride * (int64_t)remat_dtype_size((remat_dtype)bufs[I->buf].dt);
            if (lane_bytes[I->buf] != 0 && lane_bytes[I->buf] != b)
                return 0;
            lane_bytes[I->buf] = b;
        }
    return 1;
}
