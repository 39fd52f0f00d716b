/*
 * train.c — mini-batch training of a module: value-and-gradient programs
 * compiled per batch size (the full batch and, when the data does not
 * divide, the last one; or the micro-shards' sizes, train_shards.c), forward
 * programs for prediction, and one optax optimiser per parameter tensor (so
 * parameters are updated where they live).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn_impl.h"
#include "remat/dist.h"
#include "remat/optim.h"
#include "train_impl.h"

remat_status remat_nn_loss_fn(const remat_nn_module *m, const remat_nn_params *p, remat_nn_loss loss,
                              int64_t rows, int64_t in_features, int64_t n_out, remat_fn **out)
{
    if (!m || !p || !out)
        return rmi_error(REMAT_ERR_NULL, "nn loss: module, params or output is NULL");
    *out = NULL;
    if (rows < 1 || in_features < 1 || n_out < 1)
        return rmi_error(REMAT_ERR_SHAPE, "nn loss: rows %lld, features %lld and outputs %lld must be positive",
                         (long long)rows, (long long)in_features, (long long)n_out);
    int np = remat_nn_params_count(p);
    remat_val *pv = rmi_calloc((size_t)np + 1, sizeof *pv);
    remat_fn *f = remat_fn_new("loss");
    if (!pv || !f) {
        rmi_free(pv);
        remat_fn_free(f);
        return rmi_error(REMAT_ERR_NOMEM, "nn loss: out of memory");
    }
    remat_status st = remat_nn_params_args(f, p, pv);
    remat_dtype dt = p->dtype;
    remat_val x = remat_arg(f, "x", dt, 2, ((int64_t[]){rows, in_features}));
    remat_val y = remat_arg(f, "y", dt, 2, ((int64_t[]){rows, n_out}));
    remat_val h = REMAT_NONE;
    if (st == REMAT_OK)
        st = remat_nn_apply(m, f, x, pv, &h);
    if (st == REMAT_OK) {
        remat_shape hs = remat_val_shape(f, h);
        if (hs.rank != 2 || hs.dims[1] != n_out) {
            char b[96];
            st = rmi_error(REMAT_ERR_SHAPE, "nn loss: the module's output is %s; the targets have %lld columns",
                           remat_shape_format(dt, &hs, b, sizeof b), (long long)n_out);
        }
    }
    if (st == REMAT_OK) {
        remat_val l = loss == REMAT_NN_LOSS_MSE ? remat_nn_mse(f, h, y) : remat_nn_softmax_cross_entropy(f, h, y);
        remat_fn_output(f, l);
        if (remat_fn_status(f) != REMAT_OK)
            st = rmi_error(remat_fn_status(f), "nn loss: %s", remat_fn_error(f));
    }
    rmi_free(pv);
    if (st != REMAT_OK) {
        remat_fn_free(f);
        return st;
    }
    *out = f;
    return REMAT_OK;
}

remat_status nn_trainer_backend(const remat_nn_trainer *t, remat_backend **be)
{
    if (!t->o.compile)
        return remat_backend_from_env(be);
    const char *name = t->o.compile->backend;
    if ((*be = remat_backend_from_name(name)))
        return REMAT_OK;
    char why[256]; /* the message is rewritten below: copy it first */
    snprintf(why, sizeof why, "%s", remat_last_error());
    return rmi_error(strncmp(name, "cuda", 4) == 0 ? REMAT_ERR_BACKEND : REMAT_ERR_ARG,
                     "nn trainer: compile options: backend '%s': %s", name, why);
}

remat_status nn_trainer_compile(const remat_nn_trainer *t, const remat_fn *fn, remat_backend *be, remat_program **out)
{
    return t->o.compile ? remat_compile_opts(fn, be, t->o.compile, out) : remat_compile(fn, be, out);
}

