/* no_nccl.c — remat_dist_device_* (remat/dist_device.h) of a build without
 * CUDA or without nccl.h: no device reductions, said alike on every rank. */
#include "core/error.h"
#include "remat/dist_device.h"

remat_status remat_dist_device_new(remat_dist *d, remat_backend *be, remat_dist_device **out)
{
    if (out)
        *out = NULL;
    /* collective: a NULL on one rank is every rank's error */
    if (!be || !out)
        return remat_dist_agree(d, rmi_error(REMAT_ERR_NULL, "%s: %s is NULL", __func__, !be ? "be" : "out"));
    remat_status st = rmi_error(REMAT_ERR_UNSUPPORTED, "device sum: remat was built without %s",
                                REMAT_HAVE_CUDA ? "NCCL (no nccl.h beside the CUDA headers)" : "CUDA");
    return remat_dist_agree(d, st);
}

void remat_dist_device_free(remat_dist_device *g) { (void)g; }

remat_status remat_dist_device_sum(remat_dist_device *g, int64_t n, const int *owner, int64_t len,
                                   const double *mine, double *sum)
{
    (void)g, (void)n, (void)owner, (void)len, (void)mine, (void)sum;
    return rmi_error(REMAT_ERR_UNSUPPORTED, "device sum: remat was built without NCCL");
}
