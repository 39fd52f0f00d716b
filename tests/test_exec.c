/*
 * test_exec.c — compiling and running programs: the static arena planner
 * (remat_plan_offsets, checked pairwise on random lifetimes), determinism,
 * outputs with unusual storage (arguments, constants, repeats, aliases),
 * degenerate shapes (zero-size, rank 0, rank 8) and the program's signature.
 * Expected values are computed here from the ops' definitions.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "exec/program_impl.h"
#include "remat/remat.h"

static uint64_t next_u64(void) { return rng_next() >> 17; }

static void expect_f64(const char *what, const remat_tensor *t, int64_t n, const double *want, double rtol)
{
    assert_int_equal(t->dtype, REMAT_F64);
    assert_int_equal(remat_shape_numel(&t->shape), n);
    const double *g = t->data;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(g[i] - want[i]) <= rtol * fabs(want[i])))
            fail_msg("%s[%lld] = %.17g, want %.17g", what, (long long)i, g[i], want[i]);
}

static void expect_dims(const remat_tensor *t, remat_dtype dt, int rank, const int64_t *dims)
{
    remat_shape s = remat_shape_make(rank, dims);
    assert_int_equal(t->dtype, dt);
    if (!remat_shape_equal(&t->shape, &s)) {
        char a[128], b[128];
        fail_msg("shape %s, want %s", remat_shape_format(t->dtype, &t->shape, a, sizeof a),
                 remat_shape_format(dt, &s, b, sizeof b));
    }
}

/* ==== the planner ==== */

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Every pair of buffers alive at a common instruction (inclusive lifetimes:
 * an instruction's output never shares memory with what it reads) occupies
 * disjoint bytes; offsets are aligned and inside the arena. */
static void check_plan(const remat_plan_buf *b, int32_t n, size_t align, size_t arena)
{
    for (int32_t i = 0; i < n; i++) {
        if (b[i].offset % align)
            fail_msg("buffer %d at offset %zu, not a multiple of %zu", i, b[i].offset, align);
        if (b[i].offset + b[i].size > arena)
            fail_msg("buffer %d [%zu, +%zu) ends past the arena (%zu)", i, b[i].offset, b[i].size, arena);
    }
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = i + 1; j < n; j++) {
            int live_together = b[i].first <= b[j].last && b[j].first <= b[i].last;
            int overlap = b[i].size > 0 && b[j].size > 0 && b[i].offset < b[j].offset + b[j].size &&
                          b[j].offset < b[i].offset + b[i].size;
            if (live_together && overlap)
                fail_msg("buffers %d [%d,%d] @%zu+%zu and %d [%d,%d] @%zu+%zu overlap while both live", i,
                         b[i].first, b[i].last, b[i].offset, b[i].size, j, b[j].first, b[j].last, b[j].offset,
                         b[j].size);
        }
    /* no plan can beat the most bytes live at one instruction */
    int32_t tmax = 0;
    for (int32_t i = 0; i < n; i++)
        if (b[i].last > tmax)
            tmax = b[i].last;
    size_t lower = 0, total = 0;
    for (int32_t t = 0; t <= tmax; t++) {
        size_t live = 0;
        for (int32_t i = 0; i < n; i++)
            if (b[i].first <= t && t <= b[i].last)
                live += round_up(b[i].size, align);
        if (live > lower)
            lower = live;
    }
    for (int32_t i = 0; i < n; i++)
        total += round_up(b[i].size, align);
    assert_true(arena >= lower);
    assert_true(arena <= total);
}

static void test_exec_planner_never_overlaps_live_buffers(void **state)
{
    assert_int_equal(remat_plan_offsets(NULL, 0, 64), 0);
    static const size_t aligns[3] = {1, 8, 64};
    for (int trial = 0; trial < 400; trial++) {
        int32_t n = 1 + (int32_t)(next_u64() % 80);
        int32_t horizon = 1 + (int32_t)(next_u64() % 100);
        size_t align = aligns[trial % 3];
        remat_plan_buf *b = xcalloc((size_t)n, sizeof *b);
        for (int32_t i = 0; i < n; i++) {
            int kind = (int)(next_u64() % 10);
            b[i].size = kind == 0 ? 0 : kind < 3 ? 1 + next_u64() % 16 : 1 + next_u64() % 5000;
            b[i].first = (int32_t)(next_u64() % (uint64_t)horizon);
            /* mostly short lifetimes, some long ones (residuals) */
            int32_t span = next_u64() % 4 ? (int32_t)(next_u64() % 4) : (int32_t)(next_u64() % (uint64_t)horizon);
            b[i].last = b[i].first + span;
            b[i].offset = (size_t)-1;
        }
        size_t arena = remat_plan_offsets(b, n, align);
        check_plan(b, n, align, arena);
        free(b);
    }
    /* many buffers written by the same instruction (scratch + output) */
    remat_plan_buf same[5] = {{.size = 100, .first = 3, .last = 3}, {.size = 7, .first = 3, .last = 9},
                              {.size = 64, .first = 3, .last = 4}, {.size = 1, .first = 0, .last = 3},
                              {.size = 300, .first = 4, .last = 4}};
    check_plan(same, 5, 64, remat_plan_offsets(same, 5, 64));
}

static void test_exec_planner_is_tight_for_a_chain(void **state)
{
    enum { N = 50 };
    remat_plan_buf b[N];
    /* a chain: buffer i written by instruction i, read by i + 1 */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = 1000, .first = i, .last = i + 1};
    assert_int_equal(remat_plan_offsets(b, N, 64), 2 * round_up(1000, 64));
    check_plan(b, N, 64, 2 * round_up(1000, 64));
    /* the last buffer read by nobody (last == first) */
    b[N - 1].last = N - 1;
    assert_int_equal(remat_plan_offsets(b, N, 64), 2 * round_up(1000, 64));
    /* shrinking sizes: the peak is the first pair */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = (size_t)(64 * (N - i)), .first = i, .last = i + 1};
    assert_int_equal(remat_plan_offsets(b, N, 64), (size_t)64 * (2 * N - 1));
    /* a chain beside one buffer alive throughout (a residual) */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = 128, .first = i, .last = i + 1};
    b[0].last = N;
    assert_int_equal(remat_plan_offsets(b, N, 64), 3 * 128);
    check_plan(b, N, 64, 3 * 128);
    /* disjoint lifetimes share everything */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = (size_t)(1 + i * 10), .first = 2 * i, .last = 2 * i + 1};
    assert_int_equal(remat_plan_offsets(b, N, 8), round_up(1 + (N - 1) * 10, 8));
}

/* The compiled plan of a chain of elementwise ops is tight too: two live
 * buffers of the chain's element size (outputs go to the caller). */
