/*
 * batcher.c — seeded shuffles of a labelled table: splitmix64 (Steele, Lea &
 * Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014; the
 * constants of Vigna's splitmix64.c), unbiased bounded draws by rejection
 * (the arc4random_uniform method), Fisher–Yates (Knuth, TAOCP vol. 2,
 * Algorithm 3.4.2P); the train/test split and the per-epoch batcher built
 * on them. Only uint64_t arithmetic: the orders are the same everywhere.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "labeled_impl.h"

/* ---- random streams ---- */

uint64_t remat_splitmix64_next(uint64_t *state)
{
    REMAT_NULL_RETURN(state, 0);
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t remat_splitmix64_below(uint64_t *state, uint64_t bound)
{
    REMAT_NULL_RETURN(state, 0);
    if (bound <= 1)
        return 0;
    /* 2^64 mod bound: the draws below it would make small results likelier */
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        uint64_t r = remat_splitmix64_next(state);
        if (r >= threshold)
            return r % bound;
    }
}

void remat_splitmix64_shuffle(uint64_t *state, int64_t n, int64_t *perm)
{
    REMAT_NULL_RETURN(state, );
    REMAT_NULL_RETURN(perm, );
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)remat_splitmix64_below(state, (uint64_t)i + 1);
        int64_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

/* ---- split ---- */

/* dst's rows from src's rows keep[0..n) (ascending) */
static void copy_rows(remat_labeled *dst, const remat_labeled *src, const int64_t *keep)
{
    size_t d = (size_t)src->d;
    for (int64_t r = 0; r < dst->n; r++) {
        int64_t s = keep[r];
        memcpy(dst->x + (size_t)r * d, src->x + (size_t)s * d, d * sizeof *dst->x);
        dst->y[r] = src->y[s];
        dst->origin[r] = src->origin[s];
    }
}

remat_status remat_labeled_split(const remat_labeled *t, double test_fraction, uint64_t seed,
                                 remat_labeled **train, remat_labeled **test)
{
    if (!train || !test)
        return rmi_error(REMAT_ERR_NULL, "labeled split: %s is NULL", !train ? "train" : "test");
    *train = *test = NULL;
    if (!t)
        return rmi_error(REMAT_ERR_NULL, "labeled split: the table is NULL");
    if (!(test_fraction > 0 && test_fraction < 1))
        return rmi_error(REMAT_ERR_VALUE, "labeled split: test_fraction %g is not in (0, 1)", test_fraction);
    /* sklearn's train_test_split rounds the test part up */
    int64_t n_test = (int64_t)ceil(test_fraction * (double)t->n);
    if (n_test < 1 || n_test >= t->n)
        return rmi_error(REMAT_ERR_VALUE,
                         "labeled split: test_fraction %g of %lld rows leaves %lld test and %lld train rows "
                         "(both must be at least 1)",
                         test_fraction, (long long)t->n, (long long)n_test, (long long)(t->n - n_test));
    int64_t *perm = rmi_malloc(sizeof *perm * (size_t)t->n);
    unsigned char *in_test = rmi_calloc((size_t)t->n, 1);
    remat_labeled *tr = NULL, *te = NULL;
    if (!perm || !in_test)
        goto fail;
    uint64_t state = seed;
    remat_splitmix64_shuffle(&state, t->n, perm);
    for (int64_t i = 0; i < n_test; i++)
        in_test[perm[i]] = 1;
    /* perm becomes the two row lists, each ascending: test rows first */
    int64_t a = 0, b = n_test;
    for (int64_t r = 0; r < t->n; r++)
        perm[in_test[r] ? a++ : b++] = r;
    tr = rmi_labeled_alloc_like(t, t->n - n_test);
    te = rmi_labeled_alloc_like(t, n_test);
    if (!tr || !te)
        goto fail;
    copy_rows(te, t, perm);
    copy_rows(tr, t, perm + n_test);
    rmi_free(perm);
    rmi_free(in_test);
    *train = tr;
    *test = te;
    return REMAT_OK;
fail:
    rmi_free(perm);
    rmi_free(in_test);
    remat_labeled_free(tr);
    remat_labeled_free(te);
    return rmi_error(REMAT_ERR_NOMEM, "labeled split: out of memory for %lld rows", (long long)t->n);
}

