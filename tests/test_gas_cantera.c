/*
 * test_gas_cantera.c — gas mechanisms (remat/gas.h) against Cantera 3.2's
 * IdealGasConstPressureReactor (tests/goldens/cantera_<mech>.json,
 * tools/goldens/gen_cantera_goldens.py): constant-pressure ignition from
 * data/mechanisms/<mech>.yaml integrated by adaptive Rodas5 through
 * remat_pfr, its T and mole-fraction profiles, its ignition delay (T = T0 +
 * 400 K), and the reverse-mode gradient of T at a pre-ignition time with
 * respect to every rate multiplier against Cantera's central differences.
 * The CHEMKIN twins (Cantera's yaml2ck) must give the YAML files' results.
 */
#include "test_golden.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

static double RTOL = 1e-10; /* GRI's gradient case loosens it (gri30_gradient) */
#define ATOL 1e-16
#define PROFILE_RTOL 1e-6  /* T and mole fractions, relative to Cantera's ... */
#define X_FLOOR 1e-12      /* ... above this mole fraction (absolute below) */
#define GRI_X_FLOOR 1e-8   /* GRI (gri30_profile): below, atol 1e-15 of the run and 1e-6 of 1e-9 meet */
#define DELAY_RTOL 1e-4
#define GRAD_RTOL 1e-3

static remat_mechanism *load(const char *file, const char *thermo)
{
    char path[1024], tpath[1024];
    const char *dir = getenv("REMAT_DATA");
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/mechanisms/%s", dir, file);
    snprintf(tpath, sizeof tpath, "%s/mechanisms/%s", dir, thermo ? thermo : "");
    remat_gas_options o = {.energy = REMAT_GAS_ADIABATIC, .thermo = thermo ? tpath : NULL};
    remat_mechanism *m = NULL;
    assert_ok(remat_gas_read(path, &o, &m));
    return m;
}

static double jnum(const cJSON *c, const char *k) { return jget(c, k)->valuedouble; }

static remat_pfr *reactor(const remat_mechanism *m, const double *y0, double length, int64_t points,
                          remat_pfr_goal goal)
{
    remat_pfr_options o = {
        .method = REMAT_ODE_RODAS5, .length = length, .inlet = y0, .adaptive = true, .rtol = RTOL, .atol = ATOL,
        .max_steps = 50000, .profile_points = points, .goal = goal,
        .species = remat_gas_species_count(m), /* T */
    };
    remat_pfr *r = NULL;
    assert_ok(remat_pfr_new(m, &o, &r));
    return r;
}

typedef struct {
    double T_err, X_err, delay_err, grad_err;
} errors;

/* max(a, b) with NaN as infinitely bad (fmax would drop it) */
static double worse(double a, double b) { return isnan(b) ? INFINITY : fmax(a, b); }

/* y(h) from y(0): one adaptive Rodas5 integration over [0, h], compiled once
 * and restarted from each output (remat_pfr_profile compiles one loop per
 * interval, which 100 intervals of this body make slow) */
typedef struct {
    remat_program *prog;
    int64_t S, P;
} stepper;

static stepper stepper_new(const remat_mechanism *m, double h)
{
    stepper st = {.S = remat_mechanism_species_count(m), .P = remat_mechanism_param_count(m)};
    remat_fn *f = remat_fn_new("gas_step");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &st.S), p = remat_arg(f, "params", REMAT_F64, 1, &st.P);
    remat_ode_options o = {.method = REMAT_ODE_RODAS5, .n_times = 1, .times = &h, .adaptive = true,
                           .rtol = RTOL, .atol = ATOL, .max_steps = 200000};
    remat_val ys, stats;
    assert_ok(remat_ode_integrate_stats(f, m, &o, y0, p, &ys, &stats));
    remat_fn_output(f, ys);
    remat_fn_output(f, stats);
    st.prog = compile_ok(f);
    remat_fn_free(f);
    return st;
}

