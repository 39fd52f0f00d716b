/*
 * test_ad_residuals.c — what reverse mode saves for the backward pass, and the
 * seed gradients.
 *
 * Residual sets are held to jax.ad_checkpoint.print_saved_residuals and the
 * gradients to JAX's, both from the JAX 0.10.2 goldens in tests/goldens/ (read
 * at run time through $REMAT_GOLDENS, see tools/goldens/gen_goldens.py,
 * test_golden.h).
 */
#include "test_ad_util.h"
#include "test_golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ==== 2. residual sets against jax.ad_checkpoint.print_saved_residuals ====
 * A residual is compared as "kind dtype[shape] detail", detail being the
 * argument name, the producing primitive or the checkpoint_name; source
 * locations differ by construction (JAX's point into gen_goldens.py). */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void sigset_from_jax(sigset *set, const char *case_name)
{
    const cJSON *c = golden_case("residuals.json", case_name), *e;
    set->n = 0;
    cJSON_ArrayForEach(e, jget(c, "parsed"))
    {
        int64_t dims[REMAT_MAX_RANK];
        int r = jints(jget(e, "shape"), dims, REMAT_MAX_RANK);
        char type[128];
        int at = snprintf(type, sizeof type, "%s[", jget(e, "dtype")->valuestring);
        for (int i = 0; i < r; i++)
            at += snprintf(type + at, sizeof type - (size_t)at, "%s%lld", i ? "," : "", (long long)dims[i]);
        snprintf(type + at, sizeof type - (size_t)at, "]");
        const char *kind = jget(e, "kind")->valuestring;
        const char *detail = !strcmp(kind, "argument") ? jget(e, "arg")->valuestring
                             : !strcmp(kind, "output") ? jget(e, "primitive")->valuestring
                             : !strcmp(kind, "named")  ? jget(e, "name")->valuestring
                                                       : "?";
        sigset_add(set, kind, type, detail);
    }
    assert_int_equal(set->n, (int)jget(c, "count")->valuedouble);
}

static void sigset_expect(const char *what, sigset *got, sigset *want)
{
    qsort(got->s, (size_t)got->n, sizeof got->s[0], cmp_str);
    qsort(want->s, (size_t)want->n, sizeof want->s[0], cmp_str);
    int same = got->n == want->n;
    for (int i = 0; same && i < got->n; i++)
        same = !strcmp(got->s[i], want->s[i]);
    if (!same) {
        fprintf(stderr, "%s: residuals differ\n  remat (%d):\n", what, got->n);
        for (int i = 0; i < got->n; i++)
            fprintf(stderr, "    %s\n", got->s[i]);
        fprintf(stderr, "  expected (%d):\n", want->n);
        for (int i = 0; i < want->n; i++)
            fprintf(stderr, "    %s\n", want->s[i]);
        fail_msg("%s: residual multiset differs", what);
    }
}

/* f's residuals == JAX's for case_name, exactly (so counts by kind and primitives too) */
static void expect_jax_residuals(const char *case_name, const remat_fn *f)
{
    sigset got, want;
    sigset_from_remat(&got, f, NULL);
    sigset_from_jax(&want, case_name);
    /* counts by kind, as the golden states them */
    const cJSON *kinds = jget(golden_case("residuals.json", case_name), "count_by_kind"), *k;
    int total = 0;
    cJSON_ArrayForEach(k, kinds)
    {
        int n = 0;
        for (int i = 0; i < got.n; i++)
            n += !strncmp(got.s[i], k->string, strlen(k->string)) && got.s[i][strlen(k->string)] == ' ';
        if (n != (int)k->valuedouble)
            fail_msg("%s: %d residuals of kind %s, JAX has %d", case_name, n, k->string, (int)k->valuedouble);
        total += n;
    }
    assert_int_equal(total, got.n);
    sigset_expect(case_name, &got, &want);
    sigset_free(&got);
    sigset_free(&want);
}

/* f's residuals == an explicit list (where remat knowingly differs from JAX) */
static void expect_residuals(const char *what, const remat_fn *f, int n, const char *const *expected)
{
    sigset got, want = {0};
    sigset_from_remat(&got, f, NULL);
    for (int i = 0; i < n; i++)
        want.s[want.n++] = strdup(expected[i]);
    sigset_expect(what, &got, &want);
    sigset_free(&got);
    sigset_free(&want);
}

static void test_ad_residuals_block_net_match_jax(void **state)
{
    remat_fn *blk = block_fn(REMAT_F32);
    remat_fn *plain = block_net(blk, REMAT_F32);
    /* Known difference. JAX linearizes sin in the forward and saves cos(x)
     * (6 "output of cos") plus the sin values the next dot reads (2); remat's
     * sin rule reads its operand and takes cos in the backward, so it saves
     * each block's dot_general output (read by the inner sin) and each inner
     * sin (read by the outer sin), plus the outer sins of blocks 1-2 (read by
     * the next dot). Same count by kind (2 arguments, 8 outputs). */
    static const char *const plain_expected[] = {
        "argument f32[4,4] x",        "argument f32[4,4] w",
        "output f32[4,4] dot_general", "output f32[4,4] dot_general", "output f32[4,4] dot_general",
        "output f32[4,4] sin",         "output f32[4,4] sin",         "output f32[4,4] sin",
        "output f32[4,4] sin",         "output f32[4,4] sin",
    };
    expect_residuals("block_net_plain", plain, 10, plain_expected);
    sigset jax;
    sigset_from_jax(&jax, "block_net_plain");
    assert_int_equal(jax.n, 10);
    sigset_free(&jax);

    remat_fn *ck = remat_checkpoint(blk, remat_dots_with_no_batch_dims_saveable);
    remat_fn *net = block_net(ck, REMAT_F32);
    expect_jax_residuals("block_net_remat", net);
    remat_fn_free(net);
    remat_fn_free(ck);
    remat_fn_free(plain);
    remat_fn_free(blk);
}

/* seed 000: loss(w1, w2, x) = sum((checkpoint_name(relu(x @ w1), "hidden") @ w2) ** 2) */
static remat_fn *seed_loss(void)
{
    remat_fn *f = remat_fn_new("loss");
    remat_val w1 = remat_arg(f, "w1", REMAT_F32, 2, ((int64_t[]){3, 3}));
    remat_val w2 = remat_arg(f, "w2", REMAT_F32, 2, ((int64_t[]){3, 3}));
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){2, 3}));
    remat_val hidden = remat_name(f, remat_relu(f, remat_matmul(f, x, w1)), "hidden");
    remat_val output = remat_matmul(f, hidden, w2);
    remat_fn_output(f, remat_sum_all(f, remat_integer_pow(f, output, 2)));
    assert_fn_ok(f);
    return f;
}

