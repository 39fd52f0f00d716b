/*
 * mlp_train.h — what `remat mlp train` reports (mlp_train_out.c): the header,
 * the epoch lines, the closing summary or one JSON object, and the trained
 * weights as a CSV. Only the root rank of a data-parallel run calls them.
 */
#ifndef REMAT_TOOL_MLP_TRAIN_H
#define REMAT_TOOL_MLP_TRAIN_H

#include "data_dir.h"
#include "mlp_cli.h"
#include "remat/dist.h"

/* --shards under mpirun when not given: the same on any number of ranks up to it */
#define MLP_MPI_SHARDS 8

/* the shipped digits (data_dir.h), NULL if the binary knows no data directory */
#define DIGITS_PATH tool_digits_path()

/* mlp_train_args.c: the options as given, then checked */
typedef struct {
    mlp_net_config cfg;
    const char *data, *act_text, *policy_text, *sched_text, *plot_path, *opt_text, *weights_path, *load_path;
    int64_t budget, epochs, batch, seed, shards; /* shards 0: not given */
    double lr, momentum, test_fraction;
    int json, has_lr, has_momentum, digits, policy_given;
    const char *disk_dir;         /* --disk-dir: the slow tier of offloaded residuals */
    remat_compile_options copts;  /* the environment's, with --disk-dir (o->compile points here) */
} mlp_train_args;

void mlp_train_help(FILE *out);
/* argv into a; 0: go on, -1: --help, else the exit status (the message on stderr). */
int mlp_train_parse(int argc, char **argv, mlp_train_args *a);
/* The checks across options, before any work; fills o (not o->dist) and
 * settles a->shards for `ranks` ranks. 0: go on, else the exit status. */
int mlp_train_check(mlp_train_args *a, int ranks, remat_nn_train_options *o);
/* Option errors are the same on every rank: between begin and end only
 * rank 0's stderr is written (the others' goes to /dev/null). */
void mlp_train_quiet_begin(const remat_dist *d);
void mlp_train_quiet_end(void);

typedef struct {
    double loss, train_acc, test_acc, seconds;
} mlp_epoch_row;

typedef struct {
    const char *data, *policy, *optimizer;
    int digits;                /* the shipped digits, scaled by 1/16 */
    mlp_net_config cfg;
    char sched[48];            /* cfg.scanned: the schedule's name */
    remat_nn_train_options o;  /* o.shards: 0 = whole batches */
    int64_t rows, train_rows, test_rows, features, epochs, seed, budget, parameters;
    double test_fraction;
    int ranks;
    const char *dist_kind;
    const mlp_epoch_row *hist; /* epochs rows */
    remat_memory_plan plan;
    remat_stats full;          /* measured on the last full batch (have_full) */
    int have_full;
    const mlp_budget_result *chosen; /* --memory-budget's choice, or NULL */
    double final_acc;          /* the last epoch's test accuracy; --epochs 0: the initial weights' */
    const char *tier_dir;      /* where offloaded residuals go (--disk-dir or the default) */
} mlp_train_report;

void mlp_train_print_header(const mlp_train_report *r);
void mlp_train_print_epoch(int64_t e, const mlp_epoch_row *h);
void mlp_train_print_summary(const mlp_train_report *r);
void mlp_train_print_json(const mlp_train_report *r);

/* The parameters as safetensors (remat_nn_params_save), or, for a path
 * ending in .csv, as CSV (parameter,index,value; f32 values in %.9g and f64
 * in %.17g, both exact), written atomically through cli_out (temp file,
 * rename; removed on SIGTERM/SIGINT). 0 with a message naming --save-weights. */
int mlp_save_weights(const char *path, const remat_nn_params *p);

#endif
