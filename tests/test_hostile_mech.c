/*
 * test_hostile_mech.c — mechanisms built to break the kinetics layer: a
 * species in 60,000 reactions (a dy/dt chain 60,000 deep), a let chain
 * 50,000 deep, 40,000 reactions over 40,000 species (quadratic time and
 * memory when every reaction kept a coefficient per species); and rates that
 * cannot be computed at the initial state. The big files are generated here,
 * not committed.
 */
#include "test_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remat/remat.h"

typedef struct {
    char *s;
    size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        assert_true(k >= 0);
        if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        t->cap = t->cap ? 2 * t->cap : 1 << 16;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
}

#define expect_exact(got, want)                                                                             \
    do {                                                                                                      \
        double g_ = (got), w_ = (want);                                                                       \
        if (!(g_ == w_))                                                                                      \
            fail_msg("%s = %.17g, want %.17g", #got, g_, w_);                                                 \
    } while (0)

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static remat_mechanism *parse_text(const text *t, const char *name)
{
    remat_mechanism *m = NULL;
    if (remat_mechanism_parse_string(t->s, name, &m) != REMAT_OK)
        fail_msg("%s: %s", name, remat_last_error());
    return m;
}

/* The graph lowering of the rates is built (no stack overflow), and the
 * reference evaluator's dy/dt at y, params is returned in dydt. */
static void lower_and_eval(const remat_mechanism *m, const double *y, const double *params, double *dydt)
{
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    if (!f)
        fail_msg("lowering: %s", remat_last_error());
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    remat_fn_free(f);
    assert_ok(remat_mechanism_eval_rhs(m, 0.0, y, params, dydt));
}

/* A -> B0 : k, ..., A -> B59999 : k: dA/dt is a chain of 60,000 terms. */
static void test_hostile_mech_species_in_60000_reactions(void **state)
{
    (void)state;
    enum { R = 60000 };
    text t = {0};
    add(&t, "param k = 0.5\n");
    for (int i = 0; i < R; i++)
        add(&t, "A -> B%d : k\n", i);
    remat_mechanism *m = parse_text(&t, "star.mech");
    int S = remat_mechanism_species_count(m);
    assert_int_equal(S, R + 1);
    double *y = malloc(sizeof *y * (size_t)S), *dydt = malloc(sizeof *dydt * (size_t)S), k = 0.5;
    for (int i = 0; i < S; i++)
        y[i] = 2.0;
    lower_and_eval(m, y, &k, dydt);
    int a = remat_mechanism_species_find(m, "A"), b = remat_mechanism_species_find(m, "B59999");
    expect_exact(dydt[a], -(double)R); /* -k A summed 60,000 times: exact */
    expect_exact(dydt[b], 1.0);
    assert_int_equal(remat_kinetics_uses_indep(m), 0);
    free(y);
    free(dydt);
    remat_mechanism_free(m);
    free(t.s);
}

/* let a0 = t * k, let a_i = a_{i-1} + 1: the rate reads a let 50,000 deep
 * (and through it the independent variable). */
static void test_hostile_mech_let_chain_50000_deep(void **state)
{
    (void)state;
    enum { N = 50000 };
    text t = {0};
    add(&t, "param k = 3\nlet a0 = t * k\n");
    for (int i = 1; i < N; i++)
        add(&t, "let a%d = a%d + 1\n", i, i - 1);
    add(&t, "A -> B : a%d\n", N - 1);
    remat_mechanism *m = parse_text(&t, "lets.mech");
    assert_int_equal(remat_mechanism_let_count(m), N);
    double y[2] = {1.0, 0.0}, k = 3.0, dydt[2];
    lower_and_eval(m, y, &k, dydt);
    /* at t = 0: a_{N-1} = N - 1 */
    expect_exact(dydt[remat_mechanism_species_find(m, "A")], -(double)(N - 1));
    assert_int_equal(remat_kinetics_uses_indep(m), 1);
    remat_mechanism_free(m);
    free(t.s);
}

/* S0 -> S1 -> ... -> S40000: parsing and lowering are linear. Each reaction
 * once kept a coefficient for every species (12.8 GB here) and each species
 * scanned every reaction; 10,000 reactions took 7.7 s that way. The bound is
 * ~20x today's time on a loaded machine under a sanitizer. */
static void test_hostile_mech_40000_reactions_in_linear_time(void **state)
{
    (void)state;
    enum { R = 40000 };
    text t = {0};
    add(&t, "param k = 1\n");
    for (int i = 0; i < R; i++)
        add(&t, "S%d -> S%d : k\n", i, i + 1);
    double t0 = seconds();
    remat_mechanism *m = parse_text(&t, "chain.mech");
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    double dt = seconds() - t0;
    assert_non_null(f);
    print_message("parse + lower of %d reactions: %.3f s\n", R, dt);
    assert_true(dt < 10.0);
    expect_exact(remat_mechanism_reaction_stoich(m, 7, remat_mechanism_species_find(m, "S7")), -1.0);
    expect_exact(remat_mechanism_reaction_stoich(m, 7, remat_mechanism_species_find(m, "S8")), 1.0);
    expect_exact(remat_mechanism_reaction_stoich(m, 7, remat_mechanism_species_find(m, "S9")), 0.0);
    remat_fn_free(f);
    remat_mechanism_free(m);
    free(t.s);
}

/* Repeats and both sides net out, as in the dense table before. */
static void test_hostile_mech_stoich_repeats_net_out(void **state)
{
    (void)state;
    remat_mechanism *m = NULL;
    assert_ok(remat_mechanism_parse_string("param k = 2\nA + A + B -> A + 3 C + B : k\n", "rep.mech", &m));
    int A = remat_mechanism_species_find(m, "A"), B = remat_mechanism_species_find(m, "B"),
        C = remat_mechanism_species_find(m, "C");
    expect_exact(remat_mechanism_reaction_stoich(m, 0, A), -1.0);
    expect_exact(remat_mechanism_reaction_stoich(m, 0, B), 0.0);
    expect_exact(remat_mechanism_reaction_stoich(m, 0, C), 3.0);
    double y[3], k = 2.0, dydt[3];
    y[A] = 3.0, y[B] = 5.0, y[C] = 7.0;
    assert_ok(remat_mechanism_eval_rhs(m, 0.0, y, &k, dydt));
    double rate = 2.0 * 9.0 * 5.0; /* k A^2 B */
    expect_exact(dydt[A], -rate);
    expect_exact(dydt[B], 0.0);
    expect_exact(dydt[C], 3.0 * rate);
    remat_mechanism_free(m);
}

/* A rate that cannot be computed at the initial state is named by file:line:col
 * and expression, with what went wrong, not blamed on the step size. */
static void expect_rates_error(const char *mech, const double *y, const double *params, const char *where,
                               const char *what)
{
    remat_mechanism *m = NULL;
    assert_ok(remat_mechanism_parse_string(mech, "rates.mech", &m));
    assert_int_equal(remat_mechanism_check_rates(m, 0.0, y, params), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), where);
    assert_contains(remat_last_error(), what);
    remat_mechanism_free(m);
}