static void stepper_run(stepper *st, double *y, const double *p)
{
    double next[256], stats[REMAT_ODE_STATS];
    assert_true(st->S <= 256);
    remat_tensor in[2] = {remat_tensor_f64(y, 1, &st->S), remat_tensor_f64((double *)p, 1, &st->P)};
    remat_tensor out[2] = {remat_tensor_f64(next, 2, (int64_t[]){1, st->S}),
                           remat_tensor_f64(stats, 1, (int64_t[]){REMAT_ODE_STATS})};
    assert_ok(remat_run(st->prog, 2, in, 2, out, NULL));
    assert_true(stats[REMAT_ODE_STAT_CODE] == 0);
    memcpy(y, next, sizeof *y * (size_t)st->S);
}

/* rows states y (stride S) at times i h: the first time T reaches target,
 * refined from the bracketing row over 400 sub-intervals, linear between them */
static double crossing(const remat_mechanism *m, const double *params, const double *y, int64_t rows, double h,
                       int S, double target)
{
    int K = S - 1;
    for (int64_t i = 0; i + 1 < rows; i++) {
        if (!(y[(i + 1) * S + K] >= target))
            continue;
        const int n = 400;
        stepper st = stepper_new(m, h / n);
        double cur[256], t = NAN;
        memcpy(cur, y + i * S, sizeof *cur * (size_t)S);
        for (int j = 0; j < n && isnan(t); j++) {
            double a = cur[K];
            stepper_run(&st, cur, params);
            if (cur[K] >= target)
                t = i * h + (j + (target - a) / (cur[K] - a)) * (h / n);
        }
        remat_program_free(st.prog);
        return t;
    }
    return NAN;
}

static void check_case(const remat_mechanism *m, const cJSON *c, errors *e)
{
    int S = remat_mechanism_species_count(m), K = remat_gas_species_count(m), P = remat_mechanism_param_count(m);
    double T0 = jnum(c, "T0");
    double *y0 = calloc((size_t)S, sizeof *y0), *p = calloc((size_t)P, sizeof *p);
    assert_ok(remat_gas_state(m, T0, jget(c, "composition")->valuestring, y0));
    remat_mechanism_param_values(m, p);
    p[remat_mechanism_param_find(m, "P")] = jnum(c, "P");
    const cJSON *times = jget(c, "times"), *Ts = jget(c, "T"), *Xs = jget(c, "X"), *names = jget(c, "species");
    int64_t rows = cJSON_GetArraySize(times);
    assert_int_equal(cJSON_GetArraySize(names), K);
    for (int k = 0; k < K; k++)
        assert_string_equal(remat_mechanism_species_name(m, k), cJSON_GetArrayItem(names, k)->valuestring);

    /* profiles */
    double L = jnum(c, "length"), h = L / (double)(rows - 1);
    double *y = malloc(sizeof *y * rows * S);
    memcpy(y, y0, sizeof *y * S);
    stepper st = stepper_new(m, h);
    for (int64_t i = 0; i < rows; i++) {
        assert_true(fabs(i * h - cJSON_GetArrayItem(times, (int)i)->valuedouble) <= 1e-12 * L);
        if (i > 0) {
            memcpy(y + i * S, y + (i - 1) * S, sizeof *y * S);
            stepper_run(&st, y + i * S, p);
        }
        double Tref = cJSON_GetArrayItem(Ts, (int)i)->valuedouble;
        e->T_err = worse(e->T_err, fabs(y[i * S + K] - Tref) / Tref);
        const cJSON *xr = cJSON_GetArrayItem(Xs, (int)i);
        for (int k = 0; k < K; k++) {
            double xref = cJSON_GetArrayItem(xr, k)->valuedouble;
            e->X_err = worse(e->X_err, fabs(y[i * S + k] - xref) / fmax(fabs(xref), X_FLOOR));
        }
    }
    remat_program_free(st.prog);

    /* ignition delay */
    double tau = crossing(m, p, y, rows, h, S, T0 + 400), tref = jnum(c, "delay");
    e->delay_err = worse(e->delay_err, fabs(tau - tref) / tref);
    free(y);

    /* d T(t_pre) / d m_i, one reverse pass */
    const cJSON *g = cJSON_GetObjectItem(c, "dT_dm");
    if (g) {
        int N = remat_mechanism_reaction_count(m);
        assert_int_equal(cJSON_GetArraySize(g), N);
        remat_pfr *rg = reactor(m, y0, jnum(c, "t_pre"), 1, REMAT_PFR_MINIMIZE);
        double obj, *grad = calloc((size_t)P, sizeof *grad), gmax = 0;
        assert_ok(remat_pfr_objective(rg, p, &obj, grad));
        assert_true(fabs(obj - jnum(c, "T_pre")) <= PROFILE_RTOL * jnum(c, "T_pre"));
        for (int i = 0; i < N; i++)
            gmax = fmax(gmax, fabs(cJSON_GetArrayItem(g, i)->valuedouble));
        for (int i = 0; i < N; i++) {
            char name[16];
            snprintf(name, sizeof name, "m%d", i + 1);
            double ref = cJSON_GetArrayItem(g, i)->valuedouble, got = grad[remat_mechanism_param_find(m, name)];
            /* relative to each entry, with a floor at 1e-3 of the largest (central differences of
             * relative step 1e-4 at rtol 1e-12 resolve no finer) */
            e->grad_err = worse(e->grad_err, fabs(got - ref) / fmax(fabs(ref), 1e-3 * gmax));
        }
        free(grad);
        remat_pfr_free(rg);
    }
    free(y0);
    free(p);
}

