/*
 * test_ad_jvp_transforms.c — what is built on forward mode and where it
 * reaches: remat_jacfwd against the VJP-built Jacobian, remat_hvp against
 * central differences of the gradient (also through a scan), JVPs through
 * checkpoint regions (the inlined function's to rounding) and scans (central
 * differences, <w, J v> = <J^T w, v> against the scan's VJP, compiled lane
 * loops), and bad input. The per-op rules and the jax.jvp goldens are in
 * test_ad_jvp.c.
 */
#include "test_ad_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* f(a, b) = (sin(a) * sum(b), sum(a * a) * b): two outputs of different shapes */
static remat_fn *two_out_fn(void)
{
    remat_fn *f = remat_fn_new("two_out");
    remat_val a = remat_arg(f, "a", REMAT_F64, 1, ((int64_t[]){3}));
    remat_val b = remat_arg(f, "b", REMAT_F64, 2, ((int64_t[]){2, 2}));
    remat_fn_output(f, remat_mul(f, remat_sin(f, a), remat_sum_all(f, b)));
    remat_fn_output(f, remat_mul(f, remat_sum_all(f, remat_mul(f, a, a)), b));
    assert_fn_ok(f);
    return f;
}

/* jacfwd's Jacobians against the rows reverse mode gives, one VJP per
 * output element with a one-hot cotangent. */
static void test_ad_jvp_jacfwd_equals_vjp_jacobian(void **state)
{
    (void)state;
    remat_fn *f = two_out_fn();
    remat_fn *jf = NULL;
    assert_int_equal(remat_jacfwd(f, 0, NULL, &jf), REMAT_OK);
    double a[3] = {0.3, -1.2, 0.7}, b[4] = {0.5, -0.25, 2.0, 1.5};
    remat_tensor in[4] = {remat_tensor_f64(a, 1, (int64_t[]){3}), remat_tensor_f64(b, 2, (int64_t[]){2, 2})};
    outs_t jo;
    run_fn(jf, 2, in, &jo, NULL, NULL);
    assert_int_equal(jo.n, 4);
    const int64_t want[4][4] = {{3, 3}, {3, 2, 2}, {2, 2, 3}, {2, 2, 2, 2}};
    const int want_rank[4] = {2, 3, 3, 4};
    for (int k = 0; k < 4; k++) {
        remat_shape ws = remat_shape_make(want_rank[k], want[k]);
        assert_true(remat_shape_equal(&jo.t[k].shape, &ws));
    }
    remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL);
    remat_program *p = compile_ok(vj);
    const int64_t ny[2] = {3, 4}, nx[2] = {3, 4};
    double c0[3], c1[4];
    in[2] = remat_tensor_f64(c0, 1, (int64_t[]){3});
    in[3] = remat_tensor_f64(c1, 2, (int64_t[]){2, 2});
    for (int k = 0; k < 2; k++)
        for (int64_t e = 0; e < ny[k]; e++) {
            memset(c0, 0, sizeof c0);
            memset(c1, 0, sizeof c1);
            (k == 0 ? c0 : c1)[e] = 1.0;
            outs_t vo;
            run_prog(p, 4, in, &vo, NULL);
            for (int j = 0; j < 2; j++) {
                const double *row = vo.t[2 + j].data, *jac = jo.t[k * 2 + j].data;
                for (int64_t i = 0; i < nx[j]; i++)
                    if (!(fabs(jac[e * nx[j] + i] - row[i]) <= 1e-14 * (1 + fabs(row[i]))))
                        fail_msg("jacfwd d out%d[%lld] / d arg%d[%lld] = %.17g, VJP row %.17g", k, (long long)e,
                                 j, (long long)i, jac[e * nx[j] + i], row[i]);
            }
            outs_free(&vo);
        }
    outs_free(&jo);
    remat_program_free(p);
    remat_fn_free(vj);
    remat_fn_free(jf);
    remat_fn_free(f);
}

