/*
 * train_digits.c — a small residual MLP classifying the 8x8 digits
 * (scikit-learn's load_digits, data/digits/digits.csv) with Adam, each
 * residual block an nn.remat region that keeps only the matrix products.
 *
 *   Dense(64) -> MLPBlock(64, relu) x 2, each nn.remat(dots_with_no_batch_dims_saveable) -> Dense(10)
 *
 * The Flax it mirrors:
 *
 *   class Net(nn.Module):
 *       @nn.compact
 *       def __call__(self, x):
 *           x = nn.Dense(64)(x)
 *           for _ in range(2):
 *               x = nn.remat(MLPBlock, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)(64)(x)
 *           return nn.Dense(10)(x)
 *
 * Usage: train_digits [digits.csv]   (default: the repository's copy)
 * Exits non-zero unless the test accuracy reaches 95%.
 */
#include <stdio.h>
#include <stdlib.h>

#include <remat/remat.h>

#ifndef DIGITS_CSV
#define DIGITS_CSV "data/digits/digits.csv"
#endif

enum { FEATURES = 64, CLASSES = 10, WIDTH = 64, BATCH = 32, EPOCHS = 20 };

#define CHECK(call)                                                   \
    do {                                                              \
        if ((call) != REMAT_OK) {                                     \
            fprintf(stderr, "train_digits: %s\n", remat_last_error()); \
            return 1;                                                 \
        }                                                             \
    } while (0)

/* the share of rows whose largest logit is at their label */
static double accuracy(remat_nn_trainer *t, const remat_labeled *d, float *logits)
{
    const int64_t n = remat_labeled_rows(d);
    if (remat_nn_trainer_predict(t, n, remat_labeled_x(d), logits) != REMAT_OK)
        return -1;
    int64_t right = 0;
    for (int64_t r = 0; r < n; r++) {
        int best = 0;
        for (int k = 1; k < CLASSES; k++)
            best = logits[r * CLASSES + k] > logits[r * CLASSES + best] ? k : best;
        right += best == remat_labeled_y(d)[r];
    }
    return (double)right / (double)n;
}

/* Dense(64) -> 2 x nn.remat(MLPBlock(64, relu)) -> Dense(10) */
static remat_nn_module *build_net(void)
{
    remat_nn_module *block = remat_nn_mlp_block(WIDTH, REMAT_NN_RELU);
    remat_nn_module *layers[4] = {
        remat_nn_dense(WIDTH, true),
        remat_nn_remat(block, remat_dots_with_no_batch_dims_saveable),
        remat_nn_remat(block, remat_dots_with_no_batch_dims_saveable),
        remat_nn_dense(CLASSES, true),
    };
    remat_nn_module *net = remat_nn_sequential(4, layers);
    for (int i = 0; i < 4; i++)
        remat_nn_module_free(layers[i]);
    remat_nn_module_free(block);
    return net;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : DIGITS_CSV;
    remat_labeled *all, *train, *test;
    CHECK(remat_labeled_load(path, NULL, &all));
    CHECK(remat_labeled_scale(all, 1.0 / 16)); /* pixels 0..16 -> [0, 1] */
    CHECK(remat_labeled_split(all, 0.2, 42, &train, &test));

    remat_nn_module *net = build_net();
    remat_nn_params *params;
    CHECK(remat_nn_init(net, remat_prng_key_from_seed(0), REMAT_F32, 2, (int64_t[]){BATCH, FEATURES}, &params));
    remat_nn_train_options opt = {.loss = REMAT_NN_LOSS_SOFTMAX_CE, .optimizer = REMAT_NN_ADAM, .lr = 3e-3,
                                  .batch = BATCH};
    remat_nn_trainer *trainer;
    CHECK(remat_nn_trainer_new(net, params, FEATURES, CLASSES, &opt, &trainer));
    remat_batcher *batches;
    CHECK(remat_batcher_new(train, &(remat_batcher_options){.batch_size = BATCH, .seed = 7}, &batches));
    printf("digits: %lld train, %lld test rows; %d parameters\n", (long long)remat_labeled_rows(train),
           (long long)remat_labeled_rows(test), (int)remat_nn_params_numel(params));

    float x[BATCH * FEATURES], y[BATCH * CLASSES];
    float *logits = malloc(sizeof *logits * (size_t)remat_labeled_rows(all) * CLASSES);
    double acc = 0;
    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        double sum = 0;
        for (int64_t i = 0; i < remat_batcher_batches(batches); i++) {
            int64_t rows;
            double loss;
            CHECK(remat_batcher_fill(batches, epoch, i, x, y, NULL, &rows));
            CHECK(remat_nn_trainer_step(trainer, rows, x, y, &loss));
            sum += loss;
        }
        acc = accuracy(trainer, test, logits);
        printf("epoch %2d  loss %.4f  train acc %.4f  test acc %.4f\n", epoch + 1,
               sum / (double)remat_batcher_batches(batches), accuracy(trainer, train, logits), acc);
    }
    printf("final test accuracy %.4f (target 0.95)\n", acc);

    free(logits);
    remat_batcher_free(batches);
    remat_nn_trainer_free(trainer);
    remat_nn_params_free(params);
    remat_nn_module_free(net);
    remat_labeled_free(train);
    remat_labeled_free(test);
    remat_labeled_free(all);
    return acc >= 0.95 ? 0 : 1;
}
