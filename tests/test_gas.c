/*
 * test_gas.c — reading gas mechanisms (remat/gas.h): the model's right-hand
 * side on small files against hand-computed values, the formats told apart,
 * the initial state, and every unsupported feature and malformed file as an
 * error naming file:line and what is wrong.
 */
#include "test_golden.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remat/remat.h"

#define R_GAS 8.31446261815324

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/remat_test_gas_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    golden_free_all(state);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *text)
{
    static char path[2][400];
    static int which;
    char *p = path[which ^= 1];
    snprintf(p, 400, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

/* two species with thermo that is a constant cp = 3.5 R (h/RT = 3.5 + a6/T) */
#define HEAD                                                                                                   \
    "units: {length: cm, time: s, quantity: mol, activation-energy: cal/mol}\n"                                \
    "phases:\n"                                                                                                \
    "- name: gas\n"                                                                                            \
    "  thermo: ideal-gas\n"                                                                                    \
    "  species: [A, B, M2]\n"                                                                                  \
    "  kinetics: gas\n"                                                                                        \
    "species:\n"                                                                                               \
    "- name: A\n"                                                                                              \
    "  composition: {H: 2}\n"                                                                                  \
    "  thermo: {model: NASA7, temperature-ranges: [200, 1000, 3500],\n"                                         \
    "    data: [[3.5, 0, 0, 0, 0, -1000, 1], [3.5, 0, 0, 0, 0, -1000, 1]]}\n"                                    \
    "- name: B\n"                                                                                              \
    "  composition: {H: 2}\n"                                                                                  \
    "  thermo: {model: NASA7, temperature-ranges: [200, 1000, 3500],\n"                                         \
    "    data: [[3.5, 0, 0, 0, 0, -3000, 2], [4.5, 0, 0, 0, 0, -3000, 2]]}\n"                                    \
    "- name: M2\n"                                                                                             \
    "  composition: {Ar: 1}\n"                                                                                 \
    "  thermo: {model: NASA7, temperature-ranges: [200, 3500],\n"                                               \
    "    data: [[2.5, 0, 0, 0, 0, 0, 3]]}\n"

/* HEAD's species with heat capacities that move with T, another polynomial in each range
 * (the Jacobian's T column reads d cp / dT and dh/dT = cp) */
#define POLY_HEAD                                                                                              \
    "units: {length: cm, time: s, quantity: mol, activation-energy: cal/mol}\n"                                \
    "phases:\n"                                                                                                \
    "- name: gas\n"                                                                                            \
    "  thermo: ideal-gas\n"                                                                                    \
    "  species: [A, B, M2]\n"                                                                                  \
    "  kinetics: gas\n"                                                                                        \
    "species:\n"                                                                                               \
    "- name: A\n"                                                                                              \
    "  composition: {H: 2}\n"                                                                                  \
    "  thermo: {model: NASA7, temperature-ranges: [200, 1000, 3500],\n"                                         \
    "    data: [[3.3, 1.1e-3, -4.0e-7, 6.0e-11, -3.0e-15, -1000, 1],\n"                                        \
    "           [3.1, 1.4e-3, -5.0e-7, 8.0e-11, -5.0e-15, -1050, 1.5]]}\n"                                      \
    "- name: B\n"                                                                                              \
    "  composition: {H: 2}\n"                                                                                  \
    "  thermo: {model: NASA7, temperature-ranges: [200, 1000, 3500],\n"                                         \
    "    data: [[3.6, 8.0e-4, 2.0e-7, -1.0e-10, 2.0e-14, -3000, 2],\n"                                          \
    "           [4.2, 6.0e-4, -1.0e-7, 2.0e-11, -1.0e-15, -3100, 1]]}\n"                                        \
    "- name: M2\n"                                                                                             \
    "  composition: {Ar: 1}\n"                                                                                 \
    "  thermo: {model: NASA7, temperature-ranges: [200, 3500],\n"                                               \
    "    data: [[2.5, 2.0e-4, -1.0e-7, 3.0e-11, -2.0e-15, 0, 3]]}\n"

#define CK_HEAD "ELEMENTS\nH O\nEND\nSPECIES\nH2 O2 H2O\nEND\n"
#define CK_THERMO                                                                                             \
    "THERMO\n300.0 1000.0 5000.0\n"                                                                            \
    "H2                      H   2               G   200.000  3500.000 1000.000    1\n"                         \
    " 3.50000000E+00 0.00000000E+00 0.00000000E+00 0.00000000E+00 0.00000000E+00    2\n"                        \
    "-1.00000000E+03 1.00000000E+00 3.50000000E+00 0.00000000E+00 0.00000000E+00    3\n"                        \
    " 0.00000000E+00 0.00000000E+00-1.00000000E+03 1.00000000E+00                   4\n"                        \
    "O2                      O   2               G   200.000  3500.000 1000.000    1\n"                         \
    " 3.50000000E+00 0.00000000E+00 0.00000000E+00 0.00000000E+00 0.00000000E+00    2\n"                        \
    "-1.00000000E+03 2.00000000E+00 3.50000000E+00 0.00000000E+00 0.00000000E+00    3\n"                        \
    " 0.00000000E+00 0.00000000E+00-1.00000000E+03 2.00000000E+00                   4\n"                        \
    "H2O                     H   2O   1          G   200.000  3500.000 1000.000    1\n"                         \
    " 4.00000000E+00 0.00000000E+00 0.00000000E+00 0.00000000E+00 0.00000000E+00    2\n"                        \
    "-3.00000000E+04 3.00000000E+00 4.00000000E+00 0.00000000E+00 0.00000000E+00    3\n"                        \
    " 0.00000000E+00 0.00000000E+00-3.00000000E+04 3.00000000E+00                   4\n"                        \
    "END\n"

static remat_mechanism *read_ok(const char *name, const char *text, remat_gas_energy energy)
{
    remat_gas_options o = {.energy = energy};
    remat_mechanism *m = NULL;
    assert_ok(remat_gas_read(write_file(name, text), &o, &m));
    return m;
}

static void expect_error(const char *name, const char *text, const char *thermo, const char *want_line,
                         const char *want)
{
    const char *path = write_file(name, text);
    remat_gas_options o = {.thermo = thermo};
    remat_mechanism *m = (remat_mechanism *)1;
    remat_status st = remat_gas_read(path, &o, &m);
    if (st == REMAT_OK)
        fail_msg("%s: read without error, expected '%s'", name, want);
    assert_null(m);
    const char *msg = remat_last_error();
    char where[512];
    snprintf(where, sizeof where, "%s:%s:", path, want_line);
    if (!strstr(msg, where) || !strstr(msg, want))
        fail_msg("%s: got '%s', expected '%s' and '%s'", name, msg, where, want);
}

/* A -> B elementary, irreversible: dX/dt from the formula */
static void elementary_rhs(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("el.yaml",
                                 HEAD "reactions:\n"
                                      "- equation: A => B\n"
                                      "  rate-constant: {A: 2.0e3, b: 0.5, Ea: 1000}\n",
                                 REMAT_GAS_ISOTHERMAL);
    assert_int_equal(remat_gas_species_count(m), 3);
    assert_int_equal(remat_mechanism_species_count(m), 4);
    assert_string_equal(remat_mechanism_species_name(m, 3), "T");
    assert_int_equal(remat_mechanism_param_find(m, "m1"), 1);
    double y[4], p[8], dy[4];
    assert_ok(remat_gas_state(m, 900, "A=1,B=1,M2=2", y));
    assert_true(y[0] == 0.25 && y[1] == 0.25 && y[2] == 0.5 && y[3] == 900);
    remat_mechanism_param_values(m, p);
    assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, dy));
    double k = 2.0e3 * sqrt(900) * exp(-1000 * 4.184 / (R_GAS * 900)); /* first order: no unit change */
    double C = 101325 / (R_GAS * 900), q = k * C * 0.25;
    /* dX_A/dt = (omega_A - X_A (omega_A + omega_B)) / C = -q / C */
    assert_true(fabs(dy[0] - (-q / C)) <= 1e-14 * fabs(q / C));
    assert_true(fabs(dy[1] - (q / C)) <= 1e-14 * fabs(q / C));
    assert_true(dy[2] == 0 && dy[3] == 0);
    /* the multiplier scales the rate */
    p[1] = 3;
    assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, dy));
    assert_true(fabs(dy[0] - (-3 * q / C)) <= 1e-14 * fabs(q / C));
    remat_mechanism_free(m);
}

