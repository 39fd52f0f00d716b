/* cmd_pfr_optimize.c — `remat pfr optimize`: a reactor's outlet objective
 * optimised over the free parameters, by bounded quasi-Newton
 * (remat_pfr_minimize: lbfgs-b, slsqp) or Adam (the seed's loop). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"
#include "pfr_names.h"
#include "pfr_optimize.h"
#include "plot_opts.h"

enum { OPT_OPTIMIZER = PFR_OPT_COUNT_, OPT_LR, OPT_ITERS, OPT_MIN_PARAM, OPT_FIX, OPT_FREE, OPT_GTOL, OPT_XTOL };

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat pfr optimize [--mechanism FILE] [--maximize S | --minimize S]\n"
            "                          [--optimizer lbfgs-b|slsqp|adam] [--fix NAMES | --free NAMES]\n"
            "                          [--iters N] [--gtol X] [--xtol X] [--lr X] [--min-param X]\n"
            "                          [--init A=1,B=0] [--params k1=0.5,k2=0.3] [--length L]\n"
            "                          [--steps N | --dt H] [--method euler|rk4|tsit5|dopri5|rodas5]\n"
            "                          [--rtol R] [--atol A] [--max-steps N] [--cond T=350] [--adjoint A]\n"
            "                          [--schedule S] [--json] [--plot FILE [--log-x] [--log-y]]\n"
            "                          [--thermo FILE] [--energy E]\n"
            "\n"
            "Optimises an outlet concentration of the reactor over the mechanism's parameters (the\n"
            "decision variables: all, or those --free names, or all but those --fix names; the\n"
            "header names them), the gradient by reverse mode through the integration.\n"
            "  lbfgs-b  NLopt's L-BFGS with box constraints (the default with --mechanism)\n"
            "  slsqp    NLopt's SLSQP: a BFGS model whose steps stay within the bounds (a projected\n"
            "           quasi-Newton)\n"
            "  adam     optax.adam, projected on the bounds after each update (the default for the\n"
            "           built-in problem: the seed's loop)\n"
            "lbfgs-b and slsqp stop when the projected gradient, relative (Dennis & Schnabel:\n"
            "max |g_i| max(|p_i|, 1) / |C|), is below --gtol, the step below --xtol, or after --iters\n"
            "evaluations; the output says which test held. The table shows every evaluation.\n"
            "Adam's table shows every 10th iteration and the last: the parameters after the update\n"
            "and the concentration before it, as the seed's JAX loop prints them.\n"
            "Bounds: a parameter's declared bounds (\"param k = 1 in [lo, hi]\", a control profile's\n"
            "\"in [lo, hi]\"); a parameter declared without bounds gets [--min-param, inf). The\n"
            "declared bounds (even -inf) win: --min-param never replaces a declared bound, and a\n"
            "network's weights ('net' lines) are unbounded.\n"
            "With no options: the seed's run (maximize C_B of the built-in A->B->C reactor from\n"
            "k1 = 0.5, k2 = 0.3 with Adam, lr 0.1, 50 iterations, min-param 0.01).\n"
            "It integrates as pfr simulate does: with --mechanism (or --method tsit5, dopri5 or\n"
            "rodas5, or a tolerance) adaptively, unless --steps/--dt ask for fixed steps.\n"
            "\n"
            "%s%s%s"
            "                     (default for the built-in mechanism: --maximize B; required with\n"
            "                     --mechanism)\n"
            "  --optimizer NAME   lbfgs-b, slsqp or adam (see above)\n"
            "  --fix NAMES        keep these parameters (comma separated) at their start\n"
            "  --free NAMES       optimise only these parameters\n"
            "  --iters N          adam: iterations (default 50); lbfgs-b, slsqp: most evaluations\n"
            "                     (default 500)\n"
            "  --gtol X           lbfgs-b, slsqp: relative projected gradient test (default 1e-8)\n"
            "  --xtol X           lbfgs-b, slsqp: relative step test (default 1e-12)\n"
            "  --lr X             adam: learning rate (default 0.1)\n"
            "  --min-param X      lower bound of every parameter declared without bounds (default\n"
            "                     0.01); declared bounds win\n"
            "  --schedule S       checkpoint schedule of the reverse pass (default binomial:10)\n"
            "  --json             print one JSON document with every iteration, full precision\n"
            "  --plot FILE        draw the concentration per iteration (.png, .svg, .pdf, .ps)\n"
            "%s%s"
            "\n"
            "--params gives the start (default: the declared values; for the built-in mechanism\n"
            "the seed's start k1=0.5,k2=0.3).\n",
            pfr_cli_help_reactor_adaptive, pfr_cli_help_tol, pfr_cli_help_goal, plot_opts_help_log,
            pfr_cli_help_gas);
}

/* "Optimizing rate constants to maximize intermediate B:" (the built-in
 * problem; else the decision variables by name) and the seed's columns,
 * f"{x:<10}" each */
