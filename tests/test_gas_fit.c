/*
 * test_gas_fit.c — fitting a gas mechanism (remat/gas.h, remat/fit.h):
 * h2o2.yaml's ignition at 1000 K and 1100 K with T and OH measured.
 *   - initial states: the 1000 K file's '# T = ..' and '# H2 = 4' ...
 *     comments (amounts twice the others') give the mole fractions
 *     remat_gas_state gives for H2=2,O2=1,N2=3.76; the 1100 K file has none
 *     and takes its opt.y0 entry;
 *   - the Jacobian of the residuals with respect to the free multipliers m3,
 *     m11 and the Arrhenius Ea11, in forward and in reverse mode, against
 *     central differences of the residuals;
 *   - each experiment's pressure: a file's '# P = ..' (or a column P) is its
 *     own, the others take P's start; P freed with a file that sets it is
 *     refused naming file:line.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remat/remat.h"

static remat_mechanism *load_h2o2(void)
{
    char path[1024];
    const char *dir = getenv("REMAT_DATA");
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/mechanisms/h2o2.yaml", dir);
    remat_mechanism *m = NULL;
    assert_ok(remat_gas_read(path, NULL, &m));
    return m;
}

/* data: T and OH at three times of each ignition (values near the model's,
 * not equal: the residuals are not 0) */
static const char FILE_1000[] = "# T = 1000\n# H2 = 4\n# O2 = 2\n# N2 = 7.52\n"
                                "t,T,OH\n1e-4,1000.5,1e-7\n2.5e-4,1002,3e-6\n3.3e-4,2300,0.01\n";
static const char FILE_1100[] = "t,T,OH\n3e-5,1100.2,1e-7\n7e-5,1102,2e-6\n1e-4,2400,0.02\n";

typedef struct {
    remat_mechanism *m;
    remat_dataset *d[2];
    char path[2][512];
    double y0_1100[16];
    const double *y0[2];
    bool fixed[256];
    double *p;
    int P;
} problem;

static void problem_new(problem *x)
{
    memset(x, 0, sizeof *x);
    x->m = load_h2o2();
    x->P = remat_mechanism_param_count(x->m);
    assert_true(x->P <= 256 && remat_mechanism_species_count(x->m) <= 16);
    write_temp(x->path[0], sizeof x->path[0], "gas_fit_1000", FILE_1000, sizeof FILE_1000 - 1);
    write_temp(x->path[1], sizeof x->path[1], "gas_fit_1100", FILE_1100, sizeof FILE_1100 - 1);
    for (int e = 0; e < 2; e++)
        assert_ok(remat_dataset_read(x->path[e], x->m, &x->d[e]));
    assert_ok(remat_gas_state(x->m, 1100, "H2=2,O2=1,N2=3.76", x->y0_1100));
    x->y0[0] = NULL; /* the file's comments */
    x->y0[1] = x->y0_1100;
    for (int i = 0; i < x->P; i++)
        x->fixed[i] = true;
    x->fixed[remat_mechanism_param_find(x->m, "m3")] = false;
    x->fixed[remat_mechanism_param_find(x->m, "m11")] = false;
    x->fixed[remat_mechanism_param_find(x->m, "Ea11")] = false;
    x->p = calloc((size_t)x->P, sizeof *x->p);
    remat_mechanism_param_values(x->m, x->p);
    x->p[remat_mechanism_param_find(x->m, "m3")] = 1.2;
    x->p[remat_mechanism_param_find(x->m, "m11")] = 0.9;
}

static void problem_free(problem *x)
{
    for (int e = 0; e < 2; e++) {
        remat_dataset_free(x->d[e]);
        unlink(x->path[e]);
    }
    free(x->p);
    remat_mechanism_free(x->m);
}

static remat_fit *fit_new(problem *x, remat_fit_jacobian mode)
{
    remat_fit_options o = remat_fit_defaults();
    o.method = REMAT_ODE_RODAS5;
    o.rtol = 1e-9;
    o.atol = 1e-15;
    o.max_steps = 100000;
    o.y0 = x->y0;
    o.fixed = x->fixed;
    o.jacobian = mode;
    remat_fit *fit = NULL;
    assert_ok(remat_fit_new(x->m, 2, x->d, &o, &fit));
    return fit;
}

