/*
 * test_ad.c — reverse mode, checkpoint regions and save policies.
 *
 * Every expectation comes from outside the code under test: the JAX 0.10.2
 * goldens in tests/goldens/ (read at run time through $REMAT_GOLDENS, see
 * tools/goldens/gen_goldens.py), central finite differences in f64, formulas
 * written here, or the un-checkpointed gradient (policies must not change a
 * single bit of it).
 */
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

/* ---- small helpers (the shared ones are in test_util.h) ---- */

static remat_shape shape_of(int rank, const int64_t *dims) { return remat_shape_make(rank, dims); }

/* ---- goldens ---- */

static cJSON *golden_docs[4];
static const char *const golden_names[4] = {"ops.json", "dot_general.json", "residuals.json", "gradients.json"};

static cJSON *golden(const char *file)
{
    int k = 0;
    while (k < 4 && strcmp(golden_names[k], file))
        k++;
    assert_true(k < 4);
    if (golden_docs[k])
        return golden_docs[k];
    const char *dir = getenv("REMAT_GOLDENS");
    if (!dir || !*dir)
        fail_msg("REMAT_GOLDENS is not set (tests/meson.build sets it to tests/goldens)");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open golden file %s", path);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *text = xcalloc(1, (size_t)len + 1);
    assert_int_equal(fread(text, 1, (size_t)len, fp), (size_t)len);
    fclose(fp);
    golden_docs[k] = cJSON_Parse(text);
    free(text);
    if (!golden_docs[k])
        fail_msg("cannot parse %s", path);
    return golden_docs[k];
}

static const cJSON *golden_case(const char *file, const char *name)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(golden(file), "cases"))
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name))
            return c;
    }
    fail_msg("golden case '%s' not found in %s", name, file);
    return NULL;
}

static const cJSON *jget(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("golden: key '%s' missing", key);
    return v;
}

static int jints(const cJSON *a, int64_t *out, int max)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        assert_true(n < max);
        out[n++] = (int64_t)e->valuedouble;
    }
    return n;
}

static int jints32(const cJSON *a, int *out, int max)
{
    int64_t t[REMAT_MAX_RANK * 2];
    int n = jints(a, t, max);
    for (int i = 0; i < n; i++)
        out[i] = (int)t[i];
    return n;
}

/* a golden array {"shape", "dtype", "data"}: data as doubles (bools as 1/0) */
typedef struct {
    remat_shape shape;
    int64_t n;
    double *data;
} jarr;

static jarr jarr_get(const cJSON *o)
{
    jarr a;
    int64_t dims[REMAT_MAX_RANK];
    int r = jints(jget(o, "shape"), dims, REMAT_MAX_RANK);
    a.shape = shape_of(r, dims);
    a.n = remat_shape_numel(&a.shape);
    a.data = xcalloc((size_t)a.n, sizeof(double));
    int64_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, jget(o, "data"))
    {
        assert_true(i < a.n);
        a.data[i++] = cJSON_IsBool(e) ? (cJSON_IsTrue(e) ? 1.0 : 0.0) : e->valuedouble;
    }
    assert_int_equal(i, a.n);
    return a;
}

static remat_tensor jarr_tensor(jarr *a) { return remat_tensor_f64(a->data, a->shape.rank, a->shape.dims); }

/* ==== 1a. value and VJP of every primitive against JAX ==== */

typedef remat_val (*golden_builder)(remat_fn *f, const remat_val *x, const cJSON *params);

static remat_val g_add(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_add(f, x[0], x[1]); }
static remat_val g_sub(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_sub(f, x[0], x[1]); }
static remat_val g_mul(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_mul(f, x[0], x[1]); }
static remat_val g_div(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_div(f, x[0], x[1]); }
static remat_val g_max(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_max(f, x[0], x[1]); }
static remat_val g_min(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_min(f, x[0], x[1]); }
static remat_val g_neg(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_neg(f, x[0]); }
static remat_val g_exp(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_exp(f, x[0]); }
static remat_val g_log(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_log(f, x[0]); }
static remat_val g_sin(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_sin(f, x[0]); }
static remat_val g_cos(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_cos(f, x[0]); }
static remat_val g_tanh(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_tanh(f, x[0]); }
static remat_val g_relu(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_relu(f, x[0]); }
static remat_val g_square(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_square(f, x[0]); }
static remat_val g_sqrt(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_sqrt(f, x[0]); }
static remat_val g_ipow(remat_fn *f, const remat_val *x, const cJSON *p)
{
    return remat_integer_pow(f, x[0], (int)jget(p, "y")->valuedouble);
}
/* lax.pow(x, y) with y = 2.5 everywhere: remat's pow has a constant exponent */
static remat_val g_pow(remat_fn *f, const remat_val *x, const cJSON *p) { return remat_pow(f, x[0], 2.5); }
static remat_val g_select(remat_fn *f, const remat_val *x, const cJSON *p)
{
    return remat_select(f, x[0], x[1], x[2]);
}
static remat_val g_sum(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int axes[REMAT_MAX_RANK];
    int n = jints32(jget(p, "axes"), axes, REMAT_MAX_RANK);
    return remat_sum(f, x[0], n, axes);
}
static remat_val g_bcast(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t dims[REMAT_MAX_RANK];
    int bd[REMAT_MAX_RANK];
    int r = jints(jget(p, "shape"), dims, REMAT_MAX_RANK);
    jints32(jget(p, "broadcast_dimensions"), bd, REMAT_MAX_RANK);
    return remat_broadcast_in_dim(f, x[0], r, dims, bd);
}
static remat_val g_transpose(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int perm[REMAT_MAX_RANK];
    jints32(jget(p, "permutation"), perm, REMAT_MAX_RANK);
    return remat_transpose(f, x[0], perm);
}
static remat_val g_slice(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t s[REMAT_MAX_RANK], l[REMAT_MAX_RANK], st[REMAT_MAX_RANK];
    jints(jget(p, "start_indices"), s, REMAT_MAX_RANK);
    jints(jget(p, "limit_indices"), l, REMAT_MAX_RANK);
    jints(jget(p, "strides"), st, REMAT_MAX_RANK);
    return remat_slice(f, x[0], s, l, st);
}
static remat_val g_pad(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t lo[REMAT_MAX_RANK], hi[REMAT_MAX_RANK], in[REMAT_MAX_RANK];
    int r = 0;
    const cJSON *e;
    assert_true(jget(p, "padding_value")->valuedouble == 0.0);
    cJSON_ArrayForEach(e, jget(p, "padding_config"))
    {
        int64_t t[3];
        assert_int_equal(jints(e, t, 3), 3);
        lo[r] = t[0], hi[r] = t[1], in[r] = t[2];
        r++;
    }
    return remat_pad(f, x[0], lo, hi, in);
}
static remat_val g_concat(remat_fn *f, const remat_val *x, const cJSON *p)
{
    return remat_concatenate(f, 2, x, (int)jget(p, "dimension")->valuedouble);
}
static remat_val g_reshape(remat_fn *f, const remat_val *x, const cJSON *p)
{
    int64_t dims[REMAT_MAX_RANK];
    int r = jints(jget(p, "new_sizes"), dims, REMAT_MAX_RANK);
    return remat_reshape(f, x[0], r, dims);
}

static const struct {
    const char *name;
    golden_builder build;
    int n_args; /* leading golden inputs that become arguments */
} golden_ops[] = {
    {"add", g_add, 2},
    {"sub", g_sub, 2},
    {"mul", g_mul, 2},
    {"div", g_div, 2},
    {"max_ties", g_max, 2},
    {"min_ties", g_min, 2},
    {"neg", g_neg, 1},
    {"exp", g_exp, 1},
    {"log", g_log, 1},
    {"sin", g_sin, 1},
    {"cos", g_cos, 1},
    {"tanh", g_tanh, 1},
    {"relu_at_zero", g_relu, 1},
    {"square", g_square, 1},
    {"sqrt", g_sqrt, 1},
    {"integer_pow_3", g_ipow, 1},
    {"pow_2_5", g_pow, 1}, /* the exponent is a parameter in remat: no cotangent for y */
    {"select", g_select, 3},
    {"reduce_sum_axes_0_2", g_sum, 1},
    {"reduce_sum_all", g_sum, 1},
    {"broadcast_in_dim", g_bcast, 1},
    {"broadcast_in_dim_size1", g_bcast, 1},
    {"transpose", g_transpose, 1},
    {"slice_strided", g_slice, 1},
    {"pad_interior", g_pad, 1},
    {"concatenate", g_concat, 2},
    {"reshape", g_reshape, 1},
};

/* Builds f(args) = op(args), takes its VJP w.r.t. the inputs JAX differentiated,
 * runs it at the golden point with the golden cotangent and compares. */
static void check_golden_op(const char *name, golden_builder build, int n_args)
{
    const cJSON *c = golden_case("ops.json", name);
    const cJSON *params = jget(c, "params");
    jarr in[3];
    remat_val x[3];
    remat_fn *f = remat_fn_new(name);
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, jget(c, "inputs"))
    {
        if (k < n_args) {
            in[k] = jarr_get(e);
            x[k] = remat_arg(f, jget(e, "name")->valuestring, REMAT_F64, in[k].shape.rank, in[k].shape.dims);
        } else { /* pow's exponent array: must be the constant remat was given */
            jarr y = jarr_get(e);
            for (int64_t i = 0; i < y.n; i++)
                assert_true(y.data[i] == 2.5);
            free(y.data);
        }
        k++;
    }
    remat_val out = build(f, x, params);
    remat_fn_output(f, out);
    assert_fn_ok(f);

    /* argnums: the golden's differentiated inputs that are arguments here */
    int argnums[3], na = 0;
    const cJSON *vjps = jget(c, "vjp");
    jarr want_d[3];
    cJSON_ArrayForEach(e, vjps)
    {
        const char *wrt = jget(e, "wrt")->valuestring;
        int idx = -1;
        for (int i = 0; i < n_args; i++)
            if (!strcmp(remat_fn_arg_name(f, i), wrt))
                idx = i;
        if (idx < 0) {
            assert_string_equal(name, "pow_2_5"); /* only pow's y is not an argument */
            continue;
        }
        argnums[na] = idx;
        want_d[na++] = jarr_get(e);
    }
    assert_true(na > 0);
    remat_fn *g = NULL;
    if (remat_vjp(f, na, argnums, &g) != REMAT_OK)
        fail_msg("%s: vjp failed: %s", name, remat_last_error());
    jarr want_out = jarr_get(jget(c, "out")), ct = jarr_get(jget(c, "ct"));
    remat_tensor tin[4];
    for (int i = 0; i < n_args; i++)
        tin[i] = jarr_tensor(&in[i]);
    tin[n_args] = jarr_tensor(&ct);
    outs_t o;
    run_fn(g, n_args + 1, tin, &o, NULL, NULL);
    assert_int_equal(o.n, 1 + na);
    char what[128];
    assert_true(remat_shape_equal(&o.t[0].shape, &want_out.shape));
    snprintf(what, sizeof what, "%s value", name);
    check_close(what, want_out.n, o.t[0].data, want_out.data, 1e-13, 1e-300);
    for (int i = 0; i < na; i++) {
        assert_true(remat_shape_equal(&o.t[1 + i].shape, &want_d[i].shape));
        snprintf(what, sizeof what, "%s vjp wrt %s", name, remat_fn_arg_name(f, argnums[i]));
        check_close(what, want_d[i].n, o.t[1 + i].data, want_d[i].data, 1e-13, 1e-300);
        free(want_d[i].data);
    }
    outs_free(&o);
    for (int i = 0; i < n_args; i++)
        free(in[i].data);
    free(want_out.data);
    free(ct.data);
    remat_fn_free(g);
    remat_fn_free(f);
}

static void test_ad_ops_value_and_vjp_match_jax(void **state)
{
    for (size_t i = 0; i < sizeof golden_ops / sizeof golden_ops[0]; i++)
        check_golden_op(golden_ops[i].name, golden_ops[i].build, golden_ops[i].n_args);
}

/* max/min split a tie 0.5/0.5 and relu'(0) = 0, as JAX: checked element by
 * element here, independently of the golden's arrays. */
static void test_ad_ties_and_relu_at_zero_follow_jax(void **state)
{
    double a[6] = {1.0, 2.0, 3.0, -1.0, 0.0, -2.5}, b[6] = {3.0, 2.0, 1.0, -1.0, 0.0, 1.5};
    double r[6] = {-1.5, -0.0, 0.0, 0.25, 2.0, -3.0};
    int64_t d6[1] = {6};
    for (int op = 0; op < 3; op++) {
        remat_fn *f = remat_fn_new("ties");
        remat_val x = remat_arg(f, "x", REMAT_F64, 1, d6), y = remat_arg(f, "y", REMAT_F64, 1, d6);
        remat_val v = op == 0 ? remat_max(f, x, y) : op == 1 ? remat_min(f, x, y) : remat_relu(f, x);
        remat_fn_output(f, remat_sum_all(f, v));
        remat_fn *g = grad_ok(f, 0, NULL);
        remat_tensor in[2] = {remat_tensor_f64(op == 2 ? r : a, 1, d6), remat_tensor_f64(b, 1, d6)};
        outs_t o;
        run_fn(g, 2, in, &o, NULL, NULL);
        const double *dx = o.t[0].data, *dy = o.t[1].data;
        for (int i = 0; i < 6; i++) {
            double wx, wy;
            if (op == 2) {
                wx = r[i] > 0 ? 1.0 : 0.0, wy = 0.0;
            } else {
                int x_wins = op == 0 ? a[i] > b[i] : a[i] < b[i];
                wx = a[i] == b[i] ? 0.5 : x_wins ? 1.0 : 0.0;
                wy = a[i] == b[i] ? 0.5 : x_wins ? 0.0 : 1.0;
            }
            if (dx[i] != wx || dy[i] != wy)
                fail_msg("op %d element %d: d = (%g, %g), want (%g, %g)", op, i, dx[i], dy[i], wx, wy);
        }
        outs_free(&o);
        remat_fn_free(g);
        remat_fn_free(f);
    }
}

/* pad with negative low/high (the golden's pad_negative_low) is documented as
 * unsupported: a clear build error, not a wrong answer. */
static void test_ad_pad_negative_is_rejected(void **state)
{
    remat_fn *f = remat_fn_new("padneg");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, ((int64_t[]){2, 3}));
    int line;
    remat_val v = remat_pad(f, x, ((int64_t[]){-1, 1}), ((int64_t[]){1, -1}), ((int64_t[]){0, 1})); line = __LINE__;
    assert_int_equal(v, REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_ARG);
    char loc[64];
    snprintf(loc, sizeof loc, "test_ad.c:%d", line);
    assert_contains(remat_fn_error(f), "pad");
    assert_contains(remat_fn_error(f), loc);
    remat_fn_free(f);
}

