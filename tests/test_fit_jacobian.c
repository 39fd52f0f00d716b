/*
 * test_fit_jacobian.c — the fit's Jacobian by forward mode (one JVP per free
 * parameter) against reverse mode (one VJP per measured cell): the same
 * weighted Jacobian to rounding, the same LM path to the optimum, and AUTO
 * picking the mode with fewer program runs. On the Van de Vusse example
 * (two experiments, three constants) and three battery problems.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "battery_util.h"
#include "models/fit/fit_impl.h"
#include "remat/remat.h"

typedef struct {
    remat_mechanism *m;
    int n_data;
    remat_dataset *data[2];
    battery_problem b; /* a battery problem: m and data[0] are its */
} problem;

static void load_vdv(problem *p)
{
    memset(p, 0, sizeof *p);
    assert_ok(remat_mechanism_parse_file(EXAMPLES_DIR "/van_de_vusse.mech", &p->m));
    assert_ok(remat_dataset_read(EXAMPLES_DIR "/feed_10.csv", p->m, &p->data[0]));
    assert_ok(remat_dataset_read(EXAMPLES_DIR "/feed_5.csv", p->m, &p->data[1]));
    p->n_data = 2;
}

static void load_battery(problem *p, const char *name)
{
    memset(p, 0, sizeof *p);
    char path[1024], err[1024];
    snprintf(path, sizeof path, "%s/%s.mech", BATTERY_DIR, name);
    if (battery_load(path, &p->b, err, sizeof err))
        fail_msg("%s", err);
    p->m = p->b.mech;
    p->data[0] = p->b.data;
    p->n_data = 1;
}

static void problem_free(problem *p)
{
    if (p->b.mech) {
        battery_free(&p->b);
        return;
    }
    for (int e = 0; e < p->n_data; e++)
        remat_dataset_free(p->data[e]);
    remat_mechanism_free(p->m);
}

static remat_fit *fit_with(const problem *p, remat_fit_options o, remat_fit_jacobian mode)
{
    o.jacobian = mode;
    remat_fit *fit;
    assert_ok(remat_fit_new(p->m, p->n_data, p->data, &o, &fit));
    return fit;
}

/* J (N x P) at params by fit's mode */
static double *jacobian(remat_fit *fit, int P, const double *params)
{
    int64_t N = remat_fit_residual_count(fit);
    double *J = xmalloc(sizeof *J * (size_t)N * (size_t)P);
    assert_ok(remat_fit_jacobian_at(fit, params, J));
    return J;
}

/* |a - b| <= rel * (the column's largest |entry|), entry by entry: a column
 * spans decades (a concentration's sensitivity near t0 is ~0), so the scale
 * is the column's, not the entry's. */
static void assert_same_jacobian(const char *what, int64_t N, int P, const double *a, const double *b, double rel)
{
    for (int j = 0; j < P; j++) {
        double scale = 0;
        for (int64_t k = 0; k < N; k++)
            scale = fmax(scale, fabs(b[k * P + j]));
        for (int64_t k = 0; k < N; k++) {
            double d = fabs(a[k * P + j] - b[k * P + j]);
            if (!(d <= rel * scale))
                fail_msg("%s: J[%lld][%d] forward %.17g, reverse %.17g (%.3g of the column's %.3g)", what,
                         (long long)k, j, a[k * P + j], b[k * P + j], d / scale, scale);
        }
    }
}

