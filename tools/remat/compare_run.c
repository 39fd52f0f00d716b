/* compare_run.c — checkpoint schedules side by side on one problem (see compare.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "remat/remat.h"

#define MAX_SCHEDULES 32

const char compare_options_help[] =
    "  --schedules LIST   comma-separated: store-all, per-step, periodic:K, two-level[:K],\n"
    "                     binomial:S, online:S (default store-all,per-step,periodic:32,\n"
    "                     two-level,binomial:10,online:10)\n"
    "  --memory-budget B  also run the fastest schedule whose snapshots and tapes fit in\n"
    "                     B bytes (suffixes k, M, G), and flag schedules over it\n"
    "  --repeat R         runs per schedule; the median time is shown (default 5)\n"
    "  --json             print one JSON document (a list of objects) instead of a table\n"
    "  --plot FILE        draw the memory / recompute frontier (.png, .svg, .pdf, .ps)\n";

typedef struct {
    char label[112];
    remat_schedule_spec spec;
    int from_budget;
    int64_t evals, evals_pred, optimum, snapshots;
    size_t peak, peak_pred, residual, arena;
    double seconds, max_diff;
    int bitwise, over_budget;
    int64_t compiled_loops; /* scan nodes run as native loops (remat_memory_plan) */
    double *grads; /* loss then gradients, flattened */
    size_t n_vals;
} row;

static int parse_schedules(const char *list, row *rows, int *n)
{
    char *copy = strdup(list), *save = NULL;
    int ok = copy != NULL;
    for (char *tok = ok ? strtok_r(copy, ",", &save) : NULL; tok && ok; tok = strtok_r(NULL, ",", &save)) {
        if (*n >= MAX_SCHEDULES) {
            fprintf(stderr, "remat: --schedules: more than %d schedules\n", MAX_SCHEDULES);
            ok = 0;
            break;
        }
        row *r = &rows[*n];
        memset(r, 0, sizeof *r);
        if (remat_schedule_parse(tok, &r->spec) != REMAT_OK) {
            fprintf(stderr, "remat: --schedules: %s\n", remat_last_error());
            ok = 0;
            break;
        }
        remat_schedule_format(&r->spec, r->label, sizeof r->label);
        (*n)++;
    }
    if (ok && *n == 1) { /* only the store-all reference */
        fprintf(stderr, "remat: --schedules: the list is empty\n");
        ok = 0;
    }
    free(copy);
    return ok;
}

/* the slow snapshot tier's directory (--disk-dir), for compile_here */
static const char *tier_dir;

/* vg compiled for the backend REMAT_BACKEND (or --backend) names, with the
 * environment's options and --disk-dir */
