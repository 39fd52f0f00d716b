/* cublas_lib.c — cuBLAS opened when the CUDA backend is asked for (cublas_lib.h). */
#include "kernels/cuda/cublas_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* every member has the type of the cuBLAS function it stands for */
#define REMAT_CUBLAS_CHECK(m, sym)                                                                                 \
    _Static_assert(_Generic(&sym, __typeof__(((remat_cublas_api *)0)->m): 1, default: 0),                          \
                   "remat_cublas_api." #m " is not the type of " #sym);
REMAT_CUBLAS_FUNCS(REMAT_CUBLAS_CHECK)
#undef REMAT_CUBLAS_CHECK

remat_cublas_api rmi_cublas;

int rmi_cublas_load(const char *lib, remat_cublas_api *api, char *why, size_t why_size)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *d = dlerror();
        snprintf(why, why_size, "cannot load cuBLAS (%s): %s", lib, d ? d : "(no reason given)");
        return 0;
    }
    remat_cublas_api a;
#define REMAT_CUBLAS_SYM(m, sym)                                                                                   \
    if (!(*(void **)&a.m = dlsym(h, #sym))) {                                                                      \
        snprintf(why, why_size, "cannot load cuBLAS (%s): it has no %s", lib, #sym);                              \
        dlclose(h);                                                                                                \
        return 0;                                                                                                  \
    }
    REMAT_CUBLAS_FUNCS(REMAT_CUBLAS_SYM)
#undef REMAT_CUBLAS_SYM
    *api = a; /* loaded for the rest of the process */
    return 1;
}

static int opened;
static char open_why[512];

static void open_once(void) { opened = rmi_cublas_load(REMAT_CUBLAS_LIB, &rmi_cublas, open_why, sizeof open_why); }

int rmi_cublas_open(char *why, size_t why_size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, open_once);
    if (!opened)
        snprintf(why, why_size, "%s", open_why);
    return opened;
}
