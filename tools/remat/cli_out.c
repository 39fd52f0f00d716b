/*
 * cli_out.c — output files of the remat tool (cli.h): a regular file is
 * written to a temp file beside it and renamed over it when the run is
 * complete; a device, pipe or socket (/dev/null, /dev/stdout, /dev/full) is
 * written directly and never renamed over or removed; a symlink is followed
 * (the rename lands on its target, the link stays). Refused before any
 * work: a directory, a path that is one of the run's input files or another
 * output's file (cli_files.c), an existing file without write permission.
 * Every write, the flush, the fsync and the close are checked and a failure
 * is named by its errno. A committed file waits until cli_outputs_finish
 * renames every output of the run into place: a run that fails after one
 * output is complete (a plot that cannot be written after the weights)
 * leaves every earlier file as it was. Where the kernel can (O_TMPFILE and
 * /proc), the temp file has no name until cli_outputs_finish links it
 * beside the destination and renames it: a process killed by any means,
 * SIGKILL included, leaves nothing. Otherwise it is named from the open,
 * and SIGINT, SIGTERM and SIGHUP remove the temp files still registered,
 * then end the process as the signal would have.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* ---- temp files removed on a fatal signal ---- */

#define MAX_TEMPS 16 /* the outputs waiting for cli_outputs_finish, and a plot's PLplot file */
static char temp_path[MAX_TEMPS][PATH_MAX];
static volatile sig_atomic_t temp_used[MAX_TEMPS];

static void on_fatal_signal(int sig)
{
    for (int i = 0; i < MAX_TEMPS; i++) /* unlink, signal and raise are async-signal-safe */
        if (temp_used[i])
            unlink(temp_path[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t j = 0; j < sizeof sigs / sizeof *sigs; j++)
            sigaddset(&sa.sa_mask, sigs[j]); /* one handler at a time */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* nohup and the like: keep ignoring */
        sigaction(sigs[i], &sa, NULL);
    }
    /* past `ulimit -f` a write fails with EFBIG, which names itself, instead of killing */
    signal(SIGXFSZ, SIG_IGN);
}

int cli_temp_register(const char *path)
{
    install_handlers();
    if (strlen(path) >= PATH_MAX)
        return -1;
    for (int i = 0; i < MAX_TEMPS; i++)
        if (!temp_used[i]) {
            strcpy(temp_path[i], path);
            temp_used[i] = 1;
            return i;
        }
    return -1;
}

void cli_temp_release(int slot)
{
    if (slot >= 0 && slot < MAX_TEMPS)
        temp_used[slot] = 0;
}

static void say(const char *opt, const char *path, const char *what)
{
    fprintf(stderr, "remat: %s%scannot write '%s': %s\n", opt ? opt : "", opt ? ": " : "", path, what);
}

/* 0 with a message when the existing file at path (sb) must not be replaced. */
static int may_replace(const char *opt, const char *path, const struct stat *sb)
{
    if (S_ISDIR(sb->st_mode)) { /* found now, not after the work, at the rename */
        say(opt, path, "Is a directory");
        return 0;
    }
    if (cli_input_clash(opt, path, sb)) /* said why */
        return 0;
    /* root passes access(W_OK) on any file: the mode bits are the owner's word */
    if (S_ISREG(sb->st_mode) && (access(path, W_OK) != 0 || !(sb->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)))) {
        say(opt, path, "the file is read-only (Permission denied); remove it or make it writable first");
        return 0;
    }
    return 1;
}

/* An unnamed file in dest's directory (O_TMPFILE), or -1 where that or
 * /proc/self/fd (linkat's way to name it at commit) is not available. */
static int open_unnamed(const char *dest)
{
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) != 0)
        return -1;
    char *dir = strdup(dest);
    if (!dir)
        return -1;
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_TMPFILE | O_WRONLY, 0666);
    free(dir);
    return fd;
#else
    (void)dest;
    return -1;
#endif
}

/* Gives the unnamed file its temp name (registered first, so a signal from
 * here to the rename removes it); 0 with errno on failure. */
static int name_unnamed(cli_out *o)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(o->f));
    o->slot = cli_temp_register(o->tmp) + 1;
    if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
        return 1;
    if (errno == EEXIST && unlink(o->tmp) == 0 && linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
        return 1; /* a stale temp of an earlier process with our pid */
    int e = errno;
    cli_temp_release(o->slot - 1);
    o->slot = 0;
    errno = e;
    return 0;
}

int cli_out_open(cli_out *o, const char *path) { return cli_out_open_for(o, NULL, path); }

