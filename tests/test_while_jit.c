/*
 * test_while_jit.c — while loops run as compiled lane loops (a step with
 * a conditional exit, src/scan/while_lanes.c + while_exec_lanes.c) give
 * the interpreter's bits and stats.
 *
 * Each case compiles a program twice, REMAT_JIT=always and REMAT_JIT=never,
 * runs both on the same inputs and compares every output bitwise, and the
 * stats that must not depend on how the loop runs (forward evaluations, ops
 * executed, peak snapshot bytes). The plans' compiled_loops say the loops
 * were really compiled (every while node of the program).
 *
 * Bitwise assertions rest on contract 2 (docs/design-notes.md, "Bitwise
 * contracts") unless marked.
 */
#include "while_models.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/jit.h"
#include "exec/program_impl.h"
#include "remat/remat.h"
#include "lanes/lanes.h"

static double y0v[2] = {1.5, -0.75}, kv[2] = {0.8, 2.3}, Tv = 1.0, hv = 0.0625;

typedef struct {
    outs_t o;
    remat_stats st;
    remat_memory_plan plan;
} result;

/* every output bit for bit */
static void check_outs_bitwise(const char *what, const outs_t *a, const outs_t *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const size_t bytes = (size_t)remat_shape_numel(&a->t[i].shape) * remat_dtype_size(a->t[i].dtype);
        if (memcmp(a->t[i].data, b->t[i].data, bytes) != 0)
            fail_msg("%s: output %d differs compiled and interpreted", what, i);
    }
}

static void run_mode(const remat_fn *g, int n_in, const remat_tensor *in, const char *jit, result *r)
{
    setenv("REMAT_JIT", jit, 1);
    run_fn(g, n_in, in, &r->o, &r->st, &r->plan);
    unsetenv("REMAT_JIT");
}

/* g compiled and interpreted: the same bits and stats; `loops` while nodes
 * compiled (with libgccjit) */
static void check_both(const char *what, const remat_fn *g, int n_in, const remat_tensor *in, int64_t loops)
{
    result a, b;
    run_mode(g, n_in, in, "always", &a);
    run_mode(g, n_in, in, "never", &b);
    check_outs_bitwise(what, &a.o, &b.o);
    assert_int_equal(a.st.forward_evals, b.st.forward_evals);
    assert_int_equal(a.st.ops_executed, b.st.ops_executed);
    assert_int_equal(a.st.peak_snapshot_bytes, b.st.peak_snapshot_bytes);
    assert_int_equal(a.plan.peak_snapshot_bytes, b.plan.peak_snapshot_bytes);
    assert_int_equal(b.plan.compiled_loops, 0);
#if REMAT_HAVE_GCCJIT
    if (a.plan.compiled_loops != loops)
        fail_msg("%s: %lld loop nodes compiled, expected %lld", what, (long long)a.plan.compiled_loops,
                 (long long)loops);
#else
    (void)loops;
    assert_int_equal(a.plan.compiled_loops, 0);
#endif
    outs_free(&a.o);
    outs_free(&b.o);
}

static void inputs(remat_tensor in[4], double *y, double *k, double *T, double *h)
{
    in[0] = remat_tensor_f64(y, 1, DIMS(2));
    in[1] = remat_tensor_f64(k, 1, DIMS(2));
    in[2] = remat_tensor_f64(T, 0, NULL);
    in[3] = remat_tensor_f64(h, 0, NULL);
}

static const char *const schedules[] = {NULL, "online:2", "online:5", "store-all", "per-step",
                                        "periodic:3", "two-level", "binomial:1", "binomial:4"};
#define N_SCHED ((int)(sizeof schedules / sizeof schedules[0]))

/* value_and_grad through the loop under every schedule, with and without
 * rejected iterations (whose candidates are inf/NaN: a trace of one in the
 * compiled reverse would show), T landing between steps and on the first */