static remat_status compile_step(remat_nn_trainer *t, int64_t rows, remat_program **out)
{
    remat_fn *loss = NULL, *vg = NULL;
    int *argnums = rmi_malloc((size_t)(t->np ? t->np : 1) * sizeof *argnums);
    if (!argnums)
        return rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory");
    for (int i = 0; i < t->np; i++)
        argnums[i] = i;
    remat_status st = remat_nn_loss_fn(t->m, t->p, t->o.loss, rows, t->in_features, t->n_out, &loss);
    if (st == REMAT_OK)
        st = remat_value_and_grad(loss, t->np, argnums, &vg);
    remat_backend *be = NULL;
    if (st == REMAT_OK)
        st = nn_trainer_backend(t, &be);
    if (st == REMAT_OK)
        st = nn_trainer_compile(t, vg, be, out);
    rmi_free(argnums);
    remat_fn_free(vg);
    remat_fn_free(loss);
    return st;
}

static remat_status compile_fwd(remat_nn_trainer *t, int64_t rows, remat_program **out)
{
    remat_val *pv = rmi_calloc((size_t)t->np + 1, sizeof *pv);
    remat_fn *f = remat_fn_new("predict");
    if (!pv || !f) {
        rmi_free(pv);
        remat_fn_free(f);
        return rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory");
    }
    remat_status st = remat_nn_params_args(f, t->p, pv);
    remat_val x = remat_arg(f, "x", t->p->dtype, 2, ((int64_t[]){rows, t->in_features})), y = REMAT_NONE;
    if (st == REMAT_OK)
        st = remat_nn_apply(t->m, f, x, pv, &y);
    if (st == REMAT_OK) {
        remat_fn_output(f, y);
        remat_backend *be = NULL;
        st = remat_fn_status(f) != REMAT_OK ? rmi_error(remat_fn_status(f), "nn predict: %s", remat_fn_error(f))
                                            : nn_trainer_backend(t, &be);
        if (st == REMAT_OK)
            st = nn_trainer_compile(t, f, be, out);
    }
    rmi_free(pv);
    remat_fn_free(f);
    return st;
}

/* the cached program for `rows`, compiling it (evicting the oldest) if new */
static remat_status cached(remat_nn_trainer *t, sized_program *cache, bool step, int64_t rows, remat_program **out)
{
    for (int i = 0; i < NN_PROGRAM_CACHE; i++)
        if (cache[i].prog && cache[i].rows == rows) {
            *out = cache[i].prog;
            return REMAT_OK;
        }
    remat_program *p;
    remat_status st = step ? compile_step(t, rows, &p) : compile_fwd(t, rows, &p);
    if (st != REMAT_OK)
        return st;
    /* the first program (the full batch) stays; a full cache replaces its last entry */
    int slot = NN_PROGRAM_CACHE - 1;
    for (int i = 0; i < NN_PROGRAM_CACHE; i++)
        if (!cache[i].prog) {
            slot = i;
            break;
        }
    remat_program_free(cache[slot].prog);
    cache[slot] = (sized_program){rows, p};
    *out = p;
    return REMAT_OK;
}

void remat_nn_trainer_free(remat_nn_trainer *t)
{
    if (!t)
        return;
    for (int i = 0; i < NN_PROGRAM_CACHE; i++) {
        remat_program_free(t->step[i].prog);
        remat_program_free(t->fwd[i].prog);
    }
    for (int i = 0; i < t->np; i++) {
        if (t->adam)
            remat_adam_free(t->adam[i]);
        if (t->sgd)
            remat_sgd_free(t->sgd[i]);
        if (t->grads)
            rmi_free(t->grads[i]);
    }
    rmi_free(t->adam);
    rmi_free(t->sgd);
    rmi_free(t->grads);
    rmi_free(t->in);
    rmi_free(t->out);
    nn_trainer_shards_free(t);
    rmi_free(t);
}

