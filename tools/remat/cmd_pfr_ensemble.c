/*
 * cmd_pfr_ensemble.c — `remat pfr ensemble`: the outlet and its Jacobian for
 * every parameter set of a CSV file (remat_pfr_ensemble_*), streamed.
 *
 * Rank 0 reads the file in rounds of size x B sets and broadcasts each
 * round; the round's chunks of B sets are split over the ranks in contiguous
 * blocks; each rank runs its chunks through its compiled B-lane program; rank
 * 0 gathers the round's results in chunk order and writes them. Memory is
 * O(size x B) on rank 0 and O(B) elsewhere, whatever the number of rows; the
 * output does not depend on the number of ranks (each lane's numbers are its
 * set's alone). Every step that can fail on one rank ends in an agreement,
 * so a failure is one message and every rank exits non-zero.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ensemble_cli.h"

#define DEFAULT_BATCH 256
#define MAX_BATCH 65536

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat pfr ensemble --params-file P.csv [--mechanism FILE] [--init A=1,B=0] [--params k1=1]\n"
            "                          [--cond T=350] [--length L] [--steps N | --dt H | --rtol R --atol A --max-steps N]\n"
            "                          [--method euler|rk4|tsit5|dopri5|rodas5] [--thermo FILE] [--energy E]\n"
            "                          [--species LIST] [--batch B] [--out OUT.csv]\n"
            "\n"
            "For every parameter set (row) of P.csv, the outlet concentrations C_s(L) and their\n"
            "sensitivities dC_s(L)/dk_j to the row's parameters, by forward mode through the\n"
            "integration. P.csv's first line names parameters of the mechanism (all or some, any\n"
            "order); parameters it does not name keep --params' values (else the declared ones).\n"
            "Rows are integrated B at a time as the lanes of one compiled loop, which step together:\n"
            "with fixed steps. The integration is pfr simulate's for the same options: the built-in\n"
            "mechanism's 1000 Euler steps, --steps/--dt as given; where simulate integrates\n"
            "adaptively (--mechanism, or --method tsit5|dopri5|rodas5, without --steps/--dt), the\n"
            "same method with the equal steps that match its adaptive outlet at the base\n"
            "parameters (--params, else the declared values) to --rtol/--atol (found by doubling\n"
            "from the adaptive step count; stderr says the method and the steps). Where no equal\n"
            "steps up to 64x the adaptive count match it (a stiff transient, e.g. an ignition), each\n"
            "set is integrated adaptively on its own, as pfr simulate does (one run for the outlet and\n"
            "one reverse pass per --species; stderr says so). Under mpirun the rows are split over\n"
            "the ranks; the output is the same, byte for byte, on any number of ranks.\n"
            "\n"
            "Output (CSV, --out or stdout; one row per set, in input order, %%.17g): the set's\n"
            "parameters as P.csv names them, then C_<s> for every species s, then d<s>/d<k> for each\n"
            "species s of --species (default all) and each parameter k of P.csv, species-major. A set\n"
            "whose integration is unstable gets nan (counted on stderr with its first line); its\n"
            "sensitivities to a parameter a rate does not read are 0.\n"
            "\n"
            "  --params-file P.csv the parameter sets (required)\n"
            "%s"
            "  --species LIST     the species whose sensitivities are written, e.g. B,C (default all)\n"
            "  --batch B          sets per compiled run, the loop's lanes (default %d, at most %d)\n"
            "  --out FILE         write the CSV there (complete or not at all) instead of stdout\n"
            "%s%s",
            pfr_cli_help_reactor_forward, DEFAULT_BATCH, MAX_BATCH, pfr_cli_help_tol, pfr_cli_help_gas);
}

/* the species of --species (NULL: all) into r->grad; 0 with a message */
static int pick_species(ens_run *r, const char *list)
{
    const remat_mechanism *m = r->su.mech;
    int S = r->su.S;
    r->grad = malloc(sizeof *r->grad * (size_t)(S + 1));
    if (!r->grad)
        return snprintf(r->err, sizeof r->err, "out of memory"), 0;
    if (!list) {
        for (int s = 0; s < S; s++)
            r->grad[s] = s;
        r->G = S;
        return 1;
    }
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return snprintf(r->err, sizeof r->err, "out of memory"), 0;
    int ok = 1;
    r->G = 0;
    for (char *t = strtok_r(copy, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        int s = remat_mechanism_species_find(m, t);
        if (s < 0) {
            char names[1024];
            pfr_cli_names(m, 0, names, sizeof names);
            snprintf(r->err, sizeof r->err, "--species: '%s' is not a species of %s (species: %s)", t,
                     remat_mechanism_source(m), names);
            ok = 0;
        }
        for (int k = 0; ok && k < r->G; k++)
            if (r->grad[k] == s)
                snprintf(r->err, sizeof r->err, "--species: '%s' is given twice", t), ok = 0;
        if (ok && r->G < S)
            r->grad[r->G++] = s;
    }
    if (ok && r->G == 0)
        snprintf(r->err, sizeof r->err, "--species: '%s' names no species", list), ok = 0;
    free(copy);
    return ok;
}

/* rank 0 silences the others' copies of the same message while every rank
 * checks the same options */
static int quiet(const ens_run *r)
{
    if (r->rank == 0)
        return -1;
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, 2);
        close(null);
    }
    return saved;
}

