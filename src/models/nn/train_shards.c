/*
 * train_shards.c — a step whose batch is cut into K micro-shards: contiguous
 * runs of rows, shard k the rows [k rows / K, (k+1) rows / K). Each shard's
 * loss and gradient come from their own program run; shard k contributes the
 * vector (n_k l_k, n_k g_k) in double, and the step's loss and gradient are
 * the sum of the K vectors in shard order, ((v_0 + v_1) + v_2) + ...,
 * divided by the batch's rows. The order is fixed by K alone, so however
 * the shards are spread over the ranks of a remat_dist group
 * (remat_dist_split: contiguous runs) the sum, and so every rank's update,
 * is the same to the bit as one process running all K shards.
 *
 * For f32 parameters n_k g_k is exact in double, so one shard (K = 1) gives
 * the whole-batch step's gradient and update exactly, loss included.
 *
 * On the CUDA backend with several ranks the sum runs on the devices
 * (remat_dist_device_sum: NCCL, then one kernel adding in shard order), the
 * same bits as remat_dist_sum; where NCCL does not load (or REMAT_NCCL=0)
 * it is remat_dist_sum's. The gradients still come to the host from each
 * program run, so today this path stages the vectors through device
 * buffers; it is the door for a trainer that keeps them on the device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn_impl.h"
#include "remat/dist.h"
#include "remat/dist_device.h"
#include "train_impl.h"

/* Every rank compiles for the same backend (else the ranks' bits differ):
 * rank 0's name against this rank's. Then, on CUDA, the device sum. */
static remat_status shards_backend(remat_nn_trainer *t)
{
    remat_dist *d = t->o.dist;
    remat_status st = nn_trainer_backend(t, &t->be);
    char name[32] = "", root[32];
    if (st == REMAT_OK)
        snprintf(name, sizeof name, "%s", remat_backend_name(t->be));
    memcpy(root, name, sizeof root);
    if ((st = remat_dist_agree(d, st)) != REMAT_OK || (st = remat_dist_bcast(d, 0, root, sizeof root)) != REMAT_OK)
        return st;
    st = strcmp(root, name) ? rmi_error(REMAT_ERR_ARG, "nn trainer: backend %s here, %s on rank 0: every rank "
                                        "must compute with the same one (REMAT_BACKEND)", name, root)
                            : REMAT_OK;
    if ((st = remat_dist_agree(d, st)) != REMAT_OK)
        return st;
    const char *env = getenv("REMAT_NCCL");
    if (strcmp(name, "cuda") != 0 || (env && !strcmp(env, "0")))
        return REMAT_OK;
    st = remat_dist_device_new(d, t->be, &t->dev);
    if (st == REMAT_ERR_UNSUPPORTED) /* no NCCL: remat_dist_sum, the same bits */
        return REMAT_OK;
    size_t v = (size_t)(t->numel + 1);
    if (st == REMAT_OK) {
        t->d_mine = remat_backend_alloc(t->be, sizeof(double) * v * (size_t)t->own);
        t->d_sum = remat_backend_alloc(t->be, sizeof(double) * v);
        st = t->d_mine && t->d_sum ? REMAT_OK : REMAT_ERR_NOMEM;
    }
    return remat_dist_agree(d, st);
}

int64_t nn_trainer_shard_rows(const remat_nn_train_options *o)
{
    return o->shards > 0 ? (o->batch + o->shards - 1) / o->shards : o->batch;
}

/* The owners of k_n shards and the vectors of this rank's. */
static remat_status shards_alloc(remat_nn_trainer *t, int64_t k_n)
{
    t->owner = rmi_malloc(sizeof *t->owner * (size_t)k_n);
    if (!t->owner)
        return rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory for %lld shard owners", (long long)k_n);
    remat_status st = t->o.dist ? remat_dist_split(t->o.dist, k_n, NULL, t->owner) : REMAT_OK;
    if (st != REMAT_OK)
        return st;
    if (!t->o.dist)
        memset(t->owner, 0, sizeof *t->owner * (size_t)k_n);
    for (int64_t k = 0; k < k_n; k++)
        t->own += t->owner[k] == t->rank;
    size_t v = (size_t)(t->numel + 1);
    t->mine = rmi_malloc(sizeof *t->mine * v * (size_t)(t->own ? t->own : 1));
    t->sum = rmi_malloc(sizeof *t->sum * v);
    if (!t->mine || !t->sum)
        return rmi_error(REMAT_ERR_NOMEM, "nn trainer: out of memory for %lld shards' gradients (%lld doubles)",
                         (long long)k_n, (long long)v * (t->own + 1));
    return REMAT_OK;
}

remat_status nn_trainer_shards_new(remat_nn_trainer *t)
{
    int64_t k_n = t->o.shards;
    if (k_n == 0)
        return REMAT_OK;
    t->numel = remat_nn_params_numel(t->p);
    t->rank = remat_dist_rank(t->o.dist);
    remat_status st = shards_alloc(t, k_n);
    if (remat_dist_size(t->o.dist) == 1)
        return st;
    /* memory can fail on one rank: agreed before the backend's collectives */
    if ((st = remat_dist_agree(t->o.dist, st)) != REMAT_OK)
        return st;
    return shards_backend(t);
}

