/*
 * bench_gas.c — a gas mechanism's constant-pressure ignition (remat/gas.h)
 * through remat_pfr: the forward integration (adaptive Rodas5) and the
 * forward + reverse pass giving d T(t_sens) / d every parameter (all rate
 * multipliers m<i> and Arrhenius A, b, Ea: one reverse pass). Its Cantera
 * twin is bench/gas_cantera.py (CVODES, forward sensitivities of T to every
 * multiplier), on the same problem and tolerances.
 *
 *   ./build/bench/bench_gas MECH COMPOSITION T0 LENGTH T_SENS [RTOL ATOL ROUNDS [CANTERA]]
 *   ./build/bench/bench_gas data/mechanisms/h2o2.yaml H2=2,O2=1,N2=3.76 1100 1.78e-4 7.1e-5 1e-8 1e-14 5
 *
 * One JSON document on stdout: the first call of each (compiling) and the
 * median wall and CPU (process) time of the warm calls, in ms, with the
 * integrator's steps. CANTERA, when given, is either a Python interpreter
 * with cantera (then bench/gas_cantera.py runs with the same arguments, from
 * the current directory) or a file holding that script's JSON; "vs_cantera"
 * then has remat's forward median over Cantera's (target <= 1) and Cantera's
 * all-multiplier sensitivities median over remat's gradient median (target
 * >= 10), both CPU (process) times on each side: wall times on a shared
 * machine measure the neighbours. "forward_bdf" is the same forward solve by
 * the variable-order BDF (REMAT_ODE_BDF: a reused Jacobian, forward only)
 * with its counts (steps, error-test and Newton failures, right-hand sides,
 * Jacobians, LU factorisations), and "vs_cantera_bdf" its CPU median over
 * Cantera's forward one (target <= 1).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "remat/remat.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* the number after "median_cpu_ms": in the object named key of Cantera's JSON; NAN if absent */
static double cantera_median(const char *json, const char *key)
{
    const char *k = strstr(json, key), *v = k ? strstr(k, "\"median_cpu_ms\":") : NULL;
    return v ? strtod(v + strlen("\"median_cpu_ms\":"), NULL) : NAN;
}