static void test_while_jit_grad_bitwise(void **state)
{
    (void)state;
    for (int reject = 0; reject < 2; reject++)
        for (int s = 0; s < N_SCHED; s++)
            for (int trial = 0; trial < 3; trial++) {
                remat_schedule_spec spec;
                if (schedules[s])
                    assert_ok(remat_schedule_parse(schedules[s], &spec));
                remat_fn *f = model(reject, -1, schedules[s] ? &spec : NULL, 1000);
                remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
                double y[2] = {y0v[0], y0v[1]}, k[2] = {kv[0], kv[1]};
                double T = trial == 0 ? Tv : trial == 1 ? 0.3 : 0.0, h = hv;
                remat_tensor in[4];
                inputs(in, y, k, &T, &h);
                char what[96];
                snprintf(what, sizeof what, "%s, %s, T = %g", schedules[s] ? schedules[s] : "default",
                         reject ? "rejecting" : "accepting", T);
                check_both(what, g, 4, in, 2);
                remat_fn_free(g);
                remat_fn_free(f);
            }
}

/* the loop's outputs and count (primal node: one compiled call runs to the
 * end), a JVP through it (forward mode: a while over jvp(body)) */
static void test_while_jit_primal_and_jvp(void **state)
{
    (void)state;
    for (int reject = 0; reject < 2; reject++) {
        remat_fn *c = cond_fn(), *b = body_fn(reject);
        remat_fn *f = remat_fn_new("count");
        remat_val a[4] = {remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), remat_arg(f, "k", REMAT_F64, 1, DIMS(2)),
                          remat_arg(f, "T", REMAT_F64, 0, NULL), remat_arg(f, "h", REMAT_F64, 0, NULL)};
        remat_val init[3] = {a[0], remat_scalar(f, REMAT_F64, 0.0), remat_scalar(f, REMAT_F64, reject ? 0 : 1)};
        remat_val out[3], n;
        remat_while_options opt = {.max_steps = 1000};
        assert_ok(remat_while(f, c, b, 3, 1, init, 3, a + 1, &opt, out, &n));
        remat_fn_output(f, n);
        remat_fn_output(f, out[0]);
        remat_fn_output(f, out[1]);
        assert_fn_ok(f);
        double y[2] = {y0v[0], y0v[1]}, k[2] = {kv[0], kv[1]}, T = Tv, h = hv / 8;
        remat_tensor in[4];
        inputs(in, y, k, &T, &h);
        check_both(reject ? "primal, rejecting" : "primal", f, 4, in, 1);
        remat_fn *j = NULL;
        assert_ok(remat_jvp(f, 2, (int[]){0, 1}, &j));
        double ty[2] = {0.25, -1}, tk[2] = {0.5, 0.125};
        remat_tensor jin[6] = {in[0], in[1], in[2], in[3], remat_tensor_f64(ty, 1, DIMS(2)),
                               remat_tensor_f64(tk, 1, DIMS(2))};
        check_both(reject ? "jvp, rejecting" : "jvp", j, 6, jin, 1);
        remat_fn_free(j);
        remat_fn_free(f);
        remat_fn_free(c);
        remat_fn_free(b);
    }
}

/* past max_steps: the same error compiled (the exit never fires) */
static void test_while_jit_max_steps(void **state)
{
    (void)state;
    remat_fn *f = model(true, -1, NULL, 7);
    double y[2] = {y0v[0], y0v[1]}, k[2] = {kv[0], kv[1]}, T = Tv, h = hv;
    remat_tensor in[4];
    inputs(in, y, k, &T, &h);
    for (int jit = 0; jit < 2; jit++) {
        setenv("REMAT_JIT", jit ? "always" : "never", 1);
        remat_program *p = compile_ok(f);
        unsetenv("REMAT_JIT");
        double v = 0;
        remat_tensor o = remat_tensor_f64(&v, 0, NULL);
        assert_int_equal(remat_run(p, 4, in, 1, &o, NULL), REMAT_ERR_VALUE);
        assert_non_null(strstr(remat_last_error(), "max_steps = 7"));
        remat_program_free(p);
    }
    remat_fn_free(f);
}

/* one program run at lengths 16, 16, 5, 16 (the ops of a phase are kept
 * for the length they last ran: while_rt.h): each run's outputs and peak
 * store equal a fresh program's, compiled and interpreted */
