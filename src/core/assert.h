/*
 * assert.h (internal) — broken invariants abort with file, line and message.
 * Never used for anything a caller can cause: those return a remat_status.
 */
#ifndef REMAT_CORE_ASSERT_H
#define REMAT_CORE_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#define REMAT_ASSERT(cond)                                                          \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "remat: internal error at %s:%d: assertion '%s' failed\n", \
                    __FILE__, __LINE__, #cond);                                     \
            abort();                                                                \
        }                                                                           \
    } while (0)

#define REMAT_UNREACHABLE(msg)                                                       \
    do {                                                                            \
        fprintf(stderr, "remat: internal error at %s:%d: %s\n", __FILE__, __LINE__, (msg)); \
        abort();                                                                    \
    } while (0)

#endif
