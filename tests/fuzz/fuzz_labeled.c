/*
 * fuzz_labeled.c — a labelled table (remat/nn_data.h: features and a
 * "label" column) from the fuzzer's bytes, then scaled and split.
 */
#include "fuzz.h"
#include "remat/nn_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_as_file(data, size);
    remat_labeled *t = NULL;
    if (!path || remat_labeled_load(path, NULL, &t) != REMAT_OK)
        return 0;
    remat_labeled *train = NULL, *test = NULL;
    remat_labeled_scale(t, 0.5);
    if (remat_labeled_split(t, 0.25, 7, &train, &test) == REMAT_OK) {
        remat_labeled_free(train);
        remat_labeled_free(test);
    }
    remat_labeled_free(t);
    return 0;
}
