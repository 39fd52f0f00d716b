/*
 * test_exec_rewrites.c — the compiler's rewrites that change how a program
 * runs but never its bits: elementwise fusion, in-place concatenation and
 * add-of-a-pad as one instruction. Each case compiles the same function with
 * and without the rewrite (REMAT_NO_FUSION=1, REMAT_NO_INPLACE=1) and
 * compares output bits, op counts and the measured arena against the plan.
 */
#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend_impl.h"
#include "backend/cpu/vmath.h"
#include "exec/program_impl.h"
#include "remat/remat.h"

/* ==== elementwise fusion ==== */

/* The same bits element by element, except that a NaN matches any NaN: a
 * compiled fused loop may take the other operand's NaN of a commutative op
 * (backend/lane.h; exec/fuse_jit.c), the only difference compiling makes. */
static bool same_bits_or_nan(const remat_tensor *a, const remat_tensor *b)
{
    const int64_t n = remat_shape_numel(&a->shape);
    const size_t es = remat_dtype_size(a->dtype);
    for (int64_t i = 0; i < n; i++) {
        const char *x = (const char *)a->data + (size_t)i * es, *y = (const char *)b->data + (size_t)i * es;
        const bool nx = es == 4 ? isnan(*(const float *)x) : isnan(*(const double *)x);
        const bool ny = es == 4 ? isnan(*(const float *)y) : isnan(*(const double *)y);
        if (nx ? !ny : memcmp(x, y, es) != 0)
            return false;
    }
    return true;
}

/* f compiled with and without fusion (REMAT_NO_FUSION=1) and run on the same
 * inputs: the same bits in every output, the same primitive-op counts, the
 * arena peak measured as planned, and no more arena than unfused. Returns
 * how many of the fused program's ops run inside another's instruction. */
static int32_t check_fused_bits(const remat_fn *f, int n_in, const remat_tensor *in)
{
    setenv("REMAT_NO_FUSION", "1", 1);
    remat_program *pu = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    remat_program *pf = compile_ok(f);
    assert_int_equal(pu->n_fused, 0);
    outs_t ou, of;
    remat_stats su, sf;
    remat_memory_plan lu, lf;
    run_prog(pu, n_in, in, &ou, &su);
    run_prog(pf, n_in, in, &of, &sf);
    remat_program_plan(pu, &lu);
    remat_program_plan(pf, &lf);
    assert_int_equal(ou.n, of.n);
    for (int i = 0; i < ou.n; i++) {
        if (!same_bits_or_nan(&ou.t[i], &of.t[i]))
            fail_msg("output %d: fused bits differ from unfused", i);
    }
    assert_int_equal(lf.instructions, lu.instructions);
    assert_int_equal(sf.ops_executed, su.ops_executed);
    assert_int_equal(sf.ops_executed, lf.instructions);
    assert_int_equal(sf.recomputed_ops, su.recomputed_ops);
    for (int k = 0; k < REMAT_OP_COUNT; k++)
        assert_int_equal(sf.op_counts[k], su.op_counts[k]);
    assert_int_equal(sf.peak_arena_bytes, lf.arena_bytes);
    assert_int_equal(su.peak_arena_bytes, lu.arena_bytes);
    assert_true(lf.arena_bytes <= lu.arena_bytes);
    assert_int_equal(pf->n_instrs + pf->n_fused, pu->n_instrs);
    int32_t fused = pf->n_fused;
    outs_free(&ou);
    outs_free(&of);
    remat_program_free(pu);
    remat_program_free(pf);
    return fused;
}

/* n = 1000: three whole blocks of 256 and a partial one; NaN, infinities,
 * signed zeros, negatives (log, sqrt, pow of them give NaN) */
enum { FUSE_N = 1000 };

static void fill_special(double *x, int64_t n, double scale)
{
    static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, -1.5, 1.0, 2.0};
    for (int64_t i = 0; i < n; i++)
        x[i] = i % 17 < 8 ? special[i % 17] : scale * urand(-2.0, 2.0);
}

static void test_exec_fusion_chain_matches_unfused_bits(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
        int64_t d[1] = {FUSE_N};
        remat_fn *f = remat_fn_new("fuse_chain");
        remat_val x = remat_arg(f, "x", T, 1, d), y = remat_arg(f, "y", T, 1, d);
        remat_val t = remat_add(f, remat_mul(f, x, y), remat_exp(f, x));
        t = remat_div(f, remat_sin(f, t), remat_add(f, remat_cos(f, y), remat_tanh(f, t)));
        t = remat_sub(f, remat_integer_pow(f, t, 3), remat_integer_pow(f, y, 7));
        t = remat_add(f, remat_integer_pow(f, t, -2), remat_pow(f, remat_square(f, x), 1.5));
        t = remat_max(f, remat_relu(f, t), remat_log(f, y));
        t = remat_min(f, remat_sqrt(f, t), remat_neg(f, x));
        t = remat_add(f, remat_integer_pow(f, t, 0), remat_integer_pow(f, t, -1));
        remat_fn_output(f, t);
        void *xv = xcalloc(FUSE_N, sizeof(double)), *yv = xcalloc(FUSE_N, sizeof(double));
        double tmp[FUSE_N];
        fill_special(tmp, FUSE_N, 1.0);
        for (int i = 0; i < FUSE_N; i++) {
            if (T == REMAT_F64)
                ((double *)xv)[i] = tmp[i];
            else
                ((float *)xv)[i] = (float)tmp[i];
        }
        fill_special(tmp, FUSE_N, 3.0);
        for (int i = 0; i < FUSE_N; i++) {
            if (T == REMAT_F64)
                ((double *)yv)[(i * 7) % FUSE_N] = tmp[i];
            else
                ((float *)yv)[(i * 7) % FUSE_N] = (float)tmp[i];
        }
        remat_tensor in[2] = {{.dtype = T, .shape = {.rank = 1, .dims = {FUSE_N}}, .data = xv},
                              {.dtype = T, .shape = {.rank = 1, .dims = {FUSE_N}}, .data = yv}};
        /* everything but the root runs inside one instruction */
        assert_true(check_fused_bits(f, 2, in) > 20);
        free(xv);
        free(yv);
        remat_fn_free(f);
    }
}

/* gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) and its gradient, with a
 * stop_gradient in the chain: erf fuses like the other unary ops (the same
 * libm call per element), and stop_gradient is an alias inside a group's
 * inputs, never an instruction */
/* A fused group's registers (23 blocks, 47 KB in f64) are no stack frame:
 * the group runs on a thread whose whole stack is 32 KB (as under `ulimit -s
 * 32`), with the bits of the main thread's run. In a child process, so that
 * the stack overflow it was shows as a failure, not the suite's crash. */
