/*
 * pfr_fit_out.h — what `remat pfr fit` prints (the table or one JSON
 * document: pfr_fit_out.c) and draws (pfr_fit_plot.c): the fit, the
 * multi-start spread, the weights and the statistics at the optimum
 * (remat/fit.h).
 */
#ifndef REMAT_TOOL_PFR_FIT_OUT_H
#define REMAT_TOOL_PFR_FIT_OUT_H

#include <stdint.h>
#include <stdio.h>

#include "plot_opts.h"
#include "remat/remat.h"

typedef struct {
    const char *mechanism;       /* --mechanism path */
    const char *const *data;     /* [n_data] --data paths */
    int n_data;
    const char *method;          /* the integration method's name */
    int adaptive;                /* error-controlled steps at rtol, atol */
    double rtol, atol;
    const double *ode_stats;     /* [REMAT_ODE_STATS] at the optimum (remat_fit_integration_stats), or NULL */
    const remat_mechanism *m;
    remat_fit *fit;
    const remat_fit_result *r;
    const double *start;         /* [P] the declared (or --params) start */
    double seconds;
    const double *sigma;         /* [S] or NULL (unweighted) */
    int relative;                /* --weighting relative */
    uint64_t seed;               /* of the random starts (r->n_starts > 1) */
    const remat_fit_stats *stats;/* NULL when they could not be computed: */
    const char *stats_why;       /* why */
    int history;                 /* --history: the iterates in --json */
    remat_dataset *const *datasets; /* [n_data]: their conditions */
    const double *cond_default;  /* [cond_count] --cond or the declared values */
    const void *negative;        /* pfr_negative * (pfr_cli.h): the fitted model below zero, for --json */
    const double *delays;        /* [n_data] the fitted ignition delays (remat_fit_delays, every
                                    rank's), NaN where none; NULL without delay experiments */
} pfr_fit_report;

/* Experiment e's value of condition k: its file's, else rep->cond_default's. */
double pfr_fit_cond(const pfr_fit_report *rep, int e, int k);
/* Experiment e's conditions as the table prints them ("T = 330", a gas
 * mechanism's "T = 1000, P = 101325") into buf; returns how many (0: ""). */
int pfr_fit_conditions_text(const pfr_fit_report *rep, int e, char *buf, size_t cap);

/* --out DIR: DIR exists and every DIR/<data file name> may be written (no
 * input, no two experiments' files the same); 0 with a message. */
int pfr_fit_check_profiles(const char *dir, const char *const *data, int n_data);
/* Experiment e's model at params through its data times into DIR/<data file
 * name> (a header of the independent variable and every species, %.17g),
 * committed for cli_outputs_finish (all files or none). 0 with a message. */
int pfr_fit_write_profiles(const char *dir, const pfr_fit_report *rep, const double *params);

void pfr_fit_print_table(const pfr_fit_report *rep);
/* One line per failed start of r (r->start_messages): "start K failed,
 * from k1=..., k2=...: MESSAGE", indented by indent; nothing when none
 * failed. The table prints it; cmd_pfr_fit prints it on stderr when every
 * start failed. */
void pfr_fit_print_failed_starts(FILE *f, const char *indent, const remat_mechanism *m, const remat_fit_result *r);
void pfr_fit_print_json(const pfr_fit_report *rep);

/* Warns on stderr (remat_pfr_negative_states' rule, with the fit's rtol and
 * atol when adaptive, else 0) when the fitted model goes below zero on 401
 * points from 0 to an experiment's last data time (between data times too:
 * an overshoot need not land on one): the file, species, time and value of
 * the first.
 * Experiments whose fixed-step prediction would take more than 2^20 steps
 * (log-spaced data at the finest step) are not looked at. Returns 1 when it
 * warned. */
struct pfr_negative_;
int pfr_fit_warn_negative(const remat_mechanism *m, remat_fit *fit, remat_dataset *const *data, int n_data,
                          const double *params, double rtol, double atol, void *neg /* pfr_negative * */);

/* The fitted model against the data (--plot): one panel per experiment,
 * titled with its file and conditions, a model curve per measured species
 * from its initial state through its last data time, its data as points in
 * the same colour. 0 with a message on error. */
int pfr_fit_plot(const char *path, const plot_opts *po, const pfr_fit_report *rep);

/* Residuals (weighted, as fitted) against the independent variable, one
 * panel per experiment, one series of points per measured species. row0:
 * whether each file's first row was taken as the initial state (then it has
 * no residual). res: remat_fit_residuals at the optimum, which the caller
 * computes on every rank (a collective under mpirun); this function is rank
 * 0's alone. 0 with a message naming --plot-residuals on error. */
int pfr_fit_plot_residuals(const char *path, const plot_opts *po, const pfr_fit_report *rep,
                           remat_dataset *const *data, int row0, const double *res);

#endif