static remat_status compile_here(const remat_fn *vg, remat_program **out)
{
    remat_backend *be = NULL;
    remat_compile_options o;
    remat_status st = remat_backend_from_env(&be);
    if (st == REMAT_OK)
        st = remat_compile_options_from_env(&o);
    if (st == REMAT_OK && tier_dir)
        o.tier_dir = tier_dir;
    return st == REMAT_OK ? remat_compile_opts(vg, be, &o, out) : st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Builds, compiles and runs the problem under r's schedule. */
static int run_row(const remat_problem *pb, row *r, int repeat)
{
    remat_scan_options opt = {.schedule = r->spec};
    remat_fn *vg = NULL;
    remat_program *prog = NULL;
    if (remat_problem_build(pb, &opt, &vg) != REMAT_OK || compile_here(vg, &prog) != REMAT_OK) {
        fprintf(stderr, "remat: compare: %s: %s\n", r->label, remat_last_error());
        remat_fn_free(vg);
        return 0;
    }
    int n_out = remat_program_num_outputs(prog);
    remat_tensor out[8];
    size_t total = 0;
    for (int i = 0; i < n_out; i++) {
        remat_tensor d = remat_program_output_desc(prog, i);
        total += (size_t)remat_shape_numel(&d.shape);
    }
    r->grads = calloc(total ? total : 1, sizeof *r->grads);
    r->n_vals = total;
    size_t off = 0;
    for (int i = 0; i < n_out; i++) {
        out[i] = remat_program_output_desc(prog, i);
        out[i].data = r->grads + off;
        off += (size_t)remat_shape_numel(&out[i].shape);
    }
    double *times = malloc(sizeof *times * (size_t)repeat);
    remat_stats st;
    int ok = r->grads && times;
    if (!ok)
        fprintf(stderr, "remat: compare: %s: out of memory\n", r->label);
    for (int k = 0; k < repeat && ok; k++) {
        ok = remat_run(prog, remat_problem_num_inputs(pb), remat_problem_inputs(pb), n_out, out, &st) == REMAT_OK;
        times[k] = st.seconds;
        if (!ok)
            fprintf(stderr, "remat: compare: %s: %s\n", r->label, remat_last_error());
    }
    if (ok) {
        qsort(times, (size_t)repeat, sizeof *times, cmp_double);
        r->seconds = times[repeat / 2];
        remat_memory_plan plan;
        remat_program_plan(prog, &plan);
        remat_schedule_cost cost;
        remat_schedule_predict(&r->spec, remat_problem_steps(pb), &cost);
        r->evals = st.forward_evals;
        r->evals_pred = cost.forward_evals;
        r->snapshots = cost.peak_snapshots;
        r->optimum = cost.peak_snapshots > 0 ? remat_binomial_optimum(remat_problem_steps(pb), cost.peak_snapshots)
                                             : remat_problem_steps(pb);
        r->peak = st.peak_snapshot_bytes;
        r->peak_pred = plan.peak_snapshot_bytes;
        r->residual = st.residual_bytes;
        r->arena = st.peak_arena_bytes;
        r->compiled_loops = plan.compiled_loops;
    }
    free(times);
    remat_program_free(prog);
    remat_fn_free(vg);
    return ok;
}

/* The fastest schedule that fits the budget, from store-all's plan of one
 * carry and one step tape. */
static int budget_row(const remat_problem *pb, const compare_options *co, row *r)
{
    const int64_t budget = co->budget;
    remat_scan_options o = {.schedule = {.kind = REMAT_SCHED_STORE_ALL}};
    remat_fn *vg = NULL;
    remat_program *pr = NULL;
    remat_memory_plan plan = {0};
    if (remat_problem_build(pb, &o, &vg) != REMAT_OK || compile_here(vg, &pr) != REMAT_OK) {
        fprintf(stderr, "remat: compare: store-all: %s\n", remat_last_error());
        remat_fn_free(vg);
        return 0;
    }
    remat_program_plan(pr, &plan);
    remat_program_free(pr);
    remat_fn_free(vg);
    memset(r, 0, sizeof *r);
    if (co->disk_budget >= 0 ? remat_schedule_for_tiers(budget, co->disk_budget, remat_problem_steps(pb),
                                                        (int64_t)plan.scan_carry_bytes, (int64_t)plan.scan_tape_bytes,
                                                        co->disk_write, co->disk_read, &r->spec) != REMAT_OK
                             : remat_schedule_for_budget(budget, remat_problem_steps(pb), (int64_t)plan.scan_carry_bytes,
                                                         (int64_t)plan.scan_tape_bytes, &r->spec) != REMAT_OK) {
        fprintf(stderr, "remat: %s: %s\n", co->disk_budget >= 0 ? "--memory-budget, --disk-budget" : "--memory-budget",
                remat_last_error());
        return 0;
    }
    char spec[96];
    remat_schedule_format(&r->spec, spec, sizeof spec);
    snprintf(r->label, sizeof r->label, "budget: %s", spec);
    r->from_budget = 1;
    return 1;
}

static void print_table(const remat_problem *pb, const row *rows, int n, int64_t budget, int adaptive)
{
    printf("problem %s, %lld steps: %s\n", remat_problem_name(pb), (long long)remat_problem_steps(pb),
           remat_problem_description(pb));
    if (adaptive)
        printf("adaptive: the loop's length is known only as it runs, so the predicted peak bytes are a bound\n"
               "(the store's capacity within max_steps), not the peak; forward steps are predicted for the\n"
               "%lld attempts of one forward run%s\n",
               (long long)remat_problem_steps(pb), budget >= 0 ? "; over budget is judged on the measured peak" : "");
    if (budget >= 0)
        printf("memory budget %lld bytes for snapshots and step tapes\n", (long long)budget);
    printf("%-22s %9s  %27s  %25s  %10s  %12s\n", "schedule", "snapshots", "forward steps meas/pred/opt",
           adaptive ? "peak bytes meas/bound" : "peak bytes meas/pred", "time ms", "max|dgrad|");
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        char ev[64], pk[64];
        snprintf(ev, sizeof ev, "%lld/%lld/%lld", (long long)r->evals, (long long)r->evals_pred, (long long)r->optimum);
        snprintf(pk, sizeof pk, "%zu/%zu", r->peak, r->peak_pred);
        printf("%-22s %9lld  %27s  %25s  %10.3f  %12.3g%s%s\n", r->label, (long long)r->snapshots, ev, pk,
               r->seconds * 1e3, r->max_diff, r->bitwise ? "" : " (not bitwise equal)",
               r->over_budget ? "  over budget" : "");
    }
    int64_t compiled = 0;
    for (int i = 0; i < n; i++)
        compiled += rows[i].compiled_loops > 0;
    printf("times with the scan body %s\n", compiled == n   ? "compiled into native loops (libgccjit)"
                                     : compiled == 0 ? "interpreted op by op"
                                                     : "compiled for some schedules only");
}

