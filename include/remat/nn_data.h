/*
 * remat/nn_data.h — labelled tables for training classifiers: a CSV reader,
 * feature scaling, a seeded train/test split and a batcher that fills f32
 * buffers (inputs and one-hot targets) for a compiled training step.
 *
 *   remat_labeled *all, *train, *test;
 *   if (remat_labeled_load("data/digits/digits.csv", NULL, &all) != REMAT_OK) {
 *       fprintf(stderr, "%s\n", remat_last_error()); // digits.csv:12:65: label '3.5' ...
 *       return 1;
 *   }
 *   remat_labeled_scale(all, 1.0 / 16);               // pixels 0..16 -> [0, 1]
 *   remat_labeled_split(all, 0.2, 42, &train, &test);  // 1437 + 360 rows
 *   remat_batcher *b;
 *   remat_batcher_new(train, &(remat_batcher_options){.batch_size = 32, .seed = 7}, &b);
 *   float x[32 * 64], y[32 * 10];                      // (B, d), (B, classes)
 *   for (int64_t e = 0; e < epochs; e++)
 *       for (int64_t i = 0; i < remat_batcher_batches(b); i++) {
 *           int64_t size;
 *           remat_batcher_fill(b, e, i, x, y, NULL, &size); // size < 32 only for the last batch
 *           step(x, y, size);
 *       }
 *   remat_batcher_free(b);
 *   remat_labeled_free(train); remat_labeled_free(test); remat_labeled_free(all);
 *
 * CSV format (remat_labeled_load): comma-separated, the first non-blank line
 * a header naming every column (names unique, non-empty), then one row per
 * example with exactly as many cells. The label column is the one whose
 * header is options->label_column ("label" by default), anywhere in the row;
 * every other column is a feature, in file order. A feature cell is a finite
 * decimal number ([+-] digits [. digits] [e [+-] digits]) that fits a float;
 * a label cell is an integer 0 <= y < n_classes (given) or < 65536
 * (REMAT_LABELED_MAX_CLASSES, when n_classes is inferred as max label + 1).
 * Spaces around a cell and one pair of double quotes around it are dropped;
 * there is no other quoting. "\n" or "\r\n" line ends, an optional UTF-8
 * byte-order mark, blank lines skipped.
 *
 * Errors: REMAT_ERR_IO for a file that cannot be read, REMAT_ERR_VALUE for
 * bad options, REMAT_ERR_PARSE otherwise, with a message that starts
 * "path:line:column: " (both 1-based; column counts cells, not bytes) and
 * names the problem: ragged row (expected and found cell counts), a cell that
 * is not a number or not finite (quoted), a label that is not an integer, is
 * negative or too large, an empty file, a header without rows, a duplicate
 * or empty column name, a missing label column, a UTF-16 file, a tab- or
 * semicolon-separated file. Nothing is allocated when loading fails.
 *
 * Random numbers: every shuffle is splitmix64 (Steele, Lea & Flood 2014,
 * constants of Vigna's reference code) with unbiased bounded draws by
 * rejection, and a Fisher–Yates shuffle (Knuth, TAOCP 2, Algorithm P) from
 * the last position down. All integer arithmetic on uint64_t: the same seed
 * gives the same order on every platform.
 */
#ifndef REMAT_NN_DATA_H
#define REMAT_NN_DATA_H

#include "export.h"

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- random streams ---- */

/* splitmix64: state += 0x9E3779B97F4A7C15, then the output mix of the new
 * state ((z ^ z >> 30) * 0xBF58476D1CE4E5B9, (z ^ z >> 27) * 0x94D049BB133111EB,
 * z ^ z >> 31). */
/* A NULL state: 0 (shuffle: nothing written), remat_last_error() set. */
REMAT_API uint64_t remat_splitmix64_next(uint64_t *state);
/* Uniform in [0, bound), bound >= 1: draws r = next() until
 * r >= 2^64 mod bound, then returns r % bound (no modulo bias). */
REMAT_API uint64_t remat_splitmix64_below(uint64_t *state, uint64_t bound);
/* perm = 0, 1, ..., n-1, then for i = n-1 down to 1: swap perm[i] and
 * perm[below(i + 1)], drawing from the stream that starts at *state. */
REMAT_API void remat_splitmix64_shuffle(uint64_t *state, int64_t n, int64_t *perm);

/* ---- labelled tables ---- */

#define REMAT_LABELED_MAX_CLASSES 65536

typedef struct {
    const char *label_column; /* NULL: "label" */
    int32_t n_classes;        /* 0: max label + 1; > 0: every label must be below it */
} remat_labeled_options;

/* n rows of d f32 features (row-major) with an int32 label each. */
typedef struct remat_labeled remat_labeled;

