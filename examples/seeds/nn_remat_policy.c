/*
 * nn_remat_policy.c — seed 002: Flax nn.remat of an MLP module class with a
 * checkpoint policy, seeded default initialisation.
 *
 *   class MLP(nn.Module):
 *       features: int
 *       @nn.compact
 *       def __call__(self, x):
 *           x = nn.relu(nn.Dense(self.features)(x))
 *           x = nn.relu(nn.Dense(self.features)(x))
 *           return nn.Dense(self.features)(x)
 *   RematMLP = nn.remat(MLP, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
 *   model = RematMLP(features=F)
 *   variables = model.init(jax.random.PRNGKey(seed), x)
 *   output = model.apply(variables, x).ravel()
 *
 * Usage: nn_remat_policy SEED FEATURES X1 X2 ... XD
 * prints the F outputs, one per line (%.9g). SEED and FEATURES may be
 * written as floats ("7.0"); SEED is a non-negative integer, FEATURES a
 * positive one, every X finite (as float32).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <remat/remat.h>

#define MAX_FEATURES 1000000

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "nn_remat_policy: %s", msg);
    if (arg)
        fprintf(stderr, " '%s'", arg);
    fprintf(stderr, "\nusage: nn_remat_policy SEED FEATURES X1 [X2 ...]\n");
    return 2;
}

/* a finite number, all of the text */
static int parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return end != s && *end == 0 && errno != ERANGE && isfinite(*out);
}

/* an integer-valued number in [lo, hi] ("3", "3.0", "3e0") */
static int parse_integer(const char *s, double lo, double hi, double *out)
{
    return parse_number(s, out) && *out == floor(*out) && *out >= lo && *out <= hi;
}

static int run(uint64_t seed, int64_t features, int64_t d, const float *x)
{
    int rc = 1;
    remat_nn_module *mlp = remat_nn_mlp(features, 3, REMAT_NN_RELU);
    remat_nn_module *net = mlp ? remat_nn_remat(mlp, remat_dots_with_no_batch_dims_saveable) : NULL;
    remat_nn_params *p = NULL;
    remat_fn *f = NULL;
    remat_program *prog = NULL;
    remat_val *pv = NULL;
    remat_tensor *in = NULL;
    float *y = NULL;
    if (!net || remat_nn_init(net, remat_prng_key_from_seed(seed), REMAT_F32, 1, &d, &p) != REMAT_OK)
        goto done;
    int np = remat_nn_params_count(p);
    pv = calloc((size_t)np, sizeof *pv);
    in = calloc((size_t)np + 1, sizeof *in);
    y = calloc((size_t)features, sizeof *y);
    if (!pv || !in || !y) {
        fprintf(stderr, "nn_remat_policy: out of memory\n");
        goto done;
    }
    f = remat_fn_new("nn_remat_policy");
    remat_val xv = remat_arg(f, "x", REMAT_F32, 1, &d), out;
    if (remat_nn_params_args(f, p, pv) != REMAT_OK || remat_nn_apply(net, f, xv, pv, &out) != REMAT_OK)
        goto done;
    remat_fn_output(f, out);
    if (remat_fn_status(f) != REMAT_OK || remat_compile_env(f, &prog) != REMAT_OK)
        goto done;
    in[0] = remat_tensor_f32((float *)x, 1, &d);
    for (int i = 0; i < np; i++)
        in[i + 1] = remat_nn_params_tensor(p, i);
    remat_tensor t = remat_tensor_f32(y, 1, &features);
    if (remat_run(prog, np + 1, in, 1, &t, NULL) != REMAT_OK)
        goto done;
    for (int64_t i = 0; i < features; i++)
        printf("%.9g\n", (double)y[i]);
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "nn_remat_policy: %s\n", remat_last_error());
    free(y);
    free(in);
    free(pv);
    remat_program_free(prog);
    remat_fn_free(f);
    remat_nn_params_free(p);
    remat_nn_module_free(net);
    remat_nn_module_free(mlp);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return usage("needs a seed, a feature count and at least one x", NULL);
    double seed, features;
    if (!parse_integer(argv[1], 0, 9007199254740992.0, &seed))
        return usage("SEED must be a non-negative integer (at most 2^53), got", argv[1]);
    if (!parse_integer(argv[2], 1, MAX_FEATURES, &features))
        return usage("FEATURES must be a positive integer (at most 1000000), got", argv[2]);
    int64_t d = argc - 3;
    float *x = malloc((size_t)d * sizeof *x);
    if (!x)
        return usage("out of memory", NULL);
    for (int64_t i = 0; i < d; i++) {
        double v;
        if (!parse_number(argv[3 + i], &v) || !isfinite((float)v)) {
            free(x);
            return usage("every X must be a finite float32 number, got", argv[3 + i]);
        }
        x[i] = (float)v;
    }
    int rc = run((uint64_t)seed, (int64_t)features, d, x);
    free(x);
    return rc;
}
