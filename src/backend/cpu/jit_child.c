/* jit_child.c — libgccjit's gcc run in a child process (jit_child.h). */
#if REMAT_HAVE_GCCJIT
#include "backend/cpu/jit_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        const ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

/* the child: compiles, says how it went ("+", or "-" and the error), ends */
_Noreturn static void child(gcc_jit_context *c, const char *so, const char *dump, int out, pid_t parent)
{
    for (size_t k = 0; k < sizeof ignored / sizeof *ignored; k++)
        signal(ignored[k], SIG_IGN);
    if (dump)
        gcc_jit_context_compile_to_file(c, GCC_JIT_OUTPUT_KIND_ASSEMBLER, dump);
    gcc_jit_context_compile_to_file(c, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, so);
    const char *e = gcc_jit_context_get_first_error(c);
    if (e) {
        write_all(out, "-", 1);
        write_all(out, e, strlen(e));
    } else {
        write_all(out, "+", 1);
    }
    if (getppid() != parent) /* the program ended meanwhile (SIGKILL): nobody will load it */
        unlink(so);
    _exit(0);
}

/* milliseconds left until deadline (CLOCK_MONOTONIC), at least 0 */
static int ms_left(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const long long ms = (deadline->tv_sec - now.tv_sec) * 1000LL + (deadline->tv_nsec - now.tv_nsec) / 1000000;
    return ms < 0 ? 0 : ms > 1000000 ? 1000000 : (int)ms;
}

bool rmi_jit_child_compile(gcc_jit_context *c, const char *so, const char *dump, char *why, size_t cap)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) { /* close-on-exec: as and ld do not hold it open */
        snprintf(why, cap, "no pipe to a compiler process: %s", strerror(errno));
        return false;
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(c, so, dump, fds[1], parent);
    }
    close(fds[1]);
    if (pid < 0) {
        snprintf(why, cap, "cannot start a compiler process: %s", strerror(errno));
        close(fds[0]);
        return false;
    }
    /* its report, to the end of the pipe (the child's exit) */
    char msg[1024];
    size_t len = 0;
    bool timed_out = false;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += REMAT_JIT_CHILD_TIMEOUT_S;
    for (;;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        const int r = poll(&p, 1, ms_left(&deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        char buf[256];
        const ssize_t n = r > 0 ? read(fds[0], buf, sizeof buf) : -1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        const size_t take = (size_t)n < sizeof msg - 1 - len ? (size_t)n : sizeof msg - 1 - len;
        memcpy(msg + len, buf, take);
        len += take;
    }
    close(fds[0]);
    msg[len] = 0;
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    /* w < 0 (ECHILD): the program ignores SIGCHLD, or reaped it; the report says how it went */
    if (len > 0 && msg[0] == '+')
        return true;
    if (len > 0)
        snprintf(why, cap, "%s", msg + 1);
    else if (timed_out)
        snprintf(why, cap, "the compiler process did not finish in %d s", (int)REMAT_JIT_CHILD_TIMEOUT_S);
    else if (w == pid && WIFSIGNALED(status))
        snprintf(why, cap, "the compiler process ended by signal %d", WTERMSIG(status));
    else
        snprintf(why, cap, "the compiler process ended without a report");
    return false;
}

#else
typedef int remat_jit_child_absent; /* ISO C: no empty translation unit */
#endif /* REMAT_HAVE_GCCJIT */
