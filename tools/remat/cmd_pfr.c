/* cmd_pfr.c — `remat pfr`: plug-flow reactor commands, dispatched by name. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: remat pfr <command> [options]\n"
            "\n"
            "A reaction mechanism in a plug-flow reactor, differentiated by reverse mode through\n"
            "the integration under a checkpoint schedule.\n"
            "\n"
            "commands:\n"
            "  simulate  outlet and profile of the reactor, gradient of an outlet objective\n"
            "  optimize  the parameters that maximize or minimize an outlet (L-BFGS-B or SLSQP within\n"
            "            the bounds; Adam for the seed's run)\n"
            "  fit       fit the parameters to measured concentration profiles (CSV)\n"
            "  compare   checkpoint schedules side by side on the reactor's gradient\n"
            "  ensemble  outlets and their sensitivities for every parameter set of a CSV file\n"
            "\n"
            "With no options each command runs the seed's A->B->C reactor.\n"
            "Run 'remat pfr <command> --help' for a command's options.\n");
}

int cmd_pfr(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "simulate"))
        return cmd_pfr_simulate(argc - 1, argv + 1);
    if (!strcmp(cmd, "optimize"))
        return cmd_pfr_optimize(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare"))
        return cmd_pfr_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "fit"))
        return cmd_pfr_fit(argc - 1, argv + 1);
    if (!strcmp(cmd, "ensemble"))
        return cmd_pfr_ensemble(argc - 1, argv + 1);
    fprintf(stderr, "remat: pfr: unknown command '%s' (expected simulate, optimize, fit, compare or ensemble)\n", cmd);
    usage(stderr);
    return 2;
}