static void test_exec_compiled_chain_uses_two_buffers(void **state)
{
    int64_t d[1] = {1000};
    remat_fn *f = remat_fn_new("chain");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, d);
    for (int i = 0; i < 20; i++)
        x = i % 2 ? remat_sin(f, x) : remat_exp(f, x);
    remat_fn_output(f, remat_sum_all(f, x));
    /* unfused (the planner's case); fused, the chain is one instruction
     * writing one buffer (test_exec_fusion_*) */
    setenv("REMAT_NO_FUSION", "1", 1);
    remat_program *p = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    assert_int_equal(plan.arena_bytes, 2 * round_up(1000 * sizeof(double), 64));
    remat_program *pf = compile_ok(f);
    remat_memory_plan plan_f;
    remat_program_plan(pf, &plan_f);
    assert_int_equal(plan_f.arena_bytes, round_up(1000 * sizeof(double), 64));
    assert_int_equal(plan_f.instructions, 21);
    remat_program_free(pf);
    assert_int_equal(plan.instructions, 21);
    double *xv = xcalloc(1000, sizeof *xv);
    remat_tensor in = remat_tensor_f64(xv, 1, d);
    outs_t o;
    remat_stats st;
    run_prog(p, 1, &in, &o, &st);
    assert_int_equal(st.peak_arena_bytes, plan.arena_bytes);
    assert_int_equal(st.ops_executed, 21);
    assert_int_equal(st.op_counts[REMAT_OP_SIN], 10);
    assert_int_equal(st.op_counts[REMAT_OP_EXP], 10);
    assert_int_equal(st.recomputed_ops, 0);
    outs_free(&o);
    free(xv);
    remat_program_free(p);
    remat_fn_free(f);
}

/* ==== determinism ==== */

static remat_fn *mlp_loss(remat_dtype dt)
{
    remat_fn *f = remat_fn_new("mlp");
    remat_val x = remat_arg(f, "x", dt, 2, ((int64_t[]){64, 48}));
    remat_val w1 = remat_arg(f, "w1", dt, 2, ((int64_t[]){48, 96}));
    remat_val w2 = remat_arg(f, "w2", dt, 2, ((int64_t[]){96, 10}));
    remat_val h = remat_tanh(f, remat_matmul(f, x, w1));
    remat_val o = remat_matmul(f, h, w2);
    remat_fn_output(f, remat_sum_all(f, remat_square(f, o)));
    return f;
}

static void test_exec_compile_and_run_are_deterministic(void **state)
{
    for (int dti = 0; dti < 2; dti++) {
        remat_dtype dt = dti ? REMAT_F64 : REMAT_F32;
        remat_fn *f = mlp_loss(dt);
        remat_fn *ck = remat_checkpoint(f, remat_dots_saveable);
        remat_fn *g = NULL;
        assert_int_equal(remat_value_and_grad(ck, 0, NULL, &g), REMAT_OK);
        remat_program *p1 = compile_ok(g), *p2 = compile_ok(g);
        remat_tensor in[3];
        for (int i = 0; i < 3; i++) {
            in[i] = remat_program_input_desc(p1, i);
            int64_t n = remat_shape_numel(&in[i].shape);
            in[i].data = xcalloc((size_t)n, remat_dtype_size(dt));
            for (int64_t j = 0; j < n; j++) {
                double v = urand(-0.5, 0.5);
                if (dt == REMAT_F64)
                    ((double *)in[i].data)[j] = v;
                else
                    ((float *)in[i].data)[j] = (float)v;
            }
        }
        outs_t a, b, c;
        remat_stats sa, sb;
        run_prog(p1, 3, in, &a, &sa);
        run_prog(p1, 3, in, &b, &sb);
        run_prog(p2, 3, in, &c, NULL);
        assert_int_equal(a.n, 4);
        for (int k = 0; k < a.n; k++) {
            size_t bytes = tbytes(a.t[k].dtype, &a.t[k].shape);
            assert_memory_equal(a.t[k].data, b.t[k].data, bytes);
            assert_memory_equal(a.t[k].data, c.t[k].data, bytes);
        }
        assert_int_equal(sa.peak_arena_bytes, sb.peak_arena_bytes);
        assert_int_equal(sa.ops_executed, sb.ops_executed);
        remat_memory_plan pa, pb;
        remat_program_plan(p1, &pa);
        remat_program_plan(p2, &pb);
        assert_memory_equal(&pa, &pb, sizeof pa);
        /* a program binds its inputs per run: new inputs, new answers */
        float *x0 = in[0].data;
        double *xd = in[0].data;
        if (dt == REMAT_F64)
            xd[0] += 0.25;
        else
            x0[0] += 0.25f;
        outs_free(&b);
        run_prog(p1, 3, in, &b, NULL);
        assert_true(memcmp(a.t[0].data, b.t[0].data, remat_dtype_size(dt)) != 0);
        outs_free(&a), outs_free(&b), outs_free(&c);
        for (int i = 0; i < 3; i++)
            free(in[i].data);
        remat_program_free(p1), remat_program_free(p2);
        remat_fn_free(g), remat_fn_free(ck), remat_fn_free(f);
    }
}

/* ==== outputs with unusual storage ==== */

