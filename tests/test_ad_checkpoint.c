/*
 * test_ad_checkpoint.c — checkpoint regions and save policies.
 *
 * Policies change memory, never a bit of the gradient: every expectation is the
 * un-checkpointed gradient, bit for bit, or a count or size written here (what
 * is recomputed, what is saved, the memory plan against the measured peak).
 *
 * Bitwise assertions rest on contract 3 (docs/design-notes.md, "Bitwise
 * contracts"): a policy recomputes the same ops on the same operands.
 */
#include "test_ad_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

static remat_shape shape_of(int rank, const int64_t *dims) { return remat_shape_make(rank, dims); }

/* ==== 3. policies change memory, never a bit of the gradient ==== */

/* A user policy that looks at shapes only: save values of >= 12 elements.
 * It checks every remat_op_info it is shown is well formed. */
typedef struct {
    int calls, bad, freed;
} shape_policy_ctx;

static bool shape_policy(const remat_op_info *op, void *vctx)
{
    shape_policy_ctx *c = vctx;
    c->calls++;
    int ok = (unsigned)op->op < REMAT_OP_COUNT && (unsigned)op->dtype < REMAT_DTYPE_COUNT && op->shape &&
             op->shape->rank >= 0 && op->shape->rank <= REMAT_MAX_RANK && op->n_inputs >= 0 &&
             (op->n_inputs == 0 || (op->in_shapes && op->in_dtypes)) &&
             (op->op == REMAT_OP_DOT_GENERAL) == (op->dot != NULL) && (op->op == REMAT_OP_NAME) == (op->name != NULL);
    for (int i = 0; ok && i < op->n_inputs; i++)
        ok = op->in_shapes[i].rank >= 0 && op->in_shapes[i].rank <= REMAT_MAX_RANK &&
             (unsigned)op->in_dtypes[i] < REMAT_DTYPE_COUNT;
    c->bad += !ok;
    return ok && remat_shape_numel(op->shape) >= 12;
}

static void shape_policy_free(void *vctx) { ((shape_policy_ctx *)vctx)->freed++; }

enum { NPOL = 10 };

typedef struct {
    const remat_policy *p[NPOL];
    remat_policy *owned[5];
    shape_policy_ctx ctx;
} policy_set;

static void policy_set_init(policy_set *s)
{
    const char *h1[1] = {"h1"}, *h2[1] = {"h2"};
    memset(s, 0, sizeof *s);
    s->owned[0] = remat_policy_save_only_these_names(1, h1);
    s->owned[1] = remat_policy_save_any_names_but_these(1, h2);
    s->owned[2] = remat_policy_save_from_both(s->owned[0], remat_dots_saveable);
    s->owned[3] = remat_policy_new("numel>=12", shape_policy, &s->ctx, shape_policy_free);
    s->owned[4] = remat_policy_save_anything_except_these_names(1, h1);
    const remat_policy *p[NPOL] = {NULL, /* default: nothing_saveable */
                                   remat_nothing_saveable, remat_everything_saveable, remat_dots_saveable,
                                   remat_dots_with_no_batch_dims_saveable, s->owned[0], s->owned[1], s->owned[2],
                                   s->owned[3], s->owned[4]};
    for (int i = 0; i < NPOL; i++)
        s->p[i] = p[i];
    for (int i = 0; i < 5; i++)
        assert_non_null(s->owned[i]);
    assert_string_equal(remat_policy_label(s->owned[3]), "numel>=12");
}

/* Drops the set's references; the custom ctx is freed once nothing uses it. */
static void policy_set_free(policy_set *s)
{
    for (int i = 0; i < 5; i++)
        remat_policy_free(s->owned[i]);
    assert_int_equal(s->ctx.freed, 1);
    assert_int_equal(s->ctx.bad, 0);
}

/* MLP-ish: h1 = name(relu(x w1 + b1)), h2 = name(tanh(h1 w2 + b2)), o = h2 w3,
 * loss = sum(o^2) + 0.5 sum(sin h1).  x (4,5) w1 (5,6) b1 (6) w2 (6,6) b2 (6) w3 (6,3) */