/* A <=> B reversible, adiabatic: Kc from the thermo, dT/dt from the enthalpies,
 * the high range of B's polynomial above T_mid and the low one at and below it */
static void reversible_energy(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("rev.yaml",
                                 HEAD "reactions:\n"
                                      "- equation: A <=> B\n"
                                      "  rate-constant: {A: 1.0e4, b: 0, Ea: 0}\n",
                                 REMAT_GAS_ADIABATIC);
    for (int hi = 0; hi < 2; hi++) {
        double T = hi ? 1000.0000000000001 : 1000, y[4], p[8], dy[4];
        assert_ok(remat_gas_state(m, T, "A=3,B=1", y));
        remat_mechanism_param_values(m, p);
        assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, dy));
        double cpB = hi ? 4.5 : 3.5, hA = 3.5 - 1000 / T, hB = cpB - 3000 / T;
        double sA = 3.5 * log(T) + 1, sB = cpB * log(T) + 2;
        double Kc = exp(-((hB - sB) - (hA - sA)));
        double C = 101325 / (R_GAS * T), q = 1e4 * (C * 0.75 - C * 0.25 / Kc);
        double dT = -T * (hA * -q + hB * q) / (C * (0.75 * 3.5 + 0.25 * cpB));
        assert_true(fabs(dy[0] - (-q / C)) <= 1e-12 * fabs(q / C));
        assert_true(fabs(dy[3] - dT) <= 1e-12 * fabs(dT));
    }
    remat_mechanism_free(m);
}

/* three-body with efficiencies, Troe falloff, PLOG between its pressures */
static void third_body_falloff_plog(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("tb.yaml",
                                 HEAD "reactions:\n"
                                      "- equation: A + M => B + M\n"
                                      "  type: three-body\n"
                                      "  rate-constant: {A: 1.0e6, b: 0, Ea: 0}\n"
                                      "  efficiencies: {M2: 0.5}\n"
                                      "- equation: A (+M) => B (+M)\n"
                                      "  type: falloff\n"
                                      "  low-P-rate-constant: {A: 1.0e9, b: 0, Ea: 0}\n"
                                      "  high-P-rate-constant: {A: 100.0, b: 0, Ea: 0}\n"
                                      "  Troe: {A: 0.5, T3: 100.0, T1: 1000.0}\n"
                                      "- equation: A => B\n"
                                      "  type: pressure-dependent-Arrhenius\n"
                                      "  rate-constants:\n"
                                      "  - {P: 0.1 atm, A: 10.0, b: 0, Ea: 0}\n"
                                      "  - {P: 10 atm, A: 1000.0, b: 0, Ea: 0}\n",
                                 REMAT_GAS_ISOTHERMAL);
    double T = 1200, y[4], p[16], dy[4];
    assert_ok(remat_gas_state(m, T, "A=1,M2=1", y));
    remat_mechanism_param_values(m, p);
    assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, dy));
    double C = 101325 / (R_GAS * T), CA = 0.5 * C, M1 = C - 0.5 * 0.5 * C;
    double q1 = 1e6 * 1e-6 * M1 * CA; /* cm^3/mol/s to m^3/mol/s */
    double k0 = 1e9 * 1e-6, kinf = 100, Pr = k0 * C / kinf;
    double Fc = 0.5 * exp(-T / 100) + 0.5 * exp(-T / 1000), lfc = log10(Fc);
    double cc = -0.4 - 0.67 * lfc, nn = 0.75 - 1.27 * lfc, lc = log10(Pr) + cc;
    double f1 = lc / (nn - 0.14 * lc), F = pow(10, lfc / (1 + f1 * f1));
    double q2 = kinf * Pr / (1 + Pr) * F * CA;
    double q3 = 100 * CA; /* 1 atm is halfway in log P between 0.1 and 10 atm */
    double want = -(q1 + q2 + q3) / C;
    assert_true(fabs(dy[0] - want) <= 1e-12 * fabs(want));
    assert_int_equal(remat_mechanism_param_find(m, "A3"), -1); /* PLOG: no Arrhenius params */
    remat_mechanism_free(m);
}

/* A stiff integration of a mechanism without remat_gas_jacobian's closed
 * form (PLOG) falls back to JVP columns: a success that leaves no stale
 * "no vector form" message in remat_last_error() */
static void plog_rodas_leaves_no_error(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("plog.yaml",
                                 HEAD "reactions:\n"
                                      "- equation: A => B\n"
                                      "  type: pressure-dependent-Arrhenius\n"
                                      "  rate-constants:\n"
                                      "  - {P: 0.1 atm, A: 10.0, b: 0, Ea: 0}\n"
                                      "  - {P: 10 atm, A: 1000.0, b: 0, Ea: 0}\n",
                                 REMAT_GAS_ISOTHERMAL);
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_fn_new("plog_rodas");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S), p = remat_arg(f, "params", REMAT_F64, 1, &P), ys;
    double h = 1e-3;
    remat_ode_options o = {.method = REMAT_ODE_RODAS5, .n_times = 1, .times = &h, .steps = 4};
    remat_clear_error();
    assert_ok(remat_ode_integrate(f, m, &o, y0, p, &ys));
    assert_string_equal(remat_last_error(), "");
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* every rate form the vector lowering takes */
static const char vec_text[] = HEAD "reactions:\n"
                              "- equation: A + B (+M2) <=> 2 B (+M2)\n"
                              "  type: falloff\n"
                              "  low-P-rate-constant: {A: 1.0e12, b: 0.5, Ea: 100}\n"
                              "  high-P-rate-constant: {A: 1.0e6, b: 0.2, Ea: 200}\n"
                              "  SRI: {A: 0.5, B: 100.0, C: 1000.0, D: 1.2, E: 0.1}\n"
                              "- equation: A + B (+M) => 2 A (+M)\n"
                              "  type: chemically-activated\n"
                              "  low-P-rate-constant: {A: 1.0e8, b: 0, Ea: 0}\n"
                              "  high-P-rate-constant: {A: 1.0e3, b: 0, Ea: 0}\n"
                              "  SRI: {A: 0.5, B: 100.0, C: 1000.0}\n"
                              "  efficiencies: {B: 2.0}\n"
                              "  default-efficiency: 0.5\n"
                              "- equation: 2 A + M <=> 2 B + M\n"
                              "  type: three-body\n"
                              "  rate-constant: {A: 1.0e14, b: -1, Ea: 0}\n"
                              "- equation: A + B (+M) <=> 2 B (+M)\n"
                              "  type: falloff\n"
                              "  low-P-rate-constant: {A: 1.0e10, b: 0, Ea: 0}\n"
                              "  high-P-rate-constant: {A: 1.0e5, b: 0, Ea: 0}\n"
                              "  Troe: {A: 0.6, T3: 0, T1: 500.0, T2: 4000.0}\n"
                              "- equation: A + B => 2 B\n"
                              "  rate-constant: {A: 1.0e9, b: 0, Ea: 500}\n"
                              "  orders: {A: 2}\n";

/* the vector lowering (gas_lower.c, what integrators run) against the
 * reference evaluator on every rate form it takes: SRI falloff with one
 * collider, chemically activated Troe with efficiencies and a default,
 * three-body, explicit orders, reversible and not, isothermal and adiabatic;
 * and a chemically activated SRI rate by hand */
