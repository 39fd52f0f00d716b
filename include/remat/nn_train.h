/*
 * remat/nn_train.h — training a network module (remat/nn.h) with
 * mini-batches: one compiled value-and-gradient program per batch size, an
 * optax-style optimiser per parameter, prediction.
 *
 *   remat_nn_train_options o = {.loss = REMAT_NN_LOSS_SOFTMAX_CE, .optimizer = REMAT_NN_ADAM,
 *                               .lr = 1e-3, .batch = 64};
 *   remat_nn_trainer *t;
 *   remat_nn_trainer_new(net, params, 64, 10, &o, &t);   // 64 features in, 10 classes out
 *   for (...) {
 *       remat_batcher_fill(b, epoch, i, x, y, NULL, &rows);   // remat/nn_data.h
 *       double loss;
 *       remat_nn_trainer_step(t, rows, x, y, &loss);      // params updated in place
 *   }
 *   remat_nn_trainer_predict(t, n, x_test, logits);
 *
 * The loss is the mean over the batch (softmax cross-entropy against one-hot
 * rows, or mean squared error). Gradients come from remat_value_and_grad of
 * the loss with respect to every parameter, so the module's nn.remat
 * regions and scan schedules decide what the backward keeps; the trainer's
 * memory plan reports it. A fixed seed (init, batch order) gives the same
 * run bit for bit.
 *
 * Micro-shards and data parallelism (options.shards = K > 0): a step cuts
 * its batch into K contiguous micro-shards (shard k: rows [k r / K,
 * (k+1) r / K) of r), runs each shard's program on its own and sums the
 * shards' row-weighted losses and gradients in double in shard order, then
 * divides by r. With options.dist (remat/dist.h), a group of ranks shares
 * the work: every rank calls each step with the same global batch, runs the
 * shards remat_dist_split gives it (contiguous runs) and the sum is
 * remat_dist_sum's, in the same shard order. So a run depends on K, never
 * on the number of ranks: 1, 2 or 4 ranks and one process without a group
 * end with the same parameters to the bit, on every rank. K = 1 is the
 * whole-batch step to the bit (f32); K > 1 differs from it by rounding.
 * With a group of several ranks remat_nn_trainer_new is collective too
 * (every rank must compile for the same backend: checked); on the CUDA
 * backend the shards' sum runs on the devices through NCCL when it loads
 * (remat/dist_device.h; REMAT_NCCL=0: through MPI), with the same bits.
 */
#ifndef REMAT_NN_TRAIN_H
#define REMAT_NN_TRAIN_H

#include "export.h"
#include "exec.h"
#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { REMAT_NN_LOSS_SOFTMAX_CE, REMAT_NN_LOSS_MSE } remat_nn_loss;
typedef enum { REMAT_NN_ADAM, REMAT_NN_SGD } remat_nn_optimizer;

typedef struct {
    remat_nn_loss loss;
    remat_nn_optimizer optimizer;
    double lr;        /* > 0 */
    double momentum;  /* SGD: in [0, 1), 0 = plain SGD */
    int nesterov;     /* SGD */
    int64_t batch;    /* the largest batch a step takes, >= 1 */
    int64_t shards;   /* 0: a step's batch in one program run; 1 <= K <= batch: K micro-shards */
    struct remat_dist *dist; /* NULL: this process alone; else shards >= its size (borrowed) */
    /* How the trainer's programs compile (remat_compile_opts: JIT mode, cache,
     * threads, backend, which the micro-shards' device sums use too); NULL:
     * the environment's, as remat_compile. Borrowed: must outlive the trainer. */
    const remat_compile_options *compile;
    /* The whole step's memory budget in bytes (0: none, < 0: REMAT_ERR_VALUE):
     * the value-and-gradient program's predicted peak, plan.arena_bytes of
     * remat_nn_trainer_plan (the arena with every scan's store of snapshots
     * and step tapes and the loop bodies' arenas; the parameters, gradients,
     * optimiser state and batch aside), must fit, else remat_nn_trainer_new
     * returns REMAT_ERR_BUDGET naming that peak. The plan's prediction equals
     * the measured stats.peak_arena_bytes, so a trainer that compiles stays
     * within it. remat_nn_budget_choose picks a network that fits. */
    int64_t memory_budget;
} remat_nn_train_options;

