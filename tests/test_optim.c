/*
 * test_optim.c — the optimisers of remat/optim.h against optax: SGD (plain,
 * momentum, Nesterov) and Adam, three steps each in f64 and in f32, compared
 * to rounding with the iterates optax 0.2.8 / jax 0.10.2 printed (f64 with
 * jax_enable_x64, f32 without; the script is in the comment below), plus
 * the options each rejects and the untouched state after a bad gradient.
 *
 *   G  = [[0.5, -1.0, 3.0], [0.25, 2.0, -0.125], [-1.0, 0.5, 0.75]]
 *   p  = jnp.array([1.0, -2.0, 0.5], dtype); s = opt.init(p)
 *   for g in G: u, s = opt.update(jnp.array(g, dtype), s, p); p = optax.apply_updates(p, u)
 *
 * By hand, optax.sgd(0.1, momentum=0.9): trace 1 = g1, p1 = p0 - 0.1 g1 =
 * (0.95, -1.9, 0.2); trace 2 = g2 + 0.9 trace 1 = (0.7, 1.1, 2.575),
 * p2 = (0.88, -2.01, -0.0575); trace 3 = (-0.37, 1.49, 3.0675),
 * p3 = (0.917, -2.159, -0.36425). With nesterov the step is
 * g + 0.9 trace: p1 = 1 - 0.1 * 0.95 = 0.905, ...
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "remat/optim.h"

static const double G[3][3] = {{0.5, -1.0, 3.0}, {0.25, 2.0, -0.125}, {-1.0, 0.5, 0.75}};
static const double P0[3] = {1.0, -2.0, 0.5};

/* optax iterates after steps 1, 2, 3 (repr of the f64 / of the f32 as a double) */
static const double SGD_PLAIN_F64[3][3] = {{0.95, -1.9, 0.19999999999999996},
                                           {0.9249999999999999, -2.1, 0.21249999999999997},
                                           {1.025, -2.15, 0.13749999999999996}};
static const double SGD_MOM_F64[3][3] = {{0.95, -1.9, 0.19999999999999996},
                                         {0.88, -2.01, -0.05750000000000005},
                                         {0.917, -2.159, -0.36425000000000013}};
static const double SGD_NEST_F64[3][3] = {{0.905, -1.81, -0.07000000000000006},
                                          {0.8170000000000001, -2.109, -0.2892500000000001},
                                          {0.9503, -2.2931, -0.6403250000000001}};
static const double ADAM_F64[3][3] = {{0.900000002, -1.900000001, 0.4000000003333333},
                                      {0.8067820404774624, -1.9366103534720749, 0.3361517519909168},
                                      {0.8274177428854115, -1.9781754731467738, 0.27277542189190507}};
static const double SGD_PLAIN_F32[3][3] = {{0.949999988079071, -1.899999976158142, 0.19999998807907104},
                                           {0.925000011920929, -2.0999999046325684, 0.21249999105930328},
                                           {1.024999976158142, -2.1499998569488525, 0.13749998807907104}};
static const double SGD_MOM_F32[3][3] = {{0.949999988079071, -1.899999976158142, 0.19999998807907104},
                                         {0.8799999952316284, -2.009999990463257, -0.05750000476837158},
                                         {0.9169999957084656, -2.1589999198913574, -0.3642500042915344}};
static const double SGD_NEST_F32[3][3] = {{0.9049999713897705, -1.809999942779541, -0.06999999284744263},
                                          {0.8169999718666077, -2.1089999675750732, -0.289249986410141},
                                          {0.9502999782562256, -2.293099880218506, -0.6403249502182007}};
static const double ADAM_F32[3][3] = {{0.9000006914138794, -1.9000006914138794, 0.400000661611557},
                                      {0.8067836761474609, -1.9366106986999512, 0.3361530601978302},
                                      {0.8274192810058594, -1.9781756401062012, 0.2727769613265991}};

typedef enum { OPT_SGD, OPT_ADAM } opt_kind;

