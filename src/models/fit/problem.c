/*
 * problem.c — the least-squares problem of a fit: data and initial states
 * checked and laid out, the step grid planned, and the problem set up (the
 * experiments spread over the ranks, the schedule picked, the programs
 * compiled: programs.c) and released. evaluate.c runs the programs.
 *
 * Residuals are (y(t_r) - data) * mask over the full K x S grid of each
 * experiment, the mask 0 at cells not measured, so the graph needs no gather;
 * the host keeps the list of measured cells to compact them for LM.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/fit/fit_impl.h"
#include "remat/gas.h"

#define DEFAULT_STEPS_PER_SPAN 200
bool fit_exp_rows(const fit_exp *x)
{
    return x->nsteps != NULL;
}

bool fit_rows_scan(const struct remat_fit *fit)
{
    return !fit->opt.adaptive; /* every adjoint: the continuous ones wrap the scan (rows_adjoint.c) */
}

/* A weighted residual (y - data) / sigma past this squares beyond the
 * largest double (1.8e308, whose square root is 1.3e154) with room for a
 * sum: the objective would be inf, whatever the parameters. */
#define RESIDUAL_LIMIT 0x1p500

/* The cell (row r, species s, value v, weight w) of d, checked before any
 * integration: a datum so large against its sigma, or a sigma so small
 * against the data's scale, that the objective overflows is named
 * (file:line, column, where the sigma came from), not left to show as an
 * inf objective at the first iteration. */
static remat_status check_weight(const struct remat_fit *fit, const remat_dataset *d, size_t r, int s, double v,
                                 double w, double scale)
{
    const char *sp = remat_mechanism_species_name(fit->m, s), *path = remat_dataset_path(d);
    int line = remat_dataset_line(d, r), col = remat_dataset_column(d, s, 0);
    int big = !(fabs(v) * w <= RESIDUAL_LIMIT);
    if (!big && w * scale <= RESIDUAL_LIMIT)
        return REMAT_OK;
    char from[200];
    double sc = remat_dataset_sigma(d, r, s);
    int n = !isnan(sc) ? snprintf(from, sizeof from, "its sigma %g (%s:%d: column %d)", sc, path, line,
                                  remat_dataset_column(d, s, 1))
            : fit->opt.sigma ? snprintf(from, sizeof from, "its sigma %g (--sigma %s=%g)", fit->opt.sigma[s], sp,
                                        fit->opt.sigma[s])
                             : snprintf(from, sizeof from, "its sigma 1 (none given)");
    if (fit->opt.weighting == REMAT_FIT_WEIGHT_RELATIVE && n > 0 && (size_t)n < sizeof from)
        snprintf(from + n, sizeof from - (size_t)n, " times |%g| (relative weighting)", v);
    if (big)
        return rmi_error(REMAT_ERR_VALUE,
                         "fit: %s:%d: column %d ('%s'): the value %g over %s is %g, whose square overflows the "
                         "objective (beyond 1.8e308) unless the model matches it to 1 part in 1e150: rescale the "
                         "data or give a larger sigma",
                         path, line, col, sp, v, from, fabs(v) * w);
    return rmi_error(REMAT_ERR_VALUE,
                     "fit: %s:%d: column %d ('%s'): %s weights its residual by %g: against the data's scale %g a "
                     "misfit of 1 part in 1e150 already squares beyond the largest double (1.8e308), so the "
                     "objective overflows; give a larger sigma",
                     path, line, col, sp, from, w, scale);
}

/* A gas mechanism's (remat/gas.h) initial state y0 (K mole fractions, then
 * T) of experiment d: the file's '# H2 = 2' comments give the composition
 * as amounts, normalised to mole fractions (species not named: 0), its
 * '# T = 1100' the temperature; what they leave out comes from given
 * (opt.y0[e], whose entries may be NaN where every file gives them). */
