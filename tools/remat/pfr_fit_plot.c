/* pfr_fit_plot.c — `remat pfr fit`'s plots (pfr_fit_out.h): the fitted model against the data (--plot)
 * and the residuals at the optimum (--plot-residuals). */
#include "pfr_fit_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PLOT_POINTS 400 /* model curve points per experiment */

/* The model curve's times for data times t[0..R): PLOT_POINTS equal steps from
 * 0 to the last, or on a log x axis log-spaced from the first positive data
 * time (1e-6 of the last when none), as a log axis shows them. */
static void curve_times(const double *t, size_t R, int log_x, double *tc)
{
    double t1 = t[R - 1], tmin = t1 * 1e-6;
    for (size_t i = 0; i < R; i++)
        if (t[i] > 0) {
            tmin = fmin(t[i], t1);
            break;
        }
    for (int i = 0; i < PLOT_POINTS; i++) {
        double f = (double)i / (PLOT_POINTS - 1);
        tc[i] = log_x && tmin > 0 && tmin < t1 ? tmin * pow(t1 / tmin, f) : t1 * f;
    }
    tc[PLOT_POINTS - 1] = t1;
}

int pfr_fit_plot(const char *path, const plot_opts *po, const pfr_fit_report *rep)
{
    const remat_mechanism *m = rep->m;
    remat_fit *fit = rep->fit;
    remat_dataset *const *data = rep->datasets;
    int n_data = rep->n_data;
    const remat_fit_result *r = rep->r;
    int S = remat_mechanism_species_count(m);
    bool *show = calloc((size_t)S + 1, sizeof *show);
    if (!show || !plot_opts_species(po, m, show)) {
        free(show);
        return 0;
    }
    /* a gas mechanism's T, the state's last entry, so its series come last: a panel of its own */
    int iT = plot_temperature_state(m), np = 0;
    cli_panel *panels = calloc((size_t)n_data * 2, sizeof *panels);
    cli_series *series = calloc((size_t)n_data * (size_t)S * 2, sizeof *series);
    double *buf = calloc((size_t)n_data * ((size_t)PLOT_POINTS * (1 + (size_t)S) + 0), sizeof *buf);
    double *pts = NULL;
    char(*titles)[160] = calloc((size_t)n_data, sizeof *titles);
    size_t npts = 0;
    for (int e = 0; e < n_data; e++)
        npts += remat_dataset_rows(data[e]) * (size_t)S * 2;
    pts = calloc(npts ? npts : 1, sizeof *pts);
    int ok = panels && series && buf && pts && titles;
    size_t used = 0;
    for (int e = 0; ok && e < n_data; e++) {
        const remat_dataset *d = data[e];
        size_t R = remat_dataset_rows(d);
        const double *t = remat_dataset_times(d);
        double *tc = buf + (size_t)e * PLOT_POINTS * (1 + (size_t)S), *yc = tc + PLOT_POINTS;
        curve_times(t, R, po->log_x, tc); /* from the initial state, t = 0, on a linear axis */
        if (remat_fit_predict(fit, e, r->params, PLOT_POINTS, tc, yc) != REMAT_OK) {
            fprintf(stderr, "remat: --plot: %s\n", remat_last_error());
            ok = 0;
            break;
        }
        /* yc is [points][S]: transpose in place of a copy per species */
        double *tmp = malloc(sizeof *tmp * PLOT_POINTS * (size_t)S);
        if (!tmp) {
            ok = 0;
            break;
        }
        for (int i = 0; i < PLOT_POINTS; i++)
            for (int s = 0; s < S; s++)
                tmp[(size_t)s * PLOT_POINTS + (size_t)i] = yc[(size_t)i * (size_t)S + (size_t)s];
        memcpy(yc, tmp, sizeof *tmp * PLOT_POINTS * (size_t)S);
        free(tmp);
        cli_series *ser = series + (size_t)e * (size_t)S * 2;
        int ns = 0, nT = 0;
        for (int s = 0; s < S; s++) {
            if (!remat_dataset_has_column(d, s) || !show[s])
                continue; /* an unmeasured species: no data to compare, keep the panel readable */
            nT += s == iT ? 2 : 0; /* its curve and its points */
            ser[ns++] = (cli_series){.label = remat_mechanism_species_name(m, s), .n = PLOT_POINTS, .x = tc,
                                     .y = yc + (size_t)s * PLOT_POINTS, .color = 1 + s};
            double *px = pts + used, *py = px + R;
            int n = 0;
            for (size_t row = 0; row < R; row++)
                if (remat_dataset_is_measured(d, row, s)) {
                    px[n] = t[row];
                    py[n] = remat_dataset_value(d, row, s);
                    n++;
                }
            used += 2 * R;
            ser[ns++] = (cli_series){.n = n, .x = px, .y = py, .points_only = 1, .color = 1 + s};
        }
        const char *base = strrchr(remat_dataset_path(d), '/');
        char conds[96];
        int nc = pfr_fit_conditions_text(rep, e, conds, sizeof conds);
        snprintf(titles[e], sizeof titles[e], "%s%s%s%s: fit (lines) and data (points)",
                 base ? base + 1 : remat_dataset_path(d), nc ? " (" : "", conds, nc ? ")" : "");
        if (ns > nT || !nT)
            panels[np++] = (cli_panel){.title = titles[e], .xlabel = remat_dataset_indep_name(d),
                                       .ylabel = plot_species_label(m), .logx = po->log_x, .logy = po->log_y,
                                       .n_series = ns - nT, .series = ser};
        if (nT)
            panels[np++] = (cli_panel){.title = titles[e], .xlabel = remat_dataset_indep_name(d),
                                       .ylabel = PLOT_TEMPERATURE_LABEL, .logx = po->log_x, .logy = po->log_y,
                                       .n_series = nT, .series = ser + ns - nT};
    }
    if (ok)
        ok = cli_plot_panels(path, np, panels);
    free(show);
    free(panels);
    free(series);
    free(buf);
    free(pts);
    free(titles);
    return ok;
}