static void test_exec_outputs_that_are_arguments_constants_repeats_and_aliases(void **state)
{
    int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d6[1] = {6}, d22[2] = {2, 2};
    static const double cdata[4] = {1.5, -2.0, 3.25, 8.0};
    remat_fn *f = remat_fn_new("storage");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, d23);
    remat_val xs = remat_arg(f, "unused", REMAT_F64, 1, d6);
    remat_val y = remat_sin(f, x);
    remat_fn_output(f, x);                                        /* 0: an argument */
    remat_fn_output(f, remat_const_data(f, REMAT_F64, 2, d22, cdata)); /* 1: a constant */
    remat_fn_output(f, y);                                        /* 2: computed */
    remat_fn_output(f, y);                                        /* 3: the same again */
    remat_fn_output(f, remat_reshape(f, y, 2, d32));              /* 4: an alias of a computed value */
    remat_fn_output(f, remat_name(f, y, "tag"));                  /* 5: another alias */
    remat_fn_output(f, remat_reshape(f, x, 1, d6));               /* 6: an alias of an argument */
    remat_fn_output(f, remat_const_fill(f, REMAT_F64, 2, d22, 2.5)); /* 7: a splat */
    remat_fn_output(f, remat_transpose(f, y, ((int[]){1, 0})));  /* 8: computed from y */
    remat_fn_output(f, x);                                        /* 9: the argument again */
    remat_fn_output(f, xs);                                       /* 10: an argument nothing reads */
    remat_fn_output(f, remat_mul(f, remat_reshape(f, y, 2, d32), remat_reshape(f, y, 2, d32))); /* 11 */
    double xv[6] = {0.5, -1.0, 2.0, 0.0, 3.0, -0.25}, uv[6] = {9, 8, 7, 6, 5, 4};
    remat_tensor in[2] = {remat_tensor_f64(xv, 2, d23), remat_tensor_f64(uv, 1, d6)};
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL);
    assert_int_equal(o.n, 12);
    double sy[6], syt[6], sq[6], splat[4] = {2.5, 2.5, 2.5, 2.5};
    for (int i = 0; i < 6; i++)
        sy[i] = sin(xv[i]), sq[i] = sy[i] * sy[i];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++)
            syt[r * 2 + c] = sy[c * 3 + r];
    expect_dims(&o.t[0], REMAT_F64, 2, d23), expect_f64("arg", &o.t[0], 6, xv, 0);
    expect_dims(&o.t[1], REMAT_F64, 2, d22), expect_f64("const", &o.t[1], 4, cdata, 0);
    expect_f64("sin", &o.t[2], 6, sy, 1e-15);
    expect_f64("sin again", &o.t[3], 6, sy, 1e-15);
    expect_dims(&o.t[4], REMAT_F64, 2, d32), expect_f64("reshape", &o.t[4], 6, sy, 1e-15);
    expect_dims(&o.t[5], REMAT_F64, 2, d23), expect_f64("name", &o.t[5], 6, sy, 1e-15);
    expect_dims(&o.t[6], REMAT_F64, 1, d6), expect_f64("arg reshape", &o.t[6], 6, xv, 0);
    expect_f64("splat", &o.t[7], 4, splat, 0);
    expect_dims(&o.t[8], REMAT_F64, 2, d32), expect_f64("transpose", &o.t[8], 6, syt, 1e-15);
    expect_f64("arg again", &o.t[9], 6, xv, 0);
    expect_f64("unused arg", &o.t[10], 6, uv, 0);
    expect_f64("square of alias", &o.t[11], 6, sq, 1e-15);
    /* the repeated outputs are the same bits */
    assert_memory_equal(o.t[2].data, o.t[3].data, sizeof sy);
    assert_memory_equal(o.t[2].data, o.t[4].data, sizeof sy);
    outs_free(&o);
    remat_fn_free(f);

    /* aliases of values that live in the arena (not outputs themselves),
     * with later work that would like to reuse their memory */
    f = remat_fn_new("arena_alias");
    x = remat_arg(f, "x", REMAT_F64, 2, d23);
    y = remat_sin(f, x);
    remat_fn_output(f, remat_reshape(f, y, 1, d6));
    remat_fn_output(f, remat_name(f, remat_cos(f, x), "c"));
    remat_val z = x;
    for (int i = 0; i < 6; i++)
        z = remat_mul_scalar(f, remat_exp(f, remat_neg(f, z)), 0.5);
    remat_fn_output(f, remat_sum_all(f, z));
    run_fn(f, 1, in, &o, NULL, NULL);
    double cy[6], zs = 0;
    for (int i = 0; i < 6; i++) {
        double zi = xv[i];
        for (int k = 0; k < 6; k++)
            zi = exp(-zi) * 0.5;
        zs += zi;
        cy[i] = cos(xv[i]);
    }
    expect_dims(&o.t[0], REMAT_F64, 1, d6), expect_f64("reshape of an arena value", &o.t[0], 6, sy, 1e-15);
    expect_dims(&o.t[1], REMAT_F64, 2, d23), expect_f64("name of an arena value", &o.t[1], 6, cy, 1e-15);
    expect_f64("later work", &o.t[2], 1, &zs, 1e-14);
    outs_free(&o);
    remat_fn_free(f);

    /* the gradient of an argument that is also an output */
    f = remat_fn_new("pass");
    x = remat_arg(f, "x", REMAT_F64, 1, d6);
    remat_fn_output(f, remat_sum_all(f, remat_mul_scalar(f, x, 3.0)));
    remat_fn *g = NULL;
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &g), REMAT_OK);
    remat_tensor t6 = remat_tensor_f64(xv, 1, d6);
    run_fn(g, 1, &t6, &o, NULL, NULL);
    double three[6] = {3, 3, 3, 3, 3, 3}, sum3 = 3 * (0.5 - 1.0 + 2.0 + 0.0 + 3.0 - 0.25);
    expect_f64("value", &o.t[0], 1, &sum3, 1e-15);
    expect_f64("grad of a linear map (a splat)", &o.t[1], 6, three, 0);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* ==== degenerate shapes ==== */

static void test_exec_zero_size_tensors(void **state)
{
    int64_t d03[2] = {0, 3}, d3[1] = {3}, d13[2] = {1, 3}, d32[2] = {3, 2}, d20[2] = {2, 0}, d03b[2] = {0, 3};
    remat_fn *f = remat_fn_new("empty");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, d03);
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_val m = remat_arg(f, "m", REMAT_F64, 2, d32);
    remat_val e = remat_arg(f, "e", REMAT_F64, 2, d20);
    remat_val e2 = remat_arg(f, "e2", REMAT_F64, 2, d03b);
    int ax0[1] = {0};
    remat_fn_output(f, remat_sum(f, x, 1, ax0));                                  /* 0: [3] zeros */
    remat_fn_output(f, remat_mul_scalar(f, remat_exp(f, x), 2.0));                /* 1: [0,3] */
    remat_fn_output(f, remat_concatenate(f, 2, ((remat_val[]){x, remat_reshape(f, y, 2, d13)}), 0)); /* 2: y */
    remat_fn_output(f, remat_matmul(f, x, m));                                    /* 3: [0,2] */
    remat_fn_output(f, remat_matmul(f, e, e2));                                   /* 4: [2,3] zeros */
    remat_fn_output(f, remat_sum_all(f, x));                                      /* 5: scalar 0 */
    double yv[3] = {1, -2, 4}, mv[6] = {1, 2, 3, 4, 5, 6};
    remat_tensor in[5] = {remat_tensor_f64(NULL, 2, d03), remat_tensor_f64(yv, 1, d3), remat_tensor_f64(mv, 2, d32),
                          remat_tensor_f64(NULL, 2, d20), remat_tensor_f64(NULL, 2, d03b)};
    outs_t o;
    remat_stats st;
    run_fn(f, 5, in, &o, &st, NULL);
    double z[6] = {0};
    expect_dims(&o.t[0], REMAT_F64, 1, d3), expect_f64("sum of empty", &o.t[0], 3, z, 0);
    expect_dims(&o.t[1], REMAT_F64, 2, d03);
    expect_dims(&o.t[2], REMAT_F64, 2, d13), expect_f64("concat with empty", &o.t[2], 3, yv, 0);
    expect_dims(&o.t[3], REMAT_F64, 2, ((int64_t[]){0, 2}));
    expect_dims(&o.t[4], REMAT_F64, 2, ((int64_t[]){2, 3})), expect_f64("empty contraction", &o.t[4], 6, z, 0);
    expect_dims(&o.t[5], REMAT_F64, 0, NULL), expect_f64("sum_all of empty", &o.t[5], 1, z, 0);
    outs_free(&o);
    remat_fn_free(f);

    /* gradients through empty values: empty for x, 2y for y */
    f = remat_fn_new("empty_grad");
    x = remat_arg(f, "x", REMAT_F64, 2, d03);
    y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_val c = remat_concatenate(f, 2, ((remat_val[]){x, remat_reshape(f, y, 2, d13)}), 0);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_square(f, c)), remat_sum_all(f, remat_sin(f, x))));
    remat_fn *g = grad_ok(f, 0, NULL);
    remat_fn *ck = remat_checkpoint(f, NULL), *gc = grad_ok(ck, 0, NULL);
    for (int k = 0; k < 2; k++) {
        run_fn(k ? gc : g, 2, in, &o, NULL, NULL);
        expect_dims(&o.t[0], REMAT_F64, 2, d03);
        double want[3] = {2, -4, 8};
        expect_f64("d/dy", &o.t[1], 3, want, 0);
        outs_free(&o);
    }
    remat_fn_free(gc), remat_fn_free(ck), remat_fn_free(g), remat_fn_free(f);
}

