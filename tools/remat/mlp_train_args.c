/* mlp_train_args.c — `remat mlp train`'s options: help, parsing and the checks across them (mlp_train.h). */
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mlp_train.h"
#include "pfr_cli.h"

void mlp_train_help(FILE *out)
{
    fprintf(out,
            "usage: remat mlp train [--data FILE.csv] [--layers L] [--width W] [--block mlp|ffn]\n"
            "                       [--activation A] [--policy P] [--schedule S | --memory-budget B]\n"
            "                       [--optimizer adam|sgd] [--lr X] [--momentum M] [--epochs N]\n"
            "                       [--batch B] [--shards K] [--seed S] [--test-fraction F] [--json]\n"
            "                       [--plot FILE] [--save-weights FILE] [--load-weights FILE] [--disk-dir DIR]\n"
            "\n"
            "Trains Dense(W) -> L blocks -> Dense(classes) with softmax cross-entropy on a\n"
            "labelled CSV (a header line, a 'label' column of integers 0..classes-1, the other\n"
            "columns numeric features). Prints one line per epoch (mean training loss, train\n"
            "and test accuracy, seconds), the final test accuracy and the memory plan of the\n"
            "training step: residual bytes, arena peak and scan snapshot peak, predicted by\n"
            "the plan and measured on the last full batch.\n"
            "\n"
            "  --data FILE        the CSV (default: the shipped digits, %s).\n"
            "                     Features: the shipped digits (by default or by name) are scaled\n"
            "                     by 1/16 (pixels 0..16 to [0, 1]); any other file is standardised\n"
            "                     with the mean and standard deviation of its training rows\n"
            "  --test-fraction F  the share of rows held out for testing, 0 < F < 1 (default 0.2)\n"
            "%s"
            "                     (defaults: --layers 2 --width 64 --block mlp)\n"
            "  --policy P         checkpoint each block: none (default), nothing_saveable,\n"
            "                     everything_saveable, dots_saveable, dots_with_no_batch_dims_saveable\n"
            "                     (JAX's aliases checkpoint_dots, checkpoint_dots_with_no_batch_dims too),\n"
            "                     or one with arguments, JAX's offload policies among them:\n"
            "                     'offload_dot_with_no_batch_dims(device, pinned_host)',\n"
            "                     'save_and_offload_only_these_names([], [name], device, pinned_host)',\n"
            "                     'save_only_these_names(name)': an offloaded residual leaves RAM\n"
            "                     after the forward and is read back from --disk-dir for the backward\n"
            "  --disk-dir DIR     the directory of the offloaded residuals' file (one per step, made\n"
            "                     and removed at once; default $TMPDIR, else /tmp); a missing,\n"
            "                     read-only or full directory stops the first step naming it\n"
            "  --schedule S       scan the L blocks over stacked parameters with this checkpoint\n"
            "                     schedule: store-all, per-step, periodic:K, two-level[:K], binomial:S,\n"
            "                     online:S (without --schedule or --memory-budget: unrolled)\n"
            "  --memory-budget B  bound the training step's whole peak (arena with the scan's\n"
            "                     snapshots and tapes; weights, gradients and optimiser state\n"
            "                     aside) by B bytes (suffixes k, M, G): of every policy (only\n"
            "                     --policy's if given), unrolled or scanned under store-all,\n"
            "                     per-step, periodic:K, two-level and binomial:S, the fastest\n"
            "                     whose predicted peak fits; time is measured (median of 3 steps\n"
            "                     of each that fits). Below the smallest peak: an error naming it\n"
            "  --optimizer O      adam (default) or sgd\n"
            "  --lr X             learning rate > 0 (default 0.003 for adam, 0.05 for sgd)\n"
            "  --momentum M       sgd momentum, 0 <= M < 1 (default 0.9)\n"
            "  --epochs N         passes over the training rows (default 20); 0: none, the initial\n"
            "                     weights' accuracy (with --save-weights: dump them)\n"
            "  --batch B          rows per step (default 32); the batches are shuffled by --seed.\n"
            "                     Under mpirun B is the global batch, shared by the ranks\n"
            "  --shards K         cut every batch into K micro-shards (1 <= K <= B), each one's\n"
            "                     gradient computed on its own and the K summed in shard order:\n"
            "                     the result depends on K, not on the number of ranks, so -np 1, 2\n"
            "                     and 4 and one process with the same K end with the same weights\n"
            "                     to the bit. Each rank takes a contiguous run of shards (K need\n"
            "                     not divide by the ranks; K >= ranks). Default: whole batches on\n"
            "                     one rank, %d on two or more\n"
            "  --seed S           parameter init (Flax PRNGKey(S)), split and batch order (default 0)\n"
            "  --json             print one JSON object (config, per-epoch history, final accuracy,\n"
            "                     plan) instead of the text\n"
            "  --plot FILE        draw the loss and accuracy curves (.png, .svg, .pdf, .ps)\n"
            "  --save-weights F   write the trained parameters as safetensors (tensors named by their\n"
            "                     Flax paths, 'Dense_0/kernel'; numpy/flax read it with the\n"
            "                     safetensors package), or as CSV for a name ending in .csv\n"
            "                     (parameter,index,value; exact)\n"
            "  --load-weights F   start from the parameters of a safetensors file (--save-weights')\n"
            "                     instead of the seed's: the same network (layers, width, block,\n"
            "                     unrolled or scanned) or an error naming what differs\n"
            "Under mpirun only rank 0 prints and writes files; every rank holds the same weights.\n",
            DIGITS_PATH ? DIGITS_PATH : "not built in: give --data", mlp_net_options_help, MLP_MPI_SHARDS);
}