int pfr_fit_plot_residuals(const char *path, const plot_opts *po, const pfr_fit_report *rep,
                           remat_dataset *const *data, int row0, const double *res)
{
    int S = remat_mechanism_species_count(rep->m), n_data = rep->n_data;
    bool *show = calloc((size_t)S + 1, sizeof *show);
    if (!show || !plot_opts_species(po, rep->m, show)) {
        free(show);
        return 0;
    }
    int64_t N = remat_fit_residual_count(rep->fit);
    /* a gas mechanism's T residuals are kelvin, not mole fractions: a panel
     * of their own after the experiment's species panel, as --plot draws T */
    int iT = plot_temperature_state(rep->m), np = 0;
    double *xy = malloc(sizeof *xy * 2 * (size_t)(N + 1));
    cli_panel *panels = calloc((size_t)n_data * 2, sizeof *panels);
    cli_series *series = calloc((size_t)n_data * (size_t)S, sizeof *series);
    char(*titles)[160] = calloc((size_t)n_data, sizeof *titles);
    int ok = xy && panels && series && titles;
    if (!ok)
        fprintf(stderr, "remat: --plot-residuals: out of memory for %d panels\n", n_data);
    /* residuals come experiment by experiment, row by row, species in
     * mechanism order: regroup them by species into (time, residual) runs */
    int64_t first = 0, used = 0;
    for (int e = 0; ok && e < n_data; e++) {
        const remat_dataset *d = data[e];
        /* the first row is the initial state (no residual) unless --init or
         * the file's '# A = ...' lines give every species, or the mechanism
         * is a gas one, whose first row is data (remat/fit.h) */
        int all_init = 1;
        for (int s = 0; s < remat_dataset_species_count(d); s++)
            all_init &= !isnan(remat_dataset_initial(d, s));
        size_t R = remat_dataset_rows(d), row1 = row0 && !all_init && iT < 0 ? 1 : 0;
        const double *t = remat_dataset_times(d);
        cli_series *ser = series + (size_t)e * (size_t)S;
        int ns = 0, nT = 0;
        int64_t k = first;
        for (int s = 0; s < S; s++) {
            if (!remat_dataset_has_column(d, s))
                continue;
            int n = 0;
            for (size_t row = row1; row < R; row++)
                n += remat_dataset_is_measured(d, row, s);
            double *x = xy + used, *y = x + n;
            n = 0;
            k = first;
            for (size_t row = row1; row < R; row++)
                for (int s2 = 0; s2 < S; s2++)
                    if (remat_dataset_is_measured(d, row, s2)) {
                        if (s2 == s) {
                            x[n] = t[row];
                            y[n++] = res[k];
                        }
                        k++;
                    }
            used += 2 * n;
            if (!show[s])
                continue;
            nT += s == iT; /* T is the state's last entry: its series comes last */
            ser[ns++] = (cli_series){.label = remat_mechanism_species_name(rep->m, s), .n = n, .x = x, .y = y,
                                     .points_only = 1, .color = 1 + s};
        }
        first = k;
        const char *base = strrchr(remat_dataset_path(d), '/');
        const bool weighted = rep->sigma || rep->relative;
        snprintf(titles[e], sizeof titles[e], "%s: residuals%s", base ? base + 1 : remat_dataset_path(d),
                 weighted ? " (weighted)" : " (model - data)");
        if (ns > nT || !nT)
            panels[np++] = (cli_panel){.title = titles[e], .xlabel = remat_dataset_indep_name(d),
                                       .ylabel = "residual", .logx = po->log_x, .n_series = ns - nT, .series = ser};
        if (nT)
            panels[np++] = (cli_panel){.title = titles[e], .xlabel = remat_dataset_indep_name(d),
                                       .ylabel = weighted ? PLOT_TEMPERATURE_RESIDUAL_LABEL_WEIGHTED
                                                          : PLOT_TEMPERATURE_RESIDUAL_LABEL,
                                       .logx = po->log_x, .n_series = nT, .series = ser + ns - nT};
    }
    if (ok && first != N) { /* each residual drawn at its own cell, every one once */
        fprintf(stderr, "%s:%d: internal error: --plot-residuals placed %lld of the fit's %lld residuals\n", __FILE__,
                __LINE__, (long long)first, (long long)N);
        abort();
    }
    if (ok)
        ok = cli_plot_panels_for("--plot-residuals", path, np, panels);
    free(xy);
    free(show);
    free(panels);
    free(series);
    free(titles);
    return ok;
}