static void test_while_jit_lengths_repeat(void **state)
{
    (void)state;
    const double Ts[4] = {Tv, Tv, 0.3, Tv};
    for (int reject = 0; reject < 2; reject++)
        for (int s = 0; s < N_SCHED; s++)
            for (int jit = 0; jit < 2; jit++) {
                remat_schedule_spec spec;
                if (schedules[s])
                    assert_ok(remat_schedule_parse(schedules[s], &spec));
                remat_fn *f = model(reject, -1, schedules[s] ? &spec : NULL, 1000);
                remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
                setenv("REMAT_JIT", jit ? "always" : "never", 1);
                remat_program *p = compile_ok(g);
                unsetenv("REMAT_JIT");
                for (int q = 0; q < 4; q++) {
                    double y[2] = {y0v[0], y0v[1]}, k[2] = {kv[0], kv[1]}, T = Ts[q], h = hv;
                    remat_tensor in[4];
                    inputs(in, y, k, &T, &h);
                    outs_t o;
                    remat_stats st;
                    run_prog(p, 4, in, &o, &st);
                    result fresh;
                    run_mode(g, 4, in, "never", &fresh);
                    char what[96];
                    snprintf(what, sizeof what, "%s, %s, run %d", schedules[s] ? schedules[s] : "default",
                             reject ? "rejecting" : "accepting", q);
                    check_outs_bitwise(what, &o, &fresh.o);
                    assert_int_equal(st.peak_snapshot_bytes, fresh.st.peak_snapshot_bytes);
                    assert_int_equal(st.forward_evals, fresh.st.forward_evals);
                    outs_free(&o);
                    outs_free(&fresh.o);
                }
                remat_program_free(p);
                remat_fn_free(g);
                remat_fn_free(f);
            }
}

/* The lane IR's EXIT through the CPU JIT (backend/lane.h): x := x * k
 * while x * k > 0.1, from x = 1, k = 0.5: four steps of a call for 100,
 * the count written, x at the fourth; a call of 2 steps runs both and
 * leaves the count alone. */
static void test_while_jit_lane_exit(void **state)
{
    (void)state;
#if REMAT_HAVE_GCCJIT
    if (!rmi_cpu_can_compile_lanes()) {
        print_message("SKIP: libgccjit cannot compile here\n");
        return;
    }
    static const remat_lane_buf bufs[3] = {{.dt = REMAT_F64, .state = 1}, {.dt = REMAT_F64}, {.dt = REMAT_F64}};
    static const remat_lane_ins ins[] = {
        {.kind = REMAT_LANE_LOAD, .dt = REMAT_F64, .a = -1, .b = -1, .c = -1, .buf = 0},
        {.kind = REMAT_LANE_LOAD, .dt = REMAT_F64, .a = -1, .b = -1, .c = -1, .buf = 1},
        {.kind = REMAT_LANE_OP, .dt = REMAT_F64, .op = REMAT_OP_MUL, .a = 0, .b = 1, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_CONST, .dt = REMAT_F64, .a = -1, .b = -1, .c = -1, .buf = -1, .imm = 0.1},
        {.kind = REMAT_LANE_OP, .dt = REMAT_F64, .op = REMAT_OP_GT, .a = 2, .b = 3, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_STORE, .dt = REMAT_F64, .a = 2, .b = -1, .c = -1, .buf = 0},
        {.kind = REMAT_LANE_EXIT, .dt = REMAT_F64, .a = 4, .b = -1, .c = -1, .buf = 2},
    };
    const remat_lane_program p = {.m = 1, .n_ins = 7, .ins = ins, .n_bufs = 3, .bufs = bufs};
    const remat_lane_program *pp = &p;
    remat_lane_fn fn = NULL;
    assert_ok(rmi_cpu_compile_lanes(remat_backend_cpu(), 1, &pp, &fn, NULL));
    double x = 1, k = 0.5, ran = -1;
    char *b[3] = {(char *)&x, (char *)&k, (char *)&ran};
    int64_t st[3] = {0, 0, 0};
    fn(b, st, 100, 1);
    assert_true(ran == 4 && x == 0.0625);
    x = 1, ran = -1;
    fn(b, st, 2, 1);
    assert_true(ran == -1 && x == 0.25);
#else
    print_message("SKIP: built without libgccjit\n");
#endif
}

