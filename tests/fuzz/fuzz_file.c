/* fuzz_file.c — fuzz_as_file (fuzz.h). */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

const char *fuzz_as_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("remat-fuzz", 0);
        if (fd < 0)
            return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0)
        return NULL;
    for (size_t done = 0; done < size;) {
        ssize_t w = pwrite(fd, data + done, size - done, (off_t)done);
        if (w <= 0)
            return NULL;
        done += (size_t)w;
    }
    return path;
}