static void test_exec_rank0_scalars(void **state)
{
    remat_fn *f = remat_fn_new("scalars");
    remat_val a = remat_arg(f, "a", REMAT_F64, 0, NULL), b = remat_arg(f, "b", REMAT_F64, 0, NULL);
    remat_val v = remat_add(f, remat_mul(f, a, b), remat_sin(f, a));
    remat_fn_output(f, v);
    remat_fn *g = NULL;
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &g), REMAT_OK);
    double av = 0.7, bv = -1.3;
    remat_tensor in[2] = {remat_tensor_f64(&av, 0, NULL), remat_tensor_f64(&bv, 0, NULL)};
    outs_t o;
    run_fn(g, 2, in, &o, NULL, NULL);
    assert_int_equal(o.n, 3);
    for (int k = 0; k < 3; k++)
        expect_dims(&o.t[k], REMAT_F64, 0, NULL);
    double want[3] = {av * bv + sin(av), bv + cos(av), av};
    for (int k = 0; k < 3; k++)
        expect_f64("scalar", &o.t[k], 1, &want[k], 1e-15);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* a scalar broadcast against a vector, and a constant scalar output, in f32 */
    f = remat_fn_new("bcast");
    a = remat_arg(f, "a", REMAT_F32, 0, NULL);
    remat_val x = remat_arg(f, "x", REMAT_F32, 1, ((int64_t[]){4}));
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, a, x)));
    remat_fn_output(f, remat_scalar(f, REMAT_F32, 0.5));
    float af = 2.0f, xf[4] = {1, 2, 3, 4};
    remat_tensor inf[2] = {remat_tensor_f32(&af, 0, NULL), remat_tensor_f32(xf, 1, ((int64_t[]){4}))};
    run_fn(f, 2, inf, &o, NULL, NULL);
    assert_true(*(float *)o.t[0].data == 20.0f);
    assert_true(*(float *)o.t[1].data == 0.5f);
    outs_free(&o);
    remat_fn_free(f);
}

/* rank 8: transpose by the reversed permutation, partial sums, broadcasting
 * back, and the gradient, each checked by index arithmetic written here. */
static void unravel(const int64_t *dims, int rank, int64_t flat, int64_t *idx)
{
    for (int i = rank - 1; i >= 0; i--) {
        idx[i] = flat % dims[i];
        flat /= dims[i];
    }
}

static int64_t ravel(const int64_t *dims, int rank, const int64_t *idx)
{
    int64_t f = 0;
    for (int i = 0; i < rank; i++)
        f = f * dims[i] + idx[i];
    return f;
}

static void test_exec_rank8_tensors(void **state)
{
    enum { R = 8 };
    const int64_t d[R] = {2, 1, 3, 1, 2, 1, 2, 2}; /* 48 elements */
    int64_t dt[R], ds[R - 2];
    int perm[R];
    for (int i = 0; i < R; i++)
        perm[i] = R - 1 - i, dt[i] = d[R - 1 - i];
    int axes[2] = {0, 4}, ns = 0;
    for (int i = 0; i < R; i++)
        if (i != 0 && i != 4)
            ds[ns++] = d[i];
    const int64_t n = 48;
    double xv[48], wv[48];
    for (int i = 0; i < n; i++)
        xv[i] = urand(-2, 2), wv[i] = urand(-1, 1);
    remat_fn *f = remat_fn_new("rank8");
    remat_val x = remat_arg(f, "x", REMAT_F64, R, d);
    remat_val w = remat_arg(f, "w", REMAT_F64, R, dt);
    remat_val t = remat_transpose(f, x, perm);
    remat_val s = remat_sum(f, x, 2, axes);
    int bd[R - 2];
    for (int i = 0, k = 0; i < R; i++)
        if (i != 0 && i != 4)
            bd[k++] = i;
    remat_val bb = remat_broadcast_in_dim(f, s, R, d, bd);
    remat_fn_output(f, t);
    remat_fn_output(f, s);
    remat_fn_output(f, bb);
    remat_fn_output(f, x);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, w, remat_sin(f, t)))); /* loss */
    remat_tensor in[2] = {remat_tensor_f64(xv, R, d), remat_tensor_f64(wv, R, dt)};
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL);
    expect_dims(&o.t[0], REMAT_F64, R, dt);
    expect_dims(&o.t[1], REMAT_F64, R - 2, ds);
    expect_dims(&o.t[2], REMAT_F64, R, d);
    expect_dims(&o.t[3], REMAT_F64, R, d);
    double want_t[48], want_s[12] = {0}, want_b[48], want_g[48], loss = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t idx[R], tidx[R], sidx[R - 2];
        unravel(d, R, i, idx);
        for (int k = 0; k < R; k++)
            tidx[k] = idx[perm[k]];
        int64_t ti = ravel(dt, R, tidx);
        want_t[ti] = xv[i];
        for (int k = 0, m = 0; k < R; k++)
            if (k != 0 && k != 4)
                sidx[m++] = idx[k];
        want_s[ravel(ds, R - 2, sidx)] += xv[i];
        want_g[i] = wv[ti] * cos(xv[i]); /* d/dx sum(w * sin(transpose x)) */
        loss += wv[ti] * sin(xv[i]);
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t idx[R], sidx[R - 2];
        unravel(d, R, i, idx);
        for (int k = 0, m = 0; k < R; k++)
            if (k != 0 && k != 4)
                sidx[m++] = idx[k];
        want_b[i] = want_s[ravel(ds, R - 2, sidx)];
    }
    expect_f64("rank-8 transpose", &o.t[0], n, want_t, 0);
    expect_f64("rank-8 sum", &o.t[1], 12, want_s, 1e-15);
    expect_f64("rank-8 broadcast", &o.t[2], n, want_b, 1e-15);
    expect_f64("rank-8 argument", &o.t[3], n, xv, 0);
    expect_f64("rank-8 loss", &o.t[4], 1, &loss, 1e-13);
    outs_free(&o);
    remat_fn_free(f);

    /* its gradient, through a rank-8 transpose and reshape */
    f = remat_fn_new("rank8_loss");
    x = remat_arg(f, "x", REMAT_F64, R, d);
    w = remat_arg(f, "w", REMAT_F64, R, dt);
    t = remat_reshape(f, remat_transpose(f, x, perm), R, dt);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, w, remat_sin(f, t))));
    remat_fn *g = grad_ok(f, 1, ((int[]){0}));
    run_fn(g, 2, in, &o, NULL, NULL);
    expect_dims(&o.t[0], REMAT_F64, R, d);
    expect_f64("rank-8 grad", &o.t[0], n, want_g, 1e-15);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* beyond rank 8: a build error, not a crash */
    int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
    f = remat_fn_new("rank9");
    assert_int_equal(remat_arg(f, "x", REMAT_F64, 9, d9), REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_SHAPE);
    remat_fn_free(f);
}

/* ==== the program's signature ==== */

/* Contiguous slices (a row of a (3,B) array, one element of a vector) are
 * views, strided and interior ones copies: all give the right values, whether
 * the operand is an argument, an arena value or a constant, and whether the
 * slice is an output or feeds another op. */
