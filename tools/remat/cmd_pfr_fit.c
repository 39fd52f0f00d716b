/*
 * cmd_pfr_fit.c — `remat pfr fit`: fit a mechanism's parameters to measured
 * profiles (remat/fit.h). The options are read in pfr_fit_args.c; the table,
 * JSON and plots are written by pfr_fit_out.c and pfr_fit_plot.c. Here: the
 * files read, the fit set up, run and reported, agreed on across ranks.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_dist.h"
#include "pfr_cli.h"
#include "pfr_data_list.h"
#include "pfr_fit_args.h"
#include "pfr_fit_out.h"
#include "pfr_names.h"

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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The --data and --data-list operands in order into files, each an input
 * of the run (no output may replace it). 0 with msg. */
static int expand_data(const pfr_fit_cli *c, pfr_data_files *files, char *msg, size_t cap)
{
    for (int i = 0; i < c->n_data_args; i++)
        if (!(c->data_is_list[i] ? pfr_data_list_read(files, c->data_args[i], msg, cap)
                                 : pfr_data_add(files, c->data_args[i], msg, cap)))
            return 0;
    for (int e = 0; e < files->n; e++) {
        char where[600];
        pfr_data_where(files, e, where, sizeof where);
        cli_input(where, files->path[e]);
    }
    return 1;
}

/* Every experiment's data into *data (*n_data of them) and its name into
 * *labels: a file's, or for a row of an ignition-delay table
 * (remat/dataset.h, one experiment per row) "FILE:LINE". 0 with msg naming
 * the file and where it was named. */
static int read_data(const pfr_data_files *files, const remat_mechanism *m, remat_dataset ***data, char ***labels,
                     int *n_data, char *msg, size_t cap)
{
    int n = 0, cap_n = 0;
    for (int e = 0; e < files->n; e++) {
        remat_dataset **all = NULL;
        int k = 0;
        if (remat_dataset_read_all(files->path[e], m, &all, &k) != REMAT_OK) {
            char where[600];
            pfr_data_where(files, e, where, sizeof where);
            snprintf(msg, cap, "%.600s: %.400s", where, remat_last_error());
            return 0;
        }
        if (n + k > cap_n) {
            int c = n + k > 2 * cap_n ? n + k : 2 * cap_n;
            remat_dataset **d = realloc(*data, sizeof *d * (size_t)c);
            if (d)
                *data = d;
            char **l = d ? realloc(*labels, sizeof *l * (size_t)c) : NULL;
            if (l)
                *labels = l;
            if (!l) {
                remat_dataset_free_all(all, k);
                snprintf(msg, cap, "pfr fit: out of memory for %d experiments", n + k);
                return 0;
            }
            cap_n = c;
        }
        for (int i = 0; i < k; i++) {
            const char *path = files->path[e];
            size_t len = strlen(path) + 16;
            char *label = malloc(len);
            if (label)
                snprintf(label, len, k > 1 ? "%s:%d" : "%s", path, remat_dataset_line(all[i], 0));
            (*data)[n] = all[i];
            (*labels)[n] = label;
            *n_data = ++n;
            if (!label) {
                for (int j = i + 1; j < k; j++)
                    remat_dataset_free(all[j]);
                remat_dataset_free_all(all, 0);
                snprintf(msg, cap, "pfr fit: out of memory for %d experiments", n);
                return 0;
            }
        }
        remat_dataset_free_all(all, 0); /* the array only: its datasets are in *data now */
    }
    return 1;
}

/* Collective: every rank read the same mechanism, lists and data files (a
 * copy that differs on one node would fit other numbers there, silently).
 * 0 with msg naming the file and the ranks. */
