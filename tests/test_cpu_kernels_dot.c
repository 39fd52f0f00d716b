/*
 * test_cpu_kernels_dot.c — the CPU dot_general kernel against the definition
 * for matmul layouts, general dimension numbers and degenerate sizes.
 *
 * Every CPU kernel against a naive reference written here from the op's
 * definition (index arithmetic, libm, long double sums), never against another
 * kernel.
 */
#include "test_cpu_kernels_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "backend/cpu/cpu_kernels.h"

/* ---- dot_general against the definition ---- */

/* out[b.., fl.., fr..] = sum_c lhs[...] * rhs[...], with the dims placed
 * where the dimension numbers say. Also fills absref = sum |lhs*rhs|. */
static void dot_ref(const double *l, const remat_shape *ls, const double *r, const remat_shape *rs,
                    const remat_dot_dims *d, remat_shape *os, double *out, double *absref)
{
    int lrole[REMAT_MAX_RANK] = {0}, rrole[REMAT_MAX_RANK] = {0}; /* 0 free, 1 batch, 2 contract */
    int lfree[REMAT_MAX_RANK], rfree[REMAT_MAX_RANK], nlf = 0, nrf = 0, orank = 0;
    int64_t od[REMAT_MAX_RANK], cd[REMAT_MAX_RANK];
    for (int i = 0; i < d->n_batch; i++)
        lrole[d->lhs_batch[i]] = 1, rrole[d->rhs_batch[i]] = 1;
    for (int i = 0; i < d->n_contract; i++)
        lrole[d->lhs_contract[i]] = 2, rrole[d->rhs_contract[i]] = 2;
    for (int i = 0; i < ls->rank; i++)
        if (!lrole[i])
            lfree[nlf++] = i;
    for (int i = 0; i < rs->rank; i++)
        if (!rrole[i])
            rfree[nrf++] = i;
    for (int i = 0; i < d->n_batch; i++)
        od[orank++] = ls->dims[d->lhs_batch[i]];
    for (int i = 0; i < nlf; i++)
        od[orank++] = ls->dims[lfree[i]];
    for (int i = 0; i < nrf; i++)
        od[orank++] = rs->dims[rfree[i]];
    *os = shp(orank, od);
    for (int i = 0; i < d->n_contract; i++)
        cd[i] = ls->dims[d->lhs_contract[i]];
    const remat_shape cs = shp(d->n_contract, cd);
    const int64_t no = remat_shape_numel(os), nc = remat_shape_numel(&cs);
    int64_t oi[REMAT_MAX_RANK], ci[REMAT_MAX_RANK], li[REMAT_MAX_RANK], ri[REMAT_MAX_RANK];
    for (int64_t f = 0; f < no; f++) {
        unravel(os, f, oi);
        int p = 0;
        for (int i = 0; i < d->n_batch; i++, p++)
            li[d->lhs_batch[i]] = oi[p], ri[d->rhs_batch[i]] = oi[p];
        for (int i = 0; i < nlf; i++, p++)
            li[lfree[i]] = oi[p];
        for (int i = 0; i < nrf; i++, p++)
            ri[rfree[i]] = oi[p];
        long double s = 0, sa = 0;
        for (int64_t g = 0; g < nc; g++) {
            unravel(&cs, g, ci);
            for (int i = 0; i < d->n_contract; i++)
                li[d->lhs_contract[i]] = ci[i], ri[d->rhs_contract[i]] = ci[i];
            const long double prod = (long double)l[ravel(ls, li)] * r[ravel(rs, ri)];
            s += prod;
            sa += fabsl(prod);
        }
        out[f] = (double)s;
        absref[f] = (double)sa;
    }
}

/* Runs both dtypes; scratch is allocated to exactly the reported size so that
 * ASan catches an under-reported size. Returns the f64 scratch bytes. */
