/*
 * dopri5.c — the Dormand–Prince 5(4) pair.
 *
 * J. R. Dormand, P. J. Prince, "A family of embedded Runge–Kutta formulae",
 * J. Comput. Appl. Math. 6 (1980) 19–26, with the 4th-order weights of
 * Shampine (Math. Comp. 46 (1986) 135–150) that Hairer's DOPRI5 and
 * diffrax's Dopri5 use. Seven stages with FSAL: the seventh is f at the new
 * point (a_7j = b_j), used by the error estimate and as the next step's first
 * stage; a fixed step without error control evaluates the first six.
 */
#include "models/ode/ode_impl.h"

static const double c[] = {0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0};

static const double a[] = {
    /* a21 */
    1.0 / 5.0,
    /* a31 a32 */
    3.0 / 40.0, 9.0 / 40.0,
    /* a41 a42 a43 */
    44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0,
    /* a51 .. a54 */
    19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0,
    /* a61 .. a65 */
    9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0,
};

static const double b[] = {35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0};

/* b - b_hat, the FSAL stage last */
static const double e[] = {
    35.0 / 384.0 - 1951.0 / 21600.0,
    0.0,
    500.0 / 1113.0 - 22642.0 / 50085.0,
    125.0 / 192.0 - 451.0 / 720.0,
    -2187.0 / 6784.0 + 12231.0 / 42400.0,
    11.0 / 84.0 - 649.0 / 6300.0,
    -1.0 / 60.0,
};

/* Hairer's dense output of DOPRI5 (Hairer-Norsett-Wanner I, II.6; dopri5.f's
 * contd5): y + theta (r2 + (1-theta)(r3 + theta (r4 + (1-theta) r5))) with
 * r2 = y' - y, r3 = k1 - r2, r4 = r2 - k7 - r3, r5 = sum d_i k_i; as weights
 * of the stages, stage i's coefficients of theta .. theta^4 are
 * [delta_i1, 3 b_i - 2 delta_i1 - delta_i7 + d_i, -2 b_i + delta_i1 + delta_i7 - 2 d_i, d_i]. */
#define D1 (-12715105075.0 / 11282082432.0)
#define D3 (87487479700.0 / 32700410799.0)
#define D4 (-10690763975.0 / 1880347072.0)
#define D5 (701980252875.0 / 199316789632.0)
#define D6 (-1453857185.0 / 822651844.0)
#define D7 (69997945.0 / 29380423.0)
#define ROW(b, d, first, last) (first), 3.0 * (b) - 2.0 * (first) - (last) + (d), \
        -2.0 * (b) + (first) + (last) - 2.0 * (d), (d)
static const double dense[] = {
    ROW(35.0 / 384.0, D1, 1.0, 0.0),
    ROW(0.0, 0.0, 0.0, 0.0),
    ROW(500.0 / 1113.0, D3, 0.0, 0.0),
    ROW(125.0 / 192.0, D4, 0.0, 0.0),
    ROW(-2187.0 / 6784.0, D5, 0.0, 0.0),
    ROW(11.0 / 84.0, D6, 0.0, 0.0),
    ROW(0.0, D7, 0.0, 1.0),
};

/* Hairer's DOPRI5 declares stiffness past h*lambda = 3.25 (the interval
 * reaches about -3.3) */
const ode_tableau rmi_ode_dopri5_tableau = {
    .name = "dopri5", .order = 5, .stages = 6, .c = c, .a = a, .b = b, .e = e, .stab = 3.25, .dense = dense,
};