typedef struct {
    remat_program *p;
    remat_tensor *in, *out;
    remat_status st;
} small_stack_run;

static void *run_on_small_stack(void *arg)
{
    small_stack_run *r = arg;
    r->st = remat_run(r->p, 2, r->in, 1, r->out, NULL);
    return NULL;
}

/* Under AddressSanitizer a thread of a few KB dies in ASan's own start-up
 * and every frame carries red zones, so there the run gets a plain 1 MB
 * thread: it still checks the run's memory, while the plain builds check
 * the stack use. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* A thread stack size with about `room` bytes free for calls: glibc takes
 * the guard page and the static TLS (several KB here) out of a thread's
 * stack, and refuses a size that leaves almost nothing. */
#ifndef UNDER_ASAN
static void *noop(void *arg) { return arg; }

static size_t stack_with_room(size_t room)
{
    for (size_t s = 16 << 10; s < (4 << 20); s += 4 << 10) {
        pthread_attr_t a;
        pthread_t th;
        pthread_attr_init(&a);
        const int ok = pthread_attr_setstacksize(&a, s) == 0 && pthread_create(&th, &a, noop, NULL) == 0;
        pthread_attr_destroy(&a);
        if (ok) {
            pthread_join(th, NULL);
            return s + room; /* s: room for almost nothing (glibc keeps 2 KB) */
        }
    }
    fail_msg("no thread stack size is accepted");
    return 0;
}
#endif

static void test_exec_fusion_runs_on_a_small_stack(void **state)
{
    (void)state;
    enum { N = 4096 };
    remat_fn *f = remat_fn_new("fuse_small_stack");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, DIMS(N)), y = remat_arg(f, "y", REMAT_F64, 1, DIMS(N));
    remat_val t = remat_add(f, remat_mul(f, x, y), remat_exp(f, x));
    t = remat_div(f, remat_sin(f, t), remat_add(f, remat_cos(f, y), remat_tanh(f, t)));
    remat_fn_output(f, t);
    for (int jit = 0; jit < 2; jit++) { /* interpreted, then compiled (a blocked program's arrays: jit_gen.c) */
    if (jit)
        setenv("REMAT_JIT", "always", 1);
    else
        setenv("REMAT_JIT", "never", 1);
    remat_program *p = compile_ok(f);
    unsetenv("REMAT_JIT");
    assert_true(p->n_fused > 0);
    const remat_backend *be = remat_test_backend();
    if (jit && be->iface.compile_lanes && be->iface.host_lane_cuts && be->iface.can_compile_lanes())
        assert_true(p->n_fused_compiled > 0);
    double *xv = xcalloc(N, sizeof *xv), *yv = xcalloc(N, sizeof *yv), *want = xcalloc(N, sizeof *want),
           *got = xcalloc(N, sizeof *got);
    for (int i = 0; i < N; i++)
        xv[i] = 0.001 * i, yv[i] = 1.0 - 0.0003 * i;
    remat_tensor in[2] = {{.dtype = REMAT_F64, .shape = {.rank = 1, .dims = {N}}, .data = xv},
                          {.dtype = REMAT_F64, .shape = {.rank = 1, .dims = {N}}, .data = yv}};
    remat_tensor out = remat_program_output_desc(p, 0);
    out.data = want;
    assert_int_equal(remat_run(p, 2, in, 1, &out, NULL), REMAT_OK);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        out.data = got;
        small_stack_run r = {.p = p, .in = in, .out = &out, .st = REMAT_ERR_BACKEND};
        pthread_attr_t a;
        pthread_t th;
        pthread_attr_init(&a);
        #ifdef UNDER_ASAN
        int rc = pthread_attr_setstacksize(&a, 1 << 20);
#else
        int rc = pthread_attr_setstacksize(&a, stack_with_room(32 << 10));
#endif
        if (rc == 0)
            rc = pthread_create(&th, &a, run_on_small_stack, &r);
        if (rc != 0) {
            fprintf(stderr, "no thread of 32 KB: %s\n", strerror(rc));
            _exit(3);
        }
        pthread_join(th, NULL);
        _exit(r.st != REMAT_OK ? 2 : memcmp(want, got, sizeof(double) * N) ? 1 : 0); /* bits: same kernels */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the run on a 32 KB stack: %s %d", WIFSIGNALED(status) ? "signal" : "exit",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    free(xv), free(yv), free(want), free(got);
    remat_program_free(p);
    }
    remat_fn_free(f);
}

static void test_exec_fusion_gelu_erf_matches_unfused_bits(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
        int64_t d[1] = {FUSE_N};
        remat_fn *f = remat_fn_new("gelu");
        remat_val x = remat_arg(f, "x", T, 1, d), y = remat_arg(f, "y", T, 1, d);
        remat_val cdf = remat_add_scalar(f, remat_erf(f, remat_mul_scalar(f, x, M_SQRT1_2)), 1.0);
        remat_val g = remat_mul(f, remat_mul_scalar(f, x, 0.5), cdf);
        remat_val t = remat_mul(f, g, remat_stop_gradient(f, remat_erf(f, y)));
        remat_fn_output(f, remat_sum_all(f, t));
        remat_fn *gr = NULL;
        assert_int_equal(remat_value_and_grad(f, 0, NULL, &gr), REMAT_OK);
        double tmp[FUSE_N];
        void *xv = xcalloc(FUSE_N, sizeof(double)), *yv = xcalloc(FUSE_N, sizeof(double));
        for (int k = 0; k < 2; k++) {
            fill_special(tmp, FUSE_N, k ? 2.0 : 1.0);
            for (int i = 0; i < FUSE_N; i++) {
                if (T == REMAT_F64)
                    ((double *)(k ? yv : xv))[(i * (k ? 7 : 1)) % FUSE_N] = tmp[i];
                else
                    ((float *)(k ? yv : xv))[(i * (k ? 7 : 1)) % FUSE_N] = (float)tmp[i];
            }
        }
        remat_tensor in[2] = {{.dtype = T, .shape = {.rank = 1, .dims = {FUSE_N}}, .data = xv},
                              {.dtype = T, .shape = {.rank = 1, .dims = {FUSE_N}}, .data = yv}};
        assert_true(check_fused_bits(gr, 2, in) >= 5);
        remat_program *p = compile_ok(gr);
        remat_stats st;
        outs_t o;
        run_prog(p, 2, in, &o, &st);
        assert_int_equal(st.op_counts[REMAT_OP_STOP_GRADIENT], 0);
        assert_true(st.op_counts[REMAT_OP_ERF] >= 2);
        outs_free(&o);
        remat_program_free(p);
        free(xv);
        free(yv);
        remat_fn_free(gr);
        remat_fn_free(f);
    }
}

