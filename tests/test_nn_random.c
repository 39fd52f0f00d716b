/*
 * test_nn_random.c — remat/random.h against JAX 0.10.2 / Flax 0.12.8
 * (tests/goldens/nn_random.json, nn_flax.json from
 * tools/goldens/gen_nn_goldens.py; jax_threefry_partitionable=True).
 *
 * Keys, split, fold_in, bits and uniform are integer or exact f32
 * arithmetic: compared bit for bit. normal, truncated_normal and the
 * initialisers go through XLA's f32 erf/log1p/erf_inv, which random.c
 * writes out operation by operation: also compared bit for bit, with
 * ULP_TOL = 0 ulp allowed (a libm or compiler that rounded one step
 * differently would show here first; the bound a port may need is 1-2 ulp).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "remat/remat.h"
#include "test_golden.h"
#include "test_util.h"

#define ULP_TOL 0

static uint32_t ju32(const cJSON *o) { return (uint32_t)o->valuedouble; }

static remat_prng_key jkey(const cJSON *a)
{
    assert_int_equal(cJSON_GetArraySize(a), 2);
    return (remat_prng_key){{ju32(cJSON_GetArrayItem(a, 0)), ju32(cJSON_GetArrayItem(a, 1))}};
}

static void assert_key(remat_prng_key got, const cJSON *want, const char *what)
{
    remat_prng_key w = jkey(want);
    if (got.k[0] != w.k[0] || got.k[1] != w.k[1])
        fail_msg("%s: key {%u, %u}, JAX {%u, %u}", what, got.k[0], got.k[1], w.k[0], w.k[1]);
}

/* shape of a golden case into dims; returns the rank */
static int jshape(const cJSON *c, int64_t *dims) { return jints(jget(c, "shape"), dims, REMAT_MAX_RANK); }

static int64_t numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

/* a golden array's "bits" (f32) or "data" (uint32) as uint32 words */
static uint32_t *jwords(const cJSON *a, const char *key, int64_t n)
{
    const cJSON *d = jget(a, key);
    assert_int_equal(cJSON_GetArraySize(d), n);
    uint32_t *w = xcalloc((size_t)(n ? n : 1), sizeof *w);
    int64_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, d) w[i++] = ju32(e);
    return w;
}

/* distance in representable f32 values */
static int64_t ulp_diff(uint32_t a, uint32_t b)
{
    int64_t ia = (a & 0x80000000u) ? -(int64_t)(a & 0x7fffffffu) : (int64_t)a;
    int64_t ib = (b & 0x80000000u) ? -(int64_t)(b & 0x7fffffffu) : (int64_t)b;
    return ia > ib ? ia - ib : ib - ia;
}

static void assert_f32(const float *got, const cJSON *want, int64_t n, int64_t tol, const char *what)
{
    uint32_t *w = jwords(want, "bits", n);
    int64_t worst = 0, at = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t g;
        memcpy(&g, &got[i], sizeof g);
        int64_t d = ulp_diff(g, w[i]);
        if (d > worst)
            worst = d, at = i;
    }
    if (worst > tol) {
        float wf;
        memcpy(&wf, &w[at], sizeof wf);
        free(w);
        fail_msg("%s: element %lld is %.9g, JAX %.9g (%lld ulp > %lld)", what, (long long)at,
                 (double)got[at], (double)wf, (long long)worst, (long long)tol);
    }
    free(w);
}

static remat_prng_key case_key(const cJSON *c)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(c, "key");
    if (k && !cJSON_HasObjectItem(c, "seed"))
        return jkey(k);
    return remat_prng_key_from_seed((uint64_t)jget(c, "seed")->valuedouble);
}

static void test_nn_random_keys(void **state)
{
    (void)state;
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(golden("nn_random.json"), "keys"))
    {
        char what[64];
        snprintf(what, sizeof what, "PRNGKey(%.0f)", jget(c, "seed")->valuedouble);
        assert_key(case_key(c), jget(c, "key"), what);
    }
}

static void test_nn_random_fold_in(void **state)
{
    (void)state;
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(golden("nn_random.json"), "fold_in"))
    {
        uint32_t d = ju32(jget(c, "data"));
        assert_key(remat_prng_fold_in(case_key(c), d), jget(c, "key"), "fold_in");
    }
}

