/*
 * test_mechanism.c — the mechanism format: right-hand sides evaluated against
 * formulas written here by hand, the tree the header documents, the
 * functions, conditions and rate readings. The error catalogue is
 * test_mechanism_errors.c; the helpers both share test_mechanism_util.h.
 */
#include "test_mechanism_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- behaviour ---- */

static const char abc_text[] = "# A -> B -> C, the PFR seed problem\n"
                               "param k1 = 1.0 in [0, 100]\n"
                               "param k2 = 0.5\n"
                               "A -> B : k1\n"
                               "B -> C : k2\n";

static void test_mechanism_abc_seed(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok(abc_text);
    assert_int_equal(remat_mechanism_species_count(m), 3);
    assert_string_equal(remat_mechanism_species_name(m, 0), "A");
    assert_string_equal(remat_mechanism_species_name(m, 1), "B");
    assert_string_equal(remat_mechanism_species_name(m, 2), "C");
    assert_int_equal(remat_mechanism_species_find(m, "C"), 2);
    assert_int_equal(remat_mechanism_species_find(m, "D"), -1);
    assert_int_equal(remat_mechanism_param_count(m), 2);
    assert_string_equal(remat_mechanism_param_name(m, 0), "k1");
    assert_true(remat_mechanism_param_value(m, 0) == 1.0);
    assert_true(remat_mechanism_param_lo(m, 0) == 0.0 && remat_mechanism_param_hi(m, 0) == 100.0);
    assert_true(isinf(remat_mechanism_param_lo(m, 1)) && remat_mechanism_param_lo(m, 1) < 0);
    assert_true(isinf(remat_mechanism_param_hi(m, 1)) && remat_mechanism_param_hi(m, 1) > 0);
    assert_int_equal(remat_mechanism_param_find(m, "k2"), 1);
    assert_string_equal(remat_mechanism_indep_name(m), "t");
    assert_string_equal(remat_mechanism_source(m), "mech.txt");
    expect_rhs_text(m, 0, "-(k1 * A)");
    expect_rhs_text(m, 1, "k1 * A - k2 * B");
    expect_rhs_text(m, 2, "k2 * B");

    assert_int_equal(remat_mechanism_reaction_count(m), 2);
    assert_int_equal(remat_mechanism_reaction_line(m, 1), 5);
    assert_true(remat_mechanism_reaction_stoich(m, 0, 0) == -1 && remat_mechanism_reaction_stoich(m, 0, 1) == 1);
    assert_true(remat_mechanism_reaction_stoich(m, 0, 2) == 0);

    double p[2], y[3] = {0.7, 0.2, 0.1}, dydt[3];
    remat_mechanism_param_values(m, p);
    for (int trial = 0; trial < 2; trial++) {
        assert_int_equal(remat_mechanism_eval_rhs(m, 0.0, y, p, dydt), REMAT_OK);
        expect_close(dydt[0], -p[0] * y[0]);
        expect_close(dydt[1], p[0] * y[0] - p[1] * y[1]);
        expect_close(dydt[2], p[1] * y[1]);
        p[0] = 0.8885, p[1] = 0.01; /* the fitted optimum of the seed */
    }
    remat_mechanism_free(m);
}

/* The tree as documented: kinds, indices, names, positions, shared rates. */
/* 'cond': a table of its own, read after the parameters, never a param */
static void test_mechanism_conditions(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("cond T = 300 + 50\nparam k = 2\ncond P = 1e5\n"
                                  "let kT = k * T / 350\nA -> B : kT\nB -> A : P * 1e-5 * T * B\n");
    assert_int_equal(remat_mechanism_param_count(m), 1);
    assert_int_equal(remat_mechanism_cond_count(m), 2);
    assert_int_equal(remat_mechanism_input_count(m), 3);
    assert_string_equal(remat_mechanism_cond_name(m, 0), "T");
    assert_string_equal(remat_mechanism_cond_name(m, 1), "P");
    expect_close(remat_mechanism_cond_value(m, 0), 350);
    expect_close(remat_mechanism_cond_value(m, 1), 1e5);
    assert_int_equal(remat_mechanism_cond_find(m, "P"), 1);
    assert_int_equal(remat_mechanism_cond_find(m, "k"), -1);
    assert_int_equal(remat_mechanism_param_find(m, "T"), -1);
    assert_int_equal(remat_expr_kind_name(REMAT_EXPR_COND)[0], 'c');
    const remat_expr *kt = remat_mechanism_let_expr(m, 0); /* (k * T) / 350 */
    assert_int_equal(kt->args[0]->args[1]->kind, REMAT_EXPR_COND);
    assert_int_equal(kt->args[0]->args[1]->index, 0);
    expect_rhs_text(m, 1, "kT * A - P * 1e-05 * T * B");
    /* params = {k, T, P}: the conditions after the parameters */
    double y[2] = {0.5, 0.25}, in[3] = {2, 330, 2e5}, dydt[2];
    assert_int_equal(remat_mechanism_eval_rhs(m, 0, y, in, dydt), REMAT_OK);
    double fwd = 2 * 330.0 / 350 * 0.5, rev = 2e5 * 1e-5 * 330 * 0.25;
    expect_close(dydt[1], fwd - rev);
    expect_close(dydt[0], rev - fwd);
    remat_mechanism_free(m);
    expect_error("cond T = 1\ncond T = 2\nA -> B : T\n", "mech.txt:2:6: ", "condition 'T' declared twice");
    expect_error("cond T = 1\nparam T = 2\nA -> B : T\n", "mech.txt:2:7: ", "'T' is a condition (line 1)");
    expect_error("cond T = 1\nT -> B : T\n", "mech.txt:2:1: ", "'T' is a condition");
    expect_error("cond T = 1\nparam k = T\nA -> B : k\n", "mech.txt:2:11: ", "'T' is a condition, but values");
    expect_error("cond cond = 1\nA -> B : k\n", "mech.txt:1:6: ", "'cond' is a reserved word");
    expect_error("cond T = 1 / 0\nA -> B : T\n", "mech.txt:1:10: ", "value of condition 'T' is not finite");
}

