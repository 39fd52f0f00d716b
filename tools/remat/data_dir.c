/*
 * data_dir.c — the data directory of the remat tool (data_dir.h). The build
 * passes four strings (tools/meson.build): REMAT_TOOL_BUILD_DIR, where the
 * binary is built; REMAT_SOURCE_DATA_DIR, the source tree's data/;
 * REMAT_BINDIR_TO_DATA, the path from bindir to <datadir>/remat ("" when
 * either is an absolute option: no relative path); REMAT_INSTALL_DATA_DIR,
 * <prefix>/<datadir>/remat.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_dir.h"

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory of the running binary (links resolved) into buf; 0 if unknown. */
static int exe_dir(char *buf, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    if (len <= 0 || (size_t)len >= n - 1)
        return 0;
    buf[len] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return 1;
}

/* buf: PATH_MAX bytes */
static const char *data_dir(char *buf)
{
    char exe[PATH_MAX], built[PATH_MAX], joined[2 * PATH_MAX];
    if (!exe_dir(exe, sizeof exe))
        return is_dir(REMAT_INSTALL_DATA_DIR) ? REMAT_INSTALL_DATA_DIR : NULL;
    if (realpath(REMAT_TOOL_BUILD_DIR, built) && strcmp(exe, built) == 0)
        return REMAT_SOURCE_DATA_DIR;
    /* bin/../share/remat said as share/remat: it is what --help shows */
    if (REMAT_BINDIR_TO_DATA[0]) {
        snprintf(joined, sizeof joined, "%s/%s", exe, REMAT_BINDIR_TO_DATA);
        if (is_dir(joined) && realpath(joined, buf))
            return buf;
    }
    return is_dir(REMAT_INSTALL_DATA_DIR) ? REMAT_INSTALL_DATA_DIR : NULL;
}

const char *tool_digits_path(void)
{
    static char path[PATH_MAX + 32];
    static int done;
    if (!done) {
        char buf[PATH_MAX];
        const char *dir = data_dir(buf);
        if (!dir || snprintf(path, sizeof path, "%s/digits/digits.csv", dir) >= (int)sizeof path)
            path[0] = '\0';
        done = 1;
    }
    return path[0] ? path : NULL;
}
