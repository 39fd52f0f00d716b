/*
 * bench_ffn.c — gradient of a deep stack of transformer feed-forward blocks
 * under nn.remat policies and scan schedules: peak memory against time.
 *
 *   h_0 = x                                  (B, W)
 *   h_{l+1} = h_l + Dense_1(gelu(Dense_0(LayerNorm(h_l))))
 *                                            Dense_0 (W, 4W), Dense_1 (4W, W), l < L
 *   loss = sum(h_L^2)                        gradient w.r.t. every parameter
 *
 * Variants (remat/nn.h), all from the same parameter values:
 *   none                              FFN_0 .. FFN_{L-1} unrolled, no checkpoint
 *   none_in_arena                     none compiled with no_inplace: every
 *                                     activation it stores in the arena
 *   nothing_saveable                  each block remat_nn_remat(ffn, nothing_saveable)
 *   dots_with_no_batch_dims_saveable  each block remat_nn_remat(ffn, dots...)
 *   scan_store_all, scan_per_step,    remat_nn_scan(ffn, L) over stacked parameters
 *   scan_binomial:4                   with that schedule
 *
 * Peak = the arena's high-water mark (remat_stats.peak_arena_bytes; predicted
 * by remat_memory_plan.arena_bytes, and the two must agree): every
 * intermediate the program holds, residuals, a scan's snapshot store and step
 * tapes included (the store is a buffer of the arena: src/scan/scan_runtime.c).
 * peak_snapshot_bytes, the store's part of it, is reported beside it. The
 * parameters, x and the gradient buffers are the caller's and not counted
 * (a scan's stacked parameter gradients too: src/exec/compile.c writes a HOP's
 * results that are outputs straight into the caller's buffers). Unrolled
 * variants keep activations in those gradient buffers until the gradients
 * are written (src/exec/out_scratch.c), as XLA does: what they hold there is
 * not arena either.
 *
 * Timing: bench_util.h's round robin (two untimed runs per variant, then
 * `reps` rounds of one run each), wall and thread CPU time; run it with
 * OPENBLAS_NUM_THREADS=1 under taskset. The gradients of all variants must be
 * bitwise equal (exit status 1 otherwise). --smoke: L 4, W 16, B 8, and a
 * central finite difference in f64 of the loss for a few parameter entries.
 *
 * Targets (the issue): nothing_saveable peak <= 1/3 of none at <= 1.4x its
 * time; binomial:4 peak <= 1/6 of none_in_arena. The second target measures
 * what checkpointing saves against storing every activation. Since
 * src/exec/out_scratch.c, none parks its activations in the caller's gradient
 * buffers until those are written, so its arena no longer holds what it
 * stores (and a scan cannot do the same: its bodies' tapes and the
 * snapshot store stay in the arena); against that lean none the ratio read
 * 0.53 and said nothing about checkpointing. none_in_arena is the same
 * program compiled with no_inplace (remat_compile_options, REMAT_NO_INPLACE),
 * which keeps everything in the arena, as the scans do: the like-for-like
 * "store everything" baseline. nothing_saveable is compared with none as
 * before: both unrolled, both park activations the same way.
 *
 *   ninja -C build bench/bench_ffn
 *   OPENBLAS_NUM_THREADS=1 taskset -c 1 ./build/bench/bench_ffn [--layers L] [--width W] [--batch B] [--reps R]
 *       [--jax-ms none=MS,nothing_saveable=MS,...]
 *
 * --jax-ms: JAX's CPU medians of the same variants (bench/jax_ffn.py's
 * jax_ms_arg, same sizes): each such row gets ratio_vs_jax, this program's
 * CPU median over JAX's.
 * --xla-temp-bytes: XLA's compiled temp bytes of the same variants
 * (jax_ffn.py's temp_bytes_arg: memory_analysis().temp_size_in_bytes, which
 * like the arena leaves out the parameters, x and the gradient buffers, and
 * like the arena since src/exec/out_scratch.c keeps activations in those
 * gradient buffers until they are written): each such row gets
 * arena_vs_xla_temp, the measured arena peak over XLA's temp bytes (target
 * for "none": <= 1).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <remat/remat.h>

#include "bench_util.h"

enum { PER_BLOCK = 6 }; /* LayerNorm scale, bias; Dense_0 kernel, bias; Dense_1 kernel, bias */

