/*
 * bench_mlp.c — gradient of a deep ReLU MLP under checkpoint policies,
 * against the OpenBLAS GEMM floor.
 *
 *   h_0 = x                       (B, W)
 *   h_{l+1} = relu(h_l @ w_l)     w_l (W, W), l < D, each layer a checkpoint
 *                                 region (remat_checkpoint of a one-layer
 *                                 function, called D times)
 *   loss = sum(h_D^2)             gradient w.r.t. w_0 .. w_{D-1}
 *
 * Variants: no checkpoint, nothing_saveable, dots_with_no_batch_dims_saveable,
 * everything_saveable, and the floor: per layer one forward and two backward
 * cblas_sgemm on buffers of the same sizes (3 D GEMMs, no elementwise work).
 * All variants run round-robin, `reps` times each; medians and minima are
 * reported in one JSON object on stdout (wall time, and process CPU time,
 * which with OPENBLAS_NUM_THREADS=1 is robust on a busy machine). The
 * gradients of the four remat variants must be bitwise equal (exit status 1
 * otherwise). --smoke runs a tiny size and also checks the gradient against
 * a plain-loop reference; --only VARIANT runs one variant without the floor
 * (for perf record).
 *
 * Target: dots_with_no_batch_dims_saveable <= 1.15x the floor.
 *
 * --xla-temp-bytes N: XLA's compiled temp bytes of the same gradient
 * (bench/jax_ffn.py's "mlp/none" temp_bytes): the no_checkpoint row gets
 * arena_vs_xla_temp, its arena over N (target <= 1; both leave out the
 * weights, x and the gradient buffers, and both keep activations in those
 * gradient buffers until they are written: src/exec/out_scratch.c).
 */
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <remat/remat.h>

#include "bench_util.h"

typedef struct {
    int layers, width, batch, reps;
    bool smoke;
    const char *only; /* run this variant alone, no floor (for profiling) */
} config;

typedef struct {
    const char *name;
    const remat_policy *policy; /* NULL with ckpt false: no checkpoint */
    bool ckpt;
    remat_program *prog;
    remat_memory_plan plan;
    remat_stats stats;
    double *ms, *cpu_ms; /* wall and process CPU time per rep */
    float *grad; /* D * W * W */
} variant;

/* a JSON number, or null when not finite (no floor measured) */
static const char *jnum(char *buf, size_t len, double x)
{
    if (isfinite(x))
        snprintf(buf, len, "%.4f", x);
    else
        snprintf(buf, len, "null");
    return buf;
}

/* deterministic uniform in [-1, 1) */
static float urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* layer(h, w) = relu(h @ w) */
static remat_fn *build_layer(const config *c)
{
    remat_fn *f = remat_fn_new("layer");
    remat_val h = remat_arg(f, "h", REMAT_F32, 2, ((int64_t[]){c->batch, c->width}));
    remat_val w = remat_arg(f, "w", REMAT_F32, 2, ((int64_t[]){c->width, c->width}));
    remat_fn_output(f, remat_relu(f, remat_matmul(f, h, w)));
    return f;
}

/* loss(x, w_0..w_{D-1}) */
static remat_fn *build_loss(const config *c, const remat_fn *layer)
{
    remat_fn *f = remat_fn_new("mlp_loss");
    remat_val h = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){c->batch, c->width}));
    remat_val *w = malloc(sizeof *w * (size_t)c->layers);
    for (int l = 0; l < c->layers; l++) {
        char nm[32];
        snprintf(nm, sizeof nm, "w%d", l);
        w[l] = remat_arg(f, nm, REMAT_F32, 2, ((int64_t[]){c->width, c->width}));
    }
    for (int l = 0; l < c->layers; l++)
        h = remat_call1(f, layer, 2, ((remat_val[]){h, w[l]}));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, h)));
    free(w);
    return f;
}

