/*
 * stability.c — the real stability interval of a fixed-step method: the
 * largest x such that the step is stable on y' = lambda y for every real
 * h lambda in [-x, 0] (Hairer–Wanner II, IV.2). Explicit Runge–Kutta: the
 * stability function R(z) = 1 + z b^T (I - z A)^{-1} 1, here evaluated as the
 * step itself on the test equation; Rosenbrock methods are A-stable
 * (infinite), as are BDF of orders 1..5. Euler 2, RK4 2.785, Tsit5 and Dopri5 about 3.5 and 3.3.
 */
#include <math.h>

#include "core/assert.h"
#include "models/ode/ode_impl.h"

/* one step of the tableau on y' = y/h * z from y = 1 */
static double stability_function(const ode_tableau *tb, double z)
{
    double k[ODE_MAX_STAGES], y = 1;
    for (int i = 0; i < tb->stages; i++) {
        double yi = 1;
        for (int j = 0; j < i; j++)
            yi += tb->a[i * (i - 1) / 2 + j] * k[j];
        k[i] = z * yi;
        y += tb->b[i] * k[i];
    }
    return y;
}

double remat_ode_stability_bound(remat_ode_method method)
{
    const ode_tableau *tb = rmi_ode_tableau(method);
    if (!tb)
        return 0;
    if (tb->ros || tb->multistep) /* BDF 1..5 are stable on the whole negative real axis */
        return INFINITY;
    REMAT_ASSERT(tb->stages <= ODE_MAX_STAGES);
    /* walk out in steps of 1/1024 until |R| > 1, then halve the last step */
    double lo = 0, step = 1.0 / 1024;
    while (lo < 64 && fabs(stability_function(tb, -(lo + step))) <= 1)
        lo += step;
    for (int i = 0; i < 40; i++) {
        step /= 2;
        if (fabs(stability_function(tb, -(lo + step))) <= 1)
            lo += step;
    }
    return lo;
}
