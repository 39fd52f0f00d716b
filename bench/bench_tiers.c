/*
 * bench_tiers.c — a long integration whose store-all tape is 8x the RAM
 * budget, differentiated with a disk tier (two-tier schedule, snapshots
 * past the RAM ones in a file) against the RAM-only binomial schedule at
 * the same RAM budget. Prints one JSON object.
 *
 *   ninja -C build bench/bench_tiers && ./build/bench/bench_tiers [--dir DIR] [--smoke]
 *
 * The loop: an elementwise ODE on N unknowns (RK2 steps of
 * y' = -y^3 + sin(y) * k + x_t) as scan(checkpoint(step, nothing_saveable)),
 * carry N f64, interpreted (two-tier scans
 * run interpreted, so both schedules are, for a fair comparison). The slow
 * tier's costs W and R (one carry written / read, in step evaluations)
 * are measured here: one step's time against pwrite/pread of one carry in
 * DIR; remat_schedule_for_tiers then picks S and D from the budgets. Both
 * gradients are compared to the bit (contract 3).
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "remat/remat.h"

static int64_t N = 65536, STEPS = 160;

static remat_fn *body(void)
{
    remat_fn *b = remat_fn_new("rk2_step");
    const int64_t d[1] = {N};
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, d);
    remat_val x = remat_arg(b, "x", REMAT_F64, 0, NULL);
    remat_val k = remat_arg(b, "k", REMAT_F64, 1, d);
    /* f(y) = -y^3 + sin(y) k + x; y' = y + h f(y + h/2 f(y)) */
    remat_val f1 = remat_add(b, remat_sub(b, remat_mul(b, remat_sin(b, y), k), remat_integer_pow(b, y, 3)),
                             remat_broadcast_to(b, x, 1, d));
    remat_val ym = remat_add(b, y, remat_mul_scalar(b, f1, 0.005));
    remat_val f2 = remat_add(b, remat_sub(b, remat_mul(b, remat_sin(b, ym), k), remat_integer_pow(b, ym, 3)),
                             remat_broadcast_to(b, x, 1, d));
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, f2, 0.01)));
    return b;
}

static remat_fn *loss(const remat_schedule_spec *spec)
{
    remat_fn *b = body();
    remat_fn *f = remat_fn_new("integration");
    const int64_t d[1] = {N}, xd[1] = {STEPS};
    remat_val a[3] = {remat_arg(f, "y0", REMAT_F64, 1, d), remat_arg(f, "xs", REMAT_F64, 1, xd),
                      remat_arg(f, "k", REMAT_F64, 1, d)};
    /* scan(checkpoint(step, nothing_saveable)): a step's tape is its carry,
     * so snapshots, not tapes, are what the budget buys */
    remat_scan_options opt = {.schedule = *spec, .body_policy = remat_nothing_saveable};
    remat_val yn;
    if (remat_scan(f, b, STEPS, 1, a, 1, a + 1, 1, a + 2, &opt, &yn, NULL) != REMAT_OK) {
        fprintf(stderr, "bench_tiers: scan: %s\n", remat_last_error());
        exit(1);
    }
    remat_fn_output(f, remat_sum_all(f, remat_square(f, yn)));
    remat_fn_free(b);
    return f;
}

typedef struct {
    remat_program *p;
    remat_tensor in[3], out[3];
    remat_stats st;
    remat_memory_plan plan;
    double seconds;
} variant;

static void compile_variant(variant *v, const remat_schedule_spec *spec, const char *dir)
{
    remat_fn *f = loss(spec), *g;
    if (remat_value_and_grad(f, 2, (int[]){0, 2}, &g) != REMAT_OK) {
        fprintf(stderr, "bench_tiers: grad: %s\n", remat_last_error());
        exit(1);
    }
    remat_compile_options o = remat_compile_options_default();
    o.jit = REMAT_JIT_NEVER;
    o.tier_dir = dir;
    if (remat_compile_opts(g, remat_backend_cpu(), &o, &v->p) != REMAT_OK) {
        fprintf(stderr, "bench_tiers: compile: %s\n", remat_last_error());
        exit(1);
    }
    remat_program_plan(v->p, &v->plan);
    remat_fn_free(g);
    remat_fn_free(f);
}

