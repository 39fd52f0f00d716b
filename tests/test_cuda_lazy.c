/*
 * test_cuda_lazy.c — no CUDA shared library is loaded at process start
 * (issue 11: relocating cudart, cuBLAS and cublasLt cost every start of the
 * tool ~75 ms of CPU): the runtime is static, cuBLAS is opened by
 * remat_backend_cuda() (kernels/cuda/cublas_lib.h), NVRTC at the first lane
 * compilation. Read from the process's own mappings; no device needed.
 */
#include <stdio.h>
#include <string.h>

#include "kernels/cuda/cublas_lib.h"
#include "test_util.h"

/* whether a mapped file of this process has name in its path */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

/* Runs first: nothing has asked for CUDA yet. */
static void test_cuda_lazy_nothing_of_cuda_is_loaded_at_start(void **state)
{
    (void)state;
    assert_false(mapped("libcudart"));
    assert_false(mapped("libcublas")); /* libcublas.so and libcublasLt.so */
    assert_false(mapped("libnvrtc"));
    assert_false(mapped("libcuda.so"));
}

/* Asking for the backend loads cuBLAS where there is a device, and only
 * there (a machine without one is told so without loading it). */
static void test_cuda_lazy_backend_loads_cublas_with_a_device(void **state)
{
    (void)state;
    remat_backend *be = remat_backend_cuda(0);
    if (be) {
        assert_true(mapped("libcublas"));
    } else {
        assert_contains(remat_last_error(), "no CUDA device: ");
        assert_false(mapped("libcublas"));
    }
}

static void test_cuda_lazy_missing_cublas_says_which_library(void **state)
{
    (void)state;
    remat_cublas_api api;
    memset(&api, 0, sizeof api);
    char why[512];
    assert_int_equal(rmi_cublas_load("libremat-no-such-cublas.so.0", &api, why, sizeof why), 0);
    assert_contains(why, "cannot load cuBLAS (libremat-no-such-cublas.so.0): ");
    assert_null(api.create);
    assert_false(mapped("libremat-no-such-cublas"));
}

/* The soname the build found loads and has every function of the table. */
static void test_cuda_lazy_built_cublas_loads_every_function(void **state)
{
    (void)state;
    remat_cublas_api api;
    memset(&api, 0, sizeof api);
    char why[512] = "";
    if (!rmi_cublas_load(REMAT_CUBLAS_LIB, &api, why, sizeof why))
        fail_msg("%s", why);
#define REMAT_CUBLAS_LOADED(m, sym) assert_non_null(*(void **)&api.m);
    REMAT_CUBLAS_FUNCS(REMAT_CUBLAS_LOADED)
#undef REMAT_CUBLAS_LOADED
    /* a call through the table reaches cuBLAS (no device needed for this one) */
    assert_string_equal(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED), "the library was not initialized");
    assert_true(mapped(REMAT_CUBLAS_LIB));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_lazy_nothing_of_cuda_is_loaded_at_start),
        cmocka_unit_test(test_cuda_lazy_backend_loads_cublas_with_a_device),
        cmocka_unit_test(test_cuda_lazy_missing_cublas_says_which_library),
        cmocka_unit_test(test_cuda_lazy_built_cublas_loads_every_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