static remat_status gas_initial(const struct remat_fit *fit, const remat_dataset *d, const double *given, int K,
                                double *y0)
{
    const char *path = remat_dataset_path(d);
    double sum = 0;
    int named = 0;
    for (int k = 0; k < K; k++) {
        double v = remat_dataset_initial(d, k);
        if (isnan(v))
            continue; /* the file's values are >= 0 (remat_dataset_read) */
        named = 1;
        sum += v;
    }
    if (named && !(sum > 0 && isfinite(sum)))
        return rmi_error(REMAT_ERR_VALUE, "fit: %s: the composition its comments give sums to %g", path, sum);
    for (int k = 0; k < K; k++) {
        double v = named ? remat_dataset_initial(d, k) : given ? given[k] : NAN;
        y0[k] = named ? (isnan(v) ? 0 : v / sum) : v;
        if (!isfinite(y0[k]))
            return rmi_error(REMAT_ERR_VALUE,
                             "fit: %s: no initial composition: give it in the file ('# H2 = 2' lines before "
                             "the header, amounts normalised to mole fractions) or for every experiment (--init)",
                             path);
    }
    double T = remat_dataset_initial(d, K);
    y0[K] = !isnan(T) ? T : given ? given[K] : NAN;
    if (!(y0[K] > 0 && isfinite(y0[K])))
        return rmi_error(REMAT_ERR_VALUE,
                         "fit: %s: no initial temperature: give it in the file ('# T = 1100' before the header) "
                         "or for every experiment (--cond T=1100)%s",
                         path, isnan(y0[K]) ? "" : " (it must be positive)");
    return REMAT_OK;
}

/* An ignition-delay experiment (delay.c): its one row's time is the delay,
 * a residual in T's cell (weight 1, or 1 / tau with relative weighting). */
static remat_status prepare_delay(struct remat_fit *fit, fit_exp *x)
{
    const char *path = remat_dataset_path(x->d);
    int S = fit->S;
    double tau = remat_dataset_times(x->d)[0];
    if (!fit->opt.adaptive)
        return rmi_error(REMAT_ERR_VALUE,
                         "fit: %s: an ignition delay (a file whose first column is tau) is fitted with adaptive "
                         "steps (its search reads the dense output), not fixed steps (--steps/--dt)",
                         path);
    if (x->rows != 1)
        return rmi_error(REMAT_ERR_VALUE,
                         "fit: %s:%d: an ignition-delay file gives one delay (one row under its header tau), "
                         "not %lld: one file per experiment, or a table with a column per condition (tau,T,...: "
                         "one experiment per row)",
                         path, remat_dataset_line(x->d, 1), (long long)x->rows);
    /* a tau file of more than one column is a delay table (dataset.c), whose
     * columns are conditions and initial amounts: a delay measures no species */
    for (int s = 0; s < S; s++)
        REMAT_ASSERT(!remat_dataset_has_column(x->d, s));
    if (!(tau > fit->opt.t0))
        return rmi_error(REMAT_ERR_VALUE, "fit: %s:%d: the ignition delay %.17g is not after the start t0 = %.17g",
                         path, remat_dataset_line(x->d, 0), tau, fit->opt.t0);
    x->located_p = rmi_calloc((size_t)fit->P + 1, sizeof *x->located_p);
    if (!x->located_p)
        return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    /* the delay's own sigma (a table's sigma_tau), else opt.delay_sigma: never
     * opt.sigma[T], which weighs measured T profiles */
    double sigma = remat_dataset_delay_sigma(x->d);
    if (isnan(sigma))
        sigma = fit->opt.delay_sigma > 0 ? fit->opt.delay_sigma : 1.0;
    x->target[S - 1] = tau;
    x->mask[S - 1] = (fit->opt.weighting == REMAT_FIT_WEIGHT_RELATIVE ? 1.0 / tau : 1.0) / sigma;
    x->meas[0] = S - 1;
    x->n_meas = 1;
    return REMAT_OK;
}