typedef struct {
    int layers, width, batch, reps;
    bool smoke;
} config;

typedef struct {
    const char *name;
    bool scan;
    bool in_arena;              /* compiled with no_inplace: no activation parked in the outputs */
    const remat_policy *policy; /* per-block nn.remat (unrolled only) */
    const char *schedule;       /* scan only */
    remat_program *prog;
    remat_memory_plan plan;
    remat_stats stats;
    bench_timing timing;
    double jax_ms; /* --jax-ms: JAX's CPU median for this variant (0: not given) */
    double xla_temp; /* --xla-temp-bytes: XLA's temp bytes for this variant (0: not given) */
    remat_tensor *in, *out;
    int n_in, n_out;
} variant;

typedef struct {
    variant *v;
} bench_ctx;

static float urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static remat_nn_module *ffn_block(const config *c, const remat_policy *policy)
{
    remat_nn_module *f = remat_nn_ffn(c->width, 4 * (int64_t)c->width, REMAT_NN_GELU);
    if (!policy)
        return f;
    remat_nn_module *r = remat_nn_remat(f, policy);
    remat_nn_module_free(f);
    return r;
}

static remat_nn_module *build_module(const config *c, const variant *v)
{
    if (v->scan) {
        remat_scan_options opt = {0};
        if (remat_schedule_parse(v->schedule, &opt.schedule) != REMAT_OK)
            return NULL;
        remat_nn_module *b = ffn_block(c, NULL), *s = remat_nn_scan(b, c->layers, &opt);
        remat_nn_module_free(b);
        return s;
    }
    remat_nn_module **blocks = malloc(sizeof *blocks * (size_t)c->layers);
    for (int l = 0; l < c->layers; l++)
        blocks[l] = ffn_block(c, v->policy);
    remat_nn_module *seq = remat_nn_sequential(c->layers, blocks);
    for (int l = 0; l < c->layers; l++)
        remat_nn_module_free(blocks[l]);
    free(blocks);
    return seq;
}

/* loss(params..., x) = sum(m(x)^2) with the parameters' layout in p */
static remat_fn *build_loss(const config *c, const remat_nn_module *m, const remat_nn_params *p, remat_dtype dt)
{
    remat_fn *f = remat_fn_new("ffn_loss");
    int np = remat_nn_params_count(p);
    remat_val *pv = calloc((size_t)np + 1, sizeof *pv), y;
    remat_val x = remat_arg(f, "x", dt, 2, ((int64_t[]){c->batch, c->width}));
    if (remat_nn_params_args(f, p, pv) == REMAT_OK && remat_nn_apply(m, f, x, pv, &y) == REMAT_OK)
        remat_fn_output(f, remat_sum_all(f, remat_square(f, y)));
    free(pv);
    return f;
}