static void test_ad_dot_general_matches_jax(void **state)
{
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, jget(golden("dot_general.json"), "cases"))
    {
        const char *name = jget(c, "name")->valuestring;
        const cJSON *dn = jget(c, "dimension_numbers");
        remat_dot_dims d = {0};
        d.n_contract = jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 0), d.lhs_contract, REMAT_MAX_RANK);
        assert_int_equal(jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 1), d.rhs_contract, REMAT_MAX_RANK),
                         d.n_contract);
        d.n_batch = jints32(cJSON_GetArrayItem(jget(dn, "batch"), 0), d.lhs_batch, REMAT_MAX_RANK);
        assert_int_equal(jints32(cJSON_GetArrayItem(jget(dn, "batch"), 1), d.rhs_batch, REMAT_MAX_RANK), d.n_batch);
        jarr l = jarr_get(jget(c, "lhs")), r = jarr_get(jget(c, "rhs")), ct = jarr_get(jget(c, "ct"));
        jarr out = jarr_get(jget(c, "out")), dl = jarr_get(jget(c, "d_lhs")), dr = jarr_get(jget(c, "d_rhs"));
        remat_fn *f = remat_fn_new(name);
        remat_val a = remat_arg(f, "lhs", REMAT_F64, l.shape.rank, l.shape.dims);
        remat_val b = remat_arg(f, "rhs", REMAT_F64, r.shape.rank, r.shape.dims);
        remat_fn_output(f, remat_dot_general(f, a, b, &d));
        assert_fn_ok(f);
        remat_fn *g = NULL;
        if (remat_vjp(f, 0, NULL, &g) != REMAT_OK)
            fail_msg("%s: vjp failed: %s", name, remat_last_error());
        remat_tensor in[3] = {jarr_tensor(&l), jarr_tensor(&r), jarr_tensor(&ct)};
        outs_t o;
        run_fn(g, 3, in, &o, NULL, NULL);
        char what[128];
        assert_true(remat_shape_equal(&o.t[0].shape, &out.shape));
        assert_true(remat_shape_equal(&o.t[1].shape, &l.shape));
        assert_true(remat_shape_equal(&o.t[2].shape, &r.shape));
        /* sums of a few products: a few ulps of the largest term */
        snprintf(what, sizeof what, "dot_general %s out", name);
        check_close(what, out.n, o.t[0].data, out.data, 1e-13, 1e-14);
        snprintf(what, sizeof what, "dot_general %s d_lhs", name);
        check_close(what, dl.n, o.t[1].data, dl.data, 1e-13, 1e-14);
        snprintf(what, sizeof what, "dot_general %s d_rhs", name);
        check_close(what, dr.n, o.t[2].data, dr.data, 1e-13, 1e-14);
        outs_free(&o);
        remat_fn_free(g);
        remat_fn_free(f);
        free(l.data), free(r.data), free(ct.data), free(out.data), free(dl.data), free(dr.data);
        n++;
    }
    assert_int_equal(n, 12);
}

/* ==== 1b. central finite differences of sum(w * op(x)) in f64 ==== */

typedef remat_val (*fd_builder)(remat_fn *f, const remat_val *x);

typedef struct {
    const char *name;
    int n_in;
    int rank[3];
    int64_t dims[3][4];
    double lo, hi;   /* inputs uniform in [lo, hi] ... */
    double avoid;    /* ... with |x| >= avoid */
    int no_ties;     /* second input kept away from the first */
    fd_builder build;
} fd_case;

static remat_val fd_add(remat_fn *f, const remat_val *x) { return remat_add(f, x[0], x[1]); }
static remat_val fd_add_bcast(remat_fn *f, const remat_val *x) { return remat_add(f, x[0], x[1]); }
static remat_val fd_sub(remat_fn *f, const remat_val *x) { return remat_sub(f, x[0], x[1]); }
static remat_val fd_mul(remat_fn *f, const remat_val *x) { return remat_mul(f, x[0], x[1]); }
static remat_val fd_div(remat_fn *f, const remat_val *x) { return remat_div(f, x[0], x[1]); }
static remat_val fd_max(remat_fn *f, const remat_val *x) { return remat_max(f, x[0], x[1]); }
static remat_val fd_min(remat_fn *f, const remat_val *x) { return remat_min(f, x[0], x[1]); }
static remat_val fd_neg(remat_fn *f, const remat_val *x) { return remat_neg(f, x[0]); }
static remat_val fd_exp(remat_fn *f, const remat_val *x) { return remat_exp(f, x[0]); }
static remat_val fd_log(remat_fn *f, const remat_val *x) { return remat_log(f, x[0]); }
static remat_val fd_sin(remat_fn *f, const remat_val *x) { return remat_sin(f, x[0]); }
static remat_val fd_cos(remat_fn *f, const remat_val *x) { return remat_cos(f, x[0]); }
static remat_val fd_tanh(remat_fn *f, const remat_val *x) { return remat_tanh(f, x[0]); }
static remat_val fd_relu(remat_fn *f, const remat_val *x) { return remat_relu(f, x[0]); }
static remat_val fd_square(remat_fn *f, const remat_val *x) { return remat_square(f, x[0]); }
static remat_val fd_sqrt(remat_fn *f, const remat_val *x) { return remat_sqrt(f, x[0]); }
static remat_val fd_ipow3(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 3); }
static remat_val fd_ipow2(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 2); }
static remat_val fd_ipow1(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 1); }
static remat_val fd_ipow0(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], 0); }
static remat_val fd_ipowm2(remat_fn *f, const remat_val *x) { return remat_integer_pow(f, x[0], -2); }
static remat_val fd_pow25(remat_fn *f, const remat_val *x) { return remat_pow(f, x[0], 2.5); }
static remat_val fd_powm05(remat_fn *f, const remat_val *x) { return remat_pow(f, x[0], -0.5); }
static remat_val fd_select(remat_fn *f, const remat_val *x)
{
    static const double pred[6] = {1, 0, 0, 1, 1, 0};
    remat_val p = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){2, 3}), pred);
    return remat_select(f, p, x[0], x[1]);
}
static remat_val fd_sum02(remat_fn *f, const remat_val *x) { return remat_sum(f, x[0], 2, ((int[]){0, 2})); }
static remat_val fd_sum_all(remat_fn *f, const remat_val *x) { return remat_sum_all(f, x[0]); }
static remat_val fd_bcast(remat_fn *f, const remat_val *x)
{
    return remat_broadcast_in_dim(f, x[0], 3, ((int64_t[]){2, 3, 4}), ((int[]){1}));
}
static remat_val fd_bcast1(remat_fn *f, const remat_val *x)
{
    return remat_broadcast_in_dim(f, x[0], 3, ((int64_t[]){2, 3, 4}), ((int[]){1, 2}));
}
static remat_val fd_reshape(remat_fn *f, const remat_val *x) { return remat_reshape(f, x[0], 2, ((int64_t[]){6, 4})); }
static remat_val fd_transpose(remat_fn *f, const remat_val *x) { return remat_transpose(f, x[0], ((int[]){2, 0, 1})); }
static remat_val fd_slice(remat_fn *f, const remat_val *x)
{
    return remat_slice(f, x[0], ((int64_t[]){1, 0}), ((int64_t[]){4, 6}), ((int64_t[]){2, 3}));
}
static remat_val fd_slice2(remat_fn *f, const remat_val *x) /* limit not on the stride grid */
{
    return remat_slice(f, x[0], ((int64_t[]){0, 1}), ((int64_t[]){3, 6}), ((int64_t[]){2, 2}));
}
static remat_val fd_pad(remat_fn *f, const remat_val *x)
{
    return remat_pad(f, x[0], ((int64_t[]){1, 0}), ((int64_t[]){0, 2}), ((int64_t[]){1, 1}));
}
static remat_val fd_concat(remat_fn *f, const remat_val *x) { return remat_concatenate(f, 3, x, 1); }
static remat_val fd_name(remat_fn *f, const remat_val *x) { return remat_name(f, remat_sin(f, x[0]), "tagged"); }
static remat_val fd_index(remat_fn *f, const remat_val *x) { return remat_index(f, x[0], 2); }

static const fd_case fd_cases[] = {
    {"add", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, fd_add},
    {"add_broadcast", 2, {1, 2}, {{3}, {2, 3}}, -2, 2, 0, 0, fd_add_bcast},
    {"sub", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, fd_sub},
    {"mul", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, fd_mul},
    {"div", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0.5, 0, fd_div},
    {"max", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 1, fd_max},
    {"min", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 1, fd_min},
    {"neg", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_neg},
    {"exp", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_exp},
    {"log", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, fd_log},
    {"sin", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_sin},
    {"cos", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_cos},
    {"tanh", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_tanh},
    {"relu", 1, {2}, {{2, 3}}, -2, 2, 0.05, 0, fd_relu},
    {"square", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_square},
    {"sqrt", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, fd_sqrt},
    {"integer_pow_3", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_ipow3},
    {"integer_pow_2", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_ipow2},
    {"integer_pow_1", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_ipow1},
    {"integer_pow_0", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_ipow0},
    {"integer_pow_-2", 1, {2}, {{2, 3}}, -2, 2, 0.5, 0, fd_ipowm2},
    {"pow_2.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, fd_pow25},
    {"pow_-0.5", 1, {2}, {{2, 3}}, 0.2, 3, 0, 0, fd_powm05},
    {"select", 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, 0, 0, fd_select},
    {"reduce_sum_axes_0_2", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, fd_sum02},
    {"reduce_sum_all", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, fd_sum_all},
    {"broadcast_in_dim", 1, {1}, {{3}}, -2, 2, 0, 0, fd_bcast},
    {"broadcast_in_dim_size1", 1, {2}, {{3, 1}}, -2, 2, 0, 0, fd_bcast1},
    {"reshape", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, fd_reshape},
    {"transpose", 1, {3}, {{2, 3, 4}}, -2, 2, 0, 0, fd_transpose},
    {"slice_strided", 1, {2}, {{4, 6}}, -2, 2, 0, 0, fd_slice},
    {"slice_strided_ragged", 1, {2}, {{4, 6}}, -2, 2, 0, 0, fd_slice2},
    {"index", 1, {2}, {{4, 3}}, -2, 2, 0, 0, fd_index},
    {"pad_interior", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_pad},
    {"concatenate", 3, {2, 2, 2}, {{2, 3}, {2, 2}, {2, 1}}, -2, 2, 0, 0, fd_concat},
    {"name", 1, {2}, {{2, 3}}, -2, 2, 0, 0, fd_name},
};

static void fill_inputs(double *x, int64_t n, double lo, double hi, double avoid)
{
    for (int64_t i = 0; i < n; i++) {
        x[i] = urand(lo, hi);
        if (fabs(x[i]) < avoid)
            x[i] = x[i] < 0 ? x[i] - avoid : x[i] + avoid;
    }
}

/* loss(x) = sum(w * op(x)) with w a fixed random constant; checks
 * remat_grad against (loss(x+h) - loss(x-h)) / 2h element by element. */
static void fd_check(const char *name, int n_in, const remat_shape *shapes, double **xs, fd_builder build)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x[3];
    char an[16];
    for (int k = 0; k < n_in; k++) {
        snprintf(an, sizeof an, "x%d", k);
        x[k] = remat_arg(f, an, REMAT_F64, shapes[k].rank, shapes[k].dims);
    }
    remat_val y = build(f, x);
    assert_fn_ok(f);
    remat_shape ys = remat_val_shape(f, y);
    int64_t ny = remat_shape_numel(&ys);
    double *w = xcalloc((size_t)ny, sizeof *w);
    for (int64_t i = 0; i < ny; i++)
        w[i] = urand(-1, 1);
    remat_val wv = remat_const_data(f, REMAT_F64, ys.rank, ys.dims, w);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, wv, y)));
    assert_fn_ok(f);
    remat_fn *g = grad_ok(f, 0, NULL);

    remat_tensor in[3];
    for (int k = 0; k < n_in; k++)
        in[k] = remat_tensor_f64(xs[k], shapes[k].rank, shapes[k].dims);
    outs_t go, lo;
    run_fn(g, n_in, in, &go, NULL, NULL);
    assert_int_equal(go.n, n_in);
    remat_program *pl = compile_ok(f);
    run_prog(pl, n_in, in, &lo, NULL);
    double f0 = *(double *)lo.t[0].data;
    const double h = 1e-6;
    for (int k = 0; k < n_in; k++) {
        assert_true(remat_shape_equal(&go.t[k].shape, &shapes[k]));
        const double *gk = go.t[k].data;
        int64_t n = remat_shape_numel(&shapes[k]);
        for (int64_t i = 0; i < n; i++) {
            double save = xs[k][i];
            xs[k][i] = save + h;
            outs_free(&lo);
            run_prog(pl, n_in, in, &lo, NULL);
            double fp = *(double *)lo.t[0].data;
            xs[k][i] = save - h;
            outs_free(&lo);
            run_prog(pl, n_in, in, &lo, NULL);
            double fm = *(double *)lo.t[0].data;
            xs[k][i] = save;
            double fd = (fp - fm) / (2 * h);
            /* relative 1e-6, plus an absolute term for the rounding of loss itself */
            double tol = 1e-6 * fabs(fd) + 1e-8 * (1 + fabs(f0));
            if (!(fabs(gk[i] - fd) <= tol))
                fail_msg("FD %s: d/dx%d[%lld] = %.12g, finite difference %.12g (x = %.6g)", name, k, (long long)i,
                         gk[i], fd, save);
        }
    }
    outs_free(&lo);
    outs_free(&go);
    remat_program_free(pl);
    remat_fn_free(g);
    remat_fn_free(f);
    free(w);
}

static void test_ad_every_primitive_matches_finite_differences(void **state)
{
    for (size_t c = 0; c < sizeof fd_cases / sizeof fd_cases[0]; c++) {
        const fd_case *fc = &fd_cases[c];
        remat_shape s[3];
        double *xs[3];
        for (int k = 0; k < fc->n_in; k++) {
            s[k] = shape_of(fc->rank[k], fc->dims[k]);
            int64_t n = remat_shape_numel(&s[k]);
            xs[k] = xcalloc((size_t)n, sizeof(double));
            fill_inputs(xs[k], n, fc->lo, fc->hi, fc->avoid);
            if (k == 1 && fc->no_ties)
                for (int64_t i = 0; i < n; i++)
                    if (fabs(xs[1][i] - xs[0][i]) < 0.05)
                        xs[1][i] = xs[0][i] + 0.3;
        }
        fd_check(fc->name, fc->n_in, s, xs, fc->build);
        for (int k = 0; k < fc->n_in; k++)
            free(xs[k]);
    }
}

/* dot_general: every dimension-number layout of the golden file, in FD too */
static remat_dot_dims fd_dot_dims; /* fd_builder has no context: set before each check */

static remat_val fd_dot(remat_fn *f, const remat_val *x) { return remat_dot_general(f, x[0], x[1], &fd_dot_dims); }