static void test_hostile_mech_non_finite_rates_are_named(void **state)
{
    (void)state;
    double y[3] = {1, 0, 0}, p[2] = {1, 2};
    expect_rates_error("param k = 1\nparam a = 2\nA -> B : k / (a - 2)\n", y, p, "rates.mech:3:12: ",
                       "the rate expression 'k / (a - 2)' is inf at t = 0: division by zero");
    expect_rates_error("param k = 1\nparam a = 2\nlet r = log(a - 2)\nA -> B : k * r\n", y, p, "rates.mech:3:9: ",
                       "'log(a - 2)' is -inf at t = 0: log of 0");
    expect_rates_error("param k = 1\nparam a = 2\nA -> B : sqrt(k - a) * A\n", y, p, "rates.mech:3:10: ",
                       "sqrt of a negative number (-1)");
    double big[2] = {1e308, 1};
    expect_rates_error("param k = 1\nparam a = 1\n2 A -> B : k\n", y, big, "rates.mech:3:1: ",
                       "'2 * (k * A^2)' is inf at t = 0: overflow");
    /* computable rates: OK, however fast */
    remat_mechanism *m = NULL;
    assert_ok(remat_mechanism_parse_string("param k = 1e300\nA -> B : k\n", "fast.mech", &m));
    double k = 1e300;
    assert_ok(remat_mechanism_check_rates(m, 0.0, y, &k));
    assert_int_equal(remat_mechanism_check_rates(NULL, 0.0, y, &k), REMAT_ERR_NULL);
    assert_int_equal(remat_mechanism_check_rates(m, 0.0, NULL, &k), REMAT_ERR_NULL);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_mech_species_in_60000_reactions),
        cmocka_unit_test(test_hostile_mech_let_chain_50000_deep),
        cmocka_unit_test(test_hostile_mech_40000_reactions_in_linear_time),
        cmocka_unit_test(test_hostile_mech_stoich_repeats_net_out),
        cmocka_unit_test(test_hostile_mech_non_finite_rates_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
