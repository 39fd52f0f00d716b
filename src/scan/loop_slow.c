/*
 * loop_slow.c — the slow snapshot tier of two-tier loops on the CPU: one
 * file per run in the directory the compile options name (tier_dir), made
 * with mkstemp and unlinked at once (nothing is left behind, whatever
 * happens to the run), reserved in full before the first step
 * (posix_fallocate: a full disk fails there, not half way; the file as the
 * offloaded residuals', core/tier_file.h), carries written
 * and read with pwrite/pread at (slot - slow0) carries. On a device backend
 * (one with copy_in/copy_out: CUDA) the slow tier is host memory instead,
 * allocated in full when the run begins with the backend's host_alloc
 * (CUDA: pinned) or rmi_malloc where it has none (out of memory:
 * REMAT_ERR_NOMEM, as the offloaded residuals'), a carry moved with copy_out
 * when a snapshot is taken and copy_in when it is restored, in the run's
 * context, and freed where the file would be closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_impl.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/tier_file.h"
#include "scan/loop_rt.h"
#include "scan/loop_slow.h"

void rmi_loop_slow_io(loop_core *c, int slot, bool write)
{
    if (c->slow_failed)
        return;
    if (c->be->iface.copy_in) { /* host memory at the handle's address */
        char *at = (char *)(intptr_t)c->slow_fd + (size_t)(slot - c->slow0) * c->carry_bytes;
        if (write)
            c->be->iface.copy_out(c->cx, at, c->cur, c->carry_bytes);
        else
            c->be->iface.copy_in(c->cx, c->cur, at, c->carry_bytes);
        if (write && slot - c->slow0 + 1 > c->slow_hi)
            c->slow_hi = slot - c->slow0 + 1;
        return;
    }
    const off_t off = (off_t)(slot - c->slow0) * (off_t)c->carry_bytes;
    size_t done = 0;
    while (done < c->carry_bytes) {
        const ssize_t k = write ? pwrite((int)c->slow_fd, c->cur + done, c->carry_bytes - done, off + (off_t)done)
                                : pread((int)c->slow_fd, c->cur + done, c->carry_bytes - done, off + (off_t)done);
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

/* The slow stores begun and not ended yet, in the process: a forward node
 * whose backward never ran (a run cut short: an enclosing loop's reverse
 * that could not replay its schedule) frees its own at the next run's start
 * or when its program is freed (rmi_loop_slow_sweep). */
typedef struct {
    int64_t h;
    const loop_core *owner;
    remat_backend *be;
    void *state; /* the run's backend state: host_free gives a block back to it */
} live_store;
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static live_store *live;
static int n_live, cap_live;

static void free_store(remat_backend *be, const remat_exec_ctx *cx, int64_t h)
{
    const remat_backend_iface *i = &be->iface;
    if (!i->copy_in)
        close((int)h);
    else if (i->host_alloc && i->host_free)
        i->host_free(cx, (void *)(intptr_t)h);
    else
        rmi_free((void *)(intptr_t)h);
}

static bool remember(loop_core *c)
{
    pthread_mutex_lock(&live_mu);
    bool ok = n_live < cap_live;
    if (!ok) {
        const int cap = cap_live ? 2 * cap_live : 16;
        live_store *q = rmi_realloc(live, sizeof *q * (size_t)cap);
        if ((ok = q != NULL))
            live = q, cap_live = cap;
    }
    if (ok)
        live[n_live++] = (live_store){.h = c->slow_fd, .owner = c, .be = c->be, .state = c->cx ? c->cx->state : NULL};
    pthread_mutex_unlock(&live_mu);
    return ok;
}

static void forget(int64_t h, const remat_backend *be)
{
    pthread_mutex_lock(&live_mu);
    for (int i = n_live - 1; i >= 0; i--)
        if (live[i].h == h && live[i].be == be) {
            live[i] = live[--n_live];
            break;
        }
    pthread_mutex_unlock(&live_mu);
}

remat_status rmi_loop_slow_begin(loop_core *c, size_t bytes, const char *dir, int64_t max_bytes, const char *what)
{
    c->slow_hi = 0;
    c->slow_failed = false;
    c->slow_fd = -1;
    const remat_backend_iface *be = &c->be->iface;
    int64_t h = -1;
    if (!be->copy_in) { /* the directory: the compile sets it (core/config.h's default) */
        h = rmi_tier_file_open(dir ? dir : "/tmp", "remat-tier", bytes, max_bytes, what, "slow snapshot tier");
        if (h < 0)
            return REMAT_ERR_IO;
    } else {
        if (max_bytes > 0 && (int64_t)bytes > max_bytes)
            return rmi_error(REMAT_ERR_IO, "%s: cannot reserve %zu bytes of host memory for the slow snapshot tier: "
                             "more than tier_max_bytes = %lld", what, bytes, (long long)max_bytes);
        void *host = be->host_alloc && be->host_free ? be->host_alloc(c->cx, bytes) : rmi_malloc(bytes ? bytes : 1);
        if (!host) /* as the offloaded residuals' (exec/offload.c) */
            return rmi_error(REMAT_ERR_NOMEM, "%s: cannot allocate %zu bytes of host memory for the slow snapshot "
                             "tier (backend '%s')", what, bytes, be->name);
        h = (int64_t)(intptr_t)host;
    }
    c->slow_fd = h;
    if (remember(c))
        return REMAT_OK;
    free_store(c->be, c->cx, h);
    c->slow_fd = -1;
    return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for the slow snapshot tier", what);
}

void rmi_loop_slow_end(loop_core *c)
{
    if (c->slow_fd >= 0) {
        forget(c->slow_fd, c->be);
        free_store(c->be, c->cx, c->slow_fd);
    }
    c->slow_fd = -1;
}

void rmi_loop_slow_sweep(const loop_core *c)
{
    pthread_mutex_lock(&live_mu);
    for (int i = n_live - 1; i >= 0; i--)
        if (live[i].owner == c) { /* host_free: the state the block came from */
            free_store(live[i].be, &(remat_exec_ctx){.be = live[i].be, .state = live[i].state}, live[i].h);
            live[i] = live[--n_live];
        }
    pthread_mutex_unlock(&live_mu);
}

void rmi_loop_slow_put(loop_core *c, int64_t h, int64_t hi)
{
    const int64_t w[2] = {h, hi};
    char *at = c->store + c->slow_words;
    if (c->be->iface.copy_in)
        c->be->iface.copy_in(c->cx, at, w, sizeof w);
    else
        memcpy(at, w, sizeof w);
}

void rmi_loop_slow_get(loop_core *c)
{
    int64_t w[2];
    const char *at = c->store + c->slow_words;
    if (c->be->iface.copy_out)
        c->be->iface.copy_out(c->cx, w, at, sizeof w);
    else
        memcpy(w, at, sizeof w);
    c->slow_fd = w[0], c->slow_hi = w[1], c->slow_failed = false;
}

void rmi_loop_slow_fail(loop_core *c, remat_status st, const char *label)
{
    c->slow_failed = true;
    rmi_loop_fail(c, st, "%s%s%s", label ? label : "", label ? ": " : "", remat_last_error());
}

bool rmi_loop_slow_start(loop_core *c, int64_t slots, const remat_compile_options *o, const char *what)
{
    const remat_status st = rmi_loop_slow_begin(c, (size_t)slots * c->carry_bytes, o->tier_dir, o->tier_max_bytes,
                                                what);
    rmi_loop_slow_put(c, c->slow_fd, 0);
    if (st == REMAT_OK)
        return true;
    rmi_loop_slow_fail(c, st, NULL); /* REMAT_ERR_IO, or _NOMEM for host memory */
    return false;
}

void rmi_loop_slow_stop(loop_core *c)
{
    rmi_loop_slow_end(c);
    rmi_loop_slow_put(c, -1, c->slow_hi);
}
