/*
 * test_scan_tiers.c — two-tier schedules run by the scan: snapshots past the
 * RAM slots live in a file under the compile options' tier_dir.
 *
 * Held to: the gradient of store-all to the bit (contract 3: recomputation
 * re-runs the same ops on the same carries, read back byte for byte); the
 * RAM store's and the slow tier's bytes as planned (remat_memory_plan) equal
 * to the measured ones (remat_stats), and to the schedule's own prediction;
 * nothing left in the directory; a missing or read-only directory and a
 * full tier failing the run with REMAT_ERR_IO naming the directory; the
 * file's bytes those of the carries alone (the padding between them zeros,
 * not heap garbage).
 */
#include "test_scan_util.h"

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adjoint/schedule_impl.h"
#include "core/alloc.h"
#include "remat/remat.h"

/* body(h (4,6), acc (), x (6), W (6,6)): h' = tanh(h @ W + x), acc' = acc + sum(h' * h) */
static remat_fn *body(void)
{
    remat_fn *b = remat_fn_new("tier_body");
    remat_val h = remat_arg(b, "h", REMAT_F64, 2, DIMS(4, 6));
    remat_val acc = remat_arg(b, "acc", REMAT_F64, 0, NULL);
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, DIMS(6));
    remat_val w = remat_arg(b, "W", REMAT_F64, 2, DIMS(6, 6));
    remat_val h1 = remat_tanh(b, remat_add(b, remat_matmul(b, h, w), x));
    remat_fn_output(b, h1);
    remat_fn_output(b, remat_add(b, acc, remat_sum_all(b, remat_mul(b, h1, h))));
    assert_fn_ok(b);
    return b;
}

static const size_t carry_bytes = 192 + 16; /* align16(4*6*8) + align16(8) */

/* loss = sum(h_n^2) + acc_n over n steps of body */
static remat_fn *model(int64_t n, const char *sched)
{
    remat_fn *b = body();
    remat_fn *f = remat_fn_new("tier_model");
    remat_val a[4] = {remat_arg(f, "h0", REMAT_F64, 2, DIMS(4, 6)), remat_arg(f, "acc0", REMAT_F64, 0, NULL),
                      remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 6)), remat_arg(f, "W", REMAT_F64, 2, DIMS(6, 6))};
    remat_scan_options opt = {.schedule = spec_of(sched)};
    remat_val c[2];
    scan_ok(f, b, n, 2, a, 1, a + 2, 1, a + 3, &opt, c, NULL);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_square(f, c[0])), c[1]));
    remat_fn_free(b);
    assert_fn_ok(f);
    return f;
}

static void inputs(int64_t n, remat_tensor *in)
{
    in[0] = t_rand(REMAT_F64, 2, DIMS(4, 6), -1, 1);
    in[1] = t_rand(REMAT_F64, 0, NULL, -1, 1);
    in[2] = t_rand(REMAT_F64, 2, DIMS(n, 6), -1, 1);
    in[3] = t_rand(REMAT_F64, 2, DIMS(6, 6), -0.5, 0.5);
}

/* value_and_grad of model(n, sched) compiled with tier_dir / tier_max_bytes */
static remat_program *compile_tiered(int64_t n, const char *sched, const char *dir, int64_t max_bytes)
{
    remat_fn *f = model(n, sched);
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
    remat_compile_options o = remat_compile_options_default();
    o.tier_dir = dir;
    o.tier_max_bytes = max_bytes;
    o.jit = REMAT_JIT_ALWAYS; /* a two-tier scan stays interpreted even so */
    remat_program *p = NULL;
    if (remat_compile_opts(g, remat_backend_cpu(), &o, &p) != REMAT_OK)
        fail_msg("compile %s: %s", sched, remat_last_error());
    remat_fn_free(g);
    remat_fn_free(f);
    return p;
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int k = 0;
    for (struct dirent *e; (e = readdir(d));)
        k += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return k;
}

