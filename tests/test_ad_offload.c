/*
 * test_ad_offload.c — offload policies (JAX's Offloadable): the policy
 * kinds and their text form, offloaded residuals written to the slow tier
 * and read back, the gradient of the same policy saving them bit for bit
 * (the same kernels in the same order: contract 3; the tier is a byte
 * copy), per-tier bytes planned = measured, the residual report, and the
 * errors of a bad tier directory or bad policy arguments.
 */
#include "test_ad_util.h"
#include "test_golden.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remat/remat.h"

/* ---- the policies ---- */

static remat_op_info name_info(const char *name)
{
    static const remat_shape s = {.rank = 0};
    return (remat_op_info){.op = REMAT_OP_NAME, .dtype = REMAT_F64, .shape = &s, .name = name};
}

static void test_offload_policy_kinds(void **state)
{
    (void)state;
    const char *save[] = {"a"}, *off[] = {"b", "c"};
    remat_policy *p = remat_policy_save_and_offload_only_these_names(1, save, 2, off, "device", "pinned_host");
    assert_non_null(p);
    remat_op_info a = name_info("a"), b = name_info("b"), c = name_info("c"), d = name_info("d");
    assert_int_equal(remat_policy_decide(p, &a), REMAT_POLICY_SAVE);
    assert_int_equal(remat_policy_decide(p, &b), REMAT_POLICY_OFFLOAD);
    assert_int_equal(remat_policy_decide(p, &c), REMAT_POLICY_OFFLOAD);
    assert_int_equal(remat_policy_decide(p, &d), REMAT_POLICY_RECOMPUTE);
    assert_true(remat_policy_allows(p, &b)); /* offloaded values are kept */
    assert_false(remat_policy_allows(p, &d));
    assert_string_equal(remat_policy_label(p),
                        "save_and_offload_only_these_names(['a'], ['b', 'c'], 'device', 'pinned_host')");

    /* dots: no batch dims offloaded, batched ones and the rest recomputed */
    remat_policy *q = remat_policy_offload_dot_with_no_batch_dims("device", "pinned_host");
    assert_non_null(q);
    remat_dot_dims nb = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    remat_dot_dims bt = {.n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0}, .n_contract = 1, .lhs_contract = {2},
                         .rhs_contract = {1}};
    remat_shape s2 = {.rank = 2, .dims = {2, 2}};
    remat_op_info dot = {.op = REMAT_OP_DOT_GENERAL, .dtype = REMAT_F64, .shape = &s2, .dot = &nb};
    remat_op_info bdot = dot;
    bdot.dot = &bt;
    remat_op_info sinop = {.op = REMAT_OP_SIN, .dtype = REMAT_F64, .shape = &s2};
    assert_int_equal(remat_policy_decide(q, &dot), REMAT_POLICY_OFFLOAD);
    assert_int_equal(remat_policy_decide(q, &bdot), REMAT_POLICY_RECOMPUTE);
    assert_int_equal(remat_policy_decide(q, &sinop), REMAT_POLICY_RECOMPUTE);

    /* save_from_both: the first answer that is not Recompute (JAX's `or`) */
    remat_policy *both = remat_policy_save_from_both(remat_dots_saveable, q);
    assert_int_equal(remat_policy_decide(both, &dot), REMAT_POLICY_SAVE);
    remat_policy *both2 = remat_policy_save_from_both(q, remat_everything_saveable);
    assert_int_equal(remat_policy_decide(both2, &dot), REMAT_POLICY_OFFLOAD);
    assert_int_equal(remat_policy_decide(both2, &sinop), REMAT_POLICY_SAVE);
    /* the old policies answer save or recompute */
    assert_int_equal(remat_policy_decide(remat_dots_saveable, &dot), REMAT_POLICY_SAVE);
    assert_int_equal(remat_policy_decide(NULL, &dot), REMAT_POLICY_RECOMPUTE);
    remat_policy_free(both);
    remat_policy_free(both2);
    remat_policy_free(p);
    remat_policy_free(q);
}

static void expect_bad(remat_policy *p, remat_status st, const char *needle)
{
    assert_null(p);
    (void)st; /* the status is not kept apart from the message: its text says which */
    if (!strstr(remat_last_error(), needle))
        fail_msg("error '%s' lacks '%s'", remat_last_error(), needle);
}