static void loud(int saved)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

int ens_fail(const ens_run *r, int code)
{
    if (r->rank == 0)
        fprintf(stderr, "remat: pfr ensemble: %s\n", r->err);
    return code;
}

/* Where pfr simulate integrates adaptively, the lanes (which step together)
 * take the equal steps that match its outlet at the base parameters; stderr
 * says so (rank 0: the others' stderr is silenced here). Where no equal
 * steps match (a stiff transient: the adaptive run succeeded, the search
 * did not), each set is integrated as pfr simulate integrates it, one
 * adaptive run per set (ens_stream says so at the end). */
static int fixed_like_adaptive(ens_run *r)
{
    remat_pfr_options *o = &r->su.opt;
    int64_t n = 0, na = 0;
    remat_status st = remat_pfr_fixed_steps(r->su.mech, o, r->su.params, &n, &na);
    if (st == REMAT_ERR_NUMERIC && na > 0) {
        const char *why = remat_last_error(), *prefix = "pfr fixed steps: ";
        if (strncmp(why, prefix, strlen(prefix)) == 0)
            why += strlen(prefix);
        snprintf(r->why, sizeof r->why, "%s", why);
        r->per_member = 1;
        return 1;
    }
    if (st != REMAT_OK) {
        fprintf(stderr,
                "remat: pfr ensemble: %s; the lanes step together, so give --steps N or --dt H for equal steps "
                "of your own, or integrate each set adaptively with pfr simulate --params\n",
                remat_last_error());
        return 0;
    }
    fprintf(stderr,
            "remat: pfr ensemble: %s with %lld equal steps: pfr simulate's adaptive %s (rtol %g, atol %g; %lld "
            "steps) at the base parameters, matched with fixed steps for the lanes, which step together\n",
            remat_ode_method_name(o->method), (long long)n, remat_ode_method_name(o->method), o->rtol, o->atol,
            (long long)na);
    o->adaptive = false;
    o->rtol = o->atol = 0;
    o->max_steps = 0;
    o->steps = n;
    return 1;
}