static void test_scan_tiers_gradient_and_bytes(void **state)
{
    (void)state;
    char dir[] = "/tmp/remat-tier-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const int64_t n = 40;
    remat_tensor in[4];
    inputs(n, in);
    remat_fn *fs = model(n, "store-all");
    outs_t ref;
    run_ad(AD_VALUE_AND_GRAD, fs, 4, in, &ref, NULL, NULL);
    remat_fn_free(fs);
    const char *const scheds[] = {"two-tier:3:0", "two-tier:2:8:0.25:0.25", "two-tier:0:39:0:0", "two-tier:3:5:1:2",
                                  "two-tier:1:30:0.5:0.5"};
    for (size_t i = 0; i < sizeof scheds / sizeof *scheds; i++) {
        remat_program *p = compile_tiered(n, scheds[i], dir, 0);
        remat_memory_plan plan;
        remat_program_plan(p, &plan);
        assert_int_equal(plan.compiled_loops, 0);
        outs_t got;
        remat_stats st;
        run_prog(p, 4, in, &got, &st);
        check_outs_bitwise(scheds[i], &got, &ref);
        /* the slow tier: planned = measured = the schedule's highest slow slot */
        remat_schedule_spec spec = spec_of(scheds[i]);
        remat_schedule *s;
        assert_int_equal(remat_schedule_new(&spec, n, &s), REMAT_OK);
        int64_t hi = 0;
        remat_action a;
        for (remat_schedule_next(s, &a); a.kind != REMAT_ACT_DONE; remat_schedule_next(s, &a))
            if (a.kind == REMAT_ACT_TAKESHOT && a.slot >= spec.snapshots && a.slot - spec.snapshots + 1 > hi)
                hi = a.slot - spec.snapshots + 1;
        remat_schedule_free(s);
        if (plan.tier_bytes != (size_t)hi * carry_bytes || st.tier_bytes != plan.tier_bytes)
            fail_msg("%s: slow tier planned %zu, measured %zu, schedule %lld slots of %zu", scheds[i],
                     plan.tier_bytes, st.tier_bytes, (long long)hi, carry_bytes);
        /* RAM: the store's snapshots and tape as predicted, and measured */
        remat_schedule_cost cost;
        assert_int_equal(remat_schedule_predict(&spec, n, &cost), REMAT_OK);
        assert_true(cost.peak_snapshots <= spec.snapshots);
        if (plan.peak_snapshot_bytes != st.peak_snapshot_bytes ||
            plan.peak_snapshot_bytes != cost.peak_snapshots * carry_bytes + plan.scan_tape_bytes * cost.peak_tapes)
            fail_msg("%s: RAM snapshots planned %zu, measured %zu, predicted %lld carries + %lld tapes of %zu",
                     scheds[i], plan.peak_snapshot_bytes, st.peak_snapshot_bytes, (long long)cost.peak_snapshots,
                     (long long)cost.peak_tapes, plan.scan_tape_bytes);
        assert_int_equal(st.forward_evals, cost.forward_evals);
        assert_int_equal(entries(dir), 0); /* the file was unlinked at its creation */
        /* the residual report: the store's RAM slots, the offloaded ones named */
        remat_fn *f = model(n, scheds[i]);
        remat_residual_list *rl;
        assert_int_equal(remat_saved_residuals(f, 0, NULL, &rl), REMAT_OK);
        bool seen = false;
        for (int k = 0; k < remat_residual_list_count(rl); k++) {
            const remat_residual *e = remat_residual_list_get(rl, k);
            if (e->kind != REMAT_RESIDUAL_SNAPSHOT)
                continue;
            seen = true;
            char want[96];
            snprintf(want, sizeof want, "+ %lld snapshots offloaded to the slow tier", (long long)hi);
            assert_int_equal(e->count, spec.snapshots < n - 1 ? spec.snapshots : n - 1);
            if ((hi > 0) != (strstr(e->detail, want) != NULL))
                fail_msg("%s: residual detail '%s'", scheds[i], e->detail);
        }
        assert_true(seen);
        remat_residual_list_free(rl);
        remat_fn_free(f);
        outs_free(&got);
        remat_program_free(p);
    }
    outs_free(&ref);
    t_free_all(4, in);
    rmdir(dir);
}