static void check_split(const cJSON *list, remat_threefry_mode mode)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, list)
    {
        int n = (int)jget(c, "n")->valuedouble;
        remat_prng_key out[3];
        assert_int_equal(remat_prng_split_mode(case_key(c), n, mode, out), REMAT_OK);
        for (int i = 0; i < n; i++)
            assert_key(out[i], cJSON_GetArrayItem(jget(c, "keys"), i), "split");
    }
}

static void test_nn_random_split(void **state)
{
    (void)state;
    const cJSON *d = golden("nn_random.json");
    check_split(jget(d, "split"), REMAT_THREEFRY_PARTITIONABLE);
    check_split(jget(jget(d, "original"), "split"), REMAT_THREEFRY_ORIGINAL);
    /* the default is JAX's default */
    remat_prng_key a[2], b[3];
    const cJSON *ch = jget(d, "chain");
    assert_int_equal(remat_prng_split(remat_prng_key_from_seed(42), 2, a), REMAT_OK);
    assert_int_equal(remat_prng_split(a[1], 3, b), REMAT_OK);
    for (int i = 0; i < 3; i++)
        assert_key(b[i], cJSON_GetArrayItem(jget(ch, "split_then_split_second"), i), "split of split");
    assert_key(remat_prng_fold_in(a[0], 9), jget(ch, "split_first_fold_in_9"), "fold_in of split");
}

static void check_bits(const cJSON *list, remat_threefry_mode mode)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, list)
    {
        int64_t dims[REMAT_MAX_RANK];
        int rank = jshape(c, dims);
        int64_t n = numel(rank, dims);
        uint32_t *got = xcalloc((size_t)(n ? n : 1), sizeof *got);
        assert_int_equal(remat_prng_bits32_mode(case_key(c), mode, rank, dims, got), REMAT_OK);
        uint32_t *want = jwords(jget(c, "bits"), "data", n);
        for (int64_t i = 0; i < n; i++)
            if (got[i] != want[i])
                fail_msg("bits (%s, rank %d): word %lld is %u, JAX %u",
                         mode == REMAT_THREEFRY_ORIGINAL ? "original" : "partitionable", rank,
                         (long long)i, got[i], want[i]);
        free(got);
        free(want);
    }
}

static void test_nn_random_bits(void **state)
{
    (void)state;
    const cJSON *d = golden("nn_random.json");
    check_bits(jget(d, "bits"), REMAT_THREEFRY_PARTITIONABLE);
    check_bits(jget(jget(d, "original"), "bits"), REMAT_THREEFRY_ORIGINAL);
}

/* Each case of list: draws with f, compared with tol ulp. */
typedef remat_status (*draw_fn)(const cJSON *c, remat_prng_key k, int rank, const int64_t *dims,
                                float *out);

static void check_draws(const char *list, draw_fn f, int64_t tol)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(golden("nn_random.json"), list))
    {
        int64_t dims[REMAT_MAX_RANK];
        int rank = jshape(c, dims);
        int64_t n = numel(rank, dims);
        float *got = xcalloc((size_t)n, sizeof *got);
        assert_int_equal(f(c, case_key(c), rank, dims, got), REMAT_OK);
        assert_f32(got, jget(c, "value"), n, tol, list);
        free(got);
    }
}

static remat_status draw_uniform(const cJSON *c, remat_prng_key k, int rank, const int64_t *dims, float *out)
{
    return remat_prng_uniform_f32(k, rank, dims, (float)jget(c, "lo")->valuedouble,
                                  (float)jget(c, "hi")->valuedouble, out);
}

static remat_status draw_normal(const cJSON *c, remat_prng_key k, int rank, const int64_t *dims, float *out)
{
    (void)c;
    return remat_prng_normal_f32(k, rank, dims, out);
}

static remat_status draw_truncated(const cJSON *c, remat_prng_key k, int rank, const int64_t *dims, float *out)
{
    return remat_prng_truncated_normal_f32(k, (float)jget(c, "lower")->valuedouble,
                                           (float)jget(c, "upper")->valuedouble, rank, dims, out);
}

static remat_status draw_lecun(const cJSON *c, remat_prng_key k, int rank, const int64_t *dims, float *out)
{
    (void)c;
    return remat_flax_lecun_normal_f32(k, rank, dims, out);
}

