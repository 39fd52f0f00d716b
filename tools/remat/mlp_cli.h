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

int cmd_mlp(int argc, char **argv); /* cmd_mlp.c */
int cmd_mlp_train(int argc, char **argv);
int cmd_mlp_compare(int argc, char **argv);

#endif
