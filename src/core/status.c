/* status.c — the status name table and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"

static const char *const status_names[] = {
#define REMAT_X_(id, text) [id] = text,
    REMAT_STATUS_LIST(REMAT_X_)
#undef REMAT_X_
};
_Static_assert(sizeof status_names / sizeof status_names[0] == REMAT_STATUS_COUNT,
               "status name table out of step with REMAT_STATUS_LIST");

static _Thread_local char last_error[1024];

const char *remat_status_name(remat_status st)
{
    if ((unsigned)st >= REMAT_STATUS_COUNT)
        return "unknown status";
    return status_names[st];
}

const char *remat_last_error(void) { return last_error; }

void remat_clear_error(void) { last_error[0] = '\0'; }

remat_status rmi_error(remat_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}
