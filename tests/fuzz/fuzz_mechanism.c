/*
 * fuzz_mechanism.c — a mechanism file from the fuzzer's bytes through every
 * stage a user's file goes through: parse, the reference evaluator and the
 * rate check at the declared parameters, lowering to a graph, compiling it
 * for the CPU backend and running it. Any status is fine; a crash, a
 * sanitizer report or a leak is a finding.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "remat/remat.h"

#define MAX_RUN_SPECIES 256 /* compile and run only mechanisms of this size, to keep iterations fast */

static void run_rhs(const remat_mechanism *m, const double *y, const double *params, int S)
{
    remat_fn *f = remat_kinetics_rhs_fn(m, REMAT_F64);
    if (!f)
        return;
    remat_program *prog = NULL;
    if (remat_compile(f, remat_backend_cpu(), &prog) == REMAT_OK) {
        double t = 0.5, *dydt = calloc((size_t)S + 1, sizeof *dydt);
        remat_tensor in[3], out[1];
        const void *data[3] = {&t, y, params};
        int n_in = remat_program_num_inputs(prog);
        for (int i = 0; i < n_in && i < 3; i++) {
            in[i] = remat_program_input_desc(prog, i);
            in[i].data = (void *)data[i];
        }
        out[0] = remat_program_output_desc(prog, 0);
        out[0].data = dydt;
        if (dydt && n_in == 3)
            remat_run(prog, n_in, in, 1, out, NULL);
        free(dydt);
    }
    remat_program_free(prog);
    remat_fn_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_as_file(data, size); /* the file reader: NUL bytes, BOM, size checks */
    remat_mechanism *m = NULL;
    if (!path || remat_mechanism_parse_file(path, &m) != REMAT_OK)
        return 0;
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    double *y = malloc(sizeof *y * ((size_t)S + 1)), *p = malloc(sizeof *p * ((size_t)P + 1));
    double *dydt = malloc(sizeof *dydt * ((size_t)S + 1));
    if (y && p && dydt) {
        for (int i = 0; i < S; i++)
            y[i] = 1.0 / (i + 1);
        remat_mechanism_param_values(m, p);
        remat_mechanism_eval_rhs(m, 0.5, y, p, dydt);
        remat_mechanism_check_rates(m, 0.5, y, p);
        remat_kinetics_uses_indep(m);
        char buf[256];
        for (int i = 0; i < S; i++)
            remat_expr_format(remat_mechanism_rhs(m, i), buf, sizeof buf);
        if (S <= MAX_RUN_SPECIES)
            run_rhs(m, y, p, S);
    }
    free(y);
    free(p);
    free(dydt);
    remat_mechanism_free(m);
    return 0;
}
