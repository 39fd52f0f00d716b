/* pfr_fit_out.c — `remat pfr fit`'s table and JSON document (pfr_fit_out.h); its plots: pfr_fit_plot.c. */
#include "pfr_fit_out.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pfr_cli.h"

static void put_double(FILE *f, double v)
{
    char buf[40];
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

static void put_params(FILE *f, int n, char *const *names, const double *v)
{
    fputc('{', f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", " : "", f);
        cli_json_string(f, names[i]);
        fputs(": ", f);
        put_double(f, v[i]);
    }
    fputc('}', f);
}

void pfr_fit_print_failed_starts(FILE *f, const char *indent, const remat_mechanism *m, const remat_fit_result *r)
{
    int P = remat_mechanism_param_count(m);
    for (int k = 0; r->start_messages && r->start_params && k < r->n_starts; k++) {
        if (!isnan(r->start_objectives[k]))
            continue;
        fprintf(f, "%sstart %d failed, from ", indent, k);
        for (int i = 0; i < P; i++)
            fprintf(f, "%s%s=%.6g", i ? ", " : "", remat_mechanism_param_name(m, i),
                    r->start_params[(size_t)k * (size_t)P + (size_t)i]);
        fprintf(f, ": %s\n", r->start_messages[k] ? r->start_messages[k] : "(no message: out of memory)");
    }
}

static const char *schedule_text(const pfr_fit_report *rep, char *buf, size_t len)
{
    remat_schedule_spec spec;
    remat_fit_schedule(rep->fit, &spec);
    remat_schedule_format(&spec, buf, len);
    return buf;
}

static void print_weights(const pfr_fit_report *rep)
{
    if (!rep->sigma && !rep->relative)
        return;
    printf("weights: residual / %s", rep->relative ? "(sigma |data|)" : "sigma");
    int S = remat_mechanism_species_count(rep->m);
    for (int s = 0; rep->sigma && s < S; s++)
        printf("%s%s=%g", s ? ", " : ", sigma ", remat_mechanism_species_name(rep->m, s), rep->sigma[s]);
    putchar('\n');
}

static void print_stats_table(const pfr_fit_report *rep)
{
    const remat_fit_result *r = rep->r;
    const remat_fit_stats *st = rep->stats;
    int P = r->n_params;
    if (!st) {
        printf("statistics: not available: %s\n", rep->stats_why);
        printf("%-16s %16s %16s\n", "parameter", "start", "fitted");
        for (int i = 0; i < P; i++)
            printf("%-16s %16.9g %16.9g\n", r->param_names[i], rep->start[i], r->params[i]);
        return;
    }
    printf("degrees of freedom %lld, residual standard deviation %.6g (s^2 = SSE / dof), t(0.975) = %.6g\n",
           (long long)st->dof, sqrt(st->s2), st->t95);
    /* a gas mechanism's 1 + 4N parameters, most fixed: the free ones only (--json has all) */
    int gas = remat_gas_species_count(rep->m) > 0, n_hidden = 0;
#define HIDDEN(i) (gas && isnan(st->se[i])) /* fixed parameters' standard errors are NaN */
    printf("%-16s %16s %16s %12s %16s %16s\n", "parameter", "start", "fitted", "std. error", "95% CI low",
           "95% CI high");
    for (int i = 0; i < P; i++) {
        if (HIDDEN(i))
            n_hidden++;
        else if (isnan(st->se[i]))
            printf("%-16s %16.9g %16.9g %12s\n", r->param_names[i], rep->start[i], r->params[i], "(fixed)");
        else
            printf("%-16s %16.9g %16.9g %12.4g %16.9g %16.9g\n", r->param_names[i], rep->start[i], r->params[i],
                   st->se[i], st->ci_lo[i], st->ci_hi[i]);
    }
    if (n_hidden)
        printf("(%d more parameters fixed at their start values; --json lists them)\n", n_hidden);
    printf("correlation\n%-16s", "");
    for (int j = 0; j < P; j++)
        if (!HIDDEN(j))
            printf(" %8.8s", r->param_names[j]);
    putchar('\n');
    for (int i = 0; i < P; i++) {
        if (HIDDEN(i))
            continue;
        printf("%-16s", r->param_names[i]);
        for (int j = 0; j < P; j++) {
            if (HIDDEN(j))
                continue;
            double c = st->corr[(size_t)i * (size_t)P + (size_t)j];
            if (isnan(c))
                printf(" %8s", "-");
            else
                printf(" %8.4f", c);
        }
        putchar('\n');
    }
#undef HIDDEN
    if (st->n_unidentifiable) {
        printf("warning: not identifiable from these data:");
        for (int i = 0, k = 0; i < P; i++)
            if (st->unidentifiable[i])
                printf("%s %s", k++ ? "," : "", r->param_names[i]);
        printf(" (J^T J condition number %.3g: a singular value of J, columns scaled by |p|, below %g times the "
               "largest; their standard errors mean little)\n",
               st->cond, REMAT_FIT_IDENTIFIABLE_RTOL);
    }
}

