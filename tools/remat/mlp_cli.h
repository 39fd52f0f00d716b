/*
 * mlp_cli.h — what `remat mlp train` and `remat mlp compare` share: the deep
 * network they build (Dense(W) -> L blocks -> Dense(classes)), its options,
 * parsing of policies and block kinds, and the map between the parameters of
 * the scanned network (blocks stacked on a leading axis) and the unrolled one.
 */
#ifndef REMAT_TOOL_MLP_CLI_H
#define REMAT_TOOL_MLP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "remat/remat.h"

typedef enum { MLP_BLOCK_MLP, MLP_BLOCK_FFN } mlp_block_kind;

typedef struct {
    int64_t layers, width, classes;
    mlp_block_kind block;
    remat_nn_activation act;
    const remat_policy *policy; /* NULL with has_policy 0: blocks not checkpointed */
    int has_policy;
    int scanned;                /* 1: the blocks are one scan over stacked parameters */
    remat_schedule_spec schedule;
} mlp_net_config;

/* Help text for the network options both commands take. */
extern const char mlp_net_options_help[];

/* "mlp" / "ffn"; 0 with "remat: --block: ..." on stderr otherwise. */
int mlp_parse_block(const char *text, mlp_block_kind *out);
const char *mlp_block_name(mlp_block_kind b);
/* The activation option's text ("relu", "gelu", ...). */
int mlp_parse_activation(const char *opt, const char *text, remat_nn_activation *out);
/* "none", "nothing_saveable", "everything_saveable", "dots_saveable",
 * "dots_with_no_batch_dims_saveable": *policy NULL and *has 0 for none. */
int mlp_parse_policy(const char *opt, const char *text, const remat_policy **policy, int *has);

/* Dense(width) -> layers blocks -> Dense(classes), as configured. NULL with a
 * message on stderr on error. */
remat_nn_module *mlp_net_new(const mlp_net_config *c);
/* The same, silent: NULL with remat_last_error() set, for a caller under
 * mpirun that says why once, after the ranks agree. */
remat_nn_module *mlp_net_make(const mlp_net_config *c);

/* For each parameter of `unrolled`, where its values live in `scanned`: the
 * index of the scanned parameter and the layer (its leading index, -1 for a
 * parameter not stacked). 0 with a message if some parameter has no match. */
typedef struct {
    int src;
    int64_t layer;
} mlp_param_map;
int mlp_param_map_new(const remat_nn_params *unrolled, const remat_nn_params *scanned, mlp_param_map **out);
/* Copies the scanned values into the unrolled parameters (f32). */
void mlp_params_copy_mapped(remat_nn_params *unrolled, const remat_nn_params *scanned, const mlp_param_map *map);

/* mlp_budget.c: the whole-step memory budget. The candidates are the
 * network under each checkpoint policy (only `policy` when not NULL), unrolled
 * and scanned under store-all, per-step, periodic:K, two-level and
 * binomial:S (K, S powers of two below L); remat_nn_budget_choose compiles
 * each as the trainer does (o's batch, shards, compile options), times the
 * ones whose predicted peak fits (median of 3 steps) and takes the fastest.
 * 0 with the message on rank 0's stderr (too small: naming the smallest
 * peak and its candidate); collective with o->dist. */
typedef struct {
    mlp_net_config cfg; /* the chosen network */
    const char *policy; /* its policy's name */
    size_t peak;        /* its predicted whole-step peak */
    double seconds;     /* its median step */
    int candidates, fitting;
} mlp_budget_result;
int mlp_budget_choose(const mlp_net_config *base, const char *policy, int64_t features, int64_t budget,
                      const remat_nn_train_options *o, mlp_budget_result *res);
/* "policy P, unrolled" / "policy P, scanned with schedule S" */
void mlp_budget_describe(const mlp_net_config *c, const char *policy, char *out, size_t len);

int cmd_mlp(int argc, char **argv); /* cmd_mlp.c */
int cmd_mlp_train(int argc, char **argv);
int cmd_mlp_compare(int argc, char **argv);

#endif