/* ---- batches ---- */

struct remat_batcher {
    const remat_labeled *t;
    remat_batcher_options opt;
    int64_t batches;
    int64_t epoch; /* whose order is in order[]; -1: none yet */
    int64_t *order;
};

remat_status remat_batcher_new(const remat_labeled *t, const remat_batcher_options *opt, remat_batcher **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "batcher: output pointer is NULL");
    *out = NULL;
    if (!t || !opt)
        return rmi_error(REMAT_ERR_NULL, "batcher: %s is NULL", !t ? "the table" : "options");
    if (opt->batch_size < 1)
        return rmi_error(REMAT_ERR_VALUE, "batcher: batch_size %lld must be at least 1",
                         (long long)opt->batch_size);
    int64_t full = t->n / opt->batch_size;
    int64_t batches = opt->drop_remainder ? full : full + (t->n % opt->batch_size != 0);
    if (batches == 0)
        return rmi_error(REMAT_ERR_VALUE,
                         "batcher: batch_size %lld with drop_remainder leaves no batch of a table of %lld rows",
                         (long long)opt->batch_size, (long long)t->n);
    remat_batcher *b = rmi_calloc(1, sizeof *b);
    if (!b || !(b->order = rmi_malloc(sizeof *b->order * (size_t)t->n))) {
        rmi_free(b);
        return rmi_error(REMAT_ERR_NOMEM, "batcher: out of memory for %lld rows", (long long)t->n);
    }
    b->t = t;
    b->opt = *opt;
    b->batches = batches;
    b->epoch = -1;
    *out = b;
    return REMAT_OK;
}

void remat_batcher_free(remat_batcher *b)
{
    if (!b)
        return;
    rmi_free(b->order);
    rmi_free(b);
}

int64_t remat_batcher_batches(const remat_batcher *b)
{
    REMAT_NULL_RETURN(b, 0);
    return b->batches;
}


const int64_t *remat_batcher_order(remat_batcher *b, int64_t epoch)
{
    REMAT_NULL_RETURN(b, NULL);
    if (epoch < 0)
        return NULL;
    if (b->epoch != epoch) {
        if (b->opt.in_order) {
            for (int64_t i = 0; i < b->t->n; i++)
                b->order[i] = i;
        } else {
            uint64_t e = (uint64_t)epoch;
            uint64_t state = b->opt.seed ^ remat_splitmix64_next(&e);
            remat_splitmix64_shuffle(&state, b->t->n, b->order);
        }
        b->epoch = epoch;
    }
    return b->order;
}

remat_status remat_batcher_fill(remat_batcher *b, int64_t epoch, int64_t batch, float *x, float *y_onehot,
                                int32_t *labels, int64_t *size)
{
    if (!b || !x || !y_onehot || !size)
        return rmi_error(REMAT_ERR_NULL, "batcher fill: %s is NULL",
                         !b ? "the batcher" : !x ? "x" : !y_onehot ? "y_onehot" : "size");
    if (epoch < 0)
        return rmi_error(REMAT_ERR_VALUE, "batcher fill: epoch %lld is negative", (long long)epoch);
    if (batch < 0 || batch >= b->batches)
        return rmi_error(REMAT_ERR_VALUE, "batcher fill: batch %lld is not in 0..%lld", (long long)batch,
                         (long long)b->batches - 1);
    const remat_labeled *t = b->t;
    const int64_t *order = remat_batcher_order(b, epoch);
    int64_t B = b->opt.batch_size, first = batch * B;
    int64_t n = t->n - first < B ? t->n - first : B;
    size_t d = (size_t)t->d, c = (size_t)t->n_classes;
    memset(x, 0, sizeof *x * (size_t)B * d);
    memset(y_onehot, 0, sizeof *y_onehot * (size_t)B * c);
    if (labels)
        memset(labels, 0, sizeof *labels * (size_t)B);
    for (int64_t k = 0; k < n; k++) {
        int64_t r = order[first + k];
        memcpy(x + (size_t)k * d, t->x + (size_t)r * d, d * sizeof *x);
        y_onehot[(size_t)k * c + (size_t)t->y[r]] = 1.0f;
        if (labels)
            labels[k] = t->y[r];
    }
    *size = n;
    return REMAT_OK;
}