static void test_offload_policy_bad_arguments(void **state)
{
    (void)state;
    const char *ab[] = {"a", "b"}, *b[] = {"b"};
    /* JAX's ValueError: a name both saved and offloaded */
    expect_bad(remat_policy_save_and_offload_only_these_names(2, ab, 1, b, "device", "pinned_host"), REMAT_ERR_ARG,
               "'b' is in both");
    expect_bad(remat_policy_save_and_offload_only_these_names(0, NULL, 1, b, "host", "pinned_host"), REMAT_ERR_ARG,
               "offload_src 'host'");
    expect_bad(remat_policy_save_and_offload_only_these_names(0, NULL, 1, b, "device", "disk"), REMAT_ERR_ARG,
               "offload_dst 'disk'");
    expect_bad(remat_policy_offload_dot_with_no_batch_dims("device", NULL), REMAT_ERR_NULL, "offload_dst");
    expect_bad(remat_policy_offload_dot_with_no_batch_dims("device", "device"), REMAT_ERR_ARG, "offload_dst 'device'");
    expect_bad(remat_policy_save_and_offload_only_these_names(1, NULL, 1, b, "device", "pinned_host"),
               REMAT_ERR_NULL, "names_which_can_be_saved");
}

static void test_offload_policy_named(void **state)
{
    (void)state;
    const remat_policy *p = remat_policy_named(
        "save_and_offload_only_these_names(names_which_can_be_saved=[a], names_which_can_be_offloaded=['b', c], "
        "offload_src=device, offload_dst=pinned_host)");
    assert_non_null(p);
    remat_op_info a = name_info("a"), b = name_info("b"), c = name_info("c"), d = name_info("d");
    assert_int_equal(remat_policy_decide(p, &a), REMAT_POLICY_SAVE);
    assert_int_equal(remat_policy_decide(p, &b), REMAT_POLICY_OFFLOAD);
    assert_int_equal(remat_policy_decide(p, &c), REMAT_POLICY_OFFLOAD);
    assert_int_equal(remat_policy_decide(p, &d), REMAT_POLICY_RECOMPUTE);
    /* the same text is the same policy, which lives for the process */
    assert_ptr_equal(p, remat_policy_named(
        "save_and_offload_only_these_names(names_which_can_be_saved=[a], names_which_can_be_offloaded=['b', c], "
        "offload_src=device, offload_dst=pinned_host)"));
    remat_policy_free((remat_policy *)p);
    assert_int_equal(remat_policy_decide(p, &b), REMAT_POLICY_OFFLOAD);
    /* positional, as the label prints it */
    const remat_policy *q = remat_policy_named("save_and_offload_only_these_names([], [b], device, unpinned_host)");
    assert_non_null(q);
    assert_int_equal(remat_policy_decide(q, &b), REMAT_POLICY_OFFLOAD);
    assert_int_equal(remat_policy_decide(q, &a), REMAT_POLICY_RECOMPUTE);
    const remat_policy *o = remat_policy_named("offload_dot_with_no_batch_dims('device', 'pinned_host')");
    assert_non_null(o);
    assert_string_equal(remat_policy_label(o), "offload_dot_with_no_batch_dims('device', 'pinned_host')");
    /* the name policies with arguments, through the same parser */
    const remat_policy *n = remat_policy_named("save_only_these_names(a, c)");
    assert_non_null(n);
    assert_true(remat_policy_allows(n, &c));
    assert_false(remat_policy_allows(n, &b));
    /* the bare names still are the built-ins */
    assert_ptr_equal(remat_policy_named("checkpoint_dots"), remat_dots_saveable);

    expect_bad((remat_policy *)remat_policy_named("offload_dot_with_no_batch_dims(device, ssd)"), REMAT_ERR_ARG,
               "offload_dst 'ssd'");
    expect_bad((remat_policy *)remat_policy_named("offload_dot_with_no_batch_dims(device)"), REMAT_ERR_ARG,
               "takes 2 arguments");
    expect_bad((remat_policy *)remat_policy_named("save_and_offload_only_these_names([a], [a], device, pinned_host)"),
               REMAT_ERR_ARG, "'a' is in both");
    expect_bad((remat_policy *)remat_policy_named(
                   "save_and_offload_only_these_names([a], [b], device, offload_to=pinned_host)"),
               REMAT_ERR_ARG, "unknown argument 'offload_to'");
    expect_bad((remat_policy *)remat_policy_named("offload_everything(device, pinned_host)"), REMAT_ERR_ARG,
               "unknown policy 'offload_everything'");
    expect_bad((remat_policy *)remat_policy_named("save_only_these_names('a)"), REMAT_ERR_ARG, "unterminated quote");
    expect_bad((remat_policy *)remat_policy_named("save_only_these_names(a) x"), REMAT_ERR_ARG, "after the ')'");
    expect_bad((remat_policy *)remat_policy_named("offload_dot_with_no_batch_dims(device, [pinned_host])"),
               REMAT_ERR_ARG, "not a list");
}

