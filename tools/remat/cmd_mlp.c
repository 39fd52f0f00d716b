/* cmd_mlp.c — `remat mlp`: dispatches to train / compare. */
#include <string.h>

#include "cli.h"
#include "mlp_cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: remat mlp <command> [options]\n"
            "\n"
            "A deep residual network, Dense(W) -> L blocks -> Dense(classes), built from the\n"
            "Flax-style modules of remat/nn.h, with its blocks checkpointed (nn.remat with a\n"
            "policy) or scanned over layers under a checkpoint schedule.\n"
            "\n"
            "commands:\n"
            "  train     train a classifier on a labelled CSV (default: the shipped digits)\n"
            "  compare   one gradient of the deep network under each policy and schedule:\n"
            "            memory, recomputation, time, and the gradient against no checkpointing\n"
            "\n"
            "Run 'remat mlp <command> --help' for a command's options.\n");
}

int cmd_mlp(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "train"))
        return cmd_mlp_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "compare"))
        return cmd_mlp_compare(argc - 1, argv + 1);
    fprintf(stderr, "remat: mlp: unknown command '%s' (expected: train, compare)\n", argv[1]);
    usage(stderr);
    return 2;
}
