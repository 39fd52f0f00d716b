/*
 * test_exec_ctx.c — the device is passed, not thread-current
 * (backend_impl.h remat_exec_ctx): every kernel adapter and memory entry is
 * handed the context of the run (or compile) it works for.
 *
 * A fake device backend over host memory (the CPU's kernels, wrapped) gives
 * each program a state of its own (program_new), as the CUDA backend gives
 * each a stream, and records every entry's context: a kernel or a memory
 * entry called with no context, another backend's, a freed state or another
 * program's fails the test. Four programs (a scan and a while loop,
 * interpreted: their HOP instructions run sub-programs; and their
 * gradients, whose loop runtimes move carries and cotangents with mem_copy
 * / mem_fill and read a while loop's count through copy_out) run
 * interleaved from one thread; each run's kernels must all see its own program's state, and the
 * compile's uploads a short-lived state closed when the compile ends.
 * Results are compared with the CPU backend's within 1e-12 (the same
 * kernels: the bits agree too, but no contract says so for a wrapped backend).
 *
 * The slow tier on a device (backend_impl.h host_alloc): the fake's
 * host_alloc / host_free keep a list of live blocks, and copy_in / copy_out
 * count the bytes moved into and out of them. Two-tier scan and while
 * gradients and an offload policy's run on the fake: their slow stores are
 * host_alloc'ed when the run begins, written with copy_out and read with
 * copy_in, freed by its end, and the bytes planned are those measured; the
 * gradients are the CPU's bit for bit (contract 0: the fake runs the CPU's
 * kernels on the same operands; contract 3: the CPU's fusion and where a
 * value lives, a file or host memory, never change the ops; both run the
 * loops interpreted, in the schedule's order).
 */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "exec/program_impl.h"
#include "remat/remat.h"

enum { MAGIC = 0x5eed, LEN = 20 };

typedef struct {
    int magic;
    bool live;
    int64_t kernels, mem_ops;
} token;

static remat_backend fake;
static const remat_backend_iface *cpu;
static int n_opened, n_live;
static char violation[256];

/* the host memory host_alloc gave, and what copy_in / copy_out moved into and out of it */
enum { MAX_BLOCKS = 8 };
static struct {
    char *p;
    size_t bytes;
} blocks[MAX_BLOCKS];
static int n_host_allocs, n_host_frees;
static bool host_alloc_fails; /* host_alloc returns NULL (out of memory) */
static size_t host_alloc_bytes, host_bytes_out, host_bytes_in; /* out: device -> block, in: block -> device */

static void note(const char *what, const char *why)
{
    if (!violation[0])
        snprintf(violation, sizeof violation, "%s: %s", what, why);
}

/* cx must be this backend's, with a live state unless need_state is false */
static token *check(const remat_exec_ctx *cx, bool need_state, const char *what)
{
    if (!cx) {
        note(what, "no context");
        return NULL;
    }
    if (cx->be != &fake)
        note(what, "another backend's context");
    token *t = cx->state;
    if (!t) {
        if (need_state)
            note(what, "a context without a state");
        return NULL;
    }
    if (t->magic != MAGIC || !t->live)
        note(what, "a freed or foreign state");
    return t;
}

typedef struct {
    remat_kernel_fn fn;
    const void *aux;
} wrapped;

static void k_wrapped(const remat_exec_ctx *cx, const remat_instr *I)
{
    token *t = check(cx, true, "a kernel");
    if (t)
        t->kernels++;
    const wrapped *w = I->aux;
    remat_instr sub = *I;
    sub.fn = w->fn, sub.aux = w->aux;
    w->fn(cx, &sub);
}

static remat_status fake_lower(const remat_exec_op *op, remat_instr *ins, void *(*alloc)(void *, size_t), void *ctx)
{
    remat_status st = cpu->lower(op, ins, alloc, ctx);
    if (st != REMAT_OK)
        return st;
    wrapped *w = alloc(ctx, sizeof *w);
    if (!w)
        return REMAT_ERR_NOMEM;
    *w = (wrapped){.fn = ins->fn, .aux = ins->aux};
    ins->fn = k_wrapped, ins->aux = w;
    return REMAT_OK;
}