/* ': k = expr' and ': rate = expr' say the reading; the old spelling warns
 * where it is rarely meant (remat/mechanism.h, "Reactions") */
static void expect_warnings(const char *text, int n, const char *where, const char *what)
{
    remat_mechanism *m = parse_ok(text);
    if (remat_mechanism_warning_count(m) != n)
        fail_msg("%d warnings, want %d, for\n%s%s", remat_mechanism_warning_count(m), n, text,
                 remat_mechanism_warning_count(m) ? remat_mechanism_warning(m, 0) : "");
    if (n > 0 && (strncmp(remat_mechanism_warning(m, 0), where, strlen(where)) != 0 ||
                  !strstr(remat_mechanism_warning(m, 0), what)))
        fail_msg("warning \"%s\", want \"%s...%s...\"", remat_mechanism_warning(m, 0), where, what);
    remat_mechanism_free(m);
}

static void test_mechanism_rate_readings(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("param k0 = 3\nparam k1 = 2\nA -> B : k = k0 * 2\nB -> C : rate = k1 * B^2\n"
                                  "C <=> A : k = k0, rate = k1\n");
    expect_rhs_text(m, 0, "-(k0 * 2 * A) + (k0 * C - k1)");
    expect_rhs_text(m, 1, "k0 * 2 * A - k1 * B^2");
    assert_int_equal(remat_mechanism_warning_count(m), 0);
    remat_mechanism_free(m);
    /* "k" and "rate" stay usable as names where no '=' follows */
    m = parse_ok("param k = 3\nparam rate = 2\nA -> B : k\nB -> A : rate\n");
    expect_rhs_text(m, 0, "-(k * A) + rate * B");
    remat_mechanism_free(m);
    /* ": rate = A": a species alone as the whole rate, said so */
    m = parse_ok("A -> B : rate = A\n");
    expect_rhs_text(m, 1, "A");
    remat_mechanism_free(m);
    expect_error("A -> B : k = A\n", "mech.txt:1:14: ", "'A' is a species");

    /* the traps of the issue, each a warning naming file:line:col and the reading */
    expect_warnings("param k1 = 1\nA -> B : k1 * 2\n", 1, "mech.txt:2:10: warning: ",
                    "the rate 'k1 * 2' names none of the reactants (A), so it is taken as the whole rate");
    expect_warnings("param k0 = 1\nconst Ea = 5e4\nconst R = 8.314\nconst T = 350\nA -> B : k0*exp(-Ea/(R*T))\n",
                    1, "mech.txt:5:10: warning: ", "write ': k = k0*exp(-Ea/(R*T))' for a rate constant");
    /* the rate quoted as written: an arrhenius(...) call is not shown written out */
    expect_warnings("param k = 1\ncond T = 300\nA -> B : arrhenius(k, 1000) * 2\n", 1, "mech.txt:3:10: warning: ",
                    "the rate 'arrhenius(k, 1000) * 2' names none of the reactants (A)");
    expect_warnings("param k = 1\ncond T = 300\nA -> B : k = arrhenius(k, 1000)*A # comment\n", 1,
                    "mech.txt:3:14: warning: ",
                    "the rate constant 'arrhenius(k, 1000)*A' reads reactant 'A', and mass action multiplies it by "
                    "the reactants again; write ': rate = arrhenius(k, 1000)*A' if it is the whole rate");
    expect_warnings("param k = 1\nlet r = k*A\nA -> B : r\n", 1, "mech.txt:3:10: warning: ",
                    "the rate constant 'r' reads reactant 'A' through its let");
    expect_warnings("param k = 1\nA -> B : k = k * A\n", 1, "mech.txt:2:14: warning: ",
                    "the rate constant 'k * A' reads reactant 'A'");
    /* an expression that reads one of several reactants is a whole rate as meant */
    expect_warnings("param k = 1\nA + B -> C : k * 2 * B\n2 B -> C : k\n", 0, "", "");
    /* readings that are meant: no warning */
    expect_warnings("param k1 = 1\nA -> B : rate = k1 * 2\n-> A : k1 * 2\nA -> B : k1 * A\nA -> B : k1\n", 0, "", "");
    expect_warnings("param k = 1\nlet r = k*A\nA -> B : rate = r\n", 0, "", "");
}