static void test_exec_slice_views_and_copies(void **state)
{
    (void)state;
    double xv[12], cv[12];
    for (int i = 0; i < 12; i++)
        xv[i] = i + 1, cv[i] = 100 + i;
    remat_fn *f = remat_fn_new("views");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){3, 4}));
    remat_val c = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){3, 4}), cv);
    remat_val row1 = remat_index(f, x, 1);                                            /* view of an input */
    remat_val y = remat_mul_scalar(f, x, 2.0);                                        /* arena */
    remat_val row2 = remat_index(f, y, 2);                                            /* view of arena */
    remat_val el = remat_index(f, remat_index(f, c, 0), 3);                           /* view of a constant */
    remat_val col = remat_slice(f, x, ((int64_t[]){0, 1}), ((int64_t[]){3, 2}), NULL); /* strided: a copy */
    remat_val mid = remat_slice(f, y, ((int64_t[]){1, 0}), ((int64_t[]){3, 4}), NULL); /* rows 1..2: a view */
    remat_fn_output(f, row1);
    remat_fn_output(f, remat_add(f, row2, remat_broadcast_to(f, el, 1, ((int64_t[]){4}))));
    remat_fn_output(f, col);
    remat_fn_output(f, remat_sum_all(f, mid));
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    remat_program *p = NULL;
    assert_int_equal(remat_compile(f, remat_backend_cpu(), &p), REMAT_OK);
    double o1[4], o2[4], o3[3], o4;
    remat_tensor in = remat_tensor_f64(xv, 2, ((int64_t[]){3, 4}));
    remat_tensor out[4] = {remat_tensor_f64(o1, 1, ((int64_t[]){4})), remat_tensor_f64(o2, 1, ((int64_t[]){4})),
                           remat_tensor_f64(o3, 2, ((int64_t[]){3, 1})), remat_tensor_f64(&o4, 0, NULL)};
    assert_int_equal(remat_run(p, 1, &in, 4, out, NULL), REMAT_OK);
    double sum_mid = 0;
    for (int i = 4; i < 12; i++)
        sum_mid += 2.0 * xv[i];
    for (int j = 0; j < 4; j++) {
        assert_true(o1[j] == xv[4 + j]);
        assert_true(o2[j] == 2.0 * xv[8 + j] + cv[3]);
    }
    for (int i = 0; i < 3; i++)
        assert_true(o3[i] == xv[4 * i + 1]);
    assert_true(fabs(o4 - sum_mid) < 1e-12);
    remat_program_free(p);
    remat_fn_free(f);
}

static void test_exec_program_input_output_descriptors(void **state)
{
    remat_fn *f = remat_fn_new("sig");
    remat_val a = remat_arg(f, "a", REMAT_F32, 2, ((int64_t[]){3, 4}));
    remat_val b = remat_arg(f, "b", REMAT_F64, 1, ((int64_t[]){4}));
    remat_val c = remat_arg(f, "c", REMAT_F64, 0, NULL);
    remat_val ad = remat_convert(f, a, REMAT_F64);
    remat_fn_output(f, remat_mul(f, ad, b));                          /* f64[3,4] */
    remat_fn_output(f, remat_convert(f, remat_sum_all(f, ad), REMAT_F32)); /* f32[] */
    remat_fn_output(f, c);                                            /* f64[] */
    remat_fn_output(f, remat_transpose(f, a, ((int[]){1, 0})));       /* f32[4,3] */
    remat_program *p = compile_ok(f);
    assert_int_equal(remat_program_num_inputs(p), 3);
    assert_int_equal(remat_program_num_outputs(p), 4);
    const struct {
        remat_dtype dt;
        int rank;
        int64_t dims[2];
    } ins[3] = {{REMAT_F32, 2, {3, 4}}, {REMAT_F64, 1, {4}}, {REMAT_F64, 0, {0}}},
      outs[4] = {{REMAT_F64, 2, {3, 4}}, {REMAT_F32, 0, {0}}, {REMAT_F64, 0, {0}}, {REMAT_F32, 2, {4, 3}}};
    for (int i = 0; i < 3; i++) {
        remat_tensor t = remat_program_input_desc(p, i);
        expect_dims(&t, ins[i].dt, ins[i].rank, ins[i].dims);
        assert_null(t.data);
    }
    for (int i = 0; i < 4; i++) {
        remat_tensor t = remat_program_output_desc(p, i);
        expect_dims(&t, outs[i].dt, outs[i].rank, outs[i].dims);
        assert_null(t.data);
    }
    float av[12];
    double bv[4] = {1, 2, 3, 4}, cv = 42;
    for (int i = 0; i < 12; i++)
        av[i] = (float)i / 4;
    remat_tensor in[3] = {remat_tensor_f32(av, 2, ((int64_t[]){3, 4})), remat_tensor_f64(bv, 1, ((int64_t[]){4})),
                          remat_tensor_f64(&cv, 0, NULL)};
    outs_t o;
    run_prog(p, 3, in, &o, NULL);
    double prod[12], sum = 0;
    for (int i = 0; i < 12; i++)
        prod[i] = (double)av[i] * bv[i % 4], sum += av[i];
    expect_f64("broadcast product", &o.t[0], 12, prod, 0);
    assert_true(*(float *)o.t[1].data == (float)sum);
    assert_true(*(double *)o.t[2].data == 42);
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < 3; k++)
            assert_true(((float *)o.t[3].data)[r * 3 + k] == av[k * 4 + r]);
    outs_free(&o);
    remat_program_free(p);

    /* the descriptors of a VJP: f's arguments, then one cotangent per output */
    remat_fn *g = NULL;
    assert_int_equal(remat_vjp(f, 1, ((int[]){0}), &g), REMAT_OK);
    p = compile_ok(g);
    assert_int_equal(remat_program_num_inputs(p), 3 + 4);
    assert_int_equal(remat_program_num_outputs(p), 4 + 1);
    for (int i = 0; i < 4; i++) {
        remat_tensor t = remat_program_input_desc(p, 3 + i);
        expect_dims(&t, outs[i].dt, outs[i].rank, outs[i].dims);
    }
    remat_tensor t = remat_program_output_desc(p, 4);
    expect_dims(&t, REMAT_F32, 2, ((int64_t[]){3, 4}));
    remat_program_free(p);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* ==== elementwise fusion ==== */

/* f compiled with and without fusion (REMAT_NO_FUSION=1) and run on the same
 * inputs: the same bits in every output, the same primitive-op counts, the
 * arena peak measured as planned, and no more arena than unfused. Returns
 * how many of the fused program's ops run inside another's instruction. */
static int32_t check_fused_bits(const remat_fn *f, int n_in, const remat_tensor *in)
{
    setenv("REMAT_NO_FUSION", "1", 1);
    remat_program *pu = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    remat_program *pf = compile_ok(f);
    assert_int_equal(pu->n_fused, 0);
    outs_t ou, of;
    remat_stats su, sf;
    remat_memory_plan lu, lf;
    run_prog(pu, n_in, in, &ou, &su);
    run_prog(pf, n_in, in, &of, &sf);
    remat_program_plan(pu, &lu);
    remat_program_plan(pf, &lf);
    assert_int_equal(ou.n, of.n);
    for (int i = 0; i < ou.n; i++) {
        size_t bytes = (size_t)remat_shape_numel(&ou.t[i].shape) * remat_dtype_size(ou.t[i].dtype);
        if (memcmp(ou.t[i].data, of.t[i].data, bytes) != 0)
            fail_msg("output %d: fused bits differ from unfused", i);
    }
    assert_int_equal(lf.instructions, lu.instructions);
    assert_int_equal(sf.ops_executed, su.ops_executed);
    assert_int_equal(sf.ops_executed, lf.instructions);
    assert_int_equal(sf.recomputed_ops, su.recomputed_ops);
    for (int k = 0; k < REMAT_OP_COUNT; k++)
        assert_int_equal(sf.op_counts[k], su.op_counts[k]);
    assert_int_equal(sf.peak_arena_bytes, lf.arena_bytes);
    assert_int_equal(su.peak_arena_bytes, lu.arena_bytes);
    assert_true(lf.arena_bytes <= lu.arena_bytes);
    assert_int_equal(pf->n_instrs + pf->n_fused, pu->n_instrs);
    int32_t fused = pf->n_fused;
    outs_free(&ou);
    outs_free(&of);
    remat_program_free(pu);
    remat_program_free(pf);
    return fused;
}