static remat_status prepare_experiment(struct remat_fit *fit, int e, const remat_dataset *d)
{
    fit_exp *x = &fit->exp[e];
    const char *path = remat_dataset_path(d);
    int S = fit->S;
    x->d = d;
    x->rows = (int64_t)remat_dataset_rows(d);
    x->delay = fit_delay_is(fit->m, d);
    const double *times = remat_dataset_times(d);
    if (!(times[0] >= fit->opt.t0))
        return rmi_error(REMAT_ERR_VALUE, "fit: %s: the first data row is at %s = %.17g, before the start t0 = %.17g",
                         path, remat_dataset_indep_name(d), times[0], fit->opt.t0);
    size_t cells = (size_t)x->rows * (size_t)S;
    x->y0 = rmi_calloc((size_t)S, sizeof *x->y0);
    x->cond = rmi_calloc((size_t)fit->CI + 1, sizeof *x->cond);
    x->target = rmi_calloc(cells, sizeof *x->target);
    x->mask = rmi_calloc(cells, sizeof *x->mask);
    x->meas = rmi_calloc(cells, sizeof *x->meas);
    x->r_full = rmi_calloc(cells, sizeof *x->r_full);
    x->ct = rmi_calloc(cells, sizeof *x->ct);
    x->dp = rmi_calloc((size_t)fit->P, sizeof *x->dp);
    x->dr = rmi_calloc(cells, sizeof *x->dr);
    if (!x->y0 || !x->cond || !x->target || !x->mask || !x->meas || !x->r_full || !x->ct || !x->dp || !x->dr)
        return rmi_error(REMAT_ERR_NOMEM, "fit: %s: out of memory for %zu cells", path, cells);

    for (int k = 0; k < fit->C; k++) {
        double v = remat_dataset_cond(d, k);
        x->cond[k] = isnan(v) ? fit->cond_default[k] : v;
    }
    double Pe = remat_dataset_pressure(d); /* a gas mechanism's '# P = ..' */
    if (fit->iP >= 0)
        x->cond[fit->C] = isnan(Pe) ? fit->vars.start[fit->iP] : Pe;
    else if (!isnan(Pe))
        return rmi_error(REMAT_ERR_VALUE,
                         "fit: %s:%d: the file sets the pressure P of its experiment, but P is a fitted "
                         "parameter (free) that all experiments share: fix P to give each experiment its own",
                         path, remat_dataset_setting_line(d, remat_mechanism_cond_count(fit->m), 0));
    const double *given = fit->opt.y0 ? fit->opt.y0[e] : NULL;
    /* '# A = 1' comments: those species' initial values; when they give
     * every species the first row is data like the others */
    int n_init = 0;
    for (int s = 0; s < S; s++)
        n_init += !isnan(remat_dataset_initial(d, s));
    int K = remat_gas_species_count(fit->m), gas = K > 0 && (given || n_init > 0);
    int from_row0 = !given && n_init < S && !gas; /* gas: the first row is data */
    if (gas) {
        remat_status st = gas_initial(fit, d, given, K, x->y0);
        if (st != REMAT_OK)
            return st;
    } else if (given) {
        for (int s = 0; s < S; s++) {
            if (!isfinite(given[s]))
                return rmi_error(REMAT_ERR_VALUE, "fit: %s: initial value of species '%s' is %g", path,
                                 remat_mechanism_species_name(fit->m, s), given[s]);
            x->y0[s] = given[s];
        }
        for (int s = 0; s < S; s++) /* the experiment's own comments win */
            if (!isnan(remat_dataset_initial(d, s)))
                x->y0[s] = remat_dataset_initial(d, s);
    } else if (!from_row0) {
        for (int s = 0; s < S; s++)
            x->y0[s] = remat_dataset_initial(d, s);
    } else {
        if (times[0] != fit->opt.t0)
            return rmi_error(REMAT_ERR_VALUE,
                             "fit: %s: no initial state: the first row is at %s = %.17g, not at the start "
                             "t0 = %.17g (give the initial state, e.g. --init)",
                             path, remat_dataset_indep_name(d), times[0], fit->opt.t0);
        for (int s = 0; s < S; s++) {
            if (!isnan(remat_dataset_initial(d, s))) {
                x->y0[s] = remat_dataset_initial(d, s);
                continue;
            }
            if (!remat_dataset_is_measured(d, 0, s))
                return rmi_error(REMAT_ERR_VALUE,
                                 "fit: %s: no initial state: the first row does not give species '%s' "
                                 "(give every species there, or the initial state, e.g. --init)",
                                 path, remat_mechanism_species_name(fit->m, s));
            x->y0[s] = remat_dataset_value(d, 0, s);
        }
    }
    if (x->delay)
        return prepare_delay(fit, x);
    double scale = 0; /* the largest |datum|, what a residual is measured against */
    for (int64_t r = 0; r < x->rows; r++)
        for (int s = 0; s < S; s++)
            if (remat_dataset_is_measured(d, (size_t)r, s))
                scale = fmax(scale, fabs(remat_dataset_value(d, (size_t)r, s)));
    if (scale == 0)
        scale = 1;
    x->n_meas = 0;
    for (int64_t r = 0; r < x->rows; r++) {
        if (r == 0 && from_row0)
            continue; /* the initial state itself: its residual is identically 0 */
        for (int s = 0; s < S; s++)
            if (remat_dataset_is_measured(d, (size_t)r, s)) {
                int64_t c = r * S + s;
                double v = remat_dataset_value(d, (size_t)r, s);
                /* the weight rides on the mask: r = (y - data) w, J follows */
                double sc = remat_dataset_sigma(d, (size_t)r, s);
                double w = !isnan(sc) ? 1.0 / sc : fit->opt.sigma ? 1.0 / fit->opt.sigma[s] : 1.0;
                if (fit->opt.weighting == REMAT_FIT_WEIGHT_RELATIVE) {
                    if (v == 0)
                        return rmi_error(REMAT_ERR_VALUE,
                                         "fit: %s: relative weighting divides by the data, but species '%s' "
                                         "is 0 at %s = %.17g (row %lld): give a sigma instead",
                                         path, remat_mechanism_species_name(fit->m, s),
                                         remat_dataset_indep_name(d), times[r], (long long)r + 1);
                    w /= fabs(v);
                }
                remat_status st = check_weight(fit, d, (size_t)r, s, v, w, 0); /* data too large first */
                if (st != REMAT_OK)
                    return st;
                x->target[c] = v;
                x->mask[c] = w;
                x->meas[x->n_meas++] = c;
            }
    }
    for (int64_t i = 0; i < x->n_meas; i++) { /* then sigmas too small for the data's scale */
        int64_t c = x->meas[i];
        remat_status st = check_weight(fit, d, (size_t)(c / S), (int)(c % S), x->target[c], x->mask[c], scale);
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

remat_val fit_rate_inputs(const struct remat_fit *fit, remat_fn *f, remat_val p, remat_val cond)
{
    int64_t C = fit->C, P = fit->P, iP = fit->iP;
    if (fit->CI == 0)
        return p;
    remat_val parts[4];
    int n = 0;
    if (iP >= 0) { /* p[0:iP], the experiment's pressure, p[iP+1:] */
        if (iP > 0)
            parts[n++] = remat_slice(f, p, (int64_t[]){0}, (int64_t[]){iP}, NULL);
        parts[n++] = remat_slice(f, cond, (int64_t[]){C}, (int64_t[]){C + 1}, NULL);
        if (iP + 1 < P)
            parts[n++] = remat_slice(f, p, (int64_t[]){iP + 1}, (int64_t[]){P}, NULL);
    } else {
        parts[n++] = p;
    }
    if (C > 0)
        parts[n++] = iP >= 0 ? remat_slice(f, cond, (int64_t[]){0}, (int64_t[]){C}, NULL) : cond;
    return n == 1 ? parts[0] : remat_concatenate(f, n, parts, 0);
}

void fit_rate_input_values(const struct remat_fit *fit, const fit_exp *x, const double *p, double *in)
{
    for (int i = 0; i < fit->P; i++)
        in[i] = p[i];
    for (int k = 0; k < fit->C; k++)
        in[fit->P + k] = x->cond[k];
    if (fit->iP >= 0)
        in[fit->iP] = x->cond[fit->C];
}

remat_ode_options fit_ode_options(const struct remat_fit *fit, const fit_exp *x)
{
    return (remat_ode_options){
        .method = fit->opt.method,
        .t0 = fit->opt.t0,
        .n_times = (int)x->rows,
        .times = remat_dataset_times(x->d),
        .dt = fit->dt,
        .steps = fit->steps,
        .scan = {.schedule = fit->spec, .body_policy = fit->opt.scan.body_policy},
        .adaptive = fit->opt.adaptive,
        .rtol = fit->opt.rtol,
        .atol = fit->opt.atol,
        .max_steps = fit->opt.max_steps,
        .dense = true, /* one loop whatever the rows: output times are loop data */
        .adjoint = fit->opt.adjoint,
        .n_jumps = fit->nknots, /* no step across a control profile's jump, as the reactor's outlet */
        .jump_ts = fit->knots,
    };
}

/* The step grid: default dt, the longest interval scan and the finest step. */
static remat_status plan_grid(struct remat_fit *fit)
{
    fit->dt = fit->opt.dt;
    fit->steps = fit->opt.steps;
    if (fit->opt.adaptive) { /* each experiment is one loop of at most max_steps attempts through all its rows */
        fit->longest_scan = fit->opt.max_steps ? fit->opt.max_steps : 4096;
        fit->finest_h = 0;
        return REMAT_OK;
    }
    if (fit->dt == 0 && fit->steps == 0) {
        double span = 0;
        for (int e = 0; e < fit->E; e++) {
            const fit_exp *x = &fit->exp[e];
            span = fmax(span, remat_dataset_times(x->d)[x->rows - 1] - fit->opt.t0);
        }
        if (!(span > 0))
            return rmi_error(REMAT_ERR_VALUE, "fit: every data row is at the start t0 = %.17g: nothing to fit",
                             fit->opt.t0);
        fit->dt = span / DEFAULT_STEPS_PER_SPAN;
    }
    fit->longest_scan = 0;
    fit->most_rows = 0;
    fit->finest_h = INFINITY;
    /* the per-interval grid's step counts: an input of the row scan
     * (remat_ode_integrate_rows), which takes those steps with the times
     * and counts as data, with any adjoint */
    for (int e = 0; e < fit->E; e++) {
        fit_exp *x = &fit->exp[e];
        remat_ode_options o = fit_ode_options(fit, x);
        int64_t *steps = rmi_malloc(sizeof *steps * (size_t)x->rows);
        if (!steps)
            return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
        remat_status st = remat_ode_count_steps(&o, steps, NULL);
        if (st != REMAT_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", remat_last_error());
            rmi_free(steps);
            return rmi_error(st, "fit: %s: %s", remat_dataset_path(x->d), why);
        }
        rmi_free(x->nsteps);
        x->nsteps = fit_rows_scan(fit) ? rmi_malloc(sizeof *x->nsteps * (size_t)x->rows) : NULL;
        if (fit_rows_scan(fit) && !x->nsteps) {
            rmi_free(steps);
            return rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
        }
        double prev = fit->opt.t0;
        for (int64_t k = 0; k < x->rows; k++) {
            double tk = remat_dataset_times(x->d)[k];
            if (x->nsteps)
                x->nsteps[k] = (double)steps[k]; /* below 2^53 (remat_ode_count_steps): exact */
            if (steps[k] > 0) {
                fit->longest_scan = steps[k] > fit->longest_scan ? steps[k] : fit->longest_scan;
                fit->finest_h = fmin(fit->finest_h, (tk - prev) / (double)steps[k]);
            }
            prev = tk;
        }
        fit->most_rows = x->rows > fit->most_rows ? x->rows : fit->most_rows;
        rmi_free(steps);
    }
    return REMAT_OK;
}

remat_status fit_problem_init(struct remat_fit *fit, remat_dataset *const *data)
{
    fit->exp = rmi_calloc((size_t)fit->E, sizeof *fit->exp);
    fit->grad_p = rmi_calloc((size_t)fit->P, sizeof *fit->grad_p);
    fit->pbuf = rmi_calloc((size_t)fit->P, sizeof *fit->pbuf);
    remat_status st = REMAT_OK;
    if (!fit->exp || !fit->grad_p || !fit->pbuf)
        st = rmi_error(REMAT_ERR_NOMEM, "fit: out of memory");
    fit->n_res = 0;
    fit->max_meas = 0;
    for (int e = 0; st == REMAT_OK && e < fit->E; e++) {
        st = prepare_experiment(fit, e, data[e]);
        fit->n_res += fit->exp[e].n_meas;
        if (fit->exp[e].n_meas > fit->max_meas)
            fit->max_meas = fit->exp[e].n_meas;
    }
    if (st == REMAT_OK && fit->n_res == 0)
        st = rmi_error(REMAT_ERR_VALUE, "fit: the data have no measured value after the initial states");
    if (st == REMAT_OK)
        st = plan_grid(fit);
    if (st == REMAT_OK)
        st = fit_spread_setup(fit);
    if (st == REMAT_OK)
        st = fit_classes_init(fit);
    st = fit_agree(fit->opt.dist, st); /* before the first collective */
    if (st == REMAT_OK)
        st = fit_pick_schedule(fit);
    if (st == REMAT_OK) /* a rank with no experiment runs no program */
        st = fit_compile_classes(fit, FIT_PROG_RES);
    if (st == REMAT_OK)
        st = fit_delay_compile(fit);
    st = fit_agree(fit->opt.dist, st);
    if (st != REMAT_OK)
        return st;
    fit->jac_mode = fit_jacobian_resolve(fit);
    if (fit->optimizer != REMAT_FIT_LM) /* the statistics compile a Jacobian when asked */
        return fit_compile_classes(fit, FIT_PROG_VG);
    return fit_jacobian_compile(fit);
}

void fit_problem_release(struct remat_fit *fit)
{
    for (int e = 0; fit->exp && e < fit->E; e++) {
        fit_exp *x = &fit->exp[e];
        rmi_free(x->y0);
        rmi_free(x->cond);
        rmi_free(x->target);
        rmi_free(x->nsteps);
        rmi_free(x->mask);
        rmi_free(x->meas);
        rmi_free(x->r_full);
        rmi_free(x->ct);
        rmi_free(x->dp);
        rmi_free(x->dr);
        rmi_free(x->located_p);
    }
    rmi_free(fit->exp);
    rmi_free(fit->grad_p);
    rmi_free(fit->pbuf);
    fit_classes_release(fit);
    rmi_free(fit->tan);
    fit_spread_release(fit);
}
