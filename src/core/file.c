/*
 * file.c — reading a whole text file (core/file.h): a regular file only,
 * at most REMAT_READ_FILE_MAX bytes, read in chunks until its end or the
 * chunk that holds its first NUL byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"

#define CHUNK ((size_t)1 << 16)

/* What a file that is not a regular file is, for the message. */
static const char *kind_of(mode_t m)
{
    if (S_ISFIFO(m))
        return "a pipe (FIFO)";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* All of fd (at most REMAT_READ_FILE_MAX bytes), stopping after the chunk
 * with the first NUL byte. */
static remat_status read_all(int fd, const char *path, const char *what, char **text, size_t *len)
{
    size_t n = 0, cap = CHUNK;
    char *buf = rmi_malloc(cap);
    if (!buf)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory reading the %s", path, what);
    for (;;) {
        if (n == cap) {
            char *bigger = rmi_realloc(buf, 2 * cap);
            if (!bigger) {
                rmi_free(buf);
                return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory reading the %s", path, what);
            }
            buf = bigger;
            cap *= 2;
        }
        size_t want = cap - n < CHUNK ? cap - n : CHUNK;
        ssize_t got = read(fd, buf + n, want);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            rmi_free(buf);
            return rmi_error(REMAT_ERR_IO, "%s: cannot read the %s: %s", path, what, strerror(e));
        }
        if (got == 0)
            break;
        /* the text formats refuse a NUL byte: the caller's check names its
         * line, and a file of zeros is not read whole first */
        int nul = memchr(buf + n, '\0', (size_t)got) != NULL;
        n += (size_t)got;
        if (nul)
            break;
        if (n > REMAT_READ_FILE_MAX) { /* it grew while being read */
            rmi_free(buf);
            return rmi_error(REMAT_ERR_IO, "%s: the %s is larger than %d MiB, more than is read of one", path,
                             what, (int)(REMAT_READ_FILE_MAX >> 20));
        }
    }
    *text = buf;
    *len = n;
    return REMAT_OK;
}

remat_status rmi_read_file(const char *path, const char *what, char **text, size_t *len)
{
    /* O_NONBLOCK: a FIFO without a writer is refused below, not waited on */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return rmi_error(REMAT_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    struct stat sb;
    remat_status st = REMAT_OK;
    if (fstat(fd, &sb) != 0)
        st = rmi_error(REMAT_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    else if (S_ISDIR(sb.st_mode))
        st = rmi_error(REMAT_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(EISDIR));
    else if (!S_ISREG(sb.st_mode))
        st = rmi_error(REMAT_ERR_IO, "%s: the %s is %s, not a regular file (it is read whole: give a file)",
                       path, what, kind_of(sb.st_mode));
    else if ((uintmax_t)sb.st_size > REMAT_READ_FILE_MAX)
        st = rmi_error(REMAT_ERR_IO, "%s: the %s is %jd bytes, more than the %d MiB that is read of one", path,
                       what, (intmax_t)sb.st_size, (int)(REMAT_READ_FILE_MAX >> 20));
    else
        st = read_all(fd, path, what, text, len);
    close(fd);
    return st;
}