/* n = 1000: three whole blocks of 256 and a partial one; NaN, infinities,
 * signed zeros, negatives (log, sqrt, pow of them give NaN) */
enum { FUSE_N = 1000 };

static void fill_special(double *x, int64_t n, double scale)
{
    static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, -1.5, 1.0, 2.0};
    for (int64_t i = 0; i < n; i++)
        x[i] = i % 17 < 8 ? special[i % 17] : scale * urand(-2.0, 2.0);
}

static void test_exec_fusion_chain_matches_unfused_bits(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
        int64_t d[1] = {FUSE_N};
        remat_fn *f = remat_fn_new("fuse_chain");
        remat_val x = remat_arg(f, "x", T, 1, d), y = remat_arg(f, "y", T, 1, d);
        remat_val t = remat_add(f, remat_mul(f, x, y), remat_exp(f, x));
        t = remat_div(f, remat_sin(f, t), remat_add(f, remat_cos(f, y), remat_tanh(f, t)));
        t = remat_sub(f, remat_integer_pow(f, t, 3), remat_integer_pow(f, y, 7));
        t = remat_add(f, remat_integer_pow(f, t, -2), remat_pow(f, remat_square(f, x), 1.5));
        t = remat_max(f, remat_relu(f, t), remat_log(f, y));
        t = remat_min(f, remat_sqrt(f, t), remat_neg(f, x));
        t = remat_add(f, remat_integer_pow(f, t, 0), remat_integer_pow(f, t, -1));
        remat_fn_output(f, t);
        void *xv = xcalloc(FUSE_N, sizeof(double)), *yv = xcalloc(FUSE_N, sizeof(double));
        double tmp[FUSE_N];
        fill_special(tmp, FUSE_N, 1.0);
        for (int i = 0; i < FUSE_N; i++) {
            if (T == REMAT_F64)
                ((double *)xv)[i] = tmp[i];
            else
                ((float *)xv)[i] = (float)tmp[i];
        }
        fill_special(tmp, FUSE_N, 3.0);
        for (int i = 0; i < FUSE_N; i++) {
            if (T == REMAT_F64)
                ((double *)yv)[(i * 7) % FUSE_N] = tmp[i];
            else
                ((float *)yv)[(i * 7) % FUSE_N] = (float)tmp[i];
        }
        remat_tensor in[2] = {{.dtype = T, .shape = {.rank = 1, .dims = {FUSE_N}}, .data = xv},
                              {.dtype = T, .shape = {.rank = 1, .dims = {FUSE_N}}, .data = yv}};
        /* everything but the root runs inside one instruction */
        assert_true(check_fused_bits(f, 2, in) > 20);
        free(xv);
        free(yv);
        remat_fn_free(f);
    }
}

/* splat constants read as scalars on either side of a binary op and as
 * select's branches; compares feeding selects; NaN operands of compares
 * (all false but NE) and of max/min */
static void test_exec_fusion_scalar_operands_selects_compares(void **state)
{
    (void)state;
    int64_t d[2] = {4, FUSE_N / 4};
    remat_fn *f = remat_fn_new("fuse_scalar");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, d), y = remat_arg(f, "y", REMAT_F64, 2, d);
    remat_val two = remat_const_fill(f, REMAT_F64, 2, d, 2.0), zero = remat_const_fill(f, REMAT_F64, 2, d, 0.0);
    remat_val nan = remat_const_fill(f, REMAT_F64, 2, d, NAN);
    remat_val a = remat_sub(f, two, remat_mul(f, x, two));            /* scalar on the left, then right */
    remat_val b = remat_div(f, remat_mul_scalar(f, y, 0.1), two);     /* a rank-0 scalar operand */
    remat_val m = remat_select(f, remat_gt(f, a, b), zero, a);        /* scalar on_true */
    m = remat_select(f, remat_le(f, m, y), m, nan);                   /* scalar on_false */
    m = remat_select(f, remat_ne(f, x, x), two, zero);                /* both branches scalar */
    remat_val c = remat_add(f, remat_ge(f, a, y), remat_lt(f, b, x)); /* compares as values */
    c = remat_add(f, c, remat_eq(f, a, remat_min(f, b, nan)));
    c = remat_mul(f, c, remat_select(f, remat_eq(f, x, x), remat_max(f, a, b), m));
    remat_fn_output(f, c);
    double *xv = xcalloc(FUSE_N, sizeof *xv), *yv = xcalloc(FUSE_N, sizeof *yv);
    fill_special(xv, FUSE_N, 1.0);
    fill_special(yv, FUSE_N, 1.0);
    for (int i = 0; i < FUSE_N; i += 3)
        yv[i] = xv[(i * 5) % FUSE_N]; /* ties for the compares */
    remat_tensor in[2] = {remat_tensor_f64(xv, 2, d), remat_tensor_f64(yv, 2, d)};
    assert_true(check_fused_bits(f, 2, in) > 10);
    free(xv);
    free(yv);
    remat_fn_free(f);
}

/* A value read inside a chain and outside it (an output, a reduction, a
 * view) stays materialised: only values read by their group alone fuse. */
static void test_exec_fusion_shared_values_are_not_fused_away(void **state)
{
    (void)state;
    int64_t d[1] = {FUSE_N};
    remat_fn *f = remat_fn_new("fuse_shared");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, d);
    remat_val e = remat_exp(f, x);                       /* an output and read by the chain */
    remat_val s = remat_sin(f, x);                       /* reduced and read by the chain */
    remat_val c = remat_cos(f, x);                       /* viewed (a slice) and read by the chain */
    remat_val t = remat_mul(f, remat_add(f, e, s), c);
    t = remat_sub(f, t, remat_neg(f, remat_square(f, x)));
    remat_fn_output(f, t);
    remat_fn_output(f, e);
    remat_fn_output(f, remat_sum_all(f, s));
    remat_fn_output(f, remat_slice(f, c, (int64_t[]){10}, (int64_t[]){20}, NULL));
    double *xv = xcalloc(FUSE_N, sizeof *xv);
    fill_special(xv, FUSE_N, 1.0);
    remat_tensor in = remat_tensor_f64(xv, 1, d);
    /* add, mul, square and neg fuse into the root sub; exp, sin, cos do not */
    assert_int_equal(check_fused_bits(f, 1, &in), 4);
    outs_t o;
    run_fn(f, 1, &in, &o, NULL, NULL);
    const double *tv = o.t[0].data, *ev = o.t[1].data, *cv = o.t[3].data;
    for (int i = 0; i < FUSE_N; i++) {
        double want_e = exp(xv[i]);
        double want_t = (want_e + sin(xv[i])) * cos(xv[i]) - -(xv[i] * xv[i]);
        if (memcmp(&ev[i], &want_e, sizeof want_e) != 0 || memcmp(&tv[i], &want_t, sizeof want_t) != 0)
            fail_msg("element %d: t = %.17g (want %.17g), e = %.17g (want %.17g)", i, tv[i], want_t, ev[i], want_e);
    }
    for (int i = 0; i < 10; i++) {
        double want_c = cos(xv[10 + i]);
        assert_memory_equal(&cv[i], &want_c, sizeof want_c);
    }
    outs_free(&o);
    free(xv);
    remat_fn_free(f);
}