static void print_table(const pfr_setup *su, const bool *fixed, int64_t iters, const double *cb, const double *pa,
                        const double *p, double final)
{
    const remat_mechanism *m = su->mech;
    int P = su->P;
    const char *sp = remat_mechanism_species_name(m, su->opt.species);
    int maxi = su->opt.goal == REMAT_PFR_MAXIMIZE;
    int any_fixed = 0;
    for (int i = 0; i < P; i++)
        any_fixed |= fixed[i];
    pfr_opt_header(su, fixed, su->builtin && !any_fixed ? NULL : "adam"); /* NULL: the seed's header */
    char col[80];
    int cols = 0; /* the decision variables' columns (fixed ones have none) */
    printf("%-10s", "Iteration");
    for (int i = 0; i < P; i++)
        if (!fixed[i]) {
            printf(" %-10s", remat_mechanism_param_name(m, i));
            cols++;
        }
    snprintf(col, sizeof col, "C_%s", sp);
    printf(" %-10s\n", col);
    for (int i = 0; i < 10 * (cols + 2); i++)
        putchar('-');
    putchar('\n');
    for (int64_t it = 0; it < iters; it++) {
        if (it % 10 != 0 && it != iters - 1)
            continue;
        printf("%-10lld", (long long)it);
        for (int i = 0; i < P; i++)
            if (!fixed[i])
                printf(" %-10.4f", pa[(size_t)it * (size_t)P + (size_t)i]);
        printf(" %-10.6f\n", cb[it]);
    }
    printf("\nOptimal: ");
    for (int i = 0, k = 0; i < P; i++)
        if (!fixed[i])
            printf("%s%s=%.4f", k++ ? ", " : "", remat_mechanism_param_name(m, i), p[i]);
    printf("\n%s %s concentration: %.6f\n", maxi ? "Maximum" : "Minimum", sp, final);
}

static void print_json(const pfr_setup *su, const remat_pfr *r, const remat_adam_options *ao, int64_t iters,
                       const double *start, const double *cb, const double *pa, const double *p, double final)
{
    const remat_mechanism *m = su->mech;
    int P = su->P;
    pfr_opt_print_json_head(su, r);
    printf("  \"optimizer\": {\"name\": \"adam\", \"lr\": %.17g, \"b1\": %.17g, \"b2\": %.17g, \"eps\": %.17g, "
           "\"iterations\": %lld},\n",
           ao->lr, ao->b1, ao->b2, ao->eps, (long long)iters);
    printf("  \"lower_bounds\": ");
    pfr_opt_print_params(m, P, ao->lo);
    printf(",\n  \"start\": ");
    pfr_opt_print_params(m, P, start);
    printf(",\n  \"history\": [\n");
    for (int64_t it = 0; it < iters; it++) {
        printf("    {\"iteration\": %lld, \"concentration_before\": %.17g, \"params_after\": ", (long long)it, cb[it]);
        pfr_opt_print_params(m, P, pa + (size_t)it * (size_t)P);
        printf("}%s\n", it + 1 < iters ? "," : "");
    }
    printf("  ],\n  \"optimum\": {\"params\": ");
    pfr_opt_print_params(m, P, p);
    printf(", \"concentration\": %.17g}\n}\n", final);
}

static plot_opts plot_axes; /* --log-x, --log-y */