static void run_case(opt_kind k, const remat_sgd_options *so, int f32, const double want[3][3])
{
    remat_sgd *sgd = NULL;
    remat_adam *adam = NULL;
    if (k == OPT_SGD) {
        assert_ok(remat_sgd_new(3, so, &sgd));
    } else {
        remat_adam_options ao = remat_adam_optax(0.1);
        assert_ok(remat_adam_new(3, &ao, &adam));
    }
    double p[3];
    float pf[3];
    for (int i = 0; i < 3; i++) {
        p[i] = P0[i];
        pf[i] = (float)P0[i]; /* exact */
    }
    for (int step = 0; step < 3; step++) {
        float gf[3] = {(float)G[step][0], (float)G[step][1], (float)G[step][2]};
        if (f32)
            assert_ok(k == OPT_SGD ? remat_sgd_update_f32(sgd, pf, gf) : remat_adam_update_f32(adam, pf, gf));
        else
            assert_ok(k == OPT_SGD ? remat_sgd_update(sgd, p, G[step]) : remat_adam_update(adam, p, G[step]));
        /* To rounding, not to the bit: optax's iterates are another library's
         * (docs/design-notes.md, "Bitwise contracts"), and Adam's bias
         * correction 1 - b^t goes through the libm pow (adam.c): one ulp of
         * pow(0.999, t) moves 1 - 0.999^t by ~1e-13 relative and p (of order
         * 1) by ~3e-15; in f32 a few ulps of p. */
        double got[3];
        for (int i = 0; i < 3; i++)
            got[i] = f32 ? (double)pf[i] : p[i];
        char what[64];
        snprintf(what, sizeof what, "%s %s step %d against optax", k == OPT_SGD ? "sgd" : "adam", f32 ? "f32" : "f64",
                 step + 1);
        check_close(what, 3, got, want[step], f32 ? 1e-6 : 1e-14, f32 ? 1e-6 : 1e-14);
    }
    assert_int_equal(k == OPT_SGD ? remat_sgd_count(sgd) : remat_adam_count(adam), 3);
    remat_sgd_free(sgd);
    remat_adam_free(adam);
}

static void test_optim_sgd_plain_matches_optax(void **state)
{
    (void)state;
    remat_sgd_options o = remat_sgd_optax(0.1);
    run_case(OPT_SGD, &o, 0, SGD_PLAIN_F64);
    run_case(OPT_SGD, &o, 1, SGD_PLAIN_F32);
    o.nesterov = 1; /* no momentum: nesterov changes nothing (optax: momentum=None) */
    run_case(OPT_SGD, &o, 0, SGD_PLAIN_F64);
}

static void test_optim_sgd_momentum_matches_optax(void **state)
{
    (void)state;
    remat_sgd_options o = {.lr = 0.1, .momentum = 0.9};
    run_case(OPT_SGD, &o, 0, SGD_MOM_F64);
    run_case(OPT_SGD, &o, 1, SGD_MOM_F32);
}

static void test_optim_sgd_nesterov_matches_optax(void **state)
{
    (void)state;
    remat_sgd_options o = {.lr = 0.1, .momentum = 0.9, .nesterov = 1};
    run_case(OPT_SGD, &o, 0, SGD_NEST_F64);
    run_case(OPT_SGD, &o, 1, SGD_NEST_F32);
}

static void test_optim_adam_matches_optax(void **state)
{
    (void)state;
    run_case(OPT_ADAM, NULL, 0, ADAM_F64);
    run_case(OPT_ADAM, NULL, 1, ADAM_F32);
}

static void test_optim_sgd_trace_and_reset(void **state)
{
    (void)state;
    remat_sgd *s;
    assert_ok(remat_sgd_new(3, &(remat_sgd_options){.lr = 0.1, .momentum = 0.9}, &s));
    double p[3] = {1, -2, 0.5};
    assert_ok(remat_sgd_update(s, p, G[0]));
    assert_ok(remat_sgd_update(s, p, G[1]));
    const double *tr = remat_sgd_trace(s);
    assert_true(tr[0] == 0.25 + 0.9 * 0.5 && tr[1] == 2.0 + 0.9 * -1.0 && tr[2] == -0.125 + 0.9 * 3.0);
    remat_sgd_reset(s);
    assert_int_equal(remat_sgd_count(s), 0);
    assert_true(tr[0] == 0 && tr[1] == 0 && tr[2] == 0);
    remat_sgd_free(s);
    remat_sgd_free(NULL);
}