static int same_inputs(remat_dist *dist, const pfr_fit_cli *c, const pfr_data_files *files, char *msg, size_t cap)
{
    int n = 1 + c->n_data_args + files->n, k = 0;
    const char **labels = calloc((size_t)n, sizeof *labels), **paths = calloc((size_t)n, sizeof *paths);
    char(*where)[600] = calloc((size_t)files->n + 1, sizeof *where);
    int ok = labels && paths && where;
    if (ok) {
        labels[k] = "--mechanism", paths[k++] = c->mechanism;
        for (int i = 0; i < c->n_data_args; i++)
            if (c->data_is_list[i])
                labels[k] = "--data-list", paths[k++] = c->data_args[i];
        for (int e = 0; e < files->n; e++) {
            pfr_data_where(files, e, where[e], sizeof where[e]);
            labels[k] = where[e], paths[k++] = files->path[e];
        }
    } else {
        snprintf(msg, cap, "pfr fit: out of memory comparing the input files between ranks");
    }
    /* every rank learns the same answer, so all or none compare */
    ok = cli_dist_agree(dist, ok, msg, cap) && cli_dist_same_files(dist, k, labels, paths, msg, cap);
    free(labels);
    free(paths);
    free(where);
    return ok;
}

static int fit_main(int argc, char **argv, remat_dist *dist, pfr_fit_cli c);

/* Under mpirun every rank runs this; rank 0 prints (cli_dist.h). The
 * --data/--data-list arguments (argc of them at most) are freed here, on
 * every path fit_main returns by. */
/* --species names species of m (checked before the fit runs) */
static int plot_species_named(const plot_opts *po, const remat_mechanism *m)
{
    bool *show = calloc((size_t)remat_mechanism_species_count(m) + 1, sizeof *show);
    int ok = show && plot_opts_species(po, m, show);
    free(show);
    return ok;
}