static void check_mechanism(const char *json, const char *file, const char *thermo)
{
    remat_mechanism *m = load(file, thermo);
    const cJSON *cases = jget(golden(json), "cases");
    errors e = {0};
    for (int i = 0; i < cJSON_GetArraySize(cases); i++)
        check_case(m, cJSON_GetArrayItem(cases, i), &e);
    printf("%s: max relative error T %.3g, X %.3g, delay %.3g, dT/dm %.3g\n", file, e.T_err, e.X_err, e.delay_err,
           e.grad_err);
    assert_true(e.T_err <= PROFILE_RTOL);
    assert_true(e.X_err <= PROFILE_RTOL);
    assert_true(e.delay_err <= DELAY_RTOL);
    assert_true(e.grad_err <= GRAD_RTOL);
    remat_mechanism_free(m);
}

static void h2o2_yaml(void **state)
{
    (void)state;
    check_mechanism("cantera_h2o2.json", "h2o2.yaml", NULL);
}

static void h2o2_chemkin(void **state)
{
    (void)state;
    check_mechanism("cantera_h2o2.json", "h2o2.ck", "h2o2_thermo.dat");
}

/* The CHEMKIN twin (yaml2ck) is the same mechanism: the same species,
 * parameters and right-hand side. Not the same bits: yaml2ck prints A as
 * the YAML's value converted to SI and back (1.2000000000000002e+17 for
 * 1.2e+17), so the numbers differ in their last digit. */