/* Cantera's JSON: the output of CANTERA bench/gas_cantera.py ARGS when CANTERA is executable, else the file */
static char *cantera_json(const char *cantera, char **argv, double rtol, double atol, int rounds)
{
    FILE *in;
    int run = access(cantera, X_OK) == 0;
    if (run) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' bench/gas_cantera.py '%s' '%s' '%s' '%s' '%s' %g %g %d", cantera, argv[1],
                 argv[2], argv[3], argv[4], argv[5], rtol, atol, rounds);
        in = popen(cmd, "r");
    } else {
        in = fopen(cantera, "r");
    }
    if (!in) {
        fprintf(stderr, "bench_gas: %s: cannot %s it\n", cantera, run ? "run" : "open");
        exit(1);
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf && n + 1 < cap && (n += fread(buf + n, 1, cap - 1 - n, in)) && !feof(in) && !ferror(in))
        ;
    int bad = run ? pclose(in) != 0 : fclose(in) != 0;
    if (!buf || bad) {
        fprintf(stderr, "bench_gas: %s: %s\n", cantera, run ? "bench/gas_cantera.py failed" : "cannot read it");
        exit(1);
    }
    buf[n] = 0;
    return buf;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what)
{
    fprintf(stderr, "bench_gas: %s: %s\n", what, remat_last_error());
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: bench_gas MECH COMPOSITION T0 LENGTH T_SENS [RTOL ATOL ROUNDS]\n");
        return 2;
    }
    double T0 = atof(argv[3]), L = atof(argv[4]), ts = atof(argv[5]);
    double rtol = argc > 6 ? atof(argv[6]) : 1e-8, atol = argc > 7 ? atof(argv[7]) : 1e-14;
    int rounds = argc > 8 ? atoi(argv[8]) : 5;
    if (rounds < 1) {
        fprintf(stderr, "bench_gas: ROUNDS must be >= 1\n");
        return 2;
    }
    remat_mechanism *m;
    if (remat_gas_read(argv[1], NULL, &m) != REMAT_OK)
        die("reading");
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m), K = remat_gas_species_count(m);
    double *y0 = calloc((size_t)S, sizeof *y0), *p = calloc((size_t)P, sizeof *p), *out = calloc((size_t)S, sizeof *out);
    double *grad = calloc((size_t)P, sizeof *grad), stats[REMAT_ODE_STATS], obj;
    if (remat_gas_state(m, T0, argv[2], y0) != REMAT_OK)
        die("composition");
    remat_mechanism_param_values(m, p);
    remat_pfr_options o = {.method = REMAT_ODE_RODAS5, .length = L, .inlet = y0, .adaptive = true, .rtol = rtol,
                           .atol = atol, .max_steps = 1000000, .goal = REMAT_PFR_MINIMIZE, .species = K};
    remat_pfr *fwd, *sens;
    if (remat_pfr_new(m, &o, &fwd) != REMAT_OK)
        die("reactor");
    o.length = ts;
    if (remat_pfr_new(m, &o, &sens) != REMAT_OK)
        die("reactor");
    remat_pfr_options ob = o; /* the forward solve by BDF (forward only: no gradient) */
    ob.method = REMAT_ODE_BDF, ob.length = L, ob.goal = REMAT_PFR_NO_GOAL;
    remat_pfr *bdf;
    if (remat_pfr_new(m, &ob, &bdf) != REMAT_OK)
        die("reactor (bdf)");
    double *tf = calloc((size_t)rounds, sizeof *tf), *tg = calloc((size_t)rounds, sizeof *tg);
    double *cf = calloc((size_t)rounds, sizeof *cf), *cg = calloc((size_t)rounds, sizeof *cg), c;
    double t = now_ms();
    if (remat_pfr_outlet(fwd, p, out) != REMAT_OK)
        die("outlet");
    double first_fwd = now_ms() - t;
    t = now_ms();
    if (remat_pfr_objective(sens, p, &obj, grad) != REMAT_OK)
        die("gradient");
    double first_grad = now_ms() - t;
    double *outb = calloc((size_t)S, sizeof *outb), *tb = calloc((size_t)rounds, sizeof *tb);
    double *cb = calloc((size_t)rounds, sizeof *cb);
    t = now_ms();
    if (remat_pfr_outlet(bdf, p, outb) != REMAT_OK)
        die("outlet (bdf)");
    double first_bdf = now_ms() - t;
    for (int r = 0; r < rounds; r++) {
        t = now_ms(), c = cpu_ms();
        remat_pfr_outlet(fwd, p, out);
        tf[r] = now_ms() - t, cf[r] = cpu_ms() - c;
        t = now_ms(), c = cpu_ms();
        remat_pfr_objective(sens, p, &obj, grad);
        tg[r] = now_ms() - t, cg[r] = cpu_ms() - c;
        t = now_ms(), c = cpu_ms();
        remat_pfr_outlet(bdf, p, outb);
        tb[r] = now_ms() - t, cb[r] = cpu_ms() - c;
    }
    /* BDF's own counts: one more run through the direct call */
    remat_ode_bdf_stats bs;
    remat_ode_options bo = {.method = REMAT_ODE_BDF, .n_times = 1, .times = &L, .adaptive = true, .rtol = rtol,
                            .atol = atol, .max_steps = 1000000};
    if (remat_ode_bdf_run(m, &bo, y0, p, NULL, &bs) != REMAT_OK)
        die("bdf run");
    remat_pfr_integration_stats(fwd, p, stats);
    double steps = stats[REMAT_ODE_STAT_ACCEPTED], rejected = stats[REMAT_ODE_STAT_REJECTED];
    remat_pfr_integration_stats(sens, p, stats);
    printf("{\"mechanism\": \"%s\", \"species\": %d, \"reactions\": %d, \"params\": %d, \"T0\": %g, \"length\": %g, "
           "\"t_sens\": %g, \"rtol\": %g, \"atol\": %g, \"rounds\": %d,\n",
           argv[1], K, remat_mechanism_reaction_count(m), P, T0, L, ts, rtol, atol, rounds);
    double mf = median(cf, rounds), mg = median(cg, rounds);
    printf(" \"forward\": {\"T_end\": %.10g, \"steps\": %.0f, \"rejected\": %.0f, \"first_ms\": %.3f, "
           "\"median_ms\": %.3f, \"median_cpu_ms\": %.3f},\n",
           out[K], steps, rejected, first_fwd, median(tf, rounds), mf);
    double mb = median(cb, rounds);
    printf(" \"forward_bdf\": {\"T_end\": %.10g, \"steps\": %lld, \"rejected\": %lld, \"newton_failures\": %lld, "
           "\"rhs_evals\": %lld, \"jacobians\": %lld, \"lu\": %lld, \"first_ms\": %.3f, \"median_ms\": %.3f, "
           "\"median_cpu_ms\": %.3f},\n",
           outb[K], (long long)bs.steps, (long long)bs.rejected, (long long)bs.newton_failures,
           (long long)bs.rhs_evals, (long long)bs.jacobians, (long long)bs.lu, first_bdf, median(tb, rounds), mb);
    printf(" \"gradient_all_params\": {\"T\": %.10g, \"dT_dm1\": %.6g, \"steps\": %.0f, \"first_ms\": %.3f, "
           "\"median_ms\": %.3f, \"median_cpu_ms\": %.3f}",
           obj, grad[1], stats[REMAT_ODE_STAT_ACCEPTED], first_grad, median(tg, rounds), mg);
    if (argc > 9) {
        char *cj = cantera_json(argv[9], argv, rtol, atol, rounds);
        double cfwd = cantera_median(cj, "\"forward\"");
        double csens = cantera_median(cj, "\"sensitivities_all_multipliers\"");
        int has_sens = strstr(cj, "\"sensitivities_all_multipliers\"") != NULL;
        if (!(cfwd > 0) || (has_sens && !(csens > 0))) {
            fprintf(stderr, "bench_gas: %s: no forward and sensitivities_all_multipliers median_cpu_ms in\n%s\n",
                    argv[9], cj);
            return 1;
        }
        if (has_sens) /* gas_cantera.py with SENS_ROUNDS 0 leaves them out */
            printf(",\n \"vs_cantera\": {\"cantera_forward_cpu_ms\": %.3f, \"cantera_sensitivities_cpu_ms\": %.3f, "
                   "\"forward_time_ratio\": %.4g, \"sensitivity_speedup\": %.4g}",
                   cfwd, csens, mf / cfwd, csens / mg);
        else
            printf(",\n \"vs_cantera\": {\"cantera_forward_cpu_ms\": %.3f, \"forward_time_ratio\": %.4g}", cfwd,
                   mf / cfwd);
        printf(",\n \"vs_cantera_bdf\": {\"cantera_forward_cpu_ms\": %.3f, \"forward_time_ratio\": %.4g}", cfwd,
               mb / cfwd);
        free(cj);
    }
    printf("}\n");
    remat_pfr_free(fwd);
    remat_pfr_free(sens);
    remat_pfr_free(bdf);
    free(outb), free(tb), free(cb);
    remat_mechanism_free(m);
    free(y0), free(p), free(out), free(grad), free(tf), free(tg), free(cf), free(cg);
    return 0;
}
