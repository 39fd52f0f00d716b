/*
 * test_while_modes.c — remat_while (remat/loop.h) in forward mode (against
 * central differences and, through the transpose identity, against reverse
 * mode) and second order (remat_hvp); its bad arguments, each refused with
 * a message naming it; flags in f32; memory budgets; the residual report;
 * a while inside a scan body and inside a checkpoint region.
 */
#include "while_models.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "remat/remat.h"

static double y0v[2] = {1.5, -0.75}, kv[2] = {0.8, 2.3};

/* (y_n (2)) = the loop's state at T = 1 from (y0, k), h = 1/16 */
static remat_fn *state_model(bool reject, const char *sched)
{
    remat_fn *c = cond_fn(), *b = body_fn(reject), *f = remat_fn_new("state");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val ks[3] = {k, remat_scalar(f, REMAT_F64, 1.0), remat_scalar(f, REMAT_F64, 0.0625)}, out[3];
    remat_val init[3] = {y0, remat_scalar(f, REMAT_F64, 0.0), remat_scalar(f, REMAT_F64, reject ? 0.0 : 1.0)};
    remat_schedule_spec spec = sched ? spec_of(sched) : (remat_schedule_spec){0};
    remat_while_options opt = {.max_steps = 100, .schedule = sched ? &spec : NULL};
    assert_ok(remat_while(f, c, b, 3, 1, init, 3, ks, &opt, out, NULL));
    remat_fn_output(f, remat_mul(f, out[0], out[0])); /* nonlinear in y0 */
    assert_fn_ok(f);
    remat_fn_free(c);
    remat_fn_free(b);
    return f;
}

static void eval(const remat_fn *f, const double *y0, const double *k, const double *ty, const double *tk,
                 outs_t *o)
{
    double a[4][2];
    memcpy(a[0], y0, sizeof a[0]);
    memcpy(a[1], k, sizeof a[1]);
    remat_tensor in[4] = {remat_tensor_f64(a[0], 1, DIMS(2)), remat_tensor_f64(a[1], 1, DIMS(2))};
    if (ty) {
        memcpy(a[2], ty, sizeof a[2]);
        memcpy(a[3], tk, sizeof a[3]);
        in[2] = remat_tensor_f64(a[2], 1, DIMS(2));
        in[3] = remat_tensor_f64(a[3], 1, DIMS(2));
    }
    run_fn(f, ty ? 4 : 2, in, o, NULL, NULL);
}

static void test_while_jvp_fd_and_transpose(void **state)
{
    (void)state;
    const double v[4] = {0.3, -1.1, 0.7, 0.45}, w[2] = {-0.6, 1.3};
    for (int reject = 0; reject < 2; reject++) {
        remat_fn *f = state_model(reject, reject ? "binomial:3" : NULL), *jf = NULL, *vf = NULL;
        assert_ok(remat_jvp(f, 2, (int[]){0, 1}, &jf));
        outs_t o, op, om;
        eval(jf, y0v, kv, v, v + 2, &o);
        assert_int_equal(o.n, 2);
        /* the primal outputs are f's */
        outs_t p;
        eval(f, y0v, kv, NULL, NULL, &p);
        assert_memory_equal(o.t[0].data, p.t[0].data, 2 * sizeof(double)); /* contract 5 */
        outs_free(&p);
        /* J v against central differences along v */
        const double eps = 1e-6;
        double yp[2], kp[2], ym[2], km[2];
        for (int i = 0; i < 2; i++) {
            yp[i] = y0v[i] + eps * v[i], ym[i] = y0v[i] - eps * v[i];
            kp[i] = kv[i] + eps * v[2 + i], km[i] = kv[i] - eps * v[2 + i];
        }
        eval(f, yp, kp, NULL, NULL, &op);
        eval(f, ym, km, NULL, NULL, &om);
        double fd[2];
        for (int i = 0; i < 2; i++)
            fd[i] = (((double *)op.t[0].data)[i] - ((double *)om.t[0].data)[i]) / (2 * eps);
        for (int i = 0; i < 2; i++) /* a NaN would match a NaN below */
            assert_true(isfinite(((double *)o.t[0].data)[i]) && isfinite(((double *)o.t[1].data)[i]) &&
                        isfinite(fd[i]));
        check_close("J v", 2, o.t[1].data, fd, 1e-7, 1e-9);
        /* <w, J v> = <J^T w, v> with J^T w from the VJP */
        vf = ad_ok(AD_VJP, f, 2, (int[]){0, 1});
        double a[3][2];
        memcpy(a[0], y0v, sizeof a[0]);
        memcpy(a[1], kv, sizeof a[1]);
        memcpy(a[2], w, sizeof a[2]);
        remat_tensor in[3] = {remat_tensor_f64(a[0], 1, DIMS(2)), remat_tensor_f64(a[1], 1, DIMS(2)),
                              remat_tensor_f64(a[2], 1, DIMS(2))};
        outs_t ov;
        run_fn(vf, 3, in, &ov, NULL, NULL);
        double lhs = 0, rhs = 0;
        for (int i = 0; i < 2; i++) {
            lhs += w[i] * ((double *)o.t[1].data)[i];
            rhs += ((double *)ov.t[1].data)[i] * v[i] + ((double *)ov.t[2].data)[i] * v[2 + i];
        }
        check_close("<w, J v> = <J^T w, v>", 1, &lhs, &rhs, 1e-13, 0);
        outs_free(&o);
        outs_free(&op);
        outs_free(&om);
        outs_free(&ov);
        remat_fn_free(vf);
        remat_fn_free(jf);
        remat_fn_free(f);
    }
}