static const int64_t mlp_dims[6][2] = {{4, 5}, {5, 6}, {6}, {6, 6}, {6}, {6, 3}};
static const int mlp_rank[6] = {2, 2, 1, 2, 1, 2};
static const char *const mlp_names[6] = {"x", "w1", "b1", "w2", "b2", "w3"};

static remat_val mlp_layer_body(remat_fn *f, remat_val h, remat_val w, remat_val b, int relu, const char *name)
{
    remat_val z = remat_add(f, remat_matmul(f, h, w), b);
    return remat_name(f, relu ? remat_relu(f, z) : remat_tanh(f, z), name);
}

static remat_fn *mlp_layer(remat_dtype dt, int k)
{
    remat_fn *f = remat_fn_new(k == 1 ? "layer1" : "layer2");
    remat_val h = remat_arg(f, "h", dt, 2, ((int64_t[]){4, k == 1 ? 5 : 6}));
    remat_val w = remat_arg(f, "w", dt, 2, mlp_dims[2 * k - 1]);
    remat_val b = remat_arg(f, "b", dt, 1, mlp_dims[2 * k]);
    remat_fn_output(f, mlp_layer_body(f, h, w, b, k == 1, k == 1 ? "h1" : "h2"));
    return f;
}

/* layers == NULL: everything inline; else the two layers are called */
static remat_fn *mlp_fn(remat_dtype dt, remat_fn *const *layers)
{
    remat_fn *f = remat_fn_new("mlp");
    remat_val a[6];
    for (int i = 0; i < 6; i++)
        a[i] = remat_arg(f, mlp_names[i], dt, mlp_rank[i], mlp_dims[i]);
    remat_val h1 = layers ? remat_call1(f, layers[0], 3, ((remat_val[]){a[0], a[1], a[2]}))
                          : mlp_layer_body(f, a[0], a[1], a[2], 1, "h1");
    remat_val h2 = layers ? remat_call1(f, layers[1], 3, ((remat_val[]){h1, a[3], a[4]}))
                          : mlp_layer_body(f, h1, a[3], a[4], 0, "h2");
    remat_val o = remat_matmul(f, h2, a[5]);
    remat_val loss = remat_add(f, remat_sum_all(f, remat_square(f, o)),
                               remat_mul_scalar(f, remat_sum_all(f, remat_sin(f, h1)), 0.5));
    remat_fn_output(f, loss);
    assert_fn_ok(f);
    return f;
}

typedef struct {
    remat_dtype dt;
    int n;
    remat_tensor t[8];
} inputs_t;

static void inputs_make(inputs_t *in, remat_dtype dt, int n, const int *rank, const int64_t (*dims)[2])
{
    in->dt = dt;
    in->n = n;
    for (int i = 0; i < n; i++) {
        remat_shape s = shape_of(rank[i], dims[i]);
        int64_t m = remat_shape_numel(&s);
        void *data = xcalloc((size_t)m, remat_dtype_size(dt));
        for (int64_t j = 0; j < m; j++) {
            double v = urand(-1, 1);
            if (dt == REMAT_F64)
                ((double *)data)[j] = v;
            else
                ((float *)data)[j] = (float)v;
        }
        in->t[i] = (remat_tensor){.dtype = dt, .shape = s, .data = data};
    }
}

static void inputs_free(inputs_t *in)
{
    for (int i = 0; i < in->n; i++)
        free(in->t[i].data);
}

static void expect_same_bits(const char *what, const outs_t *a, const outs_t *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        assert_int_equal(a->t[i].dtype, b->t[i].dtype);
        assert_true(remat_shape_equal(&a->t[i].shape, &b->t[i].shape));
        if (memcmp(a->t[i].data, b->t[i].data, tbytes(a->t[i].dtype, &a->t[i].shape)))
            fail_msg("%s: gradient output %d differs in its bits from the un-checkpointed one", what, i);
    }
}