/* ---- reverse mode through the tier ---- */

/* A stack of L checkpointed layers h = name(tanh(h w_l + b_l), "h") with a
 * dot named "z" inside, loss = sum(h^2): (x (B,D), w (L,D,D) as L args, b). */
enum { B = 32, D = 48, L = 4 };

static remat_fn *layer_fn(void)
{
    remat_fn *f = remat_fn_new("layer");
    remat_val h = remat_arg(f, "h", REMAT_F64, 2, ((int64_t[]){B, D}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 2, ((int64_t[]){D, D}));
    remat_val b = remat_arg(f, "b", REMAT_F64, 1, ((int64_t[]){D}));
    remat_val z = remat_name(f, remat_matmul(f, h, w), "z");
    remat_val a = remat_name(f, remat_tanh(f, remat_add(f, z, b)), "h");
    remat_fn_output(f, remat_add(f, remat_sin(f, a), h));
    assert_fn_ok(f);
    return f;
}

static remat_fn *stack_net(const remat_policy *policy)
{
    remat_fn *layer = layer_fn();
    remat_fn *blk = remat_checkpoint(layer, policy);
    assert_non_null(blk);
    remat_fn *f = remat_fn_new("stack");
    remat_val h = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){B, D}));
    remat_val w[L];
    for (int l = 0; l < L; l++) {
        char nm[8];
        snprintf(nm, sizeof nm, "w%d", l);
        w[l] = remat_arg(f, nm, REMAT_F64, 2, ((int64_t[]){D, D}));
    }
    remat_val b = remat_arg(f, "b", REMAT_F64, 1, ((int64_t[]){D}));
    for (int l = 0; l < L; l++)
        h = remat_call1(f, blk, 3, ((remat_val[]){h, w[l], b}));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, h)));
    assert_fn_ok(f);
    remat_fn_free(blk);
    remat_fn_free(layer);
    return f;
}

typedef struct {
    remat_tensor in[L + 2];
    double *buf[L + 2];
} net_inputs;

static void inputs_make(net_inputs *x)
{
    rng_seed(7);
    for (int i = 0; i < L + 2; i++) {
        int64_t n = i == 0 ? B * D : i == L + 1 ? D : D * D;
        x->buf[i] = xmalloc(sizeof(double) * (size_t)n);
        for (int64_t k = 0; k < n; k++)
            x->buf[i][k] = urand(-0.3, 0.3);
        x->in[i] = i == 0       ? remat_tensor_f64(x->buf[i], 2, ((int64_t[]){B, D}))
                   : i == L + 1 ? remat_tensor_f64(x->buf[i], 1, ((int64_t[]){D}))
                                : remat_tensor_f64(x->buf[i], 2, ((int64_t[]){D, D}));
    }
}

static void inputs_free(net_inputs *x)
{
    for (int i = 0; i < L + 2; i++)
        free(x->buf[i]);
}

/* Compiles with intermediates kept out of the output buffers, so that the
 * arena holds every value that stays in RAM (exec/out_scratch.c would
 * otherwise park the saving policy's activations in the gradients). */
static bool arena_only;