double pfr_fit_cond(const pfr_fit_report *rep, int e, int k)
{
    double v = remat_dataset_cond(rep->datasets[e], k);
    return isnan(v) ? rep->cond_default[k] : v;
}

/* A gas mechanism's (remat/gas.h) conditions of experiment e: its initial
 * T (from its file or --cond) and the pressure P (its file's '# P', else
 * the parameter's: files set P only while it is fixed, remat/fit.h); 0 for
 * other mechanisms. */
static int gas_conds(const pfr_fit_report *rep, int e, const char **names, double *v)
{
    int K = remat_gas_species_count(rep->m);
    if (K == 0)
        return 0;
    double Pe = remat_dataset_pressure(rep->datasets[e]);
    names[0] = "T", v[0] = remat_fit_initial_state(rep->fit, e)[K];
    names[1] = "P", v[1] = isnan(Pe) ? rep->r->params[remat_mechanism_param_find(rep->m, "P")] : Pe;
    return 2;
}

/* Whether experiment e is an ignition delay (remat/fit.h "Ignition delays":
 * a gas mechanism's file whose first column is tau). */
static int is_delay(const pfr_fit_report *rep, int e)
{
    return remat_gas_species_count(rep->m) > 0 && strcmp(remat_dataset_indep_name(rep->datasets[e]), "tau") == 0;
}

int pfr_fit_conditions_text(const pfr_fit_report *rep, int e, char *buf, size_t cap)
{
    int C = remat_mechanism_cond_count(rep->m);
    const char *gn[2];
    double gv[2];
    int G = gas_conds(rep, e, gn, gv);
    size_t o = 0;
    buf[0] = '\0';
    for (int k = 0; k < C + G && o + 1 < cap; k++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s = %.10g", k ? ", " : "",
                              k < C ? remat_mechanism_cond_name(rep->m, k) : gn[k - C],
                              k < C ? pfr_fit_cond(rep, e, k) : gv[k - C]);
    return C + G;
}

/* One line per experiment with its conditions (none: nothing). */
static void print_conditions(const pfr_fit_report *rep)
{
    char text[512];
    for (int e = 0; e < rep->n_data; e++) {
        if (pfr_fit_conditions_text(rep, e, text, sizeof text) == 0)
            return;
        printf("experiment %d (%s): %s", e + 1, rep->data[e], text);
        if (is_delay(rep, e)) {
            double tau = rep->delays ? rep->delays[e] : NAN;
            printf("; ignition delay %.10g s, fitted %.10g s", remat_dataset_times(rep->datasets[e])[0], tau);
        }
        putchar('\n');
    }
}

