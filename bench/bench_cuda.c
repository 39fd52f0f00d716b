/*
 * bench_cuda.c — remat on the GPU against hand-written floors, in one run.
 *
 *   mlp   gradient of a ReLU MLP (D = 16 layers, W = 4096, batch 4096, f32)
 *         against a cuBLAS floor of the same GEMMs (per layer one forward
 *         and two backward SGEMMs; with per-layer remat one more forward),
 *         with and without per-layer remat (nothing_saveable regions).
 *         Target: <= 1.25x the floor.
 *   pfr   2^20 independent (k1, k2) reactors (A->B->C, Euler, 1000 steps,
 *         f64), gradient of -sum B(L), against the hand store-all adjoint
 *         kernel (pfr_cuda_hand.h): store-all, per-step, binomial:10,
 *         online:10, with lane-steps per second and the hand kernel's
 *         achieved bandwidth against the device's peak. Targets: store-all
 *         <= 1.3x, per-step <= 1.6x the hand kernel.
 *   memory  device memory taken by each remat program (cudaMemGetInfo
 *         before compiling, after compiling, after a run) next to its plan.
 *
 * Times are CUDA events around each run (device work plus the host
 * copies remat_run does), medians of --rounds, variants interleaved.
 * One JSON object on stdout. Without a CUDA device: the reason on stdout,
 * exit 77. --smoke: tiny sizes. (The CUDA backend's scan lanes are never
 * cut into lane blocks or pool ranges: remat_backend_iface.host_lane_cuts.)
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <remat/remat.h>

#include "bench_util.h"
#include "pfr_cuda_hand.h"

#define CK(x) ck_((x) == cudaSuccess, #x, __LINE__)
#define CB(x) ck_((x) == CUBLAS_STATUS_SUCCESS, #x, __LINE__)
static void ck_(bool ok, const char *what, int line)
{
    if (!ok) {
        fprintf(stderr, "bench_cuda:%d: %s failed (%s)\n", line, what, cudaGetErrorString(cudaGetLastError()));
        exit(1);
    }
}

typedef struct {
    int D, W, B, rounds;
    int64_t lanes, steps;
} config;

/* a JSON number, or null (not measured) */
static const char *jnum(char *buf, size_t len, double x)
{
    if (isfinite(x))
        snprintf(buf, len, "%.4g", x);
    else
        snprintf(buf, len, "null");
    return buf;
}

static bool first_item = true;
static void item(const char *fmt_json) { printf("%s\n  %s", first_item ? "" : ",", fmt_json), first_item = false; }

/* ---- timing: CUDA events around fn(ctx), rounds samples, median ---- */

typedef int (*run_fn)(void *ctx);

static double time_ms(run_fn fn, void *ctx)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)), CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, 0));
    const int rc = fn(ctx);
    CK(cudaEventRecord(b, 0));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a), cudaEventDestroy(b);
    return rc == 0 ? ms : NAN;
}

/* n variants, each warmed up once, then `rounds` rounds of one sample each */
static void time_interleaved(int n, run_fn *fn, void **ctx, int rounds, double *med)
{
    double *s = calloc((size_t)(n * rounds), sizeof *s);
    for (int v = 0; v < n; v++)
        time_ms(fn[v], ctx[v]);
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < n; v++)
            s[v * rounds + r] = time_ms(fn[v], ctx[v]);
    for (int v = 0; v < n; v++)
        med[v] = bench_median(s + v * rounds, rounds);
    free(s);
}

