/*
 * pfr_adjoints.c — `remat pfr compare --adjoints`: seed 004 §8's table, the
 * goal species' outlet concentration and its gradient by three adjoints —
 * recursive (the discrete adjoint under a binomial or online schedule,
 * diffrax's RecursiveCheckpointAdjoint), backsolve (the continuous adjoint,
 * BacksolveAdjoint), interpolating (the continuous adjoint over the forward
 * recomputed from checkpoints, CVODES's CVodeB) and direct (the discrete
 * adjoint storing every step, DirectAdjoint) — with steps, memory and time
 * of each, as a table or (--json) one JSON object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_adjoints.h"

typedef struct {
    const char *label;
    remat_ode_adjoint adjoint;
    remat_schedule_spec schedule;
} adjoint_row;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* C_s(L) and d C_s(L) / d inputs under row's adjoint: a compiled value_and_grad */
static remat_status build(const pfr_setup *su, const adjoint_row *row, remat_program **out)
{
    int64_t S = su->S, PI = remat_mechanism_input_count(su->mech);
    double L = su->opt.length;
    remat_ode_options oo = {.method = su->opt.method, .n_times = 1, .times = &L, .dt = su->opt.dt,
                            .steps = su->opt.steps, .scan = {.schedule = row->schedule}, .adjoint = row->adjoint};
    remat_fn *f = remat_fn_new("pfr_adjoints"), *g = NULL;
    if (!f)
        return REMAT_ERR_NOMEM;
    remat_val y0 = remat_arg(f, "inlet", REMAT_F64, 1, &S);
    remat_val p = PI ? remat_arg(f, "inputs", REMAT_F64, 1, &PI) : REMAT_NONE, ys;
    remat_status st = remat_ode_integrate(f, su->mech, &oo, y0, p, &ys);
    if (st == REMAT_OK) {
        remat_fn_output(f, remat_index(f, remat_index(f, ys, 0), su->opt.species));
        st = remat_value_and_grad(f, 1, (int[]){1}, &g);
    }
    if (st == REMAT_OK)
        st = remat_compile_opts(g, NULL, su->opt.compile, out);
    remat_fn_free(g);
    remat_fn_free(f);
    return st;
}

/* What the interpolating adjoint keeps for n fixed steps of S species and
 * PI inputs (interp.c): its checkpoints (at most 64, every `every` steps,
 * every doubling when they fill), one segment's step ends (t, y, f) and the
 * adjoint state [lambda, mu] */
static size_t interp_store(int64_t n, int64_t S, int64_t PI)
{
    int64_t every = 1;
    while (n / every + 1 > 64)
        every *= 2;
    return sizeof(double) * (size_t)((n / every + 1) * S + (every + 1) * (2 * S + 1) + S + PI);
}