static int plot(const char *path, const pfr_setup *su, const char *optimizer, const char *xlabel, int64_t iters,
                const double *cb)
{
    double *x = malloc(sizeof *x * (size_t)iters);
    if (!x) {
        fprintf(stderr, "remat: --plot: out of memory\n");
        return 0;
    }
    for (int64_t i = 0; i < iters; i++)
        x[i] = (double)i;
    const char *sp = remat_mechanism_species_name(su->mech, su->opt.species);
    char label[80], title[256];
    snprintf(label, sizeof label, "C_%s at the outlet", sp);
    snprintf(title, sizeof title, "%s: %s %s, %s", optimizer, su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize",
             sp, su->name);
    cli_series s = {.label = label, .n = (int)iters, .x = x, .y = cb};
    int ok = cli_plot(path, title, xlabel, label, plot_axes.log_x, plot_axes.log_y, 1, &s);
    free(x);
    return ok;
}

static const char *const optimizer_names[] = {"lbfgs-b", "slsqp", "adam"};
enum { OPTIMIZER_LBFGSB, OPTIMIZER_SLSQP, OPTIMIZER_ADAM };

typedef struct {
    int optimizer;             /* -1: the default */
    const char *fix, *free;
    double lr, min_param, gtol, xtol;
    int64_t iters;
    int has_lr, has_iters, has_gtol, has_xtol;
} opt_args;

/* The box: declared bounds, min_param for a parameter declared without
 * bounds ("in [-inf, 0]" is a declaration: its -inf is kept; a network's
 * weight is declared unbounded by its 'net' line); a fixed parameter's box
 * is its start. */
static int bounds(const pfr_setup *su, const opt_args *a, const bool *fixed, double *lo, double *hi)
{
    for (int i = 0; i < su->P; i++) {
        double dlo = remat_mechanism_param_lo(su->mech, i);
        hi[i] = remat_mechanism_param_hi(su->mech, i);
        int declared = isfinite(dlo) || isfinite(hi[i]) || remat_mechanism_param_net(su->mech, i) >= 0;
        lo[i] = declared ? dlo : a->min_param;
        if (fixed[i]) {
            lo[i] = hi[i] = su->params[i];
            continue;
        }
        if (su->params[i] < lo[i] || su->params[i] > hi[i]) {
            fprintf(stderr, "remat: the start %s=%g lies outside its bounds [%g, %g] (%s); give --params within "
                            "them\n",
                    remat_mechanism_param_name(su->mech, i), su->params[i], lo[i], hi[i],
                    declared ? "declared" : "--min-param");
            return 0;
        }
    }
    return 1;
}

static int run_adam(const pfr_setup *su, const opt_args *a, const bool *fixed, const double *lo, const double *hi,
                    const char *plot_path, int json)
{
    int P = su->P, status = 1;
    int64_t iters = a->iters;
    remat_pfr *r = NULL;
    double *start = calloc((size_t)P + 1, sizeof *start), *cb = calloc((size_t)iters, sizeof *cb);
    double *pa = calloc((size_t)iters * (size_t)P + 1, sizeof *pa), final = 0;
    if (!start || !cb || !pa) {
        fprintf(stderr, "remat: out of memory for %lld iterations\n", (long long)iters);
        goto done;
    }
    memcpy(start, su->params, sizeof *start * (size_t)P);
    remat_adam_options ao = remat_adam_optax(a->lr);
    ao.lo = lo;
    ao.hi = hi;
    if (remat_pfr_new(su->mech, &su->opt, &r) != REMAT_OK ||
        remat_pfr_adam(r, &ao, iters, su->params, cb, pa, &final) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        goto done;
    }
    if ((plot_path && !plot(plot_path, su, "Adam", "iteration", iters, cb)) || !cli_outputs_finish())
        goto done;
    if (json)
        print_json(su, r, &ao, iters, start, cb, pa, su->params, final);
    else
        print_table(su, fixed, iters, cb, pa, su->params, final);
    status = 0;
done:
    free(start);
    free(cb);
    free(pa);
    remat_pfr_free(r);
    return status;
}