/* The comments' composition, normalised, and their T */
static void comments_give_the_initial_state(void **state)
{
    (void)state;
    problem x;
    problem_new(&x);
    remat_fit *fit = fit_new(&x, REMAT_FIT_JACOBIAN_AUTO);
    int S = remat_mechanism_species_count(x.m);
    double want[16];
    assert_ok(remat_gas_state(x.m, 1000, "H2=2,O2=1,N2=3.76", want));
    const double *got = remat_fit_initial_state(fit, 0);
    for (int s = 0; s < S; s++)
        assert_true(fabs(got[s] - want[s]) <= 1e-15 * fabs(want[s]));
    got = remat_fit_initial_state(fit, 1);
    for (int s = 0; s < S; s++)
        assert_true(got[s] == x.y0_1100[s]);
    remat_fit_free(fit);
    problem_free(&x);
}

static void jacobian_against_differences(remat_fit_jacobian mode)
{
    problem x;
    problem_new(&x);
    remat_fit *fit = fit_new(&x, mode);
    int64_t n = remat_fit_residual_count(fit);
    assert_int_equal(n, 12); /* 2 experiments x 3 rows x (T, OH) */
    double *J = calloc((size_t)(n * x.P), sizeof *J), *rp = calloc((size_t)n, sizeof *rp),
           *rm = calloc((size_t)n, sizeof *rm);
    assert_ok(remat_fit_jacobian_at(fit, x.p, J));
    double worst = 0;
    for (int i = 0; i < x.P; i++) {
        if (x.fixed[i]) {
            for (int64_t r = 0; r < n; r++)
                assert_true(J[r * x.P + i] == 0);
            continue;
        }
        double v = x.p[i], h = 1e-5 * fmax(fabs(v), 1e3 * (strncmp(remat_mechanism_param_name(x.m, i), "Ea", 2) == 0));
        x.p[i] = v + h;
        assert_ok(remat_fit_residuals(fit, x.p, rp));
        x.p[i] = v - h;
        assert_ok(remat_fit_residuals(fit, x.p, rm));
        x.p[i] = v;
        /* each column relative to its largest entry: T's residuals (K) dwarf OH's */
        double cmax = 0;
        for (int64_t r = 0; r < n; r++)
            cmax = fmax(cmax, fabs(J[r * x.P + i]));
        assert_true(cmax > 0);
        for (int64_t r = 0; r < n; r++) {
            double fd = (rp[r] - rm[r]) / (2 * h);
            worst = fmax(worst, fabs(J[r * x.P + i] - fd) / cmax);
        }
    }
    printf("%s Jacobian against central differences: largest difference %.3g of its column's largest entry\n",
           mode == REMAT_FIT_JACOBIAN_FORWARD ? "forward" : "reverse", worst);
    assert_true(worst <= 1e-5);
    free(J), free(rp), free(rm);
    remat_fit_free(fit);
    problem_free(&x);
}

static void forward_jacobian(void **state)
{
    (void)state;
    jacobian_against_differences(REMAT_FIT_JACOBIAN_FORWARD);
}

static void reverse_jacobian(void **state)
{
    (void)state;
    jacobian_against_differences(REMAT_FIT_JACOBIAN_REVERSE);
}

/* The residuals of one fit over files[0..n) (each "name|text"), P fixed
 * at P_start, the initial state the 1000 K one (opt.y0 for every file);
 * P_free: P is free, and remat_fit_new's status is returned in *st. */
