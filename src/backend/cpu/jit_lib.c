/* jit_lib.c — libgccjit opened on first use (jit_lib.h); nothing in a build
 * without it, whose compiler may lack <libgccjit.h> (clang: the fuzz build). */
#if REMAT_HAVE_GCCJIT
#define REMAT_GCCJIT_LIB_IMPL
#include "backend/cpu/jit_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

remat_gccjit_api rmi_gccjit;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool opened;
static char why[512];

static void open_once(void)
{
    const char *e = getenv("REMAT_GCCJIT_LIB");
    const char *name = e && *e ? e : "libgccjit.so.0";
    /* RTLD_LOCAL: its symbols stay out of the way of everything else */
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *d = dlerror();
        snprintf(why, sizeof why, "jit: cannot load %s: %s", name, d ? d : "(no reason given)");
        return;
    }
    remat_gccjit_api api;
#define REMAT_GCCJIT_SYM(f)                                                                                        \
    if (!(*(void **)&api.f = dlsym(h, #f))) {                                                                      \
        snprintf(why, sizeof why, "jit: %s has no %s", name, #f);                                                  \
        dlclose(h);                                                                                                \
        return;                                                                                                    \
    }
    REMAT_GCCJIT_FUNCS(REMAT_GCCJIT_SYM)
#undef REMAT_GCCJIT_SYM
    rmi_gccjit = api; /* the library stays loaded for the life of the process */
    opened = true;
}

bool rmi_gccjit_open(void)
{
    pthread_once(&once, open_once);
    if (!opened)
        rmi_error(REMAT_ERR_BACKEND, "%s", why);
    return opened;
}

#else
typedef int remat_jit_lib_absent; /* ISO C: no empty translation unit */
#endif /* REMAT_HAVE_GCCJIT */