/* ---- bad arguments ---- */

typedef struct {
    const char *what;
    int n_carry, n_diff;
    int bad_init;   /* 1: y0 of shape (3); 2: a const of the wrong shape */
    int bad_cond;   /* 1: returns y (2); 2: cond's y is f32; 3: takes 5 arguments */
    int64_t max_steps;
    const char *sched;
    bool null_opt;
    remat_status want;
    const char *msg;
} bad_case;

static remat_fn *bad_cond_fn(int kind)
{
    remat_fn *c = remat_fn_new("bad_cond");
    remat_val y = remat_arg(c, "y", kind == 2 ? REMAT_F32 : REMAT_F64, 1, DIMS(2));
    remat_val t = remat_arg(c, "t", REMAT_F64, 0, NULL);
    remat_arg(c, "r", REMAT_F64, 0, NULL);
    remat_arg(c, "k", REMAT_F64, 1, DIMS(2));
    if (kind != 3)
        remat_arg(c, "T", REMAT_F64, 0, NULL);
    remat_arg(c, "h", REMAT_F64, 0, NULL);
    remat_fn_output(c, kind == 1 ? y : remat_gt(c, t, t));
    return c;
}

static void test_while_bad_arguments(void **state)
{
    (void)state;
    const bad_case cases[] = {
        {"n_diff > n_carry", 3, 4, 0, 0, 10, NULL, false, REMAT_ERR_ARG, "n_diff is 4, expected 0 .. n_carry (3)"},
        {"n_diff < 0", 3, -1, 0, 0, 10, NULL, false, REMAT_ERR_ARG, "n_diff is -1"},
        {"no carries", 0, 0, 0, 0, 10, NULL, false, REMAT_ERR_ARG, "n_carry is 0"},
        {"carry count", 2, 1, 0, 0, 10, NULL, false, REMAT_ERR_ARG, "body 'euler' takes 6 arguments, given 2 carries"},
        {"cond not scalar", 3, 1, 0, 1, 10, NULL, false, REMAT_ERR_SHAPE,
         "cond 'bad_cond' returns f64[2], expected a scalar"},
        {"cond dtype", 3, 1, 0, 2, 10, NULL, false, REMAT_ERR_DTYPE,
         "argument 0 is f64[2] in body 'euler' but f32[2] in cond 'bad_cond'"},
        {"cond arity", 3, 1, 0, 3, 10, NULL, false, REMAT_ERR_ARG, "cond 'bad_cond' takes 5 arguments"},
        {"init shape", 3, 1, 1, 0, 10, NULL, false, REMAT_ERR_SHAPE, "init carry 0 is f64[3], body 'euler' expects f64[2]"},
        {"const shape", 3, 1, 2, 0, 10, NULL, false, REMAT_ERR_SHAPE, "const 0 is f64[3], body 'euler' expects f64[2]"},
        {"max_steps", 3, 1, 0, 0, 0, NULL, false, REMAT_ERR_VALUE, "max_steps is 0, expected at least 1"},
        {"schedule", 3, 1, 0, 0, 10, "binomial:0", false, REMAT_ERR_ARG, "while: schedule"},
        {"options", 3, 1, 0, 0, 10, NULL, true, REMAT_ERR_NULL, "options are NULL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const bad_case *c = &cases[i];
        remat_fn *cf = c->bad_cond ? bad_cond_fn(c->bad_cond) : cond_fn(), *b = body_fn(false);
        remat_fn *f = remat_fn_new("bad");
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, c->bad_init == 1 ? DIMS(3) : DIMS(2));
        remat_val k = remat_arg(f, "k", REMAT_F64, 1, c->bad_init == 2 ? DIMS(3) : DIMS(2));
        remat_val init[3] = {y0, remat_scalar(f, REMAT_F64, 0.0), remat_scalar(f, REMAT_F64, 1.0)};
        remat_val ks[3] = {k, remat_scalar(f, REMAT_F64, 1.0), remat_scalar(f, REMAT_F64, 0.1)}, out[3];
        remat_schedule_spec spec = {0};
        if (c->sched) /* spec_of would refuse it: set by hand */
            spec = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = 0};
        remat_while_options opt = {.max_steps = c->max_steps, .schedule = c->sched ? &spec : NULL};
        remat_status st = remat_while(f, cf, b, c->n_carry, c->n_diff, init, 3, ks, c->null_opt ? NULL : &opt, out, NULL);
        if (st != c->want)
            fail_msg("%s: status %s, expected %s (%s)", c->what, remat_status_name(st), remat_status_name(c->want),
                     remat_last_error());
        assert_int_equal(remat_fn_status(f), c->want);
        assert_contains(remat_fn_error(f), c->msg);
        assert_contains(remat_fn_error(f), "test_while_modes.c"); /* the caller's line */
        remat_fn_free(f);
        remat_fn_free(cf);
        remat_fn_free(b);
    }
}

