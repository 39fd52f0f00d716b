/* pfr_fit_args.c — `remat pfr fit`'s options (pfr_fit_args.h): the help text, the command line read and
 * checked, --sigma. */
#include "pfr_fit_args.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"

#define MAX_ITERS 100000000
#define MAX_STEPS 100000000
#define MAX_STARTS 100000

void pfr_fit_help(FILE *out)
{
    fprintf(out,
            "usage: remat pfr fit --mechanism FILE --data D.csv [--data D2.csv ...] [--data-list LIST]\n"
            "                     [--init A=1,B=0] [--cond T=350] [--free NAMES | --fix NAMES] [--out DIR]\n"
            "                     [--plot FILE [--log-x] [--log-y] [--species LIST]] [--thermo FILE] [--energy E]\n"
            "                     [--params k1=1,k2=0.5] [--method euler|rk4|tsit5|dopri5|rodas5]\n"
            "                     [--steps N | --dt H | --rtol R --atol A --max-steps N]\n"
            "                     [--optimizer auto|lm|bfgs|lbfgs-b|adam] [--lr X --iters N] [--max-iters N]\n"
            "                     [--jacobian auto|forward|reverse] [--adjoint discrete|backsolve|interpolating]\n"
            "                     [--schedule S | --memory-budget BYTES] [--starts N [--seed S]]\n"
            "                     [--sigma A=0.01,B=0.02] [--weighting none|relative] [--plot FILE]\n"
            "                     [--plot-residuals FILE] [--json [--history]]\n"
            "\n"
            "Fits the mechanism's parameters (rate constants) to measured concentrations by least\n"
            "squares: every experiment (one CSV file: the independent variable, then species columns,\n"
            "empty cells not measured) is integrated from its initial state through its data times,\n"
            "and the sum over all measured cells of ((model - data) / sigma)^2 is minimised. Gradients come\n"
            "from reverse mode through the integration, lm's Jacobian from forward or reverse mode\n"
            "(--jacobian). Positive rate constants are searched on a log scale; bounds declared in\n"
            "the mechanism ('param k = 1 in [lo, hi]') are honoured, and a lower bound of 0 or below\n"
            "keeps a parameter on the linear scale (for adam only a negative one: its steps need the\n"
            "log scale's unit). At the optimum the table gives standard errors and 95%% confidence intervals\n"
            "(s^2 (J^T J)^-1, s^2 = SSE / degrees of freedom, Student's t), the correlation matrix,\n"
            "and names the parameters the data do not identify (J^T J nearly singular).\n"
            "\n"
            "  --mechanism FILE   reaction mechanism file (remat/mechanism.h format); required\n"
            "  --data FILE        one experiment as CSV (remat/dataset.h format); repeat for several\n"
            "  --data-list LIST   experiments listed in LIST, one CSV path per line, relative to\n"
            "                     LIST's directory ('#' lines and blank lines skipped); with --data\n"
            "                     too, in the order given\n"
            "  --init LIST        initial state of every experiment, e.g. A=1,B=0 (species not listed\n"
            "                     start at 0); default: each file's first row, which must be at 0\n"
            "                     and give every species; a file's '# A = 1' lines before its\n"
            "                     header win (when they give every species, the first row is data)\n"
            "  --params LIST      start values, e.g. k1=1,k2=0.5 (default: the declared values)\n"
            "  --cond LIST        conditions ('cond' lines) of every experiment whose file does not set\n"
            "                     them ('# T = 350' before the header, or a column T), e.g. T=350;\n"
            "                     default: the declared values; never fitted, never data\n"
            "  --free NAMES       fit only these parameters (e.g. k1,Ea); the others stay at their\n"
            "                     start values; a network's name (f) or a prefix of its weights'\n"
            "                     names (f.Dense_0) stands for all those weights\n"
            "  --fix NAMES        keep these parameters at their start values, fit the others\n"
            "  --out DIR          write each experiment's fitted profile at its data times to\n"
            "                     DIR/<data file name> (CSV, %%.17g; a delay table's row:\n"
            "                     DIR/<name>:<line>); DIR must exist\n"
            "  gas mechanisms (a Cantera YAML or CHEMKIN file as --mechanism; remat/gas.h):\n"
            "  --thermo FILE      CHEMKIN thermo data (default: the THERMO section of the mechanism)\n"
            "  --energy E         adiabatic (default) or isothermal\n"
            "                     each file's '# T = 1100' and composition ('# H2 = 2', '# O2 = 1': amounts\n"
            "                     normalised to mole fractions, species not named 0) before its header,\n"
            "                     else --cond T=1100 and --init H2=2,O2=1; the pressure (Pa) is each\n"
            "                     file's '# P = 101325' or column P, else --cond P=.. (the parameter P's\n"
            "                     value; --free P fits one for all experiments); columns are mole\n"
            "                     fractions by species name and T, or a first column tau: ignition\n"
            "                     delays (s; T reaches T0 + 400 K, adaptive only; --weighting relative\n"
            "                     for delays): tau alone is one experiment of one row; tau with more\n"
            "                     columns (T, P, conds, species' amounts, sigma_tau) is a table, one\n"
            "                     experiment per row, named FILE:LINE; a delay's sigma is its row's\n"
            "                     sigma_tau, else --sigma tau=S (s); --free or --fix is required (e.g.\n"
            "                     --free m3,m11: rate multipliers; A<i>, b<i>, Ea<i>: Arrhenius, SI);\n"
            "                     default method rodas5, --rtol 1e-8 --atol 1e-14 --max-steps 100000\n"
            "  --method M         tsit5, dopri5 or rodas5 (stiff): adaptive steps with error control\n"
            "                     unless --steps or --dt is given; euler or rk4: fixed steps.\n"
            "                     Default: %s\n"
            "  --rtol R           adaptive: relative tolerance (default 1e-6); data times are\n"
            "                     reached by the method's dense output, not by steps\n"
            "  --atol A           adaptive: absolute tolerance (default 1e-9)\n"
            "  --max-steps N      adaptive: attempts per integration before it fails (default 4096)\n"
            "  --steps N          fixed steps between consecutive data times\n"
            "  --dt H             or the largest fixed step (default for euler/rk4: the last data\n"
            "                     time / 200); steps land exactly on every data time either way\n"
            "  --optimizer O      auto (default: lm, bounds or not; the choice of bench/battery),\n"
            "                     lm (GSL Levenberg-Marquardt), bfgs (GSL BFGS; bounds mapped as lm),\n"
            "                     lbfgs-b (NLopt's L-BFGS with box constraints), adam\n"
            "  --jacobian J       how lm and the statistics build the Jacobian: auto (default: forward\n"
            "                     mode, one JVP per free parameter, when there are fewer of those than\n"
            "                     measured cells in the largest experiment; else reverse, one VJP per\n"
            "                     cell), forward or reverse; the table and --json say which ran\n"
            "  --adjoint A        how gradients and reverse-mode Jacobians are taken: discrete (default:\n"
            "                     reverse mode through the steps under --schedule), backsolve (the\n"
            "                     continuous adjoint solved backwards, memory O(1) in the steps) or\n"
            "                     interpolating (the continuous adjoint over the forward recomputed\n"
            "                     from checkpoints), fixed steps or adaptive; the Jacobian is then\n"
            "                     reverse: one backward solve over all rows per measured cell, for lm\n"
            "                     and for the statistics of every fit, so its time grows as rows^2\n"
            "                     (memory as rows x species): for long data keep discrete\n"
            "  --lr X             Adam's starting learning rate (default 0.05): a step of about X in\n"
            "                     log k, or X box widths on the linear scale; halved on every plateau\n"
            "  --iters N          Adam's most steps (default 5000; it stops earlier once converged)\n"
            "  --max-iters N      iterations for lm / bfgs (default 200 / 500), evaluations for\n"
            "                     lbfgs-b (default 2000)\n"
            "  --schedule S       checkpoint schedule of the reverse pass: store-all (default),\n"
            "                     per-step, periodic:K, two-level, binomial:S, online:S; it changes\n"
            "                     memory and time, never the numbers\n"
            "  --memory-budget B  pick the fastest schedule whose snapshots and step tapes fit in B\n"
            "                     bytes (suffixes k, M, G); an error if none fits\n"
            "  --starts N         multi-start: the start values and N-1 random starts within the\n"
            "                     bounds (log-uniform for rate constants); the best fit is reported\n"
            "                     with how many starts reached it (within 1e-4 relative SSE)\n"
            "  --seed S           seed of the random starts (default 0)\n"
            "  --sigma LIST       standard deviation of each species' measurements, e.g. A=0.01,B=0.02\n"
            "                     (> 0; species not listed: 1): residuals are divided by it; a data\n"
            "                     column sigma_B gives B's sigma per row instead (where not empty);\n"
            "                     gas: tau=S is the ignition delays' (T=S weighs measured T only)\n"
            "  --weighting W      none (default) or relative: residuals divided by |data| as well\n"
            "                     (relative errors; a measured 0 is an error)\n"
            "  --plot FILE        draw the fitted model against the data, one panel per experiment\n"
            "                     (.png, .svg, .pdf, .ps)\n"
            "  --plot-residuals F draw the (weighted) residuals at the optimum, one panel per experiment\n"
            "                     (a gas mechanism's T residuals, in K, on a panel of their own)\n"
            "  --log-x            --plot, --plot-residuals: a log10 time axis labelled by decade\n"
            "                     (points at t <= 0 left out; the model curve then log-spaced)\n"
            "  --log-y            --plot: a log10 concentration axis (not for residuals, which are signed)\n"
            "  --species LIST     --plot, --plot-residuals: draw these species only, e.g. A,C\n"
            "  --json             print one JSON document (objective, params, statistics, starts,\n"
            "                     converged, message) instead of the table\n"
            "  --history          with --json: add every iterate (objective and parameters)\n"
            "\n"
            "A progress line per iteration goes to stderr when it is a terminal.\n"
            "Under mpirun or srun the experiments are split over the ranks (--starts N > 1: the\n"
            "starts instead); rank 0 prints and writes the files, and the results are bitwise the\n"
            "same on any number of ranks (see README, \"Running on a cluster\").\n"
            "Exit status: 0 converged; 3 stopped before converging (results printed); 1 the fit\n"
            "failed (a NaN or Inf: the message names the iteration and the parameters); 2 bad input.\n",
            pfr_cli_default_integrator);
}