static void *fake_alloc(const remat_exec_ctx *cx, size_t bytes)
{
    check(cx, false, "mem_alloc");
    return cpu->mem_alloc(cx, bytes);
}
static void fake_free(const remat_exec_ctx *cx, void *p)
{
    check(cx, false, "mem_free");
    cpu->mem_free(cx, p);
}
static void fake_copy(const remat_exec_ctx *cx, void *dst, const void *src, size_t bytes)
{
    token *t = check(cx, true, "mem_copy / copy_in / copy_out");
    if (t)
        t->mem_ops++;
    memcpy(dst, src, bytes);
}
static bool in_block(const void *p, size_t bytes)
{
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].p && (const char *)p >= blocks[i].p && (const char *)p + bytes <= blocks[i].p + blocks[i].bytes)
            return true;
    return false;
}
static void fake_copy_in(const remat_exec_ctx *cx, void *dst, const void *host_src, size_t bytes)
{
    if (in_block(host_src, bytes))
        host_bytes_in += bytes;
    fake_copy(cx, dst, host_src, bytes);
}
static void fake_copy_out(const remat_exec_ctx *cx, void *host_dst, const void *src, size_t bytes)
{
    if (in_block(host_dst, bytes))
        host_bytes_out += bytes;
    fake_copy(cx, host_dst, src, bytes);
}
static void *fake_host_alloc(const remat_exec_ctx *cx, size_t bytes)
{
    check(cx, false, "host_alloc");
    if (host_alloc_fails)
        return NULL;
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (!blocks[i].p) {
            if (!(blocks[i].p = malloc(bytes ? bytes : 1)))
                return NULL;
            blocks[i].bytes = bytes;
            n_host_allocs++;
            host_alloc_bytes += bytes;
            return blocks[i].p;
        }
    note("host_alloc", "more than MAX_BLOCKS live blocks");
    return NULL;
}
static void fake_host_free(const remat_exec_ctx *cx, void *p)
{
    check(cx, false, "host_free");
    if (!p)
        return;
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].p == p) {
            free(p);
            blocks[i].p = NULL;
            n_host_frees++;
            return;
        }
    note("host_free", "memory host_alloc did not give");
}
static void host_counts_reset(void)
{
    n_host_allocs = n_host_frees = 0;
    host_alloc_bytes = host_bytes_out = host_bytes_in = 0;
}

static void fake_fill(const remat_exec_ctx *cx, void *dst, remat_dtype dt, double value, size_t n)
{
    token *t = check(cx, true, "mem_fill");
    if (t)
        t->mem_ops++;
    cpu->mem_fill(cx, dst, dt, value, n);
}
static void *fake_state_new(remat_backend *be)
{
    token *t = calloc(1, sizeof *t);
    if (be != &fake)
        note("program_new", "another backend");
    if (t) {
        *t = (token){.magic = MAGIC, .live = true};
        n_opened++, n_live++;
    }
    return t;
}
static void fake_state_free(void *state)
{
    token *t = state;
    if (t->magic != MAGIC || !t->live)
        note("program_free", "a freed or foreign state");
    t->live = false, t->magic = 0;
    n_live--;
    free(t);
}
static remat_status fake_finish(const remat_exec_ctx *cx)
{
    check(cx, true, "finish");
    return REMAT_OK;
}

/* The CPU's lowering and memory, with a state per program, no fusion and
 * no compiled loops (the loops run their sub-programs op by op). */