static void test_ad_dot_general_matches_finite_differences(void **state)
{
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, jget(golden("dot_general.json"), "cases"))
    {
        const cJSON *dn = jget(c, "dimension_numbers");
        remat_dot_dims *d = &fd_dot_dims;
        memset(d, 0, sizeof *d);
        d->n_contract = jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 0), d->lhs_contract, REMAT_MAX_RANK);
        jints32(cJSON_GetArrayItem(jget(dn, "contracting"), 1), d->rhs_contract, REMAT_MAX_RANK);
        d->n_batch = jints32(cJSON_GetArrayItem(jget(dn, "batch"), 0), d->lhs_batch, REMAT_MAX_RANK);
        jints32(cJSON_GetArrayItem(jget(dn, "batch"), 1), d->rhs_batch, REMAT_MAX_RANK);
        jarr l = jarr_get(jget(c, "lhs")), r = jarr_get(jget(c, "rhs"));
        remat_shape s[2] = {l.shape, r.shape};
        double *xs[2] = {l.data, r.data};
        fd_check(jget(c, "name")->valuestring, 2, s, xs, fd_dot);
        free(l.data), free(r.data);
        n++;
    }
    assert_int_equal(n, 12);
}

/* convert_element_type: its VJP converts the cotangent back. The check uses
 * f32 inputs on a 1/8 grid and h = 1/64, so x +- h is exact and the central
 * difference of this linear map is exact too. */
static void test_ad_convert_value_vjp_and_finite_differences(void **state)
{
    int64_t d[2] = {2, 3};
    float x[6], ctf[6];
    double ct[6], w[6];
    for (int i = 0; i < 6; i++) {
        x[i] = (float)(floor(urand(-16, 16)) / 8.0);
        ct[i] = urand(-1, 1);
        ctf[i] = (float)urand(-1, 1);
        w[i] = urand(-1, 1);
    }
    /* f32 -> f64: value exact, cotangent rounded to f32 */
    remat_fn *f = remat_fn_new("up");
    remat_fn_output(f, remat_convert(f, remat_arg(f, "x", REMAT_F32, 2, d), REMAT_F64));
    assert_int_equal(remat_val_op(f, remat_fn_out(f, 0)), REMAT_OP_CONVERT);
    remat_fn *g = NULL;
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    remat_tensor in[2] = {remat_tensor_f32(x, 2, d), remat_tensor_f64(ct, 2, d)};
    outs_t o;
    run_fn(g, 2, in, &o, NULL, NULL);
    assert_int_equal(o.t[0].dtype, REMAT_F64);
    assert_int_equal(o.t[1].dtype, REMAT_F32);
    for (int i = 0; i < 6; i++) {
        assert_true(((double *)o.t[0].data)[i] == (double)x[i]);
        assert_true(((float *)o.t[1].data)[i] == (float)ct[i]);
    }
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* f64 -> f32: value rounded, cotangent widened exactly */
    double xd[6];
    for (int i = 0; i < 6; i++)
        xd[i] = urand(-2, 2);
    f = remat_fn_new("down");
    remat_fn_output(f, remat_convert(f, remat_arg(f, "x", REMAT_F64, 2, d), REMAT_F32));
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    remat_tensor in2[2] = {remat_tensor_f64(xd, 2, d), remat_tensor_f32(ctf, 2, d)};
    run_fn(g, 2, in2, &o, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        assert_true(((float *)o.t[0].data)[i] == (float)xd[i]);
        assert_true(((double *)o.t[1].data)[i] == (double)ctf[i]);
    }
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* FD of sum(w * convert(x)) (f64 loss of an f32 argument) */
    f = remat_fn_new("fd_convert");
    remat_val c = remat_convert(f, remat_arg(f, "x", REMAT_F32, 2, d), REMAT_F64);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, remat_const_data(f, REMAT_F64, 2, d, w), c)));
    g = grad_ok(f, 0, NULL);
    remat_tensor tx = remat_tensor_f32(x, 2, d);
    outs_t go;
    run_fn(g, 1, &tx, &go, NULL, NULL);
    remat_program *pl = compile_ok(f);
    const float h = 1.0f / 64;
    for (int i = 0; i < 6; i++) {
        float save = x[i];
        x[i] = save + h;
        run_prog(pl, 1, &tx, &o, NULL);
        double fp = *(double *)o.t[0].data;
        outs_free(&o);
        x[i] = save - h;
        run_prog(pl, 1, &tx, &o, NULL);
        double fm = *(double *)o.t[0].data;
        outs_free(&o);
        x[i] = save;
        double fd = (fp - fm) / (2.0 * h), gi = ((float *)go.t[0].data)[i];
        if (!(fabs(gi - fd) <= 1e-6 * fabs(fd) + 1e-12))
            fail_msg("FD convert [%d]: grad %.9g, finite difference %.9g", i, gi, fd);
    }
    outs_free(&go);
    remat_program_free(pl);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* checkpoint_name is the identity, for values and cotangents, bit for bit */
static void test_ad_name_is_identity_for_values_and_cotangents(void **state)
{
    int64_t d[2] = {2, 3};
    double x[6], ct[6];
    fill_inputs(x, 6, -2, 2, 0);
    fill_inputs(ct, 6, -1, 1, 0);
    remat_fn *f = remat_fn_new("name");
    remat_val a = remat_arg(f, "x", REMAT_F64, 2, d);
    remat_val n = remat_name(f, remat_exp(f, a), "tag");
    assert_int_equal(remat_val_op(f, n), REMAT_OP_NAME);
    remat_fn_output(f, remat_name(f, n, "again"));
    remat_fn *g = NULL;
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    remat_tensor in[2] = {remat_tensor_f64(x, 2, d), remat_tensor_f64(ct, 2, d)};
    outs_t o;
    run_fn(g, 2, in, &o, NULL, NULL);
    for (int i = 0; i < 6; i++) {
        double y = ((double *)o.t[0].data)[i];
        assert_true(fabs(y - exp(x[i])) <= 1e-15 * exp(x[i]));
        assert_true(((double *)o.t[1].data)[i] == ct[i] * y); /* exp's rule alone: g * y, names add nothing */
    }
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* ---- custom op: a fused x * sin(y) ---- */

typedef struct {
    int forward_calls, vjp_calls;
} xsin_ctx;

static void xsin_forward(int n_in, const remat_tensor *ins, remat_tensor *out, void *ctx)
{
    ((xsin_ctx *)ctx)->forward_calls++;
    assert_int_equal(n_in, 2);
    int64_t n = remat_shape_numel(&out->shape);
    for (int64_t i = 0; i < n; i++) {
        if (out->dtype == REMAT_F64)
            ((double *)out->data)[i] = ((const double *)ins[0].data)[i] * sin(((const double *)ins[1].data)[i]);
        else
            ((float *)out->data)[i] = ((const float *)ins[0].data)[i] * sinf(((const float *)ins[1].data)[i]);
    }
}

static void xsin_vjp(int which, int n_in, const remat_tensor *ins, const remat_tensor *out,
                     const remat_tensor *dout, remat_tensor *din, void *ctx)
{
    ((xsin_ctx *)ctx)->vjp_calls++;
    assert_int_equal(n_in, 2);
    assert_true(remat_shape_equal(&out->shape, &dout->shape));
    int64_t n = remat_shape_numel(&din->shape);
    for (int64_t i = 0; i < n; i++) {
        if (din->dtype == REMAT_F64) {
            const double *x = ins[0].data, *y = ins[1].data, *g = dout->data;
            ((double *)din->data)[i] = which == 0 ? g[i] * sin(y[i]) : g[i] * x[i] * cos(y[i]);
        } else {
            const float *x = ins[0].data, *y = ins[1].data, *g = dout->data;
            ((float *)din->data)[i] = which == 0 ? g[i] * sinf(y[i]) : g[i] * x[i] * cosf(y[i]);
        }
    }
}

static xsin_ctx xsin_counts;
static const remat_custom_op xsin_op = {"xsin", xsin_forward, xsin_vjp, &xsin_counts};

static remat_val fd_custom(remat_fn *f, const remat_val *x)
{
    remat_shape s = remat_val_shape(f, x[0]);
    return remat_custom(f, &xsin_op, 2, x, REMAT_F64, s.rank, s.dims);
}

static void test_ad_custom_op_gradient_and_finite_differences(void **state)
{
    int64_t d[2] = {2, 3};
    double x[6], y[6];
    fill_inputs(x, 6, -2, 2, 0);
    fill_inputs(y, 6, -2, 2, 0);
    /* grad of sum(xsin(x, y)) against the formula, w.r.t. x and y */
    remat_fn *f = remat_fn_new("custom");
    remat_val a[2] = {remat_arg(f, "x", REMAT_F64, 2, d), remat_arg(f, "y", REMAT_F64, 2, d)};
    remat_fn_output(f, remat_sum_all(f, fd_custom(f, a)));
    assert_fn_ok(f);
    remat_fn *g = grad_ok(f, 0, NULL);
    remat_tensor in[2] = {remat_tensor_f64(x, 2, d), remat_tensor_f64(y, 2, d)};
    outs_t o;
    memset(&xsin_counts, 0, sizeof xsin_counts);
    run_fn(g, 2, in, &o, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 1); /* the VJP callback is handed the forward output */
    assert_int_equal(xsin_counts.vjp_calls, 2);
    for (int i = 0; i < 6; i++) {
        assert_true(fabs(((double *)o.t[0].data)[i] - sin(y[i])) <= 1e-15);
        assert_true(fabs(((double *)o.t[1].data)[i] - x[i] * cos(y[i])) <= 1e-15);
    }
    outs_free(&o);
    remat_fn_free(g);

    /* value_and_grad: the value, and the same bits inside a nothing_saveable region */
    remat_fn *vg = NULL;
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &vg), REMAT_OK);
    memset(&xsin_counts, 0, sizeof xsin_counts);
    outs_t o1, o2;
    run_fn(vg, 2, in, &o1, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 1);
    double want = 0;
    for (int i = 0; i < 6; i++)
        want += x[i] * sin(y[i]);
    assert_true(fabs(*(double *)o1.t[0].data - want) <= 1e-14);
    remat_fn *ck = remat_checkpoint(f, remat_nothing_saveable);
    remat_fn *vgc = NULL;
    assert_int_equal(remat_value_and_grad(ck, 0, NULL, &vgc), REMAT_OK);
    run_fn(vgc, 2, in, &o2, NULL, NULL);
    for (int k = 0; k < 3; k++)
        assert_memory_equal(o1.t[k].data, o2.t[k].data, tbytes(REMAT_F64, &o1.t[k].shape));
    outs_free(&o1);
    outs_free(&o2);
    remat_fn_free(vgc);
    remat_fn_free(ck);
    remat_fn_free(vg);
    remat_fn_free(f);

    /* under nothing_saveable the output the VJP callback reads is recomputed:
     * value_and_grad runs the forward callback for the value, then again in
     * the backward (grad alone would drop the forward as dead code) */
    f = remat_fn_new("custom2");
    remat_val b[2] = {remat_arg(f, "x", REMAT_F64, 2, d), remat_arg(f, "y", REMAT_F64, 2, d)};
    remat_val z = fd_custom(f, b);
    remat_fn_output(f, remat_sum_all(f, remat_exp(f, z)));
    ck = remat_checkpoint(f, NULL);
    remat_fn *g1 = NULL, *g2 = NULL;
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &g1), REMAT_OK);
    assert_int_equal(remat_value_and_grad(ck, 0, NULL, &g2), REMAT_OK);
    memset(&xsin_counts, 0, sizeof xsin_counts);
    run_fn(g1, 2, in, &o1, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 1);
    memset(&xsin_counts, 0, sizeof xsin_counts);
    run_fn(g2, 2, in, &o2, NULL, NULL);
    assert_int_equal(xsin_counts.forward_calls, 2); /* forward + recompute in the backward */
    for (int k = 0; k < 3; k++)
        assert_memory_equal(o1.t[k].data, o2.t[k].data, tbytes(REMAT_F64, &o1.t[k].shape));
    for (int i = 0; i < 6; i++) { /* d/dx exp(x sin y) = exp(.) sin y */
        double e = exp(x[i] * sin(y[i]));
        assert_true(fabs(((double *)o1.t[1].data)[i] - e * sin(y[i])) <= 1e-14 * e);
        assert_true(fabs(((double *)o1.t[2].data)[i] - e * x[i] * cos(y[i])) <= 1e-14 * e);
    }
    outs_free(&o1);
    outs_free(&o2);
    remat_fn_free(g1);
    remat_fn_free(g2);
    remat_fn_free(ck);
    remat_fn_free(f);

    /* central differences of sum(w * xsin(x, y)) */
    remat_shape s[2] = {shape_of(2, d), shape_of(2, d)};
    double *xs[2] = {x, y};
    fd_check("custom xsin", 2, s, xs, fd_custom);
}

static void test_ad_custom_op_without_vjp_fails_at_grad_time(void **state)
{
    static xsin_ctx counts;
    static const remat_custom_op novjp = {"fused_novjp", xsin_forward, NULL, &counts};
    int64_t d[1] = {3};
    remat_fn *f = remat_fn_new("novjp");
    remat_val a[2] = {remat_arg(f, "x", REMAT_F64, 1, d), remat_arg(f, "y", REMAT_F64, 1, d)};
    int line;
    remat_val z = remat_custom(f, &novjp, 2, a, REMAT_F64, 1, d); line = __LINE__;
    remat_fn_output(f, remat_sum_all(f, z));
    assert_fn_ok(f); /* building is fine ... */
    double x[3] = {1, 2, 3}, y[3] = {0.5, 1, 1.5};
    remat_tensor in[2] = {remat_tensor_f64(x, 1, d), remat_tensor_f64(y, 1, d)};
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL); /* ... and so is running the forward */
    assert_true(fabs(*(double *)o.t[0].data - (sin(0.5) + 2 * sin(1.0) + 3 * sin(1.5))) <= 1e-14);
    outs_free(&o);
    remat_fn *g = (remat_fn *)0x1;
    assert_int_equal(remat_grad(f, 0, NULL, &g), REMAT_ERR_UNSUPPORTED); /* ... grad is not */
    assert_null(g);
    char loc[64];
    snprintf(loc, sizeof loc, "test_ad.c:%d", line);
    assert_contains(remat_last_error(), "fused_novjp");
    assert_contains(remat_last_error(), loc);
    /* not differentiating through it is fine: grad w.r.t. nothing it feeds */
    remat_fn *f2 = remat_fn_new("novjp2");
    remat_val b[3] = {remat_arg(f2, "x", REMAT_F64, 1, d), remat_arg(f2, "y", REMAT_F64, 1, d),
                      remat_arg(f2, "w", REMAT_F64, 1, d)};
    remat_val z2 = remat_custom(f2, &novjp, 2, b, REMAT_F64, 1, d);
    remat_fn_output(f2, remat_sum_all(f2, remat_mul(f2, z2, b[2])));
    g = NULL;
    assert_int_equal(remat_grad(f2, 1, ((int[]){2}), &g), REMAT_OK);
    remat_fn_free(g);
    remat_fn_free(f2);
    remat_fn_free(f);
}

/* ==== 2. residual sets against jax.ad_checkpoint.print_saved_residuals ====
 * A residual is compared as "kind dtype[shape] detail", detail being the
 * argument name, the producing primitive or the checkpoint_name; source
 * locations differ by construction (JAX's point into gen_goldens.py). */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct {
    int n;
    char *s[64];
} sigset;

