/*
 * rodas5.c — Rodas5, an L-stable, stiffly accurate Rosenbrock method of
 * order 5 with an embedded order-4 estimate (8 stages).
 *
 * G. Di Marzo, "RODAS5(4) – Méthodes de Rosenbrock d'ordre 5(4) adaptées aux
 * problèmes différentiels-algébriques", Mémoire de diplôme, Université de
 * Genève (1993); in the W-transformed form of E. Hairer, G. Wanner, "Solving
 * Ordinary Differential Equations II", 2nd ed., Springer (1996), IV.7
 * (4.7'), with the digits OrdinaryDiffEq.jl's Rodas5Tableau uses, so a
 * constant-step solve there and here agree to rounding.
 *
 * Why Rodas5: a Rosenbrock method needs one Jacobian and linear solves with
 * one matrix per step and no Newton iteration, so a step is a fixed sequence
 * of graph ops (forward mode for J, the linear-solve primitive), and reverse
 * mode through a step is ordinary reverse mode over those ops — no implicit
 * function theorem, no convergence test whose branch the adjoint would have
 * to follow. It is L-stable (R(inf) = 0) and stiffly accurate (the solution
 * is the last stage's input plus k8, so stiff components are damped to the
 * algebraic limit), order 5 for the stiff test problems that matter here
 * (Robertson), and its error estimate is k8 alone.
 *
 * The stage inputs after the fifth are u7 = u6 + k6, u8 = u7 + k7 and the
 * solution u8 + k8: written below as full rows a_7j, a_8j, b_j (a_6j plus
 * ones), which the emitter recognises and forms as one add each.
 *
 * Continuous extension (dense.c, ode_impl.h's form): y(t + theta h) =
 * (1 - theta) y + theta (y' + (1 - theta) (d1 + theta (d2 + theta d3))),
 * d_r = sum_i H[r][i] k_i over the eight stages, so rows between step ends
 * cost no right-hand side. H is the three rows of OrdinaryDiffEq.jl's
 * Rodas5Tableau (its H matrix; h21..h28, h31..h38, h41..h48 in its older
 * spelling): the first two alone are the order-3 interpolant of Rodas5's
 * dense output (Hairer & Wanner's form for RODAS), the third raises it to
 * order 4. Measured (test_models_rodas5_extension_order, 2 A -> B): the
 * error at interior theta of one step from the exact solution falls ~15x
 * per halving of h with two rows and ~30x with three (local error O(h^4),
 * O(h^5)); y and y' are the form's values at theta 0 and 1 whatever H.
 */
#include "models/ode/ode_impl.h"

#define A61 (-14.09640773051259)
#define A62 6.925207756232704
#define A63 (-41.47510893210728)
#define A64 2.343771018586405
#define A65 24.13215229196062

static const double a[] = {
    /* a21 */
    2.0,
    /* a31 a32 */
    3.040894194418781, 1.041747909077569,
    /* a41 .. a43 */
    2.576417536461461, 1.622083060776640, -0.9089668560264532,
    /* a51 .. a54 */
    2.760842080225597, 1.446624659844071, -0.3036980084553738, 0.2877498600325443,
    /* a61 .. a65 */
    A61, A62, A63, A64, A65,
    /* a71 .. a76: u7 = u6 + k6 */
    A61, A62, A63, A64, A65, 1.0,
    /* a81 .. a87: u8 = u7 + k7 */
    A61, A62, A63, A64, A65, 1.0, 1.0,
};

/* y1 = u8 + k8 */
static const double b[] = {A61, A62, A63, A64, A65, 1.0, 1.0, 1.0};
/* the embedded order-4 solution is u8: y1 - y1_hat = k8 */
static const double e[] = {0, 0, 0, 0, 0, 0, 0, 1.0};

static const double C[] = {
    /* C21 */
    -10.31323885133993,
    /* C31 C32 */
    -21.04823117650003, -7.234992135176716,
    /* C41 .. C43 */
    32.22751541853323, -4.943732386540191, 19.44922031041879,
    /* C51 .. C54 */
    -20.69865579590063, -8.816374604402768, 1.260436877740897, -0.7495647613787146,
    /* C61 .. C65 */
    -46.22004352711257, -17.49534862857472, -289.6389582892057, 93.60855400400906, 318.3822534212147,
    /* C71 .. C76 */
    34.20013733472935, -14.15535402717690, 57.82335640988400, 25.83362985412365, 1.408950972071624,
    -6.551835421242162,
    /* C81 .. C87 */
    42.57076742291101, -13.80770672017997, 93.98938432427124, 18.77919633714503, -31.58359187223370,
    -6.685968952921985, -5.810979938412932,
};

static const double c[] = {
    0.0, 0.38, 0.3878509998321533, 0.4839718937873840, 0.4570477008819580, 1.0, 1.0, 1.0,
};

static const double d[] = {
    0.19, -0.1823079225333714636, -0.319231832186874912, 0.3449828624725343, -0.377417564392089818, 0.0, 0.0, 0.0,
};

/* the continuous extension's weights: d_r = sum_i H[r][i] k_i */
static const double H[] = {
    27.354592673333357, -6.925207756232857, 26.40037733258859, 0.5635230501052979,
    -4.699151156849391, -1.6008677469422725, -1.5306074446748028, -1.3929872940716344,

    44.19024239501722, 1.3677947663381929e-13, 202.93261852171622, -35.5669339789154,
    -181.91095152160645, 3.4116351403665033, 2.5793540257308067, 2.2435122582734066,

    -44.0988150021747, -5.755396159656812e-13, -181.26175034586677, 56.99302194811676,
    183.21182741427398, -7.480257918273637, -5.792426076169686, -5.32503859794143,
};

static const ode_rosenbrock rodas5 = {
    .gamma = 0.19, .a = a, .C = C, .c = c, .d = d, .b = b, .e = e, .n_dense = 3, .H = H,
};

const ode_tableau rmi_ode_rodas5_tableau = {
    .name = "rodas5", .order = 5, .stages = 8, .c = c, .a = a, .b = b, .ros = &rodas5,
};