void pfr_fit_print_table(const pfr_fit_report *rep)
{
    const remat_fit_result *r = rep->r;
    char sched[48];
    printf("fit of %s to %d experiment%s, %lld measured values\n", rep->mechanism, rep->n_data,
           rep->n_data > 1 ? "s" : "", (long long)r->n_residuals);
    printf("optimizer %s, %s Jacobian, %s%s steps, schedule %s\n", r->optimizer,
           remat_fit_jacobian_name(remat_fit_jacobian_mode(rep->fit)), rep->adaptive ? "adaptive " : "", rep->method,
           schedule_text(rep, sched, sizeof sched));
    if (rep->ode_stats)
        printf("integration at the optimum: %.0f %s steps%s", rep->ode_stats[REMAT_ODE_STAT_ACCEPTED],
               rep->adaptive ? "accepted" : "fixed", rep->adaptive ? "" : "\n");
    if (rep->ode_stats && rep->adaptive)
        printf(", %.0f rejected (rtol %g, atol %g)\n", rep->ode_stats[REMAT_ODE_STAT_REJECTED], rep->rtol, rep->atol);
    print_weights(rep);
    print_conditions(rep);
    printf("%s\n", r->message);
    printf("%d iterations, %lld program runs, %.3f s\n", r->iterations, (long long)r->evaluations, rep->seconds);
    if (r->n_starts > 1) {
        printf("starts: %d (seed %llu), %d reached the best within 1e-4 relative, %d failed\n", r->n_starts,
               (unsigned long long)rep->seed, r->starts_at_best, r->starts_failed);
        pfr_fit_print_failed_starts(stdout, "  ", rep->m, r);
    }
    printf("sum of squared residuals %.6g (start %.6g)\n", r->objective,
           r->n_history ? r->history_objective[0] : NAN);
    print_stats_table(rep);
}

static void put_stats_json(const pfr_fit_report *rep)
{
    const remat_fit_result *r = rep->r;
    const remat_fit_stats *st = rep->stats;
    int P = r->n_params;
    printf(",\n \"statistics\": ");
    if (!st) {
        printf("{\"available\": false, \"reason\": ");
        cli_json_string(stdout, rep->stats_why);
        putchar('}');
        return;
    }
    printf("{\"available\": true, \"dof\": %lld, \"s2\": ", (long long)st->dof);
    put_double(stdout, st->s2);
    printf(", \"t95\": ");
    put_double(stdout, st->t95);
    printf(", \"condition_number\": ");
    put_double(stdout, st->cond);
    printf(",\n  \"std_errors\": ");
    put_params(stdout, P, r->param_names, st->se);
    printf(",\n  \"ci95_low\": ");
    put_params(stdout, P, r->param_names, st->ci_lo);
    printf(",\n  \"ci95_high\": ");
    put_params(stdout, P, r->param_names, st->ci_hi);
    printf(",\n  \"correlation\": [");
    for (int i = 0; i < P; i++) {
        printf("%s[", i ? ", " : "");
        for (int j = 0; j < P; j++) {
            fputs(j ? ", " : "", stdout);
            put_double(stdout, st->corr[(size_t)i * (size_t)P + (size_t)j]);
        }
        putchar(']');
    }
    printf("],\n  \"not_identifiable\": [");
    for (int i = 0, k = 0; i < P; i++)
        if (st->unidentifiable[i]) {
            fputs(k++ ? ", " : "", stdout);
            cli_json_string(stdout, r->param_names[i]);
        }
    printf("]}");
}

