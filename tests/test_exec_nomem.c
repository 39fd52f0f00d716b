/*
 * test_exec_nomem.c — running out of memory in the compiler's rewrites: a
 * status, never a crash, and nothing left behind.
 *
 * test_nomem_run fails every allocation of compiling and running the
 * seed-like workloads, whose values are too small for fusion (16 elements
 * and up). This workload is a gradient that takes every rewrite pass:
 * elementwise groups to fuse, slices whose VJP adds pads (add-of-pad), rows
 * concatenated in place (a PFR-like right-hand side on a (3,B) state). With
 * the allocator hook (core/alloc.h) failing allocation k and every later
 * one, and again allocation k alone, for every k up to the compile's count:
 *   - remat_compile returns REMAT_ERR_NOMEM, no program, and
 *     remat_last_error() says "out of memory" (under ASan: no leak);
 *   - the function is untouched: compiled again with the hook off, the
 *     program has the reference plan and computes the reference bits.
 *
 * Bitwise assertions rest on contract 1 (docs/design-notes.md, "Bitwise
 * contracts"): the same function compiled again computes the same bits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "exec/program_impl.h"
#include "remat/remat.h"
#include "test_util.h"

enum { B = 32 };

/* a few Euler steps of A -> B -> C on a (3,B) state: rows sliced (views),
 * rates fused, dy concatenated in place; the gradient adds pads */
static remat_fn *rhs_grad(void)
{
    remat_fn *f = remat_fn_new("abc_steps");
    remat_val y = remat_arg(f, "y", REMAT_F64, 2, DIMS(3, B));
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val k1 = remat_broadcast_to(f, remat_reshape(f, remat_index(f, k, 0), 1, DIMS(1)), 1, DIMS(B));
    remat_val k2 = remat_broadcast_to(f, remat_reshape(f, remat_index(f, k, 1), 1, DIMS(1)), 1, DIMS(B));
    for (int s = 0; s < 3; s++) {
        remat_val r[3];
        for (int i = 0; i < 3; i++)
            r[i] = remat_reshape(f, remat_slice(f, y, DIMS(i, 0), DIMS(i + 1, B), NULL), 1, DIMS(B));
        remat_val a = remat_mul(f, k1, r[0]), b = remat_mul(f, k2, r[1]);
        remat_val d[3] = {remat_reshape(f, remat_neg(f, a), 2, DIMS(1, B)),
                          remat_reshape(f, remat_sub(f, a, b), 2, DIMS(1, B)),
                          remat_reshape(f, b, 2, DIMS(1, B))};
        y = remat_add(f, y, remat_mul_scalar(f, remat_concatenate(f, 3, d, 0), 0.01));
    }
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, y, y)));
    remat_fn *g = NULL;
    assert_ok(remat_grad(f, 0, NULL, &g));
    remat_fn_free(f);
    return g;
}

/* inputs filled with a fixed pattern, outputs allocated (caller frees) */
static void make_io(remat_program *p, remat_tensor **in, remat_tensor **out)
{
    int ni = remat_program_num_inputs(p), no = remat_program_num_outputs(p);
    *in = calloc((size_t)ni, sizeof **in);
    *out = calloc((size_t)no, sizeof **out);
    for (int i = 0; i < ni; i++) {
        (*in)[i] = remat_program_input_desc(p, i);
        size_t n = (size_t)remat_shape_numel(&(*in)[i].shape);
        void *d = malloc(remat_tensor_bytes(&(*in)[i]) + 1);
        for (size_t j = 0; j < n; j++) {
            double x = 0.1 * (double)((j * 7 + (size_t)i) % 11) - 0.5;
            if ((*in)[i].dtype == REMAT_F64)
                ((double *)d)[j] = x;
            else
                ((float *)d)[j] = (float)x;
        }
        (*in)[i].data = d;
    }
    for (int i = 0; i < no; i++) {
        (*out)[i] = remat_program_output_desc(p, i);
        (*out)[i].data = calloc(remat_tensor_bytes(&(*out)[i]) + 1, 1);
    }
}

static void free_io(remat_program *p, remat_tensor *in, remat_tensor *out)
{
    for (int i = 0; i < remat_program_num_inputs(p); i++)
        free(in[i].data);
    for (int i = 0; i < remat_program_num_outputs(p); i++)
        free(out[i].data);
    free(in);
    free(out);
}