static void test_ad_residuals_policies_match_jax(void **state)
{
    const char *hidden[1] = {"hidden"};
    remat_policy *only = remat_policy_save_only_these_names(1, hidden);
    remat_policy *but = remat_policy_save_any_names_but_these(1, hidden);
    remat_policy *both = remat_policy_save_from_both(only, remat_dots_saveable);
    assert_non_null(only);
    assert_non_null(but);
    assert_non_null(both);
    const struct {
        const char *case_name;
        const remat_policy *p; /* NULL with plain: no checkpoint */
        int plain;
    } cases[] = {
        {"policy_none", NULL, 1},
        {"policy_nothing_saveable", remat_nothing_saveable, 0},
        {"policy_everything_saveable", remat_everything_saveable, 0},
        {"policy_dots_saveable", remat_dots_saveable, 0},
        {"policy_dots_with_no_batch_dims_saveable", remat_dots_with_no_batch_dims_saveable, 0},
        {"policy_save_only_these_names", only, 0},
        {"policy_save_any_names_but_these", but, 0},
        {"policy_save_from_both", both, 0},
    };
    /* Known difference, policy_none and policy_everything_saveable: JAX's
     * linearization saves values derived in the forward — relu's mask
     * ("bool[2,3] output of gt") and its broadcast zeros ("output of
     * broadcast_in_dim"), and 2*output for **2 ("output of mul") — where
     * remat's rules read existing values instead: relu reads its own output
     * (relu(x) > 0 iff x > 0) and **2 reads hidden @ w2 (a dot_general). */
    static const char *const all_saved[] = {
        "argument f32[3,3] w1", "argument f32[3,3] w2",  "argument f32[2,3] x",
        "output f32[2,3] relu", "named f32[2,3] hidden", "output f32[2,3] dot_general",
    };
    remat_fn *loss = seed_loss();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        remat_fn *f = cases[i].plain ? remat_fn_ref(loss) : remat_checkpoint(loss, cases[i].p);
        assert_non_null(f);
        if (!strcmp(cases[i].case_name, "policy_none") || !strcmp(cases[i].case_name, "policy_everything_saveable")) {
            expect_residuals(cases[i].case_name, f, 6, all_saved);
            /* JAX saves 3 arguments, 3 outputs, 1 named; remat 3, 2, 1 */
            const cJSON *k = jget(golden_case("residuals.json", cases[i].case_name), "count_by_kind");
            assert_int_equal((int)jget(k, "argument")->valuedouble, 3);
            assert_int_equal((int)jget(k, "output")->valuedouble, 3);
            assert_int_equal((int)jget(k, "named")->valuedouble, 1);
        } else {
            expect_jax_residuals(cases[i].case_name, f);
        }
        remat_fn_free(f);
    }
    remat_fn_free(loss);
    remat_policy_free(both);
    remat_policy_free(but);
    remat_policy_free(only);
}

