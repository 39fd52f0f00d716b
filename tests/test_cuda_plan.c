/*
 * test_cuda_plan.c — the CUDA backend's host side, without a device: every
 * op family lowers, and a program's memory plan (arena, constants,
 * instructions) is the CPU's, for an MLP gradient, a program of every op
 * family, a gradient needing dot_general scratch and a scanned PFR gradient.
 *
 * The programs are compiled with the CUDA backend's lowering (supports_op,
 * scratch_bytes, lower, lower_fused, lower_add_pad) and host memory in place
 * of device memory (nothing is launched at compile). Also: that a scan's
 * lane runs are cut for the host's cache and threads on the CPU only, and
 * what a build or a machine without CUDA answers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/alloc.h"
#include "exec/program_impl.h"
#include "scan/scan_rt.h"
#include "test_util.h"

#if REMAT_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"

static void *host_alloc(const remat_exec_ctx *cx, size_t bytes) { return rmi_aligned_alloc(64, bytes); }
static void host_free(const remat_exec_ctx *cx, void *p) { rmi_free(p); }
static void host_copy(const remat_exec_ctx *cx, void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }

/* the CUDA lowering over host memory: a planner, never run */
static remat_backend *planner(void)
{
    static remat_backend be;
    be.iface = *rmi_cuda_iface();
    be.iface.mem_alloc = host_alloc;
    be.iface.mem_free = host_free;
    be.iface.mem_copy = host_copy;
    be.iface.mem_fill = remat_backend_cpu()->iface.mem_fill;
    be.iface.copy_in = host_copy; /* the staged constant upload, on the host */
    be.iface.copy_out = host_copy;
    be.iface.program_new = NULL;
    be.iface.program_free = NULL;
    be.iface.finish = NULL;
    return &be;
}

/* Compiles f for the CPU and for the CUDA planner: same plan, and (own:
 * no loop instructions, whose function is the scan's) every CUDA
 * instruction lowered to a kernel adapter of the CUDA backend's. The CPU's
 * with reductions unfused (REMAT_NO_REDUCE_FUSION): CUDA has no fused
 * reductions (iface.fuse_reduce), so its plan is the CPU's without them. */
static void assert_same_plan(const remat_fn *f, bool own)
{
    remat_program *pc = NULL, *pg = NULL;
    setenv("REMAT_NO_REDUCE_FUSION", "1", 1);
    const remat_status cst = remat_compile(f, remat_backend_cpu(), &pc);
    unsetenv("REMAT_NO_REDUCE_FUSION");
    assert_int_equal(cst, REMAT_OK);
    if (remat_compile(f, planner(), &pg) != REMAT_OK)
        fail_msg("cuda lowering of '%s': %s", remat_fn_name(f), remat_last_error());
    remat_memory_plan a, b;
    remat_program_plan(pc, &a);
    remat_program_plan(pg, &b);
    assert_true(a.arena_bytes > 0);
    assert_int_equal(a.arena_bytes, b.arena_bytes);
    assert_int_equal(a.constant_bytes, b.constant_bytes);
    assert_int_equal(a.instructions, b.instructions);
    assert_int_equal(a.residual_bytes, b.residual_bytes);
    assert_int_equal(a.peak_snapshot_bytes, b.peak_snapshot_bytes);
    assert_int_equal(a.forward_evals, b.forward_evals);
    assert_int_equal(pc->n_instrs, pg->n_instrs);
    for (int32_t i = 0; i < pg->n_instrs; i++) { /* the same offsets instruction by instruction */
        const remat_instr *c = &pc->instrs[i], *g = &pg->instrs[i];
        assert_non_null(g->fn);
        if (own)
            assert_ptr_not_equal(g->fn, c->fn);
        assert_int_equal(c->arena_end, g->arena_end);
        assert_int_equal(c->n, g->n);
        assert_int_equal(c->scratch != NULL, g->scratch != NULL);
        if (c->scratch)
            assert_int_equal((char *)c->scratch - (char *)pc->arena, (char *)g->scratch - (char *)pg->arena);
        const bool c_in = c->out && (char *)c->out >= (char *)pc->arena &&
                          (char *)c->out < (char *)pc->arena + pc->arena_bytes;
        if (c_in)
            assert_int_equal((char *)c->out - (char *)pc->arena, (char *)g->out - (char *)pg->arena);
    }
    remat_program_free(pc);
    remat_program_free(pg);
}

/* loss of a 2-layer MLP, its gradient */
static void test_cuda_plan_mlp_gradient_is_the_cpus(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("mlp");
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){64, 16}));
    remat_val w1 = remat_arg(f, "w1", REMAT_F32, 2, ((int64_t[]){16, 32}));
    remat_val w2 = remat_arg(f, "w2", REMAT_F32, 2, ((int64_t[]){32, 8}));
    remat_val h = remat_tanh(f, remat_matmul(f, x, w1));
    remat_val y = remat_relu(f, remat_matmul(f, h, w2));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, y)));
    remat_fn *g = grad_ok(f, 2, (int[]){1, 2});
    assert_same_plan(f, true);
    assert_same_plan(g, true);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* every family: elementwise (fused), splat scalars, select, powers,
 * convert, reductions, slice, pad, concatenate, transpose, broadcast, dot
 * with a batch axis in the middle (scratch), add(x, pad(g)) from the
 * gradient of a slice, linear_solve (on the host, its scratch planned) */