static remat_backend *fake_backend(void)
{
    cpu = &remat_backend_cpu()->iface;
    violation[0] = 0;
    fake.iface = *cpu;
    fake.context = NULL;
    fake.iface.name = "fake-device";
    fake.iface.lower = fake_lower;
    fake.iface.lower_fused = NULL;
    fake.iface.lower_add_pad = NULL;
    fake.iface.compile_lanes = NULL;
    fake.iface.can_compile_lanes = NULL;
    fake.iface.load_lanes = NULL;
    fake.iface.lanes_compile_ns = NULL;
    fake.iface.run_lanes = NULL;
    fake.iface.mem_alloc = fake_alloc;
    fake.iface.mem_free = fake_free;
    fake.iface.mem_copy = fake_copy;
    fake.iface.mem_fill = fake_fill;
    fake.iface.copy_in = fake_copy_in;
    fake.iface.copy_out = fake_copy_out;
    fake.iface.host_alloc = fake_host_alloc;
    fake.iface.host_free = fake_host_free;
    fake.iface.program_new = fake_state_new;
    fake.iface.program_free = fake_state_free;
    fake.iface.finish = fake_finish;
    fake.iface.on_host = NULL;
    return &fake;
}

/* loss = sum(carry after LEN steps of c + 0.1 (sin x_t - k c)) */
static remat_fn *scan_loss_with(const remat_schedule_spec *sched)
{
    const int64_t d3[1] = {3};
    remat_fn *body = remat_fn_new("step");
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, d3);
    remat_val x = remat_arg(body, "x_t", REMAT_F64, 1, d3);
    remat_val k = remat_arg(body, "k", REMAT_F64, 1, d3);
    remat_val rate = remat_sub(body, remat_sin(body, x), remat_mul(body, k, c));
    remat_fn_output(body, remat_add(body, c, remat_mul_scalar(body, rate, 0.1)));
    assert_fn_ok(body);
    remat_fn *f = remat_fn_new("scan_loss");
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, d3);
    remat_val xs = remat_arg(f, "xs", REMAT_F64, 2, ((int64_t[]){LEN, 3}));
    remat_val kk = remat_arg(f, "k", REMAT_F64, 1, d3);
    remat_val cout;
    remat_scan_options opt = {.schedule = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 3}};
    if (sched)
        opt.schedule = *sched;
    assert_int_equal(remat_scan(f, body, LEN, 1, &c0, 1, &xs, 1, &kk, &opt, &cout, NULL), REMAT_OK);
    remat_fn_output(f, remat_sum_all(f, cout));
    assert_fn_ok(f);
    remat_fn_free(body);
    return f;
}

static remat_fn *scan_loss(void) { return scan_loss_with(NULL); }

/* the same step in a while loop of 8 steps of 0.125 up to t = 1 (a data-dependent count), loss = sum(c) */
static remat_fn *while_loss_with(const remat_schedule_spec *sched)
{
    const int64_t d3[1] = {3};
    remat_fn *cond = remat_fn_new("cond"), *body = remat_fn_new("body");
    remat_val cc = remat_arg(cond, "c", REMAT_F64, 1, d3), ct = remat_arg(cond, "t", REMAT_F64, 0, NULL);
    remat_arg(cond, "k", REMAT_F64, 1, d3);
    (void)cc;
    remat_fn_output(cond, remat_lt(cond, ct, remat_scalar(cond, REMAT_F64, 1.0)));
    remat_val c = remat_arg(body, "c", REMAT_F64, 1, d3), t = remat_arg(body, "t", REMAT_F64, 0, NULL);
    remat_val k = remat_arg(body, "k", REMAT_F64, 1, d3);
    remat_val rate = remat_sub(body, remat_sin(body, c), remat_mul(body, k, c));
    remat_fn_output(body, remat_add(body, c, remat_mul_scalar(body, rate, 0.1)));
    remat_fn_output(body, remat_add(body, t, remat_scalar(body, REMAT_F64, 0.125)));
    remat_fn_output(body, remat_scalar(body, REMAT_F64, 1.0)); /* accepted */
    assert_fn_ok(cond);
    assert_fn_ok(body);
    remat_fn *f = remat_fn_new("while_loss");
    remat_val c0 = remat_arg(f, "c0", REMAT_F64, 1, d3);
    remat_arg(f, "xs", REMAT_F64, 2, ((int64_t[]){LEN, 3})); /* unused: the scan's signature */
    remat_val kk = remat_arg(f, "k", REMAT_F64, 1, d3);
    remat_val init[2] = {c0, remat_scalar(f, REMAT_F64, 0.0)}, out[2];
    remat_while_options opt = {.max_steps = 100, .schedule = sched};
    assert_ok(remat_while(f, cond, body, 2, 1, init, 1, &kk, &opt, out, NULL));
    remat_fn_output(f, remat_sum_all(f, out[0]));
    assert_fn_ok(f);
    remat_fn_free(cond), remat_fn_free(body);
    return f;
}

