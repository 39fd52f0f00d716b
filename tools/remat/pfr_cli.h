/*
 * pfr_cli.h — the options `remat pfr simulate|optimize|compare` share: which
 * mechanism (a file or the seed's built-in A->B->C), the inlet (--init), the
 * parameters (--params), the reactor's length and steps, the method, the
 * objective and the schedule; checked against the mechanism with messages
 * that name the option.
 *
 * Each command lists PFR_CLI_OPTIONS in its getopt_long table, reads its
 * options with pfr_cli_next() (which keeps the shared ones and hands back the
 * command's own), then calls pfr_cli_no_operands() and pfr_cli_setup():
 *
 *   pfr_cli c = {0};
 *   while ((code = pfr_cli_next(&c, argc, argv, opts)) != -1) {
 *       switch (code) {
 *       case PFR_CLI_BAD_VALUE: return 2;
 *       case 'j': json = 1; break;
 *       default: return pfr_cli_bad_option("pfr simulate", code, argv);
 *       }
 *   }
 *   if (!pfr_cli_no_operands("pfr simulate", argc, argv) || !pfr_cli_setup(&c, ..., &su))
 *       return 2;
 */
#ifndef REMAT_TOOL_PFR_CLI_H
#define REMAT_TOOL_PFR_CLI_H

#include <getopt.h>
#include <stdio.h>
#include <stdint.h>

#include "remat/remat.h"

enum {
    PFR_OPT_MECHANISM = 256,
    PFR_OPT_INIT,
    PFR_OPT_PARAMS,
    PFR_OPT_LENGTH,
    PFR_OPT_STEPS,
    PFR_OPT_DT,
    PFR_OPT_METHOD,
    PFR_OPT_MAXIMIZE,
    PFR_OPT_MINIMIZE,
    PFR_OPT_SCHEDULE,
    PFR_OPT_RTOL,
    PFR_OPT_ATOL,
    PFR_OPT_MAX_STEPS,
    PFR_OPT_ENERGY,
    PFR_OPT_COND,
    PFR_OPT_THERMO,
    PFR_OPT_ADJOINT,
    PFR_OPT_COUNT_
};

/* --rtol, --atol, --max-steps: in the option table of a command that sets
 * adaptive_ok (handled by pfr_cli_next like PFR_CLI_OPTIONS) */
#define PFR_CLI_TOL_OPTIONS                                                                                \
    {"rtol", required_argument, 0, PFR_OPT_RTOL}, {"atol", required_argument, 0, PFR_OPT_ATOL},            \
        {"max-steps", required_argument, 0, PFR_OPT_MAX_STEPS}

#define PFR_CLI_OPTIONS                                                                                        \
    {"mechanism", required_argument, 0, PFR_OPT_MECHANISM}, {"init", required_argument, 0, PFR_OPT_INIT},      \
        {"params", required_argument, 0, PFR_OPT_PARAMS}, {"length", required_argument, 0, PFR_OPT_LENGTH},    \
        {"steps", required_argument, 0, PFR_OPT_STEPS}, {"dt", required_argument, 0, PFR_OPT_DT},              \
        {"method", required_argument, 0, PFR_OPT_METHOD}, {"maximize", required_argument, 0, PFR_OPT_MAXIMIZE}, \
        {"minimize", required_argument, 0, PFR_OPT_MINIMIZE}, {"energy", required_argument, 0, PFR_OPT_ENERGY}, \
        {"cond", required_argument, 0, PFR_OPT_COND}, {"thermo", required_argument, 0, PFR_OPT_THERMO},     \
        {"adjoint", required_argument, 0, PFR_OPT_ADJOINT}

/* Help lines for the shared options. */
extern const char pfr_cli_help_reactor[]; /* --mechanism ... --method, --adjoint */
/* the same, with the defaults of PFR_ADAPTIVE_DEFAULT (pfr simulate) */
extern const char pfr_cli_help_reactor_adaptive[];
extern const char pfr_cli_help_reactor_forward[]; /* the same without --adjoint (pfr ensemble) */
extern const char pfr_cli_help_goal[];    /* --maximize / --minimize */
extern const char pfr_cli_help_tol[];     /* --rtol / --atol / --max-steps */
extern const char pfr_cli_help_gas[];     /* --energy / --cond / --thermo (pfr_gas.c) */

