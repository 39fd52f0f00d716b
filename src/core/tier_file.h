/*
 * tier_file.h (internal) — the file of a run's slow tier on the host: the
 * two-tier loops' snapshots (scan/loop_slow.c) and the offloaded residuals
 * (exec/offload.c).
 */
#ifndef REMAT_CORE_TIER_FILE_H
#define REMAT_CORE_TIER_FILE_H

#include <stddef.h>
#include <stdint.h>

/* A new file of `bytes` in dir for one run: made with mkstemp as
 * "<dir>/<prefix>-XXXXXX" and unlinked at once (it lives as long as the
 * descriptor: nothing is left behind, whatever happens to the run),
 * reserved in full with posix_fallocate (a full disk fails here, not half
 * way; max_bytes > 0: more than that fails as a full disk). Its descriptor,
 * or -1 with REMAT_ERR_IO's message "<what>: ..." naming the directory and
 * `tier` ("tier", "slow snapshot tier"). */
int rmi_tier_file_open(const char *dir, const char *prefix, size_t bytes, int64_t max_bytes, const char *what,
                       const char *tier);

#endif