/* arrhenius(A, Ea), arrhenius(A, b, Ea), arrhenius_ref(k_ref, Ea, T_ref):
 * rate constants of T (a cond or a species), Ea in J/mol */
static void test_mechanism_arrhenius_builtins(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("cond T = 350\nparam A0 = 1e6\nparam Ea = 5e4\nparam b = 0.7\n"
                                  "param kr = 0.3\nconst Tr = 340\n"
                                  "A -> B : arrhenius(A0, Ea)\nB -> C : arrhenius(A0, b, Ea)\n"
                                  "C -> D : arrhenius_ref(kr, Ea, Tr)\n");
    assert_int_equal(remat_mechanism_warning_count(m), 0);
    double R = 8.314462618, T = 361, y[4] = {0.5, 0.25, 0.125, 0}, in[6] = {2e6, 4.5e4, 0.6, 0.4, T}, d[4];
    assert_int_equal(remat_mechanism_eval_rhs(m, 0, y, in, d), REMAT_OK);
    double k1 = 2e6 * exp(-4.5e4 / (R * T)), k2 = 2e6 * pow(T, 0.6) * exp(-4.5e4 / (R * T)),
           k3 = 0.4 * exp(-4.5e4 / R * (1 / T - 1 / 340.0));
    expect_close(d[0], -k1 * 0.5); /* mass action: a rate constant */
    expect_close(d[1], k1 * 0.5 - k2 * 0.25);
    expect_close(d[3], k3 * 0.125);
    remat_mechanism_free(m);
    /* T a species; arrhenius inside an expression is part of that expression */
    m = parse_ok("param A0 = 2\nparam Ea = 1e3\nX -> Y : rate = 3 * arrhenius(A0, Ea) * X\nT' = 0\n");
    double yt[3] = {0.5, 0, 300}, dt[3];
    assert_int_equal(remat_mechanism_eval_rhs(m, 0, yt, (double[]){2, 1e3}, dt), REMAT_OK);
    expect_close(dt[1], 3 * 2 * exp(-1e3 / (R * 300)) * 0.5);
    remat_mechanism_free(m);
    expect_error("param A0 = 1\nA -> B : arrhenius(A0, 5e4)\n", "mech.txt:2:10: ",
                 "arrhenius needs a temperature T in K: declare it, e.g. 'cond T = 298.15'");
    expect_error("param T = 300\nA -> B : arrhenius(1, 5e4)\n", "mech.txt:2:10: ",
                 "arrhenius reads the temperature T, but 'T' is a parameter (line 1)");
    expect_error("cond T = 300\nA -> B : arrhenius(1)\n", "mech.txt:2:10: ",
                 "'arrhenius' takes 2 (A, Ea) or 3 (A, b, Ea), got 1");
    expect_error("cond T = 300\nA -> B : arrhenius_ref(1, 2)\n", "mech.txt:2:10: ",
                 "'arrhenius_ref' takes 3 (k_ref, Ea, T_ref), got 2");
    expect_error("cond T = 300\nparam arrhenius = 1\nA -> B : T\n", "mech.txt:2:7: ", "reserved word");
}

