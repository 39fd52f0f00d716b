/* ops_internal.h (internal) — helpers shared by the op constructors. */
#ifndef REMAT_AD_OPS_INTERNAL_H
#define REMAT_AD_OPS_INTERNAL_H

#include "ad/graph_impl.h"

/* A node prototype with op, dtype, shape and location set, all else zero. */
remat_node remat_proto(remat_op op, remat_dtype dt, const remat_shape *s, remat_loc loc);
/* Validates rank and dims, and that the element count times dt's size fits
 * in int64/size_t (recording an error on f); 1 if fine. */
int remat_check_dims(remat_fn *f, const char *op, remat_dtype dt, int rank, const int64_t *dims, remat_loc loc);

#endif
