/*
 * test_models_netterm.c — networks in mechanisms (remat/mechanism.h,
 * "Networks"): the weights as parameters with Flax's names, the lowering
 * against the double evaluator, the PFR gradient through a network against
 * central differences under several schedules, the parse errors a user can
 * cause, and the gradient against JAX/diffrax (tests/goldens/netterm.json,
 * tools/goldens/gen_netterm_goldens.py).
 */
#include "test_models_util.h"
#include "test_golden.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* A + B -> C at k f(A, B)^2, f a 2-3-3-1 tanh network: 1 + 9 + 12 + 4 = 26 parameters */
static const char *const SMALL = "param k = 1.5\n"
                                 "net f = mlp(inputs: 2, width: 3, depth: 2, activation: tanh, seed: 7)\n"
                                 "A + B -> C : rate = k * f(A, B)^2\n";

static void test_netterm_weights_are_parameters(void **state)
{
    (void)state;
    remat_mechanism *m = parse(SMALL);
    assert_int_equal(remat_mechanism_param_count(m), 26);
    assert_int_equal(remat_mechanism_net_count(m), 1);
    assert_string_equal(remat_mechanism_net_name(m, 0), "f");
    assert_string_equal(remat_mechanism_param_name(m, 0), "k");
    assert_int_equal(remat_mechanism_param_net(m, 0), -1);
    for (int i = 1; i < 26; i++)
        assert_int_equal(remat_mechanism_param_net(m, i), 0);
    /* each Dense's kernel (in, out) row-major, then its bias, as Flax's tree flattens */
    const char *names[] = {"f.Dense_0.kernel[0][0]", "f.Dense_0.kernel[1][2]", "f.Dense_0.bias[2]",
                           "f.Dense_1.kernel[2][1]", "f.Dense_2.kernel[2][0]", "f.Dense_2.bias[0]"};
    const int where[] = {1, 6, 9, 17, 24, 25};
    for (int i = 0; i < 6; i++) {
        assert_string_equal(remat_mechanism_param_name(m, where[i]), names[i]);
        assert_int_equal(remat_mechanism_param_find(m, names[i]), where[i]);
    }
    /* lecun_normal kernels (nonzero, |w| < 2 / sqrt(fan_in) truncation), zero biases */
    for (int i = 1; i < 26; i++) {
        double v = remat_mechanism_param_value(m, i);
        int bias = strstr(remat_mechanism_param_name(m, i), ".bias[") != NULL;
        assert_true(bias ? v == 0 : v != 0 && fabs(v) < 2.0);
        assert_true(isinf(remat_mechanism_param_lo(m, i)) && isinf(remat_mechanism_param_hi(m, i)));
    }
    char text[128];
    remat_expr_format(remat_mechanism_reaction_rate(m, 0), text, sizeof text);
    assert_string_equal(text, "k * f(A, B)^2");
    /* another seed draws other weights */
    remat_mechanism *m2 = parse("net f = mlp(inputs: 2, width: 3, depth: 2, seed: 8)\nA + B -> C : rate = f(A, B)\n");
    assert_true(remat_mechanism_param_value(m2, 0) != remat_mechanism_param_value(m, 1));
    remat_mechanism_free(m2);
    remat_mechanism_free(m);
}