/* A body with reduce_max (the adaptive controller's NaN test is one): the
 * loop v := v k, m := max over each row of v, while t < 2. Rows where
 * the order of +0 and -0 decides the sign of the maximum (either naive
 * max(a, b) gets one of them wrong), a NaN row (the latest NaN wins), ties
 * (the VJP shares the cotangent) and infinities: the compiled loop's bits
 * are the interpreter's and the CPU kernel's rule (IEEE maximum: +0 beats
 * -0, NaN propagates), and the loops compile. */
enum { MR = 5, MC = 4 };

static remat_fn *max_model(int rows)
{
    remat_fn *c = remat_fn_new("t_below_2"), *b = remat_fn_new("row_max");
    remat_arg(c, "v", REMAT_F64, 2, DIMS(rows, MC));
    remat_arg(c, "m", REMAT_F64, 1, DIMS(rows));
    remat_val t = remat_arg(c, "t", REMAT_F64, 0, NULL);
    remat_arg(c, "k", REMAT_F64, 2, DIMS(rows, MC));
    remat_fn_output(c, remat_lt(c, t, remat_scalar(c, REMAT_F64, 2.0)));
    remat_val v = remat_arg(b, "v", REMAT_F64, 2, DIMS(rows, MC));
    remat_arg(b, "m", REMAT_F64, 1, DIMS(rows));
    remat_val bt = remat_arg(b, "t", REMAT_F64, 0, NULL), k = remat_arg(b, "k", REMAT_F64, 2, DIMS(rows, MC));
    remat_val v1 = remat_mul(b, v, k);
    remat_fn_output(b, v1);
    remat_fn_output(b, remat_reduce_max(b, v1, 1, (int[]){1}));
    remat_fn_output(b, remat_add_scalar(b, bt, 1.0));
    remat_fn_output(b, remat_scalar(b, REMAT_F64, 1.0));
    remat_fn *f = remat_fn_new("row_max_loop");
    remat_val a[2] = {remat_arg(f, "v0", REMAT_F64, 2, DIMS(rows, MC)), remat_arg(f, "k", REMAT_F64, 2, DIMS(rows, MC))};
    remat_val init[3] = {a[0], remat_scalar(f, REMAT_F64, 0.0), remat_scalar(f, REMAT_F64, 0.0)}, out[3];
    init[1] = remat_broadcast_in_dim(f, init[1], 1, DIMS(rows), NULL);
    remat_while_options opt = {.max_steps = 10};
    assert_ok(remat_while(f, c, b, 3, 2, init, 1, a + 1, &opt, out, NULL));
    remat_fn_output(f, out[0]);
    remat_fn_output(f, out[1]);
    assert_fn_ok(f);
    remat_fn_free(c);
    remat_fn_free(b);
    return f;
}

/* backend/cpu/reduce.c's step, in plain C */
static double max_step_ref(double m, double x)
{
    return (x > m || x != x || (x == m && signbit(m))) ? x : m;
}