void nn_trainer_shards_free(remat_nn_trainer *t)
{
    if (t->dev) {
        remat_backend_free(t->be, t->d_mine);
        remat_backend_free(t->be, t->d_sum);
        remat_dist_device_free(t->dev);
    }
    rmi_free(t->owner);
    rmi_free(t->mine);
    rmi_free(t->sum);
}

/* v := (n l, n g) with g the gradients the last run left in t->grads */
static void widen(const remat_nn_trainer *t, int64_t n, double l, double *v)
{
    double w = (double)n;
    v[0] = w * l;
    int64_t at = 1;
    for (int i = 0; i < t->np; i++) {
        int64_t m = remat_shape_numel(&t->p->p[i].shape);
        if (t->p->dtype == REMAT_F32) {
            const float *g = t->grads[i];
            for (int64_t e = 0; e < m; e++)
                v[at + e] = w * (double)g[e];
        } else {
            const double *g = t->grads[i];
            for (int64_t e = 0; e < m; e++)
                v[at + e] = w * g[e];
        }
        at += m;
    }
}

/* t->grads := the summed gradient over `rows`; returns the mean loss */
static double narrow(remat_nn_trainer *t, int64_t rows)
{
    const double *s = t->sum, w = (double)rows;
    int64_t at = 1;
    for (int i = 0; i < t->np; i++) {
        int64_t m = remat_shape_numel(&t->p->p[i].shape);
        if (t->p->dtype == REMAT_F32) {
            float *g = t->grads[i];
            for (int64_t e = 0; e < m; e++)
                g[e] = (float)(s[at + e] / w);
        } else {
            double *g = t->grads[i];
            for (int64_t e = 0; e < m; e++)
                g[e] = s[at + e] / w;
        }
        at += m;
    }
    return s[0] / w;
}

/* This rank's shards: one vector each, in shard order. */
static remat_status run_mine(remat_nn_trainer *t, int64_t rows, const void *x, const void *y)
{
    size_t es = remat_dtype_size(t->p->dtype), v = (size_t)(t->numel + 1);
    int64_t k_n = t->o.shards;
    int j = 0;
    for (int64_t k = 0; k < k_n; k++) {
        if (t->owner[k] != t->rank)
            continue;
        double *vk = t->mine + v * (size_t)j++;
        int64_t a = k * rows / k_n, n = (k + 1) * rows / k_n - a;
        if (n == 0) { /* a short last batch of fewer rows than shards */
            memset(vk, 0, sizeof *vk * v);
            continue;
        }
        double l;
        remat_status st = nn_trainer_run(t, n, (const char *)x + (size_t)(a * t->in_features) * es,
                                         (const char *)y + (size_t)(a * t->n_out) * es, &l);
        if (st != REMAT_OK)
            return st;
        widen(t, n, l, vk);
    }
    return REMAT_OK;
}

/* remat_dist_sum through the devices; every copy agreed on before the next
 * collective, so a failed copy on one rank leaves no rank waiting */
static remat_status sum_on_devices(remat_nn_trainer *t)
{
    size_t v = sizeof(double) * (size_t)(t->numel + 1);
    remat_status st = remat_backend_upload(t->be, t->d_mine, t->mine, v * (size_t)t->own);
    if ((st = remat_dist_agree(t->o.dist, st)) == REMAT_OK)
        st = remat_dist_device_sum(t->dev, t->o.shards, t->owner, t->numel + 1, t->d_mine, t->d_sum);
    if (st == REMAT_OK)
        st = remat_backend_download(t->be, t->sum, t->d_sum, v);
    return remat_dist_agree(t->o.dist, st);
}

/* The sum of every shard's vector in shard order, into t->sum. */
static remat_status sum_shards(remat_nn_trainer *t)
{
    int64_t k_n = t->o.shards, v = t->numel + 1;
    if (t->dev)
        return sum_on_devices(t);
    if (t->o.dist)
        return remat_dist_sum(t->o.dist, k_n, t->owner, v, t->mine, t->sum);
    memcpy(t->sum, t->mine, sizeof *t->sum * (size_t)v);
    for (int64_t k = 1; k < k_n; k++) {
        const double *vk = t->mine + v * k;
        for (int64_t e = 0; e < v; e++)
            t->sum[e] += vk[e];
    }
    return REMAT_OK;
}

remat_status nn_trainer_step_sharded(remat_nn_trainer *t, int64_t rows, const void *x, const void *y, double *loss)
{
    remat_status st = run_mine(t, rows, x, y);
    /* a run can fail on one rank only: agree before the collective sum */
    if (t->o.dist)
        st = remat_dist_agree(t->o.dist, st);
    if (st == REMAT_OK)
        st = sum_shards(t);
    if (st != REMAT_OK)
        return st;
    double lv = narrow(t, rows);
    /* the same sum on every rank: every rank agrees on a non-finite loss */
    st = nn_trainer_apply(t, lv);
    if (st == REMAT_OK && loss)
        *loss = lv;
    return st;
}