static void test_ad_policies_leave_mlp_gradients_bitwise_identical(void **state)
{
    policy_set ps;
    policy_set_init(&ps);
    for (int dti = 0; dti < 2; dti++) {
        remat_dtype dt = dti ? REMAT_F64 : REMAT_F32;
        inputs_t in;
        inputs_make(&in, dt, 6, mlp_rank, mlp_dims);
        remat_fn *plain = mlp_fn(dt, NULL);
        remat_fn *gp = grad_ok(plain, 0, NULL);
        outs_t ref;
        run_fn(gp, 6, in.t, &ref, NULL, NULL);
        /* the inline-called layers give the same graph as writing them out */
        remat_fn *layers[2] = {mlp_layer(dt, 1), mlp_layer(dt, 2)};
        remat_fn *called = mlp_fn(dt, layers);
        remat_fn *gc = grad_ok(called, 0, NULL);
        outs_t o;
        run_fn(gc, 6, in.t, &o, NULL, NULL);
        expect_same_bits("inlined layers", &ref, &o);
        outs_free(&o);
        remat_fn_free(gc), remat_fn_free(called);
        for (int k = 0; k < NPOL; k++) {
            const char *label = remat_policy_label(ps.p[k]);
            char what[160];
            /* (i) the whole loss in one region */
            remat_fn *whole = remat_checkpoint(plain, ps.p[k]);
            remat_fn *g = grad_ok(whole, 0, NULL);
            run_fn(g, 6, in.t, &o, NULL, NULL);
            snprintf(what, sizeof what, "%s whole loss, %s", remat_dtype_name(dt), label);
            expect_same_bits(what, &ref, &o);
            outs_free(&o);
            remat_fn_free(g), remat_fn_free(whole);
            /* (ii) one region per layer */
            remat_fn *ck[2] = {remat_checkpoint(layers[0], ps.p[k]), remat_checkpoint(layers[1], ps.p[k])};
            remat_fn *per = mlp_fn(dt, ck);
            g = grad_ok(per, 0, NULL);
            run_fn(g, 6, in.t, &o, NULL, NULL);
            snprintf(what, sizeof what, "%s per layer, %s", remat_dtype_name(dt), label);
            expect_same_bits(what, &ref, &o);
            outs_free(&o);
            /* (iii) value_and_grad: the value is the plain loss too */
            remat_fn *vg = NULL, *vgp = NULL;
            assert_int_equal(remat_value_and_grad(per, 0, NULL, &vg), REMAT_OK);
            assert_int_equal(remat_value_and_grad(plain, 0, NULL, &vgp), REMAT_OK);
            outs_t a, b;
            run_fn(vg, 6, in.t, &a, NULL, NULL);
            run_fn(vgp, 6, in.t, &b, NULL, NULL);
            expect_same_bits(what, &b, &a);
            outs_free(&a), outs_free(&b);
            remat_fn_free(vg), remat_fn_free(vgp);
            remat_fn_free(g), remat_fn_free(per), remat_fn_free(ck[0]), remat_fn_free(ck[1]);
        }
        remat_fn_free(layers[0]), remat_fn_free(layers[1]);
        outs_free(&ref);
        remat_fn_free(gp), remat_fn_free(plain);
        inputs_free(&in);
    }
    assert_true(ps.ctx.calls > 0); /* the user policy was consulted */
    policy_set_free(&ps);
}

/* A deep-network layer with the three primitives of its kind: gelu (erf),
 * a log-sum-exp shifted by its stop_gradient'ed row max, and a column max
 * the loss reads directly:
 *   h = gelu(x @ w), m = reduce_max(h, 1),
 *   loss = sum(log(sum(exp(h - sg(m)), 1)) + sg(m)) + sum(reduce_max(h, 0)).
 * x (4,5) has tied rows, so reduce_max splits cotangents. */
static remat_fn *nn_layer(remat_dtype dt)
{
    int64_t dx[2] = {4, 5}, dw[2] = {5, 6}, dh[2] = {4, 6};
    remat_fn *f = remat_fn_new("nn_layer");
    remat_val x = remat_arg(f, "x", dt, 2, dx), w = remat_arg(f, "w", dt, 2, dw);
    remat_val h = remat_matmul(f, x, w);
    remat_val cdf = remat_add_scalar(f, remat_erf(f, remat_mul_scalar(f, h, M_SQRT1_2)), 1.0);
    h = remat_mul(f, remat_mul_scalar(f, h, 0.5), cdf);
    remat_val m = remat_stop_gradient(f, remat_reduce_max(f, h, 1, ((int[]){1})));
    remat_val z = remat_sub(f, h, remat_broadcast_in_dim(f, m, 2, dh, ((int[]){0})));
    remat_val lse = remat_add(f, remat_log(f, remat_sum(f, remat_exp(f, z), 1, ((int[]){1}))), m);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, lse), remat_sum_all(f, remat_reduce_max(f, h, 1, ((int[]){0})))));
    assert_fn_ok(f);
    return f;
}

