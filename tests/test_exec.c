/*
 * test_exec.c — compiling and running programs: the static arena planner
 * (rmi_plan_offsets, checked pairwise on random lifetimes), determinism,
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

/* rmi_plan_offsets' arena size (it fails only when out of memory) */
static size_t plan_arena(remat_plan_buf *b, int32_t n, size_t align)
{
    size_t arena = (size_t)-1;
    assert_int_equal(rmi_plan_offsets(b, n, align, &arena), REMAT_OK);
    return arena;
}

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
    assert_int_equal(plan_arena(NULL, 0, 64), 0);
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
        size_t arena = plan_arena(b, n, align);
        check_plan(b, n, align, arena);
        free(b);
    }
    /* many buffers written by the same instruction (scratch + output) */
    remat_plan_buf same[5] = {{.size = 100, .first = 3, .last = 3}, {.size = 7, .first = 3, .last = 9},
                              {.size = 64, .first = 3, .last = 4}, {.size = 1, .first = 0, .last = 3},
                              {.size = 300, .first = 4, .last = 4}};
    check_plan(same, 5, 64, plan_arena(same, 5, 64));
}

/* The plain first-fit scan the planner must agree with: buffers by first
 * instruction (ties by index), those dead before it released, then the lowest
 * gap between the live ones (ordered by offset) that fits. O(n^2); the
 * planner gets the same offsets in O(n log n). */
