/*
 * test_cuda_lanes.c — lane programs as CUDA C++ (kernels/cuda/lanes_gen.c)
 * and as text (src/backend/lane_io.c): which kernel shape a program gets,
 * exact literals, state in registers, every op through NVRTC to PTX and an
 * sm_90 cubin, and the IEEE arithmetic the bits depend on (no contracted
 * FMA, round-to-nearest division and square root) visible in the PTX.
 * Runs without a GPU; the NVRTC cases skip, saying why, without NVRTC.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/lane_io.h"
#include "core/alloc.h"
#include "kernels/cuda/lanes.h"
#include "kernels/cuda/lanes_gen.h"
#include "kernels/cuda/nvrtc.h"
#include "remat/op.h"

#define LOAD(dt_, buf_, off_, ls_) {.kind = REMAT_LANE_LOAD, .dt = dt_, .a = -1, .b = -1, .c = -1, .buf = buf_, .off = off_, .lstride = ls_}
#define STORE(dt_, r_, buf_, off_, ls_) {.kind = REMAT_LANE_STORE, .dt = dt_, .a = r_, .b = -1, .c = -1, .buf = buf_, .off = off_, .lstride = ls_}
#define OP2(dt_, op_, a_, b_) {.kind = REMAT_LANE_OP, .dt = dt_, .op = op_, .a = a_, .b = b_, .c = -1, .buf = -1}
#define CONST(dt_, v_) {.kind = REMAT_LANE_CONST, .dt = dt_, .a = -1, .b = -1, .c = -1, .buf = -1, .imm = v_}

static const remat_lane_buf bufs3[3] = {{.dt = REMAT_F32, .state = 1}, {.dt = REMAT_F32}, {.dt = REMAT_F32}};

/* x (state, buffer 0) := x * k (buffer 1); y (buffer 2) := x */
static remat_lane_program scale(int64_t m, const remat_lane_ins *ins, int n)
{
    return (remat_lane_program){.m = m, .n_ins = n, .ins = ins, .n_bufs = 3, .bufs = bufs3};
}

static const remat_lane_ins scale_ins[] = {
    LOAD(REMAT_F32, 0, 0, 1), LOAD(REMAT_F32, 1, 0, 1), OP2(REMAT_F32, REMAT_OP_MUL, 0, 1),
    STORE(REMAT_F32, 2, 0, 0, 1), STORE(REMAT_F32, 2, 2, 0, 1),
};

static char *source(const remat_lane_program *p, remat_cuda_lanes_info *info)
{
    char *src = NULL;
    assert_ok(rmi_cuda_lanes_source(p, "k", &src, info));
    return src;
}

static void test_cuda_lanes_independent_lanes_one_thread_each(void **state)
{
    (void)state;
    remat_lane_program p = scale(64, scale_ins, 5);
    remat_cuda_lanes_info info;
    char *src = source(&p, &info);
    assert_false(info.serial);
    assert_int_equal(info.n_bufs, 3);
    assert_contains(src, "blockIdx.x * blockDim.x + threadIdx.x");
    /* the carry in a register for the whole call, written back once */
    assert_contains(src, "float k0 = ((float *)p0)[0LL + j * 1LL];");
    assert_contains(src, "((float *)p0)[0LL + j * 1LL] = k0;");
    assert_contains(src, "k0 = r2;");
    assert_contains(src, "((float *)p2)[0LL + j * 1LL] = r2;");
    rmi_free(src);
}

static void test_cuda_lanes_dependent_lanes_serial(void **state)
{
    (void)state;
    remat_cuda_lanes_info info;
    /* an element every lane stores (a y_t the same in every lane) */
    remat_lane_ins shared[5];
    memcpy(shared, scale_ins, sizeof shared);
    shared[4].lstride = 0;
    remat_lane_program p = scale(64, shared, 5);
    char *src = source(&p, &info);
    assert_true(info.serial);
    assert_contains(src, "for (j = lo; j < hi; j++)");
    rmi_free(src);
    /* lane j+1's carry is lane j's at the next offset: x[j] := x[j+1] * k */
    remat_lane_ins alias[5];
    memcpy(alias, scale_ins, sizeof alias);
    alias[0].off = 1;
    p = scale(64, alias, 5);
    src = source(&p, &info);
    assert_true(info.serial);
    rmi_free(src);
    /* rows of m lanes do not alias: offset 64 is the next row */
    alias[0].off = 64;
    p = scale(64, alias, 5);
    src = source(&p, &info);
    assert_false(info.serial);
    rmi_free(src);
    /* one lane: serial, state in registers as the CPU JIT keeps it */
    p = scale(1, scale_ins, 5);
    src = source(&p, &info);
    assert_true(info.serial);
    assert_contains(src, "float k0 = ((float *)p0)[0LL];");
    rmi_free(src);
}

