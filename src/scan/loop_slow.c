/*
 * loop_slow.c — the slow snapshot tier of two-tier loops on the CPU: one
 * file per run in the directory the compile options name (tier_dir), made
 * with mkstemp and unlinked at once (nothing is left behind, whatever
 * happens to the run), reserved in full before the first step
 * (posix_fallocate: a full disk fails there, not half way), carries written
 * and read with pwrite/pread at (slot - slow0) carries. Carries are host
 * memory here: loops run two-tier schedules only on host backends
 * (scan_runtime.c, while_lower.c); a device backend would stage through pinned host
 * memory behind the backend interface, which is not written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "scan/loop_rt.h"
#include "scan/loop_slow.h"

void rmi_loop_slow_io(loop_core *c, int slot, bool write)
{
    if (c->slow_failed)
        return;
    const off_t off = (off_t)(slot - c->slow0) * (off_t)c->carry_bytes;
    size_t done = 0;
    while (done < c->carry_bytes) {
        const ssize_t k = write ? pwrite(c->slow_fd, c->cur + done, c->carry_bytes - done, off + (off_t)done)
                                : pread(c->slow_fd, c->cur + done, c->carry_bytes - done, off + (off_t)done);
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            c->slow_failed = true;
            rmi_error(REMAT_ERR_IO, "%s: the slow snapshot tier: %s %zu bytes at offset %lld: %s",
                      c->kind->name, write ? "writing" : "reading", c->carry_bytes, (long long)off,
                      k < 0 ? strerror(errno) : "end of file");
            return;
        }
        done += (size_t)k;
    }
    if (write && slot - c->slow0 + 1 > c->slow_hi)
        c->slow_hi = slot - c->slow0 + 1;
}

remat_status rmi_loop_slow_extent(const remat_schedule_spec *spec, int64_t n, int64_t *extent)
{
    *extent = 0;
    remat_schedule *s;
    remat_status st = remat_schedule_new(spec, n, &s);
    if (st != REMAT_OK)
        return st;
    remat_action a;
    for (remat_schedule_next(s, &a); a.kind != REMAT_ACT_DONE; remat_schedule_next(s, &a))
        if (a.kind == REMAT_ACT_TAKESHOT && a.slot >= spec->snapshots && a.slot - spec->snapshots + 1 > *extent)
            *extent = a.slot - spec->snapshots + 1;
    remat_schedule_free(s);
    return REMAT_OK;
}

int rmi_loop_slow_open(const char *dir, size_t bytes, int64_t max_bytes, const char *what)
{
    if (!dir) /* the compile sets it (core/config.h's default) */
        dir = "/tmp";
    char path[4096];
    if (snprintf(path, sizeof path, "%s/remat-tier-XXXXXX", dir) >= (int)sizeof path) {
        rmi_error(REMAT_ERR_IO, "%s: the slow snapshot tier's directory '%s' is too long a path", what, dir);
        return -1;
    }
    const int fd = mkstemp(path);
    if (fd < 0) {
        rmi_error(REMAT_ERR_IO, "%s: cannot make the slow snapshot tier's file in '%s': %s", what, dir,
                  strerror(errno));
        return -1;
    }
    unlink(path); /* the file lives as long as the descriptor: nothing is left behind */
    int e = max_bytes > 0 && (int64_t)bytes > max_bytes ? ENOSPC : posix_fallocate(fd, 0, (off_t)bytes);
    if (e != 0) {
        close(fd);
        rmi_error(REMAT_ERR_IO, "%s: cannot reserve %zu bytes for the slow snapshot tier in '%s': %s%s", what,
                  bytes, dir, strerror(e), max_bytes > 0 && (int64_t)bytes > max_bytes ? " (tier_max_bytes)" : "");
        return -1;
    }
    return fd;
}