/* ---- flags in f32, memory budgets, second order, the residual report ---- */

/* body_fn with its accepted flag converted to f32 (cond stays f64) */
static remat_fn *body_f32_flag(void)
{
    remat_fn *b = body_fn(true), *w = remat_fn_new("euler_rejecting");
    remat_val a[6], o[4];
    for (int i = 0; i < 6; i++) {
        const remat_shape s = remat_val_shape(b, remat_fn_arg(b, i));
        a[i] = remat_arg(w, remat_fn_arg_name(b, i), REMAT_F64, s.rank, s.dims);
    }
    assert_ok(remat_call(w, b, 6, a, o));
    for (int i = 0; i < 3; i++)
        remat_fn_output(w, o[i]);
    remat_fn_output(w, remat_convert(w, o[3], REMAT_F32));
    remat_fn_free(b);
    assert_fn_ok(w);
    return w;
}

/* loss of the rejecting model with the given body, schedule or budget */
static remat_fn *loss_with(remat_fn *b, const char *sched, int64_t budget)
{
    remat_fn *c = cond_fn(), *f = remat_fn_new("loss");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val ks[3] = {k, remat_scalar(f, REMAT_F64, 1.0), remat_scalar(f, REMAT_F64, 0.0625)}, out[3];
    remat_val init[3] = {y0, remat_scalar(f, REMAT_F64, 0.0), remat_scalar(f, REMAT_F64, 0.0)};
    remat_schedule_spec spec = sched ? spec_of(sched) : (remat_schedule_spec){0};
    remat_while_options opt = {.max_steps = 1000, .schedule = sched ? &spec : NULL, .memory_budget = budget};
    assert_ok(remat_while(f, c, b, 3, 1, init, 3, ks, &opt, out, NULL));
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_square(f, out[0])), remat_sum_all(f, out[0])));
    assert_fn_ok(f);
    remat_fn_free(c);
    return f;
}

