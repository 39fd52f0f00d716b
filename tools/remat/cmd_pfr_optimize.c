/* cmd_pfr_optimize.c — `remat pfr optimize`: Adam on a reactor's outlet objective. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"

enum { OPT_OPTIMIZER = PFR_OPT_COUNT_, OPT_LR, OPT_ITERS, OPT_MIN_PARAM };

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat pfr optimize [--mechanism FILE] [--maximize S | --minimize S]\n"
            "                          [--optimizer adam] [--lr X] [--iters N] [--min-param X]\n"
            "                          [--init A=1,B=0] [--params k1=0.5,k2=0.3] [--length L]\n"
            "                          [--steps N | --dt H] [--method euler|rk4|tsit5|dopri5|rodas5]\n"
            "                          [--rtol R] [--atol A] [--max-steps N]\n"
            "                          [--schedule S] [--json] [--plot FILE]\n"
            "\n"
            "Optimises the mechanism's parameters for an outlet concentration of the reactor with\n"
            "Adam (optax.adam semantics), the gradient by reverse mode through the integration.\n"
            "Each iteration evaluates the objective and its gradient, takes one Adam step and\n"
            "projects the parameters on [max(min-param, declared lower bound), declared upper\n"
            "bound]. The table shows every 10th iteration and the last: the parameters after the\n"
            "update and the concentration before it, as the seed's JAX loop prints them.\n"
            "With no options: the seed's run (maximize C_B of the built-in A->B->C reactor from\n"
            "k1 = 0.5, k2 = 0.3, lr 0.1, 50 iterations, min-param 0.01).\n"
            "--method tsit5, dopri5 or rodas5 without --steps/--dt integrates adaptively.\n"
            "\n"
            "%s%s%s"
            "                     (default for the built-in mechanism: --maximize B; required with\n"
            "                     --mechanism)\n"
            "  --optimizer NAME   adam (the only one so far)\n"
            "  --lr X             learning rate (default 0.1)\n"
            "  --iters N          iterations (default 50)\n"
            "  --min-param X      lower bound of every parameter (default 0.01)\n"
            "  --schedule S       checkpoint schedule of the reverse pass (default binomial:10)\n"
            "  --json             print one JSON document with every iteration, full precision\n"
            "  --plot FILE        draw the concentration per iteration (.png, .svg, .pdf, .ps)\n"
            "\n"
            "--params gives the start (default: the declared values; for the built-in mechanism\n"
            "the seed's start k1=0.5,k2=0.3).\n",
            pfr_cli_help_reactor, pfr_cli_help_tol, pfr_cli_help_goal);
}

/* "Optimizing rate constants to maximize intermediate B:" and the seed's
 * columns, f"{x:<10}" each */
static void print_table(const pfr_setup *su, int64_t iters, const double *cb, const double *pa, const double *p,
                        double final)
{
    const remat_mechanism *m = su->mech;
    int P = su->P;
    const char *sp = remat_mechanism_species_name(m, su->opt.species), *role = remat_pfr_species_role(m, su->opt.species);
    int maxi = su->opt.goal == REMAT_PFR_MAXIMIZE;
    printf("Optimizing rate constants to %s %s%s%s:\n", maxi ? "maximize" : "minimize", role, *role ? " " : "", sp);
    char col[80];
    printf("%-10s", "Iteration");
    for (int i = 0; i < P; i++)
        printf(" %-10s", remat_mechanism_param_name(m, i));
    snprintf(col, sizeof col, "C_%s", sp);
    printf(" %-10s\n", col);
    for (int i = 0; i < 10 * (P + 2); i++)
        putchar('-');
    putchar('\n');
    for (int64_t it = 0; it < iters; it++) {
        if (it % 10 != 0 && it != iters - 1)
            continue;
        printf("%-10lld", (long long)it);
        for (int i = 0; i < P; i++)
            printf(" %-10.4f", pa[(size_t)it * (size_t)P + (size_t)i]);
        printf(" %-10.6f\n", cb[it]);
    }
    printf("\nOptimal: ");
    for (int i = 0; i < P; i++)
        printf("%s%s=%.4f", i ? ", " : "", remat_mechanism_param_name(m, i), p[i]);
    printf("\n%s %s concentration: %.6f\n", maxi ? "Maximum" : "Minimum", sp, final);
}

static void print_params(const remat_mechanism *m, int P, const double *p)
{
    printf("{");
    for (int i = 0; i < P; i++)
        printf("%s\"%s\": %.17g", i ? ", " : "", remat_mechanism_param_name(m, i), p[i]);
    printf("}");
}