typedef struct {
    double c0[3], xs[LEN * 3], k[3];
} inputs;

static remat_fn *while_loss(void) { return while_loss_with(NULL); }

static void run_stats(remat_program *p, const inputs *in, double *out, int n_out, remat_stats *st)
{
    const int64_t d3[1] = {3}, dx[2] = {LEN, 3};
    remat_tensor ti[3] = {remat_tensor_f64((double *)in->c0, 1, d3), remat_tensor_f64((double *)in->xs, 2, dx),
                          remat_tensor_f64((double *)in->k, 1, d3)};
    remat_tensor to[4];
    for (int i = 0; i < n_out; i++) {
        remat_tensor d = remat_program_output_desc(p, i);
        to[i] = d;
        to[i].data = out + 3 * i;
    }
    assert_ok(remat_run(p, 3, ti, n_out, to, st));
}

static void run(remat_program *p, const inputs *in, double *out, int n_out) { run_stats(p, in, out, n_out, NULL); }

static void assert_close(const double *a, const double *b, int n)
{
    for (int i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= 1e-12 * (1 + fabs(b[i]))))
            fail_msg("element %d: %.17g, the CPU backend %.17g", i, a[i], b[i]);
}

static void test_exec_ctx_programs_interleaved_on_one_thread_each_see_their_own_state(void **state)
{
    (void)state;
    enum { NP = 4 };
    remat_backend *be = fake_backend();
    remat_fn *fn[NP] = {scan_loss(), NULL, while_loss(), NULL};
    assert_ok(remat_grad(fn[0], 2, (int[]){0, 2}, &fn[1]));
    assert_ok(remat_grad(fn[2], 2, (int[]){0, 2}, &fn[3]));
    const int n_out[NP] = {1, 2, 1, 2};
    remat_compile_options o;
    remat_compile_options_from_env(&o);
    o.jit = REMAT_JIT_NEVER;
    remat_program *p[NP], *ref[NP];
    n_opened = n_live = 0;
    for (int i = 0; i < NP; i++)
        assert_ok(remat_compile_opts(fn[i], be, &o, &p[i]));
    /* each compile uploaded its constants through a state of its own, closed when it ended */
    assert_int_equal(n_opened, NP);
    assert_int_equal(n_live, 0);
    for (int i = 0; i < NP; i++)
        assert_ok(remat_compile_opts(fn[i], remat_backend_cpu(), &o, &ref[i]));

    inputs in;
    for (int i = 0; i < 3; i++)
        in.c0[i] = 0.5 + 0.25 * i, in.k[i] = 0.3 + 0.1 * i;
    for (int i = 0; i < LEN * 3; i++)
        in.xs[i] = sin(0.37 * i);
    double want[NP][6], got[6];
    for (int i = 0; i < NP; i++)
        run(ref[i], &in, want[i], n_out[i]);

    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NP; i++) {
            int64_t kernels[NP] = {0}, mem[NP] = {0};
            for (int j = 0; j < NP; j++) {
                const token *t = p[j]->be_state;
                kernels[j] = t ? t->kernels : 0, mem[j] = t ? t->mem_ops : 0;
            }
            run(p[i], &in, got, n_out[i]);
            assert_string_equal(violation, "");
            assert_close(got, want[i], n_out[i]);
            const token *t = p[i]->be_state;
            assert_non_null(t);
            assert_true(t->kernels > kernels[i]); /* the loop bodies' kernels ran in this program's state */
            assert_true(t->mem_ops > mem[i]);     /* its inputs, carries and cotangents moved in it */
            for (int j = 0; j < NP; j++) { /* and nothing in another program's */
                const token *u = p[j]->be_state;
                if (j != i && u) {
                    assert_ptr_not_equal(u, t);
                    assert_int_equal(u->kernels, kernels[j]);
                    assert_int_equal(u->mem_ops, mem[j]);
                }
            }
        }
    }
    assert_int_equal(n_live, NP); /* one state per program, kept between runs */
    for (int i = 0; i < NP; i++)
        remat_program_free(p[i]);
    assert_int_equal(n_live, 0);
    assert_string_equal(violation, "");
    for (int i = 0; i < NP; i++)
        remat_program_free(ref[i]), remat_fn_free(fn[i]);
}