static void grad_run(const remat_fn *f, const double *y0, double g[4], remat_stats *st, remat_memory_plan *plan)
{
    double a[2][2];
    memcpy(a[0], y0, sizeof a[0]);
    memcpy(a[1], kv, sizeof a[1]);
    remat_tensor in[2] = {remat_tensor_f64(a[0], 1, DIMS(2)), remat_tensor_f64(a[1], 1, DIMS(2))};
    remat_fn *df = grad_ok(f, 2, (int[]){0, 1});
    outs_t o;
    run_fn(df, 2, in, &o, st, plan);
    memcpy(g, o.t[0].data, 2 * sizeof(double));
    memcpy(g + 2, o.t[1].data, 2 * sizeof(double));
    outs_free(&o);
    remat_fn_free(df);
}

static void test_while_f32_flag(void **state)
{
    (void)state;
    remat_fn *b64 = body_fn(true), *b32 = body_f32_flag();
    remat_fn *f64 = loss_with(b64, NULL, 0), *f32 = loss_with(b32, NULL, 0);
    double g64[4], g32[4];
    grad_run(f64, y0v, g64, NULL, NULL);
    grad_run(f32, y0v, g32, NULL, NULL);
    assert_memory_equal(g64, g32, sizeof g64);
    for (int i = 0; i < 4; i++)
        assert_true(isfinite(g64[i]));
    remat_fn_free(f64);
    remat_fn_free(f32);
    remat_fn_free(b64);
    remat_fn_free(b32);
}

static void test_while_memory_budget(void **state)
{
    (void)state;
    remat_fn *b = body_fn(true), *f0 = loss_with(b, NULL, 0);
    double ref[4], g[4];
    remat_stats st;
    remat_memory_plan plan;
    grad_run(f0, y0v, ref, &st, &plan);
    const int64_t carry = (int64_t)plan.scan_carry_bytes, tape = (int64_t)plan.scan_tape_bytes;
    /* room for 3 snapshots and a tape, never for 1000 tapes: online:3 */
    const int64_t budget = 3 * carry + tape + carry / 2;
    remat_fn *f = loss_with(b, NULL, budget);
    grad_run(f, y0v, g, &st, &plan);
    assert_memory_equal(g, ref, sizeof g); /* contract 3 */
    if (st.peak_snapshot_bytes > (size_t)budget)
        fail_msg("store %zu > budget %lld (plan %zu)", st.peak_snapshot_bytes, (long long)budget, plan.peak_snapshot_bytes);
    assert_int_equal(plan.peak_snapshot_bytes, 3 * carry + tape); /* the store online:3 needs */
    remat_fn_free(f);
    /* too small for any schedule: the least that fits is named */
    remat_fn *c = cond_fn(), *h = remat_fn_new("h");
    remat_val y0 = remat_arg(h, "y0", REMAT_F64, 1, DIMS(2)), z = remat_scalar(h, REMAT_F64, 0), out[3];
    remat_while_options opt = {.max_steps = 1000, .memory_budget = carry / 2};
    assert_int_equal(remat_while(h, c, b, 3, 1, ((remat_val[]){y0, z, z}), 3, ((remat_val[]){y0, z, z}), &opt, out,
                                 NULL),
                     REMAT_ERR_BUDGET);
    assert_contains(remat_fn_error(h), "memory_budget: memory budget of 24 bytes is too small");
    assert_contains(remat_fn_error(h), "at least 112 bytes");
    remat_fn_free(h);
    /* a budget and a schedule, a negative budget */
    h = remat_fn_new("h");
    y0 = remat_arg(h, "y0", REMAT_F64, 1, DIMS(2)), z = remat_scalar(h, REMAT_F64, 0);
    remat_schedule_spec spec = spec_of("store-all");
    opt = (remat_while_options){.max_steps = 10, .schedule = &spec, .memory_budget = 1000};
    assert_int_equal(remat_while(h, c, b, 3, 1, ((remat_val[]){y0, z, z}), 3, ((remat_val[]){y0, z, z}), &opt, out,
                                 NULL),
                     REMAT_ERR_ARG);
    assert_contains(remat_fn_error(h), "name one or the other");
    remat_fn_free(h);
    h = remat_fn_new("h");
    y0 = remat_arg(h, "y0", REMAT_F64, 1, DIMS(2)), z = remat_scalar(h, REMAT_F64, 0);
    opt = (remat_while_options){.max_steps = 10, .memory_budget = -5};
    assert_int_equal(remat_while(h, c, b, 3, 1, ((remat_val[]){y0, z, z}), 3, ((remat_val[]){y0, z, z}), &opt, out,
                                 NULL),
                     REMAT_ERR_VALUE);
    assert_contains(remat_fn_error(h), "memory_budget is -5");
    remat_fn_free(h);
    remat_fn_free(c);
    remat_fn_free(f0);
    remat_fn_free(b);
}