static remat_program *compile_grad(const remat_policy *policy, const char *tier_dir, int64_t max_bytes)
{
    remat_fn *net = stack_net(policy);
    remat_fn *g = grad_ok(net, 0, NULL);
    remat_compile_options o = remat_compile_options_default();
    o.no_inplace = o.no_inplace || arena_only;
    o.tier_dir = tier_dir;
    o.tier_max_bytes = max_bytes;
    remat_program *p = NULL;
    remat_status st = remat_compile_opts(g, remat_test_backend(), &o, &p);
    if (st != REMAT_OK)
        fail_msg("compile: %s", remat_last_error());
    remat_fn_free(g);
    remat_fn_free(net);
    return p;
}

/* One pair: an offloading policy and the same one saving what it offloads. */
typedef struct {
    const char *offload, *save;
    size_t offloaded; /* values offloaded: bytes each is B*D*8 */
} policy_pair;

static const policy_pair pairs[] = {
    {"save_and_offload_only_these_names([], [h], device, pinned_host)", "save_only_these_names(h)", L},
    {"save_and_offload_only_these_names([h], [z], device, pinned_host)", "save_only_these_names(h, z)", L},
    {"save_and_offload_only_these_names([], [h, z], device, unpinned_host)", "save_only_these_names(h, z)", 2 * L},
    {"offload_dot_with_no_batch_dims(device, pinned_host)", "dots_with_no_batch_dims_saveable", L},
};

/* Gradients equal to the saving policy's bit for bit (contract 3: the
 * same ops on the same operands; the tier copies bytes); the offloaded
 * bytes leave the arena; planned = measured per tier. */
static void test_offload_gradients_bitwise(void **state)
{
    (void)state;
    net_inputs x;
    inputs_make(&x);
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
        const remat_policy *po = remat_policy_named(pairs[k].offload), *ps = remat_policy_named(pairs[k].save);
        assert_non_null(po);
        assert_non_null(ps);
        remat_program *pa = compile_grad(po, NULL, 0), *pb = compile_grad(ps, NULL, 0);
        outs_t oa, ob;
        remat_stats sa, sb;
        run_prog(pa, L + 2, x.in, &oa, &sa);
        run_prog(pb, L + 2, x.in, &ob, &sb);
        assert_int_equal(oa.n, ob.n);
        for (int i = 0; i < oa.n; i++)
            if (memcmp(oa.t[i].data, ob.t[i].data, remat_tensor_bytes(&oa.t[i])) != 0)
                fail_msg("%s: gradient %d differs from %s's", pairs[k].offload, i, pairs[k].save);
        remat_memory_plan pla, plb;
        remat_program_plan(pa, &pla);
        remat_program_plan(pb, &plb);
        const size_t one = (size_t)B * D * sizeof(double);
        assert_int_equal(pla.offload_bytes, pairs[k].offloaded * one); /* B*D*8 is 64-aligned */
        assert_int_equal(sa.offload_bytes, pla.offload_bytes);          /* planned = measured */
        assert_int_equal(plb.offload_bytes, 0);
        assert_int_equal(sb.offload_bytes, 0);
        /* the RAM tier: the arena no longer holds the offloaded values
         * across the forward (each comes back for its layer's backward);
         * compared with every RAM value in the arena */
        arena_only = true;
        remat_program *qa = compile_grad(po, NULL, 0), *qb = compile_grad(ps, NULL, 0);
        arena_only = false;
        remat_memory_plan qla, qlb;
        remat_program_plan(qa, &qla);
        remat_program_plan(qb, &qlb);
        if (qla.arena_bytes + (pairs[k].offloaded - 2) * one > qlb.arena_bytes)
            fail_msg("%s: arena %zu bytes, saving: %zu", pairs[k].offload, qla.arena_bytes, qlb.arena_bytes);
        assert_true(pla.arena_bytes <= qla.arena_bytes);
        remat_program_free(qa);
        remat_program_free(qb);
        assert_true(sa.peak_arena_bytes <= pla.arena_bytes);
        assert_int_equal(sa.residual_bytes, sb.residual_bytes); /* the same residuals, in another tier */
        outs_free(&oa);
        outs_free(&ob);
        remat_program_free(pa);
        remat_program_free(pb);
    }
    inputs_free(&x);
}

/* More networks: seed 003's block (f32, sin(sin(x @ w)) three times) and
 * regions nested in regions (the outer policy decides what the forward
 * keeps, JAX 0.10.2), each against the policy saving what it offloads. */
