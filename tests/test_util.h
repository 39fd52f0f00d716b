/*
 * test_util.h — the helpers the test files share: cmocka's includes, one
 * seeded random stream, checked allocation, assertions on statuses and
 * messages, and compiling and running a function on the CPU backend with its
 * outputs allocated from the program's signature.
 *
 * Every tests/test_<module>.c includes this first and links test_util.c
 * (tests/meson.build). A helper that fails calls cmocka's fail_msg, which
 * fails the test that called it with the helper's message.
 *
 *   rng_seed(0x2545f4914f6cdd1dull);          // in main, before the group
 *   remat_fn *g = grad_ok(f, 0, NULL);         // fails the test with the reason
 *   outs_t o;
 *   run_fn(g, 1, &x, &o, NULL, NULL);          // compile, run, free the program
 *   check_close("d loss/d x", n, o.t[0].data, want, 1e-12, 0);
 *   outs_free(&o);
 */
#ifndef REMAT_TEST_UTIL_H
#define REMAT_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "remat/mechanism.h"
#include "remat/remat.h"

/* a dims array in an argument list: remat_arg(f, "x", REMAT_F64, 2, DIMS(3, 4)) */
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- random numbers ----
 * One 64-bit LCG (Knuth's MMIX constants). Each test file seeds it once in
 * main, so its cases draw the same numbers run after run. */
void rng_seed(uint64_t seed);
/* advances the stream and returns the whole new state; take the high bits */
uint64_t rng_next(void);
/* uniform in [lo, hi), 53 random bits */
double urand(double lo, double hi);

/* ---- allocation that fails the test instead of returning NULL ----
 * A size of 0 still gives a unique pointer to free. */
void *xmalloc(size_t bytes);
void *xcalloc(size_t n, size_t size);

/* bytes of a dense tensor of this dtype and shape */
size_t tbytes(remat_dtype dt, const remat_shape *s);

/* ---- assertions ---- */

/* expr returns a remat_status; anything but REMAT_OK fails with the error */
#define assert_ok(expr)                                                                                     \
    do {                                                                                                    \
        remat_status st_ = (expr);                                                                          \
        if (st_ != REMAT_OK)                                                                                \
            fail_msg("%s failed: %s", #expr, remat_last_error());                                           \
    } while (0)

/* hay (possibly NULL) contains needle */
int contains(const char *hay, const char *needle);

#define assert_contains(hay, needle)                                                                        \
    do {                                                                                                    \
        const char *h_ = (hay), *n_ = (needle);                                                             \
        if (!contains(h_, n_))                                                                              \
            fail_msg("expected \"%s\" in message: %s", n_, h_ ? h_ : "(null)");                             \
    } while (0)

/* v printed with fmt is exactly want: the digits a seed document shows */
void assert_printed(const char *fmt, double v, const char *want);

/* got[i] against want[i] for i < n: a NaN matches a NaN, equal values match
 * (so do equal infinities), otherwise |got - want| <= atol + rtol * |want|. */
void check_close(const char *what, int64_t n, const double *got, const double *want, double rtol, double atol);

/* ---- seed 004's Adam fit of the PFR (seed_values.json pfr_adam_fit) ----
 * Row `it`: k1 and k2 after the update of iteration it and C_B before it, as
 * the seed prints them; seed_adam_final: k after all 50 updates and C_B there. */
typedef struct {
    int it;
    const char *k1, *k2, *cb;
} seed_adam_row;

#define SEED_ADAM_ROWS 6
extern const seed_adam_row seed_adam_table[SEED_ADAM_ROWS];
extern const seed_adam_row seed_adam_final;

/* k1, k2 with %.4f and cb with %.6f print as row r says */
void assert_seed_adam(const seed_adam_row *r, double k1, double k2, double cb);

/* ---- files ---- */

/* Writes n bytes to a fresh file $TMPDIR/<prefix>XXXXXX (default /tmp) and
 * puts its name into path; the caller unlinks it. */
void write_temp(char *path, size_t cap, const char *prefix, const void *bytes, size_t n);

/* ---- building, differentiating, compiling, running ---- */

/* a mechanism from text, named "test.mech" in messages */
remat_mechanism *parse(const char *text);

/* a schedule from its text form ("binomial:3") */
remat_schedule_spec spec_of(const char *text);

/* f was built without error */
void assert_fn_ok(const remat_fn *f);

typedef enum { AD_GRAD, AD_VALUE_AND_GRAD, AD_VJP } ad_kind;

/* remat_grad / remat_value_and_grad / remat_vjp of f w.r.t. argnums
 * (n = 0: all arguments) */
remat_fn *ad_ok(ad_kind k, const remat_fn *f, int n, const int *argnums);
remat_fn *grad_ok(const remat_fn *f, int n, const int *argnums);

/* The backend the suites compile for (compile_ok, and the suites meson
 * registers once per backend, as SUNDIALS runs one N_Vector suite per
 * backend): REMAT_BACKEND ("cpu" when unset, "cuda", "cuda:N"). A backend
 * that is not there (remat built without CUDA, no device) prints why and
 * exits 77, which meson reports as SKIP: such suites call it first in main. */
remat_backend *remat_test_backend(void);

/* f checked with assert_fn_ok, then compiled for remat_test_backend() */
remat_program *compile_ok(const remat_fn *f);

#define MAXO 64

/* The outputs of one run, allocated from the program's output descriptors. */
typedef struct {
    int n;
    remat_tensor t[MAXO];
} outs_t;

void outs_free(outs_t *o);

/* Runs p, allocating o from its signature. Outputs are pre-filled with 0xAB
 * bytes so that an output the run forgets to write shows. st may be NULL. */
void run_prog(remat_program *p, int n_in, const remat_tensor *in, outs_t *o, remat_stats *st);

/* compile_ok + run_prog + free the program; plan (if not NULL) gets the
 * program's memory plan. */
void run_fn(const remat_fn *f, int n_in, const remat_tensor *in, outs_t *o, remat_stats *st,
            remat_memory_plan *plan);

#endif