static void test_mechanism_tree_structure(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok(abc_text);
    const remat_expr *db = remat_mechanism_rhs(m, 1); /* k1*A - k2*B */
    assert_int_equal(db->kind, REMAT_EXPR_SUB);
    assert_int_equal(db->nargs, 2);
    const remat_expr *r0 = db->args[0];
    assert_ptr_equal(r0, remat_mechanism_reaction_rate(m, 0));
    assert_int_equal(r0->kind, REMAT_EXPR_MUL);
    assert_int_equal(r0->args[0]->kind, REMAT_EXPR_PARAM);
    assert_int_equal(r0->args[0]->index, 0);
    assert_string_equal(r0->args[0]->name, "k1");
    assert_int_equal(r0->args[0]->line, 4);
    assert_int_equal(r0->args[0]->col, 10);
    assert_int_equal(r0->args[1]->kind, REMAT_EXPR_SPECIES);
    assert_int_equal(r0->args[1]->index, 0);
    assert_string_equal(r0->args[1]->name, "A");
    /* dA/dt = NEG(rate 0): the same node */
    const remat_expr *da = remat_mechanism_rhs(m, 0);
    assert_int_equal(da->kind, REMAT_EXPR_NEG);
    assert_ptr_equal(da->args[0], r0);
    assert_string_equal(remat_expr_kind_name(REMAT_EXPR_POW), "pow");
    assert_string_equal(remat_expr_kind_name(REMAT_EXPR_COUNT), "?");
    assert_string_equal(remat_expr_fn_name(REMAT_FN_SQRT), "sqrt");
    remat_mechanism_free(m);

    /* CONST folded, LET referenced, INDEP, CALL, NUM with folded sign */
    m = parse_ok("const R = 8.314\n"
                 "param k = 2\n"
                 "let kT = k * exp(-1 / (R * t))\n"
                 "A -> B : kT\n");
    const remat_expr *let = remat_mechanism_let_expr(m, 0);
    assert_string_equal(remat_mechanism_let_name(m, 0), "kT");
    assert_int_equal(let->kind, REMAT_EXPR_MUL);
    const remat_expr *call = let->args[1];
    assert_int_equal(call->kind, REMAT_EXPR_CALL);
    assert_int_equal(call->fn, REMAT_FN_EXP);
    assert_int_equal(call->nargs, 1);
    const remat_expr *quot = call->args[0];
    assert_int_equal(quot->kind, REMAT_EXPR_DIV);
    assert_int_equal(quot->args[0]->kind, REMAT_EXPR_NUM);
    assert_true(quot->args[0]->value == -1.0);
    const remat_expr *rt = quot->args[1];
    assert_int_equal(rt->args[0]->kind, REMAT_EXPR_CONST);
    assert_true(rt->args[0]->value == 8.314);
    assert_int_equal(rt->args[0]->index, 0);
    assert_int_equal(rt->args[1]->kind, REMAT_EXPR_INDEP);
    const remat_expr *rate = remat_mechanism_reaction_rate(m, 0); /* kT * A */
    assert_int_equal(rate->args[0]->kind, REMAT_EXPR_LET);
    assert_int_equal(rate->args[0]->index, 0);
    assert_int_equal(remat_mechanism_const_count(m), 1);
    assert_string_equal(remat_mechanism_const_name(m, 0), "R");
    assert_true(remat_mechanism_const_value(m, 0) == 8.314);
    remat_mechanism_free(m);
}

static void test_mechanism_stoichiometry(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("param k = 3\n2 A + B -> C : k\n");
    expect_rhs_text(m, 0, "-(2 * (k * A^2 * B))");
    expect_rhs_text(m, 1, "-(k * A^2 * B)");
    expect_rhs_text(m, 2, "k * A^2 * B");
    double y[3] = {0.5, 2, 1}, p = 3, d[3];
    assert_int_equal(remat_mechanism_eval_rhs(m, 0, y, &p, d), REMAT_OK);
    double r = p * y[0] * y[0] * y[1];
    expect_close(d[0], -2 * r);
    expect_close(d[1], -r);
    expect_close(d[2], r);
    remat_mechanism_free(m);

    /* A + A is 2 A; a catalyst's net coefficient is 0 */
    m = parse_ok("param k = 1\nA + A + Cat -> B + Cat : k\n");
    expect_rhs_text(m, 0, "-(2 * (k * A^2 * Cat))");
    expect_rhs_text(m, 1, "0"); /* Cat */
    expect_rhs_text(m, 2, "k * A^2 * Cat");
    remat_mechanism_free(m);

    /* no products; a source with no reactants */
    m = parse_ok("param k = 2\nparam k0 = 0.25\nA -> : k\n-> A : k0\n");
    assert_int_equal(remat_mechanism_species_count(m), 1);
    expect_rhs_text(m, 0, "-(k * A) + k0");
    double ya = 0.75, pk[2] = {2, 0.25}, da;
    remat_mechanism_eval_rhs(m, 0, &ya, pk, &da);
    expect_close(da, -2 * 0.75 + 0.25);
    remat_mechanism_free(m);
}

static void test_mechanism_reversible(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("param kf = 2.0\nparam kr = 0.5\nA <=> B : kf, kr\n");
    expect_rhs_text(m, 0, "-(kf * A - kr * B)");
    expect_rhs_text(m, 1, "kf * A - kr * B");
    double y[2] = {0.3, 0.9}, p[2] = {2.0, 0.5}, d[2];
    remat_mechanism_eval_rhs(m, 0, y, p, d);
    expect_close(d[0], -(p[0] * y[0] - p[1] * y[1]));
    expect_close(d[1], p[0] * y[0] - p[1] * y[1]);
    remat_mechanism_free(m);

    /* each direction may be an explicit expression */
    m = parse_ok("param kf = 2.0\nparam kr = 0.5\nA + B <=> 2 C : kf * A * B, kr * C\n");
    expect_rhs_text(m, 2, "2 * (kf * A * B - kr * C)");
    remat_mechanism_free(m);
}