static void expect_run_io_error(remat_program *p, const remat_tensor *in, const char *want1, const char *want2)
{
    outs_t o = {.n = 5};
    for (int i = 0; i < 5; i++)
        o.t[i] = t_new(REMAT_F64, i == 0 || i == 2 ? 0 : 2, i == 3 ? DIMS(40, 6) : i == 4 ? DIMS(6, 6) : DIMS(4, 6));
    remat_status st = remat_run(p, 4, in, 5, o.t, NULL);
    if (st != REMAT_ERR_IO || !strstr(remat_last_error(), want1) || (want2 && !strstr(remat_last_error(), want2)))
        fail_msg("run: status %d, message '%s', wanted REMAT_ERR_IO with '%s'", (int)st, remat_last_error(), want1);
    outs_free(&o);
}

static void test_scan_tiers_bad_directory_and_full_tier(void **state)
{
    (void)state;
    const int64_t n = 40;
    remat_tensor in[4];
    inputs(n, in);
    remat_program *p = compile_tiered(n, "two-tier:1:30:0.5:0.5", "/nonexistent/remat-tier", 0);
    expect_run_io_error(p, in, "'/nonexistent/remat-tier'", "No such file or directory");
    remat_program_free(p);
    char dir[] = "/tmp/remat-tier-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    /* a tier of 1000 bytes: the schedule needs several carries of 208 */
    p = compile_tiered(n, "two-tier:1:30:0.5:0.5", dir, 1000);
    expect_run_io_error(p, in, "cannot reserve", "tier_max_bytes");
    remat_program_free(p);
    if (geteuid() != 0) { /* root writes anywhere */
        assert_int_equal(chmod(dir, 0500), 0);
        p = compile_tiered(n, "two-tier:1:30:0.5:0.5", dir, 0);
        expect_run_io_error(p, in, dir, "Permission denied");
        remat_program_free(p);
        chmod(dir, 0700);
    }
    assert_int_equal(entries(dir), 0);
    rmdir(dir);
    remat_compile_options o = remat_compile_options_default();
    o.tier_dir = "";
    remat_fn *f = model(n, "two-tier:1:30:0.5:0.5");
    remat_program *q = NULL;
    assert_int_equal(remat_compile_opts(f, remat_backend_cpu(), &o, &q), REMAT_ERR_VALUE);
    assert_non_null(strstr(remat_last_error(), "tier_dir is \"\""));
    remat_fn_free(f);
    t_free_all(4, in);
}

/* The solved two-tier table is kept by the process: one compile solves it
 * once (not once per use: the store's sizing, predict, the plan's replay,
 * each node), a second compile not at all. */
static void test_scan_tiers_table_solved_once(void **state)
{
    (void)state;
    const int64_t n = 40, before = rmi_sched_two_tier_tables_solved();
    remat_program *p = compile_tiered(n, "two-tier:2:6:0.375:0.625", "/tmp", 0);
    const int64_t first = rmi_sched_two_tier_tables_solved() - before;
    remat_program *q = compile_tiered(n, "two-tier:2:6:0.375:0.625", "/tmp", 0);
    const int64_t second = rmi_sched_two_tier_tables_solved() - before - first;
    if (first != 1 || second != 0)
        fail_msg("two-tier tables solved: %lld by the first compile, %lld by the second", (long long)first,
                 (long long)second);
    remat_program_free(p);
    remat_program_free(q);
}

/* the descriptors this process holds open */
static int open_fds(void) { return entries("/proc/self/fd"); }

/* A run cut short: a two-tier scan in the body of an outer scan whose plan
 * is not kept, each allocation of a run failing in turn. Where the outer
 * backward's replay fails, the inner forwards' slow-tier files (one per
 * outer step taped) were never closed by their backwards, and stayed open
 * for the process's life; now the next run, or freeing the program, closes
 * them. */