static void twin_matches(const char *yaml, const char *ck, const char *thermo, const char *json)
{
    remat_mechanism *a = load(yaml, NULL), *b = load(ck, thermo);
    int S = remat_mechanism_species_count(a), P = remat_mechanism_param_count(a);
    assert_int_equal(remat_mechanism_species_count(b), S);
    assert_int_equal(remat_mechanism_param_count(b), P);
    double *pa = calloc((size_t)P, sizeof *pa), *pb = calloc((size_t)P, sizeof *pb);
    remat_mechanism_param_values(a, pa);
    remat_mechanism_param_values(b, pb);
    for (int i = 0; i < P; i++) {
        assert_string_equal(remat_mechanism_param_name(a, i), remat_mechanism_param_name(b, i));
        assert_true(fabs(pa[i] - pb[i]) <= 4e-16 * fabs(pa[i]));
    }
    for (int s = 0; s < S; s++)
        assert_string_equal(remat_mechanism_species_name(a, s), remat_mechanism_species_name(b, s));
    /* the right-hand side along Cantera's profile, radicals and all */
    const cJSON *c = cJSON_GetArrayItem(jget(golden(json), "cases"), 0), *Xs = jget(c, "X"), *Ts = jget(c, "T");
    double *y = calloc((size_t)S, sizeof *y), *da = calloc((size_t)S, sizeof *da), *db = calloc((size_t)S, sizeof *db);
    double worst = 0, worst_pre = 0;
    for (int row = 0; row < cJSON_GetArraySize(Xs); row += 10) {
        for (int k = 0; k < S - 1; k++)
            y[k] = cJSON_GetArrayItem(cJSON_GetArrayItem(Xs, row), k)->valuedouble;
        y[S - 1] = cJSON_GetArrayItem(Ts, row)->valuedouble;
        assert_ok(remat_mechanism_eval_rhs(a, 0, y, pa, da));
        assert_ok(remat_mechanism_eval_rhs(b, 0, y, pa, db)); /* the same parameters: only the constants differ */
        /* each entry relative to itself, with a floor at 1e-6 of the largest dX/dt (the sums
         * omega_k - X_k sum omega cancel for species near their balance) */
        double dxmax = 0;
        for (int s = 0; s + 1 < S; s++)
            dxmax = fmax(dxmax, fabs(da[s]));
        for (int s = 0; s < S; s++) {
            double w = fabs(da[s] - db[s]) / fmax(fabs(da[s]), s + 1 < S ? 1e-6 * dxmax : 0);
            worst = worse(worst, w);
            if (y[S - 1] < jnum(c, "T0") + 400)
                worst_pre = worse(worst_pre, w);
        }
    }
    printf("%s vs %s: largest relative difference of dy/dt %.3g before ignition, %.3g in all\n", yaml, ck,
           worst_pre, worst);
    /* after ignition forward and reverse rates nearly cancel (equilibrium), magnifying the
     * last-digit differences of the two files' numbers */
    assert_true(worst_pre <= 1e-10);
    assert_true(worst <= 1e-6);
    free(y), free(da), free(db), free(pa), free(pb);
    remat_mechanism_free(a);
    remat_mechanism_free(b);
}

/* The vector form of the right-hand side (gas_lower.c, what the integrators
 * run) against the expression DAG's reference evaluator, along Cantera's
 * profiles: the same model to rounding (the sums run in another order). */
static void lowering_matches(const char *file, const char *json)
{
    remat_mechanism *m = load(file, NULL);
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    assert_non_null(f);
    remat_program *prog = compile_ok(f);
    int64_t s64 = S, p64 = P;
    double *y = calloc((size_t)S, sizeof *y), *p = calloc((size_t)P, sizeof *p), t = 0;
    double *ref = calloc((size_t)S, sizeof *ref), *got = calloc((size_t)S, sizeof *got), worst = 0, worst_pre = 0;
    remat_mechanism_param_values(m, p);
    for (int i = 1; i <= remat_mechanism_reaction_count(m); i++) /* multipliers away from 1 */
        p[i] = 0.5 + 0.01 * (i % 97);
    const cJSON *cases = jget(golden(json), "cases");
    for (int ci = 0; ci < cJSON_GetArraySize(cases); ci++) {
        const cJSON *c = cJSON_GetArrayItem(cases, ci), *Xs = jget(c, "X"), *Ts = jget(c, "T");
        for (int row = 0; row < cJSON_GetArraySize(Xs); row += 7) {
            for (int k = 0; k < S - 1; k++)
                y[k] = cJSON_GetArrayItem(cJSON_GetArrayItem(Xs, row), k)->valuedouble;
            y[S - 1] = cJSON_GetArrayItem(Ts, row)->valuedouble;
            assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, ref));
            remat_tensor in[3] = {remat_tensor_f64(&t, 0, NULL), remat_tensor_f64(y, 1, &s64),
                                  remat_tensor_f64(p, 1, &p64)};
            remat_tensor out[1] = {remat_tensor_f64(got, 1, &s64)};
            assert_ok(remat_run(prog, 3, in, 1, out, NULL));
            double dxmax = 0;
            for (int k = 0; k + 1 < S; k++)
                dxmax = fmax(dxmax, fabs(ref[k]));
            int pre = y[S - 1] < jnum(c, "T0") + 400; /* before ignition: far from equilibrium */
            for (int k = 0; k < S; k++) {
                double w = fabs(got[k] - ref[k]) / fmax(fabs(ref[k]), k + 1 < S ? 1e-6 * dxmax : 0);
                worst = worse(worst, w);
                if (pre)
                    worst_pre = worse(worst_pre, w);
            }
        }
    }
    /* after ignition the forward and reverse rates nearly cancel in q (equilibrium), which
     * magnifies the rounding of either path */
    printf("%s: vector lowering against the reference evaluator: %.3g before ignition, %.3g in all\n", file,
           worst_pre, worst);
    assert_true(worst_pre <= 1e-10);
    assert_true(worst <= 1e-6);
    free(y), free(p), free(ref), free(got);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static void h2o2_lowering(void **state)
{
    (void)state;
    lowering_matches("h2o2.yaml", "cantera_h2o2.json");
}

