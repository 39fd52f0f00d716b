/*
 * test_op_table.c — REMAT_OP_LIST walked row by row: every op has a name, a
 * category, a parameter kind and a derivative entry; the CPU backend
 * supports exactly the ops its categories say and no value outside the
 * table; each generic elementwise op (a plain unary, binary or compare row)
 * differentiates as its row says (central differences, or no derivative);
 * the fusion predicate takes exactly the elementwise categories, and the
 * backends' fused micro-op kind agrees with it.
 *
 * The ops come from the table, so a row added to it is checked here without
 * editing this file.
 */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>

#include "backend/backend_impl.h"
#include "exec/program_impl.h"

static const remat_op BAD_OPS[] = {REMAT_OP_COUNT, (remat_op)(REMAT_OP_COUNT + 7), (remat_op)-1, (remat_op)100000};

static void test_op_table_every_row_is_complete(void **state)
{
    (void)state;
    for (int k = 0; k < REMAT_OP_COUNT; k++) {
        const remat_op op = (remat_op)k;
        const char *name = remat_op_name(op);
        if (!name || !*name || !strcmp(name, "?"))
            fail_msg("op #%d has no name", k);
        for (int j = 0; j < k; j++)
            if (!strcmp(name, remat_op_name((remat_op)j)))
                fail_msg("ops #%d and #%d are both named '%s'", j, k, name);
        const remat_op_category c = remat_op_category_of(op);
        if ((unsigned)c >= REMAT_OPCAT_COUNT || !strcmp(remat_op_category_name(c), "?"))
            fail_msg("'%s' has no category", name);
        if ((unsigned)remat_op_param_of(op) >= REMAT_OPP_COUNT)
            fail_msg("'%s' has no parameter kind", name);
        if ((unsigned)remat_op_deriv_of(op) >= REMAT_OPD_COUNT)
            fail_msg("'%s' says nothing about its derivative", name);
        const int nin = remat_op_arity(op);
        if (nin < -1)
            fail_msg("'%s' has arity %d", name, nin);
        /* the elementwise categories fix the operand count */
        const int want = c == REMAT_OPCAT_UNARY ? 1 : remat_op_is_binary(op) ? 2 : c == REMAT_OPCAT_SELECT ? 3 : nin;
        if (nin != want)
            fail_msg("'%s' of category %s takes %d operands, not %d", name, remat_op_category_name(c), nin, want);
        if (c == REMAT_OPCAT_LEAF && nin != 0)
            fail_msg("leaf '%s' has inputs", name);
    }
}

static void test_op_table_rejects_values_outside_it(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof BAD_OPS / sizeof *BAD_OPS; i++) {
        const remat_op op = BAD_OPS[i];
        assert_string_equal(remat_op_name(op), "?");
        assert_int_equal(remat_op_category_of(op), REMAT_OPCAT_COUNT);
        assert_int_equal(remat_op_param_of(op), REMAT_OPP_COUNT);
        assert_int_equal(remat_op_deriv_of(op), REMAT_OPD_COUNT);
        assert_int_equal(remat_op_arity(op), -2);
        assert_false(remat_op_is_elementwise(op));
        assert_false(remat_op_is_binary(op));
    }
    assert_string_equal(remat_op_category_name(REMAT_OPCAT_COUNT), "?");
    /* a checkpoint region is named as JAX names it */
    assert_string_equal(remat_op_name(REMAT_OP_CHECKPOINT), "checkpoint");
}

static remat_exec_op exec_op_of(remat_op op, remat_dtype dt)
{
    static const remat_shape s = {.rank = 1, .dims = {4}};
    static remat_dtype dts[4];
    static remat_shape shs[4];
    for (int k = 0; k < 4; k++)
        dts[k] = dt, shs[k] = s;
    return (remat_exec_op){.op = op, .dtype = dt, .shape = s, .nin = remat_op_arity(op) > 0 ? remat_op_arity(op) : 1,
                           .in_dtypes = dts, .in_shapes = shs};
}