/* The command line, as given. */
typedef struct {
    const char *mechanism, *init, *params, *method, *maximize, *minimize, *schedule;
    const char *adjoint;               /* --adjoint discrete|backsolve */
    const char *cond;                  /* --cond: the mechanism's conditions; gas mechanisms: T=..,P=.. (pfr_gas.c) */
    const char *energy, *thermo;       /* gas mechanisms (pfr_gas.c): --energy, --thermo */
    double length, dt;
    int64_t steps;
    int has_length, has_steps, has_dt;
    int reading; /* pfr_cli_next has started on argv */
    /* set by a command that integrates adaptively: PFR_ADAPTIVE_DEFAULT (pfr
     * simulate): without --steps/--dt, a mechanism file or --method
     * tsit5|dopri5|rodas5 integrates with error control (the built-in seed
     * problem keeps its 1000 Euler steps); PFR_ADAPTIVE_ASKED (pfr compare,
     * optimize): only --method tsit5|dopri5|rodas5 without --steps/--dt does,
     * the default stays the seed's fixed Euler steps */
    int adaptive_ok;
    double rtol, atol; /* --rtol, --atol (PFR_CLI_RTOL, PFR_CLI_ATOL when not given) */
    int64_t max_steps;
    int has_rtol, has_atol, has_tol; /* has_tol: --rtol, --atol or --max-steps given */
} pfr_cli;

enum { PFR_ADAPTIVE_NO = 0, PFR_ADAPTIVE_DEFAULT, PFR_ADAPTIVE_ASKED };

/* pfr_cli_next's code for a shared option with a bad value (message printed) */
#define PFR_CLI_BAD_VALUE (-2)

/* The next option of argv that is not one of PFR_CLI_OPTIONS (or
 * PFR_OPT_SCHEDULE), which it stores in c: getopt_long's code (with ":h"
 * leading the option string and opterr off, so that '?' and ':' come back for
 * pfr_cli_bad_option), PFR_CLI_BAD_VALUE, or -1 at the end of the options.
 * The first call on a zeroed c restarts getopt at argv[1] and checks argv
 * with cli_options_once (an option given twice, an option as a value:
 * PFR_CLI_BAD_VALUE). */
int pfr_cli_next(pfr_cli *c, int argc, char **argv, const struct option *opts);

/* After the options: 1 when no operand is left, else 0 with
 * "remat: CMD: unexpected argument '...'" printed. */
int pfr_cli_no_operands(const char *cmd, int argc, char **argv);

/* A positive number for option opt: 0 with a message ("remat: OPT: ARG: the
 * WHAT must be positive") when arg is not one. */
int pfr_cli_positive(const char *opt, const char *arg, const char *what, double *out);

/* Handles one option code of PFR_CLI_OPTIONS (or PFR_OPT_SCHEDULE): 1 done,
 * 0 a bad value (message printed), -1 not one of them. */
int pfr_cli_option(pfr_cli *c, int code, const char *arg);

typedef enum {
    PFR_GOAL_OPTIONAL, /* simulate: no goal means no gradient */
    PFR_GOAL_REQUIRED, /* optimize, compare: the built-in's default, else --maximize/--minimize */
} pfr_goal_need;

/* What the options describe, checked against the mechanism. */
typedef struct {
    remat_mechanism *mech;
    int builtin;
    const char *name;       /* the mechanism's source: its path, or "built-in A->B->C" */
    double *inlet, *params; /* species_count, param_count */
    double *conds;          /* cond_count: the declared defaults, then --cond */
    int S, P;
    remat_pfr_options opt;  /* inlet points into this struct */
    char schedule[48];      /* opt.schedule as text */
} pfr_setup;

/* Loads the mechanism and checks every option against it. params_start:
 * use the built-in problem's optimisation start (k1=0.5, k2=0.3) rather than
 * the declared values when --params does not say otherwise. 0 with a
 * message naming the option (or file:line:column) on error. */
int pfr_cli_setup(const pfr_cli *c, pfr_goal_need goal, int params_start, pfr_setup *out);
void pfr_setup_free(pfr_setup *s);

/* pfr_gas.c: gas mechanisms (remat/gas.h). Whether c names a Cantera YAML
 * or CHEMKIN file (or gives --thermo); */
int pfr_gas_wanted(const pfr_cli *c);
/* reads it with --energy and --thermo into s->mech: 0 with a message; */
int pfr_gas_load(const pfr_cli *c, pfr_setup *s);
/* the same for a path with --energy and --thermo (NULL: their defaults); */
int pfr_gas_read(const char *path, const char *energy, const char *thermo, remat_mechanism **out);
/* --cond T=..,P=.. of gas mechanism m: T into *T (untouched when not
 * given), P into params; 0 with a message naming --cond; */
