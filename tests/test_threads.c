/*
 * test_threads.c — the thread guarantee of remat/exec.h: distinct programs
 * compiled and run from several threads at once give the bits of a
 * single-threaded run, with scan bodies compiled into native loops (which
 * share the JIT's process-wide cache) and interpreted (REMAT_NO_JIT=1), and
 * each thread keeps its own last-error message.
 *
 * Work per thread, all built from scratch (function, gradient, program):
 * the PFR gradient (remat_problem "pfr-euler", binomial:10, a scalar scan),
 * the batched PFR gradient with a (3,B) carry (a scan over B lanes, the
 * bench_scan batch problem), and the gradient of an MLP with a checkpointed
 * block (dot_general through OpenBLAS), and a gradient of elementwise ops
 * on 100000 elements, which the CPU thread pool splits (the threads contend
 * for its workers). Built under ThreadSanitizer by
 * .ci/run, where a data race fails the test.
 *
 * cmocka's assertions longjmp, so worker threads only record what they saw;
 * the main thread asserts.
 *
 * Bitwise assertions rest on contract 1 (docs/design-notes.md, "Bitwise
 * contracts"): the same program on any thread gives the same bits.
 */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pool.h"
#include "remat/remat.h"

enum { N_THREADS = 4, ROUNDS = 2, B = 64, MLP_F = 32, MLP_ROWS = 16, BIG = 100000 };

typedef struct {
    double pfr[3];           /* loss, dk1, dk2 */
    double batch[1 + 2 * B]; /* loss, dk1 (B), dk2 (B) */
    double *big;             /* BIG elements of elementwise work the CPU pool splits */
    double *mlp;             /* d loss / d (params..., x), flattened */
    size_t n_mlp;
    int64_t compiled_loops;  /* summed over the programs */
} results;

typedef struct {
    int id;
    const results *want;    /* ROUNDS references: single thread, interpreted */
    int64_t want_compiled;  /* scan nodes compiled per round */
    pthread_barrier_t *barrier;
    char failure[512]; /* "" when everything matched */
} worker;

/* remat_run of a compiled fn with n_out outputs written one after the other into out */
static remat_status run_flat(const remat_fn *g, int n_in, const remat_tensor *in, int n_out, double *out,
                             size_t cap, int64_t *compiled)
{
    remat_program *p;
    remat_status st = remat_compile(g, remat_backend_cpu(), &p);
    if (st != REMAT_OK)
        return st;
    remat_tensor *o = calloc((size_t)n_out, sizeof *o);
    size_t used = 0;
    for (int i = 0; o && i < n_out; i++) {
        o[i] = remat_program_output_desc(p, i);
        size_t n = (size_t)remat_shape_numel(&o[i].shape);
        if (o[i].dtype != REMAT_F64 || used + n > cap) {
            free(o);
            remat_program_free(p);
            return REMAT_ERR_SHAPE; /* not the function this test built */
        }
        o[i].data = out + used, used += n;
    }
    st = o ? remat_run(p, n_in, in, n_out, o, NULL) : REMAT_ERR_NOMEM;
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    *compiled += plan.compiled_loops;
    free(o);
    remat_program_free(p);
    return st;
}

static remat_status pfr_grad(int variant, results *r)
{
    remat_problem *pb;
    remat_status st = remat_problem_new("pfr-euler", 1000 + variant, &pb);
    if (st != REMAT_OK)
        return st;
    remat_scan_options so = {0};
    remat_fn *vg = NULL;
    st = remat_schedule_parse("binomial:10", &so.schedule);
    if (st == REMAT_OK)
        st = remat_problem_build(pb, &so, &vg);
    if (st == REMAT_OK)
        st = run_flat(vg, remat_problem_num_inputs(pb), remat_problem_inputs(pb), 3, r->pfr, 3, &r->compiled_loops);
    remat_fn_free(vg);
    remat_problem_free(pb);
    return st;
}