static void sigset_add(sigset *set, const char *kind, const char *type, const char *detail)
{
    assert_true(set->n < 64);
    size_t len = strlen(kind) + strlen(type) + strlen(detail) + 3;
    set->s[set->n] = xcalloc(1, len);
    snprintf(set->s[set->n], len, "%s %s %s", kind, type, detail);
    set->n++;
}

static void sigset_free(sigset *set)
{
    for (int i = 0; i < set->n; i++)
        free(set->s[i]);
    set->n = 0;
}

static void sigset_from_jax(sigset *set, const char *case_name)
{
    const cJSON *c = golden_case("residuals.json", case_name), *e;
    set->n = 0;
    cJSON_ArrayForEach(e, jget(c, "parsed"))
    {
        int64_t dims[REMAT_MAX_RANK];
        int r = jints(jget(e, "shape"), dims, REMAT_MAX_RANK);
        char type[128];
        int at = snprintf(type, sizeof type, "%s[", jget(e, "dtype")->valuestring);
        for (int i = 0; i < r; i++)
            at += snprintf(type + at, sizeof type - (size_t)at, "%s%lld", i ? "," : "", (long long)dims[i]);
        snprintf(type + at, sizeof type - (size_t)at, "]");
        const char *kind = jget(e, "kind")->valuestring;
        const char *detail = !strcmp(kind, "argument") ? jget(e, "arg")->valuestring
                             : !strcmp(kind, "output") ? jget(e, "primitive")->valuestring
                             : !strcmp(kind, "named")  ? jget(e, "name")->valuestring
                                                       : "?";
        sigset_add(set, kind, type, detail);
    }
    assert_int_equal(set->n, (int)jget(c, "count")->valuedouble);
}

/* remat's residuals of the VJP w.r.t. all arguments (as JAX's report) */
static void sigset_from_remat(sigset *set, const remat_fn *f, size_t *bytes)
{
    remat_residual_list *r = NULL;
    if (remat_saved_residuals(f, 0, NULL, &r) != REMAT_OK)
        fail_msg("saved_residuals of '%s': %s", remat_fn_name(f), remat_last_error());
    set->n = 0;
    for (int i = 0; i < remat_residual_list_count(r); i++) {
        const remat_residual *e = remat_residual_list_get(r, i);
        char type[128];
        remat_shape_format(e->dtype, &e->shape, type, sizeof type);
        const char *kind = e->kind == REMAT_RESIDUAL_ARGUMENT ? "argument"
                           : e->kind == REMAT_RESIDUAL_NAMED  ? "named"
                           : e->kind == REMAT_RESIDUAL_OUTPUT ? "output"
                                                              : "snapshot";
        const char *detail = e->kind == REMAT_RESIDUAL_OUTPUT ? remat_op_name(e->op) : e->name ? e->name : "?";
        sigset_add(set, kind, type, detail);
        /* provenance: what the user built is located in this file */
        if (e->kind != REMAT_RESIDUAL_ARGUMENT && !contains(e->loc.file, "test_ad.c"))
            fail_msg("residual %s %s located at %s", kind, type, e->loc.file ? e->loc.file : "(null)");
        assert_int_equal(e->bytes, tbytes(e->dtype, &e->shape));
    }
    if (bytes)
        *bytes = remat_residual_list_bytes(r);
    remat_residual_list_free(r);
}

static void sigset_expect(const char *what, sigset *got, sigset *want)
{
    qsort(got->s, (size_t)got->n, sizeof got->s[0], cmp_str);
    qsort(want->s, (size_t)want->n, sizeof want->s[0], cmp_str);
    int same = got->n == want->n;
    for (int i = 0; same && i < got->n; i++)
        same = !strcmp(got->s[i], want->s[i]);
    if (!same) {
        fprintf(stderr, "%s: residuals differ\n  remat (%d):\n", what, got->n);
        for (int i = 0; i < got->n; i++)
            fprintf(stderr, "    %s\n", got->s[i]);
        fprintf(stderr, "  expected (%d):\n", want->n);
        for (int i = 0; i < want->n; i++)
            fprintf(stderr, "    %s\n", want->s[i]);
        fail_msg("%s: residual multiset differs", what);
    }
}

/* f's residuals == JAX's for case_name, exactly (so counts by kind and primitives too) */
static void expect_jax_residuals(const char *case_name, const remat_fn *f)
{
    sigset got, want;
    sigset_from_remat(&got, f, NULL);
    sigset_from_jax(&want, case_name);
    /* counts by kind, as the golden states them */
    const cJSON *kinds = jget(golden_case("residuals.json", case_name), "count_by_kind"), *k;
    int total = 0;
    cJSON_ArrayForEach(k, kinds)
    {
        int n = 0;
        for (int i = 0; i < got.n; i++)
            n += !strncmp(got.s[i], k->string, strlen(k->string)) && got.s[i][strlen(k->string)] == ' ';
        if (n != (int)k->valuedouble)
            fail_msg("%s: %d residuals of kind %s, JAX has %d", case_name, n, k->string, (int)k->valuedouble);
        total += n;
    }
    assert_int_equal(total, got.n);
    sigset_expect(case_name, &got, &want);
    sigset_free(&got);
    sigset_free(&want);
}

/* f's residuals == an explicit list (where remat knowingly differs from JAX) */
static void expect_residuals(const char *what, const remat_fn *f, int n, const char *const *expected)
{
    sigset got, want = {0};
    sigset_from_remat(&got, f, NULL);
    for (int i = 0; i < n; i++)
        want.s[want.n++] = strdup(expected[i]);
    sigset_expect(what, &got, &want);
    sigset_free(&got);
    sigset_free(&want);
}

/* seed 003: block(x, w) = sin(sin(x @ w)); net = sum(block^3(x)) */
static remat_fn *block_fn(remat_dtype dt)
{
    int64_t d[2] = {4, 4};
    remat_fn *f = remat_fn_new("block");
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d);
    remat_fn_output(f, remat_sin(f, remat_sin(f, remat_matmul(f, x, w))));
    assert_fn_ok(f);
    return f;
}

static remat_fn *block_net(const remat_fn *blk, remat_dtype dt)
{
    int64_t d[2] = {4, 4};
    remat_fn *f = remat_fn_new("net");
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d);
    for (int i = 0; i < 3; i++)
        x = remat_call1(f, blk, 2, ((remat_val[]){x, w}));
    remat_fn_output(f, remat_sum_all(f, x));
    assert_fn_ok(f);
    return f;
}

static void test_ad_residuals_block_net_match_jax(void **state)
{
    remat_fn *blk = block_fn(REMAT_F32);
    remat_fn *plain = block_net(blk, REMAT_F32);
    /* Known difference. JAX linearizes sin in the forward and saves cos(x)
     * (6 "output of cos") plus the sin values the next dot reads (2); remat's
     * sin rule reads its operand and takes cos in the backward, so it saves
     * each block's dot_general output (read by the inner sin) and each inner
     * sin (read by the outer sin), plus the outer sins of blocks 1-2 (read by
     * the next dot). Same count by kind (2 arguments, 8 outputs). */
    static const char *const plain_expected[] = {
        "argument f32[4,4] x",        "argument f32[4,4] w",
        "output f32[4,4] dot_general", "output f32[4,4] dot_general", "output f32[4,4] dot_general",
        "output f32[4,4] sin",         "output f32[4,4] sin",         "output f32[4,4] sin",
        "output f32[4,4] sin",         "output f32[4,4] sin",
    };
    expect_residuals("block_net_plain", plain, 10, plain_expected);
    sigset jax;
    sigset_from_jax(&jax, "block_net_plain");
    assert_int_equal(jax.n, 10);
    sigset_free(&jax);

    remat_fn *ck = remat_checkpoint(blk, remat_dots_with_no_batch_dims_saveable);
    remat_fn *net = block_net(ck, REMAT_F32);
    expect_jax_residuals("block_net_remat", net);
    remat_fn_free(net);
    remat_fn_free(ck);
    remat_fn_free(plain);
    remat_fn_free(blk);
}

/* seed 000: loss(w1, w2, x) = sum((checkpoint_name(relu(x @ w1), "hidden") @ w2) ** 2) */
static remat_fn *seed_loss(void)
{
    remat_fn *f = remat_fn_new("loss");
    remat_val w1 = remat_arg(f, "w1", REMAT_F32, 2, ((int64_t[]){3, 3}));
    remat_val w2 = remat_arg(f, "w2", REMAT_F32, 2, ((int64_t[]){3, 3}));
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){2, 3}));
    remat_val hidden = remat_name(f, remat_relu(f, remat_matmul(f, x, w1)), "hidden");
    remat_val output = remat_matmul(f, hidden, w2);
    remat_fn_output(f, remat_sum_all(f, remat_integer_pow(f, output, 2)));
    assert_fn_ok(f);
    return f;
}

static void test_ad_residuals_policies_match_jax(void **state)
{
    const char *hidden[1] = {"hidden"};
    remat_policy *only = remat_policy_save_only_these_names(1, hidden);
    remat_policy *but = remat_policy_save_any_names_but_these(1, hidden);
    remat_policy *both = remat_policy_save_from_both(only, remat_dots_saveable);
    assert_non_null(only);
    assert_non_null(but);
    assert_non_null(both);
    const struct {
        const char *case_name;
        const remat_policy *p; /* NULL with plain: no checkpoint */
        int plain;
    } cases[] = {
        {"policy_none", NULL, 1},
        {"policy_nothing_saveable", remat_nothing_saveable, 0},
        {"policy_everything_saveable", remat_everything_saveable, 0},
        {"policy_dots_saveable", remat_dots_saveable, 0},
        {"policy_dots_with_no_batch_dims_saveable", remat_dots_with_no_batch_dims_saveable, 0},
        {"policy_save_only_these_names", only, 0},
        {"policy_save_any_names_but_these", but, 0},
        {"policy_save_from_both", both, 0},
    };
    /* Known difference, policy_none and policy_everything_saveable: JAX's
     * linearization saves values derived in the forward — relu's mask
     * ("bool[2,3] output of gt") and its broadcast zeros ("output of
     * broadcast_in_dim"), and 2*output for **2 ("output of mul") — where
     * remat's rules read existing values instead: relu reads its own output
     * (relu(x) > 0 iff x > 0) and **2 reads hidden @ w2 (a dot_general). */
    static const char *const all_saved[] = {
        "argument f32[3,3] w1", "argument f32[3,3] w2",  "argument f32[2,3] x",
        "output f32[2,3] relu", "named f32[2,3] hidden", "output f32[2,3] dot_general",
    };
    remat_fn *loss = seed_loss();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        remat_fn *f = cases[i].plain ? remat_fn_ref(loss) : remat_checkpoint(loss, cases[i].p);
        assert_non_null(f);
        if (!strcmp(cases[i].case_name, "policy_none") || !strcmp(cases[i].case_name, "policy_everything_saveable")) {
            expect_residuals(cases[i].case_name, f, 6, all_saved);
            /* JAX saves 3 arguments, 3 outputs, 1 named; remat 3, 2, 1 */
            const cJSON *k = jget(golden_case("residuals.json", cases[i].case_name), "count_by_kind");
            assert_int_equal((int)jget(k, "argument")->valuedouble, 3);
            assert_int_equal((int)jget(k, "output")->valuedouble, 3);
            assert_int_equal((int)jget(k, "named")->valuedouble, 1);
        } else {
            expect_jax_residuals(cases[i].case_name, f);
        }
        remat_fn_free(f);
    }
    remat_fn_free(loss);
    remat_policy_free(both);
    remat_policy_free(but);
    remat_policy_free(only);
}

static void test_ad_residuals_batched_and_nd_dots_match_jax(void **state)
{
    /* f(a, b) = sum(sin(einsum('bnd,bdf->bnf', a, b))) */
    remat_fn *f = remat_fn_new("batched");
    remat_val a = remat_arg(f, "a", REMAT_F32, 3, ((int64_t[]){2, 3, 4}));
    remat_val b = remat_arg(f, "b", REMAT_F32, 3, ((int64_t[]){2, 4, 5}));
    remat_dot_dims d = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                        .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0}};
    remat_fn_output(f, remat_sum_all(f, remat_sin(f, remat_dot_general(f, a, b, &d))));
    assert_fn_ok(f);
    remat_fn *c1 = remat_checkpoint(f, remat_dots_with_no_batch_dims_saveable);
    remat_fn *c2 = remat_checkpoint(f, remat_dots_saveable);
    expect_jax_residuals("batched_dots_with_no_batch_dims", c1);
    expect_jax_residuals("batched_dots_saveable", c2);
    remat_fn_free(c1);
    remat_fn_free(c2);
    remat_fn_free(f);

    /* g(x, w) = sum(sin(x @ w)), x 3-D: a dot_general without batch dims */
    f = remat_fn_new("nd_matmul");
    remat_val x = remat_arg(f, "x", REMAT_F32, 3, ((int64_t[]){2, 3, 4}));
    remat_val w = remat_arg(f, "w", REMAT_F32, 2, ((int64_t[]){4, 5}));
    remat_fn_output(f, remat_sum_all(f, remat_sin(f, remat_matmul(f, x, w))));
    c1 = remat_checkpoint(f, remat_dots_with_no_batch_dims_saveable);
    expect_jax_residuals("nd_matmul_no_batch", c1);
    remat_fn_free(c1);
    remat_fn_free(f);
}

/* layer(x) = tanh(x * 1.01 + 0.01); blocks of 3 layers, 2 blocks, sum */
static remat_fn *hier_layer(void)
{
    remat_fn *f = remat_fn_new("single_layer");
    remat_val x = remat_arg(f, "x", REMAT_F32, 1, ((int64_t[]){100}));
    remat_fn_output(f, remat_tanh(f, remat_add_scalar(f, remat_mul_scalar(f, x, 1.01), 0.01)));
    return f;
}

/* n calls of step on x; the output is x, or sum(x) when sum */
static remat_fn *hier_chain(const char *name, const remat_fn *step, int n, int sum)
{
    remat_fn *f = remat_fn_new(name);
    remat_val x = remat_arg(f, "x", REMAT_F32, 1, ((int64_t[]){100}));
    for (int i = 0; i < n; i++)
        x = remat_call1(f, step, 1, &x);
    remat_fn_output(f, sum ? remat_sum_all(f, x) : x);
    assert_fn_ok(f);
    return f;
}

