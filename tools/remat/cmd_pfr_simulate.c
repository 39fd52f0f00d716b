/* cmd_pfr_simulate.c — `remat pfr simulate`: a reactor's outlet, profile and objective gradient. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"
#include "plot_opts.h"

#define PLOT_POINTS 2000 /* a plotted profile is thinned to about this many points */

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat pfr simulate [--mechanism FILE] [--init A=1,B=0] [--params k1=1,k2=0.5]\n"
            "                          [--length L] [--steps N | --dt H | --rtol R --atol A --max-steps N]\n"
            "                          [--method euler|rk4|tsit5|dopri5|rodas5|bdf] [--cond T=350]\n"
            "                          [--maximize S | --minimize S] [--schedule S] [--adjoint A]\n"
            "                          [--out profile.csv] [--plot FILE [--log-x] [--log-y] [--species LIST]]\n"
            "                          [--json] [--thermo FILE] [--energy E]\n"
            "\n"
            "Integrates the mechanism along a plug-flow reactor from the inlet (z = 0) to the\n"
            "outlet (z = L) and prints the inlet and outlet concentrations, their sums (the mass\n"
            "balance of a mechanism that conserves moles), and the gradient of the objective\n"
            "with respect to every parameter, by reverse mode through the integration.\n"
            "With no options: the seed's A->B->C reactor (k1 = 1, k2 = 0.5, 1000 Euler steps over\n"
            "L = 10) and the gradient of -C_B. With --mechanism, or --method tsit5|dopri5|rodas5, and\n"
            "neither --steps nor --dt: adaptive steps with error control (Tsit5 unless --method says\n"
            "otherwise), the profile at 100 equal intervals; euler and rk4 take 1000 fixed steps\n"
            "unless told otherwise. --method bdf (variable-order BDF, forward only) prints the outlet\n"
            "and its integrator's counts (steps, right-hand sides, Jacobians, LU factorisations), no\n"
            "gradient.\n"
            "\n"
            "%s%s"
            "                     (default for the built-in mechanism: --maximize B; with --mechanism\n"
            "                     and neither, no gradient is computed)\n"
            "  --schedule S       checkpoint schedule of the gradient's reverse pass (default binomial:10);\n"
            "                     it changes memory and time, never the numbers\n"
            "  --out FILE         write the profile as CSV: the axial coordinate (the mechanism's\n"
            "                     independent variable) then one column per species, one row per step\n"
            "  --plot FILE        draw the profiles (.png, .svg, .pdf, .ps)\n"
            "%s"
            "  --rtol R           adaptive: relative tolerance (default 1e-6)\n"
            "  --atol A           adaptive: absolute tolerance (default 1e-9)\n"
            "  --max-steps N      adaptive: attempts before the integration fails (default 4096)\n"
            "  --json             print one JSON document, numbers in full precision\n"
            "%s",
            pfr_cli_help_reactor_adaptive, pfr_cli_help_goal, plot_opts_help, pfr_cli_help_gas);
}