/* Robertson's stiff problem written with explicit rates, plus the issue's
 * "y1 -> y2 : t1 * y1^2": an explicit rate is not multiplied by y1 again. */
static void test_mechanism_explicit_rate_robertson(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("param t1 = 0.04\n"
                                  "param t2 = 3e7\n"
                                  "param t3 = 1e4\n"
                                  "y1 -> y2 : t1 * y1\n"
                                  "2 y2 -> y2 + y3 : t2 * y2^2\n"
                                  "y2 + y3 -> y1 + y3 : t3 * y2 * y3\n");
    double y[3] = {0.9, 3e-5, 0.1}, p[3], d[3];
    remat_mechanism_param_values(m, p);
    remat_mechanism_eval_rhs(m, 0, y, p, d);
    expect_close(d[0], -0.04 * y[0] + 1e4 * y[1] * y[2]);
    expect_close(d[1], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] * y[1]);
    expect_close(d[2], 3e7 * y[1] * y[1]);
    remat_mechanism_free(m);

    m = parse_ok("param t1 = 2\ny1 -> y2 : t1 * y1^2\n");
    expect_rhs_text(m, 0, "-(t1 * y1^2)");
    double yy[2] = {3, 0}, pp = 2, dd[2];
    remat_mechanism_eval_rhs(m, 0, yy, &pp, dd);
    expect_close(dd[0], -18);
    expect_close(dd[1], 18);
    remat_mechanism_free(m);
}

static void test_mechanism_ode_form(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("param t1 = 1\nparam t2 = 2\nparam t3 = 3\nparam t4 = 4\nparam t5 = 5\n"
                                  "let d = (t2 + t5) * y1 + y2\n"
                                  "y1' = -(t1 + t3) * y1^2\n"
                                  "y2' = t1 * y1^2 - d * y2\n");
    assert_int_equal(remat_mechanism_species_count(m), 2);
    assert_int_equal(remat_mechanism_reaction_count(m), 0);
    expect_rhs_text(m, 0, "-(t1 + t3) * y1^2");
    expect_rhs_text(m, 1, "t1 * y1^2 - d * y2");
    double y[2] = {0.5, 0.25}, p[5] = {1, 2, 3, 4, 5}, dy[2];
    remat_mechanism_eval_rhs(m, 0, y, p, dy);
    expect_close(dy[0], -(1 + 3) * 0.25);
    double dd = (2 + 5) * 0.5 + 0.25;
    expect_close(dy[1], 1 * 0.25 - dd * 0.25);
    remat_mechanism_free(m);
}

/* Reactions and ODEs for different species in one file; a param used
 * before its declaration. */
static void test_mechanism_mixed_reactions_and_odes(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("const Tw = 350\nconst dH = 10\n"
                                  "A -> B : k\n"
                                  "T' = q * (Tw - T) + dH * k * A\n"
                                  "param k = 0.5\nparam q = 2\n");
    assert_int_equal(remat_mechanism_species_count(m), 3); /* A, B, T */
    assert_string_equal(remat_mechanism_species_name(m, 2), "T");
    double y[3] = {0.8, 0.1, 300}, p[2] = {0.5, 2}, d[3];
    remat_mechanism_eval_rhs(m, 0, y, p, d);
    expect_close(d[0], -0.5 * 0.8);
    expect_close(d[2], 2 * (350 - 300) + 10 * 0.5 * 0.8);
    remat_mechanism_free(m);
}

static void test_mechanism_arrhenius(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("const R = 8.314  # J/(mol K)\n"
                                  "param A1 = 1e6\nparam E1 = 5e4 in [0, 2e5]\n"
                                  "param A2 = 2e5\nparam E2 = 6e4\n"
                                  "indep z\n"
                                  "let T = 600 + 50 * z        # temperature along the reactor\n"
                                  "let k1 = A1 * exp(-E1 / (R * T))\n"
                                  "A -> B : k1                 # mass action with an Arrhenius constant\n"
                                  "B -> C : A2 * exp(-E2 / (R * T)) * B   # explicit rate\n");
    assert_string_equal(remat_mechanism_indep_name(m), "z");
    double y[3] = {0.6, 0.3, 0.1}, p[4], d[3], z = 0.4;
    remat_mechanism_param_values(m, p);
    remat_mechanism_eval_rhs(m, z, y, p, d);
    double T = 600 + 50 * z;
    double k1 = 1e6 * exp(-5e4 / (8.314 * T)), r2 = 2e5 * exp(-6e4 / (8.314 * T)) * y[1];
    expect_close(d[0], -k1 * y[0]);
    expect_close(d[1], k1 * y[0] - r2);
    expect_close(d[2], r2);
    remat_mechanism_free(m);
}

