/*
 * test_models_util.c — the helpers of test_models_util.h.
 */
#include "test_models_util.h"

#include <math.h>
#include <string.h>

void run(remat_program *p, double *const *in, double *const *out, remat_stats *st)
{
    int ni = remat_program_num_inputs(p), no = remat_program_num_outputs(p);
    remat_tensor ti[16], to[16];
    assert_true(ni <= 16 && no <= 16);
    for (int i = 0; i < ni; i++) {
        ti[i] = remat_program_input_desc(p, i);
        ti[i].data = in[i];
    }
    for (int i = 0; i < no; i++) {
        to[i] = remat_program_output_desc(p, i);
        to[i].data = out[i];
    }
    if (remat_run(p, ni, ti, no, to, st) != REMAT_OK)
        fail_msg("run: %s", remat_last_error());
}

const char *const ABC = "A -> B : k1\nB -> C : k2\nparam k1 = 1.0\nparam k2 = 0.5";

/* Five species: a reversible step, two second-order steps, a rate constant
 * from a t-dependent let with consts and exp, an explicit rate with a
 * non-integer power, sqrt and min, and a power with a parameter exponent. */
const char *const NET5 = "species A, B, C, D, E\n"
                       "param k1 = 1.2\n"
                       "param kr = 0.4\n"
                       "param k2 = 0.7\n"
                       "param k3 = 0.9\n"
                       "param Ea = 0.3\n"
                       "const R = 1.5\n"
                       "let T = 1 + 0.2 * t\n"
                       "let k4 = k3 * exp(-Ea / (R * T))\n"
                       "let kv = 0.2 * k2 ^ (1 + 0.5 * Ea)\n"
                       "A + B -> C : k2          # second order\n"
                       "C <=> D : k1, kr         # reversible\n"
                       "2 D -> E : k4            # second order in D\n"
                       "E -> A : sqrt(k1) * E^1.5 / (1 + min(E, 5))\n"
                       "B -> : kv\n";
const double NET5_Y0[5] = {1.0, 0.8, 0.1, 0.0, 0.05};

/* ---- reference steps in plain C (the tableaus written out) ---- */

void ref_rhs(const remat_mechanism *m, double t, const double *y, const double *p, double *dydt)
{
    assert_ok(remat_mechanism_eval_rhs(m, t, y, p, dydt));
}