static size_t dot_check(int lrank, const int64_t *ldims, int rrank, const int64_t *rdims,
                        remat_dot_dims d)
{
    const remat_shape ls = shp(lrank, ldims), rs = shp(rrank, rdims);
    const int64_t nl = remat_shape_numel(&ls), nr = remat_shape_numel(&rs);
    double *l = xmalloc((size_t)nl * 8), *r = xmalloc((size_t)nr * 8);
    fill(l, nl);
    fill(r, nr);
    remat_shape os;
    double want[4096], absref[4096];
    dot_ref(l, &ls, r, &rs, &d, &os, want, absref);
    const int64_t no = remat_shape_numel(&os);
    assert_true(no < 4096);
    int64_t k = 1;
    for (int i = 0; i < d.n_contract; i++)
        k *= ldims[d.lhs_contract[i]];

    const size_t sb64 = rmi_layout_dot_general_scratch(REMAT_F64, &ls, &rs, &d);
    double *out = xmalloc((size_t)(no + 1) * 8);
    void *scratch = sb64 ? xmalloc(sb64) : NULL;
    for (int64_t i = 0; i <= no; i++)
        out[i] = NAN;
    rmi_cpu_dot_general(REMAT_F64, out, l, &ls, r, &rs, &d, scratch);
    for (int64_t i = 0; i < no; i++)
        if (!(fabs(out[i] - want[i]) <= 4.0 * (double)k * DBL_EPSILON * absref[i]))
            fail_msg("dot_general f64 element %lld: got %.17g want %.17g", (long long)i, out[i],
                     want[i]);
    assert_true(isnan(out[no]));
    free(scratch);

    const size_t sb32 = rmi_layout_dot_general_scratch(REMAT_F32, &ls, &rs, &d);
    assert_true(sb32 * 2 == sb64);
    float *l32 = to_f32(l, nl), *r32 = to_f32(r, nr), *out32 = xmalloc((size_t)(no + 1) * 4);
    scratch = sb32 ? xmalloc(sb32) : NULL;
    for (int64_t i = 0; i <= no; i++)
        out32[i] = NAN;
    rmi_cpu_dot_general(REMAT_F32, out32, l32, &ls, r32, &rs, &d, scratch);
    for (int64_t i = 0; i < no; i++)
        if (!(fabs(out32[i] - want[i]) <= 4.0 * (double)k * FLT_EPSILON * absref[i]))
            fail_msg("dot_general f32 element %lld: got %.9g want %.17g", (long long)i,
                     (double)out32[i], want[i]);
    assert_true(isnan(out32[no]));
    free(scratch), free(l), free(r), free(out), free(l32), free(r32), free(out32);
    return sb64;
}

#define DD(...) ((remat_dot_dims){__VA_ARGS__})