static void test_ad_residuals_hierarchical_match_jax(void **state)
{
    remat_fn *layer = hier_layer();
    remat_fn *ck_layer = remat_checkpoint(layer, NULL); /* default policy: nothing_saveable */
    remat_fn *flat = hier_chain("block_flat", layer, 3, 0), *nested = hier_chain("block_nested", ck_layer, 3, 0);
    remat_fn *ck_flat = remat_checkpoint(flat, remat_nothing_saveable);
    remat_fn *ck_nested = remat_checkpoint(nested, remat_nothing_saveable);
    remat_fn *fns[2] = {hier_chain("hier_flat", ck_flat, 2, 1), hier_chain("hier_nested", ck_nested, 2, 1)};
    expect_jax_residuals("hier_flat", fns[0]);
    /* Known difference in naming only: JAX keeps the inner jax.checkpoint as
     * an equation, so block 1's output is "output of remat2"; remat inlines
     * regions, so the same value (block 1's output) is reported by the
     * primitive that computes it, the last layer's tanh. */
    sigset jax;
    sigset_from_jax(&jax, "hier_nested");
    assert_int_equal(jax.n, 2);
    qsort(jax.s, 2, sizeof jax.s[0], cmp_str);
    assert_string_equal(jax.s[0], "argument f32[100] x");
    assert_string_equal(jax.s[1], "output f32[100] remat2");
    sigset_free(&jax);
    static const char *const nested_expected[] = {"argument f32[100] x", "output f32[100] tanh"};
    expect_residuals("hier_nested", fns[1], 2, nested_expected);
    for (int k = 0; k < 2; k++)
        remat_fn_free(fns[k]);
    remat_fn_free(ck_nested), remat_fn_free(ck_flat), remat_fn_free(nested), remat_fn_free(flat);
    remat_fn_free(ck_layer), remat_fn_free(layer);
}

/* ==== seed gradients (gradients.json, f64) ==== */

static void test_ad_seed_gradients_match_jax(void **state)
{
    const cJSON *gd = golden("gradients.json");
    /* seed 003 in f64: grad w.r.t. w, plain and with dots_with_no_batch_dims_saveable blocks */
    {
        jarr want = jarr_get(jget(jget(gd, "remat_block_net"), "grad_w"));
        remat_fn *blk = block_fn(REMAT_F64);
        remat_fn *ck = remat_checkpoint(blk, remat_dots_with_no_batch_dims_saveable);
        double x[16], w[16];
        for (int i = 0; i < 16; i++)
            x[i] = 1.0, w[i] = i % 5 == 0 ? 0.5 : 0.0;
        int64_t d[2] = {4, 4};
        remat_tensor in[2] = {remat_tensor_f64(x, 2, d), remat_tensor_f64(w, 2, d)};
        outs_t o[2];
        for (int k = 0; k < 2; k++) {
            remat_fn *net = block_net(k ? ck : blk, REMAT_F64);
            remat_fn *g = grad_ok(net, 1, ((int[]){1}));
            run_fn(g, 2, in, &o[k], NULL, NULL);
            check_close("remat_block_net grad_w", 16, o[k].t[0].data, want.data, 1e-13, 0);
            remat_fn_free(g);
            remat_fn_free(net);
        }
        assert_memory_equal(o[0].t[0].data, o[1].t[0].data, 16 * sizeof(double));
        outs_free(&o[0]), outs_free(&o[1]);
        remat_fn_free(ck), remat_fn_free(blk);
        free(want.data);
    }
    /* heavy_computation: W = 0.9 I + 0.01; layer(x) = W^T cos(W sin x); 5 layers; sum */
    {
        const cJSON *hc = jget(gd, "heavy_computation");
        double *W = xcalloc(2500, sizeof *W), x[50], want[50];
        for (int i = 0; i < 2500; i++)
            W[i] = (i % 51 == 0 ? 0.9 : 0.0) + 0.01;
        int n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, jget(hc, "grad")) want[n++] = e->valuedouble;
        assert_int_equal(n, 50);
        remat_fn *f = remat_fn_new("heavy");
        remat_val v = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){50}));
        remat_val Wv = remat_const_data(f, REMAT_F64, 2, ((int64_t[]){50, 50}), W);
        remat_val Wt = remat_transpose(f, Wv, ((int[]){1, 0}));
        for (int l = 0; l < 5; l++)
            v = remat_matmul(f, Wt, remat_cos(f, remat_matmul(f, Wv, remat_sin(f, v))));
        remat_fn_output(f, remat_sum_all(f, v));
        remat_fn *g = grad_ok(f, 0, NULL);
        for (int i = 0; i < 50; i++)
            x[i] = 1.0;
        remat_tensor in = remat_tensor_f64(x, 1, ((int64_t[]){50}));
        outs_t o;
        run_fn(g, 1, &in, &o, NULL, NULL);
        check_close("heavy_computation grad", 50, o.t[0].data, want, 1e-12, 0);
        outs_free(&o);
        remat_fn_free(g), remat_fn_free(f);
        free(W);
    }
    /* hierarchical_tanh: 10 checkpointed blocks of 10 layers tanh(x*1.01 + 0.01) */
    /* deep_sin: 100 times x = sin(x) + 0.1 x on ones(1000) */
    for (int which = 0; which < 2; which++) {
        const cJSON *hc = jget(gd, which ? "deep_sin" : "hierarchical_tanh");
        int64_t n = which ? 1000 : 100;
        remat_fn *layer = remat_fn_new("layer");
        remat_val x = remat_arg(layer, "x", REMAT_F64, 1, &n);
        remat_fn_output(layer, which ? remat_add(layer, remat_sin(layer, x), remat_mul_scalar(layer, x, 0.1))
                                     : remat_tanh(layer, remat_add_scalar(layer, remat_mul_scalar(layer, x, 1.01), 0.01)));
        remat_fn *block = remat_fn_new("block");
        x = remat_arg(block, "x", REMAT_F64, 1, &n);
        for (int i = 0; i < (which ? 100 : 10); i++)
            x = remat_call1(block, layer, 1, &x);
        remat_fn_output(block, x);
        remat_fn *ck = remat_checkpoint(block, NULL);
        remat_fn *f = remat_fn_new("loss");
        x = remat_arg(f, "x", REMAT_F64, 1, &n);
        for (int i = 0; i < (which ? 1 : 10); i++)
            x = remat_call1(f, which ? block : ck, 1, &x);
        remat_fn_output(f, remat_sum_all(f, x));
        assert_fn_ok(f);
        remat_fn *g = grad_ok(f, 0, NULL);
        double *xv = xcalloc((size_t)n, sizeof *xv);
        for (int64_t i = 0; i < n; i++)
            xv[i] = 1.0;
        remat_tensor in = remat_tensor_f64(xv, 1, &n);
        outs_t o;
        run_fn(g, 1, &in, &o, NULL, NULL);
        const double *gv = o.t[0].data;
        double norm = 0;
        for (int64_t i = 0; i < n; i++)
            norm += gv[i] * gv[i];
        norm = sqrt(norm);
        double first = which ? cJSON_GetArrayItem(jget(hc, "grad_first5"), 0)->valuedouble
                             : jget(hc, "grad_first")->valuedouble;
        check_close(which ? "deep_sin grad_norm" : "hierarchical_tanh grad_norm", 1, &norm,
                    &jget(hc, "grad_norm")->valuedouble, 1e-12, 0);
        check_close(which ? "deep_sin grad[0]" : "hierarchical_tanh grad[0]", 1, gv, &first, 1e-12, 0);
        outs_free(&o);
        free(xv);
        remat_fn_free(g), remat_fn_free(f), remat_fn_free(ck), remat_fn_free(block), remat_fn_free(layer);
    }
}

/* ==== 3. policies change memory, never a bit of the gradient ==== */

/* A user policy that looks at shapes only: save values of >= 12 elements.
 * It checks every remat_op_info it is shown is well formed. */
typedef struct {
    int calls, bad, freed;
} shape_policy_ctx;

static bool shape_policy(const remat_op_info *op, void *vctx)
{
    shape_policy_ctx *c = vctx;
    c->calls++;
    int ok = (unsigned)op->op < REMAT_OP_COUNT && (unsigned)op->dtype < REMAT_DTYPE_COUNT && op->shape &&
             op->shape->rank >= 0 && op->shape->rank <= REMAT_MAX_RANK && op->n_inputs >= 0 &&
             (op->n_inputs == 0 || (op->in_shapes && op->in_dtypes)) &&
             (op->op == REMAT_OP_DOT_GENERAL) == (op->dot != NULL) && (op->op == REMAT_OP_NAME) == (op->name != NULL);
    for (int i = 0; ok && i < op->n_inputs; i++)
        ok = op->in_shapes[i].rank >= 0 && op->in_shapes[i].rank <= REMAT_MAX_RANK &&
             (unsigned)op->in_dtypes[i] < REMAT_DTYPE_COUNT;
    c->bad += !ok;
    return ok && remat_shape_numel(op->shape) >= 12;
}

static void shape_policy_free(void *vctx) { ((shape_policy_ctx *)vctx)->freed++; }

enum { NPOL = 9 };

typedef struct {
    const remat_policy *p[NPOL];
    remat_policy *owned[4];
    shape_policy_ctx ctx;
} policy_set;

static void policy_set_init(policy_set *s)
{
    const char *h1[1] = {"h1"}, *h2[1] = {"h2"};
    memset(s, 0, sizeof *s);
    s->owned[0] = remat_policy_save_only_these_names(1, h1);
    s->owned[1] = remat_policy_save_any_names_but_these(1, h2);
    s->owned[2] = remat_policy_save_from_both(s->owned[0], remat_dots_saveable);
    s->owned[3] = remat_policy_new("numel>=12", shape_policy, &s->ctx, shape_policy_free);
    const remat_policy *p[NPOL] = {NULL, /* default: nothing_saveable */
                                   remat_nothing_saveable, remat_everything_saveable, remat_dots_saveable,
                                   remat_dots_with_no_batch_dims_saveable, s->owned[0], s->owned[1], s->owned[2],
                                   s->owned[3]};
    for (int i = 0; i < NPOL; i++)
        s->p[i] = p[i];
    for (int i = 0; i < 4; i++)
        assert_non_null(s->owned[i]);
    assert_string_equal(remat_policy_label(s->owned[3]), "numel>=12");
}

/* Drops the set's references; the custom ctx is freed once nothing uses it. */
static void policy_set_free(policy_set *s)
{
    for (int i = 0; i < 4; i++)
        remat_policy_free(s->owned[i]);
    assert_int_equal(s->ctx.freed, 1);
    assert_int_equal(s->ctx.bad, 0);
}

/* MLP-ish: h1 = name(relu(x w1 + b1)), h2 = name(tanh(h1 w2 + b2)), o = h2 w3,
 * loss = sum(o^2) + 0.5 sum(sin h1).  x (4,5) w1 (5,6) b1 (6) w2 (6,6) b2 (6) w3 (6,3) */
static const int64_t mlp_dims[6][2] = {{4, 5}, {5, 6}, {6}, {6, 6}, {6}, {6, 3}};
static const int mlp_rank[6] = {2, 2, 1, 2, 1, 2};
static const char *const mlp_names[6] = {"x", "w1", "b1", "w2", "b2", "w3"};

static remat_val mlp_layer_body(remat_fn *f, remat_val h, remat_val w, remat_val b, int relu, const char *name)
{
    remat_val z = remat_add(f, remat_matmul(f, h, w), b);
    return remat_name(f, relu ? remat_relu(f, z) : remat_tanh(f, z), name);
}

static remat_fn *mlp_layer(remat_dtype dt, int k)
{
    remat_fn *f = remat_fn_new(k == 1 ? "layer1" : "layer2");
    remat_val h = remat_arg(f, "h", dt, 2, ((int64_t[]){4, k == 1 ? 5 : 6}));
    remat_val w = remat_arg(f, "w", dt, 2, mlp_dims[2 * k - 1]);
    remat_val b = remat_arg(f, "b", dt, 1, mlp_dims[2 * k]);
    remat_fn_output(f, mlp_layer_body(f, h, w, b, k == 1, k == 1 ? "h1" : "h2"));
    return f;
}

/* layers == NULL: everything inline; else the two layers are called */
static remat_fn *mlp_fn(remat_dtype dt, remat_fn *const *layers)
{
    remat_fn *f = remat_fn_new("mlp");
    remat_val a[6];
    for (int i = 0; i < 6; i++)
        a[i] = remat_arg(f, mlp_names[i], dt, mlp_rank[i], mlp_dims[i]);
    remat_val h1 = layers ? remat_call1(f, layers[0], 3, ((remat_val[]){a[0], a[1], a[2]}))
                          : mlp_layer_body(f, a[0], a[1], a[2], 1, "h1");
    remat_val h2 = layers ? remat_call1(f, layers[1], 3, ((remat_val[]){h1, a[3], a[4]}))
                          : mlp_layer_body(f, h1, a[3], a[4], 0, "h2");
    remat_val o = remat_matmul(f, h2, a[5]);
    remat_val loss = remat_add(f, remat_sum_all(f, remat_square(f, o)),
                               remat_mul_scalar(f, remat_sum_all(f, remat_sin(f, h1)), 0.5));
    remat_fn_output(f, loss);
    assert_fn_ok(f);
    return f;
}

typedef struct {
    remat_dtype dt;
    int n;
    remat_tensor t[8];
} inputs_t;

static void inputs_make(inputs_t *in, remat_dtype dt, int n, const int *rank, const int64_t (*dims)[2])
{
    in->dt = dt;
    in->n = n;
    for (int i = 0; i < n; i++) {
        remat_shape s = shape_of(rank[i], dims[i]);
        int64_t m = remat_shape_numel(&s);
        void *data = xcalloc((size_t)m, remat_dtype_size(dt));
        for (int64_t j = 0; j < m; j++) {
            double v = urand(-1, 1);
            if (dt == REMAT_F64)
                ((double *)data)[j] = v;
            else
                ((float *)data)[j] = (float)v;
        }
        in->t[i] = (remat_tensor){.dtype = dt, .shape = s, .data = data};
    }
}

static void inputs_free(inputs_t *in)
{
    for (int i = 0; i < in->n; i++)
        free(in->t[i].data);
}

static void expect_same_bits(const char *what, const outs_t *a, const outs_t *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        assert_int_equal(a->t[i].dtype, b->t[i].dtype);
        assert_true(remat_shape_equal(&a->t[i].shape, &b->t[i].shape));
        if (memcmp(a->t[i].data, b->t[i].data, tbytes(a->t[i].dtype, &a->t[i].shape)))
            fail_msg("%s: gradient output %d differs in its bits from the un-checkpointed one", what, i);
    }
}