/* splat constants read as scalars on either side of a binary op and as
 * select's branches; compares feeding selects; NaN operands of compares
 * (all false but NE) and of max/min */
static void test_exec_fusion_scalar_operands_selects_compares(void **state)
{
    (void)state;
    int64_t d[2] = {4, FUSE_N / 4};
    remat_fn *f = remat_fn_new("fuse_scalar");
    remat_val x = remat_arg(f, "x", REMAT_F64, 2, d), y = remat_arg(f, "y", REMAT_F64, 2, d);
    remat_val two = remat_const_fill(f, REMAT_F64, 2, d, 2.0), zero = remat_const_fill(f, REMAT_F64, 2, d, 0.0);
    remat_val nan = remat_const_fill(f, REMAT_F64, 2, d, NAN);
    remat_val a = remat_sub(f, two, remat_mul(f, x, two));            /* scalar on the left, then right */
    remat_val b = remat_div(f, remat_mul_scalar(f, y, 0.1), two);     /* a rank-0 scalar operand */
    remat_val m = remat_select(f, remat_gt(f, a, b), zero, a);        /* scalar on_true */
    m = remat_select(f, remat_le(f, m, y), m, nan);                   /* scalar on_false */
    m = remat_select(f, remat_ne(f, x, x), two, zero);                /* both branches scalar */
    remat_val c = remat_add(f, remat_ge(f, a, y), remat_lt(f, b, x)); /* compares as values */
    c = remat_add(f, c, remat_eq(f, a, remat_min(f, b, nan)));
    c = remat_mul(f, c, remat_select(f, remat_eq(f, x, x), remat_max(f, a, b), m));
    remat_fn_output(f, c);
    double *xv = xcalloc(FUSE_N, sizeof *xv), *yv = xcalloc(FUSE_N, sizeof *yv);
    fill_special(xv, FUSE_N, 1.0);
    fill_special(yv, FUSE_N, 1.0);
    for (int i = 0; i < FUSE_N; i += 3)
        yv[i] = xv[(i * 5) % FUSE_N]; /* ties for the compares */
    remat_tensor in[2] = {remat_tensor_f64(xv, 2, d), remat_tensor_f64(yv, 2, d)};
    assert_true(check_fused_bits(f, 2, in) > 10);
    free(xv);
    free(yv);
    remat_fn_free(f);
}

/* A value read inside a chain and outside it (an output, a reduction, a
 * view) stays materialised: only values read by their group alone fuse. */
static void test_exec_fusion_shared_values_are_not_fused_away(void **state)
{
    (void)state;
    int64_t d[1] = {FUSE_N};
    remat_fn *f = remat_fn_new("fuse_shared");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, d);
    remat_val e = remat_exp(f, x);                       /* an output and read by the chain */
    remat_val s = remat_sin(f, x);                       /* reduced and read by the chain */
    remat_val c = remat_cos(f, x);                       /* viewed (a slice) and read by the chain */
    remat_val t = remat_mul(f, remat_add(f, e, s), c);
    t = remat_sub(f, t, remat_neg(f, remat_square(f, x)));
    remat_fn_output(f, t);
    remat_fn_output(f, e);
    remat_fn_output(f, remat_sum_all(f, s));
    remat_fn_output(f, remat_slice(f, c, (int64_t[]){10}, (int64_t[]){20}, NULL));
    double *xv = xcalloc(FUSE_N, sizeof *xv);
    fill_special(xv, FUSE_N, 1.0);
    remat_tensor in = remat_tensor_f64(xv, 1, d);
    /* add, mul, square and neg fuse into the root sub; exp, sin, cos do not */
    assert_int_equal(check_fused_bits(f, 1, &in), 4);
    outs_t o;
    run_fn(f, 1, &in, &o, NULL, NULL);
    const double *tv = o.t[0].data, *ev = o.t[1].data, *cv = o.t[3].data;
    for (int i = 0; i < FUSE_N; i++) {
        /* exp, sin, cos: the CPU kernels' functions (SLEEF's, vmath.h), contract 0 */
        double want_e = rmi_vm_f64(RMI_VM_EXP, xv[i], 0);
        double want_t = (want_e + rmi_vm_f64(RMI_VM_SIN, xv[i], 0)) * rmi_vm_f64(RMI_VM_COS, xv[i], 0) -
                        -(xv[i] * xv[i]);
        /* a NaN from two NaN operands (x = NaN: sin's and x's) is either's: lane.h */
        const int t_ok = isnan(want_t) ? isnan(tv[i]) : memcmp(&tv[i], &want_t, sizeof want_t) == 0;
        if (memcmp(&ev[i], &want_e, sizeof want_e) != 0 || !t_ok)
            fail_msg("element %d: t = %.17g (want %.17g), e = %.17g (want %.17g)", i, tv[i], want_t, ev[i], want_e);
    }
    for (int i = 0; i < 10; i++) {
        double want_c = rmi_vm_f64(RMI_VM_COS, xv[10 + i], 0);
        assert_memory_equal(&cv[i], &want_c, sizeof want_c);
    }
    outs_free(&o);
    free(xv);
    remat_fn_free(f);
}

/* a + b * c stays two roundings: the build must not contract it into an
 * fma (ISO C11 mode: -ffp-contract=off), fused or not */
static void test_exec_fusion_does_not_contract_to_fma(void **state)
{
    (void)state;
    int64_t d[1] = {64};
    remat_fn *f = remat_fn_new("fuse_fma");
    remat_val a = remat_arg(f, "a", REMAT_F64, 1, d), b = remat_arg(f, "b", REMAT_F64, 1, d);
    remat_fn_output(f, remat_add(f, remat_mul(f, a, b), remat_neg(f, remat_mul(f, a, b))));
    double av[64], bv[64];
    for (int i = 0; i < 64; i++)
        av[i] = 1.0 + 0x1p-30 * (i + 1), bv[i] = 1.0 - 0x1p-30 * (i + 1);
    remat_tensor in[2] = {remat_tensor_f64(av, 1, d), remat_tensor_f64(bv, 1, d)};
    assert_true(check_fused_bits(f, 2, in) > 0);
    outs_t o;
    run_fn(f, 2, in, &o, NULL, NULL);
    /* a*b - a*b rounded twice is exactly 0; fma(a, b, -(a*b)) is the rounding error */
    const double *ov = o.t[0].data;
    for (int i = 0; i < 64; i++)
        assert_true(ov[i] == 0.0);
    outs_free(&o);
    remat_fn_free(f);
}