static remat_fn *every_family(void)
{
    remat_fn *f = remat_fn_new("every_family");
    remat_val a = remat_arg(f, "a", REMAT_F64, 3, ((int64_t[]){4, 3, 5}));
    remat_val b = remat_arg(f, "b", REMAT_F64, 3, ((int64_t[]){5, 3, 2}));
    remat_val e = remat_add(f, remat_mul_scalar(f, remat_exp(f, a), 0.5), remat_sin(f, a));
    e = remat_select(f, remat_gt(f, e, a), remat_integer_pow(f, e, 3), remat_pow(f, remat_square(f, e), 0.75));
    remat_dot_dims d = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0}, .n_batch = 1, .lhs_batch = {1},
                        .rhs_batch = {1}};
    remat_val dg = remat_dot_general(f, e, b, &d); /* (3, 4, 2) */
    remat_val t = remat_transpose(f, dg, ((int[]){2, 0, 1}));
    remat_val s = remat_slice(f, a, ((int64_t[]){1, 0, 1}), ((int64_t[]){4, 3, 5}), ((int64_t[]){1, 1, 2}));
    remat_val p = remat_pad(f, s, ((int64_t[]){0, 1, 0}), ((int64_t[]){1, 0, 1}), NULL);
    remat_val c = remat_concatenate(f, 2, ((remat_val[]){p, p}), 2);
    remat_val m = remat_reduce_max(f, c, 1, ((int[]){1}));
    remat_val cv = remat_convert(f, remat_convert(f, m, REMAT_F32), REMAT_F64);
    remat_val bc = remat_broadcast_to(f, remat_sum(f, t, 1, ((int[]){0})), 3, ((int64_t[]){5, 3, 4}));
    remat_val A = remat_arg(f, "A", REMAT_F64, 2, ((int64_t[]){3, 3}));
    remat_val col = remat_slice(f, a, ((int64_t[]){0, 0, 0}), ((int64_t[]){4, 3, 1}), NULL);
    remat_val x = remat_linear_solve(f, A, remat_sum(f, col, 2, ((int[]){0, 2})));
    remat_val l = remat_add(f, remat_sum_all(f, cv), remat_sum_all(f, remat_tanh(f, bc)));
    remat_fn_output(f, remat_add(f, l, remat_sum_all(f, remat_square(f, x))));
    return f;
}