/* remat_backend_upload / download: a short-lived state for the one copy */
static void test_exec_ctx_backend_copies_use_a_state_of_their_own(void **state)
{
    (void)state;
    remat_backend *be = fake_backend();
    n_opened = n_live = 0;
    double host[4] = {1, -2, 3.5, -0.0}, back[4] = {0};
    void *d = remat_backend_alloc(be, sizeof host);
    assert_non_null(d);
    assert_ok(remat_backend_upload(be, d, host, sizeof host));
    assert_ok(remat_backend_download(be, back, d, sizeof back));
    remat_backend_free(be, d);
    assert_memory_equal(back, host, sizeof host);
    assert_int_equal(n_opened, 2);
    assert_int_equal(n_live, 0);
    assert_string_equal(violation, "");
}

static void inputs_fill(inputs *in)
{
    for (int i = 0; i < 3; i++)
        in->c0[i] = 0.5 + 0.25 * i, in->k[i] = 0.3 + 0.1 * i;
    for (int i = 0; i < LEN * 3; i++)
        in->xs[i] = sin(0.37 * i);
}

/* f's gradient (wrt c0, k) on the fake and on the CPU: the bits equal, the
 * slow tier's bytes planned = measured = host_alloc'ed, moved through
 * copy_out / copy_in and freed by the run's end */
static void check_two_tier_grad(remat_fn *f, const char *what)
{
    remat_backend *be = fake_backend();
    remat_fn *g = NULL;
    assert_ok(remat_grad(f, 2, (int[]){0, 2}, &g));
    remat_compile_options o;
    remat_compile_options_from_env(&o);
    o.jit = REMAT_JIT_NEVER;
    remat_program *p = NULL, *ref = NULL;
    if (remat_compile_opts(g, be, &o, &p) != REMAT_OK)
        fail_msg("%s: compiling on a device backend: %s", what, remat_last_error());
    assert_ok(remat_compile_opts(g, remat_backend_cpu(), &o, &ref));
    inputs in;
    inputs_fill(&in);
    double want[6], got[6];
    remat_stats st_ref, st;
    run_stats(ref, &in, want, 2, &st_ref);
    remat_memory_plan plan;
    remat_program_plan(p, &plan);
    for (int round = 0; round < 2; round++) { /* a store per run */
        host_counts_reset();
        run_stats(p, &in, got, 2, &st);
        assert_string_equal(violation, "");
        if (memcmp(got, want, sizeof got) != 0) /* contracts 0 and 3 */
            fail_msg("%s: the device's gradient differs from the CPU's", what);
        assert_true(plan.tier_bytes > 0);
        if (st.tier_bytes != plan.tier_bytes || st.tier_bytes != st_ref.tier_bytes)
            fail_msg("%s: slow tier planned %zu, measured %zu (the CPU's %zu)", what, plan.tier_bytes, st.tier_bytes,
                     st_ref.tier_bytes);
        assert_int_equal(n_host_allocs, 1); /* the run's store, from host_alloc */
        assert_int_equal(n_host_frees, 1);  /* and freed by the backward */
        assert_int_equal(host_alloc_bytes, st.tier_bytes);
        assert_true(host_bytes_out >= st.tier_bytes); /* every slow slot written with copy_out */
        assert_true(host_bytes_in > 0);               /* and read back with copy_in */
        if (round == 0)
            print_message("%s: slow tier %zu bytes planned, %zu measured, %zu host_alloc'ed; %zu copied out, %zu in\n",
                          what, plan.tier_bytes, st.tier_bytes, host_alloc_bytes, host_bytes_out, host_bytes_in);
    }
    remat_program_free(p);
    remat_program_free(ref);
    remat_fn_free(g);
    assert_int_equal(n_live, 0);
}

