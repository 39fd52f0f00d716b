/*
 * jit_tmp.h (internal) — the temporary files of a compilation, left behind
 * by no signal that can be caught, and swept after one that cannot.
 *
 * While libgccjit compiles, it keeps a directory libgccjit-XXXXXX in TMPDIR
 * (named by libgccjit, removed when the compilation ends), and remat the
 * shared object gcc writes and the entry being stored, in the cache
 * directory. A process ended by a signal in the middle left them all. So
 * between rmi_jit_tmp_hold and rmi_jit_tmp_release, SIGINT, SIGTERM and
 * SIGHUP wait for the compilation to end and clean up (milliseconds; seconds
 * for the largest bodies), then act as they would have (the first one that
 * came is sent to the process again, under the program's own disposition):
 *
 *  - the compiling thread blocks them (the pool's workers always do,
 *    core/pool.c), and a helper thread takes them with sigwaitinfo as soon
 *    as they come. Held pending instead, they would be lost: libgccjit's
 *    driver sets each to SIG_IGN for a moment (to look at it), which drops
 *    a pending signal;
 *  - another thread of the program that takes one runs a handler that only
 *    notes it. While libgccjit's driver runs as and ld, the driver's own
 *    handler is in place instead: such a thread then ends the process with
 *    the driver's temporary files removed, the others left;
 *  - the dispositions of those signals, SIGPIPE and SIGCHLD are put back
 *    as they were: libgccjit's driver installs handlers of its own and
 *    never removes them, which replaced a program's handlers for good.
 *
 * Files in the cache directory carry their process's pid in their names
 * (.so-<pid>-XXXXXX); rmi_jit_tmp_sweep removes those whose process is
 * gone and that are older than REMAT_JIT_TMP_STALE_S (a process killed by
 * SIGKILL). libgccjit's directory carries no pid: after a SIGKILL it is
 * left to the system's cleaning of TMPDIR.
 */
#ifndef REMAT_CPU_JIT_TMP_H
#define REMAT_CPU_JIT_TMP_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

enum { REMAT_JIT_TMP_STALE_S = 10 * 60 };

typedef struct {
    sigset_t mask; /* the thread's signal mask before the hold */
    pthread_t catcher;
    bool has_catcher;
} remat_jit_tmp_hold_state;

/* One hold at a time in a process (jit.c holds gccjit_lock around it). */
void rmi_jit_tmp_hold(remat_jit_tmp_hold_state *h);
void rmi_jit_tmp_release(remat_jit_tmp_hold_state *h);

/* Creates and opens <dir>/.<what>-<pid>-XXXXXX (mkstemp), its name into
 * path; -1 when it cannot. */
int rmi_jit_tmp_open(char *path, size_t cap, const char *dir, const char *what);

/* Removes the stale temporary files of dead processes from dir, once per
 * process (the first compilation into a cache directory). */
void rmi_jit_tmp_sweep(const char *dir);

#endif
