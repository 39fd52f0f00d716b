/* jit_disk.c — the on-disk cache of compiled lane programs (jit_disk.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cpu/jit_disk.h"
#include "backend/cpu/jit_tmp.h"
#include "backend/cpu/vmath.h"
#include "core/alloc.h"
#include "core/config.h"

/* Bump when the file layout changes; older files then fail the magic check. */
static const char magic[8] = {'R', 'M', 'T', 'L', 'A', 'N', 'E', '1'};
enum { HEADER = 8 + 8 + 8, MAX_ENTRY = 64 << 20 };

static atomic_llong n_hits, n_misses, n_rejected, n_stored;

void rmi_jit_disk_get_counts(remat_jit_disk_counts *out)
{
    *out = (remat_jit_disk_counts){.hits = atomic_load(&n_hits), .misses = atomic_load(&n_misses),
                                   .rejected = atomic_load(&n_rejected), .stored = atomic_load(&n_stored)};
}

static void debug(const char *what, const char *path)
{
    if (rmi_env_flag("REMAT_CACHE_DEBUG")) /* a debugging aid: the environment's only */
        fprintf(stderr, "remat: jit cache %s %s\n", what, path);
}

/* FNV-1a, 64 bits: names files and checks contents (the key itself is
 * compared in full, so a collision costs a compilation, never wrong code) */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
#define FNV0 0xcbf29ce484222325ull

/* mkdir -p, each new level 0700; the last one's stat into st */
static bool make_dirs(char *path, struct stat *st)
{
    for (char *s = path + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        const char c = *s;
        *s = '\0';
        const int rc = mkdir(path, 0700);
        *s = c;
        if (rc != 0 && errno != EEXIST)
            return false;
        if (c == '\0')
            break;
    }
    return stat(path, st) == 0 && S_ISDIR(st->st_mode);
}

/* A directory or entry that another user wrote, or could write, is not
 * trusted (as ccache and pip do): an entry is code this process runs. */
static bool trusted(const struct stat *st)
{
    return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

bool rmi_jit_disk_dir(const char *want, char *dir, size_t cap)
{
    if (!want || !*want)
        return false;
    const int n = snprintf(dir, cap, "%s", want);
    struct stat st;
    if (!(n > 0 && (size_t)n < cap && make_dirs(dir, &st)))
        return false;
    if (!trusted(&st)) {
        static atomic_flag said = ATOMIC_FLAG_INIT; /* loops still compile: said once, not per compilation */
        if (!atomic_flag_test_and_set(&said))
            fprintf(stderr, "remat: jit cache '%s' not used: %s; compiling in memory (chmod go-w, or set "
                            "REMAT_CACHE_DIR or remat_compile_options.cache_dir)\n", dir,
                    st.st_uid != geteuid() ? "another user owns it" : "others may write to it");
        return false;
    }
    return true;
}

static void entry_path(char *path, size_t cap, const char *dir, const void *key, size_t key_len)
{
    snprintf(path, cap, "%s/lanes-%016llx.rjit", dir, (unsigned long long)fnv(FNV0, key, key_len));
}

static unsigned char *read_file(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !trusted(&st) || st.st_size < HEADER + 8 ||
        st.st_size > MAX_ENTRY)
        return NULL;
    unsigned char *b = rmi_malloc((size_t)st.st_size);
    size_t got = 0;
    while (b && got < (size_t)st.st_size) {
        const ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (b && got != (size_t)st.st_size)
        rmi_free(b), b = NULL;
    *len = got;
    return b;
}

/* the shared object's bytes, loaded through a memfd */
static void *load_so(const unsigned char *so, size_t len)
{
    const int fd = memfd_create("remat-lanes", MFD_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t put = 0;
    while (put < len) {
        const ssize_t w = write(fd, so + put, len - put);
        if (w <= 0)
            break;
        put += (size_t)w;
    }
    void *h = NULL;
    if (put == len) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        rmi_vm_export_symbols(); /* the SLEEF functions the code imports */
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    /* The fd stays open while the object is loaded (for the life of the
     * process): the loader knows objects by path, and a later load through a
     * reused descriptor number would be handed this object again. */
    if (!h)
        close(fd);
    return h;
}

void *rmi_jit_disk_load(const char *dir, const void *key, size_t key_len)
{
    char path[4200];
    entry_path(path, sizeof path, dir, key, key_len);
    /* O_NONBLOCK: a FIFO put in the entry's place must not block the open (it
     * is then no regular file: rejected); O_NOFOLLOW: entries are never links */
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        atomic_fetch_add(&n_misses, 1);
        debug("miss", path);
        return NULL;
    }
    size_t len = 0;
    unsigned char *b = read_file(fd, &len);
    close(fd);
    uint64_t kl = 0, sl = 0, sum = 0;
    if (b) {
        memcpy(&kl, b + 8, 8), memcpy(&sl, b + 16, 8);
        memcpy(&sum, b + len - 8, 8);
    }
    void *h = NULL;
    if (b && !memcmp(b, magic, 8) && kl == key_len && sl <= len && HEADER + kl + sl + 8 == len &&
        fnv(FNV0, b, len - 8) == sum && !memcmp(b + HEADER, key, key_len))
        h = load_so(b + HEADER + kl, (size_t)sl);
    rmi_free(b);
    if (!h) {
        atomic_fetch_add(&n_rejected, 1);
        atomic_fetch_add(&n_misses, 1);
        debug("rejected", path);
        return NULL;
    }
    atomic_fetch_add(&n_hits, 1);
    debug("hit", path);
    return h;
}

static bool write_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n > 0) {
        const ssize_t w = write(fd, b, n);
        if (w <= 0)
            return false;
        b += w, n -= (size_t)w;
    }
    return true;
}

void rmi_jit_disk_store(const char *dir, const void *key, size_t key_len, const char *so_path)
{
    const int sfd = open(so_path, O_RDONLY | O_CLOEXEC);
    if (sfd < 0)
        return;
    struct stat st;
    unsigned char *so = NULL;
    size_t so_len = 0;
    if (fstat(sfd, &st) == 0 && st.st_size > 0 && st.st_size < MAX_ENTRY && (so = rmi_malloc((size_t)st.st_size))) {
        while (so_len < (size_t)st.st_size) {
            const ssize_t r = read(sfd, so + so_len, (size_t)st.st_size - so_len);
            if (r <= 0)
                break;
            so_len += (size_t)r;
        }
    }
    close(sfd);
    char tmp[4200], path[4200];
    const int fd = so && so_len == (size_t)st.st_size ? rmi_jit_tmp_open(tmp, sizeof tmp, dir, "lanes") : -1;
    if (fd >= 0) {
        unsigned char head[HEADER];
        const uint64_t kl = key_len, sl = so_len;
        memcpy(head, magic, 8), memcpy(head + 8, &kl, 8), memcpy(head + 16, &sl, 8);
        const uint64_t sum = fnv(fnv(fnv(FNV0, head, HEADER), key, key_len), so, so_len);
        bool ok = write_all(fd, head, HEADER) && write_all(fd, key, key_len) && write_all(fd, so, so_len) &&
                  write_all(fd, &sum, 8);
        ok = close(fd) == 0 && ok;
        entry_path(path, sizeof path, dir, key, key_len);
        if (ok && chmod(tmp, 0600) == 0 && rename(tmp, path) == 0) { /* atomic: whole entry or the old one */
            atomic_fetch_add(&n_stored, 1);
            debug("stored", path);
        } else {
            unlink(tmp);
        }
    }
    rmi_free(so);
}