/* value_and_grad of -sum_b C_B,b(L) over B reactors (k1_b, k2_b), carry (3,B), 200 Euler steps */
static remat_status batch_grad(int variant, results *r)
{
    const double h = 10.0 / (200 + variant);
    remat_fn *b = remat_fn_new("pfr_euler_step_3xB");
    remat_val y = remat_arg(b, "y", REMAT_F64, 2, DIMS(3, B));
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 1, DIMS(B)), k2 = remat_arg(b, "k2", REMAT_F64, 1, DIMS(B));
    remat_val r1 = remat_mul(b, k1, remat_index(b, y, 0)), r2 = remat_mul(b, k2, remat_index(b, y, 1));
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 2, DIMS(1, B)),
                          remat_reshape(b, remat_sub(b, r1, r2), 2, DIMS(1, B)), remat_reshape(b, r2, 2, DIMS(1, B))};
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, remat_concatenate(b, 3, parts, 0), h)));

    remat_fn *f = remat_fn_new("pfr_euler_batch");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 2, DIMS(3, B));
    remat_val k[2] = {remat_arg(f, "k1", REMAT_F64, 1, DIMS(B)), remat_arg(f, "k2", REMAT_F64, 1, DIMS(B))};
    remat_scan_options opt = {0};
    remat_val carry;
    remat_fn *vg = NULL;
    remat_status st = remat_schedule_parse("per-step", &opt.schedule);
    if (st == REMAT_OK)
        st = remat_scan(f, b, 200, 1, &y0, 0, NULL, 2, k, &opt, &carry, NULL);
    if (st == REMAT_OK) {
        remat_fn_output(f, remat_neg(f, remat_sum_all(f, remat_index(f, carry, 1))));
        st = remat_fn_status(f);
    }
    if (st == REMAT_OK)
        st = remat_value_and_grad(f, 2, (const int[]){1, 2}, &vg);
    double y0v[3 * B], kv[2 * B];
    for (int i = 0; i < B; i++) {
        y0v[i] = 1.0, y0v[B + i] = 0.0, y0v[2 * B + i] = 0.0;
        kv[i] = 0.5 + i / (double)B, kv[B + i] = 0.25 + 0.5 * i / (double)B;
    }
    remat_tensor in[3] = {remat_tensor_f64(y0v, 2, DIMS(3, B)), remat_tensor_f64(kv, 1, DIMS(B)),
                          remat_tensor_f64(kv + B, 1, DIMS(B))};
    if (st == REMAT_OK)
        st = run_flat(vg, 3, in, 3, r->batch, 1 + 2 * B, &r->compiled_loops);
    remat_fn_free(vg);
    remat_fn_free(f);
    remat_fn_free(b);
    return st;
}

/* gradient of sum(mlp(x)^2) w.r.t. every parameter and x; the block is checkpointed */
static remat_status mlp_grad(results *r)
{
    remat_nn_module *mlp = remat_nn_mlp(MLP_F, 3, REMAT_NN_TANH);
    remat_nn_module *net = remat_nn_remat(mlp, remat_dots_with_no_batch_dims_saveable);
    remat_nn_params *p = NULL;
    remat_fn *f = remat_fn_new("loss"), *g = NULL;
    remat_val *pv = NULL;
    remat_tensor *in = NULL;
    double x[MLP_ROWS * MLP_F];
    for (int i = 0; i < MLP_ROWS * MLP_F; i++)
        x[i] = ((i * 37) % 101) / 50.0 - 1.0;
    remat_status st = remat_nn_init(net, remat_prng_key_from_seed(7), REMAT_F64, 2, DIMS(MLP_ROWS, MLP_F), &p);
    const int np = st == REMAT_OK ? remat_nn_params_count(p) : 0;
    if (st == REMAT_OK) {
        pv = calloc((size_t)np + 1, sizeof *pv);
        in = calloc((size_t)np + 1, sizeof *in);
        st = pv && in ? remat_nn_params_args(f, p, pv) : REMAT_ERR_NOMEM;
    }
    remat_val xv = remat_arg(f, "x", REMAT_F64, 2, DIMS(MLP_ROWS, MLP_F)), yv;
    if (st == REMAT_OK)
        st = remat_nn_apply(net, f, xv, pv, &yv);
    if (st == REMAT_OK) {
        remat_fn_output(f, remat_sum_all(f, remat_square(f, yv)));
        st = remat_fn_status(f);
    }
    if (st == REMAT_OK)
        st = remat_grad(f, 0, NULL, &g);
    if (st == REMAT_OK) {
        for (int i = 0; i < np; i++)
            in[i] = remat_nn_params_tensor(p, i);
        in[np] = remat_tensor_f64(x, 2, DIMS(MLP_ROWS, MLP_F));
        r->n_mlp = (size_t)remat_nn_params_numel(p) + MLP_ROWS * MLP_F;
        r->mlp = malloc(sizeof *r->mlp * r->n_mlp);
        st = r->mlp ? run_flat(g, np + 1, in, np + 1, r->mlp, r->n_mlp, &r->compiled_loops) : REMAT_ERR_NOMEM;
    }
    remat_fn_free(g);
    remat_fn_free(f);
    free(pv), free(in);
    remat_nn_params_free(p);
    remat_nn_module_free(net);
    remat_nn_module_free(mlp);
    return st;
}

/* gradient of sum(tanh(x) * x) over BIG elements: ops large enough for the
 * thread pool (core/pool.h), which the threads then contend for */
static remat_status big_grad(int variant, results *r)
{
    remat_fn *f = remat_fn_new("big"), *g = NULL;
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(BIG));
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, remat_tanh(f, x), x)));
    remat_status st = remat_fn_status(f);
    if (st == REMAT_OK)
        st = remat_grad(f, 0, NULL, &g);
    double *xv = malloc(sizeof *xv * BIG);
    r->big = malloc(sizeof *r->big * BIG);
    if (st == REMAT_OK && (!xv || !r->big))
        st = REMAT_ERR_NOMEM;
    if (st == REMAT_OK) {
        for (int i = 0; i < BIG; i++)
            xv[i] = ((i * 7919 + variant) % 2001) / 500.0 - 2.0;
        remat_tensor in = remat_tensor_f64(xv, 1, DIMS(BIG));
        st = run_flat(g, 1, &in, 1, r->big, BIG, &r->compiled_loops);
    }
    free(xv);
    remat_fn_free(g);
    remat_fn_free(f);
    return st;
}

