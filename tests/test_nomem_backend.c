/*
 * test_nomem_backend.c — running out of memory in src/backend: a status,
 * never a crash.
 *
 * The CPU backend's lowerings take their parameter memory from the caller's
 * alloc(ctx, bytes) (the program's arena), which returns NULL when the
 * machine is out of memory; the arena planner allocates through core/alloc.h.
 * For each lowering that allocates (one op of every category and parameter
 * kind that keeps parameters, a fused group, add-of-pad) every allocation is
 * failed in turn: REMAT_ERR_NOMEM naming the op, and with memory granted the
 * same lowering succeeds. Without the NULL checks the lowerings write
 * through NULL. The JIT (compile_lanes) has every allocation of a compile
 * failed in turn the same way, on a program not compiled before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/alloc.h"
#include "remat/remat.h"
#include "test_util.h"

/* alloc for the lowerings: grants `left` requests, then returns NULL; what
 * it granted is freed by arena_release */
typedef struct {
    int left, granted;
    void *blocks[16];
} test_arena;

static void *arena_alloc(void *ctx, size_t bytes)
{
    test_arena *a = ctx;
    if (a->left == 0)
        return NULL;
    a->left--;
    assert_true(a->granted < 16);
    void *p = calloc(1, bytes ? bytes : 1);
    assert_non_null(p);
    a->blocks[a->granted++] = p;
    return p;
}

static void arena_release(test_arena *a)
{
    for (int i = 0; i < a->granted; i++)
        free(a->blocks[i]);
    a->granted = 0;
}

typedef remat_status (*lowering)(const void *what, remat_instr *ins, test_arena *a);

static remat_status lower_op(const void *what, remat_instr *ins, test_arena *a)
{
    return remat_backend_cpu()->iface.lower(what, ins, arena_alloc, a);
}

static remat_status lower_fused(const void *what, remat_instr *ins, test_arena *a)
{
    return remat_backend_cpu()->iface.lower_fused(what, ins, arena_alloc, a);
}

static const remat_shape S23 = {2, {2, 3}}, S32 = {2, {3, 2}}, S43 = {2, {4, 3}}, S22 = {2, {2, 2}},
                         S2 = {1, {2}};
static const remat_pad_params PAD = {.low = {1, 0}, .high = {1, 0}};

static remat_status lower_add_pad(const void *what, remat_instr *ins, test_arena *a)
{
    (void)what;
    return remat_backend_cpu()->iface.lower_add_pad(REMAT_F64, &S43, &S23, &PAD, 0, ins, arena_alloc, a);
}

/* Counts the lowering's allocations with memory granted, then fails each in
 * turn (and every later one): REMAT_ERR_NOMEM with a message naming `name`. */
static void check_lowering(lowering lower, const void *what, const char *name)
{
    remat_instr ins = {.n = 6};
    test_arena a = {.left = -1};
    assert_int_equal(lower(what, &ins, &a), REMAT_OK);
    assert_non_null(ins.fn);
    const int n = a.granted;
    arena_release(&a);
    assert_true(n >= 1); /* the lowering keeps parameters */
    for (int k = 0; k < n; k++) {
        remat_clear_error();
        ins = (remat_instr){.n = 6};
        a = (test_arena){.left = k};
        remat_status st = lower(what, &ins, &a);
        arena_release(&a);
        if (st != REMAT_ERR_NOMEM)
            fail_msg("%s: allocation %d of %d failed, got %s", name, k, n, remat_status_name(st));
        assert_contains(remat_last_error(), "out of memory");
        assert_contains(remat_last_error(), name);
    }
}

