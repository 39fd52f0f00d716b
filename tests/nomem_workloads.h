/*
 * nomem_workloads.h — the seed-like programs the out-of-memory tests build
 * (test_nomem.c: building and differentiating; test_nomem_run.c: compiling
 * and running): the checkpoint-policy MLP of examples/seeds, nested
 * checkpoint regions as hierarchical_tanh, the PFR Euler step under scan with
 * a binomial schedule. Each returns the status of the first failure (*out
 * NULL then).
 */
#ifndef REMAT_TESTS_NOMEM_WORKLOADS_H
#define REMAT_TESTS_NOMEM_WORKLOADS_H

#include "remat/remat.h"
#include "test_util.h"

typedef remat_status (*builder)(remat_fn **out);

/* remat_fn_new returns NULL only when out of memory */
#define NEW_FN(var, name)                                                                                   \
    remat_fn *var = remat_fn_new(name);                                                                     \
    if (!var)                                                                                               \
        return REMAT_ERR_NOMEM;

/* f's status after building; frees f unless it is fine */
static remat_status finish(remat_fn *f, remat_fn **out)
{
    remat_status st = remat_fn_status(f);
    if (st != REMAT_OK) {
        remat_fn_free(f);
        return st;
    }
    *out = f;
    return REMAT_OK;
}

/* checkpoint_dot_policy / remat_block_net: two dense layers, each a region
 * saving dots without batch dims, and a named value saved by name. */
static remat_fn *dense_layer(void)
{
    remat_fn *f = remat_fn_new("dense");
    if (!f)
        return NULL;
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, DIMS(4, 8));
    remat_val w = remat_arg(f, "w", REMAT_F32, 2, DIMS(8, 8));
    remat_val h = remat_name(f, remat_matmul(f, x, w), "pre");
    remat_fn_output(f, remat_tanh(f, h));
    return f;
}

static remat_status build_mlp(remat_fn **out)
{
    *out = NULL;
    remat_fn *layer = dense_layer();
    if (!layer)
        return REMAT_ERR_NOMEM;
    remat_policy *names = remat_policy_save_only_these_names(1, (const char *[]){"pre"});
    remat_policy *both = names ? remat_policy_save_from_both(names, remat_dots_with_no_batch_dims_saveable) : NULL;
    remat_fn *blk = both ? remat_checkpoint(layer, both) : NULL;
    remat_policy_free(both);
    remat_policy_free(names);
    remat_fn_free(layer);
    if (!blk)
        return REMAT_ERR_NOMEM;
    remat_fn *f = remat_fn_new("mlp_loss");
    if (!f) {
        remat_fn_free(blk);
        return REMAT_ERR_NOMEM;
    }
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, DIMS(4, 8));
    remat_val w1 = remat_arg(f, "w1", REMAT_F32, 2, DIMS(8, 8));
    remat_val w2 = remat_arg(f, "w2", REMAT_F32, 2, DIMS(8, 8));
    x = remat_call1(f, blk, 2, (remat_val[]){x, w1});
    x = remat_call1(f, blk, 2, (remat_val[]){x, w2});
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, x, x)));
    remat_fn_free(blk);
    return finish(f, out);
}

/* the same two layers offloading the named value (JAX's Offloadable):
 * the OFFLOAD/RELOAD pair, its tier storage and its store */
static remat_status build_offload(remat_fn **out)
{
    *out = NULL;
    remat_fn *layer = dense_layer();
    if (!layer)
        return REMAT_ERR_NOMEM;
    remat_policy *off = remat_policy_save_and_offload_only_these_names(0, NULL, 1, (const char *[]){"pre"}, "device",
                                                                       "pinned_host");
    remat_fn *blk = off ? remat_checkpoint(layer, off) : NULL;
    remat_policy_free(off);
    remat_fn_free(layer);
    if (!blk)
        return REMAT_ERR_NOMEM;
    remat_fn *f = remat_fn_new("offload_loss");
    if (!f) {
        remat_fn_free(blk);
        return REMAT_ERR_NOMEM;
    }
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, DIMS(4, 8));
    remat_val w1 = remat_arg(f, "w1", REMAT_F32, 2, DIMS(8, 8));
    remat_val w2 = remat_arg(f, "w2", REMAT_F32, 2, DIMS(8, 8));
    x = remat_call1(f, blk, 2, (remat_val[]){x, w1});
    x = remat_call1(f, blk, 2, (remat_val[]){x, w2});
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, x, x)));
    remat_fn_free(blk);
    return finish(f, out);
}

/* hierarchical_tanh, smaller: blocks of checkpointed layers, checkpointed */
static remat_status build_nested(remat_fn **out)
{
    *out = NULL;
    NEW_FN(layer, "single_layer");
    remat_val x = remat_arg(layer, "x", REMAT_F64, 1, DIMS(16));
    remat_fn_output(layer, remat_tanh(layer, remat_add_scalar(layer, remat_mul_scalar(layer, x, 1.01), 0.01)));
    remat_fn *ck_layer = remat_fn_status(layer) == REMAT_OK ? remat_checkpoint(layer, NULL) : NULL;
    remat_status st = remat_fn_status(layer) != REMAT_OK ? remat_fn_status(layer) : REMAT_ERR_NOMEM;
    remat_fn_free(layer);
    if (!ck_layer)
        return st;
    remat_fn *block = remat_fn_new("block");
    if (!block) {
        remat_fn_free(ck_layer);
        return REMAT_ERR_NOMEM;
    }
    x = remat_arg(block, "x", REMAT_F64, 1, DIMS(16));
    for (int i = 0; i < 3; i++)
        x = remat_call1(block, ck_layer, 1, &x);
    remat_fn_output(block, x);
    remat_fn_free(ck_layer);
    remat_fn *ck_block = remat_fn_status(block) == REMAT_OK ? remat_checkpoint(block, NULL) : NULL;
    st = remat_fn_status(block) != REMAT_OK ? remat_fn_status(block) : REMAT_ERR_NOMEM;
    remat_fn_free(block);
    if (!ck_block)
        return st;
    remat_fn *f = remat_fn_new("deep_network_nested");
    if (!f) {
        remat_fn_free(ck_block);
        return REMAT_ERR_NOMEM;
    }
    x = remat_arg(f, "x", REMAT_F64, 1, DIMS(16));
    for (int i = 0; i < 3; i++)
        x = remat_call1(f, ck_block, 1, &x);
    remat_fn_output(f, remat_sum_all(f, x));
    remat_fn_free(ck_block);
    return finish(f, out);
}

