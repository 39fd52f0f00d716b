/*
 * test_util.c — the shared test helpers of test_util.h.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- random numbers ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void rng_seed(uint64_t seed) { rng_state = seed; }

uint64_t rng_next(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state;
}

double urand(double lo, double hi) { return lo + (hi - lo) * (double)(rng_next() >> 11) * 0x1.0p-53; }

/* ---- allocation ---- */

void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    assert_non_null(p);
    return p;
}

size_t tbytes(remat_dtype dt, const remat_shape *s) { return (size_t)remat_shape_numel(s) * remat_dtype_size(dt); }

/* ---- assertions ---- */

int contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

void assert_printed(const char *fmt, double v, const char *want)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    if (strcmp(buf, want))
        fail_msg("%.17g prints as %s with %s, the seed prints %s", v, buf, fmt, want);
}

void check_close(const char *what, int64_t n, const double *got, const double *want, double rtol, double atol)
{
    for (int64_t i = 0; i < n; i++) {
        const double g = got[i], w = want[i];
        if ((isnan(w) && isnan(g)) || g == w || fabs(g - w) <= atol + rtol * fabs(w))
            continue;
        fail_msg("%s[%lld]: got %.17g, want %.17g (diff %.3g)", what, (long long)i, g, w, fabs(g - w));
    }
}

const seed_adam_row seed_adam_table[SEED_ADAM_ROWS] = {
    {0, "0.4000", "0.2000", "0.107273"},  {10, "0.6240", "0.0100", "0.917683"},
    {20, "0.8598", "0.0100", "0.915442"}, {30, "0.9231", "0.0100", "0.914671"},
    {40, "0.9187", "0.0100", "0.914670"}, {49, "0.8885", "0.0100", "0.914955"},
};
const seed_adam_row seed_adam_final = {50, "0.8885", "0.0100", "0.914998"};

void assert_seed_adam(const seed_adam_row *r, double k1, double k2, double cb)
{
    assert_printed("%.4f", k1, r->k1);
    assert_printed("%.4f", k2, r->k2);
    assert_printed("%.6f", cb, r->cb);
}

/* ---- files ---- */

void write_temp(char *path, size_t cap, const char *prefix, const void *bytes, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, cap, "%s/%sXXXXXX", dir ? dir : "/tmp", prefix);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    close(fd);
}

/* ---- building, differentiating, compiling, running ---- */

remat_mechanism *parse(const char *text)
{
    remat_mechanism *m = NULL;
    if (remat_mechanism_parse_string(text, "test.mech", &m) != REMAT_OK)
        fail_msg("parse: %s", remat_last_error());
    return m;
}

remat_schedule_spec spec_of(const char *text)
{
    remat_schedule_spec s;
    if (remat_schedule_parse(text, &s) != REMAT_OK)
        fail_msg("schedule '%s': %s", text, remat_last_error());
    return s;
}

void assert_fn_ok(const remat_fn *f)
{
    if (remat_fn_status(f) != REMAT_OK)
        fail_msg("build of '%s' failed: %s", remat_fn_name(f), remat_fn_error(f));
}

remat_fn *ad_ok(ad_kind k, const remat_fn *f, int n, const int *argnums)
{
    remat_fn *g = NULL;
    remat_status st = k == AD_GRAD ? remat_grad(f, n, argnums, &g)
                      : k == AD_VJP ? remat_vjp(f, n, argnums, &g)
                                    : remat_value_and_grad(f, n, argnums, &g);
    if (st != REMAT_OK)
        fail_msg("reverse mode of '%s' failed: %s", remat_fn_name(f), remat_last_error());
    return g;
}

remat_fn *grad_ok(const remat_fn *f, int n, const int *argnums) { return ad_ok(AD_GRAD, f, n, argnums); }

remat_backend *remat_test_backend(void)
{
    static remat_backend *be;
    if (be)
        return be;
    const char *name = getenv("REMAT_BACKEND");
    if (!(be = remat_backend_from_name(name))) {
        printf("SKIP: REMAT_BACKEND=%s: %s\n", name ? name : "", remat_last_error());
        fflush(stdout);
        exit(77);
    }
    return be;
}

remat_program *compile_ok(const remat_fn *f)
{
    assert_fn_ok(f);
    remat_program *p = NULL;
    if (remat_compile(f, remat_test_backend(), &p) != REMAT_OK)
        fail_msg("compile of '%s' failed: %s", remat_fn_name(f), remat_last_error());
    return p;
}

void outs_free(outs_t *o)
{
    for (int i = 0; i < o->n; i++) {
        free(o->t[i].data);
        o->t[i].data = NULL;
    }
    o->n = 0;
}

void run_prog(remat_program *p, int n_in, const remat_tensor *in, outs_t *o, remat_stats *st)
{
    o->n = remat_program_num_outputs(p);
    assert_true(o->n <= MAXO);
    for (int i = 0; i < o->n; i++) {
        o->t[i] = remat_program_output_desc(p, i);
        size_t b = tbytes(o->t[i].dtype, &o->t[i].shape);
        o->t[i].data = xcalloc(1, b);
        memset(o->t[i].data, 0xAB, b);
    }
    if (remat_run(p, n_in, in, o->n, o->t, st) != REMAT_OK)
        fail_msg("run failed: %s", remat_last_error());
}

void run_fn(const remat_fn *f, int n_in, const remat_tensor *in, outs_t *o, remat_stats *st,
            remat_memory_plan *plan)
{
    remat_program *p = compile_ok(f);
    if (plan)
        remat_program_plan(p, plan);
    run_prog(p, n_in, in, o, st);
    remat_program_free(p);
}
