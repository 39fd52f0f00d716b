/* cmd_pfr_compare.c — `remat pfr compare`: checkpoint schedules on a mechanism's reactor. */
#include <stdlib.h>

#include "cli.h"
#include "compare.h"
#include "pfr_adjoints.h"
#include "pfr_cli.h"

enum { OPT_SCHEDULES = PFR_OPT_COUNT_, OPT_BUDGET, OPT_REPEAT, OPT_ADJOINTS };

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat pfr compare [--mechanism FILE] [--init A=1,B=0] [--params k1=1,k2=0.5]\n"
            "                         [--cond T=350] [--length L] [--steps N | --dt H]\n"
            "                         [--method euler|rk4|tsit5|dopri5|rodas5] [--adjoint A]\n"
            "                         [--rtol R] [--atol A] [--max-steps N] [--thermo FILE] [--energy E]\n"
            "                         [--maximize S | --minimize S] [--schedules LIST]\n"
            "                         [--memory-budget BYTES] [--repeat R] [--json] [--plot FILE]\n"
            "       remat pfr compare --adjoints [reactor options] [--schedule binomial:S|online:S] [--repeat R]\n"
            "                         [--json]\n"
            "\n"
            "Differentiates the reactor's objective with respect to the mechanism's parameters once\n"
            "per checkpoint schedule, as 'remat compare' does for its built-in problems, and prints\n"
            "for each: snapshots held, forward step evaluations (measured / predicted / binomial\n"
            "optimum), peak bytes of snapshots and step tapes (measured / predicted), median time,\n"
            "and max |grad - store-all grad|.\n"
            "With no options: the seed's A->B->C reactor, 1000 Euler steps, d(-C_B)/d(k1, k2).\n"
            "--method tsit5, dopri5 or rodas5 without --steps/--dt integrates adaptively: the loop of\n"
            "attempts runs each schedule, and the predicted evaluations take its length from one\n"
            "forward run; its length is known only as it runs, so the predicted peak bytes are the\n"
            "store's capacity within --max-steps, a bound the measured peak stays under, and\n"
            "--memory-budget flags a schedule whose measured peak is over the budget.\n"
            "\n"
            "--adjoints compares adjoint methods instead (seed 004 section 8, diffrax's three): the\n"
            "goal species' outlet concentration and its gradient by the recursive adjoint (the\n"
            "discrete adjoint under --schedule, default binomial:10), backsolve (the continuous\n"
            "adjoint), interpolating (the continuous adjoint over the forward recomputed from\n"
            "checkpoints, CVODES's scheme) and direct (store-all), with steps, memory and median\n"
            "time; fixed steps (--steps or --dt); --json prints them as one JSON object. The seed's\n"
            "table: --adjoints --method tsit5 --dt 0.01.\n"
            "\n"
            "%s%s%s"
            "                     (default for the built-in mechanism: --maximize B; required with\n"
            "                     --mechanism)\n"
            "%s"
            "  --adjoints         compare the adjoint methods instead of the schedules (above)\n"
            "  --schedule S       --adjoints: the recursive adjoint's schedule (default binomial:10)\n"
            "%s",
            pfr_cli_help_reactor, pfr_cli_help_tol, pfr_cli_help_goal, compare_options_help, pfr_cli_help_gas);
}

int cmd_pfr_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        PFR_CLI_OPTIONS,
        PFR_CLI_TOL_OPTIONS,
        {"schedules", required_argument, 0, OPT_SCHEDULES},
        {"memory-budget", required_argument, 0, OPT_BUDGET},
        {"repeat", required_argument, 0, OPT_REPEAT},
        {"adjoints", no_argument, 0, OPT_ADJOINTS},
        {"schedule", required_argument, 0, PFR_OPT_SCHEDULE},
        {"json", no_argument, 0, 'j'},
        {"plot", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    pfr_cli c = {.adaptive_ok = PFR_ADAPTIVE_ASKED};
    compare_options o = {.schedules = COMPARE_DEFAULT_SCHEDULES, .budget = -1, .disk_budget = -1, .repeat = 5};
    int64_t repeat = 5;
    int code, adjoints = 0, schedules_given = 0, budget_given = 0;
    while ((code = pfr_cli_next(&c, argc, argv, opts)) != -1) {
        switch (code) {
        case PFR_CLI_BAD_VALUE: return 2;
        case OPT_SCHEDULES: o.schedules = optarg; schedules_given = 1; break;
        case OPT_BUDGET: if (!cli_bytes("--memory-budget", optarg, &o.budget)) return 2; budget_given = 1; break;
        case OPT_ADJOINTS: adjoints = 1; break;
        case OPT_REPEAT: if (!cli_int64("--repeat", optarg, 1, 1000, &repeat)) return 2; break;
        case 'j': o.json = 1; break;
        case 'p': o.plot_path = optarg; break;
        case 'h': help(stdout); return 0;
        default: return pfr_cli_bad_option("pfr compare", code, argv);
        }
    }
    if (!pfr_cli_no_operands("pfr compare", argc, argv))
        return 2;
    o.repeat = (int)repeat;
    const char *clash = !adjoints ? (c.schedule ? "--schedule" : c.adjoint ? "--adjoint" : NULL)
                        : schedules_given ? "--schedules" : budget_given ? "--memory-budget"
                        : o.plot_path ? "--plot" : c.adjoint ? "--adjoint" : NULL;
    if (clash) {
        fprintf(stderr, "remat: pfr compare: %s %s\n", clash,
                adjoints ? "does not go with --adjoints (which runs the recursive, backsolve, interpolating and direct adjoints)"
                         : "goes with --adjoints only (without it, --schedules lists the discrete adjoint's schedules)");
        return 2;
    }
    pfr_setup su;
    if (!pfr_cli_setup(&c, PFR_GOAL_REQUIRED, 0, &su))
        return 2;
    remat_problem *pb = NULL;
    int status;
    if (adjoints) {
        status = pfr_compare_adjoints(&su, (int)repeat, o.json);
        pfr_setup_free(&su);
        return status;
    }
    if (remat_problem_from_mechanism(su.mech, &su.opt, su.params, &pb) != REMAT_OK) {
        fprintf(stderr, "remat: pfr compare: %s\n", remat_last_error());
        status = 2;
    } else {
        o.adaptive = su.opt.adaptive;
        status = compare_run(pb, &o);
    }
    remat_problem_free(pb);
    pfr_setup_free(&su);
    return status;
}