/* The PFR A -> B -> C Euler step (seed 004): c' = c + dt (-k1 cA, k1 cA - k2 cB, k2 cB) */
static remat_status build_scan(remat_fn **out)
{
    *out = NULL;
    NEW_FN(step, "euler_step");
    remat_val c = remat_arg(step, "c", REMAT_F64, 1, DIMS(3));
    remat_val k = remat_arg(step, "k", REMAT_F64, 1, DIMS(2));
    remat_val r1 = remat_mul(step, remat_index(step, k, 0), remat_index(step, c, 0));
    remat_val r2 = remat_mul(step, remat_index(step, k, 1), remat_index(step, c, 1));
    remat_val parts[3] = {remat_reshape(step, remat_neg(step, r1), 1, DIMS(1)),
                          remat_reshape(step, remat_sub(step, r1, r2), 1, DIMS(1)),
                          remat_reshape(step, r2, 1, DIMS(1))};
    remat_val dc = remat_concatenate(step, 3, parts, 0);
    remat_fn_output(step, remat_add(step, c, remat_mul_scalar(step, dc, 0.01)));
    if (remat_fn_status(step) != REMAT_OK)
        return finish(step, out);
    remat_fn *f = remat_fn_new("neg_cb");
    if (!f) {
        remat_fn_free(step);
        return REMAT_ERR_NOMEM;
    }
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, DIMS(3));
    k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_scan_options opt = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 4},
                              .body_policy = remat_nothing_saveable};
    remat_val cN = REMAT_NONE;
    remat_scan(f, step, 40, 1, &c0, 0, NULL, 1, &k, &opt, &cN, NULL);
    remat_fn_output(f, remat_neg(f, remat_index(f, cN, 1)));
    remat_fn_free(step);
    return finish(f, out);
}

/* A while-loop (remat/loop.h) of unknown length under online:3: Euler steps
 * of y' = -k y with a time carry t, until t >= 1; the third iteration
 * rejected (a counter carry). */
static remat_status build_while(remat_fn **out)
{
    *out = NULL;
    NEW_FN(cond, "t_below_1");
    remat_arg(cond, "y", REMAT_F64, 1, DIMS(2));
    remat_val t = remat_arg(cond, "t", REMAT_F64, 0, NULL);
    remat_arg(cond, "i", REMAT_F64, 0, NULL);
    remat_arg(cond, "k", REMAT_F64, 1, DIMS(2));
    remat_fn_output(cond, remat_lt(cond, t, remat_scalar(cond, REMAT_F64, 1.0)));
    remat_fn *body = remat_fn_new("euler_rejecting");
    if (!body || remat_fn_status(cond) != REMAT_OK) {
        remat_fn_free(body);
        remat_fn_free(cond);
        return REMAT_ERR_NOMEM;
    }
    remat_val y = remat_arg(body, "y", REMAT_F64, 1, DIMS(2));
    t = remat_arg(body, "t", REMAT_F64, 0, NULL);
    remat_val i = remat_arg(body, "i", REMAT_F64, 0, NULL);
    remat_val k = remat_arg(body, "k", REMAT_F64, 1, DIMS(2));
    remat_val i1 = remat_add_scalar(body, i, 1.0);
    remat_val acc = remat_ne(body, i1, remat_scalar(body, REMAT_F64, 3.0));
    remat_fn_output(body, remat_add(body, y, remat_mul_scalar(body, remat_neg(body, remat_mul(body, k, y)), 0.1)));
    remat_fn_output(body, remat_add(body, t, remat_mul_scalar(body, acc, 0.1)));
    remat_fn_output(body, i1);
    remat_fn_output(body, acc);
    remat_fn *f = remat_fn_new("while_loss");
    if (!f || remat_fn_status(body) != REMAT_OK) {
        remat_fn_free(f);
        remat_fn_free(body);
        remat_fn_free(cond);
        return REMAT_ERR_NOMEM;
    }
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2));
    k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val init[3] = {y0, remat_scalar(f, REMAT_F64, 0), remat_scalar(f, REMAT_F64, 0)}, c[3];
    const remat_schedule_spec online = {.kind = REMAT_SCHED_ONLINE, .snapshots = 3};
    remat_while_options opt = {.max_steps = 100, .schedule = &online};
    if (remat_while(f, cond, body, 3, 1, init, 1, &k, &opt, c, NULL) == REMAT_OK)
        remat_fn_output(f, remat_sum_all(f, remat_square(f, c[0])));
    remat_fn_free(body);
    remat_fn_free(cond);
    return finish(f, out);
}

#endif