void pfr_fit_print_json(const pfr_fit_report *rep)
{
    const remat_fit_result *r = rep->r;
    char sched[48];
    printf("{\"mechanism\": ");
    cli_json_string(stdout, rep->mechanism);
    printf(", \"data\": [");
    for (int e = 0; e < rep->n_data; e++) {
        fputs(e ? ", " : "", stdout);
        cli_json_string(stdout, rep->data[e]);
    }
    printf("], \"conditions\": [");
    for (int e = 0, C = remat_mechanism_cond_count(rep->m); e < rep->n_data; e++) {
        fputs(e ? ", " : "", stdout);
        putchar('{');
        for (int k = 0; k < C; k++) {
            fputs(k ? ", " : "", stdout);
            cli_json_string(stdout, remat_mechanism_cond_name(rep->m, k));
            fputs(": ", stdout);
            put_double(stdout, pfr_fit_cond(rep, e, k));
        }
        const char *gn[2];
        double gv[2];
        for (int k = 0, G = gas_conds(rep, e, gn, gv); k < G; k++) {
            printf("%s\"%s\": ", C + k ? ", " : "", gn[k]);
            put_double(stdout, gv[k]);
        }
        putchar('}');
    }
    /* ignition-delay experiments: measured and fitted delays (null for the others) */
    int any_delay = 0;
    for (int e = 0; e < rep->n_data; e++)
        any_delay |= is_delay(rep, e);
    for (int e = 0; any_delay && e < rep->n_data; e++) {
        fputs(e ? ", " : "], \"delays\": [", stdout);
        if (!is_delay(rep, e)) {
            fputs("null", stdout);
            continue;
        }
        double tau = rep->delays ? rep->delays[e] : NAN; /* NaN: not reached */
        printf("{\"measured\": ");
        put_double(stdout, remat_dataset_times(rep->datasets[e])[0]);
        printf(", \"fitted\": ");
        put_double(stdout, tau);
        putchar('}');
    }
    printf("], \"optimizer\": \"%s\", \"jacobian\": \"%s\", \"method\": \"%s\", \"schedule\": \"%s\",\n",
           r->optimizer, remat_fit_jacobian_name(remat_fit_jacobian_mode(rep->fit)), rep->method,
           schedule_text(rep, sched, sizeof sched));
    printf(" \"integrator\": {\"method\": \"%s\", \"adaptive\": %s", rep->method, rep->adaptive ? "true" : "false");
    if (rep->adaptive) {
        printf(", \"rtol\": ");
        put_double(stdout, rep->rtol);
        printf(", \"atol\": ");
        put_double(stdout, rep->atol);
    }
    if (rep->ode_stats)
        printf(", \"accepted\": %.0f, \"rejected\": %.0f", rep->ode_stats[REMAT_ODE_STAT_ACCEPTED],
               rep->ode_stats[REMAT_ODE_STAT_REJECTED]);
    printf("},\n");
    printf(" \"weighting\": \"%s\", \"sigma\": ", rep->relative ? "relative" : "none");
    if (rep->sigma) {
        int S = remat_mechanism_species_count(rep->m);
        putchar('{');
        for (int s = 0; s < S; s++) {
            fputs(s ? ", " : "", stdout);
            cli_json_string(stdout, remat_mechanism_species_name(rep->m, s));
            fputs(": ", stdout);
            put_double(stdout, rep->sigma[s]);
        }
        putchar('}');
    } else {
        fputs("null", stdout);
    }
    printf(",\n \"objective\": ");
    put_double(stdout, r->objective);
    printf(", \"params\": ");
    put_params(stdout, r->n_params, r->param_names, r->params);
    printf(",\n \"start\": ");
    put_params(stdout, r->n_params, r->param_names, rep->start);
    printf(", \"iterations\": %d, \"evaluations\": %lld, \"n_residuals\": %lld, \"converged\": %s, \"seconds\": ",
           r->iterations, (long long)r->evaluations, (long long)r->n_residuals, r->converged ? "true" : "false");
    put_double(stdout, rep->seconds);
    printf(",\n \"starts\": {\"n\": %d, \"seed\": %llu, \"at_best\": %d, \"failed\": %d, \"objectives\": [",
           r->n_starts, (unsigned long long)rep->seed, r->starts_at_best, r->starts_failed);
    for (int k = 0; k < r->n_starts; k++) {
        fputs(k ? ", " : "", stdout);
        put_double(stdout, r->start_objectives[k]);
    }
    printf("], \"failed_starts\": [");
    for (int k = 0, j = 0; r->start_params && k < r->n_starts; k++) {
        if (!isnan(r->start_objectives[k]))
            continue;
        printf("%s{\"start\": %d, \"params\": ", j++ ? ", " : "", k);
        put_params(stdout, r->n_params, r->param_names, r->start_params + (size_t)k * (size_t)r->n_params);
        printf(", \"message\": ");
        cli_json_string(stdout, r->start_messages && r->start_messages[k] ? r->start_messages[k] : "");
        putchar('}');
    }
    printf("]}");
    put_stats_json(rep);
    printf(",\n \"negative\": ");
    pfr_cli_negative_json(stdout, rep->m, rep->negative, rep->data);
    printf(",\n \"message\": ");
    cli_json_string(stdout, r->message);
    if (rep->history) {
        printf(",\n \"history\": [");
        for (int h = 0; h < r->n_history; h++) {
            printf("%s\n  {\"objective\": ", h ? "," : "");
            put_double(stdout, r->history_objective[h]);
            printf(", \"params\": ");
            put_params(stdout, r->n_params, r->param_names, r->history_params + (size_t)h * (size_t)r->n_params);
            putchar('}');
        }
        putchar(']');
    }
    printf("}\n");
}

