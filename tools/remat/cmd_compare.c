/* cmd_compare.c — `remat compare`: checkpoint schedules side by side on one problem. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "pfr_cli.h" /* pfr_cli_bad_option: the message every command gives */
#include "remat/remat.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat compare [--problem pfr-euler|sin] [--steps N] [--schedules LIST]\n"
            "                     [--memory-budget BYTES [--disk-budget BYTES] [--disk-dir DIR]\n"
            "                     [--disk-costs W:R]] [--repeat R] [--json] [--plot FILE]\n"
            "\n"
            "Differentiates the problem once per checkpoint schedule and prints, for each:\n"
            "snapshots held, forward step evaluations (measured / predicted by the schedule /\n"
            "binomial optimum for that many snapshots), peak bytes of snapshots and step tapes\n"
            "(measured / predicted), median time, and max |grad - store-all grad|. The last\n"
            "line says whether the scan body ran as compiled native loops (libgccjit) or was\n"
            "interpreted op by op (REMAT_NO_JIT=1 in the environment: interpreted).\n"
            "\n"
            "  --problem P        pfr-euler (default): A->B->C reactor, explicit Euler, d(-C_B)/d(k1,k2)\n"
            "                     sin: x <- sin(x) + 0.1 x on 100 values, d sum(x) / d x0\n"
            "  --steps N          loop length (default 1000)\n"
            "%s"
            "  --disk-budget D    with --memory-budget: a slower snapshot tier of D bytes (a file\n"
            "                     under --disk-dir); the budget's pick is then the cheaper of the\n"
            "                     RAM-only schedule and two-tier:S:D:W:R (remat_schedule_for_tiers)\n"
            "  --disk-dir DIR     the tier's directory (default $TMPDIR, else /tmp); a missing,\n"
            "                     read-only or full one fails the run, naming it\n"
            "  --disk-costs W:R   writing / reading one carry there, in step evaluations\n"
            "                     (default 0.1:0.1)\n"
            ,
            compare_options_help);
}

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"problem", required_argument, 0, 'p'}, {"steps", required_argument, 0, 'n'},
        {"schedules", required_argument, 0, 's'}, {"memory-budget", required_argument, 0, 'b'},
        {"repeat", required_argument, 0, 'r'}, {"json", no_argument, 0, 'j'},
        {"plot", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
        {"disk-budget", required_argument, 0, 'D'}, {"disk-dir", required_argument, 0, 'd'},
        {"disk-costs", required_argument, 0, 'c'}, {0, 0, 0, 0},
    };
    const char *problem = "pfr-euler", *schedules = COMPARE_DEFAULT_SCHEDULES;
    const char *plot_path = NULL;
    int64_t steps = 1000, repeat = 5, budget = -1, disk_budget = -1;
    const char *disk_dir = NULL;
    double disk_w = 0.1, disk_r = 0.1;
    int json = 0, c;
    optind = 1;
    opterr = 0; /* pfr_cli_bad_option says it, naming the command */
    if (!cli_options_once(argc, argv, opts, NULL))
        return 2;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': problem = optarg; break;
        case 'n': if (!cli_int64("--steps", optarg, 1, 100000000, &steps)) return 2; break;
        case 's': schedules = optarg; break;
        case 'b': if (!cli_bytes("--memory-budget", optarg, &budget)) return 2; break;
        case 'D': if (!cli_bytes("--disk-budget", optarg, &disk_budget)) return 2; break;
        case 'd': disk_dir = optarg; break;
        case 'c': {
            char end;
            if (sscanf(optarg, "%lf:%lf%c", &disk_w, &disk_r, &end) != 2 || !(disk_w >= 0) || !(disk_r >= 0) ||
                disk_w > 1e300 || disk_r > 1e300) {
                fprintf(stderr, "remat: --disk-costs: '%s' is not W:R, two numbers >= 0\n", optarg);
                return 2;
            }
            break;
        }
        case 'r': if (!cli_int64("--repeat", optarg, 1, 1000, &repeat)) return 2; break;
        case 'j': json = 1; break;
        case 'o': plot_path = optarg; break;
        case 'h': help(stdout); return 0;
        default: return pfr_cli_bad_option("compare", c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "remat: compare: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if ((disk_budget >= 0 || disk_dir) && budget < 0) {
        fprintf(stderr, "remat: compare: --disk-budget and --disk-dir go with --memory-budget\n");
        return 2;
    }
    if (disk_dir && !*disk_dir) {
        fprintf(stderr, "remat: --disk-dir: the directory is empty\n");
        return 2;
    }
    remat_problem *pb = NULL;
    if (remat_problem_new(problem, steps, &pb) != REMAT_OK) {
        fprintf(stderr, "remat: --problem: %s\n", remat_last_error());
        return 2;
    }
    compare_options o = {.schedules = schedules, .budget = budget, .disk_budget = disk_budget, .disk_dir = disk_dir,
                         .disk_write = disk_w, .disk_read = disk_r, .repeat = (int)repeat, .json = json,
                         .plot_path = plot_path};
    int status = compare_run(pb, &o);
    remat_problem_free(pb);
    return status;
}