/* jacfwd w.r.t. one argument of a mixed-dtype function: only that one */
static void test_ad_jvp_jacfwd_argnums_f32(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("f32");
    remat_val a = remat_arg(f, "a", REMAT_F32, 1, ((int64_t[]){2}));
    remat_val s = remat_arg(f, "s", REMAT_F32, 0, NULL);
    remat_fn_output(f, remat_mul(f, remat_exp(f, a), s));
    assert_fn_ok(f);
    remat_fn *jf = NULL;
    assert_int_equal(remat_jacfwd(f, 1, (int[]){1}, &jf), REMAT_OK);
    float av[2] = {0.5f, -1.0f}, sv = 3.0f;
    remat_tensor in[2] = {remat_tensor_f32(av, 1, (int64_t[]){2}), remat_tensor_f32(&sv, 0, NULL)};
    outs_t jo;
    run_fn(jf, 2, in, &jo, NULL, NULL);
    assert_int_equal(jo.n, 1);
    assert_int_equal(jo.t[0].shape.rank, 1);
    const float *d = jo.t[0].data;
    assert_true(d[0] == expf(0.5f) && d[1] == expf(-1.0f));
    outs_free(&jo);
    remat_fn_free(jf);
    remat_fn_free(f);
}

/* f(x, w) = sum(sin(x * w)) + sum(x^3) * sum(w): H v against central
 * differences of the gradient along v */
static remat_fn *hvp_target(void)
{
    remat_fn *f = remat_fn_new("hvp_target");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){4}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 1, ((int64_t[]){4}));
    remat_val a = remat_sum_all(f, remat_sin(f, remat_mul(f, x, w)));
    remat_val b = remat_mul(f, remat_sum_all(f, remat_integer_pow(f, x, 3)), remat_sum_all(f, w));
    remat_fn_output(f, remat_add(f, a, b));
    assert_fn_ok(f);
    return f;
}

static void check_hvp_fd(const remat_fn *f, int n_argnums, const int *argnums)
{
    remat_fn *hv = NULL;
    assert_int_equal(remat_hvp(f, n_argnums, argnums, &hv), REMAT_OK);
    remat_fn *g = grad_ok(f, n_argnums, argnums);
    double x[2][4] = {{0.3, -0.8, 1.1, 0.4}, {0.9, 0.2, -0.5, 1.3}}, v[2][4] = {{1, -0.5, 0.25, 2}, {-1, 0.5, 1.5, 0.1}};
    int n_wrt = n_argnums ? n_argnums : 2;
    remat_tensor in[4] = {remat_tensor_f64(x[0], 1, (int64_t[]){4}), remat_tensor_f64(x[1], 1, (int64_t[]){4})};
    for (int k = 0; k < n_wrt; k++)
        in[2 + k] = remat_tensor_f64(v[n_argnums ? argnums[k] : k], 1, (int64_t[]){4});
    outs_t ho, gp, gm;
    run_fn(hv, 2 + n_wrt, in, &ho, NULL, NULL);
    assert_int_equal(ho.n, n_wrt);
    remat_program *p = compile_ok(g);
    const double h = 1e-6;
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < n_wrt; k++) {
            int a = n_argnums ? argnums[k] : k;
            for (int i = 0; i < 4; i++)
                x[a][i] += (s == 0 ? h : -2 * h) * v[a][i];
        }
        run_prog(p, 2, in, s == 0 ? &gp : &gm, NULL);
    }
    for (int k = 0; k < n_wrt; k++)
        for (int i = 0; i < 4; i++) {
            double fd = (((double *)gp.t[k].data)[i] - ((double *)gm.t[k].data)[i]) / (2 * h);
            double got = ((double *)ho.t[k].data)[i];
            if (!(fabs(got - fd) <= 1e-6 * fabs(fd) + 1e-7))
                fail_msg("hvp of %s: (H v)[%d][%d] = %.12g, finite difference of the gradient %.12g",
                         remat_fn_name(f), k, i, got, fd);
        }
    outs_free(&ho);
    outs_free(&gp);
    outs_free(&gm);
    remat_program_free(p);
    remat_fn_free(g);
    remat_fn_free(hv);
}

static void test_ad_jvp_hvp_finite_differences(void **state)
{
    (void)state;
    remat_fn *f = hvp_target();
    check_hvp_fd(f, 0, NULL);
    check_hvp_fd(f, 1, (int[]){1});
    remat_fn_free(f);
}

/* body(x, w) = sin(x @ w); net(x, w) = sum(body(body(x, w), w)^2) with the
 * body as a checkpoint region, or inlined */