/* f compiled with jit mode j (fusion on); no_cache: without the disk cache */
static remat_program *compile_jit(const remat_fn *f, remat_jit_mode j, bool no_cache)
{
    remat_compile_options o;
    remat_compile_options_from_env(&o);
    o.jit = j;
    o.no_cache |= no_cache;
    remat_program *p = NULL;
    assert_int_equal(remat_compile_opts(f, remat_test_backend(), &o, &p), REMAT_OK);
    return p;
}

/* The transcendental groups of the test below: k < 11 one function (pow:
 * x^1.5) of 0.5x, times y, plus 2(y - x) (x read again after the call);
 * 11: gelu's tanh form; 12: exp(sin(x)) * x (two calls in a row) */
enum { N_TRANS_GROUPS = 13 };
static const remat_op trans_ops[11] = {REMAT_OP_EXP,   REMAT_OP_LOG,   REMAT_OP_SIN,      REMAT_OP_COS,
                                       REMAT_OP_TANH,  REMAT_OP_ERF,   REMAT_OP_LOG1P,    REMAT_OP_EXPM1,
                                       REMAT_OP_LOGISTIC, REMAT_OP_ERF_INV, REMAT_OP_POW};

static remat_val trans_group(remat_fn *f, int k, remat_val x, remat_val y)
{
    if (k == 11) { /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        remat_val in = remat_add(f, x, remat_mul_scalar(f, remat_integer_pow(f, x, 3), 0.044715));
        remat_val t = remat_tanh(f, remat_mul_scalar(f, in, 0.7978845608028654));
        return remat_mul(f, remat_mul_scalar(f, x, 0.5), remat_add_scalar(f, t, 1.0));
    }
    if (k == 12)
        return remat_mul(f, remat_exp(f, remat_sin(f, x)), x);
    remat_val h = remat_mul_scalar(f, x, 0.5);
    remat_val u = trans_ops[k] == REMAT_OP_POW ? remat_pow(f, h, 1.5) : remat_unary_at(f, trans_ops[k], h, REMAT_HERE);
    return remat_add(f, remat_mul(f, u, y), remat_mul_scalar(f, remat_sub(f, y, x), 2.0));
}

/* A group holding a transcendental compiles too (exec/fuse_jit.c): its
 * lanes in blocks, each transcendental one call of the interpreter's own
 * map on the block (backend/cpu/jit.c, "Blocked programs"), so the
 * interpreter's bits (contract 2), in f32 and f64, on one thread and split
 * across the pool (100003 elements), and in a group reading a broadcast row
 * in place (a step per row; rows of 300 and 1000: one and several blocks).
 * NaN results only as NaN (lane.h). */
static void test_exec_fusion_transcendental_groups_compile_with_interpreted_bits(void **state)
{
    (void)state;
    const remat_backend *be = remat_test_backend();
    if (!be->iface.compile_lanes || !be->iface.host_lane_cuts || !be->iface.can_compile_lanes())
        return; /* no libgccjit in this build: every group is interpreted */
    const int64_t shapes[4][2] = {{1, FUSE_N}, {1, 100003}, {7, 300}, {3, 1000}};
    for (int dt = 0; dt < 2; dt++)
        for (int si = 0; si < 4; si++)
            for (int k = 0; k < N_TRANS_GROUPS; k++) {
                if (si == 1 && k < 11 && k % 3) /* the big size: a few of the functions suffice */
                    continue;
                const remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
                const int64_t R = shapes[si][0], F = shapes[si][1], n = R * F;
                const bool grid = si >= 2;
                const int64_t d1[1] = {n}, d2[2] = {R, F};
                remat_fn *f = remat_fn_new("fuse_transcendental");
                remat_val x = remat_arg(f, "x", T, grid ? 2 : 1, grid ? d2 : d1);
                remat_val y = remat_arg(f, "y", T, grid ? 2 : 1, grid ? d2 : d1);
                if (grid) /* + a bias row read in place */
                    x = remat_add(f, x, remat_broadcast_in_dim(f, remat_arg(f, "b", T, 1, (int64_t[]){F}), 2, d2,
                                                               ((int[]){1})));
                remat_fn_output(f, trans_group(f, k, x, y));
                const size_t es = remat_dtype_size(T);
                void *v[3] = {xcalloc((size_t)n, es), xcalloc((size_t)n, es), xcalloc((size_t)F, es)};
                double *tmp = xcalloc((size_t)n, sizeof *tmp);
                for (int a = 0; a < 3; a++) {
                    fill_special(tmp, n, 1.0 + a);
                    for (int64_t i = 0; i < (a == 2 ? F : n); i++) {
                        const double t = tmp[(i * 7 + a) % n];
                        if (dt)
                            ((float *)v[a])[i] = (float)t;
                        else
                            ((double *)v[a])[i] = t;
                    }
                }
                remat_tensor in[3];
                for (int a = 0; a < 3; a++)
                    in[a] = (remat_tensor){.dtype = T, .data = v[a],
                                           .shape = a == 2 ? (remat_shape){.rank = 1, .dims = {F}}
                                                   : grid  ? (remat_shape){.rank = 2, .dims = {R, F}}
                                                           : (remat_shape){.rank = 1, .dims = {n}}};
                remat_program *pc = compile_jit(f, REMAT_JIT_ALWAYS, false), *pi = compile_jit(f, REMAT_JIT_NEVER, false);
                if (pc->n_fused_compiled != 1) /* the whole output is one group */
                    fail_msg("group %d (%s, %lldx%lld): %d groups compiled, %d ops fused", k,
                             k < 11 ? remat_op_name(trans_ops[k]) : "chain", (long long)R, (long long)F,
                             (int)pc->n_fused_compiled, (int)pc->n_fused);
                assert_int_equal(pi->n_fused_compiled, 0);
                outs_t oc, oi;
                run_prog(pc, grid ? 3 : 2, in, &oc, NULL);
                run_prog(pi, grid ? 3 : 2, in, &oi, NULL);
                if (!same_bits_or_nan(&oc.t[0], &oi.t[0]))
                    fail_msg("group %d (%s) %s %lldx%lld: compiled bits differ from interpreted", k,
                             k < 11 ? remat_op_name(trans_ops[k]) : "chain", dt ? "f32" : "f64", (long long)R,
                             (long long)F);
                outs_free(&oc), outs_free(&oi);
                remat_program_free(pc), remat_program_free(pi);
                free(tmp), free(v[0]), free(v[1]), free(v[2]);
                remat_fn_free(f);
            }
}

/* Compiled fusion (exec/fuse_jit.c): an arithmetic group (selects,
 * compares, scalar operands, powers, max/min/relu) runs as one compiled loop
 * with the blocked interpreter's bits (contract 2), on one thread and split
 * across the pool (contract 4, n past the split grain); a group holding a
 * transcendental compiles as well (the test above), and jit = never
 * compiles nothing. NaN results only as NaN (lane.h: their sign may differ). */