static void test_ad_policies_leave_mlp_gradients_bitwise_identical(void **state)
{
    policy_set ps;
    policy_set_init(&ps);
    for (int dti = 0; dti < 2; dti++) {
        remat_dtype dt = dti ? REMAT_F64 : REMAT_F32;
        inputs_t in;
        inputs_make(&in, dt, 6, mlp_rank, mlp_dims);
        remat_fn *plain = mlp_fn(dt, NULL);
        remat_fn *gp = grad_ok(plain, 0, NULL);
        outs_t ref;
        run_fn(gp, 6, in.t, &ref, NULL, NULL);
        /* the inline-called layers give the same graph as writing them out */
        remat_fn *layers[2] = {mlp_layer(dt, 1), mlp_layer(dt, 2)};
        remat_fn *called = mlp_fn(dt, layers);
        remat_fn *gc = grad_ok(called, 0, NULL);
        outs_t o;
        run_fn(gc, 6, in.t, &o, NULL, NULL);
        expect_same_bits("inlined layers", &ref, &o);
        outs_free(&o);
        remat_fn_free(gc), remat_fn_free(called);
        for (int k = 0; k < NPOL; k++) {
            const char *label = remat_policy_label(ps.p[k]);
            char what[160];
            /* (i) the whole loss in one region */
            remat_fn *whole = remat_checkpoint(plain, ps.p[k]);
            remat_fn *g = grad_ok(whole, 0, NULL);
            run_fn(g, 6, in.t, &o, NULL, NULL);
            snprintf(what, sizeof what, "%s whole loss, %s", remat_dtype_name(dt), label);
            expect_same_bits(what, &ref, &o);
            outs_free(&o);
            remat_fn_free(g), remat_fn_free(whole);
            /* (ii) one region per layer */
            remat_fn *ck[2] = {remat_checkpoint(layers[0], ps.p[k]), remat_checkpoint(layers[1], ps.p[k])};
            remat_fn *per = mlp_fn(dt, ck);
            g = grad_ok(per, 0, NULL);
            run_fn(g, 6, in.t, &o, NULL, NULL);
            snprintf(what, sizeof what, "%s per layer, %s", remat_dtype_name(dt), label);
            expect_same_bits(what, &ref, &o);
            outs_free(&o);
            /* (iii) value_and_grad: the value is the plain loss too */
            remat_fn *vg = NULL, *vgp = NULL;
            assert_int_equal(remat_value_and_grad(per, 0, NULL, &vg), REMAT_OK);
            assert_int_equal(remat_value_and_grad(plain, 0, NULL, &vgp), REMAT_OK);
            outs_t a, b;
            run_fn(vg, 6, in.t, &a, NULL, NULL);
            run_fn(vgp, 6, in.t, &b, NULL, NULL);
            expect_same_bits(what, &b, &a);
            outs_free(&a), outs_free(&b);
            remat_fn_free(vg), remat_fn_free(vgp);
            remat_fn_free(g), remat_fn_free(per), remat_fn_free(ck[0]), remat_fn_free(ck[1]);
        }
        remat_fn_free(layers[0]), remat_fn_free(layers[1]);
        outs_free(&ref);
        remat_fn_free(gp), remat_fn_free(plain);
        inputs_free(&in);
    }
    assert_true(ps.ctx.calls > 0); /* the user policy was consulted */
    policy_set_free(&ps);
}

/* Three levels of regions: top(x, w) = sum(L1(x, w)^2) with
 *   L1(x, w) = exp(-L2(L2(x, w), w)^2) + x,   L2(x, w) = tanh(L3(L3(x, w), w)) + x,
 *   L3(x, w) = sin(name(x @ w, "d3")) * x.   x (4,4), w (4,4). */
static remat_fn *nest_level(int level, remat_dtype dt, const remat_fn *inner)
{
    int64_t d[2] = {4, 4};
    remat_fn *f = remat_fn_new(level == 1 ? "L1" : level == 2 ? "L2" : "L3");
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d), y;
    if (level == 3) {
        y = remat_mul(f, remat_sin(f, remat_name(f, remat_matmul(f, x, w), "d3")), x);
    } else {
        remat_val a = remat_call1(f, inner, 2, ((remat_val[]){x, w}));
        a = remat_call1(f, inner, 2, ((remat_val[]){a, w}));
        y = level == 2 ? remat_tanh(f, a) : remat_exp(f, remat_neg(f, remat_square(f, a)));
        y = remat_add(f, y, x);
    }
    remat_fn_output(f, y);
    assert_fn_ok(f);
    return f;
}

/* pol[i] NULL with plain[i]: level i+1 is not a region */
static remat_fn *nest_top(remat_dtype dt, const remat_policy *const *pol, const int *plain)
{
    remat_fn *l3 = nest_level(3, dt, NULL);
    remat_fn *c3 = plain[2] ? remat_fn_ref(l3) : remat_checkpoint(l3, pol[2]);
    remat_fn *l2 = nest_level(2, dt, c3);
    remat_fn *c2 = plain[1] ? remat_fn_ref(l2) : remat_checkpoint(l2, pol[1]);
    remat_fn *l1 = nest_level(1, dt, c2);
    remat_fn *c1 = plain[0] ? remat_fn_ref(l1) : remat_checkpoint(l1, pol[0]);
    remat_fn *f = remat_fn_new("top");
    int64_t d[2] = {4, 4};
    remat_val x = remat_arg(f, "x", dt, 2, d), w = remat_arg(f, "w", dt, 2, d);
    remat_fn_output(f, remat_sum_all(f, remat_square(f, remat_call1(f, c1, 2, ((remat_val[]){x, w})))));
    assert_fn_ok(f);
    remat_fn *fs[6] = {l3, c3, l2, c2, l1, c1};
    for (int i = 0; i < 6; i++)
        remat_fn_free(fs[i]); /* f keeps what it calls alive */
    return f;
}

static void test_ad_policies_leave_nested_region_gradients_bitwise_identical(void **state)
{
    policy_set ps;
    policy_set_init(&ps);
    const int none[3] = {1, 1, 1}, all[3] = {0, 0, 0};
    const remat_policy *nulls[3] = {NULL, NULL, NULL};
    for (int dti = 0; dti < 2; dti++) {
        remat_dtype dt = dti ? REMAT_F64 : REMAT_F32;
        const int rk[2] = {2, 2};
        const int64_t dd[2][2] = {{4, 4}, {4, 4}};
        inputs_t in;
        inputs_make(&in, dt, 2, rk, dd);
        remat_fn *plain = nest_top(dt, nulls, none);
        remat_fn *gp = grad_ok(plain, 0, NULL);
        outs_t ref, o;
        run_fn(gp, 2, in.t, &ref, NULL, NULL);
        /* the same policy at every level, then mixes of policies and depths */
        for (int k = 0; k < NPOL + 4; k++) {
            const remat_policy *pol[3];
            const int *pl = all;
            static const int only_outer[3] = {0, 1, 1}, only_inner[3] = {1, 1, 0};
            if (k < NPOL) {
                pol[0] = pol[1] = pol[2] = ps.p[k];
            } else if (k == NPOL) {
                pol[0] = remat_nothing_saveable, pol[1] = remat_dots_saveable, pol[2] = remat_everything_saveable;
            } else if (k == NPOL + 1) {
                pol[0] = remat_everything_saveable, pol[1] = remat_nothing_saveable, pol[2] = ps.p[5];
            } else {
                pol[0] = pol[1] = pol[2] = remat_nothing_saveable;
                pl = k == NPOL + 2 ? only_outer : only_inner;
            }
            remat_fn *f = nest_top(dt, pol, pl);
            remat_fn *g = grad_ok(f, 0, NULL);
            run_fn(g, 2, in.t, &o, NULL, NULL);
            char what[160];
            snprintf(what, sizeof what, "%s nested, variant %d", remat_dtype_name(dt), k);
            expect_same_bits(what, &ref, &o);
            outs_free(&o);
            remat_fn_free(g), remat_fn_free(f);
        }
        outs_free(&ref);
        remat_fn_free(gp), remat_fn_free(plain);
        inputs_free(&in);
    }
    assert_true(ps.ctx.calls > 0);
    policy_set_free(&ps);
}

/* ==== 4. recomputation happens, and the memory plan is what the run measures ==== */

static void test_ad_nothing_saveable_recomputes_and_saves_less(void **state)
{
    inputs_t in;
    inputs_make(&in, REMAT_F64, 6, mlp_rank, mlp_dims);
    size_t arg_bytes = 0;
    for (int i = 0; i < 6; i++)
        arg_bytes += remat_tensor_bytes(&in.t[i]);
    remat_fn *plain = mlp_fn(REMAT_F64, NULL);
    const remat_policy *pols[3] = {NULL, remat_nothing_saveable, remat_everything_saveable};
    remat_memory_plan plan[3];
    remat_stats st[3];
    size_t report_bytes[3];
    for (int k = 0; k < 3; k++) {
        remat_fn *f = k ? remat_checkpoint(plain, pols[k]) : remat_fn_ref(plain);
        remat_fn *g = grad_ok(f, 0, NULL);
        remat_program *p = compile_ok(g);
        remat_program_plan(p, &plan[k]);
        outs_t o;
        run_prog(p, 6, in.t, &o, &st[k]);
        outs_free(&o);
        sigset set;
        sigset_from_remat(&set, f, &report_bytes[k]);
        sigset_free(&set);
        assert_int_equal(plan[k].recompute_instructions, st[k].recomputed_ops);
        assert_int_equal(plan[k].arena_bytes, st[k].peak_arena_bytes);
        assert_int_equal(plan[k].residual_bytes, st[k].residual_bytes);
        assert_int_equal(plan[k].residual_bytes, report_bytes[k]); /* the program and the report agree */
        assert_int_equal(plan[k].instructions, st[k].ops_executed);
        remat_program_free(p);
        remat_fn_free(g), remat_fn_free(f);
    }
    assert_int_equal(st[0].recomputed_ops, 0);
    assert_true(st[1].recomputed_ops > 0);
    assert_int_equal(st[2].recomputed_ops, 0);
    /* nothing_saveable keeps the arguments only; no checkpoint keeps more */
    assert_int_equal(plan[1].residual_bytes, arg_bytes);
    assert_true(plan[1].residual_bytes < plan[0].residual_bytes);
    /* everything_saveable saves what no checkpoint saves, and runs as many ops */
    assert_int_equal(plan[2].residual_bytes, plan[0].residual_bytes);
    assert_int_equal(st[2].ops_executed, st[0].ops_executed);
    remat_fn_free(plain);
    inputs_free(&in);
}

/* Where nested regions recompute (vjp.c): region R's policy decides what the
 * computation enclosing R keeps of R's values, nested regions' values
 * included (so at the top level only the outermost policy counts, as in JAX);
 * a refused value is still reused when an enclosing context already holds it.
 * With
 *   L3(x) = sin(a), a = sin(x);  L2(x) = sin(y), y = L3(x);  L1 = L2;  top = sum(L1(x))
 * the backward reads y (sin(y)'s rule, in L2), a (sin(a)'s rule, in L3) and x.
 * Counting by hand, e.g. (nothing, everything, nothing): L2 keeps y, but L1
 * does not, so L1's context recomputes a and y; L3 refuses a, but L2 keeps
 * it and L1's context holds it: 2. */
static void test_ad_nested_regions_recompute_where_each_region_policy_says(void **state)
{
    const remat_policy *N = remat_nothing_saveable, *E = remat_everything_saveable;
    const struct {
        const remat_policy *p1, *p2, *p3;
        int64_t recomputed;
    } cases[] = {
        {N, E, N, 2}, /* L1 recomputes a, y; L3 reuses L1's a */
        {E, E, E, 0},
        {N, N, N, 2}, /* L2 recomputes a, y; L3 reuses L2's a */
        {E, N, E, 2}, /* L2 recomputes a, y; L3 keeps a, read from L2's context */
        {N, E, E, 2}, /* L1 recomputes a, y; L2 and L3 read them */
        {E, E, N, 1}, /* the forward keeps y (L1 permits); nobody holds a: L3 recomputes it */
    };
    int64_t n = 5;
    double xv[5] = {-1.5, -0.3, 0.2, 0.9, 2.0};
    remat_tensor in = remat_tensor_f64(xv, 1, &n);
    outs_t ref = {0};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        remat_fn *l3 = remat_fn_new("L3");
        remat_val x = remat_arg(l3, "x", REMAT_F64, 1, &n);
        remat_fn_output(l3, remat_sin(l3, remat_sin(l3, x)));
        remat_fn *c3 = remat_checkpoint(l3, cases[k].p3);
        remat_fn *l2 = remat_fn_new("L2");
        x = remat_arg(l2, "x", REMAT_F64, 1, &n);
        remat_fn_output(l2, remat_sin(l2, remat_call1(l2, c3, 1, &x)));
        remat_fn *c2 = remat_checkpoint(l2, cases[k].p2);
        remat_fn *l1 = remat_fn_new("L1");
        x = remat_arg(l1, "x", REMAT_F64, 1, &n);
        remat_fn_output(l1, remat_call1(l1, c2, 1, &x));
        remat_fn *c1 = remat_checkpoint(l1, cases[k].p1);
        remat_fn *top = remat_fn_new("top");
        x = remat_arg(top, "x", REMAT_F64, 1, &n);
        remat_fn_output(top, remat_sum_all(top, remat_call1(top, c1, 1, &x)));
        assert_fn_ok(top);
        remat_fn *g = grad_ok(top, 0, NULL);
        remat_program *p = compile_ok(g);
        remat_memory_plan plan;
        remat_program_plan(p, &plan);
        outs_t o;
        remat_stats st;
        run_prog(p, 1, &in, &o, &st);
        if (st.recomputed_ops != cases[k].recomputed)
            fail_msg("case %zu (%s, %s, %s): %lld ops recomputed, want %lld", k, remat_policy_label(cases[k].p1),
                     remat_policy_label(cases[k].p2), remat_policy_label(cases[k].p3), (long long)st.recomputed_ops,
                     (long long)cases[k].recomputed);
        assert_int_equal(plan.recompute_instructions, cases[k].recomputed);
        for (int i = 0; i < 5; i++) {
            double want = cos(sin(sin(xv[i]))) * cos(sin(xv[i])) * cos(xv[i]);
            assert_true(fabs(((double *)o.t[0].data)[i] - want) <= 1e-15);
        }
        if (k == 0)
            ref = o;
        else {
            expect_same_bits("nested recompute", &ref, &o);
            outs_free(&o);
        }
        remat_program_free(p);
        remat_fn *fs[8] = {g, top, c1, l1, c2, l2, c3, l3};
        for (int i = 0; i < 8; i++)
            remat_fn_free(fs[i]);
    }
    outs_free(&ref);
}