/* the plan and the outputs' bits of a program compiled from g */
static void check_same(remat_program *p, const remat_memory_plan *plan_ref, remat_program *ref)
{
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    assert_memory_equal(&plan, plan_ref, sizeof plan);
    remat_tensor *in, *out, *in_ref, *out_ref;
    make_io(p, &in, &out);
    make_io(ref, &in_ref, &out_ref);
    assert_ok(remat_run(p, remat_program_num_inputs(p), in, remat_program_num_outputs(p), out, NULL));
    assert_ok(remat_run(ref, remat_program_num_inputs(ref), in_ref, remat_program_num_outputs(ref), out_ref, NULL));
    for (int i = 0; i < remat_program_num_outputs(p); i++)
        assert_memory_equal(out[i].data, out_ref[i].data, remat_tensor_bytes(&out[i]));
    free_io(p, in, out);
    free_io(ref, in_ref, out_ref);
}

static void run_injected(remat_fn *g, const char *what, int sticky)
{
    remat_backend *be = remat_backend_cpu();
    remat_program *ref = NULL;
    rmi_alloc_fail_after(INT64_MAX);
    assert_ok(remat_compile(g, be, &ref));
    int64_t n = rmi_alloc_count();
    rmi_alloc_fail_after(-1);
    remat_memory_plan plan_ref;
    remat_program_plan(ref, &plan_ref);
    assert_true(n > 8); /* the hook sees the compiler's allocations */

    int64_t in_passes = 0;
    for (int64_t k = 0; k <= n; k++) {
        remat_clear_error();
        if (sticky)
            rmi_alloc_fail_after(k);
        else
            rmi_alloc_fail_once(k);
        remat_program *p = NULL;
        remat_status st = remat_compile(g, be, &p);
        rmi_alloc_fail_after(-1);
        if (k == n) {
            if (st != REMAT_OK)
                fail_msg("%s: failed with every allocation granted: %s", what, remat_last_error());
            check_same(p, &plan_ref, ref);
            remat_program_free(p);
            continue;
        }
        if (st != REMAT_ERR_NOMEM)
            fail_msg("%s: allocation %lld of %lld failed, got status %s (%s)", what, (long long)k, (long long)n,
                     remat_status_name(st), remat_last_error());
        assert_null(p);
        assert_contains(remat_last_error(), "out of memory");
        in_passes += strncmp(remat_last_error(), "compile: out of memory for ", 27) == 0;
        /* g is untouched: it compiles again to the same program */
        assert_ok(remat_compile(g, be, &p));
        check_same(p, &plan_ref, ref);
        remat_program_free(p);
    }
    printf("  %s: %lld allocations, each failed in turn%s (%lld inside the passes)\n", what, (long long)n,
           sticky ? " with all after it" : " alone", (long long)in_passes);
    assert_true(in_passes > 0);
    remat_program_free(ref);
}

static void test_exec_nomem_rewrites(void **state)
{
    (void)state;
    remat_fn *g = rhs_grad();
    remat_program *p = NULL;
    assert_ok(remat_compile(g, remat_backend_cpu(), &p));
    assert_true(p->n_fused > 0); /* the rewrites run (fused groups, add-of-pad, in-place concatenates) */
    remat_program_free(p);
    run_injected(g, "(3,B) Euler steps: fusion, add-of-pad, in-place concatenate", 1);
    run_injected(g, "(3,B) Euler steps: fusion, add-of-pad, in-place concatenate", 0);
    remat_fn_free(g);
}

/* A constant too large for memory: the message names the constant pool and
 * its size (it said "an arena of 0 bytes": the arena's size, whichever of
 * the two allocations failed). */
static void test_exec_nomem_huge_constant_named(void **state)
{
    (void)state;
    const int64_t n = (int64_t)1 << 42; /* 32 TiB of f64 */
    remat_fn *f = remat_fn_new("huge_constant");
    remat_fn_output(f, remat_const_fill(f, REMAT_F64, 1, DIMS(n), 0.5));
    remat_program *p = NULL;
    assert_int_equal(remat_compile(f, remat_backend_cpu(), &p), REMAT_ERR_NOMEM);
    assert_null(p);
    char want[128];
    snprintf(want, sizeof want, "the constant pool of %lld bytes", (long long)n * 8);
    if (!strstr(remat_last_error(), want))
        fail_msg("'%s' does not say '%s'", remat_last_error(), want);
    remat_fn_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_nomem_rewrites),
        cmocka_unit_test(test_exec_nomem_huge_constant_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
