/*
 * nvrtc.c — the few NVRTC entries remat calls, resolved with dlopen/dlsym
 * (declared here: building needs no nvrtc.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/cuda/nvrtc.h"

typedef int nvrtc_result; /* nvrtcResult: 0 is NVRTC_SUCCESS */
typedef struct nvrtc_prog *nvrtc_program;

static struct {
    void *lib;
    char why[512];
    nvrtc_result (*version)(int *, int *);
    nvrtc_result (*create)(nvrtc_program *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtc_result (*compile)(nvrtc_program, int, const char *const *);
    nvrtc_result (*log_size)(nvrtc_program, size_t *);
    nvrtc_result (*log)(nvrtc_program, char *);
    nvrtc_result (*ptx_size)(nvrtc_program, size_t *);
    nvrtc_result (*ptx)(nvrtc_program, char *);
    nvrtc_result (*cubin_size)(nvrtc_program, size_t *);
    nvrtc_result (*cubin)(nvrtc_program, char *);
    nvrtc_result (*destroy)(nvrtc_program *);
    const char *(*error_string)(nvrtc_result);
} N;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *sym(const char *name, int *ok)
{
    void *f = dlsym(N.lib, name);
    *ok &= f != NULL;
    return f;
}

static void load(void)
{
    const char *env = getenv("REMAT_NVRTC");
    const char *names[] = {env && *env ? env : "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                           "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
                           "/usr/local/cuda/lib64/libnvrtc.so.12"};
    for (size_t i = 0; i < sizeof names / sizeof *names && !N.lib; i++)
        N.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!N.lib) {
        snprintf(N.why, sizeof N.why, "NVRTC not found (tried $REMAT_NVRTC, libnvrtc.so[.13|.12] on the library path "
                                      "and in /usr/local/cuda/lib64)");
        return;
    }
    int ok = 1;
    *(void **)&N.version = sym("nvrtcVersion", &ok);
    *(void **)&N.create = sym("nvrtcCreateProgram", &ok);
    *(void **)&N.compile = sym("nvrtcCompileProgram", &ok);
    *(void **)&N.log_size = sym("nvrtcGetProgramLogSize", &ok);
    *(void **)&N.log = sym("nvrtcGetProgramLog", &ok);
    *(void **)&N.ptx_size = sym("nvrtcGetPTXSize", &ok);
    *(void **)&N.ptx = sym("nvrtcGetPTX", &ok);
    *(void **)&N.cubin_size = sym("nvrtcGetCUBINSize", &ok);
    *(void **)&N.cubin = sym("nvrtcGetCUBIN", &ok);
    *(void **)&N.destroy = sym("nvrtcDestroyProgram", &ok);
    *(void **)&N.error_string = sym("nvrtcGetErrorString", &ok);
    if (!ok) {
        snprintf(N.why, sizeof N.why, "NVRTC found but too old (no nvrtcGetCUBIN: CUDA >= 11.1 needed)");
        dlclose(N.lib);
        N.lib = NULL;
    }
}

bool rmi_nvrtc_available(const char **why)
{
    pthread_once(&once, load);
    if (!N.lib && why)
        *why = N.why;
    return N.lib != NULL;
}

int rmi_nvrtc_version(void)
{
    int major = 0, minor = 0;
    if (!rmi_nvrtc_available(NULL) || N.version(&major, &minor) != 0)
        return 0;
    return major * 1000 + minor * 10;
}

static char *take_log(nvrtc_program prog)
{
    size_t n = 0;
    if (N.log_size(prog, &n) != 0 || n <= 1)
        return NULL;
    char *s = rmi_malloc(n);
    if (s && N.log(prog, s) != 0)
        rmi_free(s), s = NULL;
    return s;
}

remat_status rmi_nvrtc_compile(const char *src, const char *name, const char *const *options, const char *arch,
                               remat_nvrtc_output kind, char **image, size_t *size, char **log)
{
    *image = NULL, *size = 0;
    if (log)
        *log = NULL;
    const char *why = NULL;
    if (!rmi_nvrtc_available(&why))
        return rmi_error(REMAT_ERR_UNSUPPORTED, "%s", why);
    int n = 0;
    while (options && options[n])
        n++;
    const char **opts = rmi_malloc(sizeof *opts * (size_t)(n + 1));
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "-arch=%s", arch);
    if (!opts)
        return rmi_error(REMAT_ERR_NOMEM, "NVRTC options");
    memcpy(opts, options, sizeof *opts * (size_t)n);
    opts[n] = arch_opt;
    nvrtc_program prog = NULL;
    nvrtc_result r = N.create(&prog, src, name, 0, NULL, NULL);
    remat_status st = REMAT_OK;
    if (r != 0) {
        st = rmi_error(r == 1 ? REMAT_ERR_NOMEM : REMAT_ERR_BACKEND, "NVRTC: creating %s: %s", name,
                       N.error_string(r));
        goto out;
    }
    r = N.compile(prog, n + 1, opts);
    if (log)
        *log = take_log(prog);
    if (r != 0) {
        st = rmi_error(REMAT_ERR_BACKEND, "NVRTC: compiling %s for %s: %s", name, arch, N.error_string(r));
        goto out;
    }
    const bool ptx = kind == REMAT_NVRTC_PTX;
    size_t bytes = 0;
    r = ptx ? N.ptx_size(prog, &bytes) : N.cubin_size(prog, &bytes);
    char *img = r == 0 && bytes > 0 ? rmi_malloc(bytes + 1) : NULL;
    if (r != 0 || bytes == 0) {
        st = rmi_error(REMAT_ERR_BACKEND, "NVRTC: no %s for %s (%s): %s", ptx ? "PTX" : "cubin", name, arch,
                       r ? N.error_string(r) : "empty");
        goto out;
    }
    if (!img) {
        st = rmi_error(REMAT_ERR_NOMEM, "NVRTC: a %zu-byte image", bytes);
        goto out;
    }
    r = ptx ? N.ptx(prog, img) : N.cubin(prog, img);
    if (r != 0) {
        rmi_free(img);
        st = rmi_error(REMAT_ERR_BACKEND, "NVRTC: reading the image of %s: %s", name, N.error_string(r));
        goto out;
    }
    img[bytes] = 0;
    *image = img;
    *size = ptx && bytes > 0 && img[bytes - 1] == 0 ? bytes - 1 : bytes;
out:
    if (prog)
        N.destroy(&prog);
    rmi_free(opts);
    return st;
}
