/* main.c — the remat command: dispatches to subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "remat/remat.h"
#include "mlp_cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: remat <command> [options]\n"
            "\n"
            "Reverse-mode gradients of long computations under a memory budget.\n"
            "\n"
            "commands:\n"
            "  compare   run checkpoint schedules on a problem side by side (memory, recompute, time)\n"
            "  mlp       deep residual network: train a classifier, compare checkpoint policies and\n"
            "            schedules over its layers (remat mlp --help)\n"
            "  pfr       plug-flow reactor: simulate, optimize, fit, compare (remat pfr --help)\n"
            "\n"
            "Every command takes --backend cpu|cuda|cuda:N: where the programs run (default:\n"
            "REMAT_BACKEND from the environment, else cpu). Fitting runs on it too.\n"
            "\n"
            "Run 'remat <command> --help' for a command's options.\n");
}

/* --backend NAME / --backend=NAME anywhere after the command (up to "--"):
 * checked, removed from argv, and passed on as REMAT_BACKEND, which every
 * program the tool and the models compile reads (remat_backend_from_env). */
static int take_backend(int *argc, char **argv)
{
    for (int i = 2; i < *argc && strcmp(argv[i], "--"); i++) {
        const char *name = NULL;
        int used = 0;
        if (!strcmp(argv[i], "--backend")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "remat: --backend: expects cpu, cuda or cuda:N\n");
                return 0;
            }
            name = argv[i + 1], used = 2;
        } else if (!strncmp(argv[i], "--backend=", 10)) {
            name = argv[i] + 10, used = 1;
        } else {
            continue;
        }
        if (!*name) { /* the library reads "" as the default, cpu: a slip (--backend "$UNSET") */
            fprintf(stderr, "remat: --backend: '' is empty; expects cpu, cuda or cuda:N\n");
            return 0;
        }
        if (!remat_backend_from_name(name)) {
            fprintf(stderr, "remat: --backend %s: %s\n", name, remat_last_error());
            return 0;
        }
        setenv("REMAT_BACKEND", name, 1);
        memmove(&argv[i], &argv[i + used], sizeof *argv * (size_t)(*argc - i - used + 1));
        *argc -= used;
        i--;
    }
    return 1;
}

/* Under an address-space limit (ulimit -v) each thread OpenBLAS starts when
 * it loads, before main, takes a 128 MiB buffer, and one that cannot have it
 * retries for ever: it burns a core, and exit() then waits on it with the
 * output still unflushed. The thread count is read only at load, so with a
 * finite RLIMIT_AS and no count of the user's the tool runs itself again
 * with OPENBLAS_NUM_THREADS=1 (the remaining buffer, the caller's, is
 * checked when a program is compiled: src/backend/cpu/blas_reserve.c). */
static void one_blas_thread_under_limit(char **argv)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    if (getenv("OPENBLAS_NUM_THREADS") || getenv("GOTO_NUM_THREADS") || getenv("OMP_NUM_THREADS"))
        return;
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_NUM_THREADS"); /* not run again: go on as we are */
}

int main(int argc, char **argv)
{
    one_blas_thread_under_limit(argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("remat 0.1.0 (compiled scan loops: %s; CUDA: %s; plots: %s)\n", REMAT_HAVE_GCCJIT ? "libgccjit" : "no",
               REMAT_HAVE_CUDA ? "yes" : "no",
#if REMAT_HAVE_PLPLOT
               "PLplot"
#else
               "no"
#endif
        );
        return 0;
    }
    if (!take_backend(&argc, argv))
        return 2;
    int status;
    /* read REMAT_NUM_THREADS now: a bad value is named on stderr when it is
     * read, which a run that never splits a loop would not do */
    (void)remat_num_threads();
    if (!strcmp(argv[1], "compare"))
        status = cmd_compare(argc - 1, argv + 1);
    else if (!strcmp(argv[1], "pfr"))
        status = cmd_pfr(argc - 1, argv + 1);
    else if (!strcmp(argv[1], "mlp"))
        status = cmd_mlp(argc - 1, argv + 1);
    else {
        fprintf(stderr, "remat: unknown command '%s' (expected: compare, mlp, pfr)\n", argv[1]);
        usage(stderr);
        return 2;
    }
    /* a command that succeeded renamed its outputs into place (cli_outputs_finish);
     * whatever is still waiting belongs to a run that failed */
    cli_outputs_drop();
    return status;
}
