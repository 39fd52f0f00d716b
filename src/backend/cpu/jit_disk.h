/*
 * jit_disk.h (internal) — compiled lane programs kept on disk between
 * processes, so that a second `remat pfr simulate` does not run gcc again.
 *
 * An entry is one file, <dir>/lanes-<hash>.rjit: a header, the full key
 * (remat's version, the generator's, its options, the lane programs
 * themselves: jit.c), the shared object gcc made, and a checksum. It is
 * written to a temporary file in <dir> and renamed into place, so readers
 * in other processes see a whole entry or none; a reader checks magic,
 * lengths, checksum and key before loading, and treats anything else (a
 * FIFO or a link in an entry's place included: opened without blocking or
 * following) as a miss (the next store replaces the bad file). The shared object is loaded
 * from memory (a memfd), never from the cache file itself, so a file changed
 * after the check cannot be mapped.
 *
 * An entry is code the process runs, so only the user's own are trusted (as
 * ccache and pip do): a directory another user owns or that group or others
 * may write to is not used (said once on stderr; loops are compiled in
 * memory), and such an entry is rejected.
 *
 * dir: REMAT_CACHE_DIR, else $XDG_CACHE_HOME/remat, else $HOME/.cache/remat;
 * none with REMAT_NO_CACHE=1 (or no HOME). REMAT_CACHE_DEBUG=1 prints each
 * hit, miss and store on stderr.
 */
#ifndef REMAT_CPU_JIT_DISK_H
#define REMAT_CPU_JIT_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The cache directory `want` (the compile's options: exec/hop.h
 * rmi_lane_cache_dir; created, mode 0700, if missing) into dir; false when
 * want is NULL (caching off), the directory cannot be made or is not
 * trusted. */
bool rmi_jit_disk_dir(const char *want, char *dir, size_t cap);

/* The shared object stored under key, loaded (RTLD_NOW | RTLD_LOCAL, never
 * closed), or NULL: no entry, or one that does not check out. */
void *rmi_jit_disk_load(const char *dir, const void *key, size_t key_len);

/* Stores the shared object at so_path under key (temp file + rename).
 * Failing to store (a full disk, a read-only directory) is not an error:
 * the next process compiles again. */
void rmi_jit_disk_store(const char *dir, const void *key, size_t key_len, const char *so_path);

/* Counts of this process (tests, REMAT_CACHE_DEBUG). */
typedef struct {
    int64_t hits, misses, rejected, stored; /* rejected: an entry that did not check out (also a miss) */
} remat_jit_disk_counts;
void rmi_jit_disk_get_counts(remat_jit_disk_counts *out);

#endif