static remat_fn *region_net(int checkpointed)
{
    remat_fn *body = remat_fn_new("body");
    remat_val bx = remat_arg(body, "x", REMAT_F64, 2, ((int64_t[]){2, 3}));
    remat_val bw = remat_arg(body, "w", REMAT_F64, 2, ((int64_t[]){3, 3}));
    remat_fn_output(body, remat_sin(body, remat_matmul(body, bx, bw)));
    remat_fn *callee = checkpointed ? remat_checkpoint(body, remat_nothing_saveable) : remat_fn_ref(body);
    remat_fn *f = remat_fn_new(checkpointed ? "net_checkpointed" : "net_inlined");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){2, 3}));
    remat_val w = remat_arg(f, "w", REMAT_F64, 2, ((int64_t[]){3, 3}));
    remat_val h = remat_call1(f, callee, 2, ((remat_val[]){x, w}));
    h = remat_call1(f, callee, 2, ((remat_val[]){h, w}));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, h)));
    assert_fn_ok(f);
    remat_fn_free(callee);
    remat_fn_free(body);
    return f;
}


/* The JVP of a function with checkpoint regions keeps them as regions over
 * the body's JVP, and equals the JVP of the same function inlined; so do its
 * HVPs (reverse over the regions, then forward). To rounding, not to the bit:
 * the two graphs reach their matmuls through different dot_general forms
 * (transposed operands, other BLAS calls), whose order of summation is the
 * BLAS kernel's (docs/design-notes.md, "Bitwise contracts": different code
 * paths compare with a tolerance). */
static void test_ad_jvp_checkpoint_region(void **state)
{
    (void)state;
    remat_fn *fc = region_net(1), *fi = region_net(0);
    remat_fn *jc = jvp_ok(fc, 0, NULL), *ji = jvp_ok(fi, 0, NULL);
    assert_int_equal(count_op(fc, REMAT_OP_CHECKPOINT), 2);
    assert_int_equal(count_op(jc, REMAT_OP_CHECKPOINT), 2);
    assert_int_equal(count_op(ji, REMAT_OP_CHECKPOINT), 0);
    double x[6], w[9], tx[6], tw[9];
    rng_seed(7);
    fill_uniform(x, 6, -1, 1, 0);
    fill_uniform(w, 9, -1, 1, 0);
    fill_uniform(tx, 6, -1, 1, 0);
    fill_uniform(tw, 9, -1, 1, 0);
    remat_tensor in[4] = {remat_tensor_f64(x, 2, (int64_t[]){2, 3}), remat_tensor_f64(w, 2, (int64_t[]){3, 3}),
                          remat_tensor_f64(tx, 2, (int64_t[]){2, 3}), remat_tensor_f64(tw, 2, (int64_t[]){3, 3})};
    outs_t oc, oi;
    run_fn(jc, 4, in, &oc, NULL, NULL);
    run_fn(ji, 4, in, &oi, NULL, NULL);
    assert_int_equal(oc.n, 2);
    for (int k = 0; k < 2; k++)
        check_close("jvp checkpointed vs inlined", 1, oc.t[k].data, oi.t[k].data, 1e-14, 1e-15);
    outs_free(&oc);
    outs_free(&oi);

    remat_fn *hc = NULL, *hi = NULL;
    assert_int_equal(remat_hvp(fc, 0, NULL, &hc), REMAT_OK);
    assert_int_equal(remat_hvp(fi, 0, NULL, &hi), REMAT_OK);
    run_fn(hc, 4, in, &oc, NULL, NULL);
    run_fn(hi, 4, in, &oi, NULL, NULL);
    check_close("hvp checkpointed vs inlined, x", 6, oc.t[0].data, oi.t[0].data, 1e-14, 1e-15);
    check_close("hvp checkpointed vs inlined, w", 9, oc.t[1].data, oi.t[1].data, 1e-14, 1e-15);
    outs_free(&oc);
    outs_free(&oi);
    remat_fn_free(hc);
    remat_fn_free(hi);
    remat_fn_free(jc);
    remat_fn_free(ji);
    remat_fn_free(fc);
    remat_fn_free(fi);
}