/* Compiles v's gradient program; p: the parameters in v's layout. */
static int prepare(const config *c, variant *v, remat_nn_params *p, remat_tensor x)
{
    remat_nn_module *m = build_module(c, v);
    remat_fn *f = NULL, *g = NULL;
    int np = remat_nn_params_count(p), rc = 1;
    int *argnums = malloc(sizeof *argnums * (size_t)np);
    for (int i = 0; i < np; i++)
        argnums[i] = i + 1; /* every parameter, not x */
    if (!m)
        goto done;
    f = build_loss(c, m, p, REMAT_F32);
    remat_compile_options o; /* the environment's, no_inplace added for none_in_arena */
    if (remat_compile_options_from_env(&o) != REMAT_OK)
        goto done;
    o.no_inplace = o.no_inplace || v->in_arena;
    if (remat_fn_status(f) != REMAT_OK || remat_grad(f, np, argnums, &g) != REMAT_OK ||
        remat_compile_opts(g, remat_backend_cpu(), &o, &v->prog) != REMAT_OK)
        goto done;
    remat_program_plan(v->prog, &v->plan);
    v->n_in = np + 1;
    v->n_out = np;
    v->in = malloc(sizeof *v->in * (size_t)v->n_in);
    v->out = malloc(sizeof *v->out * (size_t)v->n_out);
    v->in[0] = x;
    for (int i = 0; i < np; i++) {
        v->in[i + 1] = remat_nn_params_tensor(p, i);
        v->out[i] = remat_program_output_desc(v->prog, i);
        v->out[i].data = malloc(sizeof(float) * (size_t)remat_shape_numel(&v->out[i].shape));
    }
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "bench_ffn: %s: %s\n", v->name, remat_last_error());
    free(argnums);
    remat_fn_free(g);
    remat_fn_free(f);
    remat_nn_module_free(m);
    return rc;
}

static int run_variant(void *ctx, int i, bool first)
{
    (void)first;
    variant *v = &((bench_ctx *)ctx)->v[i];
    if (remat_run(v->prog, v->n_in, v->in, v->n_out, v->out, &v->stats) != REMAT_OK) {
        fprintf(stderr, "bench_ffn: run %s: %s\n", v->name, remat_last_error());
        return 1;
    }
    return 0;
}

/* parameter k (of PER_BLOCK) of layer l: its gradient in v's output */
static const float *grad_of(const variant *v, int l, int k, size_t *n)
{
    if (!v->scan) {
        const remat_tensor *t = &v->out[l * PER_BLOCK + k];
        *n = (size_t)remat_shape_numel(&t->shape);
        return t->data;
    }
    const remat_tensor *t = &v->out[k];
    *n = (size_t)remat_shape_numel(&t->shape) / (size_t)t->shape.dims[0];
    return (const float *)t->data + (size_t)l * *n;
}

static bool grads_equal(const config *c, const variant *a, const variant *b)
{
    for (int l = 0; l < c->layers; l++)
        for (int k = 0; k < PER_BLOCK; k++) {
            size_t na, nb;
            const float *ga = grad_of(a, l, k, &na), *gb = grad_of(b, l, k, &nb);
            if (na != nb || memcmp(ga, gb, sizeof *ga * na))
                return false;
        }
    return true;
}

/* The f64 loss of the unrolled network at parameters p64 (x widened). */
static double loss64(remat_program *prog, remat_nn_params *p64, const double *x64, const config *c)
{
    int np = remat_nn_params_count(p64);
    remat_tensor *in = malloc(sizeof *in * (size_t)(np + 1));
    in[0] = remat_tensor_f64((double *)x64, 2, (int64_t[]){c->batch, c->width});
    for (int i = 0; i < np; i++)
        in[i + 1] = remat_nn_params_tensor(p64, i);
    double y = NAN;
    remat_tensor out = remat_tensor_f64(&y, 0, NULL);
    if (remat_run(prog, np + 1, in, 1, &out, NULL) != REMAT_OK)
        fprintf(stderr, "bench_ffn: f64 loss: %s\n", remat_last_error());
    free(in);
    return y;
}

/* Central differences in f64 for a few entries (each parameter kind of the
 * first and last layer) against the f32 gradient of `v` (unrolled layout).
 * Returns the largest relative error. */