int pfr_compare_adjoints(const pfr_setup *su, int repeat, int json)
{
    const remat_mechanism *m = su->mech;
    int64_t S = su->S, P = su->P, PI = remat_mechanism_input_count(m);
    if (su->opt.adaptive) {
        fprintf(stderr, "remat: pfr compare --adjoints: compares fixed-step integrations, steps and memory "
                        "per step: give --steps or --dt\n");
        return 2;
    }
    remat_schedule_spec rec = su->opt.schedule;
    if (rec.kind != REMAT_SCHED_BINOMIAL && rec.kind != REMAT_SCHED_ONLINE) {
        fprintf(stderr, "remat: pfr compare --adjoints: --schedule %s is not recursive: give binomial:S or online:S "
                        "(the recursive row; store-all is the direct row)\n", su->schedule);
        return 2;
    }
    char rec_label[80];
    snprintf(rec_label, sizeof rec_label, "recursive (%s)", su->schedule);
    enum { NR = 4 };
    const adjoint_row rows[NR] = {
        {rec_label, REMAT_ODE_ADJOINT_DISCRETE, rec},
        {"backsolve", REMAT_ODE_ADJOINT_BACKSOLVE, {0}},
        {"interpolating", REMAT_ODE_ADJOINT_INTERPOLATING, {0}},
        {"direct (store-all)", REMAT_ODE_ADJOINT_DISCRETE, {.kind = REMAT_SCHED_STORE_ALL}},
    };
    double L = su->opt.length;
    remat_ode_options oo = {.method = su->opt.method, .n_times = 1, .times = &L, .dt = su->opt.dt,
                            .steps = su->opt.steps};
    int64_t steps = 0;
    remat_ode_count_steps(&oo, NULL, &steps); /* checked by pfr_cli_setup */
    double *in = calloc((size_t)PI + 1, sizeof *in), *grad = calloc((size_t)PI + 1, sizeof *grad);
    double *times = calloc((size_t)repeat, sizeof *times);
    double value[NR], *grads = calloc((size_t)(NR * PI) + 1, sizeof *grads), sec[NR];
    size_t store[NR], arena[NR];
    if (!in || !grad || !times || !grads) {
        fprintf(stderr, "remat: out of memory\n");
        free(in), free(grad), free(times), free(grads);
        return 1;
    }
    memcpy(in, su->params, sizeof *in * (size_t)P);
    for (int64_t c = P; c < PI; c++)
        in[c] = su->conds[c - P];
    int status = 0;
    for (int r = 0; r < NR && !status; r++) {
        remat_program *prog = NULL;
        if (build(su, &rows[r], &prog) != REMAT_OK) {
            fprintf(stderr, "remat: pfr compare --adjoints: %s: %s\n", rows[r].label, remat_last_error());
            status = 1;
            break;
        }
        remat_tensor ins[2] = {remat_tensor_f64(su->inlet, 1, &S), remat_tensor_f64(in, 1, &PI)};
        remat_tensor outs[2] = {remat_tensor_f64(&value[r], 0, NULL), remat_tensor_f64(grads + r * PI, 1, &PI)};
        remat_stats st = {0};
        for (int k = 0; k < repeat && !status; k++) {
            if (remat_run(prog, PI ? 2 : 1, ins, 2, outs, &st) != REMAT_OK) {
                fprintf(stderr, "remat: pfr compare --adjoints: %s: %s\n", rows[r].label, remat_last_error());
                status = 1;
            }
            times[k] = st.seconds;
        }
        qsort(times, (size_t)repeat, sizeof *times, cmp_double);
        sec[r] = times[repeat / 2];
        /* what the reverse pass keeps: the discrete adjoint's snapshots and
         * tapes as measured; backsolve's augmented state (y, a, m, step);
         * interpolating's checkpoints, segment and state (interp_store) */
        store[r] = rows[r].adjoint == REMAT_ODE_ADJOINT_BACKSOLVE       ? sizeof(double) * (size_t)(2 * S + PI + 1)
                   : rows[r].adjoint == REMAT_ODE_ADJOINT_INTERPOLATING ? interp_store(steps, S, PI)
                                                                        : st.peak_snapshot_bytes;
        arena[r] = st.peak_arena_bytes;
        remat_program_free(prog);
    }
    const char *sp = remat_mechanism_species_name(m, su->opt.species);
    if (!status && json) {
        printf("{\n  \"mechanism\": ");
        cli_json_string(stdout, su->name);
        printf(",\n  \"species\": ");
        cli_json_string(stdout, sp);
        printf(",\n  \"method\": \"%s\",\n  \"steps\": %lld,\n  \"length\": %.17g,\n  \"h\": %.17g,\n"
               "  \"rows\": [\n",
               remat_ode_method_name(su->opt.method), (long long)steps, L, L / (double)steps);
        for (int r = 0; r < NR; r++) {
            printf("    {\"label\": ");
            cli_json_string(stdout, rows[r].label);
            printf(", \"adjoint\": \"%s\", \"concentration\": %.17g, \"gradient\": {",
                   remat_ode_adjoint_name(rows[r].adjoint), value[r]);
            for (int64_t j = 0; j < P; j++) {
                printf("%s", j ? ", " : "");
                cli_json_string(stdout, remat_mechanism_param_name(m, (int)j));
                printf(": %.17g", grads[r * PI + j]);
            }
            printf("}, \"steps\": %lld, \"store_bytes\": %zu, \"arena_bytes\": %zu, \"seconds\": %.9g}%s\n",
                   (long long)steps, store[r], arena[r], sec[r], r + 1 < NR ? "," : "");
        }
        printf("  ]\n}\n");
    } else if (!status) {
        printf("Adjoint methods: d C_%s(L) / d params, %s, %lld %s steps over [0, %g] (h = %g)\n", sp, su->name,
               (long long)steps, remat_ode_method_name(su->opt.method), L, L / (double)steps);
        char head[64];
        snprintf(head, sizeof head, "C_%s", sp);
        printf("%-24s %10s", "adjoint", head);
        for (int64_t j = 0; j < P; j++) {
            snprintf(head, sizeof head, "dC_%s/d%s", sp, remat_mechanism_param_name(m, (int)j));
            printf(" %12s", head);
        }
        printf(" %8s %12s %12s %10s\n", "steps", "store B", "arena B", "time ms");
        for (int r = 0; r < NR; r++) {
            printf("%-24s %10.6f", rows[r].label, value[r]);
            for (int64_t j = 0; j < P; j++)
                printf(" %12.6f", grads[r * PI + j]);
            printf(" %8lld %12zu %12zu %10.3f\n", (long long)steps, store[r], arena[r], sec[r] * 1e3);
        }
        printf("store B: what the reverse pass keeps, snapshots and step tapes (measured), backsolve's\n"
               "augmented state [y, a, m], or interpolating's at most 64 checkpoints, one segment's step\n"
               "ends and [a, m]; arena B: the gradient program's measured peak.\n");
    }
    free(in), free(grad), free(times), free(grads);
    return status;
}
