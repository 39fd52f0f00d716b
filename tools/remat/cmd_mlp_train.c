/* cmd_mlp_train.c — `remat mlp train`: a classifier on a labelled CSV, epoch by epoch, with its memory plan. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mlp_cli.h"
#include "pfr_cli.h"

#ifdef REMAT_DATA_DIR
#define DIGITS_PATH REMAT_DATA_DIR "/digits/digits.csv"
#else
#define DIGITS_PATH NULL
#endif

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat mlp train [--data FILE.csv] [--layers L] [--width W] [--block mlp|ffn]\n"
            "                       [--activation A] [--policy P] [--schedule S | --memory-budget B]\n"
            "                       [--optimizer adam|sgd] [--lr X] [--momentum M] [--epochs N]\n"
            "                       [--batch B] [--seed S] [--test-fraction F] [--json] [--plot FILE]\n"
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
            "  --schedule S       scan the L blocks over stacked parameters with this checkpoint\n"
            "                     schedule: store-all, per-step, periodic:K, two-level[:K], binomial:S,\n"
            "                     online:S (without --schedule or --memory-budget: unrolled)\n"
            "  --memory-budget B  scan with the fastest schedule whose snapshots and step tapes fit\n"
            "                     in B bytes (suffixes k, M, G)\n"
            "  --optimizer O      adam (default) or sgd\n"
            "  --lr X             learning rate > 0 (default 0.003 for adam, 0.05 for sgd)\n"
            "  --momentum M       sgd momentum, 0 <= M < 1 (default 0.9)\n"
            "  --epochs N         passes over the training rows (default 20)\n"
            "  --batch B          rows per step (default 32); the batches are shuffled by --seed\n"
            "  --seed S           parameter init (Flax PRNGKey(S)), split and batch order (default 0)\n"
            "  --json             print one JSON object (config, per-epoch history, final accuracy,\n"
            "                     plan) instead of the text\n"
            "  --plot FILE        draw the loss and accuracy curves (.png, .svg, .pdf, .ps)\n",
            DIGITS_PATH ? DIGITS_PATH : "not built in: give --data", mlp_net_options_help);
}

/* Whether a and b name the same file (the shipped digits given by path). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double loss, train_acc, test_acc, seconds;
} epoch_row;

/* Share of rows of t whose largest logit is at the label. */
static int accuracy(remat_nn_trainer *t, const remat_labeled *d, float *logits, double *acc)
{
    int64_t n = remat_labeled_rows(d), c = remat_labeled_classes(d), hits = 0;
    if (remat_nn_trainer_predict(t, n, remat_labeled_x(d), logits) != REMAT_OK) {
        fprintf(stderr, "remat: mlp train: %s\n", remat_last_error());
        return 0;
    }
    const int32_t *y = remat_labeled_y(d);
    for (int64_t r = 0; r < n; r++) {
        int64_t best = 0;
        for (int64_t k = 1; k < c; k++)
            if (logits[r * c + k] > logits[r * c + best])
                best = k;
        hits += best == y[r];
    }
    *acc = (double)hits / (double)n;
    return 1;
}

/* The fastest schedule of the L scanned blocks whose snapshots and tapes fit
 * the budget, from store-all's plan of the training step. */
static int schedule_for_budget(mlp_net_config cfg, int64_t budget, int64_t features,
                               const remat_nn_train_options *o, remat_schedule_spec *spec)
{
    cfg.scanned = 1;
    cfg.schedule = (remat_schedule_spec){.kind = REMAT_SCHED_STORE_ALL};
    remat_nn_module *net = mlp_net_new(&cfg);
    remat_nn_params *p = NULL;
    remat_nn_trainer *t = NULL;
    int ok = net && remat_nn_init(net, remat_prng_key_from_seed(0), REMAT_F32, 1, &features, &p) == REMAT_OK &&
             remat_nn_trainer_new(net, p, features, cfg.classes, o, &t) == REMAT_OK;
    if (!ok && net)
        fprintf(stderr, "remat: mlp train: %s\n", remat_last_error());
    if (ok) {
        remat_memory_plan plan;
        remat_nn_trainer_plan(t, &plan);
        if (remat_schedule_for_budget(budget, cfg.layers, (int64_t)plan.scan_carry_bytes,
                                      (int64_t)plan.scan_tape_bytes, spec) != REMAT_OK) {
            fprintf(stderr, "remat: --memory-budget: %s\n", remat_last_error());
            ok = 0;
        }
    }
    remat_nn_trainer_free(t);
    remat_nn_params_free(p);
    remat_nn_module_free(net);
    return ok;
}

