/* cmd_pfr_fit.c — `remat pfr fit`: fit a mechanism's parameters to measured profiles (remat/fit.h). */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_dist.h"
#include "pfr_cli.h"
#include "pfr_data_list.h"
#include "pfr_fit_out.h"

#define MAX_ITERS 100000000
#define MAX_STEPS 100000000
#define PLOT_POINTS 400 /* model curve points per experiment */
#define MAX_STARTS 100000

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat pfr fit --mechanism FILE --data D.csv [--data D2.csv ...] [--data-list LIST]\n"
            "                     [--init A=1,B=0]\n"
            "                     [--params k1=1,k2=0.5] [--method euler|rk4|tsit5|dopri5|rodas5]\n"
            "                     [--steps N | --dt H | --rtol R --atol A --max-steps N]\n"
            "                     [--optimizer auto|lm|bfgs|lbfgs-b|adam] [--lr X --iters N] [--max-iters N]\n"
            "                     [--jacobian auto|forward|reverse]\n"
            "                     [--schedule S | --memory-budget BYTES] [--starts N [--seed S]]\n"
            "                     [--sigma A=0.01,B=0.02] [--weighting none|relative] [--plot FILE]\n"
            "                     [--plot-residuals FILE] [--json [--history]]\n"
            "\n"
            "Fits the mechanism's parameters (rate constants) to measured concentrations by least\n"
            "squares: every experiment (one CSV file: the independent variable, then species columns,\n"
            "empty cells not measured) is integrated from its initial state through its data times,\n"
            "and the sum over all measured cells of ((model - data) / sigma)^2 is minimised. Gradients come\n"
            "from reverse mode through the integration, lm's Jacobian from forward or reverse mode\n"
            "(--jacobian). Positive rate constants are searched on a log scale (a lower bound\n"
            "of 0 included); bounds declared in the mechanism ('param k = 1\n"
            "in [lo, hi]') are honoured, and a negative lower bound keeps a parameter on the linear\n"
            "scale. At the optimum the table gives standard errors and 95%% confidence intervals\n"
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
            "                     and give every species\n"
            "  --params LIST      start values, e.g. k1=1,k2=0.5 (default: the declared values)\n"
            "  --method M         tsit5, dopri5 or rodas5 (stiff): adaptive steps with error control\n"
            "                     unless --steps or --dt is given; euler or rk4: fixed steps.\n"
            "                     Default: %s\n"
            "  --rtol R           adaptive: relative tolerance (default 1e-6)\n"
            "  --atol A           adaptive: absolute tolerance (default 1e-9)\n"
            "  --max-steps N      adaptive: attempts per integration before it fails (default 4096)\n"
            "  --steps N          fixed steps between consecutive data times\n"
            "  --dt H             or the largest fixed step (default for euler/rk4: the last data\n"
            "                     time / 200); steps land exactly on every data time either way\n"
            "  --optimizer O      auto (default: lm, bounds or not; the choice of bench/battery),\n"
            "                     lm (GSL Levenberg-Marquardt), bfgs (GSL BFGS, unbounded),\n"
            "                     lbfgs-b (NLopt's L-BFGS with box constraints), adam\n"
            "  --jacobian J       how lm and the statistics build the Jacobian: auto (default: forward\n"
            "                     mode, one JVP per free parameter, when there are fewer of those than\n"
            "                     measured cells in the largest experiment; else reverse, one VJP per\n"
            "                     cell), forward or reverse; the table and --json say which ran\n"
            "  --lr X             Adam's learning rate on the log scale (default 0.05)\n"
            "  --iters N          Adam's steps (default 1000)\n"
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
            "                     column sigma_B gives B's sigma per row instead (where not empty)\n"
            "  --weighting W      none (default) or relative: residuals divided by |data| as well\n"
            "                     (relative errors; a measured 0 is an error)\n"
            "  --plot FILE        draw the fitted model against the data, one panel per experiment\n"
            "                     (.png, .svg, .pdf, .ps)\n"
            "  --plot-residuals F draw the (weighted) residuals at the optimum, one panel per experiment\n"
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