/* Both modes: the Jacobians at the start and the fits from it. */
static void check_modes(const char *what, const problem *p, remat_fit_options o)
{
    int P = remat_mechanism_param_count(p->m);
    remat_fit *fwd = fit_with(p, o, REMAT_FIT_JACOBIAN_FORWARD), *rev = fit_with(p, o, REMAT_FIT_JACOBIAN_REVERSE);
    assert_int_equal(remat_fit_jacobian_mode(fwd), REMAT_FIT_JACOBIAN_FORWARD);
    assert_int_equal(remat_fit_jacobian_mode(rev), REMAT_FIT_JACOBIAN_REVERSE);
    int64_t N = remat_fit_residual_count(fwd);
    const double *start = o.start ? o.start : NULL;
    double *p0 = xmalloc(sizeof *p0 * (size_t)P);
    for (int i = 0; i < P; i++)
        p0[i] = start ? start[i] : remat_mechanism_param_value(p->m, i);
    double *Jf = jacobian(fwd, P, p0), *Jr = jacobian(rev, P, p0);
    assert_same_jacobian(what, N, P, Jf, Jr, 1e-12);

    remat_fit_result rf, rr;
    assert_ok(remat_fit_run(fwd, &rf));
    assert_ok(remat_fit_run(rev, &rr));
    printf("%s: N = %lld, P = %d; forward SSE %.17g in %d iterations, %lld runs; reverse %.17g in %d, %lld runs\n",
           what, (long long)N, P, rf.objective, rf.iterations, (long long)rf.evaluations, rr.objective,
           rr.iterations, (long long)rr.evaluations);
    assert_string_equal(rf.jacobian, "forward");
    assert_string_equal(rr.jacobian, "reverse");
    if (!(fabs(rf.objective - rr.objective) <= 1e-10 * rr.objective))
        fail_msg("%s: forward SSE %.17g, reverse %.17g", what, rf.objective, rr.objective);
    /* the same path: every iterate's SSE to 1e-10. At the optimum the step
     * is at rounding level and so is which stop test fires first (gasoil_floudas:
     * forward stops on xtol one iteration after reverse finds no damped step
     * lowering the SSE, both at the same SSE to 2e-15): one iteration apart
     * there, only where both converged. Which iteration that is depends on
     * the BLAS kernels' rounding (van_de_vusse weighted: 8 forward against 7
     * reverse under OpenBLAS's Haswell and Sandybridge kernels, 7 and 7 under
     * Prescott's), so counts are held to +-1, never to equality
     * (docs/design-notes.md, "Bitwise contracts": different code paths) */
    int n_common = rf.n_history < rr.n_history ? rf.n_history : rr.n_history;
    for (int it = 0; it < n_common; it++)
        if (!(fabs(rf.history_objective[it] - rr.history_objective[it]) <= 1e-10 * rr.history_objective[it]))
            fail_msg("%s: iteration %d: forward SSE %.17g, reverse %.17g", what, it, rf.history_objective[it],
                     rr.history_objective[it]);
    assert_true(rf.converged && rr.converged);
    if (rf.iterations != rr.iterations)
        assert_true(abs(rf.iterations - rr.iterations) == 1 && n_common >= rf.iterations - 1 && n_common >= rr.iterations - 1);
    /* forward runs n_free JVPs per Jacobian where reverse runs one VJP per cell */
    assert_true(rf.evaluations < rr.evaluations);
    remat_fit_result_clear(&rf);
    remat_fit_result_clear(&rr);
    free(Jf);
    free(Jr);
    free(p0);
    remat_fit_free(fwd);
    remat_fit_free(rev);
}

/* Fixed RK4 steps (the default before adaptive stepping). The LM paths of
 * the two modes are compared iterate by iterate at 1e-10: under adaptive
 * steps a rounding-level difference in J can flip an accept decision a few
 * iterations on (pinene: 3e-10 at iteration 6), which says nothing about the
 * Jacobian; the weighted case below runs the adaptive default. */
static remat_fit_options fixed_rk4(void)
{
    remat_fit_options o = remat_fit_defaults();
    o.adaptive = false;
    o.method = REMAT_ODE_RK4;
    return o;
}

static void test_fit_jacobian_vdv_modes_agree(void **state)
{
    (void)state;
    problem p;
    load_vdv(&p);
    check_modes("van_de_vusse", &p, fixed_rk4());
    problem_free(&p);
}

static void test_fit_jacobian_battery_modes_agree(void **state)
{
    (void)state;
    static const char *const names[] = {"pinene", "gasoil_floudas", "series_reversible", "gasoil_cops"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        problem p;
        load_battery(&p, names[i]);
        check_modes(names[i], &p, fixed_rk4());
        problem_free(&p);
    }
}

/* With sigmas the Jacobian is the weighted one, dr_w/dp = (dy/dp) / sigma_s,
 * row by row, in both modes. */