static void test_mechanism_declared_species_order(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("species C, B A\nspecies Inert\nparam k = 1\nA -> B : k\nB -> C : k\n");
    assert_int_equal(remat_mechanism_species_count(m), 4);
    assert_string_equal(remat_mechanism_species_name(m, 0), "C");
    assert_string_equal(remat_mechanism_species_name(m, 2), "A");
    assert_string_equal(remat_mechanism_species_name(m, 3), "Inert");
    expect_rhs_text(m, 2, "-(k * A)");
    expect_rhs_text(m, 3, "0");
    remat_mechanism_free(m);
}

static void test_mechanism_params_and_consts(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("const R = 8.314\nconst twoR = 2 * R\n"
                                  "param a = twoR in [0, inf]\n"
                                  "param b = -1 in [-inf, 0]\n"
                                  "param c = 3 in [3, 3]\n"
                                  "A -> B : a * b * c * A\n");
    expect_close(remat_mechanism_param_value(m, 0), 16.628);
    assert_true(remat_mechanism_param_lo(m, 0) == 0 && isinf(remat_mechanism_param_hi(m, 0)));
    assert_true(isinf(remat_mechanism_param_lo(m, 1)) && remat_mechanism_param_hi(m, 1) == 0);
    assert_true(remat_mechanism_param_value(m, 1) == -1);
    assert_true(remat_mechanism_param_lo(m, 2) == 3 && remat_mechanism_param_hi(m, 2) == 3);
    remat_mechanism_free(m);
}

/* Numbers, precedence and associativity, checked through const values. */
static void test_mechanism_expression_syntax(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        double value;
    } cases[] = {
        {"1", 1},          {"1.5", 1.5},        {"1e-3", 1e-3},       {".5", 0.5},
        {"1.", 1},         {"2.5E+4", 2.5e4},   {"2^3^2", 512},       {"-2^2", -4},
        {"(-2)^2", 4},     {"2^-1", 0.5},       {"10 - 4 - 3", 3},    {"64 / 4 / 2", 8},
        {"1 + 2 * 3", 7},  {"(1 + 2) * 3", 9},  {"+3", 3},            {"--3", 3},
        {"-(1 + 2)", -3},  {"min(3, max(1, 2))", 2}, {"sqrt(16)", 4}, {"log(exp(2))", 2},
        {"2 * -3", -6},    {"0.1 + 0.2", 0.1 + 0.2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "const c = %s\nparam k = 1\nA -> B : k\n", cases[i].expr);
        remat_mechanism *m = parse_ok(text);
        if (remat_mechanism_const_value(m, 0) != cases[i].value)
            fail_msg("%s = %.17g, want %.17g", cases[i].expr, remat_mechanism_const_value(m, 0),
                     cases[i].value);
        remat_mechanism_free(m);
    }
}

/* Formatting a right-hand side and parsing it back as an ODE gives the same
 * function (and the same text). */
static void test_mechanism_format_roundtrip(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("param k1 = 1.5\nparam k2 = 0.25\nconst c = 3\n"
                                  "let g = (k1 - k2) / (1 + k1) ^ 2\n"
                                  "2 A + B <=> C : k1, k2\n"
                                  "C -> D : g * C / (1 + c * sqrt(C)) - -min(A, 2 ^ -B)\n"
                                  "D -> A + B : k2 * (A - (B - C)) ^ 2 ^ 0.5\n");
    int ns = remat_mechanism_species_count(m);
    char text[4096] = "param k1 = 1.5\nparam k2 = 0.25\nconst c = 3\nlet g = (k1 - k2) / (1 + k1) ^ 2\n";
    char rhs[4][512];
    for (int i = 0; i < ns; i++) {
        remat_expr_format(remat_mechanism_rhs(m, i), rhs[i], sizeof rhs[i]);
        size_t o = strlen(text);
        snprintf(text + o, sizeof text - o, "%s' = %s\n", remat_mechanism_species_name(m, i), rhs[i]);
    }
    remat_mechanism *back = parse_ok(text);
    assert_int_equal(remat_mechanism_species_count(back), ns);
    for (int i = 0; i < ns; i++) {
        char again[512];
        remat_expr_format(remat_mechanism_rhs(back, i), again, sizeof again);
        assert_string_equal(again, rhs[i]);
    }
    for (int trial = 0; trial < 20; trial++) {
        double y[4], p[2] = {1.5, 0.25}, d1[4], d2[4];
        for (int i = 0; i < 4; i++)
            y[i] = 0.1 + (next_rand() % 1000) / 500.0;
        remat_mechanism_eval_rhs(m, 0, y, p, d1);
        remat_mechanism_eval_rhs(back, 0, y, p, d2);
        for (int i = 0; i < 4; i++) /* (negative)^(2^0.5) is NaN on both sides */
            assert_true(d1[i] == d2[i] || (isnan(d1[i]) && isnan(d2[i])));
    }
    /* snprintf-like truncation */
    char small[5];
    int need = remat_expr_format(remat_mechanism_rhs(m, 0), small, sizeof small);
    assert_int_equal(need, (int)strlen(rhs[0]));
    assert_int_equal(strlen(small), 4);
    remat_mechanism_free(back);
    remat_mechanism_free(m);
}