static void vector_lowering(void **state)
{
    (void)state;
    const char *text = vec_text;
    for (int e = 0; e < 2; e++) {
        remat_mechanism *m = read_ok("vec.yaml", text, e ? REMAT_GAS_ISOTHERMAL : REMAT_GAS_ADIABATIC);
        remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
        assert_non_null(f);
        remat_program *prog = compile_ok(f);
        double y[4], p[32], ref[4], got[4], t = 0;
        int64_t s4 = 4, pn = remat_mechanism_param_count(m);
        assert_true(pn <= 32);
        assert_ok(remat_gas_state(m, 1234, "A=1,B=2,M2=0.5", y));
        remat_mechanism_param_values(m, p);
        p[2] = 1.7; /* m2 */
        assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, ref));
        remat_tensor in[3] = {remat_tensor_f64(&t, 0, NULL), remat_tensor_f64(y, 1, &s4), remat_tensor_f64(p, 1, &pn)};
        remat_tensor out[1] = {remat_tensor_f64(got, 1, &s4)};
        assert_ok(remat_run(prog, 3, in, 1, out, NULL));
        for (int k = 0; k < 4; k++)
            if (!(fabs(got[k] - ref[k]) <= 1e-12 * fabs(ref[k]) + 1e-300))
                fail_msg("dy/dt[%d]: vector %.17g, reference %.17g", k, got[k], ref[k]);
        remat_program_free(prog);
        remat_fn_free(f);
        /* batched (2, S), as Rodas5's Jacobian runs it: each row the reference's */
        f = remat_fn_new("batched");
        remat_val yb = remat_arg(f, "y", REMAT_F64, 2, ((int64_t[]){2, 4})), pb = remat_arg(f, "p", REMAT_F64, 1, &pn);
        remat_val db;
        assert_ok(remat_kinetics_rhs(f, m, REMAT_NONE, yb, pb, &db));
        remat_fn_output(f, db);
        prog = compile_ok(f);
        double y2[8], got2[8], ref2[4];
        memcpy(y2, y, sizeof y);
        assert_ok(remat_gas_state(m, 900, "A=2,B=1,M2=1", y2 + 4));
        remat_tensor in2[2] = {remat_tensor_f64(y2, 2, ((int64_t[]){2, 4})), remat_tensor_f64(p, 1, &pn)};
        remat_tensor out2[1] = {remat_tensor_f64(got2, 2, ((int64_t[]){2, 4}))};
        assert_ok(remat_run(prog, 2, in2, 1, out2, NULL));
        for (int row = 0; row < 2; row++) {
            assert_ok(remat_mechanism_eval_rhs(m, 0, y2 + 4 * row, p, ref2));
            for (int k = 0; k < 4; k++)
                if (!(fabs(got2[4 * row + k] - ref2[k]) <= 1e-12 * fabs(ref2[k]) + 1e-300))
                    fail_msg("batched row %d dy/dt[%d]: %.17g, reference %.17g", row, k, got2[4 * row + k], ref2[k]);
        }
        remat_program_free(prog);
        remat_fn_free(f);
        /* reaction 2 alone by hand: chemically activated, SRI, efficiencies */
        double T = 1234, C = 101325 / (R_GAS * T), cA = C / 3.5, cB = 2 * C / 3.5, cM = 0.5 * C / 3.5;
        double M = 0.5 * (cA + cM) + 2 * cB, k0 = 1e8 * 1e-6 /* cm^3/mol/s, order 2 */, kinf = 1e3;
        double Pr = k0 * M / kinf, lpr = log10(Pr), xx = 1 / (1 + lpr * lpr);
        double F = pow(0.5 * exp(-100 / T) + exp(-T / 1000), xx);
        double q2 = k0 / (1 + Pr) * F * cA * cB; /* A + B => 2 A: omega_A = q2, sum omega = 0 */
        for (int i = 1; i <= 5; i++)
            p[i] = i == 2;
        assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, ref));
        if (!(fabs(ref[0] - q2 / C) <= 1e-12 * q2 / C))
            fail_msg("chemically activated SRI: dX_A/dt %.17g, by hand %.17g", ref[0], q2 / C);
        remat_mechanism_free(m);
    }
}

/* J (4 x 4) by the closed form (remat_gas_jacobian) or by forward mode
 * (remat_jacfwd of the right-hand side) into f */
static remat_val jacobian_val(remat_fn *f, const remat_mechanism *m, int closed, remat_val y, remat_val p)
{
    if (closed) {
        remat_val J, d;
        assert_ok(remat_gas_jacobian(f, m, y, p, &J, &d));
        return J;
    }
    int64_t S = 4, pn = remat_mechanism_param_count(m);
    remat_fn *r = remat_fn_new("rhs"), *jr = NULL;
    remat_val ry = remat_arg(r, "y", REMAT_F64, 1, &S), rp = remat_arg(r, "p", REMAT_F64, 1, &pn), rd;
    assert_ok(remat_kinetics_rhs(r, m, REMAT_NONE, ry, rp, &rd));
    remat_fn_output(r, rd);
    assert_ok(remat_jacfwd(r, 1, (int[]){0}, &jr));
    remat_val outs[1];
    assert_ok(remat_call(f, jr, 2, ((remat_val[]){y, p}), outs));
    remat_fn_free(r);
    remat_fn_free(jr);
    return outs[0];
}

/* J, and the gradient of sum(J * w) with respect to y and params (second derivatives of the rates) */
static void jacobian_run(const remat_mechanism *m, int closed, const double *y, const double *p, double *J, double *gy,
                         double *gp)
{
    int64_t S = 4, pn = remat_mechanism_param_count(m);
    double w[16];
    for (int i = 0; i < 16; i++)
        w[i] = 0.3 + 0.1 * i;
    remat_fn *f = remat_fn_new("jac"), *fs = remat_fn_new("weighted"), *gf = NULL;
    remat_val fy = remat_arg(f, "y", REMAT_F64, 1, &S), fp = remat_arg(f, "p", REMAT_F64, 1, &pn);
    remat_fn_output(f, jacobian_val(f, m, closed, fy, fp));
    remat_val sy = remat_arg(fs, "y", REMAT_F64, 1, &S), sp = remat_arg(fs, "p", REMAT_F64, 1, &pn);
    remat_val Js = jacobian_val(fs, m, closed, sy, sp);
    remat_fn_output(fs, remat_sum(fs, remat_mul(fs, Js, remat_const_data(fs, REMAT_F64, 2, ((int64_t[]){4, 4}), w)), 2,
                                  ((int[]){0, 1})));
    assert_ok(remat_grad(fs, 2, (int[]){0, 1}, &gf));
    remat_tensor in[2] = {remat_tensor_f64((double *)y, 1, &S), remat_tensor_f64((double *)p, 1, &pn)};
    remat_program *prog = compile_ok(f);
    remat_tensor out[1] = {remat_tensor_f64(J, 2, ((int64_t[]){4, 4}))};
    assert_ok(remat_run(prog, 2, in, 1, out, NULL));
    remat_program_free(prog);
    prog = compile_ok(gf);
    remat_tensor gout[2] = {remat_tensor_f64(gy, 1, &S), remat_tensor_f64(gp, 1, &pn)};
    assert_ok(remat_run(prog, 2, in, 2, gout, NULL));
    remat_program_free(prog);
    remat_fn_free(f);
    remat_fn_free(fs);
    remat_fn_free(gf);
}

static void near(const char *what, int i, double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol * fabs(want) + 1e-300))
        fail_msg("%s[%d]: closed form %.17g, forward mode %.17g", what, i, got, want);
}

/* the closed-form Jacobian (gas_lower.c) against forward mode on every rate
 * form, adiabatic and isothermal, and reverse mode through it against
 * reverse mode through forward mode; where it does not apply it says so */