/* Over the functions of this file: predicted arena == measured high-water mark. */
static void test_ad_predicted_arena_equals_measured_peak(void **state)
{
    remat_fn *fns[8];
    int n = 0;
    remat_fn *blk = block_fn(REMAT_F64);
    remat_fn *ck = remat_checkpoint(blk, remat_dots_with_no_batch_dims_saveable);
    fns[n++] = block_net(blk, REMAT_F64);
    fns[n++] = block_net(ck, REMAT_F64);
    fns[n++] = mlp_fn(REMAT_F64, NULL);
    fns[n++] = remat_checkpoint(fns[2], remat_dots_saveable);
    const remat_policy *pn[3] = {remat_nothing_saveable, remat_dots_saveable, remat_everything_saveable};
    const int all[3] = {0, 0, 0};
    fns[n++] = nest_top(REMAT_F64, pn, all);
    fns[n++] = remat_checkpoint(fns[4], remat_nothing_saveable);
    int cases = 0;
    for (int i = 0; i < n; i++) {
        remat_fn *g = grad_ok(fns[i], 0, NULL), *vjp = NULL;
        assert_int_equal(remat_vjp(fns[i], 0, NULL, &vjp), REMAT_OK);
        const remat_fn *progs[3] = {fns[i], g, vjp};
        for (int k = 0; k < 3; k++) {
            remat_program *p = compile_ok(progs[k]);
            int nin = remat_program_num_inputs(p);
            remat_tensor in[8];
            for (int j = 0; j < nin; j++) {
                in[j] = remat_program_input_desc(p, j);
                int64_t m = remat_shape_numel(&in[j].shape);
                in[j].data = xcalloc((size_t)m, sizeof(double));
                for (int64_t e = 0; e < m; e++)
                    ((double *)in[j].data)[e] = urand(-1, 1);
            }
            remat_memory_plan plan;
            remat_program_plan(p, &plan);
            remat_stats st;
            outs_t o;
            run_prog(p, nin, in, &o, &st);
            if (plan.arena_bytes != st.peak_arena_bytes)
                fail_msg("%s: predicted arena %zu bytes, measured %zu", remat_fn_name(progs[k]), plan.arena_bytes,
                         st.peak_arena_bytes);
            assert_true(plan.arena_bytes > 0);
            outs_free(&o);
            for (int j = 0; j < nin; j++)
                free(in[j].data);
            remat_program_free(p);
            cases++;
        }
        remat_fn_free(vjp), remat_fn_free(g);
    }
    assert_int_equal(cases, 3 * n);
    for (int i = 0; i < n; i++)
        remat_fn_free(fns[i]);
    remat_fn_free(ck), remat_fn_free(blk);
}

/* ==== 5. bad input ==== */

/* v is the result of a bad call made at `line` of this file */
static void expect_build_error(remat_fn *f, remat_val v, remat_status st, int line, const char *op, const char *s1,
                               const char *s2)
{
    char loc[64];
    snprintf(loc, sizeof loc, "test_ad.c:%d", line);
    assert_int_equal(v, REMAT_NONE);
    if (remat_fn_status(f) != st)
        fail_msg("line %d: status %s, want %s (%s)", line, remat_status_name(remat_fn_status(f)),
                 remat_status_name(st), remat_fn_error(f));
    const char *msg = remat_fn_error(f);
    assert_contains(msg, loc);
    if (op && strchr(op, '|')) { /* either name */
        char a[64];
        snprintf(a, sizeof a, "%.*s", (int)(strchr(op, '|') - op), op);
        if (!contains(msg, a) && !contains(msg, strchr(op, '|') + 1))
            fail_msg("expected \"%s\" in message: %s", op, msg);
    } else if (op) {
        assert_contains(msg, op);
    }
    if (s1)
        assert_contains(msg, s1);
    if (s2)
        assert_contains(msg, s2);
    assert_contains(remat_last_error(), loc);
    remat_fn_clear_error(f);
    assert_int_equal(remat_fn_status(f), REMAT_OK);
}

static void expect_shape(const remat_fn *f, remat_val v, remat_dtype dt, int rank, const int64_t *dims)
{
    assert_true(v != REMAT_NONE);
    assert_int_equal(remat_val_dtype(f, v), dt);
    remat_shape s = remat_val_shape(f, v), want = shape_of(rank, dims);
    assert_true(remat_shape_equal(&s, &want));
}