static void test_while_jit_reduce_max_bitwise(void **state)
{
    (void)state;
    const uint64_t nan_a = 0x7ff8000000000001ull, nan_b = 0x7ff8000000000002ull;
    double na, nb;
    memcpy(&na, &nan_a, sizeof na), memcpy(&nb, &nan_b, sizeof nb);
    double v0[MR * MC] = {0.0, -0.0, -0.0, -0.0,        /* +0 first: max(m, x) would end at -0 */
                          -0.0, -0.0, 0.0, -0.0,        /* +0 after -0: max(x, m) would keep -0 */
                          2.0, 5.0, 5.0, -1.0,          /* a tie */
                          -INFINITY, -3.0, INFINITY, 1, /* infinities */
                          1.0, na, 3.0, nb};            /* NaN: the latest wins */
    double k[MR * MC];
    for (int i = 0; i < MR * MC; i++)
        k[i] = i % 2 ? 2.0 : 0.5;
    /* the primal, NaN row included: bits against the interpreter and the rule */
    remat_fn *f = max_model(MR);
    remat_tensor in[2] = {remat_tensor_f64(v0, 2, DIMS(MR, MC)), remat_tensor_f64(k, 2, DIMS(MR, MC))};
    check_both("reduce_max, primal", f, 2, in, 1);
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL);
    const double *v = o.t[0].data, *m = o.t[1].data;
    for (int r = 0; r < MR; r++) {
        double want = -INFINITY;
        for (int c = 0; c < MC; c++)
            want = max_step_ref(want, v[r * MC + c]);
        if (memcmp(&want, &m[r], sizeof want) != 0) /* max picks an operand: exact */
            fail_msg("row %d: max %g, the CPU kernel's rule gives %g", r, m[r], want);
    }
    assert_true(m[0] == 0.0 && !signbit(m[0]) && !signbit(m[1]));
    assert_memory_equal(&m[4], &nan_b, sizeof nan_b);
    outs_free(&o);
    remat_fn_free(f);
    /* the gradient of sum(m) + sum(v) (the VJP of a max: eq, counts,
     * shares) without the NaN row */
    const int rows = MR - 1;
    remat_fn *fg = max_model(rows), *l = remat_fn_new("row_max_loss");
    remat_val a[2] = {remat_arg(l, "v0", REMAT_F64, 2, DIMS(rows, MC)), remat_arg(l, "k", REMAT_F64, 2, DIMS(rows, MC))},
              r[2];
    assert_ok(remat_call(l, fg, 2, a, r));
    remat_fn_output(l, remat_add(l, remat_sum_all(l, r[1]), remat_sum_all(l, r[0])));
    assert_fn_ok(l);
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, l, 0, NULL);
    remat_tensor gin[2] = {remat_tensor_f64(v0, 2, DIMS(rows, MC)), remat_tensor_f64(k, 2, DIMS(rows, MC))};
    check_both("reduce_max, gradient", g, 2, gin, 2);
    remat_fn_free(g);
    remat_fn_free(l);
    remat_fn_free(fg);
}

/* ---- the tier policy's account is the body's, not the node's ----
 *
 * A program of `n` while loops over one body (a fit's experiments, each
 * with its loops) under REMAT_JIT=auto: its runs until every loop node is
 * compiled. The policy compiles once the body's interpreted time passes the
 * compile's estimate; counted per node, n loops took as many runs as one
 * (each node had to pay alone), so a job of many short loops never
 * compiled and never filled the disk cache. `c` makes the body's programs
 * differ between calls (a constant of the body), so each call starts its
 * own account and its own compilation. */
static remat_fn *scaled_euler(double c) /* body_fn's, with a constant c of its own */
{
    remat_fn *b = remat_fn_new("euler_scaled");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, DIMS(2));
    remat_val t = remat_arg(b, "t", REMAT_F64, 0, NULL);
    remat_val r = remat_arg(b, "r", REMAT_F64, 0, NULL);
    remat_val k = remat_arg(b, "k", REMAT_F64, 1, DIMS(2));
    remat_arg(b, "T", REMAT_F64, 0, NULL);
    remat_val h = remat_arg(b, "h", REMAT_F64, 0, NULL);
    remat_val dy = remat_mul(b, remat_scalar(b, REMAT_F64, c), remat_mul(b, h, remat_neg(b, remat_mul(b, k, y))));
    remat_fn_output(b, remat_add(b, y, dy));
    remat_fn_output(b, remat_add(b, t, h));
    remat_fn_output(b, remat_scalar(b, REMAT_F64, 1.0));
    remat_fn_output(b, r);
    assert_fn_ok(b);
    return b;
}