int cli_out_open_for(cli_out *o, const char *opt, const char *path)
{
    memset(o, 0, sizeof *o);
    o->opt = opt;
    if (!cli_output_claim(opt, path)) /* another output's file: said why */
        return 0;
    install_handlers(); /* SIGXFSZ ignored for every output; the temp files' handlers for named ones */
    struct stat sb, lsb;
    int exists = stat(path, &sb) == 0;
    if (exists && !may_replace(opt, path, &sb))
        return 0;
    if (!exists && lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) { /* not followed to wherever it points */
        say(opt, path, "a symbolic link to a missing file; create the file it names or remove the link");
        return 0;
    }
    o->path = strdup(path);
    if (!o->path)
        goto nomem;
    if (exists && !S_ISREG(sb.st_mode)) { /* a device or a pipe: write it in place */
        o->f = fopen(path, "w");
        if (!o->f)
            goto cannot;
        return 1;
    }
    /* a symlink to a file: replace the file it names, keep the link */
    const char *dest = path;
    char *real = NULL;
    if (exists && lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
        if (!(real = realpath(path, NULL)))
            goto cannot;
        dest = real;
    }
    o->dest = strdup(dest);
    o->tmp = malloc(strlen(dest) + 32);
    free(real);
    if (!o->dest || !o->tmp)
        goto nomem;
    sprintf(o->tmp, "%s.tmp.%ld", o->dest, (long)getpid());
    /* Unnamed until complete (O_TMPFILE, given a name by linkat at commit):
     * a process killed without running its handlers (SIGKILL, or mpirun
     * ending a job whose rank died) leaves nothing behind. Where the file
     * system or a missing /proc refuses that, a named temp file as below. */
    int fd = open_unnamed(o->dest);
    o->unnamed = fd >= 0;
    if (!o->unnamed) {
        o->slot = cli_temp_register(o->tmp) + 1; /* 0: none */
        /* a new file of our own: never through a link someone left at the name */
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
        if (fd < 0 && errno == EEXIST && unlink(o->tmp) == 0)
            fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
    }
    if (fd >= 0 && exists)
        fchmod(fd, sb.st_mode & 07777); /* the replaced file's permissions */
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            if (!o->unnamed)
                unlink(o->tmp);
        }
        errno = e;
        goto cannot;
    }
    return 1;
nomem:
    fprintf(stderr, "remat: out of memory\n");
    cli_out_abort(o);
    return 0;
cannot:
    say(opt, path, strerror(errno));
    cli_temp_release(o->slot - 1);
    free(o->path);
    free(o->dest);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    return 0;
}

int cli_out_check(const char *opt, const char *path)
{
    if (!cli_output_claim(opt, path))
        return 0;
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
        if (!may_replace(opt, path, &sb))
            return 0;
        if (access(path, W_OK) != 0) { /* opening a FIFO here would wait for its reader */
            say(opt, path, strerror(errno));
            return 0;
        }
        return 1;
    }
    cli_out probe;
    if (!cli_out_open_for(&probe, opt, path))
        return 0;
    cli_out_abort(&probe);
    return 1;
}

/* ---- outputs complete, waiting for the run's end ---- */

/* Complete files, in the order committed: a named temp file closed, an
 * unnamed one still open (it gets its name in cli_outputs_finish, so a
 * process killed before then leaves nothing). */
static cli_out *waiting;
static int n_waiting, cap_waiting;

static void forget_waiting(void)
{
    free(waiting);
    waiting = NULL;
    n_waiting = cap_waiting = 0;
}

void cli_outputs_drop(void)
{
    for (int i = 0; i < n_waiting; i++)
        cli_out_abort(&waiting[i]);
    forget_waiting();
}

int cli_outputs_finish(void)
{
    /* every file named and closed first: what can fail there fails before
     * any rename */
    for (int i = 0; i < n_waiting; i++) {
        cli_out *o = &waiting[i];
        int err = 0;
        if (o->unnamed) {
            if (name_unnamed(o))
                o->unnamed = 0; /* it has its temp name now: cli_out_abort unlinks it */
            else
                err = errno;
        }
        if (o->f && fclose(o->f) != 0 && !err)
            err = errno;
        o->f = NULL;
        if (err) {
            say(o->opt, o->path, strerror(err));
            cli_outputs_drop();
            return 0;
        }
    }
    int ok = 1;
    for (int i = 0; i < n_waiting; i++) {
        cli_out *o = &waiting[i];
        if (ok && rename(o->tmp, o->dest) != 0) {
            say(o->opt, o->path, strerror(errno));
            ok = 0; /* the rest are dropped: as few outputs replaced as can be */
        }
        if (ok) {
            free(o->tmp); /* renamed: nothing for cli_out_abort to remove */
            o->tmp = NULL;
        }
        cli_out_abort(o);
    }
    forget_waiting();
    return ok;
}

int cli_out_commit(cli_out *o)
{
    static int registered;
    int err = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        err = errno ? errno : EIO;
    if (!err && o->tmp && fsync(fileno(o->f)) != 0) /* a device may not sync; a file must */
        err = errno;
    if (!err && (!o->tmp || !o->unnamed)) { /* an unnamed file stays open until it is named */
        int bad = fclose(o->f) != 0;
        o->f = NULL;
        if (bad)
            err = errno;
    }
    if (!err && o->tmp) {
        if (!registered) /* a process that exits without finishing leaves no temp file */
            registered = atexit(cli_outputs_drop) == 0;
        if (n_waiting == cap_waiting) {
            int cap = cap_waiting ? 2 * cap_waiting : 4;
            cli_out *w = realloc(waiting, sizeof *w * (size_t)cap);
            if (w)
                waiting = w, cap_waiting = cap;
        }
        if (n_waiting < cap_waiting) {
            waiting[n_waiting++] = *o; /* the list owns its file, strings and slot now */
            memset(o, 0, sizeof *o);
            return 1;
        }
        err = ENOMEM;
    }
    if (err)
        say(o->opt, o->path, strerror(err));
    cli_out_abort(o);
    return !err;
}

int cli_out_fail(cli_out *o, int err)
{
    say(o->opt, o->path, strerror(err));
    cli_out_abort(o);
    return 0;
}

void cli_out_abort(cli_out *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp && !o->unnamed)
        unlink(o->tmp);
    cli_temp_release(o->slot - 1);
    free(o->path);
    free(o->dest);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