static void gri30_lowering(void **state)
{
    (void)state;
    lowering_matches("gri30.yaml", "cantera_gri30.json");
}

static void h2o2_twin(void **state)
{
    (void)state;
    twin_matches("h2o2.yaml", "h2o2.ck", "h2o2_thermo.dat", "cantera_h2o2.json");
}

/* GRI-Mech 3.0: T at 0.8 x the ignition delay (1500 K) and its gradient with
 * respect to all 325 multipliers in one reverse pass, against Cantera's
 * central differences. Its profile and delay: gri30_profile. */
static void gri30_gradient(void **state)
{
    (void)state;
    remat_mechanism *m = load("gri30.yaml", NULL);
    const cJSON *cases = jget(golden("cantera_gri30.json"), "cases"), *c = NULL;
    for (int i = 0; i < cJSON_GetArraySize(cases); i++)
        if (cJSON_GetObjectItem(cJSON_GetArrayItem(cases, i), "dT_dm"))
            c = cJSON_GetArrayItem(cases, i);
    assert_non_null(c);
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m), N = remat_mechanism_reaction_count(m);
    double *y0 = calloc((size_t)S, sizeof *y0), *p = calloc((size_t)P, sizeof *p), *grad = calloc((size_t)P, sizeof *grad);
    assert_ok(remat_gas_state(m, jnum(c, "T0"), jget(c, "composition")->valuestring, y0));
    remat_mechanism_param_values(m, p);
    RTOL = 1e-9;
    remat_pfr *r = reactor(m, y0, jnum(c, "t_pre"), 1, REMAT_PFR_MINIMIZE);
    RTOL = 1e-10;
    double obj, gmax = 0, err = 0;
    assert_ok(remat_pfr_objective(r, p, &obj, grad));
    const cJSON *g = jget(c, "dT_dm");
    assert_int_equal(cJSON_GetArraySize(g), N);
    for (int i = 0; i < N; i++)
        gmax = fmax(gmax, fabs(cJSON_GetArrayItem(g, i)->valuedouble));
    for (int i = 0; i < N; i++) {
        double ref = cJSON_GetArrayItem(g, i)->valuedouble;
        err = worse(err, fabs(grad[1 + i] - ref) / fmax(fabs(ref), 1e-3 * gmax));
    }
    double Terr = fabs(obj - jnum(c, "T_pre")) / jnum(c, "T_pre");
    printf("gri30.yaml: T(t_pre) %.3g, dT/dm (325) %.3g\n", Terr, err);
    assert_true(Terr <= PROFILE_RTOL);
    assert_true(err <= GRAD_RTOL);
    remat_pfr_free(r);
    free(y0), free(p), free(grad);
    remat_mechanism_free(m);
}

/* GRI-Mech 3.0 ignition at 1500 K (the golden case with the gradient):
 * T and mole-fraction profiles at Cantera's 101 times and the ignition
 * delay, from one adaptive Rodas5 integration whose dense output (remat/ode.h)
 * gives the golden times and 1001 points across +-1% of Cantera's delay;
 * the delay is where T first reaches T0 + 400 K, linear between those
 * points (spacing 2e-5 of the delay). One loop for all 1101 points: the
 * step-by-step stepper of h2o2's check would take minutes here. rtol 1e-9,
 * atol 1e-15 (2676 steps): T 1.5e-10, X 1.1e-7 above 1e-8 (species below
 * it are held to 1e-14 absolute: atol-limited), delay 1.2e-8. */