/* J of m in closed form against forward mode at two states, and reverse mode through each */
static void closed_check_at(remat_mechanism *m, int set_m2, const char *what, const char *const comp[2])
{
    double y[4], p[32], J[2][16], gy[2][4], gp[2][32];
    int pn = remat_mechanism_param_count(m);
    assert_true(pn <= 32);
    for (int at = 0; at < 2; at++) {
        assert_ok(remat_gas_state(m, at ? 900 : 1234, comp[at], y));
        remat_mechanism_param_values(m, p);
        if (set_m2)
            p[2] = 1.7; /* m2 */
        for (int c = 0; c < 2; c++)
            jacobian_run(m, c, y, p, J[c], gy[c], gp[c]);
        double scale = 0;
        for (int i = 0; i < 16; i++)
            scale = fmax(scale, fabs(J[0][i]));
        for (int i = 0; i < 16; i++)
            if (!(fabs(J[1][i] - J[0][i]) <= 1e-12 * scale))
                fail_msg("%s: J[%d][%d] (state %d): closed form %.17g, forward mode %.17g", what, i / 4, i % 4, at,
                         J[1][i], J[0][i]);
        for (int i = 0; i < 4; i++)
            near("d sum(J w) / dy", i, gy[1][i], gy[0][i], 1e-9);
        for (int i = 0; i < pn; i++)
            near("d sum(J w) / dparams", i, gp[1][i], gp[0][i], 1e-9);
    }
}

static void closed_check(remat_mechanism *m, int set_m2, const char *what)
{
    closed_check_at(m, set_m2, what, (const char *const[]){"A=1,B=2,M2=0.5", "A=2,B=1,M2=1"});
}

static void closed_jacobian(void **state)
{
    (void)state;
    for (int e = 0; e < 2; e++) {
        remat_mechanism *m = read_ok("vec.yaml", vec_text, e ? REMAT_GAS_ISOTHERMAL : REMAT_GAS_ADIABATIC);
        closed_check(m, 1, e ? "isothermal" : "adiabatic");
        int pn = remat_mechanism_param_count(m);
        /* a batch of states: not this form */
        remat_fn *f = remat_fn_new("batch");
        int64_t pn64 = pn;
        remat_val J0, d0, by = remat_arg(f, "y", REMAT_F64, 2, ((int64_t[]){2, 4}));
        remat_val bp = remat_arg(f, "p", REMAT_F64, 1, &pn64);
        assert_int_equal(remat_gas_jacobian(f, m, by, bp, &J0, &d0), REMAT_ERR_UNSUPPORTED);
        assert_int_equal(J0, REMAT_NONE);
        remat_fn_free(f);
        remat_mechanism_free(m);
    }
}

/* vec_text with its reaction `which` alone (0: SRI falloff, 1: chemically activated SRI, 2: three-body,
 * 3: Troe falloff, 4: elementary with orders) */
static remat_mechanism *one_form(int which, remat_gas_energy energy, const char *head)
{
    const char *r = strstr(vec_text, "- equation:");
    for (int i = 0; i < which; i++)
        r = strstr(r + 1, "- equation:");
    const char *end = strstr(r + 1, "- equation:");
    int n = end ? (int)(end - r) : (int)strlen(r);
    char text[4096];
    snprintf(text, sizeof text, "%s%s%.*s", head, "reactions:\n", n, r);
    return read_ok("form.yaml", text, energy);
}

/* CK_HEAD's species: a three-body reaction with an explicit reverse (REV) and efficiencies, one
 * whose reverse comes from equilibrium (its efficiencies differ: not a duplicate), and an
 * elementary one with REV */
#define REV_TB_TEXT                                                                                           \
    CK_HEAD CK_THERMO "REACTIONS\n"                                                                          \
                      "2H2+O2+M<=>2H2O+M  1.0E16 -0.5 1000.0\n"                                             \
                      "H2O/3.0/ O2/0.4/\n"                                                                   \
                      "REV /2.0E15 -0.3 5000.0/\n"                                                           \
                      "2H2O+M<=>2H2+O2+M  1.0E15 -0.2 800.0\n"                                                \
                      "H2O/2.0/\n"                                                                           \
                      "2H2+O2<=>2H2O  1.0E13 0.4 3000.0\n"                                                  \
                      "REV /2.0E12 -0.3 5000.0/\n"                                                           \
                      "END\n"

/* the vector right-hand side against the reference evaluator at T = 1234 K and comp */
static void vector_matches_reference(remat_mechanism *m, const char *what, const char *comp)
{
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    assert_non_null(f);
    remat_program *prog = compile_ok(f);
    double y[4], p[32], ref[4], got[4], t = 0;
    int64_t s4 = 4, pn = remat_mechanism_param_count(m);
    assert_true(pn <= 32);
    assert_ok(remat_gas_state(m, 1234, comp, y));
    remat_mechanism_param_values(m, p);
    assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, ref));
    remat_tensor in[3] = {remat_tensor_f64(&t, 0, NULL), remat_tensor_f64(y, 1, &s4), remat_tensor_f64(p, 1, &pn)};
    remat_tensor out[1] = {remat_tensor_f64(got, 1, &s4)};
    assert_ok(remat_run(prog, 3, in, 1, out, NULL));
    for (int i = 0; i < 4; i++)
        if (!(fabs(got[i] - ref[i]) <= 1e-12 * (fabs(ref[i]) + 1e-300)))
            fail_msg("%s: dydt[%d] %.17g, reference %.17g", what, i, got[i], ref[i]);
    remat_program_free(prog);
    remat_fn_free(f);
}

/* each rate form alone (the lowering then leaves out the other forms' parts, gas_lower.c): the
 * closed-form Jacobian still agrees with forward mode, and the vector right-hand side with the
 * reference evaluator */
static void closed_jacobian_each_form(void **state)
{
    (void)state;
    for (int which = 0; which < 5; which++)
        for (int e = 0; e < 2; e++) {
            remat_mechanism *m = one_form(which, e ? REMAT_GAS_ISOTHERMAL : REMAT_GAS_ADIABATIC, HEAD);
            char what[64];
            snprintf(what, sizeof what, "reaction %d alone, %s", which, e ? "isothermal" : "adiabatic");
            closed_check(m, 0, what);
            vector_matches_reference(m, what, "A=1,B=2,M2=0.5");
            remat_mechanism_free(m);
        }
    /* an explicit reverse (CHEMKIN REV) on a three-body reaction: k_rev [M], the forward's
     * efficiencies (cantera_rev) */
    for (int e = 0; e < 2; e++) {
        remat_mechanism *m = read_ok("revtb.inp", REV_TB_TEXT, e ? REMAT_GAS_ISOTHERMAL : REMAT_GAS_ADIABATIC);
        char what[64];
        snprintf(what, sizeof what, "three-body explicit reverse, %s", e ? "isothermal" : "adiabatic");
        closed_check_at(m, 0, what, (const char *const[]){"H2=2,O2=1,H2O=0.5", "H2=1,O2=1,H2O=2"});
        vector_matches_reference(m, what, "H2=1,O2=1,H2O=2");
        remat_mechanism_free(m);
    }
}

/* The T column of the closed form (every rate form's T dependence written out, gas_lower.c
 * t_column) against forward mode where every term it has is non-zero: heat capacities that
 * move with T (d cp / dT in the energy balance), all the forms together and each alone, a Troe
 * form with all three of its exponentials (T3 != 0), and an explicit reverse rate (CHEMKIN REV)
 * with b and Ea; reverse mode through each */
