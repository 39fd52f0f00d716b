/*
 * cmd_mlp_train.c — `remat mlp train`: a classifier on a labelled CSV, epoch
 * by epoch, with its memory plan; data-parallel under mpirun (every rank
 * loads the table and fills the same global batches; the trainer spreads
 * each batch's micro-shards over the ranks, remat/nn_train.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_dist.h"
#include "mlp_train.h"
#include "remat/dist.h"

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

/* Share of rows of d whose largest logit is at the label: each rank
 * predicts a contiguous block of rows, the hit counts are summed (exactly).
 * Collective; 0 on every rank (rank 0 saying why) when some rank failed. */
static int accuracy(remat_dist *dist, remat_nn_trainer *t, const remat_labeled *d, float *logits, double *acc)
{
    int64_t n = remat_labeled_rows(d), c = remat_labeled_classes(d), f = remat_labeled_features(d);
    int rank = remat_dist_rank(dist), size = remat_dist_size(dist);
    int64_t lo = rank * n / size, hi = (rank + 1) * n / size;
    double hits = 0, total = 0;
    int *owner = malloc(sizeof *owner * (size_t)size); /* item i, rank i's hits, is rank i's */
    char msg[1024] = "out of memory for the ranks' hit counts";
    remat_status st = owner ? REMAT_OK : REMAT_ERR_NOMEM;
    if (st == REMAT_OK && hi > lo && (st = remat_nn_trainer_predict(t, hi - lo, remat_labeled_x(d) + lo * f,
                                                                    logits)) != REMAT_OK)
        snprintf(msg, sizeof msg, "%s", remat_last_error());
    if (st == REMAT_OK) {
        const int32_t *y = remat_labeled_y(d);
        for (int64_t r = lo; r < hi; r++) {
            const float *l = logits + (r - lo) * c;
            int64_t best = 0;
            for (int64_t k = 1; k < c; k++)
                if (l[k] > l[best])
                    best = k;
            hits += best == y[r];
        }
        for (int i = 0; i < size; i++)
            owner[i] = i;
    }
    if ((st = remat_dist_agree_msg(dist, st, msg, sizeof msg)) == REMAT_OK)
        st = remat_dist_sum(dist, size, owner, 1, &hits, &total);
    free(owner);
    if (st != REMAT_OK) {
        if (remat_dist_is_root(dist))
            fprintf(stderr, "remat: mlp train: %s\n", remat_last_error());
        return 0;
    }
    *acc = total / (double)n;
    return 1;
}

static int plot(const char *path, const mlp_epoch_row *h, int64_t n)
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


/* Loads, splits and scales the data; 0: go on, else the exit status (every rank alike). */
static int load(remat_dist *dist, mlp_train_args *a, remat_labeled **all, remat_labeled **train, remat_labeled **test)
{
    int root = remat_dist_is_root(dist);
    remat_status st = remat_labeled_load(a->data, NULL, all);
    if ((st = remat_dist_agree(dist, st)) != REMAT_OK) { /* an unreadable file on some rank */
        if (root)
            fprintf(stderr, "remat: --data: %s\n", remat_last_error());
        return 2;
    }
    /* each rank read its own copy: one that differs would train other rows */
    char msg[1024] = "";
    if (!cli_dist_same_files(dist, 1, (const char *const[]){"--data"}, (const char *const[]){a->data}, msg,
                             sizeof msg)) {
        if (root)
            fprintf(stderr, "remat: %s\n", msg);
        return 2;
    }
    a->cfg.classes = remat_labeled_classes(*all);
    if (a->cfg.classes < 2) {
        if (root)
            fprintf(stderr, "remat: --data: %s: every label is 0; a classifier needs at least 2 classes\n", a->data);
        return 2;
    }
    /* from here on the same table on every rank: what fails, fails everywhere,
     * but for memory, so the outcome is agreed on */
    const char *what = "--data";
    if (a->digits)
        st = remat_labeled_scale(*all, 1.0 / 16);
    if (st == REMAT_OK && (st = remat_labeled_split(*all, a->test_fraction, (uint64_t)a->seed, train, test)) !=
                              REMAT_OK && st != REMAT_ERR_NOMEM)
        what = "--test-fraction";
    if (st == REMAT_OK && !a->digits && (st = remat_labeled_standardize(*test, *train, NULL, NULL)) == REMAT_OK)
        st = remat_labeled_standardize(*train, *train, NULL, NULL);
    if ((st = remat_dist_agree(dist, st)) != REMAT_OK) {
        if (root)
            fprintf(stderr, "remat: %s: %s\n", what, remat_last_error());
        return strcmp(what, "--data") ? 2 : 1;
    }
    return 0;
}