/* JAX's aliases are the same policies: checkpoint_dots's residuals are
 * JAX's for dots_saveable, and so on; unknown names are refused by name. */
static void test_ad_residuals_policy_aliases_match_jax(void **state)
{
    const struct {
        const char *name, *case_name;
        const remat_policy *same;
    } cases[] = {
        {"checkpoint_dots", "policy_dots_saveable", remat_dots_saveable},
        {"checkpoint_dots_with_no_batch_dims", "policy_dots_with_no_batch_dims_saveable",
         remat_dots_with_no_batch_dims_saveable},
        {"dots_saveable", "policy_dots_saveable", remat_dots_saveable},
        {"nothing_saveable", "policy_nothing_saveable", remat_nothing_saveable},
    };
    remat_fn *loss = seed_loss();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const remat_policy *p = remat_policy_named(cases[i].name);
        assert_ptr_equal(p, cases[i].same);
        remat_fn *f = remat_checkpoint(loss, p);
        expect_jax_residuals(cases[i].case_name, f);
        remat_fn_free(f);
    }
    assert_null(remat_policy_named("checkpoint_dot"));
    assert_non_null(strstr(remat_last_error(), "unknown policy 'checkpoint_dot'"));
    assert_null(remat_policy_named(NULL));
    remat_fn_free(loss);
}

/* save_anything_except_these_names: every op may be saved but a listed
 * checkpoint_name; the named value then comes from its (saved) producer, so
 * "named hidden" leaves the report and relu's output serves both reads. */
static void test_ad_residuals_save_anything_except_these_names(void **state)
{
    const char *hidden[1] = {"hidden"}, *other[1] = {"other"};
    remat_policy *except_hidden = remat_policy_save_anything_except_these_names(1, hidden);
    remat_policy *except_other = remat_policy_save_anything_except_these_names(1, other);
    assert_non_null(except_hidden);
    assert_non_null(except_other);
    assert_string_equal(remat_policy_label(except_hidden), "save_anything_except_these_names('hidden')");
    static const char *const without_named[] = {
        "argument f32[3,3] w1", "argument f32[3,3] w2", "argument f32[2,3] x",
        "output f32[2,3] relu", "output f32[2,3] dot_general",
    };
    static const char *const all_saved[] = {
        "argument f32[3,3] w1", "argument f32[3,3] w2",  "argument f32[2,3] x",
        "output f32[2,3] relu", "named f32[2,3] hidden", "output f32[2,3] dot_general",
    };
    remat_fn *loss = seed_loss();
    remat_fn *f = remat_checkpoint(loss, except_hidden);
    expect_residuals("save_anything_except_these_names('hidden')", f, 5, without_named);
    remat_fn_free(f);
    f = remat_checkpoint(loss, except_other);
    expect_residuals("save_anything_except_these_names('other')", f, 6, all_saved);
    remat_fn_free(f);
    assert_null(remat_policy_save_anything_except_these_names(-1, hidden));
    assert_non_null(strstr(remat_last_error(), "save_anything_except_these_names: -1 names"));
    remat_fn_free(loss);
    remat_policy_free(except_other);
    remat_policy_free(except_hidden);
}