/* sum over lanes of x * k into buffer 2's element 0, after the lanes */
static void test_cuda_lanes_sum_across_lanes_in_lane_order(void **state)
{
    (void)state;
    const remat_lane_ins ins[] = {
        {.kind = REMAT_LANE_SUM0, .dt = REMAT_F32, .a = -1, .b = -1, .c = -1, .buf = -1},
        LOAD(REMAT_F32, 0, 0, 1), LOAD(REMAT_F32, 1, 0, 1), OP2(REMAT_F32, REMAT_OP_MUL, 1, 2),
        {.kind = REMAT_LANE_ACC, .dt = REMAT_F32, .a = 0, .b = 3, .c = -1, .buf = -1},
        {.kind = REMAT_LANE_STORE, .dt = REMAT_F32, .post = 1, .a = 0, .b = -1, .c = -1, .buf = 2, .off = 0},
    };
    remat_lane_program p = scale(64, ins, 6);
    remat_cuda_lanes_info info;
    char *src = source(&p, &info);
    assert_true(info.serial);
    assert_contains(src, "r0 = __int_as_float(0x00000000);\n  for (j = lo; j < hi; j++)");
    assert_contains(src, "r0 = r0 + r3;\n  }\n    ((float *)p2)[0LL] = r0;");
    rmi_free(src);
}

static void test_cuda_lanes_literals_exact(void **state)
{
    (void)state;
    const remat_lane_ins ins[] = {
        CONST(REMAT_F32, -0.0), CONST(REMAT_F64, 0.1), CONST(REMAT_F32, 0.1), CONST(REMAT_F64, -INFINITY),
        OP2(REMAT_F32, REMAT_OP_ADD, 0, 2), STORE(REMAT_F32, 4, 2, 0, 1),
    };
    remat_lane_program p = scale(8, ins, 6);
    remat_cuda_lanes_info info;
    char *src = source(&p, &info);
    assert_contains(src, "r0 = __int_as_float(0x80000000);");
    assert_contains(src, "r1 = __longlong_as_double(0x3fb999999999999aLL);");
    assert_contains(src, "r2 = __int_as_float(0x3dcccccd);");
    assert_contains(src, "r3 = __longlong_as_double(0xfff0000000000000LL);");
    rmi_free(src);
}

static void test_cuda_lanes_no_cuda_form_unsupported(void **state)
{
    (void)state;
    remat_lane_ins ins[5];
    memcpy(ins, scale_ins, sizeof ins);
    ins[2].op = REMAT_OP_DOT_GENERAL;
    remat_lane_program p = scale(4, ins, 5);
    char *src = (char *)1;
    remat_cuda_lanes_info info;
    assert_int_equal(rmi_cuda_lanes_source(&p, "k", &src, &info), REMAT_ERR_UNSUPPORTED);
    assert_null(src);
    assert_contains(remat_last_error(), "CUDA form");
}

/* ---- text ---- */

static void test_cuda_lanes_text_round_trip(void **state)
{
    (void)state;
    const remat_lane_ins ins[] = {
        CONST(REMAT_F32, -0.0), CONST(REMAT_F64, 4.9e-324), CONST(REMAT_F64, 0.1), CONST(REMAT_F64, INFINITY),
        LOAD(REMAT_F64, 1, 7, 3), OP2(REMAT_F64, REMAT_OP_POW, 4, -1), STORE(REMAT_F64, 5, 0, 123456789012LL, 3),
    };
    const remat_lane_buf bufs[2] = {{.dt = REMAT_F64, .state = 1}, {.dt = REMAT_F64}};
    remat_lane_ins with_exp[7];
    memcpy(with_exp, ins, sizeof ins);
    with_exp[5].imm = -2.5;
    const remat_lane_program p = {.m = 1000, .n_ins = 7, .ins = with_exp, .n_bufs = 2, .bufs = bufs};
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    assert_ok(rmi_lane_program_write(f, &p));
    fclose(f);
    f = fmemopen(text, n, "r");
    remat_lane_program q;
    assert_ok(rmi_lane_program_read(f, &q));
    fclose(f);
    free(text);
    assert_int_equal(q.m, 1000);
    assert_int_equal(q.n_ins, 7);
    assert_int_equal(q.n_bufs, 2);
    assert_memory_equal(q.bufs, bufs, sizeof bufs);
    assert_memory_equal(q.ins, with_exp, sizeof with_exp); /* imm bit for bit, -0.0 and the denormal too */
    rmi_lane_program_release(&q);
}

