/*
 * file.c — reading a whole file (core/file.h), grown by doubling.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"

remat_status remat_read_file(const char *path, const char *what, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return remat_error(REMAT_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    size_t n = 0, cap = 4096;
    char *buf = remat_malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = cap < ((size_t)1 << 40) ? remat_realloc(buf, 2 * cap) : NULL;
        if (!bigger) {
            remat_free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    remat_status st = REMAT_OK;
    if (!buf)
        st = remat_error(REMAT_ERR_NOMEM, "%s: out of memory reading the %s", path, what);
    else if (ferror(f))
        st = remat_error(REMAT_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(errno));
    fclose(f);
    if (st != REMAT_OK) {
        remat_free(buf);
        return st;
    }
    *text = buf;
    *len = n;
    return REMAT_OK;
}