static int quiet_fd = -1;
void mlp_train_quiet_begin(const remat_dist *d)
{
    if (remat_dist_is_root(d))
        return;
    fflush(stderr);
    int null = open("/dev/null", O_WRONLY);
    quiet_fd = null >= 0 ? dup(STDERR_FILENO) : -1;
    if (quiet_fd >= 0)
        dup2(null, STDERR_FILENO);
    if (null >= 0)
        close(null);
}
void mlp_train_quiet_end(void)
{
    if (quiet_fd < 0)
        return;
    fflush(stderr);
    dup2(quiet_fd, STDERR_FILENO);
    close(quiet_fd);
    quiet_fd = -1;
}

/* argv into a (no checks across options); 0: go on, else the exit status */
int mlp_train_parse(int argc, char **argv, mlp_train_args *a)
{
    static const struct option opts[] = {
        {"data", required_argument, 0, 'd'}, {"layers", required_argument, 0, 'L'},
        {"width", required_argument, 0, 'W'}, {"block", required_argument, 0, 'k'},
        {"activation", required_argument, 0, 'a'}, {"policy", required_argument, 0, 'P'},
        {"schedule", required_argument, 0, 's'}, {"memory-budget", required_argument, 0, 'b'},
        {"optimizer", required_argument, 0, 'O'}, {"lr", required_argument, 0, 'l'},
        {"momentum", required_argument, 0, 'm'}, {"epochs", required_argument, 0, 'e'},
        {"batch", required_argument, 0, 'B'}, {"seed", required_argument, 0, 'S'},
        {"test-fraction", required_argument, 0, 't'}, {"json", no_argument, 0, 'j'},
        {"plot", required_argument, 0, 'o'}, {"shards", required_argument, 0, 'K'},
        {"save-weights", required_argument, 0, 'w'}, {"load-weights", required_argument, 0, 'i'},
        {"disk-dir", required_argument, 0, 'D'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    if (!cli_options_once(argc, argv, opts, NULL))
        return 2;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': a->data = optarg; break;
        case 'L': if (!cli_int64("--layers", optarg, 1, 10000, &a->cfg.layers)) return 2; break;
        case 'W': if (!cli_int64("--width", optarg, 1, 1 << 16, &a->cfg.width)) return 2; break;
        case 'k': if (!mlp_parse_block(optarg, &a->cfg.block)) return 2; break;
        case 'a': a->act_text = optarg; break;
        case 'P': a->policy_text = optarg, a->policy_given = 1; break;
        case 's': a->sched_text = optarg; break;
        case 'b': if (!cli_bytes("--memory-budget", optarg, &a->budget)) return 2; break;
        case 'O': a->opt_text = optarg; break;
        case 'l': if (!cli_double("--lr", optarg, &a->lr)) return 2; a->has_lr = 1; break;
        case 'm': if (!cli_double("--momentum", optarg, &a->momentum)) return 2; a->has_momentum = 1; break;
        case 'e': if (!cli_int64("--epochs", optarg, 0, 1000000, &a->epochs)) return 2; break;
        case 'B': if (!cli_int64("--batch", optarg, 1, 1 << 20, &a->batch)) return 2; break;
        case 'K': if (!cli_int64("--shards", optarg, 1, 1 << 20, &a->shards)) return 2; break;
        case 'S': if (!cli_int64("--seed", optarg, 0, INT64_MAX, &a->seed)) return 2; break;
        case 't': if (!cli_double("--test-fraction", optarg, &a->test_fraction)) return 2; break;
        case 'j': a->json = 1; break;
        case 'o': a->plot_path = optarg; break;
        case 'w': a->weights_path = optarg; break;
        case 'i': a->load_path = optarg; break;
        case 'D': a->disk_dir = optarg; break;
        case 'h': return -1;
        default: return pfr_cli_bad_option("mlp train", c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "remat: mlp train: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    return 0;
}

/* The checks across options, all before any work; 0: go on, else the exit status. */
int mlp_train_check(mlp_train_args *a, int ranks, remat_nn_train_options *o)
{
    mlp_net_config *cfg = &a->cfg;
    cfg->act = cfg->block == MLP_BLOCK_FFN ? REMAT_NN_GELU : REMAT_NN_RELU;
    if (a->act_text && !mlp_parse_activation("--activation", a->act_text, &cfg->act))
        return 2;
    if (!mlp_parse_policy("--policy", a->policy_text, &cfg->policy, &cfg->has_policy))
        return 2;
    if (a->sched_text && a->budget >= 0) {
        fprintf(stderr, "remat: --schedule and --memory-budget exclude each other\n");
        return 2;
    }
    if (a->sched_text && remat_schedule_parse(a->sched_text, &cfg->schedule) != REMAT_OK) {
        fprintf(stderr, "remat: --schedule: %s\n", remat_last_error());
        return 2;
    }
    if (a->epochs == 0 && a->plot_path) {
        fprintf(stderr, "remat: --plot: --epochs 0 trains nothing: no curves to draw\n");
        return 2;
    }
    cfg->scanned = a->sched_text != NULL; /* a budget's choice decides it later */
    *o = (remat_nn_train_options){.loss = REMAT_NN_LOSS_SOFTMAX_CE, .batch = a->batch};
    if (!strcmp(a->opt_text, "adam"))
        o->optimizer = REMAT_NN_ADAM;
    else if (!strcmp(a->opt_text, "sgd"))
        o->optimizer = REMAT_NN_SGD;
    else {
        fprintf(stderr, "remat: --optimizer: unknown optimizer '%s' (expected adam or sgd)\n", a->opt_text);
        return 2;
    }
    if (a->has_lr && !(a->lr > 0)) {
        fprintf(stderr, "remat: --lr: must be positive (got %g)\n", a->lr);
        return 2;
    }
    o->lr = a->has_lr ? a->lr : o->optimizer == REMAT_NN_ADAM ? 3e-3 : 0.05;
    if (a->has_momentum && o->optimizer != REMAT_NN_SGD) {
        fprintf(stderr, "remat: --momentum: only with --optimizer sgd\n");
        return 2;
    }
    if (!(a->momentum >= 0 && a->momentum < 1)) {
        fprintf(stderr, "remat: --momentum: must be in [0, 1) (got %g)\n", a->momentum);
        return 2;
    }
    o->momentum = o->optimizer == REMAT_NN_SGD ? a->momentum : 0;
    if (!(a->test_fraction > 0 && a->test_fraction < 1)) {
        fprintf(stderr, "remat: --test-fraction: must be in (0, 1) (got %g)\n", a->test_fraction);
        return 2;
    }
    if (a->shards == 0 && ranks > 1 && a->batch < ranks) { /* no K fits: ranks <= K <= batch */
        fprintf(stderr, "remat: --batch: a batch of %lld rows over %d ranks; give every rank a row at least "
                "(--batch %d or more)\n", (long long)a->batch, ranks, ranks);
        return 2;
    }
    if (a->shards == 0 && ranks > 1 && a->batch < MLP_MPI_SHARDS) { /* the default does not fit: say what does */
        fprintf(stderr, "remat: --shards: the default under mpirun, %d micro-shards, exceeds the batch of %lld "
                "rows; give --shards K with %d <= K <= %lld, or --batch %d or more\n", MLP_MPI_SHARDS,
                (long long)a->batch, ranks, (long long)a->batch, MLP_MPI_SHARDS);
        return 2;
    }
    if (a->shards == 0 && ranks > 1) /* not given */
        a->shards = MLP_MPI_SHARDS;
    if (a->shards > a->batch) {
        fprintf(stderr, "remat: --shards: %lld micro-shards of a batch of %lld rows; give at most one per row\n",
                (long long)a->shards, (long long)a->batch);
        return 2;
    }
    if (a->shards > 0 && a->shards < ranks) {
        fprintf(stderr, "remat: --shards: %lld micro-shards over %d ranks; give every rank at least one "
                "(--shards %d or more)\n", (long long)a->shards, ranks, ranks);
        return 2;
    }
    o->shards = a->shards;
    if (a->disk_dir && !*a->disk_dir) {
        fprintf(stderr, "remat: --disk-dir: the directory is empty\n");
        return 2;
    }
    if (remat_compile_options_from_env(&a->copts) != REMAT_OK) {
        fprintf(stderr, "remat: mlp train: %s\n", remat_last_error());
        return 2;
    }
    if (a->disk_dir)
        a->copts.tier_dir = a->disk_dir;
    o->compile = &a->copts;
    return 0;
}