/* H v by remat_hvp (reverse over the forward-mode loop) against central
 * differences of the gradient */
static void test_while_hvp(void **state)
{
    (void)state;
    remat_fn *b = body_fn(true), *f = loss_with(b, NULL, 0), *hf = NULL;
    assert_ok(remat_hvp(f, 1, (int[]){0}, &hf));
    const double v[2] = {0.4, -0.9}, eps = 1e-5;
    double a[3][2];
    memcpy(a[0], y0v, sizeof a[0]);
    memcpy(a[1], kv, sizeof a[1]);
    memcpy(a[2], v, sizeof a[2]);
    remat_tensor in[3] = {remat_tensor_f64(a[0], 1, DIMS(2)), remat_tensor_f64(a[1], 1, DIMS(2)),
                          remat_tensor_f64(a[2], 1, DIMS(2))};
    outs_t o;
    run_fn(hf, 3, in, &o, NULL, NULL);
    double yp[2] = {y0v[0] + eps * v[0], y0v[1] + eps * v[1]}, ym[2] = {y0v[0] - eps * v[0], y0v[1] - eps * v[1]};
    double gp[4], gm[4], fd[2];
    grad_run(f, yp, gp, NULL, NULL);
    grad_run(f, ym, gm, NULL, NULL);
    for (int i = 0; i < 2; i++)
        fd[i] = (gp[i] - gm[i]) / (2 * eps);
    check_close("H v", 2, o.t[0].data, fd, 1e-7, 1e-9);
    assert_true(isfinite(fd[0]) && isfinite(fd[1]));
    outs_free(&o);
    remat_fn_free(hf);
    remat_fn_free(f);
    remat_fn_free(b);
}

/* the store is in the residual report, with its schedule and capacity */
static void test_while_residual_report(void **state)
{
    (void)state;
    remat_fn *b = body_fn(true), *f = loss_with(b, NULL, 0);
    remat_residual_list *r = NULL;
    assert_ok(remat_saved_residuals(f, 2, (int[]){0, 1}, &r));
    int found = 0;
    for (int i = 0; i < remat_residual_list_count(r); i++) {
        const remat_residual *e = remat_residual_list_get(r, i);
        if (e->kind != REMAT_RESIDUAL_SNAPSHOT)
            continue;
        found++;
        assert_contains(e->detail, "online:16 within max_steps 1000");
        assert_int_equal(e->count, REMAT_WHILE_DEFAULT_SNAPSHOTS);
    }
    assert_int_equal(found, 1);
    remat_residual_list_free(r);
    remat_fn_free(f);
    remat_fn_free(b);
}

/* a body whose carry t comes out as f64[1] (kind 1), or whose accepted flag
 * is f64[2] (kind 2) */
static remat_fn *bad_body_fn(int kind)
{
    remat_fn *b = remat_fn_new("bad_body");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, DIMS(2));
    remat_val t = remat_arg(b, "t", REMAT_F64, 0, NULL);
    remat_val r = remat_arg(b, "r", REMAT_F64, 0, NULL);
    remat_arg(b, "k", REMAT_F64, 1, DIMS(2));
    remat_arg(b, "T", REMAT_F64, 0, NULL);
    remat_arg(b, "h", REMAT_F64, 0, NULL);
    remat_fn_output(b, y);
    remat_fn_output(b, kind == 1 ? remat_reshape(b, t, 1, DIMS(1)) : t);
    remat_fn_output(b, r);
    remat_fn_output(b, kind == 2 ? y : r);
    return b;
}