static remat_fn *many_loops(int n, double c)
{
    remat_fn *cf = cond_fn(), *b = scaled_euler(c);
    remat_fn *f = remat_fn_new("many_loops");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, DIMS(2)), k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val T = remat_arg(f, "T", REMAT_F64, 0, NULL), loss = remat_scalar(f, REMAT_F64, 0.0);
    remat_val h = remat_scalar(f, REMAT_F64, 0.0625);
    for (int i = 0; i < n; i++) {
        remat_val init[3] = {remat_mul(f, y0, remat_scalar(f, REMAT_F64, 1.0 + i)), remat_scalar(f, REMAT_F64, 0.0),
                             remat_scalar(f, REMAT_F64, 1.0)};
        remat_val ks[3] = {k, T, h}, out[3];
        remat_while_options opt = {.max_steps = 100000};
        assert_ok(remat_while(f, cf, b, 3, 1, init, 3, ks, &opt, out, NULL));
        loss = remat_add(f, loss, remat_sum_all(f, out[0]));
    }
    remat_fn_output(f, loss);
    assert_fn_ok(f);
    remat_fn_free(cf);
    remat_fn_free(b);
    return f;
}

static int64_t runs_until_compiled(int n, double c)
{
    remat_fn *f = many_loops(n, c);
    setenv("REMAT_JIT", "auto", 1);
    setenv("REMAT_NO_CACHE", "1", 1);
    remat_program *p = compile_ok(f);
    unsetenv("REMAT_JIT");
    unsetenv("REMAT_NO_CACHE");
    double y[2] = {1.5, -0.75}, k[2] = {0.8, 2.3}, T = 4.0, out = 0;
    remat_tensor in[3] = {remat_tensor_f64(y, 1, DIMS(2)), remat_tensor_f64(k, 1, DIMS(2)), remat_tensor_f64(&T, 0, NULL)};
    remat_tensor o = remat_tensor_f64(&out, 0, NULL);
    int64_t runs = 0;
    for (; runs < 200000; runs++) {
        remat_memory_plan plan;
        remat_program_plan(p, &plan);
        if (plan.compiled_loops == n)
            break;
        assert_ok(remat_run(p, 3, in, 1, &o, NULL));
    }
    remat_program_free(p);
    remat_fn_free(f);
    return runs;
}

static void test_while_jit_loops_of_one_body_share_account(void **state)
{
    (void)state;
#if REMAT_HAVE_GCCJIT
    /* one loop first, then 16 (other programs: another c), and one loop again:
     * the machine's speed may drift between the measurements */
    const int64_t one = runs_until_compiled(1, 0.5), many = runs_until_compiled(16, 0.25),
                  again = runs_until_compiled(1, 0.125);
    printf("runs until compiled: 1 loop %lld, 16 loops %lld, 1 loop again %lld\n", (long long)one,
           (long long)many, (long long)again);
    assert_true(one < 200000 && many < 200000);
    const int64_t lo = one < again ? one : again;
    if (!(many * 2 <= lo))
        fail_msg("16 loops of one body took %lld runs to compile, one loop %lld: not one account", (long long)many,
                 (long long)lo);
#else
    skip(); /* never reached in CI: the no-JIT build does not run this suite */
#endif
}

/* ---- one translation per body ----
 *
 * A gradient of 8 loops over one body (16 nodes: each loop's forward and
 * backward), then the same program built again from scratch (a fit builds
 * each experiment's loops anew): the body is translated into lane programs
 * once for the process, every other node takes the kept translation
 * (src/lanes/lanes.h) and, once compiled, its code; all of it with the
 * interpreter's bits and stats. The constant 0.4375 is this case's alone,
 * so no earlier case translated the body. */
