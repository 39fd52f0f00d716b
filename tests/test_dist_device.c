/*
 * test_dist_device.c — remat/dist_device.h: what any build says (a backend
 * that is not CUDA, a build without CUDA or NCCL), that the NCCL table
 * resolves against the installed libnccl (no GPU needed), and, with a CUDA
 * device, that a group of one rank sums device vectors to remat_dist_sum's
 * bits (a skip with the reason when there is no device).
 */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

#if HAVE_NCCL
#include "kernels/cuda/nccl_lib.h"
#endif

static void test_dist_device_errors(void **state)
{
    (void)state;
    remat_dist_device *g = (remat_dist_device *)&g;
    remat_status st = remat_dist_device_new(NULL, remat_backend_cpu(), &g);
    assert_null(g);
    if (HAVE_NCCL) {
        assert_int_equal(st, REMAT_ERR_ARG);
        assert_contains(remat_last_error(), "backend cpu is not CUDA");
        assert_int_equal(remat_dist_device_new(NULL, NULL, NULL), REMAT_ERR_NULL);
        int owner[2] = {0, 0};
        double sum[1];
        assert_int_equal(remat_dist_device_sum(NULL, 2, owner, 1, NULL, sum), REMAT_ERR_NULL);
    } else {
        assert_int_equal(st, REMAT_ERR_UNSUPPORTED);
        assert_contains(remat_last_error(), "remat was built without");
    }
    remat_dist_device_free(NULL);
}

/* every member of the table found in the library (or the reason it is not there) */
static void test_dist_device_nccl_table(void **state)
{
    (void)state;
#if HAVE_NCCL
    char why[512] = "";
    if (!rmi_nccl_open(why, sizeof why)) {
        assert_contains(why, "cannot load NCCL (libnccl.so.2)");
        skip();
    }
    assert_non_null(rmi_nccl.broadcast);
    const char *words = rmi_nccl.error_string(ncclInvalidArgument);
    assert_non_null(words);
    assert_true(words[0] != '\0');
#else
    skip();
#endif
}

/* 5 items of 1000 doubles of mixed magnitudes: the device's sum = the host's, bit for bit */
static void test_dist_device_sum_bits(void **state)
{
    (void)state;
    remat_backend *be = remat_backend_cuda(0);
    if (!be) {
        printf("skipped: %s\n", remat_last_error());
        skip();
    }
    enum { N = 5, LEN = 1000 };
    int owner[N] = {0};
    double *v = malloc(sizeof *v * N * LEN), ref[LEN], got[LEN];
    assert_non_null(v);
    for (int i = 0; i < N * LEN; i++)
        v[i] = urand(-1, 1) * pow(10.0, urand(-8, 8));
    assert_ok(remat_dist_sum(NULL, N, owner, LEN, v, ref));
    remat_dist_device *g;
    assert_ok(remat_dist_device_new(NULL, be, &g));
    double *dv = remat_backend_alloc(be, sizeof *v * N * LEN), *ds = remat_backend_alloc(be, sizeof ref);
    assert_non_null(dv);
    assert_non_null(ds);
    assert_ok(remat_backend_upload(be, dv, v, sizeof *v * N * LEN));
    assert_ok(remat_dist_device_sum(g, N, owner, LEN, dv, ds));
    assert_ok(remat_backend_download(be, got, ds, sizeof got));
    assert_memory_equal(ref, got, sizeof ref); /* contract 4 (device adds in item order too) */
    owner[1] = 1; /* not a rank of a group of one */
    assert_int_equal(remat_dist_device_sum(g, N, owner, LEN, dv, ds), REMAT_ERR_ARG);
    remat_backend_free(be, dv);
    remat_backend_free(be, ds);
    remat_dist_device_free(g);
    free(v);
}

int main(void)
{
    rng_seed(0x646973746465766eull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_device_errors),
        cmocka_unit_test(test_dist_device_nccl_table),
        cmocka_unit_test(test_dist_device_sum_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
