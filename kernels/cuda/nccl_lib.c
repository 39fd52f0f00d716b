/* nccl_lib.c — NCCL opened when a device reduction is asked for (nccl_lib.h). */
#include "kernels/cuda/nccl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#ifndef REMAT_NCCL_LIB
#define REMAT_NCCL_LIB "libnccl.so.2"
#endif

/* every member has the type of the NCCL function it stands for */
#define REMAT_NCCL_CHECK(m, sym)                                                                                   \
    _Static_assert(_Generic(&sym, __typeof__(((remat_nccl_api *)0)->m): 1, default: 0),                            \
                   "remat_nccl_api." #m " is not the type of " #sym);
REMAT_NCCL_FUNCS(REMAT_NCCL_CHECK)
#undef REMAT_NCCL_CHECK

remat_nccl_api rmi_nccl;

static int opened;
static char open_why[512];

static void open_once(void)
{
    void *h = dlopen(REMAT_NCCL_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *d = dlerror();
        snprintf(open_why, sizeof open_why, "cannot load NCCL (%s): %s", REMAT_NCCL_LIB, d ? d : "(no reason given)");
        return;
    }
    remat_nccl_api a;
#define REMAT_NCCL_SYM(m, sym)                                                                                     \
    if (!(*(void **)&a.m = dlsym(h, #sym))) {                                                                      \
        snprintf(open_why, sizeof open_why, "cannot load NCCL (%s): it has no %s", REMAT_NCCL_LIB, #sym);         \
        dlclose(h);                                                                                                \
        return;                                                                                                    \
    }
    REMAT_NCCL_FUNCS(REMAT_NCCL_SYM)
#undef REMAT_NCCL_SYM
    rmi_nccl = a; /* loaded for the rest of the process */
    opened = 1;
}

int rmi_nccl_open(char *why, size_t why_size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, open_once);
    if (!opened)
        snprintf(why, why_size, "%s", open_why);
    return opened;
}