static void run_variant(variant *v, const remat_tensor *in, int reps)
{
    const int64_t d[1] = {N};
    v->out[0] = (remat_tensor){REMAT_F64, remat_shape_make(0, NULL), calloc(1, 8)};
    v->out[1] = (remat_tensor){REMAT_F64, remat_shape_make(1, d), calloc((size_t)N, 8)};
    v->out[2] = (remat_tensor){REMAT_F64, remat_shape_make(1, d), calloc((size_t)N, 8)};
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        const double t0 = bench_wall_ns();
        if (remat_run(v->p, 3, in, 3, v->out, &v->st) != REMAT_OK) {
            fprintf(stderr, "bench_tiers: run: %s\n", remat_last_error());
            exit(1);
        }
        const double t = (bench_wall_ns() - t0) * 1e-9;
        best = t < best ? t : best;
    }
    v->seconds = best;
}

/* seconds per write / read of `bytes` in dir (page cache and all, as a run sees it) */
static void tier_speed(const char *dir, size_t bytes, double *w, double *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench-tiers-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("bench_tiers: the tier directory");
        exit(1);
    }
    unlink(path);
    char *buf = malloc(bytes);
    memset(buf, 1, bytes);
    const int k = 16;
    double t0 = bench_wall_ns();
    for (int i = 0; i < k; i++)
        if (pwrite(fd, buf, bytes, (off_t)i * (off_t)bytes) != (ssize_t)bytes)
            exit(1);
    *w = (bench_wall_ns() - t0) * 1e-9 / k;
    t0 = bench_wall_ns();
    for (int i = 0; i < k; i++)
        if (pread(fd, buf, bytes, (off_t)i * (off_t)bytes) != (ssize_t)bytes)
            exit(1);
    *r = (bench_wall_ns() - t0) * 1e-9 / k;
    close(fd);
    free(buf);
}