/* J v of a scan (tangents carried in the carry) against central differences
 * and the scan's VJP; the JVP loop is an ordinary scan, compiled to a lane
 * loop like the primal one. With a tangent on k alone, the carry's tangent
 * starts at zero and picks k's up. */
static void check_scan_jvp(int reverse, int n_argnums, const int *argnums)
{
    remat_fn *f = jvp_scan_net(reverse);
    remat_fn *j = jvp_ok(f, n_argnums, argnums);
    assert_int_equal(count_op(j, REMAT_OP_HOP), 1);
    double x[3][60], v[3][60];
    const int64_t n[3] = {3, 60, 3};
    const remat_shape sh[3] = {remat_shape_make(1, (int64_t[]){3}), remat_shape_make(2, (int64_t[]){20, 3}),
                               remat_shape_make(1, (int64_t[]){3})};
    rng_seed(11);
    remat_tensor in[6];
    for (int a = 0; a < 3; a++) {
        fill_uniform(x[a], n[a], -1, 1, 0);
        fill_uniform(v[a], n[a], -1, 1, 0);
        in[a] = remat_tensor_f64(x[a], sh[a].rank, sh[a].dims);
    }
    int n_wrt = n_argnums ? n_argnums : 3;
    for (int t = 0; t < n_wrt; t++) {
        int a = n_argnums ? argnums[t] : t;
        in[3 + t] = remat_tensor_f64(v[a], sh[a].rank, sh[a].dims);
    }
    outs_t jo, fo, po, mo;
    remat_memory_plan jplan, fplan;
    run_fn(j, 3 + n_wrt, in, &jo, NULL, &jplan);
    run_fn(f, 3, in, &fo, NULL, &fplan);
    assert_int_equal(jplan.compiled_loops, fplan.compiled_loops); /* compiled when the primal loop is */
    assert_int_equal(jo.n, 4);
    assert_memory_equal(jo.t[0].data, fo.t[0].data, 3 * sizeof(double)); /* contract 5 */
    assert_memory_equal(jo.t[1].data, fo.t[1].data, 60 * sizeof(double)); /* contract 5 */
    const double h = 1e-6;
    remat_program *p = compile_ok(f);
    for (int s = 0; s < 3; s++) {
        for (int t = 0; t < n_wrt; t++) {
            int a = n_argnums ? argnums[t] : t;
            for (int64_t i = 0; i < n[a]; i++)
                x[a][i] += (s == 0 ? h : s == 1 ? -2 * h : h) * v[a][i];
        }
        if (s < 2)
            run_prog(p, 3, in, s == 0 ? &po : &mo, NULL);
    }
    const int64_t no[2] = {3, 60};
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < no[k]; i++) {
            double fd = (((double *)po.t[k].data)[i] - ((double *)mo.t[k].data)[i]) / (2 * h);
            double got = ((double *)jo.t[2 + k].data)[i];
            if (!(fabs(got - fd) <= 1e-6 * fabs(fd) + 1e-7))
                fail_msg("scan jvp (reverse %d): tangent of output %d [%lld] = %.12g, finite difference %.12g",
                         reverse, k, (long long)i, got, fd);
        }
    /* <w, J v> = <J^T w, v> with the scan's reverse mode */
    remat_fn *vj = ad_ok(AD_VJP, f, 0, NULL);
    double w0[3], w1[60];
    fill_uniform(w0, 3, -1, 1, 0);
    fill_uniform(w1, 60, -1, 1, 0);
    remat_tensor vin[5] = {in[0], in[1], in[2], remat_tensor_f64(w0, 1, (int64_t[]){3}),
                           remat_tensor_f64(w1, 2, (int64_t[]){20, 3})};
    outs_t vo;
    run_fn(vj, 5, vin, &vo, NULL, NULL);
    double lhs = dot_n(w0, jo.t[2].data, 3) + dot_n(w1, jo.t[3].data, 60), rhs = 0;
    for (int t = 0; t < n_wrt; t++) {
        int a = n_argnums ? argnums[t] : t;
        rhs += dot_n(vo.t[2 + a].data, v[a], n[a]);
    }
    if (!(fabs(lhs - rhs) <= 1e-12 * (1 + fabs(lhs))))
        fail_msg("scan jvp: <w, J v> = %.17g but <J^T w, v> = %.17g", lhs, rhs);
    outs_free(&vo);
    outs_free(&jo);
    outs_free(&fo);
    outs_free(&po);
    outs_free(&mo);
    remat_program_free(p);
    remat_fn_free(vj);
    remat_fn_free(j);
    remat_fn_free(f);
}

