/*
 * ensemble_csv.h — the parameter sets of `remat pfr ensemble`, read a chunk
 * at a time from a CSV file so that memory stays O(chunk), not O(rows).
 *
 * The header names the mechanism's parameters (all or some, in any order);
 * each later line is one set, a finite number per column within the bounds
 * the mechanism declares. Blank lines are skipped; CRLF, a UTF-8 byte-order
 * mark and a cell in double quotes are accepted; a NUL byte is not. Every
 * error names FILE:LINE and, for a value, the column.
 *
 *   ens_csv c;
 *   char err[512];
 *   if (!ens_csv_open(&c, "P.csv", mech, err, sizeof err)) ...
 *   int64_t n = ens_csv_read(&c, 1024, sets, lines, err, sizeof err); // -1: error
 *   ens_csv_close(&c);
 */
#ifndef REMAT_TOOL_ENSEMBLE_CSV_H
#define REMAT_TOOL_ENSEMBLE_CSV_H

#include <stdint.h>
#include <stdio.h>

#include "remat/remat.h"

typedef struct {
    FILE *f;
    const char *path;
    const remat_mechanism *m;
    int ncol;
    int *param;     /* (ncol,) the parameter index of each column */
    char **name;    /* (ncol,) the header's names */
    char *line;
    size_t cap;
    int64_t lineno; /* of the last line read */
} ens_csv;

/* Opens path and reads its header. 0 with the reason in err on error. */
int ens_csv_open(ens_csv *c, const char *path, const remat_mechanism *m, char *err, size_t errlen);
/* Reads up to n sets: sets[i*ncol + j], lines[i] their line numbers (may be
 * NULL). The number read (0 at the end of the file), or -1 with the reason
 * in err. */
int64_t ens_csv_read(ens_csv *c, int64_t n, double *sets, int64_t *lines, char *err, size_t errlen);
void ens_csv_close(ens_csv *c);

#endif