static void test_scan_tiers_run_cut_short_leaves_no_file_open(void **state)
{
    (void)state;
    const int64_t n = 40, m = 3;
    remat_fn *b = body(), *ob = remat_fn_new("outer_body"), *f = remat_fn_new("nested_tiers");
    remat_val a[4] = {remat_arg(ob, "h", REMAT_F64, 2, DIMS(4, 6)), remat_arg(ob, "acc", REMAT_F64, 0, NULL),
                      remat_arg(ob, "X", REMAT_F64, 2, DIMS(n, 6)), remat_arg(ob, "W", REMAT_F64, 2, DIMS(6, 6))};
    remat_scan_options opt = {.schedule = spec_of("two-tier:1:30:0.5:0.5")};
    remat_val c[2];
    scan_ok(ob, b, n, 2, a, 1, a + 2, 1, a + 3, &opt, c, NULL);
    remat_fn_output(ob, c[0]);
    remat_fn_output(ob, c[1]);
    assert_fn_ok(ob);
    remat_val o[4] = {remat_arg(f, "h0", REMAT_F64, 2, DIMS(4, 6)), remat_arg(f, "acc0", REMAT_F64, 0, NULL),
                      remat_arg(f, "X", REMAT_F64, 2, DIMS(n, 6)), remat_arg(f, "W", REMAT_F64, 2, DIMS(6, 6))};
    remat_scan_options outer = {0}; /* store-all: the forward tapes every outer step */
    scan_ok(f, ob, m, 2, o, 0, NULL, 2, o + 2, &outer, c, NULL);
    remat_fn_output(f, remat_add(f, remat_sum_all(f, remat_square(f, c[0])), c[1]));
    assert_fn_ok(f);
    remat_fn *g = ad_ok(AD_VALUE_AND_GRAD, f, 0, NULL);
    char dir[] = "/tmp/remat-tier-cut-XXXXXX";
    assert_non_null(mkdtemp(dir));
    remat_compile_options co = remat_compile_options_default();
    co.tier_dir = dir;
    co.jit = REMAT_JIT_NEVER;
    co.scan_plan_max_ops = REMAT_SCAN_PLAN_NONE; /* each run replays its schedules: allocations that can fail */
    remat_program *p = NULL;
    if (remat_compile_opts(g, remat_backend_cpu(), &co, &p) != REMAT_OK)
        fail_msg("compile: %s", remat_last_error());
    remat_tensor in[4], out[5];
    inputs(n, in);
    for (int i = 0; i < 5; i++)
        out[i] = remat_program_output_desc(p, i), out[i].data = calloc((size_t)t_numel(&out[i]) + 1, 8);
    assert_int_equal(remat_run(p, 4, in, 5, out, NULL), REMAT_OK);
    const int fds = open_fds();
    int failed = 0;
    int64_t cut = -1; /* an allocation whose failure leaves files open until the next run */
    for (int64_t k = 0;; k++) {
        rmi_alloc_fail_once(k);
        const remat_status st = remat_run(p, 4, in, 5, out, NULL);
        const int64_t asked = rmi_alloc_count();
        rmi_alloc_fail_after(-1);
        failed += st != REMAT_OK;
        if (cut < 0 && open_fds() > fds)
            cut = k;
        assert_int_equal(remat_run(p, 4, in, 5, out, NULL), REMAT_OK); /* the next run closes what it left */
        if (open_fds() != fds)
            fail_msg("allocation %lld of a run failed (%s): %d descriptors open after the next run, %d before",
                     (long long)k, remat_status_name(st), open_fds(), fds);
        if (k >= asked)
            break;
    }
    assert_true(failed > 0);
    assert_true(cut >= 0); /* the case this test is for was reached */
    rmi_alloc_fail_once(cut);
    assert_int_not_equal(remat_run(p, 4, in, 5, out, NULL), REMAT_OK);
    rmi_alloc_fail_after(-1);
    remat_program_free(p); /* without another run: freeing the program closes them */
    assert_int_equal(open_fds(), fds);
    assert_int_equal(entries(dir), 0);
    rmdir(dir);
    for (int i = 0; i < 5; i++)
        free(out[i].data);
    t_free_all(4, in);
    remat_fn_free(g), remat_fn_free(f), remat_fn_free(ob), remat_fn_free(b);
}