static remat_status read_text(const char *text)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    remat_lane_program q;
    remat_status st = rmi_lane_program_read(f, &q);
    fclose(f);
    rmi_lane_program_release(&q);
    return st;
}

static void test_cuda_lanes_text_bad_input_named(void **state)
{
    (void)state;
    assert_int_equal(read_text("remat-lanes 2\nm 1 bufs 0 ins 0\n"), REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), "header");
    assert_int_equal(read_text("remat-lanes 1\nm 4 bufs 1 ins 1\nb 0 1\ni 0 0 0 0 -1 -1 -1 3 0 0 0x0p+0\n"),
                     REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), "line 4: buffer 3 (of 1)");
    /* an operand that is not an earlier register */
    assert_int_equal(read_text("remat-lanes 1\nm 4 bufs 1 ins 1\nb 0 1\ni 2 0 0 0 0 0 -1 -1 0 0 0x0p+0\n"),
                     REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), "line 4: an operand");
    assert_int_equal(read_text("remat-lanes 1\nm 4 bufs 1 ins 2\nb 0 1\ni 1 0 0 0 -1 -1 -1 -1 0 0 0x1p+0\n"),
                     REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), "line 5: expected 'i'");
}

/* x (state) := x * k while x * k > 0.1 (EXIT, backend/lane.h): the count of
 * steps run into buffer 2 (f64) where it stops, after the step's stores,
 * out of the step loop (the state written back after it); serial */
static const remat_lane_buf exit_bufs[3] = {{.dt = REMAT_F32, .state = 1}, {.dt = REMAT_F32}, {.dt = REMAT_F64}};
static const remat_lane_ins exit_ins[] = {
    LOAD(REMAT_F32, 0, 0, 0), LOAD(REMAT_F32, 1, 0, 0), OP2(REMAT_F32, REMAT_OP_MUL, 0, 1), CONST(REMAT_F32, 0.1),
    OP2(REMAT_F32, REMAT_OP_GT, 2, 3), STORE(REMAT_F32, 2, 0, 0, 0),
    {.kind = REMAT_LANE_EXIT, .dt = REMAT_F64, .a = 4, .b = -1, .c = -1, .buf = 2, .off = 0},
};

static void test_cuda_lanes_exit_serial(void **state)
{
    (void)state;
    remat_lane_program p = {.m = 1, .n_ins = 7, .ins = exit_ins, .n_bufs = 3, .bufs = exit_bufs};
    remat_cuda_lanes_info info;
    char *src = source(&p, &info);
    assert_true(info.serial);
    assert_contains(src, "k0 = r2;\n  }\n    if (r4 == __int_as_float(0x00000000)) {\n      ((double *)p2)[0LL] = (double)(s + 1);"
                         "\n      break;\n    }\n    p0 += a.st[0];");
    assert_contains(src, "  }\n  ((float *)p0)[0LL] = k0;");
    rmi_free(src);
    /* with lanes, only a register every lane shares (post) may end the loop */
    p.m = 64;
    assert_int_equal(rmi_cuda_lanes_source(&p, "k", &src, &info), REMAT_ERR_UNSUPPORTED);
    /* as text: an exit that is not last is refused */
    char text[512];
    snprintf(text, sizeof text, "remat-lanes 1\nm 1 bufs 1 ins 2\nb 1 0\ni 1 1 0 0 -1 -1 -1 -1 0 0 0x0p+0\n"
                                "i 6 1 0 0 0 -1 -1 0 0 0 0x0p+0\n");
    assert_int_equal(read_text(text), REMAT_OK);
    snprintf(text, sizeof text, "remat-lanes 1\nm 1 bufs 1 ins 3\nb 1 0\ni 1 1 0 0 -1 -1 -1 -1 0 0 0x0p+0\n"
                                "i 6 1 0 0 0 -1 -1 0 0 0 0x0p+0\ni 1 1 0 0 -1 -1 -1 -1 0 0 0x0p+0\n");
    assert_int_equal(read_text(text), REMAT_ERR_PARSE);
    assert_contains(remat_last_error(), "line 5: an exit that is not the last instruction");
}

/* ---- through NVRTC ---- */

static bool have_nvrtc(void)
{
    const char *why = NULL;
    if (rmi_nvrtc_available(&why))
        return true;
    print_message("SKIP: %s\n", why);
    return false;
}

/* every op of a lane program, f32 and f64, one thread per lane (m 32) or
 * serial (m 1) */
