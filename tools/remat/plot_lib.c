/* plot_lib.c — PLplot opened when a plot is asked for (plot_lib.h). */
#define REMAT_PLPLOT_LIB_IMPL
#include "plot_lib.h"

#include <dlfcn.h>
#include <stdio.h>

remat_plplot_api remat_plplot;

int plot_lib_open(const char *opt)
{
    static int state; /* 0: not tried, 1: open, -1: failed (the tool is single-threaded) */
    static char why[512];
    if (state == 0) {
        void *h = dlopen(REMAT_PLPLOT_LIB, RTLD_NOW | RTLD_LOCAL);
        remat_plplot_api api;
        state = h ? 1 : -1;
        if (!h) {
            const char *d = dlerror();
            snprintf(why, sizeof why, "%s", d ? d : "(no reason given)");
        }
#define REMAT_PLPLOT_SYM(f)                                                                                        \
    if (state == 1 && !(*(void **)&api.f = dlsym(h, #f))) {                                                        \
        snprintf(why, sizeof why, "it has no %s", #f);                                                             \
        state = -1;                                                                                                \
    }
        REMAT_PLPLOT_FUNCS(REMAT_PLPLOT_SYM)
#undef REMAT_PLPLOT_SYM
        if (state == 1)
            remat_plplot = api; /* loaded for the rest of the process */
        else if (h)
            dlclose(h);
    }
    if (state < 0)
        fprintf(stderr, "remat: %s: cannot load PLplot (%s): %s (install libplplot17 and plplot-driver-cairo)\n", opt,
                REMAT_PLPLOT_LIB, why);
    return state > 0;
}