static void test_exec_fusion_compiled_loop_matches_interpreted(void **state)
{
    (void)state;
    const remat_backend *be = remat_test_backend();
    if (!be->iface.compile_lanes || !be->iface.host_lane_cuts || !be->iface.can_compile_lanes())
        return; /* no libgccjit in this build: every group is interpreted (test_jit_cache covers it) */
    const int64_t sizes[2] = {FUSE_N, 100003};
    for (int dt = 0; dt < 2; dt++)
        for (int si = 0; si < 2; si++) {
            const remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
            const int64_t d[1] = {sizes[si]};
            remat_fn *f = remat_fn_new("fuse_compiled");
            remat_val x = remat_arg(f, "x", T, 1, d), y = remat_arg(f, "y", T, 1, d);
            remat_val a = remat_add(f, remat_mul_scalar(f, x, 0.5), remat_div(f, y, remat_add_scalar(f, x, 3.0)));
            remat_val b = remat_select(f, remat_gt(f, a, y), remat_relu(f, a), remat_integer_pow(f, y, 3));
            remat_val c = remat_sub(f, remat_max(f, b, x), remat_min(f, remat_square(f, a), remat_neg(f, y)));
            remat_fn_output(f, c);
            remat_fn_output(f, remat_mul(f, remat_sin(f, x), remat_add_scalar(f, y, 1.0))); /* transcendental */
            double *tmp = xcalloc((size_t)d[0], sizeof *tmp), *tmp2 = xcalloc((size_t)d[0], sizeof *tmp2);
            fill_special(tmp, d[0], 1.0);
            for (int64_t i = 0; i < d[0]; i++)
                tmp2[i] = tmp[(i * 7) % d[0]];
            void *xv = xcalloc((size_t)d[0], remat_dtype_size(T)), *yv = xcalloc((size_t)d[0], remat_dtype_size(T));
            for (int64_t i = 0; i < d[0]; i++) {
                if (dt)
                    ((float *)xv)[i] = (float)tmp[i], ((float *)yv)[i] = (float)tmp2[i];
                else
                    ((double *)xv)[i] = tmp[i], ((double *)yv)[i] = tmp2[i];
            }
            remat_tensor in[2] = {{.dtype = T, .shape = {.rank = 1, .dims = {d[0]}}, .data = xv},
                                  {.dtype = T, .shape = {.rank = 1, .dims = {d[0]}}, .data = yv}};
            remat_program *pc = compile_jit(f, REMAT_JIT_ALWAYS, false), *pi = compile_jit(f, REMAT_JIT_NEVER, false);
            assert_int_equal(pc->n_fused_compiled, 2); /* c's group and the sin group */
            assert_int_equal(pi->n_fused_compiled, 0);
            /* auto: taken once at hand (compiled just above); 100003 elements
             * x 12 ops pass the work bound, 1000 x 12 do not */
            remat_program *pa = compile_jit(f, REMAT_JIT_AUTO, true);
            assert_int_equal(pa->n_fused_compiled, 2);
            remat_program_free(pa);
            assert_int_equal(pc->n_fused, pi->n_fused);
            outs_t oc, oi;
            run_prog(pc, 2, in, &oc, NULL);
            run_prog(pi, 2, in, &oi, NULL);
            for (int k = 0; k < 2; k++)
                for (int64_t i = 0; i < d[0]; i++) {
                    const double vc = dt ? ((float *)oc.t[k].data)[i] : ((double *)oc.t[k].data)[i];
                    const double vi = dt ? ((float *)oi.t[k].data)[i] : ((double *)oi.t[k].data)[i];
                    const size_t es = remat_dtype_size(T);
                    if (isnan(vi) ? !isnan(vc)
                                  : memcmp((char *)oc.t[k].data + i * es, (char *)oi.t[k].data + i * es, es) != 0)
                        fail_msg("%s n=%lld output %d element %lld: compiled %a, interpreted %a",
                                 dt ? "f32" : "f64", (long long)d[0], k, (long long)i, vc, vi);
                }
            if (si == 0) {
                remat_fn *g = remat_fn_new("fuse_auto_small");
                remat_val gx = remat_arg(g, "x", T, 1, (int64_t[]){997});
                remat_fn_output(g, remat_mul(g, remat_add_scalar(g, gx, 0.5 + dt), gx));
                remat_program *ps = compile_jit(g, REMAT_JIT_AUTO, true);
                assert_int_equal(ps->n_fused_compiled, 0);
                remat_program_free(ps);
                remat_fn_free(g);
            }
            outs_free(&oc), outs_free(&oi);
            remat_program_free(pc), remat_program_free(pi);
            free(tmp), free(tmp2), free(xv), free(yv);
            remat_fn_free(f);
        }
}

/* Broadcasts of a row or column vector read only inside a fused group are
 * read in place (fuse.c, remat_fused_op.row_in/col_in): no (B, F) copy of a
 * bias in the arena, the bits of the materialised broadcast, interpreted
 * (rows shorter and longer than a 256-element block: some blocks wrap a row)
 * and compiled (a step per row). A rank-3 group whose row (lanes F) and
 * column (lanes B*F) need different grids reads one in place and
 * materialises the other. */
static void bcast_group(remat_fn *f, remat_dtype T, int64_t B, int64_t F, bool rank3)
{
    const int64_t d2[2] = {B, F}, d3[3] = {2, B, F};
    const int r = rank3 ? 3 : 2;
    const int64_t *d = rank3 ? d3 : d2;
    remat_val x = remat_arg(f, "x", T, r, d);
    remat_val b = remat_arg(f, "b", T, 1, (int64_t[]){F}), c = remat_arg(f, "c", T, 1, (int64_t[]){rank3 ? 2 : B});
    remat_val b1 = remat_arg(f, "b1", T, 2, (int64_t[]){1, F});
    remat_val bb = remat_broadcast_in_dim(f, b, r, d, ((int[]){r - 1}));
    remat_val cc = remat_broadcast_in_dim(f, c, r, d, ((int[]){0}));
    remat_val bb1 = remat_broadcast_in_dim(f, b1, r, d, ((int[]){r - 2, r - 1}));
    remat_val h = remat_add(f, remat_mul(f, x, cc), bb);
    remat_fn_output(f, remat_sub(f, remat_relu(f, h), remat_mul(f, remat_mul_scalar(f, bb, 0.5), bb1)));
}

