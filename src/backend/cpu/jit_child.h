/*
 * jit_child.h (internal) — libgccjit's gcc run in a child process.
 *
 * gcc's driver, embedded in libgccjit, installs handlers of its own for
 * SIGINT, SIGTERM, SIGHUP and SIGPIPE while it runs as and ld (they remove
 * its files and end the process), and toplev its own for SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL and SIGABRT. Dispositions are the process's, not a
 * thread's: run in the program's process, a SIGINT that another thread took
 * in that window ran the driver's handler and ended the whole program
 * (Python's Ctrl-C: exit 130 instead of KeyboardInterrupt). So gcc runs in a
 * child made by fork, which ignores SIGINT, SIGTERM, SIGHUP and SIGPIPE
 * (the driver leaves an ignored signal ignored, and as and ld inherit that,
 * as they inherit the compiling thread's mask, which blocks the first three):
 * a Ctrl-C to the process group ends the compilation in neither, and the
 * program's process never sees a handler but its own and remat's
 * (jit_tmp.h). The child writes the shared object at a path the parent
 * chose, and sends libgccjit's first error, or nothing, through a pipe.
 *
 * After fork only the calling thread exists in the child. It calls
 * libgccjit, which allocates (glibc's fork leaves malloc and stdio's list
 * usable in the child), creates and removes its temporary directory and
 * runs as and ld; the context was built in the parent under jit.c's lock,
 * so no other thread of remat was inside libgccjit. A program that uses
 * libgccjit itself in another thread at that moment could leave
 * libgccjit's own lock held in the child: the parent waits at most
 * REMAT_JIT_CHILD_TIMEOUT_S and then kills it (the compilation fails, the
 * loop is interpreted). The child ends with _exit: the program's atexit
 * handlers and stdio buffers are the parent's alone. fork runs the
 * program's pthread_atfork handlers (OpenBLAS's stops its threads, which
 * start again at the next product).
 */
#ifndef REMAT_CPU_JIT_CHILD_H
#define REMAT_CPU_JIT_CHILD_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/cpu/jit_lib.h"

enum { REMAT_JIT_CHILD_TIMEOUT_S = 600 };

/* Compiles c in a child process: its assembly into dump first when dump is
 * set, then a shared object into so (an existing file, replaced). true when
 * so was written; false with the reason (libgccjit's first error, or how
 * the child ended) in why. Called between rmi_jit_tmp_hold and release. */
bool rmi_jit_child_compile(gcc_jit_context *c, const char *so, const char *dump, char *why, size_t cap);

#endif