static float *dev_f32(size_t n, uint64_t *seed, float scale)
{
    float *h = malloc(sizeof *h * n), *d = NULL;
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = scale * (float)((double)(*seed >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
    CK(cudaMalloc((void **)&d, sizeof *d * n));
    CK(cudaMemcpy(d, h, sizeof *d * n, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* ---- the MLP's cuBLAS floor ---- */

typedef struct {
    cublasHandle_t h;
    int D, W, B;
    bool recompute; /* per-layer remat: each layer's forward GEMM once more */
    float *x, **w, *act, *g, *gp, *dw;
} mlp_floor;

/* row-major (B,W) @ (W,W) in cuBLAS's column-major terms: C^T = W^T H^T */
static int run_floor(void *ctx)
{
    mlp_floor *f = ctx;
    const float one = 1, zero = 0;
    const int W = f->W, B = f->B;
    const size_t act = (size_t)B * W;
    for (int l = 0; l < f->D; l++) /* h_{l+1} = h_l @ w_l (relu costs no GEMM) */
        CB(cublasSgemm(f->h, CUBLAS_OP_N, CUBLAS_OP_N, W, B, W, &one, f->w[l], W, f->act + l * act, W, &zero,
                       f->act + (l + 1) * act, W));
    for (int l = f->D - 1; l >= 0; l--) {
        if (f->recompute)
            CB(cublasSgemm(f->h, CUBLAS_OP_N, CUBLAS_OP_N, W, B, W, &one, f->w[l], W, f->act + l * act, W, &zero,
                           f->gp, W));
        /* dW_l = h_l^T g, g_prev = g w_l^T */
        CB(cublasSgemm(f->h, CUBLAS_OP_N, CUBLAS_OP_T, W, W, B, &one, f->g, W, f->act + l * act, W, &zero, f->dw, W));
        CB(cublasSgemm(f->h, CUBLAS_OP_T, CUBLAS_OP_N, W, B, W, &one, f->w[l], W, f->g, W, &zero, f->gp, W));
    }
    return 0;
}

/* ---- remat programs on the CUDA backend, inputs and outputs on the device ---- */

typedef struct {
    remat_program *prog;
    remat_memory_plan plan;
    int n_in, n_out;
    remat_tensor *in, *out;
    size_t mem_compile, mem_run; /* cudaMemGetInfo: device memory taken by compiling, and after a run */
} rprog;

static size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    CK(cudaDeviceSynchronize());
    CK(cudaMemGetInfo(&f, &t));
    return f;
}

static int run_prog(void *ctx)
{
    rprog *r = ctx;
    if (remat_run_device(r->prog, r->n_in, r->in, r->n_out, r->out, NULL) != REMAT_OK) {
        fprintf(stderr, "bench_cuda: run: %s\n", remat_last_error());
        return -1;
    }
    return 0;
}

/* compiles g for the GPU, outputs allocated on the device from its signature */
static int rprog_new(rprog *r, const remat_fn *g, remat_backend *be, int n_in, remat_tensor *in)
{
    const size_t before = free_bytes();
    if (remat_compile(g, be, &r->prog) != REMAT_OK)
        return fprintf(stderr, "bench_cuda: compile: %s\n", remat_last_error()), -1;
    remat_program_plan(r->prog, &r->plan);
    r->n_in = n_in, r->in = in;
    r->n_out = remat_program_num_outputs(r->prog);
    r->out = calloc((size_t)r->n_out, sizeof *r->out);
    for (int i = 0; i < r->n_out; i++) {
        r->out[i] = remat_program_output_desc(r->prog, i);
        r->out[i].data = remat_backend_alloc(be, remat_tensor_bytes(&r->out[i]));
        if (!r->out[i].data)
            return fprintf(stderr, "bench_cuda: %s\n", remat_last_error()), -1;
    }
    r->mem_compile = before - free_bytes();
    if (run_prog(r) != 0)
        return -1;
    r->mem_run = before - free_bytes();
    return 0;
}

static void rprog_free(rprog *r, remat_backend *be)
{
    for (int i = 0; r->out && i < r->n_out; i++)
        remat_backend_free(be, r->out[i].data);
    free(r->out);
    remat_program_free(r->prog);
    memset(r, 0, sizeof *r);
}

static void print_memory(const char *what, const rprog *r)
{
    char s[512];
    snprintf(s, sizeof s,
             "{\"memory\":\"%s\", \"plan_arena_bytes\":%zu, \"plan_constant_bytes\":%zu, \"plan_store_bytes\":%zu, "
             "\"device_bytes_after_compile\":%zu, \"device_bytes_after_run\":%zu, \"compiled_loops\":%lld}",
             what, r->plan.arena_bytes, r->plan.constant_bytes, r->plan.peak_snapshot_bytes, r->mem_compile, r->mem_run,
             (long long)r->plan.compiled_loops);
    item(s);
}

/* layer(h, w) = relu(h @ w); loss = sum(h_D^2); gradient w.r.t. every w_l */
static remat_fn *mlp_grad(const config *c, bool remat_layers)
{
    remat_fn *layer = remat_fn_new("layer"), *ck = NULL, *f = remat_fn_new("mlp_loss"), *g = NULL;
    remat_val h = remat_arg(layer, "h", REMAT_F32, 2, ((int64_t[]){c->B, c->W}));
    remat_val w = remat_arg(layer, "w", REMAT_F32, 2, ((int64_t[]){c->W, c->W}));
    remat_fn_output(layer, remat_relu(layer, remat_matmul(layer, h, w)));
    if (remat_layers)
        ck = remat_checkpoint(layer, remat_nothing_saveable);
    h = remat_arg(f, "x", REMAT_F32, 2, ((int64_t[]){c->B, c->W}));
    remat_val ws[64];
    int argnums[64];
    for (int l = 0; l < c->D; l++) {
        char nm[16];
        snprintf(nm, sizeof nm, "w%d", l);
        ws[l] = remat_arg(f, nm, REMAT_F32, 2, ((int64_t[]){c->W, c->W}));
        argnums[l] = l + 1;
    }
    for (int l = 0; l < c->D; l++)
        h = remat_call1(f, ck ? ck : layer, 2, ((remat_val[]){h, ws[l]}));
    remat_fn_output(f, remat_sum_all(f, remat_square(f, h)));
    if (remat_fn_status(f) != REMAT_OK || remat_grad(f, c->D, argnums, &g) != REMAT_OK)
        fprintf(stderr, "bench_cuda: mlp: %s\n", remat_last_error()), g = NULL;
    remat_fn_free(ck), remat_fn_free(layer), remat_fn_free(f);
    return g;
}

/* the PFR ensemble as bench_scan's (3, m) batch: value_and_grad of
 * -sum_j B_j(L) w.r.t. (k1, k2) */
static remat_fn *pfr_grad(int64_t m, int64_t steps, const char *sched)
{
    const double h = 10.0 / (double)steps;
    remat_scan_options opt = {0};
    if (remat_schedule_parse(sched, &opt.schedule) != REMAT_OK)
        return NULL;
    remat_fn *b = remat_fn_new("pfr_euler_step_3xB"), *f = remat_fn_new("pfr_euler_batch"), *g = NULL;
    remat_val y = remat_arg(b, "y", REMAT_F64, 2, (int64_t[]){3, m});
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 1, (int64_t[]){m}), k2 = remat_arg(b, "k2", REMAT_F64, 1, (int64_t[]){m});
    remat_val r1 = remat_mul(b, k1, remat_index(b, y, 0)), r2 = remat_mul(b, k2, remat_index(b, y, 1));
    const int64_t row[2] = {1, m};
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 2, row), remat_reshape(b, remat_sub(b, r1, r2), 2, row),
                          remat_reshape(b, r2, 2, row)};
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, remat_concatenate(b, 3, parts, 0), h)));
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 2, (int64_t[]){3, m});
    remat_val k[2] = {remat_arg(f, "k1", REMAT_F64, 1, (int64_t[]){m}), remat_arg(f, "k2", REMAT_F64, 1, (int64_t[]){m})};
    remat_val carry;
    remat_status st = remat_scan(f, b, steps, 1, &y0, 0, NULL, 2, k, &opt, &carry, NULL);
    if (st == REMAT_OK) {
        remat_fn_output(f, remat_neg(f, remat_sum_all(f, remat_index(f, carry, 1))));
        st = remat_fn_status(f);
    }
    if (st == REMAT_OK)
        st = remat_value_and_grad(f, 2, (const int[]){1, 2}, &g);
    if (st != REMAT_OK)
        fprintf(stderr, "bench_cuda: pfr %s: %s\n", sched, remat_last_error()), g = NULL;
    remat_fn_free(b), remat_fn_free(f);
    return g;
}