int pfr_fit_parse(int argc, char **argv, pfr_fit_cli *c)
{
    enum {
        O_DATA = 512, O_DATA_LIST, O_OPTIMIZER, O_LR, O_ITERS, O_MAX_ITERS, O_BUDGET, O_PLOT, O_JSON,
        O_STARTS, O_SEED, O_SIGMA, O_WEIGHTING, O_PLOT_RES, O_HISTORY, O_JACOBIAN, O_COND, O_FREE, O_FIX, O_OUT,
        O_ADJOINT
    };
    static const struct option opts[] = {
        {"mechanism", required_argument, 0, PFR_OPT_MECHANISM},
        {"init", required_argument, 0, PFR_OPT_INIT},
        {"params", required_argument, 0, PFR_OPT_PARAMS},
        {"method", required_argument, 0, PFR_OPT_METHOD},
        {"steps", required_argument, 0, PFR_OPT_STEPS},
        {"dt", required_argument, 0, PFR_OPT_DT},
        {"schedule", required_argument, 0, PFR_OPT_SCHEDULE},
        {"data", required_argument, 0, O_DATA},
        {"data-list", required_argument, 0, O_DATA_LIST},
        {"optimizer", required_argument, 0, O_OPTIMIZER},
        {"jacobian", required_argument, 0, O_JACOBIAN},
        {"adjoint", required_argument, 0, O_ADJOINT},
        {"lr", required_argument, 0, O_LR},
        {"iters", required_argument, 0, O_ITERS},
        {"max-iters", required_argument, 0, O_MAX_ITERS},
        {"memory-budget", required_argument, 0, O_BUDGET},
        {"plot", required_argument, 0, O_PLOT},
        {"json", no_argument, 0, O_JSON},
        {"history", no_argument, 0, O_HISTORY},
        {"starts", required_argument, 0, O_STARTS},
        {"seed", required_argument, 0, O_SEED},
        {"sigma", required_argument, 0, O_SIGMA},
        {"weighting", required_argument, 0, O_WEIGHTING},
        {"plot-residuals", required_argument, 0, O_PLOT_RES},
        PLOT_OPTS_OPTIONS,
        {"cond", required_argument, 0, O_COND},
        {"energy", required_argument, 0, PFR_OPT_ENERGY},
        {"thermo", required_argument, 0, PFR_OPT_THERMO},
        {"free", required_argument, 0, O_FREE},
        {"fix", required_argument, 0, O_FIX},
        {"out", required_argument, 0, O_OUT},
        PFR_CLI_TOL_OPTIONS,
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    static const char *const repeatable[] = {"data", "data-list", NULL}; /* in order, any number */
    int ch;
    optind = 1;
    opterr = 0; /* pfr_cli_bad_option says it, naming the command */
    if (!cli_options_once(argc, argv, opts, repeatable))
        return 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case PFR_OPT_MECHANISM: c->mechanism = optarg; cli_input("--mechanism", optarg); break;
        case PFR_OPT_INIT: c->init = optarg; break;
        case PFR_OPT_PARAMS: c->params = optarg; break;
        case PFR_OPT_METHOD: c->method = optarg; break;
        case PFR_OPT_SCHEDULE: c->schedule = optarg; break;
        case PFR_OPT_STEPS:
            if (!cli_int64("--steps", optarg, 1, MAX_STEPS, &c->steps))
                return 0;
            break;
        case PFR_OPT_DT:
            if (!pfr_cli_positive("--dt", optarg, "step", &c->dt))
                return 0;
            break;
        case O_DATA:
        case O_DATA_LIST:
            /* at most argc of them: the arrays were sized so */
            c->data_is_list[c->n_data_args] = ch == O_DATA_LIST;
            c->data_args[c->n_data_args++] = optarg;
            cli_input(ch == O_DATA ? "--data" : "--data-list", optarg);
            break;
        case O_OPTIMIZER: c->optimizer = optarg; break;
        case O_JACOBIAN: c->jacobian = optarg; break;
        case O_ADJOINT: c->adjoint = optarg; break;
        case O_LR:
            if (!pfr_cli_positive("--lr", optarg, "learning rate", &c->lr))
                return 0;
            c->has_lr = 1;
            break;
        case O_ITERS:
            if (!cli_int64("--iters", optarg, 1, MAX_ITERS, &c->iters))
                return 0;
            c->has_iters = 1;
            break;
        case O_MAX_ITERS:
            if (!cli_int64("--max-iters", optarg, 1, MAX_ITERS, &c->max_iters))
                return 0;
            c->has_max_iters = 1;
            break;
        case O_BUDGET:
            if (!cli_bytes("--memory-budget", optarg, &c->budget))
                return 0;
            if (c->budget <= 0) {
                fprintf(stderr, "remat: --memory-budget: %s: the budget must be positive\n", optarg);
                return 0;
            }
            break;
        case O_PLOT: c->plot = optarg; break;
        case O_JSON: c->json = 1; break;
        case O_HISTORY: c->history = 1; break;
        case O_STARTS:
            if (!cli_int64("--starts", optarg, 1, MAX_STARTS, &c->starts))
                return 0;
            break;
        case O_SEED:
            if (!cli_int64("--seed", optarg, 0, INT64_MAX, &c->seed))
                return 0;
            break;
        case O_SIGMA: c->sigma = optarg; break;
        case O_WEIGHTING:
            if (strcmp(optarg, "none") && strcmp(optarg, "relative")) {
                fprintf(stderr, "remat: --weighting: unknown weighting '%s' (expected none or relative)\n", optarg);
                return 0;
            }
            c->weighting = optarg;
            break;
        case O_PLOT_RES: c->plot_res = optarg; break;
        case PLOT_OPT_LOG_X:
        case PLOT_OPT_LOG_Y:
        case PLOT_OPT_SPECIES: plot_opts_option(&c->plot_opts, ch, optarg); break;
        case O_COND: c->cond = optarg; break;
        case PFR_OPT_ENERGY: c->energy = optarg; break;
        case PFR_OPT_THERMO: c->thermo = optarg; cli_input("--thermo", optarg); break;
        case O_FREE: c->free = optarg; break;
        case O_FIX: c->fix = optarg; break;
        case O_OUT: c->out = optarg; break;
        case PFR_OPT_RTOL:
        case PFR_OPT_ATOL:
        case PFR_OPT_MAX_STEPS:
            if (!pfr_cli_tol_arg(ch, optarg, &c->rtol, &c->atol, &c->max_steps))
                return 0;
            c->has_rtol |= ch == PFR_OPT_RTOL;
            c->has_atol |= ch == PFR_OPT_ATOL;
            c->has_max_steps |= ch == PFR_OPT_MAX_STEPS;
            break;
        case 'h': pfr_fit_help(stdout); return -1;
        default: pfr_cli_bad_option("pfr fit", ch, argv); return 0;
        }
    }
    if (!pfr_cli_no_operands("pfr fit", argc, argv) || !plot_opts_check(&c->plot_opts, c->plot || c->plot_res))
        return 0;
    if (c->plot_opts.log_y && !c->plot) {
        fprintf(stderr, "remat: --log-y: applies to --plot only (residuals are signed: no log axis)\n");
        return 0;
    }
    if (!c->mechanism) {
        fprintf(stderr, "remat: pfr fit: --mechanism FILE is required\n");
        return 0;
    }
    if (c->n_data_args == 0) {
        fprintf(stderr, "remat: pfr fit: --data FILE (once per experiment) or --data-list LIST is required\n");
        return 0;
    }
    if (c->steps && c->dt > 0) {
        fprintf(stderr, "remat: --steps and --dt: give one of them, not both\n");
        return 0;
    }
    if (c->history && !c->json) {
        fprintf(stderr, "remat: --history: adds the iterates to --json; give --json too\n");
        return 0;
    }
    if (c->free && c->fix) {
        fprintf(stderr, "remat: --free and --fix: give one of them, not both\n");
        return 0;
    }
    if (c->schedule && c->budget) {
        fprintf(stderr, "remat: --schedule and --memory-budget: give one of them, not both\n");
        return 0;
    }
    return 1;
}