/* One epoch's steps; 0 on every rank (rank 0 saying why) when a step failed. */
static int epoch(remat_dist *dist, remat_nn_trainer *tr, remat_batcher *bat, int64_t e, float *x, float *y,
                 int64_t batch, double *loss, remat_stats *full, int *have_full)
{
    double sum = 0;
    for (int64_t i = 0; i < remat_batcher_batches(bat); i++) {
        int64_t rows;
        double l;
        /* the fill is the same on every rank (same table, seed and batch), so is its outcome;
         * the step agrees across ranks itself */
        if (remat_batcher_fill(bat, e, i, x, y, NULL, &rows) != REMAT_OK ||
            remat_nn_trainer_step(tr, rows, x, y, &l) != REMAT_OK) {
            if (remat_dist_is_root(dist))
                fprintf(stderr, "remat: mlp train: epoch %lld, batch %lld: %s\n", (long long)e + 1,
                        (long long)i + 1, remat_last_error());
            return 0;
        }
        sum += l * (double)rows;
        if (rows == batch) { /* the plan is the full batch's: keep its measurements */
            *full = *remat_nn_trainer_last_stats(tr);
            *have_full = 1;
        }
    }
    *loss = sum;
    return 1;
}

/* The training run after the options are checked: the exit status, the same on every rank. */
static int run(remat_dist *dist, mlp_train_args *a, remat_nn_train_options *o)
{
    int status = 1, root = remat_dist_is_root(dist);
    remat_labeled *all = NULL, *train = NULL, *test = NULL;
    remat_nn_module *net = NULL;
    remat_nn_params *params = NULL;
    remat_nn_trainer *tr = NULL;
    remat_batcher *bat = NULL;
    mlp_epoch_row *hist = NULL;
    float *x = NULL, *y = NULL, *logits = NULL;
    if ((status = load(dist, a, &all, &train, &test)) != 0)
        goto out;
    status = 1;
    int64_t d = remat_labeled_features(all), batch = a->batch;
    mlp_net_config *cfg = &a->cfg;
    mlp_budget_result chosen;
    if (a->budget >= 0) {
        if (!mlp_budget_choose(cfg, a->policy_given ? a->policy_text : NULL, d, a->budget, o, &chosen))
            goto out;
        *cfg = chosen.cfg;
        a->policy_text = chosen.policy;
        o->memory_budget = a->budget; /* the trainer holds it too */
    }
    net = mlp_net_make(cfg); /* NULL: remat_last_error() says why, said after the agreement */
    remat_status st = net ? remat_nn_init(net, remat_prng_key_from_seed((uint64_t)a->seed), REMAT_F32, 1, &d,
                                          &params)
                          : REMAT_ERR_VALUE;
    const char *what = "mlp train";
    if (st == REMAT_OK && a->load_path && (st = remat_nn_params_load(params, a->load_path)) != REMAT_OK)
        what = "--load-weights"; /* every rank reads it; the agreement below fails all if one fails */
    /* the trainer is collective (its shards' set-up): every rank builds it, or none */
    if ((st = remat_dist_agree(dist, st)) == REMAT_OK)
        st = remat_nn_trainer_new(net, params, d, cfg->classes, o, &tr);
    if (st == REMAT_OK)
        st = remat_batcher_new(train, &(remat_batcher_options){.batch_size = batch, .seed = (uint64_t)a->seed}, &bat);
    if ((st = remat_dist_agree(dist, st)) != REMAT_OK) { /* a compile can fail on one rank (memory) */
        if (root)
            fprintf(stderr, "remat: %s: %s\n", what, remat_last_error());
        status = strcmp(what, "mlp train") ? 2 : 1;
        goto out;
    }
    int64_t n_train = remat_labeled_rows(train), n_test = remat_labeled_rows(test);
    x = malloc(sizeof *x * (size_t)(batch * d));
    y = malloc(sizeof *y * (size_t)(batch * cfg->classes));
    logits = malloc(sizeof *logits * (size_t)((n_train > n_test ? n_train : n_test) * cfg->classes));
    hist = calloc((size_t)a->epochs + 1, sizeof *hist);
    st = x && y && logits && hist ? REMAT_OK : REMAT_ERR_NOMEM;
    if (remat_dist_agree(dist, st) != REMAT_OK) {
        if (root)
            fprintf(stderr, "remat: mlp train: out of memory\n");
        goto out;
    }
    mlp_train_report r = {.data = a->data, .policy = a->policy_text, .optimizer = a->opt_text, .digits = a->digits,
                          .cfg = *cfg, .o = *o, .rows = remat_labeled_rows(all), .train_rows = n_train,
                          .test_rows = n_test, .features = d, .epochs = a->epochs, .seed = a->seed,
                          .budget = a->budget, .parameters = remat_nn_params_numel(params),
                          .test_fraction = a->test_fraction, .ranks = remat_dist_size(dist),
                          .dist_kind = remat_dist_kind(dist), .hist = hist,
                          .chosen = a->budget >= 0 ? &chosen : NULL, .tier_dir = o->compile->tier_dir};
    if (!r.tier_dir)
        r.tier_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (cfg->scanned)
        remat_schedule_format(&cfg->schedule, r.sched, sizeof r.sched);
    if (root && !a->json)
        mlp_train_print_header(&r);
    for (int64_t e = 0; e < a->epochs; e++) {
        double t0 = now(), sum;
        mlp_epoch_row *h = &hist[e];
        if (!epoch(dist, tr, bat, e, x, y, batch, &sum, &r.full, &r.have_full))
            goto out;
        h->loss = sum / (double)n_train;
        if (!accuracy(dist, tr, train, logits, &h->train_acc) || !accuracy(dist, tr, test, logits, &h->test_acc))
            goto out;
        h->seconds = now() - t0;
        if (root && !a->json)
            mlp_train_print_epoch(e, h);
    }
    if (a->epochs > 0)
        r.final_acc = hist[a->epochs - 1].test_acc;
    else if (!accuracy(dist, tr, test, logits, &r.final_acc)) /* --epochs 0: the initial weights' */
        goto out;
    remat_nn_trainer_plan(tr, &r.plan);
    /* the plan is a largest micro-shard's: the last shard is one (ceil(batch / K) rows), the
     * last rank runs it last, so its measurements are the ones to report */
    int last = remat_dist_size(dist) - 1;
    if (o->shards > 0 && last > 0 && (remat_dist_bcast(dist, last, &r.full, sizeof r.full) != REMAT_OK ||
                                      remat_dist_bcast(dist, last, &r.have_full, sizeof r.have_full) != REMAT_OK)) {
        if (root)
            fprintf(stderr, "remat: mlp train: %s\n", remat_last_error());
        goto out;
    }
    /* outputs: rank 0 writes, then every rank learns whether it could */
    int ok = 1;
    if (root) {
        if (a->json)
            mlp_train_print_json(&r);
        else
            mlp_train_print_summary(&r);
        fflush(stdout);
        ok = !a->weights_path || mlp_save_weights(a->weights_path, params);
        ok = ok && (!a->plot_path || plot(a->plot_path, hist, a->epochs));
        ok = ok && cli_outputs_finish(); /* all or nothing: a failed plot keeps the old weights file */
    }
    status = remat_dist_agree(dist, ok ? REMAT_OK : REMAT_ERR_IO) == REMAT_OK ? 0 : 1;
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

int cmd_mlp_train(int argc, char **argv)
{
    remat_dist *dist = NULL;
    if (remat_dist_init(&argc, &argv, &dist) != REMAT_OK) {
        fprintf(stderr, "remat: mlp train: %s\n", remat_last_error());
        return 1;
    }
    int root = remat_dist_is_root(dist);
    mlp_train_args a = {.cfg = {.layers = 2, .width = 64, .block = MLP_BLOCK_MLP}, .policy_text = "none",
                    .opt_text = "adam", .budget = -1, .epochs = 20, .batch = 32, .momentum = 0.9,
                    .test_fraction = 0.2};
    remat_nn_train_options o;
    mlp_train_quiet_begin(dist);
    int status = mlp_train_parse(argc, argv, &a);
    if (status == -1) {
        if (root)
            mlp_train_help(stdout);
        status = 0;
        goto done;
    }
    if (status == 0)
        status = mlp_train_check(&a, remat_dist_size(dist), &o);
    int readable = 1; /* the shipped digits: a rank's own disk, agreed on below */
    if (status == 0) {
        a.digits = !a.data || same_file(a.data, DIGITS_PATH);
        if (!a.data) {
            a.data = DIGITS_PATH;
            if (!a.data || access(a.data, R_OK) != 0) {
                fprintf(stderr, "remat: --data: the shipped digits (%s) cannot be read; give --data FILE.csv\n",
                        a.data ? a.data : "not built in");
                readable = 0;
            }
        }
    }
    if (status == 0) {
        cli_input("--data", a.data);
        if (a.load_path)
            cli_input("--load-weights", a.load_path);
        o.dist = dist;
        /* only rank 0 writes: only its file system is asked */
        int ok = readable && (!root || ((!a.plot_path || cli_plot_check(a.plot_path)) &&
                                        (!a.weights_path || cli_out_check("--save-weights", a.weights_path))));
        mlp_train_quiet_end();
        if (remat_dist_agree(dist, ok ? REMAT_OK : REMAT_ERR_IO) != REMAT_OK)
            status = 2;
        else
            status = run(dist, &a, &o);
    }
done:
    mlp_train_quiet_end();
    remat_dist_finalize(dist);
    return status;
}
