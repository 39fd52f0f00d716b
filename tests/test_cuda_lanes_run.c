/*
 * test_cuda_lanes_run.c — lane kernels run on the GPU (kernels/cuda/lanes.c)
 * against a CPU reference: a scalar interpreter of lane programs here,
 * written from lane.h and the CPU kernels' rules (the llm.c dev/cuda
 * pattern: kernel, reference, checker). + - * / sqrt, compares, max/min,
 * relu, select, powers and converts must match bit for bit; exp, log, sin,
 * cos, tanh, erf and pow within CUDA's documented bound (CUDA C Programming
 * Guide, "Mathematical functions", max ulp error) plus 2 for glibc's own,
 * the bounds kernels/README.md states for the elementwise kernels:
 *
 *              f32 (CUDA)  f64 (CUDA)   checked at
 *   exp        2           1            4 / 3 ulp
 *   log        1           1            3 / 3
 *   sin, cos   2           2            4 / 4
 *   tanh       2           2            4 / 4
 *   erf        2           2            4 / 4
 *   pow        4           2            6 / 4
 *
 * Exits 77 (skip), saying why, without a CUDA device.
 */
#include "test_util.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "kernels/cuda/lanes.h"
#include "kernels/cuda/lanes_gen.h"
#include "remat/op.h"

/* ---- the reference ---- */

static double ref_op(const remat_lane_ins *I, double x, double y, double z, bool f32)
{
#define F(e32, e64) (f32 ? (double)(e32) : (e64))
    const float xf = (float)x, yf = (float)y;
    switch ((remat_op)I->op) {
    case REMAT_OP_ADD: return F(xf + yf, x + y);
    case REMAT_OP_SUB: return F(xf - yf, x - y);
    case REMAT_OP_MUL: return F(xf * yf, x * y);
    case REMAT_OP_DIV: return F(xf / yf, x / y);
    case REMAT_OP_SQUARE: return F(xf * xf, x * x);
    case REMAT_OP_NEG: return -x;
    case REMAT_OP_EXP: return F(expf(xf), exp(x));
    case REMAT_OP_LOG: return F(logf(xf), log(x));
    case REMAT_OP_SIN: return F(sinf(xf), sin(x));
    case REMAT_OP_COS: return F(cosf(xf), cos(x));
    case REMAT_OP_TANH: return F(tanhf(xf), tanh(x));
    case REMAT_OP_SQRT: return F(sqrtf(xf), sqrt(x));
    case REMAT_OP_ERF: return F(erff(xf), erf(x));
    case REMAT_OP_LOG1P: return F(log1pf(xf), log1p(x));
    case REMAT_OP_EXPM1: return F(expm1f(xf), expm1(x));
    case REMAT_OP_LOGISTIC: return F(1.0f / (1.0f + expf(-xf)), 1.0 / (1.0 + exp(-x)));
    case REMAT_OP_POW: return F(powf(xf, (float)I->imm), pow(x, I->imm));
    case REMAT_OP_GT: return x > y;
    case REMAT_OP_GE: return x >= y;
    case REMAT_OP_LT: return x < y;
    case REMAT_OP_LE: return x <= y;
    case REMAT_OP_EQ: return x == y;
    case REMAT_OP_NE: return x != y;
    case REMAT_OP_MAX: return (x > y || x != x) ? x : y;
    case REMAT_OP_MIN: return (x < y || x != x) ? x : y;
    case REMAT_OP_RELU: return x <= 0 ? 0.0 : x;
    case REMAT_OP_SELECT: return x != 0 ? y : z;
    case REMAT_OP_CONVERT: return f32 ? (double)(float)x : x;
    case REMAT_OP_INTEGER_POW: {
        const int k = (int)I->imm;
        if (f32) {
            float r = 1.0f, xp = xf;
            switch (k) {
            case 0: return 1.0; case 1: return xf; case 2: return xf * xf; case 3: return xf * (xf * xf);
            case 4: return (xf * xf) * (xf * xf); case -1: return 1.0f / xf; case -2: return 1.0f / (xf * xf);
            default: break;
            }
            bool acc = false;
            for (unsigned e = k < 0 ? 0u - (unsigned)k : (unsigned)k; e; e >>= 1) {
                if (e & 1u)
                    r = acc ? r * xp : xp, acc = true;
                if (e >> 1)
                    xp = xp * xp;
            }
            return k < 0 ? 1.0f / r : r;
        }
        double r = 1.0, xp = x;
        switch (k) {
        case 0: return 1.0; case 1: return x; case 2: return x * x; case 3: return x * (x * x);
        case 4: return (x * x) * (x * x); case -1: return 1.0 / x; case -2: return 1.0 / (x * x);
        default: break;
        }
        bool acc = false;
        for (unsigned e = k < 0 ? 0u - (unsigned)k : (unsigned)k; e; e >>= 1) {
            if (e & 1u)
                r = acc ? r * xp : xp, acc = true;
            if (e >> 1)
                xp = xp * xp;
        }
        return k < 0 ? 1.0 / r : r;
    }
    default: fail_msg("reference: op %d", I->op);
    }
#undef F
    return 0;
}