static void test_cuda_plan_every_family_and_its_gradient_is_the_cpus(void **state)
{
    (void)state;
    remat_fn *f = every_family();
    assert_fn_ok(f);
    remat_fn *g = grad_ok(f, 0, NULL);
    assert_same_plan(f, true);
    assert_same_plan(g, true);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* a scan under a checkpoint schedule: loop bodies as sub-programs on both
 * backends (REMAT_NO_JIT: a compiled loop, libgccjit's or NVRTC's, plans its
 * memory differently from the interpreted body) */
static void test_cuda_plan_scanned_pfr_gradient_is_the_cpus(void **state)
{
    (void)state;
    setenv("REMAT_NO_JIT", "1", 1);
    const char *schedules[] = {"store-all", "binomial:4", "online:3"};
    for (int s = 0; s < 3; s++) {
        remat_problem *pb = NULL;
        assert_int_equal(remat_problem_new("pfr-euler", 50, &pb), REMAT_OK);
        remat_scan_options so = {0};
        assert_int_equal(remat_schedule_parse(schedules[s], &so.schedule), REMAT_OK);
        remat_fn *vg = NULL;
        assert_int_equal(remat_problem_build(pb, &so, &vg), REMAT_OK);
        assert_same_plan(vg, false);
        remat_fn_free(vg);
        remat_problem_free(pb);
    }
    unsetenv("REMAT_NO_JIT");
}

/* How a checkpointed scan's 1024 independent, contiguous lanes with a 64
 * MiB store are cut: on the CPU into lane blocks for its L2 and split units
 * for its thread pool; on the GPU not at all (every run one launch over all
 * lanes on the program's stream), even with a block size in the options. */
static void test_cuda_plan_lane_runs_are_not_cut_for_the_host(void **state)
{
    (void)state;
    scan_rt *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->lanes.m = 1024;
    r->lanes.contiguous = r->lanes.ranges = r->lanes.split = true;
    remat_scan_data d = {.length = 100, .store_bytes = (size_t)64 << 20};
    remat_compile_options o = {0};
    r->opts = &o;
    scan_lane_cuts cpu = rmi_scan_rt_lane_cuts(remat_backend_cpu(), r, &d, true);
    scan_lane_cuts gpu = rmi_scan_rt_lane_cuts(planner(), r, &d, true);
    assert_int_equal(cpu.block, 32);       /* 64 KiB of store a lane: 32 lanes (the fewest) a block */
    assert_int_equal(cpu.split_lanes, 16); /* 1024 lanes in at most 64 units */
    assert_int_equal(gpu.block, 0);
    assert_int_equal(gpu.split_lanes, 0);
    o.scan_block_lanes = 64;
    cpu = rmi_scan_rt_lane_cuts(remat_backend_cpu(), r, &d, true);
    gpu = rmi_scan_rt_lane_cuts(planner(), r, &d, true);
    assert_int_equal(cpu.block, 64);
    assert_int_equal(gpu.block, 0);
    assert_int_equal(gpu.split_lanes, 0);
    /* blocks not allowed (a nested scan): the CPU still splits */
    cpu = rmi_scan_rt_lane_cuts(remat_backend_cpu(), r, &d, false);
    assert_int_equal(cpu.block, 0);
    assert_int_equal(cpu.split_lanes, 16);
    assert_true(remat_backend_cpu()->iface.host_lane_cuts);
    assert_false(rmi_cuda_iface()->host_lane_cuts);
    free(r);
}

static void test_cuda_plan_supports_says_no_to_what_it_does_not_know(void **state)
{
    (void)state;
    const remat_backend_iface *be = rmi_cuda_iface();
    remat_shape sh = {.rank = 1, .dims = {4}};
    remat_exec_op op = {.op = REMAT_OP_EXP, .dtype = REMAT_F64, .shape = sh};
    assert_true(be->supports_op(&op));
    op.op = REMAT_OP_COUNT;
    assert_false(be->supports_op(&op));
    op.op = REMAT_OP_CONSTANT;
    assert_false(be->supports_op(&op));
    op.op = REMAT_OP_HOP;
    assert_false(be->supports_op(&op));
    op.op = REMAT_OP_EXP;
    op.dtype = REMAT_DTYPE_COUNT;
    assert_false(be->supports_op(&op));
    for (int k = 0; k < REMAT_OP_COUNT; k++) { /* everything the CPU runs but control ops and leaves */
        remat_exec_op o = {.op = (remat_op)k, .dtype = REMAT_F32, .shape = sh};
        remat_op_category c = remat_op_category_of(o.op);
        if (c == REMAT_OPCAT_LEAF || c == REMAT_OPCAT_CONTROL)
            continue;
        if (!be->supports_op(&o))
            fail_msg("cuda backend does not take '%s'", remat_op_name(o.op));
    }
}

/* dist_nccl.c asks a CUDA backend object for its device (not the device a
 * probe allocation leaves the thread on): the door reads the object's own
 * device, whichever device the thread is on */
static void test_cuda_plan_backend_names_its_device(void **state)
{
    (void)state;
    for (int d = 0; d < 4; d++) {
        remat_backend be = {.iface = *rmi_cuda_iface(), .context = (void *)(intptr_t)d};
        assert_int_equal(rmi_cuda_backend_device(&be), d);
    }
}
#endif

/* Built without CUDA or with it on a machine without a device, the backend
 * is NULL with a message saying which; with a device, it is there. */

static void test_cuda_plan_unavailable_backend_says_why(void **state)
{
    (void)state;
    remat_backend *be = remat_backend_cuda(0);
    if (!REMAT_HAVE_CUDA) {
        assert_null(be);
        assert_contains(remat_last_error(), "remat was built without CUDA");
    } else if (!be) {
        assert_contains(remat_last_error(), "no CUDA device: ");
    } else {
        assert_string_equal(remat_backend_name(be), "cuda");
    }
    assert_null(remat_backend_cuda(-1));
    assert_contains(remat_last_error(), REMAT_HAVE_CUDA ? "no CUDA device" : "built without CUDA");
    assert_null(remat_backend_from_name("cuda:x"));
    assert_contains(remat_last_error(), "backend 'cuda:x': expected cpu, cuda or cuda:N");
    assert_ptr_equal(remat_backend_from_name(NULL), remat_backend_cpu());
    assert_ptr_equal(remat_backend_from_name("cpu"), remat_backend_cpu());
    remat_backend *env = NULL;
    setenv("REMAT_BACKEND", "cuda", 1);
    remat_status st = remat_backend_from_env(&env);
    unsetenv("REMAT_BACKEND");
    if (be) {
        assert_int_equal(st, REMAT_OK);
        assert_ptr_equal(env, be);
    } else {
        assert_int_not_equal(st, REMAT_OK);
        assert_null(env);
        assert_contains(remat_last_error(), "REMAT_BACKEND=cuda: ");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#if REMAT_HAVE_CUDA
        cmocka_unit_test(test_cuda_plan_mlp_gradient_is_the_cpus),
        cmocka_unit_test(test_cuda_plan_every_family_and_its_gradient_is_the_cpus),
        cmocka_unit_test(test_cuda_plan_scanned_pfr_gradient_is_the_cpus),
        cmocka_unit_test(test_cuda_plan_lane_runs_are_not_cut_for_the_host),
        cmocka_unit_test(test_cuda_plan_supports_says_no_to_what_it_does_not_know),
        cmocka_unit_test(test_cuda_plan_backend_names_its_device),
#endif
        cmocka_unit_test(test_cuda_plan_unavailable_backend_says_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
