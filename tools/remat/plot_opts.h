/*
 * plot_opts.h — the options every `remat pfr` plot takes: --log-x, --log-y
 * (log10 axes labelled by decade; values <= 0 are left out) and --species
 * LIST (the species a plot of concentrations draws, by name).
 *
 *   static const struct option opts[] = { ..., PLOT_OPTS_OPTIONS, ... };
 *   plot_opts po = {0};
 *   ... case where plot_opts_option(&po, code, optarg) == 1 ...
 *   if (!plot_opts_check(&po, plot_path != NULL, 1)) return 2;
 *   bool show[S]; if (!plot_opts_species(&po, m, show)) return 2;
 */
#ifndef REMAT_TOOL_PLOT_OPTS_H
#define REMAT_TOOL_PLOT_OPTS_H

#include <getopt.h>
#include <stdbool.h>

#include "remat/remat.h"

enum { PLOT_OPT_LOG_X = 900, PLOT_OPT_LOG_Y, PLOT_OPT_SPECIES };

#define PLOT_OPTS_OPTIONS                                                                                     \
    {"log-x", no_argument, 0, PLOT_OPT_LOG_X}, {"log-y", no_argument, 0, PLOT_OPT_LOG_Y},                     \
        {"species", required_argument, 0, PLOT_OPT_SPECIES}
/* the same without --species, for a plot that is not of species */
#define PLOT_OPTS_LOG_OPTIONS {"log-x", no_argument, 0, PLOT_OPT_LOG_X}, {"log-y", no_argument, 0, PLOT_OPT_LOG_Y}

/* Help lines for them. */
extern const char plot_opts_help[];     /* --log-x, --log-y, --species */
extern const char plot_opts_help_log[]; /* --log-x, --log-y */

typedef struct {
    int log_x, log_y;
    const char *species; /* NULL: every species */
} plot_opts;

/* 1 when code is one of them (stored), -1 when not. */
int plot_opts_option(plot_opts *po, int code, const char *arg);
/* 0 with a message when one is given without a plot to apply to. */
int plot_opts_check(const plot_opts *po, int have_plot);
/* show[s] for every species of m: all, or those --species lists (each a
 * species of m, once). 0 with a message naming --species and the species. */
int plot_opts_species(const plot_opts *po, const remat_mechanism *m, bool *show);
/* A gas mechanism's temperature, the last state (remat/gas.h), which the
 * plots draw in a panel of its own, "T (K)", off the mole-fraction axis;
 * -1 for other mechanisms. */
int plot_temperature_state(const remat_mechanism *m);
/* The y label of the species: "mole fraction" for a gas mechanism, else
 * "concentration". */
const char *plot_species_label(const remat_mechanism *m);
#define PLOT_TEMPERATURE_LABEL "T (K)"
/* --plot-residuals' T panel: model - data in kelvin, or weighted (no unit) */
#define PLOT_TEMPERATURE_RESIDUAL_LABEL "T residual (K)"
#define PLOT_TEMPERATURE_RESIDUAL_LABEL_WEIGHTED "T residual (weighted)"

#endif
