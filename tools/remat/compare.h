/*
 * compare.h — the schedule comparison shared by `remat compare` (built-in
 * problems) and `remat pfr compare` (a mechanism's reactor): each command
 * parses its own options and builds a remat_problem, then hands it here for
 * the runs, the table or JSON, and the plot.
 */
#ifndef REMAT_TOOL_COMPARE_H
#define REMAT_TOOL_COMPARE_H

#include <stdint.h>

#include "remat/problems.h"

#define COMPARE_DEFAULT_SCHEDULES "store-all,per-step,periodic:32,two-level,binomial:10,online:10"

/* The options both commands take, for their --help (one string, so the two
 * help texts cannot drift apart). */
extern const char compare_options_help[];

typedef struct {
    const char *schedules; /* comma-separated list (remat_schedule_parse) */
    int64_t budget;        /* --memory-budget in bytes, -1 when not given */
    int64_t disk_budget;   /* --disk-budget in bytes (a slow snapshot tier beside the
                              RAM budget), -1 when not given */
    const char *disk_dir;  /* --disk-dir: the tier's directory (NULL: $TMPDIR, /tmp) */
    double disk_write, disk_read; /* --disk-costs W:R, per carry in step evaluations */
    int repeat;            /* runs per schedule, >= 1 */
    int json;
    const char *plot_path; /* NULL: no plot */
    int adaptive;          /* the problem's loop is adaptive (remat_while): its length is known
                              only as it runs, so the plan's peak is a bound (the store's
                              capacity within max_steps), and over budget is judged on the
                              measured peak */
} compare_options;

/* Checks the schedule list and the plot file name before running anything,
 * then runs every schedule (and the budget's pick) against store-all and
 * prints the table or JSON; draws the plot last. Returns the exit status:
 * 0, 2 for a bad option (named in the message), 1 for a failure while
 * running (the budget too small included). Nothing is written on error. */
int compare_run(const remat_problem *pb, const compare_options *o);

#endif