static size_t first_fit_reference(remat_plan_buf *b, int32_t n, size_t align)
{
    int32_t *order = xcalloc((size_t)n + 1, sizeof *order), *act = xcalloc((size_t)n + 1, sizeof *act);
    for (int32_t i = 0; i < n; i++)
        order[i] = i;
    for (int32_t i = 1; i < n; i++) /* insertion sort: stable by first */
        for (int32_t j = i; j > 0 && b[order[j - 1]].first > b[order[j]].first; j--) {
            int32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int32_t na = 0;
    size_t arena = 0;
    for (int32_t k = 0; k < n; k++) {
        remat_plan_buf *x = &b[order[k]];
        size_t size = round_up(x->size, align), off = 0;
        int32_t w = 0, pos = 0;
        for (int32_t i = 0; i < na; i++)
            if (b[act[i]].last >= x->first)
                act[w++] = act[i];
        na = w;
        for (; pos < na; pos++) {
            const remat_plan_buf *a = &b[act[pos]];
            if (a->offset >= off + size)
                break;
            if (a->offset + round_up(a->size, align) > off)
                off = a->offset + round_up(a->size, align);
        }
        x->offset = off;
        for (int32_t i = na; i > pos; i--)
            act[i] = act[i - 1];
        act[pos] = order[k];
        na++;
        if (off + size > arena)
            arena = off + size;
    }
    free(order);
    free(act);
    return arena;
}

static void test_exec_planner_equals_the_first_fit_scan(void **state)
{
    static const size_t aligns[3] = {1, 8, 64};
    for (int trial = 0; trial < 300; trial++) {
        int32_t n = 1 + (int32_t)(next_u64() % (trial < 200 ? 60 : 2000));
        int32_t horizon = 1 + (int32_t)(next_u64() % (uint64_t)(2 * n));
        size_t align = aligns[trial % 3];
        remat_plan_buf *b = xcalloc((size_t)n, sizeof *b), *r = xcalloc((size_t)n, sizeof *r);
        for (int32_t i = 0; i < n; i++) {
            int kind = (int)(next_u64() % 10);
            b[i].size = kind == 0 ? 0 : kind < 3 ? 1 + next_u64() % 16 : 1 + next_u64() % 5000;
            b[i].first = (int32_t)(next_u64() % (uint64_t)horizon);
            int32_t span = next_u64() % 3 ? (int32_t)(next_u64() % 5) : (int32_t)(next_u64() % (uint64_t)horizon);
            b[i].last = b[i].first + span;
            r[i] = b[i];
        }
        size_t arena = plan_arena(b, n, align), want = first_fit_reference(r, n, align);
        assert_int_equal(arena, want);
        for (int32_t i = 0; i < n; i++)
            assert_int_equal(b[i].offset, r[i].offset);
        free(b);
        free(r);
    }
}

static void test_exec_planner_is_tight_for_a_chain(void **state)
{
    enum { N = 50 };
    remat_plan_buf b[N];
    /* a chain: buffer i written by instruction i, read by i + 1 */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = 1000, .first = i, .last = i + 1};
    assert_int_equal(plan_arena(b, N, 64), 2 * round_up(1000, 64));
    check_plan(b, N, 64, 2 * round_up(1000, 64));
    /* the last buffer read by nobody (last == first) */
    b[N - 1].last = N - 1;
    assert_int_equal(plan_arena(b, N, 64), 2 * round_up(1000, 64));
    /* shrinking sizes: the peak is the first pair */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = (size_t)(64 * (N - i)), .first = i, .last = i + 1};
    assert_int_equal(plan_arena(b, N, 64), (size_t)64 * (2 * N - 1));
    /* a chain beside one buffer alive throughout (a residual) */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = 128, .first = i, .last = i + 1};
    b[0].last = N;
    assert_int_equal(plan_arena(b, N, 64), 3 * 128);
    check_plan(b, N, 64, 3 * 128);
    /* disjoint lifetimes share everything */
    for (int i = 0; i < N; i++)
        b[i] = (remat_plan_buf){.size = (size_t)(1 + i * 10), .first = 2 * i, .last = 2 * i + 1};
    assert_int_equal(plan_arena(b, N, 8), round_up(1 + (N - 1) * 10, 8));
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
     * writing one buffer (test_exec_fusion_*), and with the sum ending its
     * group (test_fuse_reduce) it writes none: only the output */
    setenv("REMAT_NO_FUSION", "1", 1);
    remat_program *p = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    assert_int_equal(plan.arena_bytes, 2 * round_up(1000 * sizeof(double), 64));
    setenv("REMAT_NO_REDUCE_FUSION", "1", 1);
    remat_program *pf = compile_ok(f);
    unsetenv("REMAT_NO_REDUCE_FUSION");
    remat_memory_plan plan_f;
    remat_program_plan(pf, &plan_f);
    assert_int_equal(plan_f.arena_bytes, round_up(1000 * sizeof(double), 64));
    assert_int_equal(plan_f.instructions, 21);
    remat_program_free(pf);
    pf = compile_ok(f);
    remat_program_plan(pf, &plan_f);
    assert_int_equal(plan_f.arena_bytes, 0);
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
            assert_memory_equal(a.t[k].data, b.t[k].data, bytes); /* contract 1 */
            assert_memory_equal(a.t[k].data, c.t[k].data, bytes); /* contract 1 */
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
    /* the repeated outputs are the same bits: one value, copied (exact) */
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
    assert_int_equal(remat_compile(f, remat_test_backend(), &p), REMAT_OK);
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

int main(void)
{
    remat_test_backend(); /* REMAT_BACKEND: skip (77) when it is not there */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_planner_never_overlaps_live_buffers),
        cmocka_unit_test(test_exec_planner_is_tight_for_a_chain),
        cmocka_unit_test(test_exec_planner_equals_the_first_fit_scan),
        cmocka_unit_test(test_exec_compiled_chain_uses_two_buffers),
        cmocka_unit_test(test_exec_compile_and_run_are_deterministic),
        cmocka_unit_test(test_exec_outputs_that_are_arguments_constants_repeats_and_aliases),
        cmocka_unit_test(test_exec_zero_size_tensors),
        cmocka_unit_test(test_exec_rank0_scalars),
        cmocka_unit_test(test_exec_rank8_tensors),
        cmocka_unit_test(test_exec_slice_views_and_copies),
        cmocka_unit_test(test_exec_program_input_output_descriptors),
    };
    rng_seed(0x853c49e6748fea9bull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
