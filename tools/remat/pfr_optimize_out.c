/* pfr_optimize_out.c — `remat pfr optimize`'s quasi-Newton output (pfr_optimize.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_optimize.h"
#include "plot_opts.h"

/* What the goal species is: a gas mechanism's T is a temperature (K), its
 * species mole fractions; a .mech file's species concentrations. */
static int goal_is_temperature(const pfr_setup *su) { return su->opt.species == plot_temperature_state(su->mech); }

void pfr_opt_record(const remat_pfr_minimize_progress *p, void *ctx)
{
    pfr_opt_history *h = ctx;
    if (h->failed)
        return;
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        double *o = realloc(h->obj, sizeof *o * (size_t)cap);
        if (o)
            h->obj = o;
        double *r = realloc(h->rel, sizeof *r * (size_t)cap);
        if (r)
            h->rel = r;
        double *q = realloc(h->params, sizeof *q * (size_t)cap * (size_t)(h->P ? h->P : 1));
        if (q)
            h->params = q;
        if (!o || !r || !q) {
            h->failed = 1;
            return;
        }
        h->cap = cap;
    }
    h->obj[h->n] = p->objective;
    h->rel[h->n] = p->rel_grad;
    memcpy(h->params + (size_t)h->n * (size_t)h->P, p->params, sizeof *p->params * (size_t)h->P);
    h->n++;
}

void pfr_opt_history_free(pfr_opt_history *h)
{
    free(h->obj);
    free(h->rel);
    free(h->params);
    memset(h, 0, sizeof *h);
}

double pfr_opt_conc(const pfr_setup *su, double objective)
{
    return su->opt.goal == REMAT_PFR_MAXIMIZE ? -objective : objective;
}

static void name_list(const remat_mechanism *m, int P, const bool *fixed, bool want_fixed)
{
    for (int i = 0, k = 0; i < P; i++)
        if ((fixed && fixed[i]) == want_fixed)
            printf("%s%s", k++ ? ", " : "", remat_mechanism_param_name(m, i));
}