/* ---- the slow tier's bytes ----
 *
 * pwrite (and pwrite64, its name under _FILE_OFFSET_BITS=64) defined here
 * take the library's calls (it links statically): while `image` is set,
 * every write is copied into it at its offset, then made. */
static unsigned char *image;
static size_t image_bytes, image_hi;

static ssize_t tier_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (image) {
        if (off < 0 || (size_t)off + n > image_bytes)
            fail_msg("pwrite of %zu bytes at %lld: past the test's image", n, (long long)off);
        memcpy(image + off, buf, n);
        if ((size_t)off + n > image_hi)
            image_hi = (size_t)off + n;
    }
    return syscall(SYS_pwrite64, fd, buf, n, off);
}

ssize_t tier_pwrite_hook(int fd, const void *buf, size_t n, off_t off) __asm__("pwrite");
ssize_t tier_pwrite_hook(int fd, const void *buf, size_t n, off_t off) { return tier_pwrite(fd, buf, n, off); }
ssize_t tier_pwrite64_hook(int fd, const void *buf, size_t n, off_t off) __asm__("pwrite64");
ssize_t tier_pwrite64_hook(int fd, const void *buf, size_t n, off_t off) { return tier_pwrite(fd, buf, n, off); }

/* the slow tier's file of one run of a program compiled with glibc's
 * malloc filling new memory with ~perturb (M_PERTURB): into img, its extent */
static size_t tier_image(int perturb, const remat_tensor *in, int64_t n, const char *dir, unsigned char *img,
                         size_t bytes)
{
    mallopt(M_PERTURB, perturb);
    remat_program *p = compile_tiered(n, "two-tier:1:30:0.5:0.5", dir, 0);
    memset(img, 0x5c, bytes);
    image = img, image_bytes = bytes, image_hi = 0;
    outs_t got;
    run_prog(p, 4, in, &got, NULL);
    image = NULL;
    mallopt(M_PERTURB, 0);
    outs_free(&got);
    remat_program_free(p);
    return image_hi;
}

/* The file holds whole carries, the padding between them included
 * (carry_bytes: h's 192 bytes, acc's 8 and 8 of padding): those bytes are
 * zeros, the same whatever was in the heap before. */
static void test_scan_tiers_file_holds_no_heap_garbage(void **state)
{
    (void)state;
    char dir[] = "/tmp/remat-tier-bytes-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const int64_t n = 40;
    remat_tensor in[4];
    inputs(n, in);
    enum { BYTES = 64 * 1024 };
    unsigned char *a = malloc(BYTES), *b = malloc(BYTES);
    assert_non_null(a);
    assert_non_null(b);
    const size_t na = tier_image(0x11, in, n, dir, a, BYTES), nb = tier_image(0xee, in, n, dir, b, BYTES);
    assert_int_equal(na, nb);
    assert_true(na >= 2 * carry_bytes && na % carry_bytes == 0);
    for (size_t k = 0; k < na; k++)
        if (a[k] != b[k])
            fail_msg("the slow tier's byte %zu (carry %zu, byte %zu of it) differs with the heap's garbage: %#x, %#x",
                     k, k / carry_bytes, k % carry_bytes, a[k], b[k]);
    for (size_t k = 0; k < na; k += carry_bytes) /* the padding after acc */
        for (size_t q = 200; q < carry_bytes; q++)
            assert_int_equal(a[k + q], 0);
    free(a), free(b);
    t_free_all(4, in);
    assert_int_equal(entries(dir), 0);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_tiers_gradient_and_bytes),
        cmocka_unit_test(test_scan_tiers_bad_directory_and_full_tier),
        cmocka_unit_test(test_scan_tiers_table_solved_once),
        cmocka_unit_test(test_scan_tiers_run_cut_short_leaves_no_file_open),
        cmocka_unit_test(test_scan_tiers_file_holds_no_heap_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
