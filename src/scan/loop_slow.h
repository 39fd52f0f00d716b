/* loop_slow.h (internal) — the slow snapshot tier's extent (loop_slow.c). */
#ifndef REMAT_SCAN_LOOP_SLOW_H
#define REMAT_SCAN_LOOP_SLOW_H

#include <stddef.h>
#include <stdint.h>

#include "remat/schedule.h"

/* The slow slots a two-tier schedule writes over n steps (its file's
 * extent, in carries): the highest slot past spec->snapshots it takes a
 * snapshot in, plus one; 0 when none. The schedule's message on failure. */
remat_status rmi_loop_slow_extent(const remat_schedule_spec *spec, int64_t n, int64_t *extent);

#endif