void pfr_opt_header(const pfr_setup *su, const bool *fixed, const char *optimizer)
{
    const remat_mechanism *m = su->mech;
    int P = su->P, n_fixed = 0;
    for (int i = 0; fixed && i < P; i++)
        n_fixed += fixed[i];
    const char *sp = remat_mechanism_species_name(m, su->opt.species), *role = remat_pfr_species_role(m, su->opt.species);
    printf("Optimizing ");
    if (su->builtin && !optimizer && n_fixed == 0) {
        printf("rate constants"); /* the seed's words: k1 and k2 are */
    } else {
        name_list(m, P, fixed, false);
        if (n_fixed) {
            printf(" (");
            name_list(m, P, fixed, true);
            printf(" fixed)");
        }
    }
    printf(" to %s %s%s%s", su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize", role, *role ? " " : "", sp);
    if (optimizer)
        printf(" with %s", optimizer);
    printf(":\n");
}

void pfr_opt_print_table(const pfr_setup *su, const bool *fixed, const char *optimizer, const pfr_opt_history *h,
                         const remat_pfr_minimize_result *res, const double *p)
{
    const remat_mechanism *m = su->mech;
    int P = su->P, cols = 0;
    const char *sp = remat_mechanism_species_name(m, su->opt.species);
    pfr_opt_header(su, fixed, optimizer);
    char col[80];
    printf("%-10s", "Evaluation");
    for (int i = 0; i < P; i++)
        if (!fixed || !fixed[i]) {
            printf(" %-12s", remat_mechanism_param_name(m, i));
            cols++;
        }
    if (goal_is_temperature(su))
        snprintf(col, sizeof col, "%s (K)", sp);
    else
        snprintf(col, sizeof col, "%s_%s", remat_gas_species_count(m) ? "X" : "C", sp);
    printf(" %-12s %s\n", col, "rel. gradient");
    for (int i = 0; i < 10 + 13 * (cols + 1) + 14; i++)
        putchar('-');
    putchar('\n');
    for (int e = 0; e < h->n; e++) {
        printf("%-10d", e);
        for (int i = 0; i < P; i++)
            if (!fixed || !fixed[i])
                printf(" %-12.7g", h->params[(size_t)e * (size_t)P + (size_t)i]);
        printf(" %-12.7g %.3g\n", pfr_opt_conc(su, h->obj[e]), h->rel[e]);
    }
    printf("\n%s", res->message);
    if (res->at_bound)
        printf("; %d at a bound", res->at_bound);
    printf("\nOptimal: ");
    for (int i = 0, k = 0; i < P; i++)
        if (!fixed || !fixed[i])
            printf("%s%s=%.8g", k++ ? ", " : "", remat_mechanism_param_name(m, i), p[i]);
    const char *goal = su->opt.goal == REMAT_PFR_MAXIMIZE ? "Maximum" : "Minimum";
    if (goal_is_temperature(su))
        printf("\n%s %s: %.8g K\n", goal, sp, pfr_opt_conc(su, res->objective));
    else
        printf("\n%s %s %s: %.8g\n", goal, sp, remat_gas_species_count(su->mech) ? "mole fraction" : "concentration",
               pfr_opt_conc(su, res->objective));
}

void pfr_opt_print_params(const remat_mechanism *m, int P, const double *p)
{
    printf("{");
    for (int i = 0; i < P; i++) {
        printf("%s\"%s\": ", i ? ", " : "", remat_mechanism_param_name(m, i));
        if (isfinite(p[i]))
            printf("%.17g", p[i]);
        else
            printf("null");
    }
    printf("}");
}

static void json_names(const remat_mechanism *m, int P, const bool *fixed, bool want_fixed)
{
    printf("[");
    for (int i = 0, k = 0; i < P; i++)
        if ((fixed && fixed[i]) == want_fixed) {
            printf("%s", k++ ? ", " : "");
            cli_json_string(stdout, remat_mechanism_param_name(m, i));
        }
    printf("]");
}

void pfr_opt_print_json_head(const pfr_setup *su, const remat_pfr *r)
{
    printf("{\n  \"mechanism\": ");
    cli_json_string(stdout, su->name);
    printf(",\n  \"method\": \"%s\",\n  \"length\": %.17g,\n", remat_ode_method_name(su->opt.method), su->opt.length);
    if (su->opt.adaptive)
        printf("  \"adaptive\": true,\n  \"rtol\": %.17g,\n  \"atol\": %.17g,\n", su->opt.rtol, su->opt.atol);
    else
        printf("  \"adaptive\": false,\n  \"steps\": %lld,\n", (long long)remat_pfr_steps(r));
    printf("  \"schedule\": \"%s\",\n", su->schedule);
    printf("  \"adjoint\": \"%s\",\n", remat_ode_adjoint_name(su->opt.adjoint));
    printf("  \"goal\": \"%s\",\n  \"species\": ", su->opt.goal == REMAT_PFR_MAXIMIZE ? "maximize" : "minimize");
    cli_json_string(stdout, remat_mechanism_species_name(su->mech, su->opt.species));
    printf(",\n");
}

void pfr_opt_print_json(const pfr_setup *su, const remat_pfr *r, const bool *fixed, const char *optimizer,
                        const remat_pfr_minimize_options *mo, const double *start, const pfr_opt_history *h,
                        const remat_pfr_minimize_result *res, const double *p)
{
    const remat_mechanism *m = su->mech;
    int P = su->P;
    pfr_opt_print_json_head(su, r);
    printf("  \"optimizer\": {\"name\": \"%s\", \"max_evaluations\": %d, \"gtol\": %.17g, \"xtol\": %.17g},\n",
           optimizer, mo->max_evals, mo->gtol, mo->xtol);
    printf("  \"decision_variables\": ");
    json_names(m, P, fixed, false);
    printf(",\n  \"fixed\": ");
    json_names(m, P, fixed, true);
    printf(",\n  \"lower_bounds\": ");
    pfr_opt_print_params(m, P, mo->lo);
    printf(",\n  \"upper_bounds\": ");
    pfr_opt_print_params(m, P, mo->hi);
    printf(",\n  \"start\": ");
    pfr_opt_print_params(m, P, start);
    if (remat_mechanism_cond_count(m) > 0) { /* constants of the run, never optimised */
        printf(",\n  \"conditions\": {");
        for (int k = 0; k < remat_mechanism_cond_count(m); k++)
            printf("%s\"%s\": %.17g", k ? ", " : "", remat_mechanism_cond_name(m, k), su->conds[k]);
        printf("}");
    }
    printf(",\n  \"history\": [\n");
    for (int e = 0; e < h->n; e++) {
        printf("    {\"evaluation\": %d, \"concentration\": %.17g, \"relative_gradient\": %.17g, \"params\": ", e,
               pfr_opt_conc(su, h->obj[e]), h->rel[e]);
        pfr_opt_print_params(m, P, h->params + (size_t)e * (size_t)P);
        printf("}%s\n", e + 1 < h->n ? "," : "");
    }
    printf("  ],\n  \"convergence\": {\"converged\": %s, \"evaluations\": %d, \"rejected\": %d, "
           "\"relative_gradient\": %.17g, \"at_bound\": %d, \"message\": ",
           res->converged ? "true" : "false", res->evaluations, res->rejected, res->rel_grad, res->at_bound);
    cli_json_string(stdout, res->message);
    printf("},\n  \"optimum\": {\"params\": ");
    pfr_opt_print_params(m, P, p);
    printf(", \"concentration\": %.17g}\n}\n", pfr_opt_conc(su, res->objective));
}
