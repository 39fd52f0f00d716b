/* jit_tmp.c — a compilation's temporary files and signals (jit_tmp.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/jit_tmp.h"

int rmi_jit_tmp_open(char *path, size_t cap, const char *dir, const char *what)
{
    const int n = snprintf(path, cap, "%s/.%s-%ld-XXXXXX", dir, what, (long)getpid());
    return n > 0 && (size_t)n < cap ? mkstemp(path) : -1;
}

/* ---- signals while compiling ---- */

static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
/* what libgccjit's embedded driver changes (gcc.cc, driver::global_initializations) */
static const int kept[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD};
enum { N_CAUGHT = sizeof caught / sizeof *caught, N_KEPT = sizeof kept / sizeof *kept };
static struct sigaction saved[N_KEPT]; /* written by a hold: one at a time */
static atomic_int held_sig;           /* the first signal that came during the hold, or 0 */
static int wake;                      /* its address tells release's wake-up call from a signal */

static void note(int sig)
{
    int none = 0;
    atomic_compare_exchange_strong(&held_sig, &none, sig); /* lock-free: async-signal-safe */
}

static void on_signal(int sig)
{
    note(sig);
}

static void caught_set(sigset_t *s)
{
    sigemptyset(s);
    for (int i = 0; i < N_CAUGHT; i++)
        sigaddset(s, caught[i]);
}

/* takes the caught signals as they come, until release wakes it */
static void *catcher(void *arg)
{
    (void)arg;
    sigset_t set;
    caught_set(&set);
    for (;;) {
        siginfo_t si;
        const int sig = sigwaitinfo(&set, &si);
        if (sig < 0)
            continue; /* EINTR */
        if (si.si_code == SI_QUEUE && si.si_pid == getpid() && si.si_value.sival_ptr == &wake)
            return NULL; /* release's wake-up call */
        note(sig);
    }
}

void rmi_jit_tmp_hold(remat_jit_tmp_hold_state *h)
{
    sigset_t block;
    caught_set(&block);
    pthread_sigmask(SIG_BLOCK, &block, &h->mask); /* the catcher starts with it too */
    atomic_store(&held_sig, 0);
    for (int k = 0; k < N_KEPT; k++) {
        sigaction(kept[k], NULL, &saved[k]);
        /* children reaped by the kernel: libgccjit's wait for its driver
         * process would fail (ECHILD), so they are the waiter's meanwhile */
        if (kept[k] == SIGCHLD && (saved[k].sa_handler == SIG_IGN || (saved[k].sa_flags & SA_NOCLDWAIT)))
            signal(SIGCHLD, SIG_DFL);
    }
    for (int k = 0; k < N_CAUGHT; k++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sa.sa_mask = block;
        sigaction(caught[k], &sa, NULL);
    }
    h->has_catcher = pthread_create(&h->catcher, NULL, catcher, NULL) == 0;
    if (!h->has_catcher) /* then blocked signals would wait pending, to be dropped by the driver: not blocked */
        pthread_sigmask(SIG_SETMASK, &h->mask, NULL);
}

void rmi_jit_tmp_release(remat_jit_tmp_hold_state *h)
{
    if (h->has_catcher) {
        pthread_sigqueue(h->catcher, caught[0], (union sigval){.sival_ptr = &wake});
        pthread_join(h->catcher, NULL);
    }
    for (int k = 0; k < N_KEPT; k++)
        sigaction(kept[k], &saved[k], NULL);
    pthread_sigmask(SIG_SETMASK, &h->mask, NULL);
    const int sig = atomic_load(&held_sig);
    /* to the process, as it came (a program that takes signals with sigwait in
     * a thread of its own gets it there), under the program's disposition now */
    if (sig)
        kill(getpid(), sig);
}

/* ---- the sweep ---- */

/* the pid in .<prefix><pid>-XXXXXX, or 0 (a name from before pids were put in) */
static long pid_in(const char *name, const char *prefix)
{
    const size_t n = strlen(prefix);
    if (strncmp(name, prefix, n))
        return -1;
    char *end;
    const long pid = strtol(name + n, &end, 10);
    return end != name + n && *end == '-' && pid > 0 ? pid : 0;
}

void rmi_jit_tmp_sweep(const char *dir)
{
    static atomic_flag done = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&done))
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    const time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        long pid = pid_in(e->d_name, ".so-");
        if (pid < 0)
            pid = pid_in(e->d_name, ".lanes-");
        if (pid < 0)
            continue;
        if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue; /* alive (EPERM: alive, another user's) */
        struct stat st;
        /* the age too: a writer in another pid namespace sharing the directory */
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && now - st.st_mtime >= REMAT_JIT_TMP_STALE_S)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}