/* The lowered right-hand side equals the double evaluator at random points. */
static void check_lowering(const char *text)
{
    remat_mechanism *m = parse(text);
    int S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    if (!f)
        fail_msg("lowering failed: %s\n%s", remat_last_error(), text);
    remat_program *prog = compile_ok(f);
    double *p = xmalloc(sizeof *p * (size_t)P), y[8], got[8], want[8], t = 0.5;
    for (int trial = 0; trial < 5; trial++) {
        remat_mechanism_param_values(m, p);
        for (int i = 0; i < P; i++)
            p[i] += trial ? urand(-0.5, 0.5) : 0;
        for (int i = 0; i < S; i++)
            y[i] = urand(0.05, 2);
        run(prog, (double *[]){&t, y, p}, (double *[]){got}, NULL);
        assert_ok(remat_mechanism_eval_rhs(m, t, y, p, want));
        for (int i = 0; i < S; i++)
            assert_close(got[i], want[i], 1e-13, 1e-14);
    }
    free(p);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

static void test_netterm_lowering_matches_evaluator(void **state)
{
    (void)state;
    check_lowering(SMALL);
    /* several outputs, a constant and a parameter as inputs, every activation, a network in a let */
    check_lowering("param a = 0.3\n"
                   "net g = mlp(inputs: 3, width: 5, depth: 1, outputs: 2, activation: gelu)\n"
                   "net h = mlp(inputs: 1, width: 4, depth: 3, activation: relu, seed: 3)\n"
                   "net s = mlp(inputs: 2, width: 2, depth: 1, activation: silu, seed: 4)\n"
                   "net e = mlp(inputs: 1, width: 2, depth: 1, activation: gelu_erf, seed: 5)\n"
                   "net i = mlp(inputs: 1, width: 2, depth: 1, activation: identity, seed: 6)\n"
                   "let r = exp(g[1](A, 2, a))\n"
                   "A -> B : rate = r * A + g[0](A, B, t)^2\n"
                   "B -> C : rate = h(B)^2 + s(A, C)^2 + e(C)^2 + i(A)^2\n");
}

/* A parameter set per batch entry (remat_kinetics_rhs's (B, P), as pfr
 * ensemble passes them): each row equals the evaluator at that row's set. */
static void test_netterm_batched_params(void **state)
{
    (void)state;
    remat_mechanism *m = parse("param k = 0.7\n"
                               "net g = mlp(inputs: 2, width: 5, depth: 2, outputs: 2, activation: silu, seed: 2)\n"
                               "A + B -> C : rate = k * A * B * exp(g[1](A, B))\nC -> A : rate = g[0](C, 1)^2\n");
    enum { B = 3 };
    int S = remat_mechanism_species_count(m), P = remat_mechanism_input_count(m);
    remat_fn *f = remat_fn_new("batched");
    remat_val t = remat_arg(f, "t", REMAT_F64, 0, NULL);
    remat_val y = remat_arg(f, "y", REMAT_F64, 2, (int64_t[]){B, S});
    remat_val pv = remat_arg(f, "params", REMAT_F64, 2, (int64_t[]){B, P});
    remat_val d;
    assert_ok(remat_kinetics_rhs(f, m, t, y, pv, &d));
    remat_fn_output(f, d);
    remat_program *prog = compile_ok(f);
    double *p = xmalloc(sizeof *p * (size_t)(B * P)), ys[B * 3], got[B * 3], want[3], tt = 0;
    for (int b = 0; b < B; b++) {
        remat_mechanism_param_values(m, p + b * P);
        for (int i = 0; i < P; i++)
            p[b * P + i] += b ? urand(-0.3, 0.3) : 0;
        for (int i = 0; i < S; i++)
            ys[b * S + i] = urand(0.1, 2);
    }
    run(prog, (double *[]){&tt, ys, p}, (double *[]){got}, NULL);
    for (int b = 0; b < B; b++) {
        assert_ok(remat_mechanism_eval_rhs(m, tt, ys + b * S, p + b * P, want));
        for (int i = 0; i < S; i++)
            assert_close(got[b * S + i], want[i], 1e-13, 1e-14);
    }
    free(p);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_mechanism_free(m);
}

/* The objective's gradient with respect to the rate constant and every
 * weight against central differences, under several schedules. */
static void test_netterm_gradient_matches_differences(void **state)
{
    (void)state;
    remat_mechanism *m = parse(SMALL);
    int P = remat_mechanism_param_count(m);
    double *p = xmalloc(sizeof *p * (size_t)P), *g = xmalloc(sizeof *g * (size_t)P),
           *g0 = xmalloc(sizeof *g0 * (size_t)P);
    remat_mechanism_param_values(m, p);
    const char *schedules[] = {"store-all", "binomial:3", "per-step", "online:2"};
    for (int s = 0; s < 4; s++) {
        remat_pfr_options o = {.method = s % 2 ? REMAT_ODE_TSIT5 : REMAT_ODE_RK4, .length = 2.0, .steps = 40,
                               .inlet = (double[]){1.0, 0.5, 0.0}, .goal = REMAT_PFR_MAXIMIZE, .species = 2,
                               .schedule = spec_of(schedules[s])};
        remat_pfr *r;
        assert_ok(remat_pfr_new(m, &o, &r));
        double loss;
        assert_ok(remat_pfr_objective(r, p, &loss, g));
        assert_true(loss < -1e-3); /* C is made */
        for (int i = 0; i < P; i++) {
            double x = p[i], h = 1e-6, lp, lm;
            p[i] = x + h;
            assert_ok(remat_pfr_objective(r, p, &lp, NULL));
            p[i] = x - h;
            assert_ok(remat_pfr_objective(r, p, &lm, NULL));
            p[i] = x;
            double fd = (lp - lm) / (2 * h);
            if (!(fabs(g[i] - fd) <= 1e-6 * fabs(fd) + 1e-9))
                fail_msg("%s: d/d %s = %.17g, central difference %.17g", schedules[s],
                         remat_mechanism_param_name(m, i), g[i], fd);
        }
        if (s == 2) /* rk4 again: a schedule changes memory, not the gradient */
            for (int i = 0; i < P; i++)
                assert_close(g[i], g0[i], 1e-12, 1e-15);
        if (s == 0)
            memcpy(g0, g, sizeof *g * (size_t)P);
        remat_pfr_free(r);
    }
    free(p);
    free(g);
    free(g0);
    remat_mechanism_free(m);
}

static void expect_error(const char *text, const char *where, const char *what)
{
    remat_mechanism *m = (remat_mechanism *)&m;
    remat_status st = remat_mechanism_parse_string(text, "mech.txt", &m);
    const char *msg = remat_last_error();
    if (st != REMAT_ERR_PARSE || strncmp(msg, where, strlen(where)) != 0 || !strstr(msg, what))
        fail_msg("got %s \"%s\"\n  want parse error \"%s...%s...\"\n--- text ---\n%s", remat_status_name(st), msg,
                 where, what, text);
    assert_null(m);
}

static void test_netterm_parse_errors(void **state)
{
    (void)state;
    const char *rx = "\nA + B -> C : rate = f(A, B)\n";
    char t[512];
#define NET(decl) (snprintf(t, sizeof t, "%s%s", (decl), rx), t)
    expect_error(NET("net f = mlp(width: 4, depth: 1)"), "mech.txt:1:9: ", "network 'f' needs 'inputs: N'");
    expect_error(NET("net f = mlp(inputs: 0, width: 4, depth: 1)"), "mech.txt:1:21: ",
                 "'inputs' of network 'f' must be an integer from 1 to 64, got '0'");
    expect_error(NET("net f = mlp(inputs: 2, width: 0, depth: 1)"), "mech.txt:1:31: ",
                 "'width' of network 'f' must be an integer from 1 to 4096, got '0'");
    expect_error(NET("net f = mlp(inputs: 2, width: 4, depth: 0)"), "mech.txt:1:41: ",
                 "'depth' of network 'f' must be an integer from 1 to 64, got '0'");
    expect_error(NET("net f = mlp(inputs: 2.5, width: 4, depth: 1)"), "mech.txt:1:21: ", "must be an integer");
    expect_error(NET("net f = mlp(inputs: 2, width: 4, depth: 1, activation: sigmoid)"), "mech.txt:1:56: ",
                 "unknown activation 'sigmoid' of network 'f' (expected relu, gelu, gelu_erf, tanh, silu, identity)");
    expect_error(NET("net f = mlp(inputs: 2, width: 4, depth: 1, size: 3)"), "mech.txt:1:44: ",
                 "unknown option 'size' of mlp");
    expect_error(NET("net f = mlp(inputs: 2, width: 4, inputs: 3, depth: 1)"), "mech.txt:1:34: ",
                 "option 'inputs' given twice");
    expect_error(NET("net f = dense(inputs: 2)"), "mech.txt:1:9: ", "expected 'mlp(...)' after 'net f ='");
    expect_error(NET("net f = mlp(inputs: 2 width: 4, depth: 1)"), "mech.txt:1:23: ",
                 "expected ',' or ')' in the options of mlp");
    expect_error(NET("net f = mlp(inputs: 2, width: 4, depth: 1) x"), "mech.txt:1:44: ",
                 "unexpected 'x' after the network");
    /* calls */
    expect_error("net f = mlp(inputs: 2, width: 4, depth: 1)\nA -> B : rate = f(A)\n", "mech.txt:2:17: ",
                 "wrong number of arguments: network 'f' takes 2 inputs (line 1), got 1");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1)\nA -> B : rate = f(A, B, A)\n", "mech.txt:2:17: ",
                 "network 'f' takes 1 input (line 1), got 3");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1)\nA -> B : rate = f * A\n", "mech.txt:2:17: ",
                 "'f' is a network (line 1): call it as f(...)");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1, outputs: 2)\nA -> B : rate = f(A)\n", "mech.txt:2:17: ",
                 "network 'f' has 2 outputs: call one of them as f[i](...)");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1, outputs: 2)\nA -> B : rate = f[2](A)\n",
                 "mech.txt:2:19: ", "expected an index from 0 to 1 in f[...], got '2'");
    expect_error("A -> B : rate = f(A)\nnet f = mlp(inputs: 1, width: 4, depth: 1)\n", "mech.txt:1:17: ",
                 "unknown function 'f'");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1)\nparam k = f(1)\nA -> B : k\n", "mech.txt:2:11: ",
                 "network 'f' is called in a value or bound");
    /* name clashes */
    expect_error("param f = 1\nnet f = mlp(inputs: 1, width: 4, depth: 1)\nA -> B : f\n", "mech.txt:2:5: ",
                 "'f' is a parameter (line 1) and cannot also be a network");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1)\nparam f = 1\nA -> B : f\n", "mech.txt:2:7: ",
                 "'f' is a network (line 1) and cannot also be a parameter");
    expect_error("A -> f : k\nnet f = mlp(inputs: 1, width: 4, depth: 1)\nparam k = 1\n", "mech.txt:2:5: ",
                 "'f' is a species (line 1) and cannot also be a network");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1)\nA -> f : rate = f(A)\n", "mech.txt:2:6: ",
                 "'f' is a network (line 1) and cannot be used as a species");
    expect_error("net f = mlp(inputs: 1, width: 4, depth: 1)\nnet f = mlp(inputs: 1, width: 4, depth: 1)\n"
                 "A -> B : rate = f(A)\n",
                 "mech.txt:2:5: ", "network 'f' declared twice (first at line 1)");
    expect_error("net exp = mlp(inputs: 1, width: 4, depth: 1)\nA -> B : rate = A\n", "mech.txt:1:5: ",
                 "'exp' is a reserved word");