typedef struct {
    remat_dist *dist;
    int tty;
} progress_ctx;

static int progress_line(const remat_fit_progress *p, void *ctx)
{
    progress_ctx *c = ctx;
    cli_dist_test_kill_hook(c->dist); /* a test's rank that dies mid-fit */
    if (!c->tty)
        return 0;
    fprintf(stderr, "remat: pfr fit: %s iteration %4d  F = %-12.6g |grad| = %-10.3g", p->optimizer, p->iteration,
            p->objective, p->grad_norm);
    for (int i = 0; i < p->n_params; i++)
        fprintf(stderr, " %s=%.6g", p->param_names[i], p->params[i]);
    fputc('\n', stderr);
    return 0;
}

typedef struct {
    const char *mechanism, *init, *params, *method, *optimizer, *schedule, *plot, *plot_res, *sigma, *weighting;
    const char *jacobian;
    char **data_args;  /* [n_data_args] "--data PATH" / "--data-list LIST" operands in order */
    int *data_is_list; /* [n_data_args] */
    int n_data_args, json, history, has_lr, has_iters, has_max_iters, has_rtol, has_atol, has_max_steps;
    double dt, lr, rtol, atol;
    int64_t steps, iters, max_iters, budget, starts, seed, max_steps;
} fit_cli;

static int parse_args(int argc, char **argv, fit_cli *c)
{
    enum {
        O_DATA = 512, O_DATA_LIST, O_OPTIMIZER, O_LR, O_ITERS, O_MAX_ITERS, O_BUDGET, O_PLOT, O_JSON,
        O_STARTS, O_SEED, O_SIGMA, O_WEIGHTING, O_PLOT_RES, O_HISTORY, O_JACOBIAN, O_RTOL, O_ATOL, O_MAX_STEPS
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
        {"rtol", required_argument, 0, O_RTOL},
        {"atol", required_argument, 0, O_ATOL},
        {"max-steps", required_argument, 0, O_MAX_STEPS},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int ch;
    optind = 1;
    opterr = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
        case O_RTOL:
            if (!pfr_cli_positive("--rtol", optarg, "relative tolerance", &c->rtol))
                return 0;
            c->has_rtol = 1;
            break;
        case O_ATOL:
            if (!pfr_cli_tolerance("--atol", optarg, &c->atol))
                return 0;
            c->has_atol = 1;
            break;
        case O_MAX_STEPS:
            if (!cli_int64("--max-steps", optarg, 1, MAX_STEPS, &c->max_steps))
                return 0;
            c->has_max_steps = 1;
            break;
        case 'h': help(stdout); return -1;
        default:
            fprintf(stderr, "Run 'remat pfr fit --help' for the options.\n");
            return 0;
        }
    }
    if (!pfr_cli_no_operands("pfr fit", argc, argv))
        return 0;
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
    if (c->schedule && c->budget) {
        fprintf(stderr, "remat: --schedule and --memory-budget: give one of them, not both\n");
        return 0;
    }
    return 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One panel per experiment: a model curve per species, its data as points in the same colour. */
static int plot(const char *path, const remat_mechanism *m, remat_fit *fit, remat_dataset *const *data, int n_data,
                const remat_fit_result *r)
{
    int S = remat_mechanism_species_count(m);
    cli_panel *panels = calloc((size_t)n_data, sizeof *panels);
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
        double t1 = t[R - 1]; /* the curve starts at the initial state, t = 0 */
        for (int i = 0; i < PLOT_POINTS; i++)
            tc[i] = t1 * (double)i / (PLOT_POINTS - 1);
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
        int ns = 0;
        for (int s = 0; s < S; s++) {
            if (!remat_dataset_has_column(d, s))
                continue; /* an unmeasured species: no data to compare, keep the panel readable */
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
        snprintf(titles[e], sizeof titles[e], "%s: fit (lines) and data (points)",
                 base ? base + 1 : remat_dataset_path(d));
        panels[e] = (cli_panel){.title = titles[e], .xlabel = remat_dataset_indep_name(d),
                                .ylabel = "concentration", .n_series = ns, .series = ser};
    }
    if (ok)
        ok = cli_plot_panels(path, n_data, panels);
    free(panels);
    free(series);
    free(buf);
    free(pts);
    free(titles);
    return ok;
}

