/* pfr_cli_warn.c — the warnings for concentrations an integration made negative: pfr simulate's
 * (pfr_cli.h) and pfr fit's (pfr_fit_out.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "pfr_cli.h"
#include "pfr_fit_out.h"

#define PROFILE_CAP ((int64_t)1 << 25) /* doubles of a profile run only to say where (256 MiB) */

void pfr_cli_negative_json(FILE *out, const remat_mechanism *m, const pfr_negative *neg, const char *const *files)
{
    if (!neg || !neg->found) {
        fputs("null", out);
        return;
    }
    fprintf(out, "{\"species\": ");
    cli_json_string(out, remat_mechanism_species_name(m, neg->species));
    fprintf(out, ", \"value\": %.17g", neg->value);
    if (!isnan(neg->at))
        fprintf(out, ", \"at\": %.17g", neg->at);
    if (!isnan(neg->outlet))
        fprintf(out, ", \"outlet\": %.17g", neg->outlet);
    if (neg->experiment >= 0 && files) {
        fprintf(out, ", \"data\": ");
        cli_json_string(out, files[neg->experiment]);
    }
    fputc('}', out);
}

int pfr_cli_warn_negative(remat_pfr *r, const double *params, const char *what, const double *outlet, int64_t rows,
                          const double *z, const double *y, pfr_negative *neg)
{
    if (neg)
        *neg = (pfr_negative){.experiment = -1, .at = NAN, .outlet = NAN};
    const remat_mechanism *m = remat_pfr_mechanism(r);
    int S = remat_mechanism_species_count(m), s = 0;
    int64_t row = 0;
    double *zz = NULL, *yy = NULL;
    if (!y && outlet && remat_pfr_negative(r, 1, outlet, NULL, &s) && remat_pfr_steps(r) < PROFILE_CAP / (S + 1)) {
        /* where it first went below zero: the profile, when it can be had */
        rows = remat_pfr_steps(r) + 1;
        zz = malloc(sizeof *zz * (size_t)rows);
        yy = malloc(sizeof *yy * (size_t)rows * (size_t)S);
        if (zz && yy && remat_pfr_profile(r, params, zz, yy) == REMAT_OK)
            z = zz, y = yy;
    }
    int found = 1;
    if (y && remat_pfr_negative(r, rows, y, &row, &s)) {
        if (neg)
            *neg = (pfr_negative){1, s, y[(size_t)row * (size_t)S + (size_t)s], z[row],
                                  y[(size_t)(rows - 1) * (size_t)S + (size_t)s], -1};
        fprintf(stderr,
                "remat: warning: %s%s: the concentration of '%s' is %.6g at %s = %.6g, below zero by more than "
                "rounding (at the outlet: %.6g); the step is too large for the rates, or a rate drives it "
                "negative: these are not concentrations to trust\n",
                what, remat_mechanism_source(m), remat_mechanism_species_name(m, s),
                y[(size_t)row * (size_t)S + (size_t)s], remat_mechanism_indep_name(m), z[row],
                y[(size_t)(rows - 1) * (size_t)S + (size_t)s]);
    } else if (outlet && remat_pfr_negative(r, 1, outlet, NULL, &s)) {
        if (neg)
            *neg = (pfr_negative){1, s, outlet[s], NAN, outlet[s], -1};
        fprintf(stderr,
                "remat: warning: %s%s: the outlet concentration of '%s' is %.6g, below zero by more than rounding; "
                "the step is too large for the rates, or a rate drives it negative: not a concentration to trust\n",
                what, remat_mechanism_source(m), remat_mechanism_species_name(m, s), outlet[s]);
    } else {
        found = 0;
    }
    free(zz);
    free(yy);
    return found;
}

#define FIT_CHECK_POINTS 401    /* the fitted model is looked at on this grid over each experiment */
#define FIT_CHECK_STEPS (1 << 20) /* ... when its fixed steps over the grid are no more than this */

int pfr_fit_warn_negative(const remat_mechanism *m, remat_fit *fit, remat_dataset *const *data, int n_data,
                          const double *params, double rtol, double atol, void *negp)
{
    pfr_negative *neg = negp;
    if (neg)
        *neg = (pfr_negative){.experiment = -1, .at = NAN, .outlet = NAN};
    int S = remat_mechanism_species_count(m), n = FIT_CHECK_POINTS;
    double *t = malloc(sizeof *t * (size_t)n), *y = malloc(sizeof *y * (size_t)n * (size_t)S);
    int found = 0;
    for (int e = 0; t && y && !found && e < n_data; e++) {
        size_t R = remat_dataset_rows(data[e]);
        const double *td = remat_dataset_times(data[e]), *y0 = remat_fit_initial_state(fit, e);
        for (int i = 0; i < n; i++) /* from the initial state at 0, as the fit integrates */
            t[i] = td[R - 1] * (double)i / (n - 1);
        double h = remat_fit_predict_step(fit);
        if (h > 0 && td[R - 1] / h > FIT_CHECK_STEPS)
            continue; /* log-spaced data at its finest step: the check would cost more than the fit */
        int64_t row = 0;
        int s = 0;
        found = y0 && remat_fit_predict(fit, e, params, n, t, y) == REMAT_OK &&
                remat_pfr_negative_states(m, y0, rtol, atol, n, y, &row, &s);
        if (found && neg)
            *neg = (pfr_negative){1, s, y[(size_t)row * (size_t)S + s], t[row], NAN, e};
        if (found)
            fprintf(stderr,
                    "remat: warning: %s: the fitted model's '%s' is %.6g at %s = %.6g, below zero by more than "
                    "rounding: the step is too large for the fitted rates, or a rate drives it negative; take more "
                    "steps or a smaller --dt\n",
                    remat_dataset_path(data[e]), remat_mechanism_species_name(m, s), y[(size_t)row * (size_t)S + s],
                    remat_dataset_indep_name(data[e]), t[row]);
    }
    free(t);
    free(y);
    return found;
}
