/*
 * tsit5.c — Tsitouras' 5(4) Runge–Kutta pair at a fixed step.
 *
 * Ch. Tsitouras, "Runge–Kutta pairs of order 5(4) satisfying only the first
 * column simplifying assumption", Computers & Mathematics with Applications
 * 62(2) (2011) 770–775, Table 1 — with the digits diffrax's Tsit5 uses
 * (diffrax/_solver/tsit5.py), so a constant-step diffrax solve and this one
 * agree to rounding. The pair has seven stages with FSAL: the seventh
 * evaluates f at the new point for the embedded error estimate and as the
 * next step's first stage. Its solution weight is 0 (b_sol = a_7j), so a
 * fixed step without error control needs only the first six.
 */
#include "models/ode/ode_impl.h"

static const double c[] = {
    0.0,
    0.161,
    0.327,
    0.9,
    0.98002554090450968572981028628702459549421,
    1.0,
};

static const double a[] = {
    /* a21 */
    0.161,
    /* a31 a32 */
    -0.0084806554923569885444268742502307746751212,
    0.33548065549235698854442687425023077467512,
    /* a41 a42 a43 */
    2.8971530571054934321304325941929387649249,
    -6.3594484899750748431481599123838256259527,
    4.3622954328695814110177273181908868610278,
    /* a51 .. a54 */
    5.3258648284392566044288779208405113178365,
    -11.748883564062827877747170339785772961887,
    7.4955393428898362083046047845643581556587,
    -0.092495066361755249256502079332071916113500,
    /* a61 .. a65 */
    5.8614554429464200286592514869826478903943,
    -12.920969317847109291706118681783359395418,
    8.1593678985761586431804007945392534851819,
    -0.071584973281400997224530542525829738691272,
    -0.028269050394068382909003057212712241467176,
};

/* b_sol: the 5th-order solution (b7 = 0 omitted) */
static const double b[] = {
    0.096460766818065229518167313165128763337120,
    0.01,
    0.47988965041449957477524953229059651991304,
    1.3790085741037418931922748218568727707565,
    -3.2900695154360806799010475857113638501157,
    2.3247105240997739824153559183987657961091,
};

const ode_tableau remat_ode_tsit5_tableau = {
    .name = "tsit5", .order = 5, .stages = 6, .c = c, .a = a, .b = b,
};