/* "A=0.01,B=0.02" into sigma[S] (others 1). 0 with a message naming --sigma. */
static int parse_sigma(const char *text, const remat_mechanism *m, double *sigma)
{
    int S = remat_mechanism_species_count(m);
    for (int s = 0; s < S; s++)
        sigma[s] = 1.0;
    char *copy = strdup(text), *save = NULL;
    int ok = copy != NULL;
    for (char *item = copy ? strtok_r(copy, ",", &save) : NULL; ok && item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) {
            fprintf(stderr, "remat: --sigma: '%s' is not NAME=VALUE\n", item);
            ok = 0;
            break;
        }
        *eq = 0;
        int s = remat_mechanism_species_find(m, item);
        if (s < 0) {
            char names[256];
            pfr_cli_names(m, 0, names, sizeof names);
            fprintf(stderr, "remat: --sigma: unknown species '%s' (the species of %s: %s)\n", item,
                    remat_mechanism_source(m), names);
            ok = 0;
            break;
        }
        char *end;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !(v > 0) || !isfinite(v)) {
            fprintf(stderr, "remat: --sigma: %s=%s: a standard deviation must be a positive finite number\n", item,
                    eq + 1);
            ok = 0;
            break;
        }
        sigma[s] = v;
    }
    free(copy);
    return ok;
}

/* The --data and --data-list operands in order into files. 0 with msg. */
static int expand_data(const fit_cli *c, pfr_data_files *files, char *msg, size_t cap)
{
    for (int i = 0; i < c->n_data_args; i++)
        if (!(c->data_is_list[i] ? pfr_data_list_read(files, c->data_args[i], msg, cap)
                                 : pfr_data_add(files, c->data_args[i], msg, cap)))
            return 0;
    return 1;
}

/* Every experiment's data into data[]. 0 with msg naming the file and where it was named. */
static int read_data(const pfr_data_files *files, const remat_mechanism *m, remat_dataset **data, char *msg,
                     size_t cap)
{
    for (int e = 0; e < files->n; e++)
        if (remat_dataset_read(files->path[e], m, &data[e]) != REMAT_OK) {
            char where[600];
            pfr_data_where(files, e, where, sizeof where);
            snprintf(msg, cap, "%.600s: %.400s", where, remat_last_error());
            return 0;
        }
    return 1;
}

static int fit_main(int argc, char **argv, remat_dist *dist, fit_cli c);

/* Under mpirun every rank runs this; rank 0 prints (cli_dist.h). The
 * --data/--data-list arguments (argc of them at most) are freed here, on
 * every path fit_main returns by. */
int cmd_pfr_fit(int argc, char **argv)
{
    remat_dist *dist = cli_dist_open();
    if (!dist)
        return 2;
    fit_cli c = {0};
    c.data_args = calloc((size_t)argc + 1, sizeof *c.data_args);
    c.data_is_list = calloc((size_t)argc + 1, sizeof *c.data_is_list);
    int status = 2;
    if (c.data_args && c.data_is_list)
        status = fit_main(argc, argv, dist, c);
    else
        fprintf(stderr, "remat: pfr fit: out of memory\n");
    free(c.data_args);
    free(c.data_is_list);
    cli_dist_close(dist);
    return status;
}