static remat_fn *nested_net(const remat_policy *outer)
{
    remat_fn *inner = remat_fn_new("inner");
    remat_val x = remat_arg(inner, "x", REMAT_F64, 2, ((int64_t[]){8, 8}));
    remat_val w = remat_arg(inner, "w", REMAT_F64, 2, ((int64_t[]){8, 8}));
    remat_fn_output(inner, remat_tanh(inner, remat_name(inner, remat_matmul(inner, x, w), "z")));
    remat_fn *inner_r = remat_checkpoint(inner, remat_dots_saveable);
    remat_fn *mid = remat_fn_new("mid");
    x = remat_arg(mid, "x", REMAT_F64, 2, ((int64_t[]){8, 8}));
    w = remat_arg(mid, "w", REMAT_F64, 2, ((int64_t[]){8, 8}));
    remat_val h = remat_call1(mid, inner_r, 2, ((remat_val[]){x, w}));
    h = remat_name(mid, remat_sin(mid, remat_call1(mid, inner_r, 2, ((remat_val[]){h, w}))), "h");
    remat_fn_output(mid, remat_mul(mid, h, x));
    remat_fn *mid_r = remat_checkpoint(mid, outer);
    remat_fn *f = remat_fn_new("nested");
    x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){8, 8}));
    w = remat_arg(f, "w", REMAT_F64, 2, ((int64_t[]){8, 8}));
    for (int i = 0; i < 3; i++)
        x = remat_call1(f, mid_r, 2, ((remat_val[]){x, w}));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, x)));
    assert_fn_ok(f);
    remat_fn_free(mid_r);
    remat_fn_free(mid);
    remat_fn_free(inner_r);
    remat_fn_free(inner);
    return f;
}

static remat_fn *block_net_with(const remat_policy *p)
{
    remat_fn *blk = block_fn(REMAT_F32);
    remat_fn *r = remat_checkpoint(blk, p);
    remat_fn *net = block_net(r, REMAT_F32);
    remat_fn_free(r);
    remat_fn_free(blk);
    return net;
}

/* the gradient of net(offload) against net(save), bitwise; the bytes offloaded */
static void compare_nets(remat_fn *(*make)(const remat_policy *), const char *off, const char *save,
                         size_t want_offload, remat_dtype dt)
{
    remat_fn *no = make(remat_policy_named(off)), *ns = make(remat_policy_named(save));
    remat_fn *go = grad_ok(no, 0, NULL), *gs = grad_ok(ns, 0, NULL);
    remat_tensor in[2];
    void *buf[2];
    rng_seed(11);
    remat_program *po = compile_ok(go), *ps = compile_ok(gs);
    for (int i = 0; i < 2; i++) {
        in[i] = remat_program_input_desc(po, i);
        size_t n = (size_t)remat_shape_numel(&in[i].shape);
        buf[i] = xmalloc(remat_tensor_bytes(&in[i]));
        for (size_t k = 0; k < n; k++)
            if (dt == REMAT_F32)
                ((float *)buf[i])[k] = (float)urand(-0.9, 0.9);
            else
                ((double *)buf[i])[k] = urand(-0.9, 0.9);
        in[i].data = buf[i];
    }
    outs_t oo, os;
    remat_stats so, ss;
    run_prog(po, 2, in, &oo, &so);
    run_prog(ps, 2, in, &os, &ss);
    for (int i = 0; i < oo.n; i++)
        if (memcmp(oo.t[i].data, os.t[i].data, remat_tensor_bytes(&oo.t[i])) != 0)
            fail_msg("%s: gradient %d differs from %s's", off, i, save);
    remat_memory_plan pl;
    remat_program_plan(po, &pl);
    assert_int_equal(pl.offload_bytes, want_offload);
    assert_int_equal(so.offload_bytes, want_offload);
    assert_int_equal(so.peak_arena_bytes, pl.arena_bytes); /* the RAM tier: planned = measured */
    outs_free(&oo);
    outs_free(&os);
    for (int i = 0; i < 2; i++)
        free(buf[i]);
    remat_program_free(po);
    remat_program_free(ps);
    remat_fn_free(go);
    remat_fn_free(gs);
    remat_fn_free(no);
    remat_fn_free(ns);
}