static void test_exec_ctx_two_tier_scan_on_a_device_uses_host_memory(void **state)
{
    (void)state;
    const remat_schedule_spec sched = {.kind = REMAT_SCHED_TWO_TIER, .snapshots = 2, .disk_snapshots = 3,
                                       .disk_write = 1, .disk_read = 1};
    remat_fn *f = scan_loss_with(&sched);
    check_two_tier_grad(f, "two-tier scan");
    remat_fn_free(f);
}

static void test_exec_ctx_two_tier_while_on_a_device_uses_host_memory(void **state)
{
    (void)state;
    const remat_schedule_spec sched = {.kind = REMAT_SCHED_TWO_TIER, .snapshots = 1, .disk_snapshots = 3,
                                       .disk_write = 1, .disk_read = 1};
    remat_fn *f = while_loss_with(&sched);
    check_two_tier_grad(f, "two-tier while loop");
    remat_fn_free(f);
}

/* The slow tier's host memory not had (over tier_max_bytes: REMAT_ERR_IO,
 * as a full disk; host_alloc out of memory: REMAT_ERR_NOMEM, as the
 * offloaded residuals'): the run fails naming the loop, with nothing
 * allocated or left allocated, and the next run with memory goes through. */
static void host_memory_refused(bool scan)
{
    const remat_schedule_spec sched = {.kind = REMAT_SCHED_TWO_TIER, .snapshots = scan ? 2 : 1, .disk_snapshots = 3,
                                       .disk_write = 1, .disk_read = 1};
    remat_fn *f = scan ? scan_loss_with(&sched) : while_loss_with(&sched), *g = NULL;
    remat_backend *be = fake_backend();
    assert_ok(remat_grad(f, 2, (int[]){0, 2}, &g));
    inputs in;
    inputs_fill(&in);
    const int64_t d3[1] = {3}, dx[2] = {LEN, 3};
    remat_tensor ti[3] = {remat_tensor_f64(in.c0, 1, d3), remat_tensor_f64(in.xs, 2, dx),
                          remat_tensor_f64(in.k, 1, d3)};
    for (int k = 0; k < 2; k++) {
        remat_compile_options o;
        remat_compile_options_from_env(&o);
        o.jit = REMAT_JIT_NEVER;
        o.tier_max_bytes = k == 0 ? 8 : 0;
        remat_program *p = NULL;
        assert_ok(remat_compile_opts(g, be, &o, &p));
        double got[6];
        remat_tensor to[2];
        for (int i = 0; i < 2; i++)
            to[i] = remat_program_output_desc(p, i), to[i].data = got + 3 * i;
        host_counts_reset();
        host_alloc_fails = k == 1;
        const remat_status st = remat_run(p, 3, ti, 2, to, NULL);
        host_alloc_fails = false;
        assert_int_equal(st, k == 0 ? REMAT_ERR_IO : REMAT_ERR_NOMEM);
        const char *want = k == 0 ? "more than tier_max_bytes = 8" : "cannot allocate";
        if (!strstr(remat_last_error(), want) || !strstr(remat_last_error(), "test_exec_ctx.c"))
            fail_msg("error '%s' lacks '%s' or the loop's place", remat_last_error(), want);
        assert_int_equal(n_host_allocs, 0);
        if (k == 1) { /* memory back: the same program runs */
            assert_ok(remat_run(p, 3, ti, 2, to, NULL));
            assert_int_equal(n_host_allocs, 1);
            assert_int_equal(n_host_frees, 1);
        }
        remat_program_free(p);
    }
    assert_string_equal(violation, "");
    remat_fn_free(g);
    remat_fn_free(f);
}

static void test_exec_ctx_two_tier_host_memory_refused_fails_the_run(void **state)
{
    (void)state;
    host_memory_refused(true);
    host_memory_refused(false);
}