/* The case of golden json at T0 (or the first case when T0 is 0) */
static const cJSON *gas_case(const char *json, double T0)
{
    const cJSON *cases = jget(golden(json), "cases");
    for (int i = 0; i < cJSON_GetArraySize(cases); i++)
        if (T0 == 0 || jnum(cJSON_GetArrayItem(cases, i), "T0") == T0)
            return cJSON_GetArrayItem(cases, i);
    fail_msg("%s: no case at T0 = %g", json, T0);
    return NULL;
}

/* One adaptive integration of method at rtol, atol with its rows at the
 * golden times and the fine grid around the delay: errors against case c */
static errors profile_errors(const remat_mechanism *m, const cJSON *c, remat_ode_method method, double rtol,
                             double atol, double x_floor, double *steps)
{
    int S = remat_mechanism_species_count(m), K = remat_gas_species_count(m), P = remat_mechanism_param_count(m);
    const cJSON *times = jget(c, "times"), *Ts = jget(c, "T"), *Xs = jget(c, "X");
    int rows = cJSON_GetArraySize(times), fine = 1001, n = rows - 1 + fine;
    double T0 = jnum(c, "T0"), tref = jnum(c, "delay");
    double *y0 = calloc((size_t)S, sizeof *y0), *p = calloc((size_t)P, sizeof *p);
    double *t = malloc(sizeof *t * (size_t)n), *ys = malloc(sizeof *ys * (size_t)n * (size_t)S);
    int *row_of = malloc(sizeof *row_of * (size_t)n); /* golden row, or -1 for a fine point */
    assert_ok(remat_gas_state(m, T0, jget(c, "composition")->valuestring, y0));
    remat_mechanism_param_values(m, p);
    p[remat_mechanism_param_find(m, "P")] = jnum(c, "P");
    /* the union of the golden times (after 0) and the fine grid, increasing */
    int a = 1, b = 0, k = 0;
    while (a < rows || b < fine) {
        double ta = a < rows ? cJSON_GetArrayItem(times, a)->valuedouble : INFINITY;
        double tb = b < fine ? tref * (0.99 + 0.02 * b / (fine - 1)) : INFINITY;
        if (ta <= tb) {
            t[k] = ta, row_of[k++] = a++;
            b += ta == tb;
        } else {
            t[k] = tb, row_of[k++] = -1, b++;
        }
    }
    n = k;
    remat_ode_options o = {.method = method, .n_times = n, .times = t, .adaptive = true,
                           .rtol = rtol, .atol = atol, .max_steps = 100000, .dense = true};
    double stats[REMAT_ODE_STATS];
    assert_ok(remat_ode_run_once(m, &o, y0, p, remat_backend_cpu(), NULL, ys, stats));
    assert_ok(remat_ode_stats_check(&o, stats));
    errors e = {0};
    double tau = NAN, prev_t = 0, prev_T = T0;
    for (int i = 0; i < n; i++) {
        const double *y = ys + (size_t)i * (size_t)S;
        if (isnan(tau) && row_of[i] < 0 && y[K] >= T0 + 400)
            tau = prev_t + (T0 + 400 - prev_T) / (y[K] - prev_T) * (t[i] - prev_t);
        if (row_of[i] < 0) {
            prev_t = t[i], prev_T = y[K];
            continue;
        }
        double Tref = cJSON_GetArrayItem(Ts, row_of[i])->valuedouble;
        e.T_err = worse(e.T_err, fabs(y[K] - Tref) / Tref);
        const cJSON *xr = cJSON_GetArrayItem(Xs, row_of[i]);
        for (int s = 0; s < K; s++) {
            double xref = cJSON_GetArrayItem(xr, s)->valuedouble;
            e.X_err = worse(e.X_err, fabs(y[s] - xref) / fmax(fabs(xref), x_floor));
        }
    }
    e.delay_err = fabs(tau - tref) / tref;
    *steps = stats[REMAT_ODE_STAT_ACCEPTED];
    free(y0), free(p), free(t), free(ys), free(row_of);
    return e;
}

