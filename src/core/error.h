/*
 * error.h (internal) — raising user-facing errors.
 *
 *   return remat_error(REMAT_ERR_SHAPE, "add: shapes f32[3] and f32[4] at %s:%d", ...);
 */
#ifndef REMAT_CORE_ERROR_H
#define REMAT_CORE_ERROR_H

#include "remat/status.h"

/* Records the formatted message as this thread's last error; returns st. */
remat_status remat_error(remat_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