/* the shortest %g that reads back as v: 0.1, not 0.10000000000000001 */
static void put_double(FILE *f, double v)
{
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

static int write_csv(FILE *f, const remat_mechanism *m, int64_t rows, int S, const double *z, const double *y)
{
    fprintf(f, "%s", remat_mechanism_indep_name(m));
    for (int s = 0; s < S; s++)
        fprintf(f, ",%s", remat_mechanism_species_name(m, s));
    fputc('\n', f);
    for (int64_t i = 0; i < rows; i++) {
        put_double(f, z[i]);
        for (int s = 0; s < S; s++) {
            fputc(',', f);
            put_double(f, y[(size_t)i * (size_t)S + (size_t)s]);
        }
        fputc('\n', f);
    }
    return !ferror(f);
}

static int plot_profile(const char *path, const plot_opts *po, const pfr_setup *su, int64_t rows, const double *z,
                        const double *y)
{
    int S = su->S;
    int64_t stride = rows > PLOT_POINTS ? (rows + PLOT_POINTS - 1) / PLOT_POINTS : 1;
    int n = (int)((rows - 1) / stride) + 1 + ((rows - 1) % stride != 0); /* keep the outlet */
    double *xs = malloc(sizeof *xs * (size_t)n), *ys = malloc(sizeof *ys * (size_t)n * (size_t)S);
    cli_series *ser = calloc((size_t)S, sizeof *ser);
    int ok = xs && ys && ser;
    if (!ok)
        fprintf(stderr, "remat: --plot: out of memory\n");
    for (int k = 0; ok && k < n; k++) {
        int64_t i = k < n - 1 ? (int64_t)k * stride : rows - 1;
        xs[k] = z[i];
        for (int s = 0; s < S; s++)
            ys[(size_t)s * (size_t)n + (size_t)k] = y[(size_t)i * (size_t)S + (size_t)s];
    }
    bool *show = calloc((size_t)S + 1, sizeof *show);
    ok = ok && show && plot_opts_species(po, su->mech, show);
    /* a gas mechanism's T, the state's last entry, so its series comes last: a panel of its own */
    int ns = 0, iT = plot_temperature_state(su->mech);
    for (int s = 0; ok && s < S; s++)
        if (show[s])
            ser[ns++] = (cli_series){.label = remat_mechanism_species_name(su->mech, s), .n = n, .x = xs,
                                     .y = ys + (size_t)s * (size_t)n, .color = 1 + s};
    int nT = iT >= 0 && ok && show[iT];
    /* the file's name, not its path, so that the title fits above each panel; a gas
     * reactor's axis is the residence time (s) and its curves mole fractions */
    char title[256], xlabel[96];
    const char *base = strrchr(su->name, '/');
    snprintf(title, sizeof title, "PFR profiles: %s", base ? base + 1 : su->name);
    if (iT >= 0)
        snprintf(xlabel, sizeof xlabel, "residence time %s (s)", remat_mechanism_indep_name(su->mech));
    else
        snprintf(xlabel, sizeof xlabel, "reactor length %s", remat_mechanism_indep_name(su->mech));
    cli_panel panels[2] = {{.title = title, .xlabel = xlabel, .ylabel = plot_species_label(su->mech),
                            .logx = po->log_x, .logy = po->log_y, .n_series = ns - nT, .series = ser},
                           {.title = title, .xlabel = xlabel, .ylabel = PLOT_TEMPERATURE_LABEL, .logx = po->log_x,
                            .logy = po->log_y, .n_series = nT, .series = ser + ns - nT}};
    if (ok && nT)
        ok = ns > nT ? cli_plot_panels(path, 2, panels) : cli_plot_panels(path, 1, panels + 1);
    else if (ok)
        ok = cli_plot(path, title, xlabel, plot_species_label(su->mech), po->log_x, po->log_y, ns, ser);
    free(show);
    free(xs);
    free(ys);
    free(ser);
    return ok;
}

/* bdf's own counts: one more integration through remat_ode_bdf_run on the reactor's options */
static int bdf_counts(const pfr_setup *su, remat_ode_bdf_stats *bs)
{
    int P = su->P, C = remat_mechanism_cond_count(su->mech);
    double L = su->opt.length, *in = calloc((size_t)(P + C) + 1, sizeof *in);
    if (!in) {
        fprintf(stderr, "remat: out of memory\n");
        return 0;
    }
    memcpy(in, su->params, sizeof *in * (size_t)P);
    memcpy(in + P, su->conds, sizeof *in * (size_t)C);
    remat_ode_options o = {.method = REMAT_ODE_BDF, .n_times = 1, .times = &L, .adaptive = true,
                           .rtol = su->opt.rtol, .atol = su->opt.atol, .max_steps = su->opt.max_steps};
    int ok = remat_ode_bdf_run(su->mech, &o, su->inlet, in, NULL, bs) == REMAT_OK;
    if (!ok)
        fprintf(stderr, "remat: %s\n", remat_last_error());
    free(in);
    return ok;
}

static void print_table(const pfr_setup *su, const remat_pfr *r, const double *ode_stats, const double *out,
                        int have_grad, double obj, const double *grad, const remat_ode_bdf_stats *bs)
{
    const remat_mechanism *m = su->mech;
    int S = su->S, P = su->P, w = 7, wp = 0;
    for (int s = 0; s < S; s++)
        w = fmax(w, (int)strlen(remat_mechanism_species_name(m, s)));
    for (int i = 0; i < P; i++)
        wp = fmax(wp, (int)strlen(remat_mechanism_param_name(m, i)));
    printf("PFR simulation: %s\n", su->name);
    if (su->opt.adaptive)
        printf("  adaptive %s over L = %.9g (rtol %g, atol %g): %.0f accepted steps, %.0f rejected\n",
               remat_ode_method_name(su->opt.method), su->opt.length, su->opt.rtol, su->opt.atol,
               ode_stats[REMAT_ODE_STAT_ACCEPTED], ode_stats[REMAT_ODE_STAT_REJECTED]);
    if (bs)
        printf("  bdf: %lld steps, %lld error-test and %lld Newton failures, %lld right-hand sides, %lld Jacobians, "
               "%lld LU factorisations\n",
               (long long)bs->steps, (long long)bs->rejected, (long long)bs->newton_failures,
               (long long)bs->rhs_evals, (long long)bs->jacobians, (long long)bs->lu);
    if (!su->opt.adaptive)
        printf("  %s, %lld steps of %.9g over L = %.9g\n", remat_ode_method_name(su->opt.method),
               (long long)remat_pfr_steps(r), remat_pfr_step_size(r), su->opt.length);
    if (P) {
        printf("  params");
        for (int i = 0; i < P; i++)
            printf("%s %s = %.9g", i ? "," : "", remat_mechanism_param_name(m, i), su->params[i]);
        printf("\n");
    }
    if (remat_mechanism_cond_count(m) > 0) {
        printf("  conditions");
        for (int k = 0; k < remat_mechanism_cond_count(m); k++)
            printf("%s %s = %.9g", k ? "," : "", remat_mechanism_cond_name(m, k), su->conds[k]);
        printf("\n");
    }
    printf("\n%-*s  %-16s %s\n", w, "species", "inlet", "outlet");
    double sin_ = 0, sout = 0;
    int K = remat_gas_species_count(m) ? remat_gas_species_count(m) : S; /* a gas state ends with T: not summed */
    for (int s = 0; s < S; s++) {
        printf("%-*s  %-16.9g %.9g\n", w, remat_mechanism_species_name(m, s), su->inlet[s], out[s]);
        sin_ += s < K ? su->inlet[s] : 0;
        sout += s < K ? out[s] : 0;
    }
    printf("%-*s  %-16.9g %-16.9g (mass balance: outlet - inlet = %.3g)\n", w, "sum", sin_, sout, sout - sin_);
    if (!have_grad) {
        if (P && bs)
            printf("\nno gradient: bdf integrates forward only (rodas5 gives the gradient)\n");
        else if (P)
            printf("\nno objective: --maximize S or --minimize S prints its gradient\n");
        return;
    }
    const char *sp = remat_mechanism_species_name(m, su->opt.species);
    const char *sign = su->opt.goal == REMAT_PFR_MAXIMIZE ? "-" : "";
    if (su->opt.adjoint == REMAT_ODE_ADJOINT_BACKSOLVE)
        printf("\nobjective %sC_%s(L) = %.9g (%s %s); its gradient, backsolve adjoint:\n", sign, sp, obj,
               su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize", sp);
    else
        printf("\nobjective %sC_%s(L) = %.9g (%s %s); its gradient, schedule %s:\n", sign, sp, obj,
               su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize", sp, su->schedule);
    for (int i = 0; i < P; i++)
        printf("  d(%sC_%s)/d%-*s = %.9g\n", sign, sp, wp, remat_mechanism_param_name(m, i), grad[i]);
}

static void print_json(const pfr_setup *su, const remat_pfr *r, const double *ode_stats, const double *out,
                       int have_grad, double obj, const double *grad, const char *csv, const pfr_negative *neg,
                       const remat_ode_bdf_stats *bs)
{
    const remat_mechanism *m = su->mech;
    int S = su->S, P = su->P;
    printf("{\n  \"mechanism\": ");
    cli_json_string(stdout, su->name);
    printf(",\n  \"method\": \"%s\",\n  \"length\": %.17g,\n  \"steps\": %lld,\n  \"step_size\": %.17g,\n",
           remat_ode_method_name(su->opt.method), su->opt.length, (long long)remat_pfr_steps(r),
           remat_pfr_step_size(r));
    printf("  \"integrator\": {\"method\": \"%s\", \"adaptive\": %s", remat_ode_method_name(su->opt.method),
           su->opt.adaptive ? "true" : "false");
    if (su->opt.adaptive)
        printf(", \"rtol\": %.17g, \"atol\": %.17g", su->opt.rtol, su->opt.atol);
    printf(", \"accepted\": %.0f, \"rejected\": %.0f", ode_stats[REMAT_ODE_STAT_ACCEPTED],
           ode_stats[REMAT_ODE_STAT_REJECTED]);
    if (bs)
        printf(", \"steps\": %lld, \"error_test_failures\": %lld, \"newton_failures\": %lld, \"rhs_evals\": %lld, "
               "\"jacobians\": %lld, \"lu\": %lld",
               (long long)bs->steps, (long long)bs->rejected, (long long)bs->newton_failures,
               (long long)bs->rhs_evals, (long long)bs->jacobians, (long long)bs->lu);
    printf("},\n");
    printf("  \"params\": {");
    for (int i = 0; i < P; i++)
        printf("%s\"%s\": %.17g", i ? ", " : "", remat_mechanism_param_name(m, i), su->params[i]);
    double sin_ = 0, sout = 0;
    if (remat_mechanism_cond_count(m) > 0) { /* a mechanism without conditions: as before */
        printf("},\n  \"conditions\": {");
        for (int k = 0; k < remat_mechanism_cond_count(m); k++)
            printf("%s\"%s\": %.17g", k ? ", " : "", remat_mechanism_cond_name(m, k), su->conds[k]);
    }
    int K = remat_gas_species_count(m) ? remat_gas_species_count(m) : S; /* gas: mole fractions summed, not T */
    printf("},\n  \"inlet\": {");
    for (int s = 0; s < S; s++) {
        printf("%s\"%s\": %.17g", s ? ", " : "", remat_mechanism_species_name(m, s), su->inlet[s]);
        sin_ += s < K ? su->inlet[s] : 0;
    }
    printf("},\n  \"outlet\": {");
    for (int s = 0; s < S; s++) {
        printf("%s\"%s\": %.17g", s ? ", " : "", remat_mechanism_species_name(m, s), out[s]);
        sout += s < K ? out[s] : 0;
    }
    printf("},\n  \"sum_inlet\": %.17g,\n  \"sum_outlet\": %.17g,\n", sin_, sout);
    if (have_grad) {
        printf("  \"objective\": {\"goal\": \"%s\", \"species\": \"%s\", \"value\": %.17g, \"schedule\": \"%s\", "
               "\"adjoint\": \"%s\", \"gradient\": {",
               su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize",
               remat_mechanism_species_name(m, su->opt.species), obj, su->schedule,
               remat_ode_adjoint_name(su->opt.adjoint));
        for (int i = 0; i < P; i++)
            printf("%s\"%s\": %.17g", i ? ", " : "", remat_mechanism_param_name(m, i), grad[i]);
        printf("}},\n");
    } else {
        printf("  \"objective\": null,\n");
    }
    printf("  \"negative\": ");
    pfr_cli_negative_json(stdout, m, neg, NULL);
    printf(",\n  \"profile\": ");
    if (csv)
        cli_json_string(stdout, csv);
    else
        printf("null");
    printf("\n}\n");
}

int cmd_pfr_simulate(int argc, char **argv)
{
    static const struct option opts[] = {
        PFR_CLI_OPTIONS,
        {"schedule", required_argument, 0, PFR_OPT_SCHEDULE},
        {"out", required_argument, 0, 'o'},
        {"plot", required_argument, 0, 'p'},
        PLOT_OPTS_OPTIONS,
        {"json", no_argument, 0, 'j'},
        PFR_CLI_TOL_OPTIONS,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    pfr_cli c = {.adaptive_ok = PFR_ADAPTIVE_DEFAULT};
    const char *csv = NULL, *plot_path = NULL;
    plot_opts po = {0};
    int json = 0, code;
    while ((code = pfr_cli_next(&c, argc, argv, opts)) != -1) {
        if (plot_opts_option(&po, code, optarg) == 1)
            continue;
        switch (code) {
        case PFR_CLI_BAD_VALUE: return 2;
        case 'o': csv = optarg; break;
        case 'p': plot_path = optarg; break;
        case 'j': json = 1; break;
        case 'h': help(stdout); return 0;
        default: return pfr_cli_bad_option("pfr simulate", code, argv);
        }
    }
    if (!pfr_cli_no_operands("pfr simulate", argc, argv) || !plot_opts_check(&po, plot_path != NULL))
        return 2;
    pfr_setup su;
    if (!pfr_cli_setup(&c, PFR_GOAL_OPTIONAL, 0, &su))
        return 2;
    int status = 2;
    remat_pfr *r = NULL;
    cli_out out = {0};
    double *y = NULL, *z = NULL, *outlet = calloc((size_t)su.S + 1, sizeof *outlet);
    double *grad = calloc((size_t)su.P + 1, sizeof *grad), obj = 0;
    if (!outlet || !grad) {
        fprintf(stderr, "remat: out of memory\n");
        goto done;
    }
    /* every output is checked before the work starts, so a bad path costs nothing */
    if (plot_path && !cli_plot_check(plot_path))
        goto done;
    bool *show = calloc((size_t)su.S + 1, sizeof *show); /* --species named before any work */
    int species_ok = show && plot_opts_species(&po, su.mech, show);
    free(show);
    if (!species_ok)
        goto done;
    if (csv && !cli_out_open_for(&out, "--out", csv))
        goto done;
    status = 1;
    if (remat_pfr_new(su.mech, &su.opt, &r) != REMAT_OK || remat_pfr_outlet(r, su.params, outlet) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        goto done;
    }
    double ode_stats[REMAT_ODE_STATS];
    if (remat_pfr_integration_stats(r, su.params, ode_stats) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        goto done;
    }
    remat_ode_bdf_stats bdf_stats, *bs = NULL;
    if (su.opt.method == REMAT_ODE_BDF) {
        if (!bdf_counts(&su, &bdf_stats))
            goto done;
        bs = &bdf_stats;
    }
    int have_grad = su.opt.goal != REMAT_PFR_NO_GOAL && su.P > 0;
    if (have_grad && remat_pfr_objective(r, su.params, &obj, grad) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        goto done;
    }
    int64_t rows = remat_pfr_steps(r) + 1;
    if (csv || plot_path) {
        y = malloc(sizeof *y * (size_t)rows * (size_t)su.S);
        z = malloc(sizeof *z * (size_t)rows);
        if (!y || !z) {
            fprintf(stderr, "remat: pfr simulate: out of memory for a profile of %lld rows\n", (long long)rows);
            goto done;
        }
        if (remat_pfr_profile(r, su.params, z, y) != REMAT_OK) {
            fprintf(stderr, "remat: %s\n", remat_last_error());
            goto done;
        }
    }
    if (csv && !write_csv(out.f, su.mech, rows, su.S, z, y)) {
        cli_out_fail(&out, errno);
        goto done;
    }
    if (plot_path && !plot_profile(plot_path, &po, &su, rows, z, y))
        goto done;
    if ((csv && !cli_out_commit(&out)) || !cli_outputs_finish()) /* all or nothing */
        goto done;
    pfr_negative neg;
    pfr_cli_warn_negative(r, su.params, "", outlet, rows, z, y, &neg);
    if (json)
        print_json(&su, r, ode_stats, outlet, have_grad, obj, grad, csv, &neg, bs);
    else
        print_table(&su, r, ode_stats, outlet, have_grad, obj, grad, bs);
    status = 0;
done:
    if (out.f)
        cli_out_abort(&out);
    free(y);
    free(z);
    free(outlet);
    free(grad);
    remat_pfr_free(r);
    pfr_setup_free(&su);
    return status;
}