static double ld(const remat_lane_program *p, char *const *b, const remat_lane_ins *I, int64_t j)
{
    const int64_t e = I->off + j * I->lstride;
    return p->bufs[I->buf].dt == REMAT_F64 ? ((double *)b[I->buf])[e] : ((float *)b[I->buf])[e];
}

static void st(const remat_lane_program *p, char *const *b, const remat_lane_ins *I, int64_t j, double v)
{
    const int64_t e = I->off + j * I->lstride;
    if (p->bufs[I->buf].dt == REMAT_F64)
        ((double *)b[I->buf])[e] = v;
    else
        ((float *)b[I->buf])[e] = (float)v;
}

/* registers held as double; f32 results are rounded to float by ref_op */
static void reference(const remat_lane_program *p, char **bufs, const int64_t *strides, int64_t count)
{
    double *r = calloc((size_t)p->n_ins + 1, sizeof *r);
    char **b = malloc(sizeof *b * (size_t)(p->n_bufs + 1));
    memcpy(b, bufs, sizeof *b * (size_t)p->n_bufs);
    for (int64_t s = 0; s < count; s++) {
        for (int i = 0; i < p->n_ins; i++)
            if (p->ins[i].kind == REMAT_LANE_SUM0)
                r[i] = 0.0;
        for (int phase = 0; phase < 2; phase++)
            for (int64_t j = 0; j < (phase ? 1 : p->m); j++)
                for (int i = 0; i < p->n_ins; i++) {
                    const remat_lane_ins *I = &p->ins[i];
                    if (I->kind == REMAT_LANE_SUM0 || (I->post != 0) != (phase == 1))
                        continue;
                    const bool f32 = I->dt == REMAT_F32;
                    switch (I->kind) {
                    case REMAT_LANE_LOAD: r[i] = ld(p, b, I, j); break;
                    case REMAT_LANE_CONST: r[i] = f32 ? (double)(float)I->imm : I->imm; break;
                    case REMAT_LANE_STORE: st(p, b, I, j, r[I->a]); break;
                    case REMAT_LANE_ACC: r[I->a] = f32 ? (double)((float)r[I->a] + (float)r[I->b]) : r[I->a] + r[I->b]; break;
                    case REMAT_LANE_OP:
                        r[i] = ref_op(I, r[I->a], I->b >= 0 ? r[I->b] : 0, I->c >= 0 ? r[I->c] : 0, f32);
                        break;
                    default: fail_msg("reference: kind %d", I->kind);
                    }
                }
        for (int q = 0; q < p->n_bufs; q++)
            b[q] += strides[q];
    }
    free(r), free(b);
}

/* ---- the checker ---- */

static int64_t ulps(double got, double want, bool f32)
{
    if (isnan(got) && isnan(want))
        return 0;
    if (isnan(got) || isnan(want))
        return INT64_MAX;
    if (f32) {
        float g = (float)got, w = (float)want;
        int32_t a, c;
        memcpy(&a, &g, 4), memcpy(&c, &w, 4);
        a = a < 0 ? INT32_MIN - a : a, c = c < 0 ? INT32_MIN - c : c;
        return llabs((long long)a - c);
    }
    int64_t a, c;
    memcpy(&a, &got, 8), memcpy(&c, &want, 8);
    a = a < 0 ? INT64_MIN - a : a, c = c < 0 ? INT64_MIN - c : c;
    return (int64_t)llabs(a - c);
}

static int64_t bound(remat_op op, bool f32)
{
    switch (op) {
    case REMAT_OP_EXP: case REMAT_OP_LOGISTIC: return f32 ? 4 : 3;
    case REMAT_OP_LOG1P: case REMAT_OP_EXPM1: return 3;
    case REMAT_OP_LOG: return 3;
    case REMAT_OP_POW: return f32 ? 6 : 4;
    case REMAT_OP_SIN: case REMAT_OP_COS: case REMAT_OP_TANH: case REMAT_OP_ERF: return 4;
    default: return 0; /* bit for bit */
    }
}