static void test_while_jit_body_translated_once(void **state)
{
    (void)state;
#if REMAT_HAVE_GCCJIT
    remat_fn *f1 = many_loops(8, 0.4375), *f2 = many_loops(8, 0.4375);
    remat_fn *g1 = ad_ok(AD_VALUE_AND_GRAD, f1, 0, NULL), *g2 = ad_ok(AD_VALUE_AND_GRAD, f2, 0, NULL);
    double y[2] = {1.5, -0.75}, k[2] = {0.8, 2.3}, T = 1.0;
    remat_tensor in[3] = {remat_tensor_f64(y, 1, DIMS(2)), remat_tensor_f64(k, 1, DIMS(2)), remat_tensor_f64(&T, 0, NULL)};
    remat_lanes_memo_stats s0, s1, s2;
    remat_memory_plan plan1, plan2;
    setenv("REMAT_JIT", "always", 1);
    rmi_lanes_memo_stats_get(&s0);
    remat_program *p1 = compile_ok(g1);
    rmi_lanes_memo_stats_get(&s1);
    remat_program *p2 = compile_ok(g2);
    rmi_lanes_memo_stats_get(&s2);
    unsetenv("REMAT_JIT");
    remat_program_plan(p1, &plan1);
    remat_program_plan(p2, &plan2);
    assert_int_equal(plan1.compiled_loops, 16);
    assert_int_equal(plan2.compiled_loops, 16);
    printf("first program: %lld translated, %lld reused; second: %lld translated, %lld reused, %lld took the code\n",
           (long long)(s1.translated - s0.translated), (long long)(s1.reused - s0.reused),
           (long long)(s2.translated - s1.translated), (long long)(s2.reused - s1.reused),
           (long long)(s2.code_reused - s1.code_reused));
    assert_int_equal(s1.translated - s0.translated, 1);
    assert_int_equal(s1.reused - s0.reused, 15);
    assert_int_equal(s2.translated - s1.translated, 0);
    assert_int_equal(s2.reused - s1.reused, 16);
    assert_int_equal(s2.code_reused - s1.code_reused, 16);
    result a, b, c;
    run_prog(p1, 3, in, &a.o, &a.st);
    run_prog(p2, 3, in, &b.o, &b.st);
    run_mode(g1, 3, in, "never", &c);
    check_outs_bitwise("first program", &a.o, &c.o);
    check_outs_bitwise("second program", &b.o, &c.o);
    assert_int_equal(a.st.ops_executed, c.st.ops_executed);
    assert_int_equal(b.st.ops_executed, c.st.ops_executed);
    assert_int_equal(a.st.forward_evals, c.st.forward_evals);
    assert_int_equal(b.st.peak_snapshot_bytes, c.st.peak_snapshot_bytes);
    outs_free(&a.o), outs_free(&b.o), outs_free(&c.o);
    remat_program_free(p1), remat_program_free(p2);
    remat_fn_free(g1), remat_fn_free(g2), remat_fn_free(f1), remat_fn_free(f2);
#else
    skip(); /* never reached in CI: the no-JIT build does not run this suite */
#endif
}

/* ---- one sub-program per body in a program ----
 *
 * The gradient of 8 loops over one body (16 nodes): each form's
 * interpreted sub-programs (cond, body, the VJP's halves) are compiled once
 * for the program and shared by the nodes (exec/hop.h,
 * rmi_compile_sub_shared), which run one at a time; without sharing the
 * program held 48. The bits and stats are those of the compiled loops. */
static void test_while_jit_loops_share_sub_programs(void **state)
{
    (void)state;
    remat_fn *f = many_loops(8, 0.46875);
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
    remat_program *p = compile_ok(g);
    assert_int_equal(p->own_counters.n_subs, 4);
    remat_program_free(p);
    double y[2] = {1.5, -0.75}, k[2] = {0.8, 2.3}, T = 1.0;
    remat_tensor in[3] = {remat_tensor_f64(y, 1, DIMS(2)), remat_tensor_f64(k, 1, DIMS(2)), remat_tensor_f64(&T, 0, NULL)};
    check_both("8 loops of one body", g, 3, in, 16);
    remat_fn_free(g);
    remat_fn_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_while_jit_grad_bitwise),
        cmocka_unit_test(test_while_jit_primal_and_jvp),
        cmocka_unit_test(test_while_jit_max_steps),
        cmocka_unit_test(test_while_jit_lengths_repeat),
        cmocka_unit_test(test_while_jit_lane_exit),
        cmocka_unit_test(test_while_jit_reduce_max_bitwise),
        cmocka_unit_test(test_while_jit_loops_of_one_body_share_account),
        cmocka_unit_test(test_while_jit_body_translated_once),
        cmocka_unit_test(test_while_jit_loops_share_sub_programs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