static void closed_t_column(void **state)
{
    (void)state;
    char text[8192];
    for (int e = 0; e < 2; e++) {
        remat_gas_energy en = e ? REMAT_GAS_ISOTHERMAL : REMAT_GAS_ADIABATIC;
        char what[80];
        snprintf(text, sizeof text, "%s%s", POLY_HEAD, strstr(vec_text, "reactions:\n"));
        remat_mechanism *m = read_ok("poly.yaml", text, en);
        snprintf(what, sizeof what, "T-dependent cp, all forms, %s", e ? "isothermal" : "adiabatic");
        closed_check(m, 1, what);
        remat_mechanism_free(m);
        for (int which = 0; which < 5; which++) {
            m = one_form(which, en, POLY_HEAD);
            snprintf(what, sizeof what, "T-dependent cp, reaction %d alone, %s", which, e ? "isothermal" : "adiabatic");
            closed_check(m, 0, what);
            remat_mechanism_free(m);
        }
        snprintf(text, sizeof text, "%s%s", POLY_HEAD,
                 "reactions:\n"
                 "- equation: A + B (+M) <=> 2 B (+M)\n"
                 "  type: falloff\n"
                 "  low-P-rate-constant: {A: 1.0e10, b: 0.3, Ea: 300}\n"
                 "  high-P-rate-constant: {A: 1.0e5, b: -0.2, Ea: 100}\n"
                 "  Troe: {A: 0.6, T3: 700, T1: 900.0, T2: 1500.0}\n"
                 "  efficiencies: {B: 2.0}\n");
        m = read_ok("troe3.yaml", text, en);
        snprintf(what, sizeof what, "Troe with T3, %s", e ? "isothermal" : "adiabatic");
        closed_check(m, 0, what);
        remat_mechanism_free(m);
        m = read_ok("rev.inp",
                    CK_HEAD CK_THERMO "REACTIONS\n"
                                      "2H2+O2<=>2H2O  1.0E13 0.4 3000.0\n"
                                      "REV /2.0E12 -0.3 5000.0/\nDUPLICATE\n"
                                      "2H2+O2<=>2H2O  1.0E16 -0.5 1000.0\nDUPLICATE\n"
                                      "END\n",
                    en);
        snprintf(what, sizeof what, "explicit reverse, %s", e ? "isothermal" : "adiabatic");
        closed_check_at(m, 0, what, (const char *const[]){"H2=2,O2=1,H2O=0.5", "H2=1,O2=1,H2O=2"});
        remat_mechanism_free(m);
        m = read_ok("revtb.inp", REV_TB_TEXT, en);
        snprintf(what, sizeof what, "three-body explicit reverse, %s", e ? "isothermal" : "adiabatic");
        closed_check_at(m, 0, what, (const char *const[]){"H2=2,O2=1,H2O=0.5", "H2=1,O2=1,H2O=2"});
        remat_mechanism_free(m);
    }
}

/* the right-hand side's graph holds only the forms the mechanism has: one reaction A + B <=> 2 B
 * lowers to more nodes as elementary, three-body, Lindemann falloff, then Troe (or SRI) falloff
 * (all the forms' parts, masked per reaction, were lowered for every mechanism: the same count) */
static void lowering_leaves_out_absent_forms(void **state)
{
    (void)state;
    static const char *const forms[] = {
        "- equation: A + B <=> 2 B\n  rate-constant: {A: 1.0e9, b: 0, Ea: 500}\n",
        "- equation: A + B + M <=> 2 B + M\n  type: three-body\n  rate-constant: {A: 1.0e9, b: 0, Ea: 500}\n",
        "- equation: A + B (+M) <=> 2 B (+M)\n  type: falloff\n"
        "  low-P-rate-constant: {A: 1.0e10, b: 0, Ea: 0}\n  high-P-rate-constant: {A: 1.0e5, b: 0, Ea: 0}\n",
        "- equation: A + B (+M) <=> 2 B (+M)\n  type: falloff\n"
        "  low-P-rate-constant: {A: 1.0e10, b: 0, Ea: 0}\n  high-P-rate-constant: {A: 1.0e5, b: 0, Ea: 0}\n"
        "  Troe: {A: 0.6, T3: 200, T1: 500.0, T2: 4000.0}\n",
        "- equation: A + B (+M) <=> 2 B (+M)\n  type: falloff\n"
        "  low-P-rate-constant: {A: 1.0e10, b: 0, Ea: 0}\n  high-P-rate-constant: {A: 1.0e5, b: 0, Ea: 0}\n"
        "  SRI: {A: 0.5, B: 100.0, C: 1000.0}\n",
    };
    int nodes[5];
    for (int i = 0; i < 5; i++) {
        char text[4096];
        snprintf(text, sizeof text, "%s%s", HEAD "reactions:\n", forms[i]);
        remat_mechanism *m = read_ok("form.yaml", text, REMAT_GAS_ADIABATIC);
        remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
        assert_non_null(f);
        nodes[i] = remat_fn_num_nodes(f);
        remat_fn_free(f);
        remat_mechanism_free(m);
    }
    if (!(nodes[0] < nodes[1] && nodes[1] < nodes[2] && nodes[2] < nodes[3] && nodes[2] < nodes[4]))
        fail_msg("nodes: elementary %d, three-body %d, Lindemann %d, Troe %d, SRI %d", nodes[0], nodes[1], nodes[2],
                 nodes[3], nodes[4]);
}

static void sniffing(void **state)
{
    (void)state;
    assert_int_equal(remat_gas_sniff("units: {length: cm}\nphases:\n"), REMAT_GAS_FORMAT_YAML);
    assert_int_equal(remat_gas_sniff("! comment\nELEMENTS\nH O\nEND\n"), REMAT_GAS_FORMAT_CHEMKIN);
    assert_int_equal(remat_gas_sniff("param k1 = 1\nA -> B : k1\n"), REMAT_GAS_FORMAT_NONE);
    /* .mech files stay .mech files: a species line, a species named like a keyword */
    assert_int_equal(remat_gas_sniff("species A, B\nparam k = 1\nA -> B : k\n"), REMAT_GAS_FORMAT_NONE);
    assert_int_equal(remat_gas_sniff("param k = 1\nREAC -> B : k\nSPECIES -> C : k\n"), REMAT_GAS_FORMAT_NONE);
    assert_int_equal(remat_gas_sniff("SPEC\nH2\nEND\n"), REMAT_GAS_FORMAT_CHEMKIN);
    assert_int_equal(remat_gas_sniff("REACTIONS KCAL/MOLE\n"), REMAT_GAS_FORMAT_CHEMKIN);
    /* a .mech parse of another format says what it looks like */
    remat_mechanism *m;
    const char *path = write_file("abc.yaml", "units: {length: cm}\nphases: []\n");
    assert_int_equal(remat_mechanism_parse_file(path, &m), REMAT_ERR_PARSE);
    assert_non_null(strstr(remat_last_error(), "this looks like a Cantera YAML file"));
    path = write_file("abc.inp", "ELEMENTS\nH O\nEND\nSPECIES\nH2 O2\nEND\n");
    assert_int_equal(remat_mechanism_parse_file(path, &m), REMAT_ERR_PARSE);
    assert_non_null(strstr(remat_last_error(), "this looks like a CHEMKIN file"));
}

static void state_errors(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("st.yaml", HEAD "reactions: []\n", REMAT_GAS_ADIABATIC);
    double y[4];
    assert_int_equal(remat_gas_state(m, 1000, "A=1,C=2", y), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "'C' is not a gas species"));
    assert_int_equal(remat_gas_state(m, 1000, "A=-1", y), REMAT_ERR_VALUE);
    assert_int_equal(remat_gas_state(m, 1000, "A=0", y), REMAT_ERR_VALUE);
    assert_int_equal(remat_gas_state(m, -5, "A=1", y), REMAT_ERR_VALUE);
    assert_int_equal(remat_gas_state(m, 1000, "T=1", y), REMAT_ERR_VALUE);
    remat_mechanism_free(m);
    remat_mechanism *mech = parse("A -> B : 1\n");
    assert_int_equal(remat_gas_species_count(mech), 0);
    assert_int_equal(remat_gas_state(mech, 1000, "A=1", y), REMAT_ERR_ARG);
    remat_mechanism_free(mech);
}