/* DIR/<the data file's name>: where --out writes experiment e's profile. */
static char *profile_path(const char *dir, const char *data_path)
{
    const char *base = strrchr(data_path, '/');
    base = base ? base + 1 : data_path;
    size_t n = strlen(dir) + strlen(base) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", base);
    return p;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static const char *const *sort_data; /* qsort's context: the --data paths */

static int by_base_name(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    int c = strcmp(base_name(sort_data[i]), base_name(sort_data[j]));
    return c ? c : (i > j) - (i < j);
}

/* Two experiments whose files have the same name would write one profile
 * twice (DIR/<name>): found by sorting the names, before any work. */
static int same_names(const char *const *data, int n_data)
{
    int *ix = malloc(sizeof *ix * (size_t)(n_data ? n_data : 1));
    if (!ix) {
        fprintf(stderr, "remat: --out: out of memory\n");
        return 1;
    }
    for (int e = 0; e < n_data; e++)
        ix[e] = e;
    sort_data = data;
    qsort(ix, (size_t)n_data, sizeof *ix, by_base_name);
    int clash = 0;
    for (int e = 1; e < n_data && !clash; e++)
        if (strcmp(base_name(data[ix[e - 1]]), base_name(data[ix[e]])) == 0) {
            fprintf(stderr,
                    "remat: --out: experiments %d (%s) and %d (%s) have the same file name '%s', so both "
                    "profiles would be DIR/%s: give the data files distinct names, or leave out --out\n",
                    ix[e - 1] + 1, data[ix[e - 1]], ix[e] + 1, data[ix[e]], base_name(data[ix[e]]),
                    base_name(data[ix[e]]));
            clash = 1;
        }
    free(ix);
    return clash;
}

int pfr_fit_check_profiles(const char *dir, const char *const *data, int n_data)
{
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "remat: --out: %s is not a directory (it must exist)\n", dir);
        return 0;
    }
    if (same_names(data, n_data))
        return 0;
    for (int e = 0; e < n_data; e++) {
        char *p = profile_path(dir, data[e]);
        int ok = p && cli_out_check("--out", p);
        free(p);
        if (!ok)
            return 0;
    }
    return 1;
}

int pfr_fit_write_profiles(const char *dir, const pfr_fit_report *rep, const double *params)
{
    const remat_mechanism *m = rep->m;
    int S = remat_mechanism_species_count(m);
    for (int e = 0; e < rep->n_data; e++) {
        const remat_dataset *d = rep->datasets[e];
        size_t rows = remat_dataset_rows(d);
        double *y = malloc(sizeof *y * rows * (size_t)(S ? S : 1));
        char *path = profile_path(dir, rep->data[e]);
        cli_out o;
        int ok = y && path;
        if (!ok)
            fprintf(stderr, "remat: --out: out of memory\n");
        if (ok && remat_fit_predict(rep->fit, e, params, (int)rows, remat_dataset_times(d), y) != REMAT_OK) {
            fprintf(stderr, "remat: --out: %s: %s\n", rep->data[e], remat_last_error());
            ok = 0;
        }
        if (ok && !cli_out_open_for(&o, "--out", path))
            ok = 0;
        if (ok) {
            fputs(remat_dataset_indep_name(d), o.f);
            for (int s = 0; s < S; s++)
                fprintf(o.f, ",%s", remat_mechanism_species_name(m, s));
            fputc('\n', o.f);
            for (size_t r = 0; r < rows; r++) {
                fprintf(o.f, "%.17g", remat_dataset_times(d)[r]);
                for (int s = 0; s < S; s++)
                    fprintf(o.f, ",%.17g", y[r * (size_t)S + (size_t)s]);
                fputc('\n', o.f);
            }
            ok = ferror(o.f) ? cli_out_fail(&o, errno ? errno : EIO) : cli_out_commit(&o);
        }
        free(y);
        free(path);
        if (!ok)
            return 0;
    }
    return 1;
}