static void gri30_profile(void **state)
{
    (void)state;
    remat_mechanism *m = load("gri30.yaml", NULL);
    static const double T0s[] = {1300.0, 1500.0, 1700.0}; /* every golden temperature */
    for (size_t i = 0; i < sizeof T0s / sizeof T0s[0]; i++) {
        double steps;
        errors e = profile_errors(m, gas_case("cantera_gri30.json", T0s[i]), REMAT_ODE_RODAS5, 1e-9, 1e-15,
                                  GRI_X_FLOOR, &steps);
        printf("gri30.yaml at %g K: %.0f steps, max relative error T %.3g, X %.3g, delay %.3g\n", T0s[i], steps,
               e.T_err, e.X_err, e.delay_err);
        assert_true(e.T_err <= PROFILE_RTOL);
        assert_true(e.X_err <= PROFILE_RTOL);
        assert_true(e.delay_err <= DELAY_RTOL);
    }
    remat_mechanism_free(m);
}

/* The BDF integrator (remat/ode.h, REMAT_ODE_BDF) on the same profiles:
 * h2o2 and GRI at every golden temperature, rows interpolated
 * between its steps, held to the tolerances Rodas5 meets above. atol is
 * the goldens' own 1e-20: the radicals start at 0 and grow by many orders
 * during the induction period, so an absolute error of atol 1e-16 in them
 * becomes a shift of the ignition time that no rtol removes (h2o2 at
 * 1000 K: T 8.7e-7 off at rtol 1e-10, 1e-11 and 1e-12 alike with atol
 * 1e-16; 3.4e-8 with 1e-20). Rodas5 happens to meet 1e-16 there. */
static void bdf_profiles(void **state)
{
    (void)state;
    static const struct {
        const char *file, *json;
        double T0, rtol, atol, x_floor;
    } runs[] = {
        {"h2o2.yaml", "cantera_h2o2.json", 1000.0, 1e-10, 1e-20, X_FLOOR},
        {"h2o2.yaml", "cantera_h2o2.json", 1100.0, 1e-10, 1e-20, X_FLOOR},
        {"h2o2.yaml", "cantera_h2o2.json", 1300.0, 1e-10, 1e-20, X_FLOOR},
        {"gri30.yaml", "cantera_gri30.json", 1300.0, 1e-10, 1e-20, GRI_X_FLOOR},
        {"gri30.yaml", "cantera_gri30.json", 1500.0, 1e-10, 1e-20, GRI_X_FLOOR},
        {"gri30.yaml", "cantera_gri30.json", 1700.0, 1e-10, 1e-20, GRI_X_FLOOR},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        remat_mechanism *m = load(runs[i].file, NULL);
        double steps;
        errors e = profile_errors(m, gas_case(runs[i].json, runs[i].T0), REMAT_ODE_BDF, runs[i].rtol,
                                  runs[i].atol, runs[i].x_floor, &steps);
        printf("bdf %s at %g K: %.0f steps, max relative error T %.3g, X %.3g, delay %.3g\n", runs[i].file,
               runs[i].T0, steps, e.T_err, e.X_err, e.delay_err);
        assert_true(e.T_err <= PROFILE_RTOL);
        assert_true(e.X_err <= PROFILE_RTOL);
        assert_true(e.delay_err <= DELAY_RTOL);
        remat_mechanism_free(m);
    }
}

static void gri30_twin(void **state)
{
    (void)state;
    twin_matches("gri30.yaml", "gri30.ck", "gri30_thermo.dat", "cantera_gri30.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bdf_profiles),
        cmocka_unit_test(h2o2_yaml),
        cmocka_unit_test(h2o2_chemkin),
        cmocka_unit_test(h2o2_twin),
        cmocka_unit_test(h2o2_lowering),
        cmocka_unit_test(gri30_lowering),
        cmocka_unit_test(gri30_twin),
        cmocka_unit_test(gri30_gradient),
        cmocka_unit_test(gri30_profile),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