/* Negative mole fractions beyond rounding are found although T (1000 K) is
 * in the state: the tolerance's scale is the mole fractions' (0.5 here), not
 * T's, which made it 1e-3 and let a mole fraction of -5e-5 pass. Euler at
 * h k = 1.0001 takes X_A from 0.5 to -5e-5 in its first step. */
static void negative_mole_fractions(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("neg.yaml",
                                 HEAD "reactions:\n"
                                      "- equation: A => B\n"
                                      "  rate-constant: {A: 10.001, b: 0, Ea: 0}\n",
                                 REMAT_GAS_ISOTHERMAL);
    double y0[4], p[8];
    assert_ok(remat_gas_state(m, 1000, "A=1,M2=1", y0));
    remat_mechanism_param_values(m, p);
    remat_pfr_options o = {.method = REMAT_ODE_EULER, .length = 1, .steps = 10, .inlet = y0};
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    double z[11], prof[44];
    assert_ok(remat_pfr_profile(r, p, z, prof));
    assert_true(prof[4] < -4e-5 && prof[4] > -6e-5); /* row 1, X_A */
    assert_true(prof[7] == 1000);                    /* row 1, T */
    int64_t row = -1;
    int s = -1;
    assert_int_equal(remat_pfr_negative(r, 11, prof, &row, &s), 1);
    assert_int_equal(row, 1);
    assert_int_equal(s, 0);
    remat_pfr_free(r);
    /* the same rule for any integrator's states; rounding (-1e-9) is not reported */
    double y[4] = {-5e-5, 0.5, 0.5, 1000};
    assert_int_equal(remat_pfr_negative_states(m, y0, 1e-6, 1e-12, 1, y, NULL, NULL), 1);
    y[0] = -1e-9;
    assert_int_equal(remat_pfr_negative_states(m, y0, 1e-6, 1e-12, 1, y, NULL, NULL), 0);
    remat_mechanism_free(m);
}

static void unsupported_yaml(void **state)
{
    (void)state;
    expect_error("surf.yaml",
                 "phases:\n- name: s\n  thermo: ideal-surface\n  species: [A]\nspecies:\n- name: A\n", NULL, "3",
                 "surface and edge phases");
    expect_error("rk.yaml", "phases:\n- name: s\n  thermo: Redlich-Kwong\n  species: [A]\n", NULL, "3",
                 "non-ideal phases are left out");
    expect_error("ion.yaml",
                 "phases:\n- name: g\n  thermo: ideal-gas\n  species: [E]\nspecies:\n- name: E\n"
                 "  composition: {E: 1}\n",
                 NULL, "7", "charged species");
    expect_error("nasa9.yaml",
                 "phases:\n- name: g\n  thermo: ideal-gas\n  species: [A]\nspecies:\n- name: A\n"
                 "  thermo: {model: NASA9, data: []}\n",
                 NULL, "7", "thermo model 'NASA9' is not supported");
    expect_error("cheb.yaml",
                 HEAD "reactions:\n- equation: A => B\n  type: Chebyshev\n  temperature-range: [300, 2000]\n", NULL,
                 "22", "Chebyshev rates are left out");
    expect_error("bm.yaml", HEAD "reactions:\n- equation: A => B\n  type: Blowers-Masel\n", NULL, "22",
                 "rate type 'Blowers-Masel' is not supported");
    expect_error("cov.yaml",
                 HEAD "reactions:\n- equation: A => B\n  rate-constant: {A: 1, b: 0, Ea: 0}\n"
                      "  coverage-dependencies: {A: [0, 0, 0]}\n",
                 NULL, "23", "'coverage-dependencies' is not supported");
    expect_error("iface.yaml",
                 "phases:\n- name: g\n  thermo: ideal-gas\n  kinetics: surface\n  species: [A]\n", NULL, "4",
                 "kinetics 'surface' is not supported");
}

static void malformed_yaml(void **state)
{
    (void)state;
    expect_error("syntax.yaml", "units: {length: cm\nphases:\n", NULL, "2", "YAML:");
    expect_error("nophase.yaml", "units: {length: cm}\nspecies: []\n", NULL, "0", "phases");
    expect_error("unit.yaml", "units: {length: furlong}\nphases: []\n", NULL, "1", "unknown unit 'furlong'");
    expect_error("undecl.yaml", HEAD "reactions:\n- equation: A + C => B\n  rate-constant: {A: 1, b: 0, Ea: 0}\n",
                 NULL, "21", "species 'C' in the reaction equation is not declared");
    expect_error("noarrow.yaml", HEAD "reactions:\n- equation: A B\n  rate-constant: {A: 1, b: 0, Ea: 0}\n", NULL,
                 "21", "has no '<=>'");
    expect_error("norate.yaml", HEAD "reactions:\n- equation: A => B\n", NULL, "21", "needs a rate-constant");
    expect_error("badnum.yaml", HEAD "reactions:\n- equation: A => B\n  rate-constant: {A: x1, b: 0, Ea: 0}\n",
                 NULL, "22", "'x1' is not a number");
    expect_error("tbm.yaml",
                 HEAD "reactions:\n- equation: A => B\n  type: three-body\n  rate-constant: {A: 1, b: 0, Ea: 0}\n",
                 NULL, "21", "needs '+ M'");
    expect_error("fom.yaml",
                 HEAD "reactions:\n- equation: A + M => B + M\n  type: falloff\n"
                      "  low-P-rate-constant: {A: 1, b: 0, Ea: 0}\n  high-P-rate-constant: {A: 1, b: 0, Ea: 0}\n",
                 NULL, "21", "needs '(+M)'");
    expect_error("nothermo.yaml",
                 "phases:\n- name: g\n  thermo: ideal-gas\n  species: [A]\nspecies:\n- name: A\n", NULL, "6",
                 "has no thermo");
    expect_error("dup.yaml",
                 "phases:\n- name: g\n  thermo: ideal-gas\n  species: [A, A]\nspecies:\n- name: A\n"
                 "  composition: {Ar: 1}\n"
                 "  thermo: {model: NASA7, temperature-ranges: [200, 3500], data: [[2.5, 0, 0, 0, 0, 0, 3]]}\n",
                 NULL, "6", "declared twice");
    expect_error("neither.txt", "hello\n", NULL, "1", "neither a Cantera YAML file");
}


/* The same reaction twice is counted twice: refused unless both are marked
 * duplicates (Cantera's checkDuplicates), as is a mark without a twin; a
 * reverse counts when either is reversible; the forms and third bodies must
 * agree (issue 21's audit: these read silently before). */
static void duplicates(void **state)
{
    (void)state;
    const char *el = "  rate-constant: {A: 1, b: 0, Ea: 0}\n";
    char buf[4096];
    snprintf(buf, sizeof buf, HEAD "reactions:\n- equation: A <=> B\n%s- equation: A <=> B\n%s", el, el);
    expect_error("dup_same.yaml", buf, NULL, "23", "reaction 2 'A <=> B' repeats reaction 1 (line 21)");
    snprintf(buf, sizeof buf, HEAD "reactions:\n- equation: A <=> B\n%s- equation: B => A\n%s", el, el);
    expect_error("dup_reverse.yaml", buf, NULL, "23", "mark both 'duplicate: true'");
    snprintf(buf, sizeof buf, HEAD "reactions:\n- equation: A + A <=> B + B\n%s- equation: 2 A <=> 2 B\n%s", el, el);
    expect_error("dup_coeff.yaml", buf, NULL, "23", "repeats reaction 1");
    snprintf(buf, sizeof buf, HEAD "reactions:\n- equation: A => B\n%s  duplicate: true\n", el);
    expect_error("dup_alone.yaml", buf, NULL, "21", "reaction 1 'A => B' is marked a duplicate, but no other");
    expect_error("dup.inp", CK_HEAD CK_THERMO "REACTIONS\n2H2+O2=>2H2O  1.0E13 0.0 0.0\n"
                                              "2H2+O2=>2H2O  2.0E13 0.0 0.0\nEND\n",
                 NULL, "24", "not both marked duplicates: mark both DUPLICATE");
    /* accepted: both marked; opposite irreversible reactions; different forms or efficiencies */
    snprintf(buf, sizeof buf,
             HEAD "reactions:\n- equation: A <=> B\n%s  duplicate: true\n- equation: B => A\n%s  duplicate: true\n"
                  "- equation: A + B => B + B\n%s- equation: B + B => A + B\n%s"
                  "- equation: A + M => B + M\n  type: three-body\n%s  efficiencies: {A: 0}\n"
                  "- equation: A + M => B + M\n  type: three-body\n%s  default-efficiency: 0\n"
                  "  efficiencies: {A: 1}\n",
             el, el, el, el, el, el);
    remat_mechanism *m = read_ok("dup_ok.yaml", buf, REMAT_GAS_ISOTHERMAL);
    assert_non_null(m);
    remat_mechanism_free(m);
    m = read_ok("dup_ok.inp",
                CK_HEAD CK_THERMO "REACTIONS\n2H2+O2=>2H2O  1.0E13 0.0 0.0\nDUP\n"
                                  "2H2+O2=>2H2O  2.0E13 0.0 0.0\nDUPLICATE\nEND\n",
                REMAT_GAS_ISOTHERMAL);
    assert_non_null(m);
    remat_mechanism_free(m);
}