static void test_cpu_kernels_dot_general_matmul_cases_need_no_scratch(void **state)
{
    (void)state;
    /* x(M,K) @ w(K,N) */
    assert_int_equal(dot_check(2, (int64_t[]){7, 5}, 2, (int64_t[]){5, 6},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* dx = g(M,N) . w(K,N) over N -> (M,K) */
    assert_int_equal(dot_check(2, (int64_t[]){7, 6}, 2, (int64_t[]){5, 6},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1})), 0);
    /* dw = h(M,K) . g(M,N) over M -> (K,N) */
    assert_int_equal(dot_check(2, (int64_t[]){7, 5}, 2, (int64_t[]){7, 6},
                               DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0})), 0);
    /* (B,M,K) x (B,K,N) */
    assert_int_equal(dot_check(3, (int64_t[]){3, 4, 5}, 3, (int64_t[]){3, 5, 6},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                                  .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0})), 0);
    /* large enough for OpenBLAS's blocked kernels */
    assert_int_equal(dot_check(2, (int64_t[]){33, 70}, 2, (int64_t[]){70, 41},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* matrix-vector, vector dot, outer product, size-1 dims */
    assert_int_equal(dot_check(2, (int64_t[]){4, 5}, 1, (int64_t[]){5},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* the gemv forms: a transposed matrix times a vector, a vector times a matrix either way round,
     * large enough for OpenBLAS's blocked gemv */
    assert_int_equal(dot_check(2, (int64_t[]){70, 33}, 1, (int64_t[]){70},
                               DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(1, (int64_t[]){70}, 2, (int64_t[]){70, 41},
                               DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(1, (int64_t[]){70}, 2, (int64_t[]){41, 70},
                               DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {1})), 0);
    assert_int_equal(dot_check(2, (int64_t[]){1, 70}, 2, (int64_t[]){70, 41},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(1, (int64_t[]){9}, 1, (int64_t[]){9},
                               DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(1, (int64_t[]){4}, 1, (int64_t[]){3}, DD(.n_contract = 0)), 0);
    assert_int_equal(dot_check(3, (int64_t[]){1, 4, 1}, 2, (int64_t[]){1, 3},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0})), 0);
}

static void test_cpu_kernels_dot_general_general_dimension_numbers(void **state)
{
    (void)state;
    /* batch dims not leading: lhs (M,B,K), rhs (K,B,N) -> (B,M,N); needs copies */
    assert_true(dot_check(3, (int64_t[]){4, 3, 5}, 3, (int64_t[]){5, 3, 6},
                          DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0},
                             .n_batch = 1, .lhs_batch = {1}, .rhs_batch = {1})) > 0);
    /* two contracting dims in different orders: lhs (M,K1,K2), rhs (K2,N,K1) */
    dot_check(3, (int64_t[]){4, 3, 5}, 3, (int64_t[]){5, 6, 3},
              DD(.n_contract = 2, .lhs_contract = {1, 2}, .rhs_contract = {2, 0}));
    /* contract pairs listed out of memory order on both sides: direct after reordering */
    assert_int_equal(dot_check(3, (int64_t[]){4, 3, 5}, 3, (int64_t[]){3, 5, 6},
                               DD(.n_contract = 2, .lhs_contract = {2, 1}, .rhs_contract = {1, 0})),
                     0);
    /* pair order matters: lhs (M,K1,K2), rhs (K2,K1,N). Pairing by the lhs
     * order would copy the big rhs; pairing by the rhs order copies lhs only */
    assert_int_equal(dot_check(3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){4, 3, 50},
                               DD(.n_contract = 2, .lhs_contract = {1, 2}, .rhs_contract = {1, 0})),
                     2 * 3 * 4 * sizeof(double));
    /* a size-1 contract dim can sit anywhere: lhs (M,1,N') needs no copy */
    assert_int_equal(dot_check(3, (int64_t[]){4, 1, 5}, 2, (int64_t[]){1, 6},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* two batch dims, swapped between operands: lhs (B1,M,B2,K), rhs (B2,K,B1,N) */
    dot_check(4, (int64_t[]){2, 4, 3, 5}, 4, (int64_t[]){3, 5, 2, 6},
              DD(.n_contract = 1, .lhs_contract = {3}, .rhs_contract = {1}, .n_batch = 2,
                 .lhs_batch = {0, 2}, .rhs_batch = {2, 0}));
    /* batch last, several free dims on each side: lhs (M1,K,M2,B), rhs (N1,B,K,N2) */
    dot_check(4, (int64_t[]){2, 5, 3, 4}, 4, (int64_t[]){3, 4, 5, 2},
              DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {2}, .n_batch = 1,
                 .lhs_batch = {3}, .rhs_batch = {1}));
    /* lhs transposed layout (B,K,M) with rhs (B,N,K) */
    assert_int_equal(dot_check(3, (int64_t[]){2, 5, 4}, 3, (int64_t[]){2, 6, 5},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {2},
                                  .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0})),
                     0);
    /* only batch dims, no contraction: elementwise product per batch */
    dot_check(2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 3},
              DD(.n_batch = 2, .lhs_batch = {0, 1}, .rhs_batch = {1, 0}));
}