static void test_optim_sgd_bad_options(void **state)
{
    (void)state;
    static const struct {
        remat_sgd_options o;
        int64_t n;
        const char *what;
    } bad[] = {
        {{.lr = 0}, 3, "learning rate 0"},
        {{.lr = -0.1}, 3, "learning rate -0.1"},
        {{.lr = NAN}, 3, "learning rate nan"},
        {{.lr = INFINITY}, 3, "learning rate inf"},
        {{.lr = 0.1, .momentum = 1.0}, 3, "momentum 1"},
        {{.lr = 0.1, .momentum = -0.5}, 3, "momentum -0.5"},
        {{.lr = 0.1, .momentum = NAN}, 3, "momentum nan"},
        {{.lr = 0.1}, -1, "parameter count -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remat_sgd *s = (remat_sgd *)&s;
        assert_int_equal(remat_sgd_new(bad[i].n, &bad[i].o, &s), REMAT_ERR_VALUE);
        assert_null(s);
        assert_contains(remat_last_error(), bad[i].what);
    }
    remat_sgd *s = (remat_sgd *)&s;
    assert_int_equal(remat_sgd_new(3, NULL, &s), REMAT_ERR_NULL);
    assert_null(s);
    assert_int_equal(remat_sgd_new(3, &(remat_sgd_options){.lr = 1}, NULL), REMAT_ERR_NULL);
}

/* a non-finite gradient: REMAT_ERR_NUMERIC naming it, params and state kept */
static void test_optim_nonfinite_gradient_leaves_state(void **state)
{
    (void)state;
    remat_sgd *s;
    assert_ok(remat_sgd_new(3, &(remat_sgd_options){.lr = 0.1, .momentum = 0.9}, &s));
    double p[3] = {1, -2, 0.5};
    assert_ok(remat_sgd_update(s, p, G[0]));
    double p1[3] = {p[0], p[1], p[2]}, tr1[3];
    memcpy(tr1, remat_sgd_trace(s), sizeof tr1);
    assert_int_equal(remat_sgd_update(s, p, (double[]){0, NAN, 0}), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "gradient 1");
    assert_memory_equal(p, p1, sizeof p);
    assert_memory_equal(remat_sgd_trace(s), tr1, sizeof tr1);
    float pf[3] = {1, 2, 3};
    assert_int_equal(remat_sgd_update_f32(s, pf, (float[]){0, 0, INFINITY}), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "gradient 2");
    assert_true(pf[0] == 1 && pf[1] == 2 && pf[2] == 3);
    assert_int_equal(remat_sgd_count(s), 1);
    remat_sgd_free(s);

    remat_adam *a;
    remat_adam_options ao = remat_adam_optax(0.1);
    assert_ok(remat_adam_new(3, &ao, &a));
    assert_int_equal(remat_adam_update_f32(a, pf, (float[]){NAN, 0, 0}), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "gradient 0");
    assert_true(pf[0] == 1 && remat_adam_count(a) == 0 && remat_adam_mu(a)[0] == 0);
    remat_adam_free(a);
}

/* set_lr (optax.inject_hyperparams): the next step uses the new rate, the
 * moments and the count go on as they were; a bad rate is refused by name */
static void test_optim_adam_set_lr_scales_next_step(void **state)
{
    (void)state;
    remat_adam_options ao = remat_adam_optax(0.1);
    remat_adam *a, *b;
    assert_ok(remat_adam_new(3, &ao, &a));
    assert_ok(remat_adam_new(3, &ao, &b));
    double pa[3] = {1, -2, 0.5}, pb[3] = {1, -2, 0.5};
    assert_ok(remat_adam_update(a, pa, G[0]));
    assert_ok(remat_adam_update(b, pb, G[0]));
    assert_ok(remat_adam_set_lr(b, 0.4));
    double a0[3], b0[3];
    memcpy(a0, pa, sizeof a0);
    memcpy(b0, pb, sizeof b0);
    assert_ok(remat_adam_update(a, pa, G[1]));
    assert_ok(remat_adam_update(b, pb, G[1]));
    for (int i = 0; i < 3; i++) {
        double da = pa[i] - a0[i], db = pb[i] - b0[i];
        assert_true(da != 0);
        assert_true(fabs(db - 4 * da) <= 1e-12 * fabs(db));
    }
    assert_memory_equal(remat_adam_mu(a), remat_adam_mu(b), 3 * sizeof(double)); /* contract 1 */
    assert_memory_equal(remat_adam_nu(a), remat_adam_nu(b), 3 * sizeof(double)); /* contract 1 */
    assert_int_equal(remat_adam_count(b), 2);
    assert_int_equal(remat_adam_set_lr(b, 0), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "learning rate 0");
    assert_int_equal(remat_adam_set_lr(b, NAN), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "learning rate nan");
    assert_int_equal(remat_adam_set_lr(NULL, 0.1), REMAT_ERR_NULL);
    remat_adam_free(a);
    remat_adam_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optim_sgd_plain_matches_optax),
        cmocka_unit_test(test_optim_sgd_momentum_matches_optax),
        cmocka_unit_test(test_optim_sgd_nesterov_matches_optax),
        cmocka_unit_test(test_optim_adam_matches_optax),
        cmocka_unit_test(test_optim_sgd_trace_and_reset),
        cmocka_unit_test(test_optim_sgd_bad_options),
        cmocka_unit_test(test_optim_nonfinite_gradient_leaves_state),
        cmocka_unit_test(test_optim_adam_set_lr_scales_next_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