static void test_offload_more_networks_bitwise(void **state)
{
    (void)state;
    /* f32 (4,4) dots: 64 bytes each, three blocks */
    compare_nets(block_net_with, "offload_dot_with_no_batch_dims(device, pinned_host)",
                 "dots_with_no_batch_dims_saveable", 3 * 64, REMAT_F32);
    /* the outer region offloads h of each of the three: (8,8) f64 = 512 bytes */
    compare_nets(nested_net, "save_and_offload_only_these_names([], [h], device, pinned_host)",
                 "save_only_these_names(h)", 3 * 512, REMAT_F64);
    /* the outer region saves h, offloads z (two per region) */
    compare_nets(nested_net, "save_and_offload_only_these_names([h], [z], device, pinned_host)",
                 "save_only_these_names(h, z)", 6 * 512, REMAT_F64);
}

/* An offloading policy and no offloaded value the backward reads: nothing
 * goes to the tier and no file is made. */
static void test_offload_unread_values_stay(void **state)
{
    (void)state;
    net_inputs x;
    inputs_make(&x);
    remat_program *p = compile_grad(remat_policy_named("save_and_offload_only_these_names([], [nothing_named_so], "
                                                       "device, pinned_host)"),
                                    "/nonexistent-remat-dir", 0);
    remat_memory_plan pl;
    remat_program_plan(p, &pl);
    assert_int_equal(pl.offload_bytes, 0);
    outs_t o;
    remat_stats st;
    run_prog(p, L + 2, x.in, &o, &st); /* no file, so the missing directory is no error */
    outs_free(&o);
    remat_program_free(p);
    inputs_free(&x);
}

static void test_offload_residual_report(void **state)
{
    (void)state;
    remat_fn *net = stack_net(remat_policy_named("save_and_offload_only_these_names([h], [z], device, pinned_host)"));
    remat_residual_list *r = NULL;
    assert_int_equal(remat_saved_residuals(net, 0, NULL, &r), REMAT_OK);
    int named_h = 0, off_z = 0;
    char line[512];
    for (int i = 0; i < remat_residual_list_count(r); i++) {
        const remat_residual *e = remat_residual_list_get(r, i);
        remat_residual_format(e, line, sizeof line);
        if (e->kind == REMAT_RESIDUAL_NAMED && !strcmp(e->name, "h")) {
            named_h++;
            assert_null(e->offload_dst);
        }
        if (e->kind == REMAT_RESIDUAL_NAMED && !strcmp(e->name, "z")) {
            off_z++;
            assert_string_equal(e->offload_dst, "pinned_host");
            /* JAX's line: "f32<host>[4,6] output of device_put from ..." */
            if (strncmp(line, "f64<host>[32,48] output of device_put (named 'z' at ", 52) != 0 ||
                !strstr(line, ", offloaded to pinned_host)"))
                fail_msg("offloaded residual printed as '%s'", line);
        } else {
            assert_null(strstr(line, "offloaded"));
        }
    }
    assert_int_equal(named_h, L);
    assert_int_equal(off_z, L);
    remat_residual_list_free(r);
    remat_fn_free(net);
}

/* A run whose tier cannot be made fails before any instruction runs: its
 * message names the directory, the outputs are untouched. */
static void expect_run_fails(remat_program *p, const net_inputs *x, const char *needle)
{
    remat_tensor out[L + 2];
    double *buf[L + 2];
    for (int i = 0; i < L + 2; i++) {
        out[i] = remat_program_output_desc(p, i);
        buf[i] = xmalloc(remat_tensor_bytes(&out[i]));
        memset(buf[i], 0xAB, remat_tensor_bytes(&out[i]));
        out[i].data = buf[i];
    }
    assert_int_equal(remat_run(p, L + 2, x->in, L + 2, out, NULL), REMAT_ERR_IO);
    if (!strstr(remat_last_error(), needle))
        fail_msg("error '%s' lacks '%s'", remat_last_error(), needle);
    for (int i = 0; i < L + 2; i++) {
        const unsigned char *b = (const unsigned char *)buf[i];
        for (size_t k = 0; k < remat_tensor_bytes(&out[i]); k++)
            if (b[k] != 0xAB)
                fail_msg("output %d written by a run that failed", i);
        free(buf[i]);
    }
}