/* a + b * c stays two roundings: the build must not contract it into an
 * fma (ISO C11 mode: -ffp-contract=off), fused or not */
static void test_exec_fusion_does_not_contract_to_fma(void **state)
{
    (void)state;
    int64_t d[1] = {64};
    remat_fn *f = remat_fn_new("fuse_fma");
    remat_val a = remat_arg(f, "a", REMAT_F64, 1, d), b = remat_arg(f, "b", REMAT_F64, 1, d);
    remat_fn_output(f, remat_add(f, remat_mul(f, a, b), remat_neg(f, remat_mul(f, a, b))));
    double av[64], bv[64];
    for (int i = 0; i < 64; i++)
        av[i] = 1.0 + 0x1p-30 * (i + 1), bv[i] = 1.0 - 0x1p-30 * (i + 1);
    remat_tensor in[2] = {remat_tensor_f64(av, 1, d), remat_tensor_f64(bv, 1, d)};
    assert_true(check_fused_bits(f, 2, in) > 0);
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL);
    /* a*b - a*b rounded twice is exactly 0; fma(a, b, -(a*b)) is the rounding error */
    const double *ov = o.t[0].data;
    for (int i = 0; i < 64; i++)
        assert_true(ov[i] == 0.0);
    outs_free(&o);
    remat_fn_free(f);
}

/* ==== in-place concatenate, add of a pad ==== */

/* f compiled with neither fusion nor the in-place rewrites
 * (REMAT_NO_FUSION=1 REMAT_NO_INPLACE=1) and as usual, run on the same
 * inputs: the same bits, primitive-op counts and plan/measured agreement.
 * Returns how many ops the rewrites took out of the unfused program's
 * instructions (REMAT_NO_FUSION=1 alone). */
static int32_t check_inplace_bits(const remat_fn *f, int n_in, const remat_tensor *in)
{
    setenv("REMAT_NO_FUSION", "1", 1);
    setenv("REMAT_NO_INPLACE", "1", 1);
    remat_program *pu = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    remat_program *pn = compile_ok(f); /* fused, not in place */
    unsetenv("REMAT_NO_INPLACE");
    remat_program *pf = compile_ok(f);
    assert_int_equal(pu->n_fused, 0);
    remat_program *ps[3] = {pu, pn, pf};
    outs_t o[3];
    remat_stats st[3];
    remat_memory_plan pl[3];
    for (int i = 0; i < 3; i++) {
        run_prog(ps[i], n_in, in, &o[i], &st[i]);
        remat_program_plan(ps[i], &pl[i]);
        assert_int_equal(st[i].ops_executed, pl[i].instructions);
        assert_int_equal(st[i].ops_executed, st[0].ops_executed);
        assert_int_equal(st[i].recomputed_ops, st[0].recomputed_ops);
        for (int k = 0; k < REMAT_OP_COUNT; k++)
            assert_int_equal(st[i].op_counts[k], st[0].op_counts[k]);
        assert_int_equal(st[i].peak_arena_bytes, pl[i].arena_bytes);
        assert_int_equal(ps[i]->n_instrs + ps[i]->n_fused, pu->n_instrs);
        assert_int_equal(o[i].n, o[0].n);
        for (int j = 0; j < o[0].n; j++) {
            size_t bytes = (size_t)remat_shape_numel(&o[0].t[j].shape) * remat_dtype_size(o[0].t[j].dtype);
            if (memcmp(o[0].t[j].data, o[i].t[j].data, bytes) != 0)
                fail_msg("program %d, output %d: bits differ from the plain program", i, j);
        }
    }
    setenv("REMAT_NO_FUSION", "1", 1);
    remat_program *pi = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    int32_t saved = pu->n_instrs - pi->n_instrs;
    remat_program_free(pi);
    for (int i = 0; i < 3; i++) {
        outs_free(&o[i]);
        remat_program_free(ps[i]);
    }
    return saved;
}

static void fill_t(remat_dtype T, void *dst, int64_t n, double scale)
{
    double *tmp = xcalloc((size_t)n + 1, sizeof *tmp);
    fill_special(tmp, n, scale);
    for (int64_t i = 0; i < n; i++) {
        if (T == REMAT_F64)
            ((double *)dst)[i] = tmp[i];
        else
            ((float *)dst)[i] = (float)tmp[i];
    }
    free(tmp);
}

/* rows of a (3,B) derivative, each computed from a row view of the state,
 * one of them through a reshape from (B,): the concatenate is elided; its
 * rows are read again after it (their storage is its buffer) */
static void test_exec_inplace_concat_rows_of_a_state(void **state)
{
    (void)state;
    enum { B = 300 };
    for (int dt = 0; dt < 2; dt++) {
        remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
        remat_fn *f = remat_fn_new("concat_rows");
        remat_val y = remat_arg(f, "y", T, 2, (int64_t[]){3, B});
        remat_val r[3], d[3];
        for (int i = 0; i < 3; i++)
            r[i] = remat_slice(f, y, (int64_t[]){i, 0}, (int64_t[]){i + 1, B}, (int64_t[]){1, 1});
        d[0] = remat_mul(f, r[0], r[1]);
        d[1] = remat_reshape(f, remat_exp(f, remat_reshape(f, r[1], 1, (int64_t[]){B})), 2, (int64_t[]){1, B});
        d[2] = remat_sub(f, remat_sin(f, r[2]), r[0]);
        remat_val dy = remat_concatenate(f, 3, d, 0);
        remat_val out = remat_add(f, y, remat_mul_scalar(f, dy, 0.25));
        remat_fn_output(f, out);
        remat_fn_output(f, remat_add(f, d[0], d[2]));
        void *yv = xcalloc(3 * B, sizeof(double));
        fill_t(T, yv, 3 * B, 1.0);
        remat_tensor in = {.dtype = T, .shape = {.rank = 2, .dims = {3, B}}, .data = yv};
        assert_true(check_inplace_bits(f, 1, &in) >= 1);
        free(yv);
        remat_fn_free(f);
    }
}

/* elements of a (3,) vector (an ODE right-hand side), and concatenates that
 * must keep their copy: an argument operand, one operand twice, a view, an
 * operand that is an output, an operand placed in an earlier concatenate,
 * and a concatenate along an axis after a leading axis > 1 */
