/* cli_dist.c — the remat tool under mpirun/srun (cli_dist.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_dist.h"

remat_dist *cli_dist_open(void)
{
    remat_dist *d;
    if (remat_dist_init(NULL, NULL, &d) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        return NULL;
    }
    if (!remat_dist_is_root(d)) { /* rank 0 speaks for all */
        fflush(stdout);
        fflush(stderr);
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) {
            /* nothing to say it on: carry on, the output doubles */
        }
    }
    return d;
}

void cli_dist_close(remat_dist *d) { remat_dist_finalize(d); }

remat_dist *cli_dist_group(remat_dist *d) { return d && !strcmp(remat_dist_kind(d), "mpi") ? d : NULL; }

int cli_dist_agree(remat_dist *d, int ok, char *msg, size_t cap)
{
    return remat_dist_agree_msg(d, ok ? REMAT_OK : REMAT_ERR_VALUE, msg, cap) == REMAT_OK;
}

/* FNV-1a (Fowler, Noll, Vo) of the file's bytes; an unreadable file hashes
 * as its errno, so that it differs from every content */
static uint64_t file_hash(const char *path)
{
    uint64_t h = 0xcbf29ce484222325ull;
    FILE *f = fopen(path, "rb");
    if (!f)
        return (uint64_t)errno;
    unsigned char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++)
            h = (h ^ buf[i]) * 0x100000001b3ull;
    if (ferror(f))
        h = (uint64_t)EIO;
    fclose(f);
    return h;
}

/* whether rank r's hash of file i (of n) is not rank 0's */
static int differs(const double *all, int n, int r, int i)
{
    const double *h = all + (size_t)r * 2 * (size_t)n + 2 * (size_t)i;
    return h[0] != all[2 * i] || h[1] != all[2 * i + 1];
}

/* "rank 1" or "ranks 1, 3": those whose copy of file i differs; "" if none */
static void differing(const double *all, int size, int n, int i, char *buf, size_t cap)
{
    int k = 0;
    for (int r = 1; r < size; r++)
        k += differs(all, n, r, i);
    buf[0] = '\0';
    if (!k)
        return;
    size_t used = (size_t)snprintf(buf, cap, "%s", k > 1 ? "ranks " : "rank ");
    for (int r = 1, first = 1; r < size && used < cap; r++)
        if (differs(all, n, r, i)) {
            used += (size_t)snprintf(buf + used, cap - used, "%s%d", first ? "" : ", ", r);
            first = 0;
        }
}

/* Collective: per-rank rows of w doubles into all (size * w). 0 with msg. */
static int gather_rows(remat_dist *d, int size, int64_t w, const double *mine, double *all, char *msg,
                       size_t cap)
{
    int *owner = malloc(sizeof *owner * (size_t)size);
    int64_t *len = malloc(sizeof *len * (size_t)size);
    int ok = owner && len;
    if (!ok)
        snprintf(msg, cap, "out of memory comparing the input files between ranks");
    if (cli_dist_agree(d, ok, msg, cap)) {
        for (int r = 0; r < size; r++)
            owner[r] = r, len[r] = w;
        ok = remat_dist_gather(d, size, owner, len, mine, all) == REMAT_OK;
        if (!ok)
            snprintf(msg, cap, "comparing the input files between ranks: %s", remat_last_error());
    } else {
        ok = 0;
    }
    free(owner);
    free(len);
    return ok;
}

int cli_dist_same_files(remat_dist *d, int n, const char *const *labels, const char *const *paths, char *msg,
                        size_t cap)
{
    int size = remat_dist_size(d);
    if (size == 1)
        return 1;
    /* the counts first: a list that differs can name more files on one rank */
    double *counts = malloc(sizeof *counts * (size_t)size), own = n;
    if (!counts)
        snprintf(msg, cap, "out of memory comparing the input files between ranks");
    if (!cli_dist_agree(d, counts != NULL, msg, cap) || !gather_rows(d, size, 1, &own, counts, msg, cap)) {
        free(counts);
        return 0;
    }
    int m = n;
    for (int r = 0; r < size; r++)
        m = counts[r] < m ? (int)counts[r] : m;
    double *mine = malloc(sizeof *mine * 2 * (size_t)(m + 1)), *all = malloc(sizeof *all * 2 * (size_t)(m + 1) * (size_t)size);
    int ok = mine && all;
    if (!ok)
        snprintf(msg, cap, "out of memory comparing the input files between ranks");
    if (cli_dist_agree(d, ok, msg, cap)) {
        for (int i = 0; i < m; i++) { /* two halves: each exact in a double */
            uint64_t h = file_hash(paths[i]);
            mine[2 * i] = (double)(h >> 32);
            mine[2 * i + 1] = (double)(h & 0xffffffffu);
        }
        ok = gather_rows(d, size, 2 * (int64_t)m, mine, all, msg, cap);
        for (int i = 0; ok && i < m; i++) {
            char ranks[256];
            differing(all, size, m, i, ranks, sizeof ranks);
            if (ranks[0]) {
                snprintf(msg, cap, "%s %s: differs between ranks: %s read other content than rank 0", labels[i],
                         paths[i], ranks);
                ok = 0;
            }
        }
        for (int r = 1; ok && r < size; r++)
            if (counts[r] != counts[0]) {
                snprintf(msg, cap, "the input files differ between ranks: rank %d names %d, rank 0 %d", r,
                         (int)counts[r], (int)counts[0]);
                ok = 0;
            }
    } else {
        ok = 0;
    }
    free(counts);
    free(mine);
    free(all);
    return ok;
}

void cli_dist_say(const char *lead, const char *msg)
{
    int named = 0;
    if (sscanf(msg, "rank %*d: %n", &named) == 0 && named > 0)
        fprintf(stderr, "remat: %.*s%s%s\n", named, msg, lead, msg + named);
    else
        fprintf(stderr, "remat: %s%s\n", lead, msg);
}

void cli_dist_test_kill_hook(const remat_dist *d)
{
    static int calls;
    const char *rank = getenv("REMAT_TEST_KILL_RANK");
    if (!rank || atoi(rank) != remat_dist_rank(d))
        return;
    const char *at = getenv("REMAT_TEST_KILL_AT");
    if (++calls == (at ? atoi(at) : 3))
        _exit(9);
}