static int plot(const char *path, const epoch_row *h, int64_t n)
{
    double *x = malloc(sizeof *x * (size_t)n * 4);
    if (!x) {
        fprintf(stderr, "remat: --plot: out of memory\n");
        return 0;
    }
    double *loss = x + n, *tr = x + 2 * n, *te = x + 3 * n;
    for (int64_t e = 0; e < n; e++)
        x[e] = (double)(e + 1), loss[e] = h[e].loss, tr[e] = h[e].train_acc, te[e] = h[e].test_acc;
    cli_series ls[1] = {{.label = "training loss", .n = (int)n, .x = x, .y = loss}};
    cli_series as[2] = {{.label = "train", .n = (int)n, .x = x, .y = tr}, {.label = "test", .n = (int)n, .x = x, .y = te}};
    cli_panel panels[2] = {
        {"training loss (mean softmax cross-entropy)", "epoch", "loss (log10)", 0, 1, 1, ls},
        {"accuracy", "epoch", "accuracy", 0, 0, 2, as},
    };
    int ok = cli_plot_panels(path, 2, panels);
    free(x);
    return ok;
}

int cmd_mlp_train(int argc, char **argv)
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
        {"plot", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    mlp_net_config cfg = {.layers = 2, .width = 64, .block = MLP_BLOCK_MLP};
    const char *data = NULL, *act_text = NULL, *policy_text = "none", *sched_text = NULL, *plot_path = NULL;
    const char *opt_text = "adam";
    int64_t budget = -1, epochs = 20, batch = 32, seed = 0;
    double lr = 0, momentum = 0.9, test_fraction = 0.2;
    int json = 0, has_lr = 0, has_momentum = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 'L': if (!cli_int64("--layers", optarg, 1, 10000, &cfg.layers)) return 2; break;
        case 'W': if (!cli_int64("--width", optarg, 1, 1 << 16, &cfg.width)) return 2; break;
        case 'k': if (!mlp_parse_block(optarg, &cfg.block)) return 2; break;
        case 'a': act_text = optarg; break;
        case 'P': policy_text = optarg; break;
        case 's': sched_text = optarg; break;
        case 'b': if (!cli_bytes("--memory-budget", optarg, &budget)) return 2; break;
        case 'O': opt_text = optarg; break;
        case 'l': if (!cli_double("--lr", optarg, &lr)) return 2; has_lr = 1; break;
        case 'm': if (!cli_double("--momentum", optarg, &momentum)) return 2; has_momentum = 1; break;
        case 'e': if (!cli_int64("--epochs", optarg, 1, 1000000, &epochs)) return 2; break;
        case 'B': if (!cli_int64("--batch", optarg, 1, 1 << 20, &batch)) return 2; break;
        case 'S': if (!cli_int64("--seed", optarg, 0, INT64_MAX, &seed)) return 2; break;
        case 't': if (!cli_double("--test-fraction", optarg, &test_fraction)) return 2; break;
        case 'j': json = 1; break;
        case 'o': plot_path = optarg; break;
        case 'h': help(stdout); return 0;
        default: return pfr_cli_bad_option("mlp train", c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "remat: mlp train: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    /* ---- option checks, all before any work ---- */
    cfg.act = cfg.block == MLP_BLOCK_FFN ? REMAT_NN_GELU : REMAT_NN_RELU;
    if (act_text && !mlp_parse_activation("--activation", act_text, &cfg.act))
        return 2;
    if (!mlp_parse_policy("--policy", policy_text, &cfg.policy, &cfg.has_policy))
        return 2;
    if (sched_text && budget >= 0) {
        fprintf(stderr, "remat: --schedule and --memory-budget exclude each other\n");
        return 2;
    }
    if (sched_text && remat_schedule_parse(sched_text, &cfg.schedule) != REMAT_OK) {
        fprintf(stderr, "remat: --schedule: %s\n", remat_last_error());
        return 2;
    }
    cfg.scanned = sched_text || budget >= 0;
    remat_nn_train_options o = {.loss = REMAT_NN_LOSS_SOFTMAX_CE, .batch = batch};
    if (!strcmp(opt_text, "adam"))
        o.optimizer = REMAT_NN_ADAM;
    else if (!strcmp(opt_text, "sgd"))
        o.optimizer = REMAT_NN_SGD;
    else {
        fprintf(stderr, "remat: --optimizer: unknown optimizer '%s' (expected adam or sgd)\n", opt_text);
        return 2;
    }
    if (has_lr && !(lr > 0)) {
        fprintf(stderr, "remat: --lr: must be positive (got %g)\n", lr);
        return 2;
    }
    o.lr = has_lr ? lr : o.optimizer == REMAT_NN_ADAM ? 3e-3 : 0.05;
    if (has_momentum && o.optimizer != REMAT_NN_SGD) {
        fprintf(stderr, "remat: --momentum: only with --optimizer sgd\n");
        return 2;
    }
    if (!(momentum >= 0 && momentum < 1)) {
        fprintf(stderr, "remat: --momentum: must be in [0, 1) (got %g)\n", momentum);
        return 2;
    }
    o.momentum = o.optimizer == REMAT_NN_SGD ? momentum : 0;
    if (!(test_fraction > 0 && test_fraction < 1)) {
        fprintf(stderr, "remat: --test-fraction: must be in (0, 1) (got %g)\n", test_fraction);
        return 2;
    }
    int digits = !data || same_file(data, DIGITS_PATH);
    if (!data) {
        data = DIGITS_PATH;
        if (!data || access(data, R_OK) != 0) {
            fprintf(stderr, "remat: --data: the shipped digits (%s) cannot be read; give --data FILE.csv\n",
                    data ? data : "not built in");
            return 2;
        }
    }
    cli_input("--data", data);
    if (plot_path && !cli_plot_check(plot_path))
        return 2;

    /* ---- data ---- */
    int status = 1;
    remat_labeled *all = NULL, *train = NULL, *test = NULL;
    remat_nn_module *net = NULL;
    remat_nn_params *params = NULL;
    remat_nn_trainer *tr = NULL;
    remat_batcher *bat = NULL;
    epoch_row *hist = NULL;
    float *x = NULL, *y = NULL, *logits = NULL;
    if (remat_labeled_load(data, NULL, &all) != REMAT_OK) {
        fprintf(stderr, "remat: --data: %s\n", remat_last_error());
        return 2;
    }
    int64_t d = remat_labeled_features(all);
    cfg.classes = remat_labeled_classes(all);
    if (cfg.classes < 2) {
        fprintf(stderr, "remat: --data: %s: every label is 0; a classifier needs at least 2 classes\n", data);
        remat_labeled_free(all);
        return 2;
    }
    if (digits && remat_labeled_scale(all, 1.0 / 16) != REMAT_OK) {
        fprintf(stderr, "remat: --data: %s\n", remat_last_error());
        goto out;
    }
    if (remat_labeled_split(all, test_fraction, (uint64_t)seed, &train, &test) != REMAT_OK) {
        fprintf(stderr, "remat: --test-fraction: %s\n", remat_last_error());
        status = 2;
        goto out;
    }
    if (!digits && (remat_labeled_standardize(test, train, NULL, NULL) != REMAT_OK ||
                    remat_labeled_standardize(train, train, NULL, NULL) != REMAT_OK)) {
        fprintf(stderr, "remat: --data: %s\n", remat_last_error());
        goto out;
    }
    /* ---- network and trainer ---- */
    if (budget >= 0 && !schedule_for_budget(cfg, budget, d, &o, &cfg.schedule))
        goto out;
    if (!(net = mlp_net_new(&cfg)))
        goto out;
    if (remat_nn_init(net, remat_prng_key_from_seed((uint64_t)seed), REMAT_F32, 1, &d, &params) != REMAT_OK ||
        remat_nn_trainer_new(net, params, d, cfg.classes, &o, &tr) != REMAT_OK ||
        remat_batcher_new(train, &(remat_batcher_options){.batch_size = batch, .seed = (uint64_t)seed}, &bat) !=
            REMAT_OK) {
        fprintf(stderr, "remat: mlp train: %s\n", remat_last_error());
        goto out;
    }
    int64_t n_train = remat_labeled_rows(train), n_test = remat_labeled_rows(test);
    x = malloc(sizeof *x * (size_t)(batch * d));
    y = malloc(sizeof *y * (size_t)(batch * cfg.classes));
    logits = malloc(sizeof *logits * (size_t)((n_train > n_test ? n_train : n_test) * cfg.classes));
    hist = calloc((size_t)epochs, sizeof *hist);
    if (!x || !y || !logits || !hist) {
        fprintf(stderr, "remat: mlp train: out of memory\n");
        goto out;
    }
    char sched[48] = "";
    if (cfg.scanned)
        remat_schedule_format(&cfg.schedule, sched, sizeof sched);
    if (!json) {
        printf("data %s: %lld rows, %lld features, %lld classes; %s; %lld train, %lld test rows\n", data,
               (long long)remat_labeled_rows(all), (long long)d, (long long)cfg.classes,
               digits ? "pixels scaled by 1/16" : "features standardised (training rows' mean and sd)",
               (long long)n_train, (long long)n_test);
        printf("network Dense(%lld) -> %lld %s blocks (%s) -> Dense(%lld), %lld parameters; policy %s; %s%s\n",
               (long long)cfg.width, (long long)cfg.layers, mlp_block_name(cfg.block),
               remat_nn_activation_name(cfg.act), (long long)cfg.classes, (long long)remat_nn_params_numel(params),
               policy_text, cfg.scanned ? "scanned over layers, schedule " : "unrolled", sched);
        printf("training %s lr %g%s, batch %lld, %lld epochs, seed %lld\n", opt_text, o.lr,
               o.optimizer == REMAT_NN_SGD ? (o.momentum > 0 ? " with momentum" : "") : "", (long long)batch,
               (long long)epochs, (long long)seed);
        fflush(stdout);
    }
    remat_stats full = {0};
    int have_full = 0;
    for (int64_t e = 0; e < epochs; e++) {
        double t0 = now(), sum = 0;
        for (int64_t i = 0; i < remat_batcher_batches(bat); i++) {
            int64_t rows;
            double loss;
            if (remat_batcher_fill(bat, e, i, x, y, NULL, &rows) != REMAT_OK ||
                remat_nn_trainer_step(tr, rows, x, y, &loss) != REMAT_OK) {
                fprintf(stderr, "remat: mlp train: epoch %lld, batch %lld: %s\n", (long long)e + 1,
                        (long long)i + 1, remat_last_error());
                goto out;
            }
            sum += loss * (double)rows;
            if (rows == batch) { /* the plan is the full batch's: keep its measurements */
                full = *remat_nn_trainer_last_stats(tr);
                have_full = 1;
            }
        }
        epoch_row *h = &hist[e];
        h->loss = sum / (double)n_train;
        if (!accuracy(tr, train, logits, &h->train_acc) || !accuracy(tr, test, logits, &h->test_acc))
            goto out;
        h->seconds = now() - t0;
        if (!json) {
            printf("epoch %3lld  loss %.6f  train acc %.4f  test acc %.4f  %.2f s\n", (long long)e + 1, h->loss,
                   h->train_acc, h->test_acc, h->seconds);
            fflush(stdout);
        }
    }
    remat_memory_plan plan;
    remat_nn_trainer_plan(tr, &plan);
    double acc = hist[epochs - 1].test_acc;
    int64_t hits = (int64_t)llround(acc * (double)n_test);
    if (!json) {
        printf("final test accuracy %.4f (%lld of %lld)\n", acc, (long long)hits, (long long)n_test);
        printf("memory plan of the training step (batch %lld): residuals %zu bytes, arena peak %zu predicted / %zu "
               "measured, scan snapshots %zu predicted / %zu measured, %lld ops recomputed per step\n",
               (long long)batch, plan.residual_bytes, plan.arena_bytes, have_full ? full.peak_arena_bytes : 0,
               plan.peak_snapshot_bytes, have_full ? full.peak_snapshot_bytes : 0,
               (long long)(have_full ? full.recomputed_ops : 0));
        if (!have_full)
            printf("(no full batch of %lld rows: nothing measured)\n", (long long)batch);
    } else {
        printf("{\"config\": {\"data\": ");
        cli_json_string(stdout, data);
        printf(", \"features\": \"%s\", \"rows\": %lld, \"train_rows\": %lld, \"test_rows\": %lld, "
               "\"n_features\": %lld, \"classes\": %lld, \"layers\": %lld, \"width\": %lld, \"block\": \"%s\", "
               "\"activation\": \"%s\", \"policy\": \"%s\", \"scanned\": %s, \"schedule\": ",
               digits ? "scaled 1/16" : "standardised", (long long)remat_labeled_rows(all), (long long)n_train,
               (long long)n_test, (long long)d, (long long)cfg.classes, (long long)cfg.layers, (long long)cfg.width,
               mlp_block_name(cfg.block), remat_nn_activation_name(cfg.act), policy_text,
               cfg.scanned ? "true" : "false");
        if (cfg.scanned)
            cli_json_string(stdout, sched);
        else
            printf("null");
        printf(", \"memory_budget\": %lld, \"optimizer\": \"%s\", \"lr\": %.17g, \"momentum\": %.17g, "
               "\"epochs\": %lld, \"batch\": %lld, \"seed\": %lld, \"test_fraction\": %.17g, \"parameters\": %lld},\n",
               (long long)budget, opt_text, o.lr, o.momentum, (long long)epochs, (long long)batch, (long long)seed,
               test_fraction, (long long)remat_nn_params_numel(params));
        printf(" \"history\": [\n");
        for (int64_t e = 0; e < epochs; e++)
            printf("  {\"epoch\": %lld, \"loss\": %.17g, \"train_accuracy\": %.17g, \"test_accuracy\": %.17g, "
                   "\"seconds\": %.6f}%s\n",
                   (long long)e + 1, hist[e].loss, hist[e].train_acc, hist[e].test_acc, hist[e].seconds,
                   e + 1 < epochs ? "," : "");
        printf(" ],\n \"test_accuracy\": %.17g, \"test_correct\": %lld,\n", acc, (long long)hits);
        printf(" \"plan\": {\"batch\": %lld, \"residual_bytes\": %zu, \"arena_bytes_predicted\": %zu, "
               "\"arena_bytes_measured\": %zu, \"snapshot_bytes_predicted\": %zu, \"snapshot_bytes_measured\": %zu, "
               "\"recomputed_ops\": %lld, \"recompute_instructions\": %lld, \"measured\": %s}}\n",
               (long long)batch, plan.residual_bytes, plan.arena_bytes, have_full ? full.peak_arena_bytes : 0,
               plan.peak_snapshot_bytes, have_full ? full.peak_snapshot_bytes : 0,
               (long long)(have_full ? full.recomputed_ops : 0), (long long)plan.recompute_instructions,
               have_full ? "true" : "false");
    }
    fflush(stdout);
    status = 0;
    if (plot_path && !plot(plot_path, hist, epochs))
        status = 1;
out:
    free(x);
    free(y);
    free(logits);
    free(hist);
    remat_batcher_free(bat);
    remat_nn_trainer_free(tr);
    remat_nn_params_free(params);
    remat_nn_module_free(net);
    remat_labeled_free(train);
    remat_labeled_free(test);
    remat_labeled_free(all);
    return status;
}