static double check_fd(const config *c, remat_nn_module *net, const float *x, const variant *v)
{
    remat_nn_params *p64;
    remat_program *prog = NULL;
    double worst = INFINITY;
    size_t nx = (size_t)c->batch * c->width;
    double *x64 = malloc(sizeof *x64 * nx);
    for (size_t i = 0; i < nx; i++)
        x64[i] = x[i];
    if (remat_nn_init(net, remat_prng_key_from_seed(0), REMAT_F64, 2, (int64_t[]){c->batch, c->width}, &p64))
        goto done;
    remat_fn *f = build_loss(c, net, p64, REMAT_F64);
    remat_status st = remat_compile(f, remat_backend_cpu(), &prog);
    remat_fn_free(f);
    if (st != REMAT_OK)
        goto done;
    /* the f32 values the benchmark used, widened */
    for (int i = 0; i < remat_nn_params_count(p64); i++) {
        remat_tensor t = remat_nn_params_tensor(p64, i);
        const float *s = v->in[i + 1].data;
        for (int64_t j = 0; j < remat_shape_numel(&t.shape); j++)
            ((double *)t.data)[j] = s[j];
    }
    worst = 0;
    const int layers[2] = {0, c->layers - 1};
    for (int li = 0; li < 2; li++)
        for (int k = 0; k < PER_BLOCK; k++) {
            int pi = layers[li] * PER_BLOCK + k;
            double *w = remat_nn_params_tensor(p64, pi).data;
            size_t n;
            const float *g = grad_of(v, layers[li], k, &n);
            size_t j = (size_t)(7 * k + 3) % n;
            const double h = 1e-4 * fmax(1.0, fabs(w[j])), w0 = w[j];
            w[j] = w0 + h;
            double up = loss64(prog, p64, x64, c);
            w[j] = w0 - h;
            double dn = loss64(prog, p64, x64, c);
            w[j] = w0;
            double fd = (up - dn) / (2 * h), err = fabs(g[j] - fd) / fmax(fabs(fd), 1e-2);
            worst = err > worst ? err : worst;
        }
done:
    if (!isfinite(worst))
        fprintf(stderr, "bench_ffn: finite differences: %s\n", remat_last_error());
    remat_program_free(prog);
    remat_nn_params_free(p64);
    free(x64);
    return worst;
}