static remat_status check_options(const remat_nn_train_options *o)
{
    if (o->loss != REMAT_NN_LOSS_SOFTMAX_CE && o->loss != REMAT_NN_LOSS_MSE)
        return rmi_error(REMAT_ERR_VALUE, "nn trainer: loss %d is not a remat_nn_loss", (int)o->loss);
    if (o->optimizer != REMAT_NN_ADAM && o->optimizer != REMAT_NN_SGD)
        return rmi_error(REMAT_ERR_VALUE, "nn trainer: optimizer %d is not a remat_nn_optimizer",
                         (int)o->optimizer);
    if (o->batch < 1)
        return rmi_error(REMAT_ERR_VALUE, "nn trainer: batch %lld must be at least 1", (long long)o->batch);
    if (o->shards < 0 || o->shards > o->batch)
        return rmi_error(REMAT_ERR_VALUE,
                         "nn trainer: shards %lld must be 0 (the whole batch in one run) or 1 to the batch, %lld",
                         (long long)o->shards, (long long)o->batch);
    int size = remat_dist_size(o->dist);
    if (size > 1 && o->shards < size)
        return rmi_error(REMAT_ERR_VALUE,
                         "nn trainer: shards %lld over %d ranks; give every rank at least one micro-shard",
                         (long long)o->shards, size);
    if (o->memory_budget < 0)
        return rmi_error(REMAT_ERR_VALUE, "nn trainer: memory_budget %lld is negative (0: none)",
                         (long long)o->memory_budget);
    return REMAT_OK;
}

static remat_status make_optimisers(remat_nn_trainer *t)
{
    if (t->o.optimizer == REMAT_NN_ADAM)
        t->adam = rmi_calloc((size_t)t->np + 1, sizeof *t->adam);
    else
        t->sgd = rmi_calloc((size_t)t->np + 1, sizeof *t->sgd);
    if (!t->adam && !t->sgd)
        return rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory");
    remat_adam_options ao = remat_adam_optax(t->o.lr);
    remat_sgd_options so = remat_sgd_optax(t->o.lr);
    so.momentum = t->o.momentum;
    so.nesterov = t->o.nesterov;
    for (int i = 0; i < t->np; i++) {
        int64_t n = remat_shape_numel(&t->p->p[i].shape);
        remat_status st = t->adam ? remat_adam_new(n, &ao, &t->adam[i]) : remat_sgd_new(n, &so, &t->sgd[i]);
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

remat_status remat_nn_trainer_new(const remat_nn_module *m, remat_nn_params *p, int64_t in_features, int64_t n_out,
                                  const remat_nn_train_options *o, remat_nn_trainer **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "nn trainer: output pointer is NULL");
    *out = NULL;
    if (!m || !p || !o)
        return rmi_error(REMAT_ERR_NULL, "nn trainer: module, params or options are NULL");
    remat_status st = check_options(o);
    remat_nn_trainer *t = st == REMAT_OK ? rmi_calloc(1, sizeof *t) : NULL;
    if (st == REMAT_OK && !t)
        st = rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory");
    if (!t) /* with a group: the others' agreement below is this one */
        return remat_dist_size(o->dist) > 1 ? remat_dist_agree(o->dist, st) : st;
    *t = (remat_nn_trainer){.m = m, .p = p, .o = *o, .in_features = in_features, .n_out = n_out,
                            .np = remat_nn_params_count(p)};
    t->grads = rmi_calloc((size_t)t->np + 1, sizeof *t->grads);
    t->in = rmi_calloc((size_t)t->np + 2, sizeof *t->in);
    t->out = rmi_calloc((size_t)t->np + 1, sizeof *t->out);
    if (!t->grads || !t->in || !t->out)
        st = rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory");
    for (int i = 0; st == REMAT_OK && i < t->np; i++) {
        size_t bytes = (size_t)remat_shape_numel(&p->p[i].shape) * remat_dtype_size(p->dtype);
        t->grads[i] = rmi_malloc(bytes ? bytes : 1);
        if (!t->grads[i])
            st = rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory for %s", p->p[i].name);
    }
    if (st == REMAT_OK)
        st = make_optimisers(t);
    bool group = remat_dist_size(o->dist) > 1;
    if (group) /* the shards' set-up is collective: all ranks reach it, or none */
        st = remat_dist_agree(o->dist, st);
    bool together = st == REMAT_OK; /* the same on every rank */
    if (st == REMAT_OK)
        st = nn_trainer_shards_new(t);
    remat_program *full = NULL;
    if (st == REMAT_OK)
        st = cached(t, t->step, true, nn_trainer_shard_rows(o), &full);
    if (group && together) /* a compile can fail on one rank (memory): every rank returns it */
        st = remat_dist_agree(o->dist, st);
    if (st == REMAT_OK)
        remat_program_plan(full, &t->plan);
    /* the same plan on every rank: the same outcome */
    if (st == REMAT_OK && o->memory_budget > 0 && t->plan.arena_bytes > (size_t)o->memory_budget)
        st = rmi_error(REMAT_ERR_BUDGET,
                       "nn trainer: the training step's predicted peak of %zu bytes (arena with its snapshots "
                       "and tapes) exceeds the memory budget of %lld bytes",
                       t->plan.arena_bytes, (long long)o->memory_budget);
    if (st != REMAT_OK) {
        remat_nn_trainer_free(t);
        return st;
    }
    *out = t;
    return REMAT_OK;
}

/* index of the first non-finite entry of v (n if none) */
static int64_t first_nonfinite(remat_dtype dt, const void *v, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(dt == REMAT_F32 ? (double)((const float *)v)[k] : ((const double *)v)[k]))
            return k;
    return n;
}