int main(int argc, char **argv)
{
    const char *dir = "/tmp";
    int reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            N = 1024, STEPS = 40, reps = 1;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else {
            fprintf(stderr, "usage: bench_tiers [--dir DIR] [--smoke]\n");
            return 2;
        }
    }
    const int64_t d[1] = {N}, xd[1] = {STEPS};
    remat_tensor in[3] = {{REMAT_F64, remat_shape_make(1, d), malloc((size_t)N * 8)},
                          {REMAT_F64, remat_shape_make(1, xd), malloc((size_t)STEPS * 8)},
                          {REMAT_F64, remat_shape_make(1, d), malloc((size_t)N * 8)}};
    for (int64_t i = 0; i < N; i++) {
        ((double *)in[0].data)[i] = 0.5 + 0.4 * sin(0.001 * (double)i);
        ((double *)in[2].data)[i] = 1 + 0.5 * cos(0.002 * (double)i);
    }
    for (int64_t t = 0; t < STEPS; t++)
        ((double *)in[1].data)[t] = 0.1 * sin(0.05 * (double)t);

    /* the store-all tape, and the RAM budget an eighth of it */
    const remat_schedule_spec store_all = {.kind = REMAT_SCHED_STORE_ALL};
    variant sa = {0};
    compile_variant(&sa, &store_all, dir);
    const size_t carry = sa.plan.scan_carry_bytes, tape = sa.plan.scan_tape_bytes;
    const size_t store_all_bytes = sa.plan.peak_snapshot_bytes, ram = store_all_bytes / 8;
    const size_t disk = (size_t)STEPS * carry;
    /* one step's time: the primal, interpreted */
    const remat_schedule_spec one = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 1};
    remat_fn *pf = loss(&one);
    remat_compile_options o = remat_compile_options_default();
    o.jit = REMAT_JIT_NEVER;
    remat_program *pp;
    if (remat_compile_opts(pf, remat_backend_cpu(), &o, &pp) != REMAT_OK)
        return 1;
    remat_tensor po = {REMAT_F64, remat_shape_make(0, NULL), calloc(1, 8)};
    double step_s = INFINITY;
    for (int r = 0; r < 3; r++) {
        const double t0 = bench_wall_ns();
        remat_run(pp, 3, in, 1, &po, NULL);
        const double t = (bench_wall_ns() - t0) * 1e-9 / (double)STEPS;
        step_s = t < step_s ? t : step_s;
    }
    remat_program_free(pp);
    remat_fn_free(pf);
    double w_s, r_s;
    tier_speed(dir, carry, &w_s, &r_s);
    const double W = w_s / step_s, R = r_s / step_s;

    remat_schedule_spec bin, two;
    if (remat_schedule_for_budget((int64_t)ram, STEPS, (int64_t)carry, (int64_t)tape, &bin) != REMAT_OK ||
        remat_schedule_for_tiers((int64_t)ram, (int64_t)disk, STEPS, (int64_t)carry, (int64_t)tape, W, R, &two) !=
            REMAT_OK) {
        fprintf(stderr, "bench_tiers: %s\n", remat_last_error());
        return 1;
    }
    variant vb = {0}, vt = {0};
    compile_variant(&vb, &bin, dir);
    compile_variant(&vt, &two, dir);
    run_variant(&vb, in, reps);
    run_variant(&vt, in, reps);
    int same = 1;
    for (int j = 0; j < 3; j++)
        same &= memcmp(vb.out[j].data, vt.out[j].data, remat_tensor_bytes(&vb.out[j])) == 0;
    char nb[96], nt[96];
    remat_schedule_format(&bin, nb, sizeof nb);
    remat_schedule_format(&two, nt, sizeof nt);
    remat_schedule_cost cb, ct;
    remat_schedule_predict(&bin, STEPS, &cb);
    remat_schedule_predict(&two, STEPS, &ct);
    printf("{\"benchmark\": \"tiers\", \"steps\": %lld, \"unknowns\": %lld, \"carry_bytes\": %zu, \"tape_bytes\": %zu, "
           "\"store_all_bytes\": %zu, \"ram_budget_bytes\": %zu, \"disk_budget_bytes\": %zu, \"tier_dir\": \"%s\", "
           "\"step_seconds\": %.6g, \"disk_write_steps\": %.4g, \"disk_read_steps\": %.4g,\n",
           (long long)STEPS, (long long)N, carry, tape, store_all_bytes, ram, disk, dir, step_s, W, R);
    printf(" \"ram_only\": {\"schedule\": \"%s\", \"seconds\": %.6g, \"forward_evals\": %lld, "
           "\"ram_snapshot_bytes_predicted\": %zu, \"ram_snapshot_bytes_measured\": %zu},\n",
           nb, vb.seconds, (long long)vb.st.forward_evals, vb.plan.peak_snapshot_bytes, vb.st.peak_snapshot_bytes);
    printf(" \"two_tier\": {\"schedule\": \"%s\", \"seconds\": %.6g, \"forward_evals\": %lld, \"disk_writes\": %lld, "
           "\"disk_reads\": %lld, \"ram_snapshot_bytes_predicted\": %zu, \"ram_snapshot_bytes_measured\": %zu, "
           "\"tier_bytes_predicted\": %zu, \"tier_bytes_measured\": %zu},\n",
           nt, vt.seconds, (long long)vt.st.forward_evals, (long long)ct.disk_writes, (long long)ct.disk_reads,
           vt.plan.peak_snapshot_bytes, vt.st.peak_snapshot_bytes, vt.plan.tier_bytes, vt.st.tier_bytes);
    printf(" \"speedup\": %.4g, \"gradients_bitwise_equal\": %s}\n", vb.seconds / vt.seconds, same ? "true" : "false");
    (void)cb;
    const int ok = same && vt.plan.tier_bytes == vt.st.tier_bytes &&
                   vt.plan.peak_snapshot_bytes == vt.st.peak_snapshot_bytes;
    remat_program_free(sa.p);
    remat_program_free(vb.p);
    remat_program_free(vt.p);
    for (int j = 0; j < 3; j++) {
        free(vb.out[j].data);
        free(vt.out[j].data);
        free(in[j].data);
    }
    free(po.data);
    return ok ? 0 : 1;
}