static void test_cpu_kernels_dot_general_degenerate_sizes(void **state)
{
    (void)state;
    /* K = 0: the output is all zeros */
    assert_int_equal(dot_check(2, (int64_t[]){3, 0}, 2, (int64_t[]){0, 4},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    /* K = 0 in a layout that would otherwise need a copy */
    assert_int_equal(dot_check(3, (int64_t[]){3, 2, 0}, 3, (int64_t[]){0, 2, 4},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0},
                                  .n_batch = 1, .lhs_batch = {1}, .rhs_batch = {1})), 0);
    /* M = 0, N = 0, B = 0: nothing to write */
    assert_int_equal(dot_check(2, (int64_t[]){0, 5}, 2, (int64_t[]){5, 4},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(2, (int64_t[]){3, 5}, 2, (int64_t[]){5, 0},
                               DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0})), 0);
    assert_int_equal(dot_check(3, (int64_t[]){0, 3, 5}, 3, (int64_t[]){0, 5, 2},
                               DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                                  .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0})), 0);
}

/* ---- a mostly-zero constant operand (dot_sparse.c) ---- */

/* the plan's allocations, freed by the test */
static void *blocks[64];
static int nblocks;
static void *take(void *ctx, size_t n)
{
    (void)ctx;
    assert_true(nblocks < 64);
    return blocks[nblocks++] = xmalloc(n);
}
static void drop_all(void)
{
    while (nblocks > 0)
        free(blocks[--nblocks]);
}

/* the op of dot_general(lhs, rhs, d) with input `side`'s values (c) handed over as a constant */
static remat_exec_op dot_op(const remat_shape *ls, const remat_shape *rs, const remat_dot_dims *d, int side,
                            const double *c, const void **data, remat_dtype *dts, remat_shape *shs)
{
    dts[0] = dts[1] = REMAT_F64;
    shs[0] = *ls, shs[1] = *rs;
    data[0] = side == 0 ? c : NULL;
    data[1] = side == 1 ? c : NULL;
    remat_exec_op op = {.op = REMAT_OP_DOT_GENERAL, .dtype = REMAT_F64, .nin = 2, .in_dtypes = dts,
                        .in_shapes = shs, .in_data = data};
    op.p.dot = d;
    return op;
}

/* side's operand sparse (about one entry in eight non-zero, at least one per row), the other dense:
 * the plan exists and the sparse kernel gives the definition's value; with an infinity in the other
 * operand it gives the dense kernel's bits (NaN where 0 * inf meets the sum) */
static void sparse_check(int lrank, const int64_t *ldims, int rrank, const int64_t *rdims, remat_dot_dims d,
                         int side)
{
    const remat_shape ls = shp(lrank, ldims), rs = shp(rrank, rdims);
    const int64_t nl = remat_shape_numel(&ls), nr = remat_shape_numel(&rs);
    double *l = xmalloc((size_t)nl * 8), *r = xmalloc((size_t)nr * 8);
    fill(l, nl);
    fill(r, nr);
    double *c = side ? r : l;
    int64_t nc = side ? nr : nl;
    for (int64_t i = 0; i < nc; i++)
        if (i % 8 != 3)
            c[i] = 0.0;
    const void *data[2];
    remat_dtype dts[2];
    remat_shape shs[2], os;
    remat_exec_op op = dot_op(&ls, &rs, &d, side, c, data, dts, shs);
    int oom = 1;
    const rmi_dot_sparse *sp = rmi_cpu_dot_sparse_plan(&op, take, NULL, &oom);
    assert_false(oom);
    assert_non_null(sp);
    double want[4096], absref[4096], out[4096], dense[4096];
    dot_ref(l, &ls, r, &rs, &d, &os, want, absref);
    const int64_t no = remat_shape_numel(&os);
    assert_true(no < 4096);
    rmi_cpu_dot_sparse(sp, out, l, &ls, r, &rs, &d, NULL);
    for (int64_t i = 0; i < no; i++)
        if (!(fabs(out[i] - want[i]) <= 4.0 * 64 * DBL_EPSILON * absref[i]))
            fail_msg("sparse dot_general element %lld: got %.17g want %.17g", (long long)i, out[i], want[i]);
    double *x = side ? l : r;
    x[0] = INFINITY;
    rmi_cpu_dot_sparse(sp, out, l, &ls, r, &rs, &d, NULL);
    rmi_cpu_dot_general(REMAT_F64, dense, l, &ls, r, &rs, &d, NULL);
    int nans = 0;
    for (int64_t i = 0; i < no; i++) {
        nans += isnan(dense[i]);
        if (!(out[i] == dense[i] || (isnan(out[i]) && isnan(dense[i]))))
            fail_msg("sparse dot_general with an infinity, element %lld: got %.17g, gemm %.17g", (long long)i,
                     out[i], dense[i]);
    }
    assert_true(nans > 0);
    drop_all();
    free(l), free(r);
}