static remat_status update(remat_nn_trainer *t, int i)
{
    void *w = t->p->p[i].data;
    if (t->p->dtype == REMAT_F32)
        return t->adam ? remat_adam_update_f32(t->adam[i], w, t->grads[i])
                       : remat_sgd_update_f32(t->sgd[i], w, t->grads[i]);
    return t->adam ? remat_adam_update(t->adam[i], w, t->grads[i]) : remat_sgd_update(t->sgd[i], w, t->grads[i]);
}

remat_status nn_trainer_step_program(remat_nn_trainer *t, int64_t rows, remat_program **out)
{
    return cached(t, t->step, true, rows, out);
}

remat_status nn_trainer_run(remat_nn_trainer *t, int64_t rows, const void *x, const void *y, double *loss)
{
    remat_program *prog;
    remat_status st = cached(t, t->step, true, rows, &prog);
    if (st != REMAT_OK)
        return st;
    remat_dtype dt = t->p->dtype;
    double lv64 = 0;
    float lv32 = 0;
    for (int i = 0; i < t->np; i++) {
        t->in[i] = remat_nn_params_tensor(t->p, i);
        t->out[i + 1] = (remat_tensor){.dtype = dt, .shape = t->p->p[i].shape, .data = t->grads[i]};
    }
    t->in[t->np] = (remat_tensor){.dtype = dt, .shape = remat_shape_make(2, (int64_t[]){rows, t->in_features}),
                                  .data = (void *)x};
    t->in[t->np + 1] = (remat_tensor){.dtype = dt, .shape = remat_shape_make(2, (int64_t[]){rows, t->n_out}),
                                      .data = (void *)y};
    t->out[0] = (remat_tensor){.dtype = dt, .shape = {.rank = 0}, .data = dt == REMAT_F32 ? (void *)&lv32 : &lv64};
    st = remat_run(prog, t->np + 2, t->in, t->np + 1, t->out, &t->stats);
    *loss = dt == REMAT_F32 ? lv32 : lv64;
    return st;
}