static void test_ad_policies_leave_nn_primitive_gradients_bitwise_identical(void **state)
{
    static const int rank[2] = {2, 2};
    static const int64_t dims[2][2] = {{4, 5}, {5, 6}};
    policy_set ps;
    policy_set_init(&ps);
    for (int dti = 0; dti < 2; dti++) {
        remat_dtype dt = dti ? REMAT_F64 : REMAT_F32;
        inputs_t in;
        inputs_make(&in, dt, 2, rank, dims);
        memcpy((char *)in.t[0].data + 5 * remat_dtype_size(dt), in.t[0].data, 5 * remat_dtype_size(dt));
        remat_fn *plain = nn_layer(dt);
        remat_fn *gp = grad_ok(plain, 0, NULL);
        outs_t ref, o;
        run_fn(gp, 2, in.t, &ref, NULL, NULL);
        for (int k = 0; k < NPOL; k++) {
            remat_fn *ck = remat_checkpoint(plain, ps.p[k]);
            remat_fn *g = grad_ok(ck, 0, NULL);
            run_fn(g, 2, in.t, &o, NULL, NULL);
            char what[160];
            snprintf(what, sizeof what, "%s nn layer, %s", remat_dtype_name(dt), remat_policy_label(ps.p[k]));
            expect_same_bits(what, &ref, &o);
            outs_free(&o);
            remat_fn_free(g), remat_fn_free(ck);
        }
        outs_free(&ref);
        remat_fn_free(gp), remat_fn_free(plain);
        inputs_free(&in);
    }
    policy_set_free(&ps);
}

/* Three levels of regions: top(x, w) = sum(L1(x, w)^2) with
 *   L1(x, w) = exp(-L2(L2(x, w), w)^2) + x,   L2(x, w) = tanh(L3(L3(x, w), w)) + x,
 *   L3(x, w) = sin(name(x @ w, "d3")) * x.   x (4,4), w (4,4). */
static remat_fn *nest_level(int level, remat_dtype dt, const remat_fn *inner)
{
    int64_t d[2] = {4, 4};
    remat_fn *f = remat_fn_new(level == 1 ? "L1" : level == 2 ? "L2" : "L3");
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d), y;
    if (level == 3) {
        y = remat_mul(f, remat_sin(f, remat_name(f, remat_matmul(f, x, w), "d3")), x);
    } else {
        remat_val a = remat_call1(f, inner, 2, ((remat_val[]){x, w}));
        a = remat_call1(f, inner, 2, ((remat_val[]){a, w}));
        y = level == 2 ? remat_tanh(f, a) : remat_exp(f, remat_neg(f, remat_square(f, a)));
        y = remat_add(f, y, x);
    }
    remat_fn_output(f, y);
    assert_fn_ok(f);
    return f;
}

/* pol[i] NULL with plain[i]: level i+1 is not a region */
static remat_fn *nest_top(remat_dtype dt, const remat_policy *const *pol, const int *plain)
{
    remat_fn *l3 = nest_level(3, dt, NULL);
    remat_fn *c3 = plain[2] ? remat_fn_ref(l3) : remat_checkpoint(l3, pol[2]);
    remat_fn *l2 = nest_level(2, dt, c3);
    remat_fn *c2 = plain[1] ? remat_fn_ref(l2) : remat_checkpoint(l2, pol[1]);
    remat_fn *l1 = nest_level(1, dt, c2);
    remat_fn *c1 = plain[0] ? remat_fn_ref(l1) : remat_checkpoint(l1, pol[0]);
    remat_fn *f = remat_fn_new("top");
    int64_t d[2] = {4, 4};
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d);
    remat_fn_output(f, remat_sum_all(f, remat_square(f, remat_call1(f, c1, 2, ((remat_val[]){x, w})))));
    assert_fn_ok(f);
    remat_fn *fs[6] = {l3, c3, l2, c2, l1, c1};
    for (int i = 0; i < 6; i++)
        remat_fn_free(fs[i]); /* f keeps what it calls alive */
    return f;
}