static remat_lane_program every_op(remat_dtype dt, int64_t m, remat_lane_ins *ins, int *n_out)
{
    static const remat_lane_buf bufs[2][2] = {{{.dt = REMAT_F32, .state = 1}, {.dt = REMAT_F64}},
                                              {{.dt = REMAT_F64, .state = 1}, {.dt = REMAT_F32}}};
    const remat_dtype other = dt == REMAT_F32 ? REMAT_F64 : REMAT_F32;
    int n = 0;
    ins[n++] = (remat_lane_ins)LOAD(dt, 0, 0, 1);
    ins[n++] = (remat_lane_ins)LOAD(dt, 0, 32, 1);
    const int x = 0, y = 1;
    for (int op = 0; op < REMAT_OP_COUNT; op++) {
        remat_lane_ins I = OP2(dt, op, x, y);
        switch ((remat_op)op) {
        case REMAT_OP_SELECT: I.c = x; break;
        case REMAT_OP_POW: I.imm = 1.5; break;
        case REMAT_OP_CONVERT: I.dt = other; break;
        case REMAT_OP_INTEGER_POW: {
            static const int ks[] = {0, 1, 2, 3, 4, -1, -2, 5, -7, 13};
            for (size_t q = 0; q < sizeof ks / sizeof *ks; q++) {
                I.imm = ks[q];
                ins[n++] = I;
            }
            continue;
        }
        default: break;
        }
        char *src = NULL;
        remat_cuda_lanes_info info;
        remat_lane_ins one[3] = {ins[0], ins[1], I};
        const remat_lane_program probe = {.m = m, .n_ins = 3, .ins = one, .n_bufs = 2, .bufs = bufs[dt]};
        if (rmi_cuda_lanes_source(&probe, "k", &src, &info) != REMAT_OK)
            continue; /* not an elementwise op */
        rmi_free(src);
        ins[n++] = I;
        if (op == REMAT_OP_CONVERT) { /* and back */
            remat_lane_ins back = OP2(dt, REMAT_OP_CONVERT, n - 1, -1);
            ins[n++] = back;
        }
    }
    const int last = n;
    for (int i = 2; i < last; i++)
        if (ins[i].dt == dt)
            ins[n++] = (remat_lane_ins)STORE(dt, i, 0, 0, 1);
        else
            ins[n++] = (remat_lane_ins)STORE(other, i, 1, 0, 1);
    *n_out = n;
    return (remat_lane_program){.m = m, .n_ins = n, .ins = ins, .n_bufs = 2, .bufs = bufs[dt]};
}

static void test_cuda_lanes_every_op_compiles_sm90(void **state)
{
    (void)state;
    if (!have_nvrtc())
        skip();
    for (int dt = 0; dt < 2; dt++)
        for (int64_t m = 1; m <= 32; m += 31) {
            remat_lane_ins ins[256];
            int n = 0;
            remat_lane_program p = every_op((remat_dtype)dt, m, ins, &n);
            assert_true(n > 40);
            remat_cuda_lanes_info info;
            char *src = source(&p, &info);
            assert_int_equal(info.serial, m == 1);
            char *img = NULL, *log = NULL;
            size_t size = 0;
            remat_status st = rmi_nvrtc_compile(src, "every_op", rmi_cuda_lanes_options, "compute_90",
                                                REMAT_NVRTC_PTX, &img, &size, &log);
            if (st != REMAT_OK)
                fail_msg("%s\n%s\n%s", remat_last_error(), log ? log : "", src);
            assert_contains(img, ".entry k(");
            rmi_free(img), rmi_free(log);
            st = rmi_nvrtc_compile(src, "every_op", rmi_cuda_lanes_options, "sm_90", REMAT_NVRTC_CUBIN, &img, &size,
                                   &log);
            if (st != REMAT_OK)
                fail_msg("%s\n%s", remat_last_error(), log ? log : "");
            assert_true(size > 64);
            assert_memory_equal(img, "\177ELF", 4);
            rmi_free(img), rmi_free(log), rmi_free(src);
        }
}

/* r = x * k + x, x / k, sqrt(x): with the options, a separate mul and add
 * (no fma.rn: --fmad=false), div.rn and sqrt.rn; compiled without
 * --fmad=false the same source contracts, which is what the options are for */
