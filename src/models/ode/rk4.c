/* rk4.c — the classical fourth-order Runge–Kutta method (Kutta 1901). */
#include "models/ode/ode_impl.h"

static const double c[] = {0.0, 0.5, 0.5, 1.0};
static const double a[] = {
    0.5,           /* a21 */
    0.0, 0.5,      /* a31 a32 */
    0.0, 0.0, 1.0, /* a41 a42 a43 */
};
static const double b[] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};

const ode_tableau rmi_ode_rk4_tableau = {
    .name = "rk4", .order = 4, .stages = 4, .c = c, .a = a, .b = b,
};