static void test_fit_jacobian_weighted(void **state)
{
    (void)state;
    problem p;
    load_vdv(&p);
    static const double sigma[4] = {0.5, 0.125, 3, 7};
    remat_fit_options o = remat_fit_defaults(), ow = o;
    ow.sigma = sigma;
    check_modes("van_de_vusse weighted", &p, ow);
    int P = remat_mechanism_param_count(p.m), S = remat_mechanism_species_count(p.m);
    double p0[3];
    for (int i = 0; i < P; i++)
        p0[i] = remat_mechanism_param_value(p.m, i);
    for (int mode = REMAT_FIT_JACOBIAN_FORWARD; mode <= REMAT_FIT_JACOBIAN_REVERSE; mode++) {
        remat_fit *plain = fit_with(&p, o, (remat_fit_jacobian)mode), *w = fit_with(&p, ow, (remat_fit_jacobian)mode);
        int64_t N = remat_fit_residual_count(plain);
        double *J = jacobian(plain, P, p0), *Jw = jacobian(w, P, p0);
        /* the residual order: experiment, row (the first is the initial state), species */
        int64_t k = 0;
        for (int e = 0; e < p.n_data; e++)
            for (size_t r = 1; r < remat_dataset_rows(p.data[e]); r++)
                for (int s = 0; s < S; s++)
                    if (remat_dataset_is_measured(p.data[e], r, s)) {
                        for (int j = 0; j < P; j++) {
                            double want = J[k * P + j] / sigma[s];
                            if (!(fabs(Jw[k * P + j] - want) <= 1e-14 * fabs(want)))
                                fail_msg("%s: row %lld (species %d): %.17g, expected %.17g",
                                         remat_fit_jacobian_name((remat_fit_jacobian)mode), (long long)k, s,
                                         Jw[k * P + j], want);
                        }
                        k++;
                    }
        assert_int_equal(k, N);
        free(J);
        free(Jw);
        remat_fit_free(plain);
        remat_fit_free(w);
    }
    problem_free(&p);
}

/* AUTO: forward with fewer free parameters than cells in the largest
 * experiment, reverse with more; fixing parameters counts. */
static void test_fit_jacobian_auto_picks_fewer_runs(void **state)
{
    (void)state;
    problem p;
    load_vdv(&p);
    remat_fit_options o = remat_fit_defaults();
    remat_fit *fit = fit_with(&p, o, REMAT_FIT_JACOBIAN_AUTO);
    assert_int_equal(remat_fit_jacobian_mode(fit), REMAT_FIT_JACOBIAN_FORWARD);
    remat_fit_free(fit);
    problem_free(&p);

    /* 3 constants, 2 measured cells: 2 VJPs beat 3 JVPs */
    remat_mechanism *m = parse("species A, B\nparam k1 = 1\nparam k2 = 0.5\nparam k3 = 0.1\n"
                               "A -> B : k1\nB -> A : k2\nA -> B : k3\n");
    char path[128];
    static const char csv[] = "t,A,B\n0,1,0\n1,0.5,0.5\n";
    write_temp(path, sizeof path, "fit_jacobian", csv, sizeof csv - 1);
    remat_dataset *d;
    assert_ok(remat_dataset_read(path, m, &d));
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_int_equal(remat_fit_residual_count(fit), 2);
    assert_int_equal(remat_fit_jacobian_mode(fit), REMAT_FIT_JACOBIAN_REVERSE);
    remat_fit_free(fit);
    o.fixed = (const bool[]){false, true, true}; /* 1 free parameter: 1 JVP */
    assert_ok(remat_fit_new(m, 1, &d, &o, &fit));
    assert_int_equal(remat_fit_jacobian_mode(fit), REMAT_FIT_JACOBIAN_FORWARD);
    /* a fixed parameter's column is 0 in either mode */
    double J[2 * 3];
    assert_ok(remat_fit_jacobian_at(fit, (const double[]){1, 0.5, 0.1}, J));
    assert_true(J[0] != 0 && J[1] == 0 && J[2] == 0 && J[4] == 0 && J[5] == 0);
    remat_fit_free(fit);
    remat_dataset_free(d);
    remat_mechanism_free(m);
    unlink(path);
}

static void test_fit_jacobian_bad_mode(void **state)
{
    (void)state;
    remat_fit_jacobian j = REMAT_FIT_JACOBIAN_REVERSE;
    assert_int_equal(remat_fit_jacobian_parse("sideways", &j), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "'sideways'");
    assert_contains(remat_last_error(), "auto, forward or reverse");
    assert_int_equal(j, REMAT_FIT_JACOBIAN_REVERSE);
    assert_ok(remat_fit_jacobian_parse("forward", &j));
    assert_int_equal(j, REMAT_FIT_JACOBIAN_FORWARD);
    assert_string_equal(remat_fit_jacobian_name(REMAT_FIT_JACOBIAN_COUNT), "?");
    problem p;
    load_vdv(&p);
    remat_fit_options o = remat_fit_defaults();
    o.jacobian = REMAT_FIT_JACOBIAN_COUNT;
    remat_fit *fit = NULL;
    assert_int_equal(remat_fit_new(p.m, p.n_data, p.data, &o, &fit), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "Jacobian mode");
    assert_null(fit);
    problem_free(&p);
}

/* ---- an op without a JVP rule in the residuals ---- */

static void ident_forward(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx)
{
    (void)n_in, (void)ctx;
    memcpy(out->data, ins[0].data, sizeof(double) * (size_t)remat_shape_numel(&out->shape));
}

