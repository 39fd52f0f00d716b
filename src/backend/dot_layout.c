/*
 * dot_layout.c — how a dot_general becomes a batch of row-major gemms
 * (layout.h), from shapes alone; the CPU runs the plan through OpenBLAS
 * (backend/cpu/dot_general.c), CUDA through cuBLAS (kernels/cuda/lower.c).
 *
 * Every dot_general is a batch of matrix products once each operand is viewed
 * as (B, free, contract) or (B, contract, free):
 *   lhs (B,M,K) or (B,K,M), rhs (B,N,K) or (B,K,N), out (B,M,N) with
 *   B = prod(batch dims), M = prod(lhs free), N = prod(rhs free),
 *   K = prod(contract dims), free dims in their original order (as JAX
 *   orders the output) and batch dims in the order the dimension numbers list.
 * An operand whose memory already has one of those layouts goes to gemm
 * directly (the choice is a transpose flag); otherwise it is transposed into
 * scratch as (B, free, contract).
 *
 * Layout checks ignore size-1 dims (they can sit anywhere without changing
 * the memory order). The contract dims must appear in the same pair order in
 * both operands; two pair orders are tried (sorted by lhs axis, sorted by rhs
 * axis) and the one that copies fewer bytes wins. plan() is shared by the
 * scratch query and the kernels, so they always agree.
 */
#include <string.h>

#include "backend/layout.h"
#include "core/assert.h"

typedef remat_dot_plan dot_plan;

/* Does `perm` (axes in the wanted order) match memory order, ignoring size-1 axes? */
static bool layout_is(const remat_shape *s, const int *perm)
{
    int last = -1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[perm[i]] == 1)
            continue;
        if (perm[i] < last)
            return false;
        last = perm[i];
    }
    return true;
}

/* Free axes of an operand: neither batch nor contract, ascending. */
static int free_axes(const remat_shape *s, int nb, const int *batch, int nc, const int *contract,
                     int *free_out)
{
    bool used[REMAT_MAX_RANK] = {false};
    int nf = 0;
    for (int i = 0; i < nb; i++)
        used[batch[i]] = true;
    for (int i = 0; i < nc; i++)
        used[contract[i]] = true;
    for (int i = 0; i < s->rank; i++)
        if (!used[i])
            free_out[nf++] = i;
    return nf;
}

/* Build [batch][a][b] into perm, where a/b are the free or contract groups. */
static void make_perm(int *perm, int nb, const int *batch, int na, const int *a, int nbb,
                      const int *b)
{
    int p = 0;
    for (int i = 0; i < nb; i++)
        perm[p++] = batch[i];
    for (int i = 0; i < na; i++)
        perm[p++] = a[i];
    for (int i = 0; i < nbb; i++)
        perm[p++] = b[i];
}

/* Plan with the contract pairs taken in the order `order`. */
static void plan_with_order(dot_plan *pl, size_t es, const remat_shape *lhs,
                            const remat_shape *rhs, const remat_dot_dims *d, const int *order,
                            const int *lf, int nlf, const int *rf, int nrf)
{
    const int nb = d->n_batch, nc = d->n_contract;
    int lc[REMAT_MAX_RANK], rc[REMAT_MAX_RANK], bfc[REMAT_MAX_RANK], bcf[REMAT_MAX_RANK];
    for (int i = 0; i < nc; i++) {
        lc[i] = d->lhs_contract[order[i]];
        rc[i] = d->rhs_contract[order[i]];
    }
    pl->scratch = 0;

    make_perm(bfc, nb, d->lhs_batch, nlf, lf, nc, lc);
    make_perm(bcf, nb, d->lhs_batch, nc, lc, nlf, lf);
    pl->lhs_copy = false;
    if (layout_is(lhs, bfc)) {
        pl->lhs_trans = false;
    } else if (layout_is(lhs, bcf)) {
        pl->lhs_trans = true;
    } else {
        pl->lhs_copy = true;
        pl->lhs_trans = false;
        memcpy(pl->lhs_perm, bfc, sizeof bfc);
        pl->scratch += (size_t)(pl->nb * pl->m * pl->k) * es;
    }

    make_perm(bfc, nb, d->rhs_batch, nrf, rf, nc, rc);
    make_perm(bcf, nb, d->rhs_batch, nc, rc, nrf, rf);
    pl->rhs_copy = false;
    if (layout_is(rhs, bcf)) {
        pl->rhs_trans = false;
    } else if (layout_is(rhs, bfc)) {
        pl->rhs_trans = true;
    } else {
        pl->rhs_copy = true;
        pl->rhs_trans = true;
        memcpy(pl->rhs_perm, bfc, sizeof bfc);
        pl->scratch += (size_t)(pl->nb * pl->n * pl->k) * es;
    }
}