/* Elements balance in every reaction, as Cantera's Reaction::checkBalance; a species' element
 * must be declared where the file declares its elements */
static void element_balance(void **state)
{
    (void)state;
    /* HEAD: A and B are H2 each; A + B => A loses two H (reactions start on line 21) */
    expect_error("unbal.yaml", HEAD "reactions:\n- equation: A + B => A\n  rate-constant: {A: 1, b: 0, Ea: 0}\n", NULL,
                 "21",
                 "reaction 1 'A + B => A' is unbalanced: element H, 4 on the reactants' side and 2 on the products'");
    /* CK_HEAD's species: O2 + H2 => H2O + O2 makes an O atom (the reaction is on line 23) */
    expect_error("unbal.inp", CK_HEAD CK_THERMO "REACTIONS\nH2+O2=>H2O+O2  1.0E13 0.0 0.0\nEND\n", NULL, "23",
                 "reaction 1 'H2+O2=>H2O+O2' is unbalanced: element O, 2 on the reactants' side and 3 on the "
                 "products'");
    /* the phase lists its elements: Ar is not one (the composition on line 8) */
    expect_error("undecl.yaml",
                 "phases:\n- name: g\n  thermo: ideal-gas\n  elements: [H]\n  species: [A]\nspecies:\n- name: A\n"
                 "  composition: {Ar: 1}\n"
                 "  thermo: {model: NASA7, temperature-ranges: [200, 3500], data: [[2.5, 0, 0, 0, 0, 0, 3]]}\n",
                 NULL, "8", "species 'A' contains the element 'Ar', which is not declared (the phase's 'elements')");
    /* ELEMENTS lists H alone: O2's thermo entry (line 13) has O */
    expect_error("undecl.inp", "ELEMENTS\nH\nEND\nSPECIES\nH2 O2 H2O\nEND\n" CK_THERMO, NULL, "13",
                 "species 'O2' contains the element 'O', which is not declared (ELEMENTS)");
    /* the fifth element field, columns 74-78: H2O as H 2 there and O 1 in the fifth */
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", CK_HEAD CK_THERMO "REACTIONS\n2H2+O2=>2H2O  1.0E13 0.0 0.0\nEND\n");
    char *h2o = strstr(buf, "H2O                     H   2O   1          G");
    assert_non_null(h2o);
    memcpy(h2o + 24, "H   2     ", 10);
    char *eol = strchr(h2o, '\n');
    char line1[128];
    snprintf(line1, sizeof line1, "%.*s", (int)(eol - h2o), h2o);
    char fixed[128];
    snprintf(fixed, sizeof fixed, "%-73.73sO   1 1", line1);
    char out[8192];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(h2o - buf), buf, fixed, eol);
    /* balances only with the fifth field's O (else O: 2 on the reactants' side, 0 on the products') */
    remat_mechanism *m = read_ok("fifth.inp", out, REMAT_GAS_ISOTHERMAL);
    remat_mechanism_free(m);
}

/* a CHEMKIN file: units of its REACTIONS line, thermo inside, FORD, REV */
static void chemkin_reads(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("a.inp",
                                 CK_HEAD CK_THERMO "REACTIONS KJOULES/MOLE MOLECULES\n"
                                                   "2H2+O2=>2H2O  1.0E-30 0.0 10.0 ! a comment\n"
                                                   "FORD /H2 1.0/\nDUPLICATE\n"
                                                   "2H2+O2<=>2H2O  1.0E-40 0.0 0.0\n"
                                                   "REV /2.0E-20 0.0 0.0/\nDUPLICATE\n"
                                                   "END\n",
                                 REMAT_GAS_ISOTHERMAL);
    double T = 1500, y[4], p[16], dy[4];
    assert_ok(remat_gas_state(m, T, "H2=2,O2=1", y));
    remat_mechanism_param_values(m, p);
    /* molecules: A (cm^3/molec)^(n-1)/s to (m^3/mol)^(n-1)/s; FORD: order 1 in H2, 1 in O2 (n = 2) */
    double A1 = 1e-30 * 1e-6 * 6.02214076e23, Ea1 = 10e3;
    assert_true(fabs(p[remat_mechanism_param_find(m, "A1")] - A1) <= 1e-15 * A1);
    assert_true(p[remat_mechanism_param_find(m, "Ea1")] == Ea1);
    assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, dy));
    double C = 101325 / (R_GAS * T), cH2 = C * 2 / 3, cO2 = C / 3;
    double q1 = A1 * exp(-Ea1 / (R_GAS * T)) * cH2 * cO2;
    /* third order: (cm^3/molec)^2/s; reverse: H2O absent */
    double A2 = 1e-40 * (1e-6 * 6.02214076e23) * (1e-6 * 6.02214076e23), q2 = A2 * cH2 * cH2 * cO2;
    double omega_h2 = -2 * q1 - 2 * q2, omega_o2 = -q1 - q2, omega_h2o = 2 * q1 + 2 * q2;
    double tot = omega_h2 + omega_o2 + omega_h2o;
    double want = (omega_h2 - y[0] * tot) / C;
    assert_true(fabs(dy[0] - want) <= 1e-12 * fabs(want));
    remat_mechanism_free(m);
}

/* CHEMKIN REV on three-body, falloff and elementary reactions against Cantera 3.2
 * (tests/goldens/cantera_rev.json, tools/goldens/gen_rev_goldens.py): ck2yaml makes a
 * three-body reverse k_r [M] with the forward's efficiencies and a falloff reverse a bare
 * Arrhenius rate. dX/dt of the isothermal model, (wdot - X sum(wdot)) / C from Cantera's net
 * production rates, at each state, from the reference evaluator and the vector right-hand side */