static int prepare(const config *c, remat_fn *layer, variant *v)
{
    remat_fn *ck = NULL, *loss = NULL, *g = NULL;
    int *argnums = malloc(sizeof *argnums * (size_t)c->layers);
    for (int l = 0; l < c->layers; l++)
        argnums[l] = l + 1; /* every weight, not x */
    int rc = 1;
    if (v->ckpt && !(ck = remat_checkpoint(layer, v->policy)))
        goto done;
    loss = build_loss(c, ck ? ck : layer);
    if (remat_fn_status(loss) != REMAT_OK || remat_grad(loss, c->layers, argnums, &g) != REMAT_OK ||
        remat_compile(g, remat_backend_cpu(), &v->prog) != REMAT_OK)
        goto done;
    remat_program_plan(v->prog, &v->plan);
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "bench_mlp: %s: %s\n", v->name, remat_last_error());
    free(argnums);
    remat_fn_free(g);
    remat_fn_free(loss);
    remat_fn_free(ck);
    return rc;
}

/* Plain-loop reference gradient in double (smoke size only). */
static double check_reference(const config *c, const float *x, float *const *w, const float *grad)
{
    const int B = c->batch, W = c->width, D = c->layers;
    double **h = malloc(sizeof *h * (size_t)(D + 1));
    for (int l = 0; l <= D; l++)
        h[l] = calloc((size_t)B * W, sizeof **h);
    for (int i = 0; i < B * W; i++)
        h[0][i] = x[i];
    for (int l = 0; l < D; l++)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < W; j++) {
                double s = 0;
                for (int k = 0; k < W; k++)
                    s += h[l][b * W + k] * w[l][k * W + j];
                h[l + 1][b * W + j] = s > 0 ? s : 0;
            }
    double *g = malloc(sizeof *g * (size_t)B * W), *gn = malloc(sizeof *gn * (size_t)B * W);
    for (int i = 0; i < B * W; i++)
        g[i] = 2 * h[D][i];
    double worst = 0;
    for (int l = D - 1; l >= 0; l--) {
        for (int i = 0; i < B * W; i++) /* through relu: h[l+1] > 0 iff pre-activation > 0 */
            g[i] = h[l + 1][i] > 0 ? g[i] : 0;
        for (int k = 0; k < W; k++)
            for (int j = 0; j < W; j++) {
                double s = 0;
                for (int b = 0; b < B; b++)
                    s += h[l][b * W + k] * g[b * W + j];
                double got = grad[(size_t)l * W * W + (size_t)k * W + j];
                double err = fabs(got - s) / fmax(fabs(s), 1e-3);
                worst = err > worst ? err : worst;
            }
        for (int b = 0; b < B; b++)
            for (int k = 0; k < W; k++) {
                double s = 0;
                for (int j = 0; j < W; j++)
                    s += g[b * W + j] * w[l][k * W + j];
                gn[b * W + k] = s;
            }
        double *t = g;
        g = gn;
        gn = t;
    }
    for (int l = 0; l <= D; l++)
        free(h[l]);
    free(h);
    free(g);
    free(gn);
    return worst;
}