static void test_exec_fusion_reads_broadcasts_in_place(void **state)
{
    (void)state;
    const remat_backend *be = remat_test_backend();
    const bool jit = be->iface.compile_lanes && be->iface.host_lane_cuts && be->iface.can_compile_lanes();
    const int64_t shapes[3][2] = {{13, 100}, {7, 300}, {5, 40}};
    for (int dt = 0; dt < 2; dt++)
        for (int si = 0; si < 3; si++) {
            const remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
            const int64_t B = shapes[si][0], F = shapes[si][1];
            const bool rank3 = si == 2;
            const int64_t n = (rank3 ? 2 : 1) * B * F, nc = rank3 ? 2 : B;
            const size_t es = remat_dtype_size(T);
            remat_fn *f = remat_fn_new("fuse_bcast");
            bcast_group(f, T, B, F, rank3);
            void *v[4] = {xcalloc((size_t)n, es), xcalloc((size_t)F, es), xcalloc((size_t)nc, es),
                          xcalloc((size_t)F, es)};
            const int64_t len[4] = {n, F, nc, F};
            for (int k = 0; k < 4; k++) {
                double *tmp = xcalloc((size_t)len[k], sizeof *tmp);
                fill_special(tmp, len[k], 1.0 + k);
                for (int64_t i = 0; i < len[k]; i++) {
                    if (dt)
                        ((float *)v[k])[i] = (float)tmp[(i * 7 + k) % len[k]];
                    else
                        ((double *)v[k])[i] = tmp[(i * 7 + k) % len[k]];
                }
                free(tmp);
            }
            remat_tensor in[4] = {
                {.dtype = T, .shape = rank3 ? (remat_shape){.rank = 3, .dims = {2, B, F}}
                                            : (remat_shape){.rank = 2, .dims = {B, F}}, .data = v[0]},
                {.dtype = T, .shape = {.rank = 1, .dims = {F}}, .data = v[1]},
                {.dtype = T, .shape = {.rank = 1, .dims = {nc}}, .data = v[2]},
                {.dtype = T, .shape = {.rank = 2, .dims = {1, F}}, .data = v[3]}};
            /* 9 ops (mul_scalar: a mul): every one but the root inside its instruction; rank 3:
             * the column's broadcast stays an instruction of its own */
            assert_int_equal(check_fused_bits(f, 4, in), rank3 ? 7 : 8);
            remat_program *pi = compile_jit(f, REMAT_JIT_NEVER, false);
            remat_memory_plan plan;
            remat_program_plan(pi, &plan);
            /* no broadcast's (n)-element buffer (rank 3: the column's) */
            if (rank3)
                assert_true(plan.arena_bytes >= (size_t)n * es && plan.arena_bytes < 2 * (size_t)n * es);
            else
                assert_true(plan.arena_bytes < (size_t)n * es);
            if (jit) {
                remat_program *pc = compile_jit(f, REMAT_JIT_ALWAYS, false);
                assert_int_equal(pc->n_fused_compiled, 1);
                outs_t oc, oi;
                run_prog(pc, 4, in, &oc, NULL);
                run_prog(pi, 4, in, &oi, NULL);
                if (!same_bits_or_nan(&oc.t[0], &oi.t[0]))
                    fail_msg("%s %lldx%lld: compiled bits differ from interpreted", dt ? "f32" : "f64",
                             (long long)B, (long long)F);
                outs_free(&oc), outs_free(&oi);
                remat_program_free(pc);
            }
            remat_program_free(pi);
            for (int k = 0; k < 4; k++)
                free(v[k]);
            remat_fn_free(f);
        }
}

/* ==== in-place concatenate, add of a pad ==== */

/* f compiled with neither fusion nor the in-place rewrites
 * (REMAT_NO_FUSION=1 REMAT_NO_INPLACE=1) and as usual, run on the same
 * inputs: the same bits, primitive-op counts and plan/measured agreement.
 * Returns how many ops the rewrites took out of the unfused program's
 * instructions (REMAT_NO_FUSION=1 alone). */
static int32_t check_inplace_bits(const remat_fn *f, int n_in, const remat_tensor *in)
{
    setenv("REMAT_NO_FUSION", "1", 1);
    setenv("REMAT_NO_INPLACE", "1", 1);
    remat_program *pu = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    remat_program *pn = compile_ok(f); /* fused, not in place */
    unsetenv("REMAT_NO_INPLACE");
    remat_program *pf = compile_ok(f);
    assert_int_equal(pu->n_fused, 0);
    remat_program *ps[3] = {pu, pn, pf};
    outs_t o[3];
    remat_stats st[3];
    remat_memory_plan pl[3];
    for (int i = 0; i < 3; i++) {
        run_prog(ps[i], n_in, in, &o[i], &st[i]);
        remat_program_plan(ps[i], &pl[i]);
        assert_int_equal(st[i].ops_executed, pl[i].instructions);
        assert_int_equal(st[i].ops_executed, st[0].ops_executed);
        assert_int_equal(st[i].recomputed_ops, st[0].recomputed_ops);
        for (int k = 0; k < REMAT_OP_COUNT; k++)
            assert_int_equal(st[i].op_counts[k], st[0].op_counts[k]);
        assert_int_equal(st[i].peak_arena_bytes, pl[i].arena_bytes);
        assert_int_equal(ps[i]->n_instrs + ps[i]->n_fused, pu->n_instrs);
        assert_int_equal(o[i].n, o[0].n);
        for (int j = 0; j < o[0].n; j++) {
            if (!same_bits_or_nan(&o[0].t[j], &o[i].t[j]))
                fail_msg("program %d, output %d: bits differ from the plain program", i, j);
        }
    }
    setenv("REMAT_NO_FUSION", "1", 1);
    remat_program *pi = compile_ok(f);
    unsetenv("REMAT_NO_FUSION");
    int32_t saved = pu->n_instrs - pi->n_instrs;
    remat_program_free(pi);
    for (int i = 0; i < 3; i++) {
        outs_free(&o[i]);
        remat_program_free(ps[i]);
    }
    return saved;
}

static void fill_t(remat_dtype T, void *dst, int64_t n, double scale)
{
    double *tmp = xcalloc((size_t)n + 1, sizeof *tmp);
    fill_special(tmp, n, scale);
    for (int64_t i = 0; i < n; i++) {
        if (T == REMAT_F64)
            ((double *)dst)[i] = tmp[i];
        else
            ((float *)dst)[i] = (float)tmp[i];
    }
    free(tmp);
}

/* ==== intermediates in output buffers (out_scratch.c) ==== */