static void test_cpu_kernels_dot_general_sparse_constant(void **state)
{
    (void)state;
    for (int side = 0; side < 2; side++) {
        /* x(M,K) @ w(K,N) */
        sparse_check(2, (int64_t[]){24, 40}, 2, (int64_t[]){40, 16},
                     DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}), side);
        /* g(M,N) . w(K,N) over N: rhs stored transposed */
        sparse_check(2, (int64_t[]){24, 40}, 2, (int64_t[]){16, 40},
                     DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}), side);
        /* h(M,K)^T . g(M,N) over M: lhs stored transposed */
        sparse_check(2, (int64_t[]){40, 24}, 2, (int64_t[]){40, 16},
                     DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}), side);
    }
    /* matrix times vector and vector times matrix, the matrix the constant */
    sparse_check(2, (int64_t[]){48, 40}, 1, (int64_t[]){40},
                 DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}), 0);
    sparse_check(2, (int64_t[]){40, 48}, 1, (int64_t[]){40},
                 DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}), 0);
    sparse_check(1, (int64_t[]){40}, 2, (int64_t[]){40, 48},
                 DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}), 1);
    /* batched, each batch its own constant block: the gas Jacobian's per-reaction weights (N, slots)
     * times its slot selections (N, slots, K), and matrices times matrices by batch */
    const remat_dot_dims db = DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}, .n_batch = 1,
                                 .lhs_batch = {0}, .rhs_batch = {0});
    sparse_check(2, (int64_t[]){30, 8}, 3, (int64_t[]){30, 8, 12}, db, 1);
    sparse_check(3, (int64_t[]){30, 12, 8}, 2, (int64_t[]){30, 8},
                 DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}, .n_batch = 1, .lhs_batch = {0},
                    .rhs_batch = {0}), 0);
    const remat_dot_dims dm = DD(.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}, .n_batch = 1,
                                 .lhs_batch = {0}, .rhs_batch = {0});
    for (int side = 0; side < 2; side++)
        sparse_check(3, (int64_t[]){3, 12, 40}, 3, (int64_t[]){3, 40, 9}, dm, side);
}

/* A 0/1 selection (at most one non-zero per output, some outputs empty) times a vector, plain and
 * batched, the selection on either side: dot_sparse.c's gather gives each output the one-term sum
 * +0 + v x exactly (an empty output +0, and +0 where v x is -0), and, with an infinity in the
 * vector, the dense kernel's bits */