/* two checkpointed layers whose product "z" a policy offloads */
static remat_fn *offload_loss(const remat_policy *policy)
{
    const int64_t d3[1] = {3};
    remat_fn *layer = remat_fn_new("layer");
    remat_val h = remat_arg(layer, "h", REMAT_F64, 1, d3);
    remat_val w = remat_arg(layer, "w", REMAT_F64, 1, d3);
    remat_val z = remat_name(layer, remat_mul(layer, h, w), "z");
    remat_fn_output(layer, remat_add(layer, remat_sin(layer, z), h));
    assert_fn_ok(layer);
    remat_fn *blk = remat_checkpoint(layer, policy);
    assert_non_null(blk);
    remat_fn *f = remat_fn_new("offload_loss");
    remat_val x = remat_arg(f, "c0", REMAT_F64, 1, d3);
    remat_arg(f, "xs", REMAT_F64, 2, ((int64_t[]){LEN, 3})); /* unused: the scan's signature */
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, d3);
    for (int l = 0; l < 2; l++)
        x = remat_call1(f, blk, 2, ((remat_val[]){x, k}));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, x)));
    assert_fn_ok(f);
    remat_fn_free(blk);
    remat_fn_free(layer);
    return f;
}

static void test_exec_ctx_offload_on_a_device_uses_host_alloc(void **state)
{
    (void)state;
    const char *off[] = {"z"};
    remat_policy *pol = remat_policy_save_and_offload_only_these_names(0, NULL, 1, off, "device", "pinned_host");
    assert_non_null(pol);
    remat_fn *f = offload_loss(pol);
    remat_backend *be = fake_backend();
    remat_fn *g = NULL;
    assert_ok(remat_grad(f, 2, (int[]){0, 2}, &g));
    remat_compile_options o;
    remat_compile_options_from_env(&o);
    o.jit = REMAT_JIT_NEVER;
    remat_program *p = NULL, *ref = NULL;
    assert_ok(remat_compile_opts(g, be, &o, &p));
    assert_ok(remat_compile_opts(g, remat_backend_cpu(), &o, &ref));
    inputs in;
    inputs_fill(&in);
    double want[6], got[6];
    remat_stats st_ref;
    run_stats(ref, &in, want, 2, &st_ref);
    remat_memory_plan plan, plan_ref;
    remat_program_plan(p, &plan);
    remat_program_plan(ref, &plan_ref);
    assert_true(plan.offload_bytes >= 2 * 3 * sizeof(double)); /* the two layers' z */
    assert_int_equal(plan.offload_bytes, plan_ref.offload_bytes);
    for (int round = 0; round < 2; round++) {
        host_counts_reset();
        remat_stats st;
        run_stats(p, &in, got, 2, &st);
        assert_string_equal(violation, "");
        if (memcmp(got, want, sizeof got) != 0) /* contracts 0 and 3 */
            fail_msg("offload: the device's gradient differs from the CPU's");
        assert_int_equal(st.offload_bytes, st_ref.offload_bytes);
        assert_true(st.offload_bytes > 0 && st.offload_bytes <= plan.offload_bytes);
        assert_int_equal(n_host_allocs, 1); /* the run's tier from host_alloc, not the program's pageable memory */
        assert_int_equal(n_host_frees, 1);  /* freed by the last tier instruction */
        assert_int_equal(host_alloc_bytes, plan.offload_bytes);
        assert_int_equal(host_bytes_out, 2 * 3 * sizeof(double)); /* both z written to it */
        assert_int_equal(host_bytes_in, 2 * 3 * sizeof(double));  /* and read back */
    }
    remat_program_free(p);
    remat_program_free(ref);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_policy_free(pol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_ctx_programs_interleaved_on_one_thread_each_see_their_own_state),
        cmocka_unit_test(test_exec_ctx_backend_copies_use_a_state_of_their_own),
        cmocka_unit_test(test_exec_ctx_two_tier_scan_on_a_device_uses_host_memory),
        cmocka_unit_test(test_exec_ctx_two_tier_while_on_a_device_uses_host_memory),
        cmocka_unit_test(test_exec_ctx_two_tier_host_memory_refused_fails_the_run),
        cmocka_unit_test(test_exec_ctx_offload_on_a_device_uses_host_alloc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
