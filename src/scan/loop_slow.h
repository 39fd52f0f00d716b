/* loop_slow.h (internal) — the slow snapshot tier's file (loop_slow.c). */
#ifndef REMAT_SCAN_LOOP_SLOW_H
#define REMAT_SCAN_LOOP_SLOW_H

#include <stddef.h>
#include <stdint.h>

#include "remat/schedule.h"

/* A new unlinked file of `bytes` reserved in dir (the compile options'
 * tier_dir, defaulted by the compile); -1 with REMAT_ERR_IO's message
 * naming `what` and the directory when it cannot be made or reserved (max_bytes > 0: more than that fails
 * as a full disk). */
int rmi_loop_slow_open(const char *dir, size_t bytes, int64_t max_bytes, const char *what);

/* The slow slots a two-tier schedule writes over n steps (its file's
 * extent, in carries): the highest slot past spec->snapshots it takes a
 * snapshot in, plus one; 0 when none. The schedule's message on failure. */
remat_status rmi_loop_slow_extent(const remat_schedule_spec *spec, int64_t n, int64_t *extent);

#endif