static void test_ad_residuals_batched_and_nd_dots_match_jax(void **state)
{
    /* f(a, b) = sum(sin(einsum('bnd,bdf->bnf', a, b))) */
    remat_fn *f = remat_fn_new("batched");
    remat_val a = remat_arg(f, "a", REMAT_F32, 3, ((int64_t[]){2, 3, 4}));
    remat_val b = remat_arg(f, "b", REMAT_F32, 3, ((int64_t[]){2, 4, 5}));
    remat_dot_dims d = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                        .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0}};
    remat_fn_output(f, remat_sum_all(f, remat_sin(f, remat_dot_general(f, a, b, &d))));
    assert_fn_ok(f);
    remat_fn *c1 = remat_checkpoint(f, remat_dots_with_no_batch_dims_saveable);
    remat_fn *c2 = remat_checkpoint(f, remat_dots_saveable);
    expect_jax_residuals("batched_dots_with_no_batch_dims", c1);
    expect_jax_residuals("batched_dots_saveable", c2);
    remat_fn_free(c1);
    remat_fn_free(c2);
    remat_fn_free(f);

    /* g(x, w) = sum(sin(x @ w)), x 3-D: a dot_general without batch dims */
    f = remat_fn_new("nd_matmul");
    remat_val x = remat_arg(f, "x", REMAT_F32, 3, ((int64_t[]){2, 3, 4}));
    remat_val w = remat_arg(f, "w", REMAT_F32, 2, ((int64_t[]){4, 5}));
    remat_fn_output(f, remat_sum_all(f, remat_sin(f, remat_matmul(f, x, w))));
    c1 = remat_checkpoint(f, remat_dots_with_no_batch_dims_saveable);
    expect_jax_residuals("nd_matmul_no_batch", c1);
    remat_fn_free(c1);
    remat_fn_free(f);
}

/* layer(x) = tanh(x * 1.01 + 0.01); blocks of 3 layers, 2 blocks, sum */
static remat_fn *hier_layer(void)
{
    remat_fn *f = remat_fn_new("single_layer");
    remat_val x = remat_arg(f, "x", REMAT_F32, 1, ((int64_t[]){100}));
    remat_fn_output(f, remat_tanh(f, remat_add_scalar(f, remat_mul_scalar(f, x, 1.01), 0.01)));
    return f;
}

/* n calls of step on x; the output is x, or sum(x) when sum */
static remat_fn *hier_chain(const char *name, const remat_fn *step, int n, int sum)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x = remat_arg(f, "x", REMAT_F32, 1, ((int64_t[]){100}));
    for (int i = 0; i < n; i++)
        x = remat_call1(f, step, 1, &x);
    remat_fn_output(f, sum ? remat_sum_all(f, x) : x);
    assert_fn_ok(f);
    return f;
}

static void test_ad_residuals_hierarchical_match_jax(void **state)
{
    remat_fn *layer = hier_layer();
    remat_fn *ck_layer = remat_checkpoint(layer, NULL); /* default policy: nothing_saveable */
    remat_fn *flat = hier_chain("block_flat", layer, 3, 0), *nested = hier_chain("block_nested", ck_layer, 3, 0);
    remat_fn *ck_flat = remat_checkpoint(flat, remat_nothing_saveable);
    remat_fn *ck_nested = remat_checkpoint(nested, remat_nothing_saveable);
    remat_fn *fns[2] = {hier_chain("hier_flat", ck_flat, 2, 1), hier_chain("hier_nested", ck_nested, 2, 1)};
    expect_jax_residuals("hier_flat", fns[0]);
    /* Known difference in naming only: JAX keeps the inner jax.checkpoint as
     * an equation, so block 1's output is "output of remat2"; remat inlines
     * regions, so the same value (block 1's output) is reported by the
     * primitive that computes it, the last layer's tanh. */
    sigset jax;
    sigset_from_jax(&jax, "hier_nested");
    assert_int_equal(jax.n, 2);
    qsort(jax.s, 2, sizeof jax.s[0], cmp_str);
    assert_string_equal(jax.s[0], "argument f32[100] x");
    assert_string_equal(jax.s[1], "output f32[100] remat2");
    sigset_free(&jax);
    static const char *const nested_expected[] = {"argument f32[100] x", "output f32[100] tanh"};
    expect_residuals("hier_nested", fns[1], 2, nested_expected);
    for (int k = 0; k < 2; k++)
        remat_fn_free(fns[k]);
    remat_fn_free(ck_nested), remat_fn_free(ck_flat), remat_fn_free(nested), remat_fn_free(flat);
    remat_fn_free(ck_layer), remat_fn_free(layer);
}