static void test_cuda_lanes_ieee_arithmetic_in_ptx(void **state)
{
    (void)state;
    if (!have_nvrtc())
        skip();
    const remat_lane_ins ins[] = {
        LOAD(REMAT_F32, 0, 0, 1), LOAD(REMAT_F32, 1, 0, 1), OP2(REMAT_F32, REMAT_OP_MUL, 0, 1),
        OP2(REMAT_F32, REMAT_OP_ADD, 2, 0), OP2(REMAT_F32, REMAT_OP_DIV, 3, 1),
        {.kind = REMAT_LANE_OP, .dt = REMAT_F32, .op = REMAT_OP_SQRT, .a = 4, .b = -1, .c = -1, .buf = -1},
        STORE(REMAT_F32, 5, 0, 0, 1), STORE(REMAT_F32, 3, 2, 0, 1),
    };
    remat_lane_program p = scale(1024, ins, 8);
    remat_cuda_lanes_info info;
    char *src = source(&p, &info), *ptx = NULL, *log = NULL;
    size_t n = 0;
    assert_ok(rmi_nvrtc_compile(src, "ieee", rmi_cuda_lanes_options, "compute_90", REMAT_NVRTC_PTX, &ptx, &n, &log));
    assert_non_null(strstr(ptx, "mul.rn.f32"));
    assert_non_null(strstr(ptx, "add.rn.f32"));
    assert_null(strstr(ptx, "fma.rn.f32"));
    assert_non_null(strstr(ptx, "div.rn.f32"));
    assert_non_null(strstr(ptx, "sqrt.rn.f32"));
    rmi_free(ptx), rmi_free(log);
    const char *const contracting[] = {"-std=c++17", NULL};
    assert_ok(rmi_nvrtc_compile(src, "ieee", contracting, "compute_90", REMAT_NVRTC_PTX, &ptx, &n, &log));
    assert_non_null(strstr(ptx, "fma.rn.f32"));
    rmi_free(ptx), rmi_free(log), rmi_free(src);
}

static void test_cuda_lanes_nvrtc_error_has_log(void **state)
{
    (void)state;
    if (!have_nvrtc())
        skip();
    char *img = (char *)1, *log = NULL;
    size_t n = 1;
    assert_int_equal(rmi_nvrtc_compile("__global__ void k() { undeclared = 1; }", "bad.cu", rmi_cuda_lanes_options,
                                       "compute_90", REMAT_NVRTC_PTX, &img, &n, &log),
                     REMAT_ERR_BACKEND);
    assert_null(img);
    assert_contains(remat_last_error(), "bad.cu");
    assert_contains(log, "undeclared");
    rmi_free(log);
}

/* NVRTC's architecture names from a device's compute capability (the
 * device the backend names: kernels/cuda/lanes.c asks it), no GPU needed */
static void test_cuda_lanes_arch_names(void **state)
{
    (void)state;
    char sm[16], compute[16];
    static const struct {
        int major, minor;
        const char *sm, *compute;
    } cases[] = {{7, 5, "sm_75", "compute_75"}, {8, 6, "sm_86", "compute_86"}, {9, 0, "sm_90", "compute_90"},
                 {10, 0, "sm_100", "compute_100"}, {12, 1, "sm_121", "compute_121"}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        assert_true(rmi_cuda_lanes_arch(cases[k].major, cases[k].minor, sm, compute, sizeof sm));
        assert_string_equal(sm, cases[k].sm);
        assert_string_equal(compute, cases[k].compute);
    }
    assert_false(rmi_cuda_lanes_arch(0, 0, sm, compute, sizeof sm));  /* no device answered */
    assert_false(rmi_cuda_lanes_arch(9, 10, sm, compute, sizeof sm)); /* "sm_910" would name 91.0 */
    assert_false(rmi_cuda_lanes_arch(9, -1, sm, compute, sizeof sm));
    assert_false(rmi_cuda_lanes_arch(10, 0, sm, compute, 10)); /* "compute_100" does not fit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_lanes_independent_lanes_one_thread_each),
        cmocka_unit_test(test_cuda_lanes_dependent_lanes_serial),
        cmocka_unit_test(test_cuda_lanes_sum_across_lanes_in_lane_order),
        cmocka_unit_test(test_cuda_lanes_literals_exact),
        cmocka_unit_test(test_cuda_lanes_no_cuda_form_unsupported),
        cmocka_unit_test(test_cuda_lanes_text_round_trip),
        cmocka_unit_test(test_cuda_lanes_arch_names),
        cmocka_unit_test(test_cuda_lanes_text_bad_input_named),
        cmocka_unit_test(test_cuda_lanes_exit_serial),
        cmocka_unit_test(test_cuda_lanes_every_op_compiles_sm90),
        cmocka_unit_test(test_cuda_lanes_ieee_arithmetic_in_ptx),
        cmocka_unit_test(test_cuda_lanes_nvrtc_error_has_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