static void print_json(const remat_problem *pb, const row *rows, int n, int64_t budget, int adaptive)
{
    printf("[\n");
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        printf("  {\"problem\": ");
        cli_json_string(stdout, remat_problem_name(pb));
        printf(", \"steps\": %lld, \"schedule\": \"%s\", \"from_budget\": %s, "
               "\"snapshots\": %lld, \"forward_evals\": %lld, \"forward_evals_predicted\": %lld, "
               "\"binomial_optimum\": %lld, \"peak_bytes\": %zu, \"peak_bytes_predicted\": %zu, "
               "\"residual_bytes\": %zu, \"arena_bytes\": %zu, \"seconds\": %.9g, \"max_abs_grad_diff\": %.17g, "
               "\"peak_bytes_predicted_is_bound\": %s, "
               "\"bitwise_equal\": %s, \"memory_budget\": %lld, \"over_budget\": %s, \"compiled_loops\": %lld, "
               "\"loss\": %.17g}%s\n",
               (long long)remat_problem_steps(pb), r->label, r->from_budget ? "true" : "false",
               (long long)r->snapshots, (long long)r->evals, (long long)r->evals_pred, (long long)r->optimum, r->peak,
               r->peak_pred, r->residual, r->arena, r->seconds, r->max_diff, adaptive ? "true" : "false",
               r->bitwise ? "true" : "false",
               (long long)budget, r->over_budget ? "true" : "false", (long long)r->compiled_loops, r->grads[0],
               i + 1 < n ? "," : "");
    }
    printf("]\n");
}

static int plot(const char *path, const remat_problem *pb, const row *rows, int n)
{
    cli_series s[MAX_SCHEDULES + 1];
    double x[MAX_SCHEDULES + 1], y[MAX_SCHEDULES + 1];
    for (int i = 0; i < n; i++) {
        x[i] = rows[i].peak > 0 ? (double)rows[i].peak : 1.0;
        y[i] = (double)rows[i].evals > 0 ? (double)rows[i].evals : 1.0;
        s[i] = (cli_series){.label = rows[i].label, .n = 1, .x = &x[i], .y = &y[i], .points_only = 1};
    }
    char title[160];
    snprintf(title, sizeof title, "%s, %lld steps: memory vs recomputation", remat_problem_name(pb),
             (long long)remat_problem_steps(pb));
    return cli_plot(path, title, "peak bytes of snapshots + tapes (log10)", "forward step evaluations (log10)", 1, 1,
                    n, s);
}

int compare_run(const remat_problem *pb, const compare_options *o)
{
    if (o->plot_path && !cli_plot_check(o->plot_path))
        return 2;
    row *rows = calloc(MAX_SCHEDULES + 2, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "remat: compare: out of memory\n");
        return 1;
    }
    int n = 0, status = 0;
    /* row 0 is the store-all reference, shown only if asked for */
    rows[0].spec = (remat_schedule_spec){.kind = REMAT_SCHED_STORE_ALL};
    snprintf(rows[0].label, sizeof rows[0].label, "store-all");
    n = 1;
    if (!parse_schedules(o->schedules, rows, &n)) {
        status = 2;
        goto out;
    }
    if (o->budget >= 0) {
        tier_dir = o->disk_dir;
        if (!budget_row(pb, o, &rows[n])) {
            status = 1;
            goto out;
        }
        n++;
    }
    for (int i = 0; i < n; i++)
        if (!run_row(pb, &rows[i], o->repeat)) {
            status = 1;
            goto out;
        }
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        r->bitwise = r->n_vals == rows[0].n_vals && !memcmp(r->grads, rows[0].grads, sizeof(double) * r->n_vals);
        r->max_diff = 0;
        for (size_t k = 1; k < r->n_vals && k < rows[0].n_vals; k++)
            r->max_diff = fmax(r->max_diff, fabs(r->grads[k] - rows[0].grads[k]));
        /* fixed loops: the plan's peak is the run's; an adaptive loop's plan
         * is a bound, and the run's peak is what the budget is about */
        r->over_budget = o->budget >= 0 && (int64_t)(o->adaptive ? r->peak : r->peak_pred) > o->budget;
    }
    row *shown = rows + 1; /* the listed schedules (and the budget's pick) */
    int n_shown = n - 1;
    if (o->json)
        print_json(pb, shown, n_shown, o->budget, o->adaptive);
    else
        print_table(pb, shown, n_shown, o->budget, o->adaptive);
    if ((o->plot_path && !plot(o->plot_path, pb, shown, n_shown)) || !cli_outputs_finish())
        status = 1;
out:
    for (int i = 0; i < MAX_SCHEDULES + 2; i++)
        free(rows[i].grads);
    free(rows);
    return status;
}