static void test_mechanism_comments_blank_lines_crlf(void **state)
{
    (void)state;
    remat_mechanism *m = parse_ok("# comment: °C, → arrows in UTF-8 are fine here\r\n"
                                  "\r\n"
                                  "   \t\r\n"
                                  "param k = 1 # trailing comment\r\n"
                                  "A -> B : k\r\n"
                                  "# no newline at the end");
    assert_int_equal(remat_mechanism_species_count(m), 2);
    remat_mechanism_free(m);
    /* CR alone ends no line: such a file is named for what it is, not read
     * as one line failing at its second statement */
    expect_error("param k1 = 1\rparam k2 = 0.5\rA -> B : k1\r", "mech.txt:1:13: ", "lines end in CR only");
    m = parse_ok("param k = 1\nA -> B : k\r"); /* a CR at the very end is a lone line end */
    remat_mechanism_free(m);
}

static void test_mechanism_parse_file(void **state)
{
    (void)state;
    char path[256];
    write_temp(path, sizeof path, "remat_mech_", abc_text, strlen(abc_text));
    remat_mechanism *m = NULL;
    assert_int_equal(remat_mechanism_parse_file(path, &m), REMAT_OK);
    assert_string_equal(remat_mechanism_source(m), path);
    assert_int_equal(remat_mechanism_species_count(m), 3);
    remat_mechanism_free(m);
    unlink(path);

    const char bad[] = "param k = 1\nA -> B : k3\n";
    write_temp(path, sizeof path, "remat_mech_", bad, strlen(bad));
    assert_int_equal(remat_mechanism_parse_file(path, &m), REMAT_ERR_PARSE);
    char want[300];
    snprintf(want, sizeof want, "%s:2:10: unknown name 'k3'", path);
    assert_non_null(strstr(remat_last_error(), want));
    assert_null(m);
    unlink(path);

    m = (remat_mechanism *)&m;
    assert_int_equal(remat_mechanism_parse_file("/nonexistent/dir/mech.txt", &m), REMAT_ERR_IO);
    assert_non_null(strstr(remat_last_error(), "/nonexistent/dir/mech.txt"));
    assert_non_null(strstr(remat_last_error(), "No such file or directory"));
    assert_null(m);
}

static void test_mechanism_null_arguments(void **state)
{
    (void)state;
    remat_mechanism_free(NULL);
    remat_mechanism *m;
    assert_int_equal(remat_mechanism_parse_string(NULL, "x", &m), REMAT_ERR_NULL);
    assert_int_equal(remat_mechanism_parse_string("A -> B : 1", NULL, NULL), REMAT_ERR_NULL);
    m = parse_ok(abc_text);
    double y[3] = {1, 0, 0}, d[3];
    assert_int_equal(remat_mechanism_eval_rhs(m, 0, y, NULL, d), REMAT_ERR_NULL);
    assert_int_equal(remat_mechanism_eval_rhs(NULL, 0, y, NULL, d), REMAT_ERR_NULL);
    remat_mechanism_free(m);
    /* no params: NULL params is fine */
    m = parse_ok("A -> B : 2\n");
    assert_int_equal(remat_mechanism_eval_rhs(m, 0, y, NULL, d), REMAT_OK);
    expect_close(d[1], 2);
    remat_mechanism_free(m);
    assert_int_equal(remat_mechanism_parse_string("A -> B : 1", NULL, &m), REMAT_OK);
    assert_string_equal(remat_mechanism_source(m), "<string>");
    remat_mechanism_free(m);
}

/* More lets than the evaluator's stack buffer. */
static void test_mechanism_many_lets(void **state)
{
    (void)state;
    size_t cap = 100 * 32 + 64, o = 0;
    char *text = malloc(cap);
    o += (size_t)snprintf(text + o, cap - o, "param k = 1\nlet l0 = k\n");
    for (int i = 1; i < 100; i++)
        o += (size_t)snprintf(text + o, cap - o, "let l%d = l%d + 1\n", i, i - 1);
    snprintf(text + o, cap - o, "A -> B : l99\n");
    remat_mechanism *m = parse_ok(text);
    assert_int_equal(remat_mechanism_let_count(m), 100);
    double y[2] = {2, 0}, p = 1, d[2];
    remat_mechanism_eval_rhs(m, 0, y, &p, d);
    expect_close(d[1], 100 * 2);
    remat_mechanism_free(m);
    free(text);
}