static void ident_vjp(int which, int n_in, const remat_tensor *ins, const remat_tensor *out,
                      const remat_tensor *dout, remat_tensor *din, void *ctx)
{
    (void)which, (void)n_in, (void)ins, (void)out, (void)ctx;
    memcpy(din->data, dout->data, sizeof(double) * (size_t)remat_shape_numel(&din->shape));
}

static const remat_custom_op ident_op = {"vjp_only_identity", ident_forward, ident_vjp, NULL};

/* The fit's residual function with a custom op (VJP only) on the parameters,
 * in place of its own, and the forward program not yet compiled: what a
 * residual function with an op that has no JVP rule looks like to jacobian.c */
static void plant_op_without_jvp(remat_fit *fit)
{
    for (int c = 0; c < fit->n_cls; c++) {
        fit_class *k = &fit->cls[c];
        remat_fn *res = k->res_fn, *g = remat_fn_new("residuals_with_custom_op");
        int P = fit->P, n = remat_fn_num_args(res);
        assert_true(n <= 8 && remat_fn_num_outputs(res) == 1);
        remat_val a[8], out;
        a[0] = remat_arg(g, "p", REMAT_F64, 1, DIMS(P));
        for (int i = 1; i < n; i++) {
            remat_shape sh = remat_val_shape(res, remat_fn_arg(res, i));
            a[i] = remat_arg(g, "data", REMAT_F64, sh.rank, sh.dims);
        }
        a[0] = remat_custom(g, &ident_op, 1, &a[0], REMAT_F64, 1, DIMS(P));
        assert_ok(remat_call(g, res, n, a, &out));
        remat_fn_output(g, out);
        assert_fn_ok(g);
        remat_fn_free(res);
        k->res_fn = g;
        remat_program_free(k->jvp);
        k->jvp = NULL;
    }
    free(fit->tan);
    fit->tan = NULL;
    fit->jac_mode = REMAT_FIT_JACOBIAN_FORWARD;
    fit->jac_ready = false; /* compile again, from the planted residuals */
}

/* Forward mode hitting an op without a JVP rule: with jacobian = auto the
 * fit falls back to reverse mode (the same J as a reverse fit, and says so);
 * asked for forward, it is REMAT_ERR_UNSUPPORTED naming the op, not "out of
 * memory" (the loops' JVP used to turn the body's failure into NOMEM). */
static void test_fit_jacobian_no_jvp_rule_falls_back_to_reverse(void **state)
{
    (void)state;
    problem p;
    load_vdv(&p);
    remat_fit_options o = remat_fit_defaults();
    int P = remat_mechanism_param_count(p.m);
    double p0[8];
    for (int i = 0; i < P; i++)
        p0[i] = remat_mechanism_param_value(p.m, i);
    remat_fit *rev = fit_with(&p, o, REMAT_FIT_JACOBIAN_REVERSE), *aut = fit_with(&p, o, REMAT_FIT_JACOBIAN_AUTO);
    remat_fit *fwd = fit_with(&p, o, REMAT_FIT_JACOBIAN_FORWARD);
    int64_t N = remat_fit_residual_count(rev);
    double *Jr = jacobian(rev, P, p0), *Ja = xmalloc(sizeof *Ja * (size_t)N * (size_t)P);
    plant_op_without_jvp(aut);
    assert_ok(remat_fit_jacobian_at(aut, p0, Ja));
    assert_int_equal(remat_fit_jacobian_mode(aut), REMAT_FIT_JACOBIAN_REVERSE);
    assert_memory_equal(Ja, Jr, sizeof *Ja * (size_t)N * (size_t)P); /* contract 1: the same reverse J */
    plant_op_without_jvp(fwd);
    assert_int_equal(remat_fit_jacobian_at(fwd, p0, Ja), REMAT_ERR_UNSUPPORTED);
    assert_contains(remat_last_error(), "custom op 'vjp_only_identity' has no JVP");
    assert_int_equal(remat_fit_jacobian_mode(fwd), REMAT_FIT_JACOBIAN_FORWARD);
    free(Jr);
    free(Ja);
    remat_fit_free(rev);
    remat_fit_free(aut);
    remat_fit_free(fwd);
    problem_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_jacobian_vdv_modes_agree),
        cmocka_unit_test(test_fit_jacobian_battery_modes_agree),
        cmocka_unit_test(test_fit_jacobian_weighted),
        cmocka_unit_test(test_fit_jacobian_auto_picks_fewer_runs),
        cmocka_unit_test(test_fit_jacobian_bad_mode),
        cmocka_unit_test(test_fit_jacobian_no_jvp_rule_falls_back_to_reverse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