/* the CPU backend lowers every category but leaves and control ops (the
 * compiler's own), in both dtypes, and says no to what the table lacks */
static void test_op_table_cpu_supports_exactly_its_categories(void **state)
{
    (void)state;
    const remat_backend *be = remat_backend_cpu();
    for (int k = 0; k < REMAT_OP_COUNT; k++) {
        const remat_op_category c = remat_op_category_of((remat_op)k);
        const bool want = c != REMAT_OPCAT_LEAF && c != REMAT_OPCAT_CONTROL;
        for (int dt = 0; dt < REMAT_DTYPE_COUNT; dt++) {
            remat_exec_op e = exec_op_of((remat_op)k, (remat_dtype)dt);
            if (be->iface.supports_op(&e) != want)
                fail_msg("cpu supports_op('%s', dtype %d) is %d, its category %s says %d", remat_op_name((remat_op)k),
                         dt, !want, remat_op_category_name(c), want);
        }
    }
    for (size_t i = 0; i < sizeof BAD_OPS / sizeof *BAD_OPS; i++) {
        remat_exec_op e = exec_op_of(BAD_OPS[i], REMAT_F64);
        assert_false(be->iface.supports_op(&e));
    }
    remat_exec_op e = exec_op_of(REMAT_OP_ADD, REMAT_DTYPE_COUNT);
    assert_false(be->iface.supports_op(&e));
}

/* plain unary (no parameter), binary and compare rows: built by the generic
 * constructors from the table alone */
static int generic(remat_op op)
{
    return (remat_op_category_of(op) == REMAT_OPCAT_UNARY && remat_op_param_of(op) == REMAT_OPP_NONE) ||
           remat_op_is_binary(op);
}

enum { N = 5 };

/* loss(x, y) = sum(op(x[, y])), points inside every op's domain and away
 * from kinks (x in (0.3, 0.9), y in (1.1, 1.7): no ties, no zero) */
static remat_fn *loss_of(remat_op op)
{
    remat_fn *f = remat_fn_new(remat_op_name(op));
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(N)), y = remat_arg(f, "y", REMAT_F64, 1, DIMS(N));
    remat_val v = remat_op_is_binary(op) ? remat_binary_at(f, op, x, y, REMAT_HERE)
                                         : remat_unary_at(f, op, x, REMAT_HERE);
    remat_fn_output(f, remat_sum_all(f, v));
    assert_fn_ok(f);
    return f;
}

static double loss_at(remat_program *p, const double *x, const double *y)
{
    remat_tensor in[2] = {remat_tensor_f64((double *)x, 1, DIMS(N)), remat_tensor_f64((double *)y, 1, DIMS(N))};
    double out = 0;
    remat_tensor o = remat_tensor_f64(&out, 0, NULL);
    assert_ok(remat_run(p, 2, in, 1, &o, NULL));
    return out;
}