/* Sort pair indices 0..n-1 by key[idx] (insertion sort: n <= 8). */
static void order_by(int *order, int n, const int *key)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && key[order[j - 1]] > key[order[j]]; j--) {
            const int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

static dot_plan plan(remat_dtype dt, const remat_shape *lhs, const remat_shape *rhs,
                     const remat_dot_dims *d)
{
    dot_plan pl;
    const size_t es = remat_dtype_size(dt);
    const int nb = d->n_batch, nc = d->n_contract;
    int lf[REMAT_MAX_RANK], rf[REMAT_MAX_RANK], ord_l[REMAT_MAX_RANK], ord_r[REMAT_MAX_RANK];
    REMAT_ASSERT(nb >= 0 && nc >= 0 && nb + nc <= lhs->rank && nb + nc <= rhs->rank);

    pl.nb = pl.k = 1;
    for (int i = 0; i < nb; i++) {
        REMAT_ASSERT(lhs->dims[d->lhs_batch[i]] == rhs->dims[d->rhs_batch[i]]);
        pl.nb *= lhs->dims[d->lhs_batch[i]];
    }
    for (int i = 0; i < nc; i++) {
        REMAT_ASSERT(lhs->dims[d->lhs_contract[i]] == rhs->dims[d->rhs_contract[i]]);
        pl.k *= lhs->dims[d->lhs_contract[i]];
    }
    const int nlf = free_axes(lhs, nb, d->lhs_batch, nc, d->lhs_contract, lf);
    const int nrf = free_axes(rhs, nb, d->rhs_batch, nc, d->rhs_contract, rf);
    REMAT_ASSERT(nlf == lhs->rank - nb - nc && nrf == rhs->rank - nb - nc);
    pl.m = pl.n = 1;
    for (int i = 0; i < nlf; i++)
        pl.m *= lhs->dims[lf[i]];
    for (int i = 0; i < nrf; i++)
        pl.n *= rhs->dims[rf[i]];

    if (pl.nb * pl.m * pl.n == 0 || pl.k == 0) { /* output empty, or all zeros */
        pl.lhs_copy = pl.rhs_copy = pl.lhs_trans = pl.rhs_trans = false;
        pl.scratch = 0;
        return pl;
    }
    order_by(ord_l, nc, d->lhs_contract);
    plan_with_order(&pl, es, lhs, rhs, d, ord_l, lf, nlf, rf, nrf);
    if (pl.scratch > 0 && nc > 1) {
        dot_plan alt = pl;
        order_by(ord_r, nc, d->rhs_contract);
        plan_with_order(&alt, es, lhs, rhs, d, ord_r, lf, nlf, rf, nrf);
        if (alt.scratch < pl.scratch)
            pl = alt;
    }
    return pl;
}

remat_dot_plan rmi_layout_dot_general(remat_dtype dt, const remat_shape *lhs, const remat_shape *rhs,
                                      const remat_dot_dims *d)
{
    return plan(dt, lhs, rhs, d);
}

size_t rmi_layout_dot_general_scratch(remat_dtype dt, const remat_shape *lhs, const remat_shape *rhs,
                                      const remat_dot_dims *d)
{
    return plan(dt, lhs, rhs, d).scratch;
}

