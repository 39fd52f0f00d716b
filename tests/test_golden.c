/*
 * test_golden.c — the goldens reader of test_golden.h.
 */
#include "test_golden.h"

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_GOLDEN = 16 };
static cJSON *golden_docs[N_GOLDEN];
static const char *const golden_names[N_GOLDEN] = {"ops.json", "dot_general.json", "residuals.json", "gradients.json",
                                                   "ops_nn.json", "nn_random.json", "nn_flax.json", "jvp.json",
                                                   "linear_solve.json", "adaptive.json",
                                                   "cantera_h2o2.json", "cantera_gri30.json", "backsolve.json", "netterm.json",
                                                   "offload_residuals.json", "cantera_rev.json"};

cJSON *golden(const char *file)
{
    int k = 0;
    while (k < N_GOLDEN && strcmp(golden_names[k], file))
        k++;
    assert_true(k < N_GOLDEN);
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

const cJSON *golden_case(const char *file, const char *name)
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

const cJSON *jget(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("golden: key '%s' missing", key);
    return v;
}

int jints(const cJSON *a, int64_t *out, int max)
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

int jints32(const cJSON *a, int *out, int max)
{
    int64_t t[REMAT_MAX_RANK * 2];
    int n = jints(a, t, max);
    for (int i = 0; i < n; i++)
        out[i] = (int)t[i];
    return n;
}

jarr jarr_get(const cJSON *o)
{
    jarr a;
    int64_t dims[REMAT_MAX_RANK];
    int r = jints(jget(o, "shape"), dims, REMAT_MAX_RANK);
    a.shape = remat_shape_make(r, dims);
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

remat_tensor jarr_tensor(jarr *a) { return remat_tensor_f64(a->data, a->shape.rank, a->shape.dims); }

int golden_free_all(void **state)
{
    (void)state;
    for (int i = 0; i < N_GOLDEN; i++) {
        cJSON_Delete(golden_docs[i]);
        golden_docs[i] = NULL;
    }
    return 0;
}