/* ---- the sections ---- */

static void bench_mlp(const config *c)
{
    cublasHandle_t h;
    CB(cublasCreate(&h));
    uint64_t seed = 42;
    const size_t act = (size_t)c->B * c->W, wsz = (size_t)c->W * c->W;
    mlp_floor fl = {.h = h, .D = c->D, .W = c->W, .B = c->B, .w = calloc((size_t)c->D, sizeof(float *))};
    for (int l = 0; l < c->D; l++)
        fl.w[l] = dev_f32(wsz, &seed, 1.7f / sqrtf((float)c->W)); /* activations stay O(1) under relu */
    fl.act = dev_f32(act * (size_t)(c->D + 1), &seed, 1.0f);
    fl.x = fl.act;
    fl.g = dev_f32(act, &seed, 1.0f), fl.gp = dev_f32(act, &seed, 1.0f), fl.dw = dev_f32(wsz, &seed, 1.0f);
    mlp_floor fl4 = fl;
    fl4.recompute = true;
    run_fn fns[4] = {run_floor, run_floor};
    void *ctx[4] = {&fl, &fl4};
    int n = 2;
    const char *names[4] = {"no_remat", "per_layer_remat"};
    remat_backend *be = remat_backend_cuda(0);
    rprog r[2] = {{0}};
    remat_tensor *in = calloc((size_t)c->D + 1, sizeof *in);
    in[0] = remat_tensor_f32(fl.x, 2, (int64_t[]){c->B, c->W});
    for (int l = 0; l < c->D; l++)
        in[l + 1] = remat_tensor_f32(fl.w[l], 2, (int64_t[]){c->W, c->W});
    for (int v = 0; be && v < 2; v++) {
        remat_fn *g = mlp_grad(c, v == 1);
        if (g && rprog_new(&r[v], g, be, c->D + 1, in) == 0)
            fns[n] = run_prog, ctx[n] = &r[v], n++;
        remat_fn_free(g);
    }
    if (!be)
        fprintf(stderr, "bench_cuda: mlp: %s\n", remat_last_error());
    double med[4];
    time_interleaved(n, fns, ctx, c->rounds, med);
    const double flops = 2.0 * c->B * (double)c->W * c->W;
    char s[1024];
    for (int v = 0; v < 2; v++) {
        const int gemms = (v ? 4 : 3) * c->D;
        const double remat_ms = n > 2 + v ? med[2 + v] : NAN;
        char rm[32], ra[32];
        snprintf(s, sizeof s,
                 "{\"problem\":\"mlp\", \"variant\":\"%s\", \"D\":%d, \"W\":%d, \"batch\":%d, \"dtype\":\"f32\", "
                 "\"cublas_floor_ms\":%.3f, \"floor_gemms\":%d, \"floor_tflops\":%.2f, \"remat_ms\":%s, "
                 "\"ratio_to_floor\":%s, \"target\":1.25, \"meets_target\":%s}",
                 names[v], c->D, c->W, c->B, med[v], gemms, gemms * flops / med[v] * 1e-9, jnum(rm, sizeof rm, remat_ms),
                 jnum(ra, sizeof ra, remat_ms / med[v]),
                 isnan(remat_ms) ? "null" : remat_ms / med[v] <= 1.25 ? "true" : "false");
        item(s);
    }
    for (int v = 0; v < 2; v++)
        if (r[v].prog) {
            print_memory(names[v], &r[v]);
            rprog_free(&r[v], be);
        }
    free(in);
    for (int l = 0; l < c->D; l++)
        cudaFree(fl.w[l]);
    free(fl.w);
    cudaFree(fl.act), cudaFree(fl.g), cudaFree(fl.gp), cudaFree(fl.dw);
    cublasDestroy(h);
}

