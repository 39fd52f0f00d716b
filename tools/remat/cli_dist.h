/*
 * cli_dist.h — the remat tool under mpirun/srun (remat/dist.h): every rank
 * runs the command; rank 0 alone speaks (stdout, stderr) and writes output
 * files, so a message is printed once; a failure on one rank reaches rank
 * 0 through an agreement before it is printed.
 *
 *   remat_dist *d = cli_dist_open();            // NULL: printed why
 *   char msg[1024] = "";
 *   int ok = read_input(..., msg, sizeof msg);  // rank-local, may fail
 *   if (!cli_dist_agree(d, ok, msg, sizeof msg))
 *       fprintf(stderr, "remat: %s\n", msg);     // rank 0 prints, all fail
 *   cli_dist_close(d);
 */
#ifndef REMAT_TOOL_CLI_DIST_H
#define REMAT_TOOL_CLI_DIST_H

#include <stddef.h>

#include "remat/dist.h"

/* Joins the job (a group of one outside mpirun). Ranks other than 0 get
 * stdout and stderr on /dev/null. NULL with the reason printed on failure. */
remat_dist *cli_dist_open(void);
void cli_dist_close(remat_dist *d); /* NULL ok */
/* The group a library call should be handed: d under a launcher (even of
 * one rank, so that 1, 2 and 4 ranks run the same arithmetic), NULL alone. */
remat_dist *cli_dist_group(remat_dist *d);
/* Collective: 1 when every rank passed ok; else 0 on every rank, msg the
 * lowest failing rank's (remat_dist_agree_msg: "rank R: ..." when there
 * are several ranks and not all of them failed alike). */
int cli_dist_agree(remat_dist *d, int ok, char *msg, size_t cap);
/* Collective: 1 when each of the n files paths[i] holds the same bytes on
 * every rank (a 64-bit FNV-1a of its content, gathered); else 0 on every
 * rank, msg naming the first file that differs and the ranks whose copy is
 * not rank 0's: "LABEL PATH: differs between ranks: rank 1 read other
 * content than rank 0". labels[i] says where the file was named
 * ("--mechanism"). A group of one: 1 at once. Call after the files were
 * read (an unreadable one is the reader's error, said first). */
int cli_dist_same_files(remat_dist *d, int n, const char *const *labels, const char *const *paths, char *msg,
                        size_t cap);
/* Prints "remat: LEAD MSG" on stderr, a rank that MSG names ("rank R: ...",
 * an agreement's) first: "remat: rank R: LEAD ...". */
void cli_dist_say(const char *lead, const char *msg);
/* Test hook: REMAT_TEST_KILL_RANK=R makes rank R end at once (_exit(9), as
 * a killed process would, MPI not finalised) at its call number
 * REMAT_TEST_KILL_AT (default 3). Call where a rank does work. */
void cli_dist_test_kill_hook(const remat_dist *d);

#endif