static void test_ad_build_errors_name_op_shapes_and_caller_line(void **state)
{
    int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d45[2] = {4, 5}, d33[2] = {3, 3};
    remat_fn *f = remat_fn_new("bad");
    remat_val a = remat_arg(f, "a", REMAT_F32, 2, d23), b = remat_arg(f, "b", REMAT_F32, 2, d32);
    remat_val c = remat_arg(f, "c", REMAT_F32, 2, d45), e = remat_arg(f, "e", REMAT_F64, 2, d23);
    remat_val s = remat_arg(f, "s", REMAT_F32, 2, d33), v;
    remat_val t1 = remat_arg(f, "t1", REMAT_F32, 3, ((int64_t[]){2, 3, 4}));
    remat_val t2 = remat_arg(f, "t2", REMAT_F32, 3, ((int64_t[]){3, 4, 5}));
    remat_val r3 = remat_arg(f, "r3", REMAT_F32, 1, ((int64_t[]){3}));
    assert_fn_ok(f);
    int line;

    /* shape mismatches */
    v = remat_add(f, a, b); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "add", "f32[2,3]", "f32[3,2]");
    v = remat_matmul(f, a, c); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "matmul|dot_general", "f32[2,3]", "f32[4,5]");
    v = remat_matmul(f, a, t1); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "matmul", "f32[2,3]", "f32[2,3,4]");
    remat_dot_dims bd = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1},
                         .n_batch = 1, .lhs_batch = {0}, .rhs_batch = {0}};
    v = remat_dot_general(f, t1, t2, &bd); line = __LINE__; /* batch 2 vs 3 */
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "dot_general", "f32[2,3,4]", "f32[3,4,5]");
    remat_dot_dims cd = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    v = remat_dot_general(f, a, c, &cd); line = __LINE__; /* contract 3 vs 5 */
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "dot_general", "f32[2,3]", "f32[4,5]");
    v = remat_concatenate(f, 2, ((remat_val[]){a, s}), 1); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "concatenate", "f32[2,3]", "f32[3,3]");
    v = remat_reshape(f, a, 2, ((int64_t[]){4, 2})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "reshape", "f32[2,3]", "f32[4,2]");
    v = remat_broadcast_in_dim(f, r3, 2, ((int64_t[]){2, 4}), ((int[]){1})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "broadcast_in_dim", "f32[3]", NULL);
    v = remat_select(f, a, a, b); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_SHAPE, line, "select", "f32[2,3]", "f32[3,2]");

    /* dtype mismatches */
    v = remat_add(f, a, e); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "add", "f32[2,3]", "f64[2,3]");
    v = remat_mul(f, e, a); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "mul", "f64[2,3]", "f32[2,3]");
    v = remat_matmul(f, e, s); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "matmul|dot_general", "f64[2,3]", "f32[3,3]");
    v = remat_concatenate(f, 2, ((remat_val[]){a, e}), 0); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_DTYPE, line, "concatenate", "f32[2,3]", "f64[2,3]");

    /* bad axes */
    v = remat_sum(f, a, 1, ((int[]){2})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "reduce_sum", "f32[2,3]", NULL);
    v = remat_sum(f, a, 2, ((int[]){1, -1})); line = __LINE__; /* -1 is 1 again */
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "reduce_sum", "f32[2,3]", NULL);
    v = remat_transpose(f, a, ((int[]){0, 0})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "transpose", "f32[2,3]", NULL);
    v = remat_transpose(f, a, ((int[]){0, 2})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "transpose", "f32[2,3]", NULL);
    v = remat_slice(f, a, ((int64_t[]){0, 1}), ((int64_t[]){2, 4}), NULL); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "slice", "f32[2,3]", NULL);
    v = remat_slice(f, a, ((int64_t[]){1, 0}), ((int64_t[]){0, 3}), NULL); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "slice", "f32[2,3]", NULL);
    v = remat_concatenate(f, 2, ((remat_val[]){a, a}), 2); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "concatenate", "f32[2,3]", NULL);
    remat_dot_dims ad = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0}};
    v = remat_dot_general(f, a, s, &ad); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "dot_general", "f32[2,3]", NULL);
    v = remat_broadcast_in_dim(f, a, 3, ((int64_t[]){2, 3, 4}), ((int[]){0, 5})); line = __LINE__;
    expect_build_error(f, v, REMAT_ERR_AXIS, line, "broadcast_in_dim", "f32[2,3]", NULL);

    /* the first error wins; ops on REMAT_NONE stay quiet; valid ops keep working */
    v = remat_add(f, a, b); line = __LINE__;
    remat_val q = remat_sin(f, v);
    assert_int_equal(q, REMAT_NONE);
    q = remat_add(f, v, a);
    assert_int_equal(q, REMAT_NONE);
    v = remat_add(f, a, e); /* a second, different error: the function keeps the first */
    assert_int_equal(v, REMAT_NONE);
    assert_int_equal(remat_fn_status(f), REMAT_ERR_SHAPE);
    char first[64];
    snprintf(first, sizeof first, "test_ad.c:%d", line);
    assert_contains(remat_fn_error(f), first);
    assert_contains(remat_fn_error(f), "f32[3,2]");
    assert_contains(remat_last_error(), "f64[2,3]"); /* the thread's last error is the latest */
    remat_fn_clear_error(f);
    expect_shape(f, remat_matmul(f, a, s), REMAT_F32, 2, d23);
    expect_shape(f, remat_concatenate(f, 2, ((remat_val[]){a, a}), 0), REMAT_F32, 2, ((int64_t[]){4, 3}));
    expect_shape(f, remat_transpose(f, a, ((int[]){1, 0})), REMAT_F32, 2, d32);
    expect_shape(f, remat_sum(f, t1, 1, ((int[]){1})), REMAT_F32, 2, ((int64_t[]){2, 4}));
    expect_shape(f, remat_slice(f, a, ((int64_t[]){0, 1}), ((int64_t[]){2, 3}), NULL), REMAT_F32, 2,
                 ((int64_t[]){2, 2}));
    expect_shape(f, remat_broadcast_in_dim(f, r3, 2, ((int64_t[]){2, 3}), ((int[]){1})), REMAT_F32, 2, d23);
    expect_shape(f, remat_dot_general(f, t1, t1, &((remat_dot_dims){.n_contract = 1, .lhs_contract = {2},
                                                                     .rhs_contract = {2}, .n_batch = 1,
                                                                     .lhs_batch = {0}, .rhs_batch = {0}})),
                 REMAT_F32, 3, ((int64_t[]){2, 3, 3}));
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, a, a)));
    remat_fn *g = grad_ok(f, 1, ((int[]){0})); /* usable end to end */
    remat_fn_free(g);

    /* a function holding an error is refused by the transforms and the compiler */
    v = remat_add(f, a, b); line = __LINE__;
    remat_program *p = (remat_program *)0x1;
    g = (remat_fn *)0x1;
    assert_int_equal(remat_grad(f, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_null(g);
    assert_int_equal(remat_compile(f, remat_backend_cpu(), &p), REMAT_ERR_SHAPE);
    assert_null(p);
    assert_null(remat_checkpoint(f, NULL));
    remat_fn_free(f);
}

static void test_ad_run_rejects_bad_inputs_and_leaves_outputs_untouched(void **state)
{
    int64_t d2[1] = {2}, d3[1] = {3};
    remat_fn *f = remat_fn_new("sig");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, d2), y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, x), remat_sum_all(f, y)));
    remat_fn_output(f, remat_mul_scalar(f, y, 2.0));
    remat_program *p = compile_ok(f);
    double xv[3] = {1, 2, 3}, yv[3] = {10, 20, 30}, out0 = 12345.0, out1[3] = {7, 7, 7};
    float xf[2] = {1, 2};
    remat_tensor good[2] = {remat_tensor_f64(xv, 1, d2), remat_tensor_f64(yv, 1, d3)};
    remat_tensor outs[2] = {remat_tensor_f64(&out0, 0, NULL), remat_tensor_f64(out1, 1, d3)};
    const struct {
        remat_tensor in[2];
        int n_in;
        remat_tensor out[2];
        int n_out;
        remat_status st;
        const char *needle[3];
    } bad[] = {
        {{good[0]}, 1, {outs[0], outs[1]}, 2, REMAT_ERR_ARG, {"1 inputs", "takes 2"}},
        {{good[0], good[1]}, 2, {outs[0]}, 1, REMAT_ERR_ARG, {"1 outputs", "takes 2"}},
        {{remat_tensor_f64(xv, 1, d3), good[1]}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_SHAPE, {"'x'", "f64[3]", "f64[2]"}},
        {{good[0], remat_tensor_f64(yv, 1, d2)}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_SHAPE, {"'y'", "f64[2]", "f64[3]"}},
        {{remat_tensor_f32(xf, 1, d2), good[1]}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_DTYPE, {"'x'", "f32[2]", "f64[2]"}},
        {{remat_tensor_f64(NULL, 1, d2), good[1]}, 2, {outs[0], outs[1]}, 2, REMAT_ERR_NULL, {"'x'", "NULL"}},
        {{good[0], good[1]}, 2, {outs[0], remat_tensor_f64(out1, 1, d2)}, 2, REMAT_ERR_SHAPE, {"output", "f64[2]", "f64[3]"}},
        {{good[0], good[1]}, 2, {outs[0], remat_tensor_f64(NULL, 1, d3)}, 2, REMAT_ERR_NULL, {"output", "NULL"}},
        {{good[0], good[1]}, 2, {remat_tensor_f32((float *)&out0, 0, NULL), outs[1]}, 2, REMAT_ERR_DTYPE, {"output", "f32[]", "f64[]"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remat_stats st;
        remat_clear_error();
        remat_status s = remat_run(p, bad[i].n_in, bad[i].in, bad[i].n_out, (remat_tensor *)bad[i].out, &st);
        if (s != bad[i].st)
            fail_msg("bad run %zu: status %s, want %s (%s)", i, remat_status_name(s), remat_status_name(bad[i].st),
                     remat_last_error());
        for (int k = 0; k < 3 && bad[i].needle[k]; k++)
            assert_contains(remat_last_error(), bad[i].needle[k]);
        assert_true(out0 == 12345.0);
        assert_true(out1[0] == 7 && out1[1] == 7 && out1[2] == 7);
    }
    assert_int_equal(remat_run(p, 2, NULL, 2, outs, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_run(p, 2, good, 2, NULL, NULL), REMAT_ERR_NULL);
    assert_true(out0 == 12345.0);
    /* and the program still runs (stats may be NULL) */
    assert_int_equal(remat_run(p, 2, good, 2, outs, NULL), REMAT_OK);
    assert_true(out0 == 63.0);
    assert_true(out1[0] == 20 && out1[1] == 40 && out1[2] == 60);
    remat_program_free(p);
    remat_fn_free(f);
}

static bool any_policy(const remat_op_info *op, void *ctx) { return true; }

static void test_ad_null_handles_are_refused_without_crashing(void **state)
{
    remat_fn *f = remat_fn_new("ok"), *out = (remat_fn *)0x1;
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){2}));
    remat_fn_output(f, remat_sum_all(f, x));
    remat_program *p = (remat_program *)0x1;
    remat_residual_list *r = (remat_residual_list *)0x1;

    assert_int_equal(remat_grad(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_null(out);
    out = (remat_fn *)0x1;
    assert_int_equal(remat_vjp(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_null(out);
    out = (remat_fn *)0x1;
    assert_int_equal(remat_value_and_grad(NULL, 0, NULL, &out), REMAT_ERR_NULL);
    assert_null(out);
    assert_int_equal(remat_grad(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_vjp(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_value_and_grad(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_grad(f, 1, NULL, &out), REMAT_ERR_ARG); /* argnums NULL with n = 1 */
    assert_int_equal(remat_grad(f, 1, ((int[]){1}), &out), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "argnum 1");
    assert_int_equal(remat_grad(f, -1, NULL, &out), REMAT_ERR_ARG);

    assert_int_equal(remat_compile(NULL, remat_backend_cpu(), &p), REMAT_ERR_NULL);
    assert_null(p);
    p = (remat_program *)0x1;
    assert_int_equal(remat_compile(f, NULL, &p), REMAT_ERR_NULL);
    assert_null(p);
    assert_int_equal(remat_compile(f, remat_backend_cpu(), NULL), REMAT_ERR_NULL);
    double v = 0;
    remat_tensor t = remat_tensor_f64(&v, 0, NULL);
    assert_int_equal(remat_run(NULL, 1, &t, 1, &t, NULL), REMAT_ERR_NULL);
    remat_program_free(NULL);
    remat_program_plan(NULL, NULL);
    assert_int_equal(remat_program_num_inputs(NULL), 0);
    assert_int_equal(remat_program_num_outputs(NULL), 0);
    assert_non_null(remat_backend_name(remat_backend_cpu()));

    assert_int_equal(remat_saved_residuals(NULL, 0, NULL, &r), REMAT_ERR_NULL);
    assert_null(r);
    r = (remat_residual_list *)0x1;
    assert_int_equal(remat_fn_residuals(NULL, &r), REMAT_ERR_NULL);
    assert_null(r);
    assert_int_equal(remat_saved_residuals(f, 0, NULL, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_fn_residuals(f, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_residual_list_count(NULL), 0);
    assert_null(remat_residual_list_get(NULL, 0));
    assert_int_equal(remat_residual_list_bytes(NULL), 0);
    remat_residual_list_print(NULL, stdout);
    remat_residual_list_free(NULL);

    remat_fn_free(NULL);
    assert_null(remat_fn_ref(NULL));
    assert_int_equal(remat_fn_status(NULL), REMAT_ERR_NULL);
    assert_string_equal(remat_fn_error(NULL), "");
    remat_fn_clear_error(NULL);
    remat_fn_print(NULL, stdout);
    assert_int_equal(remat_fn_num_args(NULL), 0);
    assert_int_equal(remat_fn_num_outputs(NULL), 0);
    assert_int_equal(remat_fn_num_nodes(NULL), 0);
    assert_int_equal(remat_fn_arg(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_fn_out(NULL, 0), REMAT_NONE);
    assert_null(remat_fn_arg_name(NULL, 0));
    assert_non_null(remat_fn_name(NULL));
    assert_int_equal(remat_arg(NULL, "x", REMAT_F32, 0, NULL), REMAT_NONE);
    assert_int_equal(remat_scalar(NULL, REMAT_F32, 1.0), REMAT_NONE);
    assert_int_equal(remat_add(NULL, 0, 0), REMAT_NONE);
    assert_int_equal(remat_sin(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_sum_all(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_matmul(NULL, 0, 0), REMAT_NONE);
    assert_int_equal(remat_name(NULL, 0, "n"), REMAT_NONE);
    assert_int_equal(remat_fn_output(NULL, 0), REMAT_NONE);
    assert_int_equal(remat_custom(NULL, &xsin_op, 0, NULL, REMAT_F32, 0, NULL), REMAT_NONE);
    remat_val o1;
    assert_int_equal(remat_call(NULL, f, 1, &x, &o1), REMAT_ERR_NULL);
    assert_int_equal(remat_call1(NULL, f, 1, &x), REMAT_NONE);

    remat_fn *h = remat_fn_new("caller");
    remat_val hx = remat_arg(h, "x", REMAT_F64, 1, ((int64_t[]){2})), o;
    int line;
    o = remat_call1(h, NULL, 1, &hx); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "call", NULL, NULL);
    o = remat_custom(h, NULL, 1, &hx, REMAT_F64, 1, ((int64_t[]){2})); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "custom", NULL, NULL);
    o = remat_call1(h, f, 1, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "call", NULL, NULL);
    o = remat_name(h, hx, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_ARG, line, "checkpoint_name", NULL, NULL);
    o = remat_transpose(h, hx, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "transpose", NULL, NULL);
    o = remat_dot_general(h, hx, hx, NULL); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_NULL, line, "dot_general", NULL, NULL);
    o = remat_call1(h, f, 1, ((remat_val[]){remat_convert(h, hx, REMAT_F32)})); line = __LINE__;
    expect_build_error(h, o, REMAT_ERR_DTYPE, line, "call", "f32[2]", "f64[2]");
    assert_int_equal(remat_fn_num_outputs(h), 0);
    remat_fn_free(h);

    assert_null(remat_checkpoint(NULL, remat_nothing_saveable));
    assert_null(remat_policy_new("x", NULL, NULL, NULL));
    assert_null(remat_policy_save_from_both(NULL, remat_dots_saveable));
    assert_null(remat_policy_save_from_both(remat_dots_saveable, NULL));
    assert_null(remat_policy_save_only_these_names(1, NULL));
    assert_null(remat_policy_save_any_names_but_these(-1, NULL));
    assert_null(remat_policy_ref(NULL));
    remat_policy_free(NULL);
    remat_policy_free((remat_policy *)remat_dots_saveable); /* built-ins are immortal */
    assert_string_equal(remat_policy_label(remat_dots_saveable), "dots_saveable");
    assert_non_null(remat_policy_label(NULL));
    /* a policy outlives its creator's reference while a region holds it */
    remat_policy *pol = remat_policy_new("any", any_policy, NULL, NULL);
    remat_fn *ck = remat_checkpoint(f, pol);
    remat_policy_free(pol);
    assert_int_equal(remat_grad(ck, 0, NULL, &out), REMAT_OK);
    remat_fn_free(out);
    remat_fn_free(ck);
    remat_fn_free(f);
}

static void test_ad_grad_of_non_scalar_function_is_a_clear_error(void **state)
{
    remat_fn *f = remat_fn_new("vec");
    remat_val x = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){2, 3}));
    remat_fn_output(f, remat_sin(f, x));
    remat_fn *g = (remat_fn *)0x1;
    assert_int_equal(remat_grad(f, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_null(g);
    assert_contains(remat_last_error(), "scalar");
    assert_contains(remat_last_error(), "f32[2,3]");
    assert_contains(remat_last_error(), "vec");
    assert_int_equal(remat_value_and_grad(f, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "f32[2,3]");
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK); /* vjp is fine */
    remat_fn_free(g);
    /* two scalar outputs are not one */
    remat_fn_output(f, remat_sum_all(f, x));
    remat_fn *f2 = remat_fn_new("two");
    remat_val y = remat_arg(f2, "y", REMAT_F32, 0, NULL);
    remat_fn_output(f2, y);
    remat_fn_output(f2, remat_sin(f2, y));
    assert_int_equal(remat_grad(f2, 0, NULL, &g), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "2 output");
    /* no outputs at all */
    remat_fn *f3 = remat_fn_new("none");
    remat_arg(f3, "z", REMAT_F32, 0, NULL);
    assert_int_equal(remat_grad(f3, 0, NULL, &g), REMAT_ERR_ARG);
    assert_contains(remat_last_error(), "no outputs");
    remat_fn_free(f3), remat_fn_free(f2), remat_fn_free(f);
}

/* ==== 6. vjp and value_and_grad: output order, argnums, unused arguments ==== */

static void test_ad_vjp_outputs_order_and_argnums(void **state)
{
    int64_t d3[1] = {3}, d2[1] = {2};
    /* f(x, y, z) = (x * y, sum(sin x)); z unused */
    remat_fn *f = remat_fn_new("two_out");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, d3), y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_arg(f, "z", REMAT_F64, 1, d2);
    remat_fn_output(f, remat_mul(f, x, y));
    remat_fn_output(f, remat_sum_all(f, remat_sin(f, x)));
    int nodes = remat_fn_num_nodes(f);
    double xv[3] = {0.3, -1.2, 2.0}, yv[3] = {1.5, 0.25, -0.75}, zv[2] = {4, 5}, ct0[3] = {1, -2, 0.5}, ct1 = 3.0;
    remat_tensor in[5] = {remat_tensor_f64(xv, 1, d3), remat_tensor_f64(yv, 1, d3), remat_tensor_f64(zv, 1, d2),
                          remat_tensor_f64(ct0, 1, d3), remat_tensor_f64(&ct1, 0, NULL)};

    /* argnums {2, 0}: outputs (x*y, sum sin x, dz, dx) */
    remat_fn *g = NULL;
    assert_int_equal(remat_vjp(f, 2, ((int[]){2, 0}), &g), REMAT_OK);
    assert_int_equal(remat_fn_num_nodes(f), nodes); /* f untouched */
    assert_int_equal(remat_fn_num_args(g), 5);
    assert_int_equal(remat_fn_num_outputs(g), 4);
    remat_program *p = compile_ok(g);
    assert_int_equal(remat_program_num_inputs(p), 5);
    for (int i = 0; i < 5; i++) {
        remat_tensor dsc = remat_program_input_desc(p, i);
        assert_int_equal(dsc.dtype, REMAT_F64);
        assert_true(remat_shape_equal(&dsc.shape, &in[i].shape));
    }
    outs_t o;
    run_prog(p, 5, in, &o, NULL);
    remat_program_free(p);
    assert_int_equal(o.n, 4);
    assert_int_equal(o.t[1].shape.rank, 0);
    assert_true(remat_shape_equal(&o.t[2].shape, &in[2].shape));
    assert_true(remat_shape_equal(&o.t[3].shape, &in[0].shape));
    double s = 0;
    for (int i = 0; i < 3; i++) {
        assert_true(((double *)o.t[0].data)[i] == xv[i] * yv[i]);
        s += sin(xv[i]);
        double want = ct0[i] * yv[i] + ct1 * cos(xv[i]);
        assert_true(fabs(((double *)o.t[3].data)[i] - want) <= 1e-15 * (1 + fabs(want)));
    }
    assert_true(fabs(*(double *)o.t[1].data - s) <= 1e-15 * 3);
    assert_true(((double *)o.t[2].data)[0] == 0.0 && ((double *)o.t[2].data)[1] == 0.0); /* unused: zeros */
    outs_free(&o);
    remat_fn_free(g);

    /* all arguments: (x*y, sum sin x, dx, dy, dz) */
    assert_int_equal(remat_vjp(f, 0, NULL, &g), REMAT_OK);
    run_fn(g, 5, in, &o, NULL, NULL);
    assert_int_equal(o.n, 5);
    for (int i = 0; i < 3; i++) {
        double want = ct0[i] * yv[i] + ct1 * cos(xv[i]);
        assert_true(fabs(((double *)o.t[2].data)[i] - want) <= 1e-15 * (1 + fabs(want)));
        assert_true(((double *)o.t[3].data)[i] == ct0[i] * xv[i]);
    }
    assert_true(((double *)o.t[4].data)[0] == 0.0 && ((double *)o.t[4].data)[1] == 0.0);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);

    /* value_and_grad of h(x, y, z) = sum(x * y) + sum(sin x): (value, dy, dz) */
    f = remat_fn_new("scalar");
    x = remat_arg(f, "x", REMAT_F64, 1, d3), y = remat_arg(f, "y", REMAT_F64, 1, d3);
    remat_arg(f, "z", REMAT_F64, 1, d2);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_mul(f, x, y)), remat_sum_all(f, remat_sin(f, x))));
    assert_int_equal(remat_value_and_grad(f, 2, ((int[]){1, 2}), &g), REMAT_OK);
    assert_int_equal(remat_fn_num_args(g), 3); /* no cotangent argument */
    run_fn(g, 3, in, &o, NULL, NULL);
    assert_int_equal(o.n, 3);
    double val = 0;
    for (int i = 0; i < 3; i++)
        val += xv[i] * yv[i];
    val += s;
    assert_true(fabs(*(double *)o.t[0].data - val) <= 1e-14);
    for (int i = 0; i < 3; i++)
        assert_true(((double *)o.t[1].data)[i] == xv[i]);
    assert_true(((double *)o.t[2].data)[0] == 0.0 && ((double *)o.t[2].data)[1] == 0.0);
    outs_free(&o);
    remat_fn_free(g);
    /* grad with a repeated argnum: the same gradient twice */
    g = grad_ok(f, 2, ((int[]){1, 1}));
    run_fn(g, 3, in, &o, NULL, NULL);
    assert_int_equal(o.n, 2);
    assert_memory_equal(o.t[0].data, o.t[1].data, 3 * sizeof(double));
    outs_free(&o);
    remat_fn_free(g);
    /* grad of the unused argument alone */
    g = grad_ok(f, 1, ((int[]){2}));
    run_fn(g, 3, in, &o, NULL, NULL);
    assert_int_equal(o.n, 1);
    assert_true(((double *)o.t[0].data)[0] == 0.0 && ((double *)o.t[0].data)[1] == 0.0);
    outs_free(&o);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* ---- main ---- */

static int free_goldens(void **state)
{
    for (int i = 0; i < 4; i++) {
        cJSON_Delete(golden_docs[i]);
        golden_docs[i] = NULL;
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ad_ops_value_and_vjp_match_jax),
        cmocka_unit_test(test_ad_ties_and_relu_at_zero_follow_jax),
        cmocka_unit_test(test_ad_pad_negative_is_rejected),
        cmocka_unit_test(test_ad_dot_general_matches_jax),
        cmocka_unit_test(test_ad_every_primitive_matches_finite_differences),
        cmocka_unit_test(test_ad_dot_general_matches_finite_differences),
        cmocka_unit_test(test_ad_convert_value_vjp_and_finite_differences),
        cmocka_unit_test(test_ad_name_is_identity_for_values_and_cotangents),
        cmocka_unit_test(test_ad_custom_op_gradient_and_finite_differences),
        cmocka_unit_test(test_ad_custom_op_without_vjp_fails_at_grad_time),
        cmocka_unit_test(test_ad_residuals_block_net_match_jax),
        cmocka_unit_test(test_ad_residuals_policies_match_jax),
        cmocka_unit_test(test_ad_residuals_batched_and_nd_dots_match_jax),
        cmocka_unit_test(test_ad_residuals_hierarchical_match_jax),
        cmocka_unit_test(test_ad_seed_gradients_match_jax),
        cmocka_unit_test(test_ad_policies_leave_mlp_gradients_bitwise_identical),
        cmocka_unit_test(test_ad_policies_leave_nested_region_gradients_bitwise_identical),
        cmocka_unit_test(test_ad_nothing_saveable_recomputes_and_saves_less),
        cmocka_unit_test(test_ad_nested_regions_recompute_where_each_region_policy_says),
        cmocka_unit_test(test_ad_predicted_arena_equals_measured_peak),
        cmocka_unit_test(test_ad_build_errors_name_op_shapes_and_caller_line),
        cmocka_unit_test(test_ad_run_rejects_bad_inputs_and_leaves_outputs_untouched),
        cmocka_unit_test(test_ad_null_handles_are_refused_without_crashing),
        cmocka_unit_test(test_ad_grad_of_non_scalar_function_is_a_clear_error),
        cmocka_unit_test(test_ad_vjp_outputs_order_and_argnums),
    };
    rng_seed(0x2545f4914f6cdd1dull);
    return cmocka_run_group_tests(tests, NULL, free_goldens);
}