int main(int argc, char **argv)
{
    config c = {.layers = 16, .width = 512, .batch = 256, .reps = 15};
    double xla_temp = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            c = (config){.layers = 2, .width = 16, .batch = 8, .reps = 3, .smoke = true};
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            c.reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            c.only = argv[++i];
        else if (!strcmp(argv[i], "--xla-temp-bytes") && i + 1 < argc && atof(argv[i + 1]) > 0)
            xla_temp = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--smoke] [--reps N] [--only VARIANT] [--xla-temp-bytes N]\n", argv[0]);
            return 2;
        }
    }
    if (c.reps < 1)
        c.reps = 1;
    const int B = c.batch, W = c.width, D = c.layers;
    const size_t act = (size_t)B * W, wsz = (size_t)W * W;

    /* inputs: x uniform in [-1, 1), w_l uniform scaled to keep the activations O(1) under relu */
    uint64_t seed = 42;
    float *x = malloc(sizeof *x * act);
    float **w = malloc(sizeof *w * (size_t)D);
    for (size_t i = 0; i < act; i++)
        x[i] = urand(&seed);
    const float scale = sqrtf(6.0f / (float)W);
    for (int l = 0; l < D; l++) {
        w[l] = malloc(sizeof **w * wsz);
        for (size_t i = 0; i < wsz; i++)
            w[l][i] = scale * urand(&seed);
    }
    remat_tensor *in = malloc(sizeof *in * (size_t)(D + 1));
    in[0] = remat_tensor_f32(x, 2, (int64_t[]){B, W});
    for (int l = 0; l < D; l++)
        in[l + 1] = remat_tensor_f32(w[l], 2, (int64_t[]){W, W});

    variant v[] = {
        {.name = "no_checkpoint", .ckpt = false},
        {.name = "nothing_saveable", .ckpt = true, .policy = remat_nothing_saveable},
        {.name = "dots_with_no_batch_dims_saveable", .ckpt = true, .policy = remat_dots_with_no_batch_dims_saveable},
        {.name = "everything_saveable", .ckpt = true, .policy = remat_everything_saveable},
    };
    int nv = (int)(sizeof v / sizeof v[0]);
    if (c.only) {
        int k = 0;
        while (k < nv && strcmp(v[k].name, c.only))
            k++;
        if (k == nv)
            return fprintf(stderr, "bench_mlp: no variant '%s'\n", c.only), 2;
        v[0] = v[k];
        nv = 1;
    }
    remat_fn *layer = build_layer(&c);
    remat_tensor *out = malloc(sizeof *out * (size_t)D);
    for (int i = 0; i < nv; i++) {
        if (prepare(&c, layer, &v[i]))
            return 1;
        v[i].ms = calloc((size_t)c.reps, sizeof *v[i].ms);
        v[i].cpu_ms = calloc((size_t)c.reps, sizeof *v[i].cpu_ms);
        v[i].grad = malloc(sizeof *v[i].grad * wsz * (size_t)D);
    }

    /* the floor: same shapes, GEMMs only */
    float **fh = malloc(sizeof *fh * (size_t)(D + 1));
    for (int l = 0; l <= D; l++) {
        fh[l] = malloc(sizeof **fh * act);
        memcpy(fh[l], x, sizeof *x * act);
    }
    float *fg = malloc(sizeof *fg * act), *fg2 = malloc(sizeof *fg2 * act), *fdw = malloc(sizeof *fdw * wsz * D);
    for (size_t i = 0; i < act; i++)
        fg[i] = urand(&seed);
    double *floor_ms = calloc((size_t)c.reps, sizeof *floor_ms);
    double *floor_cpu = calloc((size_t)c.reps, sizeof *floor_cpu);

    /* one untimed warm-up round, then reps timed rounds, variants interleaved */
    for (int rep = -1; rep < c.reps; rep++) {
        for (int i = 0; i < nv; i++) {
            for (int l = 0; l < D; l++)
                out[l] = remat_tensor_f32(v[i].grad + (size_t)l * wsz, 2, (int64_t[]){W, W});
            double c0 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_clock_ms(CLOCK_MONOTONIC);
            if (remat_run(v[i].prog, D + 1, in, D, out, &v[i].stats) != REMAT_OK) {
                fprintf(stderr, "bench_mlp: run %s: %s\n", v[i].name, remat_last_error());
                return 1;
            }
            double t1 = bench_clock_ms(CLOCK_MONOTONIC), c1 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
            if (rep >= 0) {
                v[i].ms[rep] = t1 - t0;
                v[i].cpu_ms[rep] = c1 - c0;
            }
        }
        if (c.only)
            continue;
        double c0 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_clock_ms(CLOCK_MONOTONIC);
        for (int l = 0; l < D; l++) /* h_{l+1} = h_l @ w_l */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, W, W, 1.0f, fh[l], W, w[l], W, 0.0f, fh[l + 1],
                        W);
        for (int l = D - 1; l >= 0; l--) {
            /* dw_l = h_l^T g ; g' = g w_l^T */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, W, W, B, 1.0f, fh[l], W, fg, W, 0.0f,
                        fdw + (size_t)l * wsz, W);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, W, W, 1.0f, fg, W, w[l], W, 0.0f, fg2, W);
            float *t = fg;
            fg = fg2;
            fg2 = t;
        }
        double t1 = bench_clock_ms(CLOCK_MONOTONIC), c1 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        if (rep >= 0) {
            floor_ms[rep] = t1 - t0;
            floor_cpu[rep] = c1 - c0;
        }
    }

    bool equal = true;
    for (int i = 1; i < nv; i++)
        equal &= memcmp(v[i].grad, v[0].grad, sizeof *v[0].grad * wsz * (size_t)D) == 0;
    double ref_err = c.smoke ? check_reference(&c, x, w, v[0].grad) : -1;
    bool ok = equal && (!c.smoke || ref_err < 1e-4);

    const double floor_med = c.only ? NAN : bench_median(floor_ms, c.reps);
    const double floor_cpu_med = c.only ? NAN : bench_median(floor_cpu, c.reps);
    char b1[32], b2[32], b3[32];
    printf("{\"bench\":\"mlp\", \"layers\":%d, \"width\":%d, \"batch\":%d, \"dtype\":\"f32\", \"reps\":%d, "
           "\"gemm_floor_ms\":%s, \"gemm_floor_min_ms\":%s, \"gemm_floor_cpu_ms\":%s, \"gemm_floor_gemms\":%d, \"target\":{\"policy\":"
           "\"dots_with_no_batch_dims_saveable\", \"max_ratio_to_floor\":1.15}, \"variants\":[",
           D, W, B, c.reps, jnum(b1, sizeof b1, floor_med),
           jnum(b2, sizeof b2, c.only ? NAN : bench_minimum(floor_ms, c.reps)), jnum(b3, sizeof b3, floor_cpu_med), 3 * D);
    for (int i = 0; i < nv; i++) {
        const double med = bench_median(v[i].ms, c.reps), cmed = bench_median(v[i].cpu_ms, c.reps);
        printf("%s\n  {\"policy\":\"%s\", \"median_ms\":%.4f, \"min_ms\":%.4f, \"ratio_to_floor\":%s, "
               "\"cpu_ms\":%.4f, \"cpu_ratio_to_floor\":%s, "
               "\"residual_bytes\":%zu, \"arena_bytes\":%zu, \"constant_bytes\":%zu, \"ops\":%lld, "
               "\"dot_generals\":%lld, \"recomputed_ops\":%lld",
               i ? "," : "", v[i].name, med, bench_minimum(v[i].ms, c.reps), jnum(b1, sizeof b1, med / floor_med), cmed,
               jnum(b3, sizeof b3, cmed / floor_cpu_med),
               v[i].plan.residual_bytes, v[i].plan.arena_bytes, v[i].plan.constant_bytes,
               (long long)v[i].stats.ops_executed, (long long)v[i].stats.op_counts[REMAT_OP_DOT_GENERAL],
               (long long)v[i].stats.recomputed_ops);
        if (xla_temp > 0 && !v[i].ckpt) /* the arena over XLA's compiled temp bytes */
            printf(", \"xla_temp_bytes\":%.0f, \"arena_vs_xla_temp\":%.4f}", xla_temp,
                   (double)v[i].plan.arena_bytes / xla_temp);
        else
            printf("}");
    }
    printf("],\n \"gradients_bitwise_equal\":%s", equal ? "true" : "false");
    if (c.smoke)
        printf(", \"max_rel_error_vs_reference\":%.3g", ref_err);
    printf(", \"ok\":%s}\n", ok ? "true" : "false");

    for (int i = 0; i < nv; i++) {
        remat_program_free(v[i].prog);
        free(v[i].ms);
        free(v[i].cpu_ms);
        free(v[i].grad);
    }
    for (int l = 0; l <= D; l++)
        free(fh[l]);
    for (int l = 0; l < D; l++)
        free(w[l]);
    free(fh);
    free(fg);
    free(fg2);
    free(fdw);
    free(floor_ms);
    free(floor_cpu);
    free(w);
    free(x);
    free(in);
    free(out);
    remat_fn_free(layer);
    return ok ? 0 : 1;
}