static int run_qn(const pfr_setup *su, const opt_args *a, int which, const bool *fixed, const double *lo,
                  const double *hi, const char *plot_path, int json)
{
    int P = su->P, status = 1;
    remat_pfr *r = NULL;
    pfr_opt_history h = {.P = P};
    double *start = calloc((size_t)P + 1, sizeof *start), *conc = NULL;
    if (!start) {
        fprintf(stderr, "remat: out of memory\n");
        return 1;
    }
    memcpy(start, su->params, sizeof *start * (size_t)P);
    remat_pfr_minimize_options mo = {
        .method = which == OPTIMIZER_SLSQP ? REMAT_PFR_SLSQP : REMAT_PFR_LBFGSB,
        .lo = lo,
        .hi = hi,
        .fixed = fixed,
        .max_evals = a->has_iters ? (int)a->iters : 500,
        .gtol = a->has_gtol ? a->gtol : 1e-8,
        .xtol = a->has_xtol ? a->xtol : 1e-12,
        .progress = pfr_opt_record,
        .progress_ctx = &h,
    };
    remat_pfr_minimize_result res;
    if (remat_pfr_new(su->mech, &su->opt, &r) != REMAT_OK ||
        remat_pfr_minimize(r, &mo, su->params, &res) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        goto done;
    }
    if (h.failed || !(conc = malloc(sizeof *conc * (size_t)(h.n + 1)))) {
        fprintf(stderr, "remat: out of memory for the history\n");
        goto done;
    }
    for (int e = 0; e < h.n; e++)
        conc[e] = pfr_opt_conc(su, h.obj[e]);
    if ((plot_path && !plot(plot_path, su, optimizer_names[which], "evaluation", h.n, conc)) || !cli_outputs_finish())
        goto done;
    if (!res.converged)
        fprintf(stderr, "remat: warning: %s; the result is the best point found, not an optimum\n", res.message);
    if (json)
        pfr_opt_print_json(su, r, fixed, optimizer_names[which], &mo, start, &h, &res, su->params);
    else
        pfr_opt_print_table(su, fixed, optimizer_names[which], &h, &res, su->params);
    status = 0;
done:
    free(start);
    free(conc);
    pfr_opt_history_free(&h);
    remat_pfr_free(r);
    return status;
}

/* fixed[] from --fix (these kept) or --free (only these optimised); neither:
 * none fixed. 0 with a message. */
static int fixed_params(const opt_args *a, const remat_mechanism *m, bool *fixed)
{
    int P = remat_mechanism_param_count(m);
    if (a->fix && a->free) {
        fprintf(stderr, "remat: --free and --fix: give one of them, not both\n");
        return 0;
    }
    for (int i = 0; i < P; i++)
        fixed[i] = a->free != NULL;
    if (!a->fix && !a->free)
        return 1;
    bool *named = calloc((size_t)P + 1, sizeof *named);
    int ok = named && pfr_names_params(a->free ? "--free" : "--fix", a->free ? a->free : a->fix, m, named);
    for (int i = 0; ok && i < P; i++)
        if (named[i])
            fixed[i] = a->fix != NULL;
    free(named);
    return ok;
}

/* --gtol, --xtol: a relative tolerance, finite and >= 0 (0: the default) */
static int test_tolerance(const char *opt, const char *arg, double *out)
{
    if (!cli_double(opt, arg, out))
        return 0;
    if (*out < 0) {
        fprintf(stderr, "remat: %s: %s: a relative tolerance must be >= 0\n", opt, arg);
        return 0;
    }
    return 1;
}

/* The options of optimize's own: 1 taken, 0 a bad value (message), -1 not one */
static int own_option(int code, opt_args *a)
{
    switch (code) {
    case OPT_OPTIMIZER:
        for (int k = 0; k < 3; k++)
            if (!strcmp(optarg, optimizer_names[k]))
                a->optimizer = k;
        if (a->optimizer < 0) {
            fprintf(stderr, "remat: --optimizer: unknown optimizer '%s' (expected lbfgs-b, slsqp or adam)\n", optarg);
            return 0;
        }
        return 1;
    case OPT_LR: a->has_lr = 1; return pfr_cli_positive("--lr", optarg, "learning rate", &a->lr);
    case OPT_ITERS: a->has_iters = 1; return cli_int64("--iters", optarg, 1, 10000000, &a->iters);
    case OPT_MIN_PARAM: return cli_double("--min-param", optarg, &a->min_param);
    case OPT_GTOL: a->has_gtol = 1; return test_tolerance("--gtol", optarg, &a->gtol);
    case OPT_XTOL: a->has_xtol = 1; return test_tolerance("--xtol", optarg, &a->xtol);
    case OPT_FIX: a->fix = optarg; return 1;
    case OPT_FREE: a->free = optarg; return 1;
    default: return -1;
    }
}

