/*
 * remat/status.h — error reporting shared by every module.
 *
 * Two tiers (see docs/STYLE.md):
 *   - anything a caller can get wrong returns a remat_status; the message that
 *     names the offending input is read with remat_last_error() (per thread);
 *   - broken internal invariants abort with file and line (REMAT_ASSERT, not
 *     part of the public API).
 *
 * NULL: every public function answers a NULL pointer argument without
 * crashing: with REMAT_ERR_NULL where it returns a status, else with the
 * value its header gives (NULL, 0, -1, NaN, REMAT_NONE; a void function does
 * nothing), and remat_last_error() naming the function and the argument,
 * e.g. "remat_pfr_steps: r is NULL". _free(NULL) is a silent no-op, and so
 * is a NULL that means something (a NULL remat_dist is a group of one rank,
 * a NULL policy nothing_saveable). tests/test_hostile_null.c holds one row
 * per function.
 *
 *   remat_status st = remat_run(prog, 2, in, 1, out, &stats);
 *   if (st != REMAT_OK)
 *       fprintf(stderr, "remat: %s\n", remat_last_error());
 */
#ifndef REMAT_STATUS_H
#define REMAT_STATUS_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One list, expanded into the enum and the name table. */
#define REMAT_STATUS_LIST(X)                                         \
    X(REMAT_OK, "ok")                                                \
    X(REMAT_ERR_NULL, "null argument")                               \
    X(REMAT_ERR_SHAPE, "shape mismatch")                             \
    X(REMAT_ERR_DTYPE, "dtype mismatch")                             \
    X(REMAT_ERR_AXIS, "bad axis")                                    \
    X(REMAT_ERR_ARG, "bad argument")                                 \
    X(REMAT_ERR_VALUE, "bad value")                                  \
    X(REMAT_ERR_NOMEM, "out of memory")                              \
    X(REMAT_ERR_IO, "input/output error")                            \
    X(REMAT_ERR_PARSE, "parse error")                                \
    X(REMAT_ERR_UNSUPPORTED, "unsupported")                          \
    X(REMAT_ERR_BUDGET, "memory budget too small")                   \
    X(REMAT_ERR_NUMERIC, "non-finite value")                         \
    X(REMAT_ERR_BACKEND, "backend error")

typedef enum {
#define REMAT_X_(id, text) id,
    REMAT_STATUS_LIST(REMAT_X_)
#undef REMAT_X_
    REMAT_STATUS_COUNT
} remat_status;

/* Short fixed text for a status ("shape mismatch"). */
REMAT_API const char *remat_status_name(remat_status st);

/* The message of the last error raised on this thread ("" if none). It names
 * the offending input and, for graph building, the user's file:line. */
REMAT_API const char *remat_last_error(void);

/* Forget the last error message of this thread. */
REMAT_API void remat_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