static remat_status draw_normal_init(const cJSON *c, remat_prng_key k, int rank, const int64_t *dims,
                                     float *out)
{
    return remat_flax_normal_f32(k, (float)jget(c, "stddev")->valuedouble, rank, dims, out);
}

static void test_nn_random_uniform(void **state)
{
    (void)state;
    check_draws("uniform", draw_uniform, 0); /* exact: bit shuffling, one mul, one add */
}

static void test_nn_random_normal(void **state)
{
    (void)state;
    check_draws("normal", draw_normal, ULP_TOL);
    check_draws("normal_init", draw_normal_init, ULP_TOL);
}

static void test_nn_random_truncated_normal(void **state)
{
    (void)state;
    check_draws("truncated_normal", draw_truncated, ULP_TOL);
}

static void test_nn_random_lecun_normal(void **state)
{
    (void)state;
    check_draws("lecun_normal", draw_lecun, ULP_TOL);
}

/* One parameter of a Flax model from its path "A/B/kernel": kernels
 * lecun_normal with make_rng counter 1 (the first self.param of Dense),
 * biases zeros, LayerNorm scale ones; the golden shape decides the dims. */
static void check_param(remat_prng_key root, const char *path, const cJSON *want)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const char *names[8];
    int n_names = 0;
    for (char *s = strtok(buf, "/"); s; s = strtok(NULL, "/"))
        names[n_names++] = s;
    const char *leaf = names[--n_names];
    int64_t dims[REMAT_MAX_RANK];
    int rank = jshape(want, dims);
    int64_t n = numel(rank, dims);
    float *got = xcalloc((size_t)n, sizeof *got);
    remat_prng_key k;
    int counter = !strcmp(leaf, "kernel") || !strcmp(leaf, "scale") ? 1 : 2;
    assert_int_equal(remat_flax_make_rng(root, n_names, names, counter, &k), REMAT_OK);
    remat_status st;
    if (!strcmp(leaf, "kernel"))
        st = remat_flax_lecun_normal_f32(k, rank, dims, got);
    else if (!strcmp(leaf, "scale"))
        st = remat_flax_ones_f32(k, rank, dims, got);
    else
        st = remat_flax_zeros_f32(k, rank, dims, got);
    assert_int_equal(st, REMAT_OK);
    assert_f32(got, want, n, ULP_TOL, path);
    free(got);
}

static void check_params(remat_prng_key root, const cJSON *params, int expect)
{
    int count = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, params)
    {
        check_param(root, p->string, p);
        count++;
    }
    assert_int_equal(count, expect);
}

static void test_nn_random_flax_mlp(void **state)
{
    (void)state;
    const cJSON *mlp = jget(golden("nn_flax.json"), "mlp");
    assert_true(cJSON_IsTrue(jget(mlp, "remat_params_equal_plain")));
    int with_params = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, jget(mlp, "cases"))
    {
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(c, "params");
        if (!params)
            continue;
        /* nn.remat at the root adds no name: Dense_0..Dense_2 as in MLP */
        check_params(case_key(c), params, 6);
        with_params++;
    }
    assert_true(with_params >= 2);
}

static void test_nn_random_flax_net(void **state)
{
    (void)state;
    const cJSON *d = golden("nn_flax.json");
    /* FFN_i/LayerNorm_0 draws scale (counter 1) then bias (2); nn.remat(FFN)
     * children are CheckpointFFN_i, so their values differ from FFN_i's */
    check_params(remat_prng_key_from_seed(3), jget(jget(d, "net"), "params"), 20);
    check_params(remat_prng_key_from_seed(3), jget(jget(d, "net_remat"), "params"), 20);
    assert_false(cJSON_IsTrue(jget(jget(d, "net_remat"), "same_values_as_net_after_renaming")));
}

static void test_nn_random_make_rng_rules(void **state)
{
    (void)state;
    /* the key of the second make_rng in Dense_1 differs from the first, and
     * the root's own counter is hashed alone */
    remat_prng_key root = remat_prng_key_from_seed(0), a, b, r;
    const char *p[] = {"Dense_1"};
    assert_int_equal(remat_flax_make_rng(root, 1, p, 1, &a), REMAT_OK);
    assert_int_equal(remat_flax_make_rng(root, 1, p, 2, &b), REMAT_OK);
    assert_true(a.k[0] != b.k[0] || a.k[1] != b.k[1]);
    assert_int_equal(remat_flax_make_rng(root, 0, NULL, 1, &r), REMAT_OK);
    assert_true(r.k[0] != root.k[0] || r.k[1] != root.k[1]);
}

