/* main.c — the remat command: dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
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
            "Run 'remat <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("remat 0.1.0 (compiled scan loops: %s; plots: %s)\n", REMAT_HAVE_GCCJIT ? "libgccjit" : "no",
#if REMAT_HAVE_PLPLOT
               "PLplot"
#else
               "no"
#endif
        );
        return 0;
    }
    if (!strcmp(argv[1], "compare"))
        return cmd_compare(argc - 1, argv + 1);
    if (!strcmp(argv[1], "pfr"))
        return cmd_pfr(argc - 1, argv + 1);
    if (!strcmp(argv[1], "mlp"))
        return cmd_mlp(argc - 1, argv + 1);
    fprintf(stderr, "remat: unknown command '%s' (expected: compare, mlp, pfr)\n", argv[1]);
    usage(stderr);
    return 2;
}