/* a device backend keeps its offloaded values in host memory, no file */
static int on_device(void)
{
    const char *b = getenv("REMAT_BACKEND");
    return b && !strncmp(b, "cuda", 4);
}

static void test_offload_bad_tier_dir(void **state)
{
    (void)state;
    net_inputs x;
    inputs_make(&x);
    const remat_policy *po = remat_policy_named(pairs[0].offload);
    if (on_device()) { /* the directory is not used: the run goes through */
        remat_program *p = compile_grad(po, "/nonexistent-remat-tier", 0);
        outs_t o;
        remat_stats st;
        run_prog(p, L + 2, x.in, &o, &st);
        assert_int_equal(st.offload_bytes, (size_t)L * B * D * sizeof(double));
        outs_free(&o);
        remat_program_free(p);
        inputs_free(&x);
        return;
    }
    /* missing */
    remat_program *p = compile_grad(po, "/nonexistent-remat-tier", 0);
    expect_run_fails(p, &x, "cannot make the tier file in '/nonexistent-remat-tier'");
    remat_program_free(p);
    /* full: more than tier_max_bytes */
    char dir[] = "/tmp/remat-offload-XXXXXX";
    assert_non_null(mkdtemp(dir));
    p = compile_grad(po, dir, 1000);
    char want[128];
    snprintf(want, sizeof want, "bytes for the tier in '%s': %s (tier_max_bytes)", dir, strerror(ENOSPC));
    expect_run_fails(p, &x, want);
    remat_program_free(p);
    /* read-only (as root, permissions do not stop writes: a file in its place) */
    char file[64];
    snprintf(file, sizeof file, "%s/f", dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    p = compile_grad(po, file, 0);
    snprintf(want, sizeof want, "cannot make the tier file in '%s': ", file);
    expect_run_fails(p, &x, want);
    remat_program_free(p);
    /* the same program runs once the directory is fine, and leaves nothing there */
    p = compile_grad(po, dir, 0);
    outs_t o;
    remat_stats st;
    run_prog(p, L + 2, x.in, &o, &st);
    assert_int_equal(st.offload_bytes, (size_t)L * B * D * sizeof(double));
    outs_free(&o);
    remat_program_free(p);
    assert_int_equal(unlink(file), 0);
    assert_int_equal(rmdir(dir), 0); /* empty: the tier file was unlinked at once */
    inputs_free(&x);
}

/* ---- JAX's report and gradient (tests/goldens/offload_residuals.json,
 * tools/goldens/gen_offload_goldens.py) ---- */

static remat_fn *golden_net(const remat_policy *policy, int64_t b, int64_t d, int layers)
{
    remat_fn *layer = remat_fn_new("layer");
    remat_val h = remat_arg(layer, "h", REMAT_F32, 2, ((int64_t[]){b, d}));
    remat_val w = remat_arg(layer, "w", REMAT_F32, 2, ((int64_t[]){d, d}));
    remat_val bb = remat_arg(layer, "b", REMAT_F32, 1, ((int64_t[]){d}));
    remat_val z = remat_name(layer, remat_matmul(layer, h, w), "z");
    remat_val a = remat_name(layer, remat_tanh(layer, remat_add(layer, z, bb)), "h");
    remat_fn_output(layer, remat_add(layer, remat_sin(layer, a), h));
    remat_fn *blk = remat_checkpoint(layer, policy);
    remat_fn *f = remat_fn_new("net");
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){b, d}));
    w = remat_arg(f, "w", REMAT_F32, 2, ((int64_t[]){d, d}));
    bb = remat_arg(f, "b", REMAT_F32, 1, ((int64_t[]){d}));
    for (int l = 0; l < layers; l++)
        x = remat_call1(f, blk, 3, ((remat_val[]){x, w, bb}));
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, x, x)));
    assert_fn_ok(f);
    remat_fn_free(blk);
    remat_fn_free(layer);
    return f;
}

static float *floats_of(const cJSON *a, int64_t n)
{
    float *v = xmalloc(sizeof *v * (size_t)n);
    assert_int_equal(cJSON_GetArraySize(a), n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)cJSON_GetArrayItem(a, (int)i)->valuedouble;
    return v;
}

/* JAX lists an offloaded residual as "f32<host>[4,6] output of device_put";
 * remat's line starts with the same type and words. Compared: the offloaded
 * residuals' types (a multiset, in order) and the saved names; the gradient
 * to f32 rounding (XLA and remat order the sums differently). */