/* erf, reduce_max and stop_gradient. Known difference, as for sin: JAX
 * linearizes in the forward and saves exp(-x^2) for erf ("output of exp"),
 * the max's location mask and counts for reduce_max ("output of
 * convert_element_type", "output of reduce_sum"); remat's rules read the
 * operand (and the max) instead. x * stop_gradient(y) saves the stopped
 * value, "output of stop_gradient", exactly as JAX 0.10.2 reports it. Under
 * a checkpoint, the dots policies save the dot_general and neither erf nor
 * reduce_max (they are not dots); everything_saveable saves all three. */
static void test_ad_residuals_nn_primitives(void **state)
{
    int64_t d[2] = {4, 4};
    remat_fn *f = remat_fn_new("nn_res");
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, d), w = remat_arg(f, "w", REMAT_F32, 2, d);
    remat_val y = remat_arg(f, "y", REMAT_F32, 2, d);
    remat_val e = remat_erf(f, remat_matmul(f, x, w));
    remat_val m = remat_reduce_max(f, e, 1, ((int[]){1}));
    remat_fn_output(f, remat_add(f, remat_sum_all(f, m), remat_sum_all(f, remat_mul(f, x, remat_stop_gradient(f, y)))));
    assert_fn_ok(f);
    static const char *const plain[] = {
        "argument f32[4,4] x",         "argument f32[4,4] w", "output f32[4,4] dot_general",
        "output f32[4,4] erf",         "output f32[4] reduce_max", "output f32[4,4] stop_gradient",
    };
    expect_residuals("nn_plain", f, 6, plain);
    const struct {
        const remat_policy *p;
        int n;
        const char *const *want;
    } cases[] = {
        {remat_nothing_saveable, 3, (const char *const[]){"argument f32[4,4] x", "argument f32[4,4] w",
                                                         "argument f32[4,4] y"}},
        {remat_dots_saveable, 4, (const char *const[]){"argument f32[4,4] x", "argument f32[4,4] w",
                                                      "argument f32[4,4] y", "output f32[4,4] dot_general"}},
        {remat_dots_with_no_batch_dims_saveable, 4,
         (const char *const[]){"argument f32[4,4] x", "argument f32[4,4] w", "argument f32[4,4] y",
                               "output f32[4,4] dot_general"}},
        {remat_everything_saveable, 6, plain},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        remat_fn *ck = remat_checkpoint(f, cases[i].p);
        expect_residuals(remat_policy_label(cases[i].p), ck, cases[i].n, cases[i].want);
        remat_fn_free(ck);
    }
    remat_fn_free(f);
}

/* ==== seed gradients (gradients.json, f64) ==== */