static void test_exec_inplace_concat_vector_and_refusals(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("concat_vec");
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, (int64_t[]){3});
    remat_val m = remat_arg(f, "m", REMAT_F64, 2, (int64_t[]){2, 4});
    remat_val e[3];
    for (int i = 0; i < 3; i++)
        e[i] = remat_slice(f, y, (int64_t[]){i}, (int64_t[]){i + 1}, (int64_t[]){1});
    remat_val a = remat_neg(f, remat_mul(f, e[0], e[1]));
    remat_val b = remat_add(f, e[1], e[2]);
    remat_val c = remat_exp(f, e[2]);
    remat_val v1 = remat_concatenate(f, 3, (remat_val[]){a, b, c}, 0);   /* in place */
    remat_val v2 = remat_concatenate(f, 3, (remat_val[]){a, e[1], y}, 0); /* placed, view, argument */
    remat_val s = remat_sin(f, b);
    remat_val v3 = remat_concatenate(f, 2, (remat_val[]){s, s}, 0);       /* twice */
    remat_val o = remat_cos(f, c);
    remat_val v4 = remat_concatenate(f, 2, (remat_val[]){o, remat_tanh(f, c)}, 0); /* an output */
    remat_val mm = remat_exp(f, m);
    remat_val v5 = remat_concatenate(f, 2, (remat_val[]){mm, remat_sin(f, m)}, 1); /* (2,8): rows interleave */
    remat_fn_output(f, remat_mul(f, v1, y));
    remat_fn_output(f, v2);
    remat_fn_output(f, v3);
    remat_fn_output(f, v4);
    remat_fn_output(f, o);
    remat_fn_output(f, v5);
    double yv[3] = {-0.0, NAN, 0.5}, mv[8] = {1, -2, 0.5, -0.0, NAN, 3, -1, 2};
    remat_tensor in[2] = {remat_tensor_f64(yv, 1, (int64_t[]){3}), remat_tensor_f64(mv, 2, (int64_t[]){2, 4})};
    assert_int_equal(check_inplace_bits(f, 2, in), 1); /* v1 alone */
    remat_fn_free(f);
}

/* add(acc, pad(g)) and add(pad(g), acc) for rows of a (3,B) cotangent, a
 * column of a (B,3) one and a block of a rank-3 array (both left as pad
 * and add: not one contiguous run), an element of a (3,) one and a slab of
 * a rank-3 array, with -0.0 and NaN in both operands: x + 0 outside g, as
 * the pad's zeros gave */
static void test_exec_add_pad_matches_pad_then_add(void **state)
{
    (void)state;
    struct { int rank; int64_t dims[3], gdims[3], low[3]; int absorbed; } cases[] = {
        {2, {3, 257}, {1, 257}, {1, 0}, 2},
        {2, {3, 257}, {1, 257}, {2, 0}, 2},
        {2, {257, 3}, {257, 1}, {0, 2}, 0},
        {1, {3}, {1}, {1}, 2},
        {3, {4, 5, 6}, {2, 3, 2}, {1, 0, 3}, 0},
        {3, {4, 5, 6}, {1, 2, 6}, {2, 3, 0}, 2},
    };
    for (int dt = 0; dt < 2; dt++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int order = 0; order < 2; order++) {
                remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
                int r = cases[c].rank;
                int64_t high[3] = {0}, interior[3] = {0}, n = 1, ng = 1;
                for (int i = 0; i < r; i++) {
                    high[i] = cases[c].dims[i] - cases[c].gdims[i] - cases[c].low[i];
                    n *= cases[c].dims[i];
                    ng *= cases[c].gdims[i];
                }
                remat_fn *f = remat_fn_new("add_pad");
                remat_val x = remat_arg(f, "x", T, r, cases[c].dims);
                remat_val g = remat_arg(f, "g", T, r, cases[c].gdims);
                remat_val acc = remat_mul(f, x, x); /* an arena value */
                remat_val p = remat_pad(f, remat_neg(f, g), cases[c].low, high, interior);
                remat_val s = order ? remat_add(f, p, acc) : remat_add(f, acc, p);
                remat_val p2 = remat_pad(f, remat_exp(f, g), cases[c].low, high, interior);
                remat_fn_output(f, remat_add(f, x, p2)); /* x an argument */
                remat_fn_output(f, s);
                void *xv = xcalloc((size_t)n, sizeof(double)), *gv = xcalloc((size_t)ng, sizeof(double));
                fill_t(T, xv, n, 1.0);
                fill_t(T, gv, ng, 2.0);
                if (T == REMAT_F64) /* -0.0 outside the region: x * x is +0, the argument is not */
                    ((double *)xv)[0] = -0.0;
                else
                    ((float *)xv)[0] = -0.0f;
                remat_tensor in[2] = {{.dtype = T, .shape = remat_shape_make(r, cases[c].dims), .data = xv},
                                      {.dtype = T, .shape = remat_shape_make(r, cases[c].gdims), .data = gv}};
                assert_int_equal(check_inplace_bits(f, 2, in), cases[c].absorbed);
                free(xv);
                free(gv);
                remat_fn_free(f);
            }
}

/* a pad read twice, an output pad, interior padding and an add of two pads:
 * the pad read twice and the interior one stay pads */
static void test_exec_add_pad_refusals_and_two_pads(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("add_pad_refusals");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, (int64_t[]){7});
    remat_val g = remat_arg(f, "g", REMAT_F64, 1, (int64_t[]){3});
    remat_val p = remat_pad(f, g, (int64_t[]){1}, (int64_t[]){3}, (int64_t[]){0});
    remat_val pi = remat_pad(f, g, (int64_t[]){0}, (int64_t[]){2}, (int64_t[]){1});
    remat_val q = remat_pad(f, remat_neg(f, g), (int64_t[]){4}, (int64_t[]){0}, (int64_t[]){0});
    remat_val q2 = remat_pad(f, remat_exp(f, g), (int64_t[]){2}, (int64_t[]){2}, (int64_t[]){0});
    remat_fn_output(f, remat_add(f, x, p));
    remat_fn_output(f, remat_mul(f, p, x));
    remat_fn_output(f, remat_add(f, x, pi));
    remat_fn_output(f, remat_add(f, q, q2)); /* q2 absorbed, q read as x */
    double xv[7] = {-0.0, NAN, 1, -2, -0.0, 3, 0.0}, gv[3] = {-0.0, NAN, 0.5};
    remat_tensor in[2] = {remat_tensor_f64(xv, 1, (int64_t[]){7}), remat_tensor_f64(gv, 1, (int64_t[]){3})};
    assert_int_equal(check_inplace_bits(f, 2, in), 1);
    remat_fn_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_planner_never_overlaps_live_buffers),
        cmocka_unit_test(test_exec_planner_is_tight_for_a_chain),
        cmocka_unit_test(test_exec_compiled_chain_uses_two_buffers),
        cmocka_unit_test(test_exec_compile_and_run_are_deterministic),
        cmocka_unit_test(test_exec_outputs_that_are_arguments_constants_repeats_and_aliases),
        cmocka_unit_test(test_exec_zero_size_tensors),
        cmocka_unit_test(test_exec_rank0_scalars),
        cmocka_unit_test(test_exec_rank8_tensors),
        cmocka_unit_test(test_exec_slice_views_and_copies),
        cmocka_unit_test(test_exec_program_input_output_descriptors),
        cmocka_unit_test(test_exec_fusion_chain_matches_unfused_bits),
        cmocka_unit_test(test_exec_fusion_scalar_operands_selects_compares),
        cmocka_unit_test(test_exec_fusion_shared_values_are_not_fused_away),
        cmocka_unit_test(test_exec_fusion_does_not_contract_to_fma),
        cmocka_unit_test(test_exec_inplace_concat_rows_of_a_state),
        cmocka_unit_test(test_exec_inplace_concat_vector_and_refusals),
        cmocka_unit_test(test_exec_add_pad_matches_pad_then_add),
        cmocka_unit_test(test_exec_add_pad_refusals_and_two_pads),
    };
    rng_seed(0x853c49e6748fea9bull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