typedef struct remat_nn_trainer remat_nn_trainer;

/* A trainer for module m with parameters p (initialised for inputs of
 * `in_features` features; updated in place by each step, so p must outlive
 * the trainer), targets of n_out columns. */
REMAT_API remat_status remat_nn_trainer_new(const remat_nn_module *m, remat_nn_params *p, int64_t in_features,
                                            int64_t n_out, const remat_nn_train_options *o, remat_nn_trainer **out);
REMAT_API void remat_nn_trainer_free(remat_nn_trainer *t);

/* One optimiser step on `rows` examples (1 <= rows <= batch): x (rows,
 * in_features), y (rows, n_out) in the parameters' dtype. loss (may be NULL)
 * receives the batch's loss before the update. A non-finite loss or
 * gradient returns REMAT_ERR_NUMERIC and leaves the parameters unchanged.
 * With a group: collective (every rank, same rows, x and y); a run failing
 * on one rank fails the step on all (remat_dist_agree's message). */
REMAT_API remat_status remat_nn_trainer_step(remat_nn_trainer *t, int64_t rows, const void *x, const void *y,
                                             double *loss);

/* The module's outputs for n rows of x (any n >= 1), run in chunks of at
 * most `batch` rows: out (n, n_out). */
REMAT_API remat_status remat_nn_trainer_predict(remat_nn_trainer *t, int64_t n, const void *x, void *out);

/* The full-batch training step's memory plan (with shards: a largest
 * micro-shard's, ceil(batch / K) rows), and the statistics of the last
 * program run (with shards: this rank's last shard). */
/* A NULL trainer: plan untouched, stats NULL (remat_last_error() set). */
REMAT_API void remat_nn_trainer_plan(const remat_nn_trainer *t, remat_memory_plan *plan);
REMAT_API const remat_stats *remat_nn_trainer_last_stats(const remat_nn_trainer *t);

/* The whole-step budget's search: of n candidate networks computing the same
 * function (other checkpoint policies, unrolled or scanned under other
 * schedules; mods[i] with its parameters params[i]), the fastest whose
 * training step's predicted peak fits o->memory_budget (> 0). Each candidate
 * is compiled as remat_nn_trainer_new compiles it (its plan gives its peak,
 * peaks[i]); each that fits is timed: `repeat` (>= 1) runs of its
 * value-and-gradient program on a zero batch of the planned rows, the median
 * is seconds[i] (-1 for one that does not fit). Ties go to the lower index,
 * so list candidates in order of preference. The parameters are not changed.
 * No candidate fitting is REMAT_ERR_BUDGET naming the smallest peak and its
 * candidate; out->smallest says which. With a group (o->dist): collective,
 * and rank 0's timings decide for every rank. peaks, seconds may be NULL. */
typedef struct {
    int index;            /* the chosen candidate (-1: none fits) */
    size_t peak_bytes;    /* its predicted peak */
    double seconds;       /* its median step time */
    int smallest;         /* the candidate with the smallest predicted peak */
    size_t smallest_bytes;
} remat_nn_budget_choice;
REMAT_API remat_status remat_nn_budget_choose(int n, const remat_nn_module *const *mods,
                                              remat_nn_params *const *params, int64_t in_features, int64_t n_out,
                                              const remat_nn_train_options *o, int repeat, size_t *peaks,
                                              double *seconds, remat_nn_budget_choice *out);

/* The loss function the trainer differentiates: arguments (params...,
 * x (rows, in_features), y (rows, n_out)), one scalar output. */
REMAT_API remat_status remat_nn_loss_fn(const remat_nn_module *m, const remat_nn_params *p, remat_nn_loss loss,
                                        int64_t rows, int64_t in_features, int64_t n_out, remat_fn **out);

#ifdef __cplusplus
}
#endif
#endif
