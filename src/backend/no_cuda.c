/* no_cuda.c — remat_backend_cuda() of a build without CUDA (-Dcuda=disabled,
 * or no nvcc/toolkit found): no backend, and an error saying so. */
#include "backend/backend_impl.h"
#include "core/error.h"

remat_backend *remat_backend_cuda(int device)
{
    rmi_error(REMAT_ERR_UNSUPPORTED, "remat was built without CUDA (device %d asked for): configure with "
              "-Dcuda=enabled where nvcc and the CUDA toolkit are installed", device);
    return NULL;
}