static void test_ad_policies_leave_nested_region_gradients_bitwise_identical(void **state)
{
    policy_set ps;
    policy_set_init(&ps);
    const int none[3] = {1, 1, 1}, all[3] = {0, 0, 0};
    const remat_policy *nulls[3] = {NULL, NULL, NULL};
    for (int dti = 0; dti < 2; dti++) {
        remat_dtype dt = dti ? REMAT_F64 : REMAT_F32;
        const int rk[2] = {2, 2};
        const int64_t dd[2][2] = {{4, 4}, {4, 4}};
        inputs_t in;
        inputs_make(&in, dt, 2, rk, dd);
        remat_fn *plain = nest_top(dt, nulls, none);
        remat_fn *gp = grad_ok(plain, 0, NULL);
        outs_t ref, o;
        run_fn(gp, 2, in.t, &ref, NULL, NULL);
        /* the same policy at every level, then mixes of policies and depths */
        for (int k = 0; k < NPOL + 4; k++) {
            const remat_policy *pol[3];
            const int *pl = all;
            static const int only_outer[3] = {0, 1, 1}, only_inner[3] = {1, 1, 0};
            if (k < NPOL) {
                pol[0] = pol[1] = pol[2] = ps.p[k];
            } else if (k == NPOL) {
                pol[0] = remat_nothing_saveable, pol[1] = remat_dots_saveable, pol[2] = remat_everything_saveable;
            } else if (k == NPOL + 1) {
                pol[0] = remat_everything_saveable, pol[1] = remat_nothing_saveable, pol[2] = ps.p[5];
            } else {
                pol[0] = pol[1] = pol[2] = remat_nothing_saveable;
                pl = k == NPOL + 2 ? only_outer : only_inner;
            }
            remat_fn *f = nest_top(dt, pol, pl);
            remat_fn *g = grad_ok(f, 0, NULL);
            run_fn(g, 2, in.t, &o, NULL, NULL);
            char what[160];
            snprintf(what, sizeof what, "%s nested, variant %d", remat_dtype_name(dt), k);
            expect_same_bits(what, &ref, &o);
            outs_free(&o);
            remat_fn_free(g), remat_fn_free(f);
        }
        outs_free(&ref);
        remat_fn_free(gp), remat_fn_free(plain);
        inputs_free(&in);
    }
    assert_true(ps.ctx.calls > 0);
    policy_set_free(&ps);
}

/* ==== 4. recomputation happens, and the memory plan is what the run measures ==== */

static void test_ad_nothing_saveable_recomputes_and_saves_less(void **state)
{
    inputs_t in;
    inputs_make(&in, REMAT_F64, 6, mlp_rank, mlp_dims);
    size_t arg_bytes = 0;
    for (int i = 0; i < 6; i++)
        arg_bytes += remat_tensor_bytes(&in.t[i]);
    remat_fn *plain = mlp_fn(REMAT_F64, NULL);
    const remat_policy *pols[3] = {NULL, remat_nothing_saveable, remat_everything_saveable};
    remat_memory_plan plan[3];
    remat_stats st[3];
    size_t report_bytes[3];
    for (int k = 0; k < 3; k++) {
        remat_fn *f = k ? remat_checkpoint(plain, pols[k]) : remat_fn_ref(plain);
        remat_fn *g = grad_ok(f, 0, NULL);
        remat_program *p = compile_ok(g);
        remat_program_plan(p, &plan[k]);
        outs_t o;
        run_prog(p, 6, in.t, &o, &st[k]);
        outs_free(&o);
        sigset set;
        sigset_from_remat(&set, f, &report_bytes[k]);
        sigset_free(&set);
        assert_int_equal(plan[k].recompute_instructions, st[k].recomputed_ops);
        assert_int_equal(plan[k].arena_bytes, st[k].peak_arena_bytes);
        assert_int_equal(plan[k].residual_bytes, st[k].residual_bytes);
        assert_int_equal(plan[k].residual_bytes, report_bytes[k]); /* the program and the report agree */
        assert_int_equal(plan[k].instructions, st[k].ops_executed);
        remat_program_free(p);
        remat_fn_free(g), remat_fn_free(f);
    }
    assert_int_equal(st[0].recomputed_ops, 0);
    assert_true(st[1].recomputed_ops > 0);
    assert_int_equal(st[2].recomputed_ops, 0);
    /* nothing_saveable keeps the arguments only; no checkpoint keeps more */
    assert_int_equal(plan[1].residual_bytes, arg_bytes);
    assert_true(plan[1].residual_bytes < plan[0].residual_bytes);
    /* everything_saveable saves what no checkpoint saves, and runs as many ops */
    assert_int_equal(plan[2].residual_bytes, plan[0].residual_bytes);
    assert_int_equal(st[2].ops_executed, st[0].ops_executed);
    remat_fn_free(plain);
    inputs_free(&in);
}