/* The elementwise functions past exp/log/sqrt/min/max (remat/mechanism.h,
 * FUNC): each parses to its call node; pow(a, b) is the node a ^ b makes;
 * sigmoid is logistic; the new names are not reserved (a species 'abs'). */
static void test_mechanism_more_functions(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        remat_expr_fn fn;
    } calls[] = {{"tanh", REMAT_FN_TANH},   {"sin", REMAT_FN_SIN},       {"cos", REMAT_FN_COS},
                 {"log1p", REMAT_FN_LOG1P}, {"expm1", REMAT_FN_EXPM1},   {"logistic", REMAT_FN_LOGISTIC},
                 {"sigmoid", REMAT_FN_LOGISTIC}, {"erf", REMAT_FN_ERF},  {"abs", REMAT_FN_ABS},
                 {"log10", REMAT_FN_LOG10}};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "param k = 2\nA -> B : rate = k * %s(A)\n", calls[i].text);
        remat_mechanism *m = parse_ok(text);
        const remat_expr *call = remat_mechanism_reaction_rate(m, 0)->args[1];
        assert_int_equal(call->kind, REMAT_EXPR_CALL);
        assert_int_equal(call->fn, calls[i].fn);
        assert_int_equal(call->nargs, 1);
        assert_string_equal(call->name, remat_expr_fn_name(calls[i].fn));
        remat_mechanism_free(m);
    }
    assert_string_equal(remat_expr_fn_name(REMAT_FN_LOG10), "log10");
    assert_string_equal(remat_expr_fn_name(REMAT_FN_LOGISTIC), "logistic");
    remat_mechanism *m = parse_ok("param k = 2\nA -> B : rate = pow(A, k + 1)\n");
    const remat_expr *pw = remat_mechanism_reaction_rate(m, 0);
    assert_int_equal(pw->kind, REMAT_EXPR_POW);
    assert_int_equal(pw->args[0]->kind, REMAT_EXPR_SPECIES);
    assert_int_equal(pw->args[1]->kind, REMAT_EXPR_ADD);
    char buf[64];
    remat_expr_format(pw, buf, sizeof buf);
    assert_string_equal(buf, "A^(k + 1)");
    remat_mechanism_free(m);
    /* not reserved: 'abs' a species, then abs(...) a call */
    m = parse_ok("param k = 2\nabs -> B : rate = k * abs(abs - 1)\n");
    assert_string_equal(remat_mechanism_species_name(m, 0), "abs");
    double y[2] = {0.25, 0}, p[1] = {2}, dydt[2];
    assert_int_equal(remat_mechanism_eval_rhs(m, 0, y, p, dydt), REMAT_OK);
    assert_true(dydt[1] == 1.5);
    remat_mechanism_free(m);
}

static void test_mechanism_utf8_bom_is_skipped(void **state)
{
    (void)state;
    remat_mechanism *m = NULL;
    assert_ok(remat_mechanism_parse_string("\xEF\xBB\xBFspecies A B\nparam k = 2\nA -> B : k\n", "bom", &m));
    assert_int_equal(remat_mechanism_species_count(m), 2);
    assert_string_equal(remat_mechanism_species_name(m, 0), "A");
    remat_mechanism_free(m);
    char path[256];
    const char text[] = "\xEF\xBB\xBFspecies A B\nparam k = 1\nA -> B : k\n";
    write_temp(path, sizeof path, "bom", text, sizeof text - 1);
    assert_ok(remat_mechanism_parse_file(path, &m));
    assert_int_equal(remat_mechanism_species_count(m), 2);
    remat_mechanism_free(m);
    remove(path);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mechanism_utf8_bom_is_skipped),
        cmocka_unit_test(test_mechanism_abc_seed),
        cmocka_unit_test(test_mechanism_tree_structure),
        cmocka_unit_test(test_mechanism_stoichiometry),
        cmocka_unit_test(test_mechanism_reversible),
        cmocka_unit_test(test_mechanism_explicit_rate_robertson),
        cmocka_unit_test(test_mechanism_ode_form),
        cmocka_unit_test(test_mechanism_mixed_reactions_and_odes),
        cmocka_unit_test(test_mechanism_arrhenius),
        cmocka_unit_test(test_mechanism_declared_species_order),
        cmocka_unit_test(test_mechanism_params_and_consts),
        cmocka_unit_test(test_mechanism_expression_syntax),
        cmocka_unit_test(test_mechanism_format_roundtrip),
        cmocka_unit_test(test_mechanism_comments_blank_lines_crlf),
        cmocka_unit_test(test_mechanism_parse_file),
        cmocka_unit_test(test_mechanism_null_arguments),
        cmocka_unit_test(test_mechanism_many_lets),
        cmocka_unit_test(test_mechanism_more_functions),
        cmocka_unit_test(test_mechanism_conditions),
        cmocka_unit_test(test_mechanism_rate_readings),
        cmocka_unit_test(test_mechanism_arrhenius_builtins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