static void test_while_bad_body(void **state)
{
    (void)state;
    const char *want[2] = {"body 'bad_body' carry 1 goes in as f64[] but comes out as f64[1]",
                           "body 'bad_body' output 3 (accepted) is f64[2], expected a scalar"};
    for (int kind = 1; kind <= 2; kind++) {
        remat_fn *c = cond_fn(), *b = bad_body_fn(kind), *f = remat_fn_new("bad");
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), z = remat_scalar(f, REMAT_F64, 0), out[3];
        remat_while_options opt = {.max_steps = 10};
        assert_int_equal(remat_while(f, c, b, 3, 1, ((remat_val[]){y0, z, z}), 3, ((remat_val[]){y0, z, z}), &opt,
                                     out, NULL),
                         REMAT_ERR_SHAPE);
        assert_contains(remat_fn_error(f), want[kind - 1]);
        remat_fn_free(f);
        remat_fn_free(b);
        remat_fn_free(c);
    }
}

/* a while-loop inside a scan body (the scan tapes its store per step) and
 * inside a checkpoint region: gradients against central differences */
static remat_fn *nested_model(bool in_scan)
{
    remat_fn *c = cond_fn(), *b = body_fn(true), *inner = remat_fn_new("inner");
    remat_val y = remat_arg(inner, "y", REMAT_F64, 1, DIMS(2)), k = remat_arg(inner, "k", REMAT_F64, 1, DIMS(2));
    remat_val z = remat_scalar(inner, REMAT_F64, 0), out[3];
    remat_val ks[3] = {k, remat_scalar(inner, REMAT_F64, 0.25), remat_scalar(inner, REMAT_F64, 0.0625)};
    remat_schedule_spec spec = spec_of("online:2");
    remat_while_options opt = {.max_steps = 100, .schedule = &spec};
    assert_ok(remat_while(inner, c, b, 3, 1, ((remat_val[]){y, z, z}), 3, ks, &opt, out, NULL));
    remat_fn_output(inner, remat_sin(inner, out[0]));
    assert_fn_ok(inner);
    remat_fn *f = remat_fn_new("outer");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), kk = remat_arg(f, "k", REMAT_F64, 1, DIMS(2)), yn;
    if (in_scan) {
        remat_scan_options so = {.schedule = spec_of("binomial:2")};
        assert_ok(remat_scan(f, inner, 4, 1, &y0, 0, NULL, 1, &kk, &so, &yn, NULL));
    } else {
        remat_fn *region = remat_checkpoint(inner, NULL);
        assert_ok(remat_call(f, region, 2, ((remat_val[]){y0, kk}), &yn));
        remat_fn_free(region);
    }
    remat_fn_output(f, remat_sum_all(f, remat_square(f, yn)));
    assert_fn_ok(f);
    remat_fn_free(inner);
    remat_fn_free(b);
    remat_fn_free(c);
    return f;
}

static double value_at(const remat_fn *f, const double *y0, const double *k)
{
    outs_t o;
    eval(f, y0, k, NULL, NULL, &o);
    double v = ((double *)o.t[0].data)[0];
    outs_free(&o);
    return v;
}

static void test_while_nested(void **state)
{
    (void)state;
    for (int in_scan = 0; in_scan < 2; in_scan++) {
        remat_fn *f = nested_model(in_scan);
        double g[4];
        grad_run(f, y0v, g, NULL, NULL);
        for (int p = 0; p < 4; p++) {
            const double eps = 1e-6;
            double y[2] = {y0v[0], y0v[1]}, k[2] = {kv[0], kv[1]};
            double *x = p < 2 ? &y[p] : &k[p - 2], x0 = *x;
            *x = x0 + eps;
            const double lp = value_at(f, y, k);
            *x = x0 - eps;
            const double fd = (lp - value_at(f, y, k)) / (2 * eps);
            assert_true(isfinite(g[p]));
            check_close(in_scan ? "while in a scan body" : "while in a checkpoint region", 1, &g[p], &fd, 1e-7,
                        1e-9);
        }
        remat_fn_free(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_while_jvp_fd_and_transpose),
        cmocka_unit_test(test_while_bad_arguments),
        cmocka_unit_test(test_while_bad_body),
        cmocka_unit_test(test_while_f32_flag),
        cmocka_unit_test(test_while_memory_budget),
        cmocka_unit_test(test_while_hvp),
        cmocka_unit_test(test_while_residual_report),
        cmocka_unit_test(test_while_nested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