/* Where nested regions recompute (vjp.c): region R's policy decides what the
 * computation enclosing R keeps of R's values, nested regions' values
 * included (so at the top level only the outermost policy counts, as in JAX);
 * a refused value is still reused when an enclosing context already holds it.
 * With
 *   L3(x) = sin(a), a = sin(x);  L2(x) = sin(y), y = L3(x);  L1 = L2;  top = sum(L1(x))
 * the backward reads y (sin(y)'s rule, in L2), a (sin(a)'s rule, in L3) and x.
 * Counting by hand, e.g. (nothing, everything, nothing): L2 keeps y, but L1
 * does not, so L1's context recomputes a and y; L3 refuses a, but L2 keeps
 * it and L1's context holds it: 2. */
static void test_ad_nested_regions_recompute_where_each_region_policy_says(void **state)
{
    const remat_policy *N = remat_nothing_saveable, *E = remat_everything_saveable;
    const struct {
        const remat_policy *p1, *p2, *p3;
        int64_t recomputed;
    } cases[] = {
        {N, E, N, 2}, /* L1 recomputes a, y; L3 reuses L1's a */
        {E, E, E, 0},
        {N, N, N, 2}, /* L2 recomputes a, y; L3 reuses L2's a */
        {E, N, E, 2}, /* L2 recomputes a, y; L3 keeps a, read from L2's context */
        {N, E, E, 2}, /* L1 recomputes a, y; L2 and L3 read them */
        {E, E, N, 1}, /* the forward keeps y (L1 permits); nobody holds a: L3 recomputes it */
    };
    int64_t n = 5;
    double xv[5] = {-1.5, -0.3, 0.2, 0.9, 2.0};
    remat_tensor in = remat_tensor_f64(xv, 1, &n);
    outs_t ref = {0};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        remat_fn *l3 = remat_fn_new("L3");
        remat_val x = remat_arg(l3, "x", REMAT_F64, 1, &n);
        remat_fn_output(l3, remat_sin(l3, remat_sin(l3, x)));
        remat_fn *c3 = remat_checkpoint(l3, cases[k].p3);
        remat_fn *l2 = remat_fn_new("L2");
        x = remat_arg(l2, "x", REMAT_F64, 1, &n);
        remat_fn_output(l2, remat_sin(l2, remat_call1(l2, c3, 1, &x)));
        remat_fn *c2 = remat_checkpoint(l2, cases[k].p2);
        remat_fn *l1 = remat_fn_new("L1");
        x = remat_arg(l1, "x", REMAT_F64, 1, &n);
        remat_fn_output(l1, remat_call1(l1, c2, 1, &x));
        remat_fn *c1 = remat_checkpoint(l1, cases[k].p1);
        remat_fn *top = remat_fn_new("top");
        x = remat_arg(top, "x", REMAT_F64, 1, &n);
        remat_fn_output(top, remat_sum_all(top, remat_call1(top, c1, 1, &x)));
        assert_fn_ok(top);
        remat_fn *g = grad_ok(top, 0, NULL);
        remat_program *p = compile_ok(g);
        remat_memory_plan plan;
        remat_program_plan(p, &plan);
        outs_t o;
        remat_stats st;
        run_prog(p, 1, &in, &o, &st);
        if (st.recomputed_ops != cases[k].recomputed)
            fail_msg("case %zu (%s, %s, %s): %lld ops recomputed, want %lld", k, remat_policy_label(cases[k].p1),
                     remat_policy_label(cases[k].p2), remat_policy_label(cases[k].p3), (long long)st.recomputed_ops,
                     (long long)cases[k].recomputed);
        assert_int_equal(plan.recompute_instructions, cases[k].recomputed);
        for (int i = 0; i < 5; i++) {
            double want = cos(sin(sin(xv[i]))) * cos(sin(xv[i])) * cos(xv[i]);
            assert_true(fabs(((double *)o.t[0].data)[i] - want) <= 1e-15);
        }
        if (k == 0)
            ref = o;
        else {
            expect_same_bits("nested recompute", &ref, &o);
            outs_free(&o);
        }
        remat_program_free(p);
        remat_fn *fs[8] = {g, top, c1, l1, c2, l2, c3, l3};
        for (int i = 0; i < 8; i++)
            remat_fn_free(fs[i]);
    }
    outs_free(&ref);
}