static void cantera_rev_one(const cJSON *doc, const cJSON *set)
{
    char path[1024], tpath[1024];
    const char *gdir = getenv("REMAT_GOLDENS"), *ddir = getenv("REMAT_DATA"), *name;
    assert_non_null(gdir);
    assert_non_null(ddir);
    name = jget(set, "mechanism")->valuestring;
    snprintf(path, sizeof path, "%s/%s", gdir, name);
    snprintf(tpath, sizeof tpath, "%s/%s", ddir, jget(doc, "thermo")->valuestring + strlen("data/"));
    remat_gas_options o = {.energy = REMAT_GAS_ISOTHERMAL, .thermo = tpath};
    remat_mechanism *m = NULL;
    assert_ok(remat_gas_read(path, &o, &m));
    enum { K = 10 };
    assert_int_equal(remat_gas_species_count(m), K);
    int64_t S = K + 1, pn = remat_mechanism_param_count(m);
    assert_true(pn <= 64);
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    assert_non_null(f);
    remat_program *prog = compile_ok(f);
    const cJSON *st;
    int at = 0;
    cJSON_ArrayForEach(st, jget(set, "states"))
    {
        double y[K + 1], p[64], wdot[K], ref[K + 1], got[K + 1], t = 0, total = 0;
        const cJSON *x = jget(st, "X")->child, *w = jget(st, "net_production_rates")->child;
        for (int k = 0; k < K; k++, x = x->next, w = w->next)
            y[k] = x->valuedouble, wdot[k] = w->valuedouble, total += wdot[k];
        double T = jget(st, "T")->valuedouble, P = jget(st, "P")->valuedouble, C = P / (R_GAS * T);
        y[K] = T;
        remat_mechanism_param_values(m, p);
        p[remat_mechanism_param_find(m, "P")] = P;
        assert_ok(remat_mechanism_eval_rhs(m, 0, y, p, ref));
        remat_tensor in[3] = {remat_tensor_f64(&t, 0, NULL), remat_tensor_f64(y, 1, &S), remat_tensor_f64(p, 1, &pn)};
        remat_tensor out[1] = {remat_tensor_f64(got, 1, &S)};
        assert_ok(remat_run(prog, 3, in, 1, out, NULL));
        for (int k = 0; k < K; k++) {
            double want = (wdot[k] - y[k] * total) / C, scale = (fabs(wdot[k]) + fabs(y[k] * total)) / C;
            if (!(fabs(ref[k] - want) <= 1e-12 * scale))
                fail_msg("%s, state %d: reference dX[%d]/dt %.17g, Cantera %.17g", name, at, k, ref[k], want);
            if (!(fabs(got[k] - want) <= 1e-12 * scale))
                fail_msg("%s, state %d: vector dX[%d]/dt %.17g, Cantera %.17g", name, at, k, got[k], want);
        }
        assert_true(ref[K] == 0 && got[K] == 0);
        at++;
    }
    assert_int_equal(at, 3);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* and the same reactions with A per molecule (MOLECULES): each reverse's A converts by its own
 * order, a three-body one's counting M, as Cantera reads ck2yaml's output */
static void cantera_rev(void **state)
{
    (void)state;
    const cJSON *doc = golden("cantera_rev.json");
    cantera_rev_one(doc, doc);
    cantera_rev_one(doc, jget(doc, "molecules"));
}

/* A pre-exponential factor in cm^3 (cm^6 for three bodies) per mol is the
 * correctly rounded SI value, as the user wrote it: a power-of-ten unit
 * factor is one exact multiplication or division, not the product of
 * 0.01^3 (1.0000000000000002e-6), which made 1.2e17 cm^6/mol^2/s
 * 120000.00000000004 m^6/mol^2/s; YAML (default and explicit units) and
 * CHEMKIN alike. */
static void a_in_powers_of_ten(void **state)
{
    (void)state;
    remat_mechanism *m = read_ok("a10.yaml",
                                 HEAD "reactions:\n"
                                      "- equation: A + B + M2 => B + B + M2\n"
                                      "  rate-constant: {A: 1.2e17, b: 0, Ea: 0}\n"
                                      "- equation: A + B => B + B\n"
                                      "  rate-constant: {A: 1.2e11 cm^3/mol/s, b: 0, Ea: 0}\n"
                                      "  duplicate: true\n" /* the same reaction twice: marked (duplicates) */
                                      "- equation: A + B => B + B\n"
                                      "  rate-constant: {A: 0.3, b: 0, Ea: 0}\n"
                                      "  duplicate: true\n",
                                 REMAT_GAS_ISOTHERMAL);
    assert_true(remat_mechanism_param_value(m, remat_mechanism_param_find(m, "A1")) == 120000.0);
    assert_true(remat_mechanism_param_value(m, remat_mechanism_param_find(m, "A2")) == 120000.0);
    assert_true(remat_mechanism_param_value(m, remat_mechanism_param_find(m, "A3")) == 0.3 / 1e6);
    remat_mechanism_free(m);
    m = read_ok("a10.inp", CK_HEAD CK_THERMO "REACTIONS\n2H2+O2=>2H2O  1.2E17 0.0 0.0\nEND\n",
                REMAT_GAS_ISOTHERMAL);
    assert_true(remat_mechanism_param_value(m, remat_mechanism_param_find(m, "A1")) == 120000.0);
    remat_mechanism_free(m);
}

static void unsupported_chemkin(void **state)
{
    (void)state;
    const char *rx = CK_HEAD CK_THERMO "REACTIONS\n"; /* the reaction is on line 23 */
    char buf[4096];
#define CK(name, tail, line, want)                                                                            \
    snprintf(buf, sizeof buf, "%s%s", rx, tail);                                                              \
    expect_error(name, buf, NULL, line, want)
    CK("onem.inp", "H2+O2<=>2H2O(+M) 1 0 0\n", "23", "'(+M)' must stand on both sides");
    CK("cheb2.inp", "H2+O2<=>2H2O 1 0 0\nCHEB /7 4/\n", "24", "CHEB is not supported (Chebyshev rates are left out)");
    CK("tdep.inp", "H2+O2<=>2H2O 1 0 0\nTDEP /H2/\n", "24", "TDEP is not supported");
    CK("low.inp", "H2+O2<=>2H2O 1 0 0\nLOW /1 0 0/\n", "23", "LOW or HIGH needs '(+M)'");
    CK("nolow.inp", "H2+O2(+M)<=>2H2O(+M) 1 0 0\n", "23", "needs a LOW or HIGH line");
    CK("rev.inp", "H2+O2=>2H2O 1 0 0\nREV /1 0 0/\n", "24", "REV on an irreversible reaction");
    CK("eff.inp", "H2+O2<=>2H2O 1 0 0\nH2/2.0/\n", "23", "third-body efficiencies need");
    CK("aux.inp", "H2+O2<=>2H2O 1 0 0\nFOO /2.0/\n", "24", "'FOO' is not a species nor a supported CHEMKIN keyword");
    CK("nums.inp", "H2+O2<=>2H2O 1 0\n", "23", "ends with its Arrhenius parameters");
#undef CK
    expect_error("units.inp", CK_HEAD CK_THERMO "REACTIONS CALORIES\nEND\n", NULL, "22",
                 "REACTIONS: unknown unit 'CALORIES'");
    expect_error("ions.inp", "ELEMENTS\nH E\nEND\n", NULL, "2", "charged species");
    expect_error("ion2.inp", "ELEMENTS\nH\nEND\nSPECIES\nH+\nEND\n", NULL, "5", "charged species");
    expect_error("nothermo.inp", CK_HEAD "REACTIONS\nEND\n", NULL, "1", "no THERMO section");
    expect_error("tran.inp", CK_HEAD "TRANSPORT\nEND\n", NULL, "7", "TRANSPORT");
    expect_error("badthermo.inp", CK_HEAD "THERMO\n300 1000 5000\nH2   G\n 1 2\n", NULL, "10", "15-column");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(elementary_rhs), cmocka_unit_test(reversible_energy),
        cmocka_unit_test(third_body_falloff_plog), cmocka_unit_test(plog_rodas_leaves_no_error), cmocka_unit_test(vector_lowering), cmocka_unit_test(closed_jacobian),
        cmocka_unit_test(closed_jacobian_each_form), cmocka_unit_test(closed_t_column),
        cmocka_unit_test(lowering_leaves_out_absent_forms),
        cmocka_unit_test(sniffing),
        cmocka_unit_test(state_errors), cmocka_unit_test(negative_mole_fractions), cmocka_unit_test(unsupported_yaml),
        cmocka_unit_test(malformed_yaml), cmocka_unit_test(chemkin_reads), cmocka_unit_test(cantera_rev),
        cmocka_unit_test(a_in_powers_of_ten),
        cmocka_unit_test(unsupported_chemkin), cmocka_unit_test(duplicates), cmocka_unit_test(element_balance),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