typedef struct {
    pfr_cuda_hand *H;
    double *y0, *k1, *k2, *g1, *g2, *bl;
} hand_ctx;

static int run_hand(void *ctx)
{
    hand_ctx *c = ctx;
    return pfr_cuda_hand_run(c->H, c->y0, c->k1, c->k2, c->g1, c->g2, c->bl);
}

static double *dev_f64(const double *h, size_t n)
{
    double *d = NULL;
    CK(cudaMalloc((void **)&d, sizeof *d * n));
    if (h)
        CK(cudaMemcpy(d, h, sizeof *d * n, cudaMemcpyHostToDevice));
    return d;
}

static void bench_pfr(const config *c, double peak_bw)
{
    const int64_t m = c->lanes, steps = c->steps;
    double *y0 = calloc((size_t)(3 * m), sizeof *y0), *k1 = malloc(sizeof *k1 * (size_t)m),
           *k2 = malloc(sizeof *k2 * (size_t)m);
    for (int64_t j = 0; j < m; j++) { /* rates spread over a decade, inlet pure A */
        y0[j] = 1.0;
        k1[j] = 0.5 + 4.5 * (double)j / (double)m;
        k2[j] = 0.25 + 2.0 * (double)((j * 7919) % m) / (double)m;
    }
    hand_ctx hc = {.H = pfr_cuda_hand_new(m, steps, 10.0 / (double)steps), .y0 = dev_f64(y0, (size_t)(3 * m)),
                   .k1 = dev_f64(k1, (size_t)m), .k2 = dev_f64(k2, (size_t)m), .g1 = dev_f64(NULL, (size_t)m),
                   .g2 = dev_f64(NULL, (size_t)m), .bl = dev_f64(NULL, (size_t)m)};
    if (!hc.H)
        exit(1);
    double hand_med;
    run_fn hf = run_hand;
    void *hctx = &hc;
    time_interleaved(1, &hf, &hctx, c->rounds, &hand_med);
    const double lane_steps = (double)m * (double)steps, bytes = 32.0 * lane_steps + 6.0 * 8.0 * (double)m;
    char s[1024];
    snprintf(s, sizeof s,
             "{\"problem\":\"pfr-ensemble\", \"variant\":\"hand store-all adjoint\", \"lanes\":%lld, \"steps\":%lld, "
             "\"ms\":%.3f, \"lane_steps_per_s\":%.4g, \"bytes\":%.4g, \"achieved_gb_s\":%.1f, \"peak_gb_s\":%.1f, "
             "\"fraction_of_peak\":%.3f}",
             (long long)m, (long long)steps, hand_med, lane_steps / hand_med * 1e3, bytes,
             bytes / hand_med * 1e-6, peak_bw * 1e-9, bytes / hand_med * 1e3 / peak_bw);
    item(s);
    remat_backend *be = remat_backend_cuda(0);
    double *g_hand = malloc(sizeof *g_hand * (size_t)(2 * m)), *g_got = malloc(sizeof *g_got * (size_t)(2 * m));
    CK(cudaMemcpy(g_hand, hc.g1, sizeof *g_hand * (size_t)m, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(g_hand + m, hc.g2, sizeof *g_hand * (size_t)m, cudaMemcpyDeviceToHost));
    remat_tensor in[3] = {remat_tensor_f64(hc.y0, 2, (int64_t[]){3, m}), remat_tensor_f64(hc.k1, 1, (int64_t[]){m}),
                          remat_tensor_f64(hc.k2, 1, (int64_t[]){m})};
    static const char *const scheds[] = {"store-all", "per-step", "binomial:10", "online:10"};
    static const double targets[] = {1.3, 1.6, NAN, NAN};
    for (int v = 0; be && v < 4; v++) {
        remat_fn *g = pfr_grad(m, steps, scheds[v]);
        rprog r = {0};
        if (!g || rprog_new(&r, g, be, 3, in) != 0) {
            remat_fn_free(g);
            rprog_free(&r, be);
            continue;
        }
        remat_fn_free(g);
        run_fn fns[2] = {run_hand, run_prog};
        void *ctx[2] = {&hc, &r};
        double med[2];
        time_interleaved(2, fns, ctx, c->rounds, med);
        CK(cudaMemcpy(g_got, r.out[1].data, sizeof *g_got * (size_t)m, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(g_got + m, r.out[2].data, sizeof *g_got * (size_t)m, cudaMemcpyDeviceToHost));
        double err = 0;
        bool bitwise = true;
        for (int64_t j = 0; j < 2 * m; j++) {
            err = fmax(err, fabs(g_got[j] - g_hand[j]) / fmax(fabs(g_hand[j]), 1e-300));
            bitwise &= g_got[j] == g_hand[j];
        }
        const double ratio = med[1] / med[0];
        snprintf(s, sizeof s,
                 "{\"problem\":\"pfr-ensemble\", \"schedule\":\"%s\", \"lanes\":%lld, \"steps\":%lld, \"remat_ms\":%.3f, "
                 "\"hand_ms\":%.3f, \"ratio_to_hand\":%.3f, \"target\":%s, \"meets_target\":%s, \"lane_steps_per_s\":%.4g, "
                 "\"gradient_max_rel_err\":%.3g, \"gradient_bitwise_equal_hand\":%s, \"compiled_loops\":%lld}",
                 scheds[v], (long long)m, (long long)steps, med[1], med[0], ratio,
                 isnan(targets[v]) ? "null" : v == 0 ? "1.3" : "1.6",
                 isnan(targets[v]) ? "null" : ratio <= targets[v] ? "true" : "false", lane_steps / med[1] * 1e3, err,
                 bitwise ? "true" : "false", (long long)r.plan.compiled_loops);
        item(s);
        print_memory(scheds[v], &r);
        rprog_free(&r, be);
    }
    if (!be)
        fprintf(stderr, "bench_cuda: pfr: %s\n", remat_last_error());
    free(g_hand), free(g_got);
    pfr_cuda_hand_free(hc.H);
    cudaFree(hc.y0), cudaFree(hc.k1), cudaFree(hc.k2), cudaFree(hc.g1), cudaFree(hc.g2), cudaFree(hc.bl);
    free(y0), free(k1), free(k2);
}

int main(int argc, char **argv)
{
    config c = {.D = 16, .W = 4096, .B = 4096, .rounds = 5, .lanes = (int64_t)1 << 20, .steps = 1000};
    bool do_mlp = true, do_pfr = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke"))
            c = (config){.D = 2, .W = 64, .B = 32, .rounds = 2, .lanes = 4096, .steps = 50};
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            c.rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mlp-only"))
            do_pfr = false;
        else if (!strcmp(argv[i], "--pfr-only"))
            do_mlp = false;
        else
            return fprintf(stderr, "usage: %s [--smoke] [--rounds N] [--mlp-only | --pfr-only]\n", argv[0]), 2;
    }
    if (c.rounds < 1 || c.D > 64)
        return fprintf(stderr, "bench_cuda: --rounds must be >= 1\n"), 2;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("bench_cuda: SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 77;
    }
    struct cudaDeviceProp prop;
    int clock_khz = 0, bus_bits = 0;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0));
    CK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
    const double peak_bw = 2.0 * clock_khz * 1e3 * bus_bits / 8.0; /* DDR: two transfers a clock */
    printf("{\"benchmark\":\"bench_cuda\", \"device\":\"%s\", \"sm\":\"%d.%d\", \"memory_bytes\":%zu, "
           "\"peak_bandwidth_gb_s\":%.1f, \"rounds\":%d, \"results\":[",
           prop.name, prop.major, prop.minor, prop.totalGlobalMem, peak_bw * 1e-9,
           c.rounds);
    if (do_mlp)
        bench_mlp(&c);
    if (do_pfr)
        bench_pfr(&c, peak_bw);
    printf("\n]}\n");
    return 0;
}
