/*
 * train_impl.h (internal) — the trainer's state, shared by the whole-batch
 * step (train.c) and the micro-sharded, data-parallel one (train_shards.c).
 */
#ifndef REMAT_MODELS_NN_TRAIN_IMPL_H
#define REMAT_MODELS_NN_TRAIN_IMPL_H

#include <stdbool.h>

#include "remat/nn_train.h"
#include "remat/optim.h"

#define NN_PROGRAM_CACHE 6

typedef struct {
    int64_t rows;
    remat_program *prog;
} sized_program;

struct remat_nn_trainer {
    const remat_nn_module *m;
    remat_nn_params *p;
    remat_nn_train_options o;
    int64_t in_features, n_out;
    int np;
    remat_adam **adam;
    remat_sgd **sgd;
    sized_program step[NN_PROGRAM_CACHE], fwd[NN_PROGRAM_CACHE];
    void **grads;      /* one buffer per parameter */
    remat_tensor *in, *out;
    remat_memory_plan plan;
    remat_stats stats;
    /* micro-shards (o.shards > 0): owner[k] is shard k's rank; one vector of
     * 1 + numel doubles (rows x loss, rows x gradient) per shard this rank
     * owns, and their sum in shard order */
    int64_t numel;
    int *owner;
    int rank, own;
    double *mine, *sum;
    /* CUDA on several ranks: the sum on the devices through NCCL
     * (remat/dist_device.h), staged through d_mine and d_sum */
    remat_backend *be;
    struct remat_dist_device *dev;
    double *d_mine, *d_sum;
    int64_t updates; /* steps applied: 0 while the parameters are the initial ones */
};

/* The backend the trainer computes on: o.compile's (NULL or "": the CPU),
 * else the environment's (REMAT_BACKEND). */
remat_status nn_trainer_backend(const remat_nn_trainer *t, remat_backend **be);
/* fn compiled on be with o.compile (NULL: the environment's options). */
remat_status nn_trainer_compile(const remat_nn_trainer *t, const remat_fn *fn, remat_backend *be, remat_program **out);
/* The value-and-gradient program for `rows` rows, compiled on first use. */
remat_status nn_trainer_step_program(remat_nn_trainer *t, int64_t rows, remat_program **out);
/* Runs it on rows of x and y: the gradients into t->grads, the loss into *loss. */
remat_status nn_trainer_run(remat_nn_trainer *t, int64_t rows, const void *x, const void *y, double *loss);
/* Checks that the loss and t->grads are finite, then updates every parameter. */
remat_status nn_trainer_apply(remat_nn_trainer *t, double loss);

/* train_shards.c: the shard owners and buffers (after the options are checked). */
remat_status nn_trainer_shards_new(remat_nn_trainer *t);
void nn_trainer_shards_free(remat_nn_trainer *t);
/* The rows of the largest micro-shard of a full batch (the whole batch without shards). */
int64_t nn_trainer_shard_rows(const remat_nn_train_options *o);
remat_status nn_trainer_step_sharded(remat_nn_trainer *t, int64_t rows, const void *x, const void *y, double *loss);

#endif
