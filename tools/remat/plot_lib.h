/*
 * plot_lib.h — PLplot, opened when a plot is asked for (dlopen of the
 * library the tool was built against, REMAT_PLPLOT_LIB: "libplplot.so.17" on
 * Debian 12) instead of at process start, where relocating it and its font
 * and cairo stack cost every run of the tool, plotting or not.
 *
 * plplot.h's declarations give the types; every function plot_plplot.c
 * calls is listed in REMAT_PLPLOT_FUNCS and, after this header, names the
 * pointer in remat_plplot (a function missing from the list is a link
 * error: nothing links PLplot). plot_lib_open() fills the table once.
 */
#ifndef REMAT_TOOL_PLOT_LIB_H
#define REMAT_TOOL_PLOT_LIB_H

#include <plplot.h>

#define REMAT_PLPLOT_FUNCS(X)                                                                                   \
    X(c_pladv) X(c_plbox) X(c_plcol0) X(c_plend) X(c_plenv) X(c_plinit) X(c_pllab) X(c_pllegend) X(c_plline) X(c_pllsty) X(c_plmtex)    \
    X(c_plpoin) X(c_plptex) X(c_plscol0) X(c_plscolbg) X(c_plsdev) X(c_plsfnam) X(c_plspage) X(c_plssub)        \
    X(c_plslabelfunc) X(c_plssym)

#define REMAT_PLPLOT_PTR(f) __typeof__(f) *f;
typedef struct {
    REMAT_PLPLOT_FUNCS(REMAT_PLPLOT_PTR)
} remat_plplot_api;
#undef REMAT_PLPLOT_PTR

extern remat_plplot_api remat_plplot;

/* Opens PLplot (once; later calls give the first answer). 0 with a message
 * naming opt, the library and why, when it cannot be loaded. */
int plot_lib_open(const char *opt);

#ifndef REMAT_PLPLOT_LIB_IMPL
#define c_pladv remat_plplot.c_pladv
#define c_plbox remat_plplot.c_plbox
#define c_plcol0 remat_plplot.c_plcol0
#define c_plend remat_plplot.c_plend
#define c_plenv remat_plplot.c_plenv
#define c_plinit remat_plplot.c_plinit
#define c_pllab remat_plplot.c_pllab
#define c_pllegend remat_plplot.c_pllegend
#define c_plline remat_plplot.c_plline
#define c_pllsty remat_plplot.c_pllsty
#define c_plmtex remat_plplot.c_plmtex
#define c_plpoin remat_plplot.c_plpoin
#define c_plptex remat_plplot.c_plptex
#define c_plscol0 remat_plplot.c_plscol0
#define c_plscolbg remat_plplot.c_plscolbg
#define c_plsdev remat_plplot.c_plsdev
#define c_plsfnam remat_plplot.c_plsfnam
#define c_plspage remat_plplot.c_plspage
#define c_plssub remat_plplot.c_plssub
#define c_plslabelfunc remat_plplot.c_plslabelfunc
#define c_plssym remat_plplot.c_plssym
#endif

#endif