static int parse(ens_run *r, int argc, char **argv, const char **file, const char **out, const char **species)
{
    static const struct option opts[] = {
        PFR_CLI_OPTIONS,
        PFR_CLI_TOL_OPTIONS,
        {"params-file", required_argument, 0, 'f'},
        {"out", required_argument, 0, 'o'},
        {"batch", required_argument, 0, 'b'},
        {"species", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    pfr_cli c = {.adaptive_ok = PFR_ADAPTIVE_DEFAULT}; /* simulate's choice of integration */
    int code;
    r->B = DEFAULT_BATCH;
    while ((code = pfr_cli_next(&c, argc, argv, opts)) != -1) {
        switch (code) {
        case PFR_CLI_BAD_VALUE: return 2;
        case 'f': *file = optarg; cli_input("--params-file", optarg); break;
        case 'o': *out = optarg; break;
        case 's': *species = optarg; break;
        case 'b':
            if (!cli_int64("--batch", optarg, 1, MAX_BATCH, &r->B))
                return 2;
            break;
        case 'h':
            if (r->rank == 0) /* once, under mpirun too */
                help(stdout);
            return 0;
        default: return pfr_cli_bad_option("pfr ensemble", code, argv);
        }
    }
    if (!pfr_cli_no_operands("pfr ensemble", argc, argv))
        return 2;
    if (!*file) {
        fprintf(stderr, "remat: pfr ensemble: --params-file is required: a CSV whose first line names parameters "
                        "and whose rows are parameter sets\n");
        return 2;
    }
    if (c.maximize || c.minimize) {
        fprintf(stderr, "remat: pfr ensemble: --%s: an ensemble writes every species' sensitivities, not an "
                        "objective's gradient (--species picks the species)\n",
                c.maximize ? "maximize" : "minimize");
        return 2;
    }
    if (c.adjoint && strcmp(c.adjoint, "discrete") != 0) {
        fprintf(stderr, "remat: pfr ensemble: --adjoint %s: an ensemble's sensitivities come from forward mode "
                        "through the steps, which takes no adjoint (pfr simulate, optimize, fit and compare do)\n",
                c.adjoint);
        return 2;
    }
    if (!pfr_cli_setup(&c, PFR_GOAL_OPTIONAL, 0, &r->su))
        return 2;
    if (r->su.P == 0) {
        fprintf(stderr, "remat: pfr ensemble: --mechanism: %s declares no parameters (param NAME = VALUE) to vary\n",
                r->su.name);
        return 2;
    }
    if (r->su.opt.adaptive && !fixed_like_adaptive(r))
        return 2;
    if (!pick_species(r, *species)) {
        fprintf(stderr, "remat: %s\n", r->err);
        return 2;
    }
    if (*out && !cli_out_check("--out", *out))
        return 2;
    return -1;
}

int cmd_pfr_ensemble(int argc, char **argv)
{
    ens_run r = {0};
    if (!ens_dist_init(&argc, &argv, &r.d))
        return 1;
    r.rank = ens_dist_rank(r.d);
    r.size = ens_dist_size(r.d);
    const char *file = NULL, *out_path = NULL, *species = NULL;
    int saved = quiet(&r);
    int status = parse(&r, argc, argv, &file, &out_path, &species);
    loud(saved);
    ens_csv csv = {0};
    cli_out out = {0};
    /* options are the same on every rank; files (one node's disk) and memory
     * may not be: a rank that failed alone said why on its silenced stderr,
     * so the library's message travels, and rank 0 says it */
    if (status != -1 && !r.err[0])
        snprintf(r.err, sizeof r.err, "%s", remat_last_error());
    if (!ens_dist_agree(r.d, status == -1, r.err, sizeof r.err)) {
        if (status == -1) /* another rank failed */
            status = ens_fail(&r, 2);
        goto done;
    }
    /* every rank parsed its own copy of --mechanism: one that differs would
     * integrate another model there (rank 0 alone reads --params-file) */
    if (!r.su.builtin && !ens_dist_same_file(r.d, "--mechanism", r.su.name, r.err, sizeof r.err)) {
        status = ens_fail(&r, 2);
        goto done;
    }
    status = 2;
    int ok = 1;
    if (r.rank == 0) {
        ok = ens_csv_open(&csv, file, r.su.mech, r.err, sizeof r.err);
        if (ok && out_path && !cli_out_open_for(&out, "--out", out_path)) {
            snprintf(r.err, sizeof r.err, "--out %s: cannot be written (said above)", out_path);
            ok = 0;
        }
    }
    if (!ens_dist_agree(r.d, ok, r.err, sizeof r.err)) {
        status = ens_fail(&r, 2);
        goto done;
    }
    status = ens_stream(&r, &csv, out.f ? out.f : stdout);
    if (status == 0) { /* the file appears only when every rank is done */
        ok = r.rank != 0 || ((!out.f || cli_out_commit(&out)) && cli_outputs_finish());
        if (!ok)
            snprintf(r.err, sizeof r.err, "--out %s: not written (said above)", out_path);
        if (!ens_dist_agree(r.d, ok, r.err, sizeof r.err))
            status = 1; /* rank 0 said why */
    }
done:
    if (out.f)
        cli_out_abort(&out);
    ens_csv_close(&csv);
    for (int j = 0; r.colname && j < r.Q; j++)
        free(r.colname[j]);
    free(r.colname);
    free(r.vary);
    free(r.grad);
    pfr_setup_free(&r.su);
    ens_dist_finalize(r.d);
    return status;
}
