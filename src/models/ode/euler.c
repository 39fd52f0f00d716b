/* euler.c — explicit Euler as a one-stage tableau: y' = y + h f(t, y). */
#include "models/ode/ode_impl.h"

static const double c[] = {0.0};
static const double b[] = {1.0};

const ode_tableau rmi_ode_euler_tableau = {
    .name = "euler", .order = 1, .stages = 1, .c = c, .a = NULL, .b = b,
};
