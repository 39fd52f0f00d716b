/*
 * test_nn_seed002.c — the shipped seed 002 program (examples/seeds/
 * nn_remat_policy) against Flax: for seeds 0, 1, 42, 2^31-1 and 7 (given as
 * "7.0"), D in {1, 3, 17}, F in {1, 8, 65}, its printed outputs equal
 * nn.remat(MLP)(F).apply(init(PRNGKey(seed), x), x) from
 * tests/goldens/nn_flax.json within the tolerance below; and
 * every bad argument is refused with a message naming it.
 *
 * Tolerance: the program and XLA run the same f32 operations, but XLA's
 * CPU dot may sum in another order (and with FMA) than OpenBLAS, whose
 * order depends on the kernel it picks for the CPU (Prescott, Haswell,
 * Sandybridge: docs/design-notes.md, "Bitwise contracts"). A dot of n
 * terms in any order is within n*u of the sum of its terms' magnitudes
 * (u = 2^-24); with n <= 65 that is 3.9e-6 of it, and the case's largest
 * output stands in for that sum (an output near 0 is a cancellation, whose
 * error is the scale's, not its own). So: within 4e-6 of the case's
 * largest |output|, or 1e-7 absolute.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_golden.h"
#include "test_util.h"

static const char *program(void)
{
    const char *p = getenv("NN_REMAT_POLICY");
    if (!p)
        fail_msg("NN_REMAT_POLICY (the nn_remat_policy program) is not set; tests/meson.build sets it");
    return p;
}

/* runs the program with args (a shell word list), stdout into out; returns the exit status */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char errfile[] = "/tmp/nn_seed002_errXXXXXX";
    int fd = mkstemp(errfile);
    assert_true(fd >= 0);
    close(fd);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", program(), args, errfile);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    FILE *e = fopen(errfile, "r");
    size_t m = e ? fread(err, 1, ecap - 1, e) : 0;
    err[m] = 0;
    if (e)
        fclose(e);
    remove(errfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_nn_seed002_grid_matches_flax(void **state)
{
    (void)state;
    const cJSON *cases = jget(jget(golden("nn_flax.json"), "mlp"), "cases");
    int n_cases = 0;
    const cJSON *c;
    static char out[1 << 16], err[4096];
    cJSON_ArrayForEach(c, cases)
    {
        int seed = (int)jget(c, "seed")->valuedouble; /* up to 2^31 - 1 */
        int64_t d = (int64_t)jget(c, "D")->valuedouble, f = (int64_t)jget(c, "F")->valuedouble;
        jarr x = jarr_get(jget(c, "x")), want = jarr_get(jget(c, "output"));
        assert_int_equal(x.n, d);
        assert_int_equal(want.n, f);
        char args[8192];
        size_t at = 0;
        /* seed 7 as "7.0" and F as a float, as a caller passing floats would */
        at += (size_t)snprintf(args + at, sizeof args - at, seed == 7 ? "%d.0 %lld.0" : "%d %lld", seed,
                               (long long)f);
        for (int64_t i = 0; i < d; i++)
            at += (size_t)snprintf(args + at, sizeof args - at, " %.9g", x.data[i]);
        int rc = run(args, out, sizeof out, err, sizeof err);
        if (rc != 0)
            fail_msg("nn_remat_policy %s exited %d: %s", args, rc, err);
        double scale = 0;
        for (int64_t i = 0; i < f; i++)
            scale = fmax(scale, fabs(want.data[i]));
        char *p = out;
        for (int64_t i = 0; i < f; i++) {
            char *end;
            double got = strtod(p, &end);
            if (end == p)
                fail_msg("nn_remat_policy %s: output %lld missing in:\n%s", args, (long long)i, out);
            p = end;
            double w = want.data[i];
            if (!(fabs(got - w) <= fmax(4e-6 * scale, 1e-7)))
                fail_msg("seed %d D %lld F %lld output %lld: %.9g, Flax %.9g (the case's largest |output| %.9g)",
                         seed, (long long)d, (long long)f, (long long)i, got, w, scale);
        }
        while (*p == '\n')
            p++;
        if (*p)
            fail_msg("nn_remat_policy %s: more than %lld outputs: %s", args, (long long)f, p);
        free(x.data);
        free(want.data);
        n_cases++;
    }
    assert_int_equal(n_cases, 45);
}

static void test_nn_seed002_bad_arguments(void **state)
{
    (void)state;
    static const struct {
        const char *args, *says;
    } bad[] = {
        {"", "needs a seed"},
        {"0 8", "needs a seed"},
        {"-1 8 0.5", "SEED must be a non-negative integer"},
        {"1.5 8 0.5", "SEED must be a non-negative integer"},
        {"abc 8 0.5", "'abc'"},
        {"0 0 0.5", "FEATURES must be a positive integer"},
        {"0 2.5 0.5", "'2.5'"},
        {"0 1e9 0.5", "FEATURES"},
        {"0 8 nan", "every X must be a finite float32"},
        {"0 8 0.5 inf", "'inf'"},
        {"0 8 1e39", "'1e39'"},
        {"0 8 0.5x", "'0.5x'"},
    };
    static char out[4096], err[4096];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = run(bad[i].args, out, sizeof out, err, sizeof err);
        if (rc != 2 || !strstr(err, bad[i].says) || out[0])
            fail_msg("nn_remat_policy %s: exit %d, stdout '%s', stderr '%s' (expected exit 2 saying \"%s\")",
                     bad[i].args, rc, out, err, bad[i].says);
    }
    /* "7.0" and "7" are the same seed */
    static char a[4096], b[4096];
    assert_int_equal(run("7.0 3 0.25 -1", a, sizeof a, err, sizeof err), 0);
    assert_int_equal(run("7 3.0 0.25 -1", b, sizeof b, err, sizeof err), 0);
    assert_string_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_seed002_grid_matches_flax),
        cmocka_unit_test(test_nn_seed002_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
