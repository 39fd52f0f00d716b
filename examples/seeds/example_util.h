/*
 * example_util.h — what the seed examples do alike, so that each of them
 * shows only its model: compile-and-run on the CPU backend, the gradient of
 * a one-argument f64 function at x = ones(n), checks of the numbers against
 * the seed's, and the exit status. Header-only: an example and this file are
 * all a user needs to copy.
 *
 *   double dx[N];
 *   if (example_grad_at_ones(loss, N, dx, NULL, NULL))   // jax.grad(loss)(jnp.ones(N))
 *       return 1;
 *   example_check("gradient norm", example_norm2(dx, N), 5.740764583505294e-09, 1e-10);
 *   return example_finish("deep_sin");                  // 1 if a check failed
 */
#ifndef REMAT_EXAMPLE_UTIL_H
#define REMAT_EXAMPLE_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <remat/remat.h>

#if defined(__GNUC__)
#define EXAMPLE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define EXAMPLE_PRINTF(f, a)
#endif

/* checks failed so far; example_finish turns the count into the exit status */
static int example_failures;

/* a failed check: "FAIL <message>" on stderr, counted */
static inline EXAMPLE_PRINTF(1, 2) void example_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    example_failures++;
}

/* got against the seed's value want, relative tolerance rel_tol
 * (1e-6 for f32 results, 1e-10 for f64 ones in these examples) */
static inline void example_check(const char *what, double got, double want, double rel_tol)
{
    double err = fabs(got - want) / fmax(fabs(want), 1e-300);
    if (!(err <= rel_tol))
        example_fail("%s: got %.17g, expected %.17g (rel. error %.3g)", what, got, want, err);
}

/* prints "name = [v0, v1, ...]" and checks every entry against want */
static inline void example_print_check_f32(const char *name, const float *v, int n, double want, double rel_tol)
{
    printf("%s = [", name);
    for (int i = 0; i < n; i++) {
        printf("%s%.17g", i ? ", " : "", (double)v[i]);
        example_check(name, v[i], want, rel_tol);
    }
    printf("]\n");
}

/* Euclidean norm (jnp.linalg.norm of a vector) */
static inline double example_norm2(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i] * v[i];
    return sqrt(s);
}

/* remat_last_error() after where; returns 1, the exit status */
static inline int example_die(const char *where)
{
    fprintf(stderr, "%s: %s\n", where, remat_last_error());
    return 1;
}

/* non-zero (after printing why) when building f went wrong */
static inline int example_build_failed(const remat_fn *f)
{
    if (remat_fn_status(f) == REMAT_OK)
        return 0;
    fprintf(stderr, "build %s: %s\n", remat_fn_name(f), remat_fn_error(f));
    return 1;
}

/* Compiles f for the CPU backend, runs it once and frees the program. st and
 * plan (the program's memory plan) may be NULL. Returns 0, or 1 after
 * printing the error. */
static inline int example_run(const remat_fn *f, int n_in, const remat_tensor *in, int n_out, remat_tensor *out,
                              remat_stats *st, remat_memory_plan *plan)
{
    remat_program *p;
    if (remat_compile(f, remat_backend_cpu(), &p) != REMAT_OK) {
        fprintf(stderr, "compile %s: %s\n", remat_fn_name(f), remat_last_error());
        return 1;
    }
    int rc = 0;
    if (remat_run(p, n_in, in, n_out, out, st) != REMAT_OK) {
        fprintf(stderr, "run %s: %s\n", remat_fn_name(f), remat_last_error());
        rc = 1;
    } else if (plan) {
        remat_program_plan(p, plan);
    }
    remat_program_free(p);
    return rc;
}

/* jax.grad(f)(jnp.ones(n)) for f of one f64 argument of shape (n,): g gets
 * the n entries. Returns 0, or 1 after printing the error. */
static inline int example_grad_at_ones(const remat_fn *f, int n, double *g, remat_stats *st, remat_memory_plan *plan)
{
    remat_fn *gf;
    if (remat_grad(f, 0, NULL, &gf) != REMAT_OK)
        return example_die("grad");
    double *x = malloc((size_t)n * sizeof *x);
    if (!x) {
        remat_fn_free(gf);
        return fprintf(stderr, "out of memory\n"), 1;
    }
    for (int i = 0; i < n; i++)
        x[i] = 1.0;
    remat_tensor in = remat_tensor_f64(x, 1, (int64_t[]){n});
    remat_tensor out = remat_tensor_f64(g, 1, (int64_t[]){n});
    int rc = example_run(gf, 1, &in, 1, &out, st, plan);
    free(x);
    remat_fn_free(gf);
    return rc;
}

/* the exit status: 0 when every check passed, else 1 with a count on stderr */
static inline int example_finish(const char *name)
{
    if (example_failures)
        fprintf(stderr, "%s: %d check(s) failed\n", name, example_failures);
    return example_failures ? 1 : 0;
}

#endif