static int fit_main(int argc, char **argv, remat_dist *dist, fit_cli c)
{
    int a = parse_args(argc, argv, &c);
    if (a <= 0)
        return a < 0 ? 0 : 2;
    if (c.plot && !cli_plot_check(c.plot))
        return 2;
    if (c.plot_res && !cli_plot_check_for("--plot-residuals", c.plot_res))
        return 2;
    remat_fit_options o = remat_fit_defaults();
    if (c.optimizer && remat_fit_optimizer_parse(c.optimizer, &o.optimizer) != REMAT_OK) {
        fprintf(stderr, "remat: --optimizer: %s\n", remat_last_error());
        return 2;
    }
    if (c.jacobian && remat_fit_jacobian_parse(c.jacobian, &o.jacobian) != REMAT_OK) {
        fprintf(stderr, "remat: --jacobian: %s\n", remat_last_error());
        return 2;
    }
    if ((c.has_lr || c.has_iters) && o.optimizer != REMAT_FIT_ADAM) {
        fprintf(stderr, "remat: %s: applies to --optimizer adam only (use --max-iters for the others)\n",
                c.has_lr ? "--lr" : "--iters");
        return 2;
    }
    if (c.has_max_iters && o.optimizer == REMAT_FIT_ADAM) {
        fprintf(stderr, "remat: --max-iters: Adam takes --iters N steps\n");
        return 2;
    }
    if (c.schedule && remat_schedule_parse(c.schedule, &o.scan.schedule) != REMAT_OK) {
        fprintf(stderr, "remat: --schedule: %s\n", remat_last_error());
        return 2;
    }
    o.steps = c.steps;
    o.dt = c.dt;
    if (!pfr_cli_adaptive(c.method, c.steps > 0 || c.dt > 0, c.has_rtol || c.has_atol || c.has_max_steps,
                          &o.method, &o.adaptive))
        return 2;
    if (c.has_rtol)
        o.rtol = c.rtol;
    if (c.has_atol)
        o.atol = c.atol;
    o.max_steps = c.max_steps;
    o.lr = c.lr;
    o.max_iters = (int)(c.has_iters ? c.iters : c.max_iters);
    o.memory_budget = c.budget;
    o.starts = (int)c.starts;
    o.seed = (uint64_t)c.seed;
    o.weighting = c.weighting && !strcmp(c.weighting, "relative") ? REMAT_FIT_WEIGHT_RELATIVE : REMAT_FIT_WEIGHT_NONE;
    progress_ctx progress = {.dist = dist, .tty = isatty(STDERR_FILENO)};
    o.progress = progress_line;
    o.progress_ctx = &progress;
    o.dist = cli_dist_group(dist);

    int status = 2;
    char msg[1024] = "";
    pfr_data_files files = {0};
    remat_mechanism *m = NULL;
    remat_dataset **data = NULL;
    double *init = NULL, *start = NULL, *sigma = NULL;
    remat_fit_stats stats = {0};
    const double **y0 = NULL;
    remat_fit *fit = NULL;
    remat_fit_result r = {0};
    double *res = NULL; /* --plot-residuals: the residuals at the optimum */
    /* files are read on every rank: one that fails on one rank only (a node
     * without the file) is agreed on and named once, by rank 0 */
    int ok = expand_data(&c, &files, msg, sizeof msg);
    if (ok && remat_mechanism_parse_file(c.mechanism, &m) != REMAT_OK) {
        snprintf(msg, sizeof msg, "--mechanism: %s", remat_last_error());
        ok = 0;
    }
    if (ok && !(data = calloc((size_t)files.n, sizeof *data))) {
        snprintf(msg, sizeof msg, "pfr fit: out of memory for %d experiments", files.n);
        ok = 0;
    }
    if (ok)
        ok = read_data(&files, m, data, msg, sizeof msg);
    if (!cli_dist_agree(dist, ok, msg, sizeof msg)) {
        fprintf(stderr, "remat: %s\n", msg);
        goto done;
    }
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m), n_data = files.n;
    if (c.sigma) {
        sigma = calloc((size_t)S + 1, sizeof *sigma);
        if (!sigma || !parse_sigma(c.sigma, m, sigma))
            goto done;
        o.sigma = sigma;
    }
    start = calloc((size_t)P + 1, sizeof *start);
    if (!start)
        goto done;
    remat_mechanism_param_values(m, start);
    if (c.params && !pfr_cli_assign("--params", c.params, m, 1, start))
        goto done;
    o.start = start;
    if (c.init) {
        init = calloc((size_t)S + 1, sizeof *init);
        y0 = calloc((size_t)n_data, sizeof *y0);
        if (!init || !y0 || !pfr_cli_assign("--init", c.init, m, 0, init))
            goto done;
        for (int e = 0; e < n_data; e++)
            y0[e] = init;
        o.y0 = y0;
    }
    remat_status st = remat_fit_new(m, n_data, data, &o, &fit); /* with o.dist: collective */
    if (st != REMAT_OK) {
        if (st == REMAT_ERR_BUDGET)
            fprintf(stderr, "remat: --memory-budget: %s\n", remat_last_error());
        else
            fprintf(stderr, "remat: pfr %s\n", remat_last_error());
        goto done;
    }
    double t = now();
    st = remat_fit_run(fit, &r);
    t = now() - t;
    if (st != REMAT_OK) {
        fprintf(stderr, "remat: pfr %s\n", r.message);
        status = 1;
        goto done;
    }
    /* statistics are a report, not the fit: without them (no degrees of
     * freedom, a Jacobian that is not finite) the table says why. A
     * collective with o.dist; what follows is rank 0's alone. */
    char stats_why[512] = "";
    int have_stats = remat_fit_statistics(fit, r.params, &stats) == REMAT_OK;
    if (!have_stats)
        snprintf(stats_why, sizeof stats_why, "%s", remat_last_error());
    /* --plot-residuals' residuals: a collective with o.dist too, so every
     * rank computes them here, not rank 0 alone below (it would wait for
     * the others in the gather forever) */
    if (c.plot_res) {
        res = malloc(sizeof *res * (size_t)(remat_fit_residual_count(fit) + 1));
        if (!res)
            snprintf(msg, sizeof msg, "--plot-residuals: out of memory for the residuals");
        if (!cli_dist_agree(dist, res != NULL, msg, sizeof msg)) {
            fprintf(stderr, "remat: %s\n", msg);
            status = 1;
            goto done;
        }
        if (remat_fit_residuals(fit, r.params, res) != REMAT_OK) { /* agreed on inside */
            fprintf(stderr, "remat: --plot-residuals: %s\n", remat_last_error());
            status = 1;
            goto done;
        }
    }
    if (!remat_dist_is_root(dist)) {
        status = r.converged ? 0 : 3;
        goto agree;
    }
    if (c.plot && !plot(c.plot, m, fit, data, n_data, &r)) {
        status = 1;
        goto agree;
    }
    double ode_stats[REMAT_ODE_STATS];
    int have_ode_stats = remat_fit_integration_stats(fit, r.params, ode_stats) == REMAT_OK;
    pfr_fit_report rep = {.mechanism = c.mechanism, .data = (const char *const *)files.path, .n_data = n_data,
                          .method = remat_ode_method_name(o.method), .adaptive = o.adaptive, .rtol = o.rtol,
                          .atol = o.atol, .ode_stats = have_ode_stats ? ode_stats : NULL, .m = m,
                          .fit = fit, .r = &r, .start = start, .seconds = t, .sigma = sigma,
                          .relative = o.weighting == REMAT_FIT_WEIGHT_RELATIVE, .seed = o.seed,
                          .stats = have_stats ? &stats : NULL, .stats_why = stats_why, .history = c.history};
    if (c.plot_res && !pfr_fit_plot_residuals(c.plot_res, &rep, data, !c.init, res)) {
        status = 1;
        goto agree;
    }
    if (c.json)
        pfr_fit_print_json(&rep);
    else
        pfr_fit_print_table(&rep);
    status = r.converged ? 0 : 3;
agree:
    /* rank 0's output failing (said already) fails every rank */
    if (!cli_dist_agree(dist, status != 1, msg, sizeof msg))
        status = 1;
done:
    free(res);
    remat_fit_stats_clear(&stats);
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    for (int e = 0; data && e < files.n; e++)
        remat_dataset_free(data[e]);
    free(data);
    pfr_data_files_free(&files);
    remat_mechanism_free(m);
    free(init);
    free(start);
    free(sigma);
    free(y0);
    return status;
}