#undef NET
    /* a species named net is still a species */
    remat_mechanism *m = parse("param k = 1\nnet -> B : k\n");
    assert_int_equal(remat_mechanism_species_find(m, "net"), 0);
    remat_mechanism_free(m);
}

/* The gradient of the same PFR objective in JAX/diffrax (Flax's MLP with
 * the same seed, Tsit5 with constant steps): the initial weights to the
 * bit, the outlet and the gradient to rounding. */
static void test_netterm_matches_diffrax(void **state)
{
    (void)state;
    const cJSON *c = golden_case("netterm.json", "pfr_tsit5");
    remat_mechanism *m = parse(jget(c, "mechanism")->valuestring);
    int P = remat_mechanism_param_count(m);
    const cJSON *names = jget(c, "param_names"), *init = jget(c, "params"), *grad = jget(c, "gradient");
    assert_int_equal(cJSON_GetArraySize(names), P);
    double *p = xmalloc(sizeof *p * (size_t)P), *g = xmalloc(sizeof *g * (size_t)P);
    remat_mechanism_param_values(m, p);
    for (int i = 0; i < P; i++) {
        assert_string_equal(cJSON_GetArrayItem(names, i)->valuestring, remat_mechanism_param_name(m, i));
        double want = cJSON_GetArrayItem(init, i)->valuedouble;
        if (p[i] != want)
            fail_msg("initial %s = %.17g, Flax %.17g", remat_mechanism_param_name(m, i), p[i], want);
    }
    int S = remat_mechanism_species_count(m);
    double inlet[8], out[8];
    for (int i = 0; i < S; i++)
        inlet[i] = cJSON_GetArrayItem(jget(c, "inlet"), i)->valuedouble;
    remat_pfr_options o = {.method = REMAT_ODE_TSIT5, .length = jget(c, "length")->valuedouble,
                           .steps = (int64_t)jget(c, "steps")->valuedouble, .inlet = inlet,
                           .goal = REMAT_PFR_MINIMIZE, .species = remat_mechanism_species_find(m, "C"),
                           .schedule = spec_of("binomial:4")};
    remat_pfr *r;
    assert_ok(remat_pfr_new(m, &o, &r));
    double loss;
    assert_ok(remat_pfr_outlet(r, p, out));
    for (int i = 0; i < S; i++)
        assert_close(out[i], cJSON_GetArrayItem(jget(c, "outlet"), i)->valuedouble, 1e-13, 1e-15);
    assert_ok(remat_pfr_objective(r, p, &loss, g));
    assert_close(loss, jget(c, "objective")->valuedouble, 1e-13, 1e-15);
    for (int i = 0; i < P; i++) {
        double want = cJSON_GetArrayItem(grad, i)->valuedouble;
        if (!(fabs(g[i] - want) <= 1e-11 * fabs(want) + 1e-14))
            fail_msg("d/d %s = %.17g, diffrax %.17g", remat_mechanism_param_name(m, i), g[i], want);
    }
    remat_pfr_free(r);
    free(p);
    free(g);
    remat_mechanism_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_netterm_weights_are_parameters),
        cmocka_unit_test(test_netterm_lowering_matches_evaluator),
        cmocka_unit_test(test_netterm_batched_params),
        cmocka_unit_test(test_netterm_gradient_matches_differences),
        cmocka_unit_test(test_netterm_parse_errors),
        cmocka_unit_test(test_netterm_matches_diffrax),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