static void test_nn_random_bad_inputs(void **state)
{
    (void)state;
    remat_prng_key k = remat_prng_key_from_seed(1), kk;
    int64_t good[2] = {3, 8}, neg[2] = {3, -1};
    float f[24];
    uint32_t u[24];
    assert_int_equal(remat_prng_bits32(k, 2, good, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_prng_bits32(k, 2, NULL, u), REMAT_ERR_NULL);
    assert_int_equal(remat_prng_bits32(k, 2, neg, u), REMAT_ERR_SHAPE);
    assert_non_null(strstr(remat_last_error(), "dims[1] = -1"));
    assert_int_equal(remat_prng_bits32(k, -1, good, u), REMAT_ERR_SHAPE);
    assert_int_equal(remat_prng_bits32(k, REMAT_MAX_RANK + 1, good, u), REMAT_ERR_SHAPE);
    assert_int_equal(remat_prng_bits32_mode(k, (remat_threefry_mode)7, 2, good, u), REMAT_ERR_ARG);
    assert_int_equal(remat_prng_split(k, 2, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_prng_split(k, -2, &kk), REMAT_ERR_VALUE);
    assert_int_equal(remat_prng_uniform_f32(k, 2, good, 0.0f, 1.0f, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_prng_uniform_f32(k, 2, good, 1.0f, 0.0f, f), REMAT_ERR_VALUE);
    assert_int_equal(remat_prng_normal_f32(k, 2, neg, f), REMAT_ERR_SHAPE);
    assert_int_equal(remat_prng_truncated_normal_f32(k, -2.0f, 2.0f, 2, good, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_prng_truncated_normal_f32(k, 2.0f, -2.0f, 2, good, f), REMAT_ERR_VALUE);
    assert_int_equal(remat_prng_truncated_normal_f32(k, -2.0f, 2.0f, 2, neg, f), REMAT_ERR_SHAPE);
    assert_int_equal(remat_flax_lecun_normal_f32(k, 1, good, f), REMAT_ERR_SHAPE);
    assert_int_equal(remat_flax_lecun_normal_f32(k, 2, (int64_t[]){0, 4}, f), REMAT_ERR_SHAPE);
    assert_int_equal(remat_flax_lecun_normal_f32(k, 2, good, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_flax_zeros_f32(k, 2, neg, f), REMAT_ERR_SHAPE);
    assert_int_equal(remat_flax_ones_f32(k, 2, good, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_flax_normal_f32(k, 0.02f, 2, good, NULL), REMAT_ERR_NULL);
    const char *p[] = {"Dense_0", NULL};
    assert_int_equal(remat_flax_make_rng(k, 1, p, 1, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_flax_make_rng(k, 1, NULL, 1, &kk), REMAT_ERR_NULL);
    assert_int_equal(remat_flax_make_rng(k, 2, p, 1, &kk), REMAT_ERR_NULL);
    assert_int_equal(remat_flax_make_rng(k, -1, p, 1, &kk), REMAT_ERR_VALUE);
    assert_int_equal(remat_flax_make_rng(k, 1, p, 0, &kk), REMAT_ERR_VALUE);
    /* rank 0 is one element, a zero dim none */
    assert_int_equal(remat_prng_bits32(k, 0, NULL, u), REMAT_OK);
    assert_int_equal(remat_prng_bits32(k, 1, (int64_t[]){0}, u), REMAT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_random_keys),
        cmocka_unit_test(test_nn_random_fold_in),
        cmocka_unit_test(test_nn_random_split),
        cmocka_unit_test(test_nn_random_bits),
        cmocka_unit_test(test_nn_random_uniform),
        cmocka_unit_test(test_nn_random_normal),
        cmocka_unit_test(test_nn_random_truncated_normal),
        cmocka_unit_test(test_nn_random_lecun_normal),
        cmocka_unit_test(test_nn_random_flax_mlp),
        cmocka_unit_test(test_nn_random_flax_net),
        cmocka_unit_test(test_nn_random_make_rng_rules),
        cmocka_unit_test(test_nn_random_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, golden_free_all);
}
