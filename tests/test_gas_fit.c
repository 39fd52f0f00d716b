/*
 * test_gas_fit.c — fitting a gas mechanism (remat/gas.h, remat/fit.h):
 * h2o2.yaml's ignition at 1000 K and 1100 K with T and OH measured.
 *   - initial states: the 1000 K file's '# T = ..' and '# H2 = 4' ...
 *     comments (amounts twice the others') give the mole fractions
 *     remat_gas_state gives for H2=2,O2=1,N2=3.76; the 1100 K file has none
 *     and takes its opt.y0 entry;
 *   - the Jacobian of the residuals with respect to the free multipliers m3,
 *     m11 and the Arrhenius Ea11, in forward and in reverse mode, against
 *     central differences of the residuals.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(comments_give_the_initial_state),
        cmocka_unit_test(forward_jacobian),
        cmocka_unit_test(reverse_jacobian),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