static void test_cpu_kernels_dot_general_sparse_selection(void **state)
{
    (void)state;
    for (int batched = 0; batched < 2; batched++)
        for (int side = 0; side < 2; side++) {
            const int64_t B = batched ? 3 : 1, M = 40, K = 30; /* selection (M x K), vector (K,) */
            double *c = xmalloc((size_t)(B * M * K) * 8), *x = xmalloc((size_t)(B * K) * 8);
            double out[120], dense[120];
            for (int64_t i = 0; i < B * M * K; i++)
                c[i] = 0.0;
            for (int64_t b = 0; b < B; b++)
                for (int64_t o = 0; o < M; o++)
                    if (o % 5 != 2) /* outputs o = 2 mod 5 empty */
                        c[b * M * K + (side ? ((o * 7 + b) % K) * M + o : o * K + (o * 7 + b) % K)] =
                            o % 4 == 1 ? 2.5 : 1.0;
            fill(x, B * K);
            x[1] = -0.0, x[2] = 0.0; /* v x = -0 somewhere */
            remat_shape cs = batched ? shp(3, side ? (int64_t[]){B, K, M} : (int64_t[]){B, M, K})
                                     : shp(2, side ? (int64_t[]){K, M} : (int64_t[]){M, K});
            remat_shape xs = batched ? shp(2, (int64_t[]){B, K}) : shp(1, (int64_t[]){K});
            remat_dot_dims d = batched ? DD(.n_contract = 1, .lhs_contract = {side ? 1 : 2}, .rhs_contract = {1},
                                            .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0})
                                       : DD(.n_contract = 1, .lhs_contract = {side ? 0 : 1}, .rhs_contract = {0});
            if (side) /* x (B, K) . c (B, K, M) over K */
                d = batched ? DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}, .n_batch = 1,
                                 .lhs_batch = {0}, .rhs_batch = {0})
                            : DD(.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0});
            const remat_shape *ls = side ? &xs : &cs, *rs = side ? &cs : &xs;
            const double *l = side ? x : c, *r = side ? c : x;
            const void *data[2];
            remat_dtype dts[2];
            remat_shape shs[2];
            remat_exec_op op = dot_op(ls, rs, &d, side, c, data, dts, shs);
            int oom = 1;
            const rmi_dot_sparse *sp = rmi_cpu_dot_sparse_plan(&op, take, NULL, &oom);
            assert_false(oom);
            assert_non_null(sp);
            rmi_cpu_dot_sparse(sp, out, l, ls, r, rs, &d, NULL);
            for (int64_t b = 0; b < B; b++)
                for (int64_t o = 0; o < M; o++) {
                    double want = 0.0;
                    if (o % 5 != 2)
                        want = 0.0 + (o % 4 == 1 ? 2.5 : 1.0) * x[b * K + (o * 7 + b) % K];
                    double got = out[b * M + o];
                    if (!(got == want && signbit(got) == signbit(want)))
                        fail_msg("selection (batched %d, side %d) output %lld: got %.17g want %.17g", batched, side,
                                 (long long)(b * M + o), got, want);
                }
            x[0] = INFINITY;
            rmi_cpu_dot_sparse(sp, out, l, ls, r, rs, &d, NULL);
            rmi_cpu_dot_general(REMAT_F64, dense, l, ls, r, rs, &d, NULL);
            for (int64_t i = 0; i < B * M; i++)
                if (!(out[i] == dense[i] || (isnan(out[i]) && isnan(dense[i]))))
                    fail_msg("selection with an infinity, output %lld: got %.17g, gemm %.17g", (long long)i, out[i],
                             dense[i]);
            drop_all();
            free(c), free(x);
        }
}

/* a constant with more than a quarter non-zero or no constant at all: the dense kernel */
static void test_cpu_kernels_dot_general_sparse_only_when_it_pays(void **state)
{
    (void)state;
    const remat_shape ls = shp(2, (int64_t[]){24, 40}), rs = shp(2, (int64_t[]){40, 16});
    const remat_dot_dims d = DD(.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0});
    double *l = xmalloc(24 * 40 * 8);
    fill(l, 24 * 40);
    for (int64_t i = 0; i < 24 * 40; i++)
        if (i % 3)
            l[i] = 0.0; /* one in three non-zero */
    const void *data[2];
    remat_dtype dts[2];
    remat_shape shs[2];
    remat_exec_op op = dot_op(&ls, &rs, &d, 0, l, data, dts, shs);
    int oom = 1;
    assert_null(rmi_cpu_dot_sparse_plan(&op, take, NULL, &oom));
    assert_false(oom);
    op.in_data = NULL;
    assert_null(rmi_cpu_dot_sparse_plan(&op, take, NULL, &oom));
    assert_int_equal(nblocks, 0);
    free(l);
}

/* ---- main ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_kernels_dot_general_matmul_cases_need_no_scratch),
        cmocka_unit_test(test_cpu_kernels_dot_general_general_dimension_numbers),
        cmocka_unit_test(test_cpu_kernels_dot_general_degenerate_sizes),
        cmocka_unit_test(test_cpu_kernels_dot_general_sparse_constant),
        cmocka_unit_test(test_cpu_kernels_dot_general_sparse_selection),
        cmocka_unit_test(test_cpu_kernels_dot_general_sparse_only_when_it_pays),
    };
    rng_seed(0x9e3779b97f4a7c15ull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
