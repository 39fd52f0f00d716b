/*
 * test_golden.h — reading the JAX 0.10.2 goldens of tests/goldens/ (written by
 * tools/goldens/gen_goldens.py; ops_nn.json by gen_ops_nn_goldens.py; nn_random.json
 * and nn_flax.json by gen_nn_goldens.py) for the test files that compare with
 * them. The directory comes from $REMAT_GOLDENS, which tests/meson.build sets.
 * A file is parsed on first use and kept until golden_free_all, the group
 * teardown of every file that reads goldens.
 *
 *   const cJSON *c = golden_case("ops.json", "add");
 *   jarr x = jarr_get(cJSON_GetArrayItem(jget(c, "inputs"), 0));
 *   remat_tensor t = jarr_tensor(&x);
 *   ...
 *   free(x.data);
 *
 *   return cmocka_run_group_tests(tests, NULL, golden_free_all);
 */
#ifndef REMAT_TEST_GOLDEN_H
#define REMAT_TEST_GOLDEN_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "remat/remat.h"

/* the parsed document of one of ops.json, dot_general.json, residuals.json,
 * gradients.json, ops_nn.json, nn_random.json, nn_flax.json, jvp.json,
 * linear_solve.json, adaptive.json (gen_adaptive_goldens.py), cantera_h2o2.json and
 * cantera_gri30.json (gen_cantera_goldens.py), backsolve.json (gen_backsolve_goldens.py), netterm.json
 * (gen_netterm_goldens.py), offload_residuals.json (gen_offload_goldens.py), cantera_rev.json
 * (gen_rev_goldens.py) */
cJSON *golden(const char *file);

/* the entry of file's "cases" whose "name" is name */
const cJSON *golden_case(const char *file, const char *name);

/* o[key]; a missing key fails the test */
const cJSON *jget(const cJSON *o, const char *key);

/* a JSON array of at most max integers into out; returns the count */
int jints(const cJSON *a, int64_t *out, int max);
int jints32(const cJSON *a, int *out, int max);

/* a golden array {"shape", "dtype", "data"}: data as doubles (bools as 1/0) */
typedef struct {
    remat_shape shape;
    int64_t n;
    double *data;
} jarr;

/* the caller frees a.data */
jarr jarr_get(const cJSON *o);

/* an f64 tensor over a's data */
remat_tensor jarr_tensor(jarr *a);

/* cmocka group teardown: frees every parsed document */
int golden_free_all(void **state);

#endif
