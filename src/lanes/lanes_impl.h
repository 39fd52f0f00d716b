/*
 * lanes_impl.h (internal to src/lanes) — the translator's layout helpers
 * (layout.c), read by translate.c.
 */
#ifndef REMAT_LANES_IMPL_H
#define REMAT_LANES_IMPL_H

#include "lanes/lanes.h"

/* layout.c: the lane counts to try for d's carries (distinct axis
 * extents above 1, largest first, then 1) in c, which holds at least
 * 2 * REMAT_MAX_RANK * 4 + 1; returns their count. */
int64_t rmi_lanes_candidates(const lanes_loop *d, int64_t *c);
/* Each buffer's bytes from one lane to the next in programs p (1), or 0 when
 * lanes are not independent at one stride; *shared: a store every lane writes. */
int rmi_lanes_strides(const remat_lane_program *const *p, int n, const remat_lane_buf *bufs, int n_bufs,
                           int64_t *lane_bytes, bool *shared);

#endif
