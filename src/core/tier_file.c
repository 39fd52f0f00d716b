/* tier_file.c — the file of a run's slow tier (tier_file.h). */
#include "core/tier_file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

int rmi_tier_file_open(const char *dir, const char *prefix, size_t bytes, int64_t max_bytes, const char *what,
                       const char *tier)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s-XXXXXX", dir, prefix) >= (int)sizeof path) {
        rmi_error(REMAT_ERR_IO, "%s: the %s directory '%.400s' is too long a path", what, tier, dir);
        return -1;
    }
    const int fd = mkstemp(path);
    if (fd < 0) {
        rmi_error(REMAT_ERR_IO, "%s: cannot make the %s file in '%s': %s", what, tier, dir, strerror(errno));
        return -1;
    }
    unlink(path);
    const bool over = max_bytes > 0 && (int64_t)bytes > max_bytes;
    const int e = over ? ENOSPC : posix_fallocate(fd, 0, (off_t)bytes);
    if (e != 0) {
        close(fd);
        rmi_error(REMAT_ERR_IO, "%s: cannot reserve %zu bytes for the %s in '%s': %s%s", what, bytes, tier, dir,
                  strerror(e), over ? " (tier_max_bytes)" : "");
        return -1;
    }
    return fd;
}
