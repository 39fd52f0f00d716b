/*
 * labeled_impl.h (internal) — the layout of a remat_labeled, shared by the
 * reader (labeled.c) and the split and batcher (batcher.c).
 */
#ifndef REMAT_MODELS_LABELED_IMPL_H
#define REMAT_MODELS_LABELED_IMPL_H

#include "remat/nn_data.h"

struct remat_labeled {
    int64_t n, d;
    int32_t n_classes;
    float *x;        /* (n, d) */
    int32_t *y;      /* (n) */
    int64_t *origin; /* (n) */
    char *names;     /* d + 1 NUL-terminated strings: the features', then the label's */
    char **name;     /* (d + 1) pointers into names */
};

/* A table of n rows (uninitialised) with src's d, classes and names
 * (copied); NULL when out of memory. */
remat_labeled *rmi_labeled_alloc_like(const remat_labeled *src, int64_t n);

#endif
