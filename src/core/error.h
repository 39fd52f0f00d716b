/*
 * error.h (internal) — raising user-facing errors.
 *
 *   return rmi_error(REMAT_ERR_SHAPE, "add: shapes f32[3] and f32[4] at %s:%d", ...);
 */
#ifndef REMAT_CORE_ERROR_H
#define REMAT_CORE_ERROR_H

#include "remat/status.h"

/* Records the formatted message as this thread's last error; returns st. */
remat_status rmi_error(remat_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A NULL argument of a public function: records "remat_x: arg is NULL"
 * (REMAT_ERR_NULL, naming the function and the argument as spelled in it)
 * and returns value, the answer the header documents for NULL. In a void
 * function leave value empty: REMAT_NULL_RETURN(s, ). */
#define REMAT_NULL_RETURN(arg, value)                                                                         \
    do {                                                                                                      \
        if (!(arg)) {                                                                                         \
            rmi_error(REMAT_ERR_NULL, "%s: %s is NULL", __func__, #arg);                                      \
            return value;                                                                                     \
        }                                                                                                     \
    } while (0)

#endif