/* Gauss elimination with partial pivoting: x = A^{-1} b, A (n, n) destroyed */
static void ref_solve(int n, double *A, double *x)
{
    for (int k = 0; k < n; k++) {
        int piv = k;
        for (int i = k + 1; i < n; i++)
            if (fabs(A[i * n + k]) > fabs(A[piv * n + k]))
                piv = i;
        for (int j = 0; j < n && piv != k; j++) {
            double tmp = A[k * n + j];
            A[k * n + j] = A[piv * n + j], A[piv * n + j] = tmp;
        }
        double tmp = x[k];
        x[k] = x[piv], x[piv] = tmp;
        for (int i = k + 1; i < n; i++) {
            double l = A[i * n + k] / A[k * n + k];
            for (int j = k; j < n; j++)
                A[i * n + j] -= l * A[k * n + j];
            x[i] -= l * x[k];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        for (int j = i + 1; j < n; j++)
            x[i] -= A[i * n + j] * x[j];
        x[i] /= A[i * n + i];
    }
}

/* A Rosenbrock step of the tableau's ros coefficients (ode_impl.h's formulas,
 * written out), J and df/dt by fourth-order central differences of the
 * double evaluator: their ~1e-11 relative error moves k by ~1e-11 * h gamma
 * of itself, far below the tests' tolerances for the steps they take. */
static void ref_rosenbrock(const remat_mechanism *m, const ode_tableau *tb, double t, double h, const double *y,
                           const double *p, double *out)
{
    const ode_rosenbrock *rb = tb->ros;
    int S = remat_mechanism_species_count(m), s = tb->stages;
    static double J[MAXV * MAXV], W[MAXV * MAXV];
    double k[ODE_MAX_STAGES][MAXV], u[MAXV], fp[4][MAXV], dT[MAXV];
    const double w4[4] = {1, -8, 8, -1}, o4[4] = {-2, -1, 1, 2};
    for (int j = 0; j < S; j++) {
        double e = 1e-4 * fmax(fabs(y[j]), 1e-3);
        for (int q = 0; q < 4; q++) {
            memcpy(u, y, sizeof u[0] * (size_t)S);
            u[j] += o4[q] * e;
            ref_rhs(m, t, u, p, fp[q]);
        }
        for (int i = 0; i < S; i++)
            J[i * S + j] = (w4[0] * fp[0][i] + w4[1] * fp[1][i] + w4[2] * fp[2][i] + w4[3] * fp[3][i]) / (12 * e);
    }
    double et = 1e-4 * fmax(fabs(t), 1.0);
    for (int q = 0; q < 4; q++)
        ref_rhs(m, t + o4[q] * et, y, p, fp[q]);
    for (int i = 0; i < S; i++)
        dT[i] = (w4[0] * fp[0][i] + w4[1] * fp[1][i] + w4[2] * fp[2][i] + w4[3] * fp[3][i]) / (12 * et);
    for (int i = 0; i < s; i++) {
        for (int c = 0; c < S; c++) {
            u[c] = y[c];
            for (int j = 0; j < i; j++)
                u[c] += rb->a[i * (i - 1) / 2 + j] * k[j][c];
        }
        ref_rhs(m, t + rb->c[i] * h, u, p, k[i]);
        for (int c = 0; c < S; c++) {
            k[i][c] += h * rb->d[i] * dT[c];
            for (int j = 0; j < i; j++)
                k[i][c] += rb->C[i * (i - 1) / 2 + j] / h * k[j][c];
        }
        for (int r = 0; r < S * S; r++)
            W[r] = (r % (S + 1) == 0 ? 1.0 / (h * rb->gamma) : 0.0) - J[r];
        ref_solve(S, W, k[i]);
    }
    for (int c = 0; c < S; c++) {
        out[c] = y[c];
        for (int j = 0; j < s; j++)
            out[c] += rb->b[j] * k[j][c];
    }
}

void ref_step(const remat_mechanism *m, remat_ode_method method, double t, double h, const double *y,
              const double *p, double *out)
{
    if (rmi_ode_tableau(method) && rmi_ode_tableau(method)->ros) {
        ref_rosenbrock(m, rmi_ode_tableau(method), t, h, y, p, out);
        return;
    }
    int S = remat_mechanism_species_count(m);
    double k[7][MAXV], yi[MAXV];
    static const double tsit_c[6] = {0.0, 0.161, 0.327, 0.9, 0.9800255409045097, 1.0};
    static const double tsit_a[6][5] = {
        {0},
        {0.161},
        {-0.008480655492356989, 0.335480655492357},
        {2.8971530571054935, -6.359448489975075, 4.3622954328695815},
        {5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525},
        {5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401, -0.028269050394068383},
    };
    static const double tsit_b[6] = {0.09646076681806523, 0.01, 0.4798896504144996,
                                     1.379008574103742, -3.290069515436081, 2.324710524099774};
    switch (method) {
    case REMAT_ODE_EULER:
        ref_rhs(m, t, y, p, k[0]);
        for (int i = 0; i < S; i++)
            out[i] = y[i] + h * k[0][i];
        return;
    case REMAT_ODE_RK4:
        ref_rhs(m, t, y, p, k[0]);
        for (int i = 0; i < S; i++)
            yi[i] = y[i] + 0.5 * h * k[0][i];
        ref_rhs(m, t + 0.5 * h, yi, p, k[1]);
        for (int i = 0; i < S; i++)
            yi[i] = y[i] + 0.5 * h * k[1][i];
        ref_rhs(m, t + 0.5 * h, yi, p, k[2]);
        for (int i = 0; i < S; i++)
            yi[i] = y[i] + h * k[2][i];
        ref_rhs(m, t + h, yi, p, k[3]);
        for (int i = 0; i < S; i++)
            out[i] = y[i] + h / 6 * (k[0][i] + 2 * k[1][i] + 2 * k[2][i] + k[3][i]);
        return;
    case REMAT_ODE_TSIT5:
        for (int s = 0; s < 6; s++) {
            for (int i = 0; i < S; i++) {
                yi[i] = y[i];
                for (int j = 0; j < s; j++)
                    yi[i] += h * tsit_a[s][j] * k[j][i];
            }
            ref_rhs(m, t + tsit_c[s] * h, yi, p, k[s]);
        }
        for (int i = 0; i < S; i++) {
            out[i] = y[i];
            for (int s = 0; s < 6; s++)
                out[i] += h * tsit_b[s] * k[s][i];
        }
        return;
    case REMAT_ODE_DOPRI5: {
        static const double dp_c[6] = {0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0};
        static const double dp_a[6][5] = {
            {0},
            {0.2},
            {3.0 / 40, 9.0 / 40},
            {44.0 / 45, -56.0 / 15, 32.0 / 9},
            {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
            {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
        };
        static const double dp_b[6] = {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84};
        for (int s = 0; s < 6; s++) {
            for (int i = 0; i < S; i++) {
                yi[i] = y[i];
                for (int j = 0; j < s; j++)
                    yi[i] += h * dp_a[s][j] * k[j][i];
            }
            ref_rhs(m, t + dp_c[s] * h, yi, p, k[s]);
        }
        for (int i = 0; i < S; i++) {
            out[i] = y[i];
            for (int s = 0; s < 6; s++)
                out[i] += h * dp_b[s] * k[s][i];
        }
        return;
    }
    default: fail_msg("bad method");
    }
}

/* ---- graph builders ---- */

/* f(y0: (S,), params: (P,)) -> states at the output times (n_times, S) */
remat_fn *states_fn(const remat_mechanism *m, const remat_ode_options *opt)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_fn_new("states");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val ys;
    assert_ok(remat_ode_integrate(f, m, opt, y0, p, &ys));
    remat_fn_output(f, ys);
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    return f;
}

/* f(y0, params) -> sum(W * states): a scalar touching every output */
remat_fn *weighted_loss_fn(const remat_mechanism *m, const remat_ode_options *opt, const double *w)
{
    int64_t S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    remat_fn *f = remat_fn_new("loss");
    remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, &S);
    remat_val p = remat_arg(f, "params", REMAT_F64, 1, &P);
    remat_val ys;
    assert_ok(remat_ode_integrate(f, m, opt, y0, p, &ys));
    remat_val W = remat_const_data(f, REMAT_F64, 2, DIMS(opt->n_times, S), w);
    remat_fn_output(f, remat_sum_all(f, remat_mul(f, W, ys)));
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    return f;
}

/* The seed's objective: -C_B at the outlet, f(y0, k) */
remat_fn *neg_cb_fn(const remat_mechanism *m, const remat_ode_options *opt)
{
    remat_fn *f = remat_fn_new("neg_cb");
    remat_val y0 = remat_arg(f, "C0", REMAT_F64, 1, DIMS(3));
    remat_val k = remat_arg(f, "k", REMAT_F64, 1, DIMS(2));
    remat_val ys;
    assert_ok(remat_ode_integrate(f, m, opt, y0, k, &ys));
    remat_fn_output(f, remat_neg(f, remat_index(f, remat_index(f, ys, opt->n_times - 1), 1)));
    assert_int_equal(remat_fn_status(f), REMAT_OK);
    return f;
}


/* B(t) = k1/(k2-k1) (e^{-k1 t} - e^{-k2 t}) and its k-derivatives */
void abc_exact(double t, double k1, double k2, double *B, double *dk1, double *dk2)
{
    double e1 = exp(-k1 * t), e2 = exp(-k2 * t), d = k2 - k1;
    *B = k1 / d * (e1 - e2);
    *dk1 = k2 / (d * d) * (e1 - e2) - k1 * t * e1 / d;
    *dk2 = -k1 / (d * d) * (e1 - e2) + k1 * t * e2 / d;
}