/* variant: the step size, so that each variant's scan bodies are new to the JIT cache */
static remat_status compute(int variant, results *r)
{
    *r = (results){0};
    remat_status st = pfr_grad(variant, r);
    if (st == REMAT_OK)
        st = batch_grad(variant, r);
    if (st == REMAT_OK)
        st = mlp_grad(r);
    if (st == REMAT_OK)
        st = big_grad(variant, r);
    return st;
}

static void *work(void *arg)
{
    worker *w = arg;
    for (int round = 0; round < ROUNDS && !w->failure[0]; round++) {
        /* every thread starts the round together on bodies no one compiled
         * yet: lookups, compilations and insertions into the JIT cache race */
        pthread_barrier_wait(w->barrier);
        const results *want = &w->want[round];
        results got;
        const remat_status st = compute(round + 1, &got);
        if (st != REMAT_OK)
            snprintf(w->failure, sizeof w->failure, "thread %d: %s: %s", w->id, remat_status_name(st),
                     remat_last_error());
        else if (memcmp(got.pfr, want->pfr, sizeof got.pfr))
            snprintf(w->failure, sizeof w->failure, "thread %d: PFR gradient differs", w->id);
        else if (memcmp(got.batch, want->batch, sizeof got.batch))
            snprintf(w->failure, sizeof w->failure, "thread %d: batched PFR gradient differs", w->id);
        else if (got.n_mlp != want->n_mlp || memcmp(got.mlp, want->mlp, sizeof *got.mlp * got.n_mlp))
            snprintf(w->failure, sizeof w->failure, "thread %d: MLP gradient differs", w->id);
        else if (memcmp(got.big, want->big, sizeof *got.big * BIG))
            snprintf(w->failure, sizeof w->failure, "thread %d: large elementwise gradient differs", w->id);
        else if (got.compiled_loops != w->want_compiled)
            snprintf(w->failure, sizeof w->failure, "thread %d: %lld scan nodes compiled, expected %lld", w->id,
                     (long long)got.compiled_loops, (long long)w->want_compiled);
        free(got.mlp), free(got.big);
    }
    /* each thread's message is its own: raise one naming this thread, let
     * every other thread raise theirs, then read it back */
    char name[32];
    snprintf(name, sizeof name, "no-such-problem-%d", w->id);
    remat_problem *pb;
    if (remat_problem_new(name, 10, &pb) == REMAT_OK)
        remat_problem_free(pb);
    pthread_barrier_wait(w->barrier);
    if (!w->failure[0] && !strstr(remat_last_error(), name))
        snprintf(w->failure, sizeof w->failure, "thread %d: last error is another thread's: %s", w->id,
                 remat_last_error());
    return NULL;
}

/* The references are interpreted on this thread; compiled loops give the
 * interpreter's bits (test_scan_jit), so the compiled threads must match them too. */
static void run_threads(int jit)
{
    results want[ROUNDS];
    setenv("REMAT_NO_JIT", "1", 1);
    for (int r = 0; r < ROUNDS; r++)
        assert_ok(compute(r + 1, &want[r]));
    if (jit)
        unsetenv("REMAT_NO_JIT");
    /* the loops really are compiled (forward and backward node of the scalar
     * and of the batched scan), or really not */
    const int64_t compiled = jit && REMAT_HAVE_GCCJIT ? 4 : 0;
    assert_ok(remat_set_num_threads(4)); /* whatever the CPUs: the pool has workers to contend for */
    const int64_t split_before = rmi_pool_split_loops();
    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, N_THREADS), 0);
    worker w[N_THREADS];
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        w[i] = (worker){.id = i, .want = want, .want_compiled = compiled, .barrier = &barrier};
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    unsetenv("REMAT_NO_JIT");
    const int64_t split = rmi_pool_split_loops() - split_before;
    assert_ok(remat_set_num_threads(0));
    for (int r = 0; r < ROUNDS; r++)
        free(want[r].mlp), free(want[r].big);
    for (int i = 0; i < N_THREADS; i++)
        if (w[i].failure[0])
            fail_msg("%s", w[i].failure);
    assert_true(split > 0); /* some thread's large ops did run across the pool */
}

static void test_threads_gradients_bitwise_compiled(void **state)
{
    (void)state;
    run_threads(1);
}

static void test_threads_gradients_bitwise_interpreted(void **state)
{
    (void)state;
    run_threads(0);
}

int main(void)
{
    setenv("REMAT_JIT", "always", 1); /* the compiled loops, on scans too short for the default policy */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_gradients_bitwise_compiled),
        cmocka_unit_test(test_threads_gradients_bitwise_interpreted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