int cmd_pfr_optimize(int argc, char **argv)
{
    static const struct option opts[] = {
        PFR_CLI_OPTIONS,
        PFR_CLI_TOL_OPTIONS,
        {"schedule", required_argument, 0, PFR_OPT_SCHEDULE},
        {"optimizer", required_argument, 0, OPT_OPTIMIZER},
        {"lr", required_argument, 0, OPT_LR},
        {"iters", required_argument, 0, OPT_ITERS},
        {"min-param", required_argument, 0, OPT_MIN_PARAM},
        {"fix", required_argument, 0, OPT_FIX},
        {"free", required_argument, 0, OPT_FREE},
        {"gtol", required_argument, 0, OPT_GTOL},
        {"xtol", required_argument, 0, OPT_XTOL},
        {"plot", required_argument, 0, 'p'},
        PLOT_OPTS_LOG_OPTIONS,
        {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const remat_pfr_seed_problem *seed = remat_pfr_seed();
    pfr_cli c = {.adaptive_ok = PFR_ADAPTIVE_DEFAULT}; /* simulate's choice of integration */
    opt_args a = {.optimizer = -1, .lr = seed->lr, .min_param = seed->min_param, .iters = seed->iters};
    const char *plot_path = NULL;
    int json = 0, code;
    while ((code = pfr_cli_next(&c, argc, argv, opts)) != -1) {
        if (code == PFR_CLI_BAD_VALUE)
            return 2;
        if (plot_opts_option(&plot_axes, code, optarg) == 1)
            continue;
        int own = own_option(code, &a);
        if (own == 0)
            return 2;
        if (own == 1)
            continue;
        switch (code) {
        case 'p': plot_path = optarg; break;
        case 'j': json = 1; break;
        case 'h': help(stdout); return 0;
        default: return pfr_cli_bad_option("pfr optimize", code, argv);
        }
    }
    if (!pfr_cli_no_operands("pfr optimize", argc, argv) || !plot_opts_check(&plot_axes, plot_path != NULL))
        return 2;
    pfr_setup su;
    if (!pfr_cli_setup(&c, PFR_GOAL_REQUIRED, 1, &su))
        return 2;
    /* the seed's loop for the built-in problem, a quasi-Newton method else */
    int which = a.optimizer >= 0 ? a.optimizer : su.builtin ? OPTIMIZER_ADAM : OPTIMIZER_LBFGSB;
    int P = su.P, status = 2;
    double *lo = calloc((size_t)P + 1, sizeof *lo), *hi = calloc((size_t)P + 1, sizeof *hi);
    bool *fixed = calloc((size_t)P + 1, sizeof *fixed);
    if (!lo || !hi || !fixed) {
        fprintf(stderr, "remat: out of memory\n");
        goto done;
    }
    if (which == OPTIMIZER_ADAM && (a.has_gtol || a.has_xtol)) {
        fprintf(stderr, "remat: %s: applies to --optimizer lbfgs-b and slsqp only (Adam runs --iters iterations)\n",
                a.has_gtol ? "--gtol" : "--xtol");
        goto done;
    }
    if (which != OPTIMIZER_ADAM && a.has_lr) {
        fprintf(stderr, "remat: --lr: applies to --optimizer adam only (%s takes its own steps)\n",
                optimizer_names[which]);
        goto done;
    }
    if (!fixed_params(&a, su.mech, fixed) || !bounds(&su, &a, fixed, lo, hi))
        goto done;
    int n_free = 0;
    for (int i = 0; i < P; i++)
        n_free += !fixed[i];
    if (n_free == 0) {
        fprintf(stderr, "remat: %s: every parameter of %s is fixed: nothing to optimise\n",
                a.fix ? "--fix" : "--free", su.name);
        goto done;
    }
    if (plot_path && !cli_plot_check(plot_path))
        goto done;
    if (which == OPTIMIZER_ADAM) {
        if (!a.has_iters)
            a.iters = seed->iters;
        status = run_adam(&su, &a, fixed, lo, hi, plot_path, json);
    } else {
        status = run_qn(&su, &a, which, fixed, lo, hi, plot_path, json);
    }
done:
    free(lo);
    free(hi);
    free(fixed);
    pfr_setup_free(&su);
    return status;
}
