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
 *    as they come. Held pending instead, they would be lost: gcc's driver,
 *    run inside libgccjit (the fallback below), sets each to SIG_IGN for a moment (to look at it), which drops
 *    a pending signal;
 *  - another thread of the program that takes one runs a handler that only
 *    notes it;
 *  - gcc's driver (which runs as and ld) runs as a process of its own
 *    (gcc_jit_context_set_bool_use_external_driver: libiberty's pex, vfork
 *    and exec at once, jit.c), never inside libgccjit in this process.
 *    There, gcc.cc's driver::global_initializations installed handlers of
 *    its own for SIGINT, SIGTERM, SIGHUP and SIGPIPE (they remove the
 *    driver's files and raise the signal again under SIG_DFL) and set
 *    SIGCHLD to SIG_DFL: dispositions are the process's, so a SIGINT that
 *    another thread took while as or ld ran (Python's main thread, whose
 *    handler only sets a flag) ended the whole program. The driver's
 *    process inherits the compiling thread's mask, so a Ctrl-C to the
 *    process group waits there too, and as and ld finish and clean up;
 *  - SIGCHLD that the program ignores (SIG_IGN, SA_NOCLDWAIT) is SIG_DFL
 *    meanwhile, or libgccjit could not wait for its driver (ECHILD);
 *  - the dispositions of those signals, SIGPIPE and SIGCHLD are put back
 *    as they were: where the external driver cannot be started (no gcc-12
 *    on PATH; libgccjit0 does not depend on it) and the embedded one
 *    compiles, jit.c uses the embedded one for the rest of the process, whose handlers would
 *    otherwise replace the program's for good (and the SIGINT above ends
 *    the process again in that case).
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