static void test_nomem_backend_lowering(void **state)
{
    (void)state;
    const remat_dtype f64[3] = {REMAT_F64, REMAT_F64, REMAT_F64};
    const remat_shape in23[2] = {S23, S23}, in32[1] = {S32}, dot_in[2] = {S23, S32}, solve_in[3] = {S22, {2, {2, 4}}, S2};
    static const int perm[2] = {1, 0};
    static const remat_dot_dims dd = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    const remat_exec_op ops[] = {
        {.op = REMAT_OP_POW, .dtype = REMAT_F64, .shape = S23, .nin = 1, .in_dtypes = f64, .in_shapes = in23,
         .p.exponent = 1.5},
        {.op = REMAT_OP_CONCATENATE, .dtype = REMAT_F64, .shape = {2, {4, 3}}, .nin = 2, .in_dtypes = f64,
         .in_shapes = in23, .p.axis = 0},
        {.op = REMAT_OP_TRANSPOSE, .dtype = REMAT_F64, .shape = S23, .nin = 1, .in_dtypes = f64,
         .in_shapes = in32, .p.perm = perm},
        {.op = REMAT_OP_RESHAPE, .dtype = REMAT_F64, .shape = S32, .nin = 1, .in_dtypes = f64, .in_shapes = in23},
        {.op = REMAT_OP_NAME, .dtype = REMAT_F64, .shape = S23, .nin = 1, .in_dtypes = f64, .in_shapes = in23},
        {.op = REMAT_OP_CONVERT, .dtype = REMAT_F64, .shape = S23, .nin = 1, .in_dtypes = f64, .in_shapes = in23},
        {.op = REMAT_OP_SUM, .dtype = REMAT_F64, .shape = S2, .nin = 1, .in_dtypes = f64, .in_shapes = in23,
         .p.axes_mask = 2},
        {.op = REMAT_OP_DOT_GENERAL, .dtype = REMAT_F64, .shape = S22, .nin = 2, .in_dtypes = f64,
         .in_shapes = dot_in, .p.dot = &dd},
        {.op = REMAT_OP_LU, .dtype = REMAT_F64, .shape = {2, {2, 4}}, .nin = 1, .in_dtypes = f64,
         .in_shapes = solve_in},
        {.op = REMAT_OP_LINEAR_SOLVE, .dtype = REMAT_F64, .shape = S2, .nin = 3, .in_dtypes = f64,
         .in_shapes = solve_in, .p.solve_transpose = 1},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        check_lowering(lower_op, &ops[i], remat_op_name(ops[i].op));

    const remat_fused_uop uops[2] = {{.op = REMAT_OP_NEG, .dst = 0, .src = {-1}},
                                     {.op = REMAT_OP_MUL, .dst = -1, .src = {0, -2}}};
    const remat_fused_op fused = {.dtype = REMAT_F64, .nin = 2, .n_regs = 1, .n_uops = 2, .uops = uops};
    check_lowering(lower_fused, &fused, "fused group");
    check_lowering(lower_add_pad, NULL, "add");
}

/* The arena planner's working memory: each of its allocations failed,
 * alone and with the others: REMAT_ERR_NOMEM, then planned with the hook
 * off. A small plan (the sorted-array path) and a large one (the treap). */
static void check_plan_nomem(remat_plan_buf *b, int32_t nb)
{
    size_t arena = 0;
    rmi_alloc_fail_after(INT64_MAX);
    assert_int_equal(rmi_plan_offsets(b, nb, 64, &arena), REMAT_OK);
    const int64_t n = rmi_alloc_count();
    assert_true(n >= 1);
    rmi_alloc_fail_after(-1);
    const size_t want = arena;
    for (int sticky = 0; sticky <= 1; sticky++)
        for (int64_t k = 0; k < n; k++) {
            remat_clear_error();
            if (sticky)
                rmi_alloc_fail_after(k);
            else
                rmi_alloc_fail_once(k);
            remat_status st = rmi_plan_offsets(b, nb, 64, &arena);
            rmi_alloc_fail_after(-1);
            assert_int_equal(st, REMAT_ERR_NOMEM);
            assert_contains(remat_last_error(), "out of memory");
            assert_int_equal(rmi_plan_offsets(b, nb, 64, &arena), REMAT_OK);
            assert_int_equal(arena, want);
        }
}

static void test_nomem_backend_plan(void **state)
{
    (void)state;
    remat_plan_buf b[3] = {{.size = 100, .first = 0, .last = 1},
                           {.size = 50, .first = 1, .last = 2},
                           {.size = 10, .first = 2, .last = 2}};
    check_plan_nomem(b, 3);
    enum { N = 1000 };
    static remat_plan_buf big[N];
    for (int32_t i = 0; i < N; i++)
        big[i] = (remat_plan_buf){.size = 8 + (size_t)(i % 5) * 64, .first = i, .last = i % 4 ? i + 2 : N};
    check_plan_nomem(big, N);
}

/* y = x * imm over one lane, one step: a program of its own for each imm */
typedef struct {
    remat_lane_ins ins[4];
    remat_lane_buf bufs[2];
    remat_lane_program p;
} scale_program;

static void make_scale(scale_program *s, double imm)
{
    *s = (scale_program){
        .ins = {{.kind = REMAT_LANE_LOAD, .dt = REMAT_F64, .buf = 0},
                {.kind = REMAT_LANE_CONST, .dt = REMAT_F64, .imm = imm},
                {.kind = REMAT_LANE_OP, .dt = REMAT_F64, .op = REMAT_OP_MUL, .a = 0, .b = 1},
                {.kind = REMAT_LANE_STORE, .dt = REMAT_F64, .a = 2, .buf = 1}},
        .bufs = {{.dt = REMAT_F64}, {.dt = REMAT_F64}},
    };
    s->p = (remat_lane_program){.m = 1, .n_ins = 4, .ins = s->ins, .n_bufs = 2, .bufs = s->bufs};
}

static void check_scale(remat_lane_fn fn, double imm)
{
    double x = 3.0, y = 0.0;
    char *bufs[2] = {(char *)&x, (char *)&y};
    const int64_t strides[2] = {0, 0};
    fn(bufs, strides, 1, 1);
    assert_true(y == 3.0 * imm);
}

/* Every allocation of compile_lanes (key, lookup tables, the generator's
 * tables, the cache's growth) failed in turn, with all after it and alone,
 * each time on a program it has not compiled (the in-process cache would
 * answer otherwise): REMAT_ERR_NOMEM, "out of memory", and the same program
 * compiles with the hook off. The cache grows only now and then, so a k past
 * the allocations a compile made is granted. libgccjit's own memory is not
 * ours to fail. */
static void test_nomem_backend_jit(void **state)
{
    (void)state;
    const remat_backend *be = remat_backend_cpu();
    if (!be->iface.compile_lanes || !be->iface.can_compile_lanes()) {
        printf("  compiled loops unavailable here (no libgccjit or REMAT_NO_JIT): nothing to fail\n");
        return;
    }
    setenv("REMAT_NO_CACHE", "1", 1); /* the disk cache would answer too */
    double imm = 1.25;
    scale_program s;
    const remat_lane_program *pp[1] = {&s.p};
    remat_lane_fn fn = NULL;
    make_scale(&s, imm);
    rmi_alloc_fail_after(INT64_MAX);
    assert_int_equal(be->iface.compile_lanes(be, 1, pp, &fn, NULL), REMAT_OK);
    const int64_t n = rmi_alloc_count();
    rmi_alloc_fail_after(-1);
    check_scale(fn, imm);
    assert_true(n >= 5);
    int64_t failed = 0;
    for (int sticky = 1; sticky >= 0; sticky--)
        for (int64_t k = 0; k < n; k++) {
            imm += 0.5;
            make_scale(&s, imm);
            remat_clear_error();
            if (sticky)
                rmi_alloc_fail_after(k);
            else
                rmi_alloc_fail_once(k);
            remat_status st = be->iface.compile_lanes(be, 1, pp, &fn, NULL);
            const int64_t made = rmi_alloc_count();
            rmi_alloc_fail_after(-1);
            if (made > k) {
                if (st != REMAT_ERR_NOMEM)
                    fail_msg("jit: allocation %lld of %lld failed, got %s (%s)", (long long)k, (long long)made,
                             remat_status_name(st), remat_last_error());
                assert_contains(remat_last_error(), "out of memory");
                failed++;
                assert_int_equal(be->iface.compile_lanes(be, 1, pp, &fn, NULL), REMAT_OK);
            } else {
                assert_int_equal(st, REMAT_OK);
            }
            check_scale(fn, imm);
        }
    printf("  jit: %lld allocations in a compile, %lld failures injected\n", (long long)n, (long long)failed);
    assert_true(be->iface.can_compile_lanes()); /* out of memory does not turn compiling off */
    unsetenv("REMAT_NO_CACHE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nomem_backend_lowering),
        cmocka_unit_test(test_nomem_backend_plan),
        cmocka_unit_test(test_nomem_backend_jit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