static void *dev(size_t bytes, const void *host)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes) != cudaSuccess)
        fail_msg("cudaMalloc %zu", bytes);
    if (host && cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        fail_msg("cudaMemcpy to the device");
    return d;
}

static void down(void *host, const void *d, size_t bytes)
{
    if (cudaMemcpy(host, d, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        fail_msg("cudaMemcpy from the device");
}

/* ---- the cases ---- */

/* Runs p for count steps on the GPU (compile_lanes, the trampoline's
 * launch) and in the reference, from the same host buffers, and compares
 * every buffer element: bit for bit, or within bound(op_of[element]). */
static void run_and_check(const remat_lane_program *p, char **host, const size_t *bytes, const int64_t *strides,
                          int64_t count, const remat_op *op_of_elem0 /* per element of buffer 1, or NULL */)
{
    remat_lane_fn fn = NULL;
    assert_ok(rmi_cuda_compile_lanes(remat_backend_cuda(0), 1, &p, &fn, NULL));
    char *dbuf[8], *got[8];
    for (int q = 0; q < p->n_bufs; q++)
        dbuf[q] = dev(bytes[q], host[q]);
    fn(dbuf, strides, count, p->m);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_ok(rmi_cuda_lanes_check());
    reference(p, host, strides, count);
    for (int q = 0; q < p->n_bufs; q++) {
        got[q] = malloc(bytes[q]);
        down(got[q], dbuf[q], bytes[q]);
        cudaFree(dbuf[q]);
        const bool f32 = p->bufs[q].dt == REMAT_F32;
        const size_t n = bytes[q] / (f32 ? 4 : 8);
        for (size_t e = 0; e < n; e++) {
            const double g = f32 ? ((float *)got[q])[e] : ((double *)got[q])[e];
            const double w = f32 ? ((float *)host[q])[e] : ((double *)host[q])[e];
            const remat_op op = q == 1 && op_of_elem0 ? op_of_elem0[e] : REMAT_OP_ADD;
            if (ulps(g, w, f32) > bound(op, f32))
                fail_msg("buffer %d element %zu (%s): GPU %.17g, CPU %.17g (%lld ulp, bound %lld)", q, e,
                         remat_op_name(op), g, w, (long long)ulps(g, w, f32), (long long)bound(op, f32));
        }
        free(got[q]);
    }
}

static double input(int64_t j, uint64_t *s)
{
    static const double special[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e-40, -2.5, 1.0, 0.5, 3.0};
    if (j < 10)
        return special[j];
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return ((double)(*s >> 11) / 9007199254740992.0) * 6.0 - 3.0;
}

static void every_op_run(remat_dtype dt, int64_t m)
{
    const remat_dtype other = dt == REMAT_F32 ? REMAT_F64 : REMAT_F32;
    const size_t es = dt == REMAT_F32 ? 4 : 8;
    remat_lane_ins ins[128];
    remat_op op_of[64];
    int n = 0, n_out = 0;
    ins[n++] = (remat_lane_ins){.kind = REMAT_LANE_LOAD, .dt = dt, .a = -1, .b = -1, .c = -1, .buf = 0, .lstride = 1};
    ins[n++] = (remat_lane_ins){.kind = REMAT_LANE_LOAD, .dt = dt, .a = -1, .b = -1, .c = -1, .buf = 0, .off = m, .lstride = 1};
    int stores[64], ns = 0;
    for (int op = 0; op < REMAT_OP_COUNT; op++) {
        static const int ks[] = {0, 1, 2, 3, 4, -1, -2, 5, -7, 13};
        const int reps = op == REMAT_OP_INTEGER_POW ? 10 : 1;
        for (int r = 0; r < reps; r++) {
            remat_lane_ins I = {.kind = REMAT_LANE_OP, .dt = dt, .op = (uint16_t)op, .a = 0, .b = 1, .c = -1, .buf = -1};
            if (op == REMAT_OP_SELECT)
                I.c = 0;
            if (op == REMAT_OP_POW)
                I.imm = 1.5;
            if (op == REMAT_OP_INTEGER_POW)
                I.imm = ks[r];
            if (op == REMAT_OP_CONVERT) { /* to the other dtype and back */
                I.dt = other;
                ins[n++] = I;
                I = (remat_lane_ins){.kind = REMAT_LANE_OP, .dt = dt, .op = REMAT_OP_CONVERT, .a = n - 1, .b = -1, .c = -1, .buf = -1};
            }
            /* only the elementwise ops have a lane form: ask the generator */
            remat_lane_ins probe[3] = {ins[0], ins[1], I};
            probe[2].a = 0, probe[2].b = I.b >= 0 ? 1 : -1;
            if (op == REMAT_OP_CONVERT)
                probe[2].op = REMAT_OP_NEG;
            const remat_lane_buf pb[1] = {{.dt = dt}};
            const remat_lane_program pp = {.m = m, .n_ins = 3, .ins = probe, .n_bufs = 1, .bufs = pb};
            char *src = NULL;
            remat_cuda_lanes_info info;
            if (rmi_cuda_lanes_source(&pp, "k", &src, &info) != REMAT_OK)
                continue;
            rmi_free(src);
            stores[ns] = n, op_of[ns] = (remat_op)op, ns++;
            ins[n++] = I;
        }
    }
    for (int k = 0; k < ns; k++, n_out++)
        ins[n++] = (remat_lane_ins){.kind = REMAT_LANE_STORE, .dt = dt, .a = stores[k], .b = -1, .c = -1, .buf = 1,
                                    .off = (int64_t)k * m, .lstride = 1};
    const remat_lane_buf bufs[2] = {{.dt = dt}, {.dt = dt}};
    const remat_lane_program p = {.m = m, .n_ins = n, .ins = ins, .n_bufs = 2, .bufs = bufs};
    const int64_t count = 3;
    const size_t bytes[2] = {(size_t)(count * 2 * m) * es, (size_t)(count * n_out * m) * es};
    const int64_t strides[2] = {2 * m * (int64_t)es, (int64_t)n_out * m * (int64_t)es};
    char *host[2] = {malloc(bytes[0]), calloc(1, bytes[1])};
    uint64_t seed = 42;
    for (int64_t e = 0; e < count * 2 * m; e++) {
        const double v = input(e / (2 * m) * 7 + e % (2 * m) % m + (e % (2 * m) >= m ? 3 : 0), &seed);
        if (dt == REMAT_F32)
            ((float *)host[0])[e] = (float)v;
        else
            ((double *)host[0])[e] = v;
    }
    remat_op *op_elem = malloc(sizeof *op_elem * (size_t)(count * n_out * m));
    for (int64_t e = 0; e < count * n_out * m; e++)
        op_elem[e] = op_of[e % (n_out * m) / m];
    run_and_check(&p, host, bytes, strides, count, op_elem);
    free(op_elem), free(host[0]), free(host[1]);
}

static void test_cuda_lanes_run_every_op(void **state)
{
    (void)state;
    for (int dt = 0; dt < 2; dt++) {
        every_op_run((remat_dtype)dt, 1000); /* one thread per lane, 4 blocks */
        every_op_run((remat_dtype)dt, 1);    /* serial */
    }
}

/* x := x * k for 1000 steps with the carry in a register; y_t := x */
static void test_cuda_lanes_run_carry_steps(void **state)
{
    (void)state;
    const int64_t m = 4096, count = 1000;
    const remat_lane_ins ins[] = {
        {.kind = REMAT_LANE_LOAD, .dt = REMAT_F32, .a = -1, .b = -1, .c = -1, .buf = 0, .lstride = 1},
        {.kind = REMAT_LANE_LOAD, .dt = REMAT_F32, .a = -1, .b = -1, .c = -1, .buf = 1, .lstride = 1},
        {.kind = REMAT_LANE_OP, .dt = REMAT_F32, .op = REMAT_OP_MUL, .a = 0, .b = 1, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_OP, .dt = REMAT_F32, .op = REMAT_OP_ADD, .a = 2, .b = 1, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_STORE, .dt = REMAT_F32, .a = 3, .b = -1, .c = -1, .buf = 0, .lstride = 1},
        {.kind = REMAT_LANE_STORE, .dt = REMAT_F32, .a = 2, .b = -1, .c = -1, .buf = 2, .lstride = 1},
    };
    const remat_lane_buf bufs[3] = {{.dt = REMAT_F32, .state = 1}, {.dt = REMAT_F32}, {.dt = REMAT_F32}};
    const remat_lane_program p = {.m = m, .n_ins = 6, .ins = ins, .n_bufs = 3, .bufs = bufs};
    const size_t bytes[3] = {(size_t)m * 4, (size_t)m * 4, (size_t)(m * count) * 4};
    const int64_t strides[3] = {0, 0, m * 4};
    char *host[3] = {malloc(bytes[0]), malloc(bytes[1]), calloc(1, bytes[2])};
    uint64_t seed = 7;
    for (int64_t j = 0; j < m; j++) {
        ((float *)host[0])[j] = (float)input(j + 10, &seed);
        ((float *)host[1])[j] = 0.999f + (float)j * 1e-7f;
    }
    run_and_check(&p, host, bytes, strides, count, NULL);
    free(host[0]), free(host[1]), free(host[2]);
}

/* a sum across 300 lanes each step, in lane order: one serial thread */
static void test_cuda_lanes_run_sum_across_lanes(void **state)
{
    (void)state;
    const int64_t m = 300, count = 5;
    const remat_lane_ins ins[] = {
        {.kind = REMAT_LANE_SUM0, .dt = REMAT_F32, .a = -1, .b = -1, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_LOAD, .dt = REMAT_F32, .a = -1, .b = -1, .c = -1, .buf = 0, .lstride = 1},
        {.kind = REMAT_LANE_LOAD, .dt = REMAT_F32, .a = -1, .b = -1, .c = -1, .buf = 1, .lstride = 1},
        {.kind = REMAT_LANE_OP, .dt = REMAT_F32, .op = REMAT_OP_MUL, .a = 1, .b = 2, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_ACC, .dt = REMAT_F32, .a = 0, .b = 3, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_STORE, .dt = REMAT_F32, .post = 1, .a = 0, .b = -1, .c = -1, .buf = 2},
    };
    const remat_lane_buf bufs[3] = {{.dt = REMAT_F32}, {.dt = REMAT_F32}, {.dt = REMAT_F32}};
    const remat_lane_program p = {.m = m, .n_ins = 6, .ins = ins, .n_bufs = 3, .bufs = bufs};
    const size_t bytes[3] = {(size_t)(m * count) * 4, (size_t)m * 4, (size_t)count * 4};
    const int64_t strides[3] = {m * 4, 0, 4};
    char *host[3] = {malloc(bytes[0]), malloc(bytes[1]), calloc(1, bytes[2])};
    uint64_t seed = 9;
    for (int64_t e = 0; e < m * count; e++)
        ((float *)host[0])[e] = (float)input(e % m + 10, &seed);
    for (int64_t j = 0; j < m; j++)
        ((float *)host[1])[j] = (float)input(j + 10, &seed);
    run_and_check(&p, host, bytes, strides, count, NULL);
    free(host[0]), free(host[1]), free(host[2]);
}

/* identical programs share a kernel (one trampoline), others do not */
static void test_cuda_lanes_run_kernels_shared(void **state)
{
    (void)state;
    const remat_lane_ins ins[] = {
        {.kind = REMAT_LANE_LOAD, .dt = REMAT_F64, .a = -1, .b = -1, .c = -1, .buf = 0, .lstride = 1},
        {.kind = REMAT_LANE_OP, .dt = REMAT_F64, .op = REMAT_OP_NEG, .a = 0, .b = -1, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_STORE, .dt = REMAT_F64, .a = 1, .b = -1, .c = -1, .buf = 0, .lstride = 1},
    };
    const remat_lane_buf bufs[1] = {{.dt = REMAT_F64, .state = 1}};
    const remat_lane_program a = {.m = 77, .n_ins = 3, .ins = ins, .n_bufs = 1, .bufs = bufs};
    remat_lane_program b = a;
    b.m = 78;
    const remat_lane_program *ps[3] = {&a, &a, &b};
    remat_lane_fn fn[3];
    const int before = rmi_cuda_lanes_count();
    assert_ok(rmi_cuda_compile_lanes(remat_backend_cuda(0), 3, ps, fn, NULL));
    assert_true(fn[0] == fn[1]);
    assert_true(fn[0] != fn[2]);
    assert_int_equal(rmi_cuda_lanes_count(), before + 2);
}

int main(void)
{
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount: 0");
        return 77;
    }
    if (!rmi_cuda_can_compile_lanes()) {
        printf("FAIL: a CUDA device but no lane compiler (NVRTC missing)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_lanes_run_every_op),
        cmocka_unit_test(test_cuda_lanes_run_carry_steps),
        cmocka_unit_test(test_cuda_lanes_run_sum_across_lanes),
        cmocka_unit_test(test_cuda_lanes_run_kernels_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