static void test_op_table_generic_ops_differentiate_as_their_row_says(void **state)
{
    (void)state;
    int checked = 0;
    for (int k = 0; k < REMAT_OP_COUNT; k++) {
        const remat_op op = (remat_op)k;
        if (!generic(op))
            continue;
        const remat_op_deriv d = remat_op_deriv_of(op);
        if (d != REMAT_OPD_RULE && d != REMAT_OPD_ZERO)
            fail_msg("elementwise '%s' has neither a VJP rule nor 'no derivative'", remat_op_name(op));
        remat_fn *f = loss_of(op);
        remat_fn *g = grad_ok(f, 0, NULL);
        double x[N], y[N], gx[N], gy[N];
        for (int i = 0; i < N; i++)
            x[i] = 0.3 + 0.15 * i, y[i] = 1.1 + 0.15 * i;
        remat_tensor in[2] = {remat_tensor_f64(x, 1, DIMS(N)), remat_tensor_f64(y, 1, DIMS(N))};
        remat_tensor out[2] = {remat_tensor_f64(gx, 1, DIMS(N)), remat_tensor_f64(gy, 1, DIMS(N))};
        remat_program *pg = compile_ok(g), *pf = compile_ok(f);
        assert_ok(remat_run(pg, 2, in, 2, out, NULL));
        for (int a = 0; a < 2; a++)
            for (int i = 0; i < N; i++) {
                double *v = a ? y : x, got = a ? gy[i] : gx[i], want = 0;
                if (d == REMAT_OPD_RULE) {
                    const double h = 1e-6, v0 = v[i];
                    v[i] = v0 + h;
                    double up = loss_at(pf, x, y);
                    v[i] = v0 - h;
                    double dn = loss_at(pf, x, y);
                    v[i] = v0;
                    want = (up - dn) / (2 * h);
                }
                if (!(fabs(got - want) <= 1e-6 * (1 + fabs(want))))
                    fail_msg("d sum(%s)/d %s[%d] = %.17g, want %.17g (%s)", remat_op_name(op), a ? "y" : "x", i, got,
                             want, d == REMAT_OPD_RULE ? "central differences" : "no derivative");
            }
        remat_program_free(pg);
        remat_program_free(pf);
        remat_fn_free(g);
        remat_fn_free(f);
        checked++;
    }
    assert_true(checked >= 20);
}

/* out = op(x[, y]) followed by op2 = add(out, x) on 64 elements: the pair is
 * one fused instruction exactly when op's category is elementwise (select
 * built from a compare, the powers with their own constructors) */
static remat_fn *pair_of(remat_op op)
{
    remat_fn *f = remat_fn_new(remat_op_name(op));
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(64)), y = remat_arg(f, "y", REMAT_F64, 1, DIMS(64));
    remat_val v;
    if (remat_op_is_binary(op))
        v = remat_binary_at(f, op, x, y, REMAT_HERE);
    else if (remat_op_param_of(op) == REMAT_OPP_INT_EXPONENT)
        v = remat_integer_pow(f, x, 3);
    else if (remat_op_param_of(op) == REMAT_OPP_EXPONENT)
        v = remat_pow(f, x, 1.5);
    else if (remat_op_category_of(op) == REMAT_OPCAT_UNARY)
        v = remat_unary_at(f, op, x, REMAT_HERE);
    else if (remat_op_category_of(op) == REMAT_OPCAT_SELECT)
        v = remat_select(f, x, y, x);
    else /* convert_element_type (f64 -> f32 -> f64): elementwise but changes the dtype, never fused */
        v = remat_convert(f, remat_convert(f, x, REMAT_F32), REMAT_F64);
    remat_fn_output(f, remat_add(f, v, x));
    assert_fn_ok(f);
    return f;
}

static void test_op_table_fusion_takes_the_elementwise_categories(void **state)
{
    (void)state;
    for (int k = 0; k < REMAT_OP_COUNT; k++) {
        const remat_op op = (remat_op)k;
        const remat_op_category c = remat_op_category_of(op);
        const int elementwise = c == REMAT_OPCAT_UNARY || c == REMAT_OPCAT_BINARY || c == REMAT_OPCAT_COMPARE ||
                                c == REMAT_OPCAT_SELECT;
        if (remat_op_is_elementwise(op) != elementwise)
            fail_msg("remat_op_is_elementwise('%s') disagrees with its category %s", remat_op_name(op),
                     remat_op_category_name(c));
        if (!elementwise && c != REMAT_OPCAT_CONVERT)
            continue;
        remat_fn *f = pair_of(op);
        remat_program *p = compile_ok(f);
        if (p->n_fused != elementwise)
            fail_msg("'%s' then add: %d ops fused, want %d (category %s)", remat_op_name(op), (int)p->n_fused,
                     elementwise, remat_op_category_name(c));
        remat_program_free(p);
        remat_fn_free(f);
    }
}

/* lowering memory for a fused group: a bump allocator over a static block */
static void *bump_alloc(void *ctx, size_t bytes)
{
    static _Alignas(16) unsigned char block[4096];
    size_t *used = ctx, at = (*used + 15) & ~(size_t)15;
    if (at + bytes > sizeof block)
        return NULL;
    *used = at + bytes;
    return block + at;
}