static void test_ad_jvp_scan(void **state)
{
    (void)state;
    check_scan_jvp(0, 0, NULL);
    check_scan_jvp(1, 0, NULL);
    check_scan_jvp(0, 1, (int[]){2});
    check_scan_jvp(0, 1, (int[]){1});
}

/* HVP of a loss through a scan (reverse over forward: the scan's reverse
 * forms have no forward mode) against central differences of the gradient,
 * with a binomial schedule on the loop. */
static void test_ad_jvp_hvp_through_scan(void **state)
{
    (void)state;
    const int64_t d3[1] = {3};
    remat_fn *body = remat_fn_new("step");
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, d3);
    remat_val k = remat_arg(body, "k", REMAT_F64, 1, d3);
    remat_fn_output(body, remat_add(body, c, remat_mul_scalar(body, remat_sin(body, remat_mul(body, k, c)), 0.1)));
    remat_fn *f = remat_fn_new("scan_loss");
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, d3);
    remat_val kk = remat_arg(f, "k", REMAT_F64, 1, d3);
    remat_val cout;
    remat_scan_options opt = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 3}};
    assert_int_equal(remat_scan(f, body, 16, 1, &c0, 0, NULL, 1, &kk, &opt, &cout, NULL), REMAT_OK);
    remat_fn_output(f, remat_sum_all(f, remat_square(f, cout)));
    assert_fn_ok(f);
    remat_fn *hv = NULL;
    assert_int_equal(remat_hvp(f, 0, NULL, &hv), REMAT_OK);
    remat_fn *g = grad_ok(f, 0, NULL);
    double x[2][3] = {{0.5, -0.3, 0.8}, {1.2, 0.7, -0.9}}, v[2][3] = {{1, -0.5, 0.25}, {-1, 0.5, 1.5}};
    remat_tensor in[4];
    for (int a = 0; a < 2; a++) {
        in[a] = remat_tensor_f64(x[a], 1, d3);
        in[2 + a] = remat_tensor_f64(v[a], 1, d3);
    }
    outs_t ho, gp, gm;
    run_fn(hv, 4, in, &ho, NULL, NULL);
    assert_int_equal(ho.n, 2);
    remat_program *p = compile_ok(g);
    const double h = 1e-6;
    for (int s = 0; s < 2; s++) {
        for (int a = 0; a < 2; a++)
            for (int i = 0; i < 3; i++)
                x[a][i] += (s == 0 ? h : -2 * h) * v[a][i];
        run_prog(p, 2, in, s == 0 ? &gp : &gm, NULL);
    }
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 3; i++) {
            double fd = (((double *)gp.t[a].data)[i] - ((double *)gm.t[a].data)[i]) / (2 * h);
            double got = ((double *)ho.t[a].data)[i];
            if (!(fabs(got - fd) <= 1e-6 * fabs(fd) + 1e-7))
                fail_msg("hvp through scan: (H v)[%d][%d] = %.12g, finite difference %.12g", a, i, got, fd);
        }
    outs_free(&ho);
    outs_free(&gp);
    outs_free(&gm);
    remat_program_free(p);
    remat_fn_free(g);
    remat_fn_free(hv);
    remat_fn_free(f);
    remat_fn_free(body);
}