/* The gradient of a D-layer relu(h @ w_l) chain (B x W activations, W x W
 * weights, f32): without checkpointing every layer's activation is kept for
 * the backward, D activations of B x W at the start of the backward, in the
 * arena. Each w_l's gradient buffer (W x W, written in layer l's backward)
 * holds the activations of layer l and later ones until then, so the arena
 * keeps at most the last layers' and the backward's few temporaries. Bits,
 * op counts and measured = predicted as with REMAT_NO_INPLACE=1, which keeps
 * everything in the arena. */
static void test_exec_out_scratch_holds_activations_in_gradients(void **state)
{
    (void)state;
    enum { D = 6, B = 32, W = 64 };
    const size_t act = (size_t)B * W * sizeof(float);
    remat_fn *f = remat_fn_new("relu_chain");
    remat_val h = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){B, W}));
    for (int l = 0; l < D; l++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", l);
        remat_val w = remat_arg(f, name, REMAT_F32, 2, ((int64_t[]){W, W}));
        h = remat_relu(f, remat_matmul(f, h, w));
    }
    remat_fn_output(f, remat_sum_all(f, remat_square(f, h)));
    int argnums[D];
    for (int l = 0; l < D; l++)
        argnums[l] = l + 1;
    remat_fn *g = grad_ok(f, D, argnums);
    remat_tensor in[D + 1];
    float *data[D + 1];
    for (int i = 0; i <= D; i++) {
        int64_t n = i ? W * W : B * W;
        data[i] = xcalloc((size_t)n, sizeof(float));
        fill_t(REMAT_F32, data[i], n, i ? 0.2 : 1.0);
        in[i] = i ? remat_tensor_f32(data[i], 2, (int64_t[]){W, W}) : remat_tensor_f32(data[i], 2, (int64_t[]){B, W});
    }
    check_inplace_bits(g, D + 1, in);
    setenv("REMAT_NO_INPLACE", "1", 1);
    remat_program *pa = compile_ok(g);
    unsetenv("REMAT_NO_INPLACE");
    remat_program *po = compile_ok(g);
    remat_memory_plan pla, plo;
    remat_program_plan(pa, &pla);
    remat_program_plan(po, &plo);
    /* all in the arena: the D activations the backward reads, at least */
    assert_true(pla.arena_bytes >= D * act);
    /* in the gradients: no more than two activations' worth stays */
    assert_true(plo.arena_bytes <= 2 * act);
    outs_t o;
    remat_stats st;
    run_prog(po, D + 1, in, &o, &st);
    assert_int_equal(st.peak_arena_bytes, plo.arena_bytes);
    outs_free(&o);
    /* a program whose outputs are too small to hold anything keeps its arena */
    remat_fn *fs = remat_fn_new("sum_of_relu");
    remat_val x = remat_arg(fs, "x", REMAT_F32, 2, ((int64_t[]){W, W}));
    remat_fn_output(fs, remat_sum_all(fs, remat_exp(fs, remat_relu(fs, remat_matmul(fs, x, x)))));
    remat_program *ps = compile_ok(fs);
    remat_memory_plan pls;
    remat_program_plan(ps, &pls);
    assert_true(pls.arena_bytes >= act);
    remat_program_free(ps);
    remat_fn_free(fs);
    remat_program_free(pa);
    remat_program_free(po);
    for (int i = 0; i <= D; i++)
        free(data[i]);
    remat_fn_free(g);
    remat_fn_free(f);
}

/* rows of a (3,B) derivative, each computed from a row view of the state,
 * one of them through a reshape from (B,): the concatenate is elided; its
 * rows are read again after it (their storage is its buffer) */
static void test_exec_inplace_concat_rows_of_a_state(void **state)
{
    (void)state;
    enum { B = 300 };
    for (int dt = 0; dt < 2; dt++) {
        remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
        remat_fn *f = remat_fn_new("concat_rows");
        remat_val y = remat_arg(f, "y", T, 2, (int64_t[]){3, B});
        remat_val r[3], d[3];
        for (int i = 0; i < 3; i++)
            r[i] = remat_slice(f, y, (int64_t[]){i, 0}, (int64_t[]){i + 1, B}, (int64_t[]){1, 1});
        d[0] = remat_mul(f, r[0], r[1]);
        d[1] = remat_reshape(f, remat_exp(f, remat_reshape(f, r[1], 1, (int64_t[]){B})), 2, (int64_t[]){1, B});
        d[2] = remat_sub(f, remat_sin(f, r[2]), r[0]);
        remat_val dy = remat_concatenate(f, 3, d, 0);
        remat_val out = remat_add(f, y, remat_mul_scalar(f, dy, 0.25));
        remat_fn_output(f, out);
        remat_fn_output(f, remat_add(f, d[0], d[2]));
        void *yv = xcalloc(3 * B, sizeof(double));
        fill_t(T, yv, 3 * B, 1.0);
        remat_tensor in = {.dtype = T, .shape = {.rank = 2, .dims = {3, B}}, .data = yv};
        assert_true(check_inplace_bits(f, 1, &in) >= 1);
        free(yv);
        remat_fn_free(f);
    }
}

/* elements of a (3,) vector (an ODE right-hand side), and concatenates that
 * must keep their copy: an argument operand, one operand twice, a view, an
 * operand that is an output, an operand placed in an earlier concatenate,
 * and a concatenate along an axis after a leading axis > 1 */
static void test_exec_inplace_concat_vector_and_refusals(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("concat_vec");
    remat_val y = remat_arg(f, "y", REMAT_F64, 1, (int64_t[]){3});
    remat_val m = remat_arg(f, "m", REMAT_F64, 2, (int64_t[]){2, 4});
    remat_val e[3];
    for (int i = 0; i < 3; i++)
        e[i] = remat_slice(f, y, (int64_t[]){i}, (int64_t[]){i + 1}, (int64_t[]){1});
    remat_val a = remat_neg(f, remat_mul(f, e[0], e[1]));
    remat_val b = remat_add(f, e[1], e[2]);
    remat_val c = remat_exp(f, e[2]);
    remat_val v1 = remat_concatenate(f, 3, (remat_val[]){a, b, c}, 0);   /* in place */
    remat_val v2 = remat_concatenate(f, 3, (remat_val[]){a, e[1], y}, 0); /* placed, view, argument */
    remat_val s = remat_sin(f, b);
    remat_val v3 = remat_concatenate(f, 2, (remat_val[]){s, s}, 0);       /* twice */
    remat_val o = remat_cos(f, c);
    remat_val v4 = remat_concatenate(f, 2, (remat_val[]){o, remat_tanh(f, c)}, 0); /* an output */
    remat_val mm = remat_exp(f, m);
    remat_val v5 = remat_concatenate(f, 2, (remat_val[]){mm, remat_sin(f, m)}, 1); /* (2,8): rows interleave */
    remat_fn_output(f, remat_mul(f, v1, y));
    remat_fn_output(f, v2);
    remat_fn_output(f, v3);
    remat_fn_output(f, v4);
    remat_fn_output(f, o);
    remat_fn_output(f, v5);
    double yv[3] = {-0.0, NAN, 0.5}, mv[8] = {1, -2, 0.5, -0.0, NAN, 3, -1, 2};
    remat_tensor in[2] = {remat_tensor_f64(yv, 1, (int64_t[]){3}), remat_tensor_f64(mv, 2, (int64_t[]){2, 4})};
    assert_int_equal(check_inplace_bits(f, 2, in), 1); /* v1 alone */
    remat_fn_free(f);
}