/* every backend classifies a fused micro-op through rmi_fused_uop_kind_of:
 * exactly the elementwise rows are micro-ops, each run as its category and
 * parameter kind say, and broadcast_in_dim (a row or column vector read in
 * place: remat_fused_op.row_in); a group holding any other op is refused by
 * name */
static void test_op_table_fused_micro_ops_follow_the_row(void **state)
{
    (void)state;
    for (int k = 0; k < REMAT_OP_COUNT; k++) {
        const remat_op op = (remat_op)k;
        const int kind = rmi_fused_uop_kind_of(op);
        if ((kind >= 0) != (remat_op_is_elementwise(op) || op == REMAT_OP_BROADCAST))
            fail_msg("'%s' (category %s) is%s a fused micro-op but%s elementwise", remat_op_name(op),
                     remat_op_category_name(remat_op_category_of(op)), kind >= 0 ? "" : " not",
                     kind >= 0 ? " not" : "");
        if (remat_op_category_of(op) == REMAT_OPCAT_UNARY && remat_op_param_of(op) == REMAT_OPP_NONE)
            assert_int_equal(kind, REMAT_UOP_UNARY);
        if (remat_op_is_binary(op))
            assert_int_equal(kind, REMAT_UOP_BINARY);
    }
    assert_int_equal(rmi_fused_uop_kind_of(REMAT_OP_INTEGER_POW), REMAT_UOP_INTEGER_POW);
    assert_int_equal(rmi_fused_uop_kind_of(REMAT_OP_POW), REMAT_UOP_POW);
    assert_int_equal(rmi_fused_uop_kind_of(REMAT_OP_SELECT), REMAT_UOP_SELECT);
    assert_int_equal(rmi_fused_uop_kind_of(REMAT_OP_LT), REMAT_UOP_BINARY);
    assert_int_equal(rmi_fused_uop_kind_of(REMAT_OP_BROADCAST), REMAT_UOP_BCAST);
    for (size_t i = 0; i < sizeof BAD_OPS / sizeof *BAD_OPS; i++)
        assert_int_equal(rmi_fused_uop_kind_of(BAD_OPS[i]), -1);

    /* exp(x0) then dot_general: the CPU lowering names the op it cannot run */
    const remat_fused_uop uops[2] = {{.op = REMAT_OP_EXP, .dst = 0, .src = {-1, INT16_MIN, INT16_MIN}},
                                     {.op = REMAT_OP_DOT_GENERAL, .dst = 1, .src = {0, 0, INT16_MIN}}};
    const remat_fused_op group = {.dtype = REMAT_F64, .nin = 1, .n_regs = 1, .n_uops = 2, .uops = uops};
    const remat_backend *be = remat_backend_cpu();
    remat_instr ins = {0};
    size_t used = 0;
    assert_int_equal(be->iface.lower_fused(&group, &ins, bump_alloc, &used), REMAT_ERR_UNSUPPORTED);
    assert_non_null(strstr(remat_last_error(), "'dot_general' in a fused group is not elementwise"));
    used = 0;
    const remat_fused_op ok = {.dtype = REMAT_F64, .nin = 1, .n_regs = 1, .n_uops = 1, .uops = uops};
    assert_ok(be->iface.lower_fused(&ok, &ins, bump_alloc, &used));
}

int main(void)
{
    rng_seed(0x0b7ab1e5eedull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_table_every_row_is_complete),
        cmocka_unit_test(test_op_table_rejects_values_outside_it),
        cmocka_unit_test(test_op_table_cpu_supports_exactly_its_categories),
        cmocka_unit_test(test_op_table_generic_ops_differentiate_as_their_row_says),
        cmocka_unit_test(test_op_table_fusion_takes_the_elementwise_categories),
        cmocka_unit_test(test_op_table_fused_micro_ops_follow_the_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