/* Over the functions of this file: predicted arena == measured high-water mark. */
static void test_ad_predicted_arena_equals_measured_peak(void **state)
{
    remat_fn *fns[8];
    int n = 0;
    remat_fn *blk = block_fn(REMAT_F64);
    remat_fn *ck = remat_checkpoint(blk, remat_dots_with_no_batch_dims_saveable);
    fns[n++] = block_net(blk, REMAT_F64);
    fns[n++] = block_net(ck, REMAT_F64);
    fns[n++] = mlp_fn(REMAT_F64, NULL);
    fns[n++] = remat_checkpoint(fns[2], remat_dots_saveable);
    const remat_policy *pn[3] = {remat_nothing_saveable, remat_dots_saveable, remat_everything_saveable};
    const int all[3] = {0, 0, 0};
    fns[n++] = nest_top(REMAT_F64, pn, all);
    fns[n++] = remat_checkpoint(fns[4], remat_nothing_saveable);
    int cases = 0;
    for (int i = 0; i < n; i++) {
        remat_fn *g = grad_ok(fns[i], 0, NULL), *vjp = NULL;
        assert_int_equal(remat_vjp(fns[i], 0, NULL, &vjp), REMAT_OK);
        const remat_fn *progs[3] = {fns[i], g, vjp};
        for (int k = 0; k < 3; k++) {
            remat_program *p = compile_ok(progs[k]);
            int nin = remat_program_num_inputs(p);
            remat_tensor in[8];
            for (int j = 0; j < nin; j++) {
                in[j] = remat_program_input_desc(p, j);
                int64_t m = remat_shape_numel(&in[j].shape);
                in[j].data = xcalloc((size_t)m, sizeof(double));
                for (int64_t e = 0; e < m; e++)
                    ((double *)in[j].data)[e] = urand(-1, 1);
            }
            remat_memory_plan plan;
            remat_program_plan(p, &plan);
            remat_stats st;
            outs_t o;
            run_prog(p, nin, in, &o, &st);
            if (plan.arena_bytes != st.peak_arena_bytes)
                fail_msg("%s: predicted arena %zu bytes, measured %zu", remat_fn_name(progs[k]), plan.arena_bytes,
                         st.peak_arena_bytes);
            assert_true(plan.arena_bytes > 0);
            outs_free(&o);
            for (int j = 0; j < nin; j++)
                free(in[j].data);
            remat_program_free(p);
            cases++;
        }
        remat_fn_free(vjp), remat_fn_free(g);
    }
    assert_int_equal(cases, 3 * n);
    for (int i = 0; i < n; i++)
        remat_fn_free(fns[i]);
    remat_fn_free(ck), remat_fn_free(blk);
}

/* ---- main ---- */

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_policies_leave_mlp_gradients_bitwise_identical),
        cmocka_unit_test(test_ad_policies_leave_nested_region_gradients_bitwise_identical),
        cmocka_unit_test(test_ad_policies_leave_nn_primitive_gradients_bitwise_identical),
        cmocka_unit_test(test_ad_nothing_saveable_recomputes_and_saves_less),
        cmocka_unit_test(test_ad_nested_regions_recompute_where_each_region_policy_says),
        cmocka_unit_test(test_ad_predicted_arena_equals_measured_peak),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
