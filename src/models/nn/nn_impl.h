/*
 * nn_impl.h (internal) — network modules, parameter lists and the walker
 * that both initialises and applies a module tree.
 */
#ifndef REMAT_MODELS_NN_IMPL_H
#define REMAT_MODELS_NN_IMPL_H

#include "remat/nn.h"

typedef enum {
    NN_DENSE,
    NN_LAYER_NORM,
    NN_ACT,
    NN_SEQUENTIAL, /* children inline */
    NN_RESIDUAL,   /* x + child(x) */
    NN_BLOCK,      /* a named class owning a scope; one child, its body */
    NN_REMAT,      /* one child; a checkpoint region */
    NN_SCAN        /* one child; length copies, stacked parameters */
} nn_kind;

struct remat_nn_module {
    int refs;
    nn_kind kind;
    char *cls; /* class name */
    int64_t features;
    bool use_bias;
    double epsilon;
    remat_nn_activation act;
    int n_children;
    remat_nn_module **children;
    remat_policy *policy; /* NN_REMAT (a reference) */
    int64_t length;       /* NN_SCAN */
    remat_scan_options scan_opt;
};

typedef enum { NN_INIT_LECUN, NN_INIT_ZEROS, NN_INIT_ONES } nn_init;

/* Where a parameter's initial values come from: for each stacked layer
 * (one unless scanned), the Flax scope path and the make_rng counter. */
typedef struct {
    int depth;
    char **path;
} nn_scope_path;

typedef struct {
    char *name;          /* "Dense_0/kernel" */
    remat_dtype dtype;
    remat_shape shape;   /* stacked: leading axis = layers */
    nn_init init;
    int layers;          /* 1, or the scan length */
    bool stacked;        /* in a scan: shape has a leading axis of layers */
    nn_scope_path *scopes; /* layers entries */
    int counter;         /* Flax make_rng count in its scope (1-based) */
    void *data;          /* numel * dtype size */
} nn_param;

struct remat_nn_params {
    int n, cap;
    nn_param *p;
    remat_dtype dtype;
    remat_shape out_shape;
};

/* params.c */
void nn_param_clear(nn_param *p);
remat_status nn_params_push(remat_nn_params *ps, nn_param *p); /* takes ownership of p's members */

/* walk.c: init mode records each parameter into `record` (with shapes from
 * a scratch function f whose values stand for them); apply mode reads them
 * from `params`. */
remat_status nn_walk_init(const remat_nn_module *m, remat_fn *f, remat_val x, remat_nn_params *record,
                          remat_val *y);

/* layers.c: the ops of one leaf */
remat_val nn_emit_dense(remat_fn *f, remat_val x, remat_val kernel, remat_val bias);
remat_val nn_emit_layer_norm(remat_fn *f, remat_val x, double eps, remat_val scale, remat_val bias);
remat_val nn_emit_act(remat_fn *f, remat_val x, remat_nn_activation a);

/* module.c: the parameter count of a subtree (structural, no shapes) */
int nn_module_param_count(const remat_nn_module *m);
/* does the module own a Flax scope when it is a child? */
bool nn_module_scoped(const remat_nn_module *m);

#endif