int pfr_gas_conds(const char *cond, const remat_mechanism *m, double *T, double *params);
/* the inlet from --init (normalised mole fractions) and --cond T=..,P=..
 * (T required; P into the parameter P): 0 with a message. */
int pfr_gas_inlet(const pfr_cli *c, pfr_setup *s);
/* 0 with a message when a gas-only option is given for another mechanism. */
int pfr_gas_options_unused(const pfr_cli *c);

/* Warns on stderr (remat_pfr_negative's rule) when a concentration came out
 * negative: the species, its value and the first z where it is, from the
 * profile y (rows states at z, as remat_pfr_profile writes them) when given,
 * else from the outlet (then a profile is run to find z). what names the run
 * ("" or "set 3: "). Returns 1 when it warned. */
typedef struct {
    int found;          /* 0: nothing below zero */
    int species;
    double value, at;   /* the first value below zero and where (NaN: the outlet only) */
    double outlet;      /* the species at the outlet (fit: NaN) */
    int experiment;     /* fit: its index, else -1 */
} pfr_negative;
int pfr_cli_warn_negative(remat_pfr *r, const double *params, const char *what, const double *outlet, int64_t rows,
                          const double *z, const double *y, pfr_negative *neg);
/* neg as one JSON value: null, or {"species": ..., "value": ..., "at": ..., ...} */
void pfr_cli_negative_json(FILE *out, const remat_mechanism *m, const pfr_negative *neg, const char *const *files);

/* Reads "NAME=VALUE,..." (--init, --params) into values[] by name, naming
 * opt in its messages. params: the names are the mechanism's parameters and
 * each value must lie within its declared bounds, and be >= 0 unless the
 * mechanism declares a negative lower bound (pfr_cli_negative_allowed), as a
 * concentration must; else they are species and each value a concentration
 * >= 0. Names not listed keep their value. 0 with a message on error. */
/* Whether parameter i may be negative: its declared bounds go below 0. */
int pfr_cli_negative_allowed(const remat_mechanism *m, int i);
int pfr_cli_assign(const char *opt, const char *text, const remat_mechanism *m, int params, double *values);

/* An option getopt_long rejected (code '?' or ':', with ":h" leading its
 * option string): prints "remat: pfr CMD: ..." naming it. Returns 2. */
int pfr_cli_bad_option(const char *cmd, int code, char **argv);

/* "A, B, C" of the mechanism's species or parameters, for messages. */
void pfr_cli_names(const remat_mechanism *m, int params, char *buf, int len);

int cmd_pfr_simulate(int argc, char **argv);
int cmd_pfr_optimize(int argc, char **argv);
int cmd_pfr_compare(int argc, char **argv);
int cmd_pfr_ensemble(int argc, char **argv); /* cmd_pfr_ensemble.c */

/* Adaptive stepping's CLI defaults (--rtol, --atol): the fit's
 * (remat_fit_defaults), so simulate and fit integrate alike */
#define PFR_CLI_RTOL REMAT_FIT_DEFAULT_RTOL
#define PFR_CLI_ATOL REMAT_FIT_DEFAULT_ATOL
/* and for gas mechanisms (pfr_gas.c) */
#define PFR_GAS_RTOL 1e-8
#define PFR_GAS_ATOL 1e-14
#define PFR_GAS_MAX_STEPS 100000

/* A tolerance >= 0 for option opt: 0 with a message when arg is not one. */
int pfr_cli_tolerance(const char *opt, const char *arg, double *out);

/* --rtol, --atol or --max-steps (opt: PFR_OPT_RTOL, _ATOL, _MAX_STEPS) into
 * its variable: 1, or 0 with a message; -1 when opt is none of them (for a
 * command that reads PFR_CLI_TOL_OPTIONS with its own parser: pfr fit). */
int pfr_cli_tol_arg(int opt, const char *arg, double *rtol, double *atol, int64_t *max_steps);

/* The integrator from --method (NULL: not given), whether --steps/--dt
 * (fixed) and --rtol/--atol/--max-steps (tol) were given: adaptive tsit5 by
 * default, adaptive
 * for tsit5/dopri5/rodas5 without --steps/--dt, fixed for euler and rk4 (rk4 when
 * --steps/--dt come without --method). 0 with a message when tolerances come
 * with fixed steps or the method is unknown. */
extern const char pfr_cli_default_integrator[]; /* for --help */
int pfr_cli_adaptive(const char *method, int fixed, int tol, remat_ode_method *out, bool *adaptive);

#endif