int cmd_pfr_fit(int argc, char **argv)
{
    remat_dist *dist = cli_dist_open();
    if (!dist)
        return 2;
    pfr_fit_cli c = {0};
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

static int fit_main(int argc, char **argv, remat_dist *dist, pfr_fit_cli c)
{
    int a = pfr_fit_parse(argc, argv, &c);
    if (a <= 0)
        return a < 0 ? 0 : 2;
    remat_fit_options o = remat_fit_defaults();
    if (c.optimizer && remat_fit_optimizer_parse(c.optimizer, &o.optimizer) != REMAT_OK) {
        fprintf(stderr, "remat: --optimizer: %s\n", remat_last_error());
        return 2;
    }
    if (c.jacobian && remat_fit_jacobian_parse(c.jacobian, &o.jacobian) != REMAT_OK) {
        fprintf(stderr, "remat: --jacobian: %s\n", remat_last_error());
        return 2;
    }
    if (c.adjoint && remat_ode_adjoint_parse(c.adjoint, &o.adjoint) != REMAT_OK) {
        fprintf(stderr, "remat: --adjoint: %s\n", remat_last_error());
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
    /* gas mechanisms (remat/gas.h) are stiff: rodas5 at simulate's tolerances unless told otherwise */
    int gas = c.thermo || remat_gas_sniff_file(c.mechanism) != REMAT_GAS_FORMAT_NONE, fixed_steps = c.steps > 0 || c.dt > 0;
    if (!gas && (c.energy || c.thermo)) {
        fprintf(stderr, "remat: %s applies to gas mechanisms (a Cantera YAML or CHEMKIN file as --mechanism)\n",
                c.energy ? "--energy" : "--thermo");
        return 2;
    }
    if (gas && !c.free && !c.fix) {
        fprintf(stderr, "remat: pfr fit: a gas mechanism has %s: name those to fit with --free (e.g. --free m3,m11: "
                        "rate multipliers) or those to keep with --fix\n",
                "a pressure, a multiplier and Arrhenius parameters per reaction");
        return 2;
    }
    if (!pfr_cli_adaptive(c.method ? c.method : gas && !fixed_steps ? "rodas5" : NULL, fixed_steps,
                          c.has_rtol || c.has_atol || c.has_max_steps, &o.method, &o.adaptive))
        return 2;
    if (c.has_rtol || (gas && o.adaptive))
        o.rtol = c.has_rtol ? c.rtol : PFR_GAS_RTOL;
    if (c.has_atol || (gas && o.adaptive))
        o.atol = c.has_atol ? c.atol : PFR_GAS_ATOL;
    o.max_steps = c.max_steps || !gas ? c.max_steps : PFR_GAS_MAX_STEPS;
    if (o.adjoint != REMAT_ODE_ADJOINT_DISCRETE && o.jacobian == REMAT_FIT_JACOBIAN_FORWARD) {
        fprintf(stderr, "remat: --adjoint %s: goes with reverse-mode Jacobians only, not --jacobian forward\n",
                remat_ode_adjoint_name(o.adjoint));
        return 2;
    }
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
    char **labels = NULL; /* [n_data] each experiment's name (a delay table's rows: FILE:LINE) */
    int n_data = 0;
    double *init = NULL, *start = NULL, *sigma = NULL, *conds = NULL;
    bool *fixed = NULL;
    remat_fit_stats stats = {0};
    const double **y0 = NULL;
    remat_fit *fit = NULL;
    remat_fit_result r = {0};
    double *res = NULL; /* --plot-residuals: the residuals at the optimum */
    double *delays = NULL; /* [n_data] the fitted ignition delays (remat_fit_delays), when any */
    /* files are read on every rank: one that fails on one rank only (a node
     * without the file) is agreed on and named once, by rank 0 */
    int ok = expand_data(&c, &files, msg, sizeof msg);
    if (ok && gas) {
        remat_gas_options go = {.energy = REMAT_GAS_ADIABATIC, .thermo = c.thermo};
        if (c.energy && strcmp(c.energy, "isothermal") == 0)
            go.energy = REMAT_GAS_ISOTHERMAL;
        else if (c.energy && strcmp(c.energy, "adiabatic") != 0) {
            snprintf(msg, sizeof msg, "--energy: '%s': expected adiabatic or isothermal", c.energy);
            ok = 0;
        }
        if (ok && remat_gas_read(c.mechanism, &go, &m) != REMAT_OK) {
            snprintf(msg, sizeof msg, "--mechanism: %s", remat_last_error());
            ok = 0;
        }
    } else if (ok && remat_mechanism_parse_file(c.mechanism, &m) != REMAT_OK) {
        snprintf(msg, sizeof msg, "--mechanism: %s", remat_last_error());
        ok = 0;
    }
    if (ok && !gas && remat_dist_is_root(dist))
        pfr_names_warnings(m);
    if (ok)
        ok = read_data(&files, m, &data, &labels, &n_data, msg, sizeof msg);
    if (!cli_dist_agree(dist, ok, msg, sizeof msg) || !same_inputs(dist, &c, &files, msg, sizeof msg)) {
        fprintf(stderr, "remat: %s\n", msg);
        goto done;
    }
    /* only rank 0 draws: only its file system is asked (it says why), and
     * every rank learns the answer; after the reading, so that no plot
     * replaces a file a --data-list names */
    char said[2] = "";
    int can_draw = !remat_dist_is_root(dist) || ((!c.plot || cli_plot_check(c.plot)) &&
                                                 (!c.plot_res || cli_plot_check_for("--plot-residuals", c.plot_res)) &&
                                                 plot_species_named(&c.plot_opts, m));
    if (!cli_dist_agree(dist, can_draw, said, sizeof said))
        goto done;
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    /* memory can fail on one rank: agreed before remat_fit_new (collective);
     * the values below are the same on every rank, and so are their errors */
    sigma = c.sigma ? calloc((size_t)S + 1, sizeof *sigma) : NULL;
    start = calloc((size_t)P + 1, sizeof *start);
    conds = calloc((size_t)remat_mechanism_cond_count(m) + 1, sizeof *conds);
    fixed = calloc((size_t)P + 1, sizeof *fixed);
    int want_y0 = c.init || gas; /* gas: T and the composition from the files or the options */
    init = want_y0 ? calloc((size_t)S + 1, sizeof *init) : NULL;
    y0 = want_y0 ? calloc((size_t)n_data, sizeof *y0) : NULL;
    ok = start && conds && fixed && (!c.sigma || sigma) && (!want_y0 || (init && y0));
    if (!ok)
        snprintf(msg, sizeof msg, "pfr fit: out of memory for the options' vectors");
    if (!cli_dist_agree(dist, ok, msg, sizeof msg)) {
        fprintf(stderr, "remat: %s\n", msg);
        goto done;
    }
    if (c.sigma) {
        bool *named = calloc((size_t)S + 1, sizeof *named);
        int sig_ok = named && pfr_fit_parse_sigma(c.sigma, m, sigma, &o.delay_sigma, named);
        if (!named)
            fprintf(stderr, "remat: --sigma: out of memory\n");
        /* a delay's residual is not T's: --sigma T= with delays but no measured T is a mistake */
        int K = remat_gas_species_count(m), has_delay = 0, measured_T = 0;
        for (int e = 0; sig_ok && K > 0 && named[K] && e < n_data; e++) {
            has_delay |= strcmp(remat_dataset_indep_name(data[e]), "tau") == 0;
            measured_T |= remat_dataset_has_column(data[e], K);
        }
        if (sig_ok && has_delay && !measured_T) {
            fprintf(stderr, "remat: --sigma: T=%g weighs measured T profiles, and no experiment measures T: "
                            "an ignition delay's sigma is --sigma tau=S (s), or its row's sigma_tau\n",
                    sigma[K]);
            sig_ok = 0;
        }
        free(named);
        if (!sig_ok)
            goto done;
        o.sigma = sigma;
    }
    remat_mechanism_param_values(m, start);
    if (c.params && !pfr_cli_assign("--params", c.params, m, 1, start))
        goto done;
    o.start = start;
    for (int k = 0; k < remat_mechanism_cond_count(m); k++)
        conds[k] = remat_mechanism_cond_value(m, k);
    double T0 = NAN; /* gas: --cond T=.. */
    if (c.cond && !(gas ? pfr_gas_conds(c.cond, m, &T0, start) : pfr_names_conds("--cond", c.cond, m, conds)))
        goto done;
    o.conds = conds;
    if (c.free || c.fix) {
        /* --free: all fixed but the named; --fix: the named fixed */
        for (int i = 0; i < P; i++)
            fixed[i] = c.free != NULL;
        bool *named = calloc((size_t)P + 1, sizeof *named);
        int named_ok = named && pfr_names_params(c.free ? "--free" : "--fix", c.free ? c.free : c.fix, m, named);
        for (int i = 0; named_ok && i < P; i++)
            if (named[i])
                fixed[i] = c.fix != NULL;
        free(named);
        if (!named_ok)
            goto done;
        int n_free = 0;
        for (int i = 0; i < P; i++)
            n_free += !fixed[i];
        if (n_free == 0) {
            fprintf(stderr, "remat: --fix: every parameter is fixed: nothing to fit\n");
            goto done;
        }
        o.fixed = fixed;
    }
    /* --out: rank 0 writes; every rank learns whether it can (before the collectives) */
    char out_said[2] = "";
    if (c.out && !cli_dist_agree(dist, !remat_dist_is_root(dist) ||
                                           pfr_fit_check_profiles(c.out, (const char *const *)labels, n_data),
                                 out_said, sizeof out_said))
        goto done;
    if (gas) {
        /* NaN where neither option says: each file's comments must (remat/fit.h) */
        int K = remat_gas_species_count(m);
        for (int s = 0; s < S; s++)
            init[s] = NAN;
        if (c.init && remat_gas_state(m, 1.0, c.init, init) != REMAT_OK) {
            fprintf(stderr, "remat: --init: %s\n", remat_last_error());
            goto done;
        }
        init[K] = T0;
        for (int e = 0; e < n_data; e++)
            y0[e] = init;
        o.y0 = y0;
    } else if (c.init) {
        if (!pfr_cli_assign("--init", c.init, m, 0, init))
            goto done;
        for (int e = 0; e < n_data; e++)
            y0[e] = init;
        o.y0 = y0;
    }
    remat_status st = remat_fit_new(m, n_data, data, &o, &fit); /* with o.dist: collective */
    if (st != REMAT_OK) {
        if (st == REMAT_ERR_BUDGET)
            cli_dist_say("--memory-budget: ", remat_last_error());
        else
            cli_dist_say("pfr ", remat_last_error());
        goto done;
    }
    double t = now();
    st = remat_fit_run(fit, &r);
    t = now() - t;
    if (st != REMAT_OK) {
        cli_dist_say("pfr ", r.message);
        if (r.n_starts > 1 && remat_dist_is_root(dist)) /* every start failed: each one's reason */
            pfr_fit_print_failed_starts(stderr, "remat: ", m, &r);
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
            cli_dist_say("--plot-residuals: ", remat_last_error());
            status = 1;
            goto done;
        }
    }
    /* the fitted ignition delays: a collective too (each rank has its own
     * experiments' delays; rank 0 prints every one) */
    int any_delay = 0;
    for (int e = 0; e < n_data; e++)
        any_delay |= remat_gas_species_count(m) > 0 && strcmp(remat_dataset_indep_name(data[e]), "tau") == 0;
    if (any_delay) {
        delays = malloc(sizeof *delays * (size_t)n_data);
        if (!delays)
            snprintf(msg, sizeof msg, "pfr fit: out of memory for the delays");
        if (!cli_dist_agree(dist, delays != NULL, msg, sizeof msg)) {
            fprintf(stderr, "remat: %s\n", msg);
            status = 1;
            goto done;
        }
        if (remat_fit_delays(fit, r.params, delays) != REMAT_OK) { /* agreed on inside */
            cli_dist_say("pfr fit: the fitted delays: ", remat_last_error());
            status = 1;
            goto done;
        }
    }
    if (!remat_dist_is_root(dist)) {
        status = r.converged ? 0 : 3;
        goto agree;
    }
    pfr_negative neg;
    pfr_fit_warn_negative(m, fit, data, n_data, r.params, o.adaptive ? o.rtol : 0, o.adaptive ? o.atol : 0, &neg);
    double ode_stats[REMAT_ODE_STATS];
    int have_ode_stats = remat_fit_integration_stats(fit, r.params, ode_stats) == REMAT_OK;
    pfr_fit_report rep = {.mechanism = c.mechanism, .data = (const char *const *)labels, .n_data = n_data,
                          .method = remat_ode_method_name(o.method), .adaptive = o.adaptive, .rtol = o.rtol,
                          .atol = o.atol, .ode_stats = have_ode_stats ? ode_stats : NULL, .m = m,
                          .fit = fit, .r = &r, .start = start, .seconds = t, .sigma = sigma,
                          .relative = o.weighting == REMAT_FIT_WEIGHT_RELATIVE, .seed = o.seed,
                          .stats = have_stats ? &stats : NULL, .stats_why = stats_why, .history = c.history,
                          .datasets = data, .cond_default = conds, .negative = &neg, .delays = delays};
    if (c.out && !pfr_fit_write_profiles(c.out, &rep, r.params)) {
        status = 1;
        goto agree;
    }
    if (c.plot && !pfr_fit_plot(c.plot, &c.plot_opts, &rep)) {
        status = 1;
        goto agree;
    }
    if (c.plot_res && !pfr_fit_plot_residuals(c.plot_res, &c.plot_opts, &rep, data, !c.init, res)) {
        status = 1;
        goto agree;
    }
    if (!cli_outputs_finish()) { /* the plots appear together, or neither */
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
    free(delays);
    remat_fit_stats_clear(&stats);
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    for (int e = 0; e < n_data; e++) {
        remat_dataset_free(data[e]);
        free(labels[e]);
    }
    free(data);
    free(labels);
    pfr_data_files_free(&files);
    remat_mechanism_free(m);
    free(init);
    free(start);
    free(sigma);
    free(conds);
    free(fixed);
    free(y0);
    return status;
}