/* add(acc, pad(g)) and add(pad(g), acc) for rows of a (3,B) cotangent, a
 * column of a (B,3) one and a block of a rank-3 array (both left as pad
 * and add: not one contiguous run), an element of a (3,) one and a slab of
 * a rank-3 array, with -0.0 and NaN in both operands: x + 0 outside g, as
 * the pad's zeros gave */
static void test_exec_add_pad_matches_pad_then_add(void **state)
{
    (void)state;
    struct { int rank; int64_t dims[3], gdims[3], low[3]; int absorbed; } cases[] = {
        {2, {3, 257}, {1, 257}, {1, 0}, 2},
        {2, {3, 257}, {1, 257}, {2, 0}, 2},
        {2, {257, 3}, {257, 1}, {0, 2}, 0},
        {1, {3}, {1}, {1}, 2},
        {3, {4, 5, 6}, {2, 3, 2}, {1, 0, 3}, 0},
        {3, {4, 5, 6}, {1, 2, 6}, {2, 3, 0}, 2},
    };
    for (int dt = 0; dt < 2; dt++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int order = 0; order < 2; order++) {
                remat_dtype T = dt ? REMAT_F32 : REMAT_F64;
                int r = cases[c].rank;
                int64_t high[3] = {0}, interior[3] = {0}, n = 1, ng = 1;
                for (int i = 0; i < r; i++) {
                    high[i] = cases[c].dims[i] - cases[c].gdims[i] - cases[c].low[i];
                    n *= cases[c].dims[i];
                    ng *= cases[c].gdims[i];
                }
                remat_fn *f = remat_fn_new("add_pad");
                remat_val x = remat_arg(f, "x", T, r, cases[c].dims);
                remat_val g = remat_arg(f, "g", T, r, cases[c].gdims);
                remat_val acc = remat_mul(f, x, x); /* an arena value */
                remat_val p = remat_pad(f, remat_neg(f, g), cases[c].low, high, interior);
                remat_val s = order ? remat_add(f, p, acc) : remat_add(f, acc, p);
                remat_val p2 = remat_pad(f, remat_exp(f, g), cases[c].low, high, interior);
                remat_fn_output(f, remat_add(f, x, p2)); /* x an argument */
                remat_fn_output(f, s);
                void *xv = xcalloc((size_t)n, sizeof(double)), *gv = xcalloc((size_t)ng, sizeof(double));
                fill_t(T, xv, n, 1.0);
                fill_t(T, gv, ng, 2.0);
                if (T == REMAT_F64) /* -0.0 outside the region: x * x is +0, the argument is not */
                    ((double *)xv)[0] = -0.0;
                else
                    ((float *)xv)[0] = -0.0f;
                remat_tensor in[2] = {{.dtype = T, .shape = remat_shape_make(r, cases[c].dims), .data = xv},
                                      {.dtype = T, .shape = remat_shape_make(r, cases[c].gdims), .data = gv}};
                assert_int_equal(check_inplace_bits(f, 2, in), cases[c].absorbed);
                free(xv);
                free(gv);
                remat_fn_free(f);
            }
}

/* a pad read twice, an output pad, interior padding and an add of two pads:
 * the pad read twice and the interior one stay pads */
static void test_exec_add_pad_refusals_and_two_pads(void **state)
{
    (void)state;
    remat_fn *f = remat_fn_new("add_pad_refusals");
    remat_val x = remat_arg(f, "x", REMAT_F64, 1, (int64_t[]){7});
    remat_val g = remat_arg(f, "g", REMAT_F64, 1, (int64_t[]){3});
    remat_val p = remat_pad(f, g, (int64_t[]){1}, (int64_t[]){3}, (int64_t[]){0});
    remat_val pi = remat_pad(f, g, (int64_t[]){0}, (int64_t[]){2}, (int64_t[]){1});
    remat_val q = remat_pad(f, remat_neg(f, g), (int64_t[]){4}, (int64_t[]){0}, (int64_t[]){0});
    remat_val q2 = remat_pad(f, remat_exp(f, g), (int64_t[]){2}, (int64_t[]){2}, (int64_t[]){0});
    remat_fn_output(f, remat_add(f, x, p));
    remat_fn_output(f, remat_mul(f, p, x));
    remat_fn_output(f, remat_add(f, x, pi));
    remat_fn_output(f, remat_add(f, q, q2)); /* q2 absorbed, q read as x */
    double xv[7] = {-0.0, NAN, 1, -2, -0.0, 3, 0.0}, gv[3] = {-0.0, NAN, 0.5};
    remat_tensor in[2] = {remat_tensor_f64(xv, 1, (int64_t[]){7}), remat_tensor_f64(gv, 1, (int64_t[]){3})};
    assert_int_equal(check_inplace_bits(f, 2, in), 1);
    remat_fn_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_fusion_chain_matches_unfused_bits),
        cmocka_unit_test(test_exec_fusion_runs_on_a_small_stack),
        cmocka_unit_test(test_exec_fusion_gelu_erf_matches_unfused_bits),
        cmocka_unit_test(test_exec_fusion_scalar_operands_selects_compares),
        cmocka_unit_test(test_exec_fusion_shared_values_are_not_fused_away),
        cmocka_unit_test(test_exec_fusion_does_not_contract_to_fma),
        cmocka_unit_test(test_exec_fusion_compiled_loop_matches_interpreted),
        cmocka_unit_test(test_exec_fusion_reads_broadcasts_in_place),
        cmocka_unit_test(test_exec_fusion_transcendental_groups_compile_with_interpreted_bits),
        cmocka_unit_test(test_exec_inplace_concat_rows_of_a_state),
        cmocka_unit_test(test_exec_inplace_concat_vector_and_refusals),
        cmocka_unit_test(test_exec_add_pad_matches_pad_then_add),
        cmocka_unit_test(test_exec_add_pad_refusals_and_two_pads),
        cmocka_unit_test(test_exec_out_scratch_holds_activations_in_gradients),
    };
    rng_seed(0x853c49e6748fea9bull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