int main(int argc, char **argv)
{
    config c = {.layers = 32, .width = 512, .batch = 256, .reps = 3};
    const char *jax = NULL, *xla_temp = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            c = (config){.layers = 4, .width = 16, .batch = 8, .reps = 3, .smoke = true};
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            c.reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            c.layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--width") && i + 1 < argc)
            c.width = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            c.batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--jax-ms") && i + 1 < argc)
            jax = argv[++i];
        else if (!strcmp(argv[i], "--xla-temp-bytes") && i + 1 < argc)
            xla_temp = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--smoke] [--reps N] [--layers L] [--width W] [--batch B] "
                            "[--jax-ms VARIANT=MS,...] [--xla-temp-bytes VARIANT=BYTES,...]\n", argv[0]);
            return 2;
        }
    }
    if (c.reps < 1 || c.layers < 1 || c.width < 1 || c.batch < 1)
        return fprintf(stderr, "bench_ffn: sizes and reps must be >= 1\n"), 2;
    const int L = c.layers, W = c.width, B = c.batch;
    const int64_t xdims[2] = {B, W};

    variant v[] = {
        {.name = "none"},
        {.name = "nothing_saveable", .policy = remat_nothing_saveable},
        {.name = "dots_with_no_batch_dims_saveable", .policy = remat_dots_with_no_batch_dims_saveable},
        {.name = "scan_store_all", .scan = true, .schedule = "store-all"},
        {.name = "scan_per_step", .scan = true, .schedule = "per-step"},
        {.name = "scan_binomial:4", .scan = true, .schedule = "binomial:4"},
        {.name = "none_in_arena", .in_arena = true},
    };
    const int nv = (int)(sizeof v / sizeof v[0]);
    if (jax) {
        const char *names[sizeof v / sizeof v[0]];
        double ms[sizeof v / sizeof v[0]] = {0};
        for (int i = 0; i < nv; i++)
            names[i] = v[i].name;
        if (bench_parse_named_ms("bench_ffn", jax, nv, names, ms))
            return 2;
        for (int i = 0; i < nv; i++)
            v[i].jax_ms = ms[i];
    }
    if (xla_temp) {
        const char *names[sizeof v / sizeof v[0]];
        double bytes[sizeof v / sizeof v[0]] = {0};
        for (int i = 0; i < nv; i++)
            names[i] = v[i].name;
        if (bench_parse_named_ms("bench_ffn", xla_temp, nv, names, bytes))
            return 2;
        for (int i = 0; i < nv; i++)
            v[i].xla_temp = bytes[i];
    }

    /* parameters: Flax's init of the unrolled network from seed 0; the scan's
     * stacked parameters get the same values (layer l = FFN_l) */
    variant plain = {.name = "none"}, stacked = {.scan = true, .schedule = "store-all"};
    remat_nn_module *net = build_module(&c, &plain), *snet = build_module(&c, &stacked);
    remat_nn_params *pu, *ps;
    if (!net || !snet || remat_nn_init(net, remat_prng_key_from_seed(0), REMAT_F32, 2, xdims, &pu) != REMAT_OK ||
        remat_nn_init(snet, remat_prng_key_from_seed(0), REMAT_F32, 2, xdims, &ps) != REMAT_OK)
        return fprintf(stderr, "bench_ffn: init: %s\n", remat_last_error()), 1;
    for (int k = 0; k < PER_BLOCK; k++) {
        remat_tensor s = remat_nn_params_tensor(ps, k);
        for (int l = 0; l < L; l++) {
            remat_tensor u = remat_nn_params_tensor(pu, l * PER_BLOCK + k);
            size_t bytes = sizeof(float) * (size_t)remat_shape_numel(&u.shape);
            memcpy((char *)s.data + (size_t)l * bytes, u.data, bytes);
        }
    }
    uint64_t seed = 42;
    float *x = malloc(sizeof *x * (size_t)B * W);
    for (size_t i = 0; i < (size_t)B * W; i++)
        x[i] = urand(&seed);
    remat_tensor tx = remat_tensor_f32(x, 2, xdims);

    for (int i = 0; i < nv; i++)
        if (prepare(&c, &v[i], v[i].scan ? ps : pu, tx))
            return 1;
    bench_ctx ctx = {.v = v};
    bench_timing *t[sizeof v / sizeof v[0]];
    for (int i = 0; i < nv; i++)
        t[i] = &v[i].timing;
    if (bench_time_round_robin(nv, t, run_variant, &ctx, c.reps, 0, true))
        return 1;

    bool equal = true, plan_ok = true;
    for (int i = 0; i < nv; i++) {
        equal &= i == 0 || grads_equal(&c, &v[0], &v[i]);
        plan_ok &= v[i].stats.peak_arena_bytes == v[i].plan.arena_bytes &&
                   v[i].stats.peak_snapshot_bytes == v[i].plan.peak_snapshot_bytes;
    }
    double fd_err = c.smoke ? check_fd(&c, net, x, &v[0]) : -1;

    const double none_peak = (double)v[0].stats.peak_arena_bytes, none_ms = bench_median(v[0].timing.wall, c.reps);
    const double ns_peak = v[1].stats.peak_arena_bytes / none_peak;
    const double ns_time = bench_median(v[1].timing.wall, c.reps) / none_ms;
    /* binomial:4 against storing everything in the arena, as a scan does (the header) */
    const double bi_peak = (double)v[5].stats.peak_arena_bytes / (double)v[6].stats.peak_arena_bytes;
    const bool pass_ns = ns_peak <= 1.0 / 3 && ns_time <= 1.4, pass_bi = bi_peak <= 1.0 / 6;
    printf("{\"bench\":\"ffn\", \"layers\":%d, \"width\":%d, \"hidden\":%d, \"batch\":%d, \"dtype\":\"f32\", "
           "\"reps\":%d, \"param_bytes\":%zu,\n \"peak\":\"arena high-water mark (residuals, temporaries, scan "
           "snapshot store and tapes); parameters, x and gradients are the caller's (unrolled variants keep "
           "activations in the gradients until those are written)\",\n \"variants\":[",
           L, W, 4 * W, B, c.reps, remat_nn_params_bytes(pu));
    for (int i = 0; i < nv; i++) {
        const double med = bench_median(v[i].timing.wall, c.reps);
        printf("%s\n  {\"variant\":\"%s\", \"peak_bytes\":%zu, \"predicted_peak_bytes\":%zu, "
               "\"snapshot_bytes\":%zu, \"residual_bytes\":%zu, \"median_ms\":%.1f, \"min_ms\":%.1f, "
               "\"cpu_median_ms\":%.1f, \"ops\":%lld, \"recomputed_ops\":%lld, \"scan_body_evals\":%lld, \"peak_ratio\":%.4f, "
               "\"time_ratio\":%.3f",
               i ? "," : "", v[i].name, v[i].stats.peak_arena_bytes, v[i].plan.arena_bytes,
               v[i].stats.peak_snapshot_bytes, v[i].stats.residual_bytes, med, bench_minimum(v[i].timing.wall, c.reps),
               bench_median(v[i].timing.samples, c.reps), (long long)v[i].stats.ops_executed,
               (long long)v[i].stats.recomputed_ops, (long long)v[i].stats.forward_evals,
               v[i].stats.peak_arena_bytes / none_peak, med / none_ms);
        if (v[i].jax_ms > 0) /* this program's CPU median over JAX's (jax_ffn.py's jax_ms_arg) */
            printf(", \"jax_cpu_median_ms\":%.1f, \"ratio_vs_jax\":%.3f", v[i].jax_ms,
                   bench_median(v[i].timing.samples, c.reps) / v[i].jax_ms);
        if (v[i].xla_temp > 0) /* the arena over XLA's compiled temp bytes (jax_ffn.py's temp_bytes_arg) */
            printf(", \"xla_temp_bytes\":%.0f, \"arena_vs_xla_temp\":%.4f", v[i].xla_temp,
                   (double)v[i].stats.peak_arena_bytes / v[i].xla_temp);
        printf("}");
    }
    printf("],\n \"targets\":[{\"variant\":\"nothing_saveable\", \"max_peak_ratio\":0.3333, \"peak_ratio\":%.4f, "
           "\"max_time_ratio\":1.4, \"time_ratio\":%.3f, \"pass\":%s},\n  {\"variant\":\"scan_binomial:4\", "
           "\"baseline\":\"none_in_arena\", \"max_peak_ratio\":0.1667, \"peak_ratio\":%.4f, \"pass\":%s}],\n",
           ns_peak, ns_time, pass_ns ? "true" : "false", bi_peak, pass_bi ? "true" : "false");
    printf(" \"measured_equals_predicted\":%s, \"gradients_bitwise_equal\":%s", plan_ok ? "true" : "false",
           equal ? "true" : "false");
    if (c.smoke)
        printf(", \"max_rel_error_vs_f64_central_difference\":%.3g", fd_err);
    bool ok = equal && plan_ok && (!c.smoke || fd_err < 1e-3);
    printf(", \"ok\":%s}\n", ok ? "true" : "false");

    for (int i = 0; i < nv; i++) {
        for (int k = 0; k < v[i].n_out; k++)
            free(v[i].out[k].data);
        free(v[i].in);
        free(v[i].out);
        free(v[i].timing.samples);
        free(v[i].timing.wall);
        remat_program_free(v[i].prog);
    }
    remat_nn_params_free(pu);
    remat_nn_params_free(ps);
    remat_nn_module_free(net);
    remat_nn_module_free(snet);
    free(x);
    return ok ? 0 : 1;
}
