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
 * for the largest bodies), then act as they would have:
 *
 *  - the compiling thread blocks them (the pool's workers always do,
 *    core/pool.c): one that no other thread takes stays pending, and comes
 *    at the release under the program's own disposition;
 *  - another thread of the program that takes one runs a handler that only
 *    notes it; the first one noted is sent to the process again at the
 *    release, under the program's disposition.
 *
 * gcc itself runs in a child process (jit_child.h), which ignores them:
 * libgccjit's driver installs handlers of its own, which end the process,
 * and never removes them; in the program's process they were in place
 * while as and ld ran (a SIGINT that another thread took ended the program)
 * and afterwards (they replaced the program's handlers for good).
 *
 * Files in the cache directory carry their process's pid in their names
 * (.so-<pid>-XXXXXX); rmi_jit_tmp_sweep removes those whose process is
 * gone and that are older than REMAT_JIT_TMP_STALE_S (a process killed by
 * SIGKILL). libgccjit's directory carries no pid: after a SIGKILL it is
 * left to the system's cleaning of TMPDIR.
 */
#ifndef REMAT_CPU_JIT_TMP_H
#define REMAT_CPU_JIT_TMP_H

#include <signal.h>
#include <stddef.h>

enum { REMAT_JIT_TMP_STALE_S = 10 * 60 };

typedef struct {
    sigset_t mask; /* the thread's signal mask before the hold */
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