remat_status nn_trainer_apply(remat_nn_trainer *t, double lv)
{
    /* before any update the learning rate has not acted yet: a loss that is
     * not finite then comes from the initial parameters or the data */
    if (!isfinite(lv) && t->updates == 0)
        return rmi_error(REMAT_ERR_NUMERIC,
                         "nn trainer step: the loss is %g at initialisation (the first forward pass, before any "
                         "update), so the learning rate is not the cause: the initial activations overflow (a "
                         "network this deep, %d parameter tensors, multiplies them layer after layer; try fewer "
                         "layers) or an input is not finite",
                         lv, t->np);
    if (!isfinite(lv))
        return rmi_error(REMAT_ERR_NUMERIC, "nn trainer step: the loss is %g after %lld update%s (lower the "
                         "learning rate?)", lv, (long long)t->updates, t->updates == 1 ? "" : "s");
    /* every gradient finite before any tensor is updated, so a bad step changes nothing */
    for (int i = 0; i < t->np; i++) {
        int64_t n = remat_shape_numel(&t->p->p[i].shape), k = first_nonfinite(t->p->dtype, t->grads[i], n);
        if (k < n)
            return rmi_error(REMAT_ERR_NUMERIC, "nn trainer step: the gradient of %s is not finite at %lld",
                             t->p->p[i].name, (long long)k);
    }
    for (int i = 0; i < t->np; i++) {
        remat_status st = update(t, i);
        if (st != REMAT_OK)
            return st;
    }
    t->updates++;
    return REMAT_OK;
}

remat_status remat_nn_trainer_step(remat_nn_trainer *t, int64_t rows, const void *x, const void *y, double *loss)
{
    if (!t || !x || !y)
        return rmi_error(REMAT_ERR_NULL, "nn trainer step: trainer, x or y is NULL");
    if (rows < 1 || rows > t->o.batch)
        return rmi_error(REMAT_ERR_SHAPE, "nn trainer step: %lld rows; a step takes 1 to %lld",
                         (long long)rows, (long long)t->o.batch);
    if (t->o.shards > 0)
        return nn_trainer_step_sharded(t, rows, x, y, loss);
    double lv;
    remat_status st = nn_trainer_run(t, rows, x, y, &lv);
    if (st == REMAT_OK)
        st = nn_trainer_apply(t, lv);
    if (st == REMAT_OK && loss)
        *loss = lv;
    return st;
}

remat_status remat_nn_trainer_predict(remat_nn_trainer *t, int64_t n, const void *x, void *out)
{
    if (!t || !x || !out)
        return rmi_error(REMAT_ERR_NULL, "nn predict: trainer, x or out is NULL");
    if (n < 1)
        return rmi_error(REMAT_ERR_SHAPE, "nn predict: %lld rows; give at least one", (long long)n);
    remat_dtype dt = t->p->dtype;
    size_t es = remat_dtype_size(dt);
    for (int64_t at = 0; at < n; at += t->o.batch) {
        int64_t rows = n - at < t->o.batch ? n - at : t->o.batch;
        remat_program *prog;
        remat_status st = cached(t, t->fwd, false, rows, &prog);
        if (st != REMAT_OK)
            return st;
        for (int i = 0; i < t->np; i++)
            t->in[i] = remat_nn_params_tensor(t->p, i);
        t->in[t->np] = (remat_tensor){.dtype = dt,
                                      .shape = remat_shape_make(2, (int64_t[]){rows, t->in_features}),
                                      .data = (char *)x + (size_t)(at * t->in_features) * es};
        remat_tensor o = {.dtype = dt, .shape = remat_shape_make(2, (int64_t[]){rows, t->n_out}),
                          .data = (char *)out + (size_t)(at * t->n_out) * es};
        if ((st = remat_run(prog, t->np + 1, t->in, 1, &o, NULL)) != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

void remat_nn_trainer_plan(const remat_nn_trainer *t, remat_memory_plan *plan)
{
    REMAT_NULL_RETURN(t, );
    REMAT_NULL_RETURN(plan, );
    *plan = t->plan;
}

const remat_stats *remat_nn_trainer_last_stats(const remat_nn_trainer *t)
{
    REMAT_NULL_RETURN(t, NULL);
    return &t->stats;
}
