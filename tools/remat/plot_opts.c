/* plot_opts.c — --log-x, --log-y, --species of every `remat pfr` plot (plot_opts.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_opts.h"
#include "pfr_cli.h"

const char plot_opts_help[] =
    "  --log-x            --plot: a log10 x axis labelled by decade (points at x <= 0 left out)\n"
    "  --log-y            --plot: a log10 y axis likewise\n"
    "  --species LIST     --plot: draw these species only, e.g. A,C (default: all)\n";
const char plot_opts_help_log[] =
    "  --log-x            --plot: a log10 x axis labelled by decade (points at x <= 0 left out)\n"
    "  --log-y            --plot: a log10 y axis likewise\n";

int plot_opts_option(plot_opts *po, int code, const char *arg)
{
    switch (code) {
    case PLOT_OPT_LOG_X: po->log_x = 1; return 1;
    case PLOT_OPT_LOG_Y: po->log_y = 1; return 1;
    case PLOT_OPT_SPECIES: po->species = arg; return 1;
    default: return -1;
    }
}

int plot_opts_check(const plot_opts *po, int have_plot)
{
    const char *opt = po->log_x ? "--log-x" : po->log_y ? "--log-y" : po->species ? "--species" : NULL;
    if (opt && !have_plot) {
        fprintf(stderr, "remat: %s: applies to a plot: give --plot FILE too\n", opt);
        return 0;
    }
    return 1;
}

int plot_opts_species(const plot_opts *po, const remat_mechanism *m, bool *show)
{
    int S = remat_mechanism_species_count(m), ok = 1;
    for (int s = 0; s < S; s++)
        show[s] = po->species == NULL;
    if (!po->species)
        return 1;
    char names[1024];
    pfr_cli_names(m, 0, names, sizeof names);
    char *copy = strdup(po->species);
    if (!copy) {
        fprintf(stderr, "remat: --species: out of memory\n");
        return 0;
    }
    for (char *p = copy; ok;) {
        char *item = p, *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        int s = remat_mechanism_species_find(m, item);
        if (!*item) {
            fprintf(stderr, "remat: --species: '%s': an empty name (expected NAME,NAME,... of: %s)\n", po->species,
                    names);
            ok = 0;
        } else if (s < 0) {
            fprintf(stderr, "remat: --species: '%s' is not a species of %s (species: %s)\n", item,
                    remat_mechanism_source(m), names);
            ok = 0;
        } else if (show[s]) {
            fprintf(stderr, "remat: --species: '%s' is given twice\n", item);
            ok = 0;
        } else {
            show[s] = true;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    free(copy);
    return ok;
}

int plot_temperature_state(const remat_mechanism *m)
{
    int K = remat_gas_species_count(m); /* the state is (X_1 .. X_K, T): T last */
    return K > 0 ? K : -1;
}

const char *plot_species_label(const remat_mechanism *m)
{
    return remat_gas_species_count(m) > 0 ? "mole fraction" : "concentration";
}