static void test_ad_jvp_bad_input(void **state)
{
    (void)state;
    remat_fn *f = two_out_fn(), *out = NULL;
    assert_int_equal(remat_jvp(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_int_equal(remat_jvp(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_jvp(f, 1, (int[]){2}, &out), REMAT_ERR_ARG);
    assert_true(contains(remat_last_error(), "argnum 2 out of range"));
    assert_int_equal(remat_jvp(f, 2, (int[]){1, 1}, &out), REMAT_ERR_ARG);
    assert_true(contains(remat_last_error(), "argnum 1 given twice"));
    assert_int_equal(remat_jacfwd(f, 1, (int[]){-1}, &out), REMAT_ERR_ARG);
    assert_int_equal(remat_hvp(f, 0, NULL, &out), REMAT_ERR_SHAPE); /* two outputs: not a scalar function */
    assert_null(out);
    remat_fn_free(f);

    remat_fn *c = remat_fn_new("custom");
    remat_val x = remat_arg(c, "x", REMAT_F64, 1, ((int64_t[]){2}));
    remat_fn_output(c, remat_custom(c, &xsin_op, 2, ((remat_val[]){x, x}), REMAT_F64, 1, ((int64_t[]){2})));
    assert_fn_ok(c);
    assert_int_equal(remat_jvp(c, 0, NULL, &out), REMAT_ERR_UNSUPPORTED);
    assert_true(contains(remat_last_error(), "custom op 'xsin' has no JVP"));
    assert_null(out);
    remat_fn_free(c);
}

/* A custom op (VJP only) inside a scan body or a while body: forward mode
 * says the op has no JVP, not "out of memory" (the loops' JVP used to turn
 * any failure of the body's JVP into REMAT_ERR_NOMEM). */
static void test_ad_jvp_custom_op_in_loops(void **state)
{
    (void)state;
    const int64_t d2[1] = {2};
    for (int loop = 0; loop < 2; loop++) {
        remat_fn *body = remat_fn_new("xsin_step");
        remat_val y = remat_arg(body, "y", REMAT_F64, 1, d2), t = REMAT_NONE;
        if (loop == 1)
            t = remat_arg(body, "t", REMAT_F64, 0, NULL);
        remat_fn_output(body, remat_custom(body, &xsin_op, 2, ((remat_val[]){y, y}), REMAT_F64, 1, d2));
        if (loop == 1) {
            remat_fn_output(body, remat_add(body, t, remat_scalar(body, REMAT_F64, 1.0)));
            remat_fn_output(body, remat_scalar(body, REMAT_F64, 1.0)); /* accepted */
        }
        assert_fn_ok(body);
        remat_fn *f = remat_fn_new(loop ? "while_custom" : "scan_custom");
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, d2), out[2];
        if (loop == 0) {
            remat_scan_options opt = {0};
            assert_int_equal(remat_scan(f, body, 4, 1, &y0, 0, NULL, 0, NULL, &opt, out, NULL), REMAT_OK);
        } else {
            remat_fn *c = remat_fn_new("t_below_3");
            remat_arg(c, "y", REMAT_F64, 1, d2);
            remat_val tc = remat_arg(c, "t", REMAT_F64, 0, NULL);
            remat_fn_output(c, remat_lt(c, tc, remat_scalar(c, REMAT_F64, 3.0)));
            assert_fn_ok(c);
            remat_while_options opt = {.max_steps = 10};
            remat_val init[2] = {y0, remat_scalar(f, REMAT_F64, 0.0)};
            assert_int_equal(remat_while(f, c, body, 2, 1, init, 0, NULL, &opt, out, NULL), REMAT_OK);
            remat_fn_free(c);
        }
        remat_fn_output(f, remat_sum_all(f, out[0]));
        assert_fn_ok(f);
        remat_fn *j = NULL;
        assert_int_equal(remat_jvp(f, 0, NULL, &j), REMAT_ERR_UNSUPPORTED);
        assert_true(contains(remat_last_error(), "custom op 'xsin' has no JVP"));
        assert_false(contains(remat_last_error(), "out of memory"));
        assert_null(j);
        remat_fn_free(f);
        remat_fn_free(body);
    }
}

int main(void)
{
    setenv("REMAT_JIT", "always", 1); /* the compiled loops, on scans too short for the default policy */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_jvp_jacfwd_equals_vjp_jacobian),
        cmocka_unit_test(test_ad_jvp_jacfwd_argnums_f32),
        cmocka_unit_test(test_ad_jvp_hvp_finite_differences),
        cmocka_unit_test(test_ad_jvp_checkpoint_region),
        cmocka_unit_test(test_ad_jvp_scan),
        cmocka_unit_test(test_ad_jvp_hvp_through_scan),
        cmocka_unit_test(test_ad_jvp_bad_input),
        cmocka_unit_test(test_ad_jvp_custom_op_in_loops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