int pfr_fit_parse_sigma(const char *text, const remat_mechanism *m, double *sigma, double *tau_sigma, bool *named)
{
    int S = remat_mechanism_species_count(m), gas = remat_gas_species_count(m) > 0;
    for (int s = 0; s < S; s++)
        sigma[s] = 1.0, named[s] = false;
    *tau_sigma = 0;
    char *copy = strdup(text), *save = NULL;
    int ok = copy != NULL;
    if (!ok)
        fprintf(stderr, "remat: --sigma: out of memory for '%s'\n", text);
    for (char *item = copy ? strtok_r(copy, ",", &save) : NULL; ok && item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            fprintf(stderr, "remat: --sigma: '%s' is not NAME=VALUE\n", item);
            ok = 0;
            break;
        }
        *eq = 0;
        int s = remat_mechanism_species_find(m, item), tau = gas && s < 0 && strcmp(item, "tau") == 0;
        if (s < 0 && !tau) {
            char names[256];
            pfr_cli_names(m, 0, names, sizeof names);
            fprintf(stderr, "remat: --sigma: unknown species '%s' (the species of %s: %s%s)\n", item,
                    remat_mechanism_source(m), names, gas ? "; tau: the ignition delays" : "");
            ok = 0;
            break;
        }
        const char *end;
        double v = 0;
        if (cli_strtod(eq + 1, &end, &v) != CLI_NUM_OK || *end || !(v > 0)) {
            fprintf(stderr, "remat: --sigma: %s=%s: a standard deviation must be a positive finite number\n", item,
                    eq + 1);
            ok = 0;
            break;
        }
        if (tau)
            *tau_sigma = v;
        else
            sigma[s] = v, named[s] = true;
    }
    free(copy);
    return ok;
}