static double *pressure_residuals(int n, const char *const *texts, double P_start, int P_free, remat_status *st,
                                  int64_t *n_res)
{
    problem x;
    problem_new(&x);
    remat_dataset *d[2] = {NULL, NULL};
    char path[2][512];
    double y0v[16];
    const double *y0[2] = {y0v, y0v};
    assert_ok(remat_gas_state(x.m, 1000, "H2=2,O2=1,N2=3.76", y0v));
    for (int e = 0; e < n; e++) {
        write_temp(path[e], sizeof path[e], "gas_fit_P", texts[e], strlen(texts[e]));
        assert_ok(remat_dataset_read(path[e], x.m, &d[e]));
    }
    int iP = remat_mechanism_param_find(x.m, "P");
    x.fixed[iP] = !P_free;
    x.p[iP] = P_start;
    remat_fit_options o = remat_fit_defaults();
    o.method = REMAT_ODE_RODAS5;
    o.rtol = 1e-10;
    o.atol = 1e-16;
    o.max_steps = 100000;
    o.y0 = y0;
    o.fixed = x.fixed;
    o.start = x.p;
    remat_fit *fit = NULL;
    double *r = NULL;
    *st = remat_fit_new(x.m, n, d, &o, &fit);
    if (*st == REMAT_OK) {
        *n_res = remat_fit_residual_count(fit);
        r = calloc((size_t)*n_res, sizeof *r);
        assert_ok(remat_fit_residuals(fit, x.p, r));
    }
    remat_fit_free(fit);
    for (int e = 0; e < n; e++) {
        remat_dataset_free(d[e]);
        unlink(path[e]);
    }
    problem_free(&x);
    return r;
}

#define ATM 101325.0
/* the 1000 K ignition's T before and after its delay at 1 atm */
#define ROWS "t,T\n1e-4,1000\n3e-4,1000\n4e-4,1000\n"

static void close_to(const double *a, const double *b, int64_t n, double rtol)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= rtol * fmax(1, fmax(fabs(a[i]), fabs(b[i]))))) {
            printf("residual %lld: %.17g against %.17g\n", (long long)i, a[i], b[i]);
            fail();
        }
}

/* A file's '# P = ..' reaches the model as that experiment's pressure: its
 * residuals are those of a run whose P starts there, not of P's start; in
 * one fit with a file that sets none, each keeps its own (a shared P would
 * give one of them the other's); a column P does as the comment. */
static void each_experiment_has_its_pressure(void **state)
{
    (void)state;
    remat_status st;
    int64_t n1 = 0, n2 = 0;
    const char *at5[] = {"# P = 506625\n" ROWS}, *plain[] = {ROWS}, *col[] = {"t,T,P\n1e-4,1000,506625\n"
                                                                               "3e-4,1000,506625\n4e-4,1000,\n"};
    double *r5 = pressure_residuals(1, at5, ATM, 0, &st, &n1);        /* the comment's 5 atm */
    double *r5s = pressure_residuals(1, plain, 5 * ATM, 0, &st, &n1); /* P's start at 5 atm */
    double *r1 = pressure_residuals(1, plain, ATM, 0, &st, &n1);      /* P's start at 1 atm */
    double *rc = pressure_residuals(1, col, ATM, 0, &st, &n1);        /* a column P */
    assert_int_equal(n1, 3);
    close_to(r5, r5s, n1, 1e-9);
    close_to(rc, r5s, n1, 1e-9);
    double apart = 0; /* the two pressures' ignitions differ: the test can tell them apart */
    for (int64_t i = 0; i < n1; i++)
        apart = fmax(apart, fabs(r5[i] - r1[i]));
    assert_true(apart > 10);
    const char *both[] = {"# P = 506625\n" ROWS, ROWS};
    double *rb = pressure_residuals(2, both, ATM, 0, &st, &n2);
    assert_int_equal(n2, 6);
    close_to(rb, r5, 3, 1e-9);
    close_to(rb + 3, r1, 3, 1e-9);
    free(r5), free(r5s), free(r1), free(rc), free(rb);
}

/* P free (a fitted parameter all experiments share) and a file that sets it:
 * refused, naming the file's line */
static void a_free_pressure_is_not_set_per_file(void **state)
{
    (void)state;
    remat_status st;
    int64_t n = 0;
    const char *at5[] = {"# T = 1000\n# P = 506625\n" ROWS};
    double *r = pressure_residuals(1, at5, ATM, 1, &st, &n);
    assert_null(r);
    assert_int_equal(st, REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), ":2: the file sets the pressure P"));
    assert_non_null(strstr(remat_last_error(), "fix P"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(comments_give_the_initial_state),
        cmocka_unit_test(forward_jacobian),
        cmocka_unit_test(reverse_jacobian),
        cmocka_unit_test(each_experiment_has_its_pressure),
        cmocka_unit_test(a_free_pressure_is_not_set_per_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