static void test_ad_seed_gradients_match_jax(void **state)
{
    const cJSON *gd = golden("gradients.json");
    /* seed 003 in f64: grad w.r.t. w, plain and with dots_with_no_batch_dims_saveable blocks */
    {
        jarr want = jarr_get(jget(jget(gd, "remat_block_net"), "grad_w"));
        remat_fn *blk = block_fn(REMAT_F64);
        remat_fn *ck = remat_checkpoint(blk, remat_dots_with_no_batch_dims_saveable);
        double x[16], w[16];
        for (int i = 0; i < 16; i++)
            x[i] = 1.0, w[i] = i % 5 == 0 ? 0.5 : 0.0;
        int64_t d[2] = {4, 4};
        remat_tensor in[2] = {remat_tensor_f64(x, 2, d), remat_tensor_f64(w, 2, d)};
        outs_t o[2];
        for (int k = 0; k < 2; k++) {
            remat_fn *net = block_net(k ? ck : blk, REMAT_F64);
            remat_fn *g = grad_ok(net, 1, ((int[]){1}));
            run_fn(g, 2, in, &o[k], NULL, NULL);
            check_close("remat_block_net grad_w", 16, o[k].t[0].data, want.data, 1e-13, 0);
            remat_fn_free(g);
            remat_fn_free(net);
        }
        assert_memory_equal(o[0].t[0].data, o[1].t[0].data, 16 * sizeof(double)); /* contract 3 */
        outs_free(&o[0]), outs_free(&o[1]);
        remat_fn_free(ck), remat_fn_free(blk);
        free(want.data);
    }
    /* heavy_computation: W = 0.9 I + 0.01; layer(x) = W^T cos(W sin x); 5 layers; sum */
    {
        const cJSON *hc = jget(gd, "heavy_computation");
        double *W = xcalloc(2500, sizeof *W), x[50], want[50];
        for (int i = 0; i < 2500; i++)
            W[i] = (i % 51 == 0 ? 0.9 : 0.0) + 0.01;
        int n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, jget(hc, "grad")) want[n++] = e->valuedouble;
        assert_int_equal(n, 50);
        remat_fn *f = remat_fn_new("heavy");
        remat_val v = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){50}));
        remat_val Wv = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){50, 50}), W);
        remat_val Wt = remat_transpose(f, Wv, ((int[]){1, 0}));
        for (int l = 0; l < 5; l++)
            v = remat_matmul(f, Wt, remat_cos(f, remat_matmul(f, Wv, remat_sin(f, v))));
        remat_fn_output(f, remat_sum_all(f, v));
        remat_fn *g = grad_ok(f, 0, NULL);
        for (int i = 0; i < 50; i++)
            x[i] = 1.0;
        remat_tensor in = remat_tensor_f64(x, 1, ((int64_t[]){50}));
        outs_t o;
        run_fn(g, 1, &in, &o, NULL, NULL);
        check_close("heavy_computation grad", 50, o.t[0].data, want, 1e-12, 0);
        outs_free(&o);
        remat_fn_free(g), remat_fn_free(f);
        free(W);
    }
    /* hierarchical_tanh: 10 checkpointed blocks of 10 layers tanh(x*1.01 + 0.01) */
    /* deep_sin: 100 times x = sin(x) + 0.1 x on ones(1000) */
    for (int which = 0; which < 2; which++) {
        const cJSON *hc = jget(gd, which ? "deep_sin" : "hierarchical_tanh");
        int64_t n = which ? 1000 : 100;
        remat_fn *layer = remat_fn_new("layer");
        remat_val x = remat_arg(layer, "x", REMAT_F64, 1, &n);
        remat_fn_output(layer, which ? remat_add(layer, remat_sin(layer, x), remat_mul_scalar(layer, x, 0.1))
                                     : remat_tanh(layer, remat_add_scalar(layer, remat_mul_scalar(layer, x, 1.01), 0.01)));
        remat_fn *block = remat_fn_new("block");
        x = remat_arg(block, "x", REMAT_F64, 1, &n);
        for (int i = 0; i < (which ? 100 : 10); i++)
            x = remat_call1(block, layer, 1, &x);
        remat_fn_output(block, x);
        remat_fn *ck = remat_checkpoint(block, NULL);
        remat_fn *f = remat_fn_new("loss");
        x = remat_arg(f, "x", REMAT_F64, 1, &n);
        for (int i = 0; i < (which ? 1 : 10); i++)
            x = remat_call1(f, which ? block : ck, 1, &x);
        remat_fn_output(f, remat_sum_all(f, x));
        assert_fn_ok(f);
        remat_fn *g = grad_ok(f, 0, NULL);
        double *xv = xcalloc((size_t)n, sizeof *xv);
        for (int64_t i = 0; i < n; i++)
            xv[i] = 1.0;
        remat_tensor in = remat_tensor_f64(xv, 1, &n);
        outs_t o;
        run_fn(g, 1, &in, &o, NULL, NULL);
        const double *gv = o.t[0].data;
        double norm = 0;
        for (int64_t i = 0; i < n; i++)
            norm += gv[i] * gv[i];
        norm = sqrt(norm);
        double first = which ? cJSON_GetArrayItem(jget(hc, "grad_first5"), 0)->valuedouble
                             : jget(hc, "grad_first")->valuedouble;
        check_close(which ? "deep_sin grad_norm" : "hierarchical_tanh grad_norm", 1, &norm,
                    &jget(hc, "grad_norm")->valuedouble, 1e-12, 0);
        check_close(which ? "deep_sin grad[0]" : "hierarchical_tanh grad[0]", 1, gv, &first, 1e-12, 0);
        outs_free(&o);
        free(xv);
        remat_fn_free(g), remat_fn_free(f), remat_fn_free(ck), remat_fn_free(block), remat_fn_free(layer);
    }
}

/* ---- main ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_residuals_block_net_match_jax),
        cmocka_unit_test(test_ad_residuals_policies_match_jax),
        cmocka_unit_test(test_ad_residuals_policy_aliases_match_jax),
        cmocka_unit_test(test_ad_residuals_save_anything_except_these_names),
        cmocka_unit_test(test_ad_residuals_batched_and_nd_dots_match_jax),
        cmocka_unit_test(test_ad_residuals_hierarchical_match_jax),
        cmocka_unit_test(test_ad_residuals_nn_primitives),
        cmocka_unit_test(test_ad_seed_gradients_match_jax),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