/* opt NULL: the defaults. */
REMAT_API remat_status remat_labeled_load(const char *path, const remat_labeled_options *opt, remat_labeled **out);
REMAT_API void remat_labeled_free(remat_labeled *t); /* NULL is a no-op */
/* The accessors answer a NULL table (and batcher) with remat_last_error()
 * set and 0 or NULL. */

REMAT_API int64_t remat_labeled_rows(const remat_labeled *t);
REMAT_API int64_t remat_labeled_features(const remat_labeled *t);
REMAT_API int32_t remat_labeled_classes(const remat_labeled *t);
/* (rows, features), row-major */
REMAT_API const float *remat_labeled_x(const remat_labeled *t);
/* (rows), each in [0, classes) */
REMAT_API const int32_t *remat_labeled_y(const remat_labeled *t);
/* Column i's header, i < features (out of range: NULL). */
REMAT_API const char *remat_labeled_feature_name(const remat_labeled *t, int64_t i);
REMAT_API const char *remat_labeled_label_name(const remat_labeled *t);
/* (rows): row r is row origin[r] of the loaded file (data rows from 0);
 * identity for a loaded table, the rows kept for a part of a split. */
REMAT_API const int64_t *remat_labeled_origin(const remat_labeled *t);

/* x = (float)((double)x * s) for every feature, s finite and nonzero
 * (digits: 1.0 / 16, exact, the same floats as load_digits().data / 16). */
REMAT_API remat_status remat_labeled_scale(remat_labeled *t, double s);

/* Standardises t's features with the statistics of ref (ref == t allowed;
 * pass the training part to treat a test part alike): per feature, mean and
 * population standard deviation (ddof 0) of ref's column, summed in double;
 * x = (float)(((double)x - mean) / sd), with sd = 1 for a constant column
 * (as sklearn's StandardScaler does). mean and sd (features each, may be
 * NULL) receive the statistics used. ref must have as many features as t. */
REMAT_API remat_status remat_labeled_standardize(remat_labeled *t, const remat_labeled *ref, double *mean, double *sd);

/* Splits t's rows by a seeded permutation (remat_splitmix64_shuffle from
 * state = seed): the first ceil(test_fraction * rows) positions of the
 * permutation go to *test, the others to *train, each kept in t's row order
 * (see remat_labeled_origin). No stratification. 0 < test_fraction < 1 and
 * both parts non-empty, or REMAT_ERR_VALUE. Both parts keep t's classes
 * and names; on failure both are NULL. */
REMAT_API remat_status remat_labeled_split(const remat_labeled *t, double test_fraction, uint64_t seed,
                                           remat_labeled **train, remat_labeled **test);

/* ---- batches ---- */

typedef struct {
    int64_t batch_size;  /* B >= 1 */
    uint64_t seed;       /* epoch e's order: see remat_batcher_order */
    int drop_remainder;  /* 1: rows % B rows left out of each epoch; 0 (default): a last, smaller batch */
    int in_order;        /* 1: rows in table order every epoch (evaluation); 0 (default): shuffled */
} remat_batcher_options;

/* A batcher reads the table it was made for (not copied: keep it alive and
 * unchanged while the batcher is used). It caches one epoch's order: not for
 * concurrent use from several threads. */
typedef struct remat_batcher remat_batcher;

REMAT_API remat_status remat_batcher_new(const remat_labeled *t, const remat_batcher_options *opt, remat_batcher **out);
REMAT_API void remat_batcher_free(remat_batcher *b); /* NULL is a no-op */

/* Batches per epoch: rows / B with drop_remainder, else ceil(rows / B). */
REMAT_API int64_t remat_batcher_batches(const remat_batcher *b);

/* Epoch e's order of the table's rows (rows entries, valid until the next
 * call with another epoch): remat_splitmix64_shuffle from
 * state = seed ^ m(e), m(e) the first splitmix64 output from state e, so it
 * depends only on (seed, e). in_order: 0, 1, ..., rows-1. */
REMAT_API const int64_t *remat_batcher_order(remat_batcher *b, int64_t epoch);

/* Fills batch i (0 <= i < batches) of epoch e >= 0: rows order[i*B + k] for
 * k < size, x (B, features) and y_onehot (B, classes: 1.0f at the label,
 * 0.0f elsewhere), labels (B, may be NULL). size = B except for a last,
 * partial batch; rows size..B-1 of every buffer are zero, so a fixed-shape
 * program can take them with a mask or a 1/size weight. */
REMAT_API remat_status remat_batcher_fill(remat_batcher *b, int64_t epoch, int64_t batch, float *x, float *y_onehot,
                                          int32_t *labels, int64_t *size);

#ifdef __cplusplus
}
#endif
#endif