static void print_json(const pfr_setup *su, const remat_pfr *r, const remat_adam_options *ao, int64_t iters,
                       const double *start, const double *cb, const double *pa, const double *p, double final)
{
    const remat_mechanism *m = su->mech;
    int P = su->P;
    printf("{\n  \"mechanism\": ");
    cli_json_string(stdout, su->name);
    printf(",\n  \"method\": \"%s\",\n  \"length\": %.17g,\n", remat_ode_method_name(su->opt.method), su->opt.length);
    if (su->opt.adaptive)
        printf("  \"adaptive\": true,\n  \"rtol\": %.17g,\n  \"atol\": %.17g,\n", su->opt.rtol, su->opt.atol);
    else
        printf("  \"adaptive\": false,\n  \"steps\": %lld,\n", (long long)remat_pfr_steps(r));
    printf("  \"schedule\": \"%s\",\n", su->schedule);
    printf("  \"goal\": \"%s\",\n  \"species\": \"%s\",\n",
           su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize",
           remat_mechanism_species_name(m, su->opt.species));
    printf("  \"optimizer\": {\"name\": \"adam\", \"lr\": %.17g, \"b1\": %.17g, \"b2\": %.17g, \"eps\": %.17g, "
           "\"iterations\": %lld},\n",
           ao->lr, ao->b1, ao->b2, ao->eps, (long long)iters);
    printf("  \"lower_bounds\": ");
    print_params(m, P, ao->lo);
    printf(",\n  \"start\": ");
    print_params(m, P, start);
    printf(",\n  \"history\": [\n");
    for (int64_t it = 0; it < iters; it++) {
        printf("    {\"iteration\": %lld, \"concentration_before\": %.17g, \"params_after\": ", (long long)it, cb[it]);
        print_params(m, P, pa + (size_t)it * (size_t)P);
        printf("}%s\n", it + 1 < iters ? "," : "");
    }
    printf("  ],\n  \"optimum\": {\"params\": ");
    print_params(m, P, p);
    printf(", \"concentration\": %.17g}\n}\n", final);
}

static int plot(const char *path, const pfr_setup *su, int64_t iters, const double *cb)
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
    snprintf(title, sizeof title, "Adam: %s %s, %s", su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize",
             sp, su->name);
    cli_series s = {.label = label, .n = (int)iters, .x = x, .y = cb};
    int ok = cli_plot(path, title, "iteration", label, 0, 0, 1, &s);
    free(x);
    return ok;
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
        {"plot", required_argument, 0, 'p'},
        {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const remat_pfr_seed_problem *seed = remat_pfr_seed();
    pfr_cli c = {.adaptive_ok = PFR_ADAPTIVE_ASKED};
    const char *plot_path = NULL;
    double lr = seed->lr, min_param = seed->min_param;
    int64_t iters = seed->iters;
    int json = 0, code;
    while ((code = pfr_cli_next(&c, argc, argv, opts)) != -1) {
        switch (code) {
        case PFR_CLI_BAD_VALUE: return 2;
        case OPT_OPTIMIZER:
            if (strcmp(optarg, "adam")) {
                fprintf(stderr, "remat: --optimizer: unknown optimizer '%s' (expected adam)\n", optarg);
                return 2;
            }
            break;
        case OPT_LR:
            if (!pfr_cli_positive("--lr", optarg, "learning rate", &lr))
                return 2;
            break;
        case OPT_ITERS: if (!cli_int64("--iters", optarg, 1, 10000000, &iters)) return 2; break;
        case OPT_MIN_PARAM: if (!cli_double("--min-param", optarg, &min_param)) return 2; break;
        case 'p': plot_path = optarg; break;
        case 'j': json = 1; break;
        case 'h': help(stdout); return 0;
        default: return pfr_cli_bad_option("pfr optimize", code, argv);
        }
    }
    if (!pfr_cli_no_operands("pfr optimize", argc, argv))
        return 2;
    pfr_setup su;
    if (!pfr_cli_setup(&c, PFR_GOAL_REQUIRED, 1, &su))
        return 2;
    int P = su.P, status = 2;
    remat_pfr *r = NULL;
    double *lo = calloc((size_t)P, sizeof *lo), *hi = calloc((size_t)P, sizeof *hi);
    double *start = calloc((size_t)P, sizeof *start), *cb = calloc((size_t)iters, sizeof *cb);
    double *pa = calloc((size_t)iters * (size_t)P, sizeof *pa), final = 0;
    if (!lo || !hi || !start || !cb || !pa) {
        fprintf(stderr, "remat: out of memory for %lld iterations\n", (long long)iters);
        goto done;
    }
    for (int i = 0; i < P; i++) {
        lo[i] = fmax(min_param, remat_mechanism_param_lo(su.mech, i));
        hi[i] = remat_mechanism_param_hi(su.mech, i);
        if (lo[i] > hi[i]) {
            fprintf(stderr, "remat: --min-param: %g is above the upper bound %g that %s declares for '%s'\n",
                    min_param, hi[i], su.name, remat_mechanism_param_name(su.mech, i));
            goto done;
        }
    }
    if (plot_path && !cli_plot_check(plot_path))
        goto done;
    memcpy(start, su.params, sizeof *start * (size_t)P);
    status = 1;
    remat_adam_options ao = remat_adam_optax(lr);
    ao.lo = lo;
    ao.hi = hi;
    if (remat_pfr_new(su.mech, &su.opt, &r) != REMAT_OK ||
        remat_pfr_adam(r, &ao, iters, su.params, cb, pa, &final) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        goto done;
    }
    if ((plot_path && !plot(plot_path, &su, iters, cb)) || !cli_outputs_finish())
        goto done;
    if (json)
        print_json(&su, r, &ao, iters, start, cb, pa, su.params, final);
    else
        print_table(&su, iters, cb, pa, su.params, final);
    status = 0;
done:
    free(lo);
    free(hi);
    free(start);
    free(cb);
    free(pa);
    remat_pfr_free(r);
    pfr_setup_free(&su);
    return status;
}
