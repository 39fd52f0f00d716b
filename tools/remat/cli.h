/*
 * cli.h — helpers shared by the remat subcommands: strict number parsing with
 * messages that name the option, output files written atomically (a temp file
 * renamed at the end, removed on failure), and the plot interface.
 */
#ifndef REMAT_TOOL_CLI_H
#define REMAT_TOOL_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/* A decimal number at the start of text, as the mechanism and data files
 * write them ([+-] digits [. digits] [e [+-] digits]; no hex, which strtod
 * would take): *end after it. Subnormals (5e-324) are numbers; a value that
 * rounds to 0 or past the largest double, and nan/inf, are not. */
typedef enum { CLI_NUM_OK, CLI_NUM_BAD, CLI_NUM_HEX, CLI_NUM_NONFINITE, CLI_NUM_OVERFLOW, CLI_NUM_UNDERFLOW } cli_num;
cli_num cli_strtod(const char *text, const char **end, double *out);
/* "is not a finite number", "is not a decimal number (...)", "is out of range (...)" */
const char *cli_num_why(cli_num k);

/* All print "remat: <option>: <what is wrong>" to stderr and return 0 on error. */
int cli_int64(const char *opt, const char *text, int64_t lo, int64_t hi, int64_t *out);
int cli_double(const char *opt, const char *text, double *out);
/* "1000", "64k", "1.5M", "2G" (powers of 1024) */
int cli_bytes(const char *opt, const char *text, int64_t *out);
/* Before getopt_long reads argv: 0 with a message naming the option when an
 * option of opts that takes a value is given twice (the second would
 * replace the first without a word) and its name is not in repeatable
 * (NULL-terminated, NULL: none), or when its value, given as the next
 * argument, starts with "--" ("--out --json" would write a file named
 * --json; "--out=--json" still can). */
struct option;
int cli_options_once(int argc, char **argv, const struct option *opts, const char *const *repeatable);

/* An output file (cli_out.c). A regular file appears only when complete: it
 * is written to an unnamed file in its directory (O_TMPFILE; where the file
 * system refuses, PATH.tmp.PID) beside it (beside its target for a symlink),
 * then named PATH.tmp.PID and renamed when the whole run succeeded
 * (cli_outputs_finish). A device, pipe or socket (/dev/null, /dev/stdout,
 * /dev/full) is written in place and never renamed over. Refused at open, with a message naming the option and the reason: a
 * directory, one of the run's input files (cli_input), another output's file
 * (cli_output_claim), an existing file that is read-only. */
typedef struct {
    FILE *f;
    char *path;       /* as given, for messages */
    char *dest, *tmp; /* the rename's source and target; NULL when written in place */
    const char *opt;  /* "--out", "--plot", or NULL */
    int slot;         /* cli_temp_register's slot + 1; 0: none */
    int unnamed;      /* the file is O_TMPFILE's: tmp is the name it gets at commit */
} cli_out;
int cli_out_open(cli_out *o, const char *path);
/* The same, naming the option in its messages ("remat: --out: cannot write ..."). */
int cli_out_open_for(cli_out *o, const char *opt, const char *path);
/* The checks of cli_out_open_for, before the work, without writing a device
 * or opening a FIFO: 1 when the path would be accepted. */
int cli_out_check(const char *opt, const char *path);
/* Flush, fsync (files); a device is closed, a file waits (unnamed where it
 * can be) for cli_outputs_finish. 0 with the reason (errno's words) on any
 * failure, the temp file removed. */
int cli_out_commit(cli_out *o);
/* A write to o->f failed with errno err: says so naming the file, aborts, returns 0. */
int cli_out_fail(cli_out *o, int err);
void cli_out_abort(cli_out *o); /* close + remove the temp file */
/* The run succeeded: every committed file renamed into place ("all or
 * nothing": none is renamed before every output is complete). 0 with a
 * message when a rename failed; the files not yet renamed are dropped. */
int cli_outputs_finish(void);
/* The run failed: the committed files' temps removed, every previous file
 * left as it was (main calls it after every command; also at exit). */
void cli_outputs_drop(void);
/* An input file of this run (opt names its option, "--mechanism", or where
 * it was named, "--data-list runs.txt:3"); both strings are copied, any
 * number of inputs. Outputs that are the same file (st_dev, st_ino) are
 * refused. */
void cli_input(const char *opt, const char *path);
/* 1, with a message naming output opt/path and the input, when sb (an
 * existing output file) is one of the inputs (cli_files.c). */
int cli_input_clash(const char *opt, const char *path, const struct stat *sb);
/* Output opt will write path: 0 with a message when another output of the
 * run (another opt) names the same file. cli_out_check and cli_out_open_for
 * call it. */
int cli_output_claim(const char *opt, const char *path);
/* Temp files removed if SIGINT, SIGTERM or SIGHUP ends the process (the
 * handler unlinks them, then re-raises). The first call installs the
 * handlers and ignores SIGXFSZ, so a write past `ulimit -f` fails with
 * EFBIG. Returns a slot for cli_temp_release, -1 when none is free. */
int cli_temp_register(const char *path);
void cli_temp_release(int slot);

/* Plots (PLplot when built with it). Each series is a set of points with a
 * label; returns 0 with a message on error (or when built without PLplot). */
typedef struct {
    const char *label;
    int n;
    const double *x, *y;
    int points_only;
    int color; /* 0: by position; k > 0: palette colour k (a curve and its data points alike) */
} cli_series;
int cli_plot(const char *path, const char *title, const char *xlabel, const char *ylabel, int logx, int logy,
             int n_series, const cli_series *series);
/* Several panels on one page (a grid, row by row), each like one cli_plot. */
typedef struct {
    const char *title, *xlabel, *ylabel;
    int logx, logy;
    int n_series;
    const cli_series *series;
} cli_panel;
int cli_plot_panels(const char *path, int n_panels, const cli_panel *panels);
/* Checks a --plot file before any work: a known extension, a writable
 * directory, PLplot built in. 0 with a message naming the file otherwise. */
int cli_plot_check(const char *path);
/* The same with messages naming opt (e.g. "--plot-residuals") in place of --plot. */
int cli_plot_check_for(const char *opt, const char *path);
int cli_plot_panels_for(const char *opt, const char *path, int n_panels, const cli_panel *panels);

/* Writes s as a JSON string literal (quotes and escapes included). */
void cli_json_string(FILE *out, const char *s);

int cmd_compare(int argc, char **argv);
int cmd_pfr(int argc, char **argv);
int cmd_pfr_fit(int argc, char **argv); /* cmd_pfr_fit.c */

#endif