static void test_offload_jax_goldens(void **state)
{
    (void)state;
    const cJSON *net = jget(golden("offload_residuals.json"), "network");
    const int64_t B_ = (int64_t)jget(net, "B")->valuedouble, D_ = (int64_t)jget(net, "D")->valuedouble;
    const int L_ = (int)jget(net, "L")->valuedouble;
    float *x = floats_of(jget(net, "x"), B_ * D_), *w = floats_of(jget(net, "w"), D_ * D_);
    float *b = floats_of(jget(net, "b"), D_);
    const cJSON *cases = jget(golden("offload_residuals.json"), "cases");
    for (int k = 0; k < cJSON_GetArraySize(cases); k++) {
        const cJSON *c = cJSON_GetArrayItem(cases, k);
        const char *name = jget(c, "name")->valuestring;
        const remat_policy *p = remat_policy_named(name);
        assert_non_null(p);
        remat_fn *f = golden_net(p, B_, D_, L_);
        /* JAX's lines: the host ones' types, the named ones' names */
        char want_host[256] = "", got_host[256] = "";
        int want_named = 0, got_named = 0;
        const cJSON *res = jget(c, "residuals");
        for (int i = 0; i < cJSON_GetArraySize(res); i++) {
            const char *type = jget(cJSON_GetArrayItem(res, i), "type")->valuestring;
            const char *src = jget(cJSON_GetArrayItem(res, i), "source")->valuestring;
            if (strstr(type, "<host>")) {
                assert_string_equal(src, "output of device_put");
                strcat(want_host, type), strcat(want_host, " ");
            }
            want_named += !strncmp(src, "named ", 6);
        }
        remat_residual_list *r = NULL;
        assert_int_equal(remat_saved_residuals(f, 0, NULL, &r), REMAT_OK);
        char line[512];
        for (int i = 0; i < remat_residual_list_count(r); i++) {
            const remat_residual *e = remat_residual_list_get(r, i);
            remat_residual_format(e, line, sizeof line);
            if (e->offload_dst) {
                char *sp = strchr(line, ' ');
                assert_non_null(sp);
                assert_true(!strncmp(sp, " output of device_put ", 22));
                strncat(got_host, line, (size_t)(sp - line)), strcat(got_host, " ");
            } else {
                got_named += e->kind == REMAT_RESIDUAL_NAMED;
            }
        }
        if (strcmp(want_host, got_host) != 0 || want_named != got_named)
            fail_msg("%s: JAX offloads '%s' and saves %d names, remat '%s' and %d", name, want_host, want_named,
                     got_host, got_named);
        remat_residual_list_free(r);
        /* the gradient with respect to w */
        remat_fn *g = grad_ok(f, 1, (int[]){1});
        remat_tensor in[3] = {remat_tensor_f32(x, 2, ((int64_t[]){B_, D_})),
                              remat_tensor_f32(w, 2, ((int64_t[]){D_, D_})), remat_tensor_f32(b, 1, &D_)};
        outs_t o;
        run_fn(g, 3, in, &o, NULL, NULL);
        jarr want = jarr_get(jget(c, "grad_w"));
        assert_int_equal(want.n, D_ * D_);
        double got[64];
        for (int64_t i = 0; i < want.n; i++)
            got[i] = ((const float *)o.t[0].data)[i];
        check_close(name, want.n, got, want.data, 1e-5, 1e-6);
        free(want.data);
        outs_free(&o);
        remat_fn_free(g);
        remat_fn_free(f);
    }
    free(x);
    free(w);
    free(b);
}

int main(void)
{
    remat_test_backend();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offload_policy_kinds),
        cmocka_unit_test(test_offload_policy_bad_arguments),
        cmocka_unit_test(test_offload_policy_named),
        cmocka_unit_test(test_offload_gradients_bitwise),
        cmocka_unit_test(test_offload_more_networks_bitwise),
        cmocka_unit_test(test_offload_unread_values_stay),
        cmocka_unit_test(test_offload_residual_report),
        cmocka_unit_test(test_offload_bad_tier_dir),
        cmocka_unit_test(test_offload_jax_goldens),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
